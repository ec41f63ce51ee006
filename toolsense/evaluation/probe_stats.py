"""What a probe accuracy can be compared with, from the scored samples alone (no model).

A probe accuracy means little on its own: a model that answers "A" to every MCQ item scores
the share of items whose gold sits at "A" after shuffling, and one that always says "No" scores
the share of No items. So each probe result carries
- ``answer_distribution`` / ``gold_distribution``: predicted and gold answers (letters after the
  shuffle, or Yes/No), counted;
- ``majority_rate``: the accuracy of always giving the most frequent gold answer;
- ``chance``: the expected accuracy of a uniform random answer (1 / number of answers — the
  same whatever the label distribution);
- ``top_answer``: the most frequent prediction, its share, and ``flagged`` when the share
  exceeds ``probe.flag_share`` (a degenerate, one-answer probe).

Two debiasing estimates (``probe.debias=circular``), beyond the paper:
- MCQ, CircularEval: every item is also scored with its shown options cyclically rotated
  (n rotations for n options, rotation 0 = the paper's single order); ``circular_mean`` is the
  accuracy averaged over rotations, ``circular_all`` the share of items right under every
  rotation. Position bias alone scores 1/n and 0. ``balanced_accuracy`` sums each option's
  log-probability over the n rotations — every option then sat once in every slot, so a
  position prior adds the same amount to every option — and answers the option with the
  highest sum. A model whose letter prior outweighs what it read (it says "A" under every
  rotation) scores 1/n on both circular accuracies, yet its balanced answer can still be right:
  the content signal survives the sum (position-debiased scoring in the spirit of PriDe).
- QA, mean-centred log-odds: the Yes/No prior is the model's mean log-odds
  log P(Yes) - log P(No) over the probe set; each item answers Yes when its log-odds exceed
  that mean. This divides out the geometric-mean P(Yes)/P(No) ratio (contextual calibration
  with the prior estimated from the probe prompts themselves), needs no extra forward pass and
  no labels. A content-free prompt ("N/A" in place of the tool) would cost a second pass per
  item and measures the prior on an input unlike the probes, which a small model answers with
  its own, different bias. Caveat: one scalar is fit on the evaluated set (transductively), and
  centring pushes predictions towards balance, so compare it with ``majority_rate``.
"""

from __future__ import annotations

from typing import Any, Sequence


def distribution(labels: Sequence[str], answers: Sequence[str]) -> dict[str, int]:
    """Count of each allowed answer (zeros included, in ``answers`` order) among ``labels``."""
    unknown = sorted(set(labels) - set(answers))
    if unknown:
        raise ValueError(f"answers {unknown} are not among the allowed {list(answers)}")
    return {a: sum(1 for x in labels if x == a) for a in answers}


def majority_rate(gold_dist: dict[str, int]) -> float | None:
    """Accuracy of always answering the most frequent gold answer (None without items)."""
    n = sum(gold_dist.values())
    return max(gold_dist.values()) / n if n else None


def top_answer(pred_dist: dict[str, int], flag_share: float) -> dict[str, Any] | None:
    """The most frequent prediction (first in answer order on ties), its share of all
    predictions, and whether that share exceeds ``flag_share``."""
    n = sum(pred_dist.values())
    if not n:
        return None
    answer = max(pred_dist, key=lambda a: pred_dist[a])
    share = pred_dist[answer] / n
    return {"answer": answer, "share": share, "flagged": share > flag_share}


def rotation(perm: Sequence[int], r: int) -> list[int]:
    """The shown order ``perm`` rotated left by ``r`` slots: slot j shows ``perm[(j + r) % n]``,
    so the gold's slot moves from g to (g - r) mod n and visits every slot once over n rotations."""
    n = len(perm)
    return [perm[(j + r) % n] for j in range(n)]


def balanced_correct(rotations: Sequence[Sequence[dict]], answers: Sequence[str], tol: float = 1e-6) -> list[float]:
    """Per item, the credit of the option with the highest log-probability summed over its
    rotations: 1 when it is the gold option alone, 1/k when the gold is one of k options tied at
    the top (a model whose scores follow the slot only ties all n options: 1/n, chance), else 0.
    ``rotations[i]``: item i's rotation rows, each with ``permutation`` (slot j shows original
    option ``permutation[j]``), ``scores`` (per slot) and ``gold`` (its letter in that rotation)."""
    out = []
    for rots in rotations:
        total = [0.0] * len(answers)
        for rot in rots:
            for slot, opt in enumerate(rot["permutation"]):
                total[opt] += float(rot["scores"][slot])
        first = rots[0]
        gold_opt = first["permutation"][list(answers).index(first["gold"])]
        top = [o for o, t in enumerate(total) if t >= max(total) - tol]
        out.append(1.0 / len(top) if gold_opt in top else 0.0)
    return out


DEBIASED = ("circular_mean", "circular_all", "balanced_accuracy", "calibrated_accuracy")
"""The debiased probe metrics :func:`debiased_correct` can give, item by item."""


def debiased_correct(rows: Sequence[dict], kind: str, answers: Sequence[str]) -> dict[str, list[float]]:
    """Per-item credit (in ``rows`` order) under each debiased reading the rows allow: MCQ rows
    with ``rotations`` give ``circular_mean`` (share of rotations right), ``circular_all`` (right
    under all) and ``balanced_accuracy`` (:func:`balanced_correct`); QA rows with ``scores`` give
    ``calibrated_accuracy`` (:func:`centred_predictions` over these rows). Empty when the rows
    were scored without debiasing. The mean of a list is the accuracy in results.json; the lists
    let seeds be pooled and runs paired item by item."""
    if not rows:
        return {}
    if kind == "mcq":
        if not all("rotations" in r for r in rows):
            return {}
        rots = [r["rotations"] for r in rows]
        right = [[bool(x["correct"]) for x in rot] for rot in rots]
        return {"circular_mean": [sum(c) / len(c) for c in right], "circular_all": [float(all(c)) for c in right],
                "balanced_accuracy": balanced_correct(rots, answers)}
    if not all("scores" in r for r in rows):
        return {}
    preds, _ = centred_predictions([r["scores"] for r in rows])
    return {"calibrated_accuracy": [float(answers[p] == r["gold"]) for p, r in zip(preds, rows)]}


def centred_predictions(yes_no_logp: Sequence[Sequence[float]]) -> tuple[list[int], float]:
    """Mean-centred log-odds calibration of Yes/No scores (rows: [log P(Yes), log P(No)]).
    Returns (predicted index per item: 0 = Yes, 1 = No; the removed offset = mean log-odds).
    An item exactly at the mean answers No."""
    odds = [float(y) - float(n) for y, n in yes_no_logp]
    offset = sum(odds) / len(odds) if odds else 0.0
    return [0 if d - offset > 0 else 1 for d in odds], offset

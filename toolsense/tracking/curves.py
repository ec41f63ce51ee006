"""Training curves of runs, read from their ``metrics.jsonl`` (``train/<stage>/loss`` per step, as
the trainer's tracker logs them): a configuration's seeds as a band and its stages as panels.

- **A step counts once.** A resumed stage logs again the steps that a kill had already logged
  (runs before ``forget_rows``, or a kill between the rewrite and the first new row, keep both
  rows): the *last* logged value of a step wins, because it is the value of the run that went on.
- **Seeds as a band:** at each step, the band is the minimum to the maximum over the seeds that
  logged that step, and the line is their mean (``n`` says how many seeds a step has).
- **Stages are marked** as separate panels (Stage 1, Stage 2, toolken), each on its own step axis:
  every stage's Trainer counts from step 1.

``curve_data`` is what the comparison writes beside its plot (``comparison_training_curves.json``).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Mapping, Sequence

from toolsense.utils.jsonl import JsonlStore

LOSS_KEY = re.compile(r"^train/(?P<stage>[^/]+)/loss$")
STAGE_ORDER = ("stage1", "stage2", "toolken")
STAGE_TITLES = {"stage1": "Stage 1 (memorisation)", "stage2": "Stage 2 (retrieval)", "toolken": "toolken rows"}
BAND = "min-max over seeds; line: mean of the seeds that logged the step"
REPEATS = "a step logged more than once (a resumed run) counts once: the last logged value wins"


def loss_by_step(metrics_path: str | Path) -> dict[str, dict[int, float]]:
    """``stage -> step -> loss`` of one run's metrics.jsonl (steps ascending; the last value logged
    for a step wins; a torn last line left by a kill is skipped; non-finite losses are left out)."""
    path = Path(metrics_path)
    out: dict[str, dict[int, float]] = {}
    if not path.is_file():
        return out
    for row in JsonlStore(path, repair=False).rows:
        for key, value in row.items():
            m = LOSS_KEY.match(key)
            if m and "step" in row and isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                out.setdefault(m["stage"], {})[int(row["step"])] = float(value)
    return {stage: dict(sorted(steps.items())) for stage, steps in out.items()}


def _ordered(stages) -> list[str]:
    stages = list(dict.fromkeys(stages))
    return [s for s in STAGE_ORDER if s in stages] + [s for s in stages if s not in STAGE_ORDER]


def seed_band(per_run: Mapping[str, Mapping[int, float]]) -> dict[str, Any]:
    """One stage of one configuration: the union of its runs' steps, each run's loss per step
    (None where a run did not log it), and per step the mean, min (``lo``), max (``hi``) and count."""
    steps = sorted(set().union(*(set(c) for c in per_run.values())))
    seeds = {run: [curve.get(s) for s in steps] for run, curve in per_run.items()}
    logged = [[v for v in col if v is not None] for col in zip(*seeds.values())] if seeds else []
    return {"steps": steps, "seeds": seeds, "mean": [sum(c) / len(c) for c in logged], "lo": [min(c) for c in logged],
            "hi": [max(c) for c in logged], "n": [len(c) for c in logged]}


def curve_data(configs: Mapping[str, Sequence[str | Path]]) -> dict[str, Any]:
    """``{band, repeats, stages, curves: {label: {runs, stages: {stage: seed_band}}}}`` of the
    configurations ``label -> run folders`` (each run's ``metrics.jsonl``); configurations whose
    runs logged no loss are left out."""
    curves: dict[str, Any] = {}
    for label, runs in configs.items():
        losses = {str(r): loss_by_step(Path(r) / "metrics.jsonl") for r in runs}
        stages = _ordered(s for curve in losses.values() for s in curve)
        if stages:
            curves[label] = {"runs": [str(r) for r in runs],
                             "stages": {s: seed_band({r: c[s] for r, c in losses.items() if s in c}) for s in stages}}
    stages = _ordered(s for c in curves.values() for s in c["stages"])
    return {"band": BAND, "repeats": REPEATS, "stages": stages, "curves": curves}


def curve_plot(data: Mapping[str, Any], path: str | Path) -> Path | None:
    """The loss curves as a PNG, one panel per stage, a line (mean) and band (min-max) per
    configuration, the legend under the panels; ``data`` (:func:`curve_data`) written beside it as
    ``<name>.json``. None (nothing written) when no configuration logged a loss."""
    if not data["curves"]:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = data["stages"]
    fig, axes = plt.subplots(1, len(stages), figsize=(4.0 * len(stages), 3.2), squeeze=False)
    for ax, stage in zip(axes[0], stages):
        for i, (label, curve) in enumerate(data["curves"].items()):
            band = curve["stages"].get(stage)
            if band:
                colour = f"C{i % 10}"
                ax.plot(band["steps"], band["mean"], color=colour, linewidth=1.2, label=label)
                ax.fill_between(band["steps"], band["lo"], band["hi"], color=colour, alpha=0.25, linewidth=0)
        ax.set_title(STAGE_TITLES.get(stage, stage), fontsize=9)
        ax.set_xlabel(f"{stage} step")
    axes[0][0].set_ylabel("training loss")
    handles = {h.get_label(): h for ax in axes[0] for h in ax.get_lines()}
    fig.legend(list(handles.values()), list(handles), loc="upper center", bbox_to_anchor=(0.5, 0.0), fontsize=7, frameon=False,
               ncol=1 if max(map(len, handles)) > 30 else min(3, len(handles)), title=f"band: {BAND}", title_fontsize=7)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
    path.with_suffix(".json").write_text(json.dumps({"plot": path.name, **data}, indent=1, ensure_ascii=False), encoding="utf-8")
    return path

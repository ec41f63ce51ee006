"""The probes as lm-evaluation-harness tasks: the YAML's structure, and — with lm-eval installed
(the ``lmeval`` extra) — lm-eval's accuracy on a tiny trained run equals our token-mode accuracy,
item by item."""

from __future__ import annotations

import json

import pytest
import yaml

from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
from toolsense.evaluation.config import ProbeConfig
from toolsense.evaluation.context import load_run
from toolsense.interop.lmeval import LOADER, write_lmeval_task
from toolsense.evaluation.probes import evaluate_probe


@pytest.fixture(scope="module")
def ev(tiny_run):
    return load_run(tiny_run, "stage2", "cpu")


def _bench(kind: str, n: int):
    bench = load_benchmark(BenchmarkConfig(loader=kind, limit=n))
    bench.name = kind
    return bench


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!function", lambda loader, node: ("function", loader.construct_scalar(node)))


def test_task_files_hold_our_prompts_choices_and_targets(ev, tmp_path):
    cfg = ProbeConfig()
    path = write_lmeval_task(ev, _bench("mcq", 6), "token", cfg, tmp_path)
    spec = yaml.load(path.read_text(), Loader=_Loader)
    assert spec["task"] == "toolsense_mcq" and spec["output_type"] == "multiple_choice"
    assert spec["custom_dataset"] == ("function", f"{LOADER}.load_docs") and (tmp_path / f"{LOADER}.py").is_file()
    assert spec["target_delimiter"] == "" and spec["doc_to_choice"] == "choices" and str(tmp_path) not in path.read_text()
    docs = [json.loads(x) for x in (tmp_path / spec["dataset_kwargs"]["docs"]).read_text().splitlines()]
    rows = {r["item_id"]: r for r in map(json.loads, (_probe_dir(ev, "mcq", 6, tmp_path) / "samples.jsonl").read_text().splitlines())}
    assert len(docs) == 6
    for d in docs:  # the prompt our evaluation scored, its shown order, the gold letter
        r = rows[d["id"]]
        assert d["prompt"] == r["prompt"] and d["options_shown"] == r["options_shown"]
        assert d["choices"] == ["A", "B", "C", "D"] and d["choices"][d["target"]] == r["gold"]
        assert ev.index.paths[d["tool"]][0] in d["prompt"]  # the virtual token, not the name


def _probe_dir(ev, kind, n, root):
    out = root / f"ours_{kind}"
    if not (out / "results.json").is_file():
        evaluate_probe(ev, _bench(kind, n), "token", ProbeConfig(), out, resamples=20)
    return out


@pytest.mark.parametrize("kind", ["mcq", "qa"])
def test_lm_eval_accuracy_equals_ours(ev, tiny_run, tmp_path, kind):
    lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e '.[lmeval]')")
    from lm_eval.tasks import TaskManager

    n = 12
    ours = json.loads((_probe_dir(ev, kind, n, tmp_path) / "results.json").read_text())
    rows = {r["item_id"]: r for r in map(json.loads, (tmp_path / f"ours_{kind}" / "samples.jsonl").read_text().splitlines())}
    write_lmeval_task(ev, _bench(kind, n), "token", ProbeConfig(), tmp_path / "tasks")
    out = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={tiny_run / 'stage2'},dtype=float32", tasks=[f"toolsense_{kind}"],
                                  task_manager=TaskManager(include_path=str(tmp_path / "tasks"), include_defaults=False), device="cpu", batch_size=1,
                                  log_samples=True)
    assert out["results"][f"toolsense_{kind}"]["acc,none"] == pytest.approx(ours["metrics"]["accuracy"]["value"], abs=1e-12)
    samples = out["samples"][f"toolsense_{kind}"]
    assert len(samples) == n
    for s in samples:  # item by item: lm-eval's log-likelihoods are ours (+ the same newline term), its pick is ours
        r = rows[s["doc"]["id"]]
        ll = [float(x[0][0]) for x in s["resps"]]
        assert s["doc"]["choices"][max(range(len(ll)), key=ll.__getitem__)] == r["pred"]
        shift = ll[0] - r["scores"][0]
        assert [x - shift for x in ll] == pytest.approx(r["scores"], abs=2e-4)

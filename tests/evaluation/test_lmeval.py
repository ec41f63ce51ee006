"""The probes as lm-evaluation-harness tasks: the YAML's structure (raw prompts, ``tag: toolsense``,
the system prompt as description), the model folder with its virtual tokens and the loader's warning
on a model without them, and — with lm-eval installed (the ``lmeval`` extra) — lm-eval's accuracy
with ``--apply_chat_template`` on a tiny trained run equals our token-mode accuracy, item by item."""

from __future__ import annotations

import json

import pytest
import yaml

from toolsense.evaluation.benchmarks import BenchmarkConfig, load_benchmark
from toolsense.evaluation.config import ProbeConfig
from toolsense.evaluation.context import load_run
from toolsense.evaluation.probes import evaluate_probe
from toolsense.interop.lmeval import LOADER, TAG, write_lmeval_model, write_lmeval_task


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
    assert spec["tag"] == TAG == "toolsense"
    assert "description" not in spec  # probes send no system prompt by default (probe.use_system_prompt)
    with_system = yaml.load(write_lmeval_task(ev, _bench("mcq", 6), "token", ProbeConfig(use_system_prompt=True), tmp_path / "s")
                            .read_text(), Loader=_Loader)
    assert with_system["description"] == ev.prompts.system_prompt == "Pick the tool."
    docs = [json.loads(x) for x in (tmp_path / spec["dataset_kwargs"]["docs"]).read_text().splitlines()]
    tokens = json.loads((tmp_path / spec["dataset_kwargs"]["tokens"]).read_text())
    rows = {r["item_id"]: r for r in map(json.loads, (_probe_dir(ev, "mcq", 6, tmp_path) / "samples.jsonl").read_text().splitlines())}
    assert len(docs) == 6
    template = ev.tokenizer.apply_chat_template([{"role": "user", "content": "@@"}], tokenize=False, add_generation_prompt=True)
    for d in docs:  # the prompt our evaluation scored, its shown order, the gold letter
        r = rows[d["id"]]
        assert d["rendered_prompt"] == r["prompt"] and d["options_shown"] == r["options_shown"]
        assert d["prompt"] in r["prompt"] and template.split("@@")[0] not in d["prompt"]  # raw: no chat template baked in
        assert d["choices"] == ["A", "B", "C", "D"] and d["choices"][d["target"]] == r["gold"]
        assert ev.index.paths[d["tool"]][0] in d["prompt"] and ev.index.paths[d["tool"]][0] in tokens  # the virtual token


def test_the_model_folder_holds_the_virtual_tokens_and_the_loader_warns_without_them(ev, tiny_model_dir, tmp_path, capsys):
    """write_lmeval_model saves the model as evaluated (virtual tokens in its vocabulary, same rows);
    the task's loader, given lm-eval's ``pretrained``, warns when that tokenizer lacks the tokens
    the prompts name (the base tiny_random) and is silent on the exported folder."""
    import importlib.util
    import warnings

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    yaml_path = write_lmeval_task(ev, _bench("qa", 4), "token", ProbeConfig(), tmp_path)
    folder = write_lmeval_model(ev, tmp_path)
    assert folder == tmp_path / "model"
    tok = AutoTokenizer.from_pretrained(folder)
    token = ev.index.paths[ev.index.tools[0]][0]
    assert tok.convert_tokens_to_ids(token) == ev.tokenizer.convert_tokens_to_ids(token)
    saved = AutoModelForCausalLM.from_pretrained(folder).get_input_embeddings().weight
    assert torch.equal(saved, ev.model.get_input_embeddings().weight.detach().cpu())
    spec = yaml.load(yaml_path.read_text(), Loader=_Loader)
    spec_loader = importlib.util.spec_from_file_location("loader_under_test", tmp_path / f"{LOADER}.py")
    loader = importlib.util.module_from_spec(spec_loader)
    spec_loader.loader.exec_module(loader)
    with pytest.warns(UserWarning, match=r"lacks \d+ of the \d+ virtual tokens this task's prompts name"):
        loader.load_docs(**spec["dataset_kwargs"], pretrained=str(tiny_model_dir))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        docs = loader.load_docs(**spec["dataset_kwargs"], pretrained=str(folder))["test"]
    assert len(docs) == 4
    import dataclasses

    base = dataclasses.replace(ev, source={**ev.source, "stage": "untrained", "model": "tiny_random"})
    write_lmeval_model(base, tmp_path / "untrained")
    assert (f"warning: tiny_random lacks the index's {len(ev.index.tokens())} virtual tokens; toolsense added them"
            in capsys.readouterr().out)


def _probe_dir(ev, kind, n, root, cfg=None):
    out = root / f"ours_{kind}"
    if not (out / "results.json").is_file():
        evaluate_probe(ev, _bench(kind, n), "token", cfg or ProbeConfig(), out, resamples=20)
    return out


@pytest.mark.parametrize("kind", ["mcq", "qa"])
def test_lm_eval_accuracy_equals_ours(ev, tiny_run, tmp_path, kind):
    lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is not installed (pip install -e '.[lmeval]')")
    from lm_eval.tasks import TaskManager

    n = 12
    cfg = ProbeConfig(use_system_prompt=kind == "mcq")  # the system prompt travels as the task's description
    ours = json.loads((_probe_dir(ev, kind, n, tmp_path, cfg) / "results.json").read_text())
    rows = {r["item_id"]: r for r in map(json.loads, (tmp_path / f"ours_{kind}" / "samples.jsonl").read_text().splitlines())}
    write_lmeval_task(ev, _bench(kind, n), "token", cfg, tmp_path / "tasks")
    model = write_lmeval_model(ev, tmp_path / "tasks")
    out = lm_eval.simple_evaluate(model="hf", model_args=f"pretrained={model},dtype=float32", tasks=[TAG],
                                  task_manager=TaskManager(include_path=str(tmp_path / "tasks"), include_defaults=False,
                                                           metadata={"pretrained": str(model)}),
                                  device="cpu", batch_size=1, log_samples=True, apply_chat_template=True)
    assert out["results"][f"toolsense_{kind}"]["acc,none"] == pytest.approx(ours["metrics"]["accuracy"]["value"], abs=1e-12)
    samples = out["samples"][f"toolsense_{kind}"]
    assert len(samples) == n
    for s in samples:  # item by item: lm-eval's log-likelihoods are ours (+ the same newline term), its pick is ours
        r = rows[s["doc"]["id"]]
        assert s["arguments"][0][0] == r["prompt"]  # --apply_chat_template renders our exact prompt
        ll = [float(x[0][0]) for x in s["resps"]]
        assert s["doc"]["choices"][max(range(len(ll)), key=ll.__getitem__)] == r["pred"]
        shift = ll[0] - r["scores"][0]
        assert [x - shift for x in ll] == pytest.approx(r["scores"], abs=2e-4)


def test_export_lmeval_command_writes_the_tasks_and_the_model_and_says_when_it_lacked_the_tokens(tiny_run, tmp_path, capsys):
    """``python -m toolsense.export lmeval run=<run> ...`` writes each probe mode's task and
    ``<output_dir>/model`` holding the run's virtual tokens, silently; given a bare ``model=`` (no
    virtual tokens of its own) it says so on stdout."""
    from transformers import AutoTokenizer

    from toolsense.export import lmeval

    written = lmeval([f"run={tiny_run}", "benchmark=demo_mcq", "benchmark.limit=3", f"output_dir={tmp_path / 'run'}"])
    out = capsys.readouterr().out
    assert [p.name for p in written] == ["toolsense_mcq.yaml", "toolsense_mcq_control.yaml"] and "warning" not in out
    assert f"pretrained={tmp_path / 'run' / 'model'} --include_path {tmp_path / 'run'} --tasks toolsense --apply_chat_template" in out
    tokens = json.loads((tmp_path / "run" / "toolsense_mcq.tokens.json").read_text())
    vocab = AutoTokenizer.from_pretrained(tmp_path / "run" / "model").get_vocab()
    assert tokens and all(t in vocab for t in tokens)
    lmeval(["model=tiny_random", "benchmark=demo_mcq", "benchmark.limit=3", f"output_dir={tmp_path / 'bare'}"])
    assert "warning: tiny_random lacks the index's 126 virtual tokens" in capsys.readouterr().out
    assert (tmp_path / "bare" / "model" / "config.json").is_file()


def test_export_lmeval_writes_only_the_items_the_evaluation_scored(tiny_run, tmp_path, capsys):
    """An evaluation scored 5 of the 126 demo MCQ items (as ``make demo`` scores 64: suite=demo's
    limit) into ``<run>/eval``: the export of ``benchmark=demo_mcq`` (no limit) writes exactly
    those, read from ``<run>/eval`` by default or ``--scored=<dir>``; ``--scored=none`` writes all
    126; samples the configured benchmark lacks, or no samples where named, are refused."""
    import shutil

    from toolsense.evaluation.runner import run
    from toolsense.export import lmeval
    from toolsense.utils.io import DataError

    run_dir = tmp_path / "run"
    shutil.copytree(tiny_run, run_dir)  # its eval/ folder is this test's
    run({"run": str(run_dir), "device": "cpu", "task": "evaluate", "benchmarks": {"mcq": {"loader": "mcq", "limit": 5}},
         "probe": {"modes": ["token"]}, "metrics": {"resamples": 10}, "logger": {"kind": "none"},
         "output_dir": str(run_dir / "eval")})
    scored = [r["item_id"] for r in map(json.loads, (run_dir / "eval" / "mcq" / "token" / "samples.jsonl").read_text().splitlines())]
    assert len(scored) == 5
    capsys.readouterr()

    def exported(*args: str) -> list[str]:
        out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
        lmeval([*args, f"run={run_dir}", "benchmark=demo_mcq", "probe.modes=[token]", f"output_dir={out}"])
        return [json.loads(x)["id"] for x in (out / "toolsense_mcq.jsonl").read_text().splitlines()]

    assert exported() == scored
    assert f"(5 of 126 items: those scored in {run_dir / 'eval' / 'mcq' / 'token'})" in capsys.readouterr().out
    assert exported(f"--scored={run_dir / 'eval'}") == scored
    assert len(exported("--scored=none")) == 126
    assert "(126 of 126 items: every item configured)" in capsys.readouterr().out
    with pytest.raises(DataError, match=r"2 scored items are not in benchmark 'mcq' as configured \(3 items"):
        exported("benchmark.limit=3")
    with pytest.raises(SystemExit, match=r"--scored=.*elsewhere: no .*mcq/token/samples.jsonl"):
        exported(f"--scored={tmp_path / 'elsewhere'}")

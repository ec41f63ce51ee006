"""Issue 45 item 3: an empty Stage-2 source or a split typo (``stage2.sources.0.split=trian``) was found only after
Stage 1 had trained, naming no field, and the corrected command was then refused. Every source is now read and
checked before the run folder is claimed or a model loads, naming the field and the values it can take."""

from __future__ import annotations

import json

import pytest

from tests.training.conftest import ASSETS, TINY, compose_train
from tests.training.test_refusals import _train, no_model  # noqa: F401  (no_model: a fixture)
from toolsense.training import prepare, to_train_config

QUERIES = ASSETS / "queries.jsonl"
RUN = [o for o in TINY if not o.startswith(("stage1.max_steps", "stage2.max_steps"))] + [
    "experiment=tg", "stage1.max_steps=1", "stage2.max_steps=1"]


def test_a_split_typo_is_refused_before_stage_1_naming_the_field(monkeypatch, tmp_path, no_model, capsys):  # noqa: F811
    out = tmp_path / "run"
    err = _train(monkeypatch, tmp_path, [*RUN, "stage2.sources.0.split=trian", f"output_dir={out}"])
    msg = capsys.readouterr().err
    assert err is not None and err.code == 2 and not out.exists()  # a user error (exit 2): nothing trained, nothing to refuse the fix
    assert f"stage2.sources.0.split='trian' matches no query of {QUERIES}: choose from ['test', 'train'], or null (all)" in msg


@pytest.mark.parametrize("override, message", [
    ("stage2.sources.0.style=verbos", "stage2.sources.0.style='verbos' matches no query of {q}: choose from ['short', 'verbose']"),
    ("stage2.sources.0.split=test", None),  # a split that exists: fine
])
def test_a_style_typo_is_named_too(override, message):
    cfg = to_train_config(compose_train([*RUN, override]))
    if message is None:
        assert [len(s.queries) for s in prepare(cfg).sources] == [3]
        return
    with pytest.raises(ValueError, match=message.format(q=QUERIES).replace("[", r"\[").replace("]", r"\]")):
        prepare(cfg)


def test_an_empty_source_and_one_without_a_catalog_tool_are_refused(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ValueError, match=rf"^stage2.sources.0: {empty} holds no queries \(kind jsonl\)"):
        prepare(to_train_config(compose_train([*RUN, f"stage2.sources.0.path={empty}"])))
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_text(json.dumps({"query": "book a flight", "tools": ["Nowhere&&book"]}) + "\n")
    two = f"stage2.sources=[{{kind:jsonl,path:'{QUERIES}',split:null}},{{kind:jsonl,path:'{elsewhere}',split:null}}]"
    cfg = to_train_config(compose_train([*RUN, two, "stage2.on_unknown_tool=skip"]))
    with pytest.raises(ValueError, match=rf"^stage2.sources.1 \({elsewhere}\): none of its 1 queries names a tool of the catalog"):
        prepare(cfg)


def test_a_verbose_source_names_its_index_and_splits():
    verbose = [o for o in RUN if not o.startswith(("stage2=", "stage2.sources"))] + ["stage2=verbose", "stage2.sources.0.split=trian"]
    cfg = to_train_config(compose_train(verbose))  # the 9 tools' verbose queries (a split of train / dev / test)
    with pytest.raises(ValueError, match=r"^stage2.sources.0.split='trian': a verbose source has splits \['train', 'dev', 'test'\]"):
        prepare(cfg)

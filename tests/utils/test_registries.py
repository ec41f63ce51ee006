"""Each plug-in registry is the one list of its names: configs validate against it (an error
names the field and the registered names) and dispatch through it, so registering a new entry
is all it takes to make it configurable."""

from __future__ import annotations

import pytest

from toolsense.catalog import Catalog, Tool
from toolsense.catalog.config import CatalogConfig, load_from_config
from toolsense.catalog.loaders import CATALOG_FORMATS
from toolsense.data.sources import QUERY_SOURCES, QuerySource, load_queries
from toolsense.generation.llm import LLM_BACKENDS, LLMConfig, build_llm
from toolsense.index.builders import INDEX_BUILDERS
from toolsense.index.config import IndexConfig, index_from_config
from toolsense.utils.registry import Registry

CASES = [
    (IndexConfig, "builder", INDEX_BUILDERS, "index.builder", []),
    (QuerySource, "kind", QUERY_SOURCES, "stage2.sources.kind", []),
    (CatalogConfig, "format", CATALOG_FORMATS, "catalog.format", ["auto"]),
    (LLMConfig, "backend", LLM_BACKENDS, "llm.backend", []),
]


def test_check_names_the_field_and_accepts_extras():
    reg: Registry[int] = Registry("thing")
    reg.register("b")(2)
    reg.register("a")(1)
    assert reg.check("a", "x.kind") == "a" and reg.check("auto", "x.kind", extra=("auto",)) == "auto"
    with pytest.raises(ValueError, match=r"^x\.kind='c': choose from \['a', 'b', 'auto'\]$"):
        reg.check("c", "x.kind", extra=("auto",))
    with pytest.raises(ValueError, match=r"^x\.kind=3: choose from \['a', 'b'\]$"):
        reg.check(3, "x.kind")


@pytest.mark.parametrize("cls,field,registry,where,extra", CASES, ids=[c[3] for c in CASES])
def test_config_rejects_unregistered_names_listing_the_registry(cls, field, registry, where, extra):
    with pytest.raises(ValueError) as err:
        cls(**{field: "nope"})
    assert str(err.value) == f"{where}='nope': choose from {registry.names() + extra}"


@pytest.mark.parametrize("cls,field,registry,where,extra", CASES, ids=[c[3] for c in CASES])
def test_a_newly_registered_name_is_a_valid_config_value(monkeypatch, cls, field, registry, where, extra):
    monkeypatch.setitem(registry._items, "added_in_test", lambda *a, **k: None)
    assert getattr(cls(**{field: "added_in_test"}), field) == "added_in_test"


def test_index_config_dispatches_through_the_registry_with_the_settings_a_builder_takes(monkeypatch, demo_catalog):
    calls = []
    monkeypatch.setitem(INDEX_BUILDERS._items, "plain", lambda catalog: calls.append(("plain", len(catalog))) or "P")
    monkeypatch.setitem(INDEX_BUILDERS._items, "branchy",
                        lambda catalog, branching, seed=0: calls.append(("branchy", branching, seed)) or "B")
    assert index_from_config(IndexConfig(builder="plain", branching=7), demo_catalog) == "P"
    assert index_from_config(IndexConfig(builder="branchy", branching=7, seed=3), demo_catalog) == "B"
    assert calls == [("plain", len(demo_catalog)), ("branchy", 7, 3)]


def test_query_source_catalog_format_and_llm_backend_dispatch_through_their_registries(monkeypatch, tmp_path):
    monkeypatch.setitem(QUERY_SOURCES._items, "fixed", lambda src: [f"q:{src.path}"])
    assert load_queries([QuerySource(kind="fixed", path="a"), QuerySource(kind="fixed", path="b")]) == ["q:a", "q:b"]

    one = Catalog.from_tools([(Tool.from_name("S&&x"), "here")])
    seen = []
    monkeypatch.setitem(CATALOG_FORMATS._items, "mine", lambda path, on_duplicate: seen.append((path.name, on_duplicate)) or one)
    (tmp_path / "c.any").write_text("")
    assert load_from_config(CatalogConfig(path=str(tmp_path / "c.any"), format="mine", on_duplicate="first")) is one
    assert seen == [("c.any", "first")]

    monkeypatch.setitem(LLM_BACKENDS._items, "echo", lambda cfg, section: ("echo", cfg.max_new_tokens, section))
    assert build_llm(LLMConfig(backend="echo", max_new_tokens=9), "judge") == ("echo", 9, "judge")  # factory(cfg, section)


def test_registries_hold_exactly_the_documented_names():
    assert INDEX_BUILDERS.names() == ["clustered", "flat", "numeric", "semantic", "structural"]
    assert QUERY_SOURCES.names() == ["demo", "generated", "jsonl", "realistic_template", "toolbench", "toolgen", "verbose", "verbose_v3"]
    assert CATALOG_FORMATS.names() == ["toolbench", "toolsense", "virtual_tokens"]
    assert LLM_BACKENDS.names() == ["hf", "local", "openai"]

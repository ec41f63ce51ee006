"""The catalog section of every config (``conf/catalog/*.yaml``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from toolsense.catalog.builders import CATALOG_BUILDERS, ensure_built
from toolsense.catalog.catalog import Catalog
from toolsense.catalog.loaders import CATALOG_FORMATS, load_catalog, load_demo_catalog
from toolsense.utils.choices import StrEnum, choice


class OnDuplicate(StrEnum):
    error = "error"
    first = "first"


@dataclass
class CatalogConfig:
    path: Optional[str] = None
    """Catalog file (ToolSense JSONL[.gz], ToolBench query .json, or a virtual-token .txt); None = the demo catalog."""
    format: str = "auto"
    """``auto`` (by file name: .txt token list, .json ToolBench query file, else ToolSense JSONL)
    or a name from the CATALOG_FORMATS registry (``catalog/loaders.py``)."""
    on_duplicate: OnDuplicate = OnDuplicate.error
    """What to do with a second record of the same canonical name: fail, or keep the first (the
    dropped ones are counted in one log line naming the file that lists them)."""
    build: Optional[str] = None
    """A built catalog (e.g. ``toolbench``): ``path`` is made from ``data_dir`` by that builder
    when missing (``python -m toolsense.catalog.build <name>``); None = ``path`` is an input file."""
    data_dir: Optional[str] = None
    """build only: the shared data folder the builder reads."""
    auto_build: bool = True
    """build only: build a missing ``path`` on first use; false = fail naming the build command."""

    def __post_init__(self) -> None:
        self.format = CATALOG_FORMATS.check(self.format, "catalog.format", extra=("auto",))
        self.on_duplicate = choice(OnDuplicate, self.on_duplicate, "catalog.on_duplicate")
        if self.build is not None:
            if self.build not in CATALOG_BUILDERS:
                raise ValueError(f"catalog.build={self.build!r}: choose from {CATALOG_BUILDERS.names()} or null")
            if not self.path or not self.data_dir:
                raise ValueError(f"catalog.build={self.build!r} needs catalog.path (where it is cached) "
                                 "and catalog.data_dir (what it is built from)")


def load_from_config(cfg: CatalogConfig) -> Catalog:
    if cfg.path is None:
        return load_demo_catalog()
    if cfg.build is not None:
        ensure_built(cfg.build, cfg.path, cfg.data_dir, cfg.auto_build)
    return load_catalog(cfg.path, cfg.format, cfg.on_duplicate.value)


def catalog_beside_run(given: CatalogConfig, run_dir, own: Catalog, index_tools) -> Catalog:
    """The catalog ranked beside a trained run (``run_dir``, whose catalog is ``own`` and index ``index_tools``): its
    own, or ``given`` when it holds exactly the index tools (its text may differ); else a ConfigError naming both."""
    from toolsense.utils.errors import ConfigError
    from toolsense.utils.rundir import RunDir

    rd = RunDir(run_dir)
    own_cfg = rd.section("catalog", CatalogConfig)
    if given == own_cfg:
        return own
    catalog = load_from_config(given)
    names, index = set(catalog.names), set(index_tools)
    if names == index:
        return catalog
    extra, missing = sorted(names - index), sorted(index - names)
    raise ConfigError(
        f"catalog: {given.path or 'the demo catalog'} ({len(names)} tools) is not the catalog of run {rd.path}, "
        f"whose index holds {len(index)} tools ({rd.config_path}: catalog.path={own_cfg.path or 'null (the demo catalog)'}); "
        f"{len(extra)} tools only in catalog= (e.g. {extra[:2]}), {len(missing)} only in the run's index (e.g. {missing[:2]}). "
        "A run ranks its own tools: drop catalog= (baselines then rank the run's catalog), or evaluate a run trained on it")

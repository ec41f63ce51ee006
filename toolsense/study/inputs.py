"""What a study report reads that its archive does not hold (the study catalog and its standard split), rebuilt on a
machine that never trained the study, as train.py builds them."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from toolsense.catalog import load_catalog
from toolsense.catalog.builders import ensure_built
from toolsense.data.verbose import default_output as verbose_output
from toolsense.data.verbose import ensure_written as ensure_verbose
from toolsense.study.sweep import Sweep
from toolsense.utils.paths import local_path, portable_text

log = logging.getLogger(__name__)


def rebuild_inputs(run_cfg: dict[str, Any], sweep: Sweep | None) -> str | None:
    """A report rebuilt on a machine that never trained the study (a fresh clone, its archive unpacked) lacks the
    study catalog and its standard query split, which the archive does not hold; the catalog section, the
    full-catalog baselines and finding 7's coverage (the Stage-2 queries rebuilt from the catalog) read them.
    Where the runs' config names a catalog builder with ``auto_build``, both are
    rebuilt here as train.py builds them (deterministic, seed 0: seconds), and the rebuilt catalog's tools are
    checked against the tools the first run indexed. Returns what was rebuilt and whether it matches, or None where
    nothing was missing (or nothing can be rebuilt: the section then says it is not recorded)."""
    cat = run_cfg.get("catalog") or {}
    path = local_path(str(cat.get("path") or "")) or ""
    if not path or not cat.get("build") or not cat.get("auto_build") or not cat.get("data_dir"):
        return None
    missing = [p for p in (Path(path), verbose_output(path)) if not p.is_file()]
    if not missing:
        return None
    try:
        ensure_built(str(cat["build"]), path, str(cat["data_dir"]), auto_build=True)
        ensure_verbose(path)
    except (OSError, ValueError, KeyError) as e:  # no ../shared/data here: the section says the composition is not recorded
        log.warning("catalog %s: not rebuilt for the report (%s)", cat["build"], e)
        return None
    what = ", ".join(f"`{portable_text(str(p))}`" for p in missing)
    indexed = sorted(sweep.path.glob("*/index.json")) if sweep is not None else []
    if not indexed:
        return f"Rebuilt on this machine for this report (the archive holds no catalog): {what}."
    runs = {t["name"] if isinstance(t, dict) else t for t in json.loads(indexed[0].read_text(encoding="utf-8")).get("tools", [])}
    built = {t.name for t in load_catalog(path)}
    same = ("the same tools the runs indexed" if built == runs else
            f"**not** the tools the runs indexed ({len(built - runs)} not indexed, {len(runs - built)} indexed but not "
            "rebuilt): the section below describes another catalog")
    return f"Rebuilt on this machine for this report (the archive holds no catalog): {what}; {len(built):,} tools, {same}."

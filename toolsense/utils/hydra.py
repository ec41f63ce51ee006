"""Hydra glue kept out of library code, called only from the entry scripts: registering
structured-config schemas, and reading the running app's own values (output dir, run mode,
sweep dir) through Hydra's ``${hydra:...}`` resolver — the same route a YAML interpolation
takes, so no module reaches into Hydra's global state."""

from __future__ import annotations

from pathlib import Path

from hydra.core.config_store import ConfigStore

SCHEMAS: dict[str, type] = {}
"""Every job's schema registered in this process, by its name (``evaluate_schema``): what the
config tests walk."""


def register_schema(name: str, node: type) -> None:
    """Register a dataclass as the schema a top-level YAML lists first in its defaults: the
    dataclass is the one source of defaults, so the YAML holds only the defaults list and what
    differs, and every ``section.key=value`` override has a key to land on. Typed (a bad key or
    type fails at compose time) where OmegaConf can express the dataclass; a tree of Union /
    Literal fields (which OmegaConf 2.3 cannot) is registered as its plain defaults instead, and
    the converter (:func:`toolsense.utils.config.to_config`) checks it."""
    from toolsense.utils.config import defaults_of, omegaconf_can_type

    SCHEMAS[name] = node
    ConfigStore.instance().store(name=name, node=node if omegaconf_can_type(node) else defaults_of(node))


def hydra_value(key: str) -> str:
    """``${hydra:<key>}`` of the running app, e.g. ``runtime.output_dir``, ``mode``, ``sweep.dir``."""
    from omegaconf import OmegaConf

    return str(OmegaConf.create({"v": "${hydra:" + key + "}"}).v)


def shared_output_dir(explicit: str | None) -> str:
    """The run's output directory: ``output_dir=`` when given, else Hydra's (timestamped) one.
    Several processes (torchrun, Slurm tasks) must be given one explicitly: each would stamp
    its own time and write to a directory of its own."""
    import os

    if explicit:
        return explicit
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        raise ValueError("output_dir: set it explicitly (output_dir=outputs/<name>) when launching several processes; "
                         "each would otherwise pick its own timestamped Hydra directory")
    return hydra_value("runtime.output_dir")


def sweep_name() -> str | None:
    """The name of the -m sweep this job belongs to (its directory's name, e.g. the timestamp),
    or None for a single run: a sweep is one W&B group."""
    return Path(hydra_value("sweep.dir")).name if hydra_value("mode").endswith("MULTIRUN") else None

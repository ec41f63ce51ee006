"""The one way toolsense composes a job's config outside its own ``@hydra.main``: evaluate.yaml
after training (and for the leakage refusal before it), the paper's rows, the exports and the
tests all come through :func:`compose`.

The configs ship inside the package (``toolsense/conf``, Hydra's ``pkg://toolsense.conf``), so an
installed wheel composes them from any working directory. A user's own config folder is added the
way Hydra adds one: ``--config-dir <dir>`` or ``hydra.searchpath=[file://<dir>]`` on a job's command
line; inside such a running job :func:`compose` composes with that job's search path.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path
from typing import Sequence

from toolsense.utils.errors import MissingFile

CONF_MODULE = "toolsense.conf"
"""The package holding the configs, found by import wherever toolsense is installed (``pkg://toolsense.conf``)."""


def conf_dir() -> Path:
    """The shipped configs as a folder on disk (in a checkout, an editable install or a wheel)."""
    return Path(str(files("toolsense").joinpath("conf")))


def checkout_path(path: str | Path) -> Path:
    """A path relative to the checkout (a study's archive, ``docs/reports/<name>.tar.xz``) found from the
    configs' location (``toolsense/conf`` -> the checkout holding them), so any working folder reaches it;
    absolute as given; else under the working folder (an installed wheel has no checkout around it)."""
    path, checkout = Path(path), conf_dir().parent.parent
    if path.is_absolute():
        return path
    if (checkout / "pyproject.toml").is_file() and (checkout / path).parent.is_dir():
        return checkout / path
    return Path.cwd() / path


def shipped_file(path: str | Path, what: str, key: str) -> Path:
    """:func:`checkout_path` of a file the repository ships beside the package (a study's archive); one
    that is not there is refused naming ``what``, where it looked and how to get it (``key=<its path>``)."""
    found = checkout_path(path)
    if not found.is_file():
        raise MissingFile(f"{what} is not at {found} ({key}={path}). It ships with the repository, not with the "
                          f"installed package: run from a checkout (git clone the toolsense repository; {path} is in "
                          f"it) or download {path} from it and pass {key}=<its path>")
    return found


def compose(name: str, overrides: Sequence[str] = (), return_hydra_config: bool = False):
    """``<name>.yaml`` (train, evaluate, generate, audit, compare, annotate, reproduce) composed
    with ``overrides`` as the job's command line would compose it; a DictConfig. Inside a running
    Hydra app (train.py composing evaluate.yaml) the app's search path is used, so a user's
    ``--config-dir`` reaches this composition too. The caller registers the schema
    (``register_configs()``) first, as the job's entry module does at import."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    overrides = list(overrides)
    if GlobalHydra.instance().is_initialized():
        return hydra_compose(name, overrides=overrides, return_hydra_config=return_hydra_config)
    with initialize_config_module(config_module=CONF_MODULE, version_base="1.3"):
        return hydra_compose(name, overrides=overrides, return_hydra_config=return_hydra_config)

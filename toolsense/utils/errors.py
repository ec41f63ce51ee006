"""The one error a user can act on, and how every job's entry point reports it.

A :class:`UserError` is a refusal whose cause lies outside the code: a config field
(:class:`ConfigError`, named by its dotted path), an input file (:class:`DataError`, named by
``file:line``), a missing file (:class:`MissingFile`), an endpoint's reply (:class:`EndpointError`,
naming the config field that points at it). Its message names that place and the fix.
Every job's Hydra task runs inside :func:`user_errors`: a user error is printed as one line on
stderr and the process exits 2, after removing the log folder Hydra made for this run, so that
a refused command writes nothing. ``debug=true`` on the command line (or ``TOOLSENSE_DEBUG=1``, or
Hydra's ``HYDRA_FULL_ERROR=1``) lets it through with its traceback instead. Anything else is a bug:
it keeps Hydra's traceback and exit 1.

All are ``ValueError``s (``MissingFile`` also a ``FileNotFoundError``), so callers that catch
those, and tests that expect them, are unchanged.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

USER_ERROR_EXIT = 2
"""The exit status of a refused command (argparse's); a bug exits 1 (Hydra's)."""

DEBUG_ENV = "TOOLSENSE_DEBUG"


class UserError(ValueError):
    """Something the user can fix; the message names the field or ``file:line`` and the fix."""


class ConfigError(UserError):
    """A config value refused; the message starts with its dotted field (``metrics.ks``)."""


class DataError(UserError):
    """Bad input data; the message names the file, line and field."""


class MissingFile(UserError, FileNotFoundError):
    """An input file that does not exist; the message names it (``<path>: no such file``)."""


class EndpointError(UserError):
    """A server refused in a way no retry can fix (a key it does not accept, a model it does not
    serve); the message names the config field that points at the server or the key."""


def take_debug(argv: Sequence[str]) -> list[str]:
    """``argv`` without a ``debug=true|false`` override (no job's schema holds it): ``true`` sets
    ``TOOLSENSE_DEBUG=1`` for this process and the ones it starts."""
    out = []
    for arg in argv:
        key, _, val = arg.partition("=")
        if key.lstrip("+") == "debug" and val.lower() in ("true", "false", "1", "0"):
            if val.lower() in ("true", "1"):
                os.environ[DEBUG_ENV] = "1"
            continue
        out.append(arg)
    return out


def debugging() -> bool:
    """Whether a user error should keep its traceback (``debug=true``, ``HYDRA_FULL_ERROR=1``)."""
    return any(os.environ.get(k, "") not in ("", "0") for k in (DEBUG_ENV, "HYDRA_FULL_ERROR"))


HYDRA_FILES = (".hydra/config.yaml", ".hydra/hydra.yaml", ".hydra/overrides.yaml")


def forget_hydra_dir() -> None:
    """Remove the folder Hydra made for this run (``.hydra/`` and ``<job>.log``) when it holds
    nothing else, and its parents left empty below the working directory: a refused command
    leaves no trace. A folder holding anything more (a run's own files) is left as it is."""
    from toolsense.utils.hydra import hydra_value

    try:
        folder, job = Path(hydra_value("runtime.output_dir")).resolve(), hydra_value("job.name")
    except Exception:  # noqa: BLE001 - outside a running Hydra app there is no such folder
        return
    ours = {folder / f for f in HYDRA_FILES} | {folder / f"{job}.log"}
    present = {p for p in folder.rglob("*") if p.is_file()} if folder.is_dir() else set()
    if not present or not present <= ours:
        return
    for p in present:
        p.unlink()
    stop = Path.cwd().resolve()
    for d in [folder / ".hydra", folder, *folder.parents]:
        if d == stop or stop not in d.parents:
            break
        try:
            d.rmdir()
        except OSError:
            break


@contextmanager
def user_errors() -> Iterator[None]:
    """The body of a job's Hydra task: a :class:`UserError` escaping it is printed as one line
    (``<command>: error: <message>``, the command as typed: ``evaluate.py``, ``toolsense-evaluate``)
    and the process exits 2; a bug passes on to Hydra. In a ``-m`` sweep the line is printed and
    the error passes on too, so the sweep's other jobs still run and Hydra marks this one failed."""
    try:
        yield
    except UserError as e:
        if debugging():
            raise
        sys.stderr.flush()
        print(f"{os.path.basename(sys.argv[0])}: error: {e}", file=sys.stderr, flush=True)
        if _multirun():  # the sweep's other jobs still run; Hydra marks this one failed and reports it at the end
            raise
        forget_hydra_dir()
        sys.exit(USER_ERROR_EXIT)


def _multirun() -> bool:
    from toolsense.utils.hydra import hydra_value

    try:
        return hydra_value("mode").endswith("MULTIRUN")
    except Exception:  # noqa: BLE001 - not inside a Hydra app
        return False


__all__ = ["ConfigError", "DataError", "EndpointError", "MissingFile", "USER_ERROR_EXIT", "UserError", "debugging",
           "forget_hydra_dir", "take_debug", "user_errors"]

"""Hydra glue kept out of library code, called only from the entry scripts: registering
structured-config schemas, reporting a user's error as one line (:func:`user_errors`), and
reading the running app's own values (output dir, run mode, sweep dir) through Hydra's
``${hydra:...}`` resolver — the same route a YAML interpolation takes, so no module reaches into
Hydra's global state."""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

from hydra.core.config_store import ConfigStore
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from omegaconf import OmegaConf

from toolsense.utils.errors import ConfigError, UserError, environment_error

USER_ERROR_EXIT = 2
"""The exit status of a refused command (argparse's); a bug exits 1 (Hydra's)."""

DEBUG_ENV = "TOOLSENSE_DEBUG"

SCHEMAS: dict[str, type] = {}
"""Every job's schema registered in this process, by its name (``evaluate_schema``): what the
config tests walk."""


def register_schema(name: str, node: type) -> None:
    """Register a dataclass as the schema a top-level YAML lists first in its defaults: the
    dataclass is the one source of defaults, so the YAML holds only the defaults list and what
    differs, and every ``section.key=value`` override has a key to land on. Typed (a bad key or
    type fails at compose time) where OmegaConf can express the dataclass; a tree of Union /
    Literal fields (which OmegaConf 2.3 cannot) is registered as its plain defaults instead, and
    the converter (:func:`toolsense.utils.config.to_config`) checks it. A mapping field declared
    with ``metadata={"open": True}`` takes new keys on the command line without Hydra's ``+``
    (``evaluate.settings.metrics.resamples=100``): the converter checks what lands there."""
    from toolsense.utils.config import defaults_of, omegaconf_can_type

    SCHEMAS[name] = node
    cfg = OmegaConf.structured(node) if omegaconf_can_type(node) else OmegaConf.create(defaults_of(node))
    for path in open_fields(node):
        OmegaConf.set_struct(OmegaConf.select(cfg, path), False)
    ConfigStore.instance().store(name=name, node=cfg)


def open_fields(cls: type, prefix: str = "") -> list[str]:
    """Dotted paths of the mapping fields of ``cls``'s dataclass tree declared ``metadata={"open": True}``."""
    import dataclasses
    import typing

    hints, out = typing.get_type_hints(cls), []
    for f in dataclasses.fields(cls):
        path = f"{prefix}.{f.name}" if prefix else f.name
        if f.metadata.get("open"):
            out.append(path)
        elif dataclasses.is_dataclass(hints[f.name]):
            out += open_fields(hints[f.name], path)
    return out


def hydra_value(key: str) -> str:
    """``${hydra:<key>}`` of the running app, e.g. ``runtime.output_dir``, ``mode``, ``sweep.dir``."""
    return str(OmegaConf.create({"v": "${hydra:" + key + "}"}).v)


def shared_output_dir(explicit: str | None) -> str:
    """The run's output directory: ``output_dir=`` when given, else Hydra's (timestamped) one.
    The ranks of a ``-m`` job (the Slurm tasks of ``launcher=slurm``) share Hydra's: its sweep
    directory was stamped once, where the sweep was submitted. Several processes of a single run
    (torchrun) must be given one explicitly: each would stamp its own time."""
    from toolsense.utils.ranks import world_size

    if explicit:
        return explicit
    if world_size() > 1 and not hydra_value("mode").endswith("MULTIRUN"):
        raise ConfigError("output_dir: set it explicitly (output_dir=outputs/<name>) when launching several processes; "
                          "each would otherwise pick its own timestamped Hydra directory")
    return hydra_value("runtime.output_dir")


def sweep_name() -> str | None:
    """The name of the -m sweep this job belongs to (its directory's name, e.g. the timestamp),
    or None for a single run: a sweep is one W&B group."""
    return Path(hydra_value("sweep.dir")).name if hydra_value("mode").endswith("MULTIRUN") else None


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
    """Remove the folder Hydra made for this run (``.hydra/``, ``<job>.log``, a released ``.lock``) when it holds
    nothing else, and its parents left empty below the working directory: a refused command
    leaves no trace. A folder holding anything more (a run's own files) is left as it is."""
    try:
        folder, job = Path(hydra_value("runtime.output_dir")).resolve(), hydra_value("job.name")
    except Exception:  # noqa: BLE001 - outside a running Hydra app there is no such folder
        return
    ours = {folder / f for f in HYDRA_FILES} | {folder / f"{job}.log", folder / ".lock"}  # the lock: released by now
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
    and the process exits 2, as is an OSError the machine caused (a full disk, a dangling symlink:
    :func:`~toolsense.utils.errors.environment_error`); a bug passes on to Hydra. In a ``-m`` sweep
    the line is printed and the error passes on to :class:`RefusedJobs`, so the sweep's other jobs still run."""
    try:
        check_choices()
        yield
    except (UserError, OSError) as e:
        line = refusal_line(e)
        if line is None or debugging():
            raise
        sys.stderr.flush()
        print(f"{os.path.basename(sys.argv[0])}: error: {line}", file=sys.stderr, flush=True)
        forget_hydra_dir()
        if _multirun():  # the sweep's other jobs still run (RefusedJobs); the sweep ends with a line per refused job
            raise
        sys.exit(USER_ERROR_EXIT)


def refusal_line(e: BaseException) -> str | None:
    """The one line of a user error (or of an OSError the machine caused); None for a bug."""
    if isinstance(e, UserError):
        return str(e)
    return environment_error(e) if isinstance(e, OSError) else None


def _multirun() -> bool:
    try:
        return hydra_value("mode").endswith("MULTIRUN")
    except Exception:  # noqa: BLE001 - not inside a Hydra app
        return False


@contextmanager
def hydra_errors() -> Iterator[None]:
    """Around a job's ``@hydra.main`` call (its ``main()``), what Hydra itself reports: a command line it cannot
    compose (a field no section has, a group option that does not exist, an override it cannot parse) is one
    line naming the override and the fix, exit 2, as a user error is (:func:`composition_line`); ``debug=true``
    prints its traceback (exit 1) and ``HYDRA_FULL_ERROR=1`` lets it through. A ``-m`` sweep whose jobs a user
    error stopped (:class:`RefusedJobs`) ends with one line per such job (:func:`sweep_refusals`) and exit 2.
    Hydra reports composition errors from inside its ``run_and_report`` (several lines, exit 1) before any hook
    of its runs, so that is what is wrapped, for this call only."""
    import traceback

    import hydra._internal.utils as internal
    from hydra._internal.hydra import Hydra
    from hydra.errors import ConfigCompositionException, OverrideParseException

    original, show_cfg = internal.run_and_report, Hydra.show_cfg

    def run_and_report(func):
        def reported():
            try:
                result = func()
            except UserError as e:  # --cfg job with a group option that exists nowhere (_refusing_show_cfg)
                if debugging() or os.environ.get("HYDRA_FULL_ERROR", "") not in ("", "0"):
                    raise
                print(f"{os.path.basename(sys.argv[0])}: error: {e}", file=sys.stderr, flush=True)
                sys.exit(USER_ERROR_EXIT)
            except (ConfigCompositionException, OverrideParseException) as e:
                if os.environ.get("HYDRA_FULL_ERROR", "") not in ("", "0"):
                    raise
                if debugging():
                    traceback.print_exc()
                    sys.exit(1)
                print(f"{os.path.basename(sys.argv[0])}: error: {composition_line(e)}", file=sys.stderr, flush=True)
                sys.exit(USER_ERROR_EXIT)
            except ValueError as e:  # OmegaConf indexing a list with a key (compare.py metrics.kss=[1]): not wrapped by Hydra
                frames = [f.name for f in traceback.extract_tb(e.__traceback__)]
                if "_apply_overrides_to_config" not in frames or debugging() or os.environ.get("HYDRA_FULL_ERROR", "") not in ("", "0"):
                    raise
                print(f"{os.path.basename(sys.argv[0])}: error: an override does not fit the config ({e}): a list takes an "
                      "index (metrics.0=...) or a whole list (metrics=[...]); --cfg job shows every field",
                      file=sys.stderr, flush=True)
                sys.exit(USER_ERROR_EXIT)
            refused = sweep_refusals(result)
            for line in refused:
                print(f"{os.path.basename(sys.argv[0])}: error: {line}", file=sys.stderr, flush=True)
            if refused:
                sys.exit(USER_ERROR_EXIT)
            return result

        return original(reported)

    internal.run_and_report, Hydra.show_cfg = run_and_report, _refusing_show_cfg(show_cfg)
    try:
        yield
    finally:
        internal.run_and_report, Hydra.show_cfg = original, show_cfg


def _refusing_show_cfg(show_cfg):
    """Hydra's ``show_cfg`` (``--cfg job`` / ``--cfg all``, which print a config and run nothing) refusing, as a
    run does (:func:`check_choices`), a group option that exists nowhere: it printed the default config."""
    def checked(self, config_name, overrides, cfg_type, package, resolve=False):
        from hydra.types import RunMode
        cfg = self.compose_config(config_name=config_name, overrides=overrides, run_mode=RunMode.RUN)
        refuse_missing_options(cfg.hydra.overrides.task, cfg.hydra.runtime.choices)
        return show_cfg(self, config_name, overrides, cfg_type, package, resolve)
    return checked


def composition_line(e: Exception) -> str:
    """The one line for an error of Hydra's composition: the override and the fix."""
    from hydra.errors import MissingConfigException, OverrideParseException
    from omegaconf.errors import ConfigAttributeError, ConfigKeyError, OmegaConfBaseException

    cause = e.__cause__
    if isinstance(e, OverrideParseException):
        why = "; ".join(x for x in str(e).splitlines() if x and not x.startswith(("See https:", "Error parsing")))
        return (f"{e.override}: Hydra cannot parse this override ({why}); quote a value holding , [ ] {{ }} = or "
                "spaces (\"key='a,b'\"); the grammar: https://hydra.cc/docs/advanced/override_grammar/basic")
    if isinstance(e, MissingConfigException) and e.missing_cfg_file and e.options:
        group, _, option = e.missing_cfg_file.rpartition("/")
        return no_such_option(group, option, e.options)
    if isinstance(cause, (ConfigAttributeError, ConfigKeyError)) and cause.full_key and cause.parent_node is not None:
        return _no_such_field(cause.full_key, cause.parent_node)
    if isinstance(cause, OmegaConfBaseException) and cause.full_key:
        value = "" if cause.value is None else f"={cause.value!r}"
        return f"{cause.full_key}{value}: {str(cause.msg).splitlines()[0]}"
    if "No match in the defaults list" in str(e):  # group=option where the job has no such group
        key = str(e).split("'")[1]
        return (f"{key}: no such group or field here; {os.path.basename(sys.argv[0])} --info defaults lists the groups, "
                "--cfg job the fields")
    return "; ".join(x.strip() for x in str(e).split("Config search path")[0].splitlines() if x.strip())


def no_such_option(group: str, option: str, options: Sequence[str]) -> str:
    """``group=option`` refused: the nearest options, then all of them."""
    import difflib

    near = difflib.get_close_matches(option, options, 3, 0.6)
    guess = f"did you mean {' or '.join(f'{group}={n}' for n in near)}? " if near else ""
    return f"{group}={option}: {group} has no option {option!r}; {guess}choose from {', '.join(options)}"


def _no_such_field(key: str, parent) -> str:
    """``key`` refused: a sibling or a field elsewhere with a close name, else the section's fields."""
    import difflib

    def paths(node, prefix=""):
        for k, v in node.items():
            yield f"{prefix}{k}"
            if isinstance(v, dict):
                yield from paths(v, f"{prefix}{k}.")

    section, _, leaf = key.rpartition(".")
    siblings = [str(k) for k in parent.keys() if k != "hydra"]
    fields = [p for p in paths(OmegaConf.to_container(parent._get_root(), resolve=False)) if not p.startswith("hydra")]
    near = [f"{section}.{k}" if section else k for k in difflib.get_close_matches(leaf, siblings, 3, 0.7)]
    near += [p for p in fields if difflib.get_close_matches(leaf, [p.rpartition(".")[2]], 1, 0.8) and p not in near]
    if near:
        return f"{key}: no such field; did you mean {' or '.join(near[:3])}?"
    return (f"{key}: no such field; {section or 'the top level'} has {', '.join(siblings)} "
            f"({os.path.basename(sys.argv[0])} --cfg job shows every field)")


def check_choices() -> None:
    """A group option named on the command line that exists nowhere is refused (:func:`no_such_option`):
    Hydra skips a missing option of an ``optional`` group silently (``experiment=nope`` trained the default)."""
    from hydra.core.global_hydra import GlobalHydra
    try:
        overrides, choices = (OmegaConf.create({"v": "${hydra:" + k + "}"}).v for k in ("overrides.task", "runtime.choices"))
    except Exception:  # noqa: BLE001 - not inside a running Hydra app
        return
    if GlobalHydra.instance().is_initialized():
        refuse_missing_options(overrides, choices)


def refuse_missing_options(overrides: Sequence[str], choices) -> None:
    """:func:`check_choices` over a composed config's ``hydra.overrides.task`` and ``hydra.runtime.choices``
    (``--cfg job`` shows a config without running the job, so the check runs on what it composed)."""
    from hydra.core.global_hydra import GlobalHydra

    for override in overrides:
        group, sep, option = override.lstrip("+").partition("=")
        group = group.split("@")[0]
        if sep and group in choices and option != "null":
            options = GlobalHydra.instance().config_loader().get_group_options(group)
            if option not in options:
                raise ConfigError(no_such_option(group, option, options))


@dataclass(frozen=True)
class Refused:
    """What a ``-m`` job a user error stopped returns (:class:`RefusedJobs`): its one line."""

    line: str


class RefusedJobs(Callback):
    """Hydra callback (``hydra.callbacks.refused`` in every job's YAML): a sweep job that a user error stopped
    returns :class:`Refused` instead of failing, so Hydra's sweeper goes on with the other jobs (it stops at the
    first failed one) and the sweep's end (the comparison table, CompareAfterSweep) still comes; the sweep then
    ends with a line per refused job (:func:`hydra_errors`). It runs where the job ran (a Slurm task too) and
    the return travels back as any job's. A bug, or ``debug=true``, still fails the job and the sweep."""

    def on_job_end(self, config, job_return: JobReturn, **kwargs) -> None:
        line = refusal_line(job_return._return_value) if job_return.status == JobStatus.FAILED else None
        if line is not None and not debugging():
            job_return.status, job_return.return_value = JobStatus.COMPLETED, Refused(line)


def sweep_refusals(result) -> list[str]:
    """A sweep's refused jobs (what ``hydra.multirun`` returned: batches of JobReturns), one line each naming the
    job's number and the overrides that set it apart from the sweep's other jobs; all refused alike, one line."""
    jobs = [r for batch in result for r in batch if isinstance(r, JobReturn)] if isinstance(result, list) else []
    refused = [r for r in jobs if isinstance(r._return_value, Refused)]
    if not refused:
        return []
    lines = {r._return_value.line for r in refused}
    if len(refused) == len(jobs) > 1 and len(lines) == 1:
        return [f"all {len(jobs)} jobs of the sweep: {lines.pop()}"]
    common = set.intersection(*(set(r.overrides or ()) for r in jobs))
    out = []
    for r in refused:
        num = OmegaConf.select(r.hydra_cfg, "hydra.job.num") if r.hydra_cfg is not None else jobs.index(r)
        own = " ".join(o for o in r.overrides or () if o not in common)
        out.append(f"job {num} of {len(jobs)}{f' ({own})' if own else ''}: {r._return_value.line}")
    return out

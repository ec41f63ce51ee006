"""Every Hydra command shown in the README and docs/ still composes and converts to its typed config.

A command in a fenced ``bash`` block that runs one of the jobs (``python train.py …``,
``torchrun … evaluate.py …``, ``toolsense-train …``) is parsed like a shell would, its overrides are
composed against the shipped configs (``toolsense/conf``) with Hydra's compose API (the first job of a
``-m`` sweep), and the result goes through the job's own converter (``to_config``), so a renamed group,
a removed field or a value a ``__post_init__`` refuses breaks this test, naming the page and the command.
Placeholders written as ``<run dir>`` are replaced by a plain word first; they name paths, which
composition never opens.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra.core.global_hydra import GlobalHydra
from hydra.core.hydra_config import HydraConfig
from hydra.core.override_parser.overrides_parser import OverridesParser
from omegaconf import open_dict

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"```bash\n(.*?)```", re.S)
PLACEHOLDER = re.compile(r"<[^<>\n]*>")
ENTRY = {"train.py": "train", "evaluate.py": "evaluate", "compare.py": "compare", "annotate.py": "annotate",
         "generate.py": "generate", "audit.py": "audit", "reproduce.py": "reproduce"}
ENTRY |= {f"toolsense-{job}": job for job in set(ENTRY.values())}  # the installed package's console commands
SKIP_PAGES = {"reproduction.md", "paper_tables.md"}
"""Generated reports: their commands are written by code that the study's own tests check."""


@dataclass(frozen=True)
class Command:
    page: str
    line: str
    script: str
    overrides: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.page}: {self.line}"


def _logical_lines(block: str) -> list[str]:
    """Lines of a shell block with backslash continuations joined and comments dropped."""
    joined = block.replace("\\\n", " ")
    return [line.split("  #")[0].strip() for line in joined.splitlines() if line.strip()]


def _command(page: str, line: str) -> Command | None:
    words = shlex.split(PLACEHOLDER.sub("x", line), comments=True)
    scripts = [i for i, w in enumerate(words) if w in ENTRY]
    if not scripts:
        return None
    i = scripts[0]
    args = [w for w in words[i + 1:] if w not in ("-m", "--multirun")]
    return Command(page, line, ENTRY[words[i]], tuple(args))


def documented_commands() -> list[Command]:
    out = []
    for page in PAGES:
        if page.name in SKIP_PAGES:
            continue
        for block in FENCE.findall(page.read_text()):
            for line in _logical_lines(block):
                cmd = _command(str(page.relative_to(ROOT)), line)
                if cmd is not None:
                    out.append(cmd)
    return out


def _schema(script: str):
    """The typed config class of an entry script, with its structured configs registered."""
    if script == "train":
        from toolsense.training import TrainConfig, register_configs
        register_configs()
        return TrainConfig
    if script == "evaluate":
        from toolsense.evaluation.config import EvaluateConfig, register_configs
        register_configs()
        return EvaluateConfig
    if script == "compare":
        from toolsense.comparison.compare import CompareConfig, register_configs
        register_configs()
        return CompareConfig
    if script == "annotate":
        from toolsense.comparison.annotate import AnnotateJobConfig, register_configs
        register_configs()
        return AnnotateJobConfig
    if script == "generate":
        from toolsense.generation.config import GenerateConfig, register_configs
        register_configs()
        return GenerateConfig
    if script == "audit":
        from toolsense.audit import AuditConfig, register_configs
        register_configs()
        return AuditConfig
    from toolsense.study.config import StudyConfig, register_configs
    register_configs()
    return StudyConfig


COMMANDS = documented_commands()


def test_the_docs_show_commands_of_every_entry_script():
    assert {c.script for c in COMMANDS} == set(ENTRY.values())
    assert len(COMMANDS) >= 20


@pytest.mark.parametrize("cmd", COMMANDS, ids=[f"{c.page}:{i}" for i, c in enumerate(COMMANDS)])
def test_documented_command_composes(cmd: Command):
    from toolsense.utils.compose import conf_dir
    from toolsense.utils.config import to_config

    schema = _schema(cmd.script)
    overrides = list(cmd.overrides)
    if cmd.script == "evaluate":  # as evaluate.py's main() reads its command line (a catalog field on a null catalog)
        from toolsense.evaluation.config import catalog_group

        overrides = catalog_group(overrides)
    parsed = OverridesParser.create().parse_overrides(overrides)
    first_job = BasicSweeper.split_arguments(parsed, max_batch_size=None)[0][0]
    GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
            cfg = compose(config_name=cmd.script, overrides=list(first_job), return_hydra_config=True)
            HydraConfig.instance().set_config(cfg)  # resolves ${hydra:...} as a real run would
            with open_dict(cfg):
                del cfg["hydra"]
            typed = to_config(schema, cfg)
    except Exception as e:  # noqa: BLE001 - the message must name the page and the command
        pytest.fail(f"{cmd}\n  -> {type(e).__name__}: {e}")
    finally:
        GlobalHydra.instance().clear()
    assert isinstance(typed, schema)

"""Shared fixtures. Real data in ../shared/data is optional: tests that need it skip cleanly."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "disabled")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# numba's only user in the suite is ranx (tests/reporting/test_export.py, runs of at most 54 queries): compiling its
# metrics and RRF took 40-76 s of a fresh CI run's 15 minutes; interpreted, the same functions give the same values
# in about 2 s. Set here, before anything imports numba; a user's own ranx keeps its JIT.
os.environ.setdefault("NUMBA_DISABLE_JIT", "1")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("TOOLSENSE_DATA", ROOT.parent / "shared" / "data"))
ASSETS = Path(__file__).parent / "assets"


def _say_seed(config, write) -> None:
    seed = getattr(config.option, "randomly_seed", None)
    if seed is not None and config.pluginmanager.has_plugin("randomly"):
        write(f"test order shuffled by pytest-randomly: rerun this order with --randomly-seed={seed} (-p no:randomly keeps file order)")


def pytest_sessionstart(session):
    """The shuffled order's seed at the start too: a run killed or timed out (CI's limit) can still be replayed."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        _say_seed(session.config, reporter.write_line)


def pytest_terminal_summary(terminalreporter, config):
    """The shuffled order's seed (pytest-randomly, the dev extra) at the end of the run, where ``-q`` still shows it."""
    _say_seed(config, terminalreporter.write_line)


@pytest.fixture(autouse=True)
def _no_log_file_outlives_its_test():
    """A job run in-process (Hydra's job logging) leaves a FileHandler on the root logger whose folder the test's
    tmp_path removal later deletes; any later test that logs then fails opening it (FileHandler.emit reopens outside
    its error handling). Each test's new file handlers are closed and removed when it ends."""
    import logging

    def file_handlers() -> set:
        loggers = [logging.getLogger(), *(lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger))]
        return {(lg, h) for lg in loggers for h in lg.handlers if isinstance(h, logging.FileHandler)}

    before = file_handlers()
    yield
    for logger, handler in file_handlers() - before:
        logger.removeHandler(handler)
        handler.close()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def study_tools_catalog(shared_data) -> Path:
    """catalog=study_tools, built from ../shared/data into ``$TOOLSENSE_CACHE/catalogs`` when missing (about 1 s):
    the archived study runs name it there, and CI's cache starts empty."""
    import toolsense.catalog.study_tools  # noqa: F401  (registers the builder)
    from toolsense.catalog.builders import default_output, ensure_built

    return ensure_built("study_tools", default_output("study_tools"), shared_data, auto_build=True)


@pytest.fixture(scope="session")
def demo_catalog():
    from toolsense.catalog import load_demo_catalog

    return load_demo_catalog()


@pytest.fixture(scope="session")
def tiny_model_dir() -> str:
    """The cached tiny_random model folder (2 layers, hidden 64, local BPE tokenizer)."""
    from toolsense.models import ModelConfig, resolve_model_dir

    return resolve_model_dir(ModelConfig("tiny_random"))


@pytest.fixture
def tiny_model(tiny_model_dir):
    """A fresh (model, tokenizer) pair of tiny_random; tests may modify it."""
    from toolsense.models import ModelConfig, load_model_and_tokenizer

    return load_model_and_tokenizer(ModelConfig("tiny_random", dtype="float32"))


@pytest.fixture(scope="session")
def smollm2_dir() -> str:
    """The embedded SmolLM2-135M-Instruct, converted once to safetensors (~20 s first time)."""
    from toolsense.models import ModelConfig, resolve_model_dir

    return resolve_model_dir(ModelConfig("smollm2_135m"))

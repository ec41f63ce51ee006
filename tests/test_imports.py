"""Reading a config loads no model library: every config module of ``toolsense/`` (``config*.py``,
``settings*.py``) imports without torch or transformers, checked in a fresh interpreter, and the
packages that offer their names lazily (``utils/lazy.py``) still offer each of them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "toolsense"
HEAVY = ("torch", "transformers")

# Runs in a fresh interpreter: imports each module in turn and, at the first import of a HEAVY
# library, records which module was being imported and the chain of toolsense files that led there.
PROBE = r"""
import builtins, importlib, json, sys, traceback
heavy, modules = json.loads(sys.argv[1]), json.loads(sys.argv[2])
found, current, real_import = {}, [None], builtins.__import__

def watching(name, *args, **kwargs):
    top = name.split(".")[0]
    if top in heavy and top not in found and top not in sys.modules:
        chain = [f"{f.filename.rsplit('toolsense', 1)[-1].lstrip('/')}:{f.lineno}"
                 for f in traceback.extract_stack()[:-1] if "/toolsense/" in f.filename]
        found[top] = {"config": current[0], "chain": chain}
    return real_import(name, *args, **kwargs)

builtins.__import__ = watching
for module in modules:
    current[0] = module
    importlib.import_module(module)
print(json.dumps({"found": found, "loaded": [h for h in heavy if h in sys.modules]}))
"""


def config_modules(root: Path = PACKAGE) -> list[str]:
    """Every config module of the package, as a dotted name."""
    paths = [p for pattern in ("config*.py", "settings*.py") for p in root.rglob(pattern)]
    return sorted("toolsense." + p.relative_to(root).with_suffix("").as_posix().replace("/", ".") for p in paths)


def test_the_config_modules_are_found():
    found = config_modules()
    assert {"toolsense.decoding.config", "toolsense.evaluation.config", "toolsense.baselines.config",
            "toolsense.training.config", "toolsense.models.config", "toolsense.audit.config"} <= set(found)


def test_importing_every_config_module_loads_no_torch_or_transformers():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    run = subprocess.run([sys.executable, "-c", PROBE, json.dumps(HEAVY), json.dumps(config_modules())], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    why = [f"importing {v['config']} imports {lib}: " + " > ".join(v["chain"]) for lib, v in out["found"].items()]
    assert not out["loaded"], "config modules must import no model library (import it inside the function " \
        "that needs it, or move the section beside torch-free code):\n" + "\n".join(why)


@pytest.mark.parametrize("package", ["toolsense.models", "toolsense.index", "toolsense.training", "toolsense.audit"])
def test_lazy_packages_offer_every_name_they_list(package):
    """Each name in a lazy package's ``__all__`` resolves and is listed by ``dir``; an unknown name is an
    AttributeError naming the package (so ``from package import submodule`` still imports it)."""
    import importlib

    mod = importlib.import_module(package)
    for name in mod.__all__:
        assert getattr(mod, name) is not None and name in dir(mod), (package, name)
    with pytest.raises(AttributeError, match=package):
        getattr(mod, "no_such_name")


LIGHT_JOBS = ["train", "evaluate", "compare", "generate", "reproduce", "audit"]
"""Job modules whose ``--help`` and config check load no model library (issue 48: train.py's took 21 s when
jobs/train.py imported transformers and peft); annotate's config still sits beside its probe code."""


def test_job_modules_import_no_model_library():
    """``import toolsense.jobs.<job>`` (what ``toolsense-<job> --help`` runs before Hydra prints) imports only
    the schema: the trainer, the evaluator and the scorers load inside the job, once the config is checked."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    heavy = [*HEAVY, "peft", "trl"]
    for job in LIGHT_JOBS:  # one interpreter each: a job must not pass because another loaded the library first
        run = subprocess.run([sys.executable, "-c", PROBE, json.dumps(heavy), json.dumps([f"toolsense.jobs.{job}"])],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
        out = json.loads(run.stdout.strip().splitlines()[-1])
        assert not out["loaded"], f"toolsense.jobs.{job} imports " + "; ".join(
            f"{lib}: " + " > ".join(v["chain"]) for lib, v in out["found"].items())

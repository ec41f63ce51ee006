"""tests/slurm/start_cluster.sh: a second call on a running cluster changes nothing, and where it
cannot start a cluster it says why (here: not root), on stderr and in the status file the Slurm
tests quote when they skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from tests.slurm.conftest import START


def _pid(name: str) -> str:
    return subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout.strip()


def test_second_start_is_a_no_op(slurm_cluster):
    before = (_pid("slurmctld"), _pid("slurmd"), Path("/etc/slurm/slurm.conf").stat().st_mtime)
    t0 = time.time()
    out = subprocess.run(["bash", str(START)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.startswith("Slurm test cluster already up: node "), out.stdout + out.stderr
    assert (_pid("slurmctld"), _pid("slurmd"), Path("/etc/slurm/slurm.conf").stat().st_mtime) == before
    assert time.time() - t0 < 10


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("runuser") is None, reason="needs root to run the script as another user")
def test_not_root_says_why():
    status = Path(tempfile.mkdtemp(prefix="toolsense-slurm-test-", dir="/tmp")) / "status"  # reachable by nobody
    status.parent.chmod(0o777)
    tools = status.parent / "bin"  # a PATH without Slurm, so the script cannot find a running cluster
    tools.mkdir()
    for tool in ("id", "hostname", "mkdir", "tee", "dirname", "cat", "tail", "head"):
        (tools / tool).symlink_to(shutil.which(tool))
    tools.chmod(0o755)
    try:
        with open(START) as script:
            out = subprocess.run(["runuser", "-u", "nobody", "--", "env", f"PATH={tools}", f"TOOLSENSE_SLURM_STATUS={status}",
                                  "/bin/bash", "-s"], stdin=script, capture_output=True, text=True, timeout=60)
        uid = subprocess.run(["id", "-u", "nobody"], capture_output=True, text=True).stdout.strip()
        assert out.returncode == 1, out.stdout + out.stderr
        assert f"Slurm test cluster not started: not root (uid {uid}); run: sudo " in out.stderr
        assert status.read_text().startswith(f"Slurm test cluster not started: not root (uid {uid})")
    finally:
        shutil.rmtree(status.parent)

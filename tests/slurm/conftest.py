"""The single-node Slurm cluster of tests/slurm/start_cluster.sh: tests that need it skip, with
the reason that script recorded, where it is not up (not root, no apt, a daemon failed)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

STATUS = Path(os.environ.get("TOOLSENSE_SLURM_STATUS", "/tmp/toolsense-slurm/status"))
START = Path(__file__).parent / "start_cluster.sh"


def cluster_down_reason() -> str | None:
    """None when sinfo answers with an idle/mixed/allocated node, else why not."""
    if shutil.which("sinfo") is None:
        why = "sinfo not found"
    else:
        out = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, timeout=30)
        states = out.stdout.split()
        if out.returncode == 0 and any(s.startswith(("idle", "mix", "alloc", "completing")) for s in states):
            return None
        why = f"sinfo: {(out.stderr or out.stdout).strip() or 'no usable node'}"
    recorded = STATUS.read_text().strip() if STATUS.exists() else ""
    if not recorded.startswith("Slurm test cluster not started"):  # no failure on record: say how to start one
        recorded = f"start one with: sudo {START}"
    return f"no Slurm test cluster ({why}); {recorded.splitlines()[0]}"


@pytest.fixture(scope="session")
def slurm_cluster() -> None:
    reason = cluster_down_reason()
    if reason:
        pytest.skip(reason)


def wait_for_jobs(job_ids: list[str], timeout: float = 900) -> None:
    """Block until none of ``job_ids`` is pending or running (squeue forgets finished jobs)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = subprocess.run(["squeue", "-h", "-o", "%i", "-j", ",".join(job_ids)], capture_output=True, text=True)
        if not out.stdout.split():
            return
        time.sleep(2)
    subprocess.run(["scancel", *job_ids])
    raise TimeoutError(f"Slurm jobs {job_ids} still queued or running after {timeout:.0f} s (cancelled)")

"""Build the wheelhouse ``benchmarks/gpu_check.sh`` installs from on a GPU machine without network
(``make gpu-wheels``; git-ignored, carried beside the working tree).

    python benchmarks/gpu_wheels.py --out gpu-wheels

It holds what benchmarks/gpu_check.py imports that a bare GPU image lacks — one with the
:data:`IMAGE` packages and their dependencies (tests/test_gpu_check.py runs the smoke check with
nothing else installed but this wheelhouse's packages) — at the versions this checkout's venv tests
with, for ``--python`` (the image's: 3.12) on manylinux x86_64, and a wheel of toolsense itself. Pure-Python sdists (antlr4-python3-runtime,
deepspeed) are built into wheels here (deepspeed without build isolation, against the venv's torch:
its ops compile just in time on the GPU machine, and gpu_check.py uses none). ``--extra NAME==VER``
adds a package an image lacks beyond these. Ends with the wheelhouse's files and size, and refuses (exit 1)
when it and the working tree pass the 64 MiB a device call carries (:func:`carried_bytes`; measured
2026-12: 16 wheels, 7.8 MiB, beside a 28.8 MiB tree).
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IMAGE = ["torch", "transformers", "tokenizers", "peft", "accelerate", "numpy", "tqdm", "sentence-transformers", "scipy", "pandas",
         "pyarrow", "xxhash", "psutil", "msgpack", "ninja", "py-cpuinfo", "nvidia-ml-py", "einops"]
"""What the H200 image has (its package list), with their dependencies: left out of the wheelhouse."""
BINARY = ["unidecode", "hydra-core", "omegaconf", "trl", "bm25s", "datasets", "dill", "multiprocess", "hjson",
          "pydantic", "pydantic-core", "annotated-types", "typing-inspection", "submitit", "cloudpickle"]
"""Published as wheels: downloaded for the image's Python and platform."""
SOURCE = ["antlr4-python3-runtime", "deepspeed"]
"""Published as sdists only (at these versions): built into wheels here."""
CARRY_LIMIT = 64 * 2**20
"""What one device call carries: the working tree that travels plus the carried wheelhouse."""


def carried_bytes(root: Path, wheels: Path | None = None) -> int:
    """Bytes a device call sends from the checkout ``root``: its tracked files and its untracked files git does not
    ignore (what travels), plus the wheels of ``wheels`` (carried beside it)."""
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            check=True, capture_output=True).stdout.decode().split("\0")
    tree = sum((root / f).stat().st_size for f in set(listed) if f and (root / f).is_file())
    return tree + (sum(w.stat().st_size for w in wheels.glob("*.whl")) if wheels else 0)


PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"]


def pinned(names: list[str]) -> list[str]:
    """``name==version`` at the version installed here (what the tests ran with)."""
    return [f"{n}=={md.version(n)}" for n in names]


def pip(*args: str) -> None:
    cmd = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "gpu-wheels"))
    ap.add_argument("--python", default="3.12", help="the GPU image's Python version")
    ap.add_argument("--extra", nargs="*", default=[], help="more name==version wheels the image lacks")
    args = ap.parse_args()
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    target = ["--only-binary=:all:", "--python-version", args.python, "--implementation", "cp",
              *[x for p in PLATFORMS for x in ("--platform", p)]]
    pip("download", "--no-deps", *target, "-d", str(out), *pinned(BINARY), *args.extra)
    pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(out), *pinned(SOURCE))
    fresh = not (ROOT / "build").exists()
    pip("wheel", "--no-deps", "--no-build-isolation", "-w", str(out), str(ROOT))
    if fresh:  # setuptools' in-tree build folder, ours alone
        shutil.rmtree(ROOT / "build", ignore_errors=True)
    files = sorted(out.glob("*.whl"))
    names = [f.name.split("-")[0].lower().replace("_", "-") for f in files]
    if len(set(names)) != len(names):
        raise SystemExit(f"{out}: two versions of one package ({sorted(n for n in names if names.count(n) > 1)}): pip would refuse both")
    size = sum(f.stat().st_size for f in files)
    print("\n".join(f"{f.stat().st_size / 2**20:7.2f} MiB  {f.name}" for f in files))
    total = carried_bytes(ROOT, out)
    print(f"{len(files)} wheels, {size / 2**20:.1f} MiB in {out}; with the working tree {total / 2**20:.1f} MiB carried")
    if total >= CARRY_LIMIT:
        raise SystemExit(f"{total / 2**20:.1f} MiB would travel (working tree + {out}): over the {CARRY_LIMIT / 2**20:.0f} MiB "
                         "a device call carries; leave the largest wheels to the image or shrink the tree")


if __name__ == "__main__":
    main()

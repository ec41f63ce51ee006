#!/usr/bin/env bash
# The device check on a bare GPU machine without network (docs/guides/gpu.md). From the repo root:
#   benchmarks/gpu_check.sh --out gpu_check.json        # on one H200: <= 8 minutes
#   benchmarks/gpu_check.sh --smoke                     # tiny shapes on a CPU (tests/test_gpu_check.py)
# First installs, from the wheelhouse `make gpu-wheels` built ($GPU_WHEELS, default gpu-wheels/; carried beside
# the working tree), every package of it this Python lacks: --no-index (no network), --no-deps (the wheelhouse is the
# closure the image lacks), into $GPU_SITE (default /tmp/gpu-site, put first on PYTHONPATH: the image's own
# site-packages are left alone). Then runs gpu_check.py with every argument given here, which first loads its
# imports and names any that fails. $PYTHON: the interpreter (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
WHEELS="${GPU_WHEELS:-gpu-wheels}"
SITE="${GPU_SITE:-/tmp/gpu-site}"
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

missing_wheels() {  # the wheels of $WHEELS whose distribution this Python does not have
  "$PYTHON" - "$WHEELS" <<'PY'
import importlib.metadata as md, pathlib, re, sys
for whl in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    name = re.sub(r"[-_.]+", "-", whl.name.split("-")[0]).lower()
    try:
        md.version(name)
    except md.PackageNotFoundError:
        print(whl)
PY
}

if [ -d "$WHEELS" ]; then
  mapfile -t todo < <(missing_wheels)
  if [ "${#todo[@]}" -gt 0 ]; then
    echo "gpu_check.sh: installing ${#todo[@]} wheels from $WHEELS into $SITE (no network)"
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${todo[@]}"
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  else
    echo "gpu_check.sh: every package of $WHEELS is installed already"
  fi
else
  echo "gpu_check.sh: no $WHEELS/ here (make gpu-wheels builds it); using what this Python has"
fi

export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" benchmarks/gpu_check.py "$@"  # its first act: load its imports, or name the one missing (exit 2)

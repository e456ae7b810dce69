#!/usr/bin/env bash
# Makes the Python environment of bench-suite/scripts/maskbench_harness.py: transformers,
# llguidance 1.9.1, xgrammar 0.2.9 (with the torch it imports) and grammask from ./python.
#
#   bash bench-suite/python/setup-venv.sh [VENV]     (default: ~/.cache/grammask-bench/venv)
#
# torch: PyPI's Linux wheel is a CUDA build, and `pip install torch --no-deps` alone does
# not import (libtorch_cuda.so needs the CUDA runtime libraries). xgrammar imports torch but
# on the CPU only allocates and fills int32 tensors, so torch goes in without triton and
# cuda-bindings (GPU kernel compilers, never loaded here); its other requirements, the
# nvidia-*/cuda-toolkit runtime wheels included, are installed from its own metadata.
# About 4.6 GB in all. SKIP_GRAMMASK=1 leaves grammask out (for a run of the peers alone).
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
venv=${1:-$HOME/.cache/grammask-bench/venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
pip() { "$py" -m pip "$@"; }
pip install -q -U pip
pip install -q transformers numpy matplotlib llguidance==1.9.1
pip install -q --no-deps xgrammar==0.2.9 torch==2.15.0
# The requirements of xgrammar and torch, less torch, triton and cuda-bindings.
"$py" - >"$venv/peer-requirements.txt" <<'EOF'
from importlib.metadata import requires
from packaging.requirements import Requirement
skip = {"torch", "triton", "cuda-bindings", "transformers", "numpy"}
for dist in ("xgrammar", "torch"):
    for line in requires(dist) or []:
        req = Requirement(line)
        if req.name.lower() in skip:
            continue
        if req.marker and not req.marker.evaluate({"extra": ""}):
            continue
        req.marker = None
        print(req)
EOF
pip install -q -r "$venv/peer-requirements.txt"
"$py" -c "import torch, xgrammar, llguidance, transformers; print('peers import: ok, torch', torch.__version__)"
if [ "${SKIP_GRAMMASK:-0}" != 1 ]; then
    pip install -q "$repo/python"
    "$py" -c "import grammask; print('grammask import: ok')"
fi
echo "ready: $py $repo/bench-suite/scripts/maskbench_harness.py --help"

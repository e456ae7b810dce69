#!/usr/bin/env bash
# Makes (or reuses) the Python environment of python/tests: a venv with pinned numpy,
# pytest, pydantic, jsonschema, maturin, and torch + transformers (+ accelerate and gguf,
# which transformers needs to load a GGUF model) for the transformers integration test.
#
#   scripts/python-env.sh            # prints the venv's python as the last line of stdout
#   PY="$(scripts/python-env.sh | tail -n 1)"
#
# The venv is "${GRAMMASK_VENV:-$HOME/.cache/grammask-ci/venv}", made with
# "${GRAMMASK_PYTHON:-python3}". It is kept between runs: when it already holds exactly
# the pins below (a stamp file records them), nothing is downloaded and this takes well
# under a second. Progress goes to stderr.
#
# torch: PyPI's only Linux x86_64 wheel of torch is the CUDA build, and it does not import
# without its nvidia-* libraries (libtorch_cuda.so links libcudart, cuBLAS, cuDNN, NCCL,
# ...; `pip install --no-deps torch` fails at `import torch` with "libcudart.so.13: cannot
# open shared object file"). So the whole wheel set is installed as pip resolves it: about
# 3 GB downloaded, 5.3 GB on disk, 1.5 to 2 minutes here on a first run; it runs on the CPU.
# The index answers without cache headers, so pip's own cache does not keep these wheels:
# the venv is the cache.
#
# Versions: torch 2.14.0 and transformers 5.19.0 also satisfy vLLM 0.33's pins
# (torch==2.14.0, transformers>=5.16.1,<5.21), so vLLM can go into the same venv.
set -euo pipefail

venv="${GRAMMASK_VENV:-$HOME/.cache/grammask-ci/venv}"
base_python="${GRAMMASK_PYTHON:-python3}"

# One requirement a line; all pinned. The stamp is this text plus the base interpreter's
# version, so editing a pin reinstalls.
requirements="$(cat <<'EOF'
numpy==2.4.6
pytest==9.2.0
pydantic==2.14.4
jsonschema==4.26.0
maturin==1.16.0
torch==2.14.0
transformers==5.19.0
tokenizers==0.23.3
huggingface-hub==2.4.0
safetensors==0.8.0
accelerate==1.15.0
gguf==0.19.0
EOF
)"
# Imported after installing, to check the venv works (torch's CUDA libraries included).
check_imports="numpy, pytest, pydantic, jsonschema, torch, transformers, accelerate, gguf"

log() { echo "python-env: $*" >&2; }

command -v "$base_python" >/dev/null || { log "$base_python not found"; exit 1; }
base_version="$("$base_python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
stamp_text="$(printf 'python %s\n%s\n' "$base_version" "$requirements")"
stamp="$venv/.grammask-env-stamp"
py="$venv/bin/python"

up_to_date() {
    [[ -f "$stamp" && -x "$py" ]] && [[ "$(cat "$stamp")" == "$stamp_text" ]] \
        && "$py" -c 'import sys' >/dev/null 2>&1
}

if up_to_date; then
    log "up to date: $venv"
    echo "$py"
    exit 0
fi

mkdir -p "$(dirname "$venv")"
# One installer at a time per venv (two CI runs, or a developer and CI); whoever waited
# finds the venv made.
exec 9>"$venv.lock"
if command -v flock >/dev/null; then
    flock 9
    if up_to_date; then
        log "up to date: $venv"
        echo "$py"
        exit 0
    fi
fi
rm -f "$stamp"

# A venv of another interpreter version (or a broken one) is made anew.
if [[ -e "$venv" ]]; then
    have="$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null || true)"
    if [[ "$have" != "$base_version" ]]; then
        log "replacing $venv (its python is '${have:-broken}', want $base_version)"
        rm -rf "$venv"
    fi
fi
if [[ ! -x "$py" ]]; then
    log "creating $venv with $base_python ($base_version)"
    "$base_python" -m venv "$venv"
fi

req_file="$venv/grammask-requirements.txt"
printf '%s\n' "$requirements" >"$req_file"
pip_flags=(--disable-pip-version-check --no-input --progress-bar off --retries 5 --timeout 120)
start=$SECONDS
log "installing the pins (a first run downloads about 3 GB: torch and its CUDA libraries)"
"$py" -m pip install "${pip_flags[@]}" -r "$req_file" >&2
log "installed in $((SECONDS - start)) s; checking imports"
"$py" -c "import $check_imports; print('python-env: torch', torch.__version__, '/ transformers', transformers.__version__)" >&2
printf '%s' "$stamp_text" >"$stamp"
log "ready: $venv"
echo "$py"

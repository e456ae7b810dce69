#!/usr/bin/env bash
# Makes (or reuses) the Python environment of python/tests: one venv with pinned numpy,
# pytest, pydantic, jsonschema, maturin; torch + transformers (+ accelerate and gguf, which
# transformers needs to load a GGUF model) for the transformers integration test; and
# vLLM and SGLang, so that test_vllm.py and test_sglang.py run against the real libraries.
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
# open shared object file"). So the whole wheel set is installed as pip resolves it; it
# runs on the CPU. The index answers without cache headers, so pip's own cache does not
# keep these wheels: the venv is the cache.
#
# vLLM and SGLang share the venv. vLLM 0.33 pins torch==2.14.0 and wants transformers
# >=5.16.1,<5.21, which the pins below satisfy; one of its dependencies (mistral_common)
# wants numpy<2.4 on Python <= 3.12, hence numpy 2.3.5. SGLang 0.5.23 pins torch 2.14.1 and
# a CUDA serving stack that does not install here, so it goes in with --no-deps (plus
# ipython, which its modules import): the modules grammask.sglang uses (its grammar
# backends, runtime context, token-filter ops) import and run on vLLM's dependency set.
# `pip check` must report nothing but SGLang's unmet requirements.
#
# Time and size: a first run downloads about 4.3 GB and leaves 9.7 GB on disk, in about
# 10 minutes here (the download is most of it; the checks after it take about 40 s).
# Editing a pin installs over the venv as it stands (the move to this set from the one
# without vLLM took about 7 minutes).
set -euo pipefail

venv="${GRAMMASK_VENV:-$HOME/.cache/grammask-ci/venv}"
base_python="${GRAMMASK_PYTHON:-python3}"

# What the tests need, one requirement a line; all pinned, installed with their
# dependencies.
requirements="$(cat <<'EOF'
numpy==2.3.5
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
vllm==0.33.0
ipython==9.18.1
EOF
)"
# Installed afterwards with --no-deps (see above).
requirements_no_deps="$(cat <<'EOF'
sglang==0.5.23
EOF
)"
# Every other package the requirements pull in (vLLM brings about 200), pinned to what pip
# resolved for them, as a constraints file: a first run installs the same set as the last
# one did, whatever was published since. To remake it after changing a requirement: empty
# it, run this with GRAMMASK_VENV set to a new directory, and put here that venv's
# `pip freeze` less the requirements above, plus its setuptools (which freeze leaves out).
constraints="$(cat <<'EOF'
agent-detector==2.0.0
aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiosignal==1.4.0
annotated-doc==0.0.7
annotated-types==0.8.0
anthropic==2.15.0
anyio==4.16.0
apache-tvm-ffi==0.1.11
astor==0.8.1
asttokens==3.0.2
attrs==26.1.0
blake3==1.0.11
cachetools==8.0.2
cbor2==6.3.0
certifi==2026.10.19.post1
cffi==2.1.1
charset-normalizer==3.5.3
click==8.5.1
cloudpickle==3.1.3
compressed-tensors==0.17.0
cryptography==50.0.2
cuda-bindings==13.4.4
cuda-core==1.2.2
cuda-pathfinder==1.9.1
cuda-python==13.4.4
cuda-tile==1.7.0
cuda-toolkit==13.0.3.0
depyf==0.20.0
detect-installer==0.2.1
dill==0.4.1
dnspython==2.9.2
docstring_parser==0.18.0
einops==0.8.2
email-validator==2.4.0
executing==2.3.0
fastapi==0.136.3
fastapi-cli==0.0.34
fastapi-cloud-cli==0.28.0
fastar==0.12.0
fastsafetensors==0.5.0
filelock==4.3.1
flashinfer-python==0.7.2.post1
frozenlist==1.8.0
fsspec==2026.9.0
googleapis-common-protos==1.76.0
grpcio==1.85.3
h11==0.16.0
hf-xet==1.8.0
httpcore==1.0.9
httpcore2==2.16.2
httptools==0.9.0
httpx==0.28.1
httpx2==2.16.2
humming-kernels==0.1.19
idna==3.20
ijson==3.6.0
iniconfig==2.3.1
instanttensor==0.2.2
interegular==0.3.3
ipython_pygments_lexers==1.1.1
jedi==0.20.1
Jinja2==3.1.6
jiter==0.19.0
jmespath==1.1.0
jsonschema-specifications==2025.9.1
lark==1.2.2
llguidance==1.7.6
llvmlite==0.47.0
lm-format-enforcer==0.11.3
loguru==0.7.3
markdown-it-py==4.3.0
MarkupSafe==3.0.4
matplotlib-inline==0.2.2
mcp==2.3.0
mcp-types==2.3.0
mdurl==0.1.2
mistral_common==1.13.1
ml_dtypes==0.7.0
model-hosting-container-standards==0.1.16
mpmath==1.3.0
msgspec==0.23.0
multidict==7.2.1
nccl-extensions==0.1.0
nccl4py==0.6.0
networkx==3.6.1
ninja==1.13.2
numba==0.65.0
nvidia-cublas==13.1.1.3
nvidia-cuda-cccl==13.3.5.0.6
nvidia-cuda-crt==13.5.37
nvidia-cuda-cupti==13.0.85
nvidia-cuda-nvcc==13.5.37
nvidia-cuda-nvrtc==13.0.88
nvidia-cuda-runtime==13.0.96
nvidia-cudnn-cu13==9.24.0.43
nvidia-cudnn-frontend==1.32.0
nvidia-cufft==12.0.0.61
nvidia-cufile==1.15.1.6
nvidia-curand==10.4.0.35
nvidia-cusolver==12.0.4.66
nvidia-cusparse==12.6.3.3
nvidia-cusparselt-cu13==0.8.1
nvidia-cutlass-dsl==4.8.0
nvidia-cutlass-dsl-libs-base==4.8.0
nvidia-cutlass-dsl-libs-core==4.8.0
nvidia-cutlass-dsl-libs-cu12==4.8.0
nvidia-cutlass-dsl-libs-cu13==4.8.0
nvidia-ml-py==13.615.71
nvidia-nccl-cu13==2.30.7
nvidia-nvjitlink==13.5.37
nvidia-nvshmem-cu13==3.4.5
nvidia-nvtx==13.0.85
nvidia-nvvm==13.5.37
nvtx==0.2.15
openai==3.57.0
opencv-python-headless==5.0.0.93
opentelemetry-api==1.45.2
opentelemetry-exporter-http-transport==0.66b2
opentelemetry-exporter-otlp==1.45.2
opentelemetry-exporter-otlp-common==0.66b2
opentelemetry-exporter-otlp-proto-common==1.45.2
opentelemetry-exporter-otlp-proto-grpc==1.45.2
opentelemetry-exporter-otlp-proto-http==1.45.2
opentelemetry-proto==1.45.2
opentelemetry-sdk==1.45.2
opentelemetry-semantic-conventions==0.66b2
opentelemetry-semantic-conventions-ai==0.5.1
orjson==3.13.0
oss-harmony==0.0.11
outlines_core==0.2.14
packaging==26.4
parso==0.8.7
partial-json-parser==0.2.1.1.post7
pexpect==4.9.0
pillow==13.0.0
pluggy==1.7.0
prometheus_client==0.26.0
prometheus-fastapi-instrumentator==8.1.0
prompt_toolkit==3.0.53
propcache==0.5.4
protobuf==7.36.2
psutil==7.2.2
ptyprocess==0.7.0
pure_eval==0.2.4
py-cpuinfo==9.0.0
pybase64==1.5.1
pycountry==26.2.16
pycparser==3.12
pydantic_core==2.50.5
pydantic-extra-types==2.11.1
pydantic-settings==2.16.3
Pygments==2.21.0
PyJWT==2.15.1
pynvvideocodec==2.0.4
python-dotenv==1.2.4
python-json-logger==4.2.0
python-multipart==0.0.34
PyYAML==6.0.4
pyzmq==27.3.0
quack-kernels==0.6.5
referencing==0.37.0
regex==2026.11.19
requests==2.34.2
rich==15.0.0
rich-toolkit==0.20.6
rignore==0.8.1
rpds-py==2026.9.1
sentencepiece==0.2.3
sentry-sdk==2.75.0
setproctitle==1.3.8
setuptools==84.2.1
shellingham==1.5.4
sniffio==1.3.1
sse-starlette==3.7.0
stack-data==0.6.3
starlette==1.10.0
supervisor==4.3.0
sympy==1.14.0
tabulate==0.10.0
tiktoken==0.14.0
tilelang==0.1.12
tokenspeed-mla==2.0.3
tokenspeed-triton==3.9.10.post20261028
torch_c_dlpack_ext==0.1.5
torchaudio==2.11.0
torchcodec==0.17.0
torchvision==0.29.0
tqdm==4.70.1
traitlets==5.16.1
triton==3.8.0
truststore==0.10.5
typer==0.29.2
typing_extensions==4.16.0
typing-inspection==0.4.5
urllib3==2.8.0
uvicorn==0.54.0
uvloop==0.23.0
watchfiles==1.3.0
wcwidth==0.9.4
websockets==17.4
xgrammar==0.2.8
yarl==1.25.1
z3-solver==4.15.4.0
EOF
)"
# Imported after installing, to check the venv works (torch's CUDA libraries included).
check_imports="numpy, pytest, pydantic, jsonschema, torch, transformers, accelerate, gguf, vllm, vllm.v1.structured_output.backend_types, sglang.srt.constrained.base_grammar_backend, sglang.srt.constrained.reasoner_grammar_backend, sglang.srt.runtime_context"

log() { echo "python-env: $*" >&2; }

command -v "$base_python" >/dev/null || { log "$base_python not found"; exit 1; }
base_version="$("$base_python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
stamp_text="$(printf 'python %s\n%s\n--no-deps\n%s\n--constraints\n%s\n' \
    "$base_version" "$requirements" "$requirements_no_deps" "$constraints")"
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
req_no_deps_file="$venv/grammask-requirements-no-deps.txt"
constraints_file="$venv/grammask-constraints.txt"
printf '%s\n' "$requirements" >"$req_file"
printf '%s\n' "$requirements_no_deps" >"$req_no_deps_file"
printf '%s\n' "$constraints" >"$constraints_file"
pip_flags=(--disable-pip-version-check --no-input --progress-bar off --retries 5 --timeout 120)
start=$SECONDS
log "installing the pins (a first run downloads about 4.3 GB: torch and its CUDA libraries, vLLM)"
"$py" -m pip install "${pip_flags[@]}" -r "$req_file" -c "$constraints_file" >&2
"$py" -m pip install "${pip_flags[@]}" --no-deps -r "$req_no_deps_file" >&2
log "installed in $((SECONDS - start)) s; checking versions, pip check and imports"
# Each pinned requirement is installed at its pin (pip could not have done otherwise, but
# a --no-deps package could in principle have replaced one).
"$py" - "$req_file" "$req_no_deps_file" <<'EOF' >&2
import sys
from importlib.metadata import version
bad = []
for path in sys.argv[1:]:
    for line in open(path):
        line = line.strip()
        if line and not line.startswith("#"):
            name, want = line.split("==")
            have = version(name)
            if have != want:
                bad.append(f"{name}: want {want}, have {have}")
if bad:
    sys.exit("python-env: pins not met: " + "; ".join(bad))
EOF
# SGLang's own requirements are knowingly unmet (--no-deps); anything else is an error.
check_out="$("$py" -m pip check 2>&1 || true)"
unexpected="$(grep -v -e '^sglang ' -e '^No broken requirements' <<<"$check_out" || true)"
if [[ -n "$unexpected" ]]; then
    log "pip check reports broken requirements:"
    echo "$unexpected" >&2
    exit 1
fi
"$py" -c "import $check_imports; print('python-env: torch', torch.__version__, '/ transformers', transformers.__version__, '/ vllm', vllm.__version__)" >&2
printf '%s' "$stamp_text" >"$stamp"
log "ready: $venv"
echo "$py"

#!/usr/bin/env bash
# Builds grammask inside llama.cpp: libllama, llama-server with grammask's sampler behind
# `--grammask` (or a request's "grammask": true), and the compare program.
#
#   integrations/llama.cpp/build.sh        # the compare program's absolute path is the
#                                          # last line of stdout; the server is beside it
#
# llama.cpp's source comes from the llama-cpp-python sdist on PyPI (it vendors llama.cpp),
# pinned below, and is patched with server.patch. cmake and ninja come from PyPI into a venv.
# Everything is kept in "${GRAMMASK_LLAMA_CPP_CACHE:-$HOME/.cache/grammask-ci/llama.cpp}",
# outside the clone: a second run rebuilds only what changed (seconds). grammask's static
# C library is built with cargo into "${CARGO_TARGET_DIR:-<repo>/target}". A first build
# takes about 10 minutes on 2 cores. Progress goes to stderr.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=0.3.36
CMAKE_VERSION=4.4.4
NINJA_VERSION=1.13.2

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cache="${GRAMMASK_LLAMA_CPP_CACHE:-$HOME/.cache/grammask-ci/llama.cpp}"
target_dir="${CARGO_TARGET_DIR:-$repo/target}"
jobs="${GRAMMASK_BUILD_JOBS:-$(nproc)}"
mkdir -p "$cache"
exec 3>&1 1>&2  # everything but the last line goes to stderr

echo "== grammask C library (cargo build -p grammask-ffi --release)"
(cd "$repo" && CARGO_TARGET_DIR="$target_dir" cargo build -q -p grammask-ffi --release)
ffi_lib="$target_dir/release/libgrammask_ffi.a"

echo "== cmake $CMAKE_VERSION and ninja $NINJA_VERSION (PyPI)"
tools="$cache/tools-cmake$CMAKE_VERSION-ninja$NINJA_VERSION"
if [ ! -x "$tools/bin/cmake" ] || [ ! -x "$tools/bin/ninja" ]; then
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/pip" install -q --disable-pip-version-check "cmake==$CMAKE_VERSION" "ninja==$NINJA_VERSION"
fi

echo "== llama.cpp from llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION, patched with server.patch"
# One source tree per version; a changed server.patch is applied in place (the previous one
# reversed first), so that only the files it touches are rebuilt.
src="$cache/src-$LLAMA_CPP_PYTHON_VERSION"
if [ ! -f "$src/.extracted" ]; then
    sdist="$cache/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz"
    if [ ! -f "$sdist" ]; then
        dl="$(mktemp -d "$cache/download.XXXXXX")"
        python3 -m pip download -q --disable-pip-version-check --no-deps --no-binary llama-cpp-python \
            -d "$dl" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
        mv "$dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz" "$sdist"
        rm -rf "$dl"
    fi
    rm -rf "$src" "$src.tmp"
    mkdir -p "$src.tmp"
    tar -xzf "$sdist" -C "$src.tmp" --strip-components=3 \
        "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    touch "$src.tmp/.extracted"
    mv "$src.tmp" "$src"
fi
if ! cmp -s "$here/server.patch" "$src/.grammask.patch"; then
    if [ -f "$src/.grammask.patch" ]; then
        (cd "$src" && patch -s -R -p1 < .grammask.patch)
        rm "$src/.grammask.patch"
    fi
    (cd "$src" && patch -s -p1 --no-backup-if-mismatch < "$here/server.patch")
    cp "$here/server.patch" "$src/.grammask.patch"
fi

echo "== cmake configure and build (llama-server, grammask-compare and its ASan build; $jobs jobs)"
# The sources of this directory and grammask.h are copied to a fixed place in the cache
# (only files whose contents changed), so that every clone reuses one build directory.
stage="$cache/integration"
mkdir -p "$stage/include"
for f in CMakeLists.txt grammask-sampler.h grammask-sampler.cpp compare.cpp; do
    cmp -s "$here/$f" "$stage/$f" || cp "$here/$f" "$stage/$f"
done
cmp -s "$repo/ffi/include/grammask.h" "$stage/include/grammask.h" || cp "$repo/ffi/include/grammask.h" "$stage/include/"
ffi_stage="$stage/libgrammask_ffi.a"
cmp -s "$ffi_lib" "$ffi_stage" || cp "$ffi_lib" "$ffi_stage"
# ggml is built for the machine (-march=native) but without AMX tiles: a virtual machine
# may list them among its CPU's features yet fault on their first instruction (ldtilecfg),
# which kills every model run. The build directory is named after that choice, so that a
# cache configured before it is not reused.
cpu_flags=""
if [ "$(uname -m)" = x86_64 ]; then
    cpu_flags="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
fi
build="$cache/build-$LLAMA_CPP_PYTHON_VERSION-no-amx"
export PATH="$tools/bin:$PATH"
if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$stage" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_C_FLAGS="$cpu_flags" -DCMAKE_CXX_FLAGS="$cpu_flags" \
        -DLLAMA_CPP_SOURCE="$src" -DGRAMMASK_FFI_LIB="$ffi_stage" \
        -DGRAMMASK_INCLUDE_DIR="$stage/include" >/dev/null
fi
cmake --build "$build" -j "$jobs" --target llama-server grammask-compare grammask-compare-asan

compare="$build/grammask-compare"
server="$build/bin/llama-server"
[ -x "$server" ] || server="$(find "$build" -name llama-server -type f -perm -u+x | head -n 1)"
[ -x "$compare" ] || compare="$(find "$build" -name grammask-compare -type f -perm -u+x | head -n 1)"
echo "llama-server: $server"
echo "$compare" >&3

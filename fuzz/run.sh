#!/usr/bin/env bash
# Builds the cargo-fuzz targets (fuzz/targets/) and runs each for SECONDS (default 10)
# from the checked-in corpus (fuzz/corpus/<target>/), one after the other, nice'd.
#
#   fuzz/run.sh [SECONDS] [TARGET...]        targets: grammar_parse json_schema matcher structural_tag vocab_load
#
# cargo-fuzz passes nightly-only flags to rustc (-Zsanitizer, -Cpasses=sancov-module, ...);
# only the stable toolchain is installed, so RUSTC_BOOTSTRAP=1 lets stable rustc accept
# them. The sanitizer is off by default: the grammask crates contain no `unsafe` code,
# so AddressSanitizer would find nothing a panic does not, at half the speed
# (GRAMMASK_FUZZ_SANITIZER=address turns it on). Builds keep debug assertions and
# overflow checks.
#
# Everything the runs write stays out of the clone, under $GRAMMASK_FUZZ_CACHE (default
# ~/.cache/grammask-ci): cargo-fuzz itself (installed there when missing), the build
# directory, and the corpus libFuzzer grows. That corpus starts empty at every run (so a
# short run, as in CI, costs the same every time), unless GRAMMASK_FUZZ_CORPUS names a
# directory whose <target>/ subdirectories are kept and read back by later runs (for
# long runs). Findings land in fuzz/targets/artifacts/<target>/; reproduce one with
#   RUSTC_BOOTSTRAP=1 cargo fuzz run --fuzz-dir fuzz/targets <target> <file>
# or add it to fuzz/corpus/<target>/ and run `cargo test -p grammask-fuzz --test corpus`.
set -euo pipefail
cd "$(dirname "$0")/.."

secs="${1:-10}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(grammar_parse json_schema matcher structural_tag vocab_load)
fi

cache="${GRAMMASK_FUZZ_CACHE:-$HOME/.cache/grammask-ci}"
export PATH="$cache/cargo/bin:$PATH"
export RUSTC_BOOTSTRAP=1
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
unset CARGO_TARGET_DIR
target_dir="${GRAMMASK_FUZZ_TARGET_DIR:-$cache/fuzz-target}"
sanitizer="${GRAMMASK_FUZZ_SANITIZER:-none}"
timeout="${GRAMMASK_FUZZ_TIMEOUT:-20}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz into $cache/cargo"
    cargo install cargo-fuzz --locked --root "$cache/cargo"
fi

flags=(--fuzz-dir fuzz/targets --sanitizer "$sanitizer" --debug-assertions --target-dir "$target_dir")
echo "== cargo fuzz build ($(cargo fuzz --version))"
nice -n 10 cargo fuzz build "${flags[@]}"

failed=()
for t in "${targets[@]}"; do
    if [ -n "${GRAMMASK_FUZZ_CORPUS:-}" ]; then
        work="$GRAMMASK_FUZZ_CORPUS/$t"
    else
        work="$cache/fuzz-corpus-run/$t"
        rm -rf "$work"
    fi
    mkdir -p "$work" "fuzz/targets/artifacts/$t"
    echo "== fuzz $t for ${secs}s"
    set +e
    nice -n 10 cargo fuzz run "${flags[@]}" "$t" "$work" "fuzz/corpus/$t" -- \
        -max_total_time="$secs" -timeout="$timeout" -rss_limit_mb=2048 \
        -print_final_stats=1 2>&1 | grep -v $'^#[0-9]*\t\\(NEW\\|REDUCE\\|pulse\\)'
    status=${PIPESTATUS[0]}
    set -e
    if [ "$status" -ne 0 ]; then
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -ne 0 ]; then
    echo "fuzzing found a failure in: ${failed[*]} (inputs in fuzz/targets/artifacts/)" >&2
    exit 1
fi
echo "== fuzzing: no finding"

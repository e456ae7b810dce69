#!/usr/bin/env bash
# Builds the C example against the static library and the generated header, runs it from
# the repository root, checks every document it prints (valid JSON, and accepted by
# `grammask match` against its grammar), then runs it once under valgrind's memcheck
# (zero errors, zero definitely-lost bytes).
#
# Environment: CARGO_TARGET_DIR (default: target), CC (default: cc),
# GRAMMASK_C_WALKS (walks per grammar, default 8), GRAMMASK_C_VALGRIND_WALKS (default 2).
set -euo pipefail
cd "$(dirname "$0")/../.."

target="${CARGO_TARGET_DIR:-target}"
walks="${GRAMMASK_C_WALKS:-8}"
vg_walks="${GRAMMASK_C_VALGRIND_WALKS:-2}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

echo "== build: grammask-ffi (static library) and the grammask CLI"
# Without the library's own allocator (jemalloc), so that valgrind sees every allocation
# and every leak of the Rust side too.
cargo build -p grammask-ffi --no-default-features
cargo build -p grammask
lib="$target/debug/libgrammask_ffi.a"
cli="$target/debug/grammask"

echo "== cc examples/c/main.c"
"${CC:-cc}" -std=c11 -Wall -Wextra -Werror -O1 -g -Iffi/include examples/c/main.c "$lib" \
    -lpthread -ldl -lm -o "$work/example"

echo "== run ($walks walks per grammar)"
start=$(date +%s)
"$work/example" "$walks" >"$work/out.txt" 2>"$work/err.txt" || {
    cat "$work/err.txt" >&2
    exit 1
}
echo "ran in $(($(date +%s) - start)) s; $(tail -n 1 "$work/err.txt")"

echo "== check the documents"
grep '^grammar: ' "$work/err.txt" | sed 's/^grammar: //' >"$work/grammars.txt"
python3 - "$work" <<'PY'
import json, os, sys
work = sys.argv[1]
out = open(os.path.join(work, "out.txt"), encoding="utf-8").read()
grammars = open(os.path.join(work, "grammars.txt")).read().splitlines()
assert out.endswith("\n---\n"), "the output must end with a --- line"
docs = out[: -len("\n---\n")].split("\n---\n")
assert len(docs) == len(grammars), (len(docs), len(grammars))
assert len(docs) > 0, "no walk reached EOS"
for i, doc in enumerate(docs):
    try:
        json.loads(doc)
    except ValueError as e:
        sys.exit(f"document {i} ({grammars[i]}) is not JSON: {e}\n{doc}")
    with open(os.path.join(work, f"doc{i}.txt"), "w", encoding="utf-8") as f:
        f.write(doc)
print(f"{len(docs)} documents parse as JSON")
PY
i=0
while read -r grammar; do
    if ! "$cli" match "$grammar" "$work/doc$i.txt" >/dev/null; then
        echo "document $i is not accepted by $grammar:" >&2
        cat "$work/doc$i.txt" >&2
        exit 1
    fi
    i=$((i + 1))
done <"$work/grammars.txt"
echo "$i documents accepted by grammask match"

echo "== valgrind memcheck ($vg_walks walks per grammar)"
start=$(date +%s)
# Leaks of kind "possibly lost" are not errors: Rust's runtime keeps the main thread's
# handle for the life of the process. Definitely lost bytes must be zero.
valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=1 \
    "$work/example" "$vg_walks" >/dev/null 2>"$work/valgrind.txt" || {
    cat "$work/valgrind.txt" >&2
    exit 1
}
grep -q 'ERROR SUMMARY: 0 errors' "$work/valgrind.txt"
if grep -q 'definitely lost: [1-9]' "$work/valgrind.txt"; then
    cat "$work/valgrind.txt" >&2
    exit 1
fi
echo "valgrind clean in $(($(date +%s) - start)) s: $(grep -o 'ERROR SUMMARY: [0-9]* errors' "$work/valgrind.txt")"

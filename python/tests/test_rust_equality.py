"""Masks from Python equal the Rust API's on the same steps: llama.cpp's json.gbnf and
MaskBench schemas on the Llama-3 tokenizer, every step of a walk (the Rust side is the
bench-suite example `mask_trace`, which writes each step's mask words)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grammask

REPO = Path(__file__).resolve().parents[2]
JSON_GBNF = REPO / "grammar-syntax/tests/data/llama.cpp-grammars/json.gbnf"
JSON_DOC = '{"name": "grammask", "tags": ["fast", "correct"], "stars": 12345, "ok": true, "nested": {"x": -1.5e3, "y": null}}'


def _skip(reason: str) -> None:
    print(f"\nSKIPPED (loudly): {reason}", file=sys.stderr)
    pytest.skip(reason)


def llama3_tokenizer() -> Path:
    root = os.environ.get("GRAMMASK_TOKENIZERS")
    path = Path(root) / "llama3" / "tokenizer.json" if root else None
    if path is None or not path.is_file():
        _skip("GRAMMASK_TOKENIZERS/llama3/tokenizer.json is missing (scripts/fetch-tokenizers.sh fetches it)")
    return path


_BINARY: list[Path] = []


def mask_trace() -> Path:
    """The example's binary as `cargo test --workspace` builds it (before these tests in
    `.ci/run`); built with `cargo build --workspace --example mask_trace` when missing or
    older than the Rust sources."""
    if not _BINARY:
        target = Path(os.environ.get("CARGO_TARGET_DIR") or REPO / "target")
        binary = target / "debug" / "examples" / "mask_trace"
        sources = [p for d in ("engine", "grammar-syntax", "tokenset", "bench-suite", "src")
                   for p in (REPO / d).rglob("*.rs")]
        newest = max(p.stat().st_mtime for p in sources)
        if not binary.is_file() or binary.stat().st_mtime < newest:
            build = ["cargo", "build", "-q", "--workspace", "--example", "mask_trace"]
            run = subprocess.run(build, cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL)
            assert run.returncode == 0, run.stderr
        _BINARY.append(binary)
    return _BINARY[0]


def rust_trace(grammar: Path, vocab: Path, document: str, tmp: Path) -> tuple[list[int], np.ndarray]:
    doc = tmp / "document.txt"
    doc.write_text(document)
    out = tmp / "masks.bin"
    cmd = [str(mask_trace()), str(grammar), str(vocab), str(doc), str(out)]
    run = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    tokens = json.loads(run.stdout.strip().splitlines()[-1])
    return tokens, np.fromfile(out, dtype="<u4")


def python_masks(compiled: grammask.CompiledGrammar, tokens: list[int]) -> np.ndarray:
    m = grammask.Matcher(compiled)
    rows = grammask.allocate_token_bitmask(len(tokens) + 1, compiled.vocab_size)
    for step in range(len(tokens) + 1):
        m.fill_next_token_bitmask(rows, step)
        if step < len(tokens):
            assert m.accept_token(tokens[step]), f"step {step}: token {tokens[step]} refused"
    return rows.view("<u4").reshape(-1)


def maskbench_cases() -> list[Path]:
    root = os.environ.get("GRAMMASK_MASKBENCH")
    if not root or not Path(root).is_dir():
        return []
    files = sorted(Path(root).glob("*.json"))
    return files[:: max(1, len(files) // 6)][:6]


def test_json_gbnf_masks_equal_rust(tmp_path: Path) -> None:
    vocab_path = llama3_tokenizer()
    tokens, expected = rust_trace(JSON_GBNF, vocab_path, JSON_DOC, tmp_path)
    vocab = grammask.Vocabulary.from_tokenizer_json(vocab_path)
    compiled = grammask.Compiler(vocab).compile_gbnf(JSON_GBNF.read_text())
    got = python_masks(compiled, tokens)
    assert len(tokens) > 20
    assert np.array_equal(got, expected)


def test_maskbench_masks_equal_rust(tmp_path: Path) -> None:
    vocab_path = llama3_tokenizer()
    cases = maskbench_cases()
    if not cases:
        _skip("GRAMMASK_MASKBENCH is not set (../shared/data/maskbench): the MaskBench cases are untested")
    vocab = grammask.Vocabulary.from_tokenizer_json(vocab_path)
    compiler = grammask.Compiler(vocab)
    checked = 0
    for case in cases:
        data = json.loads(case.read_text())
        valid = [t["data"] for t in data.get("tests", []) if t.get("valid")]
        if not valid:
            continue
        try:
            compiled = compiler.compile_json_schema(data["schema"])
        except grammask.GrammaskError:
            continue
        document = json.dumps(valid[0])
        try:
            tokens, expected = rust_trace(case, vocab_path, document, tmp_path)
        except AssertionError:
            continue  # an instance grammask refuses (formats, ...) is no equality case
        got = python_masks(compiled, tokens)
        assert np.array_equal(got, expected), case.name
        checked += 1
    assert checked >= 3, f"only {checked} MaskBench cases compiled and walked"

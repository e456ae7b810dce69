"""`Vocabulary.from_huggingface` on real tokenizers: a fast tokenizer gives the same
vocabulary as its tokenizer.json; a tokenizer seen only through its pieces (the path of
slow sentencepiece tokenizers: `get_vocab`, `▁`, `<0xNN>`) gives the same token bytes as
grammask's own sentencepiece loader."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import grammask


def tokenizer_json(name: str) -> Path:
    root = os.environ.get("GRAMMASK_TOKENIZERS")
    path = Path(root) / name / "tokenizer.json" if root else None
    if path is None or not path.is_file():
        reason = f"GRAMMASK_TOKENIZERS/{name}/tokenizer.json is missing (scripts/fetch-tokenizers.sh fetches it)"
        print(f"\nSKIPPED (loudly): {reason}", file=sys.stderr)
        pytest.skip(reason)
    return path


def fast_tokenizer(path: Path):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(path), eos_token="</s>" if "llama2" in str(path) else "<|eot_id|>")


@pytest.mark.parametrize("name", ["llama3", "llama2", "qwen3"])
def test_fast_tokenizer_equals_tokenizer_json(name: str) -> None:
    path = tokenizer_json(name)
    tok = fast_tokenizer(path)
    ours = grammask.Vocabulary.from_huggingface(tok, vocab_size=len(tok) + 100)
    ref = grammask.Vocabulary.from_tokenizer_json_text(path.read_bytes())
    assert ours.vocab_size == len(tok) + 100
    assert all(ours.token_bytes(i) == ref.token_bytes(i) for i in range(ref.vocab_size))
    assert set(ref.stop_token_ids) <= set(ours.stop_token_ids)
    if tok.eos_token_id is not None:
        assert tok.eos_token_id in ours.stop_token_ids
    chosen = grammask.Vocabulary.from_huggingface(tok, stop_token_ids=[5])
    assert chosen.stop_token_ids == [5]
    narrow = grammask.Vocabulary.from_huggingface(tok, vocab_size=1000)  # logits narrower than the tokenizer
    assert narrow.vocab_size == 1000 and len(narrow) <= 1000
    assert all(narrow.token_bytes(i) == ref.token_bytes(i) for i in range(1000))
    assert all(s < 1000 for s in narrow.stop_token_ids)


class PiecesOnly:
    """A real tokenizer seen only through what a slow (sentencepiece) tokenizer has."""

    def __init__(self, tok) -> None:
        self._tok = tok
        self.eos_token_id = tok.eos_token_id
        self.all_special_ids = tok.all_special_ids
        self.added_tokens_decoder = tok.added_tokens_decoder

    def get_vocab(self):
        return self._tok.get_vocab()


def test_sentencepiece_pieces_equal_loader() -> None:
    path = tokenizer_json("llama2")
    tok = fast_tokenizer(path)
    ours = grammask.Vocabulary.from_huggingface(PiecesOnly(tok))
    ref = grammask.Vocabulary.from_tokenizer_json_text(path.read_bytes())
    assert ours.vocab_size == ref.vocab_size == 32_000
    differ = [i for i in range(ref.vocab_size) if ours.token_bytes(i) != ref.token_bytes(i)]
    assert differ == [], differ[:10]
    assert ours.special_token_ids == ref.special_token_ids
    assert tok.eos_token_id in ours.stop_token_ids
    compiled = grammask.Compiler(ours).compile_regex("[a-z ]+")
    m = grammask.Matcher(compiled)
    byte_a = next(i for i in range(300) if ours.token_bytes(i) == b"a")  # <0x61>
    assert m.accept_token(byte_a)

"""The Llama-3 tokenizer of the Python tests (fetched by scripts/fetch-tokenizers.sh into
$GRAMMASK_TOKENIZERS/llama3/), and text to its token ids."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import grammask


def tokenizers_dir() -> Path:
    env = os.environ.get("GRAMMASK_TOKENIZERS")
    return Path(env) if env else Path.home() / ".cache" / "grammask" / "tokenizers"


LLAMA3 = tokenizers_dir() / "llama3" / "tokenizer.json"


def require_llama3() -> Path:
    if not LLAMA3.is_file():
        reason = (
            f"the Llama-3 tokenizer is missing ({LLAMA3}): run "
            "`bash scripts/fetch-tokenizers.sh` (GRAMMASK_TOKENIZERS names its directory)"
        )
        print(f"SKIP: {reason}", file=sys.stderr)
        pytest.skip(reason)
    return LLAMA3


class Encoder:
    """Text to Llama-3 token ids: the `tokenizers` package when installed, else a greedy
    longest match over the vocabulary's text tokens (any tokenization of the text is one
    the grammar must allow)."""

    def __init__(self, vocab: "grammask.Vocabulary", path: Path) -> None:
        self.vocab = vocab
        self.tokenizer = None
        try:
            import tokenizers

            self.tokenizer = tokenizers.Tokenizer.from_file(str(path))
        except ImportError:
            pass
        self.by_bytes: dict = {}
        skip = set(vocab.special_token_ids) | set(vocab.stop_token_ids)
        for i in range(vocab.vocab_size):
            b = vocab.token_bytes(i)
            if b and i not in skip:
                self.by_bytes.setdefault(bytes(b), i)
        self.longest = max(len(b) for b in self.by_bytes)

    def greedy(self, text: str) -> list:
        data, ids, at = text.encode(), [], 0
        while at < len(data):
            for n in range(min(self.longest, len(data) - at), 0, -1):
                tid = self.by_bytes.get(data[at : at + n])
                if tid is not None:
                    ids.append(tid)
                    at += n
                    break
            else:
                raise AssertionError(f"no token for byte {data[at]:#x}")
        return ids

    def __call__(self, text: str) -> list:
        ids = (
            self.tokenizer.encode(text, add_special_tokens=False).ids
            if self.tokenizer is not None
            else self.greedy(text)
        )
        assert b"".join(self.vocab.token_bytes(i) for i in ids) == text.encode()
        return ids

"""The tokens of a transformers tokenizer, for ``Vocabulary.from_huggingface``.

A fast tokenizer gives its ``tokenizer.json`` (read by grammask's loader, which knows
byte-level BPE, sentencepiece-style and byte-fallback models). A slow sentencepiece
tokenizer gives its pieces: ``▁`` stands for a space, ``<0xNN>`` for a byte-fallback byte,
and its special tokens are never matched as text.
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

_BYTE_PIECE = re.compile(r"^<0x([0-9A-Fa-f]{2})>$")

NORMAL, SPECIAL, BYTE = 1, 2, 3


def _eos_ids(tokenizer: Any) -> List[int]:
    ids = []
    eos = getattr(tokenizer, "eos_token_id", None)
    if isinstance(eos, int):
        ids.append(eos)
    elif isinstance(eos, (list, tuple)):
        ids.extend(int(i) for i in eos)
    return ids


def vocabulary_parts(tokenizer: Any) -> Tuple[str, Any, List[int]]:
    """``("json", tokenizer_json_text, eos_ids)`` for a fast tokenizer, else
    ``("tokens", [(id, bytes, kind)], eos_ids)``."""
    eos = _eos_ids(tokenizer)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and hasattr(backend, "to_str"):
        return "json", backend.to_str(), eos
    if not hasattr(tokenizer, "get_vocab"):
        raise TypeError(
            "Vocabulary.from_huggingface: expected a transformers tokenizer "
            f"(with backend_tokenizer or get_vocab), got {type(tokenizer).__name__}"
        )
    special = set(getattr(tokenizer, "all_special_ids", []) or [])
    added = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    for token_id, added_token in added.items():
        if getattr(added_token, "special", False):
            special.add(int(token_id))
    entries = []
    for piece, token_id in tokenizer.get_vocab().items():
        token_id = int(token_id)
        if token_id in special:
            entries.append((token_id, piece.encode("utf-8"), SPECIAL))
            continue
        byte = _BYTE_PIECE.match(piece)
        if byte:
            entries.append((token_id, bytes([int(byte.group(1), 16)]), BYTE))
            continue
        if token_id in added:
            entries.append((token_id, piece.encode("utf-8"), NORMAL))
            continue
        entries.append((token_id, piece.replace("\u2581", " ").encode("utf-8"), NORMAL))
    return "tokens", entries, eos


def tokenizer_vocabulary(tokenizer: Any, vocab_size: Optional[int] = None, stop_token_ids=None):
    """The vocabulary of a serving engine's transformers tokenizer, ``vocab_size`` wide
    (the model's logits), as a ``ValueError`` that says what was given when it cannot be
    read (the backends of ``grammask.vllm`` and ``grammask.sglang``)."""
    import grammask

    try:
        return grammask.Vocabulary.from_huggingface(
            tokenizer, vocab_size=vocab_size, stop_token_ids=stop_token_ids
        )
    except Exception as e:
        raise ValueError(
            "grammask needs a transformers tokenizer (PreTrainedTokenizerBase); it could "
            f"not read {type(tokenizer).__name__}: {e}"
        ) from e

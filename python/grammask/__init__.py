"""grammask: grammar-constrained decoding.

At every step of generation, a ``Matcher`` fills a bitmask of the tokens its grammar
allows next; ``apply_token_bitmask_inplace`` sets the others' logits to minus infinity.

    import grammask

    vocab = grammask.Vocabulary.from_tokenizer_json("tokenizer.json")
    compiled = grammask.Compiler(vocab).compile_json_schema({"type": "object"})
    matcher = grammask.Matcher(compiled)
    bitmask = grammask.allocate_token_bitmask(1, vocab.vocab_size)
    matcher.fill_next_token_bitmask(bitmask)
    grammask.apply_token_bitmask_inplace(logits, bitmask)
    matcher.accept_token(next_token)

Integrations: ``grammask.hf`` (transformers), ``grammask.vllm``, ``grammask.sglang``.
Importing ``grammask`` needs only numpy.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from ._errors import GrammarError, GrammaskError, LimitExceeded, SchemaUnsupported
from ._grammask import (
    CompiledGrammar,
    Compiler,
    FieldRecorder,
    Matcher,
    Vocabulary,
    __version__,
    fill_next_token_bitmasks,
)
from ._grammask import parse_tool_calls as _parse_tool_calls
from ._grammask import tools_system_prompt as _tools_system_prompt

__all__ = [
    "CompiledGrammar",
    "Compiler",
    "FieldRecorder",
    "GrammarError",
    "GrammaskError",
    "LimitExceeded",
    "Matcher",
    "SchemaUnsupported",
    "Vocabulary",
    "allocate_token_bitmask",
    "apply_token_bitmask_inplace",
    "bitmask_size",
    "fill_next_token_bitmasks",
    "parse_tool_calls",
    "tools_system_prompt",
    "__version__",
]


def _json_text(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value)


def tools_system_prompt(tools: Any, format: str = "hermes") -> str:
    """The system message that describes OpenAI-style ``tools`` (a list of
    ``{"type": "function", "function": {...}}``, or its JSON text) in the call format's own
    way (``"hermes"`` or ``"llama3"``), as ``Compiler.compile_tools`` expects the calls."""
    return _tools_system_prompt(_json_text(tools), format)


def parse_tool_calls(text: str, format: str = "hermes") -> list:
    """The calls a model wrote in ``text`` (format ``"hermes"`` or ``"llama3"``), in
    order: ``[{"name": ..., "arguments": {...}}]``; a call that does not parse is left out."""
    import json

    return [{"name": n, "arguments": json.loads(a)} for n, a in _parse_tool_calls(text, format)]


def bitmask_size(vocab_size: int) -> int:
    """Words (int32) per bitmask row: ``ceil(vocab_size / 32)``."""
    return (int(vocab_size) + 31) // 32


def allocate_token_bitmask(batch_size: int, vocab_size: int) -> np.ndarray:
    """A ``[batch_size, ceil(vocab_size / 32)]`` int32 numpy array, every token allowed
    (all bits set). ``torch.from_numpy`` shares its memory for torch users."""
    return np.full((int(batch_size), bitmask_size(vocab_size)), -1, dtype=np.int32)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch")


def apply_token_bitmask_inplace(
    logits: Any,
    bitmask: Any,
    vocab_size: Optional[int] = None,
    indices: Optional[Sequence[int]] = None,
) -> None:
    """Sets ``logits[i, t]`` to minus infinity for every token ``t`` whose bit is 0 in
    ``bitmask[i]``. ``logits``: a numpy array or torch tensor (any device; the bitmask is
    moved there), ``[batch, vocab]`` or ``[vocab]``; ``bitmask``: int32, ``[batch,
    ceil(vocab / 32)]`` or 1-D. Tokens past ``vocab_size`` (default: the bitmask's width)
    are forbidden too. ``indices``: only these rows (of both) are masked.
    """
    if _is_torch(logits):
        _apply_torch(logits, bitmask, vocab_size, indices)
        return
    if not isinstance(logits, np.ndarray):
        raise TypeError(
            f"apply_token_bitmask_inplace: logits must be a numpy array or torch tensor, got {type(logits).__name__}"
        )
    mask = bitmask.cpu().numpy() if _is_torch(bitmask) else np.asarray(bitmask)
    rows = logits if logits.ndim == 2 else logits.reshape(1, -1)
    mask = mask if mask.ndim == 2 else mask.reshape(1, -1)
    width = rows.shape[-1]
    allowed = _unpack_numpy(mask, width, vocab_size)
    if indices is None:
        if allowed.shape[0] != rows.shape[0]:
            raise ValueError(
                f"apply_token_bitmask_inplace: {rows.shape[0]} logits rows and {allowed.shape[0]} bitmask rows"
            )
        rows[~allowed] = -np.inf
    else:
        idx = np.asarray(indices, dtype=np.int64)
        sub = rows[idx]
        sub[~allowed[idx]] = -np.inf
        rows[idx] = sub


def _unpack_numpy(mask: np.ndarray, width: int, vocab_size: Optional[int]) -> np.ndarray:
    """Allowed flags ``[batch, width]`` from int32 words (bit ``i % 32`` of word ``i / 32``)."""
    words = np.ascontiguousarray(mask, dtype=np.int32).astype("<i4", copy=False)
    bits = np.unpackbits(words.view(np.uint8), axis=-1, bitorder="little").astype(bool)
    limit = min(width, bits.shape[-1], vocab_size if vocab_size is not None else width)
    allowed = np.zeros((bits.shape[0], width), dtype=bool)
    allowed[:, :limit] = bits[:, :limit]
    return allowed


def _apply_torch(logits: Any, bitmask: Any, vocab_size: Optional[int], indices: Optional[Sequence[int]]) -> None:
    import torch

    mask = torch.from_numpy(np.asarray(bitmask)) if not _is_torch(bitmask) else bitmask
    mask = mask.to(device=logits.device, non_blocking=True)
    rows = logits if logits.dim() == 2 else logits.view(1, -1)
    mask = mask if mask.dim() == 2 else mask.view(1, -1)
    width = rows.shape[-1]
    shifts = torch.arange(32, device=mask.device, dtype=torch.int32)
    bits = ((mask.to(torch.int32).unsqueeze(-1) >> shifts) & 1).reshape(mask.shape[0], -1).bool()
    limit = min(width, bits.shape[-1], vocab_size if vocab_size is not None else width)
    allowed = torch.zeros((bits.shape[0], width), dtype=torch.bool, device=mask.device)
    allowed[:, :limit] = bits[:, :limit]
    if indices is None:
        rows.masked_fill_(~allowed, float("-inf"))
    else:
        idx = torch.as_tensor(list(indices), device=rows.device, dtype=torch.long)
        rows[idx] = rows[idx].masked_fill(~allowed[idx], float("-inf"))

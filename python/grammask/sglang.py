"""grammask as a grammar backend of SGLang.

SGLang's scheduler compiles each request's constraint through a backend
(``BaseGrammarBackend``: ``dispatch_json``, ``dispatch_regex``, ``dispatch_ebnf``,
``dispatch_structural_tag``, run on its thread pool and cached by key) and steps the
result per request (``BaseGrammarObject``: ``accept_token``, ``rollback``,
``fill_vocab_mask``, ``is_terminated``, ``copy`` ...). :class:`GrammaskGrammarBackend`
and :class:`GrammaskGrammarObject` are those two over grammask. When ``sglang`` imports
they subclass SGLang's own classes; otherwise plain stand-ins with the same methods, so
this module imports without SGLang.

SGLang takes custom backends by name (``register_grammar_backend``). :func:`register`
adds ``"grammask"`` to that registry and to the ``--grammar-backend`` choices::

    sglang serve --model-path meta-llama/Llama-3.2-1B-Instruct --grammar-backend grammask

SGLang starts its scheduler in a new (spawned) process, so the registration must run
there too: the package declares the ``sglang.srt.plugins`` entry point ``grammask =
grammask.sglang:plugin`` (SGLang loads those in every process, before it parses its
arguments), which calls :func:`register`; registering a name changes nothing until
``--grammar-backend grammask`` selects it. In a process that builds SGLang objects itself
(tests, a custom scheduler), call ``grammask.sglang.register()`` first.

Keys: ``("json", schema)`` (``"$$ANY$$"``: any JSON value), ``("regex", pattern)``,
``("ebnf", text)`` (GBNF or XGrammar's EBNF, read as EBNF), ``("structural_tag", json)``
(XGrammar's structural-tag JSON or the legacy ``{"structures", "triggers"}``). Errors
come back as SGLang's
``InvalidGrammarObject`` with the message, which SGLang reports to the client.
``--constrained-json-disable-any-whitespace`` selects compact JSON; otherwise JSON
follows grammask's flexible whitespace. With ``--reasoning-parser``, the backend is
wrapped in SGLang's reasoning wrapper as SGLang wraps its own (the grammar applies once
the reasoning ends; ``--enable-strict-thinking`` uses :meth:`set_token_filter`).
``GRAMMASK_CACHE_MB`` sets the size of the compiled-grammar cache.
"""

from __future__ import annotations

import importlib.util
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

import grammask
from grammask._huggingface import tokenizer_vocabulary

__all__ = [
    "GrammaskGrammarBackend",
    "GrammaskGrammarObject",
    "HAVE_SGLANG",
    "BACKEND_NAME",
    "register",
    "create_backend",
    "plugin",
]

BACKEND_NAME = "grammask"

# Steps each matcher keeps for rollback (speculative trees, retokenization).
MAX_ROLLBACK_TOKENS = 200

try:
    from sglang.srt.constrained.base_grammar_backend import (
        BaseGrammarBackend as _BackendBase,
        BaseGrammarObject as _ObjectBase,
        GrammarStats,
        InvalidGrammarObject,
    )

    HAVE_SGLANG = True
except ImportError:
    if importlib.util.find_spec("sglang") is not None:
        raise  # SGLang is installed but does not import: say why, do not hide it
    HAVE_SGLANG = False
    GrammarStats = None  # type: ignore[assignment,misc]

    class _ObjectBase:  # type: ignore[no-redef]
        """Stand-in for SGLang's ``BaseGrammarObject`` when SGLang is absent."""

        def __init__(self) -> None:
            self._finished = False
            self.grammar_stats = None
            self.current_token = None

        def maybe_init_reasoning(self, reasoning: bool) -> None:
            pass

        @property
        def finished(self) -> bool:
            return self._finished

        @finished.setter
        def finished(self, finished: bool) -> None:
            self._finished = finished

    class InvalidGrammarObject(_ObjectBase):  # type: ignore[no-redef]
        """A constraint that failed to compile, with the reason (stand-in)."""

        def __init__(self, error_message: str = "Unknown grammar error") -> None:
            super().__init__()
            self.error_message = error_message

        def copy(self) -> "InvalidGrammarObject":
            return self

    class _BackendBase:  # type: ignore[no-redef]
        """Stand-in for SGLang's ``BaseGrammarBackend`` when SGLang is absent: the
        compile-by-key cache and the dispatch of keys to ``dispatch_*``."""

        def __init__(self) -> None:
            self.executor = ThreadPoolExecutor()
            self.cache: Dict[Tuple[str, str], Any] = {}

        def dispatch_fallback(self, key_type: str, key_string: str):
            raise ValueError(f"Invalid key_type: {key_type}={key_string}")

        def _init_value_dispatch(self, key: Tuple[str, str], require_reasoning: bool):
            key_type, key_string = key
            if key_type == "json":
                return self.dispatch_json(key_string)
            if key_type == "regex":
                return self.dispatch_regex(key_string)
            if key_type in ("ebnf", "full_assistant_ebnf"):
                return self.dispatch_ebnf(key_string)
            if key_type == "structural_tag":
                return self.dispatch_structural_tag(key_string)
            return self.dispatch_fallback(key_type, key_string)

        def get_cached_or_future_value(self, key: Tuple[str, str], require_reasoning: bool):
            value = self.cache.get(key)
            if value:
                copied = value.copy()
                copied.maybe_init_reasoning(require_reasoning)
                return copied, True
            return self.executor.submit(self._init_value_dispatch, key, require_reasoning), False

        def set_cache(self, key: Tuple[str, str], value: Any) -> None:
            self.cache[key] = value

        def reset(self) -> None:
            self.cache.clear()


def _row_words(mask: Any, index: int) -> np.ndarray:
    """Row `index` of a CPU bitmask (numpy array or torch tensor) as uint32 words
    sharing its memory."""
    row = mask[index]
    if not isinstance(row, np.ndarray):
        row = row.numpy()
    return row.view(np.uint32)


def _torch():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _new_stats(dispatch_type: str):
    return GrammarStats(dispatch_type=dispatch_type) if GrammarStats is not None else None


class GrammaskGrammarObject(_ObjectBase):
    """One request's grammar state in SGLang: a :class:`grammask.Matcher`.

    ``accept_token`` raises ValueError for a token the grammar refuses (SGLang aborts
    the request then); after termination tokens are ignored.
    """

    def __init__(
        self,
        compiled: "grammask.CompiledGrammar",
        key_string: Optional[str] = None,
        grammar_stats: Any = None,
        matcher: Optional["grammask.Matcher"] = None,
    ) -> None:
        super().__init__()
        self.compiled = compiled
        self.matcher = matcher if matcher is not None else grammask.Matcher(
            compiled, max_rollback=MAX_ROLLBACK_TOKENS
        )
        self.vocab_size = compiled.vocab_size
        self.key_string = key_string
        self.grammar_stats = grammar_stats

    # --- stepping ---

    def accept_token(self, token: int) -> None:
        if self.matcher.is_terminated():
            return
        self.current_token = token
        if not self.matcher.accept_token(int(token)):
            raise ValueError(
                f"grammask: token {token} is not allowed here by the grammar {self._what()}"
            )

    def rollback(self, k: int) -> None:
        if k > 0:
            self.matcher.rollback(k)

    def is_terminated(self) -> bool:
        return self.matcher.is_terminated()

    def copy(self) -> "GrammaskGrammarObject":
        """A new request's object for the same grammar (at its start), for SGLang's
        compile cache."""
        stats = self.grammar_stats
        if stats is not None:
            try:
                import dataclasses

                stats = dataclasses.replace(stats, is_cache_hit=True, tree_traversal_time=[])
            except (TypeError, ValueError):
                pass
        return GrammaskGrammarObject(self.compiled, self.key_string, stats)

    # --- masks ---

    @staticmethod
    def allocate_vocab_mask(vocab_size: int, batch_size: int, device: Any = None):
        """A bitmask of `batch_size` rows, every token allowed, on the CPU (filled
        there, then moved by :meth:`move_vocab_mask`): a torch tensor, pinned when CUDA
        is present; a numpy array without torch."""
        array = grammask.allocate_token_bitmask(batch_size, vocab_size)
        torch = _torch()
        if torch is None:
            return array
        mask = torch.from_numpy(array)
        if torch.cuda.is_available():
            mask = mask.pin_memory()
        return mask

    def fill_vocab_mask(self, vocab_mask: Any, idx: int) -> None:
        self.matcher.fill_next_token_bitmask(vocab_mask, idx)

    @staticmethod
    def fill_vocab_mask_batched(entries: Sequence[Any], vocab_mask: Any) -> None:
        """Fills the listed rows (``GrammarRow(row, grammar)``) at once, in parallel
        without the GIL; other rows are left as they are."""
        ours = [e for e in entries if isinstance(e.grammar, GrammaskGrammarObject)]
        if ours:
            grammask.fill_next_token_bitmasks(
                [e.grammar.matcher for e in ours], vocab_mask, [int(e.row) for e in ours]
            )
        for e in entries:
            if not isinstance(e.grammar, GrammaskGrammarObject):
                e.grammar.fill_vocab_mask(vocab_mask, e.row)

    @staticmethod
    def reset_vocab_mask(vocab_mask: Any) -> None:
        """Every token allowed again."""
        if isinstance(vocab_mask, np.ndarray):
            vocab_mask[...] = -1
        else:
            vocab_mask.fill_(-1)

    @staticmethod
    def move_vocab_mask(vocab_mask: Any, device: Any) -> Any:
        if isinstance(vocab_mask, np.ndarray):
            return vocab_mask
        return vocab_mask.to(device, non_blocking=True)

    @staticmethod
    def apply_vocab_mask(logits: Any, vocab_mask: Any) -> None:
        """Sets the logits of the tokens the mask forbids to -inf, in place."""
        grammask.apply_token_bitmask_inplace(logits, vocab_mask)

    # --- jump forward ---

    def try_jump_forward(self, tokenizer: Any) -> Optional[Tuple[List[int], str]]:
        text = self.matcher.find_jump_forward_string()
        return ([], text) if text else None

    def jump_forward_str_state(self, helper: Tuple[List[int], str]) -> Tuple[str, int]:
        return helper[1], -1

    def jump_and_retokenize(
        self, old_output_ids: List[int], new_output_ids: List[int], next_state: int
    ) -> None:
        """After SGLang re-tokenized its output around forced text: rolls back to the
        common prefix of the old and new ids and accepts the rest of the new ones."""
        same = 0
        for old, new in zip(old_output_ids, new_output_ids):
            if old != new:
                break
            same += 1
        if same < len(old_output_ids):
            self.matcher.rollback(len(old_output_ids) - same)
        for i in range(same, len(new_output_ids)):
            if not self.matcher.accept_token(int(new_output_ids[i])):
                raise ValueError(
                    f"grammask: retokenized token {new_output_ids[i]} at {i} is not "
                    f"allowed by the grammar {self._what()}"
                )

    def _what(self) -> str:
        key = self.key_string or ""
        return repr(key if len(key) <= 200 else key[:200] + "...")

    def __repr__(self) -> str:
        return f"GrammaskGrammarObject({self.matcher!r}, key={self._what()})"


class GrammaskGrammarBackend(_BackendBase):
    """grammask as SGLang's grammar backend.

    `tokenizer`: the server's transformers tokenizer (a :class:`grammask.Vocabulary` is
    taken as is); `vocab_size`: the model's logits width; `eos_token_ids`: the model's
    EOS ids (the stop tokens; default: the tokenizer's). `any_whitespace=False` selects
    compact JSON.
    """

    def __init__(
        self,
        tokenizer: Any,
        vocab_size: Optional[int] = None,
        eos_token_ids: Optional[Any] = None,
        *,
        any_whitespace: bool = True,
        cache_bytes: Optional[int] = None,
    ) -> None:
        super().__init__()
        if isinstance(tokenizer, grammask.Vocabulary):
            self.vocabulary = tokenizer
        else:
            if isinstance(eos_token_ids, int):
                eos_token_ids = [eos_token_ids]
            stops = sorted({int(t) for t in eos_token_ids}) if eos_token_ids else None
            self.vocabulary = tokenizer_vocabulary(tokenizer, vocab_size, stops)
        if cache_bytes is None:
            mb = os.environ.get("GRAMMASK_CACHE_MB")
            cache_bytes = int(mb) * 1024 * 1024 if mb else None
        if cache_bytes is None:
            self.compiler = grammask.Compiler(self.vocabulary)
        else:
            self.compiler = grammask.Compiler(self.vocabulary, cache_bytes=cache_bytes)
        self.vocab_size = self.vocabulary.vocab_size
        self.whitespace = "flexible" if any_whitespace else "compact"

    # The mask operations, on the backend too (SGLang's reasoning wrapper takes them
    # from the backend for requests without a grammar).
    allocate_vocab_mask = staticmethod(GrammaskGrammarObject.allocate_vocab_mask)
    move_vocab_mask = staticmethod(GrammaskGrammarObject.move_vocab_mask)
    apply_vocab_mask = staticmethod(GrammaskGrammarObject.apply_vocab_mask)

    @property
    def is_support_token_filter(self) -> bool:
        return True

    @staticmethod
    def set_token_filter(
        vocab_mask: Any,
        token_ids: Sequence[int],
        batch_idx: int,
        is_allowed: bool = True,
        reset_vocab_mask: bool = True,
    ) -> None:
        """Allows (`is_allowed`) or forbids `token_ids` in row `batch_idx`; with
        `reset_vocab_mask`, the row first forbids (allows) every other token. For
        SGLang's strict thinking."""
        words = _row_words(vocab_mask, batch_idx)
        if reset_vocab_mask:
            words[:] = 0 if is_allowed else 0xFFFFFFFF
        for t in token_ids:
            word, bit = int(t) >> 5, np.uint32(1 << (int(t) & 31))
            if word < words.shape[0]:
                if is_allowed:
                    words[word] |= bit
                else:
                    words[word] &= ~bit

    def _made(self, kind: str, key_string: str, compile_it) -> Any:
        try:
            compiled = compile_it()
        except (grammask.GrammaskError, ValueError, TypeError) as e:
            return InvalidGrammarObject(f"grammask: {e}")
        return GrammaskGrammarObject(compiled, key_string, _new_stats(kind))

    def dispatch_json(self, key_string: str) -> Any:
        if key_string == "$$ANY$$":
            return self._made(
                "json",
                key_string,
                lambda: self.compiler.compile_builtin_json(whitespace=self.whitespace),
            )
        return self._made(
            "json",
            key_string,
            lambda: self.compiler.compile_json_schema(key_string, whitespace=self.whitespace),
        )

    def dispatch_regex(self, key_string: str) -> Any:
        return self._made("regex", key_string, lambda: self.compiler.compile_regex(key_string))

    def dispatch_ebnf(self, key_string: str) -> Any:
        return self._made("ebnf", key_string, lambda: self.compiler.compile_ebnf(key_string))

    def dispatch_structural_tag(self, key_string: str) -> Any:
        # XGrammar's format or the legacy {"structures", "triggers"}, as JSON text.
        return self._made(
            "structural_tag", key_string, lambda: self.compiler.compile_structural_tag(key_string)
        )

    def reset(self) -> None:
        super().reset()
        self.compiler.clear_cache()


def create_backend(
    server_args: Any, tokenizer: Any, vocab_size: int, eos_token_ids: Optional[Any] = None
) -> GrammaskGrammarBackend:
    """The constructor SGLang's registry calls: ``(server_args, tokenizer, vocab_size,
    eos_token_ids)``."""
    disable_ws = getattr(server_args, "constrained_json_disable_any_whitespace", None)
    if disable_ws is None:
        try:
            from sglang.srt.runtime_context import get_serving

            disable_ws = get_serving().constrained_json_disable_any_whitespace
        except Exception:
            disable_ws = False
    backend = GrammaskGrammarBackend(
        tokenizer, vocab_size, eos_token_ids, any_whitespace=not disable_ws
    )
    return _with_reasoning(backend, tokenizer)


def _with_reasoning(backend: GrammaskGrammarBackend, tokenizer: Any) -> Any:
    """`backend` in SGLang's reasoning wrapper when the server has a reasoning parser
    (as SGLang does for its own backends): the grammar applies after the reasoning
    ends."""
    try:
        from sglang.srt.runtime_context import get_serving

        serving = get_serving()
        parser_name = serving.reasoning_parser
    except Exception:
        return backend
    if not parser_name:
        return backend
    from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    parser = ReasoningParser(model_type=parser_name, stream_reasoning=False, tokenizer=tokenizer)
    return ReasonerGrammarBackend(
        backend,
        parser,
        tokenizer,
        enable_strict_thinking=bool(getattr(serving, "enable_strict_thinking", False)),
    )


def register(name: str = BACKEND_NAME) -> None:
    """Registers grammask as SGLang's grammar backend `name` (``--grammar-backend
    grammask``). Idempotent. Raises ImportError without SGLang."""
    if not HAVE_SGLANG:
        raise ImportError("grammask.sglang.register(): sglang is not installed")
    from sglang.srt.constrained.base_grammar_backend import register_grammar_backend

    register_grammar_backend(name, create_backend)
    try:
        from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES as choices
    except ImportError:
        try:
            from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES as choices
        except ImportError:
            choices = None
    if choices is not None and name not in choices:
        choices.append(name)


def plugin() -> None:
    """The ``sglang.srt.plugins`` entry point."""
    register()

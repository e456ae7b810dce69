"""grammask as a structured-output backend of vLLM's v1 engine.

vLLM asks its backend for two things: an engine-wide object that compiles each request's
constraint (``StructuredOutputBackend``), and a per-request object that fills the
request's rows of the batch bitmask and follows the tokens the request generates
(``StructuredOutputGrammar``). :class:`GrammaskBackend` and :class:`GrammaskGrammar` are
those two over grammask's :class:`~grammask.Compiler` and :class:`~grammask.Matcher`.
When ``vllm`` imports, they subclass vLLM's own abstract classes; otherwise they derive
from plain stand-ins with the same methods, so this module imports (and its logic can be
exercised) without vLLM.

vLLM picks its backend from a fixed list (``structured_outputs_config.backend``), with no
hook for a new name. :func:`register` therefore puts grammask in the place of the
``"xgrammar"`` backend in the running process: requests that vLLM would hand to
XGrammar (every one under ``"xgrammar"``, and under ``"auto"`` those that pass the
request check) are compiled and matched by grammask. The request check, which vLLM runs
in its front-end process, becomes grammask's (:func:`validate_request`): a constraint
grammask cannot serve (a Lark grammar, a schema it does not support)
is refused there, and under ``"auto"`` vLLM falls back to its ``"guidance"`` backend for
it. vLLM runs its engine in other processes, so the replacement must happen in each: the
package declares the ``vllm.general_plugins`` entry point ``grammask =
grammask.vllm:plugin`` (vLLM loads those in every process), which calls :func:`register`
when the environment variable ``GRAMMASK_VLLM`` is ``1``::

    GRAMMASK_VLLM=1 vllm serve meta-llama/Llama-3.2-1B-Instruct

or, in one Python process, call ``grammask.vllm.register()`` before creating
``vllm.LLM``.

Request kinds (``StructuredOutputOptions``): ``JSON`` (a JSON Schema's text),
``JSON_OBJECT`` (any JSON object), ``REGEX``, ``GRAMMAR`` (GBNF or XGrammar's EBNF, read
as EBNF, a superset of GBNF; Lark is refused), ``CHOICE`` (a JSON list of strings),
``STRUCTURAL_TAG`` (XGrammar's structural-tag JSON, or vLLM's legacy
``{"structures", "triggers"}``: tool calls and other text with constrained parts).

The engine's ``structured_outputs_config.disable_any_whitespace`` selects compact JSON;
otherwise JSON follows grammask's flexible whitespace. ``GRAMMASK_CACHE_MB`` sets the
size of the compiled-grammar cache (default: the compiler's, 1 GiB).
"""

from __future__ import annotations

import enum
import importlib.util
import json
import os
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional

import numpy as np

import grammask
from grammask._huggingface import tokenizer_vocabulary

__all__ = [
    "GrammaskBackend",
    "GrammaskGrammar",
    "StructuredOutputOptions",
    "UnsupportedRequest",
    "HAVE_VLLM",
    "register",
    "unregister",
    "is_registered",
    "validate_request",
    "plugin",
]

try:
    from vllm.v1.structured_output.backend_types import (
        StructuredOutputBackend as _BackendBase,
        StructuredOutputGrammar as _GrammarBase,
        StructuredOutputOptions,
    )

    HAVE_VLLM = True
except ImportError:
    if importlib.util.find_spec("vllm") is not None:
        raise  # vLLM is installed but does not import: say why, do not hide it
    HAVE_VLLM = False

    class StructuredOutputOptions(enum.Enum):  # type: ignore[no-redef]
        """The request kinds of vLLM's v1 engine (a stand-in when vLLM is absent)."""

        JSON = enum.auto()
        JSON_OBJECT = enum.auto()
        REGEX = enum.auto()
        GRAMMAR = enum.auto()
        CHOICE = enum.auto()
        STRUCTURAL_TAG = enum.auto()

    class _GrammarBase:  # type: ignore[no-redef]
        """Stand-in for vLLM's ``StructuredOutputGrammar`` when vLLM is absent."""

    @dataclass
    class _BackendBase:  # type: ignore[no-redef]
        """Stand-in for vLLM's ``StructuredOutputBackend`` when vLLM is absent: the three
        fields vLLM's engine constructs every backend with."""

        vllm_config: Any
        tokenizer: Any
        vocab_size: int


class UnsupportedRequest(ValueError):
    """A structured-output request grammask does not serve (a Lark
    grammar, a malformed choice list)."""


# The constraint of a JSON_OBJECT request: an object at the root, anything inside.
_JSON_OBJECT_SCHEMA = '{"type": "object"}'


def _kind(request_type: Any) -> str:
    """The request kind's name: vLLM's enum member, this module's, or a string."""
    name = getattr(request_type, "name", request_type)
    if not isinstance(name, str):
        raise UnsupportedRequest(f"unknown structured-output request type {request_type!r}")
    return name.upper()


def _looks_like_ebnf(text: str) -> bool:
    """Whether a grammar is written in BNF style (rules defined with ``::=``), as GBNF
    and XGrammar's EBNF are; vLLM's other grammar language, Lark, defines rules with
    ``:``."""
    return "::=" in text


def _choices_of(spec: str) -> list[str]:
    try:
        choices = json.loads(spec)
    except json.JSONDecodeError as e:
        raise UnsupportedRequest(f"choice: not a JSON list of strings: {e}") from None
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise UnsupportedRequest("choice: expected a JSON list of strings")
    if not choices:
        raise UnsupportedRequest("choice: the list is empty")
    return choices


def _compile(compiler: "grammask.Compiler", kind: str, spec: str, whitespace: str):
    """Compiles one request's constraint with `compiler`."""
    if kind == "JSON":
        return compiler.compile_json_schema(spec, whitespace=whitespace)
    if kind == "JSON_OBJECT":
        return compiler.compile_json_schema(_JSON_OBJECT_SCHEMA, whitespace=whitespace)
    if kind == "REGEX":
        return compiler.compile_regex(spec)
    if kind == "GRAMMAR":
        if not _looks_like_ebnf(spec):
            raise UnsupportedRequest(
                "grammar: grammask reads GBNF and XGrammar's EBNF (rules written "
                "`name ::= ...`); this grammar looks like Lark, which it does not read"
            )
        return compiler.compile_ebnf(spec)
    if kind == "CHOICE":
        return compiler.compile_choice(_choices_of(spec))
    if kind == "STRUCTURAL_TAG":
        # vLLM passes the request's structural tag as JSON text: XGrammar's format
        # ({"type": "structural_tag", "format": ...}) or the legacy
        # {"structures": [...], "triggers": [...]}; grammask reads both.
        return compiler.compile_structural_tag(spec)
    raise UnsupportedRequest(f"unknown structured-output request type {kind!r}")


def _cache_bytes() -> Optional[int]:
    mb = os.environ.get("GRAMMASK_CACHE_MB")
    return int(mb) * 1024 * 1024 if mb else None


def _as_tensor(array: np.ndarray):
    """`array` as a CPU torch tensor sharing its memory (vLLM's manager uses torch
    methods on the bitmask), or the numpy array itself without torch."""
    try:
        import torch
    except ImportError:
        return array
    return torch.from_numpy(array)


def _set_bit(words: np.ndarray, token: int, on: bool) -> None:
    """Sets or clears token `token`'s bit in a row of uint32 words."""
    word = token >> 5
    if word < words.shape[0]:
        bit = 1 << (token & 31)
        value = int(words[word])
        words[word] = value | bit if on else value & ~bit & 0xFFFFFFFF


class GrammaskGrammar(_GrammarBase):
    """One request's grammar state in vLLM: a :class:`grammask.Matcher`, plus the
    request's stop tokens.

    vLLM gives each request its own stop tokens (``SamplingParams.all_stop_token_ids``:
    the EOS tokens unless ``ignore_eos``, and the request's ``stop_token_ids``). When they
    are given they replace the vocabulary's stop tokens for this request, as they replace
    XGrammar's: each is allowed exactly where the document can end and terminates the
    grammar there; no other token acts as a stop token, and none of them is read as text.
    Without them, the vocabulary's stop tokens apply.

    After termination, further tokens are ignored (and not counted for rollback), as vLLM
    expects of its backends.
    """

    def __init__(
        self,
        matcher: "grammask.Matcher",
        vocab_size: int,
        stop_token_ids: Optional[Iterable[int]] = None,
        vocabulary_stop_token_ids: Iterable[int] = (),
    ) -> None:
        self.matcher = matcher
        self.vocab_size = vocab_size
        vocab_stops = frozenset(int(t) for t in vocabulary_stop_token_ids)
        self._vocab_stops = vocab_stops
        if stop_token_ids is None:
            requested = None
        else:
            requested = frozenset(int(t) for t in stop_token_ids)
            if requested == vocab_stops:
                requested = None
        # The request's own stop tokens when they differ from the vocabulary's.
        self._stops = requested
        # The vocabulary's stop tokens that the request's replace (never allowed).
        self._dropped = vocab_stops - requested if requested is not None else frozenset()
        # The request's stop tokens the matcher does not know as stop tokens: handled here.
        self._extra = requested - vocab_stops if requested is not None else frozenset()
        # Whether the grammar ended on one of `_extra` (the matcher itself does not know).
        self._ended_here = False
        # vLLM passes the same bitmask tensor at every step: its numpy view, made once
        # (a numpy array is filled several times faster than a tensor through DLPack).
        self._bitmask_views: tuple = (None, None)

    # --- vLLM's StructuredOutputGrammar ---

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        """Advances over `tokens` in turn; False at the first the grammar refuses (the
        ones before it stay accepted). Tokens after the grammar terminated are
        ignored."""
        for token in tokens:
            if self.is_terminated():
                return True
            if not self._accept(int(token)):
                return False
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        """The longest prefix of `tokens` the grammar would accept in turn, up to and
        including a token that terminates it. The state does not change."""
        if self.is_terminated() or not tokens:
            return []
        tokens = [int(t) for t in tokens]
        if self._stops is None:
            n = self.matcher.validate_tokens(tokens)
            for i in range(n):
                if tokens[i] in self._vocab_stops:
                    return tokens[: i + 1]
            return tokens[:n]
        # The request's own stop tokens: the matcher validates the text up to the first
        # stop-like token, and this object decides that token.
        special = self._stops | self._dropped
        cut = next((i for i, t in enumerate(tokens) if t in special), len(tokens))
        n = self.matcher.validate_tokens(tokens[:cut])
        if n < cut or cut == len(tokens):
            return tokens[:n]
        if tokens[cut] not in self._stops:
            return tokens[:cut]
        probe = self.matcher.fork()
        if cut and not probe.accept_tokens(tokens[:cut]):
            return tokens[:0]
        return tokens[: cut + 1] if probe.can_terminate() else tokens[:cut]

    def rollback(self, num_tokens: int) -> None:
        """Undoes the last `num_tokens` accepted tokens."""
        if num_tokens <= 0:
            return
        if self._ended_here:
            self._ended_here = False
            num_tokens -= 1
        if num_tokens:
            self.matcher.rollback(num_tokens)

    def fill_bitmask(self, bitmask: Any, idx: int) -> None:
        """Fills row `idx` of vLLM's bitmask (an int32 CPU tensor) with the tokens
        allowed next."""
        array = self._numpy_of(bitmask)
        if self._ended_here:
            words = array[idx].view(np.uint32)
            words[:] = 0
            for t in self._stops or ():
                _set_bit(words, t, True)
            return
        self.matcher.fill_next_token_bitmask(array, idx)
        if self._stops is None:
            return
        words = array[idx].view(np.uint32)
        for t in self._dropped:
            _set_bit(words, t, False)
        if self._extra:
            can_end = self.matcher.is_terminated() or self.matcher.can_terminate()
            for t in self._extra:
                _set_bit(words, t, can_end)

    def is_terminated(self) -> bool:
        """Whether a stop token was accepted."""
        return self._ended_here or self.matcher.is_terminated()

    def reset(self) -> None:
        """Returns to the start of the grammar."""
        self.matcher.reset()
        self._ended_here = False

    # --- helpers ---

    def _numpy_of(self, bitmask: Any) -> np.ndarray:
        """`bitmask` as a numpy array sharing its memory (a CPU tensor's view, cached
        for the tensor vLLM passes at every step)."""
        if isinstance(bitmask, np.ndarray):
            return bitmask
        tensor, array = self._bitmask_views
        if tensor is not bitmask:
            array = bitmask.numpy()
            self._bitmask_views = (bitmask, array)
        return array

    def _accept(self, token: int) -> bool:
        if self._stops is None:
            return self.matcher.accept_token(token)
        if token in self._dropped:
            return False
        if token in self._extra:
            if self.matcher.can_terminate():
                self._ended_here = True
                return True
            return False
        # A token the matcher knows as a stop token is accepted only where the document
        # can end; any other token is text.
        return self.matcher.accept_token(token)

    def __repr__(self) -> str:
        stops = sorted(self._stops) if self._stops is not None else None
        return f"GrammaskGrammar({self.matcher!r}, stop_token_ids={stops})"


@dataclass
class GrammaskBackend(_BackendBase):
    """grammask as vLLM's engine-level structured-output backend.

    Constructed by vLLM's engine as ``GrammaskBackend(vllm_config, tokenizer=...,
    vocab_size=...)``: `tokenizer` is the engine's transformers tokenizer (a
    :class:`grammask.Vocabulary` is taken as is), `vocab_size` the model's logits width.
    """

    vocabulary: Any = field(default=None, init=False, repr=False)
    compiler: Any = field(default=None, init=False, repr=False)
    whitespace: str = field(default="flexible", init=False)
    num_speculative_tokens: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        so_config = getattr(self.vllm_config, "structured_outputs_config", None)
        if getattr(so_config, "disable_any_whitespace", False):
            self.whitespace = "compact"
        spec = getattr(self.vllm_config, "speculative_config", None)
        self.num_speculative_tokens = int(getattr(spec, "num_speculative_tokens", 0) or 0)
        if isinstance(self.tokenizer, grammask.Vocabulary):
            self.vocabulary = self.tokenizer
        else:
            self.vocabulary = tokenizer_vocabulary(self.tokenizer, self.vocab_size)
        cache = _cache_bytes()
        if cache is None:
            self.compiler = grammask.Compiler(self.vocabulary)
        else:
            self.compiler = grammask.Compiler(self.vocabulary, cache_bytes=cache)

    def compile_grammar(
        self,
        request_type: Any,
        grammar_spec: str,
        stop_token_ids: Optional[Iterable[int]] = None,
    ) -> GrammaskGrammar:
        """Compiles one request's constraint. Raises :class:`UnsupportedRequest` or one
        of grammask's errors (``GrammarError``, ``SchemaUnsupported``,
        ``LimitExceeded``); vLLM then fails that request alone."""
        compiled = _compile(self.compiler, _kind(request_type), grammar_spec, self.whitespace)
        # vLLM rolls back at most its draft tokens; keep at least one step.
        matcher = grammask.Matcher(compiled, max_rollback=max(1, self.num_speculative_tokens))
        return GrammaskGrammar(
            matcher,
            self.vocabulary.vocab_size,
            stop_token_ids=stop_token_ids or None,
            vocabulary_stop_token_ids=self.vocabulary.stop_token_ids,
        )

    def allocate_token_bitmask(self, max_num_seqs: int):
        """A bitmask of `max_num_seqs` rows (int32, every token allowed), as a CPU torch
        tensor (a numpy array without torch)."""
        return _as_tensor(grammask.allocate_token_bitmask(max_num_seqs, self.vocabulary.vocab_size))

    def destroy(self) -> None:
        """Frees the compiled-grammar cache."""
        if self.compiler is not None:
            self.compiler.clear_cache()


# --- Putting grammask in the place of vLLM's "xgrammar" backend ---

_PROBE: Optional["grammask.Compiler"] = None


def _probe_compiler() -> "grammask.Compiler":
    """A compiler over the 256 single-byte tokens and one stop token, for checking
    requests where the engine's tokenizer is not at hand (vLLM's front end)."""
    global _PROBE
    if _PROBE is None:
        tokens = [bytes([b]) for b in range(256)] + [b""]
        vocab = grammask.Vocabulary.from_tokens(tokens, [256], special_token_ids=[256])
        _PROBE = grammask.Compiler(vocab, cache_bytes=64 << 20)
    return _PROBE


def _request_of(params: Any) -> Optional[tuple[str, str]]:
    """The (kind, spec) of vLLM's ``StructuredOutputsParams``, as vLLM's engine will
    key it; None for no constraint."""
    if params.json is not None:
        spec = params.json if isinstance(params.json, str) else json.dumps(params.json)
        return "JSON", spec
    if params.json_object:
        return "JSON_OBJECT", ""
    if params.regex is not None:
        return "REGEX", params.regex
    if params.choice is not None:
        spec = params.choice if isinstance(params.choice, str) else json.dumps(params.choice)
        return "CHOICE", spec
    if params.grammar is not None:
        return "GRAMMAR", params.grammar
    if getattr(params, "structural_tag", None) is not None:
        return "STRUCTURAL_TAG", params.structural_tag
    return None


def validate_request(sampling_params: Any) -> None:
    """vLLM's front-end check of a request's structured-output constraint, done by
    grammask: compiles it over a byte vocabulary and raises vLLM's
    ``VLLMValidationError`` (a ValueError) when grammask cannot serve it. In the place of
    ``validate_xgrammar_grammar`` after :func:`register`."""
    params = getattr(sampling_params, "structured_outputs", None)
    if params is None:
        return
    request = _request_of(params)
    if request is None:
        return
    kind, spec = request
    try:
        if kind == "REGEX" and "\x00" in spec:
            raise UnsupportedRequest("regex: a NUL character is not allowed")
        _compile(_probe_compiler(), kind, spec, "flexible")
    except (UnsupportedRequest, grammask.GrammaskError, ValueError, TypeError) as e:
        raise _validation_error(f"grammask: {e}") from e


def _validation_error(message: str) -> Exception:
    try:
        from vllm.exceptions import VLLMValidationError
    except ImportError:
        return UnsupportedRequest(message)
    return VLLMValidationError(message)


# The patched attributes and what they were: (module, name) -> original.
_SAVED: dict = {}


def _patch_points():
    import vllm.v1.structured_output as manager_module
    import vllm.v1.structured_output.backend_xgrammar as xgrammar_module

    return [
        # The engine's StructuredOutputManager builds "xgrammar" backends from this name.
        (manager_module, "XgrammarBackend", GrammaskBackend),
        # Other users (beam search) import it from its module at call time.
        (xgrammar_module, "XgrammarBackend", GrammaskBackend),
        # The request check vLLM runs for "xgrammar" and "auto", imported at call time.
        (xgrammar_module, "validate_xgrammar_grammar", validate_request),
    ]


def register() -> None:
    """Serves vLLM's ``"xgrammar"`` structured-output backend (and the requests
    ``"auto"`` gives it) with grammask in this process. Idempotent. Raises ImportError
    without vLLM."""
    if not HAVE_VLLM:
        raise ImportError("grammask.vllm.register(): vllm is not installed")
    for module, name, replacement in _patch_points():
        key = (module.__name__, name)
        if key not in _SAVED:
            _SAVED[key] = (module, getattr(module, name))
        setattr(module, name, replacement)


def unregister() -> None:
    """Undoes :func:`register` (vLLM's own XGrammar backend again)."""
    for (_, name), (module, original) in list(_SAVED.items()):
        setattr(module, name, original)
    _SAVED.clear()


def is_registered() -> bool:
    """Whether :func:`register` is in effect in this process."""
    return bool(_SAVED)


def plugin() -> None:
    """The ``vllm.general_plugins`` entry point: registers grammask when
    ``GRAMMASK_VLLM=1`` (installing grammask alone changes nothing in vLLM)."""
    if os.environ.get("GRAMMASK_VLLM", "").strip().lower() in ("1", "true", "yes", "on"):
        register()

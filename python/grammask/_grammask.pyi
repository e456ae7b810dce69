"""Type stubs of the extension module (re-exported by ``grammask``)."""

from os import PathLike
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

__version__: str

class Vocabulary:
    """A tokenizer's vocabulary: exact bytes per token id, special ids, stop (EOS) ids and
    the logits width. Immutable, shareable across threads, picklable."""

    @staticmethod
    def from_huggingface(
        tokenizer: Any, vocab_size: Optional[int] = None, stop_token_ids: Optional[Sequence[int]] = None
    ) -> "Vocabulary":
        """From a transformers tokenizer (fast: its tokenizer.json; slow sentencepiece:
        its pieces, byte fallback included). ``vocab_size``: the model's logits width when
        wider than the tokenizer. ``stop_token_ids`` default to ``eos_token_id`` and the
        stop tokens the loader recognizes."""
    @staticmethod
    def from_tokenizer_json(
        path: Union[str, PathLike], vocab_size: Optional[int] = None, stop_token_ids: Optional[Sequence[int]] = None
    ) -> "Vocabulary":
        """From a Hugging Face tokenizer.json file (stop tokens also from sibling
        tokenizer_config.json / generation_config.json)."""
    @staticmethod
    def from_tokenizer_json_text(
        text: Union[str, bytes], vocab_size: Optional[int] = None, stop_token_ids: Optional[Sequence[int]] = None
    ) -> "Vocabulary":
        """From the content of a tokenizer.json."""
    @staticmethod
    def from_gguf(
        path: Union[str, PathLike], vocab_size: Optional[int] = None, stop_token_ids: Optional[Sequence[int]] = None
    ) -> "Vocabulary":
        """From the tokenizer in a GGUF model file's metadata."""
    @staticmethod
    def builtin(
        name: str, vocab_size: Optional[int] = None, stop_token_ids: Optional[Sequence[int]] = None
    ) -> "Vocabulary":
        """A shipped tiktoken encoding: ``o200k``, ``cl100k``, ``p50k``, ``r50k``."""
    @staticmethod
    def from_tokens(
        tokens: Sequence[bytes],
        stop_token_ids: Sequence[int],
        vocab_size: Optional[int] = None,
        *,
        special_token_ids: Optional[Sequence[int]] = None,
        byte_token_ids: Optional[Sequence[int]] = None,
    ) -> "Vocabulary":
        """Token ``i`` has bytes ``tokens[i]`` (``b""``: no token)."""
    @property
    def vocab_size(self) -> int:
        """The logits width (ids at or past the tokenizer's are never allowed)."""
    @property
    def stop_token_ids(self) -> List[int]:
        """The stop tokens, allowed exactly where the grammar can end."""
    @property
    def special_token_ids(self) -> List[int]:
        """Special tokens (never matched as text)."""
    def token_bytes(self, id: int) -> Optional[bytes]:
        """The exact bytes of token ``id``."""
    def __len__(self) -> int: ...

class CompiledGrammar:
    """A compiled grammar: immutable, shared by its matchers across threads, picklable."""

    @property
    def vocabulary(self) -> Vocabulary: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def memory_size_bytes(self) -> int: ...
    @property
    def num_states(self) -> int: ...
    def serialize(self) -> bytes:
        """grammask's versioned binary format, tied to the vocabulary."""
    @staticmethod
    def deserialize(vocab: Vocabulary, data: bytes) -> "CompiledGrammar": ...

class Compiler:
    """Compiles grammars for one vocabulary, keeping them in a cache of ``cache_bytes``
    (0: none). Limits default to the engine's (None)."""

    def __init__(
        self,
        vocab: Vocabulary,
        cache_bytes: int = 1 << 30,
        *,
        max_grammar_size: Optional[int] = None,
        max_automaton_states: Optional[int] = None,
        max_live_stacks: Optional[int] = None,
        max_stack_depth: Optional[int] = None,
        max_rollback: Optional[int] = None,
        max_compile_ms: Optional[int] = None,
        max_mask_cache_bytes: Optional[int] = None,
        precompute_mask_cache: bool = False,
        lazy_automata: bool = True,
    ) -> None: ...
    @property
    def vocabulary(self) -> Vocabulary: ...
    def compile_json_schema(
        self,
        schema: Any,
        *,
        any_order: bool = False,
        whitespace: str = "flexible",
        strict: bool = False,
        format_mode: str = "assert",
        lenient: bool = False,
        max_whitespace_run: int = 32,
    ) -> CompiledGrammar:
        """A JSON Schema as str, dict or pydantic model class. Raises SchemaUnsupported
        for a keyword grammask does not enforce (never skipped silently)."""
    def compile_structural_tag(self, tag: Any, *, max_free_text_tokens: Optional[int] = None) -> CompiledGrammar:
        """A structural tag (XGrammar's JSON format) as str, dict or pydantic model; the
        outer {"type": "structural_tag", "format": ...} may be left out. Raises
        GrammarError with the JSON pointer of a malformed or unsupported field."""
    def compile_tools(
        self,
        tools: Any,
        tool_choice: Any = None,
        *,
        format: str = "hermes",
        parallel_tool_calls: bool = False,
        reasoning: bool = False,
        max_reasoning_tokens: Optional[int] = None,
        max_text_tokens: Optional[int] = None,
    ) -> CompiledGrammar:
        """Tool calls over OpenAI-style tools; tool_choice "auto" (default), "required",
        "none", a function name or {"type": "function", "function": {"name": ...}};
        format "hermes" or "llama3"."""
    def compile_gbnf(self, text: str, root: str = "root") -> CompiledGrammar: ...
    def compile_ebnf(self, text: str, root: str = "root") -> CompiledGrammar: ...
    def compile_regex(self, pattern: str) -> CompiledGrammar: ...
    def compile_builtin_json(self, *, whitespace: str = "flexible", max_whitespace_run: int = 32) -> CompiledGrammar: ...
    def compile_choice(self, choices: Sequence[str]) -> CompiledGrammar: ...
    @property
    def cache_size(self) -> Tuple[int, int]:
        """(grammars, bytes) in the cache."""
    def clear_cache(self) -> None: ...

class Matcher:
    """The state of one generation. Refused calls return False and change nothing."""

    def __init__(self, compiled: CompiledGrammar, max_rollback: Optional[int] = None) -> None: ...
    def fill_next_token_bitmask(self, bitmask: Any, index: int = 0) -> bool:
        """Fills row ``index`` of an int32 ``[batch, ceil(vocab_size / 32)]`` buffer (numpy,
        CPU torch); the GIL is released. Returns whether some token is forbidden."""
    def accept_token(self, id: int) -> bool: ...
    def accept_tokens(self, ids: Sequence[int]) -> bool:
        """All or nothing: when one is refused, none stays accepted."""
    def accept_string(self, text: str) -> bool: ...
    def validate_tokens(self, ids: Sequence[int]) -> int:
        """How many of ``ids``, from the first, would be accepted (no change)."""
    def rollback(self, n: int) -> None: ...
    def reset(self) -> None: ...
    def fork(self) -> "Matcher": ...
    def is_terminated(self) -> bool: ...
    def can_terminate(self) -> bool: ...
    def find_jump_forward_string(self) -> str: ...
    @property
    def rollback_steps(self) -> int: ...
    @property
    def max_rollback(self) -> int: ...
    @property
    def compiled(self) -> CompiledGrammar: ...

class FieldRecorder:
    """How sure the model was of each JSON value it wrote: call ``observe`` at every step,
    before ``matcher.accept_token``, with the step's raw (unmasked) logits."""

    def __init__(self) -> None: ...
    def observe(self, matcher: Matcher, logits: Any, token_id: int) -> None: ...
    def fields(self) -> List[Dict[str, Any]]:
        """Dicts with ``pointer``, ``value``, ``p_chosen``, ``runner_up``, ``p_runner_up``,
        ``mass_removed``, for the values completed so far."""
    def finish(self) -> List[Dict[str, Any]]: ...

def fill_next_token_bitmasks(matchers: Iterable[Matcher], bitmask: Any, indices: Optional[Sequence[int]] = None) -> None:
    """Fills row ``indices[k]`` (default ``k``) for matcher ``k``, in parallel, without the GIL."""

def tools_system_prompt(tools: str, format: str = "hermes") -> str: ...
def parse_tool_calls(text: str, format: str = "hermes") -> List[Tuple[str, str]]: ...

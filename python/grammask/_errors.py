"""The exceptions grammask raises: every one is a ``GrammaskError`` (a ``ValueError``)."""

from __future__ import annotations

from typing import Optional


class GrammaskError(ValueError):
    """A grammar, schema or limit error raised by grammask."""

    def __init__(self, message: str, **attrs: object) -> None:
        super().__init__(message)
        for key, value in attrs.items():
            setattr(self, key, value)


class GrammarError(GrammaskError):
    """The grammar text (or a schema) is invalid, or asks for what grammask does not do.

    ``line`` and ``column`` (1-based) locate the first error in grammar text;
    ``rendered`` shows every error as ``FILE:LINE:COL: error: ...`` with the source line
    and a caret under the column; ``pointer`` is the JSON pointer for a schema error;
    ``unsupported`` is True when the input is valid but not supported.
    """

    line: Optional[int] = None
    column: Optional[int] = None
    pointer: Optional[str] = None
    rendered: str = ""
    detail: str = ""
    unsupported: bool = False


class SchemaUnsupported(GrammaskError):
    """A JSON Schema uses a keyword grammask does not enforce (it never skips one
    silently): ``keyword`` and its JSON ``pointer`` say which and where. Compile with
    ``lenient=True`` to leave such keywords out instead.
    """

    keyword: Optional[str] = None
    pointer: str = ""
    detail: str = ""


class LimitExceeded(GrammaskError):
    """A documented resource limit was reached; ``limit`` is its name (``grammar_size``,
    ``automaton_states``, ``compile_time``, ``mask_cache_bytes``, ``live_stacks``,
    ``stack_depth``, ``schema_depth``)."""

    limit: str = ""

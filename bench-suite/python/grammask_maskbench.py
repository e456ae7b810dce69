"""grammask as an engine of JSONSchemaBench's MaskBench runner.

MaskBench's runner (`maskbench/runner.py`, in the harness checkout that
`bench-suite/scripts/maskbench_harness.py` is pointed at) drives an engine through its
`maskbench.engine.Engine` interface: `init()` once, then per schema `compile_grammar(schema)`
(timed as TTFM), and per test instance `reset()` followed by `compute_mask()` and
`commit_token(t)` for each of its tokens (the two calls timed together as TBM). This module
implements that interface on grammask's Python API with its defaults:

    vocab    = grammask.Vocabulary.from_huggingface(tokenizer)
    compiler = grammask.Compiler(vocab)
    compiled = compiler.compile_json_schema(schema)    # schema order, flexible whitespace
    matcher  = grammask.Matcher(compiled)
    matcher.fill_next_token_bitmask(bitmask)            # bitmask from allocate_token_bitmask(1, n)
    matcher.accept_token(t)

`commit_token` reads the token's bit from the mask, as the harness's llguidance engine does,
and accepts the token only when the mask allows it. It also checks that the mask and
`accept_token` agree: a token the mask allowed must be accepted (`accept_token` returns
True) and a token the mask forbade must be refused. A disagreement is counted in `checks`
and raised as `MaskAcceptMismatch`, which the runner records as that schema's validation
error (`EXN MaskAcceptMismatch(...)`), so it can never pass unseen.

A Rust panic reaches Python as pyo3's `PanicException`, a `BaseException` that the runner's
`except Exception` would not catch (the whole run would stop). The engine re-raises it as
`GrammaskPanic` (an `Exception`), so it lands in the results as that schema's compile or
validation error, and counts it in `checks["panics"]`.

The module imports `maskbench.engine`, so the harness checkout must be on `sys.path` first
(the harness script puts it there). It is measurement glue only: nothing of the harness
is copied here.
"""

import json

import grammask
from maskbench.engine import Engine


class MaskAcceptMismatch(AssertionError):
    """The mask and `accept_token` disagreed about a token."""


class GrammaskPanic(RuntimeError):
    """grammask panicked (pyo3's PanicException, re-raised as an Exception)."""


def _is_panic(exc: BaseException) -> bool:
    return not isinstance(exc, (Exception, KeyboardInterrupt, SystemExit, GeneratorExit))


class GrammaskEngine(Engine):
    """MaskBench engine on grammask's Python API.

    `compile_options` are passed to `Compiler.compile_json_schema` as keyword arguments;
    the default (none) keeps the API's defaults, which is what the benchmark measures.
    """

    def __init__(self, compile_options=None):
        super().__init__()
        self.compile_options = dict(compile_options or {})
        self.checks = self.new_checks()

    @staticmethod
    def new_checks():
        """Counters of the mask/accept_token agreement, reset by the caller per schema."""
        return {
            "allowed_accepted": 0,
            "allowed_refused": 0,
            "forbidden_refused": 0,
            "forbidden_accepted": 0,
            "panics": 0,
        }

    def get_id(self):
        return "grammask"

    def get_name(self):
        return "grammask"

    def get_module(self):
        return "grammask"

    def get_version(self):
        try:
            return super().get_version()
        except Exception:
            return getattr(grammask, "__version__", "unknown")

    def init(self):
        self.vocab = grammask.Vocabulary.from_huggingface(self.tokenizer)
        self.compiler = grammask.Compiler(self.vocab)
        self.bitmask = grammask.allocate_token_bitmask(1, self.vocab.vocab_size)
        self.matcher = None

    def compile_grammar(self, schema: dict):
        self.matcher = None
        try:
            compiled = self.compiler.compile_json_schema(
                json.dumps(schema), **self.compile_options
            )
            self.matcher = grammask.Matcher(compiled)
        except BaseException as e:
            if _is_panic(e):
                self.checks["panics"] += 1
                raise GrammaskPanic(repr(e)) from None
            raise

    def reset(self):
        self.matcher.reset()

    def compute_mask(self):
        try:
            self.matcher.fill_next_token_bitmask(self.bitmask)
        except BaseException as e:
            if _is_panic(e):
                self.checks["panics"] += 1
                raise GrammaskPanic(repr(e)) from None
            raise

    def commit_token(self, t: int) -> bool:
        allowed = (int(self.bitmask[0, t >> 5]) >> (t & 31)) & 1 == 1
        try:
            accepted = self.matcher.accept_token(t)
        except BaseException as e:
            if _is_panic(e):
                self.checks["panics"] += 1
                raise GrammaskPanic(repr(e)) from None
            raise
        if allowed:
            if not accepted:
                self.checks["allowed_refused"] += 1
                raise MaskAcceptMismatch(
                    f"token {t} allowed by the mask but refused by accept_token"
                )
            self.checks["allowed_accepted"] += 1
            return True
        if accepted:
            self.checks["forbidden_accepted"] += 1
            raise MaskAcceptMismatch(
                f"token {t} forbidden by the mask but accepted by accept_token"
            )
        self.checks["forbidden_refused"] += 1
        return False

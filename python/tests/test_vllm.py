"""grammask.vllm: the calls vLLM's v1 engine makes on a structured-output backend, replayed
on the Llama-3 vocabulary, and (where vLLM imports) against vLLM's own classes and its own
StructuredOutputManager.

The replay follows vLLM's scheduler and StructuredOutputManager: compile_grammar per
request; allocate_token_bitmask once for max_num_seqs * (1 + num_speculative_tokens) rows;
per step, validate_tokens of the drafts, then for each scheduled draft a row filled and the
draft accepted (accept_tokens of one token), the bonus row filled, one rollback of the
drafts at the end; then accept_tokens of the tokens the model kept; is_terminated and
reset.

The Llama-3 tokenizer.json comes from ``scripts/fetch-tokenizers.sh`` (directory from
``GRAMMASK_TOKENIZERS``, default ``~/.cache/grammask/tokenizers``); without it the tests
skip, saying so.
"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

import grammask
from grammask import vllm as gv

from _llama3 import LLAMA3, Encoder
from _llama3 import require_llama3 as _require_llama3

Options = gv.StructuredOutputOptions


@pytest.fixture(scope="module")
def vocab() -> "grammask.Vocabulary":
    return grammask.Vocabulary.from_tokenizer_json(str(_require_llama3()))


@pytest.fixture(scope="module")
def encode(vocab) -> Encoder:
    return Encoder(vocab, LLAMA3)


def vllm_config(num_speculative_tokens: int = 0, disable_any_whitespace: bool = False):
    """The parts of a VllmConfig a backend reads."""
    return SimpleNamespace(
        structured_outputs_config=SimpleNamespace(disable_any_whitespace=disable_any_whitespace),
        speculative_config=(
            SimpleNamespace(num_speculative_tokens=num_speculative_tokens)
            if num_speculative_tokens
            else None
        ),
    )


def backend_for(vocab, num_speculative_tokens: int = 0, **kw) -> gv.GrammaskBackend:
    # As vLLM's engine constructs every backend: (vllm_config, tokenizer=, vocab_size=).
    return gv.GrammaskBackend(
        vllm_config(num_speculative_tokens, **kw), tokenizer=vocab, vocab_size=vocab.vocab_size
    )


def allowed(bitmask, row: int, token: int) -> bool:
    words = bitmask[row]
    words = words if isinstance(words, np.ndarray) else words.numpy()
    return bool((int(words.view(np.uint32)[token >> 5]) >> (token & 31)) & 1)


def full_row(bitmask, row: int) -> None:
    # The manager's reset of a row it does not constrain: every bit set.
    if isinstance(bitmask, np.ndarray):
        bitmask[row] = -1
    else:
        bitmask[row].fill_(-1)


SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer", "minimum": 0},
        "tags": {"type": "array", "items": {"type": "string"}},
        "address": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
            "required": ["city"],
        },
    },
    "required": ["name", "age"],
}

DOCUMENT = {
    "name": "Ada Lovelace",
    "age": 36,
    "tags": ["mathematician", "writer", "née Byron"],
    "address": {"city": "London", "zip": "W1"},
}


# --- plain decoding -------------------------------------------------------------------


def test_json_schema_document_step_by_step(vocab, encode):
    backend = backend_for(vocab)
    text = json.dumps(DOCUMENT, ensure_ascii=False)
    ids = encode(text)
    eos = vocab.stop_token_ids[0]
    grammar = backend.compile_grammar(Options.JSON, json.dumps(SCHEMA))
    bitmask = backend.allocate_token_bitmask(4)
    assert tuple(bitmask.shape) == (4, (vocab.vocab_size + 31) // 32)
    row = 2
    for step, token in enumerate(ids):
        assert not grammar.is_terminated()
        grammar.fill_bitmask(bitmask, row)
        assert allowed(bitmask, row, token), f"step {step}: token {token} masked"
        assert not allowed(bitmask, row, eos), f"step {step}: EOS allowed inside the document"
        assert grammar.accept_tokens("req-0", [token])
    grammar.fill_bitmask(bitmask, row)
    assert allowed(bitmask, row, eos)
    assert grammar.accept_tokens("req-0", [eos])
    assert grammar.is_terminated()
    # Tokens after the end are ignored, as vLLM expects.
    assert grammar.accept_tokens("req-0", [eos])
    assert grammar.is_terminated()
    # The other rows were not touched.
    assert (np.asarray(bitmask[0]) == -1).all() and (np.asarray(bitmask[3]) == -1).all()

    grammar.reset()
    assert not grammar.is_terminated()
    grammar.fill_bitmask(bitmask, 0)
    assert allowed(bitmask, 0, ids[0]) and not allowed(bitmask, 0, eos)
    assert grammar.accept_tokens("req-0", ids)
    assert grammar.accept_tokens("req-0", [eos]) and grammar.is_terminated()


def test_refused_token_returns_false_and_changes_nothing(vocab, encode):
    backend = backend_for(vocab)
    grammar = backend.compile_grammar(Options.JSON, json.dumps(SCHEMA))
    wrong = encode("[")[0]
    assert not grammar.accept_tokens("req-0", [wrong])
    ids = encode(json.dumps(DOCUMENT))
    assert grammar.accept_tokens("req-0", ids[:1])
    eos = vocab.stop_token_ids[0]
    assert not grammar.accept_tokens("req-0", [eos])
    assert grammar.validate_tokens([eos] + ids[1:3]) == []
    assert grammar.validate_tokens(ids[1:3]) == ids[1:3]


def test_rows_of_many_requests_in_one_bitmask(vocab, encode):
    backend = backend_for(vocab)
    docs = ['{"a": 1}', '"text"', "[true, null]"]
    grammars = [backend.compile_grammar(Options.JSON, '{"type": ["object", "string", "array"]}')
                for _ in docs]
    ids = [encode(d) for d in docs]
    bitmask = backend.allocate_token_bitmask(8)
    eos = vocab.stop_token_ids[0]
    for step in range(max(len(i) for i in ids) + 1):
        for row, (g, toks) in enumerate(zip(grammars, ids)):
            if g.is_terminated():
                full_row(bitmask, row)
                continue
            g.fill_bitmask(bitmask, row)
            token = toks[step] if step < len(toks) else eos
            assert allowed(bitmask, row, token)
            assert g.accept_tokens(f"req-{row}", [token])
    assert all(g.is_terminated() for g in grammars)


# --- speculative decoding -------------------------------------------------------------


class ManagerReplay:
    """One request's share of what vLLM's scheduler and StructuredOutputManager do per
    step with speculative decoding."""

    def __init__(self, backend, grammar, num_spec: int, max_num_seqs: int = 2, slot: int = 1):
        self.grammar = grammar
        self.num_spec = num_spec
        # Allocated once, for every sequence and each of its draft and bonus positions.
        self.bitmask = backend.allocate_token_bitmask(max_num_seqs * (1 + num_spec))
        self.base = slot * (1 + num_spec)
        self.fills = 0
        self.rollbacks = []

    def validate(self, drafts: list) -> list:
        # The scheduler keeps the drafts' valid prefix (validate_tokens does not advance).
        return self.grammar.validate_tokens(drafts)

    def fill_rows(self, scheduled: list) -> int:
        """grammar_bitmask: a row filled and the draft accepted, per draft; the bonus
        row; one rollback of the drafts accepted. Returns the bonus row."""
        row, advanced, padded = self.base, 0, False
        for token in scheduled:
            if padded:
                full_row(self.bitmask, row)
            else:
                self._fill(row)
            if token == -1:
                padded = True
            elif not padded:
                if not self.grammar.is_terminated() and self.grammar.accept_tokens("req", [token]):
                    advanced += 1
                else:
                    raise AssertionError(f"draft {token} refused in the fill")
            row += 1
        if padded:
            full_row(self.bitmask, row)
        else:
            self._fill(row)
        if advanced:
            self.grammar.rollback(advanced)
            self.rollbacks.append(advanced)
        return row

    def _fill(self, row: int) -> None:
        if self.grammar.is_terminated():
            full_row(self.bitmask, row)
        else:
            self.grammar.fill_bitmask(self.bitmask, row)
            self.fills += 1

    def accept(self, tokens: list) -> bool:
        # update_from_output: the tokens the model kept (accepted drafts and the bonus).
        return self.grammar.accept_tokens("req", tokens)


@pytest.mark.parametrize("padded", [False, True], ids=["sync", "async-padded"])
def test_speculative_decoding_replay(vocab, encode, padded):
    num_spec = 3
    backend = backend_for(vocab, num_speculative_tokens=num_spec)
    text = json.dumps(DOCUMENT, ensure_ascii=False, indent=2)
    ids = encode(text)
    eos = vocab.stop_token_ids[0]
    truth = ids + [eos]
    grammar = backend.compile_grammar(Options.JSON, json.dumps(SCHEMA))
    replay = ManagerReplay(backend, grammar, num_spec)
    pos, step, rejected_drafts = 0, 0, 0
    while not grammar.is_terminated():
        proposal = truth[pos : pos + num_spec]
        # Every third step, the draft model errs at its last draft: EOS inside the
        # document (refused), or, at the end, a token after the EOS.
        wrong_at = None
        if step % 3 == 2 and len(proposal) == num_spec and proposal[-1] != eos:
            wrong_at = num_spec - 1
            proposal = proposal[:wrong_at] + [eos]
        proposal += [eos] * (num_spec - len(proposal))
        valid = replay.validate(proposal)
        expected = proposal[: wrong_at if wrong_at is not None else len(proposal)]
        if eos in expected:
            expected = expected[: expected.index(eos) + 1]
        assert valid == expected, f"step {step}"
        rejected_drafts += len(proposal) - len(valid)
        scheduled = valid + [-1] * (num_spec - len(valid)) if padded else valid
        bonus_row = replay.fill_rows(scheduled)
        assert bonus_row == replay.base + len(scheduled)
        for i, token in enumerate(valid):
            assert allowed(replay.bitmask, replay.base + i, token), f"step {step}, draft {i}"
        if not (valid and valid[-1] == eos):
            # The row after the valid drafts (the bonus row, or the first padding row)
            # allows the token that follows them.
            following = truth[pos + len(valid)]
            row = replay.base + len(valid)
            assert allowed(replay.bitmask, row, following), f"step {step}: bonus"
            for later in range(row + 1, bonus_row + 1):
                assert (np.asarray(replay.bitmask[later]) == -1).all()
        kept = valid + ([truth[pos + len(valid)]] if pos + len(valid) < len(truth) else [])
        if eos in kept:
            kept = kept[: kept.index(eos) + 1]
        assert replay.accept(kept), f"step {step}"
        pos += len(kept)
        step += 1
    assert pos == len(truth)
    assert rejected_drafts > 0
    # One rollback per step (each step had a valid draft), of the drafts it accepted.
    assert len(replay.rollbacks) == step and all(0 < n <= num_spec for n in replay.rollbacks)
    grammar.reset()
    assert not grammar.is_terminated()
    assert grammar.validate_tokens(truth[:num_spec]) == truth[:num_spec]


def test_validate_tokens_does_not_advance(vocab, encode):
    backend = backend_for(vocab, num_speculative_tokens=4)
    ids = encode('{"name": "x", "age": 3}')
    grammar = backend.compile_grammar(Options.JSON, json.dumps(SCHEMA))
    assert grammar.validate_tokens(ids[:4]) == ids[:4]
    assert grammar.validate_tokens(ids[:4]) == ids[:4]
    assert grammar.accept_tokens("r", ids[:2])
    assert grammar.validate_tokens(ids[2:6]) == ids[2:6]
    assert grammar.validate_tokens(ids[3:6]) == []


# --- request kinds --------------------------------------------------------------------


def drive(vocab, encode, grammar, text: str) -> None:
    """Feeds `text` through fill_bitmask/accept_tokens and ends it with EOS."""
    bitmask = grammask.allocate_token_bitmask(1, vocab.vocab_size)
    for token in encode(text):
        grammar.fill_bitmask(bitmask, 0)
        assert allowed(bitmask, 0, token)
        assert grammar.accept_tokens("r", [token])
    eos = vocab.stop_token_ids[0]
    grammar.fill_bitmask(bitmask, 0)
    assert allowed(bitmask, 0, eos)
    assert grammar.accept_tokens("r", [eos]) and grammar.is_terminated()


def test_json_object(vocab, encode):
    backend = backend_for(vocab)
    grammar = backend.compile_grammar(Options.JSON_OBJECT, "")
    drive(vocab, encode, grammar, '{"any": [1, {"x": null}]}')
    g = backend.compile_grammar(Options.JSON_OBJECT, "")
    assert not g.accept_tokens("r", encode("[1]")[:1])


def test_json_compact_whitespace(vocab, encode):
    backend = backend_for(vocab, disable_any_whitespace=True)
    g = backend.compile_grammar(Options.JSON, json.dumps(SCHEMA))
    assert g.accept_tokens("r", encode('{"name":"x","age":1}'))
    g = backend.compile_grammar(Options.JSON, json.dumps(SCHEMA))
    spaced = encode('{"name": "x"')
    assert len(g.validate_tokens(spaced)) < len(spaced)


def test_regex(vocab, encode):
    backend = backend_for(vocab)
    grammar = backend.compile_grammar(Options.REGEX, r"\d{3}-[a-z]+ (ok|ko)")
    drive(vocab, encode, grammar, "123-abc ok")


def test_grammar_gbnf_and_ebnf(vocab, encode):
    backend = backend_for(vocab)
    gbnf = 'root ::= greeting " " name\ngreeting ::= "hello" | "hi"\nname ::= [a-z]+\n'
    drive(vocab, encode, backend.compile_grammar(Options.GRAMMAR, gbnf), "hello world")
    # XGrammar's EBNF: dotted rule names.
    ebnf = 'root ::= list.items\nlist.items ::= "[" [0-9]+ ("," [0-9]+)* "]"\n'
    drive(vocab, encode, backend.compile_grammar(Options.GRAMMAR, ebnf), "[1,22,333]")


def test_choice(vocab, encode):
    backend = backend_for(vocab)
    spec = json.dumps(["red", "green", "blue green"])
    drive(vocab, encode, backend.compile_grammar(Options.CHOICE, spec), "blue green")
    g = backend.compile_grammar(Options.CHOICE, spec)
    assert g.accept_tokens("r", encode("green"))
    assert g.accept_tokens("r", [vocab.stop_token_ids[0]])


TOOL_TAG = {
    "type": "structural_tag",
    "format": {
        "type": "triggered_tags",
        "triggers": ["<tool_call>"],
        "tags": [
            {
                "type": "tag",
                "begin": '<tool_call>\n{"name": "get_weather", "arguments": ',
                "content": {"type": "json_schema", "json_schema": SCHEMA},
                "end": "}\n</tool_call>",
            }
        ],
    },
}


def test_structural_tags(vocab, encode):
    backend = backend_for(vocab)
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"name": "x", "age": 1}}\n</tool_call>'
    grammar = backend.compile_grammar(Options.STRUCTURAL_TAG, json.dumps(TOOL_TAG))
    drive(vocab, encode, grammar, "Let me look. " + call + " Done.")
    # vLLM's legacy form, as its front end passes it.
    legacy = {
        "structures": [{"begin": "<tool_call>", "schema": SCHEMA, "end": "</tool_call>"}],
        "triggers": ["<tool_call>"],
    }
    grammar = backend.compile_grammar(Options.STRUCTURAL_TAG, json.dumps(legacy))
    drive(vocab, encode, grammar, 'Text <tool_call>{"name": "x", "age": 1}</tool_call>')
    g = backend.compile_grammar(Options.STRUCTURAL_TAG, json.dumps(legacy))
    assert g.accept_tokens("r", encode("Text "))
    assert not g.accept_tokens("r", encode("<tool_call>oops"))


def test_unsupported_requests_raise_clear_errors(vocab):
    backend = backend_for(vocab)
    with pytest.raises(grammask.GrammarError, match="trigger"):
        backend.compile_grammar(Options.STRUCTURAL_TAG, '{"structures": [], "triggers": []}')
    with pytest.raises(gv.UnsupportedRequest, match="Lark"):
        backend.compile_grammar(Options.GRAMMAR, 'start: "a" | "b"\n')
    with pytest.raises(gv.UnsupportedRequest, match="choice"):
        backend.compile_grammar(Options.CHOICE, '{"not": "a list"}')
    with pytest.raises(grammask.GrammaskError):
        backend.compile_grammar(Options.JSON, '{"type": "object", "properties": 3}')
    with pytest.raises(grammask.GrammarError):
        backend.compile_grammar(Options.GRAMMAR, 'root ::= "a" undefined_rule\n')
    with pytest.raises(ValueError):
        backend.compile_grammar(Options.REGEX, "(unclosed")


def test_request_stop_tokens_replace_the_vocabulary_stops(vocab, encode):
    backend = backend_for(vocab, num_speculative_tokens=2)
    vocab_eos = vocab.stop_token_ids[0]
    newline = encode("\n")[0]  # an ordinary token as the request's stop token
    request_stop = sorted(set(vocab.special_token_ids) - set(vocab.stop_token_ids))[0]
    stops = {newline, request_stop}
    # The newline is text to the grammar, but the request's stop token.
    g = backend.compile_grammar(Options.REGEX, "[a-z\\n]+", stop_token_ids=stops)
    bitmask = backend.allocate_token_bitmask(1)
    g.fill_bitmask(bitmask, 0)
    assert not any(allowed(bitmask, 0, t) for t in stops | {vocab_eos})
    word = encode("abc")
    assert g.accept_tokens("r", word)
    g.fill_bitmask(bitmask, 0)
    assert all(allowed(bitmask, 0, t) for t in stops)
    assert not allowed(bitmask, 0, vocab_eos)
    assert not g.accept_tokens("r", [vocab_eos])
    assert g.validate_tokens([newline, newline]) == [newline]
    assert g.validate_tokens([vocab_eos]) == []
    assert g.accept_tokens("r", [newline]) and g.is_terminated()
    g.rollback(1)
    assert not g.is_terminated()
    assert g.accept_tokens("r", [request_stop]) and g.is_terminated()
    g.rollback(2)
    assert g.validate_tokens(word[-1:] + [request_stop]) == word[-1:] + [request_stop]
    g.reset()
    assert g.validate_tokens([newline]) == []


def test_torch_bitmask_when_torch_imports(vocab, encode):
    torch = pytest.importorskip("torch")
    backend = backend_for(vocab)
    bitmask = backend.allocate_token_bitmask(3)
    assert isinstance(bitmask, torch.Tensor) and bitmask.dtype == torch.int32
    g = backend.compile_grammar(Options.JSON, json.dumps(SCHEMA))
    g.fill_bitmask(bitmask, 1)
    token = encode('{"')[0]
    assert allowed(bitmask, 1, token)
    assert bool((bitmask[0] == -1).all()) and bool((bitmask[2] == -1).all())
    logits = torch.zeros(3, vocab.vocab_size)
    grammask.apply_token_bitmask_inplace(logits, bitmask)
    assert logits[1, token] == 0 and torch.isinf(logits[1]).sum() > 0
    assert not torch.isinf(logits[0]).any()


def test_module_without_vllm_has_the_same_surface():
    for name in ("compile_grammar", "allocate_token_bitmask", "destroy"):
        assert callable(getattr(gv.GrammaskBackend, name))
    for name in (
        "accept_tokens", "validate_tokens", "rollback", "fill_bitmask", "is_terminated", "reset"
    ):
        assert callable(getattr(gv.GrammaskGrammar, name))
    kinds = {"JSON", "JSON_OBJECT", "REGEX", "GRAMMAR", "CHOICE", "STRUCTURAL_TAG"}
    assert {o.name for o in Options} >= kinds


# --- against vLLM itself ----------------------------------------------------------------


def _import_vllm_types():
    if not gv.HAVE_VLLM:
        pytest.skip("vllm is not installed (pip install vllm)")
    from vllm.v1.structured_output import backend_types

    return backend_types


@pytest.fixture(scope="module")
def hf_tokenizer():
    _import_vllm_types()
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(str(_require_llama3().parent))


def test_subclasses_vllms_abstract_classes():
    bt = _import_vllm_types()
    assert issubclass(gv.GrammaskBackend, bt.StructuredOutputBackend)
    assert issubclass(gv.GrammaskGrammar, bt.StructuredOutputGrammar)
    assert gv.StructuredOutputOptions is bt.StructuredOutputOptions
    assert not getattr(gv.GrammaskBackend, "__abstractmethods__", None)
    assert not getattr(gv.GrammaskGrammar, "__abstractmethods__", None)


def test_constructed_like_vllms_engine(hf_tokenizer, encode):
    from vllm.config import DeviceConfig, VllmConfig

    # This machine has no GPU: the device is named (vLLM cannot infer it).
    config = VllmConfig(device_config=DeviceConfig(device="cpu"))
    vocab_size = 128256  # Llama-3's logits width
    backend = gv.GrammaskBackend(config, tokenizer=hf_tokenizer, vocab_size=vocab_size)
    assert backend.vocabulary.vocab_size == vocab_size
    assert hf_tokenizer.eos_token_id in backend.vocabulary.stop_token_ids
    grammar = backend.compile_grammar(
        Options.JSON, json.dumps(SCHEMA), stop_token_ids={hf_tokenizer.eos_token_id}
    )
    bitmask = backend.allocate_token_bitmask(2)
    text = json.dumps(DOCUMENT)
    for token in encode(text):
        grammar.fill_bitmask(bitmask, 1)
        assert allowed(bitmask, 1, token)
        assert grammar.accept_tokens("r", [token])
    assert grammar.accept_tokens("r", [hf_tokenizer.eos_token_id]) and grammar.is_terminated()
    backend.destroy()


def test_register_routes_vllms_xgrammar_backend_to_grammask(hf_tokenizer):
    _import_vllm_types()
    import vllm.v1.structured_output as manager_module
    from vllm.config import StructuredOutputsConfig
    from vllm.sampling_params import SamplingParams, StructuredOutputsParams

    gv.register()
    try:
        gv.register()  # idempotent
        assert manager_module.XgrammarBackend is gv.GrammaskBackend
        model_config = SimpleNamespace(is_diffusion=False)
        auto = StructuredOutputsConfig(backend="auto")
        params = SamplingParams(structured_outputs=StructuredOutputsParams(json=SCHEMA))
        params._validate_structured_outputs(model_config, auto, hf_tokenizer)
        assert params.structured_outputs._backend == "xgrammar"
        params = SamplingParams(structured_outputs=StructuredOutputsParams(choice=["a", "b"]))
        params._validate_structured_outputs(model_config, auto, hf_tokenizer)
        # Left a choice (grammask compiles choices itself).
        assert params.structured_outputs.choice == ["a", "b"]
        # What grammask cannot serve is refused, and "auto" falls back to guidance.
        params = SamplingParams(structured_outputs=StructuredOutputsParams(grammar='start: "a"'))
        params._validate_structured_outputs(model_config, auto, hf_tokenizer)
        assert params.structured_outputs._backend == "guidance"
        from vllm.exceptions import VLLMValidationError

        strict = StructuredOutputsConfig(backend="xgrammar")
        params = SamplingParams(
            structured_outputs=StructuredOutputsParams(json={"type": "object", "properties": 3})
        )
        with pytest.raises(VLLMValidationError, match="grammask"):
            params._validate_structured_outputs(model_config, strict, hf_tokenizer)
    finally:
        gv.unregister()
    assert manager_module.XgrammarBackend is not gv.GrammaskBackend
    assert not gv.is_registered()


@pytest.fixture(scope="module")
def engine_config(tmp_path_factory):
    """A VllmConfig as the engine has it, for a one-layer Llama with the Llama-3
    tokenizer (no weights are needed to build the config), with ngram speculative
    decoding of 3 tokens, on the CPU."""
    _import_vllm_types()
    from vllm.config import DeviceConfig, ModelConfig, ParallelConfig, SpeculativeConfig, VllmConfig

    model_dir = tmp_path_factory.mktemp("tiny-llama3")
    source = _require_llama3().parent
    for name in ("tokenizer.json", "tokenizer_config.json"):
        if (source / name).is_file():
            (model_dir / name).write_bytes((source / name).read_bytes())
    (model_dir / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_attention_heads": 2, "num_key_value_heads": 2,
        "num_hidden_layers": 1, "vocab_size": 128256, "max_position_embeddings": 2048,
        "bos_token_id": 128000, "eos_token_id": 128001, "torch_dtype": "float32",
        "rms_norm_eps": 1e-5,
    }))
    model_config = ModelConfig(model=str(model_dir), tokenizer=str(model_dir))
    speculative = SpeculativeConfig(
        method="ngram", num_speculative_tokens=3, prompt_lookup_max=3, prompt_lookup_min=1,
        target_model_config=model_config, target_parallel_config=ParallelConfig(),
    )
    return VllmConfig(
        model_config=model_config,
        device_config=DeviceConfig(device="cpu"),
        speculative_config=speculative,
    )


def test_vllms_own_structured_output_manager(engine_config, encode):
    """vLLM's StructuredOutputManager, with grammask registered in the place of its
    XGrammar backend, runs two requests with speculative decoding: its own
    validate_tokens, grammar_bitmask (a row filled and a draft accepted per draft, the
    bonus row, one rollback) and accept_tokens, until both terminate."""
    import time

    from vllm.sampling_params import SamplingParams, StructuredOutputsParams
    from vllm.v1.request import Request
    from vllm.v1.structured_output import StructuredOutputManager

    k = engine_config.num_speculative_tokens
    assert k == 3
    gv.register()
    manager = None
    try:
        manager = StructuredOutputManager(engine_config)
        tokenizer = manager.tokenizer
        eos = tokenizer.eos_token_id
        constraints = {
            "json": (StructuredOutputsParams(json=SCHEMA), json.dumps(DOCUMENT, indent=1)),
            "choice": (StructuredOutputsParams(choice=["yes", "no", "maybe not"]), "maybe not"),
            "regex": (StructuredOutputsParams(regex=r"[A-Z][a-z]+ \d+!"), "Step 42!"),
        }
        requests, truths = {}, {}
        for rid, (params, text) in constraints.items():
            sp = SamplingParams(structured_outputs=params, max_tokens=500)
            # The front end's check: grammask's, after register().
            sp._validate_structured_outputs(
                engine_config.model_config, engine_config.structured_outputs_config, tokenizer
            )
            assert sp.structured_outputs._backend == "xgrammar"
            requests[rid] = Request(rid, [1, 2, 3], sp, None)
            manager.grammar_init(requests[rid])
            truths[rid] = encode(text) + [eos]
        deadline = time.monotonic() + 120
        while not all(r.structured_output_request.is_grammar_ready for r in requests.values()):
            assert time.monotonic() < deadline, "grammar compilation timed out"
            time.sleep(0.01)
        assert isinstance(manager.backend, gv.GrammaskBackend)
        grammars = {rid: r.structured_output_request.grammar for rid, r in requests.items()}
        assert all(isinstance(g, gv.GrammaskGrammar) for g in grammars.values())

        pos = dict.fromkeys(requests, 0)
        step = 0
        while True:
            running = [rid for rid in requests if not grammars[rid].is_terminated()]
            if not running:
                break
            assert step < 200
            scheduled = {}
            for rid in running:
                truth = truths[rid]
                drafts = truth[pos[rid] : pos[rid] + k]
                if step % 3 == 1 and len(drafts) == k and eos not in drafts:
                    drafts = drafts[:-1] + [eos]  # a draft the grammar refuses
                drafts += [eos] * (k - len(drafts))
                # Scheduler.update_draft_token_ids: only the drafts' valid prefix is kept.
                scheduled[rid] = manager.validate_tokens(requests[rid], drafts)
                assert truth[pos[rid] : pos[rid] + len(scheduled[rid])] == scheduled[rid]
            bitmask = manager.grammar_bitmask(requests, running, scheduled)
            assert bitmask.shape == (len(running) * (k + 1), (128256 + 31) // 32)
            for slot, rid in enumerate(running):
                valid = scheduled[rid]
                for i in range(len(valid) + 1):
                    if pos[rid] + i < len(truths[rid]):
                        token = truths[rid][pos[rid] + i]
                        row = slot * (k + 1) + i
                        assert allowed(bitmask, row, token), f"{rid} step {step} row {i}"
                # update_from_output: the model kept the valid drafts and sampled one more.
                kept = valid + truths[rid][pos[rid] + len(valid) : pos[rid] + len(valid) + 1]
                if eos in kept:
                    kept = kept[: kept.index(eos) + 1]
                assert manager.accept_tokens(requests[rid], kept), f"{rid} step {step}"
                pos[rid] += len(kept)
            step += 1
        assert all(pos[rid] == len(truths[rid]) for rid in requests)
        # A terminated request's rows are left unconstrained by the manager.
        rid = "choice"
        bitmask = manager.grammar_bitmask(requests, [rid], {rid: []})
        assert (bitmask[0] == -1).all()
    finally:
        if manager is not None:
            manager.clear_backend()
        gv.unregister()


def test_plugin_registers_only_when_asked(monkeypatch):
    _import_vllm_types()
    monkeypatch.delenv("GRAMMASK_VLLM", raising=False)
    gv.plugin()
    assert not gv.is_registered()
    monkeypatch.setenv("GRAMMASK_VLLM", "1")
    try:
        gv.plugin()
        assert gv.is_registered()
    finally:
        gv.unregister()


def test_package_declares_the_vllm_plugin():
    """vLLM loads `vllm.general_plugins` entry points in each of its processes; the
    package's names grammask.vllm:plugin."""
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="vllm.general_plugins") if ep.name == "grammask"]
    assert [ep.value for ep in found] == ["grammask.vllm:plugin"]

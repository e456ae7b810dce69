"""grammask.sglang: the calls SGLang's scheduler makes on a grammar backend, replayed on the
Llama-3 vocabulary, and (where SGLang imports) against SGLang's own classes and registry.

The replay follows SGLang: GrammarManager asks the backend for a key's grammar
(get_cached_or_future_value: compiled on the backend's thread pool, then cached as a
copy, and a later request of the same key gets a fresh copy); per decode step,
SamplingBatchInfo allocates the batch mask, fills the rows of unfinished requests in one
fill_vocab_mask_batched call, moves it and applies it to the logits; the result processor
accepts each sampled token (accept_token, is_terminated) and sets `finished`. With EAGLE
speculative decoding, the draft tree is walked depth first: a draft accepted when its
parent's row allows it, its row filled, its children visited, one rollback(1) after.

The Llama-3 tokenizer.json comes from ``scripts/fetch-tokenizers.sh`` (directory from
``GRAMMASK_TOKENIZERS``, default ``~/.cache/grammask/tokenizers``); without it the tests
skip, saying so.
"""

from __future__ import annotations

import json
from collections import namedtuple
from types import SimpleNamespace

import numpy as np
import pytest

import grammask
from grammask import sglang as gs
from _llama3 import LLAMA3, Encoder
from _llama3 import require_llama3 as _require_llama3


@pytest.fixture(scope="module")
def vocab() -> "grammask.Vocabulary":
    return grammask.Vocabulary.from_tokenizer_json(str(_require_llama3()))


@pytest.fixture(scope="module")
def encode(vocab) -> Encoder:
    return Encoder(vocab, LLAMA3)


@pytest.fixture(scope="module")
def backend(vocab) -> gs.GrammaskGrammarBackend:
    return gs.GrammaskGrammarBackend(vocab, vocab.vocab_size)


if gs.HAVE_SGLANG:
    from sglang.srt.constrained.base_grammar_backend import GrammarMask, GrammarRow
else:
    GrammarRow = namedtuple("GrammarRow", ["row", "grammar"])

    class GrammarMask(namedtuple("GrammarMask", ["grammar", "vocab_mask"])):
        def apply(self, logits) -> None:
            self.grammar.apply_vocab_mask(logits=logits, vocab_mask=self.vocab_mask)


def words_of(mask, row: int) -> np.ndarray:
    r = mask[row]
    r = r if isinstance(r, np.ndarray) else r.numpy()
    return r.view(np.uint32)


def allowed(mask, row: int, token: int) -> bool:
    return bool((int(words_of(mask, row)[token >> 5]) >> (token & 31)) & 1)


def compile_key(backend, key):
    """GrammarManager: the key's grammar, compiled on the backend's pool (or a copy of
    the cached one); the compiled one is cached as a copy."""
    value, hit = backend.get_cached_or_future_value(key, False)
    if hit:
        return value, True
    grammar = value.result(timeout=120)
    backend.set_cache(key, grammar.copy())
    return grammar, False


SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "title": {"type": "string", "maxLength": 40},
        "done": {"type": "boolean"},
        "labels": {"type": "array", "items": {"enum": ["bug", "feature", "docs"]}},
    },
    "required": ["id", "title", "done"],
    "additionalProperties": False,
}
DOCUMENT = {
    "id": 24,
    "title": "Python package — vLLM & SGLang",
    "done": False,
    "labels": ["feature"],
}


def _logits(rows: int, vocab_size: int):
    try:
        import torch

        return torch.zeros(rows, vocab_size)
    except ImportError:
        return np.zeros((rows, vocab_size), dtype=np.float32)


def _is_inf(x) -> bool:
    return bool(np.isneginf(np.asarray(x, dtype=np.float32)))


def test_decode_batch_replay(vocab, encode, backend):
    eos = vocab.stop_token_ids[0]
    requests = [
        (("json", json.dumps(SCHEMA)), json.dumps(DOCUMENT, ensure_ascii=False)),
        (("regex", r"(\d{1,3}\.){3}\d{1,3}"), "192.168.0.17"),
        (("ebnf", 'root ::= "SELECT " cols " FROM " [a-z]+\ncols ::= [a-z]+ (", " [a-z]+)*\n'),
         "SELECT id, name FROM users"),
        (None, "no grammar here"),
        (("json", "$$ANY$$"), '[1, {"a": "b"}, null]'),
    ]
    grammars, truths = [], []
    key_types = [key[0] if key else None for key, _ in requests]
    for key, text in requests:
        grammars.append(compile_key(backend, key)[0] if key is not None else None)
        truths.append(encode(text) + [eos])
    assert all(not isinstance(g, gs.InvalidGrammarObject) for g in grammars)
    positions = [0] * len(requests)
    first = next(g for g in grammars if g)
    step = 0
    while any(g is not None and not g.finished for g in grammars):
        # SamplingBatchInfo.update_regex_vocab_mask
        vocab_mask = first.allocate_vocab_mask(
            vocab_size=vocab.vocab_size, batch_size=len(grammars), device="cpu"
        )
        entries = [
            GrammarRow(row=row, grammar=g)
            for row, g in enumerate(grammars)
            if g and not g.finished and not g.is_terminated()
        ]
        first.fill_vocab_mask_batched(entries, vocab_mask)
        vocab_mask = first.move_vocab_mask(vocab_mask, "cpu")
        logits = _logits(len(grammars), vocab.vocab_size)
        GrammarMask(first, vocab_mask).apply(logits)
        for row, g in enumerate(grammars):
            if g is None or g.finished:
                assert (words_of(vocab_mask, row) == 0xFFFFFFFF).all()
                continue
            token = truths[row][positions[row]]
            assert allowed(vocab_mask, row, token), f"step {step}, row {row}"
            assert not _is_inf(logits[row][token])
            if token != eos and key_types[row] == "json":
                # A JSON document cannot end before its last token.
                assert _is_inf(logits[row][eos]), f"step {step}, row {row}: EOS not masked"
            # The result processor: accept, then `finished` from the request's state.
            g.accept_token(token)
            positions[row] += 1
            g.finished = g.is_terminated()
        step += 1
    for row, g in enumerate(grammars):
        if g is not None:
            assert g.is_terminated() and positions[row] == len(truths[row])


def test_cache_hit_is_a_fresh_copy(vocab, encode, backend):
    key = ("json", json.dumps(SCHEMA))
    g1, _ = compile_key(backend, key)
    ids = encode(json.dumps(DOCUMENT))
    for t in ids[:5]:
        g1.accept_token(t)
    g2, hit = compile_key(backend, key)
    assert hit and g2 is not g1
    # The copy starts at the beginning: the first token again, not the sixth.
    g2.accept_token(ids[0])
    with pytest.raises(ValueError):
        g2.accept_token(ids[0])


def test_refusal_raises_and_termination_ignores(vocab, encode, backend):
    g = backend.dispatch_regex("ab+")
    eos = vocab.stop_token_ids[0]
    with pytest.raises(ValueError, match="not allowed"):
        g.accept_token(eos)
    for t in encode("abbb"):
        g.accept_token(t)
    g.accept_token(eos)
    assert g.is_terminated()
    g.accept_token(encode("b")[0])  # ignored after the end, as SGLang expects
    assert g.is_terminated()
    g.rollback(1)
    assert not g.is_terminated()


def test_eagle_draft_tree_replay(vocab, encode, backend):
    """spec_utils.traverse_tree over a draft tree: node 0 is the verified token; a node is
    accepted when its parent's row allows it; accepted nodes fill their row; each is
    rolled back after its subtree."""
    eos = vocab.stop_token_ids[0]
    ids = encode(json.dumps(DOCUMENT))
    g, _ = compile_key(backend, ("json", json.dumps(SCHEMA)))
    for t in ids[:3]:
        g.accept_token(t)
    #        0 (verified)
    #       / \
    #      1   4 (EOS: wrong)
    #     / \
    #    2   5 (EOS: wrong)
    #    |
    #    3
    draft = [ids[2], ids[3], ids[4], ids[5], eos, eos]
    next_token = [1, 2, 3, -1, -1, -1]
    next_sibling = [-1, 4, 5, -1, -1, -1]
    n = len(draft)
    batch_mask = g.allocate_vocab_mask(vocab.vocab_size, 2 * n, "cpu")
    mask = batch_mask[n : 2 * n]  # this request's rows: a view into the batch's mask
    accepted, before = [], g.matcher.validate_tokens(ids[3:])

    def dfs(curr: int, parent: int) -> None:
        ok = curr == 0 or allowed(mask, parent, draft[curr])
        if ok:
            if curr != 0:
                g.accept_token(draft[curr])
                accepted.append(curr)
            if not g.is_terminated():
                g.fill_vocab_mask(mask, curr)
                if next_token[curr] != -1:
                    dfs(next_token[curr], curr)
            if curr != 0:
                g.rollback(1)
        if next_sibling[curr] != -1:
            dfs(next_sibling[curr], parent)

    dfs(0, -1)
    assert accepted == [1, 2, 3]
    for node in (0, 1, 2, 3):
        assert not (words_of(mask, node) == 0xFFFFFFFF).all(), f"row {node} not filled"
    for node in (4, 5):
        assert (words_of(mask, node) == 0xFFFFFFFF).all(), f"row {node} filled"
    assert (np.asarray(batch_mask[:n]) == -1).all()
    assert allowed(mask, 0, ids[3]) and allowed(mask, 2, ids[5]) and allowed(mask, 3, ids[6])
    assert not allowed(mask, 0, eos)
    # The tree walk left the state as it was.
    assert g.matcher.validate_tokens(ids[3:]) == before
    # Verification keeps nodes 1..3 and a bonus token.
    for t in ids[3:7]:
        g.accept_token(t)


def test_jump_forward_and_retokenize(vocab, encode, backend):
    g = backend.dispatch_regex(r"hello (world|there)")
    helper = g.try_jump_forward(None)
    assert helper is not None
    text, state = g.jump_forward_str_state(helper)
    assert text == "hello " and state == -1
    new_ids = encode(text)
    g.jump_and_retokenize([], new_ids, state)
    assert g.try_jump_forward(None) is None  # world or there
    old = new_ids + encode("wor")
    for t in encode("wor"):
        g.accept_token(t)
    # SGLang re-tokenized the output: the common prefix stays, the rest is replaced.
    new = encode("hello world")
    g.jump_and_retokenize(old, new, -1)
    g.accept_token(vocab.stop_token_ids[0])
    assert g.is_terminated()


def test_errors_are_invalid_grammar_objects(backend):
    bad = backend.dispatch_json('{"type": "object", "properties": 7}')
    assert isinstance(bad, gs.InvalidGrammarObject) and "grammask" in bad.error_message
    assert isinstance(backend.dispatch_json("{not json"), gs.InvalidGrammarObject)
    assert isinstance(backend.dispatch_ebnf('root ::= "a" missing'), gs.InvalidGrammarObject)
    assert isinstance(backend.dispatch_regex("(a"), gs.InvalidGrammarObject)
    tag = backend.dispatch_structural_tag('{"structures": [], "triggers": []}')
    assert isinstance(tag, gs.InvalidGrammarObject) and "trigger" in tag.error_message
    # Through the key dispatch too.
    value, hit = backend.get_cached_or_future_value(("structural_tag", "{}"), False)
    assert not hit and isinstance(value.result(timeout=60), gs.InvalidGrammarObject)


def test_structural_tag_requests(backend, vocab, encode):
    legacy = {
        "structures": [{"begin": "<tool_call>", "schema": SCHEMA, "end": "</tool_call>"}],
        "triggers": ["<tool_call>"],
    }
    value, hit = backend.get_cached_or_future_value(("structural_tag", json.dumps(legacy)), False)
    grammar = value.result(timeout=60)
    assert not hit and not isinstance(grammar, gs.InvalidGrammarObject), grammar
    call = "<tool_call>" + json.dumps(DOCUMENT) + "</tool_call>"
    for token in encode("Sure. " + call):
        grammar.accept_token(token)
    grammar.accept_token(vocab.stop_token_ids[0])
    assert grammar.is_terminated()
    fresh = grammar.copy()
    with pytest.raises(ValueError, match="not allowed"):
        for token in encode("<tool_call>oops"):
            fresh.accept_token(token)


def test_reset_vocab_mask_and_compact_json(vocab, encode):
    backend = gs.GrammaskGrammarBackend(vocab, vocab.vocab_size, any_whitespace=False)
    g = backend.dispatch_json(json.dumps(SCHEMA))
    mask = g.allocate_vocab_mask(vocab.vocab_size, 2, "cpu")
    g.fill_vocab_mask(mask, 1)
    assert not (words_of(mask, 1) == 0xFFFFFFFF).all()
    g.reset_vocab_mask(mask)
    assert (words_of(mask, 1) == 0xFFFFFFFF).all()
    for t in encode('{"id":1,"title":"t","done":true}'):
        g.accept_token(t)
    g.accept_token(vocab.stop_token_ids[0])
    assert g.is_terminated()
    g2 = backend.dispatch_json(json.dumps(SCHEMA))
    spaced = encode('{"id": 1')
    assert g2.matcher.validate_tokens(spaced) < len(spaced)
    backend.reset()
    assert backend.cache == {}


# --- against SGLang itself --------------------------------------------------------------


def _require_sglang():
    if not gs.HAVE_SGLANG:
        pytest.skip("sglang is not installed (pip install sglang)")


def test_subclasses_sglangs_classes():
    _require_sglang()
    from sglang.srt.constrained import base_grammar_backend as base

    assert issubclass(gs.GrammaskGrammarBackend, base.BaseGrammarBackend)
    assert issubclass(gs.GrammaskGrammarObject, base.BaseGrammarObject)
    assert gs.InvalidGrammarObject is base.InvalidGrammarObject


def test_registered_backend_built_like_sglangs_scheduler(encode):
    _require_sglang()
    transformers = pytest.importorskip("transformers")
    from sglang.srt.constrained import base_grammar_backend as base

    gs.register()
    gs.register()  # idempotent
    assert base.GRAMMAR_BACKEND_REGISTRY["grammask"] is gs.create_backend
    try:
        from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    except ImportError:
        from sglang.srt.server_args import GRAMMAR_BACKEND_CHOICES
    assert GRAMMAR_BACKEND_CHOICES.count("grammask") == 1

    tokenizer = transformers.AutoTokenizer.from_pretrained(str(_require_llama3().parent))
    eot = tokenizer.convert_tokens_to_ids("<|eot_id|>")
    eos_ids = {tokenizer.eos_token_id, eot}
    server_args = SimpleNamespace(constrained_json_disable_any_whitespace=False)
    # create_grammar_backend calls the registered constructor so:
    backend = base.GRAMMAR_BACKEND_REGISTRY["grammask"](server_args, tokenizer, 128256, eos_ids)
    assert isinstance(backend, base.BaseGrammarBackend)
    assert set(backend.vocabulary.stop_token_ids) == eos_ids
    grammar, _ = compile_key(backend, ("json", json.dumps(SCHEMA)))
    assert isinstance(grammar, base.BaseGrammarObject)
    vocab_mask = grammar.allocate_vocab_mask(vocab_size=128256, batch_size=1, device="cpu")
    for t in encode(json.dumps(DOCUMENT, ensure_ascii=False)):
        grammar.fill_vocab_mask_batched([GrammarRow(0, grammar)], vocab_mask)
        assert allowed(vocab_mask, 0, t)
        grammar.accept_token(t)
    grammar.fill_vocab_mask(vocab_mask, 0)
    assert allowed(vocab_mask, 0, eot) and allowed(vocab_mask, 0, tokenizer.eos_token_id)
    grammar.accept_token(eot)
    assert grammar.is_terminated()


def test_package_declares_the_sglang_plugin():
    """SGLang loads `sglang.srt.plugins` entry points in each of its processes (its
    scheduler is spawned); the package's names grammask.sglang:plugin."""
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="sglang.srt.plugins") if ep.name == "grammask"]
    assert [ep.value for ep in found] == ["grammask.sglang:plugin"]


def test_sglangs_create_grammar_backend_picks_grammask():
    """SGLang's own factory, with `--grammar-backend grammask` in its server arguments,
    builds grammask's backend."""
    _require_sglang()
    transformers = pytest.importorskip("transformers")
    from sglang.srt.constrained.base_grammar_backend import create_grammar_backend
    from sglang.srt.runtime_context import get_context

    context = get_context()
    if not hasattr(context, "override_server_args"):
        pytest.skip("this SGLang has no RuntimeContext.override_server_args")
    gs.register()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(_require_llama3().parent))
    with context.override_server_args(grammar_backend="grammask") as server_args:
        backend = create_grammar_backend(server_args, tokenizer, 128256, {128001, 128009})
    assert isinstance(backend, gs.GrammaskGrammarBackend)
    assert backend.vocabulary.stop_token_ids == [128001, 128009]
    assert backend.whitespace == "flexible"


def test_reasoning_parser_wraps_grammask_like_sglangs_backends(encode):
    """With `--reasoning-parser`, SGLang wraps its own backends so that the grammar
    applies after the reasoning ends; grammask's constructor does the same."""
    _require_sglang()
    transformers = pytest.importorskip("transformers")
    from sglang.srt.constrained.reasoner_grammar_backend import ReasonerGrammarBackend
    from sglang.srt.runtime_context import get_context

    context = get_context()
    if not hasattr(context, "override_server_args"):
        pytest.skip("this SGLang has no RuntimeContext.override_server_args")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(_require_llama3().parent))
    with context.override_server_args(
        grammar_backend="grammask", reasoning_parser="deepseek-r1"
    ) as server_args:
        backend = gs.create_backend(server_args, tokenizer, 128256, {128001})
    assert isinstance(backend, ReasonerGrammarBackend)
    assert isinstance(backend.grammar_backend, gs.GrammaskGrammarBackend)
    grammar, _ = compile_key_reasoning(backend, ("json", json.dumps(SCHEMA)))
    thinking = encode("Let me see: id 24, not done") + list(backend.think_end_ids)
    answer = encode(json.dumps(DOCUMENT, ensure_ascii=False))
    mask = grammar.allocate_vocab_mask(128256, 1, "cpu")
    for i, token in enumerate(thinking + answer + [128001]):
        gs.GrammaskGrammarObject.reset_vocab_mask(mask)
        grammar.fill_vocab_mask(mask, 0)
        unconstrained = bool((words_of(mask, 0) == 0xFFFFFFFF).all())
        assert unconstrained == (i < len(thinking)), f"token {i}"
        assert allowed(mask, 0, token), f"token {i}"
        grammar.accept_token(token)
    assert grammar.is_terminated()


def compile_key_reasoning(backend, key):
    value, hit = backend.get_cached_or_future_value(key, True)
    return (value if hit else value.result(timeout=120)), hit


def test_token_filter_for_strict_thinking(vocab):
    """set_token_filter (SGLang's strict thinking) allows or forbids listed tokens in a
    row, as SGLang's own torch version does."""
    rng = np.random.default_rng(7)
    words = (vocab.vocab_size + 31) // 32
    cases = [(list(rng.integers(0, vocab.vocab_size, 6)) + [5, 5, 37], allow, reset)
             for allow in (True, False) for reset in (True, False)]
    reference = None
    if gs.HAVE_SGLANG:
        from sglang.srt.constrained.torch_ops.token_filter_torch_ops import set_token_filter_torch

        reference = set_token_filter_torch
    for ids, allow, reset in cases:
        start = rng.integers(-(2**31), 2**31 - 1, size=(3, words), dtype=np.int64).astype(np.int32)
        ours = start.copy()
        gs.GrammaskGrammarBackend.set_token_filter(
            ours, ids, 1, is_allowed=allow, reset_vocab_mask=reset
        )
        assert (ours[0] == start[0]).all() and (ours[2] == start[2]).all()
        for t in ids:
            assert allowed(ours, 1, int(t)) == allow
        if reset:
            others = sorted(set(range(vocab.vocab_size)) - {int(t) for t in ids})[:50]
            assert all(allowed(ours, 1, t) != allow for t in others)
        if reference is not None:
            import torch

            theirs = torch.from_numpy(start.copy())
            reference(theirs, [int(t) for t in ids], 1, is_allowed=allow, reset_vocab_mask=reset)
            assert (theirs.numpy() == ours).all()

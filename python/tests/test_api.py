"""The Python API over real vocabularies: constructors, compile formats, errors with
their locations, matcher calls (refusal changes nothing), pickling, bitmask buffers."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

import grammask


@pytest.fixture(scope="module")
def o200k() -> grammask.Vocabulary:
    return grammask.Vocabulary.builtin("o200k")


@pytest.fixture(scope="module")
def compiler(o200k: grammask.Vocabulary) -> grammask.Compiler:
    return grammask.Compiler(o200k)


def allowed_ids(bitmask_row: np.ndarray, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(bitmask_row.view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


def test_import_needs_neither_torch_nor_transformers() -> None:
    import subprocess
    import sys

    code = "import sys, grammask; assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_vocabulary_properties(o200k: grammask.Vocabulary) -> None:
    assert o200k.vocab_size >= len(o200k) == 200_000
    assert o200k.stop_token_ids == [199_999]
    hello = next(i for i in range(1000) if o200k.token_bytes(i) == b"{")
    assert o200k.token_bytes(hello) == b"{"
    assert any(o200k.token_bytes(i) is None for i in range(199_990, o200k.vocab_size))
    again = pickle.loads(pickle.dumps(o200k))
    assert again.vocab_size == o200k.vocab_size and again.stop_token_ids == o200k.stop_token_ids
    assert all(again.token_bytes(i) == o200k.token_bytes(i) for i in range(0, 200_000, 997))


def test_from_tokens_and_padding() -> None:
    tokens = [b"a", b"b", b"ab", b"</s>", b"\xff"]
    vocab = grammask.Vocabulary.from_tokens(tokens, [3], vocab_size=40, special_token_ids=[3], byte_token_ids=[4])
    assert vocab.vocab_size == 40 and vocab.special_token_ids == [3]
    compiled = grammask.Compiler(vocab).compile_regex("(ab)+")
    m = grammask.Matcher(compiled)
    mask = grammask.allocate_token_bitmask(1, vocab.vocab_size)
    assert mask.shape == (1, 2) and mask.dtype == np.int32
    assert m.fill_next_token_bitmask(mask) is True
    assert list(allowed_ids(mask[0], 40)) == [0, 2]
    assert m.accept_token(2) and m.can_terminate()
    m.fill_next_token_bitmask(mask)
    assert list(allowed_ids(mask[0], 40)) == [0, 2, 3]
    assert not m.accept_token(39)  # padding: refused, nothing changes
    assert not m.accept_token(-1) and not m.accept_token(10**12)
    assert m.accept_token(3) and m.is_terminated()
    with pytest.raises(ValueError):
        grammask.Vocabulary.from_tokens(tokens, [9])


def test_matcher_calls(compiler: grammask.Compiler, o200k: grammask.Vocabulary) -> None:
    compiled = compiler.compile_json_schema(
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    )
    m = grammask.Matcher(compiled, max_rollback=8)
    assert m.max_rollback == 8
    assert m.find_jump_forward_string() == "{"
    assert m.accept_string('{"name"')
    assert m.find_jump_forward_string() == ""  # ws allowed before ':'
    before = m.rollback_steps
    assert not m.accept_string('{"x"')  # refused: nothing changes
    assert m.rollback_steps == before
    ids = [t for t in range(o200k.vocab_size) if o200k.token_bytes(t) in (b':"', b"ab", b'"}')]
    by_bytes = {o200k.token_bytes(t): t for t in ids}
    seq = [by_bytes[b':"'], by_bytes[b"ab"], by_bytes[b'"}']]
    assert m.validate_tokens(seq + [by_bytes[b"ab"]]) == 3
    assert m.rollback_steps == before  # validate changes nothing
    assert not m.accept_tokens([seq[0], seq[1], seq[1], 199_999])  # all or nothing
    assert m.rollback_steps == before
    assert m.accept_tokens(seq) and m.can_terminate()
    fork = m.fork()
    assert fork.accept_token(199_999) and fork.is_terminated() and not m.is_terminated()
    m.rollback(3)
    assert not m.can_terminate() and m.accept_tokens(seq)
    with pytest.raises(ValueError):
        m.rollback(100)
    m.reset()
    assert m.rollback_steps == 0 and m.accept_string("{")


def test_jump_forward(compiler: grammask.Compiler) -> None:
    m = grammask.Matcher(compiler.compile_gbnf('root ::= "{\\"id\\": " [0-9]+ "}"'))
    assert m.find_jump_forward_string() == '{"id": '
    assert m.accept_string('{"id": 7')
    assert m.find_jump_forward_string() == ""


def test_formats_and_roots(compiler: grammask.Compiler) -> None:
    g = compiler.compile_gbnf('start ::= "x" tail\ntail ::= "y"', root="start")
    assert grammask.Matcher(g).accept_string("xy")
    e = compiler.compile_ebnf('root ::= "a" b\nb ::= [0-9]+ (= "")')
    assert grammask.Matcher(e).accept_string("a12")
    c = compiler.compile_choice(["yes", "no", "maybe"])
    m = grammask.Matcher(c)
    assert m.accept_string("no") and m.can_terminate()
    assert not grammask.Matcher(c).accept_string("nope")
    j = grammask.Matcher(compiler.compile_builtin_json())
    assert j.accept_string('{"a": [1, true, null]}') and j.can_terminate()
    with pytest.raises(ValueError):
        compiler.compile_choice([])


def test_schema_inputs(compiler: grammask.Compiler) -> None:
    pydantic = pytest.importorskip("pydantic")

    class Person(pydantic.BaseModel):
        name: str
        age: int

    for schema in (Person, Person.model_json_schema(), json.dumps(Person.model_json_schema())):
        m = grammask.Matcher(compiler.compile_json_schema(schema))
        assert m.accept_string('{"name": "Ada", "age": 36}') and m.can_terminate()
    any_order = compiler.compile_json_schema(Person, any_order=True, whitespace="compact")
    m = grammask.Matcher(any_order)
    assert m.accept_string('{"age":36,"name":"Ada"}') and m.can_terminate()
    assert not grammask.Matcher(any_order).accept_string('{"age": 36')
    with pytest.raises(ValueError, match="whitespace"):
        compiler.compile_json_schema(Person, whitespace="loose")
    date = {"type": "string", "format": "date"}
    assert not grammask.Matcher(compiler.compile_json_schema(date)).accept_string('"2024-13-01"')
    assert grammask.Matcher(compiler.compile_json_schema(date, format_mode="annotation")).accept_string('"x"')
    strict = compiler.compile_json_schema({"type": "object", "properties": {"a": {"type": "integer"}}}, strict=True)
    assert not grammask.Matcher(strict).accept_string('{"a": 1, "b"')


def test_grammar_error_has_location(compiler: grammask.Compiler) -> None:
    with pytest.raises(grammask.GrammarError) as info:
        compiler.compile_gbnf('root ::= "a" item\nitem ::= "b" | undefined-rule\n')
    err = info.value
    assert (err.line, err.column) == (2, 16)
    assert "<gbnf>:2:16: error:" in str(err) and "^" in err.rendered
    assert isinstance(err, ValueError) and isinstance(err, grammask.GrammaskError)


def test_schema_unsupported_names_keyword_and_pointer(compiler: grammask.Compiler) -> None:
    schema = {"type": "object", "properties": {"a": {"$dynamicRef": "#node"}}}
    with pytest.raises(grammask.SchemaUnsupported) as info:
        compiler.compile_json_schema(schema)
    assert info.value.keyword == "$dynamicRef"
    assert info.value.pointer == "/properties/a/$dynamicRef"
    lenient = compiler.compile_json_schema(schema, lenient=True)
    assert grammask.Matcher(lenient).accept_string('{"a": 1}')


def test_limit_exceeded_names_limit(o200k: grammask.Vocabulary) -> None:
    with pytest.raises(grammask.LimitExceeded) as info:
        grammask.Compiler(o200k, max_grammar_size=10).compile_builtin_json()
    assert info.value.limit == "grammar_size"
    deep = grammask.Compiler(o200k, max_stack_depth=5).compile_builtin_json()
    m = grammask.Matcher(deep)
    with pytest.raises(grammask.LimitExceeded) as info:
        m.accept_string("[[[[[[[[")
    assert info.value.limit == "stack_depth"


def test_pickle_and_serialize(compiler: grammask.Compiler, o200k: grammask.Vocabulary) -> None:
    compiled = compiler.compile_json_schema({"type": "array", "items": {"type": "integer"}})
    again = pickle.loads(pickle.dumps(compiled))
    data = compiled.serialize()
    loaded = grammask.CompiledGrammar.deserialize(o200k, data)
    for g in (again, loaded):
        a, b = grammask.Matcher(compiled), grammask.Matcher(g)
        ma = grammask.allocate_token_bitmask(1, o200k.vocab_size)
        mb = grammask.allocate_token_bitmask(1, o200k.vocab_size)
        for text in ("[", "1", ", 2"):
            a.fill_next_token_bitmask(ma)
            b.fill_next_token_bitmask(mb)
            assert np.array_equal(ma, mb)
            assert a.accept_string(text) and b.accept_string(text)
    other = grammask.Vocabulary.builtin("cl100k")
    with pytest.raises(grammask.GrammaskError):
        grammask.CompiledGrammar.deserialize(other, data)


def test_bitmask_buffers(compiler: grammask.Compiler, o200k: grammask.Vocabulary) -> None:
    m = grammask.Matcher(compiler.compile_regex("[0-9]+"))
    words = grammask.bitmask_size(o200k.vocab_size)
    batch = grammask.allocate_token_bitmask(4, o200k.vocab_size)
    m.fill_next_token_bitmask(batch, index=2)
    assert (batch[0] == -1).all() and (batch[3] == -1).all()
    flat = np.zeros(words, dtype=np.int32)
    m.fill_next_token_bitmask(flat)
    assert np.array_equal(flat, batch[2])
    wide = np.zeros((2, words + 5), dtype=np.int32)
    m.fill_next_token_bitmask(wide, 1)
    assert np.array_equal(wide[1, :words], flat) and (wide[1, words:] == 0).all()
    unsigned = np.zeros(words, dtype=np.uint32)
    m.fill_next_token_bitmask(unsigned)
    assert np.array_equal(unsigned.view(np.int32), flat)
    with pytest.raises(ValueError, match="row 4"):
        m.fill_next_token_bitmask(batch, index=4)
    with pytest.raises(ValueError, match="words"):
        m.fill_next_token_bitmask(np.zeros((1, 8), dtype=np.int32))
    with pytest.raises(ValueError, match="format"):
        m.fill_next_token_bitmask(np.zeros(words, dtype=np.int64))
    readonly = np.zeros(words, dtype=np.int32)
    readonly.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        m.fill_next_token_bitmask(readonly)
    with pytest.raises(ValueError, match="contiguous"):
        m.fill_next_token_bitmask(np.zeros((words, 2), dtype=np.int32).T)
    with pytest.raises(TypeError):
        m.fill_next_token_bitmask([0] * words)


def test_batch_fill_and_apply(compiler: grammask.Compiler, o200k: grammask.Vocabulary) -> None:
    compiled = compiler.compile_builtin_json()
    matchers = [grammask.Matcher(compiled) for _ in range(3)]
    for m, text in zip(matchers, ("{", "[1, ", '{"a": "x')):
        assert m.accept_string(text)
    batch = grammask.allocate_token_bitmask(3, o200k.vocab_size)
    grammask.fill_next_token_bitmasks(matchers, batch)
    single = grammask.allocate_token_bitmask(3, o200k.vocab_size)
    for i, m in enumerate(matchers):
        m.fill_next_token_bitmask(single, i)
    assert np.array_equal(batch, single)
    shuffled = grammask.allocate_token_bitmask(5, o200k.vocab_size)
    grammask.fill_next_token_bitmasks(matchers, shuffled, indices=[4, 0, 2])
    assert np.array_equal(shuffled[[4, 0, 2]], single)
    with pytest.raises(ValueError, match="twice"):
        grammask.fill_next_token_bitmasks(matchers, shuffled, indices=[1, 1, 2])
    logits = np.zeros((3, o200k.vocab_size), dtype=np.float32)
    grammask.apply_token_bitmask_inplace(logits, batch)
    for i in range(3):
        assert np.array_equal(np.flatnonzero(np.isfinite(logits[i])), allowed_ids(batch[i], o200k.vocab_size))


def test_torch_tensors(compiler: grammask.Compiler, o200k: grammask.Vocabulary) -> None:
    torch = pytest.importorskip("torch", reason="torch is not installed: the torch bitmask path is untested here")
    m = grammask.Matcher(compiler.compile_regex("(yes|no)"))
    bitmask = torch.zeros((2, grammask.bitmask_size(o200k.vocab_size)), dtype=torch.int32)
    m.fill_next_token_bitmask(bitmask, 1)
    expected = grammask.allocate_token_bitmask(1, o200k.vocab_size)
    m.fill_next_token_bitmask(expected)
    assert np.array_equal(bitmask[1].numpy(), expected[0])
    logits = torch.zeros((2, o200k.vocab_size + 64))
    grammask.apply_token_bitmask_inplace(logits, bitmask)
    assert set(torch.isfinite(logits[1]).nonzero().flatten().tolist()) == set(allowed_ids(expected[0], o200k.vocab_size))
    assert not torch.isfinite(logits[0]).any()
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(torch.zeros((1, 10), dtype=torch.int32))
    with pytest.raises(ValueError):
        m.fill_next_token_bitmask(torch.zeros((1, grammask.bitmask_size(o200k.vocab_size)), dtype=torch.int64))


WEATHER_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def test_structural_tags_and_tools(compiler: grammask.Compiler) -> None:
    tag = {
        "type": "structural_tag",
        "format": {
            "type": "sequence",
            "elements": [
                {"type": "tag", "begin": "<think>", "content": {"type": "any_text"}, "end": "</think>"},
                {"type": "const_string", "value": "Answer: "},
                {"type": "regex", "pattern": "[0-9]+"},
            ],
        },
    }
    for given in (tag, json.dumps(tag), tag["format"]):
        m = grammask.Matcher(compiler.compile_structural_tag(given))
        assert m.accept_string("<think>2 + 2 is </thin> 4</think>Answer: 4") and m.can_terminate()
        assert not grammask.Matcher(compiler.compile_structural_tag(given)).accept_string(
            "<think>x</think>y</think>"
        )
    with pytest.raises(grammask.GrammarError) as info:
        compiler.compile_structural_tag({"type": "tag", "begin": "<a>", "content": {"type": "nope"}, "end": "</a>"})
    assert info.value.pointer == "/content/type"

    call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    required = grammask.Matcher(compiler.compile_tools(WEATHER_TOOLS, "required"))
    assert not required.accept_string("Sure: ")  # a call and nothing else
    assert required.accept_string(call) and required.can_terminate()
    auto = grammask.Matcher(compiler.compile_tools(json.dumps(WEATHER_TOOLS)))
    assert auto.accept_string("Let me check. " + call) and auto.can_terminate()
    named = {"type": "function", "function": {"name": "get_weather"}}
    llama = compiler.compile_tools(WEATHER_TOOLS, named, format="llama3", reasoning=True)
    m = grammask.Matcher(llama)
    assert m.accept_string('<think>Oslo.</think>\n{"name": "get_weather", "parameters": {"city": "Oslo"}}')
    assert m.can_terminate()
    with pytest.raises(grammask.GrammarError, match="not among the tools"):
        compiler.compile_tools(WEATHER_TOOLS, "get_time")


def test_reasoning_budget(compiler: grammask.Compiler, o200k: grammask.Vocabulary) -> None:
    compiled = compiler.compile_tools(WEATHER_TOOLS, "required", reasoning=True, max_reasoning_tokens=2)
    m = grammask.Matcher(compiled)
    think = [t for t in range(o200k.vocab_size) if o200k.token_bytes(t) in (b"<think>", b" one", b" two", b" three")]
    by_bytes = {o200k.token_bytes(t): t for t in think}
    assert m.accept_string("<think>")  # text given as bytes spends no budget
    assert m.accept_token(by_bytes[b" one"]) and m.accept_token(by_bytes[b" two"])
    assert not m.accept_token(by_bytes[b" three"])  # spent: the thinking must end
    bitmask = grammask.allocate_token_bitmask(1, o200k.vocab_size)
    m.fill_next_token_bitmask(bitmask)
    ids = allowed_ids(bitmask[0], o200k.vocab_size)
    assert 0 < len(ids) < 1000 and by_bytes[b" three"] not in ids
    assert all(b"<" in o200k.token_bytes(int(t)) for t in ids)


def test_tool_prompt_and_calls_read_back(compiler: grammask.Compiler) -> None:
    prompt = grammask.tools_system_prompt(WEATHER_TOOLS)
    assert "<tools>" in prompt and "get_weather" in prompt and "<tool_call>" in prompt
    assert '"parameters"' in grammask.tools_system_prompt(json.dumps(WEATHER_TOOLS), "llama3")
    text = 'Sure. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    m = grammask.Matcher(compiler.compile_tools(WEATHER_TOOLS))
    assert m.accept_string(text) and m.can_terminate()
    assert grammask.parse_tool_calls(text) == [{"name": "get_weather", "arguments": {"city": "Oslo"}}]
    llama = '{"name": "get_weather", "parameters": {"city": "Rome"}}'
    assert grammask.parse_tool_calls(llama, "llama3")[0]["arguments"] == {"city": "Rome"}
    with pytest.raises(ValueError, match="format"):
        grammask.parse_tool_calls(text, "xml")
    with pytest.raises(ValueError, match="/0/function/name"):
        grammask.tools_system_prompt([{"type": "function", "function": {"name": ""}}])


def test_lazy_and_eager_automata_give_the_same_masks(o200k: grammask.Vocabulary) -> None:
    point = {"type": "object", "properties": {"x": {"type": "integer"}, "label": {"type": "string"}}}
    schema = {
        "type": "object",
        "properties": {
            "kind": {"enum": ["point", "path"]},
            "point": {"$ref": "#/$defs/point"},
            "path": {"type": "array", "items": {"$ref": "#/$defs/point"}},
        },
        "required": ["kind"],
        "$defs": {"point": point},
    }
    lazy = grammask.Compiler(o200k, lazy_automata=True).compile_json_schema(schema)
    eager = grammask.Compiler(o200k, lazy_automata=False).compile_json_schema(schema)
    a, b = grammask.Matcher(lazy), grammask.Matcher(eager)
    ma = grammask.allocate_token_bitmask(1, o200k.vocab_size)
    mb = grammask.allocate_token_bitmask(1, o200k.vocab_size)
    for text in ('{"kind": "path", ', '"path": [', '{"x": 1', ', "label": "a"', "}]", "}"):
        a.fill_next_token_bitmask(ma)
        b.fill_next_token_bitmask(mb)
        assert np.array_equal(ma, mb)
        assert a.accept_string(text) and b.accept_string(text)
    assert a.can_terminate() and b.can_terminate()
    assert grammask.CompiledGrammar.deserialize(o200k, lazy.serialize()) is not None

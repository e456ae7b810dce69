"""grammask.hf: the transformers logits processor.

The unit tests drive it with hand-made ids and scores over a toy vocabulary (torch only).
The end-to-end test has transformers load SmolLM2-135M-Instruct from the project's GGUF
file (fixture ``smollm2_gguf``), generate greedily on the CPU under a JSON Schema, and
checks the text parses, matches the schema and ended with EOS.

Without torch (or transformers, for the end-to-end test) these tests are skipped, except
under CI (``CI`` set), where that is a failure: scripts/python-env.sh installs both.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

# No hub access here: transformers must read only the local GGUF file. Set before
# transformers (and huggingface_hub) are imported, since they read it at import.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _require(module: str):
    if os.environ.get("CI"):
        return __import__(module)
    return pytest.importorskip(module)


torch = _require("torch")

import grammask  # noqa: E402
import grammask.hf  # noqa: E402

NEG_INF = float("-inf")


def toy_compiled(vocab_size=None, pattern="ab"):
    # ids: 0 </s> (stop), 1 "a", 2 "b", 3 "ab", 4 "c"
    tokens = [b"</s>", b"a", b"b", b"ab", b"c"]
    vocab = grammask.Vocabulary.from_tokens(tokens, [0], vocab_size=vocab_size)
    return grammask.Compiler(vocab).compile_regex(pattern)


def allowed(scores_row):
    return [i for i, v in enumerate(scores_row.tolist()) if v != NEG_INF]


def test_import_grammask_needs_neither_torch_nor_transformers():
    code = (
        "import sys, grammask\n"
        "bad = [m for m in ('torch', 'transformers') if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_steps_follow_the_grammar_and_padding_ids_are_masked():
    compiled = toy_compiled(vocab_size=40)  # logits wider than the 5 tokens
    proc = grammask.hf.LogitsProcessor(compiled)
    prompt = [[7, 8, 9]]  # prompt ids are never fed to the matcher

    scores = torch.zeros(1, 40)
    out = proc(torch.tensor(prompt), scores)
    assert out is scores
    assert proc.prompt_lengths == [3]
    assert allowed(scores[0]) == [1, 3]  # "a", "ab"

    scores = torch.zeros(1, 40)
    proc(torch.tensor([prompt[0] + [1]]), scores)
    assert allowed(scores[0]) == [2]  # "b"

    scores = torch.zeros(1, 40)
    proc(torch.tensor([prompt[0] + [1, 2]]), scores)
    assert allowed(scores[0]) == [0]  # only the stop token: "ab" is whole
    assert proc.finished == [False]

    scores = torch.zeros(1, 40)
    proc(torch.tensor([prompt[0] + [1, 2, 0]]), scores)
    assert proc.finished == [True] and proc.refused == [False]
    assert proc.matchers[0].is_terminated()
    assert allowed(scores[0]) == [0]


def test_logits_wider_than_the_vocabulary():
    compiled = toy_compiled()  # vocab_size 5, logits of 8
    proc = grammask.hf.LogitsProcessor(compiled)
    scores = torch.zeros(1, 8)
    proc(torch.tensor([[1]]), scores)
    assert allowed(scores[0]) == [1, 3]


def test_a_refused_row_allows_only_stop_tokens_and_others_go_on():
    compiled = toy_compiled(vocab_size=8)
    proc = grammask.hf.LogitsProcessor(compiled, batch_size=2)
    proc(torch.tensor([[5], [5]]), torch.zeros(2, 8))
    scores = torch.zeros(2, 8)
    proc(torch.tensor([[5, 4], [5, 1]]), scores)  # row 0: "c" is refused
    assert proc.refused == [True, False]
    assert proc.finished == [True, False]
    assert allowed(scores[0]) == [0]
    assert allowed(scores[1]) == [2]
    scores = torch.zeros(2, 8)
    proc(torch.tensor([[5, 4, 0], [5, 1, 2]]), scores)
    assert allowed(scores[0]) == [0]
    assert allowed(scores[1]) == [0]


def test_reset_and_batch_size_mismatch():
    proc = grammask.hf.LogitsProcessor(toy_compiled(vocab_size=8))
    proc(torch.tensor([[5]]), torch.zeros(1, 8))
    proc(torch.tensor([[5, 1]]), torch.zeros(1, 8))
    proc.reset()
    scores = torch.zeros(1, 8)
    proc(torch.tensor([[5, 6]]), scores)
    assert proc.prompt_lengths == [2]
    assert allowed(scores[0]) == [1, 3]
    with pytest.raises(ValueError, match="batch_size"):
        proc(torch.tensor([[5, 6, 1], [5, 6, 1]]), torch.zeros(2, 8))


# --- end to end: transformers + SmolLM2-135M-Instruct (GGUF) on the CPU ----------------

PERSON_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 40},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
    },
    "required": ["name", "age"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def smollm2(smollm2_gguf):
    transformers = _require("transformers")
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    threads = torch.get_num_threads()
    # One thread: a 135M model gains little from two, and OpenMP's spinning threads
    # crawl when the machine's two cores are busy with something else.
    torch.set_num_threads(1)
    directory, name = str(smollm2_gguf.parent), smollm2_gguf.name
    tokenizer = transformers.AutoTokenizer.from_pretrained(directory, gguf_file=name)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        directory, gguf_file=name, dtype=torch.float32
    )
    model.eval()
    yield tokenizer, model
    torch.set_num_threads(threads)


def _validate(value, schema):
    try:
        import jsonschema
    except ImportError:  # checked by hand for this schema
        assert isinstance(value, dict) and set(value) == {"name", "age"}
        assert isinstance(value["name"], str) and len(value["name"]) <= 40
        assert isinstance(value["age"], int) and not isinstance(value["age"], bool)
        assert 0 <= value["age"] <= 150
        return
    jsonschema.validate(value, schema)


def test_generate_json_schema_with_smollm2_gguf(smollm2):
    tokenizer, model = smollm2
    vocab = grammask.Vocabulary.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)
    assert vocab.vocab_size == model.config.vocab_size
    assert tokenizer.eos_token_id in vocab.stop_token_ids
    compiled = grammask.Compiler(vocab).compile_json_schema(PERSON_SCHEMA)
    processor = grammask.hf.LogitsProcessor(compiled)

    messages = [
        {
            "role": "user",
            "content": "Alice is 30 years old. Give her name and age as a JSON object.",
        }
    ]
    inputs = tokenizer.apply_chat_template(
        messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
    )
    prompt_len = inputs["input_ids"].shape[1]
    max_new_tokens = 80
    with torch.no_grad():
        out = model.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            logits_processor=[processor],
            eos_token_id=vocab.stop_token_ids,
            pad_token_id=tokenizer.eos_token_id,
        )
    generated = out[0, prompt_len:].tolist()
    print("generated", len(generated), "tokens:", repr(tokenizer.decode(generated)))
    text = tokenizer.decode(generated, skip_special_tokens=True)

    # Ended by a stop token the grammar allowed, not by the token limit.
    assert generated[-1] in vocab.stop_token_ids, (generated, text)
    assert len(generated) < max_new_tokens, text
    assert processor.prompt_lengths == [prompt_len]
    assert processor.refused == [False]

    value = json.loads(text)
    _validate(value, PERSON_SCHEMA)
    # The matcher saw the same tokens: feeding them again to a fresh one is accepted.
    replay = grammask.Matcher(compiled)
    assert replay.accept_tokens(generated)
    assert replay.is_terminated()


def test_generate_a_batch_with_smollm2_gguf(smollm2):
    """Two prompts (left-padded) in one generate call: the batched fill, and a row that
    ends before the other (transformers then feeds it padding, here its EOS)."""
    tokenizer, model = smollm2
    vocab = grammask.Vocabulary.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)
    compiled = grammask.Compiler(vocab).compile_json_schema(PERSON_SCHEMA)
    processor = grammask.hf.LogitsProcessor(compiled, batch_size=2)
    people = [("Bob", 45), ("Maria Fernanda", 7)]
    texts = [
        tokenizer.apply_chat_template(
            [
                {
                    "role": "user",
                    "content": f"{name} is {age} years old. "
                    "Give the name and age as a JSON object.",
                }
            ],
            add_generation_prompt=True,
            tokenize=False,
        )
        for name, age in people
    ]
    tokenizer.padding_side = "left"
    inputs = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    prompt_len = inputs["input_ids"].shape[1]
    max_new_tokens = 80
    with torch.no_grad():
        out = model.generate(
            **inputs,
            max_new_tokens=max_new_tokens,
            do_sample=False,
            logits_processor=[processor],
            eos_token_id=vocab.stop_token_ids,
            pad_token_id=tokenizer.eos_token_id,
        )
    assert processor.refused == [False, False]
    lengths = []
    for row in range(2):
        generated = out[row, prompt_len:].tolist()
        print("row", row, "generated:", repr(tokenizer.decode(generated)))
        stops = [i for i, t in enumerate(generated) if t in vocab.stop_token_ids]
        assert stops, tokenizer.decode(generated)
        lengths.append(stops[0] + 1)
        text = tokenizer.decode(generated[: stops[0]], skip_special_tokens=True)
        _validate(json.loads(text), PERSON_SCHEMA)
    assert max(lengths) < max_new_tokens


INCIDENT_SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"enum": ["auth", "billing", "search", "storage", "notifications", "payments"]},
        "severity": {"enum": ["low", "medium", "high", "critical"]},
        "minutes": {"type": "integer"},
    },
    "required": ["service", "severity", "minutes"],
    "additionalProperties": False,
}


def test_field_confidence_with_smollm2_gguf(smollm2):
    """``FieldRecorder`` over a greedy transformers loop: each value by its pointer, with
    probabilities, and the enums' runners-up among their members."""
    tokenizer, model = smollm2
    vocab = grammask.Vocabulary.from_huggingface(tokenizer, vocab_size=model.config.vocab_size)
    compiled = grammask.Compiler(vocab).compile_json_schema(INCIDENT_SCHEMA)
    matcher = grammask.Matcher(compiled)
    recorder = grammask.FieldRecorder()
    bitmask = grammask.allocate_token_bitmask(1, vocab.vocab_size)
    messages = [
        {
            "role": "user",
            "content": "Extract the incident as JSON: the billing service had a high "
            "severity outage that lasted 30 minutes.",
        }
    ]
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors="pt")
    if not isinstance(ids, torch.Tensor):
        ids = ids["input_ids"]
    past = None
    generated = []
    with torch.no_grad():
        for _ in range(64):
            out = model(input_ids=ids, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1]
            matcher.fill_next_token_bitmask(bitmask)
            masked = logits.clone().unsqueeze(0)
            grammask.apply_token_bitmask_inplace(masked, bitmask)
            token = int(masked[0].argmax())
            recorder.observe(matcher, logits, token)
            assert matcher.accept_token(token)
            generated.append(token)
            if matcher.is_terminated():
                break
            ids = torch.tensor([[token]])
    assert matcher.is_terminated()
    text = tokenizer.decode(generated, skip_special_tokens=True)
    answer = json.loads(text)
    fields = recorder.finish()
    assert [f["pointer"] for f in fields] == ["/service", "/severity", "/minutes"], fields
    for f in fields:
        assert answer[f["pointer"][1:]] == f["value"]
        assert 0.0 <= f["p_chosen"] <= 1.0 and 0.0 <= f["mass_removed"] <= 1.0
    for f, members in zip(fields[:2], ("service", "severity")):
        enum = INCIDENT_SCHEMA["properties"][members]["enum"]
        assert f["runner_up"] in enum and f["runner_up"] != f["value"], f
        assert 0.0 <= f["p_runner_up"] <= 1.0 - f["p_chosen"] + 1e-9
    assert fields[2]["runner_up"] is None and fields[2]["p_runner_up"] is None

"""grammask inside llama.cpp (integrations/llama.cpp): the compare program and llama-server.

The programs come from ``integrations/llama.cpp/build.sh``; ``GRAMMASK_LLAMA_CPP_COMPARE``
names the compare program (llama-server is beside it), and ``.ci/run`` sets it. Without
it every test here is skipped, loudly.

- Greedy generations on SmolLM2-135M-Instruct give identical tokens under llama.cpp's
  grammar sampler and grammask's, on llama.cpp's grammars and hand-written ones, lazy
  grammars among them (``integrations/llama.cpp/cases.json``).
- JSON Schemas (llama.cpp's converter for its sampler, grammask's for grammask's) give
  documents the ``jsonschema`` validator accepts.
- llama-server started with ``--grammask`` serves ``/completion`` with ``grammar`` and
  with ``json_schema``, and ``/v1/chat/completions`` with a ``json_schema``
  ``response_format``, through grammask's sampler; a request's ``"grammask": false``
  goes back to llama.cpp's.
- The compare program and the sampler run clean under AddressSanitizer.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import jsonschema
import pytest

REPO = Path(__file__).resolve().parents[2]
CASES = json.loads((REPO / "integrations/llama.cpp/cases.json").read_text())
COMPARE = os.environ.get("GRAMMASK_LLAMA_CPP_COMPARE", "")

pytestmark = pytest.mark.skipif(
    not COMPARE,
    reason="GRAMMASK_LLAMA_CPP_COMPARE is not set: build with integrations/llama.cpp/build.sh "
    "and set it to the path the script prints",
)


def compare(model: Path, grammar: str, sampler: str, prompt: str, n_predict: int,
            trigger_words: tuple[str, ...] = ()) -> dict:
    """One run of the compare program; its JSON line."""
    triggers = [a for w in trigger_words for a in ("--trigger-word", w)]
    out = subprocess.run(
        [COMPARE, "--model", str(model), "--grammar", str(REPO / grammar), "--sampler", sampler,
         "--prompt", prompt, "--n-predict", str(n_predict), "--json", *triggers],
        capture_output=True, text=True, timeout=600, check=False,
    )
    assert out.returncode == 0, f"{sampler} on {grammar}: exit {out.returncode}\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1])


def case_id(case: dict) -> str:
    return Path(case["grammar"]).name


@pytest.mark.parametrize("case", CASES["cases"], ids=case_id)
def test_identical_tokens_under_both_samplers(smollm2_gguf, case):
    llama = compare(smollm2_gguf, case["grammar"], "llama", case["prompt"], case["n_predict"])
    ours = compare(smollm2_gguf, case["grammar"], "grammask", case["prompt"], case["n_predict"])
    assert ours["tokens"], f"grammask generated nothing: {ours}"
    assert ours["tokens"] == llama["tokens"], (
        f"tokens differ on {case['grammar']}:\nllama:    {llama['text']!r}\n"
        f"grammask: {ours['text']!r}"
    )
    assert ours["stop"] == llama["stop"]
    assert ours["text"] == llama["text"]


@pytest.mark.parametrize("case", CASES["lazy"], ids=case_id)
def test_lazy_grammars_give_identical_tokens_and_apply_from_the_trigger(smollm2_gguf, case):
    words = tuple(case["trigger_words"])
    llama = compare(smollm2_gguf, case["grammar"], "llama", case["prompt"], case["n_predict"], words)
    ours = compare(smollm2_gguf, case["grammar"], "grammask", case["prompt"], case["n_predict"], words)
    assert ours["tokens"] == llama["tokens"], f"{llama['text']!r}\n{ours['text']!r}"
    start = min(i for i in (ours["text"].find(w) for w in words) if i >= 0)
    assert re.match(case["after_trigger"], ours["text"][start:]), ours["text"]


@pytest.mark.parametrize("case", CASES["schemas"], ids=case_id)
def test_json_schemas_give_valid_documents(smollm2_gguf, case):
    schema = json.loads((REPO / case["grammar"]).read_text())
    for sampler in ("grammask", "llama"):
        out = compare(smollm2_gguf, case["grammar"], sampler, case["prompt"], case["n_predict"])
        assert out["stop"] == "eog", f"{sampler} did not finish within {case['n_predict']}: {out}"
        jsonschema.validate(json.loads(out["text"]), schema)


def test_a_refused_grammar_is_reported_with_its_position(smollm2_gguf, tmp_path):
    bad = tmp_path / "bad.gbnf"
    bad.write_text('root ::= "a" missing\n')
    out = subprocess.run(
        [COMPARE, "--model", str(smollm2_gguf), "--grammar", str(bad), "--sampler", "grammask",
         "--prompt", "hi", "--n-predict", "4", "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )
    assert out.returncode == 1, out
    assert "missing" in out.stderr and "1:14" in out.stderr, out.stderr


def test_the_sampler_runs_clean_under_address_sanitizer(smollm2_gguf, tmp_path):
    """The compare program and the sampler built with -fsanitize=address (LeakSanitizer on):
    a plain JSON grammar, a JSON Schema, a refused grammar."""
    asan = Path(COMPARE).with_name("grammask-compare-asan")
    assert asan.exists(), f"no grammask-compare-asan beside {COMPARE}"
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=1:halt_on_error=1:exitcode=99"}
    bad = tmp_path / "bad.gbnf"
    bad.write_text('root ::= "a" (\n')
    for grammar, code in [
        (REPO / "grammar-syntax/tests/data/llama.cpp-grammars/json.gbnf", 0),
        (REPO / "integrations/llama.cpp/grammars/incident.json", 0),
        (bad, 1),
    ]:
        out = subprocess.run(
            [str(asan), "--model", str(smollm2_gguf), "--grammar", str(grammar),
             "--sampler", "grammask", "--prompt", "A JSON object, please.", "--n-predict", "12",
             "--json"],
            capture_output=True, text=True, timeout=600, check=False, env=env,
        )
        assert "AddressSanitizer" not in out.stderr and "LeakSanitizer" not in out.stderr, (
            out.stderr[-4000:]
        )
        assert out.returncode == code, f"{grammar}: exit {out.returncode}\n{out.stderr[-2000:]}"
        if code == 0:
            assert json.loads(out.stdout.strip().splitlines()[-1])["tokens"]


# --- llama-server -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


@pytest.fixture(scope="module")
def server(smollm2_gguf, tmp_path_factory):
    binary = Path(COMPARE).with_name("llama-server")
    if not binary.exists():
        binary = Path(COMPARE).parent / "bin" / "llama-server"
    assert binary.exists(), f"no llama-server beside {COMPARE}"
    port = free_port()
    log = tmp_path_factory.mktemp("server") / "llama-server.log"
    with open(log, "w") as log_file:
        process = subprocess.Popen(
            [str(binary), "--model", str(smollm2_gguf), "--host", "127.0.0.1", "--port", str(port),
             "--ctx-size", "2048", "--parallel", "1", "--threads", "2", "--grammask"],
            stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, f"llama-server exited:\n{log.read_text()[-4000:]}"
            try:
                with urllib.request.urlopen(base + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError):
                pass
            assert time.monotonic() < deadline, f"llama-server not ready:\n{log.read_text()[-4000:]}"
            time.sleep(0.5)
        yield base, log
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def grammask_lines(log: Path) -> int:
    return log.read_text().count("grammask's sampler constrains")


PERSON = json.loads((REPO / "integrations/llama.cpp/grammars/person.json").read_text())
INCIDENT = json.loads((REPO / "integrations/llama.cpp/grammars/incident.json").read_text())


def test_server_completion_with_a_grammar(server):
    base, log = server
    before = grammask_lines(log)
    grammar = (REPO / "integrations/llama.cpp/grammars/person.gbnf").read_text()
    status, body = post(base + "/completion", {
        "prompt": "A person described in JSON: ", "grammar": grammar, "n_predict": 96,
        "temperature": 0,
    })
    assert status == 200, body
    person = json.loads(body["content"])
    assert set(person) == {"name", "age", "hobbies"} and isinstance(person["age"], int)
    assert grammask_lines(log) == before + 1


def test_server_completion_with_a_json_schema(server):
    base, log = server
    before = grammask_lines(log)
    status, body = post(base + "/completion", {
        "prompt": "Incident: checkout was down for 12 minutes, critical.\nJSON: ",
        "json_schema": INCIDENT, "n_predict": 64, "temperature": 0,
    })
    assert status == 200, body
    jsonschema.validate(json.loads(body["content"]), INCIDENT)
    assert grammask_lines(log) == before + 1
    assert "constrains the JSON Schema" in log.read_text()
    # The same schema again: the sampler reuses the compiled grammar (and its filled
    # masks); the answer is the same.
    status, again = post(base + "/completion", {
        "prompt": "Incident: checkout was down for 12 minutes, critical.\nJSON: ",
        "json_schema": INCIDENT, "n_predict": 64, "temperature": 0, "cache_prompt": False,
    })
    assert status == 200 and again["content"] == body["content"], again


def test_server_chat_completion_with_a_json_schema_response_format(server):
    base, log = server
    before = grammask_lines(log)
    status, body = post(base + "/v1/chat/completions", {
        "messages": [{"role": "user", "content": "Make up a person: name, age and city."}],
        "response_format": {"type": "json_schema",
                            "json_schema": {"name": "person", "schema": PERSON}},
        "max_tokens": 96, "temperature": 0,
    })
    assert status == 200, body
    choice = body["choices"][0]
    assert choice["finish_reason"] == "stop", body
    jsonschema.validate(json.loads(choice["message"]["content"]), PERSON)
    assert grammask_lines(log) == before + 1


def test_server_completion_with_a_lazy_grammar(server):
    base, log = server
    case = CASES["lazy"][0]
    status, body = post(base + "/completion", {
        "prompt": f"<|im_start|>user\n{case['prompt']}<|im_end|>\n<|im_start|>assistant\n",
        "grammar": (REPO / case["grammar"]).read_text(), "grammar_lazy": True,
        # Type 2, a pattern: a trigger word of one token (as `answer` is) would have to be
        # listed in `preserved_tokens` as well.
        "grammar_triggers": [{"type": 2, "value": w} for w in case["trigger_words"]],
        "n_predict": case["n_predict"], "temperature": 0,
    })
    assert status == 200, body
    text = body["content"]
    start = text.find(case["trigger_words"][0])
    assert start >= 0 and re.match(case["after_trigger"], text[start:]), text
    assert "constrains the lazy GBNF grammar" in log.read_text()


def test_server_request_field_chooses_the_sampler(server):
    """`%json{...}` is grammask's GBNF: served by grammask, refused by llama.cpp's parser."""
    base, log = server
    grammar = "root ::= %json" + json.dumps(INCIDENT)
    request = {"prompt": "Incident: search was slow for 30 minutes, low.\nJSON: ",
               "grammar": grammar, "n_predict": 64, "temperature": 0}
    status, body = post(base + "/completion", request)
    assert status == 200, body
    jsonschema.validate(json.loads(body["content"]), INCIDENT)

    status, body = post(base + "/completion", {**request, "grammask": False})
    assert status >= 400, body


def test_server_reports_grammasks_diagnostic(server):
    base, _ = server
    status, body = post(base + "/completion", {
        "prompt": "x", "grammar": 'root ::= "a" missing', "n_predict": 4,
    })
    assert status >= 400, body
    assert "missing" in json.dumps(body), body

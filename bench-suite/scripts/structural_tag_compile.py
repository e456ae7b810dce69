#!/usr/bin/env python3
"""Compile time of a 20-tool structural tag: grammask beside llguidance and XGrammar, in one
process, on the Llama-3 tokenizer.

What is compiled. The 20 OpenAI-style tools of ``bench-suite/data/tools20.json`` (strings
with patterns, formats and length bounds, enums, bounded integers and numbers, nested
objects, arrays of objects; every object ``additionalProperties: false``) as Hermes tool
calls with ``tool_choice`` auto: free text in which ``<tool_call>`` starts a call
``<tool_call>\\n{"name": NAME, "arguments": ARGS}\\n</tool_call>``, ARGS checked against the
tool's ``parameters``, any number of calls with free text between them. The same
structural tag (XGrammar's JSON format: ``triggered_tags`` on ``<tool_call>``, one ``tag``
per tool, ``at_least_one`` false, ``stop_after_first`` false) is built here once as a
JSON string and handed to every engine that reads it:

- ``grammask tools``: ``Compiler.compile_tools(tools, "auto", format="hermes",
  parallel_tool_calls=True)`` (the tag above, made by grammask from the tools; argument
  schemas with grammask's default JSON whitespace);
- ``grammask tools 1``: the same with ``parallel_tool_calls=False`` (``stop_after_first``
  true: at most one call);
- ``grammask tag``: ``Compiler.compile_structural_tag(tag)`` (the JSON string; XGrammar's
  whitespace rule for structural tags: any run of JSON whitespace);
- ``xgrammar``: ``GrammarCompiler(info, max_threads=1, cache_enabled=False)
  .compile_structural_tag(tag)`` (the same JSON string); ``xgrammar parse`` is
  ``Grammar.from_structural_tag(tag)`` alone (the tag to a grammar, no tokenizer work), not
  a compile;
- ``llguidance``: its own way to say the same, ``llguidance.StructTag.to_grammar(tags,
  assume_special=False)``: the Lark grammar of its documentation's tool-calling section
  (``start: (tag_0 | ... | tag_19)* tag_end``, each ``tag_i_trig[lazy]: TAG_TEXT
  "<tool_call>"`` then the rest of the tag's ``begin``, ``%json {parameters}`` and the
  ``end``), with ``assume_special=False`` because ``<tool_call>`` is text in Llama-3, not
  a special token. The Lark text is made once; the compile is ``LLMatcher(tokenizer,
  lark)``, which builds the parser (llguidance builds its lexer states on demand, while
  masks are computed, so its first mask carries part of its compile).

Every sample uses a fresh compiler (grammask: ``Compiler(vocab)``; XGrammar: a new
``GrammarCompiler`` with its cache off; llguidance: a new ``LLMatcher``), so nothing is a
cache hit; the vocabulary (``grammask.Vocabulary``, XGrammar's ``TokenizerInfo``,
``llguidance.LLTokenizer``) is prepared once, outside the timings, and one discarded round
per engine comes first (one-time work per vocabulary and process, such as grammask's
vocabulary slicing, is not in the figures). Rounds alternate the engines, their order
rotating round by round; garbage collection is off while timing; one thread
(``RAYON_NUM_THREADS=1``, XGrammar ``max_threads=1``).

Figures per engine, each the median over the rounds of a run, then the median over
``--runs`` runs with the runs' range:

- ``compile``: the compile call;
- ``1st mask``: a fresh matcher on the new grammar and its first
  ``fill_next_token_bitmask`` at the start (cold: the grammar's mask cache is empty);
- ``TTFM``: compile + that first mask, one ``perf_counter`` span;
- ``warm free text``: the mean of ``--fills`` fills at one state after the first fill
  there, at the start and after ``The weather in Oslo is`` (its Llama-3 tokens accepted):
  free-text positions, each call timed from Python (grammask ``fill_next_token_bitmask(bm,
  0)`` into ``grammask.allocate_token_bitmask``; llguidance
  ``llguidance.numpy.fill_next_token_bitmask``; XGrammar ``GrammarMatcher
  .fill_next_token_bitmask`` into ``xgrammar.allocate_token_bitmask``).

Ratios are grammask's figure over the peer's (below 1: grammask is faster), the median of
the runs' ratios with their range. Before timing, each engine is checked to accept a
sample output (text, a call, text, a second call; ``grammask tools 1``: up to the end of
the first call) token by token and end there, and to refuse two wrong ones (the trigger
followed by other text, a tool name not among the tools); the number of tokens each
allows at the free-text position is printed.

    V=~/.cache/grammask-bench/venv/bin
    $V/pip install --no-deps ./python      # grammask into the peers' venv
    $V/python bench-suite/scripts/structural_tag_compile.py --rounds 10 --runs 3 --json OUT.json

``--per-tool`` adds grammask's compile of each tool's ``parameters`` alone
(``compile_json_schema(schema, strict=True, whitespace="any")``, as the tag's parts);
``--combine A.json B.json ...`` prints the tables of the runs of several ``--json`` files
together and measures nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "bench-suite/data/tools20.json"
STOP_TOKENS = [128001, 128009]
FREE_TEXT = "The weather in Oslo is"
SAMPLE = (
    "The weather in Oslo is<tool_call>\n"
    '{"name": "get_weather", "arguments": {"city": "Oslo", "unit": "celsius", "forecast_days": 3}}\n'
    "</tool_call>\nand a flight:\n<tool_call>\n"
    '{"name": "book_flight", "arguments": {"origin": "OSL", "destination": "BER", '
    '"departure_date": "2026-12-24", "passengers": {"adults": 2}}}\n</tool_call>\nDone.'
)
# Outputs every engine must refuse: the trigger in free text starts a call, which must be
# one of the tools.
REFUSED = ["Hi <tool_call> is a tag", 'Hi <tool_call>\n{"name": "get_wether"']


def tokenizer_path() -> Path:
    base = os.environ.get("GRAMMASK_TOKENIZERS", os.path.expanduser("~/.cache/grammask/tokenizers"))
    return Path(base) / "llama3" / "tokenizer.json"


def hermes_tag(tools: list) -> dict:
    """The structural tag of Hermes calls of `tools`, any number, free text around them."""
    tags = []
    for t in tools:
        f = t["function"]
        tags.append(
            {
                "type": "tag",
                "begin": '<tool_call>\n{"name": ' + json.dumps(f["name"]) + ', "arguments": ',
                "content": {"type": "json_schema", "json_schema": f["parameters"]},
                "end": "}\n</tool_call>",
            }
        )
    return {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<tool_call>"],
            "tags": tags,
            "at_least_one": False,
            "stop_after_first": False,
        },
    }


class Engines:
    def __init__(self, path: Path, tools: list):
        import grammask
        import llguidance
        import llguidance.numpy as llg_numpy
        import torch
        import xgrammar as xgr
        from transformers import PreTrainedTokenizerFast

        torch.set_num_threads(1)
        self.grammask, self.llg, self.llg_numpy, self.xgr = grammask, llguidance, llg_numpy, xgr
        self.tools = tools
        self.tag = json.dumps(hermes_tag(tools))
        self.gm_vocab = grammask.Vocabulary.from_tokenizer_json(str(path))
        n = self.gm_vocab.vocab_size
        self.hf = PreTrainedTokenizerFast(tokenizer_file=str(path))
        self.xgr_info = xgr.TokenizerInfo.from_huggingface(self.hf, vocab_size=n, stop_token_ids=STOP_TOKENS)
        self.llg_tok = llguidance.LLTokenizer(path.read_text(), n_vocab=n, eos_token=STOP_TOKENS)
        assert self.llg_tok.vocab_size == n == self.xgr_info.vocab_size, "vocabulary sizes differ"
        self.vocab_size = n
        struct_tags = [
            llguidance.StructTag(
                trigger="<tool_call>",
                begin='<tool_call>\n{"name": ' + json.dumps(t["function"]["name"]) + ', "arguments": ',
                grammar=t["function"]["parameters"],
                end="}\n</tool_call>",
            )
            for t in tools
        ]
        self.lark = llguidance.StructTag.to_grammar(struct_tags, assume_special=False)
        self.bitmask = {
            "grammask": grammask.allocate_token_bitmask(1, n),
            "llguidance": llg_numpy.allocate_token_bitmask(1, n),
            "xgrammar": xgr.allocate_token_bitmask(1, n),
        }
        self.versions = {
            "grammask": _dist_version("grammask"),
            "llguidance": _dist_version("llguidance"),
            "xgrammar": _dist_version("xgrammar"),
            "torch": torch.__version__,
        }

    def family(self, engine: str) -> str:
        return engine.split()[0]

    # Each compile is what that library's user writes; the fresh compiler is part of it.
    def compile(self, engine: str):
        if engine == "grammask tools":
            c = self.grammask.Compiler(self.gm_vocab)
            return c.compile_tools(self.tools, "auto", format="hermes", parallel_tool_calls=True)
        if engine == "grammask tools 1":
            c = self.grammask.Compiler(self.gm_vocab)
            return c.compile_tools(self.tools, "auto", format="hermes", parallel_tool_calls=False)
        if engine == "grammask tag":
            return self.grammask.Compiler(self.gm_vocab).compile_structural_tag(self.tag)
        if engine == "xgrammar":
            c = self.xgr.GrammarCompiler(self.xgr_info, max_threads=1, cache_enabled=False)
            return c.compile_structural_tag(self.tag)
        if engine == "xgrammar parse":
            return self.xgr.Grammar.from_structural_tag(self.tag)
        if engine == "llguidance":
            m = self.llg.LLMatcher(self.llg_tok, self.lark, log_level=0)
            if m.is_error():
                raise RuntimeError(f"llguidance: {m.get_error()}")
            return m
        raise ValueError(engine)

    def matcher(self, engine: str, compiled):
        fam = self.family(engine)
        if fam == "grammask":
            return self.grammask.Matcher(compiled)
        if fam == "xgrammar":
            return self.xgr.GrammarMatcher(compiled)
        return compiled  # llguidance: the LLMatcher is the compiled grammar and the matcher

    def fill(self, engine: str, m):
        fam = self.family(engine)
        bm = self.bitmask[fam]
        if fam == "grammask":
            m.fill_next_token_bitmask(bm, 0)
        elif fam == "xgrammar":
            m.fill_next_token_bitmask(bm, 0)
        else:
            self.llg_numpy.fill_next_token_bitmask(m, bm, 0)

    def accept(self, engine: str, m, token: int) -> bool:
        fam = self.family(engine)
        if fam == "llguidance":
            return m.consume_token(token) and not m.is_error()
        return bool(m.accept_token(token))

    def allowed(self, engine: str) -> int:
        import numpy as np

        bm = self.bitmask[self.family(engine)]
        words = np.asarray(bm).view(np.uint32).ravel()
        return int(sum(bin(int(w)).count("1") for w in words))

    def encode(self, text: str) -> list:
        return self.hf.encode(text, add_special_tokens=False)


def _dist_version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:
        return "?"


def check(engines: Engines, names: list) -> None:
    """Every engine accepts the sample output token by token, may end after it, and refuses
    the REFUSED outputs; prints the number of tokens each allows at the free-text position."""
    tokens = engines.encode(SAMPLE)
    free = engines.encode(FREE_TEXT)
    counts = {}
    for name in names:
        if name == "xgrammar parse":
            continue
        m = engines.matcher(name, engines.compile(name))
        for i, t in enumerate(free):
            assert engines.accept(name, m, t), f"{name}: free-text token {i} refused"
        engines.fill(name, m)
        counts[name] = engines.allowed(name)
        m = engines.matcher(name, engines.compile(name))
        sample = tokens
        if name == "grammask tools 1":
            # One call at most: the sample up to the end of its first call.
            sample = engines.encode(SAMPLE[: SAMPLE.index("</tool_call>") + len("</tool_call>")])
        for i, t in enumerate(sample):
            ok = engines.accept(name, m, t)
            assert ok, f"{name}: sample token {i} ({engines.hf.decode([t])!r}) refused"
        for stop in STOP_TOKENS[:1]:
            assert engines.accept(name, m, stop), f"{name}: cannot end after the sample"
        for text in REFUSED:
            m = engines.matcher(name, engines.compile(name))
            ok = all(engines.accept(name, m, t) for t in engines.encode(text))
            assert not ok, f"{name}: {text!r} accepted"
    print(f"check: sample output ({len(tokens)} tokens) accepted and {len(REFUSED)} wrong outputs "
          f"refused by every engine; tokens allowed "
          f"after {FREE_TEXT!r}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))


def one_round(engines: Engines, name: str) -> dict:
    pc = time.perf_counter
    if name == "xgrammar parse":
        t0 = pc()
        engines.compile(name)
        return {"compile": pc() - t0}
    t0 = pc()
    compiled = engines.compile(name)
    t1 = pc()
    m = engines.matcher(name, compiled)
    engines.fill(name, m)
    t2 = pc()
    return {"compile": t1 - t0, "first": t2 - t1, "ttfm": t2 - t0}


def warm(engines: Engines, name: str, fills: int) -> dict:
    """Mean time of a warm fill at the start and after FREE_TEXT, seconds."""
    pc = time.perf_counter_ns
    out = {}
    for label, prefix in (("warm start", ""), ("warm text", FREE_TEXT)):
        m = engines.matcher(name, engines.compile(name))
        for t in engines.encode(prefix):
            assert engines.accept(name, m, t)
        engines.fill(name, m)  # the first fill at this state
        total = 0
        for _ in range(fills):
            t0 = pc()
            engines.fill(name, m)
            total += pc() - t0
        out[label] = total / fills / 1e9
    return out


def per_tool(engines: Engines, rounds: int) -> None:
    """grammask's compile of each tool's parameters alone (`compile_json_schema`, strict, any
    whitespace: as the structural tag's parts), median of `rounds`, fresh compilers."""
    gm = engines.grammask
    rows, total = [], 0.0
    for t in engines.tools:
        schema = t["function"]["parameters"]
        xs = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            gm.Compiler(engines.gm_vocab).compile_json_schema(schema, strict=True, whitespace="any")
            xs.append(time.perf_counter() - t0)
        rows.append((t["function"]["name"], median(xs)))
        total += median(xs)
    print(f"\ngrammask, each tool's parameters compiled alone (median of {rounds}); sum {fmt_time(total)}")
    for name, x in sorted(rows, key=lambda r: -r[1]):
        print(f"  {name:24s} {fmt_time(x)}")


def median(xs):
    return statistics.median(xs)


def fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.1f} ms" if s < 0.1 else f"{s * 1e3:.0f} ms"
    return f"{s * 1e6:.1f} µs"


def render(runs: list, names: list, title: str) -> None:
    """The figures' table (median over `runs`, [range]) and the ratios grammask/peer."""
    keys = ["compile", "first", "ttfm", "warm start", "warm text"]
    heads = ["compile", "1st mask", "TTFM", "warm, start", "warm, after text"]
    print(f"\n{title}")
    print("| engine | " + " | ".join(heads) + " |")
    print("|---|" + "---|" * len(heads))
    for name in names:
        cells = []
        for key in keys:
            vals = [r["figures"][name].get(key) for r in runs]
            if vals[0] is None:
                cells.append("")
                continue
            cells.append(f"{fmt_time(median(vals))} [{fmt_time(min(vals))}–{fmt_time(max(vals))}]")
        print(f"| {name} | " + " | ".join(cells) + " |")

    print("\nratios grammask/peer (median of the runs' ratios [range])")
    print("| grammask | peer | " + " | ".join(heads) + " |")
    print("|---|---|" + "---|" * len(heads))
    for gm in ("grammask tools", "grammask tools 1", "grammask tag"):
        for peer in ("llguidance", "xgrammar"):
            cells = []
            for key in keys:
                rs = [r["figures"][gm][key] / r["figures"][peer][key] for r in runs]
                cells.append(f"{median(rs):.3g}x [{min(rs):.3g}–{max(rs):.3g}]")
            print(f"| {gm} | {peer} | " + " | ".join(cells) + " |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="compiles per engine per run")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--fills", type=int, default=2000, help="warm fills timed per position")
    ap.add_argument("--json", type=Path, help="write every sample here")
    ap.add_argument("--per-tool", action="store_true",
                    help="also time grammask compiling each tool's parameters alone as a JSON Schema")
    ap.add_argument("--combine", type=Path, nargs="+", metavar="JSON",
                    help="print the tables of the runs in these --json files together, measure nothing")
    args = ap.parse_args()
    if args.combine:
        runs = [r for f in args.combine for r in json.loads(f.read_text())["runs"]]
        names = list(runs[0]["figures"])
        render(runs, names, f"median of {len(runs)} runs from {len(args.combine)} files, [range of the runs]")
        return 0

    path = tokenizer_path()
    if not path.exists():
        print(f"*** SKIPPED: no Llama-3 tokenizer at {path} (scripts/fetch-tokenizers.sh) ***", file=sys.stderr)
        return 2
    tools = json.loads(TOOLS.read_text())
    engines = Engines(path, tools)
    names = ["grammask tools", "grammask tools 1", "grammask tag", "llguidance", "xgrammar", "xgrammar parse"]
    print(f"python {platform.python_version()}, {os.cpu_count()} cpus, RAYON_NUM_THREADS="
          f"{os.environ.get('RAYON_NUM_THREADS')}; " + ", ".join(f"{k} {v}" for k, v in engines.versions.items()))
    print(f"{len(tools)} tools, structural tag {len(engines.tag):,} bytes of JSON, llguidance Lark "
          f"{len(engines.lark):,} bytes; Llama-3 vocabulary {engines.vocab_size:,}")
    check(engines, names)
    for name in names:  # discarded: one-time work per vocabulary and process
        one_round(engines, name)

    runs = []
    for run in range(args.runs):
        t_run = time.monotonic()
        samples = {n: [] for n in names}
        gc.disable()
        try:
            for r in range(args.rounds):
                k = r % len(names)
                for name in names[k:] + names[:k]:
                    samples[name].append(one_round(engines, name))
            warm_fig = {n: warm(engines, n, args.fills) for n in names if n != "xgrammar parse"}
        finally:
            gc.enable()
        fig = {}
        for name in names:
            fig[name] = {key: median([s[key] for s in samples[name]]) for key in samples[name][0]}
            fig[name].update(warm_fig.get(name, {}))
        runs.append({"figures": fig, "samples": samples})
        print(f"run {run + 1}/{args.runs} in {time.monotonic() - t_run:.0f} s: compile medians "
              + ", ".join(f"{n} {fmt_time(fig[n]['compile'])}" for n in names))

    render(runs, names, f"median of {args.runs} runs (each the median of {args.rounds} compiles; "
           f"warm: the mean of {args.fills} fills), [range of the runs]")
    if args.per_tool:
        per_tool(engines, args.rounds)
    if args.json:
        args.json.write_text(json.dumps({"versions": engines.versions, "runs": runs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

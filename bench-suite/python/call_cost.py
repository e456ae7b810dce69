#!/usr/bin/env python3
"""Python cost of a warm ``fill_next_token_bitmask`` call: grammask against llguidance's and
XGrammar's Python calls, on the same steps, in one run.

What it measures. On the Llama-3 tokenizer (128,256 tokens, 4,008 bitmask words a row),
for llama.cpp's ``json.gbnf`` with ``bench-suite/data/order.json`` (the document of the
Rust per-step figures), for a deterministic spread of MaskBench schemas (every
``--every``-th file in name order, each with its first valid instance, serialized as the
MaskBench harness does: ``json.dumps(data, ensure_ascii=False)``) and for a near-empty
grammar (the regex ``hello world``: every mask allows one token, so the call is almost
all fixed cost), each document is tokenized with the real tokenizer (``tokenizers``, no
special tokens). Its steps are the fills before each token and after
the last. For every engine variant a matcher walks the steps once (the warm walk: it fills
caches; a token refused there drops the document for every engine), then ``--reps`` more
times, each fill's Python call timed with ``time.perf_counter_ns`` around the call alone,
written as a user writes it; tokens are accepted outside the timed region. Walks alternate
between the variants (rep by rep, the variants' order rotated per document), garbage
collection is off while walks run, and everything is single-threaded
(``RAYON_NUM_THREADS=1``, ``torch.set_num_threads(1)``, XGrammar's compiler with
``max_threads=1``).

Variants (each call is what that library's users write):

- ``grammask``: ``matcher.fill_next_token_bitmask(bitmask, 0)``, a numpy bitmask from
  ``grammask.allocate_token_bitmask``; ``grammask-torch``: the same call into a CPU torch
  int32 tensor.
- ``llguidance``: ``llguidance.numpy.fill_next_token_bitmask(matcher, bitmask, 0)`` (as
  the MaskBench harness calls it); ``llguidance-torch``:
  ``llguidance.torch.fill_next_token_bitmask(matcher, bitmask, 0)`` (as vLLM's backend
  does).
- ``xgrammar``: ``GrammarMatcher.fill_next_token_bitmask(bitmask, 0)`` into
  ``xgrammar.allocate_token_bitmask``'s torch int32 tensor.

Grammars: grammask's defaults (``compile_json_schema(schema)``, ``compile_gbnf``,
``compile_regex``); llguidance ``{"grammars": [{"json_schema": schema}]}`` as its harness
engine, ``grammar_from("gbnf", ...)``, ``grammar_from_regex``; XGrammar's compliant mode
(``any_whitespace=True, strict_mode=False``) as the harness's, ``compile_grammar`` for the
GBNF (its empty alternative written ``""``, which XGrammar's EBNF needs),
``compile_regex``. All three use stop tokens 128001 and 128009. A schema any engine fails
to compile, or a document any engine refuses, is skipped for all (counted).

Figures: per variant and grammar set, the mean, p50 and p99 of the per-call times pooled
over every timed call, per run; ``--runs`` runs (in one process, compiled grammars kept)
and the median of each figure over the runs. Ratios (medians of the runs' ratios) are
grammask's figure over the peer's, for each library's own call (grammask and llguidance
with numpy bitmasks, XGrammar with its torch tensor) and with the same kind of bitmask
(``grammask-torch`` against ``llguidance-torch`` and XGrammar). ``timer`` is an empty
timed region (the floor every figure includes).

    V=~/.cache/grammask-bench/venv/bin     # bench-suite/python/setup-venv.sh makes it
    RAYON_NUM_THREADS=1 $V/python bench-suite/python/call_cost.py --every 100 --reps 5 --runs 3

``--breakdown`` adds micro-timings of the parts of a grammask call as seen from Python
(method-call floor, buffer-protocol acquisition, the DLPack export of a torch tensor).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import re
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[2]
JSON_GBNF = REPO / "grammar-syntax/tests/data/llama.cpp-grammars/json.gbnf"
# The document of BENCHMARKS.md's json.gbnf per-step figures (13 lines: nested objects,
# arrays, escaped quotes, non-ASCII text, numbers), tokenized as the file reads.
JSON_DOC = REPO / "bench-suite/data/order.json"
NEAR_EMPTY = "hello world"
STOP_TOKENS = [128001, 128009]
VARIANTS = ["grammask", "grammask-torch", "llguidance", "llguidance-torch", "xgrammar"]
# (grammask variant, peer variant): each library's own call (grammask fills its numpy
# bitmask, llguidance's harness helper a numpy one, XGrammar a torch tensor), then the
# pairs with the same kind of bitmask.
RATIOS = [
    ("grammask", "llguidance"),
    ("grammask", "xgrammar"),
    ("grammask-torch", "llguidance-torch"),
    ("grammask-torch", "xgrammar"),
]


def default_tokenizer() -> Path:
    root = os.environ.get("GRAMMASK_TOKENIZERS")
    base = Path(root) if root else Path.home() / ".cache/grammask/tokenizers"
    return base / "llama3" / "tokenizer.json"


def default_maskbench() -> Path:
    return Path(os.environ.get("GRAMMASK_MASKBENCH", REPO.parent / "shared/data/maskbench"))


# ---------------------------------------------------------------------------------------
# Engines: compile, a fresh matcher, and one walk per variant. The walks are written out
# per variant so that the timed region holds exactly the call a user writes.


class Engines:
    def __init__(self, tokenizer_path: Path):
        import numpy as np
        import torch
        import grammask
        import llguidance
        import xgrammar as xgr
        import llguidance.numpy as llg_numpy
        import llguidance.torch as llg_torch
        from transformers import PreTrainedTokenizerFast

        torch.set_num_threads(1)
        self.np, self.torch = np, torch
        self.grammask, self.llguidance, self.xgr = grammask, llguidance, xgr
        text = tokenizer_path.read_text()
        self.gm_vocab = grammask.Vocabulary.from_tokenizer_json(str(tokenizer_path))
        self.gm_compiler = grammask.Compiler(self.gm_vocab)
        vocab_size = self.gm_vocab.vocab_size
        self.llg_tok = llguidance.LLTokenizer(text, n_vocab=vocab_size, eos_token=STOP_TOKENS)
        hf = PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path))
        info = xgr.TokenizerInfo.from_huggingface(hf, vocab_size=vocab_size, stop_token_ids=STOP_TOKENS)
        self.xgr_compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
        assert self.llg_tok.vocab_size == vocab_size == info.vocab_size, "vocabulary sizes differ"
        self.vocab_size = vocab_size
        # One bitmask per variant, allocated by each library's own helper.
        self.bitmask = {
            "grammask": grammask.allocate_token_bitmask(1, vocab_size),
            "grammask-torch": torch.from_numpy(grammask.allocate_token_bitmask(1, vocab_size)),
            "llguidance": llg_numpy.allocate_token_bitmask(1, vocab_size),
            "llguidance-torch": llg_torch.allocate_token_bitmask(1, vocab_size),
            "xgrammar": xgr.allocate_token_bitmask(1, vocab_size),
        }
        self.versions = {
            "grammask": grammask.__version__,
            "llguidance": _dist_version("llguidance"),
            "xgrammar": _dist_version("xgrammar"),
            "torch": torch.__version__,
            "numpy": np.__version__,
        }

    def compile(self, kind: str, source) -> dict:
        """Compiled grammars of the three engines (raises on any engine's failure)."""
        llg = self.llguidance
        if kind == "schema":
            schema_s = json.dumps(source)
            gm = self.gm_compiler.compile_json_schema(source)
            llg_grammar = json.dumps({"grammars": [{"json_schema": source}]})
            xg = self.xgr_compiler.compile_json_schema(schema_s, any_whitespace=True, strict_mode=False)
        elif kind == "gbnf":
            gm = self.gm_compiler.compile_gbnf(source)
            llg_grammar = llg.grammar_from("gbnf", source)
            # XGrammar's EBNF has no empty alternative: json.gbnf's `ws ::= | " " | ...` is
            # spelled `ws ::= "" | " " | ...` for it (the same language).
            xg = self.xgr_compiler.compile_grammar(re.sub(r"::=(\s*)\|", r'::=\1"" |', source))
        elif kind == "regex":
            gm = self.gm_compiler.compile_regex(source)
            llg_grammar = llg.LLMatcher.grammar_from_regex(source)
            xg = self.xgr_compiler.compile_regex(source)
        else:
            raise ValueError(kind)
        probe = llg.LLMatcher(self.llg_tok, llg_grammar)
        if probe.is_error():
            raise ValueError(f"llguidance: {probe.get_error()}")
        return {"grammask": gm, "llguidance": llg_grammar, "xgrammar": xg}

    def matcher(self, variant: str, compiled: dict):
        if variant.startswith("grammask"):
            return self.grammask.Matcher(compiled["grammask"])
        if variant.startswith("llguidance"):
            return self.llguidance.LLMatcher(self.llg_tok, compiled["llguidance"])
        return self.xgr.GrammarMatcher(compiled["xgrammar"])


def _dist_version(name: str) -> str:
    from importlib.metadata import version

    try:
        return version(name)
    except Exception:
        return "?"


def walk_grammask(m, bitmask, tokens, out):
    """One walk: the fill before each token and after the last, each call timed."""
    pc = time.perf_counter_ns
    m.reset()
    n = len(tokens)
    for step in range(n + 1):
        t0 = pc()
        m.fill_next_token_bitmask(bitmask, 0)
        t1 = pc()
        out.append(t1 - t0)
        if step < n and not m.accept_token(tokens[step]):
            return False
    return True


def walk_llguidance_numpy(m, bitmask, tokens, out):
    from llguidance.numpy import fill_next_token_bitmask

    pc = time.perf_counter_ns
    m.reset()
    n = len(tokens)
    for step in range(n + 1):
        t0 = pc()
        fill_next_token_bitmask(m, bitmask, 0)
        t1 = pc()
        out.append(t1 - t0)
        if step < n and not m.consume_token(tokens[step]):
            return False
    return not m.is_error()


def walk_llguidance_torch(m, bitmask, tokens, out):
    from llguidance.torch import fill_next_token_bitmask

    pc = time.perf_counter_ns
    m.reset()
    n = len(tokens)
    for step in range(n + 1):
        t0 = pc()
        fill_next_token_bitmask(m, bitmask, 0)
        t1 = pc()
        out.append(t1 - t0)
        if step < n and not m.consume_token(tokens[step]):
            return False
    return not m.is_error()


def walk_xgrammar(m, bitmask, tokens, out):
    pc = time.perf_counter_ns
    m.reset()
    n = len(tokens)
    for step in range(n + 1):
        t0 = pc()
        m.fill_next_token_bitmask(bitmask, 0)
        t1 = pc()
        out.append(t1 - t0)
        if step < n and not m.accept_token(tokens[step]):
            return False
    return True


def walk_timer(_m, _bitmask, tokens, out):
    pc = time.perf_counter_ns
    for _ in range(len(tokens) + 1):
        t0 = pc()
        t1 = pc()
        out.append(t1 - t0)
    return True


WALKS = {
    "grammask": walk_grammask,
    "grammask-torch": walk_grammask,
    "llguidance": walk_llguidance_numpy,
    "llguidance-torch": walk_llguidance_torch,
    "xgrammar": walk_xgrammar,
}


# ---------------------------------------------------------------------------------------
# Documents


def maskbench_documents(root: Path, every: int, limit: int | None):
    """(name, schema, instance) for every ``every``-th file in name order that has a valid
    test; also the number of files picked without one."""
    files = sorted(root.glob("*.json"))[::every]
    if limit:
        files = files[:limit]
    docs, no_valid = [], 0
    for path in files:
        data = json.loads(path.read_text())
        valid = [t for t in data.get("tests", []) if t.get("valid")]
        if not valid:
            no_valid += 1
            continue
        docs.append((path.name, data["schema"], valid[0]["data"]))
    return len(files), docs, no_valid


class Case:
    def __init__(self, group: str, name: str, compiled: dict, tokens: list[int]):
        self.group, self.name, self.compiled, self.tokens = group, name, compiled, tokens


def prepare(engines: Engines, tokenizer, args) -> tuple[list[Case], dict]:
    counts = {"maskbench_files": 0, "no_valid_instance": 0, "compile_failed": {}, "refused": {}}

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False).ids

    def warm(case: Case) -> str | None:
        """The warm walk of every variant; the first variant refusing, or None."""
        for variant in VARIANTS:
            m = engines.matcher(variant, case.compiled)
            if not WALKS[variant](m, engines.bitmask[variant], case.tokens, []):
                return variant
        return None

    cases: list[Case] = []
    gbnf = Case("json.gbnf", "json.gbnf", engines.compile("gbnf", JSON_GBNF.read_text()),
                encode(JSON_DOC.read_text()))
    near = Case("near-empty", NEAR_EMPTY, engines.compile("regex", NEAR_EMPTY), encode(NEAR_EMPTY))
    for case in (gbnf, near):
        bad = warm(case)
        if bad:
            raise SystemExit(f"{case.name}: {bad} refuses a token of its document")
        cases.append(case)

    picked, docs, counts["no_valid_instance"] = maskbench_documents(args.maskbench, args.every, args.limit)
    counts["maskbench_files"] = picked
    for name, schema, instance in docs:
        try:
            compiled = engines.compile("schema", schema)
        except Exception as e:  # any engine's failure drops the schema for all
            counts["compile_failed"][name] = f"{type(e).__name__}: {str(e)[:160]}"
            continue
        case = Case("maskbench", name, compiled, encode(json.dumps(instance, indent=None, ensure_ascii=False)))
        bad = warm(case)
        if bad:
            counts["refused"][name] = bad
            continue
        cases.append(case)
    return cases, counts


# ---------------------------------------------------------------------------------------
# Measurement


def percentile(sorted_values: list[int], q: float) -> float:
    if not sorted_values:
        return float("nan")
    k = (len(sorted_values) - 1) * q
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def summarize(times: list[int]) -> dict:
    s = sorted(times)
    return {"n": len(s), "mean": sum(s) / len(s) / 1e3, "p50": percentile(s, 0.5) / 1e3,
            "p99": percentile(s, 0.99) / 1e3}


def one_run(engines: Engines, cases: list[Case], reps: int, near_reps: int, run: int) -> dict:
    """Per group and variant, the pooled per-call times (ns) of this run."""
    order = VARIANTS + ["timer"]
    walks = dict(WALKS, timer=walk_timer)
    times: dict[str, dict[str, list[int]]] = {}
    for i, case in enumerate(cases):
        k = (i + run) % len(order)
        rotated = order[k:] + order[:k]
        matchers = {v: (engines.matcher(v, case.compiled) if v != "timer" else None) for v in order}
        for v in order:  # the warm walk of this run's matchers
            walks[v](matchers[v], engines.bitmask.get(v), case.tokens, [])
        group = times.setdefault(case.group, {v: [] for v in order})
        n = near_reps if case.group == "near-empty" else reps
        gc.collect()
        gc.disable()
        try:
            for _ in range(n):
                for v in rotated:
                    if not walks[v](matchers[v], engines.bitmask.get(v), case.tokens, group[v]):
                        raise SystemExit(f"{case.name}: {v} refused a token on a timed walk")
        finally:
            gc.enable()
    return {g: {v: summarize(t) for v, t in per.items()} for g, per in times.items()}


def breakdown(engines: Engines, batches: int = 15, per_batch: int = 5000) -> dict:
    """Micro-timings (ns per call: the fastest and the median of ``batches`` batches; the
    fastest is the least disturbed by other processes) of the parts of a grammask call as
    Python sees them, beside the whole calls in the near-empty state."""
    np, torch, grammask = engines.np, engines.torch, engines.grammask
    compiled = engines.compile("regex", NEAR_EMPTY)
    gm = grammask.Matcher(compiled["grammask"])
    xm = engines.xgr.GrammarMatcher(compiled["xgrammar"])
    lm = engines.llguidance.LLMatcher(engines.llg_tok, compiled["llguidance"])
    bm_np = engines.bitmask["grammask"]
    bm_t = engines.bitmask["grammask-torch"]
    bm_x = engines.bitmask["xgrammar"]
    row = bm_np[0]
    ptr, nbytes = row.ctypes.data, row.size * 4
    from llguidance.numpy import fill_next_token_bitmask as llg_np
    from llguidance.torch import fill_next_token_bitmask as llg_t

    def not_buffer():
        try:
            memoryview(bm_t)
        except TypeError:
            pass

    parts = {
        "empty loop body (timer floor)": lambda: None,
        "grammask Matcher.can_terminate() (PyO3 method floor)": gm.can_terminate,
        "memoryview(numpy bitmask) (buffer protocol, acquire+release)": lambda: memoryview(bm_np).release(),
        "memoryview(torch tensor) raising TypeError (a failed buffer attempt)": not_buffer,
        "hasattr(tensor, '__dlpack__')": lambda: hasattr(bm_t, "__dlpack__"),
        "tensor.__dlpack__() (torch's DLPack export, capsule freed)": bm_t.__dlpack__,
        "torch._C._to_dlpack(tensor) (the same without torch's Python checks)": lambda: torch._C._to_dlpack(bm_t),
        "tensor.data_ptr()": bm_t.data_ptr,
        "numpy bitmask.fill(-1) (the 16 KB row written)": lambda: bm_np.fill(-1),
        "grammask fill, numpy bitmask (near-empty state)": lambda: gm.fill_next_token_bitmask(bm_np, 0),
        "grammask fill, torch bitmask (near-empty state)": lambda: gm.fill_next_token_bitmask(bm_t, 0),
        "xgrammar fill, torch bitmask (near-empty state)": lambda: xm.fill_next_token_bitmask(bm_x, 0),
        "llguidance unsafe_compute_mask_ptr (near-empty state, no helper)": lambda: lm.unsafe_compute_mask_ptr(ptr, nbytes),
        "llguidance.numpy.fill_next_token_bitmask (near-empty state)": lambda: llg_np(lm, bm_np, 0),
        "llguidance.torch.fill_next_token_bitmask (near-empty state)": lambda: llg_t(lm, bm_x, 0),
    }
    out = {}
    pc = time.perf_counter_ns
    gc.disable()
    try:
        for name, fn in parts.items():
            for _ in range(1000):
                fn()
            times = []
            for _ in range(batches):
                t0 = pc()
                for _ in range(per_batch):
                    fn()
                times.append((pc() - t0) / per_batch)
            out[name] = {"min": min(times), "median": statistics.median(times)}
    finally:
        gc.enable()
    return out


# ---------------------------------------------------------------------------------------
# Report


def median_runs(runs: list[dict]) -> dict:
    out: dict = {}
    for g in runs[0]:
        out[g] = {}
        for v in runs[0][g]:
            out[g][v] = {k: statistics.median(r[g][v][k] for r in runs) for k in ("mean", "p50", "p99")}
            out[g][v]["n"] = runs[0][g][v]["n"]
    return out


def ratios(runs: list[dict]) -> dict:
    out: dict = {}
    for g in runs[0]:
        out[g] = {}
        for a, b in RATIOS:
            out[g][f"{a}/{b}"] = {k: statistics.median(r[g][a][k] / r[g][b][k] for r in runs)
                                 for k in ("mean", "p50", "p99")}
    return out


def render(med: dict, rat: dict, runs: list[dict]) -> str:
    lines = []
    for g in med:
        lines.append(f"\n{g}: per-call time, µs (median of {len(runs)} runs; calls per variant per run: "
                     f"{med[g]['grammask']['n']})")
        lines.append(f"| {'variant':<17} | {'mean':>8} | {'p50':>8} | {'p99':>8} | runs' means |")
        lines.append(f"|{'-' * 19}|{'-' * 10}|{'-' * 10}|{'-' * 10}|-------------|")
        for v in med[g]:
            spread = ", ".join(f"{r[g][v]['mean']:.2f}" for r in runs)
            m = med[g][v]
            lines.append(f"| {v:<17} | {m['mean']:8.2f} | {m['p50']:8.2f} | {m['p99']:8.2f} | {spread} |")
        for name, r in rat[g].items():
            lines.append(f"  {name:<34} mean {r['mean']:.3g}x  p50 {r['p50']:.3g}x  p99 {r['p99']:.3g}x")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokenizer", type=Path, default=default_tokenizer())
    ap.add_argument("--maskbench", type=Path, default=default_maskbench())
    ap.add_argument("--every", type=int, default=100, help="every N-th MaskBench file in name order")
    ap.add_argument("--limit", type=int, default=None, help="at most this many MaskBench files")
    ap.add_argument("--reps", type=int, default=5, help="timed walks per document per run")
    ap.add_argument("--near-reps", type=int, default=2000, help="timed walks of the near-empty document")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--breakdown", action="store_true", help="also time the parts of a grammask call")
    ap.add_argument("--breakdown-only", action="store_true", help="only --breakdown (no walks)")
    ap.add_argument("--json-out", type=Path, default=None)
    args = ap.parse_args()
    if not args.tokenizer.is_file():
        raise SystemExit(f"{args.tokenizer}: missing (scripts/fetch-tokenizers.sh fetches it)")
    if not args.maskbench.is_dir():
        raise SystemExit(f"{args.maskbench}: not a directory (MaskBench's data; --maskbench)")

    from tokenizers import Tokenizer

    engines = Engines(args.tokenizer)
    if args.breakdown_only:
        print("\nbreakdown: ns per call (fastest and median of 15 batches of 5,000 calls)")
        for name, ns in breakdown(engines).items():
            print(f"  {ns['min']:9.1f} {ns['median']:9.1f}  {name}")
        return
    tokenizer = Tokenizer.from_file(str(args.tokenizer))
    t0 = time.monotonic()
    cases, counts = prepare(engines, tokenizer, args)
    mb = [c for c in cases if c.group == "maskbench"]
    print(f"python {platform.python_version()}, {os.cpu_count()} cpus, RAYON_NUM_THREADS="
          f"{os.environ.get('RAYON_NUM_THREADS')}, torch threads {engines.torch.get_num_threads()}; "
          + ", ".join(f"{k} {v}" for k, v in engines.versions.items()))
    print(f"MaskBench: {counts['maskbench_files']} files (every {args.every}-th), "
          f"{counts['no_valid_instance']} without a valid instance, "
          f"{len(counts['compile_failed'])} failing to compile in some engine, "
          f"{len(counts['refused'])} with the instance refused by some engine, {len(mb)} measured "
          f"({sum(len(c.tokens) for c in mb)} tokens); json.gbnf document "
          f"{len(cases[0].tokens)} tokens; near-empty {len(cases[1].tokens)} tokens; "
          f"prepared in {time.monotonic() - t0:.0f} s", flush=True)
    for name, err in counts["compile_failed"].items():
        print(f"  compile failed: {name}: {err}")
    for name, v in counts["refused"].items():
        print(f"  instance refused: {name} by {v}")

    runs = []
    for run in range(args.runs):
        t0 = time.monotonic()
        runs.append(one_run(engines, cases, args.reps, args.near_reps, run))
        g = runs[-1]
        print(f"run {run + 1}/{args.runs} in {time.monotonic() - t0:.0f} s: means (µs) "
              + "; ".join(f"{grp} " + " ".join(f"{v} {g[grp][v]['mean']:.2f}" for v in g[grp]) for grp in g),
              flush=True)
    med, rat = median_runs(runs), ratios(runs)
    print(render(med, rat, runs))
    result = {"args": {k: str(v) for k, v in vars(args).items()}, "versions": engines.versions,
              "counts": counts, "runs": runs, "median": med, "ratios": rat}
    if args.breakdown:
        parts = breakdown(engines)
        result["breakdown_ns"] = parts
        print("\nbreakdown: ns per call (fastest and median of 15 batches of 5,000 calls)")
        for name, ns in parts.items():
            print(f"  {ns['min']:9.1f} {ns['median']:9.1f}  {name}")
    if args.json_out:
        args.json_out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""XGrammar on exactly the schemas, vocabulary and token sequences grammask-bench walked.

Input: the JSONL written by `grammask-bench maskbench --export-steps FILE` (or
`grammask-bench steps --export-steps FILE`): a first line with the vocabulary (every
id's bytes in base64, the special ids, EOS, vocab_size), then one line per schema or
grammar with its token sequences.

For each line, in a worker process (10 s deadline, address-space cap; a hang or a crash
is counted and the worker replaced):
  - ttfm_us: compile + first mask with a GrammarCompiler whose cache is off;
  - ttfm_warm_us: compile + first mask with a GrammarCompiler whose cache is kept for
    the worker's lifetime (schemas in file order);
  - the time of `fill_next_token_bitmask` at every step of every token sequence (then
    EOS), each token checked against the mask and accepted.
Prints the same statistics as grammask-bench (mean, p50, p99, p999, max; nearest rank)
as JSON, and with `--details` (grammask-bench's `--details` JSONL) the grammask/XGrammar
pairs over the schemas both compiled and the instances both walked.

The vocabulary is handed to XGrammar as a RAW TokenizerInfo of the same bytes; special
tokens and padding ids are given as empty tokens (XGrammar treats those as special, so it
never matches them as text, like grammask). JSON Schemas compile with strict_mode=False
(JSON Schema's own meaning of a missing additionalProperties, as grammask's default) and
the default any_whitespace. GBNF grammars get llama.cpp's empty alternative rewritten as
an optional group (XGrammar's EBNF has no empty alternative).

Usage: xgrammar_steps.py STEPS.jsonl [--details DETAILS.jsonl] [--ours grammask,grammask-eager]
       [--jobs 2] [--timeout 10] [--runs N] [--mem-mb 8192] [--out OUT.json] [--progress]
       [--save-results R.json | --load-results R.json]
Run it with the Python of ../shared/peers/setup.sh's venv (xgrammar 0.2.9).
"""
import argparse
import base64
import json
import math
import multiprocessing as mp
import queue
import re
import sys
import threading
import time


def summary(values):
    """Mean and nearest-rank percentiles, as grammask_bench::stats::Summary."""
    if not values:
        return {"count": 0, "mean": 0.0, "p50": 0.0, "p99": 0.0, "p999": 0.0, "max": 0.0}
    s = sorted(values)
    n = len(s)

    def rank(q):
        i = min(max(math.ceil(q * n), 1), n) - 1
        return s[i]

    r = lambda x: round(x * 10) / 10
    return {"count": n, "mean": r(sum(s) / n), "p50": r(rank(0.5)), "p99": r(rank(0.99)),
            "p999": r(rank(0.999)), "max": r(s[-1])}


def cdf_points(values):
    s = sorted(values)
    if not s:
        return []
    ps = sorted([i / 200 for i in range(201)] + [0.9925, 0.995, 0.9975, 0.999, 0.9995, 0.9999])
    n = len(s)
    return [[p, round(s[min(max(math.ceil(p * n), 1), n) - 1] * 100) / 100] for p in ps]


def gbnf_for_xgrammar(text):
    """llama.cpp's `ws ::= | " " | ...` (empty alternative) as an optional group."""
    out = []
    for line in text.splitlines():
        m = re.match(r"^(\s*[\w-]+\s*::=)\s*\|(.*)$", line)
        out.append(f"{m.group(1)} ({m.group(2)})?" if m else line)
    return "\n".join(out)


def worker(vocab, mem_mb, conn):
    """Answers one job per message on `conn`."""
    import resource
    import xgrammar as xgr
    import numpy as np
    if mem_mb:
        lim = mem_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
    n = vocab["vocab_size"]
    eos = vocab["eos"]
    special = set(vocab["special_ids"])
    tokens = [b"" if i in special else base64.b64decode(t)
              for i, t in enumerate(vocab["tokens_base64"])]
    info = xgr.TokenizerInfo(tokens, xgr.VocabType.RAW, vocab_size=n, stop_token_ids=[eos])
    cold_compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=False)
    warm_compiler = xgr.GrammarCompiler(info, max_threads=1, cache_enabled=True)
    bm = xgr.allocate_token_bitmask(1, n)
    row = bm[0].numpy()

    def compile_with(compiler, job):
        if "schema" in job:
            return compiler.compile_json_schema(json.dumps(job["schema"]), strict_mode=False)
        if job.get("builtin") == "json":
            return compiler.compile_builtin_json_grammar()
        return compiler.compile_grammar(gbnf_for_xgrammar(job["grammar"]), root_rule_name="root")

    def allowed(tok):
        return (int(row[tok >> 5]) >> (tok & 31)) & 1 == 1

    def walk(cg, ids):
        m = xgr.GrammarMatcher(cg)
        steps = []
        for step in range(len(ids) + 1):
            tok = ids[step] if step < len(ids) else eos
            t0 = time.perf_counter()
            m.fill_next_token_bitmask(bm)
            steps.append(round((time.perf_counter() - t0) * 1e8) / 100)
            if not allowed(tok):
                return steps, {"step": step, "token": tok, "reason": "not in the mask"}
            if step < len(ids) and not m.accept_token(tok):
                return steps, {"step": step, "token": tok, "reason": "accept_token refused"}
        return steps, None

    conn.send("ready")
    while True:
        job = conn.recv()
        if job is None:
            return
        try:
            times = []
            for compiler in (cold_compiler, warm_compiler):
                t0 = time.perf_counter()
                cg = compile_with(compiler, job)
                m = xgr.GrammarMatcher(cg)
                m.fill_next_token_bitmask(bm)
                times.append((time.perf_counter() - t0) * 1e6)
            walks = []
            for _ in range(job.get("runs", 1)):
                for ids in job["instances"]:
                    steps, refused = walk(cg, ids)
                    walks.append({"steps_us": steps, "refused": refused})
            conn.send({"ok": True, "ttfm_us": times[0], "ttfm_warm_us": times[1],
                       "walks": walks})
        except Exception as e:  # XGrammar refuses the schema: an answer, not a crash
            conn.send({"ok": False, "error": str(e)[:300]})


class Worker:
    def __init__(self, vocab, mem_mb):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=worker, args=(vocab, mem_mb, child), daemon=True)
        self.proc.start()
        if not self.conn.poll(600) or self.conn.recv() != "ready":
            self.kill()
            raise RuntimeError("xgrammar worker did not start")

    def run(self, job, timeout):
        try:
            self.conn.send(job)
            if not self.conn.poll(timeout):
                self.kill()
                return "timeout"
            return self.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self.kill()
            return f"crash (exit code {self.proc.exitcode})"

    def kill(self):
        if self.proc.is_alive():
            self.proc.kill()
        self.proc.join()


def pair_with(details, ours_name, by_file):
    """The engine `ours_name` of grammask-bench's --details JSONL against XGrammar's
    results `by_file`, over the schemas both compiled and the instances both walked."""
    ours = {}
    with open(details) as f:
        for line in f:
            d = json.loads(line)
            if d.get("engine") == ours_name and d.get("ok"):
                ours[d["file"]] = d
    g, x = {"steps": [], "ttfm": [], "ttfm_warm": []}, {"steps": [], "ttfm": [], "ttfm_warm": []}
    schemas = instances = 0
    for name, xr in by_file.items():
        gr = ours.get(name)
        if gr is None:
            continue
        schemas += 1
        for side, r in ((g, gr), (x, xr)):
            side["ttfm"].append(r["ttfm_us"])
            side["ttfm_warm"].append(r["ttfm_warm_us"])
        for gw, xw in zip(gr["walks"], xr["walks"]):
            if gw["refused"] is None and xw["refused"] is None:
                instances += 1
                g["steps"].extend(gw["steps_us"])
                x["steps"].extend(xw["steps_us"])
    side = lambda s: {"mask_us": summary(s["steps"]), "ttfm_us": summary(s["ttfm"]),
                      "ttfm_warm_us": summary(s["ttfm_warm"])}
    gs, xs = side(g), side(x)
    ratio = lambda a_, b_: round(a_ / b_, 3) if b_ else 0.0
    return {
        "ours": ours_name, "schemas": schemas, "instances": instances, "grammask": gs,
        "peer": xs,
        "ratio_grammask_over_peer": {
            "mask_mean": ratio(gs["mask_us"]["mean"], xs["mask_us"]["mean"]),
            "mask_p50": ratio(gs["mask_us"]["p50"], xs["mask_us"]["p50"]),
            "mask_p99": ratio(gs["mask_us"]["p99"], xs["mask_us"]["p99"]),
            "mask_p999": ratio(gs["mask_us"]["p999"], xs["mask_us"]["p999"]),
            "ttfm_p50": ratio(gs["ttfm_us"]["p50"], xs["ttfm_us"]["p50"]),
            "ttfm_mean": ratio(gs["ttfm_us"]["mean"], xs["ttfm_us"]["mean"]),
        }}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("steps")
    ap.add_argument("--details", help="grammask-bench --details JSONL, for the pairs")
    ap.add_argument("--ours", default="grammask",
                    help="engines of the details paired with XGrammar, comma-separated "
                         "(grammask, grammask-eager)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--runs", type=int, default=1, help="walks of each sequence")
    ap.add_argument("--mem-mb", type=int, default=8192)
    ap.add_argument("--out")
    ap.add_argument("--save-results", help="write XGrammar's answer for every schema here")
    ap.add_argument("--load-results",
                    help="take XGrammar's answers from a --save-results file instead of running it")
    ap.add_argument("--progress", action="store_true")
    a = ap.parse_args()

    with open(a.steps) as f:
        vocab = json.loads(f.readline())["vocab"]
        jobs = [json.loads(line) for line in f if line.strip()]
    for j in jobs:
        j["runs"] = a.runs
    results = [None] * len(jobs)
    next_job = iter(range(len(jobs)))
    lock = threading.Lock()
    start = time.time()

    def pool_thread():
        w = None
        while True:
            with lock:
                i = next(next_job, None)
            if i is None:
                break
            if w is None:
                w = Worker(vocab, a.mem_mb)
            t0 = time.time()
            r = w.run(jobs[i], a.timeout)
            if not isinstance(r, dict):
                w = None
            results[i] = r
            if a.progress:
                what = r if isinstance(r, str) else ("ok" if r["ok"] else "refused")
                print(f"[{i + 1}/{len(jobs)} {time.time() - start:.0f} s] "
                      f"{jobs[i].get('file')} {time.time() - t0:.2f} s {what}", file=sys.stderr)
        if w is not None:
            w.conn.send(None)
            w.proc.join(5)
            w.kill()

    if a.load_results:
        with open(a.load_results) as f:
            saved = json.load(f)
        results = [saved[i] for i in range(len(jobs))] if isinstance(saved, list) else saved
    else:
        threads = [threading.Thread(target=pool_thread) for _ in range(max(1, a.jobs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    if a.save_results:
        with open(a.save_results, "w") as f:
            json.dump(results, f)

    agg = {"compiled": 0, "refused": 0, "timeouts": 0, "crashes": 0, "instances_walked": 0,
           "instances_with_refused_token": 0}
    steps, ttfm, ttfm_warm, examples = [], [], [], []
    by_file = {}
    for job, r in zip(jobs, results):
        name = job.get("file")
        if isinstance(r, str):
            agg["timeouts" if r == "timeout" else "crashes"] += 1
            examples.append({"file": name, "what": r})
            continue
        if not r["ok"]:
            agg["refused"] += 1
            continue
        agg["compiled"] += 1
        ttfm.append(r["ttfm_us"])
        ttfm_warm.append(r["ttfm_warm_us"])
        by_file[name] = r
        for i, w in enumerate(r["walks"]):
            agg["instances_walked"] += 1
            steps.extend(w["steps_us"])
            if w["refused"]:
                agg["instances_with_refused_token"] += 1
                if len(examples) < 30:
                    examples.append({"file": name, "what": f"valid instance {i}: {w['refused']}"})
    from importlib.metadata import version
    xgr = dict(agg, schemas=len(jobs), mask_us=summary(steps), ttfm_us=summary(ttfm),
               ttfm_warm_us=summary(ttfm_warm), mask_cdf=cdf_points(steps), examples=examples)
    if a.runs > 1:
        # As `grammask-bench steps`: the first walk of each sequence is cold (fresh
        # compiled grammar), the later ones warm.
        cold, warm = [], []
        for job, r in zip(jobs, results):
            if isinstance(r, dict) and r["ok"]:
                k = len(job["instances"])
                for i, w in enumerate(r["walks"]):
                    (cold if i < k else warm).extend(w["steps_us"])
        xgr["cold_mask_us"] = summary(cold)
        xgr["warm_mask_us"] = summary(warm)
    out = {"engine": "xgrammar", "version": version("xgrammar"), "vocab": vocab.get("spec"),
           "jobs": a.jobs, "deadline_s": a.timeout, "wall_s": round(time.time() - start),
           "engines": {"xgrammar": xgr}}

    if a.details:
        for ours_name in a.ours.split(","):
            pair = pair_with(a.details, ours_name, by_file)
            # grammask's pairs under `pairs`, grammask-eager's under `pairs_eager`, as
            # grammask-bench writes them.
            key = "pairs" if ours_name == "grammask" else "pairs_eager"
            out[key] = {"xgrammar": pair}
    text = json.dumps(out, indent=1)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    brief = {k: v for k, v in xgr.items() if k not in ("mask_cdf", "examples")}
    print(json.dumps({"xgrammar": brief, "pairs": out.get("pairs"),
                      "pairs_eager": out.get("pairs_eager")}, indent=1))


if __name__ == "__main__":
    main()

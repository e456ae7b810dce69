#!/usr/bin/env python3
"""grammask, llguidance and XGrammar in JSONSchemaBench's own MaskBench harness, one run.

The harness (JSONSchemaBench's `maskbench/` runner, the one behind MaskBench's published
TBM/TTFM table) is not part of this project and is never copied into it: this script
imports it at run time from `--harness DIR` (default: ../shared/jsonschemabench-maskbench
beside the repository). For each engine it calls the harness's own
`maskbench.runner.process_file(engine, file)` over the MaskBench files, exactly as the
runner's `main` does, and then prints the harness's table.

Engines (`--engines`, default `grammask,llg,xgr-compliant`):
  grammask       bench-suite/python/grammask_maskbench.py on grammask's Python API, its
                 defaults (schema property order, flexible whitespace, non-strict);
                 RAYON_NUM_THREADS=1.
  llg            the harness's LlgEngine (llguidance).
  xgr-compliant  the harness's XgrEngine as its `--xgr-compliant` flag sets it up:
                 strict_mode=False, any_whitespace=True, GrammarCompiler(max_threads=1).
  xgr, xgr-cpp, outlines, llamacpp   the harness's other engines, if installed.
Harness engines are built by the harness's own `runner.get_engine` from its own flags.

How a run goes (what the harness's `scripts/run_maskbench.py` does, on this machine's 2
cores): each engine runs in worker processes, one file after another, single-threaded
(RAYON_NUM_THREADS=1, OMP_NUM_THREADS=1), with the runner's per-file time limit
(SIGALRM, default 900 s) and address-space cap (default 16 GiB here; the harness's 40
is more than this machine has). The runner writes one result JSON per schema into
OUT/<engine>/ (a `{"pending_file": 1}` placeholder first). A worker that dies (timeout:
exit -14, segfault: -11, abort/out of memory: -6) leaves its placeholder, its exit code
goes to OUT/<engine>/log.txt as `Exit code: N` (the line `maskbench_results.py` counts;
the workers' own output is in worker-K.log), and a new worker goes on with the files
left. As in run_maskbench, a worker process takes at most `--chunk` (100) files and a
fresh one the next: no engine keeps caches or memory across more than 100 schemas
(in one process for the whole corpus, XGrammar's worker grew past 3 GB resident in
16 minutes and kept growing).
OUT/<engine>/meta.txt is the JSON that `run_maskbench.py` writes (id, name,
module, module_version, cmd, info), plus `time_limit_s`. Engines run one after the
other; `--jobs 2` runs two engines at once, `--workers 2` one engine in two processes on
interleaved halves of the files (each still single-threaded, as the harness's 40-way
runs are). Re-running with the same OUT resumes: finished files are kept, placeholders
of an interrupted run (no worker crash recorded for them) are run again; a lock keeps a
second driver off an engine folder in use.

The table. The harness's `scripts/maskbench_results.py` reads those folders but knows
only its own engine ids (its column sort fails on `grammask` and `xgr-compliant`) and
divides by the number of masks over 10 ms (zero for a fast engine), so this script
computes the same table itself, with the harness's definitions: TBM = every
compute_mask+commit_token time of every schema that compiled; TTFM = compile_grammar
times of schemas that compiled, plus one time limit per timeout; percentile p = the
element at index floor(n * p / 100) of the sorted list; avg = floor(sum / n); passing =
compiled and no validation error; "invalidation error" = an invalid instance accepted,
"validation error" = the rest (a valid instance rejected, or an exception while
walking); segfault/out of memory/timeout = worker exit codes -11/-6/-14.
`--harness-results` also runs the harness's own `maskbench_results.main(folder)` on
each folder (needs matplotlib) and reports whether its figures equal these.
Below the table: wall time per engine, and grammask's mask/accept_token agreement
(every token the mask allowed must be accepted: `accept_token` returned True; every
token it forbade refused), summed from OUT/grammask/checks.jsonl.

Environment (a venv with the harness's dependencies; torch only because xgrammar
imports it; `bash bench-suite/python/setup-venv.sh` does all of this):

    python3 -m venv ~/.cache/grammask-bench/venv
    V=~/.cache/grammask-bench/venv/bin
    $V/pip install transformers numpy matplotlib llguidance==1.9.1
    $V/pip install --no-deps xgrammar==0.2.9 torch
    $V/pip install apache-tvm-ffi pydantic typing-extensions filelock sympy networkx \
        jinja2 fsspec 'setuptools>=77' <torch's nvidia-*/cuda-toolkit runtime wheels>
    $V/pip install ./python                     # grammask (the PyO3 package)

(torch from PyPI is a CUDA build: `--no-deps` alone does not import, since libtorch_cuda
needs the CUDA runtime libraries; the setup script installs those wheels but not
triton or cuda-bindings, which xgrammar's CPU path never loads.)

Tokenizer: Llama-3's tokenizer.json and tokenizer_config.json from
`scripts/fetch-tokenizers.sh` (run if missing), copied with a config.json
(`{"model_type": "llama", "vocab_size": 128256}`, which XGrammar's engine reads for the
padded vocabulary) into ~/.cache/grammask-bench/llama3-maskbench/; `--tokenizer DIR`
takes another directory (a config.json is added in a copy when DIR has none).

Usage (from the repository root):

    V=~/.cache/grammask-bench/venv/bin
    OUT=maskbench-harness-out                   # any folder; the default --out
    nice -n 10 $V/python bench-suite/scripts/maskbench_harness.py --out $OUT/full
    $V/python bench-suite/scripts/maskbench_harness.py --every 20 --out $OUT/mb20  # 466 files
    $V/python bench-suite/scripts/maskbench_harness.py --table-only --out $OUT/mb20
"""

import argparse
import contextlib
import ctypes
import fcntl
import hashlib
import importlib.util
import io
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
ENGINE_DIR = REPO / "bench-suite" / "python"
DEFAULT_HARNESS = REPO.parent / "shared" / "jsonschemabench-maskbench"
DEFAULT_DATA = REPO.parent / "shared" / "data" / "maskbench"
BENCH_CACHE = Path.home() / ".cache" / "grammask-bench"

# The harness's engine flags (runner.setup_argparse), by the engine's id.
HARNESS_FLAGS = {
    "llg": "--llg",
    "xgr": "--xgr",
    "xgr-compliant": "--xgr-compliant",
    "xgr-cpp": "--xgr-cpp",
    "outlines": "--outlines",
    "llamacpp": "--llamacpp",
}
ENGINES = ["grammask", *HARNESS_FLAGS]
DEFAULT_ENGINES = "grammask,llg,xgr-compliant"

PERCENTILES = [25, 50, 75, 90, 95, 99, 99.9, 100]
EXIT_SEGV, EXIT_ABORT, EXIT_ALARM = -11, -6, -14
WORKER_ENV = {
    "RAYON_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TRANSFORMERS_VERBOSITY": "error",
}


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---------------------------------------------------------------- inputs


def tokenizer_vocab_size(tokenizer_json: Path) -> int:
    """Ids in a tokenizer.json: one past the largest id of its model vocabulary and added tokens."""
    tj = json.loads(tokenizer_json.read_text())
    vocab = tj.get("model", {}).get("vocab", {})
    ids = list(vocab.values()) if isinstance(vocab, dict) else list(range(len(vocab)))
    ids += [t["id"] for t in tj.get("added_tokens", [])]
    return max(ids) + 1


def prepare_tokenizer(arg):
    """A directory with tokenizer.json, tokenizer_config.json and config.json."""
    if arg:
        src = Path(arg).expanduser().resolve()
        if (src / "config.json").exists():
            return src
        key = hashlib.sha256(str(src).encode()).hexdigest()[:12]
        dest = BENCH_CACHE / f"tokenizer-{key}"
    else:
        cache = os.environ.get("GRAMMASK_CACHE") or str(Path.home() / ".cache/grammask/tokenizers")
        src = Path(cache) / "llama3"
        if not (src / "tokenizer.json").exists():
            subprocess.run(["bash", str(REPO / "scripts" / "fetch-tokenizers.sh")], check=True)
        dest = BENCH_CACHE / "llama3-maskbench"
    if not (src / "tokenizer.json").exists():
        sys.exit(f"no tokenizer.json in {src}")
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (src / name).exists() and not (dest / name).exists():
            shutil.copy(src / name, dest / name)
    if not (dest / "config.json").exists():
        n = tokenizer_vocab_size(dest / "tokenizer.json")
        (dest / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": n}))
    return dest


def select_files(args):
    data = Path(args.data).expanduser()
    if args.files:
        files = [str(Path(f).resolve()) for f in args.files]
    else:
        files = sorted(str(p) for p in data.glob("*.json"))
    if not files:
        sys.exit(f"no *.json files in {data}")
    if args.every > 1:
        files = files[:: args.every]
    if args.limit:
        files = files[: args.limit]
    return files


# ---------------------------------------------------------------- worker


def set_parent_death_signal():
    """Workers die with the driver (Linux), so an interrupted run leaves no orphans."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def make_engine(engine_id, runner, tokenizer_dir):
    if engine_id == "grammask":
        sys.path.insert(0, str(ENGINE_DIR))
        from grammask_maskbench import GrammaskEngine

        engine = GrammaskEngine()
        engine.multi = True
        engine.tokenizer_model_id = tokenizer_dir
        engine.debug = False
        return engine
    argv = [HARNESS_FLAGS[engine_id], "--multi", "--tokenizer", tokenizer_dir, "unused.json"]
    return runner.get_engine(runner.setup_argparse().parse_args(argv))


def module_file(name):
    """Where the engine's module was imported from, and when that file was written."""
    mod = sys.modules.get(name)
    path = getattr(mod, "__file__", None) if mod else None
    if not path:
        return None
    ext = [p for p in Path(path).parent.glob("*.so")]
    f = ext[0] if ext else Path(path)
    return f"{f} ({time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(f.stat().st_mtime))})"


def worker(args):
    """Runs the harness's process_file over the listed files (the runner's main, one engine)."""
    if sys.platform.startswith("linux"):
        limit = args.mem_limit * 1024**3
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    sys.path.insert(0, str(Path(args.harness).resolve()))
    from maskbench import runner
    from transformers import AutoTokenizer

    out = Path(args.out_dir)
    engine = make_engine(args.worker, runner, args.tokenizer)
    if engine.get_id() != args.worker:
        sys.exit(f"engine id {engine.get_id()!r} is not {args.worker!r}")
    engine.tokenizer = AutoTokenizer.from_pretrained(engine.tokenizer_model_id)
    engine.init()
    meta = {
        "id": engine.get_id(),
        "name": engine.get_name(),
        "module": engine.get_module(),
        "module_version": engine.get_version(),
        "cmd": [sys.executable, *sys.argv],
        "info": args.info,
        "time_limit_s": args.time_limit,
        "module_file": module_file(engine.get_module()),
    }
    (out / "meta.txt").write_text(json.dumps(meta, indent=2))

    runner.output_path = str(out)
    files = Path(args.files_from).read_text().split("\n")
    checks = getattr(engine, "checks", None)
    for f in filter(None, files):
        if checks is not None:
            engine.checks = checks = engine.new_checks()
        signal.alarm(args.time_limit)
        status = runner.process_file(engine, f)
        signal.alarm(0)
        if status is not None and checks is not None:
            with open(out / "checks.jsonl", "a") as fh:
                fh.write(json.dumps({"id": status["id"], **checks}) + "\n")


# ---------------------------------------------------------------- driver


def is_pending(path: Path) -> bool:
    try:
        return "num_tests" not in json.loads(path.read_text())
    except (OSError, ValueError):
        return True


def read_jsonl(path: Path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_engine(engine_id, files, args, tokenizer_dir, results):
    out = Path(args.out) / engine_id
    out.mkdir(parents=True, exist_ok=True)
    # One driver per engine folder: a second one would take the first one's placeholders
    # for leftovers of a stopped run.
    lock = open(out / "driver.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log(f"[{engine_id}] another driver is running on {out}: skipped")
        return
    crashes_path = out / "crashes.jsonl"
    crashed = {c["id"] for c in read_jsonl(crashes_path)}
    # Placeholders that no worker crash explains were cut short by a stopped run: redo them.
    for p in out.glob("*.json"):
        if p.name not in crashed and is_pending(p):
            p.unlink()

    def missing(some):
        return [f for f in some if not (out / os.path.basename(f)).exists()]

    env = {**os.environ, **WORKER_ENV}
    info = (
        f"{len(files)} files, timeout {args.time_limit}s, memory {args.mem_limit}GB, "
        f"output {out}; {args.workers} single-threaded worker(s); "
        f"harness {Path(args.harness).resolve()}; tokenizer {tokenizer_dir}"
    )
    t0 = time.monotonic()
    first_todo = len(missing(files))
    log(f"[{engine_id}] {len(files) - first_todo} of {len(files)} files already done")
    runs = [0] * args.workers
    crash_lock = threading.Lock()

    def slot(k):
        """Worker slot k: its share of the files, a new worker after each crash."""
        todo = missing(files[k :: args.workers])
        last = time.monotonic()
        while todo:
            chunk = todo[: args.chunk] if args.chunk > 0 else todo
            list_path = out / f"worker-files-{k}.txt"
            list_path.write_text("\n".join(chunk) + "\n")
            cmd = [
                sys.executable, str(Path(__file__).resolve()), "--worker", engine_id,
                "--harness", str(args.harness), "--tokenizer", str(tokenizer_dir),
                "--out-dir", str(out), "--files-from", str(list_path),
                "--time-limit", str(args.time_limit), "--mem-limit", str(args.mem_limit),
                "--info", info,
            ]
            with open(out / f"worker-{k}.log", "a") as lf:
                lf.write(f"Running command: {' '.join(cmd)}\n")
                lf.flush()
                proc = subprocess.Popen(cmd, stdout=lf, stderr=lf, env=env,
                                        preexec_fn=set_parent_death_signal)
                while proc.poll() is None:
                    time.sleep(1)
                    if k == 0 and args.progress and time.monotonic() - last >= args.progress:
                        last = time.monotonic()
                        done = len(files) - len(missing(files))
                        log(f"[{engine_id}] {done}/{len(files)} files, {last - t0:.0f}s")
                lf.write(f"\nExit code: {proc.returncode}\n")
            runs[k] += 1
            left = missing(chunk)
            with crash_lock:
                # log.txt gets each worker's exit code, the line maskbench_results counts.
                with open(out / "log.txt", "a") as lf:
                    lf.write(f"Running command: {' '.join(cmd)}\nExit code: {proc.returncode}\n")
                if proc.returncode != 0:
                    mine = {os.path.basename(f) for f in chunk}
                    new = [n for n in mine - crashed if is_pending(out / n) and (out / n).exists()]
                    with open(crashes_path, "a") as fh:
                        for name in new:
                            fh.write(json.dumps({"id": name, "exit_code": proc.returncode}) + "\n")
                    crashed.update(new)
                    log(f"[{engine_id}] worker exit {proc.returncode} on "
                        f"{', '.join(new) or '(no file)'}")
            if len(left) == len(chunk):
                log(f"[{engine_id}] no progress (worker exit {proc.returncode}); "
                    f"see {out / f'worker-{k}.log'}")
                return
            todo = missing(todo)

    threads = [threading.Thread(target=slot, args=(k,)) for k in range(args.workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.monotonic() - t0
    results[engine_id] = wall
    if sum(runs):
        with open(out / "run.txt", "a") as fh:
            fh.write(json.dumps({"files": first_todo - len(missing(files)),
                                 "wall_s": round(wall, 1), "workers": args.workers,
                                 "worker_runs": sum(runs),
                                 "finished": time.strftime("%Y-%m-%d %H:%M:%S")}) + "\n")
    log(f"[{engine_id}] done in {wall:.0f}s ({sum(runs)} worker runs)")


# ---------------------------------------------------------------- table


def percentile(sorted_values, p):
    if not sorted_values:
        return 0
    return sorted_values[min(int(len(sorted_values) * p / 100), len(sorted_values) - 1)]


def exit_codes(log_path: Path):
    codes = {}
    if log_path.exists():
        for line in log_path.read_text(errors="replace").splitlines():
            if line.startswith("Exit code: "):
                code = int(line.split(": ", 1)[1])
                codes[code] = codes.get(code, 0) + 1
    return codes


def folder_entries(folder: Path):
    """The harness table's figures for one output folder, as defined in the module doc."""
    meta = json.loads((folder / "meta.txt").read_text())
    limit_us = int(meta.get("time_limit_s", 900)) * 1_000_000
    ttfm, masks = [], []
    n = dict(schemas=0, tokens=0, passing=0, compile=0, validation=0, invalidation=0, pending=0)
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        for d in data if isinstance(data, list) else [data]:
            n["schemas"] += 1
            if "num_tests" not in d:
                n["pending"] += 1
            elif "compile_error" in d:
                n["compile"] += 1
            else:
                ttfm.append(d["ttfm_us"])
                masks.extend(d["all_mask_us"])
                n["tokens"] += d.get("num_tokens", 0)
                err = d.get("validation_error")
                if err is None:
                    n["passing"] += 1
                elif "should reject" in err:
                    n["invalidation"] += 1
                else:
                    n["validation"] += 1
    codes = exit_codes(folder / "log.txt")
    timeouts = codes.get(EXIT_ALARM, 0)
    ttfm = sorted(ttfm + [limit_us] * timeouts)
    masks.sort()
    e = {"TBM avg": sum(masks) // len(masks) if masks else 0}
    e.update({f"TBM p{p}": percentile(masks, p) for p in PERCENTILES})
    e["TTFM avg"] = sum(ttfm) // len(ttfm) if ttfm else 0
    e.update({f"TTFM p{p}": percentile(ttfm, p) for p in PERCENTILES})
    e.update({
        "tokens": n["tokens"],
        "schemas": n["schemas"],
        "passing": n["passing"],
        "compile error": n["compile"],
        "segmentation fault": codes.get(EXIT_SEGV, 0),
        "out of memory": codes.get(EXIT_ABORT, 0),
        "timeout": timeouts,
        "validation error": n["validation"],
        "invalidation error": n["invalidation"],
    })
    other = {c: k for c, k in codes.items() if c not in (0, EXIT_SEGV, EXIT_ABORT, EXIT_ALARM)}
    return meta, e, {"pending": n["pending"], "other_exits": other}


def markdown(rows):
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    cell = lambda i, s: s.ljust(widths[i]) if i == 0 else s.rjust(widths[i])
    lines = ["| " + " | ".join(cell(i, s) for i, s in enumerate(r)) + " |" for r in rows]
    rule = "|" + "|".join(
        (":" + "-" * (w + 1)) if i == 0 else ("-" * (w + 1) + ":") for i, w in enumerate(widths)
    ) + "|"
    return "\n".join([lines[0], rule, *lines[1:]])


def harness_results(folder: Path, harness: Path):
    """The harness's own maskbench_results.main(folder) entries, or the error it raised."""
    try:
        spec = importlib.util.spec_from_file_location(
            "maskbench_results", harness / "scripts" / "maskbench_results.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        with contextlib.redirect_stdout(io.StringIO()):
            _, entries = mod.main(str(folder))
        return entries, None
    except Exception as exc:  # it is the harness's code: report whatever it raised
        return None, f"{type(exc).__name__}: {exc}"


def print_table(engine_ids, args):
    cols = []
    for eid in engine_ids:
        folder = Path(args.out) / eid
        if not (folder / "meta.txt").exists():
            log(f"[{eid}] no results in {folder}")
            continue
        meta, entries, extra = folder_entries(folder)
        cols.append((eid, folder, meta, entries, extra))
    if not cols:
        return
    keys = list(cols[0][3].keys())
    rows = [["metric", *[c[2]["name"] for c in cols]]]
    rows += [[k, *[f"{c[3][k]:,}" for c in cols]] for k in keys]
    text = markdown(rows) + "\n\n### Versions\n\n"
    seen = set()
    for _, _, meta, _, _ in cols:
        if meta["module"] not in seen:
            seen.add(meta["module"])
            text += f"* {meta['module']}: {meta['module_version']}\n"
    notes = []
    for eid, folder, meta, _, extra in cols:
        runs = read_jsonl(folder / "run.txt")
        if runs:
            wall = sum(r["wall_s"] for r in runs)
            done = sum(r["files"] for r in runs)
            workers = "/".join(sorted({str(r.get("workers", 1)) for r in runs}))
            notes.append(f"* {meta['name']}: wall {wall:,.0f} s for {done:,} files "
                         f"({len(runs)} driver run(s) of {workers} worker(s); "
                         "worker start-up included)")
        if extra["other_exits"]:
            notes.append(f"* {meta['name']}: workers that exited otherwise: {extra['other_exits']}")
        if extra["pending"]:
            notes.append(f"* {meta['name']}: {extra['pending']} schemas without a result "
                         "(placeholders: a crash or timeout of their worker, or still running)")
        if eid == "grammask":
            tot = GrammaskChecks.sum(read_jsonl(folder / "checks.jsonl"))
            notes.append(
                "* grammask mask/accept_token agreement over {files:,} schemas: "
                "{allowed_accepted:,} tokens allowed and accepted, {allowed_refused:,} "
                "allowed but refused; {forbidden_refused:,} forbidden and refused, "
                "{forbidden_accepted:,} forbidden but accepted; {panics:,} panics".format(**tot))
    if notes:
        text += "\n" + "\n".join(notes) + "\n"
    print(text)
    if args.harness_results:
        for eid, folder, meta, entries, _ in cols:
            theirs, err = harness_results(folder, Path(args.harness))
            if err:
                print(f"* maskbench_results.main({eid}): failed: {err}")
            else:
                diff = {k: (entries[k], theirs.get(k)) for k in entries if entries[k] != theirs.get(k)}
                print(f"* maskbench_results.main({eid}): "
                      + ("the same figures" if not diff else f"differs (ours, theirs): {diff}"))


class GrammaskChecks:
    @staticmethod
    def sum(rows):
        keys = ["allowed_accepted", "allowed_refused", "forbidden_refused",
                "forbidden_accepted", "panics"]
        tot = {k: sum(r.get(k, 0) for r in rows) for k in keys}
        tot["files"] = len(rows)
        return tot


# ---------------------------------------------------------------- main


def main():
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--harness", default=str(DEFAULT_HARNESS),
                    help="the jsonschemabench-maskbench checkout (holds maskbench/ and scripts/)")
    ap.add_argument("--data", default=str(DEFAULT_DATA), help="folder of MaskBench *.json files")
    ap.add_argument("--files", nargs="*", help="these files instead of --data's")
    ap.add_argument("--every", type=int, default=1, help="every Nth file (sorted by name)")
    ap.add_argument("--limit", type=int, default=0, help="at most N files (after --every)")
    ap.add_argument("--tokenizer", default=None,
                    help="tokenizer directory (default: Llama-3 from scripts/fetch-tokenizers.sh)")
    ap.add_argument("--engines", default=DEFAULT_ENGINES, help=f"comma-separated, of {ENGINES}")
    ap.add_argument("--out", default="maskbench-harness-out", help="output folder")
    ap.add_argument("--time-limit", type=int, default=900, help="seconds per schema (runner's)")
    ap.add_argument("--mem-limit", type=int, default=16, help="address-space GiB per worker")
    ap.add_argument("--jobs", type=int, default=1, choices=[1, 2], help="engines run at once")
    ap.add_argument("--workers", type=int, default=1, choices=[1, 2],
                    help="single-threaded worker processes per engine, on disjoint files")
    ap.add_argument("--chunk", type=int, default=100,
                    help="files per worker process, then a fresh one (run_maskbench's 100); 0: all")
    ap.add_argument("--progress", type=int, default=60, help="progress line every N s (0: off)")
    ap.add_argument("--table-only", action="store_true", help="print the table of --out, run nothing")
    ap.add_argument("--harness-results", action="store_true",
                    help="also run the harness's maskbench_results.main on each folder and compare")
    # worker mode (internal)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--out-dir", help=argparse.SUPPRESS)
    ap.add_argument("--files-from", help=argparse.SUPPRESS)
    ap.add_argument("--info", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        return worker(args)

    engine_ids = [e.strip() for e in args.engines.split(",") if e.strip()]
    for e in engine_ids:
        if e not in ENGINES:
            sys.exit(f"unknown engine {e!r}; known: {', '.join(ENGINES)}")
    if not (Path(args.harness) / "maskbench" / "runner.py").exists():
        sys.exit(f"no maskbench/runner.py under --harness {args.harness}")

    if not args.table_only:
        tokenizer_dir = prepare_tokenizer(args.tokenizer)
        files = select_files(args)
        log(f"{len(files)} files, engines {', '.join(engine_ids)}, output {args.out}, "
            f"tokenizer {tokenizer_dir}, time limit {args.time_limit}s")
        walls = {}
        queue = list(engine_ids)
        lock = threading.Lock()

        def drain():
            while True:
                with lock:
                    if not queue:
                        return
                    eid = queue.pop(0)
                run_engine(eid, files, args, tokenizer_dir, walls)

        threads = [threading.Thread(target=drain) for _ in range(args.jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    print_table(engine_ids, args)


if __name__ == "__main__":
    main()

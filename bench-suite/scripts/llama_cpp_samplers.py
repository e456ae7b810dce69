#!/usr/bin/env python3
"""Tokens per second and grammar-sampler time per token inside llama.cpp: llama.cpp's own
grammar sampler beside grammask's, in one run, on the cases of
``integrations/llama.cpp/cases.json`` (greedy, SmolLM2-135M-Instruct unless ``--model``).

Each case runs through the compare program of ``integrations/llama.cpp/build.sh``
``--repeat`` times per sampler, the samplers alternated; the table gives medians. Per step
the compare program masks the whole vocabulary with the grammar sampler (apply), takes the
highest logit and accepts it: ``sampler µs/token`` is the time in apply and accept over the
generated tokens, ``tokens/s`` the generated tokens over the generation time (prompt and
model load excluded), ``share`` the sampler's part of the time per token, ``resampled``
the steps where the grammar refused the model's first choice (then the whole vocabulary
is masked; with ``--grammar-first`` it is masked at every step). ``same`` says
whether both samplers gave the same tokens (JSON Schemas go through different converters,
so their tokens may differ).

    python3 bench-suite/scripts/llama_cpp_samplers.py --compare PATH [--repeat 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = "SmolLM2-135M-Instruct.Q4_1.gguf"


def run(compare: str, model: str, case: dict, sampler: str, threads: int, first: bool) -> dict:
    out = subprocess.run(
        [compare, "--model", model, "--grammar", str(REPO / case["grammar"]), "--sampler", sampler,
         "--prompt", case["prompt"], "--n-predict", str(case["n_predict"]),
         "--threads", str(threads), "--json"] + (["--grammar-first"] if first else [])
        + [a for w in case.get("trigger_words", []) for a in ("--trigger-word", w)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--compare", required=True, help="the compare program (build.sh prints it)")
    parser.add_argument("--model", help="a GGUF (default: SmolLM2-135M-Instruct in grammask's model "
                        "cache, where `grammask generate` fetches it)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", help="write every run here")
    parser.add_argument("--grammar-first", action="store_true",
                        help="mask the whole vocabulary at every step (default: llama.cpp's "
                        "common_sampler flow, the sampled token checked alone first)")
    args = parser.parse_args()
    if args.model is None:
        cache = os.environ.get("GRAMMASK_CACHE") or str(Path.home() / ".cache" / "grammask")
        args.model = str(Path(cache) / "models" / DEFAULT_MODEL)
        if not Path(args.model).is_file():
            sys.exit(f"no {args.model}: run `grammask generate` once to fetch it, or pass --model")
    cases = json.loads((REPO / "integrations/llama.cpp/cases.json").read_text())
    rows, raw = [], []
    for case in cases["cases"] + cases["schemas"] + cases["lazy"]:
        runs = {"llama": [], "grammask": []}
        for _ in range(args.repeat):
            for sampler in ("llama", "grammask"):
                runs[sampler].append(
                    run(args.compare, args.model, case, sampler, args.threads, args.grammar_first)
                )
        raw.append({"case": case, "runs": runs})
        med = {
            s: {
                k: statistics.median(r[k] for r in runs[s])
                for k in ("sampler_us_per_token", "tokens_per_s")
            }
            for s in runs
        }
        same = all(r["tokens"] == runs["llama"][0]["tokens"] for s in runs for r in runs[s])
        steps = runs["grammask"][0]["steps"]
        resampled = runs["grammask"][0]["resampled"]
        share = {
            s: med[s]["sampler_us_per_token"] * med[s]["tokens_per_s"] / 1e6 for s in med
        }
        rows.append((Path(case["grammar"]).name, steps, resampled, same, med, share))
        print(f"{rows[-1][0]}: done", file=sys.stderr)

    print("| grammar | steps | resampled | same tokens | llama.cpp tokens/s | grammask tokens/s | "
          "llama.cpp sampler µs/token | grammask sampler µs/token | ratio | llama.cpp share | grammask share |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, steps, resampled, same, med, share in rows:
        ll, gm = med["llama"], med["grammask"]
        print(f"| {name} | {steps} | {resampled} | {'yes' if same else 'no'} | {ll['tokens_per_s']:.1f} | "
              f"{gm['tokens_per_s']:.1f} | {ll['sampler_us_per_token']:,.1f} | "
              f"{gm['sampler_us_per_token']:,.1f} | "
              f"{gm['sampler_us_per_token'] / ll['sampler_us_per_token']:.4f} | "
              f"{share['llama'] * 100:.1f}% | {share['grammask'] * 100:.2f}% |")
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()

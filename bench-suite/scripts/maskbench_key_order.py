#!/usr/bin/env python3
"""Sorts the valid MaskBench instances that `grammask-bench maskbench` rejected by cause.

Usage: python3 bench-suite/scripts/maskbench_key_order.py RESULT.json [MASKBENCH_DIR] [GRAMMASK]

For each rejected valid instance (`valid_rejected_cases` of the result file), it runs
`grammask match --any-order`; if that does not accept, it puts the instance's top-level
keys in the schema's order (`properties`, then those only in `required`, then the others)
and runs `grammask match` again. Prints the counts and the cases neither check settles.
"""
import collections
import json
import subprocess
import sys
import tempfile
from pathlib import Path


def main():
    result = json.load(open(sys.argv[1]))
    data = Path(sys.argv[2] if len(sys.argv) > 2 else "../shared/data/maskbench")
    grammask = sys.argv[3] if len(sys.argv) > 3 else "target/release/grammask"
    counts = collections.Counter()
    unsettled = []
    tmp = Path(tempfile.mkdtemp())
    schema_path, instance_path = tmp / "schema.json", tmp / "instance.json"

    def match(extra, instance):
        instance_path.write_text(json.dumps(instance, separators=(",", ":"), ensure_ascii=False))
        p = subprocess.run([grammask, "match", *extra, str(schema_path), str(instance_path)],
                           capture_output=True, text=True, timeout=300)
        return p.returncode == 0, p.stdout.strip()

    for case in result["valid_rejected_cases"]:
        doc = json.load(open(data / case["file"]))
        schema, instance = doc["schema"], doc["tests"][case["test"]]["data"]
        schema_path.write_text(json.dumps(schema))
        ok, _ = match(["--any-order"], instance)
        if ok:
            counts["accepted with properties in any order"] += 1
            continue
        props = schema.get("properties") if isinstance(schema, dict) else None
        if isinstance(instance, dict) and isinstance(props, dict):
            required = [r for r in schema.get("required", []) if isinstance(r, str)]
            order = list(props) + [r for r in required if r not in props] + list(instance)
            reordered = {}
            for k in order:
                if k in instance and k not in reordered:
                    reordered[k] = instance[k]
            ok, out = match([], reordered)
            if ok:
                counts["accepted with top-level keys in the schema's order"] += 1
                continue
        else:
            out = ""
        counts["not settled"] += 1
        unsettled.append((case["file"], case["test"], out[:160]))
    for k, v in counts.most_common():
        print(f"{v:5}  {k}")
    for u in unsettled:
        print(*u, sep="  ")


if __name__ == "__main__":
    main()

"""Medians of `gradops bench --device cpu` runs of two binaries, alternated: ab/{old,new}-LAYOUT-ROUND.json.

Prints, per layout and row, each binary's median ms per run and new/old of the best medians.
Run: python3 ab_summary.py [DIR] (default: ab/ beside this file).
"""
import collections
import glob
import json
import os
import sys

d = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "ab")
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(os.path.join(d, "*.json"))):
    v, layout, _ = os.path.basename(f)[:-5].split("-")
    for r in json.load(open(f))["results"]:
        rows[(layout, r["workload"], r["op"])][v].append(r["median_ms"])
print("| layout | row | op | old medians (ms) | new medians (ms) | new / old, best medians |")
print("|---|---|---|---|---|---|")
for (layout, w, op), v in rows.items():
    o, n = v["old"], v["new"]
    print(f"| {layout} | {w} | {op} | {' '.join(f'{x:.2f}' for x in o)} | "
          f"{' '.join(f'{x:.2f}' for x in n)} | {min(n) / min(o):.3f} |")

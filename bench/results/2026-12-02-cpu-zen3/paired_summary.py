#!/usr/bin/env python3
"""Markdown rows from bench/paired.py JSON files:
| row | threads | peer | pairs | paired ratio (p25-p75) | gradops median / min (ms) | peer median / min (ms) |
Usage: python3 paired_summary.py FILE.json..."""
import json
import sys

for path in sys.argv[1:]:
    d = json.load(open(path))
    for r in d["results"]:
        print(f"| {r['workload']} {r['layout']} | {r['threads']} | {r['peer']} ({r['peer_layout']}) "
              f"| {r['pairs']} | **{r['paired_ratio_median']:.2f}x** ({r['paired_ratio_p25']:.2f}x-"
              f"{r['paired_ratio_p75']:.2f}x) | {r['gradops_median_ms']:.2f} / {r['gradops_min_ms']:.2f} "
              f"| {r['peer_median_ms']:.2f} / {r['peer_min_ms']:.2f} |")

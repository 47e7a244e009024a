#!/usr/bin/env python3
"""BENCHMARKS.md table rows from `bench/peers.py --rounds` JSON: per workload, gradops' and
the best peer's round medians, the median and range of the per-round ratios (best peer /
gradops), and the fastest calls. Usage: summary.py PEERS.json..."""
import json,sys,statistics as st
for f in sys.argv[1:]:
    d=json.load(open(f))
    for c in d['comparison']:
        pr=c['per_round']
        g=[r['gradops_median_ms'] for r in pr]; p=[r['best_peer_median_ms'] for r in pr]
        rat=[r['ratio_best_peer_over_gradops'] for r in pr]
        gmin=min(r['gradops_min_ms'] for r in pr); pmin=min(r['best_peer_min_ms'] for r in pr)
        peers=sorted(set(r['best_peer'] for r in pr))
        wl = c['workload'] + (f" ({c['argmax']} argmax)" if c.get('argmax') else '')
        print(f"| {wl} | {c['gradops_layout']} | {len(pr)} | {min(g):.2f}-{max(g):.2f} | {min(p):.2f}-{max(p):.2f} ({', '.join(peers)}) | **{st.median(rat):.2f}x** | {min(rat):.2f}x-{max(rat):.2f}x | {pmin:.2f} / {gmin:.2f} ms = {pmin/gmin:.2f}x |")

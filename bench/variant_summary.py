#!/usr/bin/env python3
"""Median ms per call of kernel variants timed in turn on the GPU, beside cuDNN from the same run.

Reads, in the folder DIR that a prepared GPU run script (`bench/results/*/run*.sh`) writes:
`t<rep>-<variant>-<dtype>.json` (`gradops bench --device cuda --json`, one per variant, dtype
and repetition) and `peers-*.json` (`bench/peers.py --device cuda --json`, PyTorch rows: NHWC ones are cuDNN
with `channels_last`). Prints one line per (dtype, workload): each variant's medians in
run order, then cuDNN's. An f32 dtype may name its arithmetic, `f32_exact` or `f32_tf32`
(`gradops bench --f32-precision`): it pairs with cuDNN's f32 rows of the same math (TF32 off,
TF32 allowed); a dtype ending in `_nchw` (`f32_exact_nchw`) pairs with cuDNN's NCHW rows.

Usage: variant_summary.py DIR [TITLE]
"""
import glob
import json
import os
import sys


def main() -> None:
    w = sys.argv[1]
    title = sys.argv[2] if len(sys.argv) > 2 else "variants"
    r: dict = {}
    for f in sorted(glob.glob(os.path.join(w, "t*.json"))):
        _rep, v, d = os.path.basename(f)[:-5].split("-")
        d = d.removesuffix("_nhwc")  # the NHWC rows' default name
        for x in json.load(open(f))["results"]:
            r.setdefault((d, x["workload"]), {}).setdefault(v, []).append(x["median_ms"])
    peer: dict = {}
    for f in sorted(glob.glob(os.path.join(w, "peers-*.json"))):
        for x in json.load(open(f)).get("results", []):
            if x.get("peer") == "pytorch" and x.get("median_ms"):
                d = x.get("dtype")
                if d == "f32" and x.get("math"):
                    d = "f32_exact" if x["math"] == "fp32" else "f32_tf32"
                if x.get("layout") == "NCHW":
                    d += "_nchw"
                elif x.get("layout") != "NHWC":
                    continue
                peer.setdefault((d, x.get("workload")), []).append(x["median_ms"])
    print(f"{title}: median ms per call (runs in turn) | cuDNN before/after")
    for (d, wl), v in sorted(r.items()):
        c = peer.get((d, wl), [])
        runs = "  ".join(f"{k} " + "/".join(f"{y:.4f}" for y in ys) for k, ys in sorted(v.items()))
        print(f"  {d:<5} {wl:<3} {runs}  | cudnn " + "/".join(f"{y:.4f}" for y in c))


if __name__ == "__main__":
    main()

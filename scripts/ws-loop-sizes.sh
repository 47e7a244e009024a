#!/usr/bin/env bash
# Static SASS loop sizes of the warp-specialized conv kernels (the instruction counts per
# chunk that docs/spec-additions.md and bench/results/2026-12-05b-gpu-prepared/README.md
# quote; not a GPU figure): kernels/conv.cu compiled for compute_90a with the pinned nvcc,
# assembled for sm_90a, disassembled, and each loop that copies (LDGSTS), multiplies (HGMMA)
# or stores (STG) listed with its length and a few instruction kinds. The producer's loop is
# the one with LDGSTS and no HGMMA, the consumers' the short one with HGMMA.
# nvdisasm is not in the pinned toolchain: NVDISASM names it, e.g. from
#   pip download --no-deps nvidia-cuda-nvdisasm==13.2.51 && unzip the wheel
# Usage: NVDISASM=/path/to/nvdisasm bash scripts/ws-loop-sizes.sh [extra nvcc flags]
# MATCH (default _ws_) picks the kernels by a substring of their names: MATCH=_halo_ lists
# the halo kernels' loops (the halo copies, the products of a tap and chunk, the filter's;
# NCHW's copies are the loops with LDG.E and STS).
set -euo pipefail
cd "$(dirname "$0")/.."
T=.cuda-toolchain/nvidia/cu13/bin
: "${NVDISASM:?set NVDISASM to an nvdisasm (13.x) binary}"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
"$T/nvcc" -ptx -arch=compute_90a -O3 -std=c++17 -I kernels "$@" -o "$tmp/conv.ptx" kernels/conv.cu
"$T/ptxas" -arch=sm_90a -o "$tmp/conv.cubin" "$tmp/conv.ptx"
"$NVDISASM" -c "$tmp/conv.cubin" > "$tmp/conv.sass"
python3 - "$tmp/conv.sass" "${MATCH:-_ws_}" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
match = sys.argv[2]
parts = re.split(r"\n\.text\.(\S+):\n", text)
kinds = ["LDGSTS", "LDG.E", "STS", "HGMMA", "TRYWAIT", "ARRIVE", "LDS", "BAR.SYNC", "STG"]
for name, body in zip(parts[1::2], parts[2::2]):
    if match not in name:
        continue
    ins, labels = [], {}
    for line in body.splitlines():
        m = re.match(r"\s*(\.L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(ins)
            continue
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?);", line)
        if m:
            ins.append(m.group(1))
    print(name)
    for i, t in enumerate(ins):
        m = re.search(r"BRA[^`]*`\((\.L_x_\d+)\)", t)
        if not (m and m.group(1) in labels and labels[m.group(1)] <= i):
            continue
        loop = ins[labels[m.group(1)] : i + 1]
        # (STS: the opcode, not LDGSTS's tail.)
        counts = {k: sum(re.search(r"(^|\s)STS", x) is not None if k == "STS" else k in x
                         for x in loop) for k in kinds}
        if len(loop) < 800 and (counts["LDGSTS"] or counts["LDG.E"] or counts["HGMMA"]):
            print(f"    {len(loop)} instructions", {k: v for k, v in counts.items() if v})
PY

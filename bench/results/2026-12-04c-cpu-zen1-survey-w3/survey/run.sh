#!/usr/bin/env bash
# Survey: every SPEC row against both peers, both layouts, at 1 and 2 threads.
set -u
G=$1; OUT=$2; PAIRS=${3:-15}
mkdir -p "$OUT"
for T in 2 1; do
for L in nhwc nchw; do
for P in tensorflow-onednn pytorch; do
  bench/.venv/bin/python bench/paired.py --gradops "$G" --peer $P --layout $L \
    --workloads W1,W2,W3,W4,W5,W6,W7,W8,W4f,W5f --threads $T --pairs $PAIRS \
    --json "$OUT/$L-$P-${T}t.json" 2>&1 | tee -a "$OUT/log.txt"
done; done; done

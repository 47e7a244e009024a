#!/bin/sh
# Usage: run.sh NEW OLD OUT. W2 NCHW (W1, W3 as controls: other orders) paired, 30 pairs:
# NEW against OLD, then NEW and OLD against TensorFlow + oneDNN and PyTorch; one thread with
# both sides pinned to one vCPU, then two threads.
set -e
NEW=$1; OLD=$2; OUT=$3; mkdir -p "$OUT"
P="bench/.venv/bin/python bench/paired.py"
for T in 1 2; do
  if [ "$T" = 1 ]; then PIN="taskset -c 0"; else PIN=""; fi
  $PIN $P --gradops "$NEW" --peer gradops --baseline "$OLD" --layout nchw --workloads W2,W1,W3 --threads $T --pairs 30 --json "$OUT/ab-nchw-${T}t.json"
  $PIN $P --gradops "$NEW" --peer tensorflow-onednn --layout nchw --workloads W2 --threads $T --pairs 30 --json "$OUT/tf-nchw-${T}t.json"
  $PIN $P --gradops "$NEW" --peer pytorch --layout nchw --workloads W2 --threads $T --pairs 30 --json "$OUT/torch-nchw-${T}t.json"
done

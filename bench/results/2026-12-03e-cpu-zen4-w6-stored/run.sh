#!/usr/bin/env bash
# W6's stored-argmax row (max_pool_grad_with_argmax), paired calls (bench/paired.py, workload
# `W6:stored`): NEW against OLD (A/B), then NEW against PyTorch (into a preallocated dx,
# --torch-out, as gradops) and TensorFlow + oneDNN (MaxPoolGradWithArgmax), both layouts, one
# thread (both sides pinned to CPU 0: one vCPU's slow spells otherwise hit one side only) and two.
#   bash run.sh NEW OLD OUTDIR
set -euo pipefail
new=$1 old=$2 out=$3
here=$(cd "$(dirname "$0")/../../.." && pwd)
py=$here/bench/.venv/bin/python
mkdir -p "$out/ab" "$out/peers"
for l in nchw nhwc; do
  for t in 1 2; do
    pin=(); [ "$t" = 1 ] && pin=(taskset -c 0)
    "${pin[@]}" "$py" "$here/bench/paired.py" --gradops "$new" --peer gradops --baseline "$old" \
      --layout $l --workloads W6:stored --threads $t --pairs 60 --json "$out/ab/$l-${t}t.json"
    "${pin[@]}" "$py" "$here/bench/paired.py" --gradops "$new" --peer pytorch --torch-out \
      --layout $l --workloads W6:stored --threads $t --pairs 60 --json "$out/peers/pytorch-$l-${t}t.json"
    "${pin[@]}" "$py" "$here/bench/paired.py" --gradops "$new" --peer tensorflow-onednn \
      --layout $l --workloads W6:stored --threads $t --pairs 60 --json "$out/peers/tf-$l-${t}t.json"
  done
done

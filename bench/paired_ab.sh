#!/usr/bin/env bash
# A CPU change measured by paired calls (bench/paired.py): the new build against the old one
# on ROW (with CONTROL, a row whose code did not change, beside it), then each build against
# the strongest peers (PyTorch NHWC, TensorFlow + oneDNN both layouts) on ROW; one and two
# threads, both layouts. JSON files: ab-LAYOUT-Tt, {new,old}-LAYOUT-PEER-Tt.
# Usage: bash bench/paired_ab.sh NEW_GRADOPS OLD_GRADOPS OUT ROW CONTROL [AB_PAIRS [PEER_PAIRS]]
set -euo pipefail
cd "$(dirname "$0")/.."
new=$1 old=$2 out=$3 row=$4 control=$5 ab_pairs=${6:-150} peer_pairs=${7:-100}
py=${PYTHON:-bench/.venv/bin/python}
mkdir -p "$out"
for t in 1 2; do
  for layout in nhwc nchw; do
    "$py" bench/paired.py --gradops "$new" --peer gradops --baseline "$old" --layout "$layout" \
      --workloads "$row,$control" --threads "$t" --pairs "$ab_pairs" \
      --json "$out/ab-$layout-${t}t.json" 2>/dev/null
  done
  for build in new old; do
    bin=$new
    [ "$build" = old ] && bin=$old
    for pl in pytorch:nhwc tensorflow-onednn:nhwc tensorflow-onednn:nchw; do
      peer=${pl%%:*} layout=${pl##*:}
      "$py" bench/paired.py --gradops "$bin" --peer "$peer" --layout "$layout" --workloads "$row" \
        --threads "$t" --pairs "$peer_pairs" --json "$out/$build-$layout-$peer-${t}t.json" 2>/dev/null
    done
  done
done

#!/usr/bin/env bash
# W8 (the weight gradient of W5's shape) after the NHWC dy packing and the two-pixel tile loop
# of src/ops/conv2d/filter_direct.rs, by paired calls (bench/paired.py): the new build against
# the old one (W7, served by another kernel, as the control row), then both builds against
# the strongest peers; one and two threads.
# Usage: bash run.sh NEW_GRADOPS OLD_GRADOPS OUT
set -euo pipefail
cd "$(dirname "$0")/../../.."
new=$1 old=$2 out=$3
py=${PYTHON:-bench/.venv/bin/python}
mkdir -p "$out"
for t in 1 2; do
  for layout in nhwc nchw; do
    "$py" bench/paired.py --gradops "$new" --peer gradops --baseline "$old" --layout "$layout" \
      --workloads W8,W7 --threads "$t" --pairs 150 --json "$out/ab-$layout-${t}t.json" 2>/dev/null
  done
  for build in new old; do
    bin=$new
    [ "$build" = old ] && bin=$old
    for pl in pytorch:nhwc tensorflow-onednn:nhwc tensorflow-onednn:nchw; do
      peer=${pl%%:*} layout=${pl##*:}
      "$py" bench/paired.py --gradops "$bin" --peer "$peer" --layout "$layout" --workloads W8 \
        --threads "$t" --pairs 100 --json "$out/$build-$layout-$peer-${t}t.json" 2>/dev/null
    done
  done
done

#!/usr/bin/env bash
# W5f (the forward of W5's shape) after commit aae4d0e, by paired calls (bench/paired.py):
# the new build against the old one (W5, whose code did not change, as the control row), then
# both builds against the strongest peers; one and two threads.
# Usage: bash run.sh NEW_GRADOPS OLD_GRADOPS OUT
set -euo pipefail
cd "$(dirname "$0")/../../.."
new=$1 old=$2 out=$3
py=${PYTHON:-bench/.venv/bin/python}
mkdir -p "$out"
for t in 1 2; do
  for layout in nhwc nchw; do
    "$py" bench/paired.py --gradops "$new" --peer gradops --baseline "$old" --layout "$layout" \
      --workloads W5f,W5 --threads "$t" --pairs 60 --json "$out/ab-$layout-${t}t.json" 2>/dev/null
  done
  for build in new old; do
    bin=$new
    [ "$build" = old ] && bin=$old
    for pl in pytorch:nhwc tensorflow-onednn:nhwc tensorflow-onednn:nchw; do
      peer=${pl%%:*} layout=${pl##*:}
      "$py" bench/paired.py --gradops "$bin" --peer "$peer" --layout "$layout" --workloads W5f \
        --threads "$t" --pairs 60 --json "$out/$build-$layout-$peer-${t}t.json" 2>/dev/null
    done
  done
done

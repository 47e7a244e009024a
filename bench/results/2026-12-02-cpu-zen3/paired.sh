#!/usr/bin/env bash
# Paired calls (bench/paired.py) of W4/W5 against the strongest peers, both layouts, one and
# two threads: the set behind BENCHMARKS.md's real-Zen 3 section (2026-12-02).
# Usage: bash paired.sh GRADOPS OUT
set -euo pipefail
cd "$(dirname "$0")/../../.."
bin=$1 out=$2
py=${PYTHON:-bench/.venv/bin/python}
mkdir -p "$out"
for t in 1 2; do
  for pl in pytorch:nhwc tensorflow-onednn:nhwc tensorflow-onednn:nchw; do
    peer=${pl%%:*} layout=${pl##*:}
    "$py" bench/paired.py --gradops "$bin" --peer "$peer" --layout "$layout" --workloads W4,W5 \
      --threads "$t" --pairs 100 --json "$out/paired-$layout-$peer-${t}t.json" 2>/dev/null
  done
done

#!/usr/bin/env bash
# A/B of two gradops builds by paired calls (bench/paired.py --peer gradops): W4/W5, both
# layouts, one and two threads. Usage: bash ab.sh NEW_GRADOPS BASELINE_GRADOPS OUT
set -euo pipefail
cd "$(dirname "$0")/../../.."
new=$1 base=$2 out=$3
py=${PYTHON:-bench/.venv/bin/python}
mkdir -p "$out"
for t in 1 2; do
  for layout in nhwc nchw; do
    "$py" bench/paired.py --gradops "$new" --peer gradops --baseline "$base" --layout "$layout" \
      --workloads W4,W5 --threads "$t" --pairs 100 --json "$out/ab-$layout-${t}t.json"
  done
done

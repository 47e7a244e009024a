#!/bin/bash
# /tmp/it_base: target/release/examples/input_timing of commit 82786af; /tmp/it_ab: the same
# with f32-phase-tile.patch applied (GO_PHASE_TILE=2|3 forces the tile).
# Usage: ab.sh ROUNDS THREADS > out.txt
# rounds threads
for r in $(seq "$1"); do
  RAYON_NUM_THREADS=$2 /tmp/it_base 30 W5 | sed "s/^/round $r base threads $2: /"
  for t in 2 3; do
    RAYON_NUM_THREADS=$2 GO_PHASE_TILE=$t /tmp/it_ab 30 W5 | sed "s/^/round $r tile $t threads $2: /"
  done
done

#!/bin/bash
# A/B of the NHWC Winograd core's tile, F(2x2) against F(3x3), in one binary, alternating:
# built with a temporary override at the top of `Tile::for_plane` (not committed):
#   if let Ok(v) = std::env::var("GO_TILE_AB") { return if v == "2" { Tile::F2 } else { Tile::F3 }; }
# Usage: ab.sh ROUNDS THREADS > out.txt
B=${B:-target/release/examples/input_timing}
for r in $(seq "$1"); do
  for t in 2 3; do
    RAYON_NUM_THREADS=$2 GO_TILE_AB=$t $B 15 W4,W4f | sed "s/^/round $r tile $t threads $2: /"
  done
done

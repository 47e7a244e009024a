#!/bin/bash
# Interleaved: per round, per workload, the three dtypes back to back (same load conditions).
cd /work/wt-bf16
for r in 1 2 3; do
  for w in W1 W2 W3 W4 W5 W6; do
    for d in bf16 f16 f32; do
      echo "round $r $w $d load $(cut -d' ' -f1 /proc/loadavg)"
      ./target/release/gradops bench --device cpu --dtype $d --workload $w --reps 15 \
        --json /tmp/bf16il/r$r-$w-$d.json > /tmp/bf16il/r$r-$w-$d.txt 2>&1
    done
  done
done
echo done

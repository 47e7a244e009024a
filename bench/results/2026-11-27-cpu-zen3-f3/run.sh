#!/bin/bash
# gradops (the F(3x3) build, copied to /tmp/gradops_f3) against PyTorch and TF+oneDNN, in
# rounds, both layouts, W4 and W4f (the workloads the tile changes). Two threads.
cd /work/main
mkdir -p /tmp/z3f
for l in nchw nhwc; do
  cl=""; [[ $l == nhwc ]] && cl="--torch-channels-last"
  /tmp/tfenv/bin/python bench/peers.py --rounds 5 --peers pytorch,tensorflow-onednn $cl --workloads W4,W4f \
    --json /tmp/z3f/peers-$l.json \
    --gradops-cmd "/tmp/gradops_f3 bench --device cpu --layout $l --workload W4,W4f --json /tmp/z3f/gradops-$l.json" > /tmp/z3f/log-$l.txt 2>&1
done
echo finished > /tmp/z3f/done

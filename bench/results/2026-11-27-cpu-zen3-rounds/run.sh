#!/bin/bash
cd /work/main
for l in nchw nhwc; do
  cl=""; [[ $l == nhwc ]] && cl="--torch-channels-last"
  /tmp/tfenv/bin/python bench/peers.py --rounds 5 --peers pytorch,tensorflow-onednn $cl --workloads W4,W5 \
    --json /tmp/z3r/peers-$l.json \
    --gradops-cmd "/tmp/gradops_head bench --device cpu --layout $l --workload W4,W5 --json /tmp/z3r/gradops-$l.json" > /tmp/z3r/log-$l.txt 2>&1
done
echo finished > /tmp/z3r/done

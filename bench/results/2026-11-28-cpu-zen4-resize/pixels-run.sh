#!/bin/bash
cd /work/main
for l in nhwc; do
  cl=""; [[ $l == nhwc ]] && cl="--torch-channels-last"
  bench/.venv/bin/python bench/peers.py --rounds 3 --peers pytorch,tensorflow-onednn $cl --workloads W1,W2,W3 \
    --json /tmp/z4y/peers-$l.json \
    --gradops-cmd "/tmp/gradops_nh2 bench --device cpu --layout $l --workload W1,W2,W3 --json /tmp/z4y/gradops-$l.json" > /tmp/z4y/log-$l.txt 2>&1
done
echo finished > /tmp/z4y/done

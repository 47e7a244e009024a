#!/bin/bash
cd /work/main
for l in nchw nhwc; do
  cl=""; [[ $l == nhwc ]] && cl="--torch-channels-last"
  bench/.venv/bin/python bench/peers.py --rounds 3 --peers pytorch,tensorflow-onednn $cl --workloads W6 \
    --json /tmp/z4q/peers-$l.json \
    --gradops-cmd "/tmp/gradops_w6b bench --device cpu --layout $l --workload W6 --json /tmp/z4q/gradops-$l.json" > /tmp/z4q/log-$l.txt 2>&1
done
echo finished > /tmp/z4q/done

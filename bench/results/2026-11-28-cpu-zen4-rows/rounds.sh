#!/bin/bash
cd /work/main
for l in nchw; do
  cl=""; [[ $l == nhwc ]] && cl="--torch-channels-last"
  bench/.venv/bin/python bench/peers.py --rounds 5 --peers pytorch,tensorflow-onednn $cl --workloads W4,W5,W4f,W5f \
    --json /tmp/z4s/peers-$l.json \
    --gradops-cmd "/tmp/gradops_rows bench --device cpu --layout $l --workload W4,W5,W4f,W5f --json /tmp/z4s/gradops-$l.json" > /tmp/z4s/log-$l.txt 2>&1
done
echo finished > /tmp/z4s/done

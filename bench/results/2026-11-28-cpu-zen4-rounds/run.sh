#!/bin/bash
cd /work/main
for l in nchw nhwc; do
  cl=""; [[ $l == nhwc ]] && cl="--torch-channels-last"
  bench/.venv/bin/python bench/peers.py --rounds 5 --peers pytorch,tensorflow-onednn $cl --workloads W4,W5,W4f,W5f \
    --json /tmp/z4r/peers-$l.json \
    --gradops-cmd "/tmp/gradops_head bench --device cpu --layout $l --workload W4,W5,W4f,W5f --json /tmp/z4r/gradops-$l.json" > /tmp/z4r/log-$l.txt 2>&1
done
echo finished > /tmp/z4r/done

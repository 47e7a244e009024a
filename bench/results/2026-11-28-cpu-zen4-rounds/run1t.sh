#!/bin/bash
cd /work/main
for l in nhwc nchw; do
  cl=""; [[ $l == nhwc ]] && cl="--torch-channels-last"
  RAYON_NUM_THREADS=1 bench/.venv/bin/python bench/peers.py --threads 1 --rounds 3 --peers pytorch,tensorflow-onednn $cl --workloads W4,W5,W4f,W5f \
    --json /tmp/z4r/1thread-peers-$l.json \
    --gradops-cmd "/tmp/gradops_head bench --device cpu --layout $l --workload W4,W5,W4f,W5f --json /tmp/z4r/1thread-gradops-$l.json" > /tmp/z4r/1thread-log-$l.txt 2>&1
done
echo finished > /tmp/z4r/done1t

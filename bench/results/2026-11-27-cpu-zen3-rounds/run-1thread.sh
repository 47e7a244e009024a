#!/bin/bash
cd /work/main
RAYON_NUM_THREADS=1 /tmp/tfenv/bin/python bench/peers.py --threads 1 --rounds 3 --peers pytorch,tensorflow-onednn --torch-channels-last --workloads W4,W5 \
    --json /tmp/z3s/peers-nhwc.json \
    --gradops-cmd "/tmp/gradops_head bench --device cpu --layout nhwc --workload W4,W5 --json /tmp/z3s/gradops-nhwc.json" > /tmp/z3s/log-nhwc.txt 2>&1
echo finished > /tmp/z3s/done

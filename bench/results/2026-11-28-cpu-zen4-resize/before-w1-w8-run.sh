#!/bin/bash
cd /work/main
bench/.venv/bin/python bench/peers.py --rounds 3 --peers pytorch,tensorflow-onednn --workloads W1,W2,W3,W6,W7,W8 \
    --json /tmp/z4w/peers-nchw.json \
    --gradops-cmd "/tmp/gradops_rows bench --device cpu --workload W1,W2,W3,W6,W7,W8 --json /tmp/z4w/gradops-nchw.json" > /tmp/z4w/log-nchw.txt 2>&1
echo finished > /tmp/z4w/done

#!/bin/bash
# round3.sh TAG : per layout, PyTorch + TF (default: Eigen on this CPU) + gradops_new; then TF with oneDNN forced on
tag=$1; cd /work/main
for l in nchw nhwc; do
  cl=""; [[ $l == nhwc ]] && cl="--torch-channels-last"
  /tmp/tfenv/bin/python bench/peers.py --peers pytorch,tensorflow $cl --workloads W4,W5,W4f,W5f --json /tmp/z3/q-$tag-$l.json --gradops-cmd "/tmp/z3/gradops_new bench --device cpu --layout $l --workload W4,W5,W4f,W5f --json /tmp/z3/qg-$tag-$l.json" > /tmp/z3/qlog-$tag-$l.txt 2>&1
done
TF_ENABLE_ONEDNN_OPTS=1 /tmp/tfenv/bin/python bench/peers.py --peers tensorflow --workloads W4,W5,W4f,W5f --json /tmp/z3/qd-$tag.json > /tmp/z3/qdlog-$tag.txt 2>&1

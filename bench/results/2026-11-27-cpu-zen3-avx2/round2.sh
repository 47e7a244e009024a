#!/bin/bash
# round2.sh TAG : per layout, TF + gradops_new (peers.py), then gradops_base alone
tag=$1; cd /work/main
for l in nchw nhwc; do
/tmp/tfenv/bin/python bench/peers.py --peers tensorflow --workloads W4,W5 --json /tmp/z3/p-$tag-$l.json --gradops-cmd "/tmp/z3/gradops_new bench --device cpu --layout $l --workload W4,W5 --json /tmp/z3/g-$tag-$l.json" > /dev/null 2>&1
/tmp/z3/gradops_base bench --device cpu --layout $l --workload W4,W5 --json /tmp/z3/b-$tag-$l.json > /dev/null 2>&1
done

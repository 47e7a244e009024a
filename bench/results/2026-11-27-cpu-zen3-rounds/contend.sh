#!/bin/bash
# one-thread W4/W5 NHWC on CPU 0, gradops vs PyTorch channels_last, without and with a memory-streaming antagonist on CPU 1
cd /work/main
for mode in quiet antag quiet antag; do
  if [[ $mode == antag ]]; then taskset -c 1 /tmp/tfenv/bin/python bench/results/2026-11-27-cpu-zen3-rounds/antagonist.py & AP=$!; sleep 2; fi
  echo "== $mode"
  taskset -c 0 env RAYON_NUM_THREADS=1 /tmp/it_base 25 W4,W5 | grep NHWC
  taskset -c 0 /tmp/tfenv/bin/python bench/peers.py --threads 1 --peers pytorch --torch-channels-last --workloads W4,W5 --target-s 0.6 2>&1 | grep -E "^W[45] +pytorch"
  [[ $mode == antag ]] && kill $AP
done

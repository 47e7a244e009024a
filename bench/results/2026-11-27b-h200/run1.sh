#!/usr/bin/env bash
# H200/H100 run 1 (2026-11-27, commit at the run's head): the first GPU run since run B.
# Priorities, in order, each step with its own limit, the whole under an outer limit:
# the GPU tests (whole cuda_ops suite, simt, the CUDA property tests one by one: the
# huge-stride fix d96e61b's first GPU run), the benches of every dtype and layout with
# cuDNN in the same run, then the prepared experiments (wave grid, wide tile, L1 copies:
# correctness under each, their timings in turn, ncu sections and stall reasons), then ncu
# on the conv kernels.
# Usage: run1.sh BUNDLE OUT   (OUT gets all.tar.xz with every output and log.txt)
B="$1" O="$2"; W=/tmp/run1; rm -rf "$W"; mkdir -p "$W/a" "$W/b" "$W/c" "$O"
# An outer timeout ends gpu-session.sh but not the step it runs (each step's timeout is a
# process group of its own): end what is left of a part before the next starts.
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
export REPS=50 PROP_CASES=150 PROP_LIMIT=20 SIMT=0 GENERAL=0
# 1. Tests, the benches, the peers (cuDNN) in the same run.
STEPS=tests,bench,peers timeout 200 bash scripts/gpu-session.sh "$B" "$W/a"; reap
# 2. The experiments (their own tests, timings, ncu sections, stalls).
STEPS=experiments timeout 190 bash scripts/gpu-session.sh "$B" "$W/b"; reap
# 3. ncu on the conv kernels (f16 lean NHWC/NCHW W4 and W5, the forward, the f32 3xTF32 and
#    f64 lean kernels on W4 NHWC, the filter gradient's NHWC partial).
NCU_SPECS="W4:conv2d_backprop_input_tc_vec_f16:f16 W4:conv2d_backprop_input_tc_vec_nchw_f16:f16 \
W5:conv2d_backprop_input_tc_vec_f16:f16 W4f:conv2d_forward_tc_vec_f16:f16 \
W4:conv2d_backprop_input_tc_vec_f32:f32 W4:conv2d_backprop_input_tc_vec_f64:f64 \
W7:conv2d_backprop_filter_partial_tc_nhwc_f16:f16" STEPS=ncu timeout 60 bash scripts/gpu-session.sh "$B" "$W/c"; reap
# What launches per call (every kernel of one W4 f16 NHWC and NCHW call: the gap between
# ncu's duration and the bench's event time).
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)"
for l in nhwc nchw; do
  timeout 15 "$NCU" --clock-control none -s 8 -c 8 --section LaunchStats "$B/gradops" bench \
    --device cuda --dtype f16 --layout $l --workload W4 --reps 3 >"$W/launches-$l.txt" 2>&1
done
cat "$W"/a/log.txt "$W"/b/log.txt "$W"/c/log.txt >"$O/log.txt"
tar cf - -C "$W" . | xz -T0 -6 >"$O/all.tar.xz"
sed -n '/gradops vs PyTorch, same card/,/^=== peers/p' "$W/a/log.txt" | grep -E "^(W4|W5|W4f|W5f|W7|W8) " | cut -c1-110
grep -hE "^=== .*rc=|experiments:|^  f(16|32)-n" "$O/log.txt" | grep -vE "rc=0 \([0-9]+ s\)$" | tail -60
grep -hE "rc=" "$O/log.txt" | awk '{print $2, $3, $4}' | tr '\n' ';'

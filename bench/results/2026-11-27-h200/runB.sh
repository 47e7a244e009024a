#!/usr/bin/env bash
# H200 run B (2026-11-27): the lean conv kernels at 4 stages (this commit) against run A's
# binary (3 stages) alternately in one run; the whole cuda_ops suite, the CUDA property
# tests one by one (traced), cuDNN peers, ncu, compute-sanitizer on the conv tests.
# Usage: runB.sh BUNDLE OLD_GRADOPS OUT
B="$1" OLD="$2" O="$3"; mkdir -p "$O"; LOG="$O/log.txt"
st() { local n=$1 l=$2; shift 2; echo "=== $n: $*" >>"$LOG"; local t0=$SECONDS; timeout "$l" "$@" >>"$LOG" 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >>"$LOG" 2>&1
st info 30 "$B/gradops" info
GRADOPS_REQUIRE_GPU=1 st cuda_ops 90 "$B/cuda_ops" --test-threads=1
GRADOPS_REQUIRE_GPU=1 st cuda_conv_simt 30 "$B/cuda_conv_simt"
WL=W4,W5,W4f,W5f,W7,W8
for rep in 1 2; do for d in f16 f32 f64; do for l in nchw nhwc; do
  st "old${rep}_${d}_$l" 30 "$OLD" bench --device cuda --dtype $d --layout $l --workload W4,W5,W4f,W5f --reps 50 --json "$O/old$rep-$d-$l.json"
  st "new${rep}_${d}_$l" 30 "$B/gradops" bench --device cuda --dtype $d --layout $l --workload $WL --reps 50 --json "$O/new$rep-$d-$l.json"
done; done; done
for l in nchw nhwc; do
  st "tf32_$l" 30 "$B/gradops" bench --device cuda --dtype f32 --f32-precision tf32 --layout $l --workload W4,W5,W4f,W5f --reps 50 --json "$O/tf32-$l.json"
done
args=(); for f in "$O"/new1-*.json "$O"/tf32-*.json; do args+=(--gradops-json "$f"); done
PYTHONUNBUFFERED=1 st peers 60 python3 bench/peers.py --device cuda --reps 50 --dtypes f16,f32,f64 --layouts nchw,nhwc --workloads $WL --nhwc-workloads $WL --json "$O/peers.json" "${args[@]}"
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)"
for s in W4:conv2d_backprop_input_tc_vec_f16:nhwc W4:conv2d_backprop_input_tc_vec_nchw_f16:nchw; do
  IFS=: read -r wl k lay <<<"$s"
  st "ncu_$k" 30 "$NCU" --clock-control none -k "$k" -s 2 -c 1 --section SpeedOfLight --section Occupancy --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis "$B/gradops" bench --device cuda --dtype f16 --layout $lay --workload $wl --reps 3
done
for t in conv2d_backprop_input conv2d_backprop_filter conv2d max_pool resize; do
  GRADOPS_PROP_TRACE=1 GRADOPS_PROP_CASES=100 GRADOPS_REQUIRE_GPU=1 st "prop_$t" 12 bash -c 'exec "$0" --exact "$1" --nocapture 2>"$2"' "$B/properties" "${t}_geometry_cuda" "$O/prop-$t.txt"
  tail -2 "$O/prop-$t.txt" >>"$LOG"
done
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
GRADOPS_REQUIRE_GPU=1 st memcheck_conv 50 "$SAN" --tool memcheck --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_every_geometry
GRADOPS_REQUIRE_GPU=1 st racecheck_conv 45 "$SAN" --tool racecheck --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity
st train 30 "$B/train" --device cuda --steps 200
grep "rc=" "$LOG"

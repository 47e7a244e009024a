#!/usr/bin/env bash
# H200 run A (2026-11-27): the lean tensor-core conv kernels' first GPU run. Conv tests of
# cuda_ops, conv bench rows (lean and general kernels, same run), cuDNN peers (NCHW and
# channels_last), ncu on the lean f16 kernels. Usage: runA.sh BUNDLE OUT
B="$1" O="$2"; mkdir -p "$O"; LOG="$O/log.txt"
st() { local n=$1 l=$2; shift 2; echo "=== $n: $*" >>"$LOG"; local t0=$SECONDS; timeout "$l" "$@" >>"$LOG" 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >>"$LOG" 2>&1
st info 30 "$B/gradops" info
GRADOPS_REQUIRE_GPU=1 st cuda_ops_conv 60 "$B/cuda_ops" conv --test-threads=1 --nocapture
WL=W4,W5,W4f,W5f,W7,W8
for d in f16 f32 f64; do for l in nchw nhwc; do
  st "bench_${d}_$l" 40 "$B/gradops" bench --device cuda --dtype $d --layout $l --workload $WL --reps 50 --json "$O/gradops-$d-$l.json"
  GRADOPS_CUDA_CONV_TC_VEC=off st "general_${d}_$l" 40 "$B/gradops" bench --device cuda --dtype $d --layout $l --workload W4,W5,W4f,W5f --reps 50 --json "$O/general-$d-$l.json"
done; done
for l in nchw nhwc; do
  st "tf32_$l" 30 "$B/gradops" bench --device cuda --dtype f32 --f32-precision tf32 --layout $l --workload W4,W5,W4f,W5f --reps 50 --json "$O/tf32-gradops-f32-$l.json"
done
args=(); for f in "$O"/gradops-*.json "$O"/tf32-gradops-*.json; do args+=(--gradops-json "$f"); done
PYTHONUNBUFFERED=1 st peers 90 python3 bench/peers.py --device cuda --reps 50 --dtypes f16,f32,f64 --layouts nchw,nhwc --workloads $WL --nhwc-workloads $WL --json "$O/peers.json" "${args[@]}"
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)"
for s in W4:conv2d_backprop_input_tc_vec_nchw_f16:nchw W4:conv2d_backprop_input_tc_vec_f16:nhwc; do
  IFS=: read -r wl k lay <<<"$s"
  echo "##### $wl $k f16 $lay" >>"$O/ncu.txt"
  st "ncu_$k" 40 "$NCU" --clock-control none -k "$k" -s 2 -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis "$B/gradops" bench --device cuda --dtype f16 --layout $lay --workload $wl --reps 3 >>"$O/ncu.txt" 2>&1
done
grep "rc=" "$LOG"

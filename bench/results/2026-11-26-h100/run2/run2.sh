#!/usr/bin/env bash
# Second GPU run of 2026-11-26: new tensor-core main loop (cursor, packed stores) vs the
# first run's binary (gradops-old), the cursor without register staging at 3 and 2
# blocks/SM (gradops-b3, gradops-b2), all in one run; tests, properties, sanitizer on the new build.
set -uo pipefail
OUT="$1"; B=/tmp/gb; mkdir -p $B $OUT/j
tar xJf target/gpu-carry/bundle2.tar.xz -C $B
LOG=$OUT/log.txt
st() { local n=$1 l=$2; shift 2; echo "=== $n: $*" >>$LOG; local t0=$SECONDS; timeout $l "$@" >>$LOG 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a $LOG; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >>$LOG
st info 20 $B/gradops info
GRADOPS_REQUIRE_GPU=1 st cuda_ops 90 $B/cuda_ops --test-threads=1
GRADOPS_REQUIRE_GPU=1 st simt 40 $B/cuda_conv_simt --nocapture
GRADOPS_REQUIRE_GPU=1 st properties 45 $B/properties cuda --test-threads=1
WL=W4,W5,W7,W8,W4f,W5f
for l in nchw nhwc; do
  for v in old b3 b2 new; do
    st "bench_${v}_f16_$l" 40 $B/gradops-$v bench --device cuda --dtype f16 --layout $l --workload $WL --reps 50 --json $OUT/j/$v-f16-$l.json
  done
  for d in bf16 f32 f64; do
    st "bench_new_${d}_$l" 40 $B/gradops-new bench --device cuda --dtype $d --layout $l --workload $WL --reps 50 --json $OUT/j/new-$d-$l.json
  done
  st "bench_new_tf32_$l" 30 $B/gradops-new bench --device cuda --dtype f32 --f32-precision tf32 --layout $l --workload W4,W5,W4f,W5f --reps 50 --json $OUT/j/tf32-f32-$l.json
done
args=(); for f in $OUT/j/new-*.json $OUT/j/tf32-*.json; do args+=(--gradops-json $f); done
PYTHONUNBUFFERED=1 st peers 90 python3 bench/peers.py --device cuda --reps 50 --dtypes f16,bf16,f32,f64 --layouts nchw,nhwc --workloads $WL --nhwc-workloads $WL --json $OUT/peers.json "${args[@]}"
(cd $OUT && tar cf j.tar j && rm -rf j)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for spec in W4:conv2d_backprop_input_tc_f16:f16:new W4:conv2d_backprop_input_tc_f16:f16:b3 W4f:conv2d_forward_tc_f16:f16:new W4:conv2d_backprop_input_tc_f32:f32:new W5:conv2d_backprop_input_tc_f16:f16:new; do
  IFS=: read wl k dt v <<<"$spec"
  echo "##### $wl $k $dt $v" >>$OUT/ncu.txt
  st "ncu_${wl}_${k}_$v" 40 $NCU --clock-control none -k $k -s 2 -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section SchedulerStats --section InstructionStats $B/gradops-$v bench --device cuda --dtype $dt --workload $wl --reps 3 >>$OUT/ncu.txt 2>&1
done
echo "##### stall reasons W4 f16 new" >>$OUT/ncu.txt
st ncu_stalls 40 $NCU --clock-control none -k conv2d_backprop_input_tc_f16 -s 2 -c 1 --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" $B/gradops-new bench --device cuda --dtype f16 --workload W4 --reps 3 >>$OUT/ncu.txt 2>&1
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
GRADOPS_REQUIRE_GPU=1 st memcheck 60 $SAN --tool memcheck --error-exitcode 99 $B/cuda_ops --test-threads=1
GRADOPS_REQUIRE_GPU=1 st racecheck_conv 60 $SAN --tool racecheck --error-exitcode 99 $B/cuda_ops --test-threads=1 gpu_conv2d
grep "rc=" $LOG

#!/usr/bin/env bash
# Third GPU run of 2026-11-26: the committed tensor-core conv (f6f337e) against PyTorch/cuDNN
# in the same run; GPU tests, properties, racecheck on the tensor-core conv tests.
set -uo pipefail
OUT="$1"; B=/tmp/gb; mkdir -p $B $OUT/j
tar xJf target/gpu-carry/bundle3.tar.xz -C $B
LOG=$OUT/log.txt
st() { local n=$1 l=$2; shift 2; echo "=== $n: $*" >>$LOG; local t0=$SECONDS; timeout $l "$@" >>$LOG 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a $LOG; }
nvidia-smi --query-gpu=name,driver_version --format=csv >>$LOG
GRADOPS_REQUIRE_GPU=1 st cuda_ops 60 $B/cuda_ops --test-threads=1
WL=W4,W5,W7,W8,W4f,W5f
for l in nchw nhwc; do
  for d in f16 bf16 f32 f64; do
    st "bench_${d}_$l" 40 $B/gradops bench --device cuda --dtype $d --layout $l --workload $WL --reps 50 --json $OUT/j/$d-$l.json
  done
  st "bench_tf32_$l" 20 $B/gradops bench --device cuda --dtype f32 --f32-precision tf32 --layout $l --workload W4,W5,W4f,W5f --reps 50 --json $OUT/j/tf32-f32-$l.json
done
args=(); for f in $OUT/j/*.json; do args+=(--gradops-json $f); done
PYTHONUNBUFFERED=1 st peers 60 python3 bench/peers.py --device cuda --reps 50 --dtypes f16,bf16,f32,f64 --layouts nchw,nhwc --workloads $WL --nhwc-workloads $WL --json $OUT/peers.json "${args[@]}"
(cd $OUT && tar cf j.tar j && rm -rf j)
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
GRADOPS_REQUIRE_GPU=1 st racecheck_tc 30 $SAN --tool racecheck --error-exitcode 99 $B/cuda_ops --test-threads=1 --exact gpu::gpu_conv2d_parity_determinism_or_skipped
GRADOPS_REQUIRE_GPU=1 st properties 40 $B/properties cuda
grep "rc=" $LOG

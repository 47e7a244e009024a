#!/usr/bin/env bash
# Run 2 of 2026-12-04: the defaults picked from run 1 (ConvTcTile::Auto and
# ConvTcFilterTile::Auto per call, GO_TC_WGMMA_INFLIGHT=1 built in) on the H200: the whole GPU
# suite under them (cuda_ops, cuda_conv_simt, the CUDA property tests, the training example),
# racecheck, synccheck and memcheck on the conv parity tests, then every conv row (f16, f32
# exact, f32 TF32, f64; NCHW and NHWC; W4, W5, W4f, W5f, W7, W8) under the new defaults and
# the old ones (GRADOPS_CUDA_CONV_TC_TILE=tall, GRADOPS_CUDA_CONV_TC_FORWARD_TILE=tall,
# GRADOPS_CUDA_CONV_TC_FILTER_TILE=mma: the same kernels as before this change) in turn,
# twice, cuDNN (bench/peers.py) before and after; ncu on one exact f32 NCHW W4 call of the
# wgmma tile (the f32 row furthest behind cuDNN in run 1).
# Usage: run2.sh BUNDLE OUT   (BUNDLE: the unpacked target/gpu-carry/bundle.tar.xz of
# scripts/gpu-check.sh --prebuild). About 4-5 minutes; give it timeout_s 540.
B="$1" O="$2"; W="$O/w"; rm -rf "$W"; mkdir -p "$W" "$O"; L="$O/log.txt"
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; local rc=$?; echo "=== $n: rc=$rc ($((SECONDS-t0)) s)" | tee -a "$L"; return $rc; }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'; } >>"$L" 2>&1
st info 30 "$B/gradops" info
# 1. Correctness under the defaults: the whole GPU suite, then the sanitizers.
GRADOPS_REQUIRE_GPU=1 st gpu_tests 150 "$B/cuda_ops" --test-threads=1
GRADOPS_REQUIRE_GPU=1 st gpu_conv_simt 60 "$B/cuda_conv_simt" --test-threads=1
GRADOPS_PROP_CASES=150 GRADOPS_REQUIRE_GPU=1 st gpu_properties 90 "$B/properties" --exact \
  conv2d_backprop_input_geometry_cuda conv2d_backprop_filter_geometry_cuda conv2d_geometry_cuda \
  max_pool_geometry_cuda resize_geometry_cuda --nocapture
st train 60 "$B/train" --device cuda --steps 200
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
for tool in racecheck synccheck memcheck; do
  GRADOPS_REQUIRE_GPU=1 st "${tool}_conv" 90 "$SAN" --tool $tool --error-exitcode 99 \
    "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity gpu_conv2d_backprop_filter
done
reap
# 2. Every conv row: new defaults vs old, twice in turn, cuDNN before and after.
P="--device cuda --reps 50 --dtypes f16,f32,f64 --layouts nchw,nhwc --workloads W4,W5,W4f,W5f,W7,W8 --nhwc-workloads W4,W5,W4f,W5f,W7,W8"
PYTHONUNBUFFERED=1 st peers_a 150 python3 bench/peers.py $P --json "$W/peers-a.json"; reap
declare -A PRE=([new]="env" [old]="env GRADOPS_CUDA_CONV_TC_TILE=tall GRADOPS_CUDA_CONV_TC_FORWARD_TILE=tall GRADOPS_CUDA_CONV_TC_FILTER_TILE=mma")
for rep in 1 2; do
  for v in new old; do
    for lay in nhwc nchw; do
      for d in f16 f32_exact f32_tf32 f64; do
        args=(--dtype "${d%%_*}"); [[ $d == f32_* ]] && args+=(--f32-precision "${d#f32_}")
        st "t${rep}_${v}_${d}_$lay" 40 ${PRE[$v]} "$B/gradops" bench --device cuda "${args[@]}" --layout $lay \
          --workload W4,W5,W4f,W5f,W7,W8 --reps 50 --json "$W/t$rep-$v-${d}_$lay.json"
      done
    done
  done
done
PYTHONUNBUFFERED=1 st peers_b 150 python3 bench/peers.py $P --json "$W/peers-b.json"; reap
# 3. ncu on one exact f32 NCHW W4 call of the wgmma tile.
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)"
M='regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|smsp__inst_executed\.sum|sm__inst_executed_pipe_tensor\.sum|l1tex__data_bank_conflicts_pipe_lsu_mem_shared\.sum)$'
st ncu_nchw_wgmma_f32_W4 40 "$NCU" --clock-control none -k conv2d_backprop_input_tc_vec_nchw_wgmma_f32 \
  -s 2 -c 1 --section SpeedOfLight --section Occupancy --section SchedulerStats \
  --section MemoryWorkloadAnalysis --metrics "$M" "$B/gradops" bench --device cuda --dtype f32 \
  --layout nchw --workload W4 --reps 3
python3 bench/variant_summary.py "$W" "new defaults vs old (every conv row)" | tee -a "$L"
grep -hE "rc=" "$L" | grep -v "rc=0 "; grep -hE "rc=" "$L" | wc -l

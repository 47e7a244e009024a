#!/usr/bin/env bash
# Prepared 2026-12-04 (second session, no GPU lent) for the next session that has one; the
# register-source build added 2026-12-05 (no GPU lent either). On the bundle of
# `BARRIER_VARIANT=1 RS_VARIANT=1 CANDLE_VARIANT=1 bash scripts/gpu-check.sh --prebuild`:
# 1. The wgmma model's hardware probe first (wgmma_model_on_hardware: the register-source
#    tf32 form, new, beside the shared-memory ones), then the default build's GPU suite
#    (cuda_ops), then the one-barrier build (GO_TC_WGMMA_BARRIERS=1: the lean wgmma tile, f32
#    of both layouts and 16-bit NCHW, one block barrier an iteration instead of two) and the
#    register-source build (GO_TC_WGMMA_F32_RS=1: exact f32's A read into registers and split
#    there) under cuda_ops and racecheck/synccheck/memcheck on the conv parity tests, every
#    wgmma tile forced (GRADOPS_CUDA_CONV_TC_TILE=wgmma).
# 2. The rows the lean wgmma tile runs (f32 exact and TF32 in both layouts, f16 NCHW; W4, W5,
#    W4f, W5f) timed under the default and the one-barrier build in turn, the exact f32 rows
#    under the register-source build too, twice, cuDNN before and after; ncu on one exact f32
#    NCHW W4 and one f16 NCHW W4 call of each build (exact f32 only for the rs build).
# 3. The candle CUDA tests (`cuda_ops-candle`: tests/cuda_ops.rs built with the `candle-cuda`
#    feature against link stubs; never run on a GPU before), with the CUDA libraries candle
#    links taken from the machine's PyTorch wheels and /usr/local/cuda; `ldd` says what is
#    missing first.
# Usage: run.sh BUNDLE OUT. About 4-5 minutes; give it timeout_s 480.
B="$1" O="$2"; W="$O/w"; rm -rf "$W"; mkdir -p "$W" "$O"; L="$O/log.txt"
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; local rc=$?; echo "=== $n: rc=$rc ($((SECONDS-t0)) s)" | tee -a "$L"; return $rc; }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'; } >>"$L" 2>&1
st info 30 "$B/gradops" info
st info_onebarrier 30 "$B/gradops-onebarrier" info
st info_rs 30 "$B/gradops-rs" info
# 1. Correctness: the probe (the register-source model), then each build's suite.
export GRADOPS_WGMMA_PROBE_PTX="$B/wgmma_probe.compute_90a.ptx"
GRADOPS_REQUIRE_GPU=1 st wgmma_probe 60 "$B/cuda_ops" --test-threads=1 wgmma_model_on_hardware --nocapture
GRADOPS_REQUIRE_GPU=1 st gpu_tests 150 "$B/cuda_ops" --test-threads=1
GRADOPS_REQUIRE_GPU=1 st gpu_tests_onebarrier 150 "$B/cuda_ops-onebarrier" --test-threads=1
GRADOPS_REQUIRE_GPU=1 st gpu_tests_rs 150 "$B/cuda_ops-rs" --test-threads=1
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
for v in onebarrier rs; do
  for tool in racecheck synccheck memcheck; do
    GRADOPS_CUDA_CONV_TC_TILE=wgmma GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma GRADOPS_REQUIRE_GPU=1 \
      st "${tool}_$v" 90 "$SAN" --tool $tool --error-exitcode 99 \
      "$B/cuda_ops-$v" --test-threads=1 gpu_conv2d_parity gpu_conv2d_tf32
  done
done
reap
# 2. The lean wgmma tile's rows, default vs one barrier, twice in turn, cuDNN around them.
P="--device cuda --reps 50 --dtypes f16,f32 --layouts nchw,nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f"
PYTHONUNBUFFERED=1 st peers_a 120 python3 bench/peers.py $P --json "$W/peers-a.json"; reap
declare -A EXE=([default]="$B/gradops" [onebarrier]="$B/gradops-onebarrier" [rs]="$B/gradops-rs")
for rep in 1 2; do
  for v in default onebarrier rs; do
    for lay in nchw nhwc; do
      for d in f16 f32_exact f32_tf32; do
        [[ $d == f16 && $lay == nhwc ]] && continue  # 16-bit NHWC runs the 128-pixel tile: unchanged
        [[ $v == rs && $d != f32_exact ]] && continue  # the rs build changes exact f32 only
        args=(--dtype "${d%%_*}"); [[ $d == f32_* ]] && args+=(--f32-precision "${d#f32_}")
        st "t${rep}_${v}_${d}_$lay" 40 "${EXE[$v]}" bench --device cuda "${args[@]}" --layout $lay \
          --workload W4,W5,W4f,W5f --reps 50 --json "$W/t$rep-$v-${d}_$lay.json"
      done
    done
  done
done
PYTHONUNBUFFERED=1 st peers_b 120 python3 bench/peers.py $P --json "$W/peers-b.json"; reap
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)"
M='regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|smsp__inst_executed\.sum|sm__inst_executed_pipe_tensor\.sum|l1tex__data_bank_conflicts_pipe_lsu_mem_shared\.sum)$'
for v in default onebarrier rs; do
  for d in f32 f16; do
    [[ $v == rs && $d == f16 ]] && continue
    st "ncu_${v}_nchw_wgmma_${d}_W4" 40 "$NCU" --clock-control none -k "conv2d_backprop_input_tc_vec_nchw_wgmma_$d" \
      -s 2 -c 1 --section SpeedOfLight --section Occupancy --section SchedulerStats \
      --section MemoryWorkloadAnalysis --metrics "$M" "${EXE[$v]}" bench --device cuda --dtype $d \
      --layout nchw --workload W4 --reps 3
  done
done
reap
# 3. candle on CUDA: the libraries it links (libcublas/libcublasLt/libnvrtc/libcudart .so.13,
# libcurand.so.10) from PyTorch's nvidia wheels, else /usr/local/cuda.
if [[ -x "$B/cuda_ops-candle" ]]; then
  LIBS="$(python3 - <<'PY'
import glob, os, site
dirs = []
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    dirs += glob.glob(os.path.join(sp, "nvidia", "*", "lib")) + glob.glob(os.path.join(sp, "nvidia", "*", "*", "lib"))
print(":".join(sorted(set(dirs))))
PY
)"
  LIBS="$LIBS:/usr/local/cuda/lib64:/usr/local/cuda/targets/x86_64-linux/lib"
  { echo "LD_LIBRARY_PATH additions: $LIBS"; LD_LIBRARY_PATH="$LIBS:${LD_LIBRARY_PATH:-}" ldd "$B/cuda_ops-candle" | grep -E "cuda|cublas|curand|nvrtc|not found"; } >>"$L" 2>&1
  LD_LIBRARY_PATH="$LIBS:${LD_LIBRARY_PATH:-}" GRADOPS_REQUIRE_GPU=1 st candle_cuda 150 "$B/cuda_ops-candle" --test-threads=1 candle
fi
python3 bench/variant_summary.py "$W" "one barrier and register-source A vs default (the lean wgmma tile's rows)" | tee -a "$L" || true
grep -hE "rc=" "$L" | grep -v "rc=0 "; grep -hE "rc=" "$L" | wc -l

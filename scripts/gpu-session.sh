#!/usr/bin/env bash
# One prepared GPU session on a machine without cargo: the prebuilt bundle's GPU tests,
# `gradops bench --device cuda` beside `bench/peers.py --device cuda` (PyTorch, same
# protocol, same run), Nsight Compute on the memory-bound kernels, compute-sanitizer.
#
#   bash scripts/gpu-check.sh --prebuild       # here, where cargo is: also strips and packs
#                                              # the executables (target/gpu-carry, ~15 MB)
#   mkdir -p /tmp/gb && tar xJf target/gpu-carry/bundle.tar.xz -C /tmp/gb   # on the GPU machine
#   bash scripts/gpu-session.sh /tmp/gb OUTDIR
#
# Every step has its own time limit, so one slow step cannot starve the others; the log,
# the JSON results (gradops-json.tar, peers.json) and the ncu reports (ncu.txt) go to
# OUTDIR. STEPS (default all) picks steps:
# tests, experiments, bench, peers, ncu, sass, sanitizer. DTYPES / LAYOUTS pick the bench rows (default
# f32,f16,f64 / nchw,nhwc); NCU_SPECS (WORKLOAD:KERNEL[:DTYPE[:LAYOUT]]) the ncu launches;
# SIMT=0 skips the f32/f64 FFMA comparison rows, GENERAL=0 the general tensor-core conv rows
# (GRADOPS_CUDA_CONV_TC_VEC=off); PROP_CASES / PROP_LIMIT size the property tests;
# SAN_FILTER picks the cuda_ops tests the sanitizers run (default all). The experiments step
# times the lean conv kernels' overrides against the default in turn
# (GRADOPS_CUDA_CONV_TC_GRID=wave and =tiles, GRADOPS_CUDA_CONV_TC_TILE=lean, =wide, =square
# and =wgmma (compute capability 9.0; elsewhere its calls run the tall tile),
# GRADOPS_CUDA_CONV_TC_FORWARD_TILE=lean and =square; gradops-cg,
# built with GO_TC_VEC_L1=0 by a prebuild with CG_VARIANT=1) on EXP_DTYPES (default
# f16,f32) and checks them with the cuda_ops conv tests.
# Exit status: non-zero if any step failed.
set -uo pipefail
BUNDLE="${1:-target/gpu-bundle}"
OUT="${2:-gpu-out}"
STEPS="${STEPS:-tests,experiments,bench,peers,ncu,sass,sanitizer}"
DTYPES="${DTYPES:-f32,f16,f64}"
LAYOUTS="${LAYOUTS:-nchw,nhwc}"
REPS="${REPS:-50}"
mkdir -p "$OUT"
LOG="$OUT/log.txt"
# The wgmma model's hardware probe (scripts/gpu-check.sh --prebuild puts it in the bundle).
[[ -e "$BUNDLE/wgmma_probe.compute_90a.ptx" ]] &&
  export GRADOPS_WGMMA_PROBE_PTX="$BUNDLE/wgmma_probe.compute_90a.ptx"
FAILED=0
has() { [[ ",$STEPS," == *",$1,"* ]]; }
step() {  # step NAME SECONDS CMD...
  local name="$1" limit="$2"; shift 2
  echo "=== $name: $*" | tee -a "$LOG"
  local t0=$SECONDS
  timeout "$limit" "$@" >>"$LOG" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc ($((SECONDS - t0)) s)" | tee -a "$LOG"
  [[ $rc -eq 0 ]] || FAILED=1
  return $rc
}

{
  echo "gradops gpu-session $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv 2>&1
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())' 2>&1
} >>"$LOG"
step info 60 "$BUNDLE/gradops" info

if has tests; then
  GRADOPS_REQUIRE_GPU=1 step gpu_tests 240 "$BUNDLE/cuda_ops" --test-threads=1 --nocapture
  # The opt-out: f32 and f64 conv on the simt (FFMA) kernels (GRADOPS_CUDA_CONV_TC=simt, set
  # by the test itself; the default, the tensor cores, is in cuda_ops).
  [[ -x "$BUNDLE/cuda_conv_simt" ]] &&
    GRADOPS_REQUIRE_GPU=1 step gpu_conv_simt 120 "$BUNDLE/cuda_conv_simt" --nocapture
  # The property tests' CUDA variants (random geometry against the SPEC rule and the CPU),
  # one test per step so a hang names its test; GRADOPS_PROP_TRACE puts each case on stderr
  # before it runs, so the last `case:` line of a cut-off step is the case that hung.
  if [[ -x "$BUNDLE/properties" ]]; then
    for t in conv2d_backprop_input conv2d_backprop_filter conv2d max_pool resize; do
      GRADOPS_PROP_TRACE=1 GRADOPS_PROP_CASES="${PROP_CASES:-500}" GRADOPS_REQUIRE_GPU=1 \
        step "gpu_properties_$t" "${PROP_LIMIT:-60}" bash -c 'exec "$0" --exact "$1" --nocapture 2>"$2"' \
        "$BUNDLE/properties" "${t}_geometry_cuda" "$OUT/prop-trace-$t.txt"
      tail -3 "$OUT/prop-trace-$t.txt" >>"$LOG"
    done
  fi
  # The training example end to end on the GPU (loss and ms/step go to the log).
  [[ -x "$BUNDLE/train" ]] && step train 120 "$BUNDLE/train" --device cuda --steps 200
fi

if has experiments; then
  # ncu metrics, one regular expression matched as a prefix (no name spelled per architecture
  # or rollup): every stall reason per issued instruction, shared-memory bank conflicts,
  # instructions issued and tensor-pipe instructions.
  export STALL_METRICS='regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active|l1tex__data_bank_conflicts_pipe_lsu_mem_shared|smsp__inst_executed(\.sum)?$|sm__inst_executed_pipe_tensor)'
  # Variants: name|environment|executable suffix (gradops-cg: built with GO_TC_VEC_L1=0).
  VARIANTS=("base||" "wave|GRADOPS_CUDA_CONV_TC_GRID=wave|" "tiles|GRADOPS_CUDA_CONV_TC_GRID=tiles|"
    "lean|GRADOPS_CUDA_CONV_TC_TILE=lean GRADOPS_CUDA_CONV_TC_FORWARD_TILE=lean|"
    "wide|GRADOPS_CUDA_CONV_TC_TILE=wide|"
    "square|GRADOPS_CUDA_CONV_TC_TILE=square GRADOPS_CUDA_CONV_TC_FORWARD_TILE=square|"
    "wgmma|GRADOPS_CUDA_CONV_TC_TILE=wgmma|"
    "cg||-cg")
  # Correctness first: the conv tests under each variant (the same bits as the default).
  for v in "${VARIANTS[@]:1}"; do
    IFS='|' read -r name envs sfx <<<"$v"
    [[ -x "$BUNDLE/cuda_ops$sfx" ]] || continue
    step "exp_tests_$name" 120 env GRADOPS_REQUIRE_GPU=1 $envs "$BUNDLE/cuda_ops$sfx" \
      --test-threads=1 conv
  done
  # Then the conv rows of every variant in turn, twice.
  for rep in 1 2; do
    for dd in ${EXP_DTYPES:-f16,f32}; do
      dd="${dd//,/ }"
      for d in $dd; do
        for l in ${LAYOUTS//,/ }; do
          for v in "${VARIANTS[@]}"; do
            IFS='|' read -r name envs sfx <<<"$v"
            [[ -x "$BUNDLE/gradops$sfx" ]] || continue
            step "exp${rep}_${d}_${l}_$name" 60 env $envs "$BUNDLE/gradops$sfx" bench \
              --device cuda --dtype "$d" --layout "$l" --workload W4,W5,W4f,W5f --reps "$REPS" \
              --json "$OUT/exp$rep-$name-gradops-$d-$l.json"
          done
        done
      done
    done
  done
  # What each variant changes in the busiest units (ncu, one W4 f16 NHWC call each): L2 and
  # L1 throughput and hit rates, issue rate.
  NCU_EXP="$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
  if [[ -n "$NCU_EXP" ]]; then
    for v in "${VARIANTS[@]:0:4}"; do
      IFS='|' read -r name envs sfx <<<"$v"
      [[ -x "$BUNDLE/gradops$sfx" ]] || continue
      k=conv2d_backprop_input_tc_vec_tall_f16
      [[ "$name" == lean ]] && k=conv2d_backprop_input_tc_vec_f16
      echo "##### experiment $name: W4 $k NHWC" >>"$OUT/ncu-exp.txt"
      step "exp_ncu_$name" 60 env $envs bash -c '"$0" --clock-control none -k "$1" -s 2 -c 1 \
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
        --section Occupancy --section LaunchStats "$2" bench --device cuda --dtype f16 \
        --layout nhwc --workload W4 --reps 3 >>"$3" 2>&1' "$NCU_EXP" "$k" "$BUNDLE/gradops$sfx" \
        "$OUT/ncu-exp.txt"
    done
    # Why the warps wait (the sections above give only the average wait per instruction):
    # the stall reasons per issued instruction and the shared-memory bank conflicts, for the
    # default NHWC (tall) and NCHW kernels and the 64-pixel NHWC tile; a metric set of its own, so a name this
    # ncu lacks cannot cost the sections above.
    for v in "base|conv2d_backprop_input_tc_vec_tall_f16|nhwc" "base|conv2d_backprop_input_tc_vec_nchw_f16|nchw" \
      "lean|conv2d_backprop_input_tc_vec_f16|nhwc"; do
      IFS='|' read -r name k lay <<<"$v"
      envs=""
      [[ "$name" == lean ]] && envs=GRADOPS_CUDA_CONV_TC_TILE=lean
      echo "##### stalls $name: W4 $k $lay" >>"$OUT/ncu-exp.txt"
      step "exp_stalls_${name}_$lay" 60 env $envs bash -c '"$0" --clock-control none -k "$1" -s 2 -c 1 \
        --metrics "$STALL_METRICS" "$2" bench --device cuda --dtype f16 --layout "$4" --workload W4 \
        --reps 3 >>"$3" 2>&1' "$NCU_EXP" "$k" "$BUNDLE/gradops" "$OUT/ncu-exp.txt" "$lay"
    done
  fi
  # The medians side by side (W4 W5 W4f W5f, ms).
  python3 - "$OUT" >>"$LOG" 2>&1 <<'PY'
import glob, json, os, sys
rows = {}
for f in sorted(glob.glob(os.path.join(sys.argv[1], "exp*-gradops-*.json"))):
    b = os.path.basename(f)[:-5]
    rep, var = b.split("-")[0], b.split("-")[1]
    dl = b.split("-gradops-")[1]
    for r in json.load(open(f)).get("results", []):
        rows.setdefault((dl, r["workload"]), {}).setdefault(var, []).append(r["median_ms"])
print("experiments: median ms per call, each run (dtype-layout workload: variant runs)")
for (dl, wl), v in sorted(rows.items()):
    print(f"  {dl:<9} {wl:<4} " + "  ".join(f"{k} " + "/".join(f"{x:.4f}" for x in xs) for k, xs in sorted(v.items())))
PY
fi

if has bench; then
  for d in ${DTYPES//,/ }; do
    for l in ${LAYOUTS//,/ }; do
      step "bench_${d}_${l}" 120 "$BUNDLE/gradops" bench --device cuda --dtype "$d" \
        --layout "$l" --reps "$REPS" --json "$OUT/gradops-$d-$l.json"
      # f32/f64 conv runs on the tensor cores (3xTF32, DMMA) by default; the same rows on
      # the simt (FFMA) kernels, the opt-out, for the comparison (GRADOPS_CUDA_CONV_TC=simt).
      if [[ "${SIMT:-1}" == 1 && ( "$d" == f32 || "$d" == f64 ) ]]; then
        GRADOPS_CUDA_CONV_TC=simt step "bench_${d}_${l}_simt" 120 "$BUNDLE/gradops" bench \
          --device cuda --dtype "$d" --layout "$l" --reps "$REPS" --json "$OUT/simt-gradops-$d-$l.json"
      fi
      # The conv rows on the general tensor-core kernels (the lean _tc_vec kernels off), for
      # the same-run comparison.
      if [[ "${GENERAL:-1}" == 1 ]]; then
        GRADOPS_CUDA_CONV_TC_VEC=off step "bench_${d}_${l}_general" 120 "$BUNDLE/gradops" bench \
          --device cuda --dtype "$d" --layout "$l" --workload W4,W5,W4f,W5f --reps "$REPS" \
          --json "$OUT/general-gradops-$d-$l.json"
      fi
      # The TF32 opt-in (plain TF32 tensor cores): its rows carry math "tf32" and pair with
      # cuDNN with TF32 allowed (bench/peers.py); the backward-data workloads (W7/W8, the
      # filter gradient, have no TF32 path).
      if [[ "$d" == f32 ]]; then
        step "bench_f32_${l}_tf32" 120 "$BUNDLE/gradops" bench --device cuda --dtype f32 \
          --f32-precision tf32 --workload W4,W5 --layout "$l" --reps "$REPS" \
          --json "$OUT/tf32-gradops-f32-$l.json"
      fi
    done
  done
fi

if has peers; then
  args=()
  for f in "$OUT"/gradops-*.json "$OUT"/tf32-gradops-*.json; do
    [[ -e "$f" ]] && args+=(--gradops-json "$f")
  done
  # NHWC rows: cuDNN through channels_last, conv included.
  PYTHONUNBUFFERED=1 step peers 300 python3 bench/peers.py --device cuda --reps "$REPS" \
    --dtypes "$DTYPES" --layouts "$LAYOUTS" --nhwc-workloads W1,W2,W3,W6,W4,W5,W7,W8,W4f,W5f \
    --json "$OUT/peers.json" "${args[@]}"
fi

NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)"
if has ncu && [[ -n "$NCU" ]]; then
  # One launch of each kernel at the SPEC's GPU size (NCHW unless the kernel is NHWC's): the memory-bound ones in f32,
  # the conv kernels (tensor-core f16 on compute_80+, the FFMA f32 ones, the filter
  # gradient's split-K pair) in their dtype. Spec: WORKLOAD:KERNEL[:DTYPE] (default f32).
  # A conv kernel without _tc_ runs with GRADOPS_CUDA_CONV_TC=simt (f32/f64 conv is on the
  # tensor cores by default, so the FFMA kernels launch only with the opt-out).
  for spec in ${NCU_SPECS:-W1:resize_tile_f32 W2:resize_tile_f32 W3:resize_box_f32 \
    W6:max_pool_tile_k3_grad_f32 W6:max_pool_tile_k3_grad_argmax_f32 W6:max_pool_direct_k3_forward_f32 \
    W4:conv2d_backprop_input_tc_vec_nchw_f16:f16 W4:conv2d_backprop_input_tc_vec_tall_f16:f16 \
    W5:conv2d_backprop_input_tc_vec_nchw_f16:f16 W4f:conv2d_forward_tc_vec_nchw_f16:f16 \
    W4f:conv2d_forward_tc_vec_tall_f16:f16 \
    W4:conv2d_backprop_input_f32 \
    W7:conv2d_backprop_filter_partial_tc_f16:f16 W8:conv2d_backprop_filter_partial_tc_f16:f16 \
    W7:conv2d_backprop_filter_partial_tc_nhwc_f16:f16 \
    W7:conv2d_backprop_filter_partial_f32 W7:conv2d_backprop_filter_reduce_f16:f16}; do
    IFS=: read -r wl k dt lay <<<"$spec"
    dt="${dt:-f32}"
    tc=all
    [[ "$k" == conv2d_* && "$k" != *_tc_* ]] && tc=simt
    [[ -z "$lay" && "$k" == *_nhwc_* ]] && lay=nhwc
    [[ -z "$lay" && "$k" == *_tc_vec_* && "$k" != *_vec_nchw_* ]] && lay=nhwc
    lay="${lay:-nchw}"
    echo "##### $wl $k $dt (GRADOPS_CUDA_CONV_TC=$tc)" >>"$OUT/ncu.txt"
    GRADOPS_CUDA_CONV_TC=$tc step "ncu_${wl}_$k" 60 bash -c '"$0" --clock-control none -k "$1" -s 2 -c 1 \
      --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
      "$2/gradops" bench --device cuda --dtype "$5" --layout "$6" --workload "$3" --reps 3 >>"$4" 2>&1' \
      "$NCU" "$k" "$BUNDLE" "$wl" "$OUT/ncu.txt" "$dt" "$lay"
  done
fi

OBJDUMP="$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump 2>/dev/null | head -1)"
if has sass && [[ -n "$OBJDUMP" ]]; then
  # SASS of the memory-bound kernels (f32), from the sm_90 cubins the prebuild made.
  for cubin in "$BUNDLE"/resize.sm_90.cubin "$BUNDLE"/pool.sm_90.cubin; do
    [[ -e "$cubin" ]] || continue
    for f in resize_tile_f32 resize_box_f32 max_pool_tile_k3_grad_f32 max_pool_tile_k3_grad_argmax_f32; do
      "$OBJDUMP" -sass -fun "$f" "$cubin" >>"$OUT/sass.txt" 2>/dev/null
    done
  done
fi

SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
if has sanitizer && [[ -n "$SAN" ]]; then
  for tool in memcheck racecheck; do
    GRADOPS_REQUIRE_GPU=1 step "sanitizer_$tool" 120 "$SAN" --tool "$tool" --error-exitcode 99 \
      "$BUNDLE/cuda_ops" --test-threads=1 ${SAN_FILTER:-}
  done
fi

# Every gradops JSON (the experiments' exp*-gradops-* too) into one tar: the device tool
# brings back few files.
(cd "$OUT" && ls ./*gradops-*.json >/dev/null 2>&1 && tar cf gradops-json.tar ./*gradops-*.json &&
  rm -f ./*gradops-*.json)
grep -E "^=== .*rc=" "$LOG"
echo "failed=$FAILED"
exit $FAILED

#!/usr/bin/env bash
# Prepared 2026-12-05 (a session with no GPU lent) for the next one that has one; it took over
# the items of 2026-12-04b's prepared script (parts 3 and 4; ../2026-12-04b-gpu-prepared/
# README.md says what they answer), after the new ones. On the bundle
# of `BARRIER_VARIANT=1 RS_VARIANT=1 CANDLE_VARIANT=1 bash scripts/gpu-check.sh --prebuild`,
# in order of what is least known:
# 1. The warp-specialized wgmma tile (GRADOPS_CUDA_CONV_TC_TILE=ws and
#    GRADOPS_CUDA_CONV_TC_FORWARD_TILE=ws: conv2d_{backprop_input,forward}_tc_vec_ws_*, 16-bit
#    NHWC, since 2026-12-06 f32 of both layouts too; never run on hardware; since 2026-12-06 its consumers store from registers and
#    its tiles end without a block barrier): the wgmma model's probe first (its mbarrier pipeline
#    skeleton too), the conv tests against the CPU path under ws, then racecheck, synccheck and
#    memcheck on the conv parity test under ws; then the default build's whole GPU suite.
#    Since 2026-12-06 (third session) its stages live in dynamic shared memory, as many as
#    GRADOPS_CUDA_CONV_TC_WS_STAGES says (2-8, default 6): the conv tests also at 2.
# 2. f16 NHWC W4, W5, W4f, W5f under the default tiles, ws, ws on one block a tile
#    (GRADOPS_CUDA_CONV_TC_GRID=tiles; since 2026-12-06 the ws launch runs every stride phase
#    in each block, so its default is one wave, W5 included, where a block's producer runs
#    from tile to tile; once) and wgmma in turn, twice, ws also at 3 stages (what static
#    shared memory held) and 8, cuDNN (channels_last) before and after; then (2b) f32 NHWC
#    W4/W5 and (since 2026-12-06, second session) W4f/W5f, exact and TF32, under the default
#    tiles, ws (since 2026-12-06: the producer splits its stages into tf32 parts; the
#    forward's filter copied element by element) and wgmma, twice, cuDNN around them, and
#    (since 2026-12-06, third session) f32 NCHW under the default tiles and ws;
#    ncu on one ws and one wgmma f16 W4 backprop_input call, one ws f32 TF32 call and one ws
#    exact f32 NCHW call.
# 1b/2c (since 2026-12-06, fourth session). The halo tile (GRADOPS_CUDA_CONV_TC_TILE=halo and
#    GRADOPS_CUDA_CONV_TC_FORWARD_TILE=halo: conv2d_{backprop_input,forward}_tc_vec_halo_*,
#    16-bit NHWC at unit source strides; a tile's source copied once for all taps, read by
#    each tap's wgmma through mode-0 descriptors, which the probe now checks first): the conv
#    tests under halo, racecheck/synccheck/memcheck on the every-geometry test under halo
#    (its first two geometries run the halo kernels; also with one halo buffer), its f16 rows
#    beside the others' in part 2 (two halo buffers, one block an SM on W4; and one, two
#    blocks: halo1) and ncu on its W4 backprop_input call. Since 2026-12-06 (fifth session)
#    16-bit NCHW too (conv2d_{backprop_input,forward}_tc_vec_nchw_halo_*, copies through
#    registers, one halo buffer): the tests above run it (their NCHW f16 calls), part 2
#    times f16 NCHW under the default and halo (cuDNN NCHW in the same peers runs), ncu on
#    its W4 backprop_input call.
# 3. The one-barrier and register-source builds (as ../2026-12-04b-gpu-prepared): their
#    suites, racecheck/synccheck under wgmma, the lean wgmma tile's rows timed beside the
#    default build's (f32 exact and TF32, f16 NCHW), ncu on exact f32 NCHW W4.
# 1c/2d (since 2026-12-06, sixth session). The halo tile for f32 under TF32
#    (conv2d_{backprop_input,forward}_tc_vec{,_nchw}_halo_tf32_f32, one buffer, one block an
#    SM on W4): the conv tests and sanitizers under halo reach it through gpu_conv2d_tf32's
#    first geometry; part 2b times TF32 under halo in both layouts (cuDNN TF32 in the same
#    peers runs) and ncu runs on its NHWC W4 backprop_input call.
# 4. The candle CUDA tests (never run on a GPU yet).
# Usage: run.sh BUNDLE OUT. About 12 minutes; give it timeout_s 590 (what is written under
# OUT comes back if it is cut off: the items above are in order of importance; part 4 may
# need a second call).
B="$1" O="$2"; W="$O/w"; rm -rf "$W"; mkdir -p "$W" "$O"; L="$O/log.txt"
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; local rc=$?; echo "=== $n: rc=$rc ($((SECONDS-t0)) s)" | tee -a "$L"; return $rc; }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'; } >>"$L" 2>&1
st info 30 "$B/gradops" info
WS=(env GRADOPS_CUDA_CONV_TC_TILE=ws GRADOPS_CUDA_CONV_TC_FORWARD_TILE=ws GRADOPS_REQUIRE_GPU=1)
# 1. Correctness.
export GRADOPS_WGMMA_PROBE_PTX="$B/wgmma_probe.compute_90a.ptx"
GRADOPS_REQUIRE_GPU=1 st wgmma_probe 60 "$B/cuda_ops" --test-threads=1 wgmma_model_on_hardware --nocapture
st ws_conv_tests 120 "${WS[@]}" "$B/cuda_ops" --test-threads=1 gpu_conv2d
st ws_conv_tests_2stages 120 "${WS[@]}" GRADOPS_CUDA_CONV_TC_WS_STAGES=2 "$B/cuda_ops" --test-threads=1 gpu_conv2d
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
for tool in racecheck synccheck memcheck; do
  st "${tool}_ws" 90 "${WS[@]}" "$SAN" --tool $tool --error-exitcode 99 \
    "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity
done
HALO=(env GRADOPS_CUDA_CONV_TC_TILE=halo GRADOPS_CUDA_CONV_TC_FORWARD_TILE=halo GRADOPS_REQUIRE_GPU=1)
st halo_conv_tests 120 "${HALO[@]}" "$B/cuda_ops" --test-threads=1 gpu_conv2d
st halo1_conv_tests 60 "${HALO[@]}" GRADOPS_CUDA_CONV_TC_HALO_BUFFERS=1 "$B/cuda_ops" --test-threads=1 gpu_conv2d_every_geometry
for tool in racecheck synccheck memcheck; do
  st "${tool}_halo" 90 "${HALO[@]}" "$SAN" --tool $tool --error-exitcode 99 \
    "$B/cuda_ops" --test-threads=1 gpu_conv2d_every_geometry
done
GRADOPS_REQUIRE_GPU=1 st gpu_tests 150 "$B/cuda_ops" --test-threads=1
reap
# 2. The ws tile's rows (and the NCHW halo tile's).
P="--device cuda --reps 50 --dtypes f16 --layouts nchw,nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f"
PYTHONUNBUFFERED=1 st peers_a 90 python3 bench/peers.py $P --json "$W/peers-a.json"; reap
for rep in 1 2; do
  vs=(default ws ws3 ws8 wgmma halo halo1); [[ $rep == 1 ]] && vs+=(ws_tiles)
  for v in "${vs[@]}"; do
    t=${v%_tiles}; t=${t%[0-9]}
    tile=(); [[ $v != default ]] && tile=(env GRADOPS_CUDA_CONV_TC_TILE=$t GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$t)
    [[ $v == *_tiles ]] && tile+=(GRADOPS_CUDA_CONV_TC_GRID=tiles)
    [[ $v =~ ^ws([0-9])$ ]] && tile+=(GRADOPS_CUDA_CONV_TC_WS_STAGES=${BASH_REMATCH[1]})
    [[ $v == halo1 ]] && tile+=(GRADOPS_CUDA_CONV_TC_HALO_BUFFERS=1)
    st "t${rep}_${v}_f16" 40 "${tile[@]}" "$B/gradops" bench --device cuda --dtype f16 --layout nhwc \
      --workload W4,W5,W4f,W5f --reps 50 --json "$W/t$rep-$v-f16.json"
  done
  for v in default halo; do
    tile=(); [[ $v != default ]] && tile=(env GRADOPS_CUDA_CONV_TC_TILE=$v GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$v)
    st "t${rep}_${v}_f16_nchw" 40 "${tile[@]}" "$B/gradops" bench --device cuda --dtype f16 \
      --layout nchw --workload W4,W5,W4f,W5f --reps 50 --json "$W/t$rep-$v-f16_nchw.json"
  done
done
PYTHONUNBUFFERED=1 st peers_b 90 python3 bench/peers.py $P --json "$W/peers-b.json"; reap
python3 bench/variant_summary.py "$W" "f16 NHWC: default tiles, ws (6 stages), ws at 3 and 8, ws a block a tile, wgmma, halo; f16 NCHW: default, halo" | tee -a "$L" || true
mkdir -p "$W/ws" && mv "$W"/t*.json "$W"/peers-*.json "$W/ws/" 2>/dev/null
# 2b. f32 NHWC on the ws tile, both ops (since 2026-12-06: exact 3xTF32 at 4 stages, the
# TF32 opt-in at 6; the producer splits its stages), beside the default tiles and wgmma;
# and (since 2026-12-06, third session) f32 NCHW on it (A copied element by element from the
# channel planes) beside the default (the lean wgmma tile: wgmma for NCHW is the default).
P="--device cuda --reps 50 --dtypes f32 --layouts nchw,nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f"
PYTHONUNBUFFERED=1 st peers_f32a 90 python3 bench/peers.py $P --json "$W/peers-f32a.json"; reap
for rep in 1 2; do
  for lay in nhwc nchw; do
    vs=(default ws wgmma halo); [[ $lay == nchw ]] && vs=(default ws halo)
    for v in "${vs[@]}"; do
      tile=(); [[ $v != default ]] && tile=(env GRADOPS_CUDA_CONV_TC_TILE=$v GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$v)
      ds=(exact tf32); [[ $v == halo ]] && ds=(tf32)  # (exact f32 under halo: the default)
      for d in "${ds[@]}"; do
        st "t${rep}_${v}_f32_${d}_$lay" 40 "${tile[@]}" "$B/gradops" bench --device cuda --dtype f32 \
          --f32-precision $d --layout $lay --workload W4,W5,W4f,W5f --reps 50 \
          --json "$W/t$rep-$v-f32_${d}_$lay.json"
      done
    done
  done
done
PYTHONUNBUFFERED=1 st peers_f32b 90 python3 bench/peers.py $P --json "$W/peers-f32b.json"; reap
python3 bench/variant_summary.py "$W" "f32, both ops: default tiles, ws, wgmma (NHWC); default, ws (NCHW); halo (TF32, both)" | tee -a "$L" || true
mkdir -p "$W/ws_f32" && mv "$W"/t*.json "$W"/peers-*.json "$W/ws_f32/" 2>/dev/null
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)"
M='regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio|smsp__inst_executed\.sum|sm__inst_executed_pipe_tensor\.sum|l1tex__data_bank_conflicts_pipe_lsu_mem_shared\.sum)$'
for v in halo ws wgmma; do
  st "ncu_${v}_f16_W4" 40 env GRADOPS_CUDA_CONV_TC_TILE=$v "$NCU" --clock-control none \
    -k "conv2d_backprop_input_tc_vec_${v}_f16" -s 2 -c 1 --section SpeedOfLight --section Occupancy \
    --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --metrics "$M" \
    "$B/gradops" bench --device cuda --dtype f16 --layout nhwc --workload W4 --reps 3
done
st ncu_halo_nchw_f16_W4 40 env GRADOPS_CUDA_CONV_TC_TILE=halo "$NCU" --clock-control none \
  -k "conv2d_backprop_input_tc_vec_nchw_halo_f16" -s 2 -c 1 --section SpeedOfLight --section Occupancy \
  --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --metrics "$M" \
  "$B/gradops" bench --device cuda --dtype f16 --layout nchw --workload W4 --reps 3
st ncu_ws_tf32_W4 40 env GRADOPS_CUDA_CONV_TC_TILE=ws "$NCU" --clock-control none \
  -k "conv2d_backprop_input_tc_vec_ws_tf32_f32" -s 2 -c 1 --section SpeedOfLight --section Occupancy \
  --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --metrics "$M" \
  "$B/gradops" bench --device cuda --dtype f32 --f32-precision tf32 --layout nhwc --workload W4 --reps 3
st ncu_halo_tf32_W4 40 env GRADOPS_CUDA_CONV_TC_TILE=halo "$NCU" --clock-control none \
  -k "conv2d_backprop_input_tc_vec_halo_tf32_f32" -s 2 -c 1 --section SpeedOfLight --section Occupancy \
  --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --metrics "$M" \
  "$B/gradops" bench --device cuda --dtype f32 --f32-precision tf32 --layout nhwc --workload W4 --reps 3
st ncu_ws_nchw_exact_W4 40 env GRADOPS_CUDA_CONV_TC_TILE=ws "$NCU" --clock-control none \
  -k "conv2d_backprop_input_tc_vec_nchw_ws_f32" -s 2 -c 1 --section SpeedOfLight --section Occupancy \
  --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --metrics "$M" \
  "$B/gradops" bench --device cuda --dtype f32 --layout nchw --workload W4 --reps 3
reap
# 3. The one-barrier and register-source builds.
st info_onebarrier 30 "$B/gradops-onebarrier" info
st info_rs 30 "$B/gradops-rs" info
GRADOPS_REQUIRE_GPU=1 st gpu_tests_onebarrier 150 "$B/cuda_ops-onebarrier" --test-threads=1
GRADOPS_REQUIRE_GPU=1 st gpu_tests_rs 150 "$B/cuda_ops-rs" --test-threads=1
for v in onebarrier rs; do
  for tool in racecheck synccheck; do
    GRADOPS_CUDA_CONV_TC_TILE=wgmma GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma GRADOPS_REQUIRE_GPU=1 \
      st "${tool}_$v" 90 "$SAN" --tool $tool --error-exitcode 99 \
      "$B/cuda_ops-$v" --test-threads=1 gpu_conv2d_parity gpu_conv2d_tf32
  done
done
reap
P="--device cuda --reps 50 --dtypes f16,f32 --layouts nchw,nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f"
PYTHONUNBUFFERED=1 st peers_c 120 python3 bench/peers.py $P --json "$W/peers-c.json"; reap
declare -A EXE=([default]="$B/gradops" [onebarrier]="$B/gradops-onebarrier" [rs]="$B/gradops-rs")
for v in default onebarrier rs; do
  for lay in nchw nhwc; do
    for d in f16 f32_exact f32_tf32; do
      [[ $d == f16 && $lay == nhwc ]] && continue  # 16-bit NHWC: the 128-pixel tiles, unchanged
      [[ $v == rs && $d != f32_exact ]] && continue  # the rs build changes exact f32 only
      args=(--dtype "${d%%_*}"); [[ $d == f32_* ]] && args+=(--f32-precision "${d#f32_}")
      st "t1_${v}_${d}_$lay" 40 "${EXE[$v]}" bench --device cuda "${args[@]}" --layout $lay \
        --workload W4,W5,W4f,W5f --reps 50 --json "$W/t1-$v-${d}_$lay.json"
    done
  done
done
python3 bench/variant_summary.py "$W" "one barrier and register-source A vs default (the lean wgmma tile's rows)" | tee -a "$L" || true
for v in default rs; do
  st "ncu_${v}_nchw_wgmma_f32_W4" 40 "$NCU" --clock-control none -k "conv2d_backprop_input_tc_vec_nchw_wgmma_f32" \
    -s 2 -c 1 --section SpeedOfLight --section Occupancy --section SchedulerStats \
    --section MemoryWorkloadAnalysis --metrics "$M" "${EXE[$v]}" bench --device cuda --dtype f32 \
    --layout nchw --workload W4 --reps 3
done
reap
# 4. candle on CUDA: the libraries it links (libcublas/libcublasLt/libnvrtc/libcudart .so.13,
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
grep -hE "rc=" "$L" | grep -v "rc=0 "; grep -hE "rc=" "$L" | wc -l

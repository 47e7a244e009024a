#!/usr/bin/env bash
# RUN on an H200 on 2026-12-04 (bundle of commit 1bfa49d, 253 s; results in
# bench/results/2026-12-04-gpu-wgmma-h200/). Its `wgmma` rows were the refill-first tiles and
# `inflight` the build that is the default since: a rerun needs a prebuild with
# REFILL_VARIANT=1 and gradops-refill read as `wgmma`, the default build as `inflight`.
# The wgmma tiles (conv2d_backprop_input_tc_vec_wgmma_{f16,bf16} and, since the fifth session
# of 2026-11-28, conv2d_forward_tc_vec_wgmma_{f16,bf16}: compute_90a image, H100/H200 only;
# GRADOPS_CUDA_CONV_TC_TILE=wgmma, GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma) checked on the GPU
# first (the conv tests under them, racecheck, synccheck, memcheck on the parity test), then
# timed against the tall defaults, three times in turn, with cuDNN (channels_last) before and
# after in the same run; ncu on one W4, W5 and W4f f16 call of the wgmma kernels and W4 of the
# tall one. Since 2026-11-29 also the f32 wgmma tile (conv2d_backprop_input_tc_vec_wgmma_f32,
# GRADOPS_CUDA_CONV_TC_TILE=wgmma: 3xTF32 and the TF32 opt-in on m64n64k8 tf32): in the same
# tests and sanitizers (their f32 calls run it, NCHW and NHWC), timed exact and TF32 against
# the lean tile in both layouts with cuDNN f32 (TF32 off and allowed) before and after, ncu on
# one exact NHWC W4 call. And 16-bit NCHW calls of both ops on the same one-warpgroup tile
# (conv2d_{backprop_input,forward}_tc_vec_nchw_wgmma_*), timed against the lean NCHW kernels. And
# (2026-11-29, second) the f32 forward on the f32 wgmma tile (conv2d_forward_tc_vec_wgmma_f32,
# conv2d_forward_tc_vec_nchw_wgmma_f32, GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma): W4f and W5f
# in the f32 rounds, ncu on one exact NHWC W4f call. And (2026-12-01) the same wgmma tiles
# built with GO_TC_WGMMA_INFLIGHT=1 (gradops-inflight, cuda_ops-inflight: a stage's wgmma
# issued before the refill, one group in flight): its conv tests, racecheck and synccheck,
# then timed as a third variant (`inflight`) in every round, ncu on one W4 f16 call, its SASS.
# And (2026-12-02) the NHWC filter gradient's wgmma kernel
# (conv2d_backprop_filter_partial_tc_nhwc_wgmma_*, GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma, set
# beside the tile variables in every correctness step): its sanitizers on the filter parity
# test, f16 W7 and W8 NHWC timed against the mma.sync kernel with cuDNN before and after, ncu
# on one W7 call of each, its SASS. And (2026-12-02, third session) the NCHW filter gradient by
# 16-byte runs (the new default) against the elementwise loop, f16 and f32 W7/W8, ncu on W7.
# The 16-bit timings are f16 only (bf16 ran within 1% of f16 in every earlier run).
# Usage: run1.sh BUNDLE OUT   (BUNDLE: the unpacked target/gpu-carry/bundle.tar.xz)
# Before it ran, the 2026-11-28 runs' steps of the same kinds took: conv tests 34 s, racecheck 8 s,
# each gradops bench call ~1 s, peers.py 10-13 s, each ncu 3-4 s, so about 4-6 minutes with the
# inflight build's steps, plus the first JIT of the images; give it timeout_s 570 all the same
# (every step has its own limit).
# Everything is written under OUT as it goes (log.txt, w/*.json), so a run cut short by the
# device tool's limit still brings back what it measured.
B="$1" O="$2"; W="$O/w"; rm -rf "$W"; mkdir -p "$W" "$O"; L="$O/log.txt"
# A timed variant: `tall` and `wgmma` are tiles of the default build; `inflight` is the wgmma
# tile of the GO_TC_WGMMA_INFLIGHT=1 build.
vexe() { if [[ $1 == inflight ]]; then echo "$B/gradops-inflight"; else echo "$B/gradops"; fi; }
vtile() { if [[ $1 == inflight ]]; then echo wgmma; else echo "$1"; fi; }
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; local rc=$?; echo "=== $n: rc=$rc ($((SECONDS-t0)) s)" | tee -a "$L"; return $rc; }
# If the wgmma kernels hang (the conv tests under them time out), every later wgmma step would
# too: HUNG skips them, so the default tiles' rows and cuDNN's still come back.
HUNG=""
live() { [[ -z $HUNG || ( $1 != wgmma && $1 != inflight ) ]]; }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,compute_cap --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'; } >>"$L" 2>&1
st info 30 "$B/gradops" info
# 0. The wgmma model on the hardware (emu/wgmma_probe.cu, the emulator's own test kernels):
#    if the conv kernels below fail, this says whether the model they were proven on is wrong.
GRADOPS_WGMMA_PROBE_PTX="$B/wgmma_probe.compute_90a.ptx" GRADOPS_REQUIRE_GPU=1 st wgmma_probe 60 \
  "$B/cuda_ops" --exact gpu::wgmma_model_on_hardware --nocapture
# 1. Correctness first: the conv tests under the wgmma tile; the sanitizers on the parity test
#    (every dtype and layout; the 16-bit NHWC calls run the wgmma kernel).
GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma GRADOPS_CUDA_CONV_TC_TILE=wgmma GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma st wgmma_tests 120 "$B/cuda_ops" --test-threads=1 conv
[[ $? == 124 ]] && HUNG=1 && echo "=== the wgmma tiles hung: their later steps skipped" | tee -a "$L"
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
for tool in racecheck synccheck memcheck; do
  live wgmma || break
  GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma GRADOPS_CUDA_CONV_TC_TILE=wgmma GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma st "${tool}_wgmma" 90 "$SAN" --tool $tool \
    --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity
done
# 1a. The filter gradient's wgmma kernel under the sanitizers (its parity test: every dtype
#     and layout; the 16-bit NHWC calls run it).
for tool in racecheck synccheck memcheck; do
  live wgmma || break
  GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma st "${tool}_filter_wgmma" 90 "$SAN" --tool $tool \
    --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_backprop_filter
done
# 1b. The GO_TC_WGMMA_INFLIGHT=1 build (gradops-inflight, cuda_ops-inflight; since 2026-12-01:
#     the wgmma tiles issue a stage's wgmma before the refill, one group left in flight): its
#     conv tests under both wgmma opt-ins, racecheck and synccheck on the parity test.
if [[ -x "$B/cuda_ops-inflight" ]] && live inflight; then
  GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma GRADOPS_CUDA_CONV_TC_TILE=wgmma GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma st inflight_tests 120 "$B/cuda_ops-inflight" --test-threads=1 conv
  for tool in racecheck synccheck; do
    GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma GRADOPS_CUDA_CONV_TC_TILE=wgmma GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma st "${tool}_inflight" 90 "$SAN" --tool $tool \
      --error-exitcode 99 "$B/cuda_ops-inflight" --test-threads=1 gpu_conv2d_parity
  done
fi
# The conv property tests under the tiles (random geometry against the CPU; 16-bit NHWC
# cases with whole chunks run the wgmma kernels).
live wgmma && GRADOPS_PROP_CASES=150 GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma GRADOPS_CUDA_CONV_TC_TILE=wgmma GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma st prop_wgmma 90 \
  "$B/properties" --exact conv2d_backprop_input_geometry_cuda conv2d_geometry_cuda --nocapture
reap
# 2. cuDNN (f16 W4, W5, W4f, W5f, NHWC (channels_last) and NCHW), the tiles in turn (NHWC, and
#    NCHW, whose 16-bit calls the lean wgmma tile takes under wgmma), cuDNN again.
PYTHONUNBUFFERED=1 st peers_a 150 python3 bench/peers.py --device cuda --reps 50 --dtypes f16 \
  --layouts nchw,nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f --json "$W/peers-a.json"; reap
for rep in 1 2; do
  for v in tall wgmma inflight; do
    [[ -x "$(vexe $v)" ]] && live $v || continue
    for d in f16; do
      GRADOPS_CUDA_CONV_TC_TILE=$(vtile $v) GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$(vtile $v) st "t${rep}_${v}_$d" 40 \
        "$(vexe $v)" bench --device cuda --dtype $d --layout nhwc --workload W4,W5,W4f,W5f \
        --reps 50 --json "$W/t$rep-$v-$d.json"
      # NCHW: the lean NCHW kernels vs the lean wgmma tile (16-bit NCHW's, both ops).
      GRADOPS_CUDA_CONV_TC_TILE=$(vtile $v) GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$(vtile $v) st "t${rep}_${v}_${d}_nchw" 40 \
        "$(vexe $v)" bench --device cuda --dtype $d --layout nchw --workload W4,W5,W4f,W5f \
        --reps 50 --json "$W/t$rep-$v-${d}_nchw.json"
    done
  done
done
PYTHONUNBUFFERED=1 st peers_b 150 python3 bench/peers.py --device cuda --reps 50 --dtypes f16 \
  --layouts nchw,nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f --json "$W/peers-b.json"; reap
# 2b. f32 backprop_input and forward, NHWC and NCHW: the lean tile (what `tall` leaves f32 on)
#     and the f32 wgmma tile, exact and TF32, in turn, with cuDNN f32 (TF32 off and allowed)
#     before and after (NCHW rows against cuDNN's NCHW, NHWC ones against channels_last).
PYTHONUNBUFFERED=1 st peers_f32a 150 python3 bench/peers.py --device cuda --reps 50 --dtypes f32 \
  --layouts nchw,nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f \
  --json "$W/peers-f32a.json"; reap
for rep in 1 2; do
  for v in tall wgmma inflight; do
    [[ -x "$(vexe $v)" ]] && live $v || continue
    for prec in exact tf32; do
      for lay in nhwc nchw; do
        GRADOPS_CUDA_CONV_TC_TILE=$(vtile $v) GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$(vtile $v) st \
          "t${rep}_${v}_f32_${prec}_$lay" 40 "$(vexe $v)" bench --device cuda --dtype f32 \
          --f32-precision $prec --layout $lay --workload W4,W5,W4f,W5f \
          --reps 50 --json "$W/t$rep-$v-f32_${prec}_$lay.json"
      done
    done
  done
done
PYTHONUNBUFFERED=1 st peers_f32b 150 python3 bench/peers.py --device cuda --reps 50 --dtypes f32 \
  --layouts nchw,nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f \
  --json "$W/peers-f32b.json"; reap
# 2c. The filter gradient, f16 NHWC W7 and W8: the mma.sync partial-sum kernel (the default)
#     and the wgmma one in turn, twice, cuDNN (channels_last) before and after.
PYTHONUNBUFFERED=1 st peers_filter_a 120 python3 bench/peers.py --device cuda --reps 50 --dtypes f16 \
  --layouts nhwc --workloads W7,W8 --nhwc-workloads W7,W8 --json "$W/peers-filter-a.json"; reap
for rep in 1 2; do
  for v in mma wgmma; do
    live $v || continue
    GRADOPS_CUDA_CONV_TC_FILTER_TILE=$v st "t${rep}_filter${v}_f16" 40 "$B/gradops" bench --device cuda \
      --dtype f16 --layout nhwc --workload W7,W8 --reps 50 --json "$W/t$rep-filter$v-f16.json"
  done
done
PYTHONUNBUFFERED=1 st peers_filter_b 120 python3 bench/peers.py --device cuda --reps 50 --dtypes f16 \
  --layouts nhwc --workloads W7,W8 --nhwc-workloads W7,W8 --json "$W/peers-filter-b.json"; reap
# 2d. (2026-12-02, third session) The NCHW filter gradient's partial sums by 16-byte runs (the
#     new default, conv2d_backprop_filter_partial_tc_*; x at stride 1 or 2) against the
#     elementwise loop it replaced (GRADOPS_CUDA_CONV_TC_FILTER_TILE=elementwise), f16 and
#     exact f32, W7 and W8, twice in turn, cuDNN NCHW before and after. (Its correctness on
#     the GPU: the conv tests and the filter sanitizers above, whose NCHW calls run it.)
PYTHONUNBUFFERED=1 st peers_nchw_filter_a 120 python3 bench/peers.py --device cuda --reps 50 \
  --dtypes f16,f32 --layouts nchw --workloads W7,W8 --json "$W/peers-nchw-filter-a.json"; reap
for rep in 1 2; do
  for v in runs elementwise; do
    for d in f16 f32; do
      GRADOPS_CUDA_CONV_TC_FILTER_TILE=$v st "t${rep}_nchw${v}_$d" 40 "$B/gradops" bench --device cuda \
        --dtype $d --layout nchw --workload W7,W8 --reps 50 \
        --json "$W/t$rep-nchw$v-$(if [[ $d == f32 ]]; then echo f32_exact; else echo $d; fi)_nchw.json"
    done
  done
done
PYTHONUNBUFFERED=1 st peers_nchw_filter_b 120 python3 bench/peers.py --device cuda --reps 50 \
  --dtypes f16,f32 --layouts nchw --workloads W7,W8 --json "$W/peers-nchw-filter-b.json"; reap
# 3. ncu on one f16 call each: W4 and W5 of the wgmma backprop_input kernel, W4 of the tall
#    one, W4f of the wgmma forward.
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)"
M='regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active|l1tex__data_bank_conflicts_pipe_lsu_mem_shared|smsp__inst_executed(\.sum)?$|sm__inst_executed_pipe_tensor|l1tex__data_pipe_lsu_wavefronts_mem_shared(\.sum)?$)'
for spec in wgmma:W4:backprop_input tall:W4:backprop_input wgmma:W5:backprop_input wgmma:W4f:forward \
    inflight:W4:backprop_input; do
  IFS=: read -r v wl op <<<"$spec"
  [[ -x "$(vexe $v)" ]] && live $v || continue
  GRADOPS_CUDA_CONV_TC_TILE=$(vtile $v) GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$(vtile $v) st "ncu_${v}_$wl" 40 "$NCU" --clock-control none \
    -k "conv2d_${op}_tc_vec_$(vtile $v)_f16" -s 2 -c 1 --section SpeedOfLight --section Occupancy \
    --section SchedulerStats --section MemoryWorkloadAnalysis --metrics "$M" "$(vexe $v)" bench \
    --device cuda --dtype f16 --layout nhwc --workload "$wl" --reps 3
done
live wgmma && GRADOPS_CUDA_CONV_TC_TILE=wgmma st ncu_wgmma_f32_W4 40 "$NCU" --clock-control none \
  -k conv2d_backprop_input_tc_vec_wgmma_f32 -s 2 -c 1 --section SpeedOfLight --section Occupancy \
  --section SchedulerStats --section MemoryWorkloadAnalysis --metrics "$M" "$B/gradops" bench \
  --device cuda --dtype f32 --layout nhwc --workload W4 --reps 3
live wgmma && GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma st ncu_wgmma_f32_W4f 40 "$NCU" --clock-control none \
  -k conv2d_forward_tc_vec_wgmma_f32 -s 2 -c 1 --section SpeedOfLight --section Occupancy \
  --section SchedulerStats --section MemoryWorkloadAnalysis --metrics "$M" "$B/gradops" bench \
  --device cuda --dtype f32 --layout nhwc --workload W4f --reps 3
# The filter gradient's partial-sum kernels, one W7 f16 call each: NHWC mma.sync and wgmma,
# NCHW by runs (the default; `runs` is no value of the variable) and elementwise.
for spec in nhwc:mma:nhwc nhwc:wgmma:nhwc_wgmma nchw:runs: nchw:elementwise:elementwise; do
  IFS=: read -r lay v kind <<<"$spec"
  live $v || continue
  GRADOPS_CUDA_CONV_TC_FILTER_TILE=$v st "ncu_filter_${lay}_${v}_W7" 40 "$NCU" \
    --clock-control none -k "conv2d_backprop_filter_partial_tc${kind:+_$kind}_f16" -s 2 -c 1 \
    --section SpeedOfLight --section Occupancy --section SchedulerStats \
    --section MemoryWorkloadAnalysis --metrics "$M" "$B/gradops" bench --device cuda --dtype f16 \
    --layout "$lay" --workload W7 --reps 3
done
# 4. The wgmma kernels' SASS (the bundle's conv.sm_90a.cubin): HGMMA count, the main loop.
OBJ="$(command -v cuobjdump || ls /usr/local/cuda*/bin/cuobjdump | head -1)"
st sass 30 bash -c 'for f in conv2d_backprop_input_tc_vec_wgmma_f16 conv2d_forward_tc_vec_wgmma_f16 conv2d_backprop_input_tc_vec_wgmma_f32 conv2d_backprop_input_tc_vec_nchw_wgmma_f32 conv2d_forward_tc_vec_wgmma_f32 conv2d_backprop_filter_partial_tc_nhwc_wgmma_f16; do
  "$0" -sass -fun $f "$1/conv.sm_90a.cubin" >> "$2/sass-wgmma.txt"
  [[ -e "$1/conv-inflight.sm_90a.cubin" ]] && "$0" -sass -fun $f "$1/conv-inflight.sm_90a.cubin" >> "$2/sass-wgmma-inflight.txt"; done
  grep -cE "HGMMA" "$2/sass-wgmma.txt"; grep -cE "^ +/\*[0-9a-f]{4}\*/" "$2/sass-wgmma.txt"' \
  "$OBJ" "$B" "$W"
python3 bench/variant_summary.py "$W" "tiles (NHWC and NCHW, both ops; f16 and f32; the filter gradient)" | tee -a "$L"
grep -hE "rc=" "$L" | grep -v "rc=0 "; grep -hE "rc=" "$L" | wc -l
tail -8 "$L"

#!/usr/bin/env bash
# H200 run 1 (2026-11-27, third GPU session): the NCHW tensor-core epilogue staged
# transposed (commit 9223b8b, unmeasured until now) and the tall tile's copies by whole
# sectors (two threads a pixel row) checked and timed against cuDNN in the same run, with
# ncu on what they change (bank conflicts, L1 sectors per request, stall reasons).
# Usage: run1.sh BUNDLE OUT
B="$1" O="$2"; W=/tmp/run1; rm -rf "$W"; mkdir -p "$W/a" "$O"; L="$W/log.txt"
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a "$L"; }
# 1. Tests (whole cuda_ops suite, simt, property tests, train), benches, cuDNN: the defaults.
REPS=50 PROP_CASES=150 PROP_LIMIT=20 SIMT=0 GENERAL=0 STEPS=tests,bench,peers \
  timeout 230 bash scripts/gpu-session.sh "$B" "$W/a"; reap
# 2. The tall tile: the conv tests under it, then W4/W5 16-bit NHWC backprop_input against the
#    default (wide) and the 64-pixel tile, twice in turn.
GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_TILE=tall st tall_tests 60 "$B/cuda_ops" --test-threads=1 conv
for rep in 1 2; do
  for v in wide lean tall; do
    for d in f16 bf16; do
      GRADOPS_CUDA_CONV_TC_TILE=$v st "t${rep}_${v}_$d" 30 "$B/gradops" bench --device cuda --dtype $d \
        --layout nhwc --workload W4,W5 --reps 50 --json "$W/t$rep-$v-$d.json"
    done
  done
done
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_TILE=tall st racecheck_tall 60 "$SAN" --tool racecheck \
  --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity
GRADOPS_REQUIRE_GPU=1 st racecheck_conv 90 "$SAN" --tool racecheck --error-exitcode 99 "$B/cuda_ops" \
  --test-threads=1 gpu_conv2d_parity
# 3. ncu: stall reasons and shared-memory bank conflicts of the NCHW lean kernels (the
#    transposed epilogue; run 1 of 2026-11-27b counted 801 k conflicts on f16 W4), sections,
#    L1 sectors per request and stalls of the tall and wide kernels (W4 f16 NHWC).
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)"
M='regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active|l1tex__data_bank_conflicts_pipe_lsu_mem_shared|smsp__inst_executed(\.sum)?$|sm__inst_executed_pipe_tensor|l1tex__t_(sectors|requests)_pipe_lsu_mem_global_op_ldgsts)'
for spec in nchw_f16:f16:nchw nchw_f32:f32:nchw; do
  IFS=: read -r k d l <<<"$spec"
  st "ncu_$k" 40 "$NCU" --clock-control none -k "conv2d_backprop_input_tc_vec_$k" -s 2 -c 1 \
    --section SpeedOfLight --metrics "$M" "$B/gradops" bench --device cuda --dtype $d --layout $l \
    --workload W4 --reps 3
done
for v in tall wide; do
  k=conv2d_backprop_input_tc_vec_${v}_f16
  GRADOPS_CUDA_CONV_TC_TILE=$v st "ncu_$v" 40 "$NCU" --clock-control none -k "$k" -s 2 -c 1 \
    --section SpeedOfLight --section Occupancy --section SchedulerStats --section MemoryWorkloadAnalysis \
    --metrics "$M" "$B/gradops" bench --device cuda --dtype f16 --layout nhwc --workload W4 --reps 3
done
python3 - "$W" <<'PY' | tee -a "$L"
import glob, json, os, sys
r = {}
for f in sorted(glob.glob(sys.argv[1] + "/t*.json")):
    rep, v, d = os.path.basename(f)[:-5].split("-")
    for x in json.load(open(f))["results"]:
        r.setdefault((d, x["workload"]), {}).setdefault(v, []).append(x["median_ms"])
print("tiles: median ms per call (16-bit NHWC backprop_input; runs in turn)")
for (d, wl), v in sorted(r.items()):
    print(f"  {d:<5} {wl:<3} " + "  ".join(f"{k} " + "/".join(f"{y:.4f}" for y in ys) for k, ys in sorted(v.items())))
PY
cp "$W/a/log.txt" "$O/log-a.txt"; cp "$L" "$O/log-b.txt"; cp "$W/a/peers.json" "$O/" 2>/dev/null
tar cf "$O/json.tar" -C "$W" $(cd "$W" && ls t*.json) -C "$W/a" gradops-json.tar 2>/dev/null
sed -n '/gradops vs PyTorch, same card/,/^=== peers/p' "$W/a/log.txt" | grep -E "^(W4|W5|W4f|W5f|W7|W8) " | cut -c1-110
grep -hE "rc=" "$W/a/log.txt" "$L" | grep -v "rc=0 " ; grep -hE "rc=" "$W/a/log.txt" "$L" | wc -l
tail -12 "$L"

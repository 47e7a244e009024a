#!/usr/bin/env bash
# GPU run 1 (2026-11-28): the square tile (conv2d_{backprop_input,forward}_tc_vec_square:
# 128 pixels on 2 warps of 64 x 64, four blocks per SM) checked on the GPU (the conv tests
# under it, racecheck, memcheck) and timed against the defaults (tall backprop_input, the
# 64-pixel forward) and the wide tile, three times in turn (and the square tile on one block
# per tile: sqtiles), with cuDNN (channels_last) before and after in the same run; ncu
# (stall reasons, instructions per HMMA, L1 and shared-memory load) on the square kernels
# and the defaults.
# Usage: run1.sh BUNDLE OUT   (BUNDLE: the unpacked target/gpu-carry/bundle.tar.xz)
B="$1" O="$2"; W=/tmp/run1; rm -rf "$W"; mkdir -p "$W" "$O"; L="$W/log.txt"
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a "$L"; }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'; } >>"$L" 2>&1
st info 30 "$B/gradops" info
# 1. Correctness: the conv tests under the square tile and under the default; racecheck and
#    memcheck on the parity test (every dtype and layout) under the square tile.
GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_TILE=square st square_tests 90 "$B/cuda_ops" --test-threads=1 conv
GRADOPS_REQUIRE_GPU=1 st default_tests 90 "$B/cuda_ops" --test-threads=1 conv
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_TILE=square st racecheck_square 60 "$SAN" --tool racecheck \
  --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity
GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_TILE=square st memcheck_square 60 "$SAN" --tool memcheck \
  --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity
reap
# 2. cuDNN (f16/bf16 NHWC W4, W5: channels_last), then the tiles in turn, then cuDNN again.
PYTHONUNBUFFERED=1 st peers_a 120 python3 bench/peers.py --device cuda --reps 50 --dtypes f16,bf16 \
  --layouts nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f --json "$W/peers-a.json"; reap
for rep in 1 2 3; do
  for v in tall square wide sqtiles; do
    for d in f16 bf16; do
      tile=${v/sqtiles/square}; grid=auto; [[ $v == sqtiles ]] && grid=tiles
      GRADOPS_CUDA_CONV_TC_TILE=$tile GRADOPS_CUDA_CONV_TC_GRID=$grid st "t${rep}_${v}_$d" 30 \
        "$B/gradops" bench --device cuda --dtype $d --layout nhwc --workload W4,W5,W4f,W5f --reps 50 \
        --json "$W/t$rep-$v-$d.json"
    done
  done
done
PYTHONUNBUFFERED=1 st peers_b 120 python3 bench/peers.py --device cuda --reps 50 --dtypes f16,bf16 \
  --layouts nhwc --workloads W4,W5,W4f,W5f --nhwc-workloads W4,W5,W4f,W5f --json "$W/peers-b.json"; reap
# 3. ncu on one W4 (and W5) f16 call of the square and tall kernels.
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)"
M='regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active|l1tex__data_bank_conflicts_pipe_lsu_mem_shared|smsp__inst_executed(\.sum)?$|sm__inst_executed_pipe_tensor|l1tex__data_pipe_lsu_wavefronts_mem_shared(\.sum)?$)'
for spec in square:W4:backprop_input_tc_vec_square tall:W4:backprop_input_tc_vec_tall \
    square:W5:backprop_input_tc_vec_square square:W4f:forward_tc_vec_square tall:W4f:forward_tc_vec; do
  IFS=: read -r v wl k <<<"$spec"
  GRADOPS_CUDA_CONV_TC_TILE=$v st "ncu_${v}_$wl" 40 "$NCU" --clock-control none \
    -k "conv2d_${k}_f16" -s 2 -c 1 --section SpeedOfLight --section Occupancy \
    --section SchedulerStats --section MemoryWorkloadAnalysis --metrics "$M" "$B/gradops" bench \
    --device cuda --dtype f16 --layout nhwc --workload "$wl" --reps 3
done
python3 - "$W" <<'PY' | tee -a "$L"
import glob, json, os, sys
w = sys.argv[1]
r = {}
for f in sorted(glob.glob(w + "/t*.json")):
    rep, v, d = os.path.basename(f)[:-5].split("-")
    for x in json.load(open(f))["results"]:
        r.setdefault((d, x["workload"]), {}).setdefault(v, []).append(x["median_ms"])
peer = {}
for f in sorted(glob.glob(w + "/peers-*.json")):
    for x in json.load(open(f)).get("results", []):
        if x.get("peer") == "pytorch" and x.get("layout") == "NHWC" and x.get("median_ms"):
            peer.setdefault((x.get("dtype"), x.get("workload")), []).append(x["median_ms"])
print("tiles: median ms per call (16-bit NHWC; runs in turn; W4f/W5f: tall = wide = the 64-pixel forward) | cuDNN before/after")
for (d, wl), v in sorted(r.items()):
    c = peer.get((d, wl), [])
    print(f"  {d:<5} {wl:<3} " + "  ".join(f"{k} " + "/".join(f"{y:.4f}" for y in ys) for k, ys in sorted(v.items()))
          + "  | cudnn " + "/".join(f"{y:.4f}" for y in c))
PY
cp "$L" "$O/log.txt"
tar cf "$O/json.tar" -C "$W" $(cd "$W" && ls *.json)
grep -hE "rc=" "$L" | grep -v "rc=0 "; grep -hE "rc=" "$L" | wc -l
tail -8 "$L"

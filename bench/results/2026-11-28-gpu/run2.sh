#!/usr/bin/env bash
# GPU run 2 (2026-11-28): the forward's tiles. Run 1 timed the square forward twin against
# the 64-pixel default (W5f 17% faster, W4f 7% slower); this bundle adds a tall forward twin
# (conv2d_forward_tc_vec_tall: 128 pixels on 4 warps of 64 x 32, three blocks per SM) and
# GRADOPS_CUDA_CONV_TC_FORWARD_TILE=lean|tall|square to pick the forward's tile. The whole
# GPU suite (scripts/gpu-session.sh, step tests), the conv tests under each forward tile,
# racecheck; the three forward tiles in turn, three times, with cuDNN before and after;
# ncu on the tall forward (W4f, W5f) and the square one (W5f).
# Usage: run2.sh BUNDLE OUT   (BUNDLE: the unpacked target/gpu-carry/bundle.tar.xz)
B="$1" O="$2"; W=/tmp/run2; rm -rf "$W"; mkdir -p "$W/a" "$O"; L="$W/log.txt"
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a "$L"; }
{ date -u +%FT%TZ; nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  python3 -c 'import torch; print("torch", torch.__version__, "cudnn", torch.backends.cudnn.version())'; } >>"$L" 2>&1
# 1. Correctness: the suite under the defaults, the conv tests under each forward tile and
#    under the square backprop_input tile, racecheck on the parity test under tall and square.
PROP_CASES=100 PROP_LIMIT=20 STEPS=tests timeout 200 bash scripts/gpu-session.sh "$B" "$W/a"; reap
for v in tall square; do
  GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$v GRADOPS_CUDA_CONV_TC_TILE=$v \
    st "tests_$v" 90 "$B/cuda_ops" --test-threads=1 conv
done
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
for v in tall square; do
  GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$v st "racecheck_fwd_$v" 60 "$SAN" --tool racecheck \
    --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity
done
reap
# 2. cuDNN (f16/bf16 NHWC W4f, W5f: channels_last), the forward tiles in turn, cuDNN again.
PYTHONUNBUFFERED=1 st peers_a 120 python3 bench/peers.py --device cuda --reps 50 --dtypes f16,bf16 \
  --layouts nhwc --workloads W4f,W5f --nhwc-workloads W4f,W5f --json "$W/peers-a.json"; reap
for rep in 1 2 3; do
  for v in lean tall square; do
    for d in f16 bf16; do
      GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$v st "t${rep}_${v}_$d" 30 "$B/gradops" bench --device cuda \
        --dtype $d --layout nhwc --workload W4f,W5f --reps 50 --json "$W/t$rep-$v-$d.json"
    done
  done
done
PYTHONUNBUFFERED=1 st peers_b 120 python3 bench/peers.py --device cuda --reps 50 --dtypes f16,bf16 \
  --layouts nhwc --workloads W4f,W5f --nhwc-workloads W4f,W5f --json "$W/peers-b.json"; reap
# 3. ncu on one f16 call of the tall forward (W4f, W5f) and the square and lean ones (W5f).
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)"
M='regex:^(smsp__average_warps_issue_stalled_.*_per_issue_active|smsp__inst_executed(\.sum)?$|sm__inst_executed_pipe_tensor(\.sum)?$|l1tex__data_pipe_lsu_wavefronts_mem_shared(\.sum)?$)'
for spec in tall:W4f:forward_tc_vec_tall tall:W5f:forward_tc_vec_tall square:W5f:forward_tc_vec_square \
    lean:W5f:forward_tc_vec; do
  IFS=: read -r v wl k <<<"$spec"
  GRADOPS_CUDA_CONV_TC_FORWARD_TILE=$v st "ncu_${v}_$wl" 40 "$NCU" --clock-control none \
    -k "conv2d_${k}_f16" -s 2 -c 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section SchedulerStats --metrics "$M" "$B/gradops" bench \
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
print("forward tiles: median ms per call (16-bit NHWC conv2d; runs in turn) | cuDNN before/after")
for (d, wl), v in sorted(r.items()):
    c = peer.get((d, wl), [])
    print(f"  {d:<5} {wl:<3} " + "  ".join(f"{k} " + "/".join(f"{y:.4f}" for y in ys) for k, ys in sorted(v.items()))
          + "  | cudnn " + "/".join(f"{y:.4f}" for y in c))
PY
cp "$W/a/log.txt" "$O/log-suite.txt"; cp "$L" "$O/log.txt"
tar cf "$O/json.tar" -C "$W" $(cd "$W" && ls *.json)
grep -hE "rc=" "$W/a/log.txt" "$L" | grep -v "rc=0 "; grep -hE "rc=" "$W/a/log.txt" "$L" | wc -l
tail -6 "$L"

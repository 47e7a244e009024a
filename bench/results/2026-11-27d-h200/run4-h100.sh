#!/usr/bin/env bash
# Run 4 (2026-11-27, third GPU session, on an H100 if one is lent): does the tall tile's
# default hold on the other lent card? The conv tests under the default, then the three
# tiles in turn (16-bit NHWC backprop_input W4/W5, twice), then cuDNN on the f16 NHWC rows.
# Usage: run4-h100.sh BUNDLE OUT
B="$1" O="$2"; W=/tmp/run4; rm -rf "$W"; mkdir -p "$W" "$O"; L="$W/log.txt"
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a "$L"; }
nvidia-smi --query-gpu=name,driver_version --format=csv >>"$L" 2>&1
GRADOPS_REQUIRE_GPU=1 st tests_conv 40 "$B/cuda_ops" --test-threads=1 conv
for rep in 1 2; do
  for v in tall wide lean; do
    for d in f16 bf16; do
      GRADOPS_CUDA_CONV_TC_TILE=$v st "t${rep}_${v}_$d" 20 "$B/gradops" bench --device cuda --dtype $d \
        --layout nhwc --workload W4,W5 --reps 50 --json "$W/t$rep-$v-$d.json"
    done
  done
done
PYTHONUNBUFFERED=1 st peers 60 python3 bench/peers.py --device cuda --reps 50 --dtypes f16 --layouts nhwc \
  --workloads W4,W5 --nhwc-workloads W4,W5 --json "$W/peers.json" --gradops-json "$W/t1-tall-f16.json"
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
cp "$L" "$O/log.txt"; tar cf "$O/json.tar" -C "$W" $(cd "$W" && ls *.json)
grep -E "^(W4|W5) " "$L" | cut -c1-110
grep -E "rc=" "$L" | grep -v "rc=0 "; head -2 "$L"; grep -A6 "^tiles:" "$L"

#!/usr/bin/env bash
# H200 run 3 (2026-11-27, third GPU session): the committed state (the tall tile, copies by
# whole sectors, the default of 16-bit NHWC backprop_input; run 2's spread and 4-stage
# experiments reverted): the suite, the benches and cuDNN in the same run, then the three
# tiles in turn, twice, and racecheck on the conv parity test.
# Usage: run3.sh BUNDLE OUT
B="$1" O="$2"; W=/tmp/run3; rm -rf "$W"; mkdir -p "$W/a" "$O"; L="$W/log.txt"
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a "$L"; }
REPS=50 PROP_CASES=150 PROP_LIMIT=20 SIMT=0 GENERAL=0 STEPS=tests,bench,peers \
  timeout 230 bash scripts/gpu-session.sh "$B" "$W/a"; reap
for rep in 1 2; do
  for v in tall wide lean; do
    for d in f16 bf16; do
      GRADOPS_CUDA_CONV_TC_TILE=$v st "t${rep}_${v}_$d" 30 "$B/gradops" bench --device cuda --dtype $d \
        --layout nhwc --workload W4,W5 --reps 50 --json "$W/t$rep-$v-$d.json"
    done
  done
done
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
GRADOPS_REQUIRE_GPU=1 st racecheck_conv 60 "$SAN" --tool racecheck --error-exitcode 99 "$B/cuda_ops" \
  --test-threads=1 gpu_conv2d_parity
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
grep -A10 "^tiles:" "$L"

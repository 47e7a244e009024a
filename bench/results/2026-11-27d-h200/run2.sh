#!/usr/bin/env bash
# H200 run 2 (2026-11-27, third GPU session): the lean conv kernels' cp.async stores spread
# over the banks (go_tc_copy_row) and the wide/tall tiles 4 stages deep in dynamic shared
# memory, the tall tile the 16-bit NHWC default: the suite, the benches and cuDNN in the same
# run on the default build; then the builds in turn, twice: gradops (spread, 4 stages),
# gradops-v1 (spread, 3 stages), gradops-v0 (rows in order, 3 stages: run 1's kernels);
# ncu on the new defaults.
# Usage: run2.sh BUNDLE OUT
B="$1" O="$2"; W=/tmp/run2; rm -rf "$W"; mkdir -p "$W/a" "$W/v" "$O"; L="$W/log.txt"
reap() { pkill -9 -f "$B/" ; pkill -9 -f bench/peers.py; pkill -9 -x ncu; sleep 1; } 2>/dev/null
st() { local n=$1 lim=$2; shift 2; local t0=$SECONDS; echo "=== $n: $*" >>"$L"; timeout "$lim" "$@" >>"$L" 2>&1; echo "=== $n: rc=$? ($((SECONDS-t0)) s)" | tee -a "$L"; }
# 1. Tests (whole cuda_ops suite, simt, property tests, train), benches, cuDNN: the defaults.
REPS=50 PROP_CASES=150 PROP_LIMIT=20 SIMT=0 GENERAL=0 STEPS=tests,bench,peers \
  timeout 230 bash scripts/gpu-session.sh "$B" "$W/a"; reap
# 2. The conv tests under the other tiles; sanitizers on the conv tests (default tile).
for v in wide lean; do
  GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_TILE=$v st "tests_$v" 60 "$B/cuda_ops" --test-threads=1 conv
done
SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)"
GRADOPS_REQUIRE_GPU=1 st racecheck_conv 60 "$SAN" --tool racecheck --error-exitcode 99 "$B/cuda_ops" \
  --test-threads=1 gpu_conv2d_parity
GRADOPS_REQUIRE_GPU=1 GRADOPS_CUDA_CONV_TC_TILE=wide st racecheck_wide 60 "$SAN" --tool racecheck \
  --error-exitcode 99 "$B/cuda_ops" --test-threads=1 gpu_conv2d_parity
GRADOPS_REQUIRE_GPU=1 st memcheck_conv 60 "$SAN" --tool memcheck --error-exitcode 99 "$B/cuda_ops" \
  --test-threads=1 conv
# 3. The builds in turn (W4 W5 W4f W5f; 16-bit NHWC backprop_input under each tile).
for rep in 1 2; do
  for x in gradops gradops-v1 gradops-v0; do
    [[ -x "$B/$x" ]] || continue
    for v in tall wide lean; do
      GRADOPS_CUDA_CONV_TC_TILE=$v st "v${rep}_${x}_f16_nhwc_$v" 30 "$B/$x" bench --device cuda --dtype f16 \
        --layout nhwc --workload W4,W5 --reps 50 --json "$W/v/$rep-$x-f16-nhwc-$v.json"
    done
    for dl in f16:nchw f32:nchw f32:nhwc f64:nhwc; do
      IFS=: read -r d l <<<"$dl"
      st "v${rep}_${x}_${d}_$l" 30 "$B/$x" bench --device cuda --dtype $d --layout $l \
        --workload W4,W5,W4f,W5f --reps 50 --json "$W/v/$rep-$x-$d-$l-any.json"
    done
  done
done
# 4. ncu: the default (tall) and wide kernels on W4 f16 NHWC, the NCHW f16 kernel.
NCU="$(command -v ncu || ls /usr/local/cuda*/bin/ncu | head -1)"
M='regex:^(smsp__average_warps_issue_stalled_(barrier|long_scoreboard|short_scoreboard|wait|mio_throttle|math_pipe_throttle|not_selected|selected|lg_throttle|dispatch_stall|no_instruction)_per_issue_active|l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_(ldgsts|ld|st)|smsp__inst_executed|sm__inst_executed_pipe_tensor|l1tex__t_requests_pipe_lsu_mem_global_op_ldgsts)'
for spec in tall:f16:nhwc wide:f16:nhwc nchw:f16:nchw; do
  IFS=: read -r v d l <<<"$spec"
  k=conv2d_backprop_input_tc_vec_${v}_$d
  GRADOPS_CUDA_CONV_TC_TILE=$v st "ncu_$v" 40 "$NCU" --clock-control none -k "$k" -s 2 -c 1 \
    --section SpeedOfLight --section Occupancy --section SchedulerStats --section LaunchStats \
    --metrics "$M" "$B/gradops" bench --device cuda --dtype $d --layout $l --workload W4 --reps 3
done
python3 - "$W/v" <<'PY' | tee -a "$L"
import glob, json, os, sys
r = {}
for f in sorted(glob.glob(sys.argv[1] + "/*.json")):
    rep, x, d, l, v = os.path.basename(f)[:-5].split("-", 1)[0], *os.path.basename(f)[:-5].split("-", 1)[1].rsplit("-", 3)
    for y in json.load(open(f))["results"]:
        r.setdefault((d, l, v, y["workload"]), {}).setdefault(x, []).append(y["median_ms"])
print("builds: median ms per call (runs in turn; gradops = spread + 4 stages, v1 = spread + 3, v0 = run 1's)")
for k, v in sorted(r.items()):
    print("  " + " ".join(f"{z:<5}" for z in k) + "  " + "  ".join(f"{x} " + "/".join(f"{y:.4f}" for y in ys) for x, ys in sorted(v.items())))
PY
cp "$W/a/log.txt" "$O/log-a.txt"; cp "$L" "$O/log-b.txt"; cp "$W/a/peers.json" "$O/" 2>/dev/null
tar cf "$O/json.tar" -C "$W" v -C "$W/a" gradops-json.tar 2>/dev/null
sed -n '/gradops vs PyTorch, same card/,/^=== peers/p' "$W/a/log.txt" | grep -E "^(W4|W5|W4f|W5f|W7|W8) " | cut -c1-110
grep -hE "rc=" "$W/a/log.txt" "$L" | grep -v "rc=0 " ; grep -hE "rc=" "$W/a/log.txt" "$L" | wc -l
grep -A40 "^builds:" "$L"

#!/usr/bin/env bash
# H200 runs 2 and 3 (2026-11-27), the command each was (one line there, reflowed here), on
# the machine of run 1 while it was still warm, with run 1's bundle (B=/tmp/gb):
# the copies through L1 (gradops-l1, built with GO_TC_VEC_L1=3) combined with the wave grid
# and the wide tile, timed in turn against the default of the time; compute-sanitizer.
# Run 2 had a bug: st() set `l` without `local`, which overwrote the loop's layout variable,
# so only the base rows ran (its x.tar); its two sanitizer steps stand (racecheck of the conv
# tests on cuda_ops-l1: no hazard; memcheck of the whole suite on cuda_ops-l1: 0 errors).
# Run 3 is the same loop with the bug fixed, and memcheck of the whole default cuda_ops.
B=/tmp/gb; O=$OUT; L=$O/log3.txt
st(){ local n=$1 lim=$2; shift 2; local t0=$SECONDS; timeout $lim "$@" >>$L 2>&1; echo "=== $n rc=$? ($((SECONDS-t0)) s)" | tee -a $L; }
for rep in 1 2; do for d in f16 f32; do for lay in nhwc nchw; do
  for v in "base||" "l1||-l1" "l1wave|GRADOPS_CUDA_CONV_TC_GRID=wave|-l1" \
    "l1wide|GRADOPS_CUDA_CONV_TC_TILE=wide|-l1" \
    "l1widewave|GRADOPS_CUDA_CONV_TC_TILE=wide GRADOPS_CUDA_CONV_TC_GRID=wave|-l1"; do
    IFS='|' read -r nm e s <<<"$v"
    st x${rep}_${d}_${lay}_$nm 30 env $e $B/gradops$s bench --device cuda --dtype $d --layout $lay \
      --workload W4,W5,W4f,W5f --reps 50 --json $O/x$rep-$nm-$d-$lay.json
  done
done; done; done
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer | head -1)
GRADOPS_REQUIRE_GPU=1 st memcheck_all 150 $SAN --tool memcheck --error-exitcode 99 $B/cuda_ops --test-threads=1
# (then a summary of the medians per variant, printed at the end of the reply, and x.tar)

#!/usr/bin/env bash
# Same-run rounds of a gradops binary against the strongest CPU peers (PyTorch, with
# `channels_last` for NHWC; TensorFlow + oneDNN), layout by layout: `bench/peers.py --rounds`,
# writing OUT/PREFIX{peers,gradops}-LAYOUT.json and OUT/PREFIXlog-LAYOUT.txt. Table rows from
# them: `bench/results/2026-11-28-cpu-zen4-rounds/summary.py OUT/*peers-*.json`.
# Usage: bench/cpu_rounds.sh GRADOPS OUT LAYOUTS WORKLOADS ROUNDS [THREADS] [PREFIX]
#   bench/cpu_rounds.sh target/release/gradops /tmp/r nchw,nhwc W4,W5,W4f,W5f 5
#   bench/cpu_rounds.sh target/release/gradops /tmp/r nhwc,nchw W4,W5,W4f,W5f 3 1 1thread-
# THREADS (default 2): the peers' --threads and gradops' RAYON_NUM_THREADS. PYTHON: the
# interpreter with the peers (default bench/.venv/bin/python, from bench/setup.sh).
# ISA=avx2: every side held to AVX2 (an AVX2-only CPU's contest on an AVX-512 machine):
# GRADOPS_CPU_SIMD=avx2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2
# MKL_ENABLE_INSTRUCTIONS=AVX2, recorded in the peers' JSON (`isa_caps`).
# DTYPE=bf16|f16: both sides in that type (peers.py --dtype, gradops bench --dtype); f32 by default.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$1 out=$2 layouts=$3 workloads=$4 rounds=$5 threads=${6:-2} prefix=${7:-}
py=${PYTHON:-bench/.venv/bin/python}
dtype=${DTYPE:-f32}
case ${ISA:-} in
  "") ;;
  avx2) export GRADOPS_CPU_SIMD=avx2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ;;
  *) echo "cpu_rounds.sh: ISA=$ISA: only avx2 (or unset)" >&2; exit 2 ;;
esac
mkdir -p "$out"
for l in ${layouts//,/ }; do
  cl=()
  [[ $l == nhwc ]] && cl=(--torch-channels-last)
  RAYON_NUM_THREADS=$threads "$py" bench/peers.py --threads "$threads" --rounds "$rounds" \
    --peers pytorch,tensorflow-onednn "${cl[@]}" --workloads "$workloads" --dtype "$dtype" \
    --json "$out/${prefix}peers-$l.json" \
    --gradops-cmd "$bin bench --device cpu --dtype $dtype --layout $l --workload $workloads --json $out/${prefix}gradops-$l.json" \
    >"$out/${prefix}log-$l.txt" 2>&1
done

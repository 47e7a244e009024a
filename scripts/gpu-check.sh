#!/usr/bin/env bash
# End-to-end GPU check for a machine with an NVIDIA GPU. Writes a results file.
#
#   bash scripts/gpu-check.sh                 # build here (cargo + nvcc) and run everything
#   bash scripts/gpu-check.sh --prebuild      # on a machine without a GPU: build the test
#                                             # binaries into target/gpu-bundle/ (carry it)
#   bash scripts/gpu-check.sh --bundle DIR    # on a GPU machine without cargo/network:
#                                             # run the prebuilt binaries in DIR
#
# Steps: toolchain (system nvcc if any, else scripts/install-cuda-toolchain.sh),
# GRADOPS_REQUIRE_CUDA=1 build (one PTX image per architecture of GRADOPS_CUDA_ARCH, default
# 75,80,90), ptxas check (every image for its own target), GPU tests with
# GRADOPS_REQUIRE_GPU=1 (a skip is a failure here; they run on the image the runtime picks,
# the highest not newer than the device's compute capability), `gradops info` (that
# capability, and the image and kernel variant each op loads on it), compute-sanitizer
# (memcheck, racecheck, synccheck, initcheck) over the GPU tests, benches named
# benches/cuda*.rs when present.
# Results: ${GRADOPS_RESULTS:-gpu-results.txt} (nvidia-smi, versions, every step's
# output and status). Exit status: non-zero if any step failed.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
RESULTS="${GRADOPS_RESULTS:-$ROOT/gpu-results.txt}"
MODE=build
BUNDLE=""
case "${1:-}" in
  --prebuild) MODE=prebuild ;;
  --bundle) MODE=bundle; BUNDLE="${2:?--bundle needs a folder}" ;;
  "") ;;
  *) echo "usage: $0 [--prebuild | --bundle DIR]" >&2; exit 2 ;;
esac

FAILED=0
step() {  # step NAME CMD...: run, log to RESULTS, remember failure
  local name="$1"; shift
  echo "=== $name: $*" | tee -a "$RESULTS"
  local t0=$SECONDS
  "$@" >>"$RESULTS" 2>&1
  local rc=$?
  echo "=== $name: rc=$rc ($((SECONDS - t0)) s)" | tee -a "$RESULTS"
  [[ $rc -eq 0 ]] || FAILED=1
  return $rc
}

# The wgmma model's hardware probe (emu/wgmma_probe.cu: the emulator's wgmma test kernels as a
# compute_90a PTX of their own, not in the crate), for tests/cuda_ops.rs's
# wgmma_model_on_hardware (GRADOPS_WGMMA_PROBE_PTX).
wgmma_probe() {  # wgmma_probe OUT.ptx
  "$NVCC" -ptx -arch=compute_90a -O3 -std=c++17 --Werror all-warnings -I kernels -o "$1" \
    emu/wgmma_probe.cu
}

toolchain() {
  if [[ -n "${NVCC:-}" ]]; then echo "NVCC=$NVCC"; return 0; fi
  if command -v nvcc >/dev/null 2>&1; then
    local v; v="$(nvcc --version | sed -n 's/.*release \([0-9.]*\),.*/\1/p')"
    if [[ "$v" == "13.0" ]]; then export NVCC="$(command -v nvcc)"; echo "system nvcc $v"; return 0; fi
    echo "system nvcc $v is not 13.0; using the pinned toolchain"
  fi
  export NVCC="$(bash scripts/install-cuda-toolchain.sh | tail -1)"
}

# Test executables cargo built for `--test NAME` (release profile).
test_exe() {
  cargo test --release --no-run --test "$1" --message-format=json 2>/dev/null |
    python3 -c 'import json,sys
for l in sys.stdin:
    try: m=json.loads(l)
    except Exception: continue
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]==sys.argv[1]: print(m["executable"])' "$1" | tail -1
}

: >"$RESULTS"
{
  echo "gradops gpu-check $(date -u +%FT%TZ) mode=$MODE"
  echo "commit: $(git rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "GRADOPS_CUDA_ARCH=${GRADOPS_CUDA_ARCH:-<unset: 75,80,90>}"
  nvidia-smi 2>&1 || echo "nvidia-smi: not available"
  nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv 2>&1 || true
} >>"$RESULTS"

if [[ "$MODE" == prebuild ]]; then
  toolchain
  export GRADOPS_REQUIRE_CUDA=1
  # The default build's PTX reused by the candle variant's (build.rs, keyed by the inputs).
  export GRADOPS_PTX_CACHE="${GRADOPS_PTX_CACHE:-$PWD/target/ptx-cache}"
  step build cargo build --release || exit 1
  mkdir -p target/gpu-bundle
  for t in cuda_ops cuda_conv_simt properties ptx_check; do
    exe="$(test_exe "$t")"
    [[ -n "$exe" ]] && cp "$exe" "target/gpu-bundle/$t"
  done
  cp target/release/gradops target/gpu-bundle/ 2>/dev/null || true
  # The training example (its GPU path: gradops' device API plus NVRTC elementwise kernels).
  step build_train cargo build --release --example train || FAILED=1
  cp target/release/examples/train target/gpu-bundle/ 2>/dev/null || true
  # sm_90 machine code of the compute_90 images, for `cuobjdump -sass` on the GPU machine
  # (the crate embeds PTX only; the driver compiles it there).
  # The build's own PTX: the out folder holding the newest image (a folder's own time does not
  # move when a build rewrites the files in it, so an older build's folder can look newer).
  out_dir="$(dirname "$(ls -t target/release/build/gradops-*/out/conv.compute_90.ptx 2>/dev/null | head -1)")"
  ptxas="$(dirname "$NVCC")/ptxas"
  for ptx in "$out_dir"/*.compute_90.ptx; do
    [[ -e "$ptx" && -x "$ptxas" ]] || continue
    m="$(basename "$ptx" .compute_90.ptx)"
    "$ptxas" -arch=sm_90 "$ptx" -o "target/gpu-bundle/$m.sm_90.cubin" || FAILED=1
  done
  # And of the compute_90a image (the wgmma kernels).
  for ptx in "$out_dir"/*.compute_90a.ptx; do
    [[ -e "$ptx" && -x "$ptxas" ]] || continue
    m="$(basename "$ptx" .compute_90a.ptx)"
    "$ptxas" -arch=sm_90a "$ptx" -o "target/gpu-bundle/$m.sm_90a.cubin" || FAILED=1
  done
  step wgmma_probe wgmma_probe target/gpu-bundle/wgmma_probe.compute_90a.ptx
  # Build-time comparisons, as gradops-NAME and cuda_ops-NAME beside the default build (and,
  # where the variant's compute_90a image differs, conv-NAME.sm_90a.cubin), for same-run
  # comparisons on the GPU machine. Each doubles the build.
  # - refill (off unless REFILL_VARIANT=1): GO_TC_WGMMA_INFLIGHT=0 (kernels/conv_tc.cuh: the
  #   wgmma tiles issue a stage's wgmma after the refill, none in flight; the default until
  #   2026-12-04, when bench/results/2026-11-28b-gpu-wgmma/run1.sh timed the two on an H200
  #   as `wgmma` and `inflight`; that run's bundle built this one as the inflight variant).
  # - onebarrier (off unless BARRIER_VARIANT=1): GO_TC_WGMMA_BARRIERS=1 (kernels/conv_tc.cuh:
  #   the lean wgmma tile's iteration takes one block barrier, not two; not yet timed).
  # - rs (off unless RS_VARIANT=1): GO_TC_WGMMA_F32_RS=1 (kernels/conv_tc.cuh: the exact f32
  #   wgmma tile reads A into registers and splits it there, wgmma's register-source form;
  #   not yet run on a GPU).
  # - cg (off unless CG_VARIANT=1): GO_TC_VEC_L1=0 (the lean conv tiles' copies through L2
  #   only, cp.async.cg; the default, 3, goes through L1), for scripts/gpu-session.sh's
  #   experiments step.
  variants=()
  build_variant() {  # NAME FLAGS
    local name="$1" flags="$2" dir="target/variant-$1" exe vout
    if CARGO_TARGET_DIR="$dir" GRADOPS_NVCC_FLAGS="$flags" \
        step "build_$name" cargo build --release -p gradops-cli; then
      cp "$dir/release/gradops" "target/gpu-bundle/gradops-$name"
      exe="$(CARGO_TARGET_DIR="$dir" GRADOPS_NVCC_FLAGS="$flags" test_exe cuda_ops)"
      [[ -n "$exe" ]] && cp "$exe" "target/gpu-bundle/cuda_ops-$name"
      variants+=("gradops-$name" "cuda_ops-$name")
      vout="$(ls -t "$dir"/release/build/gradops-*/out/conv.compute_90a.ptx 2>/dev/null | head -1)"
      if [[ -n "$vout" && -x "$ptxas" ]] && ! cmp -s "$vout" "$out_dir/conv.compute_90a.ptx"; then
        "$ptxas" -arch=sm_90a "$vout" -o "target/gpu-bundle/conv-$name.sm_90a.cubin" || FAILED=1
      fi
    else
      FAILED=1
    fi
  }
  [[ "${REFILL_VARIANT:-0}" == 1 ]] && build_variant refill -DGO_TC_WGMMA_INFLIGHT=0
  [[ "${BARRIER_VARIANT:-0}" == 1 ]] && build_variant onebarrier -DGO_TC_WGMMA_BARRIERS=1
  [[ "${RS_VARIANT:-0}" == 1 ]] && build_variant rs -DGO_TC_WGMMA_F32_RS=1
  [[ "${CG_VARIANT:-0}" == 1 ]] && build_variant cg -DGO_TC_VEC_L1=0
  # - candle (off unless CANDLE_VARIANT=1): tests/cuda_ops.rs built with the `candle-cuda`
  #   feature (its candle_gpu tests: candle's autograd through gradops on Device::new_cuda),
  #   linked here against scripts/cuda-link-stubs.sh's stubs as CI does; on the GPU machine
  #   it needs libcublas/libcublasLt/libnvrtc/libcudart .so.13 and libcurand.so.10 on the
  #   library path (PyTorch's nvidia wheels carry most: see
  #   bench/results/2026-12-05b-gpu-prepared/run.sh). Its own target folder, so the default
  #   build's artifacts stay.
  if [[ "${CANDLE_VARIANT:-0}" == 1 ]]; then
    stub_lib="$(bash scripts/cuda-link-stubs.sh | tail -1)"
    exe="$(CARGO_TARGET_DIR=target/variant-candle CUDA_COMPUTE_CAP=90 CUDAFORGE_THREADS="$(nproc)" CUDA_ROOT="$(dirname "$stub_lib")" \
      cargo test --release --no-run --features candle-cuda --test cuda_ops --message-format=json 2>>"$RESULTS" |
      python3 -c 'import json,sys
for l in sys.stdin:
    try: m=json.loads(l)
    except Exception: continue
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="cuda_ops": print(m["executable"])' | tail -1)"
    if [[ -n "$exe" ]]; then
      cp "$exe" target/gpu-bundle/cuda_ops-candle && variants+=(cuda_ops-candle)
      echo "=== build_candle: rc=0 ($exe)" | tee -a "$RESULTS"
    else
      echo "=== build_candle: rc=1 (no cuda_ops executable with candle-cuda)" | tee -a "$RESULTS"
      FAILED=1
    fi
  fi
  ls -la target/gpu-bundle | tee -a "$RESULTS"
  # The executables stripped and packed with the cubins and the probe's PTX (the device tool
  # carries at most 64 MiB; stripped they are ~330 MB with a variant build, packed ~25 MB):
  # target/gpu-carry/bundle.tar.xz.
  mkdir -p target/gpu-carry
  (cd target/gpu-bundle && strip cuda_ops cuda_conv_simt properties gradops train "${variants[@]}" 2>/dev/null;
   tar cf - cuda_ops cuda_conv_simt properties gradops train "${variants[@]}" *.cubin *.ptx \
     2>/dev/null | xz -T0 -6 >../gpu-carry/bundle.tar.xz) || FAILED=1
  ls -la target/gpu-carry/bundle.tar.xz | tee -a "$RESULTS"
  echo "carry target/gpu-carry and run there: mkdir -p /tmp/gb && tar xJf target/gpu-carry/bundle.tar.xz -C /tmp/gb && bash scripts/gpu-session.sh /tmp/gb OUT"
  exit $FAILED
fi

export GRADOPS_REQUIRE_GPU=1
if [[ "$MODE" == build ]]; then
  step toolchain toolchain
  export GRADOPS_REQUIRE_CUDA=1
  step build cargo build --release || { echo "build failed; see $RESULTS"; exit 1; }
  step wgmma_probe wgmma_probe target/wgmma_probe.compute_90a.ptx &&
    export GRADOPS_WGMMA_PROBE_PTX="$ROOT/target/wgmma_probe.compute_90a.ptx"
  step ptx_check cargo test --release --test ptx_check -- --nocapture
  step gpu_tests cargo test --release --test cuda_ops -- --nocapture --test-threads=1
  step gpu_conv_simt cargo test --release --test cuda_conv_simt -- --nocapture
  step gpu_properties cargo test --release --test properties cuda -- --nocapture
  GPU_TEST="$(test_exe cuda_ops)"
  [[ -x target/release/gradops ]] && step info target/release/gradops info
  step train cargo run --release --example train -- --device cuda
else
  GPU_TEST="$BUNDLE/cuda_ops"
  [[ -e "$BUNDLE/wgmma_probe.compute_90a.ptx" ]] &&
    export GRADOPS_WGMMA_PROBE_PTX="$BUNDLE/wgmma_probe.compute_90a.ptx"
  step gpu_tests "$GPU_TEST" --nocapture --test-threads=1
  [[ -x "$BUNDLE/cuda_conv_simt" ]] && step gpu_conv_simt "$BUNDLE/cuda_conv_simt" --nocapture
  [[ -x "$BUNDLE/properties" ]] && step gpu_properties "$BUNDLE/properties" cuda --nocapture
  [[ -x "$BUNDLE/gradops" ]] && step info "$BUNDLE/gradops" info
  [[ -x "$BUNDLE/train" ]] && step train "$BUNDLE/train" --device cuda
fi

SAN="$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)"
if [[ -n "$SAN" && -n "${GPU_TEST:-}" && -x "$GPU_TEST" ]]; then
  for tool in memcheck racecheck synccheck initcheck; do
    step "sanitizer_$tool" "$SAN" --tool "$tool" --error-exitcode 99 "$GPU_TEST" --test-threads=1
  done
else
  echo "=== compute-sanitizer: not found or no test binary, skipped" | tee -a "$RESULTS"
  FAILED=1
fi

if [[ "$MODE" == build ]]; then
  for b in benches/cuda*.rs; do
    [[ -e "$b" ]] || continue
    step "bench_$(basename "$b" .rs)" cargo bench --bench "$(basename "$b" .rs)"
  done
fi

echo "results in $RESULTS (failed=$FAILED)"
exit $FAILED

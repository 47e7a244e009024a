#!/usr/bin/env bash
# Install the pinned CUDA 13.0 compiler set (nvcc, ptxas, headers) from PyPI into
# .cuda-toolchain/ at the repository root. No GPU and no system CUDA needed.
#
#   bash scripts/install-cuda-toolchain.sh        # install (idempotent, fast when done)
#   GRADOPS_TOOLCHAIN_DIR=/path bash ...           # install elsewhere
#
# Pinned to 13.0.x: PTX from nvcc 13.0 is ISA 9.0, which the R580 driver (CUDA 13.0) JITs.
# A newer nvcc would emit a newer PTX ISA that such drivers reject, so never bump one
# package alone. nvidia-nvvm must be pinned too, or pip pulls the newest one.
# Prints the nvcc path on its last line of stdout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="${GRADOPS_TOOLCHAIN_DIR:-$ROOT/.cuda-toolchain}"
PINS=(
  "nvidia-cuda-nvcc==13.0.88"
  "nvidia-cuda-crt==13.0.88"
  "nvidia-nvvm==13.0.88"
  "nvidia-cuda-runtime==13.0.96"
  "nvidia-cuda-cccl==13.0.85"
)
STAMP="$DEST/.gradops-stamp"
WANT="$(printf '%s\n' "${PINS[@]}")"
NVCC="$DEST/nvidia/cu13/bin/nvcc"

if [[ -f "$STAMP" && -x "$NVCC" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "cuda toolchain already installed in $DEST" >&2
  echo "$NVCC"
  exit 0
fi

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64|Linux-aarch64) ;;
  *) echo "install-cuda-toolchain: unsupported platform $(uname -sm)" >&2; exit 1 ;;
esac

PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
  for c in python3 python; do
    if command -v "$c" >/dev/null 2>&1; then PY="$c"; break; fi
  done
fi
if [[ -z "$PY" ]] || ! "$PY" -m pip --version >/dev/null 2>&1; then
  echo "install-cuda-toolchain: need python3 with pip (apt-get install -y python3-pip)" >&2
  exit 1
fi

echo "installing ${PINS[*]} into $DEST" >&2
TMP="$DEST.tmp.$$"
rm -rf "$TMP"
mkdir -p "$TMP"
trap 'rm -rf "$TMP"' EXIT
# --no-deps + explicit full pin list: the exact set, nothing newer pulled in.
PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --quiet --disable-pip-version-check --no-input --no-deps \
  --no-compile --target "$TMP" "${PINS[@]}" >&2
chmod +x "$TMP"/nvidia/cu13/bin/* 2>/dev/null || true
if [[ ! -x "$TMP/nvidia/cu13/bin/nvcc" || ! -x "$TMP/nvidia/cu13/bin/ptxas" ]]; then
  echo "install-cuda-toolchain: nvcc/ptxas missing after install (layout changed?)" >&2
  ls -R "$TMP" | head -50 >&2
  exit 1
fi
# pip --target installs each package's files under nvidia/cu13/; nvcc finds cicc and
# libnvvm relative to its own bin/ via nvcc.profile, so the tree is usable in place.
rm -rf "$DEST"
mv "$TMP" "$DEST"
trap - EXIT
printf '%s\n' "${PINS[@]}" > "$STAMP"
# build.rs only watches the stamp once it exists: touch build.rs so the next cargo build
# reruns it and compiles the kernels.
touch "$ROOT/build.rs" 2>/dev/null || true
"$NVCC" --version | tail -2 >&2
echo "$NVCC"

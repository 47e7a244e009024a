#!/usr/bin/env bash
# Regenerate src/cuda/params.rs from kernels/params.h with bindgen.
#   bash scripts/gen-bindings.sh          # rewrite src/cuda/params.rs
#   bash scripts/gen-bindings.sh --check  # exit 1 if the committed file is stale (CI)
# Needs libclang (apt-get install -y libclang-dev) and bindgen-cli
# (cargo install bindgen-cli --locked --version 0.73.2).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/src/cuda/params.rs"
BINDGEN="${BINDGEN:-bindgen}"
if ! command -v "$BINDGEN" >/dev/null 2>&1; then
  echo "gen-bindings: bindgen not found; cargo install bindgen-cli --locked" >&2
  exit 2
fi
TMP="$(mktemp)"
trap 'rm -f "$TMP"' EXIT
{
  echo "//! Kernel parameter structs, generated from kernels/params.h by scripts/gen-bindings.sh."
  echo "//! Do not edit: change params.h and regenerate (CI fails on a stale copy)."
  echo
  "$BINDGEN" "$ROOT/kernels/params.h" \
    --allowlist-type 'Go.*' --allowlist-var 'GO_.*' \
    --no-doc-comments \
    --with-derive-default --with-derive-eq --with-derive-hash --no-prepend-enum-name \
    --rust-target 1.80 \
    -- -x c -std=c11
} > "$TMP"
if [[ "${1:-}" == "--check" ]]; then
  if ! diff -u "$OUT" "$TMP"; then
    echo "gen-bindings: src/cuda/params.rs is stale; run bash scripts/gen-bindings.sh" >&2
    exit 1
  fi
  echo "src/cuda/params.rs is up to date"
else
  cp "$TMP" "$OUT"
  echo "wrote $OUT"
fi

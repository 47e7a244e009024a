#!/usr/bin/env bash
# Checks the workspace's declared MSRV (`rust-version` of gradops and gradops-cli).
#   1. Metadata (fast, offline once the index is fetched): every package the workspace
#      resolves to on this platform declares a rust_version <= the MSRV, or none.
#   2. The compiler: with that exact toolchain (installed through rustup when missing),
#      `cargo check` of every target of both packages. This is what catches language and
#      std features newer than the MSRV in our own code (the metadata cannot), e.g. the
#      avx512 target features stabilised in 1.89.
# Without rustup, or when the toolchain cannot be fetched, only step 1 runs and the script
# says so (exit 0; CHECK_MSRV_REQUIRE_TOOLCHAIN=1 makes that a failure).
set -euo pipefail
cd "$(dirname "$0")/.."

meta="$(mktemp)"
trap 'rm -f "$meta"' EXIT
cargo metadata --format-version 1 --locked --filter-platform "$(rustc -vV | sed -n 's/^host: //p')" >"$meta"
msrv="$(python3 - "$meta" <<'EOF'
import json, sys

def key(v):
    return tuple(int(x) for x in (v.split(".") + ["0", "0"])[:3])

m = json.load(open(sys.argv[1]))
pkgs = {p["id"]: p for p in m["packages"]}
members = [pkgs[i] for i in m["workspace_members"]]
declared = {p["name"]: p.get("rust_version") for p in members}
if any(v is None for v in declared.values()) or len(set(declared.values())) != 1:
    sys.exit(f"check-msrv: the workspace packages must declare one rust-version: {declared}")
msrv = next(iter(declared.values()))
bad = []
for node in m["resolve"]["nodes"]:
    p = pkgs[node["id"]]
    rv = p.get("rust_version")
    if rv and key(rv) > key(msrv):
        bad.append(f"{p['name']} {p['version']} needs rust {rv}")
if bad:
    sys.exit("check-msrv: dependencies newer than the MSRV " + msrv + ":\n  " + "\n  ".join(sorted(bad)))
print(msrv)
EOF
)"
echo "check-msrv: rust-version $msrv; every resolved package declares <= $msrv (or nothing)"

if ! command -v rustup >/dev/null 2>&1 ||
  ! { rustup run "$msrv" rustc --version >/dev/null 2>&1 ||
    rustup toolchain install "$msrv" --profile minimal >/dev/null 2>&1; }; then
  echo "check-msrv: toolchain $msrv not available: only the dependency metadata was checked"
  [[ "${CHECK_MSRV_REQUIRE_TOOLCHAIN:-0}" != 1 ]] || exit 1
  exit 0
fi
rustup run "$msrv" rustc --version
# The kernels are not needed to type-check: skip nvcc (a separate target dir keeps the
# default toolchain's build cache intact).
env -u GRADOPS_REQUIRE_CUDA GRADOPS_TOOLCHAIN_DIR=/nonexistent NVCC= CUDA_HOME= CUDA_PATH= \
  CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}/msrv" \
  cargo "+$msrv" check --locked --workspace --all-targets --quiet
echo "check-msrv: cargo +$msrv check --workspace --all-targets passed"

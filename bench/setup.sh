#!/usr/bin/env bash
# Create bench/.venv and install the peer frameworks (PyTorch, TensorFlow CPU) from PyPI.
# Idempotent: reuses an existing venv and skips the install when the pins are already met.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
py="${PYTHON:-python3.11}"
command -v "$py" >/dev/null 2>&1 || py=python3
if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
if "$venv/bin/python" - "$here/requirements.txt" <<'PY' 2>/dev/null; then
import sys, importlib.metadata as md
ok = True
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, _, ver = line.partition("==")
    try:
        have = md.version(name)
    except md.PackageNotFoundError:
        ok = False
        continue
    if ver and have != ver:
        ok = False
sys.exit(0 if ok else 1)
PY
    echo "bench/.venv already satisfies bench/requirements.txt"
else
    "$venv/bin/python" -m pip install --upgrade pip
    "$venv/bin/python" -m pip install -r "$here/requirements.txt"
fi
"$venv/bin/python" - <<'PY'
import importlib.metadata as md
for n in ("torch", "tensorflow-cpu", "numpy"):
    print(f"{n}=={md.version(n)}")
PY

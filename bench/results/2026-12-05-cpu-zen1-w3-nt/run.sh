#!/usr/bin/env bash
# The runs of README.md. BASE: `cargo build --release -p gradops-cli` at commit 30fabb8 (CPU
# code as at 9f6e989); NT: the same with nt-stores.diff applied. Run from the repository root.
set -x
BASE="${BASE:-/tmp/gradops-base}" NT="${NT:-/tmp/gradops-nt}"
PY=bench/.venv/bin/python
O="$(dirname "$0")"
$PY bench/paired.py --gradops "$NT" --peer gradops --baseline "$BASE" --layout nchw --workloads W3,W1,W2 --threads 1 --pairs 30 --json "$O/ab-1t.json"
$PY bench/paired.py --gradops "$NT" --peer gradops --baseline "$BASE" --layout nchw --workloads W3,W1,W2 --threads 2 --pairs 30 --json "$O/ab-2t.json"
$PY bench/paired.py --gradops "$NT" --peer tensorflow-onednn --layout nchw --workloads W3,W1 --threads 1 --pairs 30 --json "$O/tf-1t.json"
$PY bench/paired.py --gradops "$NT" --peer tensorflow-onednn --layout nchw --workloads W3,W1 --threads 2 --pairs 30 --json "$O/tf-2t.json"

#!/usr/bin/env bash
# GPU run 3 (2026-11-28): the committed defaults (the tall tile for 16-bit NHWC conv2d, the
# forward, as well as for backprop_input): the GPU suite, then every f16 row of
# `gradops bench --device cuda` (NCHW and NHWC) beside cuDNN in the same run
# (scripts/gpu-session.sh, steps tests,bench,peers).
# Usage: run3.sh BUNDLE OUT   (BUNDLE: the unpacked target/gpu-carry/bundle.tar.xz)
B="$1" O="$2"; W=/tmp/run3; rm -rf "$W"; mkdir -p "$W" "$O"
DTYPES=f16 LAYOUTS=nchw,nhwc REPS=50 PROP_CASES=100 PROP_LIMIT=20 SIMT=0 GENERAL=0 \
  STEPS=tests,bench,peers timeout 400 bash scripts/gpu-session.sh "$B" "$W"
cp "$W/log.txt" "$O/log.txt"; cp "$W/peers.json" "$O/" 2>/dev/null
tar cf "$O/json.tar" -C "$W" $(cd "$W" && ls gradops-*.json)
sed -n '/gradops vs PyTorch, same card/,/^=== peers/p' "$W/log.txt" | grep -E "^(W4|W5|W4f|W5f|W7|W8) " | cut -c1-110
grep -hE "rc=" "$W/log.txt" | grep -v "rc=0 "; grep -hE "rc=" "$W/log.txt" | wc -l

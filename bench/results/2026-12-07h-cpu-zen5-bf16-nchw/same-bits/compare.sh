#!/usr/bin/env bash
# Same bits, two gradops binaries, on random bf16 conv cases: 32 input-gradient and forward
# cases (gen_input_forward.py) and 20 filter-gradient cases (gen_filter.py): both layouts,
# strides 1 and 2, dilation, groups, explicit padding, odd channel counts, infinities and NaNs.
# Usage: bash compare.sh OLD_BIN NEW_BIN [WORKDIR]; prints one line a differing case and a count.
set -euo pipefail
old=$1 new=$2 dir=${3:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-$here/../../../.venv/bin/python}
"$py" "$here/gen_input_forward.py" out.npy "$dir/input_forward" >/dev/null
"$py" "$here/gen_filter.py" out.npy "$dir/filter" >/dev/null
same=0 diff=0
for c in "$dir"/input_forward/c* "$dir"/filter/c*; do
  if (cd "$c" && "$old" run case.json >/dev/null && mv out.npy old.npy &&
      "$new" run case.json >/dev/null && cmp -s out.npy old.npy); then
    same=$((same + 1))
  else
    diff=$((diff + 1)); echo "differs: $c"
  fi
done
echo "same bits: $same cases; differing: $diff"
[ "$diff" -eq 0 ]

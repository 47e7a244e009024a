#!/bin/bash
# usage: ab.sh ROUNDS REPS FILTER BIN1 BIN2 ...   (env THREADS)
R=$1; N=$2; F=$3; shift 3
for r in $(seq $R); do for b in "$@"; do
  RAYON_NUM_THREADS=${THREADS:-2} /tmp/it_$b $N $F | sed "s/^/$b /"
done; done | awk '{k=$1" "$2" "$3; med[k]=med[k]" "$5; mn[k]=mn[k]" "$8} END {for (k in med) print k, "med:" med[k], " min:" mn[k]}' | sort -k2,3

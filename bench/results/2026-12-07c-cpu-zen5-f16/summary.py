"""Min-of-rounds summary of `ab-*.txt` (lines '== BIN LAYOUT round R', then 'W dtype median min')."""
import collections, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    if line.startswith('=='):
        _, b, L, _, r = line.split(); cur = (b, L); continue
    w, dt, med, mn = line.split()
    d[(cur[1], w, cur[0])].append(float(mn))
old, new = sys.argv[2], sys.argv[3]
for sfx in ['', '-avx2']:
    for L, w in sorted(set((k[0], k[1]) for k in d)):
        if (L, w, old + sfx) not in d: continue
        o = min(d[(L, w, old + sfx)]); n = min(d[(L, w, new + sfx)])
        print(f"{'avx512' if not sfx else 'avx2'} {L} {w:4} old {o:7.3f} new {n:7.3f}  {o/n:5.2f}x")

# For samples containing argv[1], count (leaf, first frame matching argv[2]-ish parent) pairs: leaf + next 3 frames.
import sys, collections
pat = sys.argv[1]; depth = int(sys.argv[2]) if len(sys.argv) > 2 else 3
c = collections.Counter(); n = 0; stack = []
def flush():
    global n
    if stack and any(pat in s for s in stack):
        fr = [ (s.split(None,1)[1] if len(s.split(None,1))>1 else s)[:70] for s in stack[:depth]]
        c[" <- ".join(fr)] += 1; n += 1
for line in sys.stdin:
    s = line.strip()
    if not s:
        flush(); stack = []; continue
    stack.append(s)
flush()
for k, v in c.most_common(14):
    print(f"{100*v/n:5.1f}% {k}")

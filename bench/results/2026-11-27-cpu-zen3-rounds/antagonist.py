import numpy as np, time
a = np.ones(16 << 20, dtype=np.float32); b = np.empty_like(a)
end = time.time() + 600
while time.time() < end:
    np.copyto(b, a)

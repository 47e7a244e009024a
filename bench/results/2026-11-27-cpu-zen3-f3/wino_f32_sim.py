"""Simulated f32 error of Winograd F(m x m, 3x3) on `tests/reference.rs`' winograd_f32_cancellation
data (the input gradient: dy 256 channels of a periodic pattern, a near-constant filter, 64
outputs, 28x28, SAME), relative L2 against the f64 direct sum. Needs numpy.

1. Transforms exact (in f64, rounded once to f32), the products summed in f32: the choice of
   points. F(2x2) against F(3x3) at 0, 1, -1 and -1/2, 1/2, 2 or -2 (plus infinity), F(4x4).
2. F(3x3) at -1/2 with the input transform evaluated as `bt5_rows` does (winograd_nhwc.rs),
   in f32 or in f64, the filter and output transforms as the crate does them.

`python wino_f32_sim.py` (seconds). Printed on 2026-11-27:
   points       F(2x2) 1.6e-06; F(3x3) -1/2 3.8e-06; F(3x3) 1/2 1.2e-05; F(3x3) -2 3.9e-06; F(3x3) 2 9.3e-06; F(4x4) 1.7e-05
   input transform in f32 1.5e-05, in f64 3.8e-06
(the crate's measured values: F(2x2) 3.1e-6; F(3x3) 1.35e-5 with the f32 input transform,
3.3e-6 with the f64 one; F(4x4) 2.9e-5).
"""
from fractions import Fraction as Fr

import numpy as np

f32, f64 = np.float32, np.float64


def toom(m, pts):
    """A^T (m x n), G (n x 3), B^T (n x n) of F(m, 3) at the finite points `pts` and infinity,
    for the correlation y_i = sum_k g_k d_(i+k) = A^T [(G g) * (B^T d)]."""
    n = m + 2
    pts = [Fr(p) for p in pts]

    def mul(a, b):
        c = [Fr(0)] * (len(a) + len(b) - 1)
        for i, x in enumerate(a):
            for k, y in enumerate(b):
                c[i + k] += x * y
        return c

    at = [[pts[j] ** i if j < n - 1 else Fr(int(i == m - 1)) for j in range(n)] for i in range(m)]
    g = []
    for j in range(n - 1):
        den = Fr(1)
        for k in range(n - 1):
            if k != j:
                den *= pts[j] - pts[k]
        g.append([pts[j] ** k / den for k in range(3)])
    g.append([Fr(0), Fr(0), Fr(1)])
    bt = []
    for j in range(n - 1):
        q = [Fr(1)]
        for k in range(n - 1):
            if k != j:
                q = mul(q, [-pts[k], Fr(1)])
        bt.append(q + [Fr(0)] * (n - len(q)))
    full = [Fr(1)]
    for p in pts:
        full = mul(full, [-p, Fr(1)])
    bt.append(full)
    as_f = lambda a: np.array([[float(x) for x in r] for r in a])
    return as_f(at), as_f(g), as_f(bt)


def data():
    ci, co, h = 64, 256, 28
    pattern = lambda i: f32(((i * 7919) % 101) / 50.0 - 1.0)
    dy = np.array([pattern(i) for i in range(co * h * h)], f32).reshape(co, h, h)
    k = np.arange(9 * ci * co)
    filt = (f32(0.1) + f32(1e-5) * ((k * 31) % 17).astype(f32)).reshape(3, 3, ci, co)
    return dy, filt[::-1, ::-1]  # the input gradient correlates with the flipped filter


def direct(dy, filt):
    co, h, w = dy.shape
    pad = np.zeros((co, h + 2, w + 2))
    pad[:, 1:-1, 1:-1] = dy
    return sum(np.einsum("kc,chw->khw", filt[a, b], pad[:, a:a + h, b:b + w]) for a in range(3) for b in range(3))


def winograd(dy, filt, m, mats, input_transform=None):
    at, g, bt = mats
    n = m + 2
    co, h, w = dy.shape
    t = -(-h // m)
    pad = np.zeros((co, t * m + 2, t * m + 2), f32)
    pad[:, 1:h + 1, 1:w + 1] = dy
    u = np.einsum("ia,jb,abcd->ijcd", g, g, filt.astype(f64)).astype(f32)
    p = np.lib.stride_tricks.sliding_window_view(pad, (n, n), axis=(1, 2))[:, ::m, ::m]
    if input_transform is None:
        v = np.einsum("ia,ctuab,jb->ijctu", bt, p.astype(f64), bt).astype(f32)
    else:
        v = input_transform(p)
    mm = np.zeros((n, n, u.shape[2], t, t), f32)
    for c in range(co):  # products summed in channel order, one rounding each (as an FMA)
        mm = (mm.astype(f64) + u[:, :, :, c, None, None].astype(f64) * v[:, :, None, c].astype(f64)).astype(f32)
    y = np.einsum("ai,ijktu,bj->ktuab", at.astype(f32), mm, at.astype(f32))
    return y.transpose(0, 1, 3, 2, 4).reshape(-1, t * m, t * m)[:, :h, :w]


def bt5_input(p, wide):
    """`bt_tile`'s two passes of `bt5_rows` (columns, then rows) in f64 or in f32."""
    ty = f64 if wide else f32

    def rows(x0, x1, x2, x3, x4):
        a = ty(x1 - x3)
        return [ty(ty(x0 - x2) + ty(a + a)), ty(a + ty(3 * ty(x2 + x3))), ty(a + ty(x2 - x3)), a,
                ty(ty(ty(x4 - x2) + ty(x4 - x2)) - a)]

    p = p.astype(ty)
    cols = [rows(*[p[..., r, s] for r in range(5)]) for s in range(5)]  # cols[s][r]
    v = [rows(*[cols[s][r] for s in range(5)]) for r in range(5)]  # v[r][s]
    return np.array(v).astype(f32)


def main():
    dy, filt = data()
    ref = direct(dy.astype(f64), filt.astype(f64))
    rel = lambda y: np.sqrt(((y - ref) ** 2).sum() / (ref ** 2).sum())
    out = [f"F(2x2) {rel(winograd(dy, filt, 2, toom(2, [0, 1, -1]))):.1e}"]
    for name, q in [("-1/2", -0.5), ("1/2", 0.5), ("-2", -2), ("2", 2)]:
        out.append(f"F(3x3) {name} {rel(winograd(dy, filt, 3, toom(3, [0, 1, -1, q]))):.1e}")
    out.append(f"F(4x4) {rel(winograd(dy, filt, 4, toom(4, [0, 1, -1, 2, -2]))):.1e}")
    print("points      ", "; ".join(out))
    # The crate's scaled matrices (winograd_nhwc.rs): same products, small-integer B^T and A^T.
    bt = np.array([[1, 2, -1, -2, 0], [0, 1, 3, 2, 0], [0, 1, 1, -2, 0], [0, 1, 0, -1, 0], [0, -1, -2, 1, 2]], f64)
    g = np.array([[1, 0, 0], [1 / 6, 1 / 6, 1 / 6], [0.5, -0.5, 0.5], [-4 / 6, 2 / 6, -1 / 6], [0, 0, 0.5]])
    at = np.array([[1, 1, 1, 4, 0], [0, 1, -1, -2, 0], [0, 1, 1, 1, 1]], f64)
    e32 = rel(winograd(dy, filt, 3, (at, g, bt), lambda p: bt5_input(p, False)))
    e64 = rel(winograd(dy, filt, 3, (at, g, bt), lambda p: bt5_input(p, True)))
    print(f"input transform in f32 {e32:.1e}, in f64 {e64:.1e}")


if __name__ == "__main__":
    main()

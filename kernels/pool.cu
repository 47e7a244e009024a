// Max-pool family: forward (y + argmax), grad with argmax recomputed (TF rule), and
// grad from stored argmax. Both grads are gathers: one thread per dx element visits,
// in row-major window order, every window that can contain it and sums the dy of the
// windows whose argmax is this cell. No atomics, each output written once.
//
// TF argmax rule: padded cells are never candidates; the first in-bounds cell in
// row-major order is the initial candidate; a later cell replaces it only if strictly
// greater (so a NaN first keeps it, a NaN later never wins).
#include "common.cuh"

// Argmax of window (n, c, oy, ox) as a flat index into x; -1 when the window has no
// in-bounds cell. *best receives the max value (lowest() for an empty window).
template <typename T>
GO_DEV go_i64 pool_window_argmax(const GoPoolParams& p, const T* __restrict__ x,
                                 go_i64 n, go_i64 c, go_i64 oy, go_i64 ox, T* best) {
    typedef typename GoAcc<T>::type A;
    const go_i64 y0 = oy * p.sh - p.pad_top, x0 = ox * p.sw - p.pad_left;
    const go_i64 ya = go_max(y0, 0), yb = go_min(y0 + p.kh, p.hi);
    const go_i64 xa = go_max(x0, 0), xb = go_min(x0 + p.kw, p.wi);
    go_i64 arg = -1;
    A bv = A(0);
    T bt = go_lowest<T>();
    for (go_i64 h = ya; h < yb; ++h) {
        for (go_i64 w = xa; w < xb; ++w) {
            const go_i64 idx = go_index(p.layout, n, c, h, w, p.c, p.hi, p.wi);
            const T t = go_ldg(x + idx);
            const A v = go_to_acc(t);
            if (arg < 0 || v > bv) { arg = idx; bv = v; bt = t; }
        }
    }
    *best = bt;
    return arg;
}

template <typename T>
GO_DEV void max_pool_forward_body(const GoPoolParams& p) {
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    T* __restrict__ y = reinterpret_cast<T*>(p.y);
    long long* __restrict__ am = reinterpret_cast<long long*>(p.argmax);
    const go_i64 total = p.n * p.c * p.ho * p.wo;
    for (go_i64 i = go_tid_x(); i < total; i += go_stride_x()) {
        go_i64 n, c, oy, ox;
        go_unflatten(p.layout, i, p.c, p.ho, p.wo, &n, &c, &oy, &ox);
        T best;
        const go_i64 arg = pool_window_argmax<T>(p, x, n, c, oy, ox, &best);
        y[i] = best;
        am[i] = arg;
    }
}

// Windows along one axis that contain input coordinate h: [*lo, *hi).
GO_DEV void pool_windows_containing(go_i64 h, go_i64 pad, go_i64 k, go_i64 s, go_i64 out,
                                    go_i64* lo, go_i64* hi) {
    const go_i64 hp = h + pad;  // >= 0
    *lo = hp < k ? 0 : (hp - k) / s + 1;
    *hi = go_min(hp / s + 1, out);
}

template <typename T, bool kStored>
GO_DEV void max_pool_grad_impl(const GoPoolParams& p) {
    typedef typename GoAcc<T>::type A;
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    const T* __restrict__ dy = reinterpret_cast<const T*>(p.dy);
    const long long* __restrict__ am = reinterpret_cast<const long long*>(p.argmax);
    T* __restrict__ dx = reinterpret_cast<T*>(p.dx);
    const go_i64 total = p.n * p.c * p.hi * p.wi;
    for (go_i64 i = go_tid_x(); i < total; i += go_stride_x()) {
        go_i64 n, c, h, w;
        go_unflatten(p.layout, i, p.c, p.hi, p.wi, &n, &c, &h, &w);
        go_i64 oy0, oy1, ox0, ox1;
        pool_windows_containing(h, p.pad_top, p.kh, p.sh, p.ho, &oy0, &oy1);
        pool_windows_containing(w, p.pad_left, p.kw, p.sw, p.wo, &ox0, &ox1);
        A acc = A(0);
        for (go_i64 oy = oy0; oy < oy1; ++oy) {
            for (go_i64 ox = ox0; ox < ox1; ++ox) {
                const go_i64 o = go_index(p.layout, n, c, oy, ox, p.c, p.ho, p.wo);
                go_i64 arg;
                if (kStored) {
                    arg = go_ldg(am + o);
                } else {
                    T best;
                    arg = pool_window_argmax<T>(p, x, n, c, oy, ox, &best);
                }
                if (arg == i) acc += go_to_acc(go_ldg(dy + o));
            }
        }
        dx[i] = go_from_acc<T>(acc);
    }
}

template <typename T> GO_DEV void max_pool_grad_body(const GoPoolParams& p) { max_pool_grad_impl<T, false>(p); }
template <typename T> GO_DEV void max_pool_grad_argmax_body(const GoPoolParams& p) { max_pool_grad_impl<T, true>(p); }

GO_INSTANTIATE(max_pool_forward, GoPoolParams, max_pool_forward_body)
GO_INSTANTIATE(max_pool_grad, GoPoolParams, max_pool_grad_body)
GO_INSTANTIATE(max_pool_grad_argmax, GoPoolParams, max_pool_grad_argmax_body)

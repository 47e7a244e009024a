// Max-pool family: forward (y + argmax), grad with argmax recomputed (TF rule), and
// grad from stored argmax. Both grads are gathers: each dx element visits, in row-major
// window order, every window that can contain it and sums the dy of the windows whose
// argmax is this cell. No atomics, each output written once. Kernels (the host chooses,
// ops::pool_kernel): the generic ones below (one thread per output, 64-bit indexing),
// the tiled ones (shared-memory staging per tile; _k3_ twins unrolled for windows up to
// 3x3) and a direct forward for windows up to 3x3.
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
        if (am) am[i] = arg;
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

// ---- tiled kernels -----------------------------------------------------------------
// Block level: one tile = tile_h x tile_w x tile_c (rows, columns, channels) of one
// image: of dx for the grads, of y for the forward. Staged in shared memory, channels
// innermost: the x cells the tile's windows cover (forward, recompute grad), then per
// window its argmax as a flat index into x (found once per tile) and its dy. The grads
// then gather: each dx element of the tile visits the windows containing it in
// row-major order and sums the dy of those whose argmax is this element, the same sum
// in the same order as max_pool_grad_impl. Index math inside an image is 32-bit.

enum { GO_POOL_FORWARD = 0, GO_POOL_GRAD = 1, GO_POOL_GRAD_STORED = 2 };

// Windows along one axis that contain a cell of [d0, d1), and the cells they cover.
struct GoPoolSpan {
    int w0, nw;  // windows [w0, w0 + nw)
    int x0, nx;  // input cells [x0, x0 + nx), clipped to the image
};

GO_DEV GoPoolSpan pool_span_of_cells(int d0, int d1, int pad, int k, int s, int out, int in) {
    GoPoolSpan r;
    const int lo = d0 + pad < k ? 0 : (d0 + pad - k) / s + 1;
    const int hi = (int)go_min((d1 - 1 + pad) / s + 1, out);
    r.w0 = lo;
    r.nw = hi > lo ? hi - lo : 0;
    r.x0 = (int)go_max((go_i64)lo * s - pad, 0);
    const int x1 = (int)go_min((go_i64)(hi - 1) * s - pad + k, in);
    r.nx = r.nw > 0 && x1 > r.x0 ? x1 - r.x0 : 0;
    return r;
}

// Windows [w0, w1) along one axis and the input cells they cover.
GO_DEV GoPoolSpan pool_span_of_windows(int w0, int w1, int pad, int k, int s, int in) {
    GoPoolSpan r;
    r.w0 = w0;
    r.nw = w1 - w0;
    r.x0 = (int)go_max((go_i64)w0 * s - pad, 0);
    const int x1 = (int)go_min((go_i64)(w1 - 1) * s - pad + k, in);
    r.nx = x1 > r.x0 ? x1 - r.x0 : 0;
    return r;
}

// TF-rule argmax of window (oy, ox), channel ch, over the staged cells xs
// ([ys.nx][xsp.nx][tc]); returns the cell as (row, col) in image coordinates through
// *h, *w, or false for a window with no in-bounds cell. *best gets the value.
// kK > 0: the window is at most kK x kK, and the scan is unrolled (predicated) over it.
template <typename T, int kK>
GO_DEV bool pool_tile_argmax(const T* xs, const GoPoolSpan& ys, const GoPoolSpan& xsp, int tc,
                             int ch, int oy, int ox, int kh, int kw, int sh, int sw, int pt,
                             int pl, int* h, int* w, T* best) {
    typedef typename GoAcc<T>::type A;
    const int y0 = oy * sh - pt, x0 = ox * sw - pl;
    const int ya = y0 > ys.x0 ? y0 : ys.x0, yb = (int)go_min(y0 + kh, ys.x0 + ys.nx);
    const int xa = x0 > xsp.x0 ? x0 : xsp.x0, xb = (int)go_min(x0 + kw, xsp.x0 + xsp.nx);
    bool found = false;
    A bv = A(0);
    T bt = go_lowest<T>();
    auto visit = [&](int yy, int xx) {
        const T t = xs[((yy - ys.x0) * xsp.nx + (xx - xsp.x0)) * tc + ch];
        const A v = go_to_acc(t);
        if (!found || v > bv) { found = true; bv = v; bt = t; *h = yy; *w = xx; }
    };
    if constexpr (kK > 0) {
#pragma unroll
        for (int u = 0; u < kK; ++u)
#pragma unroll
            for (int v = 0; v < kK; ++v)
                if (ya + u < yb && xa + v < xb) visit(ya + u, xa + v);
    } else {
        for (int yy = ya; yy < yb; ++yy)
            for (int xx = xa; xx < xb; ++xx) visit(yy, xx);
    }
    *best = bt;
    return found;
}

// Walks e = e0, e0 + step, ... over a [.][nb][nc] index space as (a, b, c), with the
// divisions done once up front instead of per element.
struct GoWalk3 {
    int a, b, c, da, db, dc, nb, nc;
    GO_DEV GoWalk3(int e0, int step, int nb_, int nc_) : nb(nb_), nc(nc_) {
        // Unsigned division (cheaper), and none at all over channels for NCHW (nc == 1).
        const unsigned ue = (unsigned)e0, us = (unsigned)step, unb = (unsigned)nb;
        unsigned t = ue, u = us;
        c = 0;
        dc = 0;
        if (nc != 1) {
            t = ue / (unsigned)nc;
            c = (int)(ue - t * (unsigned)nc);
            u = us / (unsigned)nc;
            dc = (int)(us - u * (unsigned)nc);
        }
        a = (int)(t / unb);
        b = (int)(t - (unsigned)a * unb);
        da = (int)(u / unb);
        db = (int)(u - (unsigned)da * unb);
    }
    GO_DEV void next() {
        c += dc;
        int carry = c >= nc ? 1 : 0;
        c -= carry * nc;
        b += db + carry;
        carry = b >= nb ? 1 : 0;
        b -= carry * nb;
        a += da + carry;
    }
};

GO_DEV int go_align4(int bytes) { return (bytes + 3) & ~3; }

// kK > 0: windows of at most kK x kK (so at most kK windows per axis contain a cell, the
// stride being >= 1): the window scans and the gather loops are unrolled and predicated.
template <typename T, int kMode, int kK>
GO_DEV void max_pool_tile_impl(const GoPoolParams& p) {
    typedef typename GoAcc<T>::type A;
    __shared__ double smem[GO_POOL_TILE_SMEM / sizeof(double)];
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    const T* __restrict__ dy = reinterpret_cast<const T*>(p.dy);
    T* __restrict__ y = reinterpret_cast<T*>(p.y);
    T* __restrict__ dx = reinterpret_cast<T*>(p.dx);
    long long* __restrict__ am = reinterpret_cast<long long*>(p.argmax);

    const bool nchw = p.layout == GO_LAYOUT_NCHW;
    const int C = (int)p.c, hi = (int)p.hi, wi = (int)p.wi, ho = (int)p.ho, wo = (int)p.wo;
    const int kh = (int)p.kh, kw = (int)p.kw, sh = (int)p.sh, sw = (int)p.sw;
    const int pt = (int)p.pad_top, pl = (int)p.pad_left;
    // Strides inside one image (channel, row, column) of x and of y/dy.
    const int xs_c = nchw ? hi * wi : 1, xs_h = nchw ? wi : wi * C, xs_w = nchw ? 1 : C;
    const int ys_c = nchw ? ho * wo : 1, ys_h = nchw ? wo : wo * C, ys_w = nchw ? 1 : C;
    const int x_image = C * hi * wi;
    const go_i64 y_image = (go_i64)C * ho * wo;

    const int th = p.tile_h, tw = p.tile_w, tc = p.tile_c;
    const int rows = kMode == GO_POOL_FORWARD ? ho : hi;
    const int cols = kMode == GO_POOL_FORWARD ? wo : wi;
    const int tiles_h = (rows + th - 1) / th, tiles_w = (cols + tw - 1) / tw;
    const int tiles_c = (C + tc - 1) / tc;
    const go_i64 tiles = p.n * tiles_c * tiles_h * tiles_w;
    const int tid = (int)threadIdx.x, nthreads = (int)blockDim.x;
    unsigned char* sbytes = reinterpret_cast<unsigned char*>(smem);

    const bool narrow = tiles <= 0xffffffffLL;  // 32-bit tile arithmetic (the usual case)
    for (go_i64 t = blockIdx.x; t < tiles; t += gridDim.x) {
        int tx, ty, tcz;
        go_i64 n;
        if (narrow) {
            const unsigned ut = (unsigned)t, q1 = ut / (unsigned)tiles_w, q2 = q1 / (unsigned)tiles_h;
            tx = (int)(ut - q1 * (unsigned)tiles_w);
            ty = (int)(q1 - q2 * (unsigned)tiles_h);
            const unsigned q3 = q2 / (unsigned)tiles_c;
            tcz = (int)(q2 - q3 * (unsigned)tiles_c);
            n = q3;
        } else {
            tx = (int)(t % tiles_w);
            go_i64 q = t / tiles_w;
            ty = (int)(q % tiles_h);
            q /= tiles_h;
            tcz = (int)(q % tiles_c);
            n = q / tiles_c;
        }
        const int r0 = ty * th, r1 = (int)go_min(r0 + th, rows);
        const int q0 = tx * tw, q1 = (int)go_min(q0 + tw, cols);
        const int c0 = tcz * tc, nc = (int)go_min(tc, C - c0);
        const int nr = r1 - r0, ncol = q1 - q0;
        const go_i64 xb = n * (go_i64)x_image, yb = n * y_image;
        const T* __restrict__ xn = x + xb;

        GoPoolSpan ys, xsp;
        if (kMode == GO_POOL_FORWARD) {
            ys = pool_span_of_windows(r0, r1, pt, kh, sh, hi);
            xsp = pool_span_of_windows(q0, q1, pl, kw, sw, wi);
        } else {
            ys = pool_span_of_cells(r0, r1, pt, kh, sh, ho, hi);
            xsp = pool_span_of_cells(q0, q1, pl, kw, sw, wo, wi);
        }
        // Shared memory: dy of the windows (Acc), the staged x cells (T), each window's
        // argmax as an offset inside the image (int, -1: none), and per tile row and
        // column the range of windows containing it (int, relative to the span).
        const int nwin = kMode == GO_POOL_FORWARD ? 0 : ys.nw * xsp.nw * nc;
        const int ncell = kMode == GO_POOL_GRAD_STORED ? 0 : ys.nx * xsp.nx * nc;
        A* dy_s = reinterpret_cast<A*>(sbytes);
        T* x_s = reinterpret_cast<T*>(sbytes + nwin * (int)sizeof(A));
        int* am_s = reinterpret_cast<int*>(sbytes + go_align4(nwin * (int)sizeof(A) + ncell * (int)sizeof(T)));
        int* wr = am_s + nwin;  // [nr][2]
        int* wc = wr + 2 * nr;  // [ncol][2]

        // Stage the x cells of the tile's windows (channels innermost).
        if (kMode != GO_POOL_GRAD_STORED) {
            int e = tid;
#pragma unroll 2
            for (GoWalk3 it(tid, nthreads, xsp.nx, nc); it.a < ys.nx; it.next(), e += nthreads)
                x_s[e] = go_ldg(xn + (c0 + it.c) * xs_c + (ys.x0 + it.a) * xs_h + (xsp.x0 + it.b) * xs_w);
        }
        if (kMode != GO_POOL_FORWARD) {
            // Windows containing each tile row / column.
            for (int e = tid; e < nr + ncol; e += nthreads) {
                const bool is_row = e < nr;
                const int d = is_row ? r0 + e : q0 + e - nr;
                const int k = is_row ? kh : kw, s = is_row ? sh : sw;
                const int dp = d + (is_row ? pt : pl);
                const int lo = dp < k ? 0 : (dp - k) / s + 1;
                const int hi_w = (int)go_min(dp / s + 1, is_row ? ho : wo);
                int* out = is_row ? wr + 2 * e : wc + 2 * (e - nr);
                out[0] = lo - (is_row ? ys.w0 : xsp.w0);
                out[1] = hi_w - (is_row ? ys.w0 : xsp.w0);
            }
        }
        if (kMode != GO_POOL_GRAD_STORED) __syncthreads();

        if (kMode == GO_POOL_FORWARD) {
            // Each output of the tile: its window's max and argmax from the staged cells.
            for (GoWalk3 it(tid, nthreads, ncol, nc); it.a < nr; it.next()) {
                const int oy = r0 + it.a, ox = q0 + it.b, ch = it.c;
                int h = 0, w = 0;
                T best;
                const bool found = pool_tile_argmax<T, kK>(x_s, ys, xsp, nc, ch, oy, ox, kh, kw, sh, sw,
                                                       pt, pl, &h, &w, &best);
                const go_i64 o = yb + (c0 + ch) * ys_c + oy * ys_h + ox * ys_w;
                y[o] = best;
                if (am) am[o] = found ? xb + (c0 + ch) * xs_c + h * xs_h + w * xs_w : -1;
            }
        } else {
            // Each window of the tile: its dy and its argmax (stored or recomputed).
            int e = tid;
            for (GoWalk3 it(tid, nthreads, xsp.nw, nc); it.a < ys.nw; it.next(), e += nthreads) {
                const int oy = ys.w0 + it.a, ox = xsp.w0 + it.b, ch = it.c;
                const go_i64 o = yb + (c0 + ch) * ys_c + oy * ys_h + ox * ys_w;
                dy_s[e] = go_to_acc(go_ldg(dy + o));
                if (kMode == GO_POOL_GRAD_STORED) {
                    // Stored flat index -> offset in this image; anything else routes nothing.
                    const go_i64 local = go_ldg(am + o) - xb;
                    am_s[e] = local >= 0 && local < x_image ? (int)local : -1;
                } else {
                    int h = 0, w = 0;
                    T best;
                    const bool found = pool_tile_argmax<T, kK>(x_s, ys, xsp, nc, ch, oy, ox, kh, kw, sh,
                                                           sw, pt, pl, &h, &w, &best);
                    am_s[e] = found ? (c0 + ch) * xs_c + h * xs_h + w * xs_w : -1;
                }
            }
            __syncthreads();
            // Each dx element of the tile: the windows containing it, in row-major order.
            T* __restrict__ dxn = dx + xb;
            for (GoWalk3 it(tid, nthreads, ncol, nc); it.a < nr; it.next()) {
                const int h = r0 + it.a, w = q0 + it.b, ch = it.c;
                const int oy0 = wr[2 * it.a], oy1 = wr[2 * it.a + 1];
                const int ox0 = wc[2 * it.b], ox1 = wc[2 * it.b + 1];
                const int me = (c0 + ch) * xs_c + h * xs_h + w * xs_w;
                A acc = A(0);
                auto visit = [&](int oy, int ox) {
                    const int idx = (oy * xsp.nw + ox) * nc + ch;
                    if (am_s[idx] == me) acc += dy_s[idx];
                };
                if constexpr (kK > 0) {
#pragma unroll
                    for (int u = 0; u < kK; ++u)
#pragma unroll
                        for (int v = 0; v < kK; ++v)
                            if (oy0 + u < oy1 && ox0 + v < ox1) visit(oy0 + u, ox0 + v);
                } else {
                    for (int oy = oy0; oy < oy1; ++oy)
                        for (int ox = ox0; ox < ox1; ++ox) visit(oy, ox);
                }
                dxn[me] = go_from_acc<T>(acc);
            }
        }
        __syncthreads();
    }
}

template <typename T> GO_DEV void max_pool_tile_forward_body(const GoPoolParams& p) { max_pool_tile_impl<T, GO_POOL_FORWARD, 0>(p); }
template <typename T> GO_DEV void max_pool_tile_grad_body(const GoPoolParams& p) { max_pool_tile_impl<T, GO_POOL_GRAD, 0>(p); }
template <typename T> GO_DEV void max_pool_tile_grad_argmax_body(const GoPoolParams& p) { max_pool_tile_impl<T, GO_POOL_GRAD_STORED, 0>(p); }
// Windows of at most 3x3 (the common 3x3 and 2x2 pools), unrolled.
template <typename T> GO_DEV void max_pool_tile_k3_forward_body(const GoPoolParams& p) { max_pool_tile_impl<T, GO_POOL_FORWARD, 3>(p); }
template <typename T> GO_DEV void max_pool_tile_k3_grad_body(const GoPoolParams& p) { max_pool_tile_impl<T, GO_POOL_GRAD, 3>(p); }
template <typename T> GO_DEV void max_pool_tile_k3_grad_argmax_body(const GoPoolParams& p) { max_pool_tile_impl<T, GO_POOL_GRAD_STORED, 3>(p); }

GO_INSTANTIATE_STREAMING(max_pool_tile_forward, GoPoolParams, max_pool_tile_forward_body)
GO_INSTANTIATE_STREAMING(max_pool_tile_grad, GoPoolParams, max_pool_tile_grad_body)
GO_INSTANTIATE_STREAMING(max_pool_tile_grad_argmax, GoPoolParams, max_pool_tile_grad_argmax_body)
GO_INSTANTIATE_STREAMING(max_pool_tile_k3_forward, GoPoolParams, max_pool_tile_k3_forward_body)
GO_INSTANTIATE_STREAMING(max_pool_tile_k3_grad, GoPoolParams, max_pool_tile_k3_grad_body)
GO_INSTANTIATE_STREAMING(max_pool_tile_k3_grad_argmax, GoPoolParams, max_pool_tile_k3_grad_argmax_body)

// ---- direct forward for windows of at most 3x3 --------------------------------------
// One thread per output, row-blocked (go_row_lanes): grid.y over output rows (n*c*ho for
// NCHW, n*ho for NHWC), grid.x over a row's inner run (wo, or wo*c). The window's cells
// are read straight from x through the read-only cache (neighbouring windows share them
// there), unrolled and predicated over 3x3, with the TF rule; 32-bit in-image indexing.
template <typename T>
GO_DEV void max_pool_direct_k3_forward_body(const GoPoolParams& p) {
    typedef typename GoAcc<T>::type A;
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    T* __restrict__ y = reinterpret_cast<T*>(p.y);
    long long* __restrict__ am = reinterpret_cast<long long*>(p.argmax);
    const bool nchw = p.layout == GO_LAYOUT_NCHW;
    const int C = (int)p.c, hi = (int)p.hi, wi = (int)p.wi, ho = (int)p.ho, wo = (int)p.wo;
    const int kh = (int)p.kh, kw = (int)p.kw, sh = (int)p.sh, sw = (int)p.sw;
    const int pt = (int)p.pad_top, pl = (int)p.pad_left;
    const int cin = nchw ? 1 : C;
    const int inner = wo * cin;
    const uint32_t rows = (uint32_t)((nchw ? p.n * p.c : p.n) * p.ho);
    const int gx = go_row_lanes(inner);
    const int tx = (int)threadIdx.x % gx, ty = (int)threadIdx.x / gx;
    const uint32_t ny = blockDim.x / (uint32_t)gx;
    for (uint32_t r = blockIdx.y * ny + ty; r < rows; r += gridDim.y * ny) {
        // r = plane*ho + oy; a plane is (n, c) for NCHW, an image for NHWC.
        const uint32_t plane = r / (uint32_t)ho;
        const int oy = (int)(r - plane * (uint32_t)ho);
        const go_i64 xbase = (go_i64)plane * hi * wi * cin;
        const T* __restrict__ xp = x + xbase;
        const int y0 = oy * sh - pt;
        for (int k = (int)blockIdx.x * gx + tx; k < inner; k += (int)gridDim.x * gx) {
            const int ox = nchw ? k : k / C;
            const int c = k - ox * cin;
            const int x0 = ox * sw - pl;
            int bh = -1, bw = 0;
            A bv = A(0);
            T bt = go_lowest<T>();
#pragma unroll
            for (int u = 0; u < 3; ++u) {
                const int yy = y0 + u;
#pragma unroll
                for (int v = 0; v < 3; ++v) {
                    const int xx = x0 + v;
                    if (u < kh && v < kw && yy >= 0 && yy < hi && xx >= 0 && xx < wi) {
                        const T t = go_ldg(xp + (yy * wi + xx) * cin + c);
                        const A val = go_to_acc(t);
                        if (bh < 0 || val > bv) { bh = yy; bw = xx; bv = val; bt = t; }
                    }
                }
            }
            const go_i64 o = (go_i64)r * inner + k;
            y[o] = bt;
            if (am) am[o] = bh < 0 ? -1 : xbase + (go_i64)(bh * wi + bw) * cin + c;
        }
    }
}

GO_INSTANTIATE_STREAMING(max_pool_direct_k3_forward, GoPoolParams, max_pool_direct_k3_forward_body)

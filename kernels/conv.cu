// Conv family: conv2d_forward (direct, one thread per output) and
// conv2d_backprop_input (implicit GEMM of the transposed convolution, shared-memory
// tiles). The filter is HWIO [kh, kw, ci/groups, co] or OIHW [co, ci/groups, kh, kw]
// (p.filter_layout), read through per-axis strides. Accumulation in Acc, fixed order
// (ky, kx, co ascending), each output written once, no atomics.
#include "common.cuh"

// Element strides of the filter's four axes (ky, kx, c within the group, o).
struct GoFilterStrides {
    go_i64 ky, kx, c, o;
};

GO_DEV GoFilterStrides go_filter_strides(const GoConvParams& p) {
    const go_i64 cig = p.ci / p.groups;
    GoFilterStrides s;
    if (p.filter_layout == GO_FILTER_OIHW) {
        s.kx = 1; s.ky = p.kw; s.c = p.kh * p.kw; s.o = cig * p.kh * p.kw;
    } else {
        s.o = 1; s.c = p.co; s.kx = cig * p.co; s.ky = p.kw * cig * p.co;
    }
    return s;
}

// ---------------------------------------------------------------------------------
// conv2d_forward: y[n, o, oy, ox] = sum_{ky, kx, c in o's group}
//     x[n, c, oy*sh - top + ky*dh, ox*sw - left + kx*dw] * W[ky, kx, c - g*cig, o]
// Consecutive threads walk the innermost output dimension (ox for NCHW, o for NHWC).
template <typename T>
GO_DEV void conv2d_forward_body(const GoConvParams& p) {
    typedef typename GoAcc<T>::type A;
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    const T* __restrict__ w = reinterpret_cast<const T*>(p.w);
    T* __restrict__ y = reinterpret_cast<T*>(p.y);
    const go_i64 cig = p.ci / p.groups, cog = p.co / p.groups;
    const GoFilterStrides fs = go_filter_strides(p);
    const go_i64 total = p.n * p.co * p.ho * p.wo;
    for (go_i64 i = go_tid_x(); i < total; i += go_stride_x()) {
        go_i64 n, o, oy, ox;
        go_unflatten(p.layout, i, p.co, p.ho, p.wo, &n, &o, &oy, &ox);
        const go_i64 g = o / cog;
        A acc = A(0);
        for (go_i64 ky = 0; ky < p.kh; ++ky) {
            const go_i64 iy = oy * p.sh - p.pad_top + ky * p.dh;
            if (iy < 0 || iy >= p.hi) continue;
            for (go_i64 kx = 0; kx < p.kw; ++kx) {
                const go_i64 ix = ox * p.sw - p.pad_left + kx * p.dw;
                if (ix < 0 || ix >= p.wi) continue;
                const T* wrow = w + ky * fs.ky + kx * fs.kx + o * fs.o;
                for (go_i64 c = 0; c < cig; ++c) {
                    const go_i64 xi = go_index(p.layout, n, g * cig + c, iy, ix, p.ci, p.hi, p.wi);
                    acc += go_to_acc(go_ldg(x + xi)) * go_to_acc(go_ldg(wrow + c * fs.c));
                }
            }
        }
        y[i] = go_from_acc<T>(acc);
    }
}

// ---------------------------------------------------------------------------------
// conv2d_backprop_input: dx[n, c, y, x] = sum_{ky, kx, o in c's group}
//     dy[n, o, oy, ox] * W[ky, kx, c - g*cig, o],  y = oy*sh - top + ky*dh (same for x).
//
// Stride phases: a dx row y has phase ry = (y + top) mod sh; tap ky reaches it iff
// ky*dh = ry (mod sh), and then oy = t + (y0 + top - ky*dh)/sh for the phase's t-th row
// y = y0 + t*sh. A block works on one phase, so its taps are uniform and no work is
// spent on taps that cannot reach its pixels. Tile: TP pixels of the phase x TC
// channels of one group, reduced over (tap, o) in chunks of TK through shared memory.
// Thread (tx, ty) = (t % 16, t / 16) owns a 4x4 micro-tile: pixels tx + 16*i and
// channels ty + 16*j for NCHW, pixels ty + 16*i and channels tx + 16*j for NHWC, so the
// stores of a warp are contiguous along the layout's innermost dimension.
#define TP GO_CONV_TILE_P
#define TC GO_CONV_TILE_C
#define TK GO_CONV_TILE_K

template <typename T, int L>
GO_DEV void conv2d_backprop_input_layout(const GoConvParams& p) {
    typedef typename GoAcc<T>::type A;
    const T* __restrict__ dy = reinterpret_cast<const T*>(p.y);
    const T* __restrict__ w = reinterpret_cast<const T*>(p.w);
    T* __restrict__ dx = reinterpret_cast<T*>(p.x);
    __shared__ A As[TK][TP];  // dy tile: [o in chunk][pixel]
    __shared__ A Bs[TK][TC];  // W tile:  [o in chunk][channel]

    const int t = threadIdx.x;
    const int tx = t % 16, ty = t / 16;
    const go_i64 cig = p.ci / p.groups, cog = p.co / p.groups;
    const go_i64 ctiles = (cig + TC - 1) / TC;
    const go_i64 phases = p.sh * p.sw;
    const GoFilterStrides fs = go_filter_strides(p);

    for (go_i64 ph = blockIdx.z; ph < phases; ph += gridDim.z) {
        const go_i64 ry = ph / p.sw, rx = ph % p.sw;
        const go_i64 y0 = go_mod(ry - p.pad_top, p.sh), x0 = go_mod(rx - p.pad_left, p.sw);
        const go_i64 cnt_y = y0 < p.hi ? (p.hi - y0 + p.sh - 1) / p.sh : 0;
        const go_i64 cnt_x = x0 < p.wi ? (p.wi - x0 + p.sw - 1) / p.sw : 0;
        const go_i64 npix = p.n * cnt_y * cnt_x;
        const go_i64 ptiles = (npix + TP - 1) / TP;

        for (go_i64 gc = blockIdx.y; gc < p.groups * ctiles; gc += gridDim.y) {
            const go_i64 g = gc / ctiles;
            const go_i64 c_base = (gc % ctiles) * TC;  // within the group

            for (go_i64 pt = blockIdx.x; pt < ptiles; pt += gridDim.x) {
                const go_i64 p_base = pt * TP;

                // The 4 pixels this thread loads into As: the phase coordinates (t_y, t_x)
                // and the dy offset of (n, o = g*cog, oy = t_y, ox = t_x); -1: no pixel.
                int ld_ty[4], ld_tx[4];
                go_i64 ld_base[4];
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const int lp = L == GO_LAYOUT_NCHW ? t % TP : t / TK + 16 * r;
                    go_i64 q = p_base + lp;
                    ld_ty[r] = 0; ld_tx[r] = 0; ld_base[r] = -1;
                    if (q < npix) {
                        ld_tx[r] = (int)(q % cnt_x); q /= cnt_x;
                        ld_ty[r] = (int)(q % cnt_y);
                        const go_i64 n = q / cnt_y;
                        ld_base[r] = L == GO_LAYOUT_NCHW
                            ? ((n * p.co + g * cog) * p.ho + ld_ty[r]) * p.wo + ld_tx[r]
                            : ((n * p.ho + ld_ty[r]) * p.wo + ld_tx[r]) * p.co + g * cog;
                    }
                }
                const go_i64 o_stride = L == GO_LAYOUT_NCHW ? p.ho * p.wo : 1;
                const go_i64 row_stride = L == GO_LAYOUT_NCHW ? p.wo : p.wo * p.co;
                const go_i64 col_stride = L == GO_LAYOUT_NCHW ? 1 : p.co;

                A acc[4][4];
#pragma unroll
                for (int i = 0; i < 4; ++i)
#pragma unroll
                    for (int j = 0; j < 4; ++j) acc[i][j] = A(0);

                for (go_i64 ky = 0; ky < p.kh; ++ky) {
                    if (go_mod(ky * p.dh - ry, p.sh) != 0) continue;  // block-uniform
                    const go_i64 qy = (y0 + p.pad_top - ky * p.dh) / p.sh;  // exact
                    for (go_i64 kx = 0; kx < p.kw; ++kx) {
                        if (go_mod(kx * p.dw - rx, p.sw) != 0) continue;  // block-uniform
                        const go_i64 qx = (x0 + p.pad_left - kx * p.dw) / p.sw;
                        const go_i64 tap_off = qy * row_stride + qx * col_stride;
                        // W[ky, kx, c_base + cl, g*cog + o]
                        const T* wtap = w + ky * fs.ky + kx * fs.kx + c_base * fs.c + g * cog * fs.o;
                        bool ok[4];
#pragma unroll
                        for (int r = 0; r < 4; ++r) {
                            const go_i64 oy = ld_ty[r] + qy, ox = ld_tx[r] + qx;
                            ok[r] = ld_base[r] >= 0 && oy >= 0 && oy < p.ho && ox >= 0 && ox < p.wo;
                        }

                        for (go_i64 o0 = 0; o0 < cog; o0 += TK) {
                            // dy tile
#pragma unroll
                            for (int r = 0; r < 4; ++r) {
                                const int lk = L == GO_LAYOUT_NCHW ? t / TP + 4 * r : t % TK;
                                const int lp = L == GO_LAYOUT_NCHW ? t % TP : t / TK + 16 * r;
                                const go_i64 o = o0 + lk;
                                A v = A(0);
                                if (ok[r] && o < cog) v = go_to_acc(go_ldg(dy + ld_base[r] + tap_off + o * o_stride));
                                As[lk][lp] = v;
                            }
                            // W tile
#pragma unroll
                            for (int r = 0; r < 4; ++r) {
                                const int k = t % TK, cl = t / TK + 16 * r;
                                const go_i64 o = o0 + k;
                                A v = A(0);
                                if (o < cog && c_base + cl < cig) v = go_to_acc(go_ldg(wtap + cl * fs.c + o * fs.o));
                                Bs[k][cl] = v;
                            }
                            __syncthreads();
#pragma unroll 4
                            for (int k = 0; k < TK; ++k) {
                                A a[4], b[4];
#pragma unroll
                                for (int i = 0; i < 4; ++i)
                                    a[i] = As[k][L == GO_LAYOUT_NCHW ? tx + 16 * i : ty + 16 * i];
#pragma unroll
                                for (int j = 0; j < 4; ++j)
                                    b[j] = Bs[k][L == GO_LAYOUT_NCHW ? ty + 16 * j : tx + 16 * j];
#pragma unroll
                                for (int i = 0; i < 4; ++i)
#pragma unroll
                                    for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
                            }
                            __syncthreads();
                        }
                    }
                }

                // Store the micro-tile.
                for (int i = 0; i < 4; ++i) {
                    const go_i64 pl = L == GO_LAYOUT_NCHW ? tx + 16 * i : ty + 16 * i;
                    go_i64 q = p_base + pl;
                    if (q >= npix) continue;
                    const go_i64 px = q % cnt_x; q /= cnt_x;
                    const go_i64 py = q % cnt_y;
                    const go_i64 n = q / cnt_y;
                    const go_i64 yy = y0 + py * p.sh, xx = x0 + px * p.sw;
                    for (int j = 0; j < 4; ++j) {
                        const go_i64 c = c_base + (L == GO_LAYOUT_NCHW ? ty + 16 * j : tx + 16 * j);
                        if (c >= cig) continue;
                        dx[go_index(L, n, g * cig + c, yy, xx, p.ci, p.hi, p.wi)] =
                            go_from_acc<T>(acc[i][j]);
                    }
                }
            }
        }
    }
}

template <typename T>
GO_DEV void conv2d_backprop_input_body(const GoConvParams& p) {
    if (p.layout == GO_LAYOUT_NCHW) conv2d_backprop_input_layout<T, GO_LAYOUT_NCHW>(p);
    else conv2d_backprop_input_layout<T, GO_LAYOUT_NHWC>(p);
}

#undef TP
#undef TC
#undef TK

GO_INSTANTIATE(conv2d_forward, GoConvParams, conv2d_forward_body)
GO_INSTANTIATE(conv2d_backprop_input, GoConvParams, conv2d_backprop_input_body)

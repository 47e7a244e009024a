// Conv family: conv2d_forward (direct, one thread per output),
// conv2d_backprop_input (implicit GEMM of the transposed convolution, shared-memory
// tiles) and conv2d_backprop_filter_partial + conv2d_backprop_filter_reduce (implicit
// GEMM over the output pixels, split-K with a fixed split, reduced in split order).
// The forward and backprop_input read the filter HWIO [kh, kw, ci/groups, co] or OIHW
// [co, ci/groups, kh, kw] (p.filter_layout) through per-axis strides; the filter gradient
// is accumulated HWIO and may be written OIHW. Accumulation in Acc, fixed order, each
// output written once, no atomics. The compute_80+ images (and the emulator) also hold the
// tensor-core kernels conv2d_backprop_input_tc_* and conv2d_forward_tc_* (conv_tc.cuh).
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
// The taps of one axis that reach stride phase r: k*d = r (mod s), k in [0, kn). They form
// k0 + i*pk; returns their count (0: none), with k0 and pk. Shared with conv_tc.cuh.
GO_DEV go_i64 go_conv_phase_taps(go_i64 r, go_i64 s, go_i64 d, go_i64 kn, go_i64* k0,
                                 go_i64* pk) {
    // s / gcd(s, d): the smallest step that keeps k*d mod s (by Euclid: counting up to it
    // took 2^40 steps for a stride of 2^40, a hang found by the property tests).
    go_i64 a = s, b = d;
    while (b != 0) {
        const go_i64 t = a % b;
        a = b;
        b = t;
    }
    const go_i64 period = s / a;
    *pk = period;
    *k0 = 0;
    for (go_i64 k = 0; k < period && k < kn; ++k) {
        if (go_mod(k * d - r, s) == 0) {
            *k0 = k;
            return (kn - k + period - 1) / period;
        }
    }
    return 0;
}

// The stride phases of conv2d_backprop_input that hold dx pixels, enumerated by their
// first row and column (y0, x0) in [0, min(sh, hi)) x [0, min(sw, wi)): phase (ry, rx) has
// y0 = (ry - top) mod sh, and no rows where y0 >= hi. Enumerating (ry, rx) over sh x sw
// instead gave a block loop of sh*sw / 65535 mostly empty phases for a stride past the
// image (2^40 x 3 in a property case). Shared with conv_tc.cuh and the host's grid
// (launch::conv_phases).
GO_DEV go_i64 go_conv_phase_count(const GoConvParams& p) {
    return (p.sh < p.hi ? p.sh : p.hi) * (p.sw < p.wi ? p.sw : p.wi);
}
// Phase index ph (< go_conv_phase_count) as its (ry, rx).
GO_DEV void go_conv_phase(const GoConvParams& p, go_i64 ph, go_i64* ry, go_i64* rx) {
    const go_i64 nx = p.sw < p.wi ? p.sw : p.wi;
    *ry = go_mod(ph / nx + p.pad_top, p.sh);
    *rx = go_mod(ph % nx + p.pad_left, p.sw);
}

// ---------------------------------------------------------------------------------
// conv2d_backprop_input (FFMA): dx[n, c, y, x] = sum_{ky, kx, o in c's group}
//     dy[n, o, oy, ox] * W[ky, kx, c - g*cig, o],  y = oy*sh - top + ky*dh (same for x).
//
// Stride phases: a dx row y has phase ry = (y + top) mod sh; tap ky reaches it iff
// ky*dh = ry (mod sh) (the taps ky0 + i*pky, go_conv_phase_taps, found once per phase),
// and then oy = t + (y0 + top - ky*dh)/sh for the phase's t-th row y = y0 + t*sh. A block
// works on one phase, so its taps are uniform and no work is spent on taps that cannot
// reach its pixels. Tile: TP pixels of the phase x TC channels of one group, reduced over
// (tap, o) in chunks of TK through shared memory, in a fixed order (taps ascending, o
// ascending). Thread (tx, ty) = (t % CT, t / CT) owns an MR x MR micro-tile: pixels
// tx + CT*i and channels ty + CT*j for NCHW, pixels ty + CT*i and channels tx + CT*j for
// NHWC, so the stores of a warp are contiguous along the layout's innermost dimension.
// Registers: the per-pixel coordinates of the tile live in shared memory (one table per
// tile, not 4 x 64-bit offsets per thread) and so do the phase's taps and strides
// (GoConvPhase), so two blocks fit an SM for f16/bf16/f32 (launch bounds (256, 2), at most
// 128 registers, no spills: tests/ptx_check.rs); f64 keeps one.
#define TP GO_CONV_TILE_P
#define TC GO_CONV_TILE_C
#define TK GO_CONV_TILE_K
#define CT 16  // threads along each side of the block's 16 x 16 grid
#define MR 4   // results per thread along each side of its micro-tile
static_assert(CT * CT == GO_BLOCK_THREADS, "a CT x CT thread grid");
static_assert(CT * MR == TP && CT * MR == TC, "the micro-tiles cover the tile");
static_assert(TK * TP == 4 * GO_BLOCK_THREADS && TK * TC == 4 * GO_BLOCK_THREADS,
              "each thread loads 4 elements of each operand per chunk");
static_assert(GO_BLOCK_THREADS % TK == 0 && GO_BLOCK_THREADS % TP == 0, "load mapping");

// One stride phase of conv2d_backprop_input, kept in shared memory (its 64-bit values
// would otherwise hold registers across the whole reduction).
struct GoConvPhase {
    go_i64 y0, x0, cnt_y, cnt_x, npix;  // the phase's first dx row/column and its pixels
    go_i64 ky0, pky, kx0, pkx;           // taps: ky = ky0 + iy*pky (same for x)
    go_i64 qy0, dqy, qx0, dqx;           // tap iy reads dy row t + qy0 + iy*dqy
    int nty, ntx;                        // tap counts
    GoFilterStrides fs;                  // filter strides of ky, kx, c, o
    go_i64 o_stride, row_stride, col_stride;  // dy strides of o, row and column
};

template <typename T, int L>
GO_DEV void conv2d_backprop_input_layout(const GoConvParams& p) {
    typedef typename GoAcc<T>::type A;
    const T* __restrict__ dy = reinterpret_cast<const T*>(p.y);
    const T* __restrict__ w = reinterpret_cast<const T*>(p.w);
    T* __restrict__ dx = reinterpret_cast<T*>(p.x);
    __shared__ A As[TK][TP];  // dy tile: [o in chunk][pixel]
    __shared__ A Bs[TK][TC];  // W tile:  [o in chunk][channel]
    // The tile's pixels: phase row and column, dy offset of (n, g*cog, row, col) (-1: past
    // the last pixel) and dx offset of (n, g*cig, y, x).
    __shared__ int s_ty[TP], s_tx[TP];
    __shared__ go_i64 s_dy[TP], s_dx[TP];
    __shared__ GoConvPhase P;

    const int t = threadIdx.x;
    const int tx = t % CT, ty = t / CT;
    const go_i64 cig = p.ci / p.groups, cog = p.co / p.groups;
    const go_i64 ctiles = (cig + TC - 1) / TC;
    const go_i64 phases = go_conv_phase_count(p);
    const go_i64 c_stride = L == GO_LAYOUT_NCHW ? p.hi * p.wi : 1;  // dx stride of c
    // This thread's load slots: As[lk + 4r][lp] (NCHW) or As[lk][lp + 16r] (NHWC), and
    // Bs[bk][bc + 16r].
    const int lk = L == GO_LAYOUT_NCHW ? t / TP : t % TK;
    const int lp = L == GO_LAYOUT_NCHW ? t % TP : t / TK;
    const int bk = t % TK, bc = t / TK;

    for (go_i64 ph = blockIdx.z; ph < phases; ph += gridDim.z) {
        __syncthreads();  // every thread is done with the previous phase
        if (t == 0) {
            go_i64 ry, rx;
            go_conv_phase(p, ph, &ry, &rx);
            P.y0 = go_mod(ry - p.pad_top, p.sh);
            P.x0 = go_mod(rx - p.pad_left, p.sw);
            P.cnt_y = P.y0 < p.hi ? (p.hi - P.y0 + p.sh - 1) / p.sh : 0;
            P.cnt_x = P.x0 < p.wi ? (p.wi - P.x0 + p.sw - 1) / p.sw : 0;
            P.npix = p.n * P.cnt_y * P.cnt_x;
            P.nty = (int)go_conv_phase_taps(ry, p.sh, p.dh, p.kh, &P.ky0, &P.pky);
            P.ntx = (int)go_conv_phase_taps(rx, p.sw, p.dw, p.kw, &P.kx0, &P.pkx);
            // Tap (iy, ix) reads dy row t + qy0 + iy*dqy of the phase's row t (exact).
            P.qy0 = (P.y0 + p.pad_top - P.ky0 * p.dh) / p.sh;
            P.dqy = -(P.pky * p.dh) / p.sh;
            P.qx0 = (P.x0 + p.pad_left - P.kx0 * p.dw) / p.sw;
            P.dqx = -(P.pkx * p.dw) / p.sw;
            P.fs = go_filter_strides(p);
            P.o_stride = L == GO_LAYOUT_NCHW ? p.ho * p.wo : 1;
            P.row_stride = L == GO_LAYOUT_NCHW ? p.wo : p.wo * p.co;
            P.col_stride = L == GO_LAYOUT_NCHW ? 1 : p.co;
        }
        __syncthreads();
        const go_i64 ptiles = (P.npix + TP - 1) / TP;

        for (go_i64 gc = blockIdx.y; gc < p.groups * ctiles; gc += gridDim.y) {
            const go_i64 g = gc / ctiles;
            const go_i64 c_base = (gc % ctiles) * TC;  // within the group

            for (go_i64 pt = blockIdx.x; pt < ptiles; pt += gridDim.x) {
                const go_i64 p_base = pt * TP;
                __syncthreads();  // the previous tile is done with the pixel table
                for (int m = t; m < TP; m += GO_BLOCK_THREADS) {
                    go_i64 q = p_base + m;
                    int py = 0, px = 0;
                    go_i64 od = -1, ox = -1;
                    if (q < P.npix) {
                        px = (int)(q % P.cnt_x); q /= P.cnt_x;
                        py = (int)(q % P.cnt_y);
                        const go_i64 n = q / P.cnt_y;
                        od = L == GO_LAYOUT_NCHW
                            ? ((n * p.co + g * cog) * p.ho + py) * p.wo + px
                            : ((n * p.ho + py) * p.wo + px) * p.co + g * cog;
                        ox = go_index(L, n, g * cig, P.y0 + py * p.sh, P.x0 + px * p.sw, p.ci,
                                      p.hi, p.wi);
                    }
                    s_ty[m] = py; s_tx[m] = px; s_dy[m] = od; s_dx[m] = ox;
                }
                __syncthreads();

                A acc[MR][MR];
#pragma unroll
                for (int i = 0; i < MR; ++i)
#pragma unroll
                    for (int j = 0; j < MR; ++j) acc[i][j] = A(0);

                for (int iy = 0; iy < P.nty; ++iy) {
                    for (int ix = 0; ix < P.ntx; ++ix) {
                        // Read from shared memory per tap, not held in registers.
                        const go_i64 qy = P.qy0 + iy * P.dqy, ky = P.ky0 + iy * P.pky;
                        const go_i64 qx = P.qx0 + ix * P.dqx, kx = P.kx0 + ix * P.pkx;
                        const go_i64 tap_off = qy * P.row_stride + qx * P.col_stride;
                        // W[ky, kx, c_base + cl, g*cog + o]
                        const T* wtap =
                            w + ky * P.fs.ky + kx * P.fs.kx + c_base * P.fs.c + g * cog * P.fs.o;
                        for (go_i64 o0 = 0; o0 < cog; o0 += TK) {
                            // dy tile
#pragma unroll
                            for (int r = 0; r < 4; ++r) {
                                const int k = L == GO_LAYOUT_NCHW ? lk + 4 * r : lk;
                                const int m = L == GO_LAYOUT_NCHW ? lp : lp + 16 * r;
                                const go_i64 o = o0 + k, base = s_dy[m];
                                const go_i64 oy = s_ty[m] + qy, ox = s_tx[m] + qx;
                                A v = A(0);
                                if (base >= 0 && o < cog && oy >= 0 && oy < p.ho && ox >= 0 &&
                                    ox < p.wo)
                                    v = go_to_acc(go_ldg(dy + base + tap_off + o * P.o_stride));
                                As[k][m] = v;
                            }
                            // W tile
#pragma unroll
                            for (int r = 0; r < 4; ++r) {
                                const int cl = bc + 16 * r;
                                const go_i64 o = o0 + bk;
                                A v = A(0);
                                if (o < cog && c_base + cl < cig)
                                    v = go_to_acc(go_ldg(wtap + cl * P.fs.c + o * P.fs.o));
                                Bs[bk][cl] = v;
                            }
                            __syncthreads();
#pragma unroll 4
                            for (int k = 0; k < TK; ++k) {
                                A a[MR], b[MR];
#pragma unroll
                                for (int i = 0; i < MR; ++i)
                                    a[i] = As[k][L == GO_LAYOUT_NCHW ? tx + CT * i : ty + CT * i];
#pragma unroll
                                for (int j = 0; j < MR; ++j)
                                    b[j] = Bs[k][L == GO_LAYOUT_NCHW ? ty + CT * j : tx + CT * j];
#pragma unroll
                                for (int i = 0; i < MR; ++i)
#pragma unroll
                                    for (int j = 0; j < MR; ++j) acc[i][j] += a[i] * b[j];
                            }
                            __syncthreads();
                        }
                    }
                }

                // Store the micro-tile.
#pragma unroll
                for (int i = 0; i < MR; ++i) {
                    const go_i64 ob = s_dx[L == GO_LAYOUT_NCHW ? tx + CT * i : ty + CT * i];
                    if (ob < 0) continue;
#pragma unroll
                    for (int j = 0; j < MR; ++j) {
                        const go_i64 c = c_base + (L == GO_LAYOUT_NCHW ? ty + CT * j : tx + CT * j);
                        if (c >= cig) continue;
                        dx[ob + c * c_stride] = go_from_acc<T>(acc[i][j]);
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
#undef CT
#undef MR

// ---------------------------------------------------------------------------------
// conv2d_backprop_filter: per group g, dW[m = (ky, kx, c), o] = sum over the output
// pixels r = (n, oy, ox) of X[r, m] * dy[n, g*cog + o, oy, ox], X[r, m] =
// x[n, g*cig + c, oy*sh - top + ky*dh, ox*sw - left + kx*dw] (0 in the padding): an
// implicit GEMM whose operand X is gathered from x on the fly.
//
// Split-K, deterministic: the pixels are cut into fixed ranges (split_len each, chosen
// from the geometry by the host); block (tile, s) sums range s in ascending chunks of FK
// pixels into an FM x FN tile of the workspace ws[s]; conv2d_backprop_filter_reduce then
// adds ws[0], ws[1], ... in that order and rounds once. No atomics, no order that
// depends on scheduling.
// Thread (tx, ty) = (t % 16, t / 16) owns filter rows ty + 16*i and channels tx + 16*j.
// Loads: NCHW threads walk pixels (contiguous in x and dy along ox); NHWC threads walk
// filter rows / channels (contiguous along c and o).
#define FM GO_CONV_FILTER_TILE_M
#define FN GO_CONV_FILTER_TILE_N
#define FK GO_CONV_FILTER_TILE_K

// An output pixel (n, oy, ox), advanced by whole chunks without a division per step.
struct GoPix {
    go_i64 n, oy, ox;
};

GO_DEV GoPix go_pix(go_i64 r, go_i64 ho, go_i64 wo) {
    GoPix p;
    p.ox = r % wo;
    r /= wo;
    p.oy = r % ho;
    p.n = r / ho;
    return p;
}

// v -= q * d and returns q = v / d, for v >= d > 0: one subtraction when v < 2d (a chunk
// no longer than a row: the usual step), else a 64-bit division (a called subroutine).
GO_DEV go_i64 go_wrap(go_i64& v, go_i64 d) {
    v -= d;
    if (v < d) return 1;
    const go_i64 q = v / d;
    v -= q * d;
    return q + 1;
}

GO_DEV void go_pix_advance(GoPix& p, go_i64 by, go_i64 ho, go_i64 wo) {
    p.ox += by;
    if (p.ox >= wo) {
        p.oy += go_wrap(p.ox, wo);
        if (p.oy >= ho) p.n += go_wrap(p.oy, ho);
    }
}

template <typename T, int L>
GO_DEV void conv2d_backprop_filter_partial_layout(const GoConvFilterParams& p) {
    typedef typename GoAcc<T>::type A;
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    const T* __restrict__ dy = reinterpret_cast<const T*>(p.dy);
    A* __restrict__ ws = reinterpret_cast<A*>(p.ws);
    // +1: the NCHW stores (16 pixels x 2 rows per warp) hit distinct banks.
    __shared__ A Xs[FK][FM + 1];  // X tile: [pixel in chunk][filter row]
    __shared__ A Ds[FK][FN + 1];  // dy tile: [pixel in chunk][channel]

    const int t = threadIdx.x;
    const int tx = t % 16, ty = t / 16;
    const go_i64 cig = p.ci / p.groups, cog = p.co / p.groups;
    const go_i64 rows = p.kh * p.kw * cig;
    const go_i64 mtiles = (rows + FM - 1) / FM, ntiles = (cog + FN - 1) / FN;
    const go_i64 tiles = p.groups * mtiles * ntiles;
    const go_i64 npix = p.n * p.ho * p.wo;
    const go_i64 flen = rows * p.co;
    const go_i64 himg = p.hi * p.wi, hw = p.ho * p.wo;
    // Loader roles: NCHW: pixel t % 16, rows / channels t / 16 + 16*r;
    //               NHWC: pixels t / 64 + 4*r, row / channel t % 64.
    const int lpix = L == GO_LAYOUT_NCHW ? t % FK : t / FM;

    for (go_i64 s = blockIdx.y; s < p.splits; s += gridDim.y) {
        const go_i64 r_begin = s * p.split_len;
        const go_i64 r_end = r_begin + p.split_len < npix ? r_begin + p.split_len : npix;
        for (go_i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const go_i64 g = tile / (mtiles * ntiles);
            const go_i64 rem = tile % (mtiles * ntiles);
            const go_i64 m_base = (rem / ntiles) * FM, n_base = (rem % ntiles) * FN;

            // The filter rows this thread loads: input offsets of tap (ky, kx) and the x
            // channel's offset; ok = false past the last row.
            go_i64 r_ybias[4], r_xbias[4], r_choff[4];
            bool r_ok[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const go_i64 m = m_base + (L == GO_LAYOUT_NCHW ? t / FK + 16 * r : t % FM);
                r_ok[r] = m < rows;
                const go_i64 c = r_ok[r] ? m % cig : 0, tap = r_ok[r] ? m / cig : 0;
                r_ybias[r] = (tap / p.kw) * p.dh - p.pad_top;
                r_xbias[r] = (tap % p.kw) * p.dw - p.pad_left;
                r_choff[r] = L == GO_LAYOUT_NCHW ? (g * cig + c) * himg : g * cig + c;
            }
            // Pixels this thread loads (NCHW: one, in [0]; NHWC: four).
            GoPix px[4];
#pragma unroll
            for (int r = 0; r < 4; ++r) {
                const go_i64 r0 = r_begin + lpix + (L == GO_LAYOUT_NCHW ? 0 : 4 * r);
                px[r] = go_pix(r0 < npix ? r0 : 0, p.ho, p.wo);
            }

            A acc[4][4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = A(0);

            for (go_i64 r0 = r_begin; r0 < r_end; r0 += FK) {
                // X tile.
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const int lp = L == GO_LAYOUT_NCHW ? lpix : lpix + 4 * r;
                    const int lm = L == GO_LAYOUT_NCHW ? t / FK + 16 * r : t % FM;
                    const GoPix& q = px[L == GO_LAYOUT_NCHW ? 0 : r];
                    const int ri = L == GO_LAYOUT_NCHW ? r : 0;
                    A v = A(0);
                    if (r0 + lp < r_end && r_ok[ri]) {
                        const go_i64 iy = q.oy * p.sh + r_ybias[ri];
                        const go_i64 ix = q.ox * p.sw + r_xbias[ri];
                        if (iy >= 0 && iy < p.hi && ix >= 0 && ix < p.wi) {
                            const go_i64 xi = L == GO_LAYOUT_NCHW
                                ? q.n * p.ci * himg + r_choff[ri] + iy * p.wi + ix
                                : ((q.n * p.hi + iy) * p.wi + ix) * p.ci + r_choff[ri];
                            v = go_to_acc(go_ldg(x + xi));
                        }
                    }
                    Xs[lp][lm] = v;
                }
                // dy tile.
#pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const int lp = L == GO_LAYOUT_NCHW ? lpix : lpix + 4 * r;
                    const int lo = L == GO_LAYOUT_NCHW ? t / FK + 16 * r : t % FN;
                    const GoPix& q = px[L == GO_LAYOUT_NCHW ? 0 : r];
                    const go_i64 o = n_base + lo;
                    A v = A(0);
                    if (r0 + lp < r_end && o < cog) {
                        const go_i64 di = L == GO_LAYOUT_NCHW
                            ? (q.n * p.co + g * cog + o) * hw + q.oy * p.wo + q.ox
                            : (r0 + lp) * p.co + g * cog + o;
                        v = go_to_acc(go_ldg(dy + di));
                    }
                    Ds[lp][lo] = v;
                }
                __syncthreads();
#pragma unroll 4
                for (int k = 0; k < FK; ++k) {
                    A a[4], b[4];
#pragma unroll
                    for (int i = 0; i < 4; ++i) a[i] = Xs[k][ty + 16 * i];
#pragma unroll
                    for (int j = 0; j < 4; ++j) b[j] = Ds[k][tx + 16 * j];
#pragma unroll
                    for (int i = 0; i < 4; ++i)
#pragma unroll
                        for (int j = 0; j < 4; ++j) acc[i][j] += a[i] * b[j];
                }
                __syncthreads();
#pragma unroll
                for (int r = 0; r < 4; ++r) go_pix_advance(px[r], FK, p.ho, p.wo);
            }

            // Store the micro-tile into split s's partial filter (HWIO order).
            A* __restrict__ part = ws + s * flen;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const go_i64 m = m_base + ty + 16 * i;
                if (m >= rows) continue;
#pragma unroll
                for (int j = 0; j < 4; ++j) {
                    const go_i64 o = n_base + tx + 16 * j;
                    if (o < cog) part[m * p.co + g * cog + o] = acc[i][j];
                }
            }
        }
    }
}

template <typename T>
GO_DEV void conv2d_backprop_filter_partial_body(const GoConvFilterParams& p) {
    if (p.layout == GO_LAYOUT_NCHW) conv2d_backprop_filter_partial_layout<T, GO_LAYOUT_NCHW>(p);
    else conv2d_backprop_filter_partial_layout<T, GO_LAYOUT_NHWC>(p);
}

// out[i] = sum_{s ascending} ws[s][hwio(i)], rounded once; i in the output's filter layout.
template <typename T>
GO_DEV void conv2d_backprop_filter_reduce_body(const GoConvFilterParams& p) {
    typedef typename GoAcc<T>::type A;
    const A* __restrict__ ws = reinterpret_cast<const A*>(p.ws);
    T* __restrict__ out = reinterpret_cast<T*>(p.out);
    const go_i64 cig = p.ci / p.groups;
    const go_i64 flen = p.kh * p.kw * cig * p.co;
    for (go_i64 i = go_tid_x(); i < flen; i += go_stride_x()) {
        go_i64 h = i;
        if (p.filter_layout == GO_FILTER_OIHW) {
            // i = ((o*cig + c)*kh + ky)*kw + kx
            go_i64 q = i;
            const go_i64 kx = q % p.kw; q /= p.kw;
            const go_i64 ky = q % p.kh; q /= p.kh;
            const go_i64 c = q % cig, o = q / cig;
            h = ((ky * p.kw + kx) * cig + c) * p.co + o;
        }
        A acc = A(0);
        for (go_i64 s = 0; s < p.splits; ++s) acc += ws[s * flen + h];
        out[i] = go_from_acc<T>(acc);
    }
}

#undef FM
#undef FN
#undef FK

GO_INSTANTIATE(conv2d_forward, GoConvParams, conv2d_forward_body)
// Two blocks per SM for the 16-bit types and f32; f64 (twice the accumulator registers)
// spilled at the 128-register cap on sm_120 and keeps one block (GO_LAUNCH_BOUNDS).
GO_INSTANTIATE_ONE(conv2d_backprop_input, GoConvParams, conv2d_backprop_input_body,
                   GO_LAUNCH_BOUNDS_TWO_BLOCKS, f16, __half)
GO_INSTANTIATE_ONE(conv2d_backprop_input, GoConvParams, conv2d_backprop_input_body,
                   GO_LAUNCH_BOUNDS_TWO_BLOCKS, bf16, __nv_bfloat16)
GO_INSTANTIATE_ONE(conv2d_backprop_input, GoConvParams, conv2d_backprop_input_body,
                   GO_LAUNCH_BOUNDS_TWO_BLOCKS, f32, float)
GO_INSTANTIATE_ONE(conv2d_backprop_input, GoConvParams, conv2d_backprop_input_body,
                   GO_LAUNCH_BOUNDS, f64, double)
GO_INSTANTIATE(conv2d_backprop_filter_partial, GoConvFilterParams, conv2d_backprop_filter_partial_body)
GO_INSTANTIATE(conv2d_backprop_filter_reduce, GoConvFilterParams, conv2d_backprop_filter_reduce_body)

// Tensor-core implicit GEMM (compute_80+ images and the emulator only).
#include "conv_tc.cuh"

// Resize family: a separable CSR gather serves the forward resize and both resize
// gradients (linear and nearest), in three kernels the host chooses from the plan
// (ops::resize_kernel): resize_box (both tables boxes: nearest gradients by integer
// factors, no table reads), resize_tile (two passes through shared memory, the common
// case) and resize_gather (generic, for plans the tiles cannot hold). The host builds the
// per-axis tables from the shared geometry; see GoResizeParams in params.h. Each output element is written exactly
// once (entries with zero weight included, so a NaN propagates), no atomics, no
// zero-fill pass: an output whose table rows are empty gets 0.
#include "common.cuh"

// The per-axis CSR tables of a resize, typed (weights in the accumulation type A).
#define GO_RESIZE_TABLES(p, A)                                                               \
    const uint32_t* __restrict__ yo = reinterpret_cast<const uint32_t*>((p).y_offsets);  \
    const uint32_t* __restrict__ yi = reinterpret_cast<const uint32_t*>((p).y_index);    \
    const A* __restrict__ yw = reinterpret_cast<const A*>((p).y_weight);                 \
    const uint32_t* __restrict__ xo = reinterpret_cast<const uint32_t*>((p).x_offsets);  \
    const uint32_t* __restrict__ xi = reinterpret_cast<const uint32_t*>((p).x_index);    \
    const A* __restrict__ xw = reinterpret_cast<const A*>((p).x_weight)

template <typename T>
GO_DEV void resize_gather_body(const GoResizeParams& p) {
    typedef typename GoAcc<T>::type A;
    const T* __restrict__ src = reinterpret_cast<const T*>(p.src);
    T* __restrict__ dst = reinterpret_cast<T*>(p.dst);
    GO_RESIZE_TABLES(p, A);

    const bool nchw = p.layout == GO_LAYOUT_NCHW;
    const go_i64 C = p.c;
    // Rows: (n, c, i) for NCHW, (n, i) for NHWC. Inner: j for NCHW, (j, c) for NHWC,
    // so consecutive threads touch consecutive addresses in both layouts.
    const go_i64 rows = nchw ? p.n * C * p.dst_h : p.n * p.dst_h;
    const go_i64 inner = nchw ? p.dst_w : p.dst_w * C;
    const go_i64 inner0 = (go_i64)blockIdx.x * blockDim.x + threadIdx.x;
    const go_i64 inner_stride = (go_i64)gridDim.x * blockDim.x;

    for (go_i64 r = blockIdx.y; r < rows; r += gridDim.y) {
        const go_i64 i = r % p.dst_h;
        const go_i64 outer = r / p.dst_h;  // n*C + c (NCHW) or n (NHWC)
        const uint32_t a0 = go_ldg(yo + i), a1 = go_ldg(yo + i + 1);
        const go_i64 src_plane = nchw ? outer * p.src_h * p.src_w : outer * p.src_h * p.src_w * C;
        const go_i64 dst_row = r * inner;
        for (go_i64 k = inner0; k < inner; k += inner_stride) {
            go_i64 j, c;
            if (nchw) { j = k; c = 0; } else { j = k / C; c = k - j * C; }
            const uint32_t b0 = go_ldg(xo + j), b1 = go_ldg(xo + j + 1);
            A acc = A(0);
            for (uint32_t a = a0; a < a1; ++a) {
                const A wy = go_ldg(yw + a);
                const go_i64 sy = go_ldg(yi + a);
                const go_i64 srow = nchw ? src_plane + sy * p.src_w : src_plane + sy * p.src_w * C + c;
                for (uint32_t b = b0; b < b1; ++b) {
                    const A w = wy * go_ldg(xw + b);
                    const go_i64 sx = go_ldg(xi + b);
                    const T v = go_ldg(src + (nchw ? srow + sx : srow + sx * C));
                    acc += w * go_to_acc(v);
                }
            }
            dst[dst_row + k] = go_from_acc<T>(acc);
        }
    }
}

GO_INSTANTIATE(resize_gather, GoResizeParams, resize_gather_body)

// ---- tiled two-pass gather ---------------------------------------------------------
// Block level: one spatial tile = tile_h destination rows x tile_w inner elements, for
// a run of planes (grid.x strides over spatial tiles, grid.y over planes). Everything
// that depends only on the spatial tile is set up once per block and reused for every
// plane: the column's x taps in registers, the tile's y taps (weights, rows as offsets
// into hrow) in shared memory, its first source row and row count.
// Thread level: thread (ty, tx) owns inner element tx of the tile. Pass 1 writes, for
// each source row the tile's y taps reach, the horizontal sums
// hrow[r][tx] = sum_b wx[b] * src[r][x[b]] to shared memory, GO_RESIZE_ROW_BATCH rows per
// step (4; 2 for f64, for registers) with all their loads issued before the first use; pass 2 writes
// dst[i][tx] = sum_a wy[a] * hrow[y[a]][tx]. Both sums run in table order, so the result
// is deterministic; it differs from resize_gather's sum_a sum_b (wy*wx)*v only by rounding.
//
// Shared memory, in this order: hrow [span rows][tile_w] (Acc), the y-tap weights
// [taps] (Acc), the y-tap row offsets into hrow [taps] (int), the per-row tap offsets
// [tile_h + 1] (int). The host sizes span, taps and tile_h so that they fit.

template <typename T>
GO_DEV void resize_tile_body(const GoResizeParams& p) {
    typedef typename GoAcc<T>::type A;
    enum { GO_RESIZE_ROW_BATCH = sizeof(T) > 4 ? 2 : 4 };
    __shared__ double smem[GO_RESIZE_TILE_SMEM / sizeof(double)];
    const T* __restrict__ src = reinterpret_cast<const T*>(p.src);
    T* __restrict__ dst = reinterpret_cast<T*>(p.dst);
    GO_RESIZE_TABLES(p, A);
    const uint32_t* __restrict__ row_tiles = reinterpret_cast<const uint32_t*>(p.row_tiles);

    // Channels interleaved in the inner run: 1 for NCHW, c for NHWC.
    const int cin = p.layout == GO_LAYOUT_NCHW ? 1 : (int)p.c;
    const go_i64 planes = p.layout == GO_LAYOUT_NCHW ? p.n * p.c : p.n;
    const int src_h = (int)p.src_h, dst_h = (int)p.dst_h;
    const int src_inner = (int)p.src_w * cin, dst_inner = (int)p.dst_w * cin;
    const int tile_h = p.tile_h, tile_w = p.tile_w;
    const int row_tiles_n = (dst_h + tile_h - 1) / tile_h;
    const int col_tiles_n = (dst_inner + tile_w - 1) / tile_w;
    const int spatial_tiles = row_tiles_n * col_tiles_n;
    const int tid = (int)threadIdx.x, nthreads = (int)blockDim.x;
    const int tx = tid % tile_w, ty = tid / tile_w;
    const int ny = nthreads / tile_w;
    const int span = p.span_h, max_taps = p.max_taps;

    A* hrow = reinterpret_cast<A*>(smem);
    A* tap_w = hrow + span * tile_w;
    int* tap_row = reinterpret_cast<int*>(tap_w + max_taps);
    int* tap_off = tap_row + max_taps;

    for (int st = blockIdx.x; st < spatial_tiles; st += gridDim.x) {
        // Column tiles fastest: neighbouring blocks share their halo rows in L2.
        const int ct = st % col_tiles_n, rt = st / col_tiles_n;
        const int k = ct * tile_w + tx;
        const bool live = k < dst_inner;
        const int j = live ? k / cin : 0;
        const int c = k - j * cin;
        // This column's x taps: in registers when there are few (the common case).
        const uint32_t b0 = live ? go_ldg(xo + j) : 0u;
        const int nb = live ? (int)(go_ldg(xo + j + 1) - b0) : 0;
        int xoff[GO_RESIZE_REG_TAPS];
        A xwt[GO_RESIZE_REG_TAPS];
#pragma unroll
        for (int u = 0; u < GO_RESIZE_REG_TAPS; ++u) {
            const bool has = u < nb;
            xoff[u] = has ? (int)go_ldg(xi + b0 + u) * cin + c : 0;
            xwt[u] = has ? go_ldg(xw + b0 + u) : A(0);
        }
        const int r0 = (int)go_ldg(row_tiles + 2 * rt);
        const int nr = (int)go_ldg(row_tiles + 2 * rt + 1);
        const int i0 = rt * tile_h, i1 = (int)go_min((go_i64)i0 + tile_h, dst_h);
        // The tile's y taps (rows as offsets into hrow, already times tile_w).
        {
            const uint32_t a0 = go_ldg(yo + i0);
            const int ntaps = (int)(go_ldg(yo + i1) - a0);
            for (int e = tid; e < ntaps; e += nthreads) {
                tap_w[e] = go_ldg(yw + a0 + e);
                tap_row[e] = ((int)go_ldg(yi + a0 + e) - r0) * tile_w;
            }
            for (int e = tid; e <= i1 - i0; e += nthreads) tap_off[e] = (int)(go_ldg(yo + i0 + e) - a0);
        }
        // (The barrier after pass 1 orders these stores before pass 2 reads them.)

        for (go_i64 plane = blockIdx.y; plane < planes; plane += gridDim.y) {
            const T* __restrict__ sp = src + plane * (go_i64)src_h * src_inner + (go_i64)r0 * src_inner;
            // Pass 1: horizontal sums of the tile's source rows.
            if (nb <= GO_RESIZE_REG_TAPS) {
                for (int r = ty; r < nr; r += GO_RESIZE_ROW_BATCH * ny) {
                    T v[GO_RESIZE_ROW_BATCH][GO_RESIZE_REG_TAPS];
#pragma unroll
                    for (int m = 0; m < GO_RESIZE_ROW_BATCH; ++m) {
                        const int rr = r + m * ny;
                        const T* __restrict__ row = sp + rr * src_inner;
#pragma unroll
                        for (int u = 0; u < GO_RESIZE_REG_TAPS; ++u) {
                            v[m][u] = go_from_acc<T>(A(0));
                            if (rr < nr && u < nb) v[m][u] = go_ldg(row + xoff[u]);
                        }
                    }
#pragma unroll
                    for (int m = 0; m < GO_RESIZE_ROW_BATCH; ++m) {
                        const int rr = r + m * ny;
                        if (rr < nr) {
                            A acc = A(0);
#pragma unroll
                            for (int u = 0; u < GO_RESIZE_REG_TAPS; ++u)
                                if (u < nb) acc += xwt[u] * go_to_acc(v[m][u]);
                            hrow[rr * tile_w + tx] = acc;
                        }
                    }
                }
            } else {
                for (int r = ty; r < nr; r += ny) {
                    const T* __restrict__ row = sp + r * src_inner;
                    A acc = A(0);
                    for (int b = 0; b < nb; ++b)
                        acc += go_ldg(xw + b0 + b) * go_to_acc(go_ldg(row + (int)go_ldg(xi + b0 + b) * cin + c));
                    hrow[r * tile_w + tx] = acc;
                }
            }
            __syncthreads();
            // Pass 2: vertical sums over the y taps of each destination row of the tile.
            T* __restrict__ dp = dst + plane * (go_i64)dst_h * dst_inner;
            for (int i = i0 + ty; i < i1; i += ny) {
                const int a0 = tap_off[i - i0], a1 = tap_off[i - i0 + 1];
                A acc = A(0);
                for (int a = a0; a < a1; ++a) acc += tap_w[a] * hrow[tap_row[a] + tx];
                if (live) dp[i * dst_inner + k] = go_from_acc<T>(acc);
            }
            __syncthreads();
        }
    }
}

GO_INSTANTIATE_STREAMING(resize_tile, GoResizeParams, resize_tile_body)

// ---- box gather (nearest resize gradients by integer factors) -----------------------
// dst[i][j] = sum_{a < box_h} sum_{b < box_w} src[box_h*i + a][box_w*j + b], in that
// order (the order of resize_gather over the same tables, whose weights are all 1, so
// the result is bitwise resize_gather's). With vec > 1 each thread reads and writes
// 16-byte vectors: NHWC, vec channels of one pixel per (a, b); NCHW with box_w == 2,
// vec columns, reading two 16-byte vectors per source row.
template <typename T> struct GoVec16;  // 16 bytes of T
template <> struct GoVec16<__half> { typedef uint4 type; enum { n = 8 }; };
template <> struct GoVec16<__nv_bfloat16> { typedef uint4 type; enum { n = 8 }; };
template <> struct GoVec16<float> { typedef float4 type; enum { n = 4 }; };
template <> struct GoVec16<double> { typedef double2 type; enum { n = 2 }; };

template <typename T>
GO_DEV void go_load16(const T* p, T* out) {
    typedef typename GoVec16<T>::type V;
#ifdef __CUDACC__
    const V v = __ldg(reinterpret_cast<const V*>(p));
#else
    const V v = *reinterpret_cast<const V*>(p);
#endif
    const T* e = reinterpret_cast<const T*>(&v);
#pragma unroll
    for (int k = 0; k < GoVec16<T>::n; ++k) out[k] = e[k];
}

template <typename T>
GO_DEV void go_store16(T* p, const T* in) {
    typedef typename GoVec16<T>::type V;
    V v;
    T* e = reinterpret_cast<T*>(&v);
#pragma unroll
    for (int k = 0; k < GoVec16<T>::n; ++k) e[k] = in[k];
    *reinterpret_cast<V*>(p) = v;
}

template <typename T>
GO_DEV void resize_box_body(const GoResizeParams& p) {
    typedef typename GoAcc<T>::type A;
    enum { V = GoVec16<T>::n };
    const T* __restrict__ src = reinterpret_cast<const T*>(p.src);
    T* __restrict__ dst = reinterpret_cast<T*>(p.dst);
    const bool nchw = p.layout == GO_LAYOUT_NCHW;
    const int cin = nchw ? 1 : (int)p.c;
    const int fh = p.box_h, fw = p.box_w;
    const int src_inner = (int)p.src_w * cin, dst_inner = (int)p.dst_w * cin;
    const int dst_h = (int)p.dst_h;
    const uint32_t rows = (uint32_t)((nchw ? p.n * p.c : p.n) * p.dst_h);
    const bool vec = p.vec > 1;
    const int groups = vec ? dst_inner / V : dst_inner;
    const int gx = go_row_lanes(groups);
    const int tx = (int)threadIdx.x % gx, ty = (int)threadIdx.x / gx;
    const uint32_t ny = blockDim.x / (uint32_t)gx;

    for (uint32_t r = blockIdx.y * ny + ty; r < rows; r += gridDim.y * ny) {
        const uint32_t plane = r / (uint32_t)dst_h;
        const int i = (int)(r - plane * (uint32_t)dst_h);
        const T* __restrict__ sp = src + (go_i64)plane * ((go_i64)p.src_h * src_inner) + (go_i64)fh * i * src_inner;
        T* __restrict__ dp = dst + (go_i64)r * dst_inner;
        for (int g = (int)blockIdx.x * gx + tx; g < groups; g += (int)gridDim.x * gx) {
            if (!vec) {
                // One output: k = j*cin + c reads columns box_w*j + b of channel c.
                const int j = g / cin, c = g - j * cin;
                const T* s0 = sp + fw * j * cin + c;
                A acc = A(0);
                for (int a = 0; a < fh; ++a)
                    for (int b = 0; b < fw; ++b) acc += go_to_acc(go_ldg(s0 + a * src_inner + b * cin));
                dp[g] = go_from_acc<T>(acc);
            } else if (!nchw) {
                // V channels of pixel j: one 16-byte vector per (a, b).
                const int k = g * V, j = k / cin, c = k - j * cin;
                const T* s0 = sp + fw * j * cin + c;
                A acc[V];
#pragma unroll
                for (int e = 0; e < V; ++e) acc[e] = A(0);
                for (int a = 0; a < fh; ++a)
                    for (int b = 0; b < fw; ++b) {
                        T v[V];
                        go_load16(s0 + a * src_inner + b * cin, v);
#pragma unroll
                        for (int e = 0; e < V; ++e) acc[e] += go_to_acc(v[e]);
                    }
                T out[V];
#pragma unroll
                for (int e = 0; e < V; ++e) out[e] = go_from_acc<T>(acc[e]);
                go_store16(dp + k, out);
            } else {
                // NCHW, box_w == 2: V columns read 2V source columns, two vectors per row.
                const int j0 = g * V;
                A acc[V];
#pragma unroll
                for (int e = 0; e < V; ++e) acc[e] = A(0);
                for (int a = 0; a < fh; ++a) {
                    T v[2 * V];
                    go_load16(sp + a * src_inner + 2 * j0, v);
                    go_load16(sp + a * src_inner + 2 * j0 + V, v + V);
#pragma unroll
                    for (int e = 0; e < V; ++e) {
                        acc[e] += go_to_acc(v[2 * e]);
                        acc[e] += go_to_acc(v[2 * e + 1]);
                    }
                }
                T out[V];
#pragma unroll
                for (int e = 0; e < V; ++e) out[e] = go_from_acc<T>(acc[e]);
                go_store16(dp + j0, out);
            }
        }
    }
}

GO_INSTANTIATE_STREAMING(resize_box, GoResizeParams, resize_box_body)

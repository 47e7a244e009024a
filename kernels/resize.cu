// Resize family: one separable CSR gather serves the forward resize and both resize
// gradients (linear and nearest). The host builds the per-axis tables from the shared
// geometry; see GoResizeParams in params.h. Each output element is written exactly
// once (entries with zero weight included, so a NaN propagates), no atomics, no
// zero-fill pass: an output whose table rows are empty gets 0.
#include "common.cuh"

template <typename T>
GO_DEV void resize_gather_body(const GoResizeParams& p) {
    typedef typename GoAcc<T>::type A;
    const T* __restrict__ src = reinterpret_cast<const T*>(p.src);
    T* __restrict__ dst = reinterpret_cast<T*>(p.dst);
    const uint32_t* __restrict__ yo = reinterpret_cast<const uint32_t*>(p.y_offsets);
    const uint32_t* __restrict__ yi = reinterpret_cast<const uint32_t*>(p.y_index);
    const A* __restrict__ yw = reinterpret_cast<const A*>(p.y_weight);
    const uint32_t* __restrict__ xo = reinterpret_cast<const uint32_t*>(p.x_offsets);
    const uint32_t* __restrict__ xi = reinterpret_cast<const uint32_t*>(p.x_index);
    const A* __restrict__ xw = reinterpret_cast<const A*>(p.x_weight);

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

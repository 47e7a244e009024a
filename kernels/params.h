/* Kernel parameter blocks, one struct per kernel family.
 *
 * This header is the single definition: the .cu kernels include it, the host emulator
 * includes it, and bindgen turns it into src/cuda/params.rs (scripts/gen-bindings.sh;
 * CI fails if the committed file differs). Plain C, fixed-width fields only, every
 * struct a multiple of 8 bytes with explicit padding, so the C and Rust layouts are
 * identical. Device pointers are CUdeviceptr values (uint64_t); each kernel casts them
 * to its element type. Each kernel takes exactly one argument: its struct, by value.
 *
 * layout: GO_LAYOUT_NCHW (0) or GO_LAYOUT_NHWC (1).
 */
#ifndef GRADOPS_PARAMS_H
#define GRADOPS_PARAMS_H

#include <stdint.h>

#define GO_LAYOUT_NCHW 0
#define GO_LAYOUT_NHWC 1

/* Threads per block every gradops kernel is compiled for (__launch_bounds__) and
 * launched with. The conv backprop tile geometry depends on it. */
#define GO_BLOCK_THREADS 256

/* conv2d_backprop_input (FFMA) tile: GO_CONV_TILE_P pixels x GO_CONV_TILE_C channels per
 * block (16 x 16 threads, 4 x 4 results each), reduction chunk GO_CONV_TILE_K; two blocks
 * per SM for f16/bf16/f32 (launch bounds (256, 2)), one for f64. */
#define GO_CONV_TILE_P 64
#define GO_CONV_TILE_C 64
#define GO_CONV_TILE_K 16

/* Tensor-core implicit GEMM (conv2d_backprop_input_tc_<dtype>, conv2d_forward_tc_<dtype>,
 * compute_80+ images only; kernels/conv_tc.cuh): a block of GO_TC_BLOCK_THREADS threads
 * (4 warps, 2 x 2) computes a GO_TC_TILE_M pixels x GO_TC_TILE_N channels tile, each warp
 * GO_TC_WARP_M x GO_TC_WARP_N of it with mma.sync (m16n8k16 f16/bf16, m16n8k8 tf32 for f32,
 * m8n8k4 f64); the reduction runs in chunks of 64 bytes per row (GO_TC_TILE_K 16-bit
 * elements, 16 f32, 8 f64) through a GO_TC_STAGES-deep cp.async pipeline in shared memory.
 * Launch: block (GO_TC_BLOCK_THREADS,1,1), grid.x any (pixel tiles), grid.y any (groups x
 * channel tiles), grid.z any (stride phases; 1 for the forward). Same GoConvParams.
 * Registers: three blocks per SM (168 a thread) for the 16-bit backprop_input and filter
 * partial sums, two (255) for the forward and for f32/f64 (conv_tc.cuh, GoTcTraits). The
 * lean twins conv2d_{backprop_input,forward}_tc_vec[_nchw]_<dtype> (same launch, same
 * GoConvParams; the host picks them by launch::conv_tc_vec_eligible) run a 4-stage pipeline
 * at up to four blocks per SM (conv_tc.cuh). */
#define GO_TC_BLOCK_THREADS 128
#define GO_TC_TILE_M 64
#define GO_TC_TILE_N 64
#define GO_TC_TILE_K 32
#define GO_TC_WARP_M 32
#define GO_TC_WARP_N 32
/* The wide lean kernel (conv2d_backprop_input_tc_vec_wide_<f16|bf16>, NHWC): the same warp
 * tiles, GO_TC_WIDE_TILE_M x GO_TC_TILE_N block tiles on GO_TC_WIDE_THREADS threads (8
 * warps, 4 x 2); launch as the other tensor-core kernels with those. */
#define GO_TC_WIDE_TILE_M 128
#define GO_TC_WIDE_THREADS 256
/* The tall lean kernels (conv2d_{backprop_input,forward}_tc_vec_tall_<f16|bf16>, NHWC): warp tiles
 * GO_TC_TALL_WARP_M x GO_TC_WARP_N (two m16 fragments more per warp: fewer fragment loads,
 * barriers and cursor steps per mma), GO_TC_TALL_TILE_M x GO_TC_TILE_N block tiles on
 * GO_TC_BLOCK_THREADS threads (4 warps, 2 x 2); launch as the other tensor-core kernels. */
#define GO_TC_TALL_TILE_M 128
#define GO_TC_TALL_WARP_M 64
/* The square lean kernels (conv2d_{backprop_input,forward}_tc_vec_square_<f16|bf16>, NHWC):
 * warp tiles GO_TC_TALL_WARP_M x GO_TC_SQUARE_WARP_N (each A fragment read by one warp, not
 * two), GO_TC_SQUARE_TILE_M x GO_TC_TILE_N block tiles on GO_TC_SQUARE_THREADS threads
 * (2 warps, 2 x 1); launch as the other tensor-core kernels with those. */
#define GO_TC_SQUARE_TILE_M 128
#define GO_TC_SQUARE_WARP_N 64
#define GO_TC_SQUARE_THREADS 64
#define GO_TC_STAGES 3
/* The warp-specialized wgmma kernels (conv2d_{backprop_input,forward}_tc_vec_ws_<f16|bf16>,
 * conv2d_{backprop_input,forward}_tc_vec_ws_f32 and their TF32 opt-in twins
 * conv2d_{backprop_input,forward}_tc_vec_ws_tf32_f32, NHWC, compute_90a image):
 * GO_TC_WIDE_TILE_M x GO_TC_TILE_N block tiles on GO_TC_WS_THREADS threads: two consumer
 * warpgroups (wgmma only) and one producer warpgroup of GO_TC_WS_PRODUCER_THREADS (the
 * cp.async copies) between stages with mbarriers; launch as the other tensor-core kernels
 * with those, and with GO_TC_WS_SMEM_ALIGN + s * GO_TC_WS_STAGE_BYTES bytes of dynamic shared
 * memory for s stages (the kernel takes as many whole stages as the launch gives it, in at
 * most GO_TC_WS_MAX_STAGES * GO_TC_WS_STAGE_BYTES bytes and at most GO_TC_WS_MAX_STAGES;
 * fewer than 2 trap; the host's default is GO_TC_WS_STAGES). */
#define GO_TC_WS_THREADS 384
#define GO_TC_WS_PRODUCER_THREADS 128
#define GO_TC_WS_STAGE_BYTES 12288
/* Exact f32 (3xTF32, conv2d_{backprop_input,forward}_tc_vec_ws_f32): a stage and its small
 * tf32 parts; the producer splits and publishes chunk k before it issues chunk k +
 * GO_TC_WS_SPLIT_LAG's copies (the copies of that many chunks in flight), so the f32 kernels
 * take at least GO_TC_WS_SPLIT_LAG + 1 stages (fewer trap). */
#define GO_TC_WS_SPLIT_STAGE_BYTES 24576
#define GO_TC_WS_SPLIT_LAG 2
#define GO_TC_WS_SMEM_ALIGN 512
#define GO_TC_WS_MAX_STAGES 8
#define GO_TC_WS_STAGES 6
/* The halo wgmma kernels (conv2d_{backprop_input,forward}_tc_vec{,_nchw}_halo_<f16|bf16>,
 * NHWC and NCHW, unit source strides, compute_90a image): tiles of GO_TC_WIDE_TILE_M pixel
 * slots of a phase's padded rows x GO_TC_TILE_N channels on GO_TC_HALO_THREADS threads (two
 * warpgroups), each tile's source read once per channel into a halo buffer that every tap's
 * wgmma reads at its own offset, the (phase, group, channel tile)'s filter resident. Dynamic
 * shared memory: GO_TC_HALO_SMEM_ALIGN + the filter's taps x channels x GO_TC_TILE_N
 * elements + two halo buffers (NCHW one; launch::conv_tc_halo_smem_bytes), at most
 * GO_TC_HALO_MAX_SMEM bytes; a launch with less than the call needs traps. */
#define GO_TC_HALO_THREADS 256
/* NCHW halo kernels: the most elements of a source plane (32-bit offsets in 8 planes). */
#define GO_TC_HALO_NCHW_MAX_PLANE 536870912
#define GO_TC_HALO_SMEM_ALIGN 512
#define GO_TC_HALO_MAX_SMEM 231424

/* conv2d_backprop_filter_partial tile: GO_CONV_FILTER_TILE_M filter rows (ky, kx, ci) x
 * GO_CONV_FILTER_TILE_N output channels per block, reduction chunk GO_CONV_FILTER_TILE_K
 * pixels. A split's length (split_len) is a multiple of GO_CONV_FILTER_TILE_K. */
#define GO_CONV_FILTER_TILE_M 64
#define GO_CONV_FILTER_TILE_N 64
#define GO_CONV_FILTER_TILE_K 16

/* Static shared memory of the tiled resize kernel (bytes): the horizontal-pass rows of
 * one tile (span_h rows x tile_w columns of Acc) and its y taps (max_taps weights and
 * row offsets, tile_h + 1 tap offsets). The host picks tile_h so that they fit. */
#define GO_RESIZE_TILE_SMEM 24576
/* Taps per destination column the tiled resize kernel keeps in registers; columns with
 * more read their taps from the table in the loop. */
#define GO_RESIZE_REG_TAPS 4

/* resize_gather_<dtype>: separable CSR gather (forward resize and both resize grads).
 *   dst[n, c, i, j] = sum_{a in [y_offsets[i], y_offsets[i+1])}
 *                     sum_{b in [x_offsets[j], x_offsets[j+1])}
 *                       (y_weight[a] * x_weight[b]) * src[n, c, y_index[a], x_index[b]]
 * weights are Acc (float for f16/bf16/f32, double for f64); indices u32.
 * Launch: block (256,1,1); grid.x strides over dst_w (NCHW) or dst_w*c (NHWC),
 * grid.y over n*c*dst_h (NCHW) or n*dst_h (NHWC); any grid size is correct.
 *
 * resize_tile_<dtype>: the same gather, by tiles of tile_h destination rows x tile_w
 * inner elements (inner = dst_w for NCHW, dst_w*c for NHWC) of one plane, in two
 * passes through shared memory: horizontal (each source row the tile reads, summed
 * over the x taps) then vertical (the y taps over those rows). Index math inside a
 * plane is 32-bit: the host uses it only when src_h*src_inner and dst_h*dst_inner fit
 * an int32, and only when the tile's source rows fit GO_RESIZE_TILE_SMEM.
 * Launch: block (256,1,1), grid.x any (grid-stride over all tiles).
 *
 * resize_box_<dtype>: the same gather when both tables are boxes (the gradient of a
 * nearest resize by integer factors: destination (i, j) reads source rows
 * [box_h*i, box_h*i + box_h) and columns [box_w*j, box_w*j + box_w), weight 1, nothing
 * else), summed in the tables' order with no table reads. vec > 1 (16-byte accesses)
 * only where the host checked the alignment: NHWC with c a multiple of vec, or NCHW
 * with box_w == 2 and dst_w a multiple of vec. Index math inside a plane is 32-bit.
 * Launch: block (256,1,1), split in the kernel into gx threads across a row's groups
 * of vec (gx = the next power of two >= groups, up to 256) times 256/gx rows; grid.x
 * strides over a row's groups gx at a time, grid.y over rows (n*c*dst_h for NCHW, n*dst_h for NHWC; the host checks they fit
 * 32 bits); any grid size is correct. */
typedef struct GoResizeParams {
    uint64_t src;       /* const T*   [n, c, src_h, src_w] in layout */
    uint64_t dst;       /* T*         [n, c, dst_h, dst_w] in layout */
    uint64_t y_offsets; /* const u32* [dst_h + 1] */
    uint64_t y_index;   /* const u32* [y_offsets[dst_h]], each < src_h */
    uint64_t y_weight;  /* const Acc* [y_offsets[dst_h]] */
    uint64_t x_offsets; /* const u32* [dst_w + 1] */
    uint64_t x_index;   /* const u32* [x_offsets[dst_w]], each < src_w */
    uint64_t x_weight;  /* const Acc* [x_offsets[dst_w]] */
    uint64_t row_tiles; /* resize_tile only: const u32* [2 * ceil(dst_h / tile_h)]:
                           first source row and source row count of each tile row */
    int64_t n;
    int64_t c;
    int64_t src_h;
    int64_t src_w;
    int64_t dst_h;
    int64_t dst_w;
    int32_t layout;
    int32_t reserved;
    int32_t tile_h; /* resize_tile only: destination rows per tile */
    int32_t tile_w; /* resize_tile only: destination inner elements per tile (32..256,
                       dividing GO_BLOCK_THREADS) */
    int32_t span_h;   /* resize_tile only: the most source rows any tile reads */
    int32_t max_taps; /* resize_tile only: the most y-table entries any tile has */
    int32_t box_h;    /* resize_box only: source rows per destination row */
    int32_t box_w;    /* resize_box only: source columns per destination column */
    int32_t vec;      /* resize_box only: destination elements per thread (1, or 16 bytes) */
    int32_t reserved2;
} GoResizeParams;

/* Filter storage orders of GoConvParams.filter_layout (and of the filter gradient that
 * conv2d_backprop_filter_reduce writes). */
#define GO_FILTER_HWIO 0 /* [kh, kw, ci/groups, co] (TensorFlow's) */
#define GO_FILTER_OIHW 1 /* [co, ci/groups, kh, kw] (PyTorch's) */

/* GoConvParams.f32_precision: how the f32 tensor-core kernels multiply (ignored by every
 * other kernel and type). EXACT: 3xTF32 (SPEC's f32 tolerance); TF32: one TF32 product
 * (big*big), the opt-in of Conv2dAttrs::f32_precision. */
#define GO_F32_PRECISION_EXACT 0
#define GO_F32_PRECISION_TF32 1

/* conv2d_forward_<dtype> and conv2d_backprop_input_<dtype>.
 * x: [n, ci, hi, wi], filter HWIO [kh, kw, ci/groups, co] or OIHW [co, ci/groups, kh, kw]
 * (filter_layout), y: [n, co, ho, wo] (layout).
 * forward reads x, w and writes y; backprop_input reads y (= dy), w and writes x (= dx).
 * y = oy*sh - pad_top + ky*dh, x = ox*sw - pad_left + kx*dw.
 * forward launch: block (256,1,1), grid.x any (grid-stride over all outputs).
 * backprop_input launch: block (256,1,1), grid.x any (strides over pixel tiles of one
 * stride phase), grid.y any (strides over channel tiles x groups), grid.z any (strides
 * over the sh*sw stride phases). */
typedef struct GoConvParams {
    uint64_t x;
    uint64_t w;
    uint64_t y;
    int64_t n;
    int64_t ci;
    int64_t hi;
    int64_t wi;
    int64_t co;
    int64_t ho;
    int64_t wo;
    int64_t kh;
    int64_t kw;
    int64_t sh;
    int64_t sw;
    int64_t dh;
    int64_t dw;
    int64_t pad_top;
    int64_t pad_left;
    int64_t groups;
    int32_t layout;
    int32_t filter_layout; /* GO_FILTER_HWIO or GO_FILTER_OIHW */
    int32_t f32_precision; /* GO_F32_PRECISION_*: conv2d_*_tc_f32 only */
    int32_t reserved;
} GoConvParams;

/* conv2d_backprop_filter_partial_<dtype> and conv2d_backprop_filter_reduce_<dtype>
 * (Conv2DBackpropFilter, deterministic split-K).
 * x: [n, ci, hi, wi], dy: [n, co, ho, wo] (layout); the reduction runs over the
 * R = n*ho*wo output pixels (r = (n*ho + oy)*wo + ox), cut into `splits` ranges of
 * `split_len` pixels (the last ones may be short or empty).
 * partial: ws[s][((ky*kw + kx)*cig + c)*co + o] (Acc: float for f16, else T) = the sum
 *   over split s's pixels, ascending, of x[n, g*cig + c, iy, ix] * dy[n, o, oy, ox],
 *   g = o / (co/groups), iy = oy*sh - pad_top + ky*dh (0 outside the image). Every ws
 *   element of every split is written (0 for an empty split).
 *   Launch: block (256,1,1), grid.x any (strides over groups x filter-row tiles x channel
 *   tiles), grid.y any (strides over the splits).
 * reduce: out (T, filter_layout order, kh*kw*cig*co elements) = the sum of the splits'
 *   ws, s ascending, rounded once (splits = 0: zeros; ws unused).
 *   Launch: block (256,1,1), grid.x any (grid-stride over out). */
typedef struct GoConvFilterParams {
    uint64_t x;
    uint64_t dy;
    uint64_t ws;
    uint64_t out;
    int64_t n;
    int64_t ci;
    int64_t hi;
    int64_t wi;
    int64_t co;
    int64_t ho;
    int64_t wo;
    int64_t kh;
    int64_t kw;
    int64_t sh;
    int64_t sw;
    int64_t dh;
    int64_t dw;
    int64_t pad_top;
    int64_t pad_left;
    int64_t groups;
    int64_t splits;
    int64_t split_len;
    int32_t layout;
    int32_t filter_layout;
} GoConvFilterParams;

/* max_pool_forward_<dtype>: y and argmax [n, c, ho, wo] from x [n, c, hi, wi].
 *   argmax is the flat index into x (batch included, in x's layout), -1 for a window
 *   with no in-bounds cell (its y is the lowest finite value of T).
 * max_pool_grad_<dtype>: dx [n, c, hi, wi] from x and dy (argmax recomputed, TF rule).
 * max_pool_grad_argmax_<dtype>: dx from dy and argmax (x unused).
 * The forwards write argmax only when it is non-zero (a caller that does not keep it
 * passes 0).
 * Window (oy, ox) covers rows oy*sh - pad_top + [0, kh), cols ox*sw - pad_left + [0, kw).
 * Launch: block (256,1,1), grid.x any (grid-stride over all outputs).
 *
 * max_pool_tile_forward_<dtype>, max_pool_tile_grad_<dtype>,
 * max_pool_tile_grad_argmax_<dtype>: the same results by tiles of tile_h x tile_w x
 * tile_c (rows, columns, channels) of one image, staged in shared memory: the x cells
 * the tile's windows cover, each window's argmax (found once per tile, TF rule), the
 * windows' dy. The grads then gather in the same window order as the generic kernels.
 * In-image index math is 32-bit (the host checks c*hi*wi and c*ho*wo fit an int32).
 * The host sizes the tile so that its staging fits GO_POOL_TILE_SMEM.
 * Launch: block (256,1,1), grid.x any (grid-stride over all tiles).
 * max_pool_tile_k3_*: the same, with the window scans and gathers unrolled for windows of
 * at most 3x3.
 *
 * max_pool_direct_k3_forward_<dtype>: the forward for windows of at most 3x3, one thread
 * per output reading x through the read-only cache. Launch: block (256,1,1) split in the
 * kernel into gx lanes across an output row's inner run (wo, or wo*c for NHWC) and 256/gx
 * rows (go_row_lanes); grid.x strides over the run, grid.y over the rows (n*c*ho or n*ho,
 * which the host checks fit 32 bits). */
#define GO_POOL_TILE_SMEM 45056
typedef struct GoPoolParams {
    uint64_t x;      /* const T* */
    uint64_t y;      /* T* (forward) */
    uint64_t argmax; /* int64_t* (forward writes, grad_argmax reads) */
    uint64_t dy;     /* const T* (grads) */
    uint64_t dx;     /* T* (grads) */
    int64_t n;
    int64_t c;
    int64_t hi;
    int64_t wi;
    int64_t ho;
    int64_t wo;
    int64_t kh;
    int64_t kw;
    int64_t sh;
    int64_t sw;
    int64_t pad_top;
    int64_t pad_left;
    int32_t layout;
    int32_t reserved;
    int32_t tile_h; /* tiled kernels only: rows per tile (dx rows for the grads, y rows
                       for the forward) */
    int32_t tile_w; /* tiled kernels only: columns per tile */
    int32_t tile_c; /* tiled kernels only: channels per tile (1 for NCHW) */
    int32_t reserved2;
} GoPoolParams;

#endif /* GRADOPS_PARAMS_H */

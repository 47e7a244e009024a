// Tensor-core implicit GEMM shared by conv2d_backprop_input and conv2d_forward. Compiled
// into the compute_80+ images and the emulator only (GO_HAS_TC); the compute_75 image keeps
// the FFMA kernels of conv.cu. Per element type (GoTcTraits):
//   f16, bf16: mma.sync m16n8k16, f32 accumulation, each output rounded once;
//   f32:       3xTF32 on mma.sync m16n8k8: a = big + small (big = tf32(a), small =
//              tf32(a - big)); small*big + big*small + big*big into f32 accumulators
//              (small*small, ~2^-22 relative, is dropped); with p.f32_precision ==
//              GO_F32_PRECISION_TF32 (the TF32 opt-in) only big*big (plain TF32);
//   f64:       mma.sync m8n8k4 on the FP64 tensor cores.
// Shared memory has the same byte geometry for every type: rows of 16-byte chunks, 64
// bytes of data (GO_TC_TILE_K 16-bit elements, 16 f32 or 8 f64) padded to 80.
//
// One GEMM per (stride phase, group): out[m, nn] = sum over taps, then over the reduction
// channels j of the tap, of A[m, (tap, j)] * B[(tap, j), nn], where
//   backprop_input: m = a dx pixel of the phase, nn = a channel c of the group,
//                   j = an output channel o, A = dy gathered at the tap's offset, B = W;
//                   only taps that reach the phase (ky*dh = ry mod sh) are visited;
//   forward:        m = an output pixel, nn = an output channel o, j = an input channel c,
//                   A = x gathered at (oy*sh - top + ky*dh, ...), B = W.
// A block tile is GO_TC_TILE_M pixels x GO_TC_TILE_N channels, reduced in chunks of
// GoTcTraits<T>::BK over (tap, j) through a GO_TC_STAGES-deep cp.async pipeline. Shared
// memory holds A as [m][k] and B as [nn][k] (k contiguous, rows padded to 80 bytes so
// the 8 rows of an ldmatrix fall in distinct banks); warps read fragments with ldmatrix
// (16-bit types; f32 and f64 fragments are plain shared loads) and run mma.sync. A chunk
// of VEC = 16 bytes of consecutive k is one cp.async where the source is contiguous and
// aligned (NHWC activations with channel counts divisible by VEC; the HWIO filter of
// backprop_input), else VEC scalar loads packed into one 16-byte shared store (NCHW:
// threads walk pixels, so the loads coalesce and the tile is transposed on its way into
// shared memory). The reduction is walked by a cursor (GoTcCursor: tap, first channel, and
// the source and filter offsets they make), advanced by additions only, and every offset
// that does not change along the reduction is taken once per tile (GoTcRows): the first
// version divided by the chunk count and the taps in 64 bits on every stage (949 SASS
// instructions per 16 HMMA in its sm_90 main loop, about 510 now).
// The forward's HWIO filter is contiguous along nn instead: B is then staged [k][nn]
// (16-byte copies along nn) and read with ldmatrix.trans (BKN). The epilogue stages the
// rounded tile through shared memory ([nn][m] for NCHW, [m][nn] for NHWC) and writes it with
// threads walking the layout's innermost dimension (pixels for NCHW, channels for NHWC).
// Deterministic: each output written once by one thread, the reduction order fixed (taps
// ascending, then j ascending, one mma's k at a time).
#pragma once

#include "mma.cuh"

#if GO_HAS_TC

#define TC_BM GO_TC_TILE_M
#define TC_BN GO_TC_TILE_N
#define TC_WM GO_TC_WARP_M
#define TC_WN GO_TC_WARP_N
#define TC_STAGES GO_TC_STAGES
// The lean kernels' pipeline depth (go_tc_tile_vec): one stage more than the general
// tile's, since their main loop has little else to hide the copies' latency behind (ncu on
// an H200, W4 f16 at three stages: 9.6 cycles between a warp's instructions, 60% of the
// scheduler's cycles with no eligible warp; four were 0-6% faster, BENCHMARKS.md). Four
// stages and the epilogue tile fit the 48 KB of static shared memory for every type.
#define TC_VSTAGES 4
#define TC_THREADS GO_TC_BLOCK_THREADS
#define TC_NFRAG (TC_WN / 8)
// Bytes of one shared-memory row of a stage: 64 of data, 16 of padding, so the 8 rows an
// ldmatrix (or a fragment's 8 lanes groups) reads fall in distinct banks.
#define TC_ROW_BYTES 80
#define TC_STAGE_BYTES ((TC_BM + TC_BN) * TC_ROW_BYTES)
// The tall kernel's A chunks per thread per pixel row: 2, two threads a row, two rows a
// thread, so that each copy instruction of a warp reads 16 rows' whole 32-byte sectors. At
// 4 (one thread a row: one row pointer and mask) each read half sectors of 32 rows and the
// tile ran W4 25% slower than the wide tile; at 2, W4 within 2% of it and W5 12% faster
// (each against the wide tile in its own H200 runs, 2026-11-27, BENCHMARKS.md).
#define GO_TC_TALL_ROW_CHUNKS 2

// Per element type: shared-memory element S, reduction chunk BK (64 bytes of S), elements
// per 16-byte copy VEC, row stride LD (80 bytes), accumulator Acc, the mma's rows FM and
// accumulator registers CE per n8 fragment, fragments per warp tile MF.
// Staging (GoTcRegs): strided (NCHW) chunks held in registers for one main-loop iteration
// instead of stored as soon as loaded, which hides their loads' latency behind a stage of
// mma but costs registers. Measured on an H100 (2026-11-26, W4 f16 NCHW): 0.167 ms at two
// blocks per SM without it, 0.145 with it (225 registers), 0.130 at three blocks (168
// registers, which leaves no room for it). So backprop_input stages for f32 and f64 (two
// blocks per SM either way) but not for f16/bf16 (three blocks, GO_TC_BOUNDS_3); the
// forward keeps two blocks for every type (at three its 16-bit kernel spills) and stages.
template <typename T> struct GoTcTraits;
template <> struct GoTcTraits<__half> {
    typedef uint16_t S; typedef float Acc;
    static constexpr int BK = 32, FM = 16, CE = 4;
    static constexpr bool STAGED_BACKPROP = false;
};
template <> struct GoTcTraits<__nv_bfloat16> {
    typedef uint16_t S; typedef float Acc;
    static constexpr int BK = 32, FM = 16, CE = 4;
    static constexpr bool STAGED_BACKPROP = false;
};
template <> struct GoTcTraits<float> {
    typedef float S; typedef float Acc;
    static constexpr int BK = 16, FM = 16, CE = 4;
    static constexpr bool STAGED_BACKPROP = true;
};
template <> struct GoTcTraits<double> {
    typedef double S; typedef double Acc;
    static constexpr int BK = 8, FM = 8, CE = 2;
    static constexpr bool STAGED_BACKPROP = true;
};
template <typename T> struct GoTcGeom {
    typedef GoTcTraits<T> Tr;
    static constexpr int VEC = 16 / (int)sizeof(typename Tr::S);
    static constexpr int LD = TC_ROW_BYTES / (int)sizeof(typename Tr::S);
    static constexpr int MF = TC_WM / Tr::FM;
    static constexpr int CLD = TC_BN + VEC;  // epilogue row, in S
    // B stored [k][nn] (BKN: the forward's HWIO filter, contiguous along nn): row stride in
    // S, padded so a fragment's 8 rows (or k values) fall in distinct banks.
    static constexpr int LDKN = TC_BN + (sizeof(typename Tr::S) == 8 ? 4 : 8);
    static constexpr int SMEM_BYTES =
        TC_STAGES * TC_STAGE_BYTES > TC_BM * CLD * (int)sizeof(typename Tr::S)
            ? TC_STAGES * TC_STAGE_BYTES
            : TC_BM * CLD * (int)sizeof(typename Tr::S);
};

// A warp's accumulators: m-fragment i of GoTcTraits<T>::FM rows, n8 fragment j, CE
// registers each.
// WM: the warp tile's rows (TC_WM, or GO_TC_TALL_WARP_M for the tall and square kernels);
// WN its channels (TC_WN, or GO_TC_SQUARE_WARP_N).
template <typename T, int WM = TC_WM, int WN = TC_WN>
using GoTcAcc = typename GoTcTraits<T>::Acc[WM / GoTcTraits<T>::FM][WN / 8][GoTcTraits<T>::CE];

template <typename T, int WM = TC_WM, int WN = TC_WN>
GO_DEV void go_tc_acc_zero(GoTcAcc<T, WM, WN>& acc) {
#pragma unroll
    for (int i = 0; i < WM / GoTcTraits<T>::FM; ++i)
#pragma unroll
        for (int j = 0; j < WN / 8; ++j)
#pragma unroll
            for (int e = 0; e < GoTcTraits<T>::CE; ++e)
                acc[i][j][e] = typename GoTcTraits<T>::Acc(0);
}

static_assert(TC_THREADS == 32 * (TC_BM / TC_WM) * (TC_BN / TC_WN), "one warp per warp tile");
static_assert(TC_BM * 4 == 2 * TC_THREADS && TC_BN * 4 == 2 * TC_THREADS,
              "each thread loads two of the 4 x 16-byte chunks per row of A and of B per stage");
static_assert(TC_WN % 16 == 0 && TC_WM % 16 == 0, "mma/ldmatrix shapes");
static_assert(GoTcTraits<__half>::BK * GoTcGeom<__half>::LDKN * 2 <= TC_BN * TC_ROW_BYTES &&
                  GoTcTraits<float>::BK * GoTcGeom<float>::LDKN * 4 <= TC_BN * TC_ROW_BYTES &&
                  GoTcTraits<double>::BK * GoTcGeom<double>::LDKN * 8 <= TC_BN * TC_ROW_BYTES,
              "a [k][nn] B stage fits the [nn][k] one");

// An element as its shared-memory value (GoTcTraits<T>::S) and back.
GO_DEV uint16_t go_bits(__half v) { return __half_as_ushort(v); }
GO_DEV uint16_t go_bits(__nv_bfloat16 v) { return __bfloat16_as_ushort(v); }
GO_DEV float go_bits(float v) { return v; }
GO_DEV double go_bits(double v) { return v; }
template <typename T> GO_DEV T go_from_bits(typename GoTcTraits<T>::S b);
template <> GO_DEV __half go_from_bits<__half>(uint16_t b) { return __ushort_as_half(b); }
template <> GO_DEV __nv_bfloat16 go_from_bits<__nv_bfloat16>(uint16_t b) {
    return __ushort_as_bfloat16(b);
}
template <> GO_DEV float go_from_bits<float>(float b) { return b; }
template <> GO_DEV double go_from_bits<double>(double b) { return b; }

// One (phase, group) GEMM, as element offsets and strides (see the file comment).
struct GoTcProblem {
    go_i64 cnt_y, cnt_x, npix;        // pixel space: npix = n * cnt_y * cnt_x
    go_i64 a_n, a_row, a_col, a_j;    // A source strides: image, row, column, channel j
    go_i64 a_off;                     // offset of the group's first j channel
    go_i64 a_h, a_w, a_sy, a_sx;      // source size; pixel (a, b) reads row a*a_sy + tap_y
    go_i64 jlen;                      // j channels per tap
    go_i64 ntx, ntaps;                // taps: index i -> (i / ntx, i % ntx)
    go_i64 ky0, pky, kx0, pkx;        // tap row index iy -> ky = ky0 + iy*pky (same for x)
    go_i64 ty0, tdy, tx0, tdx;        // tap row index iy -> source row offset ty0 + iy*tdy
    go_i64 b_ky, b_kx, b_j, b_n, b_off;  // W offset of (ky, kx, j, nn) and the group's nn = 0
    go_i64 nlen;                      // output channels of the group
    go_i64 o_n, o_row, o_col, o_c, o_off;  // output strides and the group's first channel
    go_i64 o_y0, o_sy, o_x0, o_sx;    // pixel (a, b) -> output (o_y0 + a*o_sy, o_x0 + b*o_sx)
};

// Strides (image, row, column, channel) of a [n, c, h, w] tensor in layout L.
template <int L>
GO_DEV void go_tc_strides(go_i64 c, go_i64 h, go_i64 w, go_i64* sn, go_i64* sr, go_i64* sc,
                          go_i64* sj) {
    *sn = c * h * w;
    if (L == GO_LAYOUT_NCHW) { *sr = w; *sc = 1; *sj = h * w; }
    else { *sr = w * c; *sc = c; *sj = 1; }
}

// backprop_input's GEMM for phase ph and group g.
template <int L>
GO_DEV GoTcProblem go_tc_backprop_problem(const GoConvParams& p, go_i64 ph, go_i64 g) {
    GoTcProblem P;
    const go_i64 cig = p.ci / p.groups, cog = p.co / p.groups;
    const GoFilterStrides fs = go_filter_strides(p);
    go_i64 ry, rx;
    go_conv_phase(p, ph, &ry, &rx);
    const go_i64 y0 = go_mod(ry - p.pad_top, p.sh), x0 = go_mod(rx - p.pad_left, p.sw);
    P.cnt_y = y0 < p.hi ? (p.hi - y0 + p.sh - 1) / p.sh : 0;
    P.cnt_x = x0 < p.wi ? (p.wi - x0 + p.sw - 1) / p.sw : 0;
    P.npix = p.n * P.cnt_y * P.cnt_x;
    go_tc_strides<L>(p.co, p.ho, p.wo, &P.a_n, &P.a_row, &P.a_col, &P.a_j);
    P.a_off = g * cog * P.a_j;
    P.a_h = p.ho; P.a_w = p.wo; P.a_sy = 1; P.a_sx = 1;
    P.jlen = cog;
    const go_i64 nty = go_conv_phase_taps(ry, p.sh, p.dh, p.kh, &P.ky0, &P.pky);
    P.ntx = go_conv_phase_taps(rx, p.sw, p.dw, p.kw, &P.kx0, &P.pkx);
    P.ntaps = nty * P.ntx;
    // Tap ky reaches dy row t + (y0 + top - ky*dh)/sh from the phase's row t (exact).
    P.ty0 = (y0 + p.pad_top - P.ky0 * p.dh) / p.sh; P.tdy = -(P.pky * p.dh) / p.sh;
    P.tx0 = (x0 + p.pad_left - P.kx0 * p.dw) / p.sw; P.tdx = -(P.pkx * p.dw) / p.sw;
    P.b_ky = fs.ky; P.b_kx = fs.kx; P.b_j = fs.o; P.b_n = fs.c;
    P.b_off = g * cog * fs.o;
    P.nlen = cig;
    go_tc_strides<L>(p.ci, p.hi, p.wi, &P.o_n, &P.o_row, &P.o_col, &P.o_c);
    P.o_off = g * cig * P.o_c;
    P.o_y0 = y0; P.o_sy = p.sh; P.o_x0 = x0; P.o_sx = p.sw;
    return P;
}

// forward's GEMM for group g (a single phase: every output pixel, every tap).
template <int L>
GO_DEV GoTcProblem go_tc_forward_problem(const GoConvParams& p, go_i64 g) {
    GoTcProblem P;
    const go_i64 cig = p.ci / p.groups, cog = p.co / p.groups;
    const GoFilterStrides fs = go_filter_strides(p);
    P.cnt_y = p.ho; P.cnt_x = p.wo;
    P.npix = p.n * p.ho * p.wo;
    go_tc_strides<L>(p.ci, p.hi, p.wi, &P.a_n, &P.a_row, &P.a_col, &P.a_j);
    P.a_off = g * cig * P.a_j;
    P.a_h = p.hi; P.a_w = p.wi; P.a_sy = p.sh; P.a_sx = p.sw;
    P.jlen = cig;
    P.ntx = p.kw;
    P.ntaps = p.kh * p.kw;
    P.ky0 = 0; P.pky = 1; P.kx0 = 0; P.pkx = 1;
    P.ty0 = -p.pad_top; P.tdy = p.dh; P.tx0 = -p.pad_left; P.tdx = p.dw;
    P.b_ky = fs.ky; P.b_kx = fs.kx; P.b_j = fs.c; P.b_n = fs.o;
    P.b_off = g * cog * fs.o;
    P.nlen = cog;
    go_tc_strides<L>(p.co, p.ho, p.wo, &P.o_n, &P.o_row, &P.o_col, &P.o_c);
    P.o_off = g * cog * P.o_c;
    P.o_y0 = 0; P.o_sy = 1; P.o_x0 = 0; P.o_sx = 1;
    return P;
}

// What one thread loads for the whole tile: two 16-byte chunks of A (pixels) and two of
// B (filter), everything that does not change along the reduction taken once per tile.
struct GoTcRows {
    go_i64 abase[2];  // A: source offset of the chunk's pixel and first j (the tap's apart)
    go_i64 y[2], x[2];  // A: a*a_sy, b*a_sx (the tap's offset is added per stage)
    go_i64 boff[2];   // B: offset of the chunk's (nn, k) within a stage's (tap, j0)
    int adst[2], bdst[2];  // the chunks' element offsets within a stage
    int akg[2];       // A: the chunk's first k within a stage
    int bk[2], bn[2];  // B: the chunk's first k and nn within the stage and tile
    bool ok[2];       // A: the pixel exists
};

// The reduction chunk the next go_tc_gather fetches: tap (iy, ix) and its first channel
// j0. Advanced chunk by chunk (taps ascending, then j) so the main loop divides nothing.
struct GoTcCursor {
    go_i64 aoff;          // A: tap_y * a_row + tap_x * a_col + j0 * a_j
    go_i64 boff;          // B: ky * b_ky + kx * b_kx + b_off + j0 * b_j
    go_i64 tap_y, tap_x;  // the tap's source row and column offsets
    go_i64 j0;            // first j of the chunk
    go_i64 ix;            // tap column index (0 .. ntx)
    go_i64 ky, kx;        // the tap's filter indices
};

GO_DEV void go_tc_cursor_tap(const GoTcProblem& P, GoTcCursor& C) {
    C.j0 = 0;
    C.aoff = C.tap_y * P.a_row + C.tap_x * P.a_col;
    C.boff = C.ky * P.b_ky + C.kx * P.b_kx + P.b_off;
}

GO_DEV void go_tc_cursor_start(const GoTcProblem& P, GoTcCursor& C) {
    C.ix = 0;
    C.tap_y = P.ty0; C.tap_x = P.tx0; C.ky = P.ky0; C.kx = P.kx0;
    go_tc_cursor_tap(P, C);
}

template <int BK>
GO_DEV void go_tc_cursor_next(const GoTcProblem& P, GoTcCursor& C) {
    C.j0 += BK;
    if (C.j0 < P.jlen) {
        C.aoff += BK * P.a_j;
        C.boff += BK * P.b_j;
        return;
    }
    if (++C.ix == P.ntx) {
        C.ix = 0; C.tap_x = P.tx0; C.kx = P.kx0;
        C.tap_y += P.tdy; C.ky += P.pky;
    } else {
        C.tap_x += P.tdx; C.kx += P.pkx;
    }
    go_tc_cursor_tap(P, C);
}

// A chunk of VEC elements stored as one 16-byte shared-memory write (dst 16-byte aligned:
// rows of 80 bytes, chunks at multiples of 16), instead of VEC narrow ones.
template <typename S>
GO_DEV void go_tc_store_chunk(S* dst, const S (&v)[16 / sizeof(S)]) {
#ifdef __CUDACC__
    uint4 u;
    memcpy(&u, v, 16);
    *reinterpret_cast<uint4*>(dst) = u;
#else
    std::memcpy(dst, v, 16);
#endif
}

// Four 32-bit words to a 16-byte aligned chunk of shared memory in one store. (A uint4
// store through a pointer came out as four 32-bit ones.)
GO_DEV void go_st_shared_words4(void* dst, uint32_t a, uint32_t b, uint32_t c, uint32_t d) {
#if defined(__CUDA_ARCH__)
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(go_smem_addr(dst)), "r"(a),
                 "r"(b), "r"(c), "r"(d));
#else
    const uint32_t words[4] = {a, b, c, d};
    std::memcpy(dst, words, 16);
#endif
}

// Four 32-bit words from a 16-byte aligned chunk of global memory in one read-only load
// (volatile: issued where written, e.g. before a tile's wgmma, whose results they wait
// for only where used.)
GO_DEV void go_ldg_words4(const void* src, uint32_t (&w)[4]) {
#if defined(__CUDA_ARCH__)
    asm volatile("ld.global.nc.v4.b32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
                 : "l"(src));
#else
    std::memcpy(w, src, 16);
#endif
}
// One 32-bit word of global memory, read-only, as go_ldg_words4.
GO_DEV uint32_t go_ldg_word(const void* src) {
    uint32_t w;
#if defined(__CUDA_ARCH__)
    asm volatile("ld.global.nc.b32 %0, [%1];\n" : "=r"(w) : "l"(src));
#else
    std::memcpy(&w, src, 4);
#endif
    return w;
}

// p, its provenance hidden from the optimizer: a base the loads after it offset in one
// multiply-add each (nvcc re-derived a sum of 64-bit offsets for each of them).
template <typename T>
GO_DEV const T* go_opaque_ptr(const T* p) {
#if defined(__CUDA_ARCH__)
    asm("mov.b64 %0, %0;\n" : "+l"(p));
#endif
    return p;
}

// The strided (scalar) chunks of one reduction chunk, gathered into registers by
// go_tc_gather and written to their stage by go_tc_put one main-loop iteration later, so
// the loads' latency is hidden behind a stage of mma (cp.async chunks need no such help).
// Chunk i: A chunks 0, 1 and B chunks 2, 3; bit i of `pend` says it is held here.
// 16-bit elements are held one per 32-bit register (as loaded): packing two into one
// would wait for both loads right there.
template <typename S> struct GoTcWide { typedef S type; };
template <> struct GoTcWide<uint16_t> { typedef uint32_t type; };
template <typename T> struct GoTcRegs {
    typename GoTcWide<typename GoTcTraits<T>::S>::type v[4][GoTcGeom<T>::VEC];
    int pend;
};

// Writes G's chunk i to dst (one 16-byte shared store) and marks it written.
template <typename T>
GO_DEV void go_tc_put_one(GoTcRegs<T>& G, int i, typename GoTcTraits<T>::S* dst) {
    typedef typename GoTcTraits<T>::S S;
    constexpr int VEC = GoTcGeom<T>::VEC;
    S v[VEC];
#pragma unroll
    for (int e = 0; e < VEC; ++e) v[e] = (S)G.v[i][e];
    go_tc_store_chunk(dst, v);
    G.pend &= ~(1 << i);
}

// Writes G's pending strided chunks to their stage (STAGE; unstaged kernels store each
// chunk as it is gathered, and nothing is pending here).
template <typename T, bool STAGE>
GO_DEV void go_tc_put(GoTcRegs<T>& G, const GoTcRows& R, typename GoTcTraits<T>::S* As,
                      typename GoTcTraits<T>::S* Bs) {
    if constexpr (STAGE) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
            if (G.pend & (1 << i)) go_tc_put_one<T>(G, i, i < 2 ? As + R.adst[i] : Bs + R.bdst[i - 2]);
    }
}

// Gathers the cursor's reduction chunk: 16-byte runs as cp.async straight into the stage
// (A [TC_BM][LD] and B [TC_BN][LD], or B [BK][LDKN] when BKN; elements S), strided ones
// into G (see GoTcRegs).
template <typename T, int L, bool BKN, bool STAGE>
GO_DEV void go_tc_gather(const GoTcProblem& P, const T* __restrict__ src,
                         const T* __restrict__ w, const GoTcRows& R, const GoTcCursor& C,
                         go_i64 n_base, bool avec, bool bvec,
                         typename GoTcTraits<T>::S* As, typename GoTcTraits<T>::S* Bs,
                         GoTcRegs<T>& G) {
    constexpr int VEC = GoTcGeom<T>::VEC;
    G.pend = 0;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const go_i64 jrem = P.jlen - (C.j0 + R.akg[r]);  // j channels left from here
        const go_i64 sy = R.y[r] + C.tap_y, sx = R.x[r] + C.tap_x;
        const bool in = R.ok[r] && sy >= 0 && sy < P.a_h && sx >= 0 && sx < P.a_w;
        const go_i64 off = R.abase[r] + C.aoff;
        if (avec && jrem >= VEC) {
            go_cp_async_16(As + R.adst[r], in ? src + off : src, in ? 16 : 0);
        } else {
            // Strided (NCHW: a_j is a channel plane): a pointer stepped along j.
            const go_i64 aj = P.a_j;
            const T* sp = src + (in ? off : 0);
#pragma unroll
            for (int e = 0; e < VEC; ++e, sp += aj) {
                G.v[r][e] = 0;
                if (in && e < jrem) G.v[r][e] = go_bits(go_ldg(sp));
            }
            G.pend |= 1 << r;
            if constexpr (!STAGE) go_tc_put_one<T>(G, r, As + R.adst[r]);
        }
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        // B [k][nn] (BKN): VEC consecutive nn of one k; else [nn][k]: VEC consecutive k of
        // one nn (16-byte copies where the filter is contiguous along them).
        const go_i64 j = C.j0 + R.bk[r];
        const go_i64 off = C.boff + R.boff[r];
        const bool in = BKN ? j < P.jlen : n_base + R.bn[r] < P.nlen;
        const go_i64 rem = BKN ? P.nlen - (n_base + R.bn[r]) : P.jlen - j;
        if (bvec && rem >= VEC) {
            go_cp_async_16(Bs + R.bdst[r], in ? w + off : w, in ? 16 : 0);
        } else {
            const go_i64 step = BKN ? P.b_n : P.b_j;
            const T* sp = w + (in ? off : 0);
#pragma unroll
            for (int e = 0; e < VEC; ++e, sp += step) {
                G.v[2 + r][e] = 0;
                if (in && e < rem) G.v[2 + r][e] = go_bits(go_ldg(sp));
            }
            G.pend |= 1 << (2 + r);
            if constexpr (!STAGE) go_tc_put_one<T>(G, 2 + r, Bs + R.bdst[r]);
        }
    }
}


// The warp's share of one stage: acc[i][j] (m-fragment i of GoTcTraits<T>::FM rows, n8
// fragment j) += A[warp rows][0, BK) * B[0, BK)[warp channels]. TF32 (f32 only): one
// TF32 product per term (big*big) instead of 3xTF32. A is staged [m][k] (row stride LD),
// or [k][m] with AKM (row stride LDKN: the NHWC filter gradient, whose A rows are
// contiguous along m); B [nn][k], or [k][nn] with BKN.
template <typename T, bool BKN, bool TF32, bool AKM = false, int WM = TC_WM, int WN = TC_WN>
GO_DEV void go_tc_stage_mma(const typename GoTcTraits<T>::S* as,
                            const typename GoTcTraits<T>::S* bs, int wm, int wn, int lane,
                            GoTcAcc<T, WM, WN>& acc) {
    constexpr int BK = GoTcTraits<T>::BK, LD = GoTcGeom<T>::LD, MF = WM / GoTcTraits<T>::FM;
    constexpr int LDKN = GoTcGeom<T>::LDKN, NF = WN / 8;
    const int g = lane / 4, tq = lane % 4;
    if constexpr (sizeof(typename GoTcTraits<T>::S) == 2) {
        typedef typename GoMmaKind<T>::type Kind;
#pragma unroll
        for (int ks = 0; ks < BK; ks += 16) {
            uint32_t af[MF][4], bf[NF][2];
#pragma unroll
            for (int i = 0; i < MF; ++i) {
                if constexpr (AKM)  // [k][m]: matrices (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), ...
                    go_ldmatrix_x4_trans(af[i], as + (ks + lane % 8 + (lane / 16) * 8) * LDKN +
                                                    wm * WM + i * 16 + ((lane / 8) % 2) * 8);
                else
                    go_ldmatrix_x4(af[i], as + (wm * WM + i * 16 + lane % 16) * LD + ks +
                                              (lane / 16) * 8);
            }
#pragma unroll
            for (int j = 0; j < NF; j += 2) {
                uint32_t r[4];
                if constexpr (BKN)  // [k][nn]: the transposing load gives B's column fragments
                    go_ldmatrix_x4_trans(r, bs + (ks + lane % 8 + ((lane / 8) % 2) * 8) * LDKN +
                                                wn * WN + j * 8 + (lane / 16) * 8);
                else
                    go_ldmatrix_x4(r, bs + (wn * WN + j * 8 + lane % 8 + (lane / 16) * 8) * LD +
                                          ks + ((lane / 8) % 2) * 8);
                bf[j][0] = r[0]; bf[j][1] = r[1];
                bf[j + 1][0] = r[2]; bf[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MF; ++i)
#pragma unroll
                for (int j = 0; j < NF; ++j)
                    go_mma_m16n8k16(Kind(), acc[i][j], af[i], bf[j], acc[i][j]);
        }
    } else if constexpr (sizeof(typename GoTcTraits<T>::S) == 4) {
        // 3xTF32 (or plain TF32). Fragments are plain loads: lanes g*4 + tq read row g,
        // column tq (the 80-byte rows put the 8 rows x 4 columns in 32 distinct banks).
#pragma unroll
        for (int ks = 0; ks < BK; ks += 8) {
            uint32_t ab[MF][4], asm_[MF][4], bb[NF][2], bsm[NF][2];
#pragma unroll
            for (int i = 0; i < MF; ++i)
#pragma unroll
                for (int e = 0; e < 4; ++e) {
                    const int m = wm * WM + i * 16 + g + (e % 2) * 8, k = ks + tq + (e / 2) * 4;
                    const float v = AKM ? as[k * LDKN + m] : as[m * LD + k];
                    ab[i][e] = go_cvt_tf32(v);
                    if constexpr (!TF32) asm_[i][e] = go_cvt_tf32(v - go_u32_as_f32(ab[i][e]));
                }
#pragma unroll
            for (int j = 0; j < NF; ++j)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const int n = wn * WN + j * 8 + g, k = ks + tq + e * 4;
                    const float v = BKN ? bs[k * LDKN + n] : bs[n * LD + k];
                    bb[j][e] = go_cvt_tf32(v);
                    if constexpr (!TF32) bsm[j][e] = go_cvt_tf32(v - go_u32_as_f32(bb[j][e]));
                }
#pragma unroll
            for (int i = 0; i < MF; ++i)
#pragma unroll
                for (int j = 0; j < NF; ++j) {
                    if constexpr (!TF32) {
                        // The small cross terms first, then the big product (CUTLASS's order).
                        go_mma_m16n8k8_tf32(acc[i][j], asm_[i], bb[j], acc[i][j]);
                        go_mma_m16n8k8_tf32(acc[i][j], ab[i], bsm[j], acc[i][j]);
                    }
                    go_mma_m16n8k8_tf32(acc[i][j], ab[i], bb[j], acc[i][j]);
                }
        }
    } else {
        // f64, m8n8k4: lane g*4 + tq holds A[g][tq] and B[tq][g].
#pragma unroll
        for (int ks = 0; ks < BK; ks += 4) {
            double af[MF], bf[NF];
#pragma unroll
            for (int i = 0; i < MF; ++i) {
                const int m = wm * WM + i * 8 + g, k = ks + tq;
                af[i] = AKM ? as[k * LDKN + m] : as[m * LD + k];
            }
#pragma unroll
            for (int j = 0; j < NF; ++j) {
                const int n = wn * WN + j * 8 + g, k = ks + tq;
                bf[j] = BKN ? bs[k * LDKN + n] : bs[n * LD + k];
            }
#pragma unroll
            for (int i = 0; i < MF; ++i)
#pragma unroll
                for (int j = 0; j < NF; ++j)
                    go_mma_m8n8k4_f64(acc[i][j], af[i], bf[j], acc[i][j]);
        }
    }
}

#if GO_HAS_WGMMA
// The wgmma tile's N-major B stage (the forward's, BKN): two 32-channel columns of atoms,
// each BK = 32 k rows of 64 bytes (2048 bytes: the descriptor's leading byte offset).
#define GO_TC_WGMMA_BKN_COLUMN_BYTES 2048

// The warpgroup's share of one stage on the wgmma tile: its 64 rows of A (from row 64 * wg)
// times B's 64 channels, one wgmma group. 16-bit types: BK = 32 k in two m64n64k16; A is
// staged K-major in the 64-byte swizzle (go_tc_tile_vec's WG), B K-major too ([nn][k]) or,
// for BKN ([k][nn]), N-major (two columns of atoms, GO_TC_WGMMA_BKN_COLUMN_BYTES apart; the
// second k16 two atoms on). f32: BK = 16 k in two k8 steps of m64n64k8 tf32 (the same 32
// bytes of each row), both operands K-major and already split by go_tc_split_tf32: `as` and
// `bs` hold the big parts, `xa` and `xb` (the split buffer, the stage's layout) the small
// ones; per k8 small*big, big*small, big*big (go_tc_stage_mma's order), or with TF32 only
// big*big. d: the warp's 32 accumulators (GoTcAcc<T, 16, 64>, whose layout is wgmma's D
// fragment, kernels/mma.cuh).
// go_tc_stage_wgmma_desc: the same on the operands' descriptors (da: the warpgroup's rows of
// A; xda, xdb: the split buffer's, f32 3xTF32 only), which a caller may keep per stage.
template <typename T, bool BKN, bool TF32 = false>
GO_DEV void go_tc_stage_wgmma_desc(GoWgmmaDesc da, GoWgmmaDesc db, float* d,
                                   [[maybe_unused]] GoWgmmaDesc xda = GoWgmmaDesc(),
                                   [[maybe_unused]] GoWgmmaDesc xdb = GoWgmmaDesc()) {
    constexpr int BK = GoTcTraits<T>::BK;
    if constexpr (sizeof(typename GoTcTraits<T>::S) == 4) {
        static_assert(BK == 16 && !BKN, "two k8 steps of one 64-byte row, K-major B");
        go_wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
            if constexpr (!TF32) {
                go_wgmma_m64n64k8_tf32(d, go_wgmma_desc_add(xda, 32 * ks),
                                       go_wgmma_desc_add(db, 32 * ks));
                go_wgmma_m64n64k8_tf32(d, go_wgmma_desc_add(da, 32 * ks),
                                       go_wgmma_desc_add(xdb, 32 * ks));
            }
            go_wgmma_m64n64k8_tf32(d, go_wgmma_desc_add(da, 32 * ks),
                                   go_wgmma_desc_add(db, 32 * ks));
        }
        go_wgmma_commit();
    } else {
        typedef typename GoMmaKind<T>::type Kind;
        static_assert(BK == 32, "two k16 steps of one 64-byte row");
        go_wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 2; ++ks)
            go_wgmma_m64n64k16<BKN ? 1 : 0>(Kind(), d, go_wgmma_desc_add(da, 32 * ks),
                                            go_wgmma_desc_add(db, (BKN ? 1024 : 32) * ks));
        go_wgmma_commit();
    }
}
// The descriptors of a stage's operands: A's rows of warpgroup wg, B (N-major for BKN).
template <typename T>
GO_DEV GoWgmmaDesc go_tc_stage_desc_a(const typename GoTcTraits<T>::S* as, int wg) {
    return go_wgmma_desc_sw64(as + wg * 64 * GoTcTraits<T>::BK);
}
template <typename T, bool BKN>
GO_DEV GoWgmmaDesc go_tc_stage_desc_b(const typename GoTcTraits<T>::S* bs) {
    return BKN ? go_wgmma_desc_sw64_mn(bs, GO_TC_WGMMA_BKN_COLUMN_BYTES) : go_wgmma_desc_sw64(bs);
}
template <typename T, bool BKN, bool TF32 = false>
GO_DEV void go_tc_stage_wgmma(const typename GoTcTraits<T>::S* as,
                              const typename GoTcTraits<T>::S* bs, int wg, float* d,
                              const typename GoTcTraits<T>::S* xa = nullptr,
                              const typename GoTcTraits<T>::S* xb = nullptr) {
    constexpr bool XS = sizeof(typename GoTcTraits<T>::S) == 4 && !TF32;
    go_tc_stage_wgmma_desc<T, BKN, TF32>(
        go_tc_stage_desc_a<T>(as, wg), go_tc_stage_desc_b<T, BKN>(bs), d,
        XS ? go_tc_stage_desc_a<T>(xa, wg) : GoWgmmaDesc(),
        XS ? go_tc_stage_desc_b<T, false>(xb) : GoWgmmaDesc());
}

// The f32 wgmma tile's split of one 16-byte chunk of a stage, in place: each element v
// becomes big = tf32(v) (cvt.rna: low 13 bits zero, so wgmma reads exactly it), and unless
// TF32, small = tf32(v - big) goes to the same place of the split buffer x. The values
// go_tc_stage_mma's fragments compute, so both tiles multiply the same numbers.
template <bool TF32>
GO_DEV void go_tc_split_tf32(float* chunk, float* x) {
    float v[4], big[4], small[4];
#ifdef __CUDACC__
    *reinterpret_cast<float4*>(v) = *reinterpret_cast<const float4*>(chunk);
#else
    std::memcpy(v, chunk, 16);
#endif
#pragma unroll
    for (int e = 0; e < 4; ++e) {
        big[e] = go_u32_as_f32(go_cvt_tf32(v[e]));
        small[e] = go_u32_as_f32(go_cvt_tf32(v[e] - big[e]));
    }
#ifdef __CUDACC__
    *reinterpret_cast<float4*>(chunk) = *reinterpret_cast<const float4*>(big);
    if constexpr (!TF32) *reinterpret_cast<float4*>(x) = *reinterpret_cast<const float4*>(small);
#else
    std::memcpy(chunk, big, 16);
    if constexpr (!TF32) std::memcpy(x, small, 16);
#endif
}

// The f32 wgmma tile's stage with A from registers (GO_TC_WGMMA_F32_RS): warp w of
// warpgroup wg reads, per k8 step, its fragment of the stage's A (rows 64 wg + 16 (w % 4) + g
// and + 8, k t and t + 4 of the step: go_wgmma_m64n64k8_tf32_rs's layout) with one ldmatrix
// x4 (its four 8 x 16-byte matrices: rows 0-7 and 8-15 of the warp's 16, the step's two
// chunks; lane l's word of matrix j is row l / 4, word l % 4: the fragment's register j; in
// the 64-byte swizzle each matrix's eight rows fall in distinct banks) and splits each value v
// in registers into big = tf32(v) and small = tf32(v - big), go_tc_split_tf32's values; B, split
// in place (big parts in bs, small ones in xb), by descriptor. Per k8 small*big, big*small,
// big*big (or with TF32 only big*big): go_tc_stage_wgmma's products in its order, so the same
// bits. One group per k8 step: the caller's wait_group 1 then frees the first step's
// fragments while the second's products run (ptxas holds a fragment's registers until its
// group's wait; where it cannot, it serializes the wgmma, which the sm90a ptxas tests reject).
template <bool TF32>
GO_DEV void go_tc_stage_wgmma_rs(const float* as, const float* bs, const float* xb, int warp,
                                 int lane, float* d) {
    // This lane's row of matrix j = lane / 8: rows 8 (j & 1) + lane % 8 of the warp's 16,
    // chunk 2 ks + j / 2 of it, swizzled.
    const int j = lane / 8;
    const int row = 64 * (warp / 4) + 16 * (warp % 4) + 8 * (j & 1) + lane % 8;
    const float* rp = as + row * 16;
    const int sw = (row >> 1) & 3;
    const GoWgmmaDesc db = go_wgmma_desc_sw64(bs), xdb = go_wgmma_desc_sw64(xb);
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
        uint32_t big[4], small[4];
        go_ldmatrix_x4(big, rp + ((2 * ks + j / 2) ^ sw) * 4);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const float v = go_u32_as_f32(big[r]);
            big[r] = go_cvt_tf32(v);
            if constexpr (!TF32) small[r] = go_cvt_tf32(v - go_u32_as_f32(big[r]));
        }
        go_wgmma_fence();
        if constexpr (!TF32) {
            go_wgmma_m64n64k8_tf32_rs(d, small, go_wgmma_desc_add(db, 32 * ks));
            go_wgmma_m64n64k8_tf32_rs(d, big, go_wgmma_desc_add(xdb, 32 * ks));
        }
        go_wgmma_m64n64k8_tf32_rs(d, big, go_wgmma_desc_add(db, 32 * ks));
        go_wgmma_commit();
    }
}
#endif

// Two adjacent shared-memory elements as one store (dst aligned to twice their size).
template <typename S>
GO_DEV void go_store_pair(S* dst, S a, S b) {
    const S v[2] = {a, b};
#ifdef __CUDACC__
    if constexpr (sizeof(S) == 2) {
        uint32_t u;
        memcpy(&u, v, 4);
        *reinterpret_cast<uint32_t*>(dst) = u;
    } else if constexpr (sizeof(S) == 4) {
        uint2 u;
        memcpy(&u, v, 8);
        *reinterpret_cast<uint2*>(dst) = u;
    } else {
        uint4 u;
        memcpy(&u, v, 16);
        *reinterpret_cast<uint4*>(dst) = u;
    }
#else
    std::memcpy(dst, v, sizeof v);
#endif
}

// The NCHW epilogue's staged tile, transposed: [nn][m], rows of BM + VEC elements (16 bytes
// of padding), so the fragment stores (8 rows x 4 column pairs a warp) and the pixel-walking
// reads both fall in distinct banks; the [m][nn] tile's column reads were 4-way conflicts
// (H200 ncu, 2026-11-27: 14x the NHWC kernel's conflicts). Never larger than the [m][nn]
// tile where BM >= TC_BN.
template <typename T, int BM> struct GoTcTransTile {
    static constexpr int LD = BM + GoTcGeom<T>::VEC;
    static_assert(TC_BN * LD <= BM * GoTcGeom<T>::CLD, "fits where the [m][nn] tile does");
};

// Epilogue, first half: the warp's accumulators rounded once into the tile Cs: [m][nn] (row
// stride CLD, two adjacent columns a store) or, where TBM is a tile height, [nn][m]
// (GoTcTransTile<T, TBM>, one element a store).
template <typename T, int WM = TC_WM, int TBM = 0, int WN = TC_WN>
GO_DEV void go_tc_stage_acc(const GoTcAcc<T, WM, WN>& acc, typename GoTcTraits<T>::S* Cs, int wm,
                            int wn, int lane) {
    typedef GoTcTraits<T> Tr;
    constexpr int MF = WM / Tr::FM, CLD = GoTcGeom<T>::CLD;
    const int g = lane / 4, tq = lane % 4;
#pragma unroll
    for (int i = 0; i < MF; ++i)
#pragma unroll
        for (int j = 0; j < (WN / 8); ++j)
#pragma unroll
            for (int e = 0; e < Tr::CE; e += 2) {  // e, e + 1: adjacent columns
                const int row = wm * WM + i * Tr::FM + g + (e >= 2 ? 8 : 0);
                const int col = wn * WN + j * 8 + 2 * tq;
                if constexpr (TBM > 0) {
                    constexpr int LDT = GoTcTransTile<T, TBM>::LD;
                    Cs[col * LDT + row] = go_bits(go_from_acc<T>(acc[i][j][e]));
                    Cs[(col + 1) * LDT + row] = go_bits(go_from_acc<T>(acc[i][j][e + 1]));
                } else {
                    go_store_pair(Cs + row * CLD + col, go_bits(go_from_acc<T>(acc[i][j][e])),
                                  go_bits(go_from_acc<T>(acc[i][j][e + 1])));
                }
            }
}

// Epilogue, second half, element by element: threads walk pixels (NCHW: Cs staged [nn][m],
// GoTcTransTile) or channels (NHWC: [m][nn]) of the staged tile; out_base[m] is row m's
// output offset (-1: no pixel).
template <typename T, int L, int BM = TC_BM, int THREADS = TC_THREADS>
GO_DEV void go_tc_write_tile(const GoTcProblem& P, const typename GoTcTraits<T>::S* Cs,
                             const go_i64* out_base, T* __restrict__ out, go_i64 n_base) {
    constexpr int CLD = GoTcGeom<T>::CLD;
    for (int idx = threadIdx.x; idx < BM * TC_BN; idx += THREADS) {
        const int m = L == GO_LAYOUT_NCHW ? idx % BM : idx / TC_BN;
        const int nn = L == GO_LAYOUT_NCHW ? idx / BM : idx % TC_BN;
        const go_i64 ob = out_base[m];
        if (ob < 0 || n_base + nn >= P.nlen) continue;
        const int at = L == GO_LAYOUT_NCHW ? nn * GoTcTransTile<T, BM>::LD + m : m * CLD + nn;
        out[ob + (n_base + nn) * P.o_c] = go_from_bits<T>(Cs[at]);
    }
}

// One block tile: pixels [m_base, m_base + TC_BM) x channels [n_base, n_base + TC_BN).
// BKN: B is staged [k][nn] (the forward's HWIO filter), else [nn][k]. TF32: see
// go_tc_stage_mma.
template <typename T, int L, bool BKN, bool TF32, bool STAGE>
GO_DEV void go_tc_tile(const GoTcProblem& P, const T* __restrict__ src, const T* __restrict__ w,
                       T* __restrict__ out, go_i64 m_base, go_i64 n_base, unsigned char* smem,
                       go_i64* out_base) {
    typedef GoTcTraits<T> Tr;
    typedef typename Tr::S S;
    constexpr int BK = Tr::BK, VEC = GoTcGeom<T>::VEC, LD = GoTcGeom<T>::LD;
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int wm = warp % (TC_BM / TC_WM), wn = warp / (TC_BM / TC_WM);
    S* As = reinterpret_cast<S*>(smem);
    S* Bs = reinterpret_cast<S*>(smem + TC_STAGES * TC_BM * TC_ROW_BYTES);

    // 16-byte copies need contiguous, 16-byte aligned VEC-element runs along j.
    const bool avec = P.a_j == 1 && P.a_col % VEC == 0 && P.a_off % VEC == 0 &&
                      reinterpret_cast<uintptr_t>(src) % 16 == 0;
    const bool bvec = (BKN ? P.b_n == 1 && P.b_j % VEC == 0 : P.b_j == 1 && P.b_n % VEC == 0) &&
                      P.b_ky % VEC == 0 && P.b_kx % VEC == 0 && P.b_off % VEC == 0 &&
                      reinterpret_cast<uintptr_t>(w) % 16 == 0;

    // This thread's A chunks: vector threads walk k within a row, scalar (NCHW) threads
    // walk pixels (the transposing gather). B chunk q: [k][nn] (BKN) VEC consecutive nn of
    // one k; [nn][k] with k-contiguous filters VEC consecutive k of one nn (16-byte copies),
    // others walk nn so neighbouring threads read neighbouring channels.
    GoTcRows R;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
        const int q = t + TC_THREADS * r;
        const int m = avec ? q / (BK / VEC) : q % TC_BM;
        R.akg[r] = (avec ? q % (BK / VEC) : q / TC_BM) * VEC;
        R.adst[r] = m * LD + R.akg[r];
        go_i64 pix = m_base + m;
        R.ok[r] = pix < P.npix;
        if (!R.ok[r]) pix = 0;
        const go_i64 b = pix % P.cnt_x; pix /= P.cnt_x;
        const go_i64 a = pix % P.cnt_y;
        const go_i64 img = pix / P.cnt_y;
        R.y[r] = a * P.a_sy;
        R.x[r] = b * P.a_sx;
        R.abase[r] = img * P.a_n + P.a_off + R.y[r] * P.a_row + R.x[r] * P.a_col +
                     R.akg[r] * P.a_j;
        if (BKN) {
            R.bk[r] = q / (TC_BN / VEC);
            R.bn[r] = (q % (TC_BN / VEC)) * VEC;
            R.bdst[r] = R.bk[r] * GoTcGeom<T>::LDKN + R.bn[r];
        } else {
            R.bn[r] = bvec ? q / (BK / VEC) : q % TC_BN;
            R.bk[r] = (bvec ? q % (BK / VEC) : q / TC_BN) * VEC;
            R.bdst[r] = R.bn[r] * LD + R.bk[r];
        }
        R.boff[r] = R.bk[r] * P.b_j + (n_base + R.bn[r]) * P.b_n;
    }
    // Output offset of each tile row (-1: past the last pixel), for the epilogue.
    for (int m = t; m < TC_BM; m += TC_THREADS) {
        go_i64 pix = m_base + m;
        go_i64 o = -1;
        if (pix < P.npix) {
            const go_i64 b = pix % P.cnt_x; pix /= P.cnt_x;
            const go_i64 a = pix % P.cnt_y;
            const go_i64 img = pix / P.cnt_y;
            o = img * P.o_n + (P.o_y0 + a * P.o_sy) * P.o_row + (P.o_x0 + b * P.o_sx) * P.o_col +
                P.o_off;
        }
        out_base[m] = o;
    }

    GoTcAcc<T> acc;
    go_tc_acc_zero<T>(acc);

    const go_i64 jchunks = (P.jlen + BK - 1) / BK;
    const go_i64 kiters = P.ntaps * jchunks;
    GoTcCursor C;
    go_tc_cursor_start(P, C);

    // Prologue: the first TC_STAGES - 1 chunks in flight (a group per stage, empty past
    // the end, so the wait counts below hold); the last one's strided part stays in G.
    static_assert(TC_STAGES == 3, "one chunk's strided part in registers at a time");
    GoTcRegs<T> G;
    G.pend = 0;
#pragma unroll
    for (int s = 0; s < TC_STAGES - 1; ++s) {
        go_tc_put<T, STAGE>(G, R, As + (s + 2) % 3 * TC_BM * LD, Bs + (s + 2) % 3 * TC_BN * LD);
        G.pend = 0;
        if (s < kiters) {
            go_tc_gather<T, L, BKN, STAGE>(P, src, w, R, C, n_base, avec, bvec, As + s * TC_BM * LD,
                                    Bs + s * TC_BN * LD, G);
            go_tc_cursor_next<BK>(P, C);
        }
        go_cp_async_commit();
    }

    // Iteration it: chunk it is in its stage; chunk it + 1's strided part goes from G to its
    // stage (free: last read at it - 2), chunk it + 2 is gathered, then chunk it's mma.
    int s_read = 0, s_put = 1, s_load = 2;
    for (go_i64 it = 0; it < kiters; ++it) {
        // Chunk it has landed (at most one younger group pending, and the stores of the
        // previous iteration), and every warp is done with the stage read at it - 1.
        go_cp_async_wait<TC_STAGES - 2>();
        __syncthreads();
        go_tc_put<T, STAGE>(G, R, As + s_put * TC_BM * LD, Bs + s_put * TC_BN * LD);
        G.pend = 0;
        if (it + 2 < kiters) {
            go_tc_gather<T, L, BKN, STAGE>(P, src, w, R, C, n_base, avec, bvec,
                                    As + s_load * TC_BM * LD, Bs + s_load * TC_BN * LD, G);
            go_tc_cursor_next<BK>(P, C);
        }
        go_cp_async_commit();
        go_tc_stage_mma<T, BKN, TF32>(As + s_read * TC_BM * LD, Bs + s_read * TC_BN * LD, wm, wn,
                                      lane, acc);
        s_read = s_put;
        s_put = s_load;
        s_load = s_load + 1 == TC_STAGES ? 0 : s_load + 1;
    }
    go_cp_async_wait<0>();  // only empty groups can remain; nothing may outlive the tile
    __syncthreads();

    // Epilogue: round once, stage the tile in shared memory ([nn][m] for NCHW, [m][nn] for
    // NHWC), then write it with threads walking pixels (NCHW) or channels (NHWC).
    S* Cs = reinterpret_cast<S*>(smem);
    go_tc_stage_acc<T, TC_WM, L == GO_LAYOUT_NCHW ? TC_BM : 0>(acc, Cs, wm, wn, lane);
    __syncthreads();
    go_tc_write_tile<T, L>(P, Cs, out_base, out, n_base);
    __syncthreads();  // the next tile's prologue overwrites Cs and out_base
}

// ---------------------------------------------------------------------------------------
// The lean tile (go_tc_tile_vec): problems whose every chunk is whole (the reduction per tap
// a multiple of BK, the filter's rows 16-byte chunks; NHWC sources too).
// go_tc_tile serves every geometry and pays for it in its main loop: 64-bit offsets and
// bounds, per-chunk remainder tests, a scalar path beside each copy and the problem's
// fields re-read from shared memory, about 240 (NHWC) to 510 (NCHW) SASS instructions per
// 16 HMMA on sm_90 (H200, 2026-11-26: W4 f16 NCHW at 0.126 ms, issue-bound at 18.75%
// occupancy). Where go_tc_vec_params_ok holds, this tile's main loop is copies, mma and a
// cursor (about 100 per 16 HMMA): each thread's A rows are 64-bit row pointers plus one
// 32-bit tap offset shared by all its rows (the tap and channel offset of a pixel does not
// depend on the pixel), their bounds one bit per tap (taps <= 32), computed with the row;
// NHWC rows are 16-byte copies, an NCHW row is one pixel's run of channel planes loaded
// through registers (threads walk pixels: coalesced). B rows are pointers plus the cursor's
// 32-bit filter offset. The tile setup divides in 32 bits; the NHWC epilogue writes 16-byte
// chunks along channels. TC_VSTAGES-deep pipeline (H200, 2026-11-27: 1.16x-1.89x the
// general tile, BENCHMARKS.md).
// Same arithmetic and reduction order as go_tc_tile: the same results bit for bit (checked
// in the emulator, tests/emulated_kernels.rs).

// Whether conv2d_backprop_input_tc_vec_<T> (fwd false) or conv2d_forward_tc_vec_<T>
// serves p: an HWIO filter (its rows along o whole 16-byte chunks: co a multiple of VEC,
// and the forward's cog, its B rows, too), the reduction per tap (cog or cig) a multiple
// of BK, NHWC sources with channels of whole 16-byte chunks (NCHW ones are loaded through
// registers), at most 32 taps, and what go_tc_tile_vec keeps in 32 bits fitting: offsets
// within one source image (from a pixel's own position, which padding may put outside
// the image, to any position inside it), within the filter, and the pixel index. The
// host's rule is the same (conv_tc_vec_eligible, src/cuda/launch.rs); the kernels trap
// where this one fails.
template <typename T>
GO_DEV bool go_tc_vec_params_ok(const GoConvParams& p, bool fwd) {
    constexpr go_i64 VEC = GoTcGeom<T>::VEC, BK = GoTcTraits<T>::BK, LIM = 0x7fffffffLL;
    const bool nhwc = p.layout == GO_LAYOUT_NHWC;
    if ((!nhwc && p.layout != GO_LAYOUT_NCHW) || p.filter_layout != GO_FILTER_HWIO) return false;
    // Every size in [0, 2^31) (groups >= 1) first, so that no product below overflows.
    const go_i64 dims[] = {p.n,  p.ci, p.hi, p.wi, p.co, p.ho,      p.wo,       p.kh,
                           p.kw, p.sh, p.sw, p.dh, p.dw, p.pad_top, p.pad_left, p.groups};
    for (go_i64 d : dims)
        if (d < 0 || d >= LIM) return false;
    if (p.groups < 1 || p.kh * p.kw > 32) return false;
    const go_i64 cig = p.ci / p.groups, cog = p.co / p.groups;
    const go_i64 csrc = fwd ? p.ci : p.co, jlen = fwd ? cig : cog;
    const go_i64 hs = fwd ? p.hi : p.ho, ws = fwd ? p.wi : p.wo;
    if ((nhwc && csrc % VEC != 0) || jlen % BK != 0 || p.co % VEC != 0 ||
        (fwd && cog % VEC != 0))
        return false;
    // The pixels' own positions reach ymax, xmax: forward (oy*sh, ox*sw), backprop_input
    // the dx pixels.
    const go_i64 ymax = fwd ? p.ho * p.sh : p.hi, xmax = fwd ? p.wo * p.sw : p.wi;
    const go_i64 plane = hs * ws, pix = fwd ? p.ho * p.wo : p.hi * p.wi;
    if (plane >= LIM || pix >= LIM || cig * p.co >= LIM || hs + ymax >= LIM || ws + xmax >= LIM)
        return false;
    if (plane * csrc >= LIM || p.n * pix >= LIM || p.kh * p.kw * cig * p.co >= LIM) return false;
    // Row and column strides: NHWC ws * csrc and csrc (channels within), NCHW ws and 1
    // (channel planes apart).
    const go_i64 row = nhwc ? ws * csrc : ws, col = nhwc ? csrc : 1;
    const go_i64 chans = nhwc ? jlen : csrc * plane;
    return (hs + ymax) * row + (ws + xmax) * col + chans < LIM;
}

// Ends the kernel with a launch error (the emulator: aborts the run).
GO_DEV void go_trap() {
#ifdef __CUDACC__
    __trap();
#else
    std::fprintf(stderr, "kernel trap: a lean conv kernel launched outside its rule\n");
    std::abort();
#endif
}

// 16 bytes from src to dst (both 16-byte aligned).
GO_DEV void go_copy16(void* dst, const void* src) {
#ifdef __CUDACC__
    *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
#else
    std::memcpy(dst, src, 16);
#endif
}

// Pixel index pix (< 2^31) of P's pixel space as (image, a, b), in 32-bit divisions.
GO_DEV void go_tc_pixel(const GoTcProblem& P, unsigned pix, unsigned* img, unsigned* a,
                        unsigned* b) {
    const unsigned cx = (unsigned)P.cnt_x, cy = (unsigned)P.cnt_y;
    const unsigned row = pix / cx;
    *b = pix - row * cx;
    *img = row / cy;
    *a = row - *img * cy;
}

// A row of the lean tiles (go_tc_tile_vec, go_tc_tile_ws): pixel pix's source pointer at
// the pixel's own position (a*a_sy, b*a_sx) and channel akg of the chunk (a tap adds
// tap_y * a_row + tap_x * a_col + j0 * a_j), and the taps that land inside the source: bit
// i of amask for tap i = iy * ntx + ix, nty x ntx taps (none past the last pixel).
template <typename T>
GO_DEV void go_tc_vec_arow(const GoTcProblem& P, const T* src, go_i64 pix, int akg, int nty,
                           int ntx, const T*& arow, unsigned& amask) {
    unsigned img = 0, a = 0, b = 0;
    if (pix < P.npix) go_tc_pixel(P, (unsigned)pix, &img, &a, &b);
    const go_i64 y = a * P.a_sy, x = b * P.a_sx;
    arow = src + (go_i64)img * P.a_n + P.a_off + (go_i64)y * P.a_row + (go_i64)x * P.a_col +
           akg * P.a_j;
    unsigned ym = 0, xm = 0;
    for (int iy = 0; iy < nty; ++iy) {
        const go_i64 sy = y + P.ty0 + iy * P.tdy;
        if (sy >= 0 && sy < P.a_h) ym |= 1u << iy;
    }
    for (int ix = 0; ix < ntx; ++ix) {
        const go_i64 sx = x + P.tx0 + ix * P.tdx;
        if (sx >= 0 && sx < P.a_w) xm |= 1u << ix;
    }
    unsigned mk = 0;  // tap i = iy * ntx + ix: row iy's taps are xm shifted to iy * ntx
    if (pix < P.npix)
        for (int iy = 0; iy < nty; ++iy)
            if ((ym >> iy) & 1u) mk |= xm << (iy * ntx);
    amask = mk;
}

// The lean tiles' reduction cursor: the current tap's column index ix and first channel j0;
// the chunk's A and B offsets atap (NHWC: + j0), btap (backprop_input: + j0); bit 0 of a
// row's amask says whether the current tap lands inside (shifted out tap by tap). Advanced
// by additions (the tap steps from P), in unsigned (wrapping) arithmetic: a tap outside the
// source may pass 32 bits on the way, every tap that is read lands within one image
// (go_tc_vec_params_ok), so its offset is exact.
struct GoTcVecCursor {
    int j0, ix;
    unsigned atap, btap;
    GO_DEV explicit GoTcVecCursor(const GoTcProblem& P)
        : j0(0), ix(0), atap((unsigned)(P.ty0 * P.a_row + P.tx0 * P.a_col)),
          btap((unsigned)(P.ky0 * P.b_ky + P.kx0 * P.b_kx)) {}
    // On by BK channels; past the tap's last one, the next tap. BKN: the forward's B (k = c,
    // stride b_j); NC: NCHW's A (k = a channel plane).
    template <int BK, bool BKN, bool NC, int NR>
    GO_DEV void advance(const GoTcProblem& P, int jlen, int ntx, unsigned (&amask)[NR]) {
        j0 += BK;
        if (BKN) btap += (unsigned)(BK * P.b_j);
        if (NC) atap += (unsigned)(BK * P.a_j);
        if (j0 < jlen) return;
        if (BKN) btap -= (unsigned)(jlen * P.b_j);
        if (NC) atap -= (unsigned)(jlen * P.a_j);
        j0 = 0;
#pragma unroll
        for (int r = 0; r < NR; ++r) amask[r] >>= 1;
        if (++ix == ntx) {
            ix = 0;
            atap += (unsigned)(P.tdy * P.a_row - (P.ntx - 1) * P.tdx * P.a_col);
            btap += (unsigned)(P.pky * P.b_ky - (P.ntx - 1) * P.pkx * P.b_kx);
        } else {
            atap += (unsigned)(P.tdx * P.a_col);
            btap += (unsigned)(P.pkx * P.b_kx);
        }
    }
};

// Which of the lean tiles' copies go through L1 (cp.async.ca) instead of L2 only (cg): bit 0
// A (the source: a block's taps re-read overlapping pixel rows), bit 1 B (the filter, which
// every block on an SM reads). Both by default: on an H200 (2026-11-27, W4 f16 NHWC) ncu put
// L2 throughput at 52%, the busiest unit, with an L1 hit rate of 0 under cg; through L1 the
// 16-bit NHWC rows took 11-17% less time, the others 0-6% (none more than 0.6% slower;
// BENCHMARKS.md).
// GRADOPS_NVCC_FLAGS=-DGO_TC_VEC_L1=0 builds the cg copies, for comparison.
#ifndef GO_TC_VEC_L1
#define GO_TC_VEC_L1 3
#endif

// When the wgmma tiles issue a stage's wgmma. 1 (the default since 2026-12-04): before the
// refill, which then overlaps the stage's wgmma: one group left in flight (wait_group 1),
// then a second barrier, after which every warp's last group is done and its stage free
// (f32's split buffer, read by every group, still waits for the last one before the split).
// 0: after the refill of the stage the last wgmma read, so each iteration first waits for
// that group to finish and the refill's copies and loads are issued while no wgmma of the
// block runs. Same operations in the same order on the accumulators: the same bits. On an
// H200 (2026-12-04, same run) 1 took 0.4-4% less time than 0 on every wgmma row but two,
// within 0.3% (BENCHMARKS.md); GRADOPS_NVCC_FLAGS=-DGO_TC_WGMMA_INFLIGHT=0 builds 0, for
// comparison (scripts/gpu-check.sh --prebuild with REFILL_VARIANT=1 puts it in the bundle
// as gradops-refill).
#ifndef GO_TC_WGMMA_INFLIGHT
#define GO_TC_WGMMA_INFLIGHT 1
#endif
// How many block barriers an iteration of the lean wgmma tile (GO_TC_WGMMA_LEAN: four
// stages; f32 in both layouts, 16-bit NCHW) takes under GO_TC_WGMMA_INFLIGHT. 2 (the default):
// the one that publishes the stage read next, then one after the wait that leaves this
// stage's group in flight, so the refill may take the stage the last group read (three
// chunks in flight ahead of the one read). 1: the refill takes the stage read two iterations
// back instead (two chunks ahead): every warp waited for that stage's group in the
// iteration before (wait_group 1 leaves only the newest in flight) and did so before the
// barrier that opens this iteration, so the second barrier has nothing left to order.
// Same operations in the same order on the accumulators: the same bits. Built for comparison
// with GRADOPS_NVCC_FLAGS=-DGO_TC_WGMMA_BARRIERS=1 (scripts/gpu-check.sh --prebuild with
// BARRIER_VARIANT=1 puts it in the bundle as gradops-onebarrier); not yet timed on a GPU.
// The 128-pixel wgmma tile (three stages) keeps two: at one its copies would run a single
// chunk ahead.
#ifndef GO_TC_WGMMA_BARRIERS
#define GO_TC_WGMMA_BARRIERS 2
#endif
#if GO_TC_WGMMA_BARRIERS != 1 && GO_TC_WGMMA_BARRIERS != 2
#error "GO_TC_WGMMA_BARRIERS: 1 or 2"
#endif
// Where the exact f32 wgmma tile's A operand comes from. 0 (the default): shared memory,
// split in place (go_tc_split_tf32: a stage's A read, its big parts written back and its
// small parts to the split buffer), then read by each of a k8 step's three wgmma (small*big,
// big*small, big*big). 1: registers: each thread reads its fragments of the stage's A once
// (ldmatrix, go_wgmma_m64n64k8_tf32_rs's layout) and splits them in registers
// (go_tc_stage_wgmma_rs); only B is split in place and read by descriptor. ncu on an H200
// (2026-12-04) found the f32 tiles bound by the shared-memory pipe (L1/shared 75-82% busy);
// this takes a stage's shared-memory traffic from 56 KB to 36 (the A split's read and two
// writes and the wgmma's three reads of A become one read). Same products in the same order:
// the same bits. Plain TF32 (the opt-in) keeps shared memory.
// Built for comparison with GRADOPS_NVCC_FLAGS=-DGO_TC_WGMMA_F32_RS=1 (scripts/gpu-check.sh
// --prebuild with RS_VARIANT=1 puts it in the bundle as gradops-rs); not yet run on a GPU.
#ifndef GO_TC_WGMMA_F32_RS
#define GO_TC_WGMMA_F32_RS 0
#endif
#if GO_TC_WGMMA_F32_RS != 0 && GO_TC_WGMMA_F32_RS != 1
#error "GO_TC_WGMMA_F32_RS: 0 or 1"
#endif
template <int BIT>
GO_DEV void go_tc_vec_copy16(void* dst, const void* src, int src_bytes) {
    if constexpr ((GO_TC_VEC_L1 & BIT) != 0) go_cp_async_16_ca(dst, src, src_bytes);
    else go_cp_async_16(dst, src, src_bytes);
}

// The lean tiles' output offset of pixel pix's channel 0 of the group (-1: past the last
// pixel).
GO_DEV go_i64 go_tc_vec_out_offset(const GoTcProblem& P, go_i64 pix) {
    if (pix >= P.npix) return -1;
    unsigned img, a, b;
    go_tc_pixel(P, (unsigned)pix, &img, &a, &b);
    return (go_i64)img * P.o_n + (P.o_y0 + (go_i64)a * P.o_sy) * P.o_row +
           (P.o_x0 + (go_i64)b * P.o_sx) * P.o_col + P.o_off;
}

// The lean tiles' epilogue, first: the output offset of each tile row, taken here rather
// than before the main loop, where it would hold registers.
template <int BM, int THREADS>
GO_DEV void go_tc_vec_out_rows(const GoTcProblem& P, go_i64 m_base, go_i64* out_base) {
    for (int m = threadIdx.x; m < BM; m += THREADS)
        out_base[m] = go_tc_vec_out_offset(P, m_base + m);
}

// The lean tiles' epilogue, last: the staged tile Cs (rounded; [nn][m] for NCHW) written,
// NHWC in 16-byte chunks along channels where they are whole and aligned, else element by
// element.
template <typename T, int L, int BM, int THREADS>
GO_DEV void go_tc_vec_write(const GoTcProblem& P, const typename GoTcTraits<T>::S* Cs,
                            const go_i64* out_base, T* __restrict__ out, go_i64 n_base) {
    constexpr int VEC = GoTcGeom<T>::VEC, CLD = GoTcGeom<T>::CLD;
    const bool ovec = L != GO_LAYOUT_NCHW && P.nlen % VEC == 0 && P.o_col % VEC == 0 &&
                      P.o_off % VEC == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0;
    if (ovec) {
        for (int idx = threadIdx.x; idx < BM * (TC_BN / VEC); idx += THREADS) {
            const int m = idx / (TC_BN / VEC), nn = (idx % (TC_BN / VEC)) * VEC;
            const go_i64 ob = out_base[m];
            if (ob < 0 || n_base + nn >= P.nlen) continue;
            go_copy16(out + ob + n_base + nn, Cs + m * CLD + nn);
        }
    } else {
        go_tc_write_tile<T, L, BM, THREADS>(P, Cs, out_base, out, n_base);
    }
}

// The lean tiles' B copies (go_tc_tile_vec, go_tc_tile_ws), copy thread t of THREADS: B
// rows [nn][k] t / KCH (+ THREADS / KCH), VEC consecutive k; or [k][nn] (BKN) row k = t /
// (TC_BN / VEC) (+ THREADS / (TC_BN / VEC)), VEC consecutive nn; or (BREG: the f32 wgmma
// tile's [k][nn] B, gathered through registers) nn row t % TC_BN, k chunks t / TC_BN (+
// THREADS / TC_BN). A chunk past the group's channels (nlen) is zero-filled for the whole
// tile. Row r's filter pointer is row 0's plus r * row1; in a stage (row stride SLD, or
// LDKN for [k][nn] outside the wgmma tiles) its chunk goes to dst + r * DST1: the wgmma
// tiles' [k][nn] B (N-major): chunk c (8 nn) of k row k in row (c / 4) * BK + k of 64 bytes
// (column c / 4 of atoms), chunk c % 4 of it, swizzled; THREADS / (TC_BN / VEC) k rows on
// is a multiple of the swizzle's 8-row period, in the same column of atoms.
// A lean tile's stage: the element offset of 16-byte chunk c of row r (the wgmma tiles:
// 64-byte rows in the 64-byte swizzle of kernels/mma.cuh, chunk c at c ^ ((r >> 1) & 3)).
template <typename T, bool WG>
GO_DEV int go_tc_vec_sdst(int r, int c) {
    constexpr int VEC = GoTcGeom<T>::VEC;
    constexpr int SLD = WG ? GoTcTraits<T>::BK : GoTcGeom<T>::LD;
    return WG ? r * SLD + (c ^ ((r >> 1) & 3)) * VEC : r * SLD + c * VEC;
}
template <typename T, bool BKN, bool WG, bool BREG, int THREADS>
struct GoTcVecB {
    typedef typename GoTcTraits<T>::S S;
    static constexpr int BK = GoTcTraits<T>::BK, VEC = GoTcGeom<T>::VEC, KCH = BK / VEC;
    static constexpr int SLD = WG ? BK : GoTcGeom<T>::LD, LDKN = GoTcGeom<T>::LDKN;
    static constexpr int NB = TC_BN * KCH / THREADS;  // chunks per thread per stage
    static_assert(NB * THREADS == TC_BN * KCH && NB <= 4, "whole B chunks");
    static constexpr int DST1 =
        BKN ? (THREADS / (TC_BN / VEC)) * (WG ? SLD : LDKN) : (THREADS / KCH) * SLD;
    const T* row;
    int row1, dst;
    bool in[NB];
    GO_DEV GoTcVecB(const GoTcProblem& P, const T* w, go_i64 n_base, int t) : row(w) {
        dst = BKN ? (WG ? go_tc_vec_sdst<T, WG>((t % (TC_BN / VEC)) / 4 * BK + t / (TC_BN / VEC),
                                                (t % (TC_BN / VEC)) % 4)
                        : (t / (TC_BN / VEC)) * LDKN + (t % (TC_BN / VEC)) * VEC)
                  : go_tc_vec_sdst<T, WG>(t / KCH, t % KCH);
#pragma unroll
        for (int r = 0; r < NB; ++r) {
            const int q = t + THREADS * r;
            const int bk = BREG ? (t / TC_BN) * VEC : BKN ? q / (TC_BN / VEC) : (q % KCH) * VEC;
            const int bn = BREG ? t % TC_BN : BKN ? (q % (TC_BN / VEC)) * VEC : q / KCH;
            in[r] = n_base + bn < P.nlen;
            if (r == 0) row = w + P.b_off + bk * P.b_j + (n_base + bn) * P.b_n;
        }
        row1 = (int)(BREG  ? (THREADS / TC_BN) * VEC * P.b_j
                     : BKN ? (THREADS / (TC_BN / VEC)) * P.b_j
                           : (THREADS / KCH) * P.b_n);
    }
    // The stage's cp.async copies (not BREG), the cursor's filter offset boff on (a masked
    // chunk reads nothing, from w, which exists).
    GO_DEV void copy(S* bs, const T* w, int boff) const {
#pragma unroll
        for (int r = 0; r < NB; ++r)
            go_tc_vec_copy16<2>(bs + dst + r * DST1, in[r] ? row + (boff + r * row1) : w,
                                in[r] ? 16 : 0);
    }
};

// One block tile as go_tc_tile's, for parameters where go_tc_vec_params_ok holds: BM pixels
// (TC_BM, or GO_TC_WIDE_TILE_M / GO_TC_TALL_TILE_M for the wide / tall kernels) x TC_BN
// channels, THREADS threads (one warp per WM x TC_WN warp tile), a STAGES-deep pipeline.
template <typename T, int L, bool BKN, bool TF32, int BM = TC_BM, int THREADS = TC_THREADS,
          int STAGES = TC_VSTAGES, int WM = TC_WM, int ACC = 0, int WN = TC_WN, bool WG = false>
GO_DEV void go_tc_tile_vec(const GoTcProblem& P, const T* __restrict__ src,
                           const T* __restrict__ w, T* __restrict__ out, go_i64 m_base,
                           go_i64 n_base, unsigned char* smem, go_i64* out_base) {
    typedef GoTcTraits<T> Tr;
    typedef typename Tr::S S;
    constexpr int BK = Tr::BK, VEC = GoTcGeom<T>::VEC, LD = GoTcGeom<T>::LD;
    constexpr int KCH = BK / VEC;  // 16-byte chunks per row of a stage
    constexpr bool NC = L == GO_LAYOUT_NCHW;
    // A stage's row stride in S: LD (80-byte rows), or for the wgmma tile (WG) 64-byte rows
    // in the 64-byte swizzle of kernels/mma.cuh (chunk c of row r at c ^ ((r >> 1) & 3)).
    constexpr int SLD = WG ? BK : LD;
    // NCHW: A elements a thread loads per stage (one pixel, AE consecutive channels).
    constexpr int AE = BM * BK / THREADS;
    // NHWC: A chunks per thread, and of those, CC of one row (pixel): ACC where the tile
    // kind sets it (the tall tile: fewer row pointers and masks), else one chunk of each
    // of NR rows. A row's TPR threads take interleaved chunks (thread p: chunks p, p + TPR,
    // ...), so each copy instruction of a warp reads whole 32-byte sectors of its rows.
    constexpr int ACH = BM * KCH / THREADS;
    constexpr int CC = NC ? 1 : (ACC > 0 ? ACC : 1);
    constexpr int TPR = KCH / CC;                    // threads per row of a stage
    constexpr int NR = NC ? 1 : ACH / CC;           // A rows (pixels) per thread
    static_assert(BM * BK == AE * THREADS && AE % VEC == 0, "whole chunks per thread");
    static_assert(THREADS == 32 * (BM / WM) * (TC_BN / WN), "one warp per warp tile");
    // B chunks per thread per stage (a stage of B is TC_BN x BK either way: 256 chunks).
    constexpr int NB = TC_BN * KCH / THREADS;
    static_assert(NC || (KCH % CC == 0 && BM * KCH == NR * CC * THREADS),
                  "whole A chunks per thread (NHWC)");
    static_assert(!WG || ((sizeof(S) == 2 || sizeof(S) == 4) &&
                          (!NC || THREADS == 128) && CC == 1 && KCH == 4 &&
                          (THREADS / TPR) % 8 == 0 && (THREADS / KCH) % 8 == 0 &&
                          (!BKN || (THREADS / (TC_BN / VEC)) % 8 == 0) && WM == 16 &&
                          WN == 64 && BM == 16 * (THREADS / 32)),
                  "the wgmma tiles: 16-bit or f32, NCHW on one warpgroup, one "
                  "chunk a copy, copy rows 8 apart (one swizzle phase per thread), a "
                  "thread's [k][nn] B chunks a multiple of 8 k rows apart, a warp's m16 x 64 "
                  "the C fragments of its warpgroup's m64n64");
    // The f32 wgmma tile splits each stage into tf32 parts in place before its wgmma (big
    // in the stage, small in one split buffer after the stages: go_tc_split_tf32).
    [[maybe_unused]] constexpr bool SPLIT = WG && sizeof(S) == 4;
    // GO_TC_WGMMA_F32_RS: exact f32's A read by each thread into registers and split there
    // (go_tc_stage_wgmma_rs); only B split in place. Not plain TF32, whose one wgmma a k8
    // step reads A once either way: with both instantiations on registers, the NCHW
    // backprop_input kernel spilled at its 168 registers (each alone: 153 and 155).
    [[maybe_unused]] constexpr bool RSA = SPLIT && GO_TC_WGMMA_F32_RS != 0 && !TF32;
    // tf32 wgmma reads K-major operands only, so the f32 wgmma tile's forward gathers its
    // [k][nn] B (HWIO) through registers, threads walking nn (the loads coalesce), and
    // stores it [nn][k] one iteration later, as NCHW's A (put). REG: some operand does.
    constexpr bool BREG = SPLIT && BKN;
    constexpr bool REG = NC || BREG;
    static_assert(!BREG || (THREADS % TC_BN == 0 && NB * (THREADS / TC_BN) == KCH),
                  "the registered B: a thread's chunks THREADS / TC_BN apart in one nn row");
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int wm = warp % (BM / WM), wn = warp / (BM / WM);
    S* As = reinterpret_cast<S*>(smem);
    S* Bs = reinterpret_cast<S*>(smem + STAGES * BM * SLD * (int)sizeof(S));
    // The split buffer (SPLIT): one stage's A then B, small parts.
    [[maybe_unused]] S* Xs = Bs + STAGES * TC_BN * SLD;
    // A stage's element offset of chunk c of row r.
    auto sdst = [](int r, int c) { return go_tc_vec_sdst<T, WG>(r, c); };

    // A, NHWC: rows t / TPR + r * (THREADS / TPR), channels (t % TPR + c * TPR) * VEC of
    // the chunk, CC 16-byte copies each; NCHW: row t % BM, channels (t / BM) * AE (AE
    // channel planes, loaded into registers: threads walk pixels, so the loads coalesce).
    // Row pointer at the pixel's own position (a*a_sy, b*a_sx) and the chunk's channel; a
    // tap adds tap_y * a_row + tap_x * a_col + j0 * a_j. Bit i of amask[r]: tap i lands
    // inside. Shared-memory destinations: row 1's are row 0's plus a constant (registers).
    const T* arow[NR];
    unsigned amask[NR];
    const int akg = NC ? (t / BM) * AE : (t % TPR) * VEC;
    const int adst = NC ? (t % BM) * LD + akg : sdst(t / TPR, t % TPR);
    // NCHW: A chunk c of this thread (channels akg + c * VEC of row t % BM) in a stage.
    auto anc = [&](int c) { return WG ? sdst(t % BM, akg / VEC + c) : adst + c * VEC; };
    constexpr int ADST1 = (THREADS / TPR) * SLD;
    // (0 where no tap reaches the phase along x, whose ntx is then 0; in 32 bits: ntaps is
    // at most 32 here, and a 64-bit quotient guarded so made kernels spill.)
    const int ntx = (int)P.ntx, nty = ntx > 0 ? (int)P.ntaps / ntx : 0;
#pragma unroll
    for (int r = 0; r < NR; ++r) {
        const int m = NC ? t % BM : t / TPR + r * (THREADS / TPR);
        go_tc_vec_arow(P, src, m_base + m, akg, nty, ntx, arow[r], amask[r]);
    }
    // B (GoTcVecB).
    const GoTcVecB<T, BKN, WG, BREG, THREADS> B(P, w, n_base, t);
    // BREG: B chunk r of this thread (k chunk t / TC_BN + r * (THREADS / TC_BN) of nn row
    // t % TC_BN) in a stage, K-major and swizzled.
    [[maybe_unused]] auto breg = [&](int r) {
        return sdst(t % TC_BN, t / TC_BN + r * (THREADS / TC_BN));
    };
    GoTcAcc<T, WM, WN> acc;
    go_tc_acc_zero<T, WM, WN>(acc);

    // The cursor (GoTcVecCursor).
    const int jlen = (int)P.jlen;
    const int kiters = (int)P.ntaps * (jlen / BK);
    GoTcVecCursor cur(P);
    // NCHW: the chunk's A elements, loaded by one iteration's gather and stored to their
    // stage by the next iteration's put (their latency hidden behind a stage of mma); 16-bit
    // ones one per 32-bit register, as loaded.
    typename GoTcWide<S>::type av[NC ? AE : 1];
    S bv[BREG ? NB * VEC : 1];  // BREG: the chunk's B elements, as av
    auto gather = [&](int stage) {
        S* as = As + stage * BM * SLD;
        S* bs = Bs + stage * TC_BN * SLD;
        // backprop_input's B (HWIO, [nn][k]) has k = o contiguous (b_j = 1).
        const int boff = (int)(BKN ? cur.btap : cur.btap + cur.j0);
        if constexpr (NC) {
            const bool in = (amask[0] & 1u) != 0;
            const T* sp = arow[0] + (int)cur.atap;
            const int aj = (int)P.a_j;
#pragma unroll
            for (int e = 0; e < AE; ++e) av[e] = in ? go_bits(go_ldg(sp + e * aj)) : 0;
        } else {
            const int aoff = (int)(cur.atap + cur.j0);
#pragma unroll
            for (int r = 0; r < NR; ++r) {
                const bool in = (amask[r] & 1u) != 0;
                // Masked out: nothing is read (src-size 0), from an address that exists
                // (w's, which is live anyway: one pointer fewer to hold).
#pragma unroll
                for (int c = 0; c < CC; ++c)
                    go_tc_vec_copy16<1>(as + adst + r * ADST1 + c * TPR * VEC,
                                        in ? arow[r] + aoff + c * TPR * VEC : w, in ? 16 : 0);
            }
        }
        if constexpr (BREG) {
            const T* bp = B.row + boff;
            const int bj = (int)P.b_j;
#pragma unroll
            for (int r = 0; r < NB; ++r)
#pragma unroll
                for (int e = 0; e < VEC; ++e)
                    bv[r * VEC + e] = B.in[0] ? go_bits(go_ldg(bp + r * B.row1 + e * bj)) : S(0);
        } else {
            B.copy(bs, w, boff);
        }
    };
    // NCHW: the A elements of the last gather into their stage; BREG: the B elements.
    auto put = [&](int stage) {
        if constexpr (NC) {
            S* as = As + stage * BM * SLD;
#pragma unroll
            for (int c = 0; c < AE / VEC; ++c) {
                S v[VEC];
#pragma unroll
                for (int e = 0; e < VEC; ++e) v[e] = (S)av[c * VEC + e];
                go_tc_store_chunk(as + anc(c), v);
            }
        }
        if constexpr (BREG) {
            S* bs = Bs + stage * TC_BN * SLD;
#pragma unroll
            for (int r = 0; r < NB; ++r) {
                S v[VEC];
#pragma unroll
                for (int e = 0; e < VEC; ++e) v[e] = bv[r * VEC + e];
                go_tc_store_chunk(bs + breg(r), v);
            }
        }
    };
    auto advance = [&]() { cur.advance<BK, BKN, NC, NR>(P, jlen, ntx, amask); };

#if GO_HAS_WGMMA
    // The wgmma tile: the warpgroup's wgmma of stage s, after the barrier that published
    // it: one group, or under RSA (A from registers) one a k8 step.
    [[maybe_unused]] auto stage_wgmma = [&](int s) {
        if constexpr (RSA)
            go_tc_stage_wgmma_rs<TF32>(reinterpret_cast<const float*>(As + s * BM * SLD),
                                       reinterpret_cast<const float*>(Bs + s * TC_BN * SLD),
                                       reinterpret_cast<const float*>(Xs + BM * SLD), warp,
                                       lane, &acc[0][0][0]);
        else if constexpr (WG)
            go_tc_stage_wgmma<T, BKN && !BREG, TF32>(As + s * BM * SLD, Bs + s * TC_BN * SLD,
                                                     warp / 4, &acc[0][0][0], Xs,
                                                     Xs + BM * SLD);
    };
#endif
    // The pipeline as go_tc_tile's, STAGES deep: NHWC's chunks are all cp.async; NCHW's
    // A goes through registers, stored one iteration after its gather (at iteration it,
    // chunk it + AHEAD - 1, to the stage last read at it - 2, or with ONEBAR at it - 3).
    static_assert(STAGES >= 3, "a stage between the one read and the one stored");
    // The wgmma tiles with GO_TC_WGMMA_INFLIGHT: the stage's wgmma issued before the refill.
    [[maybe_unused]] constexpr bool EARLY = WG && GO_TC_WGMMA_INFLIGHT != 0;
    // One barrier an iteration (GO_TC_WGMMA_BARRIERS=1, the four-stage wgmma tile): the
    // refill takes the stage read two iterations back.
    constexpr bool ONEBAR = EARLY && GO_TC_WGMMA_BARRIERS == 1 && STAGES >= 4;
    // Chunks whose copies are issued ahead of the one read: each iteration refills the stage
    // of chunk it + AHEAD.
    constexpr int AHEAD = ONEBAR ? STAGES - 2 : STAGES - 1;
    // RSA with EARLY: NCHW's (or the forward's B) registered chunk stored before the wgmma.
    constexpr bool PUT_FIRST = RSA && EARLY;
    static_assert(!REG || AHEAD >= 2, "a registered chunk is stored before it is read");
#pragma unroll
    for (int s = 0; s < AHEAD; ++s) {
        if (REG && s >= 1 && s - 1 < kiters) put(s - 1);
        if (s < kiters) {
            gather(s);
            advance();
        }
        go_cp_async_commit();
    }
    int s_read = 0, s_load = AHEAD;
    for (int it = 0; it < kiters; ++it) {
        go_cp_async_wait<AHEAD - 1>();
#if GO_HAS_WGMMA
        if constexpr (WG) {
            // The last stage's wgmma has read it (the gather below refills it; EARLY: f32's
            // split buffer only); this thread's copies visible to the wgmma of the stage read
            // next.
            if constexpr (!EARLY || SPLIT) go_wgmma_wait<0>();
            // f32: this thread's chunks of the stage read next, split in place (its copies
            // have landed, NCHW's A chunks it stored itself; the split buffer's last
            // readers, the wgmma above, are done).
            if constexpr (SPLIT) {
                S* as = As + s_read * BM * SLD;
                S* bs = Bs + s_read * TC_BN * SLD;
#pragma unroll
                for (int r = 0; r < (RSA ? 0 : NC ? AE / VEC : NR); ++r) {
                    const int o = NC ? anc(r) : adst + r * ADST1;
                    go_tc_split_tf32<TF32>(as + o, Xs + o);
                }
#pragma unroll
                for (int r = 0; r < NB; ++r) {
                    const int o = BREG ? breg(r) : B.dst + r * B.DST1;
                    go_tc_split_tf32<TF32>(bs + o, Xs + BM * SLD + o);
                }
            }
            go_fence_proxy_async_smem();
        }
#endif
        __syncthreads();
#if GO_HAS_WGMMA
        if constexpr (EARLY) {
            // RSA: the registered chunk stored before the wgmma, so that its registers are
            // free while the fragments' are held (its stage was read by a group every warp
            // waited for before the barrier above).
            if (PUT_FIRST && REG && it + AHEAD - 1 < kiters)
                put(s_load == 0 ? STAGES - 1 : s_load - 1);
            // This stage's group in flight (RSA: its second k8 step's); the last one done in
            // every warp before the refill of the stage it read (s_load). ONEBAR: s_load was
            // read by the group before it, which every warp waited for before the barrier
            // above.
            stage_wgmma(s_read);
            go_wgmma_wait<1>();
            if constexpr (!ONEBAR) __syncthreads();
        }
#endif
        if (!PUT_FIRST && REG && it + AHEAD - 1 < kiters)
            put(s_load == 0 ? STAGES - 1 : s_load - 1);
        if (it + AHEAD < kiters) {
            gather(s_load);
            advance();
        }
        go_cp_async_commit();
#if GO_HAS_WGMMA
        if constexpr (WG) {
            if constexpr (!EARLY) stage_wgmma(s_read);
        } else
#endif
            go_tc_stage_mma<T, BKN, TF32, false, WM, WN>(As + s_read * BM * LD,
                                                         Bs + s_read * TC_BN * LD, wm, wn, lane,
                                                         acc);
        s_read = s_read + 1 == STAGES ? 0 : s_read + 1;
        s_load = s_load + 1 == STAGES ? 0 : s_load + 1;
    }
#if GO_HAS_WGMMA
    if constexpr (WG) go_wgmma_wait<0>();
#endif
    go_cp_async_wait<0>();
    __syncthreads();

    // Epilogue: round once, stage the tile ([nn][m] for NCHW), write it (go_tc_vec_write).
    go_tc_vec_out_rows<BM, THREADS>(P, m_base, out_base);
    S* Cs = reinterpret_cast<S*>(smem);
    go_tc_stage_acc<T, WM, NC ? BM : 0, WN>(acc, Cs, wm, wn, lane);
    __syncthreads();
    go_tc_vec_write<T, L, BM, THREADS>(P, Cs, out_base, out, n_base);
    __syncthreads();  // the next tile's prologue overwrites Cs and out_base
}

#if GO_HAS_WGMMA
// The warp-specialized tile's epilogue, by each consumer thread alone: its accumulators
// (rows 16 warp + lane / 4 and 8 further, two adjacent channels per n8 fragment) rounded once
// and stored straight to NHWC out, a channel pair one store (32 bits, f32's 64) where whole
// and aligned,
// else element by element. No staging tile and no block barrier, so the producer copies the
// block's next tile while the consumers store this one. (A warp's store covers 16 bytes of
// 8 pixel rows: sectors half used, merged in L2; the staged epilogue wrote 16-byte chunks,
// after two block barriers.) The same rounding as go_tc_stage_acc: the same bits. orow[h]:
// row h's output at channel n_base of its group (nullptr: past the last pixel,
// go_tc_ws_out_row).
template <typename T>
GO_DEV T* go_tc_ws_out_row(const GoTcProblem& P, T* __restrict__ out, go_i64 pix, go_i64 n_base) {
    const go_i64 o = go_tc_vec_out_offset(P, pix);
    return o < 0 ? nullptr : out + o + n_base * P.o_c;
}
template <typename T>
GO_DEV void go_tc_ws_store(const GoTcProblem& P, const GoTcAcc<T, 16, 64>& acc, T* const* orow,
                           go_i64 n_base, int lane, bool pair) {
    typedef typename GoTcTraits<T>::S S;
    static_assert((sizeof(S) == 2 || sizeof(S) == 4) && GoTcTraits<T>::FM == 16 &&
                      GoTcTraits<T>::CE == 4,
                  "16-bit types and f32: one m16 fragment, rows g and g + 8");
    const int tq = lane % 4;
    const int nrem = (int)(P.nlen - n_base);  // channels of the tile inside the group
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        T* o = orow[h];
        if (o == nullptr) continue;
#pragma unroll
        for (int j = 0; j < 8; ++j) {
            const int c = j * 8 + 2 * tq;
            if (c >= nrem) continue;
            const T lo = go_from_acc<T>(acc[0][j][2 * h]);
            const T hi = go_from_acc<T>(acc[0][j][2 * h + 1]);
            if (pair) {
                go_store_pair(reinterpret_cast<S*>(o + c), go_bits(lo), go_bits(hi));
            } else {
                o[c * P.o_c] = lo;
                if (c + 1 < nrem) o[(c + 1) * P.o_c] = hi;
            }
        }
    }
}

// The warp-specialized wgmma tile (GO_TC_WGMMA_WS; NHWC, and f32 NCHW (L), sm_90a images
// and the emulator): the wgmma tile's 128 x TC_BN block tile and arithmetic on two consumer
// warpgroups (warps 0-7: warpgroup g's m64n64 is rows 64g.., as go_tc_stage_wgmma reads
// them), fed by a producer warpgroup (warps 8-11) that does every copy, so no block barrier
// sits in the main loop. ncu put the wgmma tile's time on its operand staging, not on the
// tensor cores (an H200, 2026-12-04: 85 warp instructions a wgmma, barrier stalls 1.22 an
// issued instruction, BENCHMARKS.md): here the consumers issue waits, wgmma and arrivals
// only, and the producer runs up to ring.stages chunks ahead of them (the stages in dynamic
// shared memory, as many as the launch gave: GoTcWsRing). Per stage s two mbarriers:
// full[s] (GO_TC_WS_PRODUCER_THREADS arrivals a phase, each producer thread's
// cp.async.mbarrier.arrive.noinc: its copies of the stage have landed) and empty[s] (8 a
// phase, one a consumer warp once wait_group has retired the stage's wgmma group). Chunk k
// of the block (counted across its tiles) uses stage k % stages for its (k / stages)-th
// time: the consumers wait for that phase of full (parity (k / stages) & 1), the producer
// for the phase of empty before it (a fresh mbarrier counts the phase before its first as
// complete, so the ring's first pass waits for nothing), which released chunk k - stages.
// The ring (stage, parity) advances chunk by chunk in each thread, no division. The
// producer's copies as go_tc_tile_vec's NHWC ones at THREADS = GO_TC_WS_PRODUCER_THREADS,
// two chunks of each of two A rows (one address and mask a row) and two B chunks a thread.
// The consumers store their accumulators straight
// from registers (go_tc_ws_store) and the tile ends without a block barrier: the producer
// runs on into the block's next tile (its pipeline fill under this tile's last wgmma and
// stores; W5's phases are 2 to 8 chunks a tile, ncu 2026-12-04: fill and epilogue weighed
// most). Same chunks, same wgmma in the same order on the same accumulators, rounded the
// same, as the wgmma tile: the same bits.
// f32 (exact 3xTF32, or plain TF32 under the opt-in; backprop_input's HWIO B is K-major, as
// tf32 wgmma needs, the forward's N-major: its producer copies it element by element to
// K-major places, BEL): the same block tile in k16 chunks (64-byte rows, 16 channels), two
// m64n64k8 tf32 steps a chunk (go_tc_stage_wgmma's, three products a step for 3xTF32). The
// tf32 parts are made by the producer, which splits the chunks it copied in place
// (go_tc_split_tf32: big in the stage, small in the stage's split part after all stages;
// plain TF32 rounds only) once they have landed: before it issues chunk k's copies it waits
// for its copies of chunk k - GO_TC_WS_SPLIT_LAG (cp.async.wait_group, the chunks between
// pending), splits them, and arrives on that stage's full (a plain arrival, after
// fence.proxy.async: its stores visible to the consumers' wgmma). The consumers' loop is the
// 16-bit one's. The wgmma tile splits each stage by all its threads between two block
// barriers, on one split buffer: here the split goes to the producer, the consumers only
// wait, multiply and release. f32 NCHW: A copied element by element as well (AEL), each
// from its channel's plane. Where elements were copied (ELS) the producer warpgroup meets at
// a barrier of its own before each split: a 16-byte chunk's elements come from four threads.
// The named barrier of the producer warpgroup (ELS's split, go_warpgroup_sync).
constexpr int GO_TC_WS_PRODUCER_BARRIER = 1;
// A thread's position in its block's stage ring: the next chunk's stage s, in its use of
// parity ph, of `stages`.
struct GoTcWsRing {
    unsigned s, ph, stages;
    GO_DEV void next() {
        if (++s == stages) {
            s = 0;
            ph ^= 1;
        }
    }
};
// Waits until at most n (0 to N) of this thread's committed cp.async groups are pending.
template <int N> GO_DEV void go_cp_async_wait_at_most(int n) {
    if constexpr (N == 0) {
        go_cp_async_wait<0>();
    } else {
        if (n >= N) go_cp_async_wait<N>();
        else go_cp_async_wait_at_most<N - 1>(n);
    }
}
// Bytes of one stage of the warp-specialized tile for T (exact f32: its split part too).
template <typename T, bool TF32> GO_DEV constexpr int go_tc_ws_stage_bytes() {
    return sizeof(typename GoTcTraits<T>::S) == 4 && !TF32 ? GO_TC_WS_SPLIT_STAGE_BYTES
                                                           : GO_TC_WS_STAGE_BYTES;
}
template <typename T, int L, bool BKN, bool TF32 = false>
GO_DEV void go_tc_tile_ws(const GoTcProblem& P, const T* __restrict__ src,
                          const T* __restrict__ w, T* __restrict__ out, go_i64 m_base,
                          go_i64 n_base, unsigned char* smem, uint64_t* full, uint64_t* empty,
                          GoTcWsRing& ring) {
    typedef GoTcTraits<T> Tr;
    typedef typename Tr::S S;
    // f32: tf32 parts split by the producer; exact 3xTF32 keeps the small ones in the split
    // part of the stage (XS).
    constexpr bool SPLIT = sizeof(S) == 4, XS = SPLIT && !TF32;
    // The f32 forward's HWIO B is N-major, which tf32 wgmma cannot read: the producer copies
    // it element by element (BEL: 4-byte cp.async) to its K-major places. (Through registers,
    // as the lean wgmma tile's BREG, the eight elements held across an iteration made the
    // kernel spill at 80 registers.)
    constexpr bool BEL = SPLIT && BKN;
    // NCHW (f32 only): A element by element too (AEL, below), each element from its
    // channel's plane.
    constexpr bool NC = L == GO_LAYOUT_NCHW;
    // Either way (ELS) the four elements of a 16-byte chunk come from four copying threads:
    // the producer warpgroup meets at a barrier of its own before it splits a chunk, then
    // splits by 16-byte chunks (A by the partition NHWC's copies use, B by bkd), as many
    // instructions as the 16-byte copies' split. (Each thread splitting the elements it
    // copied, one by one, took 35 more instructions a chunk in the NHWC forward.)
    constexpr bool ELS = BEL || NC;
    static_assert(sizeof(S) == 2 || SPLIT, "16-bit types or f32");
    static_assert(!NC || SPLIT, "NCHW: f32 (4-byte copies)");
    constexpr int BK = Tr::BK, VEC = GoTcGeom<T>::VEC, KCH = BK / VEC, SLD = BK;
    constexpr int BM = GO_TC_WIDE_TILE_M;
    constexpr int CT = GO_TC_WS_PRODUCER_THREADS, MMA_THREADS = GO_TC_WS_THREADS - CT;
    // A: CC chunks of each of NR rows a producer thread, its row's TPR threads taking
    // interleaved chunks (thread p: chunks p and p + TPR), so one copy instruction of a warp
    // reads whole 32-byte sectors of 16 rows; the row's address and mask serve CC copies.
    constexpr int CC = 2;
    constexpr int TPR = KCH / CC;             // threads per A row of a stage
    constexpr int NR = BM * KCH / CT / CC;    // A rows (pixels) per producer thread
    constexpr int NB = TC_BN * KCH / CT;  // B chunks per producer thread
    // NCHW: the groups of 8 A rows a producer warp copies (AEL), one row of each a thread.
    constexpr int NAH = BM / (CT / 32) / 8;
    constexpr int NA = NC ? NAH : NR;     // A rows (pointers, masks) per producer thread
    static_assert(MMA_THREADS == 2 * 128 && BM == 2 * 64 && NR * CC * CT == BM * KCH &&
                      NB * CT == TC_BN * KCH && (CT / TPR) % 8 == 0 &&
                      (!BKN || (CT / (TC_BN / VEC)) % 8 == 0) && KCH == 4,
                  "two m64n64 warpgroups; a producer thread's rows (and [k][nn] B rows) a "
                  "multiple of the swizzle's 8-row period apart");
    constexpr int STAGE = (BM + TC_BN) * SLD;  // elements of a stage's A and B
    static_assert(STAGE * (int)sizeof(S) * (XS ? 2 : 1) == go_tc_ws_stage_bytes<T, TF32>(),
                  "a stage");
    // Stage s: A at As + s * BM * SLD, B at Bs + s * TC_BN * SLD; exact f32's small parts at
    // the same offsets from Xs + s * STAGE (after every stage's A and B).
    S* As = reinterpret_cast<S*>(smem);
    S* Bs = As + ring.stages * BM * SLD;
    [[maybe_unused]] S* Xs = As + ring.stages * STAGE;
    auto sdst = [](int r, int c) { return go_tc_vec_sdst<T, true>(r, c); };
    const int kiters = (int)P.ntaps * ((int)P.jlen / BK);
    if (threadIdx.x >= MMA_THREADS) {
        // The producer: rows pt / TPR + (CT / TPR) r, chunks pt % TPR + TPR c; B as
        // go_tc_tile_vec's (BEL: element by element, below).
        // (Opaque: what is derived from it is computed here each tile, not hoisted to the
        // kernel's start, where it held registers through the problem's setup, which spilled.)
        const int pt = go_opaque((int)threadIdx.x - MMA_THREADS);
        const T* arow[NA];
        unsigned amask[NA];
        const int ntx = (int)P.ntx, nty = ntx > 0 ? (int)P.ntaps / ntx : 0;
        // NCHW (AEL): rows 32 pw + 8 h + lane % 8 of producer warp pw, at channel lane / 8 of
        // the chunk (planes apart).
#pragma unroll
        for (int r = 0; r < NA; ++r)
            go_tc_vec_arow(P, src,
                           NC ? m_base + 32 * (pt / 32) + 8 * r + pt % 8
                              : m_base + pt / TPR + r * (CT / TPR),
                           NC ? (pt % 32) / 8 : (pt % TPR) * VEC, nty, ntx, arow[r], amask[r]);
        const int adst = sdst(pt / TPR, pt % TPR);
        constexpr int ADST1 = (CT / TPR) * SLD;
        // A chunk (r, c) of this thread in a stage: chunk pt % TPR + c TPR of its row r, whose
        // swizzled place is chunk pt % TPR's xor c TPR (chunks below 4), ADST1 a row on.
        static_assert(TPR * CC == 4, "chunk pt % TPR + c TPR is chunk pt % TPR xor c TPR");
        auto adst_at = [&](int r, int c) { return (adst ^ (c * TPR * VEC)) + r * ADST1; };
        const GoTcVecB<T, BKN, true, false, CT> B(P, w, n_base, pt);
        // BEL: producer warp pw's lanes copy nn rows 16 pw + 8 h + lane % 8 (h = 0, 1), k
        // 4 c + lane / 8 of each 4-element chunk c of the stage's 16 k: per copy instruction
        // 8 rows x 4 k, four 32-byte sectors of the filter and the 32 banks of the stage once
        // each (the 64-byte swizzle: the rows' parities and (r >> 1) & 3 all differ). In the
        // stage element (h, c) sits at belt(h, c) = (bel0 ^ 4 c) + 128 h (chunk c ^ sw, sw
        // the row's swizzle; rows 8 apart share it), its source at bsrc + boff + 4 c b_j + 8
        // h b_n; rows past the group's channels are zero-filled.
        static_assert(!BEL || (CT == 128 && TC_BN == 64 && BK == 16 && VEC == 4),
                      "BEL: 4 warps x 16 rows, four 4-element chunks a row");
        [[maybe_unused]] const int bel0 = sdst(16 * (pt / 32) + pt % 8, 0) + (pt % 32) / 8;
        [[maybe_unused]] auto belt = [&](int h, int c) { return (bel0 ^ (4 * c)) + 128 * h; };
        [[maybe_unused]] const go_i64 bel_row = n_base + 16 * (pt / 32) + pt % 8;
        [[maybe_unused]] const T* bsrc = w + P.b_off + (pt % 32) / 8 * P.b_j + bel_row * P.b_n;
        // AEL (NCHW): as BEL, with pixel rows for nn rows, four groups of 8 (h) a warp's 32:
        // element (h, c) (row 32 pw + 8 h + lane % 8, k 4 c + lane / 8) at aelt(h, c), from
        // arow[h] + the cursor's offset + 4 c channel planes; pixels outside zero-filled. A
        // warp's copy instruction reads 8 consecutive pixels of 4 planes (four 32-byte
        // sectors where aligned) and writes the 32 banks once each.
        static_assert(!NC || (CT == 128 && BM == 128 && BK == 16 && VEC == 4 && NAH == 4),
                      "AEL: 4 warps x 32 rows, four 4-element chunks a row");
        [[maybe_unused]] const int ael0 = sdst(32 * (pt / 32) + pt % 8, 0) + (pt % 32) / 8;
        [[maybe_unused]] auto aelt = [&](int h, int c) { return (ael0 ^ (4 * c)) + 128 * h; };
        // BEL: B split by 16-byte chunks after the producer's barrier, chunk pt % KCH of nn
        // rows pt / KCH and CT / KCH further (a quarter warp's 8 chunks: two whole 64-byte
        // rows, no bank conflict).
        [[maybe_unused]] const int bkd = sdst(pt / KCH, pt % KCH);
        constexpr int BKD1 = (CT / KCH) * SLD;
        static_assert(!BEL || NB * (CT / KCH) == TC_BN, "B's chunks, NB a thread");
        const int jlen = (int)P.jlen;
        GoTcVecCursor cur(P);
        // f32: the chunks split and published LAG behind the ones copied (pub: their ring).
        constexpr int LAG = SPLIT ? GO_TC_WS_SPLIT_LAG : 0;
        [[maybe_unused]] GoTcWsRing pub = ring;
        for (int it = 0; it < kiters + LAG; ++it) {
            if constexpr (SPLIT) {
                if (it >= LAG) {
                    // Chunk it - LAG, before chunk it's copies, whose stage waits for the
                    // release of chunk it - stages, which the consumers give once chunk it -
                    // stages + 1 is published (LAG + 1 stages suffice): this thread's copies
                    // of it landed (the LAG - 1 chunks after it may be pending, fewer at the
                    // tile's end, so that none is left once its last chunk is published),
                    // split in place, published.
                    go_cp_async_wait_at_most<LAG - 1>((it - 1 < kiters ? it - 1 : kiters - 1) -
                                                      (it - LAG));
                    // ELS: every producer thread's copies of it landed, for the split below
                    // by chunks that other threads' element copies filled.
                    if constexpr (ELS) go_warpgroup_sync<GO_TC_WS_PRODUCER_BARRIER>();
                    const unsigned q = pub.s;
                    S* as = As + q * BM * SLD;
                    S* bs = Bs + q * TC_BN * SLD;
                    S* xa = Xs + q * STAGE;
#pragma unroll
                    for (int r = 0; r < NR; ++r)
#pragma unroll
                        for (int c = 0; c < CC; ++c)
                            go_tc_split_tf32<TF32>(as + adst_at(r, c), xa + adst_at(r, c));
                    if constexpr (BEL) {
                        // Past the producer's barrier: B by 16-byte chunks too (bkd).
#pragma unroll
                        for (int r = 0; r < NB; ++r)
                            go_tc_split_tf32<TF32>(bs + bkd + r * BKD1,
                                                   xa + BM * SLD + bkd + r * BKD1);
                    } else {
#pragma unroll
                        for (int r = 0; r < NB; ++r)
                            go_tc_split_tf32<TF32>(bs + B.dst + r * B.DST1,
                                                   xa + BM * SLD + B.dst + r * B.DST1);
                    }
                    go_fence_proxy_async_smem();
                    go_mbar_arrive(&full[q]);
                    pub.next();
                }
            }
            if (it < kiters) {
                // The stage's last chunk (k - stages) released: the phase of empty before ph.
                const unsigned s = ring.s;
                go_mbar_wait(&empty[s], ring.ph ^ 1);
                S* as = As + s * BM * SLD;
                S* bs = Bs + s * TC_BN * SLD;
                const int aoff = (int)(NC ? cur.atap : cur.atap + cur.j0);
                const int boff = (int)(BKN ? cur.btap : cur.btap + cur.j0);
                if constexpr (NC) {
                    const int aj4 = 4 * (int)P.a_j;
#pragma unroll
                    for (int h = 0; h < NAH; ++h) {
                        const bool in = (amask[h] & 1u) != 0;
                        const T* ap = in ? arow[h] + aoff : w;
                        const int step = in ? aj4 : 0;
#pragma unroll
                        for (int c = 0; c < KCH; ++c)
                            go_cp_async_4_ca(as + aelt(h, c), ap + c * step, in ? 4 : 0);
                    }
                } else {
#pragma unroll
                    for (int r = 0; r < NR; ++r) {
                        const bool in = (amask[r] & 1u) != 0;
                        const T* src_r = in ? arow[r] + aoff : w;
#pragma unroll
                        for (int c = 0; c < CC; ++c)
                            go_tc_vec_copy16<1>(as + adst_at(r, c),
                                                src_r + (in ? c * TPR * VEC : 0), in ? 16 : 0);
                    }
                }
                if constexpr (BEL) {
                    const T* bp = bsrc + boff;
                    const int bj4 = 4 * (int)P.b_j, bh = 8 * (int)P.b_n;
#pragma unroll
                    for (int h = 0; h < 2; ++h) {
                        // (Outside: every copy from w, src-size 0.)
                        const bool in = bel_row + 8 * h < P.nlen;
                        const T* bph = in ? bp + h * bh : w;
                        const int step = in ? bj4 : 0;
#pragma unroll
                        for (int c = 0; c < KCH; ++c)
                            go_cp_async_4_ca(bs + belt(h, c), bph + c * step, in ? 4 : 0);
                    }
                } else {
                    B.copy(bs, w, boff);
                }
                if constexpr (SPLIT) go_cp_async_commit();
                else go_cp_async_mbar_arrive_noinc(&full[s]);
                cur.advance<BK, BKN, NC, NA>(P, jlen, ntx, amask);
                ring.next();
            }
        }
    }
    if (threadIdx.x < MMA_THREADS) {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        GoTcAcc<T, 16, 64> acc;
        go_tc_acc_zero<T, 16, 64>(acc);
        // The consumers: wait for the chunk's stage, its wgmma group issued, and once the
        // group before it has retired (wait_group 1), that group's stage released.
        unsigned s_prev = 0;
        // The epilogue's two output rows, taken here so that their divisions' latency goes
        // under the first stage's wait rather than after the last wgmma.
        T* orow[2];
        for (int h = 0; h < 2; ++h)
            orow[h] = go_tc_ws_out_row(P, out, m_base + warp * 16 + lane / 4 + 8 * h, n_base);
        const bool pair = P.o_c == 1 && P.nlen % 2 == 0 && P.o_col % 2 == 0 && P.o_off % 2 == 0 &&
                          reinterpret_cast<uintptr_t>(out) % (2 * sizeof(S)) == 0;
        // Stage 0's descriptors, stage s's s stages on (kept rather than rebuilt from the
        // stage's generic address each chunk: 17 fewer instructions a chunk, exact f32 28),
        // built here each tile (hoisted to the kernel's start they held registers through the
        // problem's setup, which then spilled).
        constexpr bool BN = BKN && !BEL;  // B staged N-major (the 16-bit forward's)
        S* const as0 = go_opaque(As);
        const GoWgmmaDesc da0 = go_tc_stage_desc_a<T>(as0, warp / 4);
        const GoWgmmaDesc db0 = go_tc_stage_desc_b<T, BN>(as0 + (Bs - As));
        [[maybe_unused]] const GoWgmmaDesc xda0 = go_tc_stage_desc_a<T>(as0 + (Xs - As), warp / 4);
        [[maybe_unused]] const GoWgmmaDesc xdb0 =
            go_tc_stage_desc_b<T, false>(as0 + (Xs - As) + BM * SLD);
        constexpr int A_BYTES = BM * SLD * (int)sizeof(S), B_BYTES = TC_BN * SLD * (int)sizeof(S);
        constexpr int X_BYTES = STAGE * (int)sizeof(S);
        for (int it = 0; it < kiters; ++it) {
            const unsigned s = ring.s;
            go_mbar_wait(&full[s], ring.ph);
            // The copies, visible to this thread through the barrier, visible to its wgmma.
            go_fence_proxy_async_smem();
            go_tc_stage_wgmma_desc<T, BN, TF32>(
                go_wgmma_desc_add(da0, (int)s * A_BYTES), go_wgmma_desc_add(db0, (int)s * B_BYTES),
                &acc[0][0][0], go_wgmma_desc_add(xda0, (int)s * X_BYTES),
                go_wgmma_desc_add(xdb0, (int)s * X_BYTES));
            go_wgmma_wait<1>();
            if (it >= 1 && lane == 0) go_mbar_arrive(&empty[s_prev]);
            s_prev = s;
            ring.next();
        }
        go_wgmma_wait<0>();
        if (kiters >= 1 && lane == 0) go_mbar_arrive(&empty[s_prev]);
        go_tc_ws_store<T>(P, acc, orow, n_base, lane, pair);
    }
}
#endif  // GO_HAS_WGMMA

// The tile kinds conv2d_tc_layout runs: the general go_tc_tile, the lean go_tc_tile_vec, the
// lean tile GO_TC_WIDE_TILE_M pixels high on GO_TC_WIDE_THREADS threads (8 warps, 3 stages:
// the wide kernels), and the lean tile GO_TC_TALL_TILE_M pixels high on 4 warps of
// GO_TC_TALL_WARP_M x TC_WN (3 stages, which fit the 48 KB of static shared memory: the tall
// kernels, the default of 16-bit NHWC backprop_input and forward). Four stages in dynamic
// shared memory measured within 1% of three for both (an H200, 2026-11-27). The square
// tile: 128 pixels on 2 warps of GO_TC_TALL_WARP_M x GO_TC_SQUARE_WARP_N (3 stages): every A
// fragment is read from shared memory by one warp instead of two (14% fewer instructions
// than the tall tile), but at 255 registers only 8 warps fit an SM and they wait on
// latencies the tall tile's 12 hide (H200, 2026-11-28: W4 10% slower, W5f 6%).
// The wgmma tile (sm_90a images only, GO_HAS_WGMMA): the wide tile's 128 pixels on 8 warps,
// two warpgroups of one m64n64 each per k16 (warp w's m16 x 64 C fragments are rows 16w..),
// A and B staged in the 64-byte swizzle and read by wgmma straight from shared memory: no
// fragment loads or mma.sync in the main loop, 32 accumulators a thread (3 stages).
// The lean wgmma tile (GO_TC_WGMMA_LEAN): the lean tile's 64 pixels on one warpgroup, 4
// stages. f32's wgmma tile, both ops in both layouts, m64n64k8 tf32 (3xTF32, or plain TF32
// under the opt-in) on stages split in place (go_tc_split_tf32) with the split buffer after
// the stages (40 KB of static shared memory; 128-pixel tiles with 3 stages would not fit 48
// KB beside it; the forward's HWIO B gathered through registers and stored K-major); and
// 16-bit NCHW's, both ops (m64n64k16, the wgmma tile's operations; its A chunks stored to
// the stage from registers as by the lean NCHW kernel, at the swizzled positions).
// The warp-specialized wgmma tile (GO_TC_WGMMA_WS, go_tc_tile_ws): the wgmma tile's block
// tile on GO_TC_WS_THREADS threads, its stages in dynamic shared memory (STAGES 0 here: as
// many as the launch gives, GoTcWsRing) and their mbarriers.
enum GoTcTileKind { GO_TC_GENERAL = 0, GO_TC_LEAN = 1, GO_TC_WIDE = 2, GO_TC_TALL = 3,
                    GO_TC_SQUARE = 4, GO_TC_WGMMA = 5, GO_TC_WGMMA_LEAN = 6,
                    GO_TC_WGMMA_WS = 7 };
template <int KIND> struct GoTcTileShape {
    static constexpr bool WG =
        KIND == GO_TC_WGMMA || KIND == GO_TC_WGMMA_LEAN || KIND == GO_TC_WGMMA_WS;
    static constexpr int BM = KIND == GO_TC_WIDE || KIND == GO_TC_WGMMA || KIND == GO_TC_WGMMA_WS
                                  ? GO_TC_WIDE_TILE_M
                              : KIND == GO_TC_TALL   ? GO_TC_TALL_TILE_M
                              : KIND == GO_TC_SQUARE ? GO_TC_SQUARE_TILE_M
                                                     : TC_BM;
    static constexpr int THREADS = KIND == GO_TC_WIDE || KIND == GO_TC_WGMMA ? GO_TC_WIDE_THREADS
                                   : KIND == GO_TC_SQUARE   ? GO_TC_SQUARE_THREADS
                                   : KIND == GO_TC_WGMMA_WS ? GO_TC_WS_THREADS
                                                            : TC_THREADS;
    static constexpr int STAGES = KIND == GO_TC_LEAN || KIND == GO_TC_WGMMA_LEAN ? TC_VSTAGES
                                  : KIND == GO_TC_WGMMA_WS                     ? 0
                                                                               : 3;
    static constexpr int WM =
        KIND == GO_TC_TALL || KIND == GO_TC_SQUARE ? GO_TC_TALL_WARP_M : WG ? 16 : TC_WM;
    static constexpr int WN = KIND == GO_TC_SQUARE || WG ? GO_TC_SQUARE_WARP_N : TC_WN;
    // Bytes of a stage row, and the shared memory's alignment (the wgmma tile: whole
    // 512-byte swizzle atoms).
    static constexpr int ROW_BYTES = WG ? 64 : TC_ROW_BYTES;
    static constexpr int ALIGN = WG ? 512 : 16;
    // A chunks a thread copies per pixel row (0: one; see go_tc_tile_vec).
    static constexpr int ACC =
        KIND == GO_TC_TALL || KIND == GO_TC_SQUARE ? GO_TC_TALL_ROW_CHUNKS : 0;
};

// Grid: x strides over pixel tiles, y over groups x channel tiles, z over stride phases
// (backprop_input; forward has one). Block: the tile kind's threads. The (phase, group)
// problem lives in shared memory: its ~30 offsets and strides would otherwise occupy
// registers the accumulators need.
template <typename T, int L, bool FWD, bool BKN, bool TF32, int KIND = GO_TC_GENERAL>
GO_DEV void conv2d_tc_layout(const GoConvParams& p, unsigned char* smem, go_i64* out_base,
                             GoTcProblem* Ps) {
    typedef GoTcTileShape<KIND> Sh;
    const T* __restrict__ src = reinterpret_cast<const T*>(FWD ? p.x : p.y);
    const T* __restrict__ w = reinterpret_cast<const T*>(p.w);
    T* __restrict__ out = reinterpret_cast<T*>(FWD ? p.y : p.x);
    const go_i64 nlen = FWD ? p.co / p.groups : p.ci / p.groups;
    const go_i64 ntiles = (nlen + TC_BN - 1) / TC_BN;
    const go_i64 phases = FWD ? 1 : go_conv_phase_count(p);
    for (go_i64 ph = blockIdx.z; ph < phases; ph += gridDim.z) {
        for (go_i64 gn = blockIdx.y; gn < p.groups * ntiles; gn += gridDim.y) {
            const go_i64 g = gn / ntiles, n_base = (gn % ntiles) * TC_BN;
            __syncthreads();  // every thread is done with the previous problem
            if (threadIdx.x == 0)
                *Ps = FWD ? go_tc_forward_problem<L>(p, g) : go_tc_backprop_problem<L>(p, ph, g);
            __syncthreads();
            const go_i64 mtiles = (Ps->npix + Sh::BM - 1) / Sh::BM;
            for (go_i64 mt = blockIdx.x; mt < mtiles; mt += gridDim.x) {
                if constexpr (KIND != GO_TC_GENERAL)
                    go_tc_tile_vec<T, L, BKN, TF32, Sh::BM, Sh::THREADS, Sh::STAGES, Sh::WM,
                                   Sh::ACC, Sh::WN, Sh::WG>(*Ps, src, w, out, mt * Sh::BM,
                                                            n_base, smem, out_base);
                else
                    go_tc_tile<T, L, BKN, TF32, FWD || GoTcTraits<T>::STAGED_BACKPROP>(
                        *Ps, src, w, out, mt * TC_BM, n_base, smem, out_base);
            }
        }
    }
}

#if GO_HAS_WGMMA
// The warp-specialized kernels' block state in shared memory: the stages' full and empty
// mbarriers, the (phase, group) problem, and the block's position in the phase x channel
// tile loop, which thread 0 advances between two block barriers: each thread keeps only
// its pixel tile loop in registers (with the outer loops' state in registers too, the
// direct-store epilogue's kernel spilled at two blocks per SM).
struct GoTcWsBlock {
    uint64_t full[GO_TC_WS_MAX_STAGES], empty[GO_TC_WS_MAX_STAGES];
    GoTcProblem P;
    unsigned ph, gn, n_base, live;  // live: 0 once the block's loops are done
};
// conv2d_tc_layout for the warp-specialized tile (layout L). Same problems and tiles in
// the same order as conv2d_tc_layout's loops over phases (z), group x channel tiles (y) and
// pixel tiles (x). Its loop state in 32 bits, which the parameters allow
// (go_tc_vec_params_ok: the pixels and the phases below 2^31, the channel tiles below 2^32):
// in 64 bits the kernel needed 106 registers and spilled at two blocks per SM (80).
// smem: the dynamic shared memory of `stages` stages (2 to GO_TC_WS_MAX_STAGES).
template <typename T, int L, bool FWD, bool TF32>
GO_DEV void conv2d_tc_ws_layout(const GoConvParams& p, unsigned char* smem, unsigned stages,
                                GoTcWsBlock* B) {
    constexpr int BM = GoTcTileShape<GO_TC_WGMMA_WS>::BM;
    // Channel tiles a group (of nlen output channels).
    auto ntiles = [](const GoConvParams& q) {
        return ((unsigned)(FWD ? q.co / q.groups : q.ci / q.groups) + TC_BN - 1) / TC_BN;
    };
    if (threadIdx.x == 0) {  // (published by the loop's first barrier)
        for (unsigned s = 0; s < stages; ++s) {
            go_mbar_init(&B->full[s], GO_TC_WS_PRODUCER_THREADS);
            go_mbar_init(&B->empty[s], (GO_TC_WS_THREADS - GO_TC_WS_PRODUCER_THREADS) / 32);
        }
        B->ph = blockIdx.z;
        B->gn = blockIdx.y;
    }
    // The block's stage ring (every thread runs every tile: the same position in each).
    GoTcWsRing ring{0, 0, stages};
    for (;;) {
        __syncthreads();  // every thread is done with the previous problem
        if (threadIdx.x == 0) {
            const unsigned nt = ntiles(p), phases = FWD ? 1 : (unsigned)go_conv_phase_count(p);
            B->live = B->ph < phases && B->gn < (unsigned)p.groups * nt;
            if (B->live) {
                B->n_base = B->gn % nt * TC_BN;
                B->P = FWD ? go_tc_forward_problem<L>(p, B->gn / nt)
                           : go_tc_backprop_problem<L>(p, B->ph, B->gn / nt);
            }
        }
        __syncthreads();
        // The producer's copies have all landed (the consumers waited for them) by the
        // last pass's first barrier, before it exits.
        if (!B->live) return;
        const T* __restrict__ src = reinterpret_cast<const T*>(FWD ? p.x : p.y);
        const T* __restrict__ w = reinterpret_cast<const T*>(p.w);
        T* __restrict__ out = reinterpret_cast<T*>(FWD ? p.y : p.x);
        const unsigned mtiles = (unsigned)((B->P.npix + BM - 1) / BM), n_base = B->n_base;
        for (unsigned mt = blockIdx.x; mt < mtiles; mt += gridDim.x)
            go_tc_tile_ws<T, L, FWD, TF32>(B->P, src, w, out, mt * BM, n_base, smem, B->full,
                                           B->empty, ring);
        // The next position (read by thread 0 alone, after the next barrier).
        if (threadIdx.x == 0) {
            if ((B->gn += gridDim.y) >= (unsigned)p.groups * ntiles(p)) {
                B->gn = blockIdx.y;
                B->ph += gridDim.z;
            }
        }
    }
}
#endif

// Shared memory, declared once per entry point (both layouts use it): the pipeline's
// stages (A then B; the epilogue tile reuses them), the epilogue's row offsets and the
// problem.
#define GO_TC_SMEM                                                              \
    __shared__ __align__(16) unsigned char smem[GoTcGeom<T>::SMEM_BYTES];       \
    __shared__ go_i64 out_base[TC_BM];                                          \
    __shared__ GoTcProblem problem;

// The layout/filter-order dispatch of one precision.
template <typename T, bool FWD, bool TF32>
GO_DEV void conv2d_tc_dispatch(const GoConvParams& p, unsigned char* smem, go_i64* out_base,
                               GoTcProblem* Ps) {
    // The forward's HWIO filter is contiguous along the output channel (the GEMM's nn):
    // staged [k][nn].
    const bool kn = FWD && p.filter_layout == GO_FILTER_HWIO;
    if (p.layout == GO_LAYOUT_NCHW) {
        if (kn) conv2d_tc_layout<T, GO_LAYOUT_NCHW, FWD, FWD, TF32>(p, smem, out_base, Ps);
        else conv2d_tc_layout<T, GO_LAYOUT_NCHW, FWD, false, TF32>(p, smem, out_base, Ps);
    } else {
        if (kn) conv2d_tc_layout<T, GO_LAYOUT_NHWC, FWD, FWD, TF32>(p, smem, out_base, Ps);
        else conv2d_tc_layout<T, GO_LAYOUT_NHWC, FWD, false, TF32>(p, smem, out_base, Ps);
    }
}
// f32 reads p.f32_precision (plain TF32 is its own instantiation, so the exact path keeps
// its registers); the other types have one arithmetic.
template <typename T, bool FWD>
GO_DEV void conv2d_tc_entry(const GoConvParams& p, unsigned char* smem, go_i64* out_base,
                            GoTcProblem* Ps) {
    if constexpr (sizeof(T) == 4) {
        if (p.f32_precision == GO_F32_PRECISION_TF32) {
            conv2d_tc_dispatch<T, FWD, true>(p, smem, out_base, Ps);
            return;
        }
    }
    conv2d_tc_dispatch<T, FWD, false>(p, smem, out_base, Ps);
}
// The lean kernels (go_tc_tile_vec), one entry point per source layout L (in one kernel
// NCHW's registered A chunk spilled the 16-bit NHWC kernel at four blocks per SM); the
// forward's HWIO filter staged [k][nn]. For parameters where go_tc_vec_params_ok holds with
// 16-byte aligned source and filter; the host picks them by the same rule, and a launch it
// should not have made traps.
template <typename T, bool FWD, int L>
GO_DEV void go_tc_vec_check(const GoConvParams& p) {
    const uint64_t src = FWD ? p.x : p.y;
    if (p.layout != L || !go_tc_vec_params_ok<T>(p, FWD) || src % 16 != 0 || p.w % 16 != 0)
        go_trap();
}
template <typename T, bool FWD, int L, int KIND>
GO_DEV void conv2d_tc_vec_entry(const GoConvParams& p, unsigned char* smem, go_i64* out_base,
                                GoTcProblem* Ps) {
    go_tc_vec_check<T, FWD, L>(p);
    if constexpr (sizeof(T) == 4) {
        if (p.f32_precision == GO_F32_PRECISION_TF32) {
            conv2d_tc_layout<T, L, FWD, FWD, true, KIND>(p, smem, out_base, Ps);
            return;
        }
    }
    conv2d_tc_layout<T, L, FWD, FWD, false, KIND>(p, smem, out_base, Ps);
}
// The lean kernels' shared memory: the tile kind's stages, or the epilogue tile where that
// is larger.
template <typename T, int KIND> struct GoTcVecSmem {
    typedef GoTcTileShape<KIND> Sh;
    static constexpr int STAGE_BYTES = (Sh::BM + TC_BN) * Sh::ROW_BYTES;
    static constexpr int TILE_BYTES = Sh::BM * GoTcGeom<T>::CLD * (int)sizeof(typename GoTcTraits<T>::S);
    // f32 on a wgmma tile: the split buffer after the stages (one stage's A and B).
    static constexpr int SPLIT_BYTES =
        Sh::WG && sizeof(typename GoTcTraits<T>::S) == 4 ? STAGE_BYTES : 0;
    static constexpr int PIPE_BYTES = Sh::STAGES * STAGE_BYTES + SPLIT_BYTES;
    static constexpr int BYTES = PIPE_BYTES > TILE_BYTES ? PIPE_BYTES : TILE_BYTES;
};
#define GO_TC_VEC_SMEM(KIND)                                                        \
    __shared__ __align__(GoTcTileShape<KIND>::ALIGN) unsigned char                 \
        smem[GoTcVecSmem<T, KIND>::BYTES];                                          \
    __shared__ go_i64 out_base[GoTcTileShape<KIND>::BM];                            \
    __shared__ GoTcProblem problem;
// One lean entry body: its shared memory, then the layout L's lean tiles of kind KIND.
#define GO_TC_VEC_BODY(NAME, FWD, L, KIND)                                   \
    template <typename T>                                                    \
    GO_DEV void NAME(const GoConvParams& p) {                                \
        GO_TC_VEC_SMEM(KIND)                                                 \
        conv2d_tc_vec_entry<T, FWD, L, KIND>(p, smem, out_base, &problem);   \
    }
GO_TC_VEC_BODY(conv2d_backprop_input_tc_vec_body, false, GO_LAYOUT_NHWC, GO_TC_LEAN)
GO_TC_VEC_BODY(conv2d_forward_tc_vec_body, true, GO_LAYOUT_NHWC, GO_TC_LEAN)
GO_TC_VEC_BODY(conv2d_backprop_input_tc_vec_nchw_body, false, GO_LAYOUT_NCHW, GO_TC_LEAN)
GO_TC_VEC_BODY(conv2d_forward_tc_vec_nchw_body, true, GO_LAYOUT_NCHW, GO_TC_LEAN)
// The wide kernel (backprop_input, 16-bit types, NHWC): GO_TC_WIDE_TILE_M x TC_BN tiles on
// 8 warps. (The forward's twin spilled on sm_120 at two blocks per SM: not built.)
GO_TC_VEC_BODY(conv2d_backprop_input_tc_vec_wide_body, false, GO_LAYOUT_NHWC, GO_TC_WIDE)
// The tall kernels (backprop_input and forward, 16-bit types, NHWC; the default of both):
// GO_TC_TALL_TILE_M x TC_BN tiles on 4 warps of GO_TC_TALL_WARP_M x TC_WN.
GO_TC_VEC_BODY(conv2d_backprop_input_tc_vec_tall_body, false, GO_LAYOUT_NHWC, GO_TC_TALL)
GO_TC_VEC_BODY(conv2d_forward_tc_vec_tall_body, true, GO_LAYOUT_NHWC, GO_TC_TALL)
// The square kernels (backprop_input and forward, 16-bit types, NHWC): GO_TC_SQUARE_TILE_M x
// TC_BN tiles on 2 warps of GO_TC_TALL_WARP_M x GO_TC_SQUARE_WARP_N.
GO_TC_VEC_BODY(conv2d_backprop_input_tc_vec_square_body, false, GO_LAYOUT_NHWC, GO_TC_SQUARE)
GO_TC_VEC_BODY(conv2d_forward_tc_vec_square_body, true, GO_LAYOUT_NHWC, GO_TC_SQUARE)
#if GO_HAS_WGMMA
// The wgmma kernels (backprop_input and forward, 16-bit types, NHWC; sm_90a images and the
// emulator).
// f32's: the lean wgmma tile (GO_TC_WGMMA_LEAN).
GO_TC_VEC_BODY(conv2d_backprop_input_tc_vec_wgmma_body, false, GO_LAYOUT_NHWC,
               (sizeof(T) == 4 ? GO_TC_WGMMA_LEAN : GO_TC_WGMMA))
GO_TC_VEC_BODY(conv2d_forward_tc_vec_wgmma_body, true, GO_LAYOUT_NHWC,
               (sizeof(T) == 4 ? GO_TC_WGMMA_LEAN : GO_TC_WGMMA))
// NCHW on the lean wgmma tile, both ops (A gathered through registers, stored swizzled; the
// 16-bit forward's B N-major, two chunks a thread, f32's gathered through registers too).
GO_TC_VEC_BODY(conv2d_backprop_input_tc_vec_nchw_wgmma_body, false, GO_LAYOUT_NCHW,
               GO_TC_WGMMA_LEAN)
GO_TC_VEC_BODY(conv2d_forward_tc_vec_nchw_wgmma_body, true, GO_LAYOUT_NCHW, GO_TC_WGMMA_LEAN)
// The warp-specialized wgmma kernels (NHWC and f32 NCHW (L), both ops; 16-bit, and f32
// exact or under the TF32 opt-in): the stages in dynamic shared memory, as many whole ones
// (go_tc_ws_stage_bytes) as the launch gave past GO_TC_WS_SMEM_ALIGN bytes of alignment
// slack, in at most GO_TC_WS_MAX_STAGES * GO_TC_WS_STAGE_BYTES bytes and GO_TC_WS_MAX_STAGES
// stages (fewer than two trap, f32's fewer than GO_TC_WS_SPLIT_LAG + 1), and the block state
// (the epilogue stores from registers: no tile, no row offsets).
template <typename T, int L, bool FWD, bool TF32>
GO_DEV void conv2d_tc_ws_run(const GoConvParams& p, unsigned char* dsmem, GoTcWsBlock* B) {
    constexpr unsigned MOST = GO_TC_WS_MAX_STAGES * GO_TC_WS_STAGE_BYTES;
    const unsigned bytes = go_dynamic_smem_bytes();
    unsigned room = bytes < GO_TC_WS_SMEM_ALIGN ? 0 : bytes - GO_TC_WS_SMEM_ALIGN;
    if (room > MOST) room = MOST;
    const unsigned stages = room / go_tc_ws_stage_bytes<T, TF32>();
    // f32: the consumers hold a chunk's stage until the next chunk is published, which the
    // producer does GO_TC_WS_SPLIT_LAG chunks behind its copies: one stage more than that.
    if (stages < (sizeof(T) == 4 ? GO_TC_WS_SPLIT_LAG + 1 : 2)) go_trap();
    conv2d_tc_ws_layout<T, L, FWD, TF32>(p, go_smem_align<GO_TC_WS_SMEM_ALIGN>(dsmem), stages,
                                         B);
}
// One entry point per f32 arithmetic (in one kernel the two spilled 16 bytes at the 80
// registers of two blocks per SM; each alone fits): the exact one runs 3xTF32 whatever
// p.f32_precision allows, the TF32 one (TF32) traps unless the call allows TF32.
template <typename T, int L, bool FWD, bool TF32>
GO_DEV void conv2d_tc_ws_entry(const GoConvParams& p, unsigned char* dsmem, GoTcWsBlock* B) {
    static_assert(sizeof(T) == 2 || sizeof(T) == 4, "16-bit types, f32");
    static_assert(!TF32 || sizeof(T) == 4, "TF32: f32 only");
    static_assert(L == GO_LAYOUT_NHWC || sizeof(T) == 4, "NCHW: f32 only");
    static_assert(GoTcTileShape<GO_TC_WGMMA_WS>::ALIGN == GO_TC_WS_SMEM_ALIGN, "alignment");
    go_tc_vec_check<T, FWD, L>(p);
    if (TF32 && p.f32_precision != GO_F32_PRECISION_TF32) go_trap();
    conv2d_tc_ws_run<T, L, FWD, TF32>(p, dsmem, B);
}
#define GO_TC_WS_BODY(NAME, FWD, TF32, L)                                                  \
    template <typename T>                                                                  \
    GO_DEV void NAME(const GoConvParams& p) {                                              \
        GO_DYNAMIC_SMEM(dsmem, GO_TC_WS_SMEM_ALIGN +                                       \
                                   GO_TC_WS_MAX_STAGES * GO_TC_WS_STAGE_BYTES);            \
        __shared__ GoTcWsBlock block;                                                      \
        conv2d_tc_ws_entry<T, L, FWD, TF32>(p, dsmem, &block);                             \
    }
GO_TC_WS_BODY(conv2d_backprop_input_tc_vec_ws_body, false, false, GO_LAYOUT_NHWC)
GO_TC_WS_BODY(conv2d_forward_tc_vec_ws_body, true, false, GO_LAYOUT_NHWC)
GO_TC_WS_BODY(conv2d_backprop_input_tc_vec_ws_tf32_body, false, true, GO_LAYOUT_NHWC)
GO_TC_WS_BODY(conv2d_forward_tc_vec_ws_tf32_body, true, true, GO_LAYOUT_NHWC)
// f32 NCHW (exact, TF32): A copied element by element from its channel planes.
GO_TC_WS_BODY(conv2d_backprop_input_tc_vec_nchw_ws_body, false, false, GO_LAYOUT_NCHW)
GO_TC_WS_BODY(conv2d_forward_tc_vec_nchw_ws_body, true, false, GO_LAYOUT_NCHW)
GO_TC_WS_BODY(conv2d_backprop_input_tc_vec_nchw_ws_tf32_body, false, true, GO_LAYOUT_NCHW)
GO_TC_WS_BODY(conv2d_forward_tc_vec_nchw_ws_tf32_body, true, true, GO_LAYOUT_NCHW)
#undef GO_TC_WS_BODY

// ---------------------------------------------------------------------------------------
// The halo tile (GO_TC_HALO: conv2d_{backprop_input,forward}_tc_vec{,_nchw}_halo_<f16|bf16>,
// 16-bit NHWC and NCHW at unit source strides, sm_90a images and the emulator). The other
// tiles copy each tap's A anew: per tap and channel chunk 128 pixel rows, so a 3 x 3 filter
// reads each source pixel 9 times, with the copies' address math, masks and a stage's
// synchronisation each time (ncu on an H200, 2026-12-04: the wgmma tile's time went to that
// staging, 85 warp instructions a wgmma, not to the tensor cores). Here a tile's pixels are
// GO_TC_WIDE_TILE_M consecutive slots q of its image's phase rows padded by the taps' column
// span (slot q = a * wp + b, pixel (a, b) where b < cnt_x; the other slots are computed and
// not stored), so that tap (ty, tx) of slot q reads source slot q + ty * wp + tx: one shift
// for the whole tile. Its source is copied once, every channel of the group, into a halo
// buffer of hl = 128 + row span * wp + column span slots, K-major without swizzle (wgmma's
// mode 0): plane g (channels 8g..8g+7) holds slot h's 16 bytes at h * 16, planes hlp * 16
// bytes apart, so the operand of any tap is the same planes from a row on (a descriptor
// start per tap). The filter of the (phase, group, channel tile) problem stays in shared
// memory for all its tiles (every tap and chunk, in the wgmma tile's B stages), and each
// tile's halo is copied while the tile before it multiplies (two buffers; with room for one,
// before it). Per tile: one wait and one block barrier before the products, one after; each
// thread copies about hl * jlen / 8 / 256 16-byte chunks (W4: 8) where the wgmma tile copies
// 3 a chunk of 32 channels and tap (W4: 54) and meets 2 block barriers (W4: 36). The
// products are the wgmma tile's, in its order (taps ascending, then channels, a k16 at a
// time, on the same accumulators): the same bits. The filter and one halo buffer must fit
// the dynamic shared memory the launch gives (at most GO_TC_HALO_MAX_SMEM; host:
// launch::conv_tc_halo_smem_bytes, which bounds go_tc_halo_geom's bytes1 and halo over the
// phases), or the kernel traps. NCHW: the same halo and products; the copies go through
// registers (no 16-byte run holds a slot's channels), so one buffer (two blocks an SM hide
// the copies, not cp.async). TF32 (conv2d_*_tc_vec{,_nchw}_halo_tf32_f32, f32 under the TF32
// opt-in): the same halo in 4-channel planes (a k8 of tf32 is a k16's 32 bytes) and the same
// products on m64n64k8 tf32; its copies through registers (rounded to tf32 there), one
// buffer, one block an SM (W4: 206 KB), so a tile's first copies are loaded while the tile
// before it multiplies (go_tc_halo_problem).
struct GoTcHaloGeom {
    int tymin, txmin;  // the taps' smallest source row and column shifts
    int wp;            // slots a padded row: cnt_x + the taps' column span
    int hl, hlp;       // halo slots, and slots a plane holds (odd: the copies' banks)
    unsigned tpi;      // tiles an image
    unsigned tiles;    // tiles of the problem (images x tpi)
    go_i64 bytes1;     // shared memory the problem takes with one halo buffer (the filter's too)
    go_i64 halo;       // bytes of a halo buffer
};
template <typename T>
GO_DEV GoTcHaloGeom go_tc_halo_geom(const GoTcProblem& P) {
    constexpr int BM = GO_TC_WIDE_TILE_M;
    GoTcHaloGeom G;
    const go_i64 ntx = P.ntx, nty = ntx > 0 ? P.ntaps / ntx : 0;
    go_i64 y1 = 0, y2 = 0, x1 = 0, x2 = 0;
    if (P.ntaps > 0) {
        y1 = P.ty0;
        y2 = P.ty0 + (nty - 1) * P.tdy;
        x1 = P.tx0;
        x2 = P.tx0 + (ntx - 1) * P.tdx;
    }
    const go_i64 sy = y2 > y1 ? y2 - y1 : y1 - y2, sx = x2 > x1 ? x2 - x1 : x1 - x2;
    G.tymin = (int)(y1 < y2 ? y1 : y2);
    G.txmin = (int)(x1 < x2 ? x1 : x2);
    const go_i64 wp = P.cnt_x + sx, hl = BM + sy * wp + sx;
    const go_i64 esz = sizeof(typename GoTcTraits<T>::S);
    G.halo = P.jlen * (hl | 1) * esz;
    G.bytes1 = P.ntaps * P.jlen * TC_BN * esz + G.halo;
    // (A problem past the limit only traps; its sizes may not fit the ints.)
    G.wp = (int)wp;
    G.hl = (int)hl;
    G.hlp = (int)(hl | 1);
    const go_i64 qimg = P.cnt_y * wp, img = P.cnt_y * P.cnt_x;
    G.tpi = (unsigned)((qimg + BM - 1) / BM);
    G.tiles = img > 0 ? (unsigned)(P.npix / img) * G.tpi : 0;
    return G;
}
// One (phase, group, channel tile) problem: its filter copied to shared memory, then the
// block's tiles (tile0, tile0 + tstep, ...; tile = image * tpi + slot tile), each's halo
// copied while the one before multiplies (two buffers), or (one buffer: two blocks an SM
// where two buffers would leave room for one) before it multiplies. BKN: the forward's
// [k][nn] B (N-major).
template <typename T, bool BKN, int L, bool TF32>
GO_DEV void go_tc_halo_problem(const GoTcProblem& P, const GoTcHaloGeom& G,
                               const T* __restrict__ src, const T* __restrict__ w,
                               T* __restrict__ out, go_i64 n_base, unsigned char* smem,
                               unsigned tile0, unsigned tstep, bool two) {
    typedef GoTcTraits<T> Tr;
    typedef typename Tr::S S;
    constexpr int BK = Tr::BK, VEC = GoTcGeom<T>::VEC, BM = GO_TC_WIDE_TILE_M;
    constexpr int NT = GO_TC_HALO_THREADS;
    // f32 (the TF32 opt-in only: 3xTF32's small parts would not fit beside the filter).
    constexpr bool F32 = sizeof(S) == 4;
    static_assert(((sizeof(S) == 2 && BK == 32 && VEC == 8 && !TF32) ||
                   (F32 && TF32 && BK == 16 && VEC == 4)) &&
                      BM == 128 && NT == 256,
                  "16-bit types: two m64n64k16 warpgroups, k32 chunks of four 8-channel planes; "
                  "TF32: m64n64k8, k16 chunks of four 4-channel planes (the same bytes)");
    if (tile0 >= G.tiles) return;
    const int t = threadIdx.x, warp = t / 32, lane = t % 32;
    const int jlen = (int)P.jlen, kch = jlen / BK, kg = jlen / VEC;
    const int ntaps = (int)P.ntaps, ntx = (int)P.ntx;
    S* const Bs = reinterpret_cast<S*>(smem);
    S* const Hs = Bs + ntaps * kch * TC_BN * BK;
    const int hbuf = kg * G.hlp * VEC;  // elements of a halo buffer
    // The filter: stage (tap i, chunk c) at i * kch + c, in the cursor's order, as the wgmma
    // tile stages it. TF32: rounded to tf32 (go_tc_split_tf32's big parts), by each thread
    // in the chunk it copied once the copies landed (fdst; in the first tile), or (the
    // forward's N-major HWIO filter, which tf32 wgmma cannot read) gathered through registers
    // FB stages at a time, threads walking nn (the loads coalesce), rounded and stored
    // K-major in the swizzle of the wgmma tile's stages.
    [[maybe_unused]] int fdst = 0;
    {
        GoTcVecCursor cur(P);
        unsigned none[1] = {0};
        const int nst = ntaps * kch;
        if constexpr (F32 && BKN) {
            static_assert(NT == TC_BN * (BK / VEC), "one k chunk of one nn a thread");
            constexpr int FB = 4;
            const int nn = t % TC_BN, kc = t / TC_BN;
            const bool nin = n_base + nn < P.nlen;
            const T* wr = w + P.b_off + (go_i64)kc * VEC * P.b_j + (n_base + nn) * P.b_n;
            const int bj = (int)P.b_j, sdst = go_tc_vec_sdst<T, true>(nn, kc);
            for (int it0 = 0; it0 < nst; it0 += FB) {
                int bo[FB];
#pragma unroll
                for (int k = 0; k < FB; ++k) {
                    bo[k] = (int)cur.btap;
                    if (it0 + k < nst) cur.advance<BK, true, false, 1>(P, jlen, ntx, none);
                }
                uint32_t v[FB][VEC];
#pragma unroll
                for (int k = 0; k < FB; ++k)
#pragma unroll
                    for (int e = 0; e < VEC; ++e)
                        v[k][e] = nin && it0 + k < nst ? go_cvt_tf32(go_ldg(wr + (bo[k] + e * bj)))
                                                       : 0u;
#pragma unroll
                for (int k = 0; k < FB; ++k)
                    if (it0 + k < nst)
                        go_st_shared_words4(Bs + (it0 + k) * TC_BN * BK + sdst, v[k][0], v[k][1],
                                            v[k][2], v[k][3]);
            }
        } else {
            typedef GoTcVecB<T, BKN, true, false, NT> Bcopy;
            static_assert(!F32 || Bcopy::NB == 1, "TF32: one chunk of a stage a thread (fdst)");
            const Bcopy B(P, w, n_base, t);
            fdst = B.dst;
            for (int it = 0; it < nst; ++it) {
                B.copy(Bs + it * TC_BN * BK, w, (int)(BKN ? cur.btap : cur.btap + cur.j0));
                cur.advance<BK, BKN, false, 1>(P, jlen, ntx, none);
            }
        }
    }
    // The halo copies. NHWC: thread t takes plane g = t % kg of slots t / kg, + NT / kg, ...
    // (a warp's copy reads 32 / kg whole pixels' channels), walking its slots' source row r
    // and column c without a division; slots outside the source are zero-filled. NCHW (no
    // 16-byte run holds a slot's channels): warp w takes plane g = w % kg (and g + 8, ...
    // where kg > 8: ppw planes) of slots 32 (w / kg) + lane, + hstep, ..., so that each of
    // a slot's 8 loads (one a channel plane) reads 32 consecutive slots of one channel across
    // the warp, and its 16-byte shared store lands beside its neighbours'; NB slots' loads
    // are issued before their stores (the latency once a batch; two blocks an SM, one halo
    // buffer, hide the rest).
    // (The problem's values in registers: read from shared memory, where the problem lives,
    // they were read again after each copy, whose asm clobbers memory: 67 instructions a
    // copy.)
    constexpr bool NC = L == GO_LAYOUT_NCHW;
    constexpr int NB = 8;
    const int g = NC ? warp % kg : t % kg, hstep = NC ? 32 * (kg < 8 ? 8 / kg : 1) : NT / kg;
    const int wp = G.wp, hl = G.hl, tymin = G.tymin, txmin = G.txmin, ah = (int)P.a_h,
              aw = (int)P.a_w;
    const unsigned tpi = G.tpi;
    const go_i64 a_row = P.a_row, a_col = P.a_col;
    // (NCHW's fill reads the plane stride and halo planes where it runs: no asm there.)
    const GoTcProblem* const Pp = &P;
    const GoTcHaloGeom* const Gp = &G;
    const T* const src0 = src + P.a_off + (go_i64)g * VEC * P.a_j;
    const go_i64 a_n = P.a_n;
    S* const hdst = Hs + g * G.hlp * VEC;
    auto fill = [=](unsigned tile, int b) {
        if constexpr (!NC && !F32) {
            const T* base = src0 + (go_i64)(tile / tpi) * a_n;
            int h = t / kg;
            const go_i64 s = (go_i64)(tile % tpi) * BM + (go_i64)tymin * wp + h;
            int r = (int)go_floordiv(s, wp);
            int c = (int)(s - (go_i64)r * wp) + txmin;
            S* dst = hdst + b * hbuf;
            // The slot's source offset, stepped with it (read only where the slot is inside).
            go_i64 off = (go_i64)r * a_row + (go_i64)c * a_col;
            for (; h < hl; h += hstep) {
                const bool in = r >= 0 && r < ah && c >= 0 && c < aw;
                go_tc_vec_copy16<1>(dst + h * VEC, in ? base + off : w, in ? 16 : 0);
                off += hstep * a_col;
                for (c += hstep; c >= txmin + wp; c -= wp) {
                    ++r;
                    off += a_row - wp * a_col;
                }
            }
        } else if constexpr (!F32) {
            // Offsets in 32 bits within the group's 8 planes of the pass (the host and the
            // entry keep a source plane within 2^29 elements), a step's rows and columns
            // found once: a slot's 8 addresses are its offset plus multiples of a_j.
            const unsigned aj = (unsigned)Pp->a_j;
            const int ppw = kg > 8 ? kg / 8 : 1, hlp = Gp->hlp;
            const int arow = (int)a_row, acol = (int)a_col;
            const int dq = hstep / wp, dr = hstep - dq * wp;
            const int dstep = dq * arow + dr * acol, dwrap = arow - wp * acol;
            for (int pi = 0; pi < ppw; ++pi) {
                const T* base = go_opaque_ptr(src0 + (go_i64)(tile / tpi) * a_n +
                                              (go_i64)pi * 8 * VEC * Pp->a_j);
                int h = (t / 32 / kg) * 32 + t % 32;
                const go_i64 s = (go_i64)(tile % tpi) * BM + (go_i64)tymin * wp + h;
                int r = (int)go_floordiv(s, wp);
                int c = (int)(s - (go_i64)r * wp) + txmin;
                S* dst = hdst + b * hbuf + pi * 8 * hlp * VEC;
                int off = r * arow + c * acol;
                while (h < hl) {
                    int hb[NB], so[NB];  // the slots, and their offsets (-1: outside)
#pragma unroll
                    for (int k = 0; k < NB; ++k) {
                        hb[k] = h;
                        const bool in = h < hl && r >= 0 && r < ah && c >= 0 && c < aw;
                        so[k] = in ? off : -1;
                        h += hstep;
                        r += dq;
                        c += dr;
                        off += dstep;
                        if (c >= txmin + wp) {
                            c -= wp;
                            ++r;
                            off += dwrap;
                        }
                    }
                    uint32_t v[NB][VEC];
#pragma unroll
                    for (int k = 0; k < NB; ++k)
#pragma unroll
                        for (int e = 0; e < VEC; ++e)
                            v[k][e] = so[k] >= 0
                                          ? go_bits(go_ldg(base + ((unsigned)so[k] + e * aj)))
                                          : 0u;
#pragma unroll
                    for (int k = 0; k < NB; ++k) {
                        if (hb[k] >= hl) break;
                        go_st_shared_words4(dst + hb[k] * VEC, v[k][0] | v[k][1] << 16,
                                            v[k][2] | v[k][3] << 16, v[k][4] | v[k][5] << 16,
                                            v[k][6] | v[k][7] << 16);
                    }
                }
            }
        }
    };
    // TF32's copies: the same slots and planes as the 16-bit kernels' (NHWC: thread t plane
    // g of slots t / kg, + hstep, ...; NCHW: warp w plane g, + 8, ... of slots 32 (w / kg) +
    // lane, + hstep, ...), a thread's walked as one sequence of entries (pass pi, slot h),
    // each a slot's plane: one 16-byte load (NHWC) or 4 of a channel plane each (NCHW),
    // through registers (rounded to tf32 when stored; zeros outside the source). A tile's
    // first NP entries are loaded before the tile before it multiplies and stored after it
    // (one halo buffer, one block an SM at W4's 206 KB: their latency hides behind its
    // products, not another block's), the rest (W4: none; W5: 3 or 4) when stored.
    constexpr int NP = F32 ? 16 : 1;
    [[maybe_unused]] const int tppw = NC && kg > 8 ? kg / 8 : 1;
    [[maybe_unused]] const int th0 = NC ? (t / 32 / kg) * 32 + t % 32 : t / kg;
    [[maybe_unused]] const int tdq = hstep / wp, tdr = hstep - tdq * wp;
    [[maybe_unused]] const go_i64 tdstep = tdq * a_row + tdr * a_col, tdwrap = a_row - wp * a_col;
    [[maybe_unused]] const go_i64 ta_j = P.a_j, tpass = 8 * VEC * ta_j;  // (NCHW) pass to pass
    [[maybe_unused]] const int thlp = G.hlp;
    [[maybe_unused]] const T* tbase = src;  // the pass's source
    [[maybe_unused]] int tps = 0, th = hl, tr = 0, tc = 0, tr0 = 0, tc0 = 0;
    [[maybe_unused]] go_i64 toff = 0, toff0 = 0;
    [[maybe_unused]] int td[NP];          // the entries' slots (planes on), -1: none
    [[maybe_unused]] uint32_t tv[NP][4];  // and their 16 bytes
    // Starts tile `tile`'s entries (its first pass).
    [[maybe_unused]] auto tf32_start = [&](unsigned tile) {
        const go_i64 s = (go_i64)(tile % tpi) * BM + (go_i64)tymin * wp + th0;
        tr0 = (int)go_floordiv(s, wp);
        tc0 = (int)(s - (go_i64)tr0 * wp) + txmin;
        toff0 = (go_i64)tr0 * a_row + (go_i64)tc0 * a_col;
        tbase = src0 + (go_i64)(tile / tpi) * a_n;
        tps = 0;
        th = th0;
        tr = tr0;
        tc = tc0;
        toff = toff0;
    };
    // Issues the loads of the next NP entries (past the tile's last: none).
    [[maybe_unused]] auto tf32_take = [&]() {
#pragma unroll
        for (int k = 0; k < NP; ++k) {
            if (th >= hl && tps + 1 < tppw) {  // the next pass: the same slots 8 planes on
                ++tps;
                tbase += tpass;
                th = th0;
                tr = tr0;
                tc = tc0;
                toff = toff0;
            }
            const bool live = th < hl, in = live && tr >= 0 && tr < ah && tc >= 0 && tc < aw;
            td[k] = live ? tps * 8 * thlp + th : -1;
#pragma unroll
            for (int e = 0; e < 4; ++e) tv[k][e] = 0u;
            if (in) {
                if constexpr (NC) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) tv[k][e] = go_ldg_word(tbase + (toff + e * ta_j));
                } else {
                    go_ldg_words4(tbase + toff, tv[k]);
                }
            }
            th += hstep;
            tr += tdq;
            tc += tdr;
            toff += tdstep;
            if (tc >= txmin + wp) {
                tc -= wp;
                ++tr;
                toff += tdwrap;
            }
        }
    };
    // Rounds and stores the entries taken.
    [[maybe_unused]] auto tf32_put = [&]() {
#pragma unroll
        for (int k = 0; k < NP; ++k)
            if (td[k] >= 0) {
                uint32_t b[4];
#pragma unroll
                for (int e = 0; e < 4; ++e) b[e] = go_cvt_tf32(go_u32_as_f32(tv[k][e]));
                go_st_shared_words4(hdst + td[k] * VEC, b[0], b[1], b[2], b[3]);
            }
    };
    // The epilogue's pixels: slot q's image row a and column b, stored where b < cnt_x and a
    // < cnt_y.
    const bool pair = P.o_c == 1 && P.nlen % 2 == 0 && P.o_col % 2 == 0 && P.o_off % 2 == 0 &&
                      reinterpret_cast<uintptr_t>(out) % (2 * sizeof(S)) == 0;
    const int lbo = G.hlp * 16;  // bytes from one plane to the next
    unsigned buf = 0;
    const unsigned tiles = G.tiles;
    const int tdx = (int)P.tdx, tdy = (int)P.tdy;
    if (two) {
        fill(tile0, 0);
        go_cp_async_commit();
    }
    if constexpr (F32) {
        tf32_start(tile0);
        tf32_take();
    }
    for (unsigned tile = tile0; tile < tiles; tile += tstep) {
        if (two) {
            // The buffer the tile before last read: free since that tile's closing barrier.
            const unsigned next = tile + tstep;
            if (next < tiles) fill(next, (int)(buf ^ 1));
            go_cp_async_commit();
            go_cp_async_wait<1>();  // this tile's halo (and the filter) landed
        } else {
            // The buffer the last tile read: free since its closing barrier.
            if constexpr (F32) {
                tf32_put();
                while (th < hl || tps + 1 < tppw) {
                    tf32_take();
                    tf32_put();
                }
            } else {
                fill(tile, 0);
            }
            go_cp_async_commit();
            go_cp_async_wait<0>();
            // TF32's backprop_input filter, landed: this thread's chunk of each stage rounded.
            if constexpr (F32 && !BKN)
                if (tile == tile0)
                    for (int it = 0; it < ntaps * kch; ++it)
                        go_tc_split_tf32<true>(Bs + it * TC_BN * BK + fdst, nullptr);
        }
        go_fence_proxy_async_smem();
        __syncthreads();
        // TF32: the next tile's first entries, loading while this one multiplies.
        if constexpr (F32)
            if (tile + tstep < tiles) {
                tf32_start(tile + tstep);
                tf32_take();
            }
        GoTcAcc<T, 16, 64> acc;
        go_tc_acc_zero<T, 16, 64>(acc);
        // Warpgroup warp / 4: rows 64 (warp / 4).. of the tile, at each tap's shift.
        const GoWgmmaDesc da0 =
            go_wgmma_desc_interleave(Hs + buf * hbuf + 64 * (warp / 4) * VEC, (uint32_t)lbo);
        const GoWgmmaDesc db0 = go_tc_stage_desc_b<T, BKN && !F32>(Bs);
        int shift = ((int)P.ty0 - tymin) * wp + ((int)P.tx0 - txmin), ix = 0;
        int it = 0;
        for (int i = 0; i < ntaps; ++i) {
            for (int c = 0; c < kch; ++c, ++it) {
                const GoWgmmaDesc da = go_wgmma_desc_add(da0, shift * 16 + c * 4 * lbo);
                const GoWgmmaDesc db = go_wgmma_desc_add(db0, it * TC_BN * BK * (int)sizeof(S));
                go_wgmma_fence();
                // A k16 (16-bit) or k8 (tf32) step: 32 bytes, two planes.
#pragma unroll
                for (int ks = 0; ks < 2; ++ks) {
                    const GoWgmmaDesc dak = go_wgmma_desc_add(da, ks * 2 * lbo),
                                      dbk = go_wgmma_desc_add(db, (BKN && !F32 ? 1024 : 32) * ks);
                    if constexpr (F32)
                        go_wgmma_m64n64k8_tf32(&acc[0][0][0], dak, dbk);
                    else
                        go_wgmma_m64n64k16<BKN ? 1 : 0>(typename GoMmaKind<T>::type(),
                                                        &acc[0][0][0], dak, dbk);
                }
                go_wgmma_commit();
                go_wgmma_wait<1>();
            }
            if (++ix == ntx) {
                ix = 0;
                shift += tdy * wp - (ntx - 1) * tdx;
            } else {
                shift += tdx;
            }
        }
        go_wgmma_wait<0>();
        T* orow[2];
        const unsigned img = tile / tpi;
        for (int h = 0; h < 2; ++h) {
            const int q = (int)(tile % tpi) * BM + warp * 16 + lane / 4 + 8 * h;
            const int a = q / wp, b = q - a * wp;
            orow[h] = a < P.cnt_y && b < P.cnt_x
                          ? go_tc_ws_out_row(P, out,
                                             ((go_i64)img * P.cnt_y + a) * P.cnt_x + b, n_base)
                          : nullptr;
        }
        go_tc_ws_store<T>(P, acc, orow, n_base, lane, pair);
        // Every warp's products of this buffer done before the next tile refills it; at the
        // problem's end, of the filter before the next problem's copies.
        __syncthreads();
        if (two) buf ^= 1;
    }
    go_cp_async_wait<0>();  // (two buffers: the last tile's group, empty)
}
// The halo kernels' block state: the (phase, group) problem and its halo geometry.
struct GoTcHaloBlock {
    GoTcProblem P;
    GoTcHaloGeom G;
};
// conv2d_tc_layout for the halo tile (layout L): the same problems, z over phases, y over
// group x channel tiles, x over the problem's tiles (its own, not the other tiles' pixel
// tiles).
template <typename T, bool FWD, int L, bool TF32>
GO_DEV void conv2d_tc_halo_layout(const GoConvParams& p, unsigned char* smem, unsigned room,
                                  GoTcHaloBlock* Bk) {
    const go_i64 nlen = FWD ? p.co / p.groups : p.ci / p.groups;
    const go_i64 ntiles = (nlen + TC_BN - 1) / TC_BN;
    const go_i64 phases = FWD ? 1 : go_conv_phase_count(p);
    const T* __restrict__ src = reinterpret_cast<const T*>(FWD ? p.x : p.y);
    const T* __restrict__ w = reinterpret_cast<const T*>(p.w);
    T* __restrict__ out = reinterpret_cast<T*>(FWD ? p.y : p.x);
    for (go_i64 ph = blockIdx.z; ph < phases; ph += gridDim.z) {
        for (go_i64 gn = blockIdx.y; gn < p.groups * ntiles; gn += gridDim.y) {
            __syncthreads();  // every thread is done with the previous problem
            if (threadIdx.x == 0) {
                const go_i64 gi = gn / ntiles;
                Bk->P = FWD ? go_tc_forward_problem<L>(p, gi)
                            : go_tc_backprop_problem<L>(p, ph, gi);
                Bk->G = go_tc_halo_geom<T>(Bk->P);
            }
            __syncthreads();
            // Two halo buffers where the launch gave room for them, else one; less traps.
            // (NCHW and TF32: one. Their copies go through registers, so a second buffer
            // would not let them run under the products; two blocks an SM do, where they fit.)
            if (Bk->G.bytes1 > (go_i64)room) go_trap();
            go_tc_halo_problem<T, FWD, L, TF32>(Bk->P, Bk->G, src, w, out, (gn % ntiles) * TC_BN,
                                                smem, blockIdx.x, gridDim.x,
                                                L == GO_LAYOUT_NHWC && !TF32 &&
                                                    Bk->G.bytes1 + Bk->G.halo <= (go_i64)room);
        }
    }
}
// The halo kernels serve 16-bit calls, and f32 calls under the TF32 opt-in (TF32: their own
// entry points, which trap unless the call allows TF32), of layout L where
// go_tc_vec_params_ok holds, the source is read at unit strides (the forward at stride 1;
// backprop_input's phases always) and a group's source channels make 16-byte planes that
// divide the block's threads (jlen / 8 of them; f32 jlen / 4).
template <typename T, bool FWD, int L, bool TF32>
GO_DEV void conv2d_tc_halo_entry(const GoConvParams& p, unsigned char* dsmem, GoTcHaloBlock* Bk) {
    static_assert((sizeof(T) == 2 && !TF32) || (sizeof(T) == 4 && TF32),
                  "16-bit types; f32 under the TF32 opt-in");
    go_tc_vec_check<T, FWD, L>(p);
    if (TF32 && p.f32_precision != GO_F32_PRECISION_TF32) go_trap();
    const go_i64 jlen = FWD ? p.ci / p.groups : p.co / p.groups;
    const go_i64 planes = jlen / (16 / (go_i64)sizeof(T));
    if ((FWD && (p.sh != 1 || p.sw != 1)) || GO_TC_HALO_THREADS % planes != 0) go_trap();
    // NCHW's copies take 32-bit offsets within 8 source planes.
    if (L == GO_LAYOUT_NCHW && (FWD ? p.hi * p.wi : p.ho * p.wo) > GO_TC_HALO_NCHW_MAX_PLANE)
        go_trap();
    const unsigned bytes = go_dynamic_smem_bytes();
    const unsigned room = bytes < GO_TC_HALO_SMEM_ALIGN ? 0 : bytes - GO_TC_HALO_SMEM_ALIGN;
    conv2d_tc_halo_layout<T, FWD, L, TF32>(p, go_smem_align<GO_TC_HALO_SMEM_ALIGN>(dsmem), room,
                                           Bk);
}
#define GO_TC_HALO_BODY(NAME, FWD, L, TF32)                          \
    template <typename T>                                            \
    GO_DEV void NAME(const GoConvParams& p) {                        \
        GO_DYNAMIC_SMEM(dsmem, GO_TC_HALO_MAX_SMEM);                 \
        __shared__ GoTcHaloBlock block;                              \
        conv2d_tc_halo_entry<T, FWD, L, TF32>(p, dsmem, &block);     \
    }
GO_TC_HALO_BODY(conv2d_backprop_input_tc_vec_halo_body, false, GO_LAYOUT_NHWC, false)
GO_TC_HALO_BODY(conv2d_forward_tc_vec_halo_body, true, GO_LAYOUT_NHWC, false)
GO_TC_HALO_BODY(conv2d_backprop_input_tc_vec_nchw_halo_body, false, GO_LAYOUT_NCHW, false)
GO_TC_HALO_BODY(conv2d_forward_tc_vec_nchw_halo_body, true, GO_LAYOUT_NCHW, false)
// f32 under the TF32 opt-in.
GO_TC_HALO_BODY(conv2d_backprop_input_tc_vec_halo_tf32_body, false, GO_LAYOUT_NHWC, true)
GO_TC_HALO_BODY(conv2d_forward_tc_vec_halo_tf32_body, true, GO_LAYOUT_NHWC, true)
GO_TC_HALO_BODY(conv2d_backprop_input_tc_vec_nchw_halo_tf32_body, false, GO_LAYOUT_NCHW, true)
GO_TC_HALO_BODY(conv2d_forward_tc_vec_nchw_halo_tf32_body, true, GO_LAYOUT_NCHW, true)
#undef GO_TC_HALO_BODY
#endif
#undef GO_TC_VEC_BODY
template <typename T>
GO_DEV void conv2d_backprop_input_tc_body(const GoConvParams& p) {
    GO_TC_SMEM
    conv2d_tc_entry<T, false>(p, smem, out_base, &problem);
}
template <typename T>
GO_DEV void conv2d_forward_tc_body(const GoConvParams& p) {
    GO_TC_SMEM
    conv2d_tc_entry<T, true>(p, smem, out_base, &problem);
}
#undef GO_TC_SMEM
#undef GO_TC_VEC_SMEM

#ifdef __CUDACC__
// Blocks per SM (registers a thread: 255 for two, 168 for three). Three for the 16-bit
// backprop_input (unstaged, see GoTcTraits) and the filter gradient's partial sums; two for
// the forward (at three its 16-bit kernel spills on sm_80/sm_90) and for f32/f64.
#if __CUDA_ARCH__ >= 900
#define GO_TC_BOUNDS_4 __launch_bounds__(GO_TC_BLOCK_THREADS, 4)
#define GO_TC_BOUNDS_3_90 __launch_bounds__(GO_TC_BLOCK_THREADS, 3)
#else  // sm_80's ptxas spills the lean 16-bit kernels at 128 registers, f32 at 168
#define GO_TC_BOUNDS_4 __launch_bounds__(GO_TC_BLOCK_THREADS, 3)
#define GO_TC_BOUNDS_3_90 __launch_bounds__(GO_TC_BLOCK_THREADS, 2)
#endif
#define GO_TC_BOUNDS_3 __launch_bounds__(GO_TC_BLOCK_THREADS, 3)
#define GO_TC_BOUNDS_2 __launch_bounds__(GO_TC_BLOCK_THREADS, 2)
#if __CUDA_ARCH__ >= 900
#define GO_TC_BOUNDS_WIDE __launch_bounds__(GO_TC_WIDE_THREADS, 2)
#else  // sm_80's ptxas spills the wide backprop_input at 128 registers
#define GO_TC_BOUNDS_WIDE __launch_bounds__(GO_TC_WIDE_THREADS, 1)
#endif
// The tall kernel: 64 accumulators a thread, three blocks per SM (168 registers).
#define GO_TC_BOUNDS_TALL __launch_bounds__(GO_TC_BLOCK_THREADS, 3)
// The square kernel: 128 accumulators a thread, four blocks of 2 warps per SM (255
// registers).
#define GO_TC_BOUNDS_SQUARE __launch_bounds__(GO_TC_SQUARE_THREADS, 4)
// The wgmma kernel: 32 accumulators a thread, no fragments; two blocks of 8 warps per SM.
#define GO_TC_BOUNDS_WGMMA __launch_bounds__(GO_TC_WIDE_THREADS, 2)
// The lean wgmma kernels: one warpgroup, 32 accumulators a thread; three blocks per SM (168
// registers; f32: 41 KB of shared memory each; at four, 128 registers, ptxas spilled the f32
// one 56 bytes).
#define GO_TC_BOUNDS_WGMMA_LEAN __launch_bounds__(GO_TC_BLOCK_THREADS, 3)
// The warp-specialized kernels: 12 warps, two blocks per SM (80 registers a thread: the
// consumers' 32 accumulators, the producer's four row pointers and masks, and the loop state
// in 32 bits, conv2d_tc_ws_layout).
#define GO_TC_BOUNDS_WS __launch_bounds__(GO_TC_WS_THREADS, 2)
// The halo kernels: two warpgroups, 32 accumulators a thread; two blocks per SM by registers
// (128 at most), where a call's filter and two halo buffers leave room for two (W4's take
// 137 KB: one).
#define GO_TC_BOUNDS_HALO __launch_bounds__(GO_TC_HALO_THREADS, 2)
// The TF32 halo kernels: one block an SM (W4's filter and halo take 206 KB), so up to 255
// registers: a tile's first 16 halo entries held (64) while the tile before multiplies.
#define GO_TC_BOUNDS_HALO_TF32 __launch_bounds__(GO_TC_HALO_THREADS, 1)
#else
#define GO_TC_BOUNDS_4
#define GO_TC_BOUNDS_3_90
#define GO_TC_BOUNDS_3
#define GO_TC_BOUNDS_2
#define GO_TC_BOUNDS_WIDE
#define GO_TC_BOUNDS_TALL
#define GO_TC_BOUNDS_SQUARE
#define GO_TC_BOUNDS_WGMMA
#define GO_TC_BOUNDS_WGMMA_LEAN
#define GO_TC_BOUNDS_WS
#define GO_TC_BOUNDS_HALO
#define GO_TC_BOUNDS_HALO_TF32
#endif
// Every element type (the emulator's list is GO_DTYPES), 16-bit ones with bounds B16, f32
// with B32, f64 with B64.
#define GO_TC_INSTANTIATE(NAME, BODY, B16, B32, B64)                          \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, B16, f16, __half)            \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, B16, bf16, __nv_bfloat16)    \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, B32, f32, float)             \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, B64, f64, double)

GO_TC_INSTANTIATE(conv2d_backprop_input_tc, conv2d_backprop_input_tc_body, GO_TC_BOUNDS_3,
                  GO_TC_BOUNDS_2, GO_TC_BOUNDS_2)
GO_TC_INSTANTIATE(conv2d_forward_tc, conv2d_forward_tc_body, GO_TC_BOUNDS_2, GO_TC_BOUNDS_2,
                  GO_TC_BOUNDS_2)
// The lean kernels: NHWC four blocks per SM (128 registers) for the 16-bit types on
// compute_90+ images (three on compute_80), NCHW three (its A chunk held in registers);
// f32 three (168) for NHWC on compute_90+ (two on compute_80), two for NCHW; f64 two (at
// three sm_120's ptxas spills it).
GO_TC_INSTANTIATE(conv2d_backprop_input_tc_vec, conv2d_backprop_input_tc_vec_body,
                  GO_TC_BOUNDS_4, GO_TC_BOUNDS_3_90, GO_TC_BOUNDS_2)
GO_TC_INSTANTIATE(conv2d_forward_tc_vec, conv2d_forward_tc_vec_body, GO_TC_BOUNDS_4,
                  GO_TC_BOUNDS_3_90, GO_TC_BOUNDS_2)
GO_TC_INSTANTIATE(conv2d_backprop_input_tc_vec_nchw, conv2d_backprop_input_tc_vec_nchw_body,
                  GO_TC_BOUNDS_3, GO_TC_BOUNDS_2, GO_TC_BOUNDS_2)
GO_TC_INSTANTIATE(conv2d_forward_tc_vec_nchw, conv2d_forward_tc_vec_nchw_body, GO_TC_BOUNDS_3,
                  GO_TC_BOUNDS_2, GO_TC_BOUNDS_2)
// The wide kernel, 16-bit types only (the f64 epilogue tile would not fit the 48 KB of
// static shared memory): two blocks of 8 warps per SM (128 registers) on compute_90+, as
// many warps as four lean blocks; one on compute_80 (at two its ptxas spills).
#define GO_TC_WIDE_INSTANTIATE(NAME, BODY)                                        \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_WIDE, f16, __half) \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_WIDE, bf16, __nv_bfloat16)
GO_TC_WIDE_INSTANTIATE(conv2d_backprop_input_tc_vec_wide, conv2d_backprop_input_tc_vec_wide_body)
// The tall kernels, 16-bit types only (as the wide one).
#define GO_TC_TALL_INSTANTIATE(NAME, BODY)                                        \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_TALL, f16, __half) \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_TALL, bf16, __nv_bfloat16)
GO_TC_TALL_INSTANTIATE(conv2d_backprop_input_tc_vec_tall, conv2d_backprop_input_tc_vec_tall_body)
GO_TC_TALL_INSTANTIATE(conv2d_forward_tc_vec_tall, conv2d_forward_tc_vec_tall_body)
// The square kernels, 16-bit types only.
#define GO_TC_SQUARE_INSTANTIATE(NAME, BODY)                                        \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_SQUARE, f16, __half) \
    GO_INSTANTIATE_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_SQUARE, bf16, __nv_bfloat16)
GO_TC_SQUARE_INSTANTIATE(conv2d_backprop_input_tc_vec_square,
                         conv2d_backprop_input_tc_vec_square_body)
GO_TC_SQUARE_INSTANTIATE(conv2d_forward_tc_vec_square, conv2d_forward_tc_vec_square_body)
#if GO_HAS_WGMMA
// The wgmma kernels, 16-bit types and f32: the compute_90a image's only kernels.
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_wgmma, GoConvParams,
                         conv2d_backprop_input_tc_vec_wgmma_body, GO_TC_BOUNDS_WGMMA, f16, __half)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_wgmma, GoConvParams,
                         conv2d_backprop_input_tc_vec_wgmma_body, GO_TC_BOUNDS_WGMMA, bf16,
                         __nv_bfloat16)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_wgmma, GoConvParams,
                         conv2d_backprop_input_tc_vec_wgmma_body, GO_TC_BOUNDS_WGMMA_LEAN, f32,
                         float)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_nchw_wgmma, GoConvParams,
                         conv2d_backprop_input_tc_vec_nchw_wgmma_body, GO_TC_BOUNDS_WGMMA_LEAN,
                         f32, float)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_nchw_wgmma, GoConvParams,
                         conv2d_backprop_input_tc_vec_nchw_wgmma_body, GO_TC_BOUNDS_WGMMA_LEAN,
                         f16, __half)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_nchw_wgmma, GoConvParams,
                         conv2d_backprop_input_tc_vec_nchw_wgmma_body, GO_TC_BOUNDS_WGMMA_LEAN,
                         bf16, __nv_bfloat16)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_nchw_wgmma, GoConvParams,
                         conv2d_forward_tc_vec_nchw_wgmma_body, GO_TC_BOUNDS_WGMMA_LEAN, f16,
                         __half)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_nchw_wgmma, GoConvParams,
                         conv2d_forward_tc_vec_nchw_wgmma_body, GO_TC_BOUNDS_WGMMA_LEAN, bf16,
                         __nv_bfloat16)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_nchw_wgmma, GoConvParams,
                         conv2d_forward_tc_vec_nchw_wgmma_body, GO_TC_BOUNDS_WGMMA_LEAN, f32,
                         float)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_wgmma, GoConvParams,
                         conv2d_forward_tc_vec_wgmma_body, GO_TC_BOUNDS_WGMMA, f16, __half)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_wgmma, GoConvParams,
                         conv2d_forward_tc_vec_wgmma_body, GO_TC_BOUNDS_WGMMA, bf16,
                         __nv_bfloat16)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_wgmma, GoConvParams,
                         conv2d_forward_tc_vec_wgmma_body, GO_TC_BOUNDS_WGMMA_LEAN, f32, float)
// The warp-specialized kernels, 16-bit types and f32 (exact; the TF32 opt-in's own entry
// points), both ops; f32 NCHW too.
#define GO_TC_WS_INSTANTIATE(NAME, BODY)                                             \
    GO_INSTANTIATE_SM90A_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_WS, f16, __half) \
    GO_INSTANTIATE_SM90A_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_WS, bf16, __nv_bfloat16)
#define GO_TC_HALO_INSTANTIATE(NAME, BODY)                                             \
    GO_INSTANTIATE_SM90A_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_HALO, f16, __half) \
    GO_INSTANTIATE_SM90A_ONE(NAME, GoConvParams, BODY, GO_TC_BOUNDS_HALO, bf16, __nv_bfloat16)
GO_TC_WS_INSTANTIATE(conv2d_backprop_input_tc_vec_ws, conv2d_backprop_input_tc_vec_ws_body)
GO_TC_WS_INSTANTIATE(conv2d_forward_tc_vec_ws, conv2d_forward_tc_vec_ws_body)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_ws, GoConvParams,
                         conv2d_backprop_input_tc_vec_ws_body, GO_TC_BOUNDS_WS, f32, float)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_ws_tf32, GoConvParams,
                         conv2d_backprop_input_tc_vec_ws_tf32_body, GO_TC_BOUNDS_WS, f32, float)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_ws, GoConvParams, conv2d_forward_tc_vec_ws_body,
                         GO_TC_BOUNDS_WS, f32, float)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_ws_tf32, GoConvParams,
                         conv2d_forward_tc_vec_ws_tf32_body, GO_TC_BOUNDS_WS, f32, float)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_nchw_ws, GoConvParams,
                         conv2d_backprop_input_tc_vec_nchw_ws_body, GO_TC_BOUNDS_WS, f32, float)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_nchw_ws_tf32, GoConvParams,
                         conv2d_backprop_input_tc_vec_nchw_ws_tf32_body, GO_TC_BOUNDS_WS, f32,
                         float)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_nchw_ws, GoConvParams,
                         conv2d_forward_tc_vec_nchw_ws_body, GO_TC_BOUNDS_WS, f32, float)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_nchw_ws_tf32, GoConvParams,
                         conv2d_forward_tc_vec_nchw_ws_tf32_body, GO_TC_BOUNDS_WS, f32, float)
// The halo kernels, 16-bit types, both ops.
GO_TC_HALO_INSTANTIATE(conv2d_backprop_input_tc_vec_halo, conv2d_backprop_input_tc_vec_halo_body)
GO_TC_HALO_INSTANTIATE(conv2d_forward_tc_vec_halo, conv2d_forward_tc_vec_halo_body)
GO_TC_HALO_INSTANTIATE(conv2d_backprop_input_tc_vec_nchw_halo,
                       conv2d_backprop_input_tc_vec_nchw_halo_body)
GO_TC_HALO_INSTANTIATE(conv2d_forward_tc_vec_nchw_halo, conv2d_forward_tc_vec_nchw_halo_body)
// The halo kernels of f32 under the TF32 opt-in, both ops, both layouts.
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_halo_tf32, GoConvParams,
                         conv2d_backprop_input_tc_vec_halo_tf32_body, GO_TC_BOUNDS_HALO_TF32, f32,
                         float)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_halo_tf32, GoConvParams,
                         conv2d_forward_tc_vec_halo_tf32_body, GO_TC_BOUNDS_HALO_TF32, f32, float)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_input_tc_vec_nchw_halo_tf32, GoConvParams,
                         conv2d_backprop_input_tc_vec_nchw_halo_tf32_body, GO_TC_BOUNDS_HALO_TF32, f32,
                         float)
GO_INSTANTIATE_SM90A_ONE(conv2d_forward_tc_vec_nchw_halo_tf32, GoConvParams,
                         conv2d_forward_tc_vec_nchw_halo_tf32_body, GO_TC_BOUNDS_HALO_TF32, f32, float)
#endif

// ---------------------------------------------------------------------------------------
// conv2d_backprop_filter_partial_tc: the filter gradient's split-K partial sums (same
// splits, workspace and conv2d_backprop_filter_reduce as the FFMA kernel in conv.cu) on the
// tensor cores. Per group g, block (tile, s) computes
//   ws[s][m = (ky, kx, c), g*cog + o] = sum over pixels r = (n, oy, ox) of split s of
//   x[n, g*cig + c, oy*sh - top + ky*dh, ox*sw - left + kx*dw] * dy[n, g*cog + o, oy, ox]
// for a TC_BM-row x TC_BN-channel tile, in chunks of BK pixels (the GEMM's k). The chunk
// loops follow the layout:
//   NCHW: both operands have the pixels contiguous; the tiles land [m][k] / [nn][k]. A
//         thread takes a run of VEC pixels of a few rows: x's runs gathered into registers
//         (16-byte loads shifted into place where the run lies in one x row at stride 1 or
//         2) while the warps run the previous chunk's mma, dy's as 16-byte cp.async copies
//         (where dy's planes are whole runs); two stages. (The elementwise loop, opt-in:
//         one element per load, one shared stage.)
//   NHWC: both operands have the channels contiguous. The tiles land [k][m] / [k][nn] as
//         16-byte cp.async copies along the channels (where cig and cog are multiples of
//         VEC and the tensors 16-byte aligned; else VEC scalar loads packed into one shared
//         store) through the TC_STAGES-deep pipeline of go_tc_tile, and the warps read them
//         with ldmatrix.trans (go_tc_stage_mma's AKM and BKN).
// Deterministic: every ws element of split s written once, chunks ascending, the mma
// order fixed.

// A filter row's gather: x offset choff (NCHW: of its channel plane within an image; NHWC:
// of its element from a pixel's (oy*sh, ox*sw) position, see the table's fill), tap
// offsets; ok = false past the last row.
struct GoTcFilterRow {
    go_i64 choff;
    go_i64 ybias, xbias;
    int ok;
};

// A thread's two pixel rows of an NHWC chunk, kstep rows apart: index rr, (n, oy, ox), the
// x offset of their (oy*sh, ox*sw) position (a filter row's choff away from its element)
// and the dy offset of the thread's B chunk; advanced by a chunk at a time.
struct GoTcFilterPixels {
    GoPix q[2];
    go_i64 rr[2], xo[2], dyo[2];

    GO_DEV static go_i64 xpos(const GoConvFilterParams& p, const GoPix& u) {
        return ((u.n * p.hi + u.oy * p.sh) * p.wi + u.ox * p.sw) * p.ci;
    }
    // Rows r0 and r0 + kstep; bch: the B chunk's first dy channel.
    GO_DEV void init(const GoConvFilterParams& p, go_i64 r0, int kstep, go_i64 bch) {
        const go_i64 npix = p.n * p.ho * p.wo;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            rr[h] = r0 + kstep * h;
            q[h] = go_pix(rr[h] < npix ? rr[h] : 0, p.ho, p.wo);
            xo[h] = xpos(p, q[h]);
            dyo[h] = rr[h] * p.co + bch;
        }
    }
    // Row h on by bk pixels.
    GO_DEV void advance(const GoConvFilterParams& p, int h, int bk) {
        rr[h] += bk;
        dyo[h] += bk * p.co;
        go_pix_advance(q[h], bk, p.ho, p.wo);
        xo[h] = xpos(p, q[h]);
    }
};

// The 32 bits of hi:lo from bit `bits` (0-31) on: one funnel shift.
GO_DEV uint32_t go_funnel_r(uint32_t lo, uint32_t hi, unsigned bits) {
#ifdef __CUDACC__
    return __funnelshift_r(lo, hi, bits);
#else
    return (uint32_t)((((uint64_t)hi << 32) | lo) >> (bits & 31));
#endif
}

// The 16 bytes of elements row[ix0 + SW * e], e = 0 .. 16 / sizeof(S) - 1 (SW: 1 or 2), of a
// row of wi elements that starts 16-byte aligned, wi a multiple of 16 / sizeof(S); elements
// outside [0, wi) zero. Each of the SW + 1 aligned 16-byte runs the elements span lies wholly
// inside the row or wholly outside it, so a run is loaded or left zero (no element masks);
// the span is shifted out of them (whole words by selects, the rest by funnel shifts) and,
// at SW 2, its even elements kept.
template <typename S, int SW>
GO_DEV uint4 go_ld_row_run16(const S* __restrict__ row, go_i64 ix0, go_i64 wi) {
    static_assert(SW == 1 || SW == 2, "unit stride or stride 2");
    constexpr int VEC = 16 / (int)sizeof(S), NR = SW + 1, NW = 4 * NR;
    const go_i64 a = ix0 & ~(go_i64)(VEC - 1);  // the aligned run at or before ix0
    const int b = (int)(ix0 - a) * (int)sizeof(S);  // bytes to drop from it, 0-15
    uint32_t w[NW];
#pragma unroll
    for (int k = 0; k < NR; ++k) {
        const go_i64 ak = a + k * VEC;
        uint4 v;
        v.x = v.y = v.z = v.w = 0u;
        // The last run only where the span reaches into it.
        const bool need = k < SW || b > 0;
        if (need && ak >= 0 && ak < wi) v = go_ldg(reinterpret_cast<const uint4*>(row + ak));
        w[4 * k] = v.x, w[4 * k + 1] = v.y, w[4 * k + 2] = v.z, w[4 * k + 3] = v.w;
    }
    // The span's 4 * SW words from byte b on.
    uint32_t v[NW - 2], u[NW - 3], z[4 * SW];
#pragma unroll
    for (int i = 0; i < NW - 2; ++i) v[i] = (b & 8) ? w[i + 2] : w[i];
#pragma unroll
    for (int i = 0; i < NW - 3; ++i) u[i] = (b & 4) ? v[i + 1] : v[i];
    const unsigned bits = 8u * (unsigned)(b & 3);
#pragma unroll
    for (int i = 0; i < 4 * SW; ++i) z[i] = go_funnel_r(u[i], u[i + 1], bits);
    uint32_t o[4];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
        if constexpr (SW == 1)
            o[j] = z[j];
        else if constexpr (sizeof(S) == 2)  // span elements 4j and 4j + 2
            o[j] = (z[2 * j] & 0xFFFFu) | (z[2 * j + 1] << 16);
        else if constexpr (sizeof(S) == 4)
            o[j] = z[2 * j];
        else  // 8-byte elements: span elements 0 and 2
            o[j] = z[(j / 2) * 4 + j % 2];
    }
    uint4 r;
    r.x = o[0], r.y = o[1], r.z = o[2], r.w = o[3];
    return r;
}

// NCHW chunk loop over pixels [r_begin, r_end) by runs of VEC pixels (see the section
// comment). Thread t takes run j = t % RUNS of each chunk, for filter rows (A) and output
// channels (B) t / RUNS + RSTEP * i: a run of A is gathered into registers, 16 bytes at a
// time where it lies in one x row at stride 1 or 2 (avec: x 16-byte aligned, rows of whole
// runs; go_ld_row_run16), element by element elsewhere, and stored one iteration later; a
// run of B is one 16-byte cp.async (BV: dy 16-byte aligned, planes of whole runs), or
// gathered as A's. Two stages (smem: 2 x TC_STAGE_BYTES), one barrier a chunk. The staged
// tiles, and so the products and their order, are those of go_tc_filter_chunks_nchw_elementwise.
template <typename T, bool TF32, bool BV>
GO_DEV void go_tc_filter_chunks_nchw(const GoConvFilterParams& p, const T* __restrict__ x,
                                     const T* __restrict__ dy, go_i64 g, go_i64 n_base,
                                     go_i64 r_begin, go_i64 r_end, bool avec, unsigned char* smem,
                                     const GoTcFilterRow* rowtab, GoTcAcc<T>& acc) {
    typedef typename GoTcTraits<T>::S S;
    constexpr int BK = GoTcTraits<T>::BK, LD = GoTcGeom<T>::LD, VEC = GoTcGeom<T>::VEC;
    constexpr int RUNS = BK / VEC;              // runs of a row per chunk
    constexpr int RSTEP = TC_THREADS / RUNS;    // rows between a thread's rows
    constexpr int NA = TC_BM / RSTEP, NB = TC_BN / RSTEP;
    static_assert(BK % VEC == 0 && TC_THREADS % RUNS == 0 && TC_BM % RSTEP == 0 &&
                      TC_BN % RSTEP == 0,
                  "whole runs, whole rows per thread");
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int wm = warp % (TC_BM / TC_WM), wn = warp / (TC_BM / TC_WM);
    const int j = t % RUNS, r0 = t / RUNS;
    const go_i64 cog = p.co / p.groups;
    const go_i64 npix = p.n * p.ho * p.wo;
    const go_i64 himg = p.hi * p.wi, hw = p.ho * p.wo;
    const go_i64 nchunks = r_end > r_begin ? (r_end - r_begin + BK - 1) / BK : 0;
    auto stage_a = [&](int s) { return reinterpret_cast<S*>(smem + s * TC_STAGE_BYTES); };
    auto stage_b = [&](int s) {
        return reinterpret_cast<S*>(smem + s * TC_STAGE_BYTES + TC_BM * TC_ROW_BYTES);
    };
    // This thread's filter rows (their taps; xc: x at their channel plane of image 0) and
    // output channels (dyc: dy at their plane of image 0; bok: inside the group), so that a
    // chunk's offsets are the pixel's alone.
    GoTcFilterRow ra[NA];
    const T* xc[NA];
#pragma unroll
    for (int i = 0; i < NA; ++i) {
        ra[i] = rowtab[r0 + RSTEP * i];
        xc[i] = x + (ra[i].ok ? ra[i].choff : 0);
    }
    const T* dyc[NB];
    bool bok[NB];
#pragma unroll
    for (int i = 0; i < NB; ++i) {
        const go_i64 o = r0 + RSTEP * i;
        bok[i] = n_base + o < cog;
        dyc[i] = dy + (bok[i] ? (g * cog + n_base + o) * hw : 0);
    }
    const go_i64 ximg = p.ci * himg, dyimg = p.co * hw;  // an image of x, of dy
    // The run's first pixel and its (n, oy, ox), advanced by BK per chunk.
    go_i64 r = r_begin + j * VEC;
    GoPix q = go_pix(r < npix ? r : 0, p.ho, p.wo);
    uint4 av[NA], bv[NB];
    // Gathers the chunk at r into av (and bv, or B's copies into stage s where BV).
    auto gather = [&](int s) {
        const bool arun = avec && r + VEC <= r_end && q.ox + VEC <= p.wo;
        if (arun) {
            const go_i64 xn = q.n * ximg;
#pragma unroll
            for (int i = 0; i < NA; ++i) {
                const go_i64 iy = q.oy * p.sh + ra[i].ybias;
                av[i].x = av[i].y = av[i].z = av[i].w = 0u;
                if (ra[i].ok && iy >= 0 && iy < p.hi) {
                    const T* row = xc[i] + xn + iy * p.wi;
                    const go_i64 ix0 = q.ox * p.sw + ra[i].xbias;
                    av[i] = p.sw == 1 ? go_ld_row_run16<T, 1>(row, ix0, p.wi)
                                      : go_ld_row_run16<T, 2>(row, ix0, p.wi);
                }
            }
        }
        if (!arun || !BV) {
            S va[NA][VEC], vb[BV ? 1 : NB][VEC];
            GoPix e = q;
#pragma unroll
            for (int k = 0; k < VEC; ++k) {
                if (k > 0) go_pix_advance(e, 1, p.ho, p.wo);
                const bool valid = r + k < r_end;
                if (!arun) {
                    const go_i64 xn = e.n * ximg;
                    const go_i64 iy0 = e.oy * p.sh, ix0 = e.ox * p.sw;
#pragma unroll
                    for (int i = 0; i < NA; ++i) {
                        const go_i64 iy = iy0 + ra[i].ybias, ix = ix0 + ra[i].xbias;
                        S v = S(0);
                        if (valid && ra[i].ok && iy >= 0 && iy < p.hi && ix >= 0 && ix < p.wi)
                            v = go_bits(go_ldg(xc[i] + xn + iy * p.wi + ix));
                        va[i][k] = v;
                    }
                }
                if constexpr (!BV) {
                    const go_i64 dyp = e.n * dyimg + e.oy * p.wo + e.ox;
#pragma unroll
                    for (int i = 0; i < NB; ++i)
                        vb[i][k] = valid && bok[i] ? go_bits(go_ldg(dyc[i] + dyp)) : S(0);
                }
            }
            if (!arun)
#pragma unroll
                for (int i = 0; i < NA; ++i) memcpy(&av[i], va[i], 16);
            if constexpr (!BV)
#pragma unroll
                for (int i = 0; i < NB; ++i) memcpy(&bv[i], vb[i], 16);
        }
        if constexpr (BV) {
            // The run lies in one image (planes of whole runs, runs aligned), valid as a whole;
            // its pixel r - q.n * hw of image q.n.
            const go_i64 dyp = q.n * (dyimg - hw) + r;
            S* bs = stage_b(s);
#pragma unroll
            for (int i = 0; i < NB; ++i) {
                const bool in = r < r_end && bok[i];
                go_cp_async_16(bs + (r0 + RSTEP * i) * LD + j * VEC, in ? dyc[i] + dyp : dy,
                               in ? 16 : 0);
            }
        }
    };
    if (nchunks > 0) gather(0);
    go_cp_async_commit();
    for (go_i64 c = 0; c < nchunks; ++c) {
        const int s = (int)(c & 1);
        // Stage s was last read by chunk c - 2's mma, before the previous barrier.
        S* as = stage_a(s);
        S* bs = stage_b(s);
#pragma unroll
        for (int i = 0; i < NA; ++i)
            *reinterpret_cast<uint4*>(as + (r0 + RSTEP * i) * LD + j * VEC) = av[i];
        if constexpr (!BV)
#pragma unroll
            for (int i = 0; i < NB; ++i)
                *reinterpret_cast<uint4*>(bs + (r0 + RSTEP * i) * LD + j * VEC) = bv[i];
        go_cp_async_wait<0>();  // this thread's copies of chunk c
        __syncthreads();        // chunk c visible to all; every warp done with chunk c - 1
        if (c + 1 < nchunks) {
            r += BK;
            go_pix_advance(q, BK, p.ho, p.wo);
            gather(s ^ 1);  // in flight while the warps run this chunk
        }
        go_cp_async_commit();
        go_tc_stage_mma<T, false, TF32>(as, bs, wm, wn, lane, acc);
    }
    go_cp_async_wait<0>();  // only empty groups can remain
}

// The NCHW chunk loop element by element (GRADOPS_CUDA_CONV_TC_FILTER_TILE=elementwise): each
// thread gathers the chunk's elements of rows t / BK + RSTEP * r of pixel t % BK into
// registers while the warps run the previous chunk (one shared stage); As/Bs: one stage.
template <typename T, bool TF32>
GO_DEV void go_tc_filter_chunks_nchw_elementwise(const GoConvFilterParams& p,
                                                 const T* __restrict__ x,
                                                 const T* __restrict__ dy, go_i64 g,
                                                 go_i64 n_base, go_i64 r_begin, go_i64 r_end,
                                                 unsigned char* smem,
                                                 const GoTcFilterRow* rowtab, GoTcAcc<T>& acc) {
    typedef typename GoTcTraits<T>::S S;
    constexpr int BK = GoTcTraits<T>::BK, LD = GoTcGeom<T>::LD;
    // Threads walk the chunk's BK pixels; each covers rows t / BK + RSTEP * r.
    constexpr int RSTEP = TC_THREADS / BK;
    constexpr int EA = TC_BM / RSTEP, EB = TC_BN / RSTEP;
    static_assert(TC_THREADS % BK == 0 && TC_BM % RSTEP == 0 && TC_BN % RSTEP == 0,
                  "whole rows per thread");
    S* As = reinterpret_cast<S*>(smem);
    S* Bs = reinterpret_cast<S*>(smem + TC_BM * TC_ROW_BYTES);
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int wm = warp % (TC_BM / TC_WM), wn = warp / (TC_BM / TC_WM);
    const int kt = t % BK, r0t = t / BK;
    const go_i64 cog = p.co / p.groups;
    const go_i64 npix = p.n * p.ho * p.wo;
    const go_i64 himg = p.hi * p.wi, hw = p.ho * p.wo;
    const go_i64 nchunks = r_end > r_begin ? (r_end - r_begin + BK - 1) / BK : 0;

    // This thread's pixel of the chunk, advanced by BK per chunk.
    GoPix q = go_pix(r_begin + kt < npix ? r_begin + kt : 0, p.ho, p.wo);
    S ra[EA], rb[EB];
    // Gathers chunk `c` (pixel r_begin + c*BK + kt) into ra / rb.
    auto gather = [&](go_i64 c) {
        const bool valid = r_begin + c * BK + kt < r_end;
        const go_i64 xn = q.n * p.ci * himg;
        const go_i64 iy0 = q.oy * p.sh, ix0 = q.ox * p.sw;
#pragma unroll
        for (int r = 0; r < EA; ++r) {
            const GoTcFilterRow& R = rowtab[r0t + RSTEP * r];
            const go_i64 iy = iy0 + R.ybias, ix = ix0 + R.xbias;
            S v = S(0);
            if (valid && R.ok && iy >= 0 && iy < p.hi && ix >= 0 && ix < p.wi)
                v = go_bits(go_ldg(x + xn + R.choff + iy * p.wi + ix));
            ra[r] = v;
        }
        const go_i64 dyp = (q.n * p.co + g * cog + n_base) * hw + q.oy * p.wo + q.ox;
#pragma unroll
        for (int r = 0; r < EB; ++r) {
            const go_i64 o = r0t + RSTEP * r;
            S v = S(0);
            if (valid && n_base + o < cog) v = go_bits(go_ldg(dy + dyp + o * hw));
            rb[r] = v;
        }
    };
    if (nchunks > 0) gather(0);
    for (go_i64 c = 0; c < nchunks; ++c) {
#pragma unroll
        for (int r = 0; r < EA; ++r) As[(r0t + RSTEP * r) * LD + kt] = ra[r];
#pragma unroll
        for (int r = 0; r < EB; ++r) Bs[(r0t + RSTEP * r) * LD + kt] = rb[r];
        __syncthreads();
        if (c + 1 < nchunks) {
            go_pix_advance(q, BK, p.ho, p.wo);
            gather(c + 1);  // in flight while the warps run this chunk
        }
        go_tc_stage_mma<T, false, TF32>(As, Bs, wm, wn, lane, acc);
        __syncthreads();
    }
}

// NHWC chunk loop over pixels [r_begin, r_end) (see the section comment); smem holds
// TC_STAGES stages laid out as go_tc_tile's (A [BK][LDKN] in the A part, B [BK][LDKN] in
// the B part). Thread t copies channel chunk mc = (t % CPR) * VEC of the tile's rows (A)
// and channels (B) for the chunk's pixels kt and kt + KSTEP: 16-byte copies where avec
// (A) and bvec (B) say so, scalar loads elsewhere; VEC16 (both copy) compiles the loop
// without the scalar paths.
template <typename T, bool TF32, bool VEC16>
GO_DEV void go_tc_filter_chunks_nhwc(const GoConvFilterParams& p, const T* __restrict__ x,
                                     const T* __restrict__ dy, go_i64 g, go_i64 n_base,
                                     go_i64 r_begin, go_i64 r_end, bool avec, bool bvec,
                                     unsigned char* smem, const GoTcFilterRow* rowtab,
                                     GoTcAcc<T>& acc) {
    typedef typename GoTcTraits<T>::S S;
    constexpr int BK = GoTcTraits<T>::BK, VEC = GoTcGeom<T>::VEC, LD = GoTcGeom<T>::LD;
    constexpr int LDKN = GoTcGeom<T>::LDKN;
    constexpr int CPR = TC_BM / VEC, KSTEP = TC_THREADS / CPR;
    static_assert(TC_BM == TC_BN && TC_THREADS % CPR == 0 && 2 * KSTEP == BK,
                  "a thread copies one channel chunk of A and of B for two pixels per stage");
    S* As = reinterpret_cast<S*>(smem);
    S* Bs = reinterpret_cast<S*>(smem + TC_STAGES * TC_BM * TC_ROW_BYTES);
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int wm = warp % (TC_BM / TC_WM), wn = warp / (TC_BM / TC_WM);
    const int mc = (t % CPR) * VEC, kt = t / CPR;
    const go_i64 cog = p.co / p.groups;
    const go_i64 nchunks = r_end > r_begin ? (r_end - r_begin + BK - 1) / BK : 0;
    const GoTcFilterRow RA = rowtab[mc];  // the vector chunk's row (one tap, channels on)
    const go_i64 bch = g * cog + n_base + mc;  // the B chunk's first dy channel
    const go_i64 brem = cog - (n_base + mc);   // dy channels of the group from there
    GoTcFilterPixels u;  // the chunk's two pixels of this thread
    u.init(p, r_begin + kt, KSTEP, bch);
    // Copies the next chunk into stage s.
    auto gather = [&](int s) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const bool valid = u.rr[h] < r_end;
            const int k = kt + KSTEP * h;
            S* ad = As + s * TC_BM * LD + k * LDKN + mc;
            S* bd = Bs + s * TC_BN * LD + k * LDKN + mc;
            const go_i64 iy0 = u.q[h].oy * p.sh, ix0 = u.q[h].ox * p.sw;
            if (VEC16 || avec) {
                const go_i64 iy = iy0 + RA.ybias, ix = ix0 + RA.xbias;
                const bool in = valid && RA.ok && iy >= 0 && iy < p.hi && ix >= 0 && ix < p.wi;
                go_cp_async_16(ad, in ? x + u.xo[h] + RA.choff : x, in ? 16 : 0);
            } else {
                S v[VEC];
#pragma unroll
                for (int e = 0; e < VEC; ++e) {
                    const GoTcFilterRow& R = rowtab[mc + e];
                    const go_i64 iy = iy0 + R.ybias, ix = ix0 + R.xbias;
                    v[e] = S(0);
                    if (valid && R.ok && iy >= 0 && iy < p.hi && ix >= 0 && ix < p.wi)
                        v[e] = go_bits(go_ldg(x + u.xo[h] + R.choff));
                }
                go_tc_store_chunk(ad, v);
            }
            if (VEC16 || bvec) {
                const bool in = valid && brem > 0;
                go_cp_async_16(bd, in ? dy + u.dyo[h] : dy, in ? 16 : 0);
            } else {
                S v[VEC];
#pragma unroll
                for (int e = 0; e < VEC; ++e)
                    v[e] = valid && e < brem ? go_bits(go_ldg(dy + u.dyo[h] + e)) : S(0);
                go_tc_store_chunk(bd, v);
            }
            u.advance(p, h, BK);
        }
    };

    // Prologue: the first TC_STAGES - 1 chunks in flight (a group per stage, empty past the
    // end, so the wait counts below hold).
#pragma unroll
    for (int s = 0; s < TC_STAGES - 1; ++s) {
        if (s < nchunks) gather(s);
        go_cp_async_commit();
    }
    // Iteration c: chunk c is in its stage; chunk c + TC_STAGES - 1 goes to the stage last
    // read at c - 1.
    int s_read = 0, s_load = TC_STAGES - 1;
    for (go_i64 c = 0; c < nchunks; ++c) {
        go_cp_async_wait<TC_STAGES - 2>();
        __syncthreads();  // chunk c visible to all; every warp done with the stage of c - 1
        if (c + TC_STAGES - 1 < nchunks) gather(s_load);
        go_cp_async_commit();
        go_tc_stage_mma<T, true, TF32, true>(As + s_read * TC_BM * LD, Bs + s_read * TC_BN * LD,
                                             wm, wn, lane, acc);
        s_read = s_read + 1 == TC_STAGES ? 0 : s_read + 1;
        s_load = s_load + 1 == TC_STAGES ? 0 : s_load + 1;
    }
    go_cp_async_wait<0>();  // only empty groups can remain; nothing may outlive the tile
}

#if GO_HAS_WGMMA
// The NHWC chunk loop of the wgmma filter kernel (16-bit types, 16-byte copies only: cig and
// cog multiples of VEC, tensors 16-byte aligned): the same chunks of BK pixels and the same
// products in the same order as go_tc_filter_chunks_nhwc's VEC16 loop, on one warpgroup.
// Both operands land [k][m] / [k][nn] (contiguous along the channels) in the 64-byte
// swizzle as the forward's N-major B: a 32-channel column of atoms holds BK rows of 64
// bytes (GO_TC_WGMMA_BKN_COLUMN_BYTES), chunk c (8 channels) of pixel row k in column c / 4,
// at chunk (c % 4) ^ ((k >> 1) & 3) of its row; the tensor cores read A M-major
// (imm-trans-a) and B N-major, two m64n64k16 a stage (the second k16 1024 bytes on), so no
// ldmatrix.trans or fragment in the loop. TC_VSTAGES stages; a stage is refilled after the
// wgmma that read it has completed (wait_group 0 before the barrier). d: the thread's 32
// accumulators (wgmma's D fragment, kernels/mma.cuh).
template <typename T>
GO_DEV void go_tc_filter_chunks_nhwc_wgmma(const GoConvFilterParams& p, const T* __restrict__ x,
                                           const T* __restrict__ dy, go_i64 g, go_i64 n_base,
                                           go_i64 r_begin, go_i64 r_end, unsigned char* smem,
                                           const GoTcFilterRow* rowtab, float* d) {
    typedef typename GoTcTraits<T>::S S;
    typedef typename GoMmaKind<T>::type Kind;
    constexpr int BK = GoTcTraits<T>::BK, VEC = GoTcGeom<T>::VEC, STAGES = TC_VSTAGES;
    constexpr int ROW = 64 / (int)sizeof(S);  // elements of a 64-byte row
    constexpr int COL = GO_TC_WGMMA_BKN_COLUMN_BYTES / (int)sizeof(S);
    constexpr int CPR = TC_BM / VEC, KSTEP = TC_THREADS / CPR;
    static_assert(sizeof(S) == 2 && TC_BM == 64 && TC_BN == 64 && TC_THREADS == 128 &&
                      BK * ROW == COL && 2 * KSTEP == BK && KSTEP % 8 == 0,
                  "one warpgroup's m64n64, two 32-channel columns of BK rows, a thread's "
                  "two pixel rows KSTEP apart in one swizzle phase");
    S* As = reinterpret_cast<S*>(smem);
    S* Bs = As + STAGES * TC_BM * BK;
    const int t = threadIdx.x;
    const int c = t % CPR, mc = c * VEC, kt = t / CPR;
    // This thread's chunk in a stage (its second pixel row KSTEP rows further on).
    const int dst = (c / 4) * COL + kt * ROW + ((c % 4) ^ ((kt >> 1) & 3)) * VEC;
    const go_i64 cog = p.co / p.groups;
    const go_i64 nchunks = r_end > r_begin ? (r_end - r_begin + BK - 1) / BK : 0;
    const GoTcFilterRow RA = rowtab[mc];  // the chunk's row (one tap, channels on)
    const bool bok = n_base + mc < cog;
    GoTcFilterPixels u;
    u.init(p, r_begin + kt, KSTEP, g * cog + n_base + mc);
    auto gather = [&](int s) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const bool valid = u.rr[h] < r_end;
            const int o = s * TC_BM * BK + dst + h * KSTEP * ROW;
            const go_i64 iy = u.q[h].oy * p.sh + RA.ybias, ix = u.q[h].ox * p.sw + RA.xbias;
            const bool in = valid && RA.ok && iy >= 0 && iy < p.hi && ix >= 0 && ix < p.wi;
            go_cp_async_16(As + o, in ? x + u.xo[h] + RA.choff : x, in ? 16 : 0);
            const bool bin = valid && bok;
            go_cp_async_16(Bs + o, bin ? dy + u.dyo[h] : dy, bin ? 16 : 0);
            u.advance(p, h, BK);
        }
    };
#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < nchunks) gather(s);
        go_cp_async_commit();
    }
    int s_read = 0, s_load = STAGES - 1;
    for (go_i64 ch = 0; ch < nchunks; ++ch) {
        go_cp_async_wait<STAGES - 2>();
        // The wgmma of chunk ch - 1 has read stage s_load (refilled below); this thread's
        // copies of chunk ch visible to the tensor cores.
        go_wgmma_wait<0>();
        go_fence_proxy_async_smem();
        __syncthreads();
        if (ch + STAGES - 1 < nchunks) gather(s_load);
        go_cp_async_commit();
        const GoWgmmaDesc da =
            go_wgmma_desc_sw64_mn(As + s_read * TC_BM * BK, GO_TC_WGMMA_BKN_COLUMN_BYTES);
        const GoWgmmaDesc db =
            go_wgmma_desc_sw64_mn(Bs + s_read * TC_BN * BK, GO_TC_WGMMA_BKN_COLUMN_BYTES);
        go_wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 2; ++ks)
            go_wgmma_m64n64k16<1, 1>(Kind(), d, go_wgmma_desc_add(da, 1024 * ks),
                                     go_wgmma_desc_add(db, 1024 * ks));
        go_wgmma_commit();
        s_read = s_read + 1 == STAGES ? 0 : s_read + 1;
        s_load = s_load + 1 == STAGES ? 0 : s_load + 1;
    }
    go_wgmma_wait<0>();
    go_cp_async_wait<0>();  // only empty groups can remain; nothing may outlive the tile
}
#endif  // GO_HAS_WGMMA

// WG: the NHWC wgmma loop; ELEM: NCHW's elementwise loop.
template <typename T, int L, bool TF32, bool WG = false, bool ELEM = false>
GO_DEV void conv2d_backprop_filter_partial_tc_layout(const GoConvFilterParams& p,
                                                     unsigned char* smem, GoTcFilterRow* rowtab) {
    typedef GoTcTraits<T> Tr;
    typedef typename Tr::Acc Acc;
    constexpr int MF = GoTcGeom<T>::MF;
    const T* __restrict__ x = reinterpret_cast<const T*>(p.x);
    const T* __restrict__ dy = reinterpret_cast<const T*>(p.dy);
    Acc* __restrict__ ws = reinterpret_cast<Acc*>(p.ws);
    const int t = threadIdx.x, lane = t % 32, warp = t / 32;
    const int wm = warp % (TC_BM / TC_WM), wn = warp / (TC_BM / TC_WM);
    const go_i64 cig = p.ci / p.groups, cog = p.co / p.groups;
    const go_i64 rows = p.kh * p.kw * cig;
    const go_i64 mtiles = (rows + TC_BM - 1) / TC_BM, ntiles = (cog + TC_BN - 1) / TC_BN;
    const go_i64 tiles = p.groups * mtiles * ntiles;
    const go_i64 npix = p.n * p.ho * p.wo;
    const go_i64 flen = rows * p.co;
    // NHWC's 16-byte copies need VEC-channel runs in one tap (cig % VEC == 0 keeps a chunk
    // of rows in one tap) and 16-byte aligned tensors.
    constexpr int VEC = GoTcGeom<T>::VEC;
    const bool avec = cig % VEC == 0 && reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const bool bvec = cog % VEC == 0 && reinterpret_cast<uintptr_t>(dy) % 16 == 0;
    if constexpr (WG) {
        // The wgmma kernel copies 16 bytes only (the host launches it where both hold).
        if (!avec || !bvec) go_trap();
    }
    // NCHW's 16-byte runs: x rows (and so planes and images) of whole runs at stride 1 or 2,
    // dy planes of whole runs; both tensors 16-byte aligned.
    const bool navec = (p.sw == 1 || p.sw == 2) && p.wi % VEC == 0 &&
                       reinterpret_cast<uintptr_t>(x) % 16 == 0;
    const bool nbvec = (p.ho * p.wo) % VEC == 0 && reinterpret_cast<uintptr_t>(dy) % 16 == 0;

    for (go_i64 s = blockIdx.y; s < p.splits; s += gridDim.y) {
        const go_i64 r_begin = s * p.split_len;
        const go_i64 r_end = r_begin + p.split_len < npix ? r_begin + p.split_len : npix;
        for (go_i64 tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
            const go_i64 g = tile / (mtiles * ntiles);
            const go_i64 rem = tile % (mtiles * ntiles);
            const go_i64 m_base = (rem / ntiles) * TC_BM, n_base = (rem % ntiles) * TC_BN;
            __syncthreads();  // every thread is done with the previous tile's table and stages
            for (int m = t; m < TC_BM; m += TC_THREADS) {
                const go_i64 row = m_base + m;
                GoTcFilterRow R;
                R.ok = row < rows;
                const go_i64 c = R.ok ? row % cig : 0, tap = R.ok ? row / cig : 0;
                R.ybias = (tap / p.kw) * p.dh - p.pad_top;
                R.xbias = (tap % p.kw) * p.dw - p.pad_left;
                // NCHW: the channel plane's offset in an image; NHWC: the element's offset
                // from the pixel's (oy*sh, ox*sw) position, the tap's included.
                R.choff = L == GO_LAYOUT_NCHW
                              ? (g * cig + c) * p.hi * p.wi
                              : (R.ybias * p.wi + R.xbias) * p.ci + g * cig + c;
                rowtab[m] = R;
            }
            __syncthreads();

            if constexpr (WG) {
#if GO_HAS_WGMMA
                static_assert(L == GO_LAYOUT_NHWC && !TF32, "the wgmma filter tile: NHWC, 16-bit");
                float d[32];
#pragma unroll
                for (int j = 0; j < 32; ++j) d[j] = 0.0f;
                go_tc_filter_chunks_nhwc_wgmma<T>(p, x, dy, g, n_base, r_begin, r_end, smem,
                                                  rowtab, d);
                // Split s's partial filter from wgmma's D fragment: warp w holds rows
                // 16w + lane / 4 (+ 8), channels 8i + 2 (lane % 4) (+ 1).
                Acc* __restrict__ part = ws + s * flen;
                const int gq = lane / 4, tq = lane % 4;
#pragma unroll
                for (int i = 0; i < 8; ++i)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const go_i64 m = m_base + 16 * warp + gq + (e >= 2 ? 8 : 0);
                        const go_i64 o = n_base + 8 * i + 2 * tq + (e % 2);
                        if (m < rows && o < cog) part[m * p.co + g * cog + o] = d[4 * i + e];
                    }
#endif
                continue;
            }
            GoTcAcc<T> acc;
            go_tc_acc_zero<T>(acc);
            if constexpr (L == GO_LAYOUT_NCHW && ELEM)
                go_tc_filter_chunks_nchw_elementwise<T, TF32>(p, x, dy, g, n_base, r_begin,
                                                              r_end, smem, rowtab, acc);
            else if constexpr (L == GO_LAYOUT_NCHW) {
                if (nbvec)
                    go_tc_filter_chunks_nchw<T, TF32, true>(p, x, dy, g, n_base, r_begin, r_end,
                                                            navec, smem, rowtab, acc);
                else
                    go_tc_filter_chunks_nchw<T, TF32, false>(p, x, dy, g, n_base, r_begin, r_end,
                                                             navec, smem, rowtab, acc);
            } else if (avec && bvec)
                go_tc_filter_chunks_nhwc<T, TF32, true>(p, x, dy, g, n_base, r_begin, r_end,
                                                        true, true, smem, rowtab, acc);
            else
                go_tc_filter_chunks_nhwc<T, TF32, false>(p, x, dy, g, n_base, r_begin, r_end,
                                                         avec, bvec, smem, rowtab, acc);

            // Split s's partial filter (HWIO rows m, all groups' channels), each element once.
            Acc* __restrict__ part = ws + s * flen;
            const int gq = lane / 4, tq = lane % 4;
#pragma unroll
            for (int i = 0; i < MF; ++i)
#pragma unroll
                for (int j = 0; j < TC_NFRAG; ++j)
#pragma unroll
                    for (int e = 0; e < Tr::CE; ++e) {
                        const go_i64 m =
                            m_base + wm * TC_WM + i * Tr::FM + gq + (e >= 2 ? 8 : 0);
                        const go_i64 o = n_base + wn * TC_WN + j * 8 + 2 * tq + (e % 2);
                        if (m < rows && o < cog) part[m * p.co + g * cog + o] = acc[i][j][e];
                    }
        }
    }
}

// One entry point per layout: in one kernel the two chunk loops together spill at the
// 16-bit types' three blocks per SM (each alone needs about 166 registers).
template <typename T>
GO_DEV void conv2d_backprop_filter_partial_tc_body(const GoConvFilterParams& p) {
    __shared__ __align__(16) unsigned char smem[2 * TC_STAGE_BYTES];
    __shared__ GoTcFilterRow rowtab[TC_BM];
    // The filter gradient stays exact in f32 (3xTF32; the TF32 allowance covers the forward
    // and backprop_input only).
    if (p.layout == GO_LAYOUT_NCHW)
        conv2d_backprop_filter_partial_tc_layout<T, GO_LAYOUT_NCHW, false>(p, smem, rowtab);
}
// The NCHW loop element by element, the default before 2026-12-02 (kept for timing
// against it; GRADOPS_CUDA_CONV_TC_FILTER_TILE=elementwise).
template <typename T>
GO_DEV void conv2d_backprop_filter_partial_tc_elementwise_body(const GoConvFilterParams& p) {
    __shared__ __align__(16) unsigned char smem[TC_STAGE_BYTES];
    __shared__ GoTcFilterRow rowtab[TC_BM];
    if (p.layout == GO_LAYOUT_NCHW)
        conv2d_backprop_filter_partial_tc_layout<T, GO_LAYOUT_NCHW, false, false, true>(p, smem,
                                                                                    rowtab);
}
template <typename T>
GO_DEV void conv2d_backprop_filter_partial_tc_nhwc_body(const GoConvFilterParams& p) {
    __shared__ __align__(16) unsigned char smem[TC_STAGES * TC_STAGE_BYTES];
    __shared__ GoTcFilterRow rowtab[TC_BM];
    if (p.layout == GO_LAYOUT_NHWC)
        conv2d_backprop_filter_partial_tc_layout<T, GO_LAYOUT_NHWC, false>(p, smem, rowtab);
}

#if GO_HAS_WGMMA
// The NHWC filter gradient's partial sums on one warpgroup of wgmma (16-bit types; sm_90a
// images and the emulator; GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma): the tiles, splits and
// sums of conv2d_backprop_filter_partial_tc_nhwc, bit for bit (the emulator), where cig and
// cog are multiples of VEC and x and dy 16-byte aligned. TC_VSTAGES stages of 8 KB.
template <typename T>
GO_DEV void conv2d_backprop_filter_partial_tc_nhwc_wgmma_body(const GoConvFilterParams& p) {
    __shared__ __align__(512) unsigned char smem[TC_VSTAGES * (TC_BM + TC_BN) * 64];
    __shared__ GoTcFilterRow rowtab[TC_BM];
    if (p.layout == GO_LAYOUT_NHWC)
        conv2d_backprop_filter_partial_tc_layout<T, GO_LAYOUT_NHWC, false, true>(p, smem, rowtab);
}
#endif

#define GO_TC_FILTER_INSTANTIATE(NAME, BODY)                                                  \
    GO_INSTANTIATE_ONE(NAME, GoConvFilterParams, BODY, GO_TC_BOUNDS_3, f16, __half)          \
    GO_INSTANTIATE_ONE(NAME, GoConvFilterParams, BODY, GO_TC_BOUNDS_3, bf16, __nv_bfloat16)  \
    GO_INSTANTIATE_ONE(NAME, GoConvFilterParams, BODY, GO_TC_BOUNDS_2, f32, float)         \
    GO_INSTANTIATE_ONE(NAME, GoConvFilterParams, BODY, GO_TC_BOUNDS_2, f64, double)
GO_TC_FILTER_INSTANTIATE(conv2d_backprop_filter_partial_tc, conv2d_backprop_filter_partial_tc_body)
GO_TC_FILTER_INSTANTIATE(conv2d_backprop_filter_partial_tc_elementwise,
                         conv2d_backprop_filter_partial_tc_elementwise_body)
GO_TC_FILTER_INSTANTIATE(conv2d_backprop_filter_partial_tc_nhwc,
                         conv2d_backprop_filter_partial_tc_nhwc_body)
#undef GO_TC_FILTER_INSTANTIATE
#if GO_HAS_WGMMA
// Three blocks of one warpgroup per SM (168 registers; at four, 128, ptxas spilled 12
// bytes: the two pixel rows' 64-bit cursors beside the 32 accumulators).
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_filter_partial_tc_nhwc_wgmma, GoConvFilterParams,
                         conv2d_backprop_filter_partial_tc_nhwc_wgmma_body, GO_TC_BOUNDS_3, f16,
                         __half)
GO_INSTANTIATE_SM90A_ONE(conv2d_backprop_filter_partial_tc_nhwc_wgmma, GoConvFilterParams,
                         conv2d_backprop_filter_partial_tc_nhwc_wgmma_body, GO_TC_BOUNDS_3, bf16,
                         __nv_bfloat16)
#endif

#undef TC_BM
#undef TC_BN
#undef TC_WM
#undef TC_WN
#undef TC_STAGES
#undef TC_THREADS
#undef TC_NFRAG
#undef TC_ROW_BYTES
#undef TC_STAGE_BYTES

#endif  // GO_HAS_TC

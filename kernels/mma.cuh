// Warp-level tensor-core primitives (sm_80+): mma.sync m16n8k16 (f16/bf16 in, f32
// accumulate), ldmatrix x4 (+ .trans), and the cp.async pipeline (16-byte copies with
// zero-fill, commit_group, wait_group).
//
// Three builds of the same API:
//  * nvcc device code for compute_80+: inline PTX.
//  * nvcc otherwise (compute_75 images, nvcc's host pass): nothing is defined; the callers
//    (the *_tc kernels) are compiled only where GO_HAS_TC is 1.
//  * host C++ under the emulator (emu/cuda_emu.h): a model of each instruction's
//    semantics that follows the PTX ISA's fragment layouts lane by lane. The warp
//    collectives (mma, ldmatrix) gather every lane's operand through the emulator's
//    per-warp exchange buffer between two warp barriers; cp.async copies are queued per
//    thread and performed only at cp.async.wait_group, so a read of a stage before its
//    wait sees the old bytes (and a kernel that ends with copies still queued aborts).
//
// Also mma.sync m16n8k8 tf32 (f32 accumulate; with cvt.rna.tf32.f32 the 3xTF32 split of
// an f32) and mma.sync m8n8k4 f64 (the FP64 tensor cores).
//
// Fragment layouts (PTX ISA, "Matrix Fragments for mma.m16n8k16 with floating point
// type"): g = lane / 4, t = lane % 4.
//   A (16x16, row): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]
//   B (16x8, col):  b0 = B[2t..2t+1][g],  b1 = B[2t+8..2t+9][g]
//   C/D (16x8 f32): c0,c1 = C[g][2t], C[g][2t+1];  c2,c3 = C[g+8][2t], C[g+8][2t+1]
// ldmatrix .x4: lanes 8j..8j+7 give the 16-byte rows of matrix j; register j of lane l
// holds row l/4, elements 2(l%4), 2(l%4)+1 of matrix j (.trans: column l/4, rows 2(l%4),
// 2(l%4)+1, i.e. the transposed matrix's row).
//
// m16n8k8 tf32: a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4];
//   b0 = B[t][g], b1 = B[t+4][g]; C/D as for m16n8k16.
// m8n8k4 f64: a0 = A[g][t]; b0 = B[t][g]; c0, c1 = C[g][2t], C[g][2t+1].
//
// The model's accumulation order: d = (((c + p0) + p1) + ... + p15) in f32, p_k = a[k] *
// b[k] (exact in f32 for f16 and bf16 inputs, and for tf32 ones), k ascending; f64:
// d = fma(a3, b3, fma(a2, b2, fma(a1, b1, fma(a0, b0, c)))). The hardware's internal order
// and rounding of the 16-term sum are not specified and may differ in the last bit, so
// GPU results are compared with a tolerance, never bitwise with the emulator.
#pragma once

#include "common.cuh"
#ifndef __CUDACC__
#include <cmath>
#include <cstring>
#endif

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define GO_HAS_TC 1
#elif !defined(__CUDACC__)
#define GO_HAS_TC 1  // the emulator's host model
#else
#define GO_HAS_TC 0
#endif

#if GO_HAS_TC

// Element tags for the two mma input types.
struct GoMmaF16 {};
struct GoMmaBf16 {};
template <typename T> struct GoMmaKind;
template <> struct GoMmaKind<__half> { typedef GoMmaF16 type; };
template <> struct GoMmaKind<__nv_bfloat16> { typedef GoMmaBf16 type; };

#if defined(__CUDA_ARCH__)

GO_DEV uint32_t go_smem_addr(const void* p) {
    return (uint32_t)__cvta_generic_to_shared(p);
}

// D = A * B + C, m16n8k16, A row-major f16, B column-major f16, f32 accumulators.
GO_DEV void go_mma_m16n8k16(GoMmaF16, float d[4], const uint32_t a[4], const uint32_t b[2],
                            const float c[4]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
          "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
GO_DEV void go_mma_m16n8k16(GoMmaBf16, float d[4], const uint32_t a[4], const uint32_t b[2],
                            const float c[4]) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
          "f"(c[1]), "f"(c[2]), "f"(c[3]));
}

// D = A * B + C, m16n8k8, A row-major tf32, B column-major tf32 (f32 registers whose low
// 13 mantissa bits the unit ignores), f32 accumulators.
GO_DEV void go_mma_m16n8k8_tf32(float d[4], const uint32_t a[4], const uint32_t b[2],
                                const float c[4]) {
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11,%12,%13};\n"
        : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),
          "f"(c[1]), "f"(c[2]), "f"(c[3]));
}
GO_DEV float go_u32_as_f32(uint32_t v) { return __uint_as_float(v); }
// f32 -> tf32 (round to nearest, ties away from zero), as the bits of an f32.
GO_DEV uint32_t go_cvt_tf32(float v) {
    uint32_t r;
    asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(r) : "f"(v));
    return r;
}
// D = A * B + C, m8n8k4 f64.
GO_DEV void go_mma_m8n8k4_f64(double d[2], double a, double b, const double c[2]) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%4,%5};\n"
                 : "=d"(d[0]), "=d"(d[1])
                 : "d"(a), "d"(b), "d"(c[0]), "d"(c[1]));
}

// Four 8x8 b16 matrices; `row` is this lane's row address (lanes 8j..8j+7: matrix j).
GO_DEV void go_ldmatrix_x4(uint32_t r[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(go_smem_addr(row)));
}
GO_DEV void go_ldmatrix_x4_trans(uint32_t r[4], const void* row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(go_smem_addr(row)));
}

// 16 bytes global -> shared, bypassing L1 (cg). src_bytes = 0: nothing is read and the 16
// destination bytes are zeroed (src must still be a valid address); 16: a full copy.
GO_DEV void go_cp_async_16(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(go_smem_addr(dst)),
                 "l"(src), "r"(src_bytes));
}
// The same through L1 (ca): a later copy of the same bytes by this block or another on the
// SM may hit there instead of L2.
GO_DEV void go_cp_async_16_ca(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16, %2;\n" ::"r"(go_smem_addr(dst)),
                 "l"(src), "r"(src_bytes));
}
GO_DEV void go_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait until at most N of this thread's committed groups are still in flight.
template <int N> GO_DEV void go_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

#else  // the emulator's host model

namespace emu_mma {

GO_DEV float to_f(GoMmaF16, uint16_t bits) {
    return __half2float(__ushort_as_half(bits));
}
GO_DEV float to_f(GoMmaBf16, uint16_t bits) {
    return __bfloat162float(__ushort_as_bfloat16(bits));
}
GO_DEV uint16_t lo(uint32_t v) { return (uint16_t)(v & 0xFFFFu); }
GO_DEV uint16_t hi(uint32_t v) { return (uint16_t)(v >> 16); }

// Element (row, col) of the warp's A (16x16) and B (16x8, indexed [k][n]) from the
// gathered fragments.
GO_DEV uint16_t a_elem(const emu::WarpExchange& x, int row, int col) {
    const int g = row % 8, t = (col % 8) / 2;
    const int reg = (row >= 8 ? 1 : 0) + (col >= 8 ? 2 : 0);
    const uint32_t v = x.u[g * 4 + t][reg];
    return col % 2 ? hi(v) : lo(v);
}
GO_DEV uint16_t b_elem(const emu::WarpExchange& x, int k, int n) {
    const int t = (k % 8) / 2, reg = k >= 8 ? 1 : 0;
    const uint32_t v = x.u[n * 4 + t][4 + reg];
    return k % 2 ? hi(v) : lo(v);
}

template <typename K>
GO_DEV void mma(K kind, float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
    emu::WarpExchange& x = emu::warp_exchange();
    const int lane = emu::lane_id();
    for (int i = 0; i < 4; ++i) x.u[lane][i] = a[i];
    for (int i = 0; i < 2; ++i) x.u[lane][4 + i] = b[i];
    emu::warp_barrier();  // every lane's fragments are in
    const int g = lane / 4, t = lane % 4;
    float out[4];
    for (int i = 0; i < 4; ++i) {
        const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i % 2);
        float acc = c[i];
        for (int k = 0; k < 16; ++k)
            acc += to_f(kind, a_elem(x, row, k)) * to_f(kind, b_elem(x, k, col));
        out[i] = acc;
    }
    emu::warp_barrier();  // every lane has read before the buffer is reused
    for (int i = 0; i < 4; ++i) d[i] = out[i];
}

GO_DEV float tf32_value(uint32_t bits) {
    bits &= 0xFFFFE000u;  // the unit reads 19 bits: sign, exponent, 10 mantissa bits
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

GO_DEV void mma_tf32(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {
    emu::WarpExchange& x = emu::warp_exchange();
    const int lane = emu::lane_id();
    for (int i = 0; i < 4; ++i) x.u[lane][i] = a[i];
    for (int i = 0; i < 2; ++i) x.u[lane][4 + i] = b[i];
    emu::warp_barrier();
    const int g = lane / 4, t = lane % 4;
    float out[4];
    for (int i = 0; i < 4; ++i) {
        const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i % 2);
        float acc = c[i];
        for (int k = 0; k < 8; ++k) {
            // A[row][k]: lane (row % 8)*4 + k % 4, register (row >= 8) + 2*(k >= 4).
            const uint32_t av = x.u[(row % 8) * 4 + k % 4][(row >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0)];
            // B[k][col]: lane col*4 + k % 4, register k >= 4.
            const uint32_t bv = x.u[col * 4 + k % 4][4 + (k >= 4 ? 1 : 0)];
            acc += tf32_value(av) * tf32_value(bv);
        }
        out[i] = acc;
    }
    emu::warp_barrier();
    for (int i = 0; i < 4; ++i) d[i] = out[i];
}

// cvt.rna.tf32.f32: round the f32 to 10 mantissa bits, ties away from zero; the result's
// low 13 bits are zero. Inf and NaN pass through.
GO_DEV uint32_t cvt_tf32(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    if ((bits & 0x7F800000u) == 0x7F800000u) return bits;
    bits += 0x1000u;  // half of the dropped 13 bits' weight: ties away from zero
    return bits & 0xFFFFE000u;
}

GO_DEV void mma_f64(double d[2], double a, double b, const double c[2]) {
    emu::WarpExchange& x = emu::warp_exchange();
    const int lane = emu::lane_id();
    double ab[2] = {a, b};
    std::memcpy(&x.u[lane][0], ab, 16);
    emu::warp_barrier();
    const int g = lane / 4, t = lane % 4;
    double out[2];
    for (int i = 0; i < 2; ++i) {
        const int col = 2 * t + i;
        double acc = c[i];
        for (int k = 0; k < 4; ++k) {
            double av, bv;
            std::memcpy(&av, &x.u[g * 4 + k][0], 8);    // A[g][k]: lane g*4 + k
            std::memcpy(&bv, &x.u[col * 4 + k][2], 8);  // B[k][col]: lane col*4 + k
            acc = std::fma(av, bv, acc);
        }
        out[i] = acc;
    }
    emu::warp_barrier();
    d[0] = out[0];
    d[1] = out[1];
}

template <bool TRANS>
GO_DEV void ldmatrix_x4(uint32_t r[4], const void* row) {
    emu::WarpExchange& x = emu::warp_exchange();
    const int lane = emu::lane_id();
    if (reinterpret_cast<uintptr_t>(row) % 16 != 0) {
        std::fprintf(stderr, "ldmatrix: lane %d row address %p not 16-byte aligned\n", lane, row);
        std::abort();
    }
    x.p[lane] = row;
    emu::warp_barrier();
    const int q = lane / 4, t = lane % 4;
    for (int j = 0; j < 4; ++j) {
        uint16_t e[2];
        for (int k = 0; k < 2; ++k) {
            // Matrix j's rows are lanes 8j..8j+7's addresses, 8 b16 elements each.
            const int mrow = TRANS ? 2 * t + k : q, mcol = TRANS ? q : 2 * t + k;
            const uint16_t* rp = static_cast<const uint16_t*>(x.p[8 * j + mrow]);
            e[k] = rp[mcol];
        }
        r[j] = (uint32_t)e[0] | ((uint32_t)e[1] << 16);
    }
    emu::warp_barrier();
}

}  // namespace emu_mma

GO_DEV void go_mma_m16n8k16(GoMmaF16 k, float d[4], const uint32_t a[4], const uint32_t b[2],
                            const float c[4]) {
    emu_mma::mma(k, d, a, b, c);
}
GO_DEV void go_mma_m16n8k16(GoMmaBf16 k, float d[4], const uint32_t a[4], const uint32_t b[2],
                            const float c[4]) {
    emu_mma::mma(k, d, a, b, c);
}
GO_DEV void go_mma_m16n8k8_tf32(float d[4], const uint32_t a[4], const uint32_t b[2],
                                const float c[4]) {
    emu_mma::mma_tf32(d, a, b, c);
}
GO_DEV uint32_t go_cvt_tf32(float v) { return emu_mma::cvt_tf32(v); }
GO_DEV float go_u32_as_f32(uint32_t v) {
    float f;
    std::memcpy(&f, &v, 4);
    return f;
}
GO_DEV void go_mma_m8n8k4_f64(double d[2], double a, double b, const double c[2]) {
    emu_mma::mma_f64(d, a, b, c);
}
GO_DEV void go_ldmatrix_x4(uint32_t r[4], const void* row) { emu_mma::ldmatrix_x4<false>(r, row); }
GO_DEV void go_ldmatrix_x4_trans(uint32_t r[4], const void* row) {
    emu_mma::ldmatrix_x4<true>(r, row);
}
GO_DEV void go_cp_async_16(void* dst, const void* src, int src_bytes) {
    emu::cp_async_issue(dst, src, src_bytes);
}
GO_DEV void go_cp_async_16_ca(void* dst, const void* src, int src_bytes) {
    emu::cp_async_issue(dst, src, src_bytes);  // caching is invisible to the results
}
GO_DEV void go_cp_async_commit() { emu::cp_async_commit(); }
template <int N> GO_DEV void go_cp_async_wait() { emu::cp_async_wait(N); }

#endif  // __CUDA_ARCH__

#endif  // GO_HAS_TC

// Warp-level tensor-core primitives (sm_80+): mma.sync m16n8k16 (f16/bf16 in, f32
// accumulate), ldmatrix x4 (+ .trans), the cp.async pipeline (16-byte copies with
// zero-fill, commit_group, wait_group) and mbarriers (init, arrive, the cp.async arrival,
// the parity wait).
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
GO_DEV uint32_t go_f32_as_u32(float v) { return __float_as_uint(v); }
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
// 4 bytes global -> shared through L1 (the only 4-byte cp.async), as go_cp_async_16_ca.
GO_DEV void go_cp_async_4_ca(void* dst, const void* src, int src_bytes) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(go_smem_addr(dst)),
                 "l"(src), "r"(src_bytes));
}
GO_DEV void go_cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
// Wait until at most N of this thread's committed groups are still in flight.
template <int N> GO_DEV void go_cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// mbarrier (PTX ISA, "Parallel Synchronization and Communication Instructions: mbarrier"):
// a 64-bit shared-memory object with an expected arrival count; a phase completes when that
// many arrivals have happened, and the next begins with the same count. A waiter names the
// phase by its parity (phase k has parity k % 2). Arrive has release and a successful wait
// acquire semantics at CTA scope, so a phase's completion publishes what its arrivers wrote.
GO_DEV void go_mbar_init(uint64_t* bar, unsigned count) {
    asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(go_smem_addr(bar)), "r"(count)
                 : "memory");
}
GO_DEV void go_mbar_arrive(uint64_t* bar) {
    asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared.b64 st, [%0];\n}\n" ::"r"(
                     go_smem_addr(bar))
                 : "memory");
}
// An arrival that happens when every cp.async this thread issued before it has landed
// (.noinc: it counts against the expected count, which must include it).
GO_DEV void go_cp_async_mbar_arrive_noinc(uint64_t* bar) {
    asm volatile("cp.async.mbarrier.arrive.noinc.shared.b64 [%0];\n" ::"r"(go_smem_addr(bar))
                 : "memory");
}
// Whether the phase of the given parity has completed (try_wait may first suspend the
// thread a while; sm_80's test_wait returns at once).
GO_DEV bool go_mbar_try_wait(uint64_t* bar, unsigned parity) {
    uint32_t done;
    asm volatile("{\n.reg .pred p;\n"
#if __CUDA_ARCH__ >= 900
                 "mbarrier.try_wait.parity.shared.b64 p, [%1], %2;\n"
#else
                 "mbarrier.test_wait.parity.shared.b64 p, [%1], %2;\n"
#endif
                 "selp.u32 %0, 1, 0, p;\n}\n"
                 : "=r"(done)
                 : "r"(go_smem_addr(bar)), "r"(parity)
                 : "memory");
    return done != 0;
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
GO_DEV uint32_t go_f32_as_u32(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u;
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
GO_DEV void go_cp_async_4_ca(void* dst, const void* src, int src_bytes) {
    emu::cp_async_issue(dst, src, src_bytes, 4);
}
GO_DEV void go_cp_async_commit() { emu::cp_async_commit(); }
template <int N> GO_DEV void go_cp_async_wait() { emu::cp_async_wait(N); }
GO_DEV void go_mbar_init(uint64_t* bar, unsigned count) { emu::mbarrier_init(bar, count); }
GO_DEV void go_mbar_arrive(uint64_t* bar) { emu::mbarrier_arrive(bar); }
GO_DEV void go_cp_async_mbar_arrive_noinc(uint64_t* bar) {
    emu::cp_async_mbarrier_arrive_noinc(bar);
}
GO_DEV bool go_mbar_try_wait(uint64_t* bar, unsigned parity) {
    return emu::mbarrier_try_wait(bar, parity);
}

#endif  // __CUDA_ARCH__

// Waits until the phase of the given parity has completed.
GO_DEV void go_mbar_wait(uint64_t* bar, unsigned parity) {
    while (!go_mbar_try_wait(bar, parity)) {
    }
}

// ---------------------------------------------------------------------------------------
// Warpgroup MMA (Hopper, sm_90a images only: wgmma.mma_async; GO_HAS_WGMMA): one
// m64n64k16 for the warpgroup's 4 warps (128 threads), A (64 x 16) and B (64 x 16, [n][k])
// read from shared memory through matrix descriptors, f32 accumulators in registers:
// thread l of warp w holds, per n8 chunk i, d[4i..4i+3] = D[16w + g][8i + 2t, +1],
// D[16w + g + 8][8i + 2t, +1] (g = l / 4, t = l % 4: the m16n8 C fragment of rows
// 16w..16w+15). Asynchronous: issued after wgmma.fence, closed into a group by
// commit_group, complete (accumulators written, shared memory read) only after
// wait_group; shared memory written by the threads (cp.async included) is made visible to
// it by fence.proxy.async before the barrier that precedes the issue.
// The descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address >> 4, 16-29
// leading-dimension byte offset >> 4, 32-45 stride-dimension byte offset >> 4, 49-51 base
// offset (0: the swizzle atoms are aligned), 62-63 swizzle (0 none, 1 128-byte, 2 64-byte,
// 3 32-byte). The kernels use K-major operands with the 64-byte swizzle: rows of 64 bytes
// (32 16-bit k), 8-row atoms of 512 bytes, 512-byte aligned, the 16-byte chunk c of row r
// stored at chunk c ^ ((r >> 1) & 3) (address bits 4-5 ^= bits 7-8); stride byte offset 512
// (atom to atom), leading byte offset unused (16); the second k16 of a row starts 32 bytes
// in. And (the forward's B, whose filter is contiguous along n) N-major B (imm-trans-b 1) in
// the same swizzle: rows of 64 bytes are 32 n of one k, an atom 8 k rows; stride byte offset
// from one 8-k atom to the next (512 here), leading byte offset from one 32-n column of atoms
// to the next; the second k16 starts two atoms (1024 bytes) on. The filter gradient's A,
// contiguous along m, is staged the same way and read M-major (imm-trans-a 1). The halo
// tile's A is K-major without swizzle (mode 0, go_wgmma_desc_interleave). f32 (tf32) operands take
// m64n64k8: 8 k of 4 bytes, the same 32 bytes of a 64-byte row as a k16 of 16-bit ones, so
// the same descriptors and offsets serve; K-major only (the ISA has no transposed tf32).
#if (defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)) || !defined(__CUDACC__)
#define GO_HAS_WGMMA 1
#else
#define GO_HAS_WGMMA 0
#endif

#if GO_HAS_WGMMA
// Dynamic shared memory (the warp-specialized conv kernels' stages): array NAME of at most
// BYTES bytes, and the bytes the launch gave (the emulator: static storage, as its
// __shared__, and the bytes its job names). go_smem_align: p advanced to the next multiple of
// ALIGN in the shared window (what the swizzle and the descriptors see).
#if defined(__CUDA_ARCH__)
#define GO_DYNAMIC_SMEM(NAME, BYTES) extern __shared__ __align__(16) unsigned char NAME[]
GO_DEV unsigned go_dynamic_smem_bytes() {
    unsigned r;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(r));
    return r;
}
template <unsigned ALIGN> GO_DEV unsigned char* go_smem_align(unsigned char* p) {
    return p + ((ALIGN - go_smem_addr(p) % ALIGN) % ALIGN);
}
// p, as a value the compiler cannot see through: what is computed from it stays where it is
// written (not hoisted out of the loops around it, where it would hold registers).
template <typename P> GO_DEV P* go_opaque(P* p) {
    asm volatile("" : "+l"(p));
    return p;
}
GO_DEV int go_opaque(int v) {
    asm volatile("" : "+r"(v));
    return v;
}
#else
#define GO_DYNAMIC_SMEM(NAME, BYTES) __shared__ __align__(16) unsigned char NAME[BYTES]
GO_DEV unsigned go_dynamic_smem_bytes() { return emu::g_dynamic_smem_bytes; }
template <unsigned ALIGN> GO_DEV unsigned char* go_smem_align(unsigned char* p) {
    return p + ((ALIGN - reinterpret_cast<uintptr_t>(p) % ALIGN) % ALIGN);
}
template <typename P> GO_DEV P* go_opaque(P* p) { return p; }
GO_DEV int go_opaque(int v) { return v; }
#endif
#define GO_WGMMA_SW64 2u
#define GO_WGMMA_SW64_SBO 512u
#define GO_WGMMA_INTERLEAVE_SBO 128u
// The descriptor's bits for a shared address (its low 18 bits), offsets and swizzle mode.
GO_DEV uint64_t go_wgmma_desc_bits(uint32_t addr, uint32_t lbo, uint32_t sbo, uint32_t mode) {
    return (uint64_t)((addr & 0x3FFFFu) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFFu) << 16) |
           ((uint64_t)((sbo >> 4) & 0x3FFFu) << 32) | ((uint64_t)(mode & 3u) << 62);
}
#if defined(__CUDA_ARCH__)
typedef uint64_t GoWgmmaDesc;
// K-major, 64-byte swizzle, the operand starting at p (shared memory).
GO_DEV GoWgmmaDesc go_wgmma_desc_sw64(const void* p) {
    return go_wgmma_desc_bits(go_smem_addr(p), 16u, GO_WGMMA_SW64_SBO, GO_WGMMA_SW64);
}
// N-major, 64-byte swizzle, the operand starting at p (an atom's start), its 32-n columns
// of atoms lbo bytes apart.
GO_DEV GoWgmmaDesc go_wgmma_desc_sw64_mn(const void* p, uint32_t lbo) {
    return go_wgmma_desc_bits(go_smem_addr(p), lbo, GO_WGMMA_SW64_SBO, GO_WGMMA_SW64);
}
// K-major, no swizzle (mode 0): core matrices of 8 rows x 16 bytes, each one 128-byte
// block (rows 16 bytes apart), the next 8 rows 128 bytes on (stride byte offset), the next
// 16 bytes of k lbo bytes on. With every row of a k-group contiguous, an operand may start
// at any row (the halo tile's taps: one buffer, a start per tap).
GO_DEV GoWgmmaDesc go_wgmma_desc_interleave(const void* p, uint32_t lbo) {
    return go_wgmma_desc_bits(go_smem_addr(p), lbo, GO_WGMMA_INTERLEAVE_SBO, 0u);
}
GO_DEV void go_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
GO_DEV void go_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> GO_DEV void go_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// The block's shared-memory writes (this thread's) visible to the async proxy (wgmma).
GO_DEV void go_fence_proxy_async_smem() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// A barrier of this thread's warpgroup alone (its 128 threads, named barrier ID: 1 to 15,
// each used by one warpgroup of the block; 0 is __syncthreads'), with __syncthreads' memory
// ordering among them.
template <int ID> GO_DEV void go_warpgroup_sync() {
    static_assert(ID >= 1 && ID < 16, "a named barrier other than __syncthreads' 0");
    asm volatile("bar.sync %0, 128;\n" ::"n"(ID) : "memory");
}
#define GO_WGMMA_REGS32 \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, " \
    "%14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, " \
    "%26, %27, %28, %29, %30, %31"
#define GO_WGMMA_ACC32(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), \
    "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), \
    "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), \
    "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), \
    "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), \
    "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define GO_WGMMA_M64N64K16(TYPE)                                                          \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                             \
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32." TYPE "." TYPE " {"         \
                 GO_WGMMA_REGS32 "}, %32, %33, p, 1, 1, %36, %35;\n}\n"                   \
                 : GO_WGMMA_ACC32(d)                                                      \
                 : "l"(a), "l"(b), "r"(1), "n"(TB), "n"(TA))
// D += A * B (scale-d 1), A K-major (TA 0) or M-major (TA 1: imm-trans-a, the filter
// gradient's [k][m] A, in the N-major B's layout), B K-major (TB 0) or N-major (TB 1).
template <int TB, int TA = 0>
GO_DEV void go_wgmma_m64n64k16(GoMmaF16, float d[32], GoWgmmaDesc a, GoWgmmaDesc b) {
    GO_WGMMA_M64N64K16("f16");
}
template <int TB, int TA = 0>
GO_DEV void go_wgmma_m64n64k16(GoMmaBf16, float d[32], GoWgmmaDesc a, GoWgmmaDesc b) {
    GO_WGMMA_M64N64K16("bf16");
}
#undef GO_WGMMA_M64N64K16
// D += A * B (scale-d 1), m64n64k8 tf32: A and B K-major (tf32 has no transposed form), f32
// elements whose low 13 bits the kernels have zeroed (cvt.rna.tf32.f32), so that what the
// unit reads of them is the value rounded to nearest.
GO_DEV void go_wgmma_m64n64k8_tf32(float d[32], GoWgmmaDesc a, GoWgmmaDesc b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" GO_WGMMA_REGS32
                 "}, %32, %33, p, 1, 1;\n}\n"
                 : GO_WGMMA_ACC32(d)
                 : "l"(a), "l"(b), "r"(1));
}
// D += A * B, m64n64k8 tf32 with A from registers (wgmma's register-source form, B as
// above): thread l of warp w holds a[0..3] = A[16w + g][t], A[16w + g + 8][t], A[16w + g][t
// + 4], A[16w + g + 8][t + 4] (g = l / 4, t = l % 4: the m16n8k8 tf32 A fragment of rows
// 16w..16w+15; CUTLASS's ALayout_64x8), tf32 values in f32 bits. The registers must keep
// their values until the group's wait_group: where ptxas cannot prove they do, it serializes
// the wgmma (the sm90a ptxas tests reject that).
GO_DEV void go_wgmma_m64n64k8_tf32_rs(float d[32], const uint32_t a[4], GoWgmmaDesc b) {
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 {" GO_WGMMA_REGS32
                 "}, {%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
                 : GO_WGMMA_ACC32(d)
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(1));
}
#undef GO_WGMMA_ACC32
#undef GO_WGMMA_REGS32
#else  // the emulator's host model (emu/cuda_emu.h's warpgroups)
// The bits as the device builds them (from the address's low 18 bits) and the address
// itself, which the model reads through after checking the bits agree with it.
struct GoWgmmaDesc {
    uint64_t bits;
    const unsigned char* p;
};
GO_DEV GoWgmmaDesc go_wgmma_desc_sw64(const void* p) {
    return {go_wgmma_desc_bits((uint32_t)reinterpret_cast<uintptr_t>(p), 16u,
                               GO_WGMMA_SW64_SBO, GO_WGMMA_SW64),
            static_cast<const unsigned char*>(p)};
}
GO_DEV GoWgmmaDesc go_wgmma_desc_sw64_mn(const void* p, uint32_t lbo) {
    return {go_wgmma_desc_bits((uint32_t)reinterpret_cast<uintptr_t>(p), lbo,
                               GO_WGMMA_SW64_SBO, GO_WGMMA_SW64),
            static_cast<const unsigned char*>(p)};
}
GO_DEV GoWgmmaDesc go_wgmma_desc_interleave(const void* p, uint32_t lbo) {
    return {go_wgmma_desc_bits((uint32_t)reinterpret_cast<uintptr_t>(p), lbo,
                               GO_WGMMA_INTERLEAVE_SBO, 0u),
            static_cast<const unsigned char*>(p)};
}
namespace emu_mma {
// The bits of element (row, k) of a K-major operand of ES-byte elements (2: f16/bf16, 4:
// tf32 in f32 bits) under descriptor d.
template <int ES>
GO_DEV uint32_t wgmma_elem(uint64_t bits, const unsigned char* p, int row, int k) {
    const uint32_t mode = (uint32_t)(bits >> 62);
    const uint64_t lbo = ((bits >> 16) & 0x3FFFu) << 4, sbo = ((bits >> 32) & 0x3FFFu) << 4;
    uintptr_t addr;
    if (mode == 0) {  // core matrices of 8 rows x 16 bytes: LBO along k, SBO along rows
        addr = reinterpret_cast<uintptr_t>(p) + (row / 8) * sbo + (k / (16 / ES)) * lbo +
               (row % 8) * 16 + (k % (16 / ES)) * ES;
    } else {
        const uintptr_t sw = mode == 1 ? 128 : mode == 2 ? 64 : 32;  // bytes of a swizzled row
        addr = reinterpret_cast<uintptr_t>(p) + (row / 8) * sbo + (row % 8) * sw + k * ES;
        addr ^= ((addr >> 7) & (sw / 16 - 1)) << 4;
    }
    uint32_t v = 0;
    std::memcpy(&v, reinterpret_cast<const void*>(addr), ES);
    return v;
}
// Element (mn, k) of an MN-major swizzled operand (16-bit elements) under descriptor d:
// rows of the swizzle's width hold consecutive mn of one k, 8 k rows an atom; the next 8 k
// SBO on, the next row-width of mn LBO on.
GO_DEV uint16_t wgmma_elem_mn(uint64_t bits, const unsigned char* p, int mn, int k) {
    const uint32_t mode = (uint32_t)(bits >> 62);
    const uint64_t lbo = ((bits >> 16) & 0x3FFFu) << 4, sbo = ((bits >> 32) & 0x3FFFu) << 4;
    const uintptr_t sw = mode == 1 ? 128 : mode == 2 ? 64 : 32;  // bytes of a swizzled row
    const int per_row = (int)(sw / 2);                            // mn per row
    uintptr_t addr = reinterpret_cast<uintptr_t>(p) + (mn / per_row) * lbo + (k / 8) * sbo +
                     (k % 8) * sw + (mn % per_row) * 2;
    addr ^= ((addr >> 7) & (sw / 16 - 1)) << 4;
    uint16_t v;
    std::memcpy(&v, reinterpret_cast<const void*>(addr), 2);
    return v;
}
GO_DEV void wgmma_check_desc(const GoWgmmaDesc& d, bool mn_major) {
    const uintptr_t p = reinterpret_cast<uintptr_t>(d.p);
    const uint32_t mode = (uint32_t)(d.bits >> 62);
    const uintptr_t sw = mode == 1 ? 128 : mode == 2 ? 64 : mode == 3 ? 32 : 0;
    bool ok = (d.bits & 0x3FFFu) == ((p & 0x3FFFFu) >> 4) && p % 16 == 0 &&
              ((d.bits >> 49) & 7u) == 0;
    // A swizzled K-major operand's k (32 bytes: 16 16-bit or 8 tf32) lie within one row of
    // the swizzle; an
    // MN-major one starts at an atom (8 rows), as the kernels use it (no mode other than
    // the swizzled one is modelled for it).
    if (sw && !mn_major) ok = ok && p % sw + 32 <= sw;
    if (mn_major) ok = ok && sw && p % (8 * sw) == 0;
    if (!ok) {
        std::fprintf(stderr, "wgmma: descriptor %016llx does not describe %p\n",
                     (unsigned long long)d.bits, d.p);
        std::abort();
    }
}
// Element (row, k) of the register-source A of a tf32 wgmma (kind 3): register (row % 16 >=
// 8) + 2 * (k >= 4) of thread 32 * (row / 16) + 4 * (row % 8) + k % 4 (go_wgmma_m64n64k8_tf32_rs).
GO_DEV uint32_t wgmma_reg_a_tf32(const emu::WgmmaOp& op, int row, int k) {
    const int tid = 32 * (row / 16) + 4 * (row % 8) + k % 4;
    return op.ar[tid][(row % 16 >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0)];
}
// The shared-memory operand elements op reads (A's where it is not in registers, then B's).
GO_DEV std::vector<uint32_t> wgmma_operands(const emu::WgmmaOp& op) {
    std::vector<uint32_t> v;
    const int kn = op.kind >= 2 ? 8 : 16;
    for (int ab = op.kind == 3 ? 1 : 0; ab < 2; ++ab) {
        const uint64_t bits = ab ? op.bbits : op.abits;
        const unsigned char* p = ab ? op.bp : op.ap;
        const bool mn = ab ? op.tb != 0 : op.ta != 0;
        for (int r = 0; r < 64; ++r)
            for (int k = 0; k < kn; ++k)
                v.push_back(op.kind >= 2 ? wgmma_elem<4>(bits, p, r, k)
                            : mn         ? wgmma_elem_mn(bits, p, r, k)
                                         : wgmma_elem<2>(bits, p, r, k));
    }
    return v;
}
// The operation, for every thread of the warpgroup: d = (((d + p0) + p1) + ... + p15) in
// f32, p_k = A[row][k] * B[col][k] (each operand K-major, or MN-major where op.ta / op.tb
// say so), k ascending (the order of the mma.sync model); for
// kind 2 (tf32, k8) p0..p7 of the operands' tf32 values (tf32_value: the unit's 19 bits),
// and kind 3 the same with A from the threads' registers (wgmma_reg_a_tf32).
GO_DEV void wgmma_perform(const emu::WgmmaOp& op) {
    // The unit reads its shared-memory operands at some time between the issue and the
    // wait: operands that changed in between (a copy landing late, a refill of a stage still
    // being read) are a race, whatever the model would compute.
    if (wgmma_operands(op) != op.seen) {
        std::fprintf(stderr, "wgmma: an operand in shared memory changed between the commit "
                     "of its group and the wait (A %p, B %p): a race\n", (const void*)op.ap,
                     (const void*)op.bp);
        std::abort();
    }
    for (int tid = 0; tid < 128; ++tid) {
        float* d = op.acc[tid];
        if (!d) {
            std::fprintf(stderr, "wgmma: thread %d of the warpgroup never issued an operation\n",
                         tid);
            std::abort();
        }
        const int w = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
        for (int i = 0; i < 8; ++i)
            for (int e = 0; e < 4; ++e) {
                const int row = 16 * w + g + (e >= 2 ? 8 : 0), col = 8 * i + 2 * t + e % 2;
                float acc = d[4 * i + e];
                if (op.kind == 2 || op.kind == 3) {
                    for (int k = 0; k < 8; ++k)
                        acc += tf32_value(op.kind == 3 ? wgmma_reg_a_tf32(op, row, k)
                                                       : wgmma_elem<4>(op.abits, op.ap, row, k)) *
                               tf32_value(wgmma_elem<4>(op.bbits, op.bp, col, k));
                } else {
                    for (int k = 0; k < 16; ++k) {
                        const uint16_t a = op.ta ? wgmma_elem_mn(op.abits, op.ap, row, k)
                                                 : (uint16_t)wgmma_elem<2>(op.abits, op.ap, row, k);
                        const uint16_t b = op.tb ? wgmma_elem_mn(op.bbits, op.bp, col, k)
                                                 : (uint16_t)wgmma_elem<2>(op.bbits, op.bp, col, k);
                        acc += op.kind ? to_f(GoMmaBf16(), a) * to_f(GoMmaBf16(), b)
                                       : to_f(GoMmaF16(), a) * to_f(GoMmaF16(), b);
                    }
                }
                d[4 * i + e] = acc;
            }
    }
}
GO_DEV emu::WarpGroup& this_warpgroup() {
    if (!emu::g_warpgroups || emu::t_linear / 128 >= emu::g_warpgroups->size()) {
        std::fprintf(stderr, "wgmma: thread %u is in no whole warpgroup\n", emu::t_linear);
        std::abort();
    }
    return (*emu::g_warpgroups)[emu::t_linear / 128];
}
// The open group's next operation of this thread: the first of the warpgroup to issue it
// records `want`; each thread must issue the same, once (its accumulators not yet recorded).
GO_DEV emu::WgmmaOp& wgmma_issue_op(const emu::WgmmaOp& want) {
    emu::WarpGroup& wg = this_warpgroup();
    const unsigned idx = emu::t_wg_issued++;
    if (wg.open.size() <= idx) wg.open.push_back(want);
    emu::WgmmaOp& op = wg.open[idx];
    if (op.kind != want.kind || op.ta != want.ta || op.tb != want.tb || op.abits != want.abits ||
        op.bbits != want.bbits || op.ap != want.ap || op.bp != want.bp ||
        op.acc[emu::t_linear % 128]) {
        std::fprintf(stderr, "wgmma: thread %u issued an operation its warpgroup did not\n",
                     emu::t_linear);
        std::abort();
    }
    return op;
}
GO_DEV void wgmma_issue(int kind, int ta, int tb, float* d, const GoWgmmaDesc& a,
                        const GoWgmmaDesc& b) {
    wgmma_check_desc(a, ta != 0);
    wgmma_check_desc(b, tb != 0);
    wgmma_issue_op({kind, ta, tb, a.bits, b.bits, a.p, b.p, {}, {}, {}}).acc[emu::t_linear % 128] = d;
}
// The register-source form (kind 3, tf32): A's four registers of this thread as they are at
// the issue (the hardware reads them later; that they stay unchanged until the wait is
// ptxas's to check, which serializes the wgmma otherwise), B through its descriptor.
GO_DEV void wgmma_issue_rs(int kind, float* d, const uint32_t a[4], const GoWgmmaDesc& b) {
    wgmma_check_desc(b, false);
    emu::WgmmaOp& op = wgmma_issue_op({kind, 0, 0, 0, b.bits, nullptr, b.p, {}, {}, {}});
    const unsigned tid = emu::t_linear % 128;
    op.acc[tid] = d;
    for (int r = 0; r < 4; ++r) op.ar[tid][r] = a[r];
}
GO_DEV void wgmma_commit() {
    emu::WarpGroup& wg = this_warpgroup();
    wg.bar->arrive_and_wait();  // every thread's operations are in the open group
    if (emu::t_linear % 128 == 0) {
        for (emu::WgmmaOp& op : wg.open) op.seen = wgmma_operands(op);
        wg.groups.push_back(std::move(wg.open));
        wg.open.clear();
    }
    emu::t_wg_issued = 0;
    wg.bar->arrive_and_wait();
}
GO_DEV void wgmma_wait(int pending) {
    emu::WarpGroup& wg = this_warpgroup();
    while ((int)wg.groups.size() > pending) {
        for (const emu::WgmmaOp& op : wg.groups.front()) wgmma_perform(op);
        wg.groups.pop_front();
    }
}
}  // namespace emu_mma
GO_DEV void go_wgmma_fence() {}
GO_DEV void go_wgmma_commit() { emu_mma::wgmma_commit(); }
template <int N> GO_DEV void go_wgmma_wait() { emu_mma::wgmma_wait(N); }
GO_DEV void go_fence_proxy_async_smem() {}
template <int ID> GO_DEV void go_warpgroup_sync() {
    static_assert(ID >= 1 && ID < 16, "a named barrier other than __syncthreads' 0");
    emu_mma::this_warpgroup().bar->arrive_and_wait();
}
template <int TB, int TA = 0>
GO_DEV void go_wgmma_m64n64k16(GoMmaF16, float d[32], GoWgmmaDesc a, GoWgmmaDesc b) {
    emu_mma::wgmma_issue(0, TA, TB, d, a, b);
}
template <int TB, int TA = 0>
GO_DEV void go_wgmma_m64n64k16(GoMmaBf16, float d[32], GoWgmmaDesc a, GoWgmmaDesc b) {
    emu_mma::wgmma_issue(1, TA, TB, d, a, b);
}
GO_DEV void go_wgmma_m64n64k8_tf32(float d[32], GoWgmmaDesc a, GoWgmmaDesc b) {
    emu_mma::wgmma_issue(2, 0, 0, d, a, b);
}
GO_DEV void go_wgmma_m64n64k8_tf32_rs(float d[32], const uint32_t a[4], GoWgmmaDesc b) {
    emu_mma::wgmma_issue_rs(3, d, a, b);
}
#endif  // __CUDA_ARCH__
// The descriptor of the operand `bytes` further on (a multiple of 16). The start address
// field is bits 0-13 (address / 16; shared addresses stay below 2^18), so the sum never
// carries out of the low word: a 32-bit add, the high word (offset and mode) kept.
GO_DEV GoWgmmaDesc go_wgmma_desc_add(GoWgmmaDesc d, int bytes) {
#if defined(__CUDA_ARCH__)
    return (d & 0xFFFFFFFF00000000ull) | (uint32_t)((uint32_t)d + (uint32_t)(bytes >> 4));
#else
    return {d.bits + (uint64_t)(bytes >> 4), d.p + bytes};
#endif
}
#endif  // GO_HAS_WGMMA

#endif  // GO_HAS_TC

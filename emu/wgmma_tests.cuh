// The wgmma model's test kernels (one warpgroup each), shared by the emulator (emu/mma_tests.cuh,
// tests/emulated_kernels.rs's emulated_wgmma_model) and the hardware probe (emu/wgmma_probe.cu,
// tests/cuda_ops.rs's wgmma_model_on_hardware), so the emulator's model of descriptors,
// swizzle and fragments is checked against an H100/H200 with the very same kernels. Race
// free on hardware: each thread stores, then fence.proxy.async and a barrier before the
// wgmma.
#pragma once

#include "../kernels/mma.cuh"

#if GO_HAS_WGMMA
// emu_wgmma_test_<f16|bf16>, one warpgroup (128 threads): D (64x64 f32, row-major) = A * B +
// C, A 64x16 b16 row-major, B given as [n][k] (64x16), C 64x64 f32 row-major, through one
// go_wgmma_m64n64k16 (k 0-15) or two (k 0-15 from the first half of each 64-byte row,
// then 16-31 from the second, with A and B of 64x32; p.k32) on operands staged in the
// 64-byte swizzle the conv kernel uses: B K-major, or with bit 0 of p.bmn N-major as the
// forward's (element (n, k) in row (n / 32) * 32 + k of 64 bytes, chunk (n % 32) / 8
// swizzled; the 32-n columns 2048 bytes apart, the second k16 1024 bytes on); A K-major, or
// with bit 1 of p.bmn M-major in that layout (the filter gradient's, imm-trans-a), or with
// bit 2 K-major without swizzle as the halo tile reads it (go_wgmma_desc_interleave: element
// (r, k) at byte (k / 8) * EMU_WGMMA_LBO + (r + EMU_WGMMA_ROW0) * 16 + (k % 8) * 2, the
// operand starting at row EMU_WGMMA_ROW0 of its planes, inside a group of 8 rows; the second
// k16 two planes on).
struct GoEmuWgmmaTestParams {
    uint64_t a, b, c, d;
    int32_t k32;
    int32_t bmn;
};
// The mode-0 A (bit 2): planes of 72 rows, the operand from row 3.
constexpr int EMU_WGMMA_ROW0 = 3, EMU_WGMMA_LBO = 72 * 16;
// The element offset of (mn, k) in an MN-major operand staged as above.
GO_DEV int emu_wgmma_mn_at(int mn, int k) {
    const int row = (mn / 32) * 32 + k;
    return row * 32 + ((((mn % 32) / 8) ^ ((row >> 1) & 3)) * 8) + mn % 8;
}

// The row-major index in the 64 x 64 D of accumulator j of thread tid (kernels/mma.cuh: per n8
// chunk i = j / 4, rows 16w + g and + 8, columns 8i + 2t and + 1).
GO_DEV int emu_wgmma_d_at(int tid, int j) {
    const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4, i = j / 4, e = j % 4;
    return (16 * w + g + (e >= 2 ? 8 : 0)) * 64 + 8 * i + 2 * t + e % 2;
}

template <typename T>
GO_DEV void emu_wgmma_test_body(GoEmuWgmmaTestParams p) {
    typedef typename GoMmaKind<T>::type Kind;
    __shared__ __align__(512) uint16_t As[64 * 32];
    __shared__ __align__(512) uint16_t Bs[64 * 32];
    __shared__ __align__(512) uint16_t Ai[4 * EMU_WGMMA_LBO / 2];
    const int K = p.k32 ? 32 : 16;
    const uint16_t* a = reinterpret_cast<const uint16_t*>(p.a);
    const uint16_t* b = reinterpret_cast<const uint16_t*>(p.b);
    const float* c = reinterpret_cast<const float*>(p.c);
    float* dout = reinterpret_cast<float*>(p.d);
    const int tid = threadIdx.x;
    // Element k of row r at chunk (k / 8) ^ ((r >> 1) & 3) of the row's 64 bytes.
    const bool amn = (p.bmn & 2) != 0, bmn = (p.bmn & 1) != 0, ai = (p.bmn & 4) != 0;
    for (int i = tid; i < 64 * K; i += 128) {
        const int r = i / K, k = i % K;
        const int at = r * 32 + (((k / 8) ^ ((r >> 1) & 3)) * 8) + k % 8;
        if (ai) Ai[(k / 8) * EMU_WGMMA_LBO / 2 + (r + EMU_WGMMA_ROW0) * 8 + k % 8] = a[i];
        else As[amn ? emu_wgmma_mn_at(r, k) : at] = a[i];
        Bs[bmn ? emu_wgmma_mn_at(r, k) : at] = b[i];
    }
    go_fence_proxy_async_smem();
    __syncthreads();
    float d[32];
    for (int j = 0; j < 32; ++j) d[j] = c[emu_wgmma_d_at(tid, j)];
    const GoWgmmaDesc da = ai    ? go_wgmma_desc_interleave(Ai + EMU_WGMMA_ROW0 * 8, EMU_WGMMA_LBO)
                           : amn ? go_wgmma_desc_sw64_mn(As, 2048)
                                 : go_wgmma_desc_sw64(As);
    const GoWgmmaDesc db = bmn ? go_wgmma_desc_sw64_mn(Bs, 2048) : go_wgmma_desc_sw64(Bs);
    const int astep = ai ? 2 * EMU_WGMMA_LBO : amn ? 1024 : 32, bstep = bmn ? 1024 : 32;
    go_wgmma_fence();
    // The transposes are immediates: one call site per combination.
    for (int ks = 0; ks < K / 16; ++ks) {
        const GoWgmmaDesc a1 = go_wgmma_desc_add(da, astep * ks);
        const GoWgmmaDesc b1 = go_wgmma_desc_add(db, bstep * ks);
        if (amn && bmn) go_wgmma_m64n64k16<1, 1>(Kind(), d, a1, b1);
        else if (amn) go_wgmma_m64n64k16<0, 1>(Kind(), d, a1, b1);
        else if (bmn) go_wgmma_m64n64k16<1, 0>(Kind(), d, a1, b1);
        else go_wgmma_m64n64k16<0, 0>(Kind(), d, a1, b1);
    }
    go_wgmma_commit();
    go_wgmma_wait<0>();
    for (int j = 0; j < 32; ++j) dout[emu_wgmma_d_at(tid, j)] = d[j];
}
// emu_wgmma_test_tf32_body: the same with f32 operands (tf32 values: the caller rounds them)
// through go_wgmma_m64n64k8_tf32, K-major only: A 64x8 and B [n][k] 64x8 (one wgmma), or
// 64x16 (p.k32: two, the second from 32 bytes into each row); element k of row r at chunk
// (k / 4) ^ ((r >> 1) & 3) of the row's 64 bytes, as the f32 conv tile stages them. With
// bit 2 of p.bmn, A from registers instead (go_wgmma_m64n64k8_tf32_rs): each thread reads its
// fragments of both k8 steps from the staged A before the first wgmma, so that they stay
// unchanged until the wait.
GO_DEV void emu_wgmma_test_tf32_body(GoEmuWgmmaTestParams p) {
    __shared__ __align__(512) float As[64 * 16];
    __shared__ __align__(512) float Bs[64 * 16];
    const int K = p.k32 ? 16 : 8;
    const float* a = reinterpret_cast<const float*>(p.a);
    const float* b = reinterpret_cast<const float*>(p.b);
    const float* c = reinterpret_cast<const float*>(p.c);
    float* dout = reinterpret_cast<float*>(p.d);
    const int tid = threadIdx.x;
    for (int i = tid; i < 64 * K; i += 128) {
        const int r = i / K, k = i % K;
        const int at = r * 16 + (((k / 4) ^ ((r >> 1) & 3)) * 4) + k % 4;
        As[at] = a[i];
        Bs[at] = b[i];
    }
    go_fence_proxy_async_smem();
    __syncthreads();
    float d[32];
    for (int j = 0; j < 32; ++j) d[j] = c[emu_wgmma_d_at(tid, j)];
    const GoWgmmaDesc da = go_wgmma_desc_sw64(As), db = go_wgmma_desc_sw64(Bs);
    const bool areg = (p.bmn & 4) != 0;
    uint32_t af[2][4];
    const int w = tid / 32, g = (tid % 32) / 4, t = tid % 4;
#pragma unroll
    for (int ks = 0; ks < 2; ++ks)
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int row = 16 * w + g + (r & 1) * 8, k = 8 * ks + t + (r >> 1) * 4;
            const float v = As[row * 16 + (((k / 4) ^ ((row >> 1) & 3)) * 4) + k % 4];
            af[ks][r] = areg && ks < K / 8 ? go_f32_as_u32(v) : 0u;
        }
    go_wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 2; ++ks) {
        if (ks >= K / 8) break;
        if (areg) go_wgmma_m64n64k8_tf32_rs(d, af[ks], go_wgmma_desc_add(db, 32 * ks));
        else go_wgmma_m64n64k8_tf32(d, go_wgmma_desc_add(da, 32 * ks), go_wgmma_desc_add(db, 32 * ks));
    }
    go_wgmma_commit();
    go_wgmma_wait<0>();
    for (int j = 0; j < 32; ++j) dout[emu_wgmma_d_at(tid, j)] = d[j];
}

// emu_wgmma_pipe_test_f16: the warp-specialized pipeline's skeleton (mbarriers between a
// producer warp and a consumer warpgroup). 160 threads: warps 0-3 the consumer warpgroup,
// warp 4 the producer. D (64x64 f32) = A * B + C, A 64 x 32nk f16 row-major, B [n][k] 64 x
// 32nk (nk = p.nk k32 steps), through GO_EMU_PIPE_STAGES stages in the 64-byte swizzle: the
// producer's lanes copy step ks into stage ks % STAGES by cp.async and arrive on its full
// barrier through cp.async.mbarrier.arrive.noinc (32 arrivals a phase); the consumer waits
// for the step's phase of full, issues its two k16 wgmma as one group, and once the group
// before it has completed (wait_group 1) releases that group's stage: one arrival per warp
// on its empty barrier (4 a phase), which the producer waits for before it refills the
// stage. nk > STAGES exercises the phases' parity on both sides. Every wait is bounded: on
// hardware a wait that never completes (a wrong parity or count) ends the kernel with D
// all NaN instead of hanging it. p.flags, for the emulator's mutation runs only (each is a
// race on hardware): bit 0, the producer skips the empty wait; bit 1, the consumer skips
// the full wait; bit 2, the consumer releases each stage as soon as it has committed the
// stage's group instead of after the group has completed.
#define GO_EMU_PIPE_STAGES 3
struct GoEmuWgmmaPipeTestParams {
    uint64_t a, b, c, d;
    int32_t nk;
    int32_t flags;
};
// go_mbar_wait with a bound (2^22 tries); false if the phase did not complete.
GO_DEV bool emu_pipe_wait(uint64_t* bar, unsigned parity) {
    for (int i = 0; i < (1 << 22); ++i)
        if (go_mbar_try_wait(bar, parity)) return true;
    return false;
}
GO_DEV void emu_wgmma_pipe_test_body(GoEmuWgmmaPipeTestParams p) {
    constexpr int S = GO_EMU_PIPE_STAGES;
    __shared__ __align__(512) uint16_t As[S][64 * 32];
    __shared__ __align__(512) uint16_t Bs[S][64 * 32];
    __shared__ __align__(8) uint64_t full[S], empty[S];
    const int tid = threadIdx.x, K = 32 * p.nk;
    const uint16_t* a = reinterpret_cast<const uint16_t*>(p.a);
    const uint16_t* b = reinterpret_cast<const uint16_t*>(p.b);
    const float* c = reinterpret_cast<const float*>(p.c);
    float* dout = reinterpret_cast<float*>(p.d);
    if (tid == 0) {
        for (int s = 0; s < S; ++s) {
            go_mbar_init(&full[s], 32);
            go_mbar_init(&empty[s], 4);
        }
    }
    __syncthreads();
    if (tid >= 128) {  // the producer warp
        for (int ks = 0; ks < p.nk; ++ks) {
            const int s = ks % S;
            // The stage's previous step (ks - S) released: its (ks / S - 1)-th phase.
            if (ks >= S && (p.flags & 1) == 0 && !emu_pipe_wait(&empty[s], (ks / S - 1) & 1))
                break;
            // 16-byte chunk i: row i / 4, chunk i % 4 of the step's 64 bytes, swizzled.
            for (int i = tid - 128; i < 64 * 4; i += 32) {
                const int r = i / 4, ch = i % 4;
                const int at = r * 32 + ((ch ^ ((r >> 1) & 3)) * 8);
                go_cp_async_16(&As[s][at], a + r * K + ks * 32 + ch * 8, 16);
                go_cp_async_16(&Bs[s][at], b + r * K + ks * 32 + ch * 8, 16);
            }
            go_cp_async_mbar_arrive_noinc(&full[s]);
        }
        go_cp_async_wait<0>();
        return;
    }
    float d[32];
    for (int j = 0; j < 32; ++j) d[j] = c[emu_wgmma_d_at(tid, j)];
    bool ok = true;
    for (int ks = 0; ks < p.nk && ok; ++ks) {
        const int s = ks % S;
        if ((p.flags & 2) == 0 && !emu_pipe_wait(&full[s], (ks / S) & 1)) {
            ok = false;  // (the producer gave up, or a count or parity is wrong)
            break;
        }
        // The copies, visible to this thread through the barrier, visible to its wgmma.
        go_fence_proxy_async_smem();
        go_wgmma_fence();
        const GoWgmmaDesc da = go_wgmma_desc_sw64(As[s]), db = go_wgmma_desc_sw64(Bs[s]);
        go_wgmma_m64n64k16<0, 0>(GoMmaF16(), d, da, db);
        go_wgmma_m64n64k16<0, 0>(GoMmaF16(), d, go_wgmma_desc_add(da, 32),
                                 go_wgmma_desc_add(db, 32));
        go_wgmma_commit();
        if ((p.flags & 4) != 0) {
            if (tid % 32 == 0) go_mbar_arrive(&empty[s]);
            go_wgmma_wait<1>();
            continue;
        }
        go_wgmma_wait<1>();
        if (ks >= 1 && tid % 32 == 0) go_mbar_arrive(&empty[(ks - 1) % S]);
    }
    go_wgmma_wait<0>();
    for (int j = 0; j < 32; ++j)
        dout[emu_wgmma_d_at(tid, j)] = ok ? d[j] : go_u32_as_f32(0x7fc00000u);
}
#endif  // GO_HAS_WGMMA

// Emulator-only test kernels for the warp primitives of kernels/mma.cuh (driven by
// tests/emulated_kernels.rs). Not part of any PTX image: on hardware the early reads of
// emu_cp_async_test would be data races; in the model they show that a copy's
// destination is undefined (poisoned) until its wait_group.
#pragma once

#include "../kernels/mma.cuh"

// emu_mma_test_<f16|bf16>, one warp: D (16x16 f32, row-major) = A * B + C, A 16x16 b16
// row-major; B given as [n][k] (trans = 0, read with ldmatrix) or [k][n] (trans = 1,
// ldmatrix.trans); C 16x16 f32 row-major. Two n8 fragments, one mma each.
struct GoEmuMmaTestParams {
    uint64_t a, b, c, d;
    int32_t trans;
    int32_t pad;
};

template <typename T>
void emu_mma_test_body(GoEmuMmaTestParams p) {
    typedef typename GoMmaKind<T>::type Kind;
    __shared__ __align__(16) uint16_t As[16][24];
    __shared__ __align__(16) uint16_t Bs[16][24];
    const uint16_t* a = reinterpret_cast<const uint16_t*>(p.a);
    const uint16_t* b = reinterpret_cast<const uint16_t*>(p.b);
    const float* c = reinterpret_cast<const float*>(p.c);
    float* d = reinterpret_cast<float*>(p.d);
    const int lane = threadIdx.x;
    for (int i = lane; i < 256; i += 32) {
        As[i / 16][i % 16] = a[i];
        Bs[i / 16][i % 16] = b[i];
    }
    __syncwarp();
    uint32_t af[4], bf[4];
    go_ldmatrix_x4(af, &As[lane % 16][(lane / 16) * 8]);
    if (p.trans) go_ldmatrix_x4_trans(bf, &Bs[lane % 8 + ((lane / 8) % 2) * 8][(lane / 16) * 8]);
    else go_ldmatrix_x4(bf, &Bs[lane % 8 + (lane / 16) * 8][((lane / 8) % 2) * 8]);
    const int g = lane / 4, t = lane % 4;
    for (int nf = 0; nf < 2; ++nf) {
        float acc[4];
        for (int e = 0; e < 4; ++e) acc[e] = c[(g + (e >= 2 ? 8 : 0)) * 16 + nf * 8 + 2 * t + e % 2];
        const uint32_t bb[2] = {bf[2 * nf], bf[2 * nf + 1]};
        go_mma_m16n8k16(Kind(), acc, af, bb, acc);
        for (int e = 0; e < 4; ++e) d[(g + (e >= 2 ? 8 : 0)) * 16 + nf * 8 + 2 * t + e % 2] = acc[e];
    }
}
void emu_mma_test_f16(GoEmuMmaTestParams p) { emu_mma_test_body<__half>(p); }
void emu_mma_test_bf16(GoEmuMmaTestParams p) { emu_mma_test_body<__nv_bfloat16>(p); }

// emu_cp_async_test, one warp: lane l copies src[8l..8l+3] (group 1) and src[8l+4..8l+7]
// (group 2; lanes with l % 4 == 3 zero-fill) into shared slots that hold 0xDEADBEEF, and
// records both slots (4 u32 each) at three points into out[24l..24l+23]: right after
// issuing, after wait_group 1, after wait_group 0. (Until its wait a copy's destination
// holds the emulator's 0xFF poison: emu/cuda_emu.h.)
struct GoEmuCpAsyncTestParams {
    uint64_t src, out;
};

void emu_cp_async_test(GoEmuCpAsyncTestParams p) {
    __shared__ __align__(16) uint32_t s1[32][4];
    __shared__ __align__(16) uint32_t s2[32][4];
    const uint32_t* src = reinterpret_cast<const uint32_t*>(p.src);
    uint32_t* out = reinterpret_cast<uint32_t*>(p.out);
    const int l = threadIdx.x;
    for (int i = 0; i < 4; ++i) s1[l][i] = s2[l][i] = 0xDEADBEEFu;
    go_cp_async_16(s1[l], src + 8 * l, 16);
    go_cp_async_commit();
    go_cp_async_16(s2[l], l % 4 == 3 ? src : src + 8 * l + 4, l % 4 == 3 ? 0 : 16);
    go_cp_async_commit();
    uint32_t* o = out + 24 * l;
    for (int i = 0; i < 4; ++i) { o[i] = s1[l][i]; o[4 + i] = s2[l][i]; }
    go_cp_async_wait<1>();
    for (int i = 0; i < 4; ++i) { o[8 + i] = s1[l][i]; o[12 + i] = s2[l][i]; }
    go_cp_async_wait<0>();
    for (int i = 0; i < 4; ++i) { o[16 + i] = s1[l][i]; o[20 + i] = s2[l][i]; }
}

// emu_mma_test_tf32, one warp: D (16x8 f32) = tf32(A) * tf32(B) + C through
// go_cvt_tf32 and mma m16n8k8; A 16x8 f32 row-major, B 8x8 given as [n][k], C, D 16x8.
void emu_mma_test_tf32(GoEmuMmaTestParams p) {
    const float* a = reinterpret_cast<const float*>(p.a);
    const float* b = reinterpret_cast<const float*>(p.b);
    const float* c = reinterpret_cast<const float*>(p.c);
    float* d = reinterpret_cast<float*>(p.d);
    const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
    uint32_t af[4], bf[2];
    for (int e = 0; e < 4; ++e) af[e] = go_cvt_tf32(a[(g + (e % 2) * 8) * 8 + t + (e / 2) * 4]);
    for (int e = 0; e < 2; ++e) bf[e] = go_cvt_tf32(b[g * 8 + t + e * 4]);
    float acc[4];
    for (int e = 0; e < 4; ++e) acc[e] = c[(g + (e >= 2 ? 8 : 0)) * 8 + 2 * t + e % 2];
    go_mma_m16n8k8_tf32(acc, af, bf, acc);
    for (int e = 0; e < 4; ++e) d[(g + (e >= 2 ? 8 : 0)) * 8 + 2 * t + e % 2] = acc[e];
}

// emu_mma_test_f64, one warp: D (8x8) = A (8x4, row-major) * B (4x8, given as [n][k]) + C
// through mma m8n8k4.
void emu_mma_test_f64(GoEmuMmaTestParams p) {
    const double* a = reinterpret_cast<const double*>(p.a);
    const double* b = reinterpret_cast<const double*>(p.b);
    const double* c = reinterpret_cast<const double*>(p.c);
    double* d = reinterpret_cast<double*>(p.d);
    const int lane = threadIdx.x, g = lane / 4, t = lane % 4;
    double acc[2] = {c[g * 8 + 2 * t], c[g * 8 + 2 * t + 1]};
    go_mma_m8n8k4_f64(acc, a[g * 4 + t], b[g * 4 + t], acc);
    d[g * 8 + 2 * t] = acc[0];
    d[g * 8 + 2 * t + 1] = acc[1];
}

#include "wgmma_tests.cuh"

void emu_wgmma_test_f16(GoEmuWgmmaTestParams p) { emu_wgmma_test_body<__half>(p); }
void emu_wgmma_test_bf16(GoEmuWgmmaTestParams p) { emu_wgmma_test_body<__nv_bfloat16>(p); }
void emu_wgmma_test_tf32(GoEmuWgmmaTestParams p) { emu_wgmma_test_tf32_body(p); }
void emu_wgmma_pipe_test_f16(GoEmuWgmmaPipeTestParams p) { emu_wgmma_pipe_test_body(p); }

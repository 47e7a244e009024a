// Shared index math and dtype helpers for the gradops kernels.
//
// Compiled two ways: by nvcc to PTX (build.rs), and as host C++ by the emulator
// (emu/), which includes emu/cuda_emu.h first to supply threadIdx/blockIdx/blockDim/
// gridDim, __syncthreads and __shared__. Anything device-only goes behind a go_*
// wrapper here with a scalar host version.
#pragma once

#include <stdint.h>
#include <cuda_fp16.h>
// bf16: the conversions have software paths below sm_80, so every image (compute_75 too)
// holds the bf16 kernels; host C++ (the emulator) gets CPU versions.
#include <cuda_bf16.h>
#include "params.h"

#ifdef __CUDACC__
#define GO_DEV __device__ __forceinline__
#define GO_LAUNCH_BOUNDS __launch_bounds__(GO_BLOCK_THREADS, 1)
// Memory-bound kernels: at least this many blocks resident per SM (caps registers at 64
// for 256 threads), so enough loads are in flight to cover the memory latency.
#define GO_LAUNCH_BOUNDS_STREAMING __launch_bounds__(GO_BLOCK_THREADS, 4)
// Compute-bound tiled kernels (the FFMA conv2d_backprop_input): two blocks resident per SM
// (at most 128 registers a thread), so one block's loads and barriers overlap the other's
// FMAs; tests/ptx_check.rs asserts it without spills on every image.
#define GO_LAUNCH_BOUNDS_TWO_BLOCKS __launch_bounds__(GO_BLOCK_THREADS, 2)
#else
#define GO_DEV inline
#define GO_LAUNCH_BOUNDS
#define GO_LAUNCH_BOUNDS_STREAMING
#define GO_LAUNCH_BOUNDS_TWO_BLOCKS
#endif

typedef long long go_i64;

// ---- dtype helpers ---------------------------------------------------------------
// Acc: float for f16, bf16 and f32, double for f64. Loads widen once, stores round once.
template <typename T> struct GoAcc;
template <> struct GoAcc<__half> { typedef float type; };
template <> struct GoAcc<__nv_bfloat16> { typedef float type; };
template <> struct GoAcc<float> { typedef float type; };
template <> struct GoAcc<double> { typedef double type; };

GO_DEV float go_to_acc(__half v) { return __half2float(v); }
GO_DEV float go_to_acc(__nv_bfloat16 v) { return __bfloat162float(v); }
GO_DEV float go_to_acc(float v) { return v; }
GO_DEV double go_to_acc(double v) { return v; }

template <typename T> GO_DEV T go_from_acc(typename GoAcc<T>::type v);
template <> GO_DEV __half go_from_acc<__half>(float v) { return __float2half_rn(v); }
template <> GO_DEV __nv_bfloat16 go_from_acc<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> GO_DEV float go_from_acc<float>(float v) { return v; }
template <> GO_DEV double go_from_acc<double>(double v) { return v; }

// Lowest finite value (TF's max-pool initial value for a window with no cell).
template <typename T> GO_DEV T go_lowest();
template <> GO_DEV __half go_lowest<__half>() { return __ushort_as_half((unsigned short)0xFBFFu); }
template <> GO_DEV __nv_bfloat16 go_lowest<__nv_bfloat16>() {
    return __ushort_as_bfloat16((unsigned short)0xFF7Fu);
}
template <> GO_DEV float go_lowest<float>() { return -3.402823466e+38f; }
template <> GO_DEV double go_lowest<double>() { return -1.7976931348623157e+308; }

// Read-only cached load.
template <typename T> GO_DEV T go_ldg(const T* p) {
#ifdef __CUDACC__
    return __ldg(p);
#else
    return *p;
#endif
}
#ifdef __CUDACC__
template <> GO_DEV __half go_ldg<__half>(const __half* p) { return __ldg(p); }
template <> GO_DEV __nv_bfloat16 go_ldg<__nv_bfloat16>(const __nv_bfloat16* p) { return __ldg(p); }
#endif

// ---- thread/grid geometry (64-bit; grid-stride loops never rely on grid size) -------
GO_DEV go_i64 go_tid_x() { return (go_i64)blockIdx.x * blockDim.x + threadIdx.x; }
GO_DEV go_i64 go_stride_x() { return (go_i64)gridDim.x * blockDim.x; }

// Flat index of element (n, c, h, w) of a [N, C, H, W] tensor in the given layout.
GO_DEV go_i64 go_index(int layout, go_i64 n, go_i64 c, go_i64 h, go_i64 w,
                       go_i64 C, go_i64 H, go_i64 W) {
    return layout == GO_LAYOUT_NCHW ? ((n * C + c) * H + h) * W + w
                                    : ((n * H + h) * W + w) * C + c;
}

// Decompose a flat output index in the layout into (n, c, h, w).
GO_DEV void go_unflatten(int layout, go_i64 i, go_i64 C, go_i64 H, go_i64 W,
                         go_i64* n, go_i64* c, go_i64* h, go_i64* w) {
    if (layout == GO_LAYOUT_NCHW) {
        *w = i % W; i /= W;
        *h = i % H; i /= H;
        *c = i % C; *n = i / C;
    } else {
        *c = i % C; i /= C;
        *w = i % W; i /= W;
        *h = i % H; *n = i / H;
    }
}

// Row-blocked launches: a block's threads split into gx lanes across a row's inner run
// (gx the next power of two >= inner, at most the block) and blockDim.x / gx rows, so
// short rows do not leave threads idle (launch::row_blocked on the host).
GO_DEV int go_row_lanes(int inner) {
    int gx = 1;
    while (gx < inner && gx < (int)blockDim.x) gx <<= 1;
    return gx;
}

GO_DEV go_i64 go_min(go_i64 a, go_i64 b) { return a < b ? a : b; }
GO_DEV go_i64 go_max(go_i64 a, go_i64 b) { return a > b ? a : b; }
// floor(a / b) for b > 0, any sign of a.
GO_DEV go_i64 go_floordiv(go_i64 a, go_i64 b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }
// a mod b in [0, b) for b > 0.
GO_DEV go_i64 go_mod(go_i64 a, go_i64 b) { go_i64 r = a % b; return r < 0 ? r + b : r; }

// Instantiate `extern "C" __global__ void NAME_<suffix>(PARAMS p)` for every element type
// (GO_DTYPES: suffix and C++ type), each forwarding to BODY<T>(p). A new op is one
// GO_INSTANTIATE line; a new element type is one GO_DTYPES entry (and the emulator's list).
#define GO_DTYPES(X, NAME, PARAMS, BODY, BOUNDS) \
    X(NAME, PARAMS, BODY, BOUNDS, f16, __half)   \
    X(NAME, PARAMS, BODY, BOUNDS, bf16, __nv_bfloat16) \
    X(NAME, PARAMS, BODY, BOUNDS, f32, float)    \
    X(NAME, PARAMS, BODY, BOUNDS, f64, double)
// A compute_90a image (build.rs: Hopper's architecture-specific kernels, loaded beside the
// portable compute_90 image) holds only the kernels instantiated with
// GO_INSTANTIATE_SM90A_ONE; every other instantiation is left out of it.
#define GO_INSTANTIATE_SM90A_ONE(NAME, PARAMS, BODY, BOUNDS, SUFFIX, T) \
    extern "C" __global__ void BOUNDS NAME##_##SUFFIX(PARAMS p) { BODY<T>(p); }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define GO_INSTANTIATE_ONE(NAME, PARAMS, BODY, BOUNDS, SUFFIX, T)
#else
#define GO_INSTANTIATE_ONE(NAME, PARAMS, BODY, BOUNDS, SUFFIX, T) \
    GO_INSTANTIATE_SM90A_ONE(NAME, PARAMS, BODY, BOUNDS, SUFFIX, T)
#endif
#define GO_INSTANTIATE(NAME, PARAMS, BODY) \
    GO_DTYPES(GO_INSTANTIATE_ONE, NAME, PARAMS, BODY, GO_LAUNCH_BOUNDS)

// The same, for the memory-bound tiled kernels (GO_LAUNCH_BOUNDS_STREAMING).
#define GO_INSTANTIATE_STREAMING(NAME, PARAMS, BODY) \
    GO_DTYPES(GO_INSTANTIATE_ONE, NAME, PARAMS, BODY, GO_LAUNCH_BOUNDS_STREAMING)

// Host emulation of the CUDA execution model, enough to run gradops' kernels as plain
// C++ (g++ -std=c++20 -fsanitize=address,undefined) on the CPU.
//
// Include this before the kernel sources. It supplies threadIdx/blockIdx/blockDim/
// gridDim, __syncthreads (a real barrier across the block's threads, which run as real
// OS threads), __shared__ (static storage: blocks run one after another, so all threads
// of the running block share it), and __launch_bounds__. cuda_fp16.h and cuda_bf16.h
// themselves compile as host C++ and supply __half and __nv_bfloat16 with CPU arithmetic
// (round-to-nearest-even conversions, as on the device).
#pragma once

#include <barrier>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>
#include <vector_types.h>

#ifdef __CUDACC__
#error "cuda_emu.h is for host builds only"
#endif

// Declared by the CUDA headers only under nvcc.
extern thread_local uint3 threadIdx;
extern thread_local uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

#undef __shared__
#define __shared__ static
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

namespace emu {
extern std::barrier<>* g_block_barrier;
}

inline void __syncthreads() { emu::g_block_barrier->arrive_and_wait(); }

#ifdef GO_EMU_DEFINE_GLOBALS
thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;
namespace emu {
std::barrier<>* g_block_barrier = nullptr;

// Run kernel(params) over grid x block: one OS thread per thread of a block, the
// blocks one after another in (x, y, z) order; a barrier closes each block so the next
// one starts with all threads done (shared memory is reused across blocks).
template <typename P>
void launch(void (*kernel)(P), dim3 grid, dim3 block, const P& params) {
    gridDim = grid;
    blockDim = block;
    const unsigned nthreads = block.x * block.y * block.z;
    std::barrier<> bar((std::ptrdiff_t)nthreads);
    g_block_barrier = &bar;
    std::vector<std::thread> threads;
    threads.reserve(nthreads);
    for (unsigned t = 0; t < nthreads; ++t) {
        threads.emplace_back([&, t] {
            threadIdx.x = t % block.x;
            threadIdx.y = (t / block.x) % block.y;
            threadIdx.z = t / (block.x * block.y);
            for (unsigned bz = 0; bz < grid.z; ++bz)
                for (unsigned by = 0; by < grid.y; ++by)
                    for (unsigned bx = 0; bx < grid.x; ++bx) {
                        blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
                        kernel(params);
                        bar.arrive_and_wait();
                    }
        });
    }
    for (auto& th : threads) th.join();
    g_block_barrier = nullptr;
}
}  // namespace emu
#endif

// Host emulation of the CUDA execution model, enough to run gradops' kernels as plain
// C++ (g++ -std=c++20 -fsanitize=address,undefined) on the CPU.
//
// Include this before the kernel sources. It supplies threadIdx/blockIdx/blockDim/
// gridDim, __syncthreads (a real barrier across the block's threads, which run as real
// OS threads), __shared__ (static storage: blocks run one after another, so all threads
// of the running block share it), and __launch_bounds__. cuda_fp16.h and cuda_bf16.h
// themselves compile as host C++ and supply __half and __nv_bfloat16 with CPU arithmetic
// (round-to-nearest-even conversions, as on the device).
//
// Warps: the block's threads are cut into warps of 32 (linear thread id / 32; a block
// size that is not a multiple of 32 gets a short last warp). Each warp has its own barrier
// (__syncwarp, and the warp collectives of kernels/mma.cuh) and an exchange buffer through
// which a collective gathers all lanes' operands. cp.async: each thread queues its copies;
// commit closes a group; wait_group(N) performs every group but the newest N, so data is
// in shared memory only after the wait (as the PTX ISA guarantees it, not earlier), and a
// block that ends with copies still queued aborts the run.
// Warpgroups (4 warps, 128 threads: wgmma.mma_async, kernels/mma.cuh): each thread's issue
// records the (uniform) operation and where its accumulators live; commit closes a group
// for the whole warpgroup (a warpgroup barrier); wait_group(N) performs every group of the
// warpgroup but the newest N, reading shared memory then, so accumulators read or shared
// memory overwritten before the wait show up as wrong results; a block that ends with
// operations still pending aborts the run.
#pragma once

#include <barrier>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
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

// Operands of one warp collective: per lane, up to six 32-bit registers or an address.
struct WarpExchange {
    uint32_t u[32][6];
    const void* p[32];
};
struct Warp {
    std::unique_ptr<std::barrier<>> bar;
    WarpExchange x;
};
extern std::vector<Warp>* g_warps;
extern thread_local unsigned t_linear;  // linear thread id in the block

// One wgmma.mma_async as issued: the kind (f16 or bf16 inputs), whether B is N-major
// (imm-trans-b), the shared-memory descriptors' bits and addresses, and each of the
// warpgroup's 128 threads' accumulators.
struct WgmmaOp {
    int kind, tb;
    uint64_t abits, bbits;
    const unsigned char *ap, *bp;
    float* acc[128];
};
struct WarpGroup {
    std::unique_ptr<std::barrier<>> bar;
    std::mutex mu;
    std::vector<WgmmaOp> open;                 // issued, not yet committed
    std::deque<std::vector<WgmmaOp>> groups;   // committed, oldest first
};
extern std::vector<WarpGroup>* g_warpgroups;
extern thread_local unsigned t_wg_issued;  // this thread's operations in the open group

inline int lane_id() { return (int)(t_linear % 32); }
inline Warp& this_warp() { return (*g_warps)[t_linear / 32]; }
inline WarpExchange& warp_exchange() { return this_warp().x; }
inline void warp_barrier() { this_warp().bar->arrive_and_wait(); }

// cp.async model: this thread's queued copies, grouped by commit.
struct AsyncCopy {
    void* dst;
    const void* src;
    int src_bytes;
};
struct AsyncQueue {
    std::vector<AsyncCopy> open;                  // issued, not yet committed
    std::deque<std::vector<AsyncCopy>> groups;    // committed, oldest first
};
extern thread_local AsyncQueue t_async;

inline void cp_async_issue(void* dst, const void* src, int src_bytes) {
    if (reinterpret_cast<uintptr_t>(dst) % 16 || (src_bytes && reinterpret_cast<uintptr_t>(src) % 16)) {
        std::fprintf(stderr, "cp.async: 16-byte copy with a misaligned address (%p <- %p)\n", dst, src);
        std::abort();
    }
    if (src_bytes != 0 && src_bytes != 16) {
        std::fprintf(stderr, "cp.async: src-size %d (the kernels use 0 or 16)\n", src_bytes);
        std::abort();
    }
    t_async.open.push_back({dst, src, src_bytes});
}
inline void cp_async_commit() {
    t_async.groups.push_back(std::move(t_async.open));
    t_async.open.clear();
}
inline void cp_async_wait(int pending) {
    while ((int)t_async.groups.size() > pending) {
        for (const AsyncCopy& c : t_async.groups.front()) {
            // src-size 0: nothing is read, the destination is zero-filled.
            if (c.src_bytes) std::memcpy(c.dst, c.src, 16);
            else std::memset(c.dst, 0, 16);
        }
        t_async.groups.pop_front();
    }
}
}  // namespace emu

inline void __syncthreads() { emu::g_block_barrier->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xFFFFFFFFu) { emu::warp_barrier(); }

#ifdef GO_EMU_DEFINE_GLOBALS
thread_local uint3 threadIdx;
thread_local uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;
namespace emu {
std::barrier<>* g_block_barrier = nullptr;
std::vector<Warp>* g_warps = nullptr;
std::vector<WarpGroup>* g_warpgroups = nullptr;
thread_local unsigned t_linear = 0;
thread_local unsigned t_wg_issued = 0;
thread_local AsyncQueue t_async;

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
    std::vector<Warp> warps((nthreads + 31) / 32);
    for (unsigned w = 0; w < warps.size(); ++w) {
        const unsigned lanes = w + 1 < warps.size() ? 32 : nthreads - 32 * w;
        warps[w].bar = std::make_unique<std::barrier<>>((std::ptrdiff_t)lanes);
    }
    g_warps = &warps;
    // Whole warpgroups only (a block of 32 or 64 threads has none).
    std::vector<WarpGroup> warpgroups(nthreads / 128);
    for (WarpGroup& wg : warpgroups) wg.bar = std::make_unique<std::barrier<>>(128);
    g_warpgroups = &warpgroups;
    std::vector<std::thread> threads;
    threads.reserve(nthreads);
    for (unsigned t = 0; t < nthreads; ++t) {
        threads.emplace_back([&, t] {
            threadIdx.x = t % block.x;
            threadIdx.y = (t / block.x) % block.y;
            threadIdx.z = t / (block.x * block.y);
            t_linear = t;
            for (unsigned bz = 0; bz < grid.z; ++bz)
                for (unsigned by = 0; by < grid.y; ++by)
                    for (unsigned bx = 0; bx < grid.x; ++bx) {
                        blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
                        kernel(params);
                        if (!t_async.open.empty() || !t_async.groups.empty()) {
                            std::fprintf(stderr, "cp.async: thread %u of block (%u,%u,%u) ended "
                                         "with copies never waited for\n", t, bx, by, bz);
                            std::abort();
                        }
                        if (t < 128 * warpgroups.size()) {
                            WarpGroup& wg = warpgroups[t / 128];
                            std::lock_guard<std::mutex> lock(wg.mu);
                            if (!wg.open.empty() || !wg.groups.empty()) {
                                std::fprintf(stderr, "wgmma: thread %u of block (%u,%u,%u) ended "
                                             "with operations never waited for\n", t, bx, by, bz);
                                std::abort();
                            }
                        }
                        bar.arrive_and_wait();
                    }
        });
    }
    for (auto& th : threads) th.join();
    g_block_barrier = nullptr;
    g_warps = nullptr;
    g_warpgroups = nullptr;
}
}  // namespace emu
#endif

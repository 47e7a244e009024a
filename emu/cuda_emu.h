// Host emulation of the CUDA execution model, enough to run gradops' kernels as plain
// C++ (g++ -std=c++20 -fsanitize=address,undefined) on the CPU.
//
// Include this before the kernel sources. It supplies threadIdx/blockIdx/blockDim/
// gridDim, __syncthreads (a real barrier across the block's threads), __shared__ (static
// storage: blocks run one after another, so all threads of the running block share it),
// and __launch_bounds__. cuda_fp16.h and cuda_bf16.h themselves compile as host C++ and
// supply __half and __nv_bfloat16 with CPU arithmetic (round-to-nearest-even conversions,
// as on the device).
//
// Threads: each thread of a block is a fiber (its own stack) on the one OS
// thread; a thread runs until it waits at a barrier, then the scheduler resumes the next.
// (OS threads, as before, spent most of a run in the kernel's futex calls: a barrier of
// 256 threads on 2 cores.) The scheduler visits the threads in a new pseudo-random
// order on each pass (a fixed seed, so a run repeats exactly), so between two barriers
// some readers of shared memory that another thread writes without a barrier between them
// run before the writer and some after, whichever side of it they sit; a barrier that not
// every thread reaches aborts the run with the waiting threads named, where OS threads hung.
//
// Warps: the block's threads are cut into warps of 32 (linear thread id / 32; a block
// size that is not a multiple of 32 gets a short last warp). Each warp has its own barrier
// (__syncwarp, and the warp collectives of kernels/mma.cuh) and an exchange buffer through
// which a collective gathers all lanes' operands. cp.async: each thread queues its copies;
// commit closes a group; wait_group(N) performs every group but the newest N, so data is
// in shared memory only after the wait (as the PTX ISA guarantees it, not earlier), and a
// block that ends with copies still queued aborts the run. From its issue to its wait a
// copy's destination holds 0xFF bytes (NaN in every float type): the PTX ISA leaves it
// undefined then, so a read before the wait (by this thread or another) and a refill of a
// buffer that someone still reads (the copy may land at once) both show as wrong results.
// Warpgroups (4 warps, 128 threads: wgmma.mma_async, kernels/mma.cuh): each thread's issue
// records the (uniform) operation and where its accumulators live; commit closes a group
// for the whole warpgroup (a warpgroup barrier); wait_group(N) performs every group of the
// warpgroup but the newest N, reading shared memory then, so accumulators read before the
// wait show up as wrong results, and an operand in shared memory that differs at the wait
// from what it was at the commit (overwritten, or landed, in between) aborts the run; a
// block that ends with operations still pending aborts the run. mbarriers: see MBarrier
// below.
#pragma once

#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <unordered_map>
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>
#include <sys/mman.h>
#if !defined(__x86_64__) || defined(GO_EMU_UCONTEXT)
#include <ucontext.h>
#endif
#include <unistd.h>
#include <vector_types.h>
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

#ifdef __CUDACC__
#error "cuda_emu.h is for host builds only"
#endif

// Declared by the CUDA headers only under nvcc. threadIdx and blockIdx are the running
// thread's (the scheduler sets them when it resumes a thread).
extern uint3 threadIdx;
extern uint3 blockIdx;
extern dim3 blockDim;
extern dim3 gridDim;

#undef __shared__
#define __shared__ static
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

namespace emu {
// Hands the OS thread back to the scheduler (kernel threads only).
void yield_to_scheduler();
// Counts arrivals at barriers: the scheduler's evidence that a pass made progress.
extern uint64_t g_arrivals;

// A barrier of `n` of the block's threads (cooperative: a thread that is not the last to
// arrive yields until the last one does).
class Barrier {
public:
    explicit Barrier(unsigned n) : n_(n) {}
    void arrive_and_wait() {
        ++g_arrivals;
        const uint64_t phase = phase_;
        if (++count_ == n_) {
            count_ = 0;
            ++phase_;
            return;
        }
        while (phase_ == phase) yield_to_scheduler();
    }

private:
    unsigned n_, count_ = 0;
    uint64_t phase_ = 0;
};

extern Barrier* g_block_barrier;

// Operands of one warp collective: per lane, up to six 32-bit registers or an address.
struct WarpExchange {
    uint32_t u[32][6];
    const void* p[32];
};
struct Warp {
    std::unique_ptr<Barrier> bar;
    WarpExchange x;
};
extern std::vector<Warp>* g_warps;
extern unsigned t_linear;  // the running thread's linear id in the block

// One wgmma.mma_async as issued: the kind (0 f16, 1 bf16, 2 tf32 inputs; 3 tf32 with A from
// registers), whether A is M-major (imm-trans-a) and B N-major (imm-trans-b), the
// shared-memory descriptors' bits and addresses (A's none for kind 3), each of the
// warpgroup's 128 threads' accumulators and (kind 3) its A registers as issued.
struct WgmmaOp {
    int kind, ta, tb;
    uint64_t abits, bbits;
    const unsigned char *ap, *bp;
    float* acc[128];
    uint32_t ar[128][4];
    std::vector<uint32_t> seen;  // its shared-memory operands at the commit (wgmma_operands)
};
struct WarpGroup {
    std::unique_ptr<Barrier> bar;
    std::vector<WgmmaOp> open;                 // issued, not yet committed
    std::deque<std::vector<WgmmaOp>> groups;   // committed, oldest first
};
extern std::vector<WarpGroup>* g_warpgroups;
extern unsigned t_wg_issued;  // the running thread's operations in the open group

inline int lane_id() { return (int)(t_linear % 32); }
inline Warp& this_warp() { return (*g_warps)[t_linear / 32]; }
inline WarpExchange& warp_exchange() { return this_warp().x; }
inline void warp_barrier() { this_warp().bar->arrive_and_wait(); }

// cp.async model: this thread's queued copies, grouped by commit.
struct AsyncCopy {
    void* dst;
    const void* src;
    int src_bytes;
    int cp_size;  // 16, or 4 (the f32 ws forward's filter elements)
};
struct AsyncQueue {
    std::vector<AsyncCopy> open;                  // issued, not yet committed
    std::deque<std::vector<AsyncCopy>> groups;    // committed, oldest first
};
extern AsyncQueue* t_async;  // the running thread's

// cp_size bytes (16, or 4: cp.async.ca's element copy), src_bytes of them read (0: none).
inline void cp_async_issue(void* dst, const void* src, int src_bytes, int cp_size = 16) {
    const uintptr_t a = (uintptr_t)cp_size;
    if ((cp_size != 16 && cp_size != 4) || reinterpret_cast<uintptr_t>(dst) % a ||
        (src_bytes && reinterpret_cast<uintptr_t>(src) % a)) {
        std::fprintf(stderr, "cp.async: %d-byte copy with a misaligned address (%p <- %p)\n",
                     cp_size, dst, src);
        std::abort();
    }
    if (src_bytes != 0 && src_bytes != cp_size) {
        std::fprintf(stderr, "cp.async: src-size %d of %d (the kernels use 0 or all)\n",
                     src_bytes, cp_size);
        std::abort();
    }
    std::memset(dst, 0xFF, cp_size);  // undefined until the wait
    t_async->open.push_back({dst, src, src_bytes, cp_size});
}
inline void cp_async_commit() {
    t_async->groups.push_back(std::move(t_async->open));
    t_async->open.clear();
}
// A copy lands: src-size 0 reads nothing and zero-fills the destination.
inline void land(const AsyncCopy& c) {
    if (c.src_bytes) std::memcpy(c.dst, c.src, c.cp_size);
    else std::memset(c.dst, 0, c.cp_size);
}
inline void cp_async_wait(int pending) {
    while ((int)t_async->groups.size() > pending) {
        for (const AsyncCopy& c : t_async->groups.front()) land(c);
        t_async->groups.pop_front();
    }
}

// mbarrier model: the state of each initialised barrier, by its shared-memory address (the
// object's own 8 bytes are not used). An arrival counts down the phase's pending count; the
// last one completes the phase: the phase count advances and the pending count resets. A
// cp.async arrival (.noinc) takes every copy its thread has queued, committed or not (a later
// wait_group of the thread no longer waits for them: a kernel uses one or the other), and
// happens as late as the model can make it: the copies land and the arrival counts only when
// a thread next tests the barrier (each such arrival in its turn: its copies, then its
// count), so a reader that does not wait for the phase finds the copies' destinations
// undefined (0xFF), as a reader before the wait_group does. A wait that finds its phase
// incomplete yields, and a pass of the scheduler in which every waiter only spins is a
// deadlock, as for the block barrier.
struct MBarrier {
    unsigned expected = 0, pending = 0;
    uint64_t phases = 0;                              // completed phases
    std::deque<std::vector<AsyncCopy>> cp_arrivals;  // cp.async arrivals not yet counted
};
extern std::unordered_map<const void*, MBarrier>* g_mbarriers;  // the running launch's
// The running launch's dynamic shared memory in bytes (the job's; kernels/mma.cuh's
// go_dynamic_smem_bytes).
extern unsigned g_dynamic_smem_bytes;

inline MBarrier& mbarrier_at(const void* bar) {
    auto it = g_mbarriers->find(bar);
    if (it == g_mbarriers->end()) {
        std::fprintf(stderr, "mbarrier: %p used before mbarrier.init\n", bar);
        std::abort();
    }
    return it->second;
}
inline void mbarrier_init(const void* bar, unsigned count) {
    if (reinterpret_cast<uintptr_t>(bar) % 8 || count == 0 || count >= (1u << 20)) {
        std::fprintf(stderr, "mbarrier.init: %p count %u (8-byte aligned, 1 to 2^20 - 1)\n",
                     bar, count);
        std::abort();
    }
    auto it = g_mbarriers->find(bar);
    if (it != g_mbarriers->end() && !it->second.cp_arrivals.empty()) {
        std::fprintf(stderr, "mbarrier.init: %p re-initialised with cp.async arrivals nobody "
                     "waited for\n", bar);
        std::abort();
    }
    (*g_mbarriers)[bar] = MBarrier{count, count, 0, {}};
}
inline void mbarrier_count(MBarrier& b) {
    ++g_arrivals;
    if (--b.pending > 0) return;
    ++b.phases;
    b.pending = b.expected;
}
inline void mbarrier_arrive(const void* bar) { mbarrier_count(mbarrier_at(bar)); }
inline void cp_async_mbarrier_arrive_noinc(const void* bar) {
    std::vector<AsyncCopy> copies;
    for (auto& g : t_async->groups) {
        copies.insert(copies.end(), g.begin(), g.end());
        g.clear();  // the group stays (wait_group counts it), empty
    }
    copies.insert(copies.end(), t_async->open.begin(), t_async->open.end());
    t_async->open.clear();
    mbarrier_at(bar).cp_arrivals.push_back(std::move(copies));
}
inline bool mbarrier_try_wait(const void* bar, unsigned parity) {
    MBarrier& b = mbarrier_at(bar);
    for (; !b.cp_arrivals.empty(); b.cp_arrivals.pop_front()) {
        for (const AsyncCopy& c : b.cp_arrivals.front()) land(c);
        mbarrier_count(b);
    }
    const bool done = (b.phases & 1) != (parity & 1);
    if (!done) yield_to_scheduler();
    return done;
}
}  // namespace emu

inline void __syncthreads() { emu::g_block_barrier->arrive_and_wait(); }
inline void __syncwarp(unsigned = 0xFFFFFFFFu) { emu::warp_barrier(); }

#ifdef GO_EMU_DEFINE_GLOBALS
uint3 threadIdx;
uint3 blockIdx;
dim3 blockDim;
dim3 gridDim;
namespace emu {
uint64_t g_arrivals = 0;
Barrier* g_block_barrier = nullptr;
std::vector<Warp>* g_warps = nullptr;
std::vector<WarpGroup>* g_warpgroups = nullptr;
unsigned t_linear = 0;
unsigned t_wg_issued = 0;
AsyncQueue* t_async = nullptr;
std::unordered_map<const void*, MBarrier>* g_mbarriers = nullptr;
unsigned g_dynamic_smem_bytes = 0;

// A saved execution context and the switch between two. On x86-64 a switch saves the
// callee-saved registers, MXCSR and the x87 control word on the old stack and restores them
// from the new one (no system call; glibc's swapcontext makes one, and AddressSanitizer's
// interceptor of it clears the whole new stack's shadow on every switch); elsewhere (or
// with -DGO_EMU_UCONTEXT) ucontext.
#if defined(__x86_64__) && !defined(GO_EMU_UCONTEXT)
struct Context {
    void* sp = nullptr;
};
extern "C" void go_emu_switch(void** save_sp, void* load_sp);
asm(R"(
    .pushsection .text
    .globl go_emu_switch
    .type go_emu_switch, @function
go_emu_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    subq $8, %rsp
    stmxcsr (%rsp)
    fnstcw 4(%rsp)
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    ldmxcsr (%rsp)
    fldcw 4(%rsp)
    addq $8, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
    .size go_emu_switch, .-go_emu_switch
    .popsection
)");
inline void switch_context(Context* from, Context* to) { go_emu_switch(&from->sp, to->sp); }
// A context that starts entry(), which must never return, on [stack, stack + bytes).
inline void make_context(Context* c, unsigned char* stack, size_t bytes, void (*entry)()) {
    // From the top: a null return address (entry's caller, for backtraces), entry's address
    // (go_emu_switch's `ret` pops it, leaving the stack as a call would: 8 mod 16), then the
    // six registers and the MXCSR/x87 control words go_emu_switch pops.
    uintptr_t top = (reinterpret_cast<uintptr_t>(stack) + bytes) & ~uintptr_t(15);
    uint64_t* p = reinterpret_cast<uint64_t*>(top);
    *--p = 0;                                   // at top - 8: 8 mod 16 once entry runs
    *--p = reinterpret_cast<uint64_t>(entry);   // at top - 16
    for (int r = 0; r < 6; ++r) *--p = 0;
    *--p = uint64_t(0x1F80) | (uint64_t(0x037F) << 32);  // MXCSR and x87 defaults
    c->sp = p;
}
#else
struct Context {
    ucontext_t uc;
};
inline void switch_context(Context* from, Context* to) { swapcontext(&from->uc, &to->uc); }
inline void make_context(Context* c, unsigned char* stack, size_t bytes, void (*entry)()) {
    getcontext(&c->uc);
    c->uc.uc_stack.ss_sp = stack;
    c->uc.uc_stack.ss_size = bytes;
    c->uc.uc_link = nullptr;
    makecontext(&c->uc, entry, 0);
}
#endif

// A thread of the block: its context, its stack, and what the globals above hold while it
// runs.
struct Fiber {
    Context ctx;
    unsigned char* stack = nullptr;  // mmap'd, a guard page below
    uint3 tid{}, bid{};
    unsigned wg_issued = 0;
    AsyncQueue async;
    bool done = false;
    void* fake_stack = nullptr;  // AddressSanitizer's, while switched out
};

// Kernel stacks: the deepest kernel frame under AddressSanitizer at -O1 is a few KB of
// accumulators and fragments; 1 MiB leaves room (touched pages only are backed).
constexpr size_t kStackBytes = size_t(1) << 20;

struct Scheduler {
    Context main_ctx;
    std::vector<Fiber>* fibers = nullptr;
    Fiber* running = nullptr;
    const void* main_stack_bottom = nullptr;
    size_t main_stack_size = 0;
    void* main_fake_stack = nullptr;
};
inline Scheduler g_sched;

// Sanitizer bookkeeping for a stack switch (no-ops without AddressSanitizer).
inline void before_switch(void** fake_save, const void* bottom, size_t size) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_start_switch_fiber(fake_save, bottom, size);
#else
    (void)fake_save; (void)bottom; (void)size;
#endif
}
inline void after_switch(void* fake_save, const void** old_bottom, size_t* old_size) {
#if defined(__SANITIZE_ADDRESS__)
    __sanitizer_finish_switch_fiber(fake_save, old_bottom, old_size);
#else
    (void)fake_save; (void)old_bottom; (void)old_size;
#endif
}

[[gnu::noinline]] void yield_to_scheduler() {
    Fiber* f = g_sched.running;
    before_switch(&f->fake_stack, g_sched.main_stack_bottom, g_sched.main_stack_size);
    switch_context(&f->ctx, &g_sched.main_ctx);
    after_switch(f->fake_stack, &g_sched.main_stack_bottom, &g_sched.main_stack_size);
}

// Gives thread t of a block of `block` its stack and context, to start at body. (Out of
// line, as resume: under ucontext getcontext and swapcontext return twice, and
// -Wclobbered objects to them in a function with loops.)
[[gnu::noinline]] void init_fiber(Fiber& f, unsigned t, dim3 block, void (*body)()) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void* mem = mmap(nullptr, kStackBytes + page, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED || mprotect(mem, page, PROT_NONE) != 0) {
        std::fprintf(stderr, "emu: cannot map a thread stack\n");
        std::abort();
    }
    f.stack = static_cast<unsigned char*>(mem) + page;
    f.tid = {t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    make_context(&f.ctx, f.stack, kStackBytes, body);
}
void free_fiber(Fiber& f) {
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    munmap(f.stack - page, kStackBytes + page);
}

// Resumes fiber t until it yields or ends; the running thread's globals follow it.
[[gnu::noinline]] void resume(unsigned t) {
    Fiber& f = (*g_sched.fibers)[t];
    threadIdx = f.tid;
    blockIdx = f.bid;
    t_linear = t;
    t_wg_issued = f.wg_issued;
    t_async = &f.async;
    g_sched.running = &f;
    before_switch(&g_sched.main_fake_stack, f.stack, kStackBytes);
    switch_context(&g_sched.main_ctx, &f.ctx);
    after_switch(g_sched.main_fake_stack, nullptr, nullptr);
    f.bid = blockIdx;
    f.wg_issued = t_wg_issued;
    g_sched.running = nullptr;
}

// Run kernel(params) over grid x block: one fiber per thread of a block, the blocks one
// after another in (x, y, z) order; a barrier closes each block so the next one starts
// with all threads done (shared memory is reused across blocks). A thread that returns
// early waits at that barrier, which, being the block barrier, also completes the other
// threads' __syncthreads, as exited threads do on the device.
template <typename P>
void launch(void (*kernel)(P), dim3 grid, dim3 block, const P& params) {
    gridDim = grid;
    blockDim = block;
    const unsigned nthreads = block.x * block.y * block.z;
    Barrier bar(nthreads);
    g_block_barrier = &bar;
    std::vector<Warp> warps((nthreads + 31) / 32);
    for (unsigned w = 0; w < warps.size(); ++w) {
        const unsigned lanes = w + 1 < warps.size() ? 32 : nthreads - 32 * w;
        warps[w].bar = std::make_unique<Barrier>(lanes);
    }
    g_warps = &warps;
    // Whole warpgroups only (a block of 32 or 64 threads has none).
    std::vector<WarpGroup> warpgroups(nthreads / 128);
    for (WarpGroup& wg : warpgroups) wg.bar = std::make_unique<Barrier>(128);
    g_warpgroups = &warpgroups;
    std::unordered_map<const void*, MBarrier> mbarriers;
    g_mbarriers = &mbarriers;

    // What a fiber's body (a captureless lambda: makecontext takes a plain function) runs.
    struct Job {
        void (*kernel)(P);
        const P* params;
        dim3 grid;
    };
    static Job job;
    job = {kernel, &params, grid};
    // A fiber's body: this thread's part of every block.
    void (*body)() = [] {
        after_switch(nullptr, &g_sched.main_stack_bottom, &g_sched.main_stack_size);
        const unsigned t = t_linear;
        for (unsigned bz = 0; bz < job.grid.z; ++bz)
            for (unsigned by = 0; by < job.grid.y; ++by)
                for (unsigned bx = 0; bx < job.grid.x; ++bx) {
                    blockIdx.x = bx; blockIdx.y = by; blockIdx.z = bz;
                    job.kernel(*job.params);
                    if (!t_async->open.empty() || !t_async->groups.empty()) {
                        std::fprintf(stderr, "cp.async: thread %u of block (%u,%u,%u) ended "
                                     "with copies never waited for\n", t, bx, by, bz);
                        std::abort();
                    }
                    if (t < 128 * g_warpgroups->size()) {
                        WarpGroup& wg = (*g_warpgroups)[t / 128];
                        if (!wg.open.empty() || !wg.groups.empty()) {
                            std::fprintf(stderr, "wgmma: thread %u of block (%u,%u,%u) ended "
                                         "with operations never waited for\n", t, bx, by, bz);
                            std::abort();
                        }
                    }
                    g_block_barrier->arrive_and_wait();
                }
        Fiber* f = g_sched.running;
        f->done = true;
        // This stack is finished with: no fake stack to keep.
        before_switch(nullptr, g_sched.main_stack_bottom, g_sched.main_stack_size);
        switch_context(&f->ctx, &g_sched.main_ctx);
        std::abort();  // never resumed
    };

    std::vector<Fiber> fibers(nthreads);
    for (unsigned t = 0; t < nthreads; ++t) init_fiber(fibers[t], t, block, body);
    g_sched.fibers = &fibers;

    // Passes over the threads, each in its own pseudo-random order (a fixed seed: every run
    // the same), until all have ended. A pass in which no thread arrives at a barrier or
    // ends is a deadlock.
    std::vector<unsigned> order(nthreads);
    for (unsigned t = 0; t < nthreads; ++t) order[t] = t;
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    unsigned alive = nthreads;
    while (alive) {
        for (unsigned i = nthreads; i > 1; --i) {  // Fisher-Yates on xorshift64
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            std::swap(order[i - 1], order[rng % i]);
        }
        const uint64_t arrivals = g_arrivals;
        const unsigned alive_before = alive;
        for (const unsigned t : order) {
            if (fibers[t].done) continue;
            resume(t);
            if (fibers[t].done) --alive;
        }
        if (alive && arrivals == g_arrivals && alive == alive_before) {
            std::fprintf(stderr, "emu: deadlock: %u of %u threads wait at barriers the others "
                         "never reach; waiting:", alive, nthreads);
            for (unsigned t = 0, shown = 0; t < nthreads && shown < 16; ++t)
                if (!fibers[t].done) { std::fprintf(stderr, " %u", t); ++shown; }
            std::fprintf(stderr, "\n");
            std::abort();
        }
    }
    for (const auto& [bar, b] : mbarriers)
        if (!b.cp_arrivals.empty()) {
            std::fprintf(stderr, "mbarrier: %p ended with cp.async arrivals nobody waited "
                         "for\n", bar);
            std::abort();
        }
    for (Fiber& f : fibers) free_fiber(f);
    g_mbarriers = nullptr;
    g_sched.fibers = nullptr;
    g_block_barrier = nullptr;
    g_warps = nullptr;
    g_warpgroups = nullptr;
    t_async = nullptr;
}
}  // namespace emu
#endif

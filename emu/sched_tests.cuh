// Emulator-only test kernels for the scheduler of emu/cuda_emu.h (driven by
// tests/emulated_kernels.rs): what a missing barrier and a barrier not every thread reaches
// do there. Not part of any PTX image: modes 1 and 2 are data races and mode 3 hangs on
// hardware.
#pragma once

// emu_sched_test, one block of 64 threads. out[4t..4t+4] = what thread t read:
//   s1[t + 1], s1[t - 1] (cyclic) after every thread wrote s1[u] = u + 1, then, in the
//   segment after the next barrier, s2[t + 1], s2[t - 1] after every thread wrote
//   s2[u] = u + 101.
// mode 0: a barrier between each write and its reads (race-free: every read sees the write).
// mode 1: no barrier between the s1 writes and reads (the first segment).
// mode 2: no barrier between the s2 writes and reads (the segment after a barrier).
// mode 3: lane 0 skips a __syncwarp its warp's other lanes wait at, then waits at
//         __syncthreads: a deadlock.
struct GoEmuSchedTestParams {
    uint64_t out;
    int32_t mode;
    int32_t pad;
};

void emu_sched_test(GoEmuSchedTestParams p) {
    __shared__ uint32_t s1[64];
    __shared__ uint32_t s2[64];
    uint32_t* out = reinterpret_cast<uint32_t*>(p.out);
    const unsigned t = threadIdx.x, n = blockDim.x;
    if (p.mode == 3) {
        if (t % 32 != 0) __syncwarp();
        __syncthreads();
        return;
    }
    s1[t] = t + 1;
    if (p.mode != 1) __syncthreads();
    out[4 * t] = s1[(t + 1) % n];
    out[4 * t + 1] = s1[(t + n - 1) % n];
    __syncthreads();
    s2[t] = t + 101;
    if (p.mode != 2) __syncthreads();
    out[4 * t + 2] = s2[(t + 1) % n];
    out[4 * t + 3] = s2[(t + n - 1) % n];
}

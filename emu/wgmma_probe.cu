// The wgmma model's probe on hardware: emu/wgmma_tests.cuh's kernels, the emulator's own
// (emulated_wgmma_model), as a compute_90a PTX image of their own. Not part of the crate's
// images: scripts/gpu-check.sh --prebuild compiles it into the GPU bundle, and
// tests/cuda_ops.rs (wgmma_model_on_hardware) loads it from GRADOPS_WGMMA_PROBE_PTX on an
// H100/H200 and checks D against the product computed on the host, bit for bit on small
// integers. Where the conv tiles' wgmma kernels fail on a GPU, this says whether the
// emulator's model of the descriptors, the swizzle and the fragments (which every wgmma
// kernel was proven against) or a kernel is wrong. Scalar parameters: the test passes device
// pointers and flags, no struct.
#include "wgmma_tests.cuh"

#if GO_HAS_WGMMA
#define GO_WGMMA_PROBE(NAME, CALL)                                                             \
    extern "C" __global__ void __launch_bounds__(128, 1)                                       \
        NAME(uint64_t a, uint64_t b, uint64_t c, uint64_t d, int32_t k32, int32_t bmn) {       \
        const GoEmuWgmmaTestParams p = {a, b, c, d, k32, bmn};                                 \
        CALL(p);                                                                               \
    }
GO_WGMMA_PROBE(emu_wgmma_test_f16, emu_wgmma_test_body<__half>)
GO_WGMMA_PROBE(emu_wgmma_test_bf16, emu_wgmma_test_body<__nv_bfloat16>)
GO_WGMMA_PROBE(emu_wgmma_test_tf32, emu_wgmma_test_tf32_body)
#undef GO_WGMMA_PROBE
// The warp-specialized pipeline's skeleton: 160 threads (a consumer warpgroup and a producer
// warp), the same parameters (nk and flags in place of k32 and bmn; the flags' mutations are
// the emulator's only: call with 0).
extern "C" __global__ void __launch_bounds__(160, 1)
    emu_wgmma_pipe_test_f16(uint64_t a, uint64_t b, uint64_t c, uint64_t d, int32_t nk,
                            int32_t flags) {
    emu_wgmma_pipe_test_body({a, b, c, d, nk, flags});
}
#endif

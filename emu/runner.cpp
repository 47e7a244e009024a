// gradops kernel emulator: runs one real kernel body over its real grid on the CPU.
// Built and driven by tests/emulated_kernels.rs:
//   g++ -std=c++20 -O1 -g1 -fsanitize=address,undefined -I kernels -I <cuda>/include ...
//
// Job on stdin (little-endian):
//   u32 name_len, name bytes           kernel name, e.g. "resize_gather_f32"
//   u32 grid[3], u32 block[3]
//   u32 dynamic_smem                   bytes of dynamic shared memory the launch gives
//   u32 params_len, params bytes       the kernel's params struct; each device-pointer
//                                      field holds 0 (null) or 1 + a buffer number
//   u32 nbuf, then per buffer: u64 byte_len, u8 is_output, and byte_len bytes if input
// Output buffers start filled with 0xFF bytes (NaN for every float type) so an element
// the kernel never writes shows up. Every buffer is its own exact-size heap block, so
// AddressSanitizer reports any out-of-bounds index.
// Reply on stdout: per buffer, u64 byte_len and its bytes (all buffers, in order).
#define GO_EMU_DEFINE_GLOBALS
#include "cuda_emu.h"

#include "../kernels/resize.cu"
#include "../kernels/conv.cu"
#include "../kernels/pool.cu"
#include "mma_tests.cuh"
#include "sched_tests.cuh"

#include <cstring>
#include <string>

namespace {

void die(const char* msg) {
    std::fprintf(stderr, "emu runner: %s\n", msg);
    std::exit(2);
}

void read_exact(void* dst, size_t n) {
    if (n && std::fread(dst, 1, n, stdin) != n) die("short read on stdin");
}
uint32_t read_u32() { uint32_t v; read_exact(&v, 4); return v; }
uint64_t read_u64() { uint64_t v; read_exact(&v, 8); return v; }

struct Buf { unsigned char* ptr; uint64_t len; };

template <typename P>
void run(void (*kernel)(P), int nptr, const std::vector<unsigned char>& blob,
         const std::vector<Buf>& bufs, dim3 grid, dim3 block) {
    if (blob.size() != sizeof(P)) die("params size does not match the kernel's struct");
    P p;
    std::memcpy(&p, blob.data(), sizeof(P));
    uint64_t* ptrs = reinterpret_cast<uint64_t*>(&p);  // pointer fields come first
    for (int i = 0; i < nptr; ++i) {
        if (ptrs[i] == 0) continue;
        if (ptrs[i] > bufs.size()) die("pointer field names a missing buffer");
        ptrs[i] = reinterpret_cast<uint64_t>(bufs[ptrs[i] - 1].ptr);
    }
    emu::launch(kernel, grid, block, p);
}

}  // namespace

int main() {
    std::freopen(nullptr, "rb", stdin);
    std::freopen(nullptr, "wb", stdout);
    const uint32_t nlen = read_u32();
    std::string name(nlen, '\0');
    read_exact(name.data(), nlen);
    dim3 grid, block;
    grid.x = read_u32(); grid.y = read_u32(); grid.z = read_u32();
    block.x = read_u32(); block.y = read_u32(); block.z = read_u32();
    emu::g_dynamic_smem_bytes = read_u32();
    std::vector<unsigned char> blob(read_u32());
    read_exact(blob.data(), blob.size());
    const uint32_t nbuf = read_u32();
    std::vector<Buf> bufs(nbuf);
    for (auto& b : bufs) {
        b.len = read_u64();
        unsigned char is_output;
        read_exact(&is_output, 1);
        // malloc(0) may return null; keep a unique non-null pointer with no valid bytes.
        b.ptr = static_cast<unsigned char*>(std::malloc(b.len ? b.len : 1));
        if (!b.ptr) die("out of memory");
        if (is_output) std::memset(b.ptr, 0xFF, b.len);
        else read_exact(b.ptr, b.len);
    }

// One `if (name == ...) run(...); else` per element type of GO_DTYPES (kernels/common.cuh).
#define GO_EMU_ONE(KNAME, PARAMS, NPTR, UNUSED, SUFFIX, T) \
    if (name == #KNAME "_" #SUFFIX) { run<PARAMS>(KNAME##_##SUFFIX, NPTR, blob, bufs, grid, block); } else
#define GO_EMU_KERNEL(KNAME, PARAMS, NPTR) GO_DTYPES(GO_EMU_ONE, KNAME, PARAMS, NPTR, )

    GO_EMU_KERNEL(resize_gather, GoResizeParams, 9)
    GO_EMU_KERNEL(resize_tile, GoResizeParams, 9)
    GO_EMU_KERNEL(resize_box, GoResizeParams, 9)
    GO_EMU_KERNEL(conv2d_forward, GoConvParams, 3)
    GO_EMU_KERNEL(conv2d_backprop_input, GoConvParams, 3)
    GO_EMU_KERNEL(conv2d_forward_tc, GoConvParams, 3)
    GO_EMU_KERNEL(conv2d_backprop_input_tc, GoConvParams, 3)
    GO_EMU_KERNEL(conv2d_forward_tc_vec, GoConvParams, 3)
    GO_EMU_KERNEL(conv2d_backprop_input_tc_vec, GoConvParams, 3)
    GO_EMU_KERNEL(conv2d_forward_tc_vec_nchw, GoConvParams, 3)
    GO_EMU_KERNEL(conv2d_backprop_input_tc_vec_nchw, GoConvParams, 3)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_wide, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_wide, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_tall, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_tall, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_forward_tc_vec_tall, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_forward_tc_vec_tall, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_square, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_square, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_forward_tc_vec_square, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_forward_tc_vec_square, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_wgmma, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_wgmma, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_wgmma, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_nchw_wgmma, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_nchw_wgmma, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_nchw_wgmma, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_forward_tc_vec_nchw_wgmma, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_forward_tc_vec_nchw_wgmma, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_forward_tc_vec_nchw_wgmma, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_forward_tc_vec_wgmma, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_forward_tc_vec_wgmma, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_forward_tc_vec_wgmma, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_ws, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_ws, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_forward_tc_vec_ws, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_forward_tc_vec_ws, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_ws, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_ws_tf32, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_forward_tc_vec_ws, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_forward_tc_vec_ws_tf32, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_nchw_ws, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_nchw_ws_tf32, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_forward_tc_vec_nchw_ws, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_forward_tc_vec_nchw_ws_tf32, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_halo, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_halo, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_forward_tc_vec_halo, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_forward_tc_vec_halo, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_nchw_halo, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_nchw_halo, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_forward_tc_vec_nchw_halo, GoConvParams, 3, , f16, __half)
    GO_EMU_ONE(conv2d_forward_tc_vec_nchw_halo, GoConvParams, 3, , bf16, __nv_bfloat16)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_halo_tf32, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_forward_tc_vec_halo_tf32, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_input_tc_vec_nchw_halo_tf32, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_forward_tc_vec_nchw_halo_tf32, GoConvParams, 3, , f32, float)
    GO_EMU_ONE(conv2d_backprop_filter_partial_tc_nhwc_wgmma, GoConvFilterParams, 4, , f16, __half)
    GO_EMU_ONE(conv2d_backprop_filter_partial_tc_nhwc_wgmma, GoConvFilterParams, 4, , bf16,
               __nv_bfloat16)
    GO_EMU_ONE(emu_wgmma_test, GoEmuWgmmaTestParams, 4, , f16, __half)
    GO_EMU_ONE(emu_wgmma_test, GoEmuWgmmaTestParams, 4, , bf16, __nv_bfloat16)
    if (name == "emu_wgmma_test_tf32") { run<GoEmuWgmmaTestParams>(emu_wgmma_test_tf32, 4, blob, bufs, grid, block); } else
    if (name == "emu_wgmma_pipe_test_f16") { run<GoEmuWgmmaPipeTestParams>(emu_wgmma_pipe_test_f16, 4, blob, bufs, grid, block); } else
    GO_EMU_ONE(emu_mma_test, GoEmuMmaTestParams, 4, , f16, __half)
    GO_EMU_ONE(emu_mma_test, GoEmuMmaTestParams, 4, , bf16, __nv_bfloat16)
    if (name == "emu_mma_test_tf32") { run<GoEmuMmaTestParams>(emu_mma_test_tf32, 4, blob, bufs, grid, block); } else
    if (name == "emu_mma_test_f64") { run<GoEmuMmaTestParams>(emu_mma_test_f64, 4, blob, bufs, grid, block); } else
    if (name == "emu_sched_test") { run<GoEmuSchedTestParams>(emu_sched_test, 1, blob, bufs, grid, block); } else
    if (name == "emu_cp_async_test") { run<GoEmuCpAsyncTestParams>(emu_cp_async_test, 2, blob, bufs, grid, block); } else
    GO_EMU_KERNEL(conv2d_backprop_filter_partial, GoConvFilterParams, 4)
    GO_EMU_KERNEL(conv2d_backprop_filter_partial_tc, GoConvFilterParams, 4)
    GO_EMU_KERNEL(conv2d_backprop_filter_partial_tc_elementwise, GoConvFilterParams, 4)
    GO_EMU_KERNEL(conv2d_backprop_filter_partial_tc_nhwc, GoConvFilterParams, 4)
    GO_EMU_KERNEL(conv2d_backprop_filter_reduce, GoConvFilterParams, 4)
    GO_EMU_KERNEL(max_pool_forward, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_grad, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_grad_argmax, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_tile_forward, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_tile_grad, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_tile_grad_argmax, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_tile_k3_forward, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_tile_k3_grad, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_tile_k3_grad_argmax, GoPoolParams, 5)
    GO_EMU_KERNEL(max_pool_direct_k3_forward, GoPoolParams, 5)
    { die(("unknown kernel " + name).c_str()); }

    for (auto& b : bufs) {
        std::fwrite(&b.len, 8, 1, stdout);
        std::fwrite(b.ptr, 1, b.len, stdout);
        std::free(b.ptr);
    }
    std::fflush(stdout);
    return 0;
}

//! The kernels of the wgmma tiles (kernels/conv_tc.cuh; the compute_90a image holds these and
//! nothing else), for the tests that check them: `ptx_check` (ptxas) and `emulated_kernels`.

/// 16-bit NHWC on two warpgroups of 128 threads (two blocks of 256 per SM).
pub const WIDE: [&str; 4] = [
    "conv2d_backprop_input_tc_vec_wgmma_f16",
    "conv2d_backprop_input_tc_vec_wgmma_bf16",
    "conv2d_forward_tc_vec_wgmma_f16",
    "conv2d_forward_tc_vec_wgmma_bf16",
];

/// The warp-specialized tile's, 16-bit NHWC and f32 of both layouts (exact; the TF32 opt-in's
/// own entry point), both ops: two consumer warpgroups and a producer warpgroup (two blocks of
/// 384 per SM).
pub const WS: [&str; 12] = [
    "conv2d_backprop_input_tc_vec_ws_f16",
    "conv2d_backprop_input_tc_vec_ws_bf16",
    "conv2d_forward_tc_vec_ws_f16",
    "conv2d_forward_tc_vec_ws_bf16",
    "conv2d_backprop_input_tc_vec_ws_f32",
    "conv2d_backprop_input_tc_vec_ws_tf32_f32",
    "conv2d_forward_tc_vec_ws_f32",
    "conv2d_forward_tc_vec_ws_tf32_f32",
    "conv2d_backprop_input_tc_vec_nchw_ws_f32",
    "conv2d_backprop_input_tc_vec_nchw_ws_tf32_f32",
    "conv2d_forward_tc_vec_nchw_ws_f32",
    "conv2d_forward_tc_vec_nchw_ws_tf32_f32",
];

/// The halo tile's, 16-bit and f32 under the TF32 opt-in, both ops, NHWC and NCHW: two
/// warpgroups of 128 threads (by registers two blocks of 256 per SM), the filter and the halo
/// buffers (16-bit NHWC two, NCHW and TF32 one) in dynamic shared memory.
pub const HALO: [&str; 12] = [
    "conv2d_backprop_input_tc_vec_halo_f16",
    "conv2d_backprop_input_tc_vec_halo_bf16",
    "conv2d_forward_tc_vec_halo_f16",
    "conv2d_forward_tc_vec_halo_bf16",
    "conv2d_backprop_input_tc_vec_nchw_halo_f16",
    "conv2d_backprop_input_tc_vec_nchw_halo_bf16",
    "conv2d_forward_tc_vec_nchw_halo_f16",
    "conv2d_forward_tc_vec_nchw_halo_bf16",
    "conv2d_backprop_input_tc_vec_halo_tf32_f32",
    "conv2d_forward_tc_vec_halo_tf32_f32",
    "conv2d_backprop_input_tc_vec_nchw_halo_tf32_f32",
    "conv2d_forward_tc_vec_nchw_halo_tf32_f32",
];

/// The lean tile's, one warpgroup of 128 threads (three blocks per SM): f32 of both ops in
/// both layouts, 16-bit NCHW of both ops.
pub const LEAN: [&str; 8] = [
    "conv2d_backprop_input_tc_vec_wgmma_f32",
    "conv2d_backprop_input_tc_vec_nchw_wgmma_f32",
    "conv2d_forward_tc_vec_wgmma_f32",
    "conv2d_forward_tc_vec_nchw_wgmma_f32",
    "conv2d_backprop_input_tc_vec_nchw_wgmma_f16",
    "conv2d_backprop_input_tc_vec_nchw_wgmma_bf16",
    "conv2d_forward_tc_vec_nchw_wgmma_f16",
    "conv2d_forward_tc_vec_nchw_wgmma_bf16",
];

/// The NHWC filter gradient's partial sums, one warpgroup of 128 threads (three blocks per
/// SM), both operands read MN-major.
pub const FILTER: [&str; 2] = [
    "conv2d_backprop_filter_partial_tc_nhwc_wgmma_f16",
    "conv2d_backprop_filter_partial_tc_nhwc_wgmma_bf16",
];

/// The wgmma kernels of `conv2d` and `conv2d_backprop_input` (the conv tiles').
// Not every test binary that includes this file uses each item.
#[allow(dead_code)]
pub fn conv() -> impl Iterator<Item = &'static str> {
    WIDE.iter()
        .chain(WS.iter())
        .chain(HALO.iter())
        .chain(LEAN.iter())
        .copied()
}

/// Every wgmma kernel.
#[allow(dead_code)]
pub fn all() -> impl Iterator<Item = &'static str> {
    conv().chain(FILTER.iter().copied())
}

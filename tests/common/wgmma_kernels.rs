//! The kernels of the wgmma tiles (kernels/conv_tc.cuh; the compute_90a image holds these and
//! nothing else), for the tests that check them: `ptx_check` (ptxas) and `emulated_kernels`.

/// 16-bit NHWC on two warpgroups of 128 threads (two blocks of 256 per SM).
pub const WIDE: [&str; 4] = [
    "conv2d_backprop_input_tc_vec_wgmma_f16",
    "conv2d_backprop_input_tc_vec_wgmma_bf16",
    "conv2d_forward_tc_vec_wgmma_f16",
    "conv2d_forward_tc_vec_wgmma_bf16",
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

/// Every wgmma kernel.
pub fn all() -> impl Iterator<Item = &'static str> {
    WIDE.iter().chain(LEAN.iter()).copied()
}

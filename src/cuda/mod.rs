//! CUDA backend: the kernels of `kernels/*.cu`, compiled to PTX by build.rs and embedded
//! in the crate, run through cudarc on caller-given streams.
//!
//! * [`probe`] says once (cached) whether CUDA is usable here, and why not. It opens libcuda
//!   itself before any driver call (cudarc panics without libcuda); [`CUDA_LINKING`] says
//!   whether this build loads libcuda at run time or links it (candle's `cuda` feature).
//! * PTX images: every kernel module is embedded once per virtual architecture
//!   (`GRADOPS_CUDA_ARCH`, default compute_75, compute_80, compute_90; [`BuildInfo::images`]).
//!   A context loads the image of the highest architecture not newer than its device
//!   ([`pick_arch`]); [`selected_image`] and [`op_kernels`] say which image and kernel
//!   variant each module and op uses on this device, [`image_for`] and [`op_kernels_for`]
//!   on any compute capability (no GPU needed).
//! * Device-resident API ([`resize_grad`], [`run_resize_plan`], [`conv2d_backprop_input`],
//!   [`conv2d_backprop_filter`], [`conv2d`], [`max_pool`], [`max_pool_grad`], [`max_pool_grad_with_argmax`]): inputs
//!   and outputs are cudarc device buffers (`CudaSlice<T>`, views) on the caller's
//!   `Arc<CudaStream>`; every launch is queued on that stream, nothing synchronises the
//!   host, except the first use of a new resize geometry (its small tables are uploaded
//!   from pageable memory once, then cached per context).
//! * [`host`]: the same ops over host slices (upload, run, download), for the CLI.
//!
//! Every failure is a [`crate::Error`]: `CudaUnavailable { reason }` when the kernels
//! or a device are missing, `Cuda { op, msg }` for a driver or launch error.

pub mod launch;
#[allow(missing_docs, clippy::all)]
pub mod params;

mod images;
mod ops;
mod ptx;
mod runtime;
mod tensor;

pub mod host;

pub use images::{
    arch_for, image_for, kernel_variant, op_kernels, op_kernels_for, pick_arch, selected_image,
    OpKernel, OP_KERNELS, TILED_FALLBACK_NOTE,
};
pub use launch::PoolKernel;
pub use ops::{
    conv2d, conv2d_backprop_filter, conv2d_backprop_input, max_pool, max_pool_grad,
    max_pool_grad_with_argmax, max_pool_kernel, pool_kernel, resize, resize_bilinear,
    resize_bilinear_grad, resize_bilinear_grad_into, resize_bilinear_into, resize_grad,
    resize_grad_into, resize_grad_kernel, resize_into, resize_kernel, resize_nearest_neighbor,
    resize_nearest_neighbor_grad, resize_nearest_neighbor_grad_into, resize_nearest_neighbor_into,
    run_resize_plan, PoolChoice, ResizeKernel,
};
pub use ptx::{build_info, BuildInfo, PtxImage};
pub use runtime::{context, probe, stream, DeviceInfo, CUDA_LINKING};
pub use tensor::{DeviceFilterRef, DeviceTensor, DeviceTensorMut, DeviceTensorRef};

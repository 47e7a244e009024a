//! # gradops
//!
//! Backward passes of the spatial image ops that segmentation and detection networks train
//! through, on CUDA and on the CPU, over `f16`, `bf16`, `f32` and `f64`, in NCHW and NHWC:
//!
//! | op | semantics |
//! |---|---|
//! | [`resize_grad`] | ONNX Runtime `ResizeGrad` (linear / nearest, five coordinate modes, scales) |
//! | [`resize_bilinear_grad`], [`resize_nearest_neighbor_grad`] | TensorFlow's resize grads |
//! | [`conv2d_backprop_input`] | TensorFlow `Conv2DBackpropInput` (groups, dilations, SAME/VALID/explicit) |
//! | [`conv2d_backprop_filter`] | TensorFlow `Conv2DBackpropFilter` (same attributes; HWIO or OIHW `dw`) |
//! | [`max_pool_grad`], [`max_pool_grad_with_argmax`] | TensorFlow `MaxPoolGrad` (TF CPU argmax rule) |
//!
//! plus the forwards ([`resize`], [`conv2d`], [`max_pool`]) so a training step runs end to end.
//! The contract is `SPEC.md` (shared with the project); every op validates its arguments and
//! returns [`Error`] naming the op, the argument and the values, never panicking on user input.
//!
//! The functions at the crate root run on the CPU over host slices. Results are deterministic:
//! each output element is written once, in a fixed summation order.
//!
//! Element types ([`Element`]): [`f16`](struct@f16) and [`bf16`] accumulate in `f32` and
//! round once at the store (to nearest, ties to even); `f32` and `f64` accumulate in
//! themselves. Against an f64 reference on the same rounded inputs the results are within a
//! relative L2 error of 1e-10 (f64), 1e-5 (f32), 2e-3 (f16) and 1e-2 (bf16), the SPEC's
//! tolerances.
//!
//! With the `candle` feature, `gradops::candle` has candle-`Tensor` versions of the forwards
//! whose backward passes are these ops, for training with candle's autograd (`candle-cuda`:
//! on candle's CUDA device too).

#![warn(missing_docs)]

#[cfg(feature = "candle")]
pub mod candle;
pub mod cuda;
pub mod dtype;
pub mod error;
pub mod geometry;
pub mod ops;
pub mod tensor;

pub(crate) mod cpu;

pub use cpu::simd::{
    detected_simd_level, set_max_simd_level, simd_cap, simd_level, SimdLevel, CPU_SIMD_ENV,
};
pub use dtype::{DType, Element};
pub use error::{Error, Result};
pub use geometry::{
    CoordinateTransform, DimRounding, NearestMode, Padding, ResizeAttrs, ResizeMode, WindowAttrs,
};
pub use half::{bf16, f16};
pub use ops::conv2d::{
    conv2d, conv2d_backprop_filter, conv2d_backprop_filter_into, conv2d_backprop_input,
    conv2d_backprop_input_into, conv2d_into, Conv2dAttrs, F32Precision, FilterLayout, FilterRef,
};
pub use ops::max_pool::{
    max_pool, max_pool_grad, max_pool_grad_into, max_pool_grad_with_argmax,
    max_pool_grad_with_argmax_into, MaxPoolAttrs,
};
pub use ops::resize::{
    resize, resize_bilinear, resize_bilinear_grad, resize_grad, resize_grad_into,
    resize_nearest_neighbor, resize_nearest_neighbor_grad, TfResizeAttrs,
};
pub use tensor::{Dims, Layout, Tensor, TensorRef};

/// The README's code blocks, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

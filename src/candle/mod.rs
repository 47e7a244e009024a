//! candle-[`Tensor`] functions whose backward passes are gradops' (feature `candle`).
//!
//! candle's own backward passes for these ops are missing or wrong (candle 0.11:
//! `max_pool2d` backward only for kernel == stride, and then 0.25 instead of 1 at a 2x2
//! window's max; no `upsample_bilinear2d` backward; `upsample_nearest2d` backward only for
//! equal integer factors; conv2d's input gradient wrong for non-square strided inputs). Each
//! function here is a candle custom op (`CustomOp1`/`CustomOp2`) whose forward is gradops'
//! forward and whose `bwd` runs gradops' gradient op, so `loss.backward()` gives correct,
//! deterministic gradients:
//!
//! | function | forward | backward |
//! |---|---|---|
//! | [`interpolate`] | [`crate::resize`] (every mode of the SPEC, any sizes, optional scales) | [`crate::resize_grad`] |
//! | [`upsample_bilinear2d`] | PyTorch's `upsample_bilinear2d` (`align_corners` or half-pixel) | [`crate::resize_grad`] |
//! | [`upsample_nearest2d`] | nearest with any coordinate transform and nearest mode | [`crate::resize_grad`] |
//! | [`max_pool2d`] | [`crate::max_pool`] (any kernel, stride, padding) | [`crate::max_pool_grad`] (TF argmax rule) |
//! | [`conv2d`] | [`crate::conv2d`] (strides, padding, dilations, groups) | [`crate::conv2d_backprop_input`] and [`crate::conv2d_backprop_filter`] |
//!
//! Tensors are NCHW, as in candle, in `f16`, `bf16`, `f32` or `f64`, on candle's CPU device, and on
//! its CUDA device when gradops' `candle-cuda` feature is on (gradops' kernels on candle's
//! own stream, reading candle's buffers in place). [`resize_grad`] exposes the resize
//! gradient as a differentiable function too (its backward is the forward resize).
//!
//! Layouts: an input that is not contiguous (a transpose, a broadcast, a strided slice) is
//! made contiguous first by candle's differentiable `contiguous()`; a contiguous tensor
//! with an offset (a slice along the batch) is read in place. Errors are candle errors
//! wrapping [`crate::Error`], whose message names the op, the argument and the values.
//!
//! ```
//! use candle_core::{Device, Tensor, Var};
//! use gradops::{MaxPoolAttrs, Padding};
//!
//! let x = Var::from_tensor(&Tensor::arange(0f32, 16., &Device::Cpu)?.reshape((1, 1, 4, 4))?)?;
//! // A 3x3 window with stride 2 and one pixel of padding: candle cannot differentiate it.
//! let attrs = MaxPoolAttrs::new([3, 3]).strides([2, 2]).padding(Padding::Explicit([[1, 1], [1, 1]]));
//! let y = gradops::candle::max_pool2d(&x, &attrs)?;
//! assert_eq!(y.dims(), &[1, 1, 2, 2]);
//! let grads = y.sum_all()?.backward()?;
//! let dx = grads.get(&x).unwrap().flatten_all()?.to_vec1::<f32>()?;
//! // Each window's maximum takes its whole gradient (1, not 0.25).
//! assert_eq!(dx.iter().sum::<f32>(), 4.0);
//! assert_eq!((dx[5], dx[7], dx[13], dx[15]), (1.0, 1.0, 1.0, 1.0));
//! # Ok::<(), candle_core::Error>(())
//! ```

mod cpu;
#[cfg(feature = "candle-cuda")]
mod cuda;

use candle_core::{
    CpuStorage, CudaStorage, CustomOp1, CustomOp2, Layout as CLayout, Shape, Tensor,
};

use crate::{
    Conv2dAttrs, CoordinateTransform, Error, FilterLayout, MaxPoolAttrs, NearestMode, ResizeAttrs,
    ResizeMode,
};

/// A candle error wrapping a gradops one (the message names op, argument and values).
pub(crate) fn wrap(e: Error) -> candle_core::Error {
    candle_core::Error::wrap(e)
}

/// The rank-4 shape of a candle layout, or gradops' rank error.
pub(crate) fn dims4(
    op: &'static str,
    arg: &'static str,
    l: &CLayout,
) -> candle_core::Result<[usize; 4]> {
    crate::tensor::rank4(op, arg, l.dims()).map_err(wrap)
}

/// The element range of a contiguous layout (an offset view is fine), or an error naming the
/// argument: the public functions make their inputs contiguous, so this only guards misuse.
pub(crate) fn contiguous_range(
    op: &'static str,
    arg: &'static str,
    l: &CLayout,
) -> candle_core::Result<std::ops::Range<usize>> {
    match l.contiguous_offsets() {
        Some((start, end)) => Ok(start..end),
        None => Err(wrap(Error::shape(
            op,
            arg,
            format!(
                "is not contiguous (shape {:?}, strides {:?}); call .contiguous() first",
                l.dims(),
                l.stride()
            ),
        ))),
    }
}

/// Resize forward: `x` `[N, C, H, W]` to `[N, C, size.0, size.1]`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resize {
    pub(crate) out_hw: [usize; 2],
    pub(crate) attrs: ResizeAttrs,
}

/// Resize gradient: `dy` `[N, C, Ho, Wo]` to `dx` of `x_shape`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResizeGrad {
    pub(crate) x_shape: [usize; 4],
    pub(crate) attrs: ResizeAttrs,
}

/// Max pool forward.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MaxPool {
    pub(crate) attrs: MaxPoolAttrs,
}

/// Max pool gradient from `(dy, x)`, the argmax recomputed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MaxPoolGrad {
    pub(crate) attrs: MaxPoolAttrs,
}

/// conv2d forward from `(x, w)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conv2d {
    pub(crate) attrs: Conv2dAttrs,
}

/// conv2d input gradient from `(dy, w)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conv2dBackpropInput {
    pub(crate) x_shape: [usize; 4],
    pub(crate) attrs: Conv2dAttrs,
}

/// conv2d weight gradient from `(x, dy)`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Conv2dBackpropFilter {
    pub(crate) w_shape: [usize; 4],
    pub(crate) attrs: Conv2dAttrs,
}

/// Without gradops' `candle-cuda` feature a CUDA tensor gets this error, not candle's generic one.
#[cfg(not(feature = "candle-cuda"))]
fn no_cuda(op: &'static str) -> candle_core::Error {
    wrap(Error::CudaUnavailable {
        reason: format!(
            "{op}: gradops was built without its `candle-cuda` feature, so its candle ops run \
             on candle's CPU device only (enable `candle-cuda` next to candle's `cuda`)"
        ),
    })
}

/// One CUDA forward per op: the real one with `candle-cuda`, else the error above.
#[cfg(feature = "candle-cuda")]
macro_rules! cuda_fwd1 {
    ($op:literal) => {
        fn cuda_fwd(
            &self,
            s: &CudaStorage,
            l: &CLayout,
        ) -> candle_core::Result<(CudaStorage, Shape)> {
            cuda::Run1::run(self, s, l)
        }
    };
}

#[cfg(not(feature = "candle-cuda"))]
macro_rules! cuda_fwd1 {
    ($op:literal) => {
        fn cuda_fwd(
            &self,
            _: &CudaStorage,
            _: &CLayout,
        ) -> candle_core::Result<(CudaStorage, Shape)> {
            Err(no_cuda($op))
        }
    };
}

#[cfg(feature = "candle-cuda")]
macro_rules! cuda_fwd2 {
    ($op:literal) => {
        fn cuda_fwd(
            &self,
            s1: &CudaStorage,
            l1: &CLayout,
            s2: &CudaStorage,
            l2: &CLayout,
        ) -> candle_core::Result<(CudaStorage, Shape)> {
            cuda::Run2::run(self, s1, l1, s2, l2)
        }
    };
}

#[cfg(not(feature = "candle-cuda"))]
macro_rules! cuda_fwd2 {
    ($op:literal) => {
        fn cuda_fwd(
            &self,
            _: &CudaStorage,
            _: &CLayout,
            _: &CudaStorage,
            _: &CLayout,
        ) -> candle_core::Result<(CudaStorage, Shape)> {
            Err(no_cuda($op))
        }
    };
}

impl CustomOp1 for Resize {
    fn name(&self) -> &'static str {
        "gradops-resize"
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &CLayout) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::Run1::run(self, s, l)
    }
    cuda_fwd1!("resize");
    fn bwd(
        &self,
        arg: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        let op = ResizeGrad {
            x_shape: arg.dims4()?.into(),
            attrs: self.attrs,
        };
        Ok(Some(grad.contiguous()?.apply_op1(op)?))
    }
}

impl CustomOp1 for ResizeGrad {
    fn name(&self) -> &'static str {
        "gradops-resize-grad"
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &CLayout) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::Run1::run(self, s, l)
    }
    cuda_fwd1!("resize_grad");
    /// `resize_grad` is linear and its adjoint is the forward resize: double backward works.
    fn bwd(
        &self,
        arg: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        let (_, _, h, w) = arg.dims4()?;
        let op = Resize {
            out_hw: [h, w],
            attrs: self.attrs,
        };
        Ok(Some(grad.contiguous()?.apply_op1(op)?))
    }
}

impl CustomOp1 for MaxPool {
    fn name(&self) -> &'static str {
        "gradops-max-pool"
    }
    fn cpu_fwd(&self, s: &CpuStorage, l: &CLayout) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::Run1::run(self, s, l)
    }
    cuda_fwd1!("max_pool");
    fn bwd(
        &self,
        arg: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<Option<Tensor>> {
        let op = MaxPoolGrad { attrs: self.attrs };
        Ok(Some(grad.contiguous()?.apply_op2_no_bwd(arg, &op)?))
    }
}

impl CustomOp2 for MaxPoolGrad {
    fn name(&self) -> &'static str {
        "gradops-max-pool-grad"
    }
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &CLayout,
        s2: &CpuStorage,
        l2: &CLayout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::Run2::run(self, s1, l1, s2, l2)
    }
    cuda_fwd2!("max_pool_grad");
}

impl CustomOp2 for Conv2d {
    fn name(&self) -> &'static str {
        "gradops-conv2d"
    }
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &CLayout,
        s2: &CpuStorage,
        l2: &CLayout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::Run2::run(self, s1, l1, s2, l2)
    }
    cuda_fwd2!("conv2d");
    fn bwd(
        &self,
        x: &Tensor,
        w: &Tensor,
        _res: &Tensor,
        grad: &Tensor,
    ) -> candle_core::Result<(Option<Tensor>, Option<Tensor>)> {
        let grad = grad.contiguous()?;
        let dx = Conv2dBackpropInput {
            x_shape: x.dims4()?.into(),
            attrs: self.attrs,
        };
        let dw = Conv2dBackpropFilter {
            w_shape: w.dims4()?.into(),
            attrs: self.attrs,
        };
        Ok((
            Some(grad.apply_op2_no_bwd(w, &dx)?),
            Some(x.apply_op2_no_bwd(&grad, &dw)?),
        ))
    }
}

impl CustomOp2 for Conv2dBackpropInput {
    fn name(&self) -> &'static str {
        "gradops-conv2d-backprop-input"
    }
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &CLayout,
        s2: &CpuStorage,
        l2: &CLayout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::Run2::run(self, s1, l1, s2, l2)
    }
    cuda_fwd2!("conv2d_backprop_input");
}

impl CustomOp2 for Conv2dBackpropFilter {
    fn name(&self) -> &'static str {
        "gradops-conv2d-backprop-filter"
    }
    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &CLayout,
        s2: &CpuStorage,
        l2: &CLayout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        cpu::Run2::run(self, s1, l1, s2, l2)
    }
    cuda_fwd2!("conv2d_backprop_filter");
}

/// Resizes `x` (`[N, C, H, W]`) to `[N, C, size.0, size.1]` as ONNX `Resize` with `attrs`
/// (linear or nearest; `half_pixel`, `pytorch_half_pixel`, `align_corners`, `asymmetric`,
/// `tf_half_pixel_for_nn`; every nearest mode; optional scales, then `size` must be
/// `floor(in * scale)`). Differentiable: the backward is [`crate::resize_grad`].
pub fn interpolate(
    x: &Tensor,
    size: (usize, usize),
    attrs: &ResizeAttrs,
) -> candle_core::Result<Tensor> {
    x.contiguous()?.apply_op1(Resize {
        out_hw: [size.0, size.1],
        attrs: *attrs,
    })
}

/// The gradient of [`interpolate`] as a differentiable function of `dy` (`[N, C, Ho, Wo]`):
/// [`crate::resize_grad`] to `x_shape`. It is linear, and its backward is the forward resize
/// (its adjoint), so gradients of gradients work (candle computes them with
/// `CANDLE_GRAD_DO_NOT_DETACH=1`).
pub fn resize_grad(
    dy: &Tensor,
    x_shape: [usize; 4],
    attrs: &ResizeAttrs,
) -> candle_core::Result<Tensor> {
    dy.contiguous()?.apply_op1(ResizeGrad {
        x_shape,
        attrs: *attrs,
    })
}

/// PyTorch's `upsample_bilinear2d` (`F.interpolate(x, size, mode="bilinear")`): with
/// `align_corners` the corners map onto each other, else half-pixel centres (negative
/// source coordinates clamped to 0). Any sizes, up or down. Differentiable.
pub fn upsample_bilinear2d(
    x: &Tensor,
    size: (usize, usize),
    align_corners: bool,
) -> candle_core::Result<Tensor> {
    let ctm = if align_corners {
        CoordinateTransform::AlignCorners
    } else {
        CoordinateTransform::HalfPixel
    };
    interpolate(
        x,
        size,
        &ResizeAttrs::new(ResizeMode::Linear).coordinate_transformation_mode(ctm),
    )
}

/// Nearest-neighbour resize with any coordinate transform and nearest mode. PyTorch's
/// `nearest` (and candle's `upsample_nearest2d`) is `Asymmetric` + `Floor`; PyTorch's
/// `nearest-exact` is `TfHalfPixelForNn` + `Floor`; ONNX's default is `HalfPixel` +
/// `RoundPreferFloor`. Any sizes. Differentiable: each input cell receives the sum of the
/// gradients of the outputs that copied it.
pub fn upsample_nearest2d(
    x: &Tensor,
    size: (usize, usize),
    coordinate_transformation_mode: CoordinateTransform,
    nearest_mode: NearestMode,
) -> candle_core::Result<Tensor> {
    interpolate(
        x,
        size,
        &ResizeAttrs::new(ResizeMode::Nearest)
            .coordinate_transformation_mode(coordinate_transformation_mode)
            .nearest_mode(nearest_mode),
    )
}

/// Max pooling of `x` (`[N, C, H, W]`) with any window, stride and padding (`VALID`,
/// `SAME`, or explicit pads smaller than the window; padded cells never win, as PyTorch's
/// `-inf` padding). PyTorch's `max_pool2d(x, k, s, p)` is
/// `MaxPoolAttrs::new([k, k]).strides([s, s]).padding(Padding::Explicit([[p, p], [p, p]]))`.
/// Differentiable: each window's gradient goes to its first maximum (TF's argmax rule).
pub fn max_pool2d(x: &Tensor, attrs: &MaxPoolAttrs) -> candle_core::Result<Tensor> {
    x.contiguous()?.apply_op1(MaxPool { attrs: *attrs })
}

/// 2-D convolution (cross-correlation) of `x` (`[N, C_in, H, W]`) with the filter `w`, in
/// `attrs.filter_layout` order: `FilterLayout::Oihw` for candle's and PyTorch's
/// `[C_out, C_in/groups, kh, kw]`, `Hwio` (the default of [`Conv2dAttrs`]) for TensorFlow's.
/// Any strides, dilations, padding (`VALID`, `SAME`, explicit, non-square) and groups
/// (`C_in / w`'s in-channels). Differentiable in `x` and `w`.
/// Both filter layouts are read in place, on the CPU and on CUDA.
pub fn conv2d(x: &Tensor, w: &Tensor, attrs: &Conv2dAttrs) -> candle_core::Result<Tensor> {
    x.contiguous()?
        .apply_op2(&w.contiguous()?, Conv2d { attrs: *attrs })
}

/// [`Conv2dAttrs`] for candle's OIHW weights: `Conv2dAttrs::default()` with
/// `filter_layout(FilterLayout::Oihw)`.
pub fn oihw() -> Conv2dAttrs {
    Conv2dAttrs::default().filter_layout(FilterLayout::Oihw)
}

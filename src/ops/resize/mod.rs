//! Resize ops: ONNX `ResizeGrad` ([`resize_grad`]), TensorFlow's `ResizeBilinearGrad` and
//! `ResizeNearestNeighborGrad`, and their forwards.
//!
//! Every one of them is the same separable gather over two per-axis tables
//! ([`ResizePlan`]): the forward reads the forward map, the
//! gradient its transpose. Each output element is written once; results are deterministic.

pub(crate) mod cpu_kernel;

use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::geometry::resize::{normalize_scales, ResizeAttrs, ResizeMode, ResizePlan};
use crate::tensor::{check_buffer, Dims, Layout, Tensor, TensorRef};

/// TensorFlow's resize attributes (`align_corners`, `half_pixel_centers`; both false by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TfResizeAttrs {
    /// Align the corner pixels of input and output.
    pub align_corners: bool,
    /// Sample at pixel centres.
    pub half_pixel_centers: bool,
}

impl TfResizeAttrs {
    /// Sets `align_corners`.
    pub fn align_corners(mut self, v: bool) -> Self {
        self.align_corners = v;
        self
    }
    /// Sets `half_pixel_centers`.
    pub fn half_pixel_centers(mut self, v: bool) -> Self {
        self.half_pixel_centers = v;
        self
    }

    /// The ONNX-form attributes of the TF op `op` in `mode` (SPEC table); both flags set is
    /// an error, as in TF.
    pub fn to_onnx(&self, op: &'static str, mode: ResizeMode) -> Result<ResizeAttrs> {
        ResizeAttrs::from_tf(op, mode, self.align_corners, self.half_pixel_centers)
    }
}

impl ResizeAttrs {
    /// Sets `scales` from an ONNX list (`[1, 1, sh, sw]` or `[sh, sw]`), validating its form.
    pub fn with_onnx_scales(self, op: &'static str, scales: &[f64]) -> Result<Self> {
        Ok(self.scales(Some(normalize_scales(op, scales)?)))
    }
}

/// Validates a resize gradient and returns its plan (shared by the CPU and CUDA paths).
///
/// `dy_shape` and `x_shape` are in `layout` order.
pub fn plan_resize_grad<T: Element>(
    op: &'static str,
    dy_shape: [usize; 4],
    x_shape: [usize; 4],
    layout: Layout,
    attrs: &ResizeAttrs,
) -> Result<ResizePlan<T::Acc>> {
    let (dy, x) = (layout.dims(dy_shape), layout.dims(x_shape));
    check_nc(op, dy, x)?;
    dy.len(op, "dy")?;
    x.len(op, "x")?;
    ResizePlan::backward(op, x, dy, attrs)
}

/// Validates a forward resize of `x` to `out_hw` and returns its plan.
pub fn plan_resize<T: Element>(
    op: &'static str,
    x_shape: [usize; 4],
    out_hw: [usize; 2],
    layout: Layout,
    attrs: &ResizeAttrs,
) -> Result<ResizePlan<T::Acc>> {
    let x = layout.dims(x_shape);
    let y = Dims {
        h: out_hw[0],
        w: out_hw[1],
        ..x
    };
    x.len(op, "x")?;
    y.len(op, "size")?;
    ResizePlan::forward(op, x, y, attrs)
}

fn check_nc(op: &'static str, dy: Dims, x: Dims) -> Result<()> {
    if dy.n != x.n || dy.c != x.c {
        return Err(Error::shape(
            op,
            "dy",
            format!(
                "batch and channels of dy (N={}, C={}) must equal those of x (N={}, C={})",
                dy.n, dy.c, x.n, x.c
            ),
        ));
    }
    Ok(())
}

/// Runs a planned resize gather on the CPU: `dst` is fully written.
pub fn run_plan_cpu<T: Element>(
    op: &'static str,
    plan: &ResizePlan<T::Acc>,
    layout: Layout,
    src: &[T],
    dst: &mut [T],
) -> Result<()> {
    check_buffer(op, "input", layout.shape(plan.src), src.len())?;
    check_buffer(op, "output", layout.shape(plan.dst), dst.len())?;
    cpu_kernel::gather(plan, layout, src, dst);
    Ok(())
}

/// ONNX Runtime `ResizeGrad` into a caller buffer: `dx` (x's shape, dy's layout) is fully
/// written.
pub fn resize_grad_into<T: Element>(
    dy: TensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &ResizeAttrs,
    dx: &mut [T],
) -> Result<()> {
    grad_into("resize_grad", dy, x_shape, attrs, dx)
}

fn grad_into<T: Element>(
    op: &'static str,
    dy: TensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &ResizeAttrs,
    dx: &mut [T],
) -> Result<()> {
    dy.check_len(op, "dy")?;
    let plan = plan_resize_grad::<T>(op, dy.shape, x_shape, dy.layout, attrs)?;
    check_buffer(op, "dx", x_shape, dx.len())?;
    cpu_kernel::gather(&plan, dy.layout, dy.data, dx);
    Ok(())
}

fn grad_alloc<T: Element>(
    op: &'static str,
    dy: TensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &ResizeAttrs,
) -> Result<Tensor<T>> {
    let mut dx = Tensor::zeros_checked(op, "x", x_shape, dy.layout)?;
    grad_into(op, dy, x_shape, attrs, &mut dx.data)?;
    Ok(dx)
}

/// ONNX Runtime `ResizeGrad`: the gradient of `resize` with respect to its input.
///
/// `dy` is the output gradient; `x_shape` the forward input's shape (same layout as `dy`).
///
/// ```
/// use gradops::{resize_grad, Layout, ResizeAttrs, ResizeMode, TensorRef};
/// // 1x1x2x2 input upsampled to 4x4 (half_pixel); every dy element is 1.
/// let dy = vec![1.0f32; 16];
/// let dx = resize_grad(
///     TensorRef::new(&dy, [1, 1, 4, 4], Layout::Nchw),
///     [1, 1, 2, 2],
///     &ResizeAttrs::new(ResizeMode::Linear),
/// )?;
/// assert_eq!(dx.data, vec![4.0; 4]); // each input pixel receives a quarter of the mass
/// # Ok::<(), gradops::Error>(())
/// ```
pub fn resize_grad<T: Element>(
    dy: TensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &ResizeAttrs,
) -> Result<Tensor<T>> {
    grad_alloc("resize_grad", dy, x_shape, attrs)
}

/// TensorFlow `ResizeBilinearGrad` (layout from `dy`; TF's default is NHWC).
pub fn resize_bilinear_grad<T: Element>(
    dy: TensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &TfResizeAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "resize_bilinear_grad";
    let a = attrs.to_onnx(OP, ResizeMode::Linear)?;
    grad_alloc(OP, dy, x_shape, &a)
}

/// TensorFlow `ResizeNearestNeighborGrad` (layout from `dy`; TF's default is NHWC).
pub fn resize_nearest_neighbor_grad<T: Element>(
    dy: TensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &TfResizeAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "resize_nearest_neighbor_grad";
    let a = attrs.to_onnx(OP, ResizeMode::Nearest)?;
    grad_alloc(OP, dy, x_shape, &a)
}

/// ONNX `Resize` forward of `x` to spatial size `out_hw` (layout from `x`).
pub fn resize<T: Element>(
    x: TensorRef<'_, T>,
    out_hw: [usize; 2],
    attrs: &ResizeAttrs,
) -> Result<Tensor<T>> {
    forward("resize", x, out_hw, attrs)
}

fn forward<T: Element>(
    op: &'static str,
    x: TensorRef<'_, T>,
    out_hw: [usize; 2],
    attrs: &ResizeAttrs,
) -> Result<Tensor<T>> {
    x.check_len(op, "x")?;
    let plan = plan_resize::<T>(op, x.shape, out_hw, x.layout, attrs)?;
    let mut y = Tensor::zeros_checked(op, "size", x.layout.shape(plan.dst), x.layout)?;
    cpu_kernel::gather(&plan, x.layout, x.data, &mut y.data);
    Ok(y)
}

/// TensorFlow `ResizeBilinear` forward.
pub fn resize_bilinear<T: Element>(
    x: TensorRef<'_, T>,
    size: [usize; 2],
    attrs: &TfResizeAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "resize_bilinear";
    let a = attrs.to_onnx(OP, ResizeMode::Linear)?;
    forward(OP, x, size, &a)
}

/// TensorFlow `ResizeNearestNeighbor` forward.
pub fn resize_nearest_neighbor<T: Element>(
    x: TensorRef<'_, T>,
    size: [usize; 2],
    attrs: &TfResizeAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "resize_nearest_neighbor";
    let a = attrs.to_onnx(OP, ResizeMode::Nearest)?;
    forward(OP, x, size, &a)
}

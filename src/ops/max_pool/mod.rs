//! TensorFlow `MaxPoolGrad` ([`max_pool_grad`]), the forward [`max_pool`] (optionally with
//! argmax indices) and [`max_pool_grad_with_argmax`] for training loops that keep them.
//!
//! Argmax rule (TF CPU): padded cells are never candidates; the first in-bounds cell in
//! row-major order starts as the candidate and a later cell replaces it only if strictly
//! greater. Ties go to the first; a NaN first keeps the gradient; a later NaN never wins.

#[doc(hidden)] // the CPU forward into caller buffers, for `gradops bench`
pub mod cpu_kernel;

use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::geometry::window::{DimRounding, Padding, PoolGeometry, WindowAttrs};
use crate::tensor::{check_buffer, Layout, Tensor, TensorRef};

/// Attributes of the max-pool ops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MaxPoolAttrs {
    /// Window `[kh, kw]`.
    pub ksize: [usize; 2],
    /// Strides, padding (explicit pads must be smaller than the window), tfjs dim rounding.
    /// Dilations must stay `[1, 1]`.
    pub window: WindowAttrs,
}

impl MaxPoolAttrs {
    /// A `kh x kw` window, stride 1, `VALID`.
    pub fn new(ksize: [usize; 2]) -> Self {
        MaxPoolAttrs {
            ksize,
            window: WindowAttrs::default(),
        }
    }
    /// `[stride_h, stride_w]`.
    pub fn strides(mut self, s: [usize; 2]) -> Self {
        self.window.strides = s;
        self
    }
    /// Padding.
    pub fn padding(mut self, p: Padding) -> Self {
        self.window.padding = p;
        self
    }
    /// tfjs `dimRoundingMode` (explicit padding only).
    pub fn dim_rounding(mut self, r: Option<DimRounding>) -> Self {
        self.window.dim_rounding = r;
        self
    }
}

/// Validates a pool of `x_shape` (layout order) and returns its geometry.
pub fn plan_max_pool(
    op: &'static str,
    x_shape: [usize; 4],
    layout: Layout,
    attrs: &MaxPoolAttrs,
) -> Result<PoolGeometry> {
    let g = PoolGeometry::new(op, layout.dims(x_shape), attrs.ksize, &attrs.window)?;
    g.input_dims().len(op, "x")?;
    Ok(g)
}

/// Validates `max_pool_grad`: `dy` (and `y` when given) must have the pool's output shape.
pub fn plan_max_pool_grad(
    dy_shape: [usize; 4],
    x_shape: [usize; 4],
    y_shape: Option<[usize; 4]>,
    layout: Layout,
    attrs: &MaxPoolAttrs,
) -> Result<PoolGeometry> {
    const OP: &str = "max_pool_grad";
    let g = plan_max_pool(OP, x_shape, layout, attrs)?;
    let want = layout.shape(g.output_dims());
    if dy_shape != want {
        return Err(Error::shape(
            OP,
            "dy",
            format!("shape {dy_shape:?} differs from the pool's output shape {want:?} (x {x_shape:?}, ksize {:?}, strides {:?}, padding {:?})", attrs.ksize, attrs.window.strides, attrs.window.padding),
        ));
    }
    if let Some(ys) = y_shape {
        if ys != want {
            return Err(Error::shape(
                OP,
                "y",
                format!("shape {ys:?} differs from the pool's output shape {want:?}"),
            ));
        }
    }
    Ok(g)
}

/// Validates `max_pool_grad_with_argmax` (shared by CPU and CUDA): `dy` must have the pool's
/// output shape.
pub fn plan_max_pool_grad_with_argmax(
    dy_shape: [usize; 4],
    x_shape: [usize; 4],
    layout: Layout,
    attrs: &MaxPoolAttrs,
) -> Result<PoolGeometry> {
    const OP: &str = "max_pool_grad_with_argmax";
    let g = plan_max_pool(OP, x_shape, layout, attrs)?;
    let want = layout.shape(g.output_dims());
    if dy_shape != want {
        return Err(Error::shape(
            OP,
            "dy",
            format!("shape {dy_shape:?} differs from the pool's output shape {want:?}"),
        ));
    }
    Ok(g)
}

/// Max pool forward; with `want_argmax`, also the argmax of each window as a flat index into
/// `x` (batch included, in x's layout; `-1` for a window with no in-bounds cell).
pub fn max_pool<T: Element>(
    x: TensorRef<'_, T>,
    attrs: &MaxPoolAttrs,
    want_argmax: bool,
) -> Result<(Tensor<T>, Option<Vec<i64>>)> {
    const OP: &str = "max_pool";
    x.check_len(OP, "x")?;
    let g = plan_max_pool(OP, x.shape, x.layout, attrs)?;
    let mut y = Tensor::zeros_checked(OP, "y", x.layout.shape(g.output_dims()), x.layout)?;
    let mut arg = vec![0i64; if want_argmax { y.data.len() } else { 0 }];
    cpu_kernel::forward(
        &g,
        x.layout,
        x.data,
        &mut y.data,
        want_argmax.then_some(&mut arg[..]),
    );
    Ok((y, want_argmax.then_some(arg)))
}

/// TensorFlow `MaxPoolGrad`: routes each `dy` to its window's argmax in `x` (recomputed).
/// `y`, the forward output, is only shape-checked. `dx` has x's shape, fully written.
///
/// ```
/// use gradops::{max_pool_grad, Layout, MaxPoolAttrs, TensorRef};
/// // 2x2 window over a 2x2 image: the max (3.0, index 2) takes the whole gradient.
/// let x = [1.0f32, 2.0, 3.0, 0.5];
/// let dy = [10.0f32];
/// let dx = max_pool_grad(
///     TensorRef::new(&dy, [1, 1, 1, 1], Layout::Nhwc),
///     TensorRef::new(&x, [1, 2, 2, 1], Layout::Nhwc),
///     None,
///     &MaxPoolAttrs::new([2, 2]).strides([2, 2]),
/// )?;
/// assert_eq!(dx.data, vec![0.0, 0.0, 10.0, 0.0]);
/// # Ok::<(), gradops::Error>(())
/// ```
pub fn max_pool_grad<T: Element>(
    dy: TensorRef<'_, T>,
    x: TensorRef<'_, T>,
    y: Option<TensorRef<'_, T>>,
    attrs: &MaxPoolAttrs,
) -> Result<Tensor<T>> {
    let mut dx = Tensor::zeros_checked("max_pool_grad", "x", x.shape, x.layout)?;
    max_pool_grad_into(dy, x, y, attrs, &mut dx.data)?;
    Ok(dx)
}

/// [`max_pool_grad`] into a caller buffer (x's shape), fully written.
pub fn max_pool_grad_into<T: Element>(
    dy: TensorRef<'_, T>,
    x: TensorRef<'_, T>,
    y: Option<TensorRef<'_, T>>,
    attrs: &MaxPoolAttrs,
    dx: &mut [T],
) -> Result<()> {
    const OP: &str = "max_pool_grad";
    dy.check_len(OP, "dy")?;
    x.check_len(OP, "x")?;
    check_layouts(OP, dy.layout, x.layout)?;
    if let Some(y) = &y {
        y.check_len(OP, "y")?;
        check_layouts(OP, y.layout, x.layout)?;
    }
    let g = plan_max_pool_grad(dy.shape, x.shape, y.map(|y| y.shape), x.layout, attrs)?;
    check_buffer(OP, "dx", x.shape, dx.len())?;
    cpu_kernel::grad(&g, x.layout, dy.data, x.data, dx);
    Ok(())
}

/// Gradient from stored argmax indices (as [`max_pool`] returns them): no recompute.
/// `x_shape` is the forward input's shape (dy's layout). Every index is range-checked: an index
/// outside its window's plane (or image) and channel is an error, not an out-of-bounds write.
/// (The CUDA version, a gather, cannot report without a host synchronisation: there such an
/// index routes nothing, and nothing is read or written out of bounds.)
pub fn max_pool_grad_with_argmax<T: Element>(
    dy: TensorRef<'_, T>,
    argmax: &[i64],
    x_shape: [usize; 4],
    attrs: &MaxPoolAttrs,
) -> Result<Tensor<T>> {
    let mut dx = Tensor::zeros_checked("max_pool_grad_with_argmax", "x", x_shape, dy.layout)?;
    max_pool_grad_with_argmax_into(dy, argmax, x_shape, attrs, &mut dx.data)?;
    Ok(dx)
}

/// [`max_pool_grad_with_argmax`] into a caller buffer (x's shape), fully written; on a bad
/// index it is filled with NaN and the error returned.
pub fn max_pool_grad_with_argmax_into<T: Element>(
    dy: TensorRef<'_, T>,
    argmax: &[i64],
    x_shape: [usize; 4],
    attrs: &MaxPoolAttrs,
    dx: &mut [T],
) -> Result<()> {
    const OP: &str = "max_pool_grad_with_argmax";
    dy.check_len(OP, "dy")?;
    let g = plan_max_pool_grad_with_argmax(dy.shape, x_shape, dy.layout, attrs)?;
    if argmax.len() != dy.data.len() {
        return Err(Error::BufferLen {
            op: OP,
            arg: "argmax",
            expected: dy.data.len(),
            got: argmax.len(),
            shape: dy.shape.to_vec(),
        });
    }
    check_buffer(OP, "dx", x_shape, dx.len())?;
    cpu_kernel::grad_with_argmax(&g, dy.layout, dy.data, argmax, dx)
}

fn check_layouts(op: &'static str, a: Layout, x: Layout) -> Result<()> {
    if a != x {
        return Err(Error::shape(
            op,
            "dy",
            format!("layout {a} differs from x's layout {x}"),
        ));
    }
    Ok(())
}

//! TensorFlow `Conv2DBackpropInput` ([`conv2d_backprop_input`]), `Conv2DBackpropFilter`
//! ([`conv2d_backprop_filter`]) and the forward [`conv2d`].

mod conv_direct;
pub(crate) mod cpu_kernel;
mod filter_direct;
pub(crate) mod filter_kernel;
mod phase_winograd;
mod winograd4;
mod winograd_nhwc;

use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::geometry::window::{ConvGeometry, DimRounding, Padding, WindowAttrs};
use crate::tensor::{check_buffer, Layout, Tensor, TensorRef};
use std::borrow::Cow;

/// How the filter is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FilterLayout {
    /// `[kh, kw, in_channels/groups, out_channels]` (TensorFlow's, the default in every layout).
    #[default]
    Hwio,
    /// `[out_channels, in_channels/groups, kh, kw]` (PyTorch's).
    Oihw,
}

/// How `f32` convolutions may multiply (like PyTorch's `allow_tf32`). An allowance, not a
/// requirement: a path without the reduced-precision arithmetic stays exact.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum F32Precision {
    /// Full f32 products (SPEC's f32 tolerance, relative L2 1e-5). The default.
    #[default]
    Exact,
    /// TF32 products allowed: on CUDA compute_80+ images, `f32` `conv2d` and
    /// `conv2d_backprop_input` run the tensor-core kernels with one TF32 product per term
    /// (operands rounded to 10 mantissa bits, f32 accumulation; tolerance relative L2 2e-3).
    /// The CPU path, compute_75 images, `conv2d_backprop_filter` and every other element
    /// type ignore it (exact).
    Tf32,
}

impl F32Precision {
    /// The case-format / command-line name (`"exact"`, `"tf32"`).
    pub fn name(self) -> &'static str {
        match self {
            F32Precision::Exact => "exact",
            F32Precision::Tf32 => "tf32",
        }
    }
}

/// Attributes of `conv2d` and `conv2d_backprop_input`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Conv2dAttrs {
    /// Strides, dilations, padding and tfjs dim rounding.
    pub window: WindowAttrs,
    /// Filter storage order.
    pub filter_layout: FilterLayout,
    /// Whether f32 may use TF32 products (default exact; see [`F32Precision`]).
    pub f32_precision: F32Precision,
}

impl Conv2dAttrs {
    /// `[stride_h, stride_w]` (default `[1, 1]`).
    pub fn strides(mut self, s: [usize; 2]) -> Self {
        self.window.strides = s;
        self
    }
    /// `[dilation_h, dilation_w]` (default `[1, 1]`).
    pub fn dilations(mut self, d: [usize; 2]) -> Self {
        self.window.dilations = d;
        self
    }
    /// Padding (default `VALID`).
    pub fn padding(mut self, p: Padding) -> Self {
        self.window.padding = p;
        self
    }
    /// tfjs `dimRoundingMode` (explicit padding only).
    pub fn dim_rounding(mut self, r: Option<DimRounding>) -> Self {
        self.window.dim_rounding = r;
        self
    }
    /// Filter storage order (default HWIO).
    pub fn filter_layout(mut self, f: FilterLayout) -> Self {
        self.filter_layout = f;
        self
    }
    /// f32 arithmetic allowance (default [`F32Precision::Exact`]).
    pub fn f32_precision(mut self, p: F32Precision) -> Self {
        self.f32_precision = p;
        self
    }
}

/// A borrowed filter: data and shape in `attrs.filter_layout` order.
#[derive(Debug, Clone, Copy)]
pub struct FilterRef<'a, T> {
    /// Elements, row-major.
    pub data: &'a [T],
    /// Shape (HWIO or OIHW, as the attributes say).
    pub shape: [usize; 4],
}

impl<'a, T> FilterRef<'a, T> {
    /// A filter view.
    pub fn new(data: &'a [T], shape: [usize; 4]) -> Self {
        FilterRef { data, shape }
    }
}

fn hwio_shape(shape: [usize; 4], fl: FilterLayout) -> [usize; 4] {
    match fl {
        FilterLayout::Hwio => shape,
        FilterLayout::Oihw => [shape[2], shape[3], shape[1], shape[0]],
    }
}

/// The filter in HWIO order (borrowed when it already is).
pub fn filter_as_hwio<'a, T: Element>(f: FilterRef<'a, T>, fl: FilterLayout) -> Cow<'a, [T]> {
    match fl {
        FilterLayout::Hwio => Cow::Borrowed(f.data),
        FilterLayout::Oihw => {
            let [o, i, kh, kw] = f.shape;
            let mut out = vec![T::default(); f.data.len()];
            for oc in 0..o {
                for ic in 0..i {
                    for y in 0..kh {
                        for x in 0..kw {
                            out[((y * kw + x) * i + ic) * o + oc] =
                                f.data[((oc * i + ic) * kh + y) * kw + x];
                        }
                    }
                }
            }
            Cow::Owned(out)
        }
    }
}

/// Validates `conv2d_backprop_input` (shared by CPU and CUDA): `dy_shape` and `input_shape`
/// in `layout` order, `filter_shape` in the attributes' filter layout.
pub fn plan_conv2d_backprop_input(
    dy_shape: [usize; 4],
    filter_shape: [usize; 4],
    input_shape: [usize; 4],
    layout: Layout,
    attrs: &Conv2dAttrs,
) -> Result<ConvGeometry> {
    const OP: &str = "conv2d_backprop_input";
    let input = layout.dims(input_shape);
    let g = ConvGeometry::new(
        OP,
        input,
        hwio_shape(filter_shape, attrs.filter_layout),
        &attrs.window,
    )?;
    check_dy(OP, &g, dy_shape, layout, "input_shape", input_shape)?;
    Ok(g)
}

/// Validates `conv2d_backprop_filter` (shared by CPU and CUDA): `x_shape` and `dy_shape` in
/// `layout` order, `filter_shape` (the shape of `dw`) in the attributes' filter layout.
pub fn plan_conv2d_backprop_filter(
    x_shape: [usize; 4],
    dy_shape: [usize; 4],
    filter_shape: [usize; 4],
    layout: Layout,
    attrs: &Conv2dAttrs,
) -> Result<ConvGeometry> {
    const OP: &str = "conv2d_backprop_filter";
    let g = ConvGeometry::new(
        OP,
        layout.dims(x_shape),
        hwio_shape(filter_shape, attrs.filter_layout),
        &attrs.window,
    )
    .map_err(|e| match e {
        // The geometry names the forward's arguments; here the filter is `filter_shape`
        // and the input is `x`.
        Error::Shape { op, arg, msg } => Error::Shape {
            op,
            arg: rename_arg(arg),
            msg,
        },
        Error::Overflow { op, arg, msg } => Error::Overflow {
            op,
            arg: rename_arg(arg),
            msg,
        },
        e => e,
    })?;
    check_dy(OP, &g, dy_shape, layout, "x", x_shape)?;
    Ok(g)
}

fn rename_arg(arg: &'static str) -> &'static str {
    match arg {
        "filter" => "filter_shape",
        "input_shape" => "x",
        a => a,
    }
}

/// Checks `dy_shape` (in `layout`) against the conv output of `g`; `src`/`src_shape` name the
/// shape the geometry came from (for the message).
fn check_dy(
    op: &'static str,
    g: &ConvGeometry,
    dy_shape: [usize; 4],
    layout: Layout,
    src: &str,
    src_shape: [usize; 4],
) -> Result<()> {
    let (want, dy) = (g.output_dims(), layout.dims(dy_shape));
    if dy.n != want.n {
        return Err(Error::shape(
            op,
            "dy",
            format!("batch {} differs from {src}'s batch {}", dy.n, want.n),
        ));
    }
    if dy.c != want.c {
        return Err(Error::shape(
            op,
            "dy",
            format!(
                "has {} channels, but the filter has {} output channels",
                dy.c, want.c
            ),
        ));
    }
    if dy.h != want.h || dy.w != want.w {
        return Err(Error::shape(
            op,
            "dy",
            format!(
                "computed output size {} x {} from {src} {:?}, got {} x {} (dy shape {:?})",
                want.h, want.w, src_shape, dy.h, dy.w, dy_shape
            ),
        ));
    }
    Ok(())
}

/// Validates `conv2d` forward and returns its geometry.
pub fn plan_conv2d(
    x_shape: [usize; 4],
    filter_shape: [usize; 4],
    layout: Layout,
    attrs: &Conv2dAttrs,
) -> Result<ConvGeometry> {
    ConvGeometry::new(
        "conv2d",
        layout.dims(x_shape),
        hwio_shape(filter_shape, attrs.filter_layout),
        &attrs.window,
    )
}

/// `Conv2DBackpropInput` into a caller buffer `dx` (`input_shape`, dy's layout), fully written.
pub fn conv2d_backprop_input_into<T: Element>(
    dy: TensorRef<'_, T>,
    filter: FilterRef<'_, T>,
    input_shape: [usize; 4],
    attrs: &Conv2dAttrs,
    dx: &mut [T],
) -> Result<()> {
    const OP: &str = "conv2d_backprop_input";
    dy.check_len(OP, "dy")?;
    check_buffer(OP, "filter", filter.shape, filter.data.len())?;
    let g = plan_conv2d_backprop_input(dy.shape, filter.shape, input_shape, dy.layout, attrs)?;
    check_buffer(OP, "dx", input_shape, dx.len())?;
    if dy.data.is_empty() || filter.data.is_empty() {
        // Nothing maps (an empty dy, or a filter with a zero-sized axis): an all-zero dx.
        dx.fill(T::default());
        return Ok(());
    }
    let w = filter_as_hwio(filter, attrs.filter_layout);
    crate::cpu::in_pool(|| cpu_kernel::backprop_input(&g, dy.layout, dy.data, &w, dx));
    Ok(())
}

/// TensorFlow `Conv2DBackpropInput`: the gradient of `conv2d` with respect to its input.
///
/// ```
/// use gradops::{conv2d_backprop_input, Conv2dAttrs, FilterRef, Layout, Padding, TensorRef};
/// // 1x1 image channels 1 -> 2, 3x3 kernel of ones, SAME: dx sums dy over each 3x3 neighbourhood.
/// let dy = vec![1.0f64; 2 * 4 * 4];
/// let w = vec![1.0f64; 3 * 3 * 1 * 2];
/// let dx = conv2d_backprop_input(
///     TensorRef::new(&dy, [1, 4, 4, 2], Layout::Nhwc),
///     FilterRef::new(&w, [3, 3, 1, 2]),
///     [1, 4, 4, 1],
///     &Conv2dAttrs::default().padding(Padding::Same),
/// )?;
/// assert_eq!(dx.data[0], 8.0); // corner: 2x2 neighbours x 2 channels
/// assert_eq!(dx.data[5], 18.0); // interior: 3x3 x 2
/// # Ok::<(), gradops::Error>(())
/// ```
pub fn conv2d_backprop_input<T: Element>(
    dy: TensorRef<'_, T>,
    filter: FilterRef<'_, T>,
    input_shape: [usize; 4],
    attrs: &Conv2dAttrs,
) -> Result<Tensor<T>> {
    let mut dx = Tensor::zeros_checked(
        "conv2d_backprop_input",
        "input_shape",
        input_shape,
        dy.layout,
    )?;
    conv2d_backprop_input_into(dy, filter, input_shape, attrs, &mut dx.data)?;
    Ok(dx)
}

/// `Conv2DBackpropFilter` into a caller buffer `dw` (`filter_shape`, in the attributes' filter
/// layout), fully written. `x` and `dy` share one layout.
pub fn conv2d_backprop_filter_into<T: Element>(
    x: TensorRef<'_, T>,
    dy: TensorRef<'_, T>,
    filter_shape: [usize; 4],
    attrs: &Conv2dAttrs,
    dw: &mut [T],
) -> Result<()> {
    const OP: &str = "conv2d_backprop_filter";
    x.check_len(OP, "x")?;
    dy.check_len(OP, "dy")?;
    if dy.layout != x.layout {
        return Err(Error::shape(
            OP,
            "dy",
            format!("layout {} differs from x's layout {}", dy.layout, x.layout),
        ));
    }
    let g = plan_conv2d_backprop_filter(x.shape, dy.shape, filter_shape, x.layout, attrs)?;
    check_buffer(OP, "dw", filter_shape, dw.len())?;
    crate::cpu::in_pool(|| {
        filter_kernel::backprop_filter(&g, x.layout, x.data, dy.data, attrs.filter_layout, dw)
    });
    Ok(())
}

/// TensorFlow `Conv2DBackpropFilter`: the gradient of `conv2d` with respect to its filter,
/// `dw[ky, kx, ci, co] = sum over n, oy, ox of x[n, ci', iy, ix] * dy[n, co, oy, ox]` (with
/// `ci' = group(co) * ci_per_group + ci` and `iy, ix` the tap's input pixel; padding adds 0).
///
/// The result has `filter_shape` in `attrs.filter_layout` order (HWIO or OIHW); its `layout`
/// field repeats x's and says nothing about the filter. The reduction over `N x OH x OW` is
/// split in a fixed way and summed in a fixed order: results do not depend on the thread
/// count. `f16` accumulates in `f32` and rounds once.
///
/// ```
/// use gradops::{conv2d_backprop_filter, Conv2dAttrs, Layout, Padding, TensorRef};
/// // x of ones, dy of ones, 3x3 SAME on 4x4: each tap counts the pixels it sees.
/// let x = vec![1.0f64; 4 * 4];
/// let dy = vec![1.0f64; 4 * 4];
/// let dw = conv2d_backprop_filter(
///     TensorRef::new(&x, [1, 4, 4, 1], Layout::Nhwc),
///     TensorRef::new(&dy, [1, 4, 4, 1], Layout::Nhwc),
///     [3, 3, 1, 1],
///     &Conv2dAttrs::default().padding(Padding::Same),
/// )?;
/// assert_eq!(dw.data[4], 16.0); // the centre tap sees every pixel
/// assert_eq!(dw.data[0], 9.0); // a corner tap sees a 3x3 block
/// # Ok::<(), gradops::Error>(())
/// ```
pub fn conv2d_backprop_filter<T: Element>(
    x: TensorRef<'_, T>,
    dy: TensorRef<'_, T>,
    filter_shape: [usize; 4],
    attrs: &Conv2dAttrs,
) -> Result<Tensor<T>> {
    let mut dw = Tensor::zeros_checked(
        "conv2d_backprop_filter",
        "filter_shape",
        filter_shape,
        x.layout,
    )?;
    conv2d_backprop_filter_into(x, dy, filter_shape, attrs, &mut dw.data)?;
    Ok(dw)
}

/// `conv2d` into a caller buffer `y` (the output shape, x's layout), fully written.
pub fn conv2d_into<T: Element>(
    x: TensorRef<'_, T>,
    filter: FilterRef<'_, T>,
    attrs: &Conv2dAttrs,
    y: &mut [T],
) -> Result<()> {
    const OP: &str = "conv2d";
    x.check_len(OP, "x")?;
    check_buffer(OP, "filter", filter.shape, filter.data.len())?;
    let g = plan_conv2d(x.shape, filter.shape, x.layout, attrs)?;
    check_buffer(OP, "y", x.layout.shape(g.output_dims()), y.len())?;
    if x.data.is_empty() || filter.data.is_empty() {
        // Every output is an empty sum.
        y.fill(T::default());
        return Ok(());
    }
    let w = filter_as_hwio(filter, attrs.filter_layout);
    crate::cpu::in_pool(|| cpu_kernel::forward(&g, x.layout, x.data, &w, y));
    Ok(())
}

/// 2-D convolution (cross-correlation, as TF): `y = conv2d(x, filter)`.
pub fn conv2d<T: Element>(
    x: TensorRef<'_, T>,
    filter: FilterRef<'_, T>,
    attrs: &Conv2dAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "conv2d";
    x.check_len(OP, "x")?;
    check_buffer(OP, "filter", filter.shape, filter.data.len())?;
    let g = plan_conv2d(x.shape, filter.shape, x.layout, attrs)?;
    let mut y = Tensor::zeros_checked(OP, "y", x.layout.shape(g.output_dims()), x.layout)?;
    conv2d_into(x, filter, attrs, &mut y.data)?;
    Ok(y)
}

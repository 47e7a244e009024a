//! TensorFlow `Conv2DBackpropInput` ([`conv2d_backprop_input`]) and the forward [`conv2d`].

pub(crate) mod cpu_kernel;

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

/// Attributes of `conv2d` and `conv2d_backprop_input`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Conv2dAttrs {
    /// Strides, dilations, padding and tfjs dim rounding.
    pub window: WindowAttrs,
    /// Filter storage order.
    pub filter_layout: FilterLayout,
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
    let (want, dy) = (g.output_dims(), layout.dims(dy_shape));
    if dy.n != want.n {
        return Err(Error::shape(
            OP,
            "dy",
            format!("batch {} differs from input_shape's batch {}", dy.n, want.n),
        ));
    }
    if dy.c != want.c {
        return Err(Error::shape(
            OP,
            "dy",
            format!(
                "has {} channels, but the filter has {} output channels",
                dy.c, want.c
            ),
        ));
    }
    if dy.h != want.h || dy.w != want.w {
        return Err(Error::shape(
            OP,
            "dy",
            format!(
                "computed output size {} x {} from input_shape {:?}, got {} x {} (dy shape {:?})",
                want.h, want.w, input_shape, dy.h, dy.w, dy_shape
            ),
        ));
    }
    Ok(g)
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
    cpu_kernel::backprop_input(&g, dy.layout, dy.data, &w, dx);
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
    if x.data.is_empty() || filter.data.is_empty() {
        // Every output is an empty sum (y is already zero).
        return Ok(y);
    }
    let w = filter_as_hwio(filter, attrs.filter_layout);
    cpu_kernel::forward(&g, x.layout, x.data, &w, &mut y.data);
    Ok(y)
}

//! The CUDA ops over host slices: upload, run the device op on the process-wide stream,
//! download. Same signatures and validation as the CPU functions they mirror, for
//! `gradops run --device cuda` and tests. Each call synchronises (the download waits).

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::runtime::{probe, stream};
use super::tensor::DeviceTensor;
use crate::geometry::ResizePlan;
use crate::ops::conv2d::{Conv2dAttrs, FilterRef};
use crate::ops::max_pool::MaxPoolAttrs;
use crate::tensor::{check_buffer, check_dims, Layout, Tensor, TensorRef};
use crate::{Element, Error, Result};

fn ready() -> Result<Arc<CudaStream>> {
    probe()?;
    stream()
}

/// `t` on the device, its length checked first (the error naming `op` and `arg`).
fn upload<T: Element>(
    s: &Arc<CudaStream>,
    op: &'static str,
    arg: &'static str,
    t: TensorRef<'_, T>,
) -> Result<DeviceTensor<T>> {
    t.check_len(op, arg)?;
    DeviceTensor::from_host(s, t)
}

/// Mirrors `ops::resize::run_plan_cpu`: the planned gather (or the identity copy) on the
/// GPU; `dst` fully written.
pub fn run_resize_plan<T: Element>(
    op: &'static str,
    plan: &ResizePlan<T::Acc>,
    layout: Layout,
    src: &[T],
    dst: &mut [T],
) -> Result<()> {
    check_dims(op, "input", src.len(), plan.src, layout)?;
    check_dims(op, "output", dst.len(), plan.dst, layout)?;
    if dst.is_empty() {
        return Ok(());
    }
    let s = ready()?;
    let ds = upload(
        &s,
        op,
        "input",
        TensorRef::new(src, layout.shape(plan.src), layout),
    )?;
    let mut dd = DeviceTensor::zeros(&s, layout.shape(plan.dst), layout)?;
    super::run_resize_plan(&s, plan, ds.view(), dd.view_mut())?;
    dst.copy_from_slice(&dd.to_host()?.data);
    Ok(())
}

/// Uploads a host filter (its length checked first).
fn upload_filter<T: Element>(
    s: &Arc<CudaStream>,
    op: &'static str,
    f: FilterRef<'_, T>,
) -> Result<DeviceTensor<T>> {
    check_buffer(op, "filter", f.shape, f.data.len())?;
    DeviceTensor::from_host(s, TensorRef::new(f.data, f.shape, Layout::Nchw))
}

/// Mirrors [`crate::conv2d_backprop_input`] (either filter layout, read in place on the
/// device).
pub fn conv2d_backprop_input<T: Element>(
    dy: TensorRef<'_, T>,
    filter: FilterRef<'_, T>,
    input_shape: [usize; 4],
    attrs: &Conv2dAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "conv2d_backprop_input";
    dy.check_len(OP, "dy")?;
    check_buffer(OP, "filter", filter.shape, filter.data.len())?;
    crate::ops::conv2d::plan_conv2d_backprop_input(
        dy.shape,
        filter.shape,
        input_shape,
        dy.layout,
        attrs,
    )?;
    let s = ready()?;
    let (ddy, dw) = (upload(&s, OP, "dy", dy)?, upload_filter(&s, OP, filter)?);
    super::conv2d_backprop_input(&s, ddy.view(), dw.as_filter(), input_shape, attrs)?.to_host()
}

/// Mirrors [`crate::conv2d_backprop_filter`] (`dw` in either filter layout, written by the
/// device's reduce kernel).
pub fn conv2d_backprop_filter<T: Element>(
    x: TensorRef<'_, T>,
    dy: TensorRef<'_, T>,
    filter_shape: [usize; 4],
    attrs: &Conv2dAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "conv2d_backprop_filter";
    if dy.layout != x.layout {
        return Err(Error::shape(
            OP,
            "dy",
            format!("layout {} differs from x's layout {}", dy.layout, x.layout),
        ));
    }
    x.check_len(OP, "x")?;
    dy.check_len(OP, "dy")?;
    crate::ops::conv2d::plan_conv2d_backprop_filter(
        x.shape,
        dy.shape,
        filter_shape,
        x.layout,
        attrs,
    )?;
    let s = ready()?;
    let (dx, ddy) = (upload(&s, OP, "x", x)?, upload(&s, OP, "dy", dy)?);
    super::conv2d_backprop_filter(&s, dx.view(), ddy.view(), filter_shape, attrs)?.to_host()
}

/// Mirrors [`crate::conv2d`].
pub fn conv2d<T: Element>(
    x: TensorRef<'_, T>,
    filter: FilterRef<'_, T>,
    attrs: &Conv2dAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "conv2d";
    x.check_len(OP, "x")?;
    check_buffer(OP, "filter", filter.shape, filter.data.len())?;
    crate::ops::conv2d::plan_conv2d(x.shape, filter.shape, x.layout, attrs)?;
    let s = ready()?;
    let (dx, dw) = (upload(&s, OP, "x", x)?, upload_filter(&s, OP, filter)?);
    super::conv2d(&s, dx.view(), dw.as_filter(), attrs)?.to_host()
}

/// Mirrors [`crate::max_pool`].
pub fn max_pool<T: Element>(
    x: TensorRef<'_, T>,
    attrs: &MaxPoolAttrs,
    want_argmax: bool,
) -> Result<(Tensor<T>, Option<Vec<i64>>)> {
    const OP: &str = "max_pool";
    x.check_len(OP, "x")?;
    crate::ops::max_pool::plan_max_pool(OP, x.shape, x.layout, attrs)?;
    let s = ready()?;
    let dx = upload(&s, OP, "x", x)?;
    let (y, am) = super::max_pool(&s, dx.view(), attrs, want_argmax)?;
    let am = match am {
        Some(a) => Some(a.to_host()?.data),
        None => None,
    };
    Ok((y.to_host()?, am))
}

/// Mirrors [`crate::max_pool_grad`] (`y` only shape-checked).
pub fn max_pool_grad<T: Element>(
    dy: TensorRef<'_, T>,
    x: TensorRef<'_, T>,
    y: Option<TensorRef<'_, T>>,
    attrs: &MaxPoolAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "max_pool_grad";
    if dy.layout != x.layout || y.is_some_and(|y| y.layout != x.layout) {
        return Err(Error::attr(
            OP,
            "layout",
            "dy, x (and y) must share one layout",
        ));
    }
    dy.check_len(OP, "dy")?;
    x.check_len(OP, "x")?;
    if let Some(y) = &y {
        y.check_len(OP, "y")?;
    }
    crate::ops::max_pool::plan_max_pool_grad(
        dy.shape,
        x.shape,
        y.map(|y| y.shape),
        x.layout,
        attrs,
    )?;
    let s = ready()?;
    let (ddy, dx) = (upload(&s, OP, "dy", dy)?, upload(&s, OP, "x", x)?);
    let dyv = match y {
        Some(y) => Some(upload(&s, OP, "y", y)?),
        None => None,
    };
    super::max_pool_grad(
        &s,
        ddy.view(),
        dx.view(),
        dyv.as_ref().map(DeviceTensor::view),
        attrs,
    )?
    .to_host()
}

/// Mirrors [`crate::max_pool_grad_with_argmax`] (but an index outside its window routes
/// nothing instead of failing: see [`super::max_pool_grad_with_argmax_into`]).
pub fn max_pool_grad_with_argmax<T: Element>(
    dy: TensorRef<'_, T>,
    argmax: &[i64],
    x_shape: [usize; 4],
    attrs: &MaxPoolAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "max_pool_grad_with_argmax";
    dy.check_len(OP, "dy")?;
    crate::ops::max_pool::plan_max_pool_grad_with_argmax(dy.shape, x_shape, dy.layout, attrs)?;
    check_buffer(OP, "argmax", dy.shape, argmax.len())?;
    let s = ready()?;
    let ddy = upload(&s, OP, "dy", dy)?;
    let da = DeviceTensor::from_host(&s, TensorRef::new(argmax, dy.shape, dy.layout))?;
    super::max_pool_grad_with_argmax(&s, ddy.view(), da.view(), x_shape, attrs)?.to_host()
}

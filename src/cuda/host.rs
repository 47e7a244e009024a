//! The CUDA ops over host slices: upload, run on the process-wide stream, download.
//! Same signatures and validation as the CPU functions they mirror, for `gradops run
//! --device cuda` and tests. Each call synchronises (the download waits).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr, DevicePtrMut};

use super::ops::{self, upload};
use super::runtime::{cuda_err, probe, stream};
use crate::geometry::ResizePlan;
use crate::ops::conv2d::{
    filter_as_hwio, plan_conv2d, plan_conv2d_backprop_filter, plan_conv2d_backprop_input,
    Conv2dAttrs, FilterRef,
};
use crate::ops::max_pool::{
    plan_max_pool, plan_max_pool_grad, plan_max_pool_grad_with_argmax, MaxPoolAttrs,
};
use crate::tensor::{check_dims, Layout, Tensor, TensorRef};
use crate::{Element, Error, Result};

fn bytes<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: T is f16, bf16, f32, f64 or i64: plain data without padding, all bytes initialised.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

fn from_bytes<T: Copy + Default>(b: &[u8], len: usize) -> Vec<T> {
    let mut out = vec![T::default(); len];
    let n = std::mem::size_of_val(&out[..]);
    // SAFETY: out has exactly n bytes of plain-data T; b holds at least n bytes (the
    // device buffer was allocated for len elements, or 1 byte when len == 0 and n == 0).
    unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), out.as_mut_ptr() as *mut u8, n) };
    out
}

fn ready() -> Result<Arc<CudaStream>> {
    probe()?;
    stream()
}

fn alloc(s: &Arc<CudaStream>, op: &'static str, bytes: usize) -> Result<CudaSlice<u8>> {
    // Zeroed so that nothing stale is ever read back, even on an early error.
    s.alloc_zeros::<u8>(bytes.max(1))
        .map_err(|e| cuda_err(op, "device allocation", e))
}

fn download<T: Copy + Default>(
    s: &Arc<CudaStream>,
    op: &'static str,
    d: &CudaSlice<u8>,
    len: usize,
) -> Result<Vec<T>> {
    let b = s
        .clone_dtoh(d)
        .map_err(|e| cuda_err(op, "device-to-host copy", e))?;
    Ok(from_bytes(&b, len))
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
    let ds = upload(&s, op, bytes(src))?;
    let mut dd = alloc(&s, op, std::mem::size_of_val(dst))?;
    if plan.identity {
        s.memcpy_dtod(&ds, &mut dd)
            .map_err(|e| cuda_err(op, "device-to-device copy", e))?;
    } else {
        let (a, _ga) = ds.device_ptr(&s);
        let (b, _gb) = dd.device_ptr_mut(&s);
        ops::resize_raw::<T>(&s, op, plan, layout, a, b)?;
    }
    let out: Vec<T> = download(&s, op, &dd, dst.len())?;
    dst.copy_from_slice(&out);
    Ok(())
}

/// Mirrors [`crate::conv2d_backprop_input`] (either filter layout; OIHW is converted on
/// the host before upload).
pub fn conv2d_backprop_input<T: Element>(
    dy: TensorRef<'_, T>,
    filter: FilterRef<'_, T>,
    input_shape: [usize; 4],
    attrs: &Conv2dAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "conv2d_backprop_input";
    let g = plan_conv2d_backprop_input(dy.shape, filter.shape, input_shape, dy.layout, attrs)?;
    check_dims(OP, "dy", dy.data.len(), g.output_dims(), dy.layout)?;
    check_dims(
        OP,
        "filter",
        filter.data.len(),
        Layout::Nchw.dims(filter.shape),
        Layout::Nchw,
    )?;
    let n = g.input_dims().len(OP, "input_shape")?;
    if n == 0 {
        return Tensor::from_vec(vec![], input_shape, dy.layout);
    }
    let w = filter_as_hwio(filter, attrs.filter_layout);
    let s = ready()?;
    let (ddy, dw) = (upload(&s, OP, bytes(dy.data))?, upload(&s, OP, bytes(&w))?);
    let mut ddx = alloc(&s, OP, n * std::mem::size_of::<T>())?;
    {
        let (a, _ga) = ddy.device_ptr(&s);
        let (b, _gb) = dw.device_ptr(&s);
        let (c, _gc) = ddx.device_ptr_mut(&s);
        ops::conv_backprop_input_raw::<T>(&s, &g, dy.layout, a, b, c)?;
    }
    Tensor::from_vec(download(&s, OP, &ddx, n)?, input_shape, dy.layout)
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
    let g = plan_conv2d_backprop_filter(x.shape, dy.shape, filter_shape, x.layout, attrs)?;
    check_dims(OP, "x", x.data.len(), g.input_dims(), x.layout)?;
    check_dims(OP, "dy", dy.data.len(), g.output_dims(), x.layout)?;
    let n = Layout::Nchw.dims(filter_shape).len(OP, "filter_shape")?;
    if n == 0 {
        return Tensor::from_vec(vec![], filter_shape, x.layout);
    }
    let s = ready()?;
    let (dx, ddy) = (
        upload(&s, OP, bytes(x.data))?,
        upload(&s, OP, bytes(dy.data))?,
    );
    let mut ddw = alloc(&s, OP, n * std::mem::size_of::<T>())?;
    {
        let (a, _ga) = dx.device_ptr(&s);
        let (b, _gb) = ddy.device_ptr(&s);
        let (c, _gc) = ddw.device_ptr_mut(&s);
        ops::conv_backprop_filter_raw::<T>(&s, &g, x.layout, attrs.filter_layout, a, b, c)?;
    }
    Tensor::from_vec(download(&s, OP, &ddw, n)?, filter_shape, x.layout)
}

/// Mirrors [`crate::conv2d`].
pub fn conv2d<T: Element>(
    x: TensorRef<'_, T>,
    filter: FilterRef<'_, T>,
    attrs: &Conv2dAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "conv2d";
    let g = plan_conv2d(x.shape, filter.shape, x.layout, attrs)?;
    check_dims(OP, "x", x.data.len(), g.input_dims(), x.layout)?;
    check_dims(
        OP,
        "filter",
        filter.data.len(),
        Layout::Nchw.dims(filter.shape),
        Layout::Nchw,
    )?;
    let yshape = x.layout.shape(g.output_dims());
    let n = g.output_dims().len(OP, "y")?;
    if n == 0 {
        return Tensor::from_vec(vec![], yshape, x.layout);
    }
    let w = filter_as_hwio(filter, attrs.filter_layout);
    let s = ready()?;
    let (dxx, dw) = (upload(&s, OP, bytes(x.data))?, upload(&s, OP, bytes(&w))?);
    let mut dy = alloc(&s, OP, n * std::mem::size_of::<T>())?;
    {
        let (a, _ga) = dxx.device_ptr(&s);
        let (b, _gb) = dw.device_ptr(&s);
        let (c, _gc) = dy.device_ptr_mut(&s);
        ops::conv_forward_raw::<T>(&s, &g, x.layout, a, b, c)?;
    }
    Tensor::from_vec(download(&s, OP, &dy, n)?, yshape, x.layout)
}

/// Mirrors [`crate::max_pool`].
pub fn max_pool<T: Element>(
    x: TensorRef<'_, T>,
    attrs: &MaxPoolAttrs,
    want_argmax: bool,
) -> Result<(Tensor<T>, Option<Vec<i64>>)> {
    const OP: &str = "max_pool";
    let g = plan_max_pool(OP, x.shape, x.layout, attrs)?;
    check_dims(OP, "x", x.data.len(), g.input_dims(), x.layout)?;
    let yshape = x.layout.shape(g.output_dims());
    let n = g.output_dims().len(OP, "y")?;
    if n == 0 {
        return Ok((
            Tensor::from_vec(vec![], yshape, x.layout)?,
            want_argmax.then(Vec::new),
        ));
    }
    let s = ready()?;
    let dxx = upload(&s, OP, bytes(x.data))?;
    let mut dy = alloc(&s, OP, n * std::mem::size_of::<T>())?;
    let mut da = alloc(&s, OP, n * 8)?;
    {
        let (a, _ga) = dxx.device_ptr(&s);
        let (b, _gb) = dy.device_ptr_mut(&s);
        let (c, _gc) = da.device_ptr_mut(&s);
        ops::pool_forward_raw::<T>(&s, &g, x.layout, a, b, c)?;
    }
    let y = Tensor::from_vec(download(&s, OP, &dy, n)?, yshape, x.layout)?;
    let am = if want_argmax {
        Some(download::<i64>(&s, OP, &da, n)?)
    } else {
        None
    };
    Ok((y, am))
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
    if let Some(y) = &y {
        check_dims(OP, "y", y.data.len(), y.dims(), y.layout)?;
    }
    let g = plan_max_pool_grad(dy.shape, x.shape, y.map(|y| y.shape), x.layout, attrs)?;
    check_dims(OP, "dy", dy.data.len(), g.output_dims(), x.layout)?;
    check_dims(OP, "x", x.data.len(), g.input_dims(), x.layout)?;
    let n = x.data.len();
    if n == 0 {
        return Tensor::from_vec(vec![], x.shape, x.layout);
    }
    let s = ready()?;
    let (dxx, ddy) = (
        upload(&s, OP, bytes(x.data))?,
        upload(&s, OP, bytes(dy.data))?,
    );
    let mut ddx = alloc(&s, OP, std::mem::size_of_val(x.data))?;
    {
        let (a, _ga) = dxx.device_ptr(&s);
        let (b, _gb) = ddy.device_ptr(&s);
        let (c, _gc) = ddx.device_ptr_mut(&s);
        ops::pool_grad_raw::<T>(&s, &g, x.layout, a, b, c)?;
    }
    Tensor::from_vec(download(&s, OP, &ddx, n)?, x.shape, x.layout)
}

/// Mirrors [`crate::max_pool_grad_with_argmax`].
pub fn max_pool_grad_with_argmax<T: Element>(
    dy: TensorRef<'_, T>,
    argmax: &[i64],
    x_shape: [usize; 4],
    attrs: &MaxPoolAttrs,
) -> Result<Tensor<T>> {
    const OP: &str = "max_pool_grad_with_argmax";
    let g = plan_max_pool_grad_with_argmax(dy.shape, x_shape, dy.layout, attrs)?;
    check_dims(OP, "dy", dy.data.len(), g.output_dims(), dy.layout)?;
    check_dims(OP, "argmax", argmax.len(), g.output_dims(), dy.layout)?;
    let n = g.input_dims().len(OP, "x")?;
    if n == 0 {
        return Tensor::from_vec(vec![], x_shape, dy.layout);
    }
    let s = ready()?;
    let (da, ddy) = (
        upload(&s, OP, bytes(argmax))?,
        upload(&s, OP, bytes(dy.data))?,
    );
    let mut ddx = alloc(&s, OP, n * std::mem::size_of::<T>())?;
    {
        let (a, _ga) = da.device_ptr(&s);
        let (b, _gb) = ddy.device_ptr(&s);
        let (c, _gc) = ddx.device_ptr_mut(&s);
        ops::pool_grad_argmax_raw::<T>(&s, &g, dy.layout, a, b, c)?;
    }
    Tensor::from_vec(download(&s, OP, &ddx, n)?, x_shape, dy.layout)
}

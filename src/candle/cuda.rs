//! The ops on candle's CUDA device (feature `candle-cuda`): gradops' device functions on
//! candle's own stream (`CudaDevice::cuda_stream()`), reading candle's buffers in place (a
//! contiguous layout with an offset is a view of the allocation, no copy) and writing into
//! buffers candle allocates on that stream, so nothing synchronises the host and candle
//! owns every result. NCHW.

use std::sync::Arc;

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::CudaDType;
use candle_core::{CudaDevice, CudaStorage, DType, Layout as CLayout, Shape};
use cudarc::driver::{CudaSlice, CudaStream, CudaView};

use super::{
    contiguous_range, dims4, wrap, Conv2d, Conv2dBackpropFilter, Conv2dBackpropInput, MaxPool,
    MaxPoolGrad, Resize, ResizeGrad,
};
use crate::cuda::{DeviceFilterRef, DeviceTensorMut, DeviceTensorRef};
use crate::ops::conv2d::plan_conv2d;
use crate::ops::max_pool::plan_max_pool;
use crate::{bf16, f16, Element, Error, Layout};

/// The element types gradops, candle and cudarc all have on the device.
pub(crate) trait Float: Element + CudaDType {}
impl Float for f16 {}
impl Float for bf16 {}
impl Float for f32 {}
impl Float for f64 {}

const SUPPORTED: &str = "f16, bf16, f32 or f64";

fn dtype_error(op: &'static str, arg: &'static str, got: DType) -> candle_core::Error {
    wrap(Error::Dtype {
        op,
        arg,
        expected: SUPPORTED.into(),
        got: got.as_str().into(),
    })
}

/// One argument on the device: a view of its elements (in place) and its NCHW shape.
fn view<'a, T: Float>(
    op: &'static str,
    arg: &'static str,
    s: &'a CudaStorage,
    l: &CLayout,
) -> candle_core::Result<(CudaView<'a, T>, [usize; 4])> {
    let shape = dims4(op, arg, l)?;
    let range = contiguous_range(op, arg, l)?;
    let all: &CudaSlice<T> = s.as_cuda_slice::<T>()?;
    if range.end > all.len() {
        return Err(wrap(Error::shape(
            op,
            arg,
            format!(
                "layout range {range:?} outside its storage of {} elements",
                all.len()
            ),
        )));
    }
    Ok((all.slice(range), shape))
}

/// An output of `shape` from candle's allocator on its stream, exactly sized (candle copies
/// whole buffers to the host), its contents unset: each op passes it straight to its
/// `_into`, which writes every element, and drops it unread on an error. Clearing it first
/// would write the whole output once more per call.
fn alloc<T: Float>(dev: &CudaDevice, shape: [usize; 4]) -> candle_core::Result<CudaSlice<T>> {
    // SAFETY: a fresh allocation on candle's stream whose unset contents are never read:
    // every caller below hands it to a `crate::cuda::*_into` queued on the same stream, which
    // writes all its elements (a kernel writing each once, or a clear where every element is
    // an empty sum; tests/cuda_ops.rs checks each `_into` on poisoned buffers), and returns
    // it to candle only after that call succeeds.
    unsafe { dev.alloc::<T>(shape.iter().product()) }
}

fn output<T: Float>(
    buf: CudaSlice<T>,
    dev: &CudaDevice,
    shape: [usize; 4],
) -> (CudaStorage, Shape) {
    (
        T::wrap_cuda_slice(buf, dev.clone()),
        Shape::from(shape.to_vec()),
    )
}

/// A one-input op on the device, per element type.
pub(crate) trait Gpu1 {
    const OP: &'static str;
    const ARG: &'static str;
    /// Queues the op on `stream` and returns the output (allocated by candle) and its shape.
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        x: CudaView<'_, T>,
        shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])>;
}

/// A two-input op on the device, per element type (both inputs of one type).
pub(crate) trait Gpu2 {
    const OP: &'static str;
    const ARGS: [&'static str; 2];
    #[allow(clippy::too_many_arguments)]
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        a: CudaView<'_, T>,
        a_shape: [usize; 4],
        b: CudaView<'_, T>,
        b_shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])>;
}

/// Dispatch of a [`Gpu1`] on the storage's element type.
pub(crate) trait Run1 {
    fn run(&self, s: &CudaStorage, l: &CLayout) -> candle_core::Result<(CudaStorage, Shape)>;
}

/// Dispatch of a [`Gpu2`] on the storages' element type.
pub(crate) trait Run2 {
    fn run(
        &self,
        s1: &CudaStorage,
        l1: &CLayout,
        s2: &CudaStorage,
        l2: &CLayout,
    ) -> candle_core::Result<(CudaStorage, Shape)>;
}

fn run1<T: Float, O: Gpu1>(
    op: &O,
    s: &CudaStorage,
    l: &CLayout,
) -> candle_core::Result<(CudaStorage, Shape)> {
    let (x, shape) = view::<T>(O::OP, O::ARG, s, l)?;
    let stream = s.device.cuda_stream();
    let (buf, out_shape) = op.gpu(&stream, &s.device, x, shape)?;
    Ok(output(buf, &s.device, out_shape))
}

impl<O: Gpu1> Run1 for O {
    fn run(&self, s: &CudaStorage, l: &CLayout) -> candle_core::Result<(CudaStorage, Shape)> {
        match s.dtype() {
            DType::F16 => run1::<f16, O>(self, s, l),
            DType::BF16 => run1::<bf16, O>(self, s, l),
            DType::F32 => run1::<f32, O>(self, s, l),
            DType::F64 => run1::<f64, O>(self, s, l),
            other => Err(dtype_error(O::OP, O::ARG, other)),
        }
    }
}

fn run2<T: Float, O: Gpu2>(
    op: &O,
    s1: &CudaStorage,
    l1: &CLayout,
    s2: &CudaStorage,
    l2: &CLayout,
) -> candle_core::Result<(CudaStorage, Shape)> {
    let (a, a_shape) = view::<T>(O::OP, O::ARGS[0], s1, l1)?;
    if s2.dtype() != s1.dtype() {
        return Err(wrap(Error::Dtype {
            op: O::OP,
            arg: O::ARGS[1],
            expected: s1.dtype().as_str().into(),
            got: s2.dtype().as_str().into(),
        }));
    }
    let (b, b_shape) = view::<T>(O::OP, O::ARGS[1], s2, l2)?;
    let stream = s1.device.cuda_stream();
    let (buf, out_shape) = op.gpu(&stream, &s1.device, a, a_shape, b, b_shape)?;
    Ok(output(buf, &s1.device, out_shape))
}

impl<O: Gpu2> Run2 for O {
    fn run(
        &self,
        s1: &CudaStorage,
        l1: &CLayout,
        s2: &CudaStorage,
        l2: &CLayout,
    ) -> candle_core::Result<(CudaStorage, Shape)> {
        match s1.dtype() {
            DType::F16 => run2::<f16, O>(self, s1, l1, s2, l2),
            DType::BF16 => run2::<bf16, O>(self, s1, l1, s2, l2),
            DType::F32 => run2::<f32, O>(self, s1, l1, s2, l2),
            DType::F64 => run2::<f64, O>(self, s1, l1, s2, l2),
            other => Err(dtype_error(O::OP, O::ARGS[0], other)),
        }
    }
}

/// An input view with its shape, as gradops' device API takes it.
fn tensor_ref<'a, T>(
    v: CudaView<'a, T>,
    shape: [usize; 4],
) -> candle_core::Result<DeviceTensorRef<'a, T>> {
    DeviceTensorRef::new(v, shape, Layout::Nchw).map_err(wrap)
}

/// An output buffer with its shape (NCHW; a filter gradient's shape is its filter's).
fn tensor_mut<'a, T>(
    buf: &'a mut CudaSlice<T>,
    shape: [usize; 4],
) -> candle_core::Result<DeviceTensorMut<'a, T>> {
    DeviceTensorMut::new(buf.slice_mut(..), shape, Layout::Nchw).map_err(wrap)
}

impl Gpu1 for Resize {
    const OP: &'static str = "resize";
    const ARG: &'static str = "x";
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        x: CudaView<'_, T>,
        shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])> {
        let out = [shape[0], shape[1], self.out_hw[0], self.out_hw[1]];
        let mut y = alloc::<T>(dev, out)?;
        crate::cuda::resize_into(
            stream,
            tensor_ref(x, shape)?,
            &self.attrs,
            tensor_mut(&mut y, out)?,
        )
        .map_err(wrap)?;
        Ok((y, out))
    }
}

impl Gpu1 for ResizeGrad {
    const OP: &'static str = "resize_grad";
    const ARG: &'static str = "dy";
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        dy: CudaView<'_, T>,
        shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])> {
        let mut dx = alloc::<T>(dev, self.x_shape)?;
        let dxm =
            DeviceTensorMut::new(dx.slice_mut(..), self.x_shape, Layout::Nchw).map_err(wrap)?;
        crate::cuda::resize_grad_into(stream, tensor_ref(dy, shape)?, &self.attrs, dxm)
            .map_err(wrap)?;
        Ok((dx, self.x_shape))
    }
}

impl Gpu1 for MaxPool {
    const OP: &'static str = "max_pool";
    const ARG: &'static str = "x";
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        x: CudaView<'_, T>,
        shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])> {
        let g = plan_max_pool(Self::OP, shape, Layout::Nchw, &self.attrs).map_err(wrap)?;
        let out = Layout::Nchw.shape(g.output_dims());
        let mut y = alloc::<T>(dev, out)?;
        // No argmax: the backward recomputes it (TF's MaxPoolGrad).
        crate::cuda::max_pool_into(
            stream,
            tensor_ref(x, shape)?,
            &self.attrs,
            tensor_mut(&mut y, out)?,
            None,
        )
        .map_err(wrap)?;
        Ok((y, out))
    }
}

impl Gpu2 for MaxPoolGrad {
    const OP: &'static str = "max_pool_grad";
    const ARGS: [&'static str; 2] = ["dy", "x"];
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        dy: CudaView<'_, T>,
        dy_shape: [usize; 4],
        x: CudaView<'_, T>,
        x_shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])> {
        let mut dx = alloc::<T>(dev, x_shape)?;
        crate::cuda::max_pool_grad_into(
            stream,
            tensor_ref(dy, dy_shape)?,
            tensor_ref(x, x_shape)?,
            None,
            &self.attrs,
            tensor_mut(&mut dx, x_shape)?,
        )
        .map_err(wrap)?;
        Ok((dx, x_shape))
    }
}

/// A filter view (HWIO or OIHW, as the attributes say: both are read in place).
fn filter_ref<'a, T>(
    v: CudaView<'a, T>,
    shape: [usize; 4],
) -> candle_core::Result<DeviceFilterRef<'a, T>> {
    DeviceFilterRef::new(v, shape).map_err(wrap)
}

impl Gpu2 for Conv2d {
    const OP: &'static str = "conv2d";
    const ARGS: [&'static str; 2] = ["x", "filter"];
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        x: CudaView<'_, T>,
        x_shape: [usize; 4],
        w: CudaView<'_, T>,
        w_shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])> {
        let g = plan_conv2d(x_shape, w_shape, Layout::Nchw, &self.attrs).map_err(wrap)?;
        let out = Layout::Nchw.shape(g.output_dims());
        let mut y = alloc::<T>(dev, out)?;
        crate::cuda::conv2d_into(
            stream,
            tensor_ref(x, x_shape)?,
            filter_ref(w, w_shape)?,
            &self.attrs,
            tensor_mut(&mut y, out)?,
        )
        .map_err(wrap)?;
        Ok((y, out))
    }
}

impl Gpu2 for Conv2dBackpropInput {
    const OP: &'static str = "conv2d_backprop_input";
    const ARGS: [&'static str; 2] = ["dy", "filter"];
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        dy: CudaView<'_, T>,
        dy_shape: [usize; 4],
        w: CudaView<'_, T>,
        w_shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])> {
        let mut dx = alloc::<T>(dev, self.x_shape)?;
        crate::cuda::conv2d_backprop_input_into(
            stream,
            tensor_ref(dy, dy_shape)?,
            filter_ref(w, w_shape)?,
            &self.attrs,
            tensor_mut(&mut dx, self.x_shape)?,
        )
        .map_err(wrap)?;
        Ok((dx, self.x_shape))
    }
}

impl Gpu2 for Conv2dBackpropFilter {
    const OP: &'static str = "conv2d_backprop_filter";
    const ARGS: [&'static str; 2] = ["x", "dy"];
    fn gpu<T: Float>(
        &self,
        stream: &Arc<CudaStream>,
        dev: &CudaDevice,
        x: CudaView<'_, T>,
        x_shape: [usize; 4],
        dy: CudaView<'_, T>,
        dy_shape: [usize; 4],
    ) -> candle_core::Result<(CudaSlice<T>, [usize; 4])> {
        let mut dw = alloc::<T>(dev, self.w_shape)?;
        crate::cuda::conv2d_backprop_filter_into(
            stream,
            tensor_ref(x, x_shape)?,
            tensor_ref(dy, dy_shape)?,
            &self.attrs,
            tensor_mut(&mut dw, self.w_shape)?,
        )
        .map_err(wrap)?;
        Ok((dw, self.w_shape))
    }
}

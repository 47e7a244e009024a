//! The ops on candle's CPU device: gradops' host functions over candle's own buffers (a
//! contiguous view, offset included, without a copy), NCHW.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, Layout as CLayout, Shape, WithDType};

use super::{
    contiguous_range, dims4, wrap, Conv2d, Conv2dBackpropFilter, Conv2dBackpropInput, MaxPool,
    MaxPoolGrad, Resize, ResizeGrad,
};
use crate::{bf16, f16, Element, Error, FilterRef, Layout, Tensor, TensorRef};

/// The element types both gradops and candle have.
pub(crate) trait Float: Element + WithDType {}
impl Float for f16 {}
impl Float for bf16 {}
impl Float for f32 {}
impl Float for f64 {}

const SUPPORTED: &str = "f16, bf16, f32 or f64";

fn dtype_error(op: &'static str, arg: &'static str, s: &CpuStorage) -> candle_core::Error {
    wrap(Error::Dtype {
        op,
        arg,
        expected: SUPPORTED.into(),
        got: s.dtype().as_str().into(),
    })
}

/// An NCHW view of one argument: its elements (in place) and its shape.
fn view<'a, T: Float>(
    op: &'static str,
    arg: &'static str,
    s: &'a CpuStorage,
    l: &CLayout,
) -> candle_core::Result<TensorRef<'a, T>> {
    let shape = dims4(op, arg, l)?;
    let range = contiguous_range(op, arg, l)?;
    let all = T::cpu_storage_as_slice(s)?;
    let data = all.get(range.clone()).ok_or_else(|| {
        wrap(Error::shape(
            op,
            arg,
            format!(
                "layout range {range:?} outside its storage of {} elements",
                all.len()
            ),
        ))
    })?;
    Ok(TensorRef::new(data, shape, Layout::Nchw))
}

fn output<T: Float>(t: Tensor<T>) -> (CpuStorage, Shape) {
    let shape = Shape::from(t.shape.to_vec());
    (T::to_cpu_storage_owned(t.data), shape)
}

/// A one-input op on the CPU, per element type.
pub(crate) trait Cpu1 {
    const OP: &'static str;
    const ARG: &'static str;
    fn cpu<T: Float>(&self, x: TensorRef<'_, T>) -> crate::Result<Tensor<T>>;
}

/// A two-input op on the CPU, per element type (both inputs of one type).
pub(crate) trait Cpu2 {
    const OP: &'static str;
    const ARGS: [&'static str; 2];
    fn cpu<T: Float>(&self, a: TensorRef<'_, T>, b: TensorRef<'_, T>) -> crate::Result<Tensor<T>>;
}

/// Dispatch of a [`Cpu1`] on the storage's element type.
pub(crate) trait Run1 {
    fn run(&self, s: &CpuStorage, l: &CLayout) -> candle_core::Result<(CpuStorage, Shape)>;
}

/// Dispatch of a [`Cpu2`] on the storages' element type.
pub(crate) trait Run2 {
    fn run(
        &self,
        s1: &CpuStorage,
        l1: &CLayout,
        s2: &CpuStorage,
        l2: &CLayout,
    ) -> candle_core::Result<(CpuStorage, Shape)>;
}

fn run1<T: Float, O: Cpu1>(
    op: &O,
    s: &CpuStorage,
    l: &CLayout,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let x = view::<T>(O::OP, O::ARG, s, l)?;
    Ok(output(op.cpu(x).map_err(wrap)?))
}

impl<O: Cpu1> Run1 for O {
    fn run(&self, s: &CpuStorage, l: &CLayout) -> candle_core::Result<(CpuStorage, Shape)> {
        match s {
            CpuStorage::F16(_) => run1::<f16, O>(self, s, l),
            CpuStorage::BF16(_) => run1::<bf16, O>(self, s, l),
            CpuStorage::F32(_) => run1::<f32, O>(self, s, l),
            CpuStorage::F64(_) => run1::<f64, O>(self, s, l),
            _ => Err(dtype_error(O::OP, O::ARG, s)),
        }
    }
}

fn run2<T: Float, O: Cpu2>(
    op: &O,
    s1: &CpuStorage,
    l1: &CLayout,
    s2: &CpuStorage,
    l2: &CLayout,
) -> candle_core::Result<(CpuStorage, Shape)> {
    let a = view::<T>(O::OP, O::ARGS[0], s1, l1)?;
    if s2.dtype() != s1.dtype() {
        return Err(wrap(Error::Dtype {
            op: O::OP,
            arg: O::ARGS[1],
            expected: s1.dtype().as_str().into(),
            got: s2.dtype().as_str().into(),
        }));
    }
    let b = view::<T>(O::OP, O::ARGS[1], s2, l2)?;
    Ok(output(op.cpu(a, b).map_err(wrap)?))
}

impl<O: Cpu2> Run2 for O {
    fn run(
        &self,
        s1: &CpuStorage,
        l1: &CLayout,
        s2: &CpuStorage,
        l2: &CLayout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        match s1 {
            CpuStorage::F16(_) => run2::<f16, O>(self, s1, l1, s2, l2),
            CpuStorage::BF16(_) => run2::<bf16, O>(self, s1, l1, s2, l2),
            CpuStorage::F32(_) => run2::<f32, O>(self, s1, l1, s2, l2),
            CpuStorage::F64(_) => run2::<f64, O>(self, s1, l1, s2, l2),
            _ => Err(dtype_error(O::OP, O::ARGS[0], s1)),
        }
    }
}

impl Cpu1 for Resize {
    const OP: &'static str = "resize";
    const ARG: &'static str = "x";
    fn cpu<T: Float>(&self, x: TensorRef<'_, T>) -> crate::Result<Tensor<T>> {
        crate::resize(x, self.out_hw, &self.attrs)
    }
}

impl Cpu1 for ResizeGrad {
    const OP: &'static str = "resize_grad";
    const ARG: &'static str = "dy";
    fn cpu<T: Float>(&self, dy: TensorRef<'_, T>) -> crate::Result<Tensor<T>> {
        crate::resize_grad(dy, self.x_shape, &self.attrs)
    }
}

impl Cpu1 for MaxPool {
    const OP: &'static str = "max_pool";
    const ARG: &'static str = "x";
    fn cpu<T: Float>(&self, x: TensorRef<'_, T>) -> crate::Result<Tensor<T>> {
        Ok(crate::max_pool(x, &self.attrs, false)?.0)
    }
}

impl Cpu2 for MaxPoolGrad {
    const OP: &'static str = "max_pool_grad";
    const ARGS: [&'static str; 2] = ["dy", "x"];
    fn cpu<T: Float>(&self, dy: TensorRef<'_, T>, x: TensorRef<'_, T>) -> crate::Result<Tensor<T>> {
        crate::max_pool_grad(dy, x, None, &self.attrs)
    }
}

impl Cpu2 for Conv2d {
    const OP: &'static str = "conv2d";
    const ARGS: [&'static str; 2] = ["x", "filter"];
    fn cpu<T: Float>(&self, x: TensorRef<'_, T>, w: TensorRef<'_, T>) -> crate::Result<Tensor<T>> {
        crate::conv2d(x, FilterRef::new(w.data, w.shape), &self.attrs)
    }
}

impl Cpu2 for Conv2dBackpropInput {
    const OP: &'static str = "conv2d_backprop_input";
    const ARGS: [&'static str; 2] = ["dy", "filter"];
    fn cpu<T: Float>(&self, dy: TensorRef<'_, T>, w: TensorRef<'_, T>) -> crate::Result<Tensor<T>> {
        crate::conv2d_backprop_input(
            dy,
            FilterRef::new(w.data, w.shape),
            self.x_shape,
            &self.attrs,
        )
    }
}

impl Cpu2 for Conv2dBackpropFilter {
    const OP: &'static str = "conv2d_backprop_filter";
    const ARGS: [&'static str; 2] = ["x", "dy"];
    fn cpu<T: Float>(&self, x: TensorRef<'_, T>, dy: TensorRef<'_, T>) -> crate::Result<Tensor<T>> {
        crate::conv2d_backprop_filter(x, dy, self.w_shape, &self.attrs)
    }
}

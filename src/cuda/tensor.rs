//! Device tensors: the CUDA counterparts of [`TensorRef`], [`Tensor`] and [`FilterRef`].
//!
//! A device tensor is a cudarc buffer (a [`CudaView`], [`CudaViewMut`] or owned
//! [`CudaSlice`]) with a rank-4 shape in a [`Layout`]. Constructors check that the buffer
//! holds exactly the shape's elements ([`Error::BufferLen`]). Views may start anywhere in
//! their allocation (`slice.slice(a..b)`): the kernels take the view's own address.
//!
//! [`FilterRef`]: crate::FilterRef

use std::sync::Arc;

use cudarc::driver::{
    CudaSlice, CudaStream, CudaView, CudaViewMut, DeviceRepr, DeviceSlice, ValidAsZeroBits,
};

use super::runtime::cuda_err;
use crate::tensor::{check_buffer, Dims, Layout, Tensor, TensorRef};
use crate::{Error, Result};

/// The elements a rank-4 `shape` holds, with the overflow error naming `op` and `arg`.
fn elements(op: &'static str, arg: &'static str, shape: [usize; 4]) -> Result<usize> {
    Layout::Nchw.dims(shape).len(op, arg)
}

/// A borrowed rank-4 device tensor: a cudarc view, its shape (in `layout` order) and
/// layout. The device counterpart of [`TensorRef`].
#[derive(Debug)]
pub struct DeviceTensorRef<'a, T> {
    data: CudaView<'a, T>,
    shape: [usize; 4],
    layout: Layout,
}

impl<'a, T> DeviceTensorRef<'a, T> {
    /// A view of `data` with `shape` in `layout` order; `data` must hold exactly the
    /// shape's elements.
    pub fn new(data: CudaView<'a, T>, shape: [usize; 4], layout: Layout) -> Result<Self> {
        check_buffer("DeviceTensorRef::new", "data", shape, data.len())?;
        Ok(DeviceTensorRef {
            data,
            shape,
            layout,
        })
    }

    /// The elements, row-major in `shape` order.
    pub fn data(&self) -> &CudaView<'a, T> {
        &self.data
    }

    /// The shape, in layout order.
    pub fn shape(&self) -> [usize; 4] {
        self.shape
    }

    /// The memory layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Logical dimensions.
    pub fn dims(&self) -> Dims {
        self.layout.dims(self.shape)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.len() == 0
    }
}

impl<T> Clone for DeviceTensorRef<'_, T> {
    fn clone(&self) -> Self {
        // A view is a (pointer, length) pair into a buffer it borrows: cloning it
        // re-slices the same range.
        DeviceTensorRef {
            data: self.data.slice(..),
            shape: self.shape,
            layout: self.layout,
        }
    }
}

/// A mutably borrowed rank-4 device tensor (an output): a cudarc mutable view, its shape
/// and layout. The device counterpart of the `&mut [T]` of the host `_into` functions,
/// carrying its shape.
#[derive(Debug)]
pub struct DeviceTensorMut<'a, T> {
    data: CudaViewMut<'a, T>,
    shape: [usize; 4],
    layout: Layout,
}

impl<'a, T> DeviceTensorMut<'a, T> {
    /// A mutable view of `data` with `shape` in `layout` order; `data` must hold exactly
    /// the shape's elements.
    pub fn new(data: CudaViewMut<'a, T>, shape: [usize; 4], layout: Layout) -> Result<Self> {
        check_buffer("DeviceTensorMut::new", "data", shape, data.len())?;
        Ok(DeviceTensorMut {
            data,
            shape,
            layout,
        })
    }

    /// The elements, row-major in `shape` order.
    pub fn data(&self) -> &CudaViewMut<'a, T> {
        &self.data
    }

    /// The elements, mutably.
    pub fn data_mut(&mut self) -> &mut CudaViewMut<'a, T> {
        &mut self.data
    }

    /// The shape, in layout order.
    pub fn shape(&self) -> [usize; 4] {
        self.shape
    }

    /// The memory layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Logical dimensions.
    pub fn dims(&self) -> Dims {
        self.layout.dims(self.shape)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.len() == 0
    }

    /// A read-only view of the same elements.
    pub fn as_ref(&self) -> DeviceTensorRef<'_, T> {
        DeviceTensorRef {
            data: self.data.as_view(),
            shape: self.shape,
            layout: self.layout,
        }
    }

    /// A shorter-lived mutable view of the same elements (to pass to an `_into` function
    /// and keep this one).
    pub fn reborrow(&mut self) -> DeviceTensorMut<'_, T> {
        DeviceTensorMut {
            data: self.data.slice_mut(..),
            shape: self.shape,
            layout: self.layout,
        }
    }
}

/// A borrowed device filter: a cudarc view and its shape, in the attributes'
/// [`FilterLayout`](crate::FilterLayout) order (HWIO or OIHW). The device counterpart of
/// [`FilterRef`](crate::FilterRef).
#[derive(Debug)]
pub struct DeviceFilterRef<'a, T> {
    data: CudaView<'a, T>,
    shape: [usize; 4],
}

impl<'a, T> DeviceFilterRef<'a, T> {
    /// A filter view; `data` must hold exactly the shape's elements.
    pub fn new(data: CudaView<'a, T>, shape: [usize; 4]) -> Result<Self> {
        check_buffer("DeviceFilterRef::new", "data", shape, data.len())?;
        Ok(DeviceFilterRef { data, shape })
    }

    /// The elements, row-major in `shape` order.
    pub fn data(&self) -> &CudaView<'a, T> {
        &self.data
    }

    /// The shape (HWIO or OIHW, as the attributes say).
    pub fn shape(&self) -> [usize; 4] {
        self.shape
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the filter has no elements (a zero-sized axis).
    pub fn is_empty(&self) -> bool {
        self.data.len() == 0
    }
}

impl<T> Clone for DeviceFilterRef<'_, T> {
    fn clone(&self) -> Self {
        DeviceFilterRef {
            data: self.data.slice(..),
            shape: self.shape,
        }
    }
}

/// An owned rank-4 device tensor, as the allocating device functions return it: a
/// [`CudaSlice`], its shape and layout. The device counterpart of [`Tensor`].
///
/// CUDA cannot allocate zero bytes, so a tensor with no elements that this crate
/// allocates holds a one-element buffer; [`view`](Self::view) and [`len`](Self::len)
/// always cover exactly the shape's elements.
#[derive(Debug)]
pub struct DeviceTensor<T> {
    buf: CudaSlice<T>,
    len: usize,
    shape: [usize; 4],
    layout: Layout,
}

impl<T> DeviceTensor<T> {
    /// Wraps `buf`, which must hold exactly the shape's elements.
    pub fn from_slice(buf: CudaSlice<T>, shape: [usize; 4], layout: Layout) -> Result<Self> {
        check_buffer("DeviceTensor::from_slice", "buf", shape, buf.len())?;
        Ok(DeviceTensor {
            len: buf.len(),
            buf,
            shape,
            layout,
        })
    }

    /// A view of the whole tensor.
    pub fn view(&self) -> DeviceTensorRef<'_, T> {
        DeviceTensorRef {
            data: self.buf.slice(..self.len),
            shape: self.shape,
            layout: self.layout,
        }
    }

    /// The whole tensor as a filter (its shape read in the attributes' filter layout).
    pub fn as_filter(&self) -> DeviceFilterRef<'_, T> {
        DeviceFilterRef {
            data: self.buf.slice(..self.len),
            shape: self.shape,
        }
    }

    /// A mutable view of the whole tensor (an output for an `_into` function).
    pub fn view_mut(&mut self) -> DeviceTensorMut<'_, T> {
        DeviceTensorMut {
            data: self.buf.slice_mut(..self.len),
            shape: self.shape,
            layout: self.layout,
        }
    }

    /// The shape, in layout order.
    pub fn shape(&self) -> [usize; 4] {
        self.shape
    }

    /// The memory layout.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Logical dimensions.
    pub fn dims(&self) -> Dims {
        self.layout.dims(self.shape)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The underlying buffer (one element long when the tensor is empty and this crate
    /// allocated it).
    pub fn as_slice(&self) -> &CudaSlice<T> {
        &self.buf
    }

    /// The underlying buffer, giving up the shape (see [`as_slice`](Self::as_slice)).
    pub fn into_slice(self) -> CudaSlice<T> {
        self.buf
    }
}

impl<T: DeviceRepr + ValidAsZeroBits> DeviceTensor<T> {
    /// A zeroed tensor of `shape` on `stream` (the copy is queued, not awaited).
    pub fn zeros(stream: &Arc<CudaStream>, shape: [usize; 4], layout: Layout) -> Result<Self> {
        Self::zeros_for("DeviceTensor::zeros", "shape", stream, shape, layout)
    }

    /// [`zeros`](Self::zeros) with errors naming `op` and `arg`.
    pub(crate) fn zeros_for(
        op: &'static str,
        arg: &'static str,
        stream: &Arc<CudaStream>,
        shape: [usize; 4],
        layout: Layout,
    ) -> Result<Self> {
        let len = elements(op, arg, shape)?;
        let buf = stream
            .alloc_zeros::<T>(len.max(1))
            .map_err(|e| cuda_err(op, "device allocation", e))?;
        Ok(DeviceTensor {
            buf,
            len,
            shape,
            layout,
        })
    }

    /// A device copy of the host tensor `t` on `stream`. `t.data` must hold exactly its
    /// shape's elements. The copy from pageable host memory returns once `t` has been read.
    pub fn from_host(stream: &Arc<CudaStream>, t: TensorRef<'_, T>) -> Result<Self> {
        const OP: &str = "DeviceTensor::from_host";
        check_buffer(OP, "data", t.shape, t.data.len())?;
        if t.data.is_empty() {
            return Self::zeros_for(OP, "data", stream, t.shape, t.layout);
        }
        let buf = stream
            .clone_htod(t.data)
            .map_err(|e| cuda_err(OP, "host-to-device copy", e))?;
        Self::from_slice(buf, t.shape, t.layout)
    }

    /// A host copy, read on the buffer's own stream (which waits for the work queued on
    /// it, and for writes cudarc tracked on other streams).
    pub fn to_host(&self) -> Result<Tensor<T>>
    where
        T: Clone + Default,
    {
        const OP: &str = "DeviceTensor::to_host";
        let data = if self.len == 0 {
            Vec::new()
        } else {
            let v = self.buf.slice(..self.len);
            self.buf
                .stream()
                .clone_dtoh(&v)
                .map_err(|e| cuda_err(OP, "device-to-host copy", e))?
        };
        Ok(Tensor {
            data,
            shape: self.shape,
            layout: self.layout,
        })
    }
}

/// Checks that a device argument lives in `stream`'s context (the context its kernels
/// load into and its launches run in): a pointer from another context is not valid there.
pub(crate) fn same_context<T>(
    op: &'static str,
    arg: &'static str,
    stream: &Arc<CudaStream>,
    data: &impl DeviceSlice<T>,
) -> Result<()> {
    let (want, got) = (stream.context(), data.stream().context());
    if want.cu_ctx() != got.cu_ctx() {
        return Err(Error::Device {
            op,
            arg,
            msg: format!(
                "the buffer belongs to the CUDA context of device {}, the stream to that of device {}",
                got.ordinal(),
                want.ordinal()
            ),
        });
    }
    Ok(())
}

/// Checks that output `arg` has the layout of the input it is computed from.
pub(crate) fn same_layout(
    op: &'static str,
    arg: &'static str,
    got: Layout,
    want: Layout,
) -> Result<()> {
    if got != want {
        return Err(Error::shape(
            op,
            arg,
            format!("layout {got} differs from the input's layout {want}"),
        ));
    }
    Ok(())
}

//! Layouts, logical dimensions and the small tensor types the API takes and returns.

use crate::dtype::Element;
use crate::error::{Error, Result};

/// Memory layout of a rank-4 image tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Layout {
    /// `[N, C, H, W]`: one contiguous plane per (image, channel).
    #[default]
    Nchw,
    /// `[N, H, W, C]`: channels innermost.
    Nhwc,
}

impl Layout {
    /// `NCHW` or `NHWC`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Nchw => "NCHW",
            Layout::Nhwc => "NHWC",
        }
    }

    /// Logical dimensions of a shape given in this layout.
    pub fn dims(self, shape: [usize; 4]) -> Dims {
        match self {
            Layout::Nchw => Dims {
                n: shape[0],
                c: shape[1],
                h: shape[2],
                w: shape[3],
            },
            Layout::Nhwc => Dims {
                n: shape[0],
                h: shape[1],
                w: shape[2],
                c: shape[3],
            },
        }
    }

    /// The shape, in this layout, of logical dimensions `d`.
    pub fn shape(self, d: Dims) -> [usize; 4] {
        match self {
            Layout::Nchw => [d.n, d.c, d.h, d.w],
            Layout::Nhwc => [d.n, d.h, d.w, d.c],
        }
    }
}

impl std::fmt::Display for Layout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Layout {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "NCHW" | "nchw" => Ok(Layout::Nchw),
            "NHWC" | "nhwc" => Ok(Layout::Nhwc),
            other => Err(format!("unknown layout {other:?} (expected NCHW or NHWC)")),
        }
    }
}

/// Logical dimensions of an image tensor, whatever its layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Dims {
    /// Batch.
    pub n: usize,
    /// Channels.
    pub c: usize,
    /// Height.
    pub h: usize,
    /// Width.
    pub w: usize,
}

impl Dims {
    /// Number of elements, or `None` on overflow.
    pub fn checked_len(&self) -> Option<usize> {
        self.n
            .checked_mul(self.c)?
            .checked_mul(self.h)?
            .checked_mul(self.w)
    }

    /// Number of elements, with an overflow error naming `op` and `arg`.
    pub fn len(&self, op: &'static str, arg: &'static str) -> Result<usize> {
        self.checked_len().ok_or_else(|| Error::Overflow {
            op,
            arg,
            msg: format!("{} x {} x {} x {} elements", self.n, self.c, self.h, self.w),
        })
    }
}

/// Converts a shape of any rank into a rank-4 array, or the op's rank error.
pub fn rank4(op: &'static str, arg: &'static str, shape: &[usize]) -> Result<[usize; 4]> {
    <[usize; 4]>::try_from(shape).map_err(|_| Error::Rank {
        op,
        arg,
        rank: shape.len(),
        shape: shape.to_vec(),
    })
}

/// A borrowed rank-4 tensor: data, shape (in `layout` order) and layout.
#[derive(Debug, Clone, Copy)]
pub struct TensorRef<'a, T> {
    /// Elements, row-major in `shape` order.
    pub data: &'a [T],
    /// Shape in layout order (`[N, C, H, W]` for NCHW, `[N, H, W, C]` for NHWC).
    pub shape: [usize; 4],
    /// Memory layout.
    pub layout: Layout,
}

impl<'a, T> TensorRef<'a, T> {
    /// A view of `data` with `shape` in `layout` order. The length is checked by each op.
    pub fn new(data: &'a [T], shape: [usize; 4], layout: Layout) -> Self {
        TensorRef {
            data,
            shape,
            layout,
        }
    }

    /// Logical dimensions.
    pub fn dims(&self) -> Dims {
        self.layout.dims(self.shape)
    }

    /// Checks that the buffer holds exactly the shape's elements.
    pub fn check_len(&self, op: &'static str, arg: &'static str) -> Result<Dims> {
        check_buffer(op, arg, self.shape, self.data.len())?;
        Ok(self.dims())
    }
}

/// Checks that a buffer of `got` elements holds logical dims `d` (stored in `layout`).
pub(crate) fn check_dims(
    op: &'static str,
    arg: &'static str,
    got: usize,
    d: Dims,
    layout: Layout,
) -> Result<()> {
    check_buffer(op, arg, layout.shape(d), got)
}

pub(crate) fn check_buffer(
    op: &'static str,
    arg: &'static str,
    shape: [usize; 4],
    got: usize,
) -> Result<()> {
    let expected = Layout::Nchw.dims(shape).len(op, arg)?;
    if expected != got {
        return Err(Error::BufferLen {
            op,
            arg,
            expected,
            got,
            shape: shape.to_vec(),
        });
    }
    Ok(())
}

/// An owned rank-4 tensor, as the allocating API returns it.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor<T> {
    /// Elements, row-major in `shape` order.
    pub data: Vec<T>,
    /// Shape in layout order.
    pub shape: [usize; 4],
    /// Memory layout.
    pub layout: Layout,
}

impl<T: Element> Tensor<T> {
    /// A tensor of zeros. Fails if the element count overflows.
    pub fn zeros(shape: [usize; 4], layout: Layout) -> Result<Self> {
        let len = Layout::Nchw.dims(shape).len("Tensor::zeros", "shape")?;
        Ok(Tensor {
            data: vec![T::default(); len],
            shape,
            layout,
        })
    }

    /// Wraps `data` (checked against `shape`).
    pub fn from_vec(data: Vec<T>, shape: [usize; 4], layout: Layout) -> Result<Self> {
        check_buffer("Tensor::from_vec", "data", shape, data.len())?;
        Ok(Tensor {
            data,
            shape,
            layout,
        })
    }

    /// A borrowed view.
    pub fn view(&self) -> TensorRef<'_, T> {
        TensorRef::new(&self.data, self.shape, self.layout)
    }

    /// Logical dimensions.
    pub fn dims(&self) -> Dims {
        self.layout.dims(self.shape)
    }
}

impl<T: Element> Tensor<T> {
    /// `zeros`, with the overflow error naming the op and argument.
    pub fn zeros_checked(
        op: &'static str,
        arg: &'static str,
        shape: [usize; 4],
        layout: Layout,
    ) -> Result<Self> {
        let len = Layout::Nchw.dims(shape).len(op, arg)?;
        let mut data = Vec::new();
        data.try_reserve_exact(len).map_err(|_| Error::Overflow {
            op,
            arg,
            msg: format!("cannot allocate {len} elements for shape {shape:?}"),
        })?;
        data.resize(len, T::default());
        Ok(Tensor {
            data,
            shape,
            layout,
        })
    }
}

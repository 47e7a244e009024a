//! Dynamically typed host arrays (what `.npy` files and the case format carry) and `.npy` I/O.

use gradops::dtype::{DType, Element};
use gradops::error::{Error, Result};
use half::{bf16, f16};
use std::path::Path;

/// Elements of a [`HostArray`], by type.
#[derive(Debug, Clone, PartialEq)]
pub enum ArrayData {
    /// Half precision.
    F16(Vec<f16>),
    /// bfloat16. `.npy` has no bf16: such an array comes from a case with `"dtype": "bf16"`
    /// (its `<f4` inputs rounded on load) and is written as `<f4` (exact widening).
    BF16(Vec<bf16>),
    /// Single precision.
    F32(Vec<f32>),
    /// Double precision.
    F64(Vec<f64>),
}

/// A dense, row-major host array of any rank and one of the supported element types.
#[derive(Debug, Clone, PartialEq)]
pub struct HostArray {
    /// Shape.
    pub shape: Vec<usize>,
    /// Elements.
    pub data: ArrayData,
}

/// Moves a typed vector into and out of [`ArrayData`].
pub trait ArrayElement: Element {
    /// Wraps a vector.
    fn wrap(v: Vec<Self>) -> ArrayData;
    /// Borrows the vector when the types match.
    fn unwrap(d: &ArrayData) -> Option<&[Self]>;
}

macro_rules! array_element {
    ($t:ty, $v:ident) => {
        impl ArrayElement for $t {
            fn wrap(v: Vec<Self>) -> ArrayData {
                ArrayData::$v(v)
            }
            fn unwrap(d: &ArrayData) -> Option<&[Self]> {
                match d {
                    ArrayData::$v(v) => Some(v),
                    _ => None,
                }
            }
        }
    };
}
array_element!(f16, F16);
array_element!(bf16, BF16);
array_element!(f32, F32);
array_element!(f64, F64);

impl HostArray {
    /// A typed array.
    pub fn new<T: ArrayElement>(shape: Vec<usize>, data: Vec<T>) -> Self {
        HostArray {
            shape,
            data: T::wrap(data),
        }
    }

    /// The element type.
    pub fn dtype(&self) -> DType {
        match self.data {
            ArrayData::F16(_) => DType::F16,
            ArrayData::BF16(_) => DType::BF16,
            ArrayData::F32(_) => DType::F32,
            ArrayData::F64(_) => DType::F64,
        }
    }

    /// Number of elements held.
    pub fn len(&self) -> usize {
        match &self.data {
            ArrayData::F16(v) => v.len(),
            ArrayData::BF16(v) => v.len(),
            ArrayData::F32(v) => v.len(),
            ArrayData::F64(v) => v.len(),
        }
    }

    /// True when it holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements widened to `f64`.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match &self.data {
            ArrayData::F16(v) => v.iter().map(|x| x.to_f64()).collect(),
            ArrayData::BF16(v) => v.iter().map(|x| x.to_f64()).collect(),
            ArrayData::F32(v) => v.iter().map(|&x| x as f64).collect(),
            ArrayData::F64(v) => v.clone(),
        }
    }

    /// The same values rounded to `dtype` (once, to nearest, ties to even).
    pub fn cast(&self, dtype: DType) -> HostArray {
        let v = self.to_f64_vec();
        let data = match dtype {
            DType::F16 => ArrayData::F16(v.iter().map(|&x| f16::from_f64(x)).collect()),
            DType::BF16 => ArrayData::BF16(v.iter().map(|&x| Element::from_f64(x)).collect()),
            DType::F32 => ArrayData::F32(v.iter().map(|&x| x as f32).collect()),
            DType::F64 => ArrayData::F64(v),
        };
        HostArray {
            shape: self.shape.clone(),
            data,
        }
    }

    /// Reads a little-endian `<f2`, `<f4` or `<f8` C-order `.npy` file.
    pub fn read_npy(path: &Path) -> Result<Self> {
        let p = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|source| Error::Io {
            path: p.clone(),
            source,
        })?;
        Self::parse_npy(&bytes, &p)
    }

    /// Parses the bytes of a `.npy` file (`name` labels errors): any input gives an array or
    /// an [`Error::Case`], never a panic, and nothing is allocated beyond what the bytes hold.
    pub fn parse_npy(bytes: &[u8], name: &str) -> Result<Self> {
        let p = name.to_string();
        let bad = |msg: String| Error::Case {
            path: p.clone(),
            msg,
        };
        let mut rest = bytes;
        let header = npyz::NpyHeader::from_reader(&mut rest)
            .map_err(|e| bad(format!("not a valid .npy file: {e}")))?;
        let data_len = rest.len();
        let npy = npyz::NpyFile::with_header(header, rest);
        if npy.order() != npyz::Order::C {
            return Err(bad(
                "Fortran-order arrays are not supported; save in C order".into(),
            ));
        }
        let shape: Vec<usize> = npy
            .shape()
            .iter()
            .map(|&d| usize::try_from(d))
            .collect::<std::result::Result<_, _>>()
            .map_err(|_| bad(format!("shape {:?} does not fit in memory", npy.shape())))?;
        let descr = npy.dtype().descr().trim_matches('\'').to_string();
        // The header's shape must match the data that follows (checked before reading, so a
        // huge claimed shape is an error, not a huge allocation).
        let elem = match descr.as_str() {
            "<f2" => 2,
            "<f4" => 4,
            "<f8" => 8,
            _ => 1,
        };
        let want = shape
            .iter()
            .try_fold(elem, |a: usize, &d| a.checked_mul(d))
            .ok_or_else(|| bad(format!("shape {shape:?} overflows")))?;
        if want > data_len {
            return Err(bad(format!(
                "shape {shape:?} of {descr} needs {want} data bytes, the file has {data_len}"
            )));
        }
        let io = |e: std::io::Error| bad(format!("reading {descr} data: {e}"));
        let data = match descr.as_str() {
            "<f2" => ArrayData::F16(npy.into_vec::<f16>().map_err(io)?),
            "<f4" => ArrayData::F32(npy.into_vec::<f32>().map_err(io)?),
            "<f8" => ArrayData::F64(npy.into_vec::<f64>().map_err(io)?),
            other => {
                return Err(bad(format!(
                    "dtype {other} is not supported (expected little-endian <f2, <f4 or <f8)"
                )))
            }
        };
        Ok(HostArray { shape, data })
    }

    /// Writes a `.npy` file (through a temporary file renamed into place, so a failed write
    /// leaves no partial output). bf16 arrays are written as `<f4` holding the bf16 values.
    pub fn write_npy(&self, path: &Path) -> Result<()> {
        let p = path.display().to_string();
        let io = |source| Error::Io {
            path: p.clone(),
            source,
        };
        let mut buf = Vec::new();
        let shape: Vec<u64> = self.shape.iter().map(|&d| d as u64).collect();
        fn put<T: npyz::AutoSerialize + Copy>(
            buf: &mut Vec<u8>,
            shape: &[u64],
            v: &[T],
        ) -> std::io::Result<()> {
            use npyz::WriterBuilder;
            let mut w = npyz::WriteOptions::new()
                .default_dtype()
                .shape(shape)
                .writer(buf)
                .begin_nd()?;
            w.extend(v.iter().copied())?;
            w.finish()
        }
        match &self.data {
            ArrayData::F16(v) => put(&mut buf, &shape, v),
            ArrayData::BF16(v) => {
                let wide: Vec<f32> = v.iter().map(|x| x.to_f32()).collect();
                put(&mut buf, &shape, &wide)
            }
            ArrayData::F32(v) => put(&mut buf, &shape, v),
            ArrayData::F64(v) => put(&mut buf, &shape, v),
        }
        .map_err(io)?;
        let tmp = path.with_extension("npy.tmp");
        std::fs::write(&tmp, &buf).map_err(io)?;
        std::fs::rename(&tmp, path).map_err(io)
    }
}

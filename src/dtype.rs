//! Element types: `f16`, `f32`, `f64`, each with its accumulation type.

use half::f16;
use std::fmt::Debug;

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::f16 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Runtime tag of an element type (for files, the CLI and dispatch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE half precision (`half::f16`).
    F16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl DType {
    /// Short name, also the CUDA kernel-name suffix: `f16`, `f32`, `f64`.
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F16 => 2,
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// All element types, in size order.
    pub const ALL: [DType; 3] = [DType::F16, DType::F32, DType::F64];
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for DType {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "f16" | "float16" | "half" => Ok(DType::F16),
            "f32" | "float32" | "float" => Ok(DType::F32),
            "f64" | "float64" | "double" => Ok(DType::F64),
            other => Err(format!(
                "unknown dtype {other:?} (expected f16, f32 or f64)"
            )),
        }
    }
}

/// Accumulation type: `f32` or `f64`. Coordinates, weights and sums are computed in it.
pub trait Accum:
    num_traits::Float
    + num_traits::FromPrimitive
    + Default
    + Debug
    + Send
    + Sync
    + std::iter::Sum
    + 'static
{
    /// Convert from `f64` (rounding to nearest).
    fn from_f64_lossy(v: f64) -> Self;
    /// Exact (f32) or identity (f64) widening.
    fn to_f64_exact(self) -> f64;
    /// An integer index or size as this type.
    fn from_index(v: usize) -> Self;
}

impl Accum for f32 {
    fn from_f64_lossy(v: f64) -> Self {
        v as f32
    }
    fn to_f64_exact(self) -> f64 {
        self as f64
    }
    fn from_index(v: usize) -> Self {
        v as f32
    }
}

impl Accum for f64 {
    fn from_f64_lossy(v: f64) -> Self {
        v
    }
    fn to_f64_exact(self) -> f64 {
        self
    }
    fn from_index(v: usize) -> Self {
        v as f64
    }
}

/// A tensor element type. Sealed: implemented for `half::f16`, `f32` and `f64` only.
///
/// `f16` accumulates in `f32`; `f32` and `f64` accumulate in themselves (SPEC, common rules).
///
/// Every element type is also plain device data for cudarc (`DeviceRepr`, `ValidAsZeroBits`),
/// so device buffers (`CudaSlice<T>`) of it can be allocated, filled and copied.
pub trait Element:
    sealed::Sealed
    + Copy
    + Default
    + Debug
    + PartialOrd
    + Send
    + Sync
    + cudarc::driver::DeviceRepr
    + cudarc::driver::ValidAsZeroBits
    + 'static
{
    /// The accumulation type.
    type Acc: Accum;
    /// Runtime tag.
    const DTYPE: DType;
    /// CUDA kernel-name suffix (`resize_gather_` + `SUFFIX`).
    const SUFFIX: &'static str;
    /// Widen to the accumulation type (exact).
    fn to_acc(self) -> Self::Acc;
    /// Round from the accumulation type (the one final rounding).
    fn from_acc(a: Self::Acc) -> Self;
    /// Widen to `f64` (exact).
    fn to_f64(self) -> f64;
    /// Round from `f64`.
    fn from_f64(v: f64) -> Self;
    /// Convert a block to the accumulation type. `dst.len()` must equal `src.len()`.
    fn slice_to_acc(src: &[Self], dst: &mut [Self::Acc]);
    /// Round a block from the accumulation type. `dst.len()` must equal `src.len()`.
    fn slice_from_acc(src: &[Self::Acc], dst: &mut [Self]);
    /// View a block as the accumulation type when it already is one (f32, f64), without copying.
    fn as_acc_slice(s: &[Self]) -> Option<&[Self::Acc]>;
    /// Mutable view as the accumulation type when it already is one (f32, f64).
    fn as_acc_slice_mut(s: &mut [Self]) -> Option<&mut [Self::Acc]>;
}

impl Element for f16 {
    type Acc = f32;
    const DTYPE: DType = DType::F16;
    const SUFFIX: &'static str = "f16";
    fn to_acc(self) -> f32 {
        self.to_f32()
    }
    fn from_acc(a: f32) -> Self {
        f16::from_f32(a)
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn slice_to_acc(src: &[Self], dst: &mut [f32]) {
        // F16C/NEON block conversion where the CPU has it.
        use half::slice::HalfFloatSliceExt;
        src.convert_to_f32_slice(dst);
    }
    fn slice_from_acc(src: &[f32], dst: &mut [Self]) {
        use half::slice::HalfFloatSliceExt;
        dst.convert_from_f32_slice(src);
    }
    fn as_acc_slice(_: &[Self]) -> Option<&[f32]> {
        None
    }
    fn as_acc_slice_mut(_: &mut [Self]) -> Option<&mut [f32]> {
        None
    }
}

macro_rules! native_element {
    ($t:ty, $tag:ident, $suffix:literal) => {
        impl Element for $t {
            type Acc = $t;
            const DTYPE: DType = DType::$tag;
            const SUFFIX: &'static str = $suffix;
            fn to_acc(self) -> $t {
                self
            }
            fn from_acc(a: $t) -> Self {
                a
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            fn slice_to_acc(src: &[Self], dst: &mut [$t]) {
                dst.copy_from_slice(src);
            }
            fn slice_from_acc(src: &[$t], dst: &mut [Self]) {
                dst.copy_from_slice(src);
            }
            fn as_acc_slice(s: &[Self]) -> Option<&[$t]> {
                Some(s)
            }
            fn as_acc_slice_mut(s: &mut [Self]) -> Option<&mut [$t]> {
                Some(s)
            }
        }
    };
}
native_element!(f32, F32, "f32");
native_element!(f64, F64, "f64");

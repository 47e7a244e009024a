//! Element types: `f16`, `bf16`, `f32`, `f64`, each with its accumulation type.

use half::{bf16, f16};
use std::fmt::Debug;

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::f16 {}
    impl Sealed for half::bf16 {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// Runtime tag of an element type (for files, the CLI and dispatch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE half precision (`half::f16`).
    F16,
    /// bfloat16 (`half::bf16`): `f32`'s exponent range with an 8-bit significand.
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl DType {
    /// Short name, also the CUDA kernel-name suffix: `f16`, `bf16`, `f32`, `f64`.
    pub const fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
            DType::F64 => "f64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F16 | DType::BF16 => 2,
            DType::F32 => 4,
            DType::F64 => 8,
        }
    }

    /// All element types, in size order.
    pub const ALL: [DType; 4] = [DType::F16, DType::BF16, DType::F32, DType::F64];
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
            "bf16" | "bfloat16" => Ok(DType::BF16),
            "f32" | "float32" | "float" => Ok(DType::F32),
            "f64" | "float64" | "double" => Ok(DType::F64),
            other => Err(format!(
                "unknown dtype {other:?} (expected f16, bf16, f32 or f64)"
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
    /// The slice as `f32` when this type is `f32` (kernels written for f32 registers only).
    fn as_f32(s: &[Self]) -> Option<&[f32]>;
    /// [`Accum::as_f32`], mutable.
    fn as_f32_mut(s: &mut [Self]) -> Option<&mut [f32]>;
    /// An `f32` slice as this type when it is `f32` (scratch kept as `f32`).
    fn from_f32_mut(s: &mut [f32]) -> Option<&mut [Self]>;
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
    fn as_f32(s: &[Self]) -> Option<&[f32]> {
        Some(s)
    }
    fn as_f32_mut(s: &mut [Self]) -> Option<&mut [f32]> {
        Some(s)
    }
    fn from_f32_mut(s: &mut [f32]) -> Option<&mut [Self]> {
        Some(s)
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
    fn as_f32(_: &[Self]) -> Option<&[f32]> {
        None
    }
    fn as_f32_mut(_: &mut [Self]) -> Option<&mut [f32]> {
        None
    }
    fn from_f32_mut(_: &mut [f32]) -> Option<&mut [Self]> {
        None
    }
}

/// A tensor element type. Sealed: implemented for `half::f16`, `half::bf16`, `f32` and `f64`
/// only.
///
/// `f16` and `bf16` accumulate in `f32`; `f32` and `f64` accumulate in themselves (SPEC,
/// common rules).
///
/// Every element type is also plain device data for cudarc (`DeviceRepr`, `ValidAsZeroBits`),
/// so device buffers (`CudaSlice<T>`) of it can be allocated, filled and copied, and plain
/// old data for `bytemuck` (`Pod`), so slices of it can be viewed as bytes without copying.
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
    + bytemuck::Pod
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
    #[inline]
    fn to_acc(self) -> f32 {
        crate::cpu::simd::f16_bits_to_f32_one(self.to_bits())
    }
    #[inline]
    fn from_acc(a: f32) -> Self {
        f16::from_bits(crate::cpu::simd::f32_to_f16_bits_one(a))
    }
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        f16::from_f64(v)
    }
    fn slice_to_acc(src: &[Self], dst: &mut [f32]) {
        // AVX-512's 16-wide conversion where the level has it, else `half`'s (F16C eight
        // elements a call where the CPU has it): the same bits.
        use half::slice::HalfFloatSliceExt;
        if !crate::cpu::simd::f16_bits_to_f32_avx512(src.reinterpret_cast(), dst) {
            src.convert_to_f32_slice(dst);
        }
    }
    fn slice_from_acc(src: &[f32], dst: &mut [Self]) {
        use half::slice::HalfFloatSliceExt;
        if !crate::cpu::simd::f32_to_f16_bits_avx512(src, dst.reinterpret_cast_mut()) {
            dst.convert_from_f32_slice(src);
        }
    }
    fn as_acc_slice(_: &[Self]) -> Option<&[f32]> {
        None
    }
    fn as_acc_slice_mut(_: &mut [Self]) -> Option<&mut [f32]> {
        None
    }
}

impl Element for bf16 {
    type Acc = f32;
    const DTYPE: DType = DType::BF16;
    const SUFFIX: &'static str = "bf16";
    fn to_acc(self) -> f32 {
        self.to_f32()
    }
    fn from_acc(a: f32) -> Self {
        bf16::from_f32(a)
    }
    fn to_f64(self) -> f64 {
        bf16::to_f64(self)
    }
    fn from_f64(v: f64) -> Self {
        bf16_from_f64(v)
    }
    fn slice_to_acc(src: &[Self], dst: &mut [f32]) {
        // `half` converts bf16 slices one scalar at a time; ours vectorise (a 16-bit shift).
        use half::slice::HalfFloatSliceExt;
        crate::cpu::simd::bf16_bits_to_f32(src.reinterpret_cast(), dst);
    }
    fn slice_from_acc(src: &[f32], dst: &mut [Self]) {
        use half::slice::HalfFloatSliceExt;
        crate::cpu::simd::f32_to_bf16_bits(src, dst.reinterpret_cast_mut());
    }
    fn as_acc_slice(_: &[Self]) -> Option<&[f32]> {
        None
    }
    fn as_acc_slice_mut(_: &mut [Self]) -> Option<&mut [f32]> {
        None
    }
}

/// `v` rounded to the nearest bf16, ties to even, in one rounding. (`half::bf16::from_f64`
/// drops the low 32 bits of `v` before rounding, so it rounds a value just above a tie down.)
/// Rounding to `f32` towards zero with a sticky last bit ("round to odd") keeps the
/// information the second rounding needs: `f32` has 16 more significand bits than bf16.
fn bf16_from_f64(v: f64) -> bf16 {
    let r = v as f32;
    if r as f64 == v || v.is_nan() {
        return bf16::from_f32(r);
    }
    // `r` is inexact: step it towards zero when the nearest rounding went away from zero
    // (also turns an overflow to infinity into f32::MAX), then make it odd.
    let t = if (r as f64).abs() > v.abs() {
        f32::from_bits(r.to_bits() - 1)
    } else {
        r
    };
    bf16::from_f32(f32::from_bits(t.to_bits() | 1))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for d in DType::ALL {
            assert_eq!(d.name().parse::<DType>(), Ok(d));
        }
        assert_eq!("bfloat16".parse::<DType>(), Ok(DType::BF16));
        assert!("bf8".parse::<DType>().unwrap_err().contains("bf16"));
        assert_eq!(<bf16 as Element>::SUFFIX, DType::BF16.name());
        assert_eq!(DType::BF16.size(), std::mem::size_of::<bf16>());
    }

    #[test]
    fn bf16_from_f64_rounds_once_to_nearest_even() {
        let one = 1.0f64;
        let ulp = 2f64.powi(-7); // bf16 spacing in [1, 2)
        for (v, want) in [
            (one, one),
            (one + ulp / 2.0, one),                        // tie, to even
            (one + 1.5 * ulp, one + 2.0 * ulp),            // tie, to even (up)
            (one + ulp / 2.0 + 2f64.powi(-40), one + ulp), // just above a tie: up
            (one + ulp / 2.0 - 2f64.powi(-40), one),       // just below: down
            (-(one + ulp / 2.0 + 2f64.powi(-40)), -(one + ulp)),
            (1e300, f64::INFINITY),
            (-1e300, f64::NEG_INFINITY),
            (1e-300, 0.0),
        ] {
            assert_eq!(bf16_from_f64(v).to_f64(), want, "{v:e}");
        }
        assert!(bf16_from_f64(f64::NAN).is_nan());
        // bf16::MAX plus just under half an ulp stays finite; half an ulp rounds to infinity.
        let max = bf16::MAX.to_f64();
        let half_ulp = 2f64.powi(127 - 8);
        assert_eq!(bf16_from_f64(max + half_ulp * 0.99).to_f64(), max);
        assert_eq!(bf16_from_f64(max + half_ulp).to_f64(), f64::INFINITY);
        // Agrees with the f32 rounding wherever f64 -> f32 is exact.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..100_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let f = f32::from_bits((x >> 32) as u32);
            assert_eq!(
                bf16_from_f64(f as f64).to_bits(),
                bf16::from_f32(f).to_bits(),
                "{f:e}"
            );
        }
    }

    /// gradops' f16 conversions (slices at the process's SIMD level, and single values) give
    /// `half`'s bits (F16C's where the CPU has it): every f16 widened; rounded, every sign,
    /// exponent and kept mantissa with the dropped bits zero, one, just under, at and just
    /// over the tie and all ones, the specials, and random patterns.
    #[test]
    fn f16_conversions_match_half() {
        let all: Vec<f16> = (0..=u16::MAX).map(f16::from_bits).collect();
        let mut wide = vec![0f32; all.len()];
        f16::slice_to_acc(&all, &mut wide);
        for (h, w) in all.iter().zip(&wide) {
            let want = h.to_f32().to_bits();
            assert_eq!(w.to_bits(), want, "{:#06x}", h.to_bits());
            assert_eq!(h.to_acc().to_bits(), want, "{:#06x}", h.to_bits());
        }
        let mut src: Vec<f32> = vec![
            f32::NAN,
            -f32::NAN,
            f32::from_bits(0x7F80_0001), // signalling NaN
            f32::from_bits(0xFFA0_1234),
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MAX,
            65504.0,
            65519.99,
            65520.0, // the tie above f16::MAX: to infinity
            f32::MIN_POSITIVE,
            f32::from_bits(1),
        ];
        let mut x = 0x2545_f491u32;
        for hi in 0..1u32 << 19 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            for lo in [0, 1, 0x0FFF, 0x1000, 0x1001, 0x1FFF, x & 0x1FFF] {
                src.push(f32::from_bits(hi << 13 | lo));
            }
            src.push(f32::from_bits(x));
        }
        let mut out = vec![f16::ZERO; src.len()];
        f16::slice_from_acc(&src, &mut out);
        for (f, h) in src.iter().zip(&out) {
            let want = f16::from_f32(*f).to_bits();
            assert_eq!(h.to_bits(), want, "{:#010x}", f.to_bits());
            assert_eq!(f16::from_acc(*f).to_bits(), want, "{:#010x}", f.to_bits());
        }
    }

    #[test]
    fn bf16_slice_conversions_match_scalar() {
        // Every bf16 bit pattern widens as `to_f32` does (NaNs stay NaN).
        let all: Vec<bf16> = (0..=u16::MAX).map(bf16::from_bits).collect();
        let mut wide = vec![0f32; all.len()];
        bf16::slice_to_acc(&all, &mut wide);
        for (h, w) in all.iter().zip(&wide) {
            if h.is_nan() {
                assert!(w.is_nan());
            } else {
                assert_eq!(w.to_bits(), h.to_f32().to_bits());
            }
        }
        // f32 -> bf16 rounds as `bf16::from_f32`: specials, ties, the carry into infinity.
        let mut src: Vec<f32> = vec![
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            f32::MAX,
            f32::MIN,
            f32::MIN_POSITIVE,
            f32::from_bits(1),
            f32::from_bits(0x3f80_8000), // tie, to even (down)
            f32::from_bits(0x3f81_8000), // tie, to even (up)
            f32::from_bits(0x7f7f_8000), // rounds to infinity
        ];
        let mut x = 0x1234_5678u32;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            src.push(f32::from_bits(x));
        }
        let mut out = vec![bf16::ZERO; src.len()];
        bf16::slice_from_acc(&src, &mut out);
        for (f, h) in src.iter().zip(&out) {
            if f.is_nan() {
                assert!(h.is_nan(), "{f:e}");
            } else {
                assert_eq!(h.to_bits(), bf16::from_f32(*f).to_bits(), "{f:e}");
            }
        }
    }
}

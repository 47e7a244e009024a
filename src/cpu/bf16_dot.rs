//! A safe front for AVX512_BF16's `vdpbf16ps`: sixteen f32 sums, each gaining the two
//! products of a pair of bf16 values in one instruction (twice the products of an f32 FMA).
//!
//! pulp's x86-v4 token does not carry the feature, and `core::arch`'s `_mm512_dpbf16_ps` is
//! `unsafe` to call outside a function compiled with it. So this module defines a token of
//! its own, [`V4Bf16`] (pulp's `simd_type!`: x86-64-v4 plus `avx512bf16`, detected at run
//! time), runs kernels compiled for it ([`Bf16Dot::vectorize`]) and wraps the one intrinsic
//! in a safe method that takes the token as its proof ([`Bf16Dot::dot`]), the way pulp wraps
//! every other intrinsic. It is the only `unsafe` of the CPU kernels besides `gemm`'s front.

use pulp::{f32x16, u32x16};

pulp::simd_type! {
    /// x86-64-v4 (pulp's `V4` features) with AVX512_BF16.
    pub(crate) struct V4Bf16 {
        pub sse: "sse",
        pub sse2: "sse2",
        pub fxsr: "fxsr",
        pub sse3: "sse3",
        pub ssse3: "ssse3",
        pub sse4_1: "sse4.1",
        pub sse4_2: "sse4.2",
        pub popcnt: "popcnt",
        pub avx: "avx",
        pub avx2: "avx2",
        pub bmi1: "bmi1",
        pub bmi2: "bmi2",
        pub fma: "fma",
        pub lzcnt: "lzcnt",
        pub avx512f: "avx512f",
        pub avx512bw: "avx512bw",
        pub avx512cd: "avx512cd",
        pub avx512dq: "avx512dq",
        pub avx512vl: "avx512vl",
        pub avx512bf16: "avx512bf16",
    }
}

/// Proof that the CPU runs `vdpbf16ps` and that the capped SIMD level allows AVX-512: the
/// x86-v4 token for everything else a kernel does, and the token its code is compiled for.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Bf16Dot {
    pub(crate) v4: pulp::x86::V4,
    bf: V4Bf16,
}

impl Bf16Dot {
    /// The tokens where the CPU has AVX512_BF16 and the capped level is AVX-512.
    pub(crate) fn new() -> Option<Bf16Dot> {
        let v4 = super::simd::avx512()?;
        if !super::simd::bf16_dot_allowed() {
            return None;
        }
        V4Bf16::try_new().map(|bf| Bf16Dot { v4, bf })
    }

    /// Runs `f` compiled with AVX-512 and AVX512_BF16 enabled (its body must be inlined into
    /// the closure, as every pulp kernel's, for [`Self::dot`] to become one instruction).
    #[inline(always)]
    pub(crate) fn vectorize<R>(self, f: impl FnOnce() -> R) -> R {
        self.bf.vectorize(f)
    }

    /// `acc[i] + a[i].hi * b[i].hi + a[i].lo * b[i].lo` per lane, the operands' lanes each a
    /// pair of bf16 bit patterns (`lo | hi << 16`): `vdpbf16ps`, whose products are exact in
    /// f32 and whose two additions each round to nearest even, with bf16 subnormal inputs read
    /// as zero and subnormal sums flushed to zero (Intel SDM, VDPBF16PS).
    #[inline(always)]
    pub(crate) fn dot(self, acc: f32x16, a: u32x16, b: u32x16) -> f32x16 {
        use core::arch::x86_64::{__m512, __m512bh, _mm512_dpbf16_ps};
        use core::mem::transmute;
        // SAFETY: a `Bf16Dot` exists only where `V4Bf16::try_new` found `avx512bf16`,
        // `avx512f` and `avx512vl` on this CPU, all the intrinsic needs. The transmutes are
        // between 64-byte vector types whose every bit pattern is valid.
        unsafe {
            transmute::<__m512, f32x16>(_mm512_dpbf16_ps(
                transmute::<f32x16, __m512>(acc),
                transmute::<u32x16, __m512bh>(a),
                transmute::<u32x16, __m512bh>(b),
            ))
        }
    }
}

/// One [`Bf16Dot::dot`] operand lane from two stored bf16 bit patterns: `lo | hi << 16`.
#[inline(always)]
pub(crate) fn pair(lo: u16, hi: u16) -> u32 {
    u32::from(lo) | (u32::from(hi) << 16)
}

#[cfg(test)]
mod tests {
    use super::Bf16Dot;

    /// A pair of bf16 values as one `vdpbf16ps` operand lane, from f32 values exact in bf16:
    /// `lo` in the low half (the kernels pair the stored bits themselves).
    fn pair_bits(lo: f32, hi: f32) -> u32 {
        (lo.to_bits() >> 16) | (hi.to_bits() & 0xffff_0000)
    }

    /// Where the CPU has the instruction: each lane adds both products of its pair, exactly
    /// for small integers; elsewhere the test says why it checks nothing.
    #[test]
    fn dot_adds_both_products_of_each_pair() {
        let Some(d) = Bf16Dot::new() else {
            eprintln!("skipped: no AVX512_BF16 on this CPU (or the SIMD level is capped)");
            return;
        };
        let got = d.vectorize(|| {
            let v4 = d.v4;
            let a = v4.splat_u32x16(pair_bits(2.0, 1.0));
            let mut b = [0u32; 16];
            for (i, b) in b.iter_mut().enumerate() {
                *b = pair_bits(i as f32, -3.0);
            }
            let acc = v4.splat_f32x16(0.5);
            d.dot(acc, a, pulp::cast(b))
        });
        let got: [f32; 16] = pulp::cast(got);
        for (i, &g) in got.iter().enumerate() {
            assert_eq!(g, 0.5 + 2.0 * i as f32 - 3.0, "lane {i}");
        }
    }
}

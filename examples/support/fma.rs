//! Shared by the `fma_peak` and `input_timing` examples (included with `#[path]`): ten
//! independent FMA chains of full vectors, compiled for AVX-512 / AVX2+FMA and run at the level
//! gradops' kernels run at (`GRADOPS_CPU_SIMD` caps both).

use pulp::{Simd, WithSimd};

pub const CHAINS: usize = 10;

/// `iters` rounds of `acc = acc * m + a` on CHAINS independent vectors: 2 flops a lane each.
/// Returns a sum of the results (so nothing is optimised away) and the lanes per vector.
struct Chains {
    iters: usize,
    seed: f32,
}

impl WithSimd for Chains {
    type Output = (f32, usize);
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) -> (f32, usize) {
        let mut acc = [simd.splat_f32s(self.seed); CHAINS];
        let (m, a) = (simd.splat_f32s(0.999_999), simd.splat_f32s(1e-7));
        for _ in 0..self.iters {
            for v in acc.iter_mut() {
                *v = simd.mul_add_f32s(*v, m, a);
            }
        }
        let sum = acc.iter().map(|&v| simd.reduce_sum_f32s(v)).sum();
        (sum, std::mem::size_of::<S::f32s>() / 4)
    }
}

/// [`Chains`] at gradops' SIMD level.
pub fn chains(iters: usize, seed: f32) -> (f32, usize) {
    let op = Chains { iters, seed };
    #[cfg(target_arch = "x86_64")]
    match gradops::simd_level() {
        gradops::SimdLevel::Avx512 | gradops::SimdLevel::Avx512Bf16 => {
            if let Some(simd) = pulp::x86::V4::try_new() {
                return <pulp::x86::V4 as Simd>::vectorize(simd, op);
            }
        }
        gradops::SimdLevel::Avx2 => {
            if let Some(simd) = pulp::x86::V3::try_new() {
                return <pulp::x86::V3 as Simd>::vectorize(simd, op);
            }
        }
        _ => {}
    }
    #[cfg(target_arch = "aarch64")]
    if gradops::simd_level() == gradops::SimdLevel::Neon {
        return pulp::Arch::new().dispatch(op);
    }
    <pulp::Scalar as Simd>::vectorize(pulp::Scalar::new(), op)
}

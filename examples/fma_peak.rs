//! The cores' peak f32 multiply-add rate, the yardstick BENCHMARKS.md sets conv GFLOP/s against.
//! Ten independent FMA chains of full vectors per thread (enough to hide the FMA latency on two
//! 512-bit FMA units as well as on two 256-bit ones), one thread per rayon worker, compiled for
//! AVX-512 / AVX2+FMA and run at the level gradops' kernels run at (`GRADOPS_CPU_SIMD` caps
//! both). Prints the best of a few runs.
//! Run: `cargo run --release --example fma_peak`.

use pulp::{Simd, WithSimd};
use rayon::prelude::*;
use std::time::Instant;

const CHAINS: usize = 10;

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
fn chains(iters: usize, seed: f32) -> (f32, usize) {
    let op = Chains { iters, seed };
    #[cfg(target_arch = "x86_64")]
    match gradops::simd_level() {
        gradops::SimdLevel::Avx512 => {
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

fn main() {
    let threads = rayon::current_num_threads();
    // Fewer rounds at the baseline level, whose multiply-add is a libm call.
    let iters = if gradops::simd_level() == gradops::SimdLevel::Scalar {
        200_000
    } else {
        20_000_000
    };
    let mut best = 0f64;
    let mut lanes = 1;
    for _ in 0..5 {
        let t0 = Instant::now();
        let runs: Vec<(f32, usize)> = (0..threads)
            .into_par_iter()
            .map(|t| chains(iters, 1.0 + t as f32))
            .collect();
        let secs = t0.elapsed().as_secs_f64();
        lanes = runs[0].1;
        std::hint::black_box(runs.iter().map(|r| r.0).sum::<f32>());
        let flops = (2 * CHAINS * lanes * iters * threads) as f64;
        best = best.max(flops / secs / 1e9);
    }
    println!(
        "peak f32 FMA rate: {best:.1} GFLOP/s on {threads} threads (best of 5), SIMD {} \
         ({lanes} f32 lanes, {CHAINS} chains)",
        gradops::simd_level()
    );
}

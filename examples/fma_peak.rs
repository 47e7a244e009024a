//! The cores' peak f32 multiply-add rate, the yardstick BENCHMARKS.md sets conv GFLOP/s against.
//! Ten independent 8-lane FMA chains per thread (enough to hide FMA latency), one thread per
//! rayon worker, compiled for AVX-512 / AVX2+FMA and run at the level gradops' kernels run at
//! (`GRADOPS_CPU_SIMD` caps both). Prints the best of a few runs.
//! Run: `cargo run --release --example fma_peak`.

use pulp::{Simd, WithSimd};
use rayon::prelude::*;
use std::time::Instant;

const CHAINS: usize = 10;
const LANES: usize = 8;

/// `iters` rounds of `acc = acc * m + a` on CHAINS x LANES independent values: 2 flops each.
struct Chains {
    iters: usize,
    seed: f32,
}

impl WithSimd for Chains {
    type Output = f32;
    #[inline(always)]
    fn with_simd<S: Simd>(self, _: S) -> f32 {
        let mut acc = [self.seed; CHAINS * LANES];
        let (m, a) = (0.999_999_f32, 1e-7_f32);
        for _ in 0..self.iters {
            for v in acc.iter_mut() {
                *v = v.mul_add(m, a);
            }
        }
        acc.iter().sum()
    }
}

/// [`Chains`] at gradops' SIMD level.
fn chains(iters: usize, seed: f32) -> f32 {
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
    let iters = 20_000_000;
    let flops = (2 * CHAINS * LANES * iters * threads) as f64;
    let mut best = 0f64;
    for _ in 0..5 {
        let t0 = Instant::now();
        let s: f32 = (0..threads)
            .into_par_iter()
            .map(|t| chains(iters, 1.0 + t as f32))
            .sum();
        let gflops = flops / t0.elapsed().as_secs_f64() / 1e9;
        std::hint::black_box(s);
        best = best.max(gflops);
    }
    println!(
        "peak f32 FMA rate: {best:.1} GFLOP/s on {threads} threads (best of 5), SIMD {}",
        gradops::simd_level()
    );
}

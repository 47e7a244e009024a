//! The cores' peak f32 multiply-add rate, the yardstick BENCHMARKS.md sets conv GFLOP/s against.
//! Ten independent FMA chains of full vectors per thread (enough to hide the FMA latency on two
//! 512-bit FMA units as well as on two 256-bit ones), one thread per rayon worker, compiled for
//! AVX-512 / AVX2+FMA and run at the level gradops' kernels run at (`GRADOPS_CPU_SIMD` caps
//! both). Prints the best of a few runs.
//! Run: `cargo run --release --example fma_peak`.

use rayon::prelude::*;
use std::time::Instant;

#[path = "support/fma.rs"]
mod fma;
use fma::{chains, CHAINS};

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

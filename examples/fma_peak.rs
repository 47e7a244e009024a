//! The cores' peak f32 multiply-add rate, the yardstick BENCHMARKS.md sets conv GFLOP/s against.
//! Ten independent 8-lane FMA chains per thread (enough to hide FMA latency), one thread per
//! rayon worker, compiled for AVX-512 / AVX2+FMA at run time. Prints the best of a few runs.
//! Run: `cargo run --release --example fma_peak`.

use multiversion::multiversion;
use rayon::prelude::*;
use std::time::Instant;

const CHAINS: usize = 10;
const LANES: usize = 8;

/// `iters` rounds of `acc = acc * m + a` on CHAINS x LANES independent values: 2 flops each.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn chains(iters: usize, seed: f32) -> f32 {
    let mut acc = [seed; CHAINS * LANES];
    let (m, a) = (0.999_999_f32, 1e-7_f32);
    for _ in 0..iters {
        for v in acc.iter_mut() {
            *v = v.mul_add(m, a);
        }
    }
    acc.iter().sum()
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
    println!("peak f32 FMA rate: {best:.1} GFLOP/s on {threads} threads (best of 5)");
}

//! Times `conv2d_backprop_input_into` (W4, W5) and the forward `conv2d_into` (W4f, W5f) on the
//! SPEC's shapes (f32; NCHW and NHWC, or the one layout named: `nchw`, `nhwc`): median and min of `REPS`
//! calls. `cargo run --release --example input_timing [reps] [filter]`, e.g.
//! `RAYON_NUM_THREADS=1 target/release/examples/input_timing 40 W4,nchw`.
//!
//! `input_timing series REPS FILTER` prints every call instead, one line each: the call's time
//! and the f32 FMA rate of one thread's burst of independent FMA chains (about 5 ms, the
//! `fma_peak` loop) right after it, so a call slowed by a shared core can be told from one
//! slowed by its own work (BENCHMARKS.md, 2026-12-02: the FMA rate held while the calls
//! slowed), e.g. `RAYON_NUM_THREADS=1 taskset -c 0 target/release/examples/input_timing series 200 W5,nhwc`.
use gradops::{
    conv2d_backprop_input_into, conv2d_into, Conv2dAttrs, FilterRef, Layout, Padding, TensorRef,
};
use std::time::Instant;

#[path = "support/fma.rs"]
mod fma;

/// Rounds of the FMA burst after each call in `series` mode.
const SERIES_FMA_ITERS: usize = 2_000_000;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let series = args.first().is_some_and(|a| a == "series");
    if series {
        args.remove(0);
    }
    let reps: usize = args.first().and_then(|s| s.parse().ok()).unwrap_or(30);
    let only = args.get(1).cloned().unwrap_or_default();
    for (name, co, s, fwd) in [
        ("W4", 64usize, 1usize, false),
        ("W5", 128, 2, false),
        ("W4f", 64, 1, true),
        ("W5f", 128, 2, true),
    ] {
        if !only.is_empty() && !only.split(',').any(|o| o == name) {
            continue;
        }
        for layout in [Layout::Nchw, Layout::Nhwc] {
            if (only.contains("nchw") && layout != Layout::Nchw)
                || (only.contains("nhwc") && layout != Layout::Nhwc)
            {
                continue;
            }
            let (n, c, h) = (8usize, 64usize, 56usize);
            let o = h.div_ceil(s);
            let shape = |c: usize, h: usize| match layout {
                Layout::Nchw => [n, c, h, h],
                Layout::Nhwc => [n, h, h, c],
            };
            let x: Vec<f32> = (0..n * c * h * h)
                .map(|i| ((i * 7) % 13) as f32 * 0.1 - 0.6)
                .collect();
            let dy: Vec<f32> = (0..n * co * o * o)
                .map(|i| ((i * 5) % 11) as f32 * 0.1 - 0.5)
                .collect();
            let w: Vec<f32> = (0..9 * c * co)
                .map(|i| ((i * 3) % 7) as f32 * 0.1 - 0.3)
                .collect();
            let attrs = Conv2dAttrs::default()
                .strides([s, s])
                .padding(Padding::Same);
            let filter = FilterRef::new(&w, [3, 3, c, co]);
            let mut dx = vec![0f32; x.len()];
            let mut y = vec![0f32; dy.len()];
            let mut t = Vec::new();
            for i in 0..reps + 3 {
                let t0 = Instant::now();
                if fwd {
                    conv2d_into(
                        TensorRef::new(&x, shape(c, h), layout),
                        filter,
                        &attrs,
                        &mut y,
                    )
                } else {
                    conv2d_backprop_input_into(
                        TensorRef::new(&dy, shape(co, o), layout),
                        filter,
                        shape(c, h),
                        &attrs,
                        &mut dx,
                    )
                }
                .unwrap();
                t.push(t0.elapsed().as_secs_f64() * 1e3);
                if series && i >= 3 {
                    let t1 = Instant::now();
                    let (sum, lanes) = fma::chains(SERIES_FMA_ITERS, 1.0);
                    let flops = (2 * fma::CHAINS * lanes * SERIES_FMA_ITERS) as f64;
                    std::hint::black_box(sum);
                    println!(
                        "{name} {layout} call {:.3} ms, FMA burst {:.1} GFLOP/s",
                        t[t.len() - 1],
                        flops / t1.elapsed().as_secs_f64() / 1e9
                    );
                }
            }
            t.drain(..3);
            t.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!(
                "{name} {layout}: median {:.2} ms, min {:.2} ms",
                t[t.len() / 2],
                t[0]
            );
        }
    }
}

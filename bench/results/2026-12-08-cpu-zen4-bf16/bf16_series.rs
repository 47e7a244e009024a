//! One-thread profile and call-time spread of bf16 NHWC W4f (`conv2d_into`, 3x3, 64 -> 64,
//! SAME, x [8,56,56,64]) with nothing else in the process: `REPS` calls after 5 warm-up
//! calls, quantiles and a 0.25 ms histogram of the call times; `GAP_US` sleeps between calls.
//! Run as an example of the crate:
//!   cp bench/results/2026-12-08-cpu-zen4-bf16/bf16_series.rs examples/
//!   cargo build --release --example bf16_series
//!   RAYON_NUM_THREADS=1 perf record -e cpu-clock -o F target/release/examples/bf16_series 300
use gradops::{conv2d_into, Conv2dAttrs, FilterRef, Layout, Padding, TensorRef};
use half::bf16;
use std::time::Instant;

fn main() {
    let reps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(300);
    let gap_us: u64 = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(0);
    let (n, c, h, co) = (8usize, 64usize, 56usize, 64usize);
    let x: Vec<bf16> = (0..n * c * h * h)
        .map(|i| bf16::from_f32(((i * 7) % 13) as f32 * 0.1 - 0.6))
        .collect();
    let w: Vec<bf16> = (0..9 * c * co)
        .map(|i| bf16::from_f32(((i * 3) % 7) as f32 * 0.1 - 0.3))
        .collect();
    let attrs = Conv2dAttrs::default().padding(Padding::Same);
    let mut y = vec![bf16::ZERO; n * h * h * co];
    let mut t = Vec::new();
    for i in 0..reps + 5 {
        if gap_us > 0 {
            std::thread::sleep(std::time::Duration::from_micros(gap_us));
        }
        let s = Instant::now();
        conv2d_into(
            TensorRef::new(&x, [n, h, h, c], Layout::Nhwc),
            FilterRef::new(&w, [3, 3, c, co]),
            &attrs,
            &mut y,
        )
        .unwrap();
        if i >= 5 {
            t.push(s.elapsed().as_secs_f64() * 1e3);
        }
    }
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let q = |p: f64| t[((t.len() - 1) as f64 * p) as usize];
    println!(
        "min {:.2} p10 {:.2} p25 {:.2} p50 {:.2} p75 {:.2} p90 {:.2} max {:.2}",
        q(0.0), q(0.1), q(0.25), q(0.5), q(0.75), q(0.9), q(1.0)
    );
    let mut hist = std::collections::BTreeMap::new();
    for v in &t {
        *hist.entry((v * 4.0) as i64).or_insert(0) += 1;
    }
    for (k, c) in hist {
        println!("{:.2} {}", k as f64 / 4.0, c);
    }
}

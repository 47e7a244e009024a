//! Times `conv2d_backprop_filter_into` on W7/W8 shapes (NCHW and NHWC, f32): median of
//! `REPS` calls, and the CPU time per call of all threads together (from
//! `/proc/self/task/*/schedstat`: contention on a shared machine hardly changes it, so it is
//! the figure for A/B work). `cargo run --release --example filter_timing [reps] [W7|W8|nchw|nhwc]`
//! (comma-separated).
use gradops::{conv2d_backprop_filter_into, Conv2dAttrs, Layout, Padding, TensorRef};
use std::time::Instant;

/// CPU time of every thread of this process so far, in ns (0 where /proc is unavailable).
fn cpu_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let only = std::env::args().nth(2).unwrap_or_default();
    for (name, co, s) in [("W7", 64usize, 1usize), ("W8", 128, 2)] {
        if !only.is_empty() && !only.contains(name) {
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
            let attrs = Conv2dAttrs::default()
                .strides([s, s])
                .padding(Padding::Same);
            let mut dw = vec![0f32; 9 * c * co];
            let mut t = Vec::new();
            let mut c0 = 0;
            for r in 0..reps + 3 {
                if r == 3 {
                    c0 = cpu_ns();
                }
                let t0 = Instant::now();
                conv2d_backprop_filter_into(
                    TensorRef::new(&x, shape(c, h), layout),
                    TensorRef::new(&dy, shape(co, o), layout),
                    [3, 3, c, co],
                    &attrs,
                    &mut dw,
                )
                .unwrap();
                t.push(t0.elapsed().as_secs_f64() * 1e3);
            }
            let cpu = (cpu_ns() - c0) as f64 / 1e6 / reps as f64;
            t.drain(..3);
            t.sort_by(|a, b| a.partial_cmp(b).unwrap());
            println!(
                "{name} {layout}: median {:.2} ms, min {:.2} ms, cpu {cpu:.2} ms/call",
                t[t.len() / 2],
                t[0]
            );
        }
    }
}

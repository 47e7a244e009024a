//! Times `conv2d_backprop_input_into` (W4, W5) and the forward `conv2d_into` (W4f, W5f) on the
//! SPEC's shapes (f32; NCHW and NHWC, or the one layout named: `nchw`, `nhwc`): median and min of `REPS`
//! calls. `cargo run --release --example input_timing [reps] [filter]`, e.g.
//! `RAYON_NUM_THREADS=1 target/release/examples/input_timing 40 W4,nchw`.
use gradops::{
    conv2d_backprop_input_into, conv2d_into, Conv2dAttrs, FilterRef, Layout, Padding, TensorRef,
};
use std::time::Instant;

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let only = std::env::args().nth(2).unwrap_or_default();
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
            for _ in 0..reps + 3 {
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

//! f32 `conv2d_backprop_filter` on W7/W8 shapes against the f64 result of the same op
//! (relative L2), on zero-mean and on ReLU-like (non-negative) `x`.
//! `cargo run --release --example filter_accuracy`.
use gradops::{conv2d_backprop_filter, Conv2dAttrs, Layout, Padding, TensorRef};

fn main() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    for (name, co, s) in [("W7", 64usize, 1usize), ("W8", 128, 2)] {
        for relu in [false, true] {
            let (n, c, h) = (8usize, 64usize, 56usize);
            let o = h.div_ceil(s);
            let x: Vec<f64> = (0..n * c * h * h)
                .map(|_| {
                    let v = rnd();
                    if relu {
                        v.max(0.0)
                    } else {
                        v
                    }
                })
                .collect();
            let dy: Vec<f64> = (0..n * co * o * o).map(|_| rnd()).collect();
            let attrs = Conv2dAttrs::default()
                .strides([s, s])
                .padding(Padding::Same);
            let want = conv2d_backprop_filter(
                TensorRef::new(&x, [n, c, h, h], Layout::Nchw),
                TensorRef::new(&dy, [n, co, o, o], Layout::Nchw),
                [3, 3, c, co],
                &attrs,
            )
            .unwrap();
            let (x32, dy32): (Vec<f32>, Vec<f32>) = (
                x.iter().map(|&v| v as f32).collect(),
                dy.iter().map(|&v| v as f32).collect(),
            );
            // The reference from the f32-rounded inputs, so only the arithmetic is measured.
            let (xr, dyr): (Vec<f64>, Vec<f64>) = (
                x32.iter().map(|&v| v as f64).collect(),
                dy32.iter().map(|&v| v as f64).collect(),
            );
            let want_r = conv2d_backprop_filter(
                TensorRef::new(&xr, [n, c, h, h], Layout::Nchw),
                TensorRef::new(&dyr, [n, co, o, o], Layout::Nchw),
                [3, 3, c, co],
                &attrs,
            )
            .unwrap();
            let got = conv2d_backprop_filter(
                TensorRef::new(&x32, [n, c, h, h], Layout::Nchw),
                TensorRef::new(&dy32, [n, co, o, o], Layout::Nchw),
                [3, 3, c, co],
                &attrs,
            )
            .unwrap();
            let rel = |a: &[f64], b: &[f64]| {
                let num: f64 = a.iter().zip(b).map(|(p, q)| (p - q) * (p - q)).sum();
                let den: f64 = b.iter().map(|q| q * q).sum();
                (num / den).sqrt()
            };
            let g64: Vec<f64> = got.data.iter().map(|&v| v as f64).collect();
            println!(
                "{name} relu={relu}: f32 vs f64 (same inputs) rel L2 {:.2e}; vs unrounded inputs {:.2e}",
                rel(&g64, &want_r.data),
                rel(&g64, &want.data)
            );
        }
    }
}

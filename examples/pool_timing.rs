//! Times `max_pool_grad_with_argmax_into` on W6 (f32, NCHW or NHWC, indices from `max_pool`):
//! median and min of `REPS` calls. `RAYON_NUM_THREADS=1 target/release/examples/pool_timing [reps] [nhwc]`.
use gradops::{max_pool, max_pool_grad_with_argmax_into, Layout, MaxPoolAttrs, Padding, TensorRef};
use std::time::Instant;

fn main() {
    let reps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let (n, c, h) = (8usize, 64usize, 112usize);
    let layout = if std::env::args().any(|a| a == "nhwc") {
        Layout::Nhwc
    } else {
        Layout::Nchw
    };
    let x: Vec<f32> = (0..n * c * h * h)
        .map(|i| ((i * 7919) % 1013) as f32 * 0.001)
        .collect();
    let attrs = MaxPoolAttrs::new([3, 3])
        .strides([2, 2])
        .padding(Padding::Same);
    let xs = match layout {
        Layout::Nchw => [n, c, h, h],
        Layout::Nhwc => [n, h, h, c],
    };
    let (y, arg) = max_pool(TensorRef::new(&x, xs, layout), &attrs, true).unwrap();
    let arg = arg.unwrap();
    let dy: Vec<f32> = (0..y.data.len()).map(|i| (i % 17) as f32 * 0.1).collect();
    let mut dx = vec![0f32; x.len()];
    let mut t = Vec::new();
    for _ in 0..reps + 5 {
        let t0 = Instant::now();
        max_pool_grad_with_argmax_into(
            TensorRef::new(&dy, y.shape, layout),
            &arg,
            xs,
            &attrs,
            &mut dx,
        )
        .unwrap();
        t.push(t0.elapsed().as_secs_f64() * 1e3);
    }
    let mut t = t[5..].to_vec();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    println!(
        "W6 stored {layout:?}: median {:.3} ms, min {:.3} ms",
        t[t.len() / 2],
        t[0]
    );
}

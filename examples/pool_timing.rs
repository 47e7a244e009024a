//! Times `max_pool_grad_with_argmax_into` on W6 (NCHW or NHWC, f32, f16 or bf16, indices from
//! `max_pool` on hashed data): median and min of `REPS` calls.
//! `RAYON_NUM_THREADS=1 target/release/examples/pool_timing [reps] [nhwc] [f16|bf16]`.
use gradops::{
    max_pool, max_pool_grad_with_argmax_into, Element, Layout, MaxPoolAttrs, Padding, TensorRef,
};
use half::{bf16, f16};
use std::time::Instant;

/// A value in [0, 1) from `i` (a multiplicative hash: no pattern the windows could share).
fn hashed(i: usize) -> f64 {
    ((i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as f64 / (1u64 << 24) as f64
}

fn time<T: Element>(reps: usize, layout: Layout) {
    let (n, c, h) = (8usize, 64usize, 112usize);
    let x: Vec<T> = (0..n * c * h * h).map(|i| T::from_f64(hashed(i))).collect();
    let attrs = MaxPoolAttrs::new([3, 3])
        .strides([2, 2])
        .padding(Padding::Same);
    let xs = match layout {
        Layout::Nchw => [n, c, h, h],
        Layout::Nhwc => [n, h, h, c],
    };
    let (y, arg) = max_pool(TensorRef::new(&x, xs, layout), &attrs, true).unwrap();
    let arg = arg.unwrap();
    let dy: Vec<T> = (0..y.data.len())
        .map(|i| T::from_f64(hashed(i + 1) - 0.5))
        .collect();
    let mut dx = vec![T::default(); x.len()];
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
        "W6 stored {layout:?} {:?}: median {:.3} ms, min {:.3} ms",
        T::DTYPE,
        t[t.len() / 2],
        t[0]
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let reps: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(100);
    let layout = if args.iter().any(|a| a == "nhwc") {
        Layout::Nhwc
    } else {
        Layout::Nchw
    };
    if args.iter().any(|a| a == "f16") {
        time::<f16>(reps, layout)
    } else if args.iter().any(|a| a == "bf16") {
        time::<bf16>(reps, layout)
    } else {
        time::<f32>(reps, layout)
    }
}

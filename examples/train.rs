//! A small training loop on the CPU: an input image is optimised by gradient descent so that a
//! fixed network maps it onto a target. The network is
//!
//! ```text
//! x [1,3,12,12] --bilinear resize (half_pixel)--> [1,3,24,24] --conv 3x3, 3->8, SAME-->
//!   [1,8,24,24] --max pool 2x2/2--> [1,8,12,12] --nearest resize (TF, align_corners)--> [1,8,18,18]
//! ```
//!
//! and the backward pass goes through all four gradient ops in reverse order:
//! `resize_nearest_neighbor_grad`, `max_pool_grad`, `conv2d_backprop_input`, `resize_grad`.
//! Run: `cargo run --release --example train [steps]`.

use gradops::{
    conv2d, conv2d_backprop_input, max_pool, max_pool_grad, resize, resize_grad,
    resize_nearest_neighbor, resize_nearest_neighbor_grad, Conv2dAttrs, FilterRef, Layout,
    MaxPoolAttrs, Padding, ResizeAttrs, ResizeMode, TensorRef, TfResizeAttrs,
};
use std::time::Instant;

const L: Layout = Layout::Nchw;

struct Net {
    filter: Vec<f32>,
    up: ResizeAttrs,
    conv: Conv2dAttrs,
    pool: MaxPoolAttrs,
    nn: TfResizeAttrs,
}

/// Everything the backward pass needs from the forward pass.
struct Tape {
    x_shape: [usize; 4],
    up: gradops::Tensor<f32>,
    conv: gradops::Tensor<f32>,
    pool: gradops::Tensor<f32>,
    out: gradops::Tensor<f32>,
}

const FILTER_SHAPE: [usize; 4] = [3, 3, 3, 8]; // HWIO

impl Net {
    fn forward(&self, x: &[f32], x_shape: [usize; 4]) -> gradops::Result<Tape> {
        let up = resize(TensorRef::new(x, x_shape, L), [24, 24], &self.up)?;
        let conv = conv2d(
            up.view(),
            FilterRef::new(&self.filter, FILTER_SHAPE),
            &self.conv,
        )?;
        let (pool, _) = max_pool(conv.view(), &self.pool, false)?;
        let out = resize_nearest_neighbor(pool.view(), [18, 18], &self.nn)?;
        Ok(Tape {
            x_shape,
            up,
            conv,
            pool,
            out,
        })
    }

    /// dL/dx from dL/dout.
    fn backward(&self, t: &Tape, dout: &[f32]) -> gradops::Result<Vec<f32>> {
        let d_pool = resize_nearest_neighbor_grad(
            TensorRef::new(dout, t.out.shape, L),
            t.pool.shape,
            &self.nn,
        )?;
        let d_conv = max_pool_grad(
            d_pool.view(),
            t.conv.view(),
            Some(t.pool.view()),
            &self.pool,
        )?;
        let d_up = conv2d_backprop_input(
            d_conv.view(),
            FilterRef::new(&self.filter, FILTER_SHAPE),
            t.up.shape,
            &self.conv,
        )?;
        Ok(resize_grad(d_up.view(), t.x_shape, &self.up)?.data)
    }
}

/// A small deterministic generator (xorshift), so the example needs no extra crates.
fn noise(seed: u64, n: usize) -> Vec<f32> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        })
        .collect()
}

fn main() -> gradops::Result<()> {
    let steps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let net = Net {
        filter: noise(1, FILTER_SHAPE.iter().product())
            .iter()
            .map(|v| v * 0.3)
            .collect(),
        up: ResizeAttrs::new(ResizeMode::Linear),
        conv: Conv2dAttrs::default().padding(Padding::Same),
        pool: MaxPoolAttrs::new([2, 2]).strides([2, 2]),
        nn: TfResizeAttrs::default().align_corners(true),
    };
    let x_shape = [1, 3, 12, 12];
    let hidden = noise(2, 3 * 12 * 12);
    let target = net.forward(&hidden, x_shape)?.out.data;
    let mut x = noise(3, hidden.len())
        .iter()
        .map(|v| v * 0.1)
        .collect::<Vec<f32>>();
    let lr = 0.02f32;
    println!("step      loss   ms/step  (forward + backward, f32, CPU)");
    let mut first = None;
    for step in 0..=steps {
        let t0 = Instant::now();
        let tape = net.forward(&x, x_shape)?;
        let diff: Vec<f32> = tape
            .out
            .data
            .iter()
            .zip(&target)
            .map(|(o, t)| o - t)
            .collect();
        let loss = 0.5 * diff.iter().map(|d| d * d).sum::<f32>();
        let grad = net.backward(&tape, &diff)?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        for (xi, g) in x.iter_mut().zip(&grad) {
            *xi -= lr * g;
        }
        first.get_or_insert(loss);
        if step % 5 == 0 || step == steps {
            println!("{step:4} {loss:>10.4} {ms:>8.3}");
        }
    }
    let last = 0.5
        * net
            .forward(&x, x_shape)?
            .out
            .data
            .iter()
            .zip(&target)
            .map(|(o, t)| (o - t) * (o - t))
            .sum::<f32>();
    println!(
        "loss {:.4} -> {:.4} ({:.1}x lower)",
        first.unwrap_or(0.0),
        last,
        first.unwrap_or(0.0) / last
    );
    Ok(())
}

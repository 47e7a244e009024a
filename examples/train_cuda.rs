//! The training loop of `examples/train.rs` on the GPU, through `gradops::cuda`: the same
//! network, the same calls with the same names and attributes, on device tensors and one
//! stream. Only the loss and the gradient step run on the host (a few hundred floats).
//!
//! ```text
//! x [1,3,12,12] --bilinear resize (half_pixel)--> [1,3,24,24] --conv 3x3, 3->8, SAME-->
//!   [1,8,24,24] --max pool 2x2/2--> [1,8,12,12] --nearest resize (TF, align_corners)--> [1,8,18,18]
//! ```
//!
//! Run: `cargo run --release --example train_cuda [steps]`. Without a usable GPU it prints
//! why and exits.

use std::sync::Arc;
use std::time::Instant;

use gradops::cuda::{self, CudaStream, DeviceTensor};
use gradops::{
    Conv2dAttrs, Layout, MaxPoolAttrs, Padding, ResizeAttrs, ResizeMode, TensorRef, TfResizeAttrs,
};

const L: Layout = Layout::Nchw;
const FILTER_SHAPE: [usize; 4] = [3, 3, 3, 8]; // HWIO

struct Net {
    stream: Arc<CudaStream>,
    filter: DeviceTensor<f32>,
    up: ResizeAttrs,
    conv: Conv2dAttrs,
    pool: MaxPoolAttrs,
    nn: TfResizeAttrs,
}

/// Everything the backward pass needs from the forward pass, on the device.
struct Tape {
    x_shape: [usize; 4],
    up: DeviceTensor<f32>,
    conv: DeviceTensor<f32>,
    pool: DeviceTensor<f32>,
    out: DeviceTensor<f32>,
}

impl Net {
    fn forward(&self, x: &DeviceTensor<f32>) -> gradops::Result<Tape> {
        let s = &self.stream;
        let up = cuda::resize(s, x.view(), [24, 24], &self.up)?;
        let conv = cuda::conv2d(s, up.view(), self.filter.as_filter(), &self.conv)?;
        let (pool, _) = cuda::max_pool(s, conv.view(), &self.pool, false)?;
        let out = cuda::resize_nearest_neighbor(s, pool.view(), [18, 18], &self.nn)?;
        Ok(Tape {
            x_shape: x.shape(),
            up,
            conv,
            pool,
            out,
        })
    }

    /// dL/dx from dL/dout.
    fn backward(&self, t: &Tape, dout: &DeviceTensor<f32>) -> gradops::Result<DeviceTensor<f32>> {
        let s = &self.stream;
        let d_pool = cuda::resize_nearest_neighbor_grad(s, dout.view(), t.pool.shape(), &self.nn)?;
        let d_conv = cuda::max_pool_grad(
            s,
            d_pool.view(),
            t.conv.view(),
            Some(t.pool.view()),
            &self.pool,
        )?;
        let d_up = cuda::conv2d_backprop_input(
            s,
            d_conv.view(),
            self.filter.as_filter(),
            t.up.shape(),
            &self.conv,
        )?;
        cuda::resize_grad(s, d_up.view(), t.x_shape, &self.up)
    }
}

/// The same deterministic generator as `examples/train.rs`.
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
    let device = match cuda::probe() {
        Ok(d) => d,
        Err(e) => {
            println!("train_cuda: no usable GPU ({e}); nothing to do");
            return Ok(());
        }
    };
    let steps: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(40);
    let stream = cuda::stream()?;
    let filter: Vec<f32> = noise(1, FILTER_SHAPE.iter().product())
        .iter()
        .map(|v| v * 0.3)
        .collect();
    let net = Net {
        filter: DeviceTensor::from_host(&stream, TensorRef::new(&filter, FILTER_SHAPE, L))?,
        stream: stream.clone(),
        up: ResizeAttrs::new(ResizeMode::Linear),
        conv: Conv2dAttrs::default().padding(Padding::Same),
        pool: MaxPoolAttrs::new([2, 2]).strides([2, 2]),
        nn: TfResizeAttrs::default().align_corners(true),
    };
    let x_shape = [1, 3, 12, 12];
    let upload = |v: &[f32], shape| DeviceTensor::from_host(&stream, TensorRef::new(v, shape, L));
    let hidden = noise(2, 3 * 12 * 12);
    let target = net.forward(&upload(&hidden, x_shape)?)?.out.to_host()?.data;
    let mut x = noise(3, hidden.len())
        .iter()
        .map(|v| v * 0.1)
        .collect::<Vec<f32>>();
    let lr = 0.02f32;
    println!("step      loss   ms/step  (forward + backward, f32, {device})");
    let mut first = None;
    let mut last = 0.0;
    for step in 0..=steps {
        let t0 = Instant::now();
        let tape = net.forward(&upload(&x, x_shape)?)?;
        let out = tape.out.to_host()?;
        let diff: Vec<f32> = out.data.iter().zip(&target).map(|(o, t)| o - t).collect();
        let loss = 0.5 * diff.iter().map(|d| d * d).sum::<f32>();
        let grad = net.backward(&tape, &upload(&diff, out.shape)?)?.to_host()?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        for (xi, g) in x.iter_mut().zip(&grad.data) {
            *xi -= lr * g;
        }
        first.get_or_insert(loss);
        last = loss;
        if step % 5 == 0 || step == steps {
            println!("{step:4} {loss:>10.4} {ms:>8.3}");
        }
    }
    println!(
        "loss {:.4} -> {:.4} ({:.1}x lower)",
        first.unwrap_or(0.0),
        last,
        first.unwrap_or(0.0) / last
    );
    Ok(())
}

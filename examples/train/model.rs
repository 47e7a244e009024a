//! The training example's network, its loss and its plain-SGD step on the CPU (gradops' host
//! API). Shared by `examples/train/main.rs` and the tests (`tests/train.rs`, the GPU parity
//! test in `tests/cuda_ops.rs`), which include this file by path.
//!
//! ```text
//! x [N,Cin,H,W] --conv 3x3 SAME, w1--> [N,Ch,H,W] --relu--> --max pool 3x3/2 SAME-->
//!   [N,Ch,H/2,W/2] --conv 3x3 SAME, w2--> [N,Cout,H/2,W/2] --bilinear x2 (half_pixel)-->
//!   [N,Cout,H,W] --mean squared error against the target
//! ```
//!
//! The backward pass runs every kind of gradient op gradops has: `resize_grad`,
//! `conv2d_backprop_filter` and `conv2d_backprop_input`, `max_pool_grad`, and the weight
//! gradient of the first convolution. The targets come from a teacher network of the same
//! shape with other weights, so the loss can fall towards zero.

#![allow(dead_code)] // each includer uses its own part

use gradops::{
    conv2d, conv2d_backprop_filter, conv2d_backprop_input, max_pool, max_pool_grad, resize,
    resize_grad, Conv2dAttrs, Element, FilterRef, Layout, MaxPoolAttrs, Padding, ResizeAttrs,
    ResizeMode, Tensor, TensorRef,
};

/// NCHW throughout (the layout a PyTorch-style model uses).
pub const LAYOUT: Layout = Layout::Nchw;

/// Sizes of the network.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Images per batch.
    pub batch: usize,
    /// Input channels.
    pub c_in: usize,
    /// Channels after the first convolution.
    pub c_hidden: usize,
    /// Output channels.
    pub c_out: usize,
    /// Input (and output) height and width; even.
    pub hw: usize,
}

impl Config {
    /// The example's network: 32x32 RGB images, 16 hidden channels, batch 16.
    pub const EXAMPLE: Config = Config {
        batch: 16,
        c_in: 3,
        c_hidden: 16,
        c_out: 3,
        hw: 32,
    };
    /// A tiny network for finite-difference checks.
    pub const TINY: Config = Config {
        batch: 2,
        c_in: 2,
        c_hidden: 3,
        c_out: 2,
        hw: 6,
    };

    pub fn x_shape(&self) -> [usize; 4] {
        [self.batch, self.c_in, self.hw, self.hw]
    }
    pub fn hidden_shape(&self) -> [usize; 4] {
        [self.batch, self.c_hidden, self.hw, self.hw]
    }
    pub fn pooled_shape(&self) -> [usize; 4] {
        [self.batch, self.c_hidden, self.hw / 2, self.hw / 2]
    }
    pub fn low_shape(&self) -> [usize; 4] {
        [self.batch, self.c_out, self.hw / 2, self.hw / 2]
    }
    pub fn out_shape(&self) -> [usize; 4] {
        [self.batch, self.c_out, self.hw, self.hw]
    }
    /// OIHW, as PyTorch stores conv weights.
    pub fn w1_shape(&self) -> [usize; 4] {
        [self.c_hidden, self.c_in, 3, 3]
    }
    pub fn w2_shape(&self) -> [usize; 4] {
        [self.c_out, self.c_hidden, 3, 3]
    }
}

/// The op attributes of the network (one place for the CPU and GPU paths).
pub struct Attrs {
    pub conv: Conv2dAttrs,
    pub pool: MaxPoolAttrs,
    pub up: ResizeAttrs,
}

impl Attrs {
    pub fn new() -> Self {
        Attrs {
            conv: Conv2dAttrs::default()
                .padding(Padding::Same)
                .filter_layout(gradops::FilterLayout::Oihw),
            pool: MaxPoolAttrs::new([3, 3])
                .strides([2, 2])
                .padding(Padding::Same),
            up: ResizeAttrs::new(ResizeMode::Linear),
        }
    }
}

/// A small deterministic generator (xorshift) in [-1, 1), so the example needs no extra crates.
pub fn noise(seed: u64, n: usize) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
        })
        .collect()
}

/// `n` values of `noise(seed)` scaled by `scale`, in `T`.
pub fn noise_t<T: Element>(seed: u64, n: usize, scale: f64) -> Vec<T> {
    noise(seed, n)
        .into_iter()
        .map(|v| T::from_f64(v * scale))
        .collect()
}

/// He-style initial weights for a 3x3 convolution with `fan_in = c_in * 9`.
pub fn init_weights<T: Element>(seed: u64, shape: [usize; 4]) -> Vec<T> {
    let fan_in = (shape[1] * shape[2] * shape[3]) as f64;
    noise_t(seed, shape.iter().product(), (6.0 / fan_in).sqrt())
}

/// The two weight tensors (OIHW).
#[derive(Clone)]
pub struct Params<T> {
    pub w1: Vec<T>,
    pub w2: Vec<T>,
}

impl<T: Element> Params<T> {
    pub fn init(cfg: &Config, seed: u64) -> Self {
        Params {
            w1: init_weights(seed, cfg.w1_shape()),
            w2: init_weights(seed + 1, cfg.w2_shape()),
        }
    }
}

/// What the backward pass needs from the forward pass.
pub struct Tape<T> {
    pub hidden: Tensor<T>,
    pub pooled: Tensor<T>,
    pub out: Tensor<T>,
}

/// The gradients of the loss.
pub struct Grads<T> {
    pub w1: Vec<T>,
    pub w2: Vec<T>,
}

pub fn relu<T: Element>(v: &mut [T]) {
    for e in v {
        // Only non-positive values clear: a NaN stays NaN, as in PyTorch, so it is not hidden.
        if e.to_f64() <= 0.0 {
            *e = T::from_f64(0.0);
        }
    }
}

/// dL/dh = dL/drelu where relu(h) > 0, else 0 (relu's output is on the tape).
pub fn relu_grad<T: Element>(relu_out: &[T], d: &mut [T]) {
    for (g, r) in d.iter_mut().zip(relu_out) {
        if r.to_f64() <= 0.0 {
            *g = T::from_f64(0.0);
        }
    }
}

/// Mean squared error over all elements.
pub fn mse<T: Element>(out: &[T], target: &[T]) -> f64 {
    let s: f64 = out
        .iter()
        .zip(target)
        .map(|(o, t)| {
            let d = o.to_f64() - t.to_f64();
            d * d
        })
        .sum();
    s / out.len() as f64
}

/// dL/dout of [`mse`]: `2 (out - target) / len`.
pub fn mse_grad<T: Element>(out: &[T], target: &[T]) -> Vec<T> {
    let k = 2.0 / out.len() as f64;
    out.iter()
        .zip(target)
        .map(|(o, t)| T::from_f64(k * (o.to_f64() - t.to_f64())))
        .collect()
}

pub fn forward<T: Element>(
    cfg: &Config,
    a: &Attrs,
    p: &Params<T>,
    x: &[T],
) -> gradops::Result<Tape<T>> {
    let mut hidden = conv2d(
        TensorRef::new(x, cfg.x_shape(), LAYOUT),
        FilterRef::new(&p.w1, cfg.w1_shape()),
        &a.conv,
    )?;
    relu(&mut hidden.data);
    let (pooled, _) = max_pool(hidden.view(), &a.pool, false)?;
    let low = conv2d(
        pooled.view(),
        FilterRef::new(&p.w2, cfg.w2_shape()),
        &a.conv,
    )?;
    let out = resize(low.view(), [cfg.hw, cfg.hw], &a.up)?;
    Ok(Tape {
        hidden,
        pooled,
        out,
    })
}

/// The gradients of the loss given dL/dout.
pub fn backward<T: Element>(
    cfg: &Config,
    a: &Attrs,
    p: &Params<T>,
    x: &[T],
    t: &Tape<T>,
    d_out: &[T],
) -> gradops::Result<Grads<T>> {
    let d_low = resize_grad(
        TensorRef::new(d_out, cfg.out_shape(), LAYOUT),
        cfg.low_shape(),
        &a.up,
    )?;
    let w2 = conv2d_backprop_filter(t.pooled.view(), d_low.view(), cfg.w2_shape(), &a.conv)?;
    let d_pooled = conv2d_backprop_input(
        d_low.view(),
        FilterRef::new(&p.w2, cfg.w2_shape()),
        cfg.pooled_shape(),
        &a.conv,
    )?;
    let mut d_hidden = max_pool_grad(
        d_pooled.view(),
        t.hidden.view(),
        Some(t.pooled.view()),
        &a.pool,
    )?;
    relu_grad(&t.hidden.data, &mut d_hidden.data);
    let w1 = conv2d_backprop_filter(
        TensorRef::new(x, cfg.x_shape(), LAYOUT),
        d_hidden.view(),
        cfg.w1_shape(),
        &a.conv,
    )?;
    Ok(Grads {
        w1: w1.data,
        w2: w2.data,
    })
}

/// `w -= lr * g`.
pub fn sgd<T: Element>(w: &mut [T], g: &[T], lr: f64) {
    for (wi, gi) in w.iter_mut().zip(g) {
        *wi = T::from_f64(wi.to_f64() - lr * gi.to_f64());
    }
}

/// A fixed data set: `batches` input batches and the teacher's outputs for them.
pub struct Data<T> {
    pub x: Vec<Vec<T>>,
    pub target: Vec<Vec<T>>,
}

impl<T: Element> Data<T> {
    pub fn teacher(cfg: &Config, a: &Attrs, batches: usize) -> gradops::Result<Self> {
        let teacher = Params::init(cfg, 1000);
        let n: usize = cfg.x_shape().iter().product();
        let mut x = Vec::new();
        let mut target = Vec::new();
        for b in 0..batches {
            let xb: Vec<T> = noise_t(10 + b as u64, n, 1.0);
            target.push(forward(cfg, a, &teacher, &xb)?.out.data);
            x.push(xb);
        }
        Ok(Data { x, target })
    }
}

/// One SGD step on the CPU; returns the loss before the update.
pub fn step<T: Element>(
    cfg: &Config,
    a: &Attrs,
    p: &mut Params<T>,
    x: &[T],
    target: &[T],
    lr: f64,
) -> gradops::Result<f64> {
    let tape = forward(cfg, a, p, x)?;
    let loss = mse(&tape.out.data, target);
    let d_out = mse_grad(&tape.out.data, target);
    let g = backward(cfg, a, p, x, &tape, &d_out)?;
    sgd(&mut p.w1, &g.w1, lr);
    sgd(&mut p.w2, &g.w2, lr);
    Ok(loss)
}

/// The closing line of a run.
pub fn report(first: f64, last: f64, steps: usize, secs: f64) {
    println!(
        "loss {first:.6} -> {last:.6} ({:.1}x lower) in {steps} steps, {:.3} ms/step",
        first / last,
        secs * 1e3 / steps.max(1) as f64
    );
}

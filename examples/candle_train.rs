//! Trains a small candle model whose backward candle 0.11 cannot compute on its own: a 3x3
//! convolution, a 3x3 max pool with stride 2 (candle's backward refuses kernel != stride), a
//! 1x1 convolution and a bilinear upsample back to the input size (candle has no bilinear
//! backward). The ops are `gradops::candle`'s, so `loss.backward()` works and is correct.
//!
//! The task: fit a teacher network of the same shape with other weights (a student-teacher
//! regression, mean squared error), by plain gradient descent, printing the loss.
//!
//! `cargo run --release --features candle --example candle_train` (candle's CPU device);
//! with `--features candle-cuda` and `-- --cuda`, on candle's CUDA device 0.

use candle_core::{DType, Device, Tensor, Var};
use gradops::{MaxPoolAttrs, Padding};
use std::time::Instant;

/// conv 3x3 (3 -> 8, SAME) -> relu -> max pool 3x3/2 (pad 1) -> conv 1x1 (8 -> 2) ->
/// bilinear upsample to the input size.
fn model(x: &Tensor, w1: &Tensor, w2: &Tensor) -> candle_core::Result<Tensor> {
    let (_, _, h, w) = x.dims4()?;
    let conv3 = gradops::candle::oihw().padding(Padding::Same);
    let pool = MaxPoolAttrs::new([3, 3])
        .strides([2, 2])
        .padding(Padding::Explicit([[1, 1], [1, 1]]));
    let a = gradops::candle::conv2d(x, w1, &conv3)?.relu()?;
    let p = gradops::candle::max_pool2d(&a, &pool)?;
    let b = gradops::candle::conv2d(&p, w2, &gradops::candle::oihw())?;
    gradops::candle::upsample_bilinear2d(&b, (h, w), false)
}

/// Uniform values in `[-scale, scale)` from a fixed seed (xorshift64*), the same on every
/// device and run (candle's CPU device cannot be seeded).
fn uniform(
    shape: (usize, usize, usize, usize),
    scale: f32,
    seed: u64,
    device: &Device,
) -> candle_core::Result<Tensor> {
    let n = shape.0 * shape.1 * shape.2 * shape.3;
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let v: Vec<f32> = (0..n)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let u = (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40) as f32 / (1u64 << 24) as f32;
            scale * (2.0 * u - 1.0)
        })
        .collect();
    Tensor::from_vec(v, shape, device)
}

fn main() -> candle_core::Result<()> {
    let device = if std::env::args().any(|a| a == "--cuda") {
        Device::new_cuda(0)?
    } else {
        Device::Cpu
    };
    let steps: usize = std::env::var("STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    let x = uniform((8, 3, 32, 32), 1.0, 1, &device)?;
    let teacher1 = uniform((8, 3, 3, 3), 0.5, 2, &device)?;
    let teacher2 = uniform((2, 8, 1, 1), 0.5, 3, &device)?;
    let target = model(&x, &teacher1, &teacher2)?;

    let w1 = Var::from_tensor(&uniform((8, 3, 3, 3), 0.5, 4, &device)?)?;
    let w2 = Var::from_tensor(&uniform((2, 8, 1, 1), 0.5, 5, &device)?)?;
    let lr = 0.1;
    println!(
        "training on {device:?}: x {:?}, conv3x3 -> relu -> max_pool 3x3/2 -> conv1x1 -> bilinear up, {steps} steps",
        x.dims()
    );
    let mut first = None;
    let mut last = 0.0;
    let t0 = Instant::now();
    for step in 0..steps {
        let y = model(&x, &w1, &w2)?;
        let loss = y.sub(&target)?.sqr()?.mean_all()?;
        let grads = loss.backward()?;
        for w in [&w1, &w2] {
            let g = grads.get(w).expect("every weight has a gradient");
            w.set(&w.sub(&(g * lr)?)?)?;
        }
        last = loss.to_dtype(DType::F64)?.to_scalar::<f64>()?;
        first.get_or_insert(last);
        if step % 10 == 0 || step + 1 == steps {
            println!("step {step:3}  loss {last:.6}");
        }
    }
    let per_step = t0.elapsed().as_secs_f64() * 1e3 / steps.max(1) as f64;
    let first = first.unwrap_or(last);
    println!(
        "loss {first:.6} -> {last:.6} ({:.1}% of the first) in {steps} steps, {per_step:.1} ms per step",
        100.0 * last / first
    );
    // A NaN loss fails too.
    if last.partial_cmp(&first) != Some(std::cmp::Ordering::Less) {
        return Err(candle_core::Error::Msg(format!(
            "the loss did not decrease ({first} -> {last})"
        )));
    }
    Ok(())
}

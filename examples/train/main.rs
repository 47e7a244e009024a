//! A small convolutional network trained with gradops' forward and backward ops and plain
//! SGD (see `model.rs` for the network). On `--device cuda` every buffer stays on the GPU:
//! gradops' ops and the example's own elementwise kernels (relu, the loss, the SGD update,
//! compiled with NVRTC) run on one stream, and only the loss comes back to the host, once per
//! printed step. On the CPU it runs the same network through the host API.
//!
//! Run: `cargo run --release --example train -- [--device auto|cpu|cuda] [--steps N]
//! [--dtype f32|f64]`; `auto` (the default) takes CUDA when it is usable and says why not
//! otherwise.

mod gpu;
mod model;

use model::{Attrs, Config, Data, Params};
use std::time::Instant;

struct Args {
    device: String,
    steps: usize,
    lr: f64,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        device: "auto".into(),
        steps: 200,
        lr: 0.02,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--device" => a.device = v()?,
            "--steps" => a.steps = v()?.parse().map_err(|e| format!("--steps: {e}"))?,
            "--lr" => a.lr = v()?.parse().map_err(|e| format!("--lr: {e}"))?,
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok(a)
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("train: {e}\nusage: train [--device auto|cpu|cuda] [--steps N] [--lr F]");
            std::process::exit(2);
        }
    };
    let use_cuda = match args.device.as_str() {
        "cpu" => false,
        "cuda" => true,
        "auto" => match gradops::cuda::probe() {
            Ok(_) => true,
            Err(e) => {
                println!("CUDA is not usable ({e}); training on the CPU");
                false
            }
        },
        other => {
            eprintln!("train: unknown device {other:?} (expected auto, cpu or cuda)");
            std::process::exit(2);
        }
    };
    let r = if use_cuda {
        gpu::train(&args_cfg(), args.steps, args.lr, BATCHES)
    } else {
        train_cpu(&args_cfg(), args.steps, args.lr)
    };
    if let Err(e) = r {
        eprintln!("train: {e}");
        std::process::exit(1);
    }
}

fn args_cfg() -> Config {
    Config::EXAMPLE
}

/// The number of batches in the fixed data set the loop cycles through.
pub const BATCHES: usize = 4;

fn train_cpu(cfg: &Config, steps: usize, lr: f64) -> gradops::Result<()> {
    let a = Attrs::new();
    let data: Data<f32> = Data::teacher(cfg, &a, BATCHES)?;
    let mut p: Params<f32> = Params::init(cfg, 1);
    println!(
        "CPU, f32, batch {} x {}x{}x{}: step, loss, ms/step (forward + backward + SGD)",
        cfg.batch, cfg.c_in, cfg.hw, cfg.hw
    );
    let mut first = None;
    let mut last = 0.0;
    let t_all = Instant::now();
    for s in 0..steps {
        let b = s % BATCHES;
        let t0 = Instant::now();
        let loss = model::step(cfg, &a, &mut p, &data.x[b], &data.target[b], lr)?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        first.get_or_insert(loss);
        last = loss;
        if s % 10 == 0 || s + 1 == steps {
            println!("{s:5} {loss:12.6} {ms:9.3}");
        }
    }
    model::report(
        first.unwrap_or(0.0),
        last,
        steps,
        t_all.elapsed().as_secs_f64(),
    );
    Ok(())
}

//! The training example's network (`examples/train/model.rs`) on the CPU: a few SGD steps lower
//! the loss, and its gradients (every backward op chained: resize, conv2d input and filter,
//! max pool, relu) match central finite differences of the loss on a tiny network in f64.

#[path = "../examples/train/model.rs"]
mod model;

use model::{Attrs, Config, Data, Params};

fn loss_of(cfg: &Config, a: &Attrs, p: &Params<f64>, x: &[f64], t: &[f64]) -> f64 {
    model::mse(&model::forward(cfg, a, p, x).unwrap().out.data, t)
}

#[test]
fn sgd_steps_lower_the_loss() {
    let cfg = Config {
        batch: 4,
        c_in: 3,
        c_hidden: 8,
        c_out: 3,
        hw: 16,
    };
    let a = Attrs::new();
    let data: Data<f32> = Data::teacher(&cfg, &a, 2).unwrap();
    let mut p: Params<f32> = Params::init(&cfg, 1);
    let mut losses = Vec::new();
    for s in 0..40 {
        let b = s % 2;
        losses.push(model::step(&cfg, &a, &mut p, &data.x[b], &data.target[b], 0.05).unwrap());
    }
    let first = losses[0] + losses[1];
    let last = losses[38] + losses[39];
    assert!(losses.iter().all(|l| l.is_finite()), "{losses:?}");
    assert!(
        last < 0.5 * first,
        "the loss should at least halve in 40 steps: {first} -> {last} ({losses:?})"
    );
}

#[test]
fn gradients_match_finite_differences() {
    let cfg = Config::TINY;
    let a = Attrs::new();
    let data: Data<f64> = Data::teacher(&cfg, &a, 1).unwrap();
    let (x, t) = (&data.x[0], &data.target[0]);
    let p: Params<f64> = Params::init(&cfg, 7);
    let tape = model::forward(&cfg, &a, &p, x).unwrap();
    let d_out = model::mse_grad(&tape.out.data, t);
    let g = model::backward(&cfg, &a, &p, x, &tape, &d_out).unwrap();
    let h = 1e-6;
    let mut worst = 0.0f64;
    for which in 0..2 {
        let n = if which == 0 { p.w1.len() } else { p.w2.len() };
        for i in 0..n {
            let at = |delta: f64| {
                let mut q = p.clone();
                let w = if which == 0 { &mut q.w1 } else { &mut q.w2 };
                w[i] += delta;
                loss_of(&cfg, &a, &q, x, t)
            };
            let fd = (at(h) - at(-h)) / (2.0 * h);
            let an = if which == 0 { g.w1[i] } else { g.w2[i] };
            let err = (fd - an).abs() / (fd.abs().max(an.abs()).max(1e-3));
            worst = worst.max(err);
            assert!(
                err < 1e-5,
                "w{}[{i}]: finite difference {fd:e}, backward {an:e} (relative error {err:e})",
                which + 1
            );
        }
    }
    // The check has to see real gradients, not zeros on both sides.
    assert!(g.w1.iter().any(|v| v.abs() > 1e-4) && g.w2.iter().any(|v| v.abs() > 1e-4));
    println!("worst relative error {worst:e}");
}

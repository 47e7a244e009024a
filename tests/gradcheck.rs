//! Finite-difference gradient checks: every backward op against its own forward, in f64, on
//! small random shapes and every mode. With `dy` random and the scalar loss
//! `L(x) = <forward(x), dy>`, the backward's `dx` must equal `dL/dx`, checked element by element
//! against the central difference `(L(x + h e_i) - L(x - h e_i)) / 2h` for every input element.
//!
//! Tolerance (asserted per element, see [`Fd::check`]): the ops are linear in `x` (resize,
//! conv2d) or piecewise linear with the pieces held fixed (max pool, see below), so the central
//! difference has no truncation error for any `h`; all that separates it from the exact
//! derivative is floating-point rounding, which is bounded a priori (Higham's `gamma_k = k u /
//! (1 - k u)`, `u = 2^-53`, for a sum of `k` products in any order, FMA or not):
//! - each `L(x +- h e_i)` sums at most `K` products of `|dy_j|` with outputs whose own sums are
//!   bounded by `|A| (|x| + h)`: its error is at most `gamma_K * B` with
//!   `B = <|A| (|x| + h), |dy|>`, so the difference quotient is off by at most `gamma_K B / h`;
//! - `x_i +- h` is itself rounded (relative `u`): at most `u (|x_i| + h) / h * |g_i|`;
//! - the analytic `g_i = (A^T dy)_i` is off by at most `gamma_K (|A|^T |dy|)_i`.
//!
//! `K` is bounded by `len(y) + len(x) + len(w)` (the outer sum plus the longest inner one), and
//! the tolerance is 4x the sum of those three bounds: near machine precision, 1e-14 to 1e-9
//! absolute here (0 where nothing can round; the largest for max pool, whose inputs are integers
//! up to a few hundred), while the observed errors stay below 3% of it. A backward scaled by
//! 1.001 fails by orders of magnitude, for each of the six ops (checked when this file was
//! written); the test prints the tolerance range and the worst error/tolerance per op. `|A|` is
//! computed with the public ops: resize weights are interpolation weights in [0, 1] (so
//! `|A| v = resize(v)` for `v >= 0`), conv2d's is conv2d with `|w|`; max pool's outputs are
//! copies of inputs (no rounding at all in `y`).
//!
//! `h`: any `h` is exact for a linear loss and rounding favours a large one, so `h = 0.25`
//! (inputs are in [-1, 1)). Max pool is piecewise linear: its `x` is a random permutation of
//! the integers, spacing 1 > 2h, so `x_i +- h` never reaches another value and no window's
//! argmax can change; the check asserts exactly that (the forward's argmax at `x +- h e_i`
//! equals that at `x`) before comparing. Windows with no in-bounds cell (`y = -inf`, argmax -1)
//! are left out of `L`; their `dy` must route nowhere.

mod common;
use common::*;
use gradops::geometry::{CoordinateTransform as Ct, NearestMode as Nm, ResizeMode};
use gradops::{
    Conv2dAttrs, DimRounding, Dims, FilterLayout, FilterRef, Layout, MaxPoolAttrs, Padding,
    ResizeAttrs, TensorRef, TfResizeAttrs,
};
use std::time::Instant;

const LAYOUTS: [Layout; 2] = [Layout::Nchw, Layout::Nhwc];
const CTMS: [Ct; 5] = [
    Ct::HalfPixel,
    Ct::PytorchHalfPixel,
    Ct::AlignCorners,
    Ct::Asymmetric,
    Ct::TfHalfPixelForNn,
];
const NMS: [Nm; 4] = [
    Nm::RoundPreferFloor,
    Nm::RoundPreferCeil,
    Nm::Floor,
    Nm::Ceil,
];
/// Finite-difference step (see the file comment).
const H: f64 = 0.25;
const U: f64 = f64::EPSILON / 2.0;

fn gamma(k: usize) -> f64 {
    let ku = k as f64 * U;
    assert!(ku < 0.5, "gamma_{k} undefined");
    ku / (1.0 - ku)
}

/// One finite-difference check: the analytic gradient and the rounding bounds it is held to.
struct Fd<'a> {
    what: String,
    x: &'a [f64],
    /// Analytic gradient (the backward op's dx).
    g: &'a [f64],
    /// `B = <|A| (|x| + h), |dy|>`.
    b: f64,
    /// `|A|^T |dy|`.
    g_abs: &'a [f64],
    /// Bound on the number of products in one evaluation of `L`.
    k: usize,
}

impl Fd<'_> {
    /// Compares `g` with central differences of `loss` for every element; folds the largest
    /// `|fd - g| / tol` and the tolerance range into `stats`.
    fn check(&self, stats: &mut Stats, mut loss: impl FnMut(&[f64]) -> f64) {
        assert_eq!(self.g.len(), self.x.len(), "{}: dx length", self.what);
        let gk = gamma(self.k);
        let mut xp = self.x.to_vec();
        for i in 0..self.x.len() {
            let xi = self.x[i];
            xp[i] = xi + H;
            let lp = loss(&xp);
            xp[i] = xi - H;
            let lm = loss(&xp);
            xp[i] = xi;
            let fd = (lp - lm) / (2.0 * H);
            let g = self.g[i];
            let tol = 4.0
                * (gk * self.b / H + U * (xi.abs() + H) / H * g.abs() + gk * self.g_abs[i])
                + f64::MIN_POSITIVE;
            let err = (fd - g).abs();
            assert!(
                err <= tol,
                "{}: dx[{i}] = {g:e} but the central difference is {fd:e} \
                 (|diff| {err:e} > tol {tol:e})",
                self.what
            );
            stats.worst = stats.worst.max(err / tol);
            if err == 0.0 && tol <= f64::MIN_POSITIVE {
                stats.exact += 1; // nothing could round: fd and dx both exactly 0
            } else {
                stats.tol = [stats.tol[0].min(tol), stats.tol[1].max(tol)];
            }
            stats.elements += 1;
        }
        stats.cases += 1;
    }
}

/// What one op's checks saw.
struct Stats {
    cases: usize,
    elements: usize,
    /// Elements held to a zero tolerance (no rounding possible).
    exact: usize,
    /// Largest `|fd - g| / tol`.
    worst: f64,
    /// Smallest and largest tolerance.
    tol: [f64; 2],
}

impl Stats {
    fn new() -> Self {
        Stats {
            cases: 0,
            elements: 0,
            exact: 0,
            worst: 0.0,
            tol: [f64::INFINITY, 0.0],
        }
    }
}

impl std::fmt::Display for Stats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} cases, {} elements ({} held to 0); tol {:.1e}..{:.1e}, worst |fd - dx| / tol {:.1e}",
            self.cases, self.elements, self.exact, self.tol[0], self.tol[1], self.worst
        )
    }
}

fn abs(v: &[f64]) -> Vec<f64> {
    v.iter().map(|a| a.abs()).collect()
}

fn abs_plus_h(v: &[f64]) -> Vec<f64> {
    v.iter().map(|a| a.abs() + H).collect()
}

fn len(d: Dims) -> usize {
    d.n * d.c * d.h * d.w
}

/// A resize-family op: its forward and backward on the same attributes.
trait ResizeOp {
    fn forward(&self, x: TensorRef<'_, f64>, out: [usize; 2]) -> Vec<f64>;
    fn backward(&self, dy: TensorRef<'_, f64>, x_shape: [usize; 4]) -> Vec<f64>;
}

impl ResizeOp for ResizeAttrs {
    fn forward(&self, x: TensorRef<'_, f64>, out: [usize; 2]) -> Vec<f64> {
        gradops::resize(x, out, self).unwrap().data
    }
    fn backward(&self, dy: TensorRef<'_, f64>, x_shape: [usize; 4]) -> Vec<f64> {
        gradops::resize_grad(dy, x_shape, self).unwrap().data
    }
}

/// TF `ResizeBilinear` / `ResizeNearestNeighbor` and their gradients.
struct Tf(ResizeMode, TfResizeAttrs);

impl ResizeOp for Tf {
    fn forward(&self, x: TensorRef<'_, f64>, out: [usize; 2]) -> Vec<f64> {
        match self.0 {
            ResizeMode::Linear => gradops::resize_bilinear(x, out, &self.1),
            ResizeMode::Nearest => gradops::resize_nearest_neighbor(x, out, &self.1),
        }
        .unwrap()
        .data
    }
    fn backward(&self, dy: TensorRef<'_, f64>, x_shape: [usize; 4]) -> Vec<f64> {
        match self.0 {
            ResizeMode::Linear => gradops::resize_bilinear_grad(dy, x_shape, &self.1),
            ResizeMode::Nearest => gradops::resize_nearest_neighbor_grad(dy, x_shape, &self.1),
        }
        .unwrap()
        .data
    }
}

/// Checks one resize-family op on `xd -> out`.
fn resize_case(
    stats: &mut Stats,
    rng: &mut Rng,
    op: &impl ResizeOp,
    layout: Layout,
    xd: Dims,
    out: [usize; 2],
    what: &str,
) {
    let yd = Dims {
        h: out[0],
        w: out[1],
        ..xd
    };
    let (xs, ys) = (shape(layout, xd), shape(layout, yd));
    let x = rng.vec(len(xd));
    let dy = rng.vec(len(yd));
    let g = op.backward(TensorRef::new(&dy, ys, layout), xs);
    // Resize weights are in [0, 1]: |A| v = A v for v >= 0.
    let ax = op.forward(TensorRef::new(&abs_plus_h(&x), xs, layout), out);
    let g_abs = op.backward(TensorRef::new(&abs(&dy), ys, layout), xs);
    let fd = Fd {
        what: format!("{what} {layout} {xd:?} -> {out:?}"),
        x: &x,
        g: &g,
        b: dot(&ax, &abs(&dy)),
        g_abs: &g_abs,
        k: len(yd) + len(xd),
    };
    fd.check(stats, |xp| {
        dot(&op.forward(TensorRef::new(xp, xs, layout), out), &dy)
    });
}

#[test]
fn resize_grad_matches_finite_differences() {
    let start = Instant::now();
    let mut rng = Rng::new(91);
    let (mut stats, mut scaled) = (Stats::new(), 0);
    for layout in LAYOUTS {
        for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
            for ctm in CTMS {
                for nm in NMS {
                    for with_scales in [false, true, false, true] {
                        if with_scales && ctm == Ct::AlignCorners {
                            continue; // align_corners ignores scales
                        }
                        let xd = Dims {
                            n: rng.range(1, 2),
                            c: rng.range(1, 3),
                            h: rng.range(2, 6),
                            w: rng.range(2, 6),
                        };
                        let (out, scales) = if with_scales {
                            let s = [
                                *rng.pick(&[0.5, 0.75, 1.5, 2.0, 3.0]),
                                *rng.pick(&[0.6, 1.0, 1.25, 2.5]),
                            ];
                            // The output size the scales imply (rounded as the SPEC's f32).
                            let f = |l: usize, s: f64| (l as f32 * s as f32).floor() as usize;
                            ([f(xd.h, s[0]), f(xd.w, s[1])], Some(s))
                        } else {
                            ([rng.range(1, 9), rng.range(1, 9)], None)
                        };
                        let attrs = ResizeAttrs::new(mode)
                            .coordinate_transformation_mode(ctm)
                            .nearest_mode(nm)
                            .scales(scales);
                        let what = format!("resize_grad {mode:?} {ctm:?} {nm:?} scales {scales:?}");
                        resize_case(&mut stats, &mut rng, &attrs, layout, xd, out, &what);
                        scaled += usize::from(with_scales);
                    }
                }
            }
        }
    }
    println!(
        "resize_grad: {stats} ({scaled} cases with scales; every mode, coordinate transform, \
         nearest mode and layout); {:.2?}",
        start.elapsed()
    );
}

#[test]
fn tf_resize_grads_match_finite_differences() {
    let start = Instant::now();
    let mut rng = Rng::new(92);
    for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
        let op = match mode {
            ResizeMode::Linear => "resize_bilinear_grad",
            ResizeMode::Nearest => "resize_nearest_neighbor_grad",
        };
        let mut stats = Stats::new();
        for layout in LAYOUTS {
            for (ac, hpc) in [(false, false), (true, false), (false, true)] {
                let attrs = TfResizeAttrs::default()
                    .align_corners(ac)
                    .half_pixel_centers(hpc);
                for _ in 0..10 {
                    let xd = Dims {
                        n: rng.range(1, 2),
                        c: rng.range(1, 3),
                        h: rng.range(1, 6),
                        w: rng.range(1, 6),
                    };
                    let out = [rng.range(1, 9), rng.range(1, 9)];
                    let what = format!("{op} align_corners {ac} half_pixel_centers {hpc}");
                    resize_case(
                        &mut stats,
                        &mut rng,
                        &Tf(mode, attrs),
                        layout,
                        xd,
                        out,
                        &what,
                    );
                }
            }
        }
        println!(
            "{op}: {stats} (every align_corners/half_pixel_centers pair and layout); {:.2?}",
            start.elapsed()
        );
    }
}

#[test]
fn conv2d_backprop_input_matches_finite_differences() {
    let start = Instant::now();
    let mut rng = Rng::new(93);
    let mut stats = Stats::new();
    let mut seen = std::collections::BTreeSet::new();
    while stats.cases < 400 {
        let layout = *rng.pick(&LAYOUTS);
        let fl = *rng.pick(&[FilterLayout::Hwio, FilterLayout::Oihw]);
        let groups = *rng.pick(&[1, 2, 3]);
        let (cig, cog) = (rng.range(1, 2), rng.range(1, 3));
        let xd = Dims {
            n: rng.range(1, 2),
            c: cig * groups,
            h: rng.range(1, 7),
            w: rng.range(1, 7),
        };
        let k = [rng.range(1, 3), rng.range(1, 3)];
        let (padding, rounding) = match rng.range(0, 3) {
            0 => (Padding::Same, None),
            1 => (Padding::Valid, None),
            p => (
                Padding::Explicit([
                    [rng.range(0, 2), rng.range(0, 2)],
                    [rng.range(0, 2), rng.range(0, 2)],
                ]),
                if p == 3 {
                    Some(*rng.pick(&[DimRounding::Floor, DimRounding::Round, DimRounding::Ceil]))
                } else {
                    None
                },
            ),
        };
        let attrs = Conv2dAttrs::default()
            .strides([rng.range(1, 3), rng.range(1, 3)])
            .dilations([rng.range(1, 2), rng.range(1, 2)])
            .padding(padding)
            .dim_rounding(rounding)
            .filter_layout(fl);
        let fshape = match fl {
            FilterLayout::Hwio => [k[0], k[1], cig, cog * groups],
            FilterLayout::Oihw => [cog * groups, cig, k[0], k[1]],
        };
        let xs = shape(layout, xd);
        let Ok(geom) = gradops::ops::conv2d::plan_conv2d(xs, fshape, layout, &attrs) else {
            continue;
        };
        let yd = geom.output_dims();
        if len(yd) == 0 {
            continue;
        }
        let ys = shape(layout, yd);
        let w = rng.vec(fshape.iter().product());
        let w_abs = abs(&w);
        let x = rng.vec(len(xd));
        let dy = rng.vec(len(yd));
        let f = FilterRef::new(&w, fshape);
        let g = gradops::conv2d_backprop_input(TensorRef::new(&dy, ys, layout), f, xs, &attrs)
            .unwrap()
            .data;
        let fa = FilterRef::new(&w_abs, fshape);
        let ax = gradops::conv2d(TensorRef::new(&abs_plus_h(&x), xs, layout), fa, &attrs)
            .unwrap()
            .data;
        let g_abs =
            gradops::conv2d_backprop_input(TensorRef::new(&abs(&dy), ys, layout), fa, xs, &attrs)
                .unwrap()
                .data;
        let fd = Fd {
            what: format!(
                "conv2d_backprop_input {layout} {fl:?} x {xd:?} filter {fshape:?} {attrs:?}"
            ),
            x: &x,
            g: &g,
            b: dot(&ax, &abs(&dy)),
            g_abs: &g_abs,
            k: len(yd) + len(xd) + w.len(),
        };
        fd.check(&mut stats, |xp| {
            let y = gradops::conv2d(TensorRef::new(xp, xs, layout), f, &attrs).unwrap();
            dot(&y.data, &dy)
        });
        seen.insert((
            format!("{layout}"),
            format!("{fl:?}"),
            groups,
            match padding {
                Padding::Explicit(_) => "explicit",
                Padding::Same => "same",
                Padding::Valid => "valid",
            },
        ));
    }
    println!(
        "conv2d_backprop_input: {stats} ({} of the 36 layout/filter layout/groups/padding \
         combinations); {:.2?}",
        seen.len(),
        start.elapsed()
    );
}

/// `L(w) = <conv2d(x, w), dy>`: `conv2d_backprop_filter(x, dy)` is `dL/dw`. `|A|` for `w`
/// is the conv with `|x|`: `B = <conv2d(|x|, |w| + h), |dy|>`, `g_abs =
/// conv2d_backprop_filter(|x|, |dy|)`.
#[test]
fn conv2d_backprop_filter_matches_finite_differences() {
    let start = Instant::now();
    let mut rng = Rng::new(94);
    let mut stats = Stats::new();
    let mut seen = std::collections::BTreeSet::new();
    while stats.cases < 300 {
        let layout = *rng.pick(&LAYOUTS);
        let fl = *rng.pick(&[FilterLayout::Hwio, FilterLayout::Oihw]);
        let groups = *rng.pick(&[1, 2, 3]);
        let (cig, cog) = (rng.range(1, 2), rng.range(1, 3));
        let xd = Dims {
            n: rng.range(1, 2),
            c: cig * groups,
            h: rng.range(1, 7),
            w: rng.range(1, 7),
        };
        let k = [rng.range(1, 3), rng.range(1, 3)];
        let (padding, rounding) = match rng.range(0, 3) {
            0 => (Padding::Same, None),
            1 => (Padding::Valid, None),
            p => (
                Padding::Explicit([
                    [rng.range(0, 2), rng.range(0, 2)],
                    [rng.range(0, 2), rng.range(0, 2)],
                ]),
                if p == 3 {
                    Some(*rng.pick(&[DimRounding::Floor, DimRounding::Round, DimRounding::Ceil]))
                } else {
                    None
                },
            ),
        };
        let attrs = Conv2dAttrs::default()
            .strides([rng.range(1, 3), rng.range(1, 3)])
            .dilations([rng.range(1, 2), rng.range(1, 2)])
            .padding(padding)
            .dim_rounding(rounding)
            .filter_layout(fl);
        let fshape = match fl {
            FilterLayout::Hwio => [k[0], k[1], cig, cog * groups],
            FilterLayout::Oihw => [cog * groups, cig, k[0], k[1]],
        };
        let xs = shape(layout, xd);
        let Ok(geom) = gradops::ops::conv2d::plan_conv2d(xs, fshape, layout, &attrs) else {
            continue;
        };
        let yd = geom.output_dims();
        if len(yd) == 0 {
            continue;
        }
        let ys = shape(layout, yd);
        let w = rng.vec(fshape.iter().product());
        let x = rng.vec(len(xd));
        let x_abs = abs(&x);
        let dy = rng.vec(len(yd));
        let g = gradops::conv2d_backprop_filter(
            TensorRef::new(&x, xs, layout),
            TensorRef::new(&dy, ys, layout),
            fshape,
            &attrs,
        )
        .unwrap()
        .data;
        let wa = abs_plus_h(&w);
        let aw = gradops::conv2d(
            TensorRef::new(&x_abs, xs, layout),
            FilterRef::new(&wa, fshape),
            &attrs,
        )
        .unwrap()
        .data;
        let g_abs = gradops::conv2d_backprop_filter(
            TensorRef::new(&x_abs, xs, layout),
            TensorRef::new(&abs(&dy), ys, layout),
            fshape,
            &attrs,
        )
        .unwrap()
        .data;
        let fd = Fd {
            what: format!(
                "conv2d_backprop_filter {layout} {fl:?} x {xd:?} filter {fshape:?} {attrs:?}"
            ),
            x: &w,
            g: &g,
            b: dot(&aw, &abs(&dy)),
            g_abs: &g_abs,
            k: len(yd) + len(xd) + w.len(),
        };
        fd.check(&mut stats, |wp| {
            let y = gradops::conv2d(
                TensorRef::new(&x, xs, layout),
                FilterRef::new(wp, fshape),
                &attrs,
            )
            .unwrap();
            dot(&y.data, &dy)
        });
        seen.insert((
            format!("{layout}"),
            format!("{fl:?}"),
            groups,
            match padding {
                Padding::Explicit(_) => "explicit",
                Padding::Same => "same",
                Padding::Valid => "valid",
            },
        ));
    }
    assert!(seen.len() >= 30, "only {} combinations", seen.len());
    println!(
        "conv2d_backprop_filter: {stats} ({} of the 36 layout/filter layout/groups/padding \
         combinations); {:.2?}",
        seen.len(),
        start.elapsed()
    );
}

/// `L(x) = <max_pool(x), dy>` over the windows with an in-bounds cell, and the argmax.
fn pool_loss(
    x: &[f64],
    xs: [usize; 4],
    layout: Layout,
    attrs: &MaxPoolAttrs,
    dy: &[f64],
) -> (f64, Vec<i64>) {
    let (y, arg) = gradops::max_pool(TensorRef::new(x, xs, layout), attrs, true).unwrap();
    let arg = arg.unwrap();
    let l = y
        .data
        .iter()
        .zip(dy)
        .zip(&arg)
        .filter(|(_, &a)| a >= 0)
        .map(|((y, d), _)| y * d)
        .sum();
    (l, arg)
}

#[test]
fn max_pool_grads_match_finite_differences() {
    let start = Instant::now();
    let mut rng = Rng::new(94);
    let (mut with_y, mut empty_windows) = (0, 0);
    let (mut stats, mut stats_arg) = (Stats::new(), Stats::new());
    while stats.cases < 400 {
        let layout = *rng.pick(&LAYOUTS);
        let xd = Dims {
            n: rng.range(1, 2),
            c: rng.range(1, 3),
            h: rng.range(1, 7),
            w: rng.range(1, 7),
        };
        let ksize = [rng.range(1, 3), rng.range(1, 3)];
        let (padding, rounding) = match rng.range(0, 3) {
            0 => (Padding::Same, None),
            1 => (Padding::Valid, None),
            p => (
                Padding::Explicit([
                    [rng.range(0, ksize[0] - 1), rng.range(0, ksize[0] - 1)],
                    [rng.range(0, ksize[1] - 1), rng.range(0, ksize[1] - 1)],
                ]),
                if p == 3 {
                    Some(*rng.pick(&[DimRounding::Floor, DimRounding::Round, DimRounding::Ceil]))
                } else {
                    None
                },
            ),
        };
        let attrs = MaxPoolAttrs::new(ksize)
            .strides([rng.range(1, 3), rng.range(1, 3)])
            .padding(padding)
            .dim_rounding(rounding);
        let xs = shape(layout, xd);
        let Ok(geom) = gradops::ops::max_pool::plan_max_pool("max_pool", xs, layout, &attrs) else {
            continue;
        };
        let yd = geom.output_dims();
        if len(yd) == 0 {
            continue;
        }
        let ys = shape(layout, yd);
        // Distinct integers, spacing 1 > 2h: no perturbation by +-h can change an argmax.
        let n = len(xd);
        let mut x: Vec<f64> = (0..n).map(|i| i as f64 - (n / 2) as f64).collect();
        for i in (1..n).rev() {
            x.swap(i, rng.range(0, i));
        }
        let dy = rng.vec(len(yd));
        let (y, arg) = gradops::max_pool(TensorRef::new(&x, xs, layout), &attrs, true).unwrap();
        let arg = arg.unwrap();
        empty_windows += arg.iter().filter(|&&a| a < 0).count();
        let y_opt = rng.coin().then(|| TensorRef::new(&y.data[..], ys, layout));
        with_y += usize::from(y_opt.is_some());
        let g = gradops::max_pool_grad(
            TensorRef::new(&dy, ys, layout),
            TensorRef::new(&x, xs, layout),
            y_opt,
            &attrs,
        )
        .unwrap()
        .data;
        let g_arg =
            gradops::max_pool_grad_with_argmax(TensorRef::new(&dy, ys, layout), &arg, xs, &attrs)
                .unwrap()
                .data;
        // |A| routes each in-bounds window's dy to one cell: B = sum |dy_j| (|y_j| + h).
        let b = y
            .data
            .iter()
            .zip(&dy)
            .zip(&arg)
            .filter(|(_, &a)| a >= 0)
            .map(|((y, d), _)| d.abs() * (y.abs() + H))
            .sum();
        let g_abs = gradops::max_pool_grad_with_argmax(
            TensorRef::new(&abs(&dy), ys, layout),
            &arg,
            xs,
            &attrs,
        )
        .unwrap()
        .data;
        let what = format!("{layout} x {xd:?} {attrs:?}");
        let loss = |xp: &[f64]| {
            let (l, a) = pool_loss(xp, xs, layout, &attrs, &dy);
            assert_eq!(a, arg, "{what}: an argmax moved within +-h");
            l
        };
        for (op, g, stats) in [
            ("max_pool_grad", &g, &mut stats),
            ("max_pool_grad_with_argmax", &g_arg, &mut stats_arg),
        ] {
            let fd = Fd {
                what: format!("{op} {what}"),
                x: &x,
                g,
                b,
                g_abs: &g_abs,
                k: len(yd) + len(xd),
            };
            fd.check(stats, &loss);
        }
    }
    println!(
        "max_pool_grad: {stats} ({with_y} cases given y, {empty_windows} windows with no \
         in-bounds cell)\nmax_pool_grad_with_argmax: {stats_arg}; {:.2?}",
        start.elapsed()
    );
}

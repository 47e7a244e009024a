//! Property tests: random attributes and shapes (zeros, ones and out-of-range values
//! included) through every op's public API, on the CPU and (where one is usable) the GPU.
//! Each case checks accept/reject against an independent rule written here from SPEC.md,
//! and an accepted answer against the scatter references of `tests/common` (outputs
//! poisoned with NaN first, so an unwritten element fails).
//!
//! Seeded and deterministic; `GRADOPS_PROP_CASES=N` runs N cases per test (default 1500),
//! `GRADOPS_PROP_SEED=S` another seed, `GRADOPS_PROP_TRACE=1` each case on stderr before it
//! runs. A failure prints the case.

mod common;
use common::*;
use gradops::geometry::{CoordinateTransform as Ct, NearestMode as Nm, ResizeMode};
use gradops::{
    bf16, f16, Conv2dAttrs, DimRounding, Dims, Element, FilterLayout, FilterRef, Layout,
    MaxPoolAttrs, Padding, ResizeAttrs, TensorRef, TfResizeAttrs,
};

/// An out-of-range size: far larger than any buffer here, small enough for i128 products.
const HUGE: usize = 1 << 40;
/// Largest output axis a case builds a matching `dy` for (larger: a mismatching `dy`).
const MAX_OUT: usize = 48;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Dev {
    Cpu,
    Cuda,
}

fn cases() -> usize {
    std::env::var("GRADOPS_PROP_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500)
}

/// `GRADOPS_PROP_TRACE=1`: each case on stderr before it runs, so a case that hangs a
/// device (a run cut off by a time limit) is named by the last line of the log.
fn trace(what: &str) {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *ON.get_or_init(|| std::env::var_os("GRADOPS_PROP_TRACE").is_some_and(|v| v == "1")) {
        eprintln!("case: {what}");
    }
}

fn seed(base: u64) -> u64 {
    base ^ std::env::var("GRADOPS_PROP_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn cuda_or_skip(test: &str) -> bool {
    match gradops::cuda::probe() {
        Ok(_) => true,
        Err(e) => {
            let msg = format!("SKIPPED {test}: {e}");
            assert!(
                std::env::var("GRADOPS_REQUIRE_GPU").as_deref() != Ok("1"),
                "GRADOPS_REQUIRE_GPU=1 but {msg}"
            );
            eprintln!("{msg}");
            println!("{msg}");
            false
        }
    }
}

// ---------------------------------------------------------------- the SPEC's rule ----

fn floor_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    if a % b != 0 && (a < 0) != (b < 0) {
        q - 1
    } else {
        q
    }
}

fn ceil_div(a: i128, b: i128) -> i128 {
    -floor_div(-a, b)
}

/// SPEC.md "conv2d_backprop_input", geometry per axis: `(out, pad_before)`, or `None` where
/// the SPEC calls it an error (non-positive stride or dilation, a negative `out`).
fn spec_axis(
    input: usize,
    k: usize,
    s: usize,
    d: usize,
    padding: Padding,
    axis: usize,
    rounding: Option<DimRounding>,
) -> Option<(usize, usize)> {
    if s == 0 || d == 0 {
        return None;
    }
    let (i, s) = (input as i128, s as i128);
    let ke = (k as i128 - 1) * d as i128 + 1;
    let (out, top) = match padding {
        Padding::Valid => (ceil_div(i - ke + 1, s), 0),
        Padding::Same => {
            let out = ceil_div(i, s);
            let need = ((out - 1) * s + ke - i).max(0);
            (out, if out == 0 { 0 } else { need / 2 })
        }
        Padding::Explicit(p) => {
            let [t, b] = p[axis];
            let span = i + t as i128 + b as i128 - ke;
            let q = match rounding {
                None | Some(DimRounding::Floor) => floor_div(span, s),
                Some(DimRounding::Ceil) => ceil_div(span, s),
                // tfjs: Math.round(span/s + 1), half up.
                Some(DimRounding::Round) => floor_div(2 * span + s, 2 * s),
            };
            (q + 1, t as i128)
        }
    };
    (out >= 0).then_some((out as usize, top as usize))
}

fn explicit(p: Padding) -> bool {
    matches!(p, Padding::Explicit(_))
}

// ---------------------------------------------------------------- random draws ----

fn size(rng: &mut Rng) -> usize {
    match rng.range(0, 9) {
        0 | 1 => 0,
        2 | 3 => 1,
        _ => rng.range(2, 7),
    }
}

fn stride(rng: &mut Rng) -> usize {
    *rng.pick(&[0, 1, 1, 1, 1, 2, 2, 3, 3, HUGE])
}

fn dilation(rng: &mut Rng) -> usize {
    *rng.pick(&[0, 1, 1, 1, 1, 2, 2, 3, HUGE])
}

fn pad(rng: &mut Rng) -> usize {
    *rng.pick(&[0, 0, 0, 1, 1, 2, 3, 5, HUGE])
}

fn padding(rng: &mut Rng) -> Padding {
    match rng.range(0, 2) {
        0 => Padding::Same,
        1 => Padding::Valid,
        _ => Padding::Explicit([[pad(rng), pad(rng)], [pad(rng), pad(rng)]]),
    }
}

fn rounding(rng: &mut Rng) -> Option<DimRounding> {
    match rng.range(0, 7) {
        0 => Some(DimRounding::Floor),
        1 => Some(DimRounding::Ceil),
        2 => Some(DimRounding::Round),
        _ => None,
    }
}

/// The computed output shape, perturbed by one along a random axis one time in six; a huge
/// computed size gets a small (mismatching) stand-in.
fn dy_dims(rng: &mut Rng, want: Dims) -> Dims {
    let mut d = Dims {
        n: want.n,
        c: want.c,
        h: want.h.min(MAX_OUT + 1),
        w: want.w.min(MAX_OUT + 1),
    };
    if rng.range(0, 5) == 0 {
        match rng.range(0, 3) {
            0 => d.n += 1,
            1 => d.c += 1,
            2 => d.h = d.h.checked_sub(1).unwrap_or(1),
            _ => d.w += 1,
        }
    }
    d
}

fn numel(d: Dims) -> usize {
    d.n * d.c * d.h * d.w
}

/// Rounded random data in `T` and its f64 values.
fn data<T: Element>(rng: &mut Rng, n: usize) -> (Vec<T>, Vec<f64>) {
    round_to::<T>(&rng.vec(n))
}

fn nan<T: Element>(n: usize) -> Vec<T> {
    vec![T::from_f64(f64::NAN); n]
}

fn check_answer<T: Element>(what: &str, got: &[T], want: &[f64]) {
    let got = to_f64(got);
    if let Some(i) = got.iter().position(|v| v.is_nan()) {
        panic!("{what}: element {i} of {} not written", got.len());
    }
    let err = rel_err(&got, want);
    assert!(
        err <= tol::<T>(),
        "{what}: rel err {err:e} > {:e}",
        tol::<T>()
    );
}

/// Accept/reject agreement, with the error text in the failure message.
fn check_verdict<R>(what: &str, expect_ok: bool, got: &gradops::Result<R>) {
    match (expect_ok, got) {
        (true, Err(e)) => panic!("{what}: the SPEC accepts it, gradops says: {e}"),
        (false, Ok(_)) => panic!("{what}: the SPEC rejects it, gradops accepted it"),
        (false, Err(e)) => {
            let m = e.to_string();
            assert!(!m.is_empty(), "{what}: empty error message");
        }
        _ => {}
    }
}

// ---------------------------------------------------------------- conv ----

struct ConvCase {
    layout: Layout,
    xd: Dims,
    k: [usize; 2],
    fci: usize,
    co: usize,
    strides: [usize; 2],
    dil: [usize; 2],
    padding: Padding,
    rounding: Option<DimRounding>,
    oihw: bool,
}

fn conv_case(rng: &mut Rng) -> ConvCase {
    let groups = *rng.pick(&[1, 1, 1, 2, 3]);
    let cig = rng.range(1, 3);
    let mut ci = cig * groups;
    let mut fci = cig;
    let mut co = *rng.pick(&[0, 1, 2, 3]) * groups;
    match rng.range(0, 11) {
        0 => fci += 1,
        1 => fci = 0,
        2 => ci = 0,
        3 => co += 1,
        _ => {}
    }
    let k = [
        *rng.pick(&[0, 0, 1, 1, 2, 3, 4]),
        *rng.pick(&[0, 1, 1, 2, 3, 4]),
    ];
    ConvCase {
        layout: *rng.pick(&[Layout::Nchw, Layout::Nhwc]),
        xd: Dims {
            n: *rng.pick(&[0, 1, 1, 2]),
            c: ci,
            h: size(rng),
            w: size(rng),
        },
        k,
        fci,
        co,
        strides: [stride(rng), stride(rng)],
        dil: [dilation(rng), dilation(rng)],
        padding: padding(rng),
        rounding: rounding(rng),
        oihw: rng.range(0, 3) == 0,
    }
}

impl ConvCase {
    /// SPEC rule: `(ho, wo, top, left)` or `None` for an error.
    fn rule(&self) -> Option<(usize, usize, usize, usize)> {
        if self.rounding.is_some() && !explicit(self.padding) {
            return None;
        }
        // groups = Ci / filter_in_channels must divide Ci and Co (a zero group count too:
        // no input channels is a channel mismatch, as TF's "evenly divisible" check).
        let (ci, fci) = (self.xd.c, self.fci);
        if fci == 0 || ci == 0 || ci % fci != 0 || !self.co.is_multiple_of(ci / fci) {
            return None;
        }
        let (ho, top) = spec_axis(
            self.xd.h,
            self.k[0],
            self.strides[0],
            self.dil[0],
            self.padding,
            0,
            self.rounding,
        )?;
        let (wo, left) = spec_axis(
            self.xd.w,
            self.k[1],
            self.strides[1],
            self.dil[1],
            self.padding,
            1,
            self.rounding,
        )?;
        Some((ho, wo, top, left))
    }

    fn attrs(&self) -> Conv2dAttrs {
        Conv2dAttrs::default()
            .strides(self.strides)
            .dilations(self.dil)
            .padding(self.padding)
            .dim_rounding(self.rounding)
            .filter_layout(if self.oihw {
                FilterLayout::Oihw
            } else {
                FilterLayout::Hwio
            })
    }

    fn hwio(&self) -> [usize; 4] {
        [self.k[0], self.k[1], self.fci, self.co]
    }

    /// The filter in the case's layout (from HWIO data).
    fn filter<T: Element>(&self, w: &[T]) -> (Vec<T>, [usize; 4]) {
        let [kh, kw, i, o] = self.hwio();
        if !self.oihw {
            return (w.to_vec(), self.hwio());
        }
        let mut out = vec![T::default(); w.len()];
        for y in 0..kh {
            for x in 0..kw {
                for c in 0..i {
                    for oc in 0..o {
                        out[((oc * i + c) * kh + y) * kw + x] = w[((y * kw + x) * i + c) * o + oc];
                    }
                }
            }
        }
        (out, [o, i, kh, kw])
    }

    fn describe(&self) -> String {
        format!(
            "{} x {:?} filter HWIO {:?}{} strides {:?} dilations {:?} {:?} rounding {:?}",
            self.layout,
            self.xd,
            self.hwio(),
            if self.oihw { " (as OIHW)" } else { "" },
            self.strides,
            self.dil,
            self.padding,
            self.rounding
        )
    }
}

fn conv_backprop_input_property<T: Element>(dev: Dev, rng: &mut Rng) -> (usize, usize) {
    let c = conv_case(rng);
    let layout = c.layout;
    let rule = c.rule();
    let want_dy = rule.map(|(ho, wo, _, _)| Dims {
        n: c.xd.n,
        c: c.co,
        h: ho,
        w: wo,
    });
    let dyd = dy_dims(
        rng,
        want_dy.unwrap_or(Dims {
            n: c.xd.n,
            c: c.co,
            h: 1,
            w: 2,
        }),
    );
    let expect_ok = rule.is_some() && Some(dyd) == want_dy;
    let what = format!(
        "conv2d_backprop_input {dev:?} {:?} {} dy {dyd:?}",
        T::DTYPE,
        c.describe()
    );
    trace(&what);
    let (dy, dy64) = data::<T>(rng, numel(dyd));
    let (w, w64) = data::<T>(rng, c.hwio().iter().product());
    let (f, fshape) = c.filter(&w);
    let dyv = TensorRef::new(&dy[..], shape(layout, dyd), layout);
    let xshape = shape(layout, c.xd);
    let got = match dev {
        Dev::Cpu => {
            let mut dx = nan::<T>(numel(c.xd));
            gradops::conv2d_backprop_input_into(
                dyv,
                FilterRef::new(&f, fshape),
                xshape,
                &c.attrs(),
                &mut dx,
            )
            .map(|()| dx)
        }
        Dev::Cuda => gradops::cuda::host::conv2d_backprop_input(
            dyv,
            FilterRef::new(&f, fshape),
            xshape,
            &c.attrs(),
        )
        .map(|t| t.data),
    };
    check_verdict(&what, expect_ok, &got);
    let (Ok(dx), Some((_, _, top, left))) = (got, rule) else {
        return (0, 1);
    };
    let want = ref_conv_backprop_input(
        &dy64,
        dyd,
        &w64,
        c.k,
        c.xd,
        layout,
        c.strides,
        c.dil,
        [top, left],
    );
    check_answer(&what, &dx, &want);
    (1, 0)
}

fn conv_backprop_filter_property<T: Element>(dev: Dev, rng: &mut Rng) -> (usize, usize) {
    let c = conv_case(rng);
    let layout = c.layout;
    let rule = c.rule();
    let want_dy = rule.map(|(ho, wo, _, _)| Dims {
        n: c.xd.n,
        c: c.co,
        h: ho,
        w: wo,
    });
    let dyd = dy_dims(
        rng,
        want_dy.unwrap_or(Dims {
            n: c.xd.n,
            c: c.co,
            h: 1,
            w: 2,
        }),
    );
    let expect_ok = rule.is_some() && Some(dyd) == want_dy;
    let what = format!(
        "conv2d_backprop_filter {dev:?} {:?} {} dy {dyd:?}",
        T::DTYPE,
        c.describe()
    );
    trace(&what);
    let (x, x64) = data::<T>(rng, numel(c.xd));
    let (dy, dy64) = data::<T>(rng, numel(dyd));
    let flen: usize = c.hwio().iter().product();
    let (_, fshape) = c.filter(&vec![T::default(); flen]);
    let xv = TensorRef::new(&x[..], shape(layout, c.xd), layout);
    let dyv = TensorRef::new(&dy[..], shape(layout, dyd), layout);
    let got = match dev {
        Dev::Cpu => {
            let mut dw = nan::<T>(flen);
            gradops::conv2d_backprop_filter_into(xv, dyv, fshape, &c.attrs(), &mut dw).map(|()| dw)
        }
        Dev::Cuda => {
            gradops::cuda::host::conv2d_backprop_filter(xv, dyv, fshape, &c.attrs()).map(|t| t.data)
        }
    };
    check_verdict(&what, expect_ok, &got);
    let (Ok(dw), Some((_, _, top, left))) = (got, rule) else {
        return (0, 1);
    };
    let want = ref_conv_backprop_filter(
        &x64,
        c.xd,
        &dy64,
        dyd,
        c.k,
        c.xd.c / c.fci,
        layout,
        c.strides,
        c.dil,
        [top, left],
    );
    check_answer(&what, &dw, &c.filter(&want).0);
    (1, 0)
}

/// Forward conv reference (HWIO), straight from the SPEC's index map.
#[allow(clippy::too_many_arguments)]
fn ref_conv2d(
    x: &[f64],
    xd: Dims,
    w: &[f64],
    k: [usize; 2],
    fci: usize,
    yd: Dims,
    layout: Layout,
    s: [usize; 2],
    d: [usize; 2],
    tl: [usize; 2],
) -> Vec<f64> {
    let mut y = vec![0.0; numel(yd)];
    if w.is_empty() {
        return y;
    }
    let cog = yd.c / (xd.c / fci);
    for n in 0..yd.n {
        for o in 0..yd.c {
            let g = o / cog;
            for oy in 0..yd.h {
                for ox in 0..yd.w {
                    let mut acc = 0.0;
                    for ky in 0..k[0] {
                        let iy = (oy * s[0] + ky * d[0]) as i128 - tl[0] as i128;
                        for kx in 0..k[1] {
                            let ix = (ox * s[1] + kx * d[1]) as i128 - tl[1] as i128;
                            if iy < 0 || ix < 0 || iy >= xd.h as i128 || ix >= xd.w as i128 {
                                continue;
                            }
                            for c in 0..fci {
                                let xi = at(layout, xd, n, g * fci + c, iy as usize, ix as usize);
                                acc += x[xi] * w[((ky * k[1] + kx) * fci + c) * yd.c + o];
                            }
                        }
                    }
                    y[at(layout, yd, n, o, oy, ox)] = acc;
                }
            }
        }
    }
    y
}

fn conv2d_property<T: Element>(dev: Dev, rng: &mut Rng) -> (usize, usize) {
    let c = conv_case(rng);
    let layout = c.layout;
    let rule = c.rule();
    let what = format!("conv2d {dev:?} {:?} {}", T::DTYPE, c.describe());
    trace(&what);
    if let Some((ho, wo, _, _)) = rule {
        if ho > MAX_OUT || wo > MAX_OUT {
            return (0, 0); // valid, but its output is too large to allocate here
        }
    }
    let (x, x64) = data::<T>(rng, numel(c.xd));
    let (w, w64) = data::<T>(rng, c.hwio().iter().product());
    let (f, fshape) = c.filter(&w);
    let xv = TensorRef::new(&x[..], shape(layout, c.xd), layout);
    let got = match dev {
        Dev::Cpu => gradops::conv2d(xv, FilterRef::new(&f, fshape), &c.attrs()),
        Dev::Cuda => gradops::cuda::host::conv2d(xv, FilterRef::new(&f, fshape), &c.attrs()),
    };
    check_verdict(&what, rule.is_some(), &got);
    let (Ok(y), Some((ho, wo, top, left))) = (got, rule) else {
        return (0, 1);
    };
    let yd = Dims {
        n: c.xd.n,
        c: c.co,
        h: ho,
        w: wo,
    };
    assert_eq!(y.shape, shape(layout, yd), "{what}: output shape");
    let want = ref_conv2d(
        &x64,
        c.xd,
        &w64,
        c.k,
        c.fci,
        yd,
        layout,
        c.strides,
        c.dil,
        [top, left],
    );
    check_answer(&what, &y.data, &want);
    (1, 0)
}

// ---------------------------------------------------------------- max pool ----

fn max_pool_property<T: Element>(dev: Dev, rng: &mut Rng) -> (usize, usize) {
    let layout = *rng.pick(&[Layout::Nchw, Layout::Nhwc]);
    let xd = Dims {
        n: *rng.pick(&[0, 1, 1, 2]),
        c: *rng.pick(&[0, 1, 2, 3]),
        h: size(rng),
        w: size(rng),
    };
    let k = [
        *rng.pick(&[0, 1, 1, 2, 3, 4]),
        *rng.pick(&[0, 1, 1, 2, 3, 4]),
    ];
    let s = [stride(rng), stride(rng)];
    let padding = match rng.range(0, 3) {
        0 => Padding::Same,
        1 => Padding::Valid,
        // Mostly pads smaller than the window (the SPEC's rule), sometimes not.
        _ => {
            let p = |rng: &mut Rng, k: usize| match rng.range(0, 5) {
                0 => pad(rng),
                _ => rng.range(0, k.max(1) - 1),
            };
            Padding::Explicit([[p(rng, k[0]), p(rng, k[0])], [p(rng, k[1]), p(rng, k[1])]])
        }
    };
    let rounding = rounding(rng);
    let dil = if rng.range(0, 12) == 0 {
        [1, 2]
    } else {
        [1, 1]
    };
    let mut attrs = MaxPoolAttrs::new(k)
        .strides(s)
        .padding(padding)
        .dim_rounding(rounding);
    attrs.window.dilations = dil;
    // SPEC rule: ksize positive, dilation 1, explicit pads smaller than the window,
    // dim rounding only with explicit padding, then the conv geometry with d = 1.
    let pads_ok = match padding {
        Padding::Explicit(p) => (0..2).all(|a| p[a][0] < k[a] && p[a][1] < k[a]),
        _ => true,
    };
    let rule = if k.contains(&0)
        || dil != [1, 1]
        || !pads_ok
        || (rounding.is_some() && !explicit(padding))
    {
        None
    } else {
        spec_axis(xd.h, k[0], s[0], 1, padding, 0, rounding).and_then(|(ho, top)| {
            spec_axis(xd.w, k[1], s[1], 1, padding, 1, rounding).map(|(wo, left)| {
                (
                    Dims {
                        n: xd.n,
                        c: xd.c,
                        h: ho,
                        w: wo,
                    },
                    [top, left],
                )
            })
        })
    };
    let dyd = dy_dims(
        rng,
        rule.map(|r| r.0).unwrap_or(Dims {
            n: xd.n,
            c: xd.c,
            h: 1,
            w: 1,
        }),
    );
    let with_y = rng.coin();
    let yd = if with_y && rng.range(0, 7) == 0 {
        dy_dims(rng, dyd)
    } else {
        dyd
    };
    let expect_ok = rule.is_some_and(|r| r.0 == dyd && (!with_y || yd == dyd));
    let what = format!(
        "max_pool_grad {dev:?} {:?} {layout} x {xd:?} ksize {k:?} strides {s:?} {padding:?} rounding {rounding:?} dilations {dil:?} dy {dyd:?} y {:?}",
        T::DTYPE,
        with_y.then_some(yd)
    );
    trace(&what);
    // Ties one time in two (the first-cell rule).
    let xs: Vec<f64> = if rng.coin() {
        (0..numel(xd)).map(|_| rng.range(0, 2) as f64).collect()
    } else {
        rng.vec(numel(xd))
    };
    let (x, x64) = round_to::<T>(&xs);
    let (dy, dy64) = data::<T>(rng, numel(dyd));
    let (y, _) = data::<T>(rng, numel(yd));
    let xv = TensorRef::new(&x[..], shape(layout, xd), layout);
    let dyv = TensorRef::new(&dy[..], shape(layout, dyd), layout);
    let yv = with_y.then(|| TensorRef::new(&y[..], shape(layout, yd), layout));
    let got = match dev {
        Dev::Cpu => {
            let mut dx = nan::<T>(numel(xd));
            gradops::max_pool_grad_into(dyv, xv, yv, &attrs, &mut dx).map(|()| dx)
        }
        Dev::Cuda => gradops::cuda::host::max_pool_grad(dyv, xv, yv, &attrs).map(|t| t.data),
    };
    check_verdict(&what, expect_ok, &got);
    // The forward (and its argmax) accepts exactly the geometry the rule accepts.
    let fwd = match dev {
        Dev::Cpu => gradops::max_pool(xv, &attrs, true),
        Dev::Cuda => gradops::cuda::host::max_pool(xv, &attrs, true),
    };
    check_verdict(&format!("max_pool of {what}"), rule.is_some(), &fwd);
    if let (Ok((yf, _)), Some((od, _))) = (&fwd, rule) {
        assert_eq!(yf.shape, shape(layout, od), "{what}: max_pool output shape");
    }
    let (Ok(dx), Some((_, tl))) = (got, rule) else {
        return (0, 1);
    };
    let want = ref_max_pool_grad(&dy64, dyd, &x64, xd, layout, k, s, tl);
    check_answer(&what, &dx, &want);
    // The stored-argmax gradient routes exactly the same.
    let arg = fwd.unwrap().1.unwrap();
    let dx2 = match dev {
        Dev::Cpu => gradops::max_pool_grad_with_argmax(dyv, &arg, shape(layout, xd), &attrs),
        Dev::Cuda => {
            gradops::cuda::host::max_pool_grad_with_argmax(dyv, &arg, shape(layout, xd), &attrs)
        }
    }
    .unwrap_or_else(|e| panic!("{what}: max_pool_grad_with_argmax: {e}"));
    check_answer(&format!("{what} (stored argmax)"), &dx2.data, &want);
    (1, 0)
}

// ---------------------------------------------------------------- resize ----

const CTMS: [Ct; 5] = ALL_CTMS;
const NMS: [Nm; 4] = ALL_NEAREST_MODES;

fn resize_property<T: Element>(dev: Dev, rng: &mut Rng) -> (usize, usize) {
    let layout = *rng.pick(&[Layout::Nchw, Layout::Nhwc]);
    let xd = Dims {
        n: *rng.pick(&[0, 1, 1, 2]),
        c: *rng.pick(&[0, 1, 2]),
        h: size(rng),
        w: size(rng),
    };
    let mut dyd = Dims {
        n: xd.n,
        c: xd.c,
        h: size(rng),
        w: size(rng),
    };
    match rng.range(0, 9) {
        0 => dyd.n += 1,
        1 => dyd.c += 1,
        _ => {}
    }
    // Which op: 0 resize_grad (ONNX), 1 resize_bilinear_grad, 2 resize_nearest_neighbor_grad.
    let which = rng.range(0, 2);
    let (align, half) = (rng.coin(), rng.coin());
    let mut scales = None;
    let attrs = match which {
        0 => {
            let mode = *rng.pick(&[ResizeMode::Linear, ResizeMode::Nearest]);
            if rng.range(0, 3) == 0 {
                let scale = |rng: &mut Rng, i: usize, o: usize| match rng.range(0, 5) {
                    0 => *rng.pick(&[0.0, -1.0, f64::NAN, f64::INFINITY, 0.5, 2.0]),
                    _ if i > 0 => o as f64 / i as f64,
                    _ => *rng.pick(&[1.0, 2.0]),
                };
                scales = Some([scale(rng, xd.h, dyd.h), scale(rng, xd.w, dyd.w)]);
            }
            Some(
                ResizeAttrs::new(mode)
                    .coordinate_transformation_mode(*rng.pick(&CTMS))
                    .nearest_mode(*rng.pick(&NMS))
                    .scales(scales),
            )
        }
        _ => {
            let mode = if which == 1 {
                ResizeMode::Linear
            } else {
                ResizeMode::Nearest
            };
            // SPEC's table (align_corners, half_pixel_centers) -> ONNX modes.
            let (ctm, nm) = match (align, half, mode) {
                (true, true, _) => (None, Nm::Floor),
                (false, false, _) => (Some(Ct::Asymmetric), Nm::Floor),
                (true, false, ResizeMode::Linear) => (Some(Ct::AlignCorners), Nm::Floor),
                (true, false, _) => (Some(Ct::AlignCorners), Nm::RoundPreferCeil),
                (false, true, ResizeMode::Linear) => (Some(Ct::HalfPixel), Nm::Floor),
                (false, true, _) => (Some(Ct::TfHalfPixelForNn), Nm::Floor),
            };
            ctm.map(|ctm| {
                ResizeAttrs::new(mode)
                    .coordinate_transformation_mode(ctm)
                    .nearest_mode(nm)
            })
        }
    };
    // SPEC rule: N and C of dy equal x's; scales finite and positive, and then
    // Ho = floor(Hi*sh), Wo = floor(Wi*sw); TF's two flags not both set.
    let scales_ok = scales.is_none_or(|[sh, sw]: [f64; 2]| {
        sh.is_finite()
            && sw.is_finite()
            && sh > 0.0
            && sw > 0.0
            && dyd.h == (xd.h as f64 * sh).floor() as usize
            && dyd.w == (xd.w as f64 * sw).floor() as usize
    });
    let expect_ok = attrs.is_some() && dyd.n == xd.n && dyd.c == xd.c && scales_ok;
    let what = format!(
        "resize op {which} {dev:?} {:?} {layout} x {xd:?} dy {dyd:?} attrs {attrs:?} tf flags ({align}, {half})",
        T::DTYPE
    );
    trace(&what);
    let (dy, dy64) = data::<T>(rng, numel(dyd));
    let dyv = TensorRef::new(&dy[..], shape(layout, dyd), layout);
    let xshape = shape(layout, xd);
    let tf = TfResizeAttrs::default()
        .align_corners(align)
        .half_pixel_centers(half);
    let got = match (dev, which) {
        (Dev::Cpu, 0) => {
            let mut dx = nan::<T>(numel(xd));
            gradops::resize_grad_into(dyv, xshape, attrs.as_ref().unwrap(), &mut dx).map(|()| dx)
        }
        (Dev::Cpu, 1) => gradops::resize_bilinear_grad(dyv, xshape, &tf).map(|t| t.data),
        (Dev::Cpu, _) => gradops::resize_nearest_neighbor_grad(dyv, xshape, &tf).map(|t| t.data),
        (Dev::Cuda, _) => {
            let op = "resize_grad";
            match attrs.as_ref() {
                // Both TF flags: the TF op's own attribute check (no device work).
                None => gradops::resize_bilinear_grad(dyv, xshape, &tf).map(|t| t.data),
                Some(a) => {
                    gradops::ops::resize::plan_resize_grad::<T>(op, dyv.shape, xshape, layout, a)
                        .and_then(|plan| {
                            let mut dx = nan::<T>(numel(xd));
                            gradops::cuda::host::run_resize_plan(op, &plan, layout, &dy, &mut dx)
                                .map(|()| dx)
                        })
                }
            }
        }
    };
    check_verdict(&what, expect_ok, &got);
    let (Ok(dx), Some(a)) = (got, attrs) else {
        return (0, 1);
    };
    let case = ResizeCase {
        mode: a.mode,
        ctm: a.coordinate_transformation_mode,
        nm: a.nearest_mode,
        scales: a.scales,
    };
    let f32_coords = T::DTYPE != gradops::DType::F64;
    let want = ref_resize_grad(&dy64, dyd, xd, layout, &case, f32_coords);
    check_answer(&what, &dx, &want);
    // The forward accepts the same geometry and is the exact adjoint: <resize(x), dy> equals
    // <x, dx> (CPU only: the GPU forward is covered by tests/cuda_ops.rs).
    if dev == Dev::Cpu {
        let (x, x64) = data::<T>(rng, numel(xd));
        let xv = TensorRef::new(&x[..], xshape, layout);
        let y = gradops::resize(xv, [dyd.h, dyd.w], &a)
            .unwrap_or_else(|e| panic!("{what}: forward: {e}"));
        let lhs = dot(&to_f64(&y.data), &dy64);
        let rhs = dot(&x64, &want);
        let scale = 1.0 + lhs.abs().max(rhs.abs());
        assert!(
            (lhs - rhs).abs() <= 50.0 * tol::<T>() * scale,
            "{what}: adjoint <resize(x), dy> = {lhs} vs <x, dx> = {rhs}"
        );
    }
    (1, 0)
}

// ---------------------------------------------------------------- drivers ----

type Prop = fn(Dev, &mut Rng) -> (usize, usize);

fn run(name: &str, dev: Dev, base: u64, props: [Prop; 4]) {
    if dev == Dev::Cuda && !cuda_or_skip(name) {
        return;
    }
    let mut rng = Rng::new(seed(base));
    let (mut ok, mut err) = (0, 0);
    for i in 0..cases() {
        let (a, b) = props[i % props.len()](dev, &mut rng);
        ok += a;
        err += b;
    }
    println!(
        "{name}: {ok} accepted and checked against the reference, {err} rejected as the SPEC says"
    );
    assert!(ok > cases() / 10, "{name}: too few accepted cases ({ok})");
    assert!(err > cases() / 20, "{name}: too few rejected cases ({err})");
}

fn conv_props() -> [Prop; 4] {
    [
        conv_backprop_input_property::<f64>,
        conv_backprop_input_property::<f32>,
        conv_backprop_input_property::<f16>,
        conv_backprop_input_property::<bf16>,
    ]
}

fn conv_filter_props() -> [Prop; 4] {
    [
        conv_backprop_filter_property::<f64>,
        conv_backprop_filter_property::<f32>,
        conv_backprop_filter_property::<f16>,
        conv_backprop_filter_property::<bf16>,
    ]
}

fn conv_fwd_props() -> [Prop; 4] {
    [
        conv2d_property::<f64>,
        conv2d_property::<f32>,
        conv2d_property::<f16>,
        conv2d_property::<bf16>,
    ]
}

fn pool_props() -> [Prop; 4] {
    [
        max_pool_property::<f64>,
        max_pool_property::<f32>,
        max_pool_property::<f16>,
        max_pool_property::<bf16>,
    ]
}

fn resize_props() -> [Prop; 4] {
    [
        resize_property::<f64>,
        resize_property::<f32>,
        resize_property::<f16>,
        resize_property::<bf16>,
    ]
}

#[test]
fn conv2d_backprop_input_geometry_cpu() {
    run(
        "conv2d_backprop_input_geometry_cpu",
        Dev::Cpu,
        0xc0,
        conv_props(),
    );
}

#[test]
fn conv2d_backprop_filter_geometry_cpu() {
    run(
        "conv2d_backprop_filter_geometry_cpu",
        Dev::Cpu,
        0xc2,
        conv_filter_props(),
    );
}

#[test]
fn conv2d_geometry_cpu() {
    run("conv2d_geometry_cpu", Dev::Cpu, 0xc1, conv_fwd_props());
}

#[test]
fn max_pool_geometry_cpu() {
    run("max_pool_geometry_cpu", Dev::Cpu, 0x90, pool_props());
}

#[test]
fn resize_geometry_cpu() {
    run("resize_geometry_cpu", Dev::Cpu, 0x7e, resize_props());
}

#[test]
fn conv2d_backprop_input_geometry_cuda() {
    run(
        "conv2d_backprop_input_geometry_cuda",
        Dev::Cuda,
        0xc0,
        conv_props(),
    );
}

#[test]
fn conv2d_backprop_filter_geometry_cuda() {
    run(
        "conv2d_backprop_filter_geometry_cuda",
        Dev::Cuda,
        0xc2,
        conv_filter_props(),
    );
}

#[test]
fn conv2d_geometry_cuda() {
    run("conv2d_geometry_cuda", Dev::Cuda, 0xc1, conv_fwd_props());
}

#[test]
fn max_pool_geometry_cuda() {
    run("max_pool_geometry_cuda", Dev::Cuda, 0x90, pool_props());
}

#[test]
fn resize_geometry_cuda() {
    run("resize_geometry_cuda", Dev::Cuda, 0x7e, resize_props());
}

/// The issue's examples, pinned: each was rejected before and is a valid empty or all-zero
/// result now.
#[test]
fn issue_examples_are_accepted() {
    // input 2 rows, pads [2, 2], kernel 4 dilated 2 (effective 7), stride 3: out 0.
    let c = ConvCase {
        layout: Layout::Nhwc,
        xd: Dims {
            n: 1,
            c: 1,
            h: 2,
            w: 3,
        },
        k: [4, 1],
        fci: 1,
        co: 2,
        strides: [3, 1],
        dil: [2, 1],
        padding: Padding::Explicit([[2, 2], [0, 0]]),
        rounding: None,
        oihw: false,
    };
    assert_eq!(c.rule(), Some((0, 3, 2, 0)));
    let mut dx = nan::<f32>(6);
    gradops::conv2d_backprop_input_into(
        TensorRef::new(&[] as &[f32], [1, 0, 3, 2], Layout::Nhwc),
        FilterRef::new(&[1.0f32; 8], [4, 1, 1, 2]),
        [1, 2, 3, 1],
        &c.attrs(),
        &mut dx,
    )
    .unwrap();
    assert_eq!(dx, vec![0.0; 6]);
    // A zero-sized kernel axis: an all-zero dx (dy is [1, 3, 3, 2] by the VALID formula
    // with ke = 1 - d = 0: ceil((2 + 1)/1) = 3).
    let dx = gradops::conv2d_backprop_input(
        TensorRef::new(&[1.0f32; 18], [1, 3, 3, 2], Layout::Nhwc),
        FilterRef::new(&[] as &[f32], [0, 1, 1, 2]),
        [1, 2, 3, 1],
        &Conv2dAttrs::default(),
    )
    .unwrap();
    assert_eq!(dx.data, vec![0.0; 6]);
    // Max pool: a zero-sized axis with zero explicit padding (floor(-1/1) + 1 = 0).
    let dx = gradops::max_pool_grad(
        TensorRef::new(&[] as &[f32], [1, 0, 0, 1], Layout::Nhwc),
        TensorRef::new(&[] as &[f32], [1, 0, 2, 1], Layout::Nhwc),
        None,
        &MaxPoolAttrs::new([1, 3]).padding(Padding::Explicit([[0, 0], [0, 0]])),
    )
    .unwrap();
    assert!(dx.data.is_empty());
    // Max pool: a window one cell short of fitting (padded 3, window 4, stride 2): out 0.
    let dx = gradops::max_pool_grad(
        TensorRef::new(&[] as &[f64], [1, 1, 0, 1], Layout::Nchw),
        TensorRef::new(&[5.0f64, 6.0], [1, 1, 2, 1], Layout::Nchw),
        None,
        &MaxPoolAttrs::new([4, 1])
            .strides([2, 1])
            .padding(Padding::Explicit([[1, 0], [0, 0]])),
    )
    .unwrap();
    assert_eq!(dx.data, vec![0.0, 0.0]);
}

//! Every backward op against a straightforward reference (tests/common), on random shapes and
//! data, in every dtype and layout, at the SPEC tolerances. Outputs are poisoned with NaN before
//! each run (the `_into` entry points) so an element left unwritten fails the comparison.

mod common;
use common::*;
use gradops::geometry::{CoordinateTransform as Ct, NearestMode as Nm, ResizeMode};
use gradops::{
    bf16, f16, Conv2dAttrs, Dims, Element, FilterRef, Layout, MaxPoolAttrs, Padding, ResizeAttrs,
    TensorRef,
};

const LAYOUTS: [Layout; 2] = [Layout::Nchw, Layout::Nhwc];
const CTMS: [Ct; 5] = ALL_CTMS;
const NMS: [Nm; 4] = ALL_NEAREST_MODES;

fn resize_grad_case<T: Element>(rng: &mut Rng, layout: Layout, mode: ResizeMode, ctm: Ct, nm: Nm) {
    let xd = Dims {
        n: rng.range(1, 2),
        // A fifth of the cases wide enough for the NHWC gather's register blocks of 64
        // channels and a remainder.
        c: *rng.pick(&[1, 2, 3, 3, 67]),
        h: rng.range(1, 9),
        w: rng.range(1, 9),
    };
    let scaled = ctm != Ct::AlignCorners && rng.range(0, 3) == 0;
    let (dyd, scales) = if scaled {
        let s = [
            *rng.pick(&[0.5, 0.75, 1.5, 2.0, 3.0]),
            *rng.pick(&[0.6, 1.0, 1.25, 2.5]),
        ];
        let h = (xd.h as f32 * s[0] as f32).floor() as usize;
        let w = (xd.w as f32 * s[1] as f32).floor() as usize;
        (Dims { h, w, ..xd }, Some(s))
    } else {
        (
            Dims {
                h: rng.range(1, 13),
                w: rng.range(1, 13),
                ..xd
            },
            None,
        )
    };
    let (dy, dy64) = round_to::<T>(&rng.vec(dyd.n * dyd.c * dyd.h * dyd.w));
    let attrs = ResizeAttrs::new(mode)
        .coordinate_transformation_mode(ctm)
        .nearest_mode(nm)
        .scales(scales);
    let mut dx = vec![T::from_f64(f64::NAN); xd.n * xd.c * xd.h * xd.w];
    gradops::resize_grad_into(
        TensorRef::new(&dy, shape(layout, dyd), layout),
        shape(layout, xd),
        &attrs,
        &mut dx,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let rc = ResizeCase {
        mode,
        ctm,
        nm,
        scales,
    };
    let want = ref_resize_grad(&dy64, dyd, xd, layout, &rc, T::DTYPE != gradops::DType::F64);
    let err = rel_err(&to_f64(&dx), &want);
    assert!(
        err <= tol::<T>(),
        "{:?} {layout} {mode:?} {ctm:?} {nm:?} x {xd:?} dy {dyd:?} scales {scales:?}: rel err {err:e}",
        T::DTYPE
    );
}

fn resize_grad_all<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    for layout in LAYOUTS {
        for ctm in CTMS {
            for _ in 0..6 {
                resize_grad_case::<T>(
                    &mut rng,
                    layout,
                    ResizeMode::Linear,
                    ctm,
                    Nm::RoundPreferFloor,
                );
            }
            for nm in NMS {
                for _ in 0..3 {
                    resize_grad_case::<T>(&mut rng, layout, ResizeMode::Nearest, ctm, nm);
                }
            }
        }
    }
}

#[test]
fn resize_grad_matches_reference_f64() {
    resize_grad_all::<f64>(1);
}
#[test]
fn resize_grad_matches_reference_f32() {
    resize_grad_all::<f32>(2);
}
#[test]
fn resize_grad_matches_reference_f16() {
    resize_grad_all::<f16>(3);
}
#[test]
fn resize_grad_matches_reference_bf16() {
    resize_grad_all::<bf16>(4);
}

fn conv_case<T: Element>(rng: &mut Rng, layout: Layout) {
    let groups = *rng.pick(&[1, 1, 2, 3]);
    let (cig, cog) = (rng.range(1, 3), rng.range(1, 3));
    let xd = Dims {
        n: rng.range(1, 2),
        c: cig * groups,
        h: rng.range(1, 9),
        w: rng.range(1, 9),
    };
    let k = [rng.range(1, 3), rng.range(1, 3)];
    let strides = [rng.range(1, 3), rng.range(1, 3)];
    let dil = [rng.range(1, 2), rng.range(1, 2)];
    let padding = match rng.range(0, 2) {
        0 => Padding::Same,
        1 => Padding::Valid,
        _ => Padding::Explicit([
            [rng.range(0, 2), rng.range(0, 2)],
            [rng.range(0, 2), rng.range(0, 2)],
        ]),
    };
    let attrs = Conv2dAttrs::default()
        .strides(strides)
        .dilations(dil)
        .padding(padding);
    let fshape = [k[0], k[1], cig, cog * groups];
    let Ok(g) = gradops::ops::conv2d::plan_conv2d(shape(layout, xd), fshape, layout, &attrs) else {
        return; // window larger than the padded input: covered by the error tests
    };
    let dyd = g.output_dims();
    let (dy, dy64) = round_to::<T>(&rng.vec(dyd.n * dyd.c * dyd.h * dyd.w));
    let (w, w64) = round_to::<T>(&rng.vec(fshape.iter().product()));
    let mut dx = vec![T::from_f64(f64::NAN); xd.n * xd.c * xd.h * xd.w];
    gradops::conv2d_backprop_input_into(
        TensorRef::new(&dy, shape(layout, dyd), layout),
        FilterRef::new(&w, fshape),
        shape(layout, xd),
        &attrs,
        &mut dx,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let want = ref_conv_backprop_input(
        &dy64,
        dyd,
        &w64,
        k,
        xd,
        layout,
        strides,
        dil,
        [g.h.pad_before, g.w.pad_before],
    );
    let err = rel_err(&to_f64(&dx), &want);
    assert!(err <= tol::<T>(), "{:?} {layout} x {xd:?} k {k:?} s {strides:?} d {dil:?} {padding:?} groups {groups}: rel err {err:e}", T::DTYPE);
}

fn conv_all<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    for layout in LAYOUTS {
        for _ in 0..60 {
            conv_case::<T>(&mut rng, layout);
        }
    }
}

#[test]
fn conv2d_backprop_input_matches_reference_f64() {
    conv_all::<f64>(11);
}
#[test]
fn conv2d_backprop_input_matches_reference_f32() {
    conv_all::<f32>(12);
}
#[test]
fn conv2d_backprop_input_matches_reference_f16() {
    conv_all::<f16>(13);
}
#[test]
fn conv2d_backprop_input_matches_reference_bf16() {
    conv_all::<bf16>(15);
}

#[test]
fn conv2d_backprop_input_oihw_equals_hwio() {
    let mut rng = Rng::new(14);
    let xd = Dims {
        n: 2,
        c: 4,
        h: 7,
        w: 6,
    };
    let (kh, kw, ci, co) = (3, 2, 2, 6); // groups = 2
    let w_hwio = rng.vec(kh * kw * ci * co);
    let mut w_oihw = vec![0.0; w_hwio.len()];
    for y in 0..kh {
        for x in 0..kw {
            for i in 0..ci {
                for o in 0..co {
                    w_oihw[((o * ci + i) * kh + y) * kw + x] =
                        w_hwio[((y * kw + x) * ci + i) * co + o];
                }
            }
        }
    }
    let attrs = Conv2dAttrs::default()
        .padding(Padding::Same)
        .strides([2, 1]);
    let dyd = Dims {
        n: 2,
        c: co,
        h: 4,
        w: 6,
    };
    let dy = rng.vec(dyd.n * dyd.c * dyd.h * dyd.w);
    let v = TensorRef::new(&dy[..], shape(Layout::Nchw, dyd), Layout::Nchw);
    let a = gradops::conv2d_backprop_input(
        v,
        FilterRef::new(&w_hwio, [kh, kw, ci, co]),
        shape(Layout::Nchw, xd),
        &attrs,
    )
    .unwrap();
    let oihw = attrs.filter_layout(gradops::FilterLayout::Oihw);
    let b = gradops::conv2d_backprop_input(
        v,
        FilterRef::new(&w_oihw, [co, ci, kh, kw]),
        shape(Layout::Nchw, xd),
        &oihw,
    )
    .unwrap();
    assert_eq!(a.data, b.data);
}

fn filter_case<T: Element>(rng: &mut Rng, layout: Layout, fl: gradops::FilterLayout) {
    let groups = *rng.pick(&[1, 1, 2, 3]);
    let (cig, cog) = (rng.range(1, 3), rng.range(1, 3));
    let xd = Dims {
        n: rng.range(1, 3),
        c: cig * groups,
        h: rng.range(1, 9),
        w: rng.range(1, 9),
    };
    let k = [rng.range(1, 3), rng.range(1, 3)];
    let strides = [rng.range(1, 3), rng.range(1, 3)];
    let dil = [rng.range(1, 2), rng.range(1, 2)];
    let padding = match rng.range(0, 2) {
        0 => Padding::Same,
        1 => Padding::Valid,
        _ => Padding::Explicit([
            [rng.range(0, 2), rng.range(0, 2)],
            [rng.range(0, 2), rng.range(0, 2)],
        ]),
    };
    let attrs = Conv2dAttrs::default()
        .strides(strides)
        .dilations(dil)
        .padding(padding)
        .filter_layout(fl);
    let hwio = [k[0], k[1], cig, cog * groups];
    let fshape = match fl {
        gradops::FilterLayout::Hwio => hwio,
        gradops::FilterLayout::Oihw => [cog * groups, cig, k[0], k[1]],
    };
    let Ok(g) = gradops::ops::conv2d::plan_conv2d(shape(layout, xd), fshape, layout, &attrs) else {
        return; // window larger than the padded input: covered by the error tests
    };
    let dyd = g.output_dims();
    let (x, x64) = round_to::<T>(&rng.vec(xd.n * xd.c * xd.h * xd.w));
    let (dy, dy64) = round_to::<T>(&rng.vec(dyd.n * dyd.c * dyd.h * dyd.w));
    let mut dw = vec![T::from_f64(f64::NAN); fshape.iter().product()];
    gradops::conv2d_backprop_filter_into(
        TensorRef::new(&x, shape(layout, xd), layout),
        TensorRef::new(&dy, shape(layout, dyd), layout),
        fshape,
        &attrs,
        &mut dw,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut want = ref_conv_backprop_filter(
        &x64,
        xd,
        &dy64,
        dyd,
        k,
        groups,
        layout,
        strides,
        dil,
        [g.h.pad_before, g.w.pad_before],
    );
    if fl == gradops::FilterLayout::Oihw {
        want = hwio_to_oihw(&want, hwio);
    }
    let err = rel_err(&to_f64(&dw), &want);
    assert!(err <= tol::<T>(), "{:?} {layout} {fl:?} x {xd:?} k {k:?} s {strides:?} d {dil:?} {padding:?} groups {groups}: rel err {err:e}", T::DTYPE);
}

fn filter_all<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    for layout in LAYOUTS {
        for fl in [gradops::FilterLayout::Hwio, gradops::FilterLayout::Oihw] {
            for _ in 0..40 {
                filter_case::<T>(&mut rng, layout, fl);
            }
        }
    }
}

#[test]
fn conv2d_backprop_filter_matches_reference_f64() {
    filter_all::<f64>(21);
}
#[test]
fn conv2d_backprop_filter_matches_reference_f32() {
    filter_all::<f32>(22);
}
#[test]
fn conv2d_backprop_filter_matches_reference_f16() {
    filter_all::<f16>(23);
}
#[test]
fn conv2d_backprop_filter_matches_reference_bf16() {
    filter_all::<bf16>(24);
}

/// Larger f64 cases in both layouts: one with groups, stride and dilation (im2col GEMMs,
/// several reduction splits), and a 3x3 stride-1 one with 20 -> 18 channels per group (the
/// Winograd path).
#[test]
fn conv2d_backprop_filter_wide_matches_reference() {
    let mut rng = Rng::new(24);
    for layout in LAYOUTS {
        for (k, strides, dil, c, co, groups) in [
            ([3, 2], [2, 1], [1, 2], 40, 24, 2),
            ([3, 3], [1, 1], [1, 1], 40, 36, 2),
        ] {
            let xd = Dims {
                n: 3,
                c,
                h: 30,
                w: 21,
            };
            let attrs = Conv2dAttrs::default()
                .strides(strides)
                .dilations(dil)
                .padding(Padding::Same);
            let fshape = [k[0], k[1], xd.c / groups, co];
            let g = gradops::ops::conv2d::plan_conv2d(shape(layout, xd), fshape, layout, &attrs)
                .unwrap();
            let dyd = g.output_dims();
            let x = rng.vec(xd.n * xd.c * xd.h * xd.w);
            let dy = rng.vec(dyd.n * dyd.c * dyd.h * dyd.w);
            let dw = gradops::conv2d_backprop_filter(
                TensorRef::new(&x, shape(layout, xd), layout),
                TensorRef::new(&dy, shape(layout, dyd), layout),
                fshape,
                &attrs,
            )
            .unwrap();
            let want = ref_conv_backprop_filter(
                &x,
                xd,
                &dy,
                dyd,
                k,
                groups,
                layout,
                strides,
                dil,
                [g.h.pad_before, g.w.pad_before],
            );
            let err = rel_err(&dw.data, &want);
            assert!(err <= 1e-12, "{layout} k {k:?}: rel err {err:e}");
        }
    }
}

/// The filter gradient's bits do not depend on the thread count (1, 2 or 3 rayon threads),
/// on the Winograd path (3x3 stride 1, both layouts) and the GEMM path (stride 2).
#[test]
fn conv2d_backprop_filter_bits_independent_of_threads() {
    let mut rng = Rng::new(25);
    let xd = Dims {
        n: 5,
        c: 32,
        h: 19,
        w: 22,
    };
    let x: Vec<f32> = rng
        .vec(xd.n * xd.c * xd.h * xd.w)
        .iter()
        .map(|&v| v as f32)
        .collect();
    for (layout, stride) in [
        (Layout::Nchw, 1),
        (Layout::Nhwc, 1),
        (Layout::Nchw, 2),
        (Layout::Nhwc, 2),
    ] {
        let attrs = Conv2dAttrs::default()
            .strides([stride, stride])
            .padding(Padding::Same);
        let fshape = [3, 3, 32, 24];
        let g =
            gradops::ops::conv2d::plan_conv2d(shape(layout, xd), fshape, layout, &attrs).unwrap();
        let dyd = g.output_dims();
        let dy: Vec<f32> = rng
            .vec(dyd.n * dyd.c * dyd.h * dyd.w)
            .iter()
            .map(|&v| v as f32)
            .collect();
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| {
                    gradops::conv2d_backprop_filter(
                        TensorRef::new(&x, shape(layout, xd), layout),
                        TensorRef::new(&dy, shape(layout, dyd), layout),
                        fshape,
                        &attrs,
                    )
                    .unwrap()
                    .data
                })
        };
        let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let one = bits(run(1));
        assert_eq!(
            one,
            bits(run(2)),
            "{layout} stride {stride}: 1 vs 2 threads"
        );
        assert_eq!(
            one,
            bits(run(3)),
            "{layout} stride {stride}: 1 vs 3 threads"
        );
    }
}

fn pool_case<T: Element>(rng: &mut Rng, layout: Layout, ties: bool) {
    let xd = Dims {
        n: rng.range(1, 2),
        c: rng.range(1, 3),
        h: rng.range(1, 9),
        w: rng.range(1, 9),
    };
    let k = [rng.range(1, 3), rng.range(1, 3)];
    let s = [rng.range(1, 3), rng.range(1, 3)];
    let padding = match rng.range(0, 2) {
        0 => Padding::Same,
        1 => Padding::Valid,
        _ => Padding::Explicit([
            [rng.range(0, k[0] - 1), rng.range(0, k[0] - 1)],
            [rng.range(0, k[1] - 1), rng.range(0, k[1] - 1)],
        ]),
    };
    let attrs = MaxPoolAttrs::new(k).strides(s).padding(padding);
    let Ok(g) = gradops::ops::max_pool::plan_max_pool("t", shape(layout, xd), layout, &attrs)
    else {
        return;
    };
    let yd = g.output_dims();
    let xs: Vec<f64> = if ties {
        (0..xd.n * xd.c * xd.h * xd.w)
            .map(|_| rng.range(0, 3) as f64)
            .collect()
    } else {
        rng.vec(xd.n * xd.c * xd.h * xd.w)
    };
    let (x, x64) = round_to::<T>(&xs);
    let (dy, dy64) = round_to::<T>(&rng.vec(yd.n * yd.c * yd.h * yd.w));
    let mut dx = vec![T::from_f64(f64::NAN); x.len()];
    let xv = TensorRef::new(&x[..], shape(layout, xd), layout);
    let dyv = TensorRef::new(&dy[..], shape(layout, yd), layout);
    gradops::max_pool_grad_into(dyv, xv, None, &attrs, &mut dx).unwrap_or_else(|e| panic!("{e}"));
    let want = ref_max_pool_grad(
        &dy64,
        yd,
        &x64,
        xd,
        layout,
        k,
        s,
        [g.h.pad_before, g.w.pad_before],
    );
    let err = rel_err(&to_f64(&dx), &want);
    assert!(
        err <= tol::<T>(),
        "{:?} {layout} x {xd:?} k {k:?} s {s:?} {padding:?}: rel err {err:e}",
        T::DTYPE
    );
    // The stored-argmax path gives the same result, bit for bit.
    let (_, arg) = gradops::max_pool(xv, &attrs, true).unwrap();
    let dx2 =
        gradops::max_pool_grad_with_argmax(dyv, &arg.unwrap(), shape(layout, xd), &attrs).unwrap();
    assert_eq!(to_f64(&dx2.data), to_f64(&dx));
}

fn pool_all<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    for layout in LAYOUTS {
        for i in 0..60 {
            pool_case::<T>(&mut rng, layout, i % 2 == 0);
        }
    }
}

#[test]
fn max_pool_grad_matches_reference_f64() {
    pool_all::<f64>(21);
}
#[test]
fn max_pool_grad_matches_reference_f32() {
    pool_all::<f32>(22);
}
#[test]
fn max_pool_grad_matches_reference_f16() {
    pool_all::<f16>(23);
}
#[test]
fn max_pool_grad_matches_reference_bf16() {
    pool_all::<bf16>(24);
}

#[test]
fn results_are_bitwise_deterministic() {
    let mut rng = Rng::new(31);
    let xd = Dims {
        n: 4,
        c: 8,
        h: 17,
        w: 23,
    };
    let dyd = Dims { h: 40, w: 9, ..xd };
    let dy: Vec<f32> = rng
        .vec(dyd.n * dyd.c * dyd.h * dyd.w)
        .iter()
        .map(|&v| v as f32)
        .collect();
    for layout in LAYOUTS {
        let run = || {
            gradops::resize_grad(
                TensorRef::new(&dy, shape(layout, dyd), layout),
                shape(layout, xd),
                &ResizeAttrs::new(ResizeMode::Linear),
            )
            .unwrap()
            .data
        };
        let a = run();
        for _ in 0..3 {
            assert!(a.iter().zip(run()).all(|(x, y)| x.to_bits() == y.to_bits()));
        }
    }
}

/// Sizes large enough for the CPU fast paths (affine tables for integer ratios; register
/// permutes where 8 outputs read at most 8 sources, dense bands for the other ratios), against
/// the reference, with NaN/Inf rows that must take the exact path.
#[test]
fn resize_grad_fast_paths_match_reference() {
    resize_grad_fast_paths::<f32>(41);
}

/// The same in bf16: the fast paths' block conversions (bf16 <-> f32) and the NaN/Inf rows.
#[test]
fn resize_grad_fast_paths_match_reference_bf16() {
    resize_grad_fast_paths::<bf16>(42);
}

fn resize_grad_fast_paths<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    let tol = tol::<T>();
    let sizes = [
        (40, 80),
        (80, 40),
        (33, 99),
        (64, 23),
        (23, 64),
        (50, 50),
        (31, 17),
        (17, 70),
    ];
    for layout in LAYOUTS {
        for &(xin, out) in &sizes {
            for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
                for ctm in CTMS {
                    let xd = Dims {
                        n: 1,
                        c: 2,
                        h: xin / 2 + 3,
                        w: xin,
                    };
                    let dyd = Dims {
                        h: out / 2 + 5,
                        w: out,
                        ..xd
                    };
                    let mut v = rng.vec(dyd.n * dyd.c * dyd.h * dyd.w);
                    let attrs = ResizeAttrs::new(mode)
                        .coordinate_transformation_mode(ctm)
                        .nearest_mode(Nm::Floor);
                    let rc = ResizeCase {
                        mode,
                        ctm,
                        nm: Nm::Floor,
                        scales: None,
                    };
                    let run = |v: &[f64]| {
                        let (dy, dy64) = round_to::<T>(v);
                        let mut dx = vec![T::from_f64(f64::NAN); xd.n * xd.c * xd.h * xd.w];
                        gradops::resize_grad_into(
                            TensorRef::new(&dy, shape(layout, dyd), layout),
                            shape(layout, xd),
                            &attrs,
                            &mut dx,
                        )
                        .unwrap();
                        (
                            to_f64(&dx),
                            ref_resize_grad(&dy64, dyd, xd, layout, &rc, true),
                        )
                    };
                    let (got, want) = run(&v);
                    let err = rel_err(&got, &want);
                    assert!(
                        err <= tol,
                        "{:?} {layout} {mode:?} {ctm:?} {xin}->{out}: rel err {err:e}",
                        T::DTYPE
                    );
                    // Poison one element per plane: exactly the dx cells it maps to go NaN/inf.
                    for k in 0..2 {
                        let at_ = at(layout, dyd, 0, k, dyd.h / 2, dyd.w / 3);
                        v[at_] = if k == 0 { f64::NAN } else { f64::INFINITY };
                    }
                    let (got, want) = run(&v);
                    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            g.is_nan(),
                            w.is_nan(),
                            "{layout} {mode:?} {ctm:?} {xin}->{out} [{i}]: got {g}, want {w}"
                        );
                        if w.is_finite() {
                            assert!(
                                (g - w).abs() <= tol * (1.0 + w.abs()),
                                "[{i}] got {g}, want {w}"
                            );
                        } else if !w.is_nan() {
                            assert_eq!(g, w, "[{i}]");
                        }
                    }
                }
            }
        }
    }
}

/// Wide planes so the vectorised interior of the CPU max-pool path runs, with ties and NaNs;
/// 3 channels, and 37 (NHWC: one register block of 32 channels and a remainder).
#[test]
fn max_pool_grad_wide_planes_match_reference() {
    max_pool_grad_wide_planes::<f32>(51);
}

#[test]
fn max_pool_grad_wide_planes_match_reference_bf16() {
    max_pool_grad_wide_planes::<bf16>(52);
}

#[test]
fn max_pool_grad_wide_planes_match_reference_f64() {
    max_pool_grad_wide_planes::<f64>(53);
}

fn max_pool_grad_wide_planes<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    // f32 keeps its tighter bound (each dx is a short f32 sum, rounded once).
    let tol = if T::DTYPE == gradops::DType::F32 {
        1e-6
    } else {
        tol::<T>()
    };
    for (layout, c) in LAYOUTS.iter().flat_map(|&l| [(l, 3), (l, 37)]) {
        for (w, k, s) in [
            (37usize, 3usize, 2usize),
            (40, 3, 2),
            (33, 2, 1),
            (29, 3, 3),
            (50, 4, 2),
            // NCHW rows of more than one register block of windows (32), the last block
            // overlapping the one before.
            (75, 3, 2),
            (101, 3, 1),
            (131, 2, 2),
        ] {
            for padding in [
                Padding::Same,
                Padding::Valid,
                Padding::Explicit([[1, 0], [k - 1, 1]]),
            ] {
                let xd = Dims { n: 1, c, h: 9, w };
                let attrs = MaxPoolAttrs::new([k, k]).strides([s, s]).padding(padding);
                let g =
                    gradops::ops::max_pool::plan_max_pool("t", shape(layout, xd), layout, &attrs)
                        .unwrap();
                let yd = g.output_dims();
                let mut xs: Vec<f64> = (0..xd.n * xd.c * xd.h * xd.w)
                    .map(|_| rng.range(0, 4) as f64)
                    .collect();
                for _ in 0..10 {
                    let i = rng.range(0, xs.len() - 1);
                    xs[i] = f64::NAN;
                }
                let (x, x64) = round_to::<T>(&xs);
                let (dy, dy64) = round_to::<T>(&rng.vec(yd.n * yd.c * yd.h * yd.w));
                let mut dx = vec![T::from_f64(f64::NAN); x.len()];
                gradops::max_pool_grad_into(
                    TensorRef::new(&dy, shape(layout, yd), layout),
                    TensorRef::new(&x, shape(layout, xd), layout),
                    None,
                    &attrs,
                    &mut dx,
                )
                .unwrap();
                let want = ref_max_pool_grad(
                    &dy64,
                    yd,
                    &x64,
                    xd,
                    layout,
                    [k, k],
                    [s, s],
                    [g.h.pad_before, g.w.pad_before],
                );
                let err = rel_err(&to_f64(&dx), &want);
                assert!(
                    err <= tol,
                    "{:?} {layout} c {c} w {w} k {k} s {s} {padding:?}: rel err {err:e}",
                    T::DTYPE
                );
                // The forward's argmax routes the same, bit for bit.
                let xv = TensorRef::new(&x[..], shape(layout, xd), layout);
                let (_, arg) = gradops::max_pool(xv, &attrs, true).unwrap();
                let dx2 = gradops::max_pool_grad_with_argmax(
                    TensorRef::new(&dy, shape(layout, yd), layout),
                    &arg.unwrap(),
                    shape(layout, xd),
                    &attrs,
                )
                .unwrap();
                assert_eq!(to_f64(&dx2.data), to_f64(&dx), "{layout} w {w} k {k} s {s}");
            }
        }
    }
}

/// The NCHW 3x3 stride-1 Winograd paths (F(4x4, 3x3) on planes from 8x8, both the input
/// gradient and the forward) on W4-sized channels with odd planes (clipped border tiles): f32
/// within 1e-5 relative L2 of the f64 result of the same op (f32 runs F(2x2); f64 F(4x4)), and
/// the same bits with 1, 2 and 3 threads in f32 and f64 (batch 1 splits channels across
/// threads, batch 3 images).
#[test]
fn winograd_conv_accuracy_and_thread_independence() {
    let mut rng = Rng::new(77);
    for (n, h, w) in [(1usize, 57usize, 43usize), (3, 20, 16)] {
        let (ci, co) = (64usize, 48usize);
        let xd = Dims { n, c: ci, h, w };
        let x64 = rng.vec(n * ci * h * w);
        let w64 = rng.vec(9 * ci * co);
        let dy64 = rng.vec(n * co * h * w);
        let attrs = Conv2dAttrs::default().padding(Padding::Same);
        let fshape = [3, 3, ci, co];
        let dyd = Dims { c: co, ..xd };
        let f32s = |v: &[f64]| v.iter().map(|&a| a as f32).collect::<Vec<f32>>();
        let (x32, w32, dy32) = (f32s(&x64), f32s(&w64), f32s(&dy64));
        let back = |dy: &[f32]| {
            gradops::conv2d_backprop_input(
                TensorRef::new(dy, shape(Layout::Nchw, dyd), Layout::Nchw),
                FilterRef::new(&w32, fshape),
                shape(Layout::Nchw, xd),
                &attrs,
            )
            .unwrap()
            .data
        };
        let fwd = |x: &[f32]| {
            gradops::conv2d(
                TensorRef::new(x, shape(Layout::Nchw, xd), Layout::Nchw),
                FilterRef::new(&w32, fshape),
                &attrs,
            )
            .unwrap()
            .data
        };
        // f64 on the f32-rounded inputs: the reference the f32 result is held to.
        let (x64r, w64r, dy64r): (Vec<f64>, Vec<f64>, Vec<f64>) = (
            x32.iter().map(|&v| v as f64).collect(),
            w32.iter().map(|&v| v as f64).collect(),
            dy32.iter().map(|&v| v as f64).collect(),
        );
        let back64 = gradops::conv2d_backprop_input(
            TensorRef::new(&dy64r, shape(Layout::Nchw, dyd), Layout::Nchw),
            FilterRef::new(&w64r, fshape),
            shape(Layout::Nchw, xd),
            &attrs,
        )
        .unwrap()
        .data;
        let fwd64 = gradops::conv2d(
            TensorRef::new(&x64r, shape(Layout::Nchw, xd), Layout::Nchw),
            FilterRef::new(&w64r, fshape),
            &attrs,
        )
        .unwrap()
        .data;
        let rel = |a: &[f32], b: &[f64]| {
            let num: f64 = a.iter().zip(b).map(|(&p, &q)| (p as f64 - q).powi(2)).sum();
            let den: f64 = b.iter().map(|q| q * q).sum();
            (num / den).sqrt()
        };
        let pool = |t: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(t)
                .build()
                .unwrap()
        };
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (b1, f1) = pool(1).install(|| (back(&dy32), fwd(&x32)));
        let (eb, ef) = (rel(&b1, &back64), rel(&f1, &fwd64));
        assert!(
            eb <= 1e-5 && ef <= 1e-5,
            "n {n}: rel L2 back {eb:e} fwd {ef:e}"
        );
        let back_f64 = || {
            gradops::conv2d_backprop_input(
                TensorRef::new(&dy64r, shape(Layout::Nchw, dyd), Layout::Nchw),
                FilterRef::new(&w64r, fshape),
                shape(Layout::Nchw, xd),
                &attrs,
            )
            .unwrap()
            .data
        };
        let fwd_f64 = || {
            gradops::conv2d(
                TensorRef::new(&x64r, shape(Layout::Nchw, xd), Layout::Nchw),
                FilterRef::new(&w64r, fshape),
                &attrs,
            )
            .unwrap()
            .data
        };
        let bits64 = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let (b1d, f1d) = pool(1).install(|| (back_f64(), fwd_f64()));
        for t in [2, 3] {
            let (bt, ft) = pool(t).install(|| (back(&dy32), fwd(&x32)));
            assert_eq!(bits(&b1), bits(&bt), "backprop_input, {t} threads, n {n}");
            assert_eq!(bits(&f1), bits(&ft), "conv2d, {t} threads, n {n}");
            let (bt, ft) = pool(t).install(|| (back_f64(), fwd_f64()));
            assert_eq!(bits64(&b1d), bits64(&bt), "f64 backprop_input, {t} threads");
            assert_eq!(bits64(&f1d), bits64(&ft), "f64 conv2d, {t} threads");
        }
    }
}

/// The F(4x4, 3x3) paths in f16 and bf16 (accumulated in f32, rounded once): within 1e-3
/// and 1e-2 relative L2 of the f64 result on the same rounded inputs, both ops.
#[test]
fn winograd_conv_half_types() {
    fn check<T: Element>(tol: f64, rng: &mut Rng) {
        let (n, ci, co, h, w) = (2usize, 32usize, 24usize, 19usize, 13usize);
        let xd = Dims { n, c: ci, h, w };
        let dyd = Dims { c: co, ..xd };
        let round = |v: Vec<f64>| v.into_iter().map(T::from_f64).collect::<Vec<T>>();
        let (x, wt, dy) = (
            round(rng.vec(n * ci * h * w)),
            round(rng.vec(9 * ci * co)),
            round(rng.vec(n * co * h * w)),
        );
        let wide = |v: &[T]| v.iter().map(|a| a.to_f64()).collect::<Vec<f64>>();
        let (x64, w64, dy64) = (wide(&x), wide(&wt), wide(&dy));
        let attrs = Conv2dAttrs::default().padding(Padding::Same);
        let fshape = [3, 3, ci, co];
        let (xs, dys) = (shape(Layout::Nchw, xd), shape(Layout::Nchw, dyd));
        let rel = |a: &[T], b: &[f64]| {
            let num: f64 = a.iter().zip(b).map(|(p, q)| (p.to_f64() - q).powi(2)).sum();
            let den: f64 = b.iter().map(|q| q * q).sum();
            (num / den).sqrt()
        };
        let back = gradops::conv2d_backprop_input(
            TensorRef::new(&dy, dys, Layout::Nchw),
            FilterRef::new(&wt, fshape),
            xs,
            &attrs,
        )
        .unwrap();
        let back64 = gradops::conv2d_backprop_input(
            TensorRef::new(&dy64, dys, Layout::Nchw),
            FilterRef::new(&w64, fshape),
            xs,
            &attrs,
        )
        .unwrap();
        let fwd = gradops::conv2d(
            TensorRef::new(&x, xs, Layout::Nchw),
            FilterRef::new(&wt, fshape),
            &attrs,
        )
        .unwrap();
        let fwd64 = gradops::conv2d(
            TensorRef::new(&x64, xs, Layout::Nchw),
            FilterRef::new(&w64, fshape),
            &attrs,
        )
        .unwrap();
        let (eb, ef) = (rel(&back.data, &back64.data), rel(&fwd.data, &fwd64.data));
        assert!(
            eb <= tol && ef <= tol,
            "{:?}: back {eb:e} fwd {ef:e}",
            T::DTYPE
        );
    }
    let mut rng = Rng::new(5);
    check::<f16>(1e-3, &mut rng);
    check::<bf16>(1e-2, &mut rng);
}

/// Winograd in f32 on data whose sums cancel: 256 output channels of a periodic pattern with
/// mean ~0 against a near-constant filter. The direct f32 sum errs ~1e-6 here; F(4x4, 3x3)
/// erred 2.9e-5 (over SPEC's 1e-5), which is why f32 keeps F(2x2, 3x3) (~4e-6). Both ops,
/// against f64 on the same rounded inputs.
#[test]
fn winograd_f32_cancellation() {
    let (n, ci, co, h, w) = (1usize, 64usize, 256usize, 28usize, 28usize);
    let xd = Dims { n, c: ci, h, w };
    let dyd = Dims { c: co, ..xd };
    let attrs = Conv2dAttrs::default().padding(Padding::Same);
    let fshape = [3, 3, ci, co];
    let pattern = |i: usize| ((i * 7919) % 101) as f32 / 50.0 - 1.0;
    let dy: Vec<f32> = (0..n * co * h * w).map(pattern).collect();
    let x: Vec<f32> = (0..n * ci * h * w).map(|i| pattern(i + 13)).collect();
    let filt: Vec<f32> = (0..9 * ci * co)
        .map(|i| 0.1 + 1e-5 * ((i * 31) % 17) as f32)
        .collect();
    let wide = |v: &[f32]| v.iter().map(|&a| f64::from(a)).collect::<Vec<f64>>();
    let (dy64, x64, f64s) = (wide(&dy), wide(&x), wide(&filt));
    let rel = |a: &[f32], b: &[f64]| {
        let num: f64 = a
            .iter()
            .zip(b)
            .map(|(&p, &q)| (f64::from(p) - q).powi(2))
            .sum();
        let den: f64 = b.iter().map(|q| q * q).sum();
        (num / den).sqrt()
    };
    let nchw = |d: Dims| shape(Layout::Nchw, d);
    let back32 = gradops::conv2d_backprop_input(
        TensorRef::new(&dy, nchw(dyd), Layout::Nchw),
        FilterRef::new(&filt, fshape),
        nchw(xd),
        &attrs,
    )
    .unwrap()
    .data;
    let back64 = gradops::conv2d_backprop_input(
        TensorRef::new(&dy64, nchw(dyd), Layout::Nchw),
        FilterRef::new(&f64s, fshape),
        nchw(xd),
        &attrs,
    )
    .unwrap()
    .data;
    let fwd32 = gradops::conv2d(
        TensorRef::new(&x, nchw(xd), Layout::Nchw),
        FilterRef::new(&filt, fshape),
        &attrs,
    )
    .unwrap()
    .data;
    let fwd64 = gradops::conv2d(
        TensorRef::new(&x64, nchw(xd), Layout::Nchw),
        FilterRef::new(&f64s, fshape),
        &attrs,
    )
    .unwrap()
    .data;
    let (eb, ef) = (rel(&back32, &back64), rel(&fwd32, &fwd64));
    assert!(eb <= 1e-5 && ef <= 1e-5, "rel L2 back {eb:e} fwd {ef:e}");
}

//! Adjoint identities `<forward(x), dy> == <x, backward(dy)>` for every linear op, on random
//! shapes and data: resize (every mode, coordinate transform, nearest mode, with and
//! without scales) and conv2d against both of its gradients, input and filter (groups,
//! dilations, strides, every padding, both filter layouts), both layouts; in f64 to 1e-10,
//! and (resize, conv2d input) in bf16 at its tolerance.

mod common;
use common::*;
use gradops::geometry::{CoordinateTransform as Ct, NearestMode as Nm, ResizeMode};
use gradops::{
    bf16, Conv2dAttrs, DType, Dims, Element, FilterRef, Layout, Padding, ResizeAttrs, TensorRef,
};

/// `<y, dy>` against `<x, dx>` (y = A x, dx = A^T dy), the products taken in f64 over the
/// stored values. f64: equal to 1e-10 relative. Narrower types: the outputs carry one
/// rounding each (relative `u` per element), so by Cauchy-Schwarz the products differ by at
/// most `u (|y| |dy| + |x| |dx|)`; checked with the dtype's tolerance (bf16 1e-2 > u = 2^-8).
fn close<T: Element>(y: &[T], dy: &[T], x: &[T], dx: &[T], what: &str) {
    let (y, dy, x, dx) = (to_f64(y), to_f64(dy), to_f64(x), to_f64(dx));
    let (a, b) = (dot(&y, &dy), dot(&x, &dx));
    let bound = if T::DTYPE == DType::F64 {
        1e-10 * a.abs().max(b.abs()).max(1.0)
    } else {
        let norm = |v: &[f64]| dot(v, v).sqrt();
        tol::<T>() * (norm(&y) * norm(&dy) + norm(&x) * norm(&dx))
    };
    assert!(
        (a - b).abs() <= bound,
        "{:?} {what}: <Ax, y> = {a} but <x, A^T y> = {b} (bound {bound:e})",
        T::DTYPE
    );
}

#[test]
fn resize_is_adjoint_of_resize_grad() {
    resize_adjoint::<f64>(7);
}

#[test]
fn resize_is_adjoint_of_resize_grad_bf16() {
    resize_adjoint::<bf16>(17);
}

fn resize_adjoint<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut checked = 0;
    for layout in [Layout::Nchw, Layout::Nhwc] {
        for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
            for ctm in [
                Ct::HalfPixel,
                Ct::PytorchHalfPixel,
                Ct::AlignCorners,
                Ct::Asymmetric,
                Ct::TfHalfPixelForNn,
            ] {
                for nm in [
                    Nm::RoundPreferFloor,
                    Nm::RoundPreferCeil,
                    Nm::Floor,
                    Nm::Ceil,
                ] {
                    for _ in 0..4 {
                        let xd = Dims {
                            n: rng.range(1, 2),
                            c: rng.range(1, 3),
                            h: rng.range(1, 10),
                            w: rng.range(1, 10),
                        };
                        let (out, scales) = if ctm != Ct::AlignCorners && rng.coin() {
                            let s = [
                                *rng.pick(&[0.5, 1.5, 2.0, 3.0]),
                                *rng.pick(&[0.75, 1.0, 2.5]),
                            ];
                            let f = |l: usize, s: f64| (l as f32 * s as f32).floor() as usize;
                            ([f(xd.h, s[0]), f(xd.w, s[1])], Some(s))
                        } else {
                            ([rng.range(1, 14), rng.range(1, 14)], None)
                        };
                        let attrs = ResizeAttrs::new(mode)
                            .coordinate_transformation_mode(ctm)
                            .nearest_mode(nm)
                            .scales(scales);
                        let yd = Dims {
                            h: out[0],
                            w: out[1],
                            ..xd
                        };
                        let (x, _) = round_to::<T>(&rng.vec(xd.n * xd.c * xd.h * xd.w));
                        let (dy, _) = round_to::<T>(&rng.vec(yd.n * yd.c * yd.h * yd.w));
                        let y = gradops::resize(
                            TensorRef::new(&x, shape(layout, xd), layout),
                            out,
                            &attrs,
                        )
                        .unwrap();
                        let dx = gradops::resize_grad(
                            TensorRef::new(&dy, shape(layout, yd), layout),
                            shape(layout, xd),
                            &attrs,
                        )
                        .unwrap();
                        close(
                            &y.data,
                            &dy,
                            &x,
                            &dx.data,
                            &format!("{layout} {mode:?} {ctm:?} {nm:?} {xd:?}->{out:?}"),
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    println!("resize adjoint {:?}: {checked} random cases", T::DTYPE);
}

#[test]
fn conv2d_is_adjoint_of_conv2d_backprop_input() {
    conv2d_adjoint::<f64>(8);
}

#[test]
fn conv2d_is_adjoint_of_conv2d_backprop_input_bf16() {
    conv2d_adjoint::<bf16>(18);
}

fn conv2d_adjoint<T: Element>(seed: u64) {
    let mut rng = Rng::new(seed);
    let mut checked = 0;
    while checked < 150 {
        let layout = if rng.coin() {
            Layout::Nchw
        } else {
            Layout::Nhwc
        };
        let groups = *rng.pick(&[1, 2, 3]);
        let (cig, cog) = (rng.range(1, 3), rng.range(1, 4));
        let xd = Dims {
            n: rng.range(1, 3),
            c: cig * groups,
            h: rng.range(1, 11),
            w: rng.range(1, 11),
        };
        let k = [rng.range(1, 4), rng.range(1, 4)];
        let padding = match rng.range(0, 2) {
            0 => Padding::Same,
            1 => Padding::Valid,
            _ => Padding::Explicit([
                [rng.range(0, 3), rng.range(0, 3)],
                [rng.range(0, 3), rng.range(0, 3)],
            ]),
        };
        let attrs = Conv2dAttrs::default()
            .strides([rng.range(1, 3), rng.range(1, 3)])
            .dilations([rng.range(1, 3), rng.range(1, 3)])
            .padding(padding);
        let fshape = [k[0], k[1], cig, cog * groups];
        let Ok(g) = gradops::ops::conv2d::plan_conv2d(shape(layout, xd), fshape, layout, &attrs)
        else {
            continue;
        };
        let yd = g.output_dims();
        let (x, _) = round_to::<T>(&rng.vec(xd.n * xd.c * xd.h * xd.w));
        let (w, _) = round_to::<T>(&rng.vec(fshape.iter().product()));
        let (dy, _) = round_to::<T>(&rng.vec(yd.n * yd.c * yd.h * yd.w));
        let f = FilterRef::new(&w, fshape);
        let y = gradops::conv2d(TensorRef::new(&x, shape(layout, xd), layout), f, &attrs).unwrap();
        let dx = gradops::conv2d_backprop_input(
            TensorRef::new(&dy, shape(layout, yd), layout),
            f,
            shape(layout, xd),
            &attrs,
        )
        .unwrap();
        close(
            &y.data,
            &dy,
            &x,
            &dx.data,
            &format!("{layout} {xd:?} {fshape:?} {attrs:?}"),
        );
        checked += 1;
    }
    println!("conv2d adjoint {:?}: {checked} random cases", T::DTYPE);
}

/// `<conv2d(x, w), dy> == <w, conv2d_backprop_filter(x, dy)>` (both filter layouts).
#[test]
fn conv2d_is_adjoint_of_conv2d_backprop_filter() {
    let mut rng = Rng::new(9);
    let mut checked = 0;
    while checked < 150 {
        let layout = if rng.coin() {
            Layout::Nchw
        } else {
            Layout::Nhwc
        };
        let fl = if rng.coin() {
            gradops::FilterLayout::Hwio
        } else {
            gradops::FilterLayout::Oihw
        };
        let groups = *rng.pick(&[1, 2, 3]);
        let (cig, cog) = (rng.range(1, 3), rng.range(1, 4));
        let xd = Dims {
            n: rng.range(1, 3),
            c: cig * groups,
            h: rng.range(1, 11),
            w: rng.range(1, 11),
        };
        let k = [rng.range(1, 4), rng.range(1, 4)];
        let padding = match rng.range(0, 2) {
            0 => Padding::Same,
            1 => Padding::Valid,
            _ => Padding::Explicit([
                [rng.range(0, 3), rng.range(0, 3)],
                [rng.range(0, 3), rng.range(0, 3)],
            ]),
        };
        let attrs = Conv2dAttrs::default()
            .strides([rng.range(1, 3), rng.range(1, 3)])
            .dilations([rng.range(1, 3), rng.range(1, 3)])
            .padding(padding)
            .filter_layout(fl);
        let fshape = match fl {
            gradops::FilterLayout::Hwio => [k[0], k[1], cig, cog * groups],
            gradops::FilterLayout::Oihw => [cog * groups, cig, k[0], k[1]],
        };
        let Ok(g) = gradops::ops::conv2d::plan_conv2d(shape(layout, xd), fshape, layout, &attrs)
        else {
            continue;
        };
        let yd = g.output_dims();
        let x = rng.vec(xd.n * xd.c * xd.h * xd.w);
        let w = rng.vec(fshape.iter().product());
        let dy = rng.vec(yd.n * yd.c * yd.h * yd.w);
        let xt = TensorRef::new(&x[..], shape(layout, xd), layout);
        let y = gradops::conv2d(xt, FilterRef::new(&w, fshape), &attrs).unwrap();
        let dw = gradops::conv2d_backprop_filter(
            xt,
            TensorRef::new(&dy, shape(layout, yd), layout),
            fshape,
            &attrs,
        )
        .unwrap();
        close(
            &y.data,
            &dy,
            &w,
            &dw.data,
            &format!("filter {layout} {fl:?} {xd:?} {fshape:?} {attrs:?}"),
        );
        checked += 1;
    }
    println!("conv2d filter adjoint: {checked} random cases");
}

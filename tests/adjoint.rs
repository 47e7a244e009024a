//! Adjoint identities `<forward(x), dy> == <x, backward(dy)>` for every linear op, on random
//! shapes and data in f64: resize (every mode, coordinate transform, nearest mode, with and
//! without scales) and conv2d against both of its gradients, input and filter (groups, dilations,
//! strides, every padding, both filter layouts), both layouts.

mod common;
use common::*;
use gradops::geometry::{CoordinateTransform as Ct, NearestMode as Nm, ResizeMode};
use gradops::{Conv2dAttrs, Dims, FilterRef, Layout, Padding, ResizeAttrs, TensorRef};

fn close(a: f64, b: f64, what: &str) {
    let scale = a.abs().max(b.abs()).max(1.0);
    assert!(
        (a - b).abs() <= 1e-10 * scale,
        "{what}: <Ax, y> = {a} but <x, A^T y> = {b}"
    );
}

#[test]
fn resize_is_adjoint_of_resize_grad() {
    let mut rng = Rng::new(7);
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
                        let x = rng.vec(xd.n * xd.c * xd.h * xd.w);
                        let dy = rng.vec(yd.n * yd.c * yd.h * yd.w);
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
                            dot(&y.data, &dy),
                            dot(&x, &dx.data),
                            &format!("{layout} {mode:?} {ctm:?} {nm:?} {xd:?}->{out:?}"),
                        );
                        checked += 1;
                    }
                }
            }
        }
    }
    println!("resize adjoint: {checked} random cases");
}

#[test]
fn conv2d_is_adjoint_of_conv2d_backprop_input() {
    let mut rng = Rng::new(8);
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
        let x = rng.vec(xd.n * xd.c * xd.h * xd.w);
        let w = rng.vec(fshape.iter().product());
        let dy = rng.vec(yd.n * yd.c * yd.h * yd.w);
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
            dot(&y.data, &dy),
            dot(&x, &dx.data),
            &format!("{layout} {xd:?} {fshape:?} {attrs:?}"),
        );
        checked += 1;
    }
    println!("conv2d adjoint: {checked} random cases");
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
            dot(&y.data, &dy),
            dot(&w, &dw.data),
            &format!("filter {layout} {fl:?} {xd:?} {fshape:?} {attrs:?}"),
        );
        checked += 1;
    }
    println!("conv2d filter adjoint: {checked} random cases");
}

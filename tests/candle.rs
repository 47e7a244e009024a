//! `gradops::candle` (feature `candle`): candle's autograd through each function, on candle's
//! CPU device, against
//! - gradops' own host ops, bitwise (forward and gradient are the same computation, so the
//!   candle wrapper must neither reorder nor re-round anything);
//! - central finite differences of `L(x) = <f(x), r>` in f64 for every input element (and
//!   every filter element for conv2d);
//! - the cases where candle 0.11's own backward refuses or is wrong (max pool
//!   kernel != stride and 0.25 at a 2x2 max, bilinear with no backward, nearest with a
//!   non-integer factor, conv2d on a 5x6 input with stride 2);
//! - non-contiguous inputs (a transpose), offset views (a batch slice) and a broadcast
//!   upstream gradient (`y.sum_all()`), and typed errors.
//!
//! `cargo test --release --features candle --test candle`

mod common;
use common::{Rng, ALL_CTMS, ALL_NEAREST_MODES};

use candle_core::{DType, Device, Tensor, Var, WithDType};
use gradops::{
    bf16, f16, Conv2dAttrs, CoordinateTransform as Ct, Element, FilterLayout, FilterRef, Layout,
    MaxPoolAttrs, NearestMode as Nm, Padding, ResizeAttrs, ResizeMode, TensorRef,
};

type R<T> = candle_core::Result<T>;

fn cpu() -> Device {
    Device::Cpu
}

/// A candle tensor of `shape` from f64 values, in `dt`.
fn tensor(v: &[f64], shape: [usize; 4], dt: DType) -> R<Tensor> {
    Tensor::from_vec(v.to_vec(), shape.to_vec(), &cpu())?.to_dtype(dt)
}

fn values<T: WithDType>(t: &Tensor) -> R<Vec<T>> {
    t.flatten_all()?.to_vec1::<T>()
}

fn dims4(t: &Tensor) -> [usize; 4] {
    t.dims4().unwrap().into()
}

/// `dx` of `L = sum(f(x) * dy)` by candle's autograd, and `f(x)`.
fn grad1(x: &Tensor, dy: &Tensor, f: impl Fn(&Tensor) -> R<Tensor>) -> R<(Tensor, Tensor)> {
    let x = Var::from_tensor(x)?;
    let y = f(&x)?;
    let grads = y.mul(dy)?.sum_all()?.backward()?;
    Ok((y, grads.get(&x).expect("x has a gradient").clone()))
}

/// `(dx, dw)` of `L = sum(f(x, w) * dy)` by candle's autograd, and `f(x, w)`.
fn grad2(
    x: &Tensor,
    w: &Tensor,
    dy: &Tensor,
    f: impl Fn(&Tensor, &Tensor) -> R<Tensor>,
) -> R<(Tensor, Tensor, Tensor)> {
    let x = Var::from_tensor(x)?;
    let w = Var::from_tensor(w)?;
    let y = f(&x, &w)?;
    let grads = y.mul(dy)?.sum_all()?.backward()?;
    Ok((
        y,
        grads.get(&x).expect("x has a gradient").clone(),
        grads.get(&w).expect("w has a gradient").clone(),
    ))
}

// ---------------------------------------------------------------- the cases

#[test]
fn max_pool_2x2_stride_2_routes_the_whole_gradient_to_the_max() -> R<()> {
    // candle 0.11 returns 0.25 at each window's max here.
    let x = Tensor::new(
        &[[[
            [1f32, 2., 5., 0.],
            [3., 4., 1., 1.],
            [0., 9., 2., 2.],
            [1., 1., 2., 7.],
        ]]],
        &cpu(),
    )?;
    let attrs = MaxPoolAttrs::new([2, 2]).strides([2, 2]);
    let (y, dx) = grad1(&x, &Tensor::ones((1, 1, 2, 2), DType::F32, &cpu())?, |x| {
        gradops::candle::max_pool2d(x, &attrs)
    })?;
    assert_eq!(values::<f32>(&y)?, vec![4., 5., 9., 7.]);
    let want = [
        0., 0., 1., 0., 0., 1., 0., 0., 0., 1., 0., 0., 0., 0., 0., 1.,
    ];
    assert_eq!(values::<f32>(&dx)?, want);
    Ok(())
}

#[test]
fn max_pool_3x3_stride_2_padded_matches_gradops_and_ties_go_first() -> R<()> {
    // Kernel != stride (overlapping windows) with padding: candle 0.11 refuses the backward.
    let mut rng = Rng::new(7);
    let shape = [2, 3, 7, 6];
    // Small integers: ties within windows, so the TF rule (first maximum) is exercised.
    let xv: Vec<f64> = (0..shape.iter().product())
        .map(|_| rng.range(0, 3) as f64)
        .collect();
    let attrs = MaxPoolAttrs::new([3, 3])
        .strides([2, 2])
        .padding(Padding::Explicit([[1, 1], [1, 1]]));
    for dt in [DType::F16, DType::BF16, DType::F32, DType::F64] {
        let x = tensor(&xv, shape, dt)?;
        let yshape = dims4(&gradops::candle::max_pool2d(&x, &attrs)?);
        assert_eq!(yshape, [2, 3, 4, 3]);
        let dy = tensor(&rng.vec(yshape.iter().product()), yshape, dt)?;
        let (y, dx) = grad1(&x, &dy, |x| gradops::candle::max_pool2d(x, &attrs))?;
        match dt {
            DType::F16 => check_max_pool::<f16>(&x, &dy, &y, &dx, &attrs)?,
            DType::BF16 => check_max_pool::<bf16>(&x, &dy, &y, &dx, &attrs)?,
            DType::F32 => check_max_pool::<f32>(&x, &dy, &y, &dx, &attrs)?,
            _ => check_max_pool::<f64>(&x, &dy, &y, &dx, &attrs)?,
        }
    }
    Ok(())
}

fn check_max_pool<T: Element + WithDType>(
    x: &Tensor,
    dy: &Tensor,
    y: &Tensor,
    dx: &Tensor,
    attrs: &MaxPoolAttrs,
) -> R<()> {
    let (xv, dyv) = (values::<T>(x)?, values::<T>(dy)?);
    let xr = TensorRef::new(&xv, dims4(x), Layout::Nchw);
    let (want_y, _) = gradops::max_pool(xr, attrs, false).unwrap();
    let want_dx = gradops::max_pool_grad(
        TensorRef::new(&dyv, dims4(dy), Layout::Nchw),
        xr,
        None,
        attrs,
    )
    .unwrap();
    assert_eq!(
        values::<T>(y)?,
        want_y.data,
        "max_pool forward, {:?}",
        <T as Element>::DTYPE
    );
    assert_eq!(dims4(dx), dims4(x));
    assert_eq!(
        values::<T>(dx)?,
        want_dx.data,
        "max_pool gradient, {:?}",
        <T as Element>::DTYPE
    );
    Ok(())
}

#[test]
fn bilinear_upsample_has_pytorchs_values_and_a_gradient() -> R<()> {
    // F.interpolate([[1, 2], [3, 4]], size=4, mode="bilinear", align_corners=False).
    let x = Tensor::new(&[[[[1f32, 2.], [3., 4.]]]], &cpu())?;
    let ones = Tensor::ones((1, 1, 4, 4), DType::F32, &cpu())?;
    let (y, dx) = grad1(&x, &ones, |x| {
        gradops::candle::upsample_bilinear2d(x, (4, 4), false)
    })?;
    let want = [
        1.0, 1.25, 1.75, 2.0, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3.0, 3.25, 3.75, 4.0,
    ];
    assert_eq!(values::<f32>(&y)?, want);
    // Each input pixel carries a quarter of the 16 outputs' weight.
    assert_eq!(values::<f32>(&dx)?, vec![4.0; 4]);
    // align_corners: the corners map onto each other.
    let (y, dx) = grad1(&x, &Tensor::ones((1, 1, 3, 3), DType::F32, &cpu())?, |x| {
        gradops::candle::upsample_bilinear2d(x, (3, 3), true)
    })?;
    assert_eq!(
        values::<f32>(&y)?,
        vec![1.0, 1.5, 2.0, 2.0, 2.5, 3.0, 3.0, 3.5, 4.0]
    );
    assert_eq!(values::<f32>(&dx)?, vec![2.25; 4]);
    Ok(())
}

#[test]
fn nearest_with_a_non_integer_factor_accumulates() -> R<()> {
    // 3 -> 5 with PyTorch's `nearest` (floor(o * 3/5)): sources 0, 0, 1, 1, 2 per axis, so
    // dx = [2, 2, 1] (x) [2, 2, 1]; candle 0.11 refuses non-integer factors.
    let x = Tensor::arange(0f32, 9., &cpu())?.reshape((1, 1, 3, 3))?;
    let ones = Tensor::ones((1, 1, 5, 5), DType::F32, &cpu())?;
    let (_, dx) = grad1(&x, &ones, |x| {
        gradops::candle::upsample_nearest2d(x, (5, 5), Ct::Asymmetric, Nm::Floor)
    })?;
    assert_eq!(
        values::<f32>(&dx)?,
        vec![4., 4., 2., 4., 4., 2., 2., 2., 1.]
    );
    // Unequal factors (2 -> 6 rows, 3 -> 4 columns) match candle's own forward.
    let x = Tensor::arange(0f32, 6., &cpu())?.reshape((1, 1, 2, 3))?;
    let ours = gradops::candle::upsample_nearest2d(&x, (6, 4), Ct::Asymmetric, Nm::Floor)?;
    let theirs = x.upsample_nearest2d(6, 4)?;
    assert_eq!(values::<f32>(&ours)?, values::<f32>(&theirs)?);
    Ok(())
}

#[test]
fn conv2d_on_a_5x6_input_with_stride_2() -> R<()> {
    // candle 0.11 derives one output padding from the height and fails with a shape
    // mismatch on this input gradient.
    let mut rng = Rng::new(11);
    let x = tensor(&rng.vec(2 * 3 * 5 * 6), [2, 3, 5, 6], DType::F64)?;
    let w = tensor(&rng.vec(4 * 3 * 3 * 3), [4, 3, 3, 3], DType::F64)?;
    let attrs = gradops::candle::oihw().strides([2, 2]);
    let y = gradops::candle::conv2d(&x, &w, &attrs)?;
    assert_eq!(y.dims(), &[2, 4, 2, 2]);
    // candle's own forward agrees.
    let theirs = x.conv2d(&w, 0, 2, 1, 1)?;
    let err = (y.sub(&theirs)?.abs()?.max_all()?).to_scalar::<f64>()?;
    assert!(err < 1e-12, "forward differs from candle's conv2d by {err}");
    let dy = tensor(&rng.vec(2 * 4 * 2 * 2), [2, 4, 2, 2], DType::F64)?;
    let (_, dx, dw) = grad2(&x, &w, &dy, |x, w| gradops::candle::conv2d(x, w, &attrs))?;
    assert_eq!(dx.dims(), &[2, 3, 5, 6]);
    assert_eq!(dw.dims(), &[4, 3, 3, 3]);
    check_conv::<f64>(&x, &w, &dy, &dx, &dw, &attrs)?;
    fd_check2(&x, &w, &dy, |x, w| gradops::candle::conv2d(x, w, &attrs))
}

// ---------------------------------------------------------------- against gradops, every mode

fn check_resize<T: Element + WithDType>(
    x: &Tensor,
    dy: &Tensor,
    y: &Tensor,
    dx: &Tensor,
    size: [usize; 2],
    attrs: &ResizeAttrs,
) -> R<()> {
    let (xv, dyv) = (values::<T>(x)?, values::<T>(dy)?);
    let want_y = gradops::resize(TensorRef::new(&xv, dims4(x), Layout::Nchw), size, attrs).unwrap();
    let want_dx = gradops::resize_grad(
        TensorRef::new(&dyv, dims4(dy), Layout::Nchw),
        dims4(x),
        attrs,
    )
    .unwrap();
    assert_eq!(dims4(y), want_y.shape);
    assert_eq!(
        values::<T>(y)?,
        want_y.data,
        "resize forward {attrs:?} {:?}",
        <T as Element>::DTYPE
    );
    assert_eq!(dims4(dx), dims4(x));
    assert_eq!(
        values::<T>(dx)?,
        want_dx.data,
        "resize gradient {attrs:?} {:?}",
        <T as Element>::DTYPE
    );
    Ok(())
}

#[test]
fn interpolate_every_mode_matches_gradops_bitwise() -> R<()> {
    let mut rng = Rng::new(3);
    let mut cases = 0;
    for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
        for ctm in ALL_CTMS {
            let nms: &[Nm] = if mode == ResizeMode::Nearest {
                &ALL_NEAREST_MODES
            } else {
                &[Nm::RoundPreferFloor]
            };
            for &nm in nms {
                for dt in [DType::F16, DType::BF16, DType::F32, DType::F64] {
                    // Up and down, unequal and non-integer factors, size 1 included.
                    let xs = [
                        rng.range(1, 3),
                        rng.range(1, 4),
                        rng.range(1, 9),
                        rng.range(1, 9),
                    ];
                    let size = [rng.range(1, 13), rng.range(1, 13)];
                    let mut attrs = ResizeAttrs::new(mode)
                        .coordinate_transformation_mode(ctm)
                        .nearest_mode(nm);
                    if rng.coin() && ctm != Ct::AlignCorners {
                        // Scales: the output must be floor(in * scale).
                        let s = [
                            size[0] as f64 / xs[2] as f64 + 0.01,
                            size[1] as f64 / xs[3] as f64 + 0.01,
                        ];
                        let fits =
                            (0..2).all(|a| (xs[2 + a] as f64 * s[a]).floor() as usize == size[a]);
                        if fits {
                            attrs = attrs.scales(Some(s));
                        }
                    }
                    let x = tensor(&rng.vec(xs.iter().product()), xs, dt)?;
                    let yshape = [xs[0], xs[1], size[0], size[1]];
                    let dy = tensor(&rng.vec(yshape.iter().product()), yshape, dt)?;
                    let (y, dx) = grad1(&x, &dy, |x| {
                        gradops::candle::interpolate(x, (size[0], size[1]), &attrs)
                    })?;
                    match dt {
                        DType::F16 => check_resize::<f16>(&x, &dy, &y, &dx, size, &attrs)?,
                        DType::BF16 => check_resize::<bf16>(&x, &dy, &y, &dx, size, &attrs)?,
                        DType::F32 => check_resize::<f32>(&x, &dy, &y, &dx, size, &attrs)?,
                        _ => check_resize::<f64>(&x, &dy, &y, &dx, size, &attrs)?,
                    }
                    cases += 1;
                }
            }
        }
    }
    assert_eq!(cases, (5 + 5 * 4) * 4);
    Ok(())
}

fn check_conv<T: Element + WithDType>(
    x: &Tensor,
    w: &Tensor,
    dy: &Tensor,
    dx: &Tensor,
    dw: &Tensor,
    attrs: &Conv2dAttrs,
) -> R<()> {
    let (xv, wv, dyv) = (values::<T>(x)?, values::<T>(w)?, values::<T>(dy)?);
    let (xr, dyr) = (
        TensorRef::new(&xv, dims4(x), Layout::Nchw),
        TensorRef::new(&dyv, dims4(dy), Layout::Nchw),
    );
    let want_dx =
        gradops::conv2d_backprop_input(dyr, FilterRef::new(&wv, dims4(w)), dims4(x), attrs)
            .unwrap();
    let want_dw = gradops::conv2d_backprop_filter(xr, dyr, dims4(w), attrs).unwrap();
    assert_eq!(
        values::<T>(dx)?,
        want_dx.data,
        "conv2d input gradient {attrs:?} {:?}",
        <T as Element>::DTYPE
    );
    assert_eq!(dims4(dw), dims4(w));
    assert_eq!(
        values::<T>(dw)?,
        want_dw.data,
        "conv2d filter gradient {attrs:?} {:?}",
        <T as Element>::DTYPE
    );
    Ok(())
}

#[test]
fn conv2d_matches_gradops_bitwise_strides_padding_dilations_groups() -> R<()> {
    let mut rng = Rng::new(5);
    for case in 0..24 {
        let groups = *rng.pick(&[1usize, 1, 2, 3]);
        let (ci, co) = (groups * rng.range(1, 2), groups * rng.range(1, 2));
        let k = [rng.range(1, 3), rng.range(1, 3)];
        let strides = [rng.range(1, 3), rng.range(1, 3)];
        let dil = [rng.range(1, 2), rng.range(1, 2)];
        let xs = [rng.range(1, 2), ci, rng.range(4, 9), rng.range(4, 9)];
        let padding = match case % 3 {
            0 => Padding::Valid,
            1 => Padding::Same,
            _ => Padding::Explicit([
                [rng.range(0, 2), rng.range(0, 2)],
                [rng.range(0, 2), rng.range(0, 2)],
            ]),
        };
        let fl = if rng.coin() {
            FilterLayout::Oihw
        } else {
            FilterLayout::Hwio
        };
        let ws = match fl {
            FilterLayout::Oihw => [co, ci / groups, k[0], k[1]],
            FilterLayout::Hwio => [k[0], k[1], ci / groups, co],
        };
        let attrs = Conv2dAttrs::default()
            .strides(strides)
            .dilations(dil)
            .padding(padding)
            .filter_layout(fl);
        let dt = *rng.pick(&[DType::F16, DType::BF16, DType::F32, DType::F64]);
        let x = tensor(&rng.vec(xs.iter().product()), xs, dt)?;
        let w = tensor(&rng.vec(ws.iter().product()), ws, dt)?;
        let ys = dims4(&gradops::candle::conv2d(&x, &w, &attrs)?);
        let dy = tensor(&rng.vec(ys.iter().product()), ys, dt)?;
        let (y, dx, dw) = grad2(&x, &w, &dy, |x, w| gradops::candle::conv2d(x, w, &attrs))?;
        match dt {
            DType::F16 => check_conv_fwd::<f16>(&x, &w, &y, &attrs)?,
            DType::BF16 => check_conv_fwd::<bf16>(&x, &w, &y, &attrs)?,
            DType::F32 => check_conv_fwd::<f32>(&x, &w, &y, &attrs)?,
            _ => check_conv_fwd::<f64>(&x, &w, &y, &attrs)?,
        }
        match dt {
            DType::F16 => check_conv::<f16>(&x, &w, &dy, &dx, &dw, &attrs)?,
            DType::BF16 => check_conv::<bf16>(&x, &w, &dy, &dx, &dw, &attrs)?,
            DType::F32 => check_conv::<f32>(&x, &w, &dy, &dx, &dw, &attrs)?,
            _ => check_conv::<f64>(&x, &w, &dy, &dx, &dw, &attrs)?,
        }
    }
    Ok(())
}

fn check_conv_fwd<T: Element + WithDType>(
    x: &Tensor,
    w: &Tensor,
    y: &Tensor,
    attrs: &Conv2dAttrs,
) -> R<()> {
    let (xv, wv) = (values::<T>(x)?, values::<T>(w)?);
    let want = gradops::conv2d(
        TensorRef::new(&xv, dims4(x), Layout::Nchw),
        FilterRef::new(&wv, dims4(w)),
        attrs,
    )
    .unwrap();
    assert_eq!(dims4(y), want.shape);
    assert_eq!(values::<T>(y)?, want.data, "conv2d forward {attrs:?}");
    Ok(())
}

// ---------------------------------------------------------------- finite differences (f64)

/// Central difference of `L(x) = <f(x), r>` at every element of `x`, against `g`.
/// The ops are linear in each input (max pool piecewise linear with the pieces held: its
/// inputs are distinct integers and the step a quarter), so the difference has no
/// truncation error: the tolerance covers rounding only.
fn fd_compare(name: &str, x: &[f64], g: &[f64], loss: impl Fn(&[f64]) -> f64) {
    const H: f64 = 0.25;
    let mut worst: f64 = 0.0;
    for i in 0..x.len() {
        let mut xp = x.to_vec();
        xp[i] += H;
        let lp = loss(&xp);
        xp[i] = x[i] - H;
        let lm = loss(&xp);
        let fd = (lp - lm) / (2.0 * H);
        let err = (fd - g[i]).abs();
        assert!(
            err <= 1e-10 * (1.0 + g[i].abs()),
            "{name}: element {i}: autograd {} vs finite difference {fd}",
            g[i]
        );
        worst = worst.max(err);
    }
    println!(
        "{name}: {} elements, worst |autograd - finite difference| = {worst:.1e}",
        x.len()
    );
}

fn fd_check1(x: &Tensor, r: &Tensor, f: impl Fn(&Tensor) -> R<Tensor>) -> R<()> {
    let (_, dx) = grad1(x, r, &f)?;
    let (xv, rv, g) = (values::<f64>(x)?, values::<f64>(r)?, values::<f64>(&dx)?);
    let shape = dims4(x);
    fd_compare("dx", &xv, &g, |xp| {
        let y = f(&tensor(xp, shape, DType::F64).unwrap()).unwrap();
        common::dot(&values::<f64>(&y).unwrap(), &rv)
    });
    Ok(())
}

fn fd_check2(
    x: &Tensor,
    w: &Tensor,
    r: &Tensor,
    f: impl Fn(&Tensor, &Tensor) -> R<Tensor>,
) -> R<()> {
    let (_, dx, dw) = grad2(x, w, r, &f)?;
    let (xv, wv, rv) = (values::<f64>(x)?, values::<f64>(w)?, values::<f64>(r)?);
    let (xs, ws) = (dims4(x), dims4(w));
    fd_compare("conv2d dx", &xv, &values::<f64>(&dx)?, |xp| {
        let y = f(&tensor(xp, xs, DType::F64).unwrap(), w).unwrap();
        common::dot(&values::<f64>(&y).unwrap(), &rv)
    });
    fd_compare("conv2d dw", &wv, &values::<f64>(&dw)?, |wp| {
        let y = f(x, &tensor(wp, ws, DType::F64).unwrap()).unwrap();
        common::dot(&values::<f64>(&y).unwrap(), &rv)
    });
    Ok(())
}

#[test]
fn finite_differences_resize_every_mode() -> R<()> {
    let mut rng = Rng::new(17);
    for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
        for ctm in ALL_CTMS {
            for nm in [Nm::RoundPreferFloor, Nm::Ceil] {
                let xs = [1, 2, rng.range(2, 5), rng.range(2, 5)];
                let size = (rng.range(1, 7), rng.range(1, 7));
                let attrs = ResizeAttrs::new(mode)
                    .coordinate_transformation_mode(ctm)
                    .nearest_mode(nm);
                let x = tensor(&rng.vec(xs.iter().product()), xs, DType::F64)?;
                let r = tensor(
                    &rng.vec(2 * size.0 * size.1),
                    [1, 2, size.0, size.1],
                    DType::F64,
                )?;
                fd_check1(&x, &r, |x| gradops::candle::interpolate(x, size, &attrs))?;
            }
        }
    }
    Ok(())
}

#[test]
fn finite_differences_max_pool() -> R<()> {
    let mut rng = Rng::new(19);
    for (k, s, p) in [
        ([3, 3], [2, 2], [1, 1]),
        ([2, 3], [1, 2], [0, 1]),
        ([3, 2], [3, 1], [1, 0]),
    ] {
        let xs = [1, 2, rng.range(4, 7), rng.range(4, 7)];
        let n: usize = xs.iter().product();
        // A permutation of 0..n: distinct, spaced 1 > 2h, so no argmax moves within the step.
        let mut xv: Vec<f64> = (0..n).map(|i| i as f64).collect();
        for i in (1..n).rev() {
            xv.swap(i, rng.range(0, i));
        }
        let attrs = MaxPoolAttrs::new(k)
            .strides(s)
            .padding(Padding::Explicit([[p[0], p[0]], [p[1], p[1]]]));
        let x = tensor(&xv, xs, DType::F64)?;
        let ys = dims4(&gradops::candle::max_pool2d(&x, &attrs)?);
        let r = tensor(&rng.vec(ys.iter().product()), ys, DType::F64)?;
        fd_check1(&x, &r, |x| gradops::candle::max_pool2d(x, &attrs))?;
    }
    Ok(())
}

#[test]
fn finite_differences_conv2d_groups_dilations_same_padding() -> R<()> {
    let mut rng = Rng::new(23);
    let attrs = gradops::candle::oihw()
        .strides([2, 1])
        .dilations([1, 2])
        .padding(Padding::Same);
    let x = tensor(&rng.vec(4 * 5 * 6), [1, 4, 5, 6], DType::F64)?;
    let w = tensor(&rng.vec(6 * 2 * 3 * 2), [6, 2, 3, 2], DType::F64)?; // groups = 2
    let ys = dims4(&gradops::candle::conv2d(&x, &w, &attrs)?);
    let r = tensor(&rng.vec(ys.iter().product()), ys, DType::F64)?;
    fd_check2(&x, &w, &r, |x, w| gradops::candle::conv2d(x, w, &attrs))
}

// ---------------------------------------------------------------- layouts and composition

#[test]
fn non_contiguous_and_offset_inputs_and_broadcast_gradients() -> R<()> {
    let mut rng = Rng::new(29);
    let attrs = ResizeAttrs::new(ResizeMode::Linear);
    // A transpose: made contiguous (differentiably) before the op; its gradient is the
    // transpose of the contiguous input's.
    let base = Var::from_tensor(&tensor(&rng.vec(2 * 3 * 5 * 4), [2, 3, 5, 4], DType::F32)?)?;
    let y = gradops::candle::interpolate(&base.transpose(2, 3)?, (7, 9), &attrs)?;
    let copy = Var::from_tensor(&base.transpose(2, 3)?.contiguous()?)?;
    let y2 = gradops::candle::interpolate(&copy, (7, 9), &attrs)?;
    assert_eq!(values::<f32>(&y)?, values::<f32>(&y2)?);
    // `sum_all` hands a broadcast (stride 0) gradient to the op.
    let g = y.sum_all()?.backward()?;
    let g2 = y2.sum_all()?.backward()?;
    let dbase = g.get(&base).unwrap();
    assert_eq!(dbase.dims(), &[2, 3, 5, 4]);
    assert_eq!(
        values::<f32>(&dbase.transpose(2, 3)?)?,
        values::<f32>(g2.get(&copy).unwrap())?
    );

    // A batch slice: contiguous with an offset, read in place.
    let big = Var::from_tensor(&tensor(&rng.vec(3 * 2 * 6 * 6), [3, 2, 6, 6], DType::F64)?)?;
    let pool = MaxPoolAttrs::new([3, 3])
        .strides([2, 2])
        .padding(Padding::Same);
    let slice = big.narrow(0, 1, 2)?;
    assert!(slice.is_contiguous());
    let y = gradops::candle::max_pool2d(&slice, &pool)?;
    let alone = Var::from_tensor(&slice.copy()?)?;
    let y2 = gradops::candle::max_pool2d(&alone, &pool)?;
    assert_eq!(values::<f64>(&y)?, values::<f64>(&y2)?);
    let g = y.sum_all()?.backward()?;
    let g2 = y2.sum_all()?.backward()?;
    let dbig = g.get(&big).unwrap();
    assert_eq!(
        values::<f64>(&dbig.narrow(0, 1, 2)?)?,
        values::<f64>(g2.get(&alone).unwrap())?
    );
    assert_eq!(
        values::<f64>(&dbig.narrow(0, 0, 1)?)?,
        vec![0.0; 2 * 36],
        "batch 0 was not pooled"
    );

    // A conv weight that is a transposed view.
    let x = tensor(&rng.vec(2 * 3 * 6 * 5), [2, 3, 6, 5], DType::F64)?;
    let w_t = tensor(&rng.vec(4 * 3 * 3 * 3), [4, 3, 3, 3], DType::F64)?.transpose(2, 3)?;
    assert!(!w_t.is_contiguous());
    let a = gradops::candle::conv2d(&x, &w_t, &gradops::candle::oihw())?;
    let b = gradops::candle::conv2d(&x, &w_t.contiguous()?, &gradops::candle::oihw())?;
    assert_eq!(values::<f64>(&a)?, values::<f64>(&b)?);
    Ok(())
}

#[test]
fn resize_grad_is_differentiable_with_the_forward_as_its_backward() -> R<()> {
    // resize_grad is linear; the gradient of <resize_grad(dy), v> with respect to dy is
    // resize(v), bitwise gradops' forward.
    let mut rng = Rng::new(31);
    for ctm in ALL_CTMS {
        let attrs = ResizeAttrs::new(ResizeMode::Linear).coordinate_transformation_mode(ctm);
        let dy = tensor(&rng.vec(2 * 5 * 7), [1, 2, 5, 7], DType::F32)?;
        let v = tensor(&rng.vec(2 * 3 * 4), [1, 2, 3, 4], DType::F32)?;
        let (dx, ddy) = grad1(&dy, &v, |dy| {
            gradops::candle::resize_grad(dy, [1, 2, 3, 4], &attrs)
        })?;
        let dyv = values::<f32>(&dy)?;
        let want_dx = gradops::resize_grad(
            TensorRef::new(&dyv, [1, 2, 5, 7], Layout::Nchw),
            [1, 2, 3, 4],
            &attrs,
        )
        .unwrap();
        assert_eq!(values::<f32>(&dx)?, want_dx.data);
        let vv = values::<f32>(&v)?;
        let want = gradops::resize(
            TensorRef::new(&vv, [1, 2, 3, 4], Layout::Nchw),
            [5, 7],
            &attrs,
        )
        .unwrap();
        assert_eq!(values::<f32>(&ddy)?, want.data, "{ctm:?}");
    }
    Ok(())
}

// ---------------------------------------------------------------- errors

fn message(r: R<Tensor>) -> String {
    match r {
        Ok(t) => panic!("expected an error, got a tensor of shape {:?}", t.dims()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn errors_name_the_op_the_argument_and_the_values() -> R<()> {
    let x3 = Tensor::zeros((2, 4, 4), DType::F32, &cpu())?;
    let m = message(gradops::candle::max_pool2d(&x3, &MaxPoolAttrs::new([2, 2])));
    assert!(
        m.contains("max_pool") && m.contains("`x`") && m.contains("rank 3"),
        "{m}"
    );

    let xi = Tensor::zeros((1, 1, 4, 4), DType::U32, &cpu())?;
    let m = message(gradops::candle::upsample_bilinear2d(&xi, (8, 8), false));
    assert!(
        m.contains("resize") && m.contains("f16, f32 or f64") && m.contains("u32"),
        "{m}"
    );
    let xb = Tensor::zeros((1, 1, 4, 4), DType::I64, &cpu())?;
    let m = message(gradops::candle::max_pool2d(&xb, &MaxPoolAttrs::new([2, 2])));
    assert!(m.contains("max_pool") && m.contains("i64"), "{m}");

    let x = Tensor::zeros((1, 2, 5, 5), DType::F32, &cpu())?;
    let w64 = Tensor::zeros((3, 2, 3, 3), DType::F64, &cpu())?;
    let m = message(gradops::candle::conv2d(&x, &w64, &gradops::candle::oihw()));
    assert!(
        m.contains("conv2d") && m.contains("filter") && m.contains("f64"),
        "{m}"
    );

    let w = Tensor::zeros((3, 3, 3, 3), DType::F32, &cpu())?; // 3 in-channels, x has 2
    let m = message(gradops::candle::conv2d(&x, &w, &gradops::candle::oihw()));
    assert!(m.contains("conv2d"), "{m}");

    let m = message(gradops::candle::max_pool2d(
        &x,
        &MaxPoolAttrs::new([2, 2]).strides([0, 1]),
    ));
    assert!(m.contains("max_pool") && m.contains("strides"), "{m}");

    let m = message(gradops::candle::interpolate(
        &x,
        (7, 7),
        &ResizeAttrs::new(ResizeMode::Linear).scales(Some([2.0, 2.0])),
    ));
    assert!(m.contains("resize") && m.contains("scales"), "{m}");
    Ok(())
}

#[test]
fn zero_sized_batch_is_valid() -> R<()> {
    let x = Var::from_tensor(&Tensor::zeros((0, 2, 4, 4), DType::F32, &cpu())?)?;
    let y = gradops::candle::upsample_bilinear2d(&x, (6, 5), false)?;
    assert_eq!(y.dims(), &[0, 2, 6, 5]);
    let g = y.sum_all()?.backward()?;
    assert_eq!(g.get(&x).unwrap().dims(), &[0, 2, 4, 4]);
    Ok(())
}

#[test]
fn candle_alone_cannot_differentiate_these_and_its_forwards_agree() -> R<()> {
    // The premise of gradops::candle (candle 0.11, as in Cargo.lock): candle's own backward
    // passes refuse or are wrong here, while its forwards agree with gradops'.
    let mut rng = Rng::new(37);
    let x = Var::from_tensor(&tensor(&rng.vec(2 * 3 * 9 * 7), [2, 3, 9, 7], DType::F32)?)?;

    let theirs = x.upsample_bilinear2d(13, 5, false)?;
    let ours = gradops::candle::upsample_bilinear2d(&x, (13, 5), false)?;
    let err = theirs.sub(&ours)?.abs()?.max_all()?.to_scalar::<f32>()?;
    assert!(err < 1e-6, "bilinear forwards differ by {err}");
    assert!(
        theirs.sum_all()?.backward().is_err(),
        "candle's bilinear has a backward now"
    );
    assert!(ours.sum_all()?.backward().is_ok());

    let theirs = x.max_pool2d_with_stride(3, 2)?;
    let ours = gradops::candle::max_pool2d(&x, &MaxPoolAttrs::new([3, 3]).strides([2, 2]))?;
    assert_eq!(values::<f32>(&theirs)?, values::<f32>(&ours)?);
    assert!(
        theirs.sum_all()?.backward().is_err(),
        "candle's 3x3/2 max pool has a backward now"
    );

    // 2x2/2 on distinct values: candle's gradient at each window's max is not 1.
    let theirs = x.max_pool2d(2)?;
    let g = theirs.sum_all()?.backward()?;
    let top = values::<f32>(g.get(&x).unwrap())?
        .into_iter()
        .fold(0f32, f32::max);
    assert_ne!(
        top, 1.0,
        "candle's 2x2 max-pool gradient is 1 at the max now"
    );
    Ok(())
}

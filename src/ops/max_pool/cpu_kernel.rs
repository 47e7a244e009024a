//! CPU max-pool kernels. Per plane (NCHW) or per image (NHWC, channels as the vector), windows
//! in row-major order: deterministic, and each `dx` cell sums its windows in that order.

use crate::dtype::{Accum, Element};
use crate::error::{Error, Result};
use crate::geometry::window::PoolGeometry;
use crate::tensor::Layout;
use num_traits::Zero;
use rayon::prelude::*;

/// Calls `f(o, idx)` for each window `o` (row-major) with the in-image index (`y*W + x`) of its
/// argmax, or `None` when the window holds no in-bounds cell. `val(idx)` reads the input.
#[inline]
fn argmax_windows<A: Accum>(
    g: &PoolGeometry,
    val: impl Fn(usize) -> A,
    mut f: impl FnMut(usize, Option<usize>),
) {
    let (wi, ho, wo) = (g.w.input, g.h.output, g.w.output);
    for oy in 0..ho {
        for ox in 0..wo {
            let mut best: Option<(usize, A)> = None;
            for ky in 0..g.h.kernel {
                let Some(y) = g.h.input_index(oy, ky) else {
                    continue;
                };
                for kx in 0..g.w.kernel {
                    let Some(x) = g.w.input_index(ox, kx) else {
                        continue;
                    };
                    let idx = y * wi + x;
                    let v = val(idx);
                    match best {
                        None => best = Some((idx, v)),
                        Some((_, b)) if v > b => best = Some((idx, v)),
                        _ => {}
                    }
                }
            }
            f(oy * wo + ox, best.map(|b| b.0));
        }
    }
}

fn per_unit<T: Element>(g: &PoolGeometry, layout: Layout) -> (usize, usize, usize) {
    // (units, x elements per unit, y elements per unit); a unit is a plane (NCHW) or an image.
    let (hw_in, hw_out) = (g.h.input * g.w.input, g.h.output * g.w.output);
    match layout {
        Layout::Nchw => (g.n * g.c, hw_in, hw_out),
        Layout::Nhwc => (g.n, hw_in * g.c, hw_out * g.c),
    }
}

pub(crate) fn forward<T: Element>(
    g: &PoolGeometry,
    layout: Layout,
    x: &[T],
    y: &mut [T],
    argmax: Option<&mut [i64]>,
) {
    let (_, xl, yl) = per_unit::<T>(g, layout);
    if y.is_empty() {
        return;
    }
    let c = if layout == Layout::Nhwc { g.c } else { 1 };
    let empty = T::from_f64(f64::NEG_INFINITY);
    let mut dummy = Vec::new();
    let (arg, have_arg) = match argmax {
        Some(a) => (a, true),
        None => {
            dummy.resize(y.len(), 0);
            (&mut dummy[..], false)
        }
    };
    let _ = have_arg;
    if xl == 0 {
        y.fill(empty);
        arg.fill(-1);
        return;
    }
    y.par_chunks_mut(yl)
        .zip(arg.par_chunks_mut(yl))
        .zip(x.par_chunks(xl))
        .enumerate()
        .for_each(|(u, ((yu, au), xu))| {
            for ch in 0..c {
                argmax_windows::<T::Acc>(
                    g,
                    |i| xu[i * c + ch].to_acc(),
                    |o, best| {
                        let (v, a) = match best {
                            Some(i) => (xu[i * c + ch], (u * xl + i * c + ch) as i64),
                            None => (empty, -1),
                        };
                        yu[o * c + ch] = v;
                        au[o * c + ch] = a;
                    },
                );
            }
        });
}

pub(crate) fn grad<T: Element>(g: &PoolGeometry, layout: Layout, dy: &[T], x: &[T], dx: &mut [T]) {
    let (_, xl, yl) = per_unit::<T>(g, layout);
    if dx.is_empty() {
        return;
    }
    let zero = T::Acc::zero();
    if yl == 0 {
        dx.fill(T::default());
        return;
    }
    let c = if layout == Layout::Nhwc { g.c } else { 1 };
    dx.par_chunks_mut(xl)
        .zip(x.par_chunks(xl))
        .zip(dy.par_chunks(yl))
        .for_each_init(Vec::new, |acc: &mut Vec<T::Acc>, ((dxu, xu), dyu)| {
            acc.clear();
            acc.resize(xl, zero);
            for ch in 0..c {
                argmax_windows::<T::Acc>(
                    g,
                    |i| xu[i * c + ch].to_acc(),
                    |o, best| {
                        if let Some(i) = best {
                            acc[i * c + ch] = acc[i * c + ch] + dyu[o * c + ch].to_acc();
                        }
                    },
                );
            }
            T::slice_from_acc(acc, dxu);
        });
}

/// Every argmax must be -1 or a flat index into the same unit (plane or image) and channel
/// as its window, so the gather cannot read or write out of bounds.
pub(crate) fn check_argmax(g: &PoolGeometry, layout: Layout, argmax: &[i64]) -> Result<()> {
    let (_, xl, yl) = per_unit::<f32>(g, layout);
    let c = if layout == Layout::Nhwc { g.c } else { 1 };
    if yl == 0 {
        return Ok(());
    }
    for (u, au) in argmax.chunks(yl).enumerate() {
        for (o, &a) in au.iter().enumerate() {
            if a == -1 {
                continue;
            }
            let lo = (u * xl) as i64;
            let ok = a >= lo && a < lo + xl as i64 && ((a - lo) as usize) % c == o % c;
            if !ok {
                return Err(Error::shape(
                    "max_pool_grad_with_argmax",
                    "argmax",
                    format!("index {a} at position {} does not lie in its window's {} (flat range {lo}..{}, channel {})", u * yl + o, if c == 1 { "plane" } else { "image" }, lo + xl as i64, o % c),
                ));
            }
        }
    }
    Ok(())
}

pub(crate) fn grad_with_argmax<T: Element>(
    g: &PoolGeometry,
    layout: Layout,
    dy: &[T],
    argmax: &[i64],
    dx: &mut [T],
) {
    let (_, xl, yl) = per_unit::<T>(g, layout);
    if dx.is_empty() {
        return;
    }
    if yl == 0 {
        dx.fill(T::default());
        return;
    }
    let zero = T::Acc::zero();
    dx.par_chunks_mut(xl)
        .zip(dy.par_chunks(yl).zip(argmax.par_chunks(yl)))
        .enumerate()
        .for_each_init(Vec::new, |acc: &mut Vec<T::Acc>, (u, (dxu, (dyu, au)))| {
            acc.clear();
            acc.resize(xl, zero);
            for (&d, &a) in dyu.iter().zip(au) {
                if a >= 0 {
                    let i = a as usize - u * xl;
                    acc[i] = acc[i] + d.to_acc();
                }
            }
            T::slice_from_acc(acc, dxu);
        });
}

//! CPU gather for every resize op: `dst[i, j] = sum_a sum_b wy[a] * wx[b] * src[y[a], x[b]]`.

use crate::dtype::{Accum, Element};
use crate::geometry::resize::{AxisTable, ResizePlan};
use crate::tensor::Layout;
use num_traits::Zero;
use rayon::prelude::*;
use std::borrow::Cow;

/// `acc += w * x`, element-wise (auto-vectorised).
#[inline]
pub(crate) fn axpy<A: Accum>(acc: &mut [A], w: A, x: &[A]) {
    for (a, &v) in acc.iter_mut().zip(x) {
        *a = *a + w * v;
    }
}

/// `src` as the accumulation type: borrowed for f32/f64, converted into `buf` for f16.
#[inline]
pub(crate) fn acc_view<'a, T: Element>(
    src: &'a [T],
    buf: &'a mut Vec<T::Acc>,
) -> Cow<'a, [T::Acc]> {
    match T::as_acc_slice(src) {
        Some(s) => Cow::Borrowed(s),
        None => {
            buf.resize(src.len(), T::Acc::zero());
            T::slice_to_acc(src, buf);
            Cow::Borrowed(&buf[..])
        }
    }
}

/// Writes `acc` into `dst`, rounding once.
#[inline]
pub(crate) fn store<T: Element>(acc: &[T::Acc], dst: &mut [T]) {
    T::slice_from_acc(acc, dst);
}

/// Runs the plan. `src`/`dst` lengths match the plan's dims (checked by the caller).
pub(crate) fn gather<T: Element>(
    plan: &ResizePlan<T::Acc>,
    layout: Layout,
    src: &[T],
    dst: &mut [T],
) {
    if dst.is_empty() {
        return;
    }
    if plan.identity {
        dst.copy_from_slice(src);
        return;
    }
    if src.is_empty() {
        // Nothing maps: the gradient of an empty dy is zero.
        dst.fill(T::default());
        return;
    }
    match layout {
        Layout::Nchw => gather_nchw(plan, src, dst),
        Layout::Nhwc => gather_nhwc(plan, src, dst),
    }
}

struct PlaneScratch<A> {
    row: Vec<A>,
    tmp: Vec<A>,
    acc: Vec<A>,
}

/// One plane at a time: a horizontal pass over the source rows that some destination row
/// reads (into `tmp`, `sh x dw`), then a vertical pass of whole-row axpys.
fn gather_nchw<T: Element>(plan: &ResizePlan<T::Acc>, src: &[T], dst: &mut [T]) {
    let (sh, sw, dh, dw) = (plan.src.h, plan.src.w, plan.dst.h, plan.dst.w);
    let (ty, tx) = (&plan.y, &plan.x);
    let mut used = vec![false; sh];
    for &r in &ty.index {
        used[r as usize] = true;
    }
    let zero = T::Acc::zero();
    dst.par_chunks_mut(dh * dw)
        .zip(src.par_chunks(sh * sw))
        .for_each_init(
            || PlaneScratch {
                row: Vec::new(),
                tmp: vec![zero; sh * dw],
                acc: vec![zero; dw],
            },
            |s, (d, sp)| {
                for r in (0..sh).filter(|&r| used[r]) {
                    let row = acc_view(&sp[r * sw..(r + 1) * sw], &mut s.row);
                    horizontal(tx, &row, &mut s.tmp[r * dw..(r + 1) * dw]);
                }
                for i in 0..dh {
                    s.acc.fill(zero);
                    for (r, w) in ty.entries(i) {
                        axpy(&mut s.acc, w, &s.tmp[r * dw..(r + 1) * dw]);
                    }
                    store::<T>(&s.acc, &mut d[i * dw..(i + 1) * dw]);
                }
            },
        );
}

#[inline]
fn horizontal<A: Accum>(tx: &AxisTable<A>, row: &[A], out: &mut [A]) {
    for (j, o) in out.iter_mut().enumerate() {
        let mut s = A::zero();
        for (i, w) in tx.entries(j) {
            s = s + w * row[i];
        }
        *o = s;
    }
}

/// One destination row (all of W x C) at a time, channels innermost.
fn gather_nhwc<T: Element>(plan: &ResizePlan<T::Acc>, src: &[T], dst: &mut [T]) {
    let (sh, sw, dh, dw, c) = (plan.src.h, plan.src.w, plan.dst.h, plan.dst.w, plan.src.c);
    let (ty, tx) = (&plan.y, &plan.x);
    let zero = T::Acc::zero();
    dst.par_chunks_mut(dw * c).enumerate().for_each_init(
        || (Vec::new(), vec![zero; dw * c]),
        |(rowbuf, acc), (idx, d)| {
            let (n, i) = (idx / dh, idx % dh);
            acc.fill(zero);
            for (r, wy) in ty.entries(i) {
                let base = (n * sh + r) * sw * c;
                let row = acc_view(&src[base..base + sw * c], rowbuf);
                for j in 0..dw {
                    let a = &mut acc[j * c..(j + 1) * c];
                    for (xi, wx) in tx.entries(j) {
                        axpy(a, wy * wx, &row[xi * c..(xi + 1) * c]);
                    }
                }
            }
            store::<T>(acc, d);
        },
    );
}

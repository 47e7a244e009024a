//! CPU max-pool kernels. Per plane (NCHW) or per image (NHWC, channels as the vector), windows
//! in row-major order: deterministic, and each `dx` cell sums its windows in that order.

use crate::cpu::scratch::{scratch_or_own, with_scratch};
use crate::cpu::simd;
use crate::cpu::simd::simd_fn;
use crate::dtype::{Accum, DType, Element};
use crate::error::{Error, Result};
use crate::geometry::window::PoolGeometry;
use crate::tensor::Layout;
use num_traits::Zero;
use rayon::prelude::*;

/// The in-bounds input range of every window along one axis (empty when the window lies wholly
/// in the padding).
fn ranges(a: &crate::geometry::window::WindowAxis) -> Vec<std::ops::Range<usize>> {
    (0..a.output)
        .map(|o| {
            let start = (o * a.stride) as isize - a.pad_before as isize;
            let lo = start.max(0) as usize;
            let hi = ((start + a.kernel as isize).max(0) as usize).min(a.input);
            lo..hi.max(lo)
        })
        .collect()
}

/// Per-plane scratch of [`plane_argmax`].
#[derive(Default)]
struct PlaneArgmax<A> {
    tap_offset: Vec<usize>,
    phases: Vec<A>,
    /// Where each tap's values of the output row's full windows start (in `x` or `phases`).
    tap_at: Vec<usize>,
    tap: Vec<u32>,
}

/// What [`plane_argmax`] gives each window's argmax to.
trait WindowSink {
    /// Before an output row's windows: they touch input rows below `end` only.
    fn rows_upto(&mut self, _end: usize) {}
    /// Window `o`'s argmax is the in-plane index `i`.
    fn put(&mut self, o: usize, i: usize);
}

/// A closure as a [`WindowSink`] that needs no rows.
struct Put<F>(F);

impl<F: FnMut(usize, usize)> WindowSink for Put<F> {
    fn put(&mut self, o: usize, i: usize) {
        (self.0)(o, i)
    }
}

/// The gradient of one NCHW plane: `acc[i] += dy[o]`, `acc`'s rows zeroed as the windows
/// reach them (so that they are still in L1 for the sums; the plane is larger than L1).
struct PlaneGrad<'a, A> {
    acc: &'a mut [A],
    dy: &'a [A],
    w: usize,
    zeroed: usize,
}

impl<A: Accum> WindowSink for PlaneGrad<'_, A> {
    fn rows_upto(&mut self, end: usize) {
        if end > self.zeroed {
            self.acc[self.zeroed * self.w..end * self.w].fill(A::zero());
            self.zeroed = end;
        }
    }
    fn put(&mut self, o: usize, i: usize) {
        self.acc[i] = self.acc[i] + self.dy[o];
    }
}

/// Calls `sink.put(o, i)` for each window `o` (row-major) of one plane with the in-plane index
/// `i` (`y*W + x`) of its argmax (TF rule); windows with no in-bounds cell are skipped.
///
/// Windows that lie horizontally inside the image are done a whole output row at a time: each
/// tap reads a contiguous slice of the phase-split input row, and [`row_argmax`] keeps the
/// running (value, tap number) of a block of windows in registers over every tap. Taps go in
/// row-major order, as in the scalar loop used for the edge windows, so both follow the same
/// rule.
#[inline]
fn plane_argmax<A: Accum>(
    g: &PoolGeometry,
    ys: &[std::ops::Range<usize>],
    xs: &[std::ops::Range<usize>],
    x: &[A],
    sc: &mut PlaneArgmax<A>,
    sink: &mut impl WindowSink,
) {
    let (w, wo) = (g.w.input, xs.len());
    let (s, pad, k) = (g.w.stride, g.w.pad_before, g.w.kernel);
    let full = |ox: usize| xs[ox].len() == k && ox * s >= pad;
    // The row-at-a-time path phase-splits rows into `s` phases: only for strides up to the
    // row width (its scratch is then at most about twice the plane; a larger stride leaves at
    // most one window per row, and a huge one would make the scratch huge).
    let lo = if s > w.max(1) {
        wo
    } else {
        (0..wo).find(|&ox| full(ox)).unwrap_or(wo)
    };
    let hi = (lo..wo).find(|&ox| !full(ox)).unwrap_or(wo);
    let n = hi - lo;
    let plen = w.div_ceil(s);
    let scalar = |yr: &std::ops::Range<usize>, xr: &std::ops::Range<usize>| {
        // The first in-bounds cell is the initial candidate; a later cell replaces it only if
        // strictly greater. Comparing the first cell with itself is a no-op.
        let mut bi = yr.start * w + xr.start;
        let mut bv = x[bi];
        for y in yr.clone() {
            let row = &x[y * w..(y + 1) * w];
            for xx in xr.clone() {
                if row[xx] > bv {
                    bv = row[xx];
                    bi = y * w + xx;
                }
            }
        }
        bi
    };
    // Rows are phase-split as the output rows reach them (so a row's phases are still in L1
    // when its taps read them): phases[(y*s + p)*plen + m] = x[y*W + m*s + p].
    let split = n > 0 && s > 1;
    if split {
        let h = x.len() / w.max(1);
        sc.phases.resize(h * s * plen, A::zero());
    }
    let mut split_upto = 0;
    // In-window offset of each tap (row-major over the full kh x kw window).
    sc.tap_offset.clear();
    for ky in 0..g.h.kernel {
        for kx in 0..k {
            sc.tap_offset.push(ky * w + kx);
        }
    }
    for (oy, yr) in ys.iter().enumerate() {
        if yr.is_empty() {
            continue;
        }
        sink.rows_upto(yr.end);
        if split {
            for y in split_upto.max(yr.start)..yr.end {
                let row = &x[y * w..][..w];
                let dst = &mut sc.phases[y * s * plen..][..s * plen];
                if s == 2 {
                    let (p0, p1) = dst.split_at_mut(plen);
                    simd::deinterleave2(row, p0, p1);
                    if w % 2 == 1 {
                        p0[plen - 1] = row[w - 1];
                    }
                } else {
                    for (m, c) in row.chunks(s).enumerate() {
                        for (p, &v) in c.iter().enumerate() {
                            dst[p * plen + m] = v;
                        }
                    }
                }
            }
            split_upto = split_upto.max(yr.end);
        }
        if n > 0 {
            sc.tap.resize(n, 0);
            sc.tap_at.clear();
            for y in yr.clone() {
                for kx in 0..k {
                    let off = lo * s + kx - pad;
                    sc.tap_at.push(if s > 1 {
                        (y * s + off % s) * plen + off / s
                    } else {
                        y * w + off
                    });
                }
            }
            let src = if s > 1 { &sc.phases[..] } else { x };
            row_argmax(src, &sc.tap_at, &mut sc.tap);
        }
        // Windows in order: the left edge's, the full ones', the right edge's.
        for (ox, xr) in xs.iter().enumerate().take(lo) {
            if !xr.is_empty() {
                sink.put(oy * wo + ox, scalar(yr, xr));
            }
        }
        let base = yr.start * w + lo * s - pad;
        for (j, &t) in sc.tap[..n].iter().enumerate() {
            sink.put(oy * wo + lo + j, base + j * s + sc.tap_offset[t as usize]);
        }
        for (ox, xr) in xs.iter().enumerate().skip(hi) {
            if !xr.is_empty() {
                sink.put(oy * wo + ox, scalar(yr, xr));
            }
        }
    }
}

simd_fn! {
    /// The argmax tap of each of `tap.len()` consecutive windows (TF rule: the first tap is the
    /// initial candidate, a later one replaces it only if strictly greater, NaN never), tap `t`'s
    /// values of the windows being `src[tap_at[t]..][..tap.len()]`. A block of windows' values
    /// and taps stays in registers over every tap (a dispatched compare/blend pass per tap, in
    /// memory, was 43% of a one-thread NCHW W6). The last block overlaps the one before rather
    /// than run short (a short block ran masked and scalar: 29.8 -> 22.9 ms a one-thread NCHW
    /// W6 with the overlap, then 15.2 ms with [`greater_of`]).
    fn row_argmax<A: Accum>(src: &[A], tap_at: &[usize], tap: &mut [u32]) {
        let n = tap.len();
        if n >= ARGMAX_CHUNK {
            argmax_blocks::<A, ARGMAX_CHUNK>(src, tap_at, tap);
        } else if n >= 8 {
            argmax_blocks::<A, 8>(src, tap_at, tap);
        } else {
            argmax_blocks::<A, 1>(src, tap_at, tap);
        }
    }
}

/// [`row_argmax`] in blocks of `C` windows (`tap.len() >= C`), the last block ending at the
/// last window: windows it repeats get the same tap again.
#[inline(always)]
fn argmax_blocks<A: Accum, const C: usize>(src: &[A], tap_at: &[usize], tap: &mut [u32]) {
    let Some((&first, rest)) = tap_at.split_first() else {
        return;
    };
    let n = tap.len();
    let mut j0 = 0;
    while j0 < n {
        let j = j0.min(n - C);
        let mut v = [A::zero(); C];
        let mut i = [0u32; C];
        v.copy_from_slice(&src[first + j..][..C]);
        for (t, &at) in rest.iter().enumerate() {
            (v, i) = greater_of(v, i, &src[at + j..][..C], t as u32 + 1);
        }
        tap[j..j + C].copy_from_slice(&i);
        j0 += C;
    }
}

/// NHWC: for each window `o` of one image, the argmax cell (`y*W + x`) of every channel in
/// `best`, then `f(o, best)`. Channels are the vector; cells go in row-major order.
#[inline]
fn image_argmax<A: Accum>(
    ys: &[std::ops::Range<usize>],
    xs: &[std::ops::Range<usize>],
    w: usize,
    c: usize,
    x: &[A],
    sc: &mut ChannelArgmax<A>,
    mut f: impl FnMut(usize, &[u32]),
) {
    let (bv, best) = (&mut sc.value, &mut sc.cell);
    bv.resize(c, A::zero());
    best.resize(c, 0);
    let wo = xs.len();
    for (oy, yr) in ys.iter().enumerate() {
        for (ox, xr) in xs.iter().enumerate() {
            if yr.is_empty() || xr.is_empty() {
                continue;
            }
            window_argmax(x, (yr.clone(), xr.clone()), (w, c), bv, best);
            f(oy * wo + ox, best);
        }
    }
}

/// Where `src` is strictly greater than `best` (false for NaN on either side), its value and
/// `cell`; a select, not a branch.
#[inline(always)]
fn keep_greater<A: Accum>(best: &mut [A], at: &mut [u32], src: &[A], cell: usize) {
    for ((b, i), &s) in best.iter_mut().zip(at.iter_mut()).zip(src) {
        let gt = s > *b;
        *b = if gt { s } else { *b };
        *i = if gt { cell as u32 } else { *i };
    }
}

/// [`keep_greater`] on a block held in registers: where `src` is strictly greater than `v`
/// (false for NaN on either side), its value and `cell`. Into new arrays, not updated in
/// place: an update whose else-branch stores the old value back compiles to masked stores
/// (microcoded, slow on AMD: a one-thread NCHW W6 took 23.5 ms with them, 15.2 without).
#[inline(always)]
fn greater_of<A: Accum, const C: usize>(
    v: [A; C],
    i: [u32; C],
    src: &[A],
    cell: u32,
) -> ([A; C], [u32; C]) {
    let s = &src[..C];
    let (mut nv, mut ni) = ([A::zero(); C], [0u32; C]);
    for l in 0..C {
        let gt = s[l] > v[l];
        nv[l] = if gt { s[l] } else { v[l] };
        ni[l] = if gt { cell } else { i[l] };
    }
    (nv, ni)
}

/// Channels [`window_argmax`] keeps in registers at a time.
const ARGMAX_CHUNK: usize = 32;

simd_fn! {
    /// The argmax cell (`y*W + x`) of every channel over one window's cells (row-major; the first
    /// cell is the initial candidate, a later one replaces it only if strictly greater: the TF
    /// rule, NaN never replacing), into `best` (`bv`: scratch for the values). Compiled per SIMD
    /// level, the compare a select rather than a branch, each block of channels held in registers
    /// over all the cells (a branch per channel and cell, in memory, made NHWC max-pool rows 2.3x
    /// their NCHW time).
    fn window_argmax<A: Accum>(
        x: &[A],
        (yr, xr): (std::ops::Range<usize>, std::ops::Range<usize>),
        (w, c): (usize, usize),
        bv: &mut [A],
        best: &mut [u32],
    ) {
        let first = yr.start * w + xr.start;
        let whole = c / ARGMAX_CHUNK * ARGMAX_CHUNK;
        for c0 in (0..whole).step_by(ARGMAX_CHUNK) {
            let mut v = [A::zero(); ARGMAX_CHUNK];
            let mut i = [first as u32; ARGMAX_CHUNK];
            v.copy_from_slice(&x[first * c + c0..][..ARGMAX_CHUNK]);
            for y in yr.clone() {
                for xx in xr.clone() {
                    let cell = y * w + xx;
                    (v, i) = greater_of(v, i, &x[cell * c + c0..][..ARGMAX_CHUNK], cell as u32);
                }
            }
            best[c0..c0 + ARGMAX_CHUNK].copy_from_slice(&i);
        }
        if whole < c {
            let (bv, best) = (&mut bv[whole..c], &mut best[whole..c]);
            bv.copy_from_slice(&x[first * c + whole..(first + 1) * c]);
            best.fill(first as u32);
            for y in yr {
                for xx in xr.clone() {
                    let cell = y * w + xx;
                    keep_greater(bv, best, &x[cell * c + whole..(cell + 1) * c], cell);
                }
            }
        }
    }
}

fn per_unit(g: &PoolGeometry, layout: Layout) -> (usize, usize, usize) {
    // (units, x elements per unit, y elements per unit); a unit is a plane (NCHW) or an image.
    let (hw_in, hw_out) = (g.h.input * g.w.input, g.h.output * g.w.output);
    match layout {
        Layout::Nchw => (g.n * g.c, hw_in, hw_out),
        Layout::Nhwc => (g.n, hw_in * g.c, hw_out * g.c),
    }
}

/// Per-image scratch of [`image_argmax`]: the running best value and cell of each channel.
#[derive(Default)]
struct ChannelArgmax<A> {
    value: Vec<A>,
    cell: Vec<u32>,
}

#[derive(Default)]
struct Scratch<A> {
    /// `x`, `dy` and `dx` as the accumulation type where [`with_scratch`]'s f32 vectors cannot
    /// hold them (none of the element types now: f16/bf16 accumulate in f32, f32 and f64 are
    /// read and written in place).
    x: Vec<A>,
    dy: Vec<A>,
    acc: Vec<A>,
    channels: ChannelArgmax<A>,
    plane: PlaneArgmax<A>,
}

/// `src` as the accumulation type: itself (f32, f64), else widened into `v` (this thread's
/// scratch, kept across calls: f16/bf16 NHWC units are whole images, whose fresh buffers a
/// call had cost bf16 NHWC W6 page faults and zero fills, 26 ms a one-thread call against
/// f32's 4.5) or `own`.
fn acc_in<'a, T: Element>(
    src: &'a [T],
    v: &'a mut Vec<f32>,
    own: &'a mut Vec<T::Acc>,
) -> &'a [T::Acc] {
    match T::as_acc_slice(src) {
        Some(s) => s,
        None => {
            let b = scratch_or_own(v, own, src.len());
            T::slice_to_acc(src, b);
            b
        }
    }
}

/// `body` on `dx` as the accumulation type: in place (f32, f64), else staged in `v` (or
/// `own`, as [`acc_in`]) and rounded into `dx` once after. A staged buffer holds whatever it
/// last held: `body` writes every element.
fn with_acc_out<T: Element, R>(
    dx: &mut [T],
    v: &mut Vec<f32>,
    own: &mut Vec<T::Acc>,
    body: impl FnOnce(&mut [T::Acc]) -> R,
) -> R {
    if let Some(acc) = T::as_acc_slice_mut(dx) {
        return body(acc);
    }
    let acc = scratch_or_own(v, own, dx.len());
    let out = body(acc);
    T::slice_from_acc(acc, dx);
    out
}

pub fn forward<T: Element>(
    g: &PoolGeometry,
    layout: Layout,
    x: &[T],
    y: &mut [T],
    mut argmax: Option<&mut [i64]>,
) {
    let (units, xl, yl) = per_unit(g, layout);
    if y.is_empty() {
        return;
    }
    // Windows with no in-bounds cell keep these.
    y.fill(T::from_f64(f64::NEG_INFINITY));
    if let Some(a) = argmax.as_deref_mut() {
        a.fill(-1);
    }
    if xl == 0 {
        return;
    }
    // One optional argmax chunk per unit: no index buffer when the caller wants none.
    let mut args: Vec<Option<&mut [i64]>> = match argmax {
        Some(a) => a.chunks_mut(yl).map(Some).collect(),
        None => (0..units).map(|_| None).collect(),
    };
    let (ys, xs, w, c) = (ranges(&g.h), ranges(&g.w), g.w.input, g.c);
    y.par_chunks_mut(yl)
        .zip(args.par_iter_mut())
        .zip(x.par_chunks(xl))
        .enumerate()
        .for_each_init(Scratch::<T::Acc>::default, |s, (u, ((yu, au), xu))| {
            with_scratch(|[xv]| {
                let base = (u * xl) as i64;
                let xa = acc_in(xu, xv, &mut s.x);
                let mut put = |o: usize, at: usize| {
                    yu[o] = xu[at];
                    if let Some(a) = au.as_deref_mut() {
                        a[o] = base + at as i64;
                    }
                };
                match layout {
                    Layout::Nchw => plane_argmax(g, &ys, &xs, xa, &mut s.plane, &mut Put(put)),
                    Layout::Nhwc => image_argmax(&ys, &xs, w, c, xa, &mut s.channels, |o, best| {
                        for (ch, &i) in best.iter().enumerate() {
                            put(o * c + ch, i as usize * c + ch);
                        }
                    }),
                }
            })
        });
}

pub(crate) fn grad<T: Element>(g: &PoolGeometry, layout: Layout, dy: &[T], x: &[T], dx: &mut [T]) {
    let (_, xl, yl) = per_unit(g, layout);
    if dx.is_empty() {
        return;
    }
    if yl == 0 {
        dx.fill(T::default());
        return;
    }
    let (ys, xs, w, c) = (ranges(&g.h), ranges(&g.w), g.w.input, g.c);
    let zero = T::Acc::zero();
    dx.par_chunks_mut(xl)
        .zip(x.par_chunks(xl))
        .zip(dy.par_chunks(yl))
        .for_each_init(Scratch::<T::Acc>::default, |s, ((dxu, xu), dyu)| {
            with_scratch(|[xv, dyv, accv]| {
                let Scratch {
                    x: xo,
                    dy: dyo,
                    acc: acco,
                    channels,
                    plane,
                } = s;
                let xa = acc_in(xu, xv, xo);
                let dya = acc_in(dyu, dyv, dyo);
                with_acc_out(dxu, accv, acco, |acc| match layout {
                    Layout::Nchw => {
                        let mut sink = PlaneGrad {
                            acc,
                            dy: dya,
                            w,
                            zeroed: 0,
                        };
                        plane_argmax(g, &ys, &xs, xa, plane, &mut sink);
                        // Rows no window reached.
                        sink.rows_upto(g.h.input);
                    }
                    Layout::Nhwc => {
                        acc.fill(zero);
                        image_argmax(&ys, &xs, w, c, xa, channels, |o, best| {
                            for (ch, &i) in best.iter().enumerate() {
                                let at = i as usize * c + ch;
                                acc[at] = acc[at] + dya[o * c + ch];
                            }
                        })
                    }
                })
            })
        });
}

simd_fn! {
    /// One unit of [`grad_with_argmax`]: `acc` zeroed, then `acc[a - lo] += d` for each `dy` value
    /// `d` and its index `a`, in window order; `c` channels (NHWC) or 1 (NCHW). The first window
    /// whose index is neither -1 nor in `acc`'s range and its channel stops it (returned; `acc`
    /// is then partly written). Compiled per SIMD level for the zero fill (one-thread W6 on a
    /// Zen 4: a quarter of the time in the baseline build's 16-byte stores).
    fn scatter_unit<A: Accum>(
        acc: &mut [A],
        dy: &[A],
        argmax: &[i64],
        lo: i64,
        c: usize,
        lazy_zero: bool,
    ) -> Option<usize> {
        if lazy_zero {
            scatter_by_channel::<_, true>(acc, dy, argmax, lo, c)
        } else {
            acc.fill(A::zero());
            scatter_by_channel::<_, false>(acc, dy, argmax, lo, c)
        }
    }
}

/// [`scatter`] with the channel test for `c` channels: the window's channel is `o % c`. NCHW
/// (c == 1): always in it; another power of two by the low bits of `i ^ o` (W6 NHWC 1.07x on one
/// thread, Zen 4, against the counted channel `ch` and a mask); any other `c` divides (a
/// division per window).
#[inline(always)]
fn scatter_by_channel<A: Accum, const LAZY: bool>(
    acc: &mut [A],
    dy: &[A],
    argmax: &[i64],
    lo: i64,
    c: usize,
) -> Option<usize> {
    if c == 1 {
        scatter::<_, LAZY>(acc, dy, argmax, lo, c, |_, _, _| true)
    } else if c.is_power_of_two() {
        scatter::<_, LAZY>(acc, dy, argmax, lo, c, |i, o, _| (i ^ o) & (c - 1) == 0)
    } else {
        scatter::<_, LAZY>(acc, dy, argmax, lo, c, |i, _, ch| i % c == ch)
    }
}

/// Elements [`scatter`] zeroes at a time, ahead of the indices (16 KiB of f32: in L1 with the
/// `dy` and argmax streams).
const ZERO_CHUNK: usize = 4096;

/// The largest unit [`grad_with_argmax`] zeroes piecemeal (see there).
const LAZY_ZERO_MAX_BYTES: usize = 1 << 20;

/// [`scatter_unit`]'s loop, `in_channel(i, o, ch)` the channel test of index `i` (in the unit)
/// for window `o` (in the unit), whose channel is `ch`. `acc` is zeroed on entry,
/// or with `LAZY` not at all: then it is zeroed [`ZERO_CHUNK`] elements at a time as the indices
/// reach it, just before the adds into it, and what none reached at the end. Each cell is zeroed
/// before its first add and its adds keep window order: the sums of a zero fill first. (Two
/// loops: the lazy one's bound, a variable, cost the other 4%-5% on W6 NHWC.)
#[inline(always)]
fn scatter<A: Accum, const LAZY: bool>(
    acc: &mut [A],
    dy: &[A],
    argmax: &[i64],
    lo: i64,
    c: usize,
    in_channel: impl Fn(usize, usize, usize) -> bool,
) -> Option<usize> {
    let xl = acc.len();
    // `acc[..zeroed]` is zeroed.
    let mut zeroed = if LAZY { 0 } else { xl };
    // The window's channel, counted rather than divided for (NHWC: o % c; NCHW: 0); dead code
    // where `in_channel` ignores it.
    let mut ch = 0usize;
    for (o, (&d, &a)) in dy.iter().zip(argmax).enumerate() {
        // An index below 0 wraps past any length.
        let i = a.wrapping_sub(lo) as usize;
        if !LAZY {
            if i < xl && in_channel(i, o, ch) {
                acc[i] = acc[i] + d;
            } else if a != -1 {
                return Some(o);
            }
        } else if let Some(v) = acc[..zeroed].get_mut(i).filter(|_| in_channel(i, o, ch)) {
            *v = *v + d;
        } else if i < xl && in_channel(i, o, ch) {
            let end = ((i / ZERO_CHUNK + 1) * ZERO_CHUNK).min(xl);
            acc[zeroed..end].fill(A::zero());
            zeroed = end;
            acc[i] = acc[i] + d;
        } else if a != -1 {
            return Some(o);
        }
        ch += 1;
        if ch == c {
            ch = 0;
        }
    }
    acc[zeroed..].fill(A::zero());
    None
}

simd_fn! {
    /// One NCHW plane of [`grad_with_argmax`] for 16-bit types (f32 sums), row by row: each
    /// window row's `dy` widened as it is reached and scattered as [`scatter_unit`] does into
    /// `acc` (the plane's sums, zeroed a cell row ahead of the first window that reaches it),
    /// and each cell row rounded into `dx` as soon as no later window row reaches it. The
    /// staged plane (widen it all, scatter, round it all) ran its three streams one after
    /// another. The same sums and roundings. False, with `dx` partly written, on an index
    /// outside the cell rows its window row reaches (-1 aside): the caller stages the plane
    /// instead, which adds an in-plane index anywhere and names a bad one. (NHWC images ran
    /// slower this way on one thread, 2.2-2.8 ms against 1.8-2.0, and stay staged.)
    fn scatter_rounding_rows<T: Element>(
        g: &PoolGeometry,
        dx: &mut [T],
        dy: &[T],
        argmax: &[i64],
        lo: i64,
        acc: &mut [f32],
        row: &mut [f32],
    ) -> bool {
        let cvt = simd::BlockConvert::new();
        let (Some(acc), Some(row)) = (
            <T::Acc as Accum>::from_f32_mut(&mut acc[..dx.len()]),
            <T::Acc as Accum>::from_f32_mut(&mut row[..g.w.output]),
        ) else {
            return false;
        };
        let iw = g.w.input;
        // Cells before input row `r` (clamped to the input).
        let cells_before = |r: usize| r.min(g.h.input) * iw;
        let (mut zeroed, mut rounded) = (0usize, 0usize);
        for (oy, (dyr, ar)) in dy.chunks(row.len()).zip(argmax.chunks(row.len())).enumerate() {
            let reach = cells_before((oy * g.h.stride + g.h.kernel).saturating_sub(g.h.pad_before));
            if reach > zeroed {
                acc[zeroed..reach].fill(T::Acc::zero());
                zeroed = reach;
            }
            let d = &mut row[..dyr.len()];
            cvt.widen(dyr, d);
            let span = zeroed - rounded;
            for (&v, &a) in d.iter().zip(ar) {
                // An index below 0 wraps past any length.
                let i = a.wrapping_sub(lo) as usize;
                if i.wrapping_sub(rounded) < span {
                    acc[i] = acc[i] + v;
                } else if a != -1 {
                    return false;
                }
            }
            let done = cells_before(((oy + 1) * g.h.stride).saturating_sub(g.h.pad_before));
            if done > rounded {
                if done > zeroed {
                    acc[zeroed..done].fill(T::Acc::zero());
                    zeroed = done;
                }
                cvt.round(&acc[rounded..done], &mut dx[rounded..done]);
                rounded = done;
            }
        }
        acc[zeroed..].fill(T::Acc::zero());
        cvt.round(&acc[rounded..], &mut dx[rounded..]);
        true
    }
}

/// Gradient from stored argmax: each unit (plane or image) scatters its `dy` to the cells its
/// argmax names, in window order. Every index must be -1 or lie in the same unit and channel
/// as its window; the check is fused into the scatter, and on a bad index `dx` is filled with
/// NaN (never left looking valid) and the error names the first offending position.
pub(crate) fn grad_with_argmax<T: Element>(
    g: &PoolGeometry,
    layout: Layout,
    dy: &[T],
    argmax: &[i64],
    dx: &mut [T],
) -> Result<()> {
    let (_, xl, yl) = per_unit(g, layout);
    if dx.is_empty() {
        return Ok(());
    }
    if yl == 0 {
        dx.fill(T::default());
        return Ok(());
    }
    let c = if layout == Layout::Nhwc { g.c } else { 1 };
    // Small units (NCHW planes: 50 KB on W6) are zeroed as the scatter reaches them, while in
    // cache: W6 NCHW 1.17x on one thread (Zen 4). A unit of megabytes (W6's NHWC images, 3.2 MB)
    // is zeroed whole first: one large fill ran faster there (piecemeal: 0.88x-0.93x).
    let lazy_zero = xl * std::mem::size_of::<T::Acc>() <= LAZY_ZERO_MAX_BYTES;
    // 16-bit NCHW planes widen and round row by row (see there); f32 and f64 scatter in place.
    let rows_fused = layout == Layout::Nchw && matches!(T::DTYPE, DType::F16 | DType::BF16);
    let bad = dx
        .par_chunks_mut(xl)
        .zip(dy.par_chunks(yl).zip(argmax.par_chunks(yl)))
        .enumerate()
        .map_init(Scratch::<T::Acc>::default, |s, (u, (dxu, (dyu, au)))| {
            with_scratch(|[dyv, accv]| {
                if rows_fused {
                    accv.resize(xl, 0.0);
                    dyv.resize(g.w.output, 0.0);
                    if scatter_rounding_rows(g, dxu, dyu, au, (u * xl) as i64, accv, dyv) {
                        return None;
                    }
                }
                let dya = acc_in(dyu, dyv, &mut s.dy);
                let lo = (u * xl) as i64;
                with_acc_out(dxu, accv, &mut s.acc, |acc| {
                    scatter_unit(acc, dya, au, lo, c, lazy_zero)
                })
                .map(|o| (u * yl + o, au[o], lo))
            })
        })
        .flatten()
        .min();
    if let Some((pos, a, lo)) = bad {
        dx.fill(T::from_f64(f64::NAN));
        return Err(Error::shape(
            "max_pool_grad_with_argmax",
            "argmax",
            format!(
                "index {a} at position {pos} does not lie in its window's {} (flat range {lo}..{}, channel {})",
                if c == 1 { "plane" } else { "image" },
                lo + xl as i64,
                pos % yl % c
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::geometry::window::Padding;
    use crate::{Layout, MaxPoolAttrs, TensorRef};
    use half::bf16;

    /// bf16 widened, summed in f32 and rounded once: the bits of the f32 kernels on the widened
    /// inputs rounded to bf16, in both layouts, recomputed and stored argmax, with the workers'
    /// scratch (where bf16's staged units live) poisoned with NaN first, so a staged element
    /// the kernels failed to write would show.
    #[test]
    fn bf16_staged_in_scratch_matches_f32_rounded() {
        let (n, c, h, w) = (3, 24, 13, 11);
        let attrs = MaxPoolAttrs::new([3, 3])
            .strides([2, 2])
            .padding(Padding::Same);
        let mut seed = 0x00c0_ffee_u64;
        let mut rnd = |len: usize| -> Vec<bf16> {
            (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // Few distinct values: ties, which the first-max rule settles.
                    bf16::from_f32(((seed >> 40) % 17) as f32 * 0.375 - 3.0)
                })
                .collect()
        };
        let widen = |v: &[bf16]| v.iter().map(|x| x.to_f32()).collect::<Vec<f32>>();
        for layout in [Layout::Nchw, Layout::Nhwc] {
            let shape = layout.shape(crate::tensor::Dims { n, c, h, w });
            let x = rnd(n * c * h * w);
            let (_, arg) =
                crate::max_pool(TensorRef::new(&x, shape, layout), &attrs, true).unwrap();
            let arg = arg.unwrap();
            let (y, _) = crate::max_pool(TensorRef::new(&x, shape, layout), &attrs, false).unwrap();
            let dy = rnd(y.data.len());
            let (x32, dy32) = (widen(&x), widen(&dy));
            let mut want = vec![f32::NAN; x.len()];
            crate::max_pool_grad_into(
                TensorRef::new(&dy32, y.shape, layout),
                TensorRef::new(&x32, shape, layout),
                None,
                &attrs,
                &mut want,
            )
            .unwrap();
            let mut want_arg = vec![f32::NAN; x.len()];
            crate::max_pool_grad_with_argmax_into(
                TensorRef::new(&dy32, y.shape, layout),
                &arg,
                shape,
                &attrs,
                &mut want_arg,
            )
            .unwrap();
            assert_eq!(want, want_arg, "{layout}: the two f32 gradients differ");
            for stored in [false, true] {
                crate::cpu::scratch::poison_worker_scratch(8, x.len());
                let mut got = vec![bf16::NAN; x.len()];
                if stored {
                    crate::max_pool_grad_with_argmax_into(
                        TensorRef::new(&dy, y.shape, layout),
                        &arg,
                        shape,
                        &attrs,
                        &mut got,
                    )
                } else {
                    crate::max_pool_grad_into(
                        TensorRef::new(&dy, y.shape, layout),
                        TensorRef::new(&x, shape, layout),
                        None,
                        &attrs,
                        &mut got,
                    )
                }
                .unwrap();
                for (k, (g, &f)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(
                        g.to_bits(),
                        bf16::from_f32(f).to_bits(),
                        "{layout} stored={stored} element {k}"
                    );
                }
            }
        }
    }

    /// The 16-bit NCHW planes scattered row by row: with indices from `max_pool` (in their
    /// windows) the rows path runs on every plane and gives the bits of the f32 scatter on the
    /// widened `dy`, rounded once; with indices anywhere in their plane (most outside their
    /// window, some -1) the planes fall back to the staged scatter, with the same bits; with
    /// an index in another plane the call fails and fills `dx` with NaN. Geometries with
    /// padding before and after, overlapping windows, and a vertical stride above the window
    /// (rows no window reaches).
    #[test]
    fn sixteen_bit_rows_match_the_f32_scatter_rounded() {
        check_rows::<half::f16>();
        check_rows::<bf16>();
    }

    fn check_rows<T: crate::Element<Acc = f32>>() {
        use super::*;
        let mut seed = 0x0bad_cafe_u64;
        let mut next = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        };
        let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
        for (h, w, k, st, pad) in [
            (13, 11, [3, 3], [2, 2], Padding::Same),
            (12, 20, [2, 2], [2, 2], Padding::Valid),
            (9, 17, [3, 3], [1, 1], Padding::Same),
            (14, 10, [2, 3], [3, 2], Padding::Explicit([[1, 1], [2, 0]])),
        ] {
            let (n, c) = (2, 3);
            let attrs = MaxPoolAttrs::new(k).strides(st).padding(pad);
            let shape = [n, c, h, w];
            let x: Vec<T> = (0..n * c * h * w)
                .map(|_| T::from_f64((next() % 9) as f64))
                .collect();
            let (y, arg) =
                crate::max_pool(TensorRef::new(&x, shape, Layout::Nchw), &attrs, true).unwrap();
            let valid = arg.unwrap();
            let dy: Vec<T> = (0..y.data.len())
                .map(|_| T::from_f64((next() % 2001) as f64 / 1000.0 - 1.0))
                .collect();
            let (xl, yl) = (h * w, y.data.len() / (n * c));
            let anywhere: Vec<i64> = (0..y.data.len())
                .map(|o| match next() % 10 {
                    0 => -1,
                    _ => (o / yl * xl + next() as usize % xl) as i64,
                })
                .collect();
            let scattered = |argmax: &[i64]| {
                let mut acc = vec![0.0f32; n * c * xl];
                for (d, &a) in dy.iter().zip(argmax) {
                    if a >= 0 {
                        acc[a as usize] += d.to_acc();
                    }
                }
                acc.iter().map(|&v| T::from_acc(v)).collect::<Vec<T>>()
            };
            let what = format!("{:?} {shape:?} {k:?}/{st:?}", T::DTYPE);
            // The rows path itself, plane by plane, on scratch holding NaN.
            let g = super::super::plan_max_pool("t", shape, Layout::Nchw, &attrs).unwrap();
            let want = scattered(&valid);
            for p in 0..n * c {
                let mut got = vec![T::from_f64(f64::NAN); xl];
                let (mut acc, mut row) = (vec![f32::NAN; xl], vec![f32::NAN; g.w.output]);
                let (dyp, ap) = (&dy[p * yl..][..yl], &valid[p * yl..][..yl]);
                let lo = (p * xl) as i64;
                assert!(
                    scatter_rounding_rows(&g, &mut got, dyp, ap, lo, &mut acc, &mut row),
                    "{what} plane {p}: indices in their windows refused"
                );
                assert_eq!(bits(&got), bits(&want[p * xl..][..xl]), "{what} plane {p}");
            }
            for (argmax, name) in [(&valid, "valid"), (&anywhere, "anywhere")] {
                crate::cpu::scratch::poison_worker_scratch(8, n * c * xl);
                let mut got = vec![T::from_f64(f64::NAN); x.len()];
                crate::max_pool_grad_with_argmax_into(
                    TensorRef::new(&dy, y.shape, Layout::Nchw),
                    argmax,
                    shape,
                    &attrs,
                    &mut got,
                )
                .unwrap();
                assert_eq!(bits(&got), bits(&scattered(argmax)), "{what} {name}");
            }
            let mut bad = valid.clone();
            bad[yl + 1] = 0;
            let mut got = vec![T::from_f64(0.0); x.len()];
            let e = crate::max_pool_grad_with_argmax_into(
                TensorRef::new(&dy, y.shape, Layout::Nchw),
                &bad,
                shape,
                &attrs,
                &mut got,
            );
            assert!(e.is_err(), "{what}: an index in another plane passed");
            assert!(
                got.iter().all(|v| v.to_f64().is_nan()),
                "{what}: dx not NaN"
            );
        }
    }
}

//! CPU gather for every resize op: `dst[i, j] = sum_a sum_b wy[a] * wx[b] * src[y[a], x[b]]`.

use crate::cpu::simd::simd_fn;
use crate::dtype::{Accum, DType, Element};
use crate::geometry::resize::{AxisTable, ResizePlan};
use crate::tensor::Layout;
use num_traits::Zero;
use rayon::prelude::*;
use std::marker::PhantomData;

pub(crate) use crate::cpu::simd::axpy;
use crate::cpu::simd::{self, BlockConvert, BAND};

/// `src` as the accumulation type: itself for f32/f64, widened into `buf` for f16/bf16.
#[inline]
pub(crate) fn acc_view<'a, T: Element>(src: &'a [T], buf: &'a mut Vec<T::Acc>) -> &'a [T::Acc] {
    match T::as_acc_slice(src) {
        Some(s) => s,
        None => {
            buf.resize(src.len(), T::Acc::zero());
            T::slice_to_acc(src, buf);
            buf
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

/// The interior of a horizontal table where destination `j` reads exactly the sources
/// `s*j + c + t`, `t < k` (every integer-ratio resize: 2x up or down, ...). There the gather is
/// `k` contiguous multiply-adds over phase-split rows, which vectorise; the summation order
/// (ascending source) is the CSR path's, so both give bit-identical results.
struct Affine<A> {
    s: usize,
    c: isize,
    k: usize,
    lo: usize,
    hi: usize,
    /// `w[t * (hi - lo) + (j - lo)]`.
    w: Vec<A>,
}

impl<A: Accum> Affine<A> {
    fn detect(t: &AxisTable<A>) -> Option<Self> {
        let d = t.dst_len();
        if d < 8 {
            return None;
        }
        let count = |j: usize| (t.offsets[j + 1] - t.offsets[j]) as usize;
        let first = |j: usize| t.index[t.offsets[j] as usize] as isize;
        let m = d / 2;
        let k = count(m);
        if k == 0 || count(m + 1) != k {
            return None;
        }
        let s = first(m + 1) - first(m);
        if s < 1 {
            return None;
        }
        let c = first(m) - s * m as isize;
        let fits = |j: usize| {
            count(j) == k
                && (0..k).all(|u| {
                    t.index[t.offsets[j] as usize + u] as isize == s * j as isize + c + u as isize
                })
        };
        if !fits(m) {
            return None;
        }
        let (mut lo, mut hi) = (m, m + 1);
        while lo > 0 && fits(lo - 1) {
            lo -= 1;
        }
        while hi < d && fits(hi) {
            hi += 1;
        }
        if 2 * (hi - lo) < d {
            return None;
        }
        let n = hi - lo;
        let mut w = vec![A::zero(); k * n];
        for j in lo..hi {
            for u in 0..k {
                w[u * n + (j - lo)] = t.weight[t.offsets[j] as usize + u];
            }
        }
        Some(Affine {
            s: s as usize,
            c,
            k,
            lo,
            hi,
            w,
        })
    }
}

/// Dense weight blocks for tables without affine structure (non-integer ratios): see
/// [`simd::banded`]. Used on rows that are all finite; others take the CSR path.
struct Banded<A> {
    /// Destinations that list a source twice (the last row of a linear map): recomputed by
    /// the CSR path after the blocks, so the sum keeps CSR's exact order.
    fixup: Vec<usize>,
    lo: Vec<u32>,
    len: Vec<u32>,
    off: Vec<usize>,
    w: Vec<A>,
}

impl<A: Accum> Banded<A> {
    fn build(t: &AxisTable<A>) -> Self {
        let d = t.dst_len();
        let blocks = d.div_ceil(BAND);
        let mut fixup = Vec::new();
        let (mut lo, mut len, mut off, mut w) = (
            Vec::with_capacity(blocks),
            Vec::with_capacity(blocks),
            Vec::with_capacity(blocks),
            Vec::new(),
        );
        for b in 0..blocks {
            let js = b * BAND..((b + 1) * BAND).min(d);
            let (a, z) = (t.offsets[js.start] as usize, t.offsets[js.end] as usize);
            let (l, h) = match (t.index[a..z].iter().min(), t.index[a..z].iter().max()) {
                (Some(&l), Some(&h)) => (l, h + 1),
                _ => (0, 0),
            };
            lo.push(l);
            len.push(h - l);
            off.push(w.len());
            let base = w.len();
            w.resize(base + (h - l) as usize * BAND, A::zero());
            for j in js.clone() {
                let ix = &t.index[t.offsets[j] as usize..t.offsets[j + 1] as usize];
                if !ix.windows(2).all(|p| p[0] < p[1]) {
                    fixup.push(j);
                    continue;
                }
                for (i, wt) in t.entries(j) {
                    w[base + (i - l as usize) * BAND + (j - js.start)] = wt;
                }
            }
        }
        Banded {
            fixup,
            lo,
            len,
            off,
            w,
        }
    }

    fn cost(&self) -> usize {
        self.w.len() / 4 + self.lo.len() * 16
    }
}

/// Outputs per block of [`Permuted`]: one AVX register of f32.
const PERMUTE_LANES: usize = 8;

/// Tables whose every block of [`PERMUTE_LANES`] outputs reads at most that many consecutive
/// sources (a downscale's gradient: 97 -> 256 on W2, one tap an output): one load of the
/// block's sources, then per tap a register permute, a multiply and an add, against
/// [`simd::banded`]'s dense `span x BAND` block (four times the products on W2, and 38% of
/// its one-thread samples; W2 NCHW 1.10x faster on one thread, 1.13x on two, Zen 4). f32
/// accumulation with AVX2 only; the others keep [`Banded`].
struct Permuted<A> {
    /// Destinations that list a source twice: recomputed by the CSR path, as in [`Banded`].
    fixup: Vec<usize>,
    /// Each block's first source, moved down where the block's window would pass the row's end.
    lo: Vec<u32>,
    /// Taps per block, the most of any output: outputs with fewer get zero weights after
    /// theirs, which keep the CSR sum's bits on finite rows (`a + 0*v` is `a` for `a != 0`,
    /// and a zero sum is `+0` either way).
    taps: usize,
    /// `(block * taps + t) * PERMUTE_LANES + l`: lane `l`'s `t`-th source, from `lo`.
    index: Vec<i32>,
    /// Its weight, laid out as `index`.
    w: Vec<A>,
}

impl<A: Accum> Permuted<A> {
    fn build(t: &AxisTable<A>) -> Option<Self> {
        #[cfg(target_arch = "x86_64")]
        let avx2 = simd::avx2().is_some();
        #[cfg(not(target_arch = "x86_64"))]
        let avx2 = false;
        if !avx2 || A::as_f32(&[A::zero()]).is_none() {
            return None;
        }
        let (d, n) = (t.dst_len(), t.src_len);
        if n < PERMUTE_LANES {
            return None;
        }
        let blocks = d / PERMUTE_LANES;
        // At least one (of zero weight where the blocks read nothing): the kernels step
        // through the table by `taps`.
        let taps = (0..blocks * PERMUTE_LANES)
            .map(|j| t.offsets[j + 1] - t.offsets[j])
            .max()?
            .max(1) as usize;
        let mut fixup = Vec::new();
        let mut lo = Vec::with_capacity(blocks);
        let mut index = vec![0i32; blocks * taps * PERMUTE_LANES];
        let mut w = vec![A::zero(); index.len()];
        for b in 0..blocks {
            let js = b * PERMUTE_LANES..(b + 1) * PERMUTE_LANES;
            let (a, z) = (t.offsets[js.start] as usize, t.offsets[js.end] as usize);
            let (first, last) = match (t.index[a..z].iter().min(), t.index[a..z].iter().max()) {
                (Some(&l), Some(&h)) => (l as usize, h as usize),
                _ => (0, 0),
            };
            if last - first >= PERMUTE_LANES {
                return None;
            }
            let l = first.min(n - PERMUTE_LANES);
            lo.push(l as u32);
            for j in js.clone() {
                let ix = &t.index[t.offsets[j] as usize..t.offsets[j + 1] as usize];
                if !ix.windows(2).all(|p| p[0] < p[1]) {
                    fixup.push(j);
                    continue;
                }
                for (tap, (i, wt)) in t.entries(j).enumerate() {
                    let at = (b * taps + tap) * PERMUTE_LANES + (j - js.start);
                    index[at] = (i - l) as i32;
                    w[at] = wt;
                }
            }
        }
        Some(Permuted {
            fixup,
            lo,
            taps,
            index,
            w,
        })
    }

    /// Instructions per row, as [`Horizontal::cost`] counts them.
    fn cost(&self) -> usize {
        self.lo.len() * (2 + 4 * self.taps)
    }

    /// The whole blocks of `out`; false where this type cannot take this path.
    fn run(&self, row: &[A], out: &mut [A]) -> bool {
        permuted(row, (&self.lo, self.taps, &self.index), &self.w, out)
    }

    /// For the destination rows `rows` of a plane, into `out` (`rows.len()` rows of the
    /// table's length), the whole blocks of `sum over ty's entries (r, wy), in order, of wy *
    /// (this pass of plane row r)`, from zero, each term's pass summed in registers (the bits
    /// of [`Permuted::run`] into rows, then [`axpy`]s into a zeroed row); rows without entries
    /// zeroed whole. False (nothing to rely on written) where this type cannot take this path
    /// or a row has more than [`FUSED_TERMS`] entries.
    fn run_rows(
        &self,
        (plane, width): (&[A], usize),
        ty: &AxisTable<A>,
        rows: std::ops::Range<usize>,
        out: &mut [A],
    ) -> bool {
        permuted_rows(
            (plane, width),
            (&ty.offsets, &ty.index, &ty.weight),
            (rows.start, rows.len()),
            (&self.lo, self.taps, &self.index),
            &self.w,
            out,
        )
    }
}

/// The most vertical terms [`permuted_rows`] takes in registers; rows with more take the
/// horizontal-first order.
const FUSED_TERMS: usize = 4;

simd_fn! {
    /// [`Permuted`]'s blocks, compiled per SIMD level (the AVX2 kernel inlined where the level
    /// has it, once per tap count up to four); true when it ran.
    fn permuted<A: Accum>(
        row: &[A],
        (lo, taps, index): (&[u32], usize, &[i32]),
        w: &[A],
        out: &mut [A],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        if let (Some(simd), Some(row), Some(w), Some(out)) =
            (simd::avx2(), A::as_f32(row), A::as_f32(w), A::as_f32_mut(out))
        {
            let rows = [(row, 0f32)];
            let (index, _) = index.as_chunks::<PERMUTE_LANES>();
            let (w, _) = w.as_chunks::<PERMUTE_LANES>();
            // A constant tap count per arm: the tap loop unrolled, no bounds checks in it
            // (W2 NCHW's horizontal passes alone, one thread: 8.0-8.7 -> 4.9-6.0 ms in one
            // slow spell of the host, Zen 4).
            match taps {
                1 => permuted_avx::<false>(simd, &rows, lo, taps_of::<1>(index, w), out),
                2 => permuted_avx::<false>(simd, &rows, lo, taps_of::<2>(index, w), out),
                3 => permuted_avx::<false>(simd, &rows, lo, taps_of::<3>(index, w), out),
                4 => permuted_avx::<false>(simd, &rows, lo, taps_of::<4>(index, w), out),
                t => {
                    let blocks = index.chunks_exact(t).zip(w.chunks_exact(t));
                    permuted_avx::<false>(simd, &rows, lo, blocks, out)
                }
            }
            return true;
        }
        false
    }
}

simd_fn! {
    /// [`Permuted::run_rows`], compiled per SIMD level like [`permuted`], once per tap count
    /// and term count up to two; the rows' loop inside (with a dispatched call per row, W2 NCHW
    /// ran 0.86x of this on one thread, Zen 4).
    fn permuted_rows<A: Accum>(
        (plane, width): (&[A], usize),
        (offsets, rindex, rweight): (&[u32], &[u32], &[A]),
        (first, count): (usize, usize),
        (lo, taps, index): (&[u32], usize, &[i32]),
        w: &[A],
        out: &mut [A],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        if let (Some(simd), Some(plane), Some(rweight), Some(w), Some(out)) = (
            simd::avx2(),
            A::as_f32(plane),
            A::as_f32(rweight),
            A::as_f32(w),
            A::as_f32_mut(out),
        ) {
            let (index, _) = index.as_chunks::<PERMUTE_LANES>();
            let (w, _) = w.as_chunks::<PERMUTE_LANES>();
            let Some(out_width) = out.len().checked_div(count) else {
                return true;
            };
            for (i, o) in (first..first + count).zip(out.chunks_exact_mut(out_width)) {
                let (a, z) = (offsets[i] as usize, offsets[i + 1] as usize);
                if z - a > FUSED_TERMS {
                    return false;
                }
                let mut rows = [(&plane[..0], 0f32); FUSED_TERMS];
                for (slot, (&r, &wy)) in rows.iter_mut().zip(rindex[a..z].iter().zip(&rweight[a..z])) {
                    let r = r as usize;
                    *slot = (&plane[r * width..(r + 1) * width], wy);
                }
                match (taps, z - a) {
                    (_, 0) => o.fill(0.0),
                    (1, 1) => permuted_avx::<true>(simd, &rows[..1], lo, taps_of::<1>(index, w), o),
                    (1, 2) => permuted_avx::<true>(simd, &rows[..2], lo, taps_of::<1>(index, w), o),
                    (2, 1) => permuted_avx::<true>(simd, &rows[..1], lo, taps_of::<2>(index, w), o),
                    (2, 2) => permuted_avx::<true>(simd, &rows[..2], lo, taps_of::<2>(index, w), o),
                    (t, n) => {
                        let blocks = index.chunks_exact(t).zip(w.chunks_exact(t));
                        permuted_avx::<true>(simd, &rows[..n], lo, blocks, o)
                    }
                }
            }
            return true;
        }
        false
    }
}

/// Each block's `TAPS` index and weight vectors, as slices of a constant length.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn taps_of<'t, const TAPS: usize>(
    index: &'t [[i32; PERMUTE_LANES]],
    w: &'t [[f32; PERMUTE_LANES]],
) -> impl Iterator<Item = (&'t [[i32; PERMUTE_LANES]], &'t [[f32; PERMUTE_LANES]])> {
    let (index, _) = index.as_chunks::<TAPS>();
    let (w, _) = w.as_chunks::<TAPS>();
    index
        .iter()
        .zip(w)
        .map(|(i, w)| (i.as_slice(), w.as_slice()))
}

/// For the whole blocks `b` of `out` (lanes `l`), with `h(row) = sum over taps t, in order, of
/// w[..] * row[lo[b] + index[..]]` from zero (`(b * taps + t) * 8 + l` indexes `index` and
/// `w`): `out[8b + l] = h(rows[0].0)` for a horizontal pass alone (`SCALED` false), or, for
/// rows of a plane summed with their vertical weights (`SCALED`), `sum over (row, wy), in
/// order, of wy * h(row)`, from zero. A multiply then an add throughout (no fused
/// multiply-add): the bits of the CSR sums, and of [`axpy`]s of passed rows into a zeroed row.
/// Inlined into callers compiled with AVX2; constant `taps` and `rows.len()` unroll the loops.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn permuted_avx<'t, const SCALED: bool>(
    simd: pulp::x86::V3,
    rows: &[(&[f32], f32)],
    lo: &[u32],
    blocks: impl Iterator<Item = (&'t [[i32; PERMUTE_LANES]], &'t [[f32; PERMUTE_LANES]])>,
    out: &mut [f32],
) {
    use core::arch::x86_64::{__m256, __m256i};
    use pulp::bytemuck::cast;
    let (avx, avx2) = (simd.avx, simd.avx2);
    let (out, _) = out.as_chunks_mut::<PERMUTE_LANES>();
    let zero = avx._mm256_setzero_ps();
    for ((o, &l), (ix, wt)) in out.iter_mut().zip(lo).zip(blocks) {
        let l = l as usize;
        let mut sum = zero;
        for &(row, wy) in rows {
            // A slice of exactly PERMUTE_LANES: the conversion cannot fail.
            let v: [f32; PERMUTE_LANES] = row[l..l + PERMUTE_LANES].try_into().unwrap_or_default();
            let v = cast::<_, __m256>(v);
            let mut h = zero;
            for (ix, wt) in ix.iter().zip(wt) {
                let g = avx2._mm256_permutevar8x32_ps(v, cast::<_, __m256i>(*ix));
                h = avx._mm256_add_ps(h, avx._mm256_mul_ps(cast::<_, __m256>(*wt), g));
            }
            sum = if SCALED {
                avx._mm256_add_ps(sum, avx._mm256_mul_ps(avx._mm256_set1_ps(wy), h))
            } else {
                h
            };
        }
        *o = cast::<__m256, [f32; PERMUTE_LANES]>(sum);
    }
}

simd_fn! {
    /// [`Affine`]'s interior for a stride of two, `out[j] = sum over u < k, in order, of
    /// w[u * n + (j - lo)] * row[2j + c + u]` from zero (`n = hi - lo`), in registers: the bits
    /// of the phase-split rows' zero fill and `k` [`simd::mul_add`] passes, in one pass that
    /// stores each output once (W1 NCHW 1.18x on one thread, 1.14x on two, Zen 4). Compiled
    /// per SIMD level (the AVX2 kernel inlined where the level has it, once per `k` up to
    /// four); true when it ran.
    fn affine2<A: Accum>(
        row: &[A],
        (c, k, lo, hi): (isize, usize, usize, usize),
        w: &[A],
        out: &mut [A],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        if let (Some(simd), Some(row), Some(w), Some(out)) =
            (simd::avx2(), A::as_f32(row), A::as_f32(w), A::as_f32_mut(out))
        {
            affine2_avx_by_k(simd, row, (c, lo, hi), k, w, out);
            return true;
        }
        false
    }
}

/// [`affine2_avx`] with `k` a literal up to four, so that each tap count's loop is unrolled
/// (inlined into its caller, which holds the AVX2 target features).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn affine2_avx_by_k(
    simd: pulp::x86::V3,
    row: &[f32],
    interior: (isize, usize, usize),
    k: usize,
    w: &[f32],
    out: &mut [f32],
) {
    match k {
        1 => affine2_avx(simd, row, interior, 1, w, out),
        2 => affine2_avx(simd, row, interior, 2, w, out),
        3 => affine2_avx(simd, row, interior, 3, w, out),
        4 => affine2_avx(simd, row, interior, 4, w, out),
        k => affine2_avx(simd, row, interior, k, w, out),
    }
}

/// [`affine2`] on AVX2: per block of 8 outputs and pair of taps `u`, `u + 1`, the 16 sources
/// from `2j + c + u` loaded as two vectors, their even lanes (tap `u`) and odd lanes (tap
/// `u + 1`) gathered by a shuffle and a lane permute each: one load of a window for two taps,
/// and W3's last block (taps 2j, 2j + 1 of a 256-wide row) inside the row, where a window per
/// tap passed its end by one (W3 NCHW 1.07x on one thread, AMD Zen 1). The outputs whose
/// loads would pass the row's end are summed one by one, in the same order.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn affine2_avx(
    simd: pulp::x86::V3,
    row: &[f32],
    (c, lo, hi): (isize, usize, usize),
    k: usize,
    w: &[f32],
    out: &mut [f32],
) {
    use core::arch::x86_64::{__m256, __m256d};
    use pulp::bytemuck::cast;
    let (avx, avx2) = (simd.avx, simd.avx2);
    let n = hi - lo;
    // Every source 2j + c + u of the interior is in the row, so 2 * lo + c >= 0.
    let start = |j: usize| (2 * j as isize + c) as usize;
    let mut j = lo;
    // The last window starts at the last even tap.
    let last = 2 * ((k - 1) / 2);
    while j + 8 <= hi && start(j) + last + 16 <= row.len() {
        let mut acc = avx._mm256_setzero_ps();
        for u in (0..k).step_by(2) {
            let b = start(j) + u;
            let lo8: [f32; 8] = row[b..b + 8].try_into().unwrap_or_default();
            let hi8: [f32; 8] = row[b + 8..b + 16].try_into().unwrap_or_default();
            let pairs = avx._mm256_shuffle_ps::<0x88>(cast(lo8), cast(hi8));
            let even: __m256 = cast(avx2._mm256_permute4x64_pd::<0xD8>(cast::<_, __m256d>(pairs)));
            let wv: [f32; 8] = w[u * n + (j - lo)..][..8].try_into().unwrap_or_default();
            acc = avx._mm256_add_ps(acc, avx._mm256_mul_ps(cast(wv), even));
            if u + 1 < k {
                let pairs = avx._mm256_shuffle_ps::<0xDD>(cast(lo8), cast(hi8));
                let odd: __m256 =
                    cast(avx2._mm256_permute4x64_pd::<0xD8>(cast::<_, __m256d>(pairs)));
                let wv: [f32; 8] = w[(u + 1) * n + (j - lo)..][..8]
                    .try_into()
                    .unwrap_or_default();
                acc = avx._mm256_add_ps(acc, avx._mm256_mul_ps(cast(wv), odd));
            }
        }
        out[j..j + 8].copy_from_slice(&cast::<__m256, [f32; 8]>(acc));
        j += 8;
    }
    for j in j..hi {
        let mut sum = 0f32;
        for u in 0..k {
            sum += w[u * n + (j - lo)] * row[start(j) + u];
        }
        out[j] = sum;
    }
}

/// Horizontal pass of one row: `out[j] = sum over tx[j] of w * row[i]`.
struct Horizontal<'a, A> {
    table: &'a AxisTable<A>,
    affine: Option<Affine<A>>,
    permuted: Option<Permuted<A>>,
    banded: Option<Banded<A>>,
}

impl<'a, A: Accum> Horizontal<'a, A> {
    fn new(table: &'a AxisTable<A>) -> Self {
        let affine = Affine::detect(table);
        let permuted = if affine.is_none() {
            Permuted::build(table).filter(|p| p.cost() < 20 * table.index.len())
        } else {
            None
        };
        let banded = (affine.is_none() && permuted.is_none())
            .then(|| Banded::build(table))
            .filter(|b| b.cost() < 20 * table.index.len());
        Horizontal {
            table,
            affine,
            permuted,
            banded,
        }
    }

    /// Estimated instructions per row (calibrated with callgrind: a CSR entry costs ~20, a
    /// vectorised multiply-add ~1/4 per element).
    fn cost(&self) -> usize {
        let nnz = self.table.index.len();
        let tail = self.table.dst_len() % PERMUTE_LANES;
        match (&self.affine, &self.permuted, &self.banded) {
            (Some(a), _, _) => {
                a.k * (a.hi - a.lo) / 4 + 20 * (nnz - a.k * (a.hi - a.lo)) + 2 * self.table.src_len
            }
            (None, Some(p), _) => p.cost() + 20 * (p.fixup.len() + tail * p.taps),
            (None, None, Some(b)) => b.cost() + 20 * b.fixup.len(),
            (None, None, None) => 20 * nnz,
        }
    }

    fn csr(&self, row: &[A], out: &mut [A], js: std::ops::Range<usize>) {
        for j in js {
            out[j] = self.csr_at(row, j);
        }
    }

    /// `out[j]` of the CSR path.
    fn csr_at(&self, row: &[A], j: usize) -> A {
        let mut s = A::zero();
        for (i, w) in self.table.entries(j) {
            s = s + w * row[i];
        }
        s
    }

    /// `phases` is scratch for the de-interleaved row.
    fn run(&self, row: &[A], out: &mut [A], phases: &mut Vec<A>) {
        let Some(a) = &self.affine else {
            if let Some(p) = &self.permuted {
                if simd::all_finite(row) && p.run(row, out) {
                    let whole = out.len() / PERMUTE_LANES * PERMUTE_LANES;
                    self.csr(row, out, whole..out.len());
                    for &j in &p.fixup {
                        self.csr(row, out, j..j + 1);
                    }
                    return;
                }
                return self.csr(row, out, 0..out.len());
            }
            match &self.banded {
                Some(b) if simd::all_finite(row) => {
                    simd::banded(row, &b.lo, &b.len, &b.off, &b.w, out);
                    for &j in &b.fixup {
                        self.csr(row, out, j..j + 1);
                    }
                }
                _ => self.csr(row, out, 0..out.len()),
            }
            return;
        };
        self.csr(row, out, 0..a.lo);
        self.csr(row, out, a.hi..out.len());
        if a.s == 2 && affine2(row, (a.c, a.k, a.lo, a.hi), &a.w, out) {
            return;
        }
        let n = a.hi - a.lo;
        let plen = row.len().div_ceil(a.s);
        if a.s > 1 {
            // Every slot is written below but the last column's past the row's end, zeroed
            // there; zeroing the whole buffer per row was 8% of W3 NCHW (one thread).
            phases.resize(a.s * plen, A::zero());
            let (ph, tail) = (phases.as_mut_slice(), row.len() / a.s);
            if tail < plen {
                for p in row.len() - tail * a.s..a.s {
                    ph[p * plen + tail] = A::zero();
                }
            }
            if a.s == 2 {
                let (p0, p1) = ph.split_at_mut(plen);
                simd::deinterleave2(row, p0, p1);
            } else {
                for (m, c) in row.chunks_exact(a.s).enumerate() {
                    for (p, &v) in c.iter().enumerate() {
                        ph[p * plen + m] = v;
                    }
                }
            }
            for (p, &v) in row[tail * a.s..].iter().enumerate() {
                ph[p * plen + tail] = v;
            }
        }
        let o = &mut out[a.lo..a.hi];
        o.fill(A::zero());
        for u in 0..a.k {
            let off = a.c + u as isize;
            let (p, q) = (
                off.rem_euclid(a.s as isize) as usize,
                off.div_euclid(a.s as isize),
            );
            let start = (a.lo as isize + q) as usize;
            let src = if a.s > 1 {
                &phases[p * plen + start..][..n]
            } else {
                &row[start..][..n]
            };
            simd::mul_add(o, &a.w[u * n..(u + 1) * n], src);
        }
    }
}

#[derive(Default)]
struct PlaneScratch<A> {
    plane: Vec<A>,
    row: Vec<A>,
    tmp: Vec<A>,
    acc: Vec<A>,
    phases: Vec<A>,
}

/// The order [`gather_nchw`] takes each plane in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PlaneOrder {
    /// Each destination row sums whole source rows, then one horizontal pass.
    VerticalFirst,
    /// Each used source row once through the horizontal pass into `tmp`, then each destination
    /// row zeroed and its rows of `tmp` added.
    HorizontalFirst,
    /// Each destination row's blocks summed in registers from its source rows, each term's
    /// horizontal pass ([`Permuted`]) recomputed, and stored once: no `tmp`, no zero fill and
    /// no second pass over the row (W2 NCHW 1.48x on one thread and on two, Zen 4: the
    /// horizontal passes double, but `dx`, 87% of W2's traffic, is written once). Planes
    /// with a non-finite value take the horizontal-first order (the permuted pass is exact only
    /// on finite rows).
    Fused,
}

impl PlaneOrder {
    /// The cheaper order by the instruction counts of [`Horizontal::cost`].
    fn choose<A: Accum>(plan: &ResizePlan<A>, horizontal: &Horizontal<'_, A>) -> PlaneOrder {
        let (ty, sw, dh, dw) = (&plan.y, plan.src.w, plan.dst.h, plan.dst.w);
        let used_rows = used_source_rows(plan).iter().filter(|&&u| u).count();
        let nnz = ty.index.len();
        // Whole-row sums cost ~1/4 instruction per element.
        let vertical_first = nnz * sw / 4 + dh * horizontal.cost();
        let horizontal_first = used_rows * horizontal.cost() + nnz * dw / 4;
        let fused = nnz * horizontal.cost();
        let fusable = horizontal.permuted.is_some()
            && (0..dh).all(|i| ty.offsets[i + 1] - ty.offsets[i] <= FUSED_TERMS as u32);
        // Against the horizontal-first order, its zero fill of every row counts too.
        if fusable && fused <= vertical_first && fused <= horizontal_first + dh * dw / 4 {
            PlaneOrder::Fused
        } else if vertical_first <= horizontal_first {
            PlaneOrder::VerticalFirst
        } else {
            PlaneOrder::HorizontalFirst
        }
    }
}

/// Whether each source row is read by some destination row.
fn used_source_rows<A: Accum>(plan: &ResizePlan<A>) -> Vec<bool> {
    let mut used = vec![false; plan.src.h];
    for &r in &plan.y.index {
        used[r as usize] = true;
    }
    used
}

/// One plane at a time, separably, in the order [`PlaneOrder::choose`] finds cheaper.
fn gather_nchw<T: Element>(plan: &ResizePlan<T::Acc>, src: &[T], dst: &mut [T]) {
    let horizontal = Horizontal::new(&plan.x);
    let order = PlaneOrder::choose(plan, &horizontal);
    gather_nchw_in(plan, &horizontal, order, src, dst);
}

/// [`gather_nchw`] in the given order.
fn gather_nchw_in<T: Element>(
    plan: &ResizePlan<T::Acc>,
    horizontal: &Horizontal<'_, T::Acc>,
    order: PlaneOrder,
    src: &[T],
    dst: &mut [T],
) {
    let (sh, sw, dh, dw) = (plan.src.h, plan.src.w, plan.dst.h, plan.dst.w);
    let ty = &plan.y;
    let used = used_source_rows(plan);
    let zero = T::Acc::zero();
    dst.par_chunks_mut(dh * dw)
        .zip(src.par_chunks(sh * sw))
        .for_each_init(PlaneScratch::default, |s, (d, sp)| {
            let plane = acc_view(sp, &mut s.plane);
            s.acc.resize(dw, zero);
            if order == PlaneOrder::Fused && fused_plane(plan, horizontal, plane, d, &mut s.acc) {
                return;
            }
            if order == PlaneOrder::VerticalFirst {
                s.row.resize(sw, zero);
                if let Some(out) = T::as_acc_slice_mut(d) {
                    if vertical_first_plane(plan, horizontal, plane, out, &mut s.row) {
                        return;
                    }
                }
                for i in 0..dh {
                    // The first term written over the row, the rest added (not a zero fill
                    // and one add per term: the same bits, one pass less; W3 NCHW 1.12x, W1
                    // 1.07x on one thread, Zen 4).
                    let mut terms = ty.entries(i);
                    match terms.next() {
                        Some((r, w)) => {
                            simd::scale_into(&mut s.row, w, &plane[r * sw..(r + 1) * sw])
                        }
                        None => s.row.fill(zero),
                    }
                    for (r, w) in terms {
                        axpy(&mut s.row, w, &plane[r * sw..(r + 1) * sw]);
                    }
                    let drow = &mut d[i * dw..(i + 1) * dw];
                    match T::as_acc_slice_mut(drow) {
                        Some(out) => horizontal.run(&s.row, out, &mut s.phases),
                        None => {
                            horizontal.run(&s.row, &mut s.acc, &mut s.phases);
                            store::<T>(&s.acc, drow);
                        }
                    }
                }
            } else {
                s.tmp.resize(sh * dw, zero);
                for r in (0..sh).filter(|&r| used[r]) {
                    horizontal.run(
                        &plane[r * sw..(r + 1) * sw],
                        &mut s.tmp[r * dw..(r + 1) * dw],
                        &mut s.phases,
                    );
                }
                for (i, drow) in d.chunks_exact_mut(dw).enumerate() {
                    // f32/f64 rows accumulate in place: a scratch row copied out after (a
                    // `memmove` per row) took up to twice the time (W2, one thread, Zen 4).
                    let acc = match T::as_acc_slice_mut(drow) {
                        Some(a) => a,
                        None => &mut s.acc[..],
                    };
                    acc.fill(zero);
                    for (r, w) in ty.entries(i) {
                        axpy(acc, w, &s.tmp[r * dw..(r + 1) * dw]);
                    }
                    if T::as_acc_slice(drow).is_none() {
                        store::<T>(&s.acc, drow);
                    }
                }
            }
        });
}

simd_fn! {
    /// [`PlaneOrder::VerticalFirst`] over a whole plane of f32 rows (`out`, the plane of
    /// `dst`) in one dispatched call, where the horizontal pass is the stride-2 [`affine2`]:
    /// per destination row the first term written over `row`, the rest added, the row's
    /// columns outside the affine interior by CSR and the interior by [`affine2_avx`]. The same
    /// operations in the same order as the per-row loop of [`gather_nchw_in`], which made three
    /// dispatched calls a row (W3 NCHW: 65,536 rows a call). False (nothing written) where
    /// the pass is not the AVX2 stride-2 one.
    fn vertical_first_plane<A: Accum>(
        plan: &ResizePlan<A>,
        horizontal: &Horizontal<'_, A>,
        plane: &[A],
        out: &mut [A],
        row: &mut [A],
    ) -> bool {
        #[cfg(target_arch = "x86_64")]
        if let (Some(simd), Some(a)) = (simd::avx2(), &horizontal.affine) {
            if a.s != 2 || A::as_f32(row).is_none() {
                return false;
            }
            let (sw, dw) = (plan.src.w, plan.dst.w);
            for (i, drow) in out.chunks_exact_mut(dw).enumerate() {
                let mut terms = plan.y.entries(i);
                match terms.next() {
                    Some((r, w)) => simd::scale_into_inline(row, w, &plane[r * sw..(r + 1) * sw]),
                    None => row.fill(A::zero()),
                }
                for (r, w) in terms {
                    simd::axpy_inline(row, w, &plane[r * sw..(r + 1) * sw]);
                }
                horizontal.csr(row, drow, 0..a.lo);
                horizontal.csr(row, drow, a.hi..dw);
                if let (Some(r), Some(w), Some(o)) =
                    (A::as_f32(row), A::as_f32(&a.w), A::as_f32_mut(drow))
                {
                    affine2_avx_by_k(simd, r, (a.c, a.lo, a.hi), a.k, w, o);
                }
            }
            return true;
        }
        false
    }
}

/// The columns of a fused destination row past the whole blocks, and the blocks' fixups:
/// each term's CSR sum, summed as the blocks are.
fn fused_columns<A: Accum>(
    horizontal: &Horizontal<'_, A>,
    (plane, sw): (&[A], usize),
    (ty, i): (&AxisTable<A>, usize),
    (whole, fixup): (usize, &[usize]),
    out: &mut [A],
) {
    for j in (whole..out.len()).chain(fixup.iter().copied()) {
        let mut sum = A::zero();
        for (r, wy) in ty.entries(i) {
            sum = sum + wy * horizontal.csr_at(&plane[r * sw..(r + 1) * sw], j);
        }
        out[j] = sum;
    }
}

/// One plane in [`PlaneOrder::Fused`]; false (nothing to rely on written) where the plane
/// holds a non-finite value or the pass cannot run here.
fn fused_plane<T: Element>(
    plan: &ResizePlan<T::Acc>,
    horizontal: &Horizontal<'_, T::Acc>,
    plane: &[T::Acc],
    d: &mut [T],
    acc: &mut [T::Acc],
) -> bool {
    let (sw, dw) = (plan.src.w, plan.dst.w);
    let Some(p) = &horizontal.permuted else {
        return false;
    };
    if !simd::all_finite(plane) {
        return false;
    }
    let whole = dw / PERMUTE_LANES * PERMUTE_LANES;
    let ty = &plan.y;
    match T::as_acc_slice_mut(d) {
        // f32: the whole plane in one call.
        Some(out) => {
            if !p.run_rows((plane, sw), ty, 0..plan.dst.h, out) {
                return false;
            }
        }
        None => {
            for (i, drow) in d.chunks_exact_mut(dw).enumerate() {
                if !p.run_rows((plane, sw), ty, i..i + 1, acc) {
                    return false;
                }
                fused_columns(horizontal, (plane, sw), (ty, i), (whole, &p.fixup), acc);
                store::<T>(acc, drow);
            }
            return true;
        }
    }
    if whole < dw || !p.fixup.is_empty() {
        for (i, drow) in d.chunks_exact_mut(dw).enumerate() {
            if let Some(out) = T::as_acc_slice_mut(drow) {
                fused_columns(horizontal, (plane, sw), (ty, i), (whole, &p.fixup), out);
            }
        }
    }
    true
}

simd_fn! {
    /// `out[j][..] = sum over rows (row, wy), then entries (xi, wx) of tx[j]: wy * wx *
    /// row[xi][..]` for every destination pixel `j`, `c` channels each, one pixel at a time (its
    /// channels stay in L1 for all its terms; summed source row by source row, a destination row
    /// of W x C, 32-64 KiB on W1-W3, left L1 in between). Compiled per SIMD level; each block of
    /// [`PIXEL_CHUNK`] channels is summed over all the pixel's terms in registers and stored once
    /// (summed in memory, term after term, each add waited for the last one's store: W1, 16 terms
    /// a pixel, spent half its time on that one dependency; Zen 4, W1 NHWC 25.4 -> 13.1-13.8
    /// ms on one thread, 12.9-13.8 -> 7.6-7.9 ms on two). With [`Stored`] lanes f16/bf16 are
    /// widened as each term loads its block and rounded as the block leaves the registers
    /// (staged, the rows had been widened into scratch rows first and the sums rounded in a
    /// second pass: one thread, Zen 5, bf16 W1-W3 NHWC 1.97x-2.22x, f16 2.27x-2.97x; W3 NHWC
    /// f16 had been 0.69x PyTorch on two threads). The same sums in the same order.
    fn sum_pixels_nhwc<L: Lanes>(
        _lanes: PhantomData<L>,
        out: &mut [L::E],
        rows: &[(&[L::E], L::A)],
        tx: &AxisTable<L::A>,
        c: usize,
    ) {
        let cvt = BlockConvert::new();
        let whole = c / PIXEL_CHUNK * PIXEL_CHUNK;
        for (j, a) in out.chunks_exact_mut(c).enumerate() {
            for c0 in (0..whole).step_by(PIXEL_CHUNK) {
                let mut r = [L::A::zero(); PIXEL_CHUNK];
                for &(row, wy) in rows {
                    for (xi, wx) in tx.entries(j) {
                        L::axpy_block(cvt, &mut r, wy * wx, &row[xi * c + c0..][..PIXEL_CHUNK]);
                    }
                }
                L::put(cvt, &r, &mut a[c0..c0 + PIXEL_CHUNK]);
            }
            if whole < c {
                let mut r = [L::A::zero(); PIXEL_CHUNK];
                let r = &mut r[..c - whole];
                for &(row, wy) in rows {
                    for (xi, wx) in tx.entries(j) {
                        L::axpy(cvt, r, wy * wx, &row[xi * c + whole..(xi + 1) * c]);
                    }
                }
                L::put(cvt, r, &mut a[whole..]);
            }
        }
    }
}

/// How [`sum_pixels_nhwc`] reads its rows and writes its sums: [`Stored`] element rows,
/// widened in registers as each term loads its block and rounded as the block leaves them;
/// or [`Widened`] rows of the accumulation type, summed and written as they are.
trait Lanes {
    type A: Accum;
    type E: Copy;
    /// `r[k] += w * src[k]`, `src` as long as `r`.
    fn axpy_block<const N: usize>(
        cvt: BlockConvert,
        r: &mut [Self::A; N],
        w: Self::A,
        src: &[Self::E],
    );
    /// The same on a slice (a block's tail).
    fn axpy(cvt: BlockConvert, r: &mut [Self::A], w: Self::A, src: &[Self::E]);
    /// `dst = r`, rounded where the types differ.
    fn put(cvt: BlockConvert, r: &[Self::A], dst: &mut [Self::E]);
}

/// Rows and sums as the tensors hold them (any element type).
struct Stored<T>(PhantomData<T>);

impl<T: Element> Lanes for Stored<T> {
    type A = T::Acc;
    type E = T;
    #[inline(always)]
    fn axpy_block<const N: usize>(cvt: BlockConvert, r: &mut [T::Acc; N], w: T::Acc, src: &[T]) {
        cvt.axpy_block(r, w, src);
    }
    #[inline(always)]
    fn axpy(cvt: BlockConvert, r: &mut [T::Acc], w: T::Acc, src: &[T]) {
        cvt.axpy(r, w, src);
    }
    #[inline(always)]
    fn put(cvt: BlockConvert, r: &[T::Acc], dst: &mut [T]) {
        cvt.round(r, dst);
    }
}

/// Rows widened ahead into scratch rows and sums staged in one, rounded by the caller with
/// one `Element::slice_from_acc` over the row: f16 where the level lacks AVX-512, whose
/// portable conversions in every term and block took W1 NHWC from 18.1 to 30.4 ms (one
/// thread, capped at AVX2, Zen 5), while `half`'s F16C calls convert each row once.
struct Widened<A>(PhantomData<A>);

impl<A: Accum> Lanes for Widened<A> {
    type A = A;
    type E = A;
    #[inline(always)]
    fn axpy_block<const N: usize>(_: BlockConvert, r: &mut [A; N], w: A, src: &[A]) {
        simd::axpy_inline(r, w, src);
    }
    #[inline(always)]
    fn axpy(_: BlockConvert, r: &mut [A], w: A, src: &[A]) {
        simd::axpy_inline(r, w, src);
    }
    #[inline(always)]
    fn put(_: BlockConvert, r: &[A], dst: &mut [A]) {
        dst.copy_from_slice(r);
    }
}

/// Channels [`sum_pixels_nhwc`] sums in registers at a time: four AVX-512 vectors of f32.
const PIXEL_CHUNK: usize = 64;

/// One destination row (all of W x C) at a time, channels innermost.
fn gather_nhwc<T: Element>(plan: &ResizePlan<T::Acc>, src: &[T], dst: &mut [T]) {
    let (sh, sw, dh, dw, c) = (plan.src.h, plan.src.w, plan.dst.h, plan.dst.w, plan.src.c);
    let (ty, tx) = (&plan.y, &plan.x);
    let widen_ahead = T::DTYPE == DType::F16 && !BlockConvert::new().has_avx512();
    dst.par_chunks_mut(dw * c).enumerate().for_each_init(
        || (Vec::new(), Vec::new()),
        |(bufs, staged): &mut (Vec<Vec<T::Acc>>, Vec<T::Acc>), (idx, d)| {
            let (n, i) = (idx / dh, idx % dh);
            // The source rows this destination row reads, with their weights.
            let rows = ty.entries(i).map(|(r, wy)| {
                let base = (n * sh + r) * sw * c;
                (&src[base..base + sw * c], wy)
            });
            if widen_ahead {
                bufs.resize_with(ty.entries(i).count(), Vec::new);
                let rows: Vec<_> = rows
                    .zip(bufs.iter_mut())
                    .map(|((row, wy), buf)| {
                        buf.resize(row.len(), T::Acc::zero());
                        T::slice_to_acc(row, buf);
                        (&buf[..], wy)
                    })
                    .collect();
                staged.resize(d.len(), T::Acc::zero());
                sum_pixels_nhwc(PhantomData::<Widened<T::Acc>>, staged, &rows, tx, c);
                T::slice_from_acc(staged, d);
            } else {
                let rows: Vec<_> = rows.collect();
                sum_pixels_nhwc(PhantomData::<Stored<T>>, d, &rows, tx, c);
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::resize::{AxisMap, CoordinateTransform, ResizeAttrs, ResizeMode};

    /// Values uniform in [-4, 4) from a xorshift generator.
    fn uniform(mut seed: u64) -> impl FnMut() -> f32 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            ((seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 8.0
        }
    }

    /// The horizontal pass's fast paths (permuted blocks, dense bands, the stride-2 affine
    /// pass in registers) give the CSR sum's bits on finite rows, for gradient tables of
    /// non-integer ratios both ways and of integer ratios (stride two).
    #[test]
    fn horizontal_fast_paths_match_csr_bitwise() {
        let mut next = uniform(0x9e37_79b9_7f4a_7c15);
        let mut permuted = 0;
        for (x_len, y_len) in [
            (256, 97),
            (64, 23),
            (31, 17),
            (100, 131),
            (9, 5),
            (40, 41),
            (128, 256),
            (37, 74),
            (16, 32),
            (20, 41),
        ] {
            for mode in [ResizeMode::Linear, ResizeMode::Nearest] {
                for ctm in [
                    CoordinateTransform::HalfPixel,
                    CoordinateTransform::AlignCorners,
                    CoordinateTransform::Asymmetric,
                ] {
                    let attrs = ResizeAttrs::new(mode).coordinate_transformation_mode(ctm);
                    let map = AxisMap::<f32>::new(x_len, y_len, None, &attrs);
                    // The gradient's gather: dx (x_len) from dy (y_len).
                    let table = AxisTable::forward(&map).transpose();
                    let h = Horizontal::new(&table);
                    permuted += usize::from(h.permuted.is_some());
                    let row: Vec<f32> = (0..y_len).map(|_| next()).collect();
                    let mut want = vec![f32::NAN; x_len];
                    h.csr(&row, &mut want, 0..x_len);
                    let mut got = vec![f32::NAN; x_len];
                    h.run(&row, &mut got, &mut Vec::new());
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(
                        bits(&got),
                        bits(&want),
                        "{x_len} <- {y_len} {mode:?} {ctm:?}"
                    );
                    if let Some(b) = (h.affine.is_none()).then(|| Banded::build(&table)) {
                        let mut banded = vec![f32::NAN; x_len];
                        simd::banded(&row, &b.lo, &b.len, &b.off, &b.w, &mut banded);
                        for &j in &b.fixup {
                            h.csr(&row, &mut banded, j..j + 1);
                        }
                        assert_eq!(bits(&banded), bits(&want), "banded {x_len} <- {y_len}");
                    }
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        if simd::avx2().is_some() {
            assert!(permuted >= 6, "the permuted path ran on {permuted} tables");
        }
    }

    /// NHWC f16 and bf16, widened and rounded in registers block by block, give the bits of
    /// the f32 gather on the widened source rounded once, with channel counts of whole
    /// [`PIXEL_CHUNK`] blocks, blocks and a tail, and a tail alone, on gradient plans of both
    /// ratios; source values include NaN, an infinity, subnormals and signed zeros, and the
    /// destination is poisoned first.
    #[test]
    fn nhwc_half_types_match_f32_rounded() {
        use crate::tensor::Dims;
        use half::{bf16, f16};
        fn check<T: Element<Acc = f32>>(
            plan: &ResizePlan<f32>,
            dy: &[f32],
            what: &str,
            to: impl Fn(f32) -> T,
            bits: impl Fn(T) -> u16,
        ) {
            let dy16: Vec<T> = dy.iter().map(|&v| to(v)).collect();
            let wide: Vec<f32> = dy16.iter().map(|v| v.to_acc()).collect();
            let n = plan.dst.n * plan.dst.h * plan.dst.w * plan.dst.c;
            let mut want = vec![f32::NAN; n];
            gather_nhwc(plan, &wide, &mut want);
            let mut got = vec![to(f32::NAN); n];
            gather_nhwc(plan, &dy16, &mut got);
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                let w = to(*w);
                let same = bits(*g) == bits(w) || (g.to_acc().is_nan() && w.to_acc().is_nan());
                assert!(same, "{what}: element {k}: {:?} against {:?}", g, w);
            }
        }
        let mut next = uniform(0x9e37_79b9_4f1b_bd2d);
        for c in [64, 136, 40] {
            for ((xh, xw), (yh, yw), mode) in [
                ((9, 11), (4, 5), ResizeMode::Linear),
                ((6, 7), (12, 14), ResizeMode::Linear),
                ((8, 8), (16, 16), ResizeMode::Nearest),
            ] {
                let attrs = ResizeAttrs::new(mode);
                let dims = |h, w| Dims { n: 2, c, h, w };
                let plan = ResizePlan::<f32>::backward("test", dims(xh, xw), dims(yh, yw), &attrs)
                    .unwrap();
                let mut dy: Vec<f32> = (0..2 * c * yh * yw).map(|_| next()).collect();
                dy[3] = f32::NAN;
                dy[c + 5] = f32::INFINITY;
                dy[2 * c + 7] = -0.0;
                dy[c * yw + 1] = 3e-6; // an f16 subnormal
                dy[c * yw + 2] = 1e-39; // an f32 subnormal: bf16 keeps it, f16 flushes it
                let what = format!("c {c}, dx {xh}x{xw} <- dy {yh}x{yw} {mode:?}");
                check(&plan, &dy, &format!("f16 {what}"), f16::from_f32, |v| {
                    v.to_bits()
                });
                check(&plan, &dy, &format!("bf16 {what}"), bf16::from_f32, |v| {
                    v.to_bits()
                });
            }
        }
    }

    /// The fused order gives the horizontal-first order's bits (the vertical-first order
    /// multiplies in another order), f32 and f16, on gradient plans whose destination rows
    /// have zero to many terms, widths with and without a partial block, and planes holding NaN
    /// or an infinity (which leave the fused order for another).
    #[test]
    fn plane_orders_match_bitwise() {
        use crate::tensor::Dims;
        use half::f16;
        let mut next = uniform(0x2545_f491_4f6c_dd1d);
        let mut fused = 0;
        // (dx h, w) <- (dy h, w): W2's ratio, rows of two terms, a partial block, an
        // upscale's gradient (many terms a row), a downscale by more than 8 in x.
        for ((xh, xw), (yh, yw)) in [
            ((64, 64), (23, 23)),
            ((40, 61), (31, 23)),
            ((33, 45), (17, 13)),
            ((12, 20), (40, 53)),
            ((50, 100), (9, 11)),
        ] {
            for ctm in [
                CoordinateTransform::HalfPixel,
                CoordinateTransform::AlignCorners,
            ] {
                let attrs =
                    ResizeAttrs::new(ResizeMode::Linear).coordinate_transformation_mode(ctm);
                let dims = |h, w| Dims { n: 1, c: 3, h, w };
                let plan = ResizePlan::<f32>::backward("test", dims(xh, xw), dims(yh, yw), &attrs)
                    .unwrap();
                let horizontal = Horizontal::new(&plan.x);
                let mut dy: Vec<f32> = (0..3 * yh * yw).map(|_| next()).collect();
                // The last plane holds a NaN and an infinity.
                let last = 2 * yh * yw;
                dy[last + yw + 1] = f32::NAN;
                dy[last + yh * yw - 1] = f32::INFINITY;
                let dy16: Vec<f16> = dy.iter().map(|&v| f16::from_f32(v)).collect();
                let runs = |order| {
                    let mut dx = vec![f32::NAN; 3 * xh * xw];
                    gather_nchw_in(&plan, &horizontal, order, &dy, &mut dx);
                    let mut dx16 = vec![f16::NAN; 3 * xh * xw];
                    gather_nchw_in(&plan, &horizontal, order, &dy16, &mut dx16);
                    let bits: Vec<u32> = dx.iter().map(|v| v.to_bits()).collect();
                    let bits16: Vec<u16> = dx16.iter().map(|v| v.to_bits()).collect();
                    (bits, bits16)
                };
                let want = runs(PlaneOrder::HorizontalFirst);
                assert_eq!(
                    runs(PlaneOrder::Fused),
                    want,
                    "dx {xh}x{xw} <- dy {yh}x{yw} {ctm:?}"
                );
                fused += usize::from(horizontal.permuted.is_some());
            }
        }
        #[cfg(target_arch = "x86_64")]
        if simd::avx2().is_some() {
            assert!(fused >= 6, "the fused order ran on {fused} plans");
        }
    }

    /// [`vertical_first_plane`] gives the bits of the per-row loop it replaces (first term
    /// written over the row, the rest added, then [`Horizontal::run`]), on plans whose
    /// horizontal pass is the stride-2 affine one (W1's and W3's ratios, partial blocks, rows
    /// of one to four terms), with NaN, an infinity and signed zeros in the source.
    #[test]
    fn vertical_first_plane_matches_the_row_loop() {
        use crate::tensor::Dims;
        let mut next = uniform(0x5851_f42d_4c95_7f2d);
        let mut ran = 0;
        for ((xh, xw), (yh, yw), mode, ctm) in [
            (
                (16, 20),
                (32, 40),
                ResizeMode::Nearest,
                CoordinateTransform::Asymmetric,
            ),
            (
                (33, 45),
                (66, 90),
                ResizeMode::Linear,
                CoordinateTransform::HalfPixel,
            ),
            (
                (12, 13),
                (24, 26),
                ResizeMode::Linear,
                CoordinateTransform::AlignCorners,
            ),
            (
                (9, 64),
                (30, 128),
                ResizeMode::Linear,
                CoordinateTransform::HalfPixel,
            ),
        ] {
            let attrs = ResizeAttrs::new(mode).coordinate_transformation_mode(ctm);
            let dims = |h, w| Dims { n: 1, c: 1, h, w };
            let plan =
                ResizePlan::<f32>::backward("test", dims(xh, xw), dims(yh, yw), &attrs).unwrap();
            let horizontal = Horizontal::new(&plan.x);
            assert_eq!(
                horizontal.affine.as_ref().map(|a| a.s),
                Some(2),
                "{xw} <- {yw}"
            );
            let mut plane: Vec<f32> = (0..yh * yw).map(|_| next()).collect();
            plane[yw + 3] = f32::NAN;
            plane[2 * yw + 1] = f32::INFINITY;
            plane[3 * yw] = -0.0;
            plane[3 * yw + 1] = -0.0;
            let mut want = vec![f32::NAN; xh * xw];
            let mut row = vec![0f32; yw];
            for (i, drow) in want.chunks_exact_mut(xw).enumerate() {
                row.fill(0.0);
                for (r, w) in plan.y.entries(i) {
                    axpy(&mut row, w, &plane[r * yw..(r + 1) * yw]);
                }
                horizontal.run(&row, drow, &mut Vec::new());
            }
            let mut got = vec![f32::NAN; xh * xw];
            if vertical_first_plane(&plan, &horizontal, &plane, &mut got, &mut row) {
                ran += 1;
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got), bits(&want), "dx {xh}x{xw} <- dy {yh}x{yw}");
            }
        }
        #[cfg(target_arch = "x86_64")]
        if simd::avx2().is_some() {
            assert_eq!(ran, 4, "the plane path ran on {ran} plans");
        }
    }

    /// W2's plan takes the fused order.
    #[test]
    fn w2_takes_the_fused_order() {
        use crate::tensor::Dims;
        let attrs = ResizeAttrs::new(ResizeMode::Linear)
            .coordinate_transformation_mode(CoordinateTransform::HalfPixel);
        let dims = |h, w| Dims { n: 1, c: 1, h, w };
        let plan =
            ResizePlan::<f32>::backward("test", dims(256, 256), dims(97, 97), &attrs).unwrap();
        let horizontal = Horizontal::new(&plan.x);
        let want = if let Some(p) = &horizontal.permuted {
            assert_eq!(p.taps, 1, "W2's horizontal pass: one tap an output");
            PlaneOrder::Fused
        } else {
            PlaneOrder::HorizontalFirst
        };
        assert_eq!(PlaneOrder::choose(&plan, &horizontal), want);
    }
}

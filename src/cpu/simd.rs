//! Hot element-wise loops, compiled for AVX-512 / AVX2 / baseline and picked at run time
//! (`multiversion`). Plain multiply then add (no FMA contraction), so every variant gives
//! bit-identical results.

use crate::dtype::Accum;
use multiversion::multiversion;

/// `acc[i] += w * x[i]`.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn axpy<A: Accum>(acc: &mut [A], w: A, x: &[A]) {
    axpy_inline(acc, w, x);
}

/// [`axpy`]'s loop, for callers that are themselves compiled per SIMD level and call it on
/// short slices (where a dispatched call per slice would cost more than the loop).
#[inline(always)]
pub(crate) fn axpy_inline<A: Accum>(acc: &mut [A], w: A, x: &[A]) {
    for (a, &v) in acc.iter_mut().zip(x) {
        *a = *a + w * v;
    }
}

/// `acc[i] += w[i] * x[i]`.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn mul_add<A: Accum>(acc: &mut [A], w: &[A], x: &[A]) {
    for ((a, &w), &v) in acc.iter_mut().zip(w).zip(x) {
        *a = *a + w * v;
    }
}

/// Lanes per block of [`banded`].
pub(crate) const BAND: usize = 16;

/// Blocks of `BAND` outputs, each a dense `len[b] x BAND` weight block over the source window
/// starting at `lo[b]`: `out[b*BAND + l] = sum_s w[off[b] + s*BAND + l] * row[lo[b] + s]`, summed
/// in ascending `s`. Only valid for finite `row` (a zero weight times NaN is NaN).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn banded<A: Accum>(
    row: &[A],
    lo: &[u32],
    len: &[u32],
    off: &[usize],
    w: &[A],
    out: &mut [A],
) {
    for (b, o) in out.chunks_mut(BAND).enumerate() {
        let mut acc = [A::zero(); BAND];
        let base = lo[b] as usize;
        let ws = &w[off[b]..off[b] + len[b] as usize * BAND];
        for (s, wb) in ws.chunks_exact(BAND).enumerate() {
            let v = row[base + s];
            for (a, &wl) in acc.iter_mut().zip(wb) {
                *a = *a + wl * v;
            }
        }
        o.copy_from_slice(&acc[..o.len()]);
    }
}

/// True when every element is finite.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn all_finite<A: Accum>(x: &[A]) -> bool {
    x.iter().fold(true, |ok, v| ok & v.is_finite())
}

/// One step of a running argmax with the TF rule: where `v[i] > best[i]` (strictly; false for
/// NaN on either side) take `v[i]` and tap `t`, else keep. Reads `best`/`tap`, writes
/// `best_out`/`tap_out` (ping-pong buffers: an in-place conditional update compiles to masked
/// stores, which are microcoded and slow on AMD).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn argmax_step<A: Accum>(
    best: &[A],
    tap: &[u32],
    v: &[A],
    t: u32,
    best_out: &mut [A],
    tap_out: &mut [u32],
) {
    for ((((b, i), &x), bo), io) in best
        .iter()
        .zip(tap)
        .zip(v)
        .zip(best_out.iter_mut())
        .zip(tap_out.iter_mut())
    {
        let gt = x > *b;
        *bo = if gt { x } else { *b };
        *io = if gt { t } else { *i };
    }
}

/// `p0[k] = src[2k]`, `p1[k] = src[2k + 1]` for the pairs of `src` (as many as both outputs
/// hold): the stride-2 phase split of a row, compiled per SIMD level (in callers built for the
/// baseline only it was a scalar loop).
pub(crate) fn deinterleave2<A: Copy>(src: &[A], p0: &mut [A], p1: &mut [A]) {
    deinterleave2_map(src, p0, p1, |v| v)
}

/// [`deinterleave2`] with each element converted by `f` (as `Element::to_acc`) on the way.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn deinterleave2_map<S: Copy, D, F: Fn(S) -> D>(
    src: &[S],
    p0: &mut [D],
    p1: &mut [D],
    f: F,
) {
    // Zipped iterators: indexing kept a bounds check that blocked vectorisation.
    for ((c, a), b) in src.chunks_exact(2).zip(p0.iter_mut()).zip(p1.iter_mut()) {
        *a = f(c[0]);
        *b = f(c[1]);
    }
}

/// bf16 bit patterns widened to `f32`: the bits shifted into the high half (exact, NaNs
/// included), so the loop vectorises, unlike `half`'s per-element conversion.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn bf16_bits_to_f32(src: &[u16], dst: &mut [f32]) {
    assert_eq!(src.len(), dst.len(), "bf16 widening: length mismatch");
    for (d, &b) in dst.iter_mut().zip(src) {
        *d = f32::from_bits(u32::from(b) << 16);
    }
}

/// `f32` rounded to bf16 bit patterns, to nearest with ties to even (as `half::bf16::from_f32`,
/// NaNs kept quiet), branch-free so the loop vectorises: adding `0x7FFF` plus the kept LSB
/// carries into the kept half exactly when the dropped half is above the tie (or at it, with
/// an odd LSB); the carry out of the largest finite value gives infinity, as it should.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
pub(crate) fn f32_to_bf16_bits(src: &[f32], dst: &mut [u16]) {
    assert_eq!(src.len(), dst.len(), "bf16 rounding: length mismatch");
    for (d, &f) in dst.iter_mut().zip(src) {
        let x = f.to_bits();
        let rounded = (x.wrapping_add(0x7FFF + ((x >> 16) & 1)) >> 16) as u16;
        let nan = ((x >> 16) | 0x0040) as u16;
        *d = if f.is_nan() { nan } else { rounded };
    }
}

//! Winograd F(4x4, 3x3) (Lavin & Gray) for NCHW 3x3 stride-1 correlations: 6x6 `src`
//! patches per 4x4 `dst` tile, 36 GEMMs of depth `cog` per block of tiles (2.25 multiplies per
//! output and tap-sum instead of F(2x2)'s 4, and 2.25 instead of 4 transformed values per
//! output). Transforms are vectorised over the block's tiles (`pulp` dispatch: AVX-512,
//! AVX2 or scalar, picked at run time); every `dst` element is a fixed sequence of
//! operations, so results do not depend on the thread count.

use super::cpu_kernel::{winograd_gemms, WinoProblem};
use crate::dtype::{Accum, Element};
use num_traits::Zero;
use rayon::prelude::*;

/// Tiles per block (whole tile rows, at least one): the block's transformed `src` (`36 x cog
/// x tiles`) and GEMM results (`36 x m x tiles`) stay in L2 at 64 channels.
const TILES: usize = 56;

/// `G`: the filter transform (6x3), exact in f64 up to the thirds' rounding.
const G: [[f64; 3]; 6] = [
    [0.25, 0.0, 0.0],
    [-1.0 / 6.0, -1.0 / 6.0, -1.0 / 6.0],
    [-1.0 / 6.0, 1.0 / 6.0, -1.0 / 6.0],
    [1.0 / 24.0, 1.0 / 12.0, 1.0 / 6.0],
    [1.0 / 24.0, -1.0 / 12.0, 1.0 / 6.0],
    [0.0, 0.0, 1.0],
];

/// `dst[c] = sum_k f(c, k) (*) src[k]` per group (see [`WinoProblem`]); `filt(grp, c_dst,
/// c_src, a, b)` is the correlation kernel's tap `(a, b)`.
pub(super) fn winograd4_nchw<T: Element>(
    p: &WinoProblem,
    src: &[T],
    dst: &mut [T],
    filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
) {
    if dst.is_empty() {
        return;
    }
    let ((hi, wi), (ho, wo)) = (p.dst, p.src);
    let (cig, cog, groups) = (p.cig, p.cog, p.groups);
    let (hw, dimg) = (hi * wi, groups * cog * ho * wo);
    let zero = T::Acc::zero();
    // U[grp][xi][c_dst][c_src] = G f G^T, in f64, rounded once.
    let usz = 36 * cig * cog;
    let mut u = vec![zero; groups * usz];
    for grp in 0..groups {
        for ci in 0..cig {
            for co in 0..cog {
                let f: [[f64; 3]; 3] =
                    std::array::from_fn(|a| std::array::from_fn(|b| filt(grp, ci, co, a, b)));
                // gf = G f (6x3), then gf G^T (6x6).
                let gf: [[f64; 3]; 6] = std::array::from_fn(|i| {
                    std::array::from_fn(|b| (0..3).map(|a| G[i][a] * f[a][b]).sum())
                });
                for (i, r) in gf.iter().enumerate() {
                    for (j, gj) in G.iter().enumerate() {
                        let x: f64 = (0..3).map(|b| r[b] * gj[b]).sum();
                        u[grp * usz + ((i * 6 + j) * cig + ci) * cog + co] =
                            T::Acc::from_f64_lossy(x);
                    }
                }
            }
        }
    }
    // Work items: (image, group, destination-channel block), enough to feed every thread.
    let n = dst.len() / (groups * cig * hw).max(1);
    let threads = rayon::current_num_threads();
    let blocks = threads.div_ceil((n * groups).max(1)).clamp(1, cig.max(1));
    let chunk = cig.div_ceil(blocks).next_multiple_of(8).min(cig).max(1);
    let mut items = Vec::new();
    for (i, di) in dst.chunks_mut(groups * cig * hw).enumerate() {
        let mut rest = di;
        for grp in 0..groups {
            for c0 in (0..cig).step_by(chunk) {
                let c1 = (c0 + chunk).min(cig);
                let (a, b) = rest.split_at_mut((c1 - c0) * hw);
                rest = b;
                items.push((i, grp, c0, c1, a));
            }
        }
    }
    let (ntx, nty) = (wi.div_ceil(4), hi.div_ceil(4));
    let br = (TILES / ntx).clamp(1, nty);
    let u = &u;
    let arch = crate::cpu::simd::Arch::new();
    items.into_par_iter().for_each_init(
        || (Vec::new(), Vec::new(), Vec::new()),
        |(v, mb, sb), (i, grp, c0, c1, d)| {
            let si = &src[i * dimg..][..dimg];
            let m = c1 - c0;
            let ug = &u[grp * usz..][..usz];
            for ty0 in (0..nty).step_by(br) {
                let tr = br.min(nty - ty0);
                let nt = tr * ntx;
                v.resize(36 * cog * nt, zero);
                mb.resize(36 * m * nt, zero);
                sb.resize(72 * nt + 8 * ntx + 8 + wi, zero);
                arch.dispatch(In4::<T> {
                    src: si,
                    cogs: (grp * cog, cog),
                    dims: (ho, wo),
                    rows: (ty0, tr, ntx),
                    off: p.off,
                    sb: &mut sb[..],
                    v: &mut v[..],
                });
                // 36 GEMMs: M[xi][c][t] = U[xi][c0 + c][k] * V[xi][k][t].
                winograd_gemms(36, (c0, m), cig, cog, nt, ug, &v[..], &mut mb[..]);
                arch.dispatch(Out4::<T> {
                    mb: &mb[..],
                    m,
                    rows: (ty0, tr, ntx),
                    dims: (hi, wi),
                    sb: &mut sb[..],
                    d: &mut d[..],
                });
            }
        },
    );
}

/// `out[i] = (B^T d)[i]` elementwise over tiles, `B^T` of F(4, 3):
/// `[4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]`.
#[inline(always)]
fn bt6<A: Accum>(d: [&[A]; 6], out: [&mut [A]; 6]) {
    let [d0, d1, d2, d3, d4, d5] = d;
    let [o0, o1, o2, o3, o4, o5] = out;
    bt6_slices(d0, d1, d2, d3, d4, d5, o0, o1, o2, o3, o4, o5);
}

/// [`bt6`] on separate slice arguments: LLVM keeps their `noalias` through inlining and
/// vectorises the loop without runtime alias checks (it does not for arrays of slices).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn bt6_slices<A: Accum>(
    d0: &[A],
    d1: &[A],
    d2: &[A],
    d3: &[A],
    d4: &[A],
    d5: &[A],
    o0: &mut [A],
    o1: &mut [A],
    o2: &mut [A],
    o3: &mut [A],
    o4: &mut [A],
    o5: &mut [A],
) {
    let n = d0.len();
    let (d1, d2, d3, d4, d5) = (&d1[..n], &d2[..n], &d3[..n], &d4[..n], &d5[..n]);
    let (o0, o1, o2) = (&mut o0[..n], &mut o1[..n], &mut o2[..n]);
    let (o3, o4, o5) = (&mut o3[..n], &mut o4[..n], &mut o5[..n]);
    let (four, five, two) = (A::from_index(4), A::from_index(5), A::from_index(2));
    for t in 0..n {
        let (x0, x1, x2, x3, x4, x5) = (d0[t], d1[t], d2[t], d3[t], d4[t], d5[t]);
        o0[t] = four * x0 - five * x2 + x4;
        o1[t] = (x3 + x4) - four * (x1 + x2);
        o2[t] = (x4 - x3) + four * (x1 - x2);
        o3[t] = (x4 - x2) + two * (x3 - x1);
        o4[t] = (x4 - x2) + two * (x1 - x3);
        o5[t] = four * x1 - five * x3 + x5;
    }
}

/// `out[o] = (A^T m)[o]` elementwise over tiles, `A^T` of F(4, 3):
/// `[1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1]`.
#[inline(always)]
fn at6<A: Accum>(m: [&[A]; 6], out: [&mut [A]; 4]) {
    let [m0, m1, m2, m3, m4, m5] = m;
    let [o0, o1, o2, o3] = out;
    at6_slices(m0, m1, m2, m3, m4, m5, o0, o1, o2, o3);
}

/// [`at6`] on separate slice arguments (see [`bt6_slices`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn at6_slices<A: Accum>(
    m0: &[A],
    m1: &[A],
    m2: &[A],
    m3: &[A],
    m4: &[A],
    m5: &[A],
    o0: &mut [A],
    o1: &mut [A],
    o2: &mut [A],
    o3: &mut [A],
) {
    let n = m0.len();
    let (m1, m2, m3, m4, m5) = (&m1[..n], &m2[..n], &m3[..n], &m4[..n], &m5[..n]);
    let (o0, o1, o2, o3) = (&mut o0[..n], &mut o1[..n], &mut o2[..n], &mut o3[..n]);
    let (two, four, eight) = (A::from_index(2), A::from_index(4), A::from_index(8));
    for t in 0..n {
        let (a, b) = (m1[t] + m2[t], m1[t] - m2[t]);
        let (c, e) = (m3[t] + m4[t], m3[t] - m4[t]);
        o0[t] = m0[t] + a + c;
        o1[t] = b + two * e;
        o2[t] = a + four * c;
        o3[t] = b + eight * e + m5[t];
    }
}

/// `x_k[t] = row[4 t + k]`, `k < 6`, `t < x0.len()` (`row` at least `4 n + 2` long): the
/// 6x6 patches' columns of one row, on separate `noalias` slices.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn gather6<A: Accum>(
    row: &[A],
    x0: &mut [A],
    x1: &mut [A],
    x2: &mut [A],
    x3: &mut [A],
    x4: &mut [A],
    x5: &mut [A],
) {
    let n = x0.len();
    let (x1, x2, x3, x4, x5) = (
        &mut x1[..n],
        &mut x2[..n],
        &mut x3[..n],
        &mut x4[..n],
        &mut x5[..n],
    );
    let row = &row[..4 * n + 2];
    for t in 0..n {
        let q = &row[4 * t..4 * t + 6];
        x0[t] = q[0];
        x1[t] = q[1];
        x2[t] = q[2];
        x3[t] = q[3];
        x4[t] = q[4];
        x5[t] = q[5];
    }
}

/// `out[4 t + k] = q_k[t]` (`out` exactly `4 n` long): the stride-4 store group.
#[inline(always)]
fn interleave4<A: Accum>(q0: &[A], q1: &[A], q2: &[A], q3: &[A], out: &mut [A]) {
    let n = q0.len();
    let (q1, q2, q3) = (&q1[..n], &q2[..n], &q3[..n]);
    for (t, o) in out[..4 * n].chunks_exact_mut(4).enumerate() {
        o[0] = q0[t];
        o[1] = q1[t];
        o[2] = q2[t];
        o[3] = q3[t];
    }
}

/// `K` disjoint `len`-long slabs of `buf` starting at `base`, `step` apart.
fn slabs<const K: usize, A>(buf: &mut [A], base: usize, step: usize, len: usize) -> [&mut [A]; K] {
    let mut rest = &mut buf[base..];
    std::array::from_fn(|k| {
        let cut = if k + 1 < K { step.max(len) } else { len };
        let (a, b) = std::mem::take(&mut rest).split_at_mut(cut);
        rest = b;
        &mut a[..len]
    })
}

/// The input transform of one tile block: `V[xi][k][t] = (B^T s B)[xi]` for the 6x6 `src`
/// patches `s` of the block's tiles.
struct In4<'a, T: Element> {
    src: &'a [T],
    /// (first source channel of the group, group source channels).
    cogs: (usize, usize),
    /// `src` (height, width).
    dims: (usize, usize),
    /// (first tile row, tile rows, tiles per row).
    rows: (usize, usize, usize),
    /// `src` row and column of tile 0's patch origin.
    off: (isize, isize),
    sb: &'a mut [T::Acc],
    v: &'a mut [T::Acc],
}

impl<T: Element> pulp::WithSimd for In4<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let In4 {
            src,
            cogs: (co0, cog),
            dims: (ho, wo),
            rows: (ty0, tr, ntx),
            off: (oy, ox),
            sb,
            v,
        } = self;
        let zero = T::Acc::zero();
        let nt = tr * ntx;
        let pw = 4 * ntx + 2;
        let (dd, rest) = sb.split_at_mut(36 * nt);
        let (ub, rest) = rest.split_at_mut(36 * nt);
        let row = &mut rest[..pw];
        let lo = (-ox).clamp(0, pw as isize) as usize;
        let hi = (wo as isize - ox).clamp(lo as isize, pw as isize) as usize;
        for co in 0..cog {
            let plane = &src[(co0 + co) * ho * wo..][..ho * wo];
            // dd[a][b][t] = src[4 ty + a + oy][4 tx + b + ox] (zero outside).
            for r in 0..tr {
                for a in 0..6 {
                    let y = (4 * (ty0 + r) + a) as isize + oy;
                    if y >= 0 && y < ho as isize && hi > lo {
                        let s = &plane[y as usize * wo..][..wo];
                        row[..lo].fill(zero);
                        row[hi..].fill(zero);
                        let s0 = (lo as isize + ox) as usize;
                        T::slice_to_acc(&s[s0..s0 + (hi - lo)], &mut row[lo..hi]);
                    } else {
                        row.fill(zero);
                    }
                    let [x0, x1, x2, x3, x4, x5] = slabs::<6, _>(dd, a * 6 * nt + r * ntx, nt, ntx);
                    gather6(row, x0, x1, x2, x3, x4, x5);
                }
            }
            // ub[i][b] = (B^T dd[.][b])[i], per column b.
            for b in 0..6 {
                let dc = |a: usize| &dd[(a * 6 + b) * nt..][..nt];
                bt6(
                    [dc(0), dc(1), dc(2), dc(3), dc(4), dc(5)],
                    slabs::<6, _>(ub, b * nt, 6 * nt, nt),
                );
            }
            // V[i][j] = (ub[i][.] B)[j], per row i, into the GEMM operands.
            for i in 0..6 {
                let uc = |b: usize| &ub[(i * 6 + b) * nt..][..nt];
                bt6(
                    [uc(0), uc(1), uc(2), uc(3), uc(4), uc(5)],
                    slabs::<6, _>(v, (i * 6 * cog + co) * nt, cog * nt, nt),
                );
            }
        }
    }
}

/// The output transform of one tile block: `Y = A^T M A` per tile and channel, stored (rounded
/// once, clipped to the image) into the item's `dst` channels.
struct Out4<'a, T: Element> {
    mb: &'a [T::Acc],
    m: usize,
    /// (first tile row, tile rows, tiles per row).
    rows: (usize, usize, usize),
    /// `dst` (height, width).
    dims: (usize, usize),
    sb: &'a mut [T::Acc],
    d: &'a mut [T],
}

impl<T: Element> pulp::WithSimd for Out4<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let Out4 {
            mb,
            m,
            rows: (ty0, tr, ntx),
            dims: (hi, wi),
            sb,
            d,
        } = self;
        let nt = tr * ntx;
        let hw = hi * wi;
        let (st, rest) = sb.split_at_mut(24 * nt);
        let (yv, rest) = rest.split_at_mut(16 * nt);
        let rowbuf = &mut rest[..wi];
        for c in 0..m {
            let mx = |xi: usize| &mb[(xi * m + c) * nt..][..nt];
            // st[o][j] = (A^T M[.][j])[o], per column j.
            for j in 0..6 {
                let [s0, s1, s2, s3] = slabs::<4, _>(st, j * nt, 6 * nt, nt);
                at6(
                    [
                        mx(j),
                        mx(6 + j),
                        mx(12 + j),
                        mx(18 + j),
                        mx(24 + j),
                        mx(30 + j),
                    ],
                    [s0, s1, s2, s3],
                );
            }
            // yv[o][q] = (st[o][.] A)[q], per row o.
            for o in 0..4 {
                let sc = |j: usize| &st[(o * 6 + j) * nt..][..nt];
                let [y0, y1, y2, y3] = slabs::<4, _>(yv, o * 4 * nt, nt, nt);
                at6([sc(0), sc(1), sc(2), sc(3), sc(4), sc(5)], [y0, y1, y2, y3]);
            }
            for r in 0..tr {
                for o in 0..4 {
                    let y = 4 * (ty0 + r) + o;
                    if y >= hi {
                        break;
                    }
                    let rr = r * ntx..(r + 1) * ntx;
                    let yq = |q: usize| &yv[(o * 4 + q) * nt..][rr.clone()];
                    let (q0, q1, q2, q3) = (yq(0), yq(1), yq(2), yq(3));
                    let drow = &mut d[c * hw + y * wi..][..wi];
                    // Interleave the tiles' columns straight into `dst` when it is the
                    // accumulation type, else through `rowbuf` and one rounding.
                    let (out, direct) = match T::as_acc_slice_mut(drow) {
                        Some(acc) => (acc, true),
                        None => (&mut rowbuf[..], false),
                    };
                    let whole = wi / 4;
                    let (body, tail) = out.split_at_mut(4 * whole);
                    interleave4(&q0[..whole], &q1[..whole], &q2[..whole], &q3[..whole], body);
                    let last = [q0[ntx - 1], q1[ntx - 1], q2[ntx - 1]];
                    tail.copy_from_slice(&last[..tail.len()]);
                    if !direct {
                        T::slice_from_acc(rowbuf, &mut d[c * hw + y * wi..][..wi]);
                    }
                }
            }
        }
    }
}

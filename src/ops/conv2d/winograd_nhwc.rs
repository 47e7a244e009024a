//! CPU Winograd F(2x2, 3x3) or F(3x3, 3x3) ([`Tile`]) for NHWC: the correlation of
//! `winograd_nchw` (`cpu_kernel.rs`, same [`WinoProblem`], F(2x2)'s filter transform
//! [`wino_filter_into`]) with the channels, contiguous in NHWC, as the vector dimension
//! instead of the tiles. Per block of tile rows: the input transform `B^T d B` of every 4x4
//! (5x5) patch reads the patch's channel vectors straight from the source
//! (`V[tile][point][c_src]`), one GEMM per transform point (`M[point][tile] = V[tile][point]
//! U[point]^T`, the tiles as rows), and the output transform `A^T M A` writes each tile's
//! 2x2 (3x3) channel vectors straight into the destination: no transposes. NCHW f32, f16 and
//! bf16 run it too, between two per-image transposes ([`winograd_nchw_via_nhwc`]). Deterministic: fixed
//! sums, each output written once, whole tile rows per work item (none of it depends on the
//! thread count).

use super::conv_direct::{
    pixel_major, scratch_as, scratch_or_own, store_rows, vectors, with_scratch, Row, RowOperands,
    Segment,
};
use super::cpu_kernel::{at4, bt4_rows, wino_filter_into, WinoProblem};
use super::filter_direct::{lanes, Level};
use crate::cpu::gemm::{matmul, MatMut, MatRef};
use crate::cpu::simd::simd_fn;
use crate::dtype::{Accum, Element};
use num_traits::Zero;
use rayon::prelude::*;

/// Tiles times transform points per block (one GEMM per point over the block's tiles): `V`
/// and `M` of a block stay in L2. 64 F(2x2) tiles, 40 F(3x3) ones.
const NHWC_TILE_POINTS: usize = 64 * 16;

/// The Winograd tile. F(2x2, 3x3): 4x4 patches, 16 points, 4 products per output.
/// F(3x3, 3x3): 5x5 patches, 25 points (0, 1, -1, -1/2 and infinity), 2.8 products per
/// output. In f32 its error stays near F(2x2)'s, where F(4x4, 3x3)'s does not
/// (`winograd4_serves`), for two reasons. The point -1/2: on `tests/reference.rs`'
/// `winograd_f32_cancellation` data (simulated with exact transforms:
/// `bench/results/2026-11-27-cpu-zen3-f3/wino_f32_sim.py`) 3.8e-6 relative L2 against 9.3e-6
/// with 2 and 1.2e-5 with 1/2 (-2 as -1/2). And the input transform in f64, rounded once
/// ([`bt5_rows`]): evaluated in f32 its roundings, amplified by the second pass, gave 1.35e-5 on
/// that test's backward (measured); in f64, 3.3e-6 (forward 1.4e-6), F(2x2) 3.1e-6 (1.1e-6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Tile {
    F2,
    F3,
}

impl Tile {
    /// Outputs per tile side.
    pub(super) const fn m(self) -> usize {
        match self {
            Tile::F2 => 2,
            Tile::F3 => 3,
        }
    }

    /// Transform points (the patch side, `m + 2`, squared): one GEMM each.
    pub(super) const fn points(self) -> usize {
        (self.m() + 2) * (self.m() + 2)
    }

    /// The tile for destination plane `(h, w)`: F(3x3) where its products, clipped border
    /// tiles counted, are at most 90% of F(2x2)'s (its transforms cost more per output).
    pub(super) fn for_plane((h, w): (usize, usize)) -> Tile {
        #[cfg(test)]
        if let Some(t) = FORCE_TILE.with(|f| f.get()) {
            return t;
        }
        let products = |t: Tile| t.points() * h.div_ceil(t.m()) * w.div_ceil(t.m());
        if 10 * products(Tile::F3) <= 9 * products(Tile::F2) {
            Tile::F3
        } else {
            Tile::F2
        }
    }
}

#[cfg(test)]
thread_local! {
    /// Tests' override of [`Tile::for_plane`] on their thread (the tile is chosen there,
    /// before the work spreads over the pool).
    pub(super) static FORCE_TILE: std::cell::Cell<Option<Tile>> =
        const { std::cell::Cell::new(None) };
}

/// `dst` (NHWC, `groups * cig` channels) from `src` (NHWC, `groups * cog` channels).
/// `filt(grp, c_dst, c_src, a, b)`: the correlation kernel's tap `(a, b)`. The point GEMMs
/// run on the direct kernels' register tiles where they serve (f32 accumulation, AVX2 or
/// AVX-512, `cig` a multiple of the vector width), else on `gemm`.
pub(super) fn winograd_nhwc<T: Element>(
    p: &WinoProblem,
    src: &[T],
    dst: &mut [T],
    filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
) {
    if dst.is_empty() {
        return;
    }
    with_scratch(|bufs| {
        let mut own = Vec::new();
        let f = PointFilter::<T::Acc>::new_in(p, Tile::for_plane(p.dst), filt, bufs, &mut own);
        run::<T>(p, &f, src, dst);
    })
}

/// `dst` (NCHW) from `src` (NCHW) through the NHWC core, image by image: the source image
/// transposed to NHWC (`pixel_major`), the core, the destination transposed back
/// (`store_rows`, one rounding). For f32, f16 and bf16 where the register tiles serve and the
/// destination's channels are a multiple of 8: the two transposes cost less than the NCHW
/// core's loss to this one (f32's NCHW core is F(2x2); f16/bf16's F(4x4) on the `gemm` crate
/// took 6.35-6.45 ms a one-thread bf16 W4 on a Zen 5, this path 4.85-4.94:
/// `bench/results/2026-12-07b-cpu-zen5-bf16/extra-ab.txt`). The same bits as NHWC on the
/// same data. `false` (nothing written) elsewhere.
pub(super) fn winograd_nchw_via_nhwc<T: Element>(
    p: &WinoProblem,
    src: &[T],
    dst: &mut [T],
    filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
) -> bool {
    let ((hd, wd), (hs, ws)) = (p.dst, p.src);
    let (cd, cs) = (p.groups * p.cig, p.groups * p.cog);
    let (dimg, simg) = (hd * wd * cd, hs * ws * cs);
    let serves = T::Acc::as_f32(&[]).is_some()
        && cd.is_multiple_of(8)
        && dimg > 0
        && simg > 0
        && lanes(Level::Best).is_some_and(|l| p.cig.is_multiple_of(l));
    if !serves {
        return false;
    }
    with_scratch(|bufs| {
        let mut own = Vec::new();
        let f = PointFilter::<f32>::new_in(p, Tile::for_plane(p.dst), filt, bufs, &mut own);
        nchw_images::<T>(p, &f, src, dst);
    });
    true
}

/// [`winograd_nchw_via_nhwc`]'s images, each transposed to NHWC, run, transposed back.
fn nchw_images<T: Element>(p: &WinoProblem, f: &PointFilter<f32>, src: &[T], dst: &mut [T]) {
    let ((hd, wd), (hs, ws)) = (p.dst, p.src);
    let (cd, cs) = (p.groups * p.cig, p.groups * p.cog);
    let (dimg, simg) = (hd * wd * cd, hs * ws * cs);
    dst.par_chunks_mut(dimg)
        .zip(src.par_chunks(simg))
        .for_each(|(di, si)| {
            with_scratch(|[sv, dv]| {
                let (Some(s_nhwc), Some(d_nhwc)) =
                    (scratch_as::<T::Acc>(sv, simg), scratch_as::<f32>(dv, dimg))
                else {
                    return;
                };
                pixel_major::<T>(si, (cs, hs, ws), (ws, 0), s_nhwc);
                let Some(s_nhwc) = T::Acc::as_f32(s_nhwc) else {
                    return;
                };
                run::<f32>(p, f, s_nhwc, d_nhwc);
                let Some(d_acc) = T::Acc::from_f32_mut(d_nhwc) else {
                    return;
                };
                store_rows::<T>(d_acc, (hd, wd, cd), hd * wd, di);
            })
        });
}

/// The filter's transform points for [`run`]: `u` (`[grp][xi][c_dst][c_src]`, for `gemm`)
/// and, where the register tiles serve, `blk` in their blocks of `nb` destination channels.
struct PointFilter<'a, A> {
    tile: Tile,
    u: &'a [A],
    blk: &'a [f32],
    nb: Option<usize>,
}

impl<'a, A: Accum> PointFilter<'a, A> {
    /// The points in `bufs`, this thread's scratch (f32; `own` holds `u` for other types):
    /// as fresh `Vec`s, W4's two 256 KB of points were new pages, faulted in and zeroed, on
    /// every call.
    fn new_in(
        p: &WinoProblem,
        tile: Tile,
        filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
        [ub, bb]: &'a mut [Vec<f32>; 2],
        own: &'a mut Vec<A>,
    ) -> Self {
        let pts = tile.points();
        let n = p.groups * pts * p.cig * p.cog;
        let u = scratch_or_own(ub, own, n);
        match tile {
            Tile::F2 => wino_filter_into(p, filt, u),
            Tile::F3 => wino3_filter_into(p, filt, u),
        }
        let u: &'a [A] = u;
        let nb = match (lanes(Level::Best), A::as_f32(u)) {
            (Some(l), Some(_)) if p.cig.is_multiple_of(l) => Some(vectors(l) * l),
            _ => None,
        };
        let blk: &'a [f32] = match (nb, A::as_f32(u)) {
            (Some(nb), Some(uf)) => {
                bb.resize(n, 0.0);
                blocked_points(uf, (p.groups, p.cig, p.cog), pts, nb, &mut bb[..n]);
                &bb[..n]
            }
            _ => &[],
        };
        PointFilter { tile, u, blk, nb }
    }
}

/// [`winograd_nhwc`] with the filter's points `f` (built for `p`).
fn run<T: Element>(p: &WinoProblem, f: &PointFilter<T::Acc>, src: &[T], dst: &mut [T]) {
    let ((hd, wd), (hs, ws)) = (p.dst, p.src);
    let (cig, cog, groups) = (p.cig, p.cog, p.groups);
    let (cd, cs) = (groups * cig, groups * cog);
    let (dimg, simg) = (hd * wd * cd, hs * ws * cs);
    if dst.is_empty() || dimg == 0 {
        return;
    }
    let (tile, u, ublk, nb) = (f.tile, f.u, f.blk, f.nb);
    let (m, pts) = (tile.m(), tile.points());
    let usz = pts * cig * cog;
    let level = Level::Best;
    let (ntx, nty) = (wd.div_ceil(m), hd.div_ceil(m));
    let br = (NHWC_TILE_POINTS / pts / ntx).clamp(1, nty);
    // Work items: (image, first tile row) with its destination rows.
    let mut items = Vec::new();
    for (i, di) in dst.chunks_mut(dimg).enumerate() {
        for (b, rows) in di.chunks_mut(m * br * wd * cd).enumerate() {
            items.push((i, b * br, rows));
        }
    }
    let arch = crate::cpu::simd::Arch::new();
    items.into_par_iter().for_each_init(
        || (Vec::new(), Vec::new(), Vec::new()),
        |(own_v, own_m, own_s), (i, ty0, rows)| {
            with_scratch(|[vs, ms, ss]| {
                let si = &src[i * simg..][..simg];
                let tr = br.min(nty - ty0);
                let nt = tr * ntx;
                // The thread's scratch (kept across calls: per-job buffers of hundreds of KB cost
                // W4 page faults and zero fills every call), or for f64 the job's own.
                let v = scratch_or_own(vs, own_v, nt * pts * cog);
                let mb = scratch_or_own(ms, own_m, pts * nt * cig);
                // The source rows this block's patches read, as the accumulation type: in place
                // for f32/f64, else converted (only these rows: an image holds many blocks).
                let (sa, first_row) = match T::as_acc_slice(si) {
                    Some(s) => (s, 0),
                    None => {
                        let (oy, row) = (p.off.0, ws * cs);
                        let lo = ((m * ty0) as isize + oy).clamp(0, hs as isize) as usize;
                        let hi =
                            ((m * (ty0 + tr)) as isize + oy + 2).clamp(lo as isize, hs as isize);
                        let n = (hi as usize - lo) * row;
                        let sbuf = scratch_or_own(ss, own_s, n);
                        T::slice_to_acc(&si[lo * row..][..n], sbuf);
                        (&*sbuf, lo)
                    }
                };
                for grp in 0..groups {
                    arch.dispatch(NhwcIn {
                        tile,
                        src: sa,
                        first_row,
                        dims: (hs, ws, cs),
                        chans: (grp * cog, cog),
                        tiles: (ty0, tr, ntx),
                        off: p.off,
                        v: &mut *v,
                    });
                    let out = |mb: &[T::Acc], (c0, n): (usize, usize), rows: &mut [T]| {
                        arch.dispatch(NhwcOut::<T> {
                            tile,
                            mb,
                            dims: (hd, wd, cd),
                            chans: (grp * cig + c0, n),
                            tiles: (ty0, tr, ntx),
                            rows,
                        })
                    };
                    if let (Some(nb), Some(vf)) = (nb, T::Acc::as_f32(v)) {
                        // M[xi][t][j] per block of nb destination channels, on the register tiles:
                        // point xi is one segment of nt pixels (the tiles, pts * cog apart in V)
                        // with one tap (its filter block, its column of V).
                        let segs: Vec<Segment> = (0..pts)
                            .map(|xi| Segment {
                                x0: xi * nt,
                                sx: 1,
                                n: nt,
                                lda: pts * cog,
                                taps: xi..xi + 1,
                            })
                            .collect();
                        for ob in (0..cig).step_by(nb) {
                            let bw = nb.min(cig - ob);
                            let at = (grp * cig + ob) * pts * cog;
                            let taps: Vec<(usize, usize)> =
                                (0..pts).map(|xi| (xi * cog * bw, xi * cog)).collect();
                            let Some(mf) = T::Acc::as_f32_mut(&mut mb[..pts * nt * bw]) else {
                                return;
                            };
                            Row {
                                ops: RowOperands {
                                    a: vf,
                                    wt: &ublk[at..][..pts * cog * bw],
                                    k: cog,
                                    segs: &segs,
                                    taps: &taps,
                                },
                                row: mf,
                                bw,
                            }
                            .run(level);
                            out(&mb[..pts * nt * bw], (ob, bw), &mut rows[..]);
                        }
                    } else {
                        let ug = &u[grp * usz..][..usz];
                        for xi in 0..pts {
                            matmul(
                                MatMut {
                                    data: &mut mb[xi * nt * cig..][..nt * cig],
                                    rows: nt,
                                    cols: cig,
                                    rs: cig,
                                    cs: 1,
                                },
                                MatRef {
                                    data: &v[xi * cog..],
                                    rows: nt,
                                    cols: cog,
                                    rs: pts * cog,
                                    cs: 1,
                                },
                                // U[xi] is [c_dst][c_src]: its transpose through the strides.
                                MatRef {
                                    data: &ug[xi * cig * cog..][..cig * cog],
                                    rows: cog,
                                    cols: cig,
                                    rs: 1,
                                    cs: cog,
                                },
                                false,
                            );
                        }
                        out(&mb[..pts * nt * cig], (0, cig), &mut rows[..]);
                    }
                }
            })
        },
    );
}

/// U (`[grp][xi][c_dst][c_src]`, `dims` = groups, destination and source channels per group,
/// `pts` points) as the register tiles' filter blocks into `out` (as long as `u`, every element
/// written): `[grp][block of nb c_dst][xi][c_src][j]`, the block of destination channel `c`
/// starting at `(grp * cig + c / nb * nb) * pts * cog`.
fn blocked_points(
    u: &[f32],
    (groups, cig, cog): (usize, usize, usize),
    pts: usize,
    nb: usize,
    out: &mut [f32],
) {
    for grp in 0..groups {
        for ob in (0..cig).step_by(nb) {
            let bw = nb.min(cig - ob);
            let blk = &mut out[(grp * cig + ob) * pts * cog..][..pts * cog * bw];
            for xi in 0..pts {
                for k in 0..cog {
                    for j in 0..bw {
                        blk[(xi * cog + k) * bw + j] =
                            u[((grp * pts + xi) * cig + ob + j) * cog + k];
                    }
                }
            }
        }
    }
}

simd_fn! {
    /// The F(3x3, 3x3) filter transform `U[grp][xi][c_dst][c_src] = G f G^T` (25 points,
    /// `xi = 5 i + j`) of the correlation kernel `filt(grp, c_dst, c_src, a, b)`, into `u`
    /// (`groups * 25 * cig * cog` elements, every one written), in f64 and rounded once. `G`'s
    /// rows: `g0`, `(g0 + g1 + g2) / 6`, `(g0 - g1 + g2) / 2`, `(-4 g0 + 2 g1 - g2) / 6`, `g2 / 2`
    /// (Toom-Cook at 0, 1, -1, -1/2 and infinity, scaled so that `B^T` and `A^T` are small
    /// integers).
    fn wino3_filter_into<A: Accum, F: Fn(usize, usize, usize, usize, usize) -> f64>(
        p: &WinoProblem,
        filt: F,
        u: &mut [A],
    ) {
        // Runs of LANES source channels at a time, each lane the scalar sequence of operations
        // (so the same bits: no FMA contraction in Rust), vectorised across the lanes and
        // compiled per SIMD level (one element at a time, for baseline x86-64, it was 5% of a
        // one-thread W4, serial before the parallel work).
        const LANES: usize = 16;
        let (cig, cog) = (p.cig, p.cog);
        let usz = 25 * cig * cog;
        for grp in 0..p.groups {
            for ci in 0..cig {
                for c0 in (0..cog).step_by(LANES) {
                    let n = LANES.min(cog - c0);
                    // The taps f(a, b) = f[3 a + b], lane l = source channel c0 + l.
                    let mut f = [[0.0f64; LANES]; 9];
                    for (t, ft) in f.iter_mut().enumerate() {
                        for (l, v) in ft[..n].iter_mut().enumerate() {
                            *v = filt(grp, ci, c0 + l, t / 3, t % 3);
                        }
                    }
                    // G f by columns: cols[b][i] = (G [f(0, b), f(1, b), f(2, b)])_i.
                    let mut cols = [[[0.0f64; LANES]; 5]; 3];
                    for (b, cb) in cols.iter_mut().enumerate() {
                        g5_lanes([&f[b], &f[3 + b], &f[6 + b]], cb);
                    }
                    // (G f) G^T by rows, rounded once into U.
                    for i in 0..5 {
                        let mut row = [[0.0f64; LANES]; 5];
                        g5_lanes([&cols[0][i], &cols[1][i], &cols[2][i]], &mut row);
                        for (j, rj) in row.iter().enumerate() {
                            let dst = &mut u[grp * usz + ((i * 5 + j) * cig + ci) * cog + c0..][..n];
                            for (d, &v) in dst.iter_mut().zip(rj) {
                                *d = A::from_f64_lossy(v);
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `o = G [g0, g1, g2]` of F(3x3, 3x3) lane by lane ([`wino3_filter_into`]'s rows of `G`).
#[inline(always)]
fn g5_lanes<const L: usize>([g0, g1, g2]: [&[f64; L]; 3], o: &mut [[f64; L]; 5]) {
    for l in 0..L {
        let (a, b, c) = (g0[l], g1[l], g2[l]);
        o[0][l] = a;
        o[1][l] = (a + b + c) / 6.0;
        o[2][l] = (a - b + c) * 0.5;
        o[3][l] = (-4.0 * a + 2.0 * b - c) / 6.0;
        o[4][l] = c * 0.5;
    }
}

/// The input transform of a block's tiles: `v[(t * P + S r + s) * n..][..n] = (B^T d B)[r][s]`
/// for tile `t`'s `S`x`S` patch `d` of channel vectors (`n` = `chans.1`; `S` the patch side,
/// `P` the points); patch elements outside the source are zero. F(2x2): `B^T = [[1, 0, -1,
/// 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]`; F(3x3): [`bt5_rows`].
struct NhwcIn<'a, A> {
    tile: Tile,
    /// Rows `first_row..` of the image (`dims` = height, width, channels), NHWC: at least
    /// those the block's patches read inside the image.
    src: &'a [A],
    first_row: usize,
    dims: (usize, usize, usize),
    /// (first channel, channels).
    chans: (usize, usize),
    /// (first tile row, tile rows, tiles per row).
    tiles: (usize, usize, usize),
    /// Source row and column of tile (0, 0)'s patch origin.
    off: (isize, isize),
    v: &'a mut [A],
}

impl<A: Accum> pulp::WithSimd for NhwcIn<'_, A> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let NhwcIn {
            tile,
            src,
            first_row,
            dims: (h, w, c),
            chans: (c0, n),
            tiles: (ty0, tr, ntx),
            off: (oy, ox),
            v,
        } = self;
        let (m, pts) = (tile.m(), tile.points());
        let zeros = vec![A::zero(); n];
        let mut tmp = vec![A::zero(); pts * n];
        let mut wide = vec![0f64; if tile == Tile::F3 { pts * n } else { 0 }];
        let at = |y: isize, x: isize| -> &[A] {
            if y < 0 || x < 0 || y as usize >= h || x as usize >= w {
                &zeros[..]
            } else {
                &src[((y as usize - first_row) * w + x as usize) * c + c0..][..n]
            }
        };
        let side = m + 2;
        for (t, vt) in v.chunks_exact_mut(pts * n).take(tr * ntx).enumerate() {
            let (ty, tx) = (ty0 + t / ntx, t % ntx);
            let (y0, x0) = ((m * ty) as isize + oy, (m * tx) as isize + ox);
            let mut d = [&zeros[..]; 25];
            for (k, dk) in d[..pts].iter_mut().enumerate() {
                *dk = at(y0 + (k / side) as isize, x0 + (k % side) as isize);
            }
            match tile {
                Tile::F2 => bt_tile(&d, &mut tmp, split_vectors(vt, n)),
                Tile::F3 => bt5_tile(&d, &mut wide, split_vectors(vt, n)),
            }
        }
    }
}

/// `B^T d B` of one patch (`d`'s first 16 vectors, row-major), vectorised over the channels:
/// `B^T` along the patch's columns into `tmp` (16 channel vectors), then along its rows into
/// `o`, each pass four four-in/four-out slice loops (`bt4_rows`, which LLVM vectorises).
#[inline(always)]
fn bt_tile<A: Accum>(d: &[&[A]; 25], tmp: &mut [A], o: [&mut [A]; 16]) {
    let n = o[0].len();
    let u: [&mut [A]; 16] = split_vectors(tmp, n);
    let [u0, u1, u2, u3, u4, u5, u6, u7, u8, u9, u10, u11, u12, u13, u14, u15] = u;
    bt4_rows(d[0], d[4], d[8], d[12], u0, u4, u8, u12);
    bt4_rows(d[1], d[5], d[9], d[13], u1, u5, u9, u13);
    bt4_rows(d[2], d[6], d[10], d[14], u2, u6, u10, u14);
    bt4_rows(d[3], d[7], d[11], d[15], u3, u7, u11, u15);
    let [o0, o1, o2, o3, o4, o5, o6, o7, o8, o9, o10, o11, o12, o13, o14, o15] = o;
    bt4_rows(u0, u1, u2, u3, o0, o1, o2, o3);
    bt4_rows(u4, u5, u6, u7, o4, o5, o6, o7);
    bt4_rows(u8, u9, u10, u11, o8, o9, o10, o11);
    bt4_rows(u12, u13, u14, u15, o12, o13, o14, o15);
}

/// [`bt_tile`] for F(3x3): 5x5 patches, ten five-in/five-out passes ([`bt5_rows`]), the
/// first into `tmp` (25 channel vectors, f64) as `tmp[5 s + r] = (B^T d)[r][s]` so that each
/// pass writes five adjacent vectors.
#[inline(always)]
fn bt5_tile<A: Accum>(d: &[&[A]; 25], tmp: &mut [f64], o: [&mut [A]; 25]) {
    let n = o[0].len();
    for (s, ts) in tmp.chunks_exact_mut(5 * n).take(5).enumerate() {
        let [u0, u1, u2, u3, u4] = split_vectors(ts, n);
        bt5_rows(
            d[s],
            d[5 + s],
            d[10 + s],
            d[15 + s],
            d[20 + s],
            u0,
            u1,
            u2,
            u3,
            u4,
        );
    }
    let u = |k: usize| &tmp[k * n..][..n];
    let mut o = o;
    for (r, orow) in o.chunks_exact_mut(5).enumerate() {
        if let [o0, o1, o2, o3, o4] = orow {
            bt5_rows(
                u(r),
                u(5 + r),
                u(10 + r),
                u(15 + r),
                u(20 + r),
                o0,
                o1,
                o2,
                o3,
                o4,
            );
        }
    }
}

/// `K` adjacent vectors of `n` from the start of `s` (empty past its end): built by a loop,
/// as `array::from_fn`'s closures stayed out of line in the transforms' loops.
#[inline(always)]
fn split_vectors<'a, A, const K: usize>(s: &'a mut [A], n: usize) -> [&'a mut [A]; K]
where
    [&'a mut [A]; K]: Default,
{
    let mut out: [&'a mut [A]; K] = Default::default();
    for (o, v) in out.iter_mut().zip(s.chunks_exact_mut(n)) {
        *o = v;
    }
    out
}

/// `u = B^T d` of F(3x3) elementwise over five vectors, `B^T = [[1, 2, -1, -2, 0], [0, 1, 3,
/// 2, 0], [0, 1, 1, -2, 0], [0, 1, 0, -1, 0], [0, -1, -2, 1, 2]]` (two operations per output,
/// through `a = d1 - d3`), in f64: the column pass into f64 (exact for these small integer
/// combinations of f32 values), the row pass rounded once into `V` (see [`Tile`]: in f32 this
/// transform alone quadrupled the error). Separate slice arguments so that LLVM vectorises
/// the loop.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn bt5_rows<I: Accum, O: Accum>(
    d0: &[I],
    d1: &[I],
    d2: &[I],
    d3: &[I],
    d4: &[I],
    u0: &mut [O],
    u1: &mut [O],
    u2: &mut [O],
    u3: &mut [O],
    u4: &mut [O],
) {
    let n = u0.len();
    let (d0, d1, d2, d3, d4) = (&d0[..n], &d1[..n], &d2[..n], &d3[..n], &d4[..n]);
    let (u1, u2, u3, u4) = (&mut u1[..n], &mut u2[..n], &mut u3[..n], &mut u4[..n]);
    let out = O::from_f64_lossy;
    for t in 0..n {
        let x0 = d0[t].to_f64_exact();
        let x1 = d1[t].to_f64_exact();
        let x2 = d2[t].to_f64_exact();
        let x3 = d3[t].to_f64_exact();
        let x4 = d4[t].to_f64_exact();
        let a = x1 - x3;
        u0[t] = out((x0 - x2) + (a + a));
        u1[t] = out(a + 3.0 * (x2 + x3));
        u2[t] = out(a + (x2 - x3));
        u3[t] = out(a);
        u4[t] = out((x4 - x2) + (x4 - x2) - a);
    }
}

/// The output transform of a block's tiles: `Y = A^T M A` from `mb[(xi * nt + t) * n..][..n]`
/// (`n` = `chans.1`, `nt` the block's tiles) into the block's destination rows (`rows`: from
/// tile row `tiles.0`'s first, `dims` = height, width, channels), each in-range output once,
/// rounded to `T` once. F(2x2): `A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]` (the same operation
/// order as `winograd_nchw`'s); F(3x3): [`at5_rows`].
struct NhwcOut<'a, T: Element> {
    tile: Tile,
    mb: &'a [T::Acc],
    dims: (usize, usize, usize),
    /// (first channel, channels).
    chans: (usize, usize),
    /// (first tile row, tile rows, tiles per row).
    tiles: (usize, usize, usize),
    rows: &'a mut [T],
}

impl<T: Element> pulp::WithSimd for NhwcOut<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let NhwcOut {
            tile,
            mb,
            dims: (_, w, c),
            chans,
            tiles: (_, tr, ntx),
            rows,
        } = self;
        let (m, n, nt) = (tile.m(), chans.1, tr * ntx);
        // Outputs past the destination's edge go here (every tile runs the whole transform).
        let mut junk = vec![T::from_acc(T::Acc::zero()); (m * m - 1) * n];
        let mut acc = vec![T::Acc::zero(); m * m * n];
        // F(3x3)'s output transform goes through 15 channel vectors; F(2x2)'s needs none.
        let mut tmp = vec![T::Acc::zero(); if tile == Tile::F3 { 15 * n } else { 0 }];
        let row_len = w * c;
        let pts = tile.points();
        for (lt, band) in rows.chunks_mut(m * row_len).take(tr).enumerate() {
            for tx in 0..ntx {
                let t = lt * ntx + tx;
                let mut mt: [&[T::Acc]; 25] = Default::default();
                for (xi, p) in mt[..pts].iter_mut().enumerate() {
                    *p = &mb[(xi * nt + t) * n..][..n];
                }
                let at = (m, m * tx, (w, c), chans);
                match tile {
                    Tile::F2 => {
                        let mut y: [&mut [T]; 4] = Default::default();
                        tile_pixels(band, at, &mut junk, &mut y);
                        at_tile::<T>(&mt, y, &mut acc);
                    }
                    Tile::F3 => {
                        let mut y: [&mut [T]; 9] = Default::default();
                        tile_pixels(band, at, &mut junk, &mut y);
                        at5_tile::<T>(&mt, y, &mut acc, &mut tmp);
                    }
                }
            }
        }
    }
}

/// Into `y` (`m * m`, row-major), a tile's output pixels: from `band` (the tile row's
/// destination rows, fewer than `m` at the bottom edge), columns `x..x + m` of width `w`,
/// channels `c` per pixel, `[c0, c0 + n)` of each; vectors of `junk` (at least `m * m - 1` of
/// `n`) stand in for the pixels past an edge.
#[inline(always)]
fn tile_pixels<'a, T>(
    band: &'a mut [T],
    (m, x, (w, c), (c0, n)): (usize, usize, (usize, usize), (usize, usize)),
    junk: &'a mut [T],
    y: &mut [&'a mut [T]],
) {
    let mut spare = junk.chunks_exact_mut(n);
    let mut lines = band.chunks_mut(w * c);
    let inside = w.saturating_sub(x).min(m);
    for yr in y.chunks_mut(m) {
        let mut pixels = lines.next().map(|r| r[x * c..].chunks_mut(c).take(inside));
        for slot in yr {
            *slot = match pixels.as_mut().and_then(Iterator::next) {
                Some(px) => &mut px[c0..][..n],
                None => spare.next().unwrap_or_default(),
            };
        }
    }
}

/// `A^T M A` of one tile (`at4` on `mt`'s first 16 points, vectorised over the channels) into
/// `y = [y00, y01, y10, y11]`: in place where `T` is its accumulation type, else through
/// `acc` (4 channel vectors) and one rounding.
#[inline(always)]
fn at_tile<T: Element>(mt: &[&[T::Acc]; 25], y: [&mut [T]; 4], acc: &mut [T::Acc]) {
    let m: [&[T::Acc]; 16] = [
        mt[0], mt[1], mt[2], mt[3], mt[4], mt[5], mt[6], mt[7], mt[8], mt[9], mt[10], mt[11],
        mt[12], mt[13], mt[14], mt[15],
    ];
    let [y00, y01, y10, y11] = y;
    let n = y00.len();
    if let (Some(a00), Some(a01), Some(a10), Some(a11)) = (
        T::as_acc_slice_mut(y00),
        T::as_acc_slice_mut(y01),
        T::as_acc_slice_mut(y10),
        T::as_acc_slice_mut(y11),
    ) {
        at4(m, a00, a01, a10, a11);
        return;
    }
    let (a00, rest) = acc[..4 * n].split_at_mut(n);
    let (a01, rest) = rest.split_at_mut(n);
    let (a10, a11) = rest.split_at_mut(n);
    at4(m, a00, a01, a10, a11);
    for (src, dst) in [&*a00, &*a01, &*a10, &*a11]
        .into_iter()
        .zip([y00, y01, y10, y11])
    {
        T::slice_from_acc(src, dst);
    }
}

/// [`at_tile`] for F(3x3): `A^T` along the columns of the 5x5 points into `tmp` (15 channel
/// vectors, `tmp[3 j + r] = (A^T M)[r][j]`), then along the rows into `y` (row-major 3x3).
#[inline(always)]
fn at5_tile<T: Element>(
    mt: &[&[T::Acc]; 25],
    y: [&mut [T]; 9],
    acc: &mut [T::Acc],
    tmp: &mut [T::Acc],
) {
    let n = y[0].len();
    for (j, tj) in tmp.chunks_exact_mut(3 * n).take(5).enumerate() {
        let [s0, s1, s2] = split_vectors(tj, n);
        at5_rows(
            mt[j],
            mt[5 + j],
            mt[10 + j],
            mt[15 + j],
            mt[20 + j],
            s0,
            s1,
            s2,
        );
    }
    let s = |k: usize| &tmp[k * n..][..n];
    if T::as_acc_slice(&[]).is_some() {
        // T is its accumulation type: straight into the destination.
        let [y0, y1, y2, y3, y4, y5, y6, y7, y8] =
            y.map(|v| T::as_acc_slice_mut(v).unwrap_or_default());
        at5_rows(s(0), s(3), s(6), s(9), s(12), y0, y1, y2);
        at5_rows(s(1), s(4), s(7), s(10), s(13), y3, y4, y5);
        at5_rows(s(2), s(5), s(8), s(11), s(14), y6, y7, y8);
        return;
    }
    for (r, ar) in acc.chunks_exact_mut(3 * n).take(3).enumerate() {
        let [a, b, c] = split_vectors(ar, n);
        at5_rows(s(r), s(3 + r), s(6 + r), s(9 + r), s(12 + r), a, b, c);
    }
    for (src, dst) in acc.chunks_exact(n).zip(y) {
        T::slice_from_acc(src, dst);
    }
}

/// `y = A^T m` of F(3x3) elementwise over five vectors, `A^T = [[1, 1, 1, 4, 0], [0, 1, -1,
/// -2, 0], [0, 1, 1, 1, 1]]`; separate slice arguments so that LLVM vectorises the loop.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn at5_rows<A: Accum>(
    m0: &[A],
    m1: &[A],
    m2: &[A],
    m3: &[A],
    m4: &[A],
    y0: &mut [A],
    y1: &mut [A],
    y2: &mut [A],
) {
    let n = y0.len();
    let (m0, m1, m2, m3, m4) = (&m0[..n], &m1[..n], &m2[..n], &m3[..n], &m4[..n]);
    let (y1, y2) = (&mut y1[..n], &mut y2[..n]);
    let (two, four) = (A::from_index(2), A::from_index(4));
    for t in 0..n {
        let s = m1[t] + m2[t];
        y0[t] = (m0[t] + s) + four * m3[t];
        y1[t] = (m1[t] - m2[t]) - two * m3[t];
        y2[t] = (s + m3[t]) + m4[t];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lane-wise filter transform gives the bits of the plain per-element sequence (the
    /// one it replaced), in f64 (before any rounding to the accumulator), for channel counts
    /// that fill, and do not fill, the lanes.
    #[test]
    fn wino3_filter_matches_per_element() {
        let g = |[g0, g1, g2]: [f64; 3]| {
            [
                g0,
                (g0 + g1 + g2) / 6.0,
                (g0 - g1 + g2) * 0.5,
                (-4.0 * g0 + 2.0 * g1 - g2) / 6.0,
                g2 * 0.5,
            ]
        };
        for (groups, cig, cog) in [(1, 3, 16), (2, 5, 37), (1, 1, 1)] {
            let p = WinoProblem {
                groups,
                cig,
                cog,
                src: (4, 4),
                dst: (4, 4),
                off: (0, 0),
            };
            let filt = |grp: usize, ci: usize, co: usize, a: usize, b: usize| {
                let k = (((grp * 7 + ci) * 131 + co) * 3 + a) * 3 + b;
                ((k * 2654435761) % 1999) as f64 / 997.0 - 1.0
            };
            let usz = 25 * cig * cog;
            let mut want = vec![f64::NAN; groups * usz];
            for grp in 0..groups {
                for ci in 0..cig {
                    for co in 0..cog {
                        let f = |a: usize, b: usize| filt(grp, ci, co, a, b);
                        let cols: [[f64; 5]; 3] =
                            std::array::from_fn(|b| g([f(0, b), f(1, b), f(2, b)]));
                        for i in 0..5 {
                            let row = g([cols[0][i], cols[1][i], cols[2][i]]);
                            for (j, &x) in row.iter().enumerate() {
                                want[grp * usz + ((i * 5 + j) * cig + ci) * cog + co] = x;
                            }
                        }
                    }
                }
            }
            let mut got = vec![f64::NAN; groups * usz];
            wino3_filter_into(&p, filt, &mut got);
            let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{groups} x {cig} x {cog}");
        }
    }
}

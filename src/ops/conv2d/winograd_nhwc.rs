//! CPU Winograd F(2x2, 3x3) for NHWC: the correlation of `winograd_nchw` (`cpu_kernel.rs`,
//! same [`WinoProblem`], same filter transform [`wino_filter_into`]) with the channels, contiguous
//! in NHWC, as the vector dimension instead of the tiles. Per block of tile rows: the input
//! transform `B^T d B` of every 4x4 patch reads the patch's channel vectors straight from
//! the source (`V[tile][point][c_src]`), one GEMM per transform point
//! (`M[point][tile] = V[tile][point] U[point]^T`, the tiles as rows), and the output
//! transform `A^T M A` writes each tile's 2x2 channel vectors straight into the
//! destination: no transposes. NCHW f32 runs it too, between two per-image transposes
//! ([`winograd_nchw_via_nhwc`]). Deterministic: fixed sums, each output written once, whole
//! tile rows per work item (none of it depends on the thread count).

use super::conv_direct::{
    pixel_major, scratch_as, store_row, vectors, with_scratch, Row, RowOperands, Segment,
};
use super::cpu_kernel::{at4, bt4_rows, wino_filter_into, WinoProblem};
use super::filter_direct::{lanes, Level};
use crate::cpu::gemm::{matmul, MatMut, MatRef};
use crate::dtype::{Accum, Element};
use num_traits::Zero;
use rayon::prelude::*;

/// Tiles per block (one GEMM per point over them): `V` and `M` of a block stay in L2.
const NHWC_TILES: usize = 64;

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
        let f = PointFilter::<T::Acc>::new_in(p, filt, bufs, &mut own);
        run::<T>(p, &f, src, dst);
    })
}

/// `dst` (NCHW) from `src` (NCHW) through the NHWC core, image by image: the source image
/// transposed to NHWC (`pixel_major`), the core, each destination row transposed back
/// (`store_row`, one rounding). For f32, whose NCHW core is F(2x2) too, where the register
/// tiles serve and the destination's channels are a multiple of 8: the two transposes cost
/// less than the NCHW core's loss to this one. `false` (nothing written) elsewhere.
pub(super) fn winograd_nchw_via_nhwc<T: Element>(
    p: &WinoProblem,
    src: &[T],
    dst: &mut [T],
    filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
) -> bool {
    let ((hd, wd), (hs, ws)) = (p.dst, p.src);
    let (cd, cs) = (p.groups * p.cig, p.groups * p.cog);
    let (dimg, simg) = (hd * wd * cd, hs * ws * cs);
    let serves = T::DTYPE == crate::dtype::DType::F32
        && cd.is_multiple_of(8)
        && dimg > 0
        && simg > 0
        && lanes(Level::Best).is_some_and(|l| p.cig.is_multiple_of(l));
    if !serves {
        return false;
    }
    with_scratch(|bufs| {
        let mut own = Vec::new();
        let f = PointFilter::<f32>::new_in(p, filt, bufs, &mut own);
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
                for (y, row) in d_acc.chunks_exact(wd * cd).enumerate() {
                    store_row::<T>(row, (wd, cd), hd * wd, &mut di[y * wd..]);
                }
            })
        });
}

/// The filter's transform points for [`run`]: `u` (`[grp][xi][c_dst][c_src]`, for `gemm`)
/// and, where the register tiles serve, `blk` in their blocks of `nb` destination channels.
struct PointFilter<'a, A> {
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
        filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
        [ub, bb]: &'a mut [Vec<f32>; 2],
        own: &'a mut Vec<A>,
    ) -> Self {
        let n = p.groups * 16 * p.cig * p.cog;
        let scratch = match A::as_f32(&[]) {
            Some(_) => scratch_as::<A>(ub, n),
            None => None,
        };
        let u: &'a mut [A] = match scratch {
            Some(u) => u,
            None => {
                own.resize(n, A::zero());
                own
            }
        };
        wino_filter_into(p, filt, u);
        let u: &'a [A] = u;
        let nb = match (lanes(Level::Best), A::as_f32(u)) {
            (Some(l), Some(_)) if p.cig.is_multiple_of(l) => Some(vectors(l) * l),
            _ => None,
        };
        let blk: &'a [f32] = match (nb, A::as_f32(u)) {
            (Some(nb), Some(uf)) => {
                bb.resize(n, 0.0);
                blocked_points(uf, (p.groups, p.cig, p.cog), nb, &mut bb[..n]);
                &bb[..n]
            }
            _ => &[],
        };
        PointFilter { u, blk, nb }
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
    let usz = 16 * cig * cog;
    let level = Level::Best;
    let (u, ublk, nb) = (f.u, f.blk, f.nb);
    let (ntx, nty) = (wd.div_ceil(2), hd.div_ceil(2));
    let br = (NHWC_TILES / ntx).clamp(1, nty);
    // Work items: (image, first tile row) with its destination rows.
    let mut items = Vec::new();
    for (i, di) in dst.chunks_mut(dimg).enumerate() {
        for (b, rows) in di.chunks_mut(2 * br * wd * cd).enumerate() {
            items.push((i, b * br, rows));
        }
    }
    let arch = pulp::Arch::new();
    items.into_par_iter().for_each_init(
        || (Vec::new(), Vec::new(), Vec::new()),
        |(v, mb, sbuf), (i, ty0, rows)| {
            let si = &src[i * simg..][..simg];
            let tr = br.min(nty - ty0);
            let nt = tr * ntx;
            // The source rows this block's patches read, as the accumulation type: in place
            // for f32/f64, else converted (only these rows: an image holds many blocks).
            let (sa, first_row) = match T::as_acc_slice(si) {
                Some(s) => (s, 0),
                None => {
                    let (oy, row) = (p.off.0, ws * cs);
                    let lo = (2 * ty0 as isize + oy).clamp(0, hs as isize) as usize;
                    let hi = (2 * (ty0 + tr) as isize + oy + 2).clamp(lo as isize, hs as isize);
                    let n = (hi as usize - lo) * row;
                    sbuf.resize(n, T::Acc::zero());
                    T::slice_to_acc(&si[lo * row..][..n], &mut sbuf[..n]);
                    (&sbuf[..n], lo)
                }
            };
            for grp in 0..groups {
                v.resize(nt * 16 * cog, T::Acc::zero());
                arch.dispatch(NhwcIn {
                    src: sa,
                    first_row,
                    dims: (hs, ws, cs),
                    chans: (grp * cog, cog),
                    tiles: (ty0, tr, ntx),
                    off: p.off,
                    v: &mut v[..],
                });
                let out = |mb: &[T::Acc], (c0, n): (usize, usize), rows: &mut [T]| {
                    arch.dispatch(NhwcOut::<T> {
                        mb,
                        dims: (hd, wd, cd),
                        chans: (grp * cig + c0, n),
                        tiles: (ty0, tr, ntx),
                        rows,
                    })
                };
                if let (Some(nb), Some(vf)) = (nb, T::Acc::as_f32(v)) {
                    // M[xi][t][j] per block of nb destination channels, on the register tiles:
                    // point xi is one segment of nt pixels (the tiles, 16 * cog apart in V)
                    // with one tap (its filter block, its column of V).
                    let segs: Vec<Segment> = (0..16)
                        .map(|xi| Segment {
                            x0: xi * nt,
                            sx: 1,
                            n: nt,
                            lda: 16 * cog,
                            taps: xi..xi + 1,
                        })
                        .collect();
                    for ob in (0..cig).step_by(nb) {
                        let bw = nb.min(cig - ob);
                        let at = (grp * cig + ob) * 16 * cog;
                        let taps: Vec<(usize, usize)> =
                            (0..16).map(|xi| (xi * cog * bw, xi * cog)).collect();
                        mb.resize(16 * nt * bw, T::Acc::zero());
                        let Some(mf) = T::Acc::as_f32_mut(&mut mb[..16 * nt * bw]) else {
                            return;
                        };
                        Row {
                            ops: RowOperands {
                                a: vf,
                                wt: &ublk[at..][..16 * cog * bw],
                                k: cog,
                                segs: &segs,
                                taps: &taps,
                            },
                            row: mf,
                            bw,
                        }
                        .run(level);
                        out(&mb[..16 * nt * bw], (ob, bw), &mut rows[..]);
                    }
                } else {
                    mb.resize(16 * nt * cig, T::Acc::zero());
                    let ug = &u[grp * usz..][..usz];
                    for xi in 0..16 {
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
                                rs: 16 * cog,
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
                    out(&mb[..16 * nt * cig], (0, cig), &mut rows[..]);
                }
            }
        },
    );
}

/// U (`[grp][xi][c_dst][c_src]`, `dims` = groups, destination and source channels per group)
/// as the register tiles' filter blocks into `out` (as long as `u`, every element written):
/// `[grp][block of nb c_dst][xi][c_src][j]`, the block of destination channel `c` starting at
/// `(grp * cig + c / nb * nb) * 16 * cog`.
fn blocked_points(
    u: &[f32],
    (groups, cig, cog): (usize, usize, usize),
    nb: usize,
    out: &mut [f32],
) {
    for grp in 0..groups {
        for ob in (0..cig).step_by(nb) {
            let bw = nb.min(cig - ob);
            let blk = &mut out[(grp * cig + ob) * 16 * cog..][..16 * cog * bw];
            for xi in 0..16 {
                for k in 0..cog {
                    for j in 0..bw {
                        blk[(xi * cog + k) * bw + j] =
                            u[((grp * 16 + xi) * cig + ob + j) * cog + k];
                    }
                }
            }
        }
    }
}

/// The input transform of a block's tiles: `v[(t * 16 + 4 r + s) * n..][..n] = (B^T d B)[r][s]`
/// for tile `t`'s 4x4 patch `d` of channel vectors (`n` = `chans.1`), `B^T = [[1, 0, -1, 0],
/// [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]`; patch elements outside the source are zero.
struct NhwcIn<'a, A> {
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
            src,
            first_row,
            dims: (h, w, c),
            chans: (c0, n),
            tiles: (ty0, tr, ntx),
            off: (oy, ox),
            v,
        } = self;
        let zeros = vec![A::zero(); n];
        let mut tmp = vec![A::zero(); 16 * n];
        let at = |y: isize, x: isize| -> &[A] {
            if y < 0 || x < 0 || y as usize >= h || x as usize >= w {
                &zeros[..]
            } else {
                &src[((y as usize - first_row) * w + x as usize) * c + c0..][..n]
            }
        };
        for (t, vt) in v.chunks_exact_mut(16 * n).take(tr * ntx).enumerate() {
            let (ty, tx) = (ty0 + t / ntx, t % ntx);
            let (y0, x0) = (2 * ty as isize + oy, 2 * tx as isize + ox);
            let d: [&[A]; 16] =
                std::array::from_fn(|k| at(y0 + (k / 4) as isize, x0 + (k % 4) as isize));
            let mut outs = vt.chunks_exact_mut(n);
            let o: [&mut [A]; 16] = std::array::from_fn(|_| outs.next().unwrap_or_default());
            bt_tile(d, &mut tmp, o);
        }
    }
}

/// `B^T d B` of one patch, vectorised over the channels: `B^T` along the patch's columns
/// into `tmp` (16 channel vectors), then along its rows into `o`, each pass four
/// four-in/four-out slice loops (`bt4_rows`, which LLVM vectorises).
#[inline(always)]
fn bt_tile<A: Accum>(d: [&[A]; 16], tmp: &mut [A], o: [&mut [A]; 16]) {
    let n = o[0].len();
    let mut it = tmp.chunks_exact_mut(n);
    let u: [&mut [A]; 16] = std::array::from_fn(|_| it.next().unwrap_or_default());
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

/// The output transform of a block's tiles: `Y = A^T M A`, `A^T = [[1, 1, 1, 0], [0, 1, -1,
/// -1]]` (the same operation order as `winograd_nchw`'s), from `mb[(xi * nt + t) * n..][..n]`
/// (`n` = `chans.1`, `nt` the block's tiles) into the block's destination rows (`rows`: from tile row `tiles.0`'s
/// first, `dims` = height, width, channels), each in-range output once, rounded to `T` once.
struct NhwcOut<'a, T: Element> {
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
            mb,
            dims: (h, w, c),
            chans: (c0, n),
            tiles: (ty0, tr, ntx),
            rows,
        } = self;
        // Outputs past the destination's edge go here (every tile runs the whole transform).
        let mut junk = vec![T::from_acc(T::Acc::zero()); 3 * n];
        let mut acc = vec![T::Acc::zero(); 4 * n];
        let row_len = w * c;
        for (lt, pair) in rows.chunks_mut(2 * row_len).take(tr).enumerate() {
            let (r0, r1) = pair.split_at_mut(row_len.min(pair.len()));
            let second = 2 * (ty0 + lt) + 1 < h;
            for tx in 0..ntx {
                let t = lt * ntx + tx;
                let m: [&[T::Acc]; 16] =
                    std::array::from_fn(|xi| &mb[(xi * tr * ntx + t) * n..][..n]);
                let x = 2 * tx;
                let right = x + 1 < w;
                let (j01, rest) = junk.split_at_mut(n);
                let (j10, j11) = rest.split_at_mut(n);
                let (y00, y01) = pixel_pair(r0, x, c, (c0, n), right, j01);
                let (y10, y11) = if second {
                    pixel_pair(r1, x, c, (c0, n), right, j11)
                } else {
                    (j10, j11)
                };
                at_tile::<T>(m, [y00, y01, y10, y11], &mut acc);
            }
        }
    }
}

/// The channel slices `[c0, c0 + n)` of pixels `x` and `x + 1` of a row, `spare` for the
/// second where `right` is false (past the edge).
#[inline(always)]
fn pixel_pair<'a, T>(
    row: &'a mut [T],
    x: usize,
    c: usize,
    (c0, n): (usize, usize),
    right: bool,
    spare: &'a mut [T],
) -> (&'a mut [T], &'a mut [T]) {
    let rest = &mut row[x * c..];
    let (a, b) = rest.split_at_mut(c.min(rest.len()));
    let a = &mut a[c0..][..n];
    if right {
        (a, &mut b[c0..][..n])
    } else {
        (a, spare)
    }
}

/// `A^T M A` of one tile (`at4`, vectorised over the channels) into `y = [y00, y01, y10,
/// y11]`: in place where `T` is its accumulation type, else through `acc` (4 channel vectors)
/// and one rounding.
#[inline(always)]
fn at_tile<T: Element>(m: [&[T::Acc]; 16], y: [&mut [T]; 4], acc: &mut [T::Acc]) {
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

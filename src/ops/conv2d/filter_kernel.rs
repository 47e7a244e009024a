//! CPU `conv2d_backprop_filter`: per group, `dW[(ky, kx, ci), co] = im2col(x)^T * dy` over the
//! `N * OH * OW` output pixels, as GEMMs on tiles of output rows (`gemm` crate); 3x3
//! stride-1 convolutions with enough channels by Winograd F(3x3, 2x2) instead; and NCHW in
//! f32 accumulation on x86 (AVX2 or AVX-512), column stride 1 or 2, by the register-tile kernel
//! of [`super::filter_direct`] (no im2col, no GEMM packing: W8 4.1 vs 5.0 ms per call on one
//! Zen 5 thread).
//!
//! For stride 2 the GEMM path stays the fallback. Tried and slower there: a polyphase
//! Winograd for 3x3 stride 2 (5x5 `x` patches per 2x2 output tile, 25 products instead of 36,
//! ±1 transforms; branch `w8-s2-experiment`) was exact but slower on W8 (6.2-6.7 vs 5.0-5.3 ms
//! CPU per call, one thread): the 4x4 polyphase split of `x`, the transforms, `gemm`'s packing
//! and the 2.7x larger partials cost more than the 28% of products saved. And per-tap GEMMs on
//! polyphase planes of one row pitch (branch `w8b-direct-experiment`): 5.4-6.0 ms, each of
//! the nine smaller GEMMs repacking the operand shared by all taps; the direct kernel avoids
//! that by keeping one `dy` block in L1 for every tap.
//!
//! Determinism: the reduction is split into a fixed number of contiguous ranges of
//! (image, row tile) units, chosen from the geometry alone. Each range accumulates its own
//! partial filter (units and tiles in order, one GEMM per tile); the partials are then summed
//! in range order. Neither step depends on the thread count.

use super::conv_direct::{pixel_major, scratch_or_own, with_scratch};
use super::cpu_kernel::{im2col_nchw, im2col_nhwc, WINO_MIN_CHANNELS};
use crate::cpu::gemm::{matmul, MatMut, MatRef};
use crate::cpu::simd::simd_fn;
use crate::dtype::Accum;
use crate::dtype::Element;
use crate::geometry::window::ConvGeometry;
use crate::ops::conv2d::FilterLayout;
use crate::tensor::Layout;
use num_traits::Zero;
use rayon::prelude::*;

/// Most reduction splits (partial filters). More splits feed more threads; each costs one
/// filter-sized partial and one pass of the final sum, and a range that starts inside an
/// image converts (or phase-splits) that image again. 8 rather than 16: on batch-8 shapes one
/// image per range, 3-5% less CPU time on W7/W8, still balanced on 2 or 4 threads.
const MAX_SPLITS: usize = 8;

/// Elements of a column (im2col) tile (256 KiB in f32).
const COL_ELEMS: usize = 1 << 16;

/// Most elements of all partial filters together (64 MiB in f32): huge filters get fewer
/// splits.
const PARTIAL_BUDGET: usize = 1 << 24;

/// The reduction's split: `units` (image, row tile) pairs of `rows` output rows each, in
/// `splits` contiguous ranges. Depends on the geometry only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FilterSplit {
    /// Output rows per tile.
    pub rows: usize,
    /// Tiles per image.
    pub tiles: usize,
    /// Number of reduction ranges.
    pub splits: usize,
}

impl FilterSplit {
    pub(crate) fn new(g: &ConvGeometry) -> Self {
        let k = g.h.kernel * g.w.kernel * (g.ci / g.groups);
        // Column tiles of about COL_ELEMS: the im2col block stays in L2 for the GEMM's packing.
        let rows = (COL_ELEMS / (k * g.w.output).max(1)).clamp(1, g.h.output.max(1));
        Self::with_rows(g, rows)
    }

    /// The split into tiles of `rows` output rows (at least one).
    pub(crate) fn with_rows(g: &ConvGeometry, rows: usize) -> Self {
        let k = g.h.kernel * g.w.kernel * (g.ci / g.groups);
        let rows = rows.max(1);
        let tiles = g.h.output.div_ceil(rows);
        let flen = (k * g.co).max(1);
        let splits = (g.n * tiles)
            .min(MAX_SPLITS)
            .min(PARTIAL_BUDGET / flen)
            .max(1);
        FilterSplit {
            rows,
            tiles,
            splits,
        }
    }

    /// Units `lo..hi` of range `s`.
    pub(super) fn range(&self, n: usize, s: usize) -> std::ops::Range<usize> {
        let u = n * self.tiles;
        (s * u / self.splits)..((s + 1) * u / self.splits)
    }
}

/// `dw` (`filter_layout` order) from `x` and `dy` (both in `layout`). `dw` is fully written.
pub(crate) fn backprop_filter<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    x: &[T],
    dy: &[T],
    filter_layout: FilterLayout,
    dw: &mut [T],
) {
    let direct = |dw: &mut [T]| {
        super::filter_direct::backprop_filter_direct(
            g,
            layout,
            x,
            dy,
            filter_layout,
            dw,
            super::filter_direct::split::<T>(g),
            super::filter_direct::Level::Best,
        )
    };
    if super::filter_direct::pairs_first::<T>() && direct(dw) {
        return;
    }
    if winograd_applies(g) {
        return backprop_filter_winograd(g, layout, x, dy, filter_layout, dw, MAX_SPLITS);
    }
    if direct(dw) {
        return;
    }
    let split = FilterSplit::new(g);
    backprop_filter_split(g, layout, x, dy, filter_layout, dw, split);
}

/// [`backprop_filter`] with a given split (tests vary it).
pub(crate) fn backprop_filter_split<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    x: &[T],
    dy: &[T],
    filter_layout: FilterLayout,
    dw: &mut [T],
    split: FilterSplit,
) {
    if dw.is_empty() {
        return;
    }
    let zero = T::Acc::zero();
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (cig, cog) = (g.ci / g.groups, g.co / g.groups);
    let k = g.h.kernel * g.w.kernel * cig;
    let flen = k * g.co;
    let (ximg, p) = (g.ci * hi * wi, ho * wo);
    let dyimg = g.co * p;
    if g.n == 0 || p == 0 || ximg == 0 {
        // Every sum is empty.
        dw.fill(T::default());
        return;
    }
    let phased = layout == Layout::Nchw && phase_rows_fit(g);
    let mut partials = vec![zero; split.splits * flen];
    partials.par_chunks_mut(flen).enumerate().for_each_init(
        || (Vec::new(), Vec::new(), Vec::new(), usize::MAX),
        |(col, xa, dya, cur), (s, part)| {
            for unit in split.range(g.n, s) {
                let (i, t) = (unit / split.tiles, unit % split.tiles);
                if *cur != i {
                    // NCHW: x as phase rows (im2col by copies); NHWC: the image in the
                    // accumulation type (a copy for f16 only).
                    if phased {
                        phase_rows::<T>(g, &x[i * ximg..][..ximg], xa);
                    } else {
                        to_acc::<T>(&x[i * ximg..][..ximg], xa);
                    }
                    to_acc::<T>(&dy[i * dyimg..][..dyimg], dya);
                    *cur = i;
                }
                let (xi, dyi): (&[T::Acc], &[T::Acc]) = (
                    T::as_acc_slice(&x[i * ximg..][..ximg]).unwrap_or(xa),
                    T::as_acc_slice(&dy[i * dyimg..][..dyimg]).unwrap_or(dya),
                );
                let oy0 = t * split.rows;
                let tr = split.rows.min(ho - oy0);
                let tp = tr * wo;
                col.resize(k * tp, zero);
                for grp in 0..g.groups {
                    let dst = MatMut {
                        data: &mut part[grp * cog..],
                        rows: k,
                        cols: cog,
                        rs: g.co,
                        cs: 1,
                    };
                    match layout {
                        Layout::Nchw => {
                            if phased {
                                im2col_phased(g, grp, oy0, tr, xa, col);
                            } else {
                                im2col_nchw(g, grp, oy0, tr, xi, col);
                            }
                            // col[k, p] * dy_g[co, p]^T
                            let a = MatRef {
                                data: &col[..k * tp],
                                rows: k,
                                cols: tp,
                                rs: tp,
                                cs: 1,
                            };
                            let b = MatRef {
                                data: &dyi[grp * cog * p + oy0 * wo..],
                                rows: tp,
                                cols: cog,
                                rs: 1,
                                cs: p,
                            };
                            matmul(dst, a, b, true);
                        }
                        Layout::Nhwc => {
                            im2col_nhwc(g, grp, oy0, tr, xi, col);
                            // col[p, k]^T * dy[p, co_g]
                            let a = MatRef {
                                data: &col[..k * tp],
                                rows: k,
                                cols: tp,
                                rs: 1,
                                cs: k,
                            };
                            let b = MatRef {
                                data: &dyi[oy0 * wo * g.co + grp * cog..],
                                rows: tp,
                                cols: cog,
                                rs: g.co,
                                cs: 1,
                            };
                            matmul(dst, a, b, true);
                        }
                    }
                }
            }
        },
    );
    sum_partials(&mut partials, flen);
    store_filter(g, &partials[..flen], filter_layout, dw);
}

/// NCHW `x` of one image as stride-phase rows in the accumulation type:
/// `xp[((c * hi + y) * s + b) * len + j] = x[c][y][s j + b - left]` (zero outside `x`), with
/// `s` the column stride and `len = wo + (kw - 1) d / s`. Tap `kx`'s input columns for outputs
/// `0..wo` are then the contiguous run `j0..j0 + wo` of phase `b` with `kx d = s j0 + b`:
/// [`im2col_phased`] copies runs instead of gathering at the stride (and the padding columns
/// are already zeros).
pub(super) fn phase_rows<T: Element>(g: &ConvGeometry, xi: &[T], xp: &mut Vec<T::Acc>) {
    let (hi, wi, s, left) = (g.h.input, g.w.input, g.w.stride, g.w.pad_before);
    let len = phase_len(g);
    xp.resize(g.ci * hi * s * len, T::Acc::zero());
    for (src, dst) in xi.chunks_exact(wi).zip(xp.chunks_exact_mut(s * len)) {
        for (b, prow) in dst.chunks_exact_mut(len).enumerate() {
            // Valid j: 0 <= s j + b - left < wi.
            let lo = left.saturating_sub(b).div_ceil(s).min(len);
            let hi_j = (wi + left).saturating_sub(b).div_ceil(s).clamp(lo, len);
            prow[..lo].fill(T::Acc::zero());
            prow[hi_j..].fill(T::Acc::zero());
            if hi_j > lo {
                let first = s * lo + b - left;
                if s == 1 {
                    T::slice_to_acc(&src[first..][..hi_j - lo], &mut prow[lo..hi_j]);
                } else if s == 2 {
                    every_other::<T>(&src[first..], &mut prow[lo..hi_j]);
                } else {
                    // chunks(s) rather than step_by(s): the compiler vectorises it.
                    for (d, ch) in prow[lo..hi_j].iter_mut().zip(src[first..].chunks(s)) {
                        *d = ch[0].to_acc();
                    }
                }
            }
        }
    }
}

/// Whether [`phase_rows`] stay near the size of `x`: not with padding or a stride far
/// beyond the row (each phase row spans the padded width), where the gather im2col is used.
pub(super) fn phase_rows_fit(g: &ConvGeometry) -> bool {
    g.w.stride * phase_len(g) <= 2 * g.w.input + 4 * g.w.kernel * g.w.dilation
}

simd_fn! {
    /// `dst[t] = src[2 t]` (stride-2 phase rows, vectorised).
    fn every_other<T: Element>(src: &[T], dst: &mut [T::Acc]) {
        let n = dst.len();
        if n == 0 {
            return;
        }
        let src = &src[..2 * n - 1];
        for t in 0..n {
            dst[t] = src[2 * t].to_acc();
        }
    }
}

/// Length of one phase row of [`phase_rows`].
pub(super) fn phase_len(g: &ConvGeometry) -> usize {
    g.w.output + (g.w.kernel - 1) * g.w.dilation / g.w.stride
}

/// The NCHW im2col tile `col[(ky, kx, c), (oy - oy0, ox)]` of group `grp`, output rows
/// `oy0..oy0 + tr`, from the image's [`phase_rows`] `xp`: one copy per (tap, channel, row).
fn im2col_phased<A: Accum>(
    g: &ConvGeometry,
    grp: usize,
    oy0: usize,
    tr: usize,
    xp: &[A],
    col: &mut [A],
) {
    let (hi, wo, s, cig) = (g.h.input, g.w.output, g.w.stride, g.ci / g.groups);
    let (len, kw) = (phase_len(g), g.w.kernel);
    let tp = tr * wo;
    for ky in 0..g.h.kernel {
        for kx in 0..kw {
            let (j0, b) = (kx * g.w.dilation / s, kx * g.w.dilation % s);
            for c in 0..cig {
                let krow = &mut col[((ky * kw + kx) * cig + c) * tp..][..tp];
                let plane = &xp[(grp * cig + c) * hi * s * len..][..hi * s * len];
                for (oy, dst) in (oy0..oy0 + tr).zip(krow.chunks_exact_mut(wo)) {
                    match g.h.input_index(oy, ky) {
                        Some(y) => dst.copy_from_slice(&plane[(y * s + b) * len + j0..][..wo]),
                        None => dst.fill(A::zero()),
                    }
                }
            }
        }
    }
}

/// Sums `partials` (`splits` consecutive blocks of `len`) in split order into the first block.
pub(super) fn sum_partials<A: Accum>(partials: &mut [A], len: usize) {
    let (first, rest) = partials.split_at_mut(len);
    const BLOCK: usize = 4096;
    first
        .par_chunks_mut(BLOCK)
        .enumerate()
        .for_each(|(b, acc)| {
            for part in rest.chunks(len) {
                for (a, &v) in acc.iter_mut().zip(&part[b * BLOCK..]) {
                    *a = *a + v;
                }
            }
        });
}

/// Rounds an HWIO filter in the accumulation type into `dw` (`filter_layout` order).
pub(super) fn store_filter<T: Element>(
    g: &ConvGeometry,
    hwio: &[T::Acc],
    filter_layout: FilterLayout,
    dw: &mut [T],
) {
    let cig = g.ci / g.groups;
    match filter_layout {
        FilterLayout::Hwio => T::slice_from_acc(hwio, dw),
        FilterLayout::Oihw => {
            let (kh, kw) = (g.h.kernel, g.w.kernel);
            for (o, plane) in dw.chunks_mut(cig * kh * kw).enumerate() {
                for (j, d) in plane.iter_mut().enumerate() {
                    // j = (c * kh + y) * kw + x
                    let (c, yx) = (j / (kh * kw), j % (kh * kw));
                    *d = T::from_acc(hwio[(yx * cig + c) * g.co + o]);
                }
            }
        }
    }
}

/// Winograd F(3x3, 2x2) covers 3x3, stride 1, dilation 1 with enough channels for its 16
/// GEMMs (`cig x cog`) to pay off (either layout: both are split into channel-minor
/// polyphase planes first, [`Phases`]).
fn winograd_applies(g: &ConvGeometry) -> bool {
    let (cig, cog) = (g.ci / g.groups, g.co / g.groups);
    g.h.kernel == 3
        && g.w.kernel == 3
        && g.h.stride == 1
        && g.w.stride == 1
        && g.h.dilation == 1
        && g.w.dilation == 1
        && cig >= WINO_MIN_CHANNELS
        && cog >= WINO_MIN_CHANNELS
}

/// Winograd tiles per block (whole tile rows, at least one): a block's transformed `x` and
/// `dy` (`16 x channels x tiles` each) stay near L2.
const WINO_TILES: usize = 128;

/// 3x3 stride-1 `dw` by Winograd F(3x3, 2x2): the output pixels in 2x2 tiles; each tile
/// adds to `dW[ky, kx]` the correlation of its 4x4 `x` patch `d` with its 2x2 `dy` block `h`,
/// which is `G^T [(A h A^T) (.) (B^T d B)] G` with `B^T` as in the input gradient's Winograd,
/// `A = [[1, 0], [1, 1], [1, -1], [0, -1]]` and `G^T = [[1, .5, .5, 0], [0, .5, -.5, 0],
/// [0, .5, .5, 1]]` (the transposed F(2, 3)). The output transform is linear, so the 16
/// products are summed over all tiles first, as 16 GEMMs per group `M[xi][c, co] =
/// V[xi][c, t] * U[xi][t, co]` (depth: the tiles), and transformed once. The transforms
/// read the images' 2x2 polyphase planes ([`Phases`]; either layout) and run over whole
/// blocks of tile rows. The tiles are cut into (image, block of tile rows) units and those
/// into at most `max_splits` fixed ranges, each with its own partial `M`, summed in range
/// order: deterministic, independent of the thread count.
///
/// (F(3x3, 4x4) needs 36 products per 4x4 tile instead of 64, but its f32 error reached
/// 3.9e-5 relative L2 on a test input, over the 1e-5 contract.)
fn backprop_filter_winograd<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    x: &[T],
    dy: &[T],
    filter_layout: FilterLayout,
    dw: &mut [T],
    max_splits: usize,
) {
    let zero = T::Acc::zero();
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (cig, cog, groups) = (g.ci / g.groups, g.co / g.groups, g.groups);
    let (ximg, dyimg) = (g.ci * hi * wi, g.co * ho * wo);
    if g.n == 0 || ho * wo == 0 || ximg == 0 {
        dw.fill(T::default());
        return;
    }
    let ph = Phases::new(g);
    let (ntx, nty, w1) = (ph.ntx, ph.nty, ph.w1);
    let br = (WINO_TILES / ntx).clamp(1, nty);
    let blocks = nty.div_ceil(br);
    let units = g.n * blocks;
    let plen = 16 * cig * g.co;
    let splits = units
        .min(max_splits)
        .min(PARTIAL_BUDGET / plen.max(1))
        .max(1);
    let mut partials = vec![zero; splits * plen];
    // Per split: the polyphase planes of the image in hand, the transformed tiles V and U
    // (for the largest block) and the transforms' row buffer, in this thread's scratch (f32;
    // kept across calls: allocated per call, their megabytes were page faults, zero fills and
    // unmaps every call), `pm` NCHW's pixel-major copy.
    let pm_len = match layout {
        Layout::Nchw => (g.ci * hi * wi).max(g.co * ho * wo),
        Layout::Nhwc => 0,
    };
    let sb_len = 16 * (transform_slots(g.ci) * g.ci).max(transform_slots(g.co) * g.co);
    let lens = [
        4 * ph.xpk * g.ci,
        4 * ph.dypk * g.co,
        pm_len,
        16 * br * w1 * g.ci,
        16 * br * w1 * g.co,
        sb_len,
    ];
    partials
        .par_chunks_mut(plen)
        .enumerate()
        .for_each(|(s, part)| {
            with_scratch::<6, _>(|scratch| {
                let mut own: [Vec<T::Acc>; 6] = Default::default();
                let [xph, dyph, pm, v, u, sb] = {
                    let mut bufs = scratch.iter_mut().zip(own.iter_mut()).zip(lens);
                    std::array::from_fn(|_| match bufs.next() {
                        Some(((sc, ow), n)) => scratch_or_own::<T::Acc>(sc, ow, n),
                        None => unreachable!("six buffers"),
                    })
                };
                let mut cur = usize::MAX;
                for unit in (s * units / splits)..((s + 1) * units / splits) {
                    let (i, b) = (unit / blocks, unit % blocks);
                    if cur != i {
                        ph.build_x::<T>(layout, &x[i * ximg..][..ximg], xph, pm);
                        ph.build_dy::<T>(layout, &dy[i * dyimg..][..dyimg], dyph, pm);
                        cur = i;
                    }
                    let ty0 = b * br;
                    let tr = br.min(nty - ty0);
                    // Tile slots, ntx + 1 per tile row (see wino_x).
                    let nt = tr * w1;
                    let (v, u) = (&mut v[..16 * nt * g.ci], &mut u[..16 * nt * g.co]);
                    // V[xi][t'][c] = (B^T d B) of the x patches, U[xi][t'][co] = (A h A^T) of
                    // the dy blocks: every channel of every group at once (the transforms are
                    // per channel), channel-minor so that `gemm` reads V unpacked.
                    wino_x(&ph, xph, (ty0, tr), sb, v);
                    wino_dy(&ph, dyph, (ty0, tr), sb, u);
                    for grp in 0..groups {
                        for xi in 0..16 {
                            matmul(
                                MatMut {
                                    data: &mut part[(grp * 16 + xi) * cig * cog..][..cig * cog],
                                    rows: cig,
                                    cols: cog,
                                    rs: cog,
                                    cs: 1,
                                },
                                MatRef {
                                    data: &v[xi * nt * g.ci + grp * cig..],
                                    rows: cig,
                                    cols: nt,
                                    rs: 1,
                                    cs: g.ci,
                                },
                                MatRef {
                                    data: &u[xi * nt * g.co + grp * cog..],
                                    rows: nt,
                                    cols: cog,
                                    rs: g.co,
                                    cs: 1,
                                },
                                true,
                            );
                        }
                    }
                }
            });
        });
    sum_partials(&mut partials, plen);
    // Output transform Y = G^T M G per (group, c, co), into an HWIO filter.
    let m = &partials[..plen];
    let mut hwio = vec![zero; 9 * cig * g.co];
    let half = T::Acc::from_f64_lossy(0.5);
    for grp in 0..groups {
        for c in 0..cig {
            for co in 0..cog {
                let mm = |i: usize, j: usize| m[((grp * 16 + i * 4 + j) * cig + c) * cog + co];
                // Rows: S[k][j] = sum_i G^T[k][i] M[i][j].
                let s: [[T::Acc; 4]; 3] = std::array::from_fn(|k| {
                    std::array::from_fn(|j| {
                        let (m0, m1, m2, m3) = (mm(0, j), mm(1, j), mm(2, j), mm(3, j));
                        match k {
                            0 => m0 + (m1 + m2) * half,
                            1 => (m1 - m2) * half,
                            _ => (m1 + m2) * half + m3,
                        }
                    })
                });
                for (ky, r) in s.iter().enumerate() {
                    let y = [
                        r[0] + (r[1] + r[2]) * half,
                        (r[1] - r[2]) * half,
                        (r[1] + r[2]) * half + r[3],
                    ];
                    for (kx, &val) in y.iter().enumerate() {
                        hwio[((ky * 3 + kx) * cig + c) * g.co + grp * cog + co] = val;
                    }
                }
            }
        }
    }
    store_filter(g, &hwio, filter_layout, dw);
}

/// The 2x2 polyphase split of one image's (padded) `x` and `dy`, in the accumulation type,
/// channel-minor: `xph[a][b][i][t][c] = x[c][2 i + a - top][2 t + b - left]` and
/// `dyph[p][b][i][t][co] = dy[co][2 i + p][2 t + b]` (zero outside), `w1 = ntx + 1` slots per
/// row `i`. For tile row `r`, row `k` of every 4x4 `x` patch (column `m` of tile `t`) is then
/// `xph[k % 2][m % 2][r + k / 2][t + m / 2][..]`: the transforms read contiguous runs of
/// (slot, channel) covering a whole block of tile rows (one spare slot per row) instead of
/// gathering at stride 2 row by row, and write V and U channel-minor, the layout `gemm` reads
/// without packing its left operand.
struct Phases {
    ntx: usize,
    nty: usize,
    w1: usize,
    /// Elements of one `x` phase plane: `(nty + 1) w1 + 1` (the shifted reads of the last
    /// slot stay inside).
    xpk: usize,
    /// Elements of one `dy` phase plane: `nty w1`.
    dypk: usize,
    ci: usize,
    co: usize,
    x: (usize, usize),
    dy: (usize, usize),
    pads: (usize, usize),
}

impl Phases {
    fn new(g: &ConvGeometry) -> Self {
        let (ntx, nty) = (g.w.output.div_ceil(2), g.h.output.div_ceil(2));
        let w1 = ntx + 1;
        Phases {
            ntx,
            nty,
            w1,
            xpk: (nty + 1) * w1 + 1,
            dypk: nty * w1,
            ci: g.ci,
            co: g.co,
            x: (g.h.input, g.w.input),
            dy: (g.h.output, g.w.output),
            pads: (g.h.pad_before, g.w.pad_before),
        }
    }

    /// `xph` of image `xi` (in `layout`; `pm`: scratch).
    fn build_x<T: Element>(&self, layout: Layout, xi: &[T], xph: &mut [T::Acc], pm: &mut [T::Acc]) {
        let rows = 2 * (self.nty + 1);
        let dims = (self.ci, self.x.0, self.x.1);
        let slots = (rows, self.w1, self.xpk);
        split2::<T>(layout, xi, dims, self.pads, slots, xph, pm);
    }

    /// `dyph` of image `dyi` (in `layout`; `pm`: scratch).
    fn build_dy<T: Element>(
        &self,
        layout: Layout,
        dyi: &[T],
        dyph: &mut [T::Acc],
        pm: &mut [T::Acc],
    ) {
        let rows = 2 * self.nty;
        let dims = (self.co, self.dy.0, self.dy.1);
        let slots = (rows, self.w1, self.dypk);
        split2::<T>(layout, dyi, dims, (0, 0), slots, dyph, pm);
    }
}

/// The 2x2 polyphase split of one image `src` (`ch` channels of `h x w`, in `layout`),
/// channel-minor: `out[a][b][i][t][c] = src[c][2 i + a - top][2 t + b - left]` (zero outside)
/// for `2 i + a < rows`, `t < w1`, in planes of `pk` slots of `ch` channels (the rest zero;
/// `out` holds the four planes). NHWC pixels are copied as they are; NCHW goes through a
/// pixel-major copy (`pm`, at least `h w ch` long) first.
fn split2<T: Element>(
    layout: Layout,
    src: &[T],
    (ch, h, w): (usize, usize, usize),
    (top, left): (usize, usize),
    (rows, w1, pk): (usize, usize, usize),
    out: &mut [T::Acc],
    pm: &mut [T::Acc],
) {
    let zero = T::Acc::zero();
    // Every slot is written once: a pixel's, or zero (the buffer is reused, not cleared:
    // clearing it first was 2-4% of a one-thread W7).
    let out = &mut out[..4 * pk * ch];
    // Pixel (y, xx)'s slot in `out`, if it has one.
    let slot = |y: usize, xx: usize| {
        let (yp, xp) = (y + top, xx + left);
        let (a, i, b, t) = (yp % 2, yp / 2, xp % 2, xp / 2);
        (yp < rows && t < w1).then_some(((a * 2 + b) * pk + i * w1 + t) * ch)
    };
    for (ab, plane) in out.chunks_exact_mut(pk * ch).enumerate() {
        let (a, b) = (ab / 2, ab % 2);
        for (s, px) in plane.chunks_exact_mut(ch).enumerate() {
            let (yp, xp) = (2 * (s / w1) + a, 2 * (s % w1) + b);
            let pixel = yp < rows && (top..top + h).contains(&yp) && (left..left + w).contains(&xp);
            if !pixel {
                px.fill(zero);
            }
        }
    }
    match layout {
        Layout::Nhwc => {
            for (p, px) in src.chunks_exact(ch).take(h * w).enumerate() {
                if let Some(at) = slot(p / w, p % w) {
                    T::slice_to_acc(px, &mut out[at..][..ch]);
                }
            }
        }
        Layout::Nchw => {
            let pm = &mut pm[..h * w * ch];
            pixel_major::<T>(src, (ch, h, w), (w, 0), pm);
            for (p, px) in pm.chunks_exact(ch).take(h * w).enumerate() {
                if let Some(at) = slot(p / w, p % w) {
                    out[at..][..ch].copy_from_slice(px);
                }
            }
        }
    }
}

simd_fn! {
    /// `o_k = (B^T d)_k` of F(2, 3), elementwise over the columns of `d` (four rows):
    /// `B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]]`. Separate slice
    /// arguments (not arrays), so the compiler knows they do not alias and vectorises.
    #[allow(clippy::too_many_arguments)]
    fn wino_bt<A: Accum>(
        d0: &[A],
        d1: &[A],
        d2: &[A],
        d3: &[A],
        o0: &mut [A],
        o1: &mut [A],
        o2: &mut [A],
        o3: &mut [A],
    ) {
        let n = o0.len();
        let (d0, d1, d2, d3) = (&d0[..n], &d1[..n], &d2[..n], &d3[..n]);
        let (o1, o2, o3) = (&mut o1[..n], &mut o2[..n], &mut o3[..n]);
        for t in 0..n {
            let (a, b, c, e) = (d0[t], d1[t], d2[t], d3[t]);
            o0[t] = a - c;
            o1[t] = b + c;
            o2[t] = c - b;
            o3[t] = b - e;
        }
    }
}

simd_fn! {
    /// `o_k = (A h)_k` of F(2, 3), elementwise over the columns of `h` (two rows):
    /// `A = [[1, 0], [1, 1], [1, -1], [0, -1]]`.
    fn wino_a<A: Accum>(h0: &[A], h1: &[A], o0: &mut [A], o1: &mut [A], o2: &mut [A], o3: &mut [A]) {
        let n = o0.len();
        let (h0, h1) = (&h0[..n], &h1[..n]);
        let (o1, o2, o3) = (&mut o1[..n], &mut o2[..n], &mut o3[..n]);
        for t in 0..n {
            let (a, b) = (h0[t], h1[t]);
            o0[t] = a;
            o1[t] = a + b;
            o2[t] = a - b;
            o3[t] = -b;
        }
    }
}

/// Four disjoint `len`-long runs of `buf`, at `off` in each of its first four `stride`-long
/// chunks.
#[inline(always)]
fn four_runs<A>(buf: &mut [A], stride: usize, off: usize, len: usize) -> [&mut [A]; 4] {
    let mut it = buf.chunks_exact_mut(stride);
    std::array::from_fn(|_| match it.next() {
        Some(ch) => &mut ch[off..][..len],
        None => unreachable!("four chunks"),
    })
}

/// Tile slots per pass of [`wino_x`] and [`wino_dy`] for `ch` channels: a pass's 16 row-transformed
/// runs (`16 x slots x ch`) stay in L1 (32 KB in f32).
fn transform_slots(ch: usize) -> usize {
    (2048 / ch.max(1)).max(1)
}

/// The `x` transform of one tile block (rows `ty0..ty0 + tr`): `V[xi][t'][c] = (B^T d B)[xi]`
/// for the 4x4 `x` patches `d` of its tiles (patch of tile `(ty, tx)` at
/// `x[2 ty - top][2 tx - left]`, zero outside `x`), every channel, with `w1 = ntx + 1` slots
/// per tile row (`t' = r w1 + tx`; the spare last slot of each row set to zero): the column
/// transform (`d B`, per patch row `k`) and the row transform (per column `j`), each over
/// contiguous runs of (slot, channel) of the channel-minor polyphase planes.
fn wino_x<A: Accum>(ph: &Phases, xph: &[A], (ty0, tr): (usize, usize), sb: &mut [A], v: &mut [A]) {
    let (w1, ntx, pk, ci) = (ph.w1, ph.ntx, ph.xpk, ph.ci);
    let ntp = tr * w1;
    let slab = ntp * ci;
    let step = transform_slots(ci);
    for q0 in (0..ntp).step_by(step) {
        let len = step.min(ntp - q0) * ci;
        let hb = &mut sb[..16 * len];
        for k in 0..4 {
            let base = (ty0 + k / 2) * w1 + q0;
            let p = |b: usize, sh: usize| &xph[(((k % 2) * 2 + b) * pk + base + sh) * ci..][..len];
            // hb[j][k] = (d B)[j] of patch row k.
            let [o0, o1, o2, o3] = four_runs(hb, 4 * len, k * len, len);
            wino_bt(p(0, 0), p(1, 0), p(0, 1), p(1, 1), o0, o1, o2, o3);
        }
        for j in 0..4 {
            let hj = &hb[j * 4 * len..][..4 * len];
            let d = |k: usize| &hj[k * len..][..len];
            let [o0, o1, o2, o3] = four_runs(v, 4 * slab, j * slab + q0 * ci, len);
            wino_bt(d(0), d(1), d(2), d(3), o0, o1, o2, o3);
        }
    }
    // The spare slot of each row transformed neighbouring data: zero it (U is zero there
    // too, so it adds exactly nothing, whatever x holds).
    for vx in v[..16 * slab].chunks_exact_mut(slab) {
        for r in 0..tr {
            vx[(r * w1 + ntx) * ci..][..ci].fill(A::zero());
        }
    }
}

/// The `dy` transform of one tile block: `U[xi][t'][co] = (A h A^T)[xi]` for the 2x2 `dy`
/// blocks `h` of its tiles (zero outside `dy`; slots as in [`wino_x`], the spare one zero
/// since its `dy` columns lie outside), every channel, over the whole block.
fn wino_dy<A: Accum>(
    ph: &Phases,
    dyph: &[A],
    (ty0, tr): (usize, usize),
    sb: &mut [A],
    u: &mut [A],
) {
    let (w1, pk, co) = (ph.w1, ph.dypk, ph.co);
    let ntp = tr * w1;
    let slab = ntp * co;
    let step = transform_slots(co);
    for q0 in (0..ntp).step_by(step) {
        let len = step.min(ntp - q0) * co;
        let rb = &mut sb[..8 * len];
        for p in 0..2 {
            let h = |b: usize| &dyph[((p * 2 + b) * pk + ty0 * w1 + q0) * co..][..len];
            // rb[j][p] = (h A^T)[j] of dy row p.
            let [o0, o1, o2, o3] = four_runs(rb, 2 * len, p * len, len);
            wino_a(h(0), h(1), o0, o1, o2, o3);
        }
        for j in 0..4 {
            let rj = &rb[j * 2 * len..][..2 * len];
            let [o0, o1, o2, o3] = four_runs(u, 4 * slab, j * slab + q0 * co, len);
            wino_a(&rj[..len], &rj[len..], o0, o1, o2, o3);
        }
    }
}

fn to_acc<T: Element>(src: &[T], buf: &mut Vec<T::Acc>) {
    if T::as_acc_slice(src).is_none() {
        buf.resize(src.len(), T::Acc::zero());
        T::slice_to_acc(src, buf);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::window::{Padding, WindowAttrs};
    use crate::tensor::Dims;

    /// The channel-minor polyphase split against its formula, into a buffer of stale NaNs
    /// (every slot must be written: a pixel or zero), both layouts, every pad parity, f32
    /// (the AVX transposes on x86) and bf16 (the portable ones); 8x8 blocks and both tails.
    #[test]
    fn split2_writes_every_slot() {
        let (ch, h, w) = (17, 11, 19);
        for (layout, bf16) in [
            (Layout::Nchw, false),
            (Layout::Nhwc, false),
            (Layout::Nchw, true),
            (Layout::Nhwc, true),
        ] {
            // Integers below 256: exact in bf16.
            let src: Vec<f32> = (0..ch * h * w).map(|i| (i % 251) as f32 + 1.0).collect();
            let at = |c: usize, y: usize, x: usize| match layout {
                Layout::Nchw => (c * h + y) * w + x,
                Layout::Nhwc => (y * w + x) * ch + c,
            };
            for (top, left) in [(0, 0), (1, 1), (2, 1), (1, 2)] {
                let (rows, w1) = (2 * (h + top).div_ceil(2) + 2, (w + left).div_ceil(2) + 1);
                let pk = (rows / 2) * w1 + 1;
                let mut out = vec![f32::NAN; 4 * pk * ch];
                let mut pm = vec![f32::NAN; h * w * ch];
                let (dims, pads, slots) = ((ch, h, w), (top, left), (rows, w1, pk));
                if bf16 {
                    let sb: Vec<half::bf16> =
                        src.iter().map(|&v| half::bf16::from_f32(v)).collect();
                    split2::<half::bf16>(layout, &sb, dims, pads, slots, &mut out, &mut pm);
                } else {
                    split2::<f32>(layout, &src, dims, pads, slots, &mut out, &mut pm);
                }
                for a in 0..2 {
                    for b in 0..2 {
                        for sl in 0..pk {
                            for c in 0..ch {
                                let (yp, xp) = (2 * (sl / w1) + a, 2 * (sl % w1) + b);
                                let want = match (yp.checked_sub(top), xp.checked_sub(left)) {
                                    (Some(y), Some(x)) if yp < rows && y < h && x < w => {
                                        src[at(c, y, x)]
                                    }
                                    _ => 0.0,
                                };
                                let got = out[((a * 2 + b) * pk + sl) * ch + c];
                                assert_eq!(
                                    got, want,
                                    "{layout} bf16 {bf16} pads {top},{left} a {a} b {b} slot {sl} c {c}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// Naive loops in f64.
    fn naive(g: &ConvGeometry, layout: Layout, x: &[f64], dy: &[f64]) -> Vec<f64> {
        let (cig, cog) = (g.ci / g.groups, g.co / g.groups);
        let (xd, yd) = (g.input_dims(), g.output_dims());
        let idx = |d: Dims, n: usize, c: usize, y: usize, x: usize| match layout {
            Layout::Nchw => ((n * d.c + c) * d.h + y) * d.w + x,
            Layout::Nhwc => ((n * d.h + y) * d.w + x) * d.c + c,
        };
        let mut dw = vec![0.0; g.h.kernel * g.w.kernel * cig * g.co];
        for n in 0..g.n {
            for co in 0..g.co {
                let grp = co / cog;
                for oy in 0..g.h.output {
                    for ox in 0..g.w.output {
                        let d = dy[idx(yd, n, co, oy, ox)];
                        for ky in 0..g.h.kernel {
                            let Some(iy) = g.h.input_index(oy, ky) else {
                                continue;
                            };
                            for kx in 0..g.w.kernel {
                                let Some(ix) = g.w.input_index(ox, kx) else {
                                    continue;
                                };
                                for c in 0..cig {
                                    let v = x[idx(xd, n, grp * cig + c, iy, ix)];
                                    dw[((ky * g.w.kernel + kx) * cig + c) * g.co + co] += v * d;
                                }
                            }
                        }
                    }
                }
            }
        }
        dw
    }

    /// Random geometries against naive loops (small integers: every sum exact), under several
    /// tile sizes and split counts, both layouts; f32 runs of one split bitwise repeatable.
    #[test]
    fn matches_naive_under_every_split() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut checked = 0;
        for case in 0..120 {
            let groups = [1, 1, 2, 3][next(4)];
            let (cig, cog) = (1 + next(6), 1 + next(6));
            let n = 1 + next(3);
            let input = Dims {
                n,
                c: cig * groups,
                h: 1 + next(10),
                w: 1 + next(10),
            };
            let (kh, kw) = (1 + next(4), 1 + next(4));
            let attrs = WindowAttrs {
                strides: [1 + next(3), 1 + next(3)],
                dilations: [1 + next(3), 1 + next(3)],
                padding: match next(3) {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[next(3), next(3)], [next(3), next(3)]]),
                },
                dim_rounding: None,
            };
            let Ok(g) = ConvGeometry::new("t", input, [kh, kw, cig, cog * groups], &attrs) else {
                continue;
            };
            let layout = if case % 2 == 0 {
                Layout::Nchw
            } else {
                Layout::Nhwc
            };
            let x: Vec<f64> = (0..n * g.ci * g.h.input * g.w.input)
                .map(|i| ((i * 7 + case) % 13) as f64 - 6.0)
                .collect();
            let dy: Vec<f64> = (0..n * g.co * g.h.output * g.w.output)
                .map(|i| ((i * 5 + 3 * case) % 11) as f64 - 5.0)
                .collect();
            let want = naive(&g, layout, &x, &dy);
            let base = FilterSplit::new(&g);
            let (x32, dy32): (Vec<f32>, Vec<f32>) = (
                x.iter().map(|&v| v as f32 * 0.37).collect(),
                dy.iter().map(|&v| v as f32 * 0.21).collect(),
            );
            for rows in [1, 2, base.rows] {
                let tiles = g.h.output.div_ceil(rows.max(1)).max(1);
                for splits in [1, 2, 3, n * tiles] {
                    let split = FilterSplit {
                        rows,
                        tiles,
                        splits: splits.min(n * tiles).max(1),
                    };
                    let mut got = vec![f64::NAN; want.len()];
                    backprop_filter_split(&g, layout, &x, &dy, FilterLayout::Hwio, &mut got, split);
                    assert_eq!(got, want, "case {case} {split:?}: {g:?}");
                    if rows == base.rows {
                        let mut h = vec![f32::NAN; want.len()];
                        backprop_filter_split(
                            &g,
                            layout,
                            &x32,
                            &dy32,
                            FilterLayout::Hwio,
                            &mut h,
                            split,
                        );
                        // Bitwise identical across repeated runs of one split.
                        let mut again = vec![f32::NAN; want.len()];
                        backprop_filter_split(
                            &g,
                            layout,
                            &x32,
                            &dy32,
                            FilterLayout::Hwio,
                            &mut again,
                            split,
                        );
                        assert_eq!(
                            h.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                            again.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
                        );
                    }
                }
            }
            checked += 1;
        }
        assert!(checked > 50, "only {checked} valid cases");
    }

    /// bf16 on AVX512_BF16 (the filter gradient's `vdpbf16ps` pair tiles, `filter_direct.rs`),
    /// through `backprop_filter` on real-valued data, NCHW and NHWC by turns: within one bf16
    /// rounding of naive f64 loops on the same bf16 inputs (relative L2 under 4e-3; SPEC 1e-2)
    /// and the same bits on a second run, the output poisoned first; odd and even column
    /// counts per tap (the last pair's zero partner), column strides 1 and 2, paddings,
    /// dilations, groups, 3x3 stride 1 (Winograd's shape) among them. Skips where the CPU
    /// lacks the instruction.
    #[test]
    fn bf16_filter_pair_tiles_within_one_rounding() {
        if !super::super::filter_direct::pairs_first::<half::bf16>() {
            println!(
                "bf16_filter_pair_tiles_within_one_rounding: SKIPPED (no AVX512_BF16 on this \
                 CPU, or GRADOPS_CPU_SIMD below avx512bf16: the pair tiles never run here)"
            );
            return;
        }
        let mut seed = 0xf117_bf16_5eedu64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut ran = 0;
        for case in 0..40 {
            let wino = case % 4 == 0;
            let groups = [1, 1, 2][next(3)];
            let cig = 1 + next(20);
            let cog = [16, 32, 48, 64, 80][next(5)];
            let n = 1 + next(3);
            let input = Dims {
                n,
                c: cig * groups,
                h: 1 + next(12),
                w: 1 + next(40),
            };
            let attrs = WindowAttrs {
                strides: if wino {
                    [1, 1]
                } else {
                    [1 + next(3), 1 + next(2)]
                },
                dilations: if wino {
                    [1, 1]
                } else {
                    [1 + next(2), 1 + next(2)]
                },
                padding: match if wino { 0 } else { next(3) } {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[next(3), next(3)], [next(4), next(4)]]),
                },
                dim_rounding: None,
            };
            let (kh, kw) = if wino {
                (3, 3)
            } else {
                (1 + next(3), 1 + next(5))
            };
            let Ok(g) = ConvGeometry::new("t", input, [kh, kw, cig, cog * groups], &attrs) else {
                continue;
            };
            let mut rnd = |k: usize| -> Vec<half::bf16> {
                (0..k)
                    .map(|_| half::bf16::from_f64(next(20001) as f64 / 10000.0 - 1.0))
                    .collect()
            };
            let x = rnd(n * g.ci * g.h.input * g.w.input);
            let dy = rnd(n * g.co * g.h.output * g.w.output);
            let wide = |v: &[half::bf16]| v.iter().map(|v| v.to_f64()).collect::<Vec<f64>>();
            let layout = if case % 2 == 0 {
                Layout::Nhwc
            } else {
                Layout::Nchw
            };
            let want = naive(&g, layout, &wide(&x), &wide(&dy));
            let run = || {
                let mut got = vec![half::bf16::NAN; want.len()];
                backprop_filter(&g, layout, &x, &dy, FilterLayout::Hwio, &mut got);
                got
            };
            let got = run();
            let (mut err, mut norm) = (0f64, 0f64);
            for (&v, &e) in got.iter().zip(&want) {
                err += (v.to_f64() - e).powi(2);
                norm += e * e;
            }
            let rel = (err / norm.max(1e-300)).sqrt();
            assert!(
                rel < 4e-3,
                "case {case} {layout}: relative L2 {rel:e}: {g:?}"
            );
            let bits = |v: &[half::bf16]| v.iter().map(|v| v.to_bits()).collect::<Vec<u16>>();
            assert_eq!(bits(&run()), bits(&got), "case {case} {layout}: second run");
            ran += 1;
        }
        assert!(ran > 25, "only {ran} calls");
    }

    /// The pair tiles' odd taps end on a tail of their own: with 14 columns, SAME 3x3 stride
    /// 1, the column taps 0 and 2 cover 13 output columns each, and pairing their last pixel
    /// with the next column (as a shared packing would) multiplies a pixel outside the tap by
    /// zero. An infinity there must stay out of the tap: `x`'s last column reaches no
    /// `dw[.][0]`, `dy`'s last column no `dw[.][2]`. Every entry finite exactly where the f64
    /// sum is, the finite ones within a rounding.
    #[test]
    fn bf16_filter_pair_tails_keep_infinities_out() {
        if !super::super::filter_direct::pairs_first::<half::bf16>() {
            println!(
                "bf16_filter_pair_tails_keep_infinities_out: SKIPPED (no AVX512_BF16 on this \
                 CPU, or GRADOPS_CPU_SIMD below avx512bf16: the pair tiles never run here)"
            );
            return;
        }
        let (n, c, h, w, co) = (2, 5, 6, 14, 32);
        let attrs = WindowAttrs {
            strides: [1, 1],
            dilations: [1, 1],
            padding: Padding::Same,
            dim_rounding: None,
        };
        let input = Dims { n, c, h, w };
        let g = ConvGeometry::new("t", input, [3, 3, c, co], &attrs).unwrap();
        let at = |layout: Layout, ch: usize, (i, y, col): (usize, usize, usize), chans: usize| {
            match layout {
                Layout::Nhwc => ((i * h + y) * w + col) * chans + ch,
                Layout::Nchw => ((i * chans + ch) * h + y) * w + col,
            }
        };
        let value = |k: usize| half::bf16::from_f64(((k * 37 + 11) % 23) as f64 / 8.0 - 1.4);
        for layout in [Layout::Nhwc, Layout::Nchw] {
            for in_x in [true, false] {
                let mut x: Vec<half::bf16> = (0..n * c * h * w).map(value).collect();
                let mut dy: Vec<half::bf16> = (0..n * co * h * w).map(|k| value(k + 5)).collect();
                if in_x {
                    x[at(layout, 1, (1, 2, w - 1), c)] = half::bf16::INFINITY;
                } else {
                    dy[at(layout, 5, (0, 3, w - 1), co)] = half::bf16::INFINITY;
                }
                let wide = |v: &[half::bf16]| v.iter().map(|v| v.to_f64()).collect::<Vec<f64>>();
                let want = naive(&g, layout, &wide(&x), &wide(&dy));
                let mut got = vec![half::bf16::ZERO; want.len()];
                backprop_filter(&g, layout, &x, &dy, FilterLayout::Hwio, &mut got);
                let (mut err, mut norm, mut nonfinite) = (0f64, 0f64, 0);
                for (k, (&v, &e)) in got.iter().zip(&want).enumerate() {
                    let (tap, o) = (k / (c * co), k % co);
                    assert_eq!(
                        v.is_finite(),
                        e.is_finite(),
                        "{layout} infinity in {}: dw tap {tap} channel {} output {o}: {v} \
                         against {e}",
                        if in_x { "x" } else { "dy" },
                        k / co % c
                    );
                    if e.is_finite() {
                        err += (v.to_f64() - e).powi(2);
                        norm += e * e;
                    } else {
                        nonfinite += 1;
                    }
                }
                assert!(nonfinite > 0, "{layout}: the infinity reached no tap");
                let rel = (err / norm).sqrt();
                assert!(rel < 4e-3, "{layout}: relative L2 {rel:e}");
            }
        }
    }

    /// The direct kernel (AVX-512 where present, and AVX2; NCHW and NHWC by turns) against
    /// naive loops on integer data (every f32 sum exact: equal bits): channel counts that
    /// leave every register-tile remainder (rows 6/4/2/1, 1-4 vectors), column strides 1 and 2
    /// with any row stride, dilations, left/right padding (skipped edge pixels), groups,
    /// several splits; bf16 within its tolerance.
    #[test]
    fn direct_matches_naive() {
        use super::super::filter_direct::{backprop_filter_direct, split as direct_split, Level};
        let mut seed = 0x5eed_d1ec_7000_0001u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut ran = 0;
        for case in 0..60 {
            let groups = [1, 1, 2][next(3)];
            let cig = 1 + next(14);
            let cog = [16, 32, 48, 64, 80, 8, 24][next(7)];
            let n = 1 + next(3);
            let input = Dims {
                n,
                c: cig * groups,
                h: 1 + next(12),
                w: 1 + next(40),
            };
            let attrs = WindowAttrs {
                strides: [1 + next(3), 1 + next(2)],
                dilations: [1 + next(2), 1 + next(2)],
                padding: match next(3) {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[next(3), next(3)], [next(4), next(4)]]),
                },
                dim_rounding: None,
            };
            let (kh, kw) = (1 + next(3), 1 + next(5));
            let Ok(g) = ConvGeometry::new("t", input, [kh, kw, cig, cog * groups], &attrs) else {
                continue;
            };
            let x: Vec<f64> = (0..n * g.ci * g.h.input * g.w.input)
                .map(|i| ((i * 7 + case) % 13) as f64 - 6.0)
                .collect();
            let dy: Vec<f64> = (0..n * g.co * g.h.output * g.w.output)
                .map(|i| ((i * 5 + 3 * case) % 11) as f64 - 5.0)
                .collect();
            let layout = if case % 2 == 0 {
                Layout::Nchw
            } else {
                Layout::Nhwc
            };
            let want = naive(&g, layout, &x, &dy);
            let (x32, dy32): (Vec<f32>, Vec<f32>) = (
                x.iter().map(|&v| v as f32).collect(),
                dy.iter().map(|&v| v as f32).collect(),
            );
            let base = direct_split::<f32>(&g);
            for level in [Level::Best, Level::Avx2] {
                if !super::super::filter_direct::applies::<f32>(&g, level) {
                    continue;
                }
                for (rows, splits) in [(base.rows, base.splits), (1, 1), (2, 3)] {
                    let split = FilterSplit::with_rows(&g, rows);
                    let split = FilterSplit {
                        splits: splits.min(n * split.tiles).max(1),
                        ..split
                    };
                    let mut got = vec![f32::NAN; want.len()];
                    assert!(backprop_filter_direct(
                        &g,
                        layout,
                        &x32,
                        &dy32,
                        FilterLayout::Hwio,
                        &mut got,
                        split,
                        level
                    ));
                    let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
                    assert_eq!(got, want, "case {case} {layout} {level:?} {split:?}: {g:?}");
                }
                // bf16: inputs rounded (integers up to 6: exact), sums rounded once.
                let (xb, dyb): (Vec<half::bf16>, Vec<half::bf16>) = (
                    x.iter().map(|&v| half::bf16::from_f64(v)).collect(),
                    dy.iter().map(|&v| half::bf16::from_f64(v)).collect(),
                );
                let mut got = vec![half::bf16::NAN; want.len()];
                assert!(backprop_filter_direct(
                    &g,
                    layout,
                    &xb,
                    &dyb,
                    FilterLayout::Hwio,
                    &mut got,
                    base,
                    level
                ));
                for (k, (&gv, &w)) in got.iter().zip(&want).enumerate() {
                    assert_eq!(gv, half::bf16::from_f64(w), "case {case} bf16 element {k}");
                }
                ran += 1;
            }
        }
        if crate::cpu::simd::has_avx2() {
            assert!(ran > 40, "only {ran} direct runs");
        } else {
            println!(
                "direct_matches_naive: SKIPPED (no AVX2+FMA: the direct kernel never runs here)"
            );
        }
    }

    /// Winograd F(3x3, 2x2) against naive loops: f64 on inputs that are multiples of 1/4
    /// (every value of every transform exact: equal bits, under several split counts), f64
    /// and f32 on random inputs within rounding, f16 within its tolerance; odd sizes,
    /// groups, every padding, both layouts, both filter layouts.
    #[test]
    fn winograd_matches_naive() {
        let mut seed = 0x0bad_cafe_1234_5678u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut checked = 0;
        for case in 0..40 {
            let groups = [1, 1, 2][next(3)];
            let (cig, cog) = (16 + next(10), 16 + next(10));
            let n = 1 + next(2);
            let input = Dims {
                n,
                c: cig * groups,
                h: 1 + next(14),
                w: 1 + next(14),
            };
            let attrs = WindowAttrs {
                strides: [1, 1],
                dilations: [1, 1],
                padding: match next(3) {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[next(6), next(3)], [next(7), next(4)]]),
                },
                dim_rounding: None,
            };
            let Ok(g) = ConvGeometry::new("t", input, [3, 3, cig, cog * groups], &attrs) else {
                continue;
            };
            if g.h.output * g.w.output == 0 {
                continue;
            }
            assert!(winograd_applies(&g));
            let layout = if case % 4 < 2 {
                Layout::Nchw
            } else {
                Layout::Nhwc
            };
            let xl = n * g.ci * g.h.input * g.w.input;
            let yl = n * g.co * g.h.output * g.w.output;
            let x: Vec<f64> = (0..xl)
                .map(|i| ((i * 7 + case) % 9) as f64 / 4.0 - 1.0)
                .collect();
            let dy: Vec<f64> = (0..yl)
                .map(|i| ((i * 5 + 3 * case) % 9) as f64 / 4.0 - 1.0)
                .collect();
            let want = naive(&g, layout, &x, &dy);
            let fl = if case % 2 == 0 {
                FilterLayout::Hwio
            } else {
                FilterLayout::Oihw
            };
            let want_fl = match fl {
                FilterLayout::Hwio => want.clone(),
                FilterLayout::Oihw => {
                    let (i, o) = (cig, g.co);
                    let mut out = vec![0.0; want.len()];
                    for t in 0..9 {
                        for c in 0..i {
                            for oc in 0..o {
                                out[(oc * i + c) * 9 + t] = want[(t * i + c) * o + oc];
                            }
                        }
                    }
                    out
                }
            };
            for splits in [1, 2, 5, MAX_SPLITS] {
                let mut got = vec![f64::NAN; want.len()];
                backprop_filter_winograd(&g, layout, &x, &dy, fl, &mut got, splits);
                assert_eq!(got, want_fl, "case {case} splits {splits}: {g:?}");
            }
            // Random values: within rounding of the naive sum.
            let xr: Vec<f64> = x
                .iter()
                .enumerate()
                .map(|(i, v)| v * 0.37 + (i % 13) as f64 * 0.011)
                .collect();
            let want = naive(&g, layout, &xr, &dy);
            let den: f64 = want.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0);
            let err = |got: Vec<f64>| {
                got.iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>()
                    .sqrt()
                    / den
            };
            let mut got = vec![f64::NAN; want.len()];
            backprop_filter_winograd(
                &g,
                layout,
                &xr,
                &dy,
                FilterLayout::Hwio,
                &mut got,
                MAX_SPLITS,
            );
            assert!(err(got) <= 1e-13, "f64 case {case}");
            let (x32, dy32): (Vec<f32>, Vec<f32>) = (
                xr.iter().map(|&v| v as f32).collect(),
                dy.iter().map(|&v| v as f32).collect(),
            );
            let mut g32 = vec![f32::NAN; want.len()];
            // The f32 and f16 planes and transforms live in the workers' scratch: stale NaNs
            // there reach the result wherever a slot is read before it is written.
            super::super::conv_direct::poison_worker_scratch(6, 1 << 16);
            backprop_filter_winograd(
                &g,
                layout,
                &x32,
                &dy32,
                FilterLayout::Hwio,
                &mut g32,
                MAX_SPLITS,
            );
            let e32 = err(g32.iter().map(|&v| v as f64).collect());
            assert!(e32 <= 1e-6, "f32 case {case}: {e32:e}");
            let (xh, dyh): (Vec<half::f16>, Vec<half::f16>) = (
                xr.iter().map(|&v| half::f16::from_f64(v)).collect(),
                dy.iter().map(|&v| half::f16::from_f64(v)).collect(),
            );
            let (xhr, dyhr): (Vec<f64>, Vec<f64>) = (
                xh.iter().map(|v| v.to_f64()).collect(),
                dyh.iter().map(|v| v.to_f64()).collect(),
            );
            let wanth = naive(&g, layout, &xhr, &dyhr);
            let mut gh = vec![half::f16::NAN; want.len()];
            super::super::conv_direct::poison_worker_scratch(6, 1 << 16);
            backprop_filter_winograd(
                &g,
                layout,
                &xh,
                &dyh,
                FilterLayout::Hwio,
                &mut gh,
                MAX_SPLITS,
            );
            let num: f64 = gh
                .iter()
                .zip(&wanth)
                .map(|(a, b)| (a.to_f64() - b).powi(2))
                .sum();
            let denh: f64 = wanth.iter().map(|v| v * v).sum::<f64>().sqrt().max(1.0);
            assert!(num.sqrt() / denh <= 1e-3, "f16 case {case}");
            checked += 1;
        }
        assert!(checked > 15, "only {checked} cases");
    }

    /// Images of several tile blocks and several ranges on structured (not random) inputs,
    /// f64 and f32, both layouts: within rounding of naive loops (f32 within the contract's
    /// 1e-5 relative L2), and f32 bitwise repeatable.
    #[test]
    fn winograd_multi_block_images() {
        for (layout, (h, w), n) in [
            (Layout::Nchw, (70, 66), 2),
            (Layout::Nhwc, (61, 75), 2),
            (Layout::Nchw, (30, 400), 1),
        ] {
            let (ci, co) = (16, 17);
            let input = Dims { n, c: ci, h, w };
            let attrs = WindowAttrs {
                strides: [1, 1],
                dilations: [1, 1],
                padding: Padding::Same,
                dim_rounding: None,
            };
            let g = ConvGeometry::new("t", input, [3, 3, ci, co], &attrs).unwrap();
            let xl = n * ci * h * w;
            let yl = n * co * g.h.output * g.w.output;
            let x: Vec<f64> = (0..xl)
                .map(|i| ((i * 7919) % 101) as f64 / 50.0 - 1.0)
                .collect();
            let dy: Vec<f64> = (0..yl)
                .map(|i| ((i * 104_729) % 97) as f64 / 48.0 - 1.0)
                .collect();
            let want = naive(&g, layout, &x, &dy);
            let den: f64 = want.iter().map(|v| v * v).sum::<f64>().sqrt();
            let err = |got: &[f64]| {
                got.iter()
                    .zip(&want)
                    .map(|(a, b)| (a - b) * (a - b))
                    .sum::<f64>()
                    .sqrt()
                    / den
            };
            for splits in [1, 3, MAX_SPLITS] {
                let mut got = vec![f64::NAN; want.len()];
                backprop_filter_winograd(&g, layout, &x, &dy, FilterLayout::Hwio, &mut got, splits);
                assert!(
                    err(&got) <= 1e-12,
                    "{layout:?} {h}x{w} splits {splits}: {:e}",
                    err(&got)
                );
                let (x32, dy32): (Vec<f32>, Vec<f32>) = (
                    x.iter().map(|&v| v as f32).collect(),
                    dy.iter().map(|&v| v as f32).collect(),
                );
                let run = || {
                    let mut o = vec![f32::NAN; want.len()];
                    backprop_filter_winograd(
                        &g,
                        layout,
                        &x32,
                        &dy32,
                        FilterLayout::Hwio,
                        &mut o,
                        splits,
                    );
                    o
                };
                let a = run();
                let e32 = err(&a.iter().map(|&v| v as f64).collect::<Vec<_>>());
                // The contract's f32 bound; F(3x3, 2x2) gives 2e-6 .. 7e-6 on these inputs
                // (F(3x3, 4x4) gave 3.9e-5 on the first: why it is not used).
                assert!(
                    e32 <= 1e-5,
                    "f32 {layout:?} {h}x{w} splits {splits}: {e32:e}"
                );
                let b = run();
                assert!(a.iter().zip(&b).all(|(p, q)| p.to_bits() == q.to_bits()));
            }
        }
    }
}

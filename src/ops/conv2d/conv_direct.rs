//! CPU `conv2d_backprop_input` and `conv2d` (NCHW or NHWC) in f32 registers without im2col: each
//! output row is produced by register tiles of up to 6 output pixels by up to four vectors of
//! output channels, accumulated over the taps that reach the row and the reduction channels,
//! one operand element broadcast per pixel and channel, the filter's channels loaded as
//! vectors.
//!
//! - `conv2d_backprop_input`: per stride phase of `dx`; `dx[c][y][x] += dy[o][oy][ox] *
//!   W[ky][kx][c][o]`, the phase's pixels reading consecutive `dy` columns.
//! - `conv2d`: `y[o][oy][ox] += x[c][iy][ix] * W[ky][kx][c][o]`, consecutive pixels reading
//!   `x` columns a stride apart.
//!
//! Why: the GEMM paths copy the operand into columns, pack both operands and (backprop_input)
//! scatter phase tiles back. Here the operand image is made pixel-major once, rows padded
//! with zero columns (a pixel's channels contiguous; no tile tests for the edge; NCHW
//! transposed, NHWC copied: [`to_pixel_major`]), `W` once per call to `[tap][reduction
//! channel][output channel]` per block of output channels, and each output row is produced
//! once, pixel-major, then transposed into the channel planes (NCHW, AVX 8x8 transposes) or
//! copied into its pixels (NHWC) ([`OutImage`]).
//!
//! bf16 where the CPU has AVX512_BF16 (`SimdLevel::Avx512Bf16`): the same rows and stores on
//! pair tiles ([`tile_pairs`]): the operand's reduction channels and the filter's `k` taken two
//! at a time as bf16 pairs, one `vdpbf16ps` per pixel, pair and vector (twice the products
//! of an f32 FMA). Both operands' pairs come from the stored bits ([`bf16_pairs`],
//! [`filter_pairs`]); no f32 copy of either is made. In NHWC the tiles round their sums to
//! bf16 and store them into the output's pixels themselves ([`BitsRow`]). Even
//! reduction channels per group and 16-channel blocks only; the routing ([`pairs_first`])
//! puts them ahead of the Winograd paths.
//!
//! Deterministic: each output element is one register lane's sum in a fixed order (taps
//! ascending, then reduction channels ascending), written once; work items are whole images.

use super::cpu_kernel::axis_phases;
use super::filter_direct::{lanes, transpose8_with, Level};
#[cfg(target_arch = "x86_64")]
use crate::cpu::bf16_dot::{pair, Bf16Dot};
use crate::cpu::simd::simd_fn;
#[cfg(target_arch = "x86_64")]
use crate::cpu::simd::{f32x16_to_bf16_bits, f32x8_to_bf16_bits};
use crate::dtype::{Accum, DType, Element};
use crate::geometry::window::ConvGeometry;
use crate::tensor::Layout;
use num_traits::Zero;
#[cfg(target_arch = "x86_64")]
use pulp::x86::V4;
use pulp::Simd;
use rayon::prelude::*;

/// Output pixels per register tile at `lanes` f32 lanes: with four vectors of 16 channels, 24
/// accumulators of AVX-512's 32 registers; on AVX2, 5 x 2 vectors of 8 = 10 of 16 (with 6 x 2,
/// LLVM keeps a hoisted constant in the 16th register and one accumulator on the stack: a
/// store-to-load chain through every iteration, measured 1.7x slower).
const fn tile_rows(lanes: usize) -> usize {
    if lanes >= 16 {
        6
    } else {
        5
    }
}

// The thread scratch moved to `crate::cpu::scratch` (the max-pool kernels use it too).
#[cfg(test)]
pub(super) use crate::cpu::scratch::poison_worker_scratch;
pub(super) use crate::cpu::scratch::{scratch_as, scratch_or_own, with_scratch};

/// Whether the direct kernels serve a call with `out_ch` output channels (of the kernel's
/// rows: `ci` for backprop_input, `co` for the forward; NCHW is the caller's check): f32
/// accumulation, an x86 CPU with AVX2+FMA or AVX-512, those channels per group a multiple of
/// the vector width, nothing empty.
pub(super) fn applies<T: Element>(g: &ConvGeometry, out_ch: usize, level: Level) -> bool {
    let nonempty = [
        g.n, g.ci, g.co, g.h.output, g.w.output, g.h.kernel, g.w.kernel,
    ];
    T::Acc::as_f32(&[]).is_some()
        && nonempty.iter().all(|&d| d > 0)
        && g.h.input * g.w.input > 0
        && lanes(level).is_some_and(|l| (out_ch / g.groups).is_multiple_of(l))
}

/// Whether [`backprop_input_direct`] serves this call.
pub(super) fn input_applies<T: Element>(g: &ConvGeometry, level: Level) -> bool {
    applies::<T>(g, g.ci, level)
}

/// Whether [`forward_direct`] serves this call.
pub(super) fn forward_applies<T: Element>(g: &ConvGeometry, level: Level) -> bool {
    applies::<T>(g, g.co, level)
}

/// Channel vectors per register tile at `lanes` f32 lanes (see [`R`]).
pub(super) const fn vectors(lanes: usize) -> usize {
    if lanes >= 16 {
        4
    } else {
        2
    }
}

/// The filter per (group, block of `nb` output channels `j`) as `[tap][k][j]` in f32, from
/// the HWIO `w` (`kh*kw` taps, `cig` x `co`); `k` runs over the reduction channels:
/// `by_out = false` (backprop_input: `k` = o, `j` = c), `true` (forward: `k` = c, `j` = o).
pub(super) fn blocked_filter<'a, T: Element>(
    g: &ConvGeometry,
    w: &[T],
    (nb, by_out): (usize, bool),
    wt: &'a mut Vec<f32>,
) -> &'a [f32] {
    let (cig, cog) = (g.ci / g.groups, g.co / g.groups);
    // Every element is written below: one per filter element.
    wt.resize(g.h.kernel * g.w.kernel * cig * g.co, 0.0);
    let f32_of = |v: &T| v.to_acc().to_f64_exact() as f32;
    filter_blocks(g, (nb, by_out), 1, wt)
        .into_par_iter()
        .for_each(|b| {
            let FilterBlock {
                grp,
                jb,
                bw,
                t,
                dst,
            } = b;
            // Filter row of input channel `c`: its `cog` output channels of the group.
            let row = |c: usize| &w[(t * cig + c) * g.co + grp * cog..][..cog];
            if by_out {
                // `[c][o]`: runs of the HWIO rows.
                for (c, d) in dst.chunks_exact_mut(bw).enumerate() {
                    for (d, v) in d.iter_mut().zip(&row(c)[jb..]) {
                        *d = f32_of(v);
                    }
                }
            } else {
                // `[o][c]`: a transpose, TRANSPOSE_ROWS rows read at a time so that both sides run
                // along cache lines (one element per row in turn, as before, strode a whole filter
                // row between reads).
                for j0 in (0..bw).step_by(TRANSPOSE_ROWS) {
                    let jn = TRANSPOSE_ROWS.min(bw - j0);
                    let mut rows: [&[T]; TRANSPOSE_ROWS] = [&[]; TRANSPOSE_ROWS];
                    for (j, r) in rows[..jn].iter_mut().enumerate() {
                        *r = row(jb + j0 + j);
                    }
                    for (o, d) in dst.chunks_exact_mut(bw).enumerate() {
                        for (d, r) in d[j0..j0 + jn].iter_mut().zip(&rows[..jn]) {
                            *d = f32_of(&r[o]);
                        }
                    }
                }
            }
        });
    wt
}

/// One (group, block, tap) of the blocked filter: its `[k][bw]` elements (`k` in `per_k`
/// units) in `dst`.
struct FilterBlock<'a, E> {
    grp: usize,
    jb: usize,
    bw: usize,
    t: usize,
    dst: &'a mut [E],
}

/// `dst` cut into [`blocked_filter`]'s (group, block, tap) blocks, in order, `k / per_k`
/// rows of `bw` elements each: one task each, the filter being laid out again on every call
/// (serially it would be a sizeable share of a two-thread call).
fn filter_blocks<'a, E>(
    g: &ConvGeometry,
    (nb, by_out): (usize, bool),
    per_k: usize,
    dst: &'a mut [E],
) -> Vec<FilterBlock<'a, E>> {
    let (cig, cog, ntaps) = (g.ci / g.groups, g.co / g.groups, g.h.kernel * g.w.kernel);
    let (outg, kg) = if by_out { (cog, cig) } else { (cig, cog) };
    let mut blocks = Vec::new();
    let mut rest = dst;
    for grp in 0..g.groups {
        for jb in (0..outg).step_by(nb) {
            let bw = nb.min(outg - jb);
            for t in 0..ntaps {
                let (chunk, tail) = rest.split_at_mut(kg / per_k * bw);
                blocks.push(FilterBlock {
                    grp,
                    jb,
                    bw,
                    t,
                    dst: chunk,
                });
                rest = tail;
            }
        }
    }
    blocks
}

/// Input channels per pass of [`blocked_filter`]'s transpose: one 64-byte line of its output.
const TRANSPOSE_ROWS: usize = 16;

/// `dx` from `dy` (both in `layout`) and an HWIO filter `w`; `false` (and `dx` untouched)
/// where [`input_applies`] does not hold.
pub(super) fn backprop_input_direct<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    dy: &[T],
    w: &[T],
    dx: &mut [T],
    level: Level,
) -> bool {
    let Some(lanes) = lanes(level).filter(|_| input_applies::<T>(g, level)) else {
        return false;
    };
    let nb = vectors(lanes) * lanes;
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (cig, cog, kw) = (g.ci / g.groups, g.co / g.groups, g.w.kernel);
    let ntaps = g.h.kernel * kw;
    let (hph, wph) = (axis_phases(&g.h), axis_phases(&g.w));
    // dy columns padded so that every tap of every phase pixel reads inside the row.
    let offs = || {
        wph.iter()
            .flat_map(|p| p.taps.iter().map(move |&(_, o)| (p.n, o)))
    };
    let lo = offs().map(|(_, o)| o).min().unwrap_or(0);
    let hi_col = offs().map(|(n, o)| n as isize - 1 + o).max().unwrap_or(0);
    let padl = (-lo).max(0) as usize;
    let len = padl + wo.max((hi_col + 1).max(0) as usize);
    #[cfg(target_arch = "x86_64")]
    let dot = pair_dot::<T>(cog, level);
    // NHWC pair tiles round into the output themselves: no f32 rows to store.
    #[cfg(target_arch = "x86_64")]
    let direct = pairs_into_bits::<T>(layout, dot);
    #[cfg(not(target_arch = "x86_64"))]
    let direct = false;
    with_scratch(|[wtv, wpv]| {
        // The pair tiles read only the pair filter; the f32 one is made where they do not run.
        #[cfg(target_arch = "x86_64")]
        let wtp = dot.map(|_| filter_pairs(g, w, (nb, false), wpv));
        #[cfg(not(target_arch = "x86_64"))]
        let (wtp, _) = (None::<()>, wpv);
        let wt: &[f32] = match wtp {
            Some(_) => &[],
            None => blocked_filter(g, w, (nb, false), wtv),
        };
        let (dyimg, dximg) = (g.co * ho * wo, g.ci * hi * wi);
        dx.par_chunks_mut(dximg)
            .zip(dy.par_chunks(dyimg))
            .for_each_init(
                || (Vec::new(), Vec::new()),
                |(taps, segs), (dxi, dyi)| {
                    with_scratch(|[dytv, rowv, pv]| {
                        #[cfg(target_arch = "x86_64")]
                        let dyp =
                            dot.map(|_| bf16_pairs(layout, dyi, (g.co, ho, wo), (len, padl), pv));
                        #[cfg(target_arch = "x86_64")]
                        let widen = dyp.is_none();
                        #[cfg(not(target_arch = "x86_64"))]
                        let (widen, _) = (true, pv);
                        // The widened image only where the pairs are not made (`dytv` left as
                        // it is: truncated, a later f32 call would zero it again).
                        let (Some(dyt), Some(rowbuf)) = (
                            widened::<T>(widen, dytv, ho * len * g.co),
                            scratch_as::<T::Acc>(rowv, ROWS_PER_PASS * wi * nb),
                        ) else {
                            return;
                        };
                        if widen {
                            to_pixel_major::<T>(layout, dyi, (g.co, ho, wo), (len, padl), dyt);
                        }
                        let Some(dyt) = T::Acc::as_f32(dyt) else {
                            return;
                        };
                        let img = OutImage {
                            layout,
                            h: hi,
                            w: wi,
                            c: g.ci,
                        };
                        for grp in 0..g.groups {
                            for cb in (0..cig).step_by(nb) {
                                let bw = nb.min(cig - cb);
                                // Rows in bands of ROWS_PER_PASS, stored together: each
                                // NCHW channel plane written in runs of rows.
                                for y0 in (0..hi).step_by(ROWS_PER_PASS) {
                                    let band = ROWS_PER_PASS.min(hi - y0);
                                    for u in 0..band {
                                        let y = y0 + u;
                                        let (yp, qy) = (&hph[y % g.h.stride], y / g.h.stride);
                                        // One segment per column phase: its taps that reach a dy row.
                                        taps.clear();
                                        segs.clear();
                                        for xp in &wph {
                                            let first = taps.len();
                                            for &(ky, offy) in &yp.taps {
                                                let oy = qy as isize + offy;
                                                if oy < 0 || oy >= ho as isize {
                                                    continue;
                                                }
                                                for &(kx, offx) in &xp.taps {
                                                    let col = (padl as isize + offx) as usize;
                                                    taps.push((
                                                        (ky * kw + kx) * cog * bw,
                                                        (oy as usize * len + col) * g.co
                                                            + grp * cog,
                                                    ));
                                                }
                                            }
                                            segs.push(Segment {
                                                x0: xp.ph,
                                                sx: g.w.stride,
                                                n: xp.n,
                                                lda: g.co,
                                                taps: first..taps.len(),
                                            });
                                        }
                                        let row = &mut rowbuf[u * wi * bw..][..wi * bw];
                                        #[cfg(target_arch = "x86_64")]
                                        if let (Some(d), Some(ap), Some(wp)) = (dot, dyp, wtp) {
                                            halve_offsets(taps, segs);
                                            let blk = (grp * cig + cb) * ntaps * cog / 2;
                                            row_pairs_into::<T>(
                                                d,
                                                RowPairs {
                                                    a: ap,
                                                    wt: &wp[blk..][..bw * ntaps * cog / 2],
                                                    kp: cog / 2,
                                                    segs,
                                                    taps,
                                                },
                                                (row, bw),
                                                nhwc_bits_row(
                                                    layout,
                                                    dxi,
                                                    img.at(grp * cig + cb, y),
                                                    g.ci,
                                                ),
                                            );
                                            continue;
                                        }
                                        row_into::<T>(
                                            RowOperands {
                                                a: dyt,
                                                // The f32 filter (made: not the pair path).
                                                wt: &wt[(grp * cig + cb) * ntaps * cog..]
                                                    [..bw * ntaps * cog],
                                                k: cog,
                                                segs,
                                                taps,
                                            },
                                            row,
                                            bw,
                                            level,
                                        );
                                    }
                                    if !direct {
                                        let at = img.at(grp * cig + cb, y0);
                                        img.store::<T>(
                                            &rowbuf[..band * wi * bw],
                                            (band, bw),
                                            &mut dxi[at..],
                                        );
                                    }
                                }
                            }
                        }
                    })
                },
            );
    });
    true
}

/// `y` from `x` (both in `layout`) and an HWIO filter `w`; `false` (and `y` untouched) where
/// [`forward_applies`] does not hold.
pub(super) fn forward_direct<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    x: &[T],
    w: &[T],
    y: &mut [T],
    level: Level,
) -> bool {
    let Some(lanes) = lanes(level).filter(|_| forward_applies::<T>(g, level)) else {
        return false;
    };
    let nb = vectors(lanes) * lanes;
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (cig, cog, kw) = (g.ci / g.groups, g.co / g.groups, g.w.kernel);
    let ntaps = g.h.kernel * kw;
    // x columns padded: column `pad_left + ix`, wide enough for the last output's last tap.
    let padl = g.w.pad_before;
    let reach = (wo - 1) * g.w.stride + (kw - 1) * g.w.dilation + 1;
    let len = reach.max(padl + wi);
    #[cfg(target_arch = "x86_64")]
    let dot = pair_dot::<T>(cig, level);
    // NHWC pair tiles round into the output themselves: no f32 rows to store.
    #[cfg(target_arch = "x86_64")]
    let direct = pairs_into_bits::<T>(layout, dot);
    #[cfg(not(target_arch = "x86_64"))]
    let direct = false;
    with_scratch(|[wtv, wpv]| {
        // As in `backprop_input_direct`: one filter layout, the one the tiles read.
        #[cfg(target_arch = "x86_64")]
        let wtp = dot.map(|_| filter_pairs(g, w, (nb, true), wpv));
        #[cfg(not(target_arch = "x86_64"))]
        let (wtp, _) = (None::<()>, wpv);
        let wt: &[f32] = match wtp {
            Some(_) => &[],
            None => blocked_filter(g, w, (nb, true), wtv),
        };
        let (ximg, yimg) = (g.ci * hi * wi, g.co * ho * wo);
        y.par_chunks_mut(yimg)
            .zip(x.par_chunks(ximg))
            .for_each_init(
                || (Vec::new(), Vec::new()),
                |(taps, segs), (yi, xi)| {
                    with_scratch(|[xtv, rowv, pv]| {
                        #[cfg(target_arch = "x86_64")]
                        let xp =
                            dot.map(|_| bf16_pairs(layout, xi, (g.ci, hi, wi), (len, padl), pv));
                        #[cfg(target_arch = "x86_64")]
                        let widen = xp.is_none();
                        #[cfg(not(target_arch = "x86_64"))]
                        let (widen, _) = (true, pv);
                        let (Some(xt), Some(rowbuf)) = (
                            widened::<T>(widen, xtv, hi * len * g.ci),
                            scratch_as::<T::Acc>(rowv, ROWS_PER_PASS * wo * nb),
                        ) else {
                            return;
                        };
                        if widen {
                            to_pixel_major::<T>(layout, xi, (g.ci, hi, wi), (len, padl), xt);
                        }
                        let Some(xt) = T::Acc::as_f32(xt) else {
                            return;
                        };
                        let img = OutImage {
                            layout,
                            h: ho,
                            w: wo,
                            c: g.co,
                        };
                        for grp in 0..g.groups {
                            for ob in (0..cog).step_by(nb) {
                                let bw = nb.min(cog - ob);
                                // Rows in bands, as in `backprop_input_direct`.
                                for oy0 in (0..ho).step_by(ROWS_PER_PASS) {
                                    let band = ROWS_PER_PASS.min(ho - oy0);
                                    for u in 0..band {
                                        let oy = oy0 + u;
                                        taps.clear();
                                        segs.clear();
                                        for ky in 0..g.h.kernel {
                                            let Some(iy) = g.h.input_index(oy, ky) else {
                                                continue;
                                            };
                                            for kx in 0..kw {
                                                taps.push((
                                                    (ky * kw + kx) * cig * bw,
                                                    (iy * len + kx * g.w.dilation) * g.ci
                                                        + grp * cig,
                                                ));
                                            }
                                        }
                                        segs.push(Segment {
                                            x0: 0,
                                            sx: 1,
                                            n: wo,
                                            lda: g.w.stride * g.ci,
                                            taps: 0..taps.len(),
                                        });
                                        let row = &mut rowbuf[u * wo * bw..][..wo * bw];
                                        #[cfg(target_arch = "x86_64")]
                                        if let (Some(d), Some(ap), Some(wp)) = (dot, xp, wtp) {
                                            halve_offsets(taps, segs);
                                            let blk = (grp * cog + ob) * ntaps * cig / 2;
                                            row_pairs_into::<T>(
                                                d,
                                                RowPairs {
                                                    a: ap,
                                                    wt: &wp[blk..][..bw * ntaps * cig / 2],
                                                    kp: cig / 2,
                                                    segs,
                                                    taps,
                                                },
                                                (row, bw),
                                                nhwc_bits_row(
                                                    layout,
                                                    yi,
                                                    img.at(grp * cog + ob, oy),
                                                    g.co,
                                                ),
                                            );
                                            continue;
                                        }
                                        row_into::<T>(
                                            RowOperands {
                                                a: xt,
                                                wt: &wt[(grp * cog + ob) * ntaps * cig..]
                                                    [..bw * ntaps * cig],
                                                k: cig,
                                                segs,
                                                taps,
                                            },
                                            row,
                                            bw,
                                            level,
                                        );
                                    }
                                    if !direct {
                                        let at = img.at(grp * cog + ob, oy0);
                                        img.store::<T>(
                                            &rowbuf[..band * wo * bw],
                                            (band, bw),
                                            &mut yi[at..],
                                        );
                                    }
                                }
                            }
                        }
                    })
                },
            );
    });
    true
}

/// The scratch `v` as the widened operand image of `n` elements where `widen`, else empty
/// (and `v` untouched).
fn widened<T: Element>(widen: bool, v: &mut Vec<f32>, n: usize) -> Option<&mut [T::Acc]> {
    if widen {
        scratch_as::<T::Acc>(v, n)
    } else {
        Some(&mut [])
    }
}

/// What one output row reads: the operand image `a` (pixel-major, padded), the channel
/// block's filter `wt` (`[tap][k][bw]`), `k` reduction channels per tap, the row's segments
/// and their taps.
pub(super) struct RowOperands<'a> {
    pub(super) a: &'a [f32],
    pub(super) wt: &'a [f32],
    pub(super) k: usize,
    pub(super) segs: &'a [Segment],
    pub(super) taps: &'a [(usize, usize)],
}

/// Computes one output row of `bw` channels into `row` (`[x][c]`, pixel-major; every pixel
/// written); the caller stores it.
fn row_into<T: Element>(ops: RowOperands, row: &mut [T::Acc], bw: usize, level: Level) {
    if let Some(row) = T::Acc::as_f32_mut(row) {
        Row { ops, row, bw }.run(level);
    }
}

/// A run of output pixels of a row: columns `x0 + sx * q` for `q < n`, the operand of pixel
/// `q` at each tap's offset plus `q * lda`; `taps` indexes the row's tap list.
pub(super) struct Segment {
    pub(super) x0: usize,
    pub(super) sx: usize,
    pub(super) n: usize,
    pub(super) lda: usize,
    pub(super) taps: std::ops::Range<usize>,
}

/// Rows per pass of [`pixel_major`] and [`store_rows`]: each 8-channel block is moved for this
/// many consecutive rows before the next block, so that every channel plane is read (or
/// written) in runs of rows rather than one row (at W5f's 56 columns, 224 bytes per plane
/// and row: too short for the hardware prefetchers; one-thread perf on a Zen 4 put the
/// loads of the one-row order at 11% of NCHW W5f).
pub(super) const ROWS_PER_PASS: usize = 8;

simd_fn! {
    /// `dst[(oy * len + padl + ox) * co + o] = dy[o][oy][ox]` (one image; 8x8 blocks), the
    /// other columns of each row zero. f16/bf16 go through the f32 transposes: each pass's
    /// rows of an 8-channel block are widened first, one vectorised conversion a channel (a
    /// plane's rows are consecutive); element by element they cost bf16 W5 a fifth of its time.
    pub(super) fn pixel_major<T: Element>(
        dy: &[T],
        (co, ho, wo): (usize, usize, usize),
        (len, padl): (usize, usize),
        dst: &mut [T::Acc],
    ) {
        let (c8, x8) = (co / 8 * 8, wo / 8 * 8);
        #[cfg(target_arch = "x86_64")]
        let avx = crate::cpu::simd::avx2();
        #[cfg(not(target_arch = "x86_64"))]
        let avx: Option<()> = None;
        let native = T::as_acc_slice(dy).and_then(T::Acc::as_f32);
        let mut wide: Vec<T::Acc> = Vec::new();
        for oy0 in (0..ho).step_by(ROWS_PER_PASS) {
            let rows = oy0..(oy0 + ROWS_PER_PASS).min(ho);
            for oy in rows.clone() {
                // The pad columns (the buffer is reused: nothing else clears them).
                let row = &mut dst[oy * len * co..][..len * co];
                row[..padl * co].fill(T::Acc::zero());
                row[(padl + wo) * co..].fill(T::Acc::zero());
            }
            for c0 in (0..c8).step_by(8) {
                // The block's rows as f32 where the transposes below take them: (the slice,
                // its plane stride, the offset of channel c0's row oy0).
                let src: Option<(&[f32], usize, usize)> = match native {
                    Some(d) => Some((d, ho * wo, (c0 * ho + oy0) * wo)),
                    None if avx.is_some() => {
                        let run = rows.len() * wo;
                        wide.resize(8 * run, T::Acc::zero());
                        for (j, w) in wide.chunks_exact_mut(run).enumerate() {
                            T::slice_to_acc(&dy[((c0 + j) * ho + oy0) * wo..][..run], w);
                        }
                        T::Acc::as_f32(&wide).map(|w| (w, run, 0))
                    }
                    None => None,
                };
                #[cfg(not(target_arch = "x86_64"))]
                let _ = src;
                for oy in rows.clone() {
                    let base = (oy * len + padl) * co;
                    for x0 in (0..x8).step_by(8) {
                        let d = &mut dst[base + x0 * co + c0..];
                        #[cfg(target_arch = "x86_64")]
                        if let (Some(simd), Some((sf, ls, at)), Some(df)) =
                            (avx, src, T::Acc::as_f32_mut(d))
                        {
                            let s = &sf[at + (oy - oy0) * wo + x0..];
                            super::filter_direct::transpose8_avx(simd, s, ls, df, co);
                            continue;
                        }
                        let s = &dy[(c0 * ho + oy) * wo + x0..];
                        transpose8_with(s, ho * wo, d, co, |v: T| v.to_acc());
                    }
                    // The block's last `wo - x8` columns: one 8x8 transpose whose loads run on
                    // into the next row, where that stays inside the source.
                    if x8 == wo {
                        continue;
                    }
                    #[cfg(target_arch = "x86_64")]
                    if let (Some(simd), Some((sf, ls, at)), Some(df)) = (
                        avx,
                        src,
                        T::Acc::as_f32_mut(&mut dst[base + x8 * co + c0..]),
                    ) {
                        let first = at + (oy - oy0) * wo + x8;
                        if first + 7 * ls + 8 <= sf.len() {
                            super::filter_direct::transpose8_avx_cols(
                                simd,
                                &sf[first..],
                                ls,
                                df,
                                co,
                                wo - x8,
                            );
                            continue;
                        }
                    }
                    for x in x8..wo {
                        for c in c0..c0 + 8 {
                            dst[base + x * co + c] = dy[(c * ho + oy) * wo + x].to_acc();
                        }
                    }
                }
            }
            // Channels past the last whole block of 8.
            for oy in rows {
                let base = (oy * len + padl) * co;
                for x in 0..wo {
                    for c in c8..co {
                        dst[base + x * co + c] = dy[(c * ho + oy) * wo + x].to_acc();
                    }
                }
            }
        }
    }
}

simd_fn! {
    /// `dx[c * plane + u * wi + x] = rows[(u * wi + x) * bw + c]` for the `bw` channels of `n`
    /// consecutive rows of `wi` pixels each (`rows` holding them one after another), rounded
    /// once; [`ROWS_PER_PASS`] rows of a channel block at a time. bf16: rounded in the
    /// transpose's registers. f16 (no F16C in the AVX2 token): the f32 transposes into a
    /// pass's block of f32 rows, then one vectorised rounding a channel (the rows are
    /// consecutive in a plane).
    pub(super) fn store_rows<T: Element>(
        rows: &[T::Acc],
        (n, wi, bw): (usize, usize, usize),
        plane: usize,
        dx: &mut [T],
    ) {
        let x8 = wi / 8 * 8;
        #[cfg(target_arch = "x86_64")]
        let avx = crate::cpu::simd::avx2();
        #[cfg(target_arch = "x86_64")]
        let narrowed = avx.is_some() && T::as_acc_slice(dx).is_none();
        #[cfg(target_arch = "x86_64")]
        let mut narrow: Vec<T::Acc> = Vec::new();
        for u0 in (0..n).step_by(ROWS_PER_PASS) {
            let nu = ROWS_PER_PASS.min(n - u0);
            for c0 in (0..bw).step_by(8) {
                #[cfg(target_arch = "x86_64")]
                if let (true, Some(simd), Some(rf)) = (narrowed, avx, T::Acc::as_f32(rows)) {
                    if T::DTYPE == DType::BF16 {
                        // Rounded in the transpose's registers: no f32 block between. A
                        // row's last columns, fewer than 8, in one block with zero lanes
                        // (kept apart: a variable width in every block stored through
                        // `memcpy` calls, W4 0.87x).
                        let db: &mut [u16] = bytemuck::cast_slice_mut(dx);
                        for u in u0..u0 + nu {
                            let row = &rf[u * wi * bw..][..wi * bw];
                            for x0 in (0..x8).step_by(8) {
                                let o = transposed8(simd, &row[x0 * bw + c0..], bw, 8);
                                for (j, v) in o.into_iter().enumerate() {
                                    db[(c0 + j) * plane + u * wi + x0..][..8]
                                        .copy_from_slice(&f32x8_to_bf16_bits(simd, v));
                                }
                            }
                            if x8 < wi {
                                let cols = wi - x8;
                                let o = transposed8(simd, &row[x8 * bw + c0..], bw, cols);
                                for (j, v) in o.into_iter().enumerate() {
                                    db[(c0 + j) * plane + u * wi + x8..][..cols]
                                        .copy_from_slice(&f32x8_to_bf16_bits(simd, v)[..cols]);
                                }
                            }
                        }
                        continue;
                    }
                    let run = nu * wi;
                    narrow.resize(8 * run, T::Acc::zero());
                    if let Some(nf) = T::Acc::as_f32_mut(&mut narrow) {
                        for u in 0..nu {
                            let row = &rf[(u0 + u) * wi * bw..][..wi * bw];
                            for x0 in (0..x8).step_by(8) {
                                let d = &mut nf[u * wi + x0..];
                                super::filter_direct::transpose8_avx(
                                    simd,
                                    &row[x0 * bw + c0..],
                                    bw,
                                    d,
                                    run,
                                );
                            }
                            for x in x8..wi {
                                for j in 0..8 {
                                    nf[j * run + u * wi + x] = row[x * bw + c0 + j];
                                }
                            }
                        }
                        for (j, w) in narrow.chunks_exact(run).enumerate() {
                            T::slice_from_acc(w, &mut dx[(c0 + j) * plane + u0 * wi..][..run]);
                        }
                        continue;
                    }
                }
                for u in u0..u0 + nu {
                    let row = &rows[u * wi * bw..][..wi * bw];
                    let dxu = &mut dx[u * wi..];
                    for x0 in (0..x8).step_by(8) {
                        let d = &mut dxu[c0 * plane + x0..];
                        let s = &row[x0 * bw + c0..];
                        #[cfg(target_arch = "x86_64")]
                        if let (Some(simd), Some(sf), Some(df)) = (
                            avx,
                            T::Acc::as_f32(s),
                            T::as_acc_slice_mut(d).and_then(T::Acc::as_f32_mut),
                        ) {
                            super::filter_direct::transpose8_avx(simd, sf, bw, df, plane);
                            continue;
                        }
                        transpose8_with(s, bw, d, plane, |v: T::Acc| T::from_acc(v));
                    }
                    for x in x8..wi {
                        for j in 0..8 {
                            dxu[(c0 + j) * plane + x] = T::from_acc(row[x * bw + c0 + j]);
                        }
                    }
                }
            }
        }
    }
}

/// The pixel-major operand of one image `src` in `layout` (`(c, h, w)`):
/// `dst[(y * len + padl + x) * c + ch]`, the other columns zero. NCHW through
/// [`pixel_major`]'s 8x8 transposes; NHWC rows are already pixel-major (copied, padded).
pub(super) fn to_pixel_major<T: Element>(
    layout: Layout,
    src: &[T],
    (c, h, w): (usize, usize, usize),
    (len, padl): (usize, usize),
    dst: &mut [T::Acc],
) {
    match layout {
        Layout::Nchw => pixel_major::<T>(src, (c, h, w), (len, padl), dst),
        Layout::Nhwc => {
            for (y, d) in dst.chunks_exact_mut(len * c).take(h).enumerate() {
                let (left, rest) = d.split_at_mut(padl * c);
                let (mid, right) = rest.split_at_mut(w * c);
                left.fill(T::Acc::zero());
                T::slice_to_acc(&src[y * w * c..][..w * c], mid);
                right.fill(T::Acc::zero());
            }
        }
    }
}

/// An output image (`h` x `w` pixels, `c` channels) in `layout`, written one row of one
/// channel block at a time: NCHW channel planes (through 8x8 transposes) or NHWC pixels.
#[derive(Clone, Copy)]
pub(super) struct OutImage {
    pub(super) layout: Layout,
    pub(super) h: usize,
    pub(super) w: usize,
    pub(super) c: usize,
}

impl OutImage {
    /// Offset of row `y`'s first pixel in channel `ch`.
    pub(super) fn at(&self, ch: usize, y: usize) -> usize {
        match self.layout {
            Layout::Nchw => (ch * self.h + y) * self.w,
            Layout::Nhwc => y * self.w * self.c + ch,
        }
    }

    /// `n` consecutive rows (`[u][x][bw]`, [`Self::w`] pixels each) into `out` (from
    /// [`Self::at`] of the first row and the block's first channel), rounded once.
    pub(super) fn store<T: Element>(
        &self,
        rows: &[T::Acc],
        (n, bw): (usize, usize),
        out: &mut [T],
    ) {
        match self.layout {
            Layout::Nchw => store_rows::<T>(rows, (n, self.w, bw), self.h * self.w, out),
            Layout::Nhwc => {
                for (p, r) in rows.chunks_exact(bw).take(n * self.w).enumerate() {
                    T::slice_from_acc(r, &mut out[p * self.c..][..bw]);
                }
            }
        }
    }
}

/// One output row of one channel block into a pixel-major buffer. Not generic over the
/// element type: the register tiles are compiled once, here.
pub(super) struct Row<'a> {
    pub(super) ops: RowOperands<'a>,
    /// `[x][c]`, `bw` channels per pixel.
    pub(super) row: &'a mut [f32],
    pub(super) bw: usize,
}

impl Row<'_> {
    #[inline(never)]
    pub(super) fn run(self, level: Level) {
        level.dispatch(self)
    }
}

impl pulp::WithSimd for Row<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Row {
            ops:
                RowOperands {
                    a,
                    wt,
                    k,
                    segs,
                    taps,
                },
            row,
            bw,
        } = self;
        let nv = bw / S::F32_LANES;
        for seg in segs {
            let mut q0 = 0;
            while q0 < seg.n {
                let nr = tile_pixels(seg.n - q0, tile_rows(S::F32_LANES));
                let t = TileArgs {
                    a,
                    lda: seg.lda,
                    wt,
                    taps: &taps[seg.taps.clone()],
                    k,
                    q0,
                    out: (&mut *row, bw, seg.x0, seg.sx),
                };
                tile_dispatch(simd, nr, nv, t);
                q0 += nr;
            }
        }
    }
}

/// Pixels of the next register tile with `n` left: full tiles of `rows`, except that a
/// remainder of 1 or 2 after one is avoided by taking 4 (`14 = 6 + 4 + 4`, not `6 + 6 + 2`:
/// the narrow tiles run far below the FMA rate).
fn tile_pixels(n: usize, rows: usize) -> usize {
    match n {
        n if n == rows || n >= rows + 4 => rows,
        n if n >= 4 => 4,
        n if n >= 2 => 2,
        _ => 1,
    }
}

/// A register tile's operands: pixels `q0..q0 + nr` of a segment; per tap, (offset of the
/// tap's `[k][bw]` block in `wt`, offset in `a` of pixel `q = 0`; pixels `lda` apart, `k`
/// reduction channels each); `out` = (pixel-major row buffer, its channels per pixel, the
/// segment's first column, its column stride).
struct TileArgs<'a> {
    a: &'a [f32],
    lda: usize,
    wt: &'a [f32],
    taps: &'a [(usize, usize)],
    k: usize,
    q0: usize,
    out: (&'a mut [f32], usize, usize, usize),
}

#[inline(always)]
fn tile_dispatch<S: Simd>(simd: S, nr: usize, nv: usize, t: TileArgs) {
    macro_rules! go {
        ($($r:literal, $v:literal);*) => {
            match (nr, nv) {
                $(($r, $v) => tile::<S, $r, $v>(simd, t),)*
                _ => unreachable!("tile shape {nr}x{nv}"),
            }
        };
    }
    go!(6, 4; 6, 3; 6, 2; 6, 1; 5, 2; 5, 1; 4, 4; 4, 3; 4, 2; 4, 1; 2, 4; 2, 3; 2, 2; 2, 1; 1, 4; 1, 3; 1, 2; 1, 1)
}

/// Reduction channels per iteration of a register tile's loop. One at a time, the loop's
/// address and counter updates added 9 instructions to the AVX2 tile's 17 (10 FMAs, 5
/// broadcasts, 2 loads); two at a time 7 to 34. Four at a time LLVM keeps more filter
/// vectors live than AVX2's 16 registers hold and moves an accumulator to the stack (the
/// fastest calls 11-16% slower). On the project's Zen 3 VMs, whose calls run up to 1.5x
/// slower in spells while a pure-FMA loop keeps its rate, two at a time ran W4 and W5 1.05x
/// to 1.14x as fast (paired calls, BENCHMARKS.md 2026-12-02). The sums keep their order.
const K_UNROLL: usize = 2;

/// `out[(q0 + r) s + x0][v] = sum over taps and j < k of a[tap.1 + (q0 + r) lda + j] *
/// wt[tap.0 + j NV lanes][v]`.
#[inline(always)]
fn tile<S: Simd, const NR: usize, const NV: usize>(simd: S, t: TileArgs) {
    let TileArgs {
        a: src,
        lda,
        wt,
        taps,
        k,
        q0,
        out: (row, bw, x0, sx),
    } = t;
    let lanes = S::F32_LANES;
    // Arrays filled by plain loops: `array::from_fn` may build them on the stack and copy
    // them.
    let mut acc = [[simd.splat_f32s(0.0); NV]; NR];
    for &(wofs, ao) in taps {
        let mut a: [&[f32]; NR] = [&[]; NR];
        for (r, ar) in a.iter_mut().enumerate() {
            *ar = &src[ao + (q0 + r) * lda..][..k];
        }
        let (bv, _) = S::as_simd_f32s(&wt[wofs..][..k * NV * lanes]);
        // Channels by K_UNROLL (same order, same sums), then the rest one by one.
        let nk = k / K_UNROLL;
        let (bvk, bvr) = bv.split_at(nk * K_UNROLL * NV);
        let mut ak: [&[[f32; K_UNROLL]]; NR] = [&[]; NR];
        for (r, akr) in ak.iter_mut().enumerate() {
            *akr = &a[r].as_chunks::<K_UNROLL>().0[..nk];
        }
        for (ok, bo) in bvk.chunks_exact(K_UNROLL * NV).enumerate() {
            for u in 0..K_UNROLL {
                for r in 0..NR {
                    let av = simd.splat_f32s(ak[r][ok][u]);
                    for v in 0..NV {
                        acc[r][v] = simd.mul_add_f32s(av, bo[u * NV + v], acc[r][v]);
                    }
                }
            }
        }
        for (o, bo) in bvr.chunks_exact(NV).enumerate() {
            let o = nk * K_UNROLL + o;
            for r in 0..NR {
                let av = simd.splat_f32s(a[r][o]);
                for v in 0..NV {
                    acc[r][v] = simd.mul_add_f32s(av, bo[v], acc[r][v]);
                }
            }
        }
    }
    for (r, accr) in acc.iter().enumerate() {
        let x = (q0 + r) * sx + x0;
        for (v, &val) in accr.iter().enumerate() {
            S::as_mut_simd_f32s(&mut row[x * bw + v * lanes..][..lanes]).0[0] = val;
        }
    }
}

/// Whether a bf16 call with `kg` reduction channels per group takes the pair tiles before any
/// other path (Winograd included: on a Zen 5, one thread, NHWC W4 ran 4.36 ms on pairs against
/// 4.28 by F(4x4) in f32 and W4f 4.34 against 4.41, now with exact products; W5 2.34 against
/// 3.60 by the phase Winograd; BENCHMARKS.md, 2026-12-07, fifth session).
pub(super) fn pairs_first<T: Element>(kg: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        pair_dot::<T>(kg, Level::Best).is_some()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = kg;
        false
    }
}

/// The AVX512_BF16 tokens where a bf16 call with `kg` reduction channels per group takes the
/// pair tiles ([`tile_pairs`]): `kg` even, so that every pair lies in one group, at `level`'s
/// AVX-512 (the blocks are whole 16-channel vectors).
#[cfg(target_arch = "x86_64")]
fn pair_dot<T: Element>(kg: usize, level: Level) -> Option<Bf16Dot> {
    (T::DTYPE == DType::BF16 && kg.is_multiple_of(2) && lanes(level) == Some(16))
        .then(Bf16Dot::new)
        .flatten()
}

/// [`blocked_filter`]'s layout in bf16 pairs along `k`, from the stored bits of the bf16
/// HWIO `w`: `[group][block][tap][k/2][bw]`, each lane's `k` even in its low half. Forward
/// (`by_out`, `k` = c): two HWIO rows interleaved; backprop_input (`k` = o): a pair is two
/// consecutive elements of an HWIO row, the rows transposed as `u32`s. No f32 filter (its
/// layout, widened, cost W5 66 us of a 1.6 ms two-thread call).
#[cfg(target_arch = "x86_64")]
fn filter_pairs<'a, T: Element>(
    g: &ConvGeometry,
    w: &[T],
    (nb, by_out): (usize, bool),
    dst: &'a mut Vec<f32>,
) -> &'a [u32] {
    debug_assert_eq!(T::DTYPE, DType::BF16);
    let bits: &[u16] = bytemuck::cast_slice(w);
    let (cig, cog) = (g.ci / g.groups, g.co / g.groups);
    let n = g.h.kernel * g.w.kernel * cig * g.co / 2;
    // Every element is written below.
    dst.resize(n, 0.0);
    let out: &mut [u32] = bytemuck::cast_slice_mut(&mut dst[..n]);
    filter_blocks(g, (nb, by_out), 2, out)
        .into_par_iter()
        .for_each(|b| {
            let FilterBlock {
                grp,
                jb,
                bw,
                t,
                dst,
            } = b;
            let row = |c: usize| &bits[(t * cig + c) * g.co + grp * cog..][..cog];
            for (kk, d) in dst.chunks_exact_mut(bw).enumerate() {
                if by_out {
                    let (lo, hi) = (&row(2 * kk)[jb..][..bw], &row(2 * kk + 1)[jb..][..bw]);
                    for ((d, &l), &h) in d.iter_mut().zip(lo).zip(hi) {
                        *d = pair(l, h);
                    }
                } else {
                    for (j, d) in d.iter_mut().enumerate() {
                        let r = row(jb + j);
                        *d = pair(r[2 * kk], r[2 * kk + 1]);
                    }
                }
            }
        });
    bytemuck::cast_slice(&dst[..n])
}

/// One bf16 operand image `src` in `layout` (`(c, h, w)`, `c` even) as pairs of consecutive
/// channels in [`to_pixel_major`]'s padded order (`[(y * len + padl + x) * c / 2 + k]`, the
/// other columns zero), from the stored bits (widening to f32 and packing the pairs again
/// cost two passes). NHWC channel pairs are the pairs: copied as they are. NCHW: two channel
/// planes interleaved and transposed in one pass ([`pair_transpose`]). The buffer is `dst`.
#[cfg(target_arch = "x86_64")]
pub(super) fn bf16_pairs<'a, T: Element>(
    layout: Layout,
    src: &[T],
    (c, h, w): (usize, usize, usize),
    (len, padl): (usize, usize),
    dst: &'a mut Vec<f32>,
) -> &'a [u32] {
    let bits: &[u16] = bytemuck::cast_slice(src);
    let cp = c / 2;
    let n = h * len * cp;
    dst.resize(n, 0.0);
    match layout {
        Layout::Nhwc => {
            let out: &mut [u32] = bytemuck::cast_slice_mut(&mut dst[..n]);
            for (y, d) in out.chunks_exact_mut(len * cp).enumerate() {
                let (left, rest) = d.split_at_mut(padl * cp);
                let (mid, right) = rest.split_at_mut(w * cp);
                left.fill(0);
                right.fill(0);
                // A pixel's channel pairs are its stored halves in order: `pair(lo, hi)` is
                // the little-endian `u32` of the two, so the row is one copy.
                let mid: &mut [u16] = bytemuck::cast_slice_mut(mid);
                mid.copy_from_slice(&bits[y * w * c..][..w * c]);
            }
        }
        Layout::Nchw => {
            let out: &mut [u32] = bytemuck::cast_slice_mut(&mut dst[..n]);
            pair_transpose(bits, (cp, h, w), (len, padl), out);
        }
    }
    bytemuck::cast_slice(&dst[..n])
}

#[cfg(target_arch = "x86_64")]
simd_fn! {
    /// `dst[(y * len + padl + x) * cp + k] = pair(bits[2k][y][x], bits[2k + 1][y][x])` for
    /// the `2 * cp` channel planes of `bits` (`(h, w)` each), the other columns of each row
    /// zero. Blocks of 8 pairs by 8 pixels: the 16 channel rows' halves interleaved into 8
    /// pair vectors and transposed in registers (one pass over the stored bits; interleaving
    /// into pair planes and then transposing them cost NCHW bf16 W4 a second pass). The rest
    /// one pair at a time.
    fn pair_transpose(
        bits: &[u16],
        (cp, h, w): (usize, usize, usize),
        (len, padl): (usize, usize),
        dst: &mut [u32],
    ) {
        let plane = h * w;
        let k8 = cp / 8 * 8;
        let avx = crate::cpu::simd::avx2();
        let one = |k: usize, y: usize, x: usize| {
            let at = y * w + x;
            pair(bits[2 * k * plane + at], bits[(2 * k + 1) * plane + at])
        };
        for y0 in (0..h).step_by(ROWS_PER_PASS) {
            let rows = y0..(y0 + ROWS_PER_PASS).min(h);
            for y in rows.clone() {
                // The pad columns (the buffer is reused: nothing else clears them).
                let row = &mut dst[y * len * cp..][..len * cp];
                row[..padl * cp].fill(0);
                row[(padl + w) * cp..].fill(0);
            }
            for k0 in (0..k8).step_by(8) {
                for y in rows.clone() {
                    let base = (y * len + padl) * cp + k0;
                    let mut x0 = 0;
                    if let Some(simd) = avx {
                        // A row's last block reads on into the next row, where that stays
                        // inside `bits` (it stores only the row's columns).
                        while x0 < w && (2 * k0 + 15) * plane + y * w + x0 + 8 <= bits.len() {
                            let cols = 8.min(w - x0);
                            let s = &bits[2 * k0 * plane + y * w + x0..];
                            let d = &mut dst[base + x0 * cp..];
                            pair_transpose8(simd, s, plane, d, cp, cols);
                            x0 += 8;
                        }
                    }
                    for x in x0..w {
                        for k in 0..8 {
                            dst[base + x * cp + k] = one(k0 + k, y, x);
                        }
                    }
                }
            }
            // Pairs past the last whole block of 8.
            for y in rows {
                let base = (y * len + padl) * cp;
                for x in 0..w {
                    for k in k8..cp {
                        dst[base + x * cp + k] = one(k, y, x);
                    }
                }
            }
        }
    }
}

/// One block of [`pair_transpose`]: `d[x * ld + j] = pair(s[2j * ls + x], s[(2j + 1) * ls +
/// x])` for 8 pairs `j` and the first `cols` of 8 columns `x` (the loads read all 8).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pair_transpose8(
    simd: pulp::x86::V3,
    s: &[u16],
    ls: usize,
    d: &mut [u32],
    ld: usize,
    cols: usize,
) {
    use core::arch::x86_64::{__m128i, __m256};
    use pulp::bytemuck::cast;
    let half = |at: usize| {
        let mut a = [0u16; 8];
        a.copy_from_slice(&s[at..][..8]);
        cast::<[u16; 8], __m128i>(a)
    };
    let r: [__m256; 8] = std::array::from_fn(|j| {
        let (lo, hi) = (half(2 * j * ls), half((2 * j + 1) * ls));
        // Columns 0-3 then 4-7, each `lo | hi << 16`.
        cast::<[__m128i; 2], __m256>([
            simd.sse2._mm_unpacklo_epi16(lo, hi),
            simd.sse2._mm_unpackhi_epi16(lo, hi),
        ])
    });
    let o = super::filter_direct::transpose8_regs(simd, r);
    for (x, v) in o.iter().enumerate().take(cols) {
        d[x * ld..][..8].copy_from_slice(&cast::<__m256, [u32; 8]>(*v));
    }
}

/// `o[j]` lane `i` = `s[i * ls + j]` for the first `cols` of 8 rows `i` (the others zero): an
/// 8x8 f32 block transposed into registers, for a result rounded there.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn transposed8(
    simd: pulp::x86::V3,
    s: &[f32],
    ls: usize,
    cols: usize,
) -> [core::arch::x86_64::__m256; 8] {
    let mut r = [[0f32; 8]; 8];
    for (i, r) in r.iter_mut().enumerate().take(cols) {
        r.copy_from_slice(&s[i * ls..][..8]);
    }
    super::filter_direct::transpose8_regs(simd, pulp::bytemuck::cast(r))
}

/// Whether the pair tiles write the output themselves ([`BitsRow`]): NHWC, where a
/// block's pixels are runs of the output's own rows; NCHW rows go through an f32 row and the
/// transposing store.
#[cfg(target_arch = "x86_64")]
fn pairs_into_bits<T: Element>(layout: Layout, dot: Option<Bf16Dot>) -> bool {
    layout == Layout::Nhwc && dot.is_some() && T::DTYPE == DType::BF16
}

/// The NHWC output row from `at` as bf16 bits, `pitch` elements a pixel, where
/// [`pairs_into_bits`]; else `None`.
#[cfg(target_arch = "x86_64")]
fn nhwc_bits_row<T: Element>(
    layout: Layout,
    out: &mut [T],
    at: usize,
    pitch: usize,
) -> Option<(&mut [u16], usize)> {
    if layout != Layout::Nhwc || T::DTYPE != DType::BF16 {
        return None;
    }
    // bf16 and u16: the same size and alignment, so the cast cannot fail.
    let bits = bytemuck::try_cast_slice_mut(&mut out[at..]);
    debug_assert!(bits.is_ok());
    Some((bits.ok()?, pitch))
}

/// Where [`tile_pairs`] leaves an output row of one channel block: each mode a type of its
/// own, compiled into tiles of its own, so the NCHW tiles stay as they were (one tile body
/// matching on the mode at each store read 1%-5% slower in NCHW, Zen 4).
#[cfg(target_arch = "x86_64")]
trait PairRow {
    /// Pixel `x`'s channel vector `v` (16 channels from `16 v`).
    fn put(&mut self, v4: V4, x: usize, v: usize, val: pulp::f32x16);
}

/// `[x][bw]` in f32, for the caller to store (NCHW: transposed into the channel planes).
#[cfg(target_arch = "x86_64")]
struct F32Row<'a>(&'a mut [f32], usize);

#[cfg(target_arch = "x86_64")]
impl PairRow for F32Row<'_> {
    #[inline(always)]
    fn put(&mut self, _: V4, x: usize, v: usize, val: pulp::f32x16) {
        <V4 as Simd>::as_mut_simd_f32s(&mut self.0[x * self.1 + v * 16..][..16]).0[0] = val;
    }
}

/// The NHWC output row's bf16 bits from the block's first channel, `pitch` elements a pixel:
/// rounded as they leave the registers, no f32 row between.
#[cfg(target_arch = "x86_64")]
struct BitsRow<'a>(&'a mut [u16], usize);

#[cfg(target_arch = "x86_64")]
impl PairRow for BitsRow<'_> {
    #[inline(always)]
    fn put(&mut self, v4: V4, x: usize, v: usize, val: pulp::f32x16) {
        self.0[x * self.1 + v * 16..][..16].copy_from_slice(&f32x16_to_bf16_bits(v4, val));
    }
}

/// [`row_into`] from bf16 pairs (offsets of `taps` and `segs` in pairs) into `row`, or, where
/// `bits` is given, into the NHWC output row it holds (see [`BitsRow`]).
#[cfg(target_arch = "x86_64")]
fn row_pairs_into<T: Element>(
    dot: Bf16Dot,
    ops: RowPairs,
    (row, bw): (&mut [T::Acc], usize),
    bits: Option<(&mut [u16], usize)>,
) {
    match bits {
        Some((out, pitch)) => row_pairs(dot, ops, BitsRow(out, pitch), bw),
        None => {
            if let Some(row) = T::Acc::as_f32_mut(row) {
                row_pairs(dot, ops, F32Row(row, bw), bw);
            }
        }
    }
}

/// [`RowOperands`] in bf16 pairs: `a` and `wt` as `u32` pair lanes, `kp` pairs per tap.
#[cfg(target_arch = "x86_64")]
struct RowPairs<'a> {
    a: &'a [u32],
    wt: &'a [u32],
    kp: usize,
    segs: &'a [Segment],
    taps: &'a [(usize, usize)],
}

#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn row_pairs<O: PairRow>(dot: Bf16Dot, ops: RowPairs, mut row: O, bw: usize) {
    dot.vectorize(
        #[inline(always)]
        || {
            let nv = bw / 16;
            for seg in ops.segs {
                let mut q0 = 0;
                while q0 < seg.n {
                    let nr = tile_pixels(seg.n - q0, 6);
                    let t = PairTileArgs {
                        a: ops.a,
                        lda: seg.lda,
                        wt: ops.wt,
                        taps: &ops.taps[seg.taps.clone()],
                        kp: ops.kp,
                        q0,
                        out: (&mut row, seg.x0, seg.sx),
                    };
                    pair_tile_dispatch(dot, nr, nv, t);
                    q0 += nr;
                }
            }
        },
    )
}

#[cfg(target_arch = "x86_64")]
struct PairTileArgs<'a, O> {
    a: &'a [u32],
    lda: usize,
    wt: &'a [u32],
    taps: &'a [(usize, usize)],
    kp: usize,
    q0: usize,
    out: (&'a mut O, usize, usize),
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pair_tile_dispatch<O: PairRow>(dot: Bf16Dot, nr: usize, nv: usize, t: PairTileArgs<O>) {
    macro_rules! go {
        ($($r:literal, $v:literal);*) => {
            match (nr, nv) {
                $(($r, $v) => tile_pairs::<$r, $v, O>(dot, t),)*
                _ => unreachable!("tile shape {nr}x{nv}"),
            }
        };
    }
    go!(6, 4; 6, 3; 6, 2; 6, 1; 4, 4; 4, 3; 4, 2; 4, 1; 2, 4; 2, 3; 2, 2; 2, 1; 1, 4; 1, 3; 1, 2; 1, 1)
}

/// [`tile`] on bf16 pairs: `out[(q0 + r) s + x0][v] = sum over taps and pairs j < kp of
/// dot(a[tap.1 + (q0 + r) lda + j], wt[tap.0 + j NV 16][v])`, one `vdpbf16ps` per pixel,
/// pair and vector of 16 channels.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn tile_pairs<const NR: usize, const NV: usize, O: PairRow>(dot: Bf16Dot, t: PairTileArgs<O>) {
    let PairTileArgs {
        a: src,
        lda,
        wt,
        taps,
        kp,
        q0,
        out: (row, x0, sx),
    } = t;
    let v4 = dot.v4;
    let mut acc = [[v4.splat_f32x16(0.0); NV]; NR];
    for &(wofs, ao) in taps {
        let mut a: [&[u32]; NR] = [&[]; NR];
        for (r, ar) in a.iter_mut().enumerate() {
            *ar = &src[ao + (q0 + r) * lda..][..kp];
        }
        let (bv, _) = <V4 as Simd>::as_simd_u32s(&wt[wofs..][..kp * NV * 16]);
        for (j, bo) in bv.chunks_exact(NV).enumerate() {
            for r in 0..NR {
                let av = v4.splat_u32x16(a[r][j]);
                for v in 0..NV {
                    acc[r][v] = dot.dot(acc[r][v], av, bo[v]);
                }
            }
        }
    }
    for (r, accr) in acc.iter().enumerate() {
        let x = (q0 + r) * sx + x0;
        for (v, &val) in accr.iter().enumerate() {
            row.put(v4, x, v, val);
        }
    }
}

/// The row's tap and segment offsets from f32 elements to pairs (all even: the reduction
/// channels per group, hence all channel counts, are).
#[cfg(target_arch = "x86_64")]
fn halve_offsets(taps: &mut [(usize, usize)], segs: &mut [Segment]) {
    for t in taps {
        *t = (t.0 / 2, t.1 / 2);
    }
    for s in segs {
        s.lda /= 2;
    }
}

#[cfg(test)]
mod tests {
    use super::with_scratch;

    /// [`super::pair_transpose`] against one pair at a time from its definition: shapes with
    /// whole 8x8 blocks, a row's last columns fewer than 8 (whose block's loads run into the
    /// next row, and at the last row of the last block fall back), pairs past the last block
    /// of 8, left and right pad columns; `dst` poisoned first.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn pair_transpose_matches_its_definition() {
        let mut seed = 0x9E37_79B9_u32;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as u16
        };
        for (cp, h, w, padl, padr) in [
            (8, 8, 8, 0, 0),
            (32, 10, 56, 1, 1),
            (8, 3, 13, 2, 0),
            (12, 5, 7, 0, 3),
            (3, 4, 9, 1, 2),
            (16, 1, 28, 0, 1),
        ] {
            let len = padl + w + padr;
            let bits: Vec<u16> = (0..2 * cp * h * w).map(|_| next()).collect();
            let mut dst = vec![0xDEAD_BEEF_u32; h * len * cp];
            super::pair_transpose(&bits, (cp, h, w), (len, padl), &mut dst);
            for y in 0..h {
                for col in 0..len {
                    for k in 0..cp {
                        let want = match col.checked_sub(padl).filter(|&x| x < w) {
                            Some(x) => {
                                let at = y * w + x;
                                super::pair(
                                    bits[2 * k * h * w + at],
                                    bits[(2 * k + 1) * h * w + at],
                                )
                            }
                            None => 0,
                        };
                        assert_eq!(
                            dst[(y * len + col) * cp + k],
                            want,
                            "cp {cp} h {h} w {w} pad {padl}/{padr}: y {y} col {col} pair {k}"
                        );
                    }
                }
            }
        }
    }

    /// Nested uses of the thread scratch (a rayon job run inside another's) each keep their
    /// own buffers across calls: the second round reuses the first round's allocations at
    /// both levels instead of trading them between the levels (or allocating anew).
    #[test]
    fn scratch_levels_keep_their_buffers() {
        // The test thread's own pool, from empty.
        std::thread::spawn(|| {
            let mut seen = Vec::new();
            for round in 0..3 {
                with_scratch(|[a, b]| {
                    a.resize(1000, 1.0);
                    b.resize(3000, 2.0);
                    let outer = (a.as_ptr(), b.as_ptr());
                    let inner = with_scratch(|[c, d, e]| {
                        for (v, n) in [(&mut *c, 5000), (&mut *d, 7000), (&mut *e, 9000)] {
                            v.resize(n, 3.0);
                        }
                        (c.as_ptr(), d.as_ptr(), e.as_ptr())
                    });
                    // The inner level's buffers are not the outer's.
                    assert!(![inner.0, inner.1, inner.2].contains(&outer.0));
                    assert!(![inner.0, inner.1, inner.2].contains(&outer.1));
                    assert_eq!((a.len(), b.len()), (1000, 3000), "round {round}");
                    seen.push((outer, inner));
                });
            }
            assert!(seen.windows(2).all(|w| w[0] == w[1]), "{seen:?}");
        })
        .join()
        .unwrap();
    }
}

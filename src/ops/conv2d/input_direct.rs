//! CPU `conv2d_backprop_input` for NCHW in f32 registers without im2col: per stride phase of
//! `dx`, register tiles of up to 6 `dx` pixels of one phase row by up to four vectors of
//! input channels, accumulated over the phase's taps and the output channels:
//! `dx[c][y][x] += dy[o][oy][ox] * W[ky][kx][c][o]`, one `dy` element broadcast per pixel and
//! output channel, `W`'s channels loaded as vectors.
//!
//! Why: the GEMM path copies `dy` into phase columns, packs both operands and scatters the
//! phase tiles back. Here `dy` is transposed once per image to pixel-major rows padded with
//! zero columns (a pixel's output channels contiguous; no tile tests for the edge), `W` once
//! per call to `[tap][o][c]` per block of channels (consecutive `o`, consecutive vectors),
//! and each `dx` row is produced once, pixel-major, then transposed into the channel planes.
//!
//! Deterministic: each `dx` element is one register lane's sum in a fixed order (taps
//! ascending, then output channels ascending), written once; work items are whole images.

use super::cpu_kernel::{axis_phases, AxisPhase};
use super::filter_direct::{lanes, transpose8_with, Level};
use crate::dtype::{Accum, Element};
use crate::geometry::window::ConvGeometry;
use multiversion::multiversion;
use num_traits::Zero;
use pulp::Simd;
use rayon::prelude::*;

/// `dx` pixels per register tile (with four vectors of 16 channels: 24 accumulators of
/// AVX-512's 32 registers; two vectors of 8 on AVX2: 12 of 16).
const R: usize = 6;

/// Whether the direct kernel serves this call (NCHW is the caller's check): f32
/// accumulation, an x86 CPU with AVX2+FMA or AVX-512, input channels per group a multiple of
/// the vector width, nothing empty.
pub(super) fn applies<T: Element>(g: &ConvGeometry, level: Level) -> bool {
    let nonempty = [
        g.n, g.ci, g.co, g.h.output, g.w.output, g.h.kernel, g.w.kernel,
    ];
    T::Acc::as_f32(&[]).is_some()
        && nonempty.iter().all(|&d| d > 0)
        && g.h.input * g.w.input > 0
        && lanes(level).is_some_and(|l| (g.ci / g.groups).is_multiple_of(l))
}

/// Channel vectors per register tile at `lanes` f32 lanes (see [`R`]).
const fn vectors(lanes: usize) -> usize {
    if lanes >= 16 {
        4
    } else {
        2
    }
}

/// `dx` (NCHW) from NCHW `dy` and an HWIO filter `w`; `false` (and `dx` untouched) where
/// [`applies`] does not hold.
pub(super) fn backprop_input_direct<T: Element>(
    g: &ConvGeometry,
    dy: &[T],
    w: &[T],
    dx: &mut [T],
    level: Level,
) -> bool {
    let Some(lanes) = lanes(level).filter(|_| applies::<T>(g, level)) else {
        return false;
    };
    let nb = vectors(lanes) * lanes;
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (cig, cog, ntaps) = (g.ci / g.groups, g.co / g.groups, g.h.kernel * g.w.kernel);
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
    // W per (group, channel block) as [tap][o][c of the block] in f32.
    let mut wt = vec![0f32; g.groups * cig * ntaps * cog];
    for grp in 0..g.groups {
        for cb in (0..cig).step_by(nb) {
            let bw = nb.min(cig - cb);
            let blk = &mut wt[(grp * cig + cb) * ntaps * cog..][..bw * ntaps * cog];
            for t in 0..ntaps {
                for o in 0..cog {
                    let dst = &mut blk[(t * cog + o) * bw..][..bw];
                    for (c, d) in dst.iter_mut().enumerate() {
                        let v = w[(t * cig + cb + c) * g.co + grp * cog + o];
                        *d = v.to_acc().to_f64_exact() as f32;
                    }
                }
            }
        }
    }
    let geo = Geo {
        g,
        len,
        padl,
        phases: (&hph, &wph),
    };
    let (dyimg, dximg) = (g.co * ho * wo, g.ci * hi * wi);
    dx.par_chunks_mut(dximg)
        .zip(dy.par_chunks(dyimg))
        .for_each_init(
            || (Vec::new(), Vec::new(), Vec::new()),
            |(dyt, rowbuf, taps), (dxi, dyi)| {
                // Pad columns are never written: zero from the first use of the buffer on.
                dyt.resize(ho * len * g.co, T::Acc::zero());
                pixel_major::<T>(dyi, (g.co, ho, wo), (len, padl), dyt);
                rowbuf.resize(wi * nb, T::Acc::zero());
                let (Some(dyt), Some(_)) = (T::Acc::as_f32(dyt), T::Acc::as_f32(rowbuf)) else {
                    return;
                };
                for grp in 0..g.groups {
                    for cb in (0..cig).step_by(nb) {
                        let bw = nb.min(cig - cb);
                        let wtb = &wt[(grp * cig + cb) * ntaps * cog..][..bw * ntaps * cog];
                        for yp in &hph {
                            for qy in 0..yp.n {
                                let y = qy * g.h.stride + yp.ph;
                                if let Some(row) = T::Acc::as_f32_mut(&mut rowbuf[..wi * bw]) {
                                    Row {
                                        geo: &geo,
                                        dyt,
                                        wt: wtb,
                                        grp,
                                        yq: (yp, qy),
                                        row,
                                        bw,
                                        taps,
                                    }
                                    .run(level);
                                }
                                // rowbuf [x][c] -> the block's channel planes, row y.
                                let at = ((grp * cig + cb) * hi + y) * wi;
                                store_row::<T>(
                                    &rowbuf[..wi * bw],
                                    (wi, bw),
                                    hi * wi,
                                    &mut dxi[at..],
                                );
                            }
                        }
                    }
                }
            },
        );
    true
}

/// `dst[(oy * len + padl + ox) * co + o] = dy[o][oy][ox]` (one image; 8x8 blocks).
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn pixel_major<T: Element>(
    dy: &[T],
    (co, ho, wo): (usize, usize, usize),
    (len, padl): (usize, usize),
    dst: &mut [T::Acc],
) {
    let (c8, x8) = (co / 8 * 8, wo / 8 * 8);
    #[cfg(target_arch = "x86_64")]
    let avx = pulp::x86::V3::try_new();
    for oy in 0..ho {
        let base = (oy * len + padl) * co;
        for c0 in (0..c8).step_by(8) {
            for x0 in (0..x8).step_by(8) {
                let s = &dy[(c0 * ho + oy) * wo + x0..];
                let d = &mut dst[base + x0 * co + c0..];
                #[cfg(target_arch = "x86_64")]
                if let (Some(simd), Some(sf), Some(df)) = (
                    avx,
                    T::as_acc_slice(s).and_then(T::Acc::as_f32),
                    T::Acc::as_f32_mut(d),
                ) {
                    super::filter_direct::transpose8_avx(simd, sf, ho * wo, df, co);
                    continue;
                }
                transpose8_with(s, ho * wo, d, co, |v: T| v.to_acc());
            }
        }
        for x in 0..wo {
            let cs = if x < x8 { c8 } else { 0 };
            for c in cs..co {
                dst[base + x * co + c] = dy[(c * ho + oy) * wo + x].to_acc();
            }
        }
    }
}

/// `dx[c * plane + x] = row[x * bw + c]` for the `bw` channels of a row (`wi` pixels), rounded
/// once.
#[multiversion(targets("x86_64+avx512f+avx512vl+avx2+fma", "x86_64+avx2+fma", "aarch64+neon"))]
fn store_row<T: Element>(row: &[T::Acc], (wi, bw): (usize, usize), plane: usize, dx: &mut [T]) {
    let x8 = wi / 8 * 8;
    #[cfg(target_arch = "x86_64")]
    let avx = pulp::x86::V3::try_new();
    for c0 in (0..bw).step_by(8) {
        for x0 in (0..x8).step_by(8) {
            let d = &mut dx[c0 * plane + x0..];
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
                dx[(c0 + j) * plane + x] = T::from_acc(row[x * bw + c0 + j]);
            }
        }
    }
}

/// The call's geometry as the row kernel needs it.
struct Geo<'a> {
    g: &'a ConvGeometry,
    /// Padded `dy` row length and the column of `dy` column 0.
    len: usize,
    padl: usize,
    phases: (&'a [AxisPhase], &'a [AxisPhase]),
}

/// One `dx` row of one channel block (every column phase) into a pixel-major buffer. Not
/// generic over the element type: the register tiles are compiled once, here.
struct Row<'a> {
    geo: &'a Geo<'a>,
    /// The image's `dy`, `[oy][col][o]`.
    dyt: &'a [f32],
    /// The channel block's `[tap][o][c]` filter.
    wt: &'a [f32],
    grp: usize,
    /// The row's phase and index in it.
    yq: (&'a AxisPhase, usize),
    /// `[x][c]`, `bw` channels per pixel.
    row: &'a mut [f32],
    bw: usize,
    /// Scratch: (tap's filter offset, `dy` offset of phase pixel 0).
    taps: &'a mut Vec<(usize, usize)>,
}

impl Row<'_> {
    #[inline(never)]
    fn run(self, level: Level) {
        match level {
            Level::Best => pulp::Arch::new().dispatch(self),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => {
                if let Some(simd) = pulp::x86::V3::try_new() {
                    <pulp::x86::V3 as Simd>::vectorize(simd, self)
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            Level::Avx2 => {}
        }
    }
}

impl pulp::WithSimd for Row<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Row {
            geo,
            dyt,
            wt,
            grp,
            yq: (yp, qy),
            row,
            bw,
            taps,
        } = self;
        let Geo {
            g,
            len,
            padl,
            phases: (_, wph),
        } = *geo;
        let lanes = S::F32_LANES;
        let nv = bw / lanes;
        let (ho, co, cog, kw) = (g.h.output, g.co, g.co / g.groups, g.w.kernel);
        for xp in wph {
            taps.clear();
            for &(ky, offy) in &yp.taps {
                let oy = qy as isize + offy;
                if oy < 0 || oy >= ho as isize {
                    continue;
                }
                for &(kx, offx) in &xp.taps {
                    let col = (padl as isize + offx) as usize;
                    taps.push((
                        (ky * kw + kx) * cog * bw,
                        (oy as usize * len + col) * co + grp * cog,
                    ));
                }
            }
            let mut q0 = 0;
            while q0 < xp.n {
                let nr = match xp.n - q0 {
                    n if n >= R => R,
                    n if n >= 4 => 4,
                    n if n >= 2 => 2,
                    _ => 1,
                };
                let t = TileArgs {
                    dy: dyt,
                    ldy: co,
                    wt,
                    taps,
                    cog,
                    q0,
                    out: (&mut *row, bw, xp.ph, g.w.stride),
                };
                tile_dispatch(simd, nr, nv, t);
                q0 += nr;
            }
        }
    }
}

/// A register tile's operands: phase pixels `q0..q0 + nr`; per tap, (offset of the tap's
/// `[o][c]` block in `wt`, `dy` offset of pixel `q = 0`; pixels `ldy` apart, `cog` output
/// channels each); `out` = (pixel-major row buffer, its channels per pixel, the phase's
/// first column, the column stride).
struct TileArgs<'a> {
    dy: &'a [f32],
    ldy: usize,
    wt: &'a [f32],
    taps: &'a [(usize, usize)],
    cog: usize,
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
    go!(6, 4; 6, 3; 6, 2; 6, 1; 4, 4; 4, 3; 4, 2; 4, 1; 2, 4; 2, 3; 2, 2; 2, 1; 1, 4; 1, 3; 1, 2; 1, 1)
}

/// `out[(q0 + r) s + ph][v] = sum over taps and o of dy[tap.1 + (q0 + r) ldy + o] *
/// wt[tap.0 + o NV lanes][v]`.
#[inline(always)]
fn tile<S: Simd, const NR: usize, const NV: usize>(simd: S, t: TileArgs) {
    let TileArgs {
        dy,
        ldy,
        wt,
        taps,
        cog,
        q0,
        out: (row, bw, ph, sx),
    } = t;
    let lanes = S::F32_LANES;
    // Arrays filled by plain loops: `array::from_fn` may build them on the stack and copy
    // them.
    let mut acc = [[simd.splat_f32s(0.0); NV]; NR];
    for &(wofs, dyo) in taps {
        let mut a: [&[f32]; NR] = [&[]; NR];
        for (r, ar) in a.iter_mut().enumerate() {
            *ar = &dy[dyo + (q0 + r) * ldy..][..cog];
        }
        let (bv, _) = S::as_simd_f32s(&wt[wofs..][..cog * NV * lanes]);
        for (o, bo) in bv.chunks_exact(NV).enumerate() {
            for r in 0..NR {
                let av = simd.splat_f32s(a[r][o]);
                for v in 0..NV {
                    acc[r][v] = simd.mul_add_f32s(av, bo[v], acc[r][v]);
                }
            }
        }
    }
    for (r, accr) in acc.iter().enumerate() {
        let x = (q0 + r) * sx + ph;
        for (v, &val) in accr.iter().enumerate() {
            S::as_mut_simd_f32s(&mut row[x * bw + v * lanes..][..lanes]).0[0] = val;
        }
    }
}

//! CPU Winograd F(2,2) on the register tiles of `conv_direct.rs`, two uses:
//! `conv2d_backprop_input` for 3x3 convolutions of stride 2, dilation 1 (NCHW or NHWC), over the stride
//! phases (below), and the forward for kernels 3 wide of column stride 2, dilation 1
//! ([`forward_row_winograd`]: along x taps 0 and 2 share an input parity, 5 products per 2
//! outputs and kernel row instead of 6; along y the same where the kernel is also 3 high of
//! row stride 2, 25 products per 2x2 outputs instead of 36). The shared point transform is
//! `f22_points`.
//!
//! The input gradient:
//!
//! Per axis, a stride phase of `dx` (the inputs `2q + ph`) is reached by one tap, or by two
//! taps whose `dy` indices are consecutive: `dx[q] = dy[q+off] g0 + dy[q+off+1] g1`. Two
//! outputs of a two-tap phase take three products instead of four: with `e_r =
//! dy[2b+off+r]`, `U = (e0-e1, e1, e2-e1)`, `V = (g0, g0+g1, g1)` and `m_p = U_p V_p` summed
//! over the `dy` channels, `dx[2b] = m0+m1`, `dx[2b+1] = m1+m2`. Across the four phases of a
//! 3x3 kernel that is 25 products per 16 `dx` pixels instead of 36 (1.44x fewer). Every
//! coefficient is +-1: the transforms add and subtract only (exact on integer data, like the
//! direct kernel, which the tests rely on).
//!
//! Per block row of a phase: `dy` rows combined along y (`Y`), then along x (`U`, pixel-major:
//! a block's channels contiguous), one GEMM per transform point on the register tiles (`M`),
//! the points summed into the `dx` rows, which are stored as the direct kernels store theirs.
//! Deterministic: fixed sums everywhere, each `dx` element written once, whole images per
//! work item.

use super::conv_direct::{
    blocked_filter, input_applies, scratch_as, to_pixel_major, vectors, with_scratch, OutImage,
    Row, RowOperands, Segment, ROWS_PER_PASS,
};
use super::cpu_kernel::{axis_phases, AxisPhase};
use super::filter_direct::{lanes, Level};
use crate::cpu::simd::simd_fn;
use crate::dtype::{Accum, Element};
use crate::geometry::window::{ConvGeometry, WindowAxis};
use crate::tensor::Layout;
use rayon::prelude::*;

/// Most f32s of a thread's staged `dx` band (256 KB: it stays in L2 while it is filled).
const STAGE_FLOATS: usize = 1 << 16;

/// One stride phase of one axis: outputs `2q + ph` for `q < n`; output `q`'s first tap reads
/// operand `q + off`; `taps`: the kernel indices in operand order (one or two).
struct PhaseAxis {
    ph: usize,
    n: usize,
    off: isize,
    taps: Vec<usize>,
}

impl PhaseAxis {
    fn new(p: &AxisPhase) -> Option<Self> {
        let mut t = p.taps.clone();
        t.sort_by_key(|&(_, o)| o);
        let taps = match t.as_slice() {
            [_] => vec![t[0].0],
            [(k0, o0), (k1, o1)] if *o1 == o0 + 1 => vec![*k0, *k1],
            _ => return None,
        };
        Some(PhaseAxis {
            ph: p.ph,
            n: p.n,
            off: t[0].1,
            taps,
        })
    }

    fn two(&self) -> bool {
        self.taps.len() == 2
    }

    /// Outputs per block.
    fn block(&self) -> usize {
        self.taps.len()
    }

    /// Transform points per block (also the operand window's length).
    fn points(&self) -> usize {
        2 * self.taps.len() - 1
    }

    fn blocks(&self) -> usize {
        self.n.div_ceil(self.block())
    }

    /// Operand index of window element 0 of block `b`.
    fn window(&self, b: usize) -> isize {
        (b * self.block()) as isize + self.off
    }

    /// Input transform: the window elements `(r, sign)` summed into point `p`.
    fn input_terms(&self, p: usize) -> &'static [(usize, f32)] {
        match (self.two(), p) {
            (false, _) => &[(0, 1.0)],
            (true, 0) => &[(0, 1.0), (1, -1.0)],
            (true, 1) => &[(1, 1.0)],
            _ => &[(2, 1.0), (1, -1.0)],
        }
    }

    /// Filter transform: the taps (indices into `taps`) summed into point `p`.
    fn filter_terms(&self, p: usize) -> &'static [usize] {
        match (self.two(), p) {
            (true, 1) => &[0, 1],
            (true, 2) => &[1],
            _ => &[0],
        }
    }
}

fn phase_axes(a: &WindowAxis) -> Option<Vec<PhaseAxis>> {
    axis_phases(a).iter().map(PhaseAxis::new).collect()
}

fn axis_fits(a: &WindowAxis) -> bool {
    a.kernel == 3 && a.stride == 2 && a.dilation == 1 && a.input >= 2
}

/// Whether [`backprop_input_phase_winograd`] serves this call: the direct kernel's conditions
/// plus a 3x3 kernel of stride 2, dilation 1.
pub(super) fn applies<T: Element>(g: &ConvGeometry, level: Level) -> bool {
    input_applies::<T>(g, level)
        && axis_fits(&g.h)
        && axis_fits(&g.w)
        && phase_axes(&g.h).is_some()
        && phase_axes(&g.w).is_some()
}

/// Up to four signed terms of a transform (no allocation in the inner loops).
#[derive(Clone, Copy)]
struct Terms<'a> {
    t: [(&'a [f32], f32); 4],
    n: usize,
}

impl<'a> Terms<'a> {
    fn new() -> Self {
        Terms {
            t: [(&[], 0.0); 4],
            n: 0,
        }
    }

    fn push(&mut self, src: &'a [f32], sign: f32) {
        self.t[self.n] = (src, sign);
        self.n += 1;
    }

    /// `dst = sum of sign * src`, in order.
    fn into(self, dst: &mut [f32]) {
        combine(dst, &self.t[..self.n]);
    }
}

simd_fn! {
    /// `dst = sum of sign * src` over `terms`, in order (`dst` zero for no terms).
    fn combine(dst: &mut [f32], terms: &[(&[f32], f32)]) {
        let Some(((first, s0), rest)) = terms.split_first() else {
            dst.fill(0.0);
            return;
        };
        let n = dst.len();
        for (d, &v) in dst.iter_mut().zip(&first[..n]) {
            *d = v * s0;
        }
        for (src, s) in rest {
            for (d, &v) in dst.iter_mut().zip(&src[..n]) {
                *d += v * s;
            }
        }
    }
}

simd_fn! {
    /// F(2,2)'s computed points of one row, block by block: `u0[j] = e0 - e1`, `u2[j] = e2 - e1`
    /// (`k` channels each), window element `r` of block `j` being column `c0 + bstep j + estep r`
    /// of `src` (`cs` channels per column, the `k` used from `choff`). Point 1 is `e1` itself.
    fn f22_points(
        src: &[f32],
        (cs, choff, k): (usize, usize, usize),
        (c0, bstep, estep): (usize, usize, usize),
        (u0, u2): (&mut [f32], &mut [f32]),
    ) {
        let col = |c: usize| &src[c * cs + choff..][..k];
        for (j, (d0, d2)) in u0
            .chunks_exact_mut(k)
            .zip(u2.chunks_exact_mut(k))
            .enumerate()
        {
            let c = c0 + bstep * j;
            let (e0, e1, e2) = (col(c), col(c + estep), col(c + 2 * estep));
            for (((d0, d2), &v0), (&v1, &v2)) in d0
                .iter_mut()
                .zip(d2.iter_mut())
                .zip(e0)
                .zip(e1.iter().zip(e2))
            {
                *d0 = v0 - v1;
                *d2 = v2 - v1;
            }
        }
    }
}

/// The x-transform of a block row for a two-tap x phase: points 0 and 2 of each `Y[a]`
/// (`y`: `[a][column][k]`, `len` columns) into `u[((a * 2 + b / 2) * nbx + j) * k..][..k]`
/// (block `j`'s window starts at column `c0 + 2 j`); point 1 is column `c0 + 2 j + 1` itself.
fn x_transform(y: &[f32], (len, nbx, c0, k): (usize, usize, usize, usize), u: &mut [f32]) {
    for (a, ya) in y.chunks_exact(len * k).enumerate() {
        let (u0, u2) = u[a * 2 * nbx * k..][..2 * nbx * k].split_at_mut(nbx * k);
        f22_points(ya, (k, 0, k), (c0, 2, 1), (u0, u2));
    }
}

/// `out` as f32 where it is f32: the output transforms write it directly.
fn f32_view<T: Element>(out: &mut [T]) -> Option<&mut [f32]> {
    T::as_acc_slice_mut(out).and_then(T::Acc::as_f32_mut)
}

simd_fn! {
    /// The output transform of a block row: each `dx` pixel of the row's first `nu` rows (`rows`:
    /// row `u`'s pixel `x` at `u * rs + x * ps`, `bw` channels) as the sum of its points' GEMM
    /// results `m` (`[(a, b)][j][c]`), in point order; `nx` phase outputs along x, at
    /// `ph + stride * q`.
    fn output_transform(
        m: &[f32],
        (two_y, two_x): (bool, bool),
        (nbx, nx, bw): (usize, usize, usize),
        (ph, stride): (usize, usize),
        (nu, rs, ps): (usize, usize, usize),
        rows: &mut [f32],
    ) {
        let terms = |two: bool, u: usize| -> &'static [usize] {
            match (two, u) {
                (false, _) => &[0],
                (true, 0) => &[0, 1],
                _ => &[1, 2],
            }
        };
        let (px, bx, by) = (
            1 + 2 * two_x as usize,
            1 + two_x as usize,
            1 + two_y as usize,
        );
        let mv = |a: usize, b: usize, j: usize| &m[((a * px + b) * nbx + j) * bw..][..bw];
        for u in 0..by.min(nu) {
            let ay = terms(two_y, u);
            for v in 0..bx {
                let bs = terms(two_x, v);
                for j in 0..nbx {
                    let qx = j * bx + v;
                    if qx >= nx {
                        continue;
                    }
                    let d = &mut rows[u * rs + (ph + stride * qx) * ps..][..bw];
                    match (ay, bs) {
                        ([a], [b]) => d.copy_from_slice(mv(*a, *b, j)),
                        ([a], [b0, b1]) => {
                            for ((d, &s0), &s1) in d.iter_mut().zip(mv(*a, *b0, j)).zip(mv(*a, *b1, j))
                            {
                                *d = s0 + s1;
                            }
                        }
                        ([a0, a1], [b]) => {
                            for ((d, &s0), &s1) in d.iter_mut().zip(mv(*a0, *b, j)).zip(mv(*a1, *b, j))
                            {
                                *d = s0 + s1;
                            }
                        }
                        _ => {
                            let (a0, a1, b0, b1) = (ay[0], ay[1], bs[0], bs[1]);
                            for ((d, (&s00, &s01)), (&s10, &s11)) in d
                                .iter_mut()
                                .zip(mv(a0, b0, j).iter().zip(mv(a0, b1, j)))
                                .zip(mv(a1, b0, j).iter().zip(mv(a1, b1, j)))
                            {
                                *d = ((s00 + s01) + s10) + s11;
                            }
                        }
                    }
                }
            }
        }
    }
}

/// `dx` from `dy` (both in `layout`) and an HWIO filter `w`; `false` (and `dx` untouched) where
/// [`applies`] does not hold.
pub(super) fn backprop_input_phase_winograd<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    dy: &[T],
    w: &[T],
    dx: &mut [T],
    level: Level,
) -> bool {
    let (Some(lanes), true, Some(ya), Some(xa)) = (
        lanes(level),
        applies::<T>(g, level),
        phase_axes(&g.h),
        phase_axes(&g.w),
    ) else {
        return false;
    };
    let nb = vectors(lanes) * lanes;
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (cig, cog, kw) = (g.ci / g.groups, g.co / g.groups, g.w.kernel);
    let ntaps = g.h.kernel * kw;
    // Transform points of each phase pair (y phase, x phase), numbered in that order.
    let mut first_point = vec![0; ya.len() * xa.len()];
    let mut npts = 0;
    for (iy, yp) in ya.iter().enumerate() {
        for (ix, xp) in xa.iter().enumerate() {
            first_point[iy * xa.len() + ix] = npts;
            npts += yp.points() * xp.points();
        }
    }
    // The transformed filter per (group, block of `nb` channels): `[point][o][c]`.
    with_scratch(|[wtv, vtv]| {
        let wt = blocked_filter(g, w, (nb, false), wtv);
        // Point `pt` of phase pair `pair`, per (group, block): one task each, like the blocking.
        let mut points = Vec::new();
        for yp in &ya {
            for xp in &xa {
                for a in 0..yp.points() {
                    for b in 0..xp.points() {
                        points.push((yp, xp, a, b));
                    }
                }
            }
        }
        // Every element is written below.
        vtv.resize(g.groups * cig * npts * cog, 0.0);
        let vt = &mut vtv[..];
        let mut tasks = Vec::new();
        let mut rest = &mut vt[..];
        for grp in 0..g.groups {
            for cb in (0..cig).step_by(nb) {
                let bw = nb.min(cig - cb);
                for &pt in &points {
                    let (chunk, tail) = rest.split_at_mut(cog * bw);
                    tasks.push(((grp * cig + cb) * ntaps * cog, bw, pt, chunk));
                    rest = tail;
                }
            }
        }
        tasks
            .into_par_iter()
            .for_each(|(src_at, bw, (yp, xp, a, b), dst)| {
                let src = &wt[src_at..][..bw * ntaps * cog];
                let mut terms = Terms::new();
                for &ty in yp.filter_terms(a) {
                    for &tx in xp.filter_terms(b) {
                        let t = yp.taps[ty] * kw + xp.taps[tx];
                        terms.push(&src[t * cog * bw..][..cog * bw], 1.0);
                    }
                }
                terms.into(dst);
            });
        // dy columns padded so that every window of every block reads inside the row.
        let lo = xa.iter().map(|p| p.window(0)).min().unwrap_or(0);
        let hi_col = xa
            .iter()
            .map(|p| p.window(p.blocks() - 1) + p.points() as isize - 1)
            .max()
            .unwrap_or(0);
        let padl = (-lo).max(0) as usize;
        let len = padl + wo.max((hi_col + 1).max(0) as usize);
        let (dyimg, dximg) = (g.co * ho * wo, g.ci * hi * wi);
        // U of each two-tap x phase (the others read Y in place): its two x-transformed points
        // of each Y point, in slot `u_slot[ix]` of the work buffer.
        let most_blocks = xa.iter().map(|p| p.blocks()).max().unwrap_or(0);
        let mut n_two = 0;
        let u_slot: Vec<usize> = xa
            .iter()
            .map(|p| {
                n_two += p.two() as usize;
                n_two - p.two() as usize
            })
            .collect();
        // dx rows per band: the block rows of every y phase in a band are computed, then the
        // band is stored (a block row of a phase spans `stride * block` rows, so a band of
        // whole block rows of every phase is a multiple of `band_unit`). Staged bands of about
        // ROWS_PER_PASS rows, at most STAGE_FLOATS a thread.
        let band_unit = g.h.stride * ya.iter().map(PhaseAxis::block).max().unwrap_or(1);
        let staged_band = band_unit
            * ROWS_PER_PASS
                .div_ceil(band_unit)
                .min(STAGE_FLOATS / (band_unit * wi * cig).max(1))
                .max(1);
        dx.par_chunks_mut(dximg)
            .zip(dy.par_chunks(dyimg))
            .for_each_init(
                || (Vec::new(), Vec::new()),
                |(taps, segs), (dxi, dyi)| {
                    with_scratch(|[dytv, rowsv, work, mbuf]| {
                        // NHWC f32 `dy` of one group is read in place (the y-transform pads
                        // its rows); else copied into padded pixel-major rows first (for NHWC
                        // W5 that copy was 4.5% of a one-thread call).
                        let in_place = (layout == Layout::Nhwc && g.groups == 1)
                            .then(|| T::as_acc_slice(dyi).and_then(T::Acc::as_f32))
                            .flatten();
                        let copy_len = if in_place.is_some() {
                            0
                        } else {
                            ho * len * g.co
                        };
                        let Some(dyt) = scratch_as::<T::Acc>(dytv, copy_len) else {
                            return;
                        };
                        if in_place.is_none() {
                            to_pixel_major::<T>(layout, dyi, (g.co, ho, wo), (len, padl), dyt);
                        }
                        let Some(dyt) = T::Acc::as_f32(dyt) else {
                            return;
                        };
                        // The dy rows: (rows, their columns, the first one's column in Y).
                        let (dyt, cols, col0) = match in_place {
                            Some(d) => (d, wo, padl),
                            None => (dyt, len, 0),
                        };
                        let img = OutImage {
                            layout,
                            h: hi,
                            w: wi,
                            c: g.ci,
                        };
                        let direct = layout == Layout::Nhwc && f32_view::<T>(dxi).is_some();
                        let band = if direct {
                            hi.next_multiple_of(band_unit)
                        } else {
                            staged_band
                        };
                        let stage_len = if direct { 0 } else { band * wi * cig };
                        let Some(stage) = scratch_as::<T::Acc>(rowsv, stage_len) else {
                            return;
                        };
                        let mut rowsel: [Vec<f32>; 3] = Default::default();
                        for grp in 0..g.groups {
                            for y_band in (0..hi).step_by(band) {
                                for (iy, yp) in ya.iter().enumerate() {
                                    let ylen = yp.points() * len * cog;
                                    let ulen = 2 * yp.points() * most_blocks * cog;
                                    // Block row i covers dx rows [per i, per (i + 1)): a band
                                    // holds whole block rows.
                                    let per = g.h.stride * yp.block();
                                    for i in y_band / per..((y_band + band) / per).min(yp.blocks())
                                    {
                                        // The block row's dy rows (the group's channels,
                                        // zeros outside dy), then Y = their y-transform.
                                        let mut have = [None; 3];
                                        for (r, h) in have.iter_mut().enumerate().take(yp.points())
                                        {
                                            let row = yp.window(i) + r as isize;
                                            if row < 0 || row >= ho as isize {
                                                continue;
                                            }
                                            let full =
                                                &dyt[row as usize * cols * g.co..][..cols * g.co];
                                            if g.groups > 1 {
                                                rowsel[r].clear();
                                                for px in full.chunks_exact(g.co) {
                                                    rowsel[r]
                                                        .extend_from_slice(&px[grp * cog..][..cog]);
                                                }
                                            }
                                            *h = Some(full);
                                        }
                                        // work = [Y: points x columns x channels | U of each
                                        // two-tap x phase]. Y and U serve every channel block
                                        // below: computed once.
                                        work.resize(ylen + n_two * ulen, 0.0);
                                        for (a, ya_buf) in
                                            work[..ylen].chunks_exact_mut(len * cog).enumerate()
                                        {
                                            let mut terms = Terms::new();
                                            for &(r, s) in yp.input_terms(a) {
                                                match have[r] {
                                                    Some(_) if g.groups > 1 => {
                                                        terms.push(&rowsel[r], s)
                                                    }
                                                    Some(full) => terms.push(full, s),
                                                    None => {}
                                                }
                                            }
                                            let (pad_l, rest) = ya_buf.split_at_mut(col0 * cog);
                                            let (mid, pad_r) = rest.split_at_mut(cols * cog);
                                            pad_l.fill(0.0);
                                            terms.into(mid);
                                            pad_r.fill(0.0);
                                        }
                                        // U: the x-transform of Y, for the points that are not
                                        // plain columns of Y.
                                        for (ix, xp) in xa.iter().enumerate() {
                                            if xp.two() {
                                                let c0 = (padl as isize + xp.window(0)) as usize;
                                                let (ybuf, ubuf) = work.split_at_mut(ylen);
                                                x_transform(
                                                    ybuf,
                                                    (len, xp.blocks(), c0, cog),
                                                    &mut ubuf[u_slot[ix] * ulen..][..ulen],
                                                );
                                            }
                                        }
                                        let ub = yp.block();
                                        // The block row's dx rows: phase rows i * ub.., of which
                                        // `nu` lie inside dx, the first at dx row y0.
                                        let nu = ub.min(yp.n - i * ub);
                                        let y0 = yp.ph + g.h.stride * i * ub;
                                        for cb in (0..cig).step_by(nb) {
                                            let bw = nb.min(cig - cb);
                                            let vtb = &vt[(grp * cig + cb) * npts * cog..]
                                                [..bw * npts * cog];
                                            for (ix, xp) in xa.iter().enumerate() {
                                                let (px_, nbx) = (xp.points(), xp.blocks());
                                                let npt = yp.points() * px_;
                                                let c0 = (padl as isize + xp.window(0)) as usize;
                                                // M[(a, b)][j][c]: one GEMM per point on the
                                                // register tiles, reading Y's columns in place
                                                // where the point is one.
                                                taps.clear();
                                                segs.clear();
                                                let p0 = first_point[iy * xa.len() + ix];
                                                for p in 0..npt {
                                                    let (a, b) = (p / px_, p % px_);
                                                    let (at, lda) = match (xp.two(), b) {
                                                        (false, _) => ((a * len + c0) * cog, cog),
                                                        (true, 1) => {
                                                            ((a * len + c0 + 1) * cog, 2 * cog)
                                                        }
                                                        _ => (
                                                            ylen + u_slot[ix] * ulen
                                                                + (a * 2 + b / 2) * nbx * cog,
                                                            cog,
                                                        ),
                                                    };
                                                    taps.push(((p0 + p) * cog * bw, at));
                                                    segs.push(Segment {
                                                        x0: p * nbx,
                                                        sx: 1,
                                                        n: nbx,
                                                        lda,
                                                        taps: p..p + 1,
                                                    });
                                                }
                                                mbuf.resize(npt * nbx * bw, 0.0);
                                                Row {
                                                    ops: RowOperands {
                                                        a: work,
                                                        wt: vtb,
                                                        k: cog,
                                                        segs,
                                                        taps,
                                                    },
                                                    row: &mut mbuf[..],
                                                    bw,
                                                }
                                                .run(level);
                                                // The output transform: into dx itself where it
                                                // is f32 NHWC (a staged row's copy was a tenth of
                                                // W5's time), else into the staged rows.
                                                let phase = (yp.two(), xp.two());
                                                let geom = (nbx, xp.n, bw);
                                                let xs = (xp.ph, g.w.stride);
                                                match direct.then(|| f32_view::<T>(dxi)).flatten() {
                                                    Some(d) => output_transform(
                                                        mbuf,
                                                        phase,
                                                        geom,
                                                        xs,
                                                        (nu, g.h.stride * wi * g.ci, g.ci),
                                                        &mut d[img.at(grp * cig + cb, y0)..],
                                                    ),
                                                    None => {
                                                        // This block's band rows, `[row][x][bw]`.
                                                        let Some(rows) = T::Acc::as_f32_mut(
                                                            &mut stage[cb * band * wi..]
                                                                [..band * wi * bw],
                                                        ) else {
                                                            return;
                                                        };
                                                        output_transform(
                                                            mbuf,
                                                            phase,
                                                            geom,
                                                            xs,
                                                            (nu, g.h.stride * wi * bw, bw),
                                                            &mut rows[(y0 - y_band) * wi * bw..],
                                                        )
                                                    }
                                                }
                                            }
                                        }
                                    }
                                }
                                if direct {
                                    continue;
                                }
                                // The band's rows, every phase's written above: runs of rows per
                                // channel plane in NCHW (one row at a time was 13% of a
                                // one-thread NCHW W5).
                                let nrows = band.min(hi - y_band);
                                for cb in (0..cig).step_by(nb) {
                                    let bw = nb.min(cig - cb);
                                    img.store::<T>(
                                        &stage[cb * band * wi..][..nrows * wi * bw],
                                        (nrows, bw),
                                        &mut dxi[img.at(grp * cig + cb, y_band)..],
                                    );
                                }
                            }
                        }
                    })
                },
            );
    });
    true
}

/// The forward's x axis for [`forward_row_winograd`]: output `q`, tap `k` reads input
/// `2q + k - pad`. Taps 0 and 2 read the same parity on consecutive elements (F(2,2)), tap 1
/// the other parity (direct); each field is the input index output 0's tap reads.
struct ForwardRow {
    /// Input index of output 0's tap 0 (tap 2 reads two further).
    pair: isize,
    /// Input index of output 0's tap 1.
    single: isize,
}

impl ForwardRow {
    /// The taps of the F(2,2) parity and the direct one.
    const PAIR_TAPS: [usize; 2] = [0, 2];
    const SINGLE_TAP: usize = 1;

    fn new(a: &WindowAxis) -> Option<Self> {
        if a.kernel != 3 || a.stride != 2 || a.dilation != 1 || a.output == 0 {
            return None;
        }
        let ix = |k: usize| k as isize - a.pad_before as isize;
        Some(ForwardRow {
            pair: ix(Self::PAIR_TAPS[0]),
            single: ix(Self::SINGLE_TAP),
        })
    }
}

/// Whether [`forward_row_winograd`] serves this call: the direct kernel's conditions plus a
/// kernel 3 wide of column stride 2, dilation 1 (the rows: any).
pub(super) fn forward_row_applies<T: Element>(g: &ConvGeometry, level: Level) -> bool {
    super::conv_direct::forward_applies::<T>(g, level) && ForwardRow::new(&g.w).is_some()
}

/// Pixel-major points of the F(2,2) x-transform for one input row: `w[u_at + (b / 2 * nbx +
/// j) * k..][..k]` (points 0 and 2 of block `j`) from the row at `w[row..]` (`cs` channels per
/// column, the `k` used from `choff`): window element `r` of block `j` is column `c0 + 4 j + 2 r`.
fn row_x_transform(
    w: &mut [f32],
    (row, cs, choff): (usize, usize, usize),
    (nbx, k, c0): (usize, usize, usize),
    u_at: usize,
) {
    let (src, u) = w.split_at_mut(u_at);
    let (u0, u2) = u[..2 * nbx * k].split_at_mut(nbx * k);
    f22_points(&src[row..], (cs, choff, k), (c0, 4, 2), (u0, u2));
}

/// The y axis of [`forward_row_winograd`]: each output row on its own (any kernel height, row
/// stride and dilation: one GEMM tap per kernel row, summed in the registers), or, for kernels
/// 3 high of row stride 2, dilation 1, F(2,2) over pairs of output rows as along x (5 row
/// points per 2 output rows instead of 6; with the x axis 25 products per 4 outputs instead of
/// 36).
enum ForwardY {
    Direct,
    F22(ForwardRow),
}

/// Most operand rows a block of [`ForwardY`] uses (F(2,2): its 5 row points).
const MAX_SLOTS: usize = 5;

impl ForwardY {
    fn new(a: &WindowAxis) -> Self {
        ForwardRow::new(a).map_or(ForwardY::Direct, ForwardY::F22)
    }

    /// Output rows per block.
    fn block(&self) -> usize {
        match self {
            ForwardY::Direct => 1,
            ForwardY::F22(_) => 2,
        }
    }

    /// The kernel rows summed into filter row `f` (of [`Self::filter_rows`]): `(rows, n)`.
    fn filter_row(&self, f: usize) -> ([usize; 2], usize) {
        match (self, f) {
            (ForwardY::Direct, _) => ([f, 0], 1),
            (ForwardY::F22(_), 1) => ([0, 2], 2),
            (ForwardY::F22(_), _) => ([[0, 0, 2, 1][f], 0], 1),
        }
    }

    fn filter_rows(&self, kh: usize) -> usize {
        match self {
            ForwardY::Direct => kh,
            ForwardY::F22(_) => 4,
        }
    }

    /// Operand row `slot` of block `b`: the input rows `(row, sign)` it sums (rows outside the
    /// input are zero).
    fn slot_terms(&self, g: &WindowAxis, b: usize, slot: usize) -> ([(isize, f32); 2], usize) {
        let none = [(0, 0.0); 2];
        match self {
            ForwardY::Direct => match g.input_index(b, slot) {
                Some(r) => ([(r as isize, 1.0), (0, 0.0)], 1),
                None => (none, 0),
            },
            ForwardY::F22(fr) => {
                let (a, s) = (4 * b as isize + fr.pair, 4 * b as isize + fr.single);
                match slot {
                    0 => ([(a, 1.0), (a + 2, -1.0)], 2),
                    1 => ([(a + 2, 1.0), (0, 0.0)], 1),
                    2 => ([(a + 4, 1.0), (a + 2, -1.0)], 2),
                    3 => ([(s, 1.0), (0, 0.0)], 1),
                    _ => ([(s + 2, 1.0), (0, 0.0)], 1),
                }
            }
        }
    }

    fn slots(&self, kh: usize) -> usize {
        match self {
            ForwardY::Direct => kh,
            ForwardY::F22(_) => MAX_SLOTS,
        }
    }

    /// GEMM groups per block: each a sum (in the registers) of (filter row, operand slot) taps.
    /// F(2,2)'s points 0 and 2 each take one of the direct rows (slots 3 and 4, kernel row 1)
    /// as a second tap: each sums into one output row only, so the pair needs one GEMM result
    /// where two were stored and read back.
    fn groups(&self) -> usize {
        match self {
            ForwardY::Direct => 1,
            ForwardY::F22(_) => 3,
        }
    }

    /// The taps of group `gi`: (filter row, operand slot).
    fn group_taps(&self, kh: usize, gi: usize) -> impl Iterator<Item = (usize, usize)> {
        let taps: &[(usize, usize)] = match (self, gi) {
            (ForwardY::Direct, _) => &[],
            (ForwardY::F22(_), 0) => &[(0, 0), (3, 3)],
            (ForwardY::F22(_), 1) => &[(1, 1)],
            (ForwardY::F22(_), _) => &[(2, 2), (3, 4)],
        };
        let direct = match self {
            ForwardY::Direct => kh,
            ForwardY::F22(_) => 0,
        };
        taps.iter().copied().chain((0..direct).map(|r| (r, r)))
    }

    /// The groups summed into output row `u` of a block, in order.
    fn output_groups(&self, u: usize) -> &'static [usize] {
        match (self, u) {
            (ForwardY::Direct, _) => &[0],
            (ForwardY::F22(_), 0) => &[0, 1],
            (ForwardY::F22(_), _) => &[1, 2],
        }
    }
}

simd_fn! {
    /// Group `gi`'s part of a block's output rows, from its GEMM results `m` (`[p][j][c]`, five x
    /// points, `nbx` blocks): along x, output `2j + u` is `(m[u] + m[u + 1]) + m[3 + u]` (the
    /// F(2,2) parity, then the one-tap parity); into each output row `r < nrows` (of `rows`: row
    /// `r`'s pixel `x` at `r * rs + x * ps`, `bw` channels, `wo` pixels a row) whose
    /// [`ForwardY::output_groups`] name `gi`: stored if `gi` is the row's first group, else added
    /// (the groups come in ascending order, so each row sums its groups in a fixed order).
    fn row_output_transform(
        m: &[f32],
        (nbx, bw, wo): (usize, usize, usize),
        (fy, gi, nrows): (&ForwardY, usize, usize),
        (rs, ps): (usize, usize),
        rows: &mut [f32],
    ) {
        let mv = |p: usize, j: usize| &m[(p * nbx + j) * bw..][..bw];
        for r in 0..nrows {
            let Some(n) = fy.output_groups(r).iter().position(|&g| g == gi) else {
                continue;
            };
            let row = &mut rows[r * rs..];
            for j in 0..nbx {
                for u in 0..2 {
                    let x = 2 * j + u;
                    if x >= wo {
                        continue;
                    }
                    let d = &mut row[x * ps..][..bw];
                    let terms = d
                        .iter_mut()
                        .zip(mv(u, j))
                        .zip(mv(u + 1, j))
                        .zip(mv(3 + u, j));
                    if n == 0 {
                        for (((d, &a), &b), &c) in terms {
                            *d = (a + b) + c;
                        }
                    } else {
                        for (((d, &a), &b), &c) in terms {
                            *d += (a + b) + c;
                        }
                    }
                }
            }
        }
    }
}

/// `y` from `x` (both in `layout`) and an HWIO filter `w` for kernels 3 wide of column stride 2:
/// along x, Winograd F(2,2) on the parity with two taps (3 products per 2 outputs instead of
/// 4) and the other parity direct, so 5 products per 2 outputs and kernel row instead of 6;
/// along y ([`ForwardY`]) the same for kernels 3 high of row stride 2 (25 products per 2x2
/// outputs instead of 36), else the direct sum over the kernel rows (the GEMM's taps). `false`
/// (and `y` untouched) where [`forward_row_applies`] does not hold.
pub(super) fn forward_row_winograd<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    x: &[T],
    w: &[T],
    y: &mut [T],
    level: Level,
) -> bool {
    let (Some(lanes), true, Some(fr)) = (
        lanes(level),
        forward_row_applies::<T>(g, level),
        ForwardRow::new(&g.w),
    ) else {
        return false;
    };
    let fy = ForwardY::new(&g.h);
    let nb = vectors(lanes) * lanes;
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (cig, cog, kh, kw) = (g.ci / g.groups, g.co / g.groups, g.h.kernel, g.w.kernel);
    let ntaps = kh * kw;
    let nbx = wo.div_ceil(2);
    let nfr = fy.filter_rows(kh);
    let (nslots, ngroups, ub) = (fy.slots(kh), fy.groups(), fy.block());
    // Rows combined per block (F(2,2)'s differences; the direct rows are read in place).
    let ncomb = match fy {
        ForwardY::Direct => 0,
        ForwardY::F22(_) => nslots,
    };
    // Five points per block: F(2,2)'s three, then the one-tap parity's two outputs.
    const POINTS: usize = 5;
    // x columns padded: column `padl + ix`, wide enough for the last block's windows.
    let padl = g.w.pad_before;
    let last = 4 * (nbx as isize - 1);
    let reach = (last + fr.pair + 4).max(last + 2 + fr.single) + 1;
    let len = (padl as isize + reach).max((padl + wi) as isize) as usize;
    let (ca0, cb0) = (
        (padl as isize + fr.pair) as usize,
        (padl as isize + fr.single) as usize,
    );
    let rowlen = len * g.ci;
    let xt_len = hi * rowlen;
    // Per operand slot, the U points of its row: 2 points x nbx blocks x cig.
    let ulen = 2 * nbx * cig;
    // work = [x pixel-major (padded rows) | the block's combined rows | U of each slot]
    let comb_at = xt_len;
    let u_at = comb_at + ncomb * rowlen;
    with_scratch(|[wtv, vtv]| {
        let wt = blocked_filter(g, w, (nb, true), wtv);
        // The transformed filter per (group, block of `nb` output channels): `[fr][p][c][o]`.
        vtv.resize(g.groups * cog * nfr * POINTS * cig, 0.0);
        let mut tasks = Vec::new();
        let mut rest = &mut vtv[..];
        for grp in 0..g.groups {
            for ob in (0..cog).step_by(nb) {
                let bw = nb.min(cog - ob);
                for f in 0..nfr {
                    for p in 0..POINTS {
                        let (chunk, tail) = rest.split_at_mut(cig * bw);
                        tasks.push(((grp * cog + ob) * ntaps * cig, bw, f, p, chunk));
                        rest = tail;
                    }
                }
            }
        }
        tasks.into_par_iter().for_each(|(at, bw, f, p, dst)| {
            let blk = &wt[at..][..bw * ntaps * cig];
            let tap = |ky: usize, kx: usize| &blk[(ky * kw + kx) * cig * bw..][..cig * bw];
            let [k0, k1] = ForwardRow::PAIR_TAPS;
            let kxs: &[usize] = match p {
                0 => &[k0],
                1 => &[k0, k1],
                2 => &[k1],
                _ => &[ForwardRow::SINGLE_TAP],
            };
            let mut terms = Terms::new();
            let (kys, nky) = fy.filter_row(f);
            for &ky in &kys[..nky] {
                for &kx in kxs {
                    terms.push(tap(ky, kx), 1.0);
                }
            }
            terms.into(dst);
        });
        let vt = &vtv[..];
        let (ximg, yimg) = (g.ci * hi * wi, g.co * ho * wo);
        y.par_chunks_mut(yimg)
            .zip(x.par_chunks(ximg))
            .for_each_init(
                || (Vec::new(), Vec::new()),
                |(taps, segs), (yi, xi)| {
                    with_scratch(|[workv, rowv, mv]| {
                        let (Some(work), Some(rowbuf)) = (
                            scratch_as::<T::Acc>(workv, u_at + nslots * ulen),
                            scratch_as::<T::Acc>(rowv, ub * wo * cog),
                        ) else {
                            return;
                        };
                        to_pixel_major::<T>(
                            layout,
                            xi,
                            (g.ci, hi, wi),
                            (len, padl),
                            &mut work[..xt_len],
                        );
                        let img = OutImage {
                            layout,
                            h: ho,
                            w: wo,
                            c: g.co,
                        };
                        let Some(work) = T::Acc::as_f32_mut(work) else {
                            return;
                        };
                        for b in 0..ho.div_ceil(ub) {
                            // Each slot's row (all channels): an input row in place, or the
                            // slot's rows combined; `None` where every row lies outside.
                            let mut slot_row = [None; MAX_SLOTS];
                            for (slot, at) in slot_row.iter_mut().enumerate().take(nslots) {
                                let (terms, n) = fy.slot_terms(&g.h, b, slot);
                                let mut inside = [(0, 0.0); 2];
                                let mut m = 0;
                                for &(r, s) in &terms[..n] {
                                    if r >= 0 && (r as usize) < hi {
                                        inside[m] = (r as usize * rowlen, s);
                                        m += 1;
                                    }
                                }
                                *at = match inside[..m] {
                                    [] => None,
                                    [(r, 1.0)] => Some(r),
                                    _ => {
                                        let (src, dst) = work.split_at_mut(comb_at);
                                        let dst = &mut dst[slot * rowlen..][..rowlen];
                                        let mut t = Terms::new();
                                        for &(r, s) in &inside[..m] {
                                            t.push(&src[r..][..rowlen], s);
                                        }
                                        t.into(dst);
                                        Some(comb_at + slot * rowlen)
                                    }
                                };
                            }
                            for grp in 0..g.groups {
                                // U of the slots' rows (the group's channels).
                                for (slot, at) in slot_row.iter().enumerate().take(nslots) {
                                    if let Some(at) = at {
                                        row_x_transform(
                                            work,
                                            (*at, g.ci, grp * cig),
                                            (nbx, cig, ca0),
                                            u_at + slot * ulen,
                                        );
                                    }
                                }
                                let nrows = ub.min(ho - b * ub);
                                for ob in (0..cog).step_by(nb) {
                                    let bw = nb.min(cog - ob);
                                    let vtb = &vt[(grp * cog + ob) * nfr * POINTS * cig..]
                                        [..bw * nfr * POINTS * cig];
                                    // Group by group: its GEMM results (five x points, at
                                    // most 18 KB) are added to the rows while in L1.
                                    for gi in 0..ngroups {
                                        taps.clear();
                                        segs.clear();
                                        for p in 0..POINTS {
                                            let first = taps.len();
                                            for (f, slot) in fy.group_taps(kh, gi) {
                                                let Some(at) = slot_row[slot] else {
                                                    continue;
                                                };
                                                let row = at + grp * cig;
                                                let at = match p {
                                                    0 | 2 => u_at + slot * ulen + p / 2 * nbx * cig,
                                                    1 => row + (ca0 + 2) * g.ci,
                                                    _ => row + (cb0 + 2 * (p - 3)) * g.ci,
                                                };
                                                taps.push(((f * POINTS + p) * cig * bw, at));
                                            }
                                            let lda = if p == 0 || p == 2 { cig } else { 4 * g.ci };
                                            segs.push(Segment {
                                                x0: p * nbx,
                                                sx: 1,
                                                n: nbx,
                                                lda,
                                                taps: first..taps.len(),
                                            });
                                        }
                                        mv.resize(POINTS * nbx * bw, 0.0);
                                        Row {
                                            ops: RowOperands {
                                                a: work,
                                                wt: vtb,
                                                k: cig,
                                                segs,
                                                taps,
                                            },
                                            row: &mut mv[..],
                                            bw,
                                        }
                                        .run(level);
                                        // Into the staged rows, every channel of a pixel
                                        // side by side; y is written below a whole row at
                                        // a time. Written into y directly, 64 bytes a pixel
                                        // per channel block, each store a new cache line:
                                        // in one-thread perf of NHWC W5f that transform
                                        // was 17% of the time, stalled on the stores;
                                        // staged, it and the row stores were 15% (11% with
                                        // the merged groups of `ForwardY::groups`).
                                        if let Some(r) =
                                            T::Acc::as_f32_mut(&mut rowbuf[ob..nrows * wo * cog])
                                        {
                                            row_output_transform(
                                                mv,
                                                (nbx, bw, wo),
                                                (&fy, gi, nrows),
                                                (wo * cog, cog),
                                                r,
                                            );
                                        }
                                    }
                                }
                                img.store::<T>(
                                    &rowbuf[..nrows * wo * cog],
                                    (nrows, cog),
                                    &mut yi[img.at(grp * cog, b * ub)..],
                                );
                            }
                        }
                    })
                },
            );
    });
    true
}

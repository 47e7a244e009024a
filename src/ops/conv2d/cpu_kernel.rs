//! CPU conv kernels: per image and group, a cache-blocked GEMM over a tile of output rows
//! (`gemm` crate) plus im2col / col2im, or stride phases of `dy` bands; NCHW 3x3 stride 1 by
//! Winograd (F(4x4, 3x3) in `winograd4`, F(2x2, 3x3) here for small planes). Workspace per
//! thread is bounded by `TILE_ELEMS`.

use crate::cpu::gemm::{matmul, MatMut, MatRef};
use crate::dtype::{Accum, Element};
use crate::geometry::window::{ConvGeometry, WindowAxis};
use crate::ops::resize::cpu_kernel::{acc_view, store};
use crate::tensor::Layout;
use num_traits::Zero;
use rayon::prelude::*;

/// Elements of the column buffer per tile (4 MiB in f32).
const TILE_ELEMS: usize = 1 << 20;

/// Output rows per tile for a column buffer of `k` rows of `wo` columns.
fn tile_rows(k: usize, wo: usize, ho: usize) -> usize {
    (TILE_ELEMS / (k * wo).max(1)).clamp(1, ho.max(1))
}

struct Scratch<A> {
    input: Vec<A>,
    out: Vec<A>,
    col: Vec<A>,
}

fn scratch<A: Accum>() -> Scratch<A> {
    Scratch {
        input: Vec::new(),
        out: Vec::new(),
        col: Vec::new(),
    }
}

/// Runs `body(acc_in, acc_out, col)` for each image, with `acc_out` the image's output in the
/// accumulation type (the destination itself for f32/f64), zeroed, rounded into `dst` after.
fn per_image<T: Element>(
    src: &[T],
    src_len: usize,
    dst: &mut [T],
    dst_len: usize,
    body: impl Fn(&[T::Acc], &mut [T::Acc], &mut Vec<T::Acc>) + Sync,
) {
    if dst.is_empty() {
        return;
    }
    let zero = T::Acc::zero();
    if src_len == 0 {
        dst.fill(T::default());
        return;
    }
    dst.par_chunks_mut(dst_len)
        .zip(src.par_chunks(src_len))
        .for_each_init(scratch::<T::Acc>, |s, (d, x)| {
            let input = acc_view(x, &mut s.input);
            match T::as_acc_slice_mut(d) {
                Some(out) => {
                    out.fill(zero);
                    body(input, out, &mut s.col);
                }
                None => {
                    s.out.clear();
                    s.out.resize(dst_len, zero);
                    body(input, &mut s.out, &mut s.col);
                    store::<T>(&s.out, d);
                }
            }
        });
}

/// `dx` from `dy` and an HWIO filter.
pub(crate) fn backprop_input<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    dy: &[T],
    w: &[T],
    dx: &mut [T],
) {
    let level = super::filter_direct::Level::Best;
    if super::conv_direct::pairs_first::<T>(g.co / g.groups)
        && super::conv_direct::backprop_input_direct(g, layout, dy, w, dx, level)
    {
        return;
    }
    if winograd_applies(g) {
        return backprop_input_winograd(g, layout, dy, w, dx);
    }
    if super::phase_winograd::backprop_input_phase_winograd(g, layout, dy, w, dx, level)
        || super::conv_direct::backprop_input_direct(g, layout, dy, w, dx, level)
    {
        return;
    }
    match layout {
        Layout::Nchw => backprop_input_nchw(g, dy, w, dx),
        Layout::Nhwc => backprop_input_col2im(g, layout, dy, w, dx),
    }
}

/// Column-buffer (or dy band) elements per stride-phase tile (1 MiB in f32).
const PHASE_COL_ELEMS: usize = 1 << 18;

/// One residue class of an axis of the transposed convolution: the inputs `x = q*s + ph`
/// (`q < n`) receive exactly the taps `t` with `(ph + pad - t*d) % s == 0`, each from output
/// `o = q + off` (when `0 <= o < output`).
pub(super) struct AxisPhase {
    pub(super) ph: usize,
    pub(super) n: usize,
    /// `(tap, off)`.
    pub(super) taps: Vec<(usize, isize)>,
}

pub(super) fn axis_phases(a: &WindowAxis) -> Vec<AxisPhase> {
    let s = a.stride.max(1);
    (0..s.min(a.input))
        .map(|ph| {
            let taps = (0..a.kernel)
                .filter_map(|t| {
                    let v = (ph + a.pad_before) as isize - (t * a.dilation) as isize;
                    (v.rem_euclid(s as isize) == 0).then_some((t, v.div_euclid(s as isize)))
                })
                .collect();
            AxisPhase {
                ph,
                n: (a.input - ph).div_ceil(s),
                taps,
            }
        })
        .collect()
}

/// A 2-D phase: `k` = taps x group output channels (the GEMM depth), its packed filter
/// `[cig, k]` at `woff` in the packed buffer of each group.
struct Phase<'a> {
    y: &'a AxisPhase,
    x: &'a AxisPhase,
    k: usize,
    woff: usize,
}

impl Phase<'_> {
    /// Writes a GEMM result tile (`m` channels x `tr` phase rows, channel stride `np`, row
    /// stride `row`) into this phase's pixels of the `m` planes of `d`, rounding once.
    #[allow(clippy::too_many_arguments)]
    fn store_tile<T: Element>(
        &self,
        g: &ConvGeometry,
        tmp: &[T::Acc],
        np: usize,
        row: usize,
        m: usize,
        qy0: usize,
        tr: usize,
        d: &mut [T],
    ) {
        let (hw, wi, nqx) = (g.h.input * g.w.input, g.w.input, self.x.n);
        let (sy, sx) = (g.h.stride, g.w.stride);
        for c in 0..m {
            let plane = &mut d[c * hw..][..hw];
            for r in 0..tr {
                let y = (qy0 + r) * sy + self.y.ph;
                let src = &tmp[c * np + r * row..][..nqx];
                let drow = &mut plane[y * wi..][..wi];
                if sx == 1 {
                    T::slice_from_acc(src, drow);
                } else {
                    // Phase pixel qx sits at column qx*sx + ph: one per sx-wide chunk (no
                    // index math or bounds check per element).
                    for (dc, &v) in drow[self.x.ph..].chunks_mut(sx).zip(src) {
                        dc[0] = T::from_acc(v);
                    }
                }
            }
        }
    }
}

/// NCHW `dx` without a col2im scatter: per stride phase, an im2col of `dy` (rows
/// `(tap_y, tap_x, co)`, columns the phase's pixels) and one GEMM `dx_phase[ci, p] =
/// Wp[ci, (tap, co)] * col[(tap, co), p]` that writes `dx` directly (stride 1) or through a
/// small tile buffer (stride > 1, or f16). Work items are (image, group, input-channel
/// block); each `dx` element is one GEMM dot product over the fixed order `(tap, co)`
/// (the `gemm` crate blocks depth by `k` alone), so results do not depend on the thread count.
fn backprop_input_nchw<T: Element>(g: &ConvGeometry, dy: &[T], w: &[T], dx: &mut [T]) {
    if dx.is_empty() {
        return;
    }
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (cig, cog) = (g.ci / g.groups, g.co / g.groups);
    let (hw, dimg) = (hi * wi, g.co * ho * wo);
    let zero = T::Acc::zero();
    let (hph, wph) = (axis_phases(&g.h), axis_phases(&g.w));
    let mut phases = Vec::new();
    let mut woff = 0;
    for y in &hph {
        for x in &wph {
            let k = y.taps.len() * x.taps.len() * cog;
            phases.push(Phase { y, x, k, woff });
            woff += cig * k;
        }
    }
    // Packed filter: per group, per phase, [ci][(tap_y, tap_x, co)].
    let kw = g.w.kernel;
    let mut wp = vec![zero; g.groups * woff];
    for grp in 0..g.groups {
        let base = grp * woff;
        for ph in &phases {
            for ci in 0..cig {
                let row = &mut wp[base + ph.woff + ci * ph.k..][..ph.k];
                let mut r = 0;
                for &(ty, _) in &ph.y.taps {
                    for &(tx, _) in &ph.x.taps {
                        let src = &w[((ty * kw + tx) * cig + ci) * g.co + grp * cog..][..cog];
                        T::slice_to_acc(src, &mut row[r..r + cog]);
                        r += cog;
                    }
                }
            }
        }
    }
    // Split dx into (image, group, channel block) items; enough blocks to feed every thread.
    let n = dx.len() / (g.ci * hw).max(1);
    let threads = rayon::current_num_threads();
    let blocks = threads.div_ceil((n * g.groups).max(1)).clamp(1, cig.max(1));
    let chunk = cig.div_ceil(blocks).next_multiple_of(8).min(cig).max(1);
    let mut items = Vec::new();
    for (i, dxi) in dx.chunks_mut(g.ci * hw).enumerate() {
        let mut rest = dxi;
        for grp in 0..g.groups {
            for c0 in (0..cig).step_by(chunk) {
                let c1 = (c0 + chunk).min(cig);
                let (a, b) = rest.split_at_mut((c1 - c0) * hw);
                rest = b;
                items.push((i, grp, c0, c1, a));
            }
        }
    }
    let (phases, wp) = (&phases, &wp);
    items.into_par_iter().for_each_init(
        || (Vec::new(), Vec::new(), Vec::new()),
        |(col, tmp, band), (i, grp, c0, c1, d)| {
            let dyi = &dy[i * dimg..][..dimg];
            let m = c1 - c0;
            for ph in phases {
                let wmat = &wp[grp * woff + ph.woff + c0 * ph.k..][..m * ph.k];
                let nqx = ph.x.n;
                if cog >= BAND_MIN_COG && ph.k > 0 {
                    phase_by_band(g, grp, ph, wmat, m, dyi, d, band, tmp);
                    continue;
                }
                let tq = (PHASE_COL_ELEMS / (ph.k * nqx).max(1)).clamp(1, ph.y.n.max(1));
                for qy0 in (0..ph.y.n).step_by(tq) {
                    let tr = tq.min(ph.y.n - qy0);
                    let np = tr * nqx;
                    col.resize(ph.k * np, zero);
                    im2col_phase(g, grp, ph, qy0, tr, dyi, col);
                    let lhs = MatRef {
                        data: wmat,
                        rows: m,
                        cols: ph.k,
                        rs: ph.k,
                        cs: 1,
                    };
                    let rhs = MatRef {
                        data: &col[..ph.k * np],
                        rows: ph.k,
                        cols: np,
                        rs: np,
                        cs: 1,
                    };
                    let direct = g.h.stride == 1 && g.w.stride == 1;
                    if let (true, Some(acc)) = (direct, T::as_acc_slice_mut(d)) {
                        let dst = MatMut {
                            data: &mut acc[qy0 * wi..],
                            rows: m,
                            cols: np,
                            rs: hw,
                            cs: 1,
                        };
                        matmul(dst, lhs, rhs, false);
                        continue;
                    }
                    tmp.resize(m * np, zero);
                    let dst = MatMut {
                        data: &mut tmp[..],
                        rows: m,
                        cols: np,
                        rs: np,
                        cs: 1,
                    };
                    matmul(dst, lhs, rhs, false);
                    ph.store_tile::<T>(g, tmp, np, nqx, m, qy0, tr, d);
                }
            }
        },
    );
}

/// Winograd (F(4x4, 3x3) or F(2x2, 3x3)) covers 3x3, stride 1, dilation 1 with enough
/// channels for its 36 or 16 GEMMs (depth `cog`) to pay off.
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
        && g.h.input >= 2
        && g.w.input >= 2
}

/// Smallest group channel counts (in and out) that take the Winograd path.
pub(super) const WINO_MIN_CHANNELS: usize = 16;

/// Winograd tiles per block (whole tile rows, at least one): the transformed `dy` block
/// (`16 x cog x tiles`) and the GEMM results stay in L2.
const WINO_TILES: usize = 112;

/// NCHW `dx` for 3x3 stride 1 by Winograd F(2x2, 3x3) (Lavin & Gray): `dx` is the
/// correlation of `dy` with the spatially flipped filter (channels transposed), computed per
/// 2x2 output tile as `A^T [U (.) V] A` with `U = G g G^T` (the filter, transformed once,
/// in f64 then rounded) and `V = B^T d B` (4x4 `dy` patches). The 16 products `U(.)V` summed
/// over output channels are 16 GEMMs `M[xi][ci, tile] = U[xi][ci, co] * V[xi][co, tile]` over
/// a block of tile rows. Per `dx` element a fixed sequence of operations: deterministic and
/// independent of the thread count.
fn backprop_input_winograd<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    dy: &[T],
    w: &[T],
    dx: &mut [T],
) {
    let (cig, cog) = (g.ci / g.groups, g.co / g.groups);
    let p = WinoProblem {
        groups: g.groups,
        cig,
        cog,
        src: (g.h.output, g.w.output),
        dst: (g.h.input, g.w.input),
        off: (g.h.pad_before as isize - 2, g.w.pad_before as isize - 2),
    };
    // The correlation's kernel: flipped, input and output channels swapped.
    winograd(&p, layout, dy, dx, |grp, ci, co, a, b| {
        w[(((2 - a) * 3 + (2 - b)) * cig + ci) * g.co + grp * cog + co].to_f64()
    });
}

/// Forward NCHW 3x3 stride-1 conv by the same Winograd core (`x` correlated with the filter).
fn forward_winograd<T: Element>(g: &ConvGeometry, layout: Layout, x: &[T], w: &[T], y: &mut [T]) {
    let (cig, cog) = (g.ci / g.groups, g.co / g.groups);
    let p = WinoProblem {
        groups: g.groups,
        cig: cog,
        cog: cig,
        src: (g.h.input, g.w.input),
        dst: (g.h.output, g.w.output),
        off: (-(g.h.pad_before as isize), -(g.w.pad_before as isize)),
    };
    winograd(&p, layout, x, y, |grp, co, ci, a, b| {
        w[((a * 3 + b) * cig + ci) * g.co + grp * cog + co].to_f64()
    });
}

/// A grouped 3x3 stride-1 correlation `dst[c] = sum_k f(c, k) (*) src[k]` (either layout), in the
/// Winograd core's terms: `cig` destination and `cog` source channels per group.
pub(super) struct WinoProblem {
    pub(super) groups: usize,
    pub(super) cig: usize,
    pub(super) cog: usize,
    /// Source plane (height, width).
    pub(super) src: (usize, usize),
    /// Destination plane (height, width).
    pub(super) dst: (usize, usize),
    /// Source row and column of the first destination pixel's 3x3 window.
    pub(super) off: (isize, isize),
}

/// Destination planes from which F(4x4, 3x3) replaces F(2x2, 3x3) (both sides at least this):
/// below it the 4x4 tiles' clipped borders waste more than the fewer multiplies save.
const WINO4_MIN_PLANE: usize = 8;

/// Whether F(4x4, 3x3) may serve element type `T`. Its larger transform constants cost about
/// 10x the rounding error of F(2x2) (or of the direct sum): harmless where the result's own
/// rounding dominates (f16 and bf16, accumulated in f32) or the accumulator is f64, but in f32
/// it reaches SPEC's `1e-5` relative L2 on inputs whose sums cancel (2.9e-5 measured on 256
/// channels of structured data with a near-constant filter, where the direct f32 sum errs
/// 1e-6: `tests/reference.rs`, `winograd_f32_cancellation`). So f32 keeps F(2x2) here (and
/// F(3x3, 3x3), which stays near F(2x2)'s error, in the NHWC core: `winograd_nhwc::Tile`).
fn winograd4_serves<T: Element>() -> bool {
    T::DTYPE != crate::dtype::DType::F32
}

/// The Winograd correlation: NHWC by F(3x3, 3x3) or F(2x2, 3x3) with the channels as vectors
/// (`winograd_nhwc.rs`); NCHW f32, f16 and bf16 through that core between two transposes where
/// it serves, else by F(4x4, 3x3) on large planes where the type allows it, else F(2x2, 3x3).
fn winograd<T: Element>(
    p: &WinoProblem,
    layout: Layout,
    src: &[T],
    dst: &mut [T],
    filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
) {
    if layout == Layout::Nhwc {
        return super::winograd_nhwc::winograd_nhwc(p, src, dst, filt);
    }
    if super::winograd_nhwc::winograd_nchw_via_nhwc(p, src, dst, &filt) {
        return;
    }
    if winograd4_serves::<T>() && p.dst.0 >= WINO4_MIN_PLANE && p.dst.1 >= WINO4_MIN_PLANE {
        super::winograd4::winograd4_nchw(p, src, dst, filt)
    } else {
        winograd_nchw(p, src, dst, filt)
    }
}

/// The Winograd core's batched product, one GEMM per transform point `xi < points`:
/// `M[xi][c][t] = U[xi][c0 + c][k] * V[xi][k][t]` for the `m` destination channels from `c0`
/// (of `cig` per group in `U`), depth `cog`, over `nt` tiles. Shared by F(2x2) (16 points) and
/// F(4x4) (36).
#[allow(clippy::too_many_arguments)]
pub(super) fn winograd_gemms<A: Accum>(
    points: usize,
    (c0, m): (usize, usize),
    cig: usize,
    cog: usize,
    nt: usize,
    ug: &[A],
    v: &[A],
    mb: &mut [A],
) {
    for xi in 0..points {
        matmul(
            MatMut {
                data: &mut mb[xi * m * nt..][..m * nt],
                rows: m,
                cols: nt,
                rs: nt,
                cs: 1,
            },
            MatRef {
                data: &ug[(xi * cig + c0) * cog..][..m * cog],
                rows: m,
                cols: cog,
                rs: cog,
                cs: 1,
            },
            MatRef {
                data: &v[xi * cog * nt..][..cog * nt],
                rows: cog,
                cols: nt,
                rs: nt,
                cs: 1,
            },
            false,
        );
    }
}

/// The F(2x2, 3x3) filter transform `U[grp][xi][c_dst][c_src] = G f G^T` of the correlation
/// kernel `filt(grp, c_dst, c_src, a, b)`, shared by both layouts' cores.
pub(super) fn wino_filter<A: Accum>(
    p: &WinoProblem,
    filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
) -> Vec<A> {
    let mut u = vec![A::zero(); p.groups * 16 * p.cig * p.cog];
    wino_filter_into(p, filt, &mut u);
    u
}

/// [`wino_filter`] into `u` (`groups * 16 * cig * cog` elements, every one written).
pub(super) fn wino_filter_into<A: Accum>(
    p: &WinoProblem,
    filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
    u: &mut [A],
) {
    let (cig, cog, groups) = (p.cig, p.cog, p.groups);
    let usz = 16 * cig * cog;
    for grp in 0..groups {
        for ci in 0..cig {
            for co in 0..cog {
                let f = |a: usize, b: usize| filt(grp, ci, co, a, b);
                // Gg: 4x3, rows g0, (g0+g1+g2)/2, (g0-g1+g2)/2, g2.
                let col = |b: usize| {
                    let (g0, g1, g2) = (f(0, b), f(1, b), f(2, b));
                    [g0, (g0 + g1 + g2) * 0.5, (g0 - g1 + g2) * 0.5, g2]
                };
                let (c0, c1, c2) = (col(0), col(1), col(2));
                let gg: [[f64; 3]; 4] = std::array::from_fn(|i| [c0[i], c1[i], c2[i]]);
                for (i, r) in gg.iter().enumerate() {
                    let v = [
                        r[0],
                        (r[0] + r[1] + r[2]) * 0.5,
                        (r[0] - r[1] + r[2]) * 0.5,
                        r[2],
                    ];
                    for (j, &x) in v.iter().enumerate() {
                        u[grp * usz + ((i * 4 + j) * cig + ci) * cog + co] = A::from_f64_lossy(x);
                    }
                }
            }
        }
    }
}

/// F(2x2, 3x3). `filt(grp, c_dst, c_src, a, b)`: the correlation kernel's tap `(a, b)`.
fn winograd_nchw<T: Element>(
    p: &WinoProblem,
    dy: &[T],
    dx: &mut [T],
    filt: impl Fn(usize, usize, usize, usize, usize) -> f64,
) {
    if dx.is_empty() {
        return;
    }
    let ((hi, wi), (ho, wo)) = (p.dst, p.src);
    let (cig, cog, groups) = (p.cig, p.cog, p.groups);
    let (hw, dimg) = (hi * wi, groups * cog * ho * wo);
    let zero = T::Acc::zero();
    let usz = 16 * cig * cog;
    let u = wino_filter::<T::Acc>(p, filt);
    let n = dx.len() / (groups * cig * hw).max(1);
    let threads = rayon::current_num_threads();
    let blocks = threads.div_ceil((n * groups).max(1)).clamp(1, cig.max(1));
    let chunk = cig.div_ceil(blocks).next_multiple_of(8).min(cig).max(1);
    let mut items = Vec::new();
    for (i, dxi) in dx.chunks_mut(groups * cig * hw).enumerate() {
        let mut rest = dxi;
        for grp in 0..groups {
            for c0 in (0..cig).step_by(chunk) {
                let c1 = (c0 + chunk).min(cig);
                let (a, b) = rest.split_at_mut((c1 - c0) * hw);
                rest = b;
                items.push((i, grp, c0, c1, a));
            }
        }
    }
    let (ntx, nty) = (wi.div_ceil(2), hi.div_ceil(2));
    let br = (WINO_TILES / ntx).clamp(1, nty);
    // dy index of the patch's first row/column for tile 0: the correlation offset.
    let (oy, ox) = p.off;
    let u = &u;
    let arch = crate::cpu::simd::Arch::new();
    items.into_par_iter().for_each_init(
        || (Vec::new(), Vec::new(), Vec::new()),
        |(v, mb, sb), (i, grp, c0, c1, d)| {
            let dyi = &dy[i * dimg..][..dimg];
            let m = c1 - c0;
            let ug = &u[grp * usz..][..usz];
            let pw = 2 * ntx + 2;
            for ty0 in (0..nty).step_by(br) {
                let tr = br.min(nty - ty0);
                let nt = tr * ntx;
                v.resize(16 * cog * nt, zero);
                mb.resize(16 * m * nt, zero);
                sb.resize((4 * nt + wi).max(9 * pw), zero);
                // Input transform: V[xi][co][t], vectorised over the block's tiles t.
                // (`dispatch` runs the loops compiled for the widest SIMD the CPU has: AVX-512,
                // AVX2 or scalar, picked at run time.)
                arch.dispatch(WinoIn::<T> {
                    dyi,
                    cogs: (grp * cog, cog),
                    dims: (ho, wo),
                    rows: (ty0, tr, ntx),
                    off: (oy, ox),
                    sb: &mut sb[..],
                    v: &mut v[..],
                });
                // 16 GEMMs: M[xi][c][t] = U[xi][c0 + c][co] * V[xi][co][t].
                winograd_gemms(16, (c0, m), cig, cog, nt, ug, &v[..], &mut mb[..]);
                // Output transform: Y = A^T M A, A^T = [[1, 1, 1, 0], [0, 1, -1, -1]].
                arch.dispatch(WinoOut::<T> {
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

/// `u = B^T d` on four whole patch rows, `B^T = [[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0],
/// [0, 1, 0, -1]]`, on separate `noalias` slices so the loop vectorises without alias checks.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn bt4_rows<A: Accum>(
    d0: &[A],
    d1: &[A],
    d2: &[A],
    d3: &[A],
    u0: &mut [A],
    u1: &mut [A],
    u2: &mut [A],
    u3: &mut [A],
) {
    let n = d0.len();
    let (d1, d2, d3) = (&d1[..n], &d2[..n], &d3[..n]);
    let (u0, u1, u2, u3) = (&mut u0[..n], &mut u1[..n], &mut u2[..n], &mut u3[..n]);
    for t in 0..n {
        let (x0, x1, x2, x3) = (d0[t], d1[t], d2[t], d3[t]);
        u0[t] = x0 - x2;
        u1[t] = x1 + x2;
        u2[t] = x2 - x1;
        u3[t] = x1 - x3;
    }
}

/// `v_j[t] = (u[2 t .. 2 t + 4] B)[j]`: the column half of the input transform for the tiles
/// of one row, from the row's even (`ue[k] = u[2 k]`) and odd (`uo[k] = u[2 k + 1]`) columns
/// (each at least `n + 1` long), straight into the GEMM operand slabs: unit-stride loops.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn bt4_cols<A: Accum>(ue: &[A], uo: &[A], v0: &mut [A], v1: &mut [A], v2: &mut [A], v3: &mut [A]) {
    let n = v0.len();
    let (v1, v2, v3) = (&mut v1[..n], &mut v2[..n], &mut v3[..n]);
    let (e0, e1, o0, o1) = (&ue[..n], &ue[1..n + 1], &uo[..n], &uo[1..n + 1]);
    for t in 0..n {
        v0[t] = e0[t] - e1[t];
        v1[t] = o0[t] + e1[t];
        v2[t] = e1[t] - o0[t];
        v3[t] = o0[t] - o1[t];
    }
}

/// The zero-padded row `x -> seg[x - lo]` (zero outside `lo..lo + seg.len()`, `2 e.len()`
/// long) split into its even (`e`) and odd (`o`) columns.
#[inline(always)]
fn split_padded<A: Accum>(seg: &[A], lo: usize, e: &mut [A], o: &mut [A]) {
    fn put<A>(e: &mut [A], o: &mut [A], x: usize, val: A) {
        if x.is_multiple_of(2) {
            e[x / 2] = val;
        } else {
            o[x / 2] = val;
        }
    }
    let hi = lo + seg.len();
    for x in (0..lo).chain(hi..2 * e.len()) {
        put(e, o, x, A::zero());
    }
    let (mut x, mut s) = (lo, seg);
    if x % 2 == 1 && !s.is_empty() {
        put(e, o, x, s[0]);
        (x, s) = (x + 1, &s[1..]);
    }
    let (k, pairs) = (x / 2, s.len() / 2);
    crate::cpu::simd::deinterleave2(&s[..2 * pairs], &mut e[k..k + pairs], &mut o[k..k + pairs]);
    if s.len() % 2 == 1 {
        e[k + pairs] = s[2 * pairs];
    }
}

/// `Y = A^T M A` for one channel over a block's tiles, `A^T = [[1, 1, 1, 0], [0, 1, -1, -1]]`:
/// the 16 GEMM results `m_ij` in, the 2x2 outputs `y_ij` out, each tile's whole transform in
/// registers (same operation order as applying `A^T` then `A`).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn at4<A: Accum>(
    m: [&[A]; 16],
    y00: &mut [A],
    y01: &mut [A],
    y10: &mut [A],
    y11: &mut [A],
) {
    let [m00, m01, m02, m03, m10, m11, m12, m13, m20, m21, m22, m23, m30, m31, m32, m33] = m;
    at4_slices(
        m00, m01, m02, m03, m10, m11, m12, m13, m20, m21, m22, m23, m30, m31, m32, m33, y00, y01,
        y10, y11,
    );
}

/// [`at4`] on separate slice arguments: LLVM keeps their `noalias` through inlining and
/// vectorises the loop (it does not for arrays of slices).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn at4_slices<A: Accum>(
    m00: &[A],
    m01: &[A],
    m02: &[A],
    m03: &[A],
    m10: &[A],
    m11: &[A],
    m12: &[A],
    m13: &[A],
    m20: &[A],
    m21: &[A],
    m22: &[A],
    m23: &[A],
    m30: &[A],
    m31: &[A],
    m32: &[A],
    m33: &[A],
    y00: &mut [A],
    y01: &mut [A],
    y10: &mut [A],
    y11: &mut [A],
) {
    let n = y00.len();
    let (m00, m01, m02, m03) = (&m00[..n], &m01[..n], &m02[..n], &m03[..n]);
    let (m10, m11, m12, m13) = (&m10[..n], &m11[..n], &m12[..n], &m13[..n]);
    let (m20, m21, m22, m23) = (&m20[..n], &m21[..n], &m22[..n], &m23[..n]);
    let (m30, m31, m32, m33) = (&m30[..n], &m31[..n], &m32[..n], &m33[..n]);
    let (y01, y10, y11) = (&mut y01[..n], &mut y10[..n], &mut y11[..n]);
    for t in 0..n {
        // Rows: s = m0 + m1 + m2, r = m1 - m2 - m3 per column j.
        let s0 = m00[t] + m10[t] + m20[t];
        let s1 = m01[t] + m11[t] + m21[t];
        let s2 = m02[t] + m12[t] + m22[t];
        let s3 = m03[t] + m13[t] + m23[t];
        let r0 = m10[t] - m20[t] - m30[t];
        let r1 = m11[t] - m21[t] - m31[t];
        let r2 = m12[t] - m22[t] - m32[t];
        let r3 = m13[t] - m23[t] - m33[t];
        // Columns, the same combination.
        y00[t] = s0 + s1 + s2;
        y01[t] = s1 - s2 - s3;
        y10[t] = r0 + r1 + r2;
        y11[t] = r1 - r2 - r3;
    }
}

/// `out[2 t] = a[t]`, `out[2 t + 1] = b[t]`.
#[inline(always)]
fn interleave2<A: Accum>(a: &[A], b: &[A], out: &mut [A]) {
    for ((o, &a), &b) in out.chunks_exact_mut(2).zip(a).zip(b) {
        o[0] = a;
        o[1] = b;
    }
}

/// The Winograd input transform of one tile block: `V[xi][co][t] = (B^T d B)[xi]` for the
/// 4x4 `dy` patches `d` of the block's tiles: per tile row, `B^T` on the four whole patch
/// rows, then `B` on each result's overlapping column quadruples, vectorised over tiles.
struct WinoIn<'a, T: Element> {
    /// The image's `dy`.
    dyi: &'a [T],
    /// (first output channel of the group, group output channels).
    cogs: (usize, usize),
    /// `dy` (height, width).
    dims: (usize, usize),
    /// (first tile row, tile rows, tiles per row).
    rows: (usize, usize, usize),
    /// `dy` row and column of tile 0's patch origin.
    off: (isize, isize),
    /// At least `9 (2 ntx + 2)` elements.
    sb: &'a mut [T::Acc],
    v: &'a mut [T::Acc],
}

impl<T: Element> pulp::WithSimd for WinoIn<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let WinoIn {
            dyi,
            cogs: (co0, cog),
            dims: (ho, wo),
            rows: (ty0, tr, ntx),
            off: (oy, ox),
            sb,
            v,
        } = self;
        let zero = T::Acc::zero();
        let nt = tr * ntx;
        let pw = 2 * ntx + 2;
        let h = ntx + 1;
        // Patch rows split into even and odd columns: slot `y % 4` holds `dy` row `y`'s
        // (`2 h` long: even half, odd half), so a tile row loads only its two new rows.
        let (dr, rest) = sb.split_at_mut(8 * h);
        let (us, rest) = rest.split_at_mut(8 * h);
        let row = &mut rest[..pw];
        // Columns `lo..hi` of a padded row lie inside `dy`.
        let lo = (-ox).clamp(0, pw as isize) as usize;
        let hi = (wo as isize - ox).clamp(lo as isize, pw as isize) as usize;
        for co in 0..cog {
            let plane = &dyi[(co0 + co) * ho * wo..][..ho * wo];
            for r in 0..tr {
                // Patch row a: dy[2 ty + a + oy][x + ox] (zero outside).
                let first = if r == 0 { 0 } else { 2 };
                for a in first..4 {
                    let gy = 2 * (ty0 + r) + a;
                    let y = gy as isize + oy;
                    let (e, o) = dr[gy % 4 * 2 * h..][..2 * h].split_at_mut(h);
                    if y >= 0 && y < ho as isize && hi > lo {
                        let s0 = (lo as isize + ox) as usize;
                        let src = &plane[y as usize * wo + s0..][..hi - lo];
                        // Split straight from `dy` where it is the accumulation type: a
                        // freshly copied row read back at another alignment stalled on
                        // store forwarding.
                        let seg = match T::as_acc_slice(src) {
                            Some(acc) => acc,
                            None => {
                                T::slice_to_acc(src, &mut row[..hi - lo]);
                                &row[..hi - lo]
                            }
                        };
                        split_padded(seg, lo, e, o);
                    } else {
                        e.fill(zero);
                        o.fill(zero);
                    }
                }
                let slot = |a: usize| &dr[(2 * (ty0 + r) + a) % 4 * 2 * h..][..2 * h];
                let (d0, d1, d2, d3) = (slot(0), slot(1), slot(2), slot(3));
                {
                    let (u0, rest) = us.split_at_mut(2 * h);
                    let (u1, rest) = rest.split_at_mut(2 * h);
                    let (u2, u3) = rest.split_at_mut(2 * h);
                    bt4_rows(d0, d1, d2, d3, u0, u1, u2, u3);
                }
                for (i, ui) in us.chunks_exact(2 * h).enumerate() {
                    let (ue, uo) = ui.split_at(h);
                    let base = (i * 4 * cog + co) * nt + r * ntx;
                    let (v0, rest) = v[base..].split_at_mut(cog * nt);
                    let (v1, rest) = rest.split_at_mut(cog * nt);
                    let (v2, rest) = rest.split_at_mut(cog * nt);
                    bt4_cols(ue, uo, &mut v0[..ntx], &mut v1[..ntx], &mut v2[..ntx], rest);
                }
            }
        }
    }
}

/// The Winograd output transform of one tile block: `Y = A^T M A` per tile and channel
/// ([`at4`]), stored (rounded once, clipped to the image) into the item's `dx` channels.
struct WinoOut<'a, T: Element> {
    mb: &'a [T::Acc],
    m: usize,
    /// (first tile row, tile rows, tiles per row).
    rows: (usize, usize, usize),
    /// `dx` (height, width).
    dims: (usize, usize),
    /// At least `4 nt + wi` elements.
    sb: &'a mut [T::Acc],
    d: &'a mut [T],
}

impl<T: Element> pulp::WithSimd for WinoOut<'_, T> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _: S) {
        let WinoOut {
            mb,
            m,
            rows: (ty0, tr, ntx),
            dims: (hi, wi),
            sb,
            d,
        } = self;
        let nt = tr * ntx;
        let hw = hi * wi;
        let (yv, rest) = sb.split_at_mut(4 * nt);
        let rowbuf = &mut rest[..wi];
        for c in 0..m {
            let mx = |xi: usize| &mb[(xi * m + c) * nt..][..nt];
            {
                let (y00, rest) = yv.split_at_mut(nt);
                let (y01, rest) = rest.split_at_mut(nt);
                let (y10, y11) = rest.split_at_mut(nt);
                at4(std::array::from_fn(mx), y00, y01, y10, y11);
            }
            for r in 0..tr {
                for i2 in 0..2 {
                    let y = 2 * (ty0 + r) + i2;
                    if y >= hi {
                        break;
                    }
                    let rr = r * ntx..(r + 1) * ntx;
                    let ya = &yv[2 * i2 * nt..][rr.clone()];
                    let yb = &yv[(2 * i2 + 1) * nt..][rr];
                    let drow = &mut d[c * hw + y * wi..][..wi];
                    // Interleave the tiles' columns straight into `dx` when it is the
                    // accumulation type, else through `rowbuf` and one rounding.
                    let (out, direct) = match T::as_acc_slice_mut(drow) {
                        Some(acc) => (acc, true),
                        None => (&mut rowbuf[..], false),
                    };
                    let whole = wi / 2;
                    let (body, tail) = out.split_at_mut(2 * whole);
                    interleave2(&ya[..whole], &yb[..whole], body);
                    if let [last] = tail {
                        *last = ya[ntx - 1];
                    }
                    if !direct {
                        T::slice_from_acc(rowbuf, &mut d[c * hw + y * wi..][..wi]);
                    }
                }
            }
        }
    }
}
/// Group output channels from which a phase skips the im2col: one GEMM per tap (depth `cog`)
/// reads a zero-bordered band of `dy` rows in place.
const BAND_MIN_COG: usize = 32;

/// One stride phase of an item without im2col: per tile of phase rows, a band of `dy`
/// (`cog x rows x (nqx + tap spread)`, zero outside the image) shared by every tap; tap `t`'s
/// operand is the band shifted by its offset, with the band's pitch (the extra columns of
/// the product are discarded). `tmp[c, p] = sum_t W_t[c, :] * band_t[:, p]`, taps in order,
/// then stored (rounded once) into the phase's `dx` positions.
#[allow(clippy::too_many_arguments)]
fn phase_by_band<T: Element>(
    g: &ConvGeometry,
    grp: usize,
    ph: &Phase<'_>,
    wmat: &[T::Acc],
    m: usize,
    dyi: &[T],
    d: &mut [T],
    band: &mut Vec<T::Acc>,
    tmp: &mut Vec<T::Acc>,
) {
    let (ho, wo) = (g.h.output, g.w.output);
    let cog = g.co / g.groups;
    let zero = T::Acc::zero();
    let span = |taps: &[(usize, isize)]| {
        let lo = taps.iter().map(|t| t.1).min().unwrap_or(0);
        let hi = taps.iter().map(|t| t.1).max().unwrap_or(0);
        (lo, (hi - lo) as usize)
    };
    let ((ymin, ey), (xmin, ex)) = (span(&ph.y.taps), span(&ph.x.taps));
    let nqx = ph.x.n;
    let bw = nqx + ex;
    let tq = (PHASE_COL_ELEMS / (cog * bw).max(1))
        .saturating_sub(ey)
        .clamp(1, ph.y.n.max(1));
    for qy0 in (0..ph.y.n).step_by(tq) {
        let tr = tq.min(ph.y.n - qy0);
        let bh = tr + ey;
        band.resize(cog * bh * bw, zero);
        // band[co][r][c] = dy[co, qy0 + ymin + r, xmin + c].
        let lo = (-xmin).clamp(0, bw as isize) as usize;
        let hi_ = (wo as isize - xmin).clamp(lo as isize, bw as isize) as usize;
        for co in 0..cog {
            let plane = &dyi[(grp * cog + co) * ho * wo..][..ho * wo];
            for r in 0..bh {
                let row = &mut band[(co * bh + r) * bw..][..bw];
                let oy = (qy0 + r) as isize + ymin;
                if oy < 0 || oy >= ho as isize || hi_ == lo {
                    row.fill(zero);
                    continue;
                }
                row[..lo].fill(zero);
                row[hi_..].fill(zero);
                let s0 = (lo as isize + xmin) as usize;
                T::slice_to_acc(
                    &plane[oy as usize * wo + s0..][..hi_ - lo],
                    &mut row[lo..hi_],
                );
            }
        }
        let np = (tr - 1) * bw + nqx;
        tmp.resize(m * np, zero);
        let mut t = 0;
        for &(_, offy) in &ph.y.taps {
            for &(_, offx) in &ph.x.taps {
                let start = (offy - ymin) as usize * bw + (offx - xmin) as usize;
                matmul(
                    MatMut {
                        data: &mut tmp[..m * np],
                        rows: m,
                        cols: np,
                        rs: np,
                        cs: 1,
                    },
                    MatRef {
                        data: &wmat[t * cog..],
                        rows: m,
                        cols: cog,
                        rs: ph.k,
                        cs: 1,
                    },
                    MatRef {
                        data: &band[start..],
                        rows: cog,
                        cols: np,
                        rs: bh * bw,
                        cs: 1,
                    },
                    t > 0,
                );
                t += 1;
            }
        }
        ph.store_tile::<T>(g, tmp, np, bw, m, qy0, tr, d);
    }
}

/// `col[(tap_y, tap_x, co), (q_y - qy0, q_x)] = dy[grp*cog + co, q_y + off_y, q_x + off_x]`,
/// zero where that output is out of range.
fn im2col_phase<T: Element>(
    g: &ConvGeometry,
    grp: usize,
    ph: &Phase<'_>,
    qy0: usize,
    tr: usize,
    dy: &[T],
    col: &mut [T::Acc],
) {
    let (ho, wo, cog) = (g.h.output, g.w.output, g.co / g.groups);
    let zero = T::Acc::zero();
    let nqx = ph.x.n;
    let np = tr * nqx;
    let mut rows = col.chunks_exact_mut(np.max(1));
    for &(_, offy) in &ph.y.taps {
        for &(_, offx) in &ph.x.taps {
            // q_x whose output q_x + off_x lies in [0, wo).
            let lo = (-offx).clamp(0, nqx as isize) as usize;
            let hi = (wo as isize - offx).clamp(lo as isize, nqx as isize) as usize;
            for co in 0..cog {
                let plane = &dy[(grp * cog + co) * ho * wo..][..ho * wo];
                let Some(dst) = rows.next() else {
                    return;
                };
                for (r, d) in dst.chunks_exact_mut(nqx.max(1)).enumerate() {
                    let oy = (qy0 + r) as isize + offy;
                    if oy < 0 || oy >= ho as isize || hi == lo {
                        d.fill(zero);
                        continue;
                    }
                    let srow = &plane[oy as usize * wo..][..wo];
                    d[..lo].fill(zero);
                    d[hi..].fill(zero);
                    let s0 = (lo as isize + offx) as usize;
                    T::slice_to_acc(&srow[s0..s0 + (hi - lo)], &mut d[lo..hi]);
                }
            }
        }
    }
}

fn backprop_input_col2im<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    dy: &[T],
    w: &[T],
    dx: &mut [T],
) {
    let mut wbuf = Vec::new();
    let w = acc_view(w, &mut wbuf);
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (p, cig, cog) = (ho * wo, g.ci / g.groups, g.co / g.groups);
    let k = g.h.kernel * g.w.kernel * cig;
    let rows = tile_rows(k, wo, ho);
    per_image::<T>(dy, g.co * p, dx, g.ci * hi * wi, |dyi, dxi, col| {
        col.resize(k * rows * wo, T::Acc::zero());
        for grp in 0..g.groups {
            for oy0 in (0..ho).step_by(rows) {
                let tr = rows.min(ho - oy0);
                let tp = tr * wo;
                match layout {
                    Layout::Nchw => {
                        // col[k, p] = W_g[k, co] * dy_g[co, p]
                        matmul(
                            MatMut {
                                data: col,
                                rows: k,
                                cols: tp,
                                rs: tp,
                                cs: 1,
                            },
                            MatRef {
                                data: &w[grp * cog..],
                                rows: k,
                                cols: cog,
                                rs: g.co,
                                cs: 1,
                            },
                            MatRef {
                                data: &dyi[grp * cog * p + oy0 * wo..],
                                rows: cog,
                                cols: tp,
                                rs: p,
                                cs: 1,
                            },
                            false,
                        );
                        col2im_nchw(g, grp, oy0, tr, col, dxi);
                    }
                    Layout::Nhwc => {
                        // colT[p, k] = dy_g[p, co] * W_g[k, co]^T
                        matmul(
                            MatMut {
                                data: col,
                                rows: tp,
                                cols: k,
                                rs: k,
                                cs: 1,
                            },
                            MatRef {
                                data: &dyi[oy0 * wo * g.co + grp * cog..],
                                rows: tp,
                                cols: cog,
                                rs: g.co,
                                cs: 1,
                            },
                            MatRef {
                                data: &w[grp * cog..],
                                rows: cog,
                                cols: k,
                                rs: 1,
                                cs: g.co,
                            },
                            false,
                        );
                        col2im_nhwc(g, grp, oy0, tr, col, dxi);
                    }
                }
            }
        }
    });
}

/// The outputs `ox` whose tap `kx` lands inside the input, as a range.
#[inline]
fn valid_outputs(a: &WindowAxis, k: usize) -> std::ops::Range<usize> {
    // x = o*s + k*d - pad in [0, input)
    let off = k * a.dilation;
    let lo = if off >= a.pad_before {
        0
    } else {
        (a.pad_before - off).div_ceil(a.stride)
    };
    let end = a.input + a.pad_before;
    let hi = if off >= end {
        0
    } else {
        (end - off).div_ceil(a.stride)
    };
    lo..hi.min(a.output).max(lo)
}

fn col2im_nchw<A: Accum>(
    g: &ConvGeometry,
    grp: usize,
    oy0: usize,
    tr: usize,
    col: &[A],
    dx: &mut [A],
) {
    let (hi, wi, wo, cig) = (g.h.input, g.w.input, g.w.output, g.ci / g.groups);
    let tp = tr * wo;
    for ky in 0..g.h.kernel {
        let oys = valid_outputs(&g.h, ky);
        for kx in 0..g.w.kernel {
            let oxs = valid_outputs(&g.w, kx);
            for c in 0..cig {
                let krow = &col[((ky * g.w.kernel + kx) * cig + c) * tp..][..tp];
                let plane = &mut dx[(grp * cig + c) * hi * wi..][..hi * wi];
                for oy in oys.start.max(oy0)..oys.end.min(oy0 + tr) {
                    let y = oy * g.h.stride + ky * g.h.dilation - g.h.pad_before;
                    let src = &krow[(oy - oy0) * wo..][..wo];
                    let drow = &mut plane[y * wi..][..wi];
                    for ox in oxs.clone() {
                        drow[ox * g.w.stride + kx * g.w.dilation - g.w.pad_before] =
                            drow[ox * g.w.stride + kx * g.w.dilation - g.w.pad_before] + src[ox];
                    }
                }
            }
        }
    }
}

fn col2im_nhwc<A: Accum>(
    g: &ConvGeometry,
    grp: usize,
    oy0: usize,
    tr: usize,
    col: &[A],
    dx: &mut [A],
) {
    let (wi, wo, cig, kw) = (g.w.input, g.w.output, g.ci / g.groups, g.w.kernel);
    let k = g.h.kernel * kw * cig;
    for ky in 0..g.h.kernel {
        let oys = valid_outputs(&g.h, ky);
        for oy in oys.start.max(oy0)..oys.end.min(oy0 + tr) {
            let y = oy * g.h.stride + ky * g.h.dilation - g.h.pad_before;
            for kx in 0..kw {
                for ox in valid_outputs(&g.w, kx) {
                    let x = ox * g.w.stride + kx * g.w.dilation - g.w.pad_before;
                    let src = &col[((oy - oy0) * wo + ox) * k + (ky * kw + kx) * cig..][..cig];
                    let dst = &mut dx[(y * wi + x) * g.ci + grp * cig..][..cig];
                    for (d, &s) in dst.iter_mut().zip(src) {
                        *d = *d + s;
                    }
                }
            }
        }
    }
}

/// `y` from `x` and an HWIO filter.
pub(crate) fn forward<T: Element>(g: &ConvGeometry, layout: Layout, x: &[T], w: &[T], y: &mut [T]) {
    let level = super::filter_direct::Level::Best;
    if super::conv_direct::pairs_first::<T>(g.ci / g.groups)
        && super::conv_direct::forward_direct(g, layout, x, w, y, level)
    {
        return;
    }
    if winograd_applies(g) {
        return forward_winograd(g, layout, x, w, y);
    }
    if super::phase_winograd::forward_row_winograd(g, layout, x, w, y, level)
        || super::conv_direct::forward_direct(g, layout, x, w, y, level)
    {
        return;
    }
    forward_col(g, layout, x, w, y);
}

/// `y` by im2col and GEMM per image.
fn forward_col<T: Element>(g: &ConvGeometry, layout: Layout, x: &[T], w: &[T], y: &mut [T]) {
    let mut wbuf = Vec::new();
    let w = acc_view(w, &mut wbuf);
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (p, cig, cog) = (ho * wo, g.ci / g.groups, g.co / g.groups);
    let k = g.h.kernel * g.w.kernel * cig;
    let rows = tile_rows(k, wo, ho);
    // Small column strides only: the split image is `s * ceil(wi / s)` wide per row.
    let split = layout == Layout::Nchw && (2..=4).contains(&g.w.stride) && g.w.input >= g.w.stride;
    per_image::<T>(x, g.ci * hi * wi, y, g.co * p, |xi, yi, col| {
        col.resize(k * rows * wo, T::Acc::zero());
        let mut xs = Vec::new();
        if split {
            split_columns(g, xi, &mut xs);
        }
        for grp in 0..g.groups {
            for oy0 in (0..ho).step_by(rows) {
                let tr = rows.min(ho - oy0);
                let tp = tr * wo;
                match layout {
                    Layout::Nchw => {
                        if split {
                            im2col_nchw_split(g, grp, oy0, tr, &xs, col);
                        } else {
                            im2col_nchw(g, grp, oy0, tr, xi, col);
                        }
                        // y_g[co, p] = W_g[k, co]^T * col[k, p]
                        matmul(
                            MatMut {
                                data: &mut yi[grp * cog * p + oy0 * wo..],
                                rows: cog,
                                cols: tp,
                                rs: p,
                                cs: 1,
                            },
                            MatRef {
                                data: &w[grp * cog..],
                                rows: cog,
                                cols: k,
                                rs: 1,
                                cs: g.co,
                            },
                            MatRef {
                                data: col,
                                rows: k,
                                cols: tp,
                                rs: tp,
                                cs: 1,
                            },
                            false,
                        );
                    }
                    Layout::Nhwc => {
                        im2col_nhwc(g, grp, oy0, tr, xi, col);
                        matmul(
                            MatMut {
                                data: &mut yi[oy0 * wo * g.co + grp * cog..],
                                rows: tp,
                                cols: cog,
                                rs: g.co,
                                cs: 1,
                            },
                            MatRef {
                                data: col,
                                rows: tp,
                                cols: k,
                                rs: k,
                                cs: 1,
                            },
                            MatRef {
                                data: &w[grp * cog..],
                                rows: k,
                                cols: cog,
                                rs: g.co,
                                cs: 1,
                            },
                            false,
                        );
                    }
                }
            }
        }
    });
}

pub(super) fn im2col_nchw<A: Accum>(
    g: &ConvGeometry,
    grp: usize,
    oy0: usize,
    tr: usize,
    x: &[A],
    col: &mut [A],
) {
    let (hi, wi, wo, cig) = (g.h.input, g.w.input, g.w.output, g.ci / g.groups);
    let tp = tr * wo;
    for ky in 0..g.h.kernel {
        for kx in 0..g.w.kernel {
            let oxs = valid_outputs(&g.w, kx);
            for c in 0..cig {
                let krow = &mut col[((ky * g.w.kernel + kx) * cig + c) * tp..][..tp];
                krow.fill(A::zero());
                let plane = &x[(grp * cig + c) * hi * wi..][..hi * wi];
                for oy in oy0..oy0 + tr {
                    let Some(y) = g.h.input_index(oy, ky) else {
                        continue;
                    };
                    let dst = &mut krow[(oy - oy0) * wo..][..wo];
                    let srow = &plane[y * wi..][..wi];
                    if oxs.is_empty() {
                        continue;
                    }
                    // Input column of the first valid output; the rest follow at the stride
                    // (a plain copy at stride 1, an iterator gather otherwise: no index math).
                    let x0 = oxs.start * g.w.stride + kx * g.w.dilation - g.w.pad_before;
                    let d = &mut dst[oxs.clone()];
                    if g.w.stride == 1 {
                        d.copy_from_slice(&srow[x0..x0 + d.len()]);
                    } else {
                        for (o, &v) in d.iter_mut().zip(srow[x0..].iter().step_by(g.w.stride)) {
                            *o = v;
                        }
                    }
                }
            }
        }
    }
}

/// Splits every row of an NCHW image into its column-stride phases: `xs[c][y][ph][j] =
/// x[c][y][j*s + ph]` (`j < ceil(wi / s)`), so that [`im2col_nchw_split`] copies each tap's
/// columns contiguously (a strided gather per tap reads each row `kw` times).
fn split_columns<A: Accum>(g: &ConvGeometry, x: &[A], xs: &mut Vec<A>) {
    let (wi, s) = (g.w.input, g.w.stride);
    let nph = wi.div_ceil(s);
    let rows = x.len() / wi.max(1);
    xs.clear();
    xs.resize(rows * s * nph, A::zero());
    for (src, dst) in x.chunks_exact(wi).zip(xs.chunks_exact_mut(s * nph)) {
        if s == 2 {
            let (even, odd) = dst.split_at_mut(nph);
            let mut pairs = src.chunks_exact(2);
            for ((e, o), q) in even.iter_mut().zip(odd.iter_mut()).zip(&mut pairs) {
                *e = q[0];
                *o = q[1];
            }
            if let [last] = pairs.remainder() {
                even[nph - 1] = *last;
            }
        } else {
            for (ph, d) in dst.chunks_exact_mut(nph).enumerate() {
                for (o, q) in d.iter_mut().zip(src[ph.min(wi)..].chunks(s)) {
                    *o = q[0];
                }
            }
        }
    }
}

/// [`im2col_nchw`] for a column stride above 1, from the image's [`split_columns`].
fn im2col_nchw_split<A: Accum>(
    g: &ConvGeometry,
    grp: usize,
    oy0: usize,
    tr: usize,
    xs: &[A],
    col: &mut [A],
) {
    let (hi, wi, wo, cig, kw) = (
        g.h.input,
        g.w.input,
        g.w.output,
        g.ci / g.groups,
        g.w.kernel,
    );
    let (tp, s) = (tr * wo, g.w.stride);
    let nph = wi.div_ceil(s);
    let rw = s * nph;
    // Per tap: (valid outputs, phase, first phase index).
    let taps: Vec<_> = (0..kw)
        .map(|kx| {
            let oxs = valid_outputs(&g.w, kx);
            let x0 = (oxs.start * s + kx * g.w.dilation).saturating_sub(g.w.pad_before);
            (oxs, x0 % s, x0 / s)
        })
        .collect();
    for ky in 0..g.h.kernel {
        for (kx, (oxs, ph, j0)) in taps.iter().enumerate() {
            for c in 0..cig {
                let krow = &mut col[((ky * kw + kx) * cig + c) * tp..][..tp];
                krow.fill(A::zero());
                if oxs.is_empty() {
                    continue;
                }
                let plane = &xs[(grp * cig + c) * hi * rw..][..hi * rw];
                for oy in oy0..oy0 + tr {
                    let Some(y) = g.h.input_index(oy, ky) else {
                        continue;
                    };
                    let dst = &mut krow[(oy - oy0) * wo..][..wo][oxs.clone()];
                    let n = dst.len();
                    dst.copy_from_slice(&plane[y * rw + ph * nph + j0..][..n]);
                }
            }
        }
    }
}

pub(super) fn im2col_nhwc<A: Accum>(
    g: &ConvGeometry,
    grp: usize,
    oy0: usize,
    tr: usize,
    x: &[A],
    col: &mut [A],
) {
    let (wi, wo, cig, kw) = (g.w.input, g.w.output, g.ci / g.groups, g.w.kernel);
    let k = g.h.kernel * kw * cig;
    for oy in oy0..oy0 + tr {
        for ox in 0..wo {
            let row = &mut col[((oy - oy0) * wo + ox) * k..][..k];
            for ky in 0..g.h.kernel {
                for kx in 0..kw {
                    let dst = &mut row[(ky * kw + kx) * cig..][..cig];
                    match (g.h.input_index(oy, ky), g.w.input_index(ox, kx)) {
                        (Some(y), Some(xx)) => {
                            dst.copy_from_slice(&x[(y * wi + xx) * g.ci + grp * cig..][..cig])
                        }
                        _ => dst.fill(A::zero()),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::geometry::window::{Padding, WindowAttrs};
    use crate::tensor::Dims;

    /// Runs `f` once with the NHWC Winograd core on each tile (`Tile::for_plane` overridden).
    fn each_tile(f: impl Fn()) {
        use super::super::winograd_nhwc::{Tile, FORCE_TILE};
        for tile in [Tile::F2, Tile::F3] {
            FORCE_TILE.with(|t| t.set(Some(tile)));
            f();
        }
        FORCE_TILE.with(|t| t.set(None));
    }

    /// A tensor's (n, c, h, w).
    type Nchw4 = (usize, usize, usize, usize);

    /// `v` (NCHW, `dims` = (n, c, h, w)) in NHWC order.
    fn to_nhwc<E: Copy>(v: &[E], (n, c, h, w): Nchw4) -> Vec<E> {
        let mut out = Vec::with_capacity(v.len());
        for i in 0..n {
            for p in 0..h * w {
                out.extend((0..c).map(|ch| v[(i * c + ch) * h * w + p]));
            }
        }
        out
    }

    /// `op` on NCHW `src` and on the same data in NHWC (the filter HWIO in both) give the same
    /// bits, every element (f16/bf16 NCHW run the NHWC core between two transposes: the same
    /// f32 arithmetic and one rounding; f32 the same). Random inputs in [-1, 1] rounded to `E`.
    fn same_bits_both_layouts<E: Element>(
        op: impl Fn(Layout, &[E], &[E], &mut [E]),
        (src_dims, dst_dims): (Nchw4, Nchw4),
        w_len: usize,
        what: &str,
    ) {
        let mut seed = 0x005e_ed0f_b175_u64 ^ w_len as u64;
        let mut rnd = |len: usize| -> Vec<E> {
            (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    E::from_f64(((seed >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0)
                })
                .collect()
        };
        let (sn, sc, sh, sw) = src_dims;
        let (dn, dc, dh, dw) = dst_dims;
        let (src, w) = (rnd(sn * sc * sh * sw), rnd(w_len));
        let len = dn * dc * dh * dw;
        let (mut a, mut b) = (
            vec![E::from_f64(f64::NAN); len],
            vec![E::from_f64(f64::NAN); len],
        );
        op(Layout::Nchw, &src, &w, &mut a);
        op(Layout::Nhwc, &to_nhwc(&src, src_dims), &w, &mut b);
        for (k, (x, y)) in to_nhwc(&a, dst_dims).iter().zip(&b).enumerate() {
            assert_eq!(
                x.to_f64().to_bits(),
                y.to_f64().to_bits(),
                "{what} {}: NHWC element {k}",
                E::SUFFIX
            );
        }
    }

    /// The F(2x2) row split against the padded row it stands for, for every start parity and
    /// clipping (including an empty segment and padding on both sides).
    #[test]
    fn split_padded_matches_padded_row() {
        for h in 1..8usize {
            for lo in 0..=2 * h {
                for len in 0..=2 * h - lo {
                    let seg: Vec<f32> = (0..len).map(|i| i as f32 + 1.0).collect();
                    let (mut e, mut o) = (vec![f32::NAN; h], vec![f32::NAN; h]);
                    split_padded(&seg, lo, &mut e, &mut o);
                    for x in 0..2 * h {
                        let want = if (lo..lo + len).contains(&x) {
                            seg[x - lo]
                        } else {
                            0.0
                        };
                        let got = if x.is_multiple_of(2) {
                            e[x / 2]
                        } else {
                            o[x / 2]
                        };
                        assert_eq!(
                            got.to_bits(),
                            want.to_bits(),
                            "h {h} lo {lo} len {len} x {x}"
                        );
                    }
                }
            }
        }
    }

    /// The stride-phase NCHW path against the im2col/col2im path, on shapes wider than the
    /// reference tests (channel blocks, strides above the kernel, dilations, batch 1 split).
    #[test]
    fn phase_path_matches_col2im() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut checked = 0;
        for case in 0..200 {
            let groups = [1, 1, 2, 3][next(4)];
            let cig = 1 + next(20);
            // Both sides of BAND_MIN_COG.
            let cog = if next(2) == 0 {
                1 + next(20)
            } else {
                32 + next(8)
            };
            let n = 1 + next(3);
            let input = Dims {
                n,
                c: cig * groups,
                h: 1 + next(12),
                w: 1 + next(12),
            };
            let (kh, kw) = (1 + next(4), 1 + next(4));
            let attrs = WindowAttrs {
                strides: [1 + next(4), 1 + next(4)],
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
            let dy: Vec<f64> = (0..n * g.co * g.h.output * g.w.output)
                .map(|i| ((i * 7 + case) % 13) as f64 - 6.0)
                .collect();
            let w: Vec<f64> = (0..kh * kw * cig * g.co)
                .map(|i| ((i * 5 + 3 * case) % 11) as f64 - 5.0)
                .collect();
            let len = n * g.ci * g.h.input * g.w.input;
            let (mut a, mut b) = (vec![f64::NAN; len], vec![f64::NAN; len]);
            backprop_input_nchw(&g, &dy, &w, &mut a);
            backprop_input_col2im(&g, Layout::Nchw, &dy, &w, &mut b);
            // Small integers: both sums are exact.
            assert_eq!(a, b, "case {case}: {g:?}");
            checked += 1;
        }
        assert!(checked > 50, "only {checked} valid cases");
    }

    /// Winograd F(2x2, 3x3) against the phase path (f64: agreement to rounding), on every
    /// padding, odd sizes, groups, channel blocks; the NHWC core against NHWC col2im on the
    /// same cases (f64, f32 and f16, on and off its register tiles).
    #[test]
    fn winograd_matches_phase_path() {
        each_tile(winograd_matches_phase_path_on_tile);
    }

    fn winograd_matches_phase_path_on_tile() {
        let mut bits_checked = 0;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut checked = 0;
        for case in 0..40 {
            let groups = [1, 1, 2][next(3)];
            // Every other case with dx channels a multiple of 16 (the NHWC core's register
            // tiles serve f32 and f16 there).
            let cig = if case % 2 == 0 {
                16 * (1 + next(2))
            } else {
                16 + next(24)
            };
            let cog = 16 + next(24);
            let n = 1 + next(2);
            let input = Dims {
                n,
                c: cig * groups,
                h: 2 + next(13),
                w: 2 + next(13),
            };
            let attrs = WindowAttrs {
                strides: [1, 1],
                dilations: [1, 1],
                padding: match next(3) {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[next(3), next(3)], [next(3), next(3)]]),
                },
                dim_rounding: None,
            };
            let Ok(g) = ConvGeometry::new("t", input, [3, 3, cig, cog * groups], &attrs) else {
                continue;
            };
            if !winograd_applies(&g) {
                continue;
            }
            let dy: Vec<f64> = (0..n * g.co * g.h.output * g.w.output)
                .map(|i| (((i * 7 + case) % 13) as f64 - 6.0) * 0.37)
                .collect();
            let w: Vec<f64> = (0..9 * cig * g.co)
                .map(|i| (((i * 5 + 3 * case) % 11) as f64 - 5.0) * 0.21)
                .collect();
            let len = n * g.ci * g.h.input * g.w.input;
            let (mut a, mut b) = (vec![f64::NAN; len], vec![f64::NAN; len]);
            backprop_input_winograd(&g, Layout::Nchw, &dy, &w, &mut a);
            backprop_input_nchw(&g, &dy, &w, &mut b);
            let num: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            let den: f64 = b.iter().map(|y| y * y).sum();
            assert!(
                num.sqrt() <= 1e-13 * den.sqrt().max(1.0),
                "case {case}: {g:?}"
            );
            // f32 (F(2x2) or the NHWC core's F(3x3), not F(4x4): `winograd4_serves`) stays
            // inside half the f32 tolerance (1e-5) of the f64 result: F(2x2) errs up to 5e-7
            // on these data, F(3x3) up to 3.7e-6.
            const F32_BOUND: f64 = 5e-6;
            let (dy32, w32): (Vec<f32>, Vec<f32>) = (
                dy.iter().map(|&v| v as f32).collect(),
                w.iter().map(|&v| v as f32).collect(),
            );
            let mut c = vec![f32::NAN; len];
            backprop_input_winograd(&g, Layout::Nchw, &dy32, &w32, &mut c);
            let num: f64 = c.iter().zip(&b).map(|(&x, y)| (x as f64 - y).powi(2)).sum();
            assert!(
                num.sqrt() <= F32_BOUND * den.sqrt().max(1.0),
                "f32 case {case}: {g:?}"
            );
            // f16 (accumulated in f32, rounded once) against the f64 result on f16 inputs.
            let (dyh, wh): (Vec<half::f16>, Vec<half::f16>) = (
                dy.iter().map(|&v| half::f16::from_f64(v)).collect(),
                w.iter().map(|&v| half::f16::from_f64(v)).collect(),
            );
            let (dyr, wr): (Vec<f64>, Vec<f64>) = (
                dyh.iter().map(|v| v.to_f64()).collect(),
                wh.iter().map(|v| v.to_f64()).collect(),
            );
            let mut r = vec![f64::NAN; len];
            backprop_input_nchw(&g, &dyr, &wr, &mut r);
            let mut h = vec![half::f16::NAN; len];
            backprop_input_winograd(&g, Layout::Nchw, &dyh, &wh, &mut h);
            let num: f64 = h
                .iter()
                .zip(&r)
                .map(|(x, y)| (x.to_f64() - y).powi(2))
                .sum();
            let den: f64 = r.iter().map(|y| y * y).sum();
            assert!(
                num.sqrt() <= 1e-3 * den.sqrt().max(1.0),
                "f16 case {case}: {g:?}"
            );
            // f16 and bf16 where NCHW runs the NHWC core between transposes (dx channels
            // a multiple of the register tiles' vector width): NCHW and NHWC agree bit for bit.
            let lanes =
                super::super::filter_direct::lanes(super::super::filter_direct::Level::Best);
            let via_nhwc = lanes.is_some_and(|l| cig.is_multiple_of(l) && g.ci.is_multiple_of(8));
            let dims = (
                (n, g.co, g.h.output, g.w.output),
                (n, g.ci, g.h.input, g.w.input),
            );
            let run = |l: Layout, d: &[_], w: &[_], out: &mut [_]| {
                backprop_input_winograd(&g, l, d, w, out)
            };
            let what = format!("backprop_input case {case}: {g:?}");
            if via_nhwc {
                same_bits_both_layouts::<half::f16>(run, dims, w.len(), &what);
                let run = |l: Layout, d: &[_], w: &[_], out: &mut [_]| {
                    backprop_input_winograd(&g, l, d, w, out)
                };
                same_bits_both_layouts::<half::bf16>(run, dims, w.len(), &what);
                bits_checked += 1;
            }
            // NHWC (the same data read as NHWC) against NHWC col2im: f64, f32, f16.
            let nhwc = Layout::Nhwc;
            let (mut a, mut b) = (vec![f64::NAN; len], vec![f64::NAN; len]);
            backprop_input_winograd(&g, nhwc, &dy, &w, &mut a);
            backprop_input_col2im(&g, nhwc, &dy, &w, &mut b);
            let rel = |out: &[f64], want: &[f64]| {
                let num: f64 = out.iter().zip(want).map(|(x, y)| (x - y).powi(2)).sum();
                let den: f64 = want.iter().map(|y| y * y).sum();
                num.sqrt() / den.sqrt().max(1.0)
            };
            assert!(rel(&a, &b) <= 1e-13, "NHWC case {case}: {g:?}");
            let mut c = vec![f32::NAN; len];
            backprop_input_winograd(&g, nhwc, &dy32, &w32, &mut c);
            let c: Vec<f64> = c.iter().map(|&v| v as f64).collect();
            assert!(rel(&c, &b) <= F32_BOUND, "NHWC f32 case {case}: {g:?}");
            let mut r = vec![f64::NAN; len];
            backprop_input_col2im(&g, nhwc, &dyr, &wr, &mut r);
            let mut h = vec![half::f16::NAN; len];
            backprop_input_winograd(&g, nhwc, &dyh, &wh, &mut h);
            let h: Vec<f64> = h.iter().map(|v| v.to_f64()).collect();
            assert!(rel(&h, &r) <= 1e-3, "NHWC f16 case {case}: {g:?}");
            checked += 1;
        }
        assert!(checked > 20, "only {checked} cases");
        if super::super::filter_direct::lanes(super::super::filter_direct::Level::Best).is_some() {
            assert!(bits_checked >= 4, "only {bits_checked} layout bit checks");
        }
    }

    /// The NHWC Winograd core on planes of several tile-row blocks per image (the unit cases
    /// above fit one), both ops, against NHWC col2im / im2col: f64, f32, and f16 (whose
    /// blocks convert only the source rows they read).
    #[test]
    fn winograd_nhwc_many_blocks() {
        each_tile(winograd_nhwc_many_blocks_on_tile);
    }

    fn winograd_nhwc_many_blocks_on_tile() {
        for (case, (groups, cig, cog, h, w, pad)) in [
            (1, 16, 24, 40, 37, Padding::Same),
            (2, 16, 16, 29, 44, Padding::Explicit([[2, 0], [1, 2]])),
            (1, 20, 32, 33, 33, Padding::Valid),
        ]
        .into_iter()
        .enumerate()
        {
            let input = Dims {
                n: 2,
                c: cig * groups,
                h,
                w,
            };
            let attrs = WindowAttrs {
                strides: [1, 1],
                dilations: [1, 1],
                padding: pad,
                dim_rounding: None,
            };
            let g = ConvGeometry::new("t", input, [3, 3, cig, cog * groups], &attrs).unwrap();
            assert!(winograd_applies(&g));
            let (xl, yl) = (
                2 * g.ci * g.h.input * g.w.input,
                2 * g.co * g.h.output * g.w.output,
            );
            let val = |i: usize, m: usize| (((i * 7 + case) % m) as f64 - (m / 2) as f64) * 0.37;
            let (x, dy): (Vec<f64>, Vec<f64>) = (
                (0..xl).map(|i| val(i, 13)).collect(),
                (0..yl).map(|i| val(i, 11)).collect(),
            );
            let wt: Vec<f64> = (0..9 * cig * g.co).map(|i| val(i * 5, 11) * 0.5).collect();
            let nhwc = Layout::Nhwc;
            let rel = |out: &[f64], want: &[f64]| {
                let num: f64 = out.iter().zip(want).map(|(a, b)| (a - b).powi(2)).sum();
                let den: f64 = want.iter().map(|b| b * b).sum();
                num.sqrt() / den.sqrt().max(1.0)
            };
            let h16 = |v: &[f64]| -> Vec<half::f16> {
                v.iter().map(|&a| half::f16::from_f64(a)).collect()
            };
            let back16 = |v: &[half::f16]| -> Vec<f64> { v.iter().map(|a| a.to_f64()).collect() };
            // backprop_input: dx from dy.
            let mut want = vec![f64::NAN; xl];
            backprop_input_col2im(&g, nhwc, &dy, &wt, &mut want);
            let mut got = vec![f64::NAN; xl];
            backprop_input_winograd(&g, nhwc, &dy, &wt, &mut got);
            assert!(rel(&got, &want) <= 1e-13, "case {case} input f64");
            let (dyh, wh) = (h16(&dy), h16(&wt));
            let mut want16 = vec![f64::NAN; xl];
            backprop_input_col2im(&g, nhwc, &back16(&dyh), &back16(&wh), &mut want16);
            let mut gh = vec![half::f16::NAN; xl];
            backprop_input_winograd(&g, nhwc, &dyh, &wh, &mut gh);
            assert!(rel(&back16(&gh), &want16) <= 1e-3, "case {case} input f16");
            // forward: y from x.
            let mut want = vec![0.0; yl];
            forward_col(&g, nhwc, &x, &wt, &mut want);
            let mut got = vec![f64::NAN; yl];
            forward(&g, nhwc, &x, &wt, &mut got);
            assert!(rel(&got, &want) <= 1e-13, "case {case} forward f64");
            let x32: Vec<f32> = x.iter().map(|&a| a as f32).collect();
            let w32: Vec<f32> = wt.iter().map(|&a| a as f32).collect();
            let mut g32 = vec![f32::NAN; yl];
            forward(&g, nhwc, &x32, &w32, &mut g32);
            let g32: Vec<f64> = g32.iter().map(|&a| a as f64).collect();
            assert!(rel(&g32, &want) <= 3e-6, "case {case} forward f32");
            let xh = h16(&x);
            let mut want16 = vec![0.0; yl];
            forward_col(&g, nhwc, &back16(&xh), &back16(&wh), &mut want16);
            let mut gh = vec![half::f16::NAN; yl];
            forward(&g, nhwc, &xh, &wh, &mut gh);
            assert!(
                rel(&back16(&gh), &want16) <= 1e-3,
                "case {case} forward f16"
            );
        }
    }

    /// The forward im2col from column-stride phases (NCHW, stride_w > 1) against a direct
    /// loop, on strides, dilations, paddings, groups and odd widths (small integers: exact).
    #[test]
    fn forward_split_columns_matches_direct() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut checked = 0;
        for case in 0..120 {
            let groups = [1, 2][next(2)];
            let (cig, cog) = (1 + next(5), 1 + next(5));
            let input = Dims {
                n: 1 + next(2),
                c: cig * groups,
                h: 1 + next(11),
                w: 1 + next(13),
            };
            let (kh, kw) = (1 + next(4), 1 + next(4));
            let attrs = WindowAttrs {
                strides: [1 + next(3), 2 + next(3)],
                dilations: [1 + next(2), 1 + next(3)],
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
            let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
            let x: Vec<f64> = (0..input.n * g.ci * hi * wi)
                .map(|i| ((i * 7 + case) % 13) as f64 - 6.0)
                .collect();
            let w: Vec<f64> = (0..kh * kw * cig * g.co)
                .map(|i| ((i * 5 + 3 * case) % 11) as f64 - 5.0)
                .collect();
            let mut want = vec![0.0; input.n * g.co * ho * wo];
            for n in 0..input.n {
                for co in 0..g.co {
                    let grp = co / cog;
                    for oy in 0..ho {
                        for ox in 0..wo {
                            let mut acc = 0.0;
                            for ky in 0..kh {
                                for kx in 0..kw {
                                    let (Some(y), Some(xx)) =
                                        (g.h.input_index(oy, ky), g.w.input_index(ox, kx))
                                    else {
                                        continue;
                                    };
                                    for c in 0..cig {
                                        acc += x[((n * g.ci + grp * cig + c) * hi + y) * wi + xx]
                                            * w[((ky * kw + kx) * cig + c) * g.co + co];
                                    }
                                }
                            }
                            want[((n * g.co + co) * ho + oy) * wo + ox] = acc;
                        }
                    }
                }
            }
            let mut got = vec![f64::NAN; want.len()];
            forward_col(&g, Layout::Nchw, &x, &w, &mut got);
            assert_eq!(got, want, "case {case}: {g:?}");
            checked += 1;
        }
        assert!(checked > 40, "only {checked} valid cases");
    }

    /// The direct register-tile kernels (`conv_direct.rs`; AVX-512 where present, and AVX2)
    /// against the col2im path (backprop_input) and the im2col path (forward) on integer data
    /// (every f32 sum exact: equal values): output channel counts that leave every vector
    /// remainder, widths that leave every pixel remainder (6/4/2/1 per row or phase row),
    /// strides 1-3, dilations, every padding, groups, both layouts; bf16 within one rounding.
    #[test]
    fn direct_matches_gemm_paths() {
        use super::super::conv_direct::{
            backprop_input_direct, forward_applies, forward_direct, input_applies,
        };
        use super::super::filter_direct::Level;
        let mut seed = 0x0dd_ba11_5eed_1234u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut ran = 0;
        for case in 0..120 {
            let forward = case % 2 == 1;
            let layout = if (case / 2) % 2 == 0 {
                Layout::Nchw
            } else {
                Layout::Nhwc
            };
            let groups = [1, 1, 2][next(3)];
            // The kernel's output channels (ci for backprop_input, co for the forward).
            let out_ch = [16, 32, 48, 64, 80, 8, 24][next(7)];
            let red_ch = 1 + next(20);
            let (cig, cog) = if forward {
                (red_ch, out_ch)
            } else {
                (out_ch, red_ch)
            };
            let n = 1 + next(2);
            let input = Dims {
                n,
                c: cig * groups,
                h: 1 + next(12),
                w: 1 + next(30),
            };
            let (kh, kw) = (1 + next(4), 1 + next(4));
            let attrs = WindowAttrs {
                strides: [1 + next(3), 1 + next(3)],
                dilations: [1 + next(2), 1 + next(2)],
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
            let (src_len, out_len) = {
                let (xl, yl) = (
                    n * g.ci * g.h.input * g.w.input,
                    n * g.co * g.h.output * g.w.output,
                );
                if forward {
                    (xl, yl)
                } else {
                    (yl, xl)
                }
            };
            let src: Vec<f64> = (0..src_len)
                .map(|i| ((i * 7 + case) % 13) as f64 - 6.0)
                .collect();
            let w: Vec<f64> = (0..kh * kw * cig * g.co)
                .map(|i| ((i * 5 + 3 * case) % 11) as f64 - 5.0)
                .collect();
            let mut want = vec![f64::NAN; out_len];
            if forward {
                forward_col(&g, layout, &src, &w, &mut want);
            } else {
                backprop_input_col2im(&g, layout, &src, &w, &mut want);
            }
            fn run<T: Element>(
                (forward, layout): (bool, Layout),
                g: &ConvGeometry,
                (src, w): (&[T], &[T]),
                out: &mut [T],
                level: Level,
            ) -> bool {
                if forward {
                    forward_direct(g, layout, src, w, out, level)
                } else {
                    backprop_input_direct(g, layout, src, w, out, level)
                }
            }
            for level in [Level::Best, Level::Avx2] {
                let applies = if forward {
                    forward_applies::<f32>(&g, level)
                } else {
                    input_applies::<f32>(&g, level)
                };
                if !applies {
                    continue;
                }
                let s32: Vec<f32> = src.iter().map(|&v| v as f32).collect();
                let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
                let mut got = vec![f32::NAN; out_len];
                assert!(run((forward, layout), &g, (&s32, &w32), &mut got, level));
                let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
                assert_eq!(
                    got, want,
                    "case {case} forward={forward} {layout} {level:?}: {g:?}"
                );
                let sb: Vec<half::bf16> = src.iter().map(|&v| half::bf16::from_f64(v)).collect();
                let wb: Vec<half::bf16> = w.iter().map(|&v| half::bf16::from_f64(v)).collect();
                let mut gb = vec![half::bf16::NAN; out_len];
                assert!(run((forward, layout), &g, (&sb, &wb), &mut gb, level));
                for (k, (&v, &e)) in gb.iter().zip(&want).enumerate() {
                    assert_eq!(v, half::bf16::from_f64(e), "case {case} bf16 element {k}");
                }
                ran += 1;
            }
        }
        if crate::cpu::simd::has_avx2() {
            assert!(ran > 80, "only {ran} direct runs");
        } else {
            println!("direct_matches_gemm_paths: SKIPPED (no AVX2+FMA: the direct kernels never run here)");
        }
    }

    /// bf16 on AVX512_BF16 (the `vdpbf16ps` pair tiles of `conv_direct.rs`), through the ops'
    /// routing (`backprop_input`, `forward`) on real-valued data: within one bf16 rounding of
    /// the f64 result on the same bf16 inputs (relative L2 under 4e-3; SPEC 1e-2), the same
    /// bits in both layouts and on a second run, the outputs poisoned first; the pair tiles
    /// serve every call whose reduction channels per group are even (3x3 stride 1, Winograd's
    /// shape, included) and none whose count is odd. Skips where the CPU lacks the instruction.
    #[test]
    fn bf16_pair_tiles_within_one_rounding() {
        use super::super::conv_direct::pairs_first;
        if crate::cpu::bf16_dot::Bf16Dot::new().is_none() {
            println!(
                "bf16_pair_tiles_within_one_rounding: SKIPPED (no AVX512_BF16 on this CPU, or \
                 GRADOPS_CPU_SIMD below avx512bf16: the pair tiles never run here)"
            );
            return;
        }
        let mut seed = 0xbf16_0d07_5eed_u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let (mut paired, mut odd) = (0, 0);
        for case in 0..48 {
            let forward = case % 2 == 1;
            let groups = [1, 1, 2][next(3)];
            let out_ch = [16, 32, 48, 64][next(4)];
            let red_ch = [2, 4, 6, 16, 18, 32, 64, 3, 7][next(9)];
            let (cig, cog) = if forward {
                (red_ch, out_ch)
            } else {
                (out_ch, red_ch)
            };
            // Every fourth case 3x3 stride 1 SAME (the Winograd shape); the rest anything.
            let wino = case % 4 == 0;
            let (kh, kw) = if wino {
                (3, 3)
            } else {
                (1 + next(4), 1 + next(4))
            };
            let attrs = WindowAttrs {
                strides: if wino {
                    [1, 1]
                } else {
                    [1 + next(3), 1 + next(3)]
                },
                dilations: if wino {
                    [1, 1]
                } else {
                    [1 + next(2), 1 + next(2)]
                },
                padding: match if wino { 0 } else { next(3) } {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[next(3), next(3)], [next(3), next(3)]]),
                },
                dim_rounding: None,
            };
            let n = 1 + next(2);
            let input = Dims {
                n,
                c: cig * groups,
                h: 1 + next(10),
                w: 1 + next(24),
            };
            let Ok(g) = ConvGeometry::new("t", input, [kh, kw, cig, cog * groups], &attrs) else {
                continue;
            };
            let x_dims = (n, g.ci, g.h.input, g.w.input);
            let y_dims = (n, g.co, g.h.output, g.w.output);
            let (src_dims, dst_dims) = if forward {
                (x_dims, y_dims)
            } else {
                (y_dims, x_dims)
            };
            let len = |(a, b, c, d): Nchw4| a * b * c * d;
            let mut rnd = |k: usize| -> Vec<half::bf16> {
                (0..k)
                    .map(|_| half::bf16::from_f64(next(20001) as f64 / 10000.0 - 1.0))
                    .collect()
            };
            let (src, w) = (rnd(len(src_dims)), rnd(kh * kw * cig * g.co));
            let wide = |v: &[half::bf16]| v.iter().map(|v| v.to_f64()).collect::<Vec<f64>>();
            let mut exact = vec![f64::NAN; len(dst_dims)];
            let run = |layout: Layout, s: &[half::bf16], out: &mut [half::bf16]| {
                if forward {
                    super::forward(&g, layout, s, &w, out)
                } else {
                    super::backprop_input(&g, layout, s, &w, out)
                }
            };
            if forward {
                forward_col(&g, Layout::Nchw, &wide(&src), &wide(&w), &mut exact);
            } else {
                backprop_input_col2im(&g, Layout::Nchw, &wide(&src), &wide(&w), &mut exact);
            }
            let mut got = vec![half::bf16::NAN; exact.len()];
            run(Layout::Nchw, &src, &mut got);
            let (mut err, mut norm) = (0f64, 0f64);
            for (&v, &e) in got.iter().zip(&exact) {
                err += (v.to_f64() - e).powi(2);
                norm += e * e;
            }
            let rel = (err / norm.max(1e-300)).sqrt();
            assert!(rel < 4e-3, "case {case}: relative L2 {rel:e}: {g:?}");
            let mut again = vec![half::bf16::NAN; exact.len()];
            run(Layout::Nchw, &src, &mut again);
            let mut nhwc = vec![half::bf16::NAN; exact.len()];
            run(Layout::Nhwc, &to_nhwc(&src, src_dims), &mut nhwc);
            let bits = |v: &[half::bf16]| v.iter().map(|v| v.to_bits()).collect::<Vec<u16>>();
            assert_eq!(bits(&again), bits(&got), "case {case}: second run");
            assert_eq!(
                bits(&nhwc),
                bits(&to_nhwc(&got, dst_dims)),
                "case {case}: NHWC against NCHW"
            );
            let takes = pairs_first::<half::bf16>(red_ch);
            assert_eq!(takes, red_ch % 2 == 0, "case {case}: red_ch {red_ch}");
            if takes {
                paired += 1;
            } else {
                odd += 1;
            }
        }
        assert!(paired > 25 && odd > 3, "{paired} paired, {odd} odd calls");
    }

    /// The stride-2 phase Winograd input gradient (`phase_winograd.rs`) against the col2im
    /// path, exactly (integer data: every transform coefficient is +-1): every padding parity,
    /// odd and even phase lengths, groups, channel blocks with remainders; both SIMD levels;
    /// both layouts; bf16.
    #[test]
    fn phase_winograd_matches_col2im() {
        use super::super::filter_direct::Level;
        use super::super::phase_winograd::{applies, backprop_input_phase_winograd};
        let mut seed = 0x5eed_0f2b_10c5_u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut ran = 0;
        for case in 0..60 {
            let layout = if case % 2 == 0 {
                Layout::Nchw
            } else {
                Layout::Nhwc
            };
            let groups = [1, 1, 2][next(3)];
            let cig = [16, 32, 48, 64, 80, 8, 24][next(7)];
            let cog = 1 + next(20);
            let n = 1 + next(2);
            let input = Dims {
                n,
                c: cig * groups,
                h: 2 + next(14),
                w: 2 + next(30),
            };
            let attrs = WindowAttrs {
                strides: [2, 2],
                dilations: [1, 1],
                padding: match next(3) {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[next(3), next(3)], [next(3), next(3)]]),
                },
                dim_rounding: None,
            };
            let Ok(g) = ConvGeometry::new("t", input, [3, 3, cig, cog * groups], &attrs) else {
                continue;
            };
            let dy: Vec<f64> = (0..n * g.co * g.h.output * g.w.output)
                .map(|i| ((i * 7 + case) % 13) as f64 - 6.0)
                .collect();
            let w: Vec<f64> = (0..9 * cig * g.co)
                .map(|i| ((i * 5 + 3 * case) % 11) as f64 - 5.0)
                .collect();
            let dx_len = n * g.ci * g.h.input * g.w.input;
            let mut want = vec![f64::NAN; dx_len];
            backprop_input_col2im(&g, layout, &dy, &w, &mut want);
            for level in [Level::Best, Level::Avx2] {
                if !applies::<f32>(&g, level) {
                    continue;
                }
                let d32: Vec<f32> = dy.iter().map(|&v| v as f32).collect();
                let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
                let mut got = vec![f32::NAN; dx_len];
                assert!(backprop_input_phase_winograd(
                    &g, layout, &d32, &w32, &mut got, level
                ));
                let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
                assert_eq!(got, want, "case {case} {layout} {level:?}: {g:?}");
                let db: Vec<half::bf16> = dy.iter().map(|&v| half::bf16::from_f64(v)).collect();
                let wb: Vec<half::bf16> = w.iter().map(|&v| half::bf16::from_f64(v)).collect();
                let mut gb = vec![half::bf16::NAN; dx_len];
                assert!(backprop_input_phase_winograd(
                    &g, layout, &db, &wb, &mut gb, level
                ));
                for (k, (&v, &e)) in gb.iter().zip(&want).enumerate() {
                    assert_eq!(v, half::bf16::from_f64(e), "case {case} bf16 element {k}");
                }
                // Real-valued data: the transforms' rounding stays far inside the SPEC's f32
                // tolerance (relative L2 1e-5).
                let dr: Vec<f64> = (0..dy.len())
                    .map(|_| next(2001) as f64 / 1000.0 - 1.0)
                    .collect();
                let wr: Vec<f64> = (0..w.len())
                    .map(|_| next(2001) as f64 / 1000.0 - 1.0)
                    .collect();
                let mut exact = vec![f64::NAN; dx_len];
                backprop_input_col2im(&g, layout, &dr, &wr, &mut exact);
                let d32: Vec<f32> = dr.iter().map(|&v| v as f32).collect();
                let w32: Vec<f32> = wr.iter().map(|&v| v as f32).collect();
                let mut got = vec![f32::NAN; dx_len];
                assert!(backprop_input_phase_winograd(
                    &g, layout, &d32, &w32, &mut got, level
                ));
                let (mut err, mut norm) = (0f64, 0f64);
                for (&v, &e) in got.iter().zip(&exact) {
                    err += (v as f64 - e).powi(2);
                    norm += e * e;
                }
                let rel = (err / norm.max(1e-300)).sqrt();
                assert!(rel < 1e-6, "case {case}: relative L2 {rel:e}");
                ran += 1;
            }
        }
        if crate::cpu::simd::has_avx2() {
            assert!(ran > 60, "only {ran} phase Winograd runs");
        } else {
            println!(
                "phase_winograd_matches_col2im: SKIPPED (no AVX2+FMA: the kernel never runs here)"
            );
        }
    }

    /// The forward with F(2,2) along x (`forward_row_winograd`, kernels 3 wide of column
    /// stride 2; along y too for a third of the cases, 3 high of row stride 2) against the
    /// im2col path, exactly on integer data: random kernel heights, row strides and dilations,
    /// paddings, odd and even widths, groups, channel-block remainders;
    /// both SIMD levels; both layouts; bf16; and within 1e-6 relative L2 on real-valued data.
    #[test]
    fn forward_row_winograd_matches_im2col() {
        use super::super::filter_direct::Level;
        use super::super::phase_winograd::{forward_row_applies, forward_row_winograd};
        let mut seed = 0x0f0e_2b10_c5d1_u64;
        let mut next = |m: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % m as u64) as usize
        };
        let mut ran = 0;
        for case in 0..60 {
            let layout = if case % 2 == 0 {
                Layout::Nchw
            } else {
                Layout::Nhwc
            };
            let groups = [1, 1, 2][next(3)];
            let cog = [16, 32, 48, 64, 80, 8, 24][next(7)];
            let cig = 1 + next(20);
            let n = 1 + next(2);
            let input = Dims {
                n,
                c: cig * groups,
                h: 1 + next(12),
                w: 2 + next(30),
            };
            // Every third case 3 high of row stride 2, dilation 1: F(2,2) along y too.
            let both = case % 3 == 0;
            let kh = if both { 3 } else { 1 + next(4) };
            let attrs = WindowAttrs {
                strides: [if both { 2 } else { 1 + next(3) }, 2],
                dilations: [if both { 1 } else { 1 + next(2) }, 1],
                padding: match next(3) {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[next(3), next(3)], [next(3), next(3)]]),
                },
                dim_rounding: None,
            };
            let Ok(g) = ConvGeometry::new("t", input, [kh, 3, cig, cog * groups], &attrs) else {
                continue;
            };
            let xl = n * g.ci * g.h.input * g.w.input;
            let yl = n * g.co * g.h.output * g.w.output;
            let exact = |x: &[f64], w: &[f64]| {
                let mut want = vec![f64::NAN; yl];
                forward_col(&g, layout, x, w, &mut want);
                want
            };
            let x: Vec<f64> = (0..xl)
                .map(|i| ((i * 7 + case) % 13) as f64 - 6.0)
                .collect();
            let w: Vec<f64> = (0..kh * 3 * cig * g.co)
                .map(|i| ((i * 5 + 3 * case) % 11) as f64 - 5.0)
                .collect();
            let want = exact(&x, &w);
            for level in [Level::Best, Level::Avx2] {
                if !forward_row_applies::<f32>(&g, level) {
                    continue;
                }
                let x32: Vec<f32> = x.iter().map(|&v| v as f32).collect();
                let w32: Vec<f32> = w.iter().map(|&v| v as f32).collect();
                let mut got = vec![f32::NAN; yl];
                assert!(forward_row_winograd(
                    &g, layout, &x32, &w32, &mut got, level
                ));
                let got: Vec<f64> = got.iter().map(|&v| v as f64).collect();
                assert_eq!(got, want, "case {case} {layout} {level:?}: {g:?}");
                let xb: Vec<half::bf16> = x.iter().map(|&v| half::bf16::from_f64(v)).collect();
                let wb: Vec<half::bf16> = w.iter().map(|&v| half::bf16::from_f64(v)).collect();
                let mut gb = vec![half::bf16::NAN; yl];
                assert!(forward_row_winograd(&g, layout, &xb, &wb, &mut gb, level));
                for (k, (&v, &e)) in gb.iter().zip(&want).enumerate() {
                    assert_eq!(v, half::bf16::from_f64(e), "case {case} bf16 element {k}");
                }
                let xr: Vec<f64> = (0..xl).map(|_| next(2001) as f64 / 1000.0 - 1.0).collect();
                let wr: Vec<f64> = (0..w.len())
                    .map(|_| next(2001) as f64 / 1000.0 - 1.0)
                    .collect();
                let reference = exact(&xr, &wr);
                let x32: Vec<f32> = xr.iter().map(|&v| v as f32).collect();
                let w32: Vec<f32> = wr.iter().map(|&v| v as f32).collect();
                let mut got = vec![f32::NAN; yl];
                assert!(forward_row_winograd(
                    &g, layout, &x32, &w32, &mut got, level
                ));
                let (mut err, mut norm) = (0f64, 0f64);
                for (&v, &e) in got.iter().zip(&reference) {
                    err += (v as f64 - e).powi(2);
                    norm += e * e;
                }
                let rel = (err / norm.max(1e-300)).sqrt();
                assert!(rel < 1e-6, "case {case}: relative L2 {rel:e}");
                ran += 1;
            }
        }
        if crate::cpu::simd::has_avx2() {
            assert!(ran > 60, "only {ran} row-Winograd forward runs");
        } else {
            println!("forward_row_winograd_matches_im2col: SKIPPED (no AVX2+FMA: the kernel never runs here)");
        }
    }

    /// Forward Winograd against the forward im2col path, both layouts (f64; f32 within its
    /// tolerance).
    #[test]
    fn forward_winograd_matches_im2col() {
        each_tile(forward_winograd_matches_im2col_on_tile);
    }

    fn forward_winograd_matches_im2col_on_tile() {
        let (mut checked, mut bits_checked) = (0, 0);
        for case in 0..24usize {
            // Output channels 16 or 32 in every third case (the NHWC core's register tiles).
            let cog = if case % 3 == 0 {
                16 * (1 + case % 2)
            } else {
                16 + (case * 7) % 9
            };
            let cig = 16 + case % 5;
            let groups = 1 + case % 2;
            let input = Dims {
                n: 1 + case % 2,
                c: cig * groups,
                h: 3 + (case * 5) % 11,
                w: 3 + (case * 3) % 13,
            };
            let attrs = WindowAttrs {
                strides: [1, 1],
                dilations: [1, 1],
                padding: match case % 3 {
                    0 => Padding::Same,
                    1 => Padding::Valid,
                    _ => Padding::Explicit([[case % 3, 2], [1, case % 2]]),
                },
                dim_rounding: None,
            };
            let Ok(g) = ConvGeometry::new("t", input, [3, 3, cig, cog * groups], &attrs) else {
                continue;
            };
            assert!(winograd_applies(&g));
            let x: Vec<f64> = (0..input.n * g.ci * g.h.input * g.w.input)
                .map(|i| (((i * 7 + case) % 13) as f64 - 6.0) * 0.37)
                .collect();
            let w: Vec<f64> = (0..9 * cig * g.co)
                .map(|i| (((i * 5 + 3 * case) % 11) as f64 - 5.0) * 0.21)
                .collect();
            let len = input.n * g.co * g.h.output * g.w.output;
            for layout in [Layout::Nchw, Layout::Nhwc] {
                let (mut a, mut b) = (vec![f64::NAN; len], vec![0.0; len]);
                forward(&g, layout, &x, &w, &mut a);
                forward_col(&g, layout, &x, &w, &mut b);
                let num: f64 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
                let den: f64 = b.iter().map(|y| y * y).sum();
                assert!(
                    num.sqrt() <= 1e-13 * den.sqrt().max(1.0),
                    "{layout} case {case}: {g:?}"
                );
                // f32 (NHWC on the register tiles where cog is a multiple of the vector width).
                let (x32, w32): (Vec<f32>, Vec<f32>) = (
                    x.iter().map(|&v| v as f32).collect(),
                    w.iter().map(|&v| v as f32).collect(),
                );
                let mut c = vec![f32::NAN; len];
                forward(&g, layout, &x32, &w32, &mut c);
                let num: f64 = c.iter().zip(&b).map(|(&x, y)| (x as f64 - y).powi(2)).sum();
                assert!(
                    num.sqrt() <= 3e-6 * den.sqrt().max(1.0),
                    "{layout} f32 case {case}: {g:?}"
                );
            }
            let dims = (
                (input.n, g.ci, g.h.input, g.w.input),
                (input.n, g.co, g.h.output, g.w.output),
            );
            let what = format!("forward case {case}: {g:?}");
            // As in `winograd_matches_phase_path`: where NCHW runs the NHWC core.
            let lanes =
                super::super::filter_direct::lanes(super::super::filter_direct::Level::Best);
            if lanes.is_some_and(|l| cog.is_multiple_of(l) && g.co.is_multiple_of(8)) {
                bits_checked += 1;
                same_bits_both_layouts::<half::f16>(
                    |l, x, w, y| forward(&g, l, x, w, y),
                    dims,
                    w.len(),
                    &what,
                );
                same_bits_both_layouts::<half::bf16>(
                    |l, x, w, y| forward(&g, l, x, w, y),
                    dims,
                    w.len(),
                    &what,
                );
            }
            checked += 1;
        }
        assert!(checked > 12, "only {checked} cases");
        if super::super::filter_direct::lanes(super::super::filter_direct::Level::Best).is_some() {
            assert!(bits_checked >= 4, "only {bits_checked} layout bit checks");
        }
    }
}

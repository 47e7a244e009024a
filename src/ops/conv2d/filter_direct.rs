//! CPU `conv2d_backprop_filter` in f32 registers without im2col, either layout: `dW[(ky, kx, c),
//! co] += x[c][y(oy, ky)][s ox + kx d - left] * dy[co][oy][ox]` as register tiles of `R` filter
//! rows (one tap, `R` channels) by up to four vectors of output channels, accumulated over
//! output pixels.
//!
//! Why not the GEMM path: in NCHW both operands of `im2col(x)^T * dy` have the pixels (the
//! reduction) contiguous, so the GEMM needs `x` copied into nine column blocks and then packed
//! again, and `dy` packed per tile; in NHWC the column blocks are copies too (a tenth of W8's
//! time, one thread). Here the `x` operand is one element broadcast per filter row and pixel
//! (a tap's pixels whose input column lies in the padding are skipped, their products being
//! zero), read in place in NCHW (at the column stride) and in NHWC packed per unit and tap
//! (its pixels' channels, consecutive pixels); `dy`'s output channels of a pixel are loaded as
//! vectors: NHWC `dy` packed per unit into a block's output channels of consecutive pixels,
//! NCHW `dy` transposed once per image into such pixel-major blocks.
//!
//! (An earlier NHWC version transposed `x` to channel-major and re-blocked `dy` per image for
//! the NCHW tiles: slower than the GEMM path, 4.75-4.81 against 4.37-4.61 ms on one Zen 5
//! thread. The tiles now take either layout's strides.)
//!
//! bf16 where the CPU has AVX512_BF16 (`SimdLevel::Avx512Bf16`): the same units (larger:
//! [`PAIR_UNIT_PIXELS`]) on pair tiles ([`Unit::run_pairs`]; both images' bf16 bits made
//! NHWC once per image, no f32 copy), the reduction over output pixels taken two consecutive
//! columns at a time, one `vdpbf16ps` per filter row, pixel pair and vector, both operands
//! packed as pairs once per unit; routed ahead of the Winograd F(3x3, 2x2) path
//! ([`pairs_first`]).
//!
//! Determinism: the same fixed (image, row tile) ranges and range-ordered sum of partial
//! filters as the GEMM path; within a range, pixels are added in order (pairs in order).

#[cfg(target_arch = "x86_64")]
use super::conv_direct::bf16_pairs;
use super::conv_direct::{scratch_as, with_scratch};
use super::filter_kernel::FilterSplit;
use super::filter_kernel::{store_filter, sum_partials};
#[cfg(target_arch = "x86_64")]
use crate::cpu::bf16_dot::{pair, Bf16Dot};
use crate::cpu::simd::simd_fn;
use crate::dtype::{Accum, DType, Element};
use crate::geometry::window::ConvGeometry;
use crate::ops::conv2d::FilterLayout;
use crate::tensor::Layout;
use pulp::Simd;
use rayon::prelude::*;

/// Filter rows per register tile (with 4 vectors of 16 output channels: 24 accumulators of
/// AVX-512's 32 registers; with 2 vectors of 8 for AVX2: 12 of 16).
const R: usize = 6;

/// Output rows per unit: a unit's `dy` columns for one vector block (`rows * wo` pixels of
/// `4 x 16` floats) stay within about 32 KiB of L1.
const UNIT_PIXELS: usize = 128;

/// Output rows per unit of the pair path ([`Unit::run_pairs`]): its tiles' sums are loaded
/// and stored once per tap, channel tile and unit, and the partial filter they live in
/// (W7's 147 KB) is not in L1; at 128 pixels those loads and stores were about 7% of W7's
/// tile function. 256 ran one-thread NHWC W7 4.7-4.9 ms against 5.1-5.3, 512 as 256
/// (`bench/results/2026-12-07f-cpu-zen5-bf16-packing/unit-size-ab.txt`).
const PAIR_UNIT_PIXELS: usize = 256;

/// Whether the direct kernel serves this call: f32 accumulation,
/// column stride 1 or 2, an x86 CPU with AVX2+FMA or AVX-512, and output channels per group a
/// multiple of the vector width.
pub(super) fn applies<T: Element>(g: &ConvGeometry, level: Level) -> bool {
    // Empty sums and empty filters go to the general path.
    let nonempty = [
        g.n, g.ci, g.co, g.h.output, g.w.output, g.h.kernel, g.w.kernel,
    ];
    T::Acc::as_f32(&[]).is_some()
        && nonempty.iter().all(|&d| d > 0)
        && g.h.input * g.w.input > 0
        && matches!(g.w.stride, 1 | 2)
        && lanes(level).is_some_and(|l| (g.co / g.groups).is_multiple_of(l))
}

/// Which instruction set the kernel may use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    /// The best level allowed: the CPU's, under `GRADOPS_CPU_SIMD` (AVX-512, else AVX2+FMA).
    Best,
    /// AVX2+FMA even where AVX-512 is present and allowed (tests cover that path on any x86
    /// machine; `GRADOPS_CPU_SIMD=scalar` turns it off as well).
    #[cfg_attr(not(test), allow(dead_code))]
    Avx2,
}

impl Level {
    /// Runs `op` at this level (nothing where the CPU lacks it: [`lanes`] is `None` there and
    /// the callers check it first).
    pub(super) fn dispatch<Op: pulp::WithSimd<Output = ()>>(self, op: Op) {
        match self {
            Level::Best => crate::cpu::simd::Arch::new().dispatch(op),
            #[cfg(target_arch = "x86_64")]
            Level::Avx2 => {
                if let Some(simd) = crate::cpu::simd::avx2() {
                    <pulp::x86::V3 as Simd>::vectorize(simd, op)
                }
            }
            #[cfg(not(target_arch = "x86_64"))]
            Level::Avx2 => {}
        }
    }
}

/// The f32 vector width the kernel would run at, if the CPU has a level it is built for.
pub(super) fn lanes(level: Level) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if level == Level::Best && crate::cpu::simd::avx512().is_some() {
            return Some(16);
        }
        if crate::cpu::simd::avx2().is_some() {
            return Some(8);
        }
    }
    let _ = level;
    None
}

/// The split for the direct kernel: units of whole output rows, about [`UNIT_PIXELS`] each
/// ([`PAIR_UNIT_PIXELS`] on the pair path).
pub(super) fn split<T: Element>(g: &ConvGeometry) -> FilterSplit {
    let px = if pairs_first::<T>() {
        PAIR_UNIT_PIXELS
    } else {
        UNIT_PIXELS
    };
    let rows = (px / g.w.output.max(1)).clamp(1, g.h.output.max(1));
    FilterSplit::with_rows(g, rows)
}

/// `dw` (`filter_layout` order) from `x` and `dy` (both in `layout`); [`applies`] must hold
/// (else `dw` is left alone and `false` returned).
#[allow(clippy::too_many_arguments)]
pub(super) fn backprop_filter_direct<T: Element>(
    g: &ConvGeometry,
    layout: Layout,
    x: &[T],
    dy: &[T],
    filter_layout: FilterLayout,
    dw: &mut [T],
    split: FilterSplit,
    level: Level,
) -> bool {
    if !applies::<T>(g, level) {
        return false;
    }
    let flen = g.h.kernel * g.w.kernel * (g.ci / g.groups) * g.co;
    let Some(lanes) = lanes(level) else {
        return false;
    };
    let nb = vectors(lanes) * lanes;
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (ximg, np) = (g.ci * hi * wi, ho * wo);
    let dyimg = g.co * np;
    #[cfg(target_arch = "x86_64")]
    let pairs = pair_dot::<T>(level);
    // The partial filters in this thread's scratch, each zeroed by the job that fills it (a
    // fresh zeroed vector per call was a 2.4 MB memset on W8, 5% of a one-thread call).
    with_scratch(|[partials]| {
        partials.resize(split.splits * flen, 0.0);
        partials
            .par_chunks_mut(flen)
            .enumerate()
            .for_each(|(s, part)| {
                part.fill(0.0);
                with_scratch(|[xav, dyav]| {
                    let mut scratch = UnitScratch::default();
                    #[cfg(target_arch = "x86_64")]
                    if let Some(dot) = pairs {
                        // The pair tiles' packing reads NHWC bf16 bits, once per image: NHWC
                        // copied (read in place, from memory, the packing ran W8 0.9x of the
                        // widened copy; from this L2-resident copy 1.05x), NCHW transposed as
                        // channel pairs (widened first, the transposes moved twice the bytes).
                        let (mut cur, mut xb, mut dyb): (usize, &[u16], &[u16]) =
                            (usize::MAX, &[], &[]);
                        for unit in split.range(g.n, s) {
                            let (i, t) = (unit / split.tiles, unit % split.tiles);
                            if cur != i {
                                let (xi, dyi) = (&x[i * ximg..][..ximg], &dy[i * dyimg..][..dyimg]);
                                (xb, dyb) = match layout {
                                    Layout::Nhwc => {
                                        (copy_bits(xi, &mut *xav), copy_bits(dyi, &mut *dyav))
                                    }
                                    Layout::Nchw => (
                                        nhwc_bits(xi, (g.ci, hi, wi), &mut *xav),
                                        nhwc_bits(dyi, (g.co, ho, wo), &mut *dyav),
                                    ),
                                };
                                cur = i;
                            }
                            let oy0 = t * split.rows;
                            let unit = Unit {
                                g,
                                layout: Layout::Nhwc,
                                x: &[],
                                dyt: &[],
                                oy: (oy0, split.rows.min(ho - oy0)),
                                part: &mut *part,
                                scratch: &mut scratch,
                                bits: (xb, dyb),
                                pairs: Some(dot),
                            };
                            unit.run(level);
                        }
                        return;
                    }
                    let (Some(xa), Some(dya)) = (
                        // f32 `x` needs no copy.
                        scratch_as::<T::Acc>(
                            xav,
                            if T::as_acc_slice(&x[..0]).is_some() {
                                0
                            } else {
                                ximg
                            },
                        ),
                        // NHWC f32 `dy` is read in place.
                        scratch_as::<T::Acc>(
                            dyav,
                            if layout == Layout::Nhwc && T::as_acc_slice(&dy[..0]).is_some() {
                                0
                            } else {
                                dyimg
                            },
                        ),
                    ) else {
                        return;
                    };
                    let mut cur = usize::MAX;
                    for unit in split.range(g.n, s) {
                        let (i, t) = (unit / split.tiles, unit % split.tiles);
                        let xi = &x[i * ximg..][..ximg];
                        if cur != i {
                            // f32 `x` is read in place; f16/bf16 converted once per image.
                            if T::as_acc_slice(xi).is_none() {
                                T::slice_to_acc(xi, xa);
                            }
                            let dyi = &dy[i * dyimg..][..dyimg];
                            match layout {
                                Layout::Nchw => block_transpose_into::<T>(
                                    dyi,
                                    (g.co, g.co / g.groups, np, nb),
                                    dya,
                                ),
                                // NHWC `dy` is read in place (f16/bf16 converted once per image).
                                Layout::Nhwc if T::as_acc_slice(dyi).is_none() => {
                                    T::slice_to_acc(dyi, dya)
                                }
                                Layout::Nhwc => {}
                            }
                            cur = i;
                        }
                        let dyi = &dy[i * dyimg..][..dyimg];
                        let dy_acc = match layout {
                            Layout::Nhwc => T::as_acc_slice(dyi).unwrap_or(dya),
                            Layout::Nchw => dya,
                        };
                        let (Some(xf), Some(dyt)) = (
                            T::Acc::as_f32(T::as_acc_slice(xi).unwrap_or(xa)),
                            T::Acc::as_f32(dy_acc),
                        ) else {
                            return;
                        };
                        let oy0 = t * split.rows;
                        let unit = Unit {
                            g,
                            layout,
                            x: xf,
                            dyt,
                            oy: (oy0, split.rows.min(ho - oy0)),
                            part: &mut *part,
                            scratch: &mut scratch,
                            #[cfg(target_arch = "x86_64")]
                            bits: (&[], &[]),
                            #[cfg(target_arch = "x86_64")]
                            pairs: None,
                        };
                        unit.run(level);
                    }
                })
            });
        sum_partials(partials, flen);
        // The summed partial is the HWIO filter (only f32 accumulation reaches here:
        // [`applies`]).
        if let Some(hwio) = T::Acc::from_f32_mut(&mut partials[..flen]) {
            store_filter(g, hwio, filter_layout, dw);
        }
    });
    true
}

/// Output-channel vectors per register tile at `lanes` f32 lanes (see [`R`]).
const fn vectors(lanes: usize) -> usize {
    if lanes >= 16 {
        4
    } else {
        2
    }
}

simd_fn! {
    /// `dy` of one image (`ch x np`, channel-major) in blocks of `nb` channels per group (`cg`
    /// per group): block `(grp, cb)` at `(grp cg + cb) np`, pixel-major (`dst[..][p][j] =
    /// src[grp cg + cb + j][p]`), so a register tile's output channels of consecutive pixels are
    /// consecutive vectors.
    fn block_transpose_into<T: Element>(
        src: &[T],
        (ch, cg, np, nb): (usize, usize, usize, usize),
        dst: &mut [T::Acc],
    ) {
        #[cfg(target_arch = "x86_64")]
        let avx = crate::cpu::simd::avx2();
        #[cfg(not(target_arch = "x86_64"))]
        let avx: Option<()> = None;
        let p8 = np / 8 * 8;
        let mut wide: Vec<T::Acc> = Vec::new();
        for c0 in (0..ch).step_by(cg) {
            for cb in (0..cg).step_by(nb) {
                let w = nb.min(cg - cb);
                let (sb, db) = (&src[(c0 + cb) * np..], &mut dst[(c0 + cb) * np..][..w * np]);
                // `w` is a multiple of the vector width, so of 8.
                for j0 in (0..w).step_by(8) {
                    // The 8 channel rows as f32 for the transposes: in place, or (f16/bf16)
                    // widened first, one vectorised conversion a row (element by element in
                    // the portable block they cost bf16 W8 NCHW about a tenth).
                    let rows8: Option<&[f32]> = match T::as_acc_slice(sb).and_then(T::Acc::as_f32)
                    {
                        Some(f) => Some(&f[j0 * np..]),
                        None if avx.is_some() => {
                            wide.resize(8 * np, num_traits::Zero::zero());
                            for (j, r) in wide.chunks_exact_mut(np).enumerate() {
                                T::slice_to_acc(&sb[(j0 + j) * np..][..np], r);
                            }
                            T::Acc::as_f32(&wide)
                        }
                        None => None,
                    };
                    #[cfg(not(target_arch = "x86_64"))]
                    let _ = rows8;
                    for p0 in (0..p8).step_by(8) {
                        let (s, d) = (&sb[j0 * np + p0..], &mut db[p0 * w + j0..]);
                        #[cfg(target_arch = "x86_64")]
                        if let (Some(simd), Some(sf), Some(df)) =
                            (avx, rows8, T::Acc::as_f32_mut(d))
                        {
                            transpose8_avx(simd, &sf[p0..], np, df, w);
                            continue;
                        }
                        transpose8_with(s, np, d, w, |v: T| v.to_acc());
                    }
                    for p in p8..np {
                        for j in j0..j0 + 8 {
                            db[p * w + j] = sb[j * np + p].to_acc();
                        }
                    }
                }
            }
        }
    }
}

/// `d[j * ld + i] = s[i * ls + j]` for one 8x8 f32 block in AVX registers (unpack, shuffle,
/// 128-bit permute: the compiler does not find this from [`transpose8_with`]'s arrays, which
/// it scalarises).
/// Inlined into callers compiled with AVX (a [`simd_fn!`] body or a pulp `vectorize`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn transpose8_avx(simd: pulp::x86::V3, s: &[f32], ls: usize, d: &mut [f32], ld: usize) {
    transpose8_avx_cols(simd, s, ls, d, ld, 8)
}

/// [`transpose8_avx`] for the block's first `cols` columns of `s` (the rows `j < cols` of
/// `d`): the loads still read 8 columns of each row (the caller keeps them inside `s`), the
/// stores write only the `cols` rows; for a row's last columns when they are fewer than 8.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn transpose8_avx_cols(
    simd: pulp::x86::V3,
    s: &[f32],
    ls: usize,
    d: &mut [f32],
    ld: usize,
    cols: usize,
) {
    use core::arch::x86_64::__m256;
    use pulp::bytemuck::cast;
    let r: [__m256; 8] = std::array::from_fn(|i| {
        let mut a = [0f32; 8];
        a.copy_from_slice(&s[i * ls..][..8]);
        cast::<[f32; 8], __m256>(a)
    });
    let o = transpose8_regs(simd, r);
    for (j, v) in o.iter().enumerate().take(cols) {
        d[j * ld..][..8].copy_from_slice(&cast::<__m256, [f32; 8]>(*v));
    }
}

/// The 8x8 transpose of [`transpose8_avx`] on registers: `o[j]` lane `i` is `r[i]` lane `j`
/// (any 32-bit lanes: the bits move, nothing is computed).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn transpose8_regs(
    simd: pulp::x86::V3,
    r: [core::arch::x86_64::__m256; 8],
) -> [core::arch::x86_64::__m256; 8] {
    let avx = simd.avx;
    let t = [
        avx._mm256_unpacklo_ps(r[0], r[1]),
        avx._mm256_unpackhi_ps(r[0], r[1]),
        avx._mm256_unpacklo_ps(r[2], r[3]),
        avx._mm256_unpackhi_ps(r[2], r[3]),
        avx._mm256_unpacklo_ps(r[4], r[5]),
        avx._mm256_unpackhi_ps(r[4], r[5]),
        avx._mm256_unpacklo_ps(r[6], r[7]),
        avx._mm256_unpackhi_ps(r[6], r[7]),
    ];
    let u = [
        avx._mm256_shuffle_ps::<0x44>(t[0], t[2]),
        avx._mm256_shuffle_ps::<0xEE>(t[0], t[2]),
        avx._mm256_shuffle_ps::<0x44>(t[1], t[3]),
        avx._mm256_shuffle_ps::<0xEE>(t[1], t[3]),
        avx._mm256_shuffle_ps::<0x44>(t[4], t[6]),
        avx._mm256_shuffle_ps::<0xEE>(t[4], t[6]),
        avx._mm256_shuffle_ps::<0x44>(t[5], t[7]),
        avx._mm256_shuffle_ps::<0xEE>(t[5], t[7]),
    ];
    [
        avx._mm256_permute2f128_ps::<0x20>(u[0], u[4]),
        avx._mm256_permute2f128_ps::<0x20>(u[1], u[5]),
        avx._mm256_permute2f128_ps::<0x20>(u[2], u[6]),
        avx._mm256_permute2f128_ps::<0x20>(u[3], u[7]),
        avx._mm256_permute2f128_ps::<0x31>(u[0], u[4]),
        avx._mm256_permute2f128_ps::<0x31>(u[1], u[5]),
        avx._mm256_permute2f128_ps::<0x31>(u[2], u[6]),
        avx._mm256_permute2f128_ps::<0x31>(u[3], u[7]),
    ]
}

/// One 8x8 block: `d[j * ld + i] = f(s[i * ls + j])` (the portable path; inlined into callers
/// that bring their own target features).
#[inline(always)]
pub(super) fn transpose8_with<S: Copy, D: Copy>(
    s: &[S],
    ls: usize,
    d: &mut [D],
    ld: usize,
    f: impl Fn(S) -> D,
) {
    // Plain loops: `f` inside `array::from_fn`'s closures was not inlined (a call per
    // element, seen in f16/bf16 profiles).
    for j in 0..8 {
        let out = &mut d[j * ld..][..8];
        for (i, o) in out.iter_mut().enumerate() {
            *o = f(s[i * ls + j]);
        }
    }
}

/// One (image, row tile) unit, added to its range's partial filter. Not generic over the
/// element type, so the register tiles are compiled once, here, whoever calls the op.
struct Unit<'a> {
    g: &'a ConvGeometry,
    layout: Layout,
    /// The image's `x` (in `layout`).
    x: &'a [f32],
    /// The image's `dy`: NCHW in [`block_transpose_into`] order, NHWC as it is.
    dyt: &'a [f32],
    /// (first output row, rows).
    oy: (usize, usize),
    /// HWIO partial filter (`k x co`).
    part: &'a mut [f32],
    /// The worker's scratch, kept from unit to unit.
    scratch: &'a mut UnitScratch,
    /// The pair path's operands: the image's `x` and `dy` as NHWC bf16 bits (`x` and `dyt`
    /// empty); empty elsewhere.
    #[cfg(target_arch = "x86_64")]
    bits: (&'a [u16], &'a [u16]),
    /// bf16 on AVX512_BF16: the tokens of the pair tiles ([`Unit::run_pairs`]).
    #[cfg(target_arch = "x86_64")]
    pairs: Option<Bf16Dot>,
}

/// A worker's scratch for its [`Unit`]s.
#[derive(Default)]
struct UnitScratch {
    /// (`x` offset of the input row, `dy` block offset of the output row) per row.
    runs: Vec<(usize, usize)>,
    /// NHWC `dy`'s output-channel blocks of the unit's pixels, packed.
    packed: Vec<f32>,
    /// NHWC `x`'s pixels of one tap, packed.
    xpacked: Vec<f32>,
    /// NHWC, the (input row, unit row) of each output row one kernel row reaches.
    rows: Vec<(usize, usize)>,
    /// The pair path's.
    #[cfg(target_arch = "x86_64")]
    pairs: PairScratch,
}

impl Unit<'_> {
    #[inline(never)]
    fn run(self, level: Level) {
        #[cfg(target_arch = "x86_64")]
        if let Some(dot) = self.pairs {
            return self.run_pairs(dot);
        }
        level.dispatch(self)
    }
}

impl pulp::WithSimd for Unit<'_> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Unit {
            g,
            layout,
            x: xf,
            dyt,
            oy: (oy0, tr),
            part,
            scratch,
            ..
        } = self;
        let UnitScratch {
            runs,
            packed,
            xpacked,
            rows,
            ..
        } = scratch;
        let lanes = S::F32_LANES;
        let nb = vectors(lanes) * lanes;
        let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
        let (cig, cog, kw) = (g.ci / g.groups, g.co / g.groups, g.w.kernel);
        let np = ho * wo;
        if layout == Layout::Nhwc {
            // NHWC reads both operands packed: in place, a tile's consecutive pixels are
            // `g.co` (dy) and `stride * g.ci` (x) floats apart, at W8's 128 and 2 x 64
            // channels 512 bytes, so its 112 pixels fell in 8 of L1's 64 sets and evicted each
            // other (NHWC W8 ran 1.2x NCHW's time). Taps outermost: a tap's packed pixels
            // serve every output-channel block.
            for grp in 0..g.groups {
                // Every output-channel block of the unit's pixels, packed: block `cb` at
                // `cb * npx`, `w` floats a pixel.
                let npx = tr * wo;
                packed.clear();
                for cb in (0..cog).step_by(nb) {
                    let w = (cog - cb).min(nb);
                    for px in dyt[oy0 * wo * g.co..][..npx * g.co].chunks_exact(g.co) {
                        packed.extend_from_slice(&px[grp * cog + cb..][..w]);
                    }
                }
                // A packed pixel's stride: the group's channels rounded to whole lines and to
                // an odd number of them, so consecutive pixels' lines cover every L1 set (the
                // pad floats are never read; 1.02x on W8 against whole lines alone).
                let lines = cig.div_ceil(16);
                let xps = 16 * (lines + (lines + 1) % 2);
                for ky in 0..g.h.kernel {
                    rows.clear();
                    rows.extend(
                        (oy0..oy0 + tr)
                            .filter_map(|oy| g.h.input_index(oy, ky).map(|y| (y, oy - oy0))),
                    );
                    for kx in 0..kw {
                        let q = g.w.windows_reaching(kx);
                        if q.is_empty() || rows.is_empty() {
                            continue;
                        }
                        let nq = q.len();
                        let first = g.w.input_index(q.start, kx).unwrap_or(0);
                        // The tap's pixels of every row, `xps` floats apart (the pad floats
                        // after each pixel's channels are left as they are: never read).
                        let len = rows.len() * nq * xps;
                        if xpacked.len() < len {
                            xpacked.resize(len, 0.0);
                        }
                        let mut at = 0;
                        for &(y, _) in rows.iter() {
                            let row = &xf[y * wi * g.ci..][..wi * g.ci];
                            for qi in 0..nq {
                                let col = first + qi * g.w.stride;
                                xpacked[at..][..cig]
                                    .copy_from_slice(&row[col * g.ci + grp * cig..][..cig]);
                                at += xps;
                            }
                        }
                        let mut c0 = 0;
                        while c0 < cig {
                            let nr = tile_rows(cig - c0);
                            for cb in (0..cog).step_by(nb) {
                                let nv = (cog - cb).min(nb) / lanes;
                                let w = nv * lanes;
                                runs.clear();
                                runs.extend(
                                    rows.iter()
                                        .enumerate()
                                        .map(|(ri, &(_, r))| (ri * nq * xps, r * wo * w)),
                                );
                                let t = TileArgs {
                                    x: &xpacked[c0..],
                                    xs: (1, xps),
                                    runs,
                                    q: (q.start, nq),
                                    b: &packed[cb * npx..][..npx * w],
                                    bp: w,
                                    c: &mut part
                                        [((ky * kw + kx) * cig + c0) * g.co + grp * cog + cb..],
                                    ldc: g.co,
                                };
                                tile_dispatch(simd, 1, nr, nv, t);
                            }
                            c0 += nr;
                        }
                    }
                }
            }
            return;
        }
        // NCHW x: channel planes `xc` apart, columns 1 apart.
        let (xc, xp) = (hi * wi, 1);
        for grp in 0..g.groups {
            // Output-channel blocks outermost: the block's `dy` pixels (at most 32 KiB)
            // stay in L1 for every tap and channel tile.
            for cb in (0..cog).step_by(nb) {
                let nv = (cog - cb).min(nb) / lanes;
                let col = grp * cog + cb;
                let w = nv * lanes;
                let b = &dyt[col * np + oy0 * wo * w..][..tr * wo * w];
                let bp = w;
                for ky in 0..g.h.kernel {
                    runs.clear();
                    for oy in oy0..oy0 + tr {
                        if let Some(y) = g.h.input_index(oy, ky) {
                            runs.push((y * wi * xp, (oy - oy0) * wo * bp));
                        }
                    }
                    for kx in 0..kw {
                        // Output columns whose input column for this tap lies in `x`.
                        let q = g.w.windows_reaching(kx);
                        if q.is_empty() || runs.is_empty() {
                            continue;
                        }
                        let first = g.w.input_index(q.start, kx).unwrap_or(0);
                        let mut c0 = 0;
                        while c0 < cig {
                            let nr = tile_rows(cig - c0);
                            let t = TileArgs {
                                x: &xf[(grp * cig + c0) * xc + first * xp..],
                                xs: (xc, xp),
                                runs,
                                q: (q.start, q.len()),
                                b,
                                bp,
                                c: &mut part[((ky * kw + kx) * cig + c0) * g.co + col..],
                                ldc: g.co,
                            };
                            tile_dispatch(simd, g.w.stride, nr, nv, t);
                            c0 += nr;
                        }
                    }
                }
            }
        }
    }
}

/// Whether a bf16 filter gradient (either layout) takes the pair tiles before any other path
/// (the Winograd F(3x3, 2x2) one included: on a Zen 5, one thread, W7 ran 5.97 ms on pairs
/// against 6.13 by Winograd in f32 in NHWC, 6.54 against 7.13 in NCHW, with exact products).
pub(super) fn pairs_first<T: Element>() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        pair_dot::<T>(Level::Best).is_some()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// The AVX512_BF16 tokens where a bf16 filter gradient at `level` takes the pair tiles
/// ([`Unit::run_pairs`]): 16-lane blocks ([`applies`] made the output channels per group a
/// multiple of them).
#[cfg(target_arch = "x86_64")]
fn pair_dot<T: Element>(level: Level) -> Option<Bf16Dot> {
    (T::DTYPE == DType::BF16 && lanes(level) == Some(16))
        .then(Bf16Dot::new)
        .flatten()
}

/// A bf16 image's bits copied into `dst`.
#[cfg(target_arch = "x86_64")]
fn copy_bits<'a, T: Element>(src: &[T], dst: &'a mut Vec<f32>) -> &'a [u16] {
    let bits: &[u16] = bytemuck::cast_slice(src);
    dst.resize(bits.len().div_ceil(2), 0.0);
    let out = &mut bytemuck::cast_slice_mut::<f32, u16>(&mut dst[..])[..bits.len()];
    out.copy_from_slice(bits);
    out
}

/// An NCHW bf16 image (`(c, h, w)`) as NHWC bf16 bits in `dst`: for even `c`, pairs of channel
/// planes through [`bf16_pairs`]' transpose (a pair of channels is one `u32`, as the NHWC
/// bits read in pairs); an odd count (a first layer's three) element by element.
#[cfg(target_arch = "x86_64")]
fn nhwc_bits<'a, T: Element>(
    src: &[T],
    (c, h, w): (usize, usize, usize),
    dst: &'a mut Vec<f32>,
) -> &'a [u16] {
    if c % 2 == 0 {
        return bytemuck::cast_slice(bf16_pairs(Layout::Nchw, src, (c, h, w), (w, 0), dst));
    }
    let bits: &[u16] = bytemuck::cast_slice(src);
    let n = c * h * w;
    dst.resize(n.div_ceil(2), 0.0);
    let out = &mut bytemuck::cast_slice_mut::<f32, u16>(&mut dst[..])[..n];
    for (p, d) in out.chunks_exact_mut(c).enumerate() {
        for (ch, d) in d.iter_mut().enumerate() {
            *d = bits[ch * h * w + p];
        }
    }
    out
}

/// A column tap of the pair path ([`Unit::run_pairs`]): its output columns `q0..q0 + nq`
/// and first input column; its full pairs' place in the `dy` packing of `q0`'s parity
/// (`dres`, first pair `dstart`) and in the `x` packing of `first`'s residue modulo twice the
/// stride (`xres`, an index into [`PairScratch::xres`], first pair `xstart`); for an odd `nq`,
/// where its last pixel's tails lie (`dtail` in `dy`'s buffer, `xtail` in `x`'s).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct ColumnTap {
    q0: usize,
    nq: usize,
    first: usize,
    dres: usize,
    dstart: usize,
    xres: usize,
    xstart: usize,
    dtail: usize,
    xtail: usize,
}

/// The pair path's scratch, kept across a range's units (no allocation per unit).
#[cfg(target_arch = "x86_64")]
#[derive(Default)]
pub(super) struct PairScratch {
    taps: Vec<ColumnTap>,
    /// Per `x` packing: (column residue, pairs a row, offset).
    xres: Vec<(usize, usize, usize)>,
    /// Per input row from the unit's first: its slot in the `x` packings (`usize::MAX`: not
    /// reached).
    slot: Vec<usize>,
    runs: Vec<[usize; 4]>,
}

#[cfg(target_arch = "x86_64")]
impl Unit<'_> {
    /// The NHWC loop of [`Unit::with_simd`] on bf16 pairs of consecutive output columns, from
    /// [`Unit::bits`] (both layouts' images as NHWC bits, [`backprop_filter_direct`]). Each
    /// operand is packed once per unit as pairs, each channel one `u32` lane: `dy`'s rows per
    /// parity of the first column (`(q, q + 1)`, `[block][row][pair][w]`), `x`'s input rows
    /// per residue of the first column modulo twice the stride (columns `(c, c + stride)`,
    /// `[row][pair][xps]`), so that a tap's full pairs are a run of consecutive pairs of one
    /// packing, whichever kernel row and column it is (per tap packing, nine times per row at
    /// 3x3, took about an eighth of W7's tile function). A tap with an odd count ends on a
    /// tail of its own: its last pixel paired with zero on both sides (a pair reaching past
    /// the tap would multiply a pixel outside it by zero, which is not zero for an infinity or
    /// a NaN). Each tile sum gains a pixel pair's two products per `vdpbf16ps`, in pair order.
    #[inline(never)]
    fn run_pairs(self, dot: Bf16Dot) {
        let Unit {
            g,
            oy: (oy0, tr),
            part,
            scratch,
            bits: (xb, dyb),
            ..
        } = self;
        let UnitScratch {
            packed,
            xpacked,
            pairs: ps,
            ..
        } = scratch;
        let nb = 64;
        let (wi, wo, s) = (g.w.input, g.w.output, g.w.stride);
        let (cig, cog, kw) = (g.ci / g.groups, g.co / g.groups, g.w.kernel);
        let lines = cig.div_ceil(16);
        let xps = 16 * (lines + (lines + 1) % 2);
        // The input rows the unit reaches, and their slots.
        let reach = |oy: usize| (0..g.h.kernel).filter_map(move |ky| g.h.input_index(oy, ky));
        let (Some(ymin), Some(ymax)) = (
            (oy0..oy0 + tr).flat_map(reach).min(),
            (oy0..oy0 + tr).flat_map(reach).max(),
        ) else {
            return;
        };
        ps.slot.clear();
        ps.slot.resize(ymax + 1 - ymin, usize::MAX);
        for y in (oy0..oy0 + tr).flat_map(reach) {
            ps.slot[y - ymin] = 0;
        }
        let mut nslots = 0;
        for sl in ps.slot.iter_mut().filter(|sl| **sl == 0) {
            *sl = nslots;
            nslots += 1;
        }
        // The column taps, the packings' sizes and offsets.
        ps.taps.clear();
        ps.xres.clear();
        let mut npd = [0usize; 2];
        for kx in 0..kw {
            let q = g.w.windows_reaching(kx);
            let first = g.w.input_index(q.start, kx).unwrap_or(0);
            let (res, xstart) = (first % (2 * s), first / (2 * s));
            let xres = match ps.xres.iter().position(|r| r.0 == res) {
                Some(i) => i,
                None => {
                    ps.xres.push((res, 0, 0));
                    ps.xres.len() - 1
                }
            };
            let t = ColumnTap {
                q0: q.start,
                nq: q.len(),
                first,
                dres: q.start % 2,
                dstart: q.start / 2,
                xres,
                xstart,
                dtail: 0,
                xtail: 0,
            };
            if t.nq > 0 {
                npd[t.dres] = npd[t.dres].max(t.dstart + t.nq / 2);
                let r = &mut ps.xres[xres];
                r.1 = r.1.max(xstart + t.nq / 2);
            }
            ps.taps.push(t);
        }
        let dbase = [0, cog * tr * npd[0]];
        let mut dlen = dbase[1] + cog * tr * npd[1];
        let mut xlen = 0;
        for r in ps.xres.iter_mut() {
            r.2 = xlen;
            xlen += nslots * r.1 * xps;
        }
        for t in ps.taps.iter_mut().filter(|t| t.nq % 2 == 1) {
            (t.dtail, t.xtail) = (dlen, xlen);
            dlen += cog * tr;
            xlen += nslots * xps;
        }
        packed.resize(dlen, 0.0);
        let dyp: &mut [u32] = bytemuck::cast_slice_mut(&mut packed[..dlen]);
        if xpacked.len() < xlen {
            xpacked.resize(xlen, 0.0);
        }
        let xp: &mut [u32] = bytemuck::cast_slice_mut(&mut xpacked[..xlen]);
        let PairScratch {
            taps,
            xres,
            slot,
            runs,
        } = ps;
        dot.vectorize(
            #[inline(always)]
            || {
                let pack = |d: &mut [u32], lo: &[u16], hi: Option<&[u16]>| match hi {
                    Some(hi) => {
                        for ((d, &l), &h) in d.iter_mut().zip(lo).zip(hi) {
                            *d = pair(l, h);
                        }
                    }
                    None => {
                        for (d, &l) in d.iter_mut().zip(lo) {
                            *d = u32::from(l);
                        }
                    }
                };
                for grp in 0..g.groups {
                    // `dy`: each parity's pairs, then the odd taps' tails.
                    let dpx = |r: usize, q: usize, cb: usize, w: usize| {
                        &dyb[((oy0 + r) * wo + q) * g.co + grp * cog + cb..][..w]
                    };
                    for (e, (&np, &base)) in npd.iter().zip(&dbase).enumerate() {
                        for cb in (0..cog).step_by(nb) {
                            let w = (cog - cb).min(nb);
                            for r in 0..tr {
                                for j in 0..np {
                                    let q = e + 2 * j;
                                    let d = &mut dyp[base + cb * tr * np + (r * np + j) * w..];
                                    pack(&mut d[..w], dpx(r, q, cb, w), Some(dpx(r, q + 1, cb, w)));
                                }
                            }
                        }
                    }
                    for t in taps.iter().filter(|t| t.nq % 2 == 1) {
                        for cb in (0..cog).step_by(nb) {
                            let w = (cog - cb).min(nb);
                            for r in 0..tr {
                                let d = &mut dyp[t.dtail + cb * tr + r * w..][..w];
                                pack(d, dpx(r, t.q0 + t.nq - 1, cb, w), None);
                            }
                        }
                    }
                    // `x`: each residue's pairs of every reached row, then the tails.
                    let xpx =
                        |y: usize, col: usize| &xb[(y * wi + col) * g.ci + grp * cig..][..cig];
                    for (y, &sl) in (ymin..).zip(slot.iter()) {
                        if sl == usize::MAX {
                            continue;
                        }
                        for &(res, np, base) in xres.iter() {
                            for j in 0..np {
                                let c = res + 2 * j * s;
                                let d = &mut xp[base + (sl * np + j) * xps..][..cig];
                                pack(d, xpx(y, c), Some(xpx(y, c + s)));
                            }
                        }
                        for t in taps.iter().filter(|t| t.nq % 2 == 1) {
                            let d = &mut xp[t.xtail + sl * xps..][..cig];
                            pack(d, xpx(y, t.first + (t.nq - 1) * s), None);
                        }
                    }
                    let (xp, dyp): (&[u32], &[u32]) = (xp, dyp);
                    for ky in 0..g.h.kernel {
                        for (kx, t) in taps.iter().enumerate() {
                            if t.nq == 0 {
                                continue;
                            }
                            let (_, np, xbase) = xres[t.xres];
                            let mut c0 = 0;
                            while c0 < cig {
                                let nr = tile_rows(cig - c0);
                                for cb in (0..cog).step_by(nb) {
                                    let nv = (cog - cb).min(nb) / 16;
                                    let w = nv * 16;
                                    let npd = npd[t.dres];
                                    let dblk = dbase[t.dres] + cb * tr * npd;
                                    // A plain loop: an iterator adaptor's closure here
                                    // was called out of line, past a `vzeroupper`, per tile
                                    // (about 8% of W7).
                                    runs.clear();
                                    for r in 0..tr {
                                        let Some(y) = g.h.input_index(oy0 + r, ky) else {
                                            continue;
                                        };
                                        let sl = slot[y - ymin];
                                        runs.push([
                                            xbase + (sl * np + t.xstart) * xps,
                                            dblk + (r * npd + t.dstart) * w,
                                            t.xtail + sl * xps,
                                            t.dtail + cb * tr + r * w,
                                        ]);
                                    }
                                    if runs.is_empty() {
                                        continue;
                                    }
                                    let pt = PairTileArgs {
                                        x: &xp[c0..],
                                        xps,
                                        runs,
                                        pairs: (t.nq / 2, t.nq % 2 == 1),
                                        b: dyp,
                                        w,
                                        c: &mut part
                                            [((ky * kw + kx) * cig + c0) * g.co + grp * cog + cb..],
                                        ldc: g.co,
                                    };
                                    pair_tile_dispatch(dot, nr, nv, pt);
                                }
                                c0 += nr;
                            }
                        }
                    }
                }
            },
        )
    }
}

/// A pair tile's operands: `x` the packed `x` pairs from the tile's first filter row (`xps`
/// apart a pixel pair), `b` the packed `dy` pairs (`w` lanes a pixel pair); per run, the
/// offsets of its first `x` pair, first `dy` pair, `x` tail and `dy` tail; `pairs` = (full
/// pairs a run, whether a tail follows them); `c` rows `ldc` apart.
#[cfg(target_arch = "x86_64")]
struct PairTileArgs<'a> {
    x: &'a [u32],
    xps: usize,
    runs: &'a [[usize; 4]],
    pairs: (usize, bool),
    b: &'a [u32],
    w: usize,
    c: &'a mut [f32],
    ldc: usize,
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pair_tile_dispatch(dot: Bf16Dot, nr: usize, nv: usize, t: PairTileArgs) {
    macro_rules! go {
        ($($r:literal, $v:literal);*) => {
            match (nr, nv) {
                $(($r, $v) => pair_tile::<$r, $v>(dot, t),)*
                _ => unreachable!("pair tile shape {nr}x{nv}"),
            }
        };
    }
    go!(6, 4; 6, 3; 6, 2; 6, 1; 4, 4; 4, 3; 4, 2; 4, 1; 2, 4; 2, 3; 2, 2; 2, 1; 1, 4; 1, 3; 1, 2; 1, 1)
}

/// `c[r][v] += sum over runs of (sum over its pairs j of dot(x[run.0 + j xps + r], b[run.1 +
/// j w][v])) + dot(x[run.2 + r], b[run.3][v])` (the tail where `pairs.1`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn pair_tile<const NR: usize, const NV: usize>(dot: Bf16Dot, t: PairTileArgs) {
    use pulp::x86::V4;
    let PairTileArgs {
        x,
        xps,
        runs,
        pairs: (nqp, tail),
        b,
        w,
        c,
        ldc,
    } = t;
    let v4 = dot.v4;
    let mut acc = [[v4.splat_f32x16(0.0); NV]; NR];
    for (r, row) in acc.iter_mut().enumerate() {
        for (v, a) in row.iter_mut().enumerate() {
            *a = <V4 as Simd>::as_simd_f32s(&c[r * ldc + v * 16..][..16]).0[0];
        }
    }
    macro_rules! pair {
        ($xq:expr, $bq:expr) => {{
            let (xq, (bq, _)) = ($xq, <V4 as Simd>::as_simd_u32s($bq));
            for r in 0..NR {
                let av = v4.splat_u32x16(xq[r]);
                for v in 0..NV {
                    acc[r][v] = dot.dot(acc[r][v], av, bq[v]);
                }
            }
        }};
    }
    for &[ao, bo, xto, bto] in runs {
        if nqp > 0 {
            let xr = &x[ao..][..(nqp - 1) * xps + NR];
            let bs = &b[bo..][..(nqp - 1) * w + NV * 16];
            for j in 0..nqp {
                pair!(&xr[j * xps..][..NR], &bs[j * w..][..NV * 16]);
            }
        }
        if tail {
            pair!(&x[xto..][..NR], &b[bto..][..NV * 16]);
        }
    }
    for (r, row) in acc.iter().enumerate() {
        for (v, &val) in row.iter().enumerate() {
            <V4 as Simd>::as_mut_simd_f32s(&mut c[r * ldc + v * 16..][..16]).0[0] = val;
        }
    }
}

/// Filter rows of the next register tile, `left` channels still to go: [`R`], else the
/// largest instantiated shape that fits.
fn tile_rows(left: usize) -> usize {
    match left {
        n if n >= R => R,
        n if n >= 4 => 4,
        n if n >= 2 => 2,
        _ => 1,
    }
}

/// A register tile's operands: `nr` filter rows of `x` (`xs.0` apart: channel planes or
/// channels; input columns `xs.1` apart), each run's input row at its first offset; the output
/// columns `q.0..q.0 + q.1` of every run; `b` the output-channel block's pixels (`nv` vectors
/// each, `bp` apart), each run's row at its second offset; `c` rows `ldc` apart.
struct TileArgs<'a> {
    x: &'a [f32],
    xs: (usize, usize),
    runs: &'a [(usize, usize)],
    q: (usize, usize),
    b: &'a [f32],
    bp: usize,
    c: &'a mut [f32],
    ldc: usize,
}

#[inline(always)]
fn tile_dispatch<S: Simd>(simd: S, stride: usize, nr: usize, nv: usize, t: TileArgs) {
    // Packed NHWC `x` (channels 1 apart, pixels consecutive: column stride 1) as a constant:
    // the filter rows' broadcasts then read at fixed offsets from one address instead of a
    // chain of adds of a stride.
    let unit = t.xs.0 == 1;
    macro_rules! go {
        ($($r:literal, $v:literal);*) => {
            match (unit, stride, nr, nv) {
                $(
                    (true, 1, $r, $v) => tile::<S, 1, $r, $v, true>(simd, t),
                    (false, 1, $r, $v) => tile::<S, 1, $r, $v, false>(simd, t),
                    (false, 2, $r, $v) => tile::<S, 2, $r, $v, false>(simd, t),
                )*
                _ => unreachable!("tile stride {stride}, shape {nr}x{nv}"),
            }
        };
    }
    go!(6, 4; 6, 3; 6, 2; 6, 1; 4, 4; 4, 3; 4, 2; 4, 1; 2, 4; 2, 3; 2, 2; 2, 1; 1, 4; 1, 3; 1, 2; 1, 1)
}

/// `c[r][v] += sum over runs and output columns q of x[r xs.0 + run.0 + ST xs.1 (q - q0)] *
/// b[run.1 + q bp][v]`. `UNIT`: `xs.0` is 1 (packed NHWC), a pixel's filter rows side by side.
#[inline(always)]
fn tile<S: Simd, const ST: usize, const NR: usize, const NV: usize, const UNIT: bool>(
    simd: S,
    t: TileArgs,
) {
    let TileArgs {
        x,
        xs: (xc, xp),
        runs,
        q: (q0, nq),
        b,
        bp,
        c,
        ldc,
    } = t;
    let lanes = S::F32_LANES;
    let load = |s: &[f32]| S::as_simd_f32s(s).0[0];
    // Arrays filled by plain loops: `array::from_fn` may build them on the stack and copy
    // them (a `memcpy` per tile where it is not inlined).
    let mut acc = [[simd.splat_f32s(0.0); NV]; NR];
    for (r, row) in acc.iter_mut().enumerate() {
        for (v, a) in row.iter_mut().enumerate() {
            *a = load(&c[r * ldc + v * lanes..][..lanes]);
        }
    }
    let step = ST * xp;
    // One pixel's products: `xq[r]` (r < NR) times the vectors of `bq` (a macro: a closure
    // holding `acc` kept it in memory).
    macro_rules! pixel {
        ($xq:expr, $bq:expr) => {{
            let (xq, (bq, _)) = ($xq, S::as_simd_f32s($bq));
            for r in 0..NR {
                let av = simd.splat_f32s(xq[r]);
                for v in 0..NV {
                    acc[r][v] = simd.mul_add_f32s(av, bq[v], acc[r][v]);
                }
            }
        }};
    }
    if UNIT {
        // Pixel q's filter rows are `NR` consecutive floats.
        for &(ao, bo) in runs {
            let xr = &x[ao..][..step * (nq - 1) + NR];
            let bs = &b[bo + q0 * bp..][..(nq - 1) * bp + NV * lanes];
            // Two pixels an iteration (one at a time, the loop's index, bounds and stride
            // arithmetic was 17 of a pixel's 37 instructions), each sum still taking the
            // pixels in order.
            let (mut xo, mut bo) = (0, 0);
            for _ in 0..nq / 2 {
                pixel!(&xr[xo..][..NR], &bs[bo..][..NV * lanes]);
                pixel!(&xr[xo + step..][..NR], &bs[bo + bp..][..NV * lanes]);
                xo += 2 * step;
                bo += 2 * bp;
            }
            if nq % 2 == 1 {
                pixel!(&xr[xo..][..NR], &bs[bo..][..NV * lanes]);
            }
        }
    } else {
        // One pixel at a time: two at a time ran NCHW W8 1.01x-1.03x as fast but, moving the
        // code around it, cost the NHWC loop above 4-9% (paired calls): not kept.
        for &(ao, bo) in runs {
            // Pixel q's element is a[r][step q]: exactly the slice's reach, so no bounds checks.
            let mut a: [&[f32]; NR] = [&[]; NR];
            for (r, ar) in a.iter_mut().enumerate() {
                *ar = &x[r * xc + ao..][..step * (nq - 1) + 1];
            }
            let bs = &b[bo + q0 * bp..][..(nq - 1) * bp + NV * lanes];
            for (q, bq) in bs.chunks(bp).enumerate() {
                let (bq, _) = S::as_simd_f32s(&bq[..NV * lanes]);
                for r in 0..NR {
                    let av = simd.splat_f32s(a[r][step * q]);
                    for v in 0..NV {
                        acc[r][v] = simd.mul_add_f32s(av, bq[v], acc[r][v]);
                    }
                }
            }
        }
    }
    for (r, row) in acc.iter().enumerate() {
        for (v, &val) in row.iter().enumerate() {
            S::as_mut_simd_f32s(&mut c[r * ldc + v * lanes..][..lanes]).0[0] = val;
        }
    }
}

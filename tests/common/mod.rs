//! Shared test helpers: a seeded RNG, naive reference implementations written straight from
//! SPEC.md's formulas (scatter form, in f64 except where the SPEC fixes the coordinate
//! arithmetic), and comparison at the SPEC tolerances.
#![allow(dead_code)]

use gradops::geometry::{CoordinateTransform, NearestMode, ResizeMode};
use gradops::{Dims, Element, Layout};

/// xorshift64*: deterministic, dependency-free.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in [-1, 1).
    pub fn signed(&mut self) -> f64 {
        2.0 * self.unit() - 1.0
    }
    /// Integer in lo..=hi.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.range(0, xs.len() - 1)]
    }
    pub fn vec(&mut self, n: usize) -> Vec<f64> {
        (0..n).map(|_| self.signed()).collect()
    }
    pub fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

/// Rounds values to `T` and back (the "already rounded inputs" of the SPEC tolerances).
pub fn round_to<T: Element>(v: &[f64]) -> (Vec<T>, Vec<f64>) {
    let t: Vec<T> = v.iter().map(|&x| T::from_f64(x)).collect();
    let back = t.iter().map(|x| x.to_f64()).collect();
    (t, back)
}

/// SPEC tolerance of a dtype.
pub fn tol<T: Element>() -> f64 {
    match T::DTYPE {
        gradops::DType::F16 => 2e-3,
        gradops::DType::BF16 => 1e-2,
        gradops::DType::F32 => 1e-5,
        gradops::DType::F64 => 1e-10,
    }
}

/// `||out - ref|| / ||ref||` (absolute norm when the reference is zero).
pub fn rel_err(out: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len(), "length mismatch");
    let num: f64 = out
        .iter()
        .zip(reference)
        .map(|(a, b)| (a - b) * (a - b))
        .sum::<f64>()
        .sqrt();
    let den: f64 = reference.iter().map(|b| b * b).sum::<f64>().sqrt();
    if den == 0.0 {
        num
    } else {
        num / den
    }
}

pub fn to_f64<T: Element>(v: &[T]) -> Vec<f64> {
    v.iter().map(|x| x.to_f64()).collect()
}

/// Flat index of logical (n, c, h, w) in `layout`.
pub fn at(layout: Layout, d: Dims, n: usize, c: usize, h: usize, w: usize) -> usize {
    match layout {
        Layout::Nchw => ((n * d.c + c) * d.h + h) * d.w + w,
        Layout::Nhwc => ((n * d.h + h) * d.w + w) * d.c + c,
    }
}

/// Per-axis source of output `o` per SPEC, computed in f32 when `f32_coords` (f16/bf16/f32
/// inputs).
/// Returns [(index, weight)] (two entries for linear, one for nearest).
#[allow(clippy::too_many_arguments)]
pub fn spec_axis(
    o: usize,
    inp: usize,
    out: usize,
    scale: Option<f64>,
    mode: ResizeMode,
    ctm: CoordinateTransform,
    nm: NearestMode,
    f32_coords: bool,
) -> Vec<(usize, f64)> {
    let q = |v: f64| if f32_coords { v as f32 as f64 } else { v };
    let r = match ctm {
        CoordinateTransform::AlignCorners => {
            if out > 1 {
                q(q((inp - 1) as f64) / q((out - 1) as f64))
            } else {
                0.0
            }
        }
        _ => match scale {
            Some(s) => q(1.0 / q(s)),
            None => q(inp as f64 / out as f64),
        },
    };
    let o = o as f64;
    let src = match ctm {
        CoordinateTransform::HalfPixel => q(q(r * q(o + 0.5)) - 0.5),
        CoordinateTransform::PytorchHalfPixel => {
            if out > 1 {
                q(q(r * q(o + 0.5)) - 0.5)
            } else {
                0.0
            }
        }
        CoordinateTransform::AlignCorners | CoordinateTransform::Asymmetric => q(r * o),
        CoordinateTransform::TfHalfPixelForNn => q(r * q(o + 0.5)),
    };
    match mode {
        ResizeMode::Linear => {
            let s = src.max(0.0);
            let i0 = (s.floor() as usize).min(inp - 1);
            let i1 = (i0 + 1).min(inp - 1);
            let l1 = q(s - i0 as f64);
            vec![(i0, q(1.0 - l1)), (i1, l1)]
        }
        ResizeMode::Nearest => {
            let fl = src.floor();
            let frac = src - fl;
            let v = match nm {
                NearestMode::Floor => fl,
                NearestMode::Ceil => src.ceil(),
                NearestMode::RoundPreferFloor => {
                    if frac == 0.5 {
                        fl
                    } else {
                        src.round()
                    }
                }
                NearestMode::RoundPreferCeil => {
                    if frac == 0.5 {
                        src.ceil()
                    } else {
                        src.round()
                    }
                }
            };
            vec![((v.max(0.0) as usize).min(inp - 1), 1.0)]
        }
    }
}

pub struct ResizeCase {
    pub mode: ResizeMode,
    pub ctm: CoordinateTransform,
    pub nm: NearestMode,
    pub scales: Option<[f64; 2]>,
}

/// Reference resize gradient: scatter every dy element with the product weight.
pub fn ref_resize_grad(
    dy: &[f64],
    dyd: Dims,
    xd: Dims,
    layout: Layout,
    c: &ResizeCase,
    f32_coords: bool,
) -> Vec<f64> {
    let mut dx = vec![0.0; xd.n * xd.c * xd.h * xd.w];
    if xd.h == 0 || xd.w == 0 {
        return dx;
    }
    for n in 0..dyd.n {
        for ch in 0..dyd.c {
            for oy in 0..dyd.h {
                let ys = spec_axis(
                    oy,
                    xd.h,
                    dyd.h,
                    c.scales.map(|s| s[0]),
                    c.mode,
                    c.ctm,
                    c.nm,
                    f32_coords,
                );
                for ox in 0..dyd.w {
                    let xs = spec_axis(
                        ox,
                        xd.w,
                        dyd.w,
                        c.scales.map(|s| s[1]),
                        c.mode,
                        c.ctm,
                        c.nm,
                        f32_coords,
                    );
                    let g = dy[at(layout, dyd, n, ch, oy, ox)];
                    for &(iy, wy) in &ys {
                        for &(ix, wx) in &xs {
                            dx[at(layout, xd, n, ch, iy, ix)] += wy * wx * g;
                        }
                    }
                }
            }
        }
    }
    dx
}

/// Reference conv2d_backprop_input straight from the SPEC sum (HWIO filter).
#[allow(clippy::too_many_arguments)]
pub fn ref_conv_backprop_input(
    dy: &[f64],
    dyd: Dims,
    w: &[f64],
    k: [usize; 2],
    xd: Dims,
    layout: Layout,
    strides: [usize; 2],
    dil: [usize; 2],
    pad_tl: [usize; 2],
) -> Vec<f64> {
    if w.is_empty() || dy.is_empty() {
        // A zero-sized kernel axis or an empty dy: every dx element is an empty sum.
        return vec![0.0; xd.n * xd.c * xd.h * xd.w];
    }
    let groups = xd.c / (w.len() / (k[0] * k[1] * dyd.c));
    let (cig, cog) = (xd.c / groups, dyd.c / groups);
    let mut dx = vec![0.0; xd.n * xd.c * xd.h * xd.w];
    for n in 0..dyd.n {
        for co in 0..dyd.c {
            let g = co / cog;
            for oy in 0..dyd.h {
                for ox in 0..dyd.w {
                    let v = dy[at(layout, dyd, n, co, oy, ox)];
                    for ky in 0..k[0] {
                        let y = (oy * strides[0] + ky * dil[0]) as isize - pad_tl[0] as isize;
                        if y < 0 || y >= xd.h as isize {
                            continue;
                        }
                        for kx in 0..k[1] {
                            let x = (ox * strides[1] + kx * dil[1]) as isize - pad_tl[1] as isize;
                            if x < 0 || x >= xd.w as isize {
                                continue;
                            }
                            for cc in 0..cig {
                                let wv = w[((ky * k[1] + kx) * cig + cc) * dyd.c + co];
                                dx[at(layout, xd, n, g * cig + cc, y as usize, x as usize)] +=
                                    v * wv;
                            }
                        }
                    }
                }
            }
        }
    }
    dx
}

/// Reference conv2d_backprop_filter straight from the SPEC sum: `dw` in HWIO,
/// `[k0, k1, x.c / groups, dy.c]`.
#[allow(clippy::too_many_arguments)]
pub fn ref_conv_backprop_filter(
    x: &[f64],
    xd: Dims,
    dy: &[f64],
    dyd: Dims,
    k: [usize; 2],
    groups: usize,
    layout: Layout,
    strides: [usize; 2],
    dil: [usize; 2],
    pad_tl: [usize; 2],
) -> Vec<f64> {
    let (cig, cog) = (xd.c / groups, dyd.c / groups);
    let mut dw = vec![0.0; k[0] * k[1] * cig * dyd.c];
    for n in 0..dyd.n {
        for co in 0..dyd.c {
            let g = co / cog;
            for oy in 0..dyd.h {
                for ox in 0..dyd.w {
                    let v = dy[at(layout, dyd, n, co, oy, ox)];
                    for ky in 0..k[0] {
                        let y = (oy * strides[0] + ky * dil[0]) as isize - pad_tl[0] as isize;
                        if y < 0 || y >= xd.h as isize {
                            continue;
                        }
                        for kx in 0..k[1] {
                            let xx = (ox * strides[1] + kx * dil[1]) as isize - pad_tl[1] as isize;
                            if xx < 0 || xx >= xd.w as isize {
                                continue;
                            }
                            for cc in 0..cig {
                                let xv =
                                    x[at(layout, xd, n, g * cig + cc, y as usize, xx as usize)];
                                dw[((ky * k[1] + kx) * cig + cc) * dyd.c + co] += v * xv;
                            }
                        }
                    }
                }
            }
        }
    }
    dw
}

/// HWIO `[kh, kw, ci, co]` to OIHW.
pub fn hwio_to_oihw<T: Copy + Default>(w: &[T], [kh, kw, ci, co]: [usize; 4]) -> Vec<T> {
    let mut out = vec![T::default(); w.len()];
    for y in 0..kh {
        for x in 0..kw {
            for i in 0..ci {
                for o in 0..co {
                    out[((o * ci + i) * kh + y) * kw + x] = w[((y * kw + x) * ci + i) * co + o];
                }
            }
        }
    }
    out
}

/// Reference max_pool_grad per SPEC's argmax rule (scatter, windows in row-major order).
#[allow(clippy::too_many_arguments)]
pub fn ref_max_pool_grad(
    dy: &[f64],
    yd: Dims,
    x: &[f64],
    xd: Dims,
    layout: Layout,
    k: [usize; 2],
    s: [usize; 2],
    pad_tl: [usize; 2],
) -> Vec<f64> {
    let mut dx = vec![0.0; x.len()];
    for n in 0..xd.n {
        for c in 0..xd.c {
            for oy in 0..yd.h {
                for ox in 0..yd.w {
                    let mut best: Option<(usize, f64)> = None;
                    for ky in 0..k[0] {
                        let y = (oy * s[0] + ky) as isize - pad_tl[0] as isize;
                        if y < 0 || y >= xd.h as isize {
                            continue;
                        }
                        for kx in 0..k[1] {
                            let xx = (ox * s[1] + kx) as isize - pad_tl[1] as isize;
                            if xx < 0 || xx >= xd.w as isize {
                                continue;
                            }
                            let i = at(layout, xd, n, c, y as usize, xx as usize);
                            if best.is_none_or(|(_, b)| x[i] > b) {
                                best = Some((i, x[i]));
                            }
                        }
                    }
                    if let Some((i, _)) = best {
                        dx[i] += dy[at(layout, yd, n, c, oy, ox)];
                    }
                }
            }
        }
    }
    dx
}

/// A shape in `layout` order.
pub fn shape(layout: Layout, d: Dims) -> [usize; 4] {
    layout.shape(d)
}

pub fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Every `coordinate_transformation_mode` of the SPEC.
pub const ALL_CTMS: [CoordinateTransform; 5] = [
    CoordinateTransform::HalfPixel,
    CoordinateTransform::PytorchHalfPixel,
    CoordinateTransform::AlignCorners,
    CoordinateTransform::Asymmetric,
    CoordinateTransform::TfHalfPixelForNn,
];

/// Every `nearest_mode` of the SPEC.
pub const ALL_NEAREST_MODES: [NearestMode; 4] = [
    NearestMode::RoundPreferFloor,
    NearestMode::RoundPreferCeil,
    NearestMode::Floor,
    NearestMode::Ceil,
];

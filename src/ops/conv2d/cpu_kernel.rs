//! CPU conv kernels: per image and group, a cache-blocked GEMM over a tile of output rows
//! (`gemm` crate) plus im2col / col2im. Workspace per thread is bounded by `TILE_ELEMS`.

use crate::cpu::gemm::{matmul, MatMut, MatRef};
use crate::dtype::{Accum, Element};
use crate::geometry::window::ConvGeometry;
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
                    body(&input, out, &mut s.col);
                }
                None => {
                    s.out.clear();
                    s.out.resize(dst_len, zero);
                    body(&input, &mut s.out, &mut s.col);
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
fn valid_outputs(a: &crate::geometry::window::WindowAxis, k: usize) -> std::ops::Range<usize> {
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
    let mut wbuf = Vec::new();
    let w = acc_view(w, &mut wbuf);
    let (hi, wi, ho, wo) = (g.h.input, g.w.input, g.h.output, g.w.output);
    let (p, cig, cog) = (ho * wo, g.ci / g.groups, g.co / g.groups);
    let k = g.h.kernel * g.w.kernel * cig;
    let rows = tile_rows(k, wo, ho);
    per_image::<T>(x, g.ci * hi * wi, y, g.co * p, |xi, yi, col| {
        col.resize(k * rows * wo, T::Acc::zero());
        for grp in 0..g.groups {
            for oy0 in (0..ho).step_by(rows) {
                let tr = rows.min(ho - oy0);
                let tp = tr * wo;
                match layout {
                    Layout::Nchw => {
                        im2col_nchw(g, grp, oy0, tr, xi, col);
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

fn im2col_nchw<A: Accum>(
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
                    for ox in oxs.clone() {
                        dst[ox] = srow[ox * g.w.stride + kx * g.w.dilation - g.w.pad_before];
                    }
                }
            }
        }
    }
}

fn im2col_nhwc<A: Accum>(
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

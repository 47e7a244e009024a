//! CPU `conv2d_backprop_filter`: per group, `dW[(ky, kx, ci), co] = im2col(x)^T * dy` over the
//! `N * OH * OW` output pixels, as GEMMs on tiles of output rows (`gemm` crate).
//!
//! Determinism: the reduction is split into a fixed number of contiguous ranges of
//! (image, row tile) units, chosen from the geometry alone. Each range accumulates its own
//! partial filter (units and tiles in order, one GEMM per tile); the partials are then summed
//! in range order. Neither step depends on the thread count.

use super::cpu_kernel::{im2col_nchw, im2col_nhwc, tile_rows};
use crate::cpu::gemm::{matmul, MatMut, MatRef};
use crate::dtype::Element;
use crate::geometry::window::ConvGeometry;
use crate::ops::conv2d::FilterLayout;
use crate::tensor::Layout;
use num_traits::Zero;
use rayon::prelude::*;

/// Most reduction splits (partial filters). More splits feed more threads; each costs one
/// filter-sized partial and one pass of the final sum.
const MAX_SPLITS: usize = 32;

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
        let rows = tile_rows(k, g.w.output, g.h.output);
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
    fn range(&self, n: usize, s: usize) -> std::ops::Range<usize> {
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
    let mut partials = vec![zero; split.splits * flen];
    partials.par_chunks_mut(flen).enumerate().for_each_init(
        || (Vec::new(), Vec::new(), Vec::new(), usize::MAX),
        |(col, xa, dya, cur), (s, part)| {
            for unit in split.range(g.n, s) {
                let (i, t) = (unit / split.tiles, unit % split.tiles);
                if *cur != i {
                    // The image in the accumulation type (a copy for f16 only).
                    to_acc::<T>(&x[i * ximg..][..ximg], xa);
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
                            im2col_nchw(g, grp, oy0, tr, xi, col);
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
    // Sum the partials in split order (into the first), per block of filter elements.
    let (first, rest) = partials.split_at_mut(flen);
    const BLOCK: usize = 4096;
    first
        .par_chunks_mut(BLOCK)
        .enumerate()
        .for_each(|(b, acc)| {
            for part in rest.chunks(flen) {
                for (a, &v) in acc.iter_mut().zip(&part[b * BLOCK..]) {
                    *a = *a + v;
                }
            }
        });
    let hwio = &partials[..flen];
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
}

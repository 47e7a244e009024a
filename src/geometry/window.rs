//! Sliding-window geometry (conv and pool): padding modes, output sizes, TF's checks.

use crate::error::{Error, Result};
use crate::tensor::Dims;

/// Padding of a sliding-window op.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Padding {
    /// TF `SAME`: `out = ceil(in/s)`, the odd pixel of padding goes after.
    Same,
    /// TF `VALID`: no padding.
    #[default]
    Valid,
    /// Explicit `[[top, bottom], [left, right]]`.
    Explicit([[usize; 2]; 2]),
}

/// tfjs `dimRoundingMode`: how `(in + pads - k)/s + 1` is rounded with explicit padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DimRounding {
    /// Round down (TF's behaviour).
    Floor,
    /// Round half up, as tfjs's `Math.round` of `(in + pads - ke)/s + 1` (half away from
    /// zero for every non-negative size).
    Round,
    /// Round up.
    Ceil,
}

impl std::str::FromStr for DimRounding {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "floor" => Ok(DimRounding::Floor),
            "round" => Ok(DimRounding::Round),
            "ceil" => Ok(DimRounding::Ceil),
            o => Err(format!(
                "unknown dim_rounding_mode {o:?} (expected floor, round or ceil)"
            )),
        }
    }
}

/// One spatial axis of a sliding window: sizes, kernel, stride, dilation and padding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowAxis {
    /// Input length.
    pub input: usize,
    /// Output length.
    pub output: usize,
    /// Kernel length (undilated).
    pub kernel: usize,
    /// Stride.
    pub stride: usize,
    /// Dilation.
    pub dilation: usize,
    /// Padding before (top / left). Input index of output `o`, tap `k`: `o*s - pad + k*d`.
    pub pad_before: usize,
    /// Padding after (bottom / right), as TF reports it.
    pub pad_after: usize,
}

impl WindowAxis {
    /// Effective kernel extent `(k-1)*d + 1` (0 for a zero-sized kernel, which has no taps).
    pub fn effective_kernel(&self) -> usize {
        match self.kernel {
            0 => 0,
            k => (k - 1) * self.dilation + 1,
        }
    }

    /// Input index of output `o` at tap `k`, or `None` when it falls in the padding.
    #[inline]
    pub fn input_index(&self, o: usize, k: usize) -> Option<usize> {
        let p = (o * self.stride + k * self.dilation).checked_sub(self.pad_before)?;
        (p < self.input).then_some(p)
    }

    /// The outputs whose tap `k` lies inside the input (not in the padding): `lo..hi`, those
    /// `o` with `0 <= o*s - pad + k*d < input`.
    #[inline]
    pub fn windows_reaching(&self, k: usize) -> std::ops::Range<usize> {
        let kd = k * self.dilation;
        let lo = self.pad_before.saturating_sub(kd).div_ceil(self.stride);
        let hi = (self.input + self.pad_before)
            .saturating_sub(kd)
            .div_ceil(self.stride)
            .min(self.output);
        lo.min(hi)..hi
    }

    /// The outputs whose window (dilation 1) contains input `i`: `lo..hi`.
    #[inline]
    pub fn windows_containing(&self, i: usize) -> std::ops::Range<usize> {
        let ip = i + self.pad_before;
        let lo = if ip < self.kernel {
            0
        } else {
            (ip - self.kernel) / self.stride + 1
        };
        let hi = (ip / self.stride + 1).min(self.output);
        lo..hi.max(lo)
    }

    /// Computes an axis's geometry from the attributes, with TF's checks.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        op: &'static str,
        axis: &'static str,
        input: usize,
        kernel: usize,
        stride: usize,
        dilation: usize,
        padding: Padding,
        which: usize,
        rounding: Option<DimRounding>,
    ) -> Result<Self> {
        if stride == 0 {
            return Err(Error::attr(
                op,
                "strides",
                format!("must be positive, got 0 ({axis})"),
            ));
        }
        if dilation == 0 {
            return Err(Error::attr(
                op,
                "dilations",
                format!("must be positive, got 0 ({axis})"),
            ));
        }
        let big = |what: &str| Error::Overflow {
            op,
            arg: "padding",
            msg: format!("{axis}: {what} overflows"),
        };
        // SPEC.md's formulas in signed arithmetic: a zero-sized kernel (conv only; pooling
        // rejects it first) has `ke = 1 - d <= 0`, and a window that does not fit the padded
        // input by less than one stride gives `out = 0`, which is valid. Only a negative
        // `out` is an error. Every value fits i128 (sizes are at most 2^64 - 1).
        let (s, d) = (stride as i128, dilation as i128);
        let ke = (kernel as i128 - 1)
            .checked_mul(d)
            .ok_or_else(|| big("effective kernel"))?
            + 1;
        let negative = |padded: usize, out: i128| {
            Error::attr(
                op,
                "padding",
                format!(
                    "{axis}: window of effective size {ke} does not fit the padded input of size {padded}: computed output size {out} would be negative"
                ),
            )
        };
        let to_usize = |out: i128| usize::try_from(out).map_err(|_| big("output size"));
        let (output, before, after) = match padding {
            Padding::Valid => {
                // ceil((in - ke + 1)/s) = floor((in - ke + s)/s)
                let out = (input as i128 - ke + s).div_euclid(s);
                if out < 0 {
                    return Err(negative(input, out));
                }
                (to_usize(out)?, 0, 0)
            }
            Padding::Same => {
                let out = input.div_ceil(stride);
                let need = if out == 0 {
                    0
                } else {
                    ((out as i128 - 1) * s + ke - input as i128).max(0)
                };
                let need = usize::try_from(need).map_err(|_| big("padding"))?;
                (out, need / 2, need - need / 2)
            }
            Padding::Explicit(p) => {
                let [b, a] = p[which];
                let padded = input
                    .checked_add(b)
                    .and_then(|v| v.checked_add(a))
                    .ok_or_else(|| big("padded size"))?;
                let span = padded as i128 - ke;
                // out = R(span/s) + 1 = R((span + s)/s) with R the rounding (tfjs rounds
                // `(in + pads - ke)/s + 1` with Math.round: half up).
                let num = span + s;
                let out = match rounding {
                    None | Some(DimRounding::Floor) => num.div_euclid(s),
                    Some(DimRounding::Ceil) => -(-num).div_euclid(s),
                    Some(DimRounding::Round) => {
                        num.div_euclid(s) + i128::from(2 * num.rem_euclid(s) >= s)
                    }
                };
                if out < 0 {
                    return Err(negative(padded, out));
                }
                (to_usize(out)?, b, a)
            }
        };
        Ok(WindowAxis {
            input,
            output,
            kernel,
            stride,
            dilation,
            pad_before: before,
            pad_after: after,
        })
    }
}

/// Attributes shared by conv and pool: strides, dilations, padding, tfjs dim rounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowAttrs {
    /// `[stride_h, stride_w]`.
    pub strides: [usize; 2],
    /// `[dilation_h, dilation_w]`.
    pub dilations: [usize; 2],
    /// Padding.
    pub padding: Padding,
    /// tfjs `dimRoundingMode` (explicit padding only).
    pub dim_rounding: Option<DimRounding>,
}

impl Default for WindowAttrs {
    fn default() -> Self {
        WindowAttrs {
            strides: [1, 1],
            dilations: [1, 1],
            padding: Padding::Valid,
            dim_rounding: None,
        }
    }
}

impl WindowAttrs {
    pub(crate) fn axes(
        &self,
        op: &'static str,
        input: Dims,
        kernel: [usize; 2],
    ) -> Result<(WindowAxis, WindowAxis)> {
        if self.dim_rounding.is_some() && !matches!(self.padding, Padding::Explicit(_)) {
            return Err(Error::attr(
                op,
                "dim_rounding_mode",
                format!(
                    "only applies to explicit padding, got padding {:?}",
                    self.padding
                ),
            ));
        }
        let h = WindowAxis::new(
            op,
            "height",
            input.h,
            kernel[0],
            self.strides[0],
            self.dilations[0],
            self.padding,
            0,
            self.dim_rounding,
        )?;
        let w = WindowAxis::new(
            op,
            "width",
            input.w,
            kernel[1],
            self.strides[1],
            self.dilations[1],
            self.padding,
            1,
            self.dim_rounding,
        )?;
        Ok((h, w))
    }
}

/// Geometry of a 2-D convolution (forward `x -> y`, backward `dy -> dx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConvGeometry {
    /// Batch.
    pub n: usize,
    /// Input channels.
    pub ci: usize,
    /// Output channels.
    pub co: usize,
    /// Groups (`ci / filter_in_channels`).
    pub groups: usize,
    /// Height axis.
    pub h: WindowAxis,
    /// Width axis.
    pub w: WindowAxis,
}

impl ConvGeometry {
    /// Validates the conv of `input` dims with an HWIO filter shape `[kh, kw, ci/groups, co]`.
    pub fn new(
        op: &'static str,
        input: Dims,
        filter_hwio: [usize; 4],
        attrs: &WindowAttrs,
    ) -> Result<Self> {
        let [kh, kw, fci, co] = filter_hwio;
        // Zero input channels would make zero groups (TF divides by it): a mismatch too.
        if fci == 0 || input.c == 0 || !input.c.is_multiple_of(fci) {
            return Err(Error::shape(
                op,
                "filter",
                format!(
                    "input channels {} must be a positive multiple of the filter's input channels {} (filter HWIO {:?})",
                    input.c, fci, filter_hwio
                ),
            ));
        }
        let groups = input.c / fci;
        if co % groups != 0 {
            return Err(Error::shape(
                op,
                "filter",
                format!("output channels {co} are not divisible by groups {groups} (input channels {} / filter input channels {fci})", input.c),
            ));
        }
        let (h, w) = attrs.axes(op, input, [kh, kw])?;
        let g = ConvGeometry {
            n: input.n,
            ci: input.c,
            co,
            groups,
            h,
            w,
        };
        g.input_dims().len(op, "input_shape")?;
        g.output_dims().len(op, "dy")?;
        Ok(g)
    }

    /// Dims of the conv input (`x`, `dx`).
    pub fn input_dims(&self) -> Dims {
        Dims {
            n: self.n,
            c: self.ci,
            h: self.h.input,
            w: self.w.input,
        }
    }

    /// Dims of the conv output (`y`, `dy`).
    pub fn output_dims(&self) -> Dims {
        Dims {
            n: self.n,
            c: self.co,
            h: self.h.output,
            w: self.w.output,
        }
    }

    /// Filter shape, HWIO.
    pub fn filter_hwio(&self) -> [usize; 4] {
        [self.h.kernel, self.w.kernel, self.ci / self.groups, self.co]
    }
}

/// Geometry of a 2-D max pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PoolGeometry {
    /// Batch.
    pub n: usize,
    /// Channels.
    pub c: usize,
    /// Height axis.
    pub h: WindowAxis,
    /// Width axis.
    pub w: WindowAxis,
}

impl PoolGeometry {
    /// Validates a pool of `input` dims with window `ksize`.
    pub fn new(
        op: &'static str,
        input: Dims,
        ksize: [usize; 2],
        attrs: &WindowAttrs,
    ) -> Result<Self> {
        if attrs.dilations != [1, 1] {
            return Err(Error::attr(
                op,
                "dilations",
                format!(
                    "max pool supports dilation 1 only, got {:?}",
                    attrs.dilations
                ),
            ));
        }
        if ksize.contains(&0) {
            return Err(Error::attr(
                op,
                "ksize",
                format!("must be positive, got {ksize:?}"),
            ));
        }
        if let Padding::Explicit(p) = attrs.padding {
            for (axis, [b, a]) in p.iter().enumerate() {
                if *b >= ksize[axis] || *a >= ksize[axis] {
                    return Err(Error::attr(
                        op,
                        "padding",
                        format!("explicit padding {p:?} must be smaller than the window {ksize:?}"),
                    ));
                }
            }
        }
        let (h, w) = attrs.axes(op, input, ksize)?;
        let g = PoolGeometry {
            n: input.n,
            c: input.c,
            h,
            w,
        };
        g.output_dims().len(op, "dy")?;
        Ok(g)
    }

    /// Dims of the pool input (`x`, `dx`).
    pub fn input_dims(&self) -> Dims {
        Dims {
            n: self.n,
            c: self.c,
            h: self.h.input,
            w: self.w.input,
        }
    }

    /// Dims of the pool output (`y`, `dy`).
    pub fn output_dims(&self) -> Dims {
        Dims {
            n: self.n,
            c: self.c,
            h: self.h.output,
            w: self.w.output,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axis(input: usize, k: usize, s: usize, p: Padding) -> WindowAxis {
        WindowAxis::new("t", "height", input, k, s, 1, p, 0, None).unwrap()
    }

    #[test]
    fn same_puts_extra_pixel_after() {
        let a = axis(56, 3, 2, Padding::Same);
        assert_eq!((a.output, a.pad_before, a.pad_after), (28, 0, 1));
        let a = axis(5, 4, 1, Padding::Same);
        assert_eq!((a.output, a.pad_before, a.pad_after), (5, 1, 2));
    }

    #[test]
    fn valid_and_explicit() {
        assert_eq!(axis(7, 3, 2, Padding::Valid).output, 3);
        assert_eq!(axis(7, 3, 2, Padding::Explicit([[1, 1], [0, 0]])).output, 4);
        assert_eq!(axis(2, 3, 1, Padding::Valid).output, 0); // TF: (2 - 3 + 1) / 1 = 0, not an error
        assert!(WindowAxis::new("t", "h", 1, 3, 1, 1, Padding::Valid, 0, None).is_err());
    }

    #[test]
    fn windows_that_do_not_fit_by_less_than_a_stride_give_zero_outputs() {
        let ax = |input, k, s, d, p, r| WindowAxis::new("t", "h", input, k, s, d, p, 0, r);
        let pads = |b, a| Padding::Explicit([[b, a], [0, 0]]);
        // in 2, pads [2, 2], kernel 4 dilated 2 (effective 7), stride 3: floor(-1/3) + 1 = 0.
        assert_eq!(ax(2, 4, 3, 2, pads(2, 2), None).unwrap().output, 0);
        // A zero-sized axis with zero padding and a 1-wide window: floor(-1/1) + 1 = 0.
        assert_eq!(ax(0, 1, 1, 1, pads(0, 0), None).unwrap().output, 0);
        assert_eq!(ax(0, 1, 1, 1, Padding::Valid, None).unwrap().output, 0);
        // Exactly one stride short: floor(-3/3) + 1 = 0; more: negative, an error.
        assert_eq!(ax(2, 4, 3, 2, pads(1, 1), None).unwrap().output, 0);
        let e = ax(2, 4, 3, 2, pads(0, 1), None).unwrap_err().to_string();
        assert!(
            e.contains("computed output size -1 would be negative"),
            "{e}"
        );
        assert!(ax(1, 3, 1, 1, pads(0, 0), None).is_err());
        assert!(ax(0, 2, 1, 1, Padding::Valid, None).is_err());
        // tfjs rounding of (span + s)/s: ceil(2/3) = 1, round(2/3) = 1, floor(2/3) = 0.
        let r = |m| ax(2, 3, 3, 1, pads(0, 0), Some(m)).unwrap().output;
        assert_eq!(
            [
                r(DimRounding::Floor),
                r(DimRounding::Ceil),
                r(DimRounding::Round)
            ],
            [0, 1, 1]
        );
        // Same, with a zero-sized input: out = 0, no padding.
        let a = ax(0, 3, 2, 1, Padding::Same, None).unwrap();
        assert_eq!((a.output, a.pad_before, a.pad_after), (0, 0, 0));
    }

    #[test]
    fn zero_sized_kernels_follow_the_formulas() {
        // ke = (0 - 1)*d + 1 = 1 - d: VALID out = ceil((in - ke + 1)/s), as TF computes it.
        let ax = |input, s, d, p| WindowAxis::new("t", "h", input, 0, s, d, p, 0, None);
        assert_eq!(ax(5, 1, 1, Padding::Valid).unwrap().output, 6);
        assert_eq!(ax(5, 2, 3, Padding::Valid).unwrap().output, 4); // ceil(8/2)
        assert_eq!(ax(0, 1, 1, Padding::Valid).unwrap().output, 1);
        let a = ax(5, 2, 1, Padding::Same).unwrap();
        assert_eq!((a.output, a.pad_before, a.pad_after), (3, 0, 0));
        let e = ax(4, 1, 2, Padding::Explicit([[1, 0], [0, 0]])).unwrap();
        assert_eq!(e.output, 7); // floor((4 + 1 + 1)/1) + 1
        assert_eq!(e.effective_kernel(), 0);
        assert_eq!(
            ax(4, 1, 2, Padding::Valid).unwrap().input_index(0, 0),
            Some(0)
        );
    }

    #[test]
    fn huge_values_are_errors_not_overflows() {
        let m = usize::MAX;
        assert!(WindowAxis::new("t", "h", m, m, 1, m, Padding::Valid, 0, None).is_err());
        assert!(WindowAxis::new("t", "h", m, 0, 1, m, Padding::Valid, 0, None).is_err());
        let p = Padding::Explicit([[m, m], [0, 0]]);
        assert!(WindowAxis::new("t", "h", m, 1, 1, 1, p, 0, None).is_err());
        for r in [DimRounding::Floor, DimRounding::Ceil, DimRounding::Round] {
            let p = Padding::Explicit([[0, 0], [0, 0]]);
            assert!(WindowAxis::new("t", "h", 1, m, 1, m / 2, p, 0, Some(r)).is_err());
        }
    }

    #[test]
    fn windows_reaching_matches_brute_force() {
        for (input, kernel, stride, dilation, pad_before) in (0..7).flat_map(|i| {
            (1..4).flat_map(move |k| {
                (1..4).flat_map(move |s| {
                    (1..3).flat_map(move |d| (0..4).map(move |p| (i, k, s, d, p)))
                })
            })
        }) {
            let ax = WindowAxis {
                input,
                output: (input + 2 * pad_before).saturating_sub((kernel - 1) * dilation) / stride
                    + 1,
                kernel,
                stride,
                dilation,
                pad_before,
                pad_after: pad_before,
            };
            for k in 0..kernel {
                let want: Vec<usize> = (0..ax.output)
                    .filter(|&o| ax.input_index(o, k).is_some())
                    .collect();
                let got: Vec<usize> = ax.windows_reaching(k).collect();
                assert_eq!(got, want, "{ax:?} tap {k}");
            }
        }
    }

    #[test]
    fn windows_containing_matches_brute_force() {
        for (input, k, s, p) in [
            (9, 3, 2, Padding::Same),
            (10, 2, 3, Padding::Valid),
            (7, 3, 1, Padding::Explicit([[2, 1], [0, 0]])),
        ] {
            let a = axis(input, k, s, p);
            for i in 0..input {
                let brute: Vec<usize> = (0..a.output)
                    .filter(|&o| (0..k).any(|t| a.input_index(o, t) == Some(i)))
                    .collect();
                let r: Vec<usize> = a.windows_containing(i).collect();
                assert_eq!(r, brute, "i={i} {a:?}");
            }
        }
    }
}

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
    /// Round half away from zero.
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
    /// Effective kernel extent `(k-1)*d + 1`.
    pub fn effective_kernel(&self) -> usize {
        (self.kernel - 1) * self.dilation + 1
    }

    /// Input index of output `o` at tap `k`, or `None` when it falls in the padding.
    #[inline]
    pub fn input_index(&self, o: usize, k: usize) -> Option<usize> {
        let p = (o * self.stride + k * self.dilation).checked_sub(self.pad_before)?;
        (p < self.input).then_some(p)
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
        if kernel == 0 {
            return Err(Error::attr(
                op,
                "filter",
                format!("{axis} kernel size must be positive, got 0"),
            ));
        }
        let big = |what: &str| Error::Overflow {
            op,
            arg: "padding",
            msg: format!("{axis}: {what} overflows"),
        };
        let ke = (kernel - 1)
            .checked_mul(dilation)
            .and_then(|v| v.checked_add(1))
            .ok_or_else(|| big("effective kernel"))?;
        let negative = |padded: usize| {
            Error::attr(
                op,
                "padding",
                format!(
                    "{axis}: window of effective size {ke} does not fit the padded input of size {padded}: computed output size would be negative"
                ),
            )
        };
        let (output, before, after) = match padding {
            Padding::Valid => {
                if input + stride < ke {
                    return Err(negative(input));
                }
                ((input + stride - ke) / stride, 0, 0)
            }
            Padding::Same => {
                let out = input.div_ceil(stride);
                let need = (out.saturating_sub(1) * stride + ke).saturating_sub(input);
                let need = if out == 0 { 0 } else { need };
                (out, need / 2, need - need / 2)
            }
            Padding::Explicit(p) => {
                let [b, a] = p[which];
                let padded = input
                    .checked_add(b)
                    .and_then(|v| v.checked_add(a))
                    .ok_or_else(|| big("padded size"))?;
                if padded < ke {
                    return Err(negative(padded));
                }
                let span = padded - ke;
                let out = match rounding {
                    None | Some(DimRounding::Floor) => span / stride + 1,
                    Some(DimRounding::Ceil) => span.div_ceil(stride) + 1,
                    Some(DimRounding::Round) => {
                        // round half away from zero of span/stride (non-negative)
                        (2 * span + stride) / (2 * stride) + 1
                    }
                };
                (out, b, a)
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
        if fci == 0 || input.c % fci != 0 {
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

//! Resize index math: source coordinates, rounding, and the per-axis tables every resize op
//! (forward and backward, linear and nearest, CPU and CUDA) is computed from.
//!
//! The forward map is written once ([`AxisMap`]); the backward tables are its exact transpose,
//! so `resize` and `resize_grad` are adjoint by construction and share one gather kernel.

use crate::dtype::Accum;
use crate::error::{Error, Result};
use crate::tensor::Dims;

/// Interpolation mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ResizeMode {
    /// Bilinear (per axis: linear).
    #[default]
    Linear,
    /// Nearest neighbour.
    Nearest,
}

/// ONNX `coordinate_transformation_mode`: where output index `o` samples the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CoordinateTransform {
    /// `r*(o+0.5) - 0.5` (ONNX default; TF `half_pixel_centers` for bilinear).
    #[default]
    HalfPixel,
    /// As `HalfPixel`, but `0` when the output axis has length 1.
    PytorchHalfPixel,
    /// `r*o` with `r = (in-1)/(out-1)` (scales ignored).
    AlignCorners,
    /// `r*o` (TF's legacy mode).
    Asymmetric,
    /// `r*(o+0.5)` (TF nearest with `half_pixel_centers`).
    TfHalfPixelForNn,
}

/// ONNX `nearest_mode`: how a source coordinate is rounded in nearest mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum NearestMode {
    /// Round half down (ONNX default).
    #[default]
    RoundPreferFloor,
    /// Round half up (TF `align_corners`: round half away from zero).
    RoundPreferCeil,
    /// Floor.
    Floor,
    /// Ceil.
    Ceil,
}

macro_rules! string_enum {
    ($t:ty, $what:literal, { $($s:literal => $v:expr),* $(,)? }) => {
        impl std::str::FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> std::result::Result<Self, String> {
                match s {
                    $($s => Ok($v),)*
                    other => Err(format!(
                        concat!("unknown ", $what, " {:?} (expected one of: {})"),
                        other,
                        [$($s),*].join(", ")
                    )),
                }
            }
        }
        impl $t {
            /// The ONNX attribute string.
            pub fn name(self) -> &'static str {
                $(if self == $v { return $s; })*
                unreachable!()
            }
        }
    };
}

string_enum!(ResizeMode, "mode", { "linear" => ResizeMode::Linear, "nearest" => ResizeMode::Nearest });
string_enum!(CoordinateTransform, "coordinate_transformation_mode", {
    "half_pixel" => CoordinateTransform::HalfPixel,
    "pytorch_half_pixel" => CoordinateTransform::PytorchHalfPixel,
    "align_corners" => CoordinateTransform::AlignCorners,
    "asymmetric" => CoordinateTransform::Asymmetric,
    "tf_half_pixel_for_nn" => CoordinateTransform::TfHalfPixelForNn,
});
string_enum!(NearestMode, "nearest_mode", {
    "round_prefer_floor" => NearestMode::RoundPreferFloor,
    "round_prefer_ceil" => NearestMode::RoundPreferCeil,
    "floor" => NearestMode::Floor,
    "ceil" => NearestMode::Ceil,
});

/// The complete description of a resize (forward or backward), ONNX-style.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ResizeAttrs {
    /// Interpolation mode.
    pub mode: ResizeMode,
    /// Coordinate transformation mode.
    pub coordinate_transformation_mode: CoordinateTransform,
    /// Rounding in nearest mode (ignored in linear mode).
    pub nearest_mode: NearestMode,
    /// Optional `[scale_h, scale_w]`; when present the ratio is `1/scale` rather than `in/out`.
    pub scales: Option<[f64; 2]>,
}

impl ResizeAttrs {
    /// Defaults: linear, `half_pixel`, `round_prefer_floor`, no scales.
    pub fn new(mode: ResizeMode) -> Self {
        ResizeAttrs {
            mode,
            ..Default::default()
        }
    }

    /// Sets the coordinate transformation mode.
    pub fn coordinate_transformation_mode(mut self, m: CoordinateTransform) -> Self {
        self.coordinate_transformation_mode = m;
        self
    }

    /// Sets the nearest rounding mode.
    pub fn nearest_mode(mut self, m: NearestMode) -> Self {
        self.nearest_mode = m;
        self
    }

    /// Sets `[scale_h, scale_w]`.
    pub fn scales(mut self, s: Option<[f64; 2]>) -> Self {
        self.scales = s;
        self
    }

    /// The TensorFlow attribute pair mapped to ONNX semantics (SPEC table). `op` names the
    /// caller for the error when both flags are set.
    pub fn from_tf(
        op: &'static str,
        mode: ResizeMode,
        align_corners: bool,
        half_pixel_centers: bool,
    ) -> Result<Self> {
        use CoordinateTransform::*;
        let (ctm, nearest) = match (align_corners, half_pixel_centers, mode) {
            (true, true, _) => {
                return Err(Error::attr(
                    op,
                    "half_pixel_centers",
                    "align_corners=true and half_pixel_centers=true cannot both be set",
                ))
            }
            (false, false, _) => (Asymmetric, NearestMode::Floor),
            (true, false, _) => (AlignCorners, NearestMode::RoundPreferCeil),
            (false, true, ResizeMode::Linear) => (HalfPixel, NearestMode::Floor),
            (false, true, ResizeMode::Nearest) => (TfHalfPixelForNn, NearestMode::Floor),
        };
        Ok(ResizeAttrs {
            mode,
            coordinate_transformation_mode: ctm,
            nearest_mode: nearest,
            scales: None,
        })
    }
}

/// Normalises an ONNX `scales` list (`[1, 1, sh, sw]` or `[sh, sw]`) to `[sh, sw]`.
pub fn normalize_scales(op: &'static str, scales: &[f64]) -> Result<[f64; 2]> {
    let s = match scales.len() {
        2 => [scales[0], scales[1]],
        4 => {
            if scales[0] != 1.0 || scales[1] != 1.0 {
                return Err(Error::attr(
                    op,
                    "scales",
                    format!("batch and channel scales must be 1, got {:?}", &scales[..2]),
                ));
            }
            [scales[2], scales[3]]
        }
        n => {
            return Err(Error::attr(
                op,
                "scales",
                format!("must have length 2 or 4, got length {n}: {scales:?}"),
            ))
        }
    };
    Ok(s)
}

/// The forward map of one axis: output index -> source coordinate -> input indices and weights.
#[derive(Debug, Clone, Copy)]
pub struct AxisMap<A> {
    /// Input length.
    pub in_len: usize,
    /// Output length.
    pub out_len: usize,
    ratio: A,
    ctm: CoordinateTransform,
    mode: ResizeMode,
    nearest: NearestMode,
}

impl<A: Accum> AxisMap<A> {
    /// The map for one axis. `scale` is this axis's optional scale (validated by the caller).
    pub fn new(in_len: usize, out_len: usize, scale: Option<f64>, attrs: &ResizeAttrs) -> Self {
        let ctm = attrs.coordinate_transformation_mode;
        let ratio = if ctm == CoordinateTransform::AlignCorners {
            if out_len > 1 {
                A::from_index(in_len - 1) / A::from_index(out_len - 1)
            } else {
                A::zero()
            }
        } else if let Some(s) = scale {
            A::one() / A::from_f64_lossy(s)
        } else if out_len > 0 {
            A::from_index(in_len) / A::from_index(out_len)
        } else {
            A::zero()
        };
        AxisMap {
            in_len,
            out_len,
            ratio,
            ctm,
            mode: attrs.mode,
            nearest: attrs.nearest_mode,
        }
    }

    /// Source coordinate of output index `o` (before clamping).
    #[inline]
    pub fn source(&self, o: usize) -> A {
        let half = A::from_f64_lossy(0.5);
        let o = A::from_index(o);
        match self.ctm {
            CoordinateTransform::HalfPixel => self.ratio * (o + half) - half,
            CoordinateTransform::PytorchHalfPixel => {
                if self.out_len > 1 {
                    self.ratio * (o + half) - half
                } else {
                    A::zero()
                }
            }
            CoordinateTransform::AlignCorners | CoordinateTransform::Asymmetric => self.ratio * o,
            CoordinateTransform::TfHalfPixelForNn => self.ratio * (o + half),
        }
    }

    /// Linear mode: `(i0, i1, l0, l1)` for output `o`. Requires `in_len > 0`.
    #[inline]
    pub fn linear(&self, o: usize) -> (usize, usize, A, A) {
        let src = self.source(o).max(A::zero());
        let f = src.floor();
        let last = self.in_len - 1;
        // `src < in_len` for every valid geometry; the min only guards rounding at the edge.
        let i0 = f.to_usize().unwrap_or(last).min(last);
        let i1 = (i0 + 1).min(last);
        let l1 = src - A::from_index(i0);
        let l0 = A::one() - l1;
        (i0, i1, l0, l1)
    }

    /// Nearest mode: the input index output `o` copies. Requires `in_len > 0`.
    #[inline]
    pub fn nearest(&self, o: usize) -> usize {
        let src = self.source(o);
        let half = A::from_f64_lossy(0.5);
        let r = match self.nearest {
            NearestMode::Floor => src.floor(),
            NearestMode::Ceil => src.ceil(),
            NearestMode::RoundPreferFloor => {
                if src - src.floor() == half {
                    src.floor()
                } else {
                    src.round()
                }
            }
            NearestMode::RoundPreferCeil => {
                if src - src.floor() == half {
                    src.ceil()
                } else {
                    src.round()
                }
            }
        };
        let last = self.in_len - 1;
        if r <= A::zero() {
            0
        } else {
            r.to_usize().unwrap_or(last).min(last)
        }
    }

    /// Calls `f(i, w)` for each input index output `o` reads, in a fixed order.
    #[inline]
    pub fn for_each_source(&self, o: usize, mut f: impl FnMut(usize, A)) {
        if self.in_len == 0 {
            return;
        }
        match self.mode {
            ResizeMode::Linear => {
                let (i0, i1, l0, l1) = self.linear(o);
                f(i0, l0);
                f(i1, l1);
            }
            ResizeMode::Nearest => f(self.nearest(o), A::one()),
        }
    }
}

/// One axis of a gather, in compressed-row form: destination index `d` reads the source indices
/// `index[offsets[d]..offsets[d+1]]` with the matching `weight`s.
///
/// The same arrays are uploaded to the GPU; `u32` keeps them small there.
#[derive(Debug, Clone, PartialEq)]
pub struct AxisTable<A> {
    /// `dst_len + 1` offsets into `index` / `weight`.
    pub offsets: Vec<u32>,
    /// Source indices.
    pub index: Vec<u32>,
    /// Weights, in the accumulation type.
    pub weight: Vec<A>,
    /// Length of the source axis.
    pub src_len: usize,
}

impl<A: Accum> AxisTable<A> {
    /// Destination length.
    pub fn dst_len(&self) -> usize {
        self.offsets.len() - 1
    }

    /// The `(source index, weight)` entries of destination `d`.
    #[inline]
    pub fn entries(&self, d: usize) -> impl Iterator<Item = (usize, A)> + '_ {
        let (a, b) = (self.offsets[d] as usize, self.offsets[d + 1] as usize);
        self.index[a..b]
            .iter()
            .zip(&self.weight[a..b])
            .map(|(&i, &w)| (i as usize, w))
    }

    /// The forward table: for each output index, the input indices it reads.
    pub fn forward(map: &AxisMap<A>) -> Self {
        let mut offsets = Vec::with_capacity(map.out_len + 1);
        let mut index = Vec::with_capacity(2 * map.out_len);
        let mut weight = Vec::with_capacity(2 * map.out_len);
        offsets.push(0);
        for o in 0..map.out_len {
            map.for_each_source(o, |i, w| {
                index.push(i as u32);
                weight.push(w);
            });
            offsets.push(index.len() as u32);
        }
        AxisTable {
            offsets,
            index,
            weight,
            src_len: map.in_len,
        }
    }

    /// The transpose: for each source index of `self`, the destinations that read it, in
    /// ascending destination order. This is the backward table of a forward table.
    pub fn transpose(&self) -> Self {
        let dst_len = self.src_len;
        let mut counts = vec![0u32; dst_len + 1];
        for &i in &self.index {
            counts[i as usize + 1] += 1;
        }
        for k in 0..dst_len {
            counts[k + 1] += counts[k];
        }
        let offsets = counts.clone();
        let mut cursor = counts;
        let mut index = vec![0u32; self.index.len()];
        let mut weight = vec![A::zero(); self.index.len()];
        for d in 0..self.dst_len() {
            for (i, w) in self.entries(d) {
                let at = cursor[i] as usize;
                index[at] = d as u32;
                weight[at] = w;
                cursor[i] += 1;
            }
        }
        AxisTable {
            offsets,
            index,
            weight,
            src_len: self.dst_len(),
        }
    }

    /// True when this table is the identity: square, and each destination takes exactly its own
    /// index with total weight 1 (other entries weigh 0).
    pub fn is_identity(&self) -> bool {
        if self.src_len != self.dst_len() {
            return false;
        }
        (0..self.dst_len()).all(|d| {
            let mut own = A::zero();
            for (i, w) in self.entries(d) {
                if i == d {
                    own = own + w;
                } else if w != A::zero() {
                    return false;
                }
            }
            own == A::one()
        })
    }

    /// `Some(f)` when this table is a box of `f`: destination `d` takes exactly sources
    /// `f*d .. f*d + f`, in order, each with weight 1, and there are `f * dst_len` sources
    /// (the gradient of a nearest resize by the integer factor `f`, e.g. `asymmetric` +
    /// `floor`). The GPU then sums without reading the table.
    pub fn box_factor(&self) -> Option<usize> {
        let dst = self.dst_len();
        if dst == 0 || !self.src_len.is_multiple_of(dst) {
            return None;
        }
        let f = self.src_len / dst;
        let regular = (0..dst).all(|d| {
            let (a, b) = (self.offsets[d] as usize, self.offsets[d + 1] as usize);
            b - a == f
                && (0..f).all(|t| {
                    self.index[a + t] as usize == f * d + t && self.weight[a + t] == A::one()
                })
        });
        regular.then_some(f)
    }
}

/// A validated resize: source and destination dims plus the two axis tables of the gather
/// `dst[n,c,i,j] = sum_a sum_b wy[a] * wx[b] * src[n,c,y[a],x[b]]`.
#[derive(Debug, Clone)]
pub struct ResizePlan<A> {
    /// Dims of the tensor read (`x` forward, `dy` backward).
    pub src: Dims,
    /// Dims of the tensor written (`y` forward, `dx` backward).
    pub dst: Dims,
    /// Height table (destination rows).
    pub y: AxisTable<A>,
    /// Width table (destination columns).
    pub x: AxisTable<A>,
    /// The map is the identity: `dst` is a copy of `src`.
    pub identity: bool,
}

fn check_axis_u32(op: &'static str, arg: &'static str, len: usize) -> Result<()> {
    // Two table entries per output index must fit the u32 offsets.
    if len > (u32::MAX as usize) / 2 {
        return Err(Error::Overflow {
            op,
            arg,
            msg: format!("axis length {len} exceeds {}", u32::MAX / 2),
        });
    }
    Ok(())
}

impl<A: Accum> ResizePlan<A> {
    fn axis_maps(
        op: &'static str,
        input: Dims,
        output: Dims,
        attrs: &ResizeAttrs,
    ) -> Result<(AxisMap<A>, AxisMap<A>)> {
        for (arg, len) in [
            ("x", input.h),
            ("x", input.w),
            ("dy", output.h),
            ("dy", output.w),
        ] {
            check_axis_u32(op, arg, len)?;
        }
        let (sh, sw) = match attrs.scales {
            None => (None, None),
            Some(s) => {
                for v in s {
                    if !v.is_finite() || v <= 0.0 {
                        return Err(Error::attr(
                            op,
                            "scales",
                            format!("must be finite and > 0, got {s:?}"),
                        ));
                    }
                }
                // The output size a scale implies, computed in the accumulation type
                // (f32 for f16/f32, as ONNX Runtime does).
                let implied = |len: usize, s: f64| -> usize {
                    (A::from_index(len) * A::from_f64_lossy(s))
                        .floor()
                        .to_usize()
                        .unwrap_or(usize::MAX)
                };
                let (ih, iw) = (implied(input.h, s[0]), implied(input.w, s[1]));
                if ih != output.h || iw != output.w {
                    return Err(Error::attr(
                        op,
                        "scales",
                        format!(
                            "scales {:?} with input {}x{} imply output {}x{}, but the output is {}x{}",
                            s, input.h, input.w, ih, iw, output.h, output.w
                        ),
                    ));
                }
                (Some(s[0]), Some(s[1]))
            }
        };
        Ok((
            AxisMap::new(input.h, output.h, sh, attrs),
            AxisMap::new(input.w, output.w, sw, attrs),
        ))
    }

    /// Plan of the forward resize `x (input dims) -> y (output dims)`.
    pub fn forward(
        op: &'static str,
        input: Dims,
        output: Dims,
        attrs: &ResizeAttrs,
    ) -> Result<Self> {
        let (my, mx) = Self::axis_maps(op, input, output, attrs)?;
        let (y, x) = (AxisTable::forward(&my), AxisTable::forward(&mx));
        let identity = y.is_identity() && x.is_identity();
        Ok(ResizePlan {
            src: input,
            dst: output,
            y,
            x,
            identity,
        })
    }

    /// Plan of the backward resize `dy (output dims) -> dx (input dims)`: the transposed tables.
    pub fn backward(
        op: &'static str,
        input: Dims,
        output: Dims,
        attrs: &ResizeAttrs,
    ) -> Result<Self> {
        let f = Self::forward(op, input, output, attrs)?;
        Ok(ResizePlan {
            src: output,
            dst: input,
            y: f.y.transpose(),
            x: f.x.transpose(),
            identity: f.identity,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(mode: ResizeMode, ctm: CoordinateTransform, nm: NearestMode) -> ResizeAttrs {
        ResizeAttrs::new(mode)
            .coordinate_transformation_mode(ctm)
            .nearest_mode(nm)
    }

    #[test]
    fn half_pixel_upsample_weights() {
        let a = attrs(
            ResizeMode::Linear,
            CoordinateTransform::HalfPixel,
            NearestMode::Floor,
        );
        let m = AxisMap::<f64>::new(2, 4, None, &a);
        // r = 0.5: sources -0.25 (clamped to 0), 0.25, 0.75, 1.25
        assert_eq!(m.linear(0), (0, 1, 1.0, 0.0));
        assert_eq!(m.linear(1), (0, 1, 0.75, 0.25));
        assert_eq!(m.linear(3), (1, 1, 0.75, 0.25));
    }

    #[test]
    fn nearest_rounding_modes() {
        // r = 0.5 asymmetric: sources 0, .5, 1, 1.5
        let src = |nm| {
            let m = AxisMap::<f32>::new(
                2,
                4,
                None,
                &attrs(ResizeMode::Nearest, CoordinateTransform::Asymmetric, nm),
            );
            (0..4).map(|o| m.nearest(o)).collect::<Vec<_>>()
        };
        assert_eq!(src(NearestMode::Floor), vec![0, 0, 1, 1]);
        assert_eq!(src(NearestMode::Ceil), vec![0, 1, 1, 1]);
        assert_eq!(src(NearestMode::RoundPreferFloor), vec![0, 0, 1, 1]);
        assert_eq!(src(NearestMode::RoundPreferCeil), vec![0, 1, 1, 1]);
    }

    #[test]
    fn transpose_is_inverse_and_identity_detection() {
        let a = attrs(
            ResizeMode::Linear,
            CoordinateTransform::HalfPixel,
            NearestMode::Floor,
        );
        let t = AxisTable::forward(&AxisMap::<f64>::new(5, 13, None, &a));
        assert_eq!(t.transpose().transpose(), t);
        assert!(!t.is_identity());
        let id = AxisTable::forward(&AxisMap::<f64>::new(7, 7, None, &a));
        assert!(id.is_identity());
        let nn = attrs(
            ResizeMode::Nearest,
            CoordinateTransform::TfHalfPixelForNn,
            NearestMode::Ceil,
        );
        assert!(!AxisTable::forward(&AxisMap::<f64>::new(7, 7, None, &nn)).is_identity());
        let nn_floor = attrs(
            ResizeMode::Nearest,
            CoordinateTransform::TfHalfPixelForNn,
            NearestMode::Floor,
        );
        assert!(AxisTable::forward(&AxisMap::<f64>::new(7, 7, None, &nn_floor)).is_identity());
    }

    #[test]
    fn box_factor_detection() {
        let nearest = |ctm, nm| attrs(ResizeMode::Nearest, ctm, nm);
        let grad = |a: &ResizeAttrs, inn, out| {
            AxisTable::forward(&AxisMap::<f32>::new(inn, out, None, a))
                .transpose()
                .box_factor()
        };
        let floor = nearest(CoordinateTransform::Asymmetric, NearestMode::Floor);
        assert_eq!(grad(&floor, 128, 256), Some(2));
        assert_eq!(grad(&floor, 5, 15), Some(3));
        assert_eq!(grad(&floor, 7, 7), Some(1));
        // half_pixel + round_prefer_floor at 2x is the same box.
        let hp = nearest(
            CoordinateTransform::HalfPixel,
            NearestMode::RoundPreferFloor,
        );
        assert_eq!(grad(&hp, 64, 128), Some(2));
        // Not boxes: a non-integer factor, a shifted map (source 0 gets one output, the
        // last three), linear weights.
        assert_eq!(grad(&floor, 97, 256), None);
        let shifted = nearest(CoordinateTransform::TfHalfPixelForNn, NearestMode::Ceil);
        assert_eq!(grad(&shifted, 64, 128), None);
        let lin = attrs(
            ResizeMode::Linear,
            CoordinateTransform::HalfPixel,
            NearestMode::Floor,
        );
        assert_eq!(grad(&lin, 128, 256), None);
        // An upsampling gradient (each source feeds several destinations) is not a box.
        assert_eq!(grad(&floor, 256, 128), None);
    }
}

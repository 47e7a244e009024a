//! The SPEC's benchmark workloads W1–W8: shapes at a batch, minimal traffic, flops, kernel
//! names, the seeded random inputs, and [`KernelInfo`], the device-independent description
//! of one timed kernel.

use gradops::dtype::{DType, Element};
use gradops::error::{Error, Result};
use gradops::geometry::{CoordinateTransform, NearestMode, Padding, ResizeAttrs, ResizeMode};
use gradops::ops::conv2d::{plan_conv2d, Conv2dAttrs};
use gradops::ops::max_pool::{plan_max_pool, MaxPoolAttrs};
use gradops::tensor::{Dims, Layout};

/// Batch of every workload on the CPU (SPEC: CPU rows, f32, batch 8).
pub const CPU_BATCH: usize = 8;
/// Batch of every workload on a GPU (SPEC: "the same shapes with batch 32").
pub const CUDA_BATCH: usize = 32;
/// Seed of the random inputs (xorshift64*), so every run times the same data.
pub const SEED: u64 = 0x5eed_9d0b_2026_0004;

// ---------------------------------------------------------------------------------------------
// Workloads

/// What a workload runs (attributes; shapes live in [`Workload`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WorkloadOp {
    /// `resize_grad`: `dy` has spatial size `dy_hw`, `dx` the workload's input size.
    ResizeGrad {
        /// Resize attributes.
        attrs: ResizeAttrs,
        /// Spatial size of `dy` (the forward output).
        dy_hw: [usize; 2],
    },
    /// `conv2d_backprop_input`, filter HWIO, groups 1.
    Conv2dBackpropInput {
        /// `[kh, kw]`.
        ksize: [usize; 2],
        /// Output channels (channels of `dy`).
        out_channels: usize,
        /// `[sh, sw]`.
        strides: [usize; 2],
        /// Padding.
        padding: Padding,
    },
    /// `conv2d_backprop_filter` (the weight gradient of the same conv), filter HWIO, groups 1.
    Conv2dBackpropFilter {
        /// `[kh, kw]`.
        ksize: [usize; 2],
        /// Output channels (channels of `dy`).
        out_channels: usize,
        /// `[sh, sw]`.
        strides: [usize; 2],
        /// Padding.
        padding: Padding,
    },
    /// The forward `conv2d` of the same conv (`y` has `dy`'s shape), filter HWIO, groups 1.
    Conv2d {
        /// `[kh, kw]`.
        ksize: [usize; 2],
        /// Output channels (channels of `y`).
        out_channels: usize,
        /// `[sh, sw]`.
        strides: [usize; 2],
        /// Padding.
        padding: Padding,
    },
    /// `max_pool_grad` (recomputed argmax), `max_pool_grad_with_argmax` (stored indices) and
    /// the forward `max_pool` with argmax (the training-loop pair's first half).
    MaxPoolGrad {
        /// `[kh, kw]`.
        ksize: [usize; 2],
        /// `[sh, sw]`.
        strides: [usize; 2],
        /// Padding.
        padding: Padding,
    },
}

/// One of the SPEC's benchmark workloads. The batch is not part of it: it comes from the
/// device ([`CPU_BATCH`], [`CUDA_BATCH`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Workload {
    /// `W1` ... `W8`, `W4f`, `W5f`.
    pub id: &'static str,
    /// Memory layout of every tensor.
    pub layout: Layout,
    /// Channels of the forward input `x` (= of `dx`).
    pub channels: usize,
    /// Spatial size `[H, W]` of the forward input `x`.
    pub x_hw: [usize; 2],
    /// The op and its attributes.
    pub op: WorkloadOp,
}

/// The SPEC's workloads W1–W8 ("Benchmark workloads"), in order, then W4f and W5f: W7 and
/// W8 are the weight gradients of W4 and W5, W4f and W5f their forward `conv2d`.
pub fn workloads() -> Vec<Workload> {
    let linear = ResizeAttrs::new(ResizeMode::Linear)
        .coordinate_transformation_mode(CoordinateTransform::HalfPixel);
    let nearest = ResizeAttrs::new(ResizeMode::Nearest)
        .coordinate_transformation_mode(CoordinateTransform::Asymmetric)
        .nearest_mode(NearestMode::Floor);
    let conv = |out_channels, stride| WorkloadOp::Conv2dBackpropInput {
        ksize: [3, 3],
        out_channels,
        strides: [stride, stride],
        padding: Padding::Same,
    };
    let conv_filter = |out_channels, stride| WorkloadOp::Conv2dBackpropFilter {
        ksize: [3, 3],
        out_channels,
        strides: [stride, stride],
        padding: Padding::Same,
    };
    let conv_fwd = |out_channels, stride| WorkloadOp::Conv2d {
        ksize: [3, 3],
        out_channels,
        strides: [stride, stride],
        padding: Padding::Same,
    };
    let w = |id, channels, x_hw, op| Workload {
        id,
        layout: Layout::Nchw,
        channels,
        x_hw,
        op,
    };
    vec![
        w(
            "W1",
            64,
            [128, 128],
            WorkloadOp::ResizeGrad {
                attrs: linear,
                dy_hw: [256, 256],
            },
        ),
        w(
            "W2",
            64,
            [256, 256],
            WorkloadOp::ResizeGrad {
                attrs: linear,
                dy_hw: [97, 97],
            },
        ),
        w(
            "W3",
            64,
            [128, 128],
            WorkloadOp::ResizeGrad {
                attrs: nearest,
                dy_hw: [256, 256],
            },
        ),
        w("W4", 64, [56, 56], conv(64, 1)),
        w("W5", 64, [56, 56], conv(128, 2)),
        w(
            "W6",
            64,
            [112, 112],
            WorkloadOp::MaxPoolGrad {
                ksize: [3, 3],
                strides: [2, 2],
                padding: Padding::Same,
            },
        ),
        w("W7", 64, [56, 56], conv_filter(64, 1)),
        w("W8", 64, [56, 56], conv_filter(128, 2)),
        w("W4f", 64, [56, 56], conv_fwd(64, 1)),
        w("W5f", 64, [56, 56], conv_fwd(128, 2)),
    ]
}

/// The workloads named in a comma-separated list (`W1,W4`, case-insensitive), in the list's
/// order; `None` or `all` selects every one.
pub fn select_workloads(list: Option<&str>) -> Result<Vec<Workload>> {
    let all = workloads();
    let Some(list) = list
        .map(str::trim)
        .filter(|l| !l.eq_ignore_ascii_case("all"))
    else {
        return Ok(all);
    };
    let mut out: Vec<Workload> = Vec::new();
    for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let w = all
            .iter()
            .find(|w| w.id.eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                Error::attr(
                    "bench",
                    "workload",
                    format!(
                        "unknown workload {name:?} (expected a comma-separated list of: {})",
                        all.iter().map(|w| w.id).collect::<Vec<_>>().join(", ")
                    ),
                )
            })?;
        if !out.iter().any(|o| o.id == w.id) {
            out.push(*w);
        }
    }
    if out.is_empty() {
        return Err(Error::attr(
            "bench",
            "workload",
            format!("no workload in {list:?}"),
        ));
    }
    Ok(out)
}

/// Concrete shapes of a workload at a given batch (all in the workload's layout).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shapes {
    /// Forward input `x` (= `dx`).
    pub x: [usize; 4],
    /// Output gradient `dy`.
    pub dy: [usize; 4],
    /// Conv filter, HWIO.
    pub filter: Option<[usize; 4]>,
}

pub(super) fn div_at_least_one(v: usize, by: usize) -> usize {
    (v / by.max(1)).max(1)
}

impl Workload {
    /// Shapes at batch `batch`, with batch and channels divided by `scale_down` (at least 1;
    /// `1` gives the SPEC's shapes).
    pub fn shapes(&self, batch: usize, scale_down: usize) -> Result<Shapes> {
        let n = div_at_least_one(batch, scale_down);
        let c = div_at_least_one(self.channels, scale_down);
        let [h, w] = self.x_hw;
        let x = self.layout.shape(Dims { n, c, h, w });
        match self.op {
            WorkloadOp::ResizeGrad { dy_hw, .. } => Ok(Shapes {
                x,
                dy: self.layout.shape(Dims {
                    n,
                    c,
                    h: dy_hw[0],
                    w: dy_hw[1],
                }),
                filter: None,
            }),
            WorkloadOp::Conv2dBackpropInput {
                ksize,
                out_channels,
                ..
            }
            | WorkloadOp::Conv2dBackpropFilter {
                ksize,
                out_channels,
                ..
            }
            | WorkloadOp::Conv2d {
                ksize,
                out_channels,
                ..
            } => {
                let co = div_at_least_one(out_channels, scale_down);
                let filter = [ksize[0], ksize[1], c, co];
                let g = plan_conv2d(x, filter, self.layout, &self.conv_attrs())?;
                Ok(Shapes {
                    x,
                    dy: self.layout.shape(g.output_dims()),
                    filter: Some(filter),
                })
            }
            WorkloadOp::MaxPoolGrad { .. } => {
                let g = plan_max_pool("max_pool_grad", x, self.layout, &self.pool_attrs())?;
                Ok(Shapes {
                    x,
                    dy: self.layout.shape(g.output_dims()),
                    filter: None,
                })
            }
        }
    }

    /// The conv attributes (default attributes for other ops).
    pub fn conv_attrs(&self) -> Conv2dAttrs {
        match self.op {
            WorkloadOp::Conv2dBackpropInput {
                strides, padding, ..
            }
            | WorkloadOp::Conv2dBackpropFilter {
                strides, padding, ..
            }
            | WorkloadOp::Conv2d {
                strides, padding, ..
            } => Conv2dAttrs::default().strides(strides).padding(padding),
            _ => Conv2dAttrs::default(),
        }
    }

    /// The pool attributes (a 1x1 window for other ops).
    pub fn pool_attrs(&self) -> MaxPoolAttrs {
        match self.op {
            WorkloadOp::MaxPoolGrad {
                ksize,
                strides,
                padding,
            } => MaxPoolAttrs::new(ksize).strides(strides).padding(padding),
            _ => MaxPoolAttrs::new([1, 1]),
        }
    }

    /// The kernel rows this workload times: one, or three for max pool (recomputed argmax,
    /// stored argmax, forward with argmax).
    pub fn variants(&self) -> &'static [Variant] {
        match self.op {
            WorkloadOp::MaxPoolGrad { .. } => {
                &[Variant::Main, Variant::StoredArgmax, Variant::Forward]
            }
            _ => &[Variant::Main],
        }
    }

    /// The workload in layout `layout` (same logical shapes, tensors in that order).
    pub fn with_layout(mut self, layout: Layout) -> Self {
        self.layout = layout;
        self
    }

    /// SPEC-style description of the op (`resize_grad linear half_pixel`).
    pub fn describe(&self) -> String {
        format!("{} {}", self.op_name(Variant::Main), self.attr_text())
    }

    /// The op's API name for a variant.
    pub fn op_name(&self, v: Variant) -> &'static str {
        match (self.op, v) {
            (WorkloadOp::ResizeGrad { .. }, _) => "resize_grad",
            (WorkloadOp::Conv2dBackpropInput { .. }, _) => "conv2d_backprop_input",
            (WorkloadOp::Conv2dBackpropFilter { .. }, _) => "conv2d_backprop_filter",
            (WorkloadOp::Conv2d { .. }, _) => "conv2d",
            (WorkloadOp::MaxPoolGrad { .. }, Variant::Main) => "max_pool_grad",
            (WorkloadOp::MaxPoolGrad { .. }, Variant::StoredArgmax) => "max_pool_grad_with_argmax",
            (WorkloadOp::MaxPoolGrad { .. }, Variant::Forward) => "max_pool",
        }
    }

    fn attr_text(&self) -> String {
        match self.op {
            WorkloadOp::ResizeGrad { attrs, .. } => {
                let mut s = format!(
                    "{}, {}",
                    attrs.mode.name(),
                    attrs.coordinate_transformation_mode.name()
                );
                if attrs.mode == ResizeMode::Nearest {
                    s += &format!(", {}", attrs.nearest_mode.name());
                }
                s
            }
            WorkloadOp::Conv2dBackpropInput {
                ksize,
                strides,
                padding,
                ..
            }
            | WorkloadOp::Conv2dBackpropFilter {
                ksize,
                strides,
                padding,
                ..
            }
            | WorkloadOp::Conv2d {
                ksize,
                strides,
                padding,
                ..
            }
            | WorkloadOp::MaxPoolGrad {
                ksize,
                strides,
                padding,
            } => {
                let s = if strides[0] == strides[1] {
                    format!("s{}", strides[0])
                } else {
                    format!("s{}x{}", strides[0], strides[1])
                };
                format!("{}x{}, {s}, {}", ksize[0], ksize[1], padding_name(padding))
            }
        }
    }

    /// The op name with its attributes, for a JSON row: `resize_grad (linear, half_pixel)`.
    pub fn op_label(&self, v: Variant) -> String {
        format!("{} ({})", self.op_name(v), self.attr_text())
    }

    /// The kernel name of a table row: `resize_grad_f32 (linear, half_pixel)`.
    pub fn kernel_name(&self, v: Variant, dtype: DType) -> String {
        format!(
            "{}_{} ({})",
            self.op_name(v),
            dtype.name(),
            self.attr_text()
        )
    }

    /// Minimal memory traffic of one call: every input byte read once, every output byte
    /// written once (`dtype_size` bytes per element; argmax indices are `i64`). The forward
    /// max pool reads `x` and writes `y` (dy's shape) and the argmax.
    pub fn traffic(&self, s: &Shapes, v: Variant, dtype_size: usize) -> Traffic {
        let bytes = |shape: [usize; 4]| (shape.iter().product::<usize>() * dtype_size) as u64;
        if v == Variant::Forward {
            let n: usize = s.dy.iter().product();
            return Traffic {
                items: vec![
                    ("x", Dir::Read, bytes(s.x)),
                    ("y", Dir::Write, bytes(s.dy)),
                    ("argmax", Dir::Write, (n * 8) as u64),
                ],
            };
        }
        if let WorkloadOp::Conv2d { .. } = self.op {
            // The forward: read x and the filter, write y (dy's shape).
            let mut items = vec![("x", Dir::Read, bytes(s.x))];
            if let Some(f) = s.filter {
                items.push(("filter", Dir::Read, bytes(f)));
            }
            items.push(("y", Dir::Write, bytes(s.dy)));
            return Traffic { items };
        }
        if let WorkloadOp::Conv2dBackpropFilter { .. } = self.op {
            let mut items = vec![("x", Dir::Read, bytes(s.x)), ("dy", Dir::Read, bytes(s.dy))];
            if let Some(f) = s.filter {
                items.push(("dw", Dir::Write, bytes(f)));
            }
            return Traffic { items };
        }
        let mut t = Traffic {
            items: vec![("dy", Dir::Read, bytes(s.dy))],
        };
        match (self.op, v) {
            (WorkloadOp::Conv2dBackpropInput { .. }, _) => {
                if let Some(f) = s.filter {
                    t.items.push(("filter", Dir::Read, bytes(f)));
                }
            }
            (WorkloadOp::MaxPoolGrad { .. }, Variant::Main) => {
                t.items.push(("x", Dir::Read, bytes(s.x)));
            }
            (WorkloadOp::MaxPoolGrad { .. }, Variant::StoredArgmax) => {
                let n: usize = s.dy.iter().product();
                t.items.push(("argmax", Dir::Read, (n * 8) as u64));
            }
            (_, Variant::Forward) => unreachable!("handled above"),
            _ => {}
        }
        t.items.push(("dx", Dir::Write, bytes(s.x)));
        t
    }

    /// Floating-point operations of one call (conv only: either gradient or the forward):
    /// `2 * N * Ho * Wo * Co * kh * kw * Ci / groups`.
    pub fn flops(&self, s: &Shapes) -> Option<u64> {
        match self.op {
            WorkloadOp::Conv2dBackpropInput { .. }
            | WorkloadOp::Conv2dBackpropFilter { .. }
            | WorkloadOp::Conv2d { .. } => {
                let f = s.filter?;
                let dy = self.layout.dims(s.dy);
                Some(2 * (dy.n * dy.h * dy.w * dy.c) as u64 * (f[0] * f[1] * f[2]) as u64)
            }
            _ => None,
        }
    }
}

fn padding_name(p: Padding) -> String {
    match p {
        Padding::Same => "SAME".into(),
        Padding::Valid => "VALID".into(),
        Padding::Explicit(e) => format!("{e:?}"),
    }
}

/// Which kernel of a workload a row times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The workload's op (for max pool: `max_pool_grad`, argmax recomputed).
    Main,
    /// `max_pool_grad_with_argmax` with indices from `max_pool(.., true)` (not timed).
    StoredArgmax,
    /// The forward `max_pool` with argmax indices (max pool only).
    Forward,
}

impl Variant {
    /// The row's `variant` in the JSON: `backward` (resize, conv), and for max pool
    /// `recompute`, `stored` or `forward` (as `bench/peers.py` matches rows).
    pub fn name(self, w: &Workload) -> &'static str {
        match (w.op, self) {
            (_, Variant::Forward) => "forward",
            (WorkloadOp::MaxPoolGrad { .. }, Variant::Main) => "recompute",
            (_, Variant::StoredArgmax) => "stored",
            _ => "backward",
        }
    }

    /// For max pool rows: `recompute` or `stored` (as `bench/peers.py` reads it).
    pub fn argmax_kind(self, w: &Workload) -> Option<&'static str> {
        match (w.op, self) {
            (WorkloadOp::MaxPoolGrad { .. }, Variant::Main) => Some("recompute"),
            (WorkloadOp::MaxPoolGrad { .. }, Variant::StoredArgmax) => Some("stored"),
            _ => None,
        }
    }
}

/// Direction of a traffic item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// Read from memory.
    Read,
    /// Written to memory.
    Write,
}

/// The minimal bytes a call must move: `(tensor, direction, bytes)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Traffic {
    /// One entry per tensor.
    pub items: Vec<(&'static str, Dir, u64)>,
}

impl Traffic {
    /// Bytes read plus bytes written.
    pub fn total(&self) -> u64 {
        self.items.iter().map(|i| i.2).sum()
    }

    /// `read dy 134.2 MB + write dx 33.6 MB`.
    pub fn describe(&self) -> String {
        self.items
            .iter()
            .map(|(name, dir, b)| {
                let d = match dir {
                    Dir::Read => "read",
                    Dir::Write => "write",
                };
                format!("{d} {name} {}", mb(*b))
            })
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

pub(super) fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

fn shape_text(s: [usize; 4]) -> String {
    format!("[{},{},{},{}]", s[0], s[1], s[2], s[3])
}

// ---------------------------------------------------------------------------------------------
// Random inputs

/// xorshift64* stream of values in `[-1, 1)`.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator; the seed is mixed so that nearby seeds give unrelated streams.
    pub fn new(seed: u64) -> Self {
        let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        XorShift((z ^ (z >> 31)) | 1)
    }

    /// The next value in `[-1, 1)`.
    pub fn next_f64(&mut self) -> f64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        let r = x.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (r >> 11) as f64 / (1u64 << 52) as f64 - 1.0
    }
}

/// `len` random elements in `[-1, 1)` from `seed`.
pub fn random_vec<T: Element>(len: usize, seed: u64) -> Vec<T> {
    let mut g = XorShift::new(seed);
    (0..len).map(|_| T::from_f64(g.next_f64())).collect()
}

pub(super) fn seed_for(id: &str, buffer: u64) -> u64 {
    id.bytes()
        .fold(SEED ^ buffer.wrapping_mul(0x100_0000_01b3), |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
}

// ---------------------------------------------------------------------------------------------
// Kernel rows

/// What one timed kernel is, independent of the device: a workload variant at concrete
/// shapes, with its minimal traffic. [`make_row`](super::make_row) turns it and its per-call times into a
/// [`BenchRow`](super::BenchRow) (the CPU and CUDA paths both go through it).
#[derive(Debug, Clone, PartialEq)]
pub struct KernelInfo {
    /// The workload.
    pub workload: Workload,
    /// Which variant.
    pub variant: Variant,
    /// Element type.
    pub dtype: DType,
    /// Shapes.
    pub shapes: Shapes,
    /// Minimal memory traffic of one call.
    pub traffic: Traffic,
    /// Floating-point operations of one call (conv).
    pub flops: Option<u64>,
    /// Whether the output is preallocated (`_into` API, device buffers) rather than
    /// allocated by each call.
    pub preallocated: bool,
    /// The device kernel that runs the call (CUDA: `resize_tile_f32`, ...), when known.
    pub device_kernel: Option<String>,
}

impl KernelInfo {
    /// The description of `w`'s `variant` at shapes `shapes` (traffic and FLOPs derived).
    pub fn new(
        w: &Workload,
        variant: Variant,
        dtype: DType,
        shapes: Shapes,
        preallocated: bool,
    ) -> Self {
        KernelInfo {
            workload: *w,
            variant,
            dtype,
            shapes,
            traffic: w.traffic(&shapes, variant, dtype.size()),
            flops: w.flops(&shapes),
            preallocated,
            device_kernel: None,
        }
    }

    /// The kernel name: `resize_grad_f32 (linear, half_pixel)`.
    pub fn name(&self) -> String {
        self.workload.kernel_name(self.variant, self.dtype)
    }

    /// `dy [8,64,256,256] -> dx [8,64,128,128] NCHW` (plus the filter for conv; for the
    /// forward max pool `x [..] -> y [..] + argmax NCHW`; for the filter gradient
    /// `x [..] + dy [..] -> dw [..] HWIO NCHW`).
    pub fn shape_text(&self) -> String {
        if let (WorkloadOp::Conv2dBackpropFilter { .. }, Some(f)) =
            (self.workload.op, self.shapes.filter)
        {
            return format!(
                "x {} + dy {} -> dw {} HWIO {}",
                shape_text(self.shapes.x),
                shape_text(self.shapes.dy),
                shape_text(f),
                self.workload.layout
            );
        }
        if let (WorkloadOp::Conv2d { .. }, Some(f)) = (self.workload.op, self.shapes.filter) {
            return format!(
                "x {} w {} HWIO -> y {} {}",
                shape_text(self.shapes.x),
                shape_text(f),
                shape_text(self.shapes.dy),
                self.workload.layout
            );
        }
        if self.variant == Variant::Forward {
            return format!(
                "x {} -> y {} + argmax {}",
                shape_text(self.shapes.x),
                shape_text(self.shapes.dy),
                self.workload.layout
            );
        }
        let f = self
            .shapes
            .filter
            .map(|f| format!(" w {} HWIO", shape_text(f)))
            .unwrap_or_default();
        format!(
            "dy {}{f} -> dx {} {}",
            shape_text(self.shapes.dy),
            shape_text(self.shapes.x),
            self.workload.layout
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::*;

    #[test]
    fn spec_shapes() {
        let cases = [
            ("W1", [8, 64, 128, 128], [8, 64, 256, 256]),
            ("W2", [8, 64, 256, 256], [8, 64, 97, 97]),
            ("W3", [8, 64, 128, 128], [8, 64, 256, 256]),
            ("W4", [8, 64, 56, 56], [8, 64, 56, 56]),
            ("W5", [8, 64, 56, 56], [8, 128, 28, 28]),
            ("W6", [8, 64, 112, 112], [8, 64, 56, 56]),
            ("W7", [8, 64, 56, 56], [8, 64, 56, 56]),
            ("W8", [8, 64, 56, 56], [8, 128, 28, 28]),
        ];
        for (id, x, dy) in cases {
            let s = by_id(id).shapes(CPU_BATCH, 1).unwrap();
            assert_eq!((s.x, s.dy), (x, dy), "{id}");
        }
        let s = by_id("W5").shapes(CUDA_BATCH, 1).unwrap();
        assert_eq!(s.x, [32, 64, 56, 56]);
        assert_eq!(s.filter, Some([3, 3, 64, 128]));
        let s = by_id("W5").shapes(CPU_BATCH, 8).unwrap();
        assert_eq!((s.x, s.dy), ([1, 8, 56, 56], [1, 16, 28, 28]));
    }

    #[test]
    fn traffic_and_flops() {
        let w = by_id("W1");
        let s = w.shapes(CPU_BATCH, 1).unwrap();
        let t = w.traffic(&s, Variant::Main, 4);
        assert_eq!(t.total(), (8 * 64 * (256 * 256 + 128 * 128) * 4) as u64);
        let w = by_id("W4");
        let s = w.shapes(CPU_BATCH, 1).unwrap();
        assert_eq!(w.flops(&s), Some(2 * 8 * 56 * 56 * 64 * 9 * 64));
        // The weight gradients: W4's flops; read x and dy, write the filter.
        let w = by_id("W7");
        let s = w.shapes(CPU_BATCH, 1).unwrap();
        assert_eq!(w.flops(&s), Some(2 * 8 * 56 * 56 * 64 * 9 * 64));
        assert_eq!(
            w.traffic(&s, Variant::Main, 4).total(),
            ((2 * 8 * 64 * 56 * 56 + 9 * 64 * 64) * 4) as u64
        );
        assert_eq!(
            w.kernel_name(Variant::Main, DType::F32),
            "conv2d_backprop_filter_f32 (3x3, s1, SAME)"
        );
        let s8 = by_id("W8").shapes(CPU_BATCH, 1).unwrap();
        assert_eq!(s8.filter, Some([3, 3, 64, 128]));
        assert_eq!(by_id("W8").flops(&s8), Some(2 * 8 * 28 * 28 * 128 * 9 * 64));
        let w = by_id("W6");
        let s = w.shapes(CPU_BATCH, 1).unwrap();
        let rec = w.traffic(&s, Variant::Main, 4).total();
        assert_eq!(rec, (8 * 64 * (56 * 56 + 2 * 112 * 112) * 4) as u64);
        let st = w.traffic(&s, Variant::StoredArgmax, 4).total();
        assert_eq!(st, (8 * 64 * (56 * 56 * 12 + 112 * 112 * 4)) as u64);
        assert_eq!(
            w.kernel_name(Variant::StoredArgmax, DType::F32),
            "max_pool_grad_with_argmax_f32 (3x3, s2, SAME)"
        );
        assert_eq!(
            by_id("W3").kernel_name(Variant::Main, DType::F16),
            "resize_grad_f16 (nearest, asymmetric, floor)"
        );
    }

    /// The forward rows: W5's shapes and flops; read x and the filter, write y.
    #[test]
    fn forward_conv_rows() {
        let (w, b) = (by_id("W5f"), by_id("W5"));
        let (s, sb) = (w.shapes(8, 1).unwrap(), b.shapes(8, 1).unwrap());
        assert_eq!((s.x, s.dy, s.filter), (sb.x, sb.dy, sb.filter));
        assert_eq!(w.flops(&s), b.flops(&sb));
        assert_eq!(w.op_name(Variant::Main), "conv2d");
        let t = w.traffic(&s, Variant::Main, 4);
        let names: Vec<_> = t.items.iter().map(|i| (i.0, i.1)).collect();
        assert_eq!(
            names,
            [("x", Dir::Read), ("filter", Dir::Read), ("y", Dir::Write)]
        );
        assert_eq!(
            t.total(),
            4 * (8 * 64 * 56 * 56 + 9 * 64 * 128 + 8 * 128 * 28 * 28)
        );
    }

    #[test]
    fn selection() {
        let ids = |l| {
            select_workloads(l)
                .unwrap()
                .iter()
                .map(|w| w.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(None).len(), 10);
        assert_eq!(ids(Some("w4, W1,W4")), ["W4", "W1"]);
        assert_eq!(ids(Some("w5F,W4f")), ["W5f", "W4f"]);
        assert_eq!(ids(Some("W8,w7")), ["W8", "W7"]);
        assert!(select_workloads(Some("W9")).is_err());
        assert!(select_workloads(Some(",")).is_err());
    }

    #[test]
    fn forward_row_names_and_traffic() {
        let w = by_id("W6");
        assert_eq!(
            w.variants(),
            [Variant::Main, Variant::StoredArgmax, Variant::Forward]
        );
        let names: Vec<_> = w.variants().iter().map(|v| v.name(&w)).collect();
        assert_eq!(names, ["recompute", "stored", "forward"]);
        assert_eq!(Variant::Main.name(&by_id("W4")), "backward");
        assert_eq!(Variant::Forward.argmax_kind(&w), None);
        assert_eq!(
            w.kernel_name(Variant::Forward, DType::F32),
            "max_pool_f32 (3x3, s2, SAME)"
        );
        let s = w.shapes(CPU_BATCH, 1).unwrap();
        let t = w.traffic(&s, Variant::Forward, 4);
        // read x, write y (f32) and the i64 argmax.
        assert_eq!(
            t.total(),
            (8 * 64 * (112 * 112 * 4 + 56 * 56 * 4 + 56 * 56 * 8)) as u64
        );
        assert_eq!(t.describe().matches("write").count(), 2);
        assert_eq!(w.flops(&s), None);
    }

    #[test]
    fn nhwc_layout_shapes() {
        let nhwc = |id| by_id(id).with_layout(Layout::Nhwc);
        let s = nhwc("W1").shapes(CPU_BATCH, 1).unwrap();
        assert_eq!((s.x, s.dy), ([8, 128, 128, 64], [8, 256, 256, 64]));
        let s = nhwc("W5").shapes(CUDA_BATCH, 1).unwrap();
        assert_eq!((s.x, s.dy), ([32, 56, 56, 64], [32, 28, 28, 128]));
        assert_eq!(s.filter, Some([3, 3, 64, 128]), "the filter stays HWIO");
        let s = nhwc("W6").shapes(CPU_BATCH, 8).unwrap();
        assert_eq!((s.x, s.dy), ([1, 112, 112, 8], [1, 56, 56, 8]));
        // Same bytes in either layout.
        for w in workloads() {
            for &v in w.variants() {
                let a = w.shapes(CUDA_BATCH, 1).unwrap();
                let b = w.with_layout(Layout::Nhwc).shapes(CUDA_BATCH, 1).unwrap();
                assert_eq!(
                    w.traffic(&a, v, 2).total(),
                    w.with_layout(Layout::Nhwc).traffic(&b, v, 2).total()
                );
            }
        }
    }
}

//! `gradops bench`: the SPEC's benchmark workloads W1–W6, timed on the best available device.
//!
//! The workload definitions ([`workloads`]) are the single source of the shapes: the CLI
//! (`gradops bench`), the criterion benches (`benches/ops.rs`) and the tests all use them.
//!
//! Device selection: `--device cpu` times the CPU ops; `--device cuda` times the CUDA ops
//! ([`bench_cuda`]; [`Error::CudaUnavailable`], with the reason, where CUDA is unusable);
//! `--device auto` (the default) uses CUDA when [`cuda_status`] is `Ok` and otherwise falls
//! back to the CPU, saying why on one stderr line.
//!
//! What is measured on the CPU: wall-clock time per call ([`Instant`]) after warm-up, with
//! preallocated outputs where the API has an `_into` variant; the median over the calls gives
//! the achieved GB/s of the op's minimal memory traffic ([`Traffic`]) and, for conv, GFLOP/s.
//! The GB/s is set against the machine's streaming bandwidth, measured by the command itself
//! ([`cpu_stream_bandwidth`]).
//!
//! On a GPU (batch [`CUDA_BATCH`]): GPU time per call from a pair of CUDA events around each
//! launch ([`CudaTimer`]), device-resident inputs and outputs, and the same rows
//! ([`make_row`]) set against the card's measured device-to-device copy bandwidth
//! ([`cuda_copy_bandwidth`]).

use cudarc::driver::{
    sys, CudaEvent, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceSlice, DriverError,
    SyncOnDrop,
};
use gradops::dtype::{DType, Element};
use gradops::error::{Error, Result};
use gradops::geometry::{CoordinateTransform, NearestMode, Padding, ResizeAttrs, ResizeMode};
use gradops::ops::conv2d::{conv2d_backprop_input_into, plan_conv2d, Conv2dAttrs, FilterRef};
use gradops::ops::max_pool::{
    max_pool, max_pool_grad_into, max_pool_grad_with_argmax_into, plan_max_pool, MaxPoolAttrs,
};
use gradops::ops::resize::resize_grad_into;
use gradops::tensor::{Dims, Layout, TensorRef};
use half::f16;
use rayon::prelude::*;
use serde::Serialize;
use std::hint::black_box;
use std::io::IsTerminal;
use std::marker::PhantomData;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Batch of every workload on the CPU (SPEC: CPU rows, f32, batch 8).
pub const CPU_BATCH: usize = 8;
/// Batch of every workload on a GPU (SPEC: "the same shapes with batch 32").
pub const CUDA_BATCH: usize = 32;
/// Seed of the random inputs (xorshift64*), so every run times the same data.
pub const SEED: u64 = 0x5eed_9d0b_2026_0004;
/// Target timed wall time per kernel row when `--reps` is not given.
pub const TARGET_PER_ROW: Duration = Duration::from_millis(1500);
/// Fewest timed calls per row when `--reps` is not given.
pub const MIN_CALLS: usize = 5;
/// Most timed calls per row when `--reps` is not given.
pub const MAX_CALLS: usize = 10_000;
/// Size of each of the two buffers of the bandwidth probe (256 MiB).
pub const STREAM_BYTES: usize = 256 << 20;

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
    /// `W1` ... `W6`.
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

/// The SPEC's workloads W1–W6 ("Benchmark workloads"), in order.
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

fn div_at_least_one(v: usize, by: usize) -> usize {
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

    /// Floating-point operations of one call (conv only): `2 * N * Ho * Wo * Co * kh * kw *
    /// Ci / groups`.
    pub fn flops(&self, s: &Shapes) -> Option<u64> {
        match self.op {
            WorkloadOp::Conv2dBackpropInput { .. } => {
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

fn mb(b: u64) -> String {
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

fn seed_for(id: &str, buffer: u64) -> u64 {
    id.bytes()
        .fold(SEED ^ buffer.wrapping_mul(0x100_0000_01b3), |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
}

// ---------------------------------------------------------------------------------------------
// Kernel rows

/// What one timed kernel is, independent of the device: a workload variant at concrete
/// shapes, with its minimal traffic. [`make_row`] turns it and its per-call times into a
/// [`BenchRow`] (the CPU and CUDA paths both go through it).
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
    /// forward max pool `x [..] -> y [..] + argmax NCHW`).
    pub fn shape_text(&self) -> String {
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

// ---------------------------------------------------------------------------------------------
// CPU kernels

type CallFn = Box<dyn FnMut() -> Result<()> + Send>;

/// One timed CPU kernel: its description ([`KernelInfo`], reachable through `Deref`: `k.traffic`,
/// `k.name()`) plus a call holding its inputs and preallocated output.
pub struct CpuKernel {
    /// What the kernel is.
    pub info: KernelInfo,
    call: CallFn,
}

impl std::ops::Deref for CpuKernel {
    type Target = KernelInfo;
    fn deref(&self) -> &KernelInfo {
        &self.info
    }
}

impl std::fmt::Debug for CpuKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CpuKernel")
            .field("name", &self.name())
            .field("shapes", &self.shapes)
            .finish_non_exhaustive()
    }
}

impl CpuKernel {
    /// Runs the op once.
    pub fn call(&mut self) -> Result<()> {
        (self.call)()
    }
}

/// Builds the CPU kernels of a workload (one per [`Workload::variants`]) with random inputs
/// and preallocated outputs. Max pool's stored argmax is computed here, outside any timing.
pub fn cpu_kernels<T: Element>(
    w: &Workload,
    batch: usize,
    scale_down: usize,
) -> Result<Vec<CpuKernel>> {
    let s = w.shapes(batch, scale_down)?;
    let len = |shape: [usize; 4]| shape.iter().product::<usize>();
    let layout = w.layout;
    let dy: Arc<Vec<T>> = Arc::new(random_vec(len(s.dy), seed_for(w.id, 1)));
    let mut out = Vec::new();
    let mut push = |variant, preallocated, call: CallFn| {
        out.push(CpuKernel {
            info: KernelInfo::new(w, variant, T::DTYPE, s, preallocated),
            call,
        })
    };
    match w.op {
        WorkloadOp::ResizeGrad { attrs, .. } => {
            let mut dx = vec![T::default(); len(s.x)];
            push(
                Variant::Main,
                true,
                Box::new(move || {
                    resize_grad_into(TensorRef::new(&dy, s.dy, layout), s.x, &attrs, &mut dx)?;
                    black_box(&mut dx);
                    Ok(())
                }),
            );
        }
        WorkloadOp::Conv2dBackpropInput { .. } => {
            let fshape = s.filter.unwrap_or_default();
            let filter: Vec<T> = random_vec(len(fshape), seed_for(w.id, 2));
            let attrs = w.conv_attrs();
            let mut dx = vec![T::default(); len(s.x)];
            push(
                Variant::Main,
                true,
                Box::new(move || {
                    conv2d_backprop_input_into(
                        TensorRef::new(&dy, s.dy, layout),
                        FilterRef::new(&filter, fshape),
                        s.x,
                        &attrs,
                        &mut dx,
                    )?;
                    black_box(&mut dx);
                    Ok(())
                }),
            );
        }
        WorkloadOp::MaxPoolGrad { .. } => {
            let attrs = w.pool_attrs();
            let x: Arc<Vec<T>> = Arc::new(random_vec(len(s.x), seed_for(w.id, 3)));
            let (_, argmax) = max_pool(TensorRef::new(&x, s.x, layout), &attrs, true)?;
            let argmax = argmax.unwrap_or_default();
            let mut dx = vec![T::default(); len(s.x)];
            let (dy1, x1) = (Arc::clone(&dy), Arc::clone(&x));
            push(
                Variant::Main,
                true,
                Box::new(move || {
                    max_pool_grad_into(
                        TensorRef::new(&dy1, s.dy, layout),
                        TensorRef::new(&x1, s.x, layout),
                        None,
                        &attrs,
                        &mut dx,
                    )?;
                    black_box(&mut dx);
                    Ok(())
                }),
            );
            let mut dx2 = vec![T::default(); s.x.iter().product()];
            push(
                Variant::StoredArgmax,
                true,
                Box::new(move || {
                    max_pool_grad_with_argmax_into(
                        TensorRef::new(&dy, s.dy, layout),
                        &argmax,
                        s.x,
                        &attrs,
                        &mut dx2,
                    )?;
                    black_box(&mut dx2);
                    Ok(())
                }),
            );
            let mut y = vec![T::default(); len(s.dy)];
            let mut am = vec![0i64; len(s.dy)];
            push(
                Variant::Forward,
                true,
                Box::new(move || {
                    // As `max_pool(.., true)` does, into preallocated y and argmax.
                    let xr = TensorRef::new(&x, s.x, layout);
                    xr.check_len("max_pool", "x")?;
                    let g = plan_max_pool("max_pool", s.x, layout, &attrs)?;
                    gradops::ops::max_pool::cpu_kernel::forward(
                        &g,
                        layout,
                        xr.data,
                        &mut y,
                        Some(&mut am[..]),
                    );
                    black_box((&mut y, &mut am));
                    Ok(())
                }),
            );
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// Timing

/// Per-call times of one kernel row, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Every timed call, in order.
    pub samples: Vec<f64>,
}

impl Timing {
    /// Number of timed calls.
    pub fn calls(&self) -> usize {
        self.samples.len()
    }
    /// Sum of the timed calls.
    pub fn total(&self) -> f64 {
        self.samples.iter().sum()
    }
    /// Mean.
    pub fn avg(&self) -> f64 {
        self.total() / self.samples.len().max(1) as f64
    }
    /// Fastest call.
    pub fn min(&self) -> f64 {
        self.samples.iter().copied().fold(f64::INFINITY, f64::min)
    }
    /// Slowest call.
    pub fn max(&self) -> f64 {
        self.samples.iter().copied().fold(0.0, f64::max)
    }
    /// Median (mean of the two middle calls for an even count).
    pub fn median(&self) -> f64 {
        median(&self.samples)
    }
}

/// Median of `v` (mean of the two middle values for an even length; NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// Times `call` on the host clock ([`Instant`]), each call alone; see [`time_samples`].
pub fn time_calls(
    mut call: impl FnMut() -> Result<()>,
    reps: Option<usize>,
    target: Duration,
) -> Result<Timing> {
    time_samples(
        || {
            let t = Instant::now();
            call()?;
            Ok(t.elapsed().as_secs_f64())
        },
        reps,
        target,
    )
}

/// Collects per-call times from `timed_call`, which runs the op once and returns how long
/// that call took, in seconds (however the device measures it): warm-up (one call, two when
/// adaptive; their times are dropped), then `reps` calls, or when `reps` is `None` calls
/// until `target` has been spent in timed calls (at least [`MIN_CALLS`], at most
/// [`MAX_CALLS`]).
pub fn time_samples(
    mut timed_call: impl FnMut() -> Result<f64>,
    reps: Option<usize>,
    target: Duration,
) -> Result<Timing> {
    // The first call touches the output's pages and warms caches and the thread pool (on a
    // GPU: loads the module and uploads the resize tables).
    timed_call()?;
    if reps.is_none() {
        timed_call()?;
    }
    let mut samples = Vec::new();
    let mut spent = 0.0;
    loop {
        let enough = match reps {
            Some(n) => samples.len() >= n.max(1),
            None => {
                samples.len() >= MAX_CALLS
                    || (samples.len() >= MIN_CALLS && spent >= target.as_secs_f64())
            }
        };
        if enough {
            break;
        }
        let dt = timed_call()?;
        spent += dt;
        samples.push(dt);
    }
    Ok(Timing { samples })
}

/// The CPU's streaming bandwidth in GB/s (1e9 bytes/s): a parallel copy (rayon, all
/// threads) of `bytes` of f32 into another buffer, counting bytes read plus bytes written,
/// best of `tries` after one warm-up copy.
pub fn cpu_stream_bandwidth(bytes: usize, tries: usize) -> f64 {
    let len = (bytes / 4).max(1 << 16);
    let mut src = vec![0f32; len];
    src.par_chunks_mut(1 << 16).enumerate().for_each(|(i, c)| {
        for (j, v) in c.iter_mut().enumerate() {
            *v = (i + j) as f32;
        }
    });
    let mut dst = vec![0f32; len];
    let copy = |dst: &mut [f32]| {
        let t = Instant::now();
        dst.par_chunks_mut(1 << 18)
            .zip(src.par_chunks(1 << 18))
            .for_each(|(d, s)| d.copy_from_slice(s));
        black_box(&mut *dst);
        t.elapsed().as_secs_f64()
    };
    copy(&mut dst);
    let best = (0..tries.max(1))
        .map(|_| copy(&mut dst))
        .fold(f64::INFINITY, f64::min);
    (2 * len * 4) as f64 / best / 1e9
}

// ---------------------------------------------------------------------------------------------
// Options, report, device selection

/// `--device`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum BenchDevice {
    /// CUDA when usable, else the CPU (one stderr line says why).
    #[default]
    Auto,
    /// The CPU ops.
    Cpu,
    /// CUDA (an error when unavailable).
    Cuda,
}

/// The `gradops bench` command line.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Where to run: auto (CUDA when usable, else CPU), cpu or cuda.
    #[arg(long, value_enum, default_value = "auto")]
    pub device: BenchDevice,
    /// Element type: f16, f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: DType,
    /// Memory layout of every tensor: nchw (the SPEC's workloads) or nhwc (the same logical
    /// shapes with the tensors in NHWC order; the conv filter stays HWIO).
    #[arg(long, default_value = "nchw", value_name = "nchw|nhwc")]
    pub layout: Layout,
    /// Workloads, comma-separated (W1,...,W6); default all.
    #[arg(long)]
    pub workload: Option<String>,
    /// Timed calls per kernel (default: adaptive, at least 5 and about 1.5 s per kernel).
    #[arg(long)]
    pub reps: Option<usize>,
    /// Also write the results as JSON to this file.
    #[arg(long, value_name = "PATH")]
    pub json: Option<PathBuf>,
    /// Divide batch and channels by N (quick smoke runs and tests).
    #[arg(long, hide = true, default_value_t = 1, value_name = "N")]
    pub scale_down: usize,
}

/// What a bench run needs besides the device.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// The workloads, in order.
    pub workloads: Vec<Workload>,
    /// Element type.
    pub dtype: DType,
    /// Layout of every workload (already applied to `workloads`).
    pub layout: Layout,
    /// Timed calls per row (`None`: adaptive).
    pub reps: Option<usize>,
    /// Target timed time per row when adaptive.
    pub target: Duration,
    /// Divide batch and channels by this (1: the SPEC's shapes).
    pub scale_down: usize,
}

impl BenchOptions {
    /// Validates the command line.
    pub fn from_args(a: &BenchArgs) -> Result<Self> {
        if a.scale_down == 0 {
            return Err(Error::attr(
                "bench",
                "scale-down",
                "must be at least 1, got 0",
            ));
        }
        if a.reps == Some(0) {
            return Err(Error::attr("bench", "reps", "must be at least 1, got 0"));
        }
        Ok(BenchOptions {
            workloads: select_workloads(a.workload.as_deref())?
                .into_iter()
                .map(|w| w.with_layout(a.layout))
                .collect(),
            dtype: a.dtype,
            layout: a.layout,
            reps: a.reps,
            target: TARGET_PER_ROW,
            scale_down: a.scale_down,
        })
    }
}

/// One timed kernel (a table row, a JSON result).
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    /// `W1` ... `W6`.
    pub workload: String,
    /// Op and attributes: `resize_grad (linear, half_pixel)`.
    pub op: String,
    /// Kernel name: `resize_grad_f32 (linear, half_pixel)`.
    pub kernel: String,
    /// `f16`, `f32`, `f64`.
    pub dtype: String,
    /// `NCHW` or `NHWC`.
    pub layout: String,
    /// `x` shape (layout order).
    pub x_shape: [usize; 4],
    /// `dy` shape (layout order).
    pub dy_shape: [usize; 4],
    /// Filter shape (HWIO), conv only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub filter_shape: Option<[usize; 4]>,
    /// The device kernel that ran (CUDA rows: `resize_tile_f32`, `max_pool_tile_grad_f16`,
    /// ...), the name `ncu` shows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_kernel: Option<String>,
    /// Which kernel of the workload: `backward` (resize, conv), or for max pool `recompute`
    /// (`max_pool_grad`), `stored` (`max_pool_grad_with_argmax`) or `forward` (`max_pool`).
    pub variant: String,
    /// For the max-pool gradients: `recompute` or `stored`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argmax: Option<String>,
    /// Timed calls.
    pub calls: usize,
    /// Sum of the timed calls, ms.
    pub total_ms: f64,
    /// Mean, ms.
    pub avg_ms: f64,
    /// Median, ms.
    pub median_ms: f64,
    /// Fastest, ms.
    pub min_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
    /// Minimal traffic of one call, bytes.
    pub bytes: u64,
    /// Achieved GB/s of the minimal traffic at the median time.
    pub gbps: f64,
    /// The bandwidth limit the share is taken of (the report's `limit_gbps`), GB/s.
    pub limit_gbps: f64,
    /// `gbps / limit_gbps`.
    pub share_of_limit: f64,
    /// FLOPs of one call (conv).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flops: Option<u64>,
    /// GFLOP/s at the median time (conv).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gflops: Option<f64>,
    /// Output preallocated (`_into` API) rather than allocated by each call.
    pub preallocated_output: bool,
    /// `read dy 134.2 MB + write dx 33.6 MB`.
    #[serde(skip)]
    pub traffic_text: String,
    /// Shapes for the table.
    #[serde(skip)]
    pub shape_text: String,
}

/// A whole bench run.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    /// `cpu` or `cuda`.
    pub device: String,
    /// The device in words (CPU model and threads, GPU name).
    pub device_name: String,
    /// The bandwidth limit the GB/s are set against, GB/s.
    pub limit_gbps: f64,
    /// How the limit was measured.
    pub limit_source: String,
    /// Element type.
    pub dtype: String,
    /// Layout of every tensor (`NCHW`, `NHWC`).
    pub layout: String,
    /// Batch of every workload.
    pub batch: usize,
    /// Batch and channels divided by this (1: the SPEC's shapes).
    pub scale_down: usize,
    /// 1-minute load average before and after the run (`/proc/loadavg`; absent elsewhere):
    /// well above 0 means other work shared the machine and the times are noisy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_avg: Option<[f64; 2]>,
    /// One per kernel.
    pub results: Vec<BenchRow>,
    /// Footer notes (how times were taken).
    pub notes: Vec<String>,
}

// ---------------------------------------------------------------------------------------------
// CUDA

/// Number of untimed calls of each CUDA kernel before [`time_samples`]' own warm-up (module
/// load, resize tables, clocks).
pub const CUDA_WARMUP_CALLS: usize = 3;
/// Size of each of the two buffers of the device copy-bandwidth probe (1 GiB).
pub const CUDA_COPY_BYTES: usize = 1 << 30;
/// Size of the buffer [`CudaTimer`] clears before each timed call (256 MiB).
pub const CUDA_PAD_BYTES: usize = 256 << 20;

/// Whether CUDA can be used by `gradops bench`: the kernels are compiled into this build and
/// [`gradops::cuda::probe`] finds libcuda, a device and a context. The error is
/// [`Error::CudaUnavailable`] with the reason.
pub fn cuda_status() -> Result<gradops::cuda::DeviceInfo> {
    let build = gradops::cuda::build_info();
    if !build.kernels_compiled {
        return Err(Error::CudaUnavailable {
            reason: format!("this build has no CUDA kernels ({})", build.reason),
        });
    }
    gradops::cuda::probe()
}

/// A driver error as the crate's error (`what` says which step failed).
fn driver_err(op: &'static str, what: &'static str) -> impl FnOnce(DriverError) -> Error {
    move |e| Error::Cuda {
        op,
        msg: format!("{what}: {e}"),
    }
}

/// A device buffer of `len` elements of `T`, stored as bytes: cudarc allocates a
/// `CudaSlice<T>` only for `T: DeviceRepr`, which `half::f16` is not without cudarc's `f16`
/// feature. Invariant: the byte buffer holds exactly `len * size_of::<T>()` bytes, so the
/// lengths the device API checks are the true ones.
struct DevBuf<T> {
    bytes: CudaSlice<u8>,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T: Element> DevBuf<T> {
    /// `len` zeroed elements.
    fn zeros(stream: &Arc<CudaStream>, len: usize) -> Result<Self> {
        let bytes = stream
            .alloc_zeros::<u8>(len * std::mem::size_of::<T>())
            .map_err(driver_err("bench", "device allocation"))?;
        Ok(DevBuf {
            bytes,
            len,
            _elem: PhantomData,
        })
    }

    /// A copy of `host` (little-endian element bytes, as the device stores them).
    fn upload(stream: &Arc<CudaStream>, host: &[T]) -> Result<Self> {
        let size = std::mem::size_of::<T>();
        debug_assert_eq!(size, T::DTYPE.size());
        let mut le = vec![0u8; std::mem::size_of_val(host)];
        le.par_chunks_mut(size)
            .zip(host.par_iter())
            .for_each(|(b, v)| {
                // to_f64 is exact and the value came from T, so each conversion is exact.
                let v = v.to_f64();
                match T::DTYPE {
                    DType::F16 => b.copy_from_slice(&f16::from_f64(v).to_le_bytes()),
                    DType::F32 => b.copy_from_slice(&(v as f32).to_le_bytes()),
                    DType::F64 => b.copy_from_slice(&v.to_le_bytes()),
                }
            });
        let bytes = stream
            .clone_htod(&le)
            .map_err(driver_err("bench", "host-to-device copy"))?;
        Ok(DevBuf {
            bytes,
            len: host.len(),
            _elem: PhantomData,
        })
    }
}

impl<T> DeviceSlice<T> for DevBuf<T> {
    fn len(&self) -> usize {
        self.len
    }
    fn stream(&self) -> &Arc<CudaStream> {
        DeviceSlice::<u8>::stream(&self.bytes)
    }
}

impl<T> DevicePtr<T> for DevBuf<T> {
    fn device_ptr<'a>(&'a self, stream: &'a CudaStream) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        self.bytes.device_ptr(stream)
    }
}

impl<T> DevicePtrMut<T> for DevBuf<T> {
    fn device_ptr_mut<'a>(
        &'a mut self,
        stream: &'a CudaStream,
    ) -> (sys::CUdeviceptr, SyncOnDrop<'a>) {
        self.bytes.device_ptr_mut(stream)
    }
}

/// Times work queued on a stream with a pair of CUDA events.
///
/// Before the start event it queues a clear of a `pad`-byte buffer (outside the event pair):
/// the GPU is still busy with it while the host plans and launches the timed work, so the
/// events time the GPU work rather than the host's launch overhead, and the clear evicts the
/// L2 cache, so every timed call reads its inputs from device memory.
pub struct CudaTimer {
    stream: Arc<CudaStream>,
    start: CudaEvent,
    end: CudaEvent,
    pad: Option<CudaSlice<u8>>,
}

impl CudaTimer {
    /// Two timing events (`CU_EVENT_DEFAULT`; cudarc's default disables timing) on `stream`'s
    /// context and a `pad_bytes` buffer (0: no pad).
    pub fn new(stream: &Arc<CudaStream>, pad_bytes: usize) -> Result<Self> {
        let ctx = stream.context();
        let event = || {
            ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
                .map_err(driver_err("bench", "creating a timing event"))
        };
        Ok(CudaTimer {
            stream: Arc::clone(stream),
            start: event()?,
            end: event()?,
            pad: match pad_bytes {
                0 => None,
                n => Some(
                    stream
                        .alloc_zeros::<u8>(n)
                        .map_err(driver_err("bench", "device allocation"))?,
                ),
            },
        })
    }

    /// Queues `work` on the stream between the start and end events, waits for the end
    /// event and returns the GPU time between the two, in seconds.
    pub fn time(&mut self, work: impl FnOnce() -> Result<()>) -> Result<f64> {
        let stream = &self.stream;
        if let Some(pad) = &mut self.pad {
            stream
                .memset_zeros(pad)
                .map_err(driver_err("bench", "clearing the pad buffer"))?;
        }
        self.start
            .record(stream)
            .map_err(driver_err("bench", "recording the start event"))?;
        work()?;
        self.end
            .record(stream)
            .map_err(driver_err("bench", "recording the end event"))?;
        self.end
            .synchronize()
            .map_err(driver_err("bench", "waiting for the end event"))?;
        let ms = self
            .start
            .elapsed_ms(&self.end)
            .map_err(driver_err("bench", "reading the event time"))?;
        Ok(f64::from(ms) / 1e3)
    }
}

type LaunchFn = Box<dyn FnMut() -> Result<()>>;

/// One CUDA kernel of a workload: its description and a launch that queues one call on the
/// stream (inputs uploaded and outputs allocated once, held by the launch).
pub struct CudaKernel {
    /// What the kernel is.
    pub info: KernelInfo,
    launch: LaunchFn,
}

impl std::fmt::Debug for CudaKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaKernel")
            .field("name", &self.info.name())
            .field("shapes", &self.info.shapes)
            .finish_non_exhaustive()
    }
}

impl CudaKernel {
    /// Queues one call on the stream (does not wait for it).
    pub fn launch(&mut self) -> Result<()> {
        (self.launch)()
    }
}

/// Builds the CUDA kernels of a workload (one per [`Workload::variants`]) on `stream`: the
/// same seeded random inputs as [`cpu_kernels`], uploaded once, and preallocated device
/// outputs. Max pool's stored argmax comes from the device `max_pool`, computed here.
pub fn cuda_kernels<T: Element>(
    stream: &Arc<CudaStream>,
    w: &Workload,
    batch: usize,
    scale_down: usize,
) -> Result<Vec<CudaKernel>> {
    let s = w.shapes(batch, scale_down)?;
    let len = |shape: [usize; 4]| shape.iter().product::<usize>();
    let layout = w.layout;
    let upload_random = |shape, buffer| {
        DevBuf::<T>::upload(stream, &random_vec(len(shape), seed_for(w.id, buffer)))
    };
    let dy = Arc::new(upload_random(s.dy, 1)?);
    let info = |variant, kernel: String| KernelInfo {
        device_kernel: Some(kernel),
        ..KernelInfo::new(w, variant, T::DTYPE, s, true)
    };
    let st = Arc::clone(stream);
    let mut out = Vec::new();
    match w.op {
        WorkloadOp::ResizeGrad { attrs, .. } => {
            let mut dx = DevBuf::<T>::zeros(stream, len(s.x))?;
            let kernel = gradops::cuda::resize_grad_kernel::<T>(s.dy, s.x, layout, &attrs)?;
            out.push(CudaKernel {
                info: info(Variant::Main, kernel),
                launch: Box::new(move || {
                    gradops::cuda::resize_grad(
                        &st,
                        "resize_grad",
                        &*dy,
                        s.dy,
                        s.x,
                        layout,
                        &attrs,
                        &mut dx,
                    )
                }),
            });
        }
        WorkloadOp::Conv2dBackpropInput { .. } => {
            let fshape = s.filter.unwrap_or_default();
            let filter = upload_random(fshape, 2)?;
            let attrs = w.conv_attrs();
            let mut dx = DevBuf::<T>::zeros(stream, len(s.x))?;
            let kernel = format!("conv2d_backprop_input_{}", T::SUFFIX);
            out.push(CudaKernel {
                info: info(Variant::Main, kernel),
                launch: Box::new(move || {
                    gradops::cuda::conv2d_backprop_input(
                        &st, &*dy, s.dy, &filter, fshape, s.x, layout, &attrs, &mut dx,
                    )
                }),
            });
        }
        WorkloadOp::MaxPoolGrad { .. } => {
            let attrs = w.pool_attrs();
            let x = Arc::new(upload_random(s.x, 3)?);
            let mut argmax = stream
                .alloc_zeros::<i64>(len(s.dy))
                .map_err(driver_err("bench", "device allocation"))?;
            {
                let mut y = DevBuf::<T>::zeros(stream, len(s.dy))?;
                gradops::cuda::max_pool(stream, &*x, s.x, layout, &attrs, &mut y, &mut argmax)?;
            }
            let mut dx = DevBuf::<T>::zeros(stream, len(s.x))?;
            let (dy1, x1) = (Arc::clone(&dy), Arc::clone(&x));
            let kernel = |kind| gradops::cuda::max_pool_kernel::<T>(s.x, layout, &attrs, kind);
            out.push(CudaKernel {
                info: info(Variant::Main, kernel(gradops::cuda::PoolKernel::Grad)?),
                launch: Box::new(move || {
                    gradops::cuda::max_pool_grad(
                        &st, &*dy1, s.dy, &*x1, s.x, layout, &attrs, &mut dx,
                    )
                }),
            });
            let st = Arc::clone(stream);
            let mut dx = DevBuf::<T>::zeros(stream, len(s.x))?;
            out.push(CudaKernel {
                info: info(
                    Variant::StoredArgmax,
                    kernel(gradops::cuda::PoolKernel::GradStored)?,
                ),
                launch: Box::new(move || {
                    gradops::cuda::max_pool_grad_with_argmax(
                        &st, &*dy, s.dy, &argmax, s.x, layout, &attrs, &mut dx,
                    )
                }),
            });
            // The forward with argmax, into its own preallocated y and argmax.
            let st = Arc::clone(stream);
            let mut y = DevBuf::<T>::zeros(stream, len(s.dy))?;
            let mut am = stream
                .alloc_zeros::<i64>(len(s.dy))
                .map_err(driver_err("bench", "device allocation"))?;
            out.push(CudaKernel {
                info: info(
                    Variant::Forward,
                    kernel(gradops::cuda::PoolKernel::Forward)?,
                ),
                launch: Box::new(move || {
                    gradops::cuda::max_pool(&st, &*x, s.x, layout, &attrs, &mut y, &mut am)
                }),
            });
        }
    }
    // Uploads, clears and the argmax are done before anything is timed.
    stream
        .synchronize()
        .map_err(driver_err("bench", "preparing the inputs"))?;
    Ok(out)
}

/// The device's copy bandwidth in GB/s (1e9 bytes/s): `memcpy_dtod` of `bytes` into another
/// buffer on `stream`, timed with CUDA events, counting bytes read plus bytes written, best
/// of `tries` after one warm-up copy.
pub fn cuda_copy_bandwidth(stream: &Arc<CudaStream>, bytes: usize, tries: usize) -> Result<f64> {
    let src = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(driver_err("bench", "device allocation"))?;
    let mut dst = stream
        .alloc_zeros::<u8>(bytes)
        .map_err(driver_err("bench", "device allocation"))?;
    let mut timer = CudaTimer::new(stream, 0)?;
    let mut copy = || {
        timer.time(|| {
            stream
                .memcpy_dtod(&src, &mut dst)
                .map_err(driver_err("bench", "device-to-device copy"))
        })
    };
    copy()?;
    let mut best = f64::INFINITY;
    for _ in 0..tries.max(1) {
        best = best.min(copy()?);
    }
    Ok((2 * bytes) as f64 / best / 1e9)
}

/// **The CUDA path.** Times `opts.workloads` on device 0 at batch [`CUDA_BATCH`] (divided by
/// `scale_down`) and returns the report: per-call GPU times from a pair of CUDA events around
/// each launch ([`CudaTimer`]), rows as in [`bench_cpu`] (one per [`Workload::variants`], the
/// minimal traffic from [`Workload::traffic`], built by [`make_row`]), set against the card's
/// measured device-to-device copy bandwidth ([`cuda_copy_bandwidth`]).
///
/// [`Error::CudaUnavailable`] (with the reason) when CUDA cannot be used here, which
/// `--device auto` turns into a fallback to [`bench_cpu`]; any driver failure later is an
/// [`Error::Cuda`].
pub fn bench_cuda(opts: &BenchOptions) -> Result<BenchReport> {
    let device = cuda_status()?;
    match opts.dtype {
        DType::F16 => bench_cuda_typed::<f16>(opts, &device),
        DType::F32 => bench_cuda_typed::<f32>(opts, &device),
        DType::F64 => bench_cuda_typed::<f64>(opts, &device),
    }
}

fn bench_cuda_typed<T: Element>(
    opts: &BenchOptions,
    device: &gradops::cuda::DeviceInfo,
) -> Result<BenchReport> {
    let stream = gradops::cuda::stream()?;
    let ctx = stream.context().clone();
    let mut progress = Progress::new();
    let load_before = load_avg();
    let scale = opts.scale_down.max(1);
    let copy_bytes = (CUDA_COPY_BYTES / scale).max(64 << 20);
    let pad_bytes = (CUDA_PAD_BYTES / scale).max(16 << 20);
    let tries = 5;
    progress.say(&format!(
        "gradops bench: measuring the device copy bandwidth ({} MiB memcpy_dtod)...",
        copy_bytes >> 20
    ));
    let limit = cuda_copy_bandwidth(&stream, copy_bytes, tries)?;
    progress.done();
    eprintln!(
        "gradops bench: {} copy bandwidth {limit:.1} GB/s (the limit for the GB/s share)",
        device.name
    );
    let mut timer = CudaTimer::new(&stream, pad_bytes)?;
    let total_rows: usize = opts.workloads.iter().map(|w| w.variants().len()).sum();
    let mut rows = Vec::new();
    let mut done = 0;
    for w in &opts.workloads {
        progress.say(&format!(
            "[{}/{total_rows}] {} {}: uploading inputs...",
            done + 1,
            w.id,
            w.describe()
        ));
        let kernels = cuda_kernels::<T>(&stream, w, CUDA_BATCH, opts.scale_down)?;
        for mut k in kernels {
            done += 1;
            progress.say(&format!(
                "[{done}/{total_rows}] {} {}: timing...",
                w.id,
                k.info.name()
            ));
            for _ in 0..CUDA_WARMUP_CALLS {
                k.launch()?;
            }
            let t = time_samples(|| timer.time(|| k.launch()), opts.reps, opts.target)?;
            rows.push(make_row(&k.info, &t, limit));
        }
        // The workload's buffers were freed (stream-ordered) as its kernels dropped; wait
        // for that and surface any error the driver recorded meanwhile.
        stream
            .synchronize()
            .map_err(driver_err("bench", "freeing a workload's buffers"))?;
        ctx.check_err()
            .map_err(driver_err("bench", "freeing a workload's buffers"))?;
    }
    progress.done();
    let mut notes = vec![
        "times: GPU time per call between two CUDA events (CU_EVENT_DEFAULT) recorded on the \
         stream around the launch, the host waiting on the end event after each call; GB/s \
         and GFLOP/s at the median"
            .to_string(),
        format!(
            "before each timed call a {} MiB clear is queued outside the events: the GPU is busy \
             with it while the host queues the call (host launch overhead is not timed) and it \
             evicts L2 (inputs are read from device memory)",
            pad_bytes >> 20
        ),
        format!(
            "inputs uploaded once, outputs preallocated device buffers; {CUDA_WARMUP_CALLS} \
             untimed calls plus the usual warm-up before timing"
        ),
        MINIMAL_TRAFFIC_NOTE.to_string(),
    ];
    if opts
        .workloads
        .iter()
        .any(|w| w.variants().contains(&Variant::StoredArgmax))
    {
        notes.push(
            "max_pool_grad_with_argmax: the argmax comes from the device max_pool, not timed"
                .to_string(),
        );
    }
    let limit_source = format!(
        "device-to-device copy (memcpy_dtod) of {} MiB timed with CUDA events, bytes read + \
         written, best of {tries}",
        copy_bytes >> 20
    );
    notes.push(format!("limit: {limit_source}"));
    Ok(BenchReport {
        device: "cuda".into(),
        device_name: device.to_string(),
        limit_gbps: limit,
        limit_source,
        dtype: T::DTYPE.name().into(),
        layout: opts.layout.name().into(),
        batch: div_at_least_one(CUDA_BATCH, opts.scale_down),
        scale_down: opts.scale_down,
        load_avg: load_before.zip(load_avg()).map(|(a, b)| [a, b]),
        results: rows,
        notes,
    })
}

struct Progress {
    tty: bool,
    active: bool,
}

impl Progress {
    fn new() -> Self {
        Progress {
            tty: std::io::stderr().is_terminal(),
            active: false,
        }
    }
    fn say(&mut self, msg: &str) {
        if self.tty {
            eprint!("\r\x1b[2K{msg}");
            self.active = true;
        } else {
            eprintln!("{msg}");
        }
    }
    fn done(&mut self) {
        if self.tty && self.active {
            eprint!("\r\x1b[2K");
            self.active = false;
        }
    }
}

/// The 1-minute load average (`/proc/loadavg`), where the system has one.
pub fn load_avg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn cpu_name() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    format!("{model}, {} rayon threads", rayon::current_num_threads())
}

const MINIMAL_TRAFFIC_NOTE: &str = "minimal traffic: read dy + write dx; + read x \
     (max_pool_grad); + read the filter (conv); + read the i64 argmax (with_argmax); forward \
     max_pool: read x + write y + write the i64 argmax";

/// Times `opts.workloads` on the CPU at batch [`CPU_BATCH`] (divided by `scale_down`).
pub fn bench_cpu(opts: &BenchOptions) -> Result<BenchReport> {
    match opts.dtype {
        DType::F16 => bench_cpu_typed::<f16>(opts),
        DType::F32 => bench_cpu_typed::<f32>(opts),
        DType::F64 => bench_cpu_typed::<f64>(opts),
    }
}

fn bench_cpu_typed<T: Element>(opts: &BenchOptions) -> Result<BenchReport> {
    let mut progress = Progress::new();
    let load_before = load_avg();
    let stream_bytes = (STREAM_BYTES / opts.scale_down.max(1)).max(16 << 20);
    let tries = 8;
    progress.say(&format!(
        "gradops bench: measuring CPU streaming bandwidth ({} MiB copy)...",
        stream_bytes >> 20
    ));
    let limit = cpu_stream_bandwidth(stream_bytes, tries);
    progress.done();
    eprintln!(
        "gradops bench: CPU streaming bandwidth {limit:.1} GB/s (the limit for the GB/s share)"
    );
    let total_rows: usize = opts.workloads.iter().map(|w| w.variants().len()).sum();
    let mut rows = Vec::new();
    let mut done = 0;
    for w in &opts.workloads {
        progress.say(&format!(
            "[{}/{total_rows}] {} {}: preparing inputs...",
            done + 1,
            w.id,
            w.describe()
        ));
        let kernels = cpu_kernels::<T>(w, CPU_BATCH, opts.scale_down)?;
        for mut k in kernels {
            done += 1;
            progress.say(&format!(
                "[{done}/{total_rows}] {} {}: timing...",
                w.id,
                k.name()
            ));
            let t = time_calls(|| k.call(), opts.reps, opts.target)?;
            rows.push(make_row(&k, &t, limit));
        }
    }
    progress.done();
    let mut notes = vec![
        "times: wall clock per call (std::time::Instant), each call timed alone after warm-up; \
         GB/s and GFLOP/s at the median"
            .to_string(),
        "outputs preallocated (resize_grad_into, conv2d_backprop_input_into, max_pool_grad_into; \
         the forward max_pool into preallocated y and argmax): allocation is not timed"
            .to_string(),
        MINIMAL_TRAFFIC_NOTE.to_string(),
    ];
    if opts
        .workloads
        .iter()
        .any(|w| w.variants().contains(&Variant::StoredArgmax))
    {
        notes.push(
            "max_pool_grad_with_argmax: its argmax comes from max_pool(.., true), not timed"
                .to_string(),
        );
    }
    notes.push(format!(
        "limit: CPU streaming bandwidth, rayon parallel copy of {} MiB f32 into another buffer \
         (bytes read + written), best of {tries}",
        stream_bytes >> 20
    ));
    Ok(BenchReport {
        device: "cpu".into(),
        device_name: cpu_name(),
        limit_gbps: limit,
        limit_source: format!(
            "rayon parallel copy of {} MiB f32, bytes read + written, best of {tries}",
            stream_bytes >> 20
        ),
        dtype: T::DTYPE.name().into(),
        layout: opts.layout.name().into(),
        batch: div_at_least_one(CPU_BATCH, opts.scale_down),
        scale_down: opts.scale_down,
        load_avg: load_before.zip(load_avg()).map(|(a, b)| [a, b]),
        results: rows,
        notes,
    })
}

/// A report row from a kernel's description and its per-call times (`limit` in GB/s), for
/// every device. A `&CpuKernel` coerces to `&KernelInfo`.
pub fn make_row(k: &KernelInfo, t: &Timing, limit: f64) -> BenchRow {
    let med = t.median();
    let bytes = k.traffic.total();
    let gbps = bytes as f64 / med / 1e9;
    let ms = |s: f64| s * 1e3;
    BenchRow {
        workload: k.workload.id.into(),
        op: k.workload.op_label(k.variant),
        kernel: k.name(),
        dtype: k.dtype.name().into(),
        layout: k.workload.layout.name().into(),
        x_shape: k.shapes.x,
        dy_shape: k.shapes.dy,
        filter_shape: k.shapes.filter,
        device_kernel: k.device_kernel.clone(),
        variant: k.variant.name(&k.workload).into(),
        argmax: k.variant.argmax_kind(&k.workload).map(str::to_string),
        calls: t.calls(),
        total_ms: ms(t.total()),
        avg_ms: ms(t.avg()),
        median_ms: ms(med),
        min_ms: ms(t.min()),
        max_ms: ms(t.max()),
        bytes,
        gbps,
        limit_gbps: limit,
        share_of_limit: gbps / limit,
        flops: k.flops,
        gflops: k.flops.map(|f| f as f64 / med / 1e9),
        preallocated_output: k.preallocated,
        traffic_text: k.traffic.describe(),
        shape_text: k.shape_text(),
    }
}

/// Runs the benchmark on the device `device` selects (see the module docs).
pub fn run(device: BenchDevice, opts: &BenchOptions) -> Result<BenchReport> {
    match device {
        BenchDevice::Cpu => bench_cpu(opts),
        BenchDevice::Cuda => bench_cuda(opts),
        // CUDA when it is usable; a failure after that is an error, not a fallback.
        BenchDevice::Auto => match cuda_status() {
            Ok(_) => bench_cuda(opts),
            Err(Error::CudaUnavailable { reason }) => {
                eprintln!("gradops bench: CUDA not used ({reason}); running on the CPU");
                bench_cpu(opts)
            }
            Err(e) => Err(e),
        },
    }
}

/// The nvprof-style table, the roofline lines and the footer.
pub fn format_report(r: &BenchReport) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "==gradops== bench: device {} ({}), dtype {}, layout {}, batch {}{}",
        r.device,
        r.device_name,
        r.dtype,
        r.layout,
        r.batch,
        if r.scale_down > 1 {
            format!(" (batch and channels scaled down by {})", r.scale_down)
        } else {
            String::new()
        }
    );
    if let Some([a, b]) = r.load_avg {
        let _ = writeln!(
            s,
            "==gradops== load average (1 min): {a:.2} before, {b:.2} after{}",
            if a.max(b) > 0.5 {
                " (other work shared the machine: times are noisy)"
            } else {
                ""
            }
        );
    }
    let _ = writeln!(
        s,
        "==gradops== limit: {:.1} GB/s ({})",
        r.limit_gbps, r.limit_source
    );
    let _ = writeln!(
        s,
        "==gradops== minimal traffic per call (roofline: time at the limit = bytes / limit):"
    );
    for row in &r.results {
        let fl = row
            .flops
            .map(|f| format!(", {:.3} GFLOP", f as f64 / 1e9))
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "  {:<3} {:<46} {:>9} ({}){fl}  >= {:.3} ms",
            row.workload,
            row.op,
            mb(row.bytes),
            row.traffic_text,
            row.bytes as f64 / (r.limit_gbps * 1e9) * 1e3,
        );
    }
    let _ = writeln!(s, "==gradops== Profiling result:");
    let _ = writeln!(
        s,
        "{:<3} {:<5} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8} {:>6} {:>8}  Name  [shape]",
        "WL",
        "Type",
        "Calls",
        "Total(ms)",
        "Avg(ms)",
        "Med(ms)",
        "Min(ms)",
        "Max(ms)",
        "GB/s",
        "Limit",
        "GFLOP/s"
    );
    for row in &r.results {
        let gf = row
            .gflops
            .map(|g| format!("{g:.1}"))
            .unwrap_or_else(|| "-".into());
        let _ = writeln!(
            s,
            "{:<3} {:<5} {:>6} {:>10.2} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>8.2} {:>5.1}% {:>8}  {}  [{}]",
            row.workload,
            row.dtype,
            row.calls,
            row.total_ms,
            row.avg_ms,
            row.median_ms,
            row.min_ms,
            row.max_ms,
            row.gbps,
            row.share_of_limit * 100.0,
            gf,
            match &row.device_kernel {
                Some(d) => format!("{} -> {d}", row.kernel),
                None => row.kernel.clone(),
            },
            row.shape_text
        );
    }
    for n in &r.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}

/// `gradops bench`: parse options, pick the device, run, print, write the JSON.
pub fn run_cli(args: &BenchArgs) -> Result<()> {
    let opts = BenchOptions::from_args(args)?;
    let report = run(args.device, &opts)?;
    print!("{}", format_report(&report));
    if let Some(path) = &args.json {
        let p = path.display().to_string();
        let text = serde_json::to_string_pretty(&report).map_err(|e| Error::Io {
            path: p.clone(),
            source: std::io::Error::other(e),
        })?;
        std::fs::write(path, text + "\n").map_err(|source| Error::Io { path: p, source })?;
        eprintln!("gradops bench: wrote {}", path.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn by_id(id: &str) -> Workload {
        select_workloads(Some(id)).unwrap()[0]
    }

    #[test]
    fn spec_shapes() {
        let cases = [
            ("W1", [8, 64, 128, 128], [8, 64, 256, 256]),
            ("W2", [8, 64, 256, 256], [8, 64, 97, 97]),
            ("W3", [8, 64, 128, 128], [8, 64, 256, 256]),
            ("W4", [8, 64, 56, 56], [8, 64, 56, 56]),
            ("W5", [8, 64, 56, 56], [8, 128, 28, 28]),
            ("W6", [8, 64, 112, 112], [8, 64, 56, 56]),
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

    #[test]
    fn selection() {
        let ids = |l| {
            select_workloads(l)
                .unwrap()
                .iter()
                .map(|w| w.id)
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(None).len(), 6);
        assert_eq!(ids(Some("w4, W1,W4")), ["W4", "W1"]);
        assert!(select_workloads(Some("W7")).is_err());
        assert!(select_workloads(Some(",")).is_err());
    }

    #[test]
    fn median_and_random() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let v: Vec<f32> = random_vec(1000, 1);
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        assert!(v.iter().filter(|x| **x < 0.0).count() > 300);
        assert_ne!(random_vec::<f32>(4, 1), random_vec::<f32>(4, 2));
    }

    #[test]
    fn kernels_run_and_agree() {
        // Scaled-down W6 (both rows) and W5 in f16 run and report sane figures.
        let w = by_id("W6");
        for mut k in cpu_kernels::<f32>(&w, CPU_BATCH, 16).unwrap() {
            let t = time_calls(|| k.call(), Some(2), Duration::ZERO).unwrap();
            assert_eq!(t.calls(), 2);
            let row = make_row(&k, &t, 10.0);
            assert!(row.gbps > 0.0 && row.median_ms > 0.0);
        }
        let w = by_id("W5");
        let mut k = cpu_kernels::<f16>(&w, CPU_BATCH, 16).unwrap();
        assert_eq!(k.len(), 1);
        k[0].call().unwrap();
        assert!(k[0].flops.is_some());
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

    #[test]
    fn cpu_report_nhwc_with_forward_row() {
        // `--layout nhwc` on the CPU path, scaled down: every row NHWC, W6 with its three
        // rows, each row carrying variant, bytes and the limit.
        let opts = BenchOptions::from_args(&BenchArgs {
            device: BenchDevice::Cpu,
            dtype: DType::F32,
            layout: Layout::Nhwc,
            workload: Some("W3,W5,W6".into()),
            reps: Some(2),
            json: None,
            scale_down: 16,
        })
        .unwrap();
        assert!(opts.workloads.iter().all(|w| w.layout == Layout::Nhwc));
        let r = run(BenchDevice::Cpu, &opts).unwrap();
        assert_eq!((r.device.as_str(), r.layout.as_str()), ("cpu", "NHWC"));
        let got: Vec<_> = r
            .results
            .iter()
            .map(|row| (row.workload.as_str(), row.variant.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("W3", "backward"),
                ("W5", "backward"),
                ("W6", "recompute"),
                ("W6", "stored"),
                ("W6", "forward"),
            ]
        );
        for row in &r.results {
            assert_eq!(row.layout, "NHWC");
            assert_eq!(row.calls, 2);
            assert!(row.median_ms > 0.0 && row.bytes > 0);
            assert_eq!(row.limit_gbps, r.limit_gbps);
            assert!((row.share_of_limit - row.gbps / r.limit_gbps).abs() < 1e-12);
        }
        let fwd = &r.results[4];
        assert_eq!(fwd.kernel, "max_pool_f32 (3x3, s2, SAME)");
        assert_eq!(
            (fwd.x_shape, fwd.dy_shape),
            ([1, 112, 112, 4], [1, 56, 56, 4])
        );
        assert_eq!(fwd.argmax, None);
        assert_eq!(fwd.bytes, (4 * (112 * 112 * 4 + 56 * 56 * 12)) as u64);
        let text = format_report(&r);
        assert!(text.contains("layout NHWC"), "{text}");
        assert!(
            text.contains("x [1,112,112,4] -> y [1,56,56,4] + argmax NHWC"),
            "{text}"
        );
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v["layout"], "NHWC");
        assert_eq!(v["results"][4]["variant"], "forward");
        assert!(v["results"][4]["limit_gbps"].as_f64().unwrap() > 0.0);
    }

    #[test]
    fn forward_kernel_runs_nhwc_f64() {
        // The forward row's kernel (into preallocated y and argmax) runs in NHWC, f64.
        let w = by_id("W6").with_layout(Layout::Nhwc);
        let mut ks = cpu_kernels::<f64>(&w, CPU_BATCH, 16).unwrap();
        assert_eq!(ks.len(), 3);
        let k = &mut ks[2];
        assert_eq!(k.variant, Variant::Forward);
        k.call().unwrap();
        assert!(k.preallocated && k.flops.is_none());
    }

    #[test]
    fn cuda_device_errors_with_reason() {
        let opts = BenchOptions::from_args(&BenchArgs {
            device: BenchDevice::Cuda,
            dtype: DType::F32,
            layout: Layout::Nchw,
            workload: Some("W1".into()),
            reps: Some(1),
            json: None,
            scale_down: 64,
        })
        .unwrap();
        match run(BenchDevice::Cuda, &opts) {
            Err(Error::CudaUnavailable { reason }) => assert!(!reason.is_empty()),
            Err(e) => panic!("unexpected error {e}"),
            Ok(r) => assert_eq!(r.device, "cuda"),
        }
    }

    #[test]
    fn bench_cuda_unavailable_or_runs_w1() {
        let opts = BenchOptions::from_args(&BenchArgs {
            device: BenchDevice::Cuda,
            dtype: DType::F32,
            layout: Layout::Nchw,
            workload: Some("W1".into()),
            reps: Some(1),
            json: None,
            scale_down: 16,
        })
        .unwrap();
        if let Err(e) = gradops::cuda::probe() {
            // No usable CUDA here: the CUDA path says why and runs nothing.
            match bench_cuda(&opts) {
                Err(Error::CudaUnavailable { reason }) => {
                    assert!(!reason.trim().is_empty(), "empty reason (probe: {e})")
                }
                Err(other) => panic!("expected CudaUnavailable, got {other}"),
                Ok(r) => panic!("probe failed ({e}) but bench_cuda ran on {}", r.device_name),
            }
            assert!(matches!(cuda_status(), Err(Error::CudaUnavailable { .. })));
            return;
        }
        let r = bench_cuda(&opts).unwrap();
        assert_eq!((r.device.as_str(), r.dtype.as_str()), ("cuda", "f32"));
        assert_eq!(r.batch, CUDA_BATCH / 16);
        assert!(r.limit_gbps > 0.0 && r.limit_source.contains("memcpy_dtod"));
        assert_eq!(r.results.len(), 1);
        let row = &r.results[0];
        let w = by_id("W1");
        let s = w.shapes(CUDA_BATCH, 16).unwrap();
        assert_eq!(row.workload, "W1");
        assert_eq!(row.kernel, w.kernel_name(Variant::Main, DType::F32));
        assert_eq!((row.x_shape, row.dy_shape), (s.x, s.dy));
        assert_eq!(row.x_shape, [2, 4, 128, 128]);
        assert_eq!(row.bytes, w.traffic(&s, Variant::Main, 4).total());
        assert_eq!(row.calls, 1);
        assert!(row.median_ms > 0.0 && row.min_ms <= row.max_ms);
        assert!(row.gbps > 0.0);
        let share = row.gbps / r.limit_gbps;
        assert!((row.share_of_limit - share).abs() <= 1e-12 * share);
        assert!(row.preallocated_output && row.argmax.is_none());
    }
}

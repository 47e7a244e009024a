//! What a run reports: one [`BenchRow`] per timed kernel ([`make_row`], for every device), the
//! whole [`BenchReport`] (serialised as the `--json` file), and the nvprof-style table
//! ([`format_report`]).

use super::timing::Timing;
use super::workloads::{mb, KernelInfo};
use serde::Serialize;

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
    /// f32 conv on CUDA: `"tf32"` (TF32 allowed) or `"fp32"` (exact), PyTorch's names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub math: Option<String>,
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

pub(super) const MINIMAL_TRAFFIC_NOTE: &str = "minimal traffic: read dy + write dx; + read x \
     (max_pool_grad); + read the filter (conv); + read the i64 argmax (with_argmax); forward \
     max_pool: read x + write y + write the i64 argmax; forward conv2d: read x + the filter + \
     write y";

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
        math: None,
        traffic_text: k.traffic.describe(),
        shape_text: k.shape_text(),
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

//! `gradops bench`: the SPEC's benchmark workloads W1–W8, timed on the best available device.
//!
//! The workload definitions ([`workloads`]) are the single source of the shapes: the CLI
//! (`gradops bench`), the criterion benches (`benches/ops.rs`) and the tests all use them.
//!
//! Device selection: `--device cpu` times the CPU ops; `--device cuda` times the CUDA ops
//! ([`bench_cuda`]; [`Error::CudaUnavailable`], with the reason, where CUDA is unusable);
//! `--device auto` (the default) uses CUDA when [`cuda_status`] is `Ok` and otherwise falls
//! back to the CPU, saying why on one stderr line.
//!
//! What is measured on the CPU: wall-clock time per call ([`Instant`](std::time::Instant)) after warm-up, with
//! preallocated outputs where the API has an `_into` variant; the median over the calls gives
//! the achieved GB/s of the op's minimal memory traffic ([`Traffic`]) and, for conv, GFLOP/s.
//! The GB/s is set against the machine's streaming bandwidth, measured by the command itself
//! ([`cpu_stream_bandwidth`]).
//!
//! On a GPU (batch [`CUDA_BATCH`]): GPU time per call from a pair of CUDA events around each
//! launch ([`CudaTimer`]), device-resident inputs and outputs, and the same rows
//! ([`make_row`]) set against the card's measured device-to-device copy bandwidth
//! ([`cuda_copy_bandwidth`]).
//!
//! By concern: `workloads` (the shapes, minimal traffic, flops, kernel names and seeded
//! inputs of W1–W8), `timing` (the sampling protocol both devices share), `cpu` (CPU kernels
//! and host-clock timing, streaming bandwidth), `cuda` (device buffers, CUDA-event timing,
//! copy bandwidth), `report` (rows, the JSON report, the table); this module holds the
//! command line and the device selection. Everything public is re-exported here.

mod cpu;
mod cuda;
mod report;
mod timing;
mod workloads;

pub use cpu::*;
pub use cuda::*;
pub use report::*;
pub use timing::*;
pub use workloads::*;

use gradops::dtype::DType;
use gradops::error::{Error, Result};
use gradops::tensor::Layout;
use gradops::F32Precision;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

// ---------------------------------------------------------------------------------------------
// Options, progress, device selection

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
    /// Element type: f16, bf16, f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: DType,
    /// Memory layout of every tensor: nchw (the SPEC's workloads) or nhwc (the same logical
    /// shapes with the tensors in NHWC order; the conv filter stays HWIO).
    #[arg(long, default_value = "nchw", value_name = "nchw|nhwc")]
    pub layout: Layout,
    /// Workloads, comma-separated (W1,...,W8); default all.
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
    /// f32 conv arithmetic (`--dtype f32` only): exact, or tf32 (Conv2dAttrs::f32_precision
    /// = Tf32: plain TF32 tensor cores on compute_80+ GPUs for conv2d_backprop_input; the
    /// CPU, compute_75 and conv2d_backprop_filter stay exact). Rows carry `math` so
    /// `bench/peers.py` pairs them with cuDNN at the same setting.
    #[arg(long, value_enum, default_value = "exact")]
    pub f32_precision: BenchF32Precision,
    /// CPU only: time calls on request instead of rows, for `bench/paired.py` (gradops and a
    /// peer called in turn, so both see the same moments of a shared machine). Reads one
    /// workload per stdin line, an id (its first row) or `ID:VARIANT` (`W6:stored`), runs
    /// that row's kernel once, prints `NAME MS`.
    #[arg(long)]
    pub serve: bool,
}

/// `--f32-precision`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum BenchF32Precision {
    /// Full f32 products (the default).
    #[default]
    Exact,
    /// TF32 products allowed.
    Tf32,
}

impl From<BenchF32Precision> for F32Precision {
    fn from(p: BenchF32Precision) -> Self {
        match p {
            BenchF32Precision::Exact => F32Precision::Exact,
            BenchF32Precision::Tf32 => F32Precision::Tf32,
        }
    }
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
    /// f32 conv arithmetic allowance (`Tf32` only with `dtype` f32).
    pub f32_precision: F32Precision,
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
        let f32_precision = F32Precision::from(a.f32_precision);
        if f32_precision == F32Precision::Tf32 && a.dtype != DType::F32 {
            return Err(Error::attr(
                "bench",
                "f32-precision",
                format!(
                    "tf32 applies to --dtype f32 only, got --dtype {}",
                    a.dtype.name()
                ),
            ));
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
            f32_precision,
        })
    }
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

/// `gradops bench`: parse options, pick the device, run, print, write the JSON.
pub fn run_cli(args: &BenchArgs) -> Result<()> {
    let opts = BenchOptions::from_args(args)?;
    if args.serve {
        if args.device == BenchDevice::Cuda {
            return Err(Error::attr(
                "bench",
                "serve",
                "times CPU calls only, got --device cuda",
            ));
        }
        let stdin = std::io::stdin();
        return serve_cpu(&opts, stdin.lock(), std::io::stdout().lock());
    }
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

/// A workload by id, for the tests of every module.
#[cfg(test)]
fn by_id(id: &str) -> Workload {
    select_workloads(Some(id)).unwrap()[0]
}

#[cfg(test)]
mod tests {
    use super::*;

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
            f32_precision: BenchF32Precision::Exact,
            serve: false,
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
    fn cuda_device_errors_with_reason() {
        let opts = BenchOptions::from_args(&BenchArgs {
            device: BenchDevice::Cuda,
            dtype: DType::F32,
            layout: Layout::Nchw,
            workload: Some("W1".into()),
            reps: Some(1),
            json: None,
            scale_down: 64,
            f32_precision: BenchF32Precision::Exact,
            serve: false,
        })
        .unwrap();
        match run(BenchDevice::Cuda, &opts) {
            Err(Error::CudaUnavailable { reason }) => assert!(!reason.is_empty()),
            Err(e) => panic!("unexpected error {e}"),
            Ok(r) => assert_eq!(r.device, "cuda"),
        }
    }

    #[test]
    fn f32_precision_flag_is_for_f32_only() {
        let args = |dtype, f32_precision| BenchArgs {
            device: BenchDevice::Cpu,
            dtype,
            layout: Layout::Nchw,
            workload: Some("W4".into()),
            reps: Some(1),
            json: None,
            scale_down: 16,
            f32_precision,
            serve: false,
        };
        let o = BenchOptions::from_args(&args(DType::F32, BenchF32Precision::Tf32)).unwrap();
        assert_eq!(o.f32_precision, F32Precision::Tf32);
        let o = BenchOptions::from_args(&args(DType::F64, BenchF32Precision::Exact)).unwrap();
        assert_eq!(o.f32_precision, F32Precision::Exact);
        let e = BenchOptions::from_args(&args(DType::F16, BenchF32Precision::Tf32))
            .unwrap_err()
            .to_string();
        for w in ["bench", "f32-precision", "tf32", "f16"] {
            assert!(e.contains(w), "{e:?} lacks {w:?}");
        }
    }
}

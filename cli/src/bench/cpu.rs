//! The CPU path: the workloads' CPU kernels (random inputs, preallocated outputs), timed on
//! the host clock, set against the machine's streaming bandwidth.

use super::report::{make_row, BenchReport, MINIMAL_TRAFFIC_NOTE};
use super::timing::{load_avg, time_calls};
use super::workloads::{
    div_at_least_one, random_vec, seed_for, KernelInfo, Variant, Workload, WorkloadOp, CPU_BATCH,
};
use super::{BenchOptions, Progress};
use gradops::dtype::{DType, Element};
use gradops::error::Result;
use gradops::ops::conv2d::{
    conv2d_backprop_filter_into, conv2d_backprop_input_into, conv2d_into, FilterRef,
};
use gradops::ops::max_pool::{
    max_pool, max_pool_grad_into, max_pool_grad_with_argmax_into, plan_max_pool,
};
use gradops::ops::resize::resize_grad_into;
use gradops::tensor::TensorRef;
use half::{bf16, f16};
use rayon::prelude::*;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

/// Size of each of the two buffers of the bandwidth probe (256 MiB).
pub const STREAM_BYTES: usize = 256 << 20;

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
        WorkloadOp::Conv2dBackpropFilter { .. } => {
            let fshape = s.filter.unwrap_or_default();
            let x: Vec<T> = random_vec(len(s.x), seed_for(w.id, 3));
            let attrs = w.conv_attrs();
            let mut dw = vec![T::default(); len(fshape)];
            push(
                Variant::Main,
                true,
                Box::new(move || {
                    conv2d_backprop_filter_into(
                        TensorRef::new(&x, s.x, layout),
                        TensorRef::new(&dy, s.dy, layout),
                        fshape,
                        &attrs,
                        &mut dw,
                    )?;
                    black_box(&mut dw);
                    Ok(())
                }),
            );
        }
        WorkloadOp::Conv2d { .. } => {
            let fshape = s.filter.unwrap_or_default();
            let x: Vec<T> = random_vec(len(s.x), seed_for(w.id, 3));
            let filter: Vec<T> = random_vec(len(fshape), seed_for(w.id, 2));
            let attrs = w.conv_attrs();
            let mut y = vec![T::default(); len(s.dy)];
            push(
                Variant::Main,
                true,
                Box::new(move || {
                    conv2d_into(
                        TensorRef::new(&x, s.x, layout),
                        FilterRef::new(&filter, fshape),
                        &attrs,
                        &mut y,
                    )?;
                    black_box(&mut y);
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
    format!(
        "{model}, {} rayon threads, SIMD {}",
        rayon::current_num_threads(),
        cpu_simd_description()
    )
}

/// The SIMD level the CPU kernels run at, and why: `avx512`, or `avx2 (the CPU has avx512;
/// GRADOPS_CPU_SIMD=avx2)`, or a note that the variable's value was not a level.
pub fn cpu_simd_description() -> String {
    let (active, detected) = (gradops::simd_level(), gradops::detected_simd_level());
    match gradops::simd_cap() {
        (None, _) => active.to_string(),
        (Some(raw), None) => format!(
            "{active} ({}={raw:?} is not a level: scalar, avx2, avx512 or avx512bf16; ignored)",
            gradops::CPU_SIMD_ENV
        ),
        (Some(raw), Some(_)) if active != detected => format!(
            "{active} (the CPU has {detected}; {}={raw})",
            gradops::CPU_SIMD_ENV
        ),
        (Some(raw), Some(_)) => format!("{active} ({}={raw})", gradops::CPU_SIMD_ENV),
    }
}

/// Times `opts.workloads` on the CPU at batch [`CPU_BATCH`] (divided by `scale_down`).
pub fn bench_cpu(opts: &BenchOptions) -> Result<BenchReport> {
    match opts.dtype {
        DType::F16 => bench_cpu_typed::<f16>(opts),
        DType::BF16 => bench_cpu_typed::<bf16>(opts),
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
        "outputs preallocated (resize_grad_into, conv2d_backprop_input_into, conv2d_backprop_filter_into, max_pool_grad_into; \
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

/// `gradops bench --serve` on the CPU: builds every kernel of each of `opts.workloads`
/// (random inputs, preallocated output, one untimed call each), then for every non-empty
/// line of `input` runs one kernel once and writes `NAME MS` (the call's wall time) to
/// `output`, flushed, until `input` ends. A line names a workload's first row by its id
/// (`W6`: max pool's recompute row) or any row by `ID:VARIANT`, the variant as in the JSON
/// (`W6:stored`, `W6:forward`, `W5:backward`). A driver (`bench/paired.py`) alternates these
/// calls with a peer's, so both are timed in the same moments of a shared machine.
pub fn serve_cpu(
    opts: &BenchOptions,
    input: impl std::io::BufRead,
    output: impl std::io::Write,
) -> Result<()> {
    match opts.dtype {
        DType::F16 => serve_cpu_typed::<f16>(opts, input, output),
        DType::BF16 => serve_cpu_typed::<bf16>(opts, input, output),
        DType::F32 => serve_cpu_typed::<f32>(opts, input, output),
        DType::F64 => serve_cpu_typed::<f64>(opts, input, output),
    }
}

fn serve_cpu_typed<T: Element>(
    opts: &BenchOptions,
    input: impl std::io::BufRead,
    mut output: impl std::io::Write,
) -> Result<()> {
    let io_err = |source| gradops::error::Error::Io {
        path: "<stdio>".into(),
        source,
    };
    // (names, kernel): the first row answers to its id too.
    let mut kernels: Vec<(Vec<String>, CpuKernel)> = Vec::new();
    for w in &opts.workloads {
        for (i, mut k) in cpu_kernels::<T>(w, CPU_BATCH, opts.scale_down)?
            .into_iter()
            .enumerate()
        {
            k.call()?;
            let full = format!("{}:{}", w.id, k.variant.name(w));
            let names = if i == 0 {
                vec![w.id.to_string(), full]
            } else {
                vec![full]
            };
            kernels.push((names, k));
        }
    }
    for line in input.lines() {
        let line = line.map_err(io_err)?;
        let id = line.trim();
        if id.is_empty() {
            continue;
        }
        let found = kernels.iter_mut().find_map(|(names, k)| {
            let name = names.iter().find(|n| n.eq_ignore_ascii_case(id))?;
            Some((name, k))
        });
        let Some((name, k)) = found else {
            return Err(gradops::error::Error::attr(
                "bench",
                "serve",
                format!(
                    "asked for workload {id:?}, serving {}",
                    kernels
                        .iter()
                        .flat_map(|(names, _)| names.iter().map(String::as_str))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ));
        };
        let t = Instant::now();
        k.call()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        writeln!(output, "{name} {ms:.4}").map_err(io_err)?;
        output.flush().map_err(io_err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::*;

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
    fn serve_times_the_asked_workloads() {
        // Scaled-down W5, W3 and W6: one line out per name asked (any case, blank lines
        // skipped), in order, each a positive time; a bare id is the first row, `ID:VARIANT`
        // any row; a name not served is an error naming all that are.
        let mut opts = BenchOptions::from_args(&BenchArgs {
            device: BenchDevice::Cpu,
            dtype: DType::F32,
            layout: Layout::Nhwc,
            workload: Some("W5,W3,W6".into()),
            reps: None,
            json: None,
            scale_down: 16,
            f32_precision: BenchF32Precision::Exact,
            serve: true,
        })
        .unwrap();
        let mut out = Vec::new();
        let asked = b"W5\n\nw3\nW6:stored\nW5\nw6:Forward\nW6\nW5:backward\n";
        serve_cpu(&opts, &asked[..], &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let got: Vec<(&str, f64)> = out
            .lines()
            .map(|l| {
                let (id, ms) = l.split_once(' ').unwrap();
                (id, ms.parse().unwrap())
            })
            .collect();
        assert_eq!(
            got.iter().map(|g| g.0).collect::<Vec<_>>(),
            [
                "W5",
                "W3",
                "W6:stored",
                "W5",
                "W6:forward",
                "W6",
                "W5:backward"
            ],
            "{out}"
        );
        assert!(got.iter().all(|g| g.1 > 0.0), "{out}");
        opts.dtype = DType::F16;
        for bad in ["W4", "W6:backward", "W5:stored"] {
            let e = serve_cpu(&opts, format!("{bad}\n").as_bytes(), std::io::sink())
                .unwrap_err()
                .to_string();
            let served =
                "W5, W5:backward, W3, W3:backward, W6, W6:recompute, W6:stored, W6:forward";
            assert!(e.contains(&format!("{bad:?}")) && e.contains(served), "{e}");
        }
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
}

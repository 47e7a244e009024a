//! The CUDA path: the workloads' kernels on device buffers, timed with CUDA events
//! ([`CudaTimer`]), set against the card's measured device-to-device copy bandwidth.

use super::report::{make_row, BenchReport, MINIMAL_TRAFFIC_NOTE};
use super::timing::{load_avg, time_samples};
use super::workloads::{
    div_at_least_one, random_vec, seed_for, KernelInfo, Variant, Workload, WorkloadOp, CUDA_BATCH,
};
use super::{BenchOptions, Progress};
use cudarc::driver::{sys, CudaEvent, CudaSlice, CudaStream, DriverError};
use gradops::cuda::{ConvFamily, DeviceTensor};
use gradops::dtype::{DType, Element};
use gradops::error::{Error, Result};
use gradops::{F32Precision, TensorRef};
use half::{bf16, f16};
use std::sync::Arc;

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
/// same seeded random inputs as [`cpu_kernels`](super::cpu_kernels), uploaded once, and preallocated device
/// outputs. Max pool's stored argmax comes from the device `max_pool`, computed here.
pub fn cuda_kernels<T: Element>(
    stream: &Arc<CudaStream>,
    w: &Workload,
    batch: usize,
    scale_down: usize,
    f32_precision: F32Precision,
) -> Result<Vec<CudaKernel>> {
    let s = w.shapes(batch, scale_down)?;
    let len = |shape: [usize; 4]| shape.iter().product::<usize>();
    let layout = w.layout;
    let upload_random = |shape: [usize; 4], buffer| {
        let host = random_vec::<T>(len(shape), seed_for(w.id, buffer));
        DeviceTensor::from_host(stream, TensorRef::new(&host, shape, layout))
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
            let mut dx = DeviceTensor::<T>::zeros(stream, s.x, layout)?;
            let kernel = gradops::cuda::resize_grad_kernel::<T>(s.dy, s.x, layout, &attrs)?;
            out.push(CudaKernel {
                info: info(Variant::Main, kernel),
                launch: Box::new(move || {
                    gradops::cuda::resize_grad_into(&st, dy.view(), &attrs, dx.view_mut())
                }),
            });
        }
        WorkloadOp::Conv2dBackpropInput { .. } => {
            let fshape = s.filter.unwrap_or_default();
            let filter = upload_random(fshape, 2)?;
            let attrs = w.conv_attrs().f32_precision(f32_precision);
            let mut dx = DeviceTensor::<T>::zeros(stream, s.x, layout)?;
            let g = gradops::ops::conv2d::plan_conv2d_backprop_input(
                s.dy, fshape, s.x, layout, &attrs,
            )?;
            let kernel = gradops::cuda::conv_kernel_for::<T>(
                ConvFamily::BackpropInput,
                &g,
                layout,
                attrs.filter_layout,
                f32_precision,
            )?;
            out.push(CudaKernel {
                info: info(Variant::Main, kernel),
                launch: Box::new(move || {
                    gradops::cuda::conv2d_backprop_input_into(
                        &st,
                        dy.view(),
                        filter.as_filter(),
                        &attrs,
                        dx.view_mut(),
                    )
                }),
            });
        }
        WorkloadOp::Conv2dBackpropFilter { .. } => {
            let fshape = s.filter.unwrap_or_default();
            let x = upload_random(s.x, 3)?;
            let attrs = w.conv_attrs();
            let mut dw = DeviceTensor::<T>::zeros(stream, fshape, layout)?;
            let kernel = gradops::cuda::conv_kernel::<T>(
                ConvFamily::BackpropFilter,
                layout,
                F32Precision::Exact,
            )?;
            out.push(CudaKernel {
                info: info(Variant::Main, kernel),
                launch: Box::new(move || {
                    gradops::cuda::conv2d_backprop_filter_into(
                        &st,
                        x.view(),
                        dy.view(),
                        &attrs,
                        dw.view_mut(),
                    )
                }),
            });
        }
        WorkloadOp::Conv2d { .. } => {
            let fshape = s.filter.unwrap_or_default();
            let x = upload_random(s.x, 3)?;
            let filter = upload_random(fshape, 2)?;
            let attrs = w.conv_attrs().f32_precision(f32_precision);
            let mut y = DeviceTensor::<T>::zeros(stream, s.dy, layout)?;
            let g = gradops::ops::conv2d::plan_conv2d(s.x, fshape, layout, &attrs)?;
            let kernel = gradops::cuda::conv_kernel_for::<T>(
                ConvFamily::Forward,
                &g,
                layout,
                attrs.filter_layout,
                f32_precision,
            )?;
            out.push(CudaKernel {
                info: info(Variant::Main, kernel),
                launch: Box::new(move || {
                    gradops::cuda::conv2d_into(
                        &st,
                        x.view(),
                        filter.as_filter(),
                        &attrs,
                        y.view_mut(),
                    )
                }),
            });
        }
        WorkloadOp::MaxPoolGrad { .. } => {
            let attrs = w.pool_attrs();
            let x = Arc::new(upload_random(s.x, 3)?);
            let argmax = gradops::cuda::max_pool(stream, x.view(), &attrs, true)?
                .1
                .ok_or_else(|| Error::Cuda {
                    op: "bench",
                    msg: "max_pool returned no argmax".into(),
                })?;
            let mut dx = DeviceTensor::<T>::zeros(stream, s.x, layout)?;
            let (dy1, x1) = (Arc::clone(&dy), Arc::clone(&x));
            let kernel = |kind| gradops::cuda::max_pool_kernel::<T>(s.x, layout, &attrs, kind);
            out.push(CudaKernel {
                info: info(Variant::Main, kernel(gradops::cuda::PoolKernel::Grad)?),
                launch: Box::new(move || {
                    gradops::cuda::max_pool_grad_into(
                        &st,
                        dy1.view(),
                        x1.view(),
                        None,
                        &attrs,
                        dx.view_mut(),
                    )
                }),
            });
            let st = Arc::clone(stream);
            let mut dx = DeviceTensor::<T>::zeros(stream, s.x, layout)?;
            out.push(CudaKernel {
                info: info(
                    Variant::StoredArgmax,
                    kernel(gradops::cuda::PoolKernel::GradStored)?,
                ),
                launch: Box::new(move || {
                    gradops::cuda::max_pool_grad_with_argmax_into(
                        &st,
                        dy.view(),
                        argmax.view(),
                        &attrs,
                        dx.view_mut(),
                    )
                }),
            });
            // The forward with argmax, into its own preallocated y and argmax.
            let st = Arc::clone(stream);
            let mut y = DeviceTensor::<T>::zeros(stream, s.dy, layout)?;
            let mut am = DeviceTensor::<i64>::zeros(stream, s.dy, layout)?;
            out.push(CudaKernel {
                info: info(
                    Variant::Forward,
                    kernel(gradops::cuda::PoolKernel::Forward)?,
                ),
                launch: Box::new(move || {
                    gradops::cuda::max_pool_into(
                        &st,
                        x.view(),
                        &attrs,
                        y.view_mut(),
                        Some(am.view_mut()),
                    )
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

/// The f32 conv arithmetic a CUDA row ran with, as `bench/peers.py` names PyTorch's
/// (`"tf32"`: TF32 allowed, `"fp32"`: exact), so each row pairs with cuDNN at the same
/// setting; `None` for other types and ops. conv2d_backprop_filter ignores the allowance.
pub fn conv_math(dtype: DType, w: &Workload, p: F32Precision) -> Option<String> {
    let name = match (dtype, &w.op, p) {
        (DType::F32, WorkloadOp::Conv2dBackpropInput { .. }, F32Precision::Tf32) => "tf32",
        (DType::F32, WorkloadOp::Conv2dBackpropInput { .. }, F32Precision::Exact)
        | (DType::F32, WorkloadOp::Conv2dBackpropFilter { .. }, _) => "fp32",
        _ => return None,
    };
    Some(name.into())
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
/// each launch ([`CudaTimer`]), rows as in [`bench_cpu`](super::bench_cpu) (one per [`Workload::variants`], the
/// minimal traffic from [`Workload::traffic`], built by [`make_row`]), set against the card's
/// measured device-to-device copy bandwidth ([`cuda_copy_bandwidth`]).
///
/// [`Error::CudaUnavailable`] (with the reason) when CUDA cannot be used here, which
/// `--device auto` turns into a fallback to [`bench_cpu`](super::bench_cpu); any driver failure later is an
/// [`Error::Cuda`].
pub fn bench_cuda(opts: &BenchOptions) -> Result<BenchReport> {
    let device = cuda_status()?;
    match opts.dtype {
        DType::F16 => bench_cuda_typed::<f16>(opts, &device),
        DType::BF16 => bench_cuda_typed::<bf16>(opts, &device),
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
        let kernels =
            cuda_kernels::<T>(&stream, w, CUDA_BATCH, opts.scale_down, opts.f32_precision)?;
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
            let mut row = make_row(&k.info, &t, limit);
            row.math = conv_math(T::DTYPE, w, opts.f32_precision);
            rows.push(row);
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
    let flags = gradops::cuda::build_info().nvcc_flags;
    if !flags.is_empty() {
        notes.push(format!(
            "kernels built with GRADOPS_NVCC_FLAGS={flags}: a build-time alternative, not the \
             default build"
        ));
    }
    use gradops::cuda::ConvTcTile;
    let tile_name = |t: ConvTcTile| match t {
        ConvTcTile::Wide => "wide (128-pixel tiles on 8 warps of 32 x 32)",
        ConvTcTile::Tall => "tall (128-pixel tiles on 4 warps of 64 x 32)",
        ConvTcTile::Square => "square (128-pixel tiles on 2 warps of 64 x 64)",
        ConvTcTile::Lean => "64-pixel (4 warps of 32 x 32)",
        ConvTcTile::Wgmma => "wgmma (128-pixel tiles on 2 warpgroups of m64n64 wgmma)",
        ConvTcTile::Ws => {
            "warp-specialized wgmma (the wgmma tile's 2 warpgroups fed by a producer \
             warpgroup through mbarriers)"
        }
        ConvTcTile::Halo => {
            "halo (128 padded-row slots on 2 warpgroups of m64n64 wgmma, a tile's source \
             copied once for all its taps, the filter resident)"
        }
        ConvTcTile::Auto => "measured fastest per call (each row names its kernel)",
    };
    // Both GEMMs default to the tile measured fastest per call (each row's kernel says which).
    for (env, op, tile) in [
        (
            gradops::cuda::CONV_TC_TILE_ENV,
            "conv2d_backprop_input",
            gradops::cuda::conv_tc_tile(),
        ),
        (
            gradops::cuda::CONV_TC_FORWARD_TILE_ENV,
            "conv2d",
            gradops::cuda::conv_tc_forward_tile(),
        ),
    ] {
        // A wgmma choice (ws too) moves the op's 16-bit NCHW calls and f32 calls too (the
        // lean wgmma tile).
        let wgmma = matches!(tile, ConvTcTile::Wgmma | ConvTcTile::Ws);
        let others = "f32 (either layout) and f16/bf16 NCHW";
        let halo = tile == ConvTcTile::Halo;
        if (wgmma || halo) && !gradops::cuda::conv_tc_wgmma_available() {
            notes.push(format!(
                "{env}={}: this device or build has no compute_90a image (compute capability \
                 9.0 only): f16/bf16 NHWC {op} ran the {}, {others} the 64-pixel \
                 mma.sync one",
                match tile {
                    ConvTcTile::Ws => "ws",
                    ConvTcTile::Halo => "halo",
                    _ => "wgmma",
                },
                tile_name(ConvTcTile::Tall),
            ));
        } else if halo {
            notes.push(format!(
                "{env}=halo: f16/bf16 {op} and f32 under TF32 (NHWC and NCHW) ran the {} \
                 kernel where it serves the call (the source read at unit strides; the filter \
                 and a halo buffer within the shared memory; at most {} halo buffers, {}; \
                 NCHW and TF32 one), the default ({}) elsewhere",
                tile_name(tile),
                gradops::cuda::conv_tc_halo_buffers(),
                gradops::cuda::CONV_TC_HALO_BUFFERS_ENV,
                tile_name(ConvTcTile::Auto),
            ));
        } else if tile != ConvTcTile::Auto {
            let stages = if tile == ConvTcTile::Ws {
                format!(
                    " with {} stages ({})",
                    gradops::cuda::conv_tc_ws_stages(),
                    gradops::cuda::CONV_TC_WS_STAGES_ENV
                )
            } else {
                String::new()
            };
            notes.push(format!(
                "{env}: f16/bf16 NHWC {op} ran the {} lean kernel{stages}, not the default ({}){}",
                tile_name(tile),
                tile_name(ConvTcTile::Auto),
                if wgmma {
                    let f32_ws = if tile == ConvTcTile::Ws {
                        " (but f32, either layout: the warp-specialized tile, the producer \
                         splitting its stages into tf32 parts)"
                    } else {
                        ""
                    };
                    format!(
                        "; {others} the lean wgmma tile (64-pixel tiles on one warpgroup of \
                         m64n64 wgmma){f32_ws}, not the 64-pixel mma.sync one"
                    )
                } else {
                    String::new()
                }
            ));
        }
    }
    let env = gradops::cuda::CONV_TC_FILTER_TILE_ENV;
    match gradops::cuda::conv_tc_filter_tile() {
        gradops::cuda::ConvTcFilterTile::Auto => {}
        gradops::cuda::ConvTcFilterTile::Mma => notes.push(format!(
            "{env}=mma: NCHW conv2d_backprop_filter on the tensor cores gathered its operands \
             by 16-byte runs for every call (the default: only 16-bit calls at unit strides)"
        )),
        gradops::cuda::ConvTcFilterTile::Wgmma => {
            notes.push(if gradops::cuda::conv_tc_wgmma_available() {
                format!(
                    "{env}=wgmma: f16/bf16 NHWC conv2d_backprop_filter (channels per group whole \
                     16-byte chunks) ran its partial sums on one warpgroup of m64n64 wgmma \
                     (conv2d_backprop_filter_partial_tc_nhwc_wgmma), not the mma.sync kernel"
                )
            } else {
                format!(
                    "{env}=wgmma: this device or build has no compute_90a image (compute \
                     capability 9.0 only): conv2d_backprop_filter ran the default kernels"
                )
            })
        }
        gradops::cuda::ConvTcFilterTile::Elementwise => notes.push(format!(
            "{env}=elementwise: NCHW conv2d_backprop_filter on the tensor cores gathered its \
             operands element by element into one shared stage \
             (conv2d_backprop_filter_partial_tc_elementwise) for every call (the default: for \
             f32 and for 16-bit calls at other strides than 1)"
        )),
    }
    match gradops::cuda::conv_tc_grid() {
        gradops::cuda::ConvTcGrid::Auto => {}
        g => notes.push(format!(
            "{}: the lean tensor-core conv kernels (_tc_vec) ran {} for every call",
            gradops::cuda::CONV_TC_GRID_ENV,
            if g == gradops::cuda::ConvTcGrid::Wave {
                "one wave of resident blocks, several pixel tiles each"
            } else {
                "one block per pixel tile"
            }
        )),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::*;

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
            f32_precision: BenchF32Precision::Exact,
            serve: false,
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

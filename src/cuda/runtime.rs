//! Device probe (once, cached), per-context lazy module loading and the launch helper.
//!
//! Each context picks its PTX image architecture once ([`super::images::arch_for`] of its
//! device's compute capability) and loads each module's image of that architecture lazily.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;

use super::images::arch_for;
use super::ptx::{build_info, image, sm90a_image};
use crate::{Error, Result};

/// What the probe found.
#[derive(Debug, Clone)]
pub struct DeviceInfo {
    /// CUDA devices visible.
    pub device_count: i32,
    /// Device 0's name.
    pub name: String,
    /// Device 0's compute capability.
    pub compute_capability: (i32, i32),
    /// Device 0's memory in bytes.
    pub total_mem: usize,
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (compute capability {}.{}, {:.1} GiB; {} device(s) visible, using device 0)",
            self.name,
            self.compute_capability.0,
            self.compute_capability.1,
            self.total_mem as f64 / (1u64 << 30) as f64,
            self.device_count
        )
    }
}

struct Probed {
    info: DeviceInfo,
    ctx: Arc<CudaContext>,
}

/// How this build reaches the CUDA driver, as cudarc was configured (README, "candle").
///
/// gradops asks cudarc for `fallback-dynamic-loading`: libcuda is loaded at run time, so a
/// build without CUDA starts and the probe reports why CUDA is unusable. When candle's `cuda`
/// feature is in the build (gradops' `candle-cuda` feature), cudarc links libcuda and the CUDA
/// libraries instead: such a binary does not start without them, and once it runs the
/// driver is there.
pub const CUDA_LINKING: &str = if cfg!(feature = "candle-cuda") {
    "dynamic-linking, from candle's `cuda` feature: libcuda is linked, not loaded"
} else {
    "fallback-dynamic-loading: libcuda is loaded when CUDA is first used"
};

/// Whether libcuda can be opened, under the names cudarc looks for on this platform.
///
/// gradops opens it itself rather than through cudarc's `is_culib_present`, which exists only
/// when cudarc loads libraries at run time (not under candle's `dynamic-linking`). Every
/// other driver call in cudarc panics when the library is absent, so this runs first.
fn driver_library_present() -> std::result::Result<(), String> {
    let names: &[&str] = if cfg!(windows) {
        &["nvcuda.dll"]
    } else {
        &["libcuda.so", "libcuda.so.1"]
    };
    for name in names {
        // SAFETY: opening libcuda runs its initialisers, which have no preconditions; the
        // handle is closed at once and no symbol is taken from it here.
        if unsafe { libloading::Library::new(*name) }.is_ok() {
            return Ok(());
        }
    }
    Err(names.join(", "))
}

static PROBE: OnceLock<std::result::Result<Probed, String>> = OnceLock::new();

fn probe_inner() -> std::result::Result<Probed, String> {
    if let Err(tried) = driver_library_present() {
        return Err(format!(
            "libcuda (the NVIDIA driver) not found (tried {tried}; this build: {CUDA_LINKING})"
        ));
    }
    let count = CudaContext::device_count().map_err(|e| format!("cuDeviceGetCount failed: {e}"))?;
    if count < 1 {
        return Err("the driver reports no CUDA device".into());
    }
    let ctx =
        CudaContext::new(0).map_err(|e| format!("cannot create a context on device 0: {e}"))?;
    let info = DeviceInfo {
        device_count: count,
        name: ctx
            .name()
            .unwrap_or_else(|e| format!("<name unavailable: {e}>")),
        compute_capability: ctx.compute_capability().unwrap_or((0, 0)),
        total_mem: ctx.total_mem().unwrap_or(0),
    };
    Ok(Probed { info, ctx })
}

fn probed() -> Result<&'static Probed> {
    PROBE
        .get_or_init(probe_inner)
        .as_ref()
        .map_err(|reason| Error::CudaUnavailable {
            reason: reason.clone(),
        })
}

/// Whether CUDA is usable: kernels compiled in, libcuda present, a device, a context, and a
/// PTX image the device can run (one not newer than its compute capability). Probed once
/// per process; the `Err` is `CudaUnavailable` with a human reason.
pub fn probe() -> Result<DeviceInfo> {
    let b = build_info();
    if !b.kernels_compiled {
        return Err(Error::CudaUnavailable {
            reason: format!("this build has no CUDA kernels ({})", b.reason),
        });
    }
    let info = &probed()?.info;
    arch_for(info.compute_capability).map_err(|e| match e {
        Error::CudaUnavailable { reason } => Error::CudaUnavailable {
            reason: format!("{}: {reason}", info.name),
        },
        e => e,
    })?;
    Ok(info.clone())
}

/// The process-wide context on device 0 (created by the probe).
pub fn context() -> Result<Arc<CudaContext>> {
    probe()?;
    Ok(probed()?.ctx.clone())
}

/// A process-wide stream on device 0 for callers without one of their own (the CLI).
pub fn stream() -> Result<Arc<CudaStream>> {
    static STREAM: OnceLock<std::result::Result<Arc<CudaStream>, String>> = OnceLock::new();
    let ctx = context()?;
    STREAM
        .get_or_init(|| ctx.new_stream().map_err(|e| e.to_string()))
        .clone()
        .map_err(|msg| Error::Cuda {
            op: "new_stream",
            msg,
        })
}

/// Modules and functions loaded into one context, each loaded lazily once.
#[derive(Default)]
struct ContextKernels {
    /// Architecture of the images this context loads, chosen on first use, with the
    /// context it was chosen for (held, so the handle cannot be recycled under it).
    arch: Option<(u32, Arc<CudaContext>)>,
    modules: HashMap<&'static str, Arc<CudaModule>>,
    /// The compute_90a images' modules (compute capability 9.0 only), by module name.
    modules_sm90a: HashMap<&'static str, Arc<CudaModule>>,
    /// Whether the context's device is compute capability 9.0, asked on first use.
    sm90: Option<bool>,
    functions: HashMap<String, CudaFunction>,
    /// Per kernel (its `CUfunction` handle, held alive by `modules`), block size and dynamic
    /// shared memory, the blocks the device runs at once ([`resident_blocks`]).
    resident: HashMap<(usize, u32, u32), u64>,
}

// Keyed by the CUcontext handle; an entry holds an Arc of its context (with its chosen
// architecture, and in every cached module), so a handle cannot be recycled while its entry
// exists.
static KERNELS: OnceLock<Mutex<HashMap<usize, ContextKernels>>> = OnceLock::new();

/// Runs `f` on the stream's context's entry of [`KERNELS`] (created empty on first use),
/// under the lock.
fn with_context_kernels<R>(
    stream: &Arc<CudaStream>,
    f: impl FnOnce(&Arc<CudaContext>, &mut ContextKernels) -> R,
) -> R {
    let ctx = stream.context();
    let mut all = KERNELS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    f(ctx, all.entry(ctx.cu_ctx() as usize).or_default())
}

/// The context's image architecture, chosen on its first use and kept.
fn context_arch(
    entry: &mut ContextKernels,
    ctx: &Arc<CudaContext>,
    op: &'static str,
) -> Result<u32> {
    if let Some((a, _)) = &entry.arch {
        return Ok(*a);
    }
    let cc = ctx
        .compute_capability()
        .map_err(|e| cuda_err(op, "querying the compute capability", e))?;
    let a = arch_for(cc)?;
    entry.arch = Some((a, ctx.clone()));
    Ok(a)
}

/// The architecture of the images the stream's context loads (chosen once per context, as
/// [`function`] does), so an op can pick a kernel that only some images hold.
pub(crate) fn stream_arch(stream: &Arc<CudaStream>, op: &'static str) -> Result<u32> {
    with_context_kernels(stream, |ctx, entry| context_arch(entry, ctx, op))
}

/// `kernel` (e.g. `resize_gather_f32`) from `module` (file stem), loaded into the
/// stream's context on first use, from the module's image for the context's device (the
/// highest architecture not newer than its compute capability, chosen once per context).
pub(crate) fn function(
    stream: &Arc<CudaStream>,
    op: &'static str,
    module: &'static str,
    kernel: &str,
) -> Result<CudaFunction> {
    let b = build_info();
    if !b.kernels_compiled {
        return Err(Error::CudaUnavailable {
            reason: format!("this build has no CUDA kernels ({})", b.reason),
        });
    }
    with_context_kernels(stream, |ctx, entry| {
        context_function(ctx, entry, (op, module, kernel), false)
    })
}

/// Whether the stream's device runs `module`'s compute_90a image: compute capability 9.0
/// (an H100 or H200; the image's `wgmma` has no JIT forward to newer devices) and a build
/// that has the image.
pub(crate) fn stream_runs_sm90a(
    stream: &Arc<CudaStream>,
    op: &'static str,
    module: &str,
) -> Result<bool> {
    if sm90a_image(module).is_none() {
        return Ok(false);
    }
    with_context_kernels(stream, |ctx, entry| {
        if let Some(b) = entry.sm90 {
            return Ok(b);
        }
        let cc = ctx
            .compute_capability()
            .map_err(|e| cuda_err(op, "querying the compute capability", e))?;
        entry.sm90 = Some(cc == (9, 0));
        Ok(cc == (9, 0))
    })
}

/// `kernel` from `module`'s compute_90a image, loaded into the stream's context on first
/// use. Only where [`stream_runs_sm90a`] holds (else `CudaUnavailable`).
pub(crate) fn function_sm90a(
    stream: &Arc<CudaStream>,
    op: &'static str,
    module: &'static str,
    kernel: &str,
) -> Result<CudaFunction> {
    let unavailable = |why: &str| Error::CudaUnavailable {
        reason: format!("kernel {kernel} needs module {module}'s compute_90a image: {why}"),
    };
    if sm90a_image(module).is_none() {
        return Err(unavailable("not in this build"));
    }
    if !stream_runs_sm90a(stream, op, module)? {
        return Err(unavailable("the device is not compute capability 9.0"));
    }
    with_context_kernels(stream, |ctx, entry| {
        context_function(ctx, entry, (op, module, kernel), true)
    })
}

/// [`function`] (`sm90a` false) or [`function_sm90a`] (true) on the context's entry, under
/// the lock.
fn context_function(
    ctx: &Arc<CudaContext>,
    entry: &mut ContextKernels,
    (op, module, kernel): (&'static str, &'static str, &str),
    sm90a: bool,
) -> Result<CudaFunction> {
    if let Some(f) = entry.functions.get(kernel) {
        return Ok(f.clone());
    }
    let loaded = if sm90a {
        entry.modules_sm90a.get(module)
    } else {
        entry.modules.get(module)
    };
    let m = match loaded.cloned() {
        Some(m) => m,
        None => {
            let missing = |image: String| Error::CudaUnavailable {
                reason: format!("this build has no PTX module {module:?} for {image}"),
            };
            let img = if sm90a {
                sm90a_image(module).ok_or_else(|| missing("compute_90a".into()))?
            } else {
                let arch = context_arch(entry, ctx, op)?;
                image(module, arch).ok_or_else(|| missing(format!("compute_{arch}")))?
            };
            let m = ctx
                .load_module(Ptx::from_src(img.ptx))
                .map_err(|e| Error::Cuda {
                    op,
                    msg: format!("loading PTX module {img}: {e}"),
                })?;
            let modules = if sm90a {
                &mut entry.modules_sm90a
            } else {
                &mut entry.modules
            };
            modules.insert(module, m.clone());
            m
        }
    };
    let f = m.load_function(kernel).map_err(|e| Error::Cuda {
        op,
        msg: format!("kernel {kernel} not found in module {module}: {e}"),
    })?;
    // A kernel whose stages live in dynamic shared memory past 48 KB may be launched with
    // it only once the function's limit is raised (a cap: the launch's bytes still decide
    // the blocks per SM).
    let smem = super::launch::max_dynamic_smem_bytes(kernel);
    if smem > 0 {
        f.set_attribute(
            cudarc::driver::sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            i32::try_from(smem).unwrap_or(i32::MAX),
        )
        .map_err(|e| Error::Cuda {
            op,
            msg: format!("kernel {kernel}: allowing {smem} bytes of dynamic shared memory: {e}"),
        })?;
    }
    entry.functions.insert(kernel.to_string(), f.clone());
    Ok(f)
}

/// Blocks of kernel `f` (`block` threads and `smem` bytes of dynamic shared memory each)
/// that the stream's device runs at once: its SMs times the kernel's blocks per SM (the
/// driver's occupancy calculator), at least 1. Asked once per context, kernel, block size
/// and `smem`.
pub(crate) fn resident_blocks(
    stream: &Arc<CudaStream>,
    op: &'static str,
    (f, block, smem): (&CudaFunction, u32, u32),
) -> Result<u64> {
    with_context_kernels(stream, |ctx, entry| {
        let key = (f.cu_function() as usize, block, smem);
        if let Some(&n) = entry.resident.get(&key) {
            return Ok(n);
        }
        let n = device_resident_blocks(ctx, op, (f, block, smem))?;
        entry.resident.insert(key, n);
        Ok(n)
    })
}

/// [`resident_blocks`] asked of the driver.
fn device_resident_blocks(
    ctx: &Arc<CudaContext>,
    op: &'static str,
    (f, block, smem): (&CudaFunction, u32, u32),
) -> Result<u64> {
    let sms = ctx
        .attribute(
            cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        )
        .map_err(|e| cuda_err(op, "querying the SM count", e))?;
    let per_sm = f
        .occupancy_max_active_blocks_per_multiprocessor(block, smem as usize, None)
        .map_err(|e| cuda_err(op, "querying the blocks per SM", e))?;
    Ok((u64::try_from(sms).unwrap_or(0) * u64::from(per_sm)).max(1))
}

/// A driver error as the crate's error.
pub(crate) fn cuda_err(op: &'static str, what: &str, e: impl std::fmt::Display) -> Error {
    Error::Cuda {
        op,
        msg: format!("{what}: {e}"),
    }
}

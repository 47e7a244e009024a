//! Which PTX image (virtual architecture) and which kernel variant each op uses on a device.
//!
//! build.rs compiles every kernel file once per architecture of `GRADOPS_CUDA_ARCH` (default
//! `75,80,90`). On a device of compute capability `major.minor` the runtime loads, per
//! context and once, the image of the highest architecture `<= major*10 + minor`
//! ([`pick_arch`]): 7.5 gets compute_75, 8.0/8.6/8.9 compute_80, 9.0 and newer (10.0,
//! 12.0, through the driver's JIT) compute_90. A device older than every image (sm_70 and
//! older with the default set) is `CudaUnavailable`.

use super::launch::ConvTcGrid;
use super::ptx::{build_info, image, PtxImage};
use crate::{Error, F32Precision, Result};

/// Every op of the CUDA API (the ops of `gradops run` and `max_pool_grad_with_argmax`) with
/// its module (kernel file) and kernel family (the kernel name without its
/// `_f16`/`_bf16`/`_f32`/`_f64` suffix), as `src/cuda/ops.rs` launches them.
pub const OP_KERNELS: &[(&str, &str, &str)] = &[
    ("resize_grad", "resize", "resize_tile"),
    ("resize_bilinear_grad", "resize", "resize_tile"),
    ("resize_nearest_neighbor_grad", "resize", "resize_tile"),
    ("conv2d_backprop_input", "conv", "conv2d_backprop_input"),
    (
        "conv2d_backprop_filter",
        "conv",
        "conv2d_backprop_filter_partial",
    ),
    ("max_pool_grad", "pool", "max_pool_tile_grad"),
    (
        "max_pool_grad_with_argmax",
        "pool",
        "max_pool_tile_grad_argmax",
    ),
    ("resize", "resize", "resize_tile"),
    ("resize_bilinear", "resize", "resize_tile"),
    ("resize_nearest_neighbor", "resize", "resize_tile"),
    ("conv2d", "conv", "conv2d_forward"),
    ("max_pool", "pool", "max_pool_tile_forward"),
];

/// The virtual architecture of the image to load on a device of compute capability
/// `compute_capability` (`(8, 6)`), from `archs` (the compiled ones, e.g. `[75, 80, 90]`):
/// the highest one `<= major*10 + minor`. Pure; no GPU needed.
///
/// # Errors
/// [`Error::CudaUnavailable`] naming the capability and the compiled architectures when
/// every image is newer than the device (or `archs` is empty).
pub fn pick_arch(compute_capability: (i32, i32), archs: &[u32]) -> Result<u32> {
    let (major, minor) = compute_capability;
    let cc = i64::from(major) * 10 + i64::from(minor);
    archs
        .iter()
        .copied()
        .filter(|&a| i64::from(a) <= cc)
        .max()
        .ok_or_else(|| {
            let list: Vec<String> = archs.iter().map(|a| format!("compute_{a}")).collect();
            Error::CudaUnavailable {
                reason: if archs.is_empty() {
                    "this build has no PTX images".to_string()
                } else {
                    format!(
                        "the device's compute capability {major}.{minor} is older than every \
                         PTX image in this build ({}); rebuild with GRADOPS_CUDA_ARCH naming an \
                         older architecture (nvcc 13.0 supports compute_75 and newer)",
                        list.join(", ")
                    )
                },
            }
        })
}

/// [`pick_arch`] over this build's images; `CudaUnavailable` also when the build has no
/// kernels.
pub fn arch_for(compute_capability: (i32, i32)) -> Result<u32> {
    let b = build_info();
    if !b.kernels_compiled {
        return Err(Error::CudaUnavailable {
            reason: format!("this build has no CUDA kernels ({})", b.reason),
        });
    }
    pick_arch(compute_capability, b.archs)
}

/// The image of `module` (`resize`, `conv`, `pool`) that a device of compute capability
/// `compute_capability` loads. No GPU needed.
pub fn image_for(module: &str, compute_capability: (i32, i32)) -> Result<PtxImage> {
    let arch = arch_for(compute_capability)?;
    image(module, arch).ok_or_else(|| Error::CudaUnavailable {
        reason: format!("this build has no PTX module {module:?} for compute_{arch}"),
    })
}

/// The image of `module` that the runtime loads on this process's device (device 0, as
/// [`super::probe`] finds it).
///
/// # Errors
/// `CudaUnavailable` when CUDA is unusable here (no kernels, no driver or device, a device
/// older than every image) or `module` is not a kernel module.
pub fn selected_image(module: &str) -> Result<PtxImage> {
    image_for(module, super::probe()?.compute_capability)
}

/// What the conv families' tensor-core variant is (for `gradops info`).
pub const CONV_TENSOR_CORE_NOTE: &str = "tensor core: on compute_80+ images, conv2d and \
conv2d_backprop_input run conv2d_forward_tc_* and conv2d_backprop_input_tc_* (implicit GEMM \
on mma.sync with ldmatrix and a 3-stage cp.async pipeline: f16/bf16 on m16n8k16 with f32 \
accumulation, f32 as 3xTF32 on m16n8k8, f64 on m8n8k4; calls with an HWIO filter and \
channel counts of whole 16-byte chunks and 64-byte stages run the lean \
conv2d_forward_tc_vec[_nchw]_* and conv2d_backprop_input_tc_vec[_nchw]_*, whose main loop \
is copies (NCHW: coalesced loads through registers), mma and a 32-bit cursor), and \
conv2d_backprop_filter runs \
conv2d_backprop_filter_partial_tc_* (NCHW) and conv2d_backprop_filter_partial_tc_nhwc_* (the \
split-K partial sums on mma.sync; NHWC through a cp.async pipeline with ldmatrix.trans); f32 and f64 run there by default (faster than the simt FFMA kernels in \
every f32/f64 conv row of an H100 benchmark); GRADOPS_CUDA_CONV_TC=simt keeps f32 and f64 on the FFMA \
kernels (then \"tensor core f16/bf16 + simt\"; unset, all or any other value: the default); \
f32 calls with Conv2dAttrs::f32_precision = Tf32 run the tensor-core kernels with plain TF32 \
(one m16n8k8 product per term) either way";

/// Why a call of a tiled family may run another kernel (for `gradops info`).
pub const TILED_FALLBACK_NOTE: &str = "tiled: resize plans whose tables are both boxes (nearest \
gradients by integer factors) run resize_box_* (no table reads, 16-byte accesses where \
aligned); other plans run resize_tile_*, which stages a tile's rows in shared memory, or \
resize_gather_* for plans whose tile rows do not fit (a very large downsampling ratio) or \
planes past 32-bit indexing; max_pool_tile_* stage x, argmax and dy \
per tile (windows of at most 3x3 run the unrolled max_pool_tile_k3_* twins; the forward \
with such windows runs max_pool_direct_k3_forward_*, one thread per output) and run the \
generic max_pool_{forward,grad,grad_argmax}_* for windows too large for a one-cell tile";

/// The oldest virtual architecture whose images hold the tensor-core conv kernels
/// (`conv2d_backprop_input_tc_*`, `conv2d_forward_tc_*` and their lean `_tc_vec_` and
/// `_tc_vec_nchw_` twins for every element type: mma.sync,
/// ldmatrix and cp.async need sm_80).
pub const CONV_TENSOR_CORE_ARCH: u32 = 80;

/// Environment variable choosing the kernels of f32 and f64 conv on compute_80+ images:
/// unset or `all` (the default) runs them on the tensor cores (f32 as 3xTF32, f64 on DMMA);
/// `simt` (case-insensitive, surrounding whitespace ignored) keeps them on the FFMA (simt)
/// kernels. Any other value is treated as the default (`all`). f16 and bf16 run on the
/// tensor cores on compute_80+ images whatever it says. Read once per process. The tensor
/// cores are the default because they were faster than FFMA in every f32/f64 row of
/// `gradops bench --device cuda` on an H100 (batch 32, NCHW and NHWC, 2026-11-26).
pub const CONV_TENSOR_CORE_ENV: &str = "GRADOPS_CUDA_CONV_TC";

/// Whether a value of [`CONV_TENSOR_CORE_ENV`] (`None`: unset) puts f32/f64 conv on the
/// tensor cores: everything but `simt`.
fn conv_tensor_core_env_says_all(value: Option<&str>) -> bool {
    !value.is_some_and(|v| v.trim().eq_ignore_ascii_case("simt"))
}

/// Whether f32 and f64 conv run on the tensor cores (compute_80+ images) in this process:
/// true unless [`CONV_TENSOR_CORE_ENV`] is `simt` (read on first use).
pub fn conv_tensor_cores_for_all_dtypes() -> bool {
    static ALL: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ALL.get_or_init(|| {
        conv_tensor_core_env_says_all(std::env::var(CONV_TENSOR_CORE_ENV).ok().as_deref())
    })
}

/// Environment variable for the block tile of `conv2d_backprop_input` calls on the lean
/// tensor-core kernels ([`ConvTcTile`]); values case-insensitive, surrounding whitespace
/// ignored. Unset, `auto` or any other value: [`ConvTcTile::Auto`], the tile measured fastest
/// for the call on an H200 (2026-12-04, BENCHMARKS.md). `lean`, `wide`, `tall` or `square`
/// picks that tile for 16-bit NHWC calls (f32 and 16-bit NCHW calls: the lean tile). `wgmma`
/// picks the wgmma tile of every call it serves (16-bit NHWC: the two-warpgroup one; f32 of
/// either layout, exact 3xTF32 and the TF32 opt-in, and 16-bit NCHW: the lean one-warpgroup
/// one); it runs on compute capability 9.0 only (the compute_90a image), elsewhere its calls
/// run the tall tile (16-bit NHWC) or the lean one. `ws`: the warp-specialized wgmma tile for
/// 16-bit NHWC calls and f32 ones of either layout ([`ConvTcTile::Ws`]), otherwise as
/// `wgmma`. `halo`: the halo tile for the 16-bit calls it serves and the f32 ones under the
/// TF32 opt-in, NHWC and NCHW ([`ConvTcTile::Halo`]), otherwise as unset. Every tile gives
/// the same results bit for bit (the emulator: the same products summed in the same order).
/// Read once per process.
pub const CONV_TC_TILE_ENV: &str = "GRADOPS_CUDA_CONV_TC_TILE";

/// The block tile of `conv2d_backprop_input` and `conv2d` calls on the lean tensor-core
/// kernels ([`CONV_TC_TILE_ENV`], [`CONV_TC_FORWARD_TILE_ENV`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvTcTile {
    /// The default: per call, the tile measured fastest on an H200 (2026-12-04, same run,
    /// BENCHMARKS.md). On a compute capability 9.0 device (the compute_90a image) the wgmma
    /// tile for f32 calls of either layout (but the lean tile for NHWC under the TF32 opt-in),
    /// for 16-bit NCHW calls and for 16-bit NHWC calls at stride 1; the tall tile for 16-bit
    /// NHWC calls at other strides. Elsewhere the tall tile (16-bit NHWC) or the lean one.
    Auto,
    /// `conv2d_backprop_input_tc_vec_wide_*`: 128-pixel tiles on 8 warps of 32 x 32; half
    /// the filter traffic per pixel of the lean tile, 1-4% faster than it on an H200
    /// (BENCHMARKS.md).
    Wide,
    /// `conv2d_backprop_input_tc_vec_*`: 64-pixel tiles on 4 warps of 32 x 32.
    Lean,
    /// `conv2d_backprop_input_tc_vec_tall_*` (the default before 2026-12-04, and
    /// [`ConvTcTile::Auto`]'s for 16-bit NHWC calls it does not give the wgmma tile): 128-pixel tiles on 4 warps of
    /// 64 x 32 (half the fragment loads, barriers and cursor steps per mma of the wide tile,
    /// three blocks per SM). Since its copies read whole sectors (two threads a pixel row):
    /// within 2% of the wide tile on W4, 10-12% faster on W5 (three H200 runs, 2026-11-27,
    /// BENCHMARKS.md). The forward's too ([`CONV_TC_FORWARD_TILE_ENV`]).
    Tall,
    /// `conv2d_backprop_input_tc_vec_square_*`: 128-pixel tiles on 2 warps of 64 x 64 (each
    /// A fragment read from shared memory by one warp, not two: 14% fewer instructions than
    /// the tall tile), four blocks per SM (8 warps: too few to hide the latencies; W4 10%
    /// and W5 8% slower than the tall tile on an H200, BENCHMARKS.md). Kept for comparison.
    Square,
    /// `conv2d_backprop_input_tc_vec_wgmma_*` (compute_90a image, compute capability 9.0):
    /// the wide tile's 128 pixels on two warpgroups, each one `wgmma.mma_async` m64n64k16 per
    /// 16 channels of the reduction, operands read by the tensor cores straight from shared
    /// memory (64-byte swizzle): no fragment loads in the main loop, 32 accumulators a
    /// thread; and its forward twin `conv2d_forward_tc_vec_wgmma_*` (the HWIO filter staged
    /// N-major, read with wgmma's imm-trans-b). For f32 backprop_input the f32 wgmma tile,
    /// `conv2d_backprop_input_tc_vec_wgmma_f32` (NHWC; NCHW:
    /// `conv2d_backprop_input_tc_vec_nchw_wgmma_f32`): the lean tile's 64 pixels on one warpgroup,
    /// `wgmma.mma_async` m64n64k8 tf32, each stage split in place into tf32 parts (big in the
    /// stage, small in a split buffer) by the threads that copied it, then small*big,
    /// big*small, big*big per 8 channels (3xTF32; plain TF32 only big*big), and under
    /// [`CONV_TC_FORWARD_TILE_ENV`] the f32 forward's `conv2d_forward_tc_vec_wgmma_f32` and
    /// `conv2d_forward_tc_vec_nchw_wgmma_f32` (the HWIO filter gathered through registers and
    /// stored K-major, tf32 wgmma having no transposed B); for 16-bit NCHW
    /// backprop_input the same one-warpgroup tile, `conv2d_backprop_input_tc_vec_nchw_wgmma_*`
    /// (m64n64k16; and the forward's `conv2d_forward_tc_vec_nchw_wgmma_*` under
    /// [`CONV_TC_FORWARD_TILE_ENV`]). Checked in the emulator and, on an H200 (2026-12-04),
    /// by the GPU tests and compute-sanitizer; [`ConvTcTile::Auto`] picks it where it was
    /// faster there.
    Wgmma,
    /// `conv2d_backprop_input_tc_vec_ws_*` and `conv2d_forward_tc_vec_ws_*` (compute_90a
    /// image, compute capability 9.0; 16-bit NHWC calls, and f32 calls of both ops and
    /// layouts on `conv2d_{backprop_input,forward}_tc_vec{,_nchw}_ws_f32`, exact 3xTF32, or
    /// `conv2d_{backprop_input,forward}_tc_vec{,_nchw}_ws_tf32_f32` under the TF32 opt-in,
    /// whose producer splits the stages it copied into tf32 parts (the forward's N-major
    /// filter, and NCHW's source from its channel planes, copied element by element to
    /// K-major places); 16-bit NCHW calls as [`ConvTcTile::Wgmma`]):
    /// the wgmma tile's block tile and arithmetic, warp-specialized: two consumer warpgroups
    /// issue only mbarrier waits, the wgmma and their releases, a producer warpgroup does
    /// every copy, up to [`conv_tc_ws_stages`] stages ahead (in dynamic shared memory,
    /// [`CONV_TC_WS_STAGES_ENV`]), with no block barrier in the main loop or the epilogue
    /// (the consumers store from registers while the producer copies the next tile; two
    /// blocks of 384 threads per SM). Checked in the emulator; not yet run on a
    /// GPU, so [`ConvTcTile::Auto`] never picks it.
    Ws,
    /// `conv2d_backprop_input_tc_vec_halo_*` and `conv2d_forward_tc_vec_halo_*` (NHWC;
    /// `..._tc_vec_nchw_halo_*` for NCHW; compute_90a image, compute capability 9.0; 16-bit
    /// calls, and f32 calls under the TF32 opt-in (`..._halo_tf32_f32`), whose source is
    /// read at unit strides:
    /// every backprop_input call, forward calls at stride 1; where a call's filter and halo
    /// buffers fit the shared memory, [`launch::conv_tc_halo_smem_bytes`]): the wgmma tile's
    /// products on tiles of 128 consecutive slots of the padded rows of a phase, each tile's
    /// source copied once per channel (not once per tap) into a halo buffer that every tap's
    /// wgmma reads from its own row (mode-0 descriptors), the filter resident in shared
    /// memory for all the tiles of a (phase, group, channel tile), the next tile's halo
    /// copied while a tile multiplies (or one buffer, [`CONV_TC_HALO_BUFFERS_ENV`]; NCHW,
    /// whose copies go through registers, 8 loads a slot's 8 channel planes, always one, two
    /// blocks an SM; TF32, whose copies round each value to tf32 in registers, one, one
    /// block an SM at W4's 206 KB, a tile's first copies loaded while the tile before it
    /// multiplies). W4 NHWC: 8 copies a thread a tile where the wgmma tile issues 54, and 2
    /// block barriers a tile where it has 36. The same products in the same
    /// order: the same bits. Other calls as [`ConvTcTile::Auto`]. Checked in the emulator;
    /// not yet run on a GPU, so [`ConvTcTile::Auto`] never picks it.
    ///
    /// [`launch::conv_tc_halo_smem_bytes`]: super::launch::conv_tc_halo_smem_bytes
    Halo,
}

impl ConvTcTile {
    /// Whether calls under this tile may run a wgmma kernel (on a compute_90a device).
    pub fn may_be_wgmma(self) -> bool {
        matches!(
            self,
            ConvTcTile::Auto | ConvTcTile::Wgmma | ConvTcTile::Ws | ConvTcTile::Halo
        )
    }
}

/// The backprop_input tile ([`CONV_TC_TILE_ENV`], read on first use).
pub fn conv_tc_tile() -> ConvTcTile {
    static T: std::sync::OnceLock<ConvTcTile> = std::sync::OnceLock::new();
    *T.get_or_init(|| conv_tc_tile_from_env(std::env::var(CONV_TC_TILE_ENV).ok().as_deref()))
}

/// Whether this process's device (device 0) runs the wgmma conv tile
/// ([`ConvTcTile::Wgmma`]): compute capability 9.0 and a build with the compute_90a image.
/// False where CUDA is unusable.
pub fn conv_tc_wgmma_available() -> bool {
    super::ptx::sm90a_image("conv").is_some()
        && super::probe().is_ok_and(|d| d.compute_capability == (9, 0))
}

/// Environment variable for the block tile of `conv2d` (forward) calls on the lean
/// tensor-core kernels, read as [`CONV_TC_TILE_ENV`] (unset: [`ConvTcTile::Auto`]): `lean`
/// (`conv2d_forward_tc_vec_*`, 64-pixel tiles), `tall` (`conv2d_forward_tc_vec_tall_*`: on
/// an H200 W4f 5% and W5f 22% less time than the lean tile, BENCHMARKS.md), `square`
/// (`conv2d_forward_tc_vec_square_*`) or `wgmma` (`conv2d_forward_tc_vec_wgmma_*`, the filter
/// read N-major by the tensor cores; f32 and 16-bit NCHW calls: the lean wgmma tile,
/// `conv2d_forward_tc_vec{,_nchw}_wgmma_*`; compute capability 9.0 only, as
/// [`ConvTcTile::Wgmma`]), `ws` (`conv2d_forward_tc_vec{,_nchw}_ws_*`, 16-bit NHWC and f32
/// calls, [`ConvTcTile::Ws`]), `halo` (`conv2d_forward_tc_vec{,_nchw}_halo_*`, 16-bit calls
/// and f32 under the TF32 opt-in at stride 1, [`ConvTcTile::Halo`]); the forward has no wide
/// tile (`wide` reads as `tall`).
/// Every tile gives the same results bit for bit (the emulator). Read once per process.
pub const CONV_TC_FORWARD_TILE_ENV: &str = "GRADOPS_CUDA_CONV_TC_FORWARD_TILE";

/// The 16-bit NHWC forward's tile ([`CONV_TC_FORWARD_TILE_ENV`], read on first use).
pub fn conv_tc_forward_tile() -> ConvTcTile {
    static T: std::sync::OnceLock<ConvTcTile> = std::sync::OnceLock::new();
    *T.get_or_init(|| {
        conv_tc_forward_tile_from_env(std::env::var(CONV_TC_FORWARD_TILE_ENV).ok().as_deref())
    })
}

/// [`CONV_TC_FORWARD_TILE_ENV`]'s reading (the forward has no wide twin).
fn conv_tc_forward_tile_from_env(v: Option<&str>) -> ConvTcTile {
    conv_tc_tile_reading(v, true)
}

/// [`CONV_TC_TILE_ENV`]'s reading.
fn conv_tc_tile_from_env(v: Option<&str>) -> ConvTcTile {
    conv_tc_tile_reading(v, false)
}

/// A tile variable's value: the tile it names where the op (`forward` or not) has one (the
/// forward's `wide`: the tall tile), else [`ConvTcTile::Auto`].
fn conv_tc_tile_reading(v: Option<&str>, forward: bool) -> ConvTcTile {
    match (v.map(|v| v.trim().to_ascii_lowercase()).as_deref(), forward) {
        (Some("lean"), _) => ConvTcTile::Lean,
        (Some("square"), _) => ConvTcTile::Square,
        (Some("wide"), false) => ConvTcTile::Wide,
        (Some("tall" | "wide"), _) => ConvTcTile::Tall,
        (Some("wgmma"), _) => ConvTcTile::Wgmma,
        (Some("ws"), _) => ConvTcTile::Ws,
        (Some("halo"), _) => ConvTcTile::Halo,
        _ => ConvTcTile::Auto,
    }
}

/// Environment variable for the kernel of `conv2d_backprop_filter`'s tensor-core partial sums
/// (values case-insensitive, surrounding whitespace ignored; read once per process):
/// - unset, `auto` or any other value: [`ConvTcFilterTile::Auto`], the kernel measured
///   fastest for the call on an H200 (2026-12-04, BENCHMARKS.md).
/// - `mma` (or `runs`): `conv2d_backprop_filter_partial_tc_nhwc_*` (NHWC) and
///   `conv2d_backprop_filter_partial_tc_*` (NCHW: x gathered by runs of 16 bytes where a run
///   lies in one x row at stride 1 or 2, dy by 16-byte copies where its planes are whole
///   runs).
/// - `elementwise`: NCHW calls run `conv2d_backprop_filter_partial_tc_elementwise_*` (each
///   thread gathers single elements, one shared stage); NHWC as `mma`.
/// - `wgmma`, on compute capability 9.0: 16-bit NHWC calls whose channel counts per group are
///   multiples of 8 and whose x and dy are 16-byte aligned run
///   `conv2d_backprop_filter_partial_tc_nhwc_wgmma_*` (the compute_90a image: the same 64 x 64
///   tiles and splits as the mma.sync kernel on one warpgroup of `wgmma.mma_async` m64n64k16,
///   both operands read by the tensor cores from shared memory, A M-major and B N-major;
///   within 2% of the mma.sync kernel on an H200); other calls and devices as `auto`.
///
/// Every kernel gives the same results bit for bit (the emulator).
pub const CONV_TC_FILTER_TILE_ENV: &str = "GRADOPS_CUDA_CONV_TC_FILTER_TILE";

/// The kernel of `conv2d_backprop_filter`'s tensor-core partial sums
/// ([`CONV_TC_FILTER_TILE_ENV`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvTcFilterTile {
    /// The default: NHWC's mma.sync kernel; NCHW's by 16-byte runs for 16-bit calls at unit
    /// strides, else the elementwise one (on an H200, 2026-12-04: runs 1.30x elementwise on
    /// f16 W7; elementwise 1.17x on f16 W8, 1.29x and 1.42x on f32 W7 and W8).
    Auto,
    /// `conv2d_backprop_filter_partial_tc_*` (NCHW, by runs) and `_tc_nhwc_*` (NHWC), on
    /// mma.sync.
    Mma,
    /// The NHWC wgmma kernel where it serves the call (compute capability 9.0), else
    /// [`ConvTcFilterTile::Auto`]'s.
    Wgmma,
    /// NCHW's elementwise gather (`conv2d_backprop_filter_partial_tc_elementwise_*`); NHWC as
    /// [`ConvTcFilterTile::Mma`].
    Elementwise,
}

/// The filter gradient's tensor-core kernel ([`CONV_TC_FILTER_TILE_ENV`], read on first use).
pub fn conv_tc_filter_tile() -> ConvTcFilterTile {
    static W: std::sync::OnceLock<ConvTcFilterTile> = std::sync::OnceLock::new();
    *W.get_or_init(|| {
        conv_tc_filter_tile_from_env(std::env::var(CONV_TC_FILTER_TILE_ENV).ok().as_deref())
    })
}

/// [`CONV_TC_FILTER_TILE_ENV`]'s reading.
fn conv_tc_filter_tile_from_env(v: Option<&str>) -> ConvTcFilterTile {
    match v.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        Some("wgmma") => ConvTcFilterTile::Wgmma,
        Some("elementwise") => ConvTcFilterTile::Elementwise,
        Some("mma" | "runs") => ConvTcFilterTile::Mma,
        _ => ConvTcFilterTile::Auto,
    }
}

/// Environment variable for the grid of the lean tensor-core conv kernels: `wave` launches
/// one wave of resident blocks (the device's SMs times the kernel's blocks per SM), each
/// running several pixel tiles, for every call; `tiles` launches one block per tile for
/// every call (values case-insensitive, surrounding whitespace ignored); unset or any other
/// value, [`ConvTcGrid::Auto`]. Either way the same results: each tile is computed the same
/// way by whichever block runs it. Read once per process.
pub const CONV_TC_GRID_ENV: &str = "GRADOPS_CUDA_CONV_TC_GRID";

/// The lean kernels' grid choice ([`CONV_TC_GRID_ENV`], read on first use).
pub fn conv_tc_grid() -> ConvTcGrid {
    static G: std::sync::OnceLock<ConvTcGrid> = std::sync::OnceLock::new();
    *G.get_or_init(|| conv_tc_grid_from_env(std::env::var(CONV_TC_GRID_ENV).ok().as_deref()))
}

/// [`CONV_TC_GRID_ENV`]'s reading.
fn conv_tc_grid_from_env(v: Option<&str>) -> ConvTcGrid {
    match v.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
        Some("wave") => ConvTcGrid::Wave,
        Some("tiles") => ConvTcGrid::Tiles,
        _ => ConvTcGrid::Auto,
    }
}

/// Environment variable for the stages of the warp-specialized conv kernels
/// ([`ConvTcTile::Ws`]): an integer from 2 to `GO_TC_WS_MAX_STAGES` (8), surrounding whitespace
/// ignored; unset or any other value, `GO_TC_WS_STAGES` (6). Each stage (12 KB of dynamic
/// shared memory) is one more 32-channel chunk the producer warpgroup may copy ahead of the
/// consumers; two blocks a SM fit up to 8 on compute capability 9.0. Exact f32's stages (24
/// KB: their small tf32 parts too) are at most 4, and f32's at least 3 (the producer
/// publishes a chunk two behind its copies): the count is clamped to the kernel's range
/// (`launch::conv_tc_ws_smem_bytes`). Every count gives the
/// same results bit for bit (the same chunks in the same order). Read once per process.
pub const CONV_TC_WS_STAGES_ENV: &str = "GRADOPS_CUDA_CONV_TC_WS_STAGES";

/// The warp-specialized conv kernels' stage count ([`CONV_TC_WS_STAGES_ENV`], read on first
/// use).
pub fn conv_tc_ws_stages() -> u32 {
    static S: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *S.get_or_init(|| {
        conv_tc_ws_stages_from_env(std::env::var(CONV_TC_WS_STAGES_ENV).ok().as_deref())
    })
}

/// [`CONV_TC_WS_STAGES_ENV`]'s reading.
fn conv_tc_ws_stages_from_env(v: Option<&str>) -> u32 {
    use super::params::{GO_TC_WS_MAX_STAGES, GO_TC_WS_STAGES};
    v.and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|s| (2..=GO_TC_WS_MAX_STAGES).contains(s))
        .unwrap_or(GO_TC_WS_STAGES)
}

/// Environment variable for the halo conv kernels' halo buffers ([`ConvTcTile::Halo`]): `1`
/// (surrounding whitespace ignored): one buffer, the next tile's halo copied after a tile's
/// products, so that two blocks fit an SM where two buffers would leave room for one (W4:
/// 105 KB a block, not 137); unset or any other value: 2, the next tile's halo copied while
/// a tile multiplies, where they fit (else one). Both give the same results bit for bit
/// (the same products in the same order). NCHW calls take one whatever this says (their
/// copies go through registers). Read once per process.
pub const CONV_TC_HALO_BUFFERS_ENV: &str = "GRADOPS_CUDA_CONV_TC_HALO_BUFFERS";

/// The halo conv kernels' most halo buffers ([`CONV_TC_HALO_BUFFERS_ENV`], read on first
/// use).
pub fn conv_tc_halo_buffers() -> u32 {
    static B: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *B.get_or_init(|| {
        conv_tc_halo_buffers_from_env(std::env::var(CONV_TC_HALO_BUFFERS_ENV).ok().as_deref())
    })
}

/// [`CONV_TC_HALO_BUFFERS_ENV`]'s reading.
fn conv_tc_halo_buffers_from_env(v: Option<&str>) -> u32 {
    if v.map(str::trim) == Some("1") {
        1
    } else {
        2
    }
}

/// Environment variable for the lean tensor-core conv kernels (`conv2d_forward_tc_vec_*`,
/// `conv2d_backprop_input_tc_vec_*`): `off` (case-insensitive, surrounding whitespace
/// ignored) runs every tensor-core conv call on the general `conv2d_*_tc_*` kernels, for
/// comparison (the same arithmetic in the same order: the same results); unset or any
/// other value, the lean kernels run wherever they serve the call. Read once per process.
pub const CONV_TC_VEC_ENV: &str = "GRADOPS_CUDA_CONV_TC_VEC";

/// Whether the lean tensor-core conv kernels may run in this process ([`CONV_TC_VEC_ENV`],
/// read on first use).
pub fn conv_tc_vec_enabled() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| {
        std::env::var(CONV_TC_VEC_ENV)
            .map(|v| !v.trim().eq_ignore_ascii_case("off"))
            .unwrap_or(true)
    })
}

/// Whether `conv2d` and `conv2d_backprop_input` in element type `dtype` (kernel suffix,
/// `"f16"`) run the tensor-core kernels (`<kernel>_tc_<dtype>`) when loaded from the image
/// of architecture `arch`, given whether f32/f64 run on the tensor cores (`all_dtypes`, see
/// [`CONV_TENSOR_CORE_ENV`]; true by default, false with `simt`): f16 and bf16 always on
/// compute_80+ images, f32 and f64 there unless `all_dtypes` is false; every type on
/// compute_75 runs the FFMA kernels.
pub fn conv_tensor_core_policy(dtype: &str, arch: u32, all_dtypes: bool) -> bool {
    arch >= CONV_TENSOR_CORE_ARCH
        && (matches!(dtype, "f16" | "bf16") || (all_dtypes && matches!(dtype, "f32" | "f64")))
}

/// [`conv_tensor_core_policy`] with this process's [`CONV_TENSOR_CORE_ENV`]
/// ([`conv_tensor_cores_for_all_dtypes`]).
pub fn conv_uses_tensor_cores(dtype: &str, arch: u32) -> bool {
    conv_tensor_core_policy(dtype, arch, conv_tensor_cores_for_all_dtypes())
}

/// Whether a call in `dtype` with the f32 allowance `precision` ([`Conv2dAttrs::f32_precision`])
/// runs the tensor-core kernels from the image of architecture `arch`, and whether those run
/// plain TF32 (`(tensor cores, plain tf32)`): as [`conv_tensor_core_policy`] (with
/// `all_dtypes`), and f32 with [`F32Precision::Tf32`] on compute_80+ images always, as plain
/// TF32, `simt` or not (the allowance asks for the tensor cores' speed; compute_75 has no
/// TF32 and stays on the exact FFMA kernel).
///
/// [`Conv2dAttrs::f32_precision`]: crate::Conv2dAttrs::f32_precision
pub fn conv_tensor_core_choice(
    dtype: &str,
    arch: u32,
    all_dtypes: bool,
    precision: F32Precision,
) -> (bool, bool) {
    let tf32 = dtype == "f32" && arch >= CONV_TENSOR_CORE_ARCH && precision == F32Precision::Tf32;
    (
        tf32 || conv_tensor_core_policy(dtype, arch, all_dtypes),
        tf32,
    )
}

/// The kernel variant that `kernel` (a family of [`OP_KERNELS`], e.g. `conv2d_backprop_input`)
/// has in the image of virtual architecture `arch`. The conv families (forward, backward
/// data, the filter gradient's partial sums) run tensor-core kernels (`<kernel>_tc_*`) on
/// compute_80+ images for every type and layout by default (`"tensor core"`), for f16/bf16
/// only with `GRADOPS_CUDA_CONV_TC=simt` ([`CONV_TENSOR_CORE_ENV`];
/// `"tensor core f16/bf16 + simt"`; see [`conv_uses_tensor_cores`]); everything else is
/// CUDA-core code. The
/// tiled families name the generic kernel that runs a call whose tile does not fit (which
/// one a given call runs: [`super::resize_grad_kernel`], [`super::max_pool_kernel`]).
pub fn kernel_variant(kernel: &str, arch: u32) -> &'static str {
    match kernel {
        "conv2d_backprop_input" | "conv2d_forward" | "conv2d_backprop_filter_partial"
            if arch >= CONV_TENSOR_CORE_ARCH =>
        {
            if conv_tensor_cores_for_all_dtypes() {
                "tensor core"
            } else {
                "tensor core f16/bf16 + simt"
            }
        }
        "resize_tile"
        | "max_pool_tile_grad"
        | "max_pool_tile_grad_argmax"
        | "max_pool_tile_forward" => "simt, tiled",
        _ => "simt",
    }
}

/// One op's kernels on one device: which image they come from and which variant runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpKernel {
    /// The op (`conv2d_backprop_input`).
    pub op: &'static str,
    /// Kernel family; the kernels are `<kernel>_f16`, `_bf16`, `_f32`, `_f64`.
    pub kernel: &'static str,
    /// The image the kernels are loaded from.
    pub image: PtxImage,
    /// The kernel variant ([`kernel_variant`]).
    pub variant: &'static str,
}

/// For every op of [`OP_KERNELS`], its image and kernel variant on a device of compute
/// capability `compute_capability`. No GPU needed.
pub fn op_kernels_for(compute_capability: (i32, i32)) -> Result<Vec<OpKernel>> {
    OP_KERNELS
        .iter()
        .map(|&(op, module, kernel)| {
            let image = image_for(module, compute_capability)?;
            Ok(OpKernel {
                op,
                kernel,
                image,
                variant: kernel_variant(kernel, image.arch),
            })
        })
        .collect()
}

/// [`op_kernels_for`] this process's device (device 0).
pub fn op_kernels() -> Result<Vec<OpKernel>> {
    op_kernels_for(super::probe()?.compute_capability)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: &[u32] = &[75, 80, 90];

    #[test]
    fn lean_conv_tile_and_grid_env_readings() {
        assert_eq!(conv_tc_tile_from_env(None), ConvTcTile::Auto);
        assert_eq!(conv_tc_tile_from_env(Some(" Wide")), ConvTcTile::Wide);
        assert_eq!(conv_tc_tile_from_env(Some("")), ConvTcTile::Auto);
        assert_eq!(conv_tc_tile_from_env(Some("auto")), ConvTcTile::Auto);
        assert_eq!(conv_tc_tile_from_env(Some(" Lean ")), ConvTcTile::Lean);
        assert_eq!(conv_tc_tile_from_env(Some("TALL")), ConvTcTile::Tall);
        assert_eq!(conv_tc_tile_from_env(Some("square\n")), ConvTcTile::Square);
        assert_eq!(conv_tc_forward_tile_from_env(None), ConvTcTile::Auto);
        assert_eq!(
            conv_tc_forward_tile_from_env(Some(" Tall")),
            ConvTcTile::Tall
        );
        let forward = |v| conv_tc_forward_tile_from_env(Some(v));
        assert_eq!(forward(" LEAN"), ConvTcTile::Lean);
        assert_eq!(forward("square"), ConvTcTile::Square);
        assert_eq!(forward("wide"), ConvTcTile::Tall);
        assert_eq!(forward("wgmma"), ConvTcTile::Wgmma);
        assert_eq!(conv_tc_tile_from_env(Some(" WGMMA")), ConvTcTile::Wgmma);
        assert_eq!(conv_tc_tile_from_env(Some("ws")), ConvTcTile::Ws);
        assert_eq!(conv_tc_tile_from_env(Some(" Halo")), ConvTcTile::Halo);
        use super::super::params::{GO_TC_WS_MAX_STAGES, GO_TC_WS_STAGES};
        for (v, stages) in [
            (None, GO_TC_WS_STAGES),
            (Some(" 3 "), 3),
            (Some("2"), 2),
            (Some("8"), GO_TC_WS_MAX_STAGES),
            (Some("1"), GO_TC_WS_STAGES),
            (Some("9"), GO_TC_WS_STAGES),
            (Some("four"), GO_TC_WS_STAGES),
        ] {
            assert_eq!(conv_tc_ws_stages_from_env(v), stages, "{v:?}");
        }
        assert_eq!(forward("WS "), ConvTcTile::Ws);
        assert_eq!(forward("halo"), ConvTcTile::Halo);
        for (v, buffers) in [(None, 2), (Some(" 1\n"), 1), (Some("2"), 2), (Some("0"), 2)] {
            assert_eq!(conv_tc_halo_buffers_from_env(v), buffers, "{v:?}");
        }
        let filter = conv_tc_filter_tile_from_env;
        assert_eq!(filter(Some(" WGMMA\n")), ConvTcFilterTile::Wgmma);
        assert_eq!(filter(Some("Elementwise ")), ConvTcFilterTile::Elementwise);
        assert_eq!(filter(Some("MMA")), ConvTcFilterTile::Mma);
        assert_eq!(filter(Some(" runs")), ConvTcFilterTile::Mma);
        for v in [None, Some(""), Some("auto"), Some("tall"), Some("wgmma2")] {
            assert_eq!(filter(v), ConvTcFilterTile::Auto, "{v:?}");
        }
        assert_eq!(conv_tc_grid_from_env(None), ConvTcGrid::Auto);
        assert_eq!(conv_tc_grid_from_env(Some("auto")), ConvTcGrid::Auto);
        assert_eq!(conv_tc_grid_from_env(Some(" WAVE")), ConvTcGrid::Wave);
        assert_eq!(conv_tc_grid_from_env(Some("tiles ")), ConvTcGrid::Tiles);
    }

    #[test]
    fn highest_image_not_newer_than_the_device() {
        for (cc, want) in [
            ((7, 5), 75),
            ((8, 0), 80),
            ((8, 6), 80),
            ((8, 7), 80),
            ((8, 9), 80),
            ((9, 0), 90),
            ((10, 0), 90),
            ((12, 0), 90),
        ] {
            assert_eq!(pick_arch(cc, DEFAULT).unwrap(), want, "{cc:?}");
        }
        assert_eq!(pick_arch((9, 0), &[75]).unwrap(), 75);
        assert_eq!(pick_arch((8, 6), &[75, 86, 90]).unwrap(), 86);
    }

    #[test]
    fn device_older_than_every_image_is_unavailable_and_says_why() {
        for cc in [(7, 0), (6, 1), (0, 0)] {
            let e = pick_arch(cc, DEFAULT).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, Error::CudaUnavailable { .. }), "{msg}");
            for w in [
                format!("{}.{}", cc.0, cc.1),
                "compute_75, compute_80, compute_90".to_string(),
            ] {
                assert!(msg.contains(&w), "{msg:?} lacks {w:?}");
            }
        }
        let e = pick_arch((8, 6), &[90]).unwrap_err().to_string();
        assert!(e.contains("8.6") && e.contains("compute_90"), "{e}");
        assert!(matches!(
            pick_arch((9, 0), &[]),
            Err(Error::CudaUnavailable { .. })
        ));
    }

    #[test]
    fn every_op_has_an_image_on_every_compiled_arch() {
        let b = build_info();
        if !b.kernels_compiled {
            return;
        }
        for &arch in b.archs {
            let cc = ((arch / 10) as i32, (arch % 10) as i32);
            let ops = op_kernels_for(cc).unwrap();
            assert_eq!(ops.len(), OP_KERNELS.len());
            for k in &ops {
                assert_eq!(k.image.arch, arch, "{}", k.op);
                for d in crate::DType::ALL {
                    let entry = format!(".entry {}_{}(", k.kernel, d.name());
                    assert!(k.image.ptx.contains(&entry), "{} lacks {entry}", k.image);
                }
                assert!(
                    k.image.ptx.contains(&format!(".target sm_{arch}")),
                    "{} has another .target",
                    k.image
                );
            }
        }
    }

    /// `conv_tensor_core_policy`: f16/bf16 on the tensor cores on compute_80+ images either
    /// way; f32/f64 there by default (`all_dtypes`) and on FFMA with `simt`; compute_75
    /// runs FFMA for every type.
    #[test]
    fn conv_tensor_core_policy_by_dtype_arch_and_env() {
        for dtype in ["f16", "bf16", "f32", "f64"] {
            let half = matches!(dtype, "f16" | "bf16");
            for arch in [75, 80, 90] {
                for all in [true, false] {
                    let want = arch >= 80 && (half || all);
                    assert_eq!(
                        conv_tensor_core_policy(dtype, arch, all),
                        want,
                        "{dtype} compute_{arch} all_dtypes={all}"
                    );
                }
                assert_eq!(
                    conv_uses_tensor_cores(dtype, arch),
                    conv_tensor_core_policy(dtype, arch, conv_tensor_cores_for_all_dtypes()),
                    "{dtype} compute_{arch}"
                );
            }
        }
    }

    /// `GRADOPS_CUDA_CONV_TC`: only `simt` (any case, trimmed) leaves the tensor cores to
    /// f16/bf16; unset, `all` and any other value are the default.
    #[test]
    fn conv_tensor_core_env_simt_opts_out_else_default() {
        for (v, want) in [
            (None, true),
            (Some("all"), true),
            (Some("ALL"), true),
            (Some(""), true),
            (Some("tc"), true),
            (Some("0"), true),
            (Some("simt"), false),
            (Some(" SIMT\n"), false),
            (Some("Simt"), false),
        ] {
            assert_eq!(conv_tensor_core_env_says_all(v), want, "{v:?}");
        }
    }

    #[test]
    fn conv_tensor_core_variant_by_arch() {
        for k in ["conv2d_backprop_input", "conv2d_forward"] {
            assert_eq!(kernel_variant(k, 75), "simt");
            assert!(kernel_variant(k, 80).starts_with("tensor core"));
            assert!(kernel_variant(k, 90).starts_with("tensor core"));
        }
        let all = conv_tensor_cores_for_all_dtypes();
        assert_eq!(
            kernel_variant("conv2d_forward", 90),
            if all {
                "tensor core"
            } else {
                "tensor core f16/bf16 + simt"
            }
        );
        assert_eq!(kernel_variant("conv2d_backprop_filter_partial", 75), "simt");
        assert!(kernel_variant("conv2d_backprop_filter_partial", 90).starts_with("tensor core"));
        assert_eq!(kernel_variant("conv2d_backprop_filter_reduce", 90), "simt");
    }

    /// The TF32 allowance moves f32 (only) to the tensor cores, as plain TF32, on
    /// compute_80+ images, `simt` or not; exact f32 follows `all_dtypes`; compute_75 stays
    /// FFMA.
    #[test]
    fn tf32_allowance_picks_plain_tf32_tensor_cores_for_f32_only() {
        use F32Precision::{Exact, Tf32};
        for (dtype, arch, all, prec, want) in [
            ("f32", 80, false, Tf32, (true, true)),
            ("f32", 90, true, Tf32, (true, true)),
            ("f32", 75, false, Tf32, (false, false)),
            ("f32", 75, true, Tf32, (false, false)),
            ("f32", 80, false, Exact, (false, false)),
            ("f32", 80, true, Exact, (true, false)),
            ("f64", 90, false, Tf32, (false, false)),
            ("f64", 90, true, Tf32, (true, false)),
            ("f16", 80, false, Tf32, (true, false)),
            ("bf16", 75, false, Tf32, (false, false)),
        ] {
            assert_eq!(
                conv_tensor_core_choice(dtype, arch, all, prec),
                want,
                "{dtype} compute_{arch} all={all} {prec:?}"
            );
        }
    }

    /// The tensor-core kernels are in exactly the images the runtime picks them from.
    #[test]
    fn tensor_core_kernels_only_in_compute_80_plus_images() {
        let b = build_info();
        if !b.kernels_compiled {
            return;
        }
        for &arch in b.archs {
            let img = image("conv", arch).unwrap();
            for k in [
                "conv2d_backprop_input_tc",
                "conv2d_forward_tc",
                "conv2d_backprop_input_tc_vec",
                "conv2d_forward_tc_vec",
                "conv2d_backprop_input_tc_vec_nchw",
                "conv2d_forward_tc_vec_nchw",
                "conv2d_backprop_filter_partial_tc",
                "conv2d_backprop_filter_partial_tc_elementwise",
                "conv2d_backprop_filter_partial_tc_nhwc",
            ] {
                for d in crate::DType::ALL {
                    let entry = format!(".entry {k}_{}(", d.name());
                    assert_eq!(
                        img.ptx.contains(&entry),
                        arch >= CONV_TENSOR_CORE_ARCH,
                        "{img}: {entry}"
                    );
                }
            }
            // The wide, tall and square lean kernels: f16 and bf16 only.
            for k in [
                "conv2d_backprop_input_tc_vec_wide",
                "conv2d_backprop_input_tc_vec_tall",
                "conv2d_backprop_input_tc_vec_square",
                "conv2d_forward_tc_vec_square",
                "conv2d_forward_tc_vec_tall",
            ] {
                for d in crate::DType::ALL {
                    let entry = format!(".entry {k}_{}(", d.name());
                    let want = arch >= CONV_TENSOR_CORE_ARCH && d.size() == 2;
                    assert_eq!(img.ptx.contains(&entry), want, "{img}: {entry}");
                }
            }
        }
    }
}

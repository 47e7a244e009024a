//! Device-resident ops. Each validates with the same planner as the CPU path, then
//! queues one kernel (or one device-to-device copy) on the caller's stream.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, DevicePtr, DevicePtrMut, DeviceRepr, LaunchConfig,
    PushKernelArg, ValidAsZeroBits,
};

use super::images::{
    conv_tc_filter_tile, conv_tc_forward_tile, conv_tc_grid, conv_tc_halo_buffers, conv_tc_tile,
    conv_tc_vec_enabled, conv_tc_wgmma_available, conv_tc_ws_stages, conv_tensor_core_choice,
    conv_tensor_cores_for_all_dtypes, ConvTcFilterTile, ConvTcTile,
};
use super::launch::{self, Launch};
use super::params::{
    GoConvFilterParams, GoConvParams, GoPoolParams, GoResizeParams, GO_F32_PRECISION_EXACT,
    GO_F32_PRECISION_TF32, GO_FILTER_HWIO, GO_FILTER_OIHW, GO_LAYOUT_NCHW, GO_LAYOUT_NHWC,
};
use super::runtime::{
    cuda_err, function, function_sm90a, resident_blocks, stream_arch, stream_runs_sm90a,
};
use super::tensor::{
    same_context, same_layout, DeviceFilterRef, DeviceTensor, DeviceTensorMut, DeviceTensorRef,
};
use crate::geometry::ResizeMode;
use crate::geometry::{ConvGeometry, PoolGeometry, ResizeAttrs, ResizePlan};
use crate::ops::conv2d::{
    plan_conv2d, plan_conv2d_backprop_filter, plan_conv2d_backprop_input, Conv2dAttrs, FilterLayout,
};
use crate::ops::max_pool::{
    plan_max_pool, plan_max_pool_grad, plan_max_pool_grad_with_argmax, MaxPoolAttrs,
};
use crate::ops::resize::{plan_resize, plan_resize_grad, TfResizeAttrs};
use crate::tensor::{check_buffer, check_dims, Dims, Layout};
use crate::{Element, Error, F32Precision, Result};

// SAFETY: the params structs are #[repr(C)] (bindgen from kernels/params.h), hold
// only u64/i64/i32 fields with explicit padding, and each kernel takes exactly one such
// struct by value, so passing a pointer to one as the kernel's only argument is the ABI
// the kernel expects.
unsafe impl DeviceRepr for GoResizeParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for GoConvParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for GoPoolParams {}
// SAFETY: as above.
unsafe impl DeviceRepr for GoConvFilterParams {}

fn layout_code(l: Layout) -> i32 {
    match l {
        Layout::Nchw => GO_LAYOUT_NCHW as i32,
        Layout::Nhwc => GO_LAYOUT_NHWC as i32,
    }
}

fn i64_of(op: &'static str, arg: &'static str, v: usize) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::Overflow {
        op,
        arg,
        msg: format!("{v} does not fit a 64-bit device index"),
    })
}

fn config(l: Launch) -> LaunchConfig {
    config_with_smem(l, 0)
}

/// `l` with `smem` bytes of dynamic shared memory.
fn config_with_smem(l: Launch, smem: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: l.grid,
        block_dim: l.block,
        shared_mem_bytes: smem,
    }
}

/// The dynamic shared memory conv kernel `kernel` is launched with for a call with
/// parameters `p`: the warp-specialized kernels' stages ([`conv_tc_ws_stages`] of them, at
/// most the kernel's most), the halo kernels' filter and halo buffers
/// ([`launch::conv_tc_halo_smem_bytes`]; only picked where it is `Some`), none for the others.
fn conv_dynamic_smem(kernel: &str, p: &GoConvParams) -> u32 {
    if launch::is_conv_tc_ws_kernel(kernel) {
        launch::conv_tc_ws_smem_bytes(kernel, conv_tc_ws_stages())
    } else if launch::is_conv_tc_halo_kernel(kernel) {
        let forward = kernel.starts_with("conv2d_forward");
        let elem_bytes = if kernel.ends_with("_f32") { 4 } else { 2 };
        launch::conv_tc_halo_smem_bytes(p, forward, elem_bytes, conv_tc_halo_buffers()).unwrap_or(0)
    } else {
        0
    }
}

// ------------------------------------------------------------------- resize ----

/// The table arrays of a resize plan on one context, as raw bytes: the six axis tables,
/// then the tiled kernel's row tiles (one byte when the generic kernel runs the plan).
struct DeviceTables {
    bufs: [CudaSlice<u8>; 7],
}

type TableKey = (usize, Vec<u8>);
static TABLES: OnceLock<Mutex<HashMap<TableKey, Arc<DeviceTables>>>> = OnceLock::new();
const TABLE_CACHE_MAX: usize = 64;

fn bytes_of<T: Copy>(v: &[T]) -> &[u8] {
    // SAFETY: T is u32, f32 or f64 here: plain data without padding, every byte initialised.
    unsafe { std::slice::from_raw_parts(v.as_ptr() as *const u8, std::mem::size_of_val(v)) }
}

/// Upload `b` (at least one byte, so an empty array still has a valid allocation).
pub(crate) fn upload(
    stream: &Arc<CudaStream>,
    op: &'static str,
    b: &[u8],
) -> Result<CudaSlice<u8>> {
    let r = if b.is_empty() {
        stream.clone_htod(&[0u8][..])
    } else {
        stream.clone_htod(b)
    };
    r.map_err(|e| cuda_err(op, "host-to-device copy", e))
}

/// The plan's tables (and `row_tiles`) on the stream's context: uploaded on first use
/// (the upload from pageable memory waits for the copy), then cached per (context, table
/// contents).
fn device_tables<A: Copy>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    plan: &ResizePlan<A>,
    row_tiles: &[u32],
) -> Result<Arc<DeviceTables>> {
    let parts: [&[u8]; 7] = [
        bytes_of(&plan.y.offsets),
        bytes_of(&plan.y.index),
        bytes_of(&plan.y.weight),
        bytes_of(&plan.x.offsets),
        bytes_of(&plan.x.index),
        bytes_of(&plan.x.weight),
        bytes_of(row_tiles),
    ];
    let mut key = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum::<usize>() + 8);
    key.extend((std::mem::size_of::<A>() as u64).to_le_bytes());
    for p in parts {
        key.extend((p.len() as u64).to_le_bytes());
        key.extend(p);
    }
    let key = (stream.context().cu_ctx() as usize, key);
    let cache = TABLES.get_or_init(Default::default);
    if let Some(t) = cache.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(t.clone());
    }
    let mut bufs = Vec::with_capacity(parts.len());
    for part in parts {
        bufs.push(upload(stream, op, part)?);
    }
    let bufs: [CudaSlice<u8>; 7] = bufs
        .try_into()
        .unwrap_or_else(|_| unreachable!("seven parts, seven buffers"));
    let t = Arc::new(DeviceTables { bufs });
    let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
    if c.len() >= TABLE_CACHE_MAX {
        c.clear();
    }
    c.insert(key, t.clone());
    Ok(t)
}

/// The gather parameters of `plan` (tables not yet set), or an overflow error.
fn resize_params(
    op: &'static str,
    plan_src: Dims,
    plan_dst: Dims,
    layout: Layout,
    src: u64,
    dst: u64,
) -> Result<GoResizeParams> {
    let (s, d) = (plan_src, plan_dst);
    Ok(GoResizeParams {
        src,
        dst,
        n: i64_of(op, "n", d.n)?,
        c: i64_of(op, "c", d.c)?,
        src_h: i64_of(op, "h", s.h)?,
        src_w: i64_of(op, "w", s.w)?,
        dst_h: i64_of(op, "h", d.h)?,
        dst_w: i64_of(op, "w", d.w)?,
        layout: layout_code(layout),
        ..Default::default()
    })
}

/// How the GPU runs a (non-identity) resize plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResizeKernel {
    /// `resize_box_<dtype>`: both tables are boxes of these factors (height, width).
    Box(i32, i32),
    /// `resize_tile_<dtype>` with this tiling.
    Tile(launch::ResizeTiling),
    /// `resize_gather_<dtype>`: the generic table gather.
    Gather,
}

/// The kernel that runs a (non-identity) resize plan on the GPU: `resize_box_<dtype>` when
/// both tables are boxes (nearest gradients by integer factors: no table reads, 16-byte
/// accesses where aligned), else `resize_tile_<dtype>` (two-pass, shared-memory tiles,
/// 32-bit in-plane indexing) when the plan fits it, else the generic
/// `resize_gather_<dtype>`. Its name, and how to launch it.
pub fn resize_kernel<T: Element>(
    plan: &ResizePlan<T::Acc>,
    layout: Layout,
) -> Result<(String, ResizeKernel)> {
    let p = resize_params("resize", plan.src, plan.dst, layout, 0, 0)?;
    let boxed = match (plan.y.box_factor(), plan.x.box_factor()) {
        (Some(fh), Some(fw)) if fh <= 1 << 16 && fw <= 1 << 16 => {
            let q = GoResizeParams {
                box_h: fh as i32,
                box_w: fw as i32,
                ..p
            };
            launch::resize_box_fits(&q).then_some(ResizeKernel::Box(fh as i32, fw as i32))
        }
        _ => None,
    };
    let kernel = boxed.unwrap_or_else(|| {
        launch::resize_tiling(
            &p,
            &plan.y.offsets,
            &plan.y.index,
            std::mem::size_of::<T::Acc>(),
        )
        .map_or(ResizeKernel::Gather, ResizeKernel::Tile)
    });
    let family = match kernel {
        ResizeKernel::Box(..) => "resize_box",
        ResizeKernel::Tile(_) => "resize_tile",
        ResizeKernel::Gather => "resize_gather",
    };
    Ok((format!("{family}_{}", T::SUFFIX), kernel))
}

/// The device kernel `resize_grad` runs for these shapes (`resize_tile_f32`,
/// `resize_gather_f64`, or `device-to-device copy` for the identity), for reports.
pub fn resize_grad_kernel<T: Element>(
    dy_shape: [usize; 4],
    x_shape: [usize; 4],
    layout: Layout,
    attrs: &ResizeAttrs,
) -> Result<String> {
    let plan = plan_resize_grad::<T>("resize_grad", dy_shape, x_shape, layout, attrs)?;
    if plan.identity {
        return Ok("device-to-device copy".into());
    }
    Ok(resize_kernel::<T>(&plan, layout)?.0)
}

/// Queue the resize gather of `plan` from device pointer `src` to `dst` (not the
/// identity shortcut: callers copy for that).
pub(crate) fn resize_raw<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    plan: &ResizePlan<T::Acc>,
    layout: Layout,
    src: u64,
    dst: u64,
) -> Result<()> {
    let (kernel, how) = resize_kernel::<T>(plan, layout)?;
    let row_tiles = match &how {
        ResizeKernel::Tile(t) => &t.row_tiles[..],
        _ => &[][..],
    };
    let t = device_tables(stream, op, plan, row_tiles)?;
    let g: Vec<_> = t.bufs.iter().map(|b| b.device_ptr(stream)).collect();
    let mut p = GoResizeParams {
        y_offsets: g[0].0,
        y_index: g[1].0,
        y_weight: g[2].0,
        x_offsets: g[3].0,
        x_index: g[4].0,
        x_weight: g[5].0,
        ..resize_params(op, plan.src, plan.dst, layout, src, dst)?
    };
    let l = match &how {
        ResizeKernel::Box(fh, fw) => {
            (p.box_h, p.box_w) = (*fh, *fw);
            let aligned = src.is_multiple_of(16) && dst.is_multiple_of(16);
            p.vec = if launch::resize_box_vec(&p, std::mem::size_of::<T>(), aligned) {
                launch::vec16(std::mem::size_of::<T>()) as i32
            } else {
                1
            };
            launch::resize_box(&p)
        }
        ResizeKernel::Tile(tl) => {
            p.row_tiles = g[6].0;
            p.tile_h = tl.tile_h;
            p.tile_w = tl.tile_w;
            p.span_h = tl.span_h;
            p.max_taps = tl.max_taps;
            launch::resize_tile(&p)
        }
        ResizeKernel::Gather => launch::resize(&p),
    };
    let Some(l) = l else {
        return Ok(());
    };
    let f = function(stream, op, "resize", &kernel)?;
    let mut b = stream.launch_builder(&f);
    b.arg(&p);
    // SAFETY: resize_gather_<T> and resize_tile_<T> take one GoResizeParams. src/dst
    // point to buffers of s.len()/d.len() elements of T (checked by every caller); the six
    // tables are the plan's own arrays, uploaded whole, and the plan guarantees offsets
    // has dst_len+1 entries bounded by the index/weight lengths and every index < the
    // source axis length. resize_gather's grid-stride loops stay inside n*c*dst_h*dst_w
    // for any grid. For resize_tile, launch::resize_tiling built row_tiles from these
    // tables (each tile row's source rows lie in [first, first + count) and count rows of
    // tile_w accumulators, with the tile's y taps, fit GO_RESIZE_TILE_SMEM) and checked that each plane's indices
    // fit an int32; its grid-stride loop covers exactly the tiles of n*c*dst_h*dst_w.
    // resize_box runs only when both tables are boxes (source index f*d + t < f*dst_len =
    // the source axis length, checked by AxisTable::box_factor), with 32-bit rows and
    // planes (launch::resize_box_fits), and 16-byte accesses only on 16-byte aligned
    // buffers whose rows and vector groups launch::resize_box_vec checked stay aligned.
    unsafe { b.launch(config(l)) }.map_err(|e| cuda_err(op, &format!("launching {kernel}"), e))?;
    drop(g);
    Ok(())
}

/// Queues a validated resize plan from `src` to `dst` (both checked against the plan and
/// `stream`'s context): the gather, or a device-to-device copy for the identity plan.
fn resize_views<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    plan: &ResizePlan<T::Acc>,
    (src_arg, src): (&'static str, &DeviceTensorRef<'_, T>),
    (dst_arg, dst): (&'static str, &mut DeviceTensorMut<'_, T>),
) -> Result<()> {
    let layout = src.layout();
    same_layout(op, dst_arg, dst.layout(), layout)?;
    check_dims(op, src_arg, src.len(), plan.src, layout)?;
    check_dims(op, dst_arg, dst.len(), plan.dst, layout)?;
    same_context(op, src_arg, stream, src.data())?;
    same_context(op, dst_arg, stream, dst.data())?;
    if dst.is_empty() {
        return Ok(());
    }
    if src.is_empty() {
        // A gradient with an empty dy (or a forward of an empty x): every output is an empty
        // sum; the kernels would index the source's zero-sized buffer.
        return zero_fill(stream, op, dst);
    }
    if plan.identity {
        return stream
            .memcpy_dtod(src.data(), dst.data_mut())
            .map_err(|e| cuda_err(op, "device-to-device copy", e));
    }
    let (sp, _gs) = src.data().device_ptr(stream);
    let (dp, _gd) = dst.data_mut().device_ptr_mut(stream);
    resize_raw::<T>(stream, op, plan, layout, sp, dp)
}

/// Runs a validated resize plan (forward or backward, from
/// [`plan_resize`](crate::ops::resize::plan_resize) or
/// [`plan_resize_grad`](crate::ops::resize::plan_resize_grad)) from `src` to `dst`, both in
/// `src`'s layout: `dst` is fully written; the identity plan is a device-to-device copy.
/// The device counterpart of [`run_plan_cpu`](crate::ops::resize::run_plan_cpu).
pub fn run_resize_plan<T: Element>(
    stream: &Arc<CudaStream>,
    plan: &ResizePlan<T::Acc>,
    src: DeviceTensorRef<'_, T>,
    mut dst: DeviceTensorMut<'_, T>,
) -> Result<()> {
    resize_views(
        stream,
        "resize",
        plan,
        ("input", &src),
        ("output", &mut dst),
    )
}

fn grad_into<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    dy: DeviceTensorRef<'_, T>,
    attrs: &ResizeAttrs,
    mut dx: DeviceTensorMut<'_, T>,
) -> Result<()> {
    same_layout(op, "dx", dx.layout(), dy.layout())?;
    let plan = plan_resize_grad::<T>(op, dy.shape(), dx.shape(), dy.layout(), attrs)?;
    resize_views(stream, op, &plan, ("dy", &dy), ("dx", &mut dx))
}

fn grad_alloc<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    dy: DeviceTensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &ResizeAttrs,
) -> Result<DeviceTensor<T>> {
    // Validated before anything is allocated.
    let plan = plan_resize_grad::<T>(op, dy.shape(), x_shape, dy.layout(), attrs)?;
    let mut dx = unset_output(op, "x", stream, x_shape, dy.layout())?;
    resize_views(stream, op, &plan, ("dy", &dy), ("dx", &mut dx.view_mut()))?;
    Ok(dx)
}

fn forward_into<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    x: DeviceTensorRef<'_, T>,
    attrs: &ResizeAttrs,
    mut y: DeviceTensorMut<'_, T>,
) -> Result<()> {
    same_layout(op, "y", y.layout(), x.layout())?;
    let yd = y.dims();
    let plan = plan_resize::<T>(op, x.shape(), [yd.h, yd.w], x.layout(), attrs)?;
    if yd != plan.dst {
        return Err(Error::shape(
            op,
            "y",
            format!(
                "shape {:?} differs from the output shape {:?} (x {:?} resized to {} x {})",
                y.shape(),
                x.layout().shape(plan.dst),
                x.shape(),
                yd.h,
                yd.w
            ),
        ));
    }
    resize_views(stream, op, &plan, ("x", &x), ("y", &mut y))
}

fn forward_alloc<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    x: DeviceTensorRef<'_, T>,
    out_hw: [usize; 2],
    attrs: &ResizeAttrs,
) -> Result<DeviceTensor<T>> {
    let plan = plan_resize::<T>(op, x.shape(), out_hw, x.layout(), attrs)?;
    let shape = x.layout().shape(plan.dst);
    let mut y = unset_output(op, "size", stream, shape, x.layout())?;
    resize_views(stream, op, &plan, ("x", &x), ("y", &mut y.view_mut()))?;
    Ok(y)
}

/// ONNX Runtime `ResizeGrad` on the device: the gradient of [`resize`] with respect to its
/// input, `x_shape` in `dy`'s layout. Mirrors [`crate::resize_grad`].
///
/// ```no_run
/// use gradops::cuda::{self, DeviceTensor};
/// use gradops::{Layout, ResizeAttrs, ResizeMode, TensorRef};
/// let stream = cuda::stream()?;
/// let dy = DeviceTensor::from_host(&stream, TensorRef::new(&[1.0f32; 16], [1, 1, 4, 4], Layout::Nchw))?;
/// let dx = cuda::resize_grad(&stream, dy.view(), [1, 1, 2, 2], &ResizeAttrs::new(ResizeMode::Linear))?;
/// assert_eq!(dx.to_host()?.data, vec![4.0; 4]);
/// # Ok::<(), gradops::Error>(())
/// ```
pub fn resize_grad<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &ResizeAttrs,
) -> Result<DeviceTensor<T>> {
    grad_alloc(stream, "resize_grad", dy, x_shape, attrs)
}

/// [`resize_grad`] into a caller buffer: `dx` (x's shape, `dy`'s layout) is fully written.
/// Mirrors [`crate::resize_grad_into`].
pub fn resize_grad_into<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    attrs: &ResizeAttrs,
    dx: DeviceTensorMut<'_, T>,
) -> Result<()> {
    grad_into(stream, "resize_grad", dy, attrs, dx)
}

/// TensorFlow `ResizeBilinearGrad` on the device. Mirrors [`crate::resize_bilinear_grad`].
pub fn resize_bilinear_grad<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &TfResizeAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "resize_bilinear_grad";
    grad_alloc(
        stream,
        OP,
        dy,
        x_shape,
        &attrs.to_onnx(OP, ResizeMode::Linear)?,
    )
}

/// [`resize_bilinear_grad`] into a caller buffer `dx` (x's shape), fully written.
pub fn resize_bilinear_grad_into<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    attrs: &TfResizeAttrs,
    dx: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "resize_bilinear_grad";
    grad_into(stream, OP, dy, &attrs.to_onnx(OP, ResizeMode::Linear)?, dx)
}

/// TensorFlow `ResizeNearestNeighborGrad` on the device. Mirrors
/// [`crate::resize_nearest_neighbor_grad`].
pub fn resize_nearest_neighbor_grad<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    x_shape: [usize; 4],
    attrs: &TfResizeAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "resize_nearest_neighbor_grad";
    grad_alloc(
        stream,
        OP,
        dy,
        x_shape,
        &attrs.to_onnx(OP, ResizeMode::Nearest)?,
    )
}

/// [`resize_nearest_neighbor_grad`] into a caller buffer `dx` (x's shape), fully written.
pub fn resize_nearest_neighbor_grad_into<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    attrs: &TfResizeAttrs,
    dx: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "resize_nearest_neighbor_grad";
    grad_into(stream, OP, dy, &attrs.to_onnx(OP, ResizeMode::Nearest)?, dx)
}

/// ONNX `Resize` forward of `x` to spatial size `out_hw` on the device (layout from `x`).
/// Mirrors [`crate::resize`].
pub fn resize<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    out_hw: [usize; 2],
    attrs: &ResizeAttrs,
) -> Result<DeviceTensor<T>> {
    forward_alloc(stream, "resize", x, out_hw, attrs)
}

/// [`resize`] into a caller buffer `y` (its height and width are the output size; batch
/// and channels those of `x`), fully written.
pub fn resize_into<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    attrs: &ResizeAttrs,
    y: DeviceTensorMut<'_, T>,
) -> Result<()> {
    forward_into(stream, "resize", x, attrs, y)
}

/// TensorFlow `ResizeBilinear` forward on the device. Mirrors [`crate::resize_bilinear`].
pub fn resize_bilinear<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    size: [usize; 2],
    attrs: &TfResizeAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "resize_bilinear";
    forward_alloc(stream, OP, x, size, &attrs.to_onnx(OP, ResizeMode::Linear)?)
}

/// [`resize_bilinear`] into a caller buffer `y` (its height and width are the size).
pub fn resize_bilinear_into<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    attrs: &TfResizeAttrs,
    y: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "resize_bilinear";
    forward_into(stream, OP, x, &attrs.to_onnx(OP, ResizeMode::Linear)?, y)
}

/// TensorFlow `ResizeNearestNeighbor` forward on the device. Mirrors
/// [`crate::resize_nearest_neighbor`].
pub fn resize_nearest_neighbor<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    size: [usize; 2],
    attrs: &TfResizeAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "resize_nearest_neighbor";
    forward_alloc(
        stream,
        OP,
        x,
        size,
        &attrs.to_onnx(OP, ResizeMode::Nearest)?,
    )
}

/// [`resize_nearest_neighbor`] into a caller buffer `y` (its height and width are the size).
pub fn resize_nearest_neighbor_into<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    attrs: &TfResizeAttrs,
    y: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "resize_nearest_neighbor";
    forward_into(stream, OP, x, &attrs.to_onnx(OP, ResizeMode::Nearest)?, y)
}

// ------------------------------------------------------------------- conv ----

/// The kernel parameters of a conv call; `[x, w, y]` are the device addresses.
fn conv_params(
    op: &'static str,
    g: &ConvGeometry,
    layout: Layout,
    fl: FilterLayout,
    [x, w, y]: [u64; 3],
) -> Result<GoConvParams> {
    Ok(GoConvParams {
        x,
        w,
        y,
        n: i64_of(op, "n", g.n)?,
        ci: i64_of(op, "ci", g.ci)?,
        hi: i64_of(op, "h", g.h.input)?,
        wi: i64_of(op, "w", g.w.input)?,
        co: i64_of(op, "co", g.co)?,
        ho: i64_of(op, "h", g.h.output)?,
        wo: i64_of(op, "w", g.w.output)?,
        kh: i64_of(op, "kh", g.h.kernel)?,
        kw: i64_of(op, "kw", g.w.kernel)?,
        sh: i64_of(op, "strides", g.h.stride)?,
        sw: i64_of(op, "strides", g.w.stride)?,
        dh: i64_of(op, "dilations", g.h.dilation)?,
        dw: i64_of(op, "dilations", g.w.dilation)?,
        pad_top: i64_of(op, "padding", g.h.pad_before)?,
        pad_left: i64_of(op, "padding", g.w.pad_before)?,
        groups: i64_of(op, "groups", g.groups)?,
        layout: layout_code(layout),
        filter_layout: match fl {
            FilterLayout::Hwio => GO_FILTER_HWIO as i32,
            FilterLayout::Oihw => GO_FILTER_OIHW as i32,
        },
        // The raw launchers set TF32 where the call runs it.
        f32_precision: GO_F32_PRECISION_EXACT as i32,
        reserved: 0,
    })
}

/// A conv op's kernel family, for [`conv_kernel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvFamily {
    /// `conv2d`: `conv2d_forward_*`.
    Forward,
    /// `conv2d_backprop_input`: `conv2d_backprop_input_*`.
    BackpropInput,
    /// `conv2d_backprop_filter`: `conv2d_backprop_filter_partial_*` + `_reduce_*`.
    BackpropFilter,
}

/// Whether a call of `family` in `dtype` (kernel suffix) runs the tensor-core kernel from the
/// image of `arch`: as [`conv_tensor_core_choice`], in either layout; the filter gradient's
/// partial sums always exact (no TF32 path).
fn conv_tc_runs(family: ConvFamily, dtype: &str, arch: u32, prec: F32Precision) -> bool {
    let all = conv_tensor_cores_for_all_dtypes();
    match family {
        ConvFamily::BackpropFilter => {
            conv_tensor_core_choice(dtype, arch, all, F32Precision::Exact).0
        }
        _ => conv_tensor_core_choice(dtype, arch, all, prec).0,
    }
}

/// The device kernels a conv call of `family` in `T` and `layout` (with `f32_precision`)
/// runs on device 0 (`conv2d_backprop_input_tc_f16`, `conv2d_forward_f64`,
/// `conv2d_backprop_filter_partial_tc_nhwc_f32 + conv2d_backprop_filter_reduce_f32`), for
/// reports.
///
/// # Errors
/// `CudaUnavailable` when CUDA is unusable here.
pub fn conv_kernel<T: Element>(
    family: ConvFamily,
    layout: Layout,
    f32_precision: F32Precision,
) -> Result<String> {
    let arch = super::arch_for(super::probe()?.compute_capability)?;
    let tc = if conv_tc_runs(family, T::SUFFIX, arch, f32_precision) {
        "_tc"
    } else {
        ""
    };
    let s = T::SUFFIX;
    Ok(match family {
        ConvFamily::Forward => format!("conv2d_forward{tc}_{s}"),
        ConvFamily::BackpropInput => format!("conv2d_backprop_input{tc}_{s}"),
        ConvFamily::BackpropFilter => {
            // Without a geometry: the wgmma kernel's calls unknown and 16-bit NCHW calls
            // taken to be at unit strides (conv_kernel_for knows).
            let runs = std::mem::size_of::<T>() == 2;
            let tile = conv_filter_tile(layout, false, runs);
            conv_filter_kernels(conv_filter_partial_kernel(tc == "_tc", layout, tile), s)
        }
    })
}

/// The filter gradient's two kernels in element type `s` (suffix), for reports.
fn conv_filter_kernels(partial: &str, s: &str) -> String {
    format!("{partial}_{s} + conv2d_backprop_filter_reduce_{s}")
}

/// [`conv_kernel`] for one call of geometry `g` (from [`plan_conv2d`] or
/// [`plan_conv2d_backprop_input`]) with a filter in `filter_layout`: where the tensor cores
/// run it, the lean `conv2d_backprop_input_tc_vec[_nchw]_*` / `conv2d_forward_tc_vec[_nchw]_*`
/// when they serve the geometry ([`launch::conv_tc_vec_eligible`]; tensors 16-byte aligned, as every
/// [`DeviceTensor`] allocation is).
///
/// # Errors
/// `CudaUnavailable` when CUDA is unusable here; `Overflow` for sizes past `i64`.
pub fn conv_kernel_for<T: Element>(
    family: ConvFamily,
    g: &ConvGeometry,
    layout: Layout,
    filter_layout: FilterLayout,
    f32_precision: F32Precision,
) -> Result<String> {
    let name = conv_kernel::<T>(family, layout, f32_precision)?;
    let forward = match family {
        ConvFamily::Forward => true,
        ConvFamily::BackpropInput => false,
        ConvFamily::BackpropFilter => {
            if !name.contains("_tc") {
                return Ok(name);
            }
            let p = conv_filter_params("conv_kernel_for", g, layout, filter_layout)?;
            let bytes = std::mem::size_of::<T>();
            let serves = conv_tc_filter_tile() == ConvTcFilterTile::Wgmma
                && conv_filter_wgmma_serves(&p, bytes)
                && conv_tc_wgmma_available();
            let tile = conv_filter_tile(layout, serves, conv_filter_runs_win(&p, bytes));
            let partial = conv_filter_partial_kernel(true, layout, tile);
            return Ok(conv_filter_kernels(partial, T::SUFFIX));
        }
    };
    let tc_name = format!("_tc_{}", T::SUFFIX);
    if !name.ends_with(&tc_name) {
        return Ok(name);
    }
    let mut p = conv_params("conv_kernel_for", g, layout, filter_layout, [0; 3])?;
    if T::SUFFIX == "f32" && f32_precision == F32Precision::Tf32 {
        p.f32_precision = GO_F32_PRECISION_TF32 as i32;
    }
    let sm90a = conv_tc_tile_of(forward).may_be_wgmma() && conv_tc_wgmma_available();
    Ok(conv_tc_family(&p, forward, std::mem::size_of::<T>(), sm90a).to_string() + "_" + T::SUFFIX)
}

/// Whether `conv2d_backprop_input` (`forward` false) or `conv2d` calls on the stream may run a
/// wgmma tile (which one, and for which calls: [`conv_tc_family`]): the op's tile variable
/// unset or `wgmma` (`GRADOPS_CUDA_CONV_TC_TILE`, the forward's
/// `GRADOPS_CUDA_CONV_TC_FORWARD_TILE`) and a device that runs the compute_90a image.
fn conv_tc_wgmma_runs(stream: &Arc<CudaStream>, op: &'static str, forward: bool) -> Result<bool> {
    Ok(conv_tc_tile_of(forward).may_be_wgmma() && stream_runs_sm90a(stream, op, "conv")?)
}

/// The 16-bit NHWC tile the environment picks for the forward (`forward`) or backprop_input.
fn conv_tc_tile_of(forward: bool) -> ConvTcTile {
    if forward {
        conv_tc_forward_tile()
    } else {
        conv_tc_tile()
    }
}

/// The tensor-core kernel family a call with parameters `p` launches: the lean `_vec` (NHWC)
/// and `_vec_nchw` kernels where [`launch::conv_tc_vec_eligible`] holds and the source and filter
/// addresses are 16-byte aligned (unless `GRADOPS_CUDA_CONV_TC_VEC=off`), in the tile the
/// op's variable names (`GRADOPS_CUDA_CONV_TC_TILE`, the forward's
/// `GRADOPS_CUDA_CONV_TC_FORWARD_TILE`: [`ConvTcTile`]; unset, [`conv_tc_measured_tile`]'s);
/// else the general ones. `sm90a`: the device runs the compute_90a image, which the wgmma
/// tiles need (without it their calls run the tall tile, f32's and NCHW's the lean one).
fn conv_tc_family(p: &GoConvParams, forward: bool, elem_bytes: usize, sm90a: bool) -> &'static str {
    conv_tc_family_for(p, (forward, elem_bytes), conv_tc_tile_of(forward), sm90a)
}

/// [`conv_tc_family`] under the environment's tile `env_tile` (for the op: `forward`).
fn conv_tc_family_for(
    p: &GoConvParams,
    (forward, elem_bytes): (bool, usize),
    env_tile: ConvTcTile,
    sm90a: bool,
) -> &'static str {
    let src = if forward { p.x } else { p.y };
    let vec = conv_tc_vec_enabled()
        && launch::conv_tc_vec_eligible(p, forward, elem_bytes)
        && src.is_multiple_of(16)
        && p.w.is_multiple_of(16);
    let nchw = p.layout == GO_LAYOUT_NCHW as i32;
    let halo_serves = vec && launch::conv_tc_halo_smem_bytes(p, forward, elem_bytes, 1).is_some();
    let env_tile = match env_tile {
        ConvTcTile::Auto => conv_tc_measured_tile(p, elem_bytes, sm90a),
        // The halo tile for the calls it serves, the default's choice for the others.
        ConvTcTile::Halo if !halo_serves => conv_tc_measured_tile(p, elem_bytes, sm90a),
        tile => tile,
    };
    let tile = match (vec, nchw, elem_bytes) {
        (true, false, 2) => env_tile,
        // 16-bit NCHW's halo tile (its copies through registers; halo_serves above), and f32's
        // under the TF32 opt-in, both layouts (halo_serves holds for no exact f32 call).
        (true, true, 2) | (true, _, 4) if env_tile == ConvTcTile::Halo => ConvTcTile::Halo,
        // The warp-specialized tile serves f32 of both layouts too (backprop_input's HWIO
        // filter is K-major, as tf32 wgmma reads it; the forward's producer copies its filter
        // element by element to K-major places, and NCHW's its source from the channel
        // planes).
        (true, _, 4) if env_tile == ConvTcTile::Ws => ConvTcTile::Ws,
        // f32 calls (either op, either layout) and 16-bit NCHW calls have one tile beside the
        // lean one: the lean wgmma tile.
        // (The warp-specialized tile for 16-bit NCHW: as the wgmma tile.)
        (true, _, 4) | (true, true, 2)
            if matches!(env_tile, ConvTcTile::Wgmma | ConvTcTile::Ws) =>
        {
            ConvTcTile::Wgmma
        }
        _ => ConvTcTile::Lean,
    };
    let tile = match tile {
        ConvTcTile::Wgmma | ConvTcTile::Ws | ConvTcTile::Halo
            if !sm90a && elem_bytes == 2 && !nchw =>
        {
            ConvTcTile::Tall
        }
        ConvTcTile::Wgmma | ConvTcTile::Ws | ConvTcTile::Halo if !sm90a => ConvTcTile::Lean,
        tile => tile,
    };
    match (forward, vec, nchw, tile) {
        (false, false, _, _) => "conv2d_backprop_input_tc",
        (false, true, false, ConvTcTile::Lean) => "conv2d_backprop_input_tc_vec",
        (false, true, false, ConvTcTile::Wide) => "conv2d_backprop_input_tc_vec_wide",
        // Auto is resolved above.
        (false, true, false, ConvTcTile::Tall | ConvTcTile::Auto) => {
            "conv2d_backprop_input_tc_vec_tall"
        }
        (false, true, false, ConvTcTile::Square) => "conv2d_backprop_input_tc_vec_square",
        (false, true, false, ConvTcTile::Wgmma) => "conv2d_backprop_input_tc_vec_wgmma",
        // f32 under the TF32 opt-in: its own entry point (one kernel for both spilled).
        (false, true, false, ConvTcTile::Ws)
            if elem_bytes == 4 && p.f32_precision == GO_F32_PRECISION_TF32 as i32 =>
        {
            "conv2d_backprop_input_tc_vec_ws_tf32"
        }
        (false, true, false, ConvTcTile::Ws) => "conv2d_backprop_input_tc_vec_ws",
        (false, true, false, ConvTcTile::Halo) if elem_bytes == 4 => {
            "conv2d_backprop_input_tc_vec_halo_tf32"
        }
        (false, true, false, ConvTcTile::Halo) => "conv2d_backprop_input_tc_vec_halo",
        (false, true, true, ConvTcTile::Wgmma) => "conv2d_backprop_input_tc_vec_nchw_wgmma",
        (false, true, true, ConvTcTile::Halo) if elem_bytes == 4 => {
            "conv2d_backprop_input_tc_vec_nchw_halo_tf32"
        }
        (false, true, true, ConvTcTile::Halo) => "conv2d_backprop_input_tc_vec_nchw_halo",
        (false, true, true, ConvTcTile::Ws) if p.f32_precision == GO_F32_PRECISION_TF32 as i32 => {
            "conv2d_backprop_input_tc_vec_nchw_ws_tf32"
        }
        // (f32 only: the 16-bit NCHW Ws calls were made Wgmma above.)
        (false, true, true, ConvTcTile::Ws) => "conv2d_backprop_input_tc_vec_nchw_ws",
        (false, true, true, _) => "conv2d_backprop_input_tc_vec_nchw",
        (true, false, _, _) => "conv2d_forward_tc",
        (true, true, false, ConvTcTile::Square) => "conv2d_forward_tc_vec_square",
        (true, true, false, ConvTcTile::Tall | ConvTcTile::Auto) => "conv2d_forward_tc_vec_tall",
        (true, true, false, ConvTcTile::Wgmma) => "conv2d_forward_tc_vec_wgmma",
        (true, true, false, ConvTcTile::Ws)
            if elem_bytes == 4 && p.f32_precision == GO_F32_PRECISION_TF32 as i32 =>
        {
            "conv2d_forward_tc_vec_ws_tf32"
        }
        (true, true, false, ConvTcTile::Ws) => "conv2d_forward_tc_vec_ws",
        (true, true, false, ConvTcTile::Halo) if elem_bytes == 4 => {
            "conv2d_forward_tc_vec_halo_tf32"
        }
        (true, true, false, ConvTcTile::Halo) => "conv2d_forward_tc_vec_halo",
        (true, true, false, _) => "conv2d_forward_tc_vec",
        (true, true, true, ConvTcTile::Wgmma) => "conv2d_forward_tc_vec_nchw_wgmma",
        (true, true, true, ConvTcTile::Halo) if elem_bytes == 4 => {
            "conv2d_forward_tc_vec_nchw_halo_tf32"
        }
        (true, true, true, ConvTcTile::Halo) => "conv2d_forward_tc_vec_nchw_halo",
        (true, true, true, ConvTcTile::Ws) if p.f32_precision == GO_F32_PRECISION_TF32 as i32 => {
            "conv2d_forward_tc_vec_nchw_ws_tf32"
        }
        (true, true, true, ConvTcTile::Ws) => "conv2d_forward_tc_vec_nchw_ws",
        (true, true, true, _) => "conv2d_forward_tc_vec_nchw",
    }
}

/// Whether a conv family's kernels live in the compute_90a image (the wgmma tiles').
fn conv_tc_family_is_sm90a(family: &str) -> bool {
    family.ends_with("_wgmma")
        || family.ends_with("_halo")
        || family.ends_with("_halo_tf32")
        || conv_tc_family_is_ws(family)
}

/// Whether a conv family is the warp-specialized tile's (`_ws`, f32's TF32 `_ws_tf32`).
fn conv_tc_family_is_ws(family: &str) -> bool {
    family.ends_with("_ws") || family.ends_with("_ws_tf32")
}

/// [`ConvTcTile::Auto`]'s tile for a call with parameters `p` (`p.f32_precision` as it runs)
/// in elements of `elem_bytes`, from the same-run H200 timings of 2026-12-04 (BENCHMARKS.md;
/// `bench/results/2026-12-04-gpu-wgmma-h200/`): on a compute_90a device (`sm90a`) the wgmma
/// tile for f32 (exact: W4 1.12x, W5 1.08x the lean tile NHWC, W4f/W5f level; 1.12x-1.24x
/// NCHW; TF32 NCHW 1.01x-1.25x), except f32 NHWC under TF32 (the lean tile: 1.01x-1.22x the
/// wgmma one), for
/// 16-bit NCHW (1.04x-1.07x the lean NCHW kernels) and 16-bit NHWC at unit strides (W4 1.10x,
/// W4f 1.04x the tall tile); the tall tile for 16-bit NHWC at other strides (W5 1.07x, W5f
/// 1.24x the wgmma one) and on other devices (for f32 and NCHW calls: the lean tile).
fn conv_tc_measured_tile(p: &GoConvParams, elem_bytes: usize, sm90a: bool) -> ConvTcTile {
    let nchw = p.layout == GO_LAYOUT_NCHW as i32;
    let tf32 = p.f32_precision == GO_F32_PRECISION_TF32 as i32;
    let unit_strides = p.sh == 1 && p.sw == 1;
    match (sm90a, elem_bytes, nchw) {
        (false, _, _) => ConvTcTile::Tall,
        (true, 4, false) if tf32 => ConvTcTile::Tall,
        (true, 4, _) | (true, 2, true) => ConvTcTile::Wgmma,
        (true, 2, false) if unit_strides => ConvTcTile::Wgmma,
        _ => ConvTcTile::Tall,
    }
}

/// The launch of tensor-core kernel family `family` ([`conv_tc_family`]) for elements of
/// `elem_bytes` (the lean wgmma tile, f32's and NCHW's, has the lean tile's shape, the 16-bit
/// NHWC one the wide's).
fn conv_tc_launch(
    p: &GoConvParams,
    forward: bool,
    family: &str,
    elem_bytes: usize,
) -> Option<Launch> {
    if family.ends_with("_wgmma") && (elem_bytes == 4 || family.ends_with("_nchw_wgmma")) {
        launch::conv_tc(p, forward)
    } else if conv_tc_family_is_ws(family) {
        launch::conv_tc_ws(p, forward)
    } else if family.ends_with("_halo") || family.ends_with("_halo_tf32") {
        launch::conv_tc_halo(p, forward)
    } else if family.ends_with("_wide") || family.ends_with("_wgmma") {
        launch::conv_tc_wide(p, forward)
    } else if family.ends_with("_tall") {
        launch::conv_tc_tall(p, forward)
    } else if family.ends_with("_square") {
        launch::conv_tc_square(p, forward)
    } else {
        launch::conv_tc(p, forward)
    }
}

/// The launch of conv kernel `kernel` (function `f`, planned as `l`): for the lean
/// tensor-core kernels (they grid-stride along x), [`launch::lean_grid`] under
/// [`conv_tc_grid`]'s choice; else `l`.
fn conv_tc_vec_grid(
    stream: &Arc<CudaStream>,
    (op, p): (&'static str, &GoConvParams),
    kernel: &str,
    (f, l): (&CudaFunction, Launch),
) -> Result<Launch> {
    let grid = conv_tc_grid();
    if !kernel.contains("_tc_vec") || !launch::lean_grid_is_wave(&l, grid) {
        return Ok(l);
    }
    let resident = resident_blocks(stream, op, (f, l.block.0, conv_dynamic_smem(kernel, p)))?;
    Ok(launch::lean_grid(l, resident, grid))
}

/// The filter gradient's partial-sum kernel family: the FFMA one, or the tensor-core one of
/// `layout` and `tile` (one entry point per layout and loop, see `kernels/conv_tc.cuh`; `tile`
/// as [`conv_filter_tile`] gives it).
fn conv_filter_partial_kernel(tc: bool, layout: Layout, tile: ConvTcFilterTile) -> &'static str {
    match (tc, layout, tile) {
        (false, _, _) => "conv2d_backprop_filter_partial",
        (true, Layout::Nchw, ConvTcFilterTile::Elementwise) => {
            "conv2d_backprop_filter_partial_tc_elementwise"
        }
        (true, Layout::Nchw, _) => "conv2d_backprop_filter_partial_tc",
        (true, Layout::Nhwc, ConvTcFilterTile::Wgmma) => {
            "conv2d_backprop_filter_partial_tc_nhwc_wgmma"
        }
        (true, Layout::Nhwc, _) => "conv2d_backprop_filter_partial_tc_nhwc",
    }
}

/// The tensor-core filter kernel a `layout` call runs under [`conv_tc_filter_tile`]: the
/// wgmma one only where `wgmma_serves` (the variable says `wgmma`, and the call:
/// [`conv_filter_wgmma_serves`]; the device: the compute_90a image), the elementwise one
/// only for NCHW; `runs_win`: NCHW's runs measured faster for the call
/// ([`conv_filter_runs_win`]), [`ConvTcFilterTile::Auto`]'s choice between the two.
fn conv_filter_tile(layout: Layout, wgmma_serves: bool, runs_win: bool) -> ConvTcFilterTile {
    conv_filter_tile_of(conv_tc_filter_tile(), layout, wgmma_serves, runs_win)
}

/// [`conv_filter_tile`] with the environment's choice `env`.
fn conv_filter_tile_of(
    env: ConvTcFilterTile,
    layout: Layout,
    wgmma_serves: bool,
    runs_win: bool,
) -> ConvTcFilterTile {
    match (env, layout) {
        (ConvTcFilterTile::Wgmma, Layout::Nhwc) if wgmma_serves => ConvTcFilterTile::Wgmma,
        (ConvTcFilterTile::Elementwise, Layout::Nchw) => ConvTcFilterTile::Elementwise,
        (ConvTcFilterTile::Auto | ConvTcFilterTile::Wgmma, Layout::Nchw) if !runs_win => {
            ConvTcFilterTile::Elementwise
        }
        _ => ConvTcFilterTile::Mma,
    }
}

/// Whether NCHW's filter partial sums by 16-byte runs beat the elementwise gather for a call
/// with parameters `p` in elements of `elem_bytes` (on an H200, 2026-12-04: 16-bit at unit
/// strides, f16 W7 1.30x; the elementwise one on f16 W8, stride 2, 1.17x, and on f32 W7 and
/// W8 1.29x and 1.42x, BENCHMARKS.md).
fn conv_filter_runs_win(p: &GoConvFilterParams, elem_bytes: usize) -> bool {
    elem_bytes == 2 && p.sh == 1 && p.sw == 1
}

/// Whether the NHWC wgmma filter kernel serves a call (`GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma`
/// and a device running the compute_90a image being the caller's part): 16-bit elements,
/// NHWC, channel counts per group whole 16-byte chunks, x and dy (device addresses) 16-byte
/// aligned, as its copies need.
fn conv_filter_wgmma_serves(p: &GoConvFilterParams, elem_bytes: usize) -> bool {
    let groups = p.groups.max(1);
    let vec = (16 / elem_bytes) as i64;
    elem_bytes == 2
        && p.layout == GO_LAYOUT_NHWC as i32
        && (p.ci / groups) % vec == 0
        && (p.co / groups) % vec == 0
        && p.x.is_multiple_of(16)
        && p.dy.is_multiple_of(16)
}

/// Whether a conv call runs the tensor-core kernel, with `p.f32_precision` set to what it
/// runs (plain TF32 only for f32 allowed TF32 on compute_80+ images).
fn conv_pick_tc<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    prec: F32Precision,
    p: &mut GoConvParams,
) -> Result<bool> {
    let arch = stream_arch(stream, op)?;
    let (tc, tf32) =
        conv_tensor_core_choice(T::SUFFIX, arch, conv_tensor_cores_for_all_dtypes(), prec);
    if tf32 {
        p.f32_precision = GO_F32_PRECISION_TF32 as i32;
    }
    Ok(tc)
}

/// Queues `conv2d_backprop_input_<T>` (sizes checked by the caller).
fn conv_backprop_input_raw<T: Element>(
    stream: &Arc<CudaStream>,
    g: &ConvGeometry,
    layout: Layout,
    (fl, prec): (FilterLayout, F32Precision),
    [dy, w, dx]: [u64; 3],
) -> Result<()> {
    const OP: &str = "conv2d_backprop_input";
    let mut p = conv_params(OP, g, layout, fl, [dx, w, dy])?;
    // On compute_80+ images the tensor-core implicit GEMM for every type (f32/f64 on the FFMA
    // kernel with GRADOPS_CUDA_CONV_TC=simt, unless f32 is allowed TF32); else FFMA.
    let tc = conv_pick_tc::<T>(stream, OP, prec, &mut p)?;
    let (l, name) = if tc {
        let sm90a = conv_tc_wgmma_runs(stream, OP, false)?;
        let family = conv_tc_family(&p, false, std::mem::size_of::<T>(), sm90a);
        (
            conv_tc_launch(&p, false, family, std::mem::size_of::<T>()),
            family,
        )
    } else {
        (launch::conv_backprop_input(&p), "conv2d_backprop_input")
    };
    let Some(l) = l else {
        return Ok(());
    };
    let kernel = format!("{name}_{}", T::SUFFIX);
    let f = if conv_tc_family_is_sm90a(name) {
        function_sm90a(stream, OP, "conv", &kernel)?
    } else {
        function(stream, OP, "conv", &kernel)?
    };
    let l = conv_tc_vec_grid(stream, (OP, &p), &kernel, (&f, l))?;
    let mut b = stream.launch_builder(&f);
    b.arg(&p);
    // SAFETY: conv2d_backprop_input_<T>, conv2d_backprop_input_tc_<T> and its _vec twin
    // (picked only where its rule and alignment hold, so it does not trap) take one
    // GoConvParams; x (= dx, written), y (= dy) and w point to buffers of exactly the
    // geometry's input, output and filter sizes (the filter in p.filter_layout's order;
    // checked by every caller); the kernels read dy only at in-range (oy, ox) and the filter
    // only at in-range (ky, kx, c, o), and write each dx element of their tile once, for
    // any grid size; l is the launch geometry of the kernel chosen, with the dynamic shared
    // memory it takes (the _ws kernels' stages, their limit raised on load; trapping below
    // their fewest stages, which conv_tc_ws_smem_bytes never gives).
    unsafe { b.launch(config_with_smem(l, conv_dynamic_smem(&kernel, &p))) }
        .map_err(|e| cuda_err(OP, "launching conv2d_backprop_input", e))?;
    Ok(())
}

/// The parameters of `conv2d_backprop_filter` with its split (workspace not yet set).
pub(crate) fn conv_filter_params(
    op: &'static str,
    g: &ConvGeometry,
    layout: Layout,
    filter_layout: FilterLayout,
) -> Result<GoConvFilterParams> {
    let c = conv_params(op, g, layout, FilterLayout::Hwio, [0; 3])?;
    let mut p = GoConvFilterParams {
        n: c.n,
        ci: c.ci,
        hi: c.hi,
        wi: c.wi,
        co: c.co,
        ho: c.ho,
        wo: c.wo,
        kh: c.kh,
        kw: c.kw,
        sh: c.sh,
        sw: c.sw,
        dh: c.dh,
        dw: c.dw,
        pad_top: c.pad_top,
        pad_left: c.pad_left,
        groups: c.groups,
        layout: c.layout,
        filter_layout: match filter_layout {
            FilterLayout::Hwio => GO_FILTER_HWIO as i32,
            FilterLayout::Oihw => GO_FILTER_OIHW as i32,
        },
        ..Default::default()
    };
    (p.splits, p.split_len) = launch::conv_filter_split(&p);
    Ok(p)
}

/// Workspace bytes of `conv2d_backprop_filter` for parameters `p` and element type `T`.
fn conv_filter_ws_bytes<T: Element>(
    op: &'static str,
    g: &ConvGeometry,
    p: &GoConvFilterParams,
) -> Result<usize> {
    let [a, b, c, d] = g.filter_hwio();
    (p.splits as usize)
        .checked_mul(a * b * c * d)
        .and_then(|v| v.checked_mul(std::mem::size_of::<T::Acc>()))
        .ok_or_else(|| Error::Overflow {
            op,
            arg: "filter_shape",
            msg: format!(
                "workspace of {} splits x filter {:?}",
                p.splits,
                g.filter_hwio()
            ),
        })
}

/// Queues `conv2d_backprop_filter_partial_<T>` and `_reduce_<T>` (sizes checked by the
/// caller); `[x, dy, dw]` are the device addresses.
fn conv_backprop_filter_raw<T: Element>(
    stream: &Arc<CudaStream>,
    g: &ConvGeometry,
    layout: Layout,
    filter_layout: FilterLayout,
    [x, dy, dw]: [u64; 3],
) -> Result<()> {
    const OP: &str = "conv2d_backprop_filter";
    let mut p = conv_filter_params(OP, g, layout, filter_layout)?;
    let Some(reduce) = launch::conv_filter_reduce(&p) else {
        return Ok(()); // an empty filter
    };
    p.x = x;
    p.dy = dy;
    p.out = dw;
    // The workspace lives until the end of this function; the kernels queued on `stream`
    // before its (stream-ordered) release read it first. Not cleared: the partial kernel
    // writes each of its elements before the reduce reads it (a memset would write the
    // splits x filter partials, 16.5 MB for W7, once more per call).
    let ws_bytes = conv_filter_ws_bytes::<T>(OP, g, &p)?.max(1);
    // SAFETY: an allocation of ws_bytes on `stream`, its contents unset: every element the
    // reduce kernel reads (splits x filter, only where splits > 0) is written first by the
    // partial kernel queued before it on the same stream, which runs whenever splits > 0
    // (conv_filter_split gives splits = 0 exactly where there is no tile or pixel); nothing
    // else reads it.
    let mut ws = unsafe { stream.alloc::<u8>(ws_bytes) }
        .map_err(|e| cuda_err(OP, "workspace allocation", e))?;
    let (w, _gw) = ws.device_ptr_mut(stream);
    p.ws = w;
    // On compute_80+ images, either layout, every type (f16/bf16 only with
    // GRADOPS_CUDA_CONV_TC=simt):
    // the tensor-core partial sums (exact f32: the TF32 allowance does not cover this op);
    // else the FFMA kernel. Same split, workspace and reduce kernel either way.
    let tc = conv_tc_runs(
        ConvFamily::BackpropFilter,
        T::SUFFIX,
        stream_arch(stream, OP)?,
        F32Precision::Exact,
    );
    // The wgmma kernel (opt-in, compute_90a image) or NCHW's elementwise one (opt-in): the
    // same grid, split and sums.
    let wgmma_serves = tc
        && conv_tc_filter_tile() == ConvTcFilterTile::Wgmma
        && conv_filter_wgmma_serves(&p, std::mem::size_of::<T>())
        && stream_runs_sm90a(stream, OP, "conv")?;
    let runs_win = conv_filter_runs_win(&p, std::mem::size_of::<T>());
    let tile = conv_filter_tile(layout, wgmma_serves, runs_win);
    let wgmma = tile == ConvTcFilterTile::Wgmma;
    let name = conv_filter_partial_kernel(tc, layout, tile);
    let partial = if tc {
        launch::conv_filter_partial_tc(&p)
    } else {
        launch::conv_filter_partial(&p)
    };
    if let Some(l) = partial {
        let kernel = format!("{name}_{}", T::SUFFIX);
        let f = if wgmma {
            function_sm90a(stream, OP, "conv", &kernel)?
        } else {
            function(stream, OP, "conv", &kernel)?
        };
        let mut b = stream.launch_builder(&f);
        b.arg(&p);
        // SAFETY: conv2d_backprop_filter_partial_<T>, conv2d_backprop_filter_partial_tc_<T>
        // and its _elementwise twin, conv2d_backprop_filter_partial_tc_nhwc_<T> and its
        // _wgmma twin (launched only where conv_filter_wgmma_serves holds: the alignment and
        // channel counts its 16-byte copies need) take one GoConvFilterParams; x and dy point
        // to buffers of exactly the geometry's input and output sizes (checked by every
        // caller), ws to splits x filter elements of T's accumulation type (allocated above);
        // x and dy are read only at in-range indices, each ws element written once; l is the
        // launch geometry of the kernel chosen.
        unsafe { b.launch(config(l)) }
            .map_err(|e| cuda_err(OP, "launching conv2d_backprop_filter_partial", e))?;
    }
    let f = function(
        stream,
        OP,
        "conv",
        &format!("conv2d_backprop_filter_reduce_{}", T::SUFFIX),
    )?;
    let mut b = stream.launch_builder(&f);
    b.arg(&p);
    // SAFETY: conv2d_backprop_filter_reduce_<T> takes one GoConvFilterParams; out points to
    // the filter's kh*kw*cig*co elements (checked by every caller) and ws to the partials
    // written by the launch before it on the same stream (read only for splits > 0).
    unsafe { b.launch(config(reduce)) }
        .map_err(|e| cuda_err(OP, "launching conv2d_backprop_filter_reduce", e))?;
    Ok(())
}

/// Queues `conv2d_forward_<T>` (sizes checked by the caller).
fn conv_forward_raw<T: Element>(
    stream: &Arc<CudaStream>,
    g: &ConvGeometry,
    layout: Layout,
    (fl, prec): (FilterLayout, F32Precision),
    [x, w, y]: [u64; 3],
) -> Result<()> {
    const OP: &str = "conv2d";
    let mut p = conv_params(OP, g, layout, fl, [x, w, y])?;
    // On compute_80+ images the tensor-core implicit GEMM for every type (f32/f64 on the FFMA
    // kernel with GRADOPS_CUDA_CONV_TC=simt, unless f32 is allowed TF32); else FFMA.
    let tc = conv_pick_tc::<T>(stream, OP, prec, &mut p)?;
    let (l, name) = if tc {
        let sm90a = conv_tc_wgmma_runs(stream, OP, true)?;
        let family = conv_tc_family(&p, true, std::mem::size_of::<T>(), sm90a);
        (
            conv_tc_launch(&p, true, family, std::mem::size_of::<T>()),
            family,
        )
    } else {
        (launch::conv_forward(&p), "conv2d_forward")
    };
    let Some(l) = l else {
        return Ok(());
    };
    let kernel = format!("{name}_{}", T::SUFFIX);
    let f = if conv_tc_family_is_sm90a(name) {
        function_sm90a(stream, OP, "conv", &kernel)?
    } else {
        function(stream, OP, "conv", &kernel)?
    };
    let l = conv_tc_vec_grid(stream, (OP, &p), &kernel, (&f, l))?;
    let mut b = stream.launch_builder(&f);
    b.arg(&p);
    // SAFETY: conv2d_forward_<T>, conv2d_forward_tc_<T> and its _vec twins (picked only
    // where their rule and alignment hold; the _wgmma one only from the compute_90a image on
    // a device of compute capability 9.0) take one GoConvParams; x, w and
    // y point to buffers of exactly the geometry's input, filter (in p.filter_layout's
    // order) and output sizes (checked by every caller); x is read only at in-range
    // (iy, ix), each y element written once; l is the launch geometry of the kernel chosen,
    // with the dynamic shared memory it takes (as conv2d_backprop_input's).
    unsafe { b.launch(config_with_smem(l, conv_dynamic_smem(&kernel, &p))) }
        .map_err(|e| cuda_err(OP, "launching conv2d_forward", e))?;
    Ok(())
}

/// Checks a conv call's device arguments: `a` (the input the output is computed from),
/// the filter and the output `out`, against the geometry and the stream's context.
fn conv_check<T>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    (a_arg, a, a_dims): (&'static str, &DeviceTensorRef<'_, T>, Dims),
    filter: &DeviceFilterRef<'_, T>,
    (out_arg, out, out_dims): (&'static str, &DeviceTensorMut<'_, T>, Dims),
) -> Result<()> {
    let layout = a.layout();
    same_layout(op, out_arg, out.layout(), layout)?;
    if out.dims() != out_dims {
        return Err(Error::shape(
            op,
            out_arg,
            format!(
                "shape {:?} differs from the computed shape {:?}",
                out.shape(),
                layout.shape(out_dims)
            ),
        ));
    }
    check_dims(op, a_arg, a.len(), a_dims, layout)?;
    check_buffer(op, "filter", filter.shape(), filter.len())?;
    check_dims(op, out_arg, out.len(), out_dims, layout)?;
    same_context(op, a_arg, stream, a.data())?;
    same_context(op, "filter", stream, filter.data())?;
    same_context(op, out_arg, stream, out.data())
}

/// A tensor of `shape` on `stream` for an allocating op's output, its contents unset: the
/// caller hands it straight to the op's `_into`, which writes every element (a kernel that
/// writes each once, a copy, or `zero_fill` where every element is an empty sum), and drops
/// it unread if that fails. Clearing it first (`DeviceTensor::zeros`) would write the whole
/// output once more per call. Errors name `op` and `arg`.
fn unset_output<T: DeviceRepr + ValidAsZeroBits>(
    op: &'static str,
    arg: &'static str,
    stream: &Arc<CudaStream>,
    shape: [usize; 4],
    layout: Layout,
) -> Result<DeviceTensor<T>> {
    let len = Layout::Nchw.dims(shape).len(op, arg)?;
    if len == 0 {
        // Nothing to write; a one-element placeholder, as every empty tensor holds.
        return DeviceTensor::zeros_for(op, arg, stream, shape, layout);
    }
    // SAFETY: a fresh allocation of `len` elements on `stream`; its unset contents are never
    // read: every caller passes the tensor to its op's `_into` on the same stream, which
    // writes all `len` elements before anything can read them (the device-API tests in
    // tests/cuda_ops.rs compare each allocating op with its `_into` into poisoned buffers),
    // and returns the tensor only after that call succeeds.
    let buf =
        unsafe { stream.alloc::<T>(len) }.map_err(|e| cuda_err(op, "device allocation", e))?;
    DeviceTensor::from_slice(buf, shape, layout)
}

/// Zeroes `out` on `stream` (an output that is an empty sum everywhere).
fn zero_fill<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    out: &mut DeviceTensorMut<'_, T>,
) -> Result<()> {
    if out.is_empty() {
        return Ok(());
    }
    stream
        .memset_zeros(out.data_mut())
        .map_err(|e| cuda_err(op, "clearing the output", e))
}

/// TensorFlow `Conv2DBackpropInput` on the device into a caller buffer `dx` (the input's
/// shape, `dy`'s layout), fully written. The filter is in `attrs.filter_layout`'s order
/// (HWIO or OIHW, both read in place). Mirrors [`crate::conv2d_backprop_input_into`].
pub fn conv2d_backprop_input_into<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    filter: DeviceFilterRef<'_, T>,
    attrs: &Conv2dAttrs,
    mut dx: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "conv2d_backprop_input";
    same_layout(OP, "dx", dx.layout(), dy.layout())?;
    let g = plan_conv2d_backprop_input(dy.shape(), filter.shape(), dx.shape(), dy.layout(), attrs)?;
    conv_check(
        stream,
        OP,
        ("dy", &dy, g.output_dims()),
        &filter,
        ("dx", &dx, g.input_dims()),
    )?;
    if dy.is_empty() || filter.is_empty() {
        // Nothing maps (an empty dy, or a filter with a zero-sized axis): an all-zero dx.
        return zero_fill(stream, OP, &mut dx);
    }
    let (a, _ga) = dy.data().device_ptr(stream);
    let (b, _gb) = filter.data().device_ptr(stream);
    let (c, _gc) = dx.data_mut().device_ptr_mut(stream);
    let how = (attrs.filter_layout, attrs.f32_precision);
    conv_backprop_input_raw::<T>(stream, &g, dy.layout(), how, [a, b, c])
}

/// TensorFlow `Conv2DBackpropInput` on the device: the gradient of [`conv2d`] with
/// respect to its input, of `input_shape` (`dy`'s layout). Mirrors
/// [`crate::conv2d_backprop_input`].
pub fn conv2d_backprop_input<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    filter: DeviceFilterRef<'_, T>,
    input_shape: [usize; 4],
    attrs: &Conv2dAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "conv2d_backprop_input";
    plan_conv2d_backprop_input(dy.shape(), filter.shape(), input_shape, dy.layout(), attrs)?;
    let mut dx = unset_output(OP, "input_shape", stream, input_shape, dy.layout())?;
    conv2d_backprop_input_into(stream, dy, filter, attrs, dx.view_mut())?;
    Ok(dx)
}

/// 2-D convolution (cross-correlation, as TF) on the device into a caller buffer `y` (the
/// output's shape, `x`'s layout), fully written. Mirrors [`crate::conv2d`].
pub fn conv2d_into<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    filter: DeviceFilterRef<'_, T>,
    attrs: &Conv2dAttrs,
    mut y: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "conv2d";
    let g = plan_conv2d(x.shape(), filter.shape(), x.layout(), attrs)?;
    conv_check(
        stream,
        OP,
        ("x", &x, g.input_dims()),
        &filter,
        ("y", &y, g.output_dims()),
    )?;
    if x.is_empty() || filter.is_empty() {
        // Every output is an empty sum.
        return zero_fill(stream, OP, &mut y);
    }
    let (a, _ga) = x.data().device_ptr(stream);
    let (b, _gb) = filter.data().device_ptr(stream);
    let (c, _gc) = y.data_mut().device_ptr_mut(stream);
    let how = (attrs.filter_layout, attrs.f32_precision);
    conv_forward_raw::<T>(stream, &g, x.layout(), how, [a, b, c])
}

/// 2-D convolution on the device: `y = conv2d(x, filter)`, the filter in
/// `attrs.filter_layout`'s order. Mirrors [`crate::conv2d`].
pub fn conv2d<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    filter: DeviceFilterRef<'_, T>,
    attrs: &Conv2dAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "conv2d";
    let g = plan_conv2d(x.shape(), filter.shape(), x.layout(), attrs)?;
    let shape = x.layout().shape(g.output_dims());
    let mut y = unset_output(OP, "y", stream, shape, x.layout())?;
    conv2d_into(stream, x, filter, attrs, y.view_mut())?;
    Ok(y)
}

/// TensorFlow `Conv2DBackpropFilter` on the device into a caller buffer `dw` (the
/// filter's shape, in `attrs.filter_layout`'s order; its layout field is not used), fully
/// written. The reduction over the output pixels is split in a fixed way (from the
/// geometry only) into partial filters in a stream-ordered workspace, summed in split
/// order by a second kernel: no atomics, the same bits on every run and every card.
/// Mirrors [`crate::conv2d_backprop_filter_into`].
pub fn conv2d_backprop_filter_into<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    dy: DeviceTensorRef<'_, T>,
    attrs: &Conv2dAttrs,
    mut dw: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "conv2d_backprop_filter";
    let layout = x.layout();
    if dy.layout() != layout {
        return Err(Error::shape(
            OP,
            "dy",
            format!("layout {} differs from x's layout {layout}", dy.layout()),
        ));
    }
    let g = plan_conv2d_backprop_filter(x.shape(), dy.shape(), dw.shape(), layout, attrs)?;
    check_dims(OP, "x", x.len(), g.input_dims(), layout)?;
    check_dims(OP, "dy", dy.len(), g.output_dims(), layout)?;
    check_buffer(OP, "dw", dw.shape(), dw.len())?;
    same_context(OP, "x", stream, x.data())?;
    same_context(OP, "dy", stream, dy.data())?;
    same_context(OP, "dw", stream, dw.data())?;
    if x.is_empty() || dy.is_empty() {
        // Every filter element is an empty sum.
        return zero_fill(stream, OP, &mut dw);
    }
    let (a, _ga) = x.data().device_ptr(stream);
    let (b, _gb) = dy.data().device_ptr(stream);
    let (c, _gc) = dw.data_mut().device_ptr_mut(stream);
    conv_backprop_filter_raw::<T>(stream, &g, layout, attrs.filter_layout, [a, b, c])
}

/// TensorFlow `Conv2DBackpropFilter` on the device: the gradient of [`conv2d`] with
/// respect to its filter, of `filter_shape` (in `attrs.filter_layout`'s order; the
/// result's layout is `x`'s, as on the host). Mirrors [`crate::conv2d_backprop_filter`].
pub fn conv2d_backprop_filter<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    dy: DeviceTensorRef<'_, T>,
    filter_shape: [usize; 4],
    attrs: &Conv2dAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "conv2d_backprop_filter";
    plan_conv2d_backprop_filter(x.shape(), dy.shape(), filter_shape, x.layout(), attrs)?;
    let mut dw = unset_output(OP, "filter_shape", stream, filter_shape, x.layout())?;
    conv2d_backprop_filter_into(stream, x, dy, attrs, dw.view_mut())?;
    Ok(dw)
}

// ------------------------------------------------------------------- pool ----

fn pool_params(op: &'static str, g: &PoolGeometry, layout: Layout) -> Result<GoPoolParams> {
    Ok(GoPoolParams {
        n: i64_of(op, "n", g.n)?,
        c: i64_of(op, "c", g.c)?,
        hi: i64_of(op, "h", g.h.input)?,
        wi: i64_of(op, "w", g.w.input)?,
        ho: i64_of(op, "h", g.h.output)?,
        wo: i64_of(op, "w", g.w.output)?,
        kh: i64_of(op, "ksize", g.h.kernel)?,
        kw: i64_of(op, "ksize", g.w.kernel)?,
        sh: i64_of(op, "strides", g.h.stride)?,
        sw: i64_of(op, "strides", g.w.stride)?,
        pad_top: i64_of(op, "padding", g.h.pad_before)?,
        pad_left: i64_of(op, "padding", g.w.pad_before)?,
        layout: layout_code(layout),
        ..Default::default()
    })
}

/// How the GPU runs a max-pool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolChoice {
    /// `max_pool_direct_k3_forward_<dtype>`: the forward for windows of at most 3x3, one
    /// thread per output reading x through the cache, row-blocked.
    Direct3,
    /// A tiled kernel with this tile.
    Tile(launch::PoolTile),
    /// The generic kernel.
    Generic,
}

/// The kernel that runs a max-pool call on the GPU: for the forward with windows of at
/// most 3x3, `max_pool_direct_k3_forward_<dtype>`; else the tiled kernel
/// (`max_pool_tile_{forward,grad,grad_argmax}_<dtype>`, shared-memory staging, 32-bit
/// in-image indexing; `max_pool_tile_k3_*` with the window scans and gathers unrolled for
/// windows of at most 3x3) when its tile fits, else the generic one
/// (`max_pool_{forward,grad,grad_argmax}_<dtype>`). Its name, and how to launch it.
pub fn pool_kernel<T: Element>(
    g: &PoolGeometry,
    layout: Layout,
    kind: launch::PoolKernel,
) -> Result<(String, PoolChoice)> {
    let p = pool_params("max_pool", g, layout)?;
    let small = g.h.kernel <= 3 && g.w.kernel <= 3;
    if kind == launch::PoolKernel::Forward && small && launch::pool_direct_fits(&p) {
        return Ok((
            format!("max_pool_direct_k3_forward_{}", T::SUFFIX),
            PoolChoice::Direct3,
        ));
    }
    let tile = launch::pool_tiling(
        &p,
        kind,
        std::mem::size_of::<T>(),
        std::mem::size_of::<T::Acc>(),
    );
    let family = match kind {
        launch::PoolKernel::Forward => "forward",
        launch::PoolKernel::Grad => "grad",
        launch::PoolKernel::GradStored => "grad_argmax",
    };
    // Windows of at most 3x3 run the unrolled tiled kernels.
    let (tiled, choice) = match tile {
        Some(t) if small => ("tile_k3_", PoolChoice::Tile(t)),
        Some(t) => ("tile_", PoolChoice::Tile(t)),
        None => ("", PoolChoice::Generic),
    };
    Ok((format!("max_pool_{tiled}{family}_{}", T::SUFFIX), choice))
}

/// The device kernel a max-pool call of `kind` runs for input `x_shape`
/// (`max_pool_tile_grad_f32`, `max_pool_grad_argmax_f64`, ...), for reports.
pub fn max_pool_kernel<T: Element>(
    x_shape: [usize; 4],
    layout: Layout,
    attrs: &MaxPoolAttrs,
    kind: launch::PoolKernel,
) -> Result<String> {
    let g = plan_max_pool("max_pool", x_shape, layout, attrs)?;
    Ok(pool_kernel::<T>(&g, layout, kind)?.0)
}

/// Queue the max-pool kernel `kind` with the pointers of `p` set (the geometry's sizes
/// checked by every caller).
fn pool_launch<T: Element>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    g: &PoolGeometry,
    layout: Layout,
    kind: launch::PoolKernel,
    pointers: GoPoolParams,
) -> Result<()> {
    let (kernel, choice) = pool_kernel::<T>(g, layout, kind)?;
    let mut p = GoPoolParams {
        x: pointers.x,
        y: pointers.y,
        argmax: pointers.argmax,
        dy: pointers.dy,
        dx: pointers.dx,
        ..pool_params(op, g, layout)?
    };
    let l = match choice {
        PoolChoice::Direct3 => launch::pool_direct(&p),
        PoolChoice::Tile((th, tw, tc)) => {
            (p.tile_h, p.tile_w, p.tile_c) = (th, tw, tc);
            launch::pool_tile(&p, kind)
        }
        PoolChoice::Generic if kind == launch::PoolKernel::Forward => launch::pool_forward(&p),
        PoolChoice::Generic => launch::pool_grad(&p),
    };
    let Some(l) = l else {
        return Ok(());
    };
    let f = function(stream, op, "pool", &kernel)?;
    let mut b = stream.launch_builder(&f);
    b.arg(&p);
    // SAFETY: every max-pool kernel takes one GoPoolParams. x and dx point to buffers of
    // the geometry's input size, y, argmax (i64) and dy to its output size, each set only
    // where the kernel reads or writes it (checked by every caller). The generic kernels
    // write each output once and read only in-bounds cells; the tiled ones stage only the
    // in-image cells of their windows, in a tile that launch::pool_tiling sized to fit
    // (the direct forward reads only in-image cells of its output's window, with
    // launch::pool_direct_fits having checked rows and images fit 32 bits)
    // GO_POOL_TILE_SMEM and 32-bit in-image indices. Stored argmax values are only
    // compared with dx indices, never dereferenced, so a corrupt one cannot cause an
    // out-of-bounds access.
    unsafe { b.launch(config(l)) }.map_err(|e| cuda_err(op, &format!("launching {kernel}"), e))?;
    Ok(())
}

/// Checks a pool call's output `out` (shape `want` in `layout`) and its context.
fn pool_out<T>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    (arg, out): (&'static str, &DeviceTensorMut<'_, T>),
    want: Dims,
    layout: Layout,
) -> Result<()> {
    same_layout(op, arg, out.layout(), layout)?;
    if out.dims() != want {
        return Err(Error::shape(
            op,
            arg,
            format!(
                "shape {:?} differs from the computed shape {:?}",
                out.shape(),
                layout.shape(want)
            ),
        ));
    }
    check_dims(op, arg, out.len(), want, layout)?;
    same_context(op, arg, stream, out.data())
}

/// Checks a pool call's input `a` (shape `want` in `layout`) and its context.
fn pool_in<T>(
    stream: &Arc<CudaStream>,
    op: &'static str,
    (arg, a): (&'static str, &DeviceTensorRef<'_, T>),
    want: Dims,
    layout: Layout,
) -> Result<()> {
    if a.layout() != layout {
        return Err(Error::shape(
            op,
            arg,
            format!("layout {} differs from x's layout {layout}", a.layout()),
        ));
    }
    check_dims(op, arg, a.len(), want, layout)?;
    same_context(op, arg, stream, a.data())
}

/// Max pool forward on the device into caller buffers: `y` (the pool's output shape,
/// `x`'s layout) and, when given, `argmax` (the same shape: per window the flat index into
/// `x`, batch included, in x's layout; `-1` for a window with no in-bounds cell), both
/// fully written.
pub fn max_pool_into<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    attrs: &MaxPoolAttrs,
    mut y: DeviceTensorMut<'_, T>,
    argmax: Option<DeviceTensorMut<'_, i64>>,
) -> Result<()> {
    const OP: &str = "max_pool";
    let layout = x.layout();
    let g = plan_max_pool(OP, x.shape(), layout, attrs)?;
    pool_in(stream, OP, ("x", &x), g.input_dims(), layout)?;
    pool_out(stream, OP, ("y", &y), g.output_dims(), layout)?;
    let mut argmax = argmax;
    if let Some(a) = &argmax {
        pool_out(stream, OP, ("argmax", a), g.output_dims(), layout)?;
    }
    if y.is_empty() {
        return Ok(());
    }
    let (xp, _gx) = x.data().device_ptr(stream);
    let (yp, _gy) = y.data_mut().device_ptr_mut(stream);
    // No argmax buffer: the kernels skip the argmax stores (address 0).
    let am = argmax.as_mut().map(|a| a.data_mut().device_ptr_mut(stream));
    let ptrs = GoPoolParams {
        x: xp,
        y: yp,
        argmax: am.as_ref().map_or(0, |(p, _)| *p),
        ..Default::default()
    };
    pool_launch::<T>(stream, OP, &g, layout, launch::PoolKernel::Forward, ptrs)
}

/// Max pool forward on the device; with `want_argmax`, also the argmax of each window (as
/// [`max_pool_into`] writes it). Mirrors [`crate::max_pool`].
pub fn max_pool<T: Element>(
    stream: &Arc<CudaStream>,
    x: DeviceTensorRef<'_, T>,
    attrs: &MaxPoolAttrs,
    want_argmax: bool,
) -> Result<(DeviceTensor<T>, Option<DeviceTensor<i64>>)> {
    const OP: &str = "max_pool";
    let layout = x.layout();
    let g = plan_max_pool(OP, x.shape(), layout, attrs)?;
    let shape = layout.shape(g.output_dims());
    let mut y = unset_output(OP, "y", stream, shape, layout)?;
    let mut am = if want_argmax {
        Some(unset_output::<i64>(OP, "argmax", stream, shape, layout)?)
    } else {
        None
    };
    max_pool_into(
        stream,
        x,
        attrs,
        y.view_mut(),
        am.as_mut().map(|a| a.view_mut()),
    )?;
    Ok((y, am))
}

/// TensorFlow `MaxPoolGrad` on the device into a caller buffer `dx` (x's shape and
/// layout), fully written: each `dy` routed to its window's argmax in `x` (recomputed,
/// TF rule). `y`, the forward output, is only shape-checked. Mirrors
/// [`crate::max_pool_grad_into`].
pub fn max_pool_grad_into<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    x: DeviceTensorRef<'_, T>,
    y: Option<DeviceTensorRef<'_, T>>,
    attrs: &MaxPoolAttrs,
    mut dx: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "max_pool_grad";
    let layout = x.layout();
    let g = plan_max_pool_grad(
        dy.shape(),
        x.shape(),
        y.as_ref().map(|y| y.shape()),
        layout,
        attrs,
    )?;
    pool_in(stream, OP, ("dy", &dy), g.output_dims(), layout)?;
    pool_in(stream, OP, ("x", &x), g.input_dims(), layout)?;
    if let Some(y) = &y {
        pool_in(stream, OP, ("y", y), g.output_dims(), layout)?;
    }
    pool_out(stream, OP, ("dx", &dx), g.input_dims(), layout)?;
    if dy.is_empty() {
        // No window (an output axis of size 0): nothing routes, an all-zero dx (the kernels
        // would index dy's zero-sized buffer).
        return zero_fill(stream, OP, &mut dx);
    }
    let (xp, _gx) = x.data().device_ptr(stream);
    let (dyp, _gdy) = dy.data().device_ptr(stream);
    let (dxp, _gdx) = dx.data_mut().device_ptr_mut(stream);
    let ptrs = GoPoolParams {
        x: xp,
        dy: dyp,
        dx: dxp,
        ..Default::default()
    };
    pool_launch::<T>(stream, OP, &g, layout, launch::PoolKernel::Grad, ptrs)
}

/// TensorFlow `MaxPoolGrad` on the device: `dx` of x's shape. Mirrors
/// [`crate::max_pool_grad`].
pub fn max_pool_grad<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    x: DeviceTensorRef<'_, T>,
    y: Option<DeviceTensorRef<'_, T>>,
    attrs: &MaxPoolAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "max_pool_grad";
    let mut dx = unset_output(OP, "x", stream, x.shape(), x.layout())?;
    max_pool_grad_into(stream, dy, x, y, attrs, dx.view_mut())?;
    Ok(dx)
}

/// Max-pool gradient from stored argmax indices (as [`max_pool`] writes them, `dy`'s
/// shape) into a caller buffer `dx` (the forward input's shape, `dy`'s layout), fully
/// written. Unlike the host version, which reports a bad index, the device gather cannot
/// report without a host synchronisation: an index that is not a cell of its window
/// routes nothing, and nothing is read or written out of bounds. Mirrors
/// [`crate::max_pool_grad_with_argmax_into`].
pub fn max_pool_grad_with_argmax_into<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    argmax: DeviceTensorRef<'_, i64>,
    attrs: &MaxPoolAttrs,
    mut dx: DeviceTensorMut<'_, T>,
) -> Result<()> {
    const OP: &str = "max_pool_grad_with_argmax";
    let layout = dy.layout();
    same_layout(OP, "dx", dx.layout(), layout)?;
    let g = plan_max_pool_grad_with_argmax(dy.shape(), dx.shape(), layout, attrs)?;
    pool_in(stream, OP, ("dy", &dy), g.output_dims(), layout)?;
    pool_in(stream, OP, ("argmax", &argmax), g.output_dims(), layout)?;
    pool_out(stream, OP, ("dx", &dx), g.input_dims(), layout)?;
    if dy.is_empty() {
        // No window (an output axis of size 0): nothing routes, an all-zero dx (the kernels
        // would index dy's zero-sized buffer).
        return zero_fill(stream, OP, &mut dx);
    }
    let (ap, _ga) = argmax.data().device_ptr(stream);
    let (dyp, _gdy) = dy.data().device_ptr(stream);
    let (dxp, _gdx) = dx.data_mut().device_ptr_mut(stream);
    let ptrs = GoPoolParams {
        argmax: ap,
        dy: dyp,
        dx: dxp,
        ..Default::default()
    };
    pool_launch::<T>(stream, OP, &g, layout, launch::PoolKernel::GradStored, ptrs)
}

/// Max-pool gradient from stored argmax indices on the device: `dx` of `x_shape` (`dy`'s
/// layout). See [`max_pool_grad_with_argmax_into`] for indices outside their window.
/// Mirrors [`crate::max_pool_grad_with_argmax`].
pub fn max_pool_grad_with_argmax<T: Element>(
    stream: &Arc<CudaStream>,
    dy: DeviceTensorRef<'_, T>,
    argmax: DeviceTensorRef<'_, i64>,
    x_shape: [usize; 4],
    attrs: &MaxPoolAttrs,
) -> Result<DeviceTensor<T>> {
    const OP: &str = "max_pool_grad_with_argmax";
    plan_max_pool_grad_with_argmax(dy.shape(), x_shape, dy.layout(), attrs)?;
    let mut dx = unset_output(OP, "x", stream, x_shape, dy.layout())?;
    max_pool_grad_with_argmax_into(stream, dy, argmax, attrs, dx.view_mut())?;
    Ok(dx)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W4's geometry (NHWC, HWIO, 64 -> 64) with 16-byte aligned buffers.
    fn w4() -> GoConvParams {
        GoConvParams {
            n: 32,
            ci: 64,
            hi: 56,
            wi: 56,
            co: 64,
            ho: 56,
            wo: 56,
            kh: 3,
            kw: 3,
            sh: 1,
            sw: 1,
            dh: 1,
            dw: 1,
            pad_top: 1,
            pad_left: 1,
            groups: 1,
            layout: GO_LAYOUT_NHWC as i32,
            filter_layout: GO_FILTER_HWIO as i32,
            x: 1 << 20,
            y: 2 << 20,
            w: 3 << 20,
            ..Default::default()
        }
    }

    /// Which filter-gradient calls the wgmma partial kernel serves: 16-bit NHWC, channels per
    /// group whole 16-byte chunks, x and dy 16-byte aligned; the kernel names per choice.
    #[test]
    fn conv_filter_wgmma_calls() {
        // W7 (NHWC, HWIO, 64 -> 64, SAME) through the op's own planning, 16-byte aligned.
        let attrs = crate::Conv2dAttrs::default().padding(crate::Padding::Same);
        let (x, dy, f) = ([32, 56, 56, 64], [32, 56, 56, 64], [3, 3, 64, 64]);
        let g = plan_conv2d_backprop_filter(x, dy, f, Layout::Nhwc, &attrs).unwrap();
        let mut w7 = conv_filter_params("test", &g, Layout::Nhwc, FilterLayout::Hwio).unwrap();
        (w7.x, w7.dy) = (1 << 20, 2 << 20);
        assert!(conv_filter_wgmma_serves(&w7, 2));
        assert!(!conv_filter_wgmma_serves(&w7, 4), "f32");
        assert!(!conv_filter_wgmma_serves(&w7, 8), "f64");
        let with = |f: &dyn Fn(&mut GoConvFilterParams)| {
            let mut p = w7;
            f(&mut p);
            conv_filter_wgmma_serves(&p, 2)
        };
        assert!(!with(&|p| p.layout = GO_LAYOUT_NCHW as i32), "NCHW");
        assert!(with(&|p| p.groups = 8), "8 channels a group");
        assert!(!with(&|p| p.groups = 16), "4 channels a group");
        assert!(!with(&|p| p.ci = 60), "ci 60");
        assert!(!with(&|p| p.co = 68), "co 68");
        assert!(!with(&|p| p.x += 8), "x 8 bytes off");
        assert!(!with(&|p| p.dy += 2), "dy 2 bytes off");
        use ConvTcFilterTile::{Auto, Elementwise, Mma, Wgmma};
        // (tc, layout, environment, the call served by wgmma, partial kernel)
        for (tc, layout, env, serves, want) in [
            (
                false,
                Layout::Nhwc,
                Wgmma,
                true,
                "conv2d_backprop_filter_partial",
            ),
            (
                false,
                Layout::Nchw,
                Elementwise,
                false,
                "conv2d_backprop_filter_partial",
            ),
            (
                true,
                Layout::Nchw,
                Mma,
                false,
                "conv2d_backprop_filter_partial_tc",
            ),
            (
                true,
                Layout::Nchw,
                Wgmma,
                true,
                "conv2d_backprop_filter_partial_tc",
            ),
            (
                true,
                Layout::Nchw,
                Elementwise,
                false,
                "conv2d_backprop_filter_partial_tc_elementwise",
            ),
            (
                true,
                Layout::Nhwc,
                Mma,
                true,
                "conv2d_backprop_filter_partial_tc_nhwc",
            ),
            (
                true,
                Layout::Nhwc,
                Wgmma,
                false,
                "conv2d_backprop_filter_partial_tc_nhwc",
            ),
            (
                true,
                Layout::Nhwc,
                Elementwise,
                false,
                "conv2d_backprop_filter_partial_tc_nhwc",
            ),
            (
                true,
                Layout::Nhwc,
                Wgmma,
                true,
                "conv2d_backprop_filter_partial_tc_nhwc_wgmma",
            ),
        ] {
            let tile = conv_filter_tile_of(env, layout, serves, true);
            let what = format!("{tc} {layout:?} {env:?} {serves}");
            assert_eq!(conv_filter_partial_kernel(tc, layout, tile), want, "{what}");
        }
        // The default: NCHW by runs only where they win (16-bit at unit strides), the
        // elementwise gather elsewhere (`wgmma` where it does not serve: the same); an
        // explicit `mma` keeps the runs; NHWC is unaffected.
        let w8 = GoConvFilterParams { sh: 2, sw: 2, ..w7 };
        assert!(conv_filter_runs_win(&w7, 2));
        assert!(!conv_filter_runs_win(&w8, 2), "stride 2");
        assert!(
            !conv_filter_runs_win(&GoConvFilterParams { sw: 2, ..w7 }, 2),
            "stride 2 along x"
        );
        assert!(!conv_filter_runs_win(&w7, 4), "f32");
        for (env, layout, runs_win, want) in [
            (Auto, Layout::Nchw, true, Mma),
            (Auto, Layout::Nchw, false, Elementwise),
            (Wgmma, Layout::Nchw, false, Elementwise),
            (Mma, Layout::Nchw, false, Mma),
            (Auto, Layout::Nhwc, false, Mma),
            (Auto, Layout::Nhwc, true, Mma),
        ] {
            let what = format!("{env:?} {layout:?} runs win: {runs_win}");
            assert_eq!(
                conv_filter_tile_of(env, layout, false, runs_win),
                want,
                "{what}"
            );
        }
    }

    /// Which family each (op, element size, environment tile, compute_90a) runs: the f32
    /// wgmma tile only for NHWC backprop_input under `wgmma` on a compute_90a device, on the
    /// lean tile's launch; the lean tile for f32 otherwise; 16-bit types as before.
    #[test]
    fn conv_tc_families() {
        if !conv_tc_vec_enabled() {
            println!("GRADOPS_CUDA_CONV_TC_VEC=off in this environment: the lean families are off");
            return;
        }
        let p = w4();
        let fam =
            |forward, bytes, tile, sm90a| conv_tc_family_for(&p, (forward, bytes), tile, sm90a);
        use ConvTcTile::{Lean, Tall, Wgmma};
        assert_eq!(
            fam(false, 4, Wgmma, true),
            "conv2d_backprop_input_tc_vec_wgmma"
        );
        assert_eq!(fam(false, 4, Wgmma, false), "conv2d_backprop_input_tc_vec");
        assert_eq!(fam(false, 4, Tall, true), "conv2d_backprop_input_tc_vec");
        assert_eq!(fam(true, 4, Wgmma, true), "conv2d_forward_tc_vec_wgmma");
        assert_eq!(fam(true, 4, Wgmma, false), "conv2d_forward_tc_vec");
        assert_eq!(fam(true, 4, Lean, true), "conv2d_forward_tc_vec");
        assert_eq!(fam(false, 8, Wgmma, true), "conv2d_backprop_input_tc_vec");
        assert_eq!(
            fam(false, 2, Wgmma, true),
            "conv2d_backprop_input_tc_vec_wgmma"
        );
        assert_eq!(
            fam(false, 2, Wgmma, false),
            "conv2d_backprop_input_tc_vec_tall"
        );
        assert_eq!(fam(true, 2, Wgmma, true), "conv2d_forward_tc_vec_wgmma");
        assert_eq!(fam(false, 2, Lean, true), "conv2d_backprop_input_tc_vec");
        // NCHW: the lean wgmma tile's NCHW kernels, both ops, f32 and 16-bit.
        let nchw = GoConvParams {
            layout: GO_LAYOUT_NCHW as i32,
            ..p
        };
        let nchw_fam =
            |forward, bytes, tile, sm90a| conv_tc_family_for(&nchw, (forward, bytes), tile, sm90a);
        assert_eq!(
            nchw_fam(false, 4, Wgmma, true),
            "conv2d_backprop_input_tc_vec_nchw_wgmma"
        );
        assert_eq!(
            nchw_fam(false, 4, Wgmma, false),
            "conv2d_backprop_input_tc_vec_nchw"
        );
        assert_eq!(
            nchw_fam(false, 2, Wgmma, true),
            "conv2d_backprop_input_tc_vec_nchw_wgmma"
        );
        assert_eq!(
            nchw_fam(false, 2, Wgmma, false),
            "conv2d_backprop_input_tc_vec_nchw"
        );
        assert_eq!(
            nchw_fam(false, 2, Tall, true),
            "conv2d_backprop_input_tc_vec_nchw"
        );
        assert_eq!(
            nchw_fam(true, 2, Wgmma, true),
            "conv2d_forward_tc_vec_nchw_wgmma"
        );
        assert_eq!(
            nchw_fam(true, 2, Wgmma, false),
            "conv2d_forward_tc_vec_nchw"
        );
        assert_eq!(nchw_fam(true, 2, Tall, true), "conv2d_forward_tc_vec_nchw");
        assert_eq!(
            nchw_fam(true, 4, Wgmma, true),
            "conv2d_forward_tc_vec_nchw_wgmma"
        );
        assert_eq!(
            nchw_fam(true, 4, Wgmma, false),
            "conv2d_forward_tc_vec_nchw"
        );
        // The lean wgmma tile (f32's, NCHW's) runs on the lean launch (64 pixels, one
        // warpgroup), the 16-bit NHWC one on the wide launch (128 pixels, two).
        let wg = "conv2d_backprop_input_tc_vec_wgmma";
        for (f, bytes) in [
            (wg, 4),
            ("conv2d_backprop_input_tc_vec_nchw_wgmma", 4),
            ("conv2d_backprop_input_tc_vec_nchw_wgmma", 2),
        ] {
            assert_eq!(
                conv_tc_launch(&p, false, f, bytes).map(|l| (l.grid, l.block)),
                launch::conv_tc(&p, false).map(|l| (l.grid, l.block))
            );
        }
        for (f, bytes) in [
            ("conv2d_forward_tc_vec_nchw_wgmma", 2),
            ("conv2d_forward_tc_vec_nchw_wgmma", 4),
            ("conv2d_forward_tc_vec_wgmma", 4),
        ] {
            assert_eq!(
                conv_tc_launch(&p, true, f, bytes).map(|l| (l.grid, l.block)),
                launch::conv_tc(&p, true).map(|l| (l.grid, l.block))
            );
        }
        assert_eq!(
            conv_tc_launch(&p, true, "conv2d_forward_tc_vec_wgmma", 2).map(|l| (l.grid, l.block)),
            launch::conv_tc_wide(&p, true).map(|l| (l.grid, l.block))
        );
        assert_eq!(
            conv_tc_launch(&p, false, wg, 2).map(|l| (l.grid, l.block)),
            launch::conv_tc_wide(&p, false).map(|l| (l.grid, l.block))
        );
        // The warp-specialized tile: 16-bit NHWC and f32 of either layout (exact, or the TF32
        // opt-in's entry point), both ops, on its own launch (the wide grid, 384 threads), in the
        // compute_90a image; elsewhere as the wgmma tile.
        use ConvTcTile::Ws;
        for forward in [false, true] {
            let op = if forward { "forward" } else { "backprop_input" };
            let ws = format!("conv2d_{op}_tc_vec_ws");
            assert_eq!(fam(forward, 2, Ws, true), ws);
            assert!(conv_tc_family_is_sm90a(&ws));
            assert_eq!(
                fam(forward, 2, Ws, false),
                format!("conv2d_{op}_tc_vec_tall")
            );
            assert_eq!(fam(forward, 4, Ws, true), ws);
            let tf32 = GoConvParams {
                f32_precision: GO_F32_PRECISION_TF32 as i32,
                ..p
            };
            let f = conv_tc_family_for(&tf32, (forward, 4), Ws, true);
            assert_eq!(f, format!("conv2d_{op}_tc_vec_ws_tf32"));
            assert!(conv_tc_family_is_sm90a(f));
            let l = conv_tc_launch(&tf32, forward, f, 4).expect("a launch");
            assert_eq!(l.block, (super::super::params::GO_TC_WS_THREADS, 1, 1));
            assert_eq!(
                conv_tc_family_for(&tf32, (forward, 4), Ws, false),
                format!("conv2d_{op}_tc_vec")
            );
            assert_eq!(fam(forward, 4, Ws, false), fam(forward, 4, Lean, false));
            assert_eq!(
                nchw_fam(forward, 2, Ws, true),
                nchw_fam(forward, 2, Wgmma, true)
            );
            // f32 NCHW: its own ws kernels (exact, TF32), elsewhere the lean tile.
            let nchw_ws = format!("conv2d_{op}_tc_vec_nchw_ws");
            assert_eq!(nchw_fam(forward, 4, Ws, true), nchw_ws);
            assert!(conv_tc_family_is_sm90a(&nchw_ws) && conv_tc_family_is_ws(&nchw_ws));
            assert_eq!(
                nchw_fam(forward, 4, Ws, false),
                nchw_fam(forward, 4, Lean, false)
            );
            let tf32_nchw = GoConvParams {
                layout: GO_LAYOUT_NCHW as i32,
                ..tf32
            };
            let f = conv_tc_family_for(&tf32_nchw, (forward, 4), Ws, true);
            assert_eq!(f, format!("conv2d_{op}_tc_vec_nchw_ws_tf32"));
            let l = conv_tc_launch(&tf32_nchw, forward, f, 4).expect("a launch");
            assert_eq!(l.block, (super::super::params::GO_TC_WS_THREADS, 1, 1));
            let l = conv_tc_launch(&p, forward, &ws, 2).expect("a launch");
            let wide = launch::conv_tc_wide(&p, forward).unwrap();
            assert_eq!(
                (l.grid, l.block),
                (wide.grid, (super::super::params::GO_TC_WS_THREADS, 1, 1))
            );
        }
        assert!(!conv_tc_family_is_sm90a(
            "conv2d_backprop_input_tc_vec_tall"
        ));
        // The halo tile: 16-bit calls it serves (both ops at stride 1, backprop_input at
        // stride 2 too; NHWC and NCHW) and f32 ones under TF32 on its own launch in the
        // compute_90a image; the strided forward and exact f32 calls as the default; without
        // the image the tall tile (NCHW and f32: the lean one).
        use ConvTcTile::Halo;
        for forward in [false, true] {
            let op = if forward { "forward" } else { "backprop_input" };
            let halo = format!("conv2d_{op}_tc_vec_halo");
            assert_eq!(fam(forward, 2, Halo, true), halo);
            assert!(conv_tc_family_is_sm90a(&halo) && !conv_tc_family_is_ws(&halo));
            let l = conv_tc_launch(&p, forward, &halo, 2).expect("a launch");
            assert_eq!(l.block, (super::super::params::GO_TC_HALO_THREADS, 1, 1));
            assert_eq!(
                fam(forward, 2, Halo, false),
                format!("conv2d_{op}_tc_vec_tall")
            );
            assert_eq!(
                fam(forward, 4, Halo, true),
                fam(forward, 4, ConvTcTile::Auto, true)
            );
            let nchw_halo = format!("conv2d_{op}_tc_vec_nchw_halo");
            assert_eq!(nchw_fam(forward, 2, Halo, true), nchw_halo);
            assert!(conv_tc_family_is_sm90a(&nchw_halo));
            assert_eq!(
                nchw_fam(forward, 2, Halo, false),
                format!("conv2d_{op}_tc_vec_nchw")
            );
            assert_eq!(
                nchw_fam(forward, 4, Halo, true),
                nchw_fam(forward, 4, ConvTcTile::Auto, true)
            );
            // f32 under the TF32 opt-in: its own halo kernels, both layouts (W4's filter and
            // one halo buffer in 206 KB); without the image the lean tile.
            let tf32 = GoConvParams {
                f32_precision: GO_F32_PRECISION_TF32 as i32,
                ..p
            };
            let f = conv_tc_family_for(&tf32, (forward, 4), Halo, true);
            assert_eq!(f, format!("conv2d_{op}_tc_vec_halo_tf32"));
            assert!(conv_tc_family_is_sm90a(f) && !conv_tc_family_is_ws(f));
            let l = conv_tc_launch(&tf32, forward, f, 4).expect("a launch");
            assert_eq!(l.block, (super::super::params::GO_TC_HALO_THREADS, 1, 1));
            assert_eq!(
                conv_dynamic_smem(&format!("{f}_f32"), &tf32),
                launch::conv_tc_halo_smem_bytes(&tf32, forward, 4, 1).unwrap()
            );
            assert_eq!(
                conv_tc_family_for(&tf32, (forward, 4), Halo, false),
                format!("conv2d_{op}_tc_vec")
            );
            let tf32_nchw = GoConvParams {
                layout: GO_LAYOUT_NCHW as i32,
                ..tf32
            };
            let f = conv_tc_family_for(&tf32_nchw, (forward, 4), Halo, true);
            assert_eq!(f, format!("conv2d_{op}_tc_vec_nchw_halo_tf32"));
            assert!(conv_tc_family_is_sm90a(f));
            let s2 = GoConvParams { sh: 2, sw: 2, ..p };
            let f = conv_tc_family_for(&s2, (forward, 2), Halo, true);
            if forward {
                assert_eq!(
                    f,
                    conv_tc_family_for(&s2, (forward, 2), ConvTcTile::Auto, true)
                );
            } else {
                assert_eq!(f, halo);
            }
        }
    }

    /// The default tile ([`ConvTcTile::Auto`]) per call: on a compute_90a device the wgmma
    /// tiles for f32 (but NHWC under TF32), 16-bit NCHW and 16-bit NHWC at unit strides, the
    /// tall tile for 16-bit NHWC at stride 2; elsewhere the tall tile or the lean one.
    #[test]
    fn conv_tc_auto_tiles() {
        if !conv_tc_vec_enabled() {
            println!("GRADOPS_CUDA_CONV_TC_VEC=off in this environment: the lean families are off");
            return;
        }
        let w4 = w4();
        let nchw = |p: GoConvParams| GoConvParams {
            layout: GO_LAYOUT_NCHW as i32,
            ..p
        };
        let tf32 = |p: GoConvParams| GoConvParams {
            f32_precision: GO_F32_PRECISION_TF32 as i32,
            ..p
        };
        // W5: stride 2, 64 -> 128 (dy 28 x 28).
        let w5 = GoConvParams {
            co: 128,
            ho: 28,
            wo: 28,
            sh: 2,
            sw: 2,
            pad_top: 0,
            pad_left: 0,
            ..w4
        };
        let auto = |p: &GoConvParams, forward, bytes, sm90a| {
            conv_tc_family_for(p, (forward, bytes), ConvTcTile::Auto, sm90a)
        };
        for forward in [false, true] {
            let op = if forward {
                "conv2d_forward"
            } else {
                "conv2d_backprop_input"
            };
            let name = |s: &str| format!("{op}_tc_vec{s}");
            for (p, bytes, sm90a, want) in [
                (w4, 2, true, "_wgmma"),
                (w5, 2, true, "_tall"),
                (w4, 2, false, "_tall"),
                (w5, 2, false, "_tall"),
                (nchw(w4), 2, true, "_nchw_wgmma"),
                (nchw(w5), 2, true, "_nchw_wgmma"),
                (nchw(w4), 2, false, "_nchw"),
                (w4, 4, true, "_wgmma"),
                (w5, 4, true, "_wgmma"),
                (nchw(w5), 4, true, "_nchw_wgmma"),
                (tf32(w4), 4, true, ""),
                (tf32(w5), 4, true, ""),
                (nchw(tf32(w4)), 4, true, "_nchw_wgmma"),
                (w4, 4, false, ""),
                (nchw(w4), 4, false, "_nchw"),
            ] {
                let what = format!(
                    "{op} {bytes} bytes, layout {}, sh {}, sm90a {sm90a}",
                    p.layout, p.sh
                );
                assert_eq!(auto(&p, forward, bytes, sm90a), name(want), "{what}");
            }
        }
    }
}

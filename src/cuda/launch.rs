//! Launch geometry of every kernel: pure functions, no driver calls, shared by the CUDA
//! runtime and the host emulator test (tests/emulated_kernels.rs) so both run the same
//! grids. Every kernel uses grid-stride loops, so capping a grid never loses work.

use super::params::{
    GoConvFilterParams, GoConvParams, GoPoolParams, GoResizeParams, GO_BLOCK_THREADS,
    GO_CONV_FILTER_TILE_K, GO_CONV_FILTER_TILE_M, GO_CONV_FILTER_TILE_N, GO_CONV_TILE_C,
    GO_CONV_TILE_P, GO_F32_PRECISION_TF32, GO_FILTER_HWIO, GO_LAYOUT_NCHW, GO_LAYOUT_NHWC,
    GO_POOL_TILE_SMEM, GO_RESIZE_TILE_SMEM, GO_TC_BLOCK_THREADS, GO_TC_HALO_MAX_SMEM,
    GO_TC_HALO_NCHW_MAX_PLANE, GO_TC_HALO_SMEM_ALIGN, GO_TC_HALO_THREADS, GO_TC_SQUARE_THREADS,
    GO_TC_SQUARE_TILE_M, GO_TC_TALL_TILE_M, GO_TC_TILE_M, GO_TC_TILE_N, GO_TC_WIDE_THREADS,
    GO_TC_WIDE_TILE_M, GO_TC_WS_MAX_STAGES, GO_TC_WS_SMEM_ALIGN, GO_TC_WS_SPLIT_LAG,
    GO_TC_WS_SPLIT_STAGE_BYTES, GO_TC_WS_STAGE_BYTES, GO_TC_WS_THREADS,
};

/// Threads per block for every kernel but the tensor-core ones (`GO_TC_BLOCK_THREADS`)
/// (matches `__launch_bounds__` in the kernels).
pub const BLOCK: u32 = GO_BLOCK_THREADS;
/// Cap for grid.x: far below the hardware's 2^31-1, far above what fills any GPU.
pub const MAX_GRID_X: u64 = 1 << 20;
/// Hardware limit for grid.y and grid.z.
pub const MAX_GRID_YZ: u64 = 65_535;

/// A launch: `grid` blocks of `BLOCK` threads. `None` from a planner means there is no
/// output element to write (a zero-sized dimension): skip the launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Launch {
    /// Blocks in x, y, z.
    pub grid: (u32, u32, u32),
    /// Threads in x, y, z.
    pub block: (u32, u32, u32),
}

fn ceil_div(a: u64, b: u64) -> u64 {
    a.div_ceil(b)
}

fn cap(v: u64, max: u64) -> u32 {
    v.clamp(1, max) as u32
}

fn nonneg(v: i64) -> u64 {
    v.max(0) as u64
}

/// 1-D grid-stride launch over `total` outputs.
pub fn linear(total: u64) -> Option<Launch> {
    (total > 0).then(|| Launch {
        grid: (cap(ceil_div(total, BLOCK as u64), MAX_GRID_X), 1, 1),
        block: (BLOCK, 1, 1),
    })
}

/// `resize_gather_*`: x over the inner run (dst_w, or dst_w*c for NHWC), y over rows.
pub fn resize(p: &GoResizeParams) -> Option<Launch> {
    let (n, c, h, w) = (nonneg(p.n), nonneg(p.c), nonneg(p.dst_h), nonneg(p.dst_w));
    let (rows, inner) = if p.layout == GO_LAYOUT_NCHW as i32 {
        (n * c * h, w)
    } else {
        (n * h, w * c)
    };
    (rows > 0 && inner > 0).then(|| Launch {
        grid: (
            cap(ceil_div(inner, BLOCK as u64), MAX_GRID_X),
            cap(rows, MAX_GRID_YZ),
            1,
        ),
        block: (BLOCK, 1, 1),
    })
}

/// How `resize_tile_*` tiles one plan: `tile_h` destination rows x `tile_w` inner
/// elements per block, and per tile row its first source row and source row count
/// (`row_tiles`, `2 * ceil(dst_h / tile_h)` entries, the kernel's `row_tiles` table).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResizeTiling {
    /// Destination rows per tile.
    pub tile_h: i32,
    /// Destination inner elements per tile (`dst_w`, or `dst_w * c` for NHWC).
    pub tile_w: i32,
    /// The most source rows a tile reads (rows of the horizontal pass in shared memory).
    pub span_h: i32,
    /// The most y-table entries a tile has (staged in shared memory).
    pub max_taps: i32,
    /// `[first source row, source rows]` per tile row.
    pub row_tiles: Vec<u32>,
}

/// The tiling of `resize_tile_*` for the gather `p` with height table `y_offsets` /
/// `y_index` and accumulators of `acc_size` bytes, or `None` when the tiled kernel
/// cannot run it (a plane past 32-bit indexing, or a tile row whose source rows and taps
/// do not fit the shared memory even one destination row high): then `resize_gather_*`
/// runs it. The tallest tile (up to 32 rows) whose staging fits is chosen.
pub fn resize_tiling(
    p: &GoResizeParams,
    y_offsets: &[u32],
    y_index: &[u32],
    acc_size: usize,
) -> Option<ResizeTiling> {
    let cin = if p.layout == GO_LAYOUT_NCHW as i32 {
        1
    } else {
        nonneg(p.c)
    };
    let (src_inner, dst_inner) = (nonneg(p.src_w) * cin, nonneg(p.dst_w) * cin);
    let (src_h, dst_h) = (nonneg(p.src_h), nonneg(p.dst_h));
    let fits_i32 = |a: u64, b: u64| a.checked_mul(b).is_some_and(|v| v <= i32::MAX as u64);
    if !fits_i32(src_h, src_inner) || !fits_i32(dst_h, dst_inner) || dst_inner == 0 {
        return None;
    }
    if y_offsets.len() as u64 != dst_h + 1 {
        return None;
    }
    let tile_w: u64 = match dst_inner {
        0..=32 => 32,
        33..=64 => 64,
        65..=128 => 128,
        _ => 256,
    };
    let acc = acc_size as u64;
    for tile_h in [32u64, 16, 8, 4, 2, 1] {
        if tile_h > dst_h.next_power_of_two() && tile_h > 1 {
            continue;
        }
        let mut row_tiles = Vec::with_capacity(2 * dst_h.div_ceil(tile_h) as usize);
        let (mut span, mut max_taps) = (0u64, 0u64);
        for i0 in (0..dst_h).step_by(tile_h as usize) {
            let i1 = (i0 + tile_h).min(dst_h);
            let taps = &y_index[y_offsets[i0 as usize] as usize..y_offsets[i1 as usize] as usize];
            let (lo, hi) = taps
                .iter()
                .fold((u32::MAX, 0u32), |(lo, hi), &r| (lo.min(r), hi.max(r)));
            let (first, count) = if taps.is_empty() {
                (0, 0)
            } else {
                (lo, hi - lo + 1)
            };
            span = span.max(u64::from(count));
            max_taps = max_taps.max(taps.len() as u64);
            row_tiles.extend([first, count]);
        }
        let smem = span * tile_w * acc + max_taps * (acc + 4) + (tile_h + 1) * 4;
        if smem <= GO_RESIZE_TILE_SMEM as u64 {
            return Some(ResizeTiling {
                tile_h: tile_h as i32,
                tile_w: tile_w as i32,
                span_h: span as i32,
                max_taps: max_taps as i32,
                row_tiles,
            });
        }
    }
    None
}

/// Blocks a tiled kernel's grid aims at: several waves of resident blocks on the largest
/// GPUs (132 SMs x 4 blocks of 256 threads), with enough planes per block that its
/// per-tile setup is reused.
pub const TILED_GRID_BLOCKS: u64 = 4096;

/// A tiled grid: x over `spatial` tiles, y over `planes` (both grid-stride in the
/// kernel), sized towards [`TILED_GRID_BLOCKS`].
fn tiled_grid(spatial: u64, planes: u64) -> Option<Launch> {
    (spatial > 0 && planes > 0).then(|| {
        let x = spatial.min(MAX_GRID_X);
        let y = TILED_GRID_BLOCKS.div_ceil(x).min(planes);
        Launch {
            grid: (cap(x, MAX_GRID_X), cap(y, MAX_GRID_YZ), 1),
            block: (BLOCK, 1, 1),
        }
    })
}

/// `resize_tile_*`: x over spatial tiles, y over planes (`p.tile_h`, `p.tile_w` set).
pub fn resize_tile(p: &GoResizeParams) -> Option<Launch> {
    let (cin, planes) = if p.layout == GO_LAYOUT_NCHW as i32 {
        (1, nonneg(p.n) * nonneg(p.c))
    } else {
        (nonneg(p.c), nonneg(p.n))
    };
    let (th, tw) = (
        nonneg(p.tile_h as i64).max(1),
        nonneg(p.tile_w as i64).max(1),
    );
    let spatial = ceil_div(nonneg(p.dst_h), th) * ceil_div(nonneg(p.dst_w) * cin, tw);
    tiled_grid(spatial, planes)
}

/// Elements of `elem_size` bytes in 16 bytes (the vector width of `resize_box_*`).
pub fn vec16(elem_size: usize) -> u64 {
    16 / elem_size.max(1) as u64
}

/// Whether `resize_box_*` can use 16-byte vectors for `p` (`box_h`, `box_w` set) with
/// elements of `elem_size` bytes and both buffers 16-byte aligned: NHWC with `c` a
/// multiple of the vector, or NCHW with `box_w == 2` and `dst_w` a multiple of it.
pub fn resize_box_vec(p: &GoResizeParams, elem_size: usize, aligned: bool) -> bool {
    let v = vec16(elem_size);
    aligned
        && if p.layout == GO_LAYOUT_NCHW as i32 {
            p.box_w == 2 && nonneg(p.dst_w).is_multiple_of(v)
        } else {
            nonneg(p.c).is_multiple_of(v)
        }
}

/// Whether `resize_box_*` can run `p` at all: its rows (`n*c*dst_h` or `n*dst_h`) fit 32
/// bits and each source plane fits 32-bit indexing.
pub fn resize_box_fits(p: &GoResizeParams) -> bool {
    let nchw = p.layout == GO_LAYOUT_NCHW as i32;
    let cin = if nchw { 1 } else { nonneg(p.c) };
    let planes = if nchw {
        nonneg(p.n) * nonneg(p.c)
    } else {
        nonneg(p.n)
    };
    let rows = planes.checked_mul(nonneg(p.dst_h));
    let plane = nonneg(p.src_h)
        .checked_mul(nonneg(p.src_w))
        .and_then(|v| v.checked_mul(cin));
    rows.is_some_and(|r| r <= u32::MAX as u64) && plane.is_some_and(|v| v <= i32::MAX as u64)
}

/// A row-blocked launch (`go_row_lanes` in the kernels): each block's threads split into
/// `gx` lanes across a row's `inner` run (`gx` the next power of two >= inner, at most the
/// block) and `BLOCK / gx` rows; x over the run `gx` at a time, y over `rows`.
pub fn row_blocked(inner: u64, rows: u64) -> Option<Launch> {
    let gx = inner.clamp(1, BLOCK as u64).next_power_of_two();
    let per_block_rows = BLOCK as u64 / gx;
    (inner > 0 && rows > 0).then(|| Launch {
        grid: (
            cap(ceil_div(inner, gx), MAX_GRID_X),
            cap(ceil_div(rows, per_block_rows), MAX_GRID_YZ),
            1,
        ),
        block: (BLOCK, 1, 1),
    })
}

/// `resize_box_*`: row-blocked over a row's groups of `p.vec` and the rows.
pub fn resize_box(p: &GoResizeParams) -> Option<Launch> {
    let nchw = p.layout == GO_LAYOUT_NCHW as i32;
    let (cin, planes) = if nchw {
        (1, nonneg(p.n) * nonneg(p.c))
    } else {
        (nonneg(p.c), nonneg(p.n))
    };
    let groups = nonneg(p.dst_w) * cin / nonneg(p.vec as i64).max(1);
    row_blocked(groups, planes * nonneg(p.dst_h))
}

/// Which tiled max-pool kernel a tiling is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PoolKernel {
    /// `max_pool_tile_forward_*`: tiles of y.
    Forward,
    /// `max_pool_tile_grad_*`: tiles of dx, argmax recomputed from x.
    Grad,
    /// `max_pool_tile_grad_argmax_*`: tiles of dx, stored argmax.
    GradStored,
}

/// A tile of the tiled max-pool kernels: (`tile_h`, `tile_w`, `tile_c`).
pub type PoolTile = (i32, i32, i32);

/// Shared memory (bytes) the tiled max-pool kernel `kind` stages for a
/// `th x tw x tc` tile at most, for elements of `elem` bytes and accumulators of `acc`.
fn pool_tile_smem(
    p: &GoPoolParams,
    kind: PoolKernel,
    (th, tw, tc): (u64, u64, u64),
    elem: u64,
    acc: u64,
) -> u64 {
    let (kh, kw) = (nonneg(p.kh), nonneg(p.kw));
    let (sh, sw) = (nonneg(p.sh).max(1), nonneg(p.sw).max(1));
    // Input cells covered by `nw` consecutive windows, clipped to the image.
    let cells = |nw: u64, s: u64, k: u64, len: u64| (nw.saturating_sub(1) * s + k).min(len);
    match kind {
        PoolKernel::Forward => {
            cells(th, sh, kh, nonneg(p.hi)) * cells(tw, sw, kw, nonneg(p.wi)) * tc * elem
        }
        PoolKernel::Grad | PoolKernel::GradStored => {
            // Windows that contain a cell of `t` consecutive cells: at most (t+k-2)/s + 1.
            let wins =
                |t: u64, s: u64, k: u64, out: u64| ((t + k).saturating_sub(2) / s + 1).min(out);
            let (nwy, nwx) = (
                wins(th, sh, kh, nonneg(p.ho)),
                wins(tw, sw, kw, nonneg(p.wo)),
            );
            // Per window its dy (acc) and argmax offset (i32); the staged x cells; the
            // per-row and per-column window ranges (two i32 each); 4 bytes of alignment.
            let windows = nwy * nwx * tc * (4 + acc);
            let staged = if kind == PoolKernel::Grad {
                cells(nwy, sh, kh, nonneg(p.hi)) * cells(nwx, sw, kw, nonneg(p.wi)) * tc * elem
            } else {
                0
            };
            windows + staged + 4 + (th + tw) * 8
        }
    }
}

/// The tile (`tile_h`, `tile_w`, `tile_c`) of the tiled max-pool kernel `kind` for `p`,
/// or `None` when it cannot run it (an image past 32-bit indexing, or windows so large
/// that even a one-cell tile's staging does not fit the shared memory): then the generic
/// kernel runs it. NCHW tiles one channel at a time, rows x columns; NHWC tiles up to 32
/// channels innermost (coalesced) over a small patch. Tiles aim at 4096 elements (16 per
/// thread), so that the per-tile setup (spans, window ranges, walkers) is amortised.
pub fn pool_tiling(
    p: &GoPoolParams,
    kind: PoolKernel,
    elem: usize,
    acc: usize,
) -> Option<PoolTile> {
    let (c, hi, wi, ho, wo) = (
        nonneg(p.c),
        nonneg(p.hi),
        nonneg(p.wi),
        nonneg(p.ho),
        nonneg(p.wo),
    );
    let fits_i32 = |v: Option<u64>| v.is_some_and(|v| v <= i32::MAX as u64);
    if !fits_i32(c.checked_mul(hi).and_then(|v| v.checked_mul(wi)))
        || !fits_i32(c.checked_mul(ho).and_then(|v| v.checked_mul(wo)))
        || [p.kh, p.kw, p.sh, p.sw, p.pad_top, p.pad_left]
            .iter()
            .any(|&v| v > i32::MAX as i64 / 4)
    {
        return None;
    }
    let cols = if kind == PoolKernel::Forward { wo } else { wi };
    let (mut th, mut tw, tc) = if p.layout == GO_LAYOUT_NCHW as i32 {
        let tw = match cols {
            0..=32 => 32,
            33..=64 => 64,
            65..=128 => 128,
            _ => 64,
        };
        (4096 / tw, tw, 1)
    } else {
        let tc = c.clamp(1, 32);
        if tc >= 32 {
            (16, 8, tc)
        } else {
            (16, 16, tc)
        }
    };
    let (elem, acc) = (elem as u64, acc as u64);
    loop {
        if pool_tile_smem(p, kind, (th, tw, tc), elem, acc) <= GO_POOL_TILE_SMEM as u64 {
            return Some((th as i32, tw as i32, tc as i32));
        }
        // Shrink rows first: full-width rows keep the accesses coalesced.
        if th > 1 {
            th /= 2;
        } else if tw > 1 {
            tw /= 2;
        } else {
            return None;
        }
    }
}

/// Tiled max-pool kernels: a grid-stride loop over all tiles (`p.tile_*` set).
pub fn pool_tile(p: &GoPoolParams, kind: PoolKernel) -> Option<Launch> {
    let (rows, cols) = match kind {
        PoolKernel::Forward => (nonneg(p.ho), nonneg(p.wo)),
        PoolKernel::Grad | PoolKernel::GradStored => (nonneg(p.hi), nonneg(p.wi)),
    };
    let t = |v: i32| nonneg(v as i64).max(1);
    let tiles = nonneg(p.n)
        * ceil_div(nonneg(p.c), t(p.tile_c))
        * ceil_div(rows, t(p.tile_h))
        * ceil_div(cols, t(p.tile_w));
    (tiles > 0).then(|| Launch {
        grid: (cap(tiles, MAX_GRID_X), 1, 1),
        block: (BLOCK, 1, 1),
    })
}

/// Whether `max_pool_direct_k3_forward_*` can run `p`: its output rows (`n*c*ho` or
/// `n*ho`) fit 32 bits and an image of x fits 32-bit indexing.
pub fn pool_direct_fits(p: &GoPoolParams) -> bool {
    let nchw = p.layout == GO_LAYOUT_NCHW as i32;
    let planes = if nchw {
        nonneg(p.n).checked_mul(nonneg(p.c))
    } else {
        Some(nonneg(p.n))
    };
    let rows = planes.and_then(|v| v.checked_mul(nonneg(p.ho)));
    let image = nonneg(p.c)
        .checked_mul(nonneg(p.hi))
        .and_then(|v| v.checked_mul(nonneg(p.wi)));
    rows.is_some_and(|r| r <= u32::MAX as u64)
        && image.is_some_and(|v| v <= i32::MAX as u64)
        && nonneg(p.wo)
            .checked_mul(nonneg(p.c))
            .is_some_and(|v| v <= i32::MAX as u64)
}

/// `max_pool_direct_k3_forward_*`: row-blocked over a row of outputs (`wo`, or `wo*c`)
/// and the output rows.
pub fn pool_direct(p: &GoPoolParams) -> Option<Launch> {
    let nchw = p.layout == GO_LAYOUT_NCHW as i32;
    let (inner, planes) = if nchw {
        (nonneg(p.wo), nonneg(p.n) * nonneg(p.c))
    } else {
        (nonneg(p.wo) * nonneg(p.c), nonneg(p.n))
    };
    row_blocked(inner, planes * nonneg(p.ho))
}

/// `conv2d_forward_*`: one thread per output element.
pub fn conv_forward(p: &GoConvParams) -> Option<Launch> {
    linear(nonneg(p.n) * nonneg(p.co) * nonneg(p.ho) * nonneg(p.wo))
}

/// The stride phases of `conv2d_backprop_input` that hold dx pixels (`go_conv_phase_count`
/// in `kernels/conv.cu`: `min(sh, hi) x min(sw, wi)`), the kernels' grid.z range.
pub fn conv_phases(p: &GoConvParams) -> u64 {
    let (sh, sw) = (nonneg(p.sh).max(1), nonneg(p.sw).max(1));
    sh.min(nonneg(p.hi)) * sw.min(nonneg(p.wi))
}

/// `conv2d_backprop_input_*`: x over pixel tiles of the largest stride phase, y over
/// (group, channel tile), z over the stride phases with pixels ([`conv_phases`]).
pub fn conv_backprop_input(p: &GoConvParams) -> Option<Launch> {
    let (sh, sw) = (nonneg(p.sh).max(1), nonneg(p.sw).max(1));
    let groups = nonneg(p.groups).max(1);
    let pix = nonneg(p.n) * ceil_div(nonneg(p.hi), sh) * ceil_div(nonneg(p.wi), sw);
    let cig = nonneg(p.ci) / groups;
    let ctiles = groups * ceil_div(cig, GO_CONV_TILE_C as u64);
    (pix > 0 && ctiles > 0).then(|| Launch {
        grid: (
            cap(ceil_div(pix, GO_CONV_TILE_P as u64), MAX_GRID_X),
            cap(ctiles, MAX_GRID_YZ),
            cap(conv_phases(p), MAX_GRID_YZ),
        ),
        block: (BLOCK, 1, 1),
    })
}

/// The tensor-core kernels `conv2d_backprop_input_tc_*` (`forward = false`) and
/// `conv2d_forward_tc_*` (`forward = true`), compute_80+ images only: x over
/// `GO_TC_TILE_M`-pixel tiles (of the largest stride phase for backprop_input, of all
/// output pixels for the forward), y over (group, `GO_TC_TILE_N`-channel tile), z over the
/// stride phases (one for the forward); `GO_TC_BLOCK_THREADS` threads. The kernels
/// grid-stride on every axis, so a capped grid stays correct.
pub fn conv_tc(p: &GoConvParams, forward: bool) -> Option<Launch> {
    conv_tc_tiled(p, forward, (GO_TC_TILE_M, GO_TC_BLOCK_THREADS))
}

/// The wide lean kernel `conv2d_backprop_input_tc_vec_wide_*` and the wgmma one
/// `conv2d_backprop_input_tc_vec_wgmma_*` (the same block tile; `forward` false, the
/// parameter keeps [`conv_tc`]'s shape): as [`conv_tc`] with `GO_TC_WIDE_TILE_M`-pixel tiles
/// on `GO_TC_WIDE_THREADS` threads.
pub fn conv_tc_wide(p: &GoConvParams, forward: bool) -> Option<Launch> {
    conv_tc_tiled(p, forward, (GO_TC_WIDE_TILE_M, GO_TC_WIDE_THREADS))
}

/// The tall lean kernels `conv2d_backprop_input_tc_vec_tall_*` (`forward` false) and
/// `conv2d_forward_tc_vec_tall_*` (`forward` true): as [`conv_tc`] with
/// `GO_TC_TALL_TILE_M`-pixel tiles on `GO_TC_BLOCK_THREADS` threads.
pub fn conv_tc_tall(p: &GoConvParams, forward: bool) -> Option<Launch> {
    conv_tc_tiled(p, forward, (GO_TC_TALL_TILE_M, GO_TC_BLOCK_THREADS))
}

/// The square lean kernels `conv2d_backprop_input_tc_vec_square_*` (`forward` false) and
/// `conv2d_forward_tc_vec_square_*` (`forward` true): as [`conv_tc`] with
/// `GO_TC_SQUARE_TILE_M`-pixel tiles on `GO_TC_SQUARE_THREADS` threads.
pub fn conv_tc_square(p: &GoConvParams, forward: bool) -> Option<Launch> {
    conv_tc_tiled(p, forward, (GO_TC_SQUARE_TILE_M, GO_TC_SQUARE_THREADS))
}

/// Whether `kernel` (an entry point's name) is a warp-specialized conv kernel, whose stages
/// live in dynamic shared memory ([`conv_tc_ws_smem_bytes`]).
pub fn is_conv_tc_ws_kernel(kernel: &str) -> bool {
    kernel.contains("_tc_vec_ws_") || kernel.contains("_tc_vec_nchw_ws_")
}

/// Bytes of one stage of warp-specialized kernel `kernel`: 12 KB (128 + 64 rows of 64
/// bytes), or for exact f32 (`conv2d_{backprop_input,forward}_tc_vec{,_nchw}_ws_f32`,
/// 3xTF32) 24 KB, the small tf32 parts beside each stage.
pub fn conv_tc_ws_stage_bytes(kernel: &str) -> u32 {
    if kernel.ends_with("_ws_f32") {
        GO_TC_WS_SPLIT_STAGE_BYTES
    } else {
        GO_TC_WS_STAGE_BYTES
    }
}

/// The most stages warp-specialized kernel `kernel` takes: `GO_TC_WS_MAX_STAGES`, in at most
/// that many 12 KB stages' bytes (exact f32: 4).
pub fn conv_tc_ws_max_stages(kernel: &str) -> u32 {
    GO_TC_WS_MAX_STAGES * GO_TC_WS_STAGE_BYTES / conv_tc_ws_stage_bytes(kernel)
}

/// The fewest stages warp-specialized kernel `kernel` takes (fewer trap): 2, or for f32 (the
/// producer publishes a chunk `GO_TC_WS_SPLIT_LAG` chunks behind its copies, and the
/// consumers hold a chunk's stage until the next one is published) `GO_TC_WS_SPLIT_LAG + 1`.
pub fn conv_tc_ws_min_stages(kernel: &str) -> u32 {
    if kernel.ends_with("_f32") {
        GO_TC_WS_SPLIT_LAG + 1
    } else {
        2
    }
}

/// Bytes of dynamic shared memory warp-specialized kernel `kernel` ([`conv_tc_ws`]) takes for
/// `stages` stages (clamped to [`conv_tc_ws_min_stages`] to [`conv_tc_ws_max_stages`]): the
/// stages
/// ([`conv_tc_ws_stage_bytes`] each) and the slack that aligns them to the 64-byte swizzle's
/// 512-byte atoms (the kernel takes as many whole stages as it is given, so the count is the
/// launch's alone).
pub fn conv_tc_ws_smem_bytes(kernel: &str, stages: u32) -> u32 {
    GO_TC_WS_SMEM_ALIGN
        + stages.clamp(conv_tc_ws_min_stages(kernel), conv_tc_ws_max_stages(kernel))
            * conv_tc_ws_stage_bytes(kernel)
}

/// The most dynamic shared memory kernel `kernel` may be launched with (the runtime raises
/// the function's limit to it on load): the warp-specialized kernels' at their most stages,
/// the halo kernels' `GO_TC_HALO_MAX_SMEM`, 0 for every other kernel.
pub fn max_dynamic_smem_bytes(kernel: &str) -> u32 {
    if is_conv_tc_ws_kernel(kernel) {
        conv_tc_ws_smem_bytes(kernel, GO_TC_WS_MAX_STAGES)
    } else if is_conv_tc_halo_kernel(kernel) {
        GO_TC_HALO_MAX_SMEM
    } else {
        0
    }
}

/// Whether `kernel` (an entry point's name) is a halo conv kernel
/// (`conv2d_{backprop_input,forward}_tc_vec_halo_*`, NHWC, and `..._tc_vec_nchw_halo_*`),
/// whose filter and halo buffers live in dynamic shared memory ([`conv_tc_halo_smem_bytes`]).
pub fn is_conv_tc_halo_kernel(kernel: &str) -> bool {
    kernel.contains("_tc_vec_halo_") || kernel.contains("_tc_vec_nchw_halo_")
}

/// The dynamic shared memory the halo kernels (`conv2d_backprop_input_tc_vec_halo_*`,
/// `forward` false, and `conv2d_forward_tc_vec_halo_*`) take for a call with parameters `p`
/// in elements of `elem_bytes` with at most `buffers` halo buffers (2: the next tile's halo
/// copied while a tile multiplies; 1: before it, for two blocks an SM where two buffers would
/// leave room for one; NCHW and f32 always 1, their copies going through registers), or
/// `None` where they do not serve it: 16-bit elements, or f32 under the TF32 opt-in
/// (`p.f32_precision`; the `_halo_tf32_f32` kernels), NHWC or NCHW (a source plane of at
/// most `GO_TC_HALO_NCHW_MAX_PLANE` elements: 32-bit offsets), the source read at unit
/// strides (the forward at stride 1; backprop_input's phases always), a group's source
/// channels `jlen` in 16-byte planes (8 channels; f32 4) whose count divides
/// `GO_TC_HALO_THREADS`, and at
/// most `GO_TC_HALO_MAX_SMEM` bytes with one buffer: `GO_TC_HALO_SMEM_ALIGN` + the filter of
/// a (phase, group, channel tile), taps x `jlen` x `GO_TC_TILE_N` elements, + `buffers` (or
/// as many as fit) halo buffers of `jlen` x (`hl` | 1) elements, `hl` = 128 + row span x
/// (`cnt_x` + column span) + column span, bounded over the phases (a phase's taps `ky0 + i
/// pky` with `pky` = `sh / gcd(sh, dh)`: at most `ceil(kh / pky)` of them, rows `pky dh / sh`
/// apart; the same along x). The kernel computes each problem's own need, takes two buffers
/// where the launch gave room for them, and traps where it gave less than one. Where
/// [`conv_tc_vec_eligible`] does not hold the kernels do not serve the call either (the
/// caller checks it).
pub fn conv_tc_halo_smem_bytes(
    p: &GoConvParams,
    forward: bool,
    elem_bytes: usize,
    buffers: u32,
) -> Option<u32> {
    let nchw = p.layout == GO_LAYOUT_NCHW as i32;
    let tf32 = elem_bytes == 4 && p.f32_precision == GO_F32_PRECISION_TF32 as i32;
    if !(elem_bytes == 2 || tf32)
        || !(nchw || p.layout == GO_LAYOUT_NHWC as i32)
        || (forward && (p.sh, p.sw) != (1, 1))
    {
        return None;
    }
    let buffers = if nchw || tf32 { 1 } else { buffers.clamp(1, 2) };
    // NCHW's copies take 32-bit offsets within 8 source planes.
    let plane = if forward {
        nonneg(p.hi).saturating_mul(nonneg(p.wi))
    } else {
        nonneg(p.ho).saturating_mul(nonneg(p.wo))
    };
    if nchw && plane > u64::from(GO_TC_HALO_NCHW_MAX_PLANE) {
        return None;
    }
    let groups = nonneg(p.groups).max(1);
    let jlen = if forward { nonneg(p.ci) } else { nonneg(p.co) } / groups;
    let plane_channels = 16 / elem_bytes as u64;
    let planes = jlen / plane_channels;
    if planes == 0
        || !jlen.is_multiple_of(plane_channels)
        || !u64::from(GO_TC_HALO_THREADS).is_multiple_of(planes)
    {
        return None;
    }
    let [kh, kw, sh, sw, dh, dw] = [p.kh, p.kw, p.sh, p.sw, p.dh, p.dw].map(|v| nonneg(v).max(1));
    // Per axis: the taps of a phase at most, their source span, and the pixels of a row.
    let axis = |k: u64, s: u64, d: u64| -> (u64, u64) {
        if forward {
            (k, (k - 1) * d)
        } else {
            let period = s / gcd(s, d);
            let taps = k.div_ceil(period);
            (taps, (taps - 1) * period * d / s)
        }
    };
    let ((ty, sy), (tx, sx)) = (axis(kh, sh, dh), axis(kw, sw, dw));
    let cnt_x = if forward {
        nonneg(p.wo)
    } else {
        nonneg(p.wi).div_ceil(sw)
    };
    let wp = cnt_x.checked_add(sx)?;
    let hl = sy
        .checked_mul(wp)?
        .checked_add(u64::from(GO_TC_WIDE_TILE_M) + sx)?
        | 1;
    let elem = elem_bytes as u64;
    let filter = (ty * tx)
        .checked_mul(jlen)?
        .checked_mul(u64::from(GO_TC_TILE_N) * elem)?;
    let halo = hl.checked_mul(jlen)?.checked_mul(elem)?;
    (1..=u64::from(buffers))
        .rev()
        .filter_map(|b| {
            u64::from(GO_TC_HALO_SMEM_ALIGN)
                .checked_add(filter)?
                .checked_add(halo.checked_mul(b)?)
        })
        .find(|&bytes| bytes <= u64::from(GO_TC_HALO_MAX_SMEM))
        .map(|bytes| bytes as u32)
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The halo kernels `conv2d_backprop_input_tc_vec_halo_*` (`forward` false) and
/// `conv2d_forward_tc_vec_halo_*`: as [`conv_tc_ws`] (every phase in each block where there
/// are at most [`WS_PHASES_PER_BLOCK`]) on `GO_TC_HALO_THREADS` threads; x over the tiles,
/// which the kernel counts itself (128 slots of padded rows: a few more than the pixels'
/// 128-pixel tiles; every grid covers them, x-strided).
pub fn conv_tc_halo(p: &GoConvParams, forward: bool) -> Option<Launch> {
    conv_tc_ws(p, forward).map(|l| Launch {
        block: (GO_TC_HALO_THREADS, 1, 1),
        ..l
    })
}

/// Stride phases up to which the warp-specialized kernels' launch ([`conv_tc_ws`]) has every
/// block run every phase (grid.z 1); past it (strides near the image size), a phase a z.
pub const WS_PHASES_PER_BLOCK: u64 = 16;

/// The warp-specialized wgmma kernels `conv2d_backprop_input_tc_vec_ws_*` (`forward` false)
/// and `conv2d_forward_tc_vec_ws_*`: as [`conv_tc`] with `GO_TC_WIDE_TILE_M`-pixel tiles on
/// `GO_TC_WS_THREADS` threads (two consumer warpgroups, one producer warpgroup), and grid.z
/// 1 where the call has at most [`WS_PHASES_PER_BLOCK`] stride phases: each block runs its
/// share of every phase's pixel tiles (x-strided, as in one phase), so the phases' unequal
/// taps (W5: 4, 2, 2, 1) spread over all blocks, a one-wave grid ([`ConvTcGrid::Auto`]'s
/// choice at grid.z 1) included, and a block's producer runs from tile to tile within a
/// phase (the kernel's two block barriers come at each new phase).
pub fn conv_tc_ws(p: &GoConvParams, forward: bool) -> Option<Launch> {
    conv_tc_tiled(p, forward, (GO_TC_WIDE_TILE_M, GO_TC_WS_THREADS)).map(|l| {
        let (x, y, z) = l.grid;
        let z = if u64::from(z) <= WS_PHASES_PER_BLOCK {
            1
        } else {
            z
        };
        Launch {
            grid: (x, y, z),
            ..l
        }
    })
}

fn conv_tc_tiled(p: &GoConvParams, forward: bool, (tile_m, threads): (u32, u32)) -> Option<Launch> {
    let groups = nonneg(p.groups).max(1);
    let (pix, nlen, phases) = if forward {
        let pix = nonneg(p.n) * nonneg(p.ho) * nonneg(p.wo);
        (pix, nonneg(p.co) / groups, 1)
    } else {
        let (sh, sw) = (nonneg(p.sh).max(1), nonneg(p.sw).max(1));
        let pix = nonneg(p.n) * ceil_div(nonneg(p.hi), sh) * ceil_div(nonneg(p.wi), sw);
        (pix, nonneg(p.ci) / groups, conv_phases(p))
    };
    let ntiles = groups * ceil_div(nlen, GO_TC_TILE_N as u64);
    (pix > 0 && ntiles > 0).then(|| Launch {
        grid: (
            cap(ceil_div(pix, u64::from(tile_m)), MAX_GRID_X),
            cap(ntiles, MAX_GRID_YZ),
            cap(phases, MAX_GRID_YZ),
        ),
        block: (threads, 1, 1),
    })
}

/// `l` with grid.x capped so that the grid holds at most `resident` blocks (the blocks the
/// device runs at once: one wave; at least one block along x), for kernels that grid-stride
/// along x and set up per-block state their tiles then share: the tensor-core conv kernels'
/// (phase, group) problem and parameter check, done once per block instead of once per tile.
/// The tiles a block runs are fixed by the grid (no dynamic balancing between blocks).
pub fn one_wave(l: Launch, resident: u64) -> Launch {
    let (x, y, z) = l.grid;
    let cap_x = (resident / (u64::from(y) * u64::from(z)).max(1)).max(1);
    Launch {
        grid: (cap(u64::from(x).min(cap_x), MAX_GRID_X), y, z),
        ..l
    }
}

/// The grid of the lean tensor-core conv kernels (`GRADOPS_CUDA_CONV_TC_GRID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvTcGrid {
    /// One wave of blocks where the launch has one stride phase (every forward call,
    /// stride-1 backprop_input), one block per tile elsewhere. A block of the wave runs the
    /// tiles of its own phase, and phases differ in taps (W5: 4, 2, 2, 1), so a one-wave
    /// grid over several phases leaves the light phases' SMs idle while the heavy ones finish
    /// (an H200, 2026-11-27: W5 f32 12-23% slower), where one block per tile lets the
    /// hardware balance them; with one phase the wave saves each tile's problem setup (W4
    /// 4-13% less time; BENCHMARKS.md). (The warp-specialized kernels' launch puts every
    /// phase in each block, grid.z 1: one wave for them, see [`conv_tc_ws`].)
    Auto,
    /// One block per tile.
    Tiles,
    /// One wave of resident blocks.
    Wave,
}

/// The lean tensor-core kernels' launch `l` under the grid choice `grid`, `resident` the
/// blocks the device runs at once: [`one_wave`] for `Wave`, and for `Auto` where the launch
/// has one stride phase (grid.z 1); `l` itself otherwise.
pub fn lean_grid(l: Launch, resident: u64, grid: ConvTcGrid) -> Launch {
    if lean_grid_is_wave(&l, grid) {
        one_wave(l, resident)
    } else {
        l
    }
}

/// Whether [`lean_grid`] caps `l` to one wave.
pub fn lean_grid_is_wave(l: &Launch, grid: ConvTcGrid) -> bool {
    match grid {
        ConvTcGrid::Wave => true,
        ConvTcGrid::Auto => l.grid.2 == 1,
        ConvTcGrid::Tiles => false,
    }
}

/// Whether the lean tensor-core kernels serve `p` (`conv2d_backprop_input_tc_vec_*` with
/// `forward = false`, `conv2d_forward_tc_vec_*` with `true`; same launch as [`conv_tc`]) for
/// elements of `elem_bytes` bytes: an HWIO filter whose rows along `co` are whole 16-byte
/// chunks (and the forward's `co / groups` too), the reduction per tap (`co / groups` or
/// `ci / groups`) a multiple of 64 bytes, NHWC sources with channels of whole 16-byte
/// chunks or NCHW ones, at most 32 taps, and the offsets the kernels keep in 32 bits
/// fitting. The rule of `go_tc_vec_params_ok` in `kernels/conv_tc.cuh`, which the kernels
/// check again (a launch outside it traps); the caller checks that the source and filter
/// addresses are 16-byte aligned.
pub fn conv_tc_vec_eligible(p: &GoConvParams, forward: bool, elem_bytes: usize) -> bool {
    const LIM: i128 = 0x7fff_ffff;
    if !matches!(elem_bytes, 2 | 4 | 8) {
        return false;
    }
    let (vec, bk) = (16 / elem_bytes as i128, 64 / elem_bytes as i128);
    let nhwc = p.layout == GO_LAYOUT_NHWC as i32;
    if (!nhwc && p.layout != GO_LAYOUT_NCHW as i32) || p.filter_layout != GO_FILTER_HWIO as i32 {
        return false;
    }
    let dims = [
        p.n, p.ci, p.hi, p.wi, p.co, p.ho, p.wo, p.kh, p.kw, p.sh, p.sw, p.dh, p.dw, p.pad_top,
        p.pad_left, p.groups,
    ];
    if dims.iter().any(|&d| !(0..LIM).contains(&(d as i128))) {
        return false;
    }
    let [n, ci, hi, wi, co, ho, wo, kh, kw, sh, sw] = [
        p.n, p.ci, p.hi, p.wi, p.co, p.ho, p.wo, p.kh, p.kw, p.sh, p.sw,
    ]
    .map(|v| v as i128);
    let groups = p.groups as i128;
    if groups < 1 || kh * kw > 32 {
        return false;
    }
    let (cig, cog) = (ci / groups, co / groups);
    let (csrc, jlen) = if forward { (ci, cig) } else { (co, cog) };
    let (hs, ws) = if forward { (hi, wi) } else { (ho, wo) };
    if (nhwc && csrc % vec != 0) || jlen % bk != 0 || co % vec != 0 || (forward && cog % vec != 0) {
        return false;
    }
    let (ymax, xmax) = if forward {
        (ho * sh, wo * sw)
    } else {
        (hi, wi)
    };
    let (plane, pix) = (hs * ws, if forward { ho * wo } else { hi * wi });
    // Row and column strides: NHWC ws * csrc and csrc, NCHW ws and 1 (planes apart).
    let (row, col, chans) = if nhwc {
        (ws * csrc, csrc, jlen)
    } else {
        (ws, 1, csrc * plane)
    };
    [
        plane,
        pix,
        cig * co,
        hs + ymax,
        ws + xmax,
        plane * csrc,
        n * pix,
        kh * kw * cig * co,
        (hs + ymax) * row + (ws + xmax) * col + chans,
    ]
    .iter()
    .all(|&v| v < LIM)
}

/// Blocks `conv2d_backprop_filter_partial_*` aims for (tiles x splits): several waves on the
/// largest GPUs. A constant, not the device's SM count, so that the split, and with it every
/// rounding, is the same on every card.
pub const CONV_FILTER_TARGET_BLOCKS: u64 = 1024;
/// Fewest chunks of `GO_CONV_FILTER_TILE_K` pixels per split (longer splits amortise the
/// tile's setup and the workspace traffic).
pub const CONV_FILTER_MIN_CHUNKS: u64 = 8;
/// Most workspace elements (all splits' partial filters together: 256 MiB in f32).
pub const CONV_FILTER_MAX_WS: u64 = 1 << 26;

/// The filter-row x channel tiles of `conv2d_backprop_filter_partial_*` (all groups).
pub fn conv_filter_tiles(p: &GoConvFilterParams) -> u64 {
    let groups = nonneg(p.groups).max(1);
    let rows = nonneg(p.kh) * nonneg(p.kw) * (nonneg(p.ci) / groups);
    let cog = nonneg(p.co) / groups;
    groups
        * ceil_div(rows, GO_CONV_FILTER_TILE_M as u64)
        * ceil_div(cog, GO_CONV_FILTER_TILE_N as u64)
}

/// The deterministic split of `conv2d_backprop_filter`'s reduction over the `n*ho*wo`
/// output pixels: `(splits, split_len)`, from the geometry alone. `split_len` is a multiple
/// of `GO_CONV_FILTER_TILE_K` and no split is empty; `(0, 0)` when there is nothing to
/// reduce (no pixel, or an empty filter).
pub fn conv_filter_split(p: &GoConvFilterParams) -> (i64, i64) {
    let npix = nonneg(p.n) * nonneg(p.ho) * nonneg(p.wo);
    let tiles = conv_filter_tiles(p);
    let groups = nonneg(p.groups).max(1);
    let flen = nonneg(p.kh) * nonneg(p.kw) * (nonneg(p.ci) / groups) * nonneg(p.co);
    if npix == 0 || tiles == 0 || flen == 0 {
        return (0, 0);
    }
    let k = GO_CONV_FILTER_TILE_K as u64;
    let chunks = ceil_div(npix, k);
    let want = ceil_div(CONV_FILTER_TARGET_BLOCKS, tiles)
        .min(chunks / CONV_FILTER_MIN_CHUNKS)
        .min(CONV_FILTER_MAX_WS / flen)
        .clamp(1, MAX_GRID_YZ);
    let split_len = ceil_div(chunks, want) * k;
    (ceil_div(npix, split_len) as i64, split_len as i64)
}

/// `conv2d_backprop_filter_partial_*`: x over filter tiles (all groups), y over splits
/// (`p.splits`).
pub fn conv_filter_partial(p: &GoConvFilterParams) -> Option<Launch> {
    let (tiles, splits) = (conv_filter_tiles(p), nonneg(p.splits));
    (tiles > 0 && splits > 0).then(|| Launch {
        grid: (cap(tiles, MAX_GRID_X), cap(splits, MAX_GRID_YZ), 1),
        block: (BLOCK, 1, 1),
    })
}

/// `conv2d_backprop_filter_partial_tc_*` and `_tc_nhwc_*` (compute_80+ images): the same grid and
/// split as [`conv_filter_partial`] (its 64 x 64 tiles are `GO_TC_TILE_M x GO_TC_TILE_N`),
/// `GO_TC_BLOCK_THREADS` threads.
pub fn conv_filter_partial_tc(p: &GoConvFilterParams) -> Option<Launch> {
    conv_filter_partial(p).map(|l| Launch {
        block: (GO_TC_BLOCK_THREADS, 1, 1),
        ..l
    })
}

/// `conv2d_backprop_filter_reduce_*`: one thread per filter element.
pub fn conv_filter_reduce(p: &GoConvFilterParams) -> Option<Launch> {
    let groups = nonneg(p.groups).max(1);
    linear(nonneg(p.kh) * nonneg(p.kw) * (nonneg(p.ci) / groups) * nonneg(p.co))
}

/// `max_pool_forward_*`: one thread per output window.
pub fn pool_forward(p: &GoPoolParams) -> Option<Launch> {
    linear(nonneg(p.n) * nonneg(p.c) * nonneg(p.ho) * nonneg(p.wo))
}

/// `max_pool_grad_*` and `max_pool_grad_argmax_*`: one thread per dx element.
pub fn pool_grad(p: &GoPoolParams) -> Option<Launch> {
    linear(nonneg(p.n) * nonneg(p.c) * nonneg(p.hi) * nonneg(p.wi))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter_params(n: i64, c: i64, hw: i64, co: i64, stride: i64) -> GoConvFilterParams {
        let o = (hw + stride - 1) / stride;
        GoConvFilterParams {
            n,
            ci: c,
            hi: hw,
            wi: hw,
            co,
            ho: o,
            wo: o,
            kh: 3,
            kw: 3,
            sh: stride,
            sw: stride,
            dh: 1,
            dw: 1,
            groups: 1,
            ..Default::default()
        }
    }

    fn w4(ci: i64, co: i64, groups: i64) -> GoConvParams {
        GoConvParams {
            n: 32,
            ci,
            hi: 56,
            wi: 56,
            co,
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
            groups,
            layout: GO_LAYOUT_NHWC as i32,
            filter_layout: GO_FILTER_HWIO as i32,
            ..Default::default()
        }
    }

    /// The halo tile's shared memory: W4 (backprop_input and forward, 64 channels a tap:
    /// 9 x 64 x 64 filter elements, two buffers of 64 x (128 + 2 x 58 + 2 = 246, odd: 247)),
    /// W5 (stride 2 backprop_input, 128 channels: at most 2 x 2 taps a phase, 28 + 1 slots a
    /// padded row, 128 + 29 + 1 = 158, odd 159); NCHW with one buffer whatever is asked;
    /// f32 under the TF32 opt-in (4-channel planes) with one buffer, both layouts; none for
    /// the strided forward, exact f32, planes that do not divide the block (96 channels: 12)
    /// or past the limit.
    #[test]
    fn conv_tc_halo_smem() {
        let p = w4(64, 64, 1);
        let halo = |p: &GoConvParams, forward, elem| conv_tc_halo_smem_bytes(p, forward, elem, 2);
        let w4_bytes = 512 + 9 * 64 * 64 * 2 + 2 * 64 * 247 * 2;
        assert_eq!(halo(&p, false, 2), Some(w4_bytes));
        assert_eq!(halo(&p, true, 2), Some(w4_bytes));
        // One buffer: W4's filter and halo in 105 KB, two blocks an SM.
        let one = 512 + 9 * 64 * 64 * 2 + 64 * 247 * 2;
        assert_eq!(conv_tc_halo_smem_bytes(&p, false, 2, 1), Some(one));
        assert_eq!(conv_tc_halo_smem_bytes(&p, false, 2, 0), Some(one));
        let w5 = GoConvParams {
            co: 128,
            ho: 28,
            wo: 28,
            sh: 2,
            sw: 2,
            ..p
        };
        let w5_bytes = 512 + 4 * 128 * 64 * 2 + 2 * 128 * 159 * 2;
        assert_eq!(halo(&w5, false, 2), Some(w5_bytes));
        assert_eq!(halo(&w5, true, 2), None, "strided forward");
        let nchw = GoConvParams {
            layout: GO_LAYOUT_NCHW as i32,
            ..p
        };
        assert_eq!(halo(&nchw, false, 2), Some(one));
        assert_eq!(halo(&nchw, true, 2), Some(one));
        assert_eq!(conv_tc_halo_smem_bytes(&nchw, false, 2, 1), Some(one));
        let w5_nchw = GoConvParams {
            layout: GO_LAYOUT_NCHW as i32,
            ..w5
        };
        assert_eq!(
            halo(&w5_nchw, false, 2),
            Some(512 + 4 * 128 * 64 * 2 + 128 * 159 * 2)
        );
        assert_eq!(halo(&w5_nchw, true, 2), None, "strided forward");
        assert_eq!(halo(&nchw, false, 4), None);
        // NCHW planes past 2^29 elements (the copies' 32-bit offsets; here 2^30); NHWC's
        // take them.
        let big = GoConvParams {
            hi: 1 << 20,
            wi: 1 << 10,
            ho: 1 << 20,
            wo: 1 << 10,
            ci: 32,
            co: 32,
            ..p
        };
        assert_eq!(
            halo(
                &GoConvParams {
                    layout: GO_LAYOUT_NCHW as i32,
                    ..big
                },
                false,
                2
            ),
            None
        );
        assert!(halo(&big, false, 2).is_some());
        assert_eq!(halo(&p, false, 4), None, "exact f32");
        // TF32: W4's 147,456 bytes of filter and one buffer of 64 x 247 f32 (206 KB: one
        // block an SM), whatever is asked; W5's 4 taps of 128 x 64 and 128 x 159; NCHW too.
        let tf32 = |p: &GoConvParams| GoConvParams {
            f32_precision: GO_F32_PRECISION_TF32 as i32,
            ..*p
        };
        let w4_tf32 = 512 + 9 * 64 * 64 * 4 + 64 * 247 * 4;
        for q in [&p, &nchw] {
            assert_eq!(halo(&tf32(q), false, 4), Some(w4_tf32));
            assert_eq!(halo(&tf32(q), true, 4), Some(w4_tf32));
        }
        assert_eq!(
            halo(&tf32(&w5), false, 4),
            Some(512 + 4 * 128 * 64 * 4 + 128 * 159 * 4)
        );
        assert_eq!(halo(&tf32(&w5), true, 4), None, "strided forward");
        // 16 channels: 4 planes; 48: 12, which do not divide the block; 128 at 3 x 3:
        // 294,912 bytes of filter.
        assert!(halo(&tf32(&w4(16, 16, 1)), false, 4).is_some());
        assert_eq!(halo(&tf32(&w4(48, 48, 1)), false, 4), None);
        assert_eq!(halo(&tf32(&w4(128, 128, 1)), false, 4), None);
        assert_eq!(
            halo(&tf32(&p), false, 2),
            Some(w4_bytes),
            "16-bit: the precision moot"
        );
        assert_eq!(halo(&w4(96, 96, 1), false, 2), None);
        // 256 channels a tap: 9 x 256 x 64 x 2 = 294912 bytes of filter alone.
        assert_eq!(halo(&w4(256, 256, 1), false, 2), None);
        // 128 channels: 147,456 bytes of filter; one buffer of 128 x 247 fits, two do not.
        let c128 = w4(128, 128, 1);
        let one = 512 + 9 * 128 * 64 * 2 + 128 * 247 * 2;
        assert_eq!(halo(&c128, false, 2), Some(one));
        // Groups: the channels of one (32 of 64).
        let g = w4(64, 64, 2);
        assert_eq!(
            halo(&g, false, 2),
            Some(512 + 9 * 32 * 64 * 2 + 2 * 32 * 247 * 2)
        );
        // Dilation 2 on both axes: spans of 4 rows and 4 columns.
        let d2 = GoConvParams { dh: 2, dw: 2, ..p };
        let hl = (128 + 4 * (56 + 4) + 4) | 1;
        assert_eq!(
            halo(&d2, true, 2),
            Some(512 + 9 * 64 * 64 * 2 + 2 * 64 * hl * 2)
        );
        assert_eq!(
            conv_tc_halo(&p, false).unwrap().block,
            (GO_TC_HALO_THREADS, 1, 1)
        );
        assert!(is_conv_tc_halo_kernel("conv2d_forward_tc_vec_halo_bf16"));
        assert!(is_conv_tc_halo_kernel(
            "conv2d_backprop_input_tc_vec_nchw_halo_f16"
        ));
        assert!(is_conv_tc_halo_kernel(
            "conv2d_forward_tc_vec_halo_tf32_f32"
        ));
        assert!(is_conv_tc_halo_kernel(
            "conv2d_backprop_input_tc_vec_nchw_halo_tf32_f32"
        ));
        assert!(!is_conv_tc_halo_kernel(
            "conv2d_backprop_input_tc_vec_nchw_wgmma_f16"
        ));
        assert!(!is_conv_tc_ws_kernel("conv2d_forward_tc_vec_halo_bf16"));
        assert_eq!(
            max_dynamic_smem_bytes("conv2d_backprop_input_tc_vec_halo_f16"),
            GO_TC_HALO_MAX_SMEM
        );
    }

    /// The wide, tall and square tiles (128 pixels) halve grid.x; the wide one on 8 warps,
    /// the square one on 2.
    #[test]
    fn wide_tiles_halve_grid_x() {
        let p = w4(64, 64, 1);
        let (l, w) = (
            conv_tc(&p, false).unwrap(),
            conv_tc_wide(&p, false).unwrap(),
        );
        assert_eq!(w.grid.0, l.grid.0.div_ceil(2));
        assert_eq!((w.grid.1, w.grid.2), (l.grid.1, l.grid.2));
        assert_eq!(w.block, (GO_TC_WIDE_THREADS, 1, 1));
        assert_eq!(l.block, (GO_TC_BLOCK_THREADS, 1, 1));
        let t = conv_tc_tall(&p, false).unwrap();
        assert_eq!((t.grid, t.block), (w.grid, l.block));
        let s = conv_tc_square(&p, false).unwrap();
        assert_eq!((s.grid, s.block), (w.grid, (GO_TC_SQUARE_THREADS, 1, 1)));
    }

    /// The wave grid caps grid.x only, to the resident blocks over grid.y x grid.z, at least
    /// one.
    #[test]
    fn one_wave_caps_x_only() {
        let l = Launch {
            grid: (1568, 1, 4),
            block: (128, 1, 1),
        };
        // 132 SMs x 4 blocks: 528 resident, 4 phases along z: 132 blocks along x.
        assert_eq!(one_wave(l, 528).grid, (132, 1, 4));
        assert_eq!(one_wave(l, 528).block, (128, 1, 1));
        // A grid already within one wave is kept; y x z beyond it leaves one block along x.
        assert_eq!(one_wave(l, 1 << 20).grid, (1568, 1, 4));
        let wide = Launch {
            grid: (50, 600, 1),
            block: (128, 1, 1),
        };
        assert_eq!(one_wave(wide, 528).grid, (1, 600, 1));
        assert_eq!(one_wave(l, 0).grid, (1, 1, 4));
    }

    /// Auto: one wave for one stride phase, one block per tile for several; the overrides
    /// apply to both.
    #[test]
    fn lean_grid_waves_one_phase_only_by_default() {
        let phases = |z| Launch {
            grid: (1568, 1, z),
            block: (128, 1, 1),
        };
        assert_eq!(
            lean_grid(phases(1), 528, ConvTcGrid::Auto).grid,
            (528, 1, 1)
        );
        assert_eq!(
            lean_grid(phases(4), 528, ConvTcGrid::Auto).grid,
            (1568, 1, 4)
        );
        assert_eq!(
            lean_grid(phases(4), 528, ConvTcGrid::Wave).grid,
            (132, 1, 4)
        );
        assert_eq!(
            lean_grid(phases(1), 528, ConvTcGrid::Tiles).grid,
            (1568, 1, 1)
        );
        assert!(lean_grid_is_wave(&phases(1), ConvTcGrid::Auto));
        assert!(!lean_grid_is_wave(&phases(2), ConvTcGrid::Auto));
    }

    /// The warp-specialized kernels' launch: every phase in every block up to
    /// WS_PHASES_PER_BLOCK phases (grid.z 1, so Auto gives it one wave), a phase a z past it;
    /// x and y as the wide tiles'.
    /// The warp-specialized kernels' dynamic shared memory: the slack and whole stages,
    /// clamped to the kernel's range; two blocks fit a compute capability 9.0 SM (228 KB,
    /// 1 KB of it reserved a block, and the kernel's 448 bytes of static block state) even
    /// at the most stages; no other kernel takes any.
    #[test]
    fn ws_dynamic_smem_holds_whole_stages() {
        let k = "conv2d_backprop_input_tc_vec_ws_f16";
        assert_eq!(conv_tc_ws_smem_bytes(k, 6), 512 + 6 * 12288);
        assert_eq!(conv_tc_ws_smem_bytes(k, 0), conv_tc_ws_smem_bytes(k, 2));
        assert_eq!(
            conv_tc_ws_smem_bytes(k, 99),
            conv_tc_ws_smem_bytes(k, GO_TC_WS_MAX_STAGES)
        );
        let most = max_dynamic_smem_bytes(k);
        assert_eq!(most, conv_tc_ws_smem_bytes(k, GO_TC_WS_MAX_STAGES));
        assert!(2 * (most + 1024 + 448) <= 228 * 1024, "{most}");
        assert_eq!(
            max_dynamic_smem_bytes("conv2d_forward_tc_vec_ws_bf16"),
            most
        );
        // f32: plain TF32's stages as the 16-bit ones; exact 3xTF32's twice the size (their
        // small parts), at most 4, in the same bytes.
        assert_eq!(
            max_dynamic_smem_bytes("conv2d_backprop_input_tc_vec_ws_tf32_f32"),
            most
        );
        let exact = "conv2d_backprop_input_tc_vec_ws_f32";
        assert_eq!(conv_tc_ws_max_stages(exact), 4);
        assert_eq!(conv_tc_ws_smem_bytes(exact, 6), 512 + 4 * 24576);
        assert_eq!(conv_tc_ws_smem_bytes(exact, 3), 512 + 3 * 24576);
        assert_eq!(conv_tc_ws_smem_bytes(exact, 2), 512 + 3 * 24576);
        let tf32 = "conv2d_backprop_input_tc_vec_ws_tf32_f32";
        assert_eq!(conv_tc_ws_smem_bytes(tf32, 2), 512 + 3 * 12288);
        assert_eq!(conv_tc_ws_min_stages(k), 2);
        assert_eq!(max_dynamic_smem_bytes(exact), most);
        // The forward's f32 kernels alike.
        let fwd_exact = "conv2d_forward_tc_vec_ws_f32";
        assert_eq!(conv_tc_ws_smem_bytes(fwd_exact, 6), 512 + 4 * 24576);
        assert_eq!(conv_tc_ws_min_stages(fwd_exact), 3);
        let fwd_tf32 = "conv2d_forward_tc_vec_ws_tf32_f32";
        assert_eq!(conv_tc_ws_smem_bytes(fwd_tf32, 2), 512 + 3 * 12288);
        assert_eq!(conv_tc_ws_smem_bytes(fwd_tf32, 8), 512 + 8 * 12288);
        // NCHW's f32 kernels alike.
        for (k, stage) in [
            ("conv2d_backprop_input_tc_vec_nchw_ws_f32", 24576),
            ("conv2d_forward_tc_vec_nchw_ws_f32", 24576),
            ("conv2d_backprop_input_tc_vec_nchw_ws_tf32_f32", 12288),
            ("conv2d_forward_tc_vec_nchw_ws_tf32_f32", 12288),
        ] {
            assert!(is_conv_tc_ws_kernel(k), "{k}");
            assert_eq!(conv_tc_ws_stage_bytes(k), stage, "{k}");
            assert_eq!(conv_tc_ws_min_stages(k), 3, "{k}");
            assert_eq!(max_dynamic_smem_bytes(k), most, "{k}");
        }
        for k in [
            "conv2d_forward_tc_vec_nchw_wgmma_f32",
            "conv2d_forward_tc_vec_wgmma_f16",
            "conv2d_backprop_input_tc_vec_tall_f16",
        ] {
            assert_eq!(max_dynamic_smem_bytes(k), 0, "{k}");
        }
    }

    #[test]
    fn ws_launch_runs_every_phase_in_each_block() {
        let w5 = GoConvParams {
            sh: 2,
            sw: 2,
            ..w4(64, 128, 1)
        };
        for forward in [false, true] {
            let ws = conv_tc_ws(&w5, forward).unwrap();
            let wide = conv_tc_wide(&w5, forward).unwrap();
            assert_eq!((ws.grid.0, ws.grid.1), (wide.grid.0, wide.grid.1));
            assert_eq!(ws.grid.2, 1);
            assert_eq!(ws.block, (GO_TC_WS_THREADS, 1, 1));
            assert!(lean_grid_is_wave(&ws, ConvTcGrid::Auto));
        }
        assert_eq!(conv_tc_wide(&w5, false).unwrap().grid.2, 4);
        let strided = GoConvParams {
            sh: 5,
            sw: 5,
            ..w4(64, 64, 1)
        };
        assert_eq!(conv_phases(&strided), 25);
        assert!(conv_phases(&strided) > WS_PHASES_PER_BLOCK);
        assert_eq!(conv_tc_ws(&strided, false).unwrap().grid.2, 25);
    }

    /// Only the stride phases with pixels are launched: a stride past the image gives
    /// `min(s, size)` phases per axis, not `s`.
    #[test]
    fn conv_phases_with_pixels() {
        let p = w4(64, 64, 1);
        assert_eq!(conv_phases(&p), 1);
        let s2 = GoConvParams { sh: 2, sw: 2, ..p };
        assert_eq!(conv_phases(&s2), 4);
        let huge = GoConvParams {
            hi: 4,
            wi: 6,
            sh: 1 << 40,
            sw: 3,
            ..p
        };
        assert_eq!(conv_phases(&huge), 12);
        assert_eq!(conv_backprop_input(&huge).unwrap().grid.2, 12);
        assert_eq!(conv_tc(&huge, false).unwrap().grid.2, 12);
    }

    /// The lean kernels' rule: NHWC + HWIO, whole 16-byte chunks and 64-byte stages per
    /// element size, taps and 32-bit limits.
    #[test]
    fn conv_tc_vec_rule() {
        let p = w4(64, 64, 1);
        for e in [2, 4, 8] {
            assert!(conv_tc_vec_eligible(&p, false, e) && conv_tc_vec_eligible(&p, true, e));
        }
        assert!(!conv_tc_vec_eligible(&p, false, 1), "no 1-byte kernels");
        let nchw = GoConvParams {
            layout: GO_LAYOUT_NCHW as i32,
            ..p
        };
        // NCHW sources load through registers: the same rule.
        assert!(conv_tc_vec_eligible(&nchw, false, 2) && conv_tc_vec_eligible(&nchw, true, 8));
        assert!(!conv_tc_vec_eligible(
            &GoConvParams { layout: 7, ..p },
            false,
            2
        ));
        let oihw = GoConvParams {
            filter_layout: 1,
            ..p
        };
        assert!(!conv_tc_vec_eligible(&oihw, true, 2));
        // backprop_input reduces over co / groups (f16: 32 a stage, f32: 16, f64: 8).
        let q = w4(64, 48, 1);
        assert!(!conv_tc_vec_eligible(&q, false, 2) && conv_tc_vec_eligible(&q, false, 4));
        assert!(
            conv_tc_vec_eligible(&q, true, 2),
            "the forward reduces over ci"
        );
        // The forward's B rows are co / groups: whole 16-byte chunks.
        let g = w4(64, 36, 2);
        assert!(!conv_tc_vec_eligible(&g, true, 2) && conv_tc_vec_eligible(&g, true, 8));
        // At most 32 taps; 32-bit offsets within an image.
        let big_k = GoConvParams { kh: 5, kw: 7, ..p };
        assert!(!conv_tc_vec_eligible(&big_k, false, 4));
        let huge = GoConvParams {
            hi: 1 << 16,
            wi: 1 << 16,
            ho: 1 << 16,
            wo: 1 << 16,
            ..p
        };
        assert!(!conv_tc_vec_eligible(&huge, false, 2));
        let pad = GoConvParams { pad_top: -1, ..p };
        assert!(!conv_tc_vec_eligible(&pad, false, 2));
    }

    /// The split covers every pixel, in whole chunks, with no empty split, and depends on
    /// the geometry only.
    #[test]
    fn conv_filter_split_covers_the_pixels() {
        for (n, c, hw, co, s) in [
            (32, 64, 56, 64, 1),
            (32, 64, 56, 128, 2),
            (1, 3, 5, 2, 1),
            (2, 1, 1, 1, 1),
            (8, 512, 7, 512, 1),
        ] {
            let p = filter_params(n, c, hw, co, s);
            let (splits, len) = conv_filter_split(&p);
            let npix = p.n * p.ho * p.wo;
            assert!(splits >= 1 && len > 0 && len % GO_CONV_FILTER_TILE_K as i64 == 0);
            assert!(
                splits * len >= npix && (splits - 1) * len < npix,
                "{splits} x {len}"
            );
            assert!(splits as u64 * conv_filter_tiles(&p) <= 2 * CONV_FILTER_TARGET_BLOCKS + 64);
            assert_eq!(conv_filter_split(&p), (splits, len));
        }
        // W7 at batch 32: 9 tiles, so ~114 splits of ~880 pixels.
        let (splits, len) = conv_filter_split(&filter_params(32, 64, 56, 64, 1));
        assert_eq!(conv_filter_tiles(&filter_params(32, 64, 56, 64, 1)), 9);
        assert!(splits > 100 && len >= 8 * 16, "{splits} x {len}");
    }
}

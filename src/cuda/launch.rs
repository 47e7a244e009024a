//! Launch geometry of every kernel: pure functions, no driver calls, shared by the CUDA
//! runtime and the host emulator test (tests/emulated_kernels.rs) so both run the same
//! grids. Every kernel uses grid-stride loops, so capping a grid never loses work.

use super::params::{
    GoConvParams, GoPoolParams, GoResizeParams, GO_BLOCK_THREADS, GO_CONV_TILE_C, GO_CONV_TILE_P,
    GO_LAYOUT_NCHW,
};

/// Threads per block for every kernel (matches `__launch_bounds__` in the kernels).
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

/// `conv2d_forward_*`: one thread per output element.
pub fn conv_forward(p: &GoConvParams) -> Option<Launch> {
    linear(nonneg(p.n) * nonneg(p.co) * nonneg(p.ho) * nonneg(p.wo))
}

/// `conv2d_backprop_input_*`: x over pixel tiles of the largest stride phase, y over
/// (group, channel tile), z over stride phases.
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
            cap(sh * sw, MAX_GRID_YZ),
        ),
        block: (BLOCK, 1, 1),
    })
}

/// `max_pool_forward_*`: one thread per output window.
pub fn pool_forward(p: &GoPoolParams) -> Option<Launch> {
    linear(nonneg(p.n) * nonneg(p.c) * nonneg(p.ho) * nonneg(p.wo))
}

/// `max_pool_grad_*` and `max_pool_grad_argmax_*`: one thread per dx element.
pub fn pool_grad(p: &GoPoolParams) -> Option<Launch> {
    linear(nonneg(p.n) * nonneg(p.c) * nonneg(p.hi) * nonneg(p.wi))
}

//! Kernel emulation: the real .cu kernel bodies, compiled as host C++ with
//! AddressSanitizer + UBSan (emu/runner.cpp, emu/cuda_emu.h), run over their real grids
//! on the CPU (a block's threads as fibers with real barriers for __syncthreads), compared
//! with a float64 reference on random shapes, every dtype (f16, bf16, f32, f64) and both layouts. Each case
//! also runs on a deliberately tiny grid to exercise the grid-stride loops. Output
//! buffers start as NaN, so an element a kernel never writes fails the comparison, and
//! every buffer is an exact-size heap block, so an out-of-bounds index fails under ASan.
//!
//! Needs g++ (C++20) and the CUDA headers (cuda_fp16.h, cuda_bf16.h): from the project toolchain
//! (`bash scripts/install-cuda-toolchain.sh`), CUDA_HOME or CUDA_PATH. Without them the
//! tests print that they skipped (and fail under GRADOPS_REQUIRE_CUDA=1).
//! GRADOPS_EMU_CASES sets the number of random cases per kernel family (default 12).

#![allow(dead_code, clippy::too_many_arguments)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

mod built {
    #![allow(dead_code)]
    include!(concat!(env!("OUT_DIR"), "/gradops_kernels.rs"));
}

#[path = "../src/cuda/launch.rs"]
mod launch;
#[path = "../src/cuda/params.rs"]
#[allow(
    clippy::all,
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code
)]
mod params;
#[path = "common/wgmma_kernels.rs"]
mod wgmma_kernels;

use params::{GoConvFilterParams, GoConvParams, GoPoolParams, GoResizeParams};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const NCHW: i32 = params::GO_LAYOUT_NCHW as i32;
const NHWC: i32 = params::GO_LAYOUT_NHWC as i32;

// ------------------------------------------------------------------ runner build ----

fn require_cuda() -> bool {
    matches!(
        std::env::var("GRADOPS_REQUIRE_CUDA").as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    )
}

fn cuda_include() -> Option<PathBuf> {
    let mut cands = Vec::new();
    if !built::NVCC_PATH.is_empty() {
        if let Some(bin) = Path::new(built::NVCC_PATH).parent() {
            cands.push(bin.join("../include"));
        }
    }
    for v in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = std::env::var_os(v) {
            cands.push(PathBuf::from(h).join("include"));
        }
    }
    cands.push(PathBuf::from(ROOT).join(".cuda-toolchain/nvidia/cu13/include"));
    cands.into_iter().find(|p| p.join("cuda_fp16.h").is_file())
}

/// A build-time variant of the kernels (`-D` flags) the emulator can be built with; the
/// default build has none.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum EmuBuild {
    Default,
    /// `GO_TC_WGMMA_INFLIGHT=0` (kernels/conv_tc.cuh): the wgmma tiles issue a stage's wgmma
    /// after the refill, no group left in flight (the default build leaves one).
    WgmmaRefillFirst,
    /// `GO_TC_WGMMA_BARRIERS=1` (kernels/conv_tc.cuh): the lean wgmma tile takes one block
    /// barrier an iteration, refilling the stage read two iterations back.
    WgmmaOneBarrier,
    /// `GO_TC_WGMMA_F32_RS=1` (kernels/conv_tc.cuh): the f32 wgmma tile reads A into
    /// registers and splits it there (wgmma's register-source form); only B is split in place.
    WgmmaF32Rs,
}

impl EmuBuild {
    fn defines(self) -> &'static [&'static str] {
        match self {
            EmuBuild::Default => &[],
            EmuBuild::WgmmaRefillFirst => &["-DGO_TC_WGMMA_INFLIGHT=0"],
            EmuBuild::WgmmaOneBarrier => &["-DGO_TC_WGMMA_BARRIERS=1"],
            EmuBuild::WgmmaF32Rs => &["-DGO_TC_WGMMA_F32_RS=1"],
        }
    }
}

thread_local! {
    /// The build [`run_kernel`] runs on this test's thread.
    static EMU_BUILD: std::cell::Cell<EmuBuild> = const { std::cell::Cell::new(EmuBuild::Default) };
}

/// Selects this thread's [`EmuBuild`] until dropped, then restores the one before: under
/// `--test-threads=1` every test shares one thread, and the tests after must run the default.
struct EmuBuildScope(EmuBuild);

impl EmuBuildScope {
    fn enter(build: EmuBuild) -> Self {
        EmuBuildScope(EMU_BUILD.with(|b| b.replace(build)))
    }
}

impl Drop for EmuBuildScope {
    fn drop(&mut self) {
        EMU_BUILD.with(|b| b.set(self.0));
    }
}

/// Builds the ASan runner of this thread's [`EmuBuild`] once per test process. Err(reason)
/// means skip.
fn runner() -> Result<&'static Path, String> {
    static RUNNERS: [OnceLock<Result<PathBuf, String>>; 4] = [const { OnceLock::new() }; 4];
    let build = EMU_BUILD.with(|b| b.get());
    RUNNERS[build as usize]
        .get_or_init(|| {
            let inc = cuda_include().ok_or_else(|| {
                "no CUDA headers (cuda_fp16.h): run `bash scripts/install-cuda-toolchain.sh`"
                    .to_string()
            })?;
            let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
            let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
                .join(format!("gradops-emu-runner-{}", build as usize));
            let root = Path::new(ROOT);
            // -g1 (line tables): AddressSanitizer's reports keep their file:line, and each
            // runner builds in two thirds of -g's time (four runners, the most of this
            // test's CPU time in CI).
            let status = Command::new(&cxx)
                .args(["-std=c++20", "-O1", "-g1", "-fno-omit-frame-pointer"])
                .args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"])
                .args([
                    "-Wall",
                    "-Wextra",
                    "-Wno-unknown-pragmas",
                    "-Werror",
                    "-pthread",
                ])
                .args(build.defines())
                .arg("-I")
                .arg(root.join("kernels"))
                .arg("-I")
                .arg(&inc)
                .arg("-I")
                .arg(inc.join("cccl"))
                .arg(root.join("emu/runner.cpp"))
                .arg("-o")
                .arg(&out)
                .status()
                .map_err(|e| format!("cannot run {cxx}: {e}"))?;
            if !status.success() {
                // A compile error in the kernels or the harness is a failure, not a skip.
                panic!("building the emulator ({build:?}) with {cxx} failed ({status})");
            }
            Ok(out)
        })
        .as_ref()
        .map(|p| p.as_path())
        .map_err(|e| e.clone())
}

fn runner_or_skip(test: &str) -> Option<&'static Path> {
    match runner() {
        Ok(p) => Some(p),
        Err(reason) => {
            let msg = format!("SKIPPED {test}: {reason}");
            assert!(!require_cuda(), "GRADOPS_REQUIRE_CUDA=1 but {msg}");
            eprintln!("{msg}");
            println!("{msg}");
            None
        }
    }
}

// ------------------------------------------------------------------ job protocol ----

enum BufSpec {
    In(Vec<u8>),
    Out(usize),
}

fn as_bytes<P: Copy>(p: &P) -> Vec<u8> {
    // SAFETY: P is a #[repr(C)] plain-old-data params struct (integers only, explicit
    // padding fields), so all size_of::<P>() bytes are initialised.
    unsafe {
        std::slice::from_raw_parts(p as *const P as *const u8, std::mem::size_of::<P>()).to_vec()
    }
}

/// Runs `kernel` in the emulator; returns every buffer's final bytes.
fn run_kernel(kernel: &str, l: launch::Launch, params: &[u8], bufs: &[BufSpec]) -> Vec<Vec<u8>> {
    let out = run_job(kernel, l, params, bufs);
    assert!(
        out.status.success(),
        "{kernel} grid {:?}: emulator failed ({}):\n{}",
        l.grid,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let mut res = Vec::new();
    let mut s = &out.stdout[..];
    for _ in bufs {
        let len = u64::from_le_bytes(s[..8].try_into().unwrap()) as usize;
        res.push(s[8..8 + len].to_vec());
        s = &s[8 + len..];
    }
    res
}

/// Runs `kernel` in the emulator and returns the runner's exit status and output, whatever
/// they are (it fails the test only if the runner hangs).
fn run_job(
    kernel: &str,
    l: launch::Launch,
    params: &[u8],
    bufs: &[BufSpec],
) -> std::process::Output {
    let exe = runner().expect("runner");
    KERNELS_RUN.with(|k| k.borrow_mut().insert(kernel.to_string()));
    let mut job = Vec::new();
    job.extend((kernel.len() as u32).to_le_bytes());
    job.extend(kernel.as_bytes());
    for v in [
        l.grid.0,
        l.grid.1,
        l.grid.2,
        l.block.0,
        l.block.1,
        l.block.2,
        dynamic_smem_of(kernel),
    ] {
        job.extend(v.to_le_bytes());
    }
    job.extend((params.len() as u32).to_le_bytes());
    job.extend(params);
    job.extend((bufs.len() as u32).to_le_bytes());
    for b in bufs {
        match b {
            BufSpec::In(d) => {
                job.extend((d.len() as u64).to_le_bytes());
                job.push(0);
                job.extend(d);
            }
            BufSpec::Out(n) => {
                job.extend((*n as u64).to_le_bytes());
                job.push(1);
            }
        }
    }
    let mut child = Command::new(exe)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env(
            "ASAN_OPTIONS",
            "detect_leaks=1:abort_on_error=0:halt_on_error=1",
        )
        .spawn()
        .expect("spawn emulator");
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&job);
    });
    // Watchdog: fail instead of hang. (A barrier not every thread reaches makes the runner
    // abort by itself: emu/cuda_emu.h.)
    let start = Instant::now();
    let pid = child.id();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let d2 = done.clone();
    let watchdog = std::thread::spawn(move || {
        while !d2.load(std::sync::atomic::Ordering::Relaxed) {
            if start.elapsed() > Duration::from_secs(300) {
                let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    });
    let out = child.wait_with_output().expect("emulator output");
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let timed_out = watchdog.join().unwrap();
    writer.join().unwrap();
    assert!(
        !timed_out,
        "{kernel}: emulator ran past 300 s (a loop that never ends?)"
    );
    out
}

// ------------------------------------------------------------------ dtypes, rng ----

#[derive(Clone, Copy, Debug, PartialEq)]
enum Dt {
    F16,
    BF16,
    F32,
    F64,
}
const DTS: [Dt; 4] = [Dt::F16, Dt::BF16, Dt::F32, Dt::F64];

impl Dt {
    fn suffix(self) -> &'static str {
        match self {
            Dt::F16 => "f16",
            Dt::BF16 => "bf16",
            Dt::F32 => "f32",
            Dt::F64 => "f64",
        }
    }
    fn size(self) -> usize {
        match self {
            Dt::F16 | Dt::BF16 => 2,
            Dt::F32 => 4,
            Dt::F64 => 8,
        }
    }
    fn tol(self) -> f64 {
        match self {
            Dt::F16 => 2e-3,
            Dt::BF16 => 1e-2,
            Dt::F32 => 1e-5,
            Dt::F64 => 1e-10,
        }
    }
    /// Round to this type (the reference works on the rounded inputs).
    fn round(self, v: f64) -> f64 {
        match self {
            Dt::F16 => half::f16::from_f64(v).to_f64(),
            Dt::BF16 => <half::bf16 as gradops::Element>::from_f64(v).to_f64(),
            Dt::F32 => v as f32 as f64,
            Dt::F64 => v,
        }
    }
    fn acc_round(self, v: f64) -> f64 {
        match self {
            Dt::F64 => v,
            _ => v as f32 as f64,
        }
    }
    fn encode(self, v: &[f64]) -> Vec<u8> {
        let mut out = Vec::with_capacity(v.len() * self.size());
        for &x in v {
            match self {
                Dt::F16 => out.extend(half::f16::from_f64(x).to_le_bytes()),
                Dt::BF16 => out.extend(<half::bf16 as gradops::Element>::from_f64(x).to_le_bytes()),
                Dt::F32 => out.extend((x as f32).to_le_bytes()),
                Dt::F64 => out.extend(x.to_le_bytes()),
            }
        }
        out
    }
    fn encode_acc(self, v: &[f64]) -> Vec<u8> {
        match self {
            Dt::F64 => Dt::F64.encode(v),
            _ => Dt::F32.encode(v),
        }
    }
    fn decode(self, b: &[u8]) -> Vec<f64> {
        b.chunks_exact(self.size())
            .map(|c| match self {
                Dt::F16 => half::f16::from_le_bytes([c[0], c[1]]).to_f64(),
                Dt::BF16 => half::bf16::from_le_bytes([c[0], c[1]]).to_f64(),
                Dt::F32 => f32::from_le_bytes(c.try_into().unwrap()) as f64,
                Dt::F64 => f64::from_le_bytes(c.try_into().unwrap()),
            })
            .collect()
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // splitmix64
        self.0 = self.0.wrapping_add(0x9E3779B97F4A7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58476D1CE4E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D049BB133111EB);
        z ^ (z >> 31)
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % ((hi - lo + 1) as u64)) as i64
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, dt: Dt) -> Vec<f64> {
        (0..n).map(|_| dt.round(self.unit())).collect()
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[(self.next() % v.len() as u64) as usize]
    }
}

fn cases() -> usize {
    std::env::var("GRADOPS_EMU_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12)
}

fn idx(layout: i32, n: i64, c: i64, h: i64, w: i64, cc: i64, hh: i64, ww: i64) -> usize {
    (if layout == NCHW {
        ((n * cc + c) * hh + h) * ww + w
    } else {
        ((n * hh + h) * ww + w) * cc + c
    }) as usize
}

fn rel_l2(out: &[f64], reference: &[f64]) -> f64 {
    assert_eq!(out.len(), reference.len());
    let (mut num, mut den) = (0.0, 0.0);
    for (o, r) in out.iter().zip(reference) {
        num += (o - r) * (o - r);
        den += r * r;
    }
    if den == 0.0 {
        num.sqrt()
    } else {
        (num / den).sqrt()
    }
}

fn check(what: &str, dt: Dt, out: &[f64], reference: &[f64]) {
    if let Some(i) = out.iter().position(|v| !v.is_finite()) {
        panic!(
            "{what}: element {i} not written (or not finite): {}",
            out[i]
        );
    }
    let e = rel_l2(out, reference);
    assert!(
        e <= dt.tol(),
        "{what}: relative L2 error {e:e} > {:e}",
        dt.tol()
    );
}

/// The runtime's launch, and a tiny one that makes every grid-stride loop iterate.
fn launches(natural: Option<launch::Launch>, rng: &mut Rng) -> Vec<launch::Launch> {
    let Some(l) = natural else { return vec![] };
    let tiny = launch::Launch {
        grid: (
            l.grid.0.min(rng.range(1, 2) as u32),
            l.grid.1.min(rng.range(1, 2) as u32),
            l.grid.2.min(rng.range(1, 2) as u32),
        ),
        block: l.block,
    };
    if tiny == l {
        vec![l]
    } else {
        vec![l, tiny]
    }
}

// ------------------------------------------------------------------ resize ----

#[derive(Clone, Copy, Debug)]
enum Coord {
    HalfPixel,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfHalfPixelForNn,
}
#[derive(Clone, Copy, Debug)]
enum Nearest {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
}

/// Per SPEC: the forward map of one axis as (output o) -> [(input i, weight)], in f64.
fn axis_map(
    inn: usize,
    out: usize,
    coord: Coord,
    nearest: Option<Nearest>,
) -> Vec<Vec<(usize, f64)>> {
    let r = match coord {
        Coord::AlignCorners => {
            if out > 1 {
                (inn as f64 - 1.0) / (out as f64 - 1.0)
            } else {
                0.0
            }
        }
        _ => inn as f64 / out as f64,
    };
    (0..out)
        .map(|o| {
            let of = o as f64;
            let src = match coord {
                Coord::HalfPixel => r * (of + 0.5) - 0.5,
                Coord::PytorchHalfPixel => {
                    if out > 1 {
                        r * (of + 0.5) - 0.5
                    } else {
                        0.0
                    }
                }
                Coord::AlignCorners | Coord::Asymmetric => r * of,
                Coord::TfHalfPixelForNn => r * (of + 0.5),
            };
            match nearest {
                None => {
                    let s = src.max(0.0);
                    let i0 = (s.floor() as usize).min(inn - 1);
                    let i1 = (i0 + 1).min(inn - 1);
                    let l1 = s - i0 as f64;
                    vec![(i0, 1.0 - l1), (i1, l1)]
                }
                Some(m) => {
                    let v = match m {
                        Nearest::RoundPreferFloor => {
                            if src - src.floor() == 0.5 {
                                src.floor()
                            } else {
                                src.round()
                            }
                        }
                        Nearest::RoundPreferCeil => {
                            if src - src.floor() == 0.5 {
                                src.ceil()
                            } else {
                                src.round()
                            }
                        }
                        Nearest::Floor => src.floor(),
                        Nearest::Ceil => src.ceil(),
                    };
                    vec![(v.clamp(0.0, inn as f64 - 1.0) as usize, 1.0)]
                }
            }
        })
        .collect()
}

struct Table {
    offsets: Vec<u32>,
    index: Vec<u32>,
    weight: Vec<f64>,
}

/// CSR table over `rows` destination indices from (dst, src, w) triples, keeping
/// zero weights, ordered by ascending source index within a row.
fn csr(rows: usize, mut trip: Vec<(usize, usize, f64)>) -> Table {
    trip.sort_by_key(|t| (t.0, t.1));
    let mut offsets = vec![0u32; rows + 1];
    for t in &trip {
        offsets[t.0 + 1] += 1;
    }
    for i in 0..rows {
        offsets[i + 1] += offsets[i];
    }
    Table {
        offsets,
        index: trip.iter().map(|t| t.1 as u32).collect(),
        weight: trip.iter().map(|t| t.2).collect(),
    }
}

fn run_resize(
    dt: Dt,
    layout: i32,
    n: i64,
    c: i64,
    src_hw: (i64, i64),
    dst_hw: (i64, i64),
    ty: &Table,
    tx: &Table,
    src: &[f64],
    rng: &mut Rng,
) -> Vec<Vec<f64>> {
    let p = GoResizeParams {
        src: 1,
        dst: 2,
        y_offsets: 3,
        y_index: 4,
        y_weight: 5,
        x_offsets: 6,
        x_index: 7,
        x_weight: 8,
        row_tiles: 0,
        n,
        c,
        src_h: src_hw.0,
        src_w: src_hw.1,
        dst_h: dst_hw.0,
        dst_w: dst_hw.1,
        layout,
        ..Default::default()
    };
    let u32b = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let dst_len = (n * c * dst_hw.0 * dst_hw.1) as usize;
    let bufs = |row_tiles: &[u32]| {
        [
            BufSpec::In(dt.encode(src)),
            BufSpec::Out(dst_len * dt.size()),
            BufSpec::In(u32b(&ty.offsets)),
            BufSpec::In(u32b(&ty.index)),
            BufSpec::In(dt.encode_acc(&ty.weight)),
            BufSpec::In(u32b(&tx.offsets)),
            BufSpec::In(u32b(&tx.index)),
            BufSpec::In(dt.encode_acc(&tx.weight)),
            BufSpec::In(u32b(row_tiles)),
        ]
    };
    let mut outs = Vec::new();
    for l in launches(launch::resize(&p), rng) {
        let r = run_kernel(
            &format!("resize_gather_{}", dt.suffix()),
            l,
            &as_bytes(&p),
            &bufs(&[]),
        );
        outs.push(dt.decode(&r[1]));
    }
    // The tiled kernel, with the runtime's own tiling of these tables.
    let acc_size = if dt == Dt::F64 { 8 } else { 4 };
    let tiling = launch::resize_tiling(&p, &ty.offsets, &ty.index, acc_size)
        .expect("small planes always fit the tiled resize kernel");
    let pt = GoResizeParams {
        row_tiles: 9,
        tile_h: tiling.tile_h,
        tile_w: tiling.tile_w,
        span_h: tiling.span_h,
        max_taps: tiling.max_taps,
        ..p
    };
    for l in launches(launch::resize_tile(&pt), rng) {
        let r = run_kernel(
            &format!("resize_tile_{}", dt.suffix()),
            l,
            &as_bytes(&pt),
            &bufs(&tiling.row_tiles),
        );
        outs.push(dt.decode(&r[1]));
    }
    // Box tables (nearest gradients by integer factors): the box kernel, scalar and (where
    // the layout allows) with 16-byte vectors, must equal resize_gather bitwise (same sum
    // order, weights 1).
    if let (Some(fh), Some(fw)) = (box_of(ty, src_hw.0 as usize), box_of(tx, src_hw.1 as usize)) {
        let gather = outs[0].clone();
        let pb = GoResizeParams {
            box_h: fh as i32,
            box_w: fw as i32,
            vec: 1,
            ..p
        };
        let vec = launch::resize_box_vec(&pb, dt.size(), true);
        let variants = if vec {
            vec![1, launch::vec16(dt.size()) as i32]
        } else {
            vec![1]
        };
        for v in variants {
            let pv = GoResizeParams { vec: v, ..pb };
            for l in launches(launch::resize_box(&pv), rng) {
                let r = run_kernel(
                    &format!("resize_box_{}", dt.suffix()),
                    l,
                    &as_bytes(&pv),
                    &bufs(&[]),
                );
                let out = dt.decode(&r[1]);
                assert!(
                    out.iter()
                        .zip(&gather)
                        .all(|(a, b)| a.to_bits() == b.to_bits()),
                    "resize_box (vec {v}, {fh}x{fw}, layout {layout}) differs from resize_gather"
                );
                outs.push(out);
            }
        }
        BOX_RUNS.with(|n| n.set(n.get() + 1));
    }
    outs
}

thread_local! {
    /// The stages [`run_job`] gives a warp-specialized kernel's launch (its dynamic shared
    /// memory, `launch::conv_tc_ws_smem_bytes`) on this thread; 0: the runtime's default.
    static WS_STAGES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// The ws kernel runs so far on this thread (their tiny grids' stage counts take turns).
    static WS_TURN: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// The dynamic shared memory [`run_job`] gives a halo kernel's launch on this thread
    /// (`launch::conv_tc_halo_smem_bytes` for the call).
    static HALO_SMEM: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
    /// The calls whose halo twin ran on this thread.
    static HALO_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Those of them in NCHW.
    static HALO_NCHW_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// Those of f32 under the TF32 opt-in.
    static HALO_TF32_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The dynamic shared memory of a launch of `kernel` in [`run_job`]: the warp-specialized
/// kernels' stages ([`WS_STAGES`]; a count outside the runtime's range as raw bytes, so a
/// test can give too few), none for the others.
fn dynamic_smem_of(kernel: &str) -> u32 {
    if launch::is_conv_tc_halo_kernel(kernel) {
        return HALO_SMEM.get();
    }
    if !launch::is_conv_tc_ws_kernel(kernel) {
        return 0;
    }
    match WS_STAGES.get() {
        0 => launch::conv_tc_ws_smem_bytes(kernel, params::GO_TC_WS_STAGES),
        s if (2..=params::GO_TC_WS_MAX_STAGES).contains(&s) => {
            launch::conv_tc_ws_smem_bytes(kernel, s)
        }
        s => params::GO_TC_WS_SMEM_ALIGN + s * launch::conv_tc_ws_stage_bytes(kernel),
    }
}

thread_local! {
    /// Kernels (with dtype suffix) run on this test's thread, for [`assert_every_dtype_ran`].
    static KERNELS_RUN: std::cell::RefCell<std::collections::BTreeSet<String>> =
        const { std::cell::RefCell::new(std::collections::BTreeSet::new()) };
}

/// Every kernel of `families` ran on this thread in every dtype (a test whose case mix
/// skipped, say, bf16 for a family fails instead of passing on less coverage).
fn assert_every_dtype_ran(test: &str, families: &[&str]) {
    KERNELS_RUN.with(|k| {
        let k = k.borrow();
        for f in families {
            for dt in DTS {
                let name = format!("{f}_{}", dt.suffix());
                assert!(k.contains(&name), "{test}: {name} never ran (ran: {k:?})");
            }
        }
    });
}

thread_local! {
    /// Box kernel runs on this test's thread (the box test checks its own cases ran it;
    /// tests run on separate threads, so others cannot inflate the count).
    static BOX_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// `Some(f)` when destination `d` of `t` takes exactly sources `f*d .. f*d + f` with weight
/// 1 and the source axis has `f * dst` entries (written here independently of the crate).
fn box_of(t: &Table, src_len: usize) -> Option<usize> {
    let dst = t.offsets.len() - 1;
    if dst == 0 || !src_len.is_multiple_of(dst) {
        return None;
    }
    let f = src_len / dst;
    (0..dst)
        .all(|d| {
            let (a, b) = (t.offsets[d] as usize, t.offsets[d + 1] as usize);
            b - a == f
                && (0..f).all(|k| t.index[a + k] as usize == f * d + k && t.weight[a + k] == 1.0)
        })
        .then_some(f)
}

/// One resize case (forward and grad) through both resize kernels against the f64
/// reference written from the SPEC.
fn resize_case(
    dt: Dt,
    layout: i32,
    n: i64,
    c: i64,
    (hi, wi): (i64, i64),
    (ho, wo): (i64, i64),
    coord: Coord,
    nearest: Option<Nearest>,
    rng: &mut Rng,
) {
    let what = format!("resize {dt:?} layout={layout} n={n} c={c} in={hi}x{wi} out={ho}x{wo} {coord:?} {nearest:?}");
    let my = axis_map(hi as usize, ho as usize, coord, nearest);
    let mx = axis_map(wi as usize, wo as usize, coord, nearest);
    let wr = |m: &Vec<Vec<(usize, f64)>>, fwd: bool| {
        let mut t = Vec::new();
        for (o, list) in m.iter().enumerate() {
            for &(i, w) in list {
                let w = dt.acc_round(w);
                t.push(if fwd { (o, i, w) } else { (i, o, w) });
            }
        }
        t
    };
    // Forward: x [n,c,hi,wi] -> y [n,c,ho,wo] (tables output -> input).
    let x = rng.vec((n * c * hi * wi) as usize, dt);
    let ty = csr(ho as usize, wr(&my, true));
    let tx = csr(wo as usize, wr(&mx, true));
    let mut yref = vec![0.0; (n * c * ho * wo) as usize];
    for b in 0..n {
        for ch in 0..c {
            for o in 0..ho {
                for q in 0..wo {
                    let mut s = 0.0;
                    for &(i, wy) in &my[o as usize] {
                        for &(j, wx) in &mx[q as usize] {
                            s += wy * wx * x[idx(layout, b, ch, i as i64, j as i64, c, hi, wi)];
                        }
                    }
                    yref[idx(layout, b, ch, o, q, c, ho, wo)] = s;
                }
            }
        }
    }
    for out in run_resize(dt, layout, n, c, (hi, wi), (ho, wo), &ty, &tx, &x, rng) {
        check(&format!("{what} forward"), dt, &out, &yref);
    }
    // Grad: dy [n,c,ho,wo] -> dx [n,c,hi,wi] (transposed tables), reference scatter.
    let dy = rng.vec((n * c * ho * wo) as usize, dt);
    let ty = csr(hi as usize, wr(&my, false));
    let tx = csr(wi as usize, wr(&mx, false));
    let mut dxref = vec![0.0; (n * c * hi * wi) as usize];
    for b in 0..n {
        for ch in 0..c {
            for o in 0..ho {
                for q in 0..wo {
                    let g = dy[idx(layout, b, ch, o, q, c, ho, wo)];
                    for &(i, wy) in &my[o as usize] {
                        for &(j, wx) in &mx[q as usize] {
                            dxref[idx(layout, b, ch, i as i64, j as i64, c, hi, wi)] += wy * wx * g;
                        }
                    }
                }
            }
        }
    }
    for out in run_resize(dt, layout, n, c, (ho, wo), (hi, wi), &ty, &tx, &dy, rng) {
        check(&format!("{what} grad"), dt, &out, &dxref);
    }
}

#[test]
fn emulated_resize_forward_and_grad() {
    let Some(_) = runner_or_skip("emulated_resize_forward_and_grad") else {
        return;
    };
    let mut rng = Rng(0x5eed_0001);
    let coords = [
        Coord::HalfPixel,
        Coord::PytorchHalfPixel,
        Coord::AlignCorners,
        Coord::Asymmetric,
        Coord::TfHalfPixelForNn,
    ];
    let nearests = [
        Nearest::RoundPreferFloor,
        Nearest::RoundPreferCeil,
        Nearest::Floor,
        Nearest::Ceil,
    ];
    let mut ran = 0;
    for case in 0..cases() {
        let dt = DTS[(case / 2) % DTS.len()];
        let layout = if case % 2 == 0 { NCHW } else { NHWC };
        let n = rng.range(1, 2);
        let c = rng.range(1, 5);
        let (hi, wi) = (rng.range(1, 9), rng.range(1, 9));
        let (ho, wo) = (rng.range(1, 13), rng.range(1, 13));
        let coord = rng.pick(&coords);
        let nearest = if rng.range(0, 1) == 0 {
            None
        } else {
            Some(rng.pick(&nearests))
        };
        resize_case(
            dt,
            layout,
            n,
            c,
            (hi, wi),
            (ho, wo),
            coord,
            nearest,
            &mut rng,
        );
        ran += 1;
    }
    // NaN in dy propagates through a zero weight (kept entries), as in TF.
    for dt in DTS {
        let my = axis_map(2, 4, Coord::Asymmetric, None); // weights 0 appear (l1 = 0)
        let trip: Vec<_> = my
            .iter()
            .enumerate()
            .flat_map(|(o, l)| l.iter().map(move |&(i, w)| (i, o, w)))
            .collect();
        let ty = csr(2, trip.clone());
        let tx = csr(2, trip);
        let mut dy = vec![1.0; 16];
        dy[0] = f64::NAN; // o = 0 maps to i0 = 0 (w 1) and i1 = 1 (w 0)
        let outs = run_resize(dt, NCHW, 1, 1, (4, 4), (2, 2), &ty, &tx, &dy, &mut rng);
        for out in outs {
            assert!(
                out.iter().all(|v| v.is_nan()),
                "{dt:?}: NaN must reach every dx fed by dy[0,0] (zero weights kept): {out:?}"
            );
        }
    }
    assert_every_dtype_ran("emulated_resize_forward_and_grad", &["resize_gather"]);
    println!("emulated_resize_forward_and_grad: {ran} random cases x 2 ops x 2 grids");
}

/// Planes large enough for several row and column tiles of `resize_tile` (and, at 4x,
/// source spans that shrink the tile height), in both layouts.
#[test]
fn emulated_resize_tiles() {
    let Some(_) = runner_or_skip("emulated_resize_tiles") else {
        return;
    };
    let mut rng = Rng(0x5eed_0005);
    type Shape = (i64, i64, (i64, i64), (i64, i64), Coord, Option<Nearest>);
    let shapes: [Shape; 4] = [
        (1, 2, (37, 45), (74, 90), Coord::HalfPixel, None),
        (1, 3, (70, 9), (17, 3), Coord::AlignCorners, None),
        (
            2,
            5,
            (20, 60),
            (80, 15),
            Coord::Asymmetric,
            Some(Nearest::Floor),
        ),
        (1, 1, (33, 300), (130, 75), Coord::PytorchHalfPixel, None),
    ];
    for (k, &(n, c, x_hw, y_hw, coord, nearest)) in shapes.iter().enumerate() {
        let dt = DTS[k % DTS.len()];
        for layout in [NCHW, NHWC] {
            resize_case(dt, layout, n, c, x_hw, y_hw, coord, nearest, &mut rng);
        }
    }
    assert_every_dtype_ran("emulated_resize_tiles", &["resize_tile"]);
}

/// Nearest gradients by integer factors run the box kernel: 2x2 with 16-byte vectors in
/// both layouts (c and dst_w multiples of the vector for every dtype), 3x1 and 1x2
/// scalar, each bitwise equal to resize_gather and within tolerance of the reference.
#[test]
fn emulated_resize_boxes() {
    let Some(_) = runner_or_skip("emulated_resize_boxes") else {
        return;
    };
    let mut rng = Rng(0x5eed_0007);
    let before = BOX_RUNS.with(|n| n.get());
    let floor = Some(Nearest::Floor);
    for dt in DTS {
        for layout in [NCHW, NHWC] {
            resize_case(
                dt,
                layout,
                2,
                8,
                (6, 16),
                (12, 32),
                Coord::Asymmetric,
                floor,
                &mut rng,
            );
            resize_case(
                dt,
                layout,
                1,
                3,
                (5, 7),
                (15, 7),
                Coord::Asymmetric,
                floor,
                &mut rng,
            );
            resize_case(
                dt,
                layout,
                1,
                2,
                (4, 5),
                (4, 10),
                Coord::HalfPixel,
                Some(Nearest::RoundPreferFloor),
                &mut rng,
            );
        }
    }
    let ran = BOX_RUNS.with(|n| n.get()) - before;
    let want = 3 * 2 * DTS.len();
    assert!(ran >= want, "only {ran} of {want} cases ran the box kernel");
    assert_every_dtype_ran("emulated_resize_boxes", &["resize_box"]);
}

// ------------------------------------------------------------------ conv ----

#[test]
fn emulated_conv2d_forward_and_backprop_input() {
    let Some(_) = runner_or_skip("emulated_conv2d_forward_and_backprop_input") else {
        return;
    };
    let mut rng = Rng(0x5eed_0002);
    let (mut ran, mut ran_oihw) = (0, 0);
    for case in 0..cases() {
        // Every dtype in both layouts, and the every-4th special cases over several dtypes.
        let dt = DTS[(case + case / DTS.len()) % DTS.len()];
        let layout = if (case / DTS.len()).is_multiple_of(2) {
            NCHW
        } else {
            NHWC
        };
        let groups = rng.range(1, 3);
        // Every few cases cross the 64-channel tile and the 16-wide reduction chunk.
        let big = case % 4 == 3;
        let cig = if big {
            rng.range(60, 70)
        } else {
            rng.range(1, 5)
        };
        let cog = if big {
            rng.range(14, 20)
        } else {
            rng.range(1, 6)
        };
        let (ci, co) = (cig * groups, cog * groups);
        let n = rng.range(1, 2);
        let (kh, kw) = (rng.range(1, 4), rng.range(1, 4));
        let (sh, sw) = (rng.range(1, 3), rng.range(1, 3));
        let (dh, dw) = (rng.range(1, 2), rng.range(1, 2));
        let (hi, wi) = if big {
            (rng.range(1, 6), rng.range(1, 6))
        } else {
            (rng.range(1, 12), rng.range(1, 12))
        };
        let (pt, pb) = (rng.range(0, 2), rng.range(0, 2));
        let (pl, pr) = (rng.range(0, 2), rng.range(0, 2));
        let (keh, kew) = ((kh - 1) * dh + 1, (kw - 1) * dw + 1);
        if hi + pt + pb < keh || wi + pl + pr < kew {
            continue;
        }
        let ho = (hi + pt + pb - keh) / sh + 1;
        let wo = (wi + pl + pr - kew) / sw + 1;
        let what = format!(
            "conv {dt:?} layout={layout} n={n} ci={ci} co={co} g={groups} in={hi}x{wi} k={kh}x{kw} s={sh}x{sw} d={dh}x{dw} pad=({pt},{pb},{pl},{pr}) out={ho}x{wo}"
        );
        // Half the cases store the filter OIHW (PyTorch's order), read through its strides.
        let oihw = (case / 6) % 2 == 1;
        let what = format!("{what} filter={}", if oihw { "OIHW" } else { "HWIO" });
        let w = rng.vec((kh * kw * cig * co) as usize, dt);
        let widx = |ky: i64, kx: i64, c: i64, o: i64| {
            (if oihw {
                ((o * cig + c) * kh + ky) * kw + kx
            } else {
                ((ky * kw + kx) * cig + c) * co + o
            }) as usize
        };
        let p = GoConvParams {
            x: 1,
            w: 2,
            y: 3,
            n,
            ci,
            hi,
            wi,
            co,
            ho,
            wo,
            kh,
            kw,
            sh,
            sw,
            dh,
            dw,
            pad_top: pt,
            pad_left: pl,
            groups,
            layout,
            filter_layout: if oihw {
                params::GO_FILTER_OIHW as i32
            } else {
                params::GO_FILTER_HWIO as i32
            },
            ..Default::default()
        };
        // Forward.
        let x = rng.vec((n * ci * hi * wi) as usize, dt);
        let mut yref = vec![0.0; (n * co * ho * wo) as usize];
        let mut dxref = vec![0.0; x.len()];
        let dy = rng.vec(yref.len(), dt);
        for b in 0..n {
            for o in 0..co {
                let g = o / cog;
                for oy in 0..ho {
                    for ox in 0..wo {
                        let yi = idx(layout, b, o, oy, ox, co, ho, wo);
                        let mut s = 0.0;
                        for ky in 0..kh {
                            let iy = oy * sh - pt + ky * dh;
                            if iy < 0 || iy >= hi {
                                continue;
                            }
                            for kx in 0..kw {
                                let ix = ox * sw - pl + kx * dw;
                                if ix < 0 || ix >= wi {
                                    continue;
                                }
                                for cc in 0..cig {
                                    let xi = idx(layout, b, g * cig + cc, iy, ix, ci, hi, wi);
                                    s += x[xi] * w[widx(ky, kx, cc, o)];
                                    dxref[xi] += dy[yi] * w[widx(ky, kx, cc, o)];
                                }
                            }
                        }
                        yref[yi] = s;
                    }
                }
            }
        }
        for l in launches(launch::conv_forward(&p), &mut rng) {
            let r = run_kernel(
                &format!("conv2d_forward_{}", dt.suffix()),
                l,
                &as_bytes(&p),
                &[
                    BufSpec::In(dt.encode(&x)),
                    BufSpec::In(dt.encode(&w)),
                    BufSpec::Out(yref.len() * dt.size()),
                ],
            );
            check(
                &format!("{what} forward grid {:?}", l.grid),
                dt,
                &dt.decode(&r[2]),
                &yref,
            );
        }
        for l in launches(launch::conv_backprop_input(&p), &mut rng) {
            let r = run_kernel(
                &format!("conv2d_backprop_input_{}", dt.suffix()),
                l,
                &as_bytes(&p),
                &[
                    BufSpec::Out(x.len() * dt.size()),
                    BufSpec::In(dt.encode(&w)),
                    BufSpec::In(dt.encode(&dy)),
                ],
            );
            check(
                &format!("{what} backprop_input grid {:?}", l.grid),
                dt,
                &dt.decode(&r[0]),
                &dxref,
            );
        }
        ran += 1;
        ran_oihw += usize::from(oihw);
    }
    assert!(
        ran_oihw > 0 && ran_oihw < ran,
        "both filter layouts ran ({ran_oihw} OIHW of {ran})"
    );
    assert_every_dtype_ran(
        "emulated_conv2d_forward_and_backprop_input",
        &["conv2d_forward", "conv2d_backprop_input"],
    );
    println!("emulated_conv2d_forward_and_backprop_input: {ran} random cases ({ran_oihw} with an OIHW filter) x 2 ops x 2 grids");
}

/// A stride far past the image (the CUDA property case that hung the GPU: strides
/// [2^40, 3]): the phase-tap search and the phase enumeration must not walk the stride.
/// Both backprop_input kernels against a direct sum, small-integer data (exact).
#[test]
fn emulated_conv2d_backprop_input_huge_stride() {
    let Some(_) = runner_or_skip("emulated_conv2d_backprop_input_huge_stride") else {
        return;
    };
    let (n, ci, hi, wi, co, kh, kw, groups) = (1i64, 2, 4, 6, 2, 4, 1, 2);
    let (sh, sw, dh, dw) = (1i64 << 40, 3, 1, 2);
    let (ho, wo) = (1, (wi - 1) / sw + 1);
    let (cig, cog) = (ci / groups, co / groups);
    let mut rng = Rng(0x5eed_2400);
    for layout in [NCHW, NHWC] {
        let p = GoConvParams {
            x: 1,
            w: 2,
            y: 3,
            n,
            ci,
            hi,
            wi,
            co,
            ho,
            wo,
            kh,
            kw,
            sh,
            sw,
            dh,
            dw,
            pad_top: 0,
            pad_left: 0,
            groups,
            layout,
            filter_layout: params::GO_FILTER_HWIO as i32,
            ..Default::default()
        };
        assert_eq!(
            launch::conv_phases(&p),
            4 * 3,
            "phases with pixels: min(sh, hi) x 3"
        );
        let w: Vec<f64> = (0..kh * kw * cig * co)
            .map(|_| rng.range(-2, 2) as f64)
            .collect();
        let dy: Vec<f64> = (0..n * co * ho * wo)
            .map(|_| rng.range(-2, 2) as f64)
            .collect();
        let mut want = vec![0.0; (n * ci * hi * wi) as usize];
        for o in 0..co {
            let g = o / cog;
            for ox in 0..wo {
                for ky in 0..kh {
                    for kx in 0..kw {
                        let (iy, ix) = (ky * dh, ox * sw + kx * dw);
                        if iy >= hi || ix >= wi {
                            continue;
                        }
                        for c in 0..cig {
                            let xi = idx(layout, 0, g * cig + c, iy, ix, ci, hi, wi);
                            let wv = w[(((ky * kw + kx) * cig + c) * co + o) as usize];
                            want[xi] += dy[idx(layout, 0, o, 0, ox, co, ho, wo)] * wv;
                        }
                    }
                }
            }
        }
        for dt in DTS {
            let runs = launch::conv_backprop_input(&p)
                .map(|l| (l, "conv2d_backprop_input"))
                .into_iter()
                .chain(launch::conv_tc(&p, false).map(|l| (l, "conv2d_backprop_input_tc")));
            for (l, kernel) in runs {
                let r = run_kernel(
                    &format!("{kernel}_{}", dt.suffix()),
                    l,
                    &as_bytes(&p),
                    &[
                        BufSpec::Out(want.len() * dt.size()),
                        BufSpec::In(dt.encode(&w)),
                        BufSpec::In(dt.encode(&dy)),
                    ],
                );
                assert_eq!(
                    dt.decode(&r[0]),
                    want,
                    "{kernel} {dt:?} layout {layout}: strides [2^40, 3]"
                );
            }
        }
    }
}

/// Degenerate conv geometry the SPEC accepts (issue 9): a zero-sized kernel axis, and an empty
/// `dy` from a window that does not fit. `conv2d_backprop_input` (the FFMA and the tensor-core
/// kernel) must still write every `dx` element (as zero: the emulator starts outputs as NaN).
#[test]
fn emulated_conv2d_backprop_input_degenerate_geometry() {
    let Some(_) = runner_or_skip("emulated_conv2d_backprop_input_degenerate_geometry") else {
        return;
    };
    let mut ran = 0;
    // (kh, kw, hi, wi, ho, wo, sh, dh, pad_top): ho/wo from the SPEC's formulas.
    let cases: [[i64; 9]; 4] = [
        [0, 3, 4, 5, 5, 3, 1, 1, 0], // kh = 0, VALID: ceil((4 + 1)/1) = 5
        [2, 0, 3, 2, 2, 3, 2, 1, 0], // kw = 0
        [4, 1, 2, 3, 0, 3, 3, 2, 2], // in 2, pads [2, 2], ke 7, stride 3: out 0
        [0, 0, 2, 2, 3, 3, 1, 1, 0],
    ];
    for (i, &[kh, kw, hi, wi, ho, wo, sh, dh, pt]) in cases.iter().enumerate() {
        for dt in DTS {
            let layout = if i % 2 == 0 { NCHW } else { NHWC };
            let (n, ci, co) = (2, 3, 2);
            let p = GoConvParams {
                x: 1,
                w: 2,
                y: 3,
                n,
                ci,
                hi,
                wi,
                co,
                ho,
                wo,
                kh,
                kw,
                sh,
                sw: 1,
                dh,
                dw: 1,
                pad_top: pt,
                pad_left: 0,
                groups: 1,
                layout,
                filter_layout: params::GO_FILTER_HWIO as i32,
                ..Default::default()
            };
            let dx_len = (n * ci * hi * wi) as usize;
            let w = vec![1.0; (kh * kw * ci * co) as usize];
            let dy = vec![1.0; (n * co * ho * wo) as usize];
            let mut rng = Rng(0x5eed_0009 + i as u64);
            // The FFMA kernel and the tensor-core one (no taps: a zero tile per block).
            let runs = launches(launch::conv_backprop_input(&p), &mut rng)
                .into_iter()
                .map(|l| (l, "conv2d_backprop_input"))
                .chain(launch::conv_tc(&p, false).map(|l| (l, "conv2d_backprop_input_tc")));
            for (l, kernel) in runs {
                let r = run_kernel(
                    &format!("{kernel}_{}", dt.suffix()),
                    l,
                    &as_bytes(&p),
                    &[
                        BufSpec::Out(dx_len * dt.size()),
                        BufSpec::In(dt.encode(&w)),
                        BufSpec::In(dt.encode(&dy)),
                    ],
                );
                check(
                    &format!(
                        "degenerate conv {kernel} {dt:?} k={kh}x{kw} in={hi}x{wi} out={ho}x{wo} grid {:?}",
                        l.grid
                    ),
                    dt,
                    &dt.decode(&r[0]),
                    &vec![0.0; dx_len],
                );
                ran += 1;
            }
        }
    }
    assert!(
        ran >= 2 * cases.len() * DTS.len(),
        "every degenerate case launches both kernels"
    );
    println!("emulated_conv2d_backprop_input_degenerate_geometry: {ran} launches");
}

/// dW of conv2d_backprop_filter in float64 (in `p.filter_layout`'s order) from `x` and `dy`
/// in `p.layout`: the naive seven loops.
fn filter_reference(p: &GoConvFilterParams, x: &[f64], dy: &[f64]) -> Vec<f64> {
    let (cig, cog) = (p.ci / p.groups, p.co / p.groups);
    let (kh, kw, co) = (p.kh, p.kw, p.co);
    let oihw = p.filter_layout == params::GO_FILTER_OIHW as i32;
    let mut want = vec![0.0; (kh * kw * cig * co) as usize];
    for b in 0..p.n {
        for o in 0..co {
            let g = o / cog;
            for oy in 0..p.ho {
                for ox in 0..p.wo {
                    let d = dy[idx(p.layout, b, o, oy, ox, co, p.ho, p.wo)];
                    for ky in 0..kh {
                        let iy = oy * p.sh - p.pad_top + ky * p.dh;
                        if iy < 0 || iy >= p.hi {
                            continue;
                        }
                        for kx in 0..kw {
                            let ix = ox * p.sw - p.pad_left + kx * p.dw;
                            if ix < 0 || ix >= p.wi {
                                continue;
                            }
                            for c in 0..cig {
                                let xv = x[idx(p.layout, b, g * cig + c, iy, ix, p.ci, p.hi, p.wi)];
                                let at = if oihw {
                                    ((o * cig + c) * kh + ky) * kw + kx
                                } else {
                                    ((ky * kw + kx) * cig + c) * co + o
                                };
                                want[at as usize] += xv * d;
                            }
                        }
                    }
                }
            }
        }
    }
    want
}

/// `len` random values for a filter-gradient case in `dt`: multiples of 1/4 in [-1, 1] when
/// `exact` (exact products and sums in f32/f64, even in TF32), else `rng.vec`'s.
fn filter_input(rng: &mut Rng, dt: Dt, exact: bool, len: usize) -> Vec<f64> {
    if exact {
        (0..len).map(|_| rng.range(-4, 4) as f64 / 4.0).collect()
    } else {
        rng.vec(len, dt)
    }
}

/// Runs conv2d_backprop_filter's two kernels (partial, then reduce on its workspace) with
/// launch `lp` for the partial kernel; returns dw's bytes.
fn run_filter(
    dt: Dt,
    p: &GoConvFilterParams,
    lp: Option<launch::Launch>,
    x: &[u8],
    dy: &[u8],
) -> Vec<u8> {
    run_filter_with("conv2d_backprop_filter_partial", dt, p, lp, x, dy)
}

/// [`run_filter`] with the partial kernel family `partial` (the FFMA one or `_tc`).
fn run_filter_with(
    partial: &str,
    dt: Dt,
    p: &GoConvFilterParams,
    lp: Option<launch::Launch>,
    x: &[u8],
    dy: &[u8],
) -> Vec<u8> {
    let ws = match lp {
        Some(l) => run_filter_partial(partial, dt, p, l, x, dy),
        None => vec![],
    };
    run_filter_reduce(dt, p, ws)
}

/// The partial kernel of family `partial` alone, launched as `l`: the workspace's bytes (all
/// splits' partial filters).
fn run_filter_partial(
    partial: &str,
    dt: Dt,
    p: &GoConvFilterParams,
    l: launch::Launch,
    x: &[u8],
    dy: &[u8],
) -> Vec<u8> {
    let flen = (p.kh * p.kw * (p.ci / p.groups) * p.co) as usize;
    let acc = if dt == Dt::F64 { 8 } else { 4 };
    let ws_len = p.splits as usize * flen * acc;
    let r = run_kernel(
        &format!("{partial}_{}", dt.suffix()),
        l,
        &as_bytes(p),
        &[
            BufSpec::In(x.to_vec()),
            BufSpec::In(dy.to_vec()),
            BufSpec::Out(ws_len),
        ],
    );
    r[2].clone()
}

/// conv2d_backprop_filter_reduce over workspace `ws`: dw's bytes.
fn run_filter_reduce(dt: Dt, p: &GoConvFilterParams, ws: Vec<u8>) -> Vec<u8> {
    let flen = (p.kh * p.kw * (p.ci / p.groups) * p.co) as usize;
    let Some(lr) = launch::conv_filter_reduce(p) else {
        return vec![];
    };
    let mut rp = *p;
    rp.x = 0;
    rp.dy = 0;
    rp.ws = 1;
    rp.out = 2;
    let r = run_kernel(
        &format!("conv2d_backprop_filter_reduce_{}", dt.suffix()),
        lr,
        &as_bytes(&rp),
        &[BufSpec::In(ws), BufSpec::Out(flen * dt.size())],
    );
    r[1].clone()
}

/// conv2d_backprop_filter (split-K partial + fixed-order reduce) against a float64
/// reference: every dtype, both layouts, both filter layouts, groups, strides, dilations,
/// padding; the runtime's split and forced ones (1, 2, 3 splits, one per chunk), each on
/// the natural grid and a tiny one. Determinism: the tiny grid gives the same bits as the
/// natural one; with inputs that are multiples of 1/4 (every sum exact in f32 and f64)
/// every split gives the same bits, equal to the exact answer.
#[test]
fn emulated_conv2d_backprop_filter() {
    let Some(_) = runner_or_skip("emulated_conv2d_backprop_filter") else {
        return;
    };
    let mut rng = Rng(0x5eed_00f1);
    let (mut ran, mut exact_checks) = (0, 0);
    for case in 0..cases() {
        let dt = DTS[case % DTS.len()];
        let layout = if (case / DTS.len()).is_multiple_of(2) {
            NCHW
        } else {
            NHWC
        };
        let oihw = (case / 2) % 2 == 1;
        // Multiples of 1/4 are exact in f32 and f64 sums (not in the 16-bit types' stores).
        let exact = case % 2 == 1 && matches!(dt, Dt::F32 | Dt::F64);
        let groups = rng.range(1, 3);
        // Every few cases cross the 64-row and 64-channel tiles.
        let big = case % 4 == 3;
        let cig = if big {
            rng.range(8, 12)
        } else {
            rng.range(1, 4)
        };
        let cog = if big {
            rng.range(60, 70)
        } else {
            rng.range(1, 6)
        };
        let (ci, co) = (cig * groups, cog * groups);
        let n = rng.range(1, 2);
        let (kh, kw) = (rng.range(1, 3), rng.range(1, 3));
        let (sh, sw) = (rng.range(1, 3), rng.range(1, 3));
        let (dh, dw) = (rng.range(1, 2), rng.range(1, 2));
        // Exact cases are large enough for several 16-pixel chunks (several splits).
        let lo = if exact { 6 } else { 1 };
        let (hi, wi) = (rng.range(lo, 9), rng.range(lo, 9));
        let (pt, pb) = (rng.range(0, 2), rng.range(0, 2));
        let (pl, pr) = (rng.range(0, 2), rng.range(0, 2));
        let (keh, kew) = ((kh - 1) * dh + 1, (kw - 1) * dw + 1);
        if hi + pt + pb < keh || wi + pl + pr < kew {
            continue;
        }
        let ho = (hi + pt + pb - keh) / sh + 1;
        let wo = (wi + pl + pr - kew) / sw + 1;
        let what = format!(
            "filter {dt:?} layout={layout} oihw={oihw} n={n} ci={ci} co={co} g={groups} in={hi}x{wi} k={kh}x{kw} s={sh}x{sw} d={dh}x{dw} pad=({pt},{pb},{pl},{pr}) out={ho}x{wo}"
        );
        let (xl, dyl) = ((n * ci * hi * wi) as usize, (n * co * ho * wo) as usize);
        let (x, dy) = (
            filter_input(&mut rng, dt, exact, xl),
            filter_input(&mut rng, dt, exact, dyl),
        );
        let mut p = GoConvFilterParams {
            x: 1,
            dy: 2,
            ws: 3,
            out: 0,
            n,
            ci,
            hi,
            wi,
            co,
            ho,
            wo,
            kh,
            kw,
            sh,
            sw,
            dh,
            dw,
            pad_top: pt,
            pad_left: pl,
            groups,
            splits: 0,
            split_len: 0,
            layout,
            filter_layout: if oihw {
                params::GO_FILTER_OIHW as i32
            } else {
                params::GO_FILTER_HWIO as i32
            },
        };
        let want = filter_reference(&p, &x, &dy);
        let natural = launch::conv_filter_split(&p);
        let npix = n * ho * wo;
        let k = params::GO_CONV_FILTER_TILE_K as i64;
        let chunks = (npix + k - 1) / k;
        let mut splits = vec![natural];
        for s in [1, 2, 3, chunks] {
            let len = (chunks + s - 1) / s * k;
            let cfg = ((npix + len - 1) / len, len);
            if !splits.contains(&cfg) {
                splits.push(cfg);
            }
        }
        let (xb, dyb) = (dt.encode(&x), dt.encode(&dy));
        let mut first: Option<Vec<u8>> = None;
        for (sp, len) in splits {
            p.splits = sp;
            p.split_len = len;
            let mut bits: Option<Vec<u8>> = None;
            let natural_launch = launch::conv_filter_partial(&p);
            let ls: Vec<Option<launch::Launch>> = match natural_launch {
                Some(_) => launches(natural_launch, &mut rng)
                    .into_iter()
                    .map(Some)
                    .collect(),
                None => vec![None],
            };
            for l in ls {
                let out = run_filter(dt, &p, l, &xb, &dyb);
                check(
                    &format!("{what} splits={sp}x{len} grid {:?}", l.map(|l| l.grid)),
                    dt,
                    &dt.decode(&out),
                    &want,
                );
                match &bits {
                    None => bits = Some(out),
                    Some(b) => assert_eq!(b, &out, "{what} splits={sp}: grid changed the bits"),
                }
            }
            if exact {
                let out = bits.unwrap();
                assert_eq!(dt.decode(&out), want, "{what} splits={sp}x{len}: not exact");
                match &first {
                    None => first = Some(out),
                    Some(f) => {
                        assert_eq!(f, &out, "{what}: splits={sp} changed the bits");
                        exact_checks += 1;
                    }
                }
            }
        }
        ran += 1;
    }
    assert!(ran >= cases() / 2, "only {ran} cases ran");
    assert!(
        exact_checks > 0 || cases() < 8,
        "no exact cross-split comparison ran"
    );
    println!("emulated_conv2d_backprop_filter: {ran} cases, {exact_checks} exact cross-split comparisons");
}

/// conv2d_backprop_filter_partial_tc and _tc_nhwc (the split-K partial sums on mma.sync)
/// then the reduce kernel, against a float64 reference: every dtype (f16/bf16 on m16n8k16,
/// f32 as 3xTF32, f64 on DMMA), both layouts on the same geometry (NCHW's gather by 16-byte
/// runs, NHWC's cp.async pipeline with ldmatrix.trans), groups, strides, dilations, padding, rows and
/// channels that cross the 64 x 64 tiles and chunks that end inside a split; channel counts
/// on NHWC's 16-byte copies (multiples of 8) in every other case and off them in the rest;
/// the runtime's split and forced ones, each on the natural grid and a tiny one (same
/// bits). With inputs that are multiples of 1/4 in f32/f64 (exact products, even in TF32,
/// and exact sums) every split gives the exact answer.
/// A random conv2d_backprop_filter geometry for the tensor-core tests: `n` images of `ci`
/// channels to `co` in `groups` (HWIO filter, `layout`), kernel 1-3 per axis, strides 1-2
/// (1 where `unit_stride`), dilations 1-2, input `size` (else 6-12 per axis), pads 0-1;
/// `None` where the kernel does not fit the padded input.
fn tc_filter_params(
    rng: &mut Rng,
    (n, ci, co, groups): (i64, i64, i64, i64),
    layout: i32,
    size: Option<(i64, i64)>,
    unit_stride: bool,
) -> Option<GoConvFilterParams> {
    let (kh, kw) = (rng.range(1, 3), rng.range(1, 3));
    let (sh, sw) = if unit_stride {
        (1, 1)
    } else {
        (rng.range(1, 2), rng.range(1, 2))
    };
    let (dh, dw) = (rng.range(1, 2), rng.range(1, 2));
    let (hi, wi) = size.unwrap_or_else(|| (rng.range(6, 12), rng.range(6, 12)));
    let (pt, pb, pl, pr) = (
        rng.range(0, 1),
        rng.range(0, 1),
        rng.range(0, 1),
        rng.range(0, 1),
    );
    filter_geometry(
        (n, ci, co, groups),
        layout,
        (hi, wi),
        (kh, kw),
        (sh, sw),
        (dh, dw),
        (pt, pb, pl, pr),
    )
}

/// A conv2d_backprop_filter geometry (HWIO filter, no split yet): `n` images of `ci` channels
/// to `co` in `groups`, in `layout`, input `(hi, wi)`, kernel, strides, dilations, pads
/// `(top, bottom, left, right)`; `None` where the kernel does not fit the padded input.
fn filter_geometry(
    (n, ci, co, groups): (i64, i64, i64, i64),
    layout: i32,
    (hi, wi): (i64, i64),
    (kh, kw): (i64, i64),
    (sh, sw): (i64, i64),
    (dh, dw): (i64, i64),
    (pt, pb, pl, pr): (i64, i64, i64, i64),
) -> Option<GoConvFilterParams> {
    let (keh, kew) = ((kh - 1) * dh + 1, (kw - 1) * dw + 1);
    if hi + pt + pb < keh || wi + pl + pr < kew {
        return None;
    }
    Some(GoConvFilterParams {
        x: 1,
        dy: 2,
        ws: 3,
        out: 0,
        n,
        ci,
        hi,
        wi,
        co,
        ho: (hi + pt + pb - keh) / sh + 1,
        wo: (wi + pl + pr - kew) / sw + 1,
        kh,
        kw,
        sh,
        sw,
        dh,
        dw,
        pad_top: pt,
        pad_left: pl,
        groups,
        splits: 0,
        split_len: 0,
        layout,
        filter_layout: params::GO_FILTER_HWIO as i32,
    })
}

/// The splits `(splits, split_len)` the tensor-core filter tests run: the runtime's, one
/// and three (those of them that differ).
fn tc_filter_splits(p: &GoConvFilterParams) -> Vec<(i64, i64)> {
    let npix = p.n * p.ho * p.wo;
    let k = params::GO_CONV_FILTER_TILE_K as i64;
    let chunks = (npix + k - 1) / k;
    let mut splits = vec![launch::conv_filter_split(p)];
    for s in [1, 3] {
        let len = (chunks + s - 1) / s * k;
        let cfg = ((npix + len - 1) / len, len);
        if !splits.contains(&cfg) {
            splits.push(cfg);
        }
    }
    splits
}

/// A filter-gradient case's geometry, for messages.
fn filter_what(p: &GoConvFilterParams) -> String {
    format!(
        "{} n={} ci={} co={} g={} in={}x{} k={}x{} s={}x{} d={}x{} pad=({},{}) out={}x{}",
        if p.layout == NCHW { "NCHW" } else { "NHWC" },
        p.n,
        p.ci,
        p.co,
        p.groups,
        p.hi,
        p.wi,
        p.kh,
        p.kw,
        p.sh,
        p.sw,
        p.dh,
        p.dw,
        p.pad_top,
        p.pad_left,
        p.ho,
        p.wo
    )
}

#[test]
fn emulated_conv2d_backprop_filter_tensor_core() {
    let Some(_) = runner_or_skip("emulated_conv2d_backprop_filter_tensor_core") else {
        return;
    };
    let mut rng = Rng(0x5eed_0f7c);
    let (mut ran, mut exact_runs, mut deep) = (0, 0, 0);
    let (mut nhwc_vec, mut nhwc_scalar) = (0, 0);
    // The emulated mma is slow (a warp barrier per collective): a few cases.
    for case in 0..cases_count_tc().max(4) {
        let dt = DTS[case % DTS.len()];
        let exact = matches!(dt, Dt::F32 | Dt::F64) && case % 2 == 1;
        let groups = rng.range(1, 2);
        let big = case % 3 == 2;
        // Multiples of 8 (every type's 16-byte run) in every other case, each dtype both
        // ways over two rounds.
        let vec_ch = (case + case / DTS.len()).is_multiple_of(2);
        let round = |v: i64| if vec_ch { (v + 7) / 8 * 8 } else { v };
        let cig = round(if big {
            rng.range(6, 9)
        } else {
            rng.range(1, 5)
        });
        let cog = round(if big {
            rng.range(60, 70)
        } else {
            rng.range(1, 9)
        });
        let (ci, co) = (cig * groups, cog * groups);
        let n = rng.range(1, 2);
        let Some(geom) = tc_filter_params(&mut rng, (n, ci, co, groups), NCHW, None, false) else {
            continue;
        };
        let (ho, wo) = (geom.ho, geom.wo);
        let (hi, wi) = (geom.hi, geom.wi);
        for layout in [NCHW, NHWC] {
            if layout == NHWC {
                if vec_ch {
                    nhwc_vec += 1;
                } else {
                    nhwc_scalar += 1;
                }
            }
            let mut p = GoConvFilterParams { layout, ..geom };
            let what = format!("filter tc {dt:?} {}", filter_what(&p));
            let (xl, dyl) = ((n * ci * hi * wi) as usize, (n * co * ho * wo) as usize);
            let (x, dy) = (
                filter_input(&mut rng, dt, exact, xl),
                filter_input(&mut rng, dt, exact, dyl),
            );
            let want = filter_reference(&p, &x, &dy);
            let npix = n * ho * wo;
            let (xb, dyb) = (dt.encode(&x), dt.encode(&dy));
            for (sp, len) in tc_filter_splits(&p) {
                p.splits = sp;
                p.split_len = len;
                let Some(natural_launch) = launch::conv_filter_partial_tc(&p) else {
                    continue;
                };
                // Chunks of 64 bytes of pixels per split: three or more exercise the gather of
                // the next chunk during the current one's mma beyond the first step.
                let bk = 64 / dt.size() as i64;
                if (len.min(npix) + bk - 1) / bk >= 3 {
                    deep += 1;
                }
                let mut bits: Option<Vec<u8>> = None;
                for l in [
                    natural_launch,
                    launch::Launch {
                        grid: (1, 1, 1),
                        ..natural_launch
                    },
                ] {
                    let out = run_filter_with(
                        if layout == NCHW {
                            "conv2d_backprop_filter_partial_tc"
                        } else {
                            "conv2d_backprop_filter_partial_tc_nhwc"
                        },
                        dt,
                        &p,
                        Some(l),
                        &xb,
                        &dyb,
                    );
                    check(
                        &format!("{what} splits={sp}x{len} grid {:?}", l.grid),
                        dt,
                        &dt.decode(&out),
                        &want,
                    );
                    if exact {
                        assert_eq!(dt.decode(&out), want, "{what} splits={sp}x{len}: not exact");
                        exact_runs += 1;
                    }
                    match &bits {
                        None => bits = Some(out),
                        Some(b) => assert_eq!(b, &out, "{what} splits={sp}: grid changed the bits"),
                    }
                }
            }
        }
        ran += 1;
    }
    assert!(ran >= 3, "only {ran} cases ran");
    assert!(exact_runs > 0, "no exact run");
    assert!(deep > 0, "no split of three or more chunks");
    assert!(
        nhwc_vec > 0 && nhwc_scalar > 0,
        "NHWC: {nhwc_vec} cases on 16-byte copies, {nhwc_scalar} on scalar loads"
    );
    println!(
        "emulated_conv2d_backprop_filter_tensor_core: {ran} cases x 2 layouts, {exact_runs} exact runs, {deep} splits of 3+ chunks, NHWC {nhwc_vec} on 16-byte copies / {nhwc_scalar} scalar"
    );
}

/// The NHWC filter gradient's wgmma kernel (`conv2d_backprop_filter_partial_tc_nhwc_wgmma_*`,
/// 16-bit, channel counts of whole 16-byte chunks) against the mma.sync one it stands in for,
/// bit for bit (the same chunks, products and order), and against the float64 reference
/// (exactly, on inputs whose sums are exact): one and two groups, several filter-row and
/// channel tiles (partial ones too), strides, dilations, padding, splits longer than the
/// pipeline; the runtime's split, one split and three, each on the natural grid and on one
/// block (which then runs every tile and split).
#[test]
fn emulated_conv2d_backprop_filter_wgmma() {
    let Some(_) = runner_or_skip("emulated_conv2d_backprop_filter_wgmma") else {
        return;
    };
    let mut rng = Rng(0x5eed_0f90);
    let (mut ran, mut multi_tile, mut deep) = (0, 0, 0);
    for case in 0..cases_count_tc().max(4) {
        let dt = [Dt::F16, Dt::BF16][case % 2];
        let exact = case % 4 < 2;
        let groups = 1 + (case % 3 == 2) as i64;
        let cig = 8 * rng.range(1, 3);
        let cog = 8 * if case % 2 == 0 {
            rng.range(1, 4)
        } else {
            rng.range(8, 10)
        };
        let (ci, co) = (cig * groups, cog * groups);
        // Every fourth case long enough (stride 1, 3 x 12 x 12 pixels: 13 or more chunks of
        // 32 on one split) that the pipeline refills its stages.
        let long = case % 4 == 3;
        let n = if long { 3 } else { rng.range(1, 2) };
        let size = long.then_some((12, 12));
        let Some(mut p) = tc_filter_params(&mut rng, (n, ci, co, groups), NHWC, size, long) else {
            continue;
        };
        let what = format!("filter wgmma {dt:?} {}", filter_what(&p));
        let (xl, dyl) = (
            (n * ci * p.hi * p.wi) as usize,
            (n * co * p.ho * p.wo) as usize,
        );
        let (x, dy) = (
            filter_input(&mut rng, dt, exact, xl),
            filter_input(&mut rng, dt, exact, dyl),
        );
        if p.kh * p.kw * cig > 64 || cog > 64 {
            multi_tile += 1;
        }
        let want = filter_reference(&p, &x, &dy);
        let npix = n * p.ho * p.wo;
        let (xb, dyb) = (dt.encode(&x), dt.encode(&dy));
        for (sp, len) in tc_filter_splits(&p) {
            p.splits = sp;
            p.split_len = len;
            let Some(natural) = launch::conv_filter_partial_tc(&p) else {
                continue;
            };
            // More chunks than the pipeline's 4 stages: stages refilled.
            if (len.min(npix) + 31) / 32 > 4 {
                deep += 1;
            }
            // The workspaces (every split's partial filter, poisoned before each run)
            // compared bit for bit; the sum of the wgmma one against the reference.
            let mma = run_filter_partial(
                "conv2d_backprop_filter_partial_tc_nhwc",
                dt,
                &p,
                natural,
                &xb,
                &dyb,
            );
            for l in [
                natural,
                launch::Launch {
                    grid: (1, 1, 1),
                    ..natural
                },
            ] {
                let ws = run_filter_partial(
                    "conv2d_backprop_filter_partial_tc_nhwc_wgmma",
                    dt,
                    &p,
                    l,
                    &xb,
                    &dyb,
                );
                let at = format!("{what} splits={sp}x{len} grid {:?}", l.grid);
                assert!(ws == mma, "{at}: not the mma.sync kernel's partial sums");
            }
            let out = run_filter_reduce(dt, &p, mma);
            let at = format!("{what} splits={sp}x{len}");
            check(&at, dt, &dt.decode(&out), &want);
            if exact {
                assert_eq!(dt.decode(&out), want, "{at}: not exact");
            }
        }
        ran += 1;
    }
    assert!(ran >= 3, "only {ran} cases ran");
    assert!(
        multi_tile > 0,
        "no case of several filter-row or channel tiles"
    );
    assert!(deep > 0, "no split of more than four chunks");
    for name in wgmma_kernels::FILTER {
        assert!(
            KERNELS_RUN.with(|k| k.borrow().contains(name)),
            "{name} never ran"
        );
    }
    println!(
        "emulated_conv2d_backprop_filter_wgmma: {ran} cases (16-bit NHWC), {multi_tile} of several tiles, {deep} splits of 5+ chunks, bit for bit against mma.sync"
    );
}

/// The NCHW filter gradient's tensor-core partial sums by runs of 16 bytes
/// (`conv2d_backprop_filter_partial_tc_*`: x's runs loaded 16 bytes at a time and shifted into
/// place where a run lies in one x row at stride 1 or 2, dy's as 16-byte copies where its planes
/// are whole runs) against the elementwise loop they replaced
/// (`conv2d_backprop_filter_partial_tc_elementwise_*`), bit for bit (the same staged tiles,
/// products and order), and against the float64 reference (exactly on inputs whose sums are
/// exact): every dtype; x rows of whole runs and one element longer; dy planes of whole runs
/// and not; tap offsets negative, zero and past a run (dilations up to 5, left pads up to the
/// kernel's extent); stride 1 and 2 along x (both on runs); one and two groups, several tiles;
/// the runtime's split, one and three, on the natural grid and on one block.
#[test]
fn emulated_conv2d_backprop_filter_nchw_runs() {
    let Some(_) = runner_or_skip("emulated_conv2d_backprop_filter_nchw_runs") else {
        return;
    };
    let mut rng = Rng(0x5eed_0fa1);
    let (mut ran, mut x_runs, mut x_ragged, mut dy_runs, mut dy_ragged) = (0, 0, 0, 0, 0);
    // Element sizes whose x runs ran at stride 2 (each packs its kept elements its own way).
    let mut x_runs_s2 = std::collections::BTreeSet::new();
    let (mut far_shift, mut multi_tile, mut deep) = (0, 0, 0);
    for case in 0..cases_count_tc().max(8) {
        let dt = DTS[case % DTS.len()];
        let vec = 16 / dt.size() as i64;
        let exact = matches!(dt, Dt::F32 | Dt::F64) && (case / DTS.len()).is_multiple_of(2);
        let groups = 1 + (case % 3 == 2) as i64;
        let big = case == 1;
        let cig = if big {
            rng.range(8, 12)
        } else {
            rng.range(1, 6)
        };
        let cog = if big {
            rng.range(60, 70)
        } else {
            rng.range(1, 9)
        };
        let (ci, co) = (cig * groups, cog * groups);
        // Every fourth case (f16) with a tap 8 to 10 elements right of its pixel.
        let far = case % 4 == 0;
        let (kh, kw) = (rng.range(1, 3), if far { 3 } else { rng.range(1, 3) });
        let (dh, dw) = (rng.range(1, 2), if far { 5 } else { rng.range(1, 5) });
        // Stride 2 along x in four cases (f32 twice, bf16, f64), their x rows long enough
        // for runs of output pixels in one row.
        let sw2 = case % 4 == 2 || case % 8 == 5 || case % 8 == 7;
        let (sh, sw) = (rng.range(1, 2), if sw2 { 2 } else { 1 });
        // x rows of whole runs (16-byte loads) but in every third case at stride 1.
        let runs = if sw2 {
            rng.range(if vec == 8 { 4 } else { 3 }, 5)
        } else {
            rng.range(1 + far as i64, 3)
        };
        let wi = vec * runs + (case % 3 == 1 && !sw2) as i64;
        let hi = rng.range(3, 7);
        let kew = (kw - 1) * dw + 1;
        let (pt, pb) = (rng.range(0, 1), rng.range(0, 1));
        let pl = if far {
            rng.range(0, 2)
        } else {
            rng.range(0, kew - 1)
        };
        let pr = rng.range(0, 1);
        let n = rng.range(1, 3);
        let Some(mut p) = filter_geometry(
            (n, ci, co, groups),
            NCHW,
            (hi, wi),
            (kh, kw),
            (sh, sw),
            (dh, dw),
            (pt, pb, pl, pr),
        ) else {
            continue;
        };
        let what = format!("filter nchw runs {dt:?} {}", filter_what(&p));
        if wi % vec == 0 && p.wo >= vec {
            x_runs += 1;
            if sw == 2 {
                x_runs_s2.insert(dt.size());
            }
        } else {
            x_ragged += 1;
        }
        if (p.ho * p.wo) % vec == 0 {
            dy_runs += 1;
        } else {
            dy_ragged += 1;
        }
        // A tap whose run starts a whole run or more to the right of its pixel.
        if (kw - 1) * dw - pl >= vec {
            far_shift += 1;
        }
        if kh * kw * cig > 64 || cog > 64 {
            multi_tile += 1;
        }
        let (xl, dyl) = ((n * ci * hi * wi) as usize, (n * co * p.ho * p.wo) as usize);
        let (x, dy) = (
            filter_input(&mut rng, dt, exact, xl),
            filter_input(&mut rng, dt, exact, dyl),
        );
        let want = filter_reference(&p, &x, &dy);
        let npix = n * p.ho * p.wo;
        let bk = 64 / dt.size() as i64;
        let (xb, dyb) = (dt.encode(&x), dt.encode(&dy));
        for (sp, len) in tc_filter_splits(&p) {
            p.splits = sp;
            p.split_len = len;
            let Some(natural) = launch::conv_filter_partial_tc(&p) else {
                continue;
            };
            // Three or more chunks: both stages refilled.
            if (len.min(npix) + bk - 1) / bk >= 3 {
                deep += 1;
            }
            let elementwise = run_filter_partial(
                "conv2d_backprop_filter_partial_tc_elementwise",
                dt,
                &p,
                natural,
                &xb,
                &dyb,
            );
            for l in [
                natural,
                launch::Launch {
                    grid: (1, 1, 1),
                    ..natural
                },
            ] {
                let ws =
                    run_filter_partial("conv2d_backprop_filter_partial_tc", dt, &p, l, &xb, &dyb);
                let at = format!("{what} splits={sp}x{len} grid {:?}", l.grid);
                assert!(
                    ws == elementwise,
                    "{at}: not the elementwise loop's partial sums"
                );
            }
            let out = run_filter_reduce(dt, &p, elementwise);
            let at = format!("{what} splits={sp}x{len}");
            check(&at, dt, &dt.decode(&out), &want);
            if exact {
                assert_eq!(dt.decode(&out), want, "{at}: not exact");
            }
        }
        ran += 1;
    }
    assert!(ran >= 6, "only {ran} cases ran");
    assert!(
        x_runs > 0 && x_ragged > 0 && dy_runs > 0 && dy_ragged > 0,
        "x rows of runs {x_runs} / not {x_ragged}, dy planes of runs {dy_runs} / not {dy_ragged}"
    );
    assert_eq!(
        x_runs_s2.into_iter().collect::<Vec<_>>(),
        [2, 4, 8],
        "element sizes on x runs at stride 2"
    );
    assert!(far_shift > 0, "no tap a whole run off its pixel");
    assert!(multi_tile > 0, "no case of several tiles");
    assert!(deep > 0, "no split of three or more chunks");
    println!(
        "emulated_conv2d_backprop_filter_nchw_runs: {ran} cases, x rows of runs {x_runs} / not {x_ragged} (at stride 2 too, 2-, 4- and 8-byte types), dy planes of runs {dy_runs} / not {dy_ragged}, {far_shift} with a tap a run or more off, {multi_tile} of several tiles, {deep} splits of 3+ chunks, bit for bit against the elementwise loop"
    );
}

/// conv2d_backprop_filter with nothing to reduce (an empty dy) writes an all-zero dw, and a
/// zero-sized kernel axis launches nothing.
#[test]
fn emulated_conv2d_backprop_filter_degenerate_geometry() {
    let Some(_) = runner_or_skip("emulated_conv2d_backprop_filter_degenerate_geometry") else {
        return;
    };
    for dt in DTS {
        // in 2, pads [2, 2], kernel 4 dilated 2 (ke 7), stride 3: out 0 rows.
        let mut p = GoConvFilterParams {
            x: 1,
            dy: 2,
            ws: 3,
            out: 0,
            n: 2,
            ci: 3,
            hi: 2,
            wi: 3,
            co: 2,
            ho: 0,
            wo: 3,
            kh: 4,
            kw: 1,
            sh: 3,
            sw: 1,
            dh: 2,
            dw: 1,
            pad_top: 2,
            pad_left: 0,
            groups: 1,
            splits: 0,
            split_len: 0,
            layout: NCHW,
            filter_layout: params::GO_FILTER_HWIO as i32,
        };
        (p.splits, p.split_len) = launch::conv_filter_split(&p);
        assert_eq!((p.splits, p.split_len), (0, 0));
        assert!(launch::conv_filter_partial(&p).is_none());
        let x = dt.encode(&vec![1.0; 2 * 3 * 2 * 3]);
        let out = run_filter(dt, &p, None, &x, &[]);
        check("empty dy", dt, &dt.decode(&out), &[0.0; 4 * 3 * 2]);
        p.kh = 0;
        assert!(launch::conv_filter_reduce(&p).is_none());
        assert_eq!(launch::conv_filter_split(&p), (0, 0));
    }
}

// ------------------------------------------------------------------ max pool ----

#[test]
fn emulated_max_pool() {
    let Some(_) = runner_or_skip("emulated_max_pool") else {
        return;
    };
    let mut rng = Rng(0x5eed_0003);
    let mut ran = 0;
    for case in 0..cases() + DTS.len() {
        // Every dtype in both layouts, and the every-4th special cases over several dtypes.
        let dt = DTS[(case + case / DTS.len()) % DTS.len()];
        let layout = if (case / DTS.len()).is_multiple_of(2) {
            NCHW
        } else {
            NHWC
        };
        let n = rng.range(1, 2);
        let c = rng.range(1, 5);
        let (hi, wi) = (rng.range(1, 11), rng.range(1, 11));
        let (kh, kw) = (rng.range(1, 4), rng.range(1, 4));
        let (sh, sw) = (rng.range(1, 3), rng.range(1, 3));
        let (pt, pb) = (rng.range(0, kh - 1), rng.range(0, kh - 1));
        let (pl, pr) = (rng.range(0, kw - 1), rng.range(0, kw - 1));
        if hi + pt + pb < kh || wi + pl + pr < kw {
            continue;
        }
        pool_case(
            dt,
            layout,
            (n, c, hi, wi),
            (kh, kw, sh, sw),
            (pt, pb, pl, pr),
            case % 4 == 1,
            &mut rng,
        );
        ran += 1;
    }
    assert_every_dtype_ran(
        "emulated_max_pool",
        &[
            "max_pool_forward",
            "max_pool_grad",
            "max_pool_grad_argmax",
            "max_pool_tile_forward",
            "max_pool_tile_grad",
            "max_pool_tile_grad_argmax",
            "max_pool_tile_k3_forward",
            "max_pool_tile_k3_grad",
            "max_pool_tile_k3_grad_argmax",
            "max_pool_direct_k3_forward",
        ],
    );
    println!("emulated_max_pool: {ran} random cases x 3 kernels x 2 grids");
}

/// One max-pool case through the generic, tiled and (windows up to 3x3) unrolled tiled
/// forward, grad and stored-argmax grad kernels, against the reference (TF rule), every grad bitwise equal to the others.
fn pool_case(
    dt: Dt,
    layout: i32,
    (n, c, hi, wi): (i64, i64, i64, i64),
    (kh, kw, sh, sw): (i64, i64, i64, i64),
    (pt, pb, pl, pr): (i64, i64, i64, i64),
    with_nan: bool,
    rng: &mut Rng,
) {
    let ho = (hi + pt + pb - kh) / sh + 1;
    let wo = (wi + pl + pr - kw) / sw + 1;
    let what = format!("max_pool {dt:?} layout={layout} n={n} c={c} in={hi}x{wi} k={kh}x{kw} s={sh}x{sw} pad=({pt},{pb},{pl},{pr})");
    // Few distinct values so ties are common; a NaN now and then (TF rule).
    let mut x: Vec<f64> = (0..n * c * hi * wi)
        .map(|_| dt.round((rng.range(-3, 3) as f64) * 0.25))
        .collect();
    if with_nan {
        for _ in 0..3 {
            let i = rng.range(0, x.len() as i64 - 1) as usize;
            x[i] = f64::NAN;
        }
    }
    let dy = rng.vec((n * c * ho * wo) as usize, dt);
    let mut yref = vec![0.0; dy.len()];
    let mut amref = vec![-1i64; dy.len()];
    let mut dxref = vec![0.0; x.len()];
    for b in 0..n {
        for ch in 0..c {
            for oy in 0..ho {
                for ox in 0..wo {
                    let o = idx(layout, b, ch, oy, ox, c, ho, wo);
                    let mut best: Option<(usize, f64)> = None;
                    for h in oy * sh - pt..oy * sh - pt + kh {
                        for w in ox * sw - pl..ox * sw - pl + kw {
                            if h < 0 || h >= hi || w < 0 || w >= wi {
                                continue;
                            }
                            let i = idx(layout, b, ch, h, w, c, hi, wi);
                            if best.is_none() || x[i] > best.unwrap().1 {
                                best = Some((i, x[i]));
                            }
                        }
                    }
                    if let Some((i, v)) = best {
                        yref[o] = v;
                        amref[o] = i as i64;
                        dxref[i] += dy[o];
                    }
                }
            }
        }
    }
    let p = GoPoolParams {
        x: 1,
        y: 2,
        argmax: 3,
        dy: 4,
        dx: 5,
        n,
        c,
        hi,
        wi,
        ho,
        wo,
        kh,
        kw,
        sh,
        sw,
        pad_top: pt,
        pad_left: pl,
        layout,
        ..Default::default()
    };
    let mut grads = Vec::new();
    // The generic kernels, the tiled ones with the runtime's own tiles, and the unrolled
    // tiled ones for windows of at most 3x3.
    let variants: &[&str] = if kh <= 3 && kw <= 3 {
        &["", "tile_", "tile_k3_"]
    } else {
        &["", "tile_"]
    };
    for &variant in variants {
        let tiled = !variant.is_empty();
        let tile_of = |kind: launch::PoolKernel, family: &str| {
            let tile = launch::pool_tiling(&p, kind, dt.size(), if dt == Dt::F64 { 8 } else { 4 })
                .expect("small windows always fit the tiled max-pool kernels");
            let mut q = p;
            (q.tile_h, q.tile_w, q.tile_c) = tile;
            (q, format!("max_pool_{variant}{family}_{}", dt.suffix()))
        };
        let (pf, fwd_name, fwd_launch) = if tiled {
            let (q, name) = tile_of(launch::PoolKernel::Forward, "forward");
            (q, name, launch::pool_tile(&q, launch::PoolKernel::Forward))
        } else {
            (
                p,
                format!("max_pool_forward_{}", dt.suffix()),
                launch::pool_forward(&p),
            )
        };
        let mut argmax_bytes = None;
        for l in launches(fwd_launch, rng) {
            argmax_bytes = Some(forward_checked(
                &what, &fwd_name, l, &pf, dt, &x, &yref, &amref,
            ));
        }
        let (pg, grad_name, grad_launch) = if tiled {
            let (q, name) = tile_of(launch::PoolKernel::Grad, "grad");
            (q, name, launch::pool_tile(&q, launch::PoolKernel::Grad))
        } else {
            (
                p,
                format!("max_pool_grad_{}", dt.suffix()),
                launch::pool_grad(&p),
            )
        };
        let (ps, stored_name, stored_launch) = if tiled {
            let (q, name) = tile_of(launch::PoolKernel::GradStored, "grad_argmax");
            (
                q,
                name,
                launch::pool_tile(&q, launch::PoolKernel::GradStored),
            )
        } else {
            (
                p,
                format!("max_pool_grad_argmax_{}", dt.suffix()),
                launch::pool_grad(&p),
            )
        };
        for l in launches(grad_launch, rng) {
            let r = run_kernel(
                &grad_name,
                l,
                &as_bytes(&pg),
                &[
                    BufSpec::In(dt.encode(&x)),
                    BufSpec::In(vec![]),
                    BufSpec::In(vec![]),
                    BufSpec::In(dt.encode(&dy)),
                    BufSpec::Out(x.len() * dt.size()),
                ],
            );
            let dx = dt.decode(&r[4]);
            check(&format!("{what} grad grid {:?}", l.grid), dt, &dx, &dxref);
            grads.push(dx);
        }
        for l in launches(stored_launch, rng) {
            let r = run_kernel(
                &stored_name,
                l,
                &as_bytes(&ps),
                &[
                    BufSpec::In(vec![]),
                    BufSpec::In(vec![]),
                    BufSpec::In(argmax_bytes.clone().unwrap()),
                    BufSpec::In(dt.encode(&dy)),
                    BufSpec::Out(x.len() * dt.size()),
                ],
            );
            let dx = dt.decode(&r[4]);
            check(
                &format!("{what} grad_argmax grid {:?}", l.grid),
                dt,
                &dx,
                &dxref,
            );
            grads.push(dx);
        }
    }
    // The direct forward for windows of at most 3x3.
    if kh <= 3 && kw <= 3 {
        let name = format!("max_pool_direct_k3_forward_{}", dt.suffix());
        for l in launches(launch::pool_direct(&p), rng) {
            forward_checked(&what, &name, l, &p, dt, &x, &yref, &amref);
        }
    }
    // Every grad kernel (recomputed or stored argmax, generic or tiled) sums the same
    // dy in the same order: bitwise equal.
    for g in &grads[1..] {
        assert!(
            g.iter()
                .zip(&grads[0])
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{what}: grads differ bitwise"
        );
    }
}

/// Runs a max-pool forward kernel and checks y (bitwise, NaN for NaN) and the argmax
/// against the reference; returns the argmax bytes for the stored-argmax grads.
fn forward_checked(
    what: &str,
    kernel: &str,
    l: launch::Launch,
    p: &GoPoolParams,
    dt: Dt,
    x: &[f64],
    yref: &[f64],
    amref: &[i64],
) -> Vec<u8> {
    let r = run_kernel(
        kernel,
        l,
        &as_bytes(p),
        &[
            BufSpec::In(dt.encode(x)),
            BufSpec::Out(yref.len() * dt.size()),
            BufSpec::Out(yref.len() * 8),
            BufSpec::In(vec![]),
            BufSpec::In(vec![]),
        ],
    );
    let y = dt.decode(&r[1]);
    let am: Vec<i64> = r[2]
        .chunks_exact(8)
        .map(|b| i64::from_le_bytes(b.try_into().unwrap()))
        .collect();
    assert_eq!(am, amref, "{what}: {kernel} argmax");
    for (i, (a, b)) in y.iter().zip(yref).enumerate() {
        assert!(
            a == b || (a.is_nan() && b.is_nan()),
            "{what}: {kernel} y[{i}] = {a}, expected {b}"
        );
    }
    // Without an argmax buffer (address 0, as `max_pool(.., false)` launches it): the same
    // y, and the (poisoned) argmax slot untouched.
    let q = GoPoolParams { argmax: 0, ..*p };
    let r0 = run_kernel(
        kernel,
        l,
        &as_bytes(&q),
        &[
            BufSpec::In(dt.encode(x)),
            BufSpec::Out(yref.len() * dt.size()),
            BufSpec::Out(yref.len() * 8),
            BufSpec::In(vec![]),
            BufSpec::In(vec![]),
        ],
    );
    assert_eq!(r0[1], r[1], "{what}: {kernel} y without argmax");
    assert!(
        r0[2].iter().all(|&b| b == 0xFF),
        "{what}: {kernel} stored an argmax at address 0"
    );
    r[2].clone()
}

/// Images large enough for several tiles in every direction (and channel tiles in NHWC),
/// with the workload's 3x3/2 SAME window and larger, overlapping ones.
#[test]
fn emulated_max_pool_tiles() {
    let Some(_) = runner_or_skip("emulated_max_pool_tiles") else {
        return;
    };
    let mut rng = Rng(0x5eed_0006);
    type Quad = (i64, i64, i64, i64);
    let cases: [(Quad, Quad, Quad); 4] = [
        ((1, 2, 45, 140), (3, 3, 2, 2), (0, 1, 0, 1)),
        ((2, 37, 19, 23), (3, 3, 2, 2), (1, 1, 1, 1)),
        ((1, 3, 40, 70), (5, 4, 1, 3), (2, 2, 0, 3)),
        ((1, 1, 21, 300), (7, 7, 3, 3), (3, 3, 3, 3)),
    ];
    for (k, &(dims, win, pads)) in cases.iter().enumerate() {
        for layout in [NCHW, NHWC] {
            pool_case(
                DTS[k % DTS.len()],
                layout,
                dims,
                win,
                pads,
                k % 2 == 1,
                &mut rng,
            );
        }
    }
    // Windows too large for the shared memory even for a one-cell tile: no tiling, so
    // the runtime falls back to the generic kernels.
    let huge = GoPoolParams {
        n: 1,
        c: 1,
        hi: 100,
        wi: 100,
        ho: 1,
        wo: 1,
        kh: 100,
        kw: 100,
        sh: 1,
        sw: 1,
        layout: NCHW,
        ..Default::default()
    };
    for kind in [launch::PoolKernel::Forward, launch::PoolKernel::Grad] {
        assert_eq!(launch::pool_tiling(&huge, kind, 8, 8), None, "{kind:?}");
    }
    assert!(launch::pool_tiling(&huge, launch::PoolKernel::GradStored, 8, 8).is_some());
}

// ------------------------------------------------- resize vs the crate's CPU path ----

fn crate_resize_case<T: gradops::Element>(dt: Dt, rng: &mut Rng, layout: gradops::Layout) -> usize
where
    T::Acc: Into<f64>,
{
    use gradops::geometry::{CoordinateTransform as C, NearestMode as N, ResizeMode as M};
    let modes = [M::Linear, M::Nearest];
    let ctms = [
        C::HalfPixel,
        C::PytorchHalfPixel,
        C::AlignCorners,
        C::Asymmetric,
        C::TfHalfPixelForNn,
    ];
    let nms = [N::RoundPreferFloor, N::RoundPreferCeil, N::Floor, N::Ceil];
    let mut ran = 0;
    for _ in 0..cases() {
        let (n, c) = (rng.range(1, 2) as usize, rng.range(1, 4) as usize);
        let (hi, wi, ho, wo) = (
            rng.range(1, 9) as usize,
            rng.range(1, 9) as usize,
            rng.range(1, 13) as usize,
            rng.range(1, 13) as usize,
        );
        let attrs = gradops::ResizeAttrs::new(rng.pick(&modes))
            .coordinate_transformation_mode(rng.pick(&ctms))
            .nearest_mode(rng.pick(&nms));
        let (xs, dys) = match layout {
            gradops::Layout::Nchw => ([n, c, hi, wi], [n, c, ho, wo]),
            gradops::Layout::Nhwc => ([n, hi, wi, c], [n, ho, wo, c]),
        };
        let Ok(plan) =
            gradops::ops::resize::plan_resize_grad::<T>("resize_grad", dys, xs, layout, &attrs)
        else {
            continue;
        };
        let dy64 = rng.vec(n * c * ho * wo, dt);
        let dy: Vec<T> = dy64.iter().map(|&v| T::from_f64(v)).collect();
        let mut cpu = vec![T::default(); n * c * hi * wi];
        gradops::ops::resize::run_plan_cpu("resize_grad", &plan, layout, &dy, &mut cpu).unwrap();
        let cpu: Vec<f64> = cpu.iter().map(|v| v.to_f64()).collect();
        let table = |t: &gradops::geometry::resize::AxisTable<T::Acc>| Table {
            offsets: t.offsets.clone(),
            index: t.index.clone(),
            weight: t.weight.iter().map(|&w| w.into()).collect(),
        };
        let code = if layout == gradops::Layout::Nchw {
            NCHW
        } else {
            NHWC
        };
        let outs = run_resize(
            dt,
            code,
            n as i64,
            c as i64,
            (ho as i64, wo as i64),
            (hi as i64, wi as i64),
            &table(&plan.y),
            &table(&plan.x),
            &dy64,
            rng,
        );
        for out in outs {
            check(
                &format!("crate plan {:?} {layout:?} {xs:?} <- {dys:?} {attrs:?}", dt),
                dt,
                &out,
                &cpu,
            );
        }
        ran += 1;
    }
    ran
}

/// The kernel fed with the crate's own geometry tables (src/geometry/resize.rs) gives
/// what the crate's CPU gather gives.
#[test]
fn emulated_resize_with_crate_tables_matches_cpu() {
    let Some(_) = runner_or_skip("emulated_resize_with_crate_tables_matches_cpu") else {
        return;
    };
    let mut rng = Rng(0x5eed_0004);
    let mut ran = 0;
    for layout in [gradops::Layout::Nchw, gradops::Layout::Nhwc] {
        ran += crate_resize_case::<gradops::f16>(Dt::F16, &mut rng, layout);
        ran += crate_resize_case::<gradops::bf16>(Dt::BF16, &mut rng, layout);
        ran += crate_resize_case::<f32>(Dt::F32, &mut rng, layout);
        ran += crate_resize_case::<f64>(Dt::F64, &mut rng, layout);
    }
    println!("emulated_resize_with_crate_tables_matches_cpu: {ran} cases");
}

// ------------------------------------------------------- tensor-core primitives ----

#[repr(C)]
#[derive(Clone, Copy)]
struct EmuMmaTestParams {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    trans: i32,
    pad: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct EmuWgmmaTestParams {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    k32: i32,
    bmn: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct EmuWgmmaPipeTestParams {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
    nk: i32,
    flags: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct EmuCpAsyncTestParams {
    src: u64,
    out: u64,
}

const ONE_WARP: launch::Launch = launch::Launch {
    grid: (1, 1, 1),
    block: (32, 1, 1),
};

/// Operands of a warp-primitive model test: A (`na` values) and B (`nb`), 16-bit values
/// (small integers where `exact`), and C (`nc`, f32; integers where `exact`).
fn model_operands(
    rng: &mut Rng,
    dt: Dt,
    exact: bool,
    (na, nb, nc): (usize, usize, usize),
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let val = |rng: &mut Rng| {
        if exact {
            rng.range(-3, 3) as f64
        } else {
            dt.round(rng.unit())
        }
    };
    let a: Vec<f64> = (0..na).map(|_| val(rng)).collect();
    let b: Vec<f64> = (0..nb).map(|_| val(rng)).collect();
    let c: Vec<f64> = (0..nc)
        .map(|_| {
            if exact {
                rng.range(-8, 8) as f64
            } else {
                rng.unit() as f32 as f64
            }
        })
        .collect();
    (a, b, c)
}

/// A model test's result against the product computed here: bitwise where `exact`, else
/// within f32 rounding of the sum.
fn check_model(got: f64, want: f64, exact: bool, what: &str) {
    if exact {
        assert_eq!(got, want, "{what}");
    } else {
        assert!(
            (got - want).abs() <= 1e-5 * (1.0 + want.abs()),
            "{what}: {got} vs {want}"
        );
    }
}

/// The host model of mma.sync m16n8k16 + ldmatrix (kernels/mma.cuh), through a one-warp
/// kernel that loads A and B fragments from shared memory with ldmatrix (B as [n][k], and
/// as [k][n] through ldmatrix.trans) and multiplies two n8 fragments: bitwise equal to the
/// plain product where it is exact (small integers), within f32 rounding of the f64
/// product otherwise. A wrong lane/register mapping in either primitive moves elements
/// and fails both.
#[test]
fn emulated_mma_and_ldmatrix_model() {
    let Some(_) = runner_or_skip("emulated_mma_and_ldmatrix_model") else {
        return;
    };
    let mut rng = Rng(0x5eed_00c0);
    let mut runs = 0;
    for dt in [Dt::F16, Dt::BF16] {
        for trans in [0, 1] {
            for exact in [true, false] {
                // A [m][k], B [k][n].
                let (a, bkn, c) = model_operands(&mut rng, dt, exact, (256, 256, 256));
                // The buffer as the kernel reads it: [n][k] for ldmatrix, [k][n] for .trans.
                let bbuf: Vec<f64> = if trans == 1 {
                    bkn.clone()
                } else {
                    (0..256).map(|i| bkn[(i % 16) * 16 + i / 16]).collect()
                };
                let p = EmuMmaTestParams {
                    a: 1,
                    b: 2,
                    c: 3,
                    d: 4,
                    trans,
                    pad: 0,
                };
                let r = run_kernel(
                    &format!("emu_mma_test_{}", dt.suffix()),
                    ONE_WARP,
                    &as_bytes(&p),
                    &[
                        BufSpec::In(dt.encode(&a)),
                        BufSpec::In(dt.encode(&bbuf)),
                        BufSpec::In(Dt::F32.encode(&c)),
                        BufSpec::Out(256 * 4),
                    ],
                );
                let d = Dt::F32.decode(&r[3]);
                for m in 0..16 {
                    for n in 0..16 {
                        let want: f64 = c[m * 16 + n]
                            + (0..16)
                                .map(|k| a[m * 16 + k] * bkn[k * 16 + n])
                                .sum::<f64>();
                        let what = format!("{dt:?} trans={trans} exact={exact} D[{m}][{n}]");
                        check_model(d[m * 16 + n], want, exact, &what);
                    }
                }
                runs += 1;
            }
        }
    }
    assert_eq!(runs, 8);
}

/// The wgmma model (kernels/mma.cuh, emu/cuda_emu.h): one warpgroup's m64n64k16 on K-major
/// operands in the 64-byte swizzle, once (k 16) or twice (k 32, the second from 32 bytes
/// into each row, as the conv kernel's second k16), B also N-major (imm-trans-b, the
/// forward's: 32-n rows of one k, the second k16 two atoms on), A also M-major (the filter
/// gradient's) or K-major without swizzle starting at row 3 of its planes (mode 0, the halo
/// tile's: 16-byte rows, 8-row core matrices 128 bytes apart, planes of 8 k 1152 bytes apart,
/// the second k16 two planes on), against A * B + C computed
/// here: every element of D where the accumulator layout (thread l of warp w: rows
/// 16w + l/4, + 8; columns 8i + 2(l%4), + 1) and the swizzle (chunk c of row r at
/// c ^ ((r >> 1) & 3)) put it. Exact on integer data, f32 rounding on random data. And
/// m64n64k8 tf32 (the f32 conv tile's) on f32 rows of the same 64 bytes, once or twice, A
/// from shared memory or (the register-source form) from each thread's fragment registers
/// (thread l of warp w: A[16w + l/4][l%4], row + 8, k + 4, both: CUTLASS's `ALayout_64x8`).
#[test]
fn emulated_wgmma_model() {
    let Some(_) = runner_or_skip("emulated_wgmma_model") else {
        return;
    };
    let mut rng = Rng(0x5eed_0c90);
    let mut runs = 0;
    for dt in [Dt::F16, Dt::BF16] {
        // bmn: bit 0 B N-major, bit 1 A M-major (the filter gradient's operands), bit 2 A
        // K-major without swizzle from a row inside an 8-row group (the halo tile's).
        for (k32, bmn) in (0..6).flat_map(|bmn| [(0, bmn), (1, bmn)]) {
            for exact in [true, false] {
                let kk = if k32 == 1 { 32 } else { 16 };
                // A [m][k], B [n][k].
                let (a, b, c) = model_operands(&mut rng, dt, exact, (64 * kk, 64 * kk, 64 * 64));
                let p = EmuWgmmaTestParams {
                    a: 1,
                    b: 2,
                    c: 3,
                    d: 4,
                    k32,
                    bmn,
                };
                let r = run_kernel(
                    &format!("emu_wgmma_test_{}", dt.suffix()),
                    launch::Launch {
                        grid: (1, 1, 1),
                        block: (128, 1, 1),
                    },
                    &as_bytes(&p),
                    &[
                        BufSpec::In(dt.encode(&a)),
                        BufSpec::In(dt.encode(&b)),
                        BufSpec::In(Dt::F32.encode(&c)),
                        BufSpec::Out(64 * 64 * 4),
                    ],
                );
                let d = Dt::F32.decode(&r[3]);
                for m in 0..64 {
                    for n in 0..64 {
                        let want: f64 = c[m * 64 + n]
                            + (0..kk).map(|k| a[m * kk + k] * b[n * kk + k]).sum::<f64>();
                        let what = format!("{dt:?} k32={k32} bmn={bmn} exact={exact} D[{m}][{n}]");
                        check_model(d[m * 64 + n], want, exact, &what);
                    }
                }
                runs += 1;
            }
        }
    }
    // tf32 (m64n64k8, K-major): operands already tf32 values, as the f32 conv tile's split
    // leaves them; k 8 (one wgmma) or 16 (two, 32 bytes apart in each row); A from shared
    // memory (bmn 0) or from each thread's registers (bmn 4: the register-source form).
    for (k16, bmn) in [(0, 0), (1, 0), (0, 4), (1, 4)] {
        for exact in [true, false] {
            let kk = if k16 == 1 { 16 } else { 8 };
            let (a, b, c) = model_operands(&mut rng, Dt::F32, exact, (64 * kk, 64 * kk, 64 * 64));
            let (a, b): (Vec<f64>, Vec<f64>) = (
                a.iter().map(|&v| tf32(v as f32)).collect(),
                b.iter().map(|&v| tf32(v as f32)).collect(),
            );
            let p = EmuWgmmaTestParams {
                a: 1,
                b: 2,
                c: 3,
                d: 4,
                k32: k16,
                bmn,
            };
            let r = run_kernel(
                "emu_wgmma_test_tf32",
                launch::Launch {
                    grid: (1, 1, 1),
                    block: (128, 1, 1),
                },
                &as_bytes(&p),
                &[
                    BufSpec::In(Dt::F32.encode(&a)),
                    BufSpec::In(Dt::F32.encode(&b)),
                    BufSpec::In(Dt::F32.encode(&c)),
                    BufSpec::Out(64 * 64 * 4),
                ],
            );
            let d = Dt::F32.decode(&r[3]);
            for m in 0..64 {
                for n in 0..64 {
                    let want: f64 =
                        c[m * 64 + n] + (0..kk).map(|k| a[m * kk + k] * b[n * kk + k]).sum::<f64>();
                    let what = format!("tf32 k={kk} bmn={bmn} exact={exact} D[{m}][{n}]");
                    check_model(d[m * 64 + n], want, exact, &what);
                }
            }
            runs += 1;
        }
    }
    assert_eq!(runs, 56);
}

/// The mbarrier model, through the warp-specialized pipeline's skeleton
/// (`emu_wgmma_pipe_test_f16`: a producer warp filling three stages by cp.async with
/// cp.async.mbarrier.arrive.noinc, a consumer warpgroup waiting on each stage's full barrier,
/// issuing wgmma and releasing the stage on its empty barrier): D = A * B + C bit for bit for
/// 1 to 7 k32 steps (7: each stage's barriers through two and three phases, both parities on
/// both sides). Then three mutations the model must catch: the producer refilling a stage
/// without waiting for its release, the consumer reading a stage without waiting for its
/// copies, and the consumer releasing a stage while its wgmma group may still read it; each
/// must fail the run (a deadlock the scheduler reports, copies nobody waited for, an operand
/// changed under a pending group, or a wrong D).
#[test]
fn emulated_mbarrier_pipeline_model() {
    let Some(_) = runner_or_skip("emulated_mbarrier_pipeline_model") else {
        return;
    };
    let mut rng = Rng(0x5eed_0c92);
    let block = launch::Launch {
        grid: (1, 1, 1),
        block: (160, 1, 1),
    };
    let mut case = |nk: usize, flags: i32| {
        let kk = 32 * nk;
        let (a, b, c) = model_operands(&mut rng, Dt::F16, true, (64 * kk, 64 * kk, 64 * 64));
        let p = EmuWgmmaPipeTestParams {
            a: 1,
            b: 2,
            c: 3,
            d: 4,
            nk: nk as i32,
            flags,
        };
        let bufs = [
            BufSpec::In(Dt::F16.encode(&a)),
            BufSpec::In(Dt::F16.encode(&b)),
            BufSpec::In(Dt::F32.encode(&c)),
            BufSpec::Out(64 * 64 * 4),
        ];
        let want = |m: usize, n: usize| -> f64 {
            c[m * 64 + n] + (0..kk).map(|k| a[m * kk + k] * b[n * kk + k]).sum::<f64>()
        };
        if flags == 0 {
            let d = Dt::F32
                .decode(&run_kernel("emu_wgmma_pipe_test_f16", block, &as_bytes(&p), &bufs)[3]);
            for m in 0..64 {
                for n in 0..64 {
                    check_model(
                        d[m * 64 + n],
                        want(m, n),
                        true,
                        &format!("nk={nk} D[{m}][{n}]"),
                    );
                }
            }
            return String::new();
        }
        let out = run_job("emu_wgmma_pipe_test_f16", block, &as_bytes(&p), &bufs);
        if !out.status.success() {
            return format!("the run failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        // The runner's reply: per buffer its length and bytes; D is the fourth.
        let mut s = &out.stdout[..];
        for _ in 0..3 {
            let len = u64::from_le_bytes(s[..8].try_into().unwrap()) as usize;
            s = &s[8 + len..];
        }
        let d = Dt::F32.decode(&s[8..]);
        let wrong = (0..64 * 64)
            .filter(|&i| d[i] != want(i / 64, i % 64))
            .count();
        format!("{wrong} of 4096 D elements wrong")
    };
    for nk in 1..=7 {
        case(nk, 0);
    }
    for (flags, what) in [
        (1, "the producer skips the empty wait"),
        (2, "the consumer skips the full wait"),
        (
            4,
            "the consumer releases a stage its wgmma group may still read",
        ),
    ] {
        let verdict = case(7, flags);
        assert!(
            verdict.starts_with("the run failed") || !verdict.starts_with("0 of"),
            "{what}: the model must fail the run, got: {verdict}"
        );
        eprintln!("{what}: {}", verdict.lines().next().unwrap_or(""));
    }
}

/// f32 -> tf32 as cvt.rna.tf32.f32 does it: 10 mantissa bits, ties away from zero.
fn tf32(v: f32) -> f64 {
    let b = v.to_bits();
    if b & 0x7F80_0000 == 0x7F80_0000 {
        return v as f64;
    }
    f32::from_bits(b.wrapping_add(0x1000) & 0xFFFF_E000) as f64
}

/// The host models of mma m16n8k8 tf32 (with cvt.rna.tf32.f32) and mma m8n8k4 f64: bitwise
/// equal to the plain product on exact data; tf32 within f32 rounding of the product of the
/// tf32-rounded inputs (and the rounding itself checked on a tie), f64 within 1e-14.
#[test]
fn emulated_mma_tf32_and_f64_model() {
    let Some(_) = runner_or_skip("emulated_mma_tf32_and_f64_model") else {
        return;
    };
    // Ties round away from zero: 1 + 2^-11 (halfway between tf32 neighbours) -> 1 + 2^-10.
    assert_eq!(tf32(1.0 + 2f32.powi(-11)), 1.0 + 2f64.powi(-10));
    assert_eq!(tf32(-(1.0 + 2f32.powi(-11))), -(1.0 + 2f64.powi(-10)));
    let mut rng = Rng(0x5eed_00c1);
    for exact in [true, false] {
        let val = |rng: &mut Rng| {
            if exact {
                rng.range(-3, 3) as f64
            } else {
                rng.unit() as f32 as f64
            }
        };
        // tf32: A 16x8, B [n][k] 8x8, C/D 16x8.
        let a: Vec<f64> = (0..128).map(|_| val(&mut rng)).collect();
        let b: Vec<f64> = (0..64).map(|_| val(&mut rng)).collect();
        let c: Vec<f64> = (0..128).map(|_| val(&mut rng)).collect();
        let p = EmuMmaTestParams {
            a: 1,
            b: 2,
            c: 3,
            d: 4,
            trans: 0,
            pad: 0,
        };
        let r = run_kernel(
            "emu_mma_test_tf32",
            ONE_WARP,
            &as_bytes(&p),
            &[
                BufSpec::In(Dt::F32.encode(&a)),
                BufSpec::In(Dt::F32.encode(&b)),
                BufSpec::In(Dt::F32.encode(&c)),
                BufSpec::Out(128 * 4),
            ],
        );
        let d = Dt::F32.decode(&r[3]);
        for m in 0..16 {
            for n in 0..8 {
                let want = c[m * 8 + n]
                    + (0..8)
                        .map(|k| tf32(a[m * 8 + k] as f32) * tf32(b[n * 8 + k] as f32))
                        .sum::<f64>();
                let got = d[m * 8 + n];
                if exact {
                    assert_eq!(got, want, "tf32 D[{m}][{n}]");
                } else {
                    assert!(
                        (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
                        "tf32 D[{m}][{n}]: {got} vs {want}"
                    );
                }
            }
        }
        // f64: A 8x4, B [n][k] 8x4, C/D 8x8.
        let val64 = |rng: &mut Rng| {
            if exact {
                rng.range(-3, 3) as f64
            } else {
                rng.unit()
            }
        };
        let a: Vec<f64> = (0..32).map(|_| val64(&mut rng)).collect();
        let b: Vec<f64> = (0..32).map(|_| val64(&mut rng)).collect();
        let c: Vec<f64> = (0..64).map(|_| val64(&mut rng)).collect();
        let r = run_kernel(
            "emu_mma_test_f64",
            ONE_WARP,
            &as_bytes(&p),
            &[
                BufSpec::In(Dt::F64.encode(&a)),
                BufSpec::In(Dt::F64.encode(&b)),
                BufSpec::In(Dt::F64.encode(&c)),
                BufSpec::Out(64 * 8),
            ],
        );
        let d = Dt::F64.decode(&r[3]);
        for m in 0..8 {
            for n in 0..8 {
                let want = c[m * 8 + n] + (0..4).map(|k| a[m * 4 + k] * b[n * 4 + k]).sum::<f64>();
                let got = d[m * 8 + n];
                if exact {
                    assert_eq!(got, want, "f64 D[{m}][{n}]");
                } else {
                    assert!(
                        (got - want).abs() <= 1e-14 * (1.0 + want.abs()),
                        "f64 D[{m}][{n}]: {got} vs {want}"
                    );
                }
            }
        }
    }
}

#[repr(C)]
#[derive(Clone, Copy)]
struct EmuSchedTestParams {
    out: u64,
    mode: i32,
    pad: i32,
}

/// The emulator's scheduler (emu/cuda_emu.h; kernel `emu_sched_test` in
/// emu/sched_tests.cuh): with its barriers a block's shared memory reads see every write; a
/// missing barrier shows up as stale reads whichever side of the writer the reader sits, in
/// the first segment and after barriers (each pass over the threads in its own order), and
/// a barrier not every thread reaches aborts the runner at once, naming a deadlock.
#[test]
fn emulated_scheduler_races_and_deadlock() {
    let Some(_) = runner_or_skip("emulated_scheduler_races_and_deadlock") else {
        return;
    };
    const N: u32 = 64;
    let block = launch::Launch {
        grid: (1, 1, 1),
        block: (N, 1, 1),
    };
    let params = |mode: i32| {
        as_bytes(&EmuSchedTestParams {
            out: 1,
            mode,
            pad: 0,
        })
    };
    let out_buf = [BufSpec::Out(4 * N as usize * 4)];
    // What thread t reads when every write is seen: s1[t+1], s1[t-1], s2[t+1], s2[t-1].
    let want = |t: u32, i: u32| match i {
        0 => (t + 1) % N + 1,
        1 => (t + N - 1) % N + 1,
        2 => (t + 1) % N + 101,
        _ => (t + N - 1) % N + 101,
    };
    // Per read slot, how many threads read something other than the write.
    let stale = |mode: i32| -> [usize; 4] {
        let out = &run_kernel("emu_sched_test", block, &params(mode), &out_buf)[0];
        let mut n = [0; 4];
        for t in 0..N {
            for i in 0..4 {
                let k = (4 * (4 * t + i)) as usize;
                let got = u32::from_le_bytes(out[k..k + 4].try_into().unwrap());
                if got != want(t, i) {
                    n[i as usize] += 1;
                }
            }
        }
        n
    };
    assert_eq!(
        stale(0),
        [0; 4],
        "with every barrier, every read sees its write"
    );
    let m1 = stale(1);
    assert!(
        m1[0] >= 8 && m1[1] >= 8 && m1[2..] == [0, 0],
        "no barrier after the first writes: reads of both neighbours' slots must be stale for \
         some threads, the second segment's for none: {m1:?}"
    );
    let m2 = stale(2);
    assert!(
        m2[2] >= 8 && m2[3] >= 8 && m2[..2] == [0, 0],
        "no barrier after the second writes: reads of both neighbours' slots must be stale \
         for some threads, the first segment's for none: {m2:?}"
    );
    let start = Instant::now();
    let out = run_job("emu_sched_test", block, &params(3), &out_buf);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("deadlock"),
        "a __syncwarp one lane skips must abort the runner as a deadlock: {} {err}",
        out.status
    );
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "the deadlock took {:?} to report",
        start.elapsed()
    );
}

/// The cp.async model: a copy lands only at the wait_group that covers its group (reads
/// right after issuing see the poison that marks the destination undefined until then;
/// wait_group 1 completes the older group only), and a zero-fill copy (src-size 0) writes
/// zeros without reading.
#[test]
fn emulated_cp_async_model() {
    let Some(_) = runner_or_skip("emulated_cp_async_model") else {
        return;
    };
    let src: Vec<u32> = (0..256u32).map(|i| 0x1000_0000 + i).collect();
    let bytes: Vec<u8> = src.iter().flat_map(|v| v.to_le_bytes()).collect();
    let p = EmuCpAsyncTestParams { src: 1, out: 2 };
    let r = run_kernel(
        "emu_cp_async_test",
        ONE_WARP,
        &as_bytes(&p),
        &[BufSpec::In(bytes), BufSpec::Out(32 * 24 * 4)],
    );
    let out: Vec<u32> = r[1]
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    // Between issue and wait a destination holds the emulator's poison, neither the old
    // bytes nor the copy (the PTX ISA leaves it undefined).
    const POISON: u32 = 0xFFFF_FFFF;
    for l in 0..32usize {
        let o = &out[24 * l..24 * l + 24];
        let g1: Vec<u32> = (0..4).map(|i| src[8 * l + i]).collect();
        let g2: Vec<u32> = if l % 4 == 3 {
            vec![0; 4]
        } else {
            (0..4).map(|i| src[8 * l + 4 + i]).collect()
        };
        assert_eq!(
            &o[0..8],
            &[POISON; 8],
            "lane {l}: read before any wait saw other than the poison"
        );
        assert_eq!(
            &o[8..12],
            &g1[..],
            "lane {l}: wait_group 1 did not complete group 1"
        );
        assert_eq!(
            &o[12..16],
            &[POISON; 4],
            "lane {l}: wait_group 1 completed group 2 early"
        );
        assert_eq!(&o[16..20], &g1[..], "lane {l}: group 1 after wait_group 0");
        assert_eq!(
            &o[20..24],
            &g2[..],
            "lane {l}: group 2 (zero-fill on l % 4 == 3)"
        );
    }
}

// ------------------------------------------------------- tensor-core conv ----

/// One conv geometry for the tensor-core kernels.
#[derive(Clone, Copy, Debug)]
struct TcCase {
    dt: Dt,
    layout: i32,
    oihw: bool,
    n: i64,
    cig: i64,
    cog: i64,
    groups: i64,
    hi: i64,
    wi: i64,
    k: (i64, i64),
    s: (i64, i64),
    d: (i64, i64),
    pad: (i64, i64, i64, i64),
    /// Small integers: every product and sum exact in f32, so the kernel's output must equal
    /// the f64 reference rounded to the dtype bit for bit.
    exact: bool,
    /// f32 only: plain TF32 (`GO_F32_PRECISION_TF32`, the `F32Precision::Tf32` opt-in),
    /// held to [`TF32_TOL`] and required to miss SPEC's f32 1e-5 on random data.
    tf32: bool,
}

/// The TF32 opt-in's tolerance (relative L2; docs/spec-additions.md derives it: f16's, as
/// TF32 operands carry f16's 10-bit mantissa and accumulate in f32).
const TF32_TOL: f64 = 2e-3;

/// conv2d_forward_tc_* and conv2d_backprop_input_tc_* (the tensor-core implicit GEMM,
/// kernels/conv_tc.cuh, over the host model of mma/ldmatrix/cp.async) against an f64
/// reference, every dtype (f16/bf16 m16n8k16, f32 3xTF32 on m16n8k8, f64 m8n8k4; f32 held to
/// SPEC's 1e-5), both layouts, both filter layouts, strides 1-3, dilations,
/// groups, odd sizes, channel counts on the 16-byte cp.async path (multiples of 8) and off
/// it, and counts past one 64-channel tile; bitwise against the rounded reference on
/// integer data, within the dtype's tolerance on random data. Every case also runs on a
/// tiny grid and once more on the natural one: all three results bitwise identical
/// (deterministic, and independent of the grid). Where the host's rule picks the lean
/// kernels (`_vec`, `_vec_nchw`, and for 16-bit NHWC the tall `_vec_tall`, the square
/// `_vec_square` and the wgmma `_vec_wgmma` of both ops, the wide `_vec_wide` of
/// backprop_input), they run on both grids too and must give the general kernel's bits.
#[test]
fn emulated_conv2d_tensor_core() {
    let Some(_) = runner_or_skip("emulated_conv2d_tensor_core") else {
        return;
    };
    let mut rng = Rng(0x5eed_7c00);
    let mut cases = Vec::new();
    // Fixed cases: each stride, a dilation, groups, vector and scalar channel counts.
    for (i, &(cig, cog, groups, k, s, d)) in [
        (16, 16, 1, (3, 3), (1, 1), (1, 1)),
        (8, 24, 2, (3, 3), (2, 2), (1, 1)),
        (5, 7, 1, (3, 2), (3, 2), (2, 1)),
        (72, 8, 1, (1, 1), (1, 1), (1, 1)),
        (16, 40, 3, (2, 3), (2, 3), (2, 2)),
        (3, 70, 1, (3, 3), (1, 2), (1, 1)),
    ]
    .iter()
    .enumerate()
    {
        for layout in [NCHW, NHWC] {
            let dt = DTS[(i + layout as usize) % DTS.len()];
            cases.push(TcCase {
                dt,
                layout,
                oihw: i % 3 == 2,
                n: 1 + (i as i64 % 2),
                cig,
                cog,
                groups,
                hi: 5 + i as i64,
                wi: 7 - (i as i64 % 3),
                k,
                s,
                d,
                pad: (1, 0, i as i64 % 2, 1),
                exact: i % 2 == 0,
                tf32: false,
            });
        }
    }
    cases.extend(lean_tc_cases());
    cases.extend(multi_tile_tc_cases());
    cases.extend(many_pixel_tc_cases());
    cases.extend(halo_tc_cases());
    // Random cases on top.
    for case in 0..cases_count_tc() {
        let dt = DTS[case % DTS.len()];
        cases.push(TcCase {
            dt,
            layout: if (case / 2) % 2 == 0 { NCHW } else { NHWC },
            oihw: rng.range(0, 1) == 1,
            n: rng.range(1, 2),
            cig: rng.pick(&[1, 4, 8, 16, 20, 32]),
            cog: rng.pick(&[2, 8, 13, 16, 24]),
            groups: rng.range(1, 2),
            hi: rng.range(2, 9),
            wi: rng.range(2, 9),
            k: (rng.range(1, 3), rng.range(1, 3)),
            s: (rng.range(1, 3), rng.range(1, 3)),
            d: (rng.range(1, 2), rng.range(1, 2)),
            pad: (
                rng.range(0, 2),
                rng.range(0, 2),
                rng.range(0, 2),
                rng.range(0, 2),
            ),
            exact: case % 3 == 0,
            tf32: false,
        });
    }
    let mut ran = 0;
    HALO_RUNS.set(0);
    HALO_NCHW_RUNS.set(0);
    for c in cases {
        if tc_case(c, &mut rng) {
            ran += 1;
        }
    }
    // Every call of halo_tc_cases and many_pixel_tc_cases the halo tile serves, and the lean
    // and fixed cases' (28 on 2026-12-06, 13 of them NCHW; random cases may add some).
    println!(
        "the halo twin ran for {} calls, {} of them NCHW",
        HALO_RUNS.get(),
        HALO_NCHW_RUNS.get()
    );
    assert!(
        HALO_RUNS.get() >= 28 && HALO_NCHW_RUNS.get() >= 13,
        "the halo twin ran for {} calls, {} of them NCHW",
        HALO_RUNS.get(),
        HALO_NCHW_RUNS.get()
    );
    for f in [
        "conv2d_forward_tc",
        "conv2d_backprop_input_tc",
        "conv2d_forward_tc_vec",
        "conv2d_backprop_input_tc_vec",
        "conv2d_forward_tc_vec_nchw",
        "conv2d_backprop_input_tc_vec_nchw",
        "conv2d_backprop_input_tc_vec_wide",
        "conv2d_backprop_input_tc_vec_tall",
        "conv2d_backprop_input_tc_vec_square",
        "conv2d_forward_tc_vec_square",
        "conv2d_forward_tc_vec_tall",
        "conv2d_backprop_input_tc_vec_wgmma",
        "conv2d_forward_tc_vec_wgmma",
    ] {
        for dt in [Dt::F16, Dt::BF16] {
            let name = format!("{f}_{}", dt.suffix());
            assert!(
                KERNELS_RUN.with(|k| k.borrow().contains(&name)),
                "{name} never ran"
            );
        }
    }
    // (The TF32 opt-in's ws and halo entry points run under TF32 only: emulated_conv2d_tf32.)
    for name in wgmma_kernels::conv().filter(|k| !k.contains("_tf32_")) {
        assert!(
            KERNELS_RUN.with(|k| k.borrow().contains(name)),
            "{name} never ran"
        );
    }
    for f in [
        "conv2d_forward_tc_vec",
        "conv2d_backprop_input_tc_vec",
        "conv2d_forward_tc_vec_nchw",
        "conv2d_backprop_input_tc_vec_nchw",
    ] {
        for dt in [Dt::F32, Dt::F64] {
            let name = format!("{f}_{}", dt.suffix());
            assert!(
                KERNELS_RUN.with(|k| k.borrow().contains(&name)),
                "{name} never ran"
            );
        }
    }
    assert!(ran >= 12, "only {ran} tensor-core cases ran");
    println!("emulated_conv2d_tensor_core: {ran} cases x 2 ops x 3 runs");
}

/// The TF32 opt-in (`GoConvParams::f32_precision = GO_F32_PRECISION_TF32`) on
/// conv2d_forward_tc_f32 and conv2d_backprop_input_tc_f32: on random data each geometry runs
/// twice, exact (3xTF32, within SPEC's 1e-5) and plain TF32 (within [`TF32_TOL`], and above
/// 1e-5, so the flag demonstrably changes the arithmetic); on small-integer data (exact in
/// TF32) plain TF32 is bitwise equal to the rounded reference. The lean twins where the host
/// picks them (the f32 wgmma and ws tiles among them, in both arithmetics; the halo tile's
/// TF32 kernels under TF32, where they serve the call) give the same bits. Both
/// layouts, both filter
/// layouts (the forward's [k][nn] and [nn][k] B stages), strides, a dilation, groups, a
/// channel count past one tile and one off the 16-byte path; deterministic across grids.
#[test]
fn emulated_conv2d_tf32() {
    let Some(_) = runner_or_skip("emulated_conv2d_tf32") else {
        return;
    };
    const SEED: u64 = 0x5eed_7f32;
    HALO_TF32_RUNS.set(0);
    HALO_NCHW_RUNS.set(0);
    let mut ran = 0;
    for (i, &(cig, cog, groups, k, s, d)) in [
        (16, 16, 1, (3, 3), (1, 1), (1, 1)),
        (8, 24, 2, (3, 3), (2, 2), (1, 1)),
        (5, 72, 1, (2, 3), (1, 2), (2, 1)),
        // Whole 16-channel stages, two pixel tiles: the lean tiles (the f32 wgmma one too).
        (16, 32, 1, (3, 3), (2, 1), (1, 1)),
        // backprop_input's 48 channels: B rows past 32 live (the ws producer's second B
        // chunk, which it splits too), over two 128-pixel tiles.
        (48, 16, 1, (3, 3), (1, 1), (1, 1)),
        // The halo tile's (the TF32 kernels; 19 columns: two tiles of padded rows an image):
        // 64 channels both ways (16 planes; NCHW two a warp), and the forward's 128 (32
        // planes; NCHW four a warp) on a 1 x 3 filter.
        (64, 64, 1, (3, 3), (1, 1), (1, 1)),
        (128, 32, 1, (1, 3), (1, 1), (1, 1)),
        // Two groups of 32 channels (the group's source planes and filter), dilated rows.
        (32, 32, 2, (3, 3), (1, 1), (2, 1)),
    ]
    .iter()
    .enumerate()
    {
        for layout in [NCHW, NHWC] {
            for exact in [false, true] {
                // Random data: exact then TF32 on the same draw (one seed per geometry).
                for tf32 in if exact { vec![true] } else { vec![false, true] } {
                    let c = TcCase {
                        dt: Dt::F32,
                        layout,
                        oihw: i < 3 && (i + layout as usize) % 2 == 1,
                        n: 2,
                        cig,
                        cog,
                        groups,
                        hi: 6 + i as i64,
                        wi: if i >= 5 { 19 } else { 7 },
                        k,
                        s,
                        d,
                        pad: (1, 1, 0, 1),
                        exact,
                        tf32,
                    };
                    let mut draw = Rng(SEED ^ (i as u64 * 131 + layout as u64));
                    if tc_case(c, &mut draw) {
                        ran += 1;
                    }
                }
            }
        }
    }
    assert_eq!(ran, 48, "every TF32 geometry has an output");
    for name in [
        "conv2d_backprop_input_tc_vec_wgmma_f32",
        "conv2d_backprop_input_tc_vec_nchw_wgmma_f32",
        "conv2d_forward_tc_vec_wgmma_f32",
        "conv2d_forward_tc_vec_nchw_wgmma_f32",
    ] {
        assert!(
            KERNELS_RUN.with(|k| k.borrow().contains(&format!("{name} (TF32)"))),
            "{name} never ran plain TF32"
        );
    }
    for name in [
        "conv2d_backprop_input_tc_vec_ws_tf32_f32",
        "conv2d_backprop_input_tc_vec_ws_f32",
        "conv2d_forward_tc_vec_ws_tf32_f32",
        "conv2d_forward_tc_vec_ws_f32",
        "conv2d_backprop_input_tc_vec_nchw_ws_tf32_f32",
        "conv2d_backprop_input_tc_vec_nchw_ws_f32",
        "conv2d_forward_tc_vec_nchw_ws_tf32_f32",
        "conv2d_forward_tc_vec_nchw_ws_f32",
    ]
    .into_iter()
    .chain(
        wgmma_kernels::HALO
            .into_iter()
            .filter(|k| k.ends_with("_tf32_f32")),
    ) {
        assert!(
            KERNELS_RUN.with(|k| k.borrow().contains(name)),
            "{name} never ran"
        );
    }
    // The TF32 halo twin: both ops at stride 1 (16 channels, NCHW only: the NHWC draw has
    // an OIHW filter, which the lean tiles do not take; 64; the forward's 128; two groups of
    // 32), backprop_input at (2, 1) and of 16 channels beside the forward's 48; both layouts.
    let (halo_runs, halo_nchw) = (HALO_TF32_RUNS.get(), HALO_NCHW_RUNS.get());
    let halo_ran =
        format!("the TF32 halo twin ran for {halo_runs} calls, {halo_nchw} of them NCHW");
    println!("emulated_conv2d_tf32: {halo_ran}");
    assert!(halo_runs >= 36 && halo_nchw >= 20, "{halo_ran}");
    println!("emulated_conv2d_tf32: {ran} cases x 2 ops x 3 runs");
}

/// The wgmma tiles built with `GO_TC_WGMMA_INFLIGHT=0` (kernels/conv_tc.cuh: a stage's wgmma
/// issued after the refill, none left in flight; the default build, which the other wgmma
/// tests run, issues it before the refill and leaves one group in flight), in an emulator of
/// their own: every wgmma kernel on the lean and multi-tile cases, f32 in both arithmetics,
/// bit for bit against the general kernel on natural and tiny grids. The emulator performs a
/// group's products at its wait, reading shared memory then, and poisons a copy's
/// destination from its issue, so a stage refilled while a group that reads it is in flight
/// gives other bits (in the default build, dropping the `wait_group 1` or the barrier after
/// it fails the wgmma tests).
#[test]
fn emulated_conv2d_wgmma_refill_first() {
    wgmma_build_cases(
        EmuBuild::WgmmaRefillFirst,
        "emulated_conv2d_wgmma_refill_first",
    );
}

/// The wgmma tiles built with `GO_TC_WGMMA_BARRIERS=1` (kernels/conv_tc.cuh: the lean wgmma
/// tile's iteration takes one block barrier, its refill the stage read two iterations back),
/// checked as [`emulated_conv2d_wgmma_refill_first`] checks its build: a refill of a stage
/// a group still reads, or a chunk read before its copies or its registered store landed,
/// gives other bits (dropping the `wait_group 1` fails it). The emulator cannot tell a
/// refill of the stage read one iteration back: the lean tile is one warpgroup, and its
/// first wait performs the group for all four warps; the build refills two back, which does
/// not depend on that.
#[test]
fn emulated_conv2d_wgmma_one_barrier() {
    wgmma_build_cases(
        EmuBuild::WgmmaOneBarrier,
        "emulated_conv2d_wgmma_one_barrier",
    );
}

/// The wgmma tiles built with `GO_TC_WGMMA_F32_RS=1` (kernels/conv_tc.cuh: exact f32's A
/// read by each thread into registers, split there and issued in wgmma's register-source
/// form; only B split in place), checked as [`emulated_conv2d_wgmma_refill_first`] checks its
/// build, on the f32 cases (the build changes no other type's code): the f32 kernels in both
/// arithmetics bit for bit against the general kernel. The emulator's register-source model
/// (`emulated_wgmma_model`, bmn 4) takes each thread's A registers as issued, in CUTLASS's
/// `ALayout_64x8`; a fragment read from the wrong row or k, or split differently, gives other
/// bits (swapping the rows and chunks of the fragment's ldmatrix fails this test).
#[test]
fn emulated_conv2d_wgmma_f32_rs() {
    wgmma_build_cases_of(
        EmuBuild::WgmmaF32Rs,
        "emulated_conv2d_wgmma_f32_rs",
        &[Dt::F32],
    );
}

/// Every wgmma kernel of `build` on the lean and multi-tile cases (f32 in both arithmetics),
/// bit for bit against the general kernel; no other lean kernel runs in such a build.
fn wgmma_build_cases(build: EmuBuild, test: &str) {
    wgmma_build_cases_of(build, test, &DTS);
}

/// [`wgmma_build_cases`] on the cases of the element types `dts` only (their wgmma kernels
/// must all run).
fn wgmma_build_cases_of(build: EmuBuild, test: &str, dts: &[Dt]) {
    let _build = EmuBuildScope::enter(build);
    let Some(_) = runner_or_skip(test) else {
        return;
    };
    // What ran before on this thread (another build's test) does not count.
    KERNELS_RUN.with(|k| k.borrow_mut().clear());
    let mut rng = Rng(0x5eed_f117);
    let mut cases = lean_tc_cases();
    cases.extend(multi_tile_tc_cases());
    cases.retain(|c| dts.contains(&c.dt));
    // f32 under the TF32 opt-in too (its own instantiation: big*big only).
    let tf32: Vec<TcCase> = cases
        .iter()
        .filter(|c| c.dt == Dt::F32)
        .map(|&c| TcCase { tf32: true, ..c })
        .collect();
    cases.extend(tf32);
    let mut ran = 0;
    for c in cases {
        if tc_case(c, &mut rng) {
            ran += 1;
        }
    }
    // (The warp-specialized and halo kernels take none of these builds' flags: the default
    // build's tests run them.)
    for name in wgmma_kernels::conv()
        .filter(|k| !wgmma_kernels::WS.contains(k) && !wgmma_kernels::HALO.contains(k))
        .filter(|k| dts.iter().any(|d| k.ends_with(&format!("_{}", d.suffix()))))
    {
        assert!(
            KERNELS_RUN.with(|k| k.borrow().contains(name)),
            "{name} never ran"
        );
    }
    for name in wgmma_kernels::conv().filter(|k| {
        k.ends_with("_f32")
            && !wgmma_kernels::WS.contains(k)
            && !wgmma_kernels::HALO.contains(k)
            && dts.contains(&Dt::F32)
    }) {
        assert!(
            KERNELS_RUN.with(|k| k.borrow().contains(&format!("{name} (TF32)"))),
            "{name} never ran plain TF32"
        );
    }
    // Only the wgmma twins beside the general kernel: no other lean kernel ran.
    KERNELS_RUN.with(|k| {
        let k = k.borrow();
        let other = k
            .iter()
            .find(|n| n.contains("_tc_vec") && !n.contains("_wgmma_"));
        assert!(other.is_none(), "{other:?} ran in the {build:?} build");
    });
    println!("{test}: {ran} cases");
}

fn cases_count_tc() -> usize {
    // The emulated mma is slow (a warp barrier per collective): a few random cases.
    cases().min(12) * 2 / 3
}

/// Cases for the lean `_vec` kernels (NHWC, HWIO, channels of whole 16-byte chunks and a
/// reduction of whole 64-byte stages in every type): two pixel tiles, a partial channel
/// tile; strides, a dilation and groups with phases of different tap counts.
fn lean_tc_cases() -> Vec<TcCase> {
    let mut cases = Vec::new();
    for (i, &dt) in DTS.iter().enumerate() {
        let (cig, cog, groups, k, s, d, pad) = if i % 2 == 0 {
            (32, 64, 1, (3, 3), (1, 1), (1, 1), (1, 1, 1, 1))
        } else {
            (32, 32, 2, (3, 2), (2, 2), (2, 1), (2, 0, 1, 1))
        };
        for layout in [NHWC, NCHW] {
            cases.push(TcCase {
                dt,
                layout,
                oihw: false,
                n: 2 - (i as i64 % 2),
                cig,
                cog,
                groups,
                hi: 9 - (i as i64 % 2),
                wi: 7 + 2 * (i as i64 % 2),
                k,
                s,
                d,
                pad,
                exact: (i + layout as usize).is_multiple_of(3),
                tf32: false,
            });
        }
    }
    cases
}

/// Past one 64-channel tile in both ops (96 channels a group: a whole tile and a partial one
/// of 32), two groups, stride 2 with a dilation: the lean kernels and their twins at n_base >
/// 0 and a group's filter offset, every dtype.
fn multi_tile_tc_cases() -> Vec<TcCase> {
    let mut cases = Vec::new();
    for (i, &dt) in DTS.iter().enumerate() {
        for layout in [NHWC, NCHW] {
            cases.push(TcCase {
                dt,
                layout,
                oihw: false,
                n: 1,
                cig: 96,
                cog: 96,
                groups: 2,
                hi: 5,
                wi: 6,
                k: (3, 3),
                s: (2, 1),
                d: (1, 2),
                pad: (1, 1, 2, 2),
                exact: (i + layout as usize).is_multiple_of(2),
                tf32: false,
            });
        }
    }
    cases
}

/// Past one 128-pixel tile a problem (16-bit NHWC, where the 128-pixel twins run): on the
/// tiny grid each block runs several pixel tiles in a row (the ws tile's producer copying
/// the next while its consumers store the last). Backprop_input with 5 channels a group (the
/// ws tile's element stores) over two stride phases of 260 pixels; the forward with 24
/// channels of 64 (a partial channel tile, channel-pair stores) over 288 pixels.
fn many_pixel_tc_cases() -> Vec<TcCase> {
    let mut cases = Vec::new();
    for (i, dt) in [Dt::F16, Dt::BF16].into_iter().enumerate() {
        let (cig, cog, groups, hi, wi, s) = if i == 0 {
            (5, 32, 1, 20, 13, (2, 1))
        } else {
            (32, 24, 2, 12, 12, (1, 1))
        };
        cases.push(TcCase {
            dt,
            layout: NHWC,
            oihw: false,
            n: 2,
            cig,
            cog,
            groups,
            hi,
            wi,
            k: (3, 3),
            s,
            d: (1, 1),
            pad: (1, 1, 1, 1),
            exact: i == 0,
            tf32: false,
        });
    }
    cases
}

/// The halo tile's geometries (16-bit, NHWC and then NCHW, the source read at unit strides;
/// tc_case runs its twin wherever `launch::conv_tc_halo_smem_bytes` serves the call):
/// several tiles a padded image row and a dilated forward (planes of 64 channels); two
/// channel tiles of the forward and 16 planes of 128 channels with a 1 x 3 filter (NCHW: two
/// planes a warp); backprop_input at stride 3 with a 2 x 2 filter, whose phases include some
/// no tap reaches (zeros); a 1 x 1 filter at stride 2; asymmetric padding; 32 planes (256
/// channels; NCHW: four planes a warp). (A call's channels a tap come in 32s, 4 planes at
/// least: `conv_tc_vec_eligible`.)
fn halo_tc_cases() -> Vec<TcCase> {
    let case = |dt, n, cig, cog, (hi, wi), k, s, d, pad, exact| TcCase {
        dt,
        layout: NHWC,
        oihw: false,
        n,
        cig,
        cog,
        groups: 1,
        hi,
        wi,
        k,
        s,
        d,
        pad,
        exact,
        tf32: false,
    };
    let nhwc = [
        case(
            Dt::F16,
            2,
            64,
            32,
            (14, 30),
            (3, 3),
            (1, 1),
            (2, 2),
            (2, 2, 2, 2),
            false,
        ),
        case(
            Dt::BF16,
            1,
            32,
            128,
            (6, 9),
            (1, 3),
            (1, 1),
            (1, 1),
            (0, 0, 1, 1),
            true,
        ),
        case(
            Dt::F16,
            1,
            32,
            32,
            (10, 11),
            (2, 2),
            (3, 3),
            (1, 1),
            (0, 1, 1, 0),
            true,
        ),
        case(
            Dt::BF16,
            2,
            32,
            32,
            (9, 8),
            (1, 1),
            (2, 2),
            (1, 1),
            (0, 0, 0, 0),
            false,
        ),
        case(
            Dt::F16,
            1,
            32,
            64,
            (7, 40),
            (3, 2),
            (1, 1),
            (1, 3),
            (2, 0, 3, 0),
            false,
        ),
        case(
            Dt::F16,
            1,
            64,
            256,
            (6, 11),
            (1, 1),
            (1, 1),
            (1, 1),
            (0, 0, 0, 0),
            false,
        ),
    ];
    // The same in NCHW (its halo copies through registers, slot-major across a warp).
    let nchw = nhwc.iter().map(|&c| TcCase { layout: NCHW, ..c });
    nhwc.iter().copied().chain(nchw).collect()
}

/// Runs one case through both tensor-core kernels; false if the geometry has no output.
fn tc_case(c: TcCase, rng: &mut Rng) -> bool {
    let TcCase {
        dt,
        layout,
        oihw,
        n,
        cig,
        cog,
        groups,
        hi,
        wi,
        ..
    } = c;
    let ((kh, kw), (sh, sw), (dh, dw), (pt, pb, pl, pr)) = (c.k, c.s, c.d, c.pad);
    let (ci, co) = (cig * groups, cog * groups);
    let (keh, kew) = ((kh - 1) * dh + 1, (kw - 1) * dw + 1);
    if hi + pt + pb < keh || wi + pl + pr < kew {
        return false;
    }
    let ho = (hi + pt + pb - keh) / sh + 1;
    let wo = (wi + pl + pr - kew) / sw + 1;
    let what = format!("tc {c:?} out={ho}x{wo}");
    let val = |rng: &mut Rng, len: i64| -> Vec<f64> {
        if c.exact {
            (0..len).map(|_| rng.range(-2, 2) as f64).collect()
        } else {
            rng.vec(len as usize, dt)
        }
    };
    let w = val(rng, kh * kw * cig * co);
    let x = val(rng, n * ci * hi * wi);
    let dy = val(rng, n * co * ho * wo);
    let widx = |ky: i64, kx: i64, cc: i64, o: i64| {
        (if oihw {
            ((o * cig + cc) * kh + ky) * kw + kx
        } else {
            ((ky * kw + kx) * cig + cc) * co + o
        }) as usize
    };
    let mut yref = vec![0.0; (n * co * ho * wo) as usize];
    let mut dxref = vec![0.0; x.len()];
    for b in 0..n {
        for o in 0..co {
            let g = o / cog;
            for oy in 0..ho {
                for ox in 0..wo {
                    let yi = idx(layout, b, o, oy, ox, co, ho, wo);
                    for ky in 0..kh {
                        let iy = oy * sh - pt + ky * dh;
                        if iy < 0 || iy >= hi {
                            continue;
                        }
                        for kx in 0..kw {
                            let ix = ox * sw - pl + kx * dw;
                            if ix < 0 || ix >= wi {
                                continue;
                            }
                            for cc in 0..cig {
                                let xi = idx(layout, b, g * cig + cc, iy, ix, ci, hi, wi);
                                yref[yi] += x[xi] * w[widx(ky, kx, cc, o)];
                                dxref[xi] += dy[yi] * w[widx(ky, kx, cc, o)];
                            }
                        }
                    }
                }
            }
        }
    }
    let p = GoConvParams {
        x: 1,
        w: 2,
        y: 3,
        n,
        ci,
        hi,
        wi,
        co,
        ho,
        wo,
        kh,
        kw,
        sh,
        sw,
        dh,
        dw,
        pad_top: pt,
        pad_left: pl,
        groups,
        layout,
        filter_layout: if oihw {
            params::GO_FILTER_OIHW as i32
        } else {
            params::GO_FILTER_HWIO as i32
        },
        f32_precision: if c.tf32 {
            params::GO_F32_PRECISION_TF32
        } else {
            params::GO_F32_PRECISION_EXACT
        } as i32,
        reserved: 0,
    };
    let only_wgmma = EMU_BUILD.with(|b| b.get()) != EmuBuild::Default;
    for forward in [true, false] {
        let Some(natural) = launch::conv_tc(&p, forward) else {
            continue;
        };
        let tiny = launch::Launch {
            grid: (1, natural.grid.1.min(2), natural.grid.2.min(2)),
            block: natural.block,
        };
        let (name, bufs, out_at, reference) = if forward {
            (
                "conv2d_forward_tc",
                vec![
                    BufSpec::In(dt.encode(&x)),
                    BufSpec::In(dt.encode(&w)),
                    BufSpec::Out(yref.len() * dt.size()),
                ],
                2,
                &yref,
            )
        } else {
            (
                "conv2d_backprop_input_tc",
                vec![
                    BufSpec::Out(x.len() * dt.size()),
                    BufSpec::In(dt.encode(&w)),
                    BufSpec::In(dt.encode(&dy)),
                ],
                0,
                &dxref,
            )
        };
        let kernel = format!("{name}_{}", dt.suffix());
        let mut outs = Vec::new();
        // (A build that differs in the wgmma tiles only: the general kernel once, as the
        // reference of their bits; the default build checks its grids and reruns.)
        let general = if only_wgmma {
            &[natural][..]
        } else {
            &[natural, tiny, natural][..]
        };
        for &l in general {
            let r = run_kernel(&kernel, l, &as_bytes(&p), &bufs);
            outs.push(r[out_at].clone());
        }
        let got = dt.decode(&outs[0]);
        let what = format!("{what} {name}");
        if c.exact {
            let want: Vec<f64> = reference.iter().map(|&v| dt.round(v)).collect();
            if let Some(i) = (0..got.len()).find(|&i| got[i].to_bits() != want[i].to_bits()) {
                panic!(
                    "{what}: element {i} is {} (want exactly {})",
                    got[i], want[i]
                );
            }
        } else if c.tf32 {
            if let Some(i) = got.iter().position(|v| !v.is_finite()) {
                panic!("{what}: element {i} not written: {}", got[i]);
            }
            let e = rel_l2(&got, reference);
            println!("{what}: TF32 relative L2 {e:e}");
            assert!(
                e <= TF32_TOL,
                "{what}: TF32 relative L2 {e:e} > {TF32_TOL:e}"
            );
            // Plain TF32 really is reduced precision: it misses the exact path's 1e-5.
            assert!(
                e > Dt::F32.tol(),
                "{what}: TF32 relative L2 {e:e} within f32's {:e}: did the kernel run 3xTF32?",
                Dt::F32.tol()
            );
        } else {
            check(&what, dt, &got, reference);
        }
        if !only_wgmma {
            assert!(
                outs[1] == outs[0],
                "{what}: the tiny grid {:?} gave other bits",
                tiny.grid
            );
            assert!(outs[2] == outs[0], "{what}: a second run gave other bits");
        }
        // The lean twin where the host's rule picks it: the same arithmetic in the same
        // order, so the same bits (buffers are malloc'd: 16-byte aligned, as on a GPU).
        if launch::conv_tc_vec_eligible(&p, forward, dt.size()) {
            let lay = if layout == NCHW { "_nchw" } else { "" };
            let vec_kernel = format!("{name}_vec{lay}_{}", dt.suffix());
            // (A build that differs in the wgmma tiles only runs their twins.)
            let lean = if only_wgmma {
                &[][..]
            } else {
                &[natural, tiny][..]
            };
            for &l in lean {
                let r = run_kernel(&vec_kernel, l, &as_bytes(&p), &bufs);
                assert!(
                    r[out_at] == outs[0],
                    "{what}: {vec_kernel} (grid {:?}) differs from {kernel}",
                    l.grid
                );
            }
            // A twin kernel on its launch plan, natural and tiny grids: the general kernel's
            // bits.
            type Plan = fn(&GoConvParams, bool) -> Option<launch::Launch>;
            let run_twin = |twin_kernel: &str, plan: Plan| {
                if only_wgmma && !twin_kernel.contains("_wgmma_") {
                    return;
                }
                let twin = plan(&p, forward).expect("the twin's launch");
                let twin_tiny = launch::Launch {
                    grid: (1, twin.grid.1.min(2), twin.grid.2.min(2)),
                    block: twin.block,
                };
                // The ws kernels: the default stages on the natural grid, on the tiny one
                // (several tiles a block, so the stage ring wraps across tiles and problems)
                // a count that takes turns through 2, 3, 5 and 8.
                let ws = launch::is_conv_tc_ws_kernel(twin_kernel);
                for (l, stages) in [(twin, 0), (twin_tiny, [2, 3, 5, 8][WS_TURN.get() % 4])] {
                    WS_STAGES.set(if ws { stages } else { 0 });
                    let r = run_kernel(twin_kernel, l, &as_bytes(&p), &bufs);
                    WS_STAGES.set(0);
                    assert!(
                        r[out_at] == outs[0],
                        "{what}: {twin_kernel} (grid {:?}, {} stages) differs from {kernel}",
                        l.grid,
                        if stages == 0 {
                            params::GO_TC_WS_STAGES
                        } else {
                            stages
                        }
                    );
                }
                if ws && WS_TURN.get() == 0 {
                    // Past the most stages the kernel takes GO_TC_WS_MAX_STAGES of them (the
                    // emulator's storage holds no more: AddressSanitizer would see an
                    // overrun); below two it traps.
                    WS_STAGES.set(params::GO_TC_WS_MAX_STAGES + 4);
                    let r = run_kernel(twin_kernel, twin, &as_bytes(&p), &bufs);
                    WS_STAGES.set(1);
                    let one = run_job(twin_kernel, twin, &as_bytes(&p), &bufs);
                    WS_STAGES.set(0);
                    assert!(
                        r[out_at] == outs[0],
                        "{what}: {twin_kernel} past the most stages"
                    );
                    let err = String::from_utf8_lossy(&one.stderr);
                    assert!(
                        !one.status.success() && err.contains("kernel trap"),
                        "{what}: {twin_kernel} with one stage did not trap: {}\n{err}",
                        one.status
                    );
                }
                if ws {
                    WS_TURN.set(WS_TURN.get() + 1);
                }
            };
            // The wide, tall, square, wgmma and ws twins (16-bit NHWC; the forward has no
            // wide one): 128-pixel tiles on 8 warps of the same warp tiles, on 4 warps of 64 x
            // 32, on 2 of 64 x 64, on 2 warpgroups of m64n64 wgmma (the wide launch; the
            // forward's B N-major), or on those fed by a producer warpgroup through mbarriers.
            if layout == NHWC && dt.size() == 2 {
                let twins: [(&str, Plan); 5] = [
                    ("wide", launch::conv_tc_wide),
                    ("tall", launch::conv_tc_tall),
                    ("square", launch::conv_tc_square),
                    ("wgmma", launch::conv_tc_wide),
                    ("ws", launch::conv_tc_ws),
                ];
                let twins = twins.iter().filter(|(kind, _)| !forward || *kind != "wide");
                for &(kind, plan) in twins {
                    run_twin(&format!("{name}_vec_{kind}_{}", dt.suffix()), plan);
                }
            }
            if dt.size() == 2 || c.tf32 {
                // The halo twin where it serves the call (the source read at unit strides,
                // the filter and a halo buffer within its shared memory): its own tiles
                // (padded-row slots) and launch, each tile's source copied once for all its
                // taps; with two halo buffers where they fit (natural and tiny grids), then
                // with one (the tiny grid: a block's many tiles through one buffer); with
                // too little shared memory for the call it traps.
                // (A build that differs in the wgmma tiles only runs their twins.)
                // NCHW (one buffer whatever the launch gives): its copies through registers.
                // f32 under the TF32 opt-in (its own entry points; one buffer, both layouts):
                // its copies through registers, rounded to tf32 there.
                let halo_bytes = launch::conv_tc_halo_smem_bytes(&p, forward, dt.size(), 1);
                if let Some(one) = halo_bytes.filter(|_| !only_wgmma) {
                    let tf = if c.tf32 { "_tf32" } else { "" };
                    let halo = format!("{name}_vec{lay}_halo{tf}_{}", dt.suffix());
                    let two = launch::conv_tc_halo_smem_bytes(&p, forward, dt.size(), 2);
                    HALO_SMEM.set(two.expect("one buffer fits"));
                    run_twin(&halo, launch::conv_tc_halo);
                    HALO_RUNS.set(HALO_RUNS.get() + 1);
                    if layout == NCHW {
                        HALO_NCHW_RUNS.set(HALO_NCHW_RUNS.get() + 1);
                    }
                    if c.tf32 {
                        HALO_TF32_RUNS.set(HALO_TF32_RUNS.get() + 1);
                    }
                    let l = launch::conv_tc_halo(&p, forward).expect("the halo launch");
                    let tiny = launch::Launch {
                        grid: (1, l.grid.1.min(2), l.grid.2.min(2)),
                        block: l.block,
                    };
                    HALO_SMEM.set(one);
                    let r = run_kernel(&halo, tiny, &as_bytes(&p), &bufs);
                    assert!(
                        r[out_at] == outs[0],
                        "{what}: {halo} (one halo buffer, grid {:?}) differs from {kernel}",
                        tiny.grid
                    );
                    HALO_SMEM.set(params::GO_TC_HALO_SMEM_ALIGN + 16);
                    let short = run_job(&halo, l, &as_bytes(&p), &bufs);
                    HALO_SMEM.set(0);
                    let err = String::from_utf8_lossy(&short.stderr);
                    assert!(
                        !short.status.success() && err.contains("kernel trap"),
                        "{what}: {halo} with too little shared memory did not trap: {}\n{err}",
                        short.status
                    );
                }
            }
            // The lean wgmma twins: the lean launch's 64-pixel tiles on one warpgroup; f32
            // (both ops, both layouts; the forward's B gathered through registers and stored
            // K-major) on m64n64k8 tf32, each stage split into tf32 parts in place (3xTF32,
            // or plain TF32 under the opt-in), 16-bit NCHW (both ops; the forward's B
            // N-major) on m64n64k16: the same products in the same order.
            if dt.size() == 4 || (dt.size() == 2 && layout == NCHW) {
                let twin_kernel = format!("{name}_vec{lay}_wgmma_{}", dt.suffix());
                run_twin(&twin_kernel, launch::conv_tc);
                if c.tf32 {
                    KERNELS_RUN.with(|k| k.borrow_mut().insert(format!("{twin_kernel} (TF32)")));
                }
            }
            // The warp-specialized twin of f32, both layouts (its producer splits the stages it
            // copied; the forward's filter, and NCHW's source from its channel planes, copied
            // element by element to K-major places; the TF32 opt-in on its own entry point):
            // the same bits.
            if dt == Dt::F32 {
                let tf = if c.tf32 { "_tf32" } else { "" };
                run_twin(&format!("{name}_vec{lay}_ws{tf}_f32"), launch::conv_tc_ws);
            }
        }
    }
    true
}

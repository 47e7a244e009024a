//! PTX checks that need no GPU. build.rs embeds one PTX image per kernel file and virtual
//! architecture (`GRADOPS_CUDA_ARCH`, default compute_75, compute_80, compute_90). Every
//! image is present, targets its architecture, holds every kernel of the op list and has a
//! PTX ISA of at most 9.0 (what nvcc 13.0 emits and the R580 driver loads); every image
//! assembles with ptxas for its own real target (compute_80 -> sm_80), and the newest image
//! also for sm_100 and sm_120 (devices the driver JITs it for), with no kernel spilling
//! registers or using a local-memory stack. Prints registers per kernel and target. The
//! wgmma model's hardware probe (`emu/wgmma_probe.cu`, not in the crate) compiles for sm_90a.
//! The embedded PTX is nvcc's output byte for byte (one image compiled again; what
//! `GRADOPS_PTX_CACHE` hands back in CI).
//!
//! Without compiled kernels the tests say they skipped (and fail if
//! GRADOPS_REQUIRE_CUDA=1 is set when the tests run).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "common/wgmma_kernels.rs"]
mod wgmma_kernels;

mod built {
    #![allow(dead_code)]
    include!(concat!(env!("OUT_DIR"), "/gradops_kernels.rs"));
}

const OPS: &[(&str, &str)] = &[
    ("resize", "resize_gather"),
    ("resize", "resize_tile"),
    ("resize", "resize_box"),
    ("conv", "conv2d_forward"),
    ("conv", "conv2d_backprop_input"),
    ("conv", "conv2d_backprop_filter_partial"),
    ("conv", "conv2d_backprop_filter_reduce"),
    ("pool", "max_pool_forward"),
    ("pool", "max_pool_grad"),
    ("pool", "max_pool_grad_argmax"),
    ("pool", "max_pool_tile_forward"),
    ("pool", "max_pool_tile_grad"),
    ("pool", "max_pool_tile_grad_argmax"),
    ("pool", "max_pool_tile_k3_forward"),
    ("pool", "max_pool_tile_k3_grad"),
    ("pool", "max_pool_tile_k3_grad_argmax"),
    ("pool", "max_pool_direct_k3_forward"),
];
/// Kernel-name suffixes: every element type of the library.
const DTYPES: [&str; 4] = [
    gradops::DType::ALL[0].name(),
    gradops::DType::ALL[1].name(),
    gradops::DType::ALL[2].name(),
    gradops::DType::ALL[3].name(),
];
/// The tensor-core kernels (every element type), in the compute_80+ images only.
const TC_OPS: &[&str] = &[
    "conv2d_backprop_input_tc",
    "conv2d_forward_tc",
    "conv2d_backprop_input_tc_vec",
    "conv2d_forward_tc_vec",
    "conv2d_backprop_input_tc_vec_nchw",
    "conv2d_forward_tc_vec_nchw",
    "conv2d_backprop_filter_partial_tc",
    "conv2d_backprop_filter_partial_tc_elementwise",
    "conv2d_backprop_filter_partial_tc_nhwc",
];
/// The wide lean kernel (f16 and bf16 only), in the compute_80+ images only.
const WIDE_OPS: &[&str] = &["conv2d_backprop_input_tc_vec_wide"];
/// The tall lean kernels (f16 and bf16 only, GO_TC_BLOCK_THREADS threads), likewise.
const TALL_OPS: &[&str] = &[
    "conv2d_backprop_input_tc_vec_tall",
    "conv2d_forward_tc_vec_tall",
];
/// The square lean kernels (f16 and bf16 only, GO_TC_SQUARE_THREADS threads), likewise.
const SQUARE_OPS: &[&str] = &[
    "conv2d_backprop_input_tc_vec_square",
    "conv2d_forward_tc_vec_square",
];
const SQUARE_THREADS: u32 = 64;
/// Their element types and threads per block (GO_TC_WIDE_THREADS).
const WIDE_DTYPES: [&str; 2] = ["f16", "bf16"];
const WIDE_THREADS: u32 = 256;
/// The oldest image architecture that carries the tensor-core kernels (compute_80).
const TC_MIN_ARCH: u32 = 80;

/// A family of tensor-core kernels for the register report: names, element types, threads
/// per block, and the blocks per SM its registers must allow on a real target.
struct TcKind {
    ops: &'static [&'static str],
    dtypes: &'static [&'static str],
    threads: u32,
    want_blocks: fn(u32) -> u32,
}

/// Threads per block of the tensor-core kernels (GO_TC_BLOCK_THREADS).
const TC_THREADS: u32 = 128;
/// Threads per block of the CUDA-core kernels (GO_BLOCK_THREADS).
const FFMA_THREADS: u32 = 256;

/// Blocks of `threads` threads that fit an SM's 64K registers (allocated per warp in units
/// of 256, i.e. per thread in units of 8).
fn blocks_per_sm_by_registers(registers: u32, threads: u32) -> u32 {
    let per_thread = registers.div_ceil(8) * 8;
    65536 / (per_thread * threads).max(1)
}

/// Real targets newer than every default image: devices that JIT the newest image.
const JIT_TARGETS: &[u32] = &[100, 120];

fn require_cuda() -> bool {
    matches!(
        std::env::var("GRADOPS_REQUIRE_CUDA").as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    )
}

/// Some(()) when the kernels were compiled; otherwise prints why the test skips.
fn kernels_or_skip(test: &str) -> Option<()> {
    if built::KERNELS_COMPILED {
        return Some(());
    }
    let msg = format!(
        "SKIPPED {test}: kernels not compiled ({}); run `bash scripts/install-cuda-toolchain.sh`",
        built::NOT_COMPILED_REASON
    );
    assert!(!require_cuda(), "GRADOPS_REQUIRE_CUDA=1 but {msg}");
    eprintln!("{msg}");
    println!("{msg}");
    None
}

fn ptxas() -> PathBuf {
    let nvcc = PathBuf::from(built::NVCC_PATH);
    let p = nvcc.with_file_name("ptxas");
    if p.is_file() {
        p
    } else {
        PathBuf::from("ptxas")
    }
}

#[derive(Debug, Default, Clone)]
struct Usage {
    registers: u32,
    stack: u32,
    spill_stores: u32,
    spill_loads: u32,
    smem: u32,
}

/// One kernel's line of the register report: its registers per target, then the most shared
/// memory, stack and spill bytes over the targets.
struct ReportRow {
    text: String,
    smem: u32,
    stack: u32,
    spills: u32,
}

impl ReportRow {
    fn new(name: &str) -> Self {
        ReportRow {
            text: format!("{name:<34}"),
            smem: 0,
            stack: 0,
            spills: 0,
        }
    }

    /// A target whose image lacks the kernel.
    fn missing(&mut self) {
        self.text.push_str(&format!(" {:>7}", "-"));
    }

    /// One target's usage; `true` where the kernel uses stack or spills there.
    fn add(&mut self, u: &Usage) -> bool {
        self.text.push_str(&format!(" {:>7}", u.registers));
        self.smem = self.smem.max(u.smem);
        self.stack = self.stack.max(u.stack);
        self.spills = self.spills.max(u.spill_stores + u.spill_loads);
        u.spill_stores + u.spill_loads > 0 || u.stack > 0
    }

    fn line(&self) -> String {
        format!(
            "{} {:>6} {:>6} {:>6}",
            self.text, self.smem, self.stack, self.spills
        )
    }
}

/// Parse `ptxas -v` output into per-function usage.
fn parse_ptxas(text: &str) -> BTreeMap<String, Usage> {
    let mut out = BTreeMap::new();
    let mut cur: Option<String> = None;
    let num_before = |l: &str, unit: &str| -> Option<u32> {
        let i = l.find(unit)?;
        l[..i].split_whitespace().last()?.parse().ok()
    };
    for line in text.lines() {
        if let Some(i) = line.find("Compiling entry function '") {
            let rest = &line[i + "Compiling entry function '".len()..];
            let name = rest.split('\'').next().unwrap_or("").to_string();
            out.insert(name.clone(), Usage::default());
            cur = Some(name);
            continue;
        }
        let Some(name) = &cur else { continue };
        let u = out.get_mut(name).unwrap();
        if line.contains("bytes stack frame") {
            u.stack = num_before(line, "bytes stack frame").unwrap_or(0);
            u.spill_stores = num_before(line, "bytes spill stores").unwrap_or(0);
            u.spill_loads = num_before(line, "bytes spill loads").unwrap_or(0);
        }
        if line.contains("Used") && line.contains("registers") {
            u.registers = num_before(line, "registers").unwrap_or(0);
            u.smem = num_before(line, "bytes smem").unwrap_or(0);
        }
    }
    out
}

#[test]
fn ptx_isa_and_kernel_names() {
    if kernels_or_skip("ptx_isa_and_kernel_names").is_none() {
        return;
    }
    assert!(!built::CUDA_ARCHS.is_empty());
    assert_eq!(
        built::PTX_IMAGES.len(),
        built::PTX_MODULES.len() * built::CUDA_ARCHS.len(),
        "one image per module and architecture"
    );
    for module in built::PTX_MODULES {
        for arch in built::CUDA_ARCHS {
            assert!(
                built::PTX_IMAGES
                    .iter()
                    .any(|(m, a, _)| m == module && a == arch),
                "no image {module}.compute_{arch}"
            );
        }
    }
    for (module, arch, ptx) in built::PTX_IMAGES {
        let image = format!("{module}.compute_{arch}");
        let version = ptx
            .lines()
            .find_map(|l| l.trim().strip_prefix(".version "))
            .unwrap_or_else(|| panic!("{image}: no .version line"));
        let (maj, min) = version.trim().split_once('.').expect(".version X.Y");
        let v: (u32, u32) = (maj.parse().unwrap(), min.parse().unwrap());
        assert!(
            v <= (9, 0),
            "{image}: PTX ISA {version} is newer than 9.0 (nvcc newer than 13.0?)"
        );
        let target = ptx
            .lines()
            .find_map(|l| l.trim().strip_prefix(".target "))
            .unwrap_or_else(|| panic!("{image}: no .target line"));
        assert_eq!(target.trim(), format!("sm_{arch}"), "{image}: .target");
        for (m, op) in OPS.iter().filter(|(m, _)| m == module) {
            for d in DTYPES {
                let entry = format!(".entry {op}_{d}(");
                assert!(
                    ptx.contains(&entry),
                    "{m}.compute_{arch}: kernel {op}_{d} missing from PTX"
                );
            }
        }
        if *module == "conv" {
            // The tensor-core kernels exist in compute_80+ images, and only there.
            for op in TC_OPS {
                for d in DTYPES {
                    let entry = format!(".entry {op}_{d}(");
                    let want = *arch >= TC_MIN_ARCH;
                    assert_eq!(ptx.contains(&entry), want, "{image}: {op}_{d}");
                }
            }
            for op in WIDE_OPS.iter().chain(TALL_OPS).chain(SQUARE_OPS) {
                for d in DTYPES {
                    let entry = format!(".entry {op}_{d}(");
                    let want = *arch >= TC_MIN_ARCH && WIDE_DTYPES.contains(&d);
                    assert_eq!(ptx.contains(&entry), want, "{image}: {op}_{d}");
                }
            }
        }
    }
}

/// One ptxas run: an image assembled for a real target.
struct Assembly {
    /// Real target (`80` = sm_80).
    target: u32,
    /// The image's architecture.
    image_arch: u32,
    usage: BTreeMap<String, Usage>,
}

/// The register report's copy under `CARGO_TARGET_TMPDIR` (`target/tmp/`).
const REPORT_FILE: &str = "ptx-register-report.txt";

#[test]
fn ptxas_every_image_no_spills() {
    if kernels_or_skip("ptxas_every_image_no_spills").is_none() {
        return;
    }
    let ptxas = ptxas();
    let dir = std::env::temp_dir().join(format!("gradops-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let newest = *built::CUDA_ARCHS.iter().max().expect("an architecture");
    // (target, image arch): every image on its own target, the newest also on JIT targets.
    let mut targets: Vec<(u32, u32)> = built::CUDA_ARCHS.iter().map(|&a| (a, a)).collect();
    targets.extend(
        JIT_TARGETS
            .iter()
            .filter(|&&t| t > newest)
            .map(|&t| (t, newest)),
    );
    let mut runs: Vec<Assembly> = Vec::new();
    let mut problems = Vec::new();
    for &(target, image_arch) in &targets {
        let mut usage = BTreeMap::new();
        for (module, _, ptx) in built::PTX_IMAGES.iter().filter(|i| i.1 == image_arch) {
            let file = dir.join(format!("{module}.compute_{image_arch}.ptx"));
            std::fs::write(&file, ptx).unwrap();
            let out = Command::new(&ptxas)
                .args(["-v", &format!("-arch=sm_{target}"), "-o", "/dev/null"])
                .arg(&file)
                .output()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", ptxas.display()));
            let text = String::from_utf8_lossy(&out.stderr).to_string()
                + &String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "ptxas -arch=sm_{target} {module}.compute_{image_arch}.ptx failed:\n{text}"
            );
            usage.extend(parse_ptxas(&text));
        }
        runs.push(Assembly {
            target,
            image_arch,
            usage,
        });
    }
    let _ = std::fs::remove_dir_all(&dir);

    // One row per kernel, one register column per target.
    let mut report = format!(
        "PTX images from nvcc {} ({}), ptxas {}\n\
         registers per kernel: each image assembled for its own target (compute_80 -> sm_80){}\n\
         smem = static shared memory bytes (max over targets); stack, spills = bytes (max)\n",
        built::NVCC_VERSION,
        built::CUDA_ARCH,
        ptxas.display(),
        if targets.len() > built::CUDA_ARCHS.len() {
            format!("; * = the compute_{newest} image, JIT-compiled by the driver there")
        } else {
            String::new()
        }
    );
    report.push_str(&format!("{:<34}", "kernel"));
    for r in &runs {
        let mark = if r.target == r.image_arch { "" } else { "*" };
        report.push_str(&format!(" {:>7}", format!("sm_{}{mark}", r.target)));
    }
    report.push_str(&format!(" {:>6} {:>6} {:>6}\n", "smem", "stack", "spills"));
    for (m, op) in OPS {
        for d in DTYPES {
            let name = format!("{op}_{d}");
            let mut row = ReportRow::new(&name);
            for r in &runs {
                let Some(u) = r.usage.get(&name) else {
                    problems.push(format!(
                        "sm_{} {name}: not in ptxas output of {m}.compute_{}",
                        r.target, r.image_arch
                    ));
                    row.missing();
                    continue;
                };
                if row.add(u) {
                    problems.push(format!(
                        "sm_{} ({m}.compute_{}) {name}: {} B stack, {} B spill stores, {} B \
                         spill loads",
                        r.target, r.image_arch, u.stack, u.spill_stores, u.spill_loads
                    ));
                }
            }
            report.push_str(&format!("{}\n", row.line()));
        }
    }
    // The tensor-core kernels: absent from pre-sm_80 images; no spills or stack; enough
    // blocks per SM by registers on each target: two for TC_OPS (their static shared memory,
    // 31-35 KB, allows more on every sm_80+ part); the wide kernel two on sm_90+ and one on
    // sm_80 (its launch bounds there: at two its ptxas spills); the tall kernel three.
    let tc_kinds = [
        TcKind {
            ops: TC_OPS,
            dtypes: &DTYPES,
            threads: TC_THREADS,
            want_blocks: |_| 2,
        },
        TcKind {
            ops: WIDE_OPS,
            dtypes: &WIDE_DTYPES,
            threads: WIDE_THREADS,
            want_blocks: |target| if target >= 90 { 2 } else { 1 },
        },
        TcKind {
            ops: TALL_OPS,
            dtypes: &WIDE_DTYPES,
            threads: TC_THREADS,
            want_blocks: |_| 3,
        },
        TcKind {
            ops: SQUARE_OPS,
            dtypes: &WIDE_DTYPES,
            threads: SQUARE_THREADS,
            want_blocks: |_| 4,
        },
    ];
    for TcKind {
        ops,
        dtypes,
        threads,
        want_blocks,
    } in tc_kinds
    {
        for op in ops {
            for d in dtypes {
                let name = format!("{op}_{d}");
                let mut row = ReportRow::new(&name);
                let mut fewest = u32::MAX;
                for r in &runs {
                    let Some(u) = r.usage.get(&name) else {
                        if r.image_arch >= TC_MIN_ARCH {
                            problems.push(format!("sm_{} {name}: missing", r.target));
                        }
                        row.missing();
                        continue;
                    };
                    if row.add(u) {
                        problems.push(format!(
                            "sm_{} {name}: {} B stack, {} B spills",
                            r.target,
                            u.stack,
                            u.spill_stores + u.spill_loads
                        ));
                    }
                    let blocks = blocks_per_sm_by_registers(u.registers, threads);
                    fewest = fewest.min(blocks);
                    if blocks < want_blocks(r.target) {
                        problems.push(format!(
                            "sm_{} {name}: {} registers fit only {blocks} block(s) of \
                             {threads} per SM",
                            r.target, u.registers
                        ));
                    }
                }
                report.push_str(&format!(
                    "{}  ({threads} threads, {fewest} blocks/SM by registers at least)\n",
                    row.line()
                ));
            }
        }
    }
    // The FFMA conv2d_backprop_input (every image, compute_75's only conv backward-data):
    // at least two 256-thread blocks per SM by registers for f16/bf16/f32 (f64 keeps one:
    // its accumulators spilled under the 128-register cap on sm_120).
    for d in ["f16", "bf16", "f32"] {
        let name = format!("conv2d_backprop_input_{d}");
        let regs = runs
            .iter()
            .filter_map(|r| r.usage.get(&name).map(|u| (r.target, u.registers)))
            .collect::<Vec<_>>();
        if regs.len() != runs.len() {
            problems.push(format!("{name}: missing from some image"));
        }
        for (target, r) in regs {
            let blocks = blocks_per_sm_by_registers(r, FFMA_THREADS);
            if blocks < 2 {
                problems.push(format!(
                    "sm_{target} {name}: {r} registers fit only {blocks} block(s) of \
                     {FFMA_THREADS} per SM"
                ));
            }
        }
    }
    println!("{report}");
    eprintln!("{report}");
    // Kept for CI's report step, which prints it rather than assembling everything again
    // (and fails without it). The directory is the build machine's: a test binary carried
    // elsewhere notes that it could not keep the copy.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let kept = dir.join(REPORT_FILE);
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&kept, &report)) {
        eprintln!(
            "note: the register report not kept in {}: {e}",
            kept.display()
        );
    }
    assert!(
        problems.is_empty(),
        "register spills / local memory:\n{}",
        problems.join("\n")
    );
}

/// The embedded image is nvcc's output, byte for byte: compiled again here with build.rs's
/// arguments (the smallest module, the lowest architecture). Under `GRADOPS_PTX_CACHE` (CI)
/// this build's images came from the cache, so this checks what the cache hands back.
#[test]
fn embedded_ptx_is_nvccs_output() {
    if kernels_or_skip("embedded_ptx_is_nvccs_output").is_none() {
        return;
    }
    let (module, arch, embedded) = built::PTX_IMAGES
        .iter()
        .filter(|i| i.0 == "resize")
        .min_by_key(|i| i.1)
        .expect("a resize image");
    let flags: Vec<&str> = built::NVCC_FLAGS.split_whitespace().collect();
    let (dir, path) = nvcc_ptx(&format!("kernels/{module}.cu"), &arch.to_string(), &flags);
    let fresh = std::fs::read_to_string(&path).unwrap();
    std::fs::remove_dir_all(dir).ok();
    assert!(
        fresh == *embedded,
        "{module}.compute_{arch}: the embedded image ({} bytes) differs from nvcc's output ({} \
         bytes); GRADOPS_PTX_CACHE={:?}",
        embedded.len(),
        fresh.len(),
        std::env::var("GRADOPS_PTX_CACHE").ok()
    );
}

/// The compute_90a image (built where compute_90 is): `conv` only, targeting sm_90a, PTX ISA
/// at most 9.0, holding exactly the wgmma kernels (every other kernel stays in the portable
/// images), which assemble for sm_90a without spills or stack, within the registers of two
/// 256-thread blocks per SM (the lean wgmma ones: three of 128), and without ptxas
/// serializing their wgmma (its "Potential Performance Loss" warning: accumulators touched
/// between issue and wait, or the like).
#[test]
fn sm90a_image_holds_the_wgmma_kernels() {
    if kernels_or_skip("sm90a_image_holds_the_wgmma_kernels").is_none() {
        return;
    }
    if !built::CUDA_ARCHS.contains(&90) {
        assert!(
            built::PTX_IMAGES_SM90A.is_empty(),
            "compute_90a without compute_90"
        );
        println!("no compute_90 in this build: no compute_90a image");
        return;
    }
    let modules: Vec<&str> = built::PTX_IMAGES_SM90A.iter().map(|i| i.0).collect();
    assert_eq!(modules, ["conv"], "the compute_90a images");
    let ptx = built::PTX_IMAGES_SM90A[0].1;
    let target = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".target "))
        .expect(".target line");
    assert_eq!(target.trim(), "sm_90a");
    let version = ptx
        .lines()
        .find_map(|l| l.trim().strip_prefix(".version "))
        .expect(".version line");
    assert!(version.trim() <= "9.0", "PTX ISA {version}");
    let dir = std::env::temp_dir().join(format!("gradops-ptxas-90a-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("conv.compute_90a.ptx");
    std::fs::write(&file, ptx).unwrap();
    // GO_TC_WGMMA_INFLIGHT=1 (the default): issued before the refill, a wait that leaves one
    // group in flight.
    assert!(
        ptx.contains("wgmma.wait_group.sync.aligned 1;"),
        "no wait_group 1"
    );
    check_sm90a_wgmma_kernels(&file, "conv.compute_90a");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The warp-specialized wgmma kernels (`go_tc_tile_ws`) in the compute_90a image: each holds
/// the stages' mbarrier protocol (the producer's wait on `empty` and cp.async arrival on
/// `full`, the consumers' wait on `full` and arrivals on `empty`: two parity waits, one
/// `.noinc` arrival, two plain arrivals) and two block barriers only, the ones around a new
/// (phase, group) problem: none in the main loop (its wgmma twin, `_ws_` for `_wgmma_`, takes
/// two there) and none in the epilogue (the twin's staged tile takes three; the consumers
/// store from registers, so the producer runs on into the next tile). Their stages live in
/// dynamic shared memory, as many as the launch gives: each reads `%dynamic_smem_size`. The
/// f32 ones (exact, TF32) have the producer split what it copied before it publishes it: a
/// plain arrival on `full` after `cp.async.wait_group 1` (GO_TC_WS_SPLIT_LAG - 1: the next
/// chunk's copies in flight), no `.noinc`.
#[test]
fn sm90a_ws_kernels_use_mbarriers() {
    if kernels_or_skip("sm90a_ws_kernels_use_mbarriers").is_none() {
        return;
    }
    let Some(&(_, ptx)) = built::PTX_IMAGES_SM90A.first() else {
        println!("no compute_90a image in this build");
        return;
    };
    let bars = barriers_per_entry(ptx);
    let has = |pat: &'static str| lines_per_entry(ptx, move |l| l.trim_start().starts_with(pat));
    let waits = has("mbarrier.try_wait.parity.shared.b64");
    let noinc = has("cp.async.mbarrier.arrive.noinc.shared.b64");
    let arrives = has("mbarrier.arrive.shared.b64");
    let dynamic = lines_per_entry(ptx, |l| l.contains("%dynamic_smem_size"));
    let lag = lines_per_entry(ptx, |l| l.contains("cp.async.wait_group 1;"));
    // The f32 forward's N-major filter, copied element by element (4-byte cp.async.ca) to its
    // K-major places: two rows x four chunks a producer thread; NCHW's source too, four rows x
    // four chunks.
    let elements = lines_per_entry(ptx, |l| {
        l.contains("cp.async.ca.shared.global") && l.contains("], 4,")
    });
    // The producer warpgroup's own barrier (element copies: its split after other threads').
    let named = has("bar.sync 1, 128;");
    for k in wgmma_kernels::WS {
        assert!(dynamic[k] >= 1, "{k}: stages not sized by the launch");
        let twin = k.replace("_ws_tf32_", "_wgmma_").replace("_ws_", "_wgmma_");
        println!(
            "{k}: {} bar.sync ({twin}: {}), {} try_wait, {} cp.async arrivals, {} arrivals",
            bars[k],
            bars[twin.as_str()],
            waits[k],
            noinc[k],
            arrives[k]
        );
        let f32 = k.ends_with("_f32");
        assert_eq!(
            (waits[k], noinc[k], arrives[k]),
            if f32 { (2, 0, 3) } else { (2, 1, 2) },
            "{k}: the mbarrier protocol"
        );
        assert_eq!(
            lag[k] >= 1,
            f32,
            "{k}: the producer's split LAG chunks behind"
        );
        let fwd_f32 = f32 && k.starts_with("conv2d_forward_");
        let nchw = k.contains("_nchw_");
        assert_eq!(
            elements[k],
            if fwd_f32 { 8 } else { 0 } + if nchw { 16 } else { 0 },
            "{k}: the element copies (the f32 forward's filter, NCHW's source)"
        );
        assert_eq!(
            (bars[k], named[k]),
            if nchw || fwd_f32 { (3, 1) } else { (2, 0) },
            "{k}: bar.sync (the problem's two; after element copies the producer's)"
        );
        assert!(
            bars[twin.as_str()] >= 2 + 2 + 3,
            "{twin}: bar.sync (the problem's, the main loop's, the epilogue's)"
        );
    }
    for k in wgmma_kernels::WIDE {
        assert_eq!(
            (waits[k], noinc[k], dynamic[k]),
            (0, 0, 0),
            "{k}: mbarriers or dynamic shared memory in a non-ws kernel"
        );
    }
    // The halo tile: no mbarriers; its shared memory sized by the launch; four block
    // barriers (the problem's two, a tile's two: before its products and after its stores).
    for k in wgmma_kernels::HALO {
        println!("{k}: {} bar.sync", bars[k]);
        assert_eq!(
            (waits[k], noinc[k], arrives[k], bars[k]),
            (0, 0, 0, 4),
            "{k}: the halo tile's synchronisation"
        );
        assert!(
            dynamic[k] >= 1,
            "{k}: its shared memory not sized by the launch"
        );
    }
}

/// `GO_TC_WGMMA_INFLIGHT=0` (kernels/conv_tc.cuh: the wgmma tiles' build-time alternative,
/// which `scripts/gpu-check.sh --prebuild` with `REFILL_VARIANT=1` puts in the GPU bundle
/// for a same-run comparison):
/// `conv.cu` compiled for compute_90a with the build's nvcc and flags plus that one, then
/// held to the image's checks (the same kernels; no spills, no stack, no serialized wgmma,
/// the blocks per SM). Here so that the alternative cannot rot between GPU sessions.
#[test]
fn sm90a_wgmma_refill_first_build_assembles() {
    if kernels_or_skip("sm90a_wgmma_refill_first_build_assembles").is_none() {
        return;
    }
    let (dir, ptx_path) = nvcc_ptx("kernels/conv.cu", "90a", &["-DGO_TC_WGMMA_INFLIGHT=0"]);
    let ptx = std::fs::read_to_string(&ptx_path).unwrap();
    // Issued after the refill: every wait drains the groups (but in the warp-specialized
    // tile, which has no refill in its consumers' loop and leaves one group in flight in
    // either build).
    let waits1 = lines_per_entry(&ptx, |l| l.contains("wgmma.wait_group.sync.aligned 1;"));
    for (k, n) in waits1 {
        let ws = wgmma_kernels::WS.contains(&k) || wgmma_kernels::HALO.contains(&k);
        assert!(
            (n == 0) != ws,
            "{k}: {n} wait_group 1 in the refill-first build"
        );
    }
    check_sm90a_wgmma_kernels(&ptx_path, "conv.compute_90a, GO_TC_WGMMA_INFLIGHT=0");
    std::fs::remove_dir_all(&dir).ok();
}

/// `GO_TC_WGMMA_BARRIERS=1` (kernels/conv_tc.cuh: the lean wgmma tile's iteration takes one
/// block barrier, not two; `scripts/gpu-check.sh --prebuild` with `BARRIER_VARIANT=1` puts it
/// in the GPU bundle): the image's checks as for the default build, each lean wgmma kernel
/// (f32, 16-bit NCHW) with fewer `bar.sync` than in the default image, the other wgmma
/// kernels with as many.
#[test]
fn sm90a_wgmma_one_barrier_build_assembles() {
    if kernels_or_skip("sm90a_wgmma_one_barrier_build_assembles").is_none() {
        return;
    }
    let Some(&(_, default_ptx)) = built::PTX_IMAGES_SM90A.first() else {
        println!("no compute_90a image in this build");
        return;
    };
    let (dir, ptx_path) = nvcc_ptx("kernels/conv.cu", "90a", &["-DGO_TC_WGMMA_BARRIERS=1"]);
    let ptx = std::fs::read_to_string(&ptx_path).unwrap();
    let (base, one) = (barriers_per_entry(default_ptx), barriers_per_entry(&ptx));
    for k in wgmma_kernels::all() {
        let (b, o) = (base[k], one[k]);
        if wgmma_kernels::LEAN.contains(&k) {
            assert!(o < b, "{k}: {o} bar.sync, the default build {b}");
        } else {
            assert_eq!(o, b, "{k}: bar.sync in the one-barrier build");
        }
    }
    check_sm90a_wgmma_kernels(&ptx_path, "conv.compute_90a, GO_TC_WGMMA_BARRIERS=1");
    std::fs::remove_dir_all(&dir).ok();
}

/// The `GO_TC_WGMMA_F32_RS=1` build (kernels/conv_tc.cuh: the f32 wgmma tile reads A into
/// registers, splits it there and issues wgmma's register-source form) compiles for
/// compute_90a and assembles as the default image must (no spills or stack, within the
/// registers of its blocks per SM, no serialized wgmma: the fragments' registers held until
/// the group's wait without ptxas having to force it); the register-source tf32 wgmma is in
/// exactly the four f32 wgmma kernels (their exact instantiation), and in none of the default
/// image.
#[test]
fn sm90a_wgmma_f32_rs_build_assembles() {
    if kernels_or_skip("sm90a_wgmma_f32_rs_build_assembles").is_none() {
        return;
    }
    let Some(&(_, default_ptx)) = built::PTX_IMAGES_SM90A.first() else {
        println!("no compute_90a image in this build");
        return;
    };
    let (dir, ptx_path) = nvcc_ptx("kernels/conv.cu", "90a", &["-DGO_TC_WGMMA_F32_RS=1"]);
    let ptx = std::fs::read_to_string(&ptx_path).unwrap();
    // A's four registers in braces after the accumulators': a second `{` on the line.
    let rs = |l: &str| l.contains("m64n64k8.f32.tf32.tf32") && l.matches('{').count() == 2;
    let (base, with) = (lines_per_entry(default_ptx, rs), lines_per_entry(&ptx, rs));
    for k in wgmma_kernels::all() {
        assert_eq!(
            base[k], 0,
            "{k}: register-source wgmma in the default image"
        );
        if k.ends_with("_f32")
            && !wgmma_kernels::WS.contains(&k)
            && !wgmma_kernels::HALO.contains(&k)
        {
            // The exact instantiation's stage: three products a k8 step, two steps (plain
            // TF32 keeps A in shared memory; the ws tile's producer splits its stages in
            // shared memory in either build; the halo tile's TF32 reads its halo by
            // descriptor in either build).
            assert_eq!(with[k], 6, "{k}: register-source wgmma");
        } else {
            assert_eq!(
                with[k], 0,
                "{k}: register-source wgmma in a 16-bit, ws or halo kernel"
            );
        }
    }
    check_sm90a_wgmma_kernels(&ptx_path, "conv.compute_90a, GO_TC_WGMMA_F32_RS=1");
    std::fs::remove_dir_all(&dir).ok();
}

/// `bar.sync` instructions in each `.entry` of a PTX module, by kernel name.
fn barriers_per_entry(ptx: &str) -> std::collections::HashMap<&str, usize> {
    lines_per_entry(ptx, |l| l.trim_start().starts_with("bar.sync"))
}

/// The lines of each `.entry` of a PTX module that `is` accepts, by kernel name.
fn lines_per_entry(ptx: &str, is: impl Fn(&str) -> bool) -> std::collections::HashMap<&str, usize> {
    let mut counts = std::collections::HashMap::new();
    let mut current = None;
    for line in ptx.lines() {
        if let Some(rest) = line.split(".entry ").nth(1) {
            let name = rest.trim_end_matches('(');
            counts.insert(name, 0);
            current = Some(name);
        } else if is(line) {
            if let Some(n) = current {
                *counts.get_mut(n).unwrap() += 1;
            }
        }
    }
    counts
}

/// A compute_90a conv image (`what`) holds exactly the wgmma kernels, which assemble for
/// sm_90a without spills or stack, within the registers of their blocks per SM, and without
/// ptxas serializing their wgmma.
fn check_sm90a_wgmma_kernels(file: &Path, what: &str) {
    let ptx = &std::fs::read_to_string(file).unwrap();
    let mut entries: Vec<&str> = ptx
        .lines()
        .filter_map(|l| l.split(".entry ").nth(1))
        .map(|r| r.trim_end_matches('('))
        .collect();
    entries.sort_unstable();
    let mut want: Vec<&str> = wgmma_kernels::all().collect();
    want.sort_unstable();
    assert_eq!(entries, want, "{what}'s kernels");
    assert!(ptx.contains("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"));
    assert!(ptx.contains("wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16"));
    assert!(ptx.contains("wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32"));
    // The forward's B N-major (imm-trans-b 1), backprop_input's K-major; the filter
    // gradient's A M-major and B N-major (imm-trans-a 1, imm-trans-b 1).
    for tab in ["0, 0", "0, 1", "1, 1"] {
        let issue = format!("p, 1, 1, {tab};");
        assert!(
            ptx.contains(&issue),
            "no wgmma with imm-trans-a, imm-trans-b {tab}"
        );
    }

    let out = Command::new(ptxas())
        .args(["-v", "-arch=sm_90a", "-o", "/dev/null"])
        .arg(file)
        .output()
        .expect("ptxas");
    let text =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "ptxas -arch=sm_90a failed:\n{text}");
    assert!(
        !text.contains("Performance Loss") && !text.contains("serialized"),
        "ptxas serializes the wgmma:\n{text}"
    );
    let usage = parse_ptxas(&text);
    for &k in &want {
        let u = usage
            .get(k)
            .unwrap_or_else(|| panic!("{k}: no ptxas report"));
        println!(
            "{k}: sm_90a {} registers, {} bytes smem, {} stack, {} spilled",
            u.registers,
            u.smem,
            u.stack,
            u.spill_stores + u.spill_loads
        );
        assert!(
            u.stack == 0 && u.spill_stores + u.spill_loads == 0,
            "{k} spills on sm_90a: {u:?}"
        );
        // Two 256-thread blocks per SM; the lean wgmma tile and the filter gradient's three
        // of 128 threads; the warp-specialized tile two of 384; the TF32 halo tile one of
        // 256, which its shared memory allows at W4 anyway (their bounds).
        let (threads, blocks) =
            if wgmma_kernels::LEAN.contains(&k) || wgmma_kernels::FILTER.contains(&k) {
                (128, 3)
            } else if wgmma_kernels::WS.contains(&k) {
                (384, 2)
            } else if wgmma_kernels::HALO.contains(&k) && k.ends_with("_tf32_f32") {
                (WIDE_THREADS, 1)
            } else {
                (WIDE_THREADS, 2)
            };
        assert!(
            blocks_per_sm_by_registers(u.registers, threads) >= blocks,
            "{k}: {} registers leave fewer than {blocks} blocks of {threads} threads per SM",
            u.registers
        );
    }
}

/// The wgmma model's hardware probe (`emu/wgmma_probe.cu`, which `scripts/gpu-check.sh`
/// compiles into the GPU bundle and `tests/cuda_ops.rs`'s `wgmma_model_on_hardware` runs):
/// compiles with the build's nvcc and flags for compute_90a, holds its three kernels and
/// their wgmma (f16, bf16, tf32; B N-major too; tf32 with A from registers too), and
/// assembles with ptxas for sm_90a. Here so that the probe cannot rot between GPU sessions.
#[test]
fn wgmma_probe_compiles_for_sm90a() {
    if kernels_or_skip("wgmma_probe_compiles_for_sm90a").is_none() {
        return;
    }
    let (dir, ptx_path) = nvcc_ptx("emu/wgmma_probe.cu", "90a", &[]);
    let ptx = std::fs::read_to_string(&ptx_path).unwrap();
    for k in [
        "emu_wgmma_test_f16",
        "emu_wgmma_test_bf16",
        "emu_wgmma_test_tf32",
        "emu_wgmma_pipe_test_f16",
    ] {
        assert!(ptx.contains(&format!(".entry {k}(")), "no kernel {k}");
    }
    // The pipeline skeleton's mbarriers: sm_90's parity try_wait, the cp.async arrival.
    for op in [
        "mbarrier.init.shared.b64",
        "mbarrier.arrive.shared.b64",
        "mbarrier.try_wait.parity.shared.b64",
        "cp.async.mbarrier.arrive.noinc.shared.b64",
    ] {
        assert!(ptx.contains(op), "no {op}");
    }
    for op in [
        "m64n64k16.f32.f16.f16",
        "m64n64k16.f32.bf16.bf16",
        "m64n64k8.f32.tf32.tf32",
    ] {
        assert!(
            ptx.contains(&format!("wgmma.mma_async.sync.aligned.{op}")),
            "no wgmma {op}"
        );
    }
    // The register-source form: A's four registers in braces after the accumulators'.
    assert!(
        ptx.lines()
            .any(|l| l.contains("m64n64k8.f32.tf32.tf32") && l.matches('{').count() == 2),
        "no register-source tf32 wgmma"
    );
    let out = Command::new(ptxas())
        .arg("-arch=sm_90a")
        .arg(&ptx_path)
        .arg("-o")
        .arg(dir.join("wgmma_probe.sm_90a.cubin"))
        .output()
        .expect("ptxas");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "ptxas -arch=sm_90a on the probe:\n{err}"
    );
    // No wgmma serialized (ptxas's "Potential Performance Loss" warning).
    assert!(
        !err.contains("Performance Loss") && !err.contains("serialized"),
        "ptxas on the probe:\n{err}"
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// `src` (a path in the crate) compiled to compute_`arch` PTX with the build's nvcc and flags
/// (build.rs's, warnings as errors) plus `defines`, in a fresh temporary folder: (the folder,
/// the PTX file). Fails the test with nvcc's message if it does not compile.
fn nvcc_ptx(src: &str, arch: &str, defines: &[&str]) -> (PathBuf, PathBuf) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let stem = Path::new(src).file_stem().unwrap().to_string_lossy();
    let dir = std::env::temp_dir().join(format!(
        "gradops-{stem}{arch}{}-{}",
        defines.concat(),
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let ptx_path = dir.join(format!("{stem}.compute_{arch}.ptx"));
    let out = Command::new(built::NVCC_PATH)
        .args(["-ptx", &format!("-arch=compute_{arch}")])
        .args(["-O3", "-std=c++17", "-lineinfo"])
        .args(["--Werror", "all-warnings"])
        .args(defines)
        .arg("-I")
        .arg(root.join("kernels"))
        .arg("-o")
        .arg(&ptx_path)
        .arg(root.join(src))
        .output()
        .expect("nvcc");
    assert!(
        out.status.success(),
        "nvcc {defines:?} on {src}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (dir, ptx_path)
}

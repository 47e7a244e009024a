//! Compiles kernels/*.cu to PTX with nvcc when one is found, once per virtual architecture,
//! and writes `$OUT_DIR/gradops_kernels.rs` (included by src/cuda/ptx.rs): a
//! `(module, arch, ptx)` table of every image, the architectures, and what was built with
//! what. The runtime loads, per module, the image of the highest architecture the device
//! supports (src/cuda/images.rs).
//!
//! nvcc is looked up in order: `$NVCC`, `$CUDA_HOME/bin/nvcc`, `$CUDA_PATH/bin/nvcc`,
//! `nvcc` on `PATH`, then the project's own `.cuda-toolchain/` (installed by
//! `bash scripts/install-cuda-toolchain.sh`). Without nvcc the crate builds CPU-only and
//! prints one warning (on docs.rs, `DOCS_RS` set, nvcc is not looked for); with
//! `GRADOPS_REQUIRE_CUDA=1` a missing nvcc or a failed compile
//! fails the build. `GRADOPS_CUDA_ARCH` (default `75,80,90`) is a comma-separated list of
//! virtual architectures (`75`, `sm_80`, `compute_90` all accepted, also alone); each kernel
//! file is compiled once per architecture, all in parallel, with `__CUDA_ARCH__` set to
//! that architecture (`800` for compute_80), so kernels can put newer-hardware code behind
//! `#if __CUDA_ARCH__ >= 800`. PTX JITs forward to newer GPUs (compute_90 on sm_100/sm_120).
//! Where compute_90 is built, the files of [`SM90A_FILES`] are also compiled for compute_90a
//! (Hopper's architecture-specific features, `wgmma`; `__CUDA_ARCH_FEAT_SM90_ALL` defined),
//! into a second table: such PTX runs on compute capability 9.0 only (no JIT forward), so the
//! runtime loads it beside, never instead of, the portable images.
//!
//! `GRADOPS_PTX_CACHE=DIR` (optional; CI sets it): each image is also kept in DIR under a
//! key of everything that makes it (nvcc's path and version, the arguments, the contents of
//! every file in kernels/), and taken from there when the key matches, so the builds of one
//! checkout with other features or profiles (CI makes several) run nvcc once.

use std::env;
use std::fs;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Kernel files, in the order of the generated table. Module name = file stem.
const KERNEL_FILES: &[&str] = &["resize", "conv", "pool"];
/// Kernel files also compiled for compute_90a (when compute_90 is built).
const SM90A_FILES: &[&str] = &["conv"];
const DEFAULT_ARCHS: &str = "75,80,90";
const INSTALL_HINT: &str = "bash scripts/install-cuda-toolchain.sh";

fn main() {
    let root = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let kdir = root.join("kernels");

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=kernels");
    if let Ok(rd) = fs::read_dir(&kdir) {
        let mut names: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        names.sort();
        for p in names {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    for v in [
        "NVCC",
        "CUDA_HOME",
        "CUDA_PATH",
        "GRADOPS_CUDA_ARCH",
        "GRADOPS_REQUIRE_CUDA",
        "GRADOPS_TOOLCHAIN_DIR",
        "GRADOPS_NVCC_FLAGS",
        "GRADOPS_PTX_CACHE",
        "DOCS_RS",
    ] {
        println!("cargo:rerun-if-env-changed={v}");
    }

    // tests/cuda_*.rs use gradops::cuda only once src/lib.rs declares the module.
    println!("cargo:rustc-check-cfg=cfg(gradops_cuda)");
    println!("cargo:rerun-if-changed=src/lib.rs");
    let lib = fs::read_to_string(root.join("src/lib.rs")).unwrap_or_default();
    if lib
        .lines()
        .any(|l| l.trim_start().starts_with("pub mod cuda;"))
    {
        println!("cargo:rustc-cfg=gradops_cuda");
    }

    let require = matches!(
        env::var("GRADOPS_REQUIRE_CUDA")
            .ok()
            .as_deref()
            .map(str::trim),
        Some("1") | Some("true") | Some("yes")
    );
    let toolchain_dir = env::var_os("GRADOPS_TOOLCHAIN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join(".cuda-toolchain"));
    // Installing the toolchain writes this stamp; watching it makes a reinstall rebuild
    // the kernels. When it is absent we do not watch it (a missing path would make cargo
    // rerun this script and recompile the crate on every build); the install script
    // touches build.rs instead, so the next build picks the new nvcc up.
    let stamp = toolchain_dir.join(".gradops-stamp");
    if stamp.is_file() {
        println!("cargo:rerun-if-changed={}", stamp.display());
    }

    let archs = match parse_archs(env::var("GRADOPS_CUDA_ARCH").ok().as_deref()) {
        Ok(a) => a,
        Err(msg) => fail_or_cpu(require, &out, &msg, None, &[]),
    };

    // docs.rs has no nvcc (and needs no kernels to document the API).
    if env::var_os("DOCS_RS").is_some_and(|v| !v.is_empty()) && !require {
        fail_or_cpu(
            false,
            &out,
            "gradops: docs.rs build (DOCS_RS set): CUDA kernels not compiled",
            None,
            &archs,
        );
    }
    let Some(nvcc) = find_nvcc(&toolchain_dir) else {
        let msg = format!(
            "gradops: nvcc not found (NVCC, CUDA_HOME, CUDA_PATH, PATH, {}); building \
             CPU-only. For the CUDA kernels install nvcc (in a gradops checkout: \
             `{INSTALL_HINT}`) and rebuild.",
            toolchain_dir.display()
        );
        fail_or_cpu(require, &out, &msg, None, &archs)
    };
    let version = nvcc_version(&nvcc).unwrap_or_else(|| "unknown".to_string());
    if let Some((maj, min)) = parse_major_minor(&version) {
        if (maj, min) > (13, 0) {
            println!(
                "cargo:warning=gradops: nvcc {version} emits a PTX ISA newer than 9.0, which \
                 drivers older than its CUDA release cannot load; the pinned toolchain \
                 ({INSTALL_HINT}, then NVCC=.cuda-toolchain/nvidia/cu13/bin/nvcc) is 13.0"
            );
        }
    }

    let extra: Vec<String> = env::var("GRADOPS_NVCC_FLAGS")
        .ok()
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default();

    let cache = env::var_os("GRADOPS_PTX_CACHE")
        .filter(|s| !s.is_empty())
        .map(|dir| PtxCache::new(PathBuf::from(dir), &nvcc, &version, &kdir, &extra));

    // Compile every (file, arch) pair in parallel (nvcc is single-threaded per file), and
    // the compute_90a images ("a" after the architecture).
    let mut jobs: Vec<(&str, u32, &str)> = KERNEL_FILES
        .iter()
        .flat_map(|name| archs.iter().map(move |&a| (*name, a, "")))
        .collect();
    if archs.contains(&90) {
        jobs.extend(SM90A_FILES.iter().map(|name| (*name, 90, "a")));
    }
    let results: Vec<(&str, u32, &str, Result<PathBuf, String>)> = std::thread::scope(|s| {
        let handles: Vec<_> = jobs
            .iter()
            .map(|&(name, arch, feat)| {
                let (nvcc, kdir, out, extra, cache) = (&nvcc, &kdir, &out, &extra, &cache);
                let tag = format!("{arch}{feat}");
                s.spawn(move || {
                    let ptx = out.join(format!("{name}.compute_{tag}.ptx"));
                    let made = match cache {
                        Some(c) => c.get_or_compile(name, &tag, &ptx, || {
                            compile(nvcc, kdir, &ptx, name, &tag, extra)
                        }),
                        None => compile(nvcc, kdir, &ptx, name, &tag, extra),
                    };
                    (name, arch, feat, made.map(|()| ptx))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("nvcc thread"))
            .collect()
    });

    let errors: Vec<String> = results
        .iter()
        .filter_map(|(n, a, f, r)| {
            r.as_ref()
                .err()
                .map(|e| format!("{n}.cu (compute_{a}{f}): {e}"))
        })
        .collect();
    if !errors.is_empty() {
        let msg = format!(
            "gradops: nvcc ({}) failed; building CPU-only.\n{}",
            nvcc.display(),
            errors.join("\n")
        );
        fail_or_cpu(require, &out, &msg, Some((&nvcc, &version)), &archs);
    }

    let mut src = header(true, &nvcc, &version, &archs, "", &extra.join(" "));
    src.push_str(
        "/// (module name, virtual architecture, PTX) for every compiled image, by module then \
         architecture.\npub const PTX_IMAGES: &[(&str, u32, &str)] = &[\n",
    );
    for (name, arch, _, r) in results.iter().filter(|r| r.2.is_empty()) {
        let ptx = r.as_ref().expect("checked above");
        src.push_str(&format!(
            "    ({name:?}, {arch}, include_str!({:?})),\n",
            ptx.display().to_string()
        ));
    }
    src.push_str("];\n");
    src.push_str(SM90A_DOC);
    src.push_str("pub const PTX_IMAGES_SM90A: &[(&str, &str)] = &[\n");
    for (name, _, _, r) in results.iter().filter(|r| !r.2.is_empty()) {
        let ptx = r.as_ref().expect("checked above");
        src.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            ptx.display().to_string()
        ));
    }
    src.push_str("];\n");
    write_out(&out, &src);
}

/// CPU-only output (or a build failure under GRADOPS_REQUIRE_CUDA=1).
fn fail_or_cpu(
    require: bool,
    out: &Path,
    msg: &str,
    tool: Option<(&Path, &str)>,
    archs: &[u32],
) -> ! {
    if require {
        eprintln!("{msg}");
        eprintln!("GRADOPS_REQUIRE_CUDA=1: refusing to build without the CUDA kernels.");
        std::process::exit(1);
    }
    // Exactly one cargo:warning line (multi-line messages would print several).
    let first = msg.lines().next().unwrap_or(msg);
    println!("cargo:warning={first}");
    for l in msg.lines().skip(1) {
        eprintln!("{l}");
    }
    let (nvcc, version) = tool.unwrap_or((Path::new(""), ""));
    let mut src = header(false, nvcc, version, archs, first, "");
    src.push_str(
        "/// (module name, virtual architecture, PTX) for every compiled image: none.\n\
         pub const PTX_IMAGES: &[(&str, u32, &str)] = &[];\n",
    );
    src.push_str(SM90A_DOC);
    src.push_str("pub const PTX_IMAGES_SM90A: &[(&str, &str)] = &[];\n");
    write_out(out, &src);
    std::process::exit(0);
}

const SM90A_DOC: &str =
    "/// (module name, PTX) of the compute_90a images (compute capability 9.0 only), \
                         where compute_90 was built.\n";

fn header(
    compiled: bool,
    nvcc: &Path,
    version: &str,
    archs: &[u32],
    reason: &str,
    flags: &str,
) -> String {
    let names: Vec<String> = archs.iter().map(|a| format!("compute_{a}")).collect();
    format!(
        "// @generated by build.rs\n\
         /// True when build.rs compiled every kernel file to PTX for every architecture.\n\
         pub const KERNELS_COMPILED: bool = {compiled};\n\
         /// nvcc release used (\"13.0.88\"), empty when none was found.\n\
         pub const NVCC_VERSION: &str = {version:?};\n\
         /// nvcc path used, empty when none was found.\n\
         pub const NVCC_PATH: &str = {:?};\n\
         /// Virtual architectures of the PTX images, ascending (`80` = compute_80).\n\
         pub const CUDA_ARCHS: &[u32] = &{archs:?};\n\
         /// The same as text (\"compute_75,compute_80,compute_90\").\n\
         pub const CUDA_ARCH: &str = {:?};\n\
         /// Kernel files (modules), in table order.\n\
         pub const PTX_MODULES: &[&str] = &{KERNEL_FILES:?};\n\
         /// Why the kernels were not compiled (empty when they were).\n\
         pub const NOT_COMPILED_REASON: &str = {reason:?};\n\
         /// The extra nvcc flags of GRADOPS_NVCC_FLAGS (empty: the default build).\n\
         pub const NVCC_FLAGS: &str = {flags:?};\n",
        nvcc.display().to_string(),
        names.join(",")
    )
}

fn write_out(out: &Path, src: &str) {
    let path = out.join("gradops_kernels.rs");
    // Only rewrite on change, so an unchanged result does not trigger a recompile.
    if fs::read_to_string(&path).ok().as_deref() != Some(src) {
        fs::write(&path, src).expect("write gradops_kernels.rs");
    }
}

/// `GRADOPS_PTX_CACHE`: PTX images kept across builds, keyed by all their inputs.
struct PtxCache {
    dir: PathBuf,
    /// The inputs every image shares: nvcc, its version, the extra flags, kernels/.
    inputs: DefaultHasher,
}

impl PtxCache {
    fn new(dir: PathBuf, nvcc: &Path, version: &str, kdir: &Path, extra: &[String]) -> Self {
        let mut inputs = DefaultHasher::new();
        // Bump when compile()'s fixed arguments change.
        ("gradops-ptx-cache 1", nvcc, version, extra, kdir).hash(&mut inputs);
        // nvcc reads these from the environment.
        for v in ["NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS"] {
            env::var_os(v).hash(&mut inputs);
        }
        let mut files: Vec<PathBuf> = fs::read_dir(kdir)
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        files.sort();
        for f in files {
            (f.file_name(), fs::read(&f).ok()).hash(&mut inputs);
        }
        PtxCache { dir, inputs }
    }

    /// Copies the cached image of (`name`, `tag`) to `ptx`, or runs `compile` (which writes
    /// `ptx`) and keeps a copy. A cache that cannot be read or written is only a miss.
    fn get_or_compile(
        &self,
        name: &str,
        tag: &str,
        ptx: &Path,
        compile: impl FnOnce() -> Result<(), String>,
    ) -> Result<(), String> {
        let mut key = self.inputs.clone();
        (name, tag).hash(&mut key);
        let kept = self
            .dir
            .join(format!("{name}.compute_{tag}-{:016x}.ptx", key.finish()));
        if fs::copy(&kept, ptx).is_ok() {
            return Ok(());
        }
        compile()?;
        // Written beside, then renamed: a concurrent build never reads half an image.
        let tmp = kept.with_extension(format!("tmp{}", std::process::id()));
        if fs::create_dir_all(&self.dir).is_ok() && fs::copy(ptx, &tmp).is_ok() {
            let _ = fs::rename(&tmp, &kept);
        }
        Ok(())
    }
}

/// nvcc `-ptx` of kernels/`name`.cu for compute_`arch` into `ptx`.
fn compile(
    nvcc: &Path,
    kdir: &Path,
    ptx: &Path,
    name: &str,
    arch: &str,
    extra: &[String],
) -> Result<(), String> {
    let src = kdir.join(format!("{name}.cu"));
    let output = Command::new(nvcc)
        .arg("-ptx")
        .arg(format!("-arch=compute_{arch}"))
        .args(["-O3", "-std=c++17", "-lineinfo", "--Werror", "all-warnings"])
        .arg("-I")
        .arg(kdir)
        .args(extra)
        .arg("-o")
        .arg(ptx)
        .arg(&src)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", nvcc.display()))?;
    if !output.status.success() {
        return Err(format!(
            "exit {}\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    Ok(())
}

/// `GRADOPS_CUDA_ARCH`: a comma-separated list of architectures, each `75`, `sm_80`,
/// `compute_90` (or `arch=...`); default [`DEFAULT_ARCHS`]. Sorted, duplicates removed.
fn parse_archs(v: Option<&str>) -> Result<Vec<u32>, String> {
    let raw = v
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or(DEFAULT_ARCHS);
    let mut archs = Vec::new();
    for item in raw.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let digits = item
            .trim_start_matches("arch=")
            .trim_start_matches("compute_")
            .trim_start_matches("sm_");
        match digits.parse::<u32>() {
            Ok(a) if digits.chars().all(|c| c.is_ascii_digit()) && a >= 10 => archs.push(a),
            _ => {
                return Err(format!(
                    "gradops: GRADOPS_CUDA_ARCH={raw:?}: {item:?} is not an architecture like \
                     75, sm_80 or compute_90 (a comma-separated list, e.g. 75,80,90)"
                ))
            }
        }
    }
    if archs.is_empty() {
        return Err(format!(
            "gradops: GRADOPS_CUDA_ARCH={raw:?} names no architecture (e.g. 75,80,90)"
        ));
    }
    archs.sort_unstable();
    archs.dedup();
    Ok(archs)
}

fn is_exe(p: &Path) -> bool {
    p.is_file()
}

fn find_nvcc(toolchain_dir: &Path) -> Option<PathBuf> {
    if let Some(p) = env::var_os("NVCC").filter(|s| !s.is_empty()) {
        let p = PathBuf::from(p);
        // An explicit NVCC wins even if it is a bare name resolved through PATH.
        if is_exe(&p) {
            return Some(p);
        }
        if let Some(found) = search_path(p.to_str().unwrap_or("")) {
            return Some(found);
        }
        println!(
            "cargo:warning=gradops: NVCC={} does not exist; looking elsewhere",
            p.display()
        );
    }
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = env::var_os(var).filter(|s| !s.is_empty()) {
            let p = PathBuf::from(home).join("bin").join("nvcc");
            if is_exe(&p) {
                return Some(p);
            }
        }
    }
    if let Some(p) = search_path("nvcc") {
        return Some(p);
    }
    let p = toolchain_dir.join("nvidia/cu13/bin/nvcc");
    is_exe(&p).then_some(p)
}

fn search_path(name: &str) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let path = env::var_os("PATH")?;
    env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_exe(p))
}

fn nvcc_version(nvcc: &Path) -> Option<String> {
    let out = Command::new(nvcc).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "Cuda compilation tools, release 13.0, V13.0.88"
    text.lines()
        .rev()
        .find_map(|l| l.split(", V").nth(1).map(|v| v.trim().to_string()))
        .or_else(|| {
            text.lines()
                .find_map(|l| l.split("release ").nth(1))
                .map(|v| v.split(',').next().unwrap_or(v).trim().to_string())
        })
}

fn parse_major_minor(v: &str) -> Option<(u32, u32)> {
    let mut it = v.split('.');
    Some((it.next()?.parse().ok()?, it.next()?.parse().ok()?))
}

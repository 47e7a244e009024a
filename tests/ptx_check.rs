//! PTX checks that need no GPU: every kernel file's PTX (built by build.rs) assembles
//! with ptxas for sm_80 and sm_90, every kernel of the op list is present, the PTX ISA is
//! at most 9.0 (what nvcc 13.0 emits and the R580 driver loads), and no kernel spills
//! registers or uses a local-memory stack. Prints registers per kernel.
//!
//! Without compiled kernels the tests say they skipped (and fail if
//! GRADOPS_REQUIRE_CUDA=1 is set when the tests run).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

mod built {
    #![allow(dead_code)]
    include!(concat!(env!("OUT_DIR"), "/gradops_kernels.rs"));
}

const OPS: &[(&str, &str)] = &[
    ("resize", "resize_gather"),
    ("resize", "resize_tile"),
    ("conv", "conv2d_forward"),
    ("conv", "conv2d_backprop_input"),
    ("pool", "max_pool_forward"),
    ("pool", "max_pool_grad"),
    ("pool", "max_pool_grad_argmax"),
    ("pool", "max_pool_tile_forward"),
    ("pool", "max_pool_tile_grad"),
    ("pool", "max_pool_tile_grad_argmax"),
];
const DTYPES: &[&str] = &["f16", "f32", "f64"];
const ARCHES: &[&str] = &["sm_80", "sm_90"];

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
    for (module, ptx) in built::PTX_MODULES {
        let ptx = ptx.expect("compiled");
        let version = ptx
            .lines()
            .find_map(|l| l.trim().strip_prefix(".version "))
            .unwrap_or_else(|| panic!("{module}: no .version line"));
        let (maj, min) = version.trim().split_once('.').expect(".version X.Y");
        let v: (u32, u32) = (maj.parse().unwrap(), min.parse().unwrap());
        assert!(
            v <= (9, 0),
            "{module}: PTX ISA {version} is newer than 9.0 (nvcc newer than 13.0?)"
        );
        for (m, op) in OPS.iter().filter(|(m, _)| m == module) {
            for d in DTYPES {
                let entry = format!(".entry {op}_{d}(");
                assert!(
                    ptx.contains(&entry),
                    "{m}: kernel {op}_{d} missing from PTX"
                );
            }
        }
    }
}

#[test]
fn ptxas_sm80_sm90_no_spills() {
    if kernels_or_skip("ptxas_sm80_sm90_no_spills").is_none() {
        return;
    }
    let ptxas = ptxas();
    let dir = std::env::temp_dir().join(format!("gradops-ptxas-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut report = String::new();
    let mut problems = Vec::new();
    report.push_str(&format!(
        "PTX from nvcc {} ({}), ptxas {}\n{:<32} {:>6} {:>6} {:>7} {:>7} {:>7}\n",
        built::NVCC_VERSION,
        built::CUDA_ARCH,
        ptxas.display(),
        "kernel",
        "arch",
        "regs",
        "smem",
        "stack",
        "spills"
    ));
    for (module, ptx) in built::PTX_MODULES {
        let ptx = ptx.expect("compiled");
        let file = dir.join(format!("{module}.ptx"));
        std::fs::write(&file, ptx).unwrap();
        for arch in ARCHES {
            let out = Command::new(&ptxas)
                .args(["-v", &format!("-arch={arch}"), "-o", "/dev/null"])
                .arg(&file)
                .output()
                .unwrap_or_else(|e| panic!("cannot run {}: {e}", ptxas.display()));
            let text = String::from_utf8_lossy(&out.stderr).to_string()
                + &String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "ptxas -arch={arch} {module}.ptx failed:\n{text}"
            );
            let usage = parse_ptxas(&text);
            for (m, op) in OPS.iter().filter(|(m, _)| m == module) {
                for d in DTYPES {
                    let name = format!("{op}_{d}");
                    let Some(u) = usage.get(&name) else {
                        problems.push(format!("{arch} {name}: not in ptxas output ({m})"));
                        continue;
                    };
                    report.push_str(&format!(
                        "{:<32} {:>6} {:>6} {:>7} {:>7} {:>7}\n",
                        name,
                        arch,
                        u.registers,
                        u.smem,
                        u.stack,
                        u.spill_stores + u.spill_loads
                    ));
                    if u.spill_stores + u.spill_loads > 0 || u.stack > 0 {
                        problems.push(format!(
                            "{arch} {name}: {} B stack, {} B spill stores, {} B spill loads",
                            u.stack, u.spill_stores, u.spill_loads
                        ));
                    }
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!("{report}");
    eprintln!("{report}");
    assert!(
        problems.is_empty(),
        "register spills / local memory:\n{}",
        problems.join("\n")
    );
}

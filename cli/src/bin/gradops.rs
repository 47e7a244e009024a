//! `gradops`: run one op from a case file (`run`), report the build and devices (`info`).

use clap::{Parser, Subcommand, ValueEnum};
use gradops_cli::case::CaseFile;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "gradops",
    version,
    about = "Backward passes of spatial image ops on CUDA and CPU"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Device {
    Cpu,
    Cuda,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run one op described by a case file (SPEC.md, "The gradops run case format").
    Run {
        /// The case file.
        case: PathBuf,
        /// Where to run it.
        #[arg(long, value_enum, default_value = "cpu")]
        device: Device,
    },
    /// Version, element types, compiled kernels and whether a GPU is usable (and why not).
    Info,
    /// Time the SPEC's benchmark workloads W1-W8 (nvprof-style table, optional JSON).
    Bench(gradops_cli::bench::BenchArgs),
}

fn run(case: PathBuf, device: Device) -> gradops::Result<()> {
    let c = CaseFile::load(&case)?;
    let inputs = c.read_inputs()?;
    let device = match device {
        Device::Cpu => gradops_cli::case::Device::Cpu,
        Device::Cuda => gradops_cli::case::Device::Cuda,
    };
    let out = c.call.run(device, c.layout, &inputs)?;
    out.write_npy(&c.output)
}

fn info() {
    println!("gradops {}", env!("CARGO_PKG_VERSION"));
    println!("element types: f16 and bf16 (accumulate in f32), f32, f64; layouts: NCHW, NHWC");
    println!("ops: {}", gradops_cli::case::OP_NAMES.join(", "));
    println!(
        "cpu: {} rayon threads, SIMD {}",
        rayon::current_num_threads(),
        gradops_cli::bench::cpu_simd_description()
    );
    let build = gradops::cuda::build_info();
    println!("cuda kernels: {build}");
    let device = gradops::cuda::probe();
    match &device {
        Ok(d) => println!("cuda device: {d}"),
        Err(e) => println!("cuda device: unusable: {e}"),
    }
    if !build.kernels_compiled {
        return;
    }
    let archs: Vec<String> = build.archs.iter().map(|a| format!("compute_{a}")).collect();
    let sizes: Vec<String> = build
        .modules
        .iter()
        .map(|m| {
            let kib: Vec<String> = build
                .images()
                .filter(|i| i.module == *m)
                .map(|i| i.ptx.len().div_ceil(1024).to_string())
                .collect();
            format!("{m} {} KiB", kib.join("/"))
        })
        .collect();
    println!(
        "cuda PTX images: {} of each module ({})",
        archs.join(", "),
        sizes.join(", ")
    );
    let sm90a: Vec<String> = build
        .sm90a_images()
        .map(|i| format!("{i} ({} KiB)", i.ptx.len().div_ceil(1024)))
        .collect();
    if !sm90a.is_empty() {
        println!(
            "cuda compute_90a images (compute capability 9.0 only: the wgmma conv tiles, by \
             default for the conv calls they were measured faster on; \
             GRADOPS_CUDA_CONV_TC_TILE=wgmma, GRADOPS_CUDA_CONV_TC_FORWARD_TILE=wgmma and \
             GRADOPS_CUDA_CONV_TC_FILTER_TILE=wgmma force them; =ws, the conv tiles' \
             warp-specialized one for f16/bf16 NHWC and f32, and =halo, the halo tile for \
             f16/bf16 and f32 under TF32 at unit source strides, NHWC and NCHW, not yet \
             timed): {}",
            sm90a.join(", ")
        );
    }
    match &device {
        Ok(d) => {
            let (major, minor) = d.compute_capability;
            match gradops::cuda::op_kernels() {
                Ok(ops) => {
                    println!("cuda kernels on this device (compute capability {major}.{minor}):");
                    println!("  {:<30} {:<18} kernels (variant)", "op", "image");
                    for k in ops {
                        println!(
                            "  {:<30} {:<18} {}_{{f16,bf16,f32,f64}} ({})",
                            k.op,
                            k.image.to_string(),
                            k.kernel,
                            k.variant
                        );
                    }
                }
                Err(e) => println!("cuda kernels on this device: none: {e}"),
            }
            println!("  {}", gradops::cuda::CONV_TENSOR_CORE_NOTE);
            println!("  {}", gradops::cuda::TILED_FALLBACK_NOTE);
        }
        Err(_) => {
            // No usable device: which image each common compute capability would load, and
            // each op's kernel variant in every image.
            let choices: Vec<String> = [
                (7, 0),
                (7, 5),
                (8, 0),
                (8, 6),
                (8, 9),
                (9, 0),
                (10, 0),
                (12, 0),
            ]
            .iter()
            .map(|&cc| match gradops::cuda::arch_for(cc) {
                Ok(a) => format!("{}.{} -> compute_{a}", cc.0, cc.1),
                Err(_) => format!("{}.{} -> none", cc.0, cc.1),
            })
            .collect();
            println!(
                "cuda image a device would load (the highest not newer than its compute \
                 capability): {}",
                choices.join(", ")
            );
            println!("cuda kernel variant per op and image (no usable device here):");
            // Column width: the longest variant name (the tensor-core one) plus a space.
            let wcol = gradops::cuda::OP_KERNELS
                .iter()
                .flat_map(|&(_, _, k)| {
                    build
                        .archs
                        .iter()
                        .map(move |&a| gradops::cuda::kernel_variant(k, a).len())
                })
                .max()
                .unwrap_or(11)
                .max(11);
            // The op and kernel columns as wide as their longest entry.
            let wop = gradops::cuda::OP_KERNELS
                .iter()
                .map(|&(op, _, _)| op.len())
                .max()
                .unwrap_or(2);
            let kernels_of = |module: &str, kernel: &str| format!("{module}.{kernel}_*");
            let wk = gradops::cuda::OP_KERNELS
                .iter()
                .map(|&(_, m, k)| kernels_of(m, k).len())
                .max()
                .unwrap_or(7);
            let mut header = format!("  {:<wop$} {:<wk$}", "op", "kernels");
            for a in &archs {
                header.push_str(&format!(" {a:<wcol$}"));
            }
            println!("{}", header.trim_end());
            for &(op, module, kernel) in gradops::cuda::OP_KERNELS {
                let mut row = format!("  {op:<wop$} {:<wk$}", kernels_of(module, kernel));
                for &a in build.archs {
                    row.push_str(&format!(
                        " {:<wcol$}",
                        gradops::cuda::kernel_variant(kernel, a)
                    ));
                }
                println!("{}", row.trim_end());
            }
            println!("  {}", gradops::cuda::CONV_TENSOR_CORE_NOTE);
            println!("  {}", gradops::cuda::TILED_FALLBACK_NOTE);
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Run { case, device } => match run(case, device) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gradops: {e}");
                ExitCode::FAILURE
            }
        },
        Cmd::Info => {
            info();
            ExitCode::SUCCESS
        }
        Cmd::Bench(args) => match gradops_cli::bench::run_cli(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gradops bench: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

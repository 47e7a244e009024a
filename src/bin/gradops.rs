//! `gradops`: run one op from a case file (`run`), report the build and devices (`info`).

use clap::{Parser, Subcommand, ValueEnum};
use gradops::case::CaseFile;
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
    /// Time the SPEC's benchmark workloads W1-W6 (nvprof-style table, optional JSON).
    Bench(gradops::bench::BenchArgs),
}

fn run(case: PathBuf, device: Device) -> gradops::Result<()> {
    let c = CaseFile::load(&case)?;
    let inputs = c.read_inputs()?;
    let device = match device {
        Device::Cpu => gradops::case::Device::Cpu,
        Device::Cuda => gradops::case::Device::Cuda,
    };
    let out = c.call.run(device, c.layout, &inputs)?;
    out.write_npy(&c.output)
}

fn info() {
    println!("gradops {}", env!("CARGO_PKG_VERSION"));
    println!("element types: f16 (accumulates in f32), f32, f64; layouts: NCHW, NHWC");
    println!("ops: {}", gradops::case::OP_NAMES.join(", "));
    println!("cpu: {} rayon threads", rayon::current_num_threads());
    println!("cuda kernels: {}", gradops::cuda::build_info());
    match gradops::cuda::probe() {
        Ok(d) => println!("cuda device: {d}"),
        Err(e) => println!("cuda device: unusable: {e}"),
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
        Cmd::Bench(args) => match gradops::bench::run_cli(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gradops bench: {e}");
                ExitCode::FAILURE
            }
        },
    }
}

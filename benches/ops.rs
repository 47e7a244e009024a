//! Criterion benches of every op on the SPEC's workloads W1–W8 (CPU, f32, batch 8).
//!
//! The shapes come from `gradops_cli::bench::workloads()` (the same definitions `gradops bench`
//! uses); outputs are preallocated where the API has an `_into` variant. Sample sizes are
//! modest so that `cargo bench` finishes in a few minutes on a 2-core machine. The CUDA
//! benches are skipped, with the reason printed, while CUDA is unusable.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use gradops_cli::bench::{cpu_kernels, cuda_status, workloads, CPU_BATCH};
use std::time::Duration;

fn cpu(c: &mut Criterion) {
    for w in workloads() {
        let mut g = c.benchmark_group(format!("cpu/{}", w.id));
        g.sample_size(10)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(3));
        let kernels = cpu_kernels::<f32>(&w, CPU_BATCH, 1)
            .unwrap_or_else(|e| panic!("{}: cannot build its inputs: {e}", w.id));
        for mut k in kernels {
            g.throughput(Throughput::Bytes(k.traffic.total()));
            g.bench_function(k.name(), |b| {
                b.iter(|| k.call().unwrap_or_else(|e| panic!("{e}")))
            });
        }
        g.finish();
    }
}

fn cuda(_c: &mut Criterion) {
    if let Err(e) = cuda_status() {
        println!("skipping the CUDA benches: {e}");
    }
}

criterion_group!(benches, cpu, cuda);
criterion_main!(benches);

//! Criterion benches of the CUDA ops on the SPEC's GPU workloads: W1–W8 at batch 32, in f16,
//! bf16, f32 and f64, with the inputs and preallocated outputs of `gradops bench --device cuda`
//! (`gradops_cli::bench::cuda_kernels`).
//!
//! Each sample queues `iters` back-to-back calls on the stream between two CUDA events and
//! waits for the end event (`gradops_cli::bench::CudaTimer`, which first queues an untimed
//! 256 MiB clear so that the host's launch overhead before the first call is hidden and L2
//! starts cold); criterion gets the GPU time between the events. Without a usable GPU the
//! benches print why and run nothing.

use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use cudarc::driver::CudaStream;
use gradops::{bf16, f16, Element, F32Precision};
use gradops_cli::bench::{
    cuda_kernels, cuda_status, workloads, CudaTimer, CUDA_BATCH, CUDA_PAD_BYTES,
};

fn cuda(c: &mut Criterion) {
    let device = match cuda_status() {
        Ok(d) => d,
        Err(e) => {
            println!("skipping the CUDA benches: {e}");
            return;
        }
    };
    let stream = gradops::cuda::stream().unwrap_or_else(|e| panic!("no CUDA stream: {e}"));
    println!("CUDA benches on {device}");
    dtype::<f16>(c, &stream);
    dtype::<bf16>(c, &stream);
    dtype::<f32>(c, &stream);
    dtype::<f64>(c, &stream);
}

fn dtype<T: Element>(c: &mut Criterion, stream: &Arc<CudaStream>) {
    let mut timer =
        CudaTimer::new(stream, CUDA_PAD_BYTES).unwrap_or_else(|e| panic!("CUDA timer: {e}"));
    for w in workloads() {
        let mut g = c.benchmark_group(format!("cuda/{}/{}", T::DTYPE.name(), w.id));
        g.sample_size(20)
            .warm_up_time(Duration::from_millis(500))
            .measurement_time(Duration::from_secs(2));
        // Built per workload and dropped after its group, so only one workload's buffers
        // are on the device at a time.
        let kernels = cuda_kernels::<T>(stream, &w, CUDA_BATCH, 1, F32Precision::Exact)
            .unwrap_or_else(|e| panic!("{}: cannot build its inputs: {e}", w.id));
        for mut k in kernels {
            g.throughput(Throughput::Bytes(k.info.traffic.total()));
            g.bench_function(k.info.name(), |b| {
                b.iter_custom(|iters| {
                    let seconds = timer
                        .time(|| (0..iters).try_for_each(|_| k.launch()))
                        .unwrap_or_else(|e| panic!("{e}"));
                    Duration::from_secs_f64(seconds)
                })
            });
        }
        g.finish();
    }
}

criterion_group!(benches, cuda);
criterion_main!(benches);

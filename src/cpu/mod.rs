//! CPU building blocks shared by the ops' CPU kernels.

#[cfg(target_arch = "x86_64")]
pub(crate) mod bf16_dot;
pub(crate) mod gemm;
pub(crate) mod scratch;
pub(crate) mod simd;

/// `f()` on a worker of rayon's pool, so that a call's several parallel passes (a filter
/// transform, then the images) start on a running worker instead of each waking the pool from
/// the caller's thread and putting the caller to sleep again. Called from a worker, `f()` runs
/// in place.
pub(crate) fn in_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_some() {
        f()
    } else {
        rayon::scope(|_| f())
    }
}

#[cfg(test)]
mod tests {
    use super::in_pool;

    /// From outside any pool the closure runs on a worker of the global pool; inside a pool
    /// it runs in place, on the caller's own worker of that pool.
    #[test]
    fn in_pool_runs_on_a_worker() {
        assert!(rayon::current_thread_index().is_none());
        let here = std::thread::current().id();
        let (index, thread) =
            in_pool(|| (rayon::current_thread_index(), std::thread::current().id()));
        assert!(index.is_some());
        assert_ne!(thread, here);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        pool.install(|| {
            let caller = (rayon::current_thread_index(), std::thread::current().id());
            assert!(caller.0.is_some());
            let inner = in_pool(|| (rayon::current_thread_index(), std::thread::current().id()));
            assert_eq!(inner, caller);
        });
    }
}

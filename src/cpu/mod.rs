//! CPU building blocks shared by the ops' CPU kernels.

pub(crate) mod gemm;
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

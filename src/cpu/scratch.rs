//! Per-thread scratch vectors kept across calls, for the CPU kernels' per-image (per-unit)
//! buffers.

use crate::dtype::Accum;

thread_local! {
    /// This thread's scratch vectors, kept across calls (see [`with_scratch`]).
    static SCRATCH: std::cell::RefCell<Vec<Vec<f32>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with `N` scratch vectors of this thread, kept across calls: the per-image buffers
/// are hundreds of KB, and allocating them per call cost page faults and zero fills every
/// call (batch 1 of W5: 1.0 ms a call instead of 0.5). Their contents are whatever the last
/// user left: callers write before they read. The thread's vectors are a stack: a call takes
/// the top `N` and puts them back in the same order, so a nested use (a rayon job run on this
/// thread while another waits, as the NCHW Winograd's per-tile jobs inside its per-image
/// ones) takes the next ones down and each nesting level keeps its own buffers across calls.
pub(crate) fn with_scratch<const N: usize, R>(f: impl FnOnce(&mut [Vec<f32>; N]) -> R) -> R {
    let taken = SCRATCH.with(|c| {
        let mut pool = c.try_borrow_mut().ok()?;
        let at = pool.len().saturating_sub(N);
        let mut top = pool.drain(at..);
        Some(std::array::from_fn(|_| top.next().unwrap_or_default()))
    });
    let returned = taken.is_some();
    let mut bufs = taken.unwrap_or_else(|| std::array::from_fn(|_| Vec::new()));
    let out = f(&mut bufs);
    if returned {
        SCRATCH.with(|c| {
            if let Ok(mut pool) = c.try_borrow_mut() {
                pool.extend(bufs);
            }
        });
    }
    out
}

/// Test support: fills the top `count` scratch vectors of every rayon worker's scratch stack
/// (pushing new ones where it holds fewer) with at least `len` NaNs, so that the next kernel
/// to take its scratch there reads NaN wherever it reads what it did not write.
#[cfg(test)]
pub(crate) fn poison_worker_scratch(count: usize, len: usize) {
    rayon::broadcast(|_| {
        SCRATCH.with(|c| {
            let mut pool = c.borrow_mut();
            while pool.len() < count {
                pool.push(Vec::new());
            }
            let at = pool.len() - count;
            for v in &mut pool[at..] {
                let n = v.len().max(len);
                v.clear();
                v.resize(n, f32::NAN);
            }
        })
    });
}

/// `v` resized to `n` (new elements zero; nothing else written) and viewed as `A`.
pub(crate) fn scratch_as<A: Accum>(v: &mut Vec<f32>, n: usize) -> Option<&mut [A]> {
    v.resize(n, 0.0);
    A::from_f32_mut(v)
}

/// `n` elements of `A`: the scratch vector `v` where `A` is f32, else `own` (resized, new
/// elements zero; nothing else written).
pub(crate) fn scratch_or_own<'a, A: Accum>(
    v: &'a mut Vec<f32>,
    own: &'a mut Vec<A>,
    n: usize,
) -> &'a mut [A] {
    if A::as_f32(&[]).is_some() {
        if let Some(s) = scratch_as::<A>(v, n) {
            return s;
        }
    }
    own.resize(n, A::zero());
    &mut own[..n]
}

//! The sampling protocol both devices share: warm-up, then a fixed number of calls or calls
//! until a time budget is spent; per-call times and their median; the load average.

use gradops::error::Result;
use std::time::{Duration, Instant};

/// Target timed wall time per kernel row when `--reps` is not given.
pub const TARGET_PER_ROW: Duration = Duration::from_millis(1500);
/// Fewest timed calls per row when `--reps` is not given.
pub const MIN_CALLS: usize = 5;
/// Most timed calls per row when `--reps` is not given.
pub const MAX_CALLS: usize = 10_000;

/// Per-call times of one kernel row, in seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Every timed call, in order.
    pub samples: Vec<f64>,
}

impl Timing {
    /// Number of timed calls.
    pub fn calls(&self) -> usize {
        self.samples.len()
    }
    /// Sum of the timed calls.
    pub fn total(&self) -> f64 {
        self.samples.iter().sum()
    }
    /// Mean.
    pub fn avg(&self) -> f64 {
        self.total() / self.samples.len().max(1) as f64
    }
    /// Fastest call.
    pub fn min(&self) -> f64 {
        self.samples.iter().copied().fold(f64::INFINITY, f64::min)
    }
    /// Slowest call.
    pub fn max(&self) -> f64 {
        self.samples.iter().copied().fold(0.0, f64::max)
    }
    /// Median (mean of the two middle calls for an even count).
    pub fn median(&self) -> f64 {
        median(&self.samples)
    }
}

/// Median of `v` (mean of the two middle values for an even length; NaN when empty).
pub fn median(v: &[f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

/// Times `call` on the host clock ([`Instant`]), each call alone; see [`time_samples`].
pub fn time_calls(
    mut call: impl FnMut() -> Result<()>,
    reps: Option<usize>,
    target: Duration,
) -> Result<Timing> {
    time_samples(
        || {
            let t = Instant::now();
            call()?;
            Ok(t.elapsed().as_secs_f64())
        },
        reps,
        target,
    )
}

/// Collects per-call times from `timed_call`, which runs the op once and returns how long
/// that call took, in seconds (however the device measures it): warm-up (one call, two when
/// adaptive; their times are dropped), then `reps` calls, or when `reps` is `None` calls
/// until `target` has been spent in timed calls (at least [`MIN_CALLS`], at most
/// [`MAX_CALLS`]).
pub fn time_samples(
    mut timed_call: impl FnMut() -> Result<f64>,
    reps: Option<usize>,
    target: Duration,
) -> Result<Timing> {
    // The first call touches the output's pages and warms caches and the thread pool (on a
    // GPU: loads the module and uploads the resize tables).
    timed_call()?;
    if reps.is_none() {
        timed_call()?;
    }
    let mut samples = Vec::new();
    let mut spent = 0.0;
    loop {
        let enough = match reps {
            Some(n) => samples.len() >= n.max(1),
            None => {
                samples.len() >= MAX_CALLS
                    || (samples.len() >= MIN_CALLS && spent >= target.as_secs_f64())
            }
        };
        if enough {
            break;
        }
        let dt = timed_call()?;
        spent += dt;
        samples.push(dt);
    }
    Ok(Timing { samples })
}

/// The 1-minute load average (`/proc/loadavg`), where the system has one.
pub fn load_avg() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::*;

    #[test]
    fn median_and_random() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        let v: Vec<f32> = random_vec(1000, 1);
        assert!(v.iter().all(|x| (-1.0..1.0).contains(x)));
        assert!(v.iter().filter(|x| **x < 0.0).count() > 300);
        assert_ne!(random_vec::<f32>(4, 1), random_vec::<f32>(4, 2));
    }
}

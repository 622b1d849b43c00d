//! `fgl-sim bench …`: performance figures printed, never asserted (timing does not
//! belong in tests). Each figure is the median of `reps` repetitions in this process.

mod attack;
mod data;
mod dp_gnn;
mod layout;
mod privacy;
mod secagg;
mod training;

pub use attack::attack;
pub use data::data;
pub use dp_gnn::dp_gnn;
pub use layout::layout;
pub use privacy::privacy;
pub use secagg::secagg;
pub use training::train;

use std::time::Instant;

use crate::error::Result;

/// The median of a non-empty list of timings.
fn median(mut times: Vec<f64>) -> f64 {
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Median wall time in milliseconds of `reps` calls of `f`.
pub fn median_ms<T>(reps: usize, mut f: impl FnMut() -> Result<T>) -> Result<f64> {
    let mut times = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        std::hint::black_box(f()?);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    Ok(median(times))
}

/// Reset this process's peak-RSS counter (Linux ≥ 4.0), so that the next
/// [`peak_rss_mib`] reads the peak since now.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

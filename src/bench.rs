//! `fgl-sim bench …`: performance figures printed, never asserted (timing does not
//! belong in tests). Each figure is the median of `reps` repetitions in this process.

use std::path::Path;
use std::time::Instant;

use crate::data::registry;
use crate::data::synthetic::SyntheticConfig;
use crate::error::Result;
use crate::partition::{self, Method, PartitionConfig};

/// Median wall time in milliseconds of `reps` calls of `f`.
pub fn median_ms<T>(reps: usize, mut f: impl FnMut() -> Result<T>) -> Result<f64> {
    let mut times = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let t = Instant::now();
        std::hint::black_box(f()?);
        times.push(t.elapsed().as_secs_f64() * 1e3);
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Peak resident memory of this process in MiB (Linux `VmHWM`), if available.
pub fn peak_rss_mib() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Loading and partitioning figures for Facebook, Cora and the synthetic default.
pub fn data(dir: Option<&Path>, reps: usize) -> Result<()> {
    println!("bench data: median of {reps} runs, release build expected (debug builds are ~10x slower)");
    let synthetic = SyntheticConfig::default();
    for name in ["facebook", "cora", "synthetic"] {
        let ds = match registry::load(name, dir, &synthetic, 0) {
            Ok(ds) => ds,
            Err(e) => {
                println!("{name:<10} skipped: {e}");
                continue;
            }
        };
        let load = median_ms(reps, || registry::load(name, dir, &synthetic, 0))?;
        let mut line = format!(
            "{name:<10} {:>6} nodes {:>7} edges | load {load:>8.1} ms",
            ds.num_nodes(),
            ds.graph.num_edges()
        );
        for method in [Method::Louvain, Method::Fluid, Method::Dirichlet] {
            let cfg = PartitionConfig { method, clients: 10, ..PartitionConfig::default() };
            let t = median_ms(reps, || partition::partition(&ds, &cfg, 0))?;
            line.push_str(&format!(" | {} {t:>7.1} ms", format!("{method:?}").to_lowercase()));
        }
        println!("{line}");
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak resident memory: {mib:.1} MiB");
    }
    Ok(())
}

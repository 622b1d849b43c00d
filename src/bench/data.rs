//! `fgl-sim bench data`.

use std::path::Path;

use super::median_ms;
use crate::backend::peak_rss_mib;
use crate::data::registry;
use crate::data::synthetic::SyntheticConfig;
use crate::error::Result;
use crate::partition::{self, Method, PartitionConfig};
use crate::scenario::yaml_name;

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
        let mut line = format!("{name:<10} {:>6} nodes {:>7} edges | load {load:>8.1} ms", ds.num_nodes(), ds.graph.num_edges());
        for method in [Method::Louvain, Method::Fluid, Method::Dirichlet] {
            let cfg = PartitionConfig { method, clients: 10, ..PartitionConfig::default() };
            let t = median_ms(reps, || partition::partition(&ds, &cfg, 0))?;
            line.push_str(&format!(" | {} {t:>7.1} ms", yaml_name(&method)));
        }
        println!("{line}");
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak resident memory: {mib:.1} MiB");
    }
    Ok(())
}

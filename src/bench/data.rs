//! `fgl-sim bench data`.

use std::path::Path;
use std::time::Instant;

use super::median_ms;
use crate::backend::peak_rss_mib;
use crate::data::registry;
use crate::data::synthetic::SyntheticConfig;
use crate::error::Result;
use crate::partition::{self, Method, PartitionConfig, louvain};
use crate::rng;
use crate::scenario::yaml_name;

/// Loading and partitioning figures for Facebook, Cora and the synthetic default, then
/// Louvain alone on generated graphs of `louvain_nodes` nodes.
pub fn data(dir: Option<&Path>, reps: usize, louvain_nodes: &[usize]) -> Result<()> {
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
    for &nodes in louvain_nodes.iter().filter(|&&n| n > 0) {
        louvain_scaling(nodes)?;
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak resident memory: {mib:.1} MiB");
    }
    Ok(())
}

/// Louvain on a generated cSBM graph (4 classes, average degree 10, homophily 0.8), once:
/// seconds, passes, the share of node evaluations the local moving skipped and the
/// adjacency entries the evaluations read (per arc of the input graph).
fn louvain_scaling(nodes: usize) -> Result<()> {
    let cfg = SyntheticConfig { nodes, avg_degree: 10.0, feature_dim: 1, ..SyntheticConfig::default() };
    let t = Instant::now();
    let ds = crate::data::synthetic::generate(&cfg, 0)?;
    let generate = t.elapsed().as_secs_f64();
    let (mut passes, mut evaluated, mut visits, mut scanned) = (0usize, 0usize, 0usize, 0usize);
    // Per level: nodes, passes, evaluations, adjacency entries read, seconds.
    let mut levels: Vec<(usize, usize, usize, usize, f64)> = Vec::new();
    let t = Instant::now();
    let c = louvain::louvain_reporting(&ds.graph, 1.0, &mut rng::derive(0, "louvain", &[]), &mut |level, p| {
        passes += 1;
        evaluated += p.evaluated;
        visits += p.nodes;
        scanned += p.scanned;
        if levels.len() <= level {
            levels.push((p.nodes, 0, 0, 0, t.elapsed().as_secs_f64()));
        }
        let l = &mut levels[level];
        (l.1, l.2, l.3) = (l.1 + 1, l.2 + p.evaluated, l.3 + p.scanned);
    });
    let secs = t.elapsed().as_secs_f64();
    println!(
        "louvain {nodes:>8} nodes {:>8} edges | {secs:>6.2} s ({:.0} ns per edge, {} rayon thread(s)) | {} levels, {passes} passes, {:.1} % of node visits evaluated, {:.1} adjacency entries read per arc | {} communities, modularity {:.4} | graph generated in {generate:.1} s",
        ds.graph.num_edges(),
        secs * 1e9 / ds.graph.num_edges() as f64,
        rayon::current_num_threads(),
        c.levels,
        100.0 * evaluated as f64 / visits.max(1) as f64,
        scanned as f64 / (2 * ds.graph.num_edges()).max(1) as f64,
        c.count,
        c.modularity.unwrap_or(f64::NAN),
    );
    for (level, &(nodes, passes, evaluated, read, start)) in levels.iter().enumerate() {
        let end = levels.get(level + 1).map_or(secs, |l| l.4);
        println!(
            "  level {level}: {nodes:>8} nodes, {passes:>5} passes, {evaluated:>9} evaluations reading {read:>10} adjacency entries, {:>6.2} s",
            end - start
        );
    }
    Ok(())
}

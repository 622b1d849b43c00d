//! `fgl-sim bench privacy`.

use std::path::Path;
use std::time::Instant;

use super::{median, median_ms, reset_peak_rss};
use crate::backend::peak_rss_mib;
use crate::data::synthetic::SyntheticConfig;
use crate::error::Result;
use crate::run;
use crate::scenario::Scenario;
use crate::train::LocalData;

const LPGNN_SCRIPT: &str = include_str!("../../bench/lpgnn_run.py");

/// `fgl-sim bench privacy`: perturbation throughput of each LDP mechanism on Facebook
/// (22 470 × 4 714, min-max scaled; the whole graph as one client) with its peak memory,
/// GRR-FS on its binarised features (m = 10 and m = d, ε = 1 per feature) and edge RR on
/// its graph (ε = 7, 8); edge RR's time and peak memory on a 20 000-node synthetic graph;
/// then the LPGNN Cora run (scenarios/lpgnn-cora.yaml: ε_x = ε_y = 1, Kx = 2, Ky = 8,
/// 500 epochs) in seconds per run; with `compare_pyg`, the same run in PyG
/// (`bench/lpgnn_run.py`, a port of sisaman/LPGNN, built into the binary).
pub fn privacy(dir: Option<&Path>, reps: usize, runs: usize, compare_pyg: Option<&Path>) -> Result<()> {
    use crate::defenses::ldp_features::{LdpFeaturesConfig, PerturbFeatures};
    use crate::defenses::ldp_labels::RandomizeLabels;
    use crate::privacy::Epsilon;
    use crate::privacy::edge_rr::EdgeRr;
    use crate::privacy::grr_fs::GrrFs;

    println!("bench privacy: median of {reps} runs, {} thread(s)", rayon::current_num_threads());
    let text = "dataset: {name: facebook, preprocess: {minmax: true}}\nfederation: {centralized: true}\n";
    match Scenario::parse(text, "bench privacy", &[]).and_then(|s| run::prepare(&s, dir)) {
        Err(e) => println!("facebook   skipped: {e}"),
        Ok(p) => {
            let data = LocalData::of_client(&p.dataset, &p.clients[0], &p.split)?;
            let (n, d) = (data.features.rows(), data.features.cols());
            let mb = (n * d * 4) as f64 / 1e6;
            println!(
                "facebook {n} nodes × {d} features ({} non-zero; {mb:.0} MB as dense f32) | peak RSS so far {:.0} MiB",
                data.features.nnz(),
                peak_rss_mib().unwrap_or(f64::NAN)
            );
            println!(
                "| mechanism | ε | ms | nodes/s | MB/s (dense input) | output | peak RSS during (MiB) |\n|---|---:|---:|---:|---:|---|---:|"
            );
            for (mechanism, eps) in [("mbm", 1.0), ("mbm", 8.0), ("1bm", 1.0), ("lpm", 1.0), ("agm", 1.0)] {
                let cfg: LdpFeaturesConfig = serde_norway::from_str(&format!("epsilon: {eps}\nmechanism: {mechanism}"))
                    .map_err(|e| crate::error::Error::Other(e.to_string()))?;
                let t = PerturbFeatures::new(mechanism, &cfg)?;
                reset_peak_rss();
                let mut out = None;
                let ms = median_ms(reps, || {
                    let mut copy = data.clone();
                    t.perturb(&mut copy, &mut crate::rng::derive(0, "bench-privacy", &[]))?;
                    out = Some(copy.features);
                    Ok(())
                })?;
                let kind = match out.as_ref() {
                    Some(crate::data::Features::Shifted(s)) => format!("sparse + shift ({} stored)", s.centered.nnz()),
                    Some(f) => format!("dense ({} values)", f.rows() * f.cols()),
                    None => String::new(),
                };
                drop(out);
                println!(
                    "| {mechanism} | {eps} | {ms:.1} | {:.0} | {:.0} | {kind} | {:.0} |",
                    n as f64 / (ms / 1e3),
                    mb / (ms / 1e3),
                    peak_rss_mib().unwrap_or(f64::NAN)
                );
            }
            let rr = RandomizeLabels { epsilon: Epsilon(1.0) };
            let ms = median_ms(reps, || rr.randomize(&mut data.clone(), &mut crate::rng::derive(0, "bench-privacy", &[])))?;
            println!("| rr (labels, train + val) | 1 | {ms:.1} | {:.0} | | labels | |", n as f64 / (ms / 1e3));

            // GRR-FS on the binarised features (Facebook's are binary sets: non-zero → 1),
            // one row at a time on one thread, binarising included.
            println!(
                "\n| grr-fs (γ = 2, d = {d}) | ε per feature | m | ms | nodes/s | node ε = m·ε | paper ε_X |\n|---|---:|---:|---:|---:|---:|---:|"
            );
            for m in [10, d] {
                let grr = GrrFs::new(vec![2; d], m, Epsilon(1.0))?;
                let (mut row, mut out) = (vec![0u32; d], vec![0u32; d]);
                let ms = median_ms(reps, || {
                    let mut rng = crate::rng::derive(0, "bench-privacy", &[]);
                    for v in 0..n {
                        row.fill(0);
                        data.features.for_each_nonzero(v, |j, _| row[j] = 1);
                        grr.perturb_row(&row, &mut rng, &mut out);
                        std::hint::black_box(&out);
                    }
                    Ok(())
                })?;
                println!(
                    "| grr-fs | 1 | {m} | {ms:.1} | {:.0} | {} | {:.2} |",
                    n as f64 / (ms / 1e3),
                    grr.node_epsilon(),
                    grr.paper_epsilon()
                );
            }

            // Edge RR on the whole graph, one sparse row per node into one CSR.
            let graph = &p.dataset.graph;
            let nodes = graph.num_nodes();
            let degrees = graph.degrees();
            println!(
                "\n| edge rr ({nodes} nodes, {} directed true edges) | ε | ms | reported edges | expected ± σ | kept | added |\n|---|---:|---:|---:|---:|---:|---:|",
                2 * graph.num_edges()
            );
            for eps in [7.0, 8.0] {
                let rr = EdgeRr::new(Epsilon(eps))?;
                let (mean, sd) = rr.expected_reported(nodes, &degrees);
                let mut counts = (0, 0);
                let ms = median_ms(reps, || {
                    let (csr, kept, added) = edge_rr_graph(&rr, graph);
                    counts = (kept, added);
                    Ok(csr)
                })?;
                println!("| edge rr | {eps} | {ms:.1} | {} | {mean:.0} ± {sd:.0} | {} | {} |", counts.0 + counts.1, counts.0, counts.1);
            }
        }
    }

    // Edge RR's memory on a graph of PubMed's size: sparse rows, never n × n.
    let cfg = SyntheticConfig { nodes: 20_000, classes: 3, avg_degree: 4.5, homophily: 0.8, feature_dim: 1, feature_signal: 0.3 };
    let graph = crate::data::synthetic::generate(&cfg, 0)?.graph;
    let nodes = graph.num_nodes();
    let rr = EdgeRr::new(Epsilon(7.0))?;
    let (mean, sd) = rr.expected_reported(nodes, &graph.degrees());
    reset_peak_rss();
    let before = peak_rss_mib().unwrap_or(f64::NAN);
    let t = Instant::now();
    let (csr, kept, added) = edge_rr_graph(&rr, &graph);
    let ms = t.elapsed().as_secs_f64() * 1e3;
    let after = peak_rss_mib().unwrap_or(f64::NAN);
    drop(csr);
    println!(
        "\nedge rr on synthetic CSBM {nodes} nodes {} edges, ε = 7: expected {mean:.0} ± {sd:.0} reported, actual {} ({kept} kept + {added} added), \
         {ms:.1} ms, peak RSS {before:.1} → {after:.1} MiB (the published code's dense n × n f32 matrix alone would be {:.0} MiB)",
        graph.num_edges(),
        kept + added,
        (nodes * nodes * 4) as f64 / 1048576.0
    );

    let scenario = Scenario::parse(include_str!("../../scenarios/lpgnn-cora.yaml"), "lpgnn-cora", &[])?;
    let opts = crate::run::RunOptions { quiet: true, ..Default::default() };
    match run::prepare(&scenario, dir) {
        Err(e) => println!("\nLPGNN Cora run skipped: {e}"),
        Ok(p) => {
            reset_peak_rss();
            let mut secs = Vec::new();
            let mut accs = Vec::new();
            for seed in 0..runs.max(1) {
                let s = Scenario::parse(include_str!("../../scenarios/lpgnn-cora.yaml"), "lpgnn-cora", &[format!("seed={seed}")])?;
                let t = Instant::now();
                let fed = run::train(&s, &p, &opts)?;
                secs.push(t.elapsed().as_secs_f64());
                accs.push(100.0 * fed.rounds.last().map_or(f64::NAN, |r| r.test_accuracy));
            }
            let mean = secs.iter().sum::<f64>() / secs.len() as f64;
            println!(
                "\nLPGNN Cora run (SAGE, ε_x = ε_y = 1, Kx 2, Ky 8, 500 epochs): {mean:.2} s per run (median {:.2}, {} runs; \
                 perturbation + training + selection), test acc {:.1} %, peak RSS {:.0} MiB",
                median(secs.clone()),
                secs.len(),
                accs.iter().sum::<f64>() / accs.len() as f64,
                peak_rss_mib().unwrap_or(f64::NAN)
            );
            if let Some(python) = compare_pyg {
                match pyg_lpgnn(python, dir, runs) {
                    Ok(line) => println!("PyG (bench/lpgnn_run.py, same setting, {runs} runs): {line}"),
                    Err(e) => println!("PyG comparison skipped: {e}"),
                }
            }
        }
    }
    Ok(())
}

/// Every node's edge-RR row of `graph` (own RNG stream from seed 0) as CSR (indptr,
/// indices), with the kept and added counts.
fn edge_rr_graph(rr: &crate::privacy::edge_rr::EdgeRr, graph: &crate::data::Graph) -> ((Vec<usize>, Vec<u32>), usize, usize) {
    let n = graph.num_nodes();
    let mut rng = crate::rng::derive(0, "bench-privacy", &[]);
    let (mut indptr, mut indices) = (Vec::with_capacity(n + 1), Vec::new());
    let (mut kept, mut added) = (0, 0);
    indptr.push(0);
    for v in 0..n {
        let (k, a) = rr.perturb_row(n, v, graph.neighbors(v), &mut rng, &mut indices);
        kept += k;
        added += a;
        indptr.push(indices.len());
    }
    ((indptr, indices), kept, added)
}

/// The summary line of `bench/lpgnn_run.py` run by `python` on the x1-y1 setting.
fn pyg_lpgnn(python: &Path, dir: Option<&Path>, runs: usize) -> std::result::Result<String, String> {
    let dir = dir.ok_or("no data directory (pass --data-dir or set FGL_DATA_DIR)")?;
    let script = std::env::temp_dir().join(format!("fgl-sim-lpgnn-{}.py", std::process::id()));
    std::fs::write(&script, LPGNN_SCRIPT).map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    let threads = rayon::current_num_threads().to_string();
    let runs = runs.max(1).to_string();
    let args = [
        "--eps-x",
        "1",
        "--eps-y",
        "1",
        "--kx",
        "2",
        "--ky",
        "8",
        "--lr",
        "0.01",
        "--wd",
        "0.001",
        "--dropout",
        "0.5",
        "--runs",
        &runs,
        "--threads",
        &threads,
    ];
    let out = std::process::Command::new(python).arg(&script).args(args).arg("--data-dir").arg(dir).output();
    let _ = std::fs::remove_file(&script);
    let out = out.map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{} exited with {}: {}", python.display(), out.status, err.lines().last().unwrap_or("")));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout.lines().last().map(str::to_string).ok_or_else(|| "the script printed nothing".into())
}

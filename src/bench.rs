//! `fgl-sim bench …`: performance figures printed, never asserted (timing does not
//! belong in tests). Each figure is the median of `reps` repetitions in this process.

use std::path::Path;
use std::time::Instant;

use crate::backend::{Backend, peak_rss_mib};
use crate::data::registry;
use crate::data::synthetic::SyntheticConfig;
use crate::error::Result;
use crate::fed::FedAvg;
use crate::model::Arch;
use crate::partition::{self, Method, PartitionConfig};
use crate::run;
use crate::scenario::{Scenario, yaml_name};
use crate::train::{self, ClientTensors, CrossEntropy, LocalData, TrainConfig};

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

/// Training figures: ms per full-batch epoch (forward + backward + SGD step) of GCN,
/// GraphSAGE and GAT on the whole graph, and seconds per FedAvg round (10 Louvain
/// clients, E = 5): 2 × 16 (GAT: 8 heads) on Cora and on a synthetic graph of PubMed's
/// size (20k nodes, 45k edges, 500 features, 3 classes) and on PubMed, and EC-LDA's model on Cora
/// (1433 → 512 → 64 → head, no dropout, GAT with one head). The data goes through
/// `run::prepare`, as in a run.
///
/// With `compare_pyg` (a Python with torch and torch_geometric), the same epochs are then
/// timed in PyG (`bench/pyg_epoch.py`, built into the binary) on as many threads, and a
/// table of both with their ratio is printed. A missing or failing Python only skips the
/// comparison. `only` names the workloads to time and `archs` the models (empty: all).
pub fn train(
    dir: Option<&Path>,
    backend: Backend,
    epochs: usize,
    rounds: usize,
    compare_pyg: Option<&Path>,
    only: &[String],
    archs: &[Arch],
) -> Result<()> {
    let archs: Vec<Arch> = [Arch::Gcn, Arch::Sage, Arch::Gat].into_iter().filter(|a| archs.is_empty() || archs.contains(a)).collect();
    let mut ours: Vec<(String, String, f64)> = Vec::new();
    let device = crate::backend::device(backend)?;
    println!(
        "bench train: backend {}, {} rayon threads, median over {epochs} epochs / {rounds} rounds (first of each discarded)",
        yaml_name(&backend),
        rayon::current_num_threads()
    );
    let two_by_16 = "heads: 8";
    let ec_lda = "heads: 1, layers: 2, hidden: [512, 64], head: true, dropout: 0";
    let workloads = [
        ("cora", "dataset: {name: cora}", two_by_16),
        (
            "synthetic-20k",
            "dataset: {name: synthetic, synthetic: {nodes: 20000, classes: 3, avg_degree: 4.5, homophily: 0.8, \
             feature_dim: 500, feature_signal: 0.3}}",
            two_by_16,
        ),
        ("pubmed", "dataset: {name: planetoid-pubmed}", two_by_16),
        ("cora-512-64", "dataset: {name: cora}", ec_lda),
    ];
    for (name, dataset_yaml, model_yaml) in workloads {
        if !only.is_empty() && !only.iter().any(|w| w == name) {
            continue;
        }
        let model = |arch: Arch| format!("model: {{arch: {}, {model_yaml}}}", yaml_name(&arch));
        let scenario = |extra: &str| Scenario::parse(&format!("{dataset_yaml}\n{extra}"), "bench", &[]);
        let prepare = |extra: &str| run::prepare(&scenario(extra)?, dir);
        let whole = match prepare("federation: {centralized: true}") {
            Ok(p) => p,
            Err(e) => {
                println!("{name} skipped: {e}");
                continue;
            }
        };
        let local = LocalData::of_client(&whole.dataset, &whole.clients[0], &whole.split)?;
        let mut line = format!(
            "{name:<14} {:>6} nodes {:>6} edges {:>5} feats | ms/epoch",
            whole.dataset.num_nodes(),
            whole.dataset.graph.num_edges(),
            local.features.cols()
        );
        let one_epoch = TrainConfig { epochs: 1, ..TrainConfig::default() };
        for &arch in &archs {
            let cfg = scenario(&model(arch))?.model;
            // The input layout depends on the first layer's width (GAT: heads × width).
            let tensors = ClientTensors::new(&local, cfg.first_width(whole.dataset.num_classes()), &device)?;
            let layout = if matches!(tensors.input, crate::model::NodeInput::Sparse(_)) { "sparse" } else { "dense" };
            let mut model = cfg.init(local.features.cols(), whole.dataset.num_classes(), 0, &device.clone().autodiff())?;
            let mut rng = crate::rng::derive(0, "bench", &[]);
            let mut optim = train::optimizer(&one_epoch);
            let mut times = Vec::new();
            for _ in 0..epochs.max(2) {
                let t = Instant::now();
                let (m, stats) = train::train_local(model, &tensors, &one_epoch, &CrossEntropy, &mut optim, &mut rng);
                std::hint::black_box(stats);
                model = m;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let ms = median(times[1..].to_vec());
            line.push_str(&format!(" {} {ms:>7.1} ({layout})", yaml_name(&arch)));
            ours.push((name.to_string(), yaml_name(&arch), ms));
        }
        println!("{line}");

        let federated = "partition: {method: louvain, clients: 10}\ntrain: {epochs: 5}";
        let clients = prepare(federated)?;
        let mut line = format!("{name:<14} FedAvg 10 Louvain clients, E = 5 | s/round");
        for &arch in &archs {
            let arch_name = yaml_name(&arch);
            let mut s = scenario(&format!("{federated}\n{}\nfederation: {{rounds: {}}}", model(arch), rounds.max(2)))?;
            s.backend = backend;
            let r = run::federation(&s, &clients, Default::default())?.run(&mut FedAvg)?;
            let secs = median(r.round_seconds[1..].to_vec());
            line.push_str(&format!(" {arch_name} {secs:>6.3}"));
            ours.push((name.to_string(), format!("{arch_name} FedAvg s/round"), secs));
        }
        println!("{line}");
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak resident memory: {mib:.1} MiB");
    }
    if let Some(python) = compare_pyg {
        match pyg_epochs(python, dir, epochs, rounds) {
            Ok(theirs) => print_comparison(&ours, &theirs),
            Err(why) => println!("PyG comparison skipped: {why}"),
        }
    }
    Ok(())
}

/// The PyG reference script, run by `--compare-pyg`.
const PYG_SCRIPT: &str = include_str!("../bench/pyg_epoch.py");

/// (workload, what, value) from `bench/pyg_epoch.py` run by `python`: ms per epoch per
/// arch, and seconds per FedAvg round (`"gcn FedAvg s/round"`).
fn pyg_epochs(python: &Path, dir: Option<&Path>, epochs: usize, rounds: usize) -> std::result::Result<Vec<(String, String, f64)>, String> {
    let dir = dir.ok_or("no data directory (pass --data-dir or set FGL_DATA_DIR)")?;
    let script = std::env::temp_dir().join(format!("fgl-sim-pyg-epoch-{}.py", std::process::id()));
    std::fs::write(&script, PYG_SCRIPT).map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    let threads = rayon::current_num_threads().to_string();
    let mut cmd = std::process::Command::new(python);
    cmd.arg(&script).arg(dir).args(["--threads", &threads, "--epochs", &epochs.max(2).to_string()]);
    // The FedAvg rows need this binary's partitions (the same Louvain clients).
    if let Ok(me) = std::env::current_exe() {
        cmd.arg("--fgl-sim").arg(me).args(["--rounds", &rounds.max(2).to_string()]);
    }
    let out = cmd.output();
    let _ = std::fs::remove_file(&script);
    let out = out.map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{} exited with {}: {}", python.display(), out.status, err.lines().last().unwrap_or("")));
    }
    print!("{stdout}");
    // Lines like "cora   2708 nodes  5278 edges | ms/epoch gcn  5.6 sage 29.5 gat 22.7   (torch …)".
    let mut figures = Vec::new();
    for line in stdout.lines() {
        let Some(name) = line.split_whitespace().next() else { continue };
        let (rest, suffix) = match (line.split_once("ms/epoch"), line.split_once("s/round")) {
            (Some((_, rest)), _) => (rest, ""),
            (None, Some((_, rest))) => (rest, " FedAvg s/round"),
            _ => continue,
        };
        let words: Vec<&str> = rest.split('(').next().unwrap_or("").split_whitespace().collect();
        for pair in words.chunks(2) {
            if let [arch, value] = pair
                && let Ok(value) = value.parse::<f64>()
            {
                figures.push((name.to_string(), format!("{arch}{suffix}"), value));
            }
        }
    }
    if figures.is_empty() { Err("the PyG script printed no figures".into()) } else { Ok(figures) }
}

fn print_comparison(ours: &[(String, String, f64)], theirs: &[(String, String, f64)]) {
    println!("\n| workload | model (ms/epoch unless said) | fgl-sim | PyG | ratio |\n|---|---|---:|---:|---:|");
    for (w, what, ours) in ours {
        if let Some((_, _, p)) = theirs.iter().find(|(tw, ta, _)| tw == w && ta == what) {
            println!("| {w} | {what} | {ours:.3} | {p:.3} | {:.2} |", ours / p);
        }
    }
}

/// The first layer's X·W, forward and backward into W (no gradient into X), with the
/// input stored dense and sparse, per output width: the measurement behind
/// [`crate::model::InputLayout::auto`]. Cora (1.27 % non-zero), CiteSeer (0.85 %) and
/// the synthetic default (dense).
pub fn layout(dir: Option<&Path>, backend: Backend, reps: usize) -> Result<()> {
    use crate::model::{InputLayout, NodeInput};
    let device = crate::backend::device(backend)?;
    println!(
        "bench layout: backend {}, {} rayon threads, ms per forward+backward of X·W (median of {reps})",
        yaml_name(&backend),
        rayon::current_num_threads()
    );
    for name in ["cora", "citeseer", "synthetic"] {
        let ds = match registry::load(name, dir, &SyntheticConfig::default(), 0) {
            Ok(ds) => ds,
            Err(e) => {
                println!("{name:<10} skipped: {e}");
                continue;
            }
        };
        let x = ds.require_features()?;
        let density = x.nnz() as f64 / (x.rows() * x.cols()) as f64;
        let inputs = [InputLayout::Dense, InputLayout::Sparse].map(|l| NodeInput::with_layout(x, l, &device));
        for width in [16, 64, 128, 256, 512] {
            let mut init = crate::model::init::Init::new(0, &device.clone().autodiff());
            let w = init.glorot([x.cols(), width], x.cols(), width).val();
            let mut line = format!("{name:<10} {}×{} ({:.2} % non-zero) width {width:>3} |", x.rows(), x.cols(), density * 100.0);
            for (layout, input) in ["dense", "sparse"].iter().zip(&inputs) {
                let t = median_ms(reps, || {
                    let grads = input.matmul(w.clone()).sum().backward();
                    Ok(w.grad(&grads).map(|g| g.sum().into_scalar::<f32>()))
                })?;
                line.push_str(&format!(" {layout} {t:>8.2}"));
            }
            let picked = InputLayout::for_strategy(x, width, crate::model::Strategy::for_device(&device));
            line.push_str(&format!(" | auto picks {picked:?}"));
            println!("{line}");
        }
    }
    Ok(())
}

/// One attack round's server-side work per client on EC-LDA's Cora workload (each of
/// GCN, GAT, SAGE at 1433 → 512 → 64 + head): reading the gradient off the update and
/// estimating, including the dummy graph and its forward pass, which the first client of
/// a round pays and the others of the same broadcast reuse.
pub fn attack(dir: Option<&Path>, reps: usize) -> Result<()> {
    use crate::attacks::{AttackRounds, ec_lda, ilrg, lda, llg_star};
    use crate::fed::{ClientUpdate, ModelParams, RoundContext, ServerStrategy};
    println!("bench attack: EC-LDA's Cora setting (10 Fluid clients), median over {reps} attack rounds, ms per client");
    for (model, text) in crate::reproduce::MODELS {
        let scenario = Scenario::parse(text, "bench", &["federation.rounds=2".to_string()])?;
        let prepared = match run::prepare(&scenario, dir) {
            Ok(p) => p,
            Err(e) => {
                println!("{model} skipped: {e}");
                continue;
            }
        };
        let federation = run::federation(&scenario, &prepared, Default::default())?;
        let server = federation.server_context().clone();
        let global = ModelParams::of(&scenario.model.init(server.in_dim, server.classes, 0, server.device())?);
        let sent = ec_lda::clip_to_norm(&global, 0.01);
        let returned = sent.scaled(0.999);
        let samples = prepared.clients[0].nodes.len();
        let update = ClientUpdate { client: 0, sent: &sent, returned: &returned, samples, lr: 0.1, local_epochs: 5, exact_gradient: None };
        let all = AttackRounds::All;
        let mut strategies: Vec<(&str, Box<dyn ServerStrategy>)> = vec![
            ("ec-lda", Box::new(lda::Lda::new("ec-lda", lda::LdaConfig { rounds: all.clone(), ..Default::default() }))),
            ("ilrg", Box::new(ilrg::Ilrg::new("ilrg", ilrg::IlrgConfig { rounds: all.clone(), ..Default::default() }))),
            (
                "llg-star",
                Box::new(llg_star::LlgStar::new("llg-star", llg_star::LlgStarConfig { rounds: all.clone(), ..Default::default() })),
            ),
        ];
        let mut line = format!("{model:<5}");
        for (name, strategy) in &mut strategies {
            strategy.setup(&server)?;
            let (mut first, mut further) = (Vec::new(), Vec::new());
            for round in 1..=reps.max(1) {
                let ctx = RoundContext { round, rounds: reps.max(1) };
                let t = Instant::now();
                strategy.after_update(&ctx, &update)?;
                first.push(t.elapsed().as_secs_f64() * 1e3);
                let t = Instant::now();
                strategy.after_update(&ctx, &ClientUpdate { client: 1, ..update })?;
                further.push(t.elapsed().as_secs_f64() * 1e3);
            }
            line.push_str(&format!(" | {name} first {:.2} further {:.3}", median(first), median(further)));
        }
        println!("{line}");
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak resident memory: {mib:.1} MiB");
    }
    Ok(())
}

/// Reset this process's peak-RSS counter (Linux ≥ 4.0), so that the next
/// [`peak_rss_mib`] reads the peak since now.
fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

const LPGNN_SCRIPT: &str = include_str!("../bench/lpgnn_run.py");

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

    let scenario = Scenario::parse(include_str!("../scenarios/lpgnn-cora.yaml"), "lpgnn-cora", &[])?;
    let opts = crate::run::RunOptions { quiet: true, ..Default::default() };
    match run::prepare(&scenario, dir) {
        Err(e) => println!("\nLPGNN Cora run skipped: {e}"),
        Ok(p) => {
            reset_peak_rss();
            let mut secs = Vec::new();
            let mut accs = Vec::new();
            for seed in 0..runs.max(1) {
                let s = Scenario::parse(include_str!("../scenarios/lpgnn-cora.yaml"), "lpgnn-cora", &[format!("seed={seed}")])?;
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

/// `fgl-sim bench dp-gnn`: DP-GNN against plain training on Cora (50/25/25 split, Adam,
/// 2 layers × 64, no dropout), centralized and over 10 Louvain clients, in ms per local
/// epoch (DP-GNN: ⌈N/B⌉ steps of B = 64 nodes with σ = 1, D = 5; plain: one full-batch
/// step); then the per-node gradients of one batch of 64 (EC-LDA's 1433 → 512 → 64 +
/// head GCN): the batched computation graphs against the naive loop, one node at a time.
pub fn dp_gnn(dir: Option<&Path>, epochs: usize, reps: usize) -> Result<()> {
    use crate::train::per_node::{ComputationGraph, NodeBatch, per_node};
    let base = |arch: &str, fed: &str, defense: &str| {
        format!(
            "dataset: {{name: planetoid-cora}}\nsplit: {{train: 0.5, val: 0.25, test: 0.25}}\nmodel: {{arch: {arch}, layers: 2, hidden: 64, dropout: 0.0}}\n\
             train: {{optimizer: adam, lr: 0.01, epochs: {epochs}}}\nfederation: {{rounds: 1{fed}}}\npartition: {{clients: 10}}\ndefenses: [{defense}]\n"
        )
    };
    println!("bench dp-gnn: Cora, 2 layers × 64, {epochs} local epochs, ms per local epoch (median of {reps} runs)");
    for (setting, fed) in [("centralized", ", centralized: true"), ("10 Louvain clients", "")] {
        for arch in ["gcn", "sage"] {
            let mut line = format!("{setting:<18} {arch:<4}");
            let mut times = Vec::new();
            for (name, defense) in [("plain", "none"), ("dp-gnn", "{kind: dp-gnn, sigma: 1.0, max_degree: 5, batch_size: 64}")] {
                let scenario = Scenario::parse(&base(arch, fed, defense), "bench", &[])?;
                let prepared = run::prepare(&scenario, dir)?;
                let ms = median_ms(reps, || {
                    let mut fed = run::federation(&scenario, &prepared, Default::default())?;
                    fed.run(&mut crate::fed::FedAvg)
                })?;
                times.push(ms / epochs as f64);
                line.push_str(&format!(" | {name} {:.1}", ms / epochs as f64));
            }
            println!("{line} | ratio {:.1}×", times[1] / times[0]);
        }
    }

    // Per-node gradients of one batch, batched against the naive loop.
    let scenario = Scenario::parse(
        &base("gcn", ", centralized: true", "none"),
        "bench",
        &["model.hidden=[512, 64]".into(), "model.head=true".into()],
    )?;
    let prepared = run::prepare(&scenario, dir)?;
    let federation = run::federation(&scenario, &prepared, Default::default())?;
    let server = federation.server_context().clone();
    let device = server.device().clone();
    let model = scenario.model.init(server.in_dim, server.classes, 0, &device.clone().autodiff())?;
    let dataset = &prepared.dataset;
    let features = dataset.require_features()?;
    let graph = &dataset.graph;
    let is_train: Vec<bool> = prepared.split.roles.iter().map(|r| *r == crate::data::Role::Train).collect();
    let (senders, _) = crate::defenses::dp_gnn::bound_degrees(graph, &is_train, 5, 2, 0);
    let roots: Vec<usize> = (0..graph.num_nodes()).filter(|&v| is_train[v]).take(64).collect();
    let labels: Vec<u32> = roots.iter().map(|&v| dataset.labels[v].expect("labelled")).collect();
    let graphs: Vec<ComputationGraph> = roots.iter().map(|&v| ComputationGraph::of(v, 2, &senders)).collect();
    let rows: usize = graphs.iter().map(|g| g.nodes.len()).sum();
    let batched = median_ms(reps.max(3), || {
        let batch = NodeBatch::new(&graphs, features, &labels, &device)?;
        let pn = per_node(&model, &batch, &crate::train::CrossEntropy, 1.0, None)?;
        let norms = pn.norms(&batch);
        let ones: Vec<Vec<f64>> = norms.iter().map(|t| vec![1.0; t.len()]).collect();
        let g = pn.weighted_sum(&batch, &ones, vec![None; pn.tensors()], 1.0);
        Ok(g.len())
    })?;
    let naive = median_ms(reps.max(3), || {
        let mut total = 0usize;
        for (g, &y) in graphs.iter().zip(&labels) {
            let batch = NodeBatch::new(std::slice::from_ref(g), features, &[y], &device)?;
            let out = model.forward(&batch.input(), &batch.graph);
            let loss = crate::train::cross_entropy(out.logits, &batch.roots, &batch.labels);
            let grads = burn::optim::GradientsParams::from_grads(loss.backward(), &model);
            total += grads.len();
        }
        Ok(total)
    })?;
    println!(
        "per-node gradients of 64 nodes (GCN 1433 → 512 → 64 + head, {rows} computation-graph rows): batched {batched:.1} ms \
         (norms and clipped sums included), naive loop {naive:.1} ms (Burn's gradients one node at a time, nothing else); \
         naive / batched = {:.2}",
        naive / batched
    );
    if let Some(mib) = peak_rss_mib() {
        println!("peak resident memory: {mib:.1} MiB");
    }
    Ok(())
}

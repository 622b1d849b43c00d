//! `fgl-sim bench train`.

use std::path::Path;
use std::time::Instant;

use super::median;
use crate::backend::{Backend, peak_rss_mib};
use crate::error::Result;
use crate::fed::FedAvg;
use crate::model::Arch;
use crate::run;
use crate::scenario::{Scenario, yaml_name};
use crate::train::{self, ClientTensors, CrossEntropy, LocalData, TrainConfig};

/// Training figures: ms per full-batch epoch (forward + backward + SGD step) of GCN,
/// GraphSAGE and GAT on the whole graph, and seconds per FedAvg round (10 Louvain
/// clients, E = 5): 2 × 16 (GAT: 8 heads) on Cora and on a synthetic graph of PubMed's
/// size (20k nodes, 45k edges, 500 features, 3 classes) and on PubMed, and EC-LDA's model on Cora
/// (1433 → 512 → 64 → head, no dropout, GAT with one head). The data goes through
/// `run::prepare`, as in a run.
///
/// With `compare_pyg` (a Python with torch and torch_geometric, and the torch device), the
/// same epochs are then timed in PyG (`bench/pyg_epoch.py`, built into the binary) on as
/// many threads or on the GPU, and a
/// table of both with their ratio is printed. A missing or failing Python only skips the
/// comparison. `only` names the workloads to time and `archs` the models (empty: all).
pub fn train(
    dir: Option<&Path>,
    backend: Backend,
    epochs: usize,
    rounds: usize,
    compare_pyg: Option<(&Path, &str)>,
    only: &[String],
    archs: &[Arch],
) -> Result<()> {
    let archs: Vec<Arch> = [Arch::Gcn, Arch::Sage, Arch::Gat].into_iter().filter(|a| archs.is_empty() || archs.contains(a)).collect();
    let mut ours: Vec<(String, String, f64)> = Vec::new();
    let device = crate::backend::device(backend)?;
    // Untimed epochs first. On wgpu the first epochs of a model compile and autotune its
    // kernels: on an H100, GAT on Cora took a median 41.9 ms over epochs 2–10 and 13.4 ms
    // over epochs 2–20, so one discarded epoch is not enough there.
    let warmup = if matches!(backend, Backend::Wgpu) { 10 } else { 1 };
    println!(
        "bench train: backend {}, {} rayon threads, median over {epochs} epochs (after {warmup} untimed) / {rounds} rounds (first discarded)",
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
            for _ in 0..warmup + epochs.max(1) {
                let t = Instant::now();
                let (m, stats) = train::train_local(model, &tensors, &one_epoch, &CrossEntropy, &mut optim, &mut rng);
                std::hint::black_box(stats);
                model = m;
                times.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let ms = median(times[warmup..].to_vec());
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
    if let Some((python, device)) = compare_pyg {
        match pyg_epochs(python, device, dir, epochs, rounds) {
            Ok(theirs) => print_comparison(&ours, &theirs),
            Err(why) => println!("PyG comparison skipped: {why}"),
        }
    }
    Ok(())
}

/// The PyG reference script, run by `--compare-pyg`.
const PYG_SCRIPT: &str = include_str!("../../bench/pyg_epoch.py");

/// (workload, what, value) from `bench/pyg_epoch.py` run by `python`: ms per epoch per
/// arch, and seconds per FedAvg round (`"gcn FedAvg s/round"`).
fn pyg_epochs(
    python: &Path,
    device: &str,
    dir: Option<&Path>,
    epochs: usize,
    rounds: usize,
) -> std::result::Result<Vec<(String, String, f64)>, String> {
    let dir = dir.ok_or("no data directory (pass --data-dir or set FGL_DATA_DIR)")?;
    let script = std::env::temp_dir().join(format!("fgl-sim-pyg-epoch-{}.py", std::process::id()));
    std::fs::write(&script, PYG_SCRIPT).map_err(|e| format!("cannot write {}: {e}", script.display()))?;
    let threads = rayon::current_num_threads().to_string();
    let mut cmd = std::process::Command::new(python);
    cmd.arg(&script).arg(dir).args(["--threads", &threads, "--epochs", &epochs.max(2).to_string(), "--device", device]);
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

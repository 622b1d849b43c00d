//! `fgl-sim bench dp-gnn`.

use std::path::Path;

use super::median_ms;
use crate::backend::peak_rss_mib;
use crate::error::Result;
use crate::run;
use crate::scenario::Scenario;

/// DP-GNN's batch size in every figure here (B), and the roots of the one batch timed alone.
const BATCH: usize = 64;

/// `fgl-sim bench dp-gnn`: DP-GNN against plain training on Cora (50/25/25 split, Adam,
/// no dropout), centralized and over 10 Louvain clients, in ms per local epoch
/// (DP-GNN: ⌈N/B⌉ steps of B = 64 nodes with σ = 1, D = 5; plain: one full-batch step)
/// at 2 layers × 16 and × 64 (GCN, GraphSAGE) and at EC-LDA's widths (GCN 1433 → 512 →
/// 64 + head). An epoch's cost is the difference between runs of E and 3E local epochs
/// over 2E (plain: 10× the epochs): what a run spends once (building the federation,
/// DP-GNN's degree bounding and threshold estimate, the evaluation) is not an epoch's.
/// Then the per-node gradients of one batch of 64 (EC-LDA's model): the batched
/// computation graphs against the naive loop, one node at a time; last, each setting's
/// floors: the noise alone and the batches' rows against the plain epoch.
pub fn dp_gnn(dir: Option<&Path>, epochs: usize, reps: usize) -> Result<()> {
    use crate::train::per_node::{ComputationGraph, NodeBatch, per_node};
    let base = |arch: &str, model: &str, epochs: usize, fed: &str, defense: &str| {
        format!(
            "dataset: {{name: planetoid-cora}}\nsplit: {{train: 0.5, val: 0.25, test: 0.25}}\nmodel: {{arch: {arch}, layers: 2, {model}, dropout: 0.0}}\n\
             train: {{optimizer: adam, lr: 0.01, epochs: {epochs}}}\nfederation: {{rounds: 1{fed}}}\npartition: {{clients: 10}}\ndefenses: [{defense}]\n"
        )
    };
    let epochs = epochs.max(1);
    println!(
        "bench dp-gnn: Cora, ms per local epoch: (run of 3E epochs − run of E) / 2E, median of {reps} runs each; E = {epochs} (DP-GNN), {} (plain)",
        10 * epochs
    );
    let models = [
        ("gcn", "2 × 16", "hidden: 16"),
        ("sage", "2 × 16", "hidden: 16"),
        ("gcn", "2 × 64", "hidden: 64"),
        ("sage", "2 × 64", "hidden: 64"),
        ("gcn", "1433 → 512 → 64 + head", "hidden: [512, 64], head: true"),
    ];
    let dp_gnn = format!("{{kind: dp-gnn, sigma: 1.0, max_degree: 5, batch_size: {BATCH}}}");
    // (setting, model, plain ms, steps an epoch, parameters) for the floors printed last.
    let mut floors = Vec::new();
    for (setting, fed) in [("centralized", ", centralized: true"), ("10 Louvain clients", "")] {
        for (arch, width, model) in models {
            let mut line = format!("{setting:<18} {arch:<4} {width:<22}");
            let mut times = Vec::new();
            let mut shape = (0, 0);
            // Plain epochs are ≈ 10–20× shorter: ten times as many, for the same resolution.
            for (name, defense, e) in [("plain", "none", 10 * epochs), ("dp-gnn", dp_gnn.as_str(), epochs)] {
                let mut run_ms = Vec::new();
                for e in [e, 3 * e] {
                    let scenario = Scenario::parse(&base(arch, model, e, fed, defense), "bench", &[])?;
                    let prepared = run::prepare(&scenario, dir)?;
                    // The E- and 3E-epoch runs share it: found once.
                    if name == "dp-gnn" && run_ms.is_empty() {
                        shape = epoch_shape(&scenario, &prepared)?;
                    }
                    run_ms.push(median_ms(reps, || {
                        let mut fed = run::federation(&scenario, &prepared, Default::default())?;
                        fed.run(&mut crate::fed::FedAvg)
                    })?);
                }
                let per_epoch = (run_ms[1] - run_ms[0]) / (2 * e) as f64;
                times.push(per_epoch);
                line.push_str(&format!(" | {name} {per_epoch:.2}"));
            }
            println!("{line} | ratio {:.1}×", times[1] / times[0]);
            floors.push((setting, format!("{arch:<4} {width:<22}"), times[0], shape.0, shape.1));
        }
    }

    // Per-node gradients of one batch, batched against the naive loop.
    let scenario = Scenario::parse(&base("gcn", "hidden: [512, 64], head: true", epochs, ", centralized: true", "none"), "bench", &[])?;
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
    let roots: Vec<usize> = (0..graph.num_nodes()).filter(|&v| is_train[v]).take(BATCH).collect();
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
    // The block Gram matrices of that batch's rows at 512 and 64 columns (its hidden
    // layer's and its output's widths), on each instruction set the chains compile for.
    let sizes: Vec<usize> = graphs.iter().map(|g| g.nodes.len()).collect();
    let mut line = String::from("block Gram matrices of those 64 computation graphs (fused multiply-add chains, the lower triangle):");
    for c in [512, 64] {
        let values: Vec<f32> = (0..rows * c).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 97.0).collect();
        for path in crate::simd::Isa::on_this_cpu() {
            let ms = median_ms(reps.max(5), || Ok(crate::train::per_node::gram_chains_on(path, &values, &sizes, c)))?;
            line.push_str(&format!(" {c} columns {path:?} {ms:.3} ms;"));
        }
    }
    println!("{}", line.trim_end_matches(';'));
    // One step's noise for that model: a standard normal per parameter, drawn one at a
    // time through rand_distr against `rng::standard_normals` (the same values).
    let params = crate::fed::ModelParams::of(&model).num_values();
    let draw = |bulk: bool| {
        median_ms(reps.max(5), || {
            let mut rng = crate::rng::derive(0, "bench-noise", &[]);
            let sum: f64 = if bulk {
                let mut sum = 0.0;
                crate::rng::standard_normals(&mut rng, params).for_each_slice(|z| sum += z.iter().sum::<f64>());
                sum
            } else {
                (0..params).map(|_| rand::Rng::sample::<f64, _>(&mut rng, rand_distr::StandardNormal)).sum()
            };
            Ok(sum)
        })
    };
    let one_by_one = draw(false)?;
    let cap = crate::simd::cap(crate::simd::Isa::Avx2);
    let avx2 = draw(true);
    crate::simd::cap(cap);
    let (avx2, bulk) = (avx2?, draw(true)?);
    let ns = |ms: f64| ms * 1e6 / params as f64;
    println!(
        "one step's noise ({params} standard normals): one at a time {one_by_one:.2} ms ({:.2} ns each); in bulk {bulk:.2} ms \
         ({:.2} ns, {:.2}× faster), on the AVX2 path {avx2:.2} ms ({:.2} ns, {:.2}×) — the same values",
        ns(one_by_one),
        ns(bulk),
        one_by_one / bulk,
        ns(avx2),
        one_by_one / avx2
    );
    // What no DP-GNN epoch can go below while the noise keeps its values and each root
    // keeps its own computation graph: every step's draws, and the batches' rows.
    let per_root = rows as f64 / graphs.len().max(1) as f64;
    let plain_rows = dataset.graph.num_nodes() as f64;
    println!(
        "floors of a DP-GNN epoch: the noise alone (steps × parameters × {:.2} ns, the bulk draw above) and the rows of its batches \
         (steps × {BATCH} roots × {per_root:.1} rows a root, the batch above; clients' graphs lose their cross-client edges, so fewer there) \
         against the plain epoch's {plain_rows} rows",
        ns(bulk),
    );
    for (setting, model, plain, steps, parameters) in floors {
        let noise = steps as f64 * parameters as f64 * ns(bulk) * 1e-6;
        let batch_rows = steps as f64 * BATCH as f64 * per_root;
        println!(
            "{setting:<18} {model} | {steps} steps × {parameters} parameters | noise {noise:.2} ms = {:.2}× plain | rows {:.2}× plain",
            noise / plain,
            batch_rows / plain_rows
        );
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak resident memory: {mib:.1} MiB");
    }
    Ok(())
}

/// (steps an epoch, parameters) of a DP-GNN run of `scenario`: ⌈N/B⌉ steps of
/// [`BATCH`] roots for each client's N training nodes, and the model's parameter count.
fn epoch_shape(scenario: &Scenario, prepared: &run::Prepared) -> Result<(usize, usize)> {
    let steps = prepared
        .clients
        .iter()
        .map(|c| c.nodes.iter().filter(|&&v| prepared.split.roles[v] == crate::data::Role::Train).count().div_ceil(BATCH))
        .sum();
    let federation = run::federation(scenario, prepared, Default::default())?;
    let server = federation.server_context();
    let model = scenario.model.init(server.in_dim, server.classes, 0, &server.device().clone().autodiff())?;
    Ok((steps, crate::fed::ModelParams::of(&model).num_values()))
}

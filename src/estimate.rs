//! What a run will cost before it starts: its peak memory and its time, from the scenario
//! and the size of its graph. `run`, `matrix` and `reproduce` refuse a scenario whose
//! memory estimate exceeds `--max-memory` before any work, and `--dry-run` prints both.
//!
//! The memory model is linear in the run's sizes, each term what the structures of that
//! size hold at the peak, measured as peak RSS of 16 synthetic runs on this project's
//! machine (fitted by least relative squares; `docs/scenarios.md` lists the check on
//! runs it was not fitted on):
//!
//! - 42 MiB for the process (binary, Burn, thread pools);
//! - 260 B per node (labels, roles, partition, per-client maps and their copies);
//! - 90 B per graph entry (arc: two per undirected edge): the CSR, the clients' subgraphs,
//!   their gather/scatter index tensors and the fused kernels' patterns;
//! - 12.4 B per dense feature value, 80 B per stored sparse one (its 8 B, with the index):
//!   the dataset's, the clients' copies, the device inputs and, for sparse files, the
//!   loader's transient arrays;
//! - per client training at once (`min(threads, clients)`, one on a GPU), 31.5 B per
//!   node and output unit of every layer (all heads): activations, masks and gradients of
//!   the largest client's epoch; GAT adds 20.5 B per arc of that client, head and layer;
//! - the model's parameters, 3.3 copies per client (the model sent, the update returned)
//!   and 4 per client training at once (model, gradients, optimizer state), 4 B each;
//! - what the defenses declare ([`crate::defenses::CostHint`]): dense features, the fake
//!   arcs of edge RR, DP-GNN's computation graphs.

use crate::data::Dataset;
use crate::data::Task;
use crate::data::link_split::{MAX_TRAIN_NEGATIVES, Negatives};
use crate::data::synthetic::SyntheticConfig;
use crate::defenses::{RunSize, training_seconds};
use crate::model::Arch;
use crate::scenario::Scenario;

const MIB: f64 = 1024.0 * 1024.0;
const PROCESS: f64 = 42.0 * MIB;
const PER_NODE: f64 = 260.0;
const PER_ARC: f64 = 90.0;
const PER_FEATURE_BYTE: f64 = 3.1;
/// A stored sparse feature value: its 8 B in the dataset, the clients' copies, the device
/// input, and the loader's transient arrays (read, sorted, made canonical); measured on
/// PubMed (988 k values).
const PER_SPARSE_VALUE: f64 = 80.0;
const PER_ACTIVATION: f64 = 31.5;
const PER_ATTENTION: f64 = 20.5;
/// Copies of the model's parameters per client (the model sent, the update returned, their
/// host vectors) and per client training at once (model, gradients, optimizer state).
const PARAMETERS_PER_CLIENT: f64 = 3.3;
const PARAMETERS_PER_TRAINER: f64 = 4.0;
/// Parameters of EC-LDA's Cora GCN (1433 → 512 → 64, FC head to 7 classes), on which
/// the attacks' server seconds were measured.
const EC_LDA_CORA_PARAMETERS: f64 = 767_495.0;
/// Link prediction, per training pair and epoch: the pair's two node ids, the two
/// gathered embeddings, their product, the pair layer's output and activation (each
/// `w` floats) and their gradients — ≈ 10 w floats (measured: two Facebook runs of
/// 1.64 M pairs per client at w = 64 held ≈ 8 GB together).
const PER_PAIR_FIXED: f64 = 32.0;
const PER_PAIR_FLOATS: f64 = 10.0;
/// Drawing a negative (rejection sampling into a hash set) and moving a pair's rows.
const PAIR_SECONDS: f64 = 3e-7;

/// The size of a run's graph.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DataSize {
    pub nodes: f64,
    /// Undirected edges.
    pub edges: f64,
    pub feature_dim: f64,
    /// Feature values stored (non-zeros of sparse features).
    pub feature_values: f64,
    /// Whether they are stored densely.
    pub dense: bool,
    pub classes: f64,
}

impl DataSize {
    /// A synthetic graph's size from its parameters alone, before it is generated.
    pub fn of_synthetic(c: &SyntheticConfig) -> DataSize {
        let nodes = c.nodes as f64;
        DataSize {
            nodes,
            edges: nodes * c.avg_degree / 2.0,
            feature_dim: c.feature_dim as f64,
            feature_values: nodes * c.feature_dim as f64,
            dense: true,
            classes: c.classes as f64,
        }
    }

    /// The size of `s`'s graph: a synthetic one from its parameters, a dataset loaded
    /// from `data_dir`.
    pub fn of_scenario(s: &Scenario, data_dir: Option<&std::path::Path>) -> crate::error::Result<DataSize> {
        match s.dataset.name.as_str() {
            "synthetic" => Ok(DataSize::of_synthetic(&s.synthetic())),
            name => {
                let mut d = crate::data::registry::load(name, data_dir, &s.synthetic(), s.seed)?;
                // RGNN's column grouping shrinks what the model reads (Cora: 1433 → 58).
                if let (Some(k), Some(f)) = (s.dataset.preprocess.group_columns, &d.features) {
                    d.features = Some(crate::data::preprocess::group_columns(f, k));
                }
                Ok(DataSize::of_dataset(&d))
            }
        }
    }

    pub fn of_dataset(d: &Dataset) -> DataSize {
        let (feature_dim, feature_values, dense) = match &d.features {
            Some(f) => (f.cols() as f64, f.stored() as f64, matches!(f, crate::data::Features::Dense(_))),
            None => (0.0, 0.0, true),
        };
        DataSize {
            nodes: d.num_nodes() as f64,
            edges: d.graph.num_edges() as f64,
            feature_dim,
            feature_values,
            dense,
            classes: d.num_classes() as f64,
        }
    }
}

/// One term of the memory estimate, with the scenario fields that drive it.
#[derive(Debug, Clone, PartialEq)]
pub struct Part {
    pub what: &'static str,
    pub bytes: f64,
    pub driven_by: String,
}

/// A run's estimated peak memory, by part.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryEstimate {
    pub parts: Vec<Part>,
}

impl MemoryEstimate {
    pub fn bytes(&self) -> f64 {
        self.parts.iter().map(|p| p.bytes).sum()
    }

    /// The parts, largest first, as `name size (driven by …)` lines.
    pub fn lines(&self) -> Vec<String> {
        let mut parts: Vec<&Part> = self.parts.iter().collect();
        parts.sort_by(|a, b| b.bytes.total_cmp(&a.bytes));
        parts.iter().map(|p| format!("{:<10} {:>10}  ({})", p.what, human(p.bytes), p.driven_by)).collect()
    }

    /// The largest parts' drivers, for a refusal.
    pub fn drivers(&self) -> String {
        let mut parts: Vec<&Part> = self.parts.iter().filter(|p| p.what != "process").collect();
        parts.sort_by(|a, b| b.bytes.total_cmp(&a.bytes));
        parts.iter().take(2).map(|p| format!("{} {} ({})", p.what, human(p.bytes), p.driven_by)).collect::<Vec<_>>().join("; ")
    }
}

/// `bytes` as KiB / MiB / GiB / TiB with 3 significant digits.
pub fn human(bytes: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let (mut v, mut u) = (bytes, 0);
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    let digits = if v >= 100.0 || u == 0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{v:.digits$}");
    let text = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    format!("{text} {}", units[u])
}

/// The run's size as the defenses' hints see it; `threads` train clients at once.
pub fn run_size(s: &Scenario, size: &DataSize, threads: usize) -> RunSize {
    let clients = if s.federation.centralized { 1.0 } else { s.partition.clients as f64 };
    let concurrent = if crate::backend::parallel_clients(s.backend) { (threads as f64).min(clients).max(1.0) } else { 1.0 };
    RunSize {
        nodes: size.nodes,
        edges: size.edges,
        clients,
        row_bytes: match size.dense {
            true => size.feature_dim * 4.0,
            false => size.feature_values / size.nodes.max(1.0) * 8.0,
        },
        feature_dim: size.feature_dim,
        layers: s.model.layers,
        widths: output_units(s, size.classes),
        concurrent,
        clients_per_round: if s.federation.centralized { 1.0 } else { s.federation.expected_round_size(s.partition.clients) },
        parameters: parameters(s, size),
    }
}

/// Σ over the layers (and the head) of their output columns, all heads of GAT's.
fn output_units(s: &Scenario, classes: f64) -> f64 {
    let m = &s.model;
    let heads = if m.arch == Arch::Gat { m.heads as f64 } else { 1.0 };
    let sage = if m.arch == Arch::Sage { 2.0 } else { 1.0 };
    let hidden: f64 = (0..m.hidden_outputs()).map(|i| m.hidden.width(i) as f64 * heads * sage).sum();
    // The logits: a head's, or the last layer's (GAT averages its heads there).
    hidden + classes * if m.head { 1.0 } else { heads.max(sage) }
}

/// The model's parameter count (weights and biases of every layer, GAT's attention
/// vectors, SAGE's two weight matrices, the head).
pub fn parameters(s: &Scenario, size: &DataSize) -> f64 {
    let m = &s.model;
    let heads = if m.arch == Arch::Gat { m.heads as f64 } else { 1.0 };
    let sage = if m.arch == Arch::Sage { 2.0 } else { 1.0 };
    let (mut total, mut input) = (0.0, size.feature_dim.max(1.0));
    for i in 0..m.layers {
        let last = i + 1 == m.layers;
        let out = if last && !m.head { size.classes } else { m.hidden.width(i) as f64 };
        total += input * out * heads * sage + out * heads * if m.arch == Arch::Gat { 3.0 } else { 1.0 };
        input = if m.arch == Arch::Gat && !last { out * heads } else { out };
    }
    if m.head {
        total += input * size.classes + size.classes;
    }
    total
}

/// Link prediction: the training pairs one client draws per epoch (its training
/// positives and their negatives as `link:` says; `natural`: all its other pairs, up to
/// the cap), the clients taken as equal parts of the graph; 0 for node classification.
fn link_pairs_per_client(s: &Scenario, size: &DataSize, clients: f64) -> f64 {
    if s.task != Task::Link {
        return 0.0;
    }
    let r = s.link.unwrap_or_default();
    let keep = (1.0 - r.val - r.test).max(0.0);
    let (n, e) = (size.nodes / clients, size.edges / clients);
    let positives = keep * e;
    let negatives = match r.negatives {
        Negatives::Ratio(x) => x * positives,
        Negatives::Natural => (keep * (n * (n - 1.0) / 2.0 - e).max(0.0)).min(MAX_TRAIN_NEGATIVES as f64),
    };
    positives + negatives
}

/// The width of the embeddings a link model pairs (its last GNN layer's).
fn pair_width(s: &Scenario) -> f64 {
    s.model.hidden.width(s.model.hidden_outputs().saturating_sub(1)) as f64
}

/// The peak memory of `s` on a graph of `size`, with `threads` worker threads.
pub fn memory(s: &Scenario, size: &DataSize, threads: usize) -> MemoryEstimate {
    let run = run_size(s, size, threads);
    let synthetic = s.dataset.name == "synthetic";
    let field = |fields: &str| if synthetic { format!("dataset.synthetic.{fields}") } else { format!("dataset `{}`", s.dataset.name) };
    let hints: Vec<_> = s.defenses.iter().map(|d| (d.name.as_str(), d.spec.cost(&run))).collect();
    let dense = size.dense || hints.iter().any(|(_, h)| h.dense_features);
    let feature_bytes = if dense { PER_FEATURE_BYTE * size.nodes * size.feature_dim * 4.0 } else { PER_SPARSE_VALUE * size.feature_values };
    let arcs = 2.0 * size.edges;
    let extra_arcs: f64 = hints.iter().map(|(_, h)| h.extra_arcs).sum();
    let client_nodes = size.nodes / run.clients;
    let client_arcs = (arcs + extra_arcs) / run.clients;
    let mut parts = vec![
        Part { what: "process", bytes: PROCESS, driven_by: "fixed".into() },
        Part { what: "nodes", bytes: PER_NODE * size.nodes, driven_by: format!("{} nodes: {}", size.nodes, field("nodes")) },
        Part {
            what: "graph",
            bytes: PER_ARC * (arcs + extra_arcs),
            driven_by: match extra_arcs > 0.0 {
                false => format!("{arcs:.3e} arcs: {}", field("nodes × avg_degree")),
                true => {
                    format!("{arcs:.3e} arcs, {extra_arcs:.3e} added by edge RR: {}, the defenses' epsilon", field("nodes × avg_degree"))
                }
            },
        },
        Part {
            what: "features",
            bytes: feature_bytes,
            driven_by: format!(
                "{} × {} {}: {}{}",
                size.nodes,
                size.feature_dim,
                if dense { "dense" } else { "sparse" },
                field("nodes × feature_dim"),
                if dense && !size.dense { ", made dense by a defense" } else { "" }
            ),
        },
        Part {
            what: "training",
            bytes: run.concurrent * client_nodes * run.widths * PER_ACTIVATION,
            driven_by: format!(
                "{} client(s) at once × {client_nodes:.0} nodes × {} output units: --threads, partition.clients, model.hidden, model.layers",
                run.concurrent, run.widths
            ),
        },
    ];
    let p = run.parameters;
    parts.push(Part {
        what: "model",
        bytes: p * 4.0 * (PARAMETERS_PER_CLIENT * run.clients + PARAMETERS_PER_TRAINER * run.concurrent),
        driven_by: format!("{p:.0} parameters × {} clients: model.hidden, the feature dimension, partition.clients", run.clients),
    });
    let pairs = link_pairs_per_client(s, size, run.clients);
    if pairs > 0.0 {
        let w = pair_width(s);
        parts.push(Part {
            what: "link pairs",
            bytes: run.concurrent * pairs * (PER_PAIR_FIXED + PER_PAIR_FLOATS * 4.0 * w),
            driven_by: format!(
                "{} client(s) at once × {pairs:.3e} training pairs per epoch × width {w}: link.negatives (`natural`: all of a client's pairs), partition.clients, model.hidden",
                run.concurrent
            ),
        });
    }
    if s.model.arch == Arch::Gat {
        let heads = s.model.heads as f64 * s.model.layers as f64;
        parts.push(Part {
            what: "attention",
            bytes: run.concurrent * client_arcs * heads * PER_ATTENTION,
            driven_by: format!("{} client(s) at once × {client_arcs:.0} arcs × {heads} heads: model.heads, model.layers", run.concurrent),
        });
    }
    for (name, h) in hints.iter().filter(|(_, h)| h.extra_bytes > 0.0) {
        parts.push(Part { what: "defense", bytes: h.extra_bytes, driven_by: format!("defense `{name}`'s parameters") });
    }
    MemoryEstimate { parts }
}

/// Dense matrix products on one core of this project's machine (gemm's AVX2 kernel), and
/// what streaming the dense input through a pass costs per entry whatever the product's
/// width: a narrow product reads as much as a wide one (Cora's 2708 × 1433 dense
/// features, SAGE 2 × 16, forward and backward: 6.6 ms an epoch on the AVX-512 host
/// (Solitude's profile, 2026-11-27), where products at the rate alone give 2.2 ms; the
/// rate refitted so that 512 columns cost what they did).
const DENSE_MACS_PER_SECOND: f64 = 4.0e10;
const DENSE_SECONDS_PER_ENTRY: f64 = 1.9e-9;

/// Sparse products and propagations cost per entry as if `h + NARROW_COLUMNS` columns
/// wide: a row's indices, its gather and its write cost the same at any width (Cora,
/// SAGE and GCN at 16 and 64 hidden units, 500 centralized epochs: 2.1–2.4× the model's
/// work per unit at 16 before; at 512 columns +4 %).
const NARROW_COLUMNS: f64 = 20.0;

/// Per client-epoch whatever the model and the client.
const CLIENT_EPOCH_SECONDS: f64 = 3.5e-4;

/// Per node and epoch whatever the widths (the loss and the logits, the per-node parts
/// of Burn's element ops): the intercepts of 16 and 64 hidden units for SAGE and GCN
/// 2 × 16 on Cora, 0.37–0.44 ms an epoch on the AVX-512 host, less what the model
/// charged there, over its probe factor 0.31.
const NODE_EPOCH_SECONDS: f64 = 3.7e-7;

/// Element work per node, output unit and epoch of what only some scenarios turn on,
/// measured on the AVX-512 host (Cora, SAGE 16 and 64 hidden units, 500 epochs, one
/// thread; each alone against a run without) and divided by its probe factor 0.31:
/// SELU (forward and backward, fused and vectorised: 0.83–0.89 ns; 10.5–12.3 ns while it
/// called libm's `exp` per element) and dropout (the draws, the mask and its two
/// products: 1.8–2.2 ns).
const SELU_SECONDS: f64 = 2.8e-9;
const DROPOUT_SECONDS: f64 = 6.5e-9;
/// Adam's step per parameter and epoch beyond SGD's: the fused step (one pass over the
/// parameter, its gradient and two moments) 0.34 ns against 2.26 for Burn's thirteen
/// element ops, measured on a day the host ran 1.37× slower than when those took 1.65 ns
/// (EC-LDA's GCN over 10 clients, 100 epochs, Adam against SGD): 0.25 ns there.
const ADAM_SECONDS: f64 = 0.8e-9;
/// Model selection on validation (`train.selection` other than `last`): a forward pass,
/// the loss and the scores every epoch; the first layer's product is shared with
/// training. +30 % of the epoch at 16 and 64 hidden units.
const VALIDATION_SHARE: f64 = 0.3;

/// Louvain on 0.5 M edges, one thread; it grows as edges^1.6 (`bench data` on that
/// machine: 1.2 s at 0.5 M edges, 5.9 s at 1.5 M, 47 s at 5 M, before the passes' cache
/// hints and bit set, which made it 0.69–0.73× as long at 0.5, 1.5 and 5 M edges on one
/// thread — measured on an AVX-512 host, with the same exponent).
const LOUVAIN_SECONDS: f64 = 0.85;

/// Seconds of one run on one core, on a graph of `size`.
pub fn seconds(s: &Scenario, size: &DataSize) -> f64 {
    time(s, size).total()
}

/// A run's estimated seconds on one core of the model's machine, in two parts that
/// another machine may run at different speeds (`speed` measures both).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Time {
    /// Training (on the data the defenses leave: a dense output by gemm), work like it
    /// that a defense declares (LPGNN's KProp), the attacks', the server's and the data
    /// stages' work.
    pub base: f64,
    /// What the defenses add: their factors' share of training (DP-GNN's per-node
    /// gradients and noise, edge RR's denser graph, Solitude's) and their own work per
    /// epoch and round (Solitude's calibration, secure aggregation's masks).
    pub defenses: f64,
    /// The part of `base` one thread does whatever the run's thread count: the attacks'
    /// and the rounds' server work, generating the graph and Louvain. The rest (the
    /// clients' training and the defenses' work) divides among the clients trained at
    /// once.
    pub serial: f64,
    /// Training's dense products on a defense's dense features at gemm's rate (X·W and
    /// Xᵀ·∂Z; streaming X through them stays in `base`): not in `base`, since a
    /// machine's gemm gains on the model's by another factor than its sparse kernels do
    /// (`speed` measures it apart).
    pub dense: f64,
}

impl Time {
    pub fn total(&self) -> f64 {
        self.base + self.dense + self.defenses
    }
}

/// The cores a run of `s` keeps busy with `threads` threads: one per client trained at
/// once on a CPU backend (no more than a round's clients), one on a GPU.
pub fn busy_cores(s: &Scenario, threads: usize) -> usize {
    let clients = if s.federation.centralized { 1.0 } else { s.federation.expected_round_size(s.partition.clients) };
    match crate::backend::parallel_clients(s.backend) {
        true => threads.min(clients.ceil().max(1.0) as usize).max(1),
        false => 1,
    }
}

/// [`seconds`] by part.
pub fn time(s: &Scenario, size: &DataSize) -> Time {
    // A graph without features trains on one value per node; a feature mechanism's
    // output is dense.
    let (n, e) = (size.nodes, size.edges);
    let run = run_size(s, size, 1);
    let hints: Vec<_> = s.defenses.iter().map(|d| d.spec.cost(&run)).collect();
    let dense_output = size.feature_dim > 0.0 && hints.iter().any(|h| h.dense_features);
    let nnz = match size.feature_dim {
        0.0 => n,
        d if dense_output => n * d,
        _ => size.feature_values,
    };
    let m = &s.model;
    // Hidden outputs: every layer's with an FC head on top, all but the last without.
    let widths: Vec<f64> = (0..m.hidden_outputs().max(1)).map(|i| m.hidden.width(i) as f64).collect();
    // GAT: every head's columns, and per arc ≈ 9× GCN's work (both endpoints gathered,
    // the attention scores, their softmax and all of it again backward); SAGE: two
    // weight products (the node's own and its neighbours'); each with more work per
    // parameter and client-epoch, however small the client (fitted to EC-LDA's Cora
    // setting, 20 rounds, 5 and 50 clients: GAT 5.0 and 16.0 s, SAGE 8.1 and 25.6 s,
    // GCN 3.6 and 10.7 s measured).
    let (heads, per_arc, products, per_parameter) = match m.arch {
        Arch::Gat => (m.heads as f64, 9.0, 1.0, 2.4e-9),
        Arch::Sage => (1.0, 1.0, 2.0, 2.1e-9),
        _ => (1.0, 1.0, 1.0, 1.2e-9),
    };
    // First layer X·W on the stored feature values, then per layer a propagation over
    // edges and nodes, and the dense products between hidden layers.
    let propagate: f64 = widths.iter().map(|h| (2.0 * e * per_arc + n) * (h * heads + NARROW_COLUMNS)).sum();
    let dense: f64 = widths.windows(2).map(|w| n * w[0] * heads * w[1]).sum();
    let first = products * nnz * widths[0] * heads;
    // A defense's dense output (an LDP mechanism's features, smoothed or reconstructed)
    // is multiplied by gemm: X·W forward and Xᵀ·∂Z backward per epoch (no gradient into
    // X; the trainer shares the forward's product, `NodeClassifier::first_product`), at
    // ≈ 4·10¹⁰ multiply-adds a second on one core here, ≈ 5× the rate of the sparse and
    // propagation work `training_seconds` is fitted to (Cora, EC-LDA's GCN 1433 → 512,
    // 20 rounds, one thread: RGNN 15.7 s, plain 3.4 s), each pass also streaming X
    // ([`DENSE_SECONDS_PER_ENTRY`]). Sparse input: its stored values, each as
    // [`NARROW_COLUMNS`] columns more.
    let (sparse_first, gemm_seconds, streaming) = match dense_output {
        true => (0.0, 2.0 * first / DENSE_MACS_PER_SECOND, 2.0 * nnz * DENSE_SECONDS_PER_ENTRY),
        false => (first + nnz * NARROW_COLUMNS, 0.0, 0.0),
    };
    let epoch_work = sparse_first + products * dense + propagate;
    // What some scenarios turn on, per node and unit of the hidden outputs (the
    // activation and dropout follow each) and per parameter.
    let units: f64 = n * widths.iter().map(|h| h * heads).sum::<f64>();
    let elements = n * NODE_EPOCH_SECONDS
        + units
            * (match m.activation {
                crate::model::Activation::Selu => SELU_SECONDS,
                crate::model::Activation::Relu => 0.0,
            } + if m.dropout > 0.0 { DROPOUT_SECONDS } else { 0.0 });
    let validation = if s.train.selection == crate::train::Selection::Last { 1.0 } else { 1.0 + VALIDATION_SHARE };
    let adam = if s.train.optimizer == crate::train::OptimizerKind::Adam { ADAM_SECONDS * run.parameters } else { 0.0 };
    // Link prediction: every training pair through the pair layer (w × w) and the head,
    // plus drawing it.
    let w = pair_width(s);
    let pairs = link_pairs_per_client(s, size, run.clients) * run.clients;
    let pair_seconds = pairs * (training_seconds(w * w + 4.0 * w) + PAIR_SECONDS);
    let epochs = (s.federation.rounds * s.train.epochs) as f64;
    let rounds = s.federation.rounds as f64;
    // Only a round's sampled clients train: their share of the graph, and their count.
    let sampled = (run.clients_per_round / run.clients).min(1.0);
    let (mut factor, mut extra, mut trains) = (1.0, 0.0, 0.0);
    for hint in &hints {
        factor *= hint.factor;
        extra += epochs * sampled * hint.seconds_per_epoch + rounds * hint.seconds_per_round;
        trains += epochs * sampled * hint.training_per_epoch;
    }
    // Server work of the attacks, per run, measured on EC-LDA's Cora model and scaled by
    // the parameters they read (the quick matrix's 850-parameter model: next to nothing).
    let attacks: f64 = s.attacks.iter().map(|a| a.spec.server_seconds_on_cora()).sum::<f64>() * run.parameters / EC_LDA_CORA_PARAMETERS;
    // Before training: generating a synthetic graph (measured: 1 M nodes, 5 M edges, 128
    // features: 8.2 s) and Louvain, superlinear on large graphs.
    let generate = if s.dataset.name == "synthetic" { 0.8e-6 * e + 32e-9 * size.feature_values } else { 0.0 };
    let louvain = match (s.federation.centralized, s.partition.method) {
        (false, crate::partition::Method::Louvain) => LOUVAIN_SECONDS * (e / 5e5).powf(1.6),
        _ => 0.0,
    };
    // Calibrated on this project's 2-core AMD EPYC machine (AVX2, no AVX-512), one run
    // per core (2026-11-26, one thread, nothing else running): forward and backward ≈ 3×
    // the work at ≈ 15 GFLOP/s; per client-epoch 0.35 ms fixed and (GCN) 1.2 ns per model
    // parameter (the dense weight gradients and the optimizer step pass over every
    // parameter however small the client: 1.3 ms on EC-LDA's 767 k-parameter Cora
    // model); 5 ms of server work per round. Fitted to EC-LDA's Cora GCN setting over 20 rounds with 5 and 50 clients
    // (3.1 and 8.9 s measured) and checked on 10 (3.85 s measured, 3.8 modelled); the
    // defenses' and attacks' factors from the shipped Cora matrix's runs. The fixed part
    // from small models on the AVX-512 host (reproduce rgnn's federated cells: 2 k
    // parameters, 5 000 client-epochs of ≈ 270 nodes, 155 µs each; 0.2 ms before), the
    // per-parameter terms lowered to keep EC-LDA's sums.
    let client_epoch = CLIENT_EPOCH_SECONDS + per_parameter * run.parameters + adam;
    let per_epoch = validation * (training_seconds(epoch_work) + elements) + gemm_seconds + streaming + pair_seconds;
    let training = epochs * (sampled * per_epoch + run.clients_per_round * validation * client_epoch);
    let serial = attacks + rounds * 0.005 + generate + louvain;
    let dense = epochs * sampled * gemm_seconds;
    let base = training - dense + trains + serial;
    let defenses = training * (factor - 1.0) + extra;
    // A run is never estimated below 20 ms (the process's own start and writes).
    Time { base: base.max(0.02 - defenses - dense), defenses, serial, dense }
}

/// The memory a run may take by default: 90 % of what the machine has available now
/// (Linux `MemAvailable`), `None` where that is unknown.
pub fn default_max_memory() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kb: f64 = info.lines().find(|l| l.starts_with("MemAvailable:"))?.split_whitespace().nth(1)?.parse().ok()?;
    Some(0.9 * kb * 1024.0)
}

/// A memory size as `--max-memory` takes it: bytes, or with a unit K, M, G, T (powers of
/// 1024, `KiB`/`KB` spellings too), e.g. `8G`, `1.5GiB`, `512M`.
pub fn parse_size(text: &str) -> Option<f64> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let v: f64 = number.parse().ok()?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => MIB * 1024.0,
        "t" | "tb" | "tib" => MIB * MIB,
        _ => return None,
    };
    (v.is_finite() && v > 0.0).then_some(v * scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(extra: &str) -> Scenario {
        let base = "dataset: {name: synthetic}\nfederation: {rounds: 10}\ntrain: {epochs: 2}\npartition: {clients: 4}\n";
        Scenario::parse(&format!("{base}{extra}"), "t.yaml", &[]).unwrap()
    }

    fn size() -> DataSize {
        DataSize { nodes: 1000.0, edges: 4000.0, feature_dim: 20.0, feature_values: 20000.0, dense: true, classes: 4.0 }
    }

    /// The time estimate takes each defense's and attack's cost from its registration:
    /// DP-GNN multiplies the epochs, Solitude adds its calibration per epoch, LPGNN its
    /// KProp steps, an attack adds server time scaled by the parameters it reads.
    #[test]
    fn the_time_estimate_takes_costs_from_the_registry() {
        let cost = |extra: &str| seconds(&scenario(extra), &size());
        let plain = cost("");
        // Not scaled by the defenses: the rounds' server work, generating the synthetic
        // graph and Louvain.
        let fixed = 10.0 * 0.005 + (0.8e-6 * 4000.0 + 32e-9 * 20000.0) + LOUVAIN_SECONDS * (4000.0f64 / 5e5).powf(1.6);
        let dp_gnn = crate::defenses::dp_gnn::cost_factor();
        assert!(((cost("defenses: [dp-gnn]\n") - fixed) / (plain - fixed) - dp_gnn).abs() < 1e-9);
        // By part: a plain run is all base; DP-GNN's more trainings are its own work,
        // LPGNN's KProp steps are training's kind of work.
        let part = |extra: &str| time(&scenario(extra), &size());
        assert_eq!(part("").defenses, 0.0);
        let dp = part("defenses: [dp-gnn]\n");
        assert!((dp.base - plain).abs() < 1e-12 && (dp.defenses - (dp_gnn - 1.0) * (plain - fixed)).abs() < 1e-9, "{dp:?}");
        assert_eq!(part("defenses: [lpgnn]\n").defenses, 0.0);
        // What one thread does whatever the threads: the fixed part, and an attack's
        // server work; the clients' training divides among the cores they keep busy.
        assert!(
            (part("").serial - fixed).abs() < 1e-12
                && (part("attacks: [llg-star]\n").serial - fixed - 5.0 * 404.0 / 767_495.0).abs() < 1e-12
        );
        assert_eq!([1, 2, 3, 4, 8].map(|t| busy_cores(&scenario(""), t)), [1, 2, 3, 4, 4]);
        let mut centralized = scenario("");
        centralized.federation.centralized = true;
        assert_eq!(busy_cores(&centralized, 8), 1);
        // A dense defense output's first product (1000 × 20 × 16) is charged at gemm's
        // rate with the input streamed twice, forward and backward, not at the sparse
        // rate (its 20 000 values each as 20 columns more), in each of the 20 epochs.
        let dense = 20.0 * (2.0 * 320_000.0 / 4.0e10 + 2.0 * 20_000.0 * 1.9e-9 - 3.0 * (320_000.0 + 20_000.0 * 20.0) / 1.46e10);
        // RGNN's preset trains with its LLP loss over bags: 0.38 µs per node and epoch.
        let rgnn = cost("defenses: [rgnn]\n");
        assert!((rgnn - (plain + dense + 20.0 * 1000.0 * 3.8e-7)).abs() < 1e-9, "{rgnn}");
        let fake = 4.0 * 250.0f64.powi(2) / (1.0 + 8f64.exp());
        let solitude = cost("defenses: [solitude]\n"); // the preset: ε_a = 8
        assert!((solitude - (1.1 * (plain + dense - fixed) + fixed + 20.0 * (8000.0 + fake) * 9.4e-7)).abs() < 1e-9, "{solitude}");
        // Attacks: their seconds on EC-LDA's Cora model, scaled by the parameters (404).
        assert!((cost("attacks: [llg-star]\n") - plain - 5.0 * 404.0 / 767_495.0).abs() < 1e-9);
        assert_eq!(cost("attacks: [uniform]\ndefenses: [ldp-labels]\n"), plain);
        // SecAgg, 4 clients with 3 neighbours each, 10 rounds: keys 0.24 ms per client and
        // neighbour; per parameter 9.2 ns per client and 1.5 ns per stream expanded — 4 self
        // masks twice, 6 pair masks; SecAgg+ with 2 neighbours: 4 pair masks; with
        // distributed DP each client's noise, 17.5 ns per parameter.
        let secagg = cost("defenses: [secagg]\n") - plain;
        let want = 10.0 * (2.4e-4 * 4.0 * 4.0 + 404.0 * (9.2e-9 * 4.0 + 1.5e-9 * (8.0 + 6.0)));
        assert!((secagg - want).abs() < 1e-12, "{secagg} vs {want}");
        let plus = cost("defenses: [{kind: secagg, neighbors: 2}]\n") - plain;
        let want = 10.0 * (2.4e-4 * 4.0 * 3.0 + 404.0 * (9.2e-9 * 4.0 + 1.5e-9 * (8.0 + 4.0)));
        assert!((plus - want).abs() < 1e-12, "{plus} vs {want}");
        let dp = cost("defenses: [{kind: secagg, dp: {clip: 1.0, min_clients: 4, epsilon: 4}}]\n") - plain;
        let want = secagg + 10.0 * 404.0 * 1.75e-8 * 4.0;
        assert!((dp - want).abs() < 1e-12, "{dp} vs {want}");
        // DP-FedAvg: 5.6 ns per client and parameter a round (updates, clipping, noise).
        let dp_fedavg = cost("defenses: [dp-fedavg]\n") - plain;
        assert!((dp_fedavg - 10.0 * 5.6e-9 * 4.0 * 404.0).abs() < 1e-12, "{dp_fedavg}");
        // Client sampling: a tenth of the clients per round train a tenth of the graph
        // (fixed round size or Poisson alike); the rest of the run is unchanged.
        // A defense's own work per epoch (Solitude's calibration) is over every client's
        // part of the graph: the sampled share of it too.
        for sampling in [crate::fed::Sampling::Fixed, crate::fed::Sampling::Poisson] {
            for (defense, all) in [("", plain), ("defenses: [solitude]\n", solitude)] {
                let mut s = scenario(defense);
                (s.federation.client_fraction, s.federation.sampling) = (0.25, sampling);
                let sampled = seconds(&s, &size());
                assert!((sampled - fixed - 0.25 * (all - fixed)).abs() < 1e-9, "{sampling:?} {defense}: {sampled} vs {all}");
            }
        }
        // A centralized run has no Louvain; a larger graph's Louvain grows faster than it.
        let mut centralized = scenario("");
        centralized.federation.centralized = true;
        assert!(seconds(&centralized, &size()) < plain);
        let big = DataSize { nodes: 1e6, edges: 5e6, feature_dim: 128.0, feature_values: 1.28e8, ..size() };
        let louvain_big = seconds(&scenario(""), &big) - seconds(&centralized, &big);
        // (and 3 more clients' cost per epoch: 20 epochs × 3 × (0.35 ms + 1.2 ns per parameter))
        let per_client = 3.5e-4 + 1.2e-9 * parameters(&centralized, &big);
        assert!((louvain_big - 0.85 * 10f64.powf(1.6) - 20.0 * 3.0 * per_client).abs() < 1e-9, "{louvain_big}");
        // What some scenarios turn on, over the 20 epochs: per node and hidden unit (1000 ×
        // 16) SELU and dropout (the default 0.5); Adam per parameter (404); validation
        // 30 % more of every epoch's work but the dense product (none here) and Louvain's.
        let no_dropout = cost("model: {dropout: 0}\n");
        assert!((plain - no_dropout - 20.0 * 16_000.0 * 6.5e-9).abs() < 1e-12);
        assert!((cost("model: {activation: selu}\n") - plain - 20.0 * 16_000.0 * 2.8e-9).abs() < 1e-12);
        let with = |change: &dyn Fn(&mut Scenario)| {
            let mut s = scenario("");
            change(&mut s);
            seconds(&s, &size())
        };
        let adam = with(&|s| s.train.optimizer = crate::train::OptimizerKind::Adam) - plain;
        assert!((adam - 20.0 * 4.0 * 404.0 * 0.8e-9).abs() < 1e-12, "{adam}");
        let validated = with(&|s| s.train.selection = crate::train::Selection::ValLoss);
        assert!((validated - fixed - 1.3 * (plain - fixed)).abs() < 1e-9, "{validated}");
        // LPGNN: kx + ky propagations per epoch over the 2 · 4000 arcs and 1000 nodes, at
        // the layers' mean width ((16 + 4) / 2 output units).
        let lpgnn = |kx: usize, ky: usize| cost(&format!("defenses: [{{kind: lpgnn, epsilon_x: 1, epsilon_y: 1, kx: {kx}, ky: {ky}}}]\n"));
        let step = 9000.0 * (3.5e-8 + 3.0 * 10.0 / 1.46e10);
        assert!((lpgnn(2, 8) - lpgnn(0, 0) - 20.0 * 10.0 * step).abs() < 1e-9);
    }

    /// The terms by hand for a 2-layer GCN (16 hidden, 4 classes) on 1000 nodes, 4000
    /// edges, 20 dense features, 4 clients, 2 at once.
    #[test]
    fn the_memory_estimate_adds_its_terms() {
        let m = memory(&scenario(""), &size(), 2);
        let part = |w: &str| m.parts.iter().find(|p| p.what == w).map_or(0.0, |p| p.bytes);
        assert_eq!(part("process"), 42.0 * MIB);
        assert_eq!(part("nodes"), 260.0 * 1000.0);
        assert_eq!(part("graph"), 90.0 * 8000.0);
        assert!((part("features") - 3.1 * 1000.0 * 20.0 * 4.0).abs() < 1e-6);
        let sparse = DataSize { dense: false, feature_values: 500.0, ..size() };
        assert!((memory(&scenario(""), &sparse, 2).parts[3].bytes - 80.0 * 500.0).abs() < 1e-6);
        assert!((part("training") - 2.0 * 250.0 * 20.0 * 31.5).abs() < 1e-6);
        assert_eq!(m.bytes(), m.parts.iter().map(|p| p.bytes).sum::<f64>());
        // One client at a time on one thread; edge RR adds its fake arcs to the graph.
        let one = memory(&scenario(""), &size(), 1);
        let training = one.parts.iter().find(|p| p.what == "training").unwrap().bytes;
        assert!((training - 250.0 * 20.0 * 31.5).abs() < 1e-6);
        // 20·16 + 16 + 16·4 + 4 parameters, 3.3 copies per client and 4 per trainer.
        let model = |m: &MemoryEstimate| m.parts.iter().find(|p| p.what == "model").unwrap().bytes;
        assert_eq!(parameters(&scenario(""), &size()), 404.0);
        let ec_lda = scenario("model: {hidden: [512, 64], head: true}\n");
        let cora = DataSize { nodes: 2485.0, edges: 5069.0, feature_dim: 1433.0, feature_values: 0.0, dense: false, classes: 7.0 };
        assert_eq!(parameters(&ec_lda, &cora), EC_LDA_CORA_PARAMETERS);
        assert!((model(&m) - 404.0 * 4.0 * (3.3 * 4.0 + 4.0 * 2.0)).abs() < 1e-6 && (model(&m) - model(&one) - 404.0 * 16.0).abs() < 1e-6);
        let rr = memory(&scenario("defenses: [{kind: edge-ldp, epsilon: 1}]\n"), &size(), 2);
        let fake = 4.0 * 250.0f64.powi(2) / (1.0 + 1f64.exp());
        let graph = rr.parts.iter().find(|p| p.what == "graph").unwrap();
        // Directed reports (the default `symmetrize: none`): one direction.
        assert!((graph.bytes - 90.0 * (8000.0 + fake)).abs() < 1e-6 && graph.driven_by.contains("edge RR"), "{graph:?}");
        // A size beyond any machine is named by its drivers.
        let huge = DataSize { nodes: 5e7, edges: 2e8, feature_dim: 32.0, feature_values: 1.6e9, ..size() };
        let big = memory(&scenario(""), &huge, 2);
        assert!(big.bytes() > 40.0 * MIB * 1024.0 && big.drivers().contains("dataset.synthetic"), "{}", big.drivers());
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("512"), Some(512.0));
        assert_eq!(parse_size("8G"), Some(8.0 * 1024.0 * MIB));
        assert_eq!(parse_size("1.5GiB"), Some(1.5 * 1024.0 * MIB));
        assert_eq!(parse_size(" 300 mb "), Some(300.0 * MIB));
        assert_eq!(parse_size("0"), None);
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("3X"), None);
        assert_eq!(human(1536.0 * MIB), "1.5 GiB");
    }
}

//! `dp-gnn`: node-level DP-SGD for GNNs (Daigavane et al., "Node-Level Differentially
//! Private Graph Neural Networks", 2021), as each client's local trainer. Steps, after
//! `../shared/REFERENCE.md` §6.1:
//!
//! 1. **Degree bounding** (DP-GNN's `sampler.py`, once per client before round 1): every
//!    node x looks at the nodes it sends messages to that matter in training — its
//!    training neighbours for one layer, all its neighbours for two (any node can sit one
//!    hop from a training root) — keeps each with probability D/(2d) (d: their number),
//!    and keeps none if more than D survive. Each node draws from its own stream, so
//!    one node's presence does not shift another's draws. A node then appears in at most
//!    K = D + 1 (one layer) or D² + D + 1 (two) training computation graphs.
//! 2. **Per-node computation graphs**: a training node's loss is the model applied to the
//!    nodes within L hops upstream of it over the kept edges, messages flowing towards it
//!    ([`ComputationGraph`]); GCN normalises by in-degrees within that graph, so the
//!    loss depends on those nodes alone. Evaluation runs on the client's whole graph.
//! 3. **Per-node gradients**, exact per node ([`per_node`]), each clipped per parameter
//!    tensor l to C_l (C_l: a percentile of the per-node gradient norms of all the
//!    client's training nodes under the first model it receives, not private, as in the
//!    DP-GNN code; or `clip` for every tensor), summed over a batch of B training nodes
//!    drawn without replacement (what the analysis assumes; the DP-GNN code draws with
//!    replacement).
//! 4. **Noise**: N(0, s²) on every coordinate of the sum, s = σ · 2K · sqrt(Σ_l C_l²);
//!    the step uses (sum + noise)/B with the scenario's optimizer.
//! 5. **Accounting**: the multi-term RDP accountant ([`accountant`]) over all the
//!    client's steps (`train.epochs` × ⌈N/B⌉ per round it trains in), δ = 1/(10·N) unless
//!    given. σ is given, or found for `target_epsilon` over the planned rounds;
//!    `max_epsilon` refuses a plan that would spend more.
//!
//! `calibration: ec-lda-code` trains as the EC-LDA code's `defense` task instead
//! (`FLcore/client/clientbase.py`, `clientfedavgblra.py`, `optimizer/dp_optimizer.py`,
//! `utils.py` `DP_clip_edges`), so that the paper's defense figure can be reproduced
//! beside the faithful DP-GNN. It is **not** (ε, δ)-DP at the ε it reports
//! (REFERENCE §1.4; every report flags it):
//! - degrees clipped node by node to D, the excess neighbours removed at random
//!   ([`clip_degrees_as_published`]), no DP-GNN sampling;
//! - a batch of N_train training nodes drawn *with* replacement (sample rate 1);
//! - σ from one unsampled Gaussian per step ([`ec_lda_code::sigma`]), the noise
//!   N(0, (C·σ·(D^L − 1)/(D − 1))²) — 6σC for D = 5, L = 2, where DP-GNN needs 62σC;
//! - one threshold C (`clip`, 0.1 as published) on each node's whole gradient, but the
//!   code never zeroes the gradient between per-node backward passes, so what it clips
//!   is the running sum g_1 + … + g_i ([`PerNode::running_sum_norms`]), and it adds the
//!   clipped terms to an accumulator it never zeroes either: every step (every round)
//!   descends along the sum of all clipped terms so far, plus fresh noise, over B.
//!
//! Left as ours: each node's gradient is computed on its L-hop computation graph (the
//! code differentiates the whole client graph's output, so the outermost nodes' GCN
//! degrees differ), and the attack round draws its batch like any other round (the code
//! takes every training node once in that round).

use std::sync::{Mutex, OnceLock};

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};
use rand::Rng as _;
use serde::{Deserialize, Serialize};

use crate::data::Role;
use crate::error::{Error, Result};
use crate::fed::{ClientContext, Defense};
use crate::model::{Arch, NodeClassifier};
use crate::privacy::accountant::{self, Conversion, Mechanism};
use crate::privacy::{PrivacyCost, ec_lda_code};
use crate::rng::{self, Rng};
use crate::train::per_node::{self, per_node, ComputationGraph, FeatureGrams, NodeBatch, PerNode};
use crate::train::{HeadSteps, LocalData, LocalStats, LocalTrainer, Loss, NextTrainer, Selection, TrainCall};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DpGnnConfig {
    /// D: the most nodes a node sends messages to in training.
    #[serde(default = "five")]
    pub max_degree: usize,
    /// Noise multiplier σ (give this or `target_epsilon`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sigma: Option<f64>,
    /// Find σ so that each client spends at most this ε over the planned rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_epsilon: Option<f64>,
    /// δ; default 1/(10·N_train) per client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delta: Option<f64>,
    /// B: training nodes per step, drawn without replacement.
    #[serde(default = "sixty_four")]
    pub batch_size: usize,
    /// A client with fewer training nodes than B: refuse the scenario, or train it on all
    /// its training nodes at every step (B = N_train, sampling rate 1, accounted so).
    #[serde(default)]
    pub small_clients: SmallClients,
    /// Clipping thresholds: this percentile of the initial per-node gradient norms, per
    /// parameter tensor.
    #[serde(default = "seventy_five")]
    pub clip_percentile: f64,
    /// One fixed threshold for every parameter tensor instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clip: Option<f64>,
    /// Refuse a scenario in which a client would spend more than this ε.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_epsilon: Option<f64>,
    /// RDP → (ε, δ): `improved` (dp_accounting's, the DP-GNN code's) or `classic`.
    #[serde(default)]
    pub conversion: Conversion,
    /// `dp-gnn` (node-level (ε, δ)-DP by DP-GNN's analysis) or `ec-lda-code` (the EC-LDA
    /// code's calibration and training, NOT (ε, δ)-DP at the ε it reports).
    #[serde(default)]
    pub calibration: Calibration,
}

/// How the noise is calibrated to ε and how the clipped gradients are summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Calibration {
    /// DP-GNN's analysis (the module docs, steps 1–5).
    #[default]
    DpGnn,
    /// The EC-LDA code's (the module docs' last part).
    EcLdaCode,
}

impl Calibration {
    pub fn name(self) -> &'static str {
        match self {
            Calibration::DpGnn => "dp-gnn",
            Calibration::EcLdaCode => "ec-lda-code",
        }
    }
}

/// The EC-LDA code's clipping threshold (`max_norm = 0.1`).
const EC_LDA_CODE_CLIP: f64 = 0.1;

/// What DP-GNN does with a client that has fewer training nodes than the batch size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SmallClients {
    /// Stop with an error naming the client.
    #[default]
    Error,
    /// Use all its training nodes as the batch of every step.
    FullBatch,
}

fn five() -> usize {
    5
}
fn sixty_four() -> usize {
    64
}
fn seventy_five() -> f64 {
    75.0
}

impl DpGnnConfig {
    fn validate(&self) -> Result<()> {
        let bad = |field: &str, msg: String| Err(Error::param(field, msg));
        match (self.sigma, self.target_epsilon) {
            (Some(_), Some(_)) => return bad("sigma", "give `sigma` or `target_epsilon`, not both".into()),
            (None, None) => return bad("sigma", "give the noise multiplier `sigma` or a `target_epsilon` to find it".into()),
            (Some(s), None) if !(s > 0.0 && s.is_finite()) => return bad("sigma", format!("σ = {s} is not allowed: σ must be a finite number > 0")),
            (None, Some(e)) if !(e > 0.0 && e.is_finite()) => return bad("target_epsilon", format!("ε = {e} is not allowed: it must be a finite number > 0")),
            _ => {}
        }
        if self.max_degree == 0 {
            return bad("max_degree", "the degree bound D must be ≥ 1".into());
        }
        if self.batch_size == 0 {
            return bad("batch_size", "the batch size B must be ≥ 1".into());
        }
        if let Some(d) = self.delta
            && !(d > 0.0 && d < 1.0)
        {
            return bad("delta", format!("δ = {d} is not allowed: δ must be in (0, 1)"));
        }
        if !(self.clip_percentile > 0.0 && self.clip_percentile <= 100.0) {
            return bad("clip_percentile", format!("{} is not allowed: a percentile in (0, 100]", self.clip_percentile));
        }
        if let Some(c) = self.clip
            && !(c > 0.0 && c.is_finite())
        {
            return bad("clip", format!("{c} is not allowed: the clipping threshold must be a finite number > 0"));
        }
        if let Some(e) = self.max_epsilon
            && (e.is_nan() || e <= 0.0)
        {
            return bad("max_epsilon", format!("{e} is not allowed: ε must be > 0"));
        }
        if self.calibration == Calibration::EcLdaCode && self.conversion != Conversion::Improved {
            return bad("conversion", "calibration: ec-lda-code uses the EC-LDA code's accountant (the improved conversion); leave `conversion` out".into());
        }
        Ok(())
    }
}

/// A DP-GNN run's training over a plain one's, in the time model (its per-node gradients
/// and the noise: one draw per parameter and step). 22 before the noise was drawn in
/// bulk; now, on the AVX-512 host, 14.4: what brings the defended speed probe back to
/// the factor it measured before for every defense's own work (0.41; the probe's DP-GNN
/// work went from 0.33 to 0.21 s). Where the draws take the AVX2 path (1.49× faster a
/// draw, not 2.47×) 17.8, from the same probe's share of noise — extrapolated, not
/// measured on an AVX2 host.
pub(crate) fn cost_factor() -> f64 {
    if crate::rng::wide_normals() { 14.4 } else { 17.8 }
}

impl super::DefenseConfig for DpGnnConfig {
    fn cost(&self, run: &super::RunSize) -> super::CostHint {
        // Per-node gradients of every batch and the noise: `cost_factor`. Memory,
        // per client training at once: the per-node machinery (≈ 15 MiB measured on the
        // quickstart and Cora at the preset, 12–24 MiB), and a batch's B block-diagonal
        // computation graphs of up to K nodes each (neither more than the client has),
        // with their features and every layer's output.
        let client = run.nodes / run.clients;
        let k = accountant::max_terms_per_node(self.max_degree, run.layers).map_or(f64::MAX, |k| k as f64);
        let rows = (self.batch_size as f64).min(client) * k.min(client);
        let extra_bytes = run.concurrent * (15.0 * 1024.0 * 1024.0 + rows * (run.row_bytes + run.widths * 4.0));
        super::CostHint { factor: cost_factor(), extra_bytes, ..Default::default() }
    }

    fn build(&self, name: &str, client: &ClientContext) -> Result<Defense> {
        self.validate()?;
        let (model, cfg) = (client.model, client.train);
        if model.arch == Arch::Gat {
            return Err(Error::param("model.arch", "dp-gnn supports gcn and sage (per-node gradients of GAT's attention are not implemented)"));
        }
        if let Some(c) = cfg.grad_clip_norm {
            return Err(Error::param(
                "train.grad_clip_norm",
                format!("{c}: dp-gnn clips each node's gradient (its `clip`) and noises the sum; global clipping would change the sensitivity. Remove train.grad_clip_norm"),
            ));
        }
        if !(1..=2).contains(&model.layers) {
            return Err(Error::param("model.layers", format!("dp-gnn supports 1 or 2 message-passing layers, got {}", model.layers)));
        }
        if model.kprop_steps > 0 {
            return Err(Error::param("model.kprop_steps", "dp-gnn needs no KProp (it would widen every computation graph)"));
        }
        if cfg.selection != Selection::Last {
            return Err(Error::param("train.selection", "dp-gnn trains with `selection: last` (choosing an epoch on validation data would spend privacy unaccounted)"));
        }
        // K = D + 1 or D² + D + 1 must not overflow (refused here, when the scenario loads).
        accountant::max_terms_per_node(self.max_degree, model.layers)?;
        let trainer = std::sync::Arc::new(DpGnn { config: self.clone(), client: client.client, layers: model.layers, epochs: cfg.epochs, rounds: client.rounds, plan: OnceLock::new() });
        Ok(Defense::new(name).with_trainer(trainer.clone()).with_state(trainer))
    }
}

/// One client's trainer, with the client's plan (made when it prepares).
pub struct DpGnn {
    config: DpGnnConfig,
    client: usize,
    /// Message-passing layers, local epochs and rounds the plan is for.
    layers: usize,
    epochs: usize,
    rounds: usize,
    plan: OnceLock<ClientPlan>,
}

/// One client's sampled graph, noise and budget.
struct ClientPlan {
    /// Nodes whose kept set exceeded D and were dropped from every computation graph.
    dropped: usize,
    train_nodes: Vec<usize>,
    /// Per node: its computation graph where it is a training node, over the nodes whose
    /// messages each node receives in training (after bounding); built once, every batch
    /// reuses them.
    graphs: Vec<Option<ComputationGraph>>,
    layers: usize,
    /// B, or N_train for a small client under `small_clients: full-batch`.
    batch: usize,
    mechanism: Mechanism,
    sigma: f64,
    delta: f64,
    steps_per_round: u64,
    /// C_l per parameter tensor, estimated when the client first trains (`None` with a
    /// fixed `clip`).
    thresholds: Mutex<Option<Vec<f64>>>,
    /// `ec-lda-code`: the clipped terms summed over every step so far (never zeroed, as in
    /// the code), per tensor; and the edges its degree clipping removed.
    accumulated: Mutex<Option<Accumulated>>,
    removed_edges: usize,
    /// The feature Gram matrices of the training nodes' graphs, by root, computed the
    /// first time a batch draws them.
    feature_grams: Mutex<FeatureGrams>,
}

/// The EC-LDA code's running sums: on the device, or on the host as a checkpoint
/// restored them (moved to the device at the next step).
enum Accumulated {
    Device(Vec<Tensor<2>>),
    Host(Vec<HostTensor>),
}

/// A tensor's shape and values, for a checkpoint.
#[derive(serde::Serialize, serde::Deserialize)]
struct HostTensor {
    shape: [usize; 2],
    values: Vec<f32>,
}

/// What a client's trainer keeps between rounds.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedPlan {
    thresholds: Option<Vec<f64>>,
    accumulated: Option<Vec<HostTensor>>,
}

/// The thresholds estimated when the client first trained, and the EC-LDA code's running
/// sums, last between rounds; the rest of the plan is made again before round 1.
impl crate::fed::Persistent for DpGnn {
    fn save(&self) -> Result<Vec<u8>> {
        let plan = self.plan()?;
        let accumulated = match &*plan.accumulated.lock().expect("dp-gnn state") {
            None => None,
            Some(Accumulated::Host(h)) => Some(h.iter().map(|t| HostTensor { shape: t.shape, values: t.values.clone() }).collect()),
            Some(Accumulated::Device(d)) => Some(
                d.iter()
                    .map(|t| HostTensor { shape: t.dims(), values: t.clone().into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 after convert") })
                    .collect(),
            ),
        };
        let thresholds = plan.thresholds.lock().expect("dp-gnn state").clone();
        crate::fed::checkpoint::encode(&SavedPlan { thresholds, accumulated })
    }

    fn restore(&self, state: &[u8]) -> Result<()> {
        let saved: SavedPlan = crate::fed::checkpoint::decode(state, "dp-gnn's plan")?;
        let plan = self.plan()?;
        if saved.accumulated.iter().flatten().any(|t| t.values.len() != t.shape[0] * t.shape[1]) {
            return Err(Error::Other(format!("checkpoint: dp-gnn's running sums of client {} are damaged", self.client)));
        }
        *plan.thresholds.lock().expect("dp-gnn state") = saved.thresholds;
        *plan.accumulated.lock().expect("dp-gnn state") = saved.accumulated.map(Accumulated::Host);
        Ok(())
    }
}

impl DpGnn {
    fn plan(&self) -> Result<&ClientPlan> {
        self.plan.get().ok_or_else(|| Error::Other(format!("dp-gnn: client {} was not prepared", self.client)))
    }

    /// What the client spent (`ec-lda-code`: what the EC-LDA code's accountant reports).
    fn spent(&self, plan: &ClientPlan, rounds: usize) -> Result<accountant::Spent> {
        let steps = plan.steps_per_round.saturating_mul(rounds as u64).max(1);
        match self.config.calibration {
            Calibration::DpGnn => accountant::epsilon(&plan.mechanism, plan.sigma, steps, plan.delta, self.config.conversion, &accountant::default_orders()),
            Calibration::EcLdaCode => {
                let (epsilon, order) = ec_lda_code::epsilon(plan.sigma, steps, plan.delta)?;
                Ok(accountant::Spent { epsilon, delta: plan.delta, order, conversion: Conversion::Improved })
            }
        }
    }

    /// C_l from `clip_percentile`: the percentile of every training node's gradient norms
    /// under `model` (no dropout), in batches of B.
    fn estimate_thresholds(&self, plan: &ClientPlan, model: &NodeClassifier, local: &LocalData, loss: &dyn Loss, label_keep: f64, device: &burn::tensor::Device) -> Result<Vec<f64>> {
        let mut norms: Vec<Vec<f64>> = Vec::new();
        for chunk in plan.train_nodes.chunks(plan.batch) {
            let batch = batch_of(plan, chunk, local, device)?;
            let n = per_node(model, &batch, loss, label_keep, None)?.norms(&batch);
            norms.resize(n.len(), Vec::new());
            for (all, t) in norms.iter_mut().zip(n) {
                all.extend(t);
            }
        }
        Ok(norms.into_iter().map(|t| percentile(t, self.config.clip_percentile).max(1e-12)).collect())
    }
}

/// The computation graphs of `roots` with their held labels, batched.
fn batch_of(plan: &ClientPlan, roots: &[usize], local: &LocalData, device: &burn::tensor::Device) -> Result<NodeBatch> {
    let graphs: Vec<&ComputationGraph> = roots.iter().map(|&v| plan.graphs[v].as_ref().expect("roots are training nodes")).collect();
    let labels: Vec<u32> = roots.iter().map(|&v| local.labels[v].expect("training nodes are labelled")).collect();
    let mut grams = plan.feature_grams.lock().expect("one trainer per client");
    NodeBatch::with_grams(&graphs, &local.features, &labels, Some((&mut grams, roots)), device)
}

/// numpy's default percentile (linear interpolation between order statistics).
fn percentile(mut x: Vec<f64>, p: f64) -> f64 {
    if x.is_empty() {
        return 0.0;
    }
    x.sort_by(f64::total_cmp);
    let pos = p / 100.0 * (x.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    x[lo] + (x[hi] - x[lo]) * (pos - lo as f64)
}

/// The EC-LDA code's `DP_clip_edges`: node by node in index order, a node with more than
/// `max_degree` neighbours loses a random sample of the excess, both directions of each
/// edge. `senders[v]`: v's neighbours left, ascending; also the number of edges removed.
pub fn clip_degrees_as_published(graph: &crate::data::Graph, max_degree: usize, seed: u64) -> (Vec<Vec<u32>>, usize) {
    let n = graph.num_nodes();
    let mut adj: Vec<std::collections::BTreeSet<u32>> = (0..n).map(|v| graph.neighbors(v).iter().copied().filter(|&w| w as usize != v).collect()).collect();
    let mut r = rng::derive(seed, "ec-lda-code-degree-clip", &[]);
    let mut removed = 0;
    for i in 0..n {
        let links: Vec<u32> = adj[i].iter().copied().collect();
        if links.len() > max_degree {
            for k in rand::seq::index::sample(&mut r, links.len(), links.len() - max_degree) {
                let j = links[k];
                adj[i].remove(&j);
                adj[j as usize].remove(&(i as u32));
                removed += 1;
            }
        }
    }
    (adj.into_iter().map(|s| s.into_iter().collect()).collect(), removed)
}

/// DP-GNN's degree-bounded sampling (see the module docs): `senders[v]` lists the nodes
/// whose messages v receives, ascending; also the number of nodes dropped.
pub fn bound_degrees(graph: &crate::data::Graph, is_train: &[bool], max_degree: usize, layers: usize, seed: u64) -> (Vec<Vec<u32>>, usize) {
    let n = graph.num_nodes();
    let mut senders = vec![Vec::new(); n];
    let mut dropped = 0;
    for x in 0..n {
        let receivers: Vec<u32> = graph.neighbors(x).iter().copied().filter(|&w| layers > 1 || is_train[w as usize]).collect();
        if receivers.is_empty() {
            continue;
        }
        let p = max_degree as f64 / (2.0 * receivers.len() as f64);
        let mut r = rng::derive(seed, "dp-gnn-degree-bound", &[x as u64]);
        let kept: Vec<u32> = receivers.into_iter().filter(|_| r.random::<f64>() <= p).collect();
        if kept.len() > max_degree {
            dropped += 1;
            continue;
        }
        for w in kept {
            senders[w as usize].push(x as u32);
        }
    }
    (senders, dropped)
}

impl LocalTrainer for DpGnn {
    fn name(&self) -> &str {
        "dp-gnn"
    }

    fn prepare(&self, data: &LocalData, rng: &mut Rng) -> Result<()> {
        let (c, client, rounds, layers) = (&self.config, self.client, self.rounds, self.layers);
        if data.graph.is_directed() {
            // Degree bounding and the sensitivity 2K assume every edge counts at both ends.
            return Err(Error::param("defenses", "dp-gnn needs the client's undirected graph; an earlier defense (edge-ldp or solitude with symmetrize: none) made it directed"));
        }
        if data.feature_kprop > 0 {
            return Err(Error::param("model.kprop_steps", "dp-gnn needs no KProp (it would widen every computation graph)"));
        }
        let train_nodes = data.labelled_train_nodes();
        let n = train_nodes.len();
        let batch = match c.small_clients {
            _ if n >= c.batch_size => c.batch_size,
            SmallClients::FullBatch if n > 0 => n,
            SmallClients::FullBatch => return Err(Error::param("batch_size", format!("client {client} has no labelled training node to train on"))),
            SmallClients::Error => {
                return Err(Error::param(
                    "batch_size",
                    format!("client {client} has {n} training nodes, fewer than the batch size B = {}; lower batch_size, or set small_clients: full-batch", c.batch_size),
                ));
            }
        };
        let mechanism = Mechanism::DpGnn { nodes: n, max_degree: c.max_degree, layers, batch };
        mechanism.validate()?;
        // Saturating: a step count can only be over-counted, so ε only over-reported.
        let steps_per_round = (self.epochs as u64).saturating_mul(n.div_ceil(batch) as u64);
        let planned = steps_per_round.saturating_mul(rounds as u64).max(1);
        let (sigma, spent, delta) = match c.calibration {
            Calibration::DpGnn => {
                let delta = c.delta.unwrap_or_else(|| accountant::default_delta(n));
                let orders = accountant::default_orders();
                let (sigma, spent) = match (c.sigma, c.target_epsilon) {
                    (Some(s), _) => (s, accountant::epsilon(&mechanism, s, planned, delta, c.conversion, &orders)?),
                    (None, Some(e)) => accountant::sigma_for_epsilon(&mechanism, e, planned, delta, c.conversion, &orders)?,
                    (None, None) => unreachable!("validated"),
                };
                (sigma, spent.epsilon, delta)
            }
            Calibration::EcLdaCode => {
                if batch != n {
                    return Err(Error::param(
                        "batch_size",
                        format!("calibration: ec-lda-code trains on batches of all N_train training nodes (the code's sample rate 1), but client {client} has {n} and batch_size is {}: set batch_size ≥ every client's training nodes, or small_clients: full-batch", c.batch_size),
                    ));
                }
                let delta = c.delta.unwrap_or(ec_lda_code::DELTA);
                let sigma = match (c.sigma, c.target_epsilon) {
                    (Some(s), _) => s,
                    (None, Some(e)) => ec_lda_code::sigma(e, planned, delta)?,
                    (None, None) => unreachable!("validated"),
                };
                (sigma, ec_lda_code::epsilon(sigma, planned, delta)?.0, delta)
            }
        };
        if let Some(max) = c.max_epsilon
            && spent > max
        {
            return Err(Error::param(
                "max_epsilon",
                format!(
                    "client {client} would spend ε = {:.3} (δ = {delta:.2e}) over {rounds} rounds × {steps_per_round} steps with σ = {sigma}, more than max_epsilon = {max}; raise sigma, or lower rounds or epochs",
                    spent
                ),
            ));
        }
        let is_train: Vec<bool> = data.roles.iter().map(|r| *r == Role::Train).collect();
        let ((senders, dropped), removed_edges) = match c.calibration {
            Calibration::DpGnn => (bound_degrees(&data.graph, &is_train, c.max_degree, layers, rng.random()), 0),
            Calibration::EcLdaCode => {
                let (senders, removed) = clip_degrees_as_published(&data.graph, c.max_degree, rng.random());
                ((senders, 0), removed)
            }
        };
        let mut graphs = vec![None; senders.len()];
        for &v in &train_nodes {
            graphs[v] = Some(ComputationGraph::of(v, layers, &senders));
        }
        let plan = ClientPlan {
            dropped,
            train_nodes,
            graphs,
            layers,
            batch,
            mechanism,
            sigma,
            delta,
            steps_per_round,
            thresholds: Mutex::new(None),
            accumulated: Mutex::new(None),
            removed_edges,
            feature_grams: Mutex::default(),
        };
        self.plan.set(plan).map_err(|_| Error::Other(format!("dp-gnn: client {client} prepared twice")))
    }

    fn train(&self, mut model: NodeClassifier, call: &mut TrainCall<'_>, _next: &dyn NextTrainer) -> Result<(NodeClassifier, LocalStats)> {
        let (local, data, cfg, loss) = (call.local, call.data, call.cfg, call.loss);
        let (optim, rng) = (&mut *call.optim, &mut *call.rng);
        let plan = self.plan()?;
        if local.labelled_train_nodes() != plan.train_nodes {
            return Err(Error::param("defenses", "dp-gnn accounts for a fixed set of training nodes, but another defense changed it between rounds (label-dp stages): use one stage with dp-gnn"));
        }
        per_node::check_model(&model)?;
        // The features are those of the last round unless a defense changed them.
        plan.feature_grams.lock().expect("one trainer per client").of(&local.features);
        let device = model.devices().into_iter().next().ok_or_else(|| Error::Other("a model without parameters".into()))?.without_autodiff();
        let calibration = self.config.calibration;
        // Estimated once per client, unless `clip` fixes every threshold (the EC-LDA
        // code's calibration has one threshold, `clip` or 0.1).
        let estimated = match (calibration, self.config.clip) {
            (Calibration::DpGnn, None) => {
                let mut slot = plan.thresholds.lock().expect("one trainer per client");
                if slot.is_none() {
                    *slot = Some(self.estimate_thresholds(plan, &model, local, loss, data.label_keep, &device)?);
                }
                slot.clone()
            }
            _ => None,
        };
        let (b, n) = (plan.batch, plan.train_nodes.len());
        let mut stats = LocalStats::default();
        for _ in 0..cfg.epochs {
            let mut losses = Vec::new();
            for _ in 0..n.div_ceil(b) {
                let pick: Vec<usize> = match calibration {
                    Calibration::DpGnn => {
                        let mut pick: Vec<usize> = rand::seq::index::sample(rng, n, b).into_iter().map(|i| plan.train_nodes[i]).collect();
                        pick.sort_unstable();
                        pick
                    }
                    // `random.choices(train_index, k=batch_size)`: with replacement, in draw order.
                    Calibration::EcLdaCode => (0..b).map(|_| plan.train_nodes[rng.random_range(0..n)]).collect(),
                };
                let batch = batch_of(plan, &pick, local, &device)?;
                let pn = per_node(&model, &batch, loss, data.label_keep, Some(&mut *rng))?;
                losses.push(pn.loss);
                let grads = match calibration {
                    Calibration::DpGnn => self.dp_gnn_step(plan, &pn, &batch, estimated.as_deref(), rng, &device)?,
                    Calibration::EcLdaCode => self.ec_lda_code_step(plan, &pn, &batch, rng, &device)?,
                };
                if let Some(head) = &model.head {
                    let g = stats.head_gradient.get_or_insert_with(HeadSteps::default);
                    g.add(grads.get::<2>(head.weight.id), head.bias.as_ref().and_then(|bias| grads.get::<1>(bias.id)));
                }
                model = optim.step(cfg.lr, model, grads);
            }
            stats.epoch_losses.push(losses.iter().sum::<f64>() / losses.len().max(1) as f64);
        }
        Ok((model, stats))
    }

    fn privacy_spent(&self, rounds: usize) -> Option<PrivacyCost> {
        let plan = self.plan().ok()?;
        let spent = self.spent(plan, rounds).ok()?;
        let Mechanism::DpGnn { nodes, max_degree, layers, batch } = plan.mechanism else { return None };
        if self.config.calibration == Calibration::EcLdaCode {
            let multiplier = ec_lda_code::sigma_multiplier(max_degree, layers).ok()?;
            let clip = self.ec_lda_code_clip();
            return Some(PrivacyCost {
                protects: format!(
                    "no guarantee at this ε: the EC-LDA code's DP calibration, not (ε, δ)-DP (REFERENCE §1.4). ε is what its accountant reports for {} unsampled Gaussian steps with σ = {} (orders 2–63, 128, 256, 512; {} training nodes a step, drawn with replacement); the noise is C·σ·(D^L − 1)/(D − 1) = {clip}·{}·{multiplier} on the sum of running-sum-clipped gradients accumulated without zeroing (D = {max_degree}, {layers} layer(s), {} edges removed by degree clipping); DP-GNN's analysis needs σ·2·{} of noise",
                    plan.steps_per_round.saturating_mul(rounds as u64),
                    plan.sigma,
                    batch,
                    plan.sigma,
                    plan.removed_edges,
                    accountant::max_terms_per_node(max_degree, layers).ok()?,
                ),
                epsilon: if rounds == 0 { 0.0 } else { spent.epsilon },
                delta: plan.delta,
                noise_multiplier: Some(plan.sigma),
                calibration: Some(Calibration::EcLdaCode.name().into()),
                ..Default::default()
            });
        }
        Some(PrivacyCost {
            protects: format!(
                "every node of the client's graph (features, label, edges): node-level (ε, δ)-DP (DP-GNN: N = {nodes} training nodes, D = {max_degree}, {layers} layer(s), B = {batch}, σ = {:.4}, {} steps, {} dropped by degree bounding; RDP order {}, {} conversion)",
                plan.sigma,
                plan.steps_per_round.saturating_mul(rounds as u64),
                plan.dropped,
                spent.order,
                spent.conversion.name()
            ),
            epsilon: if rounds == 0 { 0.0 } else { spent.epsilon },
            delta: plan.delta,
            noise_multiplier: Some(plan.sigma),
            ..Default::default()
        })
    }
}

impl DpGnn {
    /// The EC-LDA code's one threshold C: `clip`, or the code's 0.1.
    fn ec_lda_code_clip(&self) -> f64 {
        self.config.clip.unwrap_or(EC_LDA_CODE_CLIP)
    }

    /// DP-GNN's step: each node's gradient clipped per tensor to C_l (`estimated`, or
    /// `clip` for every tensor), summed, N(0, (σ·2K·sqrt(Σ C_l²))²) added, over B.
    fn dp_gnn_step(&self, plan: &ClientPlan, pn: &PerNode, batch: &NodeBatch, estimated: Option<&[f64]>, rng: &mut Rng, device: &burn::tensor::Device) -> Result<GradientsParams> {
        let thresholds = match estimated {
            Some(t) => t.to_vec(),
            None => vec![self.config.clip.expect("fixed when not estimated"); pn.tensors()],
        };
        let k = accountant::base_sensitivity(self.config.max_degree, plan.layers)?;
        let noise_std = plan.sigma * k * thresholds.iter().map(|c| c * c).sum::<f64>().sqrt();
        let norms = pn.norms(batch);
        let scale: Vec<Vec<f64>> = norms.iter().zip(&thresholds).map(|(nt, c)| nt.iter().map(|&x| if x > *c { c / x } else { 1.0 }).collect()).collect();
        let noise = pn.noise_dims().into_iter().map(|dims| Some(gaussian(dims, noise_std, rng, device))).collect();
        Ok(pn.weighted_sum(batch, &scale, noise, 1.0 / plan.batch as f64))
    }

    /// The EC-LDA code's step (`calibration: ec-lda-code`; the module docs): the running
    /// sums of the batch's gradients clipped to C and added to the never-zeroed
    /// accumulator, the step taken along (accumulator + N(0, (C·σ·(D^L − 1)/(D − 1))²))/B.
    fn ec_lda_code_step(&self, plan: &ClientPlan, pn: &PerNode, batch: &NodeBatch, rng: &mut Rng, device: &burn::tensor::Device) -> Result<GradientsParams> {
        let clip = self.ec_lda_code_clip();
        let noise_std = clip * plan.sigma * ec_lda_code::sigma_multiplier(self.config.max_degree, plan.layers)?;
        let terms = running_sum_clip_weights(pn, batch, clip);
        let sums = pn.weighted_sums(batch, &vec![terms; pn.tensors()]);
        let mut slot = plan.accumulated.lock().expect("one trainer per client");
        let accumulated: Vec<Tensor<2>> = match slot.take() {
            None => sums,
            Some(Accumulated::Device(acc)) => acc.into_iter().zip(sums).map(|(a, s)| a + s).collect(),
            Some(Accumulated::Host(acc)) => {
                let acc = acc.into_iter().map(|t| Tensor::<2>::from_data(TensorData::new(t.values, t.shape), device));
                acc.zip(sums).map(|(a, s)| a + s).collect()
            }
        };
        let step: Vec<Tensor<2>> = accumulated.iter().zip(pn.noise_dims()).map(|(a, dims)| (a.clone() + gaussian(dims, noise_std, rng, device)) * (1.0 / plan.batch as f32)).collect();
        *slot = Some(Accumulated::Device(accumulated));
        Ok(pn.gradients(step))
    }
}

/// The weight of each node's gradient in Σ_i clip(g_1 + … + g_i): with
/// c_i = min(C/(‖g_1 + … + g_i‖ + 10⁻⁶), 1) (the code's `microbatch_step`), node j's
/// gradient enters every running sum from the j-th on, so its weight is Σ_{i ≥ j} c_i.
fn running_sum_clip_weights(pn: &PerNode, batch: &NodeBatch, clip: f64) -> Vec<f64> {
    let c: Vec<f64> = pn.running_sum_norms(batch).into_iter().map(|norm| (clip / (norm + 1e-6)).min(1.0)).collect();
    let mut w = vec![0.0; c.len()];
    let mut suffix = 0.0;
    for (wj, cj) in w.iter_mut().zip(&c).rev() {
        suffix += cj;
        *wj = suffix;
    }
    w
}

/// `dims` i.i.d. N(0, std²) values from `rng`, on `device`.
fn gaussian(dims: [usize; 2], std: f64, rng: &mut Rng, device: &burn::tensor::Device) -> Tensor<2> {
    let mut values: Vec<f32> = Vec::with_capacity(dims[0] * dims[1]);
    crate::rng::standard_normals(rng, dims[0] * dims[1]).for_each_slice(|z| values.extend(z.iter().map(|z| (std * z) as f32)));
    Tensor::from_data(TensorData::new(values, dims), device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Graph;

    #[test]
    fn bad_configurations_name_their_field() {
        let err = |y: &str| serde_norway::from_str::<DpGnnConfig>(y).unwrap().validate().unwrap_err().to_string();
        assert!(err("max_degree: 5").contains("sigma"));
        assert!(err("sigma: 1\ntarget_epsilon: 2").contains("not both"));
        assert!(err("sigma: 0").contains("σ must be"));
        assert!(err("target_epsilon: -1").contains("target_epsilon"));
        assert!(err("sigma: 1\nmax_degree: 0").contains("max_degree"));
        assert!(err("sigma: 1\nbatch_size: 0").contains("batch_size"));
        assert!(err("sigma: 1\ndelta: 1").contains("delta"));
        assert!(err("sigma: 1\nclip_percentile: 0").contains("clip_percentile"));
        assert!(err("sigma: 1\nclip: -1").contains("clip"));
        assert!(serde_norway::from_str::<DpGnnConfig>("sigma: 1\nsigmaa: 2").is_err());
    }

    /// After bounding, every node sends to at most D nodes (so it sits in at most K
    /// computation graphs), and with one layer only to training nodes. A hub of degree
    /// 40 at D = 4 keeps each edge with probability 1/20, more than 4 only rarely.
    #[test]
    fn degree_bounding_caps_what_a_node_sends() {
        let n = 60;
        let mut edges: Vec<(usize, usize)> = (1..41).map(|v| (0, v)).collect();
        edges.extend((1..n).map(|v| (v, (v * 7) % n)).filter(|(a, b)| a != b));
        let (g, _) = Graph::from_edges(n, edges, "t").unwrap();
        let is_train: Vec<bool> = (0..n).map(|v| v % 3 != 0).collect();
        for layers in [1, 2] {
            for seed in 0..20 {
                let (senders, _) = bound_degrees(&g, &is_train, 4, layers, seed);
                let mut sends = vec![0usize; n];
                for (w, list) in senders.iter().enumerate() {
                    for &x in list {
                        sends[x as usize] += 1;
                        assert!(g.neighbors(w).contains(&x), "{x} → {w} is an edge of the graph");
                        assert!(layers == 2 || is_train[w], "one layer: messages go to training nodes only");
                    }
                }
                assert!(sends.iter().all(|&s| s <= 4), "{sends:?}");
                // Each training root's computation graphs hold at most K of any node.
                let mut appears = vec![0usize; n];
                for v in (0..n).filter(|&v| is_train[v]) {
                    for x in ComputationGraph::of(v, layers, &senders).nodes {
                        appears[x] += 1;
                    }
                }
                let k = accountant::max_terms_per_node(4, layers).unwrap();
                assert!(appears.iter().all(|&a| a <= k), "layers {layers}: {appears:?} > {k}");
            }
        }
        // The same seed gives the same sample.
        assert_eq!(bound_degrees(&g, &is_train, 4, 2, 3), bound_degrees(&g, &is_train, 4, 2, 3));
    }

    /// The noise added to the summed gradient has standard deviation s: 200 000 draws at
    /// s = 0.37 give a sample standard deviation within 1 % (its own standard error is
    /// s/sqrt(2n) = 0.16 %) and a mean within 4 standard errors of 0.
    #[test]
    fn noise_has_the_standard_deviation_of_the_formula() {
        let device = burn::tensor::Device::flex();
        let mut r = rng::derive(9, "noise", &[]);
        let s = 0.37;
        let z = gaussian([400, 500], s, &mut r, &device).into_data().convert::<f64>().try_into_vec::<f64>().unwrap();
        let n = z.len() as f64;
        let mean = z.iter().sum::<f64>() / n;
        let sd = (z.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        assert!((sd / s - 1.0).abs() < 0.01, "{sd}");
        assert!(mean.abs() < 4.0 * s / n.sqrt(), "{mean}");
        // s = σ · 2K · sqrt(Σ C_l²): D = 5, two layers → K = 31.
        assert_eq!(accountant::base_sensitivity(5, 2).unwrap(), 62.0);
        assert_eq!(accountant::base_sensitivity(5, 1).unwrap(), 12.0);
    }

    #[test]
    fn the_ec_lda_code_calibration_is_named_and_checked() {
        let cfg: DpGnnConfig = serde_norway::from_str("target_epsilon: 8\ncalibration: ec-lda-code").unwrap();
        assert_eq!(cfg.calibration, Calibration::EcLdaCode);
        assert_eq!(serde_norway::from_str::<DpGnnConfig>("sigma: 1").unwrap().calibration, Calibration::DpGnn);
        let e = serde_norway::from_str::<DpGnnConfig>("sigma: 1\ncalibration: ec-lda").unwrap_err().to_string();
        assert!(e.contains("dp-gnn") && e.contains("ec-lda-code"), "{e}");
        let e = serde_norway::from_str::<DpGnnConfig>("sigma: 1\ncalibration: ec-lda-code\nconversion: classic").unwrap().validate().unwrap_err().to_string();
        assert!(e.contains("conversion"), "{e}");
    }

    /// The EC-LDA code's `DP_clip_edges`: every degree ends ≤ D, only edges of the graph
    /// remain, both directions together, nodes of degree ≤ D untouched by their own pass,
    /// and the same seed removes the same edges.
    #[test]
    fn published_degree_clipping_caps_every_degree() {
        let n = 50;
        let mut edges: Vec<(usize, usize)> = (1..30).map(|v| (0, v)).collect();
        edges.extend((1..n).map(|v| (v, (v * 7 + 3) % n)).filter(|(a, b)| a != b));
        edges.extend((1..n).map(|v| (v, (v * 11 + 1) % n)).filter(|(a, b)| a != b));
        let (g, _) = Graph::from_edges(n, edges, "t").unwrap();
        for seed in 0..10 {
            let (senders, removed) = clip_degrees_as_published(&g, 5, seed);
            let kept: usize = senders.iter().map(Vec::len).sum();
            let before: usize = (0..n).map(|v| g.neighbors(v).iter().filter(|&&w| w as usize != v).count()).sum();
            assert_eq!(kept + 2 * removed, before, "each removal takes both directions");
            for (v, s) in senders.iter().enumerate() {
                assert!(s.len() <= 5, "node {v} keeps {}", s.len());
                for &w in s {
                    assert!(g.neighbors(v).contains(&w) && senders[w as usize].contains(&(v as u32)));
                }
            }
            assert!(removed >= 24, "the hub alone loses 24 of its 29 edges");
            assert_eq!(clip_degrees_as_published(&g, 5, seed), (senders, removed));
        }
        assert_ne!(clip_degrees_as_published(&g, 5, 0).0, clip_degrees_as_published(&g, 5, 1).0);
    }

    #[test]
    fn percentile_interpolates_like_numpy() {
        assert_eq!(percentile(vec![4.0, 1.0, 3.0, 2.0], 75.0), 3.25);
        assert_eq!(percentile(vec![5.0], 75.0), 5.0);
        assert_eq!(percentile(vec![1.0, 2.0], 100.0), 2.0);
    }
}

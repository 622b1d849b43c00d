//! `solitude`: the Solitude pipeline of Lin, Li & Wang (IEEE TIFS 2022) on each client's
//! own data:
//!
//! 1. once, before round 1: features through the multi-bit mechanism (ε_x, per node) and
//!    every node's adjacency row through Warner RR (ε_a, edge LDP; [`super::edge_ldp`]);
//! 2. feature smoothing, before training: l_x = `kx` rounds of LPGNN's KProp (symmetric
//!    normalisation, as the released code's cached `x_prop`) over the *reported* graph A';
//!    the smoothed features are the client's features from then on (`smoothing: host`,
//!    the default); `smoothing: first-layer` computes the same function as KProp(X·W) in
//!    the first layer over the same graph (KProp is linear), so the perturbed features
//!    stay sparse and no dense product is left — faster, not bit for bit the same
//!    numbers (floats summed in another order);
//! 3. label smoothing l_y: LPGNN's Drop loss with Ky = l_y (labels are not private here,
//!    so its transition matrix is the identity); its smoothed targets are fixed on A', its
//!    smoothed predictions follow the graph the model is trained on;
//! 4. graph calibration (`calibrate: true`), the paper's Eq. 14,
//!    min over θ and A^c of γ·L_GNN(A^c, X^c; θ) + λ₁‖A^c − A'‖_F + λ₂‖A^c‖₁,
//!    by alternating updates: every epoch one Adam step on θ (on A^c), then
//!    `adjacency_steps` projected Adam steps on A^c (clamped to [0, 1]). A^c has one weight
//!    per reported arc (sparse: at the published budgets RR drops under 0.1 % of the true
//!    edges, so the support of A' holds nearly all of them), starts at A' = 1 and is what
//!    the model aggregates over ([`crate::model::GraphTensors::with_edge_weights`]). On
//!    A^c ∈ [0, 1] the L1 norm is the plain sum, so its gradient is λ₂ on every entry;
//!    the Frobenius norm is unsquared, as in the paper and the released code.
//!
//! The released code's calibration is a no-op on the edge set (REFERENCE §1.3: its
//! adjacency gets no task gradient and is re-initialised every epoch); this one learns
//! from the GNN loss and reports how many reported arcs it removed (weight 0) and how many
//! of those were fake (the client knows its own graph; nothing else reads that). With
//! ε_a = ∞ the true graph is calibrated the same way (the like-for-like no-noise row).
//!
//! Privacy: (ε_x + ε_a) per node; smoothing and calibration are post-processing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use burn::module::Module;
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::edge_ldp::{EdgeLdpConfig, PerturbEdges, Symmetrize};
use super::ldp_features::{FeatureSource, LdpFeaturesConfig, Mechanism, PerturbFeatures, default_range};
use super::lpgnn::DropTransform;
use crate::data::features::{DenseMatrix, Features};
use crate::data::graph::Graph;
use crate::error::{Error, Result};
use crate::fed::{ClientContext, DataTransform, Defense};
use crate::model::{GraphTensors, NodeClassifier};
use crate::privacy::{Epsilon, PrivacyCost};
use crate::rng::Rng;
use crate::train::{ClientTensors, LocalData, LocalStats, LocalTrainer, NextTrainer, TrainCall, train_local_with};

fn yes() -> bool {
    true
}
fn kx() -> usize {
    4
}
fn ky() -> usize {
    2
}
fn gamma() -> f64 {
    GAMMA
}
fn lambda1() -> f64 {
    LAMBDA1
}
fn lambda2() -> f64 {
    LAMBDA2
}
fn adjacency_lr() -> f64 {
    ADJACENCY_LR
}
fn adjacency_steps() -> usize {
    ADJACENCY_STEPS
}
fn max_edges() -> usize {
    20_000_000
}

/// Defaults of the calibration objective: the released code's (γ = 1 on the mean training
/// loss, λ₁ = 1, L1 weight 5e-4, lr 0.01, 2 inner epochs); the paper gives none. With them
/// calibration removes no arc on Cora; docs/ldp-graphs.md has the sweep over γ.
pub const GAMMA: f64 = 1.0;
pub const LAMBDA1: f64 = 1.0;
pub const LAMBDA2: f64 = 5e-4;
pub const ADJACENCY_LR: f64 = 0.01;
pub const ADJACENCY_STEPS: usize = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolitudeConfig {
    /// ε of the multi-bit mechanism per node; `.inf`: features as they are.
    pub epsilon_x: Epsilon,
    /// ε per adjacency bit (edge LDP); `.inf`: the graph as it is.
    pub epsilon_a: Epsilon,
    /// How reported rows become a graph (see `edge-ldp`).
    #[serde(default)]
    pub symmetrize: Symmetrize,
    /// Feature smoothing l_x: KProp rounds over the reported graph, before training.
    #[serde(default = "kx")]
    pub kx: usize,
    /// Where l_x runs (see the module docs).
    #[serde(default)]
    pub smoothing: Smoothing,
    /// Label smoothing l_y: KProp rounds of the Drop loss.
    #[serde(default = "ky")]
    pub ky: usize,
    /// Learn the adjacency A^c jointly with the model.
    #[serde(default = "yes")]
    pub calibrate: bool,
    /// γ, the weight of the (mean) GNN loss in the calibration objective.
    #[serde(default = "gamma")]
    pub gamma: f64,
    /// λ₁, the weight of ‖A^c − A'‖_F (unsquared).
    #[serde(default = "lambda1")]
    pub lambda1: f64,
    /// λ₂, the weight of ‖A^c‖₁.
    #[serde(default = "lambda2")]
    pub lambda2: f64,
    /// Learning rate of the Adam steps on A^c.
    #[serde(default = "adjacency_lr")]
    pub adjacency_lr: f64,
    /// Adam steps on A^c after each model step (the released code's `inner_epoch`).
    #[serde(default = "adjacency_steps")]
    pub adjacency_steps: usize,
    /// The edge mechanism's memory guard (see `edge-ldp`).
    #[serde(default = "max_edges")]
    pub max_edges: usize,
}

/// Where Solitude's feature smoothing l_x runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Smoothing {
    /// Once on the host, before training (the released code's cached `x_prop`): the
    /// model reads dense smoothed features, and every epoch multiplies them densely.
    #[default]
    Host,
    /// In the first layer, over the reported graph: KProp(X₀·W) on the sparse perturbed
    /// features (the same function; sums in another order, so ≈ 1e-6 apart).
    FirstLayer,
}

impl super::DefenseConfig for SolitudeConfig {
    fn cost(&self, run: &super::RunSize) -> super::CostHint {
        // Calibration learns a weight per reported edge: the reported graph of ε_a-edge
        // RR has ~(n/clients)²/(1+e^ε_a) fake edges per client. The model trains on the
        // dense smoothed features (the time model's gemm term); per reported arc and
        // epoch the adjacency steps, the Drop loss's KProp and the propagation over the
        // fake arcs cost ≈ 0.94 µs (fitted on EC-LDA's Cora GCN, 10 clients, 20 rounds,
        // one thread: ε_x = ε_a = 8 17.5 s, = 1 36.0 s; plain 3.4 s).
        let fake = run.clients * (run.nodes / run.clients).powi(2) / (1.0 + self.epsilon_a.value().exp());
        let extra_arcs = 2.0 * fake;
        let dense_features = self.kx > 0 && self.smoothing == Smoothing::Host;
        super::CostHint { factor: 1.1, seconds_per_epoch: (2.0 * run.edges + fake) * 9.4e-7, dense_features, extra_arcs, ..Default::default() }
    }

    fn build(&self, name: &str, client: &ClientContext) -> Result<Defense> {
        let field = |f: &str| format!("defense `{name}`: {f}");
        if self.calibrate && client.model.arch == crate::model::Arch::Gat {
            // GAT weighs edges by attention only: A^c would get no task gradient.
            return Err(Error::param("model.arch", "solitude's calibration learns edge weights that GCN and GraphSAGE aggregate with; GAT ignores them (use gcn or sage, or calibrate: false)"));
        }
        crate::model::check_kprop_steps(&field("kx"), self.kx)?;
        crate::model::check_kprop_steps(&field("ky"), self.ky)?;
        for (f, v) in [("gamma", self.gamma), ("lambda1", self.lambda1), ("lambda2", self.lambda2)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::param(field(f), format!("{v} is not allowed; allowed: a finite weight ≥ 0")));
            }
        }
        if !(self.adjacency_lr.is_finite() && self.adjacency_lr > 0.0) {
            return Err(Error::param(field("adjacency_lr"), format!("{} is not allowed; allowed: a finite number > 0", self.adjacency_lr)));
        }
        if self.adjacency_steps == 0 && self.calibrate {
            return Err(Error::param(field("adjacency_steps"), "0 is not allowed with calibrate: true; allowed: ≥ 1 (or calibrate: false)"));
        }
        // Steps on A^c per epoch (the released code's 2): 10⁹ ran for ever.
        if self.adjacency_steps > 1000 {
            return Err(Error::param(
                field("adjacency_steps"),
                format!("{} is not allowed; allowed 1..=1000 steps per epoch (the released code takes 2)", self.adjacency_steps),
            ));
        }
        let state = Arc::new(Solitude::new(name, self, client.client)?);
        let d = Defense::new(name).with_data(state.clone()).with_loss(DropTransform { ky: self.ky, forward_correction: true });
        Ok(if self.calibrate { d.with_trainer(Calibration(state.clone())).with_state(state) } else { d })
    }
}

struct Solitude {
    cfg: SolitudeConfig,
    features: PerturbFeatures,
    edges: PerturbEdges,
    client: usize,
    /// The client's learned adjacency, from its reported graph on.
    adjacency: Mutex<Option<Adjacency>>,
}

/// A client's A^c: one weight per entry of its reported graph's CSR (row v, sender u),
/// with the state of its Adam optimiser.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Adjacency {
    pub weights: Vec<f32>,
    m: Vec<f32>,
    v: Vec<f32>,
    steps: i32,
    /// Whether the entry's edge is absent from the client's true graph.
    fake: Vec<bool>,
}

impl Adjacency {
    /// A^c = A' (every reported entry at 1).
    pub fn new(fake: Vec<bool>) -> Adjacency {
        let n = fake.len();
        Adjacency { weights: vec![1.0; n], m: vec![0.0; n], v: vec![0.0; n], steps: 0, fake }
    }

    /// Entries at weight 0 (removed from the graph the model sees), and of them fake.
    pub fn removed(&self) -> (usize, usize) {
        let gone = || self.weights.iter().zip(&self.fake).filter(|&(&w, _)| w == 0.0);
        (gone().count(), gone().filter(|&(_, &f)| f).count())
    }

    /// Mean weight over all entries, the fake ones or the true ones (0 when there are none).
    pub fn mean_weight(&self, fake: Option<bool>) -> f64 {
        let chosen: Vec<f64> = self.weights.iter().zip(&self.fake).filter(|&(_, &f)| fake.is_none_or(|want| want == f)).map(|(&w, _)| f64::from(w)).collect();
        if chosen.is_empty() { 0.0 } else { chosen.iter().sum::<f64>() / chosen.len() as f64 }
    }

    /// The gradient of Eq. 14's adjacency terms given `task` = ∂L_GNN/∂A^c:
    /// γ·task + λ₁(A^c − A')/‖A^c − A'‖_F (0 at A^c = A', torch's subgradient) + λ₂.
    pub fn gradient(&self, task: &[f32], c: &SolitudeConfig) -> Vec<f32> {
        let distance = self.weights.iter().map(|&w| f64::from(1.0 - w).powi(2)).sum::<f64>().sqrt();
        let pull = if distance > 0.0 { c.lambda1 / distance } else { 0.0 };
        task.iter().zip(&self.weights).map(|(&g, &w)| (c.gamma * f64::from(g) + pull * f64::from(w - 1.0) + c.lambda2) as f32).collect()
    }

    /// One projected Adam step (β = 0.9, 0.999; ε = 1e-8, torch's defaults) on Eq. 14
    /// from `task` = ∂L_GNN/∂A^c, then the clamp to [0, 1].
    pub fn step(&mut self, task: &[f32], c: &SolitudeConfig) {
        let (b1, b2, eps) = (0.9f32, 0.999f32, 1e-8f32);
        let grad = self.gradient(task, c);
        self.steps += 1;
        let (c1, c2) = (1.0 - b1.powi(self.steps), 1.0 - b2.powi(self.steps));
        let lr = c.adjacency_lr as f32;
        for (e, g) in grad.into_iter().enumerate() {
            self.m[e] = b1 * self.m[e] + (1.0 - b1) * g;
            self.v[e] = b2 * self.v[e] + (1.0 - b2) * g * g;
            let update = lr * (self.m[e] / c1) / ((self.v[e] / c2).sqrt() + eps);
            self.weights[e] = (self.weights[e] - update).clamp(0.0, 1.0);
        }
    }
}

/// `steps` rounds of LPGNN's KProp, x ← D^{-1/2} A D^{-1/2} x without self loops (the
/// degrees are in-degrees, as [`crate::model::GraphTensors`] computes them), on the host.
pub fn smooth_features(graph: &Graph, x: &DenseMatrix, steps: usize) -> DenseMatrix {
    let n = graph.num_nodes();
    let f = x.cols;
    let inv_sqrt: Vec<f32> = (0..n).map(|v| graph.neighbors(v).len()).map(|d| if d > 0 { 1.0 / (d as f32).sqrt() } else { 0.0 }).collect();
    let mut cur = x.data.clone();
    for _ in 0..steps {
        let mut next = vec![0.0f32; n * f];
        for v in 0..n {
            let row = &mut next[v * f..(v + 1) * f];
            for &u in graph.neighbors(v) {
                let u = u as usize;
                let w = inv_sqrt[u] * inv_sqrt[v];
                for (o, &xi) in row.iter_mut().zip(&cur[u * f..(u + 1) * f]) {
                    *o += w * xi;
                }
            }
        }
        cur = next;
    }
    DenseMatrix { rows: n, cols: f, data: cur }
}

impl Solitude {
    /// Client `client`'s state: the multi-bit feature mechanism at ε_x, the edge
    /// mechanism at ε_a, no adjacency until the data is perturbed.
    fn new(name: &str, cfg: &SolitudeConfig, client: usize) -> Result<Solitude> {
        let features = LdpFeaturesConfig {
            epsilon: cfg.epsilon_x,
            mechanism: Mechanism::MultiBit,
            features: FeatureSource::Raw,
            range: default_range(),
            delta: crate::privacy::gaussian::DEFAULT_DELTA,
            m: None,
        };
        let edges = EdgeLdpConfig { epsilon: cfg.epsilon_a, symmetrize: cfg.symmetrize, max_edges: cfg.max_edges };
        Ok(Solitude {
            cfg: cfg.clone(),
            features: PerturbFeatures::new(name, &features)?,
            edges: PerturbEdges::new(name, &edges, client)?,
            client,
            adjacency: Mutex::new(None),
        })
    }
}

impl DataTransform for Solitude {
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        self.features.perturb(data, rng)?;
        let perturbed = self.edges.perturb(data, rng)?;
        // Smoothed once over the reported graph, as the released code's cached x_prop.
        match self.cfg.smoothing {
            Smoothing::Host if self.cfg.kx > 0 => {
                data.features = Features::Dense(smooth_features(&data.graph, &data.features.to_dense(), self.cfg.kx));
            }
            Smoothing::Host => {}
            Smoothing::FirstLayer => data.feature_kprop += self.cfg.kx,
        }
        let mut cost = self.edges.cost(perturbed.as_ref());
        let fake = match &perturbed {
            Some(p) => p.fake.clone(),
            None => vec![false; data.graph.csr().1.len()],
        };
        *self.adjacency.lock().expect("solitude state") = Some(Adjacency::new(fake));
        cost.protects = format!(
            "node features (multi-bit, ε_x = {}) and {}: ε = ε_x + ε_a per node",
            self.cfg.epsilon_x.value(),
            cost.protects.replacen("each node's", "its", 1)
        );
        cost.epsilon = self.cfg.epsilon_x.value() + self.cfg.epsilon_a.value();
        Ok(Some(cost))
    }
}

/// The learned adjacency (weights and its Adam state) lasts between rounds.
impl crate::fed::Persistent for Solitude {
    fn save(&self) -> Result<Vec<u8>> {
        crate::fed::checkpoint::encode(&*self.adjacency.lock().expect("solitude state"))
    }

    fn restore(&self, state: &[u8]) -> Result<()> {
        let saved: Option<Adjacency> = crate::fed::checkpoint::decode(state, "solitude's adjacency")?;
        let mut current = self.adjacency.lock().expect("solitude state");
        let entries = |a: &Option<Adjacency>| a.as_ref().map(|a| a.weights.len());
        if entries(&saved) != entries(&current) {
            return Err(Error::Other(format!("checkpoint: solitude's adjacency of client {} does not fit its reported graph", self.client)));
        }
        *current = saved;
        Ok(())
    }
}

/// The joint training of the model and A^c (module docs, step 4).
struct Calibration(Arc<Solitude>);

impl Calibration {
    /// The client's adjacency, locked; the data transform sets it.
    fn adjacency(&self) -> Result<std::sync::MutexGuard<'_, Option<Adjacency>>> {
        let guard = self.0.adjacency.lock().expect("solitude state");
        match guard.is_some() {
            true => Ok(guard),
            false => Err(Error::Other(format!("solitude: client {} has no reported graph", self.0.client))),
        }
    }
}

impl LocalTrainer for Calibration {
    fn name(&self) -> &str {
        "solitude-calibration"
    }

    fn prepare(&self, data: &LocalData, _rng: &mut Rng) -> Result<()> {
        let entries = self.adjacency()?.as_ref().map_or(0, |a| a.weights.len());
        let (indptr, _) = data.graph.csr();
        if entries != indptr[indptr.len() - 1] {
            return Err(Error::Other(format!(
                "solitude: client {}'s graph changed after edge perturbation (list solitude after other graph defenses)",
                self.0.client
            )));
        }
        Ok(())
    }

    fn train(&self, model: NodeClassifier, call: &mut TrainCall<'_>, _next: &dyn NextTrainer) -> Result<(NodeClassifier, LocalStats)> {
        let (data, cfg, loss) = (call.data, call.cfg, call.loss);
        let (optim, rng) = (&mut *call.optim, &mut *call.rng);
        let mut guard = self.adjacency()?;
        let adjacency = guard.as_mut().expect("checked by adjacency()");
        let c = &self.0.cfg;
        let entries = adjacency.weights.len();
        if entries == 0 {
            return Ok(crate::train::train_local(model, data, cfg, loss, optim, rng));
        }
        let device = model.devices().into_iter().next().ok_or_else(|| Error::Other("a model without parameters".into()))?;
        let plain = device.clone().without_autodiff();
        let column = |w: &[f32], device: &burn::tensor::Device| Tensor::<2>::from_data(TensorData::new(w.to_vec(), [entries, 1]), device);
        let base = data.graph.clone();
        let mut refine = |model: &NodeClassifier, d: &ClientTensors, first: Tensor<2>| -> Option<GraphTensors> {
            // θ is fixed during these steps: its gradients (the dense X·W's above all, on
            // perturbed features) would be computed and thrown away, and the first layer's
            // X·W is the one the trainer shares (the same for every step here).
            let model = model.clone().no_grad();
            for _ in 0..c.adjacency_steps {
                let w = column(&adjacency.weights, &device).require_grad();
                let tensors = ClientTensors { graph: base.with_edge_weights(w.clone()), ..d.clone() };
                // No dropout: the adjacency follows the model's deterministic prediction
                // (the released code's model is in evaluation mode there).
                let out = model.forward_from(&tensors.input, Some(first.clone()), &tensors.graph, None);
                let grads = loss.loss(&out, &tensors)?.backward();
                let grad: Vec<f32> = w.grad(&grads)?.into_data().convert::<f32>().try_to_vec::<f32>().ok()?;
                adjacency.step(&grad, c);
            }
            Some(base.with_edge_weights(column(&adjacency.weights, &plain)))
        };
        Ok(train_local_with(model, data, cfg, loss, optim, rng, Some(&mut refine)))
    }

    /// Calibration spends nothing (post-processing); its line reports what it did.
    fn privacy_spent(&self, _rounds: usize) -> Option<PrivacyCost> {
        let guard = self.adjacency().ok()?;
        let a = guard.as_ref()?;
        let kept = a.weights.iter().filter(|&&w| w > 0.0).count();
        let (removed, removed_fake) = a.removed();
        let effects = BTreeMap::from([
            ("calibration_removed".to_string(), removed as f64),
            ("calibration_removed_fake".to_string(), removed_fake as f64),
            ("calibration_kept".to_string(), kept as f64),
            ("calibration_kept_fake".to_string(), a.weights.iter().zip(&a.fake).filter(|&(&w, &f)| w > 0.0 && f).count() as f64),
            ("calibration_mean_weight".to_string(), a.mean_weight(None)),
            ("calibration_mean_weight_fake".to_string(), a.mean_weight(Some(true))),
            ("calibration_mean_weight_true".to_string(), a.mean_weight(Some(false))),
        ]);
        Some(PrivacyCost {
            protects: "graph calibration of the reported graph (learned adjacency): post-processing, no further privacy spent; counts are CSR entries (arcs)".into(),
            epsilon: 0.0,
            delta: 0.0,
            effects,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SolitudeConfig {
        serde_norway::from_str("{epsilon_x: 1, epsilon_a: 8}").unwrap()
    }

    /// Eq. 14's gradient and two projected Adam steps by hand: A^c = (1, 0.5), task
    /// gradient (−0.2, 5), γ = 1, λ₁ = 0.5, λ₂ = 0.1. ‖A^c − A'‖ = 0.5, so the pull is
    /// 0.5/0.5·(w − 1): gradient (−0.2 + 0 + 0.1, 5 − 0.5 + 0.1) = (−0.1, 4.6). Adam's
    /// first step moves each weight by lr against its gradient's sign.
    #[test]
    fn adam_steps_on_the_calibration_objective_by_hand() {
        let mut c = SolitudeConfig { gamma: 1.0, lambda1: 0.5, lambda2: 0.1, adjacency_lr: 0.1, ..config() };
        let mut a = Adjacency::new(vec![false, true]);
        a.weights = vec![1.0, 0.5];
        let g = a.gradient(&[-0.2, 5.0], &c);
        assert!((g[0] + 0.1).abs() < 1e-6 && (g[1] - 4.6).abs() < 1e-6, "{g:?}");
        a.step(&[-0.2, 5.0], &c);
        // w0 = 1 + 0.1, clamped to 1; w1 = 0.5 − 0.1.
        assert_eq!(a.weights[0], 1.0);
        assert!((a.weights[1] - 0.4).abs() < 1e-6, "{}", a.weights[1]);
        // At A^c = A' the unsquared norm has no gradient (the subgradient 0).
        assert_eq!(Adjacency::new(vec![false]).gradient(&[0.0], &c), vec![0.1f32]);
        // A second, larger step takes the fake entry to 0: removed, and it was fake.
        c.adjacency_lr = 1.0;
        a.step(&[-0.2, 5.0], &c);
        assert_eq!((a.weights.clone(), a.removed()), (vec![1.0, 0.0], (1, 1)));
        assert_eq!((a.mean_weight(None), a.mean_weight(Some(true)), a.mean_weight(Some(false))), (0.5, 0.0, 1.0));
        assert_eq!((config().kx, config().ky, config().adjacency_steps), (4, 2, 2), "defaults");
    }

    /// The host smoothing is the model's KProp: same values on a directed graph with an
    /// isolated receiver.
    #[test]
    fn feature_smoothing_is_kprop_on_the_reported_graph() {
        use crate::model::GraphTensors;
        use burn::tensor::Device;
        let graph = Graph::from_senders(vec![vec![3, 2], vec![0, 2], vec![1], vec![]]);
        let x = DenseMatrix { rows: 4, cols: 2, data: vec![1.0, -2.0, 0.5, 3.0, 2.0, 1.0, -1.0, 0.25] };
        let device = Device::flex();
        let t = Tensor::<2>::from_data(TensorData::new(x.data.clone(), [4, 2]), &device);
        let expected: Vec<f32> = crate::model::kprop::kprop(t, &GraphTensors::new(&graph, &device).unwrap(), 3).into_data().convert::<f32>().try_to_vec::<f32>().unwrap();
        let got = smooth_features(&graph, &x, 3);
        assert!(got.data.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-6), "{:?} vs {expected:?}", got.data);
        assert!(got.data.iter().any(|&v| v != 0.0) && smooth_features(&graph, &x, 0) == x);
    }

    /// The pipeline smooths the features once, over the reported graph, when the data is
    /// perturbed: the model gets the smoothed features and no further KProp rounds (an
    /// earlier version left the rounds to the model, which then smoothed over the learned
    /// A^c every epoch and cost accuracy). Without noise the reported graph is the true one.
    #[test]
    fn features_are_smoothed_once_over_the_reported_graph() {
        use crate::data::Role;
        let cfg: SolitudeConfig = serde_norway::from_str("{epsilon_x: .inf, epsilon_a: .inf, kx: 2}").unwrap();
        let state = Solitude::new("s", &cfg, 0).unwrap();
        let (graph, _) = Graph::from_edges(4, [(0, 1), (1, 2), (2, 3)], "t").unwrap();
        let x = DenseMatrix { rows: 4, cols: 2, data: vec![1.0, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0] };
        let mut data = LocalData { graph: graph.clone(), features: Features::Dense(x.clone()), labels: vec![Some(0); 4], roles: vec![Role::Train; 4], classes: 2, label_transition: None, feature_kprop: 0, link: None };
        state.apply(&mut data, &mut crate::rng::derive(1, "t", &[])).unwrap();
        assert_eq!(data.feature_kprop, 0, "no KProp left to the model");
        // Path 0–1–2–3, degrees (1, 2, 2, 1), weights 1/sqrt(d_u·d_v) (r = 1/√2 on the end
        // edges, h = 1/2 on the middle one), two rounds by hand: column 0 = (1, 0, 1, 0) →
        // (0, r + h, 0, r) → ((r + h)r, 0, (r + h)h + r², 0); column 1 = (0, 1, 1, 0) →
        // (r, h, h, r) → (hr, r² + h², h² + r², hr).
        let (r, h) = (std::f32::consts::FRAC_1_SQRT_2, 0.5f32);
        let expected = [(r + h) * r, h * r, 0.0, r * r + h * h, (r + h) * h + r * r, h * h + r * r, 0.0, h * r];
        let got = data.features.to_dense().data;
        assert!(got.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-6), "{got:?} vs {expected:?}");
        // Calibration has an A^c for the client, one weight per arc, none fake.
        let a = state.adjacency.lock().unwrap().clone().expect("an adjacency");
        assert_eq!((a.weights.len(), a.mean_weight(Some(true)), a.removed()), (6, 0.0, (0, 0)));
    }

    /// `smoothing: first-layer` leaves the features as reported (sparse stays sparse) and
    /// hands the KProp rounds to the client's tensors, over the reported graph: their X·W
    /// is the host-smoothed features' X·W up to float rounding, whatever graph the model
    /// later trains on (the input carries its own). Seen failing with the rounds left to
    /// the model, which propagated over the training graph.
    #[test]
    fn first_layer_smoothing_is_host_smoothing_after_the_product() {
        use crate::data::Role;
        use crate::data::features::CsrMatrix;
        use crate::model::NodeInput;
        use burn::tensor::Device;
        let state = |smoothing: &str| {
            let cfg: SolitudeConfig = serde_norway::from_str(&format!("{{epsilon_x: .inf, epsilon_a: .inf, kx: 3, smoothing: {smoothing}}}")).unwrap();
            Solitude::new("s", &cfg, 0).unwrap()
        };
        let (graph, _) = Graph::from_edges(5, [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4)], "t").unwrap();
        let x = CsrMatrix::canonical(5, 4, vec![0, 2, 3, 3, 5, 6], vec![0, 3, 1, 0, 2, 3], vec![1.0, 0.5, 2.0, -1.0, 3.0, 0.25]);
        let data = |smoothing: &str| {
            let mut d = LocalData { graph: graph.clone(), features: Features::Sparse(x.clone()), labels: vec![Some(0); 5], roles: vec![Role::Train; 5], classes: 2, label_transition: None, feature_kprop: 0, link: None };
            state(smoothing).apply(&mut d, &mut crate::rng::derive(1, "t", &[])).unwrap();
            d
        };
        let (host, first) = (data("host"), data("first-layer"));
        assert!(matches!(host.features, Features::Dense(_)) && host.feature_kprop == 0);
        assert!(matches!(first.features, Features::Sparse(_)) && first.feature_kprop == 3, "features as reported, the rounds handed on");
        let device = Device::flex();
        let w = Tensor::<2>::from_data(TensorData::new(vec![0.3f32, -1.0, 0.7, 2.0, 0.1, -0.4, 1.5, 0.2], [4, 2]), &device);
        let product = |d: &LocalData| {
            let t = ClientTensors::new(d, 2, &device).unwrap();
            if d.feature_kprop > 0 {
                assert!(matches!(t.input, NodeInput::Smoothed { steps: 3, .. }));
            }
            t.input.matmul(w.clone()).into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
        };
        let (a, b) = (product(&host), product(&first));
        assert!(a.iter().any(|&v| v.abs() > 0.1));
        assert!(a.iter().zip(&b).all(|(p, q)| (p - q).abs() <= 1e-5 * (1.0 + p.abs())), "{a:?} vs {b:?}");
    }
}

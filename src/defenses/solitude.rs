//! `solitude`: the Solitude pipeline of Lin, Li & Wang (IEEE TIFS 2022) on each client's
//! own data:
//!
//! 1. once, before round 1: features through the multi-bit mechanism (ε_x, per node) and
//!    every node's adjacency row through Warner RR (ε_a, edge LDP; [`super::edge_ldp`]);
//!    feature smoothing l_x = KProp rounds over the reported graph (LPGNN's KProp_x);
//! 2. label smoothing l_y: LPGNN's Drop loss with Ky = l_y (labels are not private here,
//!    so its transition matrix is the identity);
//! 3. graph calibration (`calibrate: true`), the paper's objective
//!    min γ·L_GNN(A_c) + λ₁‖A − A_c‖²_F + λ₂‖A_c‖₁ over a learned adjacency A_c with one
//!    weight per reported edge (sparse; A is 1 on every reported edge), initialised at 1:
//!    every epoch, one Adam step on the model (on A_c), then `adjacency_steps` proximal
//!    steps on A_c — gradient of γ·L_GNN + λ₁‖A − A_c‖² with momentum, the L1 prox
//!    (shrink by lr·λ₂), clamp to [0, 1]; an edge whose weight reaches 0 is removed for
//!    good. The model aggregates over A_c with its weighted degrees
//!    ([`crate::model::GraphTensors::with_edge_weights`]).
//!
//! The released code's calibration is a no-op on the edge set (REFERENCE §1.3: its
//! adjacency gets no task gradient and is re-initialised every epoch); this one learns
//! from the GNN loss and reports how many reported edges it removed and how many of those
//! were fake (the client knows its own graph; nothing else reads that).
//!
//! Privacy: (ε_x + ε_a) per node; calibration is post-processing.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use burn::module::Module;
use burn::optim::ModuleOptimizer;
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::edge_ldp::{EdgeLdpConfig, PerturbEdges, Symmetrize};
use super::ldp_features::{FeatureSource, LdpFeaturesConfig, Mechanism, PerturbFeatures, default_range};
use super::lpgnn::DropTransform;
use crate::error::{Error, Result};
use crate::fed::{DataTransform, Defense};
use crate::model::{ModelConfig, NodeClassifier};
use crate::privacy::{Epsilon, PrivacyCost};
use crate::rng::Rng;
use crate::train::{ClientTensors, LocalData, LocalStats, LocalTrainer, Loss, TrainConfig, train_local_with};

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
    0.01
}
fn momentum() -> f64 {
    0.9
}
fn one() -> usize {
    1
}
fn max_edges() -> usize {
    20_000_000
}

/// Default weights of the calibration objective, with L_GNN the *summed* training loss.
/// The paper gives none; the released code's (γ = 1 on the mean loss, L1 weight 5e-4,
/// lr 0.01) move no weight below 0.99 within 500 epochs once the task gradient flows.
/// With λ₁ = λ₂ = 1 a weight settles at 0.5 − γ·∂L/∂w / 2, so an edge is removed when
/// γ·∂L/∂w > 1. γ = 5 keeps the calibration conservative on Cora at ε_a = 7 (≈ 350 of
/// 17 000 reported edges removed, about half of them fake against 39 % by chance); γ = 20
/// removes 11 000 there and collapses accuracy, while on a generated graph with clean
/// features it removes 445 edges, 76 % of them fake against 46 % by chance
/// (docs/ldp-graphs.md).
pub const GAMMA: f64 = 5.0;
pub const LAMBDA1: f64 = 1.0;
pub const LAMBDA2: f64 = 1.0;

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
    /// Feature smoothing l_x: KProp rounds over the reported graph.
    #[serde(default = "kx")]
    pub kx: usize,
    /// Label smoothing l_y: KProp rounds of the Drop loss.
    #[serde(default = "ky")]
    pub ky: usize,
    /// Learn the adjacency A_c jointly with the model.
    #[serde(default = "yes")]
    pub calibrate: bool,
    /// γ, the weight of the GNN loss in the calibration objective.
    #[serde(default = "gamma")]
    pub gamma: f64,
    /// λ₁, the weight of ‖A − A_c‖²_F.
    #[serde(default = "lambda1")]
    pub lambda1: f64,
    /// λ₂, the weight of ‖A_c‖₁.
    #[serde(default = "lambda2")]
    pub lambda2: f64,
    /// Learning rate of the proximal steps on A_c.
    #[serde(default = "adjacency_lr")]
    pub adjacency_lr: f64,
    /// Momentum of the steps on A_c.
    #[serde(default = "momentum")]
    pub adjacency_momentum: f64,
    /// Proximal steps on A_c after each model step.
    #[serde(default = "one")]
    pub adjacency_steps: usize,
    /// The edge mechanism's memory guard (see `edge-ldp`).
    #[serde(default = "max_edges")]
    pub max_edges: usize,
}

impl super::DefenseConfig for SolitudeConfig {
    fn build(&self, name: &str) -> Result<Defense> {
        let field = |f: &str| format!("defense `{name}`: {f}");
        for (f, v) in [("gamma", self.gamma), ("lambda1", self.lambda1), ("lambda2", self.lambda2)] {
            if !(v.is_finite() && v >= 0.0) {
                return Err(Error::param(field(f), format!("{v} is not allowed; allowed: a finite weight ≥ 0")));
            }
        }
        if !(self.adjacency_lr.is_finite() && self.adjacency_lr > 0.0) {
            return Err(Error::param(field("adjacency_lr"), format!("{} is not allowed; allowed: a finite number > 0", self.adjacency_lr)));
        }
        if !(0.0..1.0).contains(&self.adjacency_momentum) {
            return Err(Error::param(field("adjacency_momentum"), format!("{} is not in [0, 1)", self.adjacency_momentum)));
        }
        let features = LdpFeaturesConfig {
            epsilon: self.epsilon_x,
            mechanism: Mechanism::MultiBit,
            features: FeatureSource::Raw,
            range: default_range(),
            delta: crate::privacy::gaussian::DEFAULT_DELTA,
            m: None,
        };
        let edges = EdgeLdpConfig { epsilon: self.epsilon_a, symmetrize: self.symmetrize, max_edges: self.max_edges };
        let state = Arc::new(Solitude {
            cfg: self.clone(),
            features: PerturbFeatures::new(name, &features)?,
            edges: PerturbEdges::new(name, &edges)?,
            clients: Mutex::new(BTreeMap::new()),
        });
        let d = Defense::new(name).with_data(state.clone()).with_loss(DropTransform { ky: self.ky, forward_correction: true });
        Ok(if self.calibrate && !self.epsilon_a.is_infinite() { d.with_trainer(Calibration(state)) } else { d })
    }
}

struct Solitude {
    cfg: SolitudeConfig,
    features: PerturbFeatures,
    edges: PerturbEdges,
    /// Each client's learned adjacency.
    clients: Mutex<BTreeMap<usize, Arc<Mutex<Adjacency>>>>,
}

/// A client's A_c: one weight per entry of its reported graph's CSR (row v, sender u).
#[derive(Debug, Clone, PartialEq)]
pub struct Adjacency {
    pub weights: Vec<f32>,
    velocity: Vec<f32>,
    /// Whether the entry's edge is absent from the client's true graph.
    fake: Vec<bool>,
}

impl Adjacency {
    pub fn new(fake: Vec<bool>) -> Adjacency {
        let n = fake.len();
        Adjacency { weights: vec![1.0; n], velocity: vec![0.0; n], fake }
    }

    /// Entries removed (weights start at 1 and reach 0 only by removal), and of them fake.
    pub fn removed(&self) -> (usize, usize) {
        let gone = || self.weights.iter().zip(&self.fake).filter(|&(&w, _)| w == 0.0);
        (gone().count(), gone().filter(|&(_, &f)| f).count())
    }

    /// One proximal step from `grad` = ∂L_GNN/∂A_c: w ← w − lr·(μv + γ·grad + 2λ₁(w − 1)),
    /// then the L1 prox max(w − lr·λ₂, 0) and a clamp to [0, 1]. Removed entries stay 0.
    pub fn step(&mut self, grad: &[f32], c: &SolitudeConfig) {
        let lr = c.adjacency_lr as f32;
        for (e, &g) in grad.iter().enumerate() {
            let w = self.weights[e];
            if w == 0.0 {
                continue;
            }
            let smooth = c.gamma as f32 * g + 2.0 * c.lambda1 as f32 * (w - 1.0);
            self.velocity[e] = c.adjacency_momentum as f32 * self.velocity[e] + smooth;
            let next = ((w - lr * self.velocity[e]) - lr * c.lambda2 as f32).clamp(0.0, 1.0);
            self.weights[e] = next;
        }
    }
}

impl DataTransform for Solitude {
    fn apply(&self, client: usize, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        self.features.perturb(data, rng)?;
        let perturbed = self.edges.perturb(client, data, rng)?;
        data.feature_kprop += self.cfg.kx;
        let mut cost = self.edges.cost(perturbed.as_ref());
        if let Some(p) = perturbed {
            self.clients.lock().expect("solitude state").insert(client, Arc::new(Mutex::new(Adjacency::new(p.fake))));
        }
        cost.protects = format!(
            "node features (multi-bit, ε_x = {}) and {}: ε = ε_x + ε_a per node",
            self.cfg.epsilon_x.value(),
            cost.protects.replacen("each node's", "its", 1)
        );
        cost.epsilon = self.cfg.epsilon_x.value() + self.cfg.epsilon_a.value();
        Ok(Some(cost))
    }
}

/// The joint training of the model and A_c (module docs, step 3).
struct Calibration(Arc<Solitude>);

impl Calibration {
    fn adjacency(&self, client: usize) -> Result<Arc<Mutex<Adjacency>>> {
        self.0.clients.lock().expect("solitude state").get(&client).cloned().ok_or_else(|| Error::Other(format!("solitude: client {client} has no reported graph")))
    }
}

impl LocalTrainer for Calibration {
    fn name(&self) -> &str {
        "solitude-calibration"
    }

    fn prepare(&self, client: usize, data: &LocalData, model: &ModelConfig, _cfg: &TrainConfig, _rounds: usize, _rng: &mut Rng) -> Result<()> {
        if model.arch == crate::model::Arch::Gat {
            // GAT weighs edges by attention only: A_c would get no task gradient.
            return Err(Error::param("model.arch", "solitude's calibration learns edge weights that GCN and GraphSAGE aggregate with; GAT ignores them (use gcn or sage, or calibrate: false)"));
        }
        let adjacency = self.adjacency(client)?;
        let entries = adjacency.lock().expect("adjacency").weights.len();
        let (indptr, _) = data.graph.csr();
        if entries != indptr[indptr.len() - 1] {
            return Err(Error::Other(format!("solitude: client {client}'s graph changed after edge perturbation (list solitude after other graph defenses)")));
        }
        Ok(())
    }

    fn train(
        &self,
        client: usize,
        _round: usize,
        model: NodeClassifier,
        _local: &LocalData,
        data: &ClientTensors,
        cfg: &TrainConfig,
        loss: &dyn Loss,
        optim: &mut ModuleOptimizer,
        rng: &mut Rng,
    ) -> Result<(NodeClassifier, LocalStats)> {
        let adjacency = self.adjacency(client)?;
        let mut adjacency = adjacency.lock().expect("adjacency");
        let c = &self.0.cfg;
        let entries = adjacency.weights.len();
        if entries == 0 {
            return Ok(crate::train::train_local(model, data, cfg, loss, optim, rng));
        }
        let device = model.devices().into_iter().next().ok_or_else(|| Error::Other("a model without parameters".into()))?;
        let plain = device.clone().without_autodiff();
        let column = |w: &[f32], device: &burn::tensor::Device| Tensor::<2>::from_data(TensorData::new(w.to_vec(), [entries, 1]), device);
        let base = data.graph.clone();
        let mut refine = |model: &NodeClassifier, d: &ClientTensors| -> Option<ClientTensors> {
            for _ in 0..c.adjacency_steps {
                let w = column(&adjacency.weights, &device).require_grad();
                let tensors = ClientTensors { graph: base.with_edge_weights(w.clone()), ..d.clone() };
                // No dropout: the adjacency follows the model's deterministic prediction.
                let out = model.forward_with(&tensors.input, &tensors.graph, tensors.input_kprop, None);
                // The summed training loss (mean × train nodes): the gradient per edge weight
                // then does not shrink with the client's size.
                let grads = loss.loss(&out, &tensors)?.mul_scalar(tensors.train.len as f64).backward();
                let grad: Vec<f32> = w.grad(&grads)?.into_data().convert::<f32>().try_to_vec::<f32>().ok()?;
                adjacency.step(&grad, c);
            }
            Some(ClientTensors { graph: base.with_edge_weights(column(&adjacency.weights, &plain)), ..d.clone() })
        };
        Ok(train_local_with(model, data, cfg, loss, optim, rng, &mut refine))
    }

    /// Calibration spends nothing (post-processing); its line reports what it did.
    fn privacy_spent(&self, client: usize, _rounds: usize) -> Option<PrivacyCost> {
        let adjacency = self.adjacency(client).ok()?;
        let a = adjacency.lock().expect("adjacency");
        let kept = a.weights.iter().filter(|&&w| w > 0.0).count();
        let (removed, removed_fake) = a.removed();
        let effects = BTreeMap::from([
            ("calibration_removed".to_string(), removed as f64),
            ("calibration_removed_fake".to_string(), removed_fake as f64),
            ("calibration_kept".to_string(), kept as f64),
            ("calibration_kept_fake".to_string(), a.weights.iter().zip(&a.fake).filter(|&(&w, &f)| w > 0.0 && f).count() as f64),
            ("calibration_mean_weight".to_string(), a.weights.iter().map(|&w| f64::from(w)).sum::<f64>() / a.weights.len().max(1) as f64),
        ]);
        Some(PrivacyCost {
            defense: String::new(),
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
        serde_yaml::from_str("{epsilon_x: 1, epsilon_a: 8}").unwrap()
    }

    /// The proximal step by hand: w = 0.5, v = 0, g = 0.2, γ = 1, λ₁ = 0.5, λ₂ = 0.1,
    /// lr = 0.1, μ = 0.9: smooth = 0.2 + 2·0.5·(0.5 − 1) = −0.3 → w = 0.5 + 0.03 − 0.01.
    #[test]
    fn proximal_step_by_hand() {
        let c = SolitudeConfig { gamma: 1.0, lambda1: 0.5, lambda2: 0.1, adjacency_lr: 0.1, adjacency_momentum: 0.9, ..config() };
        let mut a = Adjacency::new(vec![false, true]);
        a.weights = vec![0.5, 0.01];
        a.step(&[0.2, 5.0], &c);
        assert!((a.weights[0] - 0.52).abs() < 1e-6, "{}", a.weights[0]);
        // The second entry is pushed below 0: clamped, removed, and it was fake.
        assert_eq!((a.weights[1], a.removed()), (0.0, (1, 1)));
        a.step(&[-100.0, -100.0], &c);
        assert_eq!(a.weights[1], 0.0, "removed for good");
        // v = 0.9·(−0.3) + (−100 + 2·0.5·(0.52 − 1)) = −100.75: w = 0.52 + 10.075 − 0.01 → clamped at 1.
        assert_eq!(a.weights[0], 1.0);
        assert_eq!((c.kx, c.ky, c.adjacency_steps), (4, 2, 1), "defaults");
    }
}

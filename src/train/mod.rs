//! Local training on one client's subgraph: full-batch epochs with SGD or Adam, a
//! pluggable loss, evaluation on validation and test nodes.
//!
//! A client's data lives on the host as [`LocalData`] (what client-side defenses
//! transform) and on the device as [`ClientTensors`], built once per client. Data
//! tensors sit on the plain device; the model trains on `device.autodiff()` and is
//! evaluated through `Module::valid()`, so evaluation records no autodiff graph.

use burn::module::Module;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};

pub mod config;

pub use config::{OptimizerKind, TrainConfig};

use crate::data::{Dataset, Features, Graph, Role, Split};
use crate::error::Result;
use crate::model::{GraphTensors, NodeClassifier, NodeInput, Output};
use crate::partition::Client;
use crate::privacy::PrivacyCost;
use crate::rng::Rng;

/// One client's private data on the host: its induced subgraph, features, labels and
/// split roles, in local node ids. Client-side defenses transform this before training.
#[derive(Debug, Clone)]
pub struct LocalData {
    pub graph: Graph,
    pub features: Features,
    pub labels: Vec<Option<u32>>,
    pub roles: Vec<Role>,
    pub classes: usize,
}

impl LocalData {
    /// The part of `dataset` held by `client` (features required).
    pub fn of_client(dataset: &Dataset, client: &Client, split: &Split) -> Result<LocalData> {
        let features = dataset.require_features()?.select_rows(&client.nodes);
        Ok(LocalData {
            graph: client.graph.clone(),
            features,
            labels: client.nodes.iter().map(|&v| dataset.labels[v]).collect(),
            roles: split.restrict(&client.nodes).roles,
            classes: dataset.num_classes(),
        })
    }

    pub fn count(&self, role: Role) -> usize {
        self.roles.iter().filter(|&&r| r == role).count()
    }

    /// Per-class counts of the labels of the train nodes as held here (after any
    /// defense that randomised them).
    pub fn train_label_counts(&self) -> Vec<usize> {
        let mut counts = vec![0usize; self.classes];
        for (label, role) in self.labels.iter().zip(&self.roles) {
            if let (Some(y), Role::Train) = (label, role) {
                counts[*y as usize] += 1;
            }
        }
        counts
    }
}

/// Nodes of one role with their labels, on the device.
#[derive(Debug, Clone)]
pub struct NodeSet {
    /// `None` when the set is empty (Burn tensors cannot be empty on every backend).
    pub index: Option<(Tensor<1, Int>, Tensor<1, Int>)>,
    pub len: usize,
}

impl NodeSet {
    fn new(data: &LocalData, role: Role, device: &Device) -> NodeSet {
        let (mut idx, mut y) = (Vec::new(), Vec::new());
        for (v, (label, r)) in data.labels.iter().zip(&data.roles).enumerate() {
            if let (Some(label), true) = (label, *r == role) {
                idx.push(v as i64);
                y.push(i64::from(*label));
            }
        }
        let len = idx.len();
        let index = (len > 0).then(|| {
            (Tensor::from_data(TensorData::new(idx, [len]), device), Tensor::from_data(TensorData::new(y, [len]), device))
        });
        NodeSet { index, len }
    }
}

/// A client's data on the device, built once and reused every round.
#[derive(Debug, Clone)]
pub struct ClientTensors {
    pub graph: GraphTensors,
    pub input: NodeInput,
    pub train: NodeSet,
    pub val: NodeSet,
    pub test: NodeSet,
    pub classes: usize,
}

impl ClientTensors {
    /// `first_width`: output columns of the model's first layer (see
    /// `ModelConfig::first_width`), which decides the input's layout.
    pub fn new(data: &LocalData, first_width: usize, device: &Device) -> Result<ClientTensors> {
        Ok(ClientTensors {
            graph: GraphTensors::new(&data.graph, device)?,
            input: NodeInput::from_features(&data.features, first_width, device),
            train: NodeSet::new(data, Role::Train, device),
            val: NodeSet::new(data, Role::Val, device),
            test: NodeSet::new(data, Role::Test, device),
            classes: data.classes,
        })
    }
}

/// A training objective. Cross-entropy is the default; defenses replace or extend it
/// (forward correction for noisy labels, label-proportion regularisers).
pub trait Loss: Send + Sync {
    /// Scalar loss of a forward pass over the client's training nodes (`None` if the
    /// client has none).
    fn loss(&self, out: &Output, data: &ClientTensors) -> Option<Tensor<1>>;
}

/// Mean cross-entropy over the training nodes (PyTorch's `cross_entropy`).
#[derive(Debug, Clone, Copy, Default)]
pub struct CrossEntropy;

impl Loss for CrossEntropy {
    fn loss(&self, out: &Output, data: &ClientTensors) -> Option<Tensor<1>> {
        data.train.index.as_ref().map(|(idx, y)| cross_entropy(out.logits.clone(), idx, y))
    }
}

/// Mean of −log softmax(logits[idx])[y].
pub fn cross_entropy(logits: Tensor<2>, idx: &Tensor<1, Int>, y: &Tensor<1, Int>) -> Tensor<1> {
    let logp = log_softmax(logits.select(0, idx.clone()), 1);
    logp.gather(1, y.clone().unsqueeze_dim(1)).mean().neg()
}

/// Accuracy and loss of a model on one node set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Eval {
    pub correct: usize,
    pub count: usize,
    /// Sum of per-node cross-entropy (divide by `count` for the mean).
    pub loss_sum: f64,
}

impl Eval {
    pub fn accuracy(&self) -> Option<f64> {
        (self.count > 0).then(|| self.correct as f64 / self.count as f64)
    }
    pub fn mean_loss(&self) -> Option<f64> {
        (self.count > 0).then(|| self.loss_sum / self.count as f64)
    }
    pub fn add(&mut self, other: Eval) {
        self.correct += other.correct;
        self.count += other.count;
        self.loss_sum += other.loss_sum;
    }
}

/// Evaluate a forward pass's logits on `set`.
pub fn evaluate_set(logits: &Tensor<2>, set: &NodeSet) -> Eval {
    let Some((idx, y)) = &set.index else { return Eval::default() };
    let picked = logits.clone().select(0, idx.clone());
    let pred = picked.clone().argmax(1).squeeze_dim::<1>(1);
    let correct = pred.equal(y.clone()).int().sum().into_scalar::<i64>() as usize;
    let logp = log_softmax(picked, 1);
    let loss_sum = f64::from(logp.gather(1, y.clone().unsqueeze_dim(1)).sum().neg().into_scalar::<f32>());
    Eval { correct, count: set.len, loss_sum }
}

/// Evaluation forward pass (no dropout, no autodiff graph).
pub fn forward_eval(model: &NodeClassifier, data: &ClientTensors) -> Output {
    model.valid().forward(&data.input, &data.graph)
}

/// What one client's local training reports.
#[derive(Debug, Clone, Default)]
pub struct LocalStats {
    /// Training loss of each epoch (before that epoch's step).
    pub epoch_losses: Vec<f64>,
    /// With model selection: the epoch kept (0-based).
    pub selected_epoch: Option<usize>,
    /// The linear head's gradient of each step of the round (models with a head), left
    /// on the device: only a server under [`crate::fed::ThreatModel::GradientAccess`]
    /// reads it ([`HeadSteps::averaged`]), so no other run pays for copying it out.
    pub head_gradient: Option<HeadSteps>,
}

/// A linear head's per-step gradients over one round, as device tensors.
#[derive(Debug, Clone, Default)]
pub struct HeadSteps {
    weight: Vec<Tensor<2>>,
    bias: Vec<Tensor<1>>,
    steps: usize,
}

impl HeadSteps {
    /// Add one step's gradients (either may be absent: a head without bias).
    fn add(&mut self, weight: Option<Tensor<2>>, bias: Option<Tensor<1>>) {
        self.weight.extend(weight);
        self.bias.extend(bias);
        self.steps += 1;
    }

    /// The average over the steps, summed on the host in f64 in step order.
    pub fn averaged(&self) -> HeadGradient {
        fn mean<const D: usize>(steps: &[Tensor<D>], n: usize) -> Vec<f64> {
            let mut acc: Vec<f64> = Vec::new();
            for t in steps {
                let values = t.clone().into_data().convert::<f64>().try_into_vec::<f64>().expect("f64 after convert");
                if acc.is_empty() {
                    acc.resize(values.len(), 0.0);
                }
                acc.iter_mut().zip(values).for_each(|(a, v)| *a += v);
            }
            acc.iter_mut().for_each(|v| *v /= n.max(1) as f64);
            acc
        }
        HeadGradient { weight: mean(&self.weight, self.steps), bias: mean(&self.bias, self.steps), steps: self.steps }
    }
}

/// A linear head's loss gradient, averaged over the steps of one round.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeadGradient {
    /// `[d_in, classes]` row-major, as Burn's `Linear` stores the weight.
    pub weight: Vec<f64>,
    pub bias: Vec<f64>,
    pub steps: usize,
}

/// A fresh optimizer as `cfg` describes it.
pub fn optimizer(cfg: &TrainConfig) -> ModuleOptimizer {
    let wd = (cfg.weight_decay > 0.0).then(|| WeightDecayConfig::new(cfg.weight_decay as f32));
    match cfg.optimizer {
        OptimizerKind::Sgd => {
            // PyTorch's SGD: no dampening, no Nesterov.
            let momentum = (cfg.momentum > 0.0)
                .then(|| MomentumConfig::new().with_momentum(cfg.momentum).with_dampening(0.0).with_nesterov(false));
            SgdConfig::new().with_weight_decay(wd).with_momentum(momentum).init()
        }
        // PyTorch's Adam defaults (ε = 1e-8, L2 weight decay added to the gradient).
        OptimizerKind::Adam => AdamConfig::new().with_epsilon(1e-8).with_weight_decay(wd).init(),
    }
}

/// `cfg.epochs` full-batch epochs on `data` starting from `model` (which must live on an
/// autodiff device), stepping `optim`. Dropout masks come from `rng`. With
/// `cfg.select_best_val`, the model of the epoch with the lowest validation loss is
/// returned.
pub fn train_local(
    mut model: NodeClassifier,
    data: &ClientTensors,
    cfg: &TrainConfig,
    loss_fn: &dyn Loss,
    optim: &mut ModuleOptimizer,
    rng: &mut Rng,
) -> (NodeClassifier, LocalStats) {
    let mut stats = LocalStats::default();
    let mut best: Option<(f64, NodeClassifier)> = None;
    for epoch in 0..cfg.epochs {
        let out = model.forward_train(&data.input, &data.graph, rng);
        let Some(loss) = loss_fn.loss(&out, data) else { break };
        stats.epoch_losses.push(f64::from(loss.clone().into_scalar::<f32>()));
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        if let Some(head) = &model.head {
            let g = stats.head_gradient.get_or_insert_with(HeadSteps::default);
            g.add(grads.get::<2>(head.weight.id), head.bias.as_ref().and_then(|b| grads.get::<1>(b.id)));
        }
        model = optim.step(cfg.lr, model, grads);
        if cfg.select_best_val {
            let val = evaluate_set(&forward_eval(&model, data).logits, &data.val).mean_loss();
            if let Some(v) = val
                && best.as_ref().is_none_or(|(b, _)| v < *b) {
                    best = Some((v, model.clone()));
                    stats.selected_epoch = Some(epoch);
                }
        }
    }
    match best {
        Some((_, m)) => (m, stats),
        None => (model, stats),
    }
}

/// How a client runs the local epochs of one round. [`FullBatch`] is the standard loop;
/// a defense such as DP-GNN (per-node clipped, noised gradients) replaces it.
pub trait LocalTrainer: Send + Sync {
    fn name(&self) -> &str;

    /// Train `model` (on an autodiff device) for one round of `client`.
    #[allow(clippy::too_many_arguments)]
    fn train(
        &self,
        client: usize,
        round: usize,
        model: NodeClassifier,
        data: &ClientTensors,
        cfg: &TrainConfig,
        loss: &dyn Loss,
        optim: &mut ModuleOptimizer,
        rng: &mut Rng,
    ) -> (NodeClassifier, LocalStats);

    /// Privacy spent by `client` after it trained `rounds` rounds with this trainer,
    /// for trainers that account for it (DP-SGD); `None` otherwise.
    fn privacy_spent(&self, _client: usize, _rounds: usize) -> Option<PrivacyCost> {
        None
    }
}

/// The standard loop: [`train_local`].
#[derive(Debug, Clone, Copy, Default)]
pub struct FullBatch;

impl LocalTrainer for FullBatch {
    fn name(&self) -> &str {
        "full-batch"
    }

    fn train(
        &self,
        _client: usize,
        _round: usize,
        model: NodeClassifier,
        data: &ClientTensors,
        cfg: &TrainConfig,
        loss: &dyn Loss,
        optim: &mut ModuleOptimizer,
        rng: &mut Rng,
    ) -> (NodeClassifier, LocalStats) {
        train_local(model, data, cfg, loss, optim, rng)
    }
}

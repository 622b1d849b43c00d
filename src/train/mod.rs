//! Local training on one client's subgraph: full-batch epochs with SGD or Adam, a
//! pluggable loss, evaluation on validation and test nodes.
//!
//! A client's data lives on the host as [`LocalData`] (what client-side defenses
//! transform) and on the device as [`ClientTensors`], built once per client. Data
//! tensors sit on the plain device; the model trains on `device.autodiff()` and is
//! evaluated through `Module::valid()`, so evaluation records no autodiff graph.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Int, Tensor, TensorData};

pub mod config;
pub mod per_node;

pub use config::{OptimizerKind, Selection, TrainConfig};

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
    /// How the labels as held relate to the true ones, when a defense randomised them:
    /// P[true][held], `classes × classes` row-major (`None`: clean labels). Defenses
    /// that randomise labels compose their matrix onto it; losses that correct for
    /// label noise read it.
    pub label_transition: Option<Vec<f64>>,
    /// KProp rounds a defense asked for on the features over this client's graph
    /// (LPGNN's KProp_x), applied in the model's first layer on top of its own.
    pub feature_kprop: usize,
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
            label_transition: None,
            feature_kprop: 0,
        })
    }

    /// Record that the labels were randomised once more with transition matrix `p`
    /// (P[held before][held after]): the recorded matrix becomes P_before · p.
    pub fn compose_label_transition(&mut self, p: &[f64]) {
        let k = self.classes;
        assert_eq!(p.len(), k * k, "label transition matrix of {k} classes");
        self.label_transition = Some(match &self.label_transition {
            None => p.to_vec(),
            Some(before) => (0..k * k).map(|ij| (0..k).map(|l| before[ij / k * k + l] * p[l * k + ij % k]).sum()).collect(),
        });
    }

    pub fn count(&self, role: Role) -> usize {
        self.roles.iter().filter(|&&r| r == role).count()
    }

    /// The train nodes that hold a label, ascending.
    pub fn labelled_train_nodes(&self) -> Vec<usize> {
        (0..self.roles.len()).filter(|&v| self.roles[v] == Role::Train && self.labels[v].is_some()).collect()
    }

    /// Y′: the one-hot labels as held, `[N, classes]` row-major, with the rows of test
    /// (and unlabelled) nodes zeroed (what LPGNN's Drop and RGNN's fY propagate).
    pub fn held_one_hot(&self) -> Vec<f32> {
        let k = self.classes;
        let mut held = vec![0f32; self.labels.len() * k];
        for (v, (label, role)) in self.labels.iter().zip(&self.roles).enumerate() {
            if let (Some(y), Role::Train | Role::Val) = (label, role) {
                held[v * k + *y as usize] = 1.0;
            }
        }
        held
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
        let index = (len > 0)
            .then(|| (Tensor::from_data(TensorData::new(idx, [len]), device), Tensor::from_data(TensorData::new(y, [len]), device)));
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
    /// [`LocalData::feature_kprop`].
    pub input_kprop: usize,
    /// P[y][y] of the labels as held (1 for clean labels; the randomized-response keep
    /// probability): the highest accuracy the held labels allow, which LPGNN's model
    /// selection caps train and validation accuracy by.
    pub label_keep: f64,
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
            input_kprop: data.feature_kprop,
            label_keep: data.label_transition.as_ref().map_or(1.0, |p| p[0]),
        })
    }
}

/// A training objective. Cross-entropy is the default; defenses replace or extend it
/// (forward correction for noisy labels, label-proportion regularisers).
pub trait Loss: Send + Sync {
    /// Scalar loss of a forward pass over the client's training nodes (`None` if the
    /// client has none).
    fn loss(&self, out: &Output, data: &ClientTensors) -> Option<Tensor<1>>;

    /// Mean validation loss of an evaluation pass, for model selection (`None` without
    /// validation nodes). Cross-entropy on the labels as held unless the loss knows
    /// better (forward correction validates on the corrected probabilities).
    fn val_loss(&self, out: &Output, data: &ClientTensors) -> Option<f64> {
        evaluate_set(&out.logits, &data.val).mean_loss()
    }
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
    model.valid().forward_with(&data.input, &data.graph, data.input_kprop, None)
}

/// Fraction of `set` whose arg-max logit is the label (`None` for an empty set).
pub fn accuracy(logits: &Tensor<2>, set: &NodeSet) -> Option<f64> {
    let (idx, y) = set.index.as_ref()?;
    let pred = logits.clone().select(0, idx.clone()).argmax(1).squeeze_dim::<1>(1);
    Some(pred.equal(y.clone()).int().sum().into_scalar::<i64>() as f64 / set.len as f64)
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
    /// The client's graph as training left it, when the trainer refines it (a learned
    /// adjacency): the client evaluates and trains on it from then on.
    pub refined_graph: Option<GraphTensors>,
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
    pub fn add(&mut self, weight: Option<Tensor<2>>, bias: Option<Tensor<1>>) {
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

/// Scale `grads` by min(1, max / (‖g‖ + 1e-6)), ‖g‖ the L2 norm of all of `model`'s
/// parameter gradients together — PyTorch's `clip_grad_norm_` (Burn's own clipping
/// acts on each tensor alone). Returns ‖g‖ before clipping.
pub fn clip_global_norm(grads: &mut GradientsParams, model: &NodeClassifier, max: f64) -> f64 {
    struct SquaredNorm<'a> {
        grads: &'a GradientsParams,
        sum: Option<Tensor<1>>,
    }
    impl ModuleVisitor for SquaredNorm<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.get::<D>(param.id) {
                let s = g.powf_scalar(2.0).sum();
                self.sum = Some(match self.sum.take() {
                    Some(acc) => acc + s,
                    None => s,
                });
            }
        }
    }
    struct Scale<'a> {
        grads: &'a mut GradientsParams,
        coef: f64,
    }
    impl ModuleVisitor for Scale<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.remove::<D>(param.id) {
                self.grads.register(param.id, g.mul_scalar(self.coef));
            }
        }
    }
    let mut norm = SquaredNorm { grads, sum: None };
    model.visit(&mut norm);
    let Some(sum) = norm.sum else { return 0.0 };
    let total = sum.into_scalar::<f64>().sqrt();
    let coef = max / (total + 1e-6);
    if coef < 1.0 {
        model.visit(&mut Scale { grads, coef });
    }
    total
}

/// A fresh optimizer as `cfg` describes it.
pub fn optimizer(cfg: &TrainConfig) -> ModuleOptimizer {
    let wd = (cfg.weight_decay > 0.0).then(|| WeightDecayConfig::new(cfg.weight_decay as f32));
    match cfg.optimizer {
        OptimizerKind::Sgd => {
            // PyTorch's SGD: no dampening, no Nesterov.
            let momentum =
                (cfg.momentum > 0.0).then(|| MomentumConfig::new().with_momentum(cfg.momentum).with_dampening(0.0).with_nesterov(false));
            SgdConfig::new().with_weight_decay(wd).with_momentum(momentum).init()
        }
        // PyTorch's Adam defaults (ε = 1e-8, L2 weight decay added to the gradient).
        OptimizerKind::Adam => AdamConfig::new().with_epsilon(1e-8).with_weight_decay(wd).init(),
    }
}

/// `cfg.epochs` full-batch epochs on `data` starting from `model` (which must live on an
/// autodiff device), stepping `optim`. Dropout masks come from `rng`. The model
/// returned is the one `cfg.selection` keeps (the last one by default).
pub fn train_local(
    model: NodeClassifier,
    data: &ClientTensors,
    cfg: &TrainConfig,
    loss_fn: &dyn Loss,
    optim: &mut ModuleOptimizer,
    rng: &mut Rng,
) -> (NodeClassifier, LocalStats) {
    train_local_with(model, data, cfg, loss_fn, optim, rng, &mut |_, _| None)
}

/// [`train_local`] where the client may refine its graph after every model step
/// (Solitude's learned adjacency): `refine(model, data)` returns the tensors the
/// next epoch (and the model selection of this one) uses, or `None` to keep them. The
/// graph of the kept epoch is returned in [`LocalStats::refined_graph`] when it changed.
pub fn train_local_with(
    mut model: NodeClassifier,
    data: &ClientTensors,
    cfg: &TrainConfig,
    loss_fn: &dyn Loss,
    optim: &mut ModuleOptimizer,
    rng: &mut Rng,
    refine: &mut dyn FnMut(&NodeClassifier, &ClientTensors) -> Option<ClientTensors>,
) -> (NodeClassifier, LocalStats) {
    let mut stats = LocalStats::default();
    let mut selector = Selector::new(cfg.selection, data.label_keep);
    let mut best: Option<(NodeClassifier, Option<GraphTensors>)> = None;
    let mut current: Option<ClientTensors> = None;
    let wants_val_acc = matches!(cfg.selection, Selection::Lpgnn | Selection::ValAcc);
    for epoch in 0..cfg.epochs {
        let d = current.as_ref().unwrap_or(data);
        let out = model.forward_with(&d.input, &d.graph, d.input_kprop, Some(&mut *rng));
        let Some(loss) = loss_fn.loss(&out, d) else { break };
        stats.epoch_losses.push(f64::from(loss.clone().into_scalar::<f32>()));
        // LPGNN measures train accuracy on the training pass itself (dropout on).
        let train_acc = (cfg.selection == Selection::Lpgnn).then(|| accuracy(&out.logits, &d.train)).flatten();
        let mut grads = GradientsParams::from_grads(loss.backward(), &model);
        if let Some(max) = cfg.grad_clip_norm {
            clip_global_norm(&mut grads, &model, max);
        }
        if let Some(head) = &model.head {
            let g = stats.head_gradient.get_or_insert_with(HeadSteps::default);
            g.add(grads.get::<2>(head.weight.id), head.bias.as_ref().and_then(|b| grads.get::<1>(b.id)));
        }
        model = optim.step(cfg.lr, model, grads);
        if let Some(next) = refine(&model, d) {
            current = Some(next);
        }
        let d = current.as_ref().unwrap_or(data);
        if cfg.selection != Selection::Last {
            let eval = forward_eval(&model, d);
            let score = EpochScore {
                val_loss: loss_fn.val_loss(&eval, d),
                val_acc: wants_val_acc.then(|| accuracy(&eval.logits, &d.val)).flatten(),
                train_acc,
            };
            if selector.improves(score) {
                best = Some((model.clone(), current.as_ref().map(|c| c.graph.clone())));
                stats.selected_epoch = Some(epoch);
            }
        }
    }
    let (model, graph) = best.unwrap_or((model, current.map(|c| c.graph)));
    stats.refined_graph = graph;
    (model, stats)
}

/// What model selection looks at after one epoch.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct EpochScore {
    pub val_loss: Option<f64>,
    pub val_acc: Option<f64>,
    /// Accuracy on the training pass of the epoch (before its step, dropout on).
    pub train_acc: Option<f64>,
}

/// Keeps the best epoch so far under a [`Selection`] rule.
#[derive(Debug, Clone)]
pub struct Selector {
    rule: Selection,
    /// LPGNN's cap: P[y][y] of the held labels.
    max_acc: f64,
    best: Option<EpochScore>,
}

impl Selector {
    pub fn new(rule: Selection, label_keep: f64) -> Selector {
        Selector { rule, max_acc: label_keep, best: None }
    }

    /// Whether the epoch scored `s` becomes the best one (and remember it if so).
    ///
    /// * `val-loss`: lower validation loss than every earlier epoch.
    /// * `val-acc`: higher validation accuracy than every earlier epoch (the first wins ties).
    /// * `lpgnn` (LPGNN's `trainer.py`): the first epoch; afterwards one with a lower
    ///   validation loss, a higher validation accuracy that stays ≤ P[y][y], and a
    ///   higher train accuracy that stays ≤ 1.05·P[y][y] than the best so far.
    pub fn improves(&mut self, s: EpochScore) -> bool {
        let better = match (self.rule, &self.best) {
            (Selection::Last, _) => false,
            (Selection::ValLoss, None) => s.val_loss.is_some(),
            (Selection::ValLoss, Some(b)) => matches!((s.val_loss, b.val_loss), (Some(v), Some(bv)) if v < bv),
            (Selection::ValAcc, None) => s.val_acc.is_some(),
            (Selection::ValAcc, Some(b)) => matches!((s.val_acc, b.val_acc), (Some(v), Some(bv)) if v > bv),
            (Selection::Lpgnn, None) => true,
            (Selection::Lpgnn, Some(b)) => {
                let lower = |a: Option<f64>, b: Option<f64>| matches!((a, b), (Some(a), Some(b)) if a < b);
                let capped = |a: Option<f64>, b: Option<f64>, cap: f64| matches!((a, b), (Some(a), Some(b)) if b < a && a <= cap);
                lower(s.val_loss, b.val_loss)
                    && capped(s.val_acc, b.val_acc, self.max_acc)
                    && capped(s.train_acc, b.train_acc, 1.05 * self.max_acc)
            }
        };
        if better {
            self.best = Some(s);
        }
        better
    }
}

/// One round of one client's local training, as a [`LocalTrainer`] sees it.
pub struct TrainCall<'a> {
    pub round: usize,
    /// The client's host data, as `data` holds it on the device.
    pub local: &'a LocalData,
    pub data: &'a ClientTensors,
    pub cfg: &'a TrainConfig,
    pub loss: &'a dyn Loss,
    pub optim: &'a mut ModuleOptimizer,
    /// The client's stream for this round's training.
    pub rng: &'a mut Rng,
}

/// The rest of a client's trainer chain: what a wrapping trainer calls to train as the
/// trainers after it (ending in [`FullBatch`]) would.
pub trait NextTrainer {
    fn train(&self, model: NodeClassifier, call: &mut TrainCall<'_>) -> Result<(NodeClassifier, LocalStats)>;
}

/// How a client runs the local epochs of one round, as middleware (Flower's client mods):
/// a trainer gets the model and the rest of the chain, `next`. One that *wraps* calls
/// `next` and works on what comes back (e.g. clipping and noising the update); one that
/// *replaces* the loop (DP-GNN's per-node DP-SGD, Solitude's calibration) runs its own
/// and ignores `next`. A chain holds any number of wrapping trainers and at most one
/// replacing one, which goes last; [`FullBatch`] ends every chain.
pub trait LocalTrainer: Send + Sync {
    fn name(&self) -> &str;

    /// Whether the trainer calls `next` (wraps) rather than running its own loop.
    fn wraps(&self) -> bool {
        false
    }

    /// Get ready to train the client it was built for, on `data` (its data after every
    /// data transform), before round 1: e.g. plan its privacy budget and refuse a
    /// scenario that would overspend it. `rng` is the client's own stream.
    fn prepare(&self, _data: &LocalData, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }

    /// Train `model` (on an autodiff device) for one round.
    fn train(&self, model: NodeClassifier, call: &mut TrainCall<'_>, next: &dyn NextTrainer) -> Result<(NodeClassifier, LocalStats)>;

    /// Privacy the client spent after it trained `rounds` rounds with this trainer, for
    /// trainers that account for it (DP-SGD); `None` otherwise.
    fn privacy_spent(&self, _rounds: usize) -> Option<PrivacyCost> {
        None
    }
}

impl<T: LocalTrainer + ?Sized> LocalTrainer for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn wraps(&self) -> bool {
        (**self).wraps()
    }
    fn prepare(&self, data: &LocalData, rng: &mut Rng) -> Result<()> {
        (**self).prepare(data, rng)
    }
    fn train(&self, model: NodeClassifier, call: &mut TrainCall<'_>, next: &dyn NextTrainer) -> Result<(NodeClassifier, LocalStats)> {
        (**self).train(model, call, next)
    }
    fn privacy_spent(&self, rounds: usize) -> Option<PrivacyCost> {
        (**self).privacy_spent(rounds)
    }
}

/// A chain of trainers, outermost first, run as one: each gets the rest as its `next`.
pub struct TrainerChain<'a>(pub &'a [&'a dyn LocalTrainer]);

impl NextTrainer for TrainerChain<'_> {
    fn train(&self, model: NodeClassifier, call: &mut TrainCall<'_>) -> Result<(NodeClassifier, LocalStats)> {
        match self.0.split_first() {
            Some((first, rest)) => first.train(model, call, &TrainerChain(rest)),
            None => FullBatch.train(model, call, &TrainerChain(&[])),
        }
    }
}

/// The standard loop: [`train_local`].
#[derive(Debug, Clone, Copy, Default)]
pub struct FullBatch;

impl LocalTrainer for FullBatch {
    fn name(&self) -> &str {
        "full-batch"
    }

    fn train(&self, model: NodeClassifier, call: &mut TrainCall<'_>, _next: &dyn NextTrainer) -> Result<(NodeClassifier, LocalStats)> {
        Ok(train_local(model, call.data, call.cfg, call.loss, call.optim, call.rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Graph;

    fn score(val_loss: f64, val_acc: f64, train_acc: f64) -> EpochScore {
        EpochScore { val_loss: Some(val_loss), val_acc: Some(val_acc), train_acc: Some(train_acc) }
    }

    /// LPGNN's rule on a scripted run with keep probability 0.5 (caps: val 0.5, train
    /// 0.525): which epochs become "best".
    #[test]
    fn lpgnn_selection_rule_on_a_scripted_run() {
        let mut s = Selector::new(Selection::Lpgnn, 0.5);
        let epochs = [
            (score(2.0, 0.10, 0.10), true),   // the first epoch is always kept
            (score(1.9, 0.20, 0.20), true),   // all three improve
            (score(1.8, 0.20, 0.30), false),  // val acc not strictly higher
            (score(1.7, 0.30, 0.20), false),  // train acc lower than the best's (0.20 is not > 0.20)
            (score(1.95, 0.30, 0.30), false), // val loss higher
            (score(1.6, 0.55, 0.30), false),  // val acc above the cap 0.5
            (score(1.6, 0.50, 0.53), false),  // train acc above 1.05 · 0.5
            (score(1.6, 0.50, 0.525), true),  // both exactly at their caps
            (score(1.5, 0.45, 0.50), false),  // val acc dropped
        ];
        for (i, (e, want)) in epochs.iter().enumerate() {
            assert_eq!(s.improves(*e), *want, "epoch {i}");
        }
        let mut v = Selector::new(Selection::ValLoss, 1.0);
        let picks: Vec<bool> = [3.0, 2.0, 2.5, 1.0, 1.0].iter().map(|&l| v.improves(score(l, 0.0, 0.0))).collect();
        assert_eq!(picks, [true, true, false, true, false]);
        assert!(!Selector::new(Selection::Last, 1.0).improves(score(0.0, 1.0, 1.0)));
        let mut a = Selector::new(Selection::ValAcc, 1.0);
        let picks: Vec<bool> = [0.3, 0.5, 0.5, 0.4, 0.6].iter().map(|&acc| a.improves(score(9.0, acc, 0.0))).collect();
        assert_eq!(picks, [true, true, false, false, true]);
    }

    /// PyTorch's `clip_grad_norm_`: one factor max/(‖g‖ + 1e-6) on every gradient when
    /// the global norm exceeds `max`, nothing otherwise.
    #[test]
    fn gradients_are_clipped_by_their_global_norm() {
        use crate::model::config::{Arch, ModelConfig};
        use crate::model::input::{InputLayout, NodeInput};
        use crate::model::tests::support::{f64_ad, sparse_features, tiny_graph, values};
        let opts = f64_ad();
        let g = GraphTensors::new(&tiny_graph(), opts.clone()).unwrap();
        let x = NodeInput::with_layout(&sparse_features(3, 6, 10, 0.5), InputLayout::Sparse, opts.clone());
        let model = ModelConfig { arch: Arch::Sage, head: true, dropout: 0.0, ..ModelConfig::default() }.init(10, 3, 7, opts).unwrap();
        let grads = || GradientsParams::from_grads(model.forward(&x, &g).logits.powf_scalar(2.0).sum().backward(), &model);
        // Every gradient on the host, in visiting order.
        struct Host<'a>(&'a GradientsParams, Vec<Vec<f64>>);
        impl ModuleVisitor for Host<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                self.1.push(values(self.0.get::<D>(param.id).expect("a gradient per parameter")));
            }
        }
        let host = |gp: &GradientsParams| {
            let mut h = Host(gp, Vec::new());
            model.visit(&mut h);
            h.1
        };
        let before = host(&grads());
        assert!(before.len() >= 5, "SAGE 2 layers + head: {}", before.len());
        let norm = before.iter().flatten().map(|v| v * v).sum::<f64>().sqrt();
        assert!(norm > 0.0);

        let mut loose = grads();
        assert!((clip_global_norm(&mut loose, &model, 2.0 * norm) - norm).abs() < 1e-9 * norm);
        assert_eq!(host(&loose), before, "below the bound nothing changes");

        let mut tight = grads();
        clip_global_norm(&mut tight, &model, norm / 4.0);
        let after = host(&tight);
        let coef = (norm / 4.0) / (norm + 1e-6);
        for (a, b) in after.iter().flatten().zip(before.iter().flatten()) {
            assert!((a - coef * b).abs() <= 1e-12 * norm, "{a} vs {coef}·{b}");
        }
        let clipped = after.iter().flatten().map(|v| v * v).sum::<f64>().sqrt();
        assert!((clipped - norm / 4.0).abs() < 1e-6 * norm, "{clipped} vs {}", norm / 4.0);
    }

    #[test]
    fn label_transitions_compose_by_matrix_product() {
        let (graph, _) = Graph::from_edges(2, [(0, 1)], "t").unwrap();
        let features = Features::Dense(crate::data::DenseMatrix::zeros(2, 1));
        let mut d = LocalData {
            graph,
            features,
            labels: vec![Some(0), Some(1)],
            roles: vec![Role::Train; 2],
            classes: 2,
            label_transition: None,
            feature_kprop: 0,
        };
        d.compose_label_transition(&[0.75, 0.25, 0.25, 0.75]);
        assert_eq!(d.label_transition.as_deref(), Some(&[0.75, 0.25, 0.25, 0.75][..]));
        d.compose_label_transition(&[0.5, 0.5, 0.0, 1.0]);
        // [[.75, .25], [.25, .75]] · [[.5, .5], [0, 1]] = [[.375, .625], [.125, .875]]
        assert_eq!(d.label_transition.as_deref(), Some(&[0.375, 0.625, 0.125, 0.875][..]));
    }
}

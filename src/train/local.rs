//! The full-batch epoch loop: the optimizer, the epochs, and model selection.

use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::Tensor;

use super::{
    ClientTensors, HeadSteps, Loss, OptimizerKind, Selection, TrainConfig, accuracy, clip_global_norm, forward_eval_from, forward_train,
};
use crate::data::Role;
use crate::model::{GraphTensors, NodeClassifier};
use crate::rng::Rng;

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

/// A fresh optimizer as `cfg` describes it.
pub fn optimizer(cfg: &TrainConfig) -> ModuleOptimizer {
    let wd = (cfg.weight_decay > 0.0).then(|| WeightDecayConfig::new(cfg.weight_decay as f32));
    match cfg.optimizer {
        OptimizerKind::Sgd => {
            // PyTorch's SGD: no dampening, no Nesterov.
            let momentum =
                (cfg.momentum > 0.0).then(|| MomentumConfig::new().with_momentum(cfg.momentum).with_dampening(0.0).with_nesterov(false));
            if wd.is_none() && momentum.is_none() {
                return ModuleOptimizer::from(super::sgd::PlainSgd);
            }
            SgdConfig::new().with_weight_decay(wd).with_momentum(momentum).init()
        }
        // PyTorch's Adam defaults (ε = 1e-8, L2 weight decay added to the gradient).
        OptimizerKind::Adam => ModuleOptimizer::from(super::adam::Adam::new((cfg.weight_decay > 0.0).then_some(cfg.weight_decay as f32))),
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
    train_local_with(model, data, cfg, loss_fn, optim, rng, None)
}

/// A client's refinement of its graph after each model step (Solitude's learned
/// adjacency): given the stepped model, the epoch's tensors and the model's
/// [`first_product`](NodeClassifier::first_product) of their input (detached: it is
/// shared with the forwards that follow, and nothing here differentiates it), the graph
/// the next epoch and this epoch's model selection use, or `None` to keep it.
pub type Refine<'a> = &'a mut dyn FnMut(&NodeClassifier, &ClientTensors, Tensor<2>) -> Option<GraphTensors>;

/// [`train_local`] where the client may refine its graph after every model step (see
/// [`Refine`]). The graph of the kept epoch is returned in
/// [`LocalStats::refined_graph`] when it changed.
pub fn train_local_with(
    mut model: NodeClassifier,
    data: &ClientTensors,
    cfg: &TrainConfig,
    loss_fn: &dyn Loss,
    optim: &mut ModuleOptimizer,
    rng: &mut Rng,
    mut refine: Option<Refine<'_>>,
) -> (NodeClassifier, LocalStats) {
    let mut stats = LocalStats::default();
    let mut selector = Selector::new(cfg.selection, data.label_keep);
    let mut best: Option<(NodeClassifier, Option<GraphTensors>)> = None;
    let mut current: Option<ClientTensors> = None;
    let wants_val_acc = matches!(cfg.selection, Selection::Lpgnn | Selection::ValAcc);
    // The first layer's X·W under the current weights, computed once between two steps
    // for every forward that needs it: the refinement's, model selection's and the next
    // epoch's training forward (kept tracked for that one's backward). On dense features
    // it is most of an epoch; sharing it changes no value.
    let mut first: Option<Tensor<2>> = None;
    let shared =
        |first: &mut Option<Tensor<2>>, model: &NodeClassifier| first.get_or_insert_with(|| model.first_product(&data.input)).clone();
    for epoch in 0..cfg.epochs {
        let d = current.as_ref().unwrap_or(data);
        let Some(out) = forward_train(&model, d, first.take(), &mut *rng) else { break };
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
        if let Some(refine) = refine.as_mut()
            && let Some(graph) = refine(&model, d, shared(&mut first, &model).detach())
        {
            current = Some(ClientTensors { graph, ..data.clone() });
        }
        let d = current.as_ref().unwrap_or(data);
        if cfg.selection != Selection::Last {
            let eval = forward_eval_from(&model, d, Role::Val, Some(shared(&mut first, &model)));
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

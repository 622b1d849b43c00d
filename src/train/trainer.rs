//! The local-trainer seam: a client's trainers as middleware around [`FullBatch`].

use burn::optim::ModuleOptimizer;

use super::{ClientTensors, LocalData, LocalStats, Loss, TrainConfig, train_local};
use crate::error::Result;
use crate::model::NodeClassifier;
use crate::privacy::PrivacyCost;
use crate::rng::Rng;

/// One round of one client's local training, as a [`LocalTrainer`] sees it.
///
/// It carries no round number: a round's training follows from the model sent, the
/// client's state and `rng` alone, so a round that draws nothing from `rng` gives the
/// same model in any round (the federation relies on it, see `Federation::run_with`).
pub struct TrainCall<'a> {
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

//! The client-side seam: what a client does to its data once before training (local
//! differential privacy on features, labels or edges) and how it trains (DP-SGD
//! replaces the step). Defenses implement [`ClientTransform`]; the identity is the
//! default.

use burn::optim::ModuleOptimizer;

use crate::error::Result;
use crate::model::NodeClassifier;
use crate::rng::Rng;
use crate::scenario::TrainConfig;
use crate::train::{self, ClientTensors, LocalData, LocalStats, Loss};

pub trait ClientTransform: Send + Sync {
    fn name(&self) -> &str;

    /// Transform the client's data once, before any training: whatever leaves the
    /// client afterwards is computed from the transformed data only.
    fn transform_data(&self, _data: &mut LocalData, _rng: &mut Rng) -> Result<()> {
        Ok(())
    }

    /// The local training of one round; the standard full-batch loop by default.
    fn train_local(
        &self,
        model: NodeClassifier,
        data: &ClientTensors,
        cfg: &TrainConfig,
        loss: &dyn Loss,
        optim: &mut ModuleOptimizer,
        rng: &mut Rng,
    ) -> (NodeClassifier, LocalStats) {
        train::train_local(model, data, cfg, loss, optim, rng)
    }
}

/// No defense.
#[derive(Debug, Clone, Copy, Default)]
pub struct Identity;

impl ClientTransform for Identity {
    fn name(&self) -> &str {
        "none"
    }
}

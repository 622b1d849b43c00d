//! The `train:` section of a scenario: how a client trains locally.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    #[default]
    Sgd,
    Adam,
}

/// Which epoch's model a client keeps at the end of a round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Selection {
    /// The last epoch's.
    #[default]
    Last,
    /// The epoch with the lowest validation loss.
    ValLoss,
    /// The epoch with the highest validation accuracy (RGNN's rule; its validation
    /// labels are the reconstructed noisy ones).
    ValAcc,
    /// LPGNN's rule (its `trainer.py`): lower validation loss, and validation and train
    /// accuracy both higher but capped by what the noisy labels allow.
    Lpgnn,
}

/// Local (client-side) training.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub momentum: f64,
    pub weight_decay: f64,
    /// Full-batch epochs per round (E).
    pub epochs: usize,
    /// Which epoch's model each client keeps, per round: `last`, `val-loss` (lowest
    /// validation loss), `val-acc` (highest validation accuracy) or `lpgnn` (LPGNN's published rule).
    pub selection: Selection,
    /// Keep each client's optimizer state (momentum, Adam moments) from one round to
    /// the next instead of starting fresh; with one client (centralized) this is plain
    /// uninterrupted training.
    pub keep_optimizer_state: bool,
    /// Rescale each step's gradients so that their global L2 norm (over all
    /// parameters) is at most this, as PyTorch's `clip_grad_norm_` (RGNN's code clips
    /// at 5). Absent: no clipping.
    pub grad_clip_norm: Option<f64>,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            optimizer: OptimizerKind::Sgd,
            lr: 0.1,
            momentum: 0.0,
            weight_decay: 5e-4,
            epochs: 5,
            selection: Selection::Last,
            keep_optimizer_state: false,
            grad_clip_norm: None,
        }
    }
}

impl TrainConfig {
    /// Whether the optimizer keeps state from step to step (Adam's moments, SGD's
    /// momentum): plain SGD keeps none, and its update is a multiple of the gradient.
    pub fn optimizer_has_state(&self) -> bool {
        self.optimizer != OptimizerKind::Sgd || self.momentum > 0.0
    }

    pub fn validate(&self) -> Result<()> {
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return Err(Error::param("train.lr", format!("{} must be a finite number > 0", self.lr)));
        }
        if !(0.0..1.0).contains(&self.momentum) {
            return Err(Error::param("train.momentum", format!("{} is not in [0, 1)", self.momentum)));
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return Err(Error::param("train.weight_decay", format!("{} must be a finite number ≥ 0", self.weight_decay)));
        }
        // As federation.rounds: far above any study's (LPGNN's 500), and 10¹² epochs in
        // one round ran for ever, past even a SIGTERM (it waits for the round boundary).
        if !(1..=MAX_EPOCHS).contains(&self.epochs) {
            return Err(Error::param("train.epochs", format!("{} is not allowed; allowed 1..={MAX_EPOCHS}", self.epochs)));
        }
        if let Some(c) = self.grad_clip_norm.filter(|c| !(*c > 0.0 && c.is_finite())) {
            return Err(Error::param(
                "train.grad_clip_norm",
                format!("{c} is not allowed; allowed: a finite norm > 0, or absent for no clipping"),
            ));
        }
        Ok(())
    }
}

/// The most local epochs a round may have.
pub const MAX_EPOCHS: usize = 1_000_000;

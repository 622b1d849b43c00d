//! The `model:` section of a scenario: which GNN, how deep and wide, and its checks.

use serde::{Deserialize, Serialize};

use super::activation::Activation;
use crate::error::{Error, Result};

/// GNN layer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    Gcn,
    Sage,
    Gat,
}

/// Node classifier hyper-parameters (YAML `model:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// gcn | sage | gat.
    pub arch: Arch,
    /// Number of GNN layers, 1..=3.
    pub layers: usize,
    /// Width of hidden layers (per head for GAT).
    pub hidden: usize,
    /// GAT heads in hidden layers (the layer producing logits or feeding the head uses 1).
    pub heads: usize,
    pub activation: Activation,
    /// Dropout between layers (including before the head), in [0, 1).
    pub dropout: f64,
    /// GAT attention-coefficient dropout, in [0, 1).
    pub attention_dropout: f64,
    /// KProp rounds applied to the input features (0 = none).
    pub kprop_steps: usize,
    /// Fully connected `Linear(hidden → classes)` after the GNN layers (EC-LDA).
    pub head: bool,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            arch: Arch::Gcn,
            layers: 2,
            hidden: 16,
            heads: 8,
            activation: Activation::Relu,
            dropout: 0.5,
            attention_dropout: 0.0,
            kprop_steps: 0,
            head: false,
        }
    }
}

impl ModelConfig {
    pub fn validate(&self) -> Result<()> {
        if !(1..=3).contains(&self.layers) {
            return Err(Error::param("model.layers", format!("{} is not allowed; allowed 1..=3", self.layers)));
        }
        if self.hidden == 0 {
            return Err(Error::param("model.hidden", "must be at least 1"));
        }
        if self.heads == 0 {
            return Err(Error::param("model.heads", "must be at least 1"));
        }
        for (name, p) in [("model.dropout", self.dropout), ("model.attention_dropout", self.attention_dropout)] {
            if !(0.0..1.0).contains(&p) {
                return Err(Error::param(name, format!("{p} is not allowed; allowed [0, 1)")));
            }
        }
        Ok(())
    }
}

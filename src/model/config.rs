//! The `model:` section of a scenario: which GNN, how deep and wide, and its checks.

use burn::tensor::{Tensor, TensorCreationOptions};
use serde::{Deserialize, Serialize};

use super::classifier::NodeClassifier;
use crate::error::{Error, Result};

/// GNN layer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    Gcn,
    Sage,
    Gat,
}

/// Non-linearity after every GNN layer except the one producing logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    Relu,
    /// LPGNN's choice.
    Selu,
}

impl Activation {
    pub fn apply(self, x: Tensor<2>) -> Tensor<2> {
        match self {
            Activation::Relu => burn::tensor::activation::relu(x),
            Activation::Selu => selu(x),
        }
    }
}

/// SELU written so that no branch ever evaluates `exp` of a large positive number:
/// Burn's `selu` computes exp(x) everywhere and masks it, and for large x the masked
/// branch's gradient becomes 0·∞ = NaN. Here γ·(relu(x) + α·(exp(min(x, 0)) − 1)).
fn selu(x: Tensor<2>) -> Tensor<2> {
    const ALPHA: f64 = 1.673_263_242_354_377_3;
    const GAMMA: f64 = 1.050_700_987_355_480_5;
    let negative = x.clone().clamp_max(0.0).exp().sub_scalar(1.0).mul_scalar(ALPHA);
    (burn::tensor::activation::relu(x) + negative).mul_scalar(GAMMA)
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

    /// A freshly initialised classifier for `in_dim` input features and `classes`
    /// outputs. Initial weights come from `seed` alone (drawn on the host, see
    /// `init.rs`), so every backend and thread count gets the same model; `options` is
    /// the device, e.g. `&device` or `(&device, DType::F64)`.
    pub fn init(
        &self,
        in_dim: usize,
        classes: usize,
        seed: u64,
        options: impl Into<TensorCreationOptions>,
    ) -> Result<NodeClassifier> {
        self.validate()?;
        if in_dim == 0 {
            return Err(Error::param("model", "the input has no feature columns"));
        }
        if classes == 0 {
            return Err(Error::param("model", "there are no classes to predict"));
        }
        Ok(NodeClassifier::new(self, in_dim, classes, seed, options.into()))
    }
}

//! The non-linearity between GNN layers.

use burn::tensor::Tensor;
use serde::{Deserialize, Serialize};

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

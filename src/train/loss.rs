//! Training objectives: the [`Loss`] a defense may replace, and cross-entropy.

use burn::tensor::activation::log_softmax;
use burn::tensor::{Int, Tensor};

use super::{ClientTensors, evaluate_set};
use crate::model::{Output, select_rows};

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
    let logp = log_softmax(select_rows(logits, idx), 1);
    logp.gather(1, y.clone().unsqueeze_dim(1)).mean().neg()
}

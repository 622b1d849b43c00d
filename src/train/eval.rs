//! Evaluation on a node set: accuracy and loss without dropout or autodiff graph.

use burn::module::Module;
use burn::tensor::Tensor;
use burn::tensor::activation::log_softmax;

use super::{ClientTensors, NodeSet};
use crate::model::{NodeClassifier, Output};

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

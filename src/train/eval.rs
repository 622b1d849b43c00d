//! Evaluation on a node set: accuracy and loss without dropout or autodiff graph.

use burn::module::Module;
use burn::tensor::Tensor;
use burn::tensor::activation::{log_softmax, softmax};

use super::{ClientTensors, NodeSet};
use crate::data::Role;
use crate::model::{NodeClassifier, Output};
use crate::rng::Rng;

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
    model.valid().forward_with(&data.input, &data.graph, None)
}

/// The evaluation forward pass whose rows `role`'s set indexes: the nodes', or in link
/// prediction the validation pairs over the training edges and the test pairs over the
/// training and validation edges.
pub fn forward_eval_on(model: &NodeClassifier, data: &ClientTensors, role: Role) -> Output {
    forward_eval_from(model, data, role, None)
}

/// [`forward_eval_on`] given the model's [`first_product`](NodeClassifier::first_product)
/// of `data.input` (`None`: computed here).
pub fn forward_eval_from(model: &NodeClassifier, data: &ClientTensors, role: Role, first: Option<Tensor<2>>) -> Output {
    let first = first.map(Tensor::without_autodiff);
    let pairs = data.link.as_ref().and_then(|l| match role {
        Role::Val => l.val.as_ref().map(|p| (p, &data.graph)),
        Role::Test => l.test.as_ref().map(|p| (p, &l.test_graph)),
        _ => None,
    });
    match pairs {
        Some((p, graph)) => model.valid().forward_pairs(&data.input, first, graph, None, p),
        None => model.valid().forward_from(&data.input, first, &data.graph, None),
    }
}

/// The training forward pass of one epoch (dropout from `rng`): every node, or in link
/// prediction the training positives and negatives drawn afresh from `rng` (`None`
/// without any). `first`: the model's [`first_product`](NodeClassifier::first_product)
/// of `data.input`, when already computed.
pub fn forward_train(model: &NodeClassifier, data: &ClientTensors, first: Option<Tensor<2>>, rng: &mut Rng) -> Option<Output> {
    match &data.link {
        None => Some(model.forward_from(&data.input, first, &data.graph, Some(rng))),
        Some(l) => {
            let pairs = l.train_pairs(rng)?;
            Some(model.forward_pairs(&data.input, first, &data.graph, Some(rng), &pairs))
        }
    }
}

/// Scores with their labels: (score, positive).
pub type Scores = Vec<(f64, bool)>;

/// Each row of `set`: the probability the model gives class 1 (a link), and the label.
pub fn positive_scores(logits: &Tensor<2>, set: &NodeSet) -> Scores {
    let Some((idx, y)) = &set.index else { return Vec::new() };
    let p = softmax(logits.clone().select(0, idx.clone()), 1).slice_dim(1, 1..2).into_data().convert::<f64>();
    let y = y.clone().into_data().convert::<i64>();
    p.iter::<f64>().zip(y.iter::<i64>()).map(|(p, y)| (p, y == 1)).collect()
}

/// The area under the ROC curve of `(score, positive)` pairs: the chance a random
/// positive outscores a random negative, ties counting half (Mann–Whitney with mid
/// ranks); `None` without both classes.
pub fn auc_roc(scores: &[(f64, bool)]) -> Option<f64> {
    let positives = scores.iter().filter(|s| s.1).count();
    let negatives = scores.len() - positives;
    if positives == 0 || negatives == 0 {
        return None;
    }
    let mut sorted: Vec<(f64, bool)> = scores.to_vec();
    sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut rank_sum = 0.0;
    let mut i = 0;
    while i < sorted.len() {
        let j = (i..sorted.len()).find(|&j| sorted[j].0 != sorted[i].0).unwrap_or(sorted.len());
        // Ranks i+1 ..= j share their mean.
        let mid = (i + 1 + j) as f64 / 2.0;
        rank_sum += mid * sorted[i..j].iter().filter(|s| s.1).count() as f64;
        i = j;
    }
    let (p, n) = (positives as f64, negatives as f64);
    Some((rank_sum - p * (p + 1.0) / 2.0) / (p * n))
}

/// Fraction of `set` whose arg-max logit is the label (`None` for an empty set).
pub fn accuracy(logits: &Tensor<2>, set: &NodeSet) -> Option<f64> {
    let (idx, y) = set.index.as_ref()?;
    let pred = logits.clone().select(0, idx.clone()).argmax(1).squeeze_dim::<1>(1);
    Some(pred.equal(y.clone()).int().sum().into_scalar::<i64>() as f64 / set.len as f64)
}

#[cfg(test)]
mod tests {
    use super::auc_roc;

    /// Exact values: scikit-learn's `roc_auc_score` example, ties counting half, and
    /// the cases without both classes.
    #[test]
    fn auc_is_the_chance_a_positive_outscores_a_negative() {
        let s = |v: &[(f64, bool)]| auc_roc(v);
        // y = [0, 0, 1, 1], scores [0.1, 0.4, 0.35, 0.8] → 0.75.
        assert_eq!(s(&[(0.1, false), (0.4, false), (0.35, true), (0.8, true)]), Some(0.75));
        assert_eq!(s(&[(0.9, true), (0.1, false)]), Some(1.0));
        assert_eq!(s(&[(0.1, true), (0.9, false)]), Some(0.0));
        // Positives {0.5, 0.9}, negatives {0.5, 0.2}: (0.5 + 1 + 1 + 1) / 4, the tie counting half.
        assert_eq!(s(&[(0.5, true), (0.5, false), (0.9, true), (0.2, false)]), Some(0.875));
        assert_eq!(s(&[(0.5, true), (0.7, true)]), None);
        assert_eq!(s(&[]), None);
    }
}

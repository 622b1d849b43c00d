//! Gradients beyond the optimizer step: a linear head's per-step gradients (what a
//! server with gradient access reads) and global-norm clipping.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;

use crate::model::NodeClassifier;

/// A linear head's per-step gradients over one round, as device tensors.
#[derive(Debug, Clone, Default)]
pub struct HeadSteps {
    weight: Vec<Tensor<2>>,
    bias: Vec<Tensor<1>>,
    steps: usize,
}

impl HeadSteps {
    /// Add one step's gradients (either may be absent: a head without bias).
    pub fn add(&mut self, weight: Option<Tensor<2>>, bias: Option<Tensor<1>>) {
        self.weight.extend(weight);
        self.bias.extend(bias);
        self.steps += 1;
    }

    /// The average over the steps, summed on the host in f64 in step order.
    pub fn averaged(&self) -> HeadGradient {
        fn mean<const D: usize>(steps: &[Tensor<D>], n: usize) -> Vec<f64> {
            let mut acc: Vec<f64> = Vec::new();
            for t in steps {
                let values = t.clone().into_data().convert::<f64>().try_into_vec::<f64>().expect("f64 after convert");
                if acc.is_empty() {
                    acc.resize(values.len(), 0.0);
                }
                acc.iter_mut().zip(values).for_each(|(a, v)| *a += v);
            }
            acc.iter_mut().for_each(|v| *v /= n.max(1) as f64);
            acc
        }
        HeadGradient { weight: mean(&self.weight, self.steps), bias: mean(&self.bias, self.steps), steps: self.steps }
    }
}

/// A linear head's loss gradient, averaged over the steps of one round.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct HeadGradient {
    /// `[d_in, classes]` row-major, as Burn's `Linear` stores the weight.
    pub weight: Vec<f64>,
    pub bias: Vec<f64>,
    pub steps: usize,
}

/// Scale `grads` by min(1, max / (‖g‖ + 1e-6)), ‖g‖ the L2 norm of all of `model`'s
/// parameter gradients together — PyTorch's `clip_grad_norm_` (Burn's own clipping
/// acts on each tensor alone). Returns ‖g‖ before clipping.
pub fn clip_global_norm(grads: &mut GradientsParams, model: &NodeClassifier, max: f64) -> f64 {
    struct SquaredNorm<'a> {
        grads: &'a GradientsParams,
        sum: Option<Tensor<1>>,
    }
    impl ModuleVisitor for SquaredNorm<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.get::<D>(param.id) {
                let s = g.powf_scalar(2.0).sum();
                self.sum = Some(match self.sum.take() {
                    Some(acc) => acc + s,
                    None => s,
                });
            }
        }
    }
    struct Scale<'a> {
        grads: &'a mut GradientsParams,
        coef: f64,
    }
    impl ModuleVisitor for Scale<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            if let Some(g) = self.grads.remove::<D>(param.id) {
                self.grads.register(param.id, g.mul_scalar(self.coef));
            }
        }
    }
    let mut norm = SquaredNorm { grads, sum: None };
    model.visit(&mut norm);
    let Some(sum) = norm.sum else { return 0.0 };
    let total = sum.into_scalar::<f64>().sqrt();
    let coef = max / (total + 1e-6);
    if coef < 1.0 {
        model.visit(&mut Scale { grads, coef });
    }
    total
}

//! `ldp-labels`: each client randomizes the labels of its train and validation nodes
//! once, before round 1, with k-ary randomized response (ε-LDP per label); test labels
//! stay clean for scoring. With `forward_correction: true` the client trains on the
//! forward-corrected loss −log (Pᵀ softmax(z))[ỹ] (Patrini et al.), P the RR transition
//! matrix, instead of plain cross-entropy on the noisy labels.

use burn::tensor::activation::softmax;
use burn::tensor::{Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::data::Role;
use crate::error::Result;
use crate::fed::{DataTransform, Defense, LossTransform};
use crate::model::Output;
use crate::privacy::{Epsilon, PrivacyCost, RandomizedResponse};
use crate::rng::Rng;
use crate::train::{ClientTensors, LocalData, Loss};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LdpLabelsConfig {
    /// ε per label; `.inf` leaves the labels as they are.
    pub epsilon: Epsilon,
    /// Train with the forward-corrected loss instead of cross-entropy.
    #[serde(default)]
    pub forward_correction: bool,
}

impl LdpLabelsConfig {
    pub fn build(&self, name: &str) -> Defense {
        let d = Defense::new(name).with_data(RandomizeLabels { epsilon: self.epsilon });
        if self.forward_correction { d.with_loss(ForwardCorrection { epsilon: self.epsilon }) } else { d }
    }
}

struct RandomizeLabels {
    epsilon: Epsilon,
}

impl DataTransform for RandomizeLabels {
    fn apply(&self, _client: usize, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        let rr = RandomizedResponse::new(data.classes, self.epsilon)?;
        for (label, role) in data.labels.iter_mut().zip(&data.roles) {
            if let (Some(y), Role::Train | Role::Val) = (label.as_mut(), role) {
                *y = rr.apply(*y, rng);
            }
        }
        Ok(Some(PrivacyCost {
            defense: String::new(),
            protects: "labels of train and validation nodes: ε-LDP per label (randomized response)".into(),
            epsilon: self.epsilon.value(),
            delta: 0.0,
        }))
    }
}

struct ForwardCorrection {
    epsilon: Epsilon,
}

impl LossTransform for ForwardCorrection {
    /// Replaces the loss built so far: forward correction is itself the cross-entropy
    /// on the noisy labels, corrected.
    fn wrap(&self, _client: usize, data: &LocalData, _inner: Box<dyn Loss>) -> Result<Box<dyn Loss>> {
        let rr = RandomizedResponse::new(data.classes, self.epsilon)?;
        Ok(Box::new(ForwardCorrectedLoss { transition: rr.transition_matrix().iter().map(|&p| p as f32).collect(), classes: data.classes }))
    }
}

/// Mean over train nodes of −log (softmax(z)·P)[ỹ].
pub struct ForwardCorrectedLoss {
    /// P[true][reported], row-major.
    pub transition: Vec<f32>,
    pub classes: usize,
}

impl Loss for ForwardCorrectedLoss {
    fn loss(&self, out: &Output, data: &ClientTensors) -> Option<Tensor<1>> {
        let (idx, y) = data.train.index.as_ref()?;
        let probs = softmax(out.logits.clone().select(0, idx.clone()), 1);
        let k = self.classes;
        let p = Tensor::<2>::from_data(TensorData::new(self.transition.clone(), [k, k]), &probs.device());
        let noisy = probs.matmul(p).clamp_min(1e-12).log();
        Some(noisy.gather(1, y.clone().unsqueeze_dim(1)).mean().neg())
    }
}

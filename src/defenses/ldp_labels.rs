//! `ldp-labels`: each client randomizes the labels of its train and validation nodes
//! once, before round 1, with k-ary randomized response (ε-LDP per label); test labels
//! stay clean for scoring. With `forward_correction: true` the client trains on the
//! forward-corrected loss −log (Pᵀ softmax(z))[ỹ] (Patrini et al.), P the transition
//! matrix of the labels as held (this defense's RR composed onto any earlier one),
//! instead of plain cross-entropy on the noisy labels; it validates the same way.

use burn::tensor::activation::softmax;
use burn::tensor::{Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use crate::data::Role;
use crate::error::Result;
use crate::fed::{ClientContext, DataTransform, Defense, LossTransform};
use crate::model::{Output, select_rows};
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

impl super::DefenseConfig for LdpLabelsConfig {
    fn build(&self, name: &str, _client: &ClientContext) -> Result<Defense> {
        let d = Defense::new(name).with_data(RandomizeLabels { epsilon: self.epsilon });
        Ok(if self.forward_correction { d.with_loss(ForwardCorrection) } else { d })
    }
}

/// k-ary RR on the labels of train and validation nodes, recorded in the client's
/// label transition matrix.
pub struct RandomizeLabels {
    pub epsilon: Epsilon,
}

impl RandomizeLabels {
    /// Randomise `data`'s train and validation labels in place.
    pub fn randomize(&self, data: &mut LocalData, rng: &mut Rng) -> Result<()> {
        if self.epsilon.is_infinite() {
            return Ok(());
        }
        let rr = RandomizedResponse::new(data.classes, self.epsilon)?;
        for (label, role) in data.labels.iter_mut().zip(&data.roles) {
            if let (Some(y), Role::Train | Role::Val) = (label.as_mut(), role) {
                *y = rr.apply(*y, rng);
            }
        }
        data.compose_label_transition(&rr.transition_matrix());
        Ok(())
    }
}

impl DataTransform for RandomizeLabels {
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        self.randomize(data, rng)?;
        Ok(Some(PrivacyCost {
            protects: "labels of train and validation nodes: ε-LDP per label (randomized response)".into(),
            epsilon: self.epsilon.value(),
            delta: 0.0,
            ..Default::default()
        }))
    }
}

struct ForwardCorrection;

impl LossTransform for ForwardCorrection {
    /// Replaces the loss built so far: forward correction is itself the cross-entropy
    /// on the noisy labels, corrected.
    fn wrap(&self, data: &LocalData, _tensors: &ClientTensors, _inner: Box<dyn Loss>) -> Result<Box<dyn Loss>> {
        Ok(Box::new(ForwardCorrectedLoss::of(data)))
    }
}

/// Mean over train nodes of −log (softmax(z)·P)[ỹ]; validation the same on the
/// validation nodes.
pub struct ForwardCorrectedLoss {
    /// P[true][held], row-major (the identity for clean labels).
    pub transition: Vec<f32>,
    pub classes: usize,
}

impl ForwardCorrectedLoss {
    /// For the labels as `data` holds them.
    pub fn of(data: &LocalData) -> ForwardCorrectedLoss {
        let k = data.classes;
        let transition = match &data.label_transition {
            Some(p) => p.iter().map(|&x| x as f32).collect(),
            None => (0..k * k).map(|i| if i / k == i % k { 1.0 } else { 0.0 }).collect(),
        };
        ForwardCorrectedLoss { transition, classes: k }
    }

    /// softmax(logits)·P: the probabilities of the held labels.
    pub fn held_probabilities(&self, logits: Tensor<2>) -> Tensor<2> {
        let k = self.classes;
        let p = Tensor::<2>::from_data(TensorData::new(self.transition.clone(), [k, k]), &logits.device());
        softmax(logits, 1).matmul(p)
    }

    fn mean_nll(&self, logits: &Tensor<2>, idx: &Tensor<1, Int>, y: &Tensor<1, Int>) -> Tensor<1> {
        let held = self.held_probabilities(select_rows(logits.clone(), idx));
        held.clamp_min(1e-12).log().gather(1, y.clone().unsqueeze_dim(1)).mean().neg()
    }
}

impl Loss for ForwardCorrectedLoss {
    fn loss(&self, out: &Output, data: &ClientTensors) -> Option<Tensor<1>> {
        let (idx, y) = data.train.index.as_ref()?;
        Some(self.mean_nll(&out.logits, idx, y))
    }

    fn val_loss(&self, out: &Output, data: &ClientTensors) -> Option<f64> {
        let (idx, y) = data.val.index.as_ref()?;
        Some(f64::from(self.mean_nll(&out.logits, idx, y).into_scalar::<f32>()))
    }
}

//! `lpgnn`: the LPGNN pipeline of Sajadmanesh & Gatica-Perez (CCS'21), as its published
//! code (sisaman/LPGNN `models.py`, `transforms.py`) does it, on each client's own data:
//!
//! 1. once, before round 1: the feature baseline and mechanism of [`ldp_features`]
//!    (ε_x), then k-ary randomized response on train and validation labels (ε_y);
//! 2. in the model: KProp_x — Kx rounds of D^{-1/2} A D^{-1/2} aggregation without
//!    self loops over the client's graph — in front of the GNN (LPGNN caches KProp(X);
//!    the first layer here computes KProp(X·W), the same linear map);
//! 3. the loss ("Drop"): p(y|x) = softmax(GNN), p(y'|x) = p(y|x)·T (forward correction,
//!    T the label transition matrix), p(ỹ|x) = softmax(KProp_Ky(p(y'|x))); targets
//!    ỹ = argmax KProp_Ky(Y') of the one-hot noisy labels with test rows zeroed; loss
//!    the mean over train nodes of −log(p(ỹ|x)[ỹ] + 1e-20). With Ky = 0 the KProp and
//!    its softmax are skipped (the code returns its input unchanged), so the targets
//!    are the noisy labels: forward correction only ("FC"), or plain cross-entropy
//!    ("CE") with `forward_correction: false`.
//! 4. validation: −log(p(y'|x)[y'] + 1e-20) on the noisy validation labels; pair it
//!    with `train.selection: lpgnn` for the published model-selection rule.
//!
//! Privacy: (ε_x + ε_y)-LDP per node.

use burn::tensor::activation::softmax;
use burn::tensor::{Int, Tensor, TensorData};
use serde::{Deserialize, Serialize};

use super::ldp_features::{FeatureSource, LdpFeaturesConfig, Mechanism, PerturbFeatures, default_range};
use super::ldp_labels::{ForwardCorrectedLoss, RandomizeLabels};
use crate::error::Result;
use crate::fed::{ClientContext, DataTransform, Defense, LossTransform};
use crate::model::{Output, kprop, select_rows};
use crate::privacy::{Epsilon, PrivacyCost};
use crate::rng::Rng;
use crate::train::{ClientTensors, LocalData, Loss, NodeSet};

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LpgnnConfig {
    /// ε of the feature mechanism per node; `.inf`: features as they are.
    pub epsilon_x: Epsilon,
    /// ε of randomized response per label; `.inf`: clean labels.
    pub epsilon_y: Epsilon,
    /// KProp rounds on the features (Kx ≥ 0).
    #[serde(default)]
    pub kx: usize,
    /// KProp rounds on the labels (Ky ≥ 0).
    #[serde(default)]
    pub ky: usize,
    /// Multiply p(y|x) by the label transition matrix before the loss.
    #[serde(default = "yes")]
    pub forward_correction: bool,
    #[serde(default)]
    pub mechanism: Mechanism,
    #[serde(default)]
    pub features: FeatureSource,
    /// [α, β] of the feature mechanism.
    #[serde(default = "default_range")]
    pub range: [f64; 2],
}

impl super::DefenseConfig for LpgnnConfig {
    fn cost(&self, run: &super::RunSize) -> super::CostHint {
        // Every epoch kx KProp steps in the first layer and ky in the Drop loss, each a
        // propagation over every arc and node with its autodiff: ≈ 35 ns per arc and
        // node at narrow widths (measured on Cora, SAGE 2 × 16: 10 ms per epoch at
        // kx + ky = 20), plus the width's work at the forward-and-backward rate.
        let width = run.widths / run.layers.max(1) as f64;
        let step = (2.0 * run.edges + run.nodes) * (3.5e-8 + super::training_seconds(width));
        let dense_features = self.features_config().dense_output(run.feature_dim);
        super::CostHint { training_per_epoch: (self.kx + self.ky) as f64 * step, dense_features, ..Default::default() }
    }

    fn build(&self, name: &str, _client: &ClientContext) -> Result<Defense> {
        crate::model::check_kprop_steps(&format!("defense `{name}`: kx"), self.kx)?;
        crate::model::check_kprop_steps(&format!("defense `{name}`: ky"), self.ky)?;
        let data = LpgnnData {
            features: PerturbFeatures::new(name, &self.features_config())?,
            labels: RandomizeLabels { epsilon: self.epsilon_y },
            kx: self.kx,
            epsilon: self.epsilon_x.value() + self.epsilon_y.value(),
        };
        Ok(Defense::new(name).with_data(data).with_loss(DropTransform { ky: self.ky, forward_correction: self.forward_correction }))
    }
}

impl LpgnnConfig {
    /// The feature step as an `ldp-features` defense.
    fn features_config(&self) -> LdpFeaturesConfig {
        LdpFeaturesConfig {
            epsilon: self.epsilon_x,
            mechanism: self.mechanism,
            features: self.features,
            range: self.range,
            delta: crate::privacy::gaussian::DEFAULT_DELTA,
            m: None,
        }
    }

    /// The paper's name of this configuration's label method: `drop` (Ky > 0), `fc`
    /// (forward correction only) or `ce` (neither).
    pub fn method(&self) -> &'static str {
        match (self.ky, self.forward_correction) {
            (k, _) if k > 0 => "drop",
            (_, true) => "fc",
            (_, false) => "ce",
        }
    }
}

struct LpgnnData {
    features: PerturbFeatures,
    labels: RandomizeLabels,
    kx: usize,
    epsilon: f64,
}

impl DataTransform for LpgnnData {
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        // LPGNN's order: feature baseline and mechanism, then labels.
        self.features.perturb(data, rng)?;
        self.labels.randomize(data, rng)?;
        data.feature_kprop += self.kx;
        Ok(Some(PrivacyCost {
            protects: "node features and the labels of train and validation nodes: ε-LDP per node (ε = ε_x + ε_y)".into(),
            epsilon: self.epsilon,
            delta: 0.0,
            ..Default::default()
        }))
    }
}

/// The Drop loss as a loss transform (Solitude's label smoothing reuses it).
pub struct DropTransform {
    pub ky: usize,
    pub forward_correction: bool,
}

impl LossTransform for DropTransform {
    /// Replaces the loss built so far (the Drop loss is itself a cross-entropy).
    fn wrap(&self, data: &LocalData, tensors: &ClientTensors, _inner: Box<dyn Loss>) -> Result<Box<dyn Loss>> {
        let correction = self.forward_correction.then(|| ForwardCorrectedLoss::of(data));
        Ok(Box::new(DropLoss::new(self.ky, correction, data, tensors)))
    }
}

/// LPGNN's training and validation objective (module docs, steps 3–4).
pub struct DropLoss {
    ky: usize,
    /// `None`: no forward correction (T = I).
    correction: Option<ForwardCorrectedLoss>,
    /// ỹ of the train nodes (Ky > 0; `None` without train nodes), propagated over the
    /// graph as reported: a learned adjacency (Solitude's calibration) does not move
    /// them, and a client resumed from a checkpoint holds the same ones.
    targets: Option<Tensor<1, Int>>,
}

impl DropLoss {
    fn new(ky: usize, correction: Option<ForwardCorrectedLoss>, data: &LocalData, tensors: &ClientTensors) -> DropLoss {
        let targets = tensors.train.index.as_ref().filter(|_| ky > 0).map(|(idx, _)| {
            let (n, classes) = (data.graph.num_nodes(), data.classes);
            let y = Tensor::<2>::from_data(TensorData::new(data.held_one_hot(), [n, classes]), &idx.device());
            // softmax does not move the arg-max: skipped.
            kprop(y, &tensors.graph, ky).select(0, idx.clone()).argmax(1).squeeze_dim::<1>(1)
        });
        DropLoss { ky, correction, targets }
    }

    /// p(y'|x) = softmax(logits)·T.
    fn held_probabilities(&self, logits: Tensor<2>) -> Tensor<2> {
        match &self.correction {
            Some(c) => c.held_probabilities(logits),
            None => softmax(logits, 1),
        }
    }

    /// ỹ for the train nodes: the held labels with Ky = 0, else argmax KProp_Ky(Y').
    fn targets(&self, train: &NodeSet) -> Option<Tensor<1, Int>> {
        let (_, y) = train.index.as_ref()?;
        if self.ky == 0 { Some(y.clone()) } else { self.targets.clone() }
    }
}

/// Mean over `idx` of −log(p[idx][y] + 1e-20).
fn nll(p: Tensor<2>, idx: &Tensor<1, Int>, y: Tensor<1, Int>) -> Tensor<1> {
    select_rows(p, idx).add_scalar(1e-20).log().gather(1, y.unsqueeze_dim(1)).mean().neg()
}

impl Loss for DropLoss {
    fn loss(&self, out: &Output, data: &ClientTensors) -> Option<Tensor<1>> {
        let targets = self.targets(&data.train)?;
        let (idx, _) = data.train.index.as_ref()?;
        let p = self.held_probabilities(out.logits.clone());
        let p = if self.ky > 0 { softmax(kprop(p, &data.graph, self.ky), 1) } else { p };
        Some(nll(p, idx, targets))
    }

    fn val_loss(&self, out: &Output, data: &ClientTensors) -> Option<f64> {
        let (idx, y) = data.val.index.as_ref()?;
        let p = self.held_probabilities(out.logits.clone());
        Some(f64::from(nll(p, idx, y.clone()).into_scalar::<f32>()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseMatrix, Features, Graph, Role};
    use burn::tensor::Device;

    /// Star 0–{1, 2, 3} plus the edge 3–4: targets of the train nodes by hand.
    #[test]
    fn drop_targets_are_the_argmax_of_propagated_noisy_labels() {
        let (graph, _) = Graph::from_edges(5, [(0, 1), (0, 2), (0, 3), (3, 4)], "t").unwrap();
        let data = LocalData {
            graph,
            features: Features::Dense(DenseMatrix::zeros(5, 1)),
            labels: vec![Some(2), Some(1), Some(1), Some(0), Some(2)],
            roles: vec![Role::Train, Role::Train, Role::Val, Role::Train, Role::Test],
            classes: 3,
            label_transition: None,
            feature_kprop: 0,
            link: None,
        };
        let device = Device::flex();
        let tensors = ClientTensors::new(&data, 4, &device).unwrap();
        let ints = |t: Tensor<1, Int>| t.into_data().convert::<i64>().try_into_vec::<i64>().unwrap();
        let targets = |ky| ints(DropLoss::new(ky, None, &data, &tensors).targets(&tensors.train).unwrap());
        // Ky = 0: the held labels of train nodes 0, 1, 3.
        assert_eq!(targets(0), vec![2, 1, 0]);
        // Ky = 1 (degrees 3, 1, 1, 2, 1; test node 4's label is hidden):
        // node 0 ← (y1 + y2 + y3)/√(3·d) = class 1 twice, class 0 once → 1;
        // node 1 ← y0/√3 → 2; node 3 ← y0/√6 + y4 (hidden) → 2.
        assert_eq!(targets(1), vec![1, 2, 2]);

        // A learned adjacency that drops 1 → 0 and 2 → 0 (the first two arcs, CSR order)
        // would make node 0's target class 0; the targets stay those of the reported
        // graph, whichever graph the loss first sees (a resumed client first sees the
        // learned one).
        let mut w = vec![1.0f32; tensors.graph.edges().len()];
        w[..2].fill(0.0);
        let learned = ClientTensors {
            graph: tensors.graph.with_edge_weights(Tensor::from_data(TensorData::new(w, [tensors.graph.edges().len(), 1]), &device)),
            ..tensors.clone()
        };
        let out = Output { logits: Tensor::from_data(TensorData::new(vec![0.0f32, 1.0, 2.0, 2.0, 0.0, 1.0, 1.0, 2.0, 0.0, 0.5, 0.0, 1.0, 0.0, 0.0, 0.0], [5, 3]), &device), head_input: None };
        let loss = |drop: &DropLoss, d: &ClientTensors| drop.loss(&out, d).unwrap().into_scalar::<f32>();
        let (resumed, uninterrupted) = (DropLoss::new(1, None, &data, &tensors), DropLoss::new(1, None, &data, &tensors));
        loss(&uninterrupted, &tensors);
        assert_eq!(loss(&resumed, &learned), loss(&uninterrupted, &learned));
        assert_eq!(ints(resumed.targets(&learned.train).unwrap()), vec![1, 2, 2]);
    }

    #[test]
    fn method_names_follow_the_paper() {
        let c = |ky, fc| LpgnnConfig {
            epsilon_x: Epsilon(1.0),
            epsilon_y: Epsilon(1.0),
            kx: 2,
            ky,
            forward_correction: fc,
            mechanism: Mechanism::MultiBit,
            features: FeatureSource::Raw,
            range: [0.0, 1.0],
        };
        assert_eq!((c(8, true).method(), c(0, true).method(), c(0, false).method()), ("drop", "fc", "ce"));
    }
}

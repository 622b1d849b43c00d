//! `label-dp`: label differential privacy (Ghazi et al., "Deep Learning with Label
//! Differential Privacy", NeurIPS 2021) on each client's train and validation labels.
//! Test labels stay clean for scoring. Each label is randomised once, ε per label;
//! disjoint stages compose in parallel, so the whole procedure is ε-label-DP.
//!
//! - `mechanism: rr`: k-ary randomized response, once, before round 1 (what the EC-LDA
//!   repository's `label_DP` does, there on every label).
//! - `mechanism: rr-with-prior`: RR restricted to the prior's top-k* classes
//!   ([`RrWithPrior`], the paper's choice of k*, not the published code's). The prior of
//!   the first stage is uniform (plain RR), public class frequencies, or the global
//!   model the client receives in round 1 (softmax of its logits on the client's data
//!   at temperature T, computed without the labels).
//! - Multi-stage, as in the paper: the labelled nodes are split at random into stages
//!   (`stages` fractions); stage 1 is randomised as above, stage s ≥ 2 at the first
//!   round ≥ `stage_rounds[s]` the client trains in, with the global model it received
//!   as the prior. Until its stage, a node is not trained on.
//!
//! RR-with-prior's transition matrix differs per node (it depends on the node's prior);
//! the client records the mean over its randomised nodes as its label transition, which
//! is what forward correction and LPGNN's model selection read.

use std::sync::Mutex;

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use super::ldp_labels::RandomizeLabels;
use crate::data::Role;
use crate::error::{Error, Result};
use crate::fed::{ClientContext, DataTransform, Defense, RoundContext, RoundTransform};
use crate::privacy::rr_prior::RrWithPrior;
use crate::privacy::{Epsilon, PrivacyCost};
use crate::rng::Rng;
use crate::train::LocalData;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LabelMechanism {
    /// k-ary randomized response.
    #[default]
    Rr,
    /// RR on the prior's top-k* classes.
    RrWithPrior,
}

/// The prior of the first stage (later stages always use the received global model).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PriorSource {
    /// Every class alike: RR-with-prior is then plain RR.
    #[default]
    Uniform,
    /// `class_frequencies`, public knowledge.
    Frequencies,
    /// The global model the client receives in round 1.
    GlobalModel,
}

impl PriorSource {
    /// As YAML spells it.
    pub fn name(self) -> &'static str {
        match self {
            PriorSource::Uniform => "uniform",
            PriorSource::Frequencies => "frequencies",
            PriorSource::GlobalModel => "global-model",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelDpConfig {
    /// ε per label; `.inf` leaves the labels as they are.
    pub epsilon: Epsilon,
    #[serde(default)]
    pub mechanism: LabelMechanism,
    /// The first stage's prior (`rr-with-prior` only).
    #[serde(default)]
    pub prior: PriorSource,
    /// Public class frequencies, one per class (`prior: frequencies`); need not sum to 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class_frequencies: Option<Vec<f64>>,
    /// Fractions of the labelled nodes randomised in each stage (`rr-with-prior`).
    #[serde(default = "one_stage")]
    pub stages: Vec<f64>,
    /// The round each stage starts (the first must be 1); default evenly spaced:
    /// stage s (0-based) at 1 + s·⌊rounds/stages⌋.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_rounds: Option<Vec<usize>>,
    /// Softmax temperature of a model prior (the paper's profiles: 0.5–0.6).
    #[serde(default = "unit")]
    pub temperature: f64,
}

fn one_stage() -> Vec<f64> {
    vec![1.0]
}

fn unit() -> f64 {
    1.0
}

impl LabelDpConfig {
    fn validate(&self) -> Result<()> {
        let bad = |field: &str, msg: String| Err(Error::param(field, msg));
        let prior_needed = self.mechanism == LabelMechanism::RrWithPrior;
        if !prior_needed && (self.prior != PriorSource::Uniform || self.class_frequencies.is_some() || self.stages.len() > 1 || self.stage_rounds.is_some()) {
            return bad("mechanism", "`prior`, `class_frequencies`, `stages` and `stage_rounds` need `mechanism: rr-with-prior`".into());
        }
        match (&self.class_frequencies, self.prior) {
            (None, PriorSource::Frequencies) => return bad("class_frequencies", "`prior: frequencies` needs `class_frequencies`, one value per class".into()),
            (Some(_), PriorSource::Uniform | PriorSource::GlobalModel) => {
                return bad("class_frequencies", "given, but `prior` is not `frequencies`".into());
            }
            (Some(f), _) if f.len() < 2 || f.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || f.iter().sum::<f64>() <= 0.0 => {
                return bad("class_frequencies", format!("expected at least 2 finite non-negative values with a positive sum, got {f:?}"));
            }
            _ => {}
        }
        let sum: f64 = self.stages.iter().sum();
        if self.stages.is_empty() || self.stages.iter().any(|f| !(*f > 0.0 && *f <= 1.0)) || (sum - 1.0).abs() > 1e-9 {
            return bad("stages", format!("expected fractions in (0, 1] summing to 1, got {:?}", self.stages));
        }
        if let Some(r) = &self.stage_rounds
            && (r.len() != self.stages.len() || r.first() != Some(&1) || r.windows(2).any(|w| w[0] >= w[1]))
        {
            return bad("stage_rounds", format!("expected {} strictly increasing rounds starting with 1 (one per stage), got {r:?}", self.stages.len()));
        }
        if !(self.temperature.is_finite() && self.temperature > 0.0) {
            return bad("temperature", format!("must be a finite number > 0, got {}", self.temperature));
        }
        Ok(())
    }
}

impl super::DefenseConfig for LabelDpConfig {
    fn build(&self, name: &str, _client: &ClientContext) -> Result<Defense> {
        self.validate()?;
        let t = std::sync::Arc::new(LabelDp { config: self.clone(), stages: Mutex::default() });
        let d = Defense::new(name).with_data(t.clone());
        // Plain RR is done before round 1; only the prior's stages need the round hook.
        Ok(if self.mechanism == LabelMechanism::RrWithPrior { d.with_round(t.clone()).with_state(t) } else { d })
    }
}

/// One client's instance, with its stages (what is left to randomise, and when), set
/// by the data transform for the round transform.
pub struct LabelDp {
    config: LabelDpConfig,
    stages: Mutex<Option<Stages>>,
}

/// One client's randomisation plan.
#[derive(serde::Serialize, serde::Deserialize)]
struct Stages {
    /// Per stage: the nodes and the role each returns to once randomised.
    nodes: Vec<Vec<(usize, Role)>>,
    /// Stages randomised so far.
    done: usize,
    /// The label transition before this defense (`None`: clean labels).
    before: Option<Vec<f64>>,
    /// Sum of the randomised nodes' transition matrices, and their number.
    transition_sum: Vec<f64>,
    randomised: usize,
}

impl LabelDp {
    fn cost(&self) -> PrivacyCost {
        let how = match (self.config.mechanism, self.config.prior, self.config.stages.len()) {
            (LabelMechanism::Rr, ..) => "randomized response".to_string(),
            (_, p, 1) => format!("RR-with-prior, prior: {}", p.name()),
            (_, p, s) => format!("RR-with-prior in {s} stages, first prior: {}, then the received global model", p.name()),
        };
        PrivacyCost {
            protects: format!("labels of train and validation nodes: ε-label-DP per label ({how}); each label randomised once"),
            epsilon: self.config.epsilon.value(),
            delta: 0.0,
            ..Default::default()
        }
    }

    /// The round stage `s` starts in a run of `rounds` rounds.
    fn stage_round(&self, s: usize, rounds: usize) -> usize {
        match &self.config.stage_rounds {
            Some(r) => r[s],
            None => 1 + s * (rounds / self.config.stages.len()),
        }
    }

    /// Randomise stage `s` of `plan` with `prior(node)`, restore the nodes' roles and
    /// record the mean transition.
    fn randomise(&self, plan: &mut Stages, s: usize, data: &mut LocalData, prior: impl Fn(usize) -> Vec<f64>, rng: &mut Rng) -> Result<()> {
        let m = RrWithPrior::new(self.config.epsilon);
        let k = data.classes;
        for &(v, role) in &plan.nodes[s] {
            let p = prior(v);
            let y = data.labels[v].expect("staged nodes are labelled");
            data.labels[v] = Some(m.apply(&p, y, rng)?);
            data.roles[v] = role;
            for t in 0..k {
                for (acc, q) in plan.transition_sum[t * k..(t + 1) * k].iter_mut().zip(m.output_distribution(&p, t)?) {
                    *acc += q;
                }
            }
            plan.randomised += 1;
        }
        plan.done = s + 1;
        if plan.randomised > 0 {
            let mean: Vec<f64> = plan.transition_sum.iter().map(|x| x / plan.randomised as f64).collect();
            data.label_transition = plan.before.clone();
            data.compose_label_transition(&mean);
        }
        Ok(())
    }

    fn static_prior(&self, classes: usize) -> Result<Vec<f64>> {
        match (&self.config.class_frequencies, self.config.prior) {
            (Some(f), _) if f.len() != classes => Err(Error::param(
                "class_frequencies",
                format!("has {} values, the dataset has {classes} classes", f.len()),
            )),
            (Some(f), _) => Ok(f.clone()),
            (None, _) => Ok(vec![1.0; classes]),
        }
    }
}

/// The stages done so far last between rounds.
impl crate::fed::Persistent for LabelDp {
    fn save(&self) -> Result<Vec<u8>> {
        crate::fed::checkpoint::encode(&*self.stages.lock().expect("label-dp state"))
    }

    fn restore(&self, state: &[u8]) -> Result<()> {
        *self.stages.lock().expect("label-dp state") = crate::fed::checkpoint::decode(state, "label-dp's stages")?;
        Ok(())
    }
}

impl DataTransform for LabelDp {
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        if self.config.epsilon.is_infinite() {
            return Ok(Some(self.cost()));
        }
        if self.config.mechanism == LabelMechanism::Rr {
            RandomizeLabels { epsilon: self.config.epsilon }.randomize(data, rng)?;
            return Ok(Some(self.cost()));
        }
        let prior = self.static_prior(data.classes)?;
        let mut labelled: Vec<usize> =
            (0..data.labels.len()).filter(|&v| data.labels[v].is_some() && matches!(data.roles[v], Role::Train | Role::Val)).collect();
        labelled.shuffle(rng);
        // Stage s takes the nodes between the rounded cumulative fractions.
        let (mut nodes, mut cum, mut start) = (Vec::new(), 0.0, 0);
        for f in &self.config.stages {
            cum += f;
            let end = ((cum * labelled.len() as f64).round() as usize).min(labelled.len());
            let mut part: Vec<(usize, Role)> = labelled[start..end].iter().map(|&v| (v, data.roles[v])).collect();
            part.sort_unstable_by_key(|&(v, _)| v);
            nodes.push(part);
            start = end;
        }
        for stage in &nodes {
            for &(v, _) in stage {
                data.roles[v] = Role::Unused; // not trained on before its stage
            }
        }
        let k = data.classes;
        let mut plan = Stages { nodes, done: 0, before: data.label_transition.clone(), transition_sum: vec![0.0; k * k], randomised: 0 };
        if self.config.prior != PriorSource::GlobalModel {
            self.randomise(&mut plan, 0, data, |_| prior.clone(), rng)?;
        }
        *self.stages.lock().expect("label-dp state") = Some(plan);
        Ok(Some(self.cost()))
    }
}

impl RoundTransform for LabelDp {
    fn apply(&self, round: RoundContext, data: &mut LocalData, received_logits: &mut dyn FnMut() -> Vec<f32>, rng: &mut Rng) -> Result<bool> {
        let mut stages = self.stages.lock().expect("label-dp state");
        let Some(plan) = stages.as_mut() else { return Ok(false) };
        if let Some(r) = &self.config.stage_rounds
            && let Some(late) = r.iter().find(|&&r| r > round.rounds)
        {
            return Err(Error::param("stage_rounds", format!("a stage starts in round {late}, after the last round {}", round.rounds)));
        }
        let due: Vec<usize> = (plan.done..plan.nodes.len()).take_while(|&s| self.stage_round(s, round.rounds) <= round.round).collect();
        if due.is_empty() {
            return Ok(false);
        }
        let logits = received_logits();
        let k = data.classes;
        let t = self.config.temperature;
        let prior = |v: usize| {
            let row = &logits[v * k..(v + 1) * k];
            let max = row.iter().fold(f64::NEG_INFINITY, |m, &z| m.max(f64::from(z) / t));
            row.iter().map(|&z| (f64::from(z) / t - max).exp()).collect::<Vec<f64>>()
        };
        for s in due {
            self.randomise(plan, s, data, prior, rng)?;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseMatrix, Features, Graph};

    fn config(yaml: &str) -> LabelDpConfig {
        serde_norway::from_str(yaml).unwrap()
    }

    fn data(n: usize, classes: usize) -> LocalData {
        let (graph, _) = Graph::from_edges(n, (1..n).map(|v| (v - 1, v)), "t").unwrap();
        LocalData {
            graph,
            features: Features::Dense(DenseMatrix::zeros(n, 1)),
            labels: (0..n).map(|v| Some((v % classes) as u32)).collect(),
            roles: (0..n).map(|v| if v % 10 == 9 { Role::Test } else if v % 10 == 8 { Role::Val } else { Role::Train }).collect(),
            classes,
            label_transition: None,
            feature_kprop: 0,
            link: None,
        }
    }

    fn defense(yaml: &str) -> LabelDp {
        let c = config(yaml);
        c.validate().unwrap();
        LabelDp { config: c, stages: Mutex::default() }
    }

    #[test]
    fn bad_configurations_name_their_field() {
        let err = |y: &str| config(y).validate().unwrap_err().to_string();
        assert!(err("epsilon: 1\nprior: frequencies").contains("mechanism"));
        assert!(err("epsilon: 1\nmechanism: rr-with-prior\nprior: frequencies").contains("class_frequencies"));
        assert!(err("epsilon: 1\nmechanism: rr-with-prior\nprior: frequencies\nclass_frequencies: [1, -1]").contains("class_frequencies"));
        assert!(err("epsilon: 1\nmechanism: rr-with-prior\nstages: [0.5, 0.4]").contains("stages"));
        assert!(err("epsilon: 1\nmechanism: rr-with-prior\nstages: [0.5, 0.5]\nstage_rounds: [2, 3]").contains("stage_rounds"));
        assert!(err("epsilon: 1\nmechanism: rr-with-prior\nstages: [0.5, 0.5]\nstage_rounds: [1]").contains("stage_rounds"));
        assert!(err("epsilon: 1\nmechanism: rr-with-prior\ntemperature: 0").contains("temperature"));
        assert!(serde_norway::from_str::<LabelDpConfig>("epsilon: 0").is_err());
        let d = defense("epsilon: 1\nmechanism: rr-with-prior\nprior: frequencies\nclass_frequencies: [1, 2]");
        let e = DataTransform::apply(&d, &mut data(30, 3), &mut crate::rng::derive(0, "t", &[])).unwrap_err().to_string();
        assert!(e.contains("class_frequencies") && e.contains("3 classes"), "{e}");
    }

    /// Frequencies prior (0.6, 0.3, 0.1) at e^ε = 3: w = (0.6, 0.675, 0.6) → top set
    /// {0, 1}; class 0 and 1 keep 3/4, class 2 goes to {0, 1} uniformly. Observed
    /// counts over 6000 train/val nodes within 5 binomial standard deviations, labels
    /// outside the top set never reported, test labels untouched.
    #[test]
    fn frequencies_prior_reports_labels_with_the_exact_distribution() {
        let d = defense("epsilon: 1.0986122886681098\nmechanism: rr-with-prior\nprior: frequencies\nclass_frequencies: [6, 3, 1]");
        let mut local = data(7500, 3);
        let clean = local.clone();
        let mut rng = crate::rng::derive(5, "label-dp-test", &[]);
        let cost = DataTransform::apply(&d, &mut local, &mut rng).unwrap().unwrap();
        assert!((cost.epsilon - 3f64.ln()).abs() < 1e-12 && cost.delta == 0.0);
        assert_eq!(local.roles, clean.roles, "a single static stage is randomised before round 1");
        let mut counts = [[0usize; 3]; 3];
        for v in 0..local.labels.len() {
            let (y, z) = (clean.labels[v].unwrap() as usize, local.labels[v].unwrap() as usize);
            if local.roles[v] == Role::Test {
                assert_eq!(y, z);
            } else {
                counts[y][z] += 1;
            }
        }
        let want = [[0.75, 0.25, 0.0], [0.25, 0.75, 0.0], [0.5, 0.5, 0.0]];
        for y in 0..3 {
            let n: usize = counts[y].iter().sum();
            for z in 0..3 {
                let (p, got) = (want[y][z], counts[y][z] as f64);
                let sd = (n as f64 * p * (1.0 - p)).sqrt();
                assert!((got - n as f64 * p).abs() <= 5.0 * sd + 1e-9, "y={y} z={z}: {got} of {n}, want p={p}");
            }
        }
        // The recorded transition is the (here common) per-node matrix.
        let t = local.label_transition.unwrap();
        for (a, b) in t.iter().zip(want.iter().flatten()) {
            assert!((a - b).abs() < 1e-12, "{t:?}");
        }
    }

    /// Two stages: stage 1 (plain RR, uniform prior) before round 1, stage 2 at round 3
    /// with the received model as prior. A model sure of class 2 everywhere makes k* = 1
    /// at ε = 0.5, so every stage-2 label becomes 2; the model is asked for its logits
    /// only when a stage is due.
    #[test]
    fn later_stages_use_the_received_model_as_prior() {
        let d = defense("epsilon: 0.5\nmechanism: rr-with-prior\nstages: [0.5, 0.5]\nstage_rounds: [1, 3]");
        let mut local = data(200, 3);
        let clean = local.clone();
        let mut rng = crate::rng::derive(1, "label-dp-stages", &[]);
        DataTransform::apply(&d, &mut local, &mut rng).unwrap();
        let pending: Vec<usize> = (0..200).filter(|&v| local.roles[v] == Role::Unused).collect();
        let labelled = clean.roles.iter().filter(|r| matches!(r, Role::Train | Role::Val)).count();
        assert_eq!(pending.len(), labelled / 2);
        let asked = std::cell::Cell::new(0);
        let confident: Vec<f32> = (0..200).flat_map(|_| [0.0, 0.0, 20.0]).collect();
        let mut logits = || {
            asked.set(asked.get() + 1);
            confident.clone()
        };
        let ctx = |round| RoundContext { round, rounds: 5 };
        assert!(!RoundTransform::apply(&d, ctx(2), &mut local, &mut logits, &mut rng).unwrap());
        assert!(RoundTransform::apply(&d, ctx(3), &mut local, &mut logits, &mut rng).unwrap());
        assert!(!RoundTransform::apply(&d, ctx(4), &mut local, &mut logits, &mut rng).unwrap());
        assert_eq!(asked.get(), 1);
        assert_eq!(local.roles, clean.roles, "every node back in its role");
        assert!(pending.iter().all(|&v| local.labels[v] == Some(2)));
        // An instance whose data transform has not run has no plan: nothing to do.
        let fresh = defense("epsilon: 0.5\nmechanism: rr-with-prior\nstages: [0.5, 0.5]\nstage_rounds: [1, 3]");
        assert!(!RoundTransform::apply(&fresh, ctx(3), &mut local, &mut logits, &mut rng).unwrap());
        let late = defense("epsilon: 0.5\nmechanism: rr-with-prior\nstages: [0.5, 0.5]\nstage_rounds: [1, 9]");
        DataTransform::apply(&late, &mut data(20, 3), &mut rng).unwrap();
        let e = RoundTransform::apply(&late, ctx(1), &mut data(20, 3), &mut logits, &mut rng).unwrap_err().to_string();
        assert!(e.contains("stage_rounds") && e.contains("last round 5"), "{e}");
    }
}

//! `lda`: passive label-distribution inference from a client's update, with EC-LDA's
//! estimator (Cheng et al., DESIGN §5.4) but without its embedding compression: the
//! "LDA" baseline of the EC-LDA paper.
//!
//! For a linear head z = hW + b trained with mean cross-entropy over N nodes, the
//! row-summed weight gradient of class c is ḡ_c = (1/N) Σ_k (p_kc − y_kc)·s_k with
//! s_k = Σ_j h_kj. The server reads the gradient averaged over the E local steps off the
//! update ([`GradientSource`]), forwards a dummy graph of K nodes through the model it
//! sent to get p_i and s_i, and estimates (Eq. 4)
//! counts_c ∝ (Σ_i p_ic·s_i − K·ḡ_c)/mean(s), made non-negative ([`Negatives`]: shifted
//! by the smallest estimate as the published code does, or clamped at 0) and normalised.
//! The estimate is exact when every s_k is the same, which the active variant (`ec-lda`)
//! enforces.

use std::sync::Arc;

use burn::tensor::activation::softmax;
use rand::Rng as _;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

use super::{AttackRounds, PassiveAttack};
use super::gradient::{self, GradientSource};
use crate::data::{DenseMatrix, Features, Graph, Task};
use crate::error::{Error, Result};
use crate::fed::{
    AttackNote, AttackOutput, ClientUpdate, FederationConfig, ModelParams, RoundContext, ServerContext,
    ThreatModel,
};
use crate::rng;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LdaConfig {
    /// Rounds in which the server infers every client's label distribution.
    pub rounds: AttackRounds,
    pub dummy: DummyGraph,
    pub gradient: GradientSource,
    pub negatives: Negatives,
}

/// What Eq. 4 does with negative class estimates before normalising.
///
/// Under noise (a DP-trained update) the estimate is a random vector: clamping zeroes
/// about half its entries, a peaked distribution that scores *below* the uniform guess;
/// shifting keeps every class and lands nearer the uniform guess (tested on pure noise).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Negatives {
    /// Subtract the smallest estimate from every class when it is negative (the
    /// published `batch_label_construction`: `counts -= counts.min()`).
    #[default]
    Shift,
    /// Set negative estimates to 0.
    Clamp,
}

impl super::AttackConfig for LdaConfig {
    /// On an aggregate update the head gradient it reads off an aggregate is the clients' mixture: it infers their joint distribution.
    const READS_AGGREGATE: bool = true;

    const ACTIVE: bool = false;
    /// Its estimate reads the head rows of whatever a sample is: a node, or a node pair.
    const TASKS: &'static [crate::data::Task] = crate::data::Task::ALL;

    fn strategy(&self, name: &str) -> Box<dyn crate::fed::ServerStrategy> {
        Box::new(Lda::new(name, self.clone()))
    }

    fn validate(&self, federation: &FederationConfig, field: &str) -> Result<()> {
        self.rounds.validate(federation.rounds, &format!("{field}.rounds"))?;
        self.dummy.validate(&format!("{field}.dummy"))
    }
}

/// The server's own graph: K nodes with features ~ N(0, σ²) and Erdős–Rényi edges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DummyGraph {
    pub nodes: usize,
    pub feature_std: f64,
    pub edge_probability: f64,
}

impl Default for DummyGraph {
    /// EC-LDA's: 1000 nodes, σ = 0.001, p = 0.005.
    fn default() -> Self {
        DummyGraph { nodes: 1000, feature_std: 0.001, edge_probability: 0.005 }
    }
}

impl DummyGraph {
    pub fn validate(&self, field: &str) -> Result<()> {
        if !(1..=100_000).contains(&self.nodes) {
            return Err(Error::param(format!("{field}.nodes"), format!("{} is not in 1..=100000", self.nodes)));
        }
        if !(self.feature_std > 0.0 && self.feature_std.is_finite()) {
            return Err(Error::param(format!("{field}.feature_std"), format!("{} must be a finite number > 0", self.feature_std)));
        }
        if !(0.0..=1.0).contains(&self.edge_probability) {
            return Err(Error::param(format!("{field}.edge_probability"), format!("{} is not in [0, 1]", self.edge_probability)));
        }
        Ok(())
    }

    /// The graph and its features, drawn from `rng`.
    pub fn generate(&self, in_dim: usize, rng: &mut rng::Rng) -> Result<(Graph, Features)> {
        let k = self.nodes;
        let mut edges = Vec::new();
        if self.edge_probability > 0.0 {
            for i in 0..k {
                for j in i + 1..k {
                    if rng.random::<f64>() < self.edge_probability {
                        edges.push((i, j));
                    }
                }
            }
        }
        let (graph, _) = Graph::from_edges(k, edges, "dummy graph")?;
        let normal = Normal::new(0.0, self.feature_std).expect("validated σ");
        let data = (0..k * in_dim).map(|_| normal.sample(rng) as f32).collect();
        Ok((graph, Features::Dense(DenseMatrix { rows: k, cols: in_dim, data })))
    }

    /// A graph drawn from `rng` run through the model `params` by `server`: per dummy
    /// node i, the head-input sum s_i = Σ_j h_ij and the softmax outputs p_i (row-major,
    /// `classes` per node). What both Eq. 4 and LLG*'s impact read.
    ///
    /// In link prediction the samples are K dummy pairs (i ≠ j drawn uniformly after the
    /// graph) and h is each pair's h_i ⊙ h_j, the head's input.
    pub fn probe(&self, server: &ServerContext, params: &ModelParams, rng: &mut rng::Rng) -> Result<(Vec<f64>, Vec<f64>)> {
        let (graph, features) = self.generate(server.in_dim, rng)?;
        let pairs: Vec<(u32, u32)> = match server.task {
            Task::Node => Vec::new(),
            Task::Link => {
                let k = self.nodes as u32;
                if k < 2 {
                    return Err(Error::param("dummy.nodes", "link prediction's dummy pairs need at least 2 dummy nodes"));
                }
                (0..k)
                    .map(|_| {
                        let u = rng.random_range(0..k);
                        // Uniform over the other k − 1 nodes.
                        let v = (u + 1 + rng.random_range(0..k - 1)) % k;
                        (u, v)
                    })
                    .collect()
            }
        };
        let out = server.forward_samples(params, &graph, &features, &pairs)?;
        let h = out.head_input.expect("a model with a head returns its input");
        Ok((to_vec(h.sum_dim(1)), to_vec(softmax(out.logits, 1))))
    }
}

pub struct Lda {
    name: String,
    config: LdaConfig,
    server: Option<Arc<ServerContext>>,
    /// The dummy graph's forward pass for the latest (round, broadcast model): every
    /// client of a round usually receives the same model, so it runs once per round.
    probe: Option<Probe>,
    output: AttackOutput,
}

/// What the estimator reads off the dummy graph: per dummy node i, s_i = Σ_j h_ij and
/// the softmax outputs p_i (row-major, `classes` per node).
struct Probe {
    round: usize,
    sent: ModelParams,
    s: Vec<f64>,
    p: Vec<f64>,
}

impl Lda {
    pub fn new(name: &str, config: LdaConfig) -> Lda {
        Lda { name: name.to_string(), config, server: None, probe: None, output: AttackOutput::default() }
    }

    fn infer(&mut self, round: usize, update: &ClientUpdate<'_>) -> Result<Vec<f64>> {
        let server = self.server.clone().expect("setup ran");
        let g = gradient::class_sums(&self.config.gradient.read(update)?, server.classes);
        if self.probe.as_ref().is_none_or(|pr| pr.round != round || pr.sent != *update.sent) {
            // The same graph for every client of the round: its stream depends on the round only.
            let mut r = rng::derive(server.seed, "attack-dummy-graph", &[round as u64]);
            let (s, p) = self.config.dummy.probe(&server, update.sent, &mut r)?;
            self.probe = Some(Probe { round, sent: update.sent.clone(), s, p });
        }
        let Probe { s, p, .. } = self.probe.as_ref().expect("just built");

        Ok(estimate_counts(s, p, &g, self.config.negatives))
    }
}

/// Eq. 4: counts_c = (Σ_i p_ic·s_i − K·ḡ_c)/mean(s), made non-negative by `negatives`,
/// from K dummy nodes' head-input sums `s`, their softmax outputs `p` (row-major,
/// `g.len()` per node) and the row-summed head gradient `g`.
pub fn estimate_counts(s: &[f64], p: &[f64], g: &[f64], negatives: Negatives) -> Vec<f64> {
    let (k, classes) = (s.len(), g.len());
    let mean_s = s.iter().sum::<f64>() / k as f64;
    let counts: Vec<f64> = (0..classes)
        .map(|c| {
            let ps: f64 = (0..k).map(|i| p[i * classes + c] * s[i]).sum();
            (ps - k as f64 * g[c]) / mean_s
        })
        .collect();
    let min = counts.iter().copied().fold(f64::INFINITY, f64::min);
    match negatives {
        Negatives::Shift if min < 0.0 => counts.iter().map(|c| c - min).collect(),
        Negatives::Shift => counts,
        Negatives::Clamp => counts.iter().map(|c| c.max(0.0)).collect(),
    }
}

impl Lda {
    fn note(&mut self, text: String) {
        self.output.notes.push(AttackNote { attack: self.name.clone(), text });
    }
}

fn to_vec<const D: usize>(t: burn::tensor::Tensor<D>) -> Vec<f64> {
    t.into_data().convert::<f64>().try_into_vec::<f64>().expect("f64 after convert")
}

impl PassiveAttack for Lda {
    fn name(&self) -> &str {
        &self.name
    }

    fn threat_model(&self) -> ThreatModel {
        self.config.gradient.threat_model()
    }

    fn setup(&mut self, server: &Arc<ServerContext>) -> Result<()> {
        self.config.gradient.check(server, &self.name)?;
        if self.config.gradient == GradientSource::Exact {
            self.note("reads each client's own averaged gradient (`gradient: exact`): a stronger threat model than a FedAvg server's".into());
        }
        let t = &server.train;
        if t.weight_decay > 0.0 && self.config.gradient == GradientSource::Recovered {
            self.note(format!(
                "weight decay {} adds λ·W to every step's gradient; the recovered gradient includes it",
                t.weight_decay
            ));
        }
        self.server = Some(server.clone());
        Ok(())
    }

    fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
        if !self.config.rounds.reads(ctx, update) {
            return Ok(());
        }
        let counts = self.infer(ctx.round, update)?;
        let total: f64 = counts.iter().sum();
        if total == 0.0 {
            self.note(format!("round {}, client {}: every class estimate was ≤ 0", ctx.round, update.client));
        }
        let estimate = crate::scoring::normalise(&counts);
        self.output.label_distribution(&self.name, ctx.round, update.client, estimate);
        Ok(())
    }

    fn rounds(&self) -> &AttackRounds {
        &self.config.rounds
    }

    fn output(&self) -> &AttackOutput {
        &self.output
    }

    fn output_mut(&mut self) -> &mut AttackOutput {
        &mut self.output
    }
}

#[cfg(test)]
mod tests {
    use super::{Negatives, estimate_counts};

    #[test]
    fn eq4_is_exact_when_every_head_input_sum_is_equal() {
        // N = 10 real nodes with labels counts (5, 3, 2, 0) and, like the K = 4 dummy
        // nodes, softmax output q and head-input sum S: then ḡ_c = (1/N)·Σ_k (q_c − y_kc)·S
        // = S·(q_c − n_c/N), and Eq. 4 gives K·n_c/N exactly.
        let (s_val, q, n) = (2.5, [0.4, 0.3, 0.2, 0.1], [5.0, 3.0, 2.0, 0.0]);
        let total: f64 = n.iter().sum();
        let g: Vec<f64> = (0..4).map(|c| s_val * (q[c] - n[c] / total)).collect();
        let (s, p): (Vec<f64>, Vec<f64>) = (vec![s_val; 4], q.iter().copied().cycle().take(16).collect());
        let counts = estimate_counts(&s, &p, &g, Negatives::Shift);
        for c in 0..4 {
            assert!((counts[c] - 4.0 * n[c] / total).abs() < 1e-12, "{counts:?}");
        }
        // Unequal sums over unequal outputs make it approximate.
        let skewed: Vec<f64> = (0..16).map(|k| if k % 5 == 0 { 0.7 } else { 0.1 }).collect();
        let uneven = estimate_counts(&[1.0, 2.0, 3.0, 4.0], &skewed, &g, Negatives::Clamp);
        assert!(uneven.iter().all(|&c| c >= 0.0) && (uneven[0] - counts[0]).abs() > 1e-3, "{uneven:?}");
    }

    #[test]
    fn negative_estimates_are_shifted_as_published_or_clamped() {
        // counts (before the fix-up) = (Σ p·s − K·g)/mean(s) with s ≡ 1, K = 1, p = 0:
        // −g, i.e. (2, −1, 0.5).
        let (s, p, g) = ([1.0], [0.0, 0.0, 0.0], [-2.0, 1.0, -0.5]);
        assert_eq!(estimate_counts(&s, &p, &g, Negatives::Shift), [3.0, 0.0, 1.5]);
        assert_eq!(estimate_counts(&s, &p, &g, Negatives::Clamp), [2.0, 0.0, 0.5]);
        // Nothing negative: both leave the counts alone.
        let g = [-2.0, -1.0, -0.5];
        assert_eq!(estimate_counts(&s, &p, &g, Negatives::Shift), estimate_counts(&s, &p, &g, Negatives::Clamp));
    }

    /// A gradient that is pure noise (DP training buried the signal) makes the estimate
    /// a random vector. Over 2 000 draws of N(0, 1) row sums (7 classes), scored against a
    /// skewed client distribution: clamping scores well below the uniform guess, the
    /// published shift much nearer it (the means' standard errors are < 0.005).
    #[test]
    fn under_pure_noise_the_shift_stays_nearer_the_uniform_guess_than_clamping() {
        use rand_distr::{Distribution, StandardNormal};
        let truth = crate::scoring::normalise(&[40.0, 25.0, 12.0, 8.0, 6.0, 5.0, 4.0]);
        let uniform = crate::scoring::cosine_similarity(&[1.0 / 7.0; 7], &truth);
        let mut r = crate::rng::derive(0, "test-noise-gradient", &[]);
        let (mut shift, mut clamp, n) = (0.0, 0.0, 2000);
        for _ in 0..n {
            let g: Vec<f64> = (0..7).map(|_| StandardNormal.sample(&mut r)).collect();
            let score = |neg| crate::scoring::cosine_similarity(&crate::scoring::normalise(&estimate_counts(&[1.0], &[0.0; 7], &g, neg)), &truth);
            shift += score(Negatives::Shift) / n as f64;
            clamp += score(Negatives::Clamp) / n as f64;
        }
        assert!(clamp < uniform - 0.15, "clamp {clamp:.3}, uniform {uniform:.3}");
        assert!(shift > clamp + 0.1 && shift < uniform, "shift {shift:.3}, clamp {clamp:.3}, uniform {uniform:.3}");
    }
}

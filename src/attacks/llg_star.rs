//! `llg-star`: LLG* (Wainakh et al., PETS 2022, "v3-random" in `tklab-tud/LLG`), label
//! leakage from the head's weight gradient with dummy data (REFERENCE §7.2), on a GNN.
//!
//! g_c = Σ_j ∂L/∂W_{j,c} (mean cross-entropy over B nodes). Impact and offset come from
//! the model the server sent: `repeats` times, a dummy graph of random nodes is run
//! through it and, for every class i, the row-summed head gradient g⁽ⁱ⁾ the dummies
//! would give if all were labelled i is taken (computed in closed form from their head
//! inputs and outputs). The impact of one node is m = mean(Σ_i g⁽ⁱ⁾_i/(C·B))·(1 + 1/C)
//! and the offset s_j = Σ g⁽ⁱ⁾_j (i ≠ j)/(repeats·(C − 1)). Stage 1 predicts once every
//! class with g_c < 0; after g ← g − s each prediction of c takes m off g_c; stage 2
//! predicts argmin g until B labels are predicted. The estimate is their histogram.
//!
//! The gradient read here is the average over the E local steps, so B labels are
//! predicted (LLG's one-step case). B is the update's FedAvg weight, the only count
//! the server has (under `weighting: all`, all the client's nodes).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{AttackRounds, PassiveAttack};
use super::gradient::{self, GradientSource};
use super::lda::DummyGraph;
use crate::error::{Error, Result};
use crate::fed::{
    AttackOutput, ClientUpdate, FederationConfig, RoundContext, ServerContext,
    ThreatModel,
};
use crate::rng;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LlgStarConfig {
    pub rounds: AttackRounds,
    /// Dummy batches per estimate of impact and offset (LLG: 10).
    pub repeats: usize,
    /// The dummy graph (random features ~ N(0, σ²), Erdős–Rényi edges).
    pub dummy: DummyGraph,
    pub gradient: GradientSource,
}

impl Default for LlgStarConfig {
    fn default() -> Self {
        LlgStarConfig {
            rounds: AttackRounds::Mid,
            repeats: 10,
            dummy: DummyGraph {
                nodes: 100,
                feature_std: 1.0,
                edge_probability: 0.004,
            },
            gradient: GradientSource::Recovered,
        }
    }
}

impl super::AttackConfig for LlgStarConfig {
    // Dummy-data inference over every class.
    const SERVER_SECONDS_ON_CORA: f64 = 5.0;

    const ACTIVE: bool = false;
    /// Its estimate reads the head rows of whatever a sample is: a node, or a node pair.
    const TASKS: &'static [crate::data::Task] = crate::data::Task::ALL;

    fn strategy(&self, name: &str) -> Box<dyn crate::fed::ServerStrategy> {
        Box::new(LlgStar::new(name, self.clone()))
    }

    fn validate(&self, federation: &FederationConfig, field: &str) -> Result<()> {
        self.rounds
            .validate(federation.rounds, &format!("{field}.rounds"))?;
        if !(1..=1000).contains(&self.repeats) {
            return Err(Error::param(
                format!("{field}.repeats"),
                format!("{} is not in 1..=1000", self.repeats),
            ));
        }
        self.dummy.validate(&format!("{field}.dummy"))
    }
}

pub struct LlgStar {
    name: String,
    config: LlgStarConfig,
    server: Option<Arc<ServerContext>>,
    output: AttackOutput,
}

impl LlgStar {
    pub fn new(name: &str, config: LlgStarConfig) -> LlgStar {
        LlgStar {
            name: name.to_string(),
            config,
            server: None,
            output: AttackOutput::default(),
        }
    }

    /// (m without the 1/B factor, offsets s) from dummy graphs through `sent`.
    fn impact_and_offset(
        &self,
        round: usize,
        client: usize,
        sent: &crate::fed::ModelParams,
    ) -> Result<(f64, Vec<f64>)> {
        let server = self.server.as_ref().expect("setup ran");
        let c = server.classes;
        let (mut impact, mut offset) = (0f64, vec![0f64; c]);
        for r in 0..self.config.repeats {
            let mut stream = rng::derive(
                server.seed,
                "llg-star-dummy",
                &[round as u64, client as u64, r as u64],
            );
            let (s, p) = self.config.dummy.probe(server, sent, &mut stream)?;
            let k = s.len() as f64;
            // g⁽ⁱ⁾_j = (1/K) Σ_n (p_nj − [j = i])·s_n.
            let ps: Vec<f64> = (0..c)
                .map(|j| {
                    s.iter()
                        .enumerate()
                        .map(|(n, sn)| p[n * c + j] * sn)
                        .sum::<f64>()
                        / k
                })
                .collect();
            let mean_s = s.iter().sum::<f64>() / k;
            for i in 0..c {
                impact += ps[i] - mean_s;
                for j in (0..c).filter(|&j| j != i) {
                    offset[j] += ps[j];
                }
            }
        }
        let n = self.config.repeats as f64;
        let impact = impact / (c as f64 * n) * (1.0 + 1.0 / c as f64);
        let denominator = n * (c as f64 - 1.0).max(1.0);
        Ok((
            impact,
            offset.into_iter().map(|o| o / denominator).collect(),
        ))
    }
}

/// LLG's two stages on the row-summed gradient `g` with per-label impact `m` (< 0) and
/// offsets `s`: the predicted label multiset of size `b`, as counts per class.
pub fn predict_counts(g: &[f64], m: f64, s: &[f64], b: usize) -> Vec<usize> {
    let mut counts = vec![0usize; g.len()];
    let mut g: Vec<f64> = g.to_vec();
    let negative: Vec<usize> = (0..g.len()).filter(|&c| g[c] < 0.0).collect();
    g.iter_mut().zip(s).for_each(|(v, o)| *v -= o);
    for &c in &negative {
        counts[c] += 1;
        g[c] -= m;
    }
    for _ in negative.len()..b {
        let c = (0..g.len())
            .min_by(|&a, &b| g[a].total_cmp(&g[b]))
            .expect("classes");
        counts[c] += 1;
        g[c] -= m;
    }
    counts
}

impl PassiveAttack for LlgStar {
    fn name(&self) -> &str {
        &self.name
    }

    fn threat_model(&self) -> ThreatModel {
        self.config.gradient.threat_model()
    }

    fn setup(&mut self, server: &Arc<ServerContext>) -> Result<()> {
        self.config.gradient.check(server, &self.name)?;
        self.server = Some(server.clone());
        Ok(())
    }

    fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
        if !self.config.rounds.reads(ctx, update) {
            return Ok(());
        }
        let classes = self.server.as_ref().expect("setup ran").classes;
        let g = gradient::class_sums(&self.config.gradient.read(update)?, classes);
        let (impact, offset) = self.impact_and_offset(ctx.round, update.client, update.sent)?;
        let b = update.samples;
        let counts = predict_counts(&g, impact / b as f64, &offset, b);
        let estimate = counts.iter().map(|&c| c as f64 / b as f64).collect();
        self.output
            .label_distribution(&self.name, ctx.round, update.client, estimate);
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
    use super::predict_counts;

    #[test]
    fn two_stages_on_a_gradient_with_known_labels() {
        // B = 6 labels (3 × class 0, 2 × class 2, 1 × class 3), each label adding −1 to
        // its class's row sum on top of an offset of +0.5 everywhere: g = s − counts.
        let s = [0.5, 0.5, 0.5, 0.5];
        let truth = [3usize, 0, 2, 1];
        let g: Vec<f64> = truth.iter().zip(&s).map(|(&n, o)| o - n as f64).collect();
        // Stage 1 finds classes 0, 2, 3 (negative); stage 2 adds 2 × class 0, 1 × class 2.
        assert_eq!(predict_counts(&g, -1.0, &s, 6), truth.to_vec());
        // Without the offset, class 1's +0.5 still never wins against the others.
        assert_eq!(predict_counts(&g, -1.0, &[0.0; 4], 6), truth.to_vec());
        // An impact estimated too small (−0.5) over-predicts the first minimum.
        let skewed = predict_counts(&g, -0.5, &s, 6);
        assert_eq!(skewed.iter().sum::<usize>(), 6);
        assert_ne!(skewed, truth.to_vec());
    }
}

//! `ec-lda`: EC-LDA (Cheng et al., DESIGN §5.4), the active label-distribution attack.
//!
//! In an attack round the server scales the whole global model to L2 norm C before the
//! broadcast (θ ← θ·min(1, C/‖θ‖₂); C = 0.01 by default). A model that small maps every
//! node to nearly the same head input, so every s_k is nearly equal and the estimator
//! of [`lda`](super::lda) (Eq. 4) becomes nearly exact. The round's aggregate is then
//! discarded and the pre-attack global model restored, so training goes on as if the
//! round had not happened (its test accuracy equals the previous round's).

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::AttackRounds;
use super::gradient::GradientSource;
use super::lda::{DummyGraph, Lda, LdaConfig, Negatives};
use crate::error::{Error, Result};
use crate::fed::{
    AttackOutput, ClientUpdate, FederationConfig, ModelParams, RoundContext, ServerContext,
    ServerStrategy, ThreatModel,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EcLdaConfig {
    pub rounds: AttackRounds,
    /// C: the global model's L2 norm in an attack round; `null` broadcasts it unscaled
    /// (the passive estimate, with the round still discarded).
    pub clip_norm: Option<f64>,
    pub dummy: DummyGraph,
    pub gradient: GradientSource,
    pub negatives: Negatives,
}

impl Default for EcLdaConfig {
    fn default() -> Self {
        EcLdaConfig {
            rounds: AttackRounds::Mid,
            clip_norm: Some(0.01),
            dummy: DummyGraph::default(),
            gradient: GradientSource::Recovered,
            negatives: Negatives::default(),
        }
    }
}

impl super::AttackConfig for EcLdaConfig {
    /// On an aggregate update the head gradient it reads off an aggregate is the clients' mixture: it infers their joint distribution.
    const READS_AGGREGATE: bool = true;

    const ACTIVE: bool = true;
    /// Its estimate reads the head rows of whatever a sample is: a node, or a node pair.
    const TASKS: &'static [crate::data::Task] = crate::data::Task::ALL;

    fn strategy(&self, name: &str) -> Box<dyn crate::fed::ServerStrategy> {
        Box::new(EcLda::new(name, self.clone()))
    }

    fn validate(&self, federation: &FederationConfig, field: &str) -> Result<()> {
        if let Some(c) = self.clip_norm
            && !(c > 0.0 && c.is_finite())
        {
            return Err(Error::param(
                format!("{field}.clip_norm"),
                format!("{c} must be a finite number > 0 (or null: no scaling)"),
            ));
        }
        self.estimator().validate(federation, field)
    }
}

impl EcLdaConfig {
    fn estimator(&self) -> LdaConfig {
        LdaConfig {
            rounds: self.rounds.clone(),
            dummy: self.dummy.clone(),
            gradient: self.gradient,
            negatives: self.negatives,
        }
    }
}

pub struct EcLda {
    clip_norm: Option<f64>,
    rounds: AttackRounds,
    estimator: Lda,
    /// The scaled model of the current attack round (every client receives the same).
    scaled: Option<(usize, ModelParams)>,
}

impl EcLda {
    pub fn new(name: &str, config: EcLdaConfig) -> EcLda {
        EcLda {
            clip_norm: config.clip_norm,
            rounds: config.rounds.clone(),
            estimator: Lda::new(name, config.estimator()),
            scaled: None,
        }
    }

    fn attacks(&self, ctx: &RoundContext) -> bool {
        self.rounds.contains(ctx.round, ctx.rounds)
    }
}

/// θ·min(1, C/‖θ‖₂): the model itself when its norm is at most C.
pub fn clip_to_norm(params: &ModelParams, c: f64) -> ModelParams {
    let norm = params.l2_norm();
    if norm > c {
        params.scaled(c / norm)
    } else {
        params.clone()
    }
}

impl ServerStrategy for EcLda {
    fn name(&self) -> &str {
        self.estimator.name()
    }

    fn threat_model(&self) -> ThreatModel {
        self.estimator.threat_model()
    }

    fn setup(&mut self, server: &Arc<ServerContext>) -> Result<()> {
        self.estimator.setup(server)
    }

    fn before_broadcast(
        &mut self,
        ctx: &RoundContext,
        _client: usize,
        global: &ModelParams,
    ) -> Option<ModelParams> {
        let c = self.clip_norm.filter(|_| self.attacks(ctx))?;
        if self.scaled.as_ref().is_none_or(|(r, _)| *r != ctx.round) {
            self.scaled = Some((ctx.round, clip_to_norm(global, c)));
        }
        self.scaled.as_ref().map(|(_, p)| p.clone())
    }

    fn plain_rounds(&self, rounds: usize) -> usize {
        self.rounds.before_first(rounds)
    }

    fn plain_tail(&self, rounds: usize) -> usize {
        self.rounds.after_last(rounds)
    }

    /// Outside its attack rounds it sends the global model and keeps the aggregate.
    fn keeps_course(&self, ctx: &RoundContext) -> bool {
        !self.attacks(ctx)
    }

    /// The scaled model is a cache of the current round: only the estimator's state lasts.
    fn save_state(&self) -> Result<Vec<u8>> {
        self.estimator.save_state()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<()> {
        self.estimator.restore_state(state)
    }

    fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
        self.estimator.after_update(ctx, update)
    }

    fn after_aggregation(
        &mut self,
        ctx: &RoundContext,
        previous: &ModelParams,
        aggregated: ModelParams,
    ) -> ModelParams {
        if self.attacks(ctx) {
            previous.clone()
        } else {
            aggregated
        }
    }

    fn finish(&mut self) -> AttackOutput {
        self.estimator.finish()
    }
}

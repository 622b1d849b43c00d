//! `uniform`: the uniform guess over the classes for every client in the attack rounds.
//! It reads nothing; it is the reference line an attack must beat, scored the same way.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{AttackRounds, PassiveAttack};
use crate::error::Result;
use crate::fed::{AttackOutput, ClientUpdate, RoundContext, ServerContext, ServerStrategy};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UniformConfig {
    pub rounds: AttackRounds,
}

pub struct Uniform {
    name: String,
    config: UniformConfig,
    classes: usize,
    output: AttackOutput,
}

impl super::AttackConfig for UniformConfig {
    /// It reads nothing of an update, aggregate or not.
    const READS_AGGREGATE: bool = true;

    const SERVER_SECONDS_ON_CORA: f64 = 0.0;

    const ACTIVE: bool = false;
    /// Its estimate reads the head rows of whatever a sample is: a node, or a node pair.
    const TASKS: &'static [crate::data::Task] = crate::data::Task::ALL;

    fn validate(&self, federation: &crate::fed::FederationConfig, field: &str) -> Result<()> {
        self.rounds.validate(federation.rounds, &format!("{field}.rounds"))
    }

    fn strategy(&self, name: &str) -> Box<dyn ServerStrategy> {
        Box::new(Uniform::new(name, self.clone()))
    }
}

impl Uniform {
    pub fn new(name: &str, config: UniformConfig) -> Uniform {
        Uniform {
            name: name.to_string(),
            config,
            classes: 0,
            output: AttackOutput::default(),
        }
    }
}

impl PassiveAttack for Uniform {
    fn name(&self) -> &str {
        &self.name
    }

    fn setup(&mut self, server: &Arc<ServerContext>) -> Result<()> {
        self.classes = server.classes;
        Ok(())
    }

    fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
        if self.config.rounds.reads(ctx, update) {
            let estimate = vec![1.0 / self.classes as f64; self.classes];
            self.output
                .label_distribution(&self.name, ctx.round, update.client, estimate);
        }
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

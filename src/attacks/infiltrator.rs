//! `infiltrator`: Infiltrator (Meng et al., CCS 2023) label inference by node injection,
//! as EC-LDA's comparison runs it (REFERENCE §7.3). A query attack: the federation
//! grants it the [`ClientOracle`] because it declares [`ThreatModel::QueryAccess`],
//! something a FedAvg server cannot do.
//!
//! For each node v a client trains on, an all-zero node a is injected and linked to v
//! both ways, and the global model's output at a is read. If its top class scores at
//! least 1.5× the second, v is predicted as the top class. Otherwise a's features are
//! set to all ones and the model queried again; between the two top classes the one
//! whose negative log-likelihood at a changes more is predicted. The estimate is the
//! histogram of the predictions. The port takes the log of raw logits (which can be
//! negative); here the outputs are softmax probabilities, so the NLL is defined.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{AttackRounds, PassiveAttack};
use crate::error::Result;
use crate::fed::{
    AttackOutput, ClientOracle, FederationConfig, Injection, RoundContext, ServerContext,
    ThreatModel,
};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct InfiltratorConfig {
    /// Rounds after whose aggregation the clients are queried (EC-LDA: the end).
    pub rounds: AttackRounds,
    /// The top class wins outright when it scores at least this many times the second.
    pub margin: f64,
}

impl Default for InfiltratorConfig {
    fn default() -> Self {
        InfiltratorConfig {
            rounds: AttackRounds::Last,
            margin: 1.5,
        }
    }
}

impl super::AttackConfig for InfiltratorConfig {
    const SERVER_SECONDS_ON_CORA: f64 = 2.0;

    const ACTIVE: bool = false;

    fn strategy(&self, name: &str) -> Box<dyn crate::fed::ServerStrategy> {
        Box::new(Infiltrator::new(name, self.clone()))
    }

    fn validate(&self, federation: &FederationConfig, field: &str) -> Result<()> {
        self.rounds
            .validate(federation.rounds, &format!("{field}.rounds"))?;
        if !(self.margin >= 1.0 && self.margin.is_finite()) {
            return Err(crate::error::Error::param(
                format!("{field}.margin"),
                format!("{} must be a finite number ≥ 1", self.margin),
            ));
        }
        Ok(())
    }
}

pub struct Infiltrator {
    name: String,
    config: InfiltratorConfig,
    in_dim: usize,
    classes: usize,
    output: AttackOutput,
}

impl Infiltrator {
    pub fn new(name: &str, config: InfiltratorConfig) -> Infiltrator {
        Infiltrator {
            name: name.to_string(),
            config,
            in_dim: 0,
            classes: 0,
            output: AttackOutput::default(),
        }
    }

    /// The class predicted for the client's node `v`.
    fn infer_node(&self, oracle: &dyn ClientOracle, client: usize, v: usize) -> Result<usize> {
        let query = |value: f32| -> Result<Vec<f32>> {
            let injection = Injection {
                features: vec![vec![value; self.in_dim]],
                links: vec![(0, v)],
            };
            Ok(oracle.query(client, &injection)?.remove(0))
        };
        let zero = query(0.0)?;
        let mut ranked: Vec<usize> = (0..zero.len()).collect();
        ranked.sort_by(|&a, &b| zero[b].total_cmp(&zero[a]).then(a.cmp(&b)));
        let (first, second) = (ranked[0], ranked[1]);
        if f64::from(zero[first]) >= self.config.margin * f64::from(zero[second]) {
            return Ok(first);
        }
        let ones = query(1.0)?;
        let change = |c: usize| (-(f64::from(ones[c])).ln()) - (-(f64::from(zero[c])).ln());
        // The port's rule, `B if |A| <= |B| else A`: the second also wins a tie.
        Ok(if change(first).abs() > change(second).abs() {
            first
        } else {
            second
        })
    }
}

impl PassiveAttack for Infiltrator {
    fn name(&self) -> &str {
        &self.name
    }

    fn threat_model(&self) -> ThreatModel {
        ThreatModel::QueryAccess
    }

    fn setup(&mut self, server: &Arc<ServerContext>) -> Result<()> {
        (self.in_dim, self.classes) = (server.in_dim, server.classes);
        if server.classes < 2 {
            return Err(crate::error::Error::param(
                "dataset",
                format!("attack `{}` needs at least 2 classes", self.name),
            ));
        }
        Ok(())
    }

    fn query(&mut self, ctx: &RoundContext, oracle: &dyn ClientOracle) -> Result<()> {
        if !self.config.rounds.contains(ctx.round, ctx.rounds) {
            return Ok(());
        }
        for client in 0..oracle.num_clients() {
            let targets = oracle.train_nodes(client);
            if targets.is_empty() {
                continue;
            }
            let mut counts = vec![0usize; self.classes];
            for &v in &targets {
                counts[self.infer_node(oracle, client, v)?] += 1;
            }
            let estimate = counts
                .iter()
                .map(|&n| n as f64 / targets.len() as f64)
                .collect();
            self.output
                .label_distribution(&self.name, ctx.round, client, estimate);
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

//! The `federation:` section of a scenario: rounds, client sampling, FedAvg weighting.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Weighting {
    /// FedAvg weight = the client's number of train nodes.
    #[default]
    Train,
    /// FedAvg weight = the client's number of nodes (EC-LDA's choice).
    All,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FederationConfig {
    pub rounds: usize,
    /// Fraction of clients selected each round (seeded), in (0, 1].
    pub client_fraction: f64,
    pub weighting: Weighting,
    /// One client holding the whole graph (the partition section is then ignored).
    pub centralized: bool,
}

impl Default for FederationConfig {
    fn default() -> Self {
        FederationConfig { rounds: 10, client_fraction: 1.0, weighting: Weighting::Train, centralized: false }
    }
}

/// The most rounds a federation may run (u64::MAX panicked allocating per-round records).
pub const MAX_ROUNDS: usize = 1_000_000;

impl FederationConfig {
    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_ROUNDS).contains(&self.rounds) {
            return Err(Error::param("federation.rounds", format!("{} is not allowed; allowed 1..={MAX_ROUNDS}", self.rounds)));
        }
        if !(self.client_fraction > 0.0 && self.client_fraction <= 1.0) {
            return Err(Error::param("federation.client_fraction", format!("{} is not in (0, 1]", self.client_fraction)));
        }
        Ok(())
    }
}

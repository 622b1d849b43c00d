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

impl FederationConfig {
    pub fn validate(&self) -> Result<()> {
        if self.rounds == 0 {
            return Err(Error::param("federation.rounds", "must be at least 1"));
        }
        if !(self.client_fraction > 0.0 && self.client_fraction <= 1.0) {
            return Err(Error::param("federation.client_fraction", format!("{} is not in (0, 1]", self.client_fraction)));
        }
        Ok(())
    }
}

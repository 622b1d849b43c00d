//! The `federation:` section of a scenario: rounds, client sampling (a fixed number per
//! round, or Poisson), FedAvg weighting.

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

/// How a round's clients are drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sampling {
    /// A fixed number of clients, drawn without replacement (`clients_per_round`, or
    /// round(client_fraction · N), at least 1).
    #[default]
    Fixed,
    /// Each client independently with probability `client_fraction` (a round may have
    /// none): the sampling that client-level DP accounting assumes.
    Poisson,
}

impl Sampling {
    fn is_fixed(&self) -> bool {
        *self == Sampling::Fixed
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FederationConfig {
    pub rounds: usize,
    /// Fraction of clients selected each round (seeded), in (0, 1].
    pub client_fraction: f64,
    /// Clients per round (fixed sampling), instead of `client_fraction`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients_per_round: Option<usize>,
    #[serde(skip_serializing_if = "Sampling::is_fixed")]
    pub sampling: Sampling,
    pub weighting: Weighting,
    /// One client holding the whole graph (the partition section is then ignored).
    pub centralized: bool,
}

impl Default for FederationConfig {
    fn default() -> Self {
        FederationConfig {
            rounds: 10,
            client_fraction: 1.0,
            clients_per_round: None,
            sampling: Sampling::Fixed,
            weighting: Weighting::Train,
            centralized: false,
        }
    }
}

/// The most rounds a federation may run (u64::MAX panicked allocating per-round records).
pub const MAX_ROUNDS: usize = 1_000_000;

impl FederationConfig {
    /// How many of `k` clients a round draws under fixed sampling: `clients_per_round`,
    /// or round(client_fraction · k), within 1..=k.
    pub fn fixed_round_size(&self, k: usize) -> usize {
        self.clients_per_round.unwrap_or_else(|| (self.client_fraction * k as f64).round() as usize).clamp(1, k)
    }

    /// Clients of `k` in a round on average: the fixed round size, or q·k under Poisson
    /// sampling.
    pub fn expected_round_size(&self, k: usize) -> f64 {
        match self.sampling {
            Sampling::Fixed => self.fixed_round_size(k) as f64,
            Sampling::Poisson => self.client_fraction * k as f64,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !(1..=MAX_ROUNDS).contains(&self.rounds) {
            return Err(Error::param("federation.rounds", format!("{} is not allowed; allowed 1..={MAX_ROUNDS}", self.rounds)));
        }
        if !(self.client_fraction > 0.0 && self.client_fraction <= 1.0) {
            return Err(Error::param("federation.client_fraction", format!("{} is not in (0, 1]", self.client_fraction)));
        }
        match self.clients_per_round {
            Some(0) => return Err(Error::param("federation.clients_per_round", "must be at least 1")),
            Some(_) if self.client_fraction < 1.0 => {
                return Err(Error::param("federation.clients_per_round", "give either clients_per_round or client_fraction, not both"));
            }
            Some(_) if self.sampling == Sampling::Poisson => {
                return Err(Error::param(
                    "federation.clients_per_round",
                    "Poisson sampling draws each client with probability client_fraction; a fixed count needs `sampling: fixed`",
                ));
            }
            _ => {}
        }
        Ok(())
    }
}

//! The server as a pluggable strategy (Flower's `Strategy`): hooks before the broadcast,
//! when each client's update arrives, at aggregation and after it. Attacks are
//! strategies; they see exactly what a real FedAvg server sees — the model it sent,
//! the model that came back, the client's sample count, learning rate and local epochs
//! — and nothing of the clients' data.

use super::params::ModelParams;

/// Where the federation stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RoundContext {
    /// 1-based round number.
    pub round: usize,
    pub rounds: usize,
}

/// One client's update as the server receives it.
#[derive(Debug, Clone, Copy)]
pub struct ClientUpdate<'a> {
    pub client: usize,
    /// The model the server sent to this client this round.
    pub sent: &'a ModelParams,
    /// The model the client returned.
    pub returned: &'a ModelParams,
    /// The client's FedAvg weight (train nodes or all nodes, per the scenario).
    pub samples: usize,
    pub lr: f64,
    pub local_epochs: usize,
}

pub trait ServerStrategy: Send {
    /// Short name for reports.
    fn name(&self) -> &str;

    /// The model to send to `client` this round; `None` sends the global model.
    fn before_broadcast(&mut self, _ctx: &RoundContext, _client: usize, _global: &ModelParams) -> Option<ModelParams> {
        None
    }

    /// Called once per update, in client-id order, before aggregation.
    fn after_update(&mut self, _ctx: &RoundContext, _update: &ClientUpdate<'_>) {}

    /// Combine the updates (client-id order); FedAvg's sample-weighted mean by default.
    fn aggregate(&mut self, _ctx: &RoundContext, updates: &[ClientUpdate<'_>]) -> ModelParams {
        fedavg(updates)
    }

    /// The new global model; may replace the aggregate (e.g. restore `previous`).
    fn after_aggregation(&mut self, _ctx: &RoundContext, _previous: &ModelParams, aggregated: ModelParams) -> ModelParams {
        aggregated
    }
}

/// Σ nᵢ·θᵢ / Σ nᵢ over the updates with nᵢ > 0.
///
/// # Panics
/// If no update carries a positive weight (the federation checks this beforehand).
pub fn fedavg(updates: &[ClientUpdate<'_>]) -> ModelParams {
    let items: Vec<(&ModelParams, f64)> =
        updates.iter().filter(|u| u.samples > 0).map(|u| (u.returned, u.samples as f64)).collect();
    ModelParams::weighted_average(&items)
}

/// Plain FedAvg: every hook at its default.
#[derive(Debug, Clone, Copy, Default)]
pub struct FedAvg;

impl ServerStrategy for FedAvg {
    fn name(&self) -> &str {
        "fedavg"
    }
}

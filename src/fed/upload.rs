//! How the clients' updates reach the server. By default the server reads every
//! update as the client sent it. A scenario's *upload protocol* (a defense's
//! federation-wide role) stands between them: it combines a round's updates, and it
//! may hide them, so that the server strategy sees only their aggregate — what secure
//! aggregation and a trusted aggregator give a server.
//!
//! A protocol works on updates Δᵢ = returnedᵢ − sentᵢ and returns the mean update the
//! new global model adds to what was sent; the server strategy then sees, when the
//! protocol hides the updates, one [`ClientUpdate`] whose `client` is
//! [`ClientUpdate::AGGREGATE`], `sent` the model broadcast, `returned` that model plus
//! the mean update, and `samples` the contributors' total weight. Which clients
//! contributed is recorded in the round's metrics (`aggregated`), for scoring.

use crate::error::Result;
use crate::fed::FederationConfig;
use crate::privacy::PrivacyCost;
use crate::rng::Rng;

use super::params::ModelParams;
use super::strategy::RoundContext;

/// What a protocol is built for: the federation's size and sampling.
#[derive(Debug, Clone, Copy)]
pub struct UploadContext<'a> {
    /// Number of clients N.
    pub clients: usize,
    pub federation: &'a FederationConfig,
    pub seed: u64,
}

/// One client's upload in a round: what it was sent, what it returned, its FedAvg weight.
#[derive(Debug, Clone, Copy)]
pub struct Upload<'a> {
    pub client: usize,
    pub sent: &'a ModelParams,
    pub returned: &'a ModelParams,
    pub weight: usize,
}

impl Upload<'_> {
    /// Δ = returned − sent per tensor, coordinate by coordinate in f64, computed as read.
    fn tensor_deltas(&self) -> impl Iterator<Item = impl Iterator<Item = f64> + '_> + '_ {
        self.returned
            .tensors
            .iter()
            .zip(&self.sent.tensors)
            .map(|(r, s)| r.values.iter().zip(&s.values).map(|(&a, &b)| f64::from(a) - f64::from(b)))
    }

    /// Δ's coordinates tensor after tensor (what [`Upload::delta`] flattens).
    pub fn delta_values(&self) -> impl Iterator<Item = f64> + '_ {
        self.tensor_deltas().flatten()
    }

    /// Δ = returned − sent, coordinate by coordinate, in f64.
    pub fn delta(&self) -> Vec<Vec<f64>> {
        self.tensor_deltas().map(Iterator::collect).collect()
    }
}

/// What a protocol makes of a round's uploads.
#[derive(Debug, Clone, PartialEq)]
pub struct Combined {
    /// The update the new global model adds to the model sent (per tensor, in order).
    pub mean_update: Vec<Vec<f64>>,
    /// The clients whose updates it holds (client-id order; dropped clients left out).
    pub contributors: Vec<usize>,
    /// Their total FedAvg weight.
    pub weight: usize,
}

/// What a protocol cost in one round (for the report).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ProtocolCost {
    /// Clients of the round, and how many of them dropped out.
    pub clients: usize,
    pub dropped: usize,
    /// Bytes a client sent, all messages of the protocol, averaged over the round's clients.
    pub bytes_per_client: f64,
    /// Bytes the server received and sent.
    pub server_bytes: f64,
    /// Why the round was aborted, nothing aggregated (too many dropouts), if it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted: Option<String>,
    /// Milliseconds of protocol work on this machine (wall clock: reported under
    /// `timings`, not with the deterministic figures).
    #[serde(skip)]
    pub ms: f64,
}

/// A federation's upload protocol, as the run reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct UploadReport {
    /// The defense's name.
    pub protocol: String,
    /// Whether the server saw only aggregates.
    pub hides_updates: bool,
    /// Per round, for protocols that count their messages (empty otherwise).
    pub rounds: Vec<ProtocolCost>,
}

/// A federation-wide role: between the clients' updates and the server strategy.
pub trait UploadProtocol: Send {
    /// The defense's name, as the scenario names it.
    fn name(&self) -> &str;

    /// Whether the server sees only the aggregate (otherwise it reads every update, and
    /// the protocol only decides how they are combined).
    fn hides_updates(&self) -> bool;

    /// Combine the round's uploads (client-id order; possibly none, when no client was
    /// sampled) into the update the model broadcast, `reference`, takes. `rng` is the
    /// round's stream for the protocol.
    fn combine(&mut self, ctx: &RoundContext, reference: &ModelParams, uploads: &[Upload<'_>], rng: &mut Rng) -> Result<Combined>;

    /// The privacy every client has after `rounds` rounds of the federation (client-level
    /// DP), if the protocol gives any.
    fn privacy_spent(&self, _rounds: usize) -> Option<PrivacyCost> {
        None
    }

    /// What the protocol cost per round so far, if it counts.
    fn costs(&self) -> Vec<ProtocolCost> {
        Vec::new()
    }

    /// What it keeps between rounds, for a checkpoint (nothing by default: every round's
    /// randomness is derived from the seed and the round).
    fn save_state(&self) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }

    /// Put back what [`save_state`](Self::save_state) saved.
    fn restore_state(&mut self, _state: &[u8]) -> Result<()> {
        Ok(())
    }
}

/// `base` + `update`, rounded to f32 once.
pub fn apply(base: &ModelParams, update: &[Vec<f64>]) -> ModelParams {
    let mut out = base.clone();
    if update.is_empty() {
        return out;
    }
    for (t, u) in out.tensors.iter_mut().zip(update) {
        for (v, d) in t.values.iter_mut().zip(u) {
            *v = (f64::from(*v) + d) as f32;
        }
    }
    out
}

//! A federation's state at a round boundary, so that a long run can stop (a signal, a
//! cluster's time limit, a crash) and go on later to the numbers it would have given
//! uninterrupted.
//!
//! Everything a federation computes before round 1 (the clients' data transforms, their
//! trainers' preparation, the initial model) is a deterministic function of the scenario,
//! so a resumed run builds it again. What the rounds change is kept here: the global
//! model, the metrics so far, per client the labels its round transforms rewrote, the
//! graph its trainer learned, its optimizer (when kept between rounds) and its defenses'
//! own state, and the server strategy's state. Every random draw of a round comes from a
//! stream derived from (seed, purpose, client, round), so no RNG state needs keeping.

use std::sync::atomic::AtomicBool;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{ModelParams, RoundMetrics};
use crate::data::Role;
use crate::error::{Error, Result};

/// The state of a federation after `round` rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FedState {
    /// Rounds finished.
    pub round: usize,
    pub global: ModelParams,
    pub metrics: Vec<RoundMetrics>,
    pub round_seconds: Vec<f64>,
    /// Per client: the rounds it trained in.
    pub trained: Vec<usize>,
    /// The model's parameter ids (Burn keys an optimizer's state by them), in visiting order.
    pub param_ids: Vec<u64>,
    pub clients: Vec<ClientCheckpoint>,
    /// The server strategy's own state ([`super::ServerStrategy::save_state`]).
    pub server: Vec<u8>,
    /// The upload protocol's state ([`super::upload::UploadProtocol::save_state`]).
    #[serde(default)]
    pub upload: Vec<u8>,
    /// The leading rounds this run took from a sibling's ([`SharedRounds`]): their
    /// metrics are the sibling's, their seconds were measured there.
    #[serde(default)]
    pub shared_rounds: usize,
}

/// What the rounds changed in one client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientCheckpoint {
    /// Labels, roles and label transition as its round transforms left them (`None`: the
    /// client has no round transform).
    pub labels: Option<LabelState>,
    /// The edge weights of the graph its trainer learned (`None`: the graph it started with).
    pub graph_weights: Option<Vec<f32>>,
    /// Its optimizer's state (Burn's burnpack bytes) when kept between rounds.
    pub optimizer: Option<Vec<u8>>,
    /// Per defense, in the pipeline's order: the state it keeps between rounds.
    pub defenses: Vec<Option<Vec<u8>>>,
}

/// The parts of a client's data a round transform may change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelState {
    pub labels: Vec<Option<u32>>,
    pub roles: Vec<Role>,
    pub label_transition: Option<Vec<f64>>,
}

/// Where a federation's states go (a file, in `run`).
pub type SaveState<'a> = dyn FnMut(&FedState) -> Result<()> + Send + 'a;

/// The first `rounds` rounds of federations that differ only in their server strategies,
/// run once: while a strategy is plain FedAvg ([`super::ServerStrategy::plain_rounds`])
/// the rounds it sees are those of every other such strategy. The first run to finish
/// round `rounds` leaves its state here; a run that finds one starts after it, its own
/// strategy as set up. Every round's randomness comes from (seed, purpose, client,
/// round) streams, so the run ends with the numbers it gives from round 1.
///
/// The run that leaves the state also leaves its next rounds while each is *round-free*
/// (its outcome follows from the federation's state before it alone, see
/// `Federation::run_with`). A later run whose attack round left the federation as it
/// found it (EC-LDA discards its round) would repeat them one round late: it takes
/// them instead ([`TailRound`]).
pub struct SharedRounds {
    pub rounds: usize,
    /// What the runs have in common, as their caller words it (`run`: the resolved
    /// scenario without its attacks); a run of another federation is refused.
    pub key: String,
    state: std::sync::Mutex<Option<FedState>>,
    tail: std::sync::Mutex<Vec<TailRound>>,
}

/// One round-free round after the shared ones, as the run that left them ran it.
#[derive(Debug, Clone)]
pub struct TailRound {
    pub metrics: RoundMetrics,
    pub seconds: f64,
}

impl std::fmt::Debug for SharedRounds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRounds").field("rounds", &self.rounds).field("filled", &self.is_filled()).finish_non_exhaustive()
    }
}

impl SharedRounds {
    pub fn new(rounds: usize, key: String) -> SharedRounds {
        SharedRounds { rounds, key, state: std::sync::Mutex::new(None), tail: std::sync::Mutex::default() }
    }

    /// Rounds `rounds + 1 …` of the run that left the state, as far as each was round-free.
    pub fn tail(&self) -> Vec<TailRound> {
        self.tail.lock().expect("no panic while holding the tail").clone()
    }

    /// Leave the round-free rounds that followed the state (by the run that left it).
    pub fn offer_tail(&self, tail: Vec<TailRound>) {
        let mut mine = self.tail.lock().expect("no panic while holding the tail");
        if mine.is_empty() {
            *mine = tail;
        }
    }

    /// The state after round `rounds`, once a run has left it.
    pub fn state(&self) -> Option<FedState> {
        self.state.lock().expect("no panic while holding the state").clone()
    }

    /// Leave `state` (after round `rounds`) for the other runs, unless one already has.
    pub fn offer(&self, state: FedState) {
        debug_assert_eq!(state.round, self.rounds);
        self.state.lock().expect("no panic while holding the state").get_or_insert(state);
    }

    pub fn is_filled(&self) -> bool {
        self.state.lock().expect("no panic while holding the state").is_some()
    }
}

/// How a federation saves its state and where it starts from.
#[derive(Default)]
pub struct Checkpointing<'a> {
    /// Save after every `every` rounds (`None`: only when stopped).
    pub every: Option<usize>,
    /// Start after the rounds this state has finished.
    pub resume: Option<FedState>,
    /// Where states go (`None`: nowhere, a stop loses the rounds done).
    pub save: Option<&'a mut SaveState<'a>>,
    /// Set (by a signal handler, or a test) to stop at the next round boundary, after
    /// saving: the run then ends with [`Error::Interrupted`].
    pub stop: Option<&'a AtomicBool>,
    /// Rounds shared with runs that differ only in their strategies: start from their
    /// state when one is there (and `resume` is not), or leave this run's.
    pub shared: Option<&'a SharedRounds>,
}

/// State that a defense's instance keeps between rounds, saved in a checkpoint and put
/// back into a fresh instance (built and prepared as the first time) on resume. State
/// made before round 1 from the data and the client's RNG streams needs none: a resumed
/// run makes it again.
pub trait Persistent: Send + Sync {
    fn save(&self) -> Result<Vec<u8>>;
    fn restore(&self, state: &[u8]) -> Result<()>;
}

impl<T: Persistent + ?Sized> Persistent for std::sync::Arc<T> {
    fn save(&self) -> Result<Vec<u8>> {
        (**self).save()
    }
    fn restore(&self, state: &[u8]) -> Result<()> {
        (**self).restore(state)
    }
}

/// `value` as checkpoint bytes (CBOR).
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    ciborium::into_writer(value, &mut out).map_err(|e| Error::Other(format!("checkpoint: cannot encode: {e}")))?;
    Ok(out)
}

/// Checkpoint bytes back as a `T`; `what` names them in the error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    ciborium::from_reader(bytes).map_err(|e| {
        Error::Other(format!("checkpoint: {what} cannot be read back ({e}); the checkpoint is damaged or from another version"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_round_trip_exactly() {
        let state = FedState {
            round: 3,
            global: ModelParams {
                tensors: vec![super::super::ParamTensor { name: "head.weight".into(), shape: vec![2], values: vec![0.1, -3.4e-39] }],
            },
            metrics: vec![],
            round_seconds: vec![0.25],
            trained: vec![3, 2],
            param_ids: vec![u64::MAX, 7],
            clients: vec![ClientCheckpoint {
                labels: Some(LabelState { labels: vec![Some(2), None], roles: vec![Role::Train, Role::Unused], label_transition: None }),
                graph_weights: Some(vec![0.5, f32::MIN_POSITIVE]),
                optimizer: None,
                defenses: vec![None, Some(vec![1, 2, 3])],
            }],
            upload: vec![9],
            server: vec![9],
            shared_rounds: 2,
        };
        let bytes = encode(&state).unwrap();
        assert_eq!(decode::<FedState>(&bytes, "state").unwrap(), state);
        let e = decode::<FedState>(&bytes[..bytes.len() / 2], "the federation").unwrap_err().to_string();
        assert!(e.contains("the federation cannot be read back"), "{e}");
    }
}

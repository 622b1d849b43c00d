//! The client-side seam: defenses, split into the roles they play.
//!
//! - [`DataTransform`]: changes the client's data once, before round 1 (LDP on
//!   features, labels or edges; label-DP). Whatever leaves the client afterwards is
//!   computed from the transformed data only. Applied in the declared order.
//! - [`LossTransform`]: replaces or extends the training loss (forward correction,
//!   label-proportion regularisers). Applied in the declared order, each wrapping the
//!   loss built so far, starting from cross-entropy.
//! - [`RoundTransform`]: changes the client's data at the start of a round it trains
//!   in, seeing the global model it received (multi-stage label-DP takes its prior
//!   from it). Applied in the declared order.
//! - [`LocalTrainer`]: runs the local epochs as middleware: wrapping the trainers after
//!   it (clip and noise the update) or replacing the loop (DP-GNN, Solitude's
//!   calibration; at most one, run innermost).
//!
//! A scenario's defenses form a [`ClientPipeline`] of [`DefenseBuilder`]s. Each client
//! gets its own instance of every defense, built from a [`ClientContext`] (Flower's
//! client apps work the same way): a [`Defense`] bundles the roles that instance plays
//! and holds whatever state they share for that one client, and the client's
//! [`ClientDefenses`] runs them in order.

use super::RoundContext;
use super::checkpoint::Persistent;
use super::upload::{UploadContext, UploadProtocol};
use crate::data::Task;
use crate::error::{Error, Result};
use crate::model::ModelConfig;
use crate::privacy::PrivacyCost;
use crate::rng::Rng;
use crate::train::{ClientTensors, LocalData, LocalTrainer, Loss, TrainConfig};

/// What a defense knows of the client it builds an instance for, before the client's
/// data is touched: who it is and how it will train.
#[derive(Debug, Clone, Copy)]
pub struct ClientContext<'a> {
    pub client: usize,
    pub model: &'a ModelConfig,
    pub train: &'a TrainConfig,
    /// Rounds of the federation (a client may train in fewer).
    pub rounds: usize,
    /// What the client learns.
    pub task: Task,
}

/// A defense as a scenario declares it: it builds one instance per client.
pub trait DefenseBuilder: Send + Sync {
    /// The defense's name, as the scenario names it.
    fn name(&self) -> &str;
    /// `client`'s instance; an error names the parameter at fault.
    fn build(&self, client: &ClientContext) -> Result<Defense>;
    /// The defense's federation-wide role, if it has one: how the clients' updates reach
    /// the server (see [`super::upload`]); built once per federation.
    fn upload(&self, _ctx: &UploadContext) -> Result<Option<Box<dyn UploadProtocol>>> {
        Ok(None)
    }
}

/// A closure is a builder (tests and one-off defenses): `(name, |ctx| …)`.
impl<F: Fn(&ClientContext) -> Result<Defense> + Send + Sync> DefenseBuilder for (String, F) {
    fn name(&self) -> &str {
        &self.0
    }
    fn build(&self, client: &ClientContext) -> Result<Defense> {
        (self.1)(client)
    }
}

pub trait DataTransform: Send + Sync {
    /// Transform the client's data; return what it spent of the client's privacy (the
    /// pipeline fills in `defense` with the defense's name).
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>>;
}

/// An instance shares its state between its roles through an `Arc`.
impl<T: DataTransform + ?Sized> DataTransform for std::sync::Arc<T> {
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        (**self).apply(data, rng)
    }
}

/// Changes a client's data at the start of a round it trains in. It may change the labels,
/// the roles and the label transition (what a checkpoint keeps of the data); state of
/// its own that lasts between rounds goes in a [`Persistent`] role.
pub trait RoundTransform: Send + Sync {
    /// Transform the client's data at the start of `round`, one it trains in.
    /// `received_logits` runs the model the client received this round on its data as
    /// held (`[nodes × classes]`, row-major); call it only when needed. Returns whether
    /// the data changed.
    fn apply(
        &self,
        round: RoundContext,
        data: &mut LocalData,
        received_logits: &mut dyn FnMut() -> Vec<f32>,
        rng: &mut Rng,
    ) -> Result<bool>;
}

impl<T: RoundTransform + ?Sized> RoundTransform for std::sync::Arc<T> {
    fn apply(
        &self,
        round: RoundContext,
        data: &mut LocalData,
        received_logits: &mut dyn FnMut() -> Vec<f32>,
        rng: &mut Rng,
    ) -> Result<bool> {
        (**self).apply(round, data, received_logits, rng)
    }
}

pub trait LossTransform: Send + Sync {
    /// The loss the client trains with, given `inner` (cross-entropy or what earlier
    /// defenses made of it), the client's data after every data transform and its
    /// device tensors (the graph as reported, before any adjacency a trainer learns).
    /// What a loss derives from the data, it derives here: a loss is rebuilt with its
    /// client (a checkpoint restored), and must not depend on when it was first called.
    fn wrap(&self, data: &LocalData, tensors: &ClientTensors, inner: Box<dyn Loss>) -> Result<Box<dyn Loss>>;
}

impl<T: LossTransform + ?Sized> LossTransform for std::sync::Arc<T> {
    fn wrap(&self, data: &LocalData, tensors: &ClientTensors, inner: Box<dyn Loss>) -> Result<Box<dyn Loss>> {
        (**self).wrap(data, tensors, inner)
    }
}

/// One client's instance of one defense: its name (as the scenario names it) and the
/// roles it plays.
pub struct Defense {
    pub name: String,
    pub data: Option<Box<dyn DataTransform>>,
    pub loss: Option<Box<dyn LossTransform>>,
    pub round: Option<Box<dyn RoundTransform>>,
    pub trainer: Option<Box<dyn LocalTrainer>>,
    /// What the instance keeps between rounds, for checkpoints (see [`Persistent`]).
    pub state: Option<Box<dyn Persistent>>,
}

impl Defense {
    /// A defense that plays no role yet (add roles with the `with_*` methods).
    pub fn new(name: impl Into<String>) -> Defense {
        Defense { name: name.into(), data: None, loss: None, round: None, trainer: None, state: None }
    }
    pub fn with_data(mut self, t: impl DataTransform + 'static) -> Defense {
        self.data = Some(Box::new(t));
        self
    }
    pub fn with_loss(mut self, t: impl LossTransform + 'static) -> Defense {
        self.loss = Some(Box::new(t));
        self
    }
    pub fn with_round(mut self, t: impl RoundTransform + 'static) -> Defense {
        self.round = Some(Box::new(t));
        self
    }
    pub fn with_trainer(mut self, t: impl LocalTrainer + 'static) -> Defense {
        self.trainer = Some(Box::new(t));
        self
    }
    pub fn with_state(mut self, t: impl Persistent + 'static) -> Defense {
        self.state = Some(Box::new(t));
        self
    }
}

/// A scenario's defenses, in their declared order.
#[derive(Default)]
pub struct ClientPipeline {
    builders: Vec<Box<dyn DefenseBuilder>>,
}

impl ClientPipeline {
    pub fn new(builders: Vec<Box<dyn DefenseBuilder>>) -> ClientPipeline {
        ClientPipeline { builders }
    }

    /// The one upload protocol among the defenses, if any (two are refused: each would
    /// combine the updates).
    pub fn upload_protocol(&self, ctx: &UploadContext) -> Result<Option<Box<dyn UploadProtocol>>> {
        let mut found: Option<Box<dyn UploadProtocol>> = None;
        for b in &self.builders {
            if let Some(p) = b.upload(ctx)? {
                if let Some(first) = &found {
                    return Err(Error::param(
                        "defenses",
                        format!("`{}` and `{}` each decide how the updates are aggregated; a scenario may use one", first.name(), p.name()),
                    ));
                }
                found = Some(p);
            }
        }
        Ok(found)
    }

    /// The client's own instances of every defense, in order.
    pub fn for_client(&self, client: &ClientContext) -> Result<ClientDefenses> {
        ClientDefenses::new(self.builders.iter().map(|b| b.build(client)).collect::<Result<_>>()?)
    }
}

/// One client's defense instances, in the declared order.
pub struct ClientDefenses {
    defenses: Vec<Defense>,
    /// The defenses with a trainer, outermost first: the wrapping ones in declared order,
    /// then the one that replaces the loop, if any.
    trainers: Vec<usize>,
}

impl ClientDefenses {
    /// Rejects more than one defense that replaces the local training loop.
    pub fn new(defenses: Vec<Defense>) -> Result<ClientDefenses> {
        let with = |wraps: bool| -> Vec<usize> {
            defenses.iter().enumerate().filter(|(_, d)| d.trainer.as_ref().is_some_and(|t| t.wraps() == wraps)).map(|(i, _)| i).collect()
        };
        let (mut trainers, replacing) = (with(true), with(false));
        if replacing.len() > 1 {
            let names: Vec<&str> = replacing.iter().map(|&i| defenses[i].name.as_str()).collect();
            return Err(Error::param(
                "defenses",
                format!(
                    "{} each replace the local training loop; a scenario may use at most one such defense (any number that wrap it)",
                    names.join(" and ")
                ),
            ));
        }
        trainers.extend(replacing);
        Ok(ClientDefenses { trainers, defenses })
    }

    /// Apply every data transform in order. The k-th defense draws from `rng(k)`, its own
    /// stream. Returns the privacy spent, in order.
    pub fn transform_data(&self, data: &mut LocalData, mut rng: impl FnMut(usize) -> Rng) -> Result<Vec<PrivacyCost>> {
        let mut spent = Vec::new();
        for (k, d) in self.defenses.iter().enumerate() {
            if let Some(t) = &d.data
                && let Some(mut cost) = t.apply(data, &mut rng(k))?
            {
                cost.defense = d.name.clone();
                spent.push(cost);
            }
        }
        Ok(spent)
    }

    /// Whether any defense changes data between rounds.
    pub fn has_round_transforms(&self) -> bool {
        self.defenses.iter().any(|d| d.round.is_some())
    }

    /// Whether every defense acts only before the rounds (on the data, and through a
    /// loss of that data): none changes data between rounds, trains in a way of its own
    /// or keeps state from round to round, so none makes a round depend on more than the
    /// federation's state before it.
    pub fn act_only_before_the_rounds(&self) -> bool {
        self.defenses.iter().all(|d| d.round.is_none() && d.trainer.is_none() && d.state.is_none())
    }

    /// Apply every round transform in order at the start of `round`; the k-th draws from
    /// `rng(k)`. Returns whether the data changed.
    pub fn transform_round(
        &self,
        round: RoundContext,
        data: &mut LocalData,
        received_logits: &mut dyn FnMut() -> Vec<f32>,
        mut rng: impl FnMut(usize) -> Rng,
    ) -> Result<bool> {
        let mut changed = false;
        for (k, d) in self.defenses.iter().enumerate() {
            if let Some(t) = &d.round {
                changed |= t.apply(round, data, received_logits, &mut rng(k))?;
            }
        }
        Ok(changed)
    }

    /// The client's loss: cross-entropy wrapped by every loss transform in order.
    pub fn loss(&self, data: &LocalData, tensors: &ClientTensors) -> Result<Box<dyn Loss>> {
        let mut loss: Box<dyn Loss> = Box::new(crate::train::CrossEntropy);
        for d in &self.defenses {
            if let Some(t) = &d.loss {
                loss = t.wrap(data, tensors, loss)?;
            }
        }
        Ok(loss)
    }

    /// The trainer chain, outermost first, each with its defense's name (empty: plain
    /// [`crate::train::FullBatch`]).
    /// Per defense, in order: the state it keeps between rounds (`None`: it keeps none).
    pub fn save_states(&self) -> Result<Vec<Option<Vec<u8>>>> {
        self.defenses.iter().map(|d| d.state.as_ref().map(|s| s.save()).transpose()).collect()
    }

    /// Put back what [`save_states`](Self::save_states) saved (into freshly built and
    /// prepared instances).
    pub fn restore_states(&self, states: &[Option<Vec<u8>>]) -> Result<()> {
        let names = || self.defenses.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(", ");
        if states.len() != self.defenses.len() {
            return Err(Error::Other(format!("checkpoint: {} defenses' states for the pipeline [{}]", states.len(), names())));
        }
        for (d, saved) in self.defenses.iter().zip(states) {
            match (&d.state, saved) {
                (Some(s), Some(bytes)) => s.restore(bytes)?,
                (None, None) => {}
                _ => {
                    return Err(Error::Other(format!(
                        "checkpoint: defense `{}`'s state does not match the pipeline [{}]",
                        d.name,
                        names()
                    )));
                }
            }
        }
        Ok(())
    }

    pub fn trainers(&self) -> Vec<(&dyn LocalTrainer, &str)> {
        self.trainers
            .iter()
            .map(|&i| (self.defenses[i].trainer.as_deref().expect("index of a defense with a trainer"), &*self.defenses[i].name))
            .collect()
    }
}

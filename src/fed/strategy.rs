//! The server as a pluggable strategy (Flower's `Strategy`): a setup step, hooks before
//! the broadcast, when each client's update arrives, at aggregation and after it.
//! Attacks are strategies. They see exactly what a real FedAvg server sees — the model
//! architecture, the model it sent, the model that came back, the client's sample
//! count, learning rate and local epochs — and nothing of the clients' data. A strategy
//! may run the model on graphs it builds itself ([`ServerContext::forward`]).
//!
//! Query access to a client's graph (injecting nodes and reading their outputs, as
//! Infiltrator does) is a stronger threat model: the federation grants it, through
//! [`ClientOracle`], only to a strategy that declares [`ThreatModel::QueryAccess`].

use std::sync::Arc;

use burn::tensor::Device;
use serde::{Deserialize, Serialize};

use super::FederationSetup;
use super::params::ModelParams;
use crate::data::{Features, Graph, Task};
use crate::error::{Error, Result};
use crate::model::{GraphTensors, ModelConfig, NodeClassifier, NodeInput, Output, pairs_on};
use crate::train::{HeadGradient, TrainConfig};

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
    /// The client's own head gradient averaged over its steps: only for a strategy that
    /// declares [`ThreatModel::GradientAccess`] or more, `None` otherwise.
    pub exact_gradient: Option<&'a HeadGradient>,
}

impl ClientUpdate<'_> {
    /// The `client` of an update that is the aggregate of several clients' updates: what
    /// a server behind secure aggregation or a trusted aggregator receives (see
    /// [`super::upload`]); the round's metrics say whose updates it holds.
    pub const AGGREGATE: usize = usize::MAX;

    /// Whether this is an aggregate of several clients' updates.
    pub fn is_aggregate(&self) -> bool {
        self.client == Self::AGGREGATE
    }
}

/// What a server is assumed able to do; recorded in `metrics.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ThreatModel {
    /// Follows the protocol's message flow, sees what it sends and receives, may
    /// tamper with the model it broadcasts.
    HonestButCurious,
    /// Additionally reads each client's own averaged head gradient (EC-LDA's published
    /// code does): stronger than a FedAvg server, which sees only models; for
    /// validating an estimator, or where updates cannot be inverted (Adam, momentum).
    GradientAccess,
    /// Additionally queries a client's model on the client's own graph with injected
    /// nodes (Infiltrator): not something a FedAvg server can do.
    QueryAccess,
}

/// What a real server knows at setup: the architecture it distributes, the input
/// dimension and classes, the local-training protocol it prescribes, the device. It
/// can instantiate the model from any [`ModelParams`] and run it on its own graphs.
#[derive(Debug, Clone)]
pub struct ServerContext {
    /// The server's randomness root: derive streams with `rng::derive(seed, purpose, …)`.
    pub seed: u64,
    /// What the clients learn: a sample is a node, or in link prediction a node pair.
    pub task: Task,
    pub model: ModelConfig,
    pub in_dim: usize,
    pub classes: usize,
    /// The protocol: optimizer, learning rate, local epochs.
    pub train: TrainConfig,
    pub rounds: usize,
    pub clients: usize,
    /// Parameter names in the order they travel (`convs.0.weight`, …, `head.weight`).
    pub param_names: Vec<String>,
    device: Device,
    template: NodeClassifier,
}

impl ServerContext {
    /// What the server of a federation set up as `setup` knows; `template` is any model
    /// of the architecture (its values are replaced on use).
    pub(crate) fn new(
        setup: &FederationSetup,
        clients: usize,
        template: &NodeClassifier,
        in_dim: usize,
        classes: usize,
        device: Device,
    ) -> ServerContext {
        use burn::module::Module as _;
        let template = template.valid();
        let param_names = ModelParams::of(&template).tensors.into_iter().map(|t| t.name).collect();
        ServerContext {
            seed: setup.seed,
            task: setup.task,
            model: setup.model.clone(),
            in_dim,
            classes,
            train: setup.train.clone(),
            rounds: setup.federation.rounds,
            clients,
            param_names,
            device,
            template,
        }
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// The model with parameters `params`, on the plain (non-autodiff) device.
    pub fn model(&self, params: &ModelParams) -> NodeClassifier {
        params.load_into(self.template.clone())
    }

    /// Evaluation forward pass (no dropout) of the model `params` on a graph the server
    /// built itself. `features` must have `in_dim` columns and one row per node;
    /// `feature_kprop` KProp rounds smooth them over `graph` first, as a client's
    /// defense does (a client's graph queried under LPGNN's KProp_x).
    pub fn forward(&self, params: &ModelParams, graph: &Graph, features: &Features, feature_kprop: usize) -> Result<Output> {
        let (g, x) = self.inputs(graph, features)?;
        Ok(self.model(params).forward_with(&x.smoothed(&g, feature_kprop), &g, None))
    }

    /// A graph the server built and its features on the device, their shapes checked.
    fn inputs(&self, graph: &Graph, features: &Features) -> Result<(GraphTensors, NodeInput)> {
        if features.cols() != self.in_dim || features.rows() != graph.num_nodes() {
            return Err(crate::error::Error::Other(format!(
                "server forward pass: features are {}×{}, expected {}×{} (nodes × model input)",
                features.rows(),
                features.cols(),
                graph.num_nodes(),
                self.in_dim
            )));
        }
        let g = GraphTensors::new(graph, &self.device)?;
        Ok((g, NodeInput::from_features(features, self.model.first_width(self.classes), &self.device)))
    }

    /// The samples' forward pass on a graph the server built: one row per node, or in
    /// link prediction one per pair of `pairs` (node ids of `graph`, `u ≠ v`).
    pub fn forward_samples(&self, params: &ModelParams, graph: &Graph, features: &Features, pairs: &[(u32, u32)]) -> Result<Output> {
        if self.task == Task::Node {
            return self.forward(params, graph, features, 0);
        }
        let (g, x) = self.inputs(graph, features)?;
        let pairs = pairs_on(pairs.iter(), &self.device)
            .filter(|_| pairs.iter().all(|&(u, v)| (u.max(v) as usize) < graph.num_nodes()))
            .ok_or_else(|| {
                crate::error::Error::Other(format!("server forward pass: pairs must name nodes of the {}-node graph", graph.num_nodes()))
            })?;
        Ok(self.model(params).forward_pairs(&x, None, &g, None, &pairs))
    }
}

/// Nodes an attacker adds to a client's graph: `features[i]` is injected node i, and
/// each `(i, v)` in `links` joins it to the client's node `v` (local id) both ways.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Injection {
    pub features: Vec<Vec<f32>>,
    pub links: Vec<(usize, usize)>,
}

/// Query access to the clients' graphs, granted only under [`ThreatModel::QueryAccess`].
pub trait ClientOracle {
    fn num_clients(&self) -> usize;
    /// Nodes of `client`'s graph (their local ids are 0..n).
    fn num_nodes(&self, client: usize) -> usize;
    /// The local ids of the nodes `client` trains on (the targets of a label-inference
    /// query attack; part of what query access grants).
    fn train_nodes(&self, client: usize) -> Vec<usize>;
    /// The current global model run on `client`'s graph (as the client holds it, after
    /// its defenses) with `injection` added: the softmax outputs of the injected nodes.
    fn query(&self, client: usize, injection: &Injection) -> Result<Vec<Vec<f32>>>;
}

/// What an attack inferred; scoring against the truth happens elsewhere
/// ([`crate::scoring`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Inference {
    /// A distribution over the classes of the client's training labels.
    LabelDistribution { estimate: Vec<f64> },
}

/// One inference about one client in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttackReport {
    pub attack: String,
    pub round: usize,
    pub client: usize,
    pub inference: Inference,
}

/// Everything a strategy hands back after the last round.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AttackOutput {
    pub reports: Vec<AttackReport>,
    /// Caveats about the inferences (e.g. an update that cannot be inverted exactly).
    pub notes: Vec<AttackNote>,
}

impl AttackOutput {
    /// Record `attack`'s inferred label distribution of `client` in `round`.
    pub fn label_distribution(&mut self, attack: &str, round: usize, client: usize, estimate: Vec<f64>) {
        self.reports.push(AttackReport { attack: attack.to_string(), round, client, inference: Inference::LabelDistribution { estimate } });
    }
}

/// A caveat one attack adds to its inferences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttackNote {
    pub attack: String,
    pub text: String,
}

impl std::fmt::Display for AttackNote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.attack, self.text)
    }
}

pub trait ServerStrategy: Send {
    /// Short name for reports.
    fn name(&self) -> &str;

    fn threat_model(&self) -> ThreatModel {
        ThreatModel::HonestButCurious
    }

    /// Called once before round 1 with what the server knows.
    fn setup(&mut self, _server: &Arc<ServerContext>) -> Result<()> {
        Ok(())
    }

    /// The model to send to `client` this round; `None` sends the global model.
    fn before_broadcast(&mut self, _ctx: &RoundContext, _client: usize, _global: &ModelParams) -> Option<ModelParams> {
        None
    }

    /// Called once per update, in client-id order, before aggregation.
    fn after_update(&mut self, _ctx: &RoundContext, _update: &ClientUpdate<'_>) -> Result<()> {
        Ok(())
    }

    /// Combine the updates (client-id order); FedAvg's sample-weighted mean by default.
    fn aggregate(&mut self, _ctx: &RoundContext, updates: &[ClientUpdate<'_>]) -> ModelParams {
        fedavg(updates)
    }

    /// The new global model; may replace the aggregate (e.g. restore `previous`).
    fn after_aggregation(&mut self, _ctx: &RoundContext, _previous: &ModelParams, aggregated: ModelParams) -> ModelParams {
        aggregated
    }

    /// After each round's aggregation, for strategies declaring
    /// [`ThreatModel::QueryAccess`] only.
    fn query(&mut self, _ctx: &RoundContext, _oracle: &dyn ClientOracle) -> Result<()> {
        Ok(())
    }

    /// The inferences made, once the federation has finished.
    fn finish(&mut self) -> AttackOutput {
        AttackOutput::default()
    }

    /// How many leading rounds of a federation of `rounds` this strategy is plain FedAvg
    /// in: it sends the global model, reads no update, aggregates by FedAvg and keeps
    /// the aggregate, queries no client, and its state stays as [`setup`](Self::setup)
    /// left it. Runs that differ only in their strategies then share those rounds
    /// (`fgl-sim matrix` runs them once). 0, the default, promises nothing.
    fn plain_rounds(&self, _rounds: usize) -> usize {
        0
    }

    /// How many trailing rounds of a federation of `rounds` this strategy is plain FedAvg
    /// in (as [`plain_rounds`](Self::plain_rounds) says it). A run whose attack round
    /// leaves the federation as it was (EC-LDA discards it) then repeats, one round late,
    /// the rounds of a sibling run that took none, and `fgl-sim matrix` takes them from
    /// it (see `Federation::run_with`). 0, the default, promises nothing.
    fn plain_tail(&self, _rounds: usize) -> usize {
        0
    }

    /// Whether in round `ctx` this strategy leaves the federation's course as plain FedAvg
    /// does: it sends the global model to every client, aggregates by FedAvg and keeps
    /// the aggregate (it may read the updates and query clients). By default: in its
    /// plain leading and trailing rounds.
    fn keeps_course(&self, ctx: &RoundContext) -> bool {
        ctx.round <= self.plain_rounds(ctx.rounds) || ctx.round > ctx.rounds.saturating_sub(self.plain_tail(ctx.rounds))
    }

    /// Everything the strategy has gathered so far, for a checkpoint between rounds
    /// (encode it with [`super::checkpoint::encode`]). A strategy that cannot be
    /// checkpointed says so, and a run that asks for checkpoints is refused before round 1.
    fn save_state(&self) -> Result<Vec<u8>> {
        Err(Error::Other(format!("server strategy `{}` cannot be checkpointed", self.name())))
    }

    /// Put back what [`save_state`](Self::save_state) saved; called after `setup`.
    fn restore_state(&mut self, _state: &[u8]) -> Result<()> {
        Err(Error::Other(format!("server strategy `{}` cannot be checkpointed", self.name())))
    }
}

/// Σ nᵢ·θᵢ / Σ nᵢ over the updates with nᵢ > 0.
///
/// # Panics
/// If no update carries a positive weight (the federation checks this beforehand).
pub fn fedavg(updates: &[ClientUpdate<'_>]) -> ModelParams {
    let items: Vec<(&ModelParams, f64)> = updates.iter().filter(|u| u.samples > 0).map(|u| (u.returned, u.samples as f64)).collect();
    ModelParams::weighted_average(&items)
}

/// Plain FedAvg: every hook at its default.
#[derive(Debug, Clone, Copy, Default)]
pub struct FedAvg;

impl ServerStrategy for FedAvg {
    fn name(&self) -> &str {
        "fedavg"
    }

    fn plain_rounds(&self, rounds: usize) -> usize {
        rounds
    }

    fn plain_tail(&self, rounds: usize) -> usize {
        rounds
    }

    /// FedAvg keeps nothing between rounds.
    fn save_state(&self) -> Result<Vec<u8>> {
        Ok(Vec::new())
    }

    fn restore_state(&mut self, _state: &[u8]) -> Result<()> {
        Ok(())
    }
}

//! Federated training: FedAvg rounds over clients' private data, with the server as a
//! [`ServerStrategy`] and the clients' defenses as a [`ClientPipeline`].
//!
//! A federation sees only what the clients hold ([`LocalData`], built by `run`), never
//! the whole dataset or its ground truth. Clients of a round train in parallel on the
//! CPU (rayon), each from its own RNG stream derived from (seed, client, round); their
//! updates are collected in client-id order and averaged in f64, so the numbers do not
//! depend on thread count or scheduling. On the GPU the clients train one after another.

pub mod checkpoint;
pub mod client;
pub mod config;
pub mod params;
pub mod strategy;
pub mod upload;

use std::borrow::Cow;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use burn::optim::ModuleOptimizer;
use burn::tensor::Device;
use rand::Rng as _;
use rand::seq::SliceRandom;
use rayon::prelude::*;
use serde::Serialize;

pub use checkpoint::{Checkpointing, FedState, Persistent};
pub use client::{ClientContext, ClientDefenses, ClientPipeline, DataTransform, Defense, DefenseBuilder, LossTransform, RoundTransform};
pub use config::{FederationConfig, Sampling, Weighting};
pub use params::{ModelParams, ParamTensor};
pub use strategy::{
    AttackNote, AttackOutput, AttackReport, ClientOracle, ClientUpdate, FedAvg, Inference, Injection, RoundContext, ServerContext,
    ServerStrategy, ThreatModel,
};

use crate::data::{Graph, Role, Task};
use crate::error::{Error, Result};
use crate::model::{ModelConfig, NodeClassifier};
use crate::privacy::PrivacyCost;
use crate::rng;
use crate::train::{self, ClientTensors, Eval, LocalData, LocalTrainer, Loss, TrainConfig};

/// How to federate: everything but the clients' data and defenses.
#[derive(Debug, Clone, PartialEq)]
pub struct FederationSetup {
    pub seed: u64,
    /// What the clients learn (the server's forward passes follow it).
    pub task: Task,
    pub model: ModelConfig,
    pub train: TrainConfig,
    pub federation: FederationConfig,
    /// Train the clients of a round in parallel (CPU); sequentially otherwise (GPU).
    pub parallel: bool,
    /// What a finished round reports to: nothing, a progress bar, or a caller's hook.
    pub progress: Progress,
}

/// Where round progress goes.
#[derive(Clone, Default)]
pub enum Progress {
    #[default]
    Hidden,
    /// A bar over rounds on the terminal.
    Bar,
    /// `hook(round, rounds)` after each round (`fgl-sim matrix` shows it beside its own bar).
    Hook(std::sync::Arc<dyn Fn(usize, usize) + Send + Sync>),
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Progress::Hidden => "Hidden",
            Progress::Bar => "Bar",
            Progress::Hook(_) => "Hook",
        })
    }
}

impl PartialEq for Progress {
    fn eq(&self, other: &Progress) -> bool {
        match (self, other) {
            (Progress::Hook(a), Progress::Hook(b)) => std::sync::Arc::ptr_eq(a, b),
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

/// Metrics of one round, all computed with the new global model.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct RoundMetrics {
    pub round: usize,
    /// Accuracy over the union of all clients' test nodes.
    pub test_accuracy: f64,
    pub test_loss: f64,
    /// Mean local training loss of the round (over the selected clients' epochs,
    /// weighted by their train-node counts).
    pub train_loss: f64,
    /// Per client (id order); null for a client without test nodes.
    pub client_test_accuracy: Vec<Option<f64>>,
    /// Clients that trained this round.
    pub selected: Vec<usize>,
    /// Per trained client (as `selected`), the local epoch its model selection kept
    /// (0-based; null under `train.selection: last`).
    pub selected_epochs: Vec<Option<usize>>,
    /// Link prediction: the area under the ROC curve over the union of the clients'
    /// test pairs (the scores pooled; absent for node classification).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub test_auc: Option<f64>,
    /// Under an upload protocol that hides the updates (secure aggregation, a trusted
    /// aggregator): the clients whose updates the aggregate the server saw holds.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub aggregated: Option<Vec<usize>>,
}

#[derive(Debug, Clone, Serialize)]
pub struct FedResult {
    pub rounds: Vec<RoundMetrics>,
    /// Number of parameters of the model.
    pub parameters: usize,
    /// Per client (id order): the privacy its defenses spent, in their order.
    pub privacy: Vec<Vec<PrivacyCost>>,
    /// The server's declared threat model.
    pub threat_model: ThreatModel,
    /// What the server strategy inferred.
    pub attack: AttackOutput,
    /// Per client: the train-label counts it trained on (after its defenses); for
    /// scoring only, never shown to the server.
    pub trained_label_counts: Vec<Vec<usize>>,
    /// The upload protocol, if a defense set one, and what it cost per round.
    pub upload: Option<upload::UploadReport>,
    /// Wall-clock seconds per round (not deterministic, reported under timings).
    #[serde(skip)]
    pub round_seconds: Vec<f64>,
    /// Leading rounds taken from a sibling run ([`checkpoint::SharedRounds`]).
    #[serde(skip)]
    pub shared_rounds: usize,
    /// Trailing rounds taken from a sibling run that ran them one round earlier
    /// ([`checkpoint::TailRound`]).
    #[serde(skip)]
    pub tail_rounds: usize,
}

/// One client's state: its defenses, its host data (as they transformed it), device
/// tensors, loss, FedAvg weight, and (when kept between rounds) its optimizer.
struct ClientState {
    id: usize,
    defenses: ClientDefenses,
    local: LocalData,
    tensors: ClientTensors,
    loss: Box<dyn Loss>,
    weight: usize,
    privacy: Vec<PrivacyCost>,
    optimizer: Mutex<Option<ModuleOptimizer>>,
}

/// Clients with their data and defenses, ready to train.
pub struct Federation {
    setup: FederationSetup,
    clients: Vec<ClientState>,
    /// Whether any client's defenses change its data between rounds.
    round_transforms: bool,
    template: NodeClassifier,
    server: Arc<ServerContext>,
    classes: usize,
    device: Device,
    /// How the updates reach the server, if a defense decides it (see [`upload`]).
    upload: Option<Box<dyn upload::UploadProtocol>>,
}

/// What a client's training derives from its host data: device tensors, loss, FedAvg
/// weight (built again when a round transform changes the data).
fn derived(
    local: &LocalData,
    setup: &FederationSetup,
    defenses: &ClientDefenses,
    classes: usize,
    device: &Device,
) -> Result<(ClientTensors, Box<dyn Loss>, usize)> {
    let weight = match (setup.federation.weighting, &local.link) {
        (Weighting::Train, None) => local.count(Role::Train),
        // Link prediction trains on pairs.
        (Weighting::Train, Some(split)) => split.train_pairs(),
        (Weighting::All, _) => local.graph.num_nodes(),
    };
    let tensors = ClientTensors::new(local, setup.model.first_width(classes), device)?;
    let loss = defenses.loss(local, &tensors)?;
    Ok((tensors, loss, weight))
}

impl Federation {
    /// The one way to build a federation. `clients[i]` is client i's private data; it
    /// gets its own instance of each of `pipeline`'s defenses, whose data transforms are
    /// applied to it here, once, in order.
    pub fn new(
        setup: FederationSetup,
        device: Device,
        clients: Vec<LocalData>,
        classes: usize,
        pipeline: ClientPipeline,
    ) -> Result<Federation> {
        let mut states = Vec::with_capacity(clients.len());
        let mut in_dim = None;
        for (id, mut local) in clients.into_iter().enumerate() {
            let context =
                ClientContext { client: id, model: &setup.model, train: &setup.train, rounds: setup.federation.rounds, task: setup.task };
            let defenses = pipeline.for_client(&context)?;
            let privacy = defenses.transform_data(&mut local, |k| rng::derive(setup.seed, "client-transform", &[id as u64, k as u64]))?;
            let d = local.features.cols();
            if *in_dim.get_or_insert(d) != d {
                return Err(Error::Other(format!("client {id} has {d} feature columns, others {}", in_dim.unwrap_or(0))));
            }
            for (k, (trainer, _)) in defenses.trainers().into_iter().enumerate() {
                // The trainer that replaces the loop keeps the stream it had alone; each
                // wrapping one gets its own, so adding one changes no other's draws.
                let mut rng = match trainer.wraps() {
                    false => rng::derive(setup.seed, "client-trainer", &[id as u64]),
                    true => rng::derive(setup.seed, "client-trainer-wrap", &[id as u64, k as u64]),
                };
                trainer.prepare(&local, &mut rng)?;
            }
            let (tensors, loss, weight) = derived(&local, &setup, &defenses, classes, &device)?;
            states.push(ClientState { id, defenses, local, tensors, loss, weight, privacy, optimizer: Mutex::new(None) });
        }
        // Labels a defense holds back until a later round do not count yet.
        let round_transforms = states.iter().any(|s| s.defenses.has_round_transforms());
        if states.iter().all(|s| s.weight == 0 || s.tensors.train.len == 0) && !round_transforms {
            return Err(Error::param("split", "no client has training nodes; nothing can be trained"));
        }
        let in_dim = in_dim.ok_or_else(|| Error::param("partition.clients", "there are no clients"))?;
        if let Some(m) = setup.federation.clients_per_round.filter(|&m| m > states.len()) {
            return Err(Error::param(
                "federation.clients_per_round",
                format!("{m} is more than the federation's {} clients", states.len()),
            ));
        }
        let upload =
            pipeline.upload_protocol(&upload::UploadContext { clients: states.len(), federation: &setup.federation, seed: setup.seed })?;
        let template = setup.model.init_for(setup.task, in_dim, classes, rng_seed(setup.seed, "model-init"), &device.clone().autodiff())?;
        let server = Arc::new(ServerContext::new(&setup, states.len(), &template, in_dim, classes, device.clone()));
        Ok(Federation { setup, clients: states, round_transforms, template, server, classes, device, upload })
    }

    /// What the server knows (architecture, dimensions, protocol, device).
    pub fn server_context(&self) -> &Arc<ServerContext> {
        &self.server
    }

    /// Run the rounds with `strategy` as the server.
    pub fn run(&mut self, strategy: &mut dyn ServerStrategy) -> Result<FedResult> {
        self.run_with(strategy, Checkpointing::default())
    }

    /// [`run`](Self::run), saving its state at round boundaries and starting from a saved
    /// one as `checkpoints` says ([`checkpoint`]).
    pub fn run_with(&mut self, strategy: &mut dyn ServerStrategy, checkpoints: Checkpointing<'_>) -> Result<FedResult> {
        strategy.setup(&self.server)?;
        let Checkpointing { every, mut resume, mut save, stop, shared } = checkpoints;
        let rounds = self.setup.federation.rounds;
        // Sharing rounds with another strategy's run is exact only while both are plain.
        let mut shared_rounds = 0;
        if let Some(sh) = shared {
            if sh.rounds == 0 || sh.rounds >= rounds || strategy.plain_rounds(rounds) < sh.rounds {
                return Err(Error::Other(format!(
                    "server strategy `{}` is not plain FedAvg through round {} of {rounds}: it cannot share those rounds with another run",
                    strategy.name(),
                    sh.rounds
                )));
            }
            if resume.is_none()
                && let Some(state) = sh.state()
            {
                shared_rounds = state.round;
                resume = Some(state);
            }
        }
        if save.is_some() || resume.is_some() {
            strategy.save_state()?; // a strategy that cannot be checkpointed is refused before round 1
        }
        let threat_model = strategy.threat_model();
        let mut global = ModelParams::of(&self.template);
        let parameters = global.num_values();

        let bar = progress_bar(rounds, self.setup.progress == Progress::Bar);
        let mut result = Vec::with_capacity(rounds);
        let mut round_seconds = Vec::with_capacity(rounds);
        let mut trained = vec![0usize; self.clients.len()];
        let mut start = 1;
        if let Some(state) = resume {
            start = state.round + 1;
            bar.set_position(state.round as u64);
            // A sibling's strategy state is not this strategy's: this one stays as set up,
            // which is its state after rounds it was plain in.
            let own_strategy = shared_rounds == 0;
            shared_rounds = shared_rounds.max(state.shared_rounds);
            (global, result, round_seconds, trained) = self.restore(state, own_strategy.then_some(&mut *strategy))?;
        }
        // A round is round-free when its outcome follows from the federation's state
        // before it alone: every client trains (no draw picks them), no round transform
        // or upload protocol acts, the strategy keeps FedAvg's course and no trainer draws
        // from the round's stream (trainers are not told the round number). The same
        // state then gives the same round whatever its number. The run that leaves the
        // shared rounds' state leaves its round-free rounds after them too; a sibling
        // whose attack round left the federation where that state stands takes them.
        let can_be_round_free =
            !self.round_transforms && self.upload.is_none() && selects_every_client(self.clients.len(), &self.setup.federation);
        let (mut left_state, mut tail, mut tail_closed) = (false, Vec::new(), false);
        let (mut tail_checked, mut tail_rounds) = (false, 0);
        let cfg = &self.setup;
        let template = &self.template;
        for round in start..=rounds {
            let t = Instant::now();
            let ctx = RoundContext { round, rounds };
            let selected = select_clients(self.clients.len(), &cfg.federation, cfg.seed, round);
            // What each selected client is sent: the global model itself unless the
            // strategy sends it something else.
            let sent: Vec<Cow<'_, ModelParams>> = selected
                .iter()
                .map(|&i| strategy.before_broadcast(&ctx, self.clients[i].id, &global).map_or(Cow::Borrowed(&global), Cow::Owned))
                .collect();
            if self.round_transforms {
                for (k, &i) in selected.iter().enumerate() {
                    let s = &mut self.clients[i];
                    let (tensors, local) = (&s.tensors, &mut s.local);
                    let mut logits = || {
                        let out = train::forward_eval(&sent[k].load_into(template.clone()), tensors).logits;
                        out.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 logits")
                    };
                    let rng = |j: usize| rng::derive(cfg.seed, "client-round-transform", &[s.id as u64, round as u64, j as u64]);
                    if s.defenses.transform_round(ctx, local, &mut logits, rng)? {
                        (s.tensors, s.loss, s.weight) = derived(&s.local, cfg, &s.defenses, self.classes, &self.device)?;
                    }
                }
            }
            let states = &self.clients;

            let train_one = |(k, &i): (usize, &usize)| {
                let s: &ClientState = &states[i];
                let model = sent[k].load_into(template.clone());
                let mut r = rng::derive(cfg.seed, "local-training", &[s.id as u64, round as u64]);
                let mut slot = s.optimizer.lock().expect("one trainer per client");
                let mut optim = match slot.take() {
                    Some(o) if cfg.train.keep_optimizer_state => o,
                    _ => train::optimizer(&cfg.train),
                };
                let mut call = train::TrainCall {
                    local: &s.local,
                    data: &s.tensors,
                    cfg: &cfg.train,
                    loss: s.loss.as_ref(),
                    optim: &mut optim,
                    rng: &mut r,
                };
                let chain: Vec<&dyn LocalTrainer> = s.defenses.trainers().into_iter().map(|(t, _)| t).collect();
                let (model, stats) = train::NextTrainer::train(&train::TrainerChain(&chain), model, &mut call)?;
                if cfg.train.keep_optimizer_state {
                    *slot = Some(optim);
                }
                Ok(((ModelParams::take(model), stats), r.get_word_pos() == 0))
            };
            let trained_now: Vec<_> = if cfg.parallel {
                selected.par_iter().enumerate().map(train_one).collect::<Result<_>>()?
            } else {
                selected.iter().enumerate().map(train_one).collect::<Result<_>>()?
            };
            let (outcomes, undrawn): (Vec<_>, Vec<bool>) = trained_now.into_iter().unzip();
            for &i in &selected {
                trained[i] += 1;
            }
            // A trainer that refines the client's graph (a learned adjacency) leaves it to
            // the client: evaluation and later rounds use it.
            for (k, &i) in selected.iter().enumerate() {
                if let Some(g) = &outcomes[k].1.refined_graph {
                    self.clients[i].tensors.graph = g.clone();
                }
            }
            let states = &self.clients;

            // Read off the device only for a server granted the clients' own gradients.
            let exact: Vec<_> = outcomes
                .iter()
                .map(|(_, stats)| {
                    stats.head_gradient.as_ref().filter(|_| threat_model >= ThreatModel::GradientAccess).map(|g| g.averaged())
                })
                .collect();
            let updates: Vec<ClientUpdate<'_>> = selected
                .iter()
                .zip(&sent)
                .zip(outcomes.iter().zip(&exact))
                .map(|((&i, sent), ((returned, _), exact))| ClientUpdate {
                    client: states[i].id,
                    sent: sent.as_ref(),
                    returned,
                    samples: states[i].weight,
                    lr: cfg.train.lr,
                    local_epochs: cfg.train.epochs,
                    exact_gradient: exact.as_ref(),
                })
                .collect();
            let hidden = self.upload.as_ref().is_some_and(|p| p.hides_updates());
            if !hidden {
                for u in &updates {
                    strategy.after_update(&ctx, u)?;
                }
            }
            let (mut loss_sum, mut loss_weight) = (0.0, 0.0);
            for (&i, (_, stats)) in selected.iter().zip(&outcomes) {
                let n = states[i].tensors.train.len as f64;
                for l in &stats.epoch_losses {
                    loss_sum += n * l;
                    loss_weight += n;
                }
            }
            let mut aggregated = None;
            let new_global = if let Some(protocol) = self.upload.as_mut() {
                // The protocol combines the updates; a server behind it that hides them
                // sees one aggregate update, whose reference is the model broadcast.
                let uploads: Vec<upload::Upload<'_>> = updates
                    .iter()
                    .map(|u| upload::Upload { client: u.client, sent: u.sent, returned: u.returned, weight: u.samples })
                    .collect();
                let reference = sent.first().map_or(&global, |s| s.as_ref());
                let mut r = rng::derive(cfg.seed, "upload-protocol", &[round as u64]);
                let combined = protocol.combine(&ctx, reference, &uploads, &mut r)?;
                let proposal = upload::apply(reference, &combined.mean_update);
                if protocol.hides_updates() {
                    if !combined.contributors.is_empty() {
                        let aggregate = ClientUpdate {
                            client: ClientUpdate::AGGREGATE,
                            sent: reference,
                            returned: &proposal,
                            samples: combined.weight,
                            lr: cfg.train.lr,
                            local_epochs: cfg.train.epochs,
                            exact_gradient: None,
                        };
                        strategy.after_update(&ctx, &aggregate)?;
                    }
                    aggregated = Some(combined.contributors);
                }
                strategy.after_aggregation(&ctx, &global, proposal)
            } else if updates.iter().any(|u| u.samples > 0) {
                let aggregated = strategy.aggregate(&ctx, &updates);
                strategy.after_aggregation(&ctx, &global, aggregated)
            } else {
                global.clone() // no selected client had any weight: nothing to average
            };
            let round_free = can_be_round_free
                && undrawn.iter().all(|&u| u)
                && sent.iter().all(|s| matches!(s, Cow::Borrowed(_)))
                && strategy.keeps_course(&ctx);
            drop(updates);
            drop(sent);
            global = new_global;

            let model = global.load_into(template.clone());
            if threat_model == ThreatModel::QueryAccess {
                let oracle = Oracle { clients: states, server: &self.server, global: &global };
                strategy.query(&ctx, &oracle)?;
            }
            let eval_one = |s: &ClientState| {
                let logits = train::forward_eval_on(&model, &s.tensors, Role::Test).logits;
                let scores = s.tensors.link.is_some().then(|| train::positive_scores(&logits, &s.tensors.test));
                (train::evaluate_set(&logits, &s.tensors.test), scores)
            };
            let evals: Vec<(Eval, Option<train::Scores>)> =
                if cfg.parallel { states.par_iter().map(eval_one).collect() } else { states.iter().map(eval_one).collect() };
            let mut total = Eval::default();
            for (e, _) in &evals {
                total.add(*e);
            }
            let pooled: Option<train::Scores> = evals.iter().map(|(_, s)| s.clone()).collect::<Option<Vec<_>>>().map(|s| s.concat());
            let evals: Vec<Eval> = evals.into_iter().map(|(e, _)| e).collect();
            let m = RoundMetrics {
                round,
                test_accuracy: total.accuracy().unwrap_or(f64::NAN),
                test_loss: total.mean_loss().unwrap_or(f64::NAN),
                train_loss: if loss_weight > 0.0 { loss_sum / loss_weight } else { f64::NAN },
                client_test_accuracy: evals.iter().map(Eval::accuracy).collect(),
                selected: selected.iter().map(|&i| states[i].id).collect(),
                selected_epochs: outcomes.iter().map(|(_, stats)| stats.selected_epoch).collect(),
                test_auc: pooled.and_then(|s| train::auc_roc(&s)),
                aggregated,
            };
            bar.set_message(format!("test acc {:.4}", m.test_accuracy));
            bar.inc(1);
            if let Progress::Hook(hook) = &cfg.progress {
                hook(round, rounds);
            }
            // A non-finite training loss only spreads: stop at this round boundary (the
            // run is reported as diverged).
            let diverged = loss_weight > 0.0 && !m.train_loss.is_finite();
            result.push(m);
            round_seconds.push(t.elapsed().as_secs_f64());
            if left_state && !tail_closed {
                match round_free && !diverged {
                    true => tail.push(checkpoint::TailRound {
                        metrics: result.last().expect("pushed").clone(),
                        seconds: *round_seconds.last().expect("pushed"),
                    }),
                    false => tail_closed = true,
                }
            }
            if diverged {
                break;
            }
            let stopped = stop.is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst));
            if round < rounds
                && (stopped || every.is_some_and(|n| round % n == 0))
                && let Some(save) = save.as_mut()
            {
                let state = self.capture(round, &global, &result, &round_seconds, &trained, strategy)?;
                save(&FedState { shared_rounds, ..state })?;
            }
            if let Some(sh) = shared.filter(|sh| sh.rounds == round && !sh.is_filled()) {
                sh.offer(self.capture(round, &global, &result, &round_seconds, &trained, strategy)?);
                left_state = true;
            }
            if stopped && round < rounds {
                bar.finish_and_clear();
                return Err(Error::Interrupted(format!("stopped after round {round} of {rounds}")));
            }
            // Plain from here on, and standing where the shared rounds left the sibling
            // (an attack round discarded): the rest are the sibling's next rounds.
            if let Some(sh) = shared.filter(|sh| {
                !left_state && !tail_checked && round > sh.rounds && round < rounds && rounds - round <= strategy.plain_tail(rounds)
            }) {
                tail_checked = true;
                let need = rounds - round;
                let sibling = sh.tail();
                if let (true, Some(state)) = (can_be_round_free && sibling.len() >= need, sh.state())
                    && self.course_state(&global)? == course_bytes(&state.global, &state.clients, &state.upload)?
                {
                    for (n, taken) in sibling.into_iter().take(need).enumerate() {
                        let m = RoundMetrics { round: round + 1 + n, ..taken.metrics };
                        for &id in &m.selected {
                            trained[id] += 1;
                        }
                        result.push(m);
                        round_seconds.push(taken.seconds);
                    }
                    tail_rounds = need;
                    bar.set_position(rounds as u64);
                    if let Progress::Hook(hook) = &cfg.progress {
                        hook(rounds, rounds);
                    }
                    break;
                }
            }
        }
        if let Some(sh) = shared.filter(|_| left_state) {
            sh.offer_tail(tail);
        }
        bar.finish_and_clear();

        let states = &self.clients;
        // Client-level DP at aggregation covers every client over every round run,
        // sampled or not.
        let federation_wide = self.upload.as_ref().and_then(|p| {
            let mut cost = p.privacy_spent(result.len())?;
            cost.defense = p.name().to_string();
            Some(cost)
        });
        let privacy = states
            .iter()
            .zip(&trained)
            .map(|(s, &rounds)| {
                let mut spent = s.privacy.clone();
                spent.extend(federation_wide.clone());
                for (trainer, name) in s.defenses.trainers() {
                    if let Some(mut cost) = trainer.privacy_spent(rounds) {
                        cost.defense = name.to_string();
                        spent.push(cost);
                    }
                }
                spent
            })
            .collect();
        let trained_label_counts = states.iter().map(|s| s.local.train_label_counts()).collect();
        let upload = self.upload.as_ref().map(|p| upload::UploadReport {
            protocol: p.name().to_string(),
            hides_updates: p.hides_updates(),
            rounds: p.costs(),
        });
        Ok(FedResult {
            rounds: result,
            parameters,
            privacy,
            threat_model,
            attack: strategy.finish(),
            trained_label_counts,
            upload,
            round_seconds,
            shared_rounds,
            tail_rounds,
        })
    }
}

impl Federation {
    /// The state after `round` rounds (see [`checkpoint`]).
    fn capture(
        &self,
        round: usize,
        global: &ModelParams,
        metrics: &[RoundMetrics],
        round_seconds: &[f64],
        trained: &[usize],
        strategy: &dyn ServerStrategy,
    ) -> Result<FedState> {
        Ok(FedState {
            round,
            global: global.clone(),
            metrics: metrics.to_vec(),
            round_seconds: round_seconds.to_vec(),
            trained: trained.to_vec(),
            param_ids: param_ids(&self.template),
            clients: self.client_checkpoints()?,
            server: strategy.save_state()?,
            upload: self.upload_state()?,
            shared_rounds: 0,
        })
    }

    /// What the rounds changed in each client ([`checkpoint::ClientCheckpoint`]).
    fn client_checkpoints(&self) -> Result<Vec<checkpoint::ClientCheckpoint>> {
        self.clients
            .iter()
            .map(|s| {
                let optimizer = match s.optimizer.lock().expect("no trainer runs between rounds").as_ref() {
                    Some(o) => {
                        Some(o.into_bytes().map_err(|e| Error::Other(format!("checkpoint: client {}'s optimizer: {e:?}", s.id)))?.to_vec())
                    }
                    None => None,
                };
                Ok(checkpoint::ClientCheckpoint {
                    labels: s.defenses.has_round_transforms().then(|| checkpoint::LabelState {
                        labels: s.local.labels.clone(),
                        roles: s.local.roles.clone(),
                        label_transition: s.local.label_transition.clone(),
                    }),
                    graph_weights: s.tensors.graph.edge_weights(),
                    optimizer,
                    defenses: s.defenses.save_states()?,
                })
            })
            .collect()
    }

    /// The upload protocol's state (empty without one).
    fn upload_state(&self) -> Result<Vec<u8>> {
        Ok(self.upload.as_ref().map(|p| p.save_state()).transpose()?.unwrap_or_default())
    }

    /// Where the federation stands for its next round, with `global` as its global model:
    /// the global model, the clients' and the upload protocol's states, as bytes (equal
    /// bytes: bit for bit the same values, −0 and +0 told apart).
    fn course_state(&self, global: &ModelParams) -> Result<Vec<u8>> {
        course_bytes(global, &self.client_checkpoints()?, &self.upload_state()?)
    }

    /// Put `state` back into this freshly built federation and `strategy` (set up; `None`:
    /// it stays as set up, the state being a sibling run's);
    /// returns the global model, metrics, round seconds and rounds trained per client.
    #[allow(clippy::type_complexity)]
    fn restore(
        &mut self,
        state: FedState,
        strategy: Option<&mut dyn ServerStrategy>,
    ) -> Result<(ModelParams, Vec<RoundMetrics>, Vec<f64>, Vec<usize>)> {
        let fail = |msg: String| Err(Error::Other(format!("checkpoint does not fit this federation: {msg}")));
        let own = ModelParams::of(&self.template);
        let shape = |p: &ModelParams| p.tensors.iter().map(|t| (t.name.clone(), t.shape.clone())).collect::<Vec<_>>();
        if shape(&own) != shape(&state.global) || state.param_ids.len() != own.tensors.len() {
            return fail("another model".into());
        }
        if state.clients.len() != self.clients.len() || state.trained.len() != self.clients.len() {
            return fail(format!("{} clients saved, {} now", state.clients.len(), self.clients.len()));
        }
        if state.round > self.setup.federation.rounds || state.metrics.len() != state.round {
            return fail(format!("round {} of {} with {} rounds' metrics", state.round, self.setup.federation.rounds, state.metrics.len()));
        }
        // An optimizer's state is keyed by the parameter ids of the model it stepped.
        self.template = with_param_ids(self.template.clone(), &state.param_ids);
        for (s, c) in self.clients.iter_mut().zip(state.clients) {
            if let Some(l) = c.labels {
                let n = s.local.labels.len();
                if l.labels.len() != n || l.roles.len() != n {
                    return fail(format!("client {} holds {n} nodes", s.id));
                }
                (s.local.labels, s.local.roles, s.local.label_transition) = (l.labels, l.roles, l.label_transition);
                (s.tensors, s.loss, s.weight) = derived(&s.local, &self.setup, &s.defenses, self.classes, &self.device)?;
            }
            if let Some(w) = c.graph_weights {
                let entries = s.local.graph.csr().1.len();
                if w.len() != entries {
                    return fail(format!("client {} has {entries} graph entries, {} weights saved", s.id, w.len()));
                }
                let w = burn::tensor::Tensor::<2>::from_data(burn::tensor::TensorData::new(w, [entries, 1]), &self.device);
                s.tensors.graph = s.tensors.graph.with_edge_weights(w);
            }
            if let Some(bytes) = c.optimizer {
                let optim = train::optimizer(&self.setup.train)
                    .from_bytes(burn::tensor::Bytes::from_bytes_vec(bytes))
                    .map_err(|e| Error::Other(format!("checkpoint: client {}'s optimizer: {e:?}", s.id)))?;
                *s.optimizer.lock().expect("no trainer runs yet") = Some(optim);
            }
            s.defenses.restore_states(&c.defenses)?;
        }
        if let Some(strategy) = strategy {
            strategy.restore_state(&state.server)?;
        }
        if let Some(p) = self.upload.as_mut() {
            p.restore_state(&state.upload)?;
        }
        Ok((state.global, state.metrics, state.round_seconds, state.trained))
    }
}

/// The ids of `model`'s parameters, in visiting order.
fn param_ids<M: burn::module::Module>(model: &M) -> Vec<u64> {
    struct Ids(Vec<u64>);
    impl burn::module::ModuleVisitor for Ids {
        fn visit_float<const D: usize>(&mut self, param: &burn::module::Param<burn::tensor::Tensor<D>>) {
            self.0.push(param.id.val());
        }
    }
    let mut ids = Ids(Vec::new());
    model.visit(&mut ids);
    ids.0
}

/// `model` with its parameters renamed to `ids` (in visiting order).
fn with_param_ids<M: burn::module::Module>(model: M, ids: &[u64]) -> M {
    struct Rename<'a>(&'a [u64], usize);
    impl burn::module::ModuleMapper for Rename<'_> {
        fn map_float<const D: usize>(
            &mut self,
            param: burn::module::Param<burn::tensor::Tensor<D>>,
        ) -> burn::module::Param<burn::tensor::Tensor<D>> {
            let (_, value, mapper) = param.consume();
            self.1 += 1;
            burn::module::Param::from_mapped_value(burn::module::ParamId::from(self.0[self.1 - 1]), value, mapper)
        }
    }
    model.map(&mut Rename(ids, 0))
}

/// Query access to the clients' graphs for one round (see [`ClientOracle`]).
struct Oracle<'a> {
    clients: &'a [ClientState],
    server: &'a ServerContext,
    global: &'a ModelParams,
}

impl ClientOracle for Oracle<'_> {
    fn num_clients(&self) -> usize {
        self.clients.len()
    }

    fn num_nodes(&self, client: usize) -> usize {
        self.clients[client].local.graph.num_nodes()
    }

    fn train_nodes(&self, client: usize) -> Vec<usize> {
        self.clients[client].local.roles.iter().enumerate().filter(|(_, r)| **r == Role::Train).map(|(v, _)| v).collect()
    }

    fn query(&self, client: usize, injection: &Injection) -> Result<Vec<Vec<f32>>> {
        let local = &self.clients.get(client).ok_or_else(|| Error::Other(format!("oracle: no client {client}")))?.local;
        let n = local.graph.num_nodes();
        let m = injection.features.len();
        if let Some(row) = injection.features.iter().find(|r| r.len() != self.server.in_dim) {
            return Err(Error::Other(format!(
                "oracle: an injected node has {} features, the model takes {}",
                row.len(),
                self.server.in_dim
            )));
        }
        if let Some(&(i, v)) = injection.links.iter().find(|&&(i, v)| i >= m || v >= n) {
            return Err(Error::Other(format!("oracle: link ({i}, {v}) names an injected node ≥ {m} or a client node ≥ {n}")));
        }
        // The injected nodes' outputs depend on nodes within `hops` of them (every layer
        // and KProp round reaches one hop further) and on those nodes' degrees, which the
        // subgraph induced on one hop more keeps whole; one hop less from the linked
        // client nodes. Node order is kept, so every sum runs in the same order as on
        // the whole graph and the answer is the same, at a fraction of the cost.
        let hops = self.server.model.layers + self.server.model.kprop_steps + local.feature_kprop;
        let kept = local.graph.within_hops(injection.links.iter().map(|&(_, v)| v), hops);
        let mut position = vec![usize::MAX; n];
        for (i, &v) in kept.iter().enumerate() {
            position[v] = i;
        }
        let (sub, _) = local.graph.induced_subgraph(&kept);
        let k = kept.len();
        let graph = if sub.is_directed() {
            // A directed (edge-LDP) graph stays directed; the injected links go both ways.
            let mut senders: Vec<Vec<u32>> = (0..k).map(|v| sub.neighbors(v).to_vec()).chain((0..m).map(|_| Vec::new())).collect();
            for &(i, v) in &injection.links {
                senders[position[v]].push((k + i) as u32);
                senders[k + i].push(position[v] as u32);
            }
            Graph::from_senders(senders)
        } else {
            let edges = sub.edges().chain(injection.links.iter().map(|&(i, v)| (k + i, position[v])));
            Graph::from_edges(k + m, edges, "oracle")?.0
        };
        let features = local.features.select_rows(&kept).with_rows_appended(&injection.features);
        let out = self.server.forward(self.global, &graph, &features, local.feature_kprop)?;
        let probs = burn::tensor::activation::softmax(out.logits, 1);
        let [_, c] = probs.dims();
        let values = probs.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 probabilities");
        Ok((k..k + m).map(|r| values[r * c..(r + 1) * c].to_vec()).collect())
    }
}

/// A u64 seed for `purpose`, derived from the scenario seed.
fn rng_seed(seed: u64, purpose: &str) -> u64 {
    rng::derive(seed, purpose, &[]).random()
}

/// [`Federation::course_state`]'s bytes.
fn course_bytes(global: &ModelParams, clients: &[checkpoint::ClientCheckpoint], upload: &[u8]) -> Result<Vec<u8>> {
    checkpoint::encode(&(global, clients, upload))
}

/// Whether [`select_clients`] picks every one of `k` clients in every round, drawing nothing.
pub(crate) fn selects_every_client(k: usize, cfg: &FederationConfig) -> bool {
    cfg.sampling != Sampling::Poisson && cfg.fixed_round_size(k) == k
}

/// The clients of `round` (ascending): all of them, a fixed number drawn without
/// replacement ([`FederationConfig::fixed_round_size`]), or each with probability
/// `client_fraction` (Poisson), from the round's own stream.
fn select_clients(k: usize, cfg: &FederationConfig, seed: u64, round: usize) -> Vec<usize> {
    if cfg.sampling == Sampling::Poisson {
        let mut r = rng::derive(seed, "client-sampling-poisson", &[round as u64]);
        return (0..k).filter(|_| r.random::<f64>() < cfg.client_fraction).collect();
    }
    let m = cfg.fixed_round_size(k);
    if m == k {
        return (0..k).collect();
    }
    let mut all: Vec<usize> = (0..k).collect();
    all.shuffle(&mut rng::derive(seed, "client-selection", &[round as u64]));
    let mut chosen = all[..m].to_vec();
    chosen.sort_unstable();
    chosen
}

fn progress_bar(rounds: usize, show: bool) -> indicatif::ProgressBar {
    if !show {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(rounds as u64);
    bar.set_style(
        indicatif::ProgressStyle::with_template("round {pos}/{len} [{bar:30}] {elapsed_precise} {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fixed sampling: `clients_per_round` clients every round, distinct and ascending;
    /// everyone without a fraction or count. Poisson sampling: each client in each round
    /// with probability q, independently — over 4 000 rounds of 10 clients at q = 0.3
    /// every client's count is within 4.5 binomial standard deviations of 1 200 (σ ≈ 29),
    /// some rounds have nobody (0.7¹⁰ ≈ 2.8 %: expected 113), and the draw repeats.
    #[test]
    fn clients_are_sampled_as_the_federation_says() {
        let fixed = FederationConfig { clients_per_round: Some(3), ..Default::default() };
        for round in 1..50 {
            let s = select_clients(10, &fixed, 7, round);
            assert_eq!(s.len(), 3);
            assert!(s.windows(2).all(|w| w[0] < w[1]));
        }
        assert_eq!(select_clients(4, &FederationConfig::default(), 7, 1), vec![0, 1, 2, 3]);

        let poisson = FederationConfig { client_fraction: 0.3, sampling: Sampling::Poisson, ..Default::default() };
        let mut counts = [0usize; 10];
        let mut empty = 0;
        for round in 1..=4000 {
            let s = select_clients(10, &poisson, 7, round);
            empty += usize::from(s.is_empty());
            for c in s {
                counts[c] += 1;
            }
        }
        let sd = (4000.0f64 * 0.3 * 0.7).sqrt();
        for (c, &n) in counts.iter().enumerate() {
            assert!((n as f64 - 1200.0).abs() < 4.5 * sd, "client {c}: {n}");
        }
        assert!((60..180).contains(&empty), "{empty} empty rounds");
        assert_eq!(select_clients(10, &poisson, 7, 5), select_clients(10, &poisson, 7, 5));
        assert_ne!(
            (1..20).map(|r| select_clients(10, &poisson, 7, r)).collect::<Vec<_>>(),
            (1..20).map(|r| select_clients(10, &poisson, 8, r)).collect::<Vec<_>>()
        );
    }
}

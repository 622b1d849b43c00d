//! Federated training: FedAvg rounds over the clients of a partition, with the server as
//! a [`ServerStrategy`] and the clients' defenses as a [`ClientTransform`].
//!
//! Clients of a round train in parallel on the CPU (rayon), each from its own RNG
//! stream derived from (seed, client, round); their updates are collected in client-id
//! order and averaged in f64, so the numbers do not depend on thread count or
//! scheduling. On the GPU the clients train one after another.

pub mod params;
pub mod strategy;
pub mod transform;

use std::sync::Mutex;
use std::time::Instant;

use burn::optim::ModuleOptimizer;

use rand::seq::SliceRandom;
use rayon::prelude::*;
use serde::Serialize;

pub use params::{ModelParams, ParamTensor};
pub use strategy::{ClientUpdate, FedAvg, RoundContext, ServerStrategy};
pub use transform::{ClientTransform, Identity};

use burn::tensor::Device;

use crate::data::Role;
use crate::error::{Error, Result};
use crate::model::ModelConfig;
use crate::rng;
use crate::run::Prepared;
use crate::scenario::{FederationConfig, TrainConfig, Weighting};
use crate::train::{self, ClientTensors, CrossEntropy, Eval, LocalData, Loss};

/// Everything a federation needs besides the prepared data.
pub struct FedConfig<'a> {
    pub seed: u64,
    pub model: &'a ModelConfig,
    pub train: &'a TrainConfig,
    pub federation: &'a FederationConfig,
    /// Train the clients of a round in parallel (CPU); sequentially otherwise (GPU).
    pub parallel: bool,
    /// Show a progress bar over rounds.
    pub progress: bool,
}

/// Metrics of one round, all computed with the new global model.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

#[derive(Debug, Clone, Serialize)]
pub struct FedResult {
    pub rounds: Vec<RoundMetrics>,
    /// Number of parameters of the model.
    pub parameters: usize,
    /// Wall-clock seconds per round (not deterministic, reported under timings).
    #[serde(skip)]
    pub round_seconds: Vec<f64>,
}

/// One client's state: its device tensors, FedAvg weight, and (when kept between
/// rounds) its optimizer.
struct ClientState {
    id: usize,
    tensors: ClientTensors,
    weight: usize,
    optimizer: Mutex<Option<ModuleOptimizer>>,
}

/// Run FedAvg as configured. `strategy` is the server; `transform` every client's
/// defense.
pub fn run(
    prepared: &Prepared,
    cfg: &FedConfig<'_>,
    device: &Device,
    strategy: &mut dyn ServerStrategy,
    transform: &dyn ClientTransform,
) -> Result<FedResult> {
    let dataset = &prepared.dataset;
    let mut states = Vec::with_capacity(prepared.clients.len());
    let mut in_dim = None;
    for client in &prepared.clients {
        let mut local = LocalData::of_client(dataset, client, &prepared.split)?;
        transform.transform_data(&mut local, &mut rng::derive(cfg.seed, "client-transform", &[client.id as u64]))?;
        let d = local.features.cols();
        if *in_dim.get_or_insert(d) != d {
            return Err(Error::Other(format!("client {} has {d} feature columns, others {}", client.id, in_dim.unwrap_or(0))));
        }
        let weight = match cfg.federation.weighting {
            Weighting::Train => local.count(Role::Train),
            Weighting::All => local.graph.num_nodes(),
        };
        states.push(ClientState { id: client.id, tensors: ClientTensors::new(&local, device)?, weight, optimizer: Mutex::new(None) });
    }
    if states.iter().all(|s| s.weight == 0 || s.tensors.train.len == 0) {
        return Err(Error::param("split", "no client has training nodes; nothing can be trained"));
    }
    let in_dim = in_dim.ok_or_else(|| Error::param("partition.clients", "there are no clients"))?;
    let template = cfg.model.init(in_dim, dataset.num_classes(), rng_seed(cfg.seed, "model-init"), &device.clone().autodiff())?;
    let mut global = ModelParams::of(&template);
    let parameters = global.num_values();

    let rounds = cfg.federation.rounds;
    let bar = progress_bar(rounds, cfg.progress);
    let mut result = FedResult { rounds: Vec::with_capacity(rounds), parameters, round_seconds: Vec::new() };
    let loss: &dyn Loss = &CrossEntropy;
    for round in 1..=rounds {
        let t = Instant::now();
        let ctx = RoundContext { round, rounds };
        let selected = select_clients(states.len(), cfg.federation.client_fraction, cfg.seed, round);
        let sent: Vec<ModelParams> =
            selected.iter().map(|&i| strategy.before_broadcast(&ctx, states[i].id, &global).unwrap_or_else(|| global.clone())).collect();

        let train_one = |(k, &i): (usize, &usize)| {
            let s: &ClientState = &states[i];
            let model = sent[k].load_into(template.clone());
            let mut r = rng::derive(cfg.seed, "local-training", &[s.id as u64, round as u64]);
            let mut slot = s.optimizer.lock().expect("one trainer per client");
            let mut optim = match slot.take() {
                Some(o) if cfg.train.keep_optimizer_state => o,
                _ => train::optimizer(cfg.train),
            };
            let (model, stats) = transform.train_local(model, &s.tensors, cfg.train, loss, &mut optim, &mut r);
            if cfg.train.keep_optimizer_state {
                *slot = Some(optim);
            }
            (ModelParams::of(&model), stats)
        };
        let outcomes: Vec<_> = if cfg.parallel {
            selected.par_iter().enumerate().map(train_one).collect()
        } else {
            selected.iter().enumerate().map(train_one).collect()
        };

        let updates: Vec<ClientUpdate<'_>> = selected
            .iter()
            .zip(&sent)
            .zip(&outcomes)
            .map(|((&i, sent), (returned, _))| ClientUpdate {
                client: states[i].id,
                sent,
                returned,
                samples: states[i].weight,
                lr: cfg.train.lr,
                local_epochs: cfg.train.epochs,
            })
            .collect();
        for u in &updates {
            strategy.after_update(&ctx, u);
        }
        let (mut loss_sum, mut loss_weight) = (0.0, 0.0);
        for (&i, (_, stats)) in selected.iter().zip(&outcomes) {
            let n = states[i].tensors.train.len as f64;
            for l in &stats.epoch_losses {
                loss_sum += n * l;
                loss_weight += n;
            }
        }
        let new_global = if updates.iter().any(|u| u.samples > 0) {
            let aggregated = strategy.aggregate(&ctx, &updates);
            strategy.after_aggregation(&ctx, &global, aggregated)
        } else {
            global.clone() // no selected client had any weight: nothing to average
        };
        drop(updates);
        global = new_global;

        let model = global.load_into(template.clone());
        let eval_one = |s: &ClientState| train::evaluate_set(&train::forward_eval(&model, &s.tensors).logits, &s.tensors.test);
        let evals: Vec<Eval> = if cfg.parallel { states.par_iter().map(eval_one).collect() } else { states.iter().map(eval_one).collect() };
        let mut total = Eval::default();
        for e in &evals {
            total.add(*e);
        }
        let m = RoundMetrics {
            round,
            test_accuracy: total.accuracy().unwrap_or(f64::NAN),
            test_loss: total.mean_loss().unwrap_or(f64::NAN),
            train_loss: if loss_weight > 0.0 { loss_sum / loss_weight } else { f64::NAN },
            client_test_accuracy: evals.iter().map(Eval::accuracy).collect(),
            selected: selected.iter().map(|&i| states[i].id).collect(),
        };
        bar.set_message(format!("test acc {:.4}", m.test_accuracy));
        bar.inc(1);
        result.rounds.push(m);
        result.round_seconds.push(t.elapsed().as_secs_f64());
    }
    bar.finish_and_clear();
    Ok(result)
}

/// A u64 seed for `purpose`, derived from the scenario seed.
fn rng_seed(seed: u64, purpose: &str) -> u64 {
    use rand::Rng as _;
    rng::derive(seed, purpose, &[]).random()
}

/// Indices of the clients that train in `round`: all of them, or a seeded sample of
/// max(1, round(fraction·K)), in ascending order.
fn select_clients(k: usize, fraction: f64, seed: u64, round: usize) -> Vec<usize> {
    if fraction >= 1.0 {
        return (0..k).collect();
    }
    let m = ((fraction * k as f64).round() as usize).clamp(1, k);
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

//! The stages of a run, in data-flow order: load → preprocess → partition → split →
//! federation (clients' data through their defenses; the server with its attacks) →
//! scoring of the attacks against the ground truth → results.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use std::io::IsTerminal;

use crate::backend;
use crate::data::{Dataset, DatasetStats, LinkSplit, Role, Split, Task, registry};
use crate::error::{Error, Result};
use crate::estimate::{self, DataSize};
use crate::fed::checkpoint::{self, Checkpointing, FedState, SharedRounds};
use crate::fed::{ClientPipeline, FedResult, Federation, FederationSetup, Progress};
use crate::metrics::{self, ClientMetrics, Metrics, StageTimings};
use crate::partition::{self, Client, ClientReport, Partition, PartitionConfig};
use crate::results::{self, ResultsDir};
use crate::rng;
use crate::scenario::{Scenario, SplitScope, yaml_name};
use crate::train::LocalData;

/// Everything the data stages produce for the training stages.
pub struct Prepared {
    pub dataset: Dataset,
    pub partition: Partition,
    pub clients: Vec<Client>,
    /// Roles of all nodes (global ids); per-client splits are merged into it.
    pub split: Split,
    pub reports: Vec<ClientReport>,
    pub dropped_edges: partition::DroppedEdges,
    pub timings: StageTimings,
    /// Link prediction: each client's edge split (client order); empty for node
    /// classification.
    pub links: Vec<LinkSplit>,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Load, preprocess, partition and split as the scenario says.
pub fn prepare(scenario: &Scenario, data_dir: Option<&Path>) -> Result<Prepared> {
    prepare_within(scenario, data_dir, None, 1, &mut |_| {})
}

/// [`prepare`], refusing first a scenario whose estimated peak memory with `threads`
/// worker threads exceeds `max_memory` bytes: a synthetic graph before it is generated,
/// a dataset once loaded (before anything else). `log` hears how a long partitioning
/// goes.
pub fn prepare_within(
    scenario: &Scenario,
    data_dir: Option<&Path>,
    max_memory: Option<f64>,
    threads: usize,
    log: &mut dyn FnMut(&str),
) -> Result<Prepared> {
    let check = |size: &DataSize| match max_memory {
        Some(limit) => check_memory(scenario, size, threads, limit),
        None => Ok(()),
    };
    let synthetic = scenario.dataset.name == "synthetic";
    if synthetic {
        check(&DataSize::of_synthetic(&scenario.synthetic()))?;
    }
    let t = Instant::now();
    let dataset = registry::load(&scenario.dataset.name, data_dir, &scenario.synthetic(), scenario.seed)?;
    if !synthetic {
        check(&DataSize::of_dataset(&dataset))?;
    }
    let load_ms = ms(t);
    let mut prepared = prepare_dataset(scenario, dataset, log)?;
    prepared.timings.load_ms += load_ms;
    Ok(prepared)
}

/// [`prepare`] on a loaded `dataset` (in place of the scenario's): preprocess,
/// partition and split as the scenario says.
pub fn prepare_dataset(scenario: &Scenario, mut dataset: Dataset, log: &mut dyn FnMut(&str)) -> Result<Prepared> {
    let seed = scenario.seed;
    let t = Instant::now();
    let pre = &scenario.dataset.preprocess;
    if pre.lcc {
        dataset = dataset.largest_component();
    }
    if pre.minmax || pre.group_columns.is_some() {
        let features = dataset.require_features()?;
        dataset.features = Some(pre.apply(features)?);
    }
    let load_ms = ms(t);

    let t = Instant::now();
    let partition = if scenario.federation.centralized {
        Partition::single(dataset.num_nodes())
    } else {
        scenario.partition.validate(&dataset)?;
        partition::partition_logged(&dataset, &scenario.partition, seed, log)?
    };
    let (clients, dropped_edges) = partition.clients(&dataset.graph);
    let partition_ms = ms(t);

    let t = Instant::now();
    let split = make_split(scenario, &dataset, &clients)?;
    let reports = partition::report(&dataset, &clients, &split);
    let links = match scenario.task {
        Task::Node => Vec::new(),
        Task::Link => clients
            .iter()
            .map(|c| {
                LinkSplit::random(
                    &c.graph,
                    scenario.link.unwrap_or_default(),
                    &mut rng::derive(scenario.seed, "link-split", &[c.id as u64]),
                )
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let split_ms = ms(t);

    let timings = StageTimings { load_ms, partition_ms, split_ms };
    Ok(Prepared { dataset, partition, clients, split, reports, dropped_edges, timings, links })
}

/// Refuse `scenario` if its memory estimate on a graph of `size` exceeds `limit` bytes.
pub fn check_memory(scenario: &Scenario, size: &DataSize, threads: usize, limit: f64) -> Result<()> {
    let m = estimate::memory(scenario, size, threads);
    if m.bytes() <= limit {
        return Ok(());
    }
    Err(Error::param(
        "--max-memory",
        format!(
            "the scenario needs about {} at its peak (estimate), more than the limit of {}: {}; lower those fields, or raise --max-memory \
             (`--dry-run` shows every part of the estimate)",
            estimate::human(m.bytes()),
            estimate::human(limit),
            m.drivers()
        ),
    ))
}

fn make_split(scenario: &Scenario, dataset: &Dataset, clients: &[Client]) -> Result<Split> {
    let s = &scenario.split;
    if s.standard {
        return dataset.standard_split.clone().ok_or_else(|| {
            Error::param(
                "split.standard",
                format!("dataset `{}` ships no standard split; use a random split (standard: false)", dataset.name),
            )
        });
    }
    let draw = |labels: &[Option<u32>], rng: &mut rng::Rng| match s.normal_below {
        Some(t) => Split::normal_threshold(labels, t, rng),
        None => Split::random(labels, s.ratios(), rng),
    };
    Ok(match s.scope {
        SplitScope::Global => draw(&dataset.labels, &mut rng::derive(scenario.seed, "split", &[])),
        SplitScope::PerClient => {
            let mut roles = vec![Role::Unused; dataset.num_nodes()];
            for c in clients {
                let labels: Vec<Option<u32>> = c.nodes.iter().map(|&v| dataset.labels[v]).collect();
                let local = draw(&labels, &mut rng::derive(scenario.seed, "split", &[c.id as u64]));
                for (&v, &r) in c.nodes.iter().zip(&local.roles) {
                    roles[v] = r;
                }
            }
            Split { roles }
        }
    })
}

/// Options of `fgl-sim run` that are not part of the scenario.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    pub data_dir: Option<PathBuf>,
    pub out: Option<PathBuf>,
    pub force: bool,
    pub quiet: bool,
    /// Worker threads for parallel client training (default: all cores). Results do
    /// not depend on it.
    pub threads: Option<usize>,
    /// Where round progress goes instead of a bar (`fgl-sim matrix`); `None`: a bar on
    /// a terminal unless `quiet`. (A reproduction's hook hears runs, not rounds: (runs
    /// finished, runs to do).)
    pub progress: Option<Progress>,
    /// `reproduce`: keep the finished runs already in the results directory whose
    /// recorded scenario is the one the command now gives, and run only the rest.
    pub resume: bool,
    /// The run's checkpoint file: when it exists the run goes on from it; it is written
    /// every `checkpoint_every` rounds and when `stop` is set. `None`: no checkpoints.
    pub checkpoint: Option<PathBuf>,
    pub checkpoint_every: Option<usize>,
    /// Set (by a signal) to stop at the next round boundary, saving a checkpoint first.
    pub stop: Option<Arc<AtomicBool>>,
    /// Refuse, before any work, a scenario whose estimated peak memory exceeds this many
    /// bytes ([`estimate::memory`]); `None`: no check.
    pub max_memory: Option<f64>,
    /// Rounds this run shares with runs of the same scenario but other attacks
    /// ([`SharedRounds`], keyed by [`shared_key`]); its attacks must be plain FedAvg
    /// through them.
    pub shared: Option<Arc<SharedRounds>>,
}

/// What runs sharing rounds have in common: the resolved scenario without its attacks.
pub fn shared_key(scenario: &Scenario) -> String {
    Scenario { attacks: Vec::new(), ..scenario.clone() }.to_yaml()
}

pub use crate::results::CHECKPOINT_FILE;

/// What a checkpoint file holds: the run it belongs to and the federation's state.
#[derive(Debug, Serialize, Deserialize)]
pub struct RunCheckpoint {
    pub format: u32,
    /// The run's name in its metrics (the scenario file's stem).
    pub stem: String,
    /// The resolved scenario: a resumed run is this scenario, whatever else is given.
    pub scenario: String,
    pub fed: FedState,
}

const CHECKPOINT_FORMAT: u32 = 1;

/// Read the checkpoint at `path`.
pub fn read_checkpoint(path: &Path) -> Result<RunCheckpoint> {
    let bytes = std::fs::read(path).map_err(|e| Error::output(path, format!("cannot read the checkpoint: {e}")))?;
    let c: RunCheckpoint = checkpoint::decode(&bytes, "its contents").map_err(|e| Error::output(path, e.to_string()))?;
    if c.format != CHECKPOINT_FORMAT {
        return Err(Error::output(path, format!("checkpoint format {} (this fgl-sim reads {CHECKPOINT_FORMAT})", c.format)));
    }
    Ok(c)
}

/// The scenario a checkpoint was made for.
pub fn checkpoint_scenario(path: &Path, c: &RunCheckpoint) -> Result<Scenario> {
    Scenario::parse(&c.scenario, &path.display().to_string(), &[])
}

/// The federation the scenario describes over the prepared clients: each client's
/// private data, through the scenario's defenses, on the scenario's backend. The one
/// way `run`, `bench` and the tests build a federation.
pub fn federation(scenario: &Scenario, prepared: &Prepared, progress: Progress) -> Result<Federation> {
    federation_with(scenario, prepared, progress, scenario.client_pipeline())
}

/// [`federation`] with the clients' defenses given as a pipeline (a library user's own
/// defense builders) instead of the scenario's.
pub fn federation_with(scenario: &Scenario, prepared: &Prepared, progress: Progress, pipeline: ClientPipeline) -> Result<Federation> {
    let device = backend::device(scenario.backend)?;
    let setup = FederationSetup {
        seed: scenario.seed,
        task: scenario.task,
        model: scenario.model.clone(),
        train: scenario.train.clone(),
        federation: scenario.federation.clone(),
        parallel: backend::parallel_clients(scenario.backend),
        progress,
    };
    let clients = prepared
        .clients
        .iter()
        .enumerate()
        .map(|(i, c)| {
            debug_assert_eq!(c.id, i, "clients come in id order");
            let mut local = LocalData::of_client(&prepared.dataset, c, &prepared.split)?;
            if let Some(split) = prepared.links.get(i) {
                local.predict_links(split.clone());
            }
            Ok(local)
        })
        .collect::<Result<Vec<_>>>()?;
    let classes = match scenario.task {
        Task::Node => prepared.dataset.num_classes(),
        Task::Link => 2,
    };
    Federation::new(setup, device, clients, classes, pipeline)
}

/// Train the prepared clients as the scenario says, with its attacks as the server.
pub fn train(scenario: &Scenario, prepared: &Prepared, opts: &RunOptions) -> Result<FedResult> {
    train_named(scenario, "", prepared, opts)
}

/// [`train`] of the run called `stem`, checkpointed as `opts` says.
fn train_named(scenario: &Scenario, stem: &str, prepared: &Prepared, opts: &RunOptions) -> Result<FedResult> {
    let progress = match &opts.progress {
        Some(p) => p.clone(),
        None if !opts.quiet && std::io::stderr().is_terminal() => Progress::Bar,
        None => Progress::Hidden,
    };
    let mut server = scenario.server()?;
    let resolved = scenario.to_yaml();
    let resume = match &opts.checkpoint {
        Some(path) if path.exists() => {
            let c = read_checkpoint(path)?;
            if c.scenario != resolved {
                return Err(Error::output(path, "is the checkpoint of another scenario (its resolved scenario differs from this run's)"));
            }
            Some(c.fed)
        }
        _ => None,
    };
    let mut write = |state: &FedState| -> Result<()> {
        let path = opts.checkpoint.as_deref().expect("saving only with a checkpoint path");
        let c = RunCheckpoint { format: CHECKPOINT_FORMAT, stem: stem.to_string(), scenario: resolved.clone(), fed: state.clone() };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::output(dir, format!("cannot create: {e}")))?;
        }
        crate::atomic::write_file(path, &checkpoint::encode(&c)?)
    };
    if let Some(sh) = &opts.shared
        && sh.key != shared_key(scenario)
    {
        return Err(Error::Other(
            "rounds shared with a run of another scenario (runs may share rounds only when they differ in their attacks alone)".into(),
        ));
    }
    let checkpoints = Checkpointing {
        every: opts.checkpoint_every,
        resume,
        save: if opts.checkpoint.is_some() { Some(&mut write) } else { None },
        stop: opts.stop.as_deref(),
        shared: opts.shared.as_deref(),
    };
    let result = backend::with_threads(opts.threads, || federation(scenario, prepared, progress)?.run_with(server.as_mut(), checkpoints));
    match (result, &opts.checkpoint) {
        (Err(Error::Interrupted(what)), Some(path)) => Err(Error::Interrupted(format!("{what}; its state is saved in {}", path.display()))),
        (r, _) => r,
    }
}

/// The partition section of `metrics.json` and of `fgl-sim partition --json`.
pub fn partition_summary(cfg: &PartitionConfig, prepared: &Prepared, centralized: bool) -> metrics::PartitionSummary {
    metrics::PartitionSummary {
        method: if centralized { "centralized".to_string() } else { yaml_name(&cfg.method) },
        clients: prepared.clients.len(),
        communities: prepared.partition.communities,
        modularity: prepared.partition.modularity,
        unassigned_nodes: prepared.partition.assignment.iter().filter(|a| a.is_none()).count(),
        dropped_edges: prepared.dropped_edges,
    }
}

/// The results directory of a run: `--out`, the scenario's `output.dir`, or a new
/// `results/<stem>-<time>`.
pub fn out_dir(scenario: &Scenario, scenario_path: &Path, opts: &RunOptions) -> PathBuf {
    match (&opts.out, &scenario.output.dir) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => results::default_dir(Path::new("results"), stem_of(scenario_path)),
    }
}

fn stem_of(scenario_path: &Path) -> &str {
    scenario_path.file_stem().and_then(|s| s.to_str()).unwrap_or("scenario")
}

/// Run a scenario and write its results directory; returns the directory.
pub fn run(scenario: &Scenario, scenario_path: &Path, opts: &RunOptions) -> Result<PathBuf> {
    let stem = stem_of(scenario_path);
    let dir = out_dir(scenario, scenario_path, opts);
    // Refuse before doing any work, so an existing run is never lost.
    let out = ResultsDir::claim(&dir, opts.force)?;
    // Only `--force` gets here past a checkpoint: start over.
    remove_checkpoint(&dir.join(CHECKPOINT_FILE))?;
    finish_in(&out, scenario, stem, opts)
}

/// Go on with the interrupted run whose results directory is `dir`, from its checkpoint.
pub fn resume(dir: &Path, opts: &RunOptions) -> Result<PathBuf> {
    let out = ResultsDir::claim_checkpointed(dir)?;
    let path = dir.join(CHECKPOINT_FILE);
    let c = read_checkpoint(&path)?;
    let scenario = checkpoint_scenario(&path, &c)?;
    if !opts.quiet {
        eprintln!("resuming `{}` after round {} of {}", c.stem, c.fed.round, scenario.federation.rounds);
    }
    finish_in(&out, &scenario, &c.stem, opts)
}

/// Run (or go on with) the run in the claimed `out` and write its results; its checkpoint
/// is removed once they are written.
fn finish_in(out: &ResultsDir, scenario: &Scenario, stem: &str, opts: &RunOptions) -> Result<PathBuf> {
    let checkpoint = out.path().join(CHECKPOINT_FILE);
    let opts = RunOptions { checkpoint: Some(checkpoint.clone()), ..opts.clone() };
    let files = execute(scenario, stem, &opts)?;
    for (name, contents) in files.iter() {
        out.write(name, contents.as_bytes())?;
    }
    remove_checkpoint(&checkpoint)?;
    if !opts.quiet {
        eprintln!("{}", files.summary);
    }
    Ok(out.path().to_path_buf())
}

fn remove_checkpoint(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::output(path, format!("cannot remove: {e}"))),
        _ => Ok(()),
    }
}

/// The files of a finished run, in the order they are written.
pub struct RunFiles {
    pub resolved: String,
    pub metrics: String,
    pub summary: String,
}

impl RunFiles {
    /// (file name, contents), `metrics.json` last: a directory with a `metrics.json`
    /// holds a finished run, even if the writer was killed.
    pub fn iter(&self) -> [(&'static str, &str); 3] {
        [("scenario.resolved.yaml", &self.resolved), ("summary.md", &self.summary), ("metrics.json", &self.metrics)]
    }
}

/// Run a scenario (named `stem` in its metrics) and return the files of its results
/// directory, writing nothing.
pub fn execute(scenario: &Scenario, stem: &str, opts: &RunOptions) -> Result<RunFiles> {
    let t = Instant::now();
    let threads = opts.threads.unwrap_or_else(backend::available_cores);
    let quiet = opts.quiet;
    let prepared = prepare_within(scenario, opts.data_dir.as_deref(), opts.max_memory, threads, &mut |line| {
        if !quiet {
            eprintln!("{line}");
        }
    })?;
    if opts.stop.as_ref().is_some_and(|s| s.load(Ordering::SeqCst)) {
        return Err(Error::Interrupted("stopped before round 1: nothing to save".into()));
    }
    let t_train = Instant::now();
    let fed = train_named(scenario, stem, &prepared, opts)?;
    let train_s = t_train.elapsed().as_secs_f64();
    let total_ms = ms(t);

    let stats = prepared.dataset.stats();
    let metrics = metrics_of(stem, scenario, &prepared, &fed, &stats, train_s, total_ms);
    let summary = summary_md(stem, scenario, &stats, &prepared, &fed, &metrics);
    Ok(RunFiles { resolved: scenario.to_yaml(), metrics: serde_json::to_string_pretty(&metrics).expect("json"), summary })
}

/// Per client: the true label counts of its train nodes (what label-inference attacks
/// are scored against); in link prediction, of an epoch's training pairs ({no link,
/// link}).
pub fn train_label_truth(p: &Prepared) -> Vec<Vec<usize>> {
    if !p.links.is_empty() {
        return p.links.iter().map(LinkSplit::label_counts).collect();
    }
    p.clients.iter().map(|c| p.dataset.label_counts(c.nodes.iter().copied().filter(|&n| p.split.roles[n] == Role::Train))).collect()
}

/// The attacks' inferences of a finished federation scored against the clients' true
/// train labels (and the labels they trained on): the only place the two meet.
pub fn score_attacks(p: &Prepared, fed: &FedResult) -> Vec<metrics::AttackMetrics> {
    metrics::score_attacks(
        &fed.attack.reports,
        &fed.attack.notes,
        &train_label_truth(p),
        &fed.trained_label_counts,
        &fed.rounds,
        !p.links.is_empty(),
    )
}

/// `metrics.json` of a finished run.
fn metrics_of(
    stem: &str,
    scenario: &Scenario,
    p: &Prepared,
    fed: &FedResult,
    stats: &DatasetStats,
    train_s: f64,
    total_ms: f64,
) -> Metrics {
    let last = fed.rounds.last().expect("at least one round");
    let truth = train_label_truth(p);
    let clients = p
        .reports
        .iter()
        .enumerate()
        .map(|(i, r)| ClientMetrics::new(r.clone(), truth[i].clone(), last.client_test_accuracy[i], fed.privacy[i].clone()))
        .collect();
    let attacks = score_attacks(p, fed);
    let mut stages_run = vec!["data", "split", "partition", "train"];
    if !attacks.is_empty() {
        stages_run.push("scoring");
    }
    Metrics {
        schema: metrics::SCHEMA,
        scenario: stem.to_string(),
        seed: scenario.seed,
        backend: scenario.backend,
        stages_run,
        model: metrics::ModelSummary { arch: scenario.model.arch, parameters: fed.parameters },
        last: metrics::FinalSummary {
            round: last.round,
            test_accuracy: last.test_accuracy,
            test_loss: last.test_loss,
            train_loss: last.train_loss,
            test_auc: last.test_auc,
        },
        rounds: fed.rounds.clone(),
        dataset: metrics::DatasetSummary {
            name: p.dataset.name.clone(),
            stats: stats.clone(),
            notes: p.dataset.notes.clone(),
            build_report: p.dataset.build_report.clone(),
        },
        split: metrics::SplitCounts {
            train: p.split.count(Role::Train),
            val: p.split.count(Role::Val),
            test: p.split.count(Role::Test),
            unused: p.split.count(Role::Unused),
        },
        partition: partition_summary(&scenario.partition, p, scenario.federation.centralized),
        defenses: scenario
            .defenses
            .iter()
            .filter(|d| !matches!(d.spec, crate::defenses::DefenseSpec::None(_)))
            .map(|d| d.name.clone())
            .collect(),
        threat_model: fed.threat_model,
        clients,
        attacks,
        upload_protocol: fed.upload.clone(),
        timings: metrics::Timings {
            stages_ms: p.timings.clone(),
            train_seconds: train_s,
            round_seconds: fed.round_seconds.clone(),
            shared_rounds: fed.shared_rounds,
            tail_rounds: fed.tail_rounds,
            upload_ms: fed.upload.iter().flat_map(|u| u.rounds.iter().map(|r| r.ms)).collect(),
            total_ms,
        },
    }
}

/// The per-client table in Markdown (also printed by `fgl-sim partition`).
pub fn client_table(dataset: &Dataset, reports: &[ClientReport]) -> String {
    let mut s = String::from("| client | nodes | edges | train | val | test | labels (");
    s.push_str(&dataset.class_names.join(", "));
    s.push_str(") |\n|---:|---:|---:|---:|---:|---:|---|\n");
    for r in reports {
        let labels: Vec<String> = r.label_distribution.iter().map(|c| c.to_string()).collect();
        s.push_str(&format!("| {} | {} | {} | {} | {} | {} | {} |\n", r.id, r.nodes, r.edges, r.train, r.val, r.test, labels.join(" / ")));
    }
    s
}

fn summary_md(stem: &str, scenario: &Scenario, stats: &DatasetStats, p: &Prepared, fed: &FedResult, results: &Metrics) -> String {
    let mut s = format!("# Run `{stem}` (seed {})\n\n", scenario.seed);
    if !scenario.description.is_empty() {
        s.push_str(&format!("{}\n\n", scenario.description));
    }
    s.push_str(&format!(
        "**Dataset** `{}`: {} nodes, {} edges ({} self loops removed), {} classes, features: {}.\n",
        p.dataset.name,
        stats.nodes,
        stats.edges,
        stats.self_loops,
        stats.classes,
        stats.feature_dim.map_or("none".to_string(), |d| format!("{d} ({:?})", stats.feature_kind.expect("kind with dim")).to_lowercase()),
    ));
    for n in &p.dataset.notes {
        s.push_str(&format!("- note: {n}\n"));
    }
    s.push_str(&format!(
        "\n**Split** ({:?}): {} train / {} val / {} test.\n",
        scenario.split.scope,
        p.split.count(Role::Train),
        p.split.count(Role::Val),
        p.split.count(Role::Test)
    ));
    s.push_str(&format!(
        "\n**Partition** into {} clients; cross-client edges dropped: {}.\n\n",
        p.clients.len(),
        p.dropped_edges.cross_client
    ));
    s.push_str(&client_table(&p.dataset, &p.reports));
    let (m, t, f) = (&scenario.model, &scenario.train, &scenario.federation);
    s.push_str(&format!(
        "\n**Training**: {}, {} layer(s) × {}, {} parameters; {} lr {} momentum {} weight decay {}; \
         {} round(s) × {} local epoch(s), FedAvg weighted by {} nodes, backend {}.\n\n",
        yaml_name(&m.arch),
        m.layers,
        m.hidden,
        fed.parameters,
        yaml_name(&t.optimizer),
        t.lr,
        t.momentum,
        t.weight_decay,
        f.rounds,
        t.epochs,
        yaml_name(&f.weighting),
        yaml_name(&scenario.backend)
    ));
    let link = scenario.task == Task::Link;
    if link {
        s.push_str("| round | test AUC | test accuracy | test loss | train loss |\n|---:|---:|---:|---:|---:|\n");
    } else {
        s.push_str("| round | test accuracy | test loss | train loss |\n|---:|---:|---:|---:|\n");
    }
    let n = fed.rounds.len();
    let step = n.div_ceil(20).max(1);
    let auc = |r: &crate::fed::RoundMetrics| r.test_auc.map_or("–".to_string(), |a| format!("{a:.4}"));
    for (i, r) in fed.rounds.iter().enumerate() {
        if i % step == 0 || i + 1 == n {
            let first = if link { format!("{} | ", auc(r)) } else { String::new() };
            s.push_str(&format!("| {} | {first}{:.4} | {:.4} | {:.4} |\n", r.round, r.test_accuracy, r.test_loss, r.train_loss));
        }
    }
    let last = fed.rounds.last().expect("at least one round");
    if link {
        s.push_str(&format!(
            "\n**Final link prediction** (global model, union of the clients' test pairs: held-out edges and as many sampled non-edges): AUC-ROC {}, accuracy {:.4}\n",
            auc(last),
            last.test_accuracy
        ));
    } else {
        s.push_str(&format!("\n**Final test accuracy** (global model, union of the clients' test nodes): {:.4}\n", last.test_accuracy));
    }
    s.push_str(&metrics::privacy_md(&results.clients));
    s.push_str(&metrics::upload_md(results));
    s.push_str(&metrics::attacks_md(results));
    s
}

//! The stages of a run, in data-flow order: load → preprocess → partition → split →
//! federation (clients' data through their defenses; the server with its attacks) →
//! scoring of the attacks against the ground truth → results.

use std::path::{Path, PathBuf};
use std::time::Instant;

use std::io::IsTerminal;

use crate::backend;
use crate::data::{Dataset, DatasetStats, Role, Split, registry};
use crate::error::{Error, Result};
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
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Load, preprocess, partition and split as the scenario says.
pub fn prepare(scenario: &Scenario, data_dir: Option<&Path>) -> Result<Prepared> {
    let seed = scenario.seed;
    let t = Instant::now();
    let mut dataset = registry::load(&scenario.dataset.name, data_dir, &scenario.synthetic(), seed)?;
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
        partition::partition(&dataset, &scenario.partition, seed)?
    };
    let (clients, dropped_edges) = partition.clients(&dataset.graph);
    let partition_ms = ms(t);

    let t = Instant::now();
    let split = make_split(scenario, &dataset, &clients)?;
    let reports = partition::report(&dataset, &clients, &split);
    let split_ms = ms(t);

    Ok(Prepared { dataset, partition, clients, split, reports, dropped_edges, timings: StageTimings { load_ms, partition_ms, split_ms } })
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
    /// a terminal unless `quiet`.
    pub progress: Option<Progress>,
    /// `reproduce`: keep the finished runs already in the results directory whose
    /// recorded scenario is the one the command now gives, and run only the rest.
    pub resume: bool,
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
            LocalData::of_client(&prepared.dataset, c, &prepared.split)
        })
        .collect::<Result<Vec<_>>>()?;
    Federation::new(setup, device, clients, prepared.dataset.num_classes(), pipeline)
}

/// Train the prepared clients as the scenario says, with its attacks as the server.
pub fn train(scenario: &Scenario, prepared: &Prepared, opts: &RunOptions) -> Result<FedResult> {
    let progress = match &opts.progress {
        Some(p) => p.clone(),
        None if !opts.quiet && std::io::stderr().is_terminal() => Progress::Bar,
        None => Progress::Hidden,
    };
    let mut server = scenario.server()?;
    backend::with_threads(opts.threads, || federation(scenario, prepared, progress)?.run(server.as_mut()))
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

/// Run a scenario and write its results directory; returns the directory.
pub fn run(scenario: &Scenario, scenario_path: &Path, opts: &RunOptions) -> Result<PathBuf> {
    let stem = scenario_path.file_stem().and_then(|s| s.to_str()).unwrap_or("scenario");
    let dir = match (&opts.out, &scenario.output.dir) {
        (Some(d), _) | (None, Some(d)) => d.clone(),
        (None, None) => results::default_dir(Path::new("results"), stem),
    };
    // Refuse before doing any work, so an existing run is never lost.
    let out = ResultsDir::claim(&dir, opts.force)?;
    let files = execute(scenario, stem, opts)?;
    for (name, contents) in files.iter() {
        out.write(name, contents.as_bytes())?;
    }
    if !opts.quiet {
        eprintln!("{}", files.summary);
    }
    Ok(dir)
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
    let prepared = prepare(scenario, opts.data_dir.as_deref())?;
    let t_train = Instant::now();
    let fed = train(scenario, &prepared, opts)?;
    let train_s = t_train.elapsed().as_secs_f64();
    let total_ms = ms(t);

    let stats = prepared.dataset.stats();
    let metrics = metrics_of(stem, scenario, &prepared, &fed, &stats, train_s, total_ms);
    let summary = summary_md(stem, scenario, &stats, &prepared, &fed, &metrics);
    Ok(RunFiles { resolved: scenario.to_yaml(), metrics: serde_json::to_string_pretty(&metrics).expect("json"), summary })
}

/// Per client: the true label counts of its train nodes (what label-inference attacks
/// are scored against).
pub fn train_label_truth(p: &Prepared) -> Vec<Vec<usize>> {
    p.clients.iter().map(|c| p.dataset.label_counts(c.nodes.iter().copied().filter(|&n| p.split.roles[n] == Role::Train))).collect()
}

/// The attacks' inferences of a finished federation scored against the clients' true
/// train labels (and the labels they trained on): the only place the two meet.
pub fn score_attacks(p: &Prepared, fed: &FedResult) -> Vec<metrics::AttackMetrics> {
    metrics::score_attacks(&fed.attack.reports, &fed.attack.notes, &train_label_truth(p), &fed.trained_label_counts, &fed.rounds)
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
        timings: metrics::Timings {
            stages_ms: p.timings.clone(),
            train_seconds: train_s,
            round_seconds: fed.round_seconds.clone(),
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
    s.push_str("| round | test accuracy | test loss | train loss |\n|---:|---:|---:|---:|\n");
    let n = fed.rounds.len();
    let step = n.div_ceil(20).max(1);
    for (i, r) in fed.rounds.iter().enumerate() {
        if i % step == 0 || i + 1 == n {
            s.push_str(&format!("| {} | {:.4} | {:.4} | {:.4} |\n", r.round, r.test_accuracy, r.test_loss, r.train_loss));
        }
    }
    let last = fed.rounds.last().expect("at least one round");
    s.push_str(&format!("\n**Final test accuracy** (global model, union of the clients' test nodes): {:.4}\n", last.test_accuracy));
    s.push_str(&metrics::privacy_md(&results.clients));
    s.push_str(&metrics::attacks_md(results));
    s
}

//! The command-line interface: thin wrappers that parse arguments and call the library.

mod datasets;
mod matrix;
mod partition;
mod privacy;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use clap::{Args, Parser, Subcommand};

use crate::backend::Backend;
use crate::data::registry;
use crate::error::{Error, Result};
use crate::partition::{Method, PartitionConfig};
use crate::reproduce::table::{PaperTable, Variant};
use crate::run::{self, RunOptions};
use crate::scenario::{Scenario, yaml_name};

#[derive(Parser, Debug)]
#[command(name = "fgl-sim", version, about = "Federated graph learning simulator with a privacy attack/defense harness")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Args, Debug, Clone)]
struct DataDirArg {
    /// Directory holding the datasets (default: $FGL_DATA_DIR, else the user data directory
    /// ~/.local/share/fgl-sim/datasets if it exists, else ../shared/datasets).
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
enum DatasetsAction {
    /// Download datasets from their public original locations, verify their sha256 and put
    /// them where the loaders read them; files already there and verified are kept.
    Fetch {
        /// Dataset names (`fgl-sim datasets` lists them).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        names: Vec<String>,
        /// Every dataset that can be fetched.
        #[arg(long)]
        all: bool,
        /// Where to put them (default: $FGL_DATA_DIR, else ~/.local/share/fgl-sim/datasets).
        #[arg(long, value_name = "DIR")]
        data_dir: Option<PathBuf>,
        /// URL template to download from instead of the defaults, with {repo}, {commit} and
        /// {path} (repeatable, tried in order; also $FGL_DATASET_MIRRORS).
        #[arg(long, value_name = "TEMPLATE")]
        mirror: Vec<String>,
        /// Attempts per mirror (each resumes a dropped download).
        #[arg(long, default_value_t = 4)]
        attempts: u32,
        /// No progress bars.
        #[arg(long)]
        quiet: bool,
    },
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a scenario and write its results directory.
    Run {
        /// The scenario YAML file (not with --resume: the checkpoint holds the scenario).
        #[arg(required_unless_present = "resume")]
        file: Option<PathBuf>,
        #[command(flatten)]
        data: DataDirArg,
        /// Results directory (default: output.dir of the scenario, else results/<name>-<time>).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Override a scenario field, e.g. --set partition.clients=5 (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        /// Override the scenario's seed.
        #[arg(long)]
        seed: Option<u64>,
        /// Override the scenario's backend.
        #[arg(long, value_enum)]
        backend: Option<Backend>,
        /// Worker threads for parallel client training (results do not depend on it).
        #[arg(long)]
        threads: Option<usize>,
        /// Overwrite a results directory that already holds results.
        #[arg(long)]
        force: bool,
        /// Save the federation's state to <out>/checkpoint.cbor every N rounds, so that a
        /// killed run can go on with --resume (Ctrl-C / SIGTERM always save one at the next
        /// round boundary).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        checkpoint_every: Option<u64>,
        /// Go on with the interrupted run in DIR from its checkpoint, to the numbers it would
        /// have given uninterrupted.
        #[arg(long, value_name = "DIR", conflicts_with_all = ["file", "set", "seed", "backend", "out", "force"])]
        resume: Option<PathBuf>,
        /// Refuse, before any work, a scenario whose estimated peak memory exceeds SIZE
        /// (e.g. 8G, 512M; default: 90 % of the memory available now).
        #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
        max_memory: Option<f64>,
        /// Print the estimated peak memory (by part, with the fields that drive it) and time;
        /// run nothing.
        #[arg(long, conflicts_with = "resume")]
        dry_run: bool,
        /// No progress or summary on the terminal.
        #[arg(long)]
        quiet: bool,
    },
    /// Run an attack × defense matrix (scenarios/matrix/*.yaml) and write its report:
    /// cells.csv, report.json, report.md, figures/ and report.html under results/<name>/.
    /// Finished runs are skipped, so a rerun resumes (and retries failed runs).
    Matrix {
        /// The matrix YAML file.
        file: PathBuf,
        #[command(flatten)]
        data: DataDirArg,
        /// Report directory (default results/<matrix name>).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
        /// Runs at once (default: one per core); results do not depend on it.
        #[arg(long, value_name = "N")]
        jobs: Option<usize>,
        /// Print the cells and an estimate of their run time; run nothing.
        #[arg(long, conflicts_with_all = ["emit_jobs", "collect"])]
        dry_run: bool,
        /// Write one `fgl-sim run` command per run (commands.txt), a SLURM array script and a
        /// Kubernetes indexed Job under <out>/jobs/; run nothing.
        #[arg(long, conflicts_with = "collect")]
        emit_jobs: bool,
        /// Build the report from the run directories under <out>, wherever they were produced.
        #[arg(long)]
        collect: bool,
        /// Run (or with --dry-run plan) only the cells whose COLUMN takes one of the values
        /// (repeatable: every column named at once; e.g. `--only defense=secagg,dp-fedavg`);
        /// the report still covers every cell, and a later run without it does the rest.
        #[arg(long, value_name = "COLUMN=VALUE[,VALUE…]", conflicts_with_all = ["emit_jobs", "collect"])]
        only: Vec<String>,
        /// Save each run's state every N rounds under <out>/checkpoints/ (Ctrl-C / SIGTERM
        /// always save the runs in progress); a rerun goes on from them.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        checkpoint_every: Option<u64>,
        /// Refuse, before any run, a matrix whose runs at once would exceed SIZE by the
        /// estimate (e.g. 8G; default: 90 % of the memory available now).
        #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
        max_memory: Option<f64>,
        /// Run every run from round 1. By default runs that differ only in their attacks
        /// run the rounds before any of their attacks acts once, and go on from there to
        /// the same numbers (EC-LDA's run and the passive attacks' share rounds 1-99 of 200);
        /// and where EC-LDA's discarded round leaves the federation as it found it and no
        /// round depends on its number, EC-LDA's rounds 101-200 are taken from the passive
        /// run's 100-199.
        #[arg(long, conflicts_with_all = ["emit_jobs", "collect"])]
        no_shared_rounds: bool,
        /// No progress bars.
        #[arg(long)]
        quiet: bool,
    },
    /// Validate scenario files.
    Scenario {
        #[command(subcommand)]
        action: ScenarioAction,
    },
    /// List the known datasets, where each is expected, whether it loads, and its stats
    /// (`datasets fetch` downloads them).
    #[command(args_conflicts_with_subcommands = true)]
    Datasets {
        #[command(subcommand)]
        action: Option<DatasetsAction>,
        #[command(flatten)]
        data: DataDirArg,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell completion script (e.g. `fgl-sim completions bash > ~/.local/share/bash-completion/completions/fgl-sim`).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Partition a dataset into clients and print the per-client table.
    Partition {
        #[arg(long)]
        dataset: String,
        #[arg(long)]
        clients: usize,
        #[arg(long, value_enum, default_value = "louvain")]
        method: Method,
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Louvain balancing slack δ.
        #[arg(long, default_value_t = PartitionConfig::default().delta)]
        delta: usize,
        /// Dirichlet concentration α.
        #[arg(long, default_value_t = PartitionConfig::default().alpha)]
        alpha: f64,
        #[command(flatten)]
        data: DataDirArg,
        /// Print JSON: {"clients": [{"id", "nodes", "edges", "train", "val", "test", "label_distribution"}], "dropped_edges": …,
        /// "assignment": [client of each node, or null]}.
        #[arg(long)]
        json: bool,
    },
    /// Print, as JSON, the edge split a `task: link` scenario trains on: each client's
    /// training edges and its validation and test pairs with their labels, in global node
    /// ids — exactly what `run` would use (for side-by-side checks such as bench/pyg_link.py).
    LinkSplit {
        /// The scenario YAML file (its `task` must be `link`).
        file: PathBuf,
        #[command(flatten)]
        data: DataDirArg,
        /// Override a scenario field, e.g. --set federation.centralized=true (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
    },
    /// List the built-in attack and defense presets with their parameters and defaults.
    Presets,
    /// Reproduce a paper's tables; writes reproduce.md and reproduce.csv.
    Reproduce {
        #[command(subcommand)]
        paper: Paper,
    },
    /// Print performance figures.
    Bench {
        /// Run fgl-sim's own kernels on at most this instruction set (avx512, avx2,
        /// portable): on an AVX-512 host, the AVX2 path other hosts take. The same values;
        /// gemm's and burn-flex's kernels pick their own.
        #[arg(long, global = true, value_name = "SET", value_parser = isa_names())]
        isa: Option<crate::simd::Isa>,
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Privacy accounting of DP training: ε spent for a noise multiplier σ, or σ for a target ε
    /// (DP-GNN's multi-term RDP accountant, or DP-SGD's subsampled Gaussian; see docs/privacy.md).
    Privacy {
        #[command(subcommand)]
        action: privacy::PrivacyAction,
    },
}

#[derive(Subcommand, Debug)]
enum Paper {
    /// EC-LDA (Cheng et al., ICDM 2025): Table 2 (EC-LDA on its compressed round; Infiltrator, iLRG, LLG*, LDA, uniform on
    /// an ordinary round × GCN/GAT/SAGE), every estimator on the compressed round, the E and C sweeps; on request the
    /// defense experiment (label-DP, DP-GNN and the published code's DP calibration) and DP-GNN's utility over ε.
    EcLda {
        /// Any dataset `fgl-sim datasets` lists (settings per REFERENCE §1.4; 128 → 64 where the paper gives none).
        #[arg(long, default_value = "cora")]
        dataset: String,
        /// Seeds per cell (the paper: 5).
        #[arg(long, default_value_t = 5)]
        seeds: usize,
        /// Federation rounds instead of the dataset's (a quick look; not the paper's setting).
        #[arg(long)]
        rounds: Option<usize>,
        /// Parts to run (repeatable; default table, compressed, epochs, clip).
        #[arg(long = "part", value_enum)]
        parts: Vec<crate::reproduce::EcLdaPart>,
        #[command(flatten)]
        common: ReproduceArgs,
    },
    /// LPGNN (Sajadmanesh & Gatica-Perez, CCS 2021): REPRODUCTION.md's table (feature and label LDP, Drop, FC, CE,
    /// rnd/ohd features), centralized as the paper and federated over 10 Louvain clients.
    #[command(mut_arg("dataset", |a| a.help("cora (= planetoid-cora, the default), pubmed, facebook or lastfm: the datasets LPGNN's tuned hyper-parameters cover")))]
    #[command(mut_arg("runs", |a| a.help("Runs (seeds) per cell (default: the paper's 10)")))]
    #[command(mut_arg("cells", |a| a.help("Only these cells (repeatable; default all): non-private, x1, x0.01, x1-y1, x1-y2, x1-y0.5, ce, fc, rnd, ohd (REPRODUCTION.md's), one, 1bm, lpm, agm (no Cora value given)")))]
    #[command(mut_arg("epochs", |a| a.help("Epochs instead of 500 (a quick look; not the paper's setting)")))]
    Lpgnn {
        #[command(flatten)]
        table: TableArgs,
    },
    /// RGNN (Bhaila et al.): REPRODUCTION.md's table (RGNN, LPGNN and GraphSAGE on the perturbed data at ε_x = 1,
    /// ε_y ∈ {3, 2, 1, 0.5}, and non-private), centralized as the paper and federated over 10 Louvain clients.
    #[command(mut_arg("dataset", |a| a.help("Any dataset with features, e.g. cora, citeseer, dblp, facebook, german, student (the paper's; default planetoid-cora)")))]
    #[command(mut_arg("runs", |a| a.help("Runs (seeds) per cell (default: the paper's 5)")))]
    #[command(mut_arg("cells", |a| a.help("Only these cells (repeatable; default all): non-private, rgnn-y3 … rgnn-y0.5, lpgnn-y3 …, perturbed-y3 …")))]
    #[command(mut_arg("epochs", |a| a.help("Epochs instead of 100 (a quick look; not the paper's setting)")))]
    Rgnn {
        #[command(flatten)]
        table: TableArgs,
    },
    /// Solitude (Lin et al., IEEE TIFS 2022): REPRODUCTION.md's table (base / LPGNN / Solitude at ε_a ∈ {7, 7.5, 8},
    /// ε_x = 1), centralized as the paper and federated over 10 Louvain clients; with what calibration removed.
    #[command(mut_arg("dataset", |a| a.help("Any dataset with features, e.g. cora, citeseer (the paper's; default planetoid-cora)")))]
    #[command(mut_arg("runs", |a| a.help("Runs (seeds) per cell (default: the paper's 5)")))]
    #[command(mut_arg("cells", |a| a.help("Only these cells (repeatable; default all): base-a7, base-a7.5, base-a8, lpgnn-a7 …, solitude-a7 …")))]
    #[command(mut_arg("epochs", |a| a.help("Epochs instead of 500 (a quick look; not the paper's setting)")))]
    Solitude {
        /// The backbone (the paper's table: sage).
        #[arg(long, value_enum, default_value = "sage")]
        model: crate::reproduce::solitude::Backbone,
        /// Keep only the dataset's largest connected component (`dataset.preprocess.lcc`).
        #[arg(long)]
        lcc: bool,
        #[command(flatten)]
        table: TableArgs,
    },
    /// A paper table of your own, as data: a table file (a base scenario, cells of `--set` overrides with their
    /// `setting`, the paper's protocol) and a CSV of the published values beside it; the built-in
    /// scenarios/papers/{lpgnn,rgnn,solitude}/ are the examples. Writes reproduce.csv / reproduce.md under the same contract.
    Table {
        /// The table file (YAML).
        file: PathBuf,
        #[command(flatten)]
        table: TableArgs,
    },
}

/// What every paper table's `reproduce` command takes (a paper's own help says more).
#[derive(Args, Debug)]
struct TableArgs {
    /// The dataset every cell runs on (default: the base scenario's).
    #[arg(long)]
    dataset: Option<String>,
    /// Runs (seeds) per cell (default: the table's `paper_runs`).
    #[arg(long)]
    runs: Option<usize>,
    /// Settings to run (repeatable; default both), for a table without parts.
    #[arg(long = "setting", value_enum)]
    settings: Vec<crate::reproduce::Setting>,
    /// Parts to run (repeatable; default the table's default ones), for a table with parts.
    #[arg(long = "part")]
    parts: Vec<String>,
    /// Only these cells (repeatable; default all), by their `id`.
    #[arg(long = "cell")]
    cells: Vec<String>,
    /// Epochs instead of the table's (a quick look; not the paper's setting).
    #[arg(long)]
    epochs: Option<usize>,
    #[command(flatten)]
    common: ReproduceArgs,
}

/// The completion script for `shell`. clap_complete's bash script names a subcommand's
/// case arm with the bin name's hyphen spelt `__subcmd__` where its dispatch loop spells
/// it `__` (clap-rs/clap#6421, open upstream at 4.6.11), so bash would complete nothing
/// after `fgl-sim <subcommand>`; the arms are respelt here as the loop spells them.
fn completions(shell: clap_complete::Shell) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "fgl-sim", &mut script);
    let script = String::from_utf8(script).expect("clap_complete writes UTF-8");
    match shell {
        clap_complete::Shell::Bash => script.replace("fgl__subcmd__sim", "fgl__sim"),
        _ => script,
    }
}

/// Run a paper's table as `args` ask (both settings unless some are named; the base
/// scenario's dataset and the paper's runs unless given); returns its directory.
fn reproduce_table(table: &PaperTable, args: TableArgs, variant: &Variant, front: &Front) -> Result<Reproduced> {
    let TableArgs { dataset, runs, settings, parts, cells, epochs, common } = args;
    let dataset = match dataset {
        Some(d) => d,
        None => crate::scenario::Scenario::parse(&table.base.0, &table.base.1, &[])?.dataset.name,
    };
    let runs = runs.unwrap_or(table.spec.paper_runs);
    let opts = crate::reproduce::TableOptions { dataset, runs, settings, parts, epochs, cells, run: common.run_options(front) };
    if common.dry_run {
        return crate::reproduce::table::plan(table, &opts, variant, common.out.as_deref()).map(Reproduced::Planned);
    }
    crate::reproduce::table::run(table, &opts, variant, common.out.as_deref(), common.force || common.resume).map(Reproduced::Ran)
}

/// What a `reproduce` command did: ran (its results directory), or under `--dry-run`
/// planned (the plan's text).
enum Reproduced {
    Ran(PathBuf),
    Planned(String),
}

/// How a command is driven: from the command line (signals stop it, bars on a terminal)
/// or by a library front end (the Python package) with its own stop flag and progress hook.
pub struct Front {
    pub stop: Arc<AtomicBool>,
    /// `reproduce`: hears (runs done, runs to do) after each finished run.
    pub progress: Option<crate::fed::Progress>,
}

impl Front {
    fn command_line() -> Front {
        Front { stop: stop_on_signals(), progress: None }
    }
}

/// What every `reproduce` command takes besides its paper's options.
#[derive(Args, Debug)]
struct ReproduceArgs {
    #[command(flatten)]
    data: DataDirArg,
    /// Results directory (default results/reproduce-<paper>-<dataset>-<time>).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Overwrite a results directory that already holds results.
    #[arg(long)]
    force: bool,
    /// Go on with an interrupted reproduction in --out: its finished runs are kept (a run
    /// whose recorded scenario differs from the one now given is refused), the rest run.
    #[arg(long, conflicts_with = "force")]
    resume: bool,
    /// Worker threads (results do not depend on it).
    #[arg(long)]
    threads: Option<usize>,
    /// Print the runs the command would do and their estimated time and memory (per part
    /// or setting, per cell), without training or writing anything; with --out and
    /// --resume, the finished runs there are counted as done.
    #[arg(long)]
    dry_run: bool,
}

impl ReproduceArgs {
    fn run_options(&self, front: &Front) -> RunOptions {
        RunOptions {
            data_dir: data_dir(&self.data),
            out: None,
            force: self.force || self.resume,
            quiet: true,
            threads: self.threads,
            progress: front.progress.clone(),
            resume: self.resume,
            stop: Some(front.stop.clone()),
            max_memory: crate::estimate::default_max_memory(),
            ..Default::default()
        }
    }
}

#[derive(Subcommand, Debug)]
enum ScenarioAction {
    /// Validate each file and print the resolved scenario (every default filled in).
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
        #[command(flatten)]
        data: DataDirArg,
    },
}

#[derive(Subcommand, Debug)]
enum BenchWhat {
    /// Dataset loading and partitioning times (Facebook, Cora, synthetic), and Louvain on
    /// large generated graphs (average degree 10).
    Data {
        #[command(flatten)]
        data: DataDirArg,
        /// Repetitions per figure (the median is reported).
        #[arg(long, default_value_t = 5)]
        reps: usize,
        /// Node counts of the generated graphs Louvain partitions (once each; 0 for none).
        #[arg(long, value_delimiter = ',', default_values_t = [100_000usize, 300_000, 1_000_000])]
        louvain_nodes: Vec<usize>,
    },
    /// First-layer X·W (forward + backward) with dense and sparse input, per width: the
    /// measurement behind the automatic input layout.
    Layout {
        #[command(flatten)]
        data: DataDirArg,
        #[arg(long, value_enum, default_value = "cpu")]
        backend: Backend,
        /// Repetitions per figure (the median is reported).
        #[arg(long, default_value_t = 15)]
        reps: usize,
        /// Worker threads.
        #[arg(long)]
        threads: Option<usize>,
    },
    /// One secure-aggregation round by client count (10 … 1000; SecAgg and SecAgg+, with dropouts): bytes per client,
    /// bytes through the server, milliseconds.
    Secagg {
        /// Parameters of the model whose update is aggregated (default: Cora's GCN 2 × 16).
        #[arg(long, default_value_t = 23_063)]
        params: usize,
        /// Rounds timed per figure (the median is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Worker threads.
        #[arg(long)]
        threads: Option<usize>,
    },
    /// DP-GNN against plain training on Cora (ms per local epoch, centralized and 10 Louvain clients), and per-node
    /// gradients of one batch: batched computation graphs against the naive one-node-at-a-time loop.
    DpGnn {
        #[command(flatten)]
        data: DataDirArg,
        /// Local epochs per timed run.
        #[arg(long, default_value_t = 5)]
        epochs: usize,
        /// Runs timed per figure (the median is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// Worker threads.
        #[arg(long)]
        threads: Option<usize>,
    },
    /// One attack round's server work per client (EC-LDA, iLRG, LLG*) on EC-LDA's Cora workload.
    Attack {
        #[command(flatten)]
        data: DataDirArg,
        /// Attack rounds timed (the median is reported).
        #[arg(long, default_value_t = 10)]
        reps: usize,
        /// Worker threads.
        #[arg(long)]
        threads: Option<usize>,
    },
    /// LDP figures: perturbation throughput and peak memory of each mechanism on Facebook (feature mechanisms, label
    /// RR, GRR-FS, edge RR), edge RR's peak memory on a 20 000-node generated graph, and the LPGNN Cora run (500
    /// epochs) in seconds, optionally beside the same run in PyG.
    Privacy {
        #[command(flatten)]
        data: DataDirArg,
        /// Repetitions per perturbation figure (the median is reported).
        #[arg(long, default_value_t = 3)]
        reps: usize,
        /// LPGNN Cora runs timed.
        #[arg(long, default_value_t = 3)]
        runs: usize,
        /// Worker threads.
        #[arg(long)]
        threads: Option<usize>,
        /// Also run bench/lpgnn_run.py (a PyG port of sisaman/LPGNN) with this Python on the same setting.
        #[arg(long, value_name = "PYTHON")]
        compare_pyg: Option<PathBuf>,
    },
    /// Training figures: ms per epoch (GCN, GraphSAGE, GAT 2 × 16) and seconds per FedAvg
    /// round (10 clients, E = 5) on Cora and a PubMed-sized synthetic graph.
    Train {
        #[command(flatten)]
        data: DataDirArg,
        #[arg(long, value_enum, default_value = "cpu")]
        backend: Backend,
        /// Epochs timed per model (the median is reported).
        #[arg(long, default_value_t = 20)]
        epochs: usize,
        /// FedAvg rounds timed per model (the median is reported).
        #[arg(long, default_value_t = 4)]
        rounds: usize,
        /// Worker threads for parallel client training.
        #[arg(long)]
        threads: Option<usize>,
        /// Also time the same epochs in PyTorch Geometric with this Python (which needs
        /// torch and torch_geometric) and print both side by side; skipped with a
        /// message when it cannot run.
        #[arg(long, value_name = "PYTHON")]
        compare_pyg: Option<PathBuf>,
        /// The torch device of the PyG side: cpu (on as many threads), or cuda (PyG-CUDA,
        /// beside `--backend wgpu` on the same GPU).
        #[arg(long, value_name = "DEVICE", default_value = "cpu", value_parser = ["cpu", "cuda"])]
        pyg_device: String,
        /// Time only these workloads (repeatable; default: all).
        #[arg(long = "workload", value_name = "NAME", value_parser = ["cora", "synthetic-20k", "pubmed", "cora-512-64"])]
        workloads: Vec<String>,
        /// Time only these models (repeatable; default: gcn, sage and gat).
        #[arg(long = "arch", value_enum, value_name = "ARCH")]
        archs: Vec<crate::model::Arch>,
    },
}

/// Entry point of the binary; returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    match dispatch(cli.command) {
        Ok(()) => 0,
        Err(e @ Error::Interrupted(_)) => {
            eprintln!("{e}");
            130
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// A flag SIGINT and SIGTERM set: runs stop at their next round boundary and save a
/// checkpoint. A second signal ends the process at once (exit 130).
pub fn stop_on_signals() -> Arc<AtomicBool> {
    static FLAG: std::sync::OnceLock<Arc<AtomicBool>> = std::sync::OnceLock::new();
    // Async-signal-safe: a load of the initialised cell, an atomic swap, and _exit.
    extern "C" fn on_signal(_: libc::c_int) {
        if FLAG.get().is_some_and(|f| f.swap(true, std::sync::atomic::Ordering::SeqCst)) {
            // SAFETY: _exit is async-signal-safe.
            unsafe { libc::_exit(130) };
        }
    }
    FLAG.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the handler does only async-signal-safe work. A signal in the instant
            // before FLAG is published finds no flag and is ignored.
            unsafe { libc::signal(signal, on_signal as *const () as libc::sighandler_t) };
        }
        flag
    })
    .clone()
}

/// `--isa`'s values: the sets' own names ([`Isa::name`](crate::simd::Isa::name)), listed in
/// the help.
fn isa_names() -> impl clap::builder::TypedValueParser<Value = crate::simd::Isa> {
    use crate::simd::Isa;
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(Isa::ALL.map(Isa::name))
        .map(|name| Isa::ALL.into_iter().find(|isa| isa.name() == name).expect("a listed name"))
}

fn parse_memory(text: &str) -> std::result::Result<f64, String> {
    crate::estimate::parse_size(text)
        .ok_or_else(|| format!("`{text}` is not a memory size > 0: bytes, or a number with K, M, G or T (e.g. 8G, 512M)"))
}

/// `run --dry-run`: the estimated peak memory by part and the time, against the limit.
fn estimate_cmd(scenario: &Scenario, file: &Path, opts: &RunOptions) -> Result<()> {
    let size = crate::estimate::DataSize::of_scenario(scenario, opts.data_dir.as_deref())?;
    let threads = opts.threads.unwrap_or_else(crate::backend::available_cores);
    let m = crate::estimate::memory(scenario, &size, threads);
    println!("{}: about {} at the peak (estimate; {threads} thread(s)):", file.display(), crate::estimate::human(m.bytes()));
    for line in m.lines() {
        println!("  {line}");
    }
    // Its clients trained at once share the cores as runs side by side do: probed so.
    let cores = crate::estimate::busy_cores(scenario, threads.min(crate::backend::available_cores()));
    let speed = crate::speed::measure(cores)?;
    let time = crate::estimate::time(scenario, &size);
    let s = |t: f64| format!("{t:.0$} s", if t < 10.0 { 2 } else { 1 });
    match cores {
        1 => println!("time: about {} on one core (rough; {})", s(speed.scale(time)), speed.describe()),
        k => println!(
            "time: about {} on {k} cores, {} of one core's work (rough; {})",
            s(speed.wall(time, k)),
            s(speed.scale(time)),
            speed.describe()
        ),
    }
    if let Some(limit) = opts.max_memory {
        run::check_memory(scenario, &size, threads, limit)?;
        println!("within --max-memory {}", crate::estimate::human(limit));
    }
    Ok(())
}

/// An interrupted run's error, with the command that goes on with it.
fn with_resume_hint(e: Error, dir: &Path) -> Error {
    match e {
        Error::Interrupted(what) if what.contains("saved") => {
            Error::Interrupted(format!("{what}; go on with `fgl-sim run --resume {}`", dir.display()))
        }
        e => e,
    }
}

fn data_dir(arg: &DataDirArg) -> Option<PathBuf> {
    registry::resolve_data_dir(arg.data_dir.as_deref())
}

fn dispatch(command: Command) -> Result<()> {
    match command {
        Command::Run { file, data, out, mut set, seed, backend, threads, force, checkpoint_every, resume, max_memory, dry_run, quiet } => {
            if let Some(s) = seed {
                set.push(format!("seed={s}"));
            }
            if let Some(b) = backend {
                set.push(format!("backend={}", yaml_name(&b)));
            }
            let opts = RunOptions {
                data_dir: data_dir(&data),
                out,
                force,
                quiet,
                threads,
                checkpoint_every: checkpoint_every.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                max_memory: max_memory.or_else(crate::estimate::default_max_memory),
                ..Default::default()
            };
            if dry_run {
                let file = file.as_deref().expect("clap requires a scenario file without --resume");
                let scenario = Scenario::load(file, &set)?;
                return estimate_cmd(&scenario, file, &opts);
            }
            let opts = RunOptions { stop: Some(stop_on_signals()), ..opts };
            let dir = match (&resume, &file) {
                (Some(dir), _) => resume_dir(dir, &opts)?,
                (None, Some(file)) => run_file(file, &set, &opts)?,
                (None, None) => unreachable!("clap requires a scenario file without --resume"),
            };
            println!("results written to {}", dir.display());
            // A diverged run keeps its results (the matrix reports it as diverged) but is
            // no success.
            let m = crate::record::read_summary(&dir.join("metrics.json"))?;
            if m.diverged() {
                return Err(Error::Other(diverged_message(&m, &dir)));
            }
            Ok(())
        }
        Command::Matrix {
            file,
            data,
            out,
            jobs,
            dry_run,
            emit_jobs,
            collect,
            only,
            checkpoint_every,
            max_memory,
            no_shared_rounds,
            quiet,
        } => {
            if jobs == Some(0) {
                return Err(Error::param("--jobs", "at least 1 run at a time"));
            }
            let m = crate::matrix::Matrix::load(&file)?;
            let opts = crate::matrix::MatrixOptions {
                data_dir: data_dir(&data),
                out,
                jobs,
                quiet,
                checkpoint_every: checkpoint_every.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
                stop: Some(stop_on_signals()),
                max_memory: max_memory.or_else(crate::estimate::default_max_memory),
                progress: Default::default(),
                only: crate::matrix::select::Selection::parse(&only)?,
                no_shared_rounds,
            };
            matrix::matrix_cmd(&m, &opts, dry_run, emit_jobs, collect)
        }
        Command::Scenario { action: ScenarioAction::Check { files, set, data } } => {
            for file in &files {
                let scenario = Scenario::load(file, &set)?;
                // Checks against the data (clients ≤ nodes, features present) need it loaded.
                let prepared = run::prepare(&scenario, data_dir(&data).as_deref()).map_err(|e| in_file(e, file))?;
                println!("# {}: ok ({} nodes, {} clients)", file.display(), prepared.dataset.num_nodes(), prepared.clients.len());
                print!("{}", scenario.to_yaml());
            }
            Ok(())
        }
        Command::Presets => {
            print!("{}", crate::presets::describe_all());
            Ok(())
        }
        Command::Datasets { action: None, data, json } => datasets::datasets(data_dir(&data).as_deref(), json),
        Command::Datasets { action: Some(DatasetsAction::Fetch { names, all, data_dir, mirror, attempts, quiet }), .. } => {
            datasets::fetch_cmd(names, all, data_dir, mirror, attempts, quiet)
        }
        Command::Completions { shell } => {
            print!("{}", completions(shell));
            Ok(())
        }
        Command::LinkSplit { file, data, set } => partition::link_split_cmd(&Scenario::load(&file, &set)?, data_dir(&data).as_deref()),
        Command::Partition { dataset, clients, method, seed, delta, alpha, data, json } => {
            let cfg = PartitionConfig { method, clients, delta, alpha, ..PartitionConfig::default() };
            partition::partition_cmd(&dataset, &cfg, seed, data_dir(&data).as_deref(), json)
        }
        Command::Reproduce { paper } => {
            let t = std::time::Instant::now();
            match reproduce(paper, &Front::command_line())? {
                Reproduced::Ran(dir) => {
                    print!("{}", std::fs::read_to_string(dir.join("reproduce.md")).unwrap_or_default());
                    println!("\nresults written to {} ({:.1} s)", dir.display(), t.elapsed().as_secs_f64());
                }
                Reproduced::Planned(plan) => print!("{plan}"),
            }
            Ok(())
        }
        Command::Privacy { action } => privacy::privacy_cmd(action).map_err(flag_named),
        Command::Bench { isa, what } => {
            if let Some(isa) = isa {
                crate::simd::cap(isa);
                eprintln!(
                    "fgl-sim's kernels on {} (this CPU: {}; gemm's and burn-flex's on their own choice)",
                    crate::simd::Isa::current().name(),
                    crate::simd::Isa::detected().name()
                );
            }
            bench(what)
        }
    }
}

/// Run a `bench` command.
fn bench(what: BenchWhat) -> Result<()> {
    match what {
        BenchWhat::Attack { data, reps, threads } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || crate::bench::attack(dir.as_deref(), reps))
        }
        BenchWhat::Privacy { data, reps, runs, threads, compare_pyg } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || crate::bench::privacy(dir.as_deref(), reps, runs, compare_pyg.as_deref()))
        }
        BenchWhat::Secagg { params, reps, threads } => crate::backend::with_threads(threads, || crate::bench::secagg(params, reps)),
        BenchWhat::DpGnn { data, epochs, reps, threads } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || crate::bench::dp_gnn(dir.as_deref(), epochs, reps))
        }
        BenchWhat::Data { data, reps, louvain_nodes } => crate::bench::data(data_dir(&data).as_deref(), reps, &louvain_nodes),
        BenchWhat::Layout { data, backend, reps, threads } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || crate::bench::layout(dir.as_deref(), backend, reps))
        }
        BenchWhat::Train { data, backend, epochs, rounds, threads, compare_pyg, pyg_device, workloads, archs } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || {
                let pyg = compare_pyg.as_deref().map(|python| (python, pyg_device.as_str()));
                crate::bench::train(dir.as_deref(), backend, epochs, rounds, pyg, &workloads, &archs)
            })
        }
    }
}

/// Run a `reproduce` command; returns its results directory.
fn reproduce(paper: Paper, front: &Front) -> Result<Reproduced> {
    match paper {
        Paper::EcLda { dataset, seeds, rounds, parts, common } => {
            let opts = crate::reproduce::EcLdaOptions { dataset, seeds, parts, rounds, run: common.run_options(front) };
            if common.dry_run {
                return crate::reproduce::ec_lda::plan(&opts, common.out.as_deref()).map(Reproduced::Planned);
            }
            crate::reproduce::ec_lda::ec_lda(&opts, common.out.as_deref(), common.force || common.resume).map(Reproduced::Ran)
        }
        Paper::Lpgnn { table } => reproduce_table(&PaperTable::builtin("lpgnn"), table, &Variant::compare(), front),
        Paper::Rgnn { table } => reproduce_table(&PaperTable::builtin("rgnn"), table, &Variant::compare(), front),
        Paper::Solitude { model, lcc, table } => {
            reproduce_table(&PaperTable::builtin("solitude"), table, &crate::reproduce::solitude::variant(model, lcc), front)
        }
        Paper::Table { file, table } => reproduce_table(&PaperTable::load(&file)?, table, &Variant::compare(), front),
    }
}

/// `fgl-sim reproduce ARGS…` in process, for a library front end: `args` are the
/// command's words after `reproduce` (`["rgnn", "--runs", "2"]`), parsed as the command
/// line parses them (an unknown flag is the same error); nothing is printed; returns the
/// results directory.
pub fn reproduce_args(args: &[String], front: &Front) -> Result<PathBuf> {
    match parse_in_process("reproduce", args)? {
        Command::Reproduce { paper } => match reproduce(paper, front)? {
            Reproduced::Ran(dir) => Ok(dir),
            Reproduced::Planned(_) => {
                Err(Error::param("--dry-run", "gives a plan, not results: use reproduce_plan_args (the command line prints it)"))
            }
        },
        _ => unreachable!("parsed as `reproduce`"),
    }
}

/// `fgl-sim reproduce ARGS… --dry-run` in process (`--dry-run` added if missing): the
/// plan the command line prints.
pub fn reproduce_plan_args(args: &[String]) -> Result<String> {
    let mut args = args.to_vec();
    if !args.iter().any(|a| a == "--dry-run") {
        args.push("--dry-run".into());
    }
    let front = Front { stop: Default::default(), progress: None };
    match parse_in_process("reproduce", &args)? {
        Command::Reproduce { paper } => match reproduce(paper, &front)? {
            Reproduced::Planned(plan) => Ok(plan),
            Reproduced::Ran(_) => unreachable!("--dry-run plans"),
        },
        _ => unreachable!("parsed as `reproduce`"),
    }
}

/// `fgl-sim privacy epsilon|sigma ARGS…` in process: what `--json` prints, as a value.
pub fn privacy_args(args: &[String]) -> Result<serde_json::Value> {
    match parse_in_process("privacy", args)? {
        Command::Privacy { action } => privacy::account(action).map(|(json, _)| json).map_err(flag_named),
        _ => unreachable!("parsed as `privacy`"),
    }
}

/// What `fgl-sim datasets --json` prints, as a value.
pub fn datasets_json(data_dir: Option<&Path>) -> serde_json::Value {
    datasets::rows_json(&datasets::rows(registry::resolve_data_dir(data_dir).as_deref()))
}

/// `fgl-sim SUBCOMMAND ARGS…` parsed as the command line parses it, clap's error as ours.
fn parse_in_process(subcommand: &str, args: &[String]) -> Result<Command> {
    let words = ["fgl-sim", subcommand].into_iter().map(String::from).chain(args.iter().cloned());
    Ok(Cli::try_parse_from(words).map_err(|e| Error::Other(clap_message(&e)))?.command)
}

/// clap's message without its `error: ` prefix and usage footer.
fn clap_message(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let text = text.strip_prefix("error: ").unwrap_or(&text);
    text.split("\n\nUsage:").next().unwrap_or(text).trim_end().to_string()
}

/// The privacy commands' parameters are named after their flags.
fn flag_named(e: Error) -> Error {
    match e {
        Error::Param { name, msg } if !name.starts_with("--") => Error::param(format!("--{}", name.replace('_', "-")), msg),
        other => other,
    }
}

/// `fgl-sim run FILE [--set …]` as a library call: the scenario read and run into its
/// results directory (`opts.out`, the scenario's `output.dir` or a new
/// `results/<stem>-<time>`), its errors worded as the command's; returns the directory.
pub fn run_file(file: &Path, set: &[String], opts: &RunOptions) -> Result<PathBuf> {
    let scenario = Scenario::load(file, set)?;
    run_scenario(&scenario, file, opts)
}

/// [`run_file`] of a scenario given as YAML `text` (errors name it `label`; relative
/// paths in it are read from `base`), run under the name `stem`.
pub fn run_text(text: &str, label: &str, base: Option<&Path>, stem: &str, set: &[String], opts: &RunOptions) -> Result<PathBuf> {
    let scenario = Scenario::parse_in(text, label, base, set)?;
    run_scenario(&scenario, &PathBuf::from(format!("{stem}.yaml")), opts)
}

/// `fgl-sim run --resume DIR` as a library call: go on with the interrupted run in `dir`.
pub fn resume_dir(dir: &Path, opts: &RunOptions) -> Result<PathBuf> {
    run::resume(dir, opts).map_err(|e| with_resume_hint(e, dir))
}

fn run_scenario(scenario: &Scenario, file: &Path, opts: &RunOptions) -> Result<PathBuf> {
    // Chosen once, so the hint of an interrupted run names its directory.
    let dir = run::out_dir(scenario, file, opts);
    let opts = RunOptions { out: Some(dir.clone()), ..opts.clone() };
    run::run(scenario, file, &opts).map_err(|e| with_resume_hint(in_file(e, file), &dir))
}

/// The message `fgl-sim run` fails with when a run diverged (its results are kept).
pub fn diverged_message(m: &crate::record::RunMetrics, dir: &Path) -> String {
    format!(
        "training diverged: the loss became non-finite (train {}, test {}) and the run stopped after round {}; \
         its results are in {} — lower train.lr, or look for non-finite noise (a defense's ε far too small)",
        m.train_loss,
        m.test_loss,
        m.rounds,
        dir.display()
    )
}

/// `fgl-sim matrix FILE` as a library call: refuses a directory of another matrix, runs
/// what is missing and writes the report.
pub fn run_matrix(m: &crate::matrix::Matrix, opts: &crate::matrix::MatrixOptions) -> Result<crate::matrix::Outcome> {
    // `reproduce --resume` reuses a directory with a subset of its cells; a matrix never
    // shares one with another matrix.
    crate::matrix::store::check_same_matrix(m, &opts.out_dir(m))?;
    crate::matrix::run(m, opts)
}

/// The message `fgl-sim matrix` fails with when runs failed (the report is written).
pub fn failed_runs_message(o: &crate::matrix::Outcome) -> String {
    format!(
        "{} of {} run(s) failed; their errors are in {}/report.md and cells.csv; rerun the same command to retry them",
        o.failed,
        o.ran,
        o.out.display()
    )
}

/// A parameter error found once the data is loaded (more clients than nodes, …) is
/// still an error in the scenario file: say which file.
fn in_file(e: Error, file: &Path) -> Error {
    match e {
        // A command-line flag is not a field of the file.
        Error::Param { name, msg } if !name.starts_with("--") => Error::Scenario { file: file.display().to_string(), field: name, msg },
        other => other,
    }
}

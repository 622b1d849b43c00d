//! The command-line interface: thin wrappers that parse arguments and call the library.

use std::path::{Path, PathBuf};

use clap::{Args, Parser, Subcommand};
use serde_json::json;

use crate::backend::Backend;
use crate::data::{Split, SplitRatios, registry};
use crate::error::{Error, Result};
use crate::partition::{self, Method, PartitionConfig};
use crate::privacy::accountant::{self, Mechanism};
use crate::rng;
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
        /// The scenario YAML file.
        file: PathBuf,
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
    /// List the built-in attack and defense presets with their parameters and defaults.
    Presets,
    /// Reproduce a paper's tables; writes reproduce.md and reproduce.csv.
    Reproduce {
        #[command(subcommand)]
        paper: Paper,
    },
    /// Print performance figures.
    Bench {
        #[command(subcommand)]
        what: BenchWhat,
    },
    /// Privacy accounting of DP training: ε spent for a noise multiplier σ, or σ for a target ε
    /// (DP-GNN's multi-term RDP accountant, or DP-SGD's subsampled Gaussian; see docs/privacy.md).
    Privacy {
        #[command(subcommand)]
        action: PrivacyAction,
    },
}

#[derive(Subcommand, Debug)]
enum PrivacyAction {
    /// The (ε, δ) spent by `--steps` steps with noise multiplier `--sigma`.
    Epsilon {
        /// Noise multiplier σ (noise std / sensitivity; for dp-gnn the sensitivity is 2K·‖C‖).
        #[arg(long, allow_negative_numbers = true)]
        sigma: f64,
        #[command(flatten)]
        acc: AccountantArgs,
    },
    /// The smallest σ whose ε is at most `--target-epsilon`, and the ε it spends.
    Sigma {
        #[arg(long, allow_negative_numbers = true)]
        target_epsilon: f64,
        #[command(flatten)]
        acc: AccountantArgs,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum AccountantKind {
    /// DP-GNN's multi-term accountant: needs --nodes, --max-degree, --layers, --batch.
    DpGnn,
    /// Poisson-subsampled Gaussian (DP-SGD): needs --sample-rate and --delta.
    DpSgd,
}

/// What both privacy commands take.
#[derive(Args, Debug)]
struct AccountantArgs {
    #[arg(long, value_enum)]
    accountant: AccountantKind,
    /// dp-gnn: training nodes N.
    #[arg(long)]
    nodes: Option<usize>,
    /// dp-gnn: in-degree bound D (≥ 1).
    #[arg(long)]
    max_degree: Option<usize>,
    /// dp-gnn: message-passing layers (1 or 2).
    #[arg(long)]
    layers: Option<usize>,
    /// dp-gnn: batch size B (nodes per step, ≤ N).
    #[arg(long)]
    batch: Option<usize>,
    /// dp-sgd: sampling rate q ∈ (0, 1].
    #[arg(long)]
    sample_rate: Option<f64>,
    /// Training steps.
    #[arg(long)]
    steps: u64,
    /// δ (dp-gnn default: 1/(10·N); required for dp-sgd).
    #[arg(long)]
    delta: Option<f64>,
    /// RDP → (ε, δ) conversion.
    #[arg(long, value_enum, default_value = "improved")]
    conversion: accountant::Conversion,
    /// RDP orders: `default` (1.02 … 512), `dp-gnn-code` (the DP-GNN code's: 1.1 … 9.9 for dp-gnn,
    /// 1.1 … 199.9 for dp-sgd) or a comma-separated list.
    #[arg(long, default_value = "default")]
    orders: String,
    /// Print one JSON object.
    #[arg(long)]
    json: bool,
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
    Lpgnn {
        /// cora (= planetoid-cora), pubmed, facebook or lastfm: the datasets LPGNN's tuned hyper-parameters cover.
        #[arg(long, default_value = "planetoid-cora")]
        dataset: String,
        /// Runs (seeds) per cell (the paper: 10).
        #[arg(long, default_value_t = 10)]
        runs: usize,
        /// Settings to run (repeatable; default both).
        #[arg(long = "setting", value_enum)]
        settings: Vec<crate::reproduce::Setting>,
        /// Only these cells (repeatable; default all): non-private, x1, x0.01, x1-y1, x1-y2, x1-y0.5, ce, fc, rnd, ohd
        /// (REPRODUCTION.md's), one, 1bm, lpm, agm (no Cora value given).
        #[arg(long = "cell")]
        cells: Vec<String>,
        /// Epochs instead of 500 (a quick look; not the paper's setting).
        #[arg(long)]
        epochs: Option<usize>,
        #[command(flatten)]
        common: ReproduceArgs,
    },
    /// RGNN (Bhaila et al.): REPRODUCTION.md's table (RGNN, LPGNN and GraphSAGE on the perturbed data at ε_x = 1,
    /// ε_y ∈ {3, 2, 1, 0.5}, and non-private), centralized as the paper and federated over 10 Louvain clients.
    Rgnn {
        /// Any dataset with features, e.g. cora, citeseer, dblp, facebook, german, student (the paper's).
        #[arg(long, default_value = "planetoid-cora")]
        dataset: String,
        /// Runs (seeds) per cell (the paper: 5).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Settings to run (repeatable; default both).
        #[arg(long = "setting", value_enum)]
        settings: Vec<crate::reproduce::Setting>,
        /// Only these cells (repeatable; default all): non-private, rgnn-y3 … rgnn-y0.5, lpgnn-y3 …, perturbed-y3 ….
        #[arg(long = "cell")]
        cells: Vec<String>,
        /// Epochs instead of 100 (a quick look; not the paper's setting).
        #[arg(long)]
        epochs: Option<usize>,
        #[command(flatten)]
        common: ReproduceArgs,
    },
    /// Solitude (Lin et al., IEEE TIFS 2022): REPRODUCTION.md's table (base / LPGNN / Solitude at ε_a ∈ {7, 7.5, 8},
    /// ε_x = 1), centralized as the paper and federated over 10 Louvain clients; with what calibration removed.
    Solitude {
        /// Any dataset with features, e.g. cora, citeseer (the paper's).
        #[arg(long, default_value = "planetoid-cora")]
        dataset: String,
        /// The backbone (the paper's table: sage).
        #[arg(long, value_enum, default_value = "sage")]
        model: crate::reproduce::solitude::Backbone,
        /// Keep only the dataset's largest connected component (`dataset.preprocess.lcc`).
        #[arg(long)]
        lcc: bool,
        /// Runs (seeds) per cell (the paper: 5).
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Settings to run (repeatable; default both).
        #[arg(long = "setting", value_enum)]
        settings: Vec<crate::reproduce::Setting>,
        /// Only these cells (repeatable; default all): base-a7, base-a7.5, base-a8, lpgnn-a7 …, solitude-a7 ….
        #[arg(long = "cell")]
        cells: Vec<String>,
        /// Epochs instead of 500 (a quick look; not the paper's setting).
        #[arg(long)]
        epochs: Option<usize>,
        #[command(flatten)]
        common: ReproduceArgs,
    },
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

/// A paper's table runner: (options, data directory, force) → the results directory.
type TableRunner<'a> = dyn Fn(&crate::reproduce::TableOptions, Option<&std::path::Path>, bool) -> Result<PathBuf> + 'a;

/// Run a table reproduction (both settings unless some are named) and print its table.
fn reproduce_table(run: &TableRunner<'_>, mut opts: crate::reproduce::TableOptions, common: &ReproduceArgs) -> Result<()> {
    use crate::reproduce::Setting;
    if opts.settings.is_empty() {
        opts.settings = vec![Setting::Centralized, Setting::Federated];
    }
    let t = std::time::Instant::now();
    let dir = run(&opts, common.out.as_deref(), common.force || common.resume)?;
    print!("{}", std::fs::read_to_string(dir.join("reproduce.md")).unwrap_or_default());
    println!("\nresults written to {} ({:.1} s)", dir.display(), t.elapsed().as_secs_f64());
    Ok(())
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
}

impl ReproduceArgs {
    fn run_options(&self) -> RunOptions {
        RunOptions {
            data_dir: data_dir(&self.data),
            out: None,
            force: self.force || self.resume,
            quiet: true,
            threads: self.threads,
            progress: None,
            resume: self.resume,
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
    /// Dataset loading and partitioning times (Facebook, Cora, synthetic).
    Data {
        #[command(flatten)]
        data: DataDirArg,
        /// Repetitions per figure (the median is reported).
        #[arg(long, default_value_t = 5)]
        reps: usize,
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
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

fn matrix_cmd(m: &crate::matrix::Matrix, opts: &crate::matrix::MatrixOptions, dry_run: bool, emit_jobs: bool, collect: bool) -> Result<()> {
    use crate::matrix::{self, stats};
    let out = opts.out_dir(m);
    if dry_run {
        let plan = matrix::plan(m, opts)?;
        println!(
            "matrix `{}`: {} cells × {} seed(s) = {} runs; results in {}",
            m.name,
            m.cells.len(),
            m.seeds.len(),
            m.runs().len(),
            out.display()
        );
        println!("{:>10}  {:>5}  cell", "est. time", "to do");
        let fmt =
            |t: Option<f64>| t.map_or("?".to_string(), |t| if t < 120.0 { format!("{t:.0} s") } else { format!("{:.1} min", t / 60.0) });
        for (id, todo, t) in &plan.lines {
            println!("{:>10}  {:>5}  {id}", fmt(*t), todo);
        }
        let jobs = opts.jobs.unwrap_or_else(crate::backend::available_cores);
        println!(
            "estimated wall time with {jobs} run(s) at once: {} (rough: {} finished run(s) measured, the rest from a cost model; `?`: dataset not loadable here)",
            fmt(plan.total_seconds),
            plan.measured
        );
        return Ok(());
    }
    if emit_jobs {
        let e = matrix::jobs::emit(m, &out, opts.data_dir.as_deref())?;
        println!(
            "{} commands written to {}/commands.txt (with slurm.sh and k8s-job.yaml); run them anywhere that sees {}, then `fgl-sim matrix {} --collect{}`",
            e.commands,
            e.dir.display(),
            out.display(),
            m.file.display(),
            opts.out.as_ref().map_or(String::new(), |o| format!(" --out {}", o.display()))
        );
        return Ok(());
    }
    if collect {
        let (out, rows) = matrix::collect(m, opts)?;
        let (fin, failed, missing) = stats::counts(&rows);
        println!(
            "report of {} runs ({fin} finished, {failed} failed, {missing} missing) written to {}/report.html",
            rows.len(),
            out.display()
        );
        return Ok(());
    }
    let o = matrix::run(m, opts)?;
    let peak = crate::backend::peak_rss_mib().map_or(String::new(), |mb| format!(", peak memory {mb:.0} MiB"));
    println!(
        "{} run(s) in {:.1} s ({} already finished){peak}; report written to {}/report.html",
        o.ran,
        o.wall_seconds,
        o.skipped,
        o.out.display()
    );
    if o.failed > 0 {
        return Err(Error::Other(format!(
            "{} of {} run(s) failed; their errors are in {}/report.md and cells.csv; rerun the same command to retry them",
            o.failed,
            o.ran,
            o.out.display()
        )));
    }
    Ok(())
}

fn data_dir(arg: &DataDirArg) -> Option<PathBuf> {
    registry::resolve_data_dir(arg.data_dir.as_deref())
}

fn dispatch(command: Command) -> Result<()> {
    match command {
        Command::Run { file, data, out, mut set, seed, backend, threads, force, quiet } => {
            if let Some(s) = seed {
                set.push(format!("seed={s}"));
            }
            if let Some(b) = backend {
                set.push(format!("backend={}", yaml_name(&b)));
            }
            let scenario = Scenario::load(&file, &set)?;
            let opts = RunOptions { data_dir: data_dir(&data), out, force, quiet, threads, progress: None, resume: false };
            let dir = run::run(&scenario, &file, &opts).map_err(|e| in_file(e, &file))?;
            println!("results written to {}", dir.display());
            Ok(())
        }
        Command::Matrix { file, data, out, jobs, dry_run, emit_jobs, collect, quiet } => {
            if jobs == Some(0) {
                return Err(Error::param("--jobs", "at least 1 run at a time"));
            }
            let m = crate::matrix::Matrix::load(&file)?;
            let opts = crate::matrix::MatrixOptions { data_dir: data_dir(&data), out, jobs, quiet };
            matrix_cmd(&m, &opts, dry_run, emit_jobs, collect)
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
        Command::Datasets { action: None, data, json } => datasets(data_dir(&data).as_deref(), json),
        Command::Datasets { action: Some(DatasetsAction::Fetch { names, all, data_dir, mirror, attempts, quiet }), .. } => {
            fetch_cmd(names, all, data_dir, mirror, attempts, quiet)
        }
        Command::Completions { shell } => {
            print!("{}", completions(shell));
            Ok(())
        }
        Command::Partition { dataset, clients, method, seed, delta, alpha, data, json } => {
            let cfg = PartitionConfig { method, clients, delta, alpha, ..PartitionConfig::default() };
            partition_cmd(&dataset, &cfg, seed, data_dir(&data).as_deref(), json)
        }
        Command::Reproduce { paper: Paper::EcLda { dataset, seeds, rounds, mut parts, common } } => {
            use crate::reproduce::EcLdaPart;
            if parts.is_empty() {
                parts = vec![EcLdaPart::Table, EcLdaPart::Compressed, EcLdaPart::Epochs, EcLdaPart::Clip];
            }
            let t = std::time::Instant::now();
            let opts = crate::reproduce::EcLdaOptions { dataset, seeds, parts, rounds, run: common.run_options() };
            let dir = crate::reproduce::ec_lda::ec_lda(&opts, common.out.as_deref(), common.force || common.resume)?;
            print!("{}", std::fs::read_to_string(dir.join("reproduce.md")).unwrap_or_default());
            println!("\nresults written to {} ({:.1} s)", dir.display(), t.elapsed().as_secs_f64());
            Ok(())
        }
        Command::Reproduce { paper: Paper::Lpgnn { dataset, runs, settings, cells, epochs, common } } => reproduce_table(
            &crate::reproduce::lpgnn::lpgnn,
            crate::reproduce::TableOptions { dataset, runs, settings, epochs, cells, run: common.run_options() },
            &common,
        ),
        Command::Reproduce { paper: Paper::Rgnn { dataset, runs, settings, cells, epochs, common } } => reproduce_table(
            &crate::reproduce::rgnn::rgnn,
            crate::reproduce::TableOptions { dataset, runs, settings, epochs, cells, run: common.run_options() },
            &common,
        ),
        Command::Reproduce { paper: Paper::Solitude { dataset, model, lcc, runs, settings, cells, epochs, common } } => reproduce_table(
            &|o, out, force| crate::reproduce::solitude::solitude(o, model, lcc, out, force),
            crate::reproduce::TableOptions { dataset, runs, settings, epochs, cells, run: common.run_options() },
            &common,
        ),
        Command::Privacy { action } => privacy_cmd(action).map_err(|e| match e {
            // The parameters are named after the flags.
            Error::Param { name, msg } if !name.starts_with("--") => Error::param(format!("--{}", name.replace('_', "-")), msg),
            other => other,
        }),
        Command::Bench { what: BenchWhat::Attack { data, reps, threads } } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || crate::bench::attack(dir.as_deref(), reps))
        }
        Command::Bench { what: BenchWhat::Privacy { data, reps, runs, threads, compare_pyg } } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || crate::bench::privacy(dir.as_deref(), reps, runs, compare_pyg.as_deref()))
        }
        Command::Bench { what: BenchWhat::DpGnn { data, epochs, reps, threads } } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || crate::bench::dp_gnn(dir.as_deref(), epochs, reps))
        }
        Command::Bench { what: BenchWhat::Data { data, reps } } => crate::bench::data(data_dir(&data).as_deref(), reps),
        Command::Bench { what: BenchWhat::Layout { data, backend, reps, threads } } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || crate::bench::layout(dir.as_deref(), backend, reps))
        }
        Command::Bench { what: BenchWhat::Train { data, backend, epochs, rounds, threads, compare_pyg, workloads, archs } } => {
            let dir = data_dir(&data);
            crate::backend::with_threads(threads, || {
                crate::bench::train(dir.as_deref(), backend, epochs, rounds, compare_pyg.as_deref(), &workloads, &archs)
            })
        }
    }
}

/// A parameter error found once the data is loaded (more clients than nodes, …) is
/// still an error in the scenario file: say which file.
fn in_file(e: Error, file: &Path) -> Error {
    match e {
        Error::Param { name, msg } => Error::Scenario { file: file.display().to_string(), field: name, msg },
        other => other,
    }
}

fn datasets(dir: Option<&Path>, as_json: bool) -> Result<()> {
    let synthetic = Default::default();
    let mut rows = Vec::new();
    for spec in registry::known() {
        let (status, stats) = match registry::load(spec.name, dir, &synthetic, 0) {
            Ok(ds) => ("ok".to_string(), Some((ds.stats(), ds.notes))),
            Err(e) => (format!("not loaded: {e}"), None),
        };
        rows.push((spec, status, stats));
    }
    if as_json {
        let list: Vec<_> = rows
            .iter()
            .map(|(spec, status, stats)| {
                json!({ "name": spec.name, "expected": location(spec, dir), "description": spec.description, "status": status,
                        "stats": stats.as_ref().map(|s| &s.0), "notes": stats.as_ref().map(|s| &s.1) })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&list).expect("json"));
        return Ok(());
    }
    match dir {
        Some(d) => println!("data directory: {}", d.display()),
        None => println!("data directory: not found (pass --data-dir or set {})", registry::DATA_DIR_ENV),
    }
    println!(
        "{:<19} {:>6} {:>7} {:>6} {:>5} {:>14} {:>13} {:>4}  status / expected at",
        "name", "nodes", "edges", "loops", "isol", "LCC nodes/edg", "features", "cls"
    );
    for (spec, status, stats) in &rows {
        match stats {
            Some((s, notes)) => {
                let feat = match (s.feature_dim, s.feature_kind) {
                    (Some(d), Some(k)) => format!("{d} {k:?}").to_lowercase(),
                    _ => "none".to_string(),
                };
                println!(
                    "{:<19} {:>6} {:>7} {:>6} {:>5} {:>14} {:>13} {:>4}  ok  {}",
                    spec.name,
                    s.nodes,
                    s.edges,
                    s.self_loops,
                    s.isolated,
                    format!("{}/{}", s.lcc_nodes, s.lcc_edges),
                    feat,
                    s.classes,
                    location(spec, dir)
                );
                for n in notes {
                    println!("{:<19} note: {n}", "");
                }
            }
            None => println!("{:<19} {status}", spec.name),
        }
    }
    Ok(())
}

fn fetch_cmd(names: Vec<String>, all: bool, dir: Option<PathBuf>, mirror: Vec<String>, attempts: u32, quiet: bool) -> Result<()> {
    use crate::data::fetch::{self, FetchOptions, Outcome};
    let dir = fetch::default_target(dir.as_deref())?;
    let mut opts = FetchOptions { attempts, quiet, ..FetchOptions::default() };
    if !mirror.is_empty() {
        opts.mirrors = mirror;
    }
    let names: Vec<&str> = if all { fetch::fetchable() } else { names.iter().map(String::as_str).collect() };
    let done = fetch::fetch(&names, &dir, &opts)?;
    if !quiet {
        for (f, outcome) in &done.files {
            match outcome {
                Outcome::Present => println!("present   {} (sha256 verified)", dir.join(f.path).display()),
                Outcome::Downloaded { bytes } => {
                    println!("fetched   {} ({bytes} bytes received, sha256 verified)", dir.join(f.path).display())
                }
            }
        }
        for path in &done.built {
            println!("built     {} (from the files above)", dir.join(path).display());
        }
        println!("{} ready in {}", names.join(", "), dir.display());
    }
    Ok(())
}

/// Where `spec`'s first file is expected (the rest sit beside it).
fn location(spec: &registry::DatasetSpec, dir: Option<&Path>) -> String {
    match (spec.files.first(), dir) {
        (None, _) => "(generated, no files)".to_string(),
        (Some(f), Some(d)) => d.join(f).display().to_string(),
        (Some(f), None) => format!("<data dir>/{f}"),
    }
}

fn partition_cmd(name: &str, cfg: &PartitionConfig, seed: u64, dir: Option<&Path>, as_json: bool) -> Result<()> {
    let dataset = registry::load(name, dir, &Default::default(), seed)?;
    cfg.validate(&dataset).map_err(|e| match e {
        // The flags are named after the scenario fields; say which flag.
        Error::Param { name, msg } => Error::param(format!("--{}", name.trim_start_matches("partition.")), msg),
        other => other,
    })?;
    let p = partition::partition(&dataset, cfg, seed)?;
    let (clients, dropped) = p.clients(&dataset.graph);
    let split = Split::random(&dataset.labels, SplitRatios::default(), &mut rng::derive(seed, "split", &[]));
    let reports = partition::report(&dataset, &clients, &split);
    if as_json {
        let out = json!({
            "dataset": dataset.name, "method": format!("{:?}", cfg.method).to_lowercase(), "seed": seed,
            "communities": p.communities, "modularity": p.modularity,
            "unassigned_nodes": p.assignment.iter().filter(|a| a.is_none()).count(),
            "clients": reports, "dropped_edges": dropped.cross_client, "dropped_edges_detail": dropped,
            "assignment": p.assignment,
        });
        println!("{}", serde_json::to_string_pretty(&out).expect("json"));
    } else {
        let covered: usize = reports.iter().map(|r| r.nodes).sum();
        println!(
            "{} on `{}` (seed {seed}): {} clients covering {covered} of {} nodes; cross-client edges dropped: {}",
            format!("{:?}", cfg.method).to_lowercase(),
            dataset.name,
            clients.len(),
            dataset.num_nodes(),
            dropped.cross_client
        );
        if let (Some(c), Some(q)) = (p.communities, p.modularity) {
            println!("louvain: {c} communities, modularity {q:.4}");
        }
        println!("split: random 50/25/25 of labelled nodes (seed {seed})\n");
        print!("{}", run::client_table(&dataset, &reports));
    }
    Ok(())
}

fn privacy_cmd(action: PrivacyAction) -> Result<()> {
    let (sigma, target, acc) = match action {
        PrivacyAction::Epsilon { sigma, acc } => (Some(sigma), None, acc),
        PrivacyAction::Sigma { target_epsilon, acc } => (None, Some(target_epsilon), acc),
    };
    let need = |flag: &str, v: Option<usize>| {
        v.ok_or_else(|| Error::param(flag, format!("required by --accountant {}", accountant_name(acc.accountant))))
    };
    let unused = |flag: &str, given: bool| {
        if given { Err(Error::param(flag, format!("does not apply to --accountant {}", accountant_name(acc.accountant)))) } else { Ok(()) }
    };
    let (mech, delta) = match acc.accountant {
        AccountantKind::DpGnn => {
            unused("--sample-rate", acc.sample_rate.is_some())?;
            let nodes = need("--nodes", acc.nodes)?;
            let mech = Mechanism::DpGnn {
                nodes,
                max_degree: need("--max-degree", acc.max_degree)?,
                layers: need("--layers", acc.layers)?,
                batch: need("--batch", acc.batch)?,
            };
            (mech, acc.delta.unwrap_or_else(|| accountant::default_delta(nodes)))
        }
        AccountantKind::DpSgd => {
            for (flag, given) in
                [("--nodes", acc.nodes), ("--max-degree", acc.max_degree), ("--layers", acc.layers), ("--batch", acc.batch)]
            {
                unused(flag, given.is_some())?;
            }
            let q = acc.sample_rate.ok_or_else(|| Error::param("--sample-rate", "required by --accountant dp-sgd"))?;
            (Mechanism::DpSgd { sample_rate: q }, acc.delta.ok_or_else(|| Error::param("--delta", "required by --accountant dp-sgd"))?)
        }
    };
    mech.validate()?;
    let orders = match acc.orders.trim() {
        "default" => accountant::default_orders(),
        "dp-gnn-code" => accountant::dpgnn_code_orders(&mech),
        list => list
            .split(',')
            .map(|x| {
                x.trim().parse::<f64>().map_err(|_| {
                    Error::param(
                        "--orders",
                        format!("`{x}` is not a number: give `default`, `dp-gnn-code` or numbers > 1 separated by commas"),
                    )
                })
            })
            .collect::<Result<Vec<_>>>()?,
    };
    let (sigma, spent) = match (sigma, target) {
        (Some(s), _) => (s, accountant::epsilon(&mech, s, acc.steps, delta, acc.conversion, &orders)?),
        (None, Some(t)) => accountant::sigma_for_epsilon(&mech, t, acc.steps, delta, acc.conversion, &orders)?,
        (None, None) => unreachable!("one of the two commands"),
    };
    let edge =
        orders.iter().copied().fold(f64::NAN, f64::max) == spent.order || orders.iter().copied().fold(f64::NAN, f64::min) == spent.order;
    if acc.json {
        let mut out = serde_json::to_value(mech).expect("json");
        let o = out.as_object_mut().expect("object");
        if let Mechanism::DpGnn { max_degree, layers, .. } = mech {
            o.insert("max_terms".into(), json!(accountant::max_terms_per_node(max_degree, layers)?));
        }
        if let Some(t) = target {
            o.insert("target_epsilon".into(), json!(t));
        }
        o.insert("sigma".into(), json!(sigma));
        o.insert("steps".into(), json!(acc.steps));
        o.insert(
            "orders".into(),
            if matches!(acc.orders.trim(), "default" | "dp-gnn-code") { json!(acc.orders.trim()) } else { json!(orders) },
        );
        for (k, v) in serde_json::to_value(spent).expect("json").as_object().expect("object") {
            o.insert(k.clone(), v.clone());
        }
        o.insert("order_at_grid_edge".into(), json!(edge));
        println!("{}", serde_json::to_string_pretty(&out).expect("json"));
        return Ok(());
    }
    let what = match mech {
        Mechanism::DpGnn { nodes, max_degree, layers, batch } => format!(
            "dp-gnn: N = {nodes} training nodes, D = {max_degree}, {layers} layer(s) → K = {} terms per node, batch B = {batch}",
            accountant::max_terms_per_node(max_degree, layers)?
        ),
        Mechanism::DpSgd { sample_rate } => format!("dp-sgd: Poisson sampling rate q = {sample_rate}"),
    };
    println!("{what}, {} steps", acc.steps);
    let eps = if spent.epsilon.is_finite() { format!("{:.6}", spent.epsilon) } else { "∞".into() };
    let order = (spent.order * 1e6).round() / 1e6;
    match target {
        Some(t) => println!(
            "σ = {sigma:.6} for ε ≤ {t}: spends ε = {eps} at δ = {:e} (RDP order α = {order}, {} conversion)",
            spent.delta,
            spent.conversion.name()
        ),
        None => println!("σ = {sigma}: ε = {eps} at δ = {:e} (RDP order α = {order}, {} conversion)", spent.delta, spent.conversion.name()),
    }
    if edge {
        println!("note: the optimal order is at the edge of the order grid; other orders (--orders) may give a smaller ε");
    }
    Ok(())
}

fn accountant_name(kind: AccountantKind) -> &'static str {
    match kind {
        AccountantKind::DpGnn => "dp-gnn",
        AccountantKind::DpSgd => "dp-sgd",
    }
}

//! `fgl-sim reproduce`: a paper's table as one command. Every reproduction writes the
//! same two files: `reproduce.md` and `reproduce.csv`, one row per table cell with the
//! columns of [`CSV_HEADER`] (the contract scripts compare results by):
//!
//! - `setting`: the cell's parameters as `key=value` joined by `;`, keys in the order
//!   of [`SETTING_KEYS`] and only those that apply (∞ written `inf`);
//! - `metric`: `test_accuracy` (in %), `cos_sim` or `js_div`;
//! - `paper_mean`, `paper_ci95`, `within`: empty where the paper gives no value;
//! - `note` (the last column): why a cell outside the paper's tolerance differs — a
//!   documented deviation of the published code, too few runs, a protocol difference —
//!   non-empty exactly for the cells whose `within` is `false`.
//!
//! One file per paper: [`ec_lda`], [`lpgnn`], [`rgnn`], [`solitude`].

pub mod ec_lda;
pub mod figure;
pub mod lpgnn;
pub mod rgnn;
pub mod solitude;
pub mod table;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rand::Rng as _;

pub use ec_lda::{EcLdaOptions, EcLdaPart};

use crate::error::{Error, Result};
use crate::matrix::{BuiltCell, Matrix, MatrixOptions};
use crate::record::{RunMetrics, RunState};
use crate::results::{self, ResultsDir};
use crate::rng;
use crate::run::RunOptions;

/// A reproduction's runs, through the matrix machinery (`fgl-sim matrix`): every cell
/// (an id, its columns beside the four leading ones, its scenario) over seeds
/// 0..`runs`, several at once (one per `opts.threads`, default one per core), each run
/// into `dir/cells/<id>/seed=<s>/` with the matrix report (`cells.csv`, `report.md`,
/// `report.html`, figures) beside it. The longest runs (by the matrix's estimate) start
/// first, and the matrix's memory check guards them. Per cell, the runs' metrics in seed
/// order; the first failed run (in run order) fails the reproduction with its error.
pub(crate) fn run_cells(dir: &Path, name: &str, cells: Vec<BuiltCell>, runs: usize, opts: &RunOptions) -> Result<Vec<Vec<RunMetrics>>> {
    let m = matrix_of(name, cells, runs)?;
    // The reproduction claimed its directory (empty, or `--force`): earlier runs there
    // are replaced; under `--resume` the matrix reuses those that match and refuses
    // those that do not.
    if dir.exists() && !opts.resume {
        std::fs::remove_dir_all(dir).map_err(|e| Error::output(dir, format!("cannot replace: {e}")))?;
    }
    let o = crate::matrix::run_in(&m, dir, &matrix_options(opts.clone(), None))?;
    let mut rows = o.rows.into_iter();
    (0..m.cells.len())
        .map(|_| {
            rows.by_ref()
                .take(runs)
                .map(|r| match (r.metrics, r.state) {
                    (Some(metrics), _) => Ok(metrics),
                    (None, RunState::Failed(e)) => Err(Error::Other(e)),
                    (None, _) => Err(Error::Other(format!("{name}: a run left no results"))),
                })
                .collect()
        })
        .collect()
}

/// A reproduction's group of runs as a matrix: `cells` over seeds 0..`runs`.
pub(crate) fn matrix_of(name: &str, cells: Vec<BuiltCell>, runs: usize) -> Result<Matrix> {
    Matrix::from_cells(name, "", name, cells, (0..runs as u64).collect())
}

/// How a reproduction's matrix runs: one run per `opts.threads` (default one per core),
/// into `out` (for a plan; [`run_cells`] gives the directory itself).
pub(crate) fn matrix_options(opts: RunOptions, out: Option<PathBuf>) -> MatrixOptions {
    MatrixOptions {
        data_dir: opts.data_dir,
        out,
        jobs: opts.threads,
        quiet: opts.quiet,
        checkpoint_every: opts.checkpoint_every,
        stop: opts.stop,
        max_memory: opts.max_memory,
        progress: opts.progress.unwrap_or_default(),
        only: Default::default(),
        no_shared_rounds: false,
    }
}

/// Where a table's cells run: the paper's setting or ours over clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Setting {
    /// One client holds the whole graph (the papers).
    Centralized,
    /// 10 Louvain clients, FedAvg.
    Federated,
}

impl Setting {
    /// The `table` column.
    pub fn name(self) -> &'static str {
        match self {
            Setting::Centralized => "centralized",
            Setting::Federated => "federated",
        }
    }

    /// Scenario overrides for `epochs` of local training: all of them centralized; over
    /// 10 Louvain clients, `rounds` FedAvg rounds of 10 epochs (fewer if `epochs` < 10)
    /// with each client's optimizer state kept, the last epoch's model sent.
    pub fn overrides(self, epochs: usize, rounds: usize) -> Vec<String> {
        match self {
            Setting::Centralized => vec![format!("train.epochs={epochs}")],
            Setting::Federated => vec![
                "federation.centralized=false".into(),
                "partition={method: louvain, clients: 10}".into(),
                format!("federation.rounds={rounds}"),
                format!("train.epochs={}", epochs.min(10)),
                "train.keep_optimizer_state=true".into(),
                "train.selection=last".into(),
            ],
        }
    }
}

/// What a table reproduction (`lpgnn`, `rgnn`, `solitude`) is asked to run.
#[derive(Debug, Clone)]
pub struct TableOptions {
    pub dataset: String,
    /// Runs (seeds 0..runs) per cell.
    pub runs: usize,
    /// Settings to run (a table without parts; none: both).
    pub settings: Vec<Setting>,
    /// Parts to run (a table with parts; none: its default ones).
    pub parts: Vec<String>,
    /// Epochs instead of the paper's (a quick look).
    pub epochs: Option<usize>,
    /// Only the cells with these labels; all when empty.
    pub cells: Vec<String>,
    pub run: crate::run::RunOptions,
}

impl TableOptions {
    /// Check the options against the table's cell `labels`; the indices of the chosen cells.
    pub fn chosen(&self, labels: &[&str]) -> Result<Vec<usize>> {
        if self.runs == 0 {
            return Err(Error::param("--runs", "at least 1 run is needed"));
        }
        if self.epochs == Some(0) {
            return Err(Error::param("--epochs", "at least 1 epoch is needed"));
        }
        check_dataset(&self.dataset)?;
        if let Some(bad) = self.cells.iter().find(|c| !labels.contains(&c.as_str())) {
            return Err(Error::param("--cells", format!("unknown cell `{bad}`; cells: {}", labels.join(", "))));
        }
        Ok((0..labels.len()).filter(|&i| self.cells.is_empty() || self.cells.iter().any(|c| c == labels[i])).collect())
    }
}

/// Train one scenario of a table (`base` with `overrides`).
pub fn train_cell(base: &str, name: &str, overrides: &[String], opts: &crate::run::RunOptions) -> Result<crate::fed::FedResult> {
    let scenario = crate::scenario::Scenario::parse(base, name, overrides)?;
    let prepared = crate::run::prepare(&scenario, opts.data_dir.as_deref())?;
    crate::run::train(&scenario, &prepared, opts)
}

/// |ours − paper| ≤ max(paper ±, `points`).
pub fn within_points(mean: f64, p: &PaperValue, points: f64) -> bool {
    (mean - p.mean).abs() <= p.ci95.unwrap_or(0.0).max(points)
}

/// The columns of `reproduce.csv`, in order.
pub const CSV_HEADER: &str = "paper,table,dataset,model,setting,metric,runs,ours_mean,ours_ci95,paper_mean,paper_ci95,within,note";

/// The note of a private cell above its own no-noise pipeline whose cause no reproduction
/// names.
pub const ABOVE_BASELINE: &str =
    "above its own pipeline without noise by more than its CI: cause not found — a bug or a protocol difference, not a privacy gain";

/// The note of a cell outside the paper's tolerance whose cause no reproduction names.
pub const UNEXPLAINED: &str = "outside the paper's tolerance; cause not established";

/// The keys a `setting` may use, in the order they appear.
pub const SETTING_KEYS: [&str; 16] = [
    "features",
    "mechanism",
    "method",
    "eps_x",
    "eps_y",
    "eps_a",
    "eps",
    "kx",
    "ky",
    "attack",
    "defense",
    "local_epochs",
    "clip",
    "calibration",
    "variant",
    "clients",
];

/// A cell's `setting` from `(key, value)` pairs in any order: sorted into
/// [`SETTING_KEYS`] order; a key outside it is a programming error.
pub fn setting(pairs: &[(&str, String)]) -> String {
    let mut sorted: Vec<&(&str, String)> = pairs.iter().collect();
    let rank = |k: &str| SETTING_KEYS.iter().position(|&s| s == k).unwrap_or_else(|| panic!("`{k}` is not a setting key"));
    sorted.sort_by_key(|(k, _)| rank(k));
    sorted.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(";")
}

/// ε as a setting value: `inf` for ∞.
pub fn eps(e: f64) -> String {
    if e.is_infinite() { "inf".into() } else { format!("{e}") }
}

/// A published value: the mean and, when the paper prints one, its ± spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PaperValue {
    pub mean: f64,
    pub ci95: Option<f64>,
}

/// One table cell over runs.
#[derive(Debug, Clone)]
pub struct Cell {
    pub table: String,
    pub model: String,
    pub setting: String,
    pub metric: &'static str,
    pub values: Vec<f64>,
    pub paper: Option<PaperValue>,
}

/// The table's cells in first-seen order; each run adds one value per cell.
#[derive(Debug, Default)]
pub struct Cells(pub Vec<Cell>);

impl Cells {
    pub fn push(&mut self, table: &str, model: &str, setting: &str, metric: &'static str, value: f64, paper: Option<PaperValue>) {
        let same = |c: &&mut Cell| c.table == table && c.model == model && c.setting == setting && c.metric == metric;
        match self.0.iter_mut().find(same) {
            Some(c) => c.values.push(value),
            None => self.0.push(Cell {
                table: table.to_string(),
                model: model.to_string(),
                setting: setting.to_string(),
                metric,
                values: vec![value],
                paper,
            }),
        }
    }
}

/// A finished reproduction, ready to be written.
pub struct Report<'a> {
    /// The `paper` column.
    pub paper: &'a str,
    pub dataset: &'a str,
    pub cells: &'a Cells,
    /// Markdown above the table: title, protocol, what differs from the paper.
    pub intro: String,
    /// Whether our mean and half-width agree with the paper's value.
    pub within: &'a dyn Fn(f64, f64, &PaperValue) -> bool,
    /// The known cause of a cell outside tolerance (`None`: [`UNEXPLAINED`]), asked only
    /// for those cells; commas are replaced (the CSV is unquoted).
    pub explain: &'a dyn Fn(&Cell, f64) -> Option<String>,
    /// The known cause of a private cell that beats its own pipeline without noise (see
    /// [`Report::private_beats_baseline`]; `None`: [`ABOVE_BASELINE`]), asked only for those.
    pub above_baseline: &'a dyn Fn(&Cell) -> Option<String>,
    /// (part, seconds) lines under the table.
    pub timings: Vec<(String, f64)>,
}

/// The like-for-like non-private setting of a private one: every `eps*` key set to
/// `inf` (the same pipeline without noise); `None` when no ε in `setting` is finite.
pub fn without_noise(setting: &str) -> Option<String> {
    let mut private = false;
    let parts: Vec<String> = setting
        .split(';')
        .map(|kv| match kv.split_once('=') {
            Some((k, v)) if k.starts_with("eps") && v != "inf" => {
                private = true;
                format!("{k}=inf")
            }
            _ => kv.to_string(),
        })
        .collect();
    private.then(|| parts.join(";"))
}

impl Report<'_> {
    /// The sanity law "a private model never beats the same pipeline without noise":
    /// one line per `test_accuracy` cell whose mean exceeds that of the same table's
    /// cell at [`without_noise`] of its setting by more than its 95 % half-width, with
    /// that cell's index.
    pub fn private_beats_baseline(&self) -> Vec<(usize, String)> {
        let cells = &self.cells.0;
        let mut out = Vec::new();
        for (i, c) in cells.iter().enumerate().filter(|(_, c)| c.metric == "test_accuracy") {
            let Some(base) = without_noise(&c.setting) else { continue };
            let Some(b) = cells.iter().find(|b| b.table == c.table && b.model == c.model && b.metric == c.metric && b.setting == base)
            else {
                continue;
            };
            let ((mean, ci), (base_mean, _)) = (mean_ci95(&c.values), mean_ci95(&b.values));
            if mean - base_mean > ci {
                out.push((
                    i,
                    format!(
                        "{} / {}: private `{}` scores {mean:.2} ± {ci:.2}, above the same pipeline without noise (`{base}`, {base_mean:.2}) by more than its CI",
                        c.table, c.model, c.setting
                    ),
                ));
            }
        }
        out
    }

    /// `reproduce.csv`, `reproduce.md`, and the guard's findings
    /// ([`Report::private_beats_baseline`], one line each) for the terminal.
    pub fn render(&self) -> (String, String, Vec<String>) {
        let beats = self.private_beats_baseline();
        let mut csv = String::from(CSV_HEADER);
        csv.push('\n');
        let mut md = self.intro.clone();
        if !beats.is_empty() {
            md.push_str("\n**⚠ A private cell beats its non-private baseline — a bug or a protocol difference, not a privacy gain:**\n\n");
            for (_, b) in &beats {
                writeln!(md, "- **{b}**").expect("string");
            }
        }
        md.push_str("\n| table | model | setting | metric | runs | ours | ± | paper | ± | within | note |\n|---|---|---|---|---:|---:|---:|---:|---:|---|---|\n");
        for (i, c) in self.cells.0.iter().enumerate() {
            let (mean, ci) = mean_ci95(&c.values);
            let within = c.paper.map(|p| (self.within)(mean, ci, &p));
            let note = match within {
                Some(false) => (self.explain)(c, mean).unwrap_or_else(|| UNEXPLAINED.to_string()),
                _ if beats.iter().any(|(b, _)| *b == i) => (self.above_baseline)(c).unwrap_or_else(|| ABOVE_BASELINE.to_string()),
                _ => String::new(),
            }
            .replace(',', ";")
            .replace('|', "/");
            let paper = c.paper.map_or(String::new(), |p| format!("{}", p.mean));
            let paper_ci = c.paper.and_then(|p| p.ci95).map_or(String::new(), |x| format!("{x}"));
            let within = within.map_or(String::new(), |w| w.to_string());
            writeln!(
                csv,
                "{},{},{},{},{},{},{},{mean:.6},{ci:.6},{paper},{paper_ci},{within},{note}",
                self.paper,
                c.table,
                self.dataset,
                c.model,
                c.setting,
                c.metric,
                c.values.len()
            )
            .expect("string");
            writeln!(
                md,
                "| {} | {} | {} | {} | {} | {mean:.4} | {ci:.4} | {paper} | {paper_ci} | {within} | {note} |",
                c.table,
                c.model,
                c.setting,
                c.metric,
                c.values.len()
            )
            .expect("string");
        }
        if !self.timings.is_empty() {
            md.push_str("\nWall time (all cores unless `--threads`; runs go several at once, one per thread):\n\n");
            for (part, s) in &self.timings {
                writeln!(md, "- {part}: {s:.1} s").expect("string");
            }
        }
        (csv, md, beats.into_iter().map(|(_, b)| b).collect())
    }

    /// Write both files into `dir` (claimed earlier); warn on stderr about every
    /// private cell above its baseline.
    pub fn write(&self, dir: &ResultsDir) -> Result<()> {
        let (csv, md, warnings) = self.render();
        for w in &warnings {
            eprintln!("warning: reproduce {} {}: {w}", self.paper, self.dataset);
        }
        dir.write("reproduce.csv", csv.as_bytes())?;
        dir.write("reproduce.md", md.as_bytes())?;
        Ok(())
    }
}

/// A note for a cell averaged over fewer runs than the paper's `paper_runs`.
pub fn too_few_runs(c: &Cell, paper_runs: usize) -> Option<String> {
    (c.values.len() < paper_runs)
        .then(|| format!("only {} run(s) against the paper's {paper_runs}: rerun with more before reading a gap", c.values.len()))
}

/// The results directory: `out`, or `results/<stem>-<time>`; claimed (never
/// overwritten without `force`).
pub fn claim(out: Option<&Path>, stem: &str, force: bool) -> Result<(PathBuf, ResultsDir)> {
    let dir = match out {
        Some(d) => d.to_path_buf(),
        None => results::default_dir(Path::new("results"), stem),
    };
    let claimed = ResultsDir::claim(&dir, force)?;
    Ok((dir, claimed))
}

/// A `--dataset` value checked against the registry.
pub fn check_dataset(name: &str) -> Result<()> {
    crate::data::registry::spec(name).map(|_| ()).ok_or_else(|| {
        let known: Vec<&str> = crate::data::registry::known().iter().map(|s| s.name).collect();
        Error::param("--dataset", format!("unknown dataset `{name}`; known: {}", known.join(", ")))
    })
}

/// Mean and the 95 % percentile-bootstrap half-width of the mean (2 000 resamples, a
/// fixed stream: the same values always give the same interval); 0 for one value.
pub fn mean_ci95(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return (mean, 0.0);
    }
    let mut r = rng::derive(0, "bootstrap", &[n as u64]);
    let mut means: Vec<f64> = (0..2000).map(|_| (0..n).map(|_| values[r.random_range(0..n)]).sum::<f64>() / n as f64).collect();
    means.sort_by(f64::total_cmp);
    let (lo, hi) = (means[49], means[1949]);
    (mean, (hi - lo) / 2.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bootstrap_half_width() {
        assert_eq!(mean_ci95(&[0.5]), (0.5, 0.0));
        assert_eq!(mean_ci95(&[0.3, 0.3, 0.3]), (0.3, 0.0));
        let (m, ci) = mean_ci95(&[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]);
        // σ/√n = 0.5/√8 ≈ 0.177: the 95 % half-width is about 1.96 of that.
        assert_eq!(m, 0.5);
        assert!((0.25..=0.45).contains(&ci), "{ci}");
        assert_eq!(mean_ci95(&[0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]).1, ci, "deterministic");
    }

    #[test]
    fn the_note_column_is_filled_exactly_for_cells_outside_tolerance() {
        let mut cells = Cells::default();
        let paper = |mean| Some(PaperValue { mean, ci95: None });
        cells.push("t", "gcn", "eps=1", "cos_sim", 0.50, paper(0.50)); // within
        cells.push("t", "gcn", "eps=2", "cos_sim", 0.90, paper(0.50)); // outside, explained
        cells.push("t", "gcn", "eps=4", "cos_sim", 0.10, paper(0.50)); // outside, unexplained
        cells.push("t", "gcn", "eps=8", "cos_sim", 0.70, None); // no paper value
        let within = |m: f64, _ci: f64, p: &PaperValue| (m - p.mean).abs() <= 0.05;
        let explain = |c: &Cell, _m: f64| (c.setting == "eps=2").then(|| "a known, documented cause, here".to_string());
        let report = Report {
            paper: "p",
            dataset: "d",
            cells: &cells,
            intro: String::new(),
            within: &within,
            explain: &explain,
            above_baseline: &|_| None,
            timings: vec![],
        };
        let (csv, md, _) = report.render();
        let notes: Vec<&str> = csv.lines().skip(1).map(|l| l.rsplit(',').next().unwrap()).collect();
        assert_eq!(notes, ["", "a known; documented cause; here", UNEXPLAINED, ""]);
        assert!(csv.lines().all(|l| l.split(',').count() == CSV_HEADER.split(',').count()), "{csv}");
        assert!(md.contains("| false | a known; documented cause; here |"), "{md}");
    }

    #[test]
    fn a_private_cell_above_its_baseline_is_flagged() {
        assert_eq!(
            without_noise("method=rgnn;eps_x=1;eps_y=0.5;kx=16;ky=16").as_deref(),
            Some("method=rgnn;eps_x=inf;eps_y=inf;kx=16;ky=16")
        );
        assert_eq!(without_noise("method=rgnn;eps_x=inf;eps_y=inf;kx=16;ky=16"), None);
        assert_eq!(without_noise("eps=2").as_deref(), Some("eps=inf"));
        let mut cells = Cells::default();
        for v in [80.0, 81.0, 79.0] {
            cells.push("centralized", "sage", "method=a;eps_x=inf;eps_y=inf", "test_accuracy", v, None);
            cells.push("centralized", "sage", "method=a;eps_x=1;eps_y=3", "test_accuracy", v - 5.0, None); // below: fine
            cells.push("centralized", "sage", "method=a;eps_x=1;eps_y=2", "test_accuracy", v + 0.3, None); // within its CI (±1)
            cells.push("centralized", "sage", "method=a;eps_x=1;eps_y=1", "test_accuracy", v + 10.0, None); // flagged
            cells.push("federated", "sage", "method=a;eps_x=1;eps_y=1", "test_accuracy", v + 10.0, None); // no baseline in its table
            cells.push("centralized", "sage", "method=b;eps_x=1;eps_y=1", "cos_sim", v + 10.0, None); // not accuracy
        }
        let within = |_: f64, _: f64, _: &PaperValue| true;
        let report = Report {
            paper: "p",
            dataset: "d",
            cells: &cells,
            intro: String::new(),
            within: &within,
            explain: &|_, _| None,
            above_baseline: &|_| None,
            timings: vec![],
        };
        let beats = report.private_beats_baseline();
        assert_eq!(beats.len(), 1, "{beats:?}");
        assert!(beats[0].1.contains("`method=a;eps_x=1;eps_y=1` scores 90.00"), "{beats:?}");
        let (csv, md, _) = report.render();
        // The flagged cell, and only it, carries a note in the CSV.
        let notes: Vec<&str> = csv.lines().skip(1).map(|l| l.rsplit(',').next().unwrap()).collect();
        assert_eq!(notes.iter().filter(|n| !n.is_empty()).count(), 1, "{csv}");
        assert_eq!(notes[beats[0].0], ABOVE_BASELINE.replace(',', ";"));
        let known = Report { above_baseline: &|c| c.setting.contains("eps_y=1").then(|| "a known cause".into()), ..report };
        assert_eq!(known.render().0.lines().nth(beats[0].0 + 1).unwrap().rsplit(',').next(), Some("a known cause"));
        assert!(
            md.contains("**⚠ A private cell beats its non-private baseline")
                && md.contains("- **centralized / sage: private `method=a;eps_x=1;eps_y=1`"),
            "{md}"
        );
        assert!(!csv.contains('⚠'), "the CSV keeps its contract");
    }

    #[test]
    fn settings_follow_the_contract_order() {
        let s = setting(&[("ky", "8".into()), ("eps_x", eps(1.0)), ("method", "drop".into()), ("eps_y", eps(f64::INFINITY))]);
        assert_eq!(s, "method=drop;eps_x=1;eps_y=inf;ky=8");
    }
}

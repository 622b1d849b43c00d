//! A paper's table as data: a table file (`scenarios/papers/<paper>/table.yaml`: a base
//! scenario and the cells, each a set of `--set` overrides with its `setting`) and a CSV
//! of the published values beside it. [`run`] is the one generic runner: every chosen
//! cell over seeds, in each setting, through the matrix machinery; the published value
//! of each cell looked up by (table, dataset, model, setting, metric); written as
//! `reproduce.csv` / `reproduce.md` under the common contract. `fgl-sim reproduce
//! table FILE` runs a user's own file; a built-in paper's command runs its embedded one.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Deserialize;

use super::{Cell, Cells, PaperValue, Report, SETTING_KEYS, Setting, TableOptions};
use crate::error::{Error, Result};
use crate::matrix::BuiltCell;
use crate::record::RunMetrics;
use crate::run::RunOptions;
use crate::scenario::{Scenario, yaml_name};

/// A table file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableSpec {
    /// The `paper` column.
    pub paper: String,
    /// The base scenario, relative to the table file.
    pub base: PathBuf,
    /// Local epochs of the paper's protocol (`--epochs` replaces it); a table run by
    /// settings needs it, one run by parts sets epochs in its cells.
    #[serde(default)]
    pub epochs: Option<usize>,
    /// Runs the paper averages over: a cell outside tolerance with fewer says so first.
    pub paper_runs: usize,
    /// within: |ours − paper| ≤ max(paper ±, this many points).
    #[serde(default = "default_tolerance")]
    pub tolerance_points: f64,
    /// within instead: |ours − paper| ≤ our 95 % half-width + this (a paper that prints
    /// its values without a spread, to a few decimals).
    #[serde(default)]
    pub tolerance_beyond_ci95: Option<f64>,
    /// Overrides for every cell, before the dataset's and the cell's.
    #[serde(default)]
    pub set: Vec<String>,
    /// The architectures every cell runs with (`model.arch`), one after the other; none:
    /// the base scenario's.
    #[serde(default)]
    pub models: Vec<String>,
    /// The table's parts, in order, each run into its own directory with its own matrix
    /// report; none: the table runs in the centralized and federated settings
    /// (`--setting`), each cell in both.
    #[serde(default)]
    pub parts: Vec<PartSpec>,
    /// Statements every table of this paper must keep (sanity laws, acceptance lines),
    /// checked per model on the cells present and listed in `reproduce.md`.
    #[serde(default)]
    pub checks: Vec<Check>,
    /// Figures drawn from the rows (a metric against a numeric setting key), written
    /// beside `reproduce.md` and shown in it.
    #[serde(default)]
    pub plots: Vec<super::figure::PlotSpec>,
    /// The published values, relative to the table file; none: no comparison.
    #[serde(default)]
    pub published: Option<PathBuf>,
    /// Markdown above the table. Filled in: `{dataset}`, `{variant}` (what the command's
    /// own options changed), `{MODEL}` (the first cell's architecture, upper case),
    /// `{runs}`, `{last_seed}`, `{epochs}`, `{rounds}` and `{local_epochs}` (federated).
    #[serde(default)]
    pub intro: String,
    /// Privacy effects to average per run, for the cells whose setting starts with `when`.
    #[serde(default)]
    pub effects: Option<Effects>,
    /// The known cause of a cell outside tolerance (the first note that matches it).
    #[serde(default)]
    pub notes: Vec<Note>,
    /// The known cause of a private cell above its own pipeline without noise (the first
    /// that matches; none: the contract's general note).
    #[serde(default)]
    pub above_baseline: Vec<Note>,
    /// FedAvg rounds (of ≤ 10 local epochs) per 10 epochs in the federated setting: more
    /// than 1 where the federated pipelines need longer to converge.
    #[serde(default = "one")]
    pub federated_rounds_per_10_epochs: usize,
    /// The datasets the table has cells for, by name, with what differs per dataset; `*`:
    /// any other. None: every dataset, with the cells' `*` entries where they have
    /// `by_dataset`.
    #[serde(default)]
    pub datasets: BTreeMap<String, DatasetEntry>,
    pub cells: Vec<TableCell>,
}

/// A dataset of a table: the other names `--dataset` may give it, overrides for every
/// cell on it (before the cell's own), Markdown added below the intro, and words filled
/// into the intro (`{key}` → value).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetEntry {
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub set: Vec<String>,
    #[serde(default)]
    pub intro: String,
    #[serde(default)]
    pub fill: BTreeMap<String, String>,
}

fn default_tolerance() -> f64 {
    2.0
}

fn one() -> usize {
    1
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableCell {
    /// What `--cell` selects it by.
    pub id: String,
    /// The `setting` column: keys among [`SETTING_KEYS`], values as written (∞ as `.inf`).
    pub setting: BTreeMap<String, serde_norway::Value>,
    /// Scenario overrides, as `--set` takes them.
    #[serde(default)]
    pub set: Vec<String>,
    /// What the cell adds on a dataset (a paper's per-dataset tuned hyper-parameters),
    /// by the dataset's name in `datasets`; `*`: on any other.
    #[serde(default)]
    pub by_dataset: BTreeMap<String, DatasetCell>,
    /// The part it belongs to (a table with `parts`).
    #[serde(default)]
    pub part: Option<String>,
    /// Only these of the table's `models` (none: all).
    #[serde(default)]
    pub models: Vec<String>,
    /// The rows each run gives (none: its test accuracy, in the setting's table).
    #[serde(default)]
    pub rows: Vec<Row>,
}

/// A part of a table run by parts: the name `--part` selects it by.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PartSpec {
    pub name: String,
    /// Whether it runs when no `--part` is given.
    #[serde(default = "yes")]
    pub default: bool,
}

fn yes() -> bool {
    true
}

/// Rows a run gives: in `table` (default: the setting's or the part's name), at the
/// cell's setting plus `setting`, the `metrics` of `of`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    #[serde(default)]
    pub table: Option<String>,
    #[serde(default)]
    pub setting: BTreeMap<String, serde_norway::Value>,
    #[serde(default)]
    pub of: RowSource,
    /// Among those `of` gives: `test_accuracy` (%), `test_auc` (link prediction) and
    /// `sigma` (the clients' mean noise multiplier, where DP training set one) of the
    /// run; `cos_sim` and `js_div` of an attack, and `link_share_error` (link
    /// prediction: the error in the share of links it inferred, see `docs/scenarios.md`).
    #[serde(default = "accuracy_only")]
    pub metrics: Vec<String>,
}

fn accuracy_only() -> Vec<String> {
    vec!["test_accuracy".into()]
}

/// What a row reads from a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowSource {
    /// The run itself.
    #[default]
    Run,
    /// One row per attack of the run, `attack=<its name>` added to the setting.
    EachAttack,
    /// The same, scored against the labels the clients trained on (where a defense
    /// randomised them).
    EachAttackVsTrained,
    /// The uniform guess, scored on the first attack's reports.
    UniformGuess,
}

impl RowSource {
    fn metrics(self) -> &'static [&'static str] {
        match self {
            RowSource::Run => &["test_accuracy", "test_auc", "sigma"],
            RowSource::EachAttack => &["cos_sim", "js_div", "link_share_error"],
            _ => &["cos_sim", "js_div"],
        }
    }
}

/// A statement checked per model on the cells present (absent cells: no line): the cell
/// at `setting` in `table` (with `{key}` replaced by each value of `for_each`) has its
/// metric means within the bounds, within `near_paper` of the paper's value, `metric` not
/// below / above the cell at another setting beyond both 95 % half-widths, or `metric`
/// not falling along `rises_along` beyond noise. `says` is what the line is about.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub table: String,
    #[serde(default)]
    pub setting: String,
    #[serde(default)]
    pub for_each: BTreeMap<String, Vec<serde_norway::Value>>,
    #[serde(default)]
    pub at_least: BTreeMap<String, f64>,
    #[serde(default)]
    pub at_most: BTreeMap<String, f64>,
    #[serde(default)]
    pub near_paper: BTreeMap<String, f64>,
    #[serde(default)]
    pub metric: Option<String>,
    #[serde(default)]
    pub not_below: Option<String>,
    #[serde(default)]
    pub not_above: Option<String>,
    #[serde(default)]
    pub rises_along: Vec<String>,
    #[serde(default)]
    pub says: String,
}

/// A cell's additions on one dataset: `setting` keys (after the cell's) and overrides
/// (after the cell's).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetCell {
    #[serde(default)]
    pub setting: BTreeMap<String, serde_norway::Value>,
    #[serde(default)]
    pub set: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Effects {
    pub when: String,
    pub title: String,
    pub keys: Vec<String>,
    /// The columns' headers, one per key (default: the keys).
    #[serde(default)]
    pub labels: Vec<String>,
}

/// A known cause: it explains a cell outside tolerance whose setting starts with `when`,
/// among `cells` and `datasets` (empty: any; a dataset by its table name or as given),
/// with `agrees_with` only when our mean is within max(its ±, the table's tolerance) of
/// that value (e.g. what the published code gives today), and with
/// `paper_inside_interval` only when the paper's value lies inside our 95 % interval
/// (a noisy cell). `{paper}`, `{mean}`, `{ci}` and `{runs}` in the note are filled in.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Note {
    #[serde(default)]
    pub when: String,
    #[serde(default)]
    pub cells: Vec<String>,
    #[serde(default)]
    pub datasets: Vec<String>,
    /// Only rows of these tables (empty: any).
    #[serde(default)]
    pub tables: Vec<String>,
    #[serde(default)]
    pub agrees_with: Option<Agrees>,
    #[serde(default)]
    pub paper_inside_interval: bool,
    pub note: String,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Agrees {
    pub mean: f64,
    pub ci95: f64,
}

/// One row of a published-values CSV: `table,dataset,model,setting,metric,mean,ci95`
/// (`dataset` may list names joined by `|`; `ci95` may be empty).
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    pub table: String,
    pub datasets: Vec<String>,
    pub model: String,
    pub setting: String,
    pub metric: String,
    pub value: PaperValue,
}

/// The header a published-values CSV starts with.
pub const PUBLISHED_HEADER: &str = "table,dataset,model,setting,metric,mean,ci95";

/// A table ready to run: the spec, its base scenario's text, the published values.
#[derive(Debug, Clone)]
pub struct PaperTable {
    pub spec: TableSpec,
    /// The base scenario's text and the name errors give it.
    pub base: (String, String),
    pub published: Vec<Published>,
}

/// The built-in tables: (paper, table.yaml, published.csv, the base scenario's path and
/// text; the table file names the same file).
const BUILTIN: &[(&str, &str, &str, &str, &str)] = &[
    (
        "ec-lda",
        include_str!("../../scenarios/papers/ec-lda/table.yaml"),
        include_str!("../../scenarios/papers/ec-lda/published.csv"),
        "scenarios/ec-lda-cora-gcn.yaml",
        include_str!("../../scenarios/ec-lda-cora-gcn.yaml"),
    ),
    (
        "solitude",
        include_str!("../../scenarios/papers/solitude/table.yaml"),
        include_str!("../../scenarios/papers/solitude/published.csv"),
        "scenarios/solitude-cora.yaml",
        include_str!("../../scenarios/solitude-cora.yaml"),
    ),
    (
        "lpgnn",
        include_str!("../../scenarios/papers/lpgnn/table.yaml"),
        include_str!("../../scenarios/papers/lpgnn/published.csv"),
        "scenarios/lpgnn-cora.yaml",
        include_str!("../../scenarios/lpgnn-cora.yaml"),
    ),
    (
        "rgnn",
        include_str!("../../scenarios/papers/rgnn/table.yaml"),
        include_str!("../../scenarios/papers/rgnn/published.csv"),
        "scenarios/rgnn-cora.yaml",
        include_str!("../../scenarios/rgnn-cora.yaml"),
    ),
];

impl PaperTable {
    /// A built-in paper's table (embedded in the binary).
    pub fn builtin(paper: &str) -> PaperTable {
        let &(_, table, published, base_path, base) =
            BUILTIN.iter().find(|b| b.0 == paper).unwrap_or_else(|| panic!("no built-in table `{paper}`"));
        let file = format!("scenarios/papers/{paper}/table.yaml");
        let spec: TableSpec = serde_norway::from_str(table).unwrap_or_else(|e| panic!("{file}: {e}"));
        PaperTable::new(spec, &file, (base.to_string(), base_path.to_string()), published).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A table file of the user's: its base scenario and published values are read from
    /// the paths it gives, relative to it.
    pub fn load(path: &Path) -> Result<PaperTable> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::data_file(path, format!("cannot read the table file: {e}")))?;
        let file = path.display().to_string();
        let spec: TableSpec = crate::presets::parse_yaml(&text).map_err(|e| table_err(&file, "", e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let read = |p: &Path, what: &str| {
            std::fs::read_to_string(dir.join(p)).map_err(|e| Error::data_file(dir.join(p), format!("cannot read {what}: {e}")))
        };
        let base = (read(&spec.base, "the base scenario")?, dir.join(&spec.base).display().to_string());
        let published = match &spec.published {
            Some(p) => read(p, "the published values")?,
            None => PUBLISHED_HEADER.to_string(),
        };
        PaperTable::new(spec, &file, base, &published)
    }

    fn new(spec: TableSpec, file: &str, base: (String, String), published: &str) -> Result<PaperTable> {
        if spec.cells.is_empty() {
            return Err(table_err(file, "cells", "the table has no cell"));
        }
        if spec.epochs == Some(0) || spec.paper_runs == 0 {
            return Err(table_err(file, if spec.epochs == Some(0) { "epochs" } else { "paper_runs" }, "must be at least 1"));
        }
        let parts: Vec<&str> = spec.parts.iter().map(|p| p.name.as_str()).collect();
        if parts.is_empty() && spec.epochs.is_none() {
            return Err(table_err(file, "epochs", "a table run in the centralized and federated settings needs its epochs"));
        }
        if let Some(i) = (0..parts.len()).find(|&i| parts[..i].contains(&parts[i])) {
            return Err(table_err(file, &format!("parts[{i}].name"), format!("`{}` is used twice", parts[i])));
        }
        // The tables rows may go to: their own, or the settings' / parts' names.
        let mut tables: Vec<&str> = if parts.is_empty() { vec!["centralized", "federated"] } else { parts.clone() };
        for (i, c) in spec.cells.iter().enumerate() {
            if spec.cells[..i].iter().any(|d| d.id == c.id) {
                return Err(table_err(file, &format!("cells[{i}].id"), format!("`{}` is used twice", c.id)));
            }
            match (&c.part, parts.is_empty()) {
                (None, false) => {
                    return Err(table_err(file, &format!("cells[{i}].part"), format!("missing; the table's parts: {}", parts.join(", "))));
                }
                (Some(_), true) => return Err(table_err(file, &format!("cells[{i}].part"), "the table has no `parts`")),
                (Some(p), false) if !parts.contains(&p.as_str()) => {
                    return Err(table_err(
                        file,
                        &format!("cells[{i}].part"),
                        format!("`{p}` is not among the table's parts: {}", parts.join(", ")),
                    ));
                }
                _ => {}
            }
            if let Some(m) = c.models.iter().find(|m| !spec.models.contains(m)) {
                return Err(table_err(
                    file,
                    &format!("cells[{i}].models"),
                    format!("`{m}` is not among the table's models ({})", spec.models.join(", ")),
                ));
            }
            for (j, row) in c.rows.iter().enumerate() {
                if let Some(m) = row.metrics.iter().find(|m| !row.of.metrics().contains(&m.as_str())) {
                    return Err(table_err(
                        file,
                        &format!("cells[{i}].rows[{j}].metrics"),
                        format!("`{m}` is not a metric of `of: {:?}`; allowed: {}", row.of, row.of.metrics().join(", ")),
                    ));
                }
                tables.extend(row.table.as_deref());
            }
            if let Some(k) = c.by_dataset.keys().find(|k| *k != "*" && !spec.datasets.is_empty() && !spec.datasets.contains_key(*k)) {
                return Err(table_err(
                    file,
                    &format!("cells[{i}].by_dataset.{k}"),
                    format!("`{k}` is not among the table's datasets ({})", spec.datasets.keys().cloned().collect::<Vec<_>>().join(", ")),
                ));
            }
        }
        // Every cell on every dataset the table names (or has entries for) builds, and no
        // two cells share a setting there (reproduce.csv's rows are told apart by it).
        let mut keys: Vec<Option<&str>> = spec.datasets.keys().map(|k| Some(k.as_str())).collect();
        if spec.datasets.is_empty() {
            keys.push(None);
            keys.extend(spec.cells.iter().flat_map(|c| c.by_dataset.keys()).filter(|k| *k != "*").map(|k| Some(k.as_str())));
        }
        for key in keys {
            // (cell, part, table, setting) of every row.
            let mut seen: Vec<(usize, Option<&str>, Option<String>, String)> = Vec::new();
            for i in 0..spec.cells.len() {
                let cell = &spec.cells[i];
                let (_, pairs) = cell_on(cell, key).map_err(|(field, m)| table_err(file, &format!("cells[{i}].{field}"), m))?;
                for (j, row) in rows_of(cell).iter().enumerate() {
                    let attack = (row.of != RowSource::Run && row.of != RowSource::UniformGuess).then_some("*");
                    let setting =
                        row_setting(&pairs, row, attack).map_err(|m| table_err(file, &format!("cells[{i}].rows[{j}].setting"), m))?;
                    let here = (i, cell.part.as_deref(), row.table.clone(), setting);
                    if let Some(other) = seen.iter().find(|s| s.0 != i && s.1 == here.1 && s.2 == here.2 && s.3 == here.3) {
                        let on = key.map(|k| format!(" on {k}")).unwrap_or_default();
                        return Err(table_err(
                            file,
                            &format!("cells[{i}].setting"),
                            format!("`{}` is cells[{}]'s setting too{on}", here.3, other.0),
                        ));
                    }
                    seen.push(here);
                }
            }
        }
        let open = spec.datasets.is_empty() || spec.datasets.contains_key("*");
        for (list, notes) in [("notes", &spec.notes), ("above_baseline", &spec.above_baseline)] {
            for (i, n) in notes.iter().enumerate() {
                if let Some(c) = n.cells.iter().find(|c| !spec.cells.iter().any(|d| d.id == **c)) {
                    return Err(table_err(file, &format!("{list}[{i}].cells"), format!("no cell `{c}`")));
                }
                if let Some(d) = n.datasets.iter().find(|d| !open && !spec.datasets.contains_key(*d)) {
                    return Err(table_err(file, &format!("{list}[{i}].datasets"), format!("`{d}` is not among the table's datasets")));
                }
            }
        }
        for (i, plot) in spec.plots.iter().enumerate() {
            // The setting keys and metrics of the rows that go to the plot's table.
            let (mut keys, mut metrics) = (Vec::<String>::new(), Vec::<String>::new());
            for c in &spec.cells {
                for row in rows_of(c).iter().filter(|r| r.table.as_ref().or(c.part.as_ref()).is_none_or(|t| *t == plot.table)) {
                    keys.extend(c.setting.keys().chain(row.setting.keys()).cloned());
                    if row.of != RowSource::Run && row.of != RowSource::UniformGuess {
                        keys.push("attack".into());
                    }
                    metrics.extend(row.metrics.iter().cloned());
                }
            }
            for list in [&mut keys, &mut metrics] {
                list.sort();
                list.dedup();
            }
            if !tables.contains(&plot.table.as_str()) {
                return Err(table_err(
                    file,
                    &format!("plots[{i}].table"),
                    format!("no row goes to table `{}`; tables: {}", plot.table, tables.join(", ")),
                ));
            }
            if let Some(why) = plot.problem(&keys, &metrics) {
                return Err(table_err(file, &format!("plots[{i}]"), why));
            }
        }
        for (i, c) in spec.checks.iter().enumerate() {
            let field = |f: &str| format!("checks[{i}].{f}");
            if !tables.contains(&c.table.as_str()) {
                return Err(table_err(file, &field("table"), format!("no row goes to table `{}`; tables: {}", c.table, tables.join(", "))));
            }
            if c.for_each.len() > 1 {
                return Err(table_err(file, &field("for_each"), "one key at most"));
            }
            let metric_of = |m: &str, f: &str| -> Result<()> {
                if METRICS.contains(&m) {
                    Ok(())
                } else {
                    Err(table_err(file, &field(f), format!("unknown metric `{m}`; allowed: {}", METRICS.join(", "))))
                }
            };
            for (f, map) in [("at_least", &c.at_least), ("at_most", &c.at_most), ("near_paper", &c.near_paper)] {
                map.keys().try_for_each(|m| metric_of(m, f))?;
            }
            let compares = c.not_below.is_some() || c.not_above.is_some() || !c.rises_along.is_empty();
            match &c.metric {
                Some(m) => metric_of(m, "metric")?,
                None if compares => {
                    return Err(table_err(file, &field("metric"), "`not_below`, `not_above` and `rises_along` compare a `metric`"));
                }
                None => {}
            }
            if c.setting.is_empty() == c.rises_along.is_empty() {
                return Err(table_err(
                    file,
                    &field("setting"),
                    "give the cell the check reads (`setting`) or the cells along which a metric rises (`rises_along`), not both",
                ));
            }
            let settings = Some(("setting", &c.setting))
                .filter(|_| !c.setting.is_empty())
                .into_iter()
                .chain(c.not_below.iter().map(|s| ("not_below", s)))
                .chain(c.not_above.iter().map(|s| ("not_above", s)))
                .chain(c.rises_along.iter().map(|s| ("rises_along", s)));
            for (f, setting) in settings {
                for (k, v) in c.for_each.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k, v))) {
                    let v = value_word(k, v).map_err(|m| table_err(file, &field("for_each"), m))?;
                    check_setting(&setting.replace(&format!("{{{k}}}"), &v)).map_err(|m| table_err(file, &field(f), m))?;
                }
                if c.for_each.is_empty() {
                    check_setting(setting).map_err(|m| table_err(file, &field(f), m))?;
                }
            }
        }
        if spec.federated_rounds_per_10_epochs == 0 {
            return Err(table_err(file, "federated_rounds_per_10_epochs", "must be at least 1"));
        }
        if let Some(e) = spec.effects.as_ref().filter(|e| !e.labels.is_empty() && e.labels.len() != e.keys.len()) {
            return Err(table_err(
                file,
                "effects.labels",
                format!("{} labels for {} keys: give one per key, or none", e.labels.len(), e.keys.len()),
            ));
        }
        let published_file = spec.published.as_ref().map_or_else(|| file.to_string(), |p| p.display().to_string());
        let published = parse_published(published, &published_file)?;
        Ok(PaperTable { spec, base, published })
    }

    /// The name `dataset` (as `--dataset` gives it) has among the table's datasets; `None`
    /// when the table names none (every dataset runs).
    pub fn dataset_key(&self, dataset: &str) -> Result<Option<&str>> {
        if self.spec.datasets.is_empty() {
            return Ok(None);
        }
        self.spec
            .datasets
            .iter()
            .find(|(k, e)| *k == dataset || e.aliases.iter().any(|a| a == dataset))
            .or_else(|| self.spec.datasets.get_key_value("*"))
            .map(|(k, _)| Some(k.as_str()))
            .ok_or_else(|| {
                let names: Vec<String> = self
                    .spec
                    .datasets
                    .iter()
                    .map(|(k, e)| if e.aliases.is_empty() { k.clone() } else { format!("{k} ({})", e.aliases.join(", ")) })
                    .collect();
                Error::param("--dataset", format!("`{dataset}`: the {} table has cells for {} only", self.spec.paper, names.join(", ")))
            })
    }

    /// The first of `notes` that explains `cell` (a row of table cell `c`) on `dataset`
    /// with our mean `mean`, filled in.
    pub fn note(&self, notes: &[Note], c: usize, dataset: &str, cell: &Cell, mean: f64) -> Option<String> {
        let key = self.dataset_key(dataset).ok().flatten();
        let id = &self.spec.cells[c].id;
        let (_, ci) = super::mean_ci95(&cell.values);
        // Accuracy in % to a tenth, the attack scores to a thousandth.
        let places = if cell.metric == "test_accuracy" { 1 } else { 3 };
        notes
            .iter()
            .find(|n| {
                cell.setting.starts_with(&n.when)
                    && (n.tables.is_empty() || n.tables.contains(&cell.table))
                    && (n.cells.is_empty() || n.cells.contains(id))
                    && (n.datasets.is_empty() || n.datasets.iter().any(|d| d == dataset || Some(d.as_str()) == key))
                    && n.agrees_with.is_none_or(|a| (mean - a.mean).abs() <= a.ci95.max(self.spec.tolerance_points))
                    && (!n.paper_inside_interval || cell.paper.is_some_and(|p| (p.mean - mean).abs() <= ci))
            })
            .map(|n| {
                n.note
                    .replace("{paper}", &cell.paper.map(|p| p.mean.to_string()).unwrap_or_default())
                    .replace("{mean}", &format!("{mean:.places$}"))
                    .replace("{ci}", &format!("{ci:.places$}"))
                    .replace("{runs}", &cell.values.len().to_string())
            })
    }

    /// Cell `c` on the dataset named `key` (see [`dataset_key`](Self::dataset_key)): its
    /// overrides and its `setting` string.
    pub fn cell(&self, c: usize, key: Option<&str>) -> (Vec<String>, String) {
        let (set, pairs) = self.cell_pairs(c, key);
        (set, setting_of(&pairs).expect("checked when the table was loaded"))
    }

    /// Cell `c` on the dataset named `key`: its overrides and its `setting` pairs.
    fn cell_pairs(&self, c: usize, key: Option<&str>) -> (Vec<String>, Pairs) {
        cell_on(&self.spec.cells[c], key).expect("checked when the table was loaded")
    }

    /// The overrides of cell `c` for `dataset` (named `key` in the table) with `model`:
    /// the dataset's name, the table's overrides, the dataset entry's, the model, the
    /// cell's, then `variant`'s.
    pub fn overrides(&self, c: usize, dataset: &str, model: Option<&str>, variant: &Variant) -> Vec<String> {
        let key = self.dataset_key(dataset).ok().flatten();
        let mut o = vec![format!("dataset.name={dataset}")];
        o.extend(self.spec.set.iter().cloned());
        o.extend(key.iter().flat_map(|k| self.spec.datasets[*k].set.iter().cloned()));
        o.extend(model.map(|m| format!("model.arch={m}")));
        o.extend(self.cell_pairs(c, key).0);
        o.extend(variant.overrides.iter().cloned());
        o
    }

    /// The models cell `c` runs with (`None`: the base scenario's).
    pub fn models_of(&self, c: usize) -> Vec<Option<&str>> {
        let cell = &self.spec.cells[c].models;
        if self.spec.models.is_empty() {
            return vec![None];
        }
        self.spec.models.iter().filter(|m| cell.is_empty() || cell.contains(m)).map(|m| Some(m.as_str())).collect()
    }

    /// The parts `asked` names (`--part`; none: the default ones), checked.
    pub fn parts(&self, asked: &[String]) -> Result<Vec<&str>> {
        let names: Vec<&str> = self.spec.parts.iter().map(|p| p.name.as_str()).collect();
        if let Some(bad) = asked.iter().find(|a| !names.contains(&a.as_str())) {
            let known = if names.is_empty() { "the table has no parts".to_string() } else { format!("parts: {}", names.join(", ")) };
            return Err(Error::param("--part", format!("unknown part `{bad}`; {known}")));
        }
        Ok(self
            .spec
            .parts
            .iter()
            .filter(|p| if asked.is_empty() { p.default } else { asked.contains(&p.name) })
            .map(|p| p.name.as_str())
            .collect())
    }

    /// The cell ids, in order.
    pub fn ids(&self) -> Vec<&str> {
        self.spec.cells.iter().map(|c| c.id.as_str()).collect()
    }

    /// The published value of a cell, if the paper gives one.
    pub fn published(&self, table: &str, dataset: &str, model: &str, setting: &str, metric: &str) -> Option<PaperValue> {
        self.published
            .iter()
            .find(|p| {
                p.table == table
                    && p.datasets.iter().any(|d| d == dataset)
                    && p.model == model
                    && p.setting == setting
                    && p.metric == metric
            })
            .map(|p| p.value)
    }
}

/// The metrics a row may give.
pub const METRICS: [&str; 6] = ["test_accuracy", "test_auc", "sigma", "cos_sim", "js_div", "link_share_error"];

/// A cell's rows: its own, or its test accuracy in the setting's table.
fn rows_of(cell: &TableCell) -> Vec<Row> {
    if cell.rows.is_empty() {
        vec![Row { table: None, setting: BTreeMap::new(), of: RowSource::Run, metrics: accuracy_only() }]
    } else {
        cell.rows.clone()
    }
}

/// A row's setting: the cell's pairs, the row's, and `attack` when it is given.
fn row_setting(pairs: &Pairs, row: &Row, attack: Option<&str>) -> std::result::Result<String, String> {
    let mut pairs = pairs.clone();
    let attack = attack.map(|a| ("attack".to_string(), serde_norway::Value::String(a.into())));
    for (k, v) in row.setting.iter().map(|(k, v)| (k.clone(), v.clone())).chain(attack) {
        if pairs.insert(k.clone(), v).is_some() {
            return Err(format!("`{k}` is in the cell's setting already"));
        }
    }
    setting_of(&pairs)
}

/// A `key=value;…` setting written by hand (a check's): keys known, each once.
fn check_setting(setting: &str) -> std::result::Result<(), String> {
    let mut keys = Vec::new();
    for kv in setting.split(';') {
        let Some((k, _)) = kv.split_once('=') else { return Err(format!("`{kv}` in `{setting}` is not key=value")) };
        if !SETTING_KEYS.contains(&k) {
            return Err(format!("unknown key `{k}` in `{setting}`; allowed: {}", SETTING_KEYS.join(", ")));
        }
        if keys.contains(&k) {
            return Err(format!("`{k}` twice in `{setting}`"));
        }
        keys.push(k);
    }
    Ok(())
}

/// A cell's `setting` pairs.
type Pairs = BTreeMap<String, serde_norway::Value>;

/// `cell` on the dataset named `key`: the cell's overrides then its dataset entry's (that
/// of `key`, else `*`), and the `setting` pairs of both; an error names the field.
fn cell_on(cell: &TableCell, key: Option<&str>) -> std::result::Result<(Vec<String>, Pairs), (String, String)> {
    let mut set = cell.set.clone();
    let mut pairs = cell.setting.clone();
    if !cell.by_dataset.is_empty() {
        let (name, entry) = key
            .and_then(|k| cell.by_dataset.get_key_value(k))
            .or_else(|| cell.by_dataset.get_key_value("*"))
            .ok_or_else(|| ("by_dataset".to_string(), format!("no entry for `{}` and no `*`", key.unwrap_or("*"))))?;
        for (k, v) in &entry.setting {
            if pairs.insert(k.clone(), v.clone()).is_some() {
                return Err((format!("by_dataset.{name}.setting"), format!("`{k}` is in the cell's setting already")));
            }
        }
        set.extend(entry.set.iter().cloned());
    }
    setting_of(&pairs).map_err(|m| ("setting".to_string(), m))?;
    Ok((set, pairs))
}

fn table_err(file: &str, field: &str, msg: impl Into<String>) -> Error {
    Error::Table { file: file.to_string(), field: if field.is_empty() { "(the file)".into() } else { field.to_string() }, msg: msg.into() }
}

/// A cell's `setting` string: its pairs in [`SETTING_KEYS`] order, numbers as the
/// contract writes them (∞ as `inf`).
fn setting_of(pairs: &BTreeMap<String, serde_norway::Value>) -> std::result::Result<String, String> {
    let mut out: Vec<(usize, String)> = Vec::new();
    for (k, v) in pairs {
        let rank =
            SETTING_KEYS.iter().position(|s| s == k).ok_or_else(|| format!("unknown key `{k}`; allowed: {}", SETTING_KEYS.join(", ")))?;
        out.push((rank, format!("{k}={}", value_word(k, v)?)));
    }
    out.sort();
    Ok(out.into_iter().map(|(_, kv)| kv).collect::<Vec<_>>().join(";"))
}

/// A setting's value as the contract writes it: numbers as [`super::eps`] (∞ as `inf`).
fn value_word(k: &str, v: &serde_norway::Value) -> std::result::Result<String, String> {
    use serde_norway::Value;
    let value = match v {
        Value::Number(n) => super::eps(n.as_f64().ok_or_else(|| format!("`{k}`: {n} is not a number"))?),
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        other => return Err(format!("`{k}`: {other:?} is not allowed; allowed: a number or a word")),
    };
    if value.contains([';', ',', '=']) {
        return Err(format!("`{k}`: `{value}` may not contain `;`, `,` or `=`"));
    }
    Ok(value)
}

fn parse_published(text: &str, file: &str) -> Result<Vec<Published>> {
    let bad = |line: usize, msg: String| Error::data_file(file, format!("line {line}: {msg}"));
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty());
    match lines.next() {
        Some((_, h)) if h.trim() == PUBLISHED_HEADER => {}
        other => return Err(bad(other.map_or(1, |(i, _)| i + 1), format!("the header must be `{PUBLISHED_HEADER}`"))),
    }
    let mut out = Vec::new();
    for (i, line) in lines {
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        let [table, dataset, model, setting, metric, mean, ci] = f[..] else {
            return Err(bad(i + 1, format!("{} fields, the header has 7", f.len())));
        };
        let number = |s: &str, what: &str| {
            s.parse::<f64>().ok().filter(|x| x.is_finite()).ok_or_else(|| bad(i + 1, format!("{what} `{s}` is not a number")))
        };
        let mean = number(mean, "mean")?;
        let ci95 = if ci.is_empty() { None } else { Some(number(ci, "ci95")?) };
        out.push(Published {
            table: table.into(),
            datasets: dataset.split('|').map(String::from).collect(),
            model: model.into(),
            setting: setting.into(),
            metric: metric.into(),
            value: PaperValue { mean, ci95 },
        });
    }
    Ok(out)
}

/// What a paper's own command adds to its table: overrides for every cell (after the
/// cell's), a suffix for the results directory and the intro's `{variant}`, and whether
/// the published values apply to what it runs.
#[derive(Debug, Clone, Default)]
pub struct Variant {
    pub overrides: Vec<String>,
    pub stem_suffix: String,
    pub title: String,
    pub compare: bool,
}

impl Variant {
    /// The table as it is, compared with the published values.
    pub fn compare() -> Variant {
        Variant { compare: true, ..Variant::default() }
    }
}

/// Where a table's runs go: a setting (centralized / federated) or a part.
#[derive(Debug, Clone, Copy)]
enum Group<'a> {
    Setting(Setting),
    Part(&'a str),
}

impl Group<'_> {
    fn name(&self) -> &str {
        match self {
            Group::Setting(s) => s.name(),
            Group::Part(p) => p,
        }
    }
}

/// The values a row reads from run `r`: (attack, metric, value) in the row's metric
/// order, `attack` given for the rows of each attack.
fn values_of(row: &Row, r: &RunMetrics) -> Vec<(Option<String>, &'static str, f64)> {
    let metric = |m: &str| *METRICS.iter().find(|k| **k == m).expect("checked when the table was loaded");
    let pick = |cos: f64, js: f64, m: &str| if m == "cos_sim" { cos } else { js };
    let mut out = Vec::new();
    match row.of {
        RowSource::Run => {
            for m in &row.metrics {
                match m.as_str() {
                    "test_accuracy" => out.push((None, metric(m), 100.0 * r.test_accuracy)),
                    // Only for link prediction.
                    "test_auc" => out.extend(r.test_auc.map(|a| (None, metric(m), a))),
                    // Only where DP training set a noise multiplier.
                    _ if r.noise_multipliers.is_empty() => {}
                    _ => out.push((None, metric(m), r.noise_multipliers.iter().sum::<f64>() / r.noise_multipliers.len() as f64)),
                }
            }
        }
        RowSource::UniformGuess => {
            if let Some((cos, js)) = r.attacks.first().and_then(|a| a.uniform_cos_sim.zip(a.uniform_js_div)) {
                out.extend(row.metrics.iter().map(|m| (None, metric(m), pick(cos, js, m))));
            }
        }
        RowSource::EachAttack | RowSource::EachAttackVsTrained => {
            for a in &r.attacks {
                let scores =
                    if row.of == RowSource::EachAttack { a.cos_sim.zip(a.js_div) } else { a.vs_trained_cos_sim.zip(a.vs_trained_js_div) };
                if let Some((cos, js)) = scores {
                    for m in &row.metrics {
                        match m.as_str() {
                            // Only for link prediction.
                            "link_share_error" => out.extend(a.link_share_error.map(|e| (Some(a.attack.clone()), metric(m), e))),
                            _ => out.push((Some(a.attack.clone()), metric(m), pick(cos, js, m))),
                        }
                    }
                }
            }
        }
    }
    out
}

/// The runs `table` needs as `opts` and `variant` ask: its groups (parts, or settings)
/// in order, and each group's runs as (cell, model column, the matrix cell).
struct Planned<'a> {
    key: Option<&'a str>,
    groups: Vec<Group<'a>>,
    built: Vec<Vec<(usize, String, BuiltCell)>>,
    epochs: usize,
    rounds: usize,
    /// The chosen cells.
    chosen: Vec<usize>,
}

impl Planned<'_> {
    /// The matrix stem of group `g` (its run directories' name).
    fn stem(table: &PaperTable, opts: &TableOptions, g: &Group) -> String {
        format!("reproduce-{}-{}-{}", table.spec.paper, opts.dataset, g.name())
    }

    /// The results directory's stem (`results/<stem>-<time>` unless `--out`).
    fn results_stem(table: &PaperTable, opts: &TableOptions, variant: &Variant) -> String {
        format!("reproduce-{}-{}{}", table.spec.paper, opts.dataset, variant.stem_suffix)
    }
}

/// Every run of every group of `table`, built (scenarios parsed and checked) without
/// touching data or the results directory.
fn build<'a>(table: &'a PaperTable, opts: &TableOptions, variant: &Variant) -> Result<Planned<'a>> {
    let spec = &table.spec;
    let key = table.dataset_key(&opts.dataset)?;
    let chosen = opts.chosen(&table.ids())?;
    let groups: Vec<Group> = if spec.parts.is_empty() {
        if !opts.parts.is_empty() {
            return Err(Error::param("--part", format!("the {} table has no parts; it runs by --setting", spec.paper)));
        }
        let settings = if opts.settings.is_empty() { vec![Setting::Centralized, Setting::Federated] } else { opts.settings.clone() };
        settings.into_iter().map(Group::Setting).collect()
    } else {
        if !opts.settings.is_empty() || opts.epochs.is_some() {
            let flag = if opts.epochs.is_some() { "--epochs" } else { "--setting" };
            return Err(Error::param(flag, format!("the {} table runs by parts (--part), each cell as it is written", spec.paper)));
        }
        table.parts(&opts.parts)?.into_iter().map(Group::Part).collect()
    };
    let base = &table.base.0;
    let epochs = opts.epochs.or(spec.epochs).unwrap_or(1);
    let rounds = spec.federated_rounds_per_10_epochs * epochs.div_ceil(10);
    // Every run of every group, built before the results directory is claimed: (cell,
    // model column, the matrix cell).
    let mut built: Vec<Vec<(usize, String, BuiltCell)>> = Vec::new();
    for g in &groups {
        let mut jobs = Vec::new();
        let cells = chosen.iter().filter(|&&c| match g {
            Group::Part(p) => spec.cells[c].part.as_deref() == Some(*p),
            Group::Setting(_) => true,
        });
        let pairs: Vec<(usize, Option<&str>)> = match g {
            // Model after model, each with the part's cells.
            Group::Part(_) => {
                let models: Vec<Option<&str>> =
                    if spec.models.is_empty() { vec![None] } else { spec.models.iter().map(|m| Some(m.as_str())).collect() };
                let cells: Vec<usize> = cells.copied().collect();
                models
                    .into_iter()
                    .flat_map(|m| cells.iter().filter(move |&&c| table.models_of(c).contains(&m)).map(move |&c| (c, m)))
                    .collect()
            }
            Group::Setting(_) => cells.flat_map(|&c| table.models_of(c).into_iter().map(move |m| (c, m))).collect(),
        };
        for (c, model) in pairs {
            let mut o = table.overrides(c, &opts.dataset, model, variant);
            let id = &spec.cells[c].id;
            let (cell_id, columns) = match g {
                Group::Setting(s) => {
                    o.extend(s.overrides(epochs, rounds));
                    (format!("cell={id}"), vec![("cell".to_string(), id.clone()), ("setting".to_string(), s.name().to_string())])
                }
                Group::Part(p) => {
                    let mut columns = vec![("part".to_string(), p.to_string())];
                    columns.extend(model.map(|m| ("model".to_string(), m.to_string())));
                    columns.push(("cell".to_string(), id.clone()));
                    (model.map_or(format!("cell={id}"), |m| format!("model={m},cell={id}")), columns)
                }
            };
            let scenario = Scenario::parse(base, &table.base.1, &o)?;
            jobs.push((c, yaml_name(&scenario.model.arch), BuiltCell { id: cell_id, columns, scenario }));
        }
        built.push(jobs);
    }
    if built.iter().all(Vec::is_empty) {
        return Err(Error::param("--cell", "no chosen cell runs in the chosen parts"));
    }
    Ok(Planned { key, groups, built, epochs, rounds, chosen })
}

/// `reproduce … --dry-run`: what `run` would do with the same arguments — per group, the
/// matrix's per-cell estimate of time and memory (from the finished runs already in
/// `out`'s group directories where there are any, as `--resume` would keep them, else
/// from the cost model) — and the whole, groups one after another. Nothing is written
/// or trained.
pub fn plan(table: &PaperTable, opts: &TableOptions, variant: &Variant, out: Option<&Path>) -> Result<String> {
    let p = build(table, opts, variant)?;
    let stem = Planned::results_stem(table, opts, variant);
    let dir = out.map_or_else(|| Path::new("results").join(format!("{stem}-<time>")), Path::to_path_buf);
    let runs: usize = p.built.iter().map(Vec::len).sum::<usize>() * opts.runs;
    let kind = if table.spec.parts.is_empty() { "setting" } else { "part" };
    let mut text = format!(
        "reproduce {} on {}: {} {kind}(s), {runs} runs ({} run(s) per cell); results in {}\n",
        table.spec.paper,
        opts.dataset,
        p.groups.len(),
        opts.runs,
        dir.display()
    );
    let mut total = Some(0.0);
    let mut measured = 0;
    let mut speed = None;
    for (g, jobs) in p.groups.iter().zip(p.built) {
        let cells = jobs.into_iter().map(|j| j.2).collect();
        let m = super::matrix_of(&Planned::stem(table, opts, g), cells, opts.runs)?;
        let mopts = super::matrix_options(opts.run.clone(), Some(dir.join(g.name())));
        let plan = crate::matrix::plan(&m, &mopts)?;
        speed = speed.or(plan.speed);
        write!(text, "\n{kind} `{}`: {} cells × {} runs\n{}", g.name(), m.cells.len(), opts.runs, plan.table()).expect("string");
        writeln!(text, "{:>10}  with {} run(s) at once", crate::matrix::Plan::human(plan.total_seconds), plan.jobs).expect("string");
        total = total.zip(plan.total_seconds).map(|(a, b)| a + b);
        measured += plan.measured;
    }
    write!(
        text,
        "\nestimated wall time: {} ({kind}s one after another; rough: {measured} finished run(s) measured, the rest from a cost model; `?`: dataset not loadable here)\n{}\n",
        crate::matrix::Plan::human(total),
        speed.map_or_else(|| "(no cost model needed)".to_string(), |s| s.describe())
    )
    .expect("string");
    Ok(text)
}

/// Run `table` as `opts` and `variant` ask and write `reproduce.md` / `reproduce.csv`;
/// returns the results directory.
pub fn run(table: &PaperTable, opts: &TableOptions, variant: &Variant, out: Option<&Path>, force: bool) -> Result<PathBuf> {
    let spec = &table.spec;
    let Planned { key, groups, built, epochs, rounds, chosen } = build(table, opts, variant)?;
    let (base, name) = (&table.base.0, format!("reproduce {}", spec.paper));
    let entry = key.map(|k| &spec.datasets[k]);
    let first = built.iter().flatten().next().expect("checked when built");
    // Fail on a dataset that cannot be loaded or a cell that cannot run (a memory guard)
    // before claiming the results directory: by settings, the first chosen cell of each
    // method trains 1 epoch; by parts, the first run's data is prepared.
    if spec.parts.is_empty() {
        let mut methods = Vec::new();
        for &c in &chosen {
            let setting = table.cell(c, key).1;
            let method = setting.split(';').find(|kv| kv.starts_with("method=")).map(String::from);
            if !methods.contains(&method) {
                methods.push(method);
                let mut probe = table.overrides(c, &opts.dataset, table.models_of(c)[0], variant);
                probe.push("train.epochs=1".into());
                super::train_cell(base, &name, &probe, &RunOptions { quiet: true, ..opts.run.clone() })?;
            }
        }
    } else {
        crate::run::prepare(&first.2.scenario, opts.run.data_dir.as_deref())?;
    }
    let scenario_rounds = first.2.scenario.federation.rounds;
    let models: Vec<String> = built.iter().flatten().map(|j| j.1.clone()).collect();
    let stem = Planned::results_stem(table, opts, variant);
    let (dir, results_dir) = super::claim(out, &stem, force)?;

    let quiet = RunOptions { quiet: true, ..opts.run.clone() };
    let mut cells = Cells::default();
    // The table cell each row (by index in `cells`) came from.
    let mut origin: Vec<usize> = Vec::new();
    let mut timings = Vec::new();
    let mut effects = String::new();
    for (g, jobs) in groups.iter().zip(built) {
        let t = Instant::now();
        let (ids, jobs): (Vec<(usize, String)>, Vec<BuiltCell>) = jobs.into_iter().map(|(c, m, b)| ((c, m), b)).unzip();
        let results = super::run_cells(&dir.join(g.name()), &Planned::stem(table, opts, g), jobs, opts.runs, &quiet)?;
        for ((c, model), runs) in ids.iter().zip(results) {
            let (_, pairs) = table.cell_pairs(*c, key);
            for r in &runs {
                for row in rows_of(&spec.cells[*c]) {
                    let table_name = row.table.as_deref().unwrap_or(g.name());
                    for (attack, metric, value) in values_of(&row, r) {
                        let setting = row_setting(&pairs, &row, attack.as_deref())
                            .map_err(|m| Error::Other(format!("{}: {m}", spec.cells[*c].id)))?;
                        let paper = table.published(table_name, &opts.dataset, model, &setting, metric).filter(|_| variant.compare);
                        let before = cells.0.len();
                        cells.push(table_name, model, &setting, metric, value, paper);
                        if cells.0.len() > before {
                            origin.push(*c);
                        }
                    }
                }
            }
            let setting = table.cell(*c, key).1;
            if let Some(e) = spec.effects.as_ref().filter(|e| setting.starts_with(&e.when)) {
                let means: Vec<String> = e
                    .keys
                    .iter()
                    .map(|k| {
                        format!(
                            "{:.0}",
                            runs.iter().map(|r| r.privacy_effects.get(k).copied().unwrap_or(0.0)).sum::<f64>() / runs.len() as f64
                        )
                    })
                    .collect();
                writeln!(effects, "| {} | {} | {} |", g.name(), spec.cells[*c].id, means.join(" | ")).expect("string");
            }
        }
        timings.push((g.name().to_string(), t.elapsed().as_secs_f64()));
    }
    let rounds = if spec.parts.is_empty() { rounds } else { scenario_rounds };
    let fill = |text: &str| {
        let text = text
            .replace("{dataset}", &opts.dataset)
            .replace("{variant}", &variant.title)
            .replace("{MODEL}", &models[0].to_uppercase())
            .replace("{runs}", &opts.runs.to_string())
            .replace("{last_seed}", &(opts.runs - 1).to_string())
            .replace("{epochs}", &epochs.to_string())
            .replace("{rounds}", &rounds.to_string())
            .replace("{local_epochs}", &epochs.min(10).to_string());
        entry.iter().flat_map(|e| &e.fill).fold(text, |t, (k, v)| t.replace(&format!("{{{k}}}"), v))
    };
    let mut intro = fill(&spec.intro);
    if let Some(extra) = entry.map(|e| &e.intro).filter(|t| !t.is_empty()) {
        write!(intro, "\n{}", fill(extra)).expect("string");
    }
    if let Some(e) = spec.effects.as_ref().filter(|_| !effects.is_empty()) {
        let header = if e.labels.is_empty() { &e.keys } else { &e.labels }.join(" | ");
        let rule = e.keys.iter().map(|_| "---:").collect::<Vec<_>>().join("|");
        write!(intro, "\n{}\n\n| setting | cell | {header} |\n|---|---|{rule}|\n{effects}", e.title).expect("string");
    }
    let checks = check_lines(spec, &cells);
    if !checks.is_empty() {
        write!(intro, "\n## Checks\n\n{checks}").expect("string");
    }
    let mut figures = Vec::new();
    for plot in &spec.plots {
        if let Some(svg) = super::figure::draw(plot, &cells) {
            write!(intro, "\n![{}]({})\n", plot.title, plot.file).expect("string");
            figures.push((plot.file.as_str(), svg));
        }
    }
    let index = |c: &Cell| cells.0.iter().position(|d| std::ptr::eq(d, c)).map(|i| origin[i]);
    let explain = |c: &Cell, mean: f64| {
        let why = index(c).and_then(|i| table.note(&spec.notes, i, &opts.dataset, c, mean));
        match (why, super::too_few_runs(c, spec.paper_runs)) {
            (Some(w), Some(f)) => Some(format!("{w}; {f}")),
            (w, f) => w.or(f),
        }
    };
    let above_baseline = |c: &Cell| {
        let mean = super::mean_ci95(&c.values).0;
        index(c).and_then(|i| table.note(&spec.above_baseline, i, &opts.dataset, c, mean))
    };
    let within = |mean: f64, ci: f64, p: &PaperValue| match spec.tolerance_beyond_ci95 {
        Some(t) => (mean - p.mean).abs() <= ci + t,
        None => super::within_points(mean, p, spec.tolerance_points),
    };
    for (file, svg) in &figures {
        results_dir.write(file, svg.as_bytes())?;
    }
    Report {
        paper: &spec.paper,
        dataset: &opts.dataset,
        cells: &cells,
        intro,
        within: &within,
        explain: &explain,
        above_baseline: &above_baseline,
        timings,
    }
    .write(&results_dir)?;
    Ok(dir)
}

/// Each of `settings` shortened to the `key=value` pairs not shared by all of them.
fn differing(settings: &[&str]) -> Vec<String> {
    let shared = |kv: &str| settings.iter().all(|s| s.split(';').any(|x| x == kv));
    settings.iter().map(|s| s.split(';').filter(|kv| !shared(kv)).collect::<Vec<_>>().join(";")).collect()
}

/// The table's `checks` on `cells`, one Markdown line each (`ok` / `FAILS` with the
/// numbers), per model in the order the cells have them.
fn check_lines(spec: &TableSpec, cells: &Cells) -> String {
    let mut models: Vec<&str> = Vec::new();
    for c in &cells.0 {
        if !models.contains(&c.model.as_str()) {
            models.push(&c.model);
        }
    }
    let mut out = String::new();
    for model in models {
        for check in &spec.checks {
            let find = |setting: &str, metric: &str| {
                cells.0.iter().find(|c| c.table == check.table && c.model == model && c.setting == setting && c.metric == metric)
            };
            let stat = |setting: &str, metric: &str| find(setting, metric).map(|c| super::mean_ci95(&c.values));
            let fmt = |metric: &str, x: f64| if metric == "test_accuracy" { format!("{x:.1}") } else { format!("{x:.4}") };
            let instances: Vec<Option<(String, String)>> = match check.for_each.iter().next() {
                Some((k, values)) => {
                    values.iter().map(|v| Some((k.clone(), value_word(k, v).expect("checked when the table was loaded")))).collect()
                }
                None => vec![None],
            };
            for instance in instances {
                let fill = |s: &str| instance.as_ref().map_or(s.to_string(), |(k, v)| s.replace(&format!("{{{k}}}"), v));
                let setting = fill(&check.setting);
                let mut said: Vec<String> = Vec::new();
                let mut ok = true;
                let mut missing = false;
                for (metric, bound, at_least) in
                    check.at_least.iter().map(|(m, b)| (m, b, true)).chain(check.at_most.iter().map(|(m, b)| (m, b, false)))
                {
                    match stat(&setting, metric) {
                        Some((mean, _)) => {
                            ok &= if at_least { mean >= *bound } else { mean <= *bound };
                            said.push(format!("{metric} {} {} {bound}", fmt(metric, mean), if at_least { "≥" } else { "≤" }));
                        }
                        None => missing = true,
                    }
                }
                for (metric, distance) in &check.near_paper {
                    match find(&setting, metric) {
                        Some(c) => {
                            if let Some(p) = c.paper {
                                let mean = super::mean_ci95(&c.values).0;
                                ok &= (mean - p.mean).abs() <= *distance;
                                said.push(format!("{metric} {} within {distance} of the paper's {}", fmt(metric, mean), p.mean));
                            }
                        }
                        None => missing = true,
                    }
                }
                if let Some(metric) = &check.metric {
                    for (other, below) in check.not_below.iter().map(|o| (o, true)).chain(check.not_above.iter().map(|o| (o, false))) {
                        let other = fill(other);
                        match (stat(&setting, metric), stat(&other, metric)) {
                            (Some((m, ci)), Some((o, oci))) => {
                                ok &= if below { m + ci >= o - oci } else { m - ci <= o + oci };
                                said.push(format!(
                                    "{metric} {} ± {} not {} `{}`'s {} ± {} beyond noise",
                                    fmt(metric, m),
                                    fmt(metric, ci),
                                    if below { "below" } else { "above" },
                                    differing(&[&setting, &other])[1],
                                    fmt(metric, o),
                                    fmt(metric, oci)
                                ));
                            }
                            _ => missing = true,
                        }
                    }
                    let series: Vec<(String, f64, f64)> =
                        check.rises_along.iter().filter_map(|s| stat(&fill(s), metric).map(|(m, ci)| (fill(s), m, ci))).collect();
                    if series.len() >= 2 {
                        ok &= series.windows(2).all(|w| w[1].1 + w[1].2 >= w[0].1 - w[0].2);
                        let short = differing(&series.iter().map(|(s, ..)| s.as_str()).collect::<Vec<_>>());
                        let path: Vec<String> =
                            series.iter().zip(short).map(|((_, m, _), s)| format!("`{s}` {}", fmt(metric, *m))).collect();
                        said.push(format!("{metric} does not fall along {} beyond noise", path.join(" → ")));
                    } else if !check.rises_along.is_empty() {
                        missing = true;
                    }
                }
                if missing || said.is_empty() {
                    continue;
                }
                let at = if check.rises_along.is_empty() {
                    format!(" `{setting}`")
                } else {
                    let common: Vec<&str> = check.rises_along[0]
                        .split(';')
                        .filter(|kv| check.rises_along.iter().all(|s| s.split(';').any(|x| x == *kv)))
                        .collect();
                    if common.is_empty() { String::new() } else { format!(" `{}`", common.join(";")) }
                };
                let says = if check.says.is_empty() { String::new() } else { format!(" ({})", fill(&check.says)) };
                writeln!(out, "- {} {model}, {}{at}: {}{says}", if ok { "ok" } else { "**FAILS**" }, check.table, said.join("; "))
                    .expect("string");
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_written_in_the_contract_order() {
        let pairs: BTreeMap<String, serde_norway::Value> =
            serde_norway::from_str("{ky: 2, method: solitude, eps_a: .inf, eps_x: 1, kx: 4}").unwrap();
        assert_eq!(setting_of(&pairs).unwrap(), "method=solitude;eps_x=1;eps_a=inf;kx=4;ky=2");
        let bad: BTreeMap<String, serde_norway::Value> = serde_norway::from_str("{colour: red}").unwrap();
        assert!(setting_of(&bad).unwrap_err().contains("unknown key `colour`"));
        let comma: BTreeMap<String, serde_norway::Value> = serde_norway::from_str("{method: 'a,b'}").unwrap();
        assert!(setting_of(&comma).unwrap_err().contains("may not contain"));
    }

    #[test]
    fn published_values_are_checked_line_by_line() {
        let ok = format!("{PUBLISHED_HEADER}\ncentralized,cora|planetoid-cora,sage,method=base,test_accuracy,50.9,\n");
        let p = parse_published(&ok, "p.csv").unwrap();
        assert_eq!(p[0].datasets, ["cora", "planetoid-cora"]);
        assert_eq!(p[0].value, PaperValue { mean: 50.9, ci95: None });
        let e = parse_published("table,dataset\n", "p.csv").unwrap_err().to_string();
        assert!(e.contains("p.csv") && e.contains("line 1") && e.contains("header"), "{e}");
        let e = parse_published(&format!("{PUBLISHED_HEADER}\na,b,c,d,e,x,1\n"), "p.csv").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("mean `x`"), "{e}");
        let e = parse_published(&format!("{PUBLISHED_HEADER}\na,b,c\n"), "p.csv").unwrap_err().to_string();
        assert!(e.contains("3 fields"), "{e}");
    }

    /// Per-dataset cells: an entry per dataset (or `*`), settings unique on each dataset,
    /// notes naming real cells and datasets; `--dataset` by name or alias.
    #[test]
    fn cells_by_dataset_are_checked_when_the_table_loads() {
        let table = |yaml: &str| {
            let spec: TableSpec = serde_norway::from_str(yaml).unwrap();
            PaperTable::new(spec, "t.yaml", (String::new(), "base.yaml".into()), PUBLISHED_HEADER)
        };
        let head = "{paper: p, base: b.yaml, epochs: 1, paper_runs: 1, datasets: {cora: {aliases: [planetoid-cora]}, dblp: {}}, ";
        let ok = format!(
            "{head}cells: [{{id: a, setting: {{method: m}}, set: [x=1], by_dataset: {{cora: {{setting: {{kx: 2}}, set: [y=2]}}, '*': {{setting: {{kx: 4}}}}}}}}]}}"
        );
        let t = table(&ok).unwrap();
        assert_eq!(t.cell(0, t.dataset_key("planetoid-cora").unwrap()), (vec!["x=1".into(), "y=2".into()], "method=m;kx=2".into()));
        assert_eq!(t.cell(0, t.dataset_key("dblp").unwrap()), (vec!["x=1".into()], "method=m;kx=4".into()));
        let e = t.dataset_key("pubmed").unwrap_err().to_string();
        assert!(e.contains("`pubmed`: the p table has cells for cora (planetoid-cora), dblp only"), "{e}");
        let err = |yaml: String| table(&yaml).unwrap_err().to_string();
        let e = err(format!("{head}cells: [{{id: a, setting: {{method: m}}, by_dataset: {{cora: {{}}}}}}]}}"));
        assert!(e.contains("cells[0].by_dataset") && e.contains("no entry for `dblp` and no `*`"), "{e}");
        let e = err(format!("{head}cells: [{{id: a, setting: {{method: m}}, by_dataset: {{citeseer: {{}}, '*': {{}}}}}}]}}"));
        assert!(e.contains("cells[0].by_dataset.citeseer") && e.contains("not among the table's datasets"), "{e}");
        let e = err(format!("{head}cells: [{{id: a, setting: {{method: m}}, by_dataset: {{'*': {{setting: {{method: n}}}}}}}}]}}"));
        assert!(e.contains("by_dataset.*.setting") && e.contains("`method` is in the cell's setting already"), "{e}");
        let two = "[{id: a, setting: {method: m}, by_dataset: {cora: {setting: {kx: 1}}, '*': {setting: {kx: 2}}}}, \
                   {id: b, setting: {method: m}, by_dataset: {'*': {setting: {kx: 2}}}}]";
        let e = err(format!("{head}cells: {two}}}"));
        assert!(e.contains("cells[1].setting") && e.contains("is cells[0]'s setting too on dblp"), "{e}");
        let e = err(format!("{head}notes: [{{cells: [z], note: n}}], cells: [{{id: a, setting: {{method: m}}}}]}}"));
        assert!(e.contains("notes[0].cells") && e.contains("no cell `z`"), "{e}");
    }

    /// A table run by parts: its cells, rows and checks are checked when it loads, each
    /// error naming the field.
    #[test]
    fn parts_rows_and_checks_are_checked_when_the_table_loads() {
        let table = |yaml: &str| {
            let spec: TableSpec = serde_norway::from_str(yaml).unwrap();
            PaperTable::new(spec, "t.yaml", (String::new(), "base.yaml".into()), PUBLISHED_HEADER)
        };
        let head = "{paper: p, base: b.yaml, paper_runs: 1, models: [gcn, sage], parts: [{name: a}, {name: b, default: false}], ";
        let cell = "{id: x, part: a, setting: {clip: '0.01'}, rows: [{table: t, of: each_attack, metrics: [cos_sim, js_div]}, {table: t, setting: {attack: none}}]}";
        let t = table(&format!("{head}cells: [{cell}, {{id: y, part: b, models: [sage], setting: {{clip: none}}}}]}}")).unwrap();
        assert_eq!(t.parts(&[]).unwrap(), ["a"]);
        assert_eq!(t.parts(&["b".into()]).unwrap(), ["b"]);
        assert!(t.parts(&["c".into()]).unwrap_err().to_string().contains("unknown part `c`; parts: a, b"));
        assert_eq!(t.models_of(0), [Some("gcn"), Some("sage")]);
        assert_eq!(t.models_of(1), [Some("sage")]);
        let err = |yaml: String| table(&yaml).unwrap_err().to_string();
        let e = err(format!("{head}cells: [{{id: x, setting: {{clip: none}}}}]}}"));
        assert!(e.contains("cells[0].part") && e.contains("missing; the table's parts: a, b"), "{e}");
        let e = err(format!("{head}cells: [{{id: x, part: c, setting: {{clip: none}}}}]}}"));
        assert!(e.contains("cells[0].part") && e.contains("`c` is not among"), "{e}");
        let e = err(format!("{head}cells: [{{id: x, part: a, models: [gat], setting: {{clip: none}}}}]}}"));
        assert!(e.contains("cells[0].models") && e.contains("`gat` is not among the table's models"), "{e}");
        let e = err(format!(
            "{head}cells: [{{id: x, part: a, setting: {{clip: none}}, rows: [{{of: each_attack, metrics: [test_accuracy]}}]}}]}}"
        ));
        assert!(e.contains("cells[0].rows[0].metrics") && e.contains("allowed: cos_sim, js_div"), "{e}");
        let e =
            err(format!("{head}cells: [{{id: x, part: a, setting: {{attack: z}}, rows: [{{of: each_attack, metrics: [cos_sim]}}]}}]}}"));
        assert!(e.contains("cells[0].rows[0].setting") && e.contains("`attack` is in the cell's setting already"), "{e}");
        let e = err("{paper: p, base: b.yaml, paper_runs: 1, cells: [{id: x, setting: {clip: none}}]}".to_string());
        assert!(e.contains("epochs") && e.contains("needs its epochs"), "{e}");
        let with = |check: &str| err(format!("{head}checks: [{check}], cells: [{cell}]}}"));
        let e = with("{table: u, setting: 'clip=0.01', at_least: {cos_sim: 1}}");
        assert!(e.contains("checks[0].table") && e.contains("no row goes to table `u`; tables: a, b, t"), "{e}");
        let e = with("{table: t, setting: 'clip=0.01', rises_along: ['clip=1'], metric: cos_sim}");
        assert!(e.contains("checks[0].setting") && e.contains("not both"), "{e}");
        let e = with("{table: t, setting: 'clip=0.01', not_below: 'clip=1'}");
        assert!(e.contains("checks[0].metric") && e.contains("compare a `metric`"), "{e}");
        let e = with("{table: t, setting: 'clip=0.01', at_most: {accuracy: 1}}");
        assert!(e.contains("checks[0].at_most") && e.contains("unknown metric `accuracy`"), "{e}");
        let e = with("{table: t, for_each: {eps: [1, 2]}, setting: 'eps={eps};colour=red', at_most: {cos_sim: 1}}");
        assert!(e.contains("checks[0].setting") && e.contains("unknown key `colour` in `eps=1;colour=red`"), "{e}");
        let plot = |p: &str| table(&format!("{head}plots: [{p}], cells: [{cell}]}}"));
        assert!(plot("{file: f.svg, title: F, table: t, x: clip, metrics: [cos_sim, test_accuracy]}").is_ok());
        let e = plot("{file: f.svg, title: F, table: u, x: clip, metrics: [cos_sim]}").unwrap_err().to_string();
        assert!(e.contains("plots[0].table") && e.contains("no row goes to table `u`"), "{e}");
        let e = plot("{file: f.svg, title: F, table: t, x: eps, metrics: [cos_sim]}").unwrap_err().to_string();
        assert!(e.contains("plots[0]") && e.contains("x `eps`: not a setting key of table `t` (its keys: attack, clip)"), "{e}");
        let e = plot("{file: f.svg, title: F, table: t, x: clip, metrics: [sigma]}").unwrap_err().to_string();
        assert!(e.contains("plots[0]") && e.contains("metric `sigma`: table `t` has no such rows"), "{e}");
    }

    /// Each kind of check reads its cells per model and says `FAILS` when the statement
    /// breaks; a check whose cells are absent says nothing.
    #[test]
    fn checks_read_the_cells_and_fail_when_the_law_breaks() {
        let yaml = "{paper: p, base: b.yaml, paper_runs: 1, parts: [{name: d}], checks: [\
            {table: d, setting: 'eps=1;attack=ec-lda', at_least: {cos_sim: 0.9}, at_most: {js_div: 0.1}, says: bounds}, \
            {table: d, for_each: {eps: [1, 2]}, setting: 'eps={eps};attack=ec-lda', metric: cos_sim, not_below: 'eps={eps};attack=uniform', says: 'not below at {eps}'}, \
            {table: d, rises_along: ['eps=1;attack=ec-lda', 'eps=2;attack=ec-lda', 'eps=inf;attack=ec-lda'], metric: test_accuracy}, \
            {table: d, setting: 'eps=9;attack=ec-lda', at_least: {cos_sim: 0}}], \
            cells: [{id: x, part: d, setting: {clip: none}}]}";
        let spec: TableSpec = serde_norway::from_str(yaml).unwrap();
        let mut cells = Cells::default();
        for (setting, cos, js, acc) in [("eps=1", 0.95, 0.05, 60.0), ("eps=2", 0.7, 0.2, 70.0), ("eps=inf", 1.0, 0.0, 80.0)] {
            cells.push("d", "gcn", &format!("{setting};attack=ec-lda"), "cos_sim", cos, None);
            cells.push("d", "gcn", &format!("{setting};attack=ec-lda"), "js_div", js, None);
            cells.push("d", "gcn", &format!("{setting};attack=ec-lda"), "test_accuracy", acc, None);
            cells.push("d", "gcn", &format!("{setting};attack=uniform"), "cos_sim", 0.75, None);
        }
        let lines = check_lines(&spec, &cells);
        let lines: Vec<&str> = lines.lines().collect();
        assert_eq!(lines.len(), 4, "{lines:?}");
        assert_eq!(lines[0], "- ok gcn, d `eps=1;attack=ec-lda`: cos_sim 0.9500 ≥ 0.9; js_div 0.0500 ≤ 0.1 (bounds)");
        assert!(
            lines[1].starts_with("- ok gcn, d `eps=1;attack=ec-lda`: cos_sim 0.9500 ± 0.0000 not below `attack=uniform`'s 0.7500"),
            "{}",
            lines[1]
        );
        assert!(lines[1].ends_with("(not below at 1)"), "{}", lines[1]);
        assert!(lines[2].starts_with("- **FAILS** gcn, d `eps=2;attack=ec-lda`: cos_sim 0.7000"), "{}", lines[2]);
        assert_eq!(
            lines[3],
            "- ok gcn, d `attack=ec-lda`: test_accuracy does not fall along `eps=1` 60.0 → `eps=2` 70.0 → `eps=inf` 80.0 beyond noise"
        );
        // Accuracy falling as ε grows, and a bound broken.
        cells
            .0
            .iter_mut()
            .filter(|c| c.setting == "eps=2;attack=ec-lda")
            .for_each(|c| c.values = vec![if c.metric == "test_accuracy" { 50.0 } else { 0.99 }]);
        cells.0.iter_mut().filter(|c| c.setting == "eps=1;attack=ec-lda" && c.metric == "js_div").for_each(|c| c.values = vec![0.3]);
        let lines = check_lines(&spec, &cells);
        assert!(
            lines
                .lines()
                .next()
                .unwrap()
                .starts_with("- **FAILS** gcn, d `eps=1;attack=ec-lda`: cos_sim 0.9500 ≥ 0.9; js_div 0.3000 ≤ 0.1"),
            "{lines}"
        );
        assert!(lines.lines().nth(2).unwrap().starts_with("- ok gcn, d `eps=2"), "{lines}");
        assert!(lines.lines().nth(3).unwrap().starts_with("- **FAILS** gcn, d `attack=ec-lda`: test_accuracy"), "{lines}");
    }

    /// The Solitude table as shipped: its cells, their settings and overrides, and the
    /// published values it compares with.
    #[test]
    fn the_solitude_table() {
        let t = PaperTable::builtin("solitude");
        // The embedded base scenario is the file the table names.
        assert_eq!(
            Path::new("scenarios/papers/solitude").join(&t.spec.base).canonicalize().unwrap(),
            Path::new(&t.base.1).canonicalize().unwrap()
        );
        assert_eq!(t.ids().len(), 12);
        assert_eq!(t.ids()[3], "base-ainf");
        let c = t.ids().iter().position(|&i| i == "solitude-ainf").unwrap();
        assert_eq!(t.spec.cells[c].set, ["defenses=[{kind: solitude, epsilon_x: .inf, epsilon_a: .inf, kx: 4, ky: 2}]"]);
        // The guard's like-for-like row of every private Solitude cell.
        let private = t.ids().iter().position(|&i| i == "solitude-a7").unwrap();
        let setting = |c: usize| t.cell(c, None).1;
        assert_eq!(super::super::without_noise(&setting(private)), Some(setting(c)));
        let l = t.ids().iter().position(|&i| i == "lpgnn-a7.5").unwrap();
        assert_eq!(setting(l), "method=lpgnn;eps_x=1;eps_a=7.5;kx=4;ky=2");
        assert!(t.spec.cells[l].set[0].starts_with("defenses=[{kind: edge-ldp, epsilon: 7.5}, {kind: lpgnn"));
        assert_eq!(setting(0), "method=base;eps_x=1;eps_a=7;kx=0;ky=0");
        let s8 = "method=solitude;eps_x=1;eps_a=8;kx=4;ky=2";
        assert_eq!(
            t.published("centralized", "planetoid-cora", "sage", s8, "test_accuracy"),
            Some(PaperValue { mean: 79.0, ci95: Some(0.6) })
        );
        assert_eq!(t.published("centralized", "citeseer", "sage", s8, "test_accuracy"), None);
        assert_eq!(t.published("federated", "cora", "sage", s8, "test_accuracy"), None);
    }
}

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

use super::{Cell, Cells, PaperValue, Report, SETTING_KEYS, TableOptions};
use crate::error::{Error, Result};
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
    /// Local epochs of the paper's protocol (`--epochs` replaces it).
    pub epochs: usize,
    /// Runs the paper averages over: a cell outside tolerance with fewer says so first.
    pub paper_runs: usize,
    /// within: |ours − paper| ≤ max(paper ±, this many points).
    #[serde(default = "default_tolerance")]
    pub tolerance_points: f64,
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
        if spec.epochs == 0 || spec.paper_runs == 0 {
            return Err(table_err(file, if spec.epochs == 0 { "epochs" } else { "paper_runs" }, "must be at least 1"));
        }
        for (i, c) in spec.cells.iter().enumerate() {
            if spec.cells[..i].iter().any(|d| d.id == c.id) {
                return Err(table_err(file, &format!("cells[{i}].id"), format!("`{}` is used twice", c.id)));
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
            let mut seen: Vec<String> = Vec::new();
            for i in 0..spec.cells.len() {
                let (_, setting) = cell_on(&spec.cells[i], key).map_err(|(field, m)| table_err(file, &format!("cells[{i}].{field}"), m))?;
                if let Some(j) = seen.iter().position(|s| *s == setting) {
                    let on = key.map(|k| format!(" on {k}")).unwrap_or_default();
                    return Err(table_err(file, &format!("cells[{i}].setting"), format!("`{setting}` is cells[{j}]'s setting too{on}")));
                }
                seen.push(setting);
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

    /// The first of `notes` that explains `cell` (table cell `c`) on `dataset` with our
    /// mean `mean`, filled in.
    pub fn note(&self, notes: &[Note], c: usize, dataset: &str, cell: &Cell, mean: f64) -> Option<String> {
        let key = self.dataset_key(dataset).ok().flatten();
        let (id, setting) = (&self.spec.cells[c].id, self.cell(c, key).1);
        let (_, ci) = super::mean_ci95(&cell.values);
        notes
            .iter()
            .find(|n| {
                setting.starts_with(&n.when)
                    && (n.cells.is_empty() || n.cells.contains(id))
                    && (n.datasets.is_empty() || n.datasets.iter().any(|d| d == dataset || Some(d.as_str()) == key))
                    && n.agrees_with.is_none_or(|a| (mean - a.mean).abs() <= a.ci95.max(self.spec.tolerance_points))
                    && (!n.paper_inside_interval || cell.paper.is_some_and(|p| (p.mean - mean).abs() <= ci))
            })
            .map(|n| {
                n.note
                    .replace("{paper}", &cell.paper.map(|p| p.mean.to_string()).unwrap_or_default())
                    .replace("{mean}", &format!("{mean:.1}"))
                    .replace("{ci}", &format!("{ci:.1}"))
                    .replace("{runs}", &cell.values.len().to_string())
            })
    }

    /// Cell `c` on the dataset named `key` (see [`dataset_key`](Self::dataset_key)): its
    /// overrides and its `setting` string.
    pub fn cell(&self, c: usize, key: Option<&str>) -> (Vec<String>, String) {
        cell_on(&self.spec.cells[c], key).expect("checked when the table was loaded")
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

/// `cell` on the dataset named `key`: the cell's overrides then its dataset entry's (that
/// of `key`, else `*`), and the `setting` of both; an error names the field.
fn cell_on(cell: &TableCell, key: Option<&str>) -> std::result::Result<(Vec<String>, String), (String, String)> {
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
    let setting = setting_of(&pairs).map_err(|m| ("setting".to_string(), m))?;
    Ok((set, setting))
}

fn table_err(file: &str, field: &str, msg: impl Into<String>) -> Error {
    Error::Table { file: file.to_string(), field: if field.is_empty() { "(the file)".into() } else { field.to_string() }, msg: msg.into() }
}

/// A cell's `setting` string: its pairs in [`SETTING_KEYS`] order, numbers as the
/// contract writes them (∞ as `inf`).
fn setting_of(pairs: &BTreeMap<String, serde_norway::Value>) -> std::result::Result<String, String> {
    use serde_norway::Value;
    let mut out: Vec<(usize, String)> = Vec::new();
    for (k, v) in pairs {
        let rank =
            SETTING_KEYS.iter().position(|s| s == k).ok_or_else(|| format!("unknown key `{k}`; allowed: {}", SETTING_KEYS.join(", ")))?;
        let value = match v {
            Value::Number(n) => super::eps(n.as_f64().ok_or_else(|| format!("`{k}`: {n} is not a number"))?),
            Value::String(s) => s.clone(),
            Value::Bool(b) => b.to_string(),
            other => return Err(format!("`{k}`: {other:?} is not allowed; allowed: a number or a word")),
        };
        if value.contains([';', ',', '=']) {
            return Err(format!("`{k}`: `{value}` may not contain `;`, `,` or `=`"));
        }
        out.push((rank, format!("{k}={value}")));
    }
    out.sort();
    Ok(out.into_iter().map(|(_, kv)| kv).collect::<Vec<_>>().join(";"))
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

/// Test accuracy in %.
fn accuracy(r: &RunMetrics) -> f64 {
    100.0 * r.test_accuracy
}

/// Run `table` as `opts` and `variant` ask and write `reproduce.md` / `reproduce.csv`;
/// returns the results directory.
pub fn run(table: &PaperTable, opts: &TableOptions, variant: &Variant, out: Option<&Path>, force: bool) -> Result<PathBuf> {
    let spec = &table.spec;
    let key = table.dataset_key(&opts.dataset)?;
    let chosen = opts.chosen(&table.ids())?;
    let (base, name) = (&table.base.0, format!("reproduce {}", spec.paper));
    let entry = key.map(|k| &spec.datasets[k]);
    let overrides = |c: usize| -> Vec<String> {
        let mut o = vec![format!("dataset.name={}", opts.dataset)];
        o.extend(entry.iter().flat_map(|e| e.set.iter().cloned()));
        o.extend(table.cell(c, key).0);
        o.extend(variant.overrides.iter().cloned());
        o
    };
    let settings: Vec<String> = (0..spec.cells.len()).map(|c| table.cell(c, key).1).collect();
    // The model column: each cell's architecture, from its scenario.
    let models = chosen
        .iter()
        .map(|&c| Ok(yaml_name(&Scenario::parse(base, &table.base.1, &overrides(c))?.model.arch)))
        .collect::<Result<Vec<String>>>()?;
    // Fail on a dataset that cannot be loaded or a cell that cannot run (a memory guard)
    // before claiming the results directory: the first chosen cell of each method at 1 epoch.
    let mut methods = Vec::new();
    for &c in &chosen {
        let method = settings[c].split(';').find(|kv| kv.starts_with("method=")).map(String::from);
        if !methods.contains(&method) {
            methods.push(method);
            let mut probe = overrides(c);
            probe.push("train.epochs=1".into());
            super::train_cell(base, &name, &probe, &RunOptions { quiet: true, ..opts.run.clone() })?;
        }
    }
    let stem = format!("reproduce-{}-{}{}", spec.paper, opts.dataset, variant.stem_suffix);
    let (dir, results_dir) = super::claim(out, &stem, force)?;

    let epochs = opts.epochs.unwrap_or(spec.epochs);
    let rounds = spec.federated_rounds_per_10_epochs * epochs.div_ceil(10);
    let quiet = RunOptions { quiet: true, ..opts.run.clone() };
    let mut cells = Cells::default();
    let mut timings = Vec::new();
    let mut effects = String::new();
    for &s in &opts.settings {
        let t = Instant::now();
        let bases: Vec<(String, Vec<String>)> = chosen.iter().map(|&c| (spec.cells[c].id.clone(), overrides(c))).collect();
        let results = super::seed_runs(&dir, (base, &name), &bases, opts.runs, s, &s.overrides(epochs, rounds), &quiet)?;
        for ((&c, model), runs) in chosen.iter().zip(&models).zip(results) {
            let setting = &settings[c];
            let value = table.published(s.name(), &opts.dataset, model, setting, "test_accuracy").filter(|_| variant.compare);
            for r in &runs {
                cells.push(s.name(), model, setting, "test_accuracy", accuracy(r), value);
            }
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
                writeln!(effects, "| {} | {} | {} |", s.name(), spec.cells[c].id, means.join(" | ")).expect("string");
            }
        }
        timings.push((s.name().to_string(), t.elapsed().as_secs_f64()));
    }
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
    let index = |c: &Cell| settings.iter().position(|s| *s == c.setting);
    let explain = |c: &Cell, mean: f64| {
        super::too_few_runs(c, spec.paper_runs).or_else(|| index(c).and_then(|i| table.note(&spec.notes, i, &opts.dataset, c, mean)))
    };
    let above_baseline = |c: &Cell| {
        let mean = super::mean_ci95(&c.values).0;
        index(c).and_then(|i| table.note(&spec.above_baseline, i, &opts.dataset, c, mean))
    };
    let within = |mean: f64, _ci: f64, p: &PaperValue| super::within_points(mean, p, spec.tolerance_points);
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

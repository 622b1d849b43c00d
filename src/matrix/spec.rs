//! The matrix file (`scenarios/matrix/*.yaml`): a base scenario plus axes, expanded into
//! cells. A cell is one scenario (one value of every axis); each runs once per seed.
//!
//! ```yaml
//! name: quick                    # default: the file's stem; names results/<name>/
//! base: ../quickstart.yaml       # the base scenario (relative to this file), or
//! # scenario: {dataset: {name: synthetic}, …}   an inline one
//! datasets: [cora, citeseer]     # dataset.name
//! tasks: [node, link]            # task (link needs `model.head: true` in the base)
//! models: [gcn, sage]            # model.arch, or maps of model fields with a `name`
//! attacks: [ec-lda, [lda, ilrg]] # scenario entries: preset names, files, inline maps;
//!                                # a list: attacks observing one federation
//! defenses:
//!   - none
//!   - preset: ldp-labels         # a preset with parameters set or swept:
//!     set: {forward_correction: true}
//!     sweep: {epsilon: [1, 2, 4, .inf]}
//!   - preset: lpgnn
//!     sweep: {epsilon_x+epsilon_y: [1, 4]}   # both fields take each value
//!     with: {train.epochs: 1}    # scenario paths set in this defense's cells
//! set: {federation.rounds: 50}   # scenario paths fixed in every cell (not an axis)
//! sweep: {train.lr: [0.01, 0.1]} # any scenario path, in every cell
//! seeds: 3                       # 0, 1, 2; or a list
//! ```
//!
//! Cells come in a fixed order: dataset, task, model, attack, defense, then the `sweep` paths
//! in the file's order, each varying fastest last. A cell's id names the axis values it
//! was given (`dataset=cora,defense=ldp-labels,defense.epsilon=1`); it is its directory's
//! name, so two cells with one id are an error.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_norway::{Mapping, Value};

use crate::attacks::AttackSpec;
use crate::defenses::DefenseSpec;
use crate::error::{Error, Result};
use crate::presets::{self, Kind, PresetSpec};
use crate::scenario::{self, Scenario, yaml_name};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFile {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    description: String,
    #[serde(default)]
    base: Option<String>,
    #[serde(default)]
    scenario: Option<Value>,
    #[serde(default)]
    datasets: Option<Vec<String>>,
    #[serde(default)]
    models: Option<Vec<Value>>,
    #[serde(default)]
    tasks: Option<Vec<String>>,
    #[serde(default)]
    attacks: Option<Vec<Value>>,
    #[serde(default)]
    defenses: Option<Vec<Value>>,
    #[serde(default)]
    set: Option<Mapping>,
    #[serde(default)]
    sweep: Option<Mapping>,
    #[serde(default)]
    /// A count n (seeds 0..n) or a list of seeds; read by hand for clear messages.
    seeds: Option<Value>,
}

/// The most seeds a matrix may run per cell.
pub const MAX_SEEDS: u64 = 10_000;

/// An expanded matrix.
#[derive(Debug, Clone)]
pub struct Matrix {
    pub name: String,
    pub description: String,
    /// The matrix file, as given.
    pub file: PathBuf,
    /// The parameter columns, in order: `dataset`, `model`, `attack`, `defense`, then
    /// every swept path (`defense.epsilon`, `train.lr`) in the order the axes declare them.
    pub columns: Vec<String>,
    pub cells: Vec<Cell>,
    pub seeds: Vec<u64>,
}

/// One scenario of the matrix.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Directory name: the values of the axes the file declares, `key=value` joined by `,`.
    pub id: String,
    /// One value per [`Matrix::columns`]; `None` where a swept path does not apply (a
    /// defense's ε in a cell without that defense).
    pub params: Vec<Option<String>>,
    /// The cell's scenario, validated, with the base's seed (each run sets its own).
    pub scenario: Scenario,
    /// Attacks of the axis left out of this cell, with why: behind a defense that shows
    /// the server only aggregates, those that need each client's update (the report
    /// marks them n/a).
    pub omitted: Vec<(String, String)>,
}

impl Cell {
    /// The scenario of seed `seed`.
    pub fn scenario_for(&self, seed: u64) -> Scenario {
        Scenario { seed, ..self.scenario.clone() }
    }
}

impl Matrix {
    /// Every (cell index, seed) in run order: cells in order, seeds within each.
    pub fn runs(&self) -> Vec<(usize, u64)> {
        (0..self.cells.len()).flat_map(|c| self.seeds.iter().map(move |&s| (c, s))).collect()
    }

    /// The value of `column` in cell `c`.
    pub fn param(&self, c: usize, column: &str) -> Option<&str> {
        let k = self.columns.iter().position(|x| x == column)?;
        self.cells[c].params[k].as_deref()
    }

    /// Read and expand `path`; every cell's scenario is built and validated, so a bad
    /// file fails here, before any cell runs.
    pub fn load(path: &Path) -> Result<Matrix> {
        let file = path.display().to_string();
        let err = |field: &str, msg: String| Error::Matrix { file: file.clone(), field: field.to_string(), msg };
        let text = std::fs::read_to_string(path).map_err(|e| err("(file)", format!("cannot read: {e}")))?;
        let value: Value = crate::presets::parse_yaml(&text).map_err(|e| err("(syntax)", e))?;
        if value.is_null() {
            return Err(err("(file)", "is empty; a matrix needs a `base:` scenario or an inline `scenario:`".into()));
        }
        let m: MatrixFile = serde_path_to_error::deserialize(value).map_err(|e| {
            let at = e.path().to_string();
            err(if at == "." { "(top level)" } else { &at }, e.into_inner().to_string())
        })?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("matrix").to_string();
        expand(m, &file, &dir, stem)
    }
}

/// One value of an axis: its label and the fields it sets in the scenario tree.
#[derive(Debug, Clone)]
struct Choice {
    /// The axis value as the id and the column show it.
    label: String,
    /// (column, value) of the swept fields this choice fixes, e.g. ("defense.epsilon", "1").
    swept: Vec<(String, String)>,
    /// Set in the scenario tree: (dotted path, value).
    sets: Vec<(String, Value)>,
}

fn expand(m: MatrixFile, file: &str, dir: &Path, stem: String) -> Result<Matrix> {
    let err = |field: &str, msg: String| Error::Matrix { file: file.to_string(), field: field.to_string(), msg };
    let name = m.name.clone().unwrap_or(stem);
    if name.is_empty() || name.contains('/') || name.starts_with('.') {
        return Err(err("name", format!("`{name}` cannot name a results directory; use letters, digits, `-` and `_`")));
    }
    // The base scenario tree, its own preset entries resolved against its own directory.
    let (mut base, base_dir) = match (&m.base, &m.scenario) {
        (Some(_), Some(_)) => return Err(err("base", "give `base:` (a scenario file) or `scenario:` (inline), not both".into())),
        (None, None) => return Err(err("base", "missing: give `base:` (a scenario file) or an inline `scenario:`".into())),
        (Some(b), None) => {
            let path = dir.join(b);
            let text = std::fs::read_to_string(&path).map_err(|e| err("base", format!("{}: cannot read: {e}", path.display())))?;
            let v: Value = crate::presets::parse_yaml(&text).map_err(|e| err("base", format!("{}: {e}", path.display())))?;
            let d = path.parent().map(Path::to_path_buf).unwrap_or_else(|| dir.to_path_buf());
            (v, d)
        }
        (None, Some(v)) => (v.clone(), dir.to_path_buf()),
    };
    if !base.is_mapping() {
        return Err(err(
            if m.base.is_some() { "base" } else { "scenario" },
            "must be a scenario (a map with at least `dataset.name`)".into(),
        ));
    }
    let on_base = |field: String, msg: String| err(if m.base.is_some() { "base" } else { "scenario" }, format!("field `{field}`: {msg}"));
    presets::resolve_entries::<DefenseSpec>(&mut base, Some(&base_dir)).map_err(|(f, msg)| on_base(f, msg))?;
    presets::resolve_entries::<AttackSpec>(&mut base, Some(&base_dir)).map_err(|(f, msg)| on_base(f, msg))?;

    for (key, value) in m.set.iter().flatten() {
        let Some(path) = key.as_str() else {
            return Err(err("set", format!("keys are scenario paths like `federation.rounds`, not {key:?}")));
        };
        scenario::set_field(&mut base, path, value.clone())
            .map_err(|(f, msg)| err(&format!("set.{path}"), format!("field `{f}`: {msg}")))?;
    }
    let non_empty = |field: &str, n: usize| {
        if n == 0 { Err(err(field, "is empty; list at least one value, or leave the axis out".into())) } else { Ok(()) }
    };
    let mut axes: Vec<(String, Vec<Choice>)> = Vec::new();
    if let Some(list) = &m.datasets {
        non_empty("datasets", list.len())?;
        let choices = list
            .iter()
            .map(|d| {
                let mut sets = vec![("dataset.name".into(), Value::String(d.clone()))];
                // The generator's parameters of a synthetic base apply to it alone.
                if d != "synthetic" {
                    sets.push(("dataset.synthetic".into(), Value::Null));
                }
                Choice { label: d.clone(), swept: vec![], sets }
            })
            .collect();
        axes.push(("dataset".into(), choices));
    }
    if let Some(list) = &m.tasks {
        non_empty("tasks", list.len())?;
        // A column and an id part of its own, like a swept path: matrices without the
        // axis keep their columns.
        let choices = list
            .iter()
            .map(|t| Choice {
                label: t.clone(),
                swept: vec![("task".into(), t.clone())],
                sets: vec![("task".into(), Value::String(t.clone()))],
            })
            .collect();
        axes.push(("task".into(), choices));
    }
    if let Some(list) = &m.models {
        non_empty("models", list.len())?;
        let choices = list
            .iter()
            .enumerate()
            .map(|(i, v)| model_choice(v).map_err(|msg| err(&format!("models[{i}]"), msg)))
            .collect::<Result<_>>()?;
        axes.push(("model".into(), choices));
    }
    if let Some(list) = &m.attacks {
        non_empty("attacks", list.len())?;
        axes.push(("attack".into(), preset_choices::<AttackSpec>(list, dir, file)?));
    }
    if let Some(list) = &m.defenses {
        non_empty("defenses", list.len())?;
        axes.push(("defense".into(), preset_choices::<DefenseSpec>(list, dir, file)?));
    }
    for (key, values) in m.sweep.iter().flatten() {
        let Some(path) = key.as_str() else { return Err(err("sweep", format!("keys are scenario paths like `train.lr`, not {key:?}"))) };
        let at = format!("sweep.{path}");
        let Value::Sequence(values) = values else { return Err(err(&at, "must be a list of values".into())) };
        non_empty(&at, values.len())?;
        if axis_owned(path) {
            return Err(err(&at, "set seeds with `seeds:`, attacks and defenses with their axes".into()));
        }
        let choices = values
            .iter()
            .map(|v| {
                let label = value_label(v);
                Choice { label: label.clone(), swept: vec![(path.to_string(), label)], sets: vec![(path.to_string(), v.clone())] }
            })
            .collect();
        axes.push((path.to_string(), choices));
    }
    let allowed = format!("allowed: a count 1..={MAX_SEEDS} (seeds 0, 1, …) or a list of seeds ≥ 0");
    let seeds = match m.seeds {
        None => vec![base.get("seed").and_then(Value::as_u64).unwrap_or(0)],
        Some(Value::Number(n)) if n.as_u64() == Some(0) => return Err(err("seeds", "at least 1 seed is needed".into())),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(k) if k <= MAX_SEEDS => (0..k).collect(),
            _ => return Err(err("seeds", format!("{n} is not allowed; {allowed}"))),
        },
        Some(Value::Sequence(items)) => {
            let l = items
                .iter()
                .map(|v| v.as_u64().ok_or_else(|| err("seeds", format!("{} in the list is not a seed; {allowed}", yaml_text(v)))))
                .collect::<Result<Vec<u64>>>()?;
            if l.len() as u64 > MAX_SEEDS {
                return Err(err("seeds", format!("{} seeds are listed; {allowed}", l.len())));
            }
            non_empty("seeds", l.len())?;
            if let Some(d) = l.iter().enumerate().find(|(i, s)| l[..*i].contains(s)) {
                return Err(err("seeds", format!("seed {} is listed twice (runs would be duplicated)", d.1)));
            }
            l
        }
        Some(other) => return Err(err("seeds", format!("{} is not allowed; {allowed}", yaml_text(&other)))),
    };

    // The product of the axes, the last varying fastest.
    let mut combos: Vec<Vec<&Choice>> = vec![vec![]];
    for (_, choices) in &axes {
        combos = combos.into_iter().flat_map(|c| choices.iter().map(move |x| [c.clone(), vec![x]].concat())).collect();
    }
    let mut columns: Vec<String> = ["dataset", "model", "attack", "defense"].map(String::from).to_vec();
    for (k, _) in axes.iter().flat_map(|(_, choices)| choices).flat_map(|c| &c.swept) {
        if !columns.contains(k) {
            columns.push(k.clone());
        }
    }
    let mut cells: Vec<Cell> = Vec::with_capacity(combos.len());
    for combo in combos {
        let mut parts: Vec<String> = Vec::new();
        for ((axis, _), choice) in axes.iter().zip(&combo) {
            if matches!(axis.as_str(), "dataset" | "model" | "attack" | "defense") {
                parts.push(format!("{axis}={}", choice.label));
            }
            parts.extend(choice.swept.iter().map(|(k, v)| format!("{k}={v}")));
        }
        let id = if parts.is_empty() { "base".to_string() } else { path_safe(&parts.join(",")) };
        let mut tree = base.clone();
        for choice in &combo {
            for (path, v) in &choice.sets {
                scenario::set_field(&mut tree, path, v.clone())
                    .map_err(|(f, msg)| err(&format!("cell `{id}`"), format!("field `{f}`: {msg}")))?;
            }
        }
        let (scenario, omitted) = cell_scenario(tree, file, dir).map_err(|e| {
            let msg = match e {
                Error::Scenario { field, msg, .. } => format!("scenario field `{field}`: {msg}"),
                other => other.to_string(),
            };
            err(&format!("cell `{id}`"), msg)
        })?;
        if cells.iter().any(|c| c.id == id) {
            return Err(err(&format!("cell `{id}`"), "appears twice: two axis values have the same name; give one a `name:`".into()));
        }
        let mut params = base_params(&scenario, combo_label(&axes, &combo, "model"));
        params.resize(columns.len(), None);
        for (k, v) in combo.iter().flat_map(|c| &c.swept) {
            let i = columns.iter().position(|c| c == k).expect("collected above");
            params[i] = Some(v.clone());
        }
        cells.push(Cell { id, params, scenario, omitted });
    }
    Ok(Matrix { name, description: m.description, file: PathBuf::from(file), columns, cells, seeds })
}

/// The four leading columns of a cell: dataset, model (its label, else the
/// architecture), attacks and defenses (names joined by `+`).
fn base_params(scenario: &Scenario, model: Option<String>) -> Vec<Option<String>> {
    vec![
        Some(scenario.dataset.name.clone()),
        Some(model.unwrap_or_else(|| yaml_name(&scenario.model.arch))),
        Some(scenario.attacks.iter().map(|a| a.name.as_str()).collect::<Vec<_>>().join("+")),
        Some(scenario.defenses.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join("+")),
    ]
}

/// A cell's scenario from its tree. Behind a defense that shows the server only the
/// aggregate of the updates (secure aggregation, a trusted aggregator), the attacks that
/// need each client's update cannot run: they are left out of the cell and returned with
/// why, so that an attack group and such a defense still share a matrix. Any other
/// invalid combination is the error it was.
fn cell_scenario(tree: Value, file: &str, dir: &Path) -> Result<(Scenario, Vec<(String, String)>)> {
    let refused = match Scenario::from_value(tree.clone(), file, Some(dir)) {
        Ok(s) => return Ok((s, Vec::new())),
        Err(e) => e,
    };
    let Some(Value::Sequence(attacks)) = tree.get("attacks").cloned() else { return Err(refused) };
    let entry = |a: &Value, key: &str| a.get(key).and_then(Value::as_str).map(str::to_string);
    let mut bare = tree.clone();
    let Ok(()) = scenario::set_field(&mut bare, "attacks", Value::Sequence(Vec::new())) else { return Err(refused) };
    let hides = Scenario::from_value(bare, file, Some(dir)).ok().and_then(|s| s.upload_protocol_name_if_hidden().ok().flatten());
    let Some(protocol) = hides else { return Err(refused) };
    let (kept, left): (Vec<Value>, Vec<Value>) =
        attacks.into_iter().partition(|a| entry(a, "kind").is_some_and(|k| k == "none" || crate::attacks::kind_reads_aggregate(&k)));
    if left.is_empty() {
        return Err(refused);
    }
    let mut filtered = tree;
    let Ok(()) = scenario::set_field(&mut filtered, "attacks", Value::Sequence(kept)) else { return Err(refused) };
    let s = Scenario::from_value(filtered, file, Some(dir))?;
    let why = format!("needs each client's update; `{protocol}` shows the server only their aggregate");
    Ok((s, left.iter().map(|a| (entry(a, "name").or_else(|| entry(a, "kind")).unwrap_or_default(), why.clone())).collect()))
}

/// A cell built by code rather than from a matrix file (`fgl-sim reproduce`).
#[derive(Debug, Clone)]
pub struct BuiltCell {
    pub id: String,
    /// `(column, value)` parameters beside the four leading ones.
    pub columns: Vec<(String, String)>,
    pub scenario: Scenario,
}

impl Matrix {
    /// A matrix from cells built elsewhere; `source` names it in the report and in errors.
    pub fn from_cells(name: &str, description: &str, source: &str, cells: Vec<BuiltCell>, seeds: Vec<u64>) -> Result<Matrix> {
        let mut columns: Vec<String> = ["dataset", "model", "attack", "defense"].map(String::from).to_vec();
        for (k, _) in cells.iter().flat_map(|c| &c.columns) {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
        let mut out: Vec<Cell> = Vec::with_capacity(cells.len());
        for BuiltCell { id, columns: extra, scenario } in cells {
            let id = path_safe(&id);
            if out.iter().any(|c| c.id == id) {
                return Err(Error::Matrix { file: source.to_string(), field: format!("cell `{id}`"), msg: "appears twice".into() });
            }
            let mut params = base_params(&scenario, None);
            params.resize(columns.len(), None);
            for (k, v) in extra {
                let i = columns.iter().position(|c| *c == k).expect("collected above");
                params[i] = Some(v);
            }
            out.push(Cell { id, params, scenario, omitted: Vec::new() });
        }
        Ok(Matrix { name: name.to_string(), description: description.to_string(), file: PathBuf::from(source), columns, cells: out, seeds })
    }
}

fn combo_label(axes: &[(String, Vec<Choice>)], combo: &[&Choice], axis: &str) -> Option<String> {
    axes.iter().position(|(a, _)| a == axis).map(|i| combo[i].label.clone())
}

/// A `models:` entry: an architecture name, or a map of model fields (`name:` labels it).
fn model_choice(v: &Value) -> std::result::Result<Choice, String> {
    match v {
        Value::String(arch) => Ok(Choice { label: arch.clone(), swept: vec![], sets: vec![("model.arch".into(), v.clone())] }),
        Value::Mapping(map) => {
            let mut map = map.clone();
            let label = match map.remove("name") {
                Some(Value::String(n)) => n,
                Some(other) => return Err(format!("`name` must be a string, not {other:?}")),
                None => map.get("arch").and_then(Value::as_str).ok_or("a map needs a `name:` (or an `arch:`) to label it")?.to_string(),
            };
            let sets = map.into_iter().map(|(k, v)| (format!("model.{}", k.as_str().unwrap_or_default()), v)).collect();
            Ok(Choice { label, swept: vec![], sets })
        }
        other => Err(format!("expected an architecture name (gcn, sage, gat) or a map of model fields, not {other:?}")),
    }
}

/// The `attacks:` / `defenses:` axis: each entry is a scenario entry (preset name, file
/// or inline map: one choice), a list of them (one choice: attacks that observe the same
/// federation, defenses applied in order), or `{preset: ENTRY, name?, set?: {field:
/// value}, sweep?: {field: [values]}}` (one choice per combination of the swept values).
fn preset_choices<S: PresetSpec>(list: &[Value], dir: &Path, file: &str) -> Result<Vec<Choice>> {
    let field = S::KIND.field();
    let role = if S::KIND == Kind::Attack { "attack" } else { "defense" };
    let mut out = Vec::new();
    for (i, entry) in list.iter().enumerate() {
        let at = format!("{field}[{i}]");
        let err = |sub: &str, msg: String| Error::Matrix {
            file: file.to_string(),
            field: if sub.is_empty() { at.clone() } else { format!("{at}.{sub}") },
            msg,
        };
        if let Value::Sequence(together) = entry {
            // Several attacks observing one federation (at most one active), or defenses
            // applied in order: one choice, labelled by their names.
            if together.is_empty() {
                return Err(err("", "an empty list; list the presets that go together".into()));
            }
            let mut tree = Value::Mapping(Mapping::from_iter([(Value::from(field), entry.clone())]));
            presets::resolve_entries::<S>(&mut tree, Some(dir))
                .map_err(|(f, msg)| err("", format!("{}: {msg}", f.replacen(field, "", 1))))?;
            let resolved = tree[field].clone();
            let names: Vec<&str> = resolved.as_sequence().into_iter().flatten().filter_map(|e| e.get("name")?.as_str()).collect();
            out.push(Choice { label: names.join("+"), swept: vec![], sets: vec![(field.to_string(), resolved.clone())] });
            continue;
        }
        let (preset, name, set, sweep, with) = match entry {
            Value::Mapping(m) if m.contains_key("preset") => {
                let mut m = m.clone();
                let preset = m.remove("preset").expect("checked");
                let name = m.remove("name");
                let set = m.remove("set");
                let sweep = m.remove("sweep");
                let with = m.remove("with");
                if let Some((k, _)) = m.into_iter().next() {
                    return Err(err("", format!("unknown field {k:?} beside `preset`; allowed: preset, name, set, sweep, with")));
                }
                (preset, name, set, sweep, with)
            }
            other => (other.clone(), None, None, None, None),
        };
        // Scenario paths this choice sets besides its entry (a defense's own training setting).
        let mut with_sets: Vec<(String, Value)> = Vec::new();
        match with {
            Some(Value::Mapping(paths)) => {
                for (k, v) in paths {
                    let k = k.as_str().ok_or_else(|| err("with", "keys are scenario paths like `train.lr`".into()))?.to_string();
                    if axis_owned(&k) {
                        return Err(err(&format!("with.{k}"), "set seeds with `seeds:`, attacks and defenses with their axes".into()));
                    }
                    with_sets.push((k, v));
                }
            }
            Some(other) => return Err(err("with", format!("must be a map of scenario paths to values, not {other:?}"))),
            None => {}
        }
        let mut tree = Value::Mapping(Mapping::from_iter([(Value::from(field), Value::Sequence(vec![preset]))]));
        presets::resolve_entries::<S>(&mut tree, Some(dir))
            .map_err(|(f, msg)| err("", format!("{}: {msg}", f.replacen(&format!("{field}[0]"), "preset", 1))))?;
        let Value::Mapping(mut resolved) = tree[field][0].clone() else { unreachable!("resolved entries are maps") };
        match name {
            Some(Value::String(n)) if !n.trim().is_empty() => {
                resolved.insert("name".into(), n.into());
            }
            Some(other) => return Err(err("name", format!("must be a non-empty string, not {other:?}"))),
            None => {}
        }
        let label = resolved.get("name").and_then(Value::as_str).unwrap_or(role).to_string();
        match set {
            Some(Value::Mapping(fields)) => {
                for (k, v) in fields {
                    let k = k.as_str().ok_or_else(|| err("set", "keys are the preset's fields".into()))?.to_string();
                    check_field(&k, &at, file)?;
                    insert_field(&mut resolved, &k, v);
                }
            }
            Some(other) => return Err(err("set", format!("must be a map of the preset's fields, not {other:?}"))),
            None => {}
        }
        let mut variants: Vec<(Mapping, Vec<(String, String)>)> = vec![(resolved, vec![])];
        match sweep {
            Some(Value::Mapping(fields)) => {
                for (k, values) in fields {
                    let k = k.as_str().ok_or_else(|| err("sweep", "keys are the preset's fields".into()))?.to_string();
                    // `epsilon_x+epsilon_y`: both fields take each value together.
                    let together: Vec<String> = k.split('+').map(str::to_string).collect();
                    for f in &together {
                        check_field(f, &at, file)?;
                    }
                    let Value::Sequence(values) = values else { return Err(err(&format!("sweep.{k}"), "must be a list of values".into())) };
                    if values.is_empty() {
                        return Err(err(&format!("sweep.{k}"), "is empty; list at least one value".into()));
                    }
                    variants = variants
                        .into_iter()
                        .flat_map(|(map, swept)| {
                            let (k, together) = (k.clone(), together.clone());
                            values.iter().map(move |v| {
                                let mut map = map.clone();
                                for f in &together {
                                    insert_field(&mut map, f, v.clone());
                                }
                                let mut swept = swept.clone();
                                swept.push((format!("{role}.{k}"), value_label(v)));
                                (map, swept)
                            })
                        })
                        .collect();
                }
            }
            Some(other) => return Err(err("sweep", format!("must be a map of field: [values], not {other:?}"))),
            None => {}
        }
        for (map, swept) in variants {
            let mut sets = vec![(field.to_string(), Value::Sequence(vec![Value::Mapping(map)]))];
            sets.extend(with_sets.iter().cloned());
            out.push(Choice { label: label.clone(), swept, sets });
        }
    }
    Ok(out)
}

/// Scenario paths only their own axes set (`seeds:`, `attacks:`, `defenses:`).
fn axis_owned(path: &str) -> bool {
    path.split('.').next().is_some_and(|s| matches!(s, "seed" | "attacks" | "defenses"))
}

/// `set`/`sweep` keys are fields of the preset, or `a.b` a field of a map the preset
/// holds (secagg's `dp.epsilon`): the typed check of every cell then names an unknown
/// one.
fn check_field(k: &str, at: &str, file: &str) -> Result<()> {
    let first = k.split('.').next().unwrap_or("");
    if k.split('.').any(str::is_empty) || first == "kind" || first == "name" {
        return Err(Error::Matrix {
            file: file.to_string(),
            field: at.to_string(),
            msg: format!(
                "`{k}` cannot be set or swept: use one of the preset's parameters, or `field.subfield` inside one (`kind` and `name` are fixed by `preset`/`name`)"
            ),
        });
    }
    Ok(())
}

/// Set `path` (`field`, or `field.subfield…` into nested maps, made where missing or not
/// a map) of a preset's map to `v`.
fn insert_field(map: &mut Mapping, path: &str, v: Value) {
    match path.split_once('.') {
        None => {
            map.insert(path.into(), v);
        }
        Some((head, rest)) => {
            let inner = map.entry(head.into()).or_insert_with(|| Value::Mapping(Mapping::new()));
            if !inner.is_mapping() {
                *inner = Value::Mapping(Mapping::new());
            }
            insert_field(inner.as_mapping_mut().expect("made a map"), rest, v);
        }
    }
}

/// A value as ids and columns show it: scalars as written (∞ as `inf`), others as JSON.
pub fn value_label(v: &Value) -> String {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(x) if x.is_infinite() => {
                if x > 0.0 {
                    "inf".into()
                } else {
                    "-inf".into()
                }
            }
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        other => {
            serde_json::to_string(&serde_norway::from_value::<serde_json::Value>(other.clone()).unwrap_or_default()).unwrap_or_default()
        }
    }
}

/// A directory name from an id: `/`, control characters and leading dots replaced.
fn path_safe(id: &str) -> String {
    let s: String = id.chars().map(|c| if c == '/' || c == '\\' || c.is_control() { '_' } else { c }).collect();
    match s.strip_prefix('.') {
        Some(rest) => format!("_{rest}"),
        None => s,
    }
}

/// A YAML value as a message shows it.
fn yaml_text(v: &Value) -> String {
    serde_norway::to_string(v).map_or_else(|_| format!("{v:?}"), |t| t.trim().to_string())
}

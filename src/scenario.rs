//! Scenario files: the YAML schema users write, its validation, and `--set` overrides.
//!
//! Parsing goes YAML text → `serde_yaml::Value` → (overrides applied) → typed
//! [`Scenario`] through `serde_path_to_error`, so every error names the file, the field
//! path (`partition.clients`) and what is allowed. Unknown fields are errors everywhere.
//! The schema is documented field by field in `docs/scenarios.md`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::data::preprocess::PreprocessConfig;
use crate::data::synthetic::SyntheticConfig;
use crate::data::SplitRatios;
use crate::error::{Error, Result};
use crate::model::ModelConfig;
use crate::partition::PartitionConfig;
use crate::presets;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Free text shown in reports.
    #[serde(default)]
    pub description: String,
    /// Master seed: every random draw derives from it (split, partition, init, …).
    #[serde(default)]
    pub seed: u64,
    pub dataset: DatasetSection,
    #[serde(default)]
    pub split: SplitSection,
    #[serde(default)]
    pub partition: PartitionConfig,
    #[serde(default)]
    pub model: ModelConfig,
    #[serde(default)]
    pub train: TrainConfig,
    #[serde(default)]
    pub federation: FederationConfig,
    /// Client-side defense presets (names of files in `defenses/`), applied in order.
    #[serde(default = "none_preset")]
    pub defenses: Vec<String>,
    /// Server-side attack presets (names of files in `attacks/`).
    #[serde(default = "none_preset")]
    pub attacks: Vec<String>,
    #[serde(default)]
    pub backend: Backend,
    #[serde(default)]
    pub output: OutputSection,
}

fn none_preset() -> Vec<String> {
    vec!["none".into()]
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSection {
    /// A registry name: `fgl-sim datasets` lists them.
    pub name: String,
    #[serde(default)]
    pub preprocess: PreprocessConfig,
    /// Generator parameters; only for `name: synthetic`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synthetic: Option<SyntheticConfig>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SplitScope {
    /// One split of all labelled nodes; clients inherit their nodes' roles.
    #[default]
    Global,
    /// Each client splits its own labelled nodes by the ratios.
    PerClient,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SplitSection {
    pub train: f64,
    pub val: f64,
    pub test: f64,
    pub scope: SplitScope,
    /// Use the split shipped with the dataset (Planetoid) instead of a random one.
    pub standard: bool,
}

impl Default for SplitSection {
    fn default() -> Self {
        let r = SplitRatios::default();
        SplitSection { train: r.train, val: r.val, test: r.test, scope: SplitScope::Global, standard: false }
    }
}

impl SplitSection {
    pub fn ratios(&self) -> SplitRatios {
        SplitRatios { train: self.train, val: self.val, test: self.test }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    #[default]
    Sgd,
    Adam,
}

/// Local (client-side) training.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    pub optimizer: OptimizerKind,
    pub lr: f64,
    pub momentum: f64,
    pub weight_decay: f64,
    /// Full-batch epochs per round (E).
    pub epochs: usize,
    /// Keep, per client and round, the epoch with the lowest validation loss.
    pub select_best_val: bool,
    /// Keep each client's optimizer state (momentum, Adam moments) from one round to
    /// the next instead of starting fresh; with one client (centralized) this is plain
    /// uninterrupted training.
    pub keep_optimizer_state: bool,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            optimizer: OptimizerKind::Sgd,
            lr: 0.1,
            momentum: 0.0,
            weight_decay: 5e-4,
            epochs: 5,
            select_best_val: false,
            keep_optimizer_state: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Weighting {
    /// FedAvg weight = the client's number of train nodes.
    #[default]
    Train,
    /// FedAvg weight = the client's number of nodes (EC-LDA's choice).
    All,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FederationConfig {
    pub rounds: usize,
    /// Fraction of clients selected each round (seeded), in (0, 1].
    pub client_fraction: f64,
    pub weighting: Weighting,
    /// One client holding the whole graph (the partition section is then ignored).
    pub centralized: bool,
}

impl Default for FederationConfig {
    fn default() -> Self {
        FederationConfig { rounds: 10, client_fraction: 1.0, weighting: Weighting::Train, centralized: false }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// burn-flex on the CPU.
    #[default]
    Cpu,
    /// burn-ndarray on the CPU (slower; deprecated upstream).
    Ndarray,
    /// burn-wgpu: a GPU, or Mesa's software Vulkan driver.
    Wgpu,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// Results directory; `--out` wins over it; default `results/<scenario>-<time>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

impl Scenario {
    /// Read, apply `--set path=value` overrides, type-check and validate `path`.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario> {
        let file = path.display().to_string();
        let text = std::fs::read(path).map_err(|e| scenario_err(&file, "(file)", format!("cannot read: {e}")))?;
        let text = String::from_utf8(text).map_err(|_| scenario_err(&file, "(file)", "is not valid UTF-8 text"))?;
        Self::parse(&text, &file, overrides)
    }

    /// As [`Scenario::load`], from text; `file` names the source in errors.
    pub fn parse(text: &str, file: &str, overrides: &[String]) -> Result<Scenario> {
        let mut value: serde_yaml::Value =
            serde_yaml::from_str(text).map_err(|e| scenario_err(file, "(syntax)", e.to_string()))?;
        if value.is_null() {
            return Err(scenario_err(file, "(file)", "is empty; a scenario needs at least `dataset.name`"));
        }
        for o in overrides {
            apply_override(&mut value, o).map_err(|(field, msg)| scenario_err(file, &field, msg))?;
        }
        let scenario: Scenario = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { "(top level)".to_string() } else { path };
            scenario_err(file, &field, e.into_inner().to_string())
        })?;
        scenario.validate().map_err(|e| match e {
            Error::Param { name, msg } => scenario_err(file, &name, msg),
            other => other,
        })?;
        Ok(scenario)
    }

    /// Range checks that need no data. Checks against the data (more clients than nodes)
    /// happen once the dataset is loaded, in [`crate::run`].
    pub fn validate(&self) -> Result<()> {
        let known = crate::data::registry::known().iter().map(|d| d.name).collect::<Vec<_>>();
        if !known.contains(&self.dataset.name.as_str()) {
            return Err(Error::param("dataset.name", format!("unknown dataset `{}`; known: {}", self.dataset.name, known.join(", "))));
        }
        match (&self.dataset.synthetic, self.dataset.name.as_str()) {
            (Some(s), "synthetic") => s.validate()?,
            (Some(_), other) => {
                return Err(Error::param("dataset.synthetic", format!("only allowed with `name: synthetic`, not `{other}`")));
            }
            _ => {}
        }
        self.dataset.preprocess.validate()?;
        self.split.ratios().validate("split")?;
        self.partition.validate_static()?;
        self.model.validate()?;
        let t = &self.train;
        if !(t.lr > 0.0 && t.lr.is_finite()) {
            return Err(Error::param("train.lr", format!("{} must be a finite number > 0", t.lr)));
        }
        if !(0.0..1.0).contains(&t.momentum) {
            return Err(Error::param("train.momentum", format!("{} is not in [0, 1)", t.momentum)));
        }
        if !(t.weight_decay >= 0.0 && t.weight_decay.is_finite()) {
            return Err(Error::param("train.weight_decay", format!("{} must be a finite number ≥ 0", t.weight_decay)));
        }
        if t.epochs == 0 {
            return Err(Error::param("train.epochs", "must be at least 1"));
        }
        let f = &self.federation;
        if f.rounds == 0 {
            return Err(Error::param("federation.rounds", "must be at least 1"));
        }
        if !(f.client_fraction > 0.0 && f.client_fraction <= 1.0) {
            return Err(Error::param("federation.client_fraction", format!("{} is not in (0, 1]", f.client_fraction)));
        }
        presets::check_all(presets::Kind::Defense, &self.defenses)?;
        presets::check_all(presets::Kind::Attack, &self.attacks)?;
        Ok(())
    }

    /// The synthetic generator's parameters (defaults when the section is absent).
    pub fn synthetic(&self) -> SyntheticConfig {
        self.dataset.synthetic.clone().unwrap_or_default()
    }

    /// The resolved scenario, every default filled in, as YAML.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a Scenario always serialises")
    }
}

/// How a unit enum value is spelled in a scenario (`Arch::Gcn` → `gcn`,
/// `SplitScope::PerClient` → `per_client`), for messages and reports.
pub fn yaml_name<T: Serialize>(value: &T) -> String {
    serde_yaml::to_string(value).expect("a unit enum serialises").trim().to_string()
}

fn scenario_err(file: &str, field: &str, msg: impl Into<String>) -> Error {
    Error::Scenario { file: file.to_string(), field: field.to_string(), msg: msg.into() }
}

/// Apply one `path=value` override to the YAML tree. The value is parsed as YAML, so
/// `--set partition.clients=5`, `--set split.scope=per_client` and
/// `--set defenses=[none]` all work. Missing intermediate sections are created; the typed
/// deserialisation that follows rejects any path that is not a field.
fn apply_override(root: &mut serde_yaml::Value, spec: &str) -> std::result::Result<(), (String, String)> {
    let Some((path, raw)) = spec.split_once('=') else {
        return Err(("--set".into(), format!("`{spec}` is not of the form path=value (e.g. partition.clients=5)")));
    };
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(("--set".into(), format!("`{path}` is not a field path like `partition.clients`")));
    }
    let value: serde_yaml::Value =
        serde_yaml::from_str(raw).map_err(|e| (path.to_string(), format!("value `{raw}` is not valid YAML: {e}")))?;
    let mut node = root;
    let segments: Vec<&str> = path.split('.').collect();
    for (i, seg) in segments.iter().enumerate() {
        if node.is_null() {
            *node = serde_yaml::Value::Mapping(Default::default());
        }
        let prefix = segments[..i].join(".");
        let map = node
            .as_mapping_mut()
            .ok_or_else(|| (prefix.clone(), format!("is not a section, so `{path}` cannot be set")))?;
        let key = serde_yaml::Value::String((*seg).to_string());
        if i + 1 == segments.len() {
            map.insert(key, value);
            return Ok(());
        }
        node = map.entry(key).or_insert(serde_yaml::Value::Null);
    }
    unreachable!("the loop returns at the last segment")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Scenario> {
        Scenario::parse(text, "s.yaml", &[])
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    #[test]
    fn minimal_scenario_gets_documented_defaults() {
        let s = parse("dataset: {name: synthetic}").unwrap();
        assert_eq!(s.seed, 0);
        assert_eq!(s.split.ratios(), SplitRatios::default());
        assert_eq!(s.partition, PartitionConfig::default());
        assert_eq!(s.backend, Backend::Cpu);
        assert_eq!(s.defenses, vec!["none".to_string()]);
        // The resolved form parses back to the same scenario.
        assert_eq!(parse(&s.to_yaml()).unwrap(), s);
    }

    #[test]
    fn errors_name_file_field_and_allowed_values() {
        let e = err("dataset: {name: cora, nme: x}");
        assert!(e.contains("s.yaml") && e.contains("dataset") && e.contains("unknown field `nme`"), "{e}");
        let e = err("dataset: {name: cora}\npartition: {clients: ten}");
        assert!(e.contains("partition.clients") && e.contains("invalid type"), "{e}");
        let e = err("dataset: {name: cora}\nsplit: {train: 0.5, val: -0.25, test: 0.75}");
        assert!(e.contains("split.val") && e.contains("[0, 1]"), "{e}");
        let e = err("dataset: {name: cora}\nsplit: {train: 0.5, val: 0.5, test: 0.5}");
        assert!(e.contains("`split`") && e.contains("sum to 1"), "{e}");
        let e = err("dataset: {name: cora2}");
        assert!(e.contains("dataset.name") && e.contains("known: ") && e.contains("citeseer"), "{e}");
        let e = err("dataset: {name: cora}\nbackend: cuda");
        assert!(e.contains("backend") && e.contains("cpu") && e.contains("wgpu"), "{e}");
        let e = err("dataset: {name: cora}\nseeds: [1]");
        assert!(e.contains("unknown field `seeds`"), "{e}");
        let e = err("");
        assert!(e.contains("empty"), "{e}");
        let e = err("dataset: [");
        assert!(e.contains("(syntax)"), "{e}");
        let e = err("dataset: {name: cora}\ndefenses: [ldp-magic]");
        assert!(e.contains("defenses") && e.contains("ldp-magic") && e.contains("none"), "{e}");
        let e = err("dataset: {name: cora, synthetic: {nodes: 10}}");
        assert!(e.contains("dataset.synthetic"), "{e}");
        let e = err("dataset: {name: synthetic}\npartition: {clients: 0}");
        assert!(e.contains("partition.clients"), "{e}");
    }

    #[test]
    fn overrides_set_nested_fields_and_are_validated() {
        let ov = |o: &[&str]| Scenario::parse("dataset: {name: synthetic}", "s.yaml", &o.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let s = ov(&["partition.clients=3", "seed=9", "split.scope=per_client", "dataset.synthetic.nodes=200"]).unwrap();
        assert_eq!(s.partition.clients, 3);
        assert_eq!(s.seed, 9);
        assert_eq!(s.split.scope, SplitScope::PerClient);
        assert_eq!(s.synthetic().nodes, 200);
        let e = ov(&["partition.clientz=3"]).unwrap_err().to_string();
        assert!(e.contains("unknown field `clientz`"), "{e}");
        // A scalar field cannot take sub-fields, whether or not the file sets it.
        let e = ov(&["seed.x=3"]).unwrap_err().to_string();
        assert!(e.contains("`seed`") && e.contains("expected u64"), "{e}");
        let e = ov(&["seed=1", "seed.x=3"]).unwrap_err().to_string();
        assert!(e.contains("`seed`") && e.contains("not a section"), "{e}");
        let e = ov(&["seed"]).unwrap_err().to_string();
        assert!(e.contains("path=value"), "{e}");
        let e = ov(&["split.train=2"]).unwrap_err().to_string();
        assert!(e.contains("split.train"), "{e}");
    }
}

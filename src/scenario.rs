//! Scenario files: the YAML schema users write, its validation, and `--set` overrides.
//!
//! Parsing goes YAML text → `serde_norway::Value` → (overrides applied) → typed
//! [`Scenario`] through `serde_path_to_error`, so every error names the file, the field
//! path (`partition.clients`) and what is allowed. Unknown fields are errors everywhere.
//! The schema is documented field by field in `docs/scenarios.md`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::attacks::{self, AttackSpec};
use crate::backend::Backend;
use crate::data::preprocess::PreprocessConfig;
use crate::data::synthetic::SyntheticConfig;
use crate::data::{LinkRatios, SplitRatios, Task};
use crate::defenses::{self, DefenseSpec};
use crate::error::{Error, Result};
use crate::fed::FederationConfig;
use crate::model::ModelConfig;
use crate::partition::PartitionConfig;
use crate::presets::{self, Named};
use crate::train::TrainConfig;

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
    /// What the clients learn: `node` classification (the default) or `link` prediction.
    #[serde(default, skip_serializing_if = "Task::is_node")]
    pub task: Task,
    /// Link prediction's edge split and negatives (`task: link`; default val 0.05, test
    /// 0.3, one negative per positive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkRatios>,
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
    /// Client-side defenses, applied in this order: built-in preset names, paths to
    /// YAML files, or inline maps; resolved on load (see `presets`).
    #[serde(default = "no_defense")]
    pub defenses: Vec<Named<DefenseSpec>>,
    /// Server-side attacks, all observing the same federation (at most one active).
    #[serde(default = "no_attack")]
    pub attacks: Vec<Named<AttackSpec>>,
    #[serde(default)]
    pub backend: Backend,
    #[serde(default)]
    pub output: OutputSection,
}

fn no_defense() -> Vec<Named<DefenseSpec>> {
    vec![Named::builtin("none").expect("the built-in `none` defense")]
}

fn no_attack() -> Vec<Named<AttackSpec>> {
    vec![Named::builtin("none").expect("the built-in `none` attack")]
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
    /// EC-LDA's split instead of the ratios: a labelled node trains when a standard
    /// normal draw is below this value, else it is a test node (0.8 → 78.8 % train on
    /// average); `null` (default): cut by the ratios.
    pub normal_below: Option<f64>,
}

impl Default for SplitSection {
    fn default() -> Self {
        let r = SplitRatios::default();
        SplitSection { train: r.train, val: r.val, test: r.test, scope: SplitScope::Global, standard: false, normal_below: None }
    }
}

impl SplitSection {
    pub fn ratios(&self) -> SplitRatios {
        SplitRatios { train: self.train, val: self.val, test: self.test }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// Results directory; `--out` wins over it; default `results/<scenario>-<time>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dir: Option<PathBuf>,
}

impl Scenario {
    /// Read, apply `--set path=value` overrides, type-check and validate `path`. Preset
    /// files named by the scenario are found relative to its directory.
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario> {
        let file = path.display().to_string();
        let text = std::fs::read(path).map_err(|e| scenario_err(&file, "(file)", format!("cannot read: {e}")))?;
        let text = String::from_utf8(text).map_err(|_| scenario_err(&file, "(file)", "is not valid UTF-8 text"))?;
        let base = path.parent().map(|p| if p.as_os_str().is_empty() { Path::new(".") } else { p });
        Self::parse_in(&text, &file, base, overrides)
    }

    /// As [`Scenario::load`], from text; `file` names the source in errors, and preset
    /// files are found relative to the current directory.
    pub fn parse(text: &str, file: &str, overrides: &[String]) -> Result<Scenario> {
        Self::parse_in(text, file, Some(Path::new(".")), overrides)
    }

    /// As [`Scenario::parse`], with preset files found relative to `base`.
    pub fn parse_in(text: &str, file: &str, base: Option<&Path>, overrides: &[String]) -> Result<Scenario> {
        let mut value: serde_norway::Value = crate::presets::parse_yaml(text).map_err(|e| scenario_err(file, "(syntax)", e))?;
        if value.is_null() {
            return Err(scenario_err(file, "(file)", "is empty; a scenario needs at least `dataset.name`"));
        }
        for o in overrides {
            apply_override(&mut value, o).map_err(|(field, msg)| scenario_err(file, &field, msg))?;
        }
        Self::from_value(value, file, base)
    }

    /// As [`Scenario::parse_in`], from a YAML tree (`fgl-sim matrix` builds each cell's).
    pub fn from_value(mut value: serde_norway::Value, file: &str, base: Option<&Path>) -> Result<Scenario> {
        // The entries are typed here, once, and the rest of the tree deserialised around them.
        let defenses = presets::take_entries::<DefenseSpec>(&mut value, base).map_err(|(field, msg)| scenario_err(file, &field, msg))?;
        let attacks = presets::take_entries::<AttackSpec>(&mut value, base).map_err(|(field, msg)| scenario_err(file, &field, msg))?;
        let mut scenario: Scenario = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            let field = if path == "." { "(top level)".to_string() } else { path };
            scenario_err(file, &field, e.into_inner().to_string())
        })?;
        if let Some(d) = defenses {
            scenario.defenses = d;
        }
        if let Some(a) = attacks {
            scenario.attacks = a;
        }
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
        match self.split.normal_below {
            Some(t) if !t.is_finite() => return Err(Error::param("split.normal_below", format!("{t} must be a finite number"))),
            Some(_) if self.split.standard => {
                return Err(Error::param("split.normal_below", "cannot be combined with `standard: true`; choose one split"));
            }
            _ => {}
        }
        match (self.task, &self.link) {
            (Task::Node, Some(_)) => return Err(Error::param("link", "only with `task: link`")),
            (Task::Link, link) => {
                self.model.check_task(Task::Link)?;
                link.unwrap_or_default().validate("link")?
            }
            _ => {}
        }
        let task = self.task;
        for (list, entries) in [
            ("attacks", self.attacks.iter().map(|a| (a.name.as_str(), a.spec.tasks())).collect::<Vec<_>>()),
            ("defenses", self.defenses.iter().map(|d| (d.name.as_str(), d.spec.tasks())).collect()),
        ] {
            for (i, (name, tasks)) in entries.into_iter().enumerate() {
                if !tasks.contains(&task) {
                    let supported: Vec<&str> = tasks.iter().map(|t| t.name()).collect();
                    return Err(Error::param(
                        format!("{list}[{i}]"),
                        format!("`{name}` does not support `task: {}`; it supports: {}", task.name(), supported.join(", ")),
                    ));
                }
            }
        }
        self.partition.validate_static()?;
        self.model.validate()?;
        self.train.validate()?;
        self.federation.validate()?;
        // Building checks the parameters that depend on other sections.
        let server = self.server()?;
        self.check_upload_protocol(server.threat_model())?;
        // Building client 0's instances checks every defense's parameters, alone and
        // against the model and training sections, before any data is read.
        let probe = crate::fed::ClientContext {
            client: 0,
            model: &self.model,
            train: &self.train,
            rounds: self.federation.rounds,
            task: self.task,
        };
        self.client_pipeline().for_client(&probe)?;
        Ok(())
    }

    /// The defenses' upload protocol, built for the scenario's federation (one at most),
    /// and the attacks it leaves possible: under one that hides the updates, only attacks
    /// that read an aggregate, and none granted a client's own gradient.
    fn check_upload_protocol(&self, threat: crate::fed::ThreatModel) -> Result<()> {
        let Some(protocol) = self.upload_protocol_name_if_hidden()? else { return Ok(()) };
        let readers: Vec<&str> =
            attacks::PRESETS.iter().map(|(kind, _)| *kind).filter(|k| attacks::kind_reads_aggregate(k)).filter(|k| *k != "none").collect();
        for (i, a) in self.attacks.iter().enumerate() {
            if !a.spec.reads_aggregate() {
                return Err(Error::param(
                    format!("attacks[{i}]"),
                    format!(
                        "`{}` needs each client's own update, and `{}` gives the server only their aggregate; attacks that read an aggregate: {}",
                        a.name,
                        protocol,
                        readers.join(", ")
                    ),
                ));
            }
        }
        if threat >= crate::fed::ThreatModel::GradientAccess {
            return Err(Error::param(
                "attacks",
                format!(
                    "a server granted each client's own gradient (`gradient: exact`) cannot sit behind `{protocol}`, which hides every client's update"
                ),
            ));
        }
        Ok(())
    }

    /// The name of the defense whose upload protocol hides the updates from the server,
    /// if there is one.
    pub fn upload_protocol_name_if_hidden(&self) -> Result<Option<String>> {
        Ok(self.client_pipeline().upload_protocol(&self.upload_context())?.filter(|p| p.hides_updates()).map(|p| p.name().to_string()))
    }

    /// What the defenses' upload protocol is built from: the federation's clients (one
    /// when centralized), its settings and the seed.
    fn upload_context(&self) -> crate::fed::upload::UploadContext<'_> {
        let clients = if self.federation.centralized { 1 } else { self.partition.clients };
        crate::fed::upload::UploadContext { clients, federation: &self.federation, seed: self.seed }
    }

    /// The server the scenario's attacks make (plain FedAvg without any).
    pub fn server(&self) -> Result<Box<dyn crate::fed::ServerStrategy>> {
        attacks::server(self.attacks.iter().map(|a| (a.name.as_str(), &a.spec)), &self.federation)
    }

    /// The scenario's defenses as the clients' pipeline, in declared order.
    pub fn client_pipeline(&self) -> crate::fed::ClientPipeline {
        defenses::pipeline(self.defenses.iter().map(|d| (d.name.as_str(), &d.spec)))
    }

    /// Whether this scenario's rounds will be round-free — each one's outcome follows
    /// from the federation's state before it alone — as far as its configuration says:
    /// every client trains every round, training draws nothing (no dropout) and keeps
    /// no optimizer state between rounds (Adam's or momentum's, where kept), no defense
    /// is an upload protocol, and every defense acts only before the rounds. Then a run
    /// whose attack round left the federation as it was takes the rounds after it from
    /// a passive sibling (`fgl-sim matrix`): `--dry-run` charges it none of them. The
    /// federation's run loop checks the same round by round; this predicts it.
    pub fn rounds_can_be_round_free(&self) -> bool {
        let upload = self.upload_context();
        let client = crate::fed::ClientContext {
            client: 0,
            model: &self.model,
            train: &self.train,
            rounds: self.federation.rounds,
            task: self.task,
        };
        let pipeline = self.client_pipeline();
        crate::fed::selects_every_client(upload.clients, &self.federation)
            && self.model.dropout == 0.0
            && self.model.attention_dropout == 0.0
            && !(self.train.keep_optimizer_state && self.train.optimizer_has_state())
            && pipeline.upload_protocol(&upload).is_ok_and(|p| p.is_none())
            && pipeline.for_client(&client).is_ok_and(|d| d.act_only_before_the_rounds())
    }

    /// The synthetic generator's parameters (defaults when the section is absent).
    pub fn synthetic(&self) -> SyntheticConfig {
        self.dataset.synthetic.clone().unwrap_or_default()
    }

    /// The resolved scenario, every default filled in, as YAML.
    pub fn to_yaml(&self) -> String {
        serde_norway::to_string(self).expect("a Scenario always serialises")
    }
}

/// How a unit enum value is spelled in a scenario (`Arch::Gcn` → `gcn`,
/// `SplitScope::PerClient` → `per_client`), for messages and reports.
pub fn yaml_name<T: Serialize>(value: &T) -> String {
    serde_norway::to_string(value).expect("a unit enum serialises").trim().to_string()
}

fn scenario_err(file: &str, field: &str, msg: impl Into<String>) -> Error {
    Error::Scenario { file: file.to_string(), field: field.to_string(), msg: msg.into() }
}

/// Apply one `path=value` override to the YAML tree. The value is parsed as YAML, so
/// `--set partition.clients=5`, `--set split.scope=per_client` and
/// `--set defenses=[none]` all work. Missing intermediate sections are created; the typed
/// deserialisation that follows rejects any path that is not a field.
fn apply_override(root: &mut serde_norway::Value, spec: &str) -> std::result::Result<(), (String, String)> {
    let Some((path, raw)) = spec.split_once('=') else {
        return Err(("--set".into(), format!("`{spec}` is not of the form path=value (e.g. partition.clients=5)")));
    };
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        return Err(("--set".into(), format!("`{path}` is not a field path like `partition.clients`")));
    }
    if let Some((list, _)) = path.split_once('[') {
        return Err((
            "--set".into(),
            format!(
                "`{path}`: list items cannot be set by index; set the whole list, e.g. --set '{list}=[{{kind: ldp-labels, epsilon: 3}}]' (`fgl-sim scenario check` prints the resolved list to copy)"
            ),
        ));
    }
    crate::presets::check_yaml_depth(raw).map_err(|e| (path.to_string(), format!("value: {e}")))?;
    let value: serde_norway::Value =
        serde_norway::from_str(raw).map_err(|e| (path.to_string(), format!("value `{raw}` is not valid YAML: {e}")))?;
    set_field(root, path, value)
}

/// Set the field at dotted `path` of the YAML tree to `value`, creating missing
/// sections; errors are (field path, message). The typed deserialisation that follows
/// rejects any path that is not a field.
pub fn set_field(root: &mut serde_norway::Value, path: &str, value: serde_norway::Value) -> std::result::Result<(), (String, String)> {
    let mut node = root;
    let segments: Vec<&str> = path.split('.').collect();
    for (i, seg) in segments.iter().enumerate() {
        if node.is_null() {
            *node = serde_norway::Value::Mapping(Default::default());
        }
        let prefix = segments[..i].join(".");
        let map = node.as_mapping_mut().ok_or_else(|| (prefix.clone(), format!("is not a section, so `{path}` cannot be set")))?;
        let key = serde_norway::Value::String((*seg).to_string());
        if i + 1 == segments.len() {
            map.insert(key, value);
            return Ok(());
        }
        node = map.entry(key).or_insert(serde_norway::Value::Null);
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

    /// Each defense and attack entry is typed once on the way from YAML to a scenario
    /// (it used to be typed, written back as YAML and typed again by serde), and the
    /// result is the same as deserialising the resolved tree.
    #[test]
    fn entries_are_typed_once() {
        let text = std::fs::read_to_string("scenarios/quickstart.yaml").unwrap();
        let sets = ["defenses=[ldp-labels, {kind: ldp-features, epsilon: 2}]".to_string(), "attacks=[uniform]".to_string()];
        let before = presets::TYPED.with(|t| t.get());
        let s = Scenario::parse(&text, "quickstart.yaml", &sets).unwrap();
        assert_eq!(presets::TYPED.with(|t| t.get()) - before, 3, "two defenses and one attack, each typed once");
        assert_eq!(s.defenses.iter().map(|d| d.name.as_str()).collect::<Vec<_>>(), ["ldp-labels", "ldp-features"]);
        let again: Scenario = serde_norway::from_value(serde_norway::to_value(&s).unwrap()).unwrap();
        assert_eq!(again, s);
        let none = Scenario::parse(&text, "quickstart.yaml", &[]).unwrap();
        assert_eq!((none.defenses.len(), none.attacks.len()), (1, 1), "the defaults when the fields are absent: [none], [none]");
    }

    #[test]
    fn minimal_scenario_gets_documented_defaults() {
        let s = parse("dataset: {name: synthetic}").unwrap();
        assert_eq!(s.seed, 0);
        assert_eq!(s.split.ratios(), SplitRatios::default());
        assert_eq!(s.partition, PartitionConfig::default());
        assert_eq!(s.backend, Backend::Cpu);
        assert_eq!(s.defenses, no_defense());
        assert_eq!(s.attacks, no_attack());
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
        assert!(e.contains("defenses[0]") && e.contains("ldp-magic") && e.contains("none"), "{e}");
        let e = err("dataset: {name: cora}\ndefenses: [{kind: ldp-labels, epsilon: 0}]");
        assert!(e.contains("defenses[0].epsilon") && e.contains("> 0"), "{e}");
        let e = err("dataset: {name: cora}\nattacks: [{kind: lda, rounds: [20]}]\nfederation: {rounds: 10}");
        assert!(e.contains("attacks[0].rounds") && e.contains("1..=10"), "{e}");
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

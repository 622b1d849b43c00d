//! A run once written: the one place that reads a run's directory back. A run directory
//! holds what `results` wrote (`scenario.resolved.yaml`, `metrics.json`, `summary.md`),
//! or `error.txt` for a run that failed; [`state`] tells which, and [`read_summary`]
//! reads `metrics.json` through typed structs into what reports need ([`RunMetrics`]).
//! The matrix report and every `reproduce` read runs through here, never as untyped JSON.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{Error, Result};

/// What a run's directory holds.
#[derive(Debug, Clone, PartialEq)]
pub enum RunState {
    /// `metrics.json`: the run finished.
    Finished,
    /// `error.txt`: the run failed with this message (a rerun tries it again).
    Failed(String),
    /// Nothing yet.
    Missing,
}

/// The state of run directory `dir`.
pub fn state(dir: &Path) -> RunState {
    if dir.join("metrics.json").is_file() {
        RunState::Finished
    } else if let Ok(e) = std::fs::read_to_string(dir.join("error.txt")) {
        RunState::Failed(e.trim_end().to_string())
    } else {
        RunState::Missing
    }
}

/// What a report reads from one run's `metrics.json`.
#[derive(Debug, Clone, Serialize)]
pub struct RunMetrics {
    /// Global model, last round, in [0, 1].
    pub test_accuracy: f64,
    pub test_loss: f64,
    pub train_loss: f64,
    /// Link prediction: the last round's test AUC-ROC (absent for node classification).
    pub test_auc: Option<f64>,
    pub rounds: usize,
    /// Every attack of the run that reported, in the scenario's order.
    pub attacks: Vec<AttackScores>,
    /// The largest ε any client spent (sequential composition over its defenses; ∞ when
    /// a defense is unbounded); absent when no client spent any.
    pub epsilon_spent: Option<f64>,
    /// What the defenses did to the data (`metrics.json`'s privacy `effects`, e.g. edges
    /// added and removed), summed over clients and defenses.
    pub privacy_effects: BTreeMap<String, f64>,
    /// The noise multiplier σ of each client's DP training (`metrics.json`'s privacy
    /// `noise_multiplier`), in client order; empty without DP training.
    pub noise_multipliers: Vec<f64>,
    /// Calibrations under which a client's ε is no DP guarantee (`metrics.json`'s privacy
    /// `calibration`, e.g. `ec-lda-code`), each once.
    pub calibrations: Vec<String>,
    /// Test accuracy after each round (the training curve).
    pub curve: Vec<f64>,
    pub train_seconds: f64,
    pub total_seconds: f64,
}

/// One attack's inferences, averaged over its reports.
#[derive(Debug, Clone, Serialize)]
pub struct AttackScores {
    pub attack: String,
    pub cos_sim: Option<f64>,
    /// Jensen–Shannon divergence in nats.
    pub js_div: Option<f64>,
    /// The uniform guess scored on the same reports.
    pub uniform_cos_sim: Option<f64>,
    pub uniform_js_div: Option<f64>,
    /// Scored against the labels the clients trained on, where a defense randomised them.
    pub vs_trained_cos_sim: Option<f64>,
    pub vs_trained_js_div: Option<f64>,
    /// Link prediction: the error in the inferred share of links (see
    /// `metrics::AttackMetrics::mean_link_share_error`).
    pub link_share_error: Option<f64>,
}

impl RunMetrics {
    /// The training blew up: the final train or test loss is not finite.
    pub fn diverged(&self) -> bool {
        !self.train_loss.is_finite() || !self.test_loss.is_finite()
    }

    pub fn attack(&self, name: &str) -> Option<&AttackScores> {
        self.attacks.iter().find(|a| a.attack == name)
    }
}

/// A number as `metrics.json` writes it: a JSON number, `"inf"` (an unbounded ε), or
/// null (a NaN, which JSON cannot hold).
#[derive(Debug, Clone, Copy)]
struct Num(f64);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Num, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
            Null(()),
        }
        match Raw::deserialize(d)? {
            Raw::Number(x) => Ok(Num(x)),
            Raw::Text(t) if t == "inf" => Ok(Num(f64::INFINITY)),
            Raw::Text(t) => Err(serde::de::Error::custom(format!("`{t}` is not a number"))),
            Raw::Null(()) => Ok(Num(f64::NAN)),
        }
    }
}

/// The parts of `metrics.json` (see `metrics::Metrics`) a report reads.
#[derive(Deserialize)]
struct MetricsFile {
    #[serde(rename = "final")]
    last: Final,
    rounds: Vec<Round>,
    clients: Vec<Client>,
    attacks: Vec<Attack>,
    #[serde(default)]
    timings: Option<Timings>,
}

#[derive(Deserialize)]
struct Final {
    round: usize,
    test_accuracy: Num,
    test_loss: Option<Num>,
    train_loss: Option<Num>,
    #[serde(default)]
    test_auc: Option<Num>,
}

#[derive(Deserialize)]
struct Round {
    test_accuracy: Option<Num>,
}

#[derive(Deserialize)]
struct Client {
    epsilon_total: Option<Num>,
    #[serde(default)]
    privacy: Vec<Cost>,
}

#[derive(Deserialize)]
struct Cost {
    #[serde(default)]
    effects: BTreeMap<String, Num>,
    noise_multiplier: Option<f64>,
    calibration: Option<String>,
}

#[derive(Deserialize)]
struct Attack {
    attack: String,
    mean: Option<Scores>,
    uniform_baseline: Option<Scores>,
    mean_vs_trained_labels: Option<Scores>,
    #[serde(default)]
    mean_link_share_error: Option<f64>,
}

#[derive(Deserialize, Clone, Copy)]
struct Scores {
    cos_sim: Option<f64>,
    js_nats: Option<f64>,
}

#[derive(Deserialize)]
struct Timings {
    train_seconds: Option<Num>,
    total_ms: Option<Num>,
}

/// Read the `metrics.json` at `path` into a [`RunMetrics`]; a missing or malformed
/// field is an error naming the file and the field's path.
pub fn read_summary(path: &Path) -> Result<RunMetrics> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::data_file(path, format!("cannot read: {e}")))?;
    let de = &mut serde_json::Deserializer::from_str(&text);
    let f: MetricsFile = serde_path_to_error::deserialize(de).map_err(|e| {
        Error::data_file(path, format!("missing or malformed `{}` (not a metrics.json of fgl-sim): {}", e.path(), e.inner()))
    })?;
    let nan = |x: Option<Num>| x.map_or(f64::NAN, |n| n.0);
    let scores = |s: Option<Scores>| (s.and_then(|s| s.cos_sim), s.and_then(|s| s.js_nats));
    let attacks = f
        .attacks
        .into_iter()
        .map(|a| {
            let ((cos_sim, js_div), (uniform_cos_sim, uniform_js_div), (vs_trained_cos_sim, vs_trained_js_div)) =
                (scores(a.mean), scores(a.uniform_baseline), scores(a.mean_vs_trained_labels));
            AttackScores {
                attack: a.attack,
                cos_sim,
                js_div,
                uniform_cos_sim,
                uniform_js_div,
                vs_trained_cos_sim,
                vs_trained_js_div,
                link_share_error: a.mean_link_share_error,
            }
        })
        .collect();
    let costs = || f.clients.iter().flat_map(|c| &c.privacy);
    let mut privacy_effects = BTreeMap::new();
    for (k, v) in costs().flat_map(|c| &c.effects) {
        *privacy_effects.entry(k.clone()).or_insert(0.0) += if v.0.is_nan() { 0.0 } else { v.0 };
    }
    let mut calibrations: Vec<String> = costs().filter_map(|c| c.calibration.clone()).collect();
    calibrations.sort();
    calibrations.dedup();
    let epsilon_spent = f.clients.iter().filter_map(|c| c.epsilon_total.map(|n| n.0)).filter(|e| !e.is_nan()).reduce(f64::max);
    let timings = f.timings.as_ref();
    Ok(RunMetrics {
        test_accuracy: f.last.test_accuracy.0,
        test_loss: nan(f.last.test_loss),
        train_loss: nan(f.last.train_loss),
        test_auc: f.last.test_auc.map(|n| n.0),
        rounds: f.last.round,
        attacks,
        epsilon_spent: epsilon_spent.filter(|&e| e > 0.0),
        privacy_effects,
        noise_multipliers: costs().filter_map(|c| c.noise_multiplier).collect(),
        calibrations,
        curve: f.rounds.iter().map(|r| nan(r.test_accuracy)).collect(),
        train_seconds: nan(timings.and_then(|t| t.train_seconds)),
        total_seconds: nan(timings.and_then(|t| t.total_ms)) / 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<RunMetrics> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("metrics.json");
        std::fs::write(&p, json).unwrap();
        read_summary(&p)
    }

    /// Every field a report reads, with the file's special values: "inf", null (NaN).
    #[test]
    fn a_metrics_file_is_read_through_its_types() {
        let m = read(
            r#"{"final": {"round": 2, "test_accuracy": 0.5, "test_loss": null, "train_loss": 1.5},
                "rounds": [{"test_accuracy": 0.25}, {"test_accuracy": 0.5}],
                "clients": [{"epsilon_total": 2.0, "privacy": [{"effects": {"edges_removed": 3.0}, "noise_multiplier": 1.5}]},
                            {"epsilon_total": "inf", "privacy": [{"effects": {"edges_removed": 1.0}, "calibration": "ec-lda-code"}]}],
                "attacks": [{"attack": "lda", "mean": {"cos_sim": 0.9, "js_nats": 0.1}, "uniform_baseline": null}],
                "timings": {"train_seconds": 1.25, "total_ms": 2000.0}}"#,
        )
        .unwrap();
        assert_eq!((m.test_accuracy, m.train_loss, m.rounds), (0.5, 1.5, 2));
        assert!(m.test_loss.is_nan() && m.diverged());
        assert_eq!(m.curve, [0.25, 0.5]);
        assert_eq!(m.epsilon_spent, Some(f64::INFINITY));
        assert_eq!(m.privacy_effects["edges_removed"], 4.0);
        assert_eq!((m.noise_multipliers.clone(), m.calibrations.clone()), (vec![1.5], vec!["ec-lda-code".to_string()]));
        let a = m.attack("lda").unwrap();
        assert_eq!((a.cos_sim, a.js_div, a.uniform_cos_sim), (Some(0.9), Some(0.1), None));
        assert_eq!((m.train_seconds, m.total_seconds), (1.25, 2.0));
    }

    #[test]
    fn a_malformed_file_names_the_field() {
        let e = read(r#"{"final": {"round": 2}, "rounds": [], "clients": [], "attacks": []}"#).unwrap_err().to_string();
        assert!(e.contains("metrics.json") && e.contains("final") && e.contains("test_accuracy"), "{e}");
        let e = read(r#"{"final": {"round": 1, "test_accuracy": "high"}, "rounds": [], "clients": [], "attacks": []}"#).unwrap_err();
        assert!(e.to_string().contains("final.test_accuracy"), "{e}");
        assert!(read("[1, 2]").is_err());
    }
}

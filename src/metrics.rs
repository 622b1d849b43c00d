//! `metrics.json`: the machine-readable results of one run, as typed structs so that
//! the file and `docs/metrics.md` stay in step. Attack output is scored here, against
//! the clients' true training labels ([`crate::scoring`]).

use serde::Serialize;

use crate::backend::Backend;
use crate::data::DatasetStats;
use crate::data::graph::BuildReport;
use crate::fed::upload::UploadReport;
use crate::fed::{AttackNote, AttackReport, ClientUpdate, Inference, RoundMetrics, ThreatModel};
use crate::model::Arch;
use crate::partition::{ClientReport, DroppedEdges};
use crate::privacy::{PrivacyCost, serialize_epsilon};
use crate::scenario::yaml_name;
use crate::scoring::{self, DistributionScores};

pub const SCHEMA: &str = "fgl-sim/metrics/v1";

#[derive(Debug, Clone, Serialize)]
pub struct Metrics {
    pub schema: &'static str,
    pub scenario: String,
    pub seed: u64,
    pub backend: Backend,
    pub stages_run: Vec<&'static str>,
    pub model: ModelSummary,
    #[serde(rename = "final")]
    pub last: FinalSummary,
    pub rounds: Vec<RoundMetrics>,
    pub dataset: DatasetSummary,
    pub split: SplitCounts,
    pub partition: PartitionSummary,
    /// The defenses' names, in the order they were applied.
    pub defenses: Vec<String>,
    /// The server's declared threat model.
    pub threat_model: ThreatModel,
    pub clients: Vec<ClientMetrics>,
    /// One entry per attack that reported, in the scenario's order.
    pub attacks: Vec<AttackMetrics>,
    /// How the updates reached the server, when a defense decided it (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub upload_protocol: Option<UploadReport>,
    pub timings: Timings,
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelSummary {
    pub arch: Arch,
    pub parameters: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct FinalSummary {
    pub round: usize,
    pub test_accuracy: f64,
    pub test_loss: f64,
    pub train_loss: f64,
    /// Link prediction's test AUC-ROC (absent for node classification).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_auc: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DatasetSummary {
    pub name: String,
    pub stats: DatasetStats,
    pub notes: Vec<String>,
    pub build_report: BuildReport,
}

#[derive(Debug, Clone, Serialize)]
pub struct SplitCounts {
    pub train: usize,
    pub val: usize,
    pub test: usize,
    pub unused: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartitionSummary {
    pub method: String,
    pub clients: usize,
    pub communities: Option<usize>,
    pub modularity: Option<f64>,
    pub unassigned_nodes: usize,
    pub dropped_edges: DroppedEdges,
}

#[derive(Debug, Clone, Serialize)]
pub struct ClientMetrics {
    #[serde(flatten)]
    pub report: ClientReport,
    /// Per-class counts of the client's train nodes, true labels (what a
    /// label-inference attack targets).
    pub train_label_distribution: Vec<usize>,
    pub test_accuracy: Option<f64>,
    /// What each defense spent, in order.
    pub privacy: Vec<PrivacyCost>,
    /// Σ ε over `privacy` (sequential composition; "inf" when any is unbounded).
    #[serde(serialize_with = "serialize_epsilon")]
    pub epsilon_total: f64,
}

impl ClientMetrics {
    pub fn new(report: ClientReport, train_label_distribution: Vec<usize>, test_accuracy: Option<f64>, privacy: Vec<PrivacyCost>) -> Self {
        // Folded from +0.0: `Sum` for f64 starts at −0.0, which a client without defenses would report.
        let epsilon_total = privacy.iter().fold(0.0, |acc, p| acc + p.epsilon);
        ClientMetrics { report, train_label_distribution, test_accuracy, privacy, epsilon_total }
    }
}

/// One attack's inferences, each scored against the client's true training labels.
#[derive(Debug, Clone, Serialize)]
pub struct AttackMetrics {
    pub attack: String,
    pub reports: Vec<ScoredReport>,
    /// Means over `reports`; null when there are none.
    pub mean: Option<DistributionScores>,
    /// The uniform guess scored the same way, averaged over the same reports.
    pub uniform_baseline: Option<DistributionScores>,
    /// Means of `vs_trained_labels` over the reports that have one.
    pub mean_vs_trained_labels: Option<DistributionScores>,
    /// Link prediction: the mean absolute error of the inferred share of links among a
    /// client's training pairs (under `link.negatives: natural`, the error in its graph's
    /// density); absent for node classification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_link_share_error: Option<f64>,
    /// Under an upload protocol that hides the updates: how the inferences the attack
    /// made from aggregates score (`reports` then holds one row per contributing client,
    /// the aggregate's inference scored against that client); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<AggregateScores>,
    /// Test accuracy around each round the attack reported in: an active attack that
    /// restores the model leaves `after` equal to `before`.
    pub round_effects: Vec<RoundEffect>,
    pub notes: Vec<String>,
}

/// The inferences an attack made from aggregates of several clients' updates.
#[derive(Debug, Clone, Serialize)]
pub struct AggregateScores {
    /// Inferences made (one per round the server saw an aggregate).
    pub inferences: usize,
    /// Each inference against the union of its contributors' training labels (the
    /// federation's joint distribution that round), averaged.
    pub vs_union: DistributionScores,
    /// The union's own distribution scored against each contributing client, averaged
    /// over the same rows as `mean`: what a perfect inference of the joint distribution
    /// scores per client — the per-client score the aggregate explains.
    pub union_vs_clients: DistributionScores,
}

#[derive(Debug, Clone, Serialize)]
pub struct RoundEffect {
    pub round: usize,
    /// Global test accuracy after the previous round (null before round 1).
    pub test_accuracy_before: Option<f64>,
    /// Global test accuracy after this round.
    pub test_accuracy_after: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ScoredReport {
    pub round: usize,
    pub client: usize,
    pub estimate: Vec<f64>,
    /// The client's true training-label distribution.
    pub truth: Vec<f64>,
    pub scores: DistributionScores,
    pub uniform: DistributionScores,
    /// When a defense randomised the client's labels: the same estimate scored against
    /// the labels it trained on (what the attack can recover); null otherwise.
    pub vs_trained_labels: Option<DistributionScores>,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct StageTimings {
    pub load_ms: f64,
    pub partition_ms: f64,
    pub split_ms: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Timings {
    pub stages_ms: StageTimings,
    pub train_seconds: f64,
    pub round_seconds: Vec<f64>,
    /// Leading rounds run once for runs that differ only in their attacks (`fgl-sim
    /// matrix`): their `round_seconds` were measured in the run that ran them.
    #[serde(skip_serializing_if = "is_zero")]
    pub shared_rounds: usize,
    /// Trailing rounds taken from such a run that ran them one round earlier: this run's
    /// attack round left the federation where that run stood, and the rounds after it were
    /// round-free (`fgl-sim matrix`; their `round_seconds` were measured in that run).
    #[serde(skip_serializing_if = "is_zero")]
    pub tail_rounds: usize,
    /// Milliseconds of the upload protocol's work per round (secure aggregation).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub upload_ms: Vec<f64>,
    pub total_ms: f64,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Score every report against `truth[client]` (true train-label counts; `link`: of
/// {no link, link} over its training pairs), grouped by
/// attack in the order attacks first reported; `notes` are the strategy's caveats.
/// `trained[client]` are the counts of the labels it trained on (differing from the
/// truth where a defense randomised them).
pub fn score_attacks(
    reports: &[AttackReport],
    notes: &[AttackNote],
    truth: &[Vec<usize>],
    trained: &[Vec<usize>],
    rounds: &[RoundMetrics],
    link: bool,
) -> Vec<AttackMetrics> {
    let mut out: Vec<AttackMetrics> = Vec::new();
    // Per attack: (inference vs union, union vs each contributor) of its aggregate reports.
    let mut from_aggregates: Vec<(String, Vec<DistributionScores>, Vec<DistributionScores>)> = Vec::new();
    for r in reports {
        let Inference::LabelDistribution { estimate } = &r.inference;
        let score = |client: usize| {
            let counts = &truth[client];
            ScoredReport {
                round: r.round,
                client,
                estimate: estimate.clone(),
                truth: scoring::normalise(&counts.iter().map(|&c| c as f64).collect::<Vec<_>>()),
                scores: scoring::score_distribution(estimate, counts),
                uniform: scoring::uniform_baseline(counts),
                vs_trained_labels: trained.get(client).filter(|t| *t != counts).map(|t| scoring::score_distribution(estimate, t)),
            }
        };
        let scored: Vec<ScoredReport> = if r.client == ClientUpdate::AGGREGATE {
            // The server saw one aggregate: score its inference against each client in
            // it, and against their union.
            let contributors = rounds.iter().find(|m| m.round == r.round).and_then(|m| m.aggregated.clone()).unwrap_or_default();
            let classes = truth.first().map_or(0, Vec::len);
            let union: Vec<usize> = (0..classes).map(|k| contributors.iter().map(|&c| truth[c][k]).sum()).collect();
            let union_dist: Vec<f64> = scoring::normalise(&union.iter().map(|&c| c as f64).collect::<Vec<_>>());
            let entry = match from_aggregates.iter_mut().position(|e| e.0 == r.attack) {
                Some(i) => &mut from_aggregates[i],
                None => {
                    from_aggregates.push((r.attack.clone(), vec![], vec![]));
                    from_aggregates.last_mut().expect("pushed")
                }
            };
            entry.1.push(scoring::score_distribution(estimate, &union));
            entry.2.extend(contributors.iter().map(|&c| scoring::score_distribution(&union_dist, &truth[c])));
            contributors.iter().map(|&c| score(c)).collect()
        } else {
            vec![score(r.client)]
        };
        match out.iter_mut().find(|a| a.attack == r.attack) {
            Some(a) => a.reports.extend(scored),
            None => out.push(AttackMetrics {
                attack: r.attack.clone(),
                reports: scored,
                mean: None,
                uniform_baseline: None,
                mean_vs_trained_labels: None,
                mean_link_share_error: None,
                aggregate: None,
                round_effects: vec![],
                notes: vec![],
            }),
        }
    }
    for a in &mut out {
        a.mean = mean(a.reports.iter().map(|r| r.scores));
        a.uniform_baseline = mean(a.reports.iter().map(|r| r.uniform));
        a.mean_vs_trained_labels = mean(a.reports.iter().filter_map(|r| r.vs_trained_labels));
        // {no link, link}: the second share is the links'.
        a.mean_link_share_error = (link && !a.reports.is_empty()).then(|| {
            a.reports.iter().map(|r| (r.estimate.get(1).copied().unwrap_or(0.0) - r.truth[1]).abs()).sum::<f64>() / a.reports.len() as f64
        });
        a.notes = notes.iter().filter(|n| n.attack == a.attack).map(AttackNote::to_string).collect();
        if let Some((_, vs_union, union_vs_clients)) = from_aggregates.iter().find(|e| e.0 == a.attack) {
            a.aggregate = Some(AggregateScores {
                inferences: vs_union.len(),
                vs_union: mean(vs_union.iter().copied()).expect("one per aggregate report"),
                union_vs_clients: mean(union_vs_clients.iter().copied()).unwrap_or(DistributionScores {
                    cos_sim: f64::NAN,
                    js_nats: f64::NAN,
                    js_bits: f64::NAN,
                }),
            });
        }
        let mut attacked: Vec<usize> = a.reports.iter().map(|r| r.round).collect();
        attacked.dedup();
        a.round_effects = attacked
            .into_iter()
            .filter_map(|round| {
                let after = rounds.iter().find(|m| m.round == round)?.test_accuracy;
                let before = rounds.iter().find(|m| m.round + 1 == round).map(|m| m.test_accuracy);
                Some(RoundEffect { round, test_accuracy_before: before, test_accuracy_after: after })
            })
            .collect();
    }
    out
}

fn mean(scores: impl Iterator<Item = DistributionScores>) -> Option<DistributionScores> {
    let all: Vec<DistributionScores> = scores.collect();
    (!all.is_empty()).then(|| {
        let n = all.len() as f64;
        DistributionScores {
            cos_sim: all.iter().map(|s| s.cos_sim).sum::<f64>() / n,
            js_nats: all.iter().map(|s| s.js_nats).sum::<f64>() / n,
            js_bits: all.iter().map(|s| s.js_bits).sum::<f64>() / n,
        }
    })
}

/// The privacy part of `summary.md` (empty without defenses that spend any).
pub fn privacy_md(clients: &[ClientMetrics]) -> String {
    if clients.iter().all(|c| c.privacy.is_empty()) {
        return String::new();
    }
    let mut s =
        String::from("\n**Privacy spent** per client (sequential composition):\n\n| client | defenses (ε) | ε total |\n|---:|---|---:|\n");
    let mut flagged = std::collections::BTreeSet::new();
    for c in clients {
        let parts: Vec<String> = c
            .privacy
            .iter()
            .map(|p| match &p.calibration {
                Some(cal) => {
                    flagged.insert((p.defense.clone(), cal.clone()));
                    format!("{} ({}, NOT DP ⚠)", p.defense, eps(p.epsilon))
                }
                None => format!("{} ({})", p.defense, eps(p.epsilon)),
            })
            .collect();
        s.push_str(&format!("| {} | {} | {} |\n", c.report.id, parts.join(", "), eps(c.epsilon_total)));
    }
    for (defense, cal) in flagged {
        s.push_str(&format!("\n⚠ `{defense}`: {}.\n", crate::privacy::calibration_warning(&cal)));
    }
    s
}

/// The upload protocol's part of `summary.md` (empty without one).
pub fn upload_md(m: &Metrics) -> String {
    let Some(u) = &m.upload_protocol else { return String::new() };
    let seen = if u.hides_updates { "the server saw only the aggregate of each round's updates" } else { "the server read every update" };
    let mut s = format!("\n**Upload protocol** `{}`: {seen}.", u.protocol);
    let rounds: Vec<_> = u.rounds.iter().filter(|r| r.clients > 0).collect();
    if !rounds.is_empty() {
        let n = rounds.len() as f64;
        let mean = |f: &dyn Fn(&crate::fed::upload::ProtocolCost) -> f64| rounds.iter().map(|r| f(r)).sum::<f64>() / n;
        let ms =
            if m.timings.upload_ms.is_empty() { 0.0 } else { m.timings.upload_ms.iter().sum::<f64>() / m.timings.upload_ms.len() as f64 };
        s.push_str(&format!(
            " Per round (mean of {}): {:.1} clients, {:.1} dropped; {:.1} KiB sent per client, {:.1} KiB through the server; {ms:.1} ms.",
            rounds.len(),
            mean(&|r| r.clients as f64),
            mean(&|r| r.dropped as f64),
            mean(&|r| r.bytes_per_client) / 1024.0,
            mean(&|r| r.server_bytes) / 1024.0
        ));
    }
    s.push('\n');
    s
}

/// The attack part of `summary.md` (empty without attack reports).
pub fn attacks_md(m: &Metrics) -> String {
    let mut s = String::new();
    for a in &m.attacks {
        let (Some(mean), Some(u)) = (a.mean, a.uniform_baseline) else { continue };
        s.push_str(&format!(
            "\n**Attack `{}`** ({} inferences, threat model {}): mean cos-sim {:.4} (uniform guess {:.4}), mean JS {:.4} nats / {:.4} bits (uniform {:.4} nats).\n",
            a.attack,
            a.reports.len(),
            yaml_name(&m.threat_model),
            mean.cos_sim,
            u.cos_sim,
            mean.js_nats,
            mean.js_bits,
            u.js_nats
        ));
        if let Some(e) = a.mean_link_share_error {
            s.push_str(&format!("- the share of links among a client's training pairs (its graph's density under `link.negatives: natural`): mean absolute error {e:.4}\n"));
        }
        if let Some(g) = &a.aggregate {
            s.push_str(&format!(
                "- the server saw only aggregates of the clients' updates ({} inference(s)); against the union of the clients in each: cos-sim {:.4}, JS {:.4} nats; the union itself scores cos-sim {:.4}, JS {:.4} nats per client (what a perfect inference of the joint distribution gets)\n",
                g.inferences, g.vs_union.cos_sim, g.vs_union.js_nats, g.union_vs_clients.cos_sim, g.union_vs_clients.js_nats
            ));
        }
        if let Some(t) = a.mean_vs_trained_labels {
            s.push_str(&format!(
                "- against the labels the clients trained on (after their defenses): cos-sim {:.4}, JS {:.4} nats\n",
                t.cos_sim, t.js_nats
            ));
        }
        for e in &a.round_effects {
            let before = e.test_accuracy_before.map_or("–".to_string(), |b| format!("{b:.4}"));
            s.push_str(&format!("- round {}: test accuracy {before} before, {:.4} after\n", e.round, e.test_accuracy_after));
        }
        for n in &a.notes {
            s.push_str(&format!("- note: {n}\n"));
        }
        s.push_str("\n| round | client | cos-sim | JS (nats) | JS (bits) | uniform cos-sim | uniform JS (nats) |\n|---:|---:|---:|---:|---:|---:|---:|\n");
        for r in &a.reports {
            s.push_str(&format!(
                "| {} | {} | {:.4} | {:.4} | {:.4} | {:.4} | {:.4} |\n",
                r.round, r.client, r.scores.cos_sim, r.scores.js_nats, r.scores.js_bits, r.uniform.cos_sim, r.uniform.js_nats
            ));
        }
    }
    s
}

fn eps(e: f64) -> String {
    if e.is_finite() { format!("{e}") } else { "∞".into() }
}

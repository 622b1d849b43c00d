//! `ec-lda`: the EC-LDA paper's Table 2 block for one dataset (EC-LDA, Infiltrator,
//! iLRG, LLG* and the uniform guess × GCN/GAT/SAGE), the local-epochs sweep E ∈ {1, 3, 5}
//! and the sweep over the clipping norm C, in the published code's setting (REFERENCE
//! §1.4): Fluid communities on the largest connected component, per-client
//! `randn < 0.8` split, two GNN layers + linear head, plain SGD, E = 5, FedAvg weighted
//! by all client nodes, 10 clients, the attack in the middle round. The scenarios are
//! the `scenarios/ec-lda-cora-*.yaml` files (embedded), with the dataset's widths,
//! learning rate and rounds set for other datasets.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Cells, PaperValue, Report};
use crate::error::{Error, Result};
use crate::record::{AttackScores, RunMetrics};
use crate::run::RunOptions;
use crate::scenario::Scenario;

/// How far our mean may be from the paper's (beyond both 95 % half-widths) and still
/// count as `within`: the paper prints cos-sim and JS to three decimals.
pub const TOLERANCE: f64 = 0.02;

/// DP-GNN's batch in the defense experiment: B training nodes per step (a Cora Fluid
/// client holds about 190).
const DP_BATCH: usize = 64;

/// Which parts of the EC-LDA reproduction to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EcLdaPart {
    /// Table 2: EC-LDA on its compressed round; Infiltrator (after training), iLRG, LLG*,
    /// the passive LDA and the uniform guess on an ordinary round of a federation without
    /// the active attack (the published `compare` task) × GCN, GAT, SAGE.
    Table,
    /// Not Table 2: iLRG, LLG* and the uniform guess reading EC-LDA's compressed round,
    /// beside EC-LDA (compression helps every label-distribution estimator).
    Compressed,
    /// EC-LDA with E ∈ {1, 3, 5} local epochs.
    Epochs,
    /// EC-LDA with C ∈ {0.001, 0.01, 0.1, 1, 10} and without scaling.
    Clip,
    /// EC-LDA against label-DP (k-ary RR, as the published `label_DP`), DP-GNN and the
    /// published code's DP calibration at ε ∈ {1, 2, 4, 8}, beside no defense (GCN and
    /// SAGE; DP-GNN has no GAT).
    Defense,
    /// DP-GNN's test accuracy (GCN) against ε ∈ {1, 2, 4, 8, 16, 32, ∞}, centralized and
    /// over the 10 clients, with the noise multiplier σ the clients got.
    DpUtility,
}

/// The privacy budgets of the defense experiment.
const DEFENSE_EPSILONS: [f64; 4] = [1.0, 2.0, 4.0, 8.0];

/// The privacy budgets of DP-GNN's utility curve (∞: the same training without DP).
const UTILITY_EPSILONS: [f64; 7] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, f64::INFINITY];

/// The DP-GNN defense entry of the published DP setting (REFERENCE §1.4: D = 5,
/// per-node clip 0.1), at `e`, calibrated as DP-GNN does or as the EC-LDA code does.
fn dp_gnn_entry(e: f64, code: bool) -> String {
    // The code's batch is every training node (sample rate 1).
    let (batch, calibration) = if code { ("1000000000".to_string(), ", calibration: ec-lda-code") } else { (DP_BATCH.to_string(), "") };
    format!(
        "defenses=[{{kind: dp-gnn, target_epsilon: {e}, max_degree: 5, clip: 0.1, batch_size: {batch}, small_clients: full-batch{calibration}}}]"
    )
}

/// The DP-GNN calibrations the defense part runs, same seeds, same table: DP-GNN's own
/// (`false`) and the EC-LDA code's (`true`, `calibration: ec-lda-code`, not DP).
const CALIBRATIONS: [bool; 2] = [false, true];

/// The published DP setting's training: lr 0.5, one local epoch.
const DP_TRAINING: [&str; 2] = ["train.lr=0.5", "train.epochs=1"];

#[derive(Debug, Clone)]
pub struct EcLdaOptions {
    pub dataset: String,
    pub seeds: usize,
    pub parts: Vec<EcLdaPart>,
    /// Rounds instead of the dataset's (for a quick look; the attack stays mid-way).
    pub rounds: Option<usize>,
    pub run: RunOptions,
}

/// The EC-LDA scenarios per model (also `bench attack`'s workload).
pub const MODELS: [(&str, &str); 3] = [
    ("gcn", include_str!("../../scenarios/ec-lda-cora-gcn.yaml")),
    ("gat", include_str!("../../scenarios/ec-lda-cora-gat.yaml")),
    ("sage", include_str!("../../scenarios/ec-lda-cora-sage.yaml")),
];

/// The published code's per-dataset settings: first width, learning rate, rounds.
fn dataset_settings(name: &str) -> (usize, f64, usize) {
    match name {
        "cora" | "planetoid-cora" => (512, 0.1, 200),
        "citeseer" | "planetoid-citeseer" => (512, 0.1, 100),
        "lastfm" => (64, 0.1, 200),
        // Facebook, PubMed (listed but never run by the published code) and any other.
        _ => (128, 0.1, 200),
    }
}

/// Whether REPRODUCTION.md has the paper's values for `dataset` (Cora's block).
fn paper_reports(dataset: &str) -> bool {
    matches!(dataset, "cora" | "planetoid-cora")
}

/// Table 2 of the paper (REPRODUCTION.md), Cora: (model, attack) → (cos-sim, JS).
fn paper_value(dataset: &str, model: &str, attack: &str) -> Option<(f64, f64)> {
    if !paper_reports(dataset) {
        return None;
    }
    Some(match (model, attack) {
        ("gcn", "ec-lda") => (1.000, 0.001),
        ("gcn", "infiltrator") => (0.981, 0.009),
        ("gcn", "ilrg") => (0.601, 0.267),
        ("gcn", "llg-star") => (0.558, 0.327),
        ("gat", "ec-lda") => (1.000, 0.001),
        ("gat", "infiltrator") => (0.995, 0.004),
        ("gat", "ilrg") => (0.499, 0.328),
        ("gat", "llg-star") => (0.527, 0.343),
        ("sage", "ec-lda") => (1.000, 0.000),
        ("sage", "infiltrator") => (0.987, 0.009),
        ("sage", "ilrg") => (0.469, 0.382),
        ("sage", "llg-star") => (0.588, 0.312),
        _ => return None,
    })
}

/// The attacks of Table 2 that read an ordinary round, in the published `compare` task's
/// place: the federation without EC-LDA, Infiltrator after the last round.
const BASELINES: &str = "attacks=[lda, infiltrator, ilrg, llg-star, uniform]";

/// An attack's cos-sim and JS of one run, with the paper's where it has them.
fn scores(cells: &mut Cells, table: &str, model: &str, setting: &str, (cos, js): (f64, f64), paper: (Option<f64>, Option<f64>)) {
    let value = |m: Option<f64>| m.map(|mean| PaperValue { mean, ci95: None });
    cells.push(table, model, setting, "cos_sim", cos, value(paper.0));
    cells.push(table, model, setting, "js_div", js, value(paper.1));
}

/// Which cells a run's scores go to.
#[derive(Debug, Clone, Copy)]
enum Record {
    /// Table 2: EC-LDA's federation (`active`) or the baselines' ordinary one.
    Table {
        active: bool,
    },
    Compressed,
    Epochs(usize),
    Clip(&'static str),
    /// `code`: the DP-GNN defense calibrated as the EC-LDA code does.
    Defense {
        defense: &'static str,
        eps: f64,
        code: bool,
    },
    DpUtility {
        centralized: bool,
        eps: f64,
    },
}

impl Record {
    /// The cell's id in its part's matrix and its columns beside the leading ones.
    fn cell(&self, model: &str) -> (String, Vec<(String, String)>) {
        let col = |k: &str, v: String| vec![(k.to_string(), v)];
        match *self {
            Record::Table { active } => {
                let f = if active { "ec-lda" } else { "baselines" };
                (format!("model={model},federation={f}"), col("federation", f.into()))
            }
            Record::Compressed => (format!("model={model}"), vec![]),
            Record::Epochs(e) => (format!("model={model},epochs={e}"), col("local_epochs", e.to_string())),
            Record::Clip(c) => (format!("model={model},clip={c}"), col("clip", c.to_string())),
            Record::Defense { defense, eps, code } => {
                let d = if code { "dp-gnn-ec-lda-code" } else { defense };
                (format!("model={model},defense={d},eps={}", super::eps(eps)), col("eps", super::eps(eps)))
            }
            Record::DpUtility { centralized, eps } => {
                let s = if centralized { "centralized" } else { "federated" };
                (format!("model={model},setting={s},eps={}", super::eps(eps)), col("eps", super::eps(eps)))
            }
        }
    }
}

/// One federated run: per attack, the mean cos-sim and JS (nats) over its reports, and
/// the final test accuracy.
struct RunScores {
    attacks: Vec<(String, f64, f64)>,
    /// Per attack: cos-sim and JS against the labels the clients trained on, where a
    /// defense randomised them.
    vs_trained: Vec<(String, f64, f64)>,
    /// The uniform guess scored on the first attack's reports.
    uniform: Option<(f64, f64)>,
    test_accuracy: f64,
    /// σ per client (DP training), in client order.
    noise_multipliers: Vec<f64>,
}

impl RunScores {
    fn of(r: &RunMetrics) -> RunScores {
        let pairs = |f: &dyn Fn(&AttackScores) -> Option<(f64, f64)>| {
            r.attacks.iter().filter_map(|a| f(a).map(|(c, j)| (a.attack.clone(), c, j))).collect()
        };
        RunScores {
            attacks: pairs(&|a| a.cos_sim.zip(a.js_div)),
            vs_trained: pairs(&|a| a.vs_trained_cos_sim.zip(a.vs_trained_js_div)),
            uniform: r.attacks.first().and_then(|a| a.uniform_cos_sim.zip(a.uniform_js_div)),
            test_accuracy: r.test_accuracy,
            noise_multipliers: r.noise_multipliers.clone(),
        }
    }
}

/// Every run of `part`, in reporting order: (model, base scenario, overrides, record).
fn jobs(part: EcLdaPart, common: &dyn Fn() -> Vec<String>) -> Vec<(&'static str, &'static str, Vec<String>, Record)> {
    let mut jobs = Vec::new();
    for (model, base) in MODELS {
        let mut push = |extra: Vec<String>, record: Record| {
            let mut o = common();
            o.extend(extra);
            jobs.push((model, base, o, record));
        };
        match part {
            EcLdaPart::Table => {
                push(vec!["attacks=[ec-lda]".into()], Record::Table { active: true });
                push(vec![BASELINES.into()], Record::Table { active: false });
            }
            EcLdaPart::Compressed => push(vec!["attacks=[ec-lda, ilrg, llg-star, uniform]".into()], Record::Compressed),
            EcLdaPart::Epochs => {
                for e in [1, 3, 5] {
                    push(vec![format!("train.epochs={e}"), "attacks=[ec-lda]".into()], Record::Epochs(e));
                }
            }
            EcLdaPart::Clip => {
                for c in ["0.001", "0.01", "0.1", "1", "10", "null"] {
                    // Unscaled, the round is the passive one: the baselines read it too.
                    let others = if c == "null" { ", ilrg, llg-star" } else { "" };
                    push(vec![format!("attacks=[{{kind: ec-lda, clip_norm: {c}}}{others}]")], Record::Clip(c));
                }
            }
            EcLdaPart::Defense if model == "gat" => {}
            EcLdaPart::Defense => {
                let attack = || "attacks=[ec-lda]".to_string();
                push(vec![attack()], Record::Defense { defense: "none", eps: f64::INFINITY, code: false });
                for e in DEFENSE_EPSILONS {
                    push(
                        vec![format!("defenses=[{{kind: label-dp, epsilon: {e}}}]"), attack()],
                        Record::Defense { defense: "label-dp", eps: e, code: false },
                    );
                    for code in CALIBRATIONS {
                        let mut o = vec![dp_gnn_entry(e, code), attack()];
                        o.extend(DP_TRAINING.map(String::from));
                        push(o, Record::Defense { defense: "dp-gnn", eps: e, code });
                    }
                }
            }
            EcLdaPart::DpUtility if model != "gcn" => {}
            EcLdaPart::DpUtility => {
                for centralized in [true, false] {
                    for e in UTILITY_EPSILONS {
                        let mut o: Vec<String> = DP_TRAINING.map(String::from).to_vec();
                        if e.is_finite() {
                            o.push(dp_gnn_entry(e, false));
                        }
                        if centralized {
                            o.push("federation.centralized=true".into());
                        }
                        push(o, Record::DpUtility { centralized, eps: e });
                    }
                }
            }
        }
    }
    jobs
}

/// Run the EC-LDA reproduction and write `reproduce.md` / `reproduce.csv`; returns the
/// results directory.
pub fn ec_lda(opts: &EcLdaOptions, out: Option<&Path>, force: bool) -> Result<PathBuf> {
    if opts.seeds == 0 {
        return Err(Error::param("--seeds", "at least 1 seed is needed"));
    }
    super::check_dataset(&opts.dataset)?;
    let (width, lr, paper_rounds) = dataset_settings(&opts.dataset);
    let rounds = opts.rounds.unwrap_or(paper_rounds);
    if rounds < 2 {
        return Err(Error::param("--rounds", format!("{rounds}: at least 2 rounds are needed (the attack runs mid-way)")));
    }
    let (dir, results_dir) = super::claim(out, &format!("reproduce-ec-lda-{}", opts.dataset), force)?;
    let common = || -> Vec<String> {
        vec![
            format!("dataset.name={}", opts.dataset),
            format!("model.hidden=[{width}, 64]"),
            format!("train.lr={lr}"),
            format!("federation.rounds={rounds}"),
            "split={normal_below: 0.8, scope: per_client}".to_string(),
        ]
    };
    let mut cells = Cells::default();
    let mut timings = Vec::new();
    let quiet = RunOptions { quiet: true, ..opts.run.clone() };
    for &part in &opts.parts {
        let t = Instant::now();
        let jobs = jobs(part, &common);
        // Longest runs first: SAGE 18.5 s, GAT 10.5 s, GCN 7.5 s on Cora; DP training
        // ≈ 8× a plain run.
        let cost = |(model, _, o, _): &(&str, &str, Vec<String>, Record)| {
            let m = match *model {
                "sage" => 3,
                "gat" => 2,
                _ => 1,
            };
            if o.iter().any(|x| x.contains("dp-gnn")) { 8 * m } else { m }
        };
        // Each job is a cell of the part's matrix, run over seeds 0..seeds.
        let part_name = clap::ValueEnum::to_possible_value(&part).expect("no part is skipped").get_name().to_string();
        let part_cells = jobs
            .iter()
            .map(|(model, base, o, record)| {
                let (id, mut columns) = record.cell(model);
                columns.insert(0, ("part".to_string(), part_name.clone()));
                Ok(crate::matrix::BuiltCell { id, columns, scenario: Scenario::parse(base, "reproduce", o)? })
            })
            .collect::<Result<Vec<_>>>()?;
        let results = super::run_cells(
            &dir.join(&part_name),
            &format!("reproduce-ec-lda-{}-{part_name}", opts.dataset),
            part_cells,
            opts.seeds,
            &quiet,
            &|c| cost(&jobs[c]),
        )?;
        for ((model, _, _, record), r) in
            jobs.iter().zip(results).flat_map(|(job, runs)| runs.into_iter().map(move |r| (job, RunScores::of(&r))))
        {
            record_run(&mut cells, &opts.dataset, model, *record, &r);
        }
        timings.push((part, t.elapsed().as_secs_f64()));
    }

    let intro = format!(
        "# EC-LDA reproduction: {}\n\n{} seed(s) per cell; mean and 95 % bootstrap half-width over seeds. Setting: REFERENCE §1.4 \
         (Fluid communities on the largest connected component, per-client `randn < 0.8` split, {width} → 64 + head, SGD lr {lr}, \
         {rounds} rounds, E = 5, C = 0.01, attack in round {}). JS in nats (range [0, ln 2]). `within`: |ours − paper| ≤ both \
         half-widths + {TOLERANCE}; `note` says why a cell outside it differs (docs/reproduction.md has the evidence).\n\n\
         **Table 2** (`2`): EC-LDA reads the round it compressed (the model scaled to norm C, the round discarded after). The \
         baselines read what the published `compare` task gives them: an *ordinary* round (no scaling, no restore) at the same \
         round index, in a federation without EC-LDA (setting `clip=none`); Infiltrator queries the final model. \
         **`compressed`** is not Table 2: iLRG, LLG* and the uniform guess read EC-LDA's compressed round, where the head's \
         outputs are uniform and the estimators become exact (iLRG's linear system then no longer depends on the model at all: \
         its counts are N·n_c/N_train, rounded). The C-sweep's `clip=none` row is the passive estimate.\n\n\
         **Defense** (GCN, SAGE): label-DP is k-ary randomized response on the clients' train labels before round 1, as the \
         published `label_DP`. DP-GNN (`defense=dp-gnn`) is DP-GNN as published (degree bound 5, per-node clip 0.1, noise \
         σ·2(D²+D+1)·C, multi-term RDP accountant, batches of {DP_BATCH} nodes or all of a client's training nodes when it has \
         fewer, σ per client so that its ε over all its steps is the cell's, δ = 1/(10·N_train)), lr 0.5 and one local epoch as \
         the published DP setting. Rows with `calibration=ec-lda-code` train as the EC-LDA code's `defense` task does \
         (REFERENCE §1.4: its accountant, σ multiplier (k^L−1)/(k−1) = 6 instead of 2(D²+D+1) = 62, q = 1, degrees clipped to 5, \
         and gradients it never zeroes: each \"per-node\" clip acts on a running sum, and every step descends along all clipped \
         sums so far): **not (ε, δ)-DP at the stated ε**; they are the setting behind the paper's \"DP-GNN leaves the attack \
         nearly unaffected\". `defense` scores EC-LDA against \
         the true train labels, `defense-vs-held-labels` against the labels the clients trained on; `attack=uniform` is the \
         uniform guess on the same clients.\n\n\
         **DP utility** (GCN, faithful DP-GNN): test accuracy against ε, centralized (one client holds the graph) and over the \
         clients; ε = ∞ is the same training (lr 0.5, E = 1) without DP; `sigma` is the mean noise multiplier over clients.\n",
        opts.dataset,
        opts.seeds,
        rounds / 2
    );
    let checks = checks(&cells);
    let intro = if checks.is_empty() { intro } else { format!("{intro}\n## Checks\n\n{checks}") };
    let within = |mean: f64, ci: f64, p: &PaperValue| (mean - p.mean).abs() <= ci + TOLERANCE;
    let report = Report {
        paper: "ec-lda",
        dataset: &opts.dataset,
        cells: &cells,
        intro,
        within: &within,
        explain: &explain,
        above_baseline: &|_| None,
        timings: timings.iter().map(|(part, s)| (format!("{part:?}"), *s)).collect(),
    };
    report.write(&results_dir)?;
    Ok(dir)
}

/// One run's scores into the cells of its record.
fn record_run(cells: &mut Cells, dataset: &str, model: &str, record: Record, r: &RunScores) {
    let accuracy = 100.0 * r.test_accuracy;
    match record {
        Record::Table { active } => {
            let clip = if active { "0.01" } else { "none" };
            for (attack, cos, js) in &r.attacks {
                let paper = paper_value(dataset, model, attack);
                let setting = format!("attack={attack};local_epochs=5;clip={clip}");
                scores(cells, "2", model, &setting, (*cos, *js), (paper.map(|p| p.0), paper.map(|p| p.1)));
            }
            let attack = if active { "ec-lda" } else { "none" };
            cells.push("2", model, &format!("attack={attack};local_epochs=5;clip={clip}"), "test_accuracy", accuracy, None);
        }
        Record::Compressed => {
            for (attack, cos, js) in &r.attacks {
                scores(cells, "compressed", model, &format!("attack={attack};local_epochs=5;clip=0.01"), (*cos, *js), (None, None));
            }
        }
        Record::Epochs(e) => {
            let setting = format!("attack=ec-lda;local_epochs={e};clip=0.01");
            // The paper (Table 3): cos-sim "stays 1.000" for every E; its JS per E is not
            // in REPRODUCTION.md.
            let paper = (paper_reports(dataset).then_some(1.0), None);
            for (_, cos, js) in &r.attacks {
                scores(cells, "E-sweep", model, &setting, (*cos, *js), paper);
            }
        }
        Record::Defense { defense, eps, code } => {
            let epochs = if defense == "dp-gnn" { "1" } else { "5" };
            let setting = |attack: &str| {
                let mut pairs = vec![
                    ("eps", super::eps(eps)),
                    ("attack", attack.to_string()),
                    ("defense", defense.into()),
                    ("local_epochs", epochs.into()),
                    ("clip", "0.01".into()),
                ];
                if code {
                    pairs.push(("calibration", "ec-lda-code".into()));
                }
                super::setting(&pairs)
            };
            for (_, cos, js) in &r.attacks {
                scores(cells, "defense", model, &setting("ec-lda"), (*cos, *js), (None, None));
            }
            if let Some(u) = r.uniform {
                scores(cells, "defense", model, &setting("uniform"), u, (None, None));
            }
            for (_, cos, js) in &r.vs_trained {
                scores(cells, "defense-vs-held-labels", model, &setting("ec-lda"), (*cos, *js), (None, None));
            }
            cells.push("defense", model, &setting("ec-lda"), "test_accuracy", accuracy, None);
        }
        Record::Clip(c) => {
            for (attack, cos, js) in &r.attacks {
                let setting = format!("attack={attack};local_epochs=5;clip={}", if c == "null" { "none" } else { c });
                scores(cells, "C-sweep", model, &setting, (*cos, *js), (None, None));
            }
        }
        Record::DpUtility { centralized, eps } => {
            let table = if centralized { "dp-utility-centralized" } else { "dp-utility-federated" };
            let defense = if eps.is_finite() { "dp-gnn" } else { "none" };
            let setting = super::setting(&[("eps", super::eps(eps)), ("defense", defense.into()), ("local_epochs", "1".into())]);
            cells.push(table, model, &setting, "test_accuracy", accuracy, None);
            if !r.noise_multipliers.is_empty() {
                let mean = r.noise_multipliers.iter().sum::<f64>() / r.noise_multipliers.len() as f64;
                cells.push(table, model, &setting, "sigma", mean, None);
            }
        }
    }
}

/// A cell's mean and half-width, if it exists.
fn find(cells: &Cells, table: &str, model: &str, setting: &str, metric: &str) -> Option<(f64, f64)> {
    cells
        .0
        .iter()
        .find(|c| c.table == table && c.model == model && c.setting == setting && c.metric == metric)
        .map(|c| super::mean_ci95(&c.values))
}

/// The acceptance lines and the sanity laws every table must keep, checked on
/// the cells present, as Markdown lines (`ok` / `FAILS` with the numbers).
fn checks(cells: &Cells) -> String {
    let mut out = String::new();
    // `None`: information, no verdict.
    let mut line =
        |ok: Option<bool>, text: String| out.push_str(&format!("- {} {text}\n", ok.map_or("·", |ok| if ok { "ok" } else { "**FAILS**" })));
    let models: Vec<String> = cells.0.iter().map(|c| c.model.clone()).fold(Vec::new(), |mut v, m| {
        if !v.contains(&m) {
            v.push(m);
        }
        v
    });
    for model in &models {
        let t2 = |attack: &str, clip: &str, metric: &str| {
            find(cells, "2", model, &format!("attack={attack};local_epochs=5;clip={clip}"), metric)
        };
        if let (Some((cos, _)), Some((js, _))) = (t2("ec-lda", "0.01", "cos_sim"), t2("ec-lda", "0.01", "js_div")) {
            line(Some(cos >= 0.99 && js <= 0.01), format!("{model}: EC-LDA cos-sim {cos:.4} ≥ 0.99 and JS {js:.4} ≤ 0.01"));
        }
        if let Some((cos, _)) = t2("infiltrator", "none", "cos_sim") {
            line(Some(cos >= 0.9), format!("{model}: Infiltrator cos-sim {cos:.4} ≥ 0.9"));
        }
        for attack in ["ilrg", "llg-star"] {
            if let Some((cos, _)) = t2(attack, "none", "cos_sim") {
                let paper = cells
                    .0
                    .iter()
                    .find(|c| {
                        c.table == "2" && c.model == *model && c.setting.starts_with(&format!("attack={attack};")) && c.metric == "cos_sim"
                    })
                    .and_then(|c| c.paper);
                match paper {
                    Some(p) => line(
                        Some(cos < 0.9 && (cos - p.mean).abs() <= 0.25),
                        format!("{model}: {attack} cos-sim {cos:.4} < 0.9 and within 0.25 of the paper's {}", p.mean),
                    ),
                    None => line(Some(cos < 0.9), format!("{model}: {attack} cos-sim {cos:.4} < 0.9 on an ordinary round")),
                }
            }
        }
        let clip = |c: &str| find(cells, "C-sweep", model, &format!("attack=ec-lda;local_epochs=5;clip={c}"), "cos_sim");
        if let (Some((scaled, ci)), Some((passive, pci))) = (clip("0.01"), clip("none")) {
            line(
                Some(scaled + ci >= passive - pci),
                format!("{model}: compression helps: EC-LDA at C = 0.01 {scaled:.4} ≥ unscaled (passive) {passive:.4}"),
            );
        }
        // Defense: the attack under noise tends to the uniform guess, not below it; a
        // private model never beats no defense; more ε never costs accuracy.
        let none = find(cells, "defense", model, "eps=inf;attack=ec-lda;defense=none;local_epochs=5;clip=0.01", "test_accuracy");
        for (defense, calibration) in [("label-dp", ""), ("dp-gnn", ""), ("dp-gnn", ";calibration=ec-lda-code")] {
            let epochs = if defense == "dp-gnn" { 1 } else { 5 };
            let setting = |e: f64, attack: &str| {
                format!("eps={};attack={attack};defense={defense};local_epochs={epochs};clip=0.01{calibration}", super::eps(e))
            };
            let name = format!("{defense}{}", if calibration.is_empty() { "" } else { " (ec-lda-code)" });
            let mut previous: Option<(f64, f64, f64)> = None;
            for e in DEFENSE_EPSILONS {
                let (Some((cos, ci)), Some((ucos, uci))) = (
                    find(cells, "defense", model, &setting(e, "ec-lda"), "cos_sim"),
                    find(cells, "defense", model, &setting(e, "uniform"), "cos_sim"),
                ) else {
                    continue;
                };
                line(
                    Some(cos + ci >= ucos - uci),
                    format!("{model}, {name} ε = {e}: EC-LDA cos-sim {cos:.4} ± {ci:.4} not below the uniform guess {ucos:.4} ± {uci:.4}"),
                );
                if let Some((acc, aci)) = find(cells, "defense", model, &setting(e, "ec-lda"), "test_accuracy") {
                    if let Some((n, nci)) = none {
                        line(
                            Some(acc - aci <= n + nci),
                            format!("{model}, {name} ε = {e}: accuracy {acc:.1} % ± {aci:.1} not above no defense's {n:.1} % ± {nci:.1}"),
                        );
                    }
                    if let Some((pe, pacc, paci)) = previous {
                        line(
                            Some(acc + aci >= pacc - paci),
                            format!("{model}, {name}: accuracy at ε = {e} ({acc:.1} %) not below ε = {pe} ({pacc:.1} %) beyond noise"),
                        );
                    }
                    previous = Some((e, acc, aci));
                }
            }
        }
        // The published calibration's claim (issue 24's acceptance line, Cora).
        let code = |e: f64, metric: &str| {
            find(
                cells,
                "defense",
                model,
                &format!("eps={};attack=ec-lda;defense=dp-gnn;local_epochs=1;clip=0.01;calibration=ec-lda-code", super::eps(e)),
                metric,
            )
        };
        if DEFENSE_EPSILONS.iter().all(|&e| code(e, "cos_sim").is_some()) {
            let worst = DEFENSE_EPSILONS.iter().filter_map(|&e| code(e, "cos_sim")).map(|c| c.0).fold(f64::INFINITY, f64::min);
            line(Some(worst >= 0.9), format!("{model}, dp-gnn (ec-lda-code): EC-LDA cos-sim ≥ 0.9 at every ε (lowest {worst:.4})"));
        }
        if let Some((acc, _)) = code(8.0, "test_accuracy") {
            line(Some(acc >= 70.0), format!("{model}, dp-gnn (ec-lda-code): the model learns, {acc:.1} % ≥ 70 % test accuracy at ε = 8"));
        }
        for table in ["dp-utility-centralized", "dp-utility-federated"] {
            let acc = |e: f64| {
                let defense = if e.is_finite() { "dp-gnn" } else { "none" };
                find(cells, table, model, &format!("eps={};defense={defense};local_epochs=1", super::eps(e)), "test_accuracy")
            };
            let series: Vec<(f64, f64, f64)> = UTILITY_EPSILONS.iter().filter_map(|&e| acc(e).map(|(a, ci)| (e, a, ci))).collect();
            if series.is_empty() {
                continue;
            }
            let text: Vec<String> = series.iter().map(|(e, a, _)| format!("ε {} → {a:.1} %", super::eps(*e))).collect();
            let monotone = series.windows(2).all(|w| w[1].1 + w[1].2 >= w[0].1 - w[0].2);
            line(Some(monotone), format!("{model}, {table}: accuracy does not fall as ε grows beyond noise ({})", text.join(", ")));
            let learns = series
                .iter()
                .find(|(e, a, _)| e.is_finite() && *a >= 50.0)
                .map_or("at no finite ε".to_string(), |(e, ..)| format!("from ε = {e}"));
            line(None, format!("{model}, {table}: test accuracy ≥ 50 % {learns}"));
        }
    }
    out
}

/// The known cause of a cell outside the paper's tolerance (docs/reproduction.md has the
/// evidence).
fn explain(c: &super::Cell, mean: f64) -> Option<String> {
    let attack = c.setting.split(';').find_map(|kv| kv.strip_prefix("attack="))?;
    let few = super::too_few_runs(c, 5);
    let why = match (c.table.as_str(), attack) {
        ("2", "ilrg") => Some(format!(
            "iLRG on an ordinary round varies by seed and client (ours {mean:.3} over {} seeds); the published code's own seed 0 on Cora GCN \
             gives 0.503 against Table 2's 0.601 and the paper prints no spread",
            c.values.len()
        )),
        ("2", "llg-star") => Some(format!(
            "LLG* scores about the uniform guess on an ordinary round (ours {mean:.3}); it follows the original LLG* (dummy batches all \
             labelled i) where the EC-LDA port uses random soft targets; the published code's own seed 0 on Cora GCN gives 0.788 \
             against Table 2's 0.558 and the paper prints no spread"
        )),
        _ => None,
    };
    match (why, few) {
        (Some(w), Some(f)) => Some(format!("{w}; {f}")),
        (w, f) => w.or(f),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fed::{AttackOutput, ClientOracle, ClientUpdate, ModelParams, RoundContext, ServerContext, ServerStrategy, ThreatModel};

    /// Wraps a scenario's server and records, in the attack round, the norm of the model
    /// the federation meant to broadcast and of the one every attack was handed.
    struct Spy {
        inner: Box<dyn ServerStrategy>,
        global: Option<f64>,
        handed: Vec<f64>,
    }

    impl ServerStrategy for Spy {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn threat_model(&self) -> ThreatModel {
            self.inner.threat_model()
        }
        fn setup(&mut self, server: &std::sync::Arc<ServerContext>) -> Result<()> {
            self.inner.setup(server)
        }
        fn before_broadcast(&mut self, ctx: &RoundContext, client: usize, global: &ModelParams) -> Option<ModelParams> {
            if ctx.round == ctx.rounds / 2 {
                self.global = Some(global.l2_norm());
            }
            self.inner.before_broadcast(ctx, client, global)
        }
        fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
            if ctx.round == ctx.rounds / 2 {
                self.handed.push(update.sent.l2_norm());
            }
            self.inner.after_update(ctx, update)
        }
        fn aggregate(&mut self, ctx: &RoundContext, updates: &[ClientUpdate<'_>]) -> ModelParams {
            self.inner.aggregate(ctx, updates)
        }
        fn after_aggregation(&mut self, ctx: &RoundContext, previous: &ModelParams, aggregated: ModelParams) -> ModelParams {
            self.inner.after_aggregation(ctx, previous, aggregated)
        }
        fn query(&mut self, ctx: &RoundContext, oracle: &dyn ClientOracle) -> Result<()> {
            self.inner.query(ctx, oracle)
        }
        fn finish(&mut self) -> AttackOutput {
            self.inner.finish()
        }
    }

    /// The norms (intended broadcast, handed to the attacks) in the attack round of a
    /// part's job for GCN, on a small synthetic graph over 4 rounds.
    fn attack_round_norms(part: EcLdaPart, record: &dyn Fn(&Record) -> bool) -> (f64, Vec<f64>, Vec<String>) {
        let common = || {
            vec![
                "dataset.name=synthetic".to_string(),
                "model.hidden=[16, 8]".into(),
                "federation.rounds=4".into(),
                "partition={method: fluid, clients: 3}".into(),
            ]
        };
        let jobs = jobs(part, &common);
        let (_, base, o, _) = jobs.iter().find(|(m, _, _, r)| *m == "gcn" && record(r)).expect("the job");
        let s = Scenario::parse(base, "test", o).unwrap();
        let attacks = s.attacks.iter().map(|a| a.name.clone()).collect();
        let p = crate::run::prepare(&s, None).unwrap();
        let mut spy = Spy { inner: s.server().unwrap(), global: None, handed: vec![] };
        let r = crate::run::federation(&s, &p, Default::default()).unwrap().run(&mut spy).unwrap();
        assert!(!r.attack.reports.is_empty());
        (spy.global.expect("an attack round"), spy.handed, attacks)
    }

    #[test]
    fn table_2s_baselines_read_an_ordinary_round_and_ec_lda_its_compressed_one() {
        // Table 2's baselines: the model they are handed is the global model, unscaled.
        let (global, handed, attacks) = attack_round_norms(EcLdaPart::Table, &|r| matches!(r, Record::Table { active: false }));
        assert_eq!(attacks, ["lda", "infiltrator", "ilrg", "llg-star", "uniform"]);
        assert!(global > 0.1, "{global}");
        assert!(!handed.is_empty() && handed.iter().all(|&n| n == global), "{handed:?} vs {global}");
        // EC-LDA's own federation, and the `compressed` part: every attack reads the model
        // scaled to C = 0.01.
        for (part, record) in [
            (EcLdaPart::Table, &(|r: &Record| matches!(r, Record::Table { active: true })) as &dyn Fn(&Record) -> bool),
            (EcLdaPart::Compressed, &|_: &Record| true),
        ] {
            let (global, handed, attacks) = attack_round_norms(part, record);
            assert!(attacks.contains(&"ec-lda".to_string()), "{attacks:?}");
            assert!(global > 0.1);
            assert!(!handed.is_empty() && handed.iter().all(|&n| (n - 0.01).abs() < 1e-6), "{part:?}: {handed:?}");
        }
    }

    #[test]
    fn the_ec_lda_code_calibration_is_named_in_the_setting_and_only_there() {
        let all = jobs(EcLdaPart::Defense, &Vec::<String>::new);
        let dp: Vec<&Vec<String>> = all.iter().filter(|j| matches!(j.3, Record::Defense { defense: "dp-gnn", .. })).map(|j| &j.2).collect();
        assert_eq!(dp.len(), 2 * 4 * CALIBRATIONS.len(), "GCN and SAGE × 4 ε × the calibrations");
        let code = CALIBRATIONS.iter().filter(|&&c| c).count();
        assert_eq!(dp.iter().filter(|o| o.iter().any(|x| x.contains("calibration: ec-lda-code"))).count(), 2 * 4 * code);
        let mut cells = Cells::default();
        let r = RunScores {
            attacks: vec![("ec-lda".into(), 0.9, 0.05)],
            vs_trained: vec![],
            uniform: Some((0.6, 0.2)),
            test_accuracy: 0.7,
            noise_multipliers: vec![],
        };
        record_run(&mut cells, "cora", "gcn", Record::Defense { defense: "dp-gnn", eps: 8.0, code: true }, &r);
        record_run(&mut cells, "cora", "gcn", Record::Defense { defense: "dp-gnn", eps: 8.0, code: false }, &r);
        let settings: Vec<&str> = cells.0.iter().filter(|c| c.metric == "test_accuracy").map(|c| c.setting.as_str()).collect();
        assert_eq!(
            settings,
            [
                "eps=8;attack=ec-lda;defense=dp-gnn;local_epochs=1;clip=0.01;calibration=ec-lda-code",
                "eps=8;attack=ec-lda;defense=dp-gnn;local_epochs=1;clip=0.01"
            ]
        );
    }
}

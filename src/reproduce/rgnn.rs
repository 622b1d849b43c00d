//! `rgnn`: the RGNN table of REPRODUCTION.md for one dataset, in the released code's
//! protocol (REFERENCE §1.2): features summed in groups of columns and binarised (25 on
//! Cora as the table, 70 — the code's default — on the other bag-of-words datasets; the
//! German and Student columns are already integer codes), a random 50/25/25 split,
//! GraphSAGE 2 × 16 with ReLU, Adam (lr 0.01, gradients clipped to global norm 5) for
//! 100 full-batch epochs, the epoch of best validation accuracy kept. Rows: RGNN
//! (GRR-FS with m = 10 at ε_x = 1 per feature, label RR, Kx = Ky = 16, 16 METIS bags,
//! α = 1), LPGNN on the same features min-max scaled (multi-bit at ε_x = 1 per node,
//! Kx / Ky from LPGNN's Cora table), and GraphSAGE on the perturbed data (GRR-FS and
//! RR, no reconstruction, no LLP), at ε_y ∈ {3, 2, 1, 0.5}; each method's pipeline
//! without noise (ε = ∞: the like-for-like baseline of its private rows); and the
//! paper's non-private model, SAGE on the original features. The scenario is
//! `scenarios/rgnn-cora.yaml` (embedded); each cell overrides its fields.

use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Cell, Cells, PaperValue, Report, Setting, TableOptions, eps, setting};
use crate::error::Result;
use crate::run::RunOptions;

/// The embedded base scenario.
pub const SCENARIO: &str = include_str!("../../scenarios/rgnn-cora.yaml");

/// A row of the table: how the data is protected and the model trained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    NonPrivate,
    Rgnn,
    Lpgnn,
    /// GRR-FS and RR without reconstruction or LLP.
    Perturbed,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::NonPrivate => "non-private",
            Method::Rgnn => "rgnn",
            Method::Lpgnn => "lpgnn",
            Method::Perturbed => "perturbed",
        }
    }
}

/// ε_x per feature (RGNN, perturbed) or per node (LPGNN) in every private cell.
pub const EPS_X: f64 = 1.0;
/// Features each node reports through GRR.
pub const M: usize = 10;
pub const EPS_Y: [f64; 4] = [3.0, 2.0, 1.0, 0.5];

/// FedAvg rounds (of 10 local epochs) per 10 centralized epochs. Ten rounds leave the
/// federated pipelines under-trained, the no-noise one most: on Cora (seeds 0–2) RGNN
/// without noise scores 58.6 % at 10 rounds (10 seeds) and 74–79 % at 50; RGNN at
/// ε_y = 3 70.0 % (10 seeds) and 71–75 % at 50.
const FEDERATED_ROUNDS_PER_10_EPOCHS: usize = 5;

/// REPRODUCTION.md's Cora values (mean, ±) per method, in the order of [`EPS_Y`]; the
/// no-noise rows have none (the paper's non-private cell is on the original features).
fn cora_value(method: Method, eps_y: f64) -> Option<PaperValue> {
    let row: [(f64, f64); 4] = match method {
        Method::NonPrivate => return Some(PaperValue { mean: 87.5, ci95: Some(0.9) }),
        Method::Rgnn => [(77.8, 2.0), (75.5, 1.6), (67.5, 3.8), (41.9, 3.0)],
        Method::Lpgnn => [(55.5, 15.4), (39.5, 14.2), (34.1, 8.4), (37.8, 14.2)],
        Method::Perturbed => [(31.5, 1.9), (28.0, 1.6), (25.9, 2.4), (20.4, 4.4)],
    };
    let i = EPS_Y.iter().position(|&e| e == eps_y)?;
    Some(PaperValue { mean: row[i].0, ci95: Some(row[i].1) })
}

/// One row of the table: `eps_y` ∞ is the method's pipeline with the noise removed
/// (ε_x = ε_y = ∞, every feature reported, the same grouping, reconstruction, LLP,
/// KProp and selection) — the like-for-like baseline of its private rows.
#[derive(Debug, Clone, PartialEq)]
pub struct CellSpec {
    pub label: String,
    pub method: Method,
    pub eps_y: f64,
    /// LPGNN's (Kx, Ky); the other methods' steps are fixed.
    pub steps: (usize, usize),
    /// RGNN trained as the released code does (`as_published`: its double softmax and
    /// twice de-biased bags).
    pub published: bool,
}

/// The table's cells, the non-private model on the original features first; each
/// method's no-noise rows before its private ones (LPGNN: one per distinct (Kx, Ky)).
pub fn cells() -> Vec<CellSpec> {
    let cell = |label: String, method, eps_y, steps| CellSpec { label, method, eps_y, steps, published: false };
    let mut out = vec![cell("non-private".into(), Method::NonPrivate, f64::INFINITY, (0, 0))];
    for method in [Method::Rgnn, Method::Lpgnn, Method::Perturbed] {
        let steps = |e: f64| match method {
            Method::Rgnn => (16, 16),
            Method::Lpgnn => lpgnn_steps(e),
            _ => (0, 0),
        };
        let mut seen = Vec::new();
        for e in EPS_Y {
            let st = steps(e);
            if !seen.contains(&st) {
                seen.push(st);
                let label = match method {
                    Method::Lpgnn => format!("lpgnn-no-noise-kx{}-ky{}", st.0, st.1),
                    _ => format!("{}-no-noise", method.name()),
                };
                out.push(cell(label, method, f64::INFINITY, st));
            }
        }
        for e in EPS_Y {
            out.push(cell(format!("{}-y{e}", method.name()), method, e, steps(e)));
        }
        if method != Method::Lpgnn {
            // The released code's trainer, shared by RGNN and its perturbed-data baseline.
            let published = |label: String, e| CellSpec { published: true, ..cell(label, method, e, steps(e)) };
            out.push(published(format!("{}-published-no-noise", method.name()), f64::INFINITY));
            out.extend(EPS_Y.map(|e| published(format!("{}-published-y{e}", method.name()), e)));
        }
    }
    out
}

/// Columns summed per group: Cora as the table, the code's default on the other
/// bag-of-words datasets, none where the columns are integer codes already.
fn group_columns(dataset: &str) -> Option<usize> {
    match dataset {
        "cora" | "planetoid-cora" => Some(25),
        "german" | "student" | "german-nifty" => None,
        _ => Some(70),
    }
}

/// LPGNN's best (Kx, Ky) on Cora at ε_x = 1: the ε_x = 1 row of its `hparams/steps.csv`
/// (REFERENCE §1.1), for the ε_y of [`EPS_Y`].
fn lpgnn_steps(eps_y: f64) -> (usize, usize) {
    const CORA_EPS_X_1: [(f64, (usize, usize)); 4] = [(0.5, (2, 8)), (1.0, (2, 8)), (2.0, (8, 4)), (3.0, (16, 4))];
    CORA_EPS_X_1.iter().find(|(e, _)| *e == eps_y).map_or((2, 8), |&(_, s)| s)
}

/// The scenario overrides of one cell (without seed and setting) and its `setting`.
fn cell_overrides(dataset: &str, cell: &CellSpec) -> (Vec<String>, String) {
    let (method, eps_y) = (cell.method, cell.eps_y);
    let private = eps_y.is_finite();
    let mut o = vec![format!("dataset.name={dataset}")];
    // LPGNN's multi-bit mechanism needs [0, 1]: min-max after grouping (binary grouped
    // columns stay as they are; integer codes are scaled).
    let minmax = method == Method::Lpgnn;
    o.push(match group_columns(dataset) {
        _ if method == Method::NonPrivate => "dataset.preprocess={}".to_string(),
        Some(k) => format!("dataset.preprocess={{group_columns: {k}, minmax: {minmax}}}"),
        None => format!("dataset.preprocess={{minmax: {minmax}}}"),
    });
    let y = if private { format!("{eps_y}") } else { ".inf".into() };
    // Without noise every feature is reported (m = d) and ε_x is ∞.
    let (x, m) = if private { (format!("{EPS_X}"), format!("m: {M}, ")) } else { (".inf".into(), String::new()) };
    let (kx, ky) = cell.steps;
    let published = if cell.published { ", as_published: true" } else { "" };
    o.push(match method {
        Method::NonPrivate => "defenses=[]".to_string(),
        Method::Rgnn => {
            format!("defenses=[{{kind: rgnn, epsilon_x: {x}, {m}epsilon_y: {y}, kx: {kx}, ky: {ky}, clusters: 16, alpha: 1{published}}}]")
        }
        Method::Perturbed if !private && !cell.published => "defenses=[]".to_string(),
        Method::Perturbed => format!("defenses=[{{kind: rgnn, epsilon_x: {x}, {m}epsilon_y: {y}, kx: 0, ky: 0, clusters: 0{published}}}]"),
        Method::Lpgnn => format!("defenses=[{{kind: lpgnn, epsilon_x: {x}, epsilon_y: {y}, kx: {kx}, ky: {ky}, mechanism: mbm}}]"),
    });
    let s = match method {
        Method::NonPrivate => setting(&[("features", "original".into()), ("method", method.name().to_string())]),
        _ => {
            let ex = if private { EPS_X } else { f64::INFINITY };
            let mut pairs = vec![
                ("method", method.name().to_string()),
                ("eps_x", eps(ex)),
                ("eps_y", eps(eps_y)),
                ("kx", kx.to_string()),
                ("ky", ky.to_string()),
            ];
            if cell.published {
                pairs.push(("variant", "as-published".to_string()));
            }
            setting(&pairs)
        }
    };
    (o, s)
}

/// Run the RGNN reproduction and write `reproduce.md` / `reproduce.csv`; returns the
/// results directory.
pub fn rgnn(opts: &TableOptions, out: Option<&Path>, force: bool) -> Result<PathBuf> {
    let all = cells();
    let labels: Vec<&str> = all.iter().map(|c| c.label.as_str()).collect();
    let chosen: Vec<_> = opts.chosen(&labels)?.into_iter().map(|i| &all[i]).collect();
    // Fail on a dataset that cannot be loaded or perturbed before claiming the results
    // directory: one epoch of the first chosen cell of every method.
    for method in [Method::NonPrivate, Method::Rgnn, Method::Lpgnn, Method::Perturbed] {
        if let Some(probe) = chosen.iter().find(|c| c.method == method) {
            let (mut o, _) = cell_overrides(&opts.dataset, probe);
            o.push("train.epochs=1".into());
            super::train_cell(SCENARIO, "reproduce rgnn", &o, &RunOptions { quiet: true, ..opts.run.clone() })?;
        }
    }
    let (dir, results_dir) = super::claim(out, &format!("reproduce-rgnn-{}", opts.dataset), force)?;

    let epochs = opts.epochs.unwrap_or(100);
    let quiet = RunOptions { quiet: true, ..opts.run.clone() };
    let is_cora = matches!(opts.dataset.as_str(), "cora" | "planetoid-cora");
    let mut cells = Cells::default();
    let mut timings = Vec::new();
    for &s in &opts.settings {
        let t = Instant::now();
        let specs: Vec<_> = chosen.iter().map(|c| cell_overrides(&opts.dataset, c)).collect();
        let bases: Vec<(String, Vec<String>)> = chosen.iter().zip(&specs).map(|(c, (base, _))| (c.label.clone(), base.clone())).collect();
        let results = super::seed_runs(
            &dir,
            (SCENARIO, "reproduce rgnn"),
            &bases,
            opts.runs,
            s,
            &s.overrides_with_rounds(epochs, FEDERATED_ROUNDS_PER_10_EPOCHS * epochs.div_ceil(10)),
            &quiet,
        )?;
        for ((c, (_, setting)), runs) in chosen.iter().zip(&specs).zip(results) {
            let value = cora_value(c.method, c.eps_y).filter(|_| is_cora && s == Setting::Centralized);
            for r in runs {
                cells.push(s.name(), "sage", setting, "test_accuracy", 100.0 * r.test_accuracy, value);
            }
        }
        timings.push((s.name().to_string(), t.elapsed().as_secs_f64()));
    }
    let grouping = match group_columns(&opts.dataset) {
        Some(k) => format!("features summed in groups of {k} columns and binarised"),
        None => "features as integer codes (no grouping)".into(),
    };
    let intro = format!(
        "# RGNN reproduction: {}\n\n{} run(s) per cell (seeds 0..{}); mean and 95 % bootstrap half-width of the test accuracy \
         (%). Protocol of karuna-bhaila/RGNN (REFERENCE §1.2): {grouping}, random 50/25/25 split, SAGE 2 × 16 ReLU, Adam \
         (lr 0.01, gradient norm clipped at 5), {epochs} epochs, the epoch of best validation accuracy (on the reconstructed noisy labels). `rgnn`: GRR-FS \
         with m = {M} features per node at ε_x = {EPS_X} each (a node spends m·ε_x = {}), RR on train and validation labels, \
         Kx = Ky = 16, LLP over 16 METIS bags with α = 1. `lpgnn`: LPGNN's multi-bit mechanism at ε_x = {EPS_X} per node on the \
         same features min-max scaled, RR, KProp and the Drop loss with Kx / Ky of LPGNN's Cora table. `perturbed`: GRR-FS and RR as \
         `rgnn`, trained as they are. Rows at ε_x = ε_y = inf: the same method's pipeline without noise (every feature \
         reported truthfully, the same grouping, reconstruction hops, LLP, KProp and selection): what each private row must \
         not beat. `non-private` (features=original): SAGE on the original, ungrouped features, the paper's baseline. `within`: |ours − paper| ≤ max(paper ±, 2 points). `federated`: 10 Louvain clients, \
         each perturbing and reconstructing on its own subgraph (cross-client edges dropped); FedAvg, {} round(s) × {} \
         epoch(s) (5× the centralized epochs: 10 rounds leave the no-noise pipeline under-trained, 58.6 % against 74–79 % at 50), \
         last round scored; no paper value.\n\nDifferences from the released code, on purpose (docs/ldp-graphs.md): γ \
         per feature, not per node; bag proportions from the noisy labels de-biased once (the code de-biases \
         already-reconstructed labels a second time); cross-entropy on the logits (the code soft-maxes twice). The `variant=as-published` rows train RGNN and the perturbed-data baseline as the code does \
         (the defense's `as_published: true`: cross-entropy on softmax outputs, bags of the reconstructed labels de-biased \
         again): the flatter loss costs accuracy at large ε_y and gains it at small ε_y, which is where the paper's \
         numbers sit. The paper does not say which budget its LPGNN baseline had; ours gets ε_x = 1 per node, i.e. less \
         than RGNN's m·ε_x.\n\nLPGNN without noise scores below its private rows (flagged above when it does): with \
         clean labels and Ky ≥ 1 the Drop loss fits only the Ky-hop smoothed predictions, and on clean, unsmoothed-enough \
         features the model fits them with node-wise predictions that are wrong (on Cora, seeds 0–1: 62 / 55 % at Ky = 4, \
         64 / 57 % after 1 000 epochs, 81 / 84 % at Ky = 0, 78 / 80 % with the multi-bit noise at ε_x = 1 and Ky = 4). \
         LPGNN's own table sets Kx = Ky = 0 at ε = ∞ (`reproduce lpgnn`).\n",
        opts.dataset,
        opts.runs,
        opts.runs - 1,
        M as f64 * EPS_X,
        FEDERATED_ROUNDS_PER_10_EPOCHS * epochs.div_ceil(10),
        epochs.min(10),
    );
    let above_baseline = |c: &Cell| above_baseline(&opts.dataset, c);
    Report {
        paper: "rgnn",
        dataset: &opts.dataset,
        cells: &cells,
        intro,
        within: &super::within_accuracy,
        explain: &explain,
        above_baseline: &above_baseline,
        timings,
    }
    .write(&results_dir)?;
    Ok(dir)
}

/// The known cause of a private cell above its method's no-noise row (measured: see
/// docs/reproduction.md, RGNN on the other datasets).
fn above_baseline(dataset: &str, c: &Cell) -> Option<String> {
    let s = c.setting.as_str();
    if s.starts_with("method=lpgnn") {
        Some(
            "LPGNN without noise: with clean labels and Ky ≥ 1 the Drop loss fits only the Ky-hop smoothed predictions \
             (docs/reproduction.md); LPGNN's own table sets Kx = Ky = 0 at ε = ∞"
                .into(),
        )
    } else if s.starts_with("method=rgnn") && matches!(dataset, "facebook" | "german" | "german-nifty") {
        Some(
            "the code's 16 reconstruction hops oversmooth this dense graph without noise (Facebook, 3 seeds: Ky = 0 gives \
             83.3 against 76.4; at Kx = Ky = 2 no noise 83.4 and ε = (1, 3) 81.5, in order; docs/reproduction.md)"
                .into(),
        )
    } else {
        None
    }
}

/// The known cause of a Cora cell outside the paper's tolerance.
fn explain(c: &Cell, mean: f64) -> Option<String> {
    if let Some(few) = super::too_few_runs(c, 5) {
        return Some(few);
    }
    let (_, ci) = super::mean_ci95(&c.values);
    if let Some(p) = c.paper.filter(|p| (p.mean - mean).abs() <= ci) {
        return Some(format!(
            "the paper's {} lies inside our 95 % interval ({mean:.1} ± {ci:.1} over {} runs): a noisy cell",
            p.mean,
            c.values.len()
        ));
    }
    let s = c.setting.as_str();
    if (s.starts_with("method=rgnn") || s.starts_with("method=perturbed")) && !s.ends_with("variant=as-published") {
        Some(
            "the paper's loss: steeper in ε_y than the paper's numbers; the released code's double softmax (the \
             variant=as-published row) flattens the curve toward the paper's"
                .into(),
        )
    } else if s.starts_with("method=lpgnn") {
        Some(
            "the paper gives neither its LPGNN baseline's budget nor its Kx / Ky; ours: ε_x = 1 per node and LPGNN's \
             tuned Cora steps. The paper's ±8–15 point spreads over 5 runs suggest runs that failed to train"
                .into(),
        )
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_and_their_settings() {
        let all = cells();
        let labels: Vec<&str> = all.iter().map(|c| c.label.as_str()).collect();
        // LPGNN's Cora steps at ε_x = 1: (16, 4), (8, 4), (2, 8), (2, 8) → three no-noise rows.
        assert_eq!(labels[..3], ["non-private", "rgnn-no-noise", "rgnn-y3"]);
        assert!(
            labels.contains(&"lpgnn-no-noise-kx16-ky4")
                && labels.contains(&"lpgnn-no-noise-kx2-ky8")
                && labels.contains(&"perturbed-no-noise")
        );
        let find = |l: &str| all.iter().find(|c| c.label == l).unwrap().clone();
        assert_eq!(all.len(), 1 + (1 + 4) + (1 + 4) + (3 + 4) + (1 + 4) + (1 + 4));
        assert_eq!(
            cell_overrides("planetoid-cora", &find("perturbed-published-no-noise")).0[2],
            "defenses=[{kind: rgnn, epsilon_x: .inf, epsilon_y: .inf, kx: 0, ky: 0, clusters: 0, as_published: true}]"
        );
        let (o, s) = cell_overrides("planetoid-cora", &find("rgnn-published-y1"));
        assert_eq!(s, "method=rgnn;eps_x=1;eps_y=1;kx=16;ky=16;variant=as-published");
        assert!(o.iter().any(|x| x.ends_with("alpha: 1, as_published: true}]")), "{o:?}");
        let (o, s) = cell_overrides("planetoid-cora", &find("rgnn-y0.5"));
        assert_eq!(s, "method=rgnn;eps_x=1;eps_y=0.5;kx=16;ky=16");
        assert!(o.contains(&"dataset.preprocess={group_columns: 25, minmax: false}".to_string()));
        let (o, s) = cell_overrides("planetoid-cora", &find("rgnn-no-noise"));
        assert_eq!(s, "method=rgnn;eps_x=inf;eps_y=inf;kx=16;ky=16");
        assert!(
            o.contains(&"defenses=[{kind: rgnn, epsilon_x: .inf, epsilon_y: .inf, kx: 16, ky: 16, clusters: 16, alpha: 1}]".to_string()),
            "{o:?}"
        );
        let (o, s) = cell_overrides("planetoid-cora", &find("non-private"));
        assert_eq!(s, "features=original;method=non-private");
        assert!(o.contains(&"dataset.preprocess={}".to_string()) && o.contains(&"defenses=[]".to_string()));
        assert_eq!(cell_overrides("planetoid-cora", &find("lpgnn-no-noise-kx8-ky4")).1, "method=lpgnn;eps_x=inf;eps_y=inf;kx=8;ky=4");
        assert!(cell_overrides("student", &find("lpgnn-y1")).0.contains(&"dataset.preprocess={minmax: true}".to_string()));
        assert_eq!(cell_overrides("german", &find("lpgnn-y1")).1, "method=lpgnn;eps_x=1;eps_y=1;kx=2;ky=8");
        assert_eq!(cell_overrides("planetoid-cora", &find("perturbed-no-noise")).1, "method=perturbed;eps_x=inf;eps_y=inf;kx=0;ky=0");
        assert_eq!(cora_value(Method::Perturbed, 2.0), Some(PaperValue { mean: 28.0, ci95: Some(1.6) }));
        assert_eq!(cora_value(Method::Rgnn, f64::INFINITY), None);
    }
}

//! What the matrix report knows of its runs, before any rendering: each run's
//! directory read back (`Row`: state and the `RunMetrics` of its `metrics.json`), the
//! cells grouped into attack × defense tables, and their statistics (mean ± 95 % t-CI
//! over seeds). The renderers (`report`: CSV, Markdown, JSON; `figures`: SVG; `html`)
//! sit above it and import it; it imports none of them.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::spec::Matrix;
use super::store;
use crate::error::Result;
use crate::record::{self, AttackScores, RunMetrics, RunState};

/// One run of the matrix as found on disk.
#[derive(Debug, Clone)]
pub struct Row {
    pub cell: usize,
    pub seed: u64,
    pub state: RunState,
    pub metrics: Option<RunMetrics>,
}

/// Read every run's directory under `out`, in run order.
pub fn collect(m: &Matrix, out: &Path) -> Result<Vec<Row>> {
    m.runs()
        .into_iter()
        .map(|(cell, seed)| {
            let dir = store::run_dir(out, &m.cells[cell].id, seed);
            let state = record::state(&dir);
            let metrics = match state {
                RunState::Finished => Some(record::read_summary(&dir.join("metrics.json"))?),
                _ => None,
            };
            Ok(Row { cell, seed, state, metrics })
        })
        .collect()
}

/// The columns of `cells.csv` after the parameter columns and `seed`; the last two are
/// timings (which differ between runs of the same cell).
pub const METRIC_COLUMNS: [&str; 15] = [
    "scored_attack",
    "status",
    "diverged",
    "test_accuracy",
    "test_loss",
    "train_loss",
    "rounds",
    "cos_sim",
    "js_div",
    "uniform_cos_sim",
    "uniform_js_div",
    "epsilon_spent",
    "error",
    "train_seconds",
    "total_seconds",
];

/// The attacks of cell `c` that can report (all but `none`), by name, in order.
pub fn cell_attacks(m: &Matrix, c: usize) -> Vec<String> {
    m.cells[c].scenario.attacks.iter().filter(|a| a.spec.kind() != "none").map(|a| a.name.clone()).collect()
}

pub fn status(state: &RunState) -> &'static str {
    match state {
        RunState::Finished => "finished",
        RunState::Failed(_) => "failed",
        RunState::Missing => "missing",
    }
}

/// Mean and 95 % confidence half-width of the mean (Student's t, n − 1 degrees of
/// freedom); the half-width is `None` for fewer than two values.
pub fn mean_ci95(values: &[f64]) -> (f64, Option<f64>) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, None);
    }
    let var = values.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    use statrs::distribution::ContinuousCDF;
    let t = statrs::distribution::StudentsT::new(0.0, 1.0, n - 1.0).expect("n ≥ 2").inverse_cdf(0.975);
    (mean, Some(t * (var / n).sqrt()))
}

/// A metric over a set of runs: mean ± half-width and the number of runs.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Stat {
    pub mean: f64,
    pub ci95: Option<f64>,
    pub n: usize,
}

impl Stat {
    pub fn of(values: &[f64]) -> Option<Stat> {
        let values: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        if values.is_empty() {
            return None;
        }
        let (mean, ci95) = mean_ci95(&values);
        Some(Stat { mean, ci95, n: values.len() })
    }

    /// `0.912 ± 0.013`, scaled by `scale` (100 for %).
    pub fn show(&self, scale: f64, digits: usize) -> String {
        match self.ci95 {
            Some(h) => format!("{:.*} ± {:.*}", digits, self.mean * scale, digits, h * scale),
            None => format!("{:.*}", digits, self.mean * scale),
        }
    }
}

/// The cells sharing dataset, model and every swept path outside the attack and the
/// defense: one attack × defense table and heat map.
#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// `dataset=cora, model=gcn` (plus other swept paths).
    pub title: String,
    /// File-name form of the title.
    pub slug: String,
    /// Row labels: the defense with its swept parameters, in cell order.
    pub defenses: Vec<String>,
    /// Column labels: each attack (with its swept parameters), in cell order.
    pub attacks: Vec<String>,
    /// `[defense][attack]` → the cell and the attack's name in it (`None`: a cell
    /// without attacks, which has an accuracy but no score).
    pub cells: Vec<Vec<Option<Slot>>>,
}

/// One attack of one cell.
#[derive(Debug, Clone, Serialize)]
pub struct Slot {
    pub cell: usize,
    pub attack: Option<String>,
}

/// The label of a cell's attack or defense (`role` = "attack" / "defense"), with the
/// values of its swept parameters: `ldp-labels (epsilon=1)`.
pub fn role_label(m: &Matrix, c: usize, role: &str) -> String {
    let base = m.param(c, role).unwrap_or("-").to_string();
    let prefix = format!("{role}.");
    let swept: Vec<String> = m
        .columns
        .iter()
        .zip(&m.cells[c].params)
        .filter_map(|(k, v)| Some(format!("{}={}", k.strip_prefix(&prefix)?, v.as_deref()?)))
        .collect();
    if swept.is_empty() { base } else { format!("{base} ({})", swept.join(", ")) }
}

/// The columns of cell `c`: (label, attack name) per attack; one column named by the
/// attack axis for a cell without attacks.
pub fn attack_columns(m: &Matrix, c: usize) -> Vec<(String, Option<String>)> {
    let attacks = cell_attacks(m, c);
    match attacks.len() {
        0 => vec![(role_label(m, c, "attack"), None)],
        1 => vec![(role_label(m, c, "attack"), attacks.into_iter().next())],
        _ => attacks.into_iter().map(|a| (a.clone(), Some(a))).collect(),
    }
}

pub fn groups(m: &Matrix) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for c in 0..m.cells.len() {
        let mut parts =
            vec![format!("dataset={}", m.param(c, "dataset").unwrap_or("-")), format!("model={}", m.param(c, "model").unwrap_or("-"))];
        for (k, v) in m.columns.iter().zip(&m.cells[c].params).skip(4) {
            if !k.starts_with("attack.") && !k.starts_with("defense.") {
                parts.push(format!("{k}={}", v.as_deref().unwrap_or("-")));
            }
        }
        let title = parts.join(", ");
        let g = match out.iter_mut().position(|g| g.title == title) {
            Some(i) => &mut out[i],
            None => {
                let slug = slug(&parts.join("_"));
                out.push(Group { title, slug, defenses: vec![], attacks: vec![], cells: vec![] });
                out.last_mut().expect("pushed")
            }
        };
        let d = role_label(m, c, "defense");
        let di = g.defenses.iter().position(|x| *x == d).unwrap_or_else(|| {
            g.defenses.push(d);
            g.cells.push(vec![None; g.attacks.len()]);
            g.defenses.len() - 1
        });
        for (label, attack) in attack_columns(m, c) {
            let ai = g.attacks.iter().position(|x| *x == label).unwrap_or_else(|| {
                g.attacks.push(label);
                g.cells.iter_mut().for_each(|r| r.push(None));
                g.attacks.len() - 1
            });
            g.cells[di][ai] = Some(Slot { cell: c, attack });
        }
    }
    out
}

/// A file-name-safe form: letters, digits, `-`, `_`, `.` kept, the rest `_`.
pub fn slug(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect()
}

/// Per cell: the statistics of each metric over its finished seeds.
#[derive(Debug, Clone, Serialize)]
pub struct CellStats {
    pub id: String,
    pub finished: usize,
    pub failed: usize,
    pub missing: usize,
    pub test_accuracy: Option<Stat>,
    pub epsilon_spent: Option<f64>,
    /// Calibrations under which its ε is no DP guarantee (flagged in the report).
    pub calibrations: Vec<String>,
    pub attacks: Vec<AttackStats>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AttackStats {
    pub attack: String,
    pub cos_sim: Option<Stat>,
    pub js_div: Option<Stat>,
    pub uniform_cos_sim: Option<Stat>,
}

impl CellStats {
    pub fn attack(&self, name: &str) -> Option<&AttackStats> {
        self.attacks.iter().find(|a| a.attack == name)
    }

    /// The statistics of a slot: its attack's, if it has one.
    pub fn slot(&self, slot: &Slot) -> Option<&AttackStats> {
        slot.attack.as_deref().and_then(|a| self.attack(a))
    }
}

pub fn cell_stats(m: &Matrix, rows: &[Row]) -> Vec<CellStats> {
    (0..m.cells.len())
        .map(|c| {
            let rs: Vec<&Row> = rows.iter().filter(|r| r.cell == c).collect();
            let ms: Vec<&RunMetrics> = rs.iter().filter_map(|r| r.metrics.as_ref()).collect();
            let attacks = cell_attacks(m, c)
                .into_iter()
                .map(|a| {
                    let get = |f: &dyn Fn(&AttackScores) -> Option<f64>| {
                        Stat::of(&ms.iter().filter_map(|x| x.attack(&a).and_then(f)).collect::<Vec<_>>())
                    };
                    AttackStats {
                        cos_sim: get(&|s| s.cos_sim),
                        js_div: get(&|s| s.js_div),
                        uniform_cos_sim: get(&|s| s.uniform_cos_sim),
                        attack: a,
                    }
                })
                .collect();
            CellStats {
                id: m.cells[c].id.clone(),
                finished: ms.len(),
                failed: rs.iter().filter(|r| matches!(r.state, RunState::Failed(_))).count(),
                missing: rs.iter().filter(|r| r.state == RunState::Missing).count(),
                test_accuracy: Stat::of(&ms.iter().map(|x| x.test_accuracy).collect::<Vec<_>>()),
                epsilon_spent: ms.iter().filter_map(|x| x.epsilon_spent).reduce(f64::max),
                calibrations: {
                    let mut c: Vec<String> = ms.iter().flat_map(|x| x.calibrations.iter().cloned()).collect();
                    c.sort();
                    c.dedup();
                    c
                },
                attacks,
            }
        })
        .collect()
}

/// The three attack × defense tables of a group, as (title, header row, body rows).
pub struct Table {
    pub title: &'static str,
    pub note: &'static str,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

pub fn group_tables(g: &Group, stats: &[CellStats]) -> Vec<Table> {
    let metric = |title, note, f: &dyn Fn(&CellStats, &Slot) -> Option<String>| Table {
        title,
        note,
        header: std::iter::once("defense \\ attack".to_string()).chain(g.attacks.iter().cloned()).collect(),
        rows: g
            .defenses
            .iter()
            .zip(&g.cells)
            .map(|(d, row)| {
                std::iter::once(d.clone())
                    .chain(row.iter().map(|s| s.as_ref().and_then(|s| f(&stats[s.cell], s)).unwrap_or_else(|| "–".into())))
                    .collect()
            })
            .collect(),
    };
    vec![
        metric(
            "Attack score: cosine similarity",
            "mean ± 95 % CI over seeds; 1 = the inferred label distribution points exactly at the true one; `–`: no attack reported",
            &|c, s| c.slot(s)?.cos_sim.map(|x| x.show(1.0, 3)),
        ),
        metric(
            "Attack score: Jensen–Shannon divergence (nats)",
            "mean ± 95 % CI over seeds; 0 = exact, ln 2 ≈ 0.693 at most",
            &|c, s| c.slot(s)?.js_div.map(|x| x.show(1.0, 4)),
        ),
        metric("Test accuracy (%)", "global model after the last round, mean ± 95 % CI over seeds", &|c, _| {
            c.test_accuracy.map(|x| x.show(100.0, 1))
        }),
    ]
}

/// How a report was produced (shown in its header).
#[derive(Debug, Clone, Default, Serialize)]
pub struct Provenance {
    /// Seconds the runs of this invocation took (none for `--collect`).
    pub wall_seconds: Option<f64>,
    /// Runs this invocation ran, and how many it skipped as already finished.
    pub ran: usize,
    pub skipped: usize,
    pub jobs: Option<usize>,
    /// Peak resident memory of this process, MiB (Linux).
    pub peak_memory_mib: Option<f64>,
}

/// What the report says about failed and diverged runs (Markdown and HTML alike).
pub const FAILED_NOTE: &str = "A rerun of the matrix tries them again.";
pub const DIVERGED_NOTE: &str = "Finished, but the final train or test loss is not finite: the numbers of these cells are those of a blown-up \
     training (its accuracy, and attacks reading NaN updates), not of the defense.";

/// `cell seed s` of every finished run whose training diverged.
pub fn diverged_runs(m: &Matrix, rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter(|r| r.metrics.as_ref().is_some_and(RunMetrics::diverged))
        .map(|r| format!("{} seed {}", m.cells[r.cell].id, r.seed))
        .collect()
}

/// Counts of (finished, failed, missing) runs.
pub fn counts(rows: &[Row]) -> (usize, usize, usize) {
    let n = |s: &str| rows.iter().filter(|r| status(&r.state) == s).count();
    (n("finished"), n("failed"), n("missing"))
}

pub fn provenance_line(m: &Matrix, rows: &[Row], prov: &Provenance) -> String {
    let (fin, failed, missing) = counts(rows);
    let mut s = format!(
        "{} cells × {} seed(s) = {} runs: {fin} finished, {failed} failed, {missing} missing.",
        m.cells.len(),
        m.seeds.len(),
        rows.len()
    );
    if let Some(w) = prov.wall_seconds {
        write!(s, " This invocation ran {} run(s) ({} already finished were skipped) in {w:.1} s", prov.ran, prov.skipped).expect("string");
        if let Some(j) = prov.jobs {
            write!(s, " with {j} at a time").expect("string");
        }
        if prov.ran > 0 && w > 0.0 {
            write!(s, " ({:.1} runs/min)", prov.ran as f64 * 60.0 / w).expect("string");
        }
        if let Some(mb) = prov.peak_memory_mib {
            write!(s, "; peak memory {mb:.0} MiB").expect("string");
        }
        s.push('.');
    } else {
        s.push_str(" Collected from the run directories (`--collect`).");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn student_t_interval_of_the_mean() {
        // s = 1, n = 3: t(0.975, 2) = 4.302653 → 4.302653 / √3.
        let (m, h) = mean_ci95(&[1.0, 2.0, 3.0]);
        assert_eq!(m, 2.0);
        assert!((h.unwrap() - 2.484138).abs() < 1e-6, "{h:?}");
        // n = 10 of 0/1 alternating: s = 0.527, t(0.975, 9) = 2.262157.
        let v: Vec<f64> = (0..10).map(|i| (i % 2) as f64).collect();
        let (m, h) = mean_ci95(&v);
        assert_eq!(m, 0.5);
        assert!((h.unwrap() - 2.262157 * (10.0f64 / 36.0).sqrt() / 10f64.sqrt()).abs() < 1e-6, "{h:?}");
        assert_eq!(mean_ci95(&[0.7]), (0.7, None));
        assert_eq!(Stat::of(&[f64::NAN, 0.5]).map(|s| (s.mean, s.n)), Some((0.5, 1)));
        assert!(Stat::of(&[]).is_none());
        assert_eq!(slug("dataset=cora, model=gcn"), "dataset_cora__model_gcn");
        assert_eq!(Stat::of(&[0.5, 0.5]).unwrap().show(100.0, 1), "50.0 ± 0.0");
    }
}

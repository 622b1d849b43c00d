//! How fast this machine runs what the time model charges: `--dry-run`'s time estimates
//! are [`estimate::time`] (one core of the machine the model was fitted on) scaled part
//! by part by this machine's factors, measured by two short fixed runs.
//!
//! The plain probe is a real run shaped like the runs the model is fitted to (EC-LDA's
//! Cora setting: 2 708 nodes, 1 433 sparse binary features, 10 Fluid clients, the
//! 512/64 GCN with a head, E = 5) on a generated graph, for 3 rounds on one thread —
//! timed (best of five) and divided by the model's estimate of that same run: training's
//! factor. The defended probe is the same with DP-GNN for one round: what it takes
//! beyond its base part at that factor, over the model's defense part, is the factor of
//! the defenses' own work. The dense probe is the same with RGNN's dense features for
//! one round: what it takes beyond its other parts, over the model's dense products, is
//! gemm's factor (on the AVX-512 host gemm gained less on the model's machine than the
//! sparse kernels did: RGNN's and Solitude's runs in the Cora matrix took 1.4–1.6× the
//! estimate with training's factor applied to their products). Together about 4 s; they
//! need no data. `FGL_TIME_FACTOR` pins all three instead (a user who knows their
//! machine, or two front ends that must print the same plan).
//!
//! Runs that will share the machine are probed sharing it: as many copies of each probe
//! side by side as the plan keeps cores busy (two runs at once on a 2-core VM took 1.1–1.3×
//! as long each as alone, measured 2026-11-27: they share a 32 MB L3, memory and the
//! host), so the factors carry that slowdown.

use std::time::Instant;

use rand::seq::index;

use crate::backend;
use crate::data::{CsrMatrix, Dataset, Features};
use crate::error::{Error, Result};
use crate::estimate::{self, DataSize};
use crate::rng;
use crate::run::{self, RunOptions};
use crate::scenario::Scenario;

/// The environment variable that pins the factor.
pub const FACTOR_VAR: &str = "FGL_TIME_FACTOR";

/// The probe's scenario; its features are replaced by [`FEATURES`] sparse ones.
const PROBE: &str = "
seed: 0
dataset:
  name: synthetic
  synthetic: {nodes: 2708, classes: 7, avg_degree: 3.9, homophily: 0.8, feature_dim: 1, feature_signal: 0.4}
split: {normal_below: 0.8, scope: per_client}
partition: {method: fluid, clients: 10}
model: {arch: gcn, layers: 2, hidden: [512, 64], dropout: 0.0, head: true}
train: {optimizer: sgd, lr: 0.1, momentum: 0.0, weight_decay: 0.0, epochs: 5}
federation: {rounds: 3, weighting: all}
";

/// Cora's bag of words: 1 433 columns, 18 ones a row on average (1.3 %).
const FEATURES: (usize, usize) = (1433, 18);

/// The second probe adds a defense to the first: DP-GNN as the Cora matrix runs it
/// (per-node gradients and a noise draw per parameter each step), one round of one epoch.
const DEFENDED: [&str; 4] = [
    "defenses=[{kind: dp-gnn, sigma: null, target_epsilon: 1, max_degree: 5, clip: 0.1, batch_size: 64, small_clients: full-batch}]",
    "train.lr=0.5",
    "train.epochs=1",
    "federation.rounds=1",
];

/// The third probe adds RGNN's dense features (GRR-FS reports, no reconstruction hops,
/// no LLP term) to the first, one round: its time is mostly gemm's X·W and Xᵀ·∂Z.
const DENSE: [&str; 3] =
    ["defenses=[{kind: rgnn, epsilon_x: 8, m: 10, epsilon_y: .inf, kx: 0, ky: 0, clusters: 0}]", "train.lr=0.01", "federation.rounds=1"];

/// This machine against the time model's, per part of [`estimate::Time`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Speed {
    /// Measured seconds over modelled seconds of training and the rest of a plain run.
    pub base: f64,
    /// The same for the defenses' own work: it gains less from wider vectors and
    /// faster arithmetic (noise draws, per-arc work) than training's products.
    pub defenses: f64,
    /// The same for training's dense products (gemm).
    pub dense: f64,
    /// The probes' best times and the model's estimates of them; `None` when pinned.
    pub probe: Option<Probes>,
}

/// What the two probe runs took and what the model said of them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Probes {
    pub plain: (f64, estimate::Time),
    pub defended: (f64, estimate::Time),
    pub dense: (f64, estimate::Time),
    /// Copies of each probe run side by side (their mean best time is taken).
    pub side_by_side: usize,
}

impl Speed {
    /// An estimate of the model's machine in seconds of this one, all on one core.
    pub fn scale(&self, t: estimate::Time) -> f64 {
        self.wall(t, 1)
    }

    /// The same run's wall time on `cores` cores ([`estimate::busy_cores`]): all but its
    /// serial part divides among them.
    pub fn wall(&self, t: estimate::Time, cores: usize) -> f64 {
        let cores = cores.max(1) as f64;
        t.serial * self.base + ((t.base - t.serial) * self.base + t.dense * self.dense + t.defenses * self.defenses) / cores
    }

    /// One line saying where the factors come from.
    pub fn describe(&self) -> String {
        match self.probe {
            Some(Probes {
                plain: (plain, plain_model),
                defended: (defended, defended_model),
                dense: (dense, dense_model),
                side_by_side,
            }) => format!(
                "times are the cost model's scaled to this machine by three probe runs{}: a plain one took {plain:.2} s where the model says {:.2} s \
                 (training ×{:.2}), one with DP-GNN {defended:.2} s where it says {:.2} s (defenses' work ×{:.2}), one with dense features \
                 {dense:.2} s where it says {:.2} s (dense products ×{:.2}); {FACTOR_VAR} pins all three",
                match side_by_side {
                    1 => String::new(),
                    k => format!(" ({k} copies of each side by side, as the runs will share the cores)"),
                },
                plain_model.total(),
                self.base,
                defended_model.total(),
                self.defenses,
                dense_model.total(),
                self.dense
            ),
            None => format!("times are the cost model's × {:.2} ({FACTOR_VAR})", self.base),
        }
    }
}

/// The factors for runs that keep `busy` cores busy together (a matrix's runs at once
/// times their threads, no more than the cores): `FGL_TIME_FACTOR` for both where set,
/// else the probes', run `busy` side by side and measured once per process and count (a
/// Python session's plans all use the first ones).
pub fn measure(busy: usize) -> Result<Speed> {
    static PROBED: std::sync::Mutex<Vec<(usize, Speed)>> = std::sync::Mutex::new(Vec::new());
    let busy = busy.clamp(1, crate::backend::available_cores());
    match std::env::var(FACTOR_VAR) {
        Ok(text) => pinned(&text),
        Err(std::env::VarError::NotPresent) => {
            let mut probed = PROBED.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(&(_, s)) = probed.iter().find(|(k, _)| *k == busy) {
                return Ok(s);
            }
            let s = probe(busy)?;
            probed.push((busy, s));
            Ok(s)
        }
        Err(e) => Err(Error::param(FACTOR_VAR, format!("{e}; a number > 0, e.g. 0.5 on a machine twice as fast as the model's"))),
    }
}

fn pinned(text: &str) -> Result<Speed> {
    match text.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f > 0.0 => Ok(Speed { base: f, defenses: f, dense: f, probe: None }),
        _ => Err(Error::param(FACTOR_VAR, format!("`{text}` is not a number > 0 (e.g. 0.5 on a machine twice as fast as the model's)"))),
    }
}

/// The plain probe gives the base factor; the defended one, less its base part at that
/// factor, the defenses'; the dense one, less its other parts at those factors, the
/// dense products' (each kept within 1/4 … 4 × the base: a noisy probe never makes a
/// part free or dominant). `side_by_side` copies of each probe run at once, one thread
/// each, the plain ones together, then the defended ones, then the dense ones.
fn probe(side_by_side: usize) -> Result<Speed> {
    // Best of five (three for the longer dense probe): on a shared machine a single run
    // may take a third longer.
    let plain = together(side_by_side, 5, &[])?;
    let defended = together(side_by_side, 5, &DEFENDED)?;
    let dense = together(side_by_side, 3, &DENSE)?;
    let base = plain.0 / plain.1.total();
    let clamp = |f: f64| f.clamp(base / 4.0, base * 4.0);
    let defenses = clamp((defended.0 - base * defended.1.base) / defended.1.defenses);
    let gemm = clamp((dense.0 - base * dense.1.base - defenses * dense.1.defenses) / dense.1.dense);
    Ok(Speed { base, defenses, dense: gemm, probe: Some(Probes { plain, defended, dense, side_by_side }) })
}

/// [`best_of`] `reps` in `copies` threads at once: their mean best time.
fn together(copies: usize, reps: usize, sets: &[&str]) -> Result<(f64, estimate::Time)> {
    let results: Vec<Result<(f64, estimate::Time)>> = match copies {
        0 | 1 => vec![best_of(reps, sets)],
        k => std::thread::scope(|scope| {
            let handles: Vec<_> = (0..k).map(|_| scope.spawn(|| best_of(reps, sets))).collect();
            handles.into_iter().map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
        }),
    };
    let results = results.into_iter().collect::<Result<Vec<_>>>()?;
    let mean = results.iter().map(|r| r.0).sum::<f64>() / results.len() as f64;
    Ok((mean, results[0].1))
}

/// The best of `reps` runs of [`PROBE`] with `sets` on one thread, and the model's
/// estimate of it.
fn best_of(reps: usize, sets: &[&str]) -> Result<(f64, estimate::Time)> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let scenario = Scenario::parse(PROBE, "<speed probe>", &sets)?;
    let opts = RunOptions { threads: Some(1), quiet: true, ..RunOptions::default() };
    let mut best = f64::INFINITY;
    let mut modelled = None;
    for _ in 0..reps {
        let t = Instant::now();
        backend::with_threads(Some(1), || {
            let dataset = probe_dataset(&scenario)?;
            modelled = Some(estimate::time(&scenario, &DataSize::of_dataset(&dataset)));
            let prepared = run::prepare_dataset(&scenario, dataset, &mut |_| {})?;
            run::train(&scenario, &prepared, &opts)
        })?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    Ok((best, modelled.expect("at least one run")))
}

/// The scenario's generated graph with sparse binary features of Cora's shape.
fn probe_dataset(scenario: &Scenario) -> Result<Dataset> {
    let mut dataset = crate::data::synthetic::generate(&scenario.synthetic(), scenario.seed)?;
    let (cols, per_row) = FEATURES;
    let n = dataset.num_nodes();
    let mut r = rng::derive(scenario.seed, "speed-probe-features", &[]);
    let mut indices = Vec::with_capacity(n * per_row);
    let mut indptr = vec![0];
    for _ in 0..n {
        let mut row: Vec<u32> = index::sample(&mut r, cols, per_row).into_iter().map(|c| c as u32).collect();
        row.sort_unstable();
        indices.extend(row);
        indptr.push(indices.len());
    }
    let values = vec![1.0; indices.len()];
    dataset.features = Some(Features::Sparse(CsrMatrix::canonical(n, cols, indptr, indices, values)));
    Ok(dataset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_factor_must_be_a_positive_number() {
        assert_eq!(pinned(" 0.5 ").unwrap(), Speed { base: 0.5, defenses: 0.5, dense: 0.5, probe: None });
        let t = estimate::Time { base: 10.0, defenses: 2.0, serial: 4.0, dense: 4.0 };
        assert_eq!(pinned("0.5").unwrap().scale(t), 8.0);
        // On 2 cores: the serial 4 s of the base alone, the rest halved.
        let s = Speed { base: 0.5, defenses: 0.25, dense: 1.0, probe: None };
        assert_eq!(s.wall(t, 1), 9.5);
        assert_eq!(s.wall(t, 2), 0.5 * 4.0 + (0.5 * 6.0 + 1.0 * 4.0 + 0.25 * 2.0) / 2.0);
        for bad in ["0", "-1", "nan", "inf", "fast", ""] {
            let e = pinned(bad).unwrap_err().to_string();
            assert!(e.contains(FACTOR_VAR) && e.contains("> 0"), "{bad}: {e}");
        }
    }

    /// The probes run and the factors are what their times say: the plain probe's time
    /// over its estimate; the defended probe's time, less its base part at that factor,
    /// over its defense part; the dense probe's, less its base and defense parts at
    /// those factors, over its dense part; [`measure`] probes once per process and count
    /// of copies side by side.
    #[test]
    fn the_probes_time_real_runs_against_their_estimates() {
        let s = probe(1).unwrap();
        let p = s.probe.unwrap();
        let ((plain, plain_model), (defended, defended_model), (dense, dense_model)) = (p.plain, p.defended, p.dense);
        assert!(plain > 0.0 && plain_model.defenses == 0.0 && plain_model.dense == 0.0, "{s:?}");
        assert!((s.base - plain / plain_model.total()).abs() < 1e-12, "{s:?}");
        assert!(dense_model.dense > dense_model.base, "gemm's products are most of the dense probe's: {s:?}");
        let d = (dense - s.base * dense_model.base - s.defenses * dense_model.defenses) / dense_model.dense;
        assert!((s.dense - d.clamp(s.base / 4.0, 4.0 * s.base)).abs() < 1e-12, "{s:?}");
        assert!(defended_model.defenses > 10.0 * defended_model.base, "DP-GNN's work is most of the second probe's: {s:?}");
        let g = (defended - s.base * defended_model.base) / defended_model.defenses;
        assert!((s.defenses - g.clamp(s.base / 4.0, 4.0 * s.base)).abs() < 1e-12, "{s:?}");
        assert!((s.scale(defended_model) - defended).abs() < 1e-9 || s.defenses != g, "the factors give back the probe's time: {s:?}");
        for f in [s.base, s.defenses, s.dense] {
            assert!(s.describe().contains(&format!("×{f:.2}")), "{}", s.describe());
        }
        if std::env::var(FACTOR_VAR).is_err() {
            assert_eq!(measure(1).unwrap(), measure(1).unwrap(), "probed once");
            // Runs sharing the cores are probed sharing them, once per count.
            let k = 2.min(crate::backend::available_cores());
            let two = measure(2).unwrap();
            assert_eq!((two.probe.unwrap().side_by_side, two), (k, measure(2).unwrap()));
            assert_eq!(two.describe().contains("2 copies of each side by side"), k == 2, "{}", two.describe());
        }
    }
}

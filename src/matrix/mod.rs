//! `fgl-sim matrix`: every attack against every defense, over datasets, models, swept
//! parameters and seeds, as one resumable command with one report.
//!
//! - [`spec`]: the matrix file and its expansion into cells (validated before any runs);
//! - [`store`]: one directory per run, written whole or not at all;
//! - this file: running the missing runs, several at once, with progress; the estimate
//!   of `--dry-run`;
//! - [`select`]: `--only`, the slice of the cells to run;
//! - [`jobs`]: `--emit-jobs`, the runs as `fgl-sim run` commands for other schedulers;
//! - [`report`] (with [`figures`] and [`html`]): the report, from the run directories alone.

pub mod figures;
pub mod html;
pub mod jobs;
pub mod report;
pub mod select;
pub mod spec;
pub mod stats;
pub mod store;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::record::{self, RunState};
pub use spec::{BuiltCell, Cell, Matrix};

use crate::backend;
use crate::error::{Error, Result};
use crate::fed::Progress;
use crate::fed::checkpoint::SharedRounds;
use crate::run::{self, RunOptions};

/// Run every job, several at once, and return the results in job order. An experiment
/// is many independent runs, and one run on all cores leaves cores idle through its
/// serial stretches (FedAvg's averaging, the attack's server work, small clients); one
/// run per core keeps them busy. At most `max_workers` jobs run at once (default one per
/// thread); `run` gets the job and its share of `threads` (default all cores). Results do not
/// depend on either: runs are independent and identical at any thread count. Jobs start
/// in decreasing `cost` (ties in job order), so that no worker is left alone with a long
/// run at the end. After a failure no new job starts, and the first failed job's error
/// (in job order) is returned.
pub(crate) fn run_concurrently<J: Sync, T: Send>(
    jobs: &[J],
    threads: Option<usize>,
    max_workers: Option<usize>,
    cost: impl Fn(&J) -> u32,
    run: impl Fn(&J, usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let threads = threads.unwrap_or_else(backend::available_cores).max(1);
    let workers = threads.min(max_workers.unwrap_or(usize::MAX)).min(jobs.len()).max(1);
    let per_job = (threads / workers).max(1);
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&jobs[i])));
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Vec<std::sync::Mutex<Option<Result<T>>>> = jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    if k >= jobs.len() || failed.load(Ordering::SeqCst) {
                        break;
                    }
                    let i = order[k];
                    let r = run(&jobs[i], per_job);
                    if r.is_err() {
                        failed.store(true, Ordering::SeqCst);
                    }
                    *slots[i].lock().expect("one writer per slot") = Some(r);
                }
            });
        }
    });
    let results: Vec<Option<Result<T>>> = slots.into_iter().map(|m| m.into_inner().expect("workers finished")).collect();
    if let Some(i) = results.iter().position(|r| matches!(r, Some(Err(_)))) {
        return Err(results.into_iter().nth(i).flatten().and_then(Result::err).expect("an error"));
    }
    // No failure, so every job ran.
    Ok(results.into_iter().map(|r| r.and_then(Result::ok).expect("a result")).collect())
}

/// Options of `fgl-sim matrix` beside the file.
#[derive(Debug, Clone, Default)]
pub struct MatrixOptions {
    pub data_dir: Option<PathBuf>,
    /// The report's directory (default `results/<matrix name>`).
    pub out: Option<PathBuf>,
    /// Runs at once (default: one per core); each gets cores / jobs threads.
    pub jobs: Option<usize>,
    pub quiet: bool,
    /// Save each run's state every N rounds under <out>/checkpoints/ (and always when
    /// stopped); an interrupted run goes on from its checkpoint when the matrix is rerun.
    pub checkpoint_every: Option<usize>,
    /// Set (by a signal) to stop every run at its next round boundary, saving checkpoints.
    pub stop: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// Refuse, before any run, a matrix whose runs at once would exceed this many bytes by
    /// the estimate (the largest runs, `--jobs` of them together); `None`: no check.
    pub max_memory: Option<f64>,
    /// A caller's hook, told (runs finished, runs to do) after each run (the Python
    /// package's progress bar); the bar on a terminal is drawn either way.
    pub progress: Progress,
    /// `--only`: run (and plan) the selected cells' runs alone; the report still covers
    /// every cell.
    pub only: select::Selection,
    /// `--no-shared-rounds`: run every run from round 1, instead of running once the
    /// rounds that runs differing only in their attacks have in common ([`families`]).
    pub no_shared_rounds: bool,
}

impl MatrixOptions {
    pub fn out_dir(&self, m: &Matrix) -> PathBuf {
        self.out.clone().unwrap_or_else(|| Path::new("results").join(&m.name))
    }
}

/// What a direct run did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub out: PathBuf,
    pub ran: usize,
    pub skipped: usize,
    pub failed: usize,
    pub wall_seconds: f64,
    /// Every run as found on disk afterwards, in run order.
    pub rows: Vec<stats::Row>,
}

/// Run every run of `m` that has not finished under the output directory (failed ones
/// again), then write the report. Runs that fail are recorded and the others go on; the
/// caller decides what a failure means (the report is written either way). The longest
/// runs (by the `--dry-run` estimate) start first.
pub fn run(m: &Matrix, opts: &MatrixOptions) -> Result<Outcome> {
    run_in(m, &opts.out_dir(m), opts)
}

/// [`run`] into `out`.
pub fn run_in(m: &Matrix, out: &Path, opts: &MatrixOptions) -> Result<Outcome> {
    // Each cell's graph size, once: the time estimates order the runs, the memory
    // estimates check them.
    let sizes = sizes(m, opts);
    let estimate: Vec<u32> = estimates(m, &sizes).into_iter().map(|t| t.map_or(0, |s| (s * 1e3).min(u32::MAX as f64) as u32)).collect();
    execute_sized(m, out, opts, &|c| estimate[c], &sizes)
}

/// [`run_in`] with the cells' graph `sizes` (for the memory check), the runs of cell `c`
/// started in decreasing `cost(c)`.
fn execute_sized(
    m: &Matrix,
    out: &Path,
    opts: &MatrixOptions,
    cost: &(dyn Fn(usize) -> u32 + Sync),
    sizes: &[Option<crate::estimate::DataSize>],
) -> Result<Outcome> {
    opts.only.check(m)?;
    let out = out.to_path_buf();
    if out.exists() && !out.is_dir() {
        return Err(Error::output(&out, "exists and is not a directory"));
    }
    store::check_not_stale(m, &out)?;
    // One writer at a time: a second matrix (or run) on this directory is refused.
    let _lock = crate::results::DirLock::acquire(&out)?;
    store::remove_leftovers(&out);
    let all = m.runs();
    let todo: Vec<(usize, u64)> = all
        .iter()
        .copied()
        .filter(|&(c, s)| opts.only.selects(m, c) && record::state(&store::run_dir(&out, &m.cells[c].id, s)) != RunState::Finished)
        .collect();
    let skipped = all.iter().filter(|&&(c, _)| opts.only.selects(m, c)).count() - todo.len();
    let jobs = opts.jobs.unwrap_or_else(backend::available_cores).max(1);
    // `jobs` workers at most, each with its share of the cores (`--jobs 1` on 2 cores:
    // one run at a time on 2 threads; it used to start 2 runs of 1 thread, as `--jobs 2`).
    let threads = jobs * (backend::available_cores() / jobs).max(1);
    if let Some(limit) = opts.max_memory {
        check_memory(m, sizes, &todo, jobs, threads / jobs.min(todo.len()).max(1), limit)?;
    }
    let show = !opts.quiet && std::io::stderr().is_terminal();
    let multi = indicatif::MultiProgress::with_draw_target(if show {
        indicatif::ProgressDrawTarget::stderr()
    } else {
        indicatif::ProgressDrawTarget::hidden()
    });
    let bar = multi.add(indicatif::ProgressBar::new(todo.len() as u64));
    bar.set_style(
        indicatif::ProgressStyle::with_template("runs {pos}/{len} [{bar:30}] {elapsed_precise} ETA {eta_precise} {msg}")
            .expect("template")
            .progress_chars("=> "),
    );
    if skipped > 0 {
        bar.set_message(format!("({skipped} already finished)"));
    }
    let t = Instant::now();
    let finished = std::sync::atomic::AtomicUsize::new(0);
    let families = if opts.no_shared_rounds {
        todo.iter().map(|&r| Family { runs: vec![r], shared: 0, key: String::new(), tails: vec![0], leads_tail: false }).collect()
    } else {
        families(m, &todo)
    };
    run_concurrently(
        &families,
        Some(threads),
        Some(jobs),
        |f| f.runs.iter().map(|&(c, _)| cost(c)).fold(0u32, u32::saturating_add),
        |family, threads| {
            // The first run to pass the shared rounds leaves its state; the others start from it.
            let shared = (family.shared > 0).then(|| Arc::new(SharedRounds::new(family.shared, family.key.clone())));
            for &(c, seed) in &family.runs {
                if opts.stop.as_ref().is_some_and(|s| s.load(std::sync::atomic::Ordering::SeqCst)) {
                    return Err(Error::Interrupted("stopped before this run started".into()));
                }
                let cell = &m.cells[c];
                let line = multi.add(indicatif::ProgressBar::new_spinner());
                line.set_style(indicatif::ProgressStyle::with_template("  {msg}").expect("template"));
                let name = format!("{} seed {seed}", cell.id);
                line.set_message(name.clone());
                let hook_line = line.clone();
                let hook: Arc<dyn Fn(usize, usize) + Send + Sync> =
                    Arc::new(move |r, n| hook_line.set_message(format!("{name}: round {r}/{n}")));
                run_one(m, c, seed, &out, opts, threads, Progress::Hook(hook), shared.clone())?;
                line.finish_and_clear();
                multi.remove(&line);
                bar.inc(1);
                if let Progress::Hook(hook) = &opts.progress {
                    hook(finished.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1, todo.len());
                }
            }
            Ok(())
        },
    )
    .map_err(|e| match e {
        Error::Interrupted(_) => Error::Interrupted(format!(
            "the runs in progress stopped at a round boundary, their states saved under {}; run the same command again to go on",
            out.join("checkpoints").display()
        )),
        e => e,
    })?;
    bar.finish_and_clear();
    let wall_seconds = t.elapsed().as_secs_f64();
    let rows = stats::collect(m, &out)?;
    let prov = stats::Provenance {
        wall_seconds: Some(wall_seconds),
        ran: todo.len(),
        skipped,
        jobs: Some(jobs),
        peak_memory_mib: backend::peak_rss_mib(),
    };
    report::write(m, &out, &rows, &prov)?;
    // Failed runs are retried, so every failure on disk now is one of this invocation's.
    let (_, failed, _) = stats::counts(&rows);
    Ok(Outcome { out, ran: todo.len(), skipped, failed, wall_seconds, rows })
}

/// Runs that differ only in their attacks, and the leading rounds they share.
struct Family {
    runs: Vec<(usize, u64)>,
    /// Rounds run once for them all (0: none).
    shared: usize,
    /// What they have in common ([`run::shared_key`]).
    key: String,
    /// Each run's trailing rounds of plain FedAvg ([`crate::fed::ServerStrategy::plain_tail`]).
    tails: Vec<usize>,
    /// Whether the first run keeps FedAvg's course throughout (a passive run), leaving
    /// its round-free rounds after the shared ones for the others.
    leads_tail: bool,
}

/// The runs `todo` grouped into families of runs that differ only in their attacks
/// (same cell parameters otherwise, same seed), in `todo` order but for those that
/// keep FedAvg's course throughout (passive attacks), which go first. A family shares
/// the rounds before any of its attacks acts
/// ([`crate::fed::ServerStrategy::plain_rounds`]): its first run leaves its state
/// after them, the others go on from it, to the numbers they give from round 1. In the
/// shipped matrices each defense's EC-LDA run and its passive attacks' run share rounds
/// 1–99 of 200. The first run also leaves its round-free rounds after those: where
/// EC-LDA's discarded round 100 leaves the federation as round 99 did, its rounds
/// 101–200 are the passive run's 100–199 ([`crate::fed::ServerStrategy::plain_tail`]).
fn families(m: &Matrix, todo: &[(usize, u64)]) -> Vec<Family> {
    let mut families: Vec<(Family, Vec<(bool, usize)>)> = Vec::new();
    for &(c, seed) in todo {
        let scenario = m.cells[c].scenario_for(seed);
        let rounds = scenario.federation.rounds;
        let server = scenario.server();
        let plain = server.as_ref().map_or(0, |s| s.plain_rounds(rounds)).min(rounds.saturating_sub(1));
        // Runs that keep FedAvg's course throughout go first (their rounds after the
        // shared ones can serve the others), then by the trailing rounds they are plain in.
        let tail = server.as_ref().map_or((true, 0), |s| {
            let steers = (1..=rounds).any(|round| !s.keeps_course(&crate::fed::RoundContext { round, rounds }));
            (steers, s.plain_tail(rounds))
        });
        let key = run::shared_key(&scenario);
        match families.iter_mut().find(|(f, _)| f.key == key) {
            Some((f, tails)) => {
                f.runs.push((c, seed));
                f.shared = f.shared.min(plain);
                tails.push(tail);
            }
            None => families.push((Family { runs: vec![(c, seed)], shared: plain, key, tails: Vec::new(), leads_tail: false }, vec![tail])),
        }
    }
    families
        .into_iter()
        .map(|(mut f, tails)| {
            if f.runs.len() == 1 {
                f.shared = 0;
            }
            // A stable order otherwise.
            let mut order: Vec<usize> = (0..f.runs.len()).collect();
            order.sort_by_key(|&i| tails[i]);
            f.runs = order.iter().map(|&i| f.runs[i]).collect();
            f.tails = order.iter().map(|&i| tails[i].1).collect();
            f.leads_tail = !tails[order[0]].0;
            f
        })
        .collect()
}

/// Run one (cell, seed) and write its directory: its results, or its error when it
/// failed; `Err` only when the directory cannot be written. `shared`: rounds it shares
/// with the other runs of its family.
#[allow(clippy::too_many_arguments)]
fn run_one(
    m: &Matrix,
    c: usize,
    seed: u64,
    out: &Path,
    opts: &MatrixOptions,
    threads: usize,
    progress: Progress,
    shared: Option<Arc<SharedRounds>>,
) -> Result<()> {
    let cell = &m.cells[c];
    let scenario = cell.scenario_for(seed);
    let stem = format!("{},seed={seed}", cell.id);
    let checkpoint = store::checkpoint_path(out, &cell.id, seed);
    let ropts = RunOptions {
        data_dir: opts.data_dir.clone(),
        threads: Some(threads),
        quiet: true,
        progress: Some(progress),
        checkpoint: Some(checkpoint.clone()),
        checkpoint_every: opts.checkpoint_every,
        stop: opts.stop.clone(),
        shared,
        ..Default::default()
    };
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run::execute(&scenario, &stem, &ropts)));
    let dir = store::run_dir(out, &cell.id, seed);
    let error = match result {
        Ok(Ok(files)) => {
            store::put(&dir, &files.iter())?;
            let _ = std::fs::remove_file(&checkpoint);
            return Ok(());
        }
        // Stopped: the run goes on from its checkpoint when the matrix is run again.
        Ok(Err(e @ Error::Interrupted(_))) => return Err(e),
        Ok(Err(e)) => e.to_string(),
        Err(panic) => {
            let msg =
                panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
            format!("the run panicked: {msg}")
        }
    };
    // A failed run is retried from round 1 (its checkpoint may be what failed).
    let _ = std::fs::remove_file(&checkpoint);
    store::put(&dir, &[("scenario.resolved.yaml", &scenario.to_yaml()), ("error.txt", &format!("{error}\n"))])
}

/// Build the report from the run directories under the output directory, wherever they
/// were produced (`--collect`).
pub fn collect(m: &Matrix, opts: &MatrixOptions) -> Result<(PathBuf, Vec<stats::Row>)> {
    let out = opts.out_dir(m);
    if !out.join("cells").is_dir() {
        return Err(Error::output(&out, "holds no `cells/` directory: nothing to collect (run the matrix, or its emitted jobs, first)"));
    }
    store::check_not_stale(m, &out)?;
    let rows = stats::collect(m, &out)?;
    report::write(m, &out, &rows, &stats::Provenance::default())?;
    Ok((out, rows))
}

/// One line per cell for `--dry-run`: its id, runs to do, their estimated seconds, and
/// the estimated peak memory of one run.
pub struct Plan {
    pub lines: Vec<(String, usize, Option<f64>, Option<f64>)>,
    /// Estimated wall time with `jobs` at once: the runs' times, each on its threads
    /// ([`crate::estimate::busy_cores`]), summed and divided by the runs at once (no more
    /// than the cores; rough).
    pub total_seconds: Option<f64>,
    pub measured: usize,
    /// Runs at once.
    pub jobs: usize,
    /// This machine's speed the model's estimates are scaled by; `None` when every
    /// estimate came from finished runs (no probe run).
    pub speed: Option<crate::speed::Speed>,
}

impl Plan {
    /// Seconds as a plan shows them (`?`: unknown).
    pub fn human(t: Option<f64>) -> String {
        t.map_or("?".to_string(), |t| if t < 120.0 { format!("{t:.0} s") } else { format!("{:.1} min", t / 60.0) })
    }

    /// One line per cell under a header: estimated time of its runs to do, memory of one
    /// run, runs to do, cell id.
    pub fn table(&self) -> String {
        let mut text = format!("{:>10}  {:>10}  {:>5}  cell\n", "est. time", "memory/run", "to do");
        for (id, todo, t, memory) in &self.lines {
            text += &format!("{:>10}  {:>10}  {:>5}  {id}\n", Self::human(*t), memory.map_or("?".into(), crate::estimate::human), todo);
        }
        text
    }
}

/// The cells, the runs each still needs, and an estimate of their time: from the
/// finished runs of the same cell where there are any, else from [`estimates`] scaled
/// to this machine ([`crate::speed`]).
pub fn plan(m: &Matrix, opts: &MatrixOptions) -> Result<Plan> {
    opts.only.check(m)?;
    let rows = stats::collect(m, &opts.out_dir(m))?;
    let sizes = sizes(m, opts);
    let jobs = opts.jobs.unwrap_or_else(backend::available_cores).max(1);
    let threads = (backend::available_cores() / jobs).max(1);
    // More runs than cores share them: no faster than one per core.
    let at_once = jobs.min(backend::available_cores());
    let mut speed = None;
    let mut lines = Vec::new();
    let mut measured = 0;
    // A run that goes on from its family's shared rounds skips their share of its time.
    let mut share = vec![0.0; m.cells.len()];
    if !opts.no_shared_rounds {
        let out = opts.out_dir(m);
        let todo: Vec<(usize, u64)> = m
            .runs()
            .into_iter()
            .filter(|&(c, s)| opts.only.selects(m, c) && record::state(&store::run_dir(&out, &m.cells[c].id, s)) != RunState::Finished)
            .collect();
        for f in families(m, &todo) {
            for (&(c, _), &tail) in f.runs.iter().zip(&f.tails).skip(1) {
                let scenario = &m.cells[c].scenario;
                // Its plain trailing rounds come from the first run where that one left
                // them (see `families`) and they are round-free.
                let taken = match f.shared > 0 && f.leads_tail && scenario.rounds_can_be_round_free() {
                    true => tail,
                    false => 0,
                };
                let rounds = scenario.federation.rounds;
                share[c] += (f.shared + taken).min(rounds) as f64 / rounds as f64;
            }
        }
    }
    for (c, (cell, size)) in m.cells.iter().zip(&sizes).enumerate().filter(|(c, _)| opts.only.selects(m, *c)) {
        let memory = size.map(|size| crate::estimate::memory(&cell.scenario, &size, threads).bytes());
        let done: Vec<f64> = rows.iter().filter(|r| r.cell == c).filter_map(|r| Some(r.metrics.as_ref()?.total_seconds)).collect();
        let todo = m.seeds.len() - done.len();
        let per_run = if done.is_empty() {
            match size {
                Some(size) => {
                    let cores = crate::estimate::busy_cores(&cell.scenario, threads);
                    let speed = match speed {
                        Some(s) => s,
                        // The runs at once and their threads share the cores: the
                        // probes run as many copies side by side.
                        None => *speed.insert(crate::speed::measure(at_once * threads)?),
                    };
                    Some(speed.wall(crate::estimate::time(&cell.scenario, size), cores))
                }
                None => None,
            }
        } else {
            measured += done.len();
            Some(done.iter().sum::<f64>() / done.len() as f64)
        };
        lines.push((cell.id.clone(), todo, per_run.map(|t| t * (todo as f64 - share[c]).max(0.0)), memory));
    }
    let total_seconds = lines.iter().map(|l| l.2).sum::<Option<f64>>().map(|t| t / at_once as f64);
    Ok(Plan { lines, total_seconds, measured, jobs, speed })
}

/// Refuse the runs `todo` if the largest `jobs` of them, each on `threads` threads,
/// would together exceed `limit` bytes by the estimate.
fn check_memory(
    m: &Matrix,
    sizes: &[Option<crate::estimate::DataSize>],
    todo: &[(usize, u64)],
    jobs: usize,
    threads: usize,
    limit: f64,
) -> Result<()> {
    let mut runs: Vec<(f64, usize)> = todo
        .iter()
        .filter_map(|&(c, _)| sizes[c].map(|size| (crate::estimate::memory(&m.cells[c].scenario, &size, threads).bytes(), c)))
        .collect();
    runs.sort_by(|a, b| b.0.total_cmp(&a.0));
    let at_once: f64 = runs.iter().take(jobs).map(|r| r.0).sum();
    match runs.first() {
        Some(&(largest, c)) if at_once > limit => Err(Error::param(
            "--max-memory",
            format!(
                "{} run(s) at once need about {} at their peak (estimate; the largest, cell `{}`, {}), more than the limit of {}; \
                 lower --jobs, or raise --max-memory (`--dry-run` shows each cell's estimate)",
                jobs.min(runs.len()),
                crate::estimate::human(at_once),
                m.cells[c].id,
                crate::estimate::human(largest),
                crate::estimate::human(limit)
            ),
        )),
        _ => Ok(()),
    }
}

/// Per cell: the size of its graph (`None` where its dataset does not load), each
/// dataset loaded once.
pub fn sizes(m: &Matrix, opts: &MatrixOptions) -> Vec<Option<crate::estimate::DataSize>> {
    let mut sizes: Vec<(String, Option<crate::estimate::DataSize>)> = Vec::new();
    m.cells
        .iter()
        .map(|cell| {
            let s = &cell.scenario;
            let key = format!("{:?}", (&s.dataset, s.seed));
            if let Some((_, size)) = sizes.iter().find(|(k, _)| *k == key) {
                return *size;
            }
            let size = crate::estimate::DataSize::of_scenario(s, opts.data_dir.as_deref()).ok();
            sizes.push((key, size));
            size
        })
        .collect()
}

/// Per cell: the estimated seconds of one run on one core.
pub fn estimates(m: &Matrix, sizes: &[Option<crate::estimate::DataSize>]) -> Vec<Option<f64>> {
    sizes.iter().zip(&m.cells).map(|(size, cell)| size.map(|size| crate::estimate::seconds(&cell.scenario, &size))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_concurrently_keeps_job_order_and_stops_after_a_failure() {
        let jobs: Vec<u64> = (0..12).collect();
        for threads in [1, 2, 5] {
            let got = run_concurrently(
                &jobs,
                Some(threads),
                None,
                |_| 0,
                |&j, t| {
                    std::thread::sleep(std::time::Duration::from_millis((12 - j) * 2));
                    Ok((j * j, t))
                },
            );
            let want: Vec<(u64, usize)> = jobs.iter().map(|j| (j * j, 1)).collect();
            assert_eq!(got.unwrap(), want, "{threads} threads");
        }
        // Costlier jobs start first; results stay in job order.
        let started = std::sync::Mutex::new(Vec::new());
        let got = run_concurrently(
            &jobs,
            Some(1),
            None,
            |&j| (j % 3) as u32,
            |&j, _| {
                started.lock().unwrap().push(j);
                Ok(j)
            },
        );
        assert_eq!(got.unwrap(), jobs);
        assert_eq!(started.into_inner().unwrap(), [2, 5, 8, 11, 1, 4, 7, 10, 0, 3, 6, 9]);
        // Fewer jobs than threads: each gets a share.
        assert_eq!(run_concurrently(&[0, 1], Some(4), None, |_| 0, |_, t| Ok(t)).unwrap(), [2, 2]);
        // At most `max_workers` at once, sharing all the threads: `--jobs 1` and `--jobs 2`
        // on 2 cores are different schedules.
        for (max_workers, want_threads, want_peak) in [(1, 2, 1), (2, 1, 2)] {
            let (now, peak) = (std::sync::atomic::AtomicUsize::new(0), std::sync::atomic::AtomicUsize::new(0));
            let got = run_concurrently(
                &jobs,
                Some(2),
                Some(max_workers),
                |_| 0,
                |_, t| {
                    let k = now.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    peak.fetch_max(k, std::sync::atomic::Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    now.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                    Ok(t)
                },
            );
            assert_eq!(got.unwrap(), vec![want_threads; jobs.len()], "max_workers {max_workers}");
            assert_eq!(peak.into_inner(), want_peak, "max_workers {max_workers}");
        }
        let ran = std::sync::atomic::AtomicUsize::new(0);
        let got = run_concurrently(
            &jobs,
            Some(1),
            None,
            |_| 0,
            |&j, _| {
                ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                if j == 3 || j == 5 { Err(Error::Other(format!("job {j} failed"))) } else { Ok(j) }
            },
        );
        assert_eq!(ran.into_inner(), 4, "one worker stops after the failing job");
        assert_eq!(got.unwrap_err().to_string(), "job 3 failed");
    }
}

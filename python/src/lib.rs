//! `fgl_sim._native`: the crate's commands for the Python package (`python/fgl_sim/`).
//!
//! Each call runs the library's own code path — the one `fgl-sim run`, `matrix`,
//! `reproduce`, `datasets`, `presets` and `privacy` run — so results are the CLI's bit for
//! bit. Long calls run on a worker thread with the GIL released; the calling thread
//! polls for Ctrl-C (which stops the work at its next round boundary, as SIGINT does
//! the CLI) and forwards progress to a Python callable. The pure-Python layer turns the
//! results directories into pandas frames.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use fgl_sim::Error;
use fgl_sim::fed::Progress;
use fgl_sim::run::RunOptions;
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

pyo3::create_exception!(
    _native,
    FglSimError,
    pyo3::exceptions::PyException,
    "An error of fgl-sim, worded as the command line words it: the file, field, flag or parameter at fault and what is allowed."
);

fn to_py(e: Error) -> PyErr {
    match e {
        // Stopped by Ctrl-C: the message says where the state is saved.
        Error::Interrupted(msg) => PyKeyboardInterrupt::new_err(msg),
        e => FglSimError::new_err(e.to_string()),
    }
}

/// How often the calling thread looks for Ctrl-C and progress.
const POLL: Duration = Duration::from_millis(100);

/// Run `job` on a worker thread with the GIL released. Meanwhile the calling thread
/// checks for signals (a KeyboardInterrupt raises the job's stop flag; the job stops at
/// its next round boundary and the interrupt is raised then) and calls
/// `progress(done, total)` when the job's hook reports a new position.
fn supervise<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    job: impl FnOnce(Arc<AtomicBool>, Progress) -> fgl_sim::Result<T> + Send,
) -> PyResult<T> {
    let stop = Arc::new(AtomicBool::new(false));
    let position = Arc::new((AtomicUsize::new(0), AtomicUsize::new(0)));
    let hook = {
        let p = position.clone();
        Progress::Hook(Arc::new(move |done, total| {
            p.1.store(total, Ordering::SeqCst);
            p.0.store(done, Ordering::SeqCst);
        }))
    };
    let finished = (Mutex::new(false), Condvar::new());
    std::thread::scope(|scope| {
        let worker = {
            let (stop, finished) = (stop.clone(), &finished);
            scope.spawn(move || {
                let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(stop, hook)));
                *finished.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
                finished.1.notify_all();
                out
            })
        };
        let mut raised: Option<PyErr> = None;
        let mut shown = (0, 0);
        loop {
            let done = py.detach(|| {
                let guard = finished.0.lock().unwrap_or_else(|e| e.into_inner());
                *finished.1.wait_timeout_while(guard, POLL, |f| !*f).unwrap_or_else(|e| e.into_inner()).0
            });
            let now = (position.0.load(Ordering::SeqCst), position.1.load(Ordering::SeqCst));
            if let Some(cb) = progress.filter(|_| now != shown && raised.is_none()) {
                shown = now;
                if let Err(e) = cb.call1(now) {
                    stop.store(true, Ordering::SeqCst);
                    raised = Some(e);
                }
            }
            if done {
                break;
            }
            if raised.is_none()
                && let Err(e) = py.check_signals()
            {
                stop.store(true, Ordering::SeqCst);
                raised = Some(e);
            }
        }
        let result = match worker.join().expect("the worker catches its panics") {
            Ok(r) => r,
            Err(panic) => {
                let msg = panic.downcast_ref::<String>().cloned().or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()));
                return Err(FglSimError::new_err(format!("internal error (a panic): {}", msg.unwrap_or_default())));
            }
        };
        match (result, raised) {
            // Stopped by Ctrl-C too: the library's message says where the state was saved.
            (Err(e), _) => Err(to_py(e)),
            (Ok(_), Some(e)) => Err(e),
            (Ok(v), None) => Ok(v),
        }
    })
}

fn max_memory(text: Option<&str>) -> PyResult<Option<f64>> {
    match text {
        None => Ok(fgl_sim::estimate::default_max_memory()),
        Some(t) => fgl_sim::estimate::parse_size(t).map(Some).ok_or_else(|| {
            FglSimError::new_err(format!(
                "invalid parameter `max_memory`: `{t}` is not a memory size > 0: bytes, or a number with K, M, G or T (e.g. 8G, 512M)"
            ))
        }),
    }
}

/// A scenario as the Python layer passes it: a file, or YAML text (`label` names it in
/// errors; relative paths in it are read from `base`).
enum Source {
    File(PathBuf),
    Text { text: String, label: String, base: Option<PathBuf> },
}

impl Source {
    /// Exactly one of `path` and `text`.
    fn of(path: Option<PathBuf>, text: Option<String>, label: String, base: Option<PathBuf>) -> PyResult<Source> {
        match (path, text) {
            (Some(p), None) => Ok(Source::File(p)),
            (None, Some(text)) => Ok(Source::Text { text, label, base }),
            _ => Err(PyValueError::new_err("give the scenario as a path or as YAML text: exactly one of them")),
        }
    }

    fn scenario(&self, set: &[String]) -> fgl_sim::Result<fgl_sim::scenario::Scenario> {
        match self {
            Source::File(p) => fgl_sim::scenario::Scenario::load(p, set),
            Source::Text { text, label, base } => fgl_sim::scenario::Scenario::parse_in(text, label, base.as_deref(), set),
        }
    }
}

fn data_dir(dir: Option<PathBuf>) -> Option<PathBuf> {
    fgl_sim::data::registry::resolve_data_dir(dir.as_deref())
}

/// `fgl-sim run`: the scenario from `path` (a file) or `text` (YAML; `label` names it in
/// errors, relative paths in it are read from `base`, the run is called `stem`), with
/// `set` overrides; returns the results directory.
#[pyfunction]
#[pyo3(signature = (*, path=None, text=None, label="<string>".to_string(), base=None, stem="scenario".to_string(), set=Vec::new(), out=None, data_dir=None, threads=None, force=false, checkpoint_every=None, max_memory=None, progress=None))]
#[allow(clippy::too_many_arguments)]
fn run(
    py: Python<'_>,
    path: Option<PathBuf>,
    text: Option<String>,
    label: String,
    base: Option<PathBuf>,
    stem: String,
    set: Vec<String>,
    out: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    threads: Option<usize>,
    force: bool,
    checkpoint_every: Option<usize>,
    max_memory: Option<String>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<(String, Option<String>)> {
    let source = Source::of(path, text, label, base)?;
    let opts = RunOptions { out, force, ..run_options(data_dir, threads, checkpoint_every, max_memory)? };
    let dir = supervise(py, progress.as_ref(), move |stop, hook| {
        let opts = RunOptions { stop: Some(stop), progress: Some(hook), ..opts };
        match &source {
            Source::File(p) => fgl_sim::cli::run_file(p, &set, &opts),
            Source::Text { text, label, base } => fgl_sim::cli::run_text(text, label, base.as_deref(), &stem, &set, &opts),
        }
    })?;
    finished(&dir)
}

/// `fgl-sim run --resume DIR`: go on with an interrupted run from its checkpoint.
#[pyfunction]
#[pyo3(signature = (dir, *, data_dir=None, threads=None, checkpoint_every=None, max_memory=None, progress=None))]
fn resume(
    py: Python<'_>,
    dir: PathBuf,
    data_dir: Option<PathBuf>,
    threads: Option<usize>,
    checkpoint_every: Option<usize>,
    max_memory: Option<String>,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<(String, Option<String>)> {
    let opts = run_options(data_dir, threads, checkpoint_every, max_memory)?;
    let dir = supervise(py, progress.as_ref(), move |stop, hook| {
        fgl_sim::cli::resume_dir(&dir, &RunOptions { stop: Some(stop), progress: Some(hook), ..opts })
    })?;
    finished(&dir)
}

/// The run's directory, and `fgl-sim run`'s message if its training diverged.
fn finished(dir: &std::path::Path) -> PyResult<(String, Option<String>)> {
    let m = fgl_sim::record::read_summary(&dir.join("metrics.json")).map_err(to_py)?;
    let diverged = m.diverged().then(|| fgl_sim::cli::diverged_message(&m, dir));
    Ok((dir.display().to_string(), diverged))
}

/// What `run` and `resume` share: checked, and quiet (the Python layer draws the bar).
fn run_options(
    data_dir: Option<PathBuf>,
    threads: Option<usize>,
    checkpoint_every: Option<usize>,
    max_memory: Option<String>,
) -> PyResult<RunOptions> {
    if threads == Some(0) {
        return Err(FglSimError::new_err("invalid parameter `threads`: at least 1 (results do not depend on it)"));
    }
    Ok(RunOptions {
        data_dir: self::data_dir(data_dir),
        quiet: true,
        threads,
        checkpoint_every,
        max_memory: self::max_memory(max_memory.as_deref())?,
        ..Default::default()
    })
}

/// `fgl-sim matrix FILE`: runs what is missing and writes the report; returns (report
/// directory, runs made, runs already finished, runs failed, wall seconds, the CLI's
/// failure message if some failed).
#[pyfunction]
#[pyo3(signature = (path, *, out=None, data_dir=None, jobs=None, checkpoint_every=None, max_memory=None, only=Vec::new(), shared_rounds=true, progress=None))]
#[allow(clippy::too_many_arguments)]
fn matrix(
    py: Python<'_>,
    path: PathBuf,
    out: Option<PathBuf>,
    data_dir: Option<PathBuf>,
    jobs: Option<usize>,
    checkpoint_every: Option<usize>,
    max_memory: Option<String>,
    only: Vec<String>,
    shared_rounds: bool,
    progress: Option<Bound<'_, PyAny>>,
) -> PyResult<(String, usize, usize, usize, f64, Option<String>)> {
    if jobs == Some(0) {
        return Err(FglSimError::new_err("invalid parameter `jobs`: at least 1 run at a time"));
    }
    let m = fgl_sim::matrix::Matrix::load(&path).map_err(to_py)?;
    let only = fgl_sim::matrix::select::Selection::parse(&only).map_err(to_py)?;
    let max_memory = self::max_memory(max_memory.as_deref())?;
    let data_dir = self::data_dir(data_dir);
    let o = supervise(py, progress.as_ref(), move |stop, hook| {
        let opts = fgl_sim::matrix::MatrixOptions {
            data_dir,
            out,
            jobs,
            quiet: true,
            checkpoint_every,
            stop: Some(stop),
            max_memory,
            progress: hook,
            only,
            no_shared_rounds: !shared_rounds,
        };
        fgl_sim::cli::run_matrix(&m, &opts)
    })?;
    let failed = (o.failed > 0).then(|| fgl_sim::cli::failed_runs_message(&o));
    Ok((o.out.display().to_string(), o.ran, o.skipped, o.failed, o.wall_seconds, failed))
}

/// `fgl-sim reproduce ARGS…` (the words after `reproduce`); returns the results directory.
#[pyfunction]
#[pyo3(signature = (args, *, progress=None))]
fn reproduce(py: Python<'_>, args: Vec<String>, progress: Option<Bound<'_, PyAny>>) -> PyResult<String> {
    let dir = supervise(py, progress.as_ref(), move |stop, hook| {
        fgl_sim::cli::reproduce_args(&args, &fgl_sim::cli::Front { stop, progress: Some(hook) })
    })?;
    Ok(dir.display().to_string())
}

/// `fgl-sim reproduce ARGS… --dry-run`: the plan it prints (nothing runs or is written).
#[pyfunction]
fn reproduce_plan(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    py.detach(|| fgl_sim::cli::reproduce_plan_args(&args)).map_err(to_py)
}

/// `fgl-sim privacy epsilon|sigma ARGS… --json`: the JSON it prints.
#[pyfunction]
fn privacy(args: Vec<String>) -> PyResult<String> {
    let v = fgl_sim::cli::privacy_args(&args).map_err(to_py)?;
    Ok(serde_json::to_string(&v).expect("json"))
}

/// `fgl-sim datasets --json`: the JSON it prints.
#[pyfunction]
#[pyo3(signature = (data_dir=None))]
fn datasets(py: Python<'_>, data_dir: Option<PathBuf>) -> String {
    let v = py.detach(|| fgl_sim::cli::datasets_json(data_dir.as_deref()));
    serde_json::to_string(&v).expect("json")
}

/// A built-in preset: (kind, name, description, resolved YAML or None, error or None).
type PresetRow = (&'static str, &'static str, String, Option<String>, Option<String>);

/// The built-in presets, as `fgl-sim presets` lists them.
#[pyfunction]
fn presets() -> Vec<PresetRow> {
    fgl_sim::presets::list()
        .into_iter()
        .map(|p| {
            let (yaml, error) = match p.yaml {
                Ok(y) => (Some(y), None),
                Err(e) => (None, Some(e.to_string())),
            };
            (p.kind.field(), p.name, p.about, yaml, error)
        })
        .collect()
}

/// A scenario's data as the run sees it — loaded, preprocessed, partitioned and split
/// — as little-endian arrays (bytes) for numpy: `edge_index` (int64, 2 × E, both
/// directions of each undirected edge, as PyG stores them), `x` (float32, n × d; absent
/// without features), `y` (int64, −1 unlabelled), `role` (uint8: 0 train, 1 val, 2 test,
/// 3 unused), `client` (int64, −1 unassigned).
#[pyfunction]
#[pyo3(signature = (*, path=None, text=None, label="<string>".to_string(), base=None, set=Vec::new(), data_dir=None))]
fn load<'py>(
    py: Python<'py>,
    path: Option<PathBuf>,
    text: Option<String>,
    label: String,
    base: Option<PathBuf>,
    set: Vec<String>,
    data_dir: Option<PathBuf>,
) -> PyResult<Bound<'py, PyDict>> {
    let source = Source::of(path, text, label, base)?;
    let data_dir = self::data_dir(data_dir);
    let arrays = py.detach(move || -> fgl_sim::Result<Arrays> {
        let p = fgl_sim::run::prepare(&source.scenario(&set)?, data_dir.as_deref())?;
        Ok(Arrays::of(&p))
    });
    let a = arrays.map_err(to_py)?;
    let d = PyDict::new(py);
    d.set_item("name", a.name)?;
    d.set_item("num_nodes", a.nodes)?;
    d.set_item("num_features", a.features)?;
    d.set_item("class_names", a.class_names)?;
    d.set_item("edge_index", PyBytes::new(py, &a.edge_index))?;
    d.set_item("x", a.x.map(|x| PyBytes::new(py, &x)))?;
    d.set_item("y", PyBytes::new(py, &a.y))?;
    d.set_item("role", PyBytes::new(py, &a.role))?;
    d.set_item("client", PyBytes::new(py, &a.client))?;
    d.set_item("clients", a.clients)?;
    Ok(d)
}

struct Arrays {
    name: String,
    nodes: usize,
    features: Option<usize>,
    class_names: Vec<String>,
    edge_index: Vec<u8>,
    x: Option<Vec<u8>>,
    y: Vec<u8>,
    role: Vec<u8>,
    client: Vec<u8>,
    clients: usize,
}

impl Arrays {
    fn of(p: &fgl_sim::run::Prepared) -> Arrays {
        use fgl_sim::data::Role;
        let ds = &p.dataset;
        let n = ds.num_nodes();
        let (indptr, indices) = ds.graph.csr();
        // Row v of the CSR lists v's neighbours (the senders into v): edge (u → v).
        let mut sources = Vec::with_capacity(indices.len() * 8);
        let mut targets = Vec::with_capacity(indices.len() * 8);
        for v in 0..n {
            for &u in &indices[indptr[v]..indptr[v + 1]] {
                sources.extend_from_slice(&i64::from(u).to_le_bytes());
                targets.extend_from_slice(&(v as i64).to_le_bytes());
            }
        }
        sources.extend_from_slice(&targets);
        let x = ds.features.as_ref().map(|f| {
            let dense = f.to_dense();
            let mut bytes = Vec::with_capacity(n * dense.cols * 4);
            for r in 0..n {
                for v in dense.row(r) {
                    bytes.extend_from_slice(&v.to_le_bytes());
                }
            }
            bytes
        });
        let y = ds.labels.iter().flat_map(|l| l.map_or(-1, i64::from).to_le_bytes()).collect();
        let role = p
            .split
            .roles
            .iter()
            .map(|r| match r {
                Role::Train => 0,
                Role::Val => 1,
                Role::Test => 2,
                Role::Unused => 3,
            })
            .collect();
        let mut client = vec![-1i64; n];
        for c in &p.clients {
            for &v in &c.nodes {
                client[v] = c.id as i64;
            }
        }
        Arrays {
            name: ds.name.clone(),
            nodes: n,
            features: ds.features.as_ref().map(|f| f.cols()),
            class_names: ds.class_names.clone(),
            edge_index: sources,
            x,
            y,
            role,
            client: client.iter().flat_map(|c| c.to_le_bytes()).collect(),
            clients: p.clients.len(),
        }
    }
}

/// Check a scenario without running it (`fgl-sim scenario check`): returns the resolved
/// YAML, every default filled in.
#[pyfunction]
#[pyo3(signature = (*, path=None, text=None, label="<string>".to_string(), base=None, set=Vec::new()))]
fn resolve(path: Option<PathBuf>, text: Option<String>, label: String, base: Option<PathBuf>, set: Vec<String>) -> PyResult<String> {
    Source::of(path, text, label, base)?.scenario(&set).map(|s| s.to_yaml()).map_err(to_py)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("FglSimError", m.py().get_type::<FglSimError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(run, m)?)?;
    m.add_function(wrap_pyfunction!(resume, m)?)?;
    m.add_function(wrap_pyfunction!(matrix, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce, m)?)?;
    m.add_function(wrap_pyfunction!(reproduce_plan, m)?)?;
    m.add_function(wrap_pyfunction!(privacy, m)?)?;
    m.add_function(wrap_pyfunction!(datasets, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    Ok(())
}

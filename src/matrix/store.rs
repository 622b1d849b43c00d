//! The matrix's results directory: `cells/<cell id>/seed=<s>/` per run, holding what
//! `fgl-sim run` writes (`scenario.resolved.yaml`, `metrics.json`, `summary.md`), or
//! `error.txt` (with the scenario) for a run that failed. A run directory appears
//! whole or not at all: it is written as a hidden sibling and renamed into place, so a
//! killed matrix leaves no half-written run, and a rerun skips every finished one.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::record::{RunState, state};

/// `<out>/cells/<id>/seed=<seed>`.
pub fn run_dir(out: &Path, id: &str, seed: u64) -> PathBuf {
    out.join("cells").join(id).join(format!("seed={seed}"))
}

/// The checkpoint of an unfinished run (kept apart from `cells/`, which holds only
/// finished or failed runs).
pub fn checkpoint_path(out: &Path, id: &str, seed: u64) -> PathBuf {
    out.join("checkpoints").join(id).join(format!("seed={seed}.cbor"))
}

/// Write `files` as run directory `dir` whole, replacing whatever `dir` held (a failed
/// attempt's record).
pub fn put(dir: &Path, files: &[(&str, &str)]) -> Result<()> {
    crate::atomic::write_dir(dir, files)
}

/// Remove the hidden run directories that killed processes left behind (those of live
/// processes, another `fgl-sim matrix` on the same directory, are kept).
pub fn remove_leftovers(out: &Path) {
    let Ok(cells) = fs::read_dir(out.join("cells")) else { return };
    for cell in cells.flatten() {
        let Ok(entries) = fs::read_dir(cell.path()) else { continue };
        for e in entries.flatten() {
            if crate::atomic::leftover_of_dead_process(&e.file_name().to_string_lossy()) {
                let _ = fs::remove_dir_all(e.path());
            }
        }
    }
}

/// Refuse an `out` that holds runs of cells `m` does not have: it is another matrix's
/// directory (whose report this one would overwrite), or `m` lost those cells.
pub fn check_same_matrix(m: &super::Matrix, out: &Path) -> Result<()> {
    let Ok(entries) = fs::read_dir(out.join("cells")) else { return Ok(()) };
    let mut foreign: Vec<String> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|id| !id.starts_with('.') && !m.cells.iter().any(|c| &c.id == id))
        .collect();
    foreign.sort();
    match foreign.first() {
        None => Ok(()),
        Some(first) => Err(Error::output(
            out,
            format!(
                "holds runs of {} cell(s) this matrix does not have (first: `{first}`): it is another matrix's directory, or this \
                 matrix lost those cells; choose another --out, or delete {}",
                foreign.len(),
                out.join("cells").join(first).display()
            ),
        )),
    }
}

/// The finished runs under `out` whose recorded scenario is not the one the matrix now
/// gives their cell and seed (the matrix file changed, or `out` belongs to another
/// matrix): reusing them would report numbers of a different experiment.
pub fn check_not_stale(m: &super::Matrix, out: &Path) -> Result<()> {
    let mut stale: Vec<PathBuf> = Vec::new();
    for (c, seed) in m.runs() {
        let dir = run_dir(out, &m.cells[c].id, seed);
        if state(&dir) != RunState::Finished {
            continue;
        }
        let recorded = fs::read_to_string(dir.join("scenario.resolved.yaml")).unwrap_or_default();
        if recorded != m.cells[c].scenario_for(seed).to_yaml() {
            stale.push(dir);
        }
    }
    match stale.first() {
        None => Ok(()),
        Some(first) => Err(Error::output(
            out,
            format!(
                "{} finished run(s) were produced by a different scenario than the matrix now gives their cell (first: {}); \
                 choose another --out, or delete those run directories to run them again",
                stale.len(),
                first.display()
            ),
        )),
    }
}

//! The matrix's results directory: `cells/<cell id>/seed=<s>/` per run, holding what
//! `fgl-sim run` writes (`scenario.resolved.yaml`, `metrics.json`, `summary.md`), or
//! `error.txt` (with the scenario) for a run that failed. A run directory appears
//! whole or not at all: it is written as a hidden sibling and renamed into place, so a
//! killed matrix leaves no half-written run, and a rerun skips every finished one.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::record::{RunState, state};
use crate::results::write_atomic;

/// `<out>/cells/<id>/seed=<seed>`.
pub fn run_dir(out: &Path, id: &str, seed: u64) -> PathBuf {
    out.join("cells").join(id).join(format!("seed={seed}"))
}

/// Write `files` as run directory `dir` in one step: into a hidden sibling first, then
/// renamed over whatever `dir` held (a failed attempt's record).
pub fn put(dir: &Path, files: &[(&str, &str)]) -> Result<()> {
    let parent = dir.parent().expect("a run dir has a parent");
    let leaf = dir.file_name().and_then(|n| n.to_str()).expect("a run dir has a name");
    fs::create_dir_all(parent).map_err(|e| Error::output(parent, format!("cannot create: {e}")))?;
    let tmp = parent.join(format!(".{leaf}.tmp-{}-{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], ""));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir(&tmp).map_err(|e| Error::output(&tmp, format!("cannot create: {e}")))?;
    for (name, contents) in files {
        write_atomic(&tmp.join(name), contents.as_bytes())?;
    }
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| Error::output(dir, format!("cannot replace the failed attempt: {e}")))?;
    }
    fs::rename(&tmp, dir).map_err(|e| {
        let _ = fs::remove_dir_all(&tmp);
        Error::output(dir, format!("cannot move the finished run into place: {e}"))
    })
}

/// Remove the hidden run directories that killed processes left behind (those of live
/// processes, another `fgl-sim matrix` on the same directory, are kept).
pub fn remove_leftovers(out: &Path) {
    let Ok(cells) = fs::read_dir(out.join("cells")) else { return };
    for cell in cells.flatten() {
        let Ok(entries) = fs::read_dir(cell.path()) else { continue };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(rest) = name.strip_prefix('.').and_then(|n| n.split_once(".tmp-")).map(|(_, r)| r.to_string()) else { continue };
            let pid = rest.split('-').next().and_then(|p| p.parse::<u32>().ok());
            let alive = pid.is_some_and(|p| p == std::process::id() || Path::new(&format!("/proc/{p}")).exists());
            if !alive {
                let _ = fs::remove_dir_all(e.path());
            }
        }
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

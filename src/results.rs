//! Results directories: one per run, never overwritten without `--force`, every file
//! written whole ([`crate::atomic`]), so an interrupted or failed run never leaves a
//! half-written file or destroys an earlier one.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// A results directory that has been checked for writing, held exclusively.
#[derive(Debug, Clone)]
pub struct ResultsDir {
    path: PathBuf,
    _lock: Arc<DirLock>,
}

impl ResultsDir {
    /// Take `path` for writing: no other fgl-sim may be writing there ([`DirLock`]), and
    /// it must not exist, or be an empty directory, or `force` must be set. A run that
    /// fails before it writes leaves no trace (the lock, and a directory it created, go).
    pub fn claim(path: &Path, force: bool) -> Result<ResultsDir> {
        if path.exists() && !path.is_dir() {
            return Err(Error::output(path, "exists and is not a directory"));
        }
        let lock = DirLock::acquire(path)?;
        let entries = fs::read_dir(path).map_err(|e| Error::output(path, format!("cannot read: {e}")))?;
        let mut names: Vec<String> =
            entries.flatten().map(|e| e.file_name().to_string_lossy().to_string()).filter(|n| n != LOCK_FILE).collect();
        // What a killed writer left: its staging files go; a run it had begun writing
        // (metrics.json, written last, missing) is no result and is replaced.
        names.retain(|n| !(crate::atomic::leftover_of_dead_process(n) && fs::remove_file(path.join(n)).is_ok()));
        let interrupted = names.iter().all(|n| PARTIAL_RUN.contains(&n.as_str()));
        if !force && names.iter().any(|n| n == CHECKPOINT_FILE) && !names.iter().any(|n| n == "metrics.json") {
            return Err(Error::output(
                path,
                format!(
                    "holds the checkpoint of an interrupted run; go on with `fgl-sim run --resume {}`, or pass --force to start over",
                    path.display()
                ),
            ));
        }
        if !interrupted && !force {
            return Err(Error::output(path, "already holds results; pass --force to overwrite them, or choose another --out"));
        }
        Ok(ResultsDir { path: path.to_path_buf(), _lock: Arc::new(lock) })
    }

    /// Claim `path` to go on with the interrupted run whose checkpoint it holds.
    pub fn claim_checkpointed(path: &Path) -> Result<ResultsDir> {
        let lock = DirLock::acquire(path)?;
        if path.join("metrics.json").is_file() {
            return Err(Error::output(path, "holds a finished run (metrics.json), nothing to resume"));
        }
        if !path.join(CHECKPOINT_FILE).is_file() {
            return Err(Error::output(path, "holds no checkpoint (checkpoint.cbor) to resume from"));
        }
        Ok(ResultsDir { path: path.to_path_buf(), _lock: Arc::new(lock) })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write `name` inside the directory atomically, creating the directory if needed.
    pub fn write(&self, name: &str, contents: &[u8]) -> Result<()> {
        fs::create_dir_all(&self.path).map_err(|e| Error::output(&self.path, format!("cannot create: {e}")))?;
        crate::atomic::write_file(&self.path.join(name), contents)
    }
}

/// The files a run writes before `metrics.json` (which it writes last): a directory
/// holding only these is a run killed while writing.
const PARTIAL_RUN: [&str; 2] = ["scenario.resolved.yaml", "summary.md"];

/// An unfinished run's checkpoint, written by `run` (`--checkpoint-every`, or when stopped).
pub const CHECKPOINT_FILE: &str = "checkpoint.cbor";

/// The file that marks a directory as taken: it holds the writer's pid.
pub const LOCK_FILE: &str = ".fgl-sim.lock";

/// One writer per output directory at a time: `.fgl-sim.lock`, holding the writer's
/// pid, is created atomically (filled, then hard-linked into place, which fails if the
/// name exists) and removed when the lock is dropped. A lock left by a process that no
/// longer runs (killed) is taken over. Two runs, or a run and a matrix, pointed at one
/// directory would otherwise mix or overwrite each other's files.
#[derive(Debug)]
pub struct DirLock {
    file: PathBuf,
    /// The directory, if taking the lock created it (removed again if still empty).
    created: Option<PathBuf>,
}

impl DirLock {
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        let created = (!dir.exists()).then(|| dir.to_path_buf());
        fs::create_dir_all(dir).map_err(|e| Error::output(dir, format!("cannot create: {e}")))?;
        let file = dir.join(LOCK_FILE);
        let staged = crate::atomic::staging_path(&file, crate::atomic::Staging::Private);
        fs::write(&staged, std::process::id().to_string()).map_err(|e| Error::output(dir, format!("cannot write the lock: {e}")))?;
        let taken = (|| {
            for _ in 0..3 {
                match fs::hard_link(&staged, &file) {
                    Ok(()) => return Ok(()),
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        let owner = fs::read_to_string(&file).ok().and_then(|p| p.trim().parse::<u32>().ok());
                        match owner {
                            Some(pid) if crate::atomic::process_alive(pid) => {
                                return Err(Error::output(
                                    dir,
                                    format!(
                                        "another fgl-sim (pid {pid}{}) is writing here; wait for it to finish, or choose another --out",
                                        if pid == std::process::id() { ", this very process" } else { "" }
                                    ),
                                ));
                            }
                            // Left by a process that is gone: take it over.
                            _ => {
                                let _ = fs::remove_file(&file);
                            }
                        }
                    }
                    Err(e) => return Err(Error::output(dir, format!("cannot take the lock {LOCK_FILE}: {e}"))),
                }
            }
            Err(Error::output(dir, format!("cannot take the lock {LOCK_FILE}: it keeps reappearing")))
        })();
        let _ = fs::remove_file(&staged);
        if let Err(e) = taken {
            if let Some(d) = &created {
                let _ = fs::remove_dir(d);
            }
            return Err(e);
        }
        Ok(DirLock { file, created })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.file);
        if let Some(d) = &self.created {
            let _ = fs::remove_dir(d); // only if empty
        }
    }
}

/// `results/<stem>-<UTC yyyymmdd-hhmmss>`, with `-2`, `-3`, … appended if taken.
pub fn default_dir(root: &Path, stem: &str) -> PathBuf {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let base = format!("{stem}-{}", utc_stamp(secs));
    let mut dir = root.join(&base);
    let mut k = 2;
    while dir.exists() {
        dir = root.join(format!("{base}-{k}"));
        k += 1;
    }
    dir
}

/// `yyyymmdd-hhmmss` for Unix time `secs` (UTC), by the days-to-civil-date algorithm.
fn utc_stamp(secs: u64) -> String {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}{month:02}{day:02}-{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101-000000");
        assert_eq!(utc_stamp(951_782_400), "20000229-000000"); // leap day
        assert_eq!(utc_stamp(1_795_286_096), "20261121-183456");
    }

    #[test]
    fn claim_refuses_non_empty_dir_without_force_and_keeps_files() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let r = ResultsDir::claim(&dir, false).unwrap();
        drop(r);
        assert!(!dir.exists(), "a claim that wrote nothing leaves nothing");
        let r = ResultsDir::claim(&dir, false).unwrap();
        r.write("metrics.json", b"{\"a\":1}").unwrap();
        drop(r);
        let e = ResultsDir::claim(&dir, false).unwrap_err().to_string();
        assert!(e.contains("--force"), "{e}");
        assert_eq!(fs::read(dir.join("metrics.json")).unwrap(), b"{\"a\":1}");
        let r = ResultsDir::claim(&dir, true).unwrap();
        r.write("metrics.json", b"{}").unwrap();
        drop(r);
        assert_eq!(fs::read(dir.join("metrics.json")).unwrap(), b"{}");
        // No temporary files, and no lock, are left behind.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }

    /// Issue 27: a SIGKILL during a run's final writes left `scenario.resolved.yaml` and
    /// a stray `.summary.md.tmp-PID`, and the rerun refused without --force. The dead
    /// writer's staging file is removed and the partial run replaced; a finished run
    /// (with metrics.json) is still protected.
    #[test]
    fn a_run_killed_while_writing_is_replaced_not_protected() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("scenario.resolved.yaml"), "seed: 0\n").unwrap();
        fs::write(dir.join(".summary.md.tmp-4000000000-1"), "half").unwrap();
        let r = ResultsDir::claim(&dir, false).unwrap();
        assert!(!dir.join(".summary.md.tmp-4000000000-1").exists(), "the dead writer's staging file is gone");
        r.write("summary.md", b"# s").unwrap();
        r.write("metrics.json", b"{}").unwrap();
        drop(r);
        let e = ResultsDir::claim(&dir, false).unwrap_err().to_string();
        assert!(e.contains("--force"), "a finished run is protected: {e}");
        // Someone else's file is never taken for a partial run.
        let other = tmp.path().join("other");
        fs::create_dir(&other).unwrap();
        fs::write(other.join("notes.txt"), "mine").unwrap();
        assert!(ResultsDir::claim(&other, false).is_err());
    }

    /// Issue 27: two writers of one directory mixed their files. The second is refused,
    /// naming the first, even with --force; a lock whose process is gone is taken over.
    #[test]
    fn one_writer_per_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        let first = ResultsDir::claim(&dir, false).unwrap();
        let e = ResultsDir::claim(&dir, true).unwrap_err().to_string();
        assert!(e.contains("another fgl-sim") && e.contains(&format!("pid {}", std::process::id())), "{e}");
        let e = DirLock::acquire(&dir).unwrap_err().to_string();
        assert!(e.contains("another fgl-sim"), "{e}");
        drop(first);
        // A killed process's lock (no such pid) does not block.
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(LOCK_FILE), "4000000000").unwrap();
        let r = ResultsDir::claim(&dir, false).unwrap();
        assert_eq!(fs::read_to_string(dir.join(LOCK_FILE)).unwrap(), std::process::id().to_string());
        drop(r);
        assert!(!dir.join(LOCK_FILE).exists());
    }
}

//! Results directories: one per run, never overwritten without `--force`, every file
//! written whole ([`crate::atomic`]), so an interrupted or failed run never leaves a
//! half-written file or destroys an earlier one.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Error, Result};

/// A results directory that has been checked for writing.
#[derive(Debug, Clone)]
pub struct ResultsDir {
    path: PathBuf,
}

impl ResultsDir {
    /// Check that `path` may be written: it must not exist, or be an empty directory, or
    /// `force` must be set. Nothing is created yet: a run that fails before it writes
    /// leaves no trace.
    pub fn claim(path: &Path, force: bool) -> Result<ResultsDir> {
        if path.exists() {
            if !path.is_dir() {
                return Err(Error::output(path, "exists and is not a directory"));
            }
            let non_empty = fs::read_dir(path).map_err(|e| Error::output(path, format!("cannot read: {e}")))?.next().is_some();
            if non_empty && !force {
                return Err(Error::output(path, "already holds results; pass --force to overwrite them, or choose another --out"));
            }
        }
        Ok(ResultsDir { path: path.to_path_buf() })
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
        assert!(!dir.exists(), "claim must not create anything");
        r.write("metrics.json", b"{\"a\":1}").unwrap();
        let e = ResultsDir::claim(&dir, false).unwrap_err().to_string();
        assert!(e.contains("--force"), "{e}");
        assert_eq!(fs::read(dir.join("metrics.json")).unwrap(), b"{\"a\":1}");
        let r = ResultsDir::claim(&dir, true).unwrap();
        r.write("metrics.json", b"{}").unwrap();
        assert_eq!(fs::read(dir.join("metrics.json")).unwrap(), b"{}");
        // No temporary files are left behind.
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
    }
}

//! Helpers shared by integration tests.

#![allow(dead_code)]

use std::path::PathBuf;

/// The data directory for tests that need the real dataset files.
///
/// Missing data is a skip (with the reason on stderr) on a developer machine, but a
/// failure in CI (`CI=true`), where a silently skipped test would hide a broken setup.
pub fn data_dir() -> Option<PathBuf> {
    let dir = fgl_sim::data::registry::resolve_data_dir(None).filter(|d| d.is_dir());
    if dir.is_none() {
        let msg =
            format!("dataset directory not found: set {} or place the data at ../shared/datasets", fgl_sim::data::registry::DATA_DIR_ENV);
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{msg} (CI=true: tests that need data must not be skipped)");
        }
        eprintln!("skipping: {msg}");
    }
    dir
}

/// Runs the `fgl-sim` binary built for these tests with `--data-dir data` appended when
/// given (and `FGL_DATA_DIR` removed, so nothing is found by accident).
pub fn fgl(args: &[&str], data: Option<&std::path::Path>) -> std::process::Output {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_fgl-sim"));
    cmd.args(args).env_remove("FGL_DATA_DIR");
    if let Some(d) = data {
        cmd.arg("--data-dir").arg(d);
    }
    cmd.output().expect("run fgl-sim")
}

/// The rows of `dir/reproduce.csv` after checking its header is the CSV contract's.
pub fn rows(dir: &std::path::Path) -> Vec<Vec<String>> {
    let csv = std::fs::read_to_string(dir.join("reproduce.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some(fgl_sim::reproduce::CSV_HEADER));
    lines.map(|l| l.split(',').map(str::to_string).collect()).collect()
}

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
        let msg = format!(
            "dataset directory not found: set {} or place the data at ../shared/datasets",
            fgl_sim::data::registry::DATA_DIR_ENV
        );
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{msg} (CI=true: tests that need data must not be skipped)");
        }
        eprintln!("skipping: {msg}");
    }
    dir
}

//! `fgl-sim datasets [fetch]`: what the data directory holds (loaded and checked), and
//! downloading the published files into it.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::data::registry;
use crate::error::Result;

/// One dataset the registry knows: `ok` and its statistics and notes when it loads from
/// the data directory, or why not.
pub(super) type Row = (&'static registry::DatasetSpec, String, Option<(crate::data::DatasetStats, Vec<String>)>, String);

/// Every dataset the registry knows, each loaded from `dir` (and checked) if it can be.
pub(super) fn rows(dir: Option<&Path>) -> Vec<Row> {
    let synthetic = Default::default();
    registry::known()
        .iter()
        .map(|spec| {
            let (status, stats) = match registry::load(spec.name, dir, &synthetic, 0) {
                Ok(ds) => ("ok".to_string(), Some((ds.stats(), ds.notes))),
                Err(e) => (format!("not loaded: {e}"), None),
            };
            (spec, status, stats, location(spec, dir))
        })
        .collect()
}

/// What `datasets --json` prints.
pub(super) fn rows_json(rows: &[Row]) -> serde_json::Value {
    let list: Vec<_> = rows
        .iter()
        .map(|(spec, status, stats, expected)| {
            json!({ "name": spec.name, "expected": expected, "description": spec.description, "status": status,
                    "stats": stats.as_ref().map(|s| &s.0), "notes": stats.as_ref().map(|s| &s.1) })
        })
        .collect();
    serde_json::Value::Array(list)
}

pub(super) fn datasets(dir: Option<&Path>, as_json: bool) -> Result<()> {
    let rows = rows(dir);
    if as_json {
        println!("{}", serde_json::to_string_pretty(&rows_json(&rows)).expect("json"));
        return Ok(());
    }
    match dir {
        Some(d) => println!("data directory: {}", d.display()),
        None => println!("data directory: not found (pass --data-dir or set {})", registry::DATA_DIR_ENV),
    }
    println!(
        "{:<19} {:>6} {:>7} {:>6} {:>5} {:>14} {:>13} {:>4}  status / expected at",
        "name", "nodes", "edges", "loops", "isol", "LCC nodes/edg", "features", "cls"
    );
    for (spec, status, stats, expected) in &rows {
        match stats {
            Some((s, notes)) => {
                let feat = match (s.feature_dim, s.feature_kind) {
                    (Some(d), Some(k)) => format!("{d} {k:?}").to_lowercase(),
                    _ => "none".to_string(),
                };
                println!(
                    "{:<19} {:>6} {:>7} {:>6} {:>5} {:>14} {:>13} {:>4}  ok  {}",
                    spec.name,
                    s.nodes,
                    s.edges,
                    s.self_loops,
                    s.isolated,
                    format!("{}/{}", s.lcc_nodes, s.lcc_edges),
                    feat,
                    s.classes,
                    expected
                );
                for n in notes {
                    println!("{:<19} note: {n}", "");
                }
            }
            None => println!("{:<19} {status}", spec.name),
        }
    }
    Ok(())
}

pub(super) fn fetch_cmd(
    names: Vec<String>,
    all: bool,
    dir: Option<PathBuf>,
    mirror: Vec<String>,
    attempts: u32,
    quiet: bool,
) -> Result<()> {
    use crate::data::fetch::{self, FetchOptions, Outcome};
    let dir = fetch::default_target(dir.as_deref())?;
    let mut opts = FetchOptions { attempts, quiet, ..FetchOptions::default() };
    if !mirror.is_empty() {
        opts.mirrors = mirror;
    }
    let names: Vec<&str> = if all { fetch::fetchable() } else { names.iter().map(String::as_str).collect() };
    let done = fetch::fetch(&names, &dir, &opts)?;
    if !quiet {
        for (f, outcome) in &done.files {
            match outcome {
                Outcome::Present => println!("present   {} (sha256 verified)", dir.join(f.path).display()),
                Outcome::Downloaded { bytes } => {
                    println!("fetched   {} ({bytes} bytes received, sha256 verified)", dir.join(f.path).display())
                }
            }
        }
        for path in &done.built {
            println!("built     {} (from the files above)", dir.join(path).display());
        }
        println!("{} ready in {}", names.join(", "), dir.display());
    }
    Ok(())
}

/// Where `spec`'s first file is expected (the rest sit beside it).
pub(super) fn location(spec: &registry::DatasetSpec, dir: Option<&Path>) -> String {
    match (spec.files.first(), dir) {
        (None, _) => "(generated, no files)".to_string(),
        (Some(f), Some(d)) => d.join(f).display().to_string(),
        (Some(f), None) => format!("<data dir>/{f}"),
    }
}

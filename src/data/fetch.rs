//! `fgl-sim datasets fetch`: download a dataset's files from their public original
//! locations into the data directory, verify each one's sha256 against the registry's
//! table of published files, and put it where the loaders read it (building the files
//! derived from them, [`derive`]).
//!
//! Every file is a blob of a public GitHub repository at a pinned commit (the provenance
//! table of the data README), so one URL template per mirror serves all of them. A file
//! is written to `.<name>.part` beside its destination and renamed into place only once
//! its checksum matches: an interrupted or corrupted download never leaves a file the
//! loaders would read. Dropped connections resume with an HTTP range request.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sha2::{Digest, Sha256};

use super::derive::{self, Derived};
use super::registry::{self, DatasetSpec};
pub use super::registry::{REMOTE_FILES as FILES, RemoteFile};
use crate::error::{Error, Result};

/// Where files are downloaded from: URL templates with `{repo}`, `{commit}` and `{path}`,
/// tried in order (GitHub's raw file host, then the jsDelivr CDN's copy of it).
pub const DEFAULT_MIRRORS: &[&str] =
    &["https://raw.githubusercontent.com/{repo}/{commit}/{path}", "https://cdn.jsdelivr.net/gh/{repo}@{commit}/{path}"];

/// Environment variable with mirror templates (separated by whitespace) to use instead.
pub const MIRRORS_ENV: &str = "FGL_DATASET_MIRRORS";

/// How to fetch.
#[derive(Debug, Clone)]
pub struct FetchOptions {
    /// URL templates, tried in order for each file.
    pub mirrors: Vec<String>,
    /// Attempts per mirror; each one resumes where the last stopped.
    pub attempts: u32,
    /// Wait before the second attempt, doubled before each later one.
    pub retry_delay: Duration,
    /// No progress bars.
    pub quiet: bool,
}

impl Default for FetchOptions {
    fn default() -> Self {
        let mirrors = match std::env::var(MIRRORS_ENV) {
            Ok(v) if !v.trim().is_empty() => v.split_whitespace().map(str::to_string).collect(),
            _ => DEFAULT_MIRRORS.iter().map(|s| s.to_string()).collect(),
        };
        FetchOptions { mirrors, attempts: 4, retry_delay: Duration::from_millis(500), quiet: false }
    }
}

impl RemoteFile {
    /// This file's URL under a mirror template.
    pub fn url(&self, template: &str) -> String {
        template.replace("{repo}", self.repo).replace("{commit}", self.commit).replace("{path}", self.source)
    }
}

/// The remote files of dataset `spec`, or why it cannot be fetched.
pub fn files_of(spec: &DatasetSpec) -> Result<Vec<&'static RemoteFile>> {
    if spec.is_synthetic() {
        return Ok(Vec::new());
    }
    registry::remote_files(spec).map_err(|f| {
        Error::dataset(
            spec.name,
            format!(
                "cannot be fetched: its file {f} is not a published file (or built from ones); copy it into the data directory. \
                 Fetchable: {}",
                fetchable().join(", ")
            ),
        )
    })
}

/// The names of the datasets `fetch` can download.
pub fn fetchable() -> Vec<&'static str> {
    registry::known().iter().filter(|s| !s.is_synthetic() && registry::remote_files(s).is_ok()).map(|s| s.name).collect()
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Already there with the right checksum: nothing downloaded.
    Present,
    /// Downloaded (bytes received over the network, counting resumed parts once).
    Downloaded { bytes: u64 },
}

/// Fetch every file of the datasets `names` into `dir`: each file ends up verified in
/// place, or the first failure is returned (files already verified stay).
pub fn fetch(names: &[&str], dir: &Path, opts: &FetchOptions) -> Result<Fetched> {
    let mut files: Vec<&'static RemoteFile> = Vec::new();
    let mut derived: Vec<&'static Derived> = Vec::new();
    for name in names {
        let spec =
            registry::spec(name).ok_or_else(|| Error::dataset(*name, format!("unknown dataset; fetchable: {}", fetchable().join(", "))))?;
        if spec.is_synthetic() {
            return Err(Error::dataset(*name, "is generated, there is nothing to fetch"));
        }
        for f in files_of(spec)? {
            if !files.contains(&f) {
                files.push(f);
            }
        }
        for d in spec.files.iter().filter_map(|f| derive::derived(f)) {
            if !derived.iter().any(|e| e.path == d.path) {
                derived.push(d);
            }
        }
    }
    if opts.mirrors.is_empty() {
        return Err(Error::param("--mirror", "no mirror to download from"));
    }
    if let Some(m) = opts.mirrors.iter().find(|m| !m.contains("{path}")) {
        return Err(Error::param(
            "--mirror",
            format!("`{m}` has no {{path}}: a template names each file with {{repo}}, {{commit}} and {{path}}"),
        ));
    }
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(20)))
        .timeout_recv_response(Some(Duration::from_secs(60)))
        .timeout_recv_body(Some(Duration::from_secs(60)))
        .http_status_as_error(false)
        .user_agent(concat!("fgl-sim/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let files = files.into_iter().map(|f| Ok((f, fetch_file(&agent, f, dir, opts)?))).collect::<Result<Vec<_>>>()?;
    // A derived file is (re)built when missing or when one of its inputs just arrived.
    let mut built = Vec::new();
    for d in derived {
        let fresh = files.iter().any(|(f, o)| d.inputs.contains(&f.path) && matches!(o, Outcome::Downloaded { .. }));
        if fresh || !dir.join(d.path).is_file() {
            d.build(dir)?;
            built.push(d.path);
        }
    }
    Ok(Fetched { files, built })
}

/// What [`fetch`] did.
#[derive(Debug)]
pub struct Fetched {
    /// Each published file, and whether it was downloaded or already there.
    pub files: Vec<(&'static RemoteFile, Outcome)>,
    /// The files built from published ones in this call.
    pub built: Vec<&'static str>,
}

/// The sha256 of a file, as lowercase hex.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut hasher = Sha256::new();
    io::copy(&mut File::open(path)?, &mut hasher)?;
    Ok(hex(&hasher.finalize()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn fetch_file(agent: &ureq::Agent, f: &RemoteFile, dir: &Path, opts: &FetchOptions) -> Result<Outcome> {
    let dest = dir.join(f.path);
    if dest.is_file() {
        let have = sha256_file(&dest).map_err(|e| Error::data_file(&dest, format!("cannot read it: {e}")))?;
        if have == f.sha256 {
            return Ok(Outcome::Present);
        }
        // A stale or damaged copy: replaced below, atomically, once a good one arrives.
    }
    let bar = progress_bar(f, opts.quiet);
    let result = super::into_place(&dest, |part| download_verified(agent, f, &dest, part, opts, &bar));
    bar.finish_and_clear();
    Ok(Outcome::Downloaded { bytes: result? })
}

/// Download `f` (bound for `dest`) into `part` from the first mirror that yields the right bytes; the
/// number of bytes received.
fn download_verified(agent: &ureq::Agent, f: &RemoteFile, dest: &Path, part: &Path, opts: &FetchOptions, bar: &ProgressBar) -> Result<u64> {
    let mut failures = Vec::new();
    let mut received = 0;
    for template in &opts.mirrors {
        let url = f.url(template);
        let _ = fs::remove_file(part);
        let mut delay = opts.retry_delay;
        let mut last = String::new();
        for attempt in 1..=opts.attempts.max(1) {
            if attempt > 1 {
                std::thread::sleep(delay);
                delay *= 2;
            }
            match download_attempt(agent, &url, f, part, bar, &mut received) {
                Ok(()) => {}
                Err(Attempt::Retry(msg)) => {
                    last = format!("{msg} (after {attempt} attempt{})", if attempt == 1 { "" } else { "s" });
                    continue;
                }
                Err(Attempt::GiveUp(msg)) => {
                    last = msg;
                    break;
                }
            }
            let actual = sha256_file(part).map_err(|e| Error::data_file(part, format!("cannot read the download: {e}")))?;
            if actual == f.sha256 {
                return Ok(received);
            }
            let _ = fs::remove_file(part);
            last = format!("checksum mismatch: expected sha256 {}, got {actual}", f.sha256);
            break;
        }
        failures.push(format!("{url}: {last}"));
    }
    Err(Error::data_file(dest, format!("download failed, nothing was kept: {}", failures.join("; "))))
}

enum Attempt {
    /// Worth another try (a dropped connection, a timeout, a server error).
    Retry(String),
    /// Not found or refused: try the next mirror.
    GiveUp(String),
}

/// One request: resumes `part` with a range request when it holds a prefix.
fn download_attempt(
    agent: &ureq::Agent,
    url: &str,
    f: &RemoteFile,
    part: &Path,
    bar: &ProgressBar,
    received: &mut u64,
) -> std::result::Result<(), Attempt> {
    let have = fs::metadata(part).map(|m| m.len()).unwrap_or(0);
    if have >= f.bytes && have > 0 {
        return Ok(());
    }
    let mut request = agent.get(url);
    if have > 0 {
        request = request.header("Range", format!("bytes={have}-"));
    }
    let response = request.call().map_err(|e| Attempt::Retry(e.to_string()))?;
    let status = response.status().as_u16();
    let append = match status {
        206 if have > 0 => true,
        200 => false,
        404 | 403 | 410 | 401 => return Err(Attempt::GiveUp(format!("HTTP {status}"))),
        _ => return Err(Attempt::Retry(format!("HTTP {status}"))),
    };
    let mut out = if append { OpenOptions::new().append(true).open(part) } else { File::create(part) }
        .map_err(|e| Attempt::GiveUp(format!("cannot write {}: {e}", part.display())))?;
    let start = if append { have } else { 0 };
    bar.set_position(start);
    let mut body = response.into_body().into_reader();
    let mut buf = vec![0u8; 1 << 16];
    let mut written = start;
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) => {
                out.flush().ok();
                return Err(Attempt::Retry(format!("connection lost after {written} of {} bytes: {e}", f.bytes)));
            }
        };
        out.write_all(&buf[..n]).map_err(|e| Attempt::GiveUp(format!("cannot write {}: {e}", part.display())))?;
        written += n as u64;
        *received += n as u64;
        bar.set_position(written);
        if written > f.bytes {
            return Err(Attempt::GiveUp(format!("the server sent more than the expected {} bytes", f.bytes)));
        }
    }
    out.sync_all().map_err(|e| Attempt::GiveUp(format!("cannot write {}: {e}", part.display())))?;
    if written < f.bytes {
        return Err(Attempt::Retry(format!("connection closed after {written} of {} bytes", f.bytes)));
    }
    Ok(())
}

fn progress_bar(f: &RemoteFile, quiet: bool) -> ProgressBar {
    let bar = ProgressBar::new(f.bytes);
    if quiet || !io::IsTerminal::is_terminal(&io::stderr()) {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        bar.set_draw_target(ProgressDrawTarget::stderr());
    }
    bar.set_style(
        ProgressStyle::with_template("{msg:40} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}").expect("template").progress_chars("=> "),
    );
    bar.set_message(f.path.to_string());
    bar
}

/// Where `fetch` writes ([`registry::fetch_target`]), or why there is no such place.
pub fn default_target(flag: Option<&Path>) -> Result<PathBuf> {
    registry::fetch_target(flag)
        .ok_or_else(|| Error::param("--data-dir", "this platform has no user data directory: pass --data-dir or set FGL_DATA_DIR"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fetchable_file_is_one_a_dataset_reads_and_urls_fill_the_template() {
        for f in FILES {
            let read =
                registry::known().iter().any(|s| s.files.contains(&f.path)) || derive::DERIVED.iter().any(|d| d.inputs.contains(&f.path));
            assert!(read, "{} is read by no dataset", f.path);
            assert_eq!(f.sha256.len(), 64);
            assert_eq!(f.commit.len(), 40);
        }
        let all: Vec<&str> = registry::known().iter().filter(|s| !s.is_synthetic()).map(|s| s.name).collect();
        assert_eq!(fetchable(), all);
        assert_eq!(
            FILES[0].url(DEFAULT_MIRRORS[0]),
            "https://raw.githubusercontent.com/shchur/gnn-benchmark/1e72912a0810cdf27ae54fd589a3b43358a2b161/data/npz/cora.npz"
        );
        // PubMed: Planetoid's pickles and the 7z its features are built from.
        let pubmed: Vec<&str> = files_of(registry::spec("pubmed").unwrap()).unwrap().iter().map(|f| f.path).collect();
        assert_eq!(pubmed, derive::derived("planetoid/derived/pubmed.npz").unwrap().inputs);
    }

    #[test]
    fn sha256_of_a_known_string() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("abc");
        fs::write(&p, "abc").unwrap();
        assert_eq!(sha256_file(&p).unwrap(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}

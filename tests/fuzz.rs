//! Mutation fuzzing of every parser a user's file reaches: the real files of
//! `../shared/datasets` (npz archives and their npy members, Planetoid's and igraph's
//! pickles, NIFTY's and MUSAE's CSVs) and the shipped scenario YAML, `--set` overrides and matrix
//! files, each mutated many times (bytes flipped, set to boundary values, truncated,
//! chunks repeated, numbers replaced by huge or negative ones). Properties: no panic, no
//! input slower than a bound, and every error of a data file names the file.
//!
//! The mutations come from a seeded stream, so a failure names its target and iteration
//! and reruns identically (the failing input is also saved under the temporary
//! directory). `FGL_FUZZ_ITERATIONS` (default 1500 per target: 36 000 inputs, ≈ 35 s on
//! two cores) sets the count; maintainers run more (docs/fuzzing.md).

mod common;

use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::{Rng as _, RngCore as _};

/// The slowest any one input may take.
const SLOWEST: Duration = Duration::from_secs(20);

fn iterations() -> usize {
    std::env::var("FGL_FUZZ_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(1500)
}

/// One mutation of `bytes`, drawn from `rng`.
fn mutate(bytes: &[u8], rng: &mut fgl_sim::rng::Rng) -> Vec<u8> {
    let mut b = bytes.to_vec();
    if b.is_empty() {
        return vec![rng.random()];
    }
    for _ in 0..rng.random_range(1..=4) {
        let at = rng.random_range(0..b.len());
        match rng.random_range(0..7) {
            0 => b[at] ^= 1 << rng.random_range(0..8),
            1 => b[at] = [0x00, 0xff, 0x7f, 0x80, b'-', b'9', b'\n', b'['][rng.random_range(0..8)],
            2 => b.truncate(at),
            3 => {
                let end = (at + rng.random_range(1..64)).min(b.len());
                let chunk = b[at..end].to_vec();
                b.splice(at..at, chunk);
            }
            4 => {
                let mut extra = vec![0u8; rng.random_range(1..16)];
                rng.fill_bytes(&mut extra);
                b.splice(at..at, extra);
            }
            _ => {
                // A number replaced by one that overflows, is negative or is huge.
                let Some(start) = (at..b.len()).find(|&i| b[i].is_ascii_digit()) else { continue };
                let end = (start..b.len()).find(|&i| !b[i].is_ascii_digit()).unwrap_or(b.len());
                let with: &[u8] = [&b"18446744073709551616"[..], b"-1", b"4294967296", b"1e308", b"0", b"nan"][rng.random_range(0..6)];
                b.splice(start..end, with.iter().copied());
            }
        }
        if b.is_empty() {
            break;
        }
    }
    b
}

/// Run `f` on `iterations()` mutations of `seed`, checking the properties; `check_err`
/// says whether an error is acceptable (names the file).
fn fuzz(target: &str, seed: &[u8], mut f: impl FnMut(&[u8]) -> Result<(), String>, check_err: impl Fn(&str) -> bool) {
    let mut rng = fgl_sim::rng::derive(0, "fuzz", &[target.len() as u64, target.bytes().map(u64::from).sum()]);
    let (mut ok, mut errors) = (0, 0);
    for i in 0..iterations() {
        let input = mutate(seed, &mut rng);
        let t = Instant::now();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| f(&input)));
        let took = t.elapsed();
        match outcome {
            Err(p) => {
                let msg =
                    p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default();
                let saved = save(target, i, &input);
                panic!("{target}, iteration {i}: panicked: {msg} (input saved to {})", saved.display());
            }
            Ok(Err(e)) => {
                errors += 1;
                if !check_err(&e) {
                    let saved = save(target, i, &input);
                    panic!("{target}, iteration {i}: the error does not name its file: {e} (input saved to {})", saved.display());
                }
            }
            Ok(Ok(())) => ok += 1,
        }
        if took >= SLOWEST {
            let saved = save(target, i, &input);
            panic!("{target}, iteration {i}: took {took:?} (input saved to {})", saved.display());
        }
    }
    eprintln!("{target}: {} inputs, {ok} accepted, {errors} refused cleanly", iterations());
}

fn save(target: &str, i: usize, input: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join("fgl-sim-fuzz-failures");
    let _ = std::fs::create_dir_all(&dir);
    let p = dir.join(format!("{}-{i}", target.replace(['/', ' '], "_")));
    let _ = std::fs::write(&p, input);
    p
}

/// Fuzz each of `files` in `dir` in turn (the others left as they are) through `load`,
/// whose refusals must name a file starting with `names`.
fn fuzz_files(target: &str, dir: &Path, files: &[&str], names: &str, load: impl Fn() -> fgl_sim::Result<()>) {
    for file in files {
        let path = dir.join(file);
        let original = std::fs::read(&path).unwrap();
        fuzz(
            &format!("{target} {file}"),
            &original,
            |b| {
                std::fs::write(&path, b).unwrap();
                load().map_err(|e| e.to_string())
            },
            |e| e.contains(names),
        );
        std::fs::write(&path, &original).unwrap();
    }
}

/// Fuzz each member of the npz archive `src` under 200 kB (the big arrays share their
/// readers with the smaller ones): mutated, the archive stored again at `path`, loaded
/// by `load`.
fn fuzz_npz_members(target: &str, src: &Path, path: &Path, load: impl Fn() -> fgl_sim::Result<()>, names: impl Fn(&str) -> bool) {
    let members = common::npz_members(src);
    for (k, (member, content)) in members.iter().enumerate() {
        if content.len() > 200_000 {
            continue;
        }
        fuzz(
            &format!("{target} {member}"),
            content,
            |b| {
                common::write_npz(path, &members, k, b);
                load().map_err(|e| e.to_string())
            },
            &names,
        );
    }
}

/// A copy of `files` (paths relative to `from`) in a fresh temporary directory.
fn copy(from: &Path, files: &[&str]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for f in files {
        let dest = tmp.path().join(f);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(from.join(f), dest).unwrap();
    }
    tmp
}

#[test]
fn npz_archives_and_their_members() {
    let Some(data) = common::data_dir() else { return };
    let src = data.join("gnn_benchmark_npz/cora.npz");
    let bytes = std::fs::read(&src).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("cora.npz");
    let names = |e: &str| e.contains("cora.npz");
    fuzz(
        "npz bytes",
        &bytes,
        |b| {
            std::fs::write(&path, b).unwrap();
            fgl_sim::data::loaders::load_npz(&path, "cora").map(|_| ()).map_err(|e| e.to_string())
        },
        names,
    );
    // Mutate one member and store the archive again: the npy parser sees the damage.
    fuzz_npz_members("npz member", &src, &path, || fgl_sim::data::loaders::load_npz(&path, "cora").map(|_| ()), names);
}

#[test]
fn planetoid_and_igraph_pickles() {
    let Some(data) = common::data_dir() else { return };
    let parts = ["x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"];
    let files: Vec<String> = parts.iter().map(|p| format!("planetoid/ind.cora.{p}")).collect();
    let tmp = copy(&data, &files.iter().map(String::as_str).collect::<Vec<_>>());
    let dir = tmp.path().join("planetoid");
    for part in ["y", "ty", "graph", "test.index", "x"] {
        let file = dir.join(format!("ind.cora.{part}"));
        let original = std::fs::read(&file).unwrap();
        fuzz(
            &format!("planetoid {part}"),
            &original,
            |b| {
                std::fs::write(&file, b).unwrap();
                fgl_sim::data::loaders::load_planetoid(&dir, "cora", "cora").map(|_| ()).map_err(|e| e.to_string())
            },
            |e| e.contains("ind.cora."),
        );
        std::fs::write(&file, &original).unwrap();
    }
    let pkl = data.join("rgnn_semisynthetic/student_synthetic_graph.pkl");
    let path = tmp.path().join("student.pkl");
    fuzz(
        "igraph pickle",
        &std::fs::read(&pkl).unwrap(),
        |b| {
            std::fs::write(&path, b).unwrap();
            fgl_sim::data::loaders::load_igraph_pickle(&path, "student", None).map(|_| ()).map_err(|e| e.to_string())
        },
        |e| e.contains("student.pkl"),
    );
}

#[test]
fn nifty_csv() {
    let Some(data) = common::data_dir() else { return };
    let tmp = copy(&data, &["german_nifty/german.csv", "german_nifty/german_edges.txt"]);
    let dir = tmp.path().join("german_nifty");
    let csv = dir.join("german.csv");
    let original = std::fs::read(&csv).unwrap();
    fuzz(
        "nifty german.csv",
        &original,
        |b| {
            std::fs::write(&csv, b).unwrap();
            fgl_sim::data::loaders::load_german_nifty(&dir, "german").map(|_| ()).map_err(|e| e.to_string())
        },
        |e| e.contains("german"),
    );
}

#[test]
fn scenario_yaml_set_overrides_and_matrix_files() {
    let quick = std::fs::read("scenarios/quickstart.yaml").unwrap();
    fuzz(
        "scenario yaml",
        &quick,
        |b| {
            let text = String::from_utf8_lossy(b);
            fgl_sim::scenario::Scenario::parse(&text, "q.yaml", &[]).map(|_| ()).map_err(|e| e.to_string())
        },
        |e| e.contains("q.yaml"),
    );
    let quick = String::from_utf8(quick).unwrap();
    fuzz(
        "--set override",
        b"partition.clients=5",
        |b| {
            let o = String::from_utf8_lossy(b).to_string();
            fgl_sim::scenario::Scenario::parse(&quick, "q.yaml", &[o]).map(|_| ()).map_err(|e| e.to_string())
        },
        |e| e.contains("q.yaml"),
    );
    // The shipped matrix, its base (`../quickstart.yaml`) beside it as in the repository.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("matrix")).unwrap();
    let m = tmp.path().join("matrix").join("m.yaml");
    let seed = std::fs::read("scenarios/matrix/quick.yaml").unwrap();
    std::fs::write(tmp.path().join("quickstart.yaml"), &quick).unwrap();
    fuzz(
        "matrix yaml",
        &seed,
        |b| {
            std::fs::write(&m, b).unwrap();
            fgl_sim::matrix::Matrix::load(&m).map(|_| ()).map_err(|e| e.to_string())
        },
        |e| e.contains("m.yaml") || e.contains("quickstart.yaml"),
    );
}

#[test]
fn musae_csv() {
    let Some(data) = common::data_dir() else { return };
    let tmp = copy(&data, &["lastfm_asia/lastfm_asia_target.csv", "lastfm_asia/lastfm_asia_edges.csv"]);
    let dir = tmp.path().join("lastfm_asia");
    fuzz_files("musae", &dir, &["lastfm_asia_target.csv", "lastfm_asia_edges.csv"], "lastfm_asia_", || {
        fgl_sim::data::loaders::load_musae(&dir, "lastfm_asia", "lastfm").map(|_| ())
    });
}

/// GraphData's npz holds pickled numpy object arrays (a scipy CSR adjacency, the labels):
/// one member is mutated and the archive stored again, so that the pickle reader and the
/// loader see the damage (a mutated zip mostly fails its CRC).
#[test]
fn graphdata_npz() {
    let Some(data) = common::data_dir() else { return };
    let src = data.join("graphdata_npz/cora_ml.npz");
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("cora_ml.npz");
    fuzz_npz_members(
        "graphdata member",
        &src,
        &path,
        || fgl_sim::data::loaders::load_graphdata(&path, "cora_ml").map(|_| ()),
        |e| e.contains("cora_ml.npz"),
    );
}

#[test]
fn node_csv() {
    let Some(data) = common::data_dir() else { return };
    let tmp = copy(&data, &["rgnn_semisynthetic/derived/student_nodes.csv", "rgnn_semisynthetic/derived/student_edges.csv"]);
    let dir = tmp.path().join("rgnn_semisynthetic/derived");
    fuzz_files("node csv", &dir, &["student_nodes.csv", "student_edges.csv"], "student_", || {
        fgl_sim::data::loaders::load_node_csv(&dir, "student", "student").map(|_| ())
    });
}

/// The MUSAE features json, on Facebook's first 300 pages (their rows of the target CSV,
/// the edges among them and their entries of `facebook.json`): the whole graph would take
/// too long per input.
#[test]
fn musae_json() {
    let Some(data) = common::data_dir() else { return };
    let src = data.join("facebook_page_page");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("facebook_page_page");
    std::fs::create_dir(&dir).unwrap();
    const N: u64 = 300;
    let first = |l: &str| l.split(',').next().and_then(|v| v.parse::<u64>().ok());
    let target = std::fs::read_to_string(src.join("facebook_target.csv")).unwrap();
    let rows: Vec<&str> = target.lines().enumerate().filter(|(i, l)| *i == 0 || first(l).is_some_and(|v| v < N)).map(|(_, l)| l).collect();
    std::fs::write(dir.join("facebook_target.csv"), rows.join("\n") + "\n").unwrap();
    let edges = std::fs::read_to_string(src.join("facebook_edges.csv")).unwrap();
    let kept: Vec<&str> = edges
        .lines()
        .enumerate()
        .filter(|(i, l)| *i == 0 || l.split(',').all(|v| v.trim().parse::<u64>().is_ok_and(|v| v < N)))
        .map(|(_, l)| l)
        .collect();
    std::fs::write(dir.join("facebook_edges.csv"), kept.join("\n") + "\n").unwrap();
    let all: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&std::fs::read(src.join("facebook.json")).unwrap()).unwrap();
    let some: serde_json::Map<String, serde_json::Value> = all.into_iter().filter(|(k, _)| k.parse::<u64>().is_ok_and(|v| v < N)).collect();
    let seed = serde_json::to_vec(&some).unwrap();
    let path = dir.join("facebook.json");
    std::fs::write(&path, &seed).unwrap();
    fgl_sim::data::loaders::load_musae(&dir, "facebook", "facebook").expect("the subset loads");
    fuzz(
        "musae facebook.json",
        &seed,
        |b| {
            std::fs::write(&path, b).unwrap();
            fgl_sim::data::loaders::load_musae(&dir, "facebook", "facebook").map(|_| ()).map_err(|e| e.to_string())
        },
        |e| e.contains("facebook"),
    );
}

/// The 7z reader (PubMed's features are published in a 7z archive), on an LZMA archive
/// with an LZMA-encoded header, as 7-Zip writes it, of a real text file: LastFM's
/// target CSV (its first 8 kB).
#[test]
fn seven_zip_archives() {
    let Some(data) = common::data_dir() else { return };
    let text = std::fs::read(data.join("lastfm_asia/lastfm_asia_target.csv")).unwrap();
    let seed = common::seven_zip(&[("lastfm_asia_target.csv", &text[..8192])], true, true);
    let source = Path::new("pubmed.7z");
    assert_eq!(fgl_sim::data::sevenz::extract(&seed, source).unwrap()[0].1, &text[..8192]);
    fuzz(
        "7z archive",
        &seed,
        |b| fgl_sim::data::sevenz::extract(b, source).map(|_| ()).map_err(|e| e.to_string()),
        |e| e.contains("pubmed.7z"),
    );
}

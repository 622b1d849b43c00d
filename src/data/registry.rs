//! The datasets the simulator knows by name, where their files live under the data
//! directory, and how that directory is found.

use std::path::{Path, PathBuf};

use super::loaders;
use super::synthetic::{self, SyntheticConfig};
use super::Dataset;
use crate::error::{Error, Result};

/// Environment variable naming the data directory (the `--data-dir` flag wins over it).
pub const DATA_DIR_ENV: &str = "FGL_DATA_DIR";

/// The data directory: the flag if given, else `$FGL_DATA_DIR` (if non-empty), else the
/// user data directory (`~/.local/share/fgl-sim/datasets` on Linux, where `fgl-sim
/// datasets fetch` puts files) if it exists, else `../shared/datasets` (this repository's
/// layout) if it exists; `None` when none of these applies.
pub fn resolve_data_dir(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    if let Some(v) = std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v));
    }
    if let Some(user) = user_data_dir().filter(|d| d.is_dir()) {
        return Some(user);
    }
    let relative = PathBuf::from("../shared/datasets");
    relative.is_dir().then_some(relative)
}

/// The platform's per-user data directory for datasets (the `dirs` crate's data dir +
/// `fgl-sim/datasets`).
pub fn user_data_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("fgl-sim").join("datasets"))
}

/// The command that downloads dataset `name` into `dir` (the flag only where `dir` is not
/// where `fetch` writes by default).
pub fn fetch_command(name: &str, dir: Option<&Path>) -> String {
    let default = std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()).map(PathBuf::from).or_else(user_data_dir);
    match dir {
        Some(d) if default.as_deref() != Some(d) => format!("fgl-sim datasets fetch {name} --data-dir {}", d.display()),
        _ => format!("fgl-sim datasets fetch {name}"),
    }
}

/// One file of a dataset, as published (`fgl-sim datasets fetch` downloads it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RemoteFile {
    /// Where it goes, relative to the data directory (the path the loaders read).
    pub path: &'static str,
    pub bytes: u64,
    pub sha256: &'static str,
    /// `owner/name` of the GitHub repository that publishes it.
    pub repo: &'static str,
    pub commit: &'static str,
    /// Its path in that repository.
    pub source: &'static str,
}

const GNN_BENCHMARK: (&str, &str) = ("shchur/gnn-benchmark", "1e72912a0810cdf27ae54fd589a3b43358a2b161");
const MUSAE: (&str, &str) = ("benedekrozemberczki/MUSAE", "5f901232957b6c9985d750aac48cda39a4b24285");
const FEATHER: (&str, &str) = ("benedekrozemberczki/FEATHER", "045db7963fb367eb9aed6439ceea96320e8ac7cc");
const NIFTY: (&str, &str) = ("chirag126/nifty", "6c270c5ec736c5138d455609112cf6dfcc63dcca");

const fn file(path: &'static str, bytes: u64, sha256: &'static str, (repo, commit): (&'static str, &'static str), source: &'static str) -> RemoteFile {
    RemoteFile { path, bytes, sha256, repo, commit, source }
}

/// The files that can be fetched, with the sizes and checksums of the data README.
pub static REMOTE_FILES: &[RemoteFile] = &[
    file("gnn_benchmark_npz/cora.npz", 540_580, "068e22d90c3849b4057dfb05851741428992af058efcd4e7ebb4186f3d581de2", GNN_BENCHMARK, "data/npz/cora.npz"),
    file("gnn_benchmark_npz/citeseer.npz", 1_348_784, "280278b21b434c047922e8389518861416fb3ad39389c27865ff0e6bbb0aaab7", GNN_BENCHMARK, "data/npz/citeseer.npz"),
    file("facebook_page_page/facebook.json", 2_088_766, "ea870537646a93642a0008d38aa9bfeff02018070ba97b1f3f469d9622626436", MUSAE, "input/features/facebook.json"),
    file("facebook_page_page/facebook_edges.csv", 1_882_610, "7c50d8f02a75cc0829577814a1fc14535164daa38d79c3612340c9e9cdbd4022", MUSAE, "input/edges/facebook_edges.csv"),
    file("facebook_page_page/facebook_target.csv", 1_177_912, "7bd96eafea3c2ca40f44bfa9e73642194696c21e38c7b29ed409c32ad14075cd", MUSAE, "input/target/facebook_target.csv"),
    file("lastfm_asia/lastfm_asia_edges.csv", 270_447, "548eacff61bff564ab5007831fa4a7a30e1a3956075ffd24e43310ed33555842", FEATHER, "new_node_level_dataset/edges/lastfm_asia_edges.csv"),
    file("lastfm_asia/lastfm_asia_target.csv", 56_482, "91f19215f6eca8321feec038bd32900cf13fd4f7e041a9976cf202807c72ac16", FEATHER, "new_node_level_dataset/target/lastfm_asia_target.csv"),
    file("german_nifty/german.csv", 77_765, "49cc549b1ca3f1650e3bdcd8cfce62313c763abfbcbf785d32b07fb76ae078ca", NIFTY, "dataset/german/german.csv"),
    file("german_nifty/german_edges.txt", 1_248_500, "404d107384e05a14ce9befe04a710d7df0a7492095569dc35ffb5d47742ee300", NIFTY, "dataset/german/german_edges.txt"),
];

/// The published files of `spec` (all of them), or the first file that is not published
/// as the loader reads it.
pub fn remote_files(spec: &DatasetSpec) -> std::result::Result<Vec<&'static RemoteFile>, &'static str> {
    spec.files.iter().map(|f| REMOTE_FILES.iter().find(|r| r.path == *f).ok_or(*f)).collect()
}

/// Which loader reads a dataset, with its location relative to the data directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// gnn-benchmark key layout `.npz` ([`loaders::load_npz`]).
    Npz { file: &'static str },
    /// MUSAE folder with `<prefix>_edges.csv`, `<prefix>_target.csv`, optional json.
    Musae { dir: &'static str, prefix: &'static str },
    /// `<prefix>_nodes.csv` + `<prefix>_edges.csv` ([`loaders::load_node_csv`]).
    NodeCsv { dir: &'static str, prefix: &'static str },
    /// NIFTY German: `german.csv` + `german_edges.txt`.
    GermanNifty { dir: &'static str },
    /// [`synthetic::generate`], no files.
    Synthetic,
}

/// One known dataset, as listed by `fgl-sim datasets`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatasetSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub source: Source,
    /// Files that must exist, relative to the data directory (checked before loading).
    pub files: &'static [&'static str],
    /// Replaces the loader's generic note when this copy has no features.
    pub missing_features_note: Option<&'static str>,
}

impl DatasetSpec {
    pub fn is_synthetic(&self) -> bool {
        self.source == Source::Synthetic
    }
}

const fn npz(name: &'static str, file: &'static str, files: &'static [&'static str], description: &'static str) -> DatasetSpec {
    DatasetSpec { name, description, source: Source::Npz { file }, files, missing_features_note: None }
}

static KNOWN: &[DatasetSpec] = &[
    npz(
        "cora",
        "gnn_benchmark_npz/cora.npz",
        &["gnn_benchmark_npz/cora.npz"],
        "Cora citations (LINQS, gnn-benchmark npz): 2708 nodes, 1433 binary features, 7 classes",
    ),
    npz(
        "citeseer",
        "gnn_benchmark_npz/citeseer.npz",
        &["gnn_benchmark_npz/citeseer.npz"],
        "CiteSeer citations (LINQS, gnn-benchmark npz): 3312 nodes, 3703 binary features, 6 classes",
    ),
    npz(
        "planetoid-cora",
        "planetoid/derived/cora.npz",
        &["planetoid/derived/cora.npz"],
        "Cora as in Planetoid, with the standard split (140/500/1000); class names unknown (0-6)",
    ),
    npz(
        "planetoid-citeseer",
        "planetoid/derived/citeseer.npz",
        &["planetoid/derived/citeseer.npz"],
        "CiteSeer as in Planetoid (3327 nodes, 15 unlabelled), with the standard split",
    ),
    DatasetSpec {
        name: "planetoid-pubmed",
        description: "PubMed as in Planetoid (19717 nodes, 500 TF-IDF features), with the standard split",
        source: Source::Npz { file: "planetoid/derived/pubmed.npz" },
        files: &["planetoid/derived/pubmed.npz"],
        missing_features_note: None,
    },
    npz(
        "pubmed",
        "planetoid/derived/pubmed.npz",
        &["planetoid/derived/pubmed.npz"],
        "PubMed diabetes citations (Planetoid graph with its 500 TF-IDF features): 19717 nodes, 3 classes",
    ),
    npz(
        "dblp",
        "graphdata_npz/derived/dblp.npz",
        &["graphdata_npz/derived/dblp.npz"],
        "DBLP citations (GraphData): 17716 nodes, 1639 real features, 4 classes",
    ),
    npz(
        "cora_ml",
        "graphdata_npz/derived/cora_ml.npz",
        &["graphdata_npz/derived/cora_ml.npz"],
        "Cora-ML citations (GraphData): 2995 nodes, 2879 real features, 7 classes",
    ),
    npz(
        "amazon_photo",
        "graphdata_npz/derived/amazon_photo.npz",
        &["graphdata_npz/derived/amazon_photo.npz", "graphdata_npz/derived/amazon_photo.class_names.txt"],
        "Amazon Photo co-purchases (GraphData): 7650 nodes, 745 binary features, 8 classes",
    ),
    npz(
        "amazon_cs",
        "graphdata_npz/derived/amazon_cs.npz",
        &["graphdata_npz/derived/amazon_cs.npz", "graphdata_npz/derived/amazon_cs.class_names.txt"],
        "Amazon Computers co-purchases (GraphData): 13752 nodes, 767 binary features, 10 classes",
    ),
    npz(
        "coauthor_cs",
        "graphdata_npz/derived/coauthor_cs.npz",
        &["graphdata_npz/derived/coauthor_cs.npz", "graphdata_npz/derived/coauthor_cs.class_names.txt"],
        "Coauthor CS (GraphData): 18333 nodes, 6805 count features, 15 classes",
    ),
    npz(
        "coauthor_phy",
        "graphdata_npz/derived/coauthor_phy.npz",
        &["graphdata_npz/derived/coauthor_phy.npz", "graphdata_npz/derived/coauthor_phy.class_names.txt"],
        "Coauthor Physics (GraphData): 34493 nodes, 8415 count features, 5 classes",
    ),
    DatasetSpec {
        name: "facebook",
        description: "Facebook page-page (MUSAE): 22470 nodes, 4714 binary sparse features, 4 classes",
        source: Source::Musae { dir: "facebook_page_page", prefix: "facebook" },
        files: &["facebook_page_page/facebook_edges.csv", "facebook_page_page/facebook_target.csv", "facebook_page_page/facebook.json"],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "lastfm",
        description: "LastFM Asia social network: 7624 nodes, 18 classes, no features in this copy",
        source: Source::Musae { dir: "lastfm_asia", prefix: "lastfm_asia" },
        files: &["lastfm_asia/lastfm_asia_edges.csv", "lastfm_asia/lastfm_asia_target.csv"],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "german",
        description: "German credit, RGNN semi-synthetic graph: 955 nodes, 38 integer features, 2 classes",
        source: Source::NodeCsv { dir: "rgnn_semisynthetic/derived", prefix: "german" },
        files: &["rgnn_semisynthetic/derived/german_nodes.csv", "rgnn_semisynthetic/derived/german_edges.csv"],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "student",
        description: "Student performance, RGNN semi-synthetic graph: 577 nodes, 32 integer features, 2 classes",
        source: Source::NodeCsv { dir: "rgnn_semisynthetic/derived", prefix: "student" },
        files: &["rgnn_semisynthetic/derived/student_nodes.csv", "rgnn_semisynthetic/derived/student_edges.csv"],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "german-nifty",
        description: "German credit graph as in NIFTY: 1000 nodes, 38 features (PurposeOfLoan one-hot), 2 classes",
        source: Source::GermanNifty { dir: "german_nifty" },
        files: &["german_nifty/german.csv", "german_nifty/german_edges.txt"],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "synthetic",
        description: "Generated graph (settings under `synthetic:` in the scenario); needs no files",
        source: Source::Synthetic,
        files: &[],
        missing_features_note: None,
    },
];

/// All known datasets, in the order `fgl-sim datasets` lists them.
pub fn known() -> &'static [DatasetSpec] {
    KNOWN
}

/// The spec named `name`, if known.
pub fn spec(name: &str) -> Option<&'static DatasetSpec> {
    KNOWN.iter().find(|s| s.name == name)
}

fn known_names() -> String {
    KNOWN.iter().map(|s| s.name).collect::<Vec<_>>().join(", ")
}

/// Load dataset `name`. File-based datasets read from `data_dir`; `synthetic` is
/// generated from `synthetic` and `seed`.
pub fn load(name: &str, data_dir: Option<&Path>, synthetic: &SyntheticConfig, seed: u64) -> Result<Dataset> {
    let spec = spec(name).ok_or_else(|| Error::dataset(name, format!("unknown dataset; known: {}", known_names())))?;
    if spec.is_synthetic() {
        return synthetic::generate(synthetic, seed);
    }
    let how = |dir: Option<&Path>| match remote_files(spec) {
        Ok(_) => format!("download it with `{}`", fetch_command(name, dir)),
        Err(_) => "it cannot be fetched by name (its files are derived from the published pickles): copy them there".to_string(),
    };
    let Some(dir) = data_dir else {
        return Err(Error::dataset(
            name,
            format!(
                "no data directory (none given by --data-dir or {DATA_DIR_ENV}, and neither the user data directory nor ../shared/datasets exists); {}, \
                 or point --data-dir at the folder holding {}",
                how(None),
                spec.files.first().copied().unwrap_or_default()
            ),
        ));
    };
    for f in spec.files {
        let p = dir.join(f);
        if !p.is_file() {
            return Err(Error::data_file(
                &p,
                format!("not found (dataset `{name}` needs {} under the data directory {}); {}", spec.files.join(", "), dir.display(), how(Some(dir))),
            ));
        }
    }
    let mut dataset = match spec.source {
        Source::Npz { file } => loaders::load_npz(&dir.join(file), name)?,
        Source::Musae { dir: sub, prefix } => loaders::load_musae(&dir.join(sub), prefix, name)?,
        Source::NodeCsv { dir: sub, prefix } => loaders::load_node_csv(&dir.join(sub), prefix, name)?,
        Source::GermanNifty { dir: sub } => loaders::load_german_nifty(&dir.join(sub), name)?,
        Source::Synthetic => synthetic::generate(synthetic, seed)?,
    };
    if let (Some(note), None) = (spec.missing_features_note, &dataset.features) {
        dataset.notes.retain(|n| !n.starts_with("no features"));
        dataset.notes.push(note.to_string());
    }
    Ok(dataset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_listed() {
        let mut names: Vec<&str> = known().iter().map(|s| s.name).collect();
        assert_eq!(names.len(), 18);
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 18);
        assert!(known().iter().all(|s| s.is_synthetic() == s.files.is_empty()));
    }

    #[test]
    fn unknown_and_missing_dir_errors() {
        let cfg = SyntheticConfig::default();
        let e = load("corra", None, &cfg, 0).unwrap_err().to_string();
        assert!(e.contains("unknown dataset") && e.contains("cora, citeseer"), "{e}");
        let e = load("cora", None, &cfg, 0).unwrap_err().to_string();
        assert!(e.contains("--data-dir") && e.contains(DATA_DIR_ENV) && e.contains("cora.npz") && e.contains("`fgl-sim datasets fetch cora"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = load("facebook", Some(dir.path()), &cfg, 0).unwrap_err().to_string();
        assert!(e.contains("facebook_page_page/facebook_edges.csv") && e.contains("not found"), "{e}");
        assert!(e.contains(&format!("`fgl-sim datasets fetch facebook --data-dir {}`", dir.path().display())), "{e}");
        let e = load("planetoid-cora", Some(dir.path()), &cfg, 0).unwrap_err().to_string();
        assert!(e.contains("cannot be fetched by name"), "{e}");
    }

    #[test]
    fn flag_wins() {
        assert_eq!(resolve_data_dir(Some(Path::new("/x/y"))), Some(PathBuf::from("/x/y")));
    }
}

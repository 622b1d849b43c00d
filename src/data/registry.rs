//! The datasets the simulator knows by name, where their files live under the data
//! directory, and how that directory is found.

use std::path::{Path, PathBuf};

use super::loaders;
use super::synthetic::{self, SyntheticConfig};
use super::Dataset;
use crate::error::{Error, Result};

/// Environment variable naming the data directory (the `--data-dir` flag wins over it).
pub const DATA_DIR_ENV: &str = "FGL_DATA_DIR";

/// The data directory: the flag if given, else `$FGL_DATA_DIR` (if non-empty), else
/// `../shared/datasets` relative to the current directory, else the same path relative to
/// this crate's source tree; `None` when none of these exists.
pub fn resolve_data_dir(flag: Option<&Path>) -> Option<PathBuf> {
    if let Some(p) = flag {
        return Some(p.to_path_buf());
    }
    if let Some(v) = std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(v));
    }
    let relative = PathBuf::from("../shared/datasets");
    if relative.is_dir() {
        return Some(relative);
    }
    let from_crate = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/datasets");
    from_crate.is_dir().then_some(from_crate)
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
    let Some(dir) = data_dir else {
        return Err(Error::dataset(
            name,
            format!(
                "no data directory: pass --data-dir or set {DATA_DIR_ENV} to the folder holding {}",
                spec.files.first().copied().unwrap_or_default()
            ),
        ));
    };
    for f in spec.files {
        let p = dir.join(f);
        if !p.is_file() {
            return Err(Error::data_file(
                &p,
                format!("not found (dataset `{name}` needs {} under the data directory {})", spec.files.join(", "), dir.display()),
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
        assert!(e.contains("--data-dir") && e.contains(DATA_DIR_ENV) && e.contains("cora.npz"), "{e}");
        let dir = tempfile::tempdir().unwrap();
        let e = load("facebook", Some(dir.path()), &cfg, 0).unwrap_err().to_string();
        assert!(e.contains("facebook_page_page/facebook_edges.csv") && e.contains("not found"), "{e}");
    }

    #[test]
    fn flag_wins() {
        assert_eq!(resolve_data_dir(Some(Path::new("/x/y"))), Some(PathBuf::from("/x/y")));
    }
}

//! The datasets the simulator knows by name, where their files live under the data
//! directory, and how that directory is found.

use std::path::{Path, PathBuf};

use super::Dataset;
use super::loaders::{self, rgnn_tabular::Recipe};
use super::synthetic::{self, SyntheticConfig};
use crate::error::{Error, Result};

/// Environment variable naming the data directory (the `--data-dir` flag wins over it).
pub const DATA_DIR_ENV: &str = "FGL_DATA_DIR";

/// The data directory: the flag if given, else `$FGL_DATA_DIR` (if non-empty), else the
/// user data directory (`~/.local/share/fgl-sim/datasets` on Linux, where `fgl-sim
/// datasets fetch` puts files) if it exists, else `../shared/datasets` (this repository's
/// layout) if it exists; `None` when none of these applies.
pub fn resolve_data_dir(flag: Option<&Path>) -> Option<PathBuf> {
    given_data_dir(flag).or_else(|| user_data_dir().filter(|d| d.is_dir())).or_else(|| {
        let relative = PathBuf::from("../shared/datasets");
        relative.is_dir().then_some(relative)
    })
}

/// The flag if given, else `$FGL_DATA_DIR` if non-empty.
fn given_data_dir(flag: Option<&Path>) -> Option<PathBuf> {
    flag.map(Path::to_path_buf).or_else(|| std::env::var_os(DATA_DIR_ENV).filter(|v| !v.is_empty()).map(PathBuf::from))
}

/// Where `fgl-sim datasets fetch` writes: the flag, else `$FGL_DATA_DIR`, else the user
/// data directory (`None` on a platform without one).
pub fn fetch_target(flag: Option<&Path>) -> Option<PathBuf> {
    given_data_dir(flag).or_else(user_data_dir)
}

/// The platform's per-user data directory for datasets (the `dirs` crate's data dir +
/// `fgl-sim/datasets`).
pub fn user_data_dir() -> Option<PathBuf> {
    dirs::data_dir().map(|d| d.join("fgl-sim").join("datasets"))
}

/// The command that downloads dataset `name` into `dir` (the flag only where `dir` is not
/// where `fetch` writes by default).
pub fn fetch_command(name: &str, dir: Option<&Path>) -> String {
    let default = fetch_target(None);
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
const PLANETOID: (&str, &str) = ("kimiyoung/planetoid", "af6abf468a772cc055bec88c52e4d6f51b7c37e3");
const GRAPHDATA: (&str, &str) = ("EdisonLeeeee/GraphData", "f8022c26b917346f2a461ffec0ec5ae24b36de68");
const RGNN: (&str, &str) = ("karuna-bhaila/RGNN", "1d70a437a0fdeb055ccb5f5be300af370f28dce5");
const PUBMED_DUMP: (&str, &str) = ("yottacto/parameter-server", "3cdb22c584aaab4534c94e4eb5dc2a229d037038");
const NIFTY: (&str, &str) = ("chirag126/nifty", "6c270c5ec736c5138d455609112cf6dfcc63dcca");

const fn file(
    path: &'static str,
    bytes: u64,
    sha256: &'static str,
    (repo, commit): (&'static str, &'static str),
    source: &'static str,
) -> RemoteFile {
    RemoteFile { path, bytes, sha256, repo, commit, source }
}

/// The files that can be fetched, with the sizes and checksums of the data README.
pub static REMOTE_FILES: &[RemoteFile] = &[
    file(
        "gnn_benchmark_npz/cora.npz",
        540_580,
        "068e22d90c3849b4057dfb05851741428992af058efcd4e7ebb4186f3d581de2",
        GNN_BENCHMARK,
        "data/npz/cora.npz",
    ),
    file(
        "gnn_benchmark_npz/citeseer.npz",
        1_348_784,
        "280278b21b434c047922e8389518861416fb3ad39389c27865ff0e6bbb0aaab7",
        GNN_BENCHMARK,
        "data/npz/citeseer.npz",
    ),
    file(
        "planetoid/ind.citeseer.allx",
        595_021,
        "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
        PLANETOID,
        "data/ind.citeseer.allx",
    ),
    file(
        "planetoid/ind.citeseer.ally",
        55_623,
        "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
        PLANETOID,
        "data/ind.citeseer.ally",
    ),
    file(
        "planetoid/ind.citeseer.graph",
        61_987,
        "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
        PLANETOID,
        "data/ind.citeseer.graph",
    ),
    file(
        "planetoid/ind.citeseer.test.index",
        5_000,
        "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
        PLANETOID,
        "data/ind.citeseer.test.index",
    ),
    file(
        "planetoid/ind.citeseer.tx",
        260_321,
        "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
        PLANETOID,
        "data/ind.citeseer.tx",
    ),
    file(
        "planetoid/ind.citeseer.ty",
        24_135,
        "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
        PLANETOID,
        "data/ind.citeseer.ty",
    ),
    file(
        "planetoid/ind.citeseer.x",
        31_087,
        "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
        PLANETOID,
        "data/ind.citeseer.x",
    ),
    file(
        "planetoid/ind.citeseer.y",
        3_014,
        "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
        PLANETOID,
        "data/ind.citeseer.y",
    ),
    file(
        "planetoid/ind.cora.allx",
        257_305,
        "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
        PLANETOID,
        "data/ind.cora.allx",
    ),
    file(
        "planetoid/ind.cora.ally",
        47_959,
        "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
        PLANETOID,
        "data/ind.cora.ally",
    ),
    file(
        "planetoid/ind.cora.graph",
        59_847,
        "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
        PLANETOID,
        "data/ind.cora.graph",
    ),
    file(
        "planetoid/ind.cora.test.index",
        5_000,
        "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
        PLANETOID,
        "data/ind.cora.test.index",
    ),
    file(
        "planetoid/ind.cora.tx",
        148_025,
        "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
        PLANETOID,
        "data/ind.cora.tx",
    ),
    file(
        "planetoid/ind.cora.ty",
        28_135,
        "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
        PLANETOID,
        "data/ind.cora.ty",
    ),
    file("planetoid/ind.cora.x", 22_119, "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab", PLANETOID, "data/ind.cora.x"),
    file("planetoid/ind.cora.y", 4_054, "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1", PLANETOID, "data/ind.cora.y"),
    file(
        "planetoid/ind.pubmed.ally",
        224_739,
        "0c37bbe3b5014ec365e9d393cf4791925e5ed94fb194305d74f064a8d7b50f0e",
        PLANETOID,
        "data/ind.pubmed.ally",
    ),
    file(
        "planetoid/ind.pubmed.graph",
        471_808,
        "5b89f0036ca22909471f1e6558eb42fa06e0c730a577bde5b058b40638f81dc9",
        PLANETOID,
        "data/ind.pubmed.graph",
    ),
    file(
        "planetoid/ind.pubmed.test.index",
        6_000,
        "b101d421688bbaecbd82e8a18f1e282378d6830f3a37666f28ebc47f844341b5",
        PLANETOID,
        "data/ind.pubmed.test.index",
    ),
    file(
        "planetoid/ind.pubmed.tx",
        405_505,
        "4eb5f5d0f30f26497eb0ac6ac9719d09c67e284f1ed0385c93f3ef27a671da3d",
        PLANETOID,
        "data/ind.pubmed.tx",
    ),
    file(
        "planetoid/ind.pubmed.ty",
        12_135,
        "ee2e0d4819d9fbcc403689c3bf2e49face401b605932f093bc58ab6461130fdd",
        PLANETOID,
        "data/ind.pubmed.ty",
    ),
    file(
        "planetoid/ind.pubmed.x",
        23_172,
        "fbe9cb5c47200d1b7769a26e579be3b7130b556831f9d850e77c4c74f2599b33",
        PLANETOID,
        "data/ind.pubmed.x",
    ),
    file("planetoid/ind.pubmed.y", 854, "e6c807633307a07ed659249006536a147c7999c797f11a2560752990181b41b3", PLANETOID, "data/ind.pubmed.y"),
    file(
        "pubmed_features/pubmed.7z",
        3_634_143,
        "ef2a6816d10dfcb1e11cb16625b30ca097b477c3c79b873e048ec6c8b15af78b",
        PUBMED_DUMP,
        "data/pubmed.7z",
    ),
    file(
        "graphdata_npz/amazon_cs.npz",
        3_410_531,
        "a6942db609f196b53503d91b99a02ad8d052d5d9be8ef41db976fb65f66ed1f3",
        GRAPHDATA,
        "datasets/amazon_cs.npz",
    ),
    file(
        "graphdata_npz/amazon_photo.npz",
        1_772_672,
        "bdb98b54cd3125bfa69b23ba0aae84fabcb770c6727175b8f6eb1d64f3be4b2b",
        GRAPHDATA,
        "datasets/amazon_photo.npz",
    ),
    file(
        "graphdata_npz/coauthor_cs.npz",
        2_800_548,
        "7b7b51bf270d341f1c4231834c58a526bb04db003fd76a6d2f51ad7d252005ed",
        GRAPHDATA,
        "datasets/coauthor_cs.npz",
    ),
    file(
        "graphdata_npz/coauthor_phy.npz",
        3_772_032,
        "1c930d99910763bc5f0c1aa90e8baa945f5ad6027663fe5332d0f08fde33cd7d",
        GRAPHDATA,
        "datasets/coauthor_phy.npz",
    ),
    file(
        "graphdata_npz/cora_ml.npz",
        778_126,
        "590d93689ec70aa0da17b3f1c6915dfd3c1b6306ad4f3286a2075599f7a85630",
        GRAPHDATA,
        "datasets/cora_ml.npz",
    ),
    file(
        "graphdata_npz/dblp.npz",
        727_093,
        "e1c460c864735b88158e230e715715b08a8f7bb7c94f7f6c3b5efc412558877d",
        GRAPHDATA,
        "datasets/dblp.npz",
    ),
    file(
        "facebook_page_page/facebook.json",
        2_088_766,
        "ea870537646a93642a0008d38aa9bfeff02018070ba97b1f3f469d9622626436",
        MUSAE,
        "input/features/facebook.json",
    ),
    file(
        "facebook_page_page/facebook_edges.csv",
        1_882_610,
        "7c50d8f02a75cc0829577814a1fc14535164daa38d79c3612340c9e9cdbd4022",
        MUSAE,
        "input/edges/facebook_edges.csv",
    ),
    file(
        "facebook_page_page/facebook_target.csv",
        1_177_912,
        "7bd96eafea3c2ca40f44bfa9e73642194696c21e38c7b29ed409c32ad14075cd",
        MUSAE,
        "input/target/facebook_target.csv",
    ),
    file(
        "lastfm_asia/lastfm_asia_edges.csv",
        270_447,
        "548eacff61bff564ab5007831fa4a7a30e1a3956075ffd24e43310ed33555842",
        FEATHER,
        "new_node_level_dataset/edges/lastfm_asia_edges.csv",
    ),
    file(
        "lastfm_asia/lastfm_asia_target.csv",
        56_482,
        "91f19215f6eca8321feec038bd32900cf13fd4f7e041a9976cf202807c72ac16",
        FEATHER,
        "new_node_level_dataset/target/lastfm_asia_target.csv",
    ),
    file(
        "rgnn_semisynthetic/german_synthetic_graph.pkl",
        228_094,
        "860b941dc8e5f1cc3fa7b158584dfb017e449858eb4b49663bdb0bf7334038f2",
        RGNN,
        "RGNN/datasets/german/german/raw/german_synthetic_graph.pkl",
    ),
    file(
        "rgnn_semisynthetic/student_synthetic_graph.pkl",
        99_390,
        "00d32c9846d8ee1ef25e087d92b946b267616d467142df392ed79f808048859d",
        RGNN,
        "RGNN/datasets/student/student/raw/student_synthetic_graph.pkl",
    ),
    file(
        "german_nifty/german.csv",
        77_765,
        "49cc549b1ca3f1650e3bdcd8cfce62313c763abfbcbf785d32b07fb76ae078ca",
        NIFTY,
        "dataset/german/german.csv",
    ),
    file(
        "german_nifty/german_edges.txt",
        1_248_500,
        "404d107384e05a14ce9befe04a710d7df0a7492095569dc35ffb5d47742ee300",
        NIFTY,
        "dataset/german/german_edges.txt",
    ),
];

/// The published files `spec` is read from: its files, or for a file built from published
/// ones ([`derive`](super::derive)) that file's inputs; else the first file that is
/// neither.
pub fn remote_files(spec: &DatasetSpec) -> std::result::Result<Vec<&'static RemoteFile>, &'static str> {
    let mut out: Vec<&'static RemoteFile> = Vec::new();
    for f in spec.files {
        let inputs: Vec<&str> = match super::derive::derived(f) {
            Some(d) => d.inputs.to_vec(),
            None => vec![*f],
        };
        for i in inputs {
            let r = REMOTE_FILES.iter().find(|r| r.path == i).ok_or(*f)?;
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    Ok(out)
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
    /// A pickled `igraph.Graph` ([`loaders::load_igraph_pickle`]), its attributes as they
    /// are or through RGNN's preprocessing.
    IgraphPickle { file: &'static str, recipe: Option<Recipe> },
    /// GraphData `.npz` with pickled matrices ([`loaders::load_graphdata`]).
    GraphData { file: &'static str },
    /// Planetoid's raw pickles `ind.<prefix>.*` ([`loaders::load_planetoid`]).
    Planetoid { dir: &'static str, prefix: &'static str },
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

const fn graphdata(name: &'static str, file: &'static str, files: &'static [&'static str], description: &'static str) -> DatasetSpec {
    DatasetSpec { name, description, source: Source::GraphData { file }, files, missing_features_note: None }
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
    DatasetSpec {
        name: "planetoid-cora",
        description: "Cora as in Planetoid, with the standard split (140/500/1000); class names unknown (0-6)",
        source: Source::Planetoid { dir: "planetoid", prefix: "cora" },
        files: &[
            "planetoid/ind.cora.x",
            "planetoid/ind.cora.y",
            "planetoid/ind.cora.allx",
            "planetoid/ind.cora.ally",
            "planetoid/ind.cora.tx",
            "planetoid/ind.cora.ty",
            "planetoid/ind.cora.graph",
            "planetoid/ind.cora.test.index",
        ],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "planetoid-citeseer",
        description: "CiteSeer as in Planetoid (3327 nodes, 15 unlabelled), with the standard split",
        source: Source::Planetoid { dir: "planetoid", prefix: "citeseer" },
        files: &[
            "planetoid/ind.citeseer.x",
            "planetoid/ind.citeseer.y",
            "planetoid/ind.citeseer.allx",
            "planetoid/ind.citeseer.ally",
            "planetoid/ind.citeseer.tx",
            "planetoid/ind.citeseer.ty",
            "planetoid/ind.citeseer.graph",
            "planetoid/ind.citeseer.test.index",
        ],
        missing_features_note: None,
    },
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
    graphdata(
        "dblp",
        "graphdata_npz/dblp.npz",
        &["graphdata_npz/dblp.npz"],
        "DBLP citations (GraphData): 17716 nodes, 1639 real features, 4 classes",
    ),
    graphdata(
        "cora_ml",
        "graphdata_npz/cora_ml.npz",
        &["graphdata_npz/cora_ml.npz"],
        "Cora-ML citations (GraphData): 2995 nodes, 2879 real features, 7 classes",
    ),
    graphdata(
        "amazon_photo",
        "graphdata_npz/amazon_photo.npz",
        &["graphdata_npz/amazon_photo.npz"],
        "Amazon Photo co-purchases (GraphData): 7650 nodes, 745 binary features, 8 classes",
    ),
    graphdata(
        "amazon_cs",
        "graphdata_npz/amazon_cs.npz",
        &["graphdata_npz/amazon_cs.npz"],
        "Amazon Computers co-purchases (GraphData): 13752 nodes, 767 binary features, 10 classes",
    ),
    graphdata(
        "coauthor_cs",
        "graphdata_npz/coauthor_cs.npz",
        &["graphdata_npz/coauthor_cs.npz"],
        "Coauthor CS (GraphData): 18333 nodes, 6805 count features, 15 classes",
    ),
    graphdata(
        "coauthor_phy",
        "graphdata_npz/coauthor_phy.npz",
        &["graphdata_npz/coauthor_phy.npz"],
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
        description: "German credit, RGNN semi-synthetic graph: 955 nodes, 2 classes; features as RGNN's data.py makes them (37 attributes selected, age, duration and amount binned and one-hot, counts thresholded)",
        source: Source::IgraphPickle { file: "rgnn_semisynthetic/german_synthetic_graph.pkl", recipe: Some(Recipe::German) },
        files: &["rgnn_semisynthetic/german_synthetic_graph.pkl"],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "student",
        description: "Student performance, RGNN semi-synthetic graph: 577 nodes, 2 classes; features as RGNN's data.py makes them (25 attributes selected, grades thresholded at 10, codes one-hot)",
        source: Source::IgraphPickle { file: "rgnn_semisynthetic/student_synthetic_graph.pkl", recipe: Some(Recipe::Student) },
        files: &["rgnn_semisynthetic/student_synthetic_graph.pkl"],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "german-raw",
        description: "German credit, RGNN semi-synthetic graph: 955 nodes, the 38 raw integer attributes, 2 classes",
        source: Source::IgraphPickle { file: "rgnn_semisynthetic/german_synthetic_graph.pkl", recipe: None },
        files: &["rgnn_semisynthetic/german_synthetic_graph.pkl"],
        missing_features_note: None,
    },
    DatasetSpec {
        name: "student-raw",
        description: "Student performance, RGNN semi-synthetic graph: 577 nodes, the 32 raw integer attributes, 2 classes",
        source: Source::IgraphPickle { file: "rgnn_semisynthetic/student_synthetic_graph.pkl", recipe: None },
        files: &["rgnn_semisynthetic/student_synthetic_graph.pkl"],
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
        Err(f) => format!("`{name}` cannot be fetched by name ({f} is not a published file): copy it there"),
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
                format!(
                    "not found (dataset `{name}` needs {} under the data directory {}); {}",
                    spec.files.join(", "),
                    dir.display(),
                    how(Some(dir))
                ),
            ));
        }
    }
    let mut dataset = match spec.source {
        Source::Npz { file } => loaders::load_npz(&dir.join(file), name)?,
        Source::Musae { dir: sub, prefix } => loaders::load_musae(&dir.join(sub), prefix, name)?,
        Source::NodeCsv { dir: sub, prefix } => loaders::load_node_csv(&dir.join(sub), prefix, name)?,
        Source::GermanNifty { dir: sub } => loaders::load_german_nifty(&dir.join(sub), name)?,
        Source::IgraphPickle { file, recipe } => loaders::load_igraph_pickle(&dir.join(file), name, recipe)?,
        Source::GraphData { file } => loaders::load_graphdata(&dir.join(file), name)?,
        Source::Planetoid { dir: sub, prefix } => loaders::load_planetoid(&dir.join(sub), prefix, name)?,
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
        assert_eq!(names.len(), 20);
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 20);
        assert!(known().iter().all(|s| s.is_synthetic() == s.files.is_empty()));
    }

    #[test]
    fn unknown_and_missing_dir_errors() {
        let cfg = SyntheticConfig::default();
        let e = load("corra", None, &cfg, 0).unwrap_err().to_string();
        assert!(e.contains("unknown dataset") && e.contains("cora, citeseer"), "{e}");
        let e = load("cora", None, &cfg, 0).unwrap_err().to_string();
        assert!(
            e.contains("--data-dir") && e.contains(DATA_DIR_ENV) && e.contains("cora.npz") && e.contains("`fgl-sim datasets fetch cora"),
            "{e}"
        );
        let dir = tempfile::tempdir().unwrap();
        let e = load("facebook", Some(dir.path()), &cfg, 0).unwrap_err().to_string();
        assert!(e.contains("facebook_page_page/facebook_edges.csv") && e.contains("not found"), "{e}");
        assert!(e.contains(&format!("`fgl-sim datasets fetch facebook --data-dir {}`", dir.path().display())), "{e}");
    }

    #[test]
    fn flag_wins() {
        assert_eq!(resolve_data_dir(Some(Path::new("/x/y"))), Some(PathBuf::from("/x/y")));
    }
}

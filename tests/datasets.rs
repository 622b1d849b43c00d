//! Every file dataset loads and reproduces the statistics table of
//! `shared/datasets/README.md`; malformed files give errors that name the file.

mod common;

use std::io::Write;
use std::path::Path;

use fgl_sim::data::loaders::{load_german_nifty, load_musae, load_node_csv, load_npz};
use fgl_sim::data::registry;
use fgl_sim::data::synthetic::SyntheticConfig;
use fgl_sim::data::{Dataset, FeatureKind, Role};

fn load(name: &str) -> Option<Dataset> {
    let dir = common::data_dir()?;
    Some(registry::load(name, Some(&dir), &SyntheticConfig::default(), 0).unwrap_or_else(|e| panic!("{name}: {e}")))
}

/// One row of the README table.
struct Expect {
    nodes: usize,
    edges: usize,
    self_loops: usize,
    isolated: usize,
    lcc: (usize, usize),
    feature_dim: Option<usize>,
    /// `None` where the README does not state a kind ("mixed", "integers").
    kind: Option<FeatureKind>,
    /// Stored non-zeros, where known (the npz `attr_data` length, Facebook's 314583).
    nnz: Option<usize>,
    classes: usize,
    labelled: usize,
}

fn check(name: &str, e: Expect) -> Option<Dataset> {
    let d = load(name)?;
    let s = d.stats();
    let got = (s.nodes, s.edges, s.self_loops, s.isolated, (s.lcc_nodes, s.lcc_edges), s.feature_dim, s.classes, s.labelled);
    let want = (e.nodes, e.edges, e.self_loops, e.isolated, e.lcc, e.feature_dim, e.classes, e.labelled);
    assert_eq!(got, want, "{name}: (nodes, edges, self loops, isolated, lcc, dim, classes, labelled)");
    if e.kind.is_some() {
        assert_eq!(s.feature_kind, e.kind, "{name}: feature kind");
    }
    if e.nnz.is_some() {
        assert_eq!(s.feature_nnz, e.nnz, "{name}: feature nnz");
    }
    assert_eq!(d.name, name);
    Some(d)
}

#[allow(clippy::too_many_arguments)]
fn ex(
    nodes: usize,
    edges: usize,
    self_loops: usize,
    isolated: usize,
    lcc: (usize, usize),
    feature_dim: Option<usize>,
    kind: Option<FeatureKind>,
    nnz: Option<usize>,
    classes: usize,
    labelled: usize,
) -> Expect {
    Expect { nodes, edges, self_loops, isolated, lcc, feature_dim, kind, nnz, classes, labelled }
}

use FeatureKind::{Binary, Counts, Real};

#[test]
fn cora() {
    let Some(d) = check("cora", ex(2708, 5278, 0, 0, (2485, 5069), Some(1433), Some(Binary), Some(49216), 7, 2708)) else {
        return;
    };
    let names = [
        "Case_Based",
        "Genetic_Algorithms",
        "Neural_Networks",
        "Probabilistic_Methods",
        "Reinforcement_Learning",
        "Rule_Learning",
        "Theory",
    ];
    assert_eq!(d.class_names, names);
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![298, 418, 818, 426, 217, 180, 351]);
    assert!(d.features.as_ref().unwrap().is_sparse());
    assert!(d.standard_split.is_none());
}

#[test]
fn citeseer() {
    let Some(d) = check("citeseer", ex(3312, 4536, 124, 48, (2110, 3668), Some(3703), Some(Binary), Some(105165), 6, 3312)) else {
        return;
    };
    assert_eq!(d.class_names, ["AI", "Agents", "DB", "HCI", "IR", "ML"]);
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![249, 596, 701, 508, 668, 590]);
}

#[test]
fn planetoid_cora() {
    let Some(d) = check("planetoid-cora", ex(2708, 5278, 0, 0, (2485, 5069), Some(1433), Some(Binary), Some(49216), 7, 2708)) else {
        return;
    };
    let s = d.standard_split.as_ref().expect("planetoid ships a split");
    assert_eq!((s.count(Role::Train), s.count(Role::Val), s.count(Role::Test)), (140, 500, 1000));
    // Planetoid ids: 0 Theory (351) … 6 Rule_Learning (180), per the README.
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![351, 217, 418, 818, 426, 298, 180]);
}

#[test]
fn planetoid_citeseer() {
    let Some(d) = check("planetoid-citeseer", ex(3327, 4552, 124, 48, (2120, 3679), Some(3703), Some(Binary), Some(105165), 6, 3312))
    else {
        return;
    };
    assert_eq!(d.labels.iter().filter(|y| y.is_none()).count(), 15);
    for v in [2407, 2489, 2553, 2682, 2781, 2953, 3042, 3063, 3212, 3214, 3250, 3292, 3305, 3306, 3309] {
        assert_eq!(d.labels[v], None, "node {v} should be unlabelled");
    }
    let s = d.standard_split.as_ref().expect("planetoid ships a split");
    assert_eq!((s.count(Role::Train), s.count(Role::Val), s.count(Role::Test)), (120, 500, 1000));
}

#[test]
fn planetoid_pubmed() {
    // The data README: 500 real TF-IDF features, 988031 non-zeros.
    let Some(d) = check("planetoid-pubmed", ex(19717, 44324, 3, 0, (19717, 44324), Some(500), Some(Real), Some(988031), 3, 19717)) else {
        return;
    };
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![4103, 7739, 7875]);
    assert!(d.notes.is_empty(), "{:?}", d.notes);
    let s = d.standard_split.as_ref().expect("planetoid ships a split");
    assert_eq!((s.count(Role::Train), s.count(Role::Val), s.count(Role::Test)), (60, 500, 1000));
}

/// `pubmed` (LPGNN's name) is the same graph with its features.
#[test]
fn pubmed_has_its_features() {
    let Some(d) = check("pubmed", ex(19717, 44324, 3, 0, (19717, 44324), Some(500), Some(Real), Some(988031), 3, 19717)) else {
        return;
    };
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![4103, 7739, 7875]);
}

#[test]
fn dblp() {
    check("dblp", ex(17716, 52867, 0, 0, (16191, 51913), Some(1639), Some(Real), Some(92192), 4, 17716));
}

#[test]
fn cora_ml() {
    check("cora_ml", ex(2995, 8158, 0, 0, (2810, 7981), Some(2879), Some(Real), Some(151171), 7, 2995));
}

#[test]
fn amazon_photo() {
    let Some(d) = check("amazon_photo", ex(7650, 119081, 1, 115, (7487, 119043), Some(745), Some(Binary), Some(1979909), 8, 7650)) else {
        return;
    };
    assert_eq!(d.class_names[0], "Film Photography");
    assert_eq!(d.class_names[7], "Flashes");
}

#[test]
fn amazon_cs() {
    let Some(d) = check("amazon_cs", ex(13752, 245861, 0, 281, (13381, 245778), Some(767), Some(Binary), Some(3675081), 10, 13752)) else {
        return;
    };
    assert_eq!(d.class_names[0], "Desktops");
}

#[test]
fn coauthor_cs() {
    let Some(d) = check("coauthor_cs", ex(18333, 81894, 0, 0, (18333, 81894), Some(6805), Some(Counts), Some(1092079), 15, 18333)) else {
        return;
    };
    assert_eq!(d.class_names[14], "theoretical_cs");
}

#[test]
fn coauthor_phy() {
    let Some(d) = check("coauthor_phy", ex(34493, 247962, 0, 0, (34493, 247962), Some(8415), Some(Counts), Some(1137311), 5, 34493)) else {
        return;
    };
    assert_eq!(d.class_names, ["phys rev d", "phys rev a", "phys rev b", "phys rev c", "phys rev e"]);
}

#[test]
fn facebook() {
    let Some(d) = check("facebook", ex(22470, 170823, 179, 0, (22470, 170823), Some(4714), Some(Binary), Some(314583), 4, 22470)) else {
        return;
    };
    assert_eq!(d.class_names, ["company", "government", "politician", "tvshow"]);
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![6495, 6880, 5768, 3327]);
    assert!(d.features.as_ref().unwrap().is_sparse());
    assert_eq!(d.build_report.raw_entries, 171002);
}

#[test]
fn lastfm() {
    let Some(d) = check("lastfm", ex(7624, 27806, 0, 0, (7624, 27806), None, None, None, 18, 7624)) else {
        return;
    };
    assert!(d.features.is_none());
    assert_eq!(d.notes, vec!["no features: lastfm_asia_features.json is not in the data directory".to_string()]);
    let e = d.require_features().unwrap_err().to_string();
    assert!(e.contains("no node features") && e.contains("lastfm"), "{e}");
    let counts = [1098, 54, 73, 515, 16, 391, 655, 82, 468, 58, 1303, 138, 57, 63, 570, 257, 254, 1572];
    assert_eq!(d.label_counts(0..d.num_nodes()), counts);
}

/// 29 non-label columns: Gender (→ 1 column, Male = 1), PurposeOfLoan (10 values →
/// 10 one-hot columns) and 27 numeric columns: 1 + 27 + 10 = 38 features, the same
/// count and order as RGNN's German attributes.
#[test]
fn german_nifty() {
    let Some(d) = check("german-nifty", ex(1000, 21742, 0, 0, (1000, 21742), Some(38), None, None, 2, 1000)) else {
        return;
    };
    assert_eq!(d.class_names, ["bad", "good"]);
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![300, 700]);
    let f = d.features.as_ref().unwrap().to_dense();
    // Row 0: GoodCustomer 1, Male, ForeignWorker 0, Single 1, Age 67, LoanDuration 6,
    // PurposeOfLoan Electronics (third of the sorted purposes), LoanAmount 1169.
    assert_eq!(&f.row(0)[..6], &[1.0, 0.0, 1.0, 67.0, 6.0, 1169.0]);
    assert_eq!(&f.row(0)[28..], &[0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
    let male: f32 = (0..1000).map(|r| f.row(r)[0]).sum();
    assert_eq!(male, 690.0);
    // RGNN's German rows are a subset of these: node v there = row `name` here.
    let Some(rgnn) = load("german-raw") else { return };
    let g = rgnn.features.as_ref().unwrap().to_dense();
    for v in [0, 1, 500, 954] {
        let row = rgnn_name(v);
        assert_eq!(g.row(v), f.row(row), "RGNN german node {v} = german.csv row {row}");
        assert_eq!(rgnn.labels[v], d.labels[row]);
    }
}

/// The `name` column of RGNN's german_nodes.csv for node `v` (read directly, since the
/// loader does not keep provenance ids).
fn rgnn_name(v: usize) -> usize {
    let dir = common::data_dir().expect("checked by caller");
    let text = std::fs::read_to_string(dir.join("rgnn_semisynthetic/derived/german_nodes.csv")).unwrap();
    let line = text.lines().nth(v + 1).unwrap();
    line.split(',').nth(1).unwrap().parse().unwrap()
}

#[test]
fn german_rgnn() {
    let Some(d) = check("german-raw", ex(955, 9990, 0, 0, (953, 9989), Some(38), None, None, 2, 955)) else {
        return;
    };
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![276, 679]);
    assert_eq!(d.build_report.raw_entries, 19980);
    assert!(!d.features.as_ref().unwrap().is_sparse());
}

#[test]
fn student_rgnn() {
    let Some(d) = check("student-raw", ex(577, 4243, 0, 0, (556, 4229), Some(32), None, None, 2, 577)) else {
        return;
    };
    assert_eq!(d.label_counts(0..d.num_nodes()), vec![318, 259]);
    assert_eq!(d.build_report.raw_entries, 8411);
}

/// Every row of a preprocessed RGNN table is binary, with exactly one 1 in each one-hot
/// group: its sum is its binary columns' sum plus the number of encoded attributes.
fn binary_with_one_hot_groups(name: &str, binary: usize, groups: usize) -> Option<fgl_sim::data::DenseMatrix> {
    let d = load(name)?;
    let f = d.features.as_ref().unwrap().to_dense();
    for r in 0..f.rows {
        let row = f.row(r);
        assert!(row.iter().all(|&v| v == 0.0 || v == 1.0), "{name} row {r}: {row:?}");
        let plain: f32 = row[..binary].iter().sum();
        assert_eq!(row.iter().sum::<f32>(), plain + groups as f32, "{name} row {r}");
    }
    Some(f)
}

/// RGNN's data.py on German (node 0: Gender 1, ForeignWorker 0, Single 1, Age 67,
/// LoanDuration 6, LoanAmount 1169, LoanRate 4, YearsAtHome 4, OtherLoans 2, Liable 1,
/// Telephone 1): the binned Age 50, duration 0 and amount 1000 one-hot at the end.
#[test]
fn german_as_rgnn_preprocesses_it() {
    let Some(f) = binary_with_one_hot_groups("german", 34, 3) else { return };
    assert_eq!(f.cols, 34 + 3 + 4 + 5, "34 kept columns, Age 3 bins, LoanDuration 4, LoanAmount 5");
    assert_eq!(&f.row(0)[..8], &[1.0, 0.0, 1.0, 1.0, 1.0, 1.0, 0.0, 1.0]);
    assert_eq!(&f.row(0)[34..], &[0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0]);
}

/// RGNN's data.py on Student (node 0: address 1, Pstatus 1, famsup 1, higher 1, internet 1,
/// G1 6 and G2 7 below 10; age 17, Medu 1, Fedu 1, Mjob 0, Fjob 2 … one-hot).
#[test]
fn student_as_rgnn_preprocesses_it() {
    let Some(f) = binary_with_one_hot_groups("student", 15, 10) else { return };
    assert_eq!(&f.row(0)[..15], &[0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0]);
    // age 15–19 (20 merged into 19): the first group has 5 columns; row 0 is 17.
    assert_eq!(&f.row(0)[15..20], &[0.0, 0.0, 1.0, 0.0, 0.0]);
}

#[test]
fn registry_lists_every_dataset_and_files_exist() {
    let Some(dir) = common::data_dir() else { return };
    let specs = registry::known();
    assert_eq!(specs.iter().filter(|s| !s.is_synthetic()).count(), 19);
    for s in specs {
        for f in s.files {
            assert!(dir.join(f).is_file(), "{}: {f} missing", s.name);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Malformed input: each is an Err naming the file, never a panic.
// ---------------------------------------------------------------------------------------

fn npy(descr: &str, shape: &[usize], data: &[u8]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
    let shape_s = if dims.len() == 1 { format!("({},)", dims[0]) } else { format!("({})", dims.join(", ")) };
    let mut h = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape_s}, }}");
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(h.len() as u16).to_le_bytes());
    out.extend_from_slice(h.as_bytes());
    out.extend_from_slice(data);
    out
}

fn le<T: Copy, const N: usize>(v: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

/// A 3-node gnn-benchmark style npz; `skip` leaves one key out, `labels` and
/// `adj_indices` are given by the caller.
fn write_npz(path: &Path, skip: &str, adj_indices: &[i32], labels: &[i8]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let opt = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let nnz = adj_indices.len();
    let mut indptr = vec![0i32, 1, 2];
    indptr.push(nnz as i32);
    let arrays = [
        ("adj_data", npy("<f4", &[nnz], &le(&vec![1.0f32; nnz], f32::to_le_bytes))),
        ("adj_indices", npy("<i4", &[nnz], &le(adj_indices, i32::to_le_bytes))),
        ("adj_indptr", npy("<i4", &[4], &le(&indptr, i32::to_le_bytes))),
        ("adj_shape", npy("<i8", &[2], &le(&[3i64, 3], i64::to_le_bytes))),
        ("labels", npy("|i1", &[labels.len()], &le(labels, i8::to_le_bytes))),
    ];
    for (k, data) in arrays {
        if k != skip {
            z.start_file(format!("{k}.npy"), opt).unwrap();
            z.write_all(&data).unwrap();
        }
    }
    z.finish().unwrap();
}

fn assert_names(err: fgl_sim::Error, file: &str, also: &[&str]) {
    let msg = err.to_string();
    assert!(msg.contains(file), "error should name {file}: {msg}");
    for a in also {
        assert!(msg.contains(a), "error should mention {a:?}: {msg}");
    }
}

#[test]
fn npz_good_then_broken() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.npz");
    write_npz(&p, "", &[1, 2, 0], &[0, 1, -1]);
    let d = load_npz(&p, "g").unwrap();
    assert_eq!((d.num_nodes(), d.graph.num_edges(), d.num_classes()), (3, 3, 2));
    assert!(d.features.is_none() && d.notes[0].contains("no features"));

    write_npz(&p, "adj_indptr", &[1, 2, 0], &[0, 1, -1]);
    assert_names(load_npz(&p, "g").unwrap_err(), "g.npz", &["adj_indptr", "missing"]);

    write_npz(&p, "", &[1, 2, 0], &[0, 1]);
    assert_names(load_npz(&p, "g").unwrap_err(), "g.npz", &["labels", "2 entries", "3 nodes"]);

    write_npz(&p, "", &[1, 5, 0], &[0, 1, -1]);
    assert_names(load_npz(&p, "g").unwrap_err(), "g.npz", &["adj_indices", "= 5", "past the node count"]);

    write_npz(&p, "", &[1, 2, 0], &[0, -3, 1]);
    assert_names(load_npz(&p, "g").unwrap_err(), "g.npz", &["label -3"]);

    write_npz(&p, "", &[1, 2, 0], &[0, 1, -1]);
    let bytes = std::fs::read(&p).unwrap();
    for cut in [bytes.len() - 10, bytes.len() / 2, 100, 0] {
        std::fs::write(&p, &bytes[..cut]).unwrap();
        assert_names(load_npz(&p, "g").unwrap_err(), "g.npz", &[]);
    }
    std::fs::write(&p, b"this is not a zip archive at all").unwrap();
    assert_names(load_npz(&p, "g").unwrap_err(), "g.npz", &["zip"]);
    // Corrupt a byte inside a stored entry: the zip CRC check catches it.
    let mut corrupt = bytes.clone();
    let at = corrupt.windows(6).position(|w| w == b"\x93NUMPY").unwrap() + 70;
    corrupt[at] ^= 0xff;
    std::fs::write(&p, &corrupt).unwrap();
    assert!(load_npz(&p, "g").is_err());
    assert_names(load_npz(&dir.path().join("absent.npz"), "g").unwrap_err(), "absent.npz", &[]);
}

#[test]
fn truncated_real_npz() {
    let Some(data) = common::data_dir() else { return };
    let bytes = std::fs::read(data.join("gnn_benchmark_npz/cora.npz")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cora_cut.npz");
    std::fs::write(&p, &bytes[..bytes.len() * 2 / 3]).unwrap();
    assert_names(load_npz(&p, "cora").unwrap_err(), "cora_cut.npz", &[]);
}

#[test]
fn musae_csv_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let target = "id,target\n0,1\n1,0\n2,1\n";
    std::fs::write(d.join("m_target.csv"), target).unwrap();
    std::fs::write(d.join("m_edges.csv"), "node_1,node_2\n0,1\n1,2\n").unwrap();
    let ds = load_musae(d, "m", "m").unwrap();
    assert_eq!(ds.graph.num_edges(), 2);

    std::fs::write(d.join("m_edges.csv"), "node_1,node_2\n0,1\n1,10\n").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_edges.csv", &["line 3", "past the node count 3"]);

    std::fs::write(d.join("m_edges.csv"), "").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_edges.csv", &["empty"]);

    std::fs::write(d.join("m_edges.csv"), b"node_1,node_2\n0,1\n\xff\xfe,2\n").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_edges.csv", &["UTF-8", "line 3"]);

    std::fs::write(d.join("m_edges.csv"), "node_1,node_2\n0,1,2\n").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_edges.csv", &["line 2", "3 fields"]);

    std::fs::write(d.join("m_edges.csv"), "a,b\n0,1\n").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_edges.csv", &["node_1,node_2"]);

    std::fs::write(d.join("m_edges.csv"), "node_1,node_2\n0,x\n").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_edges.csv", &["line 2", "node_2", "\"x\""]);

    std::fs::write(d.join("m_edges.csv"), "node_1,node_2\n0,1\n").unwrap();
    std::fs::write(d.join("m_target.csv"), "id,label\n0,1\n").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_target.csv", &["page_type", "target"]);
    std::fs::write(d.join("m_target.csv"), "id,target\n0,1\n0,1\n").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_target.csv", &["twice"]);
    std::fs::write(d.join("m_target.csv"), target).unwrap();
    std::fs::write(d.join("m_features.json"), "{\"0\": [1, 2], \"1\": ").unwrap();
    assert_names(load_musae(d, "m", "m").unwrap_err(), "m_features.json", &["json"]);
    std::fs::write(d.join("m_features.json"), "{\"0\": [1, 2], \"2\": [0]}").unwrap();
    let ds = load_musae(d, "m", "m").unwrap();
    assert_eq!(ds.features.as_ref().map(|f| (f.rows(), f.cols(), f.nnz())), Some((3, 3, 3)));
}

#[test]
fn node_csv_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("s_nodes.csv"), "node,name,class,a\n0,5,0,1\n1,6,1,2\n").unwrap();
    std::fs::write(d.join("s_edges.csv"), "source,target\n0,1\n").unwrap();
    let ds = load_node_csv(d, "s", "s").unwrap();
    assert_eq!(ds.features.as_ref().unwrap().cols(), 1); // `name` and `class` excluded

    std::fs::write(d.join("s_edges.csv"), "source,target\n0,2\n").unwrap();
    assert_names(load_node_csv(d, "s", "s").unwrap_err(), "s_edges.csv", &["line 2", "past the node count 2"]);
    std::fs::write(d.join("s_edges.csv"), "source,target\n0,1\n").unwrap();

    std::fs::write(d.join("s_nodes.csv"), "node,name,a\n0,5,1\n").unwrap();
    assert_names(load_node_csv(d, "s", "s").unwrap_err(), "s_nodes.csv", &["missing column `class`"]);
    std::fs::write(d.join("s_nodes.csv"), "node,name,class,a\n0,5,0,1\n1,6,1\n").unwrap();
    assert_names(load_node_csv(d, "s", "s").unwrap_err(), "s_nodes.csv", &["line 3", "3 fields", "header has 4"]);
    std::fs::write(d.join("s_nodes.csv"), "node,name,class,a\n0,5,0,1\n1,6,1,1.5e\n").unwrap();
    assert_names(load_node_csv(d, "s", "s").unwrap_err(), "s_nodes.csv", &["line 3", "column `a`"]);
    std::fs::write(d.join("s_nodes.csv"), "node,name,class,a\n0,5,0,1\n3,6,1,1\n").unwrap();
    assert_names(load_node_csv(d, "s", "s").unwrap_err(), "s_nodes.csv", &["node 3", "past the node count"]);
    std::fs::write(d.join("s_nodes.csv"), "node,name,class,a\n").unwrap();
    assert_names(load_node_csv(d, "s", "s").unwrap_err(), "s_nodes.csv", &["no data rows"]);
    std::fs::write(d.join("s_nodes.csv"), "  \n").unwrap();
    assert_names(load_node_csv(d, "s", "s").unwrap_err(), "s_nodes.csv", &["empty"]);
    std::fs::write(d.join("s_nodes.csv"), b"node,name,class,a\n0,5,0,\xe9\n").unwrap();
    assert_names(load_node_csv(d, "s", "s").unwrap_err(), "s_nodes.csv", &["UTF-8", "line 2"]);
}

#[test]
fn german_nifty_errors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let csv = "GoodCustomer,Gender,Age,PurposeOfLoan\r\n1,Male,30,NewCar\r\n-1,Female,40,Other";
    std::fs::write(d.join("german.csv"), csv).unwrap();
    std::fs::write(d.join("german_edges.txt"), "0.000000000000000000e+00 1.000000000000000000e+00\n").unwrap();
    let ds = load_german_nifty(d, "german-nifty").unwrap();
    assert_eq!((ds.num_nodes(), ds.graph.num_edges(), ds.features.as_ref().unwrap().cols()), (2, 1, 4));

    std::fs::write(d.join("german_edges.txt"), "0.0e+00 1.0e+00\n1.000000000000000000e+00 2.5e-01\n").unwrap();
    assert_names(load_german_nifty(d, "g").unwrap_err(), "german_edges.txt", &["line 2", "integral"]);
    std::fs::write(d.join("german_edges.txt"), "0.0e+00 2.0e+00\n").unwrap();
    assert_names(load_german_nifty(d, "g").unwrap_err(), "german_edges.txt", &["line 1", "past the node count 2"]);
    std::fs::write(d.join("german_edges.txt"), "0.0e+00\n").unwrap();
    assert_names(load_german_nifty(d, "g").unwrap_err(), "german_edges.txt", &["line 1", "two node ids"]);
    std::fs::write(d.join("german_edges.txt"), "0.0e+00 abc\n").unwrap();
    assert_names(load_german_nifty(d, "g").unwrap_err(), "german_edges.txt", &["line 1", "not a number"]);
    std::fs::write(d.join("german_edges.txt"), "0.0e+00 1.0e+00\n").unwrap();

    std::fs::write(d.join("german.csv"), "GoodCustomer,Gender,Age,PurposeOfLoan\r\n2,Male,30,NewCar").unwrap();
    assert_names(load_german_nifty(d, "g").unwrap_err(), "german.csv", &["line 2", "GoodCustomer"]);
    std::fs::write(d.join("german.csv"), "GoodCustomer,Gender,Age,PurposeOfLoan\r\n1,M,30,NewCar").unwrap();
    assert_names(load_german_nifty(d, "g").unwrap_err(), "german.csv", &["line 2", "Gender", "Male, Female"]);
    std::fs::write(d.join("german.csv"), "GoodCustomer,Gender,Age\r\n1,Male,30").unwrap();
    assert_names(load_german_nifty(d, "g").unwrap_err(), "german.csv", &["PurposeOfLoan"]);
    std::fs::write(d.join("german.csv"), "").unwrap();
    assert_names(load_german_nifty(d, "g").unwrap_err(), "german.csv", &["empty"]);
}

/// The loaders of published raw files (pickles) give exactly the dataset the data
/// README's derived files give: same graph, features, labels, class names and split.
fn same_as_derived(name: &str, derived: &str) {
    let Some(dir) = common::data_dir() else { return };
    let raw = registry::load(name, Some(&dir), &SyntheticConfig::default(), 0).unwrap_or_else(|e| panic!("{name}: {e}"));
    let from_derived = load_npz(&dir.join(derived), name).unwrap();
    assert_eq!(raw.graph, from_derived.graph, "{name}: graph");
    // (The build reports differ where the raw lists repeat entries the derived file merged.)
    assert_eq!(raw.features, from_derived.features, "{name}: features");
    assert_eq!(raw.labels, from_derived.labels, "{name}: labels");
    assert_eq!(raw.class_names, from_derived.class_names, "{name}: class names");
    assert_eq!(raw.standard_split.as_ref().map(|s| &s.roles), from_derived.standard_split.as_ref().map(|s| &s.roles), "{name}: split");
}

#[test]
fn planetoid_pickles_load_as_the_derived_npz() {
    same_as_derived("planetoid-cora", "planetoid/derived/cora.npz");
    same_as_derived("planetoid-citeseer", "planetoid/derived/citeseer.npz");
}

/// GraphData's npz with pickled matrices, against the derived npz (and the class names
/// the data README extracted from the metadata).
#[test]
fn graphdata_pickles_load_as_the_derived_npz() {
    for name in ["dblp", "cora_ml", "amazon_photo", "amazon_cs", "coauthor_cs", "coauthor_phy"] {
        same_as_derived(name, &format!("graphdata_npz/derived/{name}.npz"));
    }
}

/// RGNN's pickled igraph graphs, against the derived node / edge CSVs.
#[test]
fn igraph_pickles_load_as_the_derived_csv() {
    let Some(dir) = common::data_dir() else { return };
    for name in ["german", "student"] {
        let raw = registry::load(&format!("{name}-raw"), Some(&dir), &SyntheticConfig::default(), 0).unwrap();
        let derived = load_node_csv(&dir.join("rgnn_semisynthetic/derived"), name, name).unwrap();
        assert_eq!(raw.graph, derived.graph, "{name}: graph");
        assert_eq!(raw.build_report, derived.build_report, "{name}: build report");
        assert_eq!(raw.features, derived.features, "{name}: features");
        assert_eq!(raw.labels, derived.labels, "{name}: labels");
        assert_eq!(raw.class_names, derived.class_names, "{name}: class names");
    }
}

/// Found by tests/fuzz.rs: a node id of 2³² in Planetoid's test.index (or graph) made
/// the loader allocate per id (32 GiB, an abort). Ids past the nodes the graph lists
/// are refused, naming the file.
#[test]
fn planetoid_ids_past_the_graph_are_refused() {
    let Some(data) = common::data_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    for part in ["x", "y", "tx", "ty", "allx", "ally", "graph", "test.index"] {
        std::fs::copy(data.join(format!("planetoid/ind.cora.{part}")), tmp.path().join(format!("ind.cora.{part}"))).unwrap();
    }
    let index = tmp.path().join("ind.cora.test.index");
    let text = std::fs::read_to_string(&index).unwrap();
    std::fs::write(&index, text.trim_end().rsplit_once('\n').unwrap().0.to_string() + "\n4294967296\n").unwrap();
    let e = fgl_sim::data::loaders::load_planetoid(tmp.path(), "cora", "cora").unwrap_err().to_string();
    assert!(e.contains("ind.cora.test.index") && e.contains("test node 4294967296 is past the 2708 nodes"), "{e}");
}

//! Planetoid's raw files (`ind.<name>.{x,y,allx,ally,tx,ty,graph,test.index}`, Python 2
//! pickles, as published by kimiyoung/planetoid), read as PyG's `Planetoid` and the data
//! README's derived npz read them.
//!
//! Node i < len(allx) has row i of `allx`/`ally`; the test node `test.index[k]` has row k
//! of `tx`/`ty`; ids in neither (CiteSeer's 15) have no features (a zero row) and no
//! label. Edges are `graph`'s adjacency lists. The standard split: the first len(y) nodes
//! train, the next 500 validate, `test.index` tests.

use std::path::Path;

use super::text::read_text;
use super::{finish, numbered_classes};
use crate::data::pickle::{self, Pickle};
use crate::data::{CsrMatrix, Dataset, Features, Graph, Role, Split};
use crate::error::{Error, Result};

fn read(dir: &Path, prefix: &str, part: &str) -> Result<(Pickle, std::path::PathBuf)> {
    let path = dir.join(format!("ind.{prefix}.{part}"));
    let bytes = std::fs::read(&path).map_err(|e| Error::data_file(&path, format!("cannot read: {e}")))?;
    // numpy arrays, scipy CSR matrices, and the graph's defaultdict of lists.
    let globals: Vec<(&str, &str)> =
        pickle::NUMPY.iter().chain(pickle::SCIPY_CSR).copied().chain([("collections", "defaultdict"), ("__builtin__", "list")]).collect();
    Ok((pickle::parse(&bytes, &globals, &path)?, path))
}

fn csr(dir: &Path, prefix: &str, part: &str) -> Result<CsrMatrix> {
    let (p, path) = read(dir, prefix, part)?;
    pickle::csr_matrix(&p, p.root, &path)
}

/// A one-hot label matrix: per row, the class of its 1 (`None` for an all-zero row).
fn one_hot(dir: &Path, prefix: &str, part: &str) -> Result<(Vec<Option<u32>>, usize)> {
    let (p, path) = read(dir, prefix, part)?;
    let a = pickle::ndarray(&p, p.root, &path)?;
    let &[rows, classes] = a.shape.as_slice() else {
        return Err(Error::data_file(&path, format!("expected a 2-d one-hot label matrix, found shape {:?}", a.shape)));
    };
    let v = a.to_f32(&crate::data::npy::Ctx { path: &path, key: None })?;
    let labels = (0..rows).map(|r| v[r * classes..(r + 1) * classes].iter().position(|&x| x != 0.0).map(|c| c as u32)).collect();
    Ok((labels, classes))
}

/// What Planetoid's files say about a graph, before it becomes a [`Dataset`].
pub struct PlanetoidParts {
    pub nodes: usize,
    /// `graph`'s adjacency lists as stored (repeats and self loops included).
    pub edges: Vec<(usize, usize)>,
    pub labels: Vec<Option<u32>>,
    pub classes: usize,
    pub roles: Vec<Role>,
    /// From `allx` and `tx`; `None` when not asked for (PubMed, whose `allx` is missing).
    pub features: Option<CsrMatrix>,
}

/// Load Planetoid dataset `prefix` from the raw files in `dir`.
pub fn load_planetoid(dir: &Path, prefix: &str, name: &str) -> Result<Dataset> {
    let parts = read_planetoid(dir, prefix, true)?;
    let source = dir.join(format!("ind.{prefix}.graph")).display().to_string();
    let (graph, build_report) = Graph::from_edges(parts.nodes, parts.edges, &source)?;
    let class_names = numbered_classes(parts.classes);
    let features = parts.features.map(Features::Sparse);
    finish(name, graph, build_report, features, parts.labels, class_names, Some(Split { roles: parts.roles }), Vec::new(), &source)
}

/// Read Planetoid dataset `prefix`'s graph, labels and split, and its features from
/// `allx` / `tx` when `with_features`.
pub fn read_planetoid(dir: &Path, prefix: &str, with_features: bool) -> Result<PlanetoidParts> {
    let (allx, tx) = if with_features { (Some(csr(dir, prefix, "allx")?), Some(csr(dir, prefix, "tx")?)) } else { (None, None) };
    let (ally, classes) = one_hot(dir, prefix, "ally")?;
    let (ty, test_classes) = one_hot(dir, prefix, "ty")?;
    let (y, _) = one_hot(dir, prefix, "y")?;
    let index_path = dir.join(format!("ind.{prefix}.test.index"));
    let test_index: Vec<usize> = read_text(&index_path)?
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| l.trim().parse().map_err(|_| Error::data_file(&index_path, format!("line {}: {l:?} is not a node id", i + 1))))
        .collect::<Result<_>>()?;

    let (g, graph_path) = read(dir, prefix, "graph")?;
    let Some((_, "defaultdict", _, _)) = g.object(g.root) else {
        return Err(Error::data_file(&graph_path, "expected a defaultdict of adjacency lists"));
    };
    let pickle::Node::Object { dict, .. } = g.node(g.root) else { unreachable!("an object") };
    let mut edges = Vec::new();
    for &(k, v) in dict {
        let u = g.int(k).ok_or_else(|| Error::data_file(&graph_path, "a key that is not a node id"))?;
        for &w in g.seq(v).ok_or_else(|| Error::data_file(&graph_path, format!("node {u}: its neighbours are not a list")))? {
            let w = g.int(w).ok_or_else(|| Error::data_file(&graph_path, format!("node {u}: a neighbour that is not a node id")))?;
            if u < 0 || w < 0 {
                return Err(Error::data_file(&graph_path, format!("negative node id in edge {u} → {w}")));
            }
            edges.push((u as usize, w as usize));
        }
    }
    // The graph lists every node (CiteSeer's isolated ones too): an id past that is a
    // corrupt file, not a reason to allocate per id (2³² ids took 32 GiB).
    let listed = dict.len().max(ally.len() + ty.len());
    let graph_n = edges.iter().map(|&(u, w)| u.max(w) + 1).max().unwrap_or(0);
    if graph_n > listed {
        return Err(Error::data_file(&graph_path, format!("node id {} is past the {listed} nodes the graph lists", graph_n - 1)));
    }
    if let Some(&v) = test_index.iter().find(|&&v| v >= listed) {
        return Err(Error::data_file(&index_path, format!("test node {v} is past the {listed} nodes the graph lists")));
    }
    let n = graph_n.max(ally.len()).max(test_index.iter().map(|&i| i + 1).max().unwrap_or(0));

    let check =
        |ok: bool, path: &str, msg: String| if ok { Ok(()) } else { Err(Error::data_file(dir.join(format!("ind.{prefix}.{path}")), msg)) };
    check(ty.len() == test_index.len(), "ty", format!("has {} rows, test.index {}", ty.len(), test_index.len()))?;
    check(classes == test_classes, "ty", format!("has {test_classes} classes, ally {classes}"))?;
    check(y.len() + 500 <= ally.len(), "y", format!("{} training rows + 500 validation rows exceed ally's {}", y.len(), ally.len()))?;
    if let (Some(allx), Some(tx)) = (&allx, &tx) {
        check(allx.rows == ally.len(), "allx", format!("has {} rows but ally has {}", allx.rows, ally.len()))?;
        check(
            tx.rows == ty.len() && tx.cols == allx.cols,
            "tx",
            format!("is {} × {}, ty has {} rows and allx {} columns", tx.rows, tx.cols, ty.len(), allx.cols),
        )?;
    }

    let mut labels: Vec<Option<u32>> = (0..n).map(|i| ally.get(i).copied().flatten()).collect();
    for (k, &v) in test_index.iter().enumerate() {
        if v < ally.len() {
            return Err(Error::data_file(&index_path, format!("line {}: test node {v} is also a row of ally", k + 1)));
        }
        labels[v] = ty[k];
    }
    let features = match (allx, tx) {
        (Some(allx), Some(tx)) => {
            // Row of each node: in allx, in tx, or none (a zero row).
            let mut test_row = vec![None; n];
            for (k, &v) in test_index.iter().enumerate() {
                test_row[v] = Some(k);
            }
            let (mut indptr, mut indices, mut values) = (vec![0usize], Vec::new(), Vec::new());
            for (v, t) in test_row.iter().enumerate() {
                let row = if v < allx.rows { Some((&allx, v)) } else { t.map(|k| (&tx, k)) };
                if let Some((m, i)) = row {
                    let (a, b) = (m.indptr[i], m.indptr[i + 1]);
                    indices.extend_from_slice(&m.indices[a..b]);
                    values.extend_from_slice(&m.values[a..b]);
                }
                indptr.push(indices.len());
            }
            Some(CsrMatrix { rows: n, cols: allx.cols, indptr, indices, values })
        }
        _ => None,
    };

    let mut roles = vec![Role::Unused; n];
    roles[..y.len()].fill(Role::Train);
    roles[y.len()..y.len() + 500].fill(Role::Val);
    for &v in &test_index {
        roles[v] = Role::Test;
    }
    Ok(PlanetoidParts { nodes: n, edges, labels, classes, roles, features })
}

//! GraphData's `.npz` (EdisonLeeeee/GraphData: DBLP, Cora-ML, Amazon, Coauthor), whose
//! `adj_matrix` and `node_attr` are 0-d object arrays each holding a pickled scipy CSR
//! matrix, `node_label` an integer array, and the optional `metadata` a pickled dict
//! with `class_names`. Read with the restricted pickle reader; the result equals the
//! data README's derived npz of the same graph.

use std::path::Path;

use super::{class_count, finish, labels_from_ints, numbered_classes};
use crate::data::npy::NpzArchive;
use crate::data::pickle::{self, NUMPY, SCIPY_CSR};
use crate::data::{CsrMatrix, Dataset, Features, Graph};
use crate::error::{Error, Result};

fn globals() -> Vec<(&'static str, &'static str)> {
    NUMPY.iter().chain(SCIPY_CSR).copied().collect()
}

/// The single object of a 0-d object array `key`, as a parsed pickle and its node.
fn object(z: &mut NpzArchive, key: &str) -> Result<(pickle::Pickle, usize)> {
    let path = z.path().to_path_buf();
    let bytes = z.read_object_payload(key)?;
    let p = pickle::parse(&bytes, &globals(), &path)?;
    let items = pickle::object_items(&p, p.root, &path)?;
    let &[item] = items.as_slice() else {
        return Err(Error::data_file(&path, format!("array `{key}`: expected one object, found {}", items.len())));
    };
    Ok((p, item))
}

fn csr(z: &mut NpzArchive, key: &str) -> Result<CsrMatrix> {
    let (p, item) = object(z, key)?;
    pickle::csr_matrix(&p, item, z.path()).map_err(|e| Error::data_file(z.path(), format!("array `{key}`: {e}")))
}

/// Load a GraphData `.npz`.
pub fn load_graphdata(path: &Path, name: &str) -> Result<Dataset> {
    let mut z = NpzArchive::open(path)?;
    let err = |msg: String| Error::data_file(path, msg);
    let adj = csr(&mut z, "adj_matrix")?;
    if adj.rows != adj.cols {
        return Err(err(format!("array `adj_matrix` must be square, is {} × {}", adj.rows, adj.cols)));
    }
    let n = adj.rows;
    let attr = csr(&mut z, "node_attr")?;
    if attr.rows != n {
        return Err(err(format!("array `node_attr` has {} rows but the graph has {n} nodes", attr.rows)));
    }
    let raw = z.read_i64("node_label")?;
    if raw.len() != n {
        return Err(err(format!("array `node_label` has {} entries but the graph has {n} nodes", raw.len())));
    }
    let labels = labels_from_ints(&raw, path, "node_label")?;
    let needed = class_count(&labels, path)?;
    let named = match z.has("metadata") {
        true => {
            let (p, meta) = object(&mut z, "metadata")?;
            p.get(meta, "class_names").map(|id| pickle::strings(&p, id, path)).transpose()?
        }
        false => None,
    };
    let class_names = match named {
        Some(names) if names.len() < needed => {
            return Err(err(format!("metadata lists {} class names but labels go up to {}", names.len(), needed - 1)));
        }
        Some(names) => names,
        None => numbered_classes(needed),
    };
    let edges = (0..n).flat_map(|r| adj.indices[adj.indptr[r]..adj.indptr[r + 1]].iter().map(move |&c| (r, c as usize)));
    let source = path.display().to_string();
    let (graph, build_report) = Graph::from_edges(n, edges, &source)?;
    finish(name, graph, build_report, Some(Features::Sparse(attr)), labels, class_names, None, Vec::new(), &source)
}

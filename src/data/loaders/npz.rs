//! gnn-benchmark style `.npz` (gnn-benchmark, CitationFull, and Planetoid converted to
//! that key layout), with the optional standard split and class names.

use std::path::Path;

use super::text::read_text;
use super::{class_count, file_name, finish, labels_from_ints, numbered_classes};
use crate::data::npy::NpzArchive;
use crate::data::{CsrMatrix, Dataset, Features, Graph, Role, Split};
use crate::error::{Error, Result};

/// Load a gnn-benchmark / CitationFull style `.npz`: CSR adjacency `adj_*`, optional CSR
/// features `attr_*`, `labels` (-1 = unlabelled), optional `class_names` (else a sibling
/// `<stem>.class_names.txt`, else "0".."C-1") and optional `train_idx/val_idx/test_idx`.
pub fn load_npz(path: &Path, name: &str) -> Result<Dataset> {
    let mut z = NpzArchive::open(path)?;
    let src = path.display().to_string();
    let err = |msg: String| Error::data_file(path, msg);

    let adj = read_csr(&mut z, "adj", None)?;
    if adj.rows != adj.cols {
        return Err(err(format!("the adjacency must be square, but `adj_shape` is [{}, {}]", adj.rows, adj.cols)));
    }
    let n = adj.rows;
    let edges = (0..n).flat_map(|r| {
        let (a, b) = (adj.indptr[r], adj.indptr[r + 1]);
        adj.indices[a..b].iter().zip(&adj.values[a..b]).filter(|&(_, &w)| w != 0.0).map(move |(&c, _)| (r, c as usize))
    });
    let (graph, build_report) = Graph::from_edges(n, edges, &src)?;

    let mut notes = Vec::new();
    let attr_keys = ["attr_data", "attr_indices", "attr_indptr", "attr_shape"];
    let present: Vec<&str> = attr_keys.iter().copied().filter(|k| z.has(k)).collect();
    let features = if present.is_empty() {
        notes.push(format!("no features: {} has no attr_* arrays", file_name(path)));
        None
    } else if present.len() < attr_keys.len() {
        let missing: Vec<&str> = attr_keys.iter().copied().filter(|k| !z.has(k)).collect();
        return Err(err(format!(
            "has {} but not {} (a feature matrix needs all of {})",
            present.join(", "),
            missing.join(", "),
            attr_keys.join(", ")
        )));
    } else {
        let attr = read_csr(&mut z, "attr", Some(n))?;
        Some(Features::Sparse(attr.into_canonical()))
    };

    let raw_labels = z.read_i64("labels")?;
    if raw_labels.len() != n {
        return Err(err(format!("array `labels` has {} entries but the adjacency has {n} nodes", raw_labels.len())));
    }
    let labels = labels_from_ints(&raw_labels, path, "labels")?;
    let needed = class_count(&labels, path)?;

    let sibling = path.with_file_name(format!("{}.class_names.txt", path.file_stem().unwrap_or_default().to_string_lossy()));
    let class_names = if z.has("class_names") {
        let names = z.read_strings("class_names")?;
        if names.len() < needed {
            return Err(err(format!("array `class_names` has {} names but labels go up to {}", names.len(), needed - 1)));
        }
        names
    } else if sibling.is_file() {
        let names = read_class_names_txt(&sibling)?;
        if names.len() < needed {
            return Err(Error::data_file(
                &sibling,
                format!("lists {} classes but {} has labels up to {}", names.len(), file_name(path), needed - 1),
            ));
        }
        names
    } else {
        numbered_classes(needed)
    };

    let standard_split = read_npz_split(&mut z, n)?;
    finish(name, graph, build_report, features, labels, class_names, standard_split, notes, &src)
}

/// A CSR matrix as read from `<prefix>_{shape,indptr,indices,data}`, checked for
/// consistency (indptr length, monotonicity, last = nnz, column range).
struct RawCsr {
    rows: usize,
    cols: usize,
    indptr: Vec<usize>,
    indices: Vec<u32>,
    values: Vec<f32>,
}

fn read_csr(z: &mut NpzArchive, prefix: &str, expect_rows: Option<usize>) -> Result<RawCsr> {
    let path = z.path().to_path_buf();
    let err = |msg: String| Error::data_file(&path, msg);
    let shape_key = format!("{prefix}_shape");
    let shape = z.read_i64(&shape_key)?;
    let &[rows, cols] = shape.as_slice() else {
        return Err(err(format!("array `{shape_key}` must hold 2 values [rows, cols], found {}", shape.len())));
    };
    if rows < 0 || cols < 0 || cols > i64::from(u32::MAX) {
        return Err(err(format!("array `{shape_key}` = [{rows}, {cols}] is not a valid matrix shape")));
    }
    let (rows, cols) = (rows as usize, cols as usize);
    if let Some(n) = expect_rows
        && rows != n
    {
        return Err(err(format!("array `{shape_key}` = [{rows}, {cols}] but the graph has {n} nodes (one row per node)")));
    }
    let ptr_key = format!("{prefix}_indptr");
    let idx_key = format!("{prefix}_indices");
    let val_key = format!("{prefix}_data");
    let indptr = z.read_i64(&ptr_key)?;
    let indices = z.read_i64(&idx_key)?;
    let values = z.read_f32(&val_key)?;
    let column = if prefix == "adj" { "points past the node count" } else { "is outside the column range" };
    CsrMatrix::check_numpy_csr(rows, cols, &indptr, &indices, values.len(), [&ptr_key, &idx_key, &val_key], column).map_err(err)?;
    Ok(RawCsr {
        rows,
        cols,
        indptr: indptr.into_iter().map(|p| p as usize).collect(),
        indices: indices.into_iter().map(|c| c as u32).collect(),
        values,
    })
}

impl RawCsr {
    fn into_canonical(self) -> CsrMatrix {
        CsrMatrix::canonical(self.rows, self.cols, self.indptr, self.indices, self.values)
    }
}

/// The standard split from `train_idx`, `val_idx`, `test_idx` (all three or none).
fn read_npz_split(z: &mut NpzArchive, n: usize) -> Result<Option<Split>> {
    let parts = [("train_idx", Role::Train), ("val_idx", Role::Val), ("test_idx", Role::Test)];
    let present = parts.iter().filter(|(k, _)| z.has(k)).count();
    if present == 0 {
        return Ok(None);
    }
    let path = z.path().to_path_buf();
    if present < parts.len() {
        let missing: Vec<&str> = parts.iter().map(|(k, _)| *k).filter(|k| !z.has(k)).collect();
        return Err(Error::data_file(
            &path,
            format!("has a partial split: {} missing (train_idx, val_idx and test_idx go together)", missing.join(", ")),
        ));
    }
    let mut roles = vec![Role::Unused; n];
    for (key, role) in parts {
        for (k, &v) in z.read_i64(key)?.iter().enumerate() {
            if v < 0 || v as u64 >= n as u64 {
                return Err(Error::data_file(&path, format!("array `{key}`[{k}] = {v} is not a node id (0..{})", n.saturating_sub(1))));
            }
            let slot = &mut roles[v as usize];
            if *slot != Role::Unused {
                return Err(Error::data_file(&path, format!("array `{key}`: node {v} is already in the {slot:?} set")));
            }
            *slot = role;
        }
    }
    Ok(Some(Split { roles }))
}

/// `<id><TAB><name>` lines; ids must be 0..C-1, each once (any order).
fn read_class_names_txt(path: &Path) -> Result<Vec<String>> {
    let text = read_text(path)?;
    let mut names: Vec<Option<String>> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let lno = i + 1;
        let (id, name) = line
            .split_once('\t')
            .ok_or_else(|| Error::data_file(path, format!("line {lno}: expected \"<class id><TAB><name>\", found {line:?}")))?;
        let id: usize = id
            .trim()
            .parse()
            .ok()
            .filter(|&id| id < 1 << 20)
            .ok_or_else(|| Error::data_file(path, format!("line {lno}: class id {id:?} is not a small non-negative integer")))?;
        if names.len() <= id {
            names.resize(id + 1, None);
        }
        if names[id].is_some() {
            return Err(Error::data_file(path, format!("line {lno}: class id {id} is listed twice")));
        }
        names[id] = Some(name.trim().to_string());
    }
    names
        .into_iter()
        .enumerate()
        .map(|(c, n)| n.ok_or_else(|| Error::data_file(path, format!("class id {c} is missing (ids must be 0..C-1)"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::npy::npy_bytes;
    use std::io::Write;

    fn i32s(v: &[i32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
    fn i64s(v: &[i64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// A 3-node npz: edges 0→1, 1→0, 2→2 (self loop), features 3x4, labels [0, -1, 1].
    fn write_npz(path: &Path, skip: &str, labels: &[i32]) {
        write_npz_with(path, skip, labels, &[2.0, 1.0, 0.5]);
    }

    /// [`write_npz`] with the three stored feature values given.
    fn write_npz_with(path: &Path, skip: &str, labels: &[i32], attr: &[f32; 3]) {
        let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        let opt = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        let arrays: Vec<(&str, Vec<u8>)> = vec![
            ("adj_data", npy_bytes("<f4", &[3], &f32s(&[1.0, 1.0, 1.0]))),
            ("adj_indices", npy_bytes("<i4", &[3], &i32s(&[1, 0, 2]))),
            ("adj_indptr", npy_bytes("<i4", &[4], &i32s(&[0, 1, 2, 3]))),
            ("adj_shape", npy_bytes("<i8", &[2], &i64s(&[3, 3]))),
            ("attr_data", npy_bytes("<f4", &[3], &f32s(attr))),
            ("attr_indices", npy_bytes("<i4", &[3], &i32s(&[3, 0, 1]))),
            ("attr_indptr", npy_bytes("<i4", &[4], &i32s(&[0, 2, 2, 3]))),
            ("attr_shape", npy_bytes("<i8", &[2], &i64s(&[3, 4]))),
            ("labels", npy_bytes("<i4", &[labels.len()], &i32s(labels))),
        ];
        for (k, data) in arrays {
            if k != skip {
                z.start_file(format!("{k}.npy"), opt).unwrap();
                z.write_all(&data).unwrap();
            }
        }
        z.finish().unwrap();
    }

    #[test]
    fn npz_small() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("tiny.npz");
        write_npz(&p, "", &[0, -1, 1]);
        std::fs::write(dir.path().join("tiny.class_names.txt"), "1\tb\n0\ta\n").unwrap();
        let d = load_npz(&p, "tiny").unwrap();
        assert_eq!(d.graph.num_edges(), 1);
        assert_eq!(d.build_report.self_loops_removed, 1);
        assert_eq!(d.labels, vec![Some(0), None, Some(1)]);
        assert_eq!(d.class_names, vec!["a", "b"]);
        let Some(Features::Sparse(m)) = &d.features else { panic!("sparse features expected") };
        // Row 0 was stored unsorted (3, 0): canonicalised to (0, 3).
        assert_eq!(m.indices, vec![0, 3, 1]);
        assert_eq!(m.values, vec![1.0, 2.0, 0.5]);
        assert_eq!(m.indptr, vec![0, 2, 2, 3]);

        write_npz(&p, "", &[0, 1]);
        let e = load_npz(&p, "tiny").unwrap_err().to_string();
        assert!(e.contains("tiny.npz") && e.contains("labels"), "{e}");
        write_npz(&p, "attr_indptr", &[0, 1, 2]);
        let e = load_npz(&p, "tiny").unwrap_err().to_string();
        assert!(e.contains("attr_indptr"), "{e}");
        write_npz(&p, "adj_indptr", &[0, 1, 2]);
        let e = load_npz(&p, "tiny").unwrap_err().to_string();
        assert!(e.contains("tiny.npz") && e.contains("adj_indptr") && e.contains("missing"), "{e}");
        // Issue 27: one NaN (or ∞) in the features trained to a NaN loss with exit 0.
        // Stored (3, 0) in row 0 and sorted to (0, 3): the bad value sits at column 3.
        for bad in [f32::NAN, f32::INFINITY] {
            write_npz_with(&p, "", &[0, -1, 1], &[bad, 1.0, 0.5]);
            let e = load_npz(&p, "tiny").unwrap_err().to_string();
            assert!(e.contains("tiny.npz") && e.contains("node 0, feature column 3") && e.contains("finite"), "{e}");
        }
    }
}

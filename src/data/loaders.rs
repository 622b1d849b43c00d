//! Loaders for the file formats of the datasets in `shared/datasets` (see its README).
//!
//! Each loader reads raw edges, funnels them through [`Graph::from_edges`] (which
//! symmetrises, merges duplicates and reports self loops), attaches features and labels,
//! and returns a dataset that has passed [`Dataset::validate`]. Anything wrong with a
//! file is an [`Error::DataFile`] naming the file and, where there is one, the line and
//! column, so the user can find the offending cell.
//!
//! Encodings chosen here (they matter for reproducibility):
//! * MUSAE string labels (`page_type`) are numbered in **alphabetical** order
//!   (Facebook: company 0, government 1, politician 2, tvshow 3); integer labels
//!   (`target`) are used as they are.
//! * German (NIFTY): `GoodCustomer` 1 → class 1 "good", -1 → class 0 "bad";
//!   `Gender` Male → 1, Female → 0 (as in RGNN's derived German, where 1 = Male);
//!   `PurposeOfLoan` is one-hot encoded into one column per distinct value, sorted
//!   alphabetically, appended after the other columns. The 29 non-label columns thus
//!   become 1 (Gender) + 27 numeric + 10 one-hot = 38 features, in the same order as
//!   RGNN's 38 German attribute columns.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::npy::NpzArchive;
use super::{CsrMatrix, Dataset, DenseMatrix, Features, Graph, Role, Split};
use crate::error::{Error, Result};

// ---------------------------------------------------------------------------------------
// gnn-benchmark style .npz
// ---------------------------------------------------------------------------------------

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
        adj.indices[a..b]
            .iter()
            .zip(&adj.values[a..b])
            .filter(|&(_, &w)| w != 0.0)
            .map(move |(&c, _)| (r, c as usize))
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
    let mut labels = Vec::with_capacity(n);
    for (v, &y) in raw_labels.iter().enumerate() {
        labels.push(match y {
            -1 => None,
            0..=0x7fff_ffff => Some(y as u32),
            _ => return Err(err(format!("array `labels`: node {v} has label {y} (allowed: -1 = unlabelled, or 0, 1, …)"))),
        });
    }
    let needed = labels.iter().flatten().max().map_or(0, |&m| m as usize + 1);

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
        (0..needed).map(|c| c.to_string()).collect()
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
        && rows != n {
            return Err(err(format!("array `{shape_key}` = [{rows}, {cols}] but the graph has {n} nodes (one row per node)")));
        }
    let ptr_key = format!("{prefix}_indptr");
    let idx_key = format!("{prefix}_indices");
    let val_key = format!("{prefix}_data");
    let indptr = z.read_i64(&ptr_key)?;
    let indices = z.read_i64(&idx_key)?;
    let values = z.read_f32(&val_key)?;
    let nnz = indices.len();
    if indptr.len() != rows + 1 {
        return Err(err(format!("array `{ptr_key}` has {} entries, expected rows + 1 = {}", indptr.len(), rows + 1)));
    }
    if values.len() != nnz {
        return Err(err(format!("array `{val_key}` has {} entries but `{idx_key}` has {nnz}", values.len())));
    }
    if indptr[0] != 0 {
        return Err(err(format!("array `{ptr_key}` must start at 0, starts at {}", indptr[0])));
    }
    if let Some(k) = indptr.windows(2).position(|w| w[1] < w[0]) {
        return Err(err(format!("array `{ptr_key}` decreases at position {} ({} → {})", k + 1, indptr[k], indptr[k + 1])));
    }
    if indptr[rows] != nnz as i64 {
        return Err(err(format!("array `{ptr_key}` ends at {} but there are {nnz} stored entries", indptr[rows])));
    }
    if let Some((k, &c)) = indices.iter().enumerate().find(|&(_, &c)| c < 0 || c >= cols as i64) {
        let what = if prefix == "adj" { "points past the node count" } else { "is outside the column range" };
        return Err(err(format!("array `{idx_key}`[{k}] = {c} {what} (allowed 0..{})", cols.saturating_sub(1))));
    }
    Ok(RawCsr {
        rows,
        cols,
        indptr: indptr.into_iter().map(|p| p as usize).collect(),
        indices: indices.into_iter().map(|c| c as u32).collect(),
        values,
    })
}

impl RawCsr {
    /// As a [`CsrMatrix`] with sorted column indices, duplicates summed and explicit zeros
    /// dropped. Files that are already canonical (all of ours) are moved, not copied.
    fn into_canonical(self) -> CsrMatrix {
        let canonical = (0..self.rows).all(|r| {
            let (a, b) = (self.indptr[r], self.indptr[r + 1]);
            self.indices[a..b].windows(2).all(|w| w[0] < w[1]) && self.values[a..b].iter().all(|&v| v != 0.0)
        });
        if canonical {
            return CsrMatrix { rows: self.rows, cols: self.cols, indptr: self.indptr, indices: self.indices, values: self.values };
        }
        let mut indptr = Vec::with_capacity(self.rows + 1);
        indptr.push(0);
        let (mut indices, mut values) = (Vec::with_capacity(self.indices.len()), Vec::with_capacity(self.values.len()));
        let mut row: Vec<(u32, f32)> = Vec::new();
        for r in 0..self.rows {
            let (a, b) = (self.indptr[r], self.indptr[r + 1]);
            row.clear();
            row.extend(self.indices[a..b].iter().copied().zip(self.values[a..b].iter().copied()));
            row.sort_unstable_by_key(|&(c, _)| c);
            let mut i = 0;
            while i < row.len() {
                let (c, mut v) = row[i];
                i += 1;
                while i < row.len() && row[i].0 == c {
                    v += row[i].1;
                    i += 1;
                }
                if v != 0.0 {
                    indices.push(c);
                    values.push(v);
                }
            }
            indptr.push(indices.len());
        }
        CsrMatrix { rows: self.rows, cols: self.cols, indptr, indices, values }
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

// ---------------------------------------------------------------------------------------
// MUSAE (Facebook page-page, LastFM Asia)
// ---------------------------------------------------------------------------------------

/// Load a MUSAE dataset from `dir`: `<prefix>_edges.csv`, `<prefix>_target.csv` and, if
/// present, the features json `<prefix>.json` or `<prefix>_features.json`. Without a
/// features file the dataset has `features: None` and a note saying so.
pub fn load_musae(dir: &Path, prefix: &str, name: &str) -> Result<Dataset> {
    let target_path = dir.join(format!("{prefix}_target.csv"));
    let edges_path = dir.join(format!("{prefix}_edges.csv"));
    let (labels, class_names) = read_musae_target(&target_path)?;
    let n = labels.len();
    let edges = read_edge_csv(&edges_path, &[["id_1", "id_2"], ["node_1", "node_2"]], n, &target_path)?;
    let (graph, build_report) = Graph::from_edges(n, edges, &edges_path.display().to_string())?;

    let candidates = [dir.join(format!("{prefix}.json")), dir.join(format!("{prefix}_features.json"))];
    let mut notes = Vec::new();
    let features = match candidates.iter().find(|p| p.is_file()) {
        Some(p) => Some(Features::Sparse(read_feature_json(p, n)?)),
        None => {
            notes.push(format!("no features: {prefix}_features.json is not in the data directory"));
            None
        }
    };
    finish(name, graph, build_report, features, labels, class_names, None, notes, &target_path.display().to_string())
}

/// `id,…,<label>` with the label in `page_type` or `target`. Returns one label per node
/// (node = value of `id`, which must cover 0..N-1 exactly once) and the class names.
fn read_musae_target(path: &Path) -> Result<(Vec<Option<u32>>, Vec<String>)> {
    let text = read_text(path)?;
    let mut rdr = csv_reader(&text);
    let headers = csv_headers(path, &text, &mut rdr)?;
    let id_col = column(path, &headers, "id")?;
    let label_col = headers
        .iter()
        .position(|h| h == "page_type")
        .or_else(|| headers.iter().position(|h| h == "target"))
        .ok_or_else(|| {
            Error::data_file(path, format!("no label column: expected `page_type` or `target`, header is {}", headers.join(",")))
        })?;
    let mut class_of: HashMap<String, u32> = HashMap::new();
    let mut first_seen: Vec<String> = Vec::new();
    let mut rows: Vec<(usize, u32)> = Vec::new();
    let mut rec = csv::StringRecord::new();
    while next_record(path, &text, &mut rdr, &mut rec)? {
        let line = Loc::of(&text, &rec);
        let id = parse_index(path, line, &headers[id_col], &rec[id_col])?;
        let raw = rec[label_col].trim();
        if raw.is_empty() {
            return Err(Error::data_file(path, format!("line {line}, column `{}`: empty label", headers[label_col])));
        }
        let c = match class_of.get(raw) {
            Some(&c) => c,
            None => {
                let c = first_seen.len() as u32;
                class_of.insert(raw.to_string(), c);
                first_seen.push(raw.to_string());
                c
            }
        };
        rows.push((id, c));
    }
    if rows.is_empty() {
        return Err(Error::data_file(path, "has a header but no data rows"));
    }
    // Integer labels are used as they are; string labels are numbered alphabetically so
    // the numbering does not depend on row order.
    let numeric: Option<Vec<u32>> = first_seen.iter().map(|s| s.parse::<u32>().ok().filter(|&v| v < 1 << 20)).collect();
    let (remap, class_names): (Vec<u32>, Vec<String>) = match numeric {
        Some(values) => {
            let c = values.iter().max().map_or(0, |&m| m as usize + 1);
            (values, (0..c).map(|c| c.to_string()).collect())
        }
        None => {
            let mut sorted = first_seen.clone();
            sorted.sort();
            let remap = first_seen.iter().map(|s| sorted.binary_search(s).unwrap_or(0) as u32).collect();
            (remap, sorted)
        }
    };
    let n = rows.len();
    let mut labels = vec![None; n];
    for (i, &(id, c)) in rows.iter().enumerate() {
        if id >= n {
            return Err(Error::data_file(
                path,
                format!("data row {}: id {id} is past the node count {n} (ids must be 0..{})", i + 1, n - 1),
            ));
        }
        if labels[id].is_some() {
            return Err(Error::data_file(path, format!("data row {}: id {id} appears twice", i + 1)));
        }
        labels[id] = Some(remap[c as usize]);
    }
    Ok((labels, class_names))
}

/// Parse the MUSAE features json (node id string → list of feature ids) once, into a
/// binary CSR matrix with one row per node and `max id + 1` columns. Nodes missing from
/// the file get an empty row; repeated ids within a node count once.
fn read_feature_json(path: &Path, n: usize) -> Result<CsrMatrix> {
    let bytes = std::fs::read(path).map_err(|e| Error::data_file(path, format!("cannot read: {e}")))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::data_file(path, "file is empty"));
    }
    let lists: FeatureLists = serde_json::from_slice(&bytes).map_err(|e| Error::data_file(path, format!("invalid features json: {e}")))?;
    let mut slot = vec![usize::MAX; n];
    for (i, &(v, _, _)) in lists.rows.iter().enumerate() {
        if v >= n {
            return Err(Error::data_file(path, format!("node id \"{v}\" is past the node count {n} (ids must be 0..{})", n.saturating_sub(1))));
        }
        if slot[v] != usize::MAX {
            return Err(Error::data_file(path, format!("node id \"{v}\" appears twice")));
        }
        slot[v] = i;
    }
    let mut indptr = Vec::with_capacity(n + 1);
    indptr.push(0);
    let mut indices: Vec<u32> = Vec::with_capacity(lists.flat.len());
    for &s in &slot {
        if s != usize::MAX {
            let (_, a, b) = lists.rows[s];
            let start = indices.len();
            indices.extend_from_slice(&lists.flat[a..b]);
            indices[start..].sort_unstable();
            // In-place dedup of this row's tail.
            let mut w = start;
            for r in start..indices.len() {
                if w == start || indices[r] != indices[w - 1] {
                    indices[w] = indices[r];
                    w += 1;
                }
            }
            indices.truncate(w);
        }
        indptr.push(indices.len());
    }
    let cols = indices.iter().max().map_or(0, |&m| m as usize + 1);
    let values = vec![1.0; indices.len()];
    Ok(CsrMatrix { rows: n, cols, indptr, indices, values })
}

/// The features json, streamed into one flat id buffer: (node, start, end) per entry.
#[derive(Default)]
struct FeatureLists {
    rows: Vec<(usize, usize, usize)>,
    flat: Vec<u32>,
}

impl<'de> de::Deserialize<'de> for FeatureLists {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_map(FeatureListsVisitor)
    }
}

struct FeatureListsVisitor;

impl<'de> Visitor<'de> for FeatureListsVisitor {
    type Value = FeatureLists;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object mapping node ids to lists of feature ids")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<FeatureLists, A::Error> {
        let mut out = FeatureLists::default();
        while let Some(NodeKey(v)) = map.next_key()? {
            let start = out.flat.len();
            map.next_value_seed(AppendIds(&mut out.flat))?;
            out.rows.push((v, start, out.flat.len()));
        }
        Ok(out)
    }
}

/// A decimal node id written as a json object key (no allocation).
struct NodeKey(usize);

impl<'de> de::Deserialize<'de> for NodeKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = NodeKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a decimal node id")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> std::result::Result<NodeKey, E> {
                s.trim().parse().map(NodeKey).map_err(|_| E::custom(format!("key {s:?} is not a node id")))
            }
        }
        d.deserialize_str(V)
    }
}

/// Appends a json list of feature ids to a shared buffer.
struct AppendIds<'a>(&'a mut Vec<u32>);

impl<'de> DeserializeSeed<'de> for AppendIds<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> std::result::Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for AppendIds<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of non-negative integer feature ids")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<(), A::Error> {
        while let Some(id) = seq.next_element::<u32>()? {
            self.0.push(id);
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Node / edge CSV (RGNN semi-synthetic German and Student)
// ---------------------------------------------------------------------------------------

/// Load `<prefix>_nodes.csv` (header `node,…` with a `class` label column and an
/// optional `name` provenance column, both excluded from the features; every other
/// column is a dense f32 feature) and `<prefix>_edges.csv` (`source,target`).
pub fn load_node_csv(dir: &Path, prefix: &str, name: &str) -> Result<Dataset> {
    let nodes_path = dir.join(format!("{prefix}_nodes.csv"));
    let edges_path = dir.join(format!("{prefix}_edges.csv"));
    let text = read_text(&nodes_path)?;
    let mut rdr = csv_reader(&text);
    let headers = csv_headers(&nodes_path, &text, &mut rdr)?;
    let node_col = column(&nodes_path, &headers, "node")?;
    let class_col = column(&nodes_path, &headers, "class")?;
    let feat_cols: Vec<usize> = (0..headers.len()).filter(|&c| c != node_col && c != class_col && headers[c] != "name").collect();

    let mut ids = Vec::new();
    let mut raw_labels = Vec::new();
    let mut data: Vec<f32> = Vec::new();
    let mut rec = csv::StringRecord::new();
    while next_record(&nodes_path, &text, &mut rdr, &mut rec)? {
        let line = Loc::of(&text, &rec);
        ids.push(parse_index(&nodes_path, line, &headers[node_col], &rec[node_col])?);
        let y = parse_index(&nodes_path, line, &headers[class_col], &rec[class_col])?;
        if y >= 1 << 20 {
            return Err(Error::data_file(&nodes_path, format!("line {line}, column `class`: label {y} is implausibly large")));
        }
        raw_labels.push(y as u32);
        for &c in &feat_cols {
            data.push(parse_number(&nodes_path, line, &headers[c], &rec[c])?);
        }
    }
    let n = ids.len();
    if n == 0 {
        return Err(Error::data_file(&nodes_path, "has a header but no data rows"));
    }
    // Rows may come in any order; `node` must be a permutation of 0..N-1.
    let d = feat_cols.len();
    let mut row_of = vec![usize::MAX; n];
    for (i, &v) in ids.iter().enumerate() {
        if v >= n {
            return Err(Error::data_file(
                &nodes_path,
                format!("data row {}: node {v} is past the node count {n} (ids must be 0..{})", i + 1, n - 1),
            ));
        }
        if row_of[v] != usize::MAX {
            return Err(Error::data_file(&nodes_path, format!("data row {}: node {v} appears twice", i + 1)));
        }
        row_of[v] = i;
    }
    let in_order = row_of.iter().enumerate().all(|(v, &i)| v == i);
    let (labels, data) = if in_order {
        (raw_labels.into_iter().map(Some).collect::<Vec<_>>(), data)
    } else {
        let mut out = Vec::with_capacity(data.len());
        for &i in &row_of {
            out.extend_from_slice(&data[i * d..(i + 1) * d]);
        }
        (row_of.iter().map(|&i| Some(raw_labels[i])).collect(), out)
    };
    let classes = labels.iter().flatten().max().map_or(0, |&m| m as usize + 1);
    let class_names = (0..classes).map(|c| c.to_string()).collect();

    let edges = read_edge_csv(&edges_path, &[["source", "target"]], n, &nodes_path)?;
    let (graph, build_report) = Graph::from_edges(n, edges, &edges_path.display().to_string())?;
    let mut notes = Vec::new();
    let features = if d == 0 {
        notes.push(format!("no features: {} has no feature columns", file_name(&nodes_path)));
        None
    } else {
        Some(Features::Dense(DenseMatrix { rows: n, cols: d, data }))
    };
    finish(name, graph, build_report, features, labels, class_names, None, notes, &nodes_path.display().to_string())
}

// ---------------------------------------------------------------------------------------
// German credit graph (NIFTY)
// ---------------------------------------------------------------------------------------

/// Load NIFTY's German credit graph from `dir`: `german.csv` (node i = data row i) and
/// `german_edges.txt` (two integral floats per line). See the module docs for the
/// encoding of `GoodCustomer`, `Gender` and `PurposeOfLoan`.
pub fn load_german_nifty(dir: &Path, name: &str) -> Result<Dataset> {
    let csv_path = dir.join("german.csv");
    let edges_path = dir.join("german_edges.txt");
    let text = read_text(&csv_path)?;
    let mut rdr = csv_reader(&text);
    let headers = csv_headers(&csv_path, &text, &mut rdr)?;
    let label_col = column(&csv_path, &headers, "GoodCustomer")?;
    let gender_col = column(&csv_path, &headers, "Gender")?;
    let purpose_col = column(&csv_path, &headers, "PurposeOfLoan")?;
    // Gender and the numeric columns in file order; PurposeOfLoan one-hot at the end.
    let value_cols: Vec<usize> = (0..headers.len()).filter(|&c| c != label_col && c != purpose_col).collect();

    let mut labels = Vec::new();
    let mut values: Vec<f32> = Vec::new();
    let mut purposes: Vec<u32> = Vec::new();
    let mut purpose_id: HashMap<String, u32> = HashMap::new();
    let mut purpose_names: Vec<String> = Vec::new();
    let mut rec = csv::StringRecord::new();
    while next_record(&csv_path, &text, &mut rdr, &mut rec)? {
        let line = Loc::of(&text, &rec);
        let y = match rec[label_col].trim() {
            "1" | "1.0" => 1,
            "-1" | "-1.0" => 0,
            other => {
                return Err(Error::data_file(
                    &csv_path,
                    format!("line {line}, column `GoodCustomer`: {other:?} (allowed: 1 = good, -1 = bad)"),
                ));
            }
        };
        labels.push(Some(y));
        for &c in &value_cols {
            let v = if c == gender_col {
                match rec[c].trim() {
                    "Male" => 1.0,
                    "Female" => 0.0,
                    other => {
                        return Err(Error::data_file(
                            &csv_path,
                            format!("line {line}, column `Gender`: {other:?} (allowed: Male, Female)"),
                        ));
                    }
                }
            } else {
                parse_number(&csv_path, line, &headers[c], &rec[c])?
            };
            values.push(v);
        }
        let p = rec[purpose_col].trim();
        if p.is_empty() {
            return Err(Error::data_file(&csv_path, format!("line {line}, column `PurposeOfLoan`: empty value")));
        }
        let id = match purpose_id.get(p) {
            Some(&id) => id,
            None => {
                let id = purpose_names.len() as u32;
                purpose_id.insert(p.to_string(), id);
                purpose_names.push(p.to_string());
                id
            }
        };
        purposes.push(id);
    }
    let n = labels.len();
    if n == 0 {
        return Err(Error::data_file(&csv_path, "has a header but no data rows"));
    }
    let mut sorted = purpose_names.clone();
    sorted.sort();
    let onehot_col: Vec<usize> = purpose_names.iter().map(|p| sorted.binary_search(p).unwrap_or(0)).collect();
    let (k, m) = (value_cols.len(), sorted.len());
    let d = k + m;
    let mut data = vec![0.0f32; n * d];
    for r in 0..n {
        data[r * d..r * d + k].copy_from_slice(&values[r * k..(r + 1) * k]);
        data[r * d + k + onehot_col[purposes[r] as usize]] = 1.0;
    }

    let edges = read_float_edge_list(&edges_path, n, &csv_path)?;
    let (graph, build_report) = Graph::from_edges(n, edges, &edges_path.display().to_string())?;
    let features = Some(Features::Dense(DenseMatrix { rows: n, cols: d, data }));
    let class_names = vec!["bad".to_string(), "good".to_string()];
    finish(name, graph, build_report, features, labels, class_names, None, Vec::new(), &csv_path.display().to_string())
}

/// Whitespace-separated pairs of node ids written as floats (`8.38e+02`); each must be
/// an integral id below `n`.
fn read_float_edge_list(path: &Path, n: usize, nodes_file: &Path) -> Result<Vec<(usize, usize)>> {
    let text = read_text(path)?;
    let mut edges = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lno = i + 1;
        let mut it = line.split_ascii_whitespace();
        let (Some(a), Some(b), None) = (it.next(), it.next(), it.next()) else {
            if line.trim().is_empty() {
                continue;
            }
            return Err(Error::data_file(path, format!("line {lno}: expected two node ids, found {line:?}")));
        };
        let id = |s: &str| -> Result<usize> {
            let x: f64 = s.parse().map_err(|_| Error::data_file(path, format!("line {lno}: {s:?} is not a number")))?;
            if !x.is_finite() || x.fract() != 0.0 || x < 0.0 {
                return Err(Error::data_file(path, format!("line {lno}: {s} is not an integral node id (must be a whole number ≥ 0)")));
            }
            if x >= n as f64 {
                return Err(Error::data_file(
                    path,
                    format!("line {lno}: node id {x} is past the node count {n} of {} (ids must be 0..{})", file_name(nodes_file), n - 1),
                ));
            }
            Ok(x as usize)
        };
        edges.push((id(a)?, id(b)?));
    }
    Ok(edges)
}

// ---------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn finish(
    name: &str,
    graph: Graph,
    build_report: super::BuildReport,
    features: Option<Features>,
    labels: Vec<Option<u32>>,
    class_names: Vec<String>,
    standard_split: Option<Split>,
    notes: Vec<String>,
    source: &str,
) -> Result<Dataset> {
    let dataset = Dataset { name: name.to_string(), graph, build_report, features, labels, class_names, standard_split, notes };
    dataset.validate(source)?;
    Ok(dataset)
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned())
}

/// Read a whole text file: missing, empty and non-UTF-8 files are errors that say so.
/// A UTF-8 byte-order mark is dropped.
fn read_text(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::data_file(path, format!("cannot read: {e}")))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Error::data_file(path, "file is empty"));
    }
    match String::from_utf8(bytes) {
        Ok(mut s) => {
            if s.starts_with('\u{feff}') {
                s.drain(..3);
            }
            Ok(s)
        }
        Err(e) => {
            let pos = e.utf8_error().valid_up_to();
            let line = e.as_bytes()[..pos].iter().filter(|&&b| b == b'\n').count() + 1;
            Err(Error::data_file(path, format!("is not valid UTF-8 text (first bad byte on line {line}, byte offset {pos})")))
        }
    }
}

/// Fields are trimmed where they are parsed: the csv crate's own `Trim::All` costs about
/// 8x the parse time on Facebook's 171k-row edge list.
fn csv_reader(text: &str) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new().has_headers(true).from_reader(text.as_bytes())
}

fn csv_error(path: &Path, text: &str, e: csv::Error) -> Error {
    let msg = match e.kind() {
        csv::ErrorKind::UnequalLengths { pos, expected_len, len } => {
            let line = pos.as_ref().map_or_else(|| "?".to_string(), |p| Loc { text, byte: p.byte() }.to_string());
            format!("line {line}: {len} fields, but the header has {expected_len}")
        }
        _ => format!("malformed CSV: {e}"),
    };
    Error::data_file(path, msg)
}

fn csv_headers(path: &Path, text: &str, rdr: &mut csv::Reader<&[u8]>) -> Result<Vec<String>> {
    let h = rdr.headers().map_err(|e| csv_error(path, text, e))?;
    Ok(h.iter().map(|f| f.trim().to_string()).collect())
}

fn next_record(path: &Path, text: &str, rdr: &mut csv::Reader<&[u8]>, rec: &mut csv::StringRecord) -> Result<bool> {
    rdr.read_record(rec).map_err(|e| csv_error(path, text, e))
}

/// A record's place in its file; displays as the 1-based line number. Computed from the
/// byte offset only when an error is formatted (the csv crate's own line counter is off
/// by one after CRLF line ends).
#[derive(Clone, Copy)]
struct Loc<'a> {
    text: &'a str,
    byte: u64,
}

impl<'a> Loc<'a> {
    fn of(text: &'a str, rec: &csv::StringRecord) -> Self {
        Loc { text, byte: rec.position().map_or(0, |p| p.byte()) }
    }
}

impl fmt::Display for Loc<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bytes = self.text.as_bytes();
        // A record may start on the '\n' left over from the previous line's "\r\n".
        let mut start = usize::try_from(self.byte).unwrap_or(usize::MAX).min(bytes.len());
        while start < bytes.len() && matches!(bytes[start], b'\r' | b'\n') {
            start += 1;
        }
        let line = bytes[..start].iter().filter(|&&b| b == b'\n').count() + 1;
        write!(f, "{line}")
    }
}

fn column(path: &Path, headers: &[String], name: &str) -> Result<usize> {
    headers
        .iter()
        .position(|h| h == name)
        .ok_or_else(|| Error::data_file(path, format!("missing column `{name}` (header is {})", headers.join(","))))
}

fn parse_index(path: &Path, line: Loc<'_>, col: &str, s: &str) -> Result<usize> {
    s.trim()
        .parse::<usize>()
        .map_err(|_| Error::data_file(path, format!("line {line}, column `{col}`: {s:?} is not a non-negative integer")))
}

fn parse_number(path: &Path, line: Loc<'_>, col: &str, s: &str) -> Result<f32> {
    s.trim()
        .parse::<f32>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| Error::data_file(path, format!("line {line}, column `{col}`: {s:?} is not a finite number")))
}

/// Two-column edge CSV whose header is one of `headers`; ids must be below `n` (the row
/// count of `nodes_file`, named in the error).
fn read_edge_csv(path: &Path, headers: &[[&str; 2]], n: usize, nodes_file: &Path) -> Result<Vec<(usize, usize)>> {
    let text = read_text(path)?;
    let mut rdr = csv_reader(&text);
    let h = csv_headers(path, &text, &mut rdr)?;
    if !headers.iter().any(|e| h.len() == 2 && h[0] == e[0] && h[1] == e[1]) {
        let allowed: Vec<String> = headers.iter().map(|e| e.join(",")).collect();
        return Err(Error::data_file(path, format!("header is {:?}, expected {}", h.join(","), allowed.join(" or "))));
    }
    let mut edges = Vec::with_capacity(text.len() / 12);
    let mut rec = csv::StringRecord::new();
    while next_record(path, &text, &mut rdr, &mut rec)? {
        let line = Loc::of(&text, &rec);
        let u = parse_index(path, line, &h[0], &rec[0])?;
        let v = parse_index(path, line, &h[1], &rec[1])?;
        if u >= n || v >= n {
            return Err(Error::data_file(
                path,
                format!(
                    "line {line}: edge ({u}, {v}) points past the node count {n} of {} (ids must be 0..{})",
                    file_name(nodes_file),
                    n.saturating_sub(1)
                ),
            ));
        }
        edges.push((u, v));
    }
    Ok(edges)
}

#[cfg(test)]
mod tests {
    use super::super::npy::npy_bytes;
    use super::*;
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
        let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        let opt = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
        let arrays: Vec<(&str, Vec<u8>)> = vec![
            ("adj_data", npy_bytes("<f4", &[3], &f32s(&[1.0, 1.0, 1.0]))),
            ("adj_indices", npy_bytes("<i4", &[3], &i32s(&[1, 0, 2]))),
            ("adj_indptr", npy_bytes("<i4", &[4], &i32s(&[0, 1, 2, 3]))),
            ("adj_shape", npy_bytes("<i8", &[2], &i64s(&[3, 3]))),
            ("attr_data", npy_bytes("<f4", &[3], &f32s(&[2.0, 1.0, 0.5]))),
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
    }

    #[test]
    fn musae_string_labels_sorted_and_features() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("fb_edges.csv"), "id_1,id_2\n0,1\n2,2\n").unwrap();
        std::fs::write(
            dir.path().join("fb_target.csv"),
            "id,facebook_id,page_name,page_type\n0,11,\"A, Inc\",zeta\n2,12,b,alpha\n1,13,c,zeta\n",
        )
        .unwrap();
        let d = load_musae(dir.path(), "fb", "fb").unwrap();
        assert_eq!(d.class_names, vec!["alpha", "zeta"]);
        assert_eq!(d.labels, vec![Some(1), Some(1), Some(0)]);
        assert!(d.features.is_none());
        assert!(d.notes[0].contains("fb_features.json"), "{:?}", d.notes);
        std::fs::write(dir.path().join("fb.json"), r#"{"1": [4, 0, 4], "0": [2]}"#).unwrap();
        let d = load_musae(dir.path(), "fb", "fb").unwrap();
        let Some(Features::Sparse(m)) = &d.features else { panic!() };
        assert_eq!((m.rows, m.cols), (3, 5));
        assert_eq!(m.indptr, vec![0, 1, 3, 3]);
        assert_eq!(m.indices, vec![2, 0, 4]);
        std::fs::write(dir.path().join("fb.json"), r#"{"1": [4, -1]}"#).unwrap();
        let e = load_musae(dir.path(), "fb", "fb").unwrap_err().to_string();
        assert!(e.contains("fb.json") && e.contains("line 1"), "{e}");
        std::fs::write(dir.path().join("fb.json"), r#"{"7": [1]}"#).unwrap();
        let e = load_musae(dir.path(), "fb", "fb").unwrap_err().to_string();
        assert!(e.contains("fb.json") && e.contains("past the node count"), "{e}");
    }

    #[test]
    fn node_csv_and_german_encoding() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("g_nodes.csv"), "node,name,class,a,b\n1,7,0,2.5,3\n0,9,1,-1,0\n").unwrap();
        std::fs::write(dir.path().join("g_edges.csv"), "source,target\n0,1\n1,0\n").unwrap();
        let d = load_node_csv(dir.path(), "g", "g").unwrap();
        assert_eq!(d.labels, vec![Some(1), Some(0)]);
        assert_eq!(d.features.as_ref().unwrap().to_dense().data, vec![-1.0, 0.0, 2.5, 3.0]);
        assert_eq!(d.graph.num_edges(), 1);
        std::fs::write(dir.path().join("g_nodes.csv"), "node,name,class,a,b\n0,7,0,x,3\n").unwrap();
        let e = load_node_csv(dir.path(), "g", "g").unwrap_err().to_string();
        assert!(e.contains("g_nodes.csv") && e.contains("line 2") && e.contains("`a`"), "{e}");

        std::fs::write(
            dir.path().join("german.csv"),
            "GoodCustomer,Gender,Age,PurposeOfLoan,X\r\n1,Male,30,NewCar,0\r\n-1,Female,40,Business,1",
        )
        .unwrap();
        std::fs::write(dir.path().join("german_edges.txt"), "0.000e+00 1.0000e+00\n1.0e+00 0.0e+00\n").unwrap();
        let d = load_german_nifty(dir.path(), "german-nifty").unwrap();
        assert_eq!(d.labels, vec![Some(1), Some(0)]);
        assert_eq!(d.class_names, vec!["bad", "good"]);
        // Gender, Age, X, then PurposeOfLoan_Business, PurposeOfLoan_NewCar.
        assert_eq!(d.features.as_ref().unwrap().to_dense().data, vec![1.0, 30.0, 0.0, 0.0, 1.0, 0.0, 40.0, 1.0, 1.0, 0.0]);
        std::fs::write(dir.path().join("german_edges.txt"), "0.000e+00 1.5e+00\n").unwrap();
        let e = load_german_nifty(dir.path(), "german-nifty").unwrap_err().to_string();
        assert!(e.contains("german_edges.txt") && e.contains("line 1") && e.contains("integral"), "{e}");
    }
}

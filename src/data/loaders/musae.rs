//! MUSAE (Facebook page-page, LastFM Asia): edge and target CSV plus the features json.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::text::{Loc, column, csv_headers, csv_reader, next_record, parse_index, read_edge_csv, read_text};
use super::{finish, numbered_classes};
use crate::data::{CsrMatrix, Dataset, Features, Graph};
use crate::error::{Error, Result};

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
    let label_col =
        headers.iter().position(|h| h == "page_type").or_else(|| headers.iter().position(|h| h == "target")).ok_or_else(|| {
            Error::data_file(path, format!("no label column: expected `page_type` or `target`, header is {}", headers.join(",")))
        })?;
    let mut class_of: HashMap<String, u32> = HashMap::new();
    // Each distinct label with the line it first appears on.
    let mut first_seen: Vec<String> = Vec::new();
    let mut first_line: Vec<String> = Vec::new();
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
                first_line.push(line.to_string());
                c
            }
        };
        rows.push((id, c));
    }
    if rows.is_empty() {
        return Err(Error::data_file(path, "has a header but no data rows"));
    }
    // Integer labels are used as they are; string labels are numbered alphabetically so
    // the numbering does not depend on row order. A column of integers with one label
    // that is not a small non-negative integer is a bad row, not a new class.
    let col = &headers[label_col];
    let numeric: Option<Vec<u32>> = match first_seen.iter().position(|s| s.parse::<i64>().is_ok()) {
        None => None,
        Some(_) => Some(
            first_seen
                .iter()
                .zip(&first_line)
                .map(|(s, line)| match s.parse::<i64>() {
                    Ok(v) if (0..1 << 20).contains(&v) => Ok(v as u32),
                    Ok(v) if v < 0 => Err(Error::data_file(path, format!("line {line}, column `{col}`: label {v} is negative"))),
                    Ok(v) => Err(Error::data_file(
                        path,
                        format!("line {line}, column `{col}`: label {v} is implausibly large (allowed: 0 to 2^20 − 1)"),
                    )),
                    Err(_) => Err(Error::data_file(
                        path,
                        format!("line {line}, column `{col}`: label `{s}` in a column of integer labels (allowed: integers 0 to 2^20 − 1)"),
                    )),
                })
                .collect::<Result<_>>()?,
        ),
    };
    let (remap, class_names): (Vec<u32>, Vec<String>) = match numeric {
        Some(values) => {
            let c = values.iter().max().map_or(0, |&m| m as usize + 1);
            (values, numbered_classes(c))
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
            return Err(Error::data_file(
                path,
                format!("node id \"{v}\" is past the node count {n} (ids must be 0..{})", n.saturating_sub(1)),
            ));
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
/// Kept over `serde_json` into a `HashMap<String, Vec<u32>>`: on Facebook's 2 MB file
/// that map takes 9.8–10.4 ms against 4.5–4.6 ms here (median of 9, release).
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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Issue 27: one bad label in LastFM's integer `target` column added a class and
    /// re-sorted every class as strings (0, 1, 10, 11, …). Now the row is refused.
    #[test]
    fn a_bad_label_among_integer_labels_is_refused_with_its_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("l_edges.csv"), "node_1,node_2\n0,1\n").unwrap();
        let target = |bad: &str| format!("id,target\n0,10\n1,2\n2,{bad}\n");
        std::fs::write(dir.path().join("l_target.csv"), target("0")).unwrap();
        let d = load_musae(dir.path(), "l", "l").unwrap();
        assert_eq!((d.labels.clone(), d.class_names.len()), (vec![Some(10), Some(2), Some(0)], 11));
        for (bad, says) in
            [("rock", "label `rock` in a column of integer labels"), ("-7", "label -7 is negative"), ("4000000000", "implausibly large")]
        {
            std::fs::write(dir.path().join("l_target.csv"), target(bad)).unwrap();
            let e = load_musae(dir.path(), "l", "l").unwrap_err().to_string();
            assert!(e.contains("l_target.csv") && e.contains("line 4") && e.contains("column `target`") && e.contains(says), "{e}");
        }
    }
}

//! Node / edge CSV (RGNN semi-synthetic German and Student).

use std::path::Path;

use super::text::{Loc, column, csv_headers, csv_reader, next_record, parse_index, parse_number, read_edge_csv, read_text};
use super::{class_count, file_name, finish, numbered_classes};
use crate::data::{Dataset, DenseMatrix, Features, Graph};
use crate::error::{Error, Result};

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
    let class_names = numbered_classes(class_count(&labels, &nodes_path)?);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_csv() {
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
    }
}

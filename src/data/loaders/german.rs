//! German credit graph (NIFTY). How its columns are encoded is described in the
//! [parent module's docs](super).

use std::collections::HashMap;
use std::path::Path;

use super::text::{Loc, column, csv_headers, csv_reader, next_record, parse_number, read_text};
use super::{file_name, finish};
use crate::data::{Dataset, DenseMatrix, Features, Graph};
use crate::error::{Error, Result};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn german_encoding() {
        let dir = tempfile::tempdir().unwrap();
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

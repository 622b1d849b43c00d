//! Feature preprocessing as done by the papers whose experiments we reproduce.
//!
//! * Column grouping (RGNN): consecutive columns are summed in groups of `k` (the last
//!   group may be shorter) and the sums binarised (> 0 → 1). This shrinks bag-of-words
//!   features before a local randomiser is applied per column.
//! * Min-max scaling (LPGNN): each column becomes (x − min) / (max − min), with min and
//!   max taken over all rows (implicit zeros of a sparse matrix count); constant columns
//!   carry no information and are dropped. The multi-bit mechanism assumes inputs in
//!   [0, 1], hence this step.
//!
//! When both are enabled, grouping runs first and min-max second, so the result is
//! always in [0, 1] with no constant columns. Sparse input stays sparse: entries that map
//! to 0 become implicit zeros. Sparse input is assumed canonical (sorted, no duplicate
//! column within a row), which every loader guarantees.

use serde::{Deserialize, Serialize};

use super::{CsrMatrix, DenseMatrix, Features};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PreprocessConfig {
    /// Min-max scale each column to [0, 1] and drop constant columns (LPGNN).
    pub minmax: bool,
    /// Sum consecutive columns in groups of this size, then binarise (RGNN).
    pub group_columns: Option<usize>,
    /// Keep only the largest connected component (PyG's `LargestConnectedComponents`;
    /// Solitude's CiteSeer), before anything else.
    pub lcc: bool,
}

impl PreprocessConfig {
    pub fn validate(&self) -> Result<()> {
        if self.group_columns == Some(0) {
            return Err(Error::param("preprocess.group_columns", "must be at least 1 (columns per group), got 0"));
        }
        Ok(())
    }

    /// Apply the configured steps (grouping, then min-max) to a copy of `features`.
    pub fn apply(&self, features: &Features) -> Result<Features> {
        self.validate()?;
        check_finite(features)?;
        let grouped = self.group_columns.map(|k| group_columns(features, k));
        let current = grouped.as_ref().unwrap_or(features);
        Ok(if self.minmax { minmax(current) } else { current.clone() })
    }
}

/// NaN or infinite values would make min/max meaningless; name the first one.
fn check_finite(f: &Features) -> Result<()> {
    for r in 0..f.rows() {
        let mut bad = None;
        f.for_each_nonzero(r, |c, v| {
            if bad.is_none() && !v.is_finite() {
                bad = Some((c, v));
            }
        });
        if let Some((c, v)) = bad {
            return Err(Error::param("preprocess", format!("feature value {v} at row {r}, column {c} is not finite")));
        }
    }
    Ok(())
}

/// RGNN's grouping: sum columns `[g·k, (g+1)·k)` into column g, then 1 if the sum > 0.
pub fn group_columns(features: &Features, k: usize) -> Features {
    let k = k.max(1);
    let cols = features.cols().div_ceil(k);
    match features {
        Features::Dense(m) => {
            let mut out = DenseMatrix::zeros(m.rows, cols);
            let mut sums = vec![0f64; cols];
            for r in 0..m.rows {
                sums.iter_mut().for_each(|s| *s = 0.0);
                for (c, &v) in m.row(r).iter().enumerate() {
                    sums[c / k] += f64::from(v);
                }
                for (o, &s) in out.row_mut(r).iter_mut().zip(&sums) {
                    *o = if s > 0.0 { 1.0 } else { 0.0 };
                }
            }
            Features::Dense(out)
        }
        Features::Sparse(m) => {
            let mut indptr = Vec::with_capacity(m.rows + 1);
            indptr.push(0);
            let mut indices = Vec::new();
            let mut row: Vec<(u32, f64)> = Vec::new();
            for r in 0..m.rows {
                let (idx, val) = m.row(r);
                row.clear();
                row.extend(idx.iter().zip(val).map(|(&c, &v)| ((c as usize / k) as u32, f64::from(v))));
                row.sort_unstable_by_key(|&(g, _)| g);
                let mut i = 0;
                while i < row.len() {
                    let g = row[i].0;
                    let mut s = 0.0;
                    while i < row.len() && row[i].0 == g {
                        s += row[i].1;
                        i += 1;
                    }
                    if s > 0.0 {
                        indices.push(g);
                    }
                }
                indptr.push(indices.len());
            }
            let values = vec![1.0; indices.len()];
            Features::Sparse(CsrMatrix { rows: m.rows, cols, indptr, indices, values })
        }
        Features::Shifted(_) => group_columns(&Features::Dense(features.to_dense()), k),
    }
}

/// LPGNN's min-max scaling over all rows, constant columns dropped.
pub fn minmax(features: &Features) -> Features {
    match features {
        Features::Dense(m) => {
            let mut lo = vec![f64::INFINITY; m.cols];
            let mut hi = vec![f64::NEG_INFINITY; m.cols];
            for r in 0..m.rows {
                for (c, &v) in m.row(r).iter().enumerate() {
                    lo[c] = lo[c].min(f64::from(v));
                    hi[c] = hi[c].max(f64::from(v));
                }
            }
            let keep: Vec<usize> = (0..m.cols).filter(|&c| hi[c] > lo[c]).collect();
            let mut out = DenseMatrix::zeros(m.rows, keep.len());
            for r in 0..m.rows {
                let src = m.row(r);
                for (o, &c) in out.row_mut(r).iter_mut().zip(&keep) {
                    *o = ((f64::from(src[c]) - lo[c]) / (hi[c] - lo[c])) as f32;
                }
            }
            Features::Dense(out)
        }
        Features::Sparse(m) => Features::Sparse(minmax_sparse(m)),
        Features::Shifted(_) => minmax(&Features::Dense(features.to_dense())),
    }
}

fn minmax_sparse(m: &CsrMatrix) -> CsrMatrix {
    let mut lo = vec![f64::INFINITY; m.cols];
    let mut hi = vec![f64::NEG_INFINITY; m.cols];
    let mut stored = vec![0usize; m.cols];
    for (&c, &v) in m.indices.iter().zip(&m.values) {
        let c = c as usize;
        lo[c] = lo[c].min(f64::from(v));
        hi[c] = hi[c].max(f64::from(v));
        stored[c] += 1;
    }
    // Columns with fewer stored entries than rows also hold implicit zeros.
    for c in 0..m.cols {
        if stored[c] < m.rows {
            lo[c] = lo[c].min(0.0);
            hi[c] = hi[c].max(0.0);
        }
    }
    const DROPPED: u32 = u32::MAX;
    let mut new_col = vec![DROPPED; m.cols];
    let mut kept = 0u32;
    for c in 0..m.cols {
        if hi[c] > lo[c] {
            new_col[c] = kept;
            kept += 1;
        }
    }
    // Where the column minimum is negative, an implicit zero maps to a positive value and
    // must become an explicit entry in every row that lacks one.
    let fill: Vec<(u32, f32)> = (0..m.cols)
        .filter(|&c| new_col[c] != DROPPED && stored[c] < m.rows && lo[c] < 0.0)
        .map(|c| (new_col[c], (-lo[c] / (hi[c] - lo[c])) as f32))
        .collect();

    let mut indptr = Vec::with_capacity(m.rows + 1);
    indptr.push(0);
    let mut indices = Vec::with_capacity(m.nnz());
    let mut values = Vec::with_capacity(m.nnz());
    let mut row: Vec<(u32, f32)> = Vec::new();
    let mut present = vec![usize::MAX; if fill.is_empty() { 0 } else { kept as usize }];
    for r in 0..m.rows {
        let (idx, val) = m.row(r);
        row.clear();
        for (&c, &v) in idx.iter().zip(val) {
            let c = c as usize;
            let nc = new_col[c];
            if nc == DROPPED {
                continue;
            }
            if !fill.is_empty() {
                present[nc as usize] = r;
            }
            let x = ((f64::from(v) - lo[c]) / (hi[c] - lo[c])) as f32;
            if x != 0.0 {
                row.push((nc, x));
            }
        }
        for &(nc, x) in &fill {
            if present[nc as usize] != r {
                row.push((nc, x));
            }
        }
        row.sort_unstable_by_key(|&(c, _)| c);
        for &(c, x) in &row {
            indices.push(c);
            values.push(x);
        }
        indptr.push(indices.len());
    }
    CsrMatrix { rows: m.rows, cols: kept as usize, indptr, indices, values }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dense(rows: usize, cols: usize, data: &[f32]) -> Features {
        Features::Dense(DenseMatrix { rows, cols, data: data.to_vec() })
    }

    /// CSR from (row, col, value) triples listed in row order.
    fn sparse(rows: usize, cols: usize, entries: &[(usize, u32, f32)]) -> Features {
        let mut indptr = vec![0; rows + 1];
        for &(r, _, _) in entries {
            indptr[r + 1] += 1;
        }
        for r in 0..rows {
            indptr[r + 1] += indptr[r];
        }
        Features::Sparse(CsrMatrix {
            rows,
            cols,
            indptr,
            indices: entries.iter().map(|e| e.1).collect(),
            values: entries.iter().map(|e| e.2).collect(),
        })
    }

    #[test]
    fn minmax_dense_drops_constant_column() {
        let f = dense(3, 3, &[1.0, 5.0, 2.0, 3.0, 5.0, 0.0, 2.0, 5.0, 4.0]);
        let cfg = PreprocessConfig { minmax: true, group_columns: None, lcc: false };
        let out = cfg.apply(&f).unwrap();
        assert_eq!(out, dense(3, 2, &[0.0, 0.5, 1.0, 0.0, 0.5, 1.0]));
    }

    #[test]
    fn minmax_sparse_counts_implicit_zeros() {
        // Columns: 0 → {2, 4, ·}; 1 → {·, ·, -2} (negative min: zeros become 1);
        // 2 → {4, ·, 4}; 3 → constant 1 (dropped); 4 → all implicit zero (dropped).
        let f = sparse(3, 5, &[(0, 0, 2.0), (0, 2, 4.0), (0, 3, 1.0), (1, 0, 4.0), (1, 3, 1.0), (2, 1, -2.0), (2, 2, 4.0), (2, 3, 1.0)]);
        let out = minmax(&f);
        let expected = sparse(3, 3, &[(0, 0, 0.5), (0, 1, 1.0), (0, 2, 1.0), (1, 0, 1.0), (1, 1, 1.0), (2, 2, 1.0)]);
        assert_eq!(out, expected);
        assert!(out.is_sparse());
        // Same numbers as the dense route.
        let dense_out = minmax(&Features::Dense(f.to_dense()));
        assert_eq!(dense_out, Features::Dense(expected.to_dense()));
    }

    #[test]
    fn grouping_sums_then_binarises() {
        let d = dense(2, 5, &[1.0, 0.0, 0.0, 0.0, 3.0, 0.0, 2.0, -1.0, 1.0, 0.0]);
        let out = group_columns(&d, 2);
        assert_eq!(out, dense(2, 3, &[1.0, 0.0, 1.0, 1.0, 0.0, 0.0]));
        let s = sparse(2, 5, &[(0, 0, 1.0), (0, 4, 3.0), (1, 1, 2.0), (1, 2, -1.0), (1, 3, 1.0)]);
        let out = group_columns(&s, 2);
        assert_eq!(out, sparse(2, 3, &[(0, 0, 1.0), (0, 2, 1.0), (1, 0, 1.0)]));
        // k = 1 only binarises; k ≥ cols gives one column.
        assert_eq!(group_columns(&d, 1), dense(2, 5, &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0]));
        assert_eq!(group_columns(&d, 9), dense(2, 1, &[1.0, 1.0]));
    }

    #[test]
    fn grouping_then_minmax_and_validation() {
        // Grouped: [[1, 0, 1], [1, 0, 0]] → column 0 constant 1 and column 1 constant 0
        // dropped; column 2 stays.
        let d = dense(2, 5, &[1.0, 0.0, 0.0, 0.0, 3.0, 0.0, 2.0, -1.0, 1.0, 0.0]);
        let cfg = PreprocessConfig { minmax: true, group_columns: Some(2), lcc: false };
        assert_eq!(cfg.apply(&d).unwrap(), dense(2, 1, &[1.0, 0.0]));
        let e = PreprocessConfig { minmax: false, group_columns: Some(0), lcc: false }.validate().unwrap_err().to_string();
        assert!(e.contains("group_columns"), "{e}");
        assert_eq!(PreprocessConfig::default().apply(&d).unwrap(), d);
        let nan = dense(1, 2, &[1.0, f32::NAN]);
        assert!(cfg.apply(&nan).is_err());
        let c: PreprocessConfig = serde_norway::from_str("minmax: true").unwrap();
        assert_eq!(c, PreprocessConfig { minmax: true, group_columns: None, lcc: false });
        assert!(serde_norway::from_str::<PreprocessConfig>("minmx: true").is_err());
    }
}

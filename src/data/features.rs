//! Node feature matrices.
//!
//! Bag-of-words features (Cora: 1.3 % non-zero, Facebook: 0.3 %) stay in CSR form;
//! tabular features (German, Student) are dense. Both expose the same row access so that
//! preprocessing and, later, model input code do not care which they hold.

use serde::Serialize;

/// What the stored values look like (the datasets README's "feature kind").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FeatureKind {
    /// Every stored value is 1.
    Binary,
    /// Positive integers.
    Counts,
    /// Anything else.
    Real,
}

/// Compressed sparse rows, f32 values, explicit zeros not stored.
#[derive(Debug, Clone, PartialEq)]
pub struct CsrMatrix {
    pub rows: usize,
    pub cols: usize,
    pub indptr: Vec<usize>,
    pub indices: Vec<u32>,
    pub values: Vec<f32>,
}

/// Row-major dense matrix.
#[derive(Debug, Clone, PartialEq)]
pub struct DenseMatrix {
    pub rows: usize,
    pub cols: usize,
    pub data: Vec<f32>,
}

/// A dense matrix stored as a sparse one plus one constant added to every entry:
/// value(r, c) = centered(r, c) + shift. The multi-bit mechanism's output has this
/// shape (every unsampled coordinate is (α+β)/2, only m of d differ), and keeping it
/// sparse keeps X·W at O(nnz) instead of O(N·d).
#[derive(Debug, Clone, PartialEq)]
pub struct ShiftedMatrix {
    pub centered: CsrMatrix,
    pub shift: f32,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Features {
    Sparse(CsrMatrix),
    Dense(DenseMatrix),
    Shifted(ShiftedMatrix),
}

impl CsrMatrix {
    /// A [`CsrMatrix`] from checked CSR arrays (indptr from 0 to nnz, non-decreasing; columns
    /// in range), with sorted column indices, duplicates summed and explicit zeros
    /// dropped. Arrays that are already canonical (all of ours) are moved, not copied.
    pub fn canonical(rows: usize, cols: usize, indptr: Vec<usize>, indices: Vec<u32>, values: Vec<f32>) -> CsrMatrix {
        let is_canonical = (0..rows).all(|r| {
            let (a, b) = (indptr[r], indptr[r + 1]);
            indices[a..b].windows(2).all(|w| w[0] < w[1]) && values[a..b].iter().all(|&v| v != 0.0)
        });
        if is_canonical {
            return CsrMatrix { rows, cols, indptr, indices, values };
        }
        let mut out_ptr = Vec::with_capacity(rows + 1);
        out_ptr.push(0);
        let (mut out_idx, mut out_val) = (Vec::with_capacity(indices.len()), Vec::with_capacity(values.len()));
        let mut row: Vec<(u32, f32)> = Vec::new();
        for r in 0..rows {
            let (a, b) = (indptr[r], indptr[r + 1]);
            row.clear();
            row.extend(indices[a..b].iter().copied().zip(values[a..b].iter().copied()));
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
                    out_idx.push(c);
                    out_val.push(v);
                }
            }
            out_ptr.push(out_idx.len());
        }
        CsrMatrix { rows, cols, indptr: out_ptr, indices: out_idx, values: out_val }
    }

    /// [`CsrMatrix::canonical`] from numpy's arrays `indptr`, `indices` and `data`, checked
    /// first ([`check_numpy_csr`](Self::check_numpy_csr)).
    pub fn from_numpy(rows: usize, cols: usize, indptr: &[i64], indices: &[i64], values: &[f32]) -> std::result::Result<CsrMatrix, String> {
        Self::check_numpy_csr(rows, cols, indptr, indices, values.len(), ["indptr", "indices", "data"], "is outside the column range")?;
        Ok(CsrMatrix::canonical(
            rows,
            cols,
            indptr.iter().map(|&p| p as usize).collect(),
            indices.iter().map(|&c| c as u32).collect(),
            values.to_vec(),
        ))
    }

    /// Check CSR arrays as numpy stores them (row pointers from 0 to the entry count, not
    /// decreasing; one value per column index; columns in range). `names` are the arrays'
    /// names for the message (row pointers, column indices, values); `column` says what an
    /// out-of-range column is.
    pub fn check_numpy_csr(
        rows: usize,
        cols: usize,
        indptr: &[i64],
        indices: &[i64],
        values: usize,
        names: [&str; 3],
        column: &str,
    ) -> std::result::Result<(), String> {
        let [ptr, idx, val] = names;
        let nnz = indices.len();
        if indptr.len() != rows + 1 {
            return Err(format!("array `{ptr}` has {} entries, expected rows + 1 = {}", indptr.len(), rows + 1));
        }
        if values != nnz {
            return Err(format!("array `{val}` has {values} entries but `{idx}` has {nnz}"));
        }
        if indptr[0] != 0 {
            return Err(format!("array `{ptr}` must start at 0, starts at {}", indptr[0]));
        }
        if let Some(k) = indptr.windows(2).position(|w| w[1] < w[0]) {
            return Err(format!("array `{ptr}` decreases at position {} ({} → {})", k + 1, indptr[k], indptr[k + 1]));
        }
        if indptr[rows] != nnz as i64 {
            return Err(format!("array `{ptr}` ends at {} but there are {nnz} stored entries", indptr[rows]));
        }
        if let Some((k, &c)) = indices.iter().enumerate().find(|&(_, &c)| c < 0 || c >= cols as i64) {
            return Err(format!("array `{idx}`[{k}] = {c} {column} (allowed 0..{})", cols.saturating_sub(1)));
        }
        Ok(())
    }

    /// Row `r` as (column indices, values).
    pub fn row(&self, r: usize) -> (&[u32], &[f32]) {
        let (a, b) = (self.indptr[r], self.indptr[r + 1]);
        (&self.indices[a..b], &self.values[a..b])
    }
    pub fn nnz(&self) -> usize {
        self.values.len()
    }

    /// Rows `nodes`, in that order.
    pub fn select_rows(&self, nodes: &[usize]) -> CsrMatrix {
        let mut indptr = Vec::with_capacity(nodes.len() + 1);
        indptr.push(0);
        let nnz = nodes.iter().map(|&r| self.indptr[r + 1] - self.indptr[r]).sum();
        let (mut indices, mut values) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
        for &r in nodes {
            let (i, v) = self.row(r);
            indices.extend_from_slice(i);
            values.extend_from_slice(v);
            indptr.push(indices.len());
        }
        CsrMatrix { rows: nodes.len(), cols: self.cols, indptr, indices, values }
    }

    /// These rows followed by `extra` (dense rows of `cols` values, each value minus
    /// `minus` before it is stored; zeros stay implicit).
    fn with_rows_appended(&self, extra: &[Vec<f32>], minus: f32) -> CsrMatrix {
        let (mut indptr, mut indices, mut values) = (self.indptr.clone(), self.indices.clone(), self.values.clone());
        for r in extra {
            assert_eq!(r.len(), self.cols, "appended row width");
            for (j, &v) in r.iter().enumerate() {
                if v - minus != 0.0 {
                    indices.push(j as u32);
                    values.push(v - minus);
                }
            }
            indptr.push(indices.len());
        }
        CsrMatrix { rows: self.rows + extra.len(), cols: self.cols, indptr, indices, values }
    }

    /// Dense copy with `fill` added to every entry (stored and implicit).
    fn to_dense_plus(&self, fill: f32) -> DenseMatrix {
        let mut d = DenseMatrix { rows: self.rows, cols: self.cols, data: vec![fill; self.rows * self.cols] };
        for r in 0..self.rows {
            let (idx, val) = self.row(r);
            let row = d.row_mut(r);
            for (&c, &v) in idx.iter().zip(val) {
                row[c as usize] += v;
            }
        }
        d
    }
}

impl DenseMatrix {
    pub fn zeros(rows: usize, cols: usize) -> Self {
        DenseMatrix { rows, cols, data: vec![0.0; rows * cols] }
    }
    pub fn row(&self, r: usize) -> &[f32] {
        &self.data[r * self.cols..(r + 1) * self.cols]
    }
    pub fn row_mut(&mut self, r: usize) -> &mut [f32] {
        &mut self.data[r * self.cols..(r + 1) * self.cols]
    }
}

impl Features {
    /// The first entry (row, column, value) that is NaN or infinite, in row-major order.
    pub fn first_non_finite(&self) -> Option<(usize, usize, f32)> {
        let sparse = |m: &CsrMatrix, shift: f32| {
            (0..m.rows).find_map(|r| {
                (m.indptr[r]..m.indptr[r + 1])
                    .find(|&k| !(m.values[k] + shift).is_finite())
                    .map(|k| (r, m.indices[k] as usize, m.values[k] + shift))
            })
        };
        match self {
            Features::Dense(m) => m.data.iter().position(|x| !x.is_finite()).map(|i| (i / m.cols.max(1), i % m.cols.max(1), m.data[i])),
            Features::Sparse(m) => sparse(m, 0.0),
            Features::Shifted(m) if !m.shift.is_finite() => Some((0, 0, m.shift)),
            Features::Shifted(m) => sparse(&m.centered, m.shift),
        }
    }

    pub fn rows(&self) -> usize {
        match self {
            Features::Sparse(m) => m.rows,
            Features::Dense(m) => m.rows,
            Features::Shifted(m) => m.centered.rows,
        }
    }
    pub fn cols(&self) -> usize {
        match self {
            Features::Sparse(m) => m.cols,
            Features::Dense(m) => m.cols,
            Features::Shifted(m) => m.centered.cols,
        }
    }
    /// Number of non-zero values.
    pub fn nnz(&self) -> usize {
        match self {
            Features::Sparse(m) => m.nnz(),
            Features::Dense(m) => m.data.iter().filter(|&&x| x != 0.0).count(),
            Features::Shifted(m) if m.shift == 0.0 => m.centered.nnz(),
            Features::Shifted(m) => m.centered.rows * m.centered.cols - m.centered.values.iter().filter(|&&v| v + m.shift == 0.0).count(),
        }
    }

    /// Values a sparse layout of these features stores (a shifted matrix: the
    /// centered part's non-zeros).
    pub fn stored(&self) -> usize {
        match self {
            Features::Shifted(m) => m.centered.nnz(),
            _ => self.nnz(),
        }
    }

    /// Visit the values a sparse layout stores of row `r` as (column, value): the
    /// non-zeros, or for a shifted matrix its centered part (add the shift for the
    /// values themselves).
    pub fn for_each_stored(&self, r: usize, mut f: impl FnMut(usize, f32)) {
        match self {
            Features::Shifted(m) => {
                let (idx, val) = m.centered.row(r);
                idx.iter().zip(val).for_each(|(&c, &v)| f(c as usize, v));
            }
            _ => self.for_each_nonzero(r, f),
        }
    }
    pub fn is_sparse(&self) -> bool {
        matches!(self, Features::Sparse(_))
    }

    /// Visit the non-zero entries of row `r` as (column, value).
    pub fn for_each_nonzero(&self, r: usize, mut f: impl FnMut(usize, f32)) {
        match self {
            Features::Sparse(m) => {
                let (idx, val) = m.row(r);
                for (&c, &v) in idx.iter().zip(val) {
                    f(c as usize, v);
                }
            }
            Features::Dense(m) => {
                for (c, &v) in m.row(r).iter().enumerate() {
                    if v != 0.0 {
                        f(c, v);
                    }
                }
            }
            Features::Shifted(m) => {
                let (idx, val) = m.centered.row(r);
                let mut stored = idx.iter().zip(val).peekable();
                for c in 0..m.centered.cols {
                    let v = match stored.next_if(|(i, _)| **i as usize == c) {
                        Some((_, &v)) => v + m.shift,
                        None => m.shift,
                    };
                    if v != 0.0 {
                        f(c, v);
                    }
                }
            }
        }
    }

    /// Binary if every non-zero is 1, counts if every non-zero is a positive integer,
    /// real otherwise.
    pub fn kind(&self) -> FeatureKind {
        let mut kind = FeatureKind::Binary;
        for r in 0..self.rows() {
            self.for_each_nonzero(r, |_, v| {
                if v != 1.0 {
                    if v > 0.0 && v.fract() == 0.0 {
                        if kind == FeatureKind::Binary {
                            kind = FeatureKind::Counts;
                        }
                    } else {
                        kind = FeatureKind::Real;
                    }
                }
            });
        }
        kind
    }

    /// Rows `nodes` (in that order) as a new matrix of the same storage kind.
    pub fn select_rows(&self, nodes: &[usize]) -> Features {
        match self {
            Features::Sparse(m) => Features::Sparse(m.select_rows(nodes)),
            Features::Dense(m) => {
                let mut data = Vec::with_capacity(nodes.len() * m.cols);
                for &r in nodes {
                    data.extend_from_slice(m.row(r));
                }
                Features::Dense(DenseMatrix { rows: nodes.len(), cols: m.cols, data })
            }
            Features::Shifted(m) => Features::Shifted(ShiftedMatrix { centered: m.centered.select_rows(nodes), shift: m.shift }),
        }
    }

    /// These rows followed by `extra` (dense rows of `cols()` values); the layout
    /// (sparse or dense) is kept.
    pub fn with_rows_appended(&self, extra: &[Vec<f32>]) -> Features {
        match self {
            Features::Dense(m) => {
                let mut data = m.data.clone();
                for r in extra {
                    assert_eq!(r.len(), m.cols, "appended row width");
                    data.extend_from_slice(r);
                }
                Features::Dense(DenseMatrix { rows: m.rows + extra.len(), cols: m.cols, data })
            }
            Features::Sparse(m) => Features::Sparse(m.with_rows_appended(extra, 0.0)),
            Features::Shifted(m) => {
                Features::Shifted(ShiftedMatrix { centered: m.centered.with_rows_appended(extra, m.shift), shift: m.shift })
            }
        }
    }

    /// Dense row-major copy (for model input on small matrices and for tests).
    pub fn to_dense(&self) -> DenseMatrix {
        match self {
            Features::Dense(m) => m.clone(),
            Features::Sparse(m) => m.to_dense_plus(0.0),
            Features::Shifted(m) => m.centered.to_dense_plus(m.shift),
        }
    }
}

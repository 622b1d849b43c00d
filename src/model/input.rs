//! Node features as model input, dense or sparse.
//!
//! Every layer starts with X·W. For bag-of-words features a dense matmul mostly
//! multiplies zeros; the sparse form computes X·W with the message-passing primitive
//! instead: each non-zero (r, c, x_rc) is an "edge" from row c of W to node r with
//! weight x_rc. Which is faster depends on size and density (see
//! [`InputLayout::SPARSE_BELOW_DENSITY`]); both give the same values and gradients.

use burn::tensor::{Tensor, TensorCreationOptions, TensorData};

use super::propagate::{Edges, Strategy, column};
use crate::data::features::Features;

/// Storage layout of a [`NodeInput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputLayout {
    Dense,
    Sparse,
}

impl InputLayout {
    /// Density (non-zeros / entries) below which [`InputLayout::auto`] picks the sparse
    /// layout.
    ///
    /// Measured on the ndarray CPU backend, ms per forward+backward of a 2-layer GCN
    /// (hidden 16): Cora-sized input (2708×1433, 1.27 % non-zero) dense 28, sparse 35;
    /// CoraFull-sized input (19793×8710, 0.57 %) dense 1835, sparse 807. A dense first
    /// layer costs ~N·d·width multiply-adds, a sparse one a fixed ~0.1 µs per non-zero
    /// per gather/scatter (four per step), so the crossover density is about
    /// width/2000: 0.8 % for width 16. Below 1 % the sparse layout also saves the dense
    /// matrix's memory (CoraFull: 690 MB in f32).
    pub const SPARSE_BELOW_DENSITY: f64 = 0.01;

    /// The faster layout for `features` on the CPU backend: sparse below 1 % density,
    /// dense otherwise.
    pub fn auto(features: &Features) -> InputLayout {
        let entries = features.rows() * features.cols();
        if entries > 0 && (features.nnz() as f64) < Self::SPARSE_BELOW_DENSITY * entries as f64 {
            InputLayout::Sparse
        } else {
            InputLayout::Dense
        }
    }
}

/// Non-zeros of an `rows × cols` matrix as edges column → row with their values.
#[derive(Debug, Clone)]
pub struct SparseInput {
    nonzeros: Edges,
    values: Tensor<2>,
    cols: usize,
}

/// Model input: node features on a device.
#[derive(Debug, Clone)]
pub enum NodeInput {
    /// `[N, d]`.
    Dense(Tensor<2>),
    Sparse(SparseInput),
}

impl NodeInput {
    /// Upload `features` in the layout [`InputLayout::auto`] picks.
    pub fn from_features(features: &Features, options: impl Into<TensorCreationOptions>) -> NodeInput {
        Self::with_layout(features, InputLayout::auto(features), options)
    }

    /// Upload `features` in the given layout (either storage kind converts to either).
    pub fn with_layout(
        features: &Features,
        layout: InputLayout,
        options: impl Into<TensorCreationOptions>,
    ) -> NodeInput {
        let options = options.into();
        let (n, d) = (features.rows(), features.cols());
        match layout {
            InputLayout::Dense => {
                let dense = features.to_dense();
                NodeInput::Dense(Tensor::from_data(TensorData::new(dense.data, [n, d]), options))
            }
            InputLayout::Sparse => {
                let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
                for r in 0..n {
                    features.for_each_nonzero(r, |c, v| {
                        rows.push(r as u32);
                        cols.push(c as u32);
                        vals.push(f64::from(v));
                    });
                }
                NodeInput::Sparse(SparseInput {
                    nonzeros: Edges::new(&cols, &rows, n, &options),
                    values: column(&vals, &options),
                    cols: d,
                })
            }
        }
    }

    /// Override the gather/scatter ops a sparse input uses (see [`Strategy`]).
    pub fn with_strategy(self, strategy: Strategy) -> NodeInput {
        match self {
            NodeInput::Sparse(s) => NodeInput::Sparse(SparseInput { nonzeros: s.nonzeros.with_strategy(strategy), ..s }),
            dense => dense,
        }
    }

    /// Number of nodes (rows).
    pub fn num_nodes(&self) -> usize {
        match self {
            NodeInput::Dense(x) => x.dims()[0],
            NodeInput::Sparse(s) => s.nonzeros.num_targets(),
        }
    }

    /// Feature dimension (columns).
    pub fn dim(&self) -> usize {
        match self {
            NodeInput::Dense(x) => x.dims()[1],
            NodeInput::Sparse(s) => s.cols,
        }
    }

    /// X·W for `w` of shape `[d, out]`: a matmul when dense, gather/scale/scatter-add over
    /// the non-zeros when sparse. Differentiable in `w` (and in X when dense).
    pub fn matmul(&self, w: Tensor<2>) -> Tensor<2> {
        let [d, _] = w.dims();
        assert_eq!(d, self.dim(), "input has {} features, weight expects {d}", self.dim());
        match self {
            NodeInput::Dense(x) => x.clone().matmul(w),
            NodeInput::Sparse(s) => s.nonzeros.propagate(w, Some(&s.values)),
        }
    }
}

//! Node features as model input, dense or sparse.
//!
//! Every layer starts with X·W. For bag-of-words features a dense matmul mostly
//! multiplies zeros; the sparse form computes X·W with the message-passing primitive
//! instead: each non-zero (r, c, x_rc) is an "edge" from row c of W to node r with
//! weight x_rc. Which is faster depends on density and the first layer's width (see
//! [`InputLayout::auto`]); both give the same values and gradients.

use burn::tensor::{Tensor, TensorCreationOptions, TensorData};

use super::graph_tensors::GraphTensors;
use super::propagate::{Edges, Strategy, column};
use crate::data::features::Features;

/// Storage layout of a [`NodeInput`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputLayout {
    Dense,
    Sparse,
}

impl InputLayout {
    /// The faster layout on the CPU backend (burn-flex, [`Strategy::Fused`]) for
    /// `features` multiplied by a weight of `width` output columns, from `fgl-sim bench
    /// layout` (Cora 2708×1433 at 1.27 % and CiteSeer 3312×3703 at 0.86 % non-zero, a
    /// dense 1000×32 block; widths 16–512, forward + backward into W, 2 threads): dense
    /// ≈ 0.04–0.07 ns per N·d·width, fused sparse ≈ 0.13–0.3 ns per nnz·width (the upper
    /// end when W's rows are read at random and no longer fit in L2). Sparse therefore
    /// wins below ≈ 13 % density, at every width.
    pub fn auto(features: &Features, width: usize) -> InputLayout {
        Self::for_strategy(features, width, Strategy::Fused)
    }

    /// The faster layout for the ops `strategy` moves rows with.
    ///
    /// * [`Strategy::Fused`]: see [`auto`](Self::auto).
    /// * [`Strategy::Rows`] (burn-ndarray; measured on burn-flex before the fused
    ///   kernels): sparse ≈ 1.1 ns per nnz·width while the gathered `[nnz, width]` block
    ///   stays under ~8 M entries, ≈ 4.2 ns beyond (it falls out of cache), so sparse
    ///   wins below ≈ 3.6 % density for narrow products and below ≈ 0.95 % for wide ones.
    /// * [`Strategy::Elements`] (GPUs, through burn-wgpu's matmul without autotune):
    ///   measured on an H200 (`bench layout --backend wgpu`, 2026-11-28), the dense
    ///   product costs ≈ 0.4–2 ns per entry of X *whatever the width* up to 512 (Cora
    ///   2.2–9.3 ms, PubMed 7.8–9.1 ms), the sparse one ≈ 0.03–0.045 ns per nnz·width
    ///   (PubMed at 10 % density: 1.1 ms at width 16, 13.7 ms at 512). Sparse therefore
    ///   wins while density × width < ≈ 27: at every width tried on Cora and CiteSeer,
    ///   up to width 256 on PubMed.
    pub fn for_strategy(features: &Features, width: usize, strategy: Strategy) -> InputLayout {
        let entries = features.rows() * features.cols();
        let nnz = features.stored();
        if entries == 0 {
            return InputLayout::Dense;
        }
        // (sparse ns per nnz, dense ns per entry of X)
        let (sparse_ns, dense_ns) = match strategy {
            Strategy::Fused => (0.3, 0.04),
            Strategy::Rows if nnz.saturating_mul(width) <= 8 << 20 => (1.1, 0.04),
            Strategy::Rows => (4.2, 0.04),
            Strategy::Elements => (0.03 * width as f64, 0.8),
        };
        if (nnz as f64) * sparse_ns < dense_ns * entries as f64 { InputLayout::Sparse } else { InputLayout::Dense }
    }
}

/// Non-zeros of an `rows × cols` matrix as edges column → row with their values
/// (`None` when every value is 1, as in bag-of-words features: the per-non-zero
/// multiply and its gradient are then skipped), plus a constant `shift` added to every
/// entry (a [`Features::Shifted`] matrix): X·W = X₀·W + shift·1·(1ᵀW).
#[derive(Debug, Clone)]
pub struct SparseInput {
    nonzeros: Edges,
    values: Option<Tensor<2>>,
    cols: usize,
    shift: f32,
}

/// Model input: node features on a device.
// One input per client, built once: boxing the larger variant would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum NodeInput {
    /// `[N, d]`.
    Dense(Tensor<2>),
    Sparse(SparseInput),
    /// `steps` KProp rounds over `graph` of `base`: a defense's feature smoothing over a
    /// graph fixed when the client's tensors are built (LPGNN's KProp_x over the client's
    /// graph, Solitude's l_x over the reported graph while the model trains on a learned
    /// one). X·W is computed as KProp(X₀·W) (KProp is linear), so X₀ keeps its sparse
    /// layout and the product stays O(nnz·width) plus the propagations.
    Smoothed {
        base: Box<NodeInput>,
        graph: Box<GraphTensors>,
        steps: usize,
    },
}

impl NodeInput {
    /// Upload `features` in the layout [`InputLayout::for_strategy`] picks on this
    /// device for a first layer of `width` output columns.
    pub fn from_features(features: &Features, width: usize, options: impl Into<TensorCreationOptions>) -> NodeInput {
        let options = options.into();
        let layout = InputLayout::for_strategy(features, width, Strategy::for_device(&options.device));
        Self::with_layout(features, layout, options)
    }

    /// Upload `features` in the given layout (either storage kind converts to either).
    pub fn with_layout(features: &Features, layout: InputLayout, options: impl Into<TensorCreationOptions>) -> NodeInput {
        let options = options.into();
        let (n, d) = (features.rows(), features.cols());
        match layout {
            InputLayout::Dense => {
                let dense = features.to_dense();
                NodeInput::Dense(Tensor::from_data(TensorData::new(dense.data, [n, d]), options))
            }
            InputLayout::Sparse => {
                let shift = match features {
                    Features::Shifted(m) => m.shift,
                    _ => 0.0,
                };
                let (rows, cols, vals) = match features {
                    // The stored arrays as they are (a DP-GNN batch builds one per step).
                    Features::Sparse(m) | Features::Shifted(crate::data::features::ShiftedMatrix { centered: m, .. }) => {
                        let rows = (0..n).flat_map(|r| std::iter::repeat_n(r as u32, m.indptr[r + 1] - m.indptr[r])).collect();
                        (rows, m.indices.clone(), m.values.iter().map(|&v| f64::from(v)).collect())
                    }
                    Features::Dense(_) => {
                        let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
                        for r in 0..n {
                            features.for_each_stored(r, |c, v| {
                                rows.push(r as u32);
                                cols.push(c as u32);
                                vals.push(f64::from(v));
                            });
                        }
                        (rows, cols, vals)
                    }
                };
                NodeInput::Sparse(SparseInput {
                    nonzeros: Edges::new(&cols, &rows, d, n, &options),
                    values: (!vals.iter().all(|&v| v == 1.0)).then(|| column(&vals, &options)),
                    cols: d,
                    shift,
                })
            }
        }
    }

    /// This input with a defense's `steps` KProp rounds over `graph` ([`NodeInput::Smoothed`]);
    /// itself when `steps` is 0.
    pub fn smoothed(self, graph: &GraphTensors, steps: usize) -> NodeInput {
        if steps == 0 {
            return self;
        }
        NodeInput::Smoothed { base: Box::new(self), graph: Box::new(graph.clone()), steps }
    }

    /// Override the gather/scatter ops a sparse input uses (see [`Strategy`]).
    pub fn with_strategy(self, strategy: Strategy) -> NodeInput {
        match self {
            NodeInput::Sparse(s) => NodeInput::Sparse(SparseInput { nonzeros: s.nonzeros.with_strategy(strategy), ..s }),
            NodeInput::Smoothed { base, graph, steps } => {
                NodeInput::Smoothed { base: Box::new(base.with_strategy(strategy)), graph, steps }
            }
            dense => dense,
        }
    }

    /// Number of nodes (rows).
    pub fn num_nodes(&self) -> usize {
        match self {
            NodeInput::Dense(x) => x.dims()[0],
            NodeInput::Sparse(s) => s.nonzeros.num_targets(),
            NodeInput::Smoothed { base, .. } => base.num_nodes(),
        }
    }

    /// Feature dimension (columns).
    pub fn dim(&self) -> usize {
        match self {
            NodeInput::Dense(x) => x.dims()[1],
            NodeInput::Sparse(s) => s.cols,
            NodeInput::Smoothed { base, .. } => base.dim(),
        }
    }

    /// X·W for `w` of shape `[d, out]`: a matmul when dense, gather/scale/scatter-add over
    /// the non-zeros when sparse. Differentiable in `w` (and in X when dense).
    pub fn matmul(&self, w: Tensor<2>) -> Tensor<2> {
        let [d, _] = w.dims();
        assert_eq!(d, self.dim(), "input has {} features, weight expects {d}", self.dim());
        match self {
            NodeInput::Dense(x) if Strategy::for_device(&x.device()) == Strategy::Fused => super::dense::input_matmul(x.clone(), w),
            NodeInput::Dense(x) => x.clone().matmul(w),
            NodeInput::Sparse(s) if s.shift == 0.0 => s.nonzeros.propagate(w, s.values.as_ref()),
            NodeInput::Sparse(s) => {
                let offset = w.clone().sum_dim(0).mul_scalar(s.shift);
                s.nonzeros.propagate(w, s.values.as_ref()) + offset
            }
            NodeInput::Smoothed { base, graph, steps } => super::kprop::kprop(base.matmul(w), graph, *steps),
        }
    }

    /// Xᵀ·M for `m` of shape `[N, c]` → `[d, c]`: a matmul when dense; when sparse, the
    /// same non-zeros read by column (per column in row order), with a shift adding
    /// shift·1·(1ᵀM) to every row.
    pub fn transposed_matmul(&self, m: Tensor<2>) -> Tensor<2> {
        assert_eq!(m.dims()[0], self.num_nodes(), "input has {} nodes, the product's right side {} rows", self.num_nodes(), m.dims()[0]);
        match self {
            NodeInput::Dense(x) => x.clone().transpose().matmul(m),
            NodeInput::Sparse(s) if s.shift == 0.0 => s.nonzeros.propagate_back(m, s.values.as_ref()),
            NodeInput::Sparse(s) => {
                let offset = m.clone().sum_dim(0).mul_scalar(s.shift);
                s.nonzeros.propagate_back(m, s.values.as_ref()) + offset
            }
            // DP-GNN, the one caller, refuses smoothed features (`feature_kprop`).
            NodeInput::Smoothed { .. } => unreachable!("Xᵀ·M of smoothed features: DP-GNN refuses feature KProp"),
        }
    }
}

//! The one message-passing primitive every layer uses: gather rows at edge sources,
//! optionally scale each message, scatter-add into edge targets.
//!
//! Burn's autodiff differentiates a gather through a scatter-add and vice versa, so
//! forward and backward stay sparse: nothing here ever builds an N×N matrix. The same
//! primitive also multiplies a sparse input matrix by a weight matrix (see `input.rs`):
//! the non-zeros are "edges" from weight rows to nodes.
//!
//! Which ops carry it depends on the backend ([`Strategy`]): fused sparse kernels on
//! burn-flex (`spmm`), whole-row `select`/`select_assign` on burn-ndarray,
//! element-wise `gather`/`scatter` on GPUs.

use std::sync::Arc;

use burn::tensor::activation::leaky_relu;
use burn::tensor::{Device, IndexingUpdateOp, Int, Tensor, TensorCreationOptions, TensorData};

use super::spmm::{self, Pattern, SharedPattern};

/// Which Burn ops move rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// burn-flex (the `cpu` backend): propagation by the fused kernels of [`spmm`], which
    /// never materialise the `[E, F]` message block, run on every thread of the current
    /// pool and sum each target row in edge order (bit-identical whatever the thread
    /// count, and equal to [`Rows`](Strategy::Rows) in the forward pass). The element
    /// ops ([`Edges::gather_src`], [`Edges::scatter_add`], …) are those of `Rows`.
    Fused,
    /// `select` / `select_assign(Add)`: one index per row. On the ndarray CPU backend this
    /// is the fastest form (per training step on Cora-sized input, `Elements` is as fast for
    /// GCN with dense input and up to 6× slower for GAT or sparse input), and the scatter is one sequential pass over the edges, so sums are
    /// bit-reproducible whatever the thread count.
    Rows,
    /// `gather` / `scatter(Add)` with the row index broadcast over the columns. On GPU
    /// (cubecl) backends `select_assign` runs one thread per *column* that walks every
    /// edge serially (burn-cubecl 0.22.1 `select_assign_kernel`), and so does the
    /// gradient of `select`; `scatter(Add)` instead runs one thread per element with
    /// atomic adds (`scatter_add_atomic_kernel`, on devices with atomic float add), and
    /// the gradient of `gather` is that scatter. The price: atomic float sums land in no
    /// fixed order, so GPU results are not bit-reproducible from run to run.
    Elements,
}

impl Strategy {
    /// [`Fused`](Strategy::Fused) on burn-flex, [`Elements`](Strategy::Elements) on GPU
    /// devices, [`Rows`](Strategy::Rows) otherwise.
    ///
    /// Burn 0.22 exposes no backend query on `Device` short of matching its feature-gated
    /// dispatch enum, so this reads the device's `Debug` name (`Device<Flex(..)>`,
    /// `Device<Cube(Wgpu(..))>`, `Device<NdArray(Cpu)>`). Should that format change, the
    /// fallback is `Rows`, which is correct everywhere and only slower.
    pub fn for_device(device: &Device) -> Strategy {
        let name = format!("{:?}", device.clone().without_autodiff());
        if name.contains("Flex(") {
            Strategy::Fused
        } else if name.contains("Cube(") && !name.contains("Cube(Cpu") {
            Strategy::Elements
        } else {
            Strategy::Rows
        }
    }
}

/// Directed edges `src → dst` from `num_sources` source rows into `num_targets` targets,
/// stored as index tensors on a device (and, for the fused kernels, as a host pattern).
#[derive(Debug, Clone)]
pub struct Edges {
    /// `None` when there are no edges: Burn is never asked for zero-length index tensors.
    index: Option<(Tensor<1, Int>, Tensor<1, Int>)>,
    /// The host pattern of the fused kernels, built only where they run (burn-flex).
    pattern: Option<SharedPattern>,
    len: usize,
    num_targets: usize,
    strategy: Strategy,
}

impl Edges {
    /// Edges `src[i] → dst[i]`, every `src < num_sources` and every `dst < num_targets`.
    /// The strategy follows the device ([`Strategy::for_device`]).
    pub fn new(src: &[u32], dst: &[u32], num_sources: usize, num_targets: usize, options: &TensorCreationOptions) -> Edges {
        let strategy = Strategy::for_device(&options.device);
        let pattern = (strategy == Strategy::Fused).then(|| Arc::new(Pattern::new(src, dst, num_sources, num_targets)));
        let len = src.len();
        let index = (len > 0).then(|| (index_tensor(src, options), index_tensor(dst, options)));
        Edges { index, pattern, len, num_targets, strategy }
    }

    /// The same edges moved by the given ops (results are equal up to float rounding).
    /// Panics when asked for [`Fused`](Strategy::Fused) on a device other than burn-flex.
    pub fn with_strategy(mut self, strategy: Strategy) -> Edges {
        assert!(strategy != Strategy::Fused || self.pattern.is_some(), "the fused kernels run on burn-flex devices only");
        self.strategy = strategy;
        self
    }

    /// The host pattern when the fused kernels carry this edge set.
    fn fused(&self) -> Option<&SharedPattern> {
        if self.strategy == Strategy::Fused { self.pattern.as_ref() } else { None }
    }

    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Number of edges.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size of the target set (rows of every scatter result).
    pub fn num_targets(&self) -> usize {
        self.num_targets
    }

    fn index(&self) -> &(Tensor<1, Int>, Tensor<1, Int>) {
        self.index.as_ref().expect("gather/scatter on an empty edge set (callers check is_empty)")
    }

    /// Rows of `x` at the edge sources: `[len, F]`. Panics on an empty edge set.
    pub fn gather_src(&self, x: Tensor<2>) -> Tensor<2> {
        self.gather(x, &self.index().0)
    }

    /// Rows of `x` at the edge targets: `[len, F]`. Panics on an empty edge set.
    pub fn gather_dst(&self, x: Tensor<2>) -> Tensor<2> {
        self.gather(x, &self.index().1)
    }

    fn gather(&self, x: Tensor<2>, index: &Tensor<1, Int>) -> Tensor<2> {
        match self.strategy {
            Strategy::Rows | Strategy::Fused => x.select(0, index.clone()),
            Strategy::Elements => {
                let [_, f] = x.dims();
                x.gather(0, broadcast(index, f))
            }
        }
    }

    /// Rows of `x`, which takes no gradient, at the edge sources (`at_src`) or targets:
    /// [`gather_src`](Self::gather_src) / [`gather_dst`](Self::gather_dst) without a
    /// gradient, copied on the host where the fused kernels run.
    pub fn gather_constant(&self, x: Tensor<2>, at_src: bool) -> Tensor<2> {
        match self.fused() {
            Some(pattern) => spmm::gather_rows(x, pattern, at_src),
            None if at_src => self.gather_src(x.detach()),
            None => self.gather_dst(x.detach()),
        }
    }

    /// Sum of the per-edge rows `messages` (`[len, F]`) into their targets: `[num_targets, F]`.
    /// Targets without edges get 0.
    pub fn scatter_add(&self, messages: Tensor<2>) -> Tensor<2> {
        let [_, f] = messages.dims();
        let zeros = Tensor::zeros([self.num_targets, f], like(&messages));
        match (&self.index, self.strategy) {
            (None, _) => zeros,
            (Some((_, dst)), Strategy::Rows | Strategy::Fused) => zeros.select_assign(0, dst.clone(), messages, IndexingUpdateOp::Add),
            (Some((_, dst)), Strategy::Elements) => zeros.scatter(0, broadcast(dst, f), messages, IndexingUpdateOp::Add),
        }
    }

    /// Per-target maximum of the per-edge rows `values` (`[len, F]`); targets without
    /// edges get −∞. Computed on a detached copy: callers use it only as a shift that
    /// cancels mathematically (segment softmax), so no gradient is needed or wanted
    /// (Burn documents max-scatter gradients as undefined for repeated indices).
    /// Always `select_assign(Max)`: cubecl has no atomic float max, so its `scatter(Max)`
    /// walks the edges serially too.
    pub fn scatter_max(&self, values: Tensor<2>) -> Tensor<2> {
        let [_, f] = values.dims();
        let init = Tensor::full([self.num_targets, f], f64::NEG_INFINITY, like(&values));
        match &self.index {
            Some((_, dst)) => init.select_assign(0, dst.clone(), values.detach(), IndexingUpdateOp::Max),
            None => init,
        }
    }

    /// GAT's attention coefficients: per edge and head `l = LeakyReLU(a_src[u] + a_dst[v])`
    /// (`a_src`: `[num_sources, H]`, `a_dst`: `[num_targets, H]`), soft-maxed over the
    /// edges into each target: `[len, H]`.
    ///
    /// The softmax subtracts each target's maximum logit first. Softmax is invariant to a
    /// per-target shift, so the shift is treated as a constant (a max-scatter on detached
    /// logits in the composed form: Burn documents max-scatter gradients as undefined for
    /// repeated indices); it only keeps `exp` from overflowing. A target whose edges
    /// include a self loop (GAT adds one everywhere) has a finite maximum and a
    /// denominator ≥ 1. The fused kernel computes the same per target in edge order, and
    /// its backward pass goes through softmax and LeakyReLU in one step per target.
    pub fn edge_softmax(&self, a_src: Tensor<2>, a_dst: Tensor<2>, negative_slope: f64) -> Tensor<2> {
        if let Some(pattern) = self.fused() {
            return spmm::edge_softmax(a_src, a_dst, pattern, negative_slope);
        }
        let logits = leaky_relu(self.gather_src(a_src) + self.gather_dst(a_dst), negative_slope);
        let shift = self.gather_dst(self.scatter_max(logits.clone()));
        let weights = (logits - shift).exp();
        let denominators = self.gather_dst(self.scatter_add(weights.clone()));
        weights / denominators
    }

    /// Message passing: `out[v] = Σ_{u→v} w_uv · x[u]`, with `weights` of shape `[len, 1]`,
    /// or `[len, H]` for `H` heads splitting the columns of `x` into equal blocks, each
    /// scaled by its own weight (`None` = all ones). Returns `[num_targets, F]`.
    /// Differentiable in `x` and in `weights`.
    pub fn propagate(&self, x: Tensor<2>, weights: Option<&Tensor<2>>) -> Tensor<2> {
        let [_, f] = x.dims();
        if self.is_empty() {
            return Tensor::zeros([self.num_targets, f], like(&x));
        }
        if let Some(pattern) = self.fused() {
            return match weights {
                Some(w) => spmm::spmm_weighted(x, w.clone(), pattern, false),
                None => spmm::spmm(x, pattern, false),
            };
        }
        let messages = self.gather_src(x);
        let messages = match weights {
            Some(w) if w.dims()[1] > 1 => {
                let [e, h] = w.dims();
                (messages.reshape([e, h, f / h]) * w.clone().reshape([e, h, 1])).reshape([e, f])
            }
            Some(w) => messages * w.clone(),
            None => messages,
        };
        self.scatter_add(messages)
    }
}

/// Creation options (device and float dtype) matching an existing tensor.
pub(crate) fn like(x: &Tensor<2>) -> TensorCreationOptions {
    TensorCreationOptions::new(x.device()).with_dtype(x.dtype())
}

/// `[len]` row indices repeated over `f` columns: `[len, f]`, as `gather`/`scatter` want.
fn broadcast(index: &Tensor<1, Int>, f: usize) -> Tensor<2, Int> {
    let [len] = index.dims();
    index.clone().unsqueeze_dim::<2>(1).expand([len, f])
}

fn index_tensor(idx: &[u32], options: &TensorCreationOptions) -> Tensor<1, Int> {
    let data: Vec<i64> = idx.iter().map(|&i| i64::from(i)).collect();
    // The device's default integer dtype (i64 on CPU, possibly i32 on GPU backends).
    Tensor::from_data(TensorData::new(data, [idx.len()]), &options.device)
}

/// A `[len, 1]` float column (per-edge weights) computed on the host in f64 and stored in
/// the options' float dtype.
pub(crate) fn column(values: &[f64], options: &TensorCreationOptions) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values.to_vec(), [values.len(), 1]), options.clone())
}

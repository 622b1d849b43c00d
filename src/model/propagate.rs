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

use std::sync::{Arc, OnceLock};

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

/// Edge sources and targets as index tensors.
type IndexPair = (Tensor<1, Int>, Tensor<1, Int>);

/// Directed edges `src → dst` from `num_sources` source rows into `num_targets` targets,
/// stored as index tensors on a device (and, for the fused kernels, as a host pattern).
#[derive(Debug, Clone)]
pub struct Edges {
    /// The (source, target) index tensors; `None` when there are no edges: Burn is never
    /// asked for zero-length index tensors. Where the host pattern exists they are made
    /// from it on first use, since the fused kernels never read them (a DP-GNN batch
    /// builds edge sets whose index tensors nothing reads) and a clone shares them.
    index: Arc<OnceLock<Option<IndexPair>>>,
    /// The host pattern of the fused kernels, built only where they run (burn-flex).
    pattern: Option<SharedPattern>,
    /// Where the index tensors go.
    options: TensorCreationOptions,
    len: usize,
    num_sources: usize,
    num_targets: usize,
    strategy: Strategy,
    /// [`Elements`](Strategy::Elements)' per-target maximum, planned on first use (GAT
    /// only) and shared by clones.
    max_plan: Arc<OnceLock<MaxPlan>>,
}

impl Edges {
    /// Edges `src[i] → dst[i]`, every `src < num_sources` and every `dst < num_targets`.
    /// The strategy follows the device ([`Strategy::for_device`]).
    pub fn new(src: &[u32], dst: &[u32], num_sources: usize, num_targets: usize, options: &TensorCreationOptions) -> Edges {
        let strategy = Strategy::for_device(&options.device);
        let pattern = (strategy == Strategy::Fused).then(|| Arc::new(Pattern::new(src, dst, num_sources, num_targets)));
        let len = src.len();
        let index = Arc::new(OnceLock::new());
        if pattern.is_none() {
            let _ = index.set((len > 0).then(|| (index_tensor(src, options), index_tensor(dst, options))));
        }
        Edges { index, pattern, options: options.clone(), len, num_sources, num_targets, strategy, max_plan: Arc::default() }
    }

    /// The index tensors (`None`: no edges), made from the host pattern on first use.
    fn index_pair(&self) -> Option<&IndexPair> {
        self.index
            .get_or_init(|| {
                let pattern = self.pattern.as_ref().expect("edges without a host pattern have their index tensors from the start");
                (self.len > 0).then(|| (index_tensor(pattern.src(), &self.options), index_tensor(pattern.dst(), &self.options)))
            })
            .as_ref()
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

    /// Size of the source set (rows of a [`propagate_back`](Self::propagate_back) result).
    pub fn num_sources(&self) -> usize {
        self.num_sources
    }

    /// Size of the target set (rows of every scatter result).
    pub fn num_targets(&self) -> usize {
        self.num_targets
    }

    fn index(&self) -> &(Tensor<1, Int>, Tensor<1, Int>) {
        self.index_pair().expect("gather/scatter on an empty edge set (callers check is_empty)")
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
        rows_at(x, index, self.strategy)
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
        match self.index_pair() {
            None => zeros,
            Some((_, dst)) => add_at(zeros, dst, messages, self.strategy),
        }
    }

    /// Per-target maximum of the per-edge rows `values` (`[len, F]`); targets without
    /// edges get −∞. Computed on a detached copy: callers use it only as a shift that
    /// cancels mathematically (segment softmax), so no gradient is needed or wanted
    /// (Burn documents max-scatter gradients as undefined for repeated indices).
    ///
    /// `select_assign(Max)` on the CPU. On GPUs ([`Elements`](Strategy::Elements)) that
    /// kernel runs one thread per column walking every edge (cubecl has no atomic float
    /// max, so `scatter(Max)` would too), so there the maxima are taken by [`MaxPlan`]:
    /// parallel reductions over blocks of each target's edges. A maximum is exact in any
    /// order, so both give the same values.
    pub fn scatter_max(&self, values: Tensor<2>) -> Tensor<2> {
        let [_, f] = values.dims();
        let init = || Tensor::full([self.num_targets, f], f64::NEG_INFINITY, like(&values));
        match self.index_pair() {
            None => init(),
            Some((_, dst)) if self.strategy == Strategy::Elements => {
                self.max_plan.get_or_init(|| MaxPlan::new(dst, self.num_targets)).max(values.detach())
            }
            Some((_, dst)) => init().select_assign(0, dst.clone(), values.detach(), IndexingUpdateOp::Max),
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
        if let Some(out) = self.empty_or_fused(&x, weights, false) {
            return out;
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

    /// Message passing against the edges: `out[u] = Σ_{u→v} w_uv · x[v]`, with `weights`
    /// of shape `[len, 1]` (`None` = all ones): the transposed product, `[num_sources, F]`,
    /// over the same edges (on burn-flex the same host pattern, read by source). Sums
    /// run in edge order per source, as a copy of these edges reversed would sum them.
    pub fn propagate_back(&self, x: Tensor<2>, weights: Option<&Tensor<2>>) -> Tensor<2> {
        let [_, f] = x.dims();
        if let Some(out) = self.empty_or_fused(&x, weights, true) {
            return out;
        }
        assert!(weights.is_none_or(|w| w.dims()[1] == 1), "propagate_back takes one weight per edge");
        let messages = self.gather_dst(x);
        let messages = match weights {
            Some(w) => messages * w.clone(),
            None => messages,
        };
        let (src, _) = self.index();
        add_at(Tensor::zeros([self.num_sources, f], like(&messages)), src, messages, self.strategy)
    }

    /// A product over the edges (`transpose`: against them) where it takes no element
    /// ops: zeros for no edges, the fused kernels on burn-flex; `None` elsewhere.
    fn empty_or_fused(&self, x: &Tensor<2>, weights: Option<&Tensor<2>>, transpose: bool) -> Option<Tensor<2>> {
        if self.is_empty() {
            let rows = if transpose { self.num_sources } else { self.num_targets };
            return Some(Tensor::zeros([rows, x.dims()[1]], like(x)));
        }
        let pattern = self.fused()?;
        Some(match weights {
            Some(w) => spmm::spmm_weighted(x.clone(), w.clone(), pattern, transpose),
            None => spmm::spmm(x.clone(), pattern, transpose),
        })
    }
}

/// Rows of `x` at `index` (`[len, F]`), differentiable: `select` on the CPU; on GPUs a
/// `gather` with the index broadcast, since the gradient of `select` there walks every
/// row serially in one thread per column (cubecl's `select_assign`), where the gradient
/// of `gather` is one thread per element (a scatter-add). The same values either way.
pub fn select_rows(x: Tensor<2>, index: &Tensor<1, Int>) -> Tensor<2> {
    let strategy = Strategy::for_device(&x.device());
    rows_at(x, index, strategy)
}

/// `base` plus the rows of `values` (`[len, F]`) added at rows `index`: `select_assign`
/// with [`IndexingUpdateOp::Add`] on the CPU (one pass in order), and on GPUs a `scatter`
/// with the index broadcast (one thread per element, atomic adds) instead of one thread
/// per column walking every row.
pub fn add_rows(base: Tensor<2>, index: &Tensor<1, Int>, values: Tensor<2>) -> Tensor<2> {
    let strategy = Strategy::for_device(&base.device());
    add_at(base, index, values, strategy)
}

/// Rows of `x` at `index` by the strategy's ops: `select` (one index per row), or
/// `gather` with the index broadcast over the columns ([`Elements`](Strategy::Elements)).
fn rows_at(x: Tensor<2>, index: &Tensor<1, Int>, strategy: Strategy) -> Tensor<2> {
    match strategy {
        Strategy::Rows | Strategy::Fused => x.select(0, index.clone()),
        Strategy::Elements => {
            let f = x.dims()[1];
            x.gather(0, broadcast(index, f))
        }
    }
}

/// `base` plus the rows of `values` added at rows `index` by the strategy's ops:
/// `select_assign(Add)`, or `scatter(Add)` with the index broadcast
/// ([`Elements`](Strategy::Elements)).
fn add_at(base: Tensor<2>, index: &Tensor<1, Int>, values: Tensor<2>, strategy: Strategy) -> Tensor<2> {
    match strategy {
        Strategy::Rows | Strategy::Fused => base.select_assign(0, index.clone(), values, IndexingUpdateOp::Add),
        Strategy::Elements => {
            let f = values.dims()[1];
            base.scatter(0, broadcast(index, f), values, IndexingUpdateOp::Add)
        }
    }
}

/// Per-target maxima of per-edge rows by levels of blocked reductions, with no serial
/// walk over the edges: each level gathers its input's rows into blocks of at most
/// [`MaxPlan::BLOCK`] rows of one target (short blocks padded with −∞) and takes each
/// block's maximum, until every target has one row left. A target of degree d needs
/// ⌈log_BLOCK d⌉ levels; every level costs at most one block per target more than the
/// rows it reduces.
#[derive(Debug)]
struct MaxPlan {
    /// Per level: the gathered row of each block slot (`blocks × width`; the input's row
    /// count stands for the −∞ pad row appended to it), and `width`.
    levels: Vec<(Tensor<1, Int>, usize)>,
    /// Each target's row in the last level's output (its row count: no edges, −∞).
    last: Tensor<1, Int>,
}

impl MaxPlan {
    const BLOCK: usize = 32;

    /// The plan for edges into `dst` (read back from the device once).
    fn new(dst: &Tensor<1, Int>, num_targets: usize) -> MaxPlan {
        let targets: Vec<usize> = dst.to_data().iter::<i64>().map(|t| t as usize).collect();
        let (levels, last) = plan_max_levels(&targets, num_targets, Self::BLOCK);
        let options = TensorCreationOptions::new(dst.device());
        let index = |rows: &[u32]| index_tensor(rows, &options);
        MaxPlan { levels: levels.iter().map(|(rows, width)| (index(rows), *width)).collect(), last: index(&last) }
    }

    /// `[num_targets, F]` maxima of `values` (`[len, F]`, no gradient tracked).
    fn max(&self, values: Tensor<2>) -> Tensor<2> {
        let (f, options) = (values.dims()[1], like(&values));
        let pad = |x: Tensor<2>| Tensor::cat(vec![x, Tensor::full([1, f], f64::NEG_INFINITY, options.clone())], 0);
        let mut rows = values;
        for (index, width) in &self.levels {
            let blocks = index.dims()[0] / width;
            rows = pad(rows).select(0, index.clone()).reshape([blocks, *width, f]).max_dim(1).reshape([blocks, f]);
        }
        pad(rows).select(0, self.last.clone())
    }
}

/// [`MaxPlan`]'s levels on the host, for edges into `targets[e]`: per level the rows each
/// block gathers (`blocks × width`, `rows` = the level input's row count for padding) and
/// its width, then each target's row in the last level's output (the pad row when it has
/// no edges). Blocks take a target's rows in order, `block` at a time; a level's width is
/// its longest block, so a graph of degree ≤ `block` takes one level of that degree.
fn plan_max_levels(targets: &[usize], num_targets: usize, block: usize) -> (Vec<(Vec<u32>, usize)>, Vec<u32>) {
    assert!(block >= 2, "a block reduces at least two rows");
    let mut rows_of: Vec<Vec<u32>> = vec![Vec::new(); num_targets];
    for (e, &t) in targets.iter().enumerate() {
        rows_of[t].push(e as u32);
    }
    let mut input_rows = targets.len();
    let mut levels = Vec::new();
    loop {
        let longest = rows_of.iter().map(Vec::len).max().unwrap_or(0);
        if longest <= 1 {
            break;
        }
        let width = longest.min(block);
        let pad = input_rows as u32;
        let mut gather = Vec::new();
        let mut blocks = 0u32;
        for rows in &mut rows_of {
            let mut next = Vec::with_capacity(rows.len().div_ceil(width));
            for chunk in rows.chunks(width) {
                gather.extend_from_slice(chunk);
                gather.resize(gather.len() + width - chunk.len(), pad);
                next.push(blocks);
                blocks += 1;
            }
            *rows = next;
        }
        input_rows = blocks as usize;
        levels.push((gather, width));
    }
    let last = rows_of.iter().map(|r| r.first().copied().unwrap_or(input_rows as u32)).collect();
    (levels, last)
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

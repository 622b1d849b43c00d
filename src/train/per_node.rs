//! Per-node gradients of a node classifier, exact per node, without materialising one
//! gradient per node (DP-GNN's per-example clipping; Burn has no vmap).
//!
//! Each node of a batch gets its own copy of its computation graph ([`ComputationGraph`]),
//! the copies side by side in one block-diagonal graph ([`NodeBatch`]): a node's loss
//! then depends on its own block only, and so does every row of every intermediate
//! gradient. Every parameter tensor of GCN, GraphSAGE and the linear head is used as a
//! row-wise linear map, out = A·W (a bias: A = 1), so node b's gradient of W is
//! A_bᵀ·G_b over the rows of block b, G = ∂L/∂out. One backward pass yields every G,
//! read off zero "probe" tensors added to each linear output. Then, per tensor:
//!
//! - ‖A_bᵀG_b‖²_F = Σ_{i,j ∈ b} (a_i·a_j)(g_i·g_j): two block Gram matrices, multiplied
//!   element-wise and summed — on burn-flex on the host, block by block, in the order
//!   gemm and burn-flex's reductions would take over the blocks padded to the largest
//!   (the numbers DP-GNN's results were first made with), elsewhere on the device;
//! - Σ_b c_b·A_bᵀG_b = Aᵀ·(c ∘ G), c_b scaling the rows of block b: one matrix product,
//!   the size of an ordinary weight gradient.
//!
//! Bag-of-words features stay sparse in the batch (as in a client's input): the first
//! layer's product, its Gram matrices (on the host, over each pair's common non-zeros)
//! and its Aᵀ·(c ∘ G) then cost per non-zero. On Cora (1.3 % non-zero) this made a
//! DP-GNN epoch 2–3× faster than with the batch's features densified.
//!
//! The cost is one forward and backward over the batch's blocks plus the Gram matrices;
//! `fgl-sim bench dp-gnn` measures it against plain training. Tests check it against
//! the naive loop: one node at a time, Burn's own gradients.

use burn::module::{Module, Param, ParamId};
use burn::optim::GradientsParams;
use burn::tensor::{DType, Device, Int, Tensor, TensorCreationOptions, TensorData};
use macerator::{Scalar, Simd, vload_unaligned};

use super::{ClientTensors, Loss, NodeSet};
use crate::data::Features;
use crate::error::{Error, Result};
use crate::model::dropout::dropout;
use crate::model::{Conv, GraphTensors, InputLayout, NodeClassifier, NodeInput, Output, Strategy};
use crate::rng::Rng;
use crate::simd::Isa;

/// One node's computation graph: `nodes[0]` is the root (client node ids), `senders[i]`
/// the block positions whose messages node `nodes[i]` receives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComputationGraph {
    pub nodes: Vec<usize>,
    pub senders: Vec<Vec<u32>>,
}

impl ComputationGraph {
    /// The computation graph of `root` for `hops` rounds of message passing over
    /// `senders_of` (client ids): every node within `hops` steps upstream of the root,
    /// with all the incoming edges of those closer than `hops` (the farthest nodes only
    /// send). Nodes are numbered in order of discovery (breadth first, senders in order).
    pub fn of(root: usize, hops: usize, senders_of: &[Vec<u32>]) -> ComputationGraph {
        let mut nodes = vec![root];
        let mut position = std::collections::HashMap::from([(root, 0u32)]);
        let mut senders: Vec<Vec<u32>> = vec![Vec::new()];
        let mut frontier = vec![0usize];
        for _ in 0..hops {
            let mut next = Vec::new();
            for &w in &frontier {
                let list: Vec<u32> = senders_of[nodes[w]]
                    .iter()
                    .map(|&x| {
                        *position.entry(x as usize).or_insert_with(|| {
                            nodes.push(x as usize);
                            senders.push(Vec::new());
                            next.push(nodes.len() - 1);
                            (nodes.len() - 1) as u32
                        })
                    })
                    .collect();
                senders[w] = list;
            }
            frontier = next;
        }
        ComputationGraph { nodes, senders }
    }
}

/// A batch of computation graphs on a device, side by side.
#[derive(Debug, Clone)]
pub struct NodeBatch {
    pub graph: GraphTensors,
    /// `[R, d]`: the features of every block's nodes.
    features: BatchFeatures,
    device: Device,
    /// The row of each block's root, and its label as held.
    pub roots: Tensor<1, Int>,
    pub labels: Tensor<1, Int>,
    /// `[B·S]`: block b's rows at b·S.., padded with row R (a zero row appended).
    pad_index: Tensor<1, Int>,
    /// Block of every row (`[R]`).
    row_block: Tensor<1, Int>,
    rows: usize,
    blocks: usize,
    /// Rows of the largest block.
    width: usize,
    /// Block b's rows are `block_start[b]..block_start[b + 1]` (host copy of `row_block`).
    block_start: Vec<usize>,
    /// The blocks by size, for Gram matrices without padding every block to the largest.
    groups: Option<BlockGroups>,
}

/// A batch's blocks in groups of similar size, each padded only to its own largest.
///
/// A batch is padded to its largest computation graph, and on graphs with hubs that one
/// is far larger than the rest (Cora, 10 Fluid clients, D = 5: batches of 64 padded to
/// 18–101 rows, 4.1 M padded Gram entries a round for 0.19 M real ones); the block Gram
/// matrices then cost B·S² per column. Grouped, each group's product is its own; the
/// entries are the same numbers bit for bit where gemm (burn-flex's matmul) computes
/// each one alike in both products: every group at least [`MIN_GROUP_WIDTH`] rows wide
/// (gemm's horizontal kernel for m·n ≤ 256 sums in another order) and at most
/// [`MAX_GROUPED_COLUMNS`] columns (one block of k, whatever m and n).
#[derive(Debug, Clone)]
struct BlockGroups {
    groups: Vec<BlockGroup>,
    /// Block b's position in the groups' blocks one after the other.
    order: Tensor<1, Int>,
}

#[derive(Debug, Clone)]
struct BlockGroup {
    /// The group's blocks (batch positions), in the group's order.
    members: Vec<usize>,
    blocks: usize,
    width: usize,
    /// `[blocks·width]`: the group's rows, each block padded with row R.
    pad_index: Tensor<1, Int>,
}

/// `v` as an index tensor on `device`.
fn index_tensor(v: Vec<i64>, device: &Device) -> Tensor<1, Int> {
    let n = v.len();
    Tensor::<1, Int>::from_data(TensorData::new(v, [n]), device)
}

/// `t` (`[R, c]`) with a zero row appended (row R, the padding of every block).
fn with_zero_row(t: Tensor<2>) -> Tensor<2> {
    let zero = Tensor::<2>::zeros([1, t.dims()[1]], &t.device());
    Tensor::cat(vec![t, zero], 0)
}

/// `[blocks, width, width]`: the Gram matrices of `rows` picked by `pad_index` in blocks
/// of `width` (one batched product).
fn padded_gram(rows: &Tensor<2>, pad_index: &Tensor<1, Int>, blocks: usize, width: usize) -> Tensor<3> {
    let c = rows.dims()[1];
    let padded = rows.clone().select(0, pad_index.clone()).reshape([blocks, width, c]);
    padded.clone().matmul(padded.swap_dims(1, 2))
}

/// Batches whose largest block is no wider are padded as one (gemm's horizontal kernel).
const MIN_GROUP_WIDTH: usize = 17;
/// Gram matrices of wider rows are padded as one (gemm splits k by the product's shape).
const MAX_GROUPED_COLUMNS: usize = 512;

impl BlockGroups {
    /// Group sizes grow by half: a block is padded to at most 1.5× its rows (or to
    /// [`MIN_GROUP_WIDTH`]). `None` where grouping would save under a quarter of the
    /// padded entries.
    fn of(starts: &[usize], rows: usize, device: &Device) -> Option<BlockGroups> {
        let sizes: Vec<usize> = starts.windows(2).map(|w| w[1] - w[0]).collect();
        let width = sizes.iter().copied().max().unwrap_or(1);
        if width < MIN_GROUP_WIDTH {
            return None;
        }
        let class = |size: usize| {
            let mut bound = MIN_GROUP_WIDTH as f64;
            let mut i = 0;
            while (size as f64) > bound {
                bound *= 1.5;
                i += 1;
            }
            i
        };
        let mut members: Vec<Vec<usize>> = Vec::new();
        for (b, &size) in sizes.iter().enumerate() {
            let c = class(size);
            if members.len() <= c {
                members.resize(c + 1, Vec::new());
            }
            members[c].push(b);
        }
        members.retain(|m| !m.is_empty());
        let widths: Vec<usize> = members.iter().map(|m| m.iter().map(|&b| sizes[b]).max().unwrap_or(1).max(MIN_GROUP_WIDTH)).collect();
        let grouped: usize = members.iter().zip(&widths).map(|(m, w)| m.len() * w * w).sum();
        if members.len() < 2 || 4 * grouped > 3 * sizes.len() * width * width {
            return None;
        }
        let ints = |v: Vec<i64>| index_tensor(v, device);
        let mut order = vec![0i64; sizes.len()];
        let mut position = 0;
        let groups = members
            .iter()
            .zip(&widths)
            .map(|(m, &w)| {
                let mut pad = vec![rows as i64; m.len() * w];
                for (i, &b) in m.iter().enumerate() {
                    order[b] = position;
                    position += 1;
                    for (j, r) in (starts[b]..starts[b + 1]).enumerate() {
                        pad[i * w + j] = r as i64;
                    }
                }
                BlockGroup { members: m.clone(), blocks: m.len(), width: w, pad_index: ints(pad) }
            })
            .collect();
        Some(BlockGroups { groups, order: ints(order) })
    }
}

/// A batch's features in the layout a client's input takes (sparse for bag-of-words
/// features), with what the per-node products need of a sparse one.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per batch
enum BatchFeatures {
    Dense(Tensor<2>),
    /// The input's non-zeros serve Aᵀ·M too (read by column); `gram`: the block Gram
    /// matrices of the rows, computed on the host from the non-zeros. The layer-0
    /// products then cost per non-zero rather than per dense entry (Cora: 1.3 % of them).
    Sparse(SparseBatch),
}

#[derive(Debug, Clone)]
struct SparseBatch {
    input: NodeInput,
    /// The rows on the host, for [`PerNode::running_sum_norms`].
    host: crate::data::features::CsrMatrix,
    gram: HostGrams,
}

/// Feature Gram matrices of computation graphs kept across batches (DP-GNN draws each
/// training node's graph, over the same features, in step after step): a block's is
/// computed once, then copied. Dropped whole when the features change: the owner calls
/// [`of`](FeatureGrams::of) wherever they may have (DP-GNN: at every round's training),
/// which compares a fingerprint of their values (a defense that re-randomised them
/// would otherwise see stale products). At most [`FeatureGrams::MAX_BYTES`] kept.
#[derive(Debug, Default)]
pub struct FeatureGrams {
    fingerprint: Option<u64>,
    blocks: std::collections::HashMap<usize, Box<[f32]>>,
    bytes: usize,
}

impl FeatureGrams {
    /// Past this, blocks are computed every time (their values are the same either way).
    const MAX_BYTES: usize = 256 << 20;

    /// Keep the blocks if `features` are those they were computed from, else drop them.
    pub fn of(&mut self, features: &Features) {
        let fingerprint = features_fingerprint(features);
        if self.fingerprint != Some(fingerprint) {
            *self = FeatureGrams { fingerprint: Some(fingerprint), ..FeatureGrams::default() };
        }
    }

    fn keep(&mut self, key: usize, block: &[f32]) {
        let bytes = std::mem::size_of_val(block);
        if self.bytes + bytes <= Self::MAX_BYTES {
            self.bytes += bytes;
            self.blocks.insert(key, block.into());
        }
    }

    /// Blocks kept.
    pub fn len(&self) -> usize {
        self.blocks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.blocks.is_empty()
    }
}

/// A 64-bit digest of every stored value and index of `features` (FNV-1a over 32-bit
/// words): not cryptographic, only to notice that a client's features changed.
fn features_fingerprint(features: &Features) -> u64 {
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut word = |w: u32| h = (h ^ u64::from(w)).wrapping_mul(PRIME);
    word(features.rows() as u32);
    word(features.cols() as u32);
    let (csr, dense) = match features {
        Features::Sparse(m) => (Some(m), None),
        Features::Dense(m) => (None, Some(m)),
        Features::Shifted(m) => {
            word(m.shift.to_bits());
            (Some(&m.centered), None)
        }
    };
    if let Some(m) = csr {
        m.indptr.iter().for_each(|&p| word(p as u32));
        m.indices.iter().for_each(|&c| word(c));
        m.values.iter().for_each(|v| word(v.to_bits()));
    }
    if let Some(m) = dense {
        m.data.iter().for_each(|v| word(v.to_bits()));
    }
    h
}

/// Block Gram matrices on the host: block b's entry (i, j) at `at[b].0 + i·at[b].1 + j`
/// for i, j below the block's rows (a block's matrix may be stored wider, zero-padded).
#[derive(Debug, Clone)]
struct HostGrams {
    values: Vec<f32>,
    at: Vec<(usize, usize)>,
}

impl HostGrams {
    /// Where each block's `k × k` matrix goes, one after another (blocks of `sizes`
    /// rows), and the values' length.
    fn unpadded(sizes: impl Iterator<Item = usize>) -> (Vec<(usize, usize)>, usize) {
        let mut end = 0;
        let at = sizes
            .map(|k| {
                end += k * k;
                (end - k * k, k)
            })
            .collect();
        (at, end)
    }

    fn entry(&self, b: usize, i: usize, j: usize) -> f32 {
        let (offset, width) = self.at[b];
        self.values[offset + i * width + j]
    }

    /// The `[B, S, S]` layout, zero past each block's `rows[b]`.
    fn padded(&self, rows: &[usize], s: usize, device: &Device) -> Tensor<3> {
        let mut out = vec![0f32; rows.len() * s * s];
        for (b, &k) in rows.iter().enumerate() {
            for i in 0..k {
                for j in 0..k {
                    out[b * s * s + i * s + j] = self.entry(b, i, j);
                }
            }
        }
        Tensor::from_data(TensorData::new(out, [rows.len(), s, s]), device)
    }
}

impl NodeBatch {
    /// The features as a model's input.
    pub fn input(&self) -> NodeInput {
        match &self.features {
            BatchFeatures::Dense(x) => NodeInput::Dense(x.clone()),
            BatchFeatures::Sparse(b) => b.input.clone(),
        }
    }

    /// `graphs[b]` with its root labelled `labels[b]`; features of client nodes from
    /// `features`.
    pub fn new<G: std::borrow::Borrow<ComputationGraph>>(
        graphs: &[G],
        features: &Features,
        labels: &[u32],
        device: &Device,
    ) -> Result<NodeBatch> {
        Self::with_grams(graphs, features, labels, None, device)
    }

    /// [`new`](Self::new), taking the blocks' feature Gram matrices from `grams` (keys:
    /// one per graph, the same key for the same graph over the same features) and
    /// keeping there those it computes.
    pub fn with_grams<G: std::borrow::Borrow<ComputationGraph>>(
        graphs: &[G],
        features: &Features,
        labels: &[u32],
        grams: Option<(&mut FeatureGrams, &[usize])>,
        device: &Device,
    ) -> Result<NodeBatch> {
        if let Some((cache, keys)) = grams.as_ref() {
            if keys.len() != graphs.len() {
                return Err(Error::Other(format!(
                    "a node batch needs one Gram key per graph, got {} graphs and {} keys",
                    graphs.len(),
                    keys.len()
                )));
            }
            if cache.fingerprint.is_none() {
                return Err(Error::Other("feature Gram matrices kept for no features: call FeatureGrams::of first".into()));
            }
        }
        let graphs: Vec<&ComputationGraph> = graphs.iter().map(|g| g.borrow()).collect();
        let graphs = graphs.as_slice();
        if graphs.is_empty() || graphs.len() != labels.len() {
            return Err(Error::Other(format!(
                "a node batch needs one label per graph, got {} graphs and {} labels",
                graphs.len(),
                labels.len()
            )));
        }
        let (mut nodes, mut senders, mut roots, mut row_block) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for (b, g) in graphs.iter().enumerate() {
            let off = nodes.len() as u32;
            roots.push(off as i64);
            nodes.extend(&g.nodes);
            senders.extend(g.senders.iter().map(|s| s.iter().map(|&x| x + off).collect::<Vec<u32>>()));
            row_block.extend(std::iter::repeat_n(b as i64, g.nodes.len()));
        }
        let rows = nodes.len();
        let width = graphs.iter().map(|g| g.nodes.len()).max().unwrap_or(1);
        let mut pad = vec![rows as i64; graphs.len() * width];
        let mut r = 0;
        for (b, g) in graphs.iter().enumerate() {
            for i in 0..g.nodes.len() {
                pad[b * width + i] = r as i64;
                r += 1;
            }
        }
        let selected = features.select_rows(&nodes);
        let ints = |v: Vec<i64>| index_tensor(v, device);
        let options = TensorCreationOptions::new(device.clone());
        let features = match &selected {
            Features::Sparse(m) if InputLayout::auto(&selected, 1) == InputLayout::Sparse => {
                let input = NodeInput::with_layout(&selected, InputLayout::Sparse, options);
                BatchFeatures::Sparse(SparseBatch { input, gram: Self::host_gram(m, graphs, grams), host: m.clone() })
            }
            _ => match NodeInput::with_layout(&selected, InputLayout::Dense, options) {
                NodeInput::Dense(x) => BatchFeatures::Dense(x),
                NodeInput::Sparse(_) | NodeInput::Smoothed { .. } => unreachable!("the dense layout gives a dense input"),
            },
        };
        let block_start: Vec<usize> = std::iter::once(0)
            .chain(graphs.iter().scan(0, |end, g| {
                *end += g.nodes.len();
                Some(*end)
            }))
            .collect();
        Ok(NodeBatch {
            groups: BlockGroups::of(&block_start, rows, device),
            graph: GraphTensors::from_senders(rows, |v| &senders[v], device)?,
            features,
            device: device.clone(),
            roots: ints(roots),
            labels: ints(labels.iter().map(|&y| i64::from(y)).collect()),
            pad_index: ints(pad),
            row_block: ints(row_block),
            rows,
            blocks: graphs.len(),
            width,
            block_start,
        })
    }

    /// The Gram matrix of each block's rows of `m` (blocks in batch order, each its own
    /// size), summed in f64 over each pair's common non-zeros; from `grams` where it
    /// holds a block's key.
    fn host_gram(
        m: &crate::data::features::CsrMatrix,
        graphs: &[&ComputationGraph],
        mut grams: Option<(&mut FeatureGrams, &[usize])>,
    ) -> HostGrams {
        let (at, end) = HostGrams::unpadded(graphs.iter().map(|g| g.nodes.len()));
        let mut gram = vec![0f32; end];
        let mut dense = vec![0f64; m.cols];
        let mut first = 0;
        for (b, (g, &(offset, width))) in graphs.iter().zip(&at).enumerate() {
            let k = g.nodes.len();
            let block = &mut gram[offset..offset + k * k];
            let key = grams.as_ref().map(|(_, keys)| keys[b]);
            if let (Some((cache, _)), Some(key)) = (grams.as_ref(), key)
                && let Some(kept) = cache.blocks.get(&key)
            {
                block.copy_from_slice(kept);
                first += k;
                continue;
            }
            for i in 0..k {
                let (idx, val) = m.row(first + i);
                for (&c, &v) in idx.iter().zip(val) {
                    dense[c as usize] += f64::from(v);
                }
                for j in 0..=i {
                    let (jdx, jval) = m.row(first + j);
                    let dot: f64 = jdx.iter().zip(jval).map(|(&c, &v)| dense[c as usize] * f64::from(v)).sum();
                    block[i * width + j] = dot as f32;
                    block[j * width + i] = dot as f32;
                }
                for &c in idx {
                    dense[c as usize] = 0.0;
                }
            }
            if let (Some((cache, _)), Some(key)) = (grams.as_mut(), key) {
                cache.keep(key, block);
            }
            first += k;
        }
        HostGrams { values: gram, at }
    }

    pub fn len(&self) -> usize {
        self.blocks
    }

    pub fn is_empty(&self) -> bool {
        self.blocks == 0
    }

    /// `[B, S, S]`: per block, the Gram matrix of its rows of `t` (`[R, c]`), padded
    /// with zeros; computed by groups of blocks of similar size where that gives the same
    /// numbers ([`BlockGroups`]).
    fn block_gram(&self, t: Tensor<2>) -> Tensor<3> {
        let c = t.dims()[1];
        let rows = with_zero_row(t);
        let gram = |pad_index: &Tensor<1, Int>, blocks: usize, width: usize| padded_gram(&rows, pad_index, blocks, width);
        match &self.groups {
            Some(g) if c <= MAX_GROUPED_COLUMNS => {
                let s = self.width;
                let parts = g
                    .groups
                    .iter()
                    .map(|grp| {
                        let (b, w) = (grp.blocks, grp.width);
                        let k = gram(&grp.pad_index, b, w);
                        match w < s {
                            true => {
                                let k = Tensor::cat(vec![k, Tensor::zeros([b, w, s - w], &rows.device())], 2);
                                Tensor::cat(vec![k, Tensor::zeros([b, s - w, s], &rows.device())], 1)
                            }
                            false => k,
                        }
                    })
                    .collect();
                Tensor::cat(parts, 0).select(0, g.order.clone())
            }
            _ => gram(&self.pad_index, self.blocks, self.width),
        }
    }

    /// [`block_gram`](Self::block_gram) of the features.
    fn features_gram(&self) -> Tensor<3> {
        match &self.features {
            BatchFeatures::Sparse(b) => b.gram.padded(&self.block_rows(), self.width, &self.device),
            BatchFeatures::Dense(x) => self.block_gram(x.clone()),
        }
    }

    /// Rows of each block.
    fn block_rows(&self) -> Vec<usize> {
        self.block_start.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// The entries of [`block_gram`](Self::block_gram), the same products of the same
    /// padded rows, on the host and each group at its own width: never the `[B, S, S]`
    /// layout, whose padding (and the copies that build it) cost more than the products.
    fn host_block_grams(&self, t: Tensor<2>) -> HostGrams {
        let c = t.dims()[1];
        // Every product gemm would run here takes its vertical kernel in one block of k:
        // the same chains, block by block on the host, unpadded.
        let narrowest = self
            .groups
            .as_ref()
            .filter(|_| c <= MAX_GROUPED_COLUMNS)
            .map_or(self.width, |g| g.groups.iter().map(|g| g.width).min().unwrap_or(0));
        // Only where gemm's kernels fuse their multiply-adds (x86-64 with FMA and AVX2 or
        // AVX-512F): the chains' portable path is as exact, but gemm without FMA is not.
        // Capped to the portable set, the padded products run as on a host without FMA
        // (the chains' portable path calls libm's `fmaf`, ≈ 40× slower: not what such a
        // host runs); here gemm fuses, so their values are the chains' all the same.
        let isa = Isa::current();
        if (FMA_CHAIN_MIN_COLUMNS..=MAX_GROUPED_COLUMNS).contains(&c)
            && narrowest * narrowest > GEMM_HORIZONTAL_MAX_ENTRIES
            && isa != Isa::Portable
        {
            return fma_chain_grams(isa, &host(&t), &self.block_rows(), c);
        }
        let rows = with_zero_row(t);
        let host = |k: Tensor<3>| k.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 after convert");
        match &self.groups {
            Some(g) if c <= MAX_GROUPED_COLUMNS => {
                let mut values = Vec::new();
                let mut at = vec![(0, 0); self.blocks];
                for grp in &g.groups {
                    let first = values.len();
                    values.extend(host(padded_gram(&rows, &grp.pad_index, grp.blocks, grp.width)));
                    for (p, &b) in grp.members.iter().enumerate() {
                        at[b] = (first + p * grp.width * grp.width, grp.width);
                    }
                }
                HostGrams { values, at }
            }
            _ => {
                let s = self.width;
                let values = host(padded_gram(&rows, &self.pad_index, self.blocks, s));
                HostGrams { values, at: (0..self.blocks).map(|b| (b * s * s, s)).collect() }
            }
        }
    }

    /// [`host_block_grams`](Self::host_block_grams) of a column of ones (a bias's input):
    /// 1 in every block's rows, as gemm computes it (1·1, exact).
    fn ones_grams(&self) -> HostGrams {
        let (at, end) = HostGrams::unpadded(self.block_rows().into_iter());
        HostGrams { values: vec![1.0; end], at }
    }

    /// [`host_block_grams`](Self::host_block_grams) of the features.
    fn features_host_grams(&self) -> HostGrams {
        match &self.features {
            BatchFeatures::Sparse(b) => b.gram.clone(),
            BatchFeatures::Dense(x) => self.host_block_grams(x.clone()),
        }
    }

    /// Aᵀ·`m` for the features A (`m`: `[R, c]` → `[d, c]`).
    fn features_transposed_matmul(&self, m: Tensor<2>) -> Tensor<2> {
        match &self.features {
            BatchFeatures::Sparse(b) => b.input.transposed_matmul(m),
            BatchFeatures::Dense(x) => x.clone().transpose().matmul(m),
        }
    }

    /// The batch as the training loop's [`ClientTensors`]: the roots are the train nodes,
    /// so any [`Loss`] that averages per-node terms gives the batch's mean loss.
    fn as_client(&self, classes: usize, label_keep: f64) -> ClientTensors {
        let empty = NodeSet { index: None, len: 0 };
        ClientTensors {
            graph: self.graph.clone(),
            input: self.input(),
            train: NodeSet { index: Some((self.roots.clone(), self.labels.clone())), len: self.blocks },
            val: empty.clone(),
            test: empty.clone(),
            classes,
            label_keep,
            link: None,
        }
    }
}

/// One parameter tensor used as a row-wise linear map: its gradient from block b is
/// A_bᵀ·G_b, G read off `probe` (rows `rows` of it).
struct LinearUse {
    param: ParamId,
    /// The parameter's dimensions (`[in, out]`, or `[out]` for a bias).
    dims: Vec<usize>,
    /// The layer's input A (`None`: a bias, A = 1).
    input: Option<LayerInput>,
    /// Which layer's input `input` is (SAGE's two weights share one): Gram matrices are
    /// computed once per key.
    key: Option<usize>,
    probe: Tensor<2>,
    /// (first row, rows) of the probe that belong to this parameter.
    rows: (usize, usize),
}

/// What a weight multiplies: the batch's features (layer 0), or a hidden layer's `[R, in]`
/// values.
// A few per batch, moved once: boxing the tensor would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum LayerInput {
    Features,
    Hidden(Tensor<2>),
}

/// Whether per-node gradients of `model` can be computed here: GCN or GraphSAGE layers
/// (GAT's attention vectors are not row-wise linear maps), no KProp.
pub fn check_model(model: &NodeClassifier) -> Result<()> {
    if model.convs.iter().any(|c| matches!(c, Conv::Gat(_))) {
        return Err(Error::param("model.arch", "per-node gradients (dp-gnn) support gcn and sage, not gat"));
    }
    if model.kprop_steps > 0 {
        return Err(Error::param("model.kprop_steps", "per-node gradients (dp-gnn) need kprop_steps: 0"));
    }
    Ok(())
}

/// Per-node gradients of a batch, as their parts.
pub struct PerNode {
    uses: Vec<LinearUse>,
    /// Per use: G (`[R, out]`).
    grads: Vec<Tensor<2>>,
    /// Mean loss over the batch's roots.
    pub loss: f64,
}

/// Forward `batch` through `model` (on an autodiff device) with probes on every linear
/// output, backward from the sum of the roots' losses under `loss`, and keep what
/// per-node gradients are made of. Dropout masks come from `rng` when given.
pub fn per_node(model: &NodeClassifier, batch: &NodeBatch, loss: &dyn Loss, label_keep: f64, mut rng: Option<&mut Rng>) -> Result<PerNode> {
    check_model(model)?;
    let model = model.clone().no_grad();
    let device = batch.device.clone().autodiff();
    let probe = |like: &Tensor<2>| Tensor::<2>::zeros(like.dims(), &device).require_grad();
    let r = batch.rows;
    let mut uses = Vec::new();
    let depth = model.convs.len();
    let mut x: Option<Tensor<2>> = None;
    for (i, conv) in model.convs.iter().enumerate() {
        let (mut h, a) = match x.take() {
            None => (conv.transform(&batch.input()), LayerInput::Features),
            Some(x) => {
                let a = LayerInput::Hidden(x.clone().inner());
                (conv.transform(&NodeInput::Dense(x)), a)
            }
        };
        let p = probe(&h);
        h = h + p.clone();
        match conv {
            Conv::Gcn(c) => uses.push(weight_use(&c.weight, (a, i), p, (0, r))),
            Conv::Sage(c) => {
                uses.push(weight_use(&c.w_root, (a.clone(), i), p.clone(), (0, r)));
                uses.push(weight_use(&c.w_nbr, (a, i), p, (r, r)));
            }
            Conv::Gat(_) => unreachable!("checked above"),
        }
        let mut out = conv.aggregate(h, &batch.graph, rng.as_deref_mut());
        let p = probe(&out);
        out = out + p.clone();
        match conv {
            Conv::Gcn(c) => uses.push(bias_use(&c.bias, p, r)),
            Conv::Sage(c) => uses.push(bias_use(&c.bias, p, r)),
            Conv::Gat(_) => unreachable!("checked above"),
        }
        if i + 1 < depth || model.head.is_some() {
            out = dropout(model.activation.apply(out), model.dropout, rng.as_deref_mut());
        }
        x = Some(out);
    }
    let x = x.expect("a classifier has at least one layer");
    let (logits, head_input) = match &model.head {
        Some(head) => {
            let a = LayerInput::Hidden(x.clone().inner());
            let mut logits = head.forward(x.clone());
            let p = probe(&logits);
            logits = logits + p.clone();
            uses.push(weight_use(&head.weight, (a, depth), p.clone(), (0, r)));
            if let Some(bias) = &head.bias {
                uses.push(bias_use(bias, p, r));
            }
            (logits, Some(x))
        }
        None => (x, None),
    };
    let classes = logits.dims()[1];
    let out = Output { logits, head_input };
    let mean = loss
        .loss(&out, &batch.as_client(classes, label_keep))
        .ok_or_else(|| Error::Other("per-node gradients of an empty batch".into()))?;
    let value = f64::from(mean.clone().into_scalar::<f32>());
    let grads = (mean * batch.blocks as f32).backward();
    let g = uses
        .iter()
        .map(|u| {
            let g = u.probe.grad(&grads).unwrap_or_else(|| Tensor::zeros(u.probe.dims(), &batch.device));
            g.narrow(0, u.rows.0, u.rows.1)
        })
        .collect();
    Ok(PerNode { uses, grads: g, loss: value })
}

/// gemm 0.19 multiplies m × n ≤ this many entries with its horizontal kernel (lanes
/// along k, then summed across): not the chains of [`fma_chain_gram`].
const GEMM_HORIZONTAL_MAX_ENTRIES: usize = 256;
/// Below this many columns gemm takes its `gevv` path (k ≤ 2).
const FMA_CHAIN_MIN_COLUMNS: usize = 3;

/// The Gram matrix of each consecutive block of `sizes` rows of `values` (`c` columns,
/// row-major) by [`fma_chain_gram`] on `path`, unpadded.
fn fma_chain_grams(path: Isa, values: &[f32], sizes: &[usize], c: usize) -> HostGrams {
    let (at, end) = HostGrams::unpadded(sizes.iter().copied());
    let mut out = vec![0f32; end];
    let mut scratch = Vec::new();
    let mut first = 0;
    for &(offset, k) in &at {
        fma_chain_gram(path, &values[first * c..(first + k) * c], k, c, &mut out[offset..offset + k * k], &mut scratch);
        first += k;
    }
    HostGrams { values: out, at }
}

/// [`fma_chain_grams`] for `fgl-sim bench dp-gnn`: their total, so that the work cannot
/// be dropped.
pub(crate) fn gram_chains_on(path: Isa, values: &[f32], sizes: &[usize], c: usize) -> f32 {
    fma_chain_grams(path, values, sizes, c).values.iter().sum()
}

/// The Gram matrix of `k` rows of `c` values (`rows`, row-major) into `out` (`k × k`):
/// entry (i, j) a chain of fused multiply-adds over the columns in order, from +0 — what
/// gemm 0.19's vertical microkernels compute for a product of more than
/// [`GEMM_HORIZONTAL_MAX_ENTRIES`] entries and 3 to 512 columns (one block of k, stored
/// as 1·acc), so that a block's Gram matrix needs neither padding nor a batched product.
/// Sixteen entries of a row at a time, four rows at once, along a transposed copy; the
/// lower triangle only, mirrored (a·b = b·a inside a fused multiply-add too), on `path`
/// or the most this CPU has below it.
fn fma_chain_gram(path: Isa, rows: &[f32], k: usize, c: usize, out: &mut [f32], scratch: &mut Vec<f32>) {
    const L: usize = 16;
    let kp = k.div_ceil(L) * L;
    scratch.clear();
    scratch.resize(c * kp, 0.0);
    for (i, row) in rows.chunks_exact(c).enumerate() {
        for (col, &x) in row.iter().enumerate() {
            scratch[col * kp + i] = x;
        }
    }
    #[inline(always)]
    fn body(rows: &[f32], k: usize, c: usize, kp: usize, t: &[f32], out: &mut [f32]) {
        let mut i = 0;
        while i < k {
            let r = (k - i).min(4);
            // Only chunks reaching the lower triangle: the rest mirrors it below.
            for jb in (0..i + r).step_by(L) {
                let mut acc = [[0f32; L]; 4];
                for col in 0..c {
                    let tj: &[f32; L] = t[col * kp + jb..col * kp + jb + L].try_into().expect("L values");
                    for (q, acc) in acc.iter_mut().enumerate().take(r) {
                        let a = rows[(i + q) * c + col];
                        for l in 0..L {
                            acc[l] = a.mul_add(tj[l], acc[l]);
                        }
                    }
                }
                for (q, acc) in acc.iter().enumerate().take(r) {
                    let n = (k - jb).min(L);
                    out[(i + q) * k + jb..(i + q) * k + jb + n].copy_from_slice(&acc[..n]);
                }
            }
            i += r;
        }
        for i in 0..k {
            for j in i + 1..k {
                out[i * k + j] = out[j * k + i];
            }
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,fma")]
        unsafe fn avx512(rows: &[f32], k: usize, c: usize, kp: usize, t: &[f32], out: &mut [f32]) {
            body(rows, k, c, kp, t, out)
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2(rows: &[f32], k: usize, c: usize, kp: usize, t: &[f32], out: &mut [f32]) {
            body(rows, k, c, kp, t, out)
        }
        match path.min(Isa::detected()) {
            // SAFETY: the CPU has AVX-512F and FMA (part of the set it has).
            Isa::Avx512 => return unsafe { avx512(rows, k, c, kp, scratch, out) },
            // SAFETY: the CPU has AVX2 and FMA (as above).
            Isa::Avx2 => return unsafe { avx2(rows, k, c, kp, scratch, out) },
            Isa::Portable => {}
        }
    }
    let _ = path;
    body(rows, k, c, kp, scratch, out)
}

/// Σ_{i,j} ka_b(i, j)·kg_b(i, j) per block b, as burn-flex computes
/// `(ka * kg).sum_dim(2).sum_dim(1)` on the `[B, S, S]` layout (S: the batch's widest
/// block) in f32: each row of S products summed by its `sum_rows_f32`, then a block's
/// row sums added one after the other from 0 (its middle-axis reduction). Entries past a
/// block's rows are zero in that layout, which moves no sum but a zero's sign, so only a
/// block's own rows are summed, each over the fewest of its S entries that its sum's
/// steps read before they meet only zeros ([`padded_sum_len`]). `None` where an entry is
/// not finite (there the padding's 0·∞ would give NaN).
fn padded_square_norms(batch: &NodeBatch, ka: &HostGrams, kg: &HostGrams) -> Option<Vec<f32>> {
    if !all_finite(&ka.values) || !all_finite(&kg.values) {
        return None;
    }
    let (s, lanes) = (batch.width, flex_f32_lanes());
    let sizes = batch.block_rows();
    let lens: Vec<usize> = sizes.iter().map(|&k| padded_sum_len(k, s, lanes)).collect();
    let mut products = vec![0f32; sizes.iter().zip(&lens).map(|(k, len)| k * len).sum()];
    let mut row_lens = Vec::with_capacity(batch.rows);
    let mut at = 0;
    for (b, (&k, &len)) in sizes.iter().zip(&lens).enumerate() {
        let ((oa, wa), (og, wg)) = (ka.at[b], kg.at[b]);
        for i in 0..k {
            let (ra, rg) = (&ka.values[oa + i * wa..oa + i * wa + k], &kg.values[og + i * wg..og + i * wg + k]);
            for ((p, &x), &y) in products[at..at + k].iter_mut().zip(ra).zip(rg) {
                *p = x * y;
            }
            row_lens.push(len);
            at += len;
        }
    }
    let mut row_sums = vec![0f32; batch.rows];
    flex_sum_rows(&products, &row_lens, &mut row_sums);
    Some(
        (0..batch.blocks)
            .map(|b| {
                let mut sum = 0f32;
                for r in &row_sums[batch.block_start[b]..batch.block_start[b + 1]] {
                    sum += r;
                }
                sum
            })
            .collect(),
    )
}

/// Whether no value is infinite or NaN: an exponent test on every value without an
/// early exit, which the compiler vectorises (a short-circuiting `all` it does not).
fn all_finite(values: &[f32]) -> bool {
    const EXPONENT: u32 = 0x7f80_0000;
    !values.iter().fold(false, |bad, x| bad | (x.to_bits() & EXPONENT == EXPONENT))
}

/// How many of a row's `s` entries, of which only the first `k` may be non-zero,
/// [`flex_sum_body`] (vectors of `lanes`) must read to give the whole row's sum: its
/// eight-accumulator blocks and whole vectors past the last non-zero add only zeros
/// (which move no value, only a zero's sign), so a row is cut after the block or vector
/// holding entry `k − 1`, unless that entry lies in the scalar tail.
fn padded_sum_len(k: usize, s: usize, lanes: usize) -> usize {
    let stride = 8 * lanes;
    let blocks_end = s / stride * stride;
    if k <= blocks_end {
        return k.div_ceil(stride) * stride;
    }
    let vectors_end = blocks_end + (s - blocks_end) / lanes * lanes;
    if k <= vectors_end {
        return blocks_end + (k - blocks_end).div_ceil(lanes) * lanes;
    }
    s
}

/// The f32 lanes of the instruction set macerator picks here (and so burn-flex's sums).
#[macerator::with_simd]
fn flex_lanes<S: Simd>(_: ()) -> usize {
    f32::lanes::<S>()
}

fn flex_f32_lanes() -> usize {
    flex_lanes(())
}

/// burn-flex 0.22.1's `sum_rows_f32` (its `simd::kernels::sum_body`, which is private),
/// copied so that a row summed here gives its bits: eight vector accumulators over
/// blocks of eight vectors, combined pairwise, the remaining whole vectors, then the
/// lanes (macerator's `reduce_add`) plus the scalar tail. macerator picks the same
/// instruction set for both at run time. Here over rows of `row_lens` entries, one
/// after another in `src`.
#[macerator::with_simd]
fn flex_sum_rows<S: Simd>(src: &[f32], row_lens: &[usize], dst: &mut [f32]) {
    let mut at = 0;
    for (&len, d) in row_lens.iter().zip(dst.iter_mut()) {
        *d = flex_sum_body::<S>(&src[at..at + len]);
        at += len;
    }
}

#[inline(always)]
fn flex_sum_body<S: Simd>(mut xs: &[f32]) -> f32 {
    let lanes = f32::lanes::<S>();
    let stride = lanes * 8;
    let zero = 0f32.splat::<S>();
    let (mut s0, mut s1, mut s2, mut s3) = (zero, zero, zero, zero);
    let (mut s4, mut s5, mut s6, mut s7) = (zero, zero, zero, zero);
    while xs.len() >= stride {
        // SAFETY: the loop condition keeps all eight loads within `xs`.
        unsafe {
            let p = xs.as_ptr();
            s0 += vload_unaligned(p);
            s1 += vload_unaligned(p.add(lanes));
            s2 += vload_unaligned(p.add(lanes * 2));
            s3 += vload_unaligned(p.add(lanes * 3));
            s4 += vload_unaligned(p.add(lanes * 4));
            s5 += vload_unaligned(p.add(lanes * 5));
            s6 += vload_unaligned(p.add(lanes * 6));
            s7 += vload_unaligned(p.add(lanes * 7));
        }
        xs = &xs[stride..];
    }
    let mut sum = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
    while xs.len() >= lanes {
        // SAFETY: the loop condition keeps the load within `xs`.
        sum += unsafe { vload_unaligned(xs.as_ptr()) };
        xs = &xs[lanes..];
    }
    sum.reduce_add() + xs.iter().copied().sum::<f32>()
}

/// The value of `cache` under `key`, made by `make` the first time.
fn cached<T>(cache: &mut Vec<(Option<usize>, T)>, key: Option<usize>, make: impl FnOnce() -> T) -> &T {
    let i = match cache.iter().position(|(k, _)| *k == key) {
        Some(i) => i,
        None => {
            cache.push((key, make()));
            cache.len() - 1
        }
    };
    &cache[i].1
}

/// A `[R, c]` tensor's values on the host, row-major.
fn host(t: &Tensor<2>) -> Vec<f32> {
    t.clone().into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 after convert")
}

/// The rows a weight multiplies, on the host.
enum RowsOf<'a> {
    /// A bias: every row is the scalar 1.
    Ones,
    Dense(usize, Vec<f32>),
    Sparse(&'a crate::data::features::CsrMatrix),
}

impl RowsOf<'_> {
    /// `f(column, value)` for the non-zeros of row `r`.
    fn for_each(&self, r: usize, mut f: impl FnMut(usize, f64)) {
        match self {
            RowsOf::Ones => f(0, 1.0),
            RowsOf::Dense(w, v) => {
                v[r * w..(r + 1) * w].iter().enumerate().filter(|(_, x)| **x != 0.0).for_each(|(k, &x)| f(k, f64::from(x)))
            }
            RowsOf::Sparse(m) => {
                let (idx, val) = m.row(r);
                idx.iter().zip(val).for_each(|(&k, &x)| f(k as usize, f64::from(x)));
            }
        }
    }
}

/// `input`: the layer input's values and the layer's index.
fn weight_use(w: &Param<Tensor<2>>, input: (LayerInput, usize), probe: Tensor<2>, rows: (usize, usize)) -> LinearUse {
    LinearUse { param: w.id, dims: w.shape().dims::<2>().to_vec(), input: Some(input.0), key: Some(input.1), probe, rows }
}

fn bias_use(b: &Param<Tensor<1>>, probe: Tensor<2>, r: usize) -> LinearUse {
    LinearUse { param: b.id, dims: b.shape().dims::<1>().to_vec(), input: None, key: None, probe, rows: (0, r) }
}

impl PerNode {
    /// Number of parameter tensors (the model's, in its order of use).
    pub fn tensors(&self) -> usize {
        self.uses.len()
    }

    /// `[tensor][node]`: the L2 norm of each node's gradient of each parameter tensor.
    ///
    /// ‖A_bᵀG_b‖² is the sum of the element-wise product of two `[B, S, S]` block Gram
    /// matrices, summed over the last axis and then the middle one. On burn-flex in f32
    /// the Gram matrices come to the host each group at its own width and the sums are
    /// taken there in burn-flex's order ([`padded_square_norms`]): the same bits without
    /// the padded layout. Elsewhere (and should an entry not be finite) on the device.
    pub fn norms(&self, batch: &NodeBatch) -> Vec<Vec<f64>> {
        let on_host = Strategy::for_device(&batch.device) == Strategy::Fused && self.grads.iter().all(|g| g.dtype() == DType::F32);
        // The layer inputs' Gram matrices, once per input (SAGE's two weights share one).
        let mut host_cache: Vec<(Option<usize>, HostGrams)> = Vec::new();
        let mut device_cache: Vec<(Option<usize>, Tensor<3>)> = Vec::new();
        let mut out = Vec::with_capacity(self.uses.len());
        for (u, g) in self.uses.iter().zip(&self.grads) {
            let on_host = on_host.then(|| {
                let ka = cached(&mut host_cache, u.key, || match &u.input {
                    None => batch.ones_grams(),
                    Some(LayerInput::Hidden(a)) => batch.host_block_grams(a.clone()),
                    Some(LayerInput::Features) => batch.features_host_grams(),
                });
                padded_square_norms(batch, ka, &batch.host_block_grams(g.clone()))
            });
            let sq = match on_host.flatten() {
                Some(sq) => sq.into_iter().map(f64::from).collect(),
                None => {
                    let ka = cached(&mut device_cache, u.key, || match &u.input {
                        None => batch.block_gram(Tensor::<2>::ones([batch.rows, 1], &batch.device)),
                        Some(LayerInput::Hidden(a)) => batch.block_gram(a.clone()),
                        Some(LayerInput::Features) => batch.features_gram(),
                    });
                    let sq = (ka.clone() * batch.block_gram(g.clone())).sum_dim(2).sum_dim(1).reshape([batch.blocks]);
                    sq.into_data().convert::<f64>().try_into_vec::<f64>().expect("f64 after convert")
                }
            };
            out.push(sq.into_iter().map(|s: f64| s.max(0.0).sqrt()).collect());
        }
        out
    }

    /// Σ_b c[t][b]·(node b's gradient of tensor t), per tensor, as optimizer gradients;
    /// `noise[t]` (same dimensions as the tensor, or `None`) is added before `scale`.
    pub fn weighted_sum(&self, batch: &NodeBatch, c: &[Vec<f64>], noise: Vec<Option<Tensor<2>>>, scale: f64) -> GradientsParams {
        let sums = self
            .weighted_sums(batch, c)
            .into_iter()
            .zip(noise)
            .map(|(sum, z)| match z {
                Some(z) => (sum + z) * scale as f32,
                None => sum * scale as f32,
            })
            .collect();
        self.gradients(sums)
    }

    /// Σ_b c[t][b]·(node b's gradient of tensor t), per tensor, in the dimensions of
    /// [`noise_dims`](Self::noise_dims).
    pub fn weighted_sums(&self, batch: &NodeBatch, c: &[Vec<f64>]) -> Vec<Tensor<2>> {
        let device = &batch.device;
        self.uses
            .iter()
            .zip(&self.grads)
            .zip(c)
            .map(|((u, g), ct)| {
                let per_block = Tensor::<1>::from_data(TensorData::new(ct.iter().map(|&x| x as f32).collect(), [ct.len()]), device);
                let scaled = g.clone() * per_block.select(0, batch.row_block.clone()).unsqueeze_dim::<2>(1);
                match &u.input {
                    Some(LayerInput::Hidden(a)) => a.clone().transpose().matmul(scaled),
                    Some(LayerInput::Features) => batch.features_transposed_matmul(scaled),
                    None => scaled.sum_dim(0),
                }
            })
            .collect()
    }

    /// Per-tensor values (in the dimensions of [`noise_dims`](Self::noise_dims)) as the
    /// optimizer's gradients.
    pub fn gradients(&self, sums: Vec<Tensor<2>>) -> GradientsParams {
        let mut grads = GradientsParams::new();
        for (u, sum) in self.uses.iter().zip(sums) {
            match u.dims.len() {
                1 => grads.register::<1>(u.param, sum.reshape([u.dims[0]])),
                _ => grads.register::<2>(u.param, sum),
            }
        }
        grads
    }

    /// ‖Σ_{j ≤ i} g_j‖ for every block i in batch order, g_j node j's gradient of all
    /// tensors together: the norms a training loop clips when it never zeroes the
    /// gradient between per-node backward passes (the EC-LDA code's DP training, whose
    /// "per-node" clip acts on the running sum). Exact, in f64 on the host: the running
    /// sum P is kept per tensor and each block's A_bᵀG_b added to it, with ‖P‖² updated
    /// over the entries it touches (sparse features touch few).
    pub fn running_sum_norms(&self, batch: &NodeBatch) -> Vec<f64> {
        let mut sq = vec![0f64; batch.blocks];
        for (u, g) in self.uses.iter().zip(&self.grads) {
            let out = g.dims()[1];
            let g = host(g);
            let dense_rows = |t: &Tensor<2>| (t.dims()[1], host(t));
            let input = match &u.input {
                None => RowsOf::Ones,
                Some(LayerInput::Hidden(a)) => {
                    let (w, v) = dense_rows(a);
                    RowsOf::Dense(w, v)
                }
                Some(LayerInput::Features) => match &batch.features {
                    BatchFeatures::Sparse(b) => RowsOf::Sparse(&b.host),
                    BatchFeatures::Dense(x) => {
                        let (w, v) = dense_rows(x);
                        RowsOf::Dense(w, v)
                    }
                },
            };
            let in_dim = match &input {
                RowsOf::Ones => 1,
                RowsOf::Dense(w, _) => *w,
                RowsOf::Sparse(m) => m.cols,
            };
            let (mut p, mut delta) = (vec![0f64; in_dim * out], vec![0f64; in_dim * out]);
            let (mut touched, mut marked) = (Vec::new(), vec![false; in_dim]);
            let mut norm2 = 0f64;
            for (b, total) in sq.iter_mut().enumerate() {
                for r in batch.block_start[b]..batch.block_start[b + 1] {
                    let gr = &g[r * out..(r + 1) * out];
                    input.for_each(r, |k, v| {
                        if !marked[k] {
                            marked[k] = true;
                            touched.push(k);
                        }
                        for (d, &x) in delta[k * out..(k + 1) * out].iter_mut().zip(gr) {
                            *d += v * f64::from(x);
                        }
                    });
                }
                for &k in &touched {
                    for (pk, dk) in p[k * out..(k + 1) * out].iter_mut().zip(&mut delta[k * out..(k + 1) * out]) {
                        norm2 += *dk * (2.0 * *pk + *dk);
                        *pk += *dk;
                        *dk = 0.0;
                    }
                    marked[k] = false;
                }
                touched.clear();
                *total += norm2;
            }
        }
        sq.into_iter().map(|s| s.max(0.0).sqrt()).collect()
    }

    /// Dimensions of each tensor's gradient as [`weighted_sum`](Self::weighted_sum)
    /// takes noise for it: `[in, out]`, or `[1, out]` for a bias.
    pub fn noise_dims(&self) -> Vec<[usize; 2]> {
        self.uses.iter().map(|u| if u.dims.len() == 1 { [1, u.dims[0]] } else { [u.dims[0], u.dims[1]] }).collect()
    }

    /// The parameter id of each tensor.
    pub fn params(&self) -> Vec<ParamId> {
        self.uses.iter().map(|u| u.param).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::DenseMatrix;
    use crate::model::{Arch, ModelConfig};
    use crate::train::CrossEntropy;

    fn senders_of_path(n: usize) -> Vec<Vec<u32>> {
        // Path 0 – 1 – … – n−1 plus the chord 0 – 3, both directions.
        let mut s: Vec<Vec<u32>> = (0..n)
            .map(|v| {
                let mut l = Vec::new();
                if v > 0 {
                    l.push(v as u32 - 1)
                }
                if v + 1 < n {
                    l.push(v as u32 + 1)
                }
                l
            })
            .collect();
        s[0].push(3);
        s[3].push(0);
        s
    }

    #[test]
    fn computation_graphs_reach_exactly_hops_upstream() {
        let s = senders_of_path(6);
        let g = ComputationGraph::of(0, 1, &s);
        assert_eq!(g.nodes, [0, 1, 3]);
        assert_eq!(g.senders, [vec![1, 2], vec![], vec![]]);
        let g = ComputationGraph::of(0, 2, &s);
        assert_eq!(g.nodes, [0, 1, 3, 2, 4]);
        // Node 1 (position 1) receives from 0 and 2 (positions 0, 3); node 3 from 2, 4 and 0.
        assert_eq!(g.senders, [vec![1, 2], vec![0, 3], vec![3, 4, 0], vec![], vec![]]);
    }

    fn features(n: usize, d: usize) -> Features {
        let data: Vec<f32> = (0..n * d).map(|i| ((i * 37 % 11) as f32 - 5.0) / 7.0).collect();
        Features::Dense(DenseMatrix { rows: n, cols: d, data })
    }

    /// Two or three non-zeros per row out of `d` (under the density at which a batch
    /// keeps its input sparse when `d` ≥ 30), some of them not 1.
    fn sparse_features(n: usize, d: usize) -> Features {
        let mut indptr = vec![0];
        let (mut indices, mut values) = (Vec::new(), Vec::new());
        for r in 0..n {
            let mut cols = vec![(r * 7) % d, (r * 13 + 5) % d];
            if r % 3 == 0 {
                cols.push((r * 5 + 2) % d);
            }
            cols.sort_unstable();
            cols.dedup();
            for c in cols {
                indices.push(c as u32);
                values.push(if c % 2 == 0 { 1.0 } else { 0.5 + r as f32 / 10.0 });
            }
            indptr.push(indices.len());
        }
        Features::Sparse(crate::data::features::CsrMatrix { rows: n, cols: d, indptr, indices, values })
    }

    /// The naive loop: node b alone in a batch, Burn's own gradient of each tensor.
    fn naive(model: &NodeClassifier, g: &ComputationGraph, f: &Features, y: u32, device: &Device) -> Vec<Vec<f32>> {
        let batch = NodeBatch::new(std::slice::from_ref(g), f, &[y], device).unwrap();
        let out = model.forward(&batch.input(), &batch.graph);
        let classes = out.logits.dims()[1];
        let loss = CrossEntropy.loss(&out, &batch.as_client(classes, 1.0)).unwrap();
        let grads = GradientsParams::from_grads(loss.backward(), model);
        let pn = per_node(model, &batch, &CrossEntropy, 1.0, None).unwrap();
        pn.params()
            .iter()
            .zip(pn.noise_dims())
            .map(|(&id, dims)| {
                let t = if dims[0] == 1 && grads.get::<1>(id).is_some() {
                    grads.get::<1>(id).unwrap().reshape([1, dims[1]])
                } else {
                    grads.get::<2>(id).unwrap()
                };
                t.into_data().convert::<f32>().try_into_vec::<f32>().unwrap()
            })
            .collect()
    }

    /// Block Gram matrices computed by groups of blocks of similar size are the padded
    /// product's numbers bit for bit (what keeps DP-GNN's results as they were), zero
    /// past each block's rows; a batch of small blocks stays one product.
    #[test]
    fn grouped_block_grams_equal_the_padded_ones_bit_for_bit() {
        let device = Device::flex();
        let n = 120;
        let batch = |sizes: &[usize]| {
            let graphs: Vec<ComputationGraph> = sizes
                .iter()
                .enumerate()
                .map(|(b, &k)| ComputationGraph { nodes: (0..k).map(|i| (b * 7 + i) % n).collect(), senders: vec![Vec::new(); k] })
                .collect();
            NodeBatch::new(&graphs, &features(n, 6), &vec![0; sizes.len()], &device).unwrap()
        };
        let sizes = [1, 3, 40, 18, 101, 5, 17, 70, 16, 2, 33, 9, 24, 26];
        let grouped = batch(&sizes);
        assert!(grouped.groups.as_ref().is_some_and(|g| g.groups.len() >= 4), "{:?}", grouped.groups);
        let mut padded = grouped.clone();
        padded.groups = None;
        let (r, s) = (grouped.rows, grouped.width);
        for c in [1, 2, 7, 64, 512, 513] {
            let data: Vec<f32> = (0..r * c).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 97.0).collect();
            let t = Tensor::<2>::from_data(TensorData::new(data, [r, c]), &device);
            let bits = |k: Tensor<3>| {
                k.into_data().convert::<f32>().try_into_vec::<f32>().unwrap().into_iter().map(f32::to_bits).collect::<Vec<_>>()
            };
            let (a, b) = (bits(grouped.block_gram(t.clone())), bits(padded.block_gram(t)));
            assert_eq!(a.len(), sizes.len() * s * s);
            // Inside the blocks the same bits; the padding is 0 in both (the padded
            // product's is −0 where a row's values are negative: x + (−0) = x + 0).
            let inside = |e: usize| e % (s * s) / s < sizes[e / (s * s)] && e % s < sizes[e / (s * s)];
            let differ = (0..a.len())
                .filter(|&e| if inside(e) { a[e] != b[e] } else { f32::from_bits(a[e]) != 0.0 || f32::from_bits(b[e]) != 0.0 })
                .count();
            assert_eq!(differ, 0, "{c} columns: {differ} entries differ");
        }
        assert!(batch(&[1, 3, 16, 9]).groups.is_none() && batch(&[20, 22, 24, 21]).groups.is_none());
    }

    /// Feature Gram matrices kept across batches are those a batch computes, whatever
    /// mix of kept and new blocks it holds (a root drawn twice included), and new
    /// features drop what was kept.
    #[test]
    fn kept_feature_grams_equal_computed_ones_until_the_features_change() {
        let device = Device::flex();
        let n = 90;
        let sizes = [5, 9, 1, 17, 30];
        let graphs_of = |roots: &[usize]| -> Vec<ComputationGraph> {
            roots
                .iter()
                .map(|&r| ComputationGraph {
                    nodes: (0..sizes[r]).map(|i| (r * 11 + i * 3) % n).collect(),
                    senders: vec![Vec::new(); sizes[r]],
                })
                .collect()
        };
        let grams = |batch: &NodeBatch| {
            assert!(matches!(batch.features, BatchFeatures::Sparse(_)), "the batch keeps its features sparse");
            batch.features_host_grams().values
        };
        let f = sparse_features(n, 40);
        let mut changed = f.clone();
        if let Features::Sparse(m) = &mut changed {
            m.values.iter_mut().for_each(|v| *v += 0.25);
        }
        let mut kept = FeatureGrams::default();
        kept.of(&f);
        for roots in [&[0, 1, 2][..], &[2, 3, 0, 0], &[4, 1]] {
            let (graphs, labels) = (graphs_of(roots), vec![0; roots.len()]);
            let plain = NodeBatch::new(&graphs, &f, &labels, &device).unwrap();
            let cached = NodeBatch::with_grams(&graphs, &f, &labels, Some((&mut kept, roots)), &device).unwrap();
            assert_eq!(grams(&plain), grams(&cached), "roots {roots:?}");
        }
        assert_eq!(kept.len(), 5);
        kept.of(&f);
        assert_eq!(kept.len(), 5, "the same features keep their blocks");
        kept.of(&changed);
        assert!(kept.is_empty(), "new features drop them");
        let (graphs, labels) = (graphs_of(&[3, 4]), vec![0; 2]);
        let plain = NodeBatch::new(&graphs, &changed, &labels, &device).unwrap();
        let cached = NodeBatch::with_grams(&graphs, &changed, &labels, Some((&mut kept, &[3, 4])), &device).unwrap();
        assert_eq!(grams(&plain), grams(&cached));
        assert_ne!(grams(&plain), grams(&NodeBatch::new(&graphs, &f, &labels, &device).unwrap()), "the change moves the Gram matrices");
    }

    /// A row cut to [`padded_sum_len`] entries sums to the bits of the whole zero-padded
    /// row, on every instruction set's lane count, wherever its last non-zero falls
    /// (eight-accumulator blocks, whole vectors, scalar tail).
    #[test]
    fn a_row_cut_after_its_last_non_zero_sums_alike() {
        let lanes = flex_f32_lanes();
        assert!(lanes.is_power_of_two() && lanes <= 16, "{lanes}");
        for s in 1..=300 {
            for k in 1..=s {
                let len = padded_sum_len(k, s, lanes);
                assert!((k..=s).contains(&len), "k {k}, s {s}: {len}");
                let mut row: Vec<f32> = (0..s).map(|i| if i < k { ((i * 7919 + s) % 1013) as f32 / 97.0 - 5.0 } else { 0.0 }).collect();
                row[k - 1] = 1.0e-3 * (s as f32);
                let mut sums = [0f32; 2];
                flex_sum_rows(&[&row[..], &row[..len]].concat(), &[s, len], &mut sums);
                assert_eq!(sums[0].to_bits(), sums[1].to_bits(), "k {k}, s {s}, cut at {len}");
            }
        }
    }

    /// The squared norms summed on the host equal burn-flex's sums over the padded
    /// `[B, S, S]` product bit for bit: grouped and ungrouped batches, narrow and wide
    /// Gram matrices, the sparse features' Gram matrices, and rows of 128 products or more
    /// (burn-flex's eight-accumulator loop on AVX-512; 64 on AVX2).
    #[test]
    fn host_norms_equal_the_padded_device_sums_bit_for_bit() {
        let device = Device::flex();
        let n = 300;
        let batch = |sizes: &[usize], f: &Features| {
            let graphs: Vec<ComputationGraph> = sizes
                .iter()
                .enumerate()
                .map(|(b, &k)| ComputationGraph { nodes: (0..k).map(|i| (b * 7 + i) % n).collect(), senders: vec![Vec::new(); k] })
                .collect();
            NodeBatch::new(&graphs, f, &vec![0; sizes.len()], &device).unwrap()
        };
        let on_device = |batch: &NodeBatch, ka: Tensor<3>, kg: Tensor<3>| {
            let sq = (ka * kg).sum_dim(2).sum_dim(1).reshape([batch.blocks]);
            sq.into_data().convert::<f32>().try_into_vec::<f32>().unwrap()
        };
        let tensor = |r: usize, c: usize, salt: usize| {
            let data: Vec<f32> = (0..r * c).map(|i| (((i + salt) * 7919 % 1013) as f32 - 506.0) / 97.0).collect();
            Tensor::<2>::from_data(TensorData::new(data, [r, c]), &device)
        };
        let sizes: [&[usize]; 4] =
            [&[1, 3, 40, 18, 101, 5, 17, 70, 16, 2, 33, 9, 24, 26], &[1, 3, 16, 9], &[20, 22, 24, 21], &[140, 3, 60, 131, 2, 129, 35]];
        for sizes in sizes {
            for f in [features(n, 6), sparse_features(n, 40)] {
                let batch = batch(sizes, &f);
                let r = batch.rows;
                for (ca, cg) in [(1, 1), (1, 7), (2, 2), (7, 64), (64, 7), (512, 16), (513, 3)] {
                    let (a, g) = (tensor(r, ca, 1), tensor(r, cg, 2));
                    let dev = on_device(&batch, batch.block_gram(a.clone()), batch.block_gram(g.clone()));
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    // On every instruction set (capped to the portable one, the wide Gram
                    // matrices are the padded products instead of the chains).
                    crate::simd::on_each_isa(|isa| {
                        let host =
                            padded_square_norms(&batch, &batch.host_block_grams(a.clone()), &batch.host_block_grams(g.clone())).unwrap();
                        assert_eq!(bits(&host), bits(&dev), "sizes {sizes:?}, {ca} and {cg} columns, {isa:?}");
                    });
                }
                let g = tensor(r, 16, 3);
                let host = padded_square_norms(&batch, &batch.features_host_grams(), &batch.host_block_grams(g.clone())).unwrap();
                let dev = on_device(&batch, batch.features_gram(), batch.block_gram(g.clone()));
                assert_eq!(host.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), dev.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
                let host = padded_square_norms(&batch, &batch.ones_grams(), &batch.host_block_grams(g.clone())).unwrap();
                let dev = on_device(&batch, batch.block_gram(Tensor::<2>::ones([r, 1], &device)), batch.block_gram(g));
                assert_eq!(host.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), dev.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
            }
        }
    }

    /// Block Gram matrices as fused multiply-add chains on the host are gemm's entries
    /// bit for bit, for widths 17 to 300 and 3 to 512 columns (grouped and not).
    #[test]
    fn fma_chain_grams_equal_gemms_bit_for_bit() {
        let best = Isa::detected();
        if best == Isa::Portable {
            return;
        }
        let device = Device::flex();
        let n = 400;
        let f = features(n, 6);
        for sizes in [&[300, 17, 64, 65, 129, 40][..], &[17, 18, 20], &[90, 91, 70, 33]] {
            let graphs: Vec<ComputationGraph> = sizes
                .iter()
                .enumerate()
                .map(|(b, &k)| ComputationGraph { nodes: (0..k).map(|i| (b * 7 + i) % n).collect(), senders: vec![Vec::new(); k] })
                .collect();
            let grouped = NodeBatch::new(&graphs, &f, &vec![0; sizes.len()], &device).unwrap();
            let mut padded = grouped.clone();
            padded.groups = None;
            for batch in [&grouped, &padded] {
                let r = batch.rows;
                for c in [3, 7, 16, 64, 100, 511, 512] {
                    let data: Vec<f32> = (0..r * c).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 97.0).collect();
                    let t = Tensor::<2>::from_data(TensorData::new(data.clone(), [r, c]), &device);
                    let chains = fma_chain_grams(best, &data, &batch.block_rows(), c);
                    let gemm = batch.block_gram(t).into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
                    let s = batch.width;
                    let mut differ = 0;
                    for (b, &k) in sizes.iter().enumerate() {
                        for i in 0..k {
                            for j in 0..k {
                                differ += usize::from(chains.entry(b, i, j).to_bits() != gemm[b * s * s + i * s + j].to_bits());
                            }
                        }
                    }
                    assert_eq!(differ, 0, "sizes {sizes:?}, {c} columns, grouped {}", batch.groups.is_some());
                }
            }
        }
    }

    /// Every instruction set the Gram chains are compiled for gives the same bits (this
    /// machine's best path is the one the other tests check against gemm).
    #[test]
    fn fma_chain_paths_agree_bit_for_bit() {
        let paths = Isa::on_this_cpu();
        let mut scratch = Vec::new();
        for (k, c) in [(1, 3), (5, 7), (17, 64), (40, 512), (33, 100)] {
            let rows: Vec<f32> = (0..k * c).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 97.0).collect();
            let outs: Vec<Vec<u32>> = paths
                .iter()
                .map(|&p| {
                    let mut out = vec![0f32; k * k];
                    fma_chain_gram(p, &rows, k, c, &mut out, &mut scratch);
                    out.into_iter().map(f32::to_bits).collect()
                })
                .collect();
            assert!(outs.windows(2).all(|w| w[0] == w[1]), "{k} rows, {c} columns: paths {paths:?} differ");
        }
        assert!(paths.len() > 1 || Isa::detected() == Isa::Portable);
    }

    /// Batched norms and clipped sums equal the naive per-node loop (GCN and SAGE, one and
    /// two layers, with and without a head; dense features, and sparse ones the batch
    /// keeps sparse), to f32 rounding.
    #[test]
    fn batched_per_node_gradients_equal_the_naive_loop() {
        let device = Device::flex().autodiff();
        let n = 9;
        let s = senders_of_path(n);
        let cases = [(Arch::Gcn, 2, true), (Arch::Sage, 2, false), (Arch::Gcn, 1, false), (Arch::Sage, 1, true)];
        for ((arch, layers, head), f) in cases.into_iter().flat_map(|c| [(c, features(n, 5)), (c, sparse_features(n, 40))]) {
            let d = f.cols();
            let cfg = ModelConfig { arch, layers, head, hidden: crate::model::Hidden::All(4), dropout: 0.0, ..ModelConfig::default() };
            let model = cfg.init(d, 3, 11, &device).unwrap();
            let roots = [0usize, 3, 4, 8];
            let labels = [2u32, 0, 1, 2];
            let graphs: Vec<ComputationGraph> = roots.iter().map(|&v| ComputationGraph::of(v, layers, &s)).collect();
            let batch = NodeBatch::new(&graphs, &f, &labels, &device).unwrap();
            assert_eq!(matches!(batch.features, BatchFeatures::Sparse(_)), d == 40, "dense features stay dense, sparse ones sparse");
            let pn = per_node(&model, &batch, &CrossEntropy, 1.0, None).unwrap();
            let norms = pn.norms(&batch);
            let each: Vec<Vec<Vec<f32>>> = graphs.iter().zip(labels).map(|(g, y)| naive(&model, g, &f, y, &device)).collect();
            // Norms.
            for t in 0..pn.tensors() {
                for b in 0..roots.len() {
                    let want = each[b][t].iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
                    assert!(
                        (norms[t][b] - want).abs() <= 1e-4 * (1.0 + want),
                        "{arch:?} L={layers} tensor {t} node {b}: {} vs {want}",
                        norms[t][b]
                    );
                }
            }
            // Clipped to 0.05 per tensor: Σ_b min(1, C/‖g_b‖)·g_b.
            let clip = 0.05;
            let c: Vec<Vec<f64>> = norms.iter().map(|nt| nt.iter().map(|&x| (clip / x).min(1.0)).collect()).collect();
            assert!(c.iter().flatten().any(|&x| x < 0.5), "the case clips some node's gradient hard");
            let sum = pn.weighted_sum(&batch, &c, vec![None; pn.tensors()], 1.0);
            for (t, (&id, dims)) in pn.params().iter().zip(pn.noise_dims()).enumerate() {
                let got = if dims[0] == 1 && sum.get::<1>(id).is_some() {
                    sum.get::<1>(id).unwrap().reshape([1, dims[1]])
                } else {
                    sum.get::<2>(id).unwrap()
                };
                let got = got.into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
                for (k, g) in got.iter().enumerate() {
                    let want: f64 = (0..roots.len()).map(|b| c[t][b] * f64::from(each[b][t][k])).sum();
                    assert!((f64::from(*g) - want).abs() <= 1e-5, "{arch:?} tensor {t} entry {k}: {g} vs {want}");
                }
                // The clipped sum of B nodes is at most B·C (what DP-GNN's sensitivity rests
                // on), read off the sum the code computed.
                let norm = got.iter().map(|&g| f64::from(g).powi(2)).sum::<f64>().sqrt();
                assert!(norm <= roots.len() as f64 * clip * (1.0 + 1e-5), "{arch:?} tensor {t}: ‖Σ‖ = {norm}");
            }
            // ‖g_0 + … + g_i‖ over all tensors, from the naive gradients.
            let running = pn.running_sum_norms(&batch);
            let mut sum: Vec<Vec<f64>> = each[0].iter().map(|t| vec![0.0; t.len()]).collect();
            for (b, got) in running.iter().enumerate() {
                for (acc, t) in sum.iter_mut().zip(&each[b]) {
                    acc.iter_mut().zip(t).for_each(|(a, &x)| *a += f64::from(x));
                }
                let want = sum.iter().flatten().map(|x| x * x).sum::<f64>().sqrt();
                assert!((got - want).abs() <= 1e-4 * (1.0 + want), "{arch:?} L={layers} running sum {b}: {got} vs {want}");
            }
        }
    }
}

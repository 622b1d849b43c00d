//! Fused sparse × dense products on the CPU backend (burn-flex), as a Burn backend
//! extension with hand-written backward passes.
//!
//! Composed from Burn ops, one propagation step is a gather into an `[E, F]` block, a
//! multiply and a scatter-add, and its backward is the same again: four passes over
//! `E·F` entries plus two allocations of that size. At EC-LDA's widths (F = 512) the
//! block alone is ~100 MB on Cora's input and falls out of cache. The fused kernels read
//! each source row where it lies and write each target row once:
//!
//! * [`GraphOps::spmm`] — `out[t] = Σ_{e into t} x[s_e]` (all weights one); its gradient
//!   is the same product over the transposed pattern.
//! * [`GraphOps::spmm_weighted`] — the same with per-edge, per-head weights from a tensor
//!   (a normalisation, feature values, GAT's attention); the weights' gradient, when
//!   they need one, is [`GraphOps::sddmm`].
//! * [`GraphOps::sddmm`] — `out[e, h] = ⟨a[t_e]_h, b[s_e]_h⟩`, per head.
//!
//! Every output row (or edge) is computed by one task, summing in edge order, so
//! results are bit-identical whatever the number of threads; work is split over the
//! current rayon pool by blocks of output rows. The sums run in the same order as
//! Burn's sequential `select_assign(Add)`, so the fused and composed forms agree
//! to the last bit in the forward pass.

use std::sync::Arc;

use burn::backend::autodiff::Autodiff;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, unary};
use burn::backend::flex::FlexTensor;
use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, Dispatch, Flex, TensorMetadata, backend_extension};
use burn::tensor::{DType, Tensor, TensorData};
use rayon::prelude::*;
use std::mem::MaybeUninit;

/// A sparse matrix's non-zero pattern, grouped both ways, on the host. Edge `e` goes from source row `src[e]` to target row `dst[e]`.
#[derive(Debug)]
pub struct Pattern {
    targets: usize,
    sources: usize,
    src: Vec<u32>,
    dst: Vec<u32>,
    /// Edges grouped by target, in edge order within a target.
    by_dst: Groups,
    /// Edges grouped by source, in edge order within a source.
    by_src: Groups,
}

#[derive(Debug)]
struct Groups {
    ptr: Vec<usize>,
    edge: Vec<u32>,
    /// `other[k]`: the row at the other end of edge `edge[k]` (the row a product over
    /// these groups reads), stored in group order so that kernels read it sequentially.
    other: Vec<u32>,
    /// Whether `edge[k] == k` for every `k` (edges already sorted by group).
    in_order: bool,
}

impl Groups {
    fn new(keys: &[u32], others: &[u32], n: usize) -> Groups {
        let mut ptr = vec![0usize; n + 1];
        for &k in keys {
            ptr[k as usize + 1] += 1;
        }
        for i in 0..n {
            ptr[i + 1] += ptr[i];
        }
        if keys.is_sorted() {
            // Already grouped (a CSR matrix's rows): every edge stays where it is.
            return Groups { ptr, edge: (0..keys.len() as u32).collect(), other: others.to_vec(), in_order: true };
        }
        let mut next = ptr.clone();
        let mut edge = vec![0u32; keys.len()];
        for (e, &k) in keys.iter().enumerate() {
            edge[next[k as usize]] = e as u32;
            next[k as usize] += 1;
        }
        let other = edge.iter().map(|&e| others[e as usize]).collect();
        let in_order = edge.iter().enumerate().all(|(k, &e)| k == e as usize);
        Groups { ptr, edge, other, in_order }
    }

    /// Positions of `row`'s edges in group order.
    fn span(&self, row: usize) -> std::ops::Range<usize> {
        self.ptr[row]..self.ptr[row + 1]
    }

    /// Per-edge rows of `width` values (edge order) rearranged into group order.
    fn gather<T: Copy + Default + Send + Sync>(&self, values: &[T], width: usize) -> Vec<T> {
        let mut out = vec![T::default(); values.len()];
        let per_task = rows_per_task(self.edge.len(), values.len());
        out.par_chunks_mut(per_task * width).zip(self.edge.par_chunks(per_task)).for_each(|(out, edges)| {
            if width == 1 {
                // One value per edge: a load and a store each, not a `memcpy` call.
                for (o, &e) in out.iter_mut().zip(edges) {
                    *o = values[e as usize];
                }
                return;
            }
            for (o, &e) in out.chunks_exact_mut(width).zip(edges) {
                o.copy_from_slice(&values[e as usize * width..(e as usize + 1) * width]);
            }
        });
        out
    }

    /// The inverse of [`gather`](Self::gather): rows of `width` values in group order put
    /// back in edge order. Rows of 1, 2, 4 or 8 values move as loads and stores, not a
    /// `memcpy` call each (GAT's heads).
    fn scatter<T: Copy + Default>(&self, rows: &[T], width: usize) -> Vec<T> {
        // Inlined into each arm below, so a literal width is a constant length.
        #[inline(always)]
        fn put<T: Copy>(out: &mut [T], rows: &[T], edges: &[u32], w: usize) {
            for (&e, row) in edges.iter().zip(rows.chunks_exact(w)) {
                out[e as usize * w..(e as usize + 1) * w].copy_from_slice(row);
            }
        }
        let mut out = vec![T::default(); rows.len()];
        match width {
            1 => put(&mut out, rows, &self.edge, 1),
            2 => put(&mut out, rows, &self.edge, 2),
            4 => put(&mut out, rows, &self.edge, 4),
            8 => put(&mut out, rows, &self.edge, 8),
            w => put(&mut out, rows, &self.edge, w),
        }
        out
    }
}

impl Pattern {
    /// Edges `src[e] → dst[e]` from `sources` rows into `targets` rows.
    pub fn new(src: &[u32], dst: &[u32], sources: usize, targets: usize) -> Pattern {
        assert_eq!(src.len(), dst.len(), "edge source and target lists differ in length");
        assert!(src.len() <= u32::MAX as usize, "more edges than u32 indices can name");
        assert!(src.iter().all(|&s| (s as usize) < sources), "edge source out of range");
        assert!(dst.iter().all(|&t| (t as usize) < targets), "edge target out of range");
        Pattern {
            targets,
            sources,
            by_dst: Groups::new(dst, src, targets),
            by_src: Groups::new(src, dst, sources),
            src: src.to_vec(),
            dst: dst.to_vec(),
        }
    }

    pub fn len(&self) -> usize {
        self.src.len()
    }

    /// Each edge's source row, in edge order.
    pub fn src(&self) -> &[u32] {
        &self.src
    }

    /// Each edge's target row, in edge order.
    pub fn dst(&self) -> &[u32] {
        &self.dst
    }

    pub fn is_empty(&self) -> bool {
        self.src.is_empty()
    }

    /// Rows of the product: targets, or sources when transposed.
    fn out_rows(&self, transpose: bool) -> usize {
        if transpose { self.sources } else { self.targets }
    }

    fn in_rows(&self, transpose: bool) -> usize {
        if transpose { self.targets } else { self.sources }
    }

    /// (groups of the output rows, the row each edge reads, the row each edge writes).
    fn view(&self, transpose: bool) -> (&Groups, &[u32], &[u32]) {
        if transpose { (&self.by_src, &self.dst, &self.src) } else { (&self.by_dst, &self.src, &self.dst) }
    }
}

/// Shared handle to a [`Pattern`], passed to the extension ops.
pub type SharedPattern = Arc<Pattern>;

/// The extension: implemented natively for burn-flex and, with backward passes, for
/// autodiff over it. Other backends never call it (see `propagate::Strategy`).
#[backend_extension(Flex, Autodiff)]
pub trait GraphOps: Backend {
    /// `out[t] = Σ_{e: dst_e = t} x[src_e]` (`transpose`: sources and targets
    /// swapped), `x`: `[in_rows, F]` → `[out_rows, F]`.
    fn spmm(x: FloatTensor<Self>, pattern: SharedPattern, transpose: bool) -> FloatTensor<Self>;

    /// As [`spmm`](GraphOps::spmm) with weights `w`: `[E, H]`, the columns of `x` split into
    /// `H` equal heads: `out[t]_h = Σ_e w[e, h] · x[s_e]_h`.
    fn spmm_weighted(x: FloatTensor<Self>, w: FloatTensor<Self>, pattern: SharedPattern, transpose: bool) -> FloatTensor<Self>;

    /// `out[e, h] = ⟨a[t_e]_h, b[s_e]_h⟩` with `a`: `[out_rows, H·C]`, `b`: `[in_rows, H·C]`,
    /// (t, s) = (dst, src), or (src, dst) when transposed. Returns `[E, H]`.
    fn sddmm(a: FloatTensor<Self>, b: FloatTensor<Self>, pattern: SharedPattern, transpose: bool, heads: usize) -> FloatTensor<Self>;

    /// GAT's attention: per edge and head the logit
    /// `l = LeakyReLU(a_src[s_e] + a_dst[t_e])`, soft-maxed over the edges into each
    /// target (shifted by the target's maximum). `a_src`, `a_dst`: `[N, H]` → `[E, H]`.
    fn edge_softmax(a_src: FloatTensor<Self>, a_dst: FloatTensor<Self>, pattern: SharedPattern, negative_slope: f64) -> FloatTensor<Self>;

    /// `value`, an element-wise f(x) the caller computed, whose gradient with respect to
    /// `x` is `grad · slope` (`float_mul(grad, slope)`; `slope` = f'(x) as the caller's
    /// backward pass would compute it). With value and slope computed once per node and
    /// gathered, an f of a per-node quantity costs one evaluation per node, not per edge,
    /// and gives burn's values and gradient bit for bit.
    fn pointwise(x: FloatTensor<Self>, value: FloatTensor<Self>, slope: FloatTensor<Self>) -> FloatTensor<Self>;

    /// The gradient of [`edge_softmax`](GraphOps::edge_softmax) with respect to the
    /// pre-activation logits `a_src[s_e] + a_dst[t_e]`, from its output `alpha` and the
    /// output gradient: `α_e (g_e − Σ_{e' into t} α_e' g_e')`, times the LeakyReLU slope
    /// where the pre-activation is negative. `[E, H]`.
    fn edge_softmax_grad(
        a_src: FloatTensor<Self>,
        a_dst: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        pattern: SharedPattern,
        negative_slope: f64,
    ) -> FloatTensor<Self>;
}

/// [`GraphOps::spmm`] on dispatch tensors.
pub fn spmm(x: Tensor<2>, pattern: &SharedPattern, transpose: bool) -> Tensor<2> {
    Tensor::from_dispatch(Dispatch::spmm(x.into_dispatch(), pattern.clone(), transpose))
}

/// [`GraphOps::edge_softmax`] on dispatch tensors.
pub fn edge_softmax(a_src: Tensor<2>, a_dst: Tensor<2>, pattern: &SharedPattern, negative_slope: f64) -> Tensor<2> {
    Tensor::from_dispatch(Dispatch::edge_softmax(a_src.into_dispatch(), a_dst.into_dispatch(), pattern.clone(), negative_slope))
}

/// [`GraphOps::pointwise`] on dispatch tensors.
pub fn pointwise(x: Tensor<2>, value: Tensor<2>, slope: Tensor<2>) -> Tensor<2> {
    Tensor::from_dispatch(Dispatch::pointwise(x.into_dispatch(), value.into_dispatch(), slope.into_dispatch()))
}

/// [`GraphOps::spmm_weighted`] on dispatch tensors.
pub fn spmm_weighted(x: Tensor<2>, w: Tensor<2>, pattern: &SharedPattern, transpose: bool) -> Tensor<2> {
    Tensor::from_dispatch(Dispatch::spmm_weighted(x.into_dispatch(), w.into_dispatch(), pattern.clone(), transpose))
}

// ---------------------------------------------------------------------------------------
// Host kernels

/// The float types the kernels run in.
trait Real:
    Exp
    + Copy
    + Send
    + Sync
    + Default
    + std::ops::AddAssign
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + PartialOrd
    + burn::tensor::Element
    + bytemuck::Pod
{
    const NEG_INFINITY: Self;
    fn dot(a: &[Self], b: &[Self]) -> Self;
    /// Four dot products (pairs of equal length), each summed exactly as [`Real::dot`]
    /// sums it: four independent chains of adds in flight instead of one.
    fn dot4(a: [&[Self]; 4], b: [&[Self]; 4]) -> [Self; 4];
    /// [`dot4`](Real::dot4) of one row `a` with four rows `b`: `a` read once.
    fn dot4_shared(a: &[Self], b: [&[Self]; 4]) -> [Self; 4];
    fn from_f64(x: f64) -> Self;
}

/// e^x in each float type (a trait apart from [`Real`]'s macro-written methods: f32's is
/// written out, f64's libm's).
trait Exp {
    fn exp(self) -> Self;
}

macro_rules! real {
    ($t:ty) => {
        impl Real for $t {
            const NEG_INFINITY: $t = <$t>::NEG_INFINITY;
            /// Eight running sums (lane `l` takes entries `l`, `l + 8`, …), added in a
            /// fixed tree, then the tail in order: one fixed order (the same on every CPU
            /// and thread count) that vectorises, where one running sum waits on each add.
            #[inline]
            fn dot(a: &[$t], b: &[$t]) -> $t {
                const L: usize = 8;
                let mut lanes = [0.0 as $t; L];
                let (ac, bc) = (a.chunks_exact(L), b.chunks_exact(L));
                let (ar, br) = (ac.remainder(), bc.remainder());
                for (x, y) in ac.zip(bc) {
                    for l in 0..L {
                        lanes[l] += x[l] * y[l];
                    }
                }
                let mut s = ((lanes[0] + lanes[4]) + (lanes[1] + lanes[5])) + ((lanes[2] + lanes[6]) + (lanes[3] + lanes[7]));
                for (&p, &q) in ar.iter().zip(br) {
                    s += p * q;
                }
                s
            }
            // Always inlined: into the AVX2 kernels it is compiled for 256-bit vectors.
            #[inline(always)]
            fn dot4(a: [&[$t]; 4], b: [&[$t]; 4]) -> [$t; 4] {
                const L: usize = 8;
                let n = a[0].len();
                if a.iter().chain(&b).any(|v| v.len() != n) {
                    return std::array::from_fn(|j| Self::dot(a[j], b[j]));
                }
                fn c(v: &[$t]) -> std::slice::ChunksExact<'_, $t> {
                    v.chunks_exact(L)
                }
                let (mut l0, mut l1, mut l2, mut l3) = ([0.0 as $t; L], [0.0 as $t; L], [0.0 as $t; L], [0.0 as $t; L]);
                let pairs = c(a[0]).zip(c(b[0])).zip(c(a[1]).zip(c(b[1]))).zip(c(a[2]).zip(c(b[2])).zip(c(a[3]).zip(c(b[3]))));
                for (((x0, y0), (x1, y1)), ((x2, y2), (x3, y3))) in pairs {
                    for l in 0..L {
                        l0[l] += x0[l] * y0[l];
                        l1[l] += x1[l] * y1[l];
                        l2[l] += x2[l] * y2[l];
                        l3[l] += x3[l] * y3[l];
                    }
                }
                reduce4([l0, l1, l2, l3], a, b)
            }
            #[inline(always)]
            fn dot4_shared(a: &[$t], b: [&[$t]; 4]) -> [$t; 4] {
                const L: usize = 8;
                let n = a.len();
                if b.iter().any(|v| v.len() != n) {
                    return std::array::from_fn(|j| Self::dot(a, b[j]));
                }
                fn c(v: &[$t]) -> std::slice::ChunksExact<'_, $t> {
                    v.chunks_exact(L)
                }
                let (mut l0, mut l1, mut l2, mut l3) = ([0.0 as $t; L], [0.0 as $t; L], [0.0 as $t; L], [0.0 as $t; L]);
                let rows = c(a).zip(c(b[0]).zip(c(b[1]))).zip(c(b[2]).zip(c(b[3])));
                for ((x, (y0, y1)), (y2, y3)) in rows {
                    for l in 0..L {
                        l0[l] += x[l] * y0[l];
                        l1[l] += x[l] * y1[l];
                        l2[l] += x[l] * y2[l];
                        l3[l] += x[l] * y3[l];
                    }
                }
                reduce4([l0, l1, l2, l3], [a; 4], b)
            }
            fn from_f64(x: f64) -> $t {
                x as $t
            }
        }
    };
}
real!(f32);
real!(f64);

impl Exp for f32 {
    /// glibc's `expf`, inlined (what `f32::exp` calls on glibc with FMA, the same bits).
    #[inline(always)]
    fn exp(self) -> f32 {
        super::expf::expf(self)
    }
}

impl Exp for f64 {
    #[inline]
    fn exp(self) -> f64 {
        f64::exp(self)
    }
}

/// Four dot products' eight lanes each, added as [`Real::dot`] adds them, then the
/// tails in order.
#[inline(always)]
fn reduce4<T: Real>(lanes: [[T; 8]; 4], a: [&[T]; 4], b: [&[T]; 4]) -> [T; 4] {
    let whole = a[0].len() / 8 * 8;
    std::array::from_fn(|j| {
        let v = &lanes[j];
        let mut s = ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
        for (&p, &q) in a[j][whole..].iter().zip(&b[j][whole..]) {
            s += p * q;
        }
        s
    })
}

/// Below this many multiply-adds a product runs on the calling thread.
const PARALLEL_WORK: usize = 1 << 15;

/// Rows per parallel task: about `PARALLEL_WORK` multiply-adds each, at least one row.
fn rows_per_task(rows: usize, work: usize) -> usize {
    let tasks = (work / PARALLEL_WORK).clamp(1, rows.max(1));
    rows.div_ceil(tasks).max(1)
}

/// Whether a product of `rows` output rows and `work` multiply-adds is split over
/// threads (for tests that must exercise the parallel path).
pub fn splits_work(rows: usize, work: usize) -> bool {
    rows_per_task(rows, work) < rows
}

/// `x`, or a contiguous copy of it: what the kernels read as one slice.
pub(super) fn contiguous(x: &FlexTensor) -> FlexTensor {
    if x.layout().contiguous_offsets().is_some() { x.clone() } else { x.to_contiguous() }
}

fn dims2(x: &FlexTensor) -> [usize; 2] {
    let shape = x.shape();
    assert_eq!(shape.num_dims(), 2, "sparse products take 2-d tensors, got shape {shape:?}");
    [shape[0], shape[1]]
}

fn from_vec<T: Real>(data: Vec<T>, rows: usize, cols: usize) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(data, [rows, cols]))
}

/// `out[t]_h = Σ_e w(e, h) · x[s_e]_h` over the groups of `view`.
fn spmm_kernel<T: Real>(x: &[T], cols: usize, weights: Weights<'_, T>, pattern: &Pattern, transpose: bool) -> Vec<T> {
    let (groups, _, _) = pattern.view(transpose);
    let rows = pattern.out_rows(transpose);
    if cols == 0 || rows == 0 {
        return vec![T::default(); rows * cols];
    }
    // The kernel walks edges in group order; weights in edge order would be one random
    // read per edge (for a transposed product, every edge), so they are rearranged first.
    let reordered;
    let weights = match weights {
        Weights::Column(w) if !groups.in_order => {
            reordered = groups.gather(w, 1);
            Weights::Column(&reordered)
        }
        Weights::Heads(w, h) if !groups.in_order => {
            reordered = groups.gather(w, h);
            Weights::Heads(&reordered, h)
        }
        weights => weights,
    };
    let tiled = tiles::<T>(weights.heads(), cols, rows, pattern.in_rows(transpose));
    let job = SpmmJob { x, cols, weights, groups, tiled };
    let per_task = rows_per_task(rows, pattern.len() * cols);
    // Every entry is written once by the job, so the output is not zeroed first (a
    // 1 433 × 512 weight gradient's zeroing took a third of its product's time).
    let mut out = Vec::with_capacity(rows * cols);
    let spare = &mut out.spare_capacity_mut()[..rows * cols];
    if tiled {
        // Each row is still summed whole by one task, so how rows are dealt out to
        // threads cannot change a bit of the result.
        let per_thread = rows.div_ceil(rayon::current_num_threads()).max(1);
        spare.par_chunks_mut(per_thread * cols).enumerate().for_each(|(block, chunk)| job.rows(chunk, block * per_thread));
    } else if per_task >= rows {
        job.rows(spare, 0);
    } else {
        spare.par_chunks_mut(per_task * cols).enumerate().for_each(|(block, chunk)| job.rows(chunk, block * per_task));
    }
    // SAFETY: `job.rows` initialised every entry of `spare`, the first `rows * cols`.
    unsafe { out.set_len(rows * cols) };
    out
}

/// The narrowest block of columns summed in registers per pass over a row's edges.
const BLOCK: usize = 16;

/// From this many columns, a product may be tiled ([`tiles`]).
const WIDE: usize = 128;

/// Tiling (see [`tiles`]): output at most this large (about half of L2), input at
/// least this large (past L2), input read in blocks of this many bytes.
const TILE_OUT_BYTES: usize = 384 << 10;
const TILE_IN_BYTES: usize = 1 << 20;
const TILE_ROWS_BYTES: usize = 96 << 10;

struct SpmmJob<'a, T> {
    x: &'a [T],
    cols: usize,
    /// Indexed by position in group order, like `groups.other`.
    weights: Weights<'a, T>,
    groups: &'a Groups,
    /// Sum source block by source block ([`tiles`]), decided once for the whole product.
    tiled: bool,
}

/// Whether to sum a few cache-resident output rows over an input too large for the
/// cache (the feature-weight gradient `Xᵀ·dY`: 500 rows from PubMed's 19 717) source
/// block by source block, so that each input row is read from memory once rather than
/// once per edge.
fn tiles<T>(heads: usize, cols: usize, out_rows: usize, in_rows: usize) -> bool {
    let row_bytes = cols * size_of::<T>();
    heads == 1 && cols >= WIDE && out_rows * row_bytes <= TILE_OUT_BYTES && in_rows * row_bytes >= TILE_IN_BYTES
}

impl<T: Real> SpmmJob<'_, T> {
    /// Output rows `first..` into `out` (whole rows).
    fn rows(&self, out: &mut [MaybeUninit<T>], first: usize) {
        #[cfg(target_arch = "x86_64")]
        match crate::simd::Isa::current() {
            // SAFETY: the CPU has AVX-512F (part of the set it has).
            crate::simd::Isa::Avx512 => return unsafe { self.rows_avx512(out, first) },
            // SAFETY: the CPU has AVX2 (as above).
            crate::simd::Isa::Avx2 => return unsafe { self.rows_avx2(out, first) },
            crate::simd::Isa::Portable => {}
        }
        self.rows_portable(out, first, 128)
    }

    /// The same code compiled for 256-bit vectors. No FMA: a fused multiply-add rounds
    /// differently, and results must not depend on the CPU model.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn rows_avx2(&self, out: &mut [MaybeUninit<T>], first: usize) {
        self.rows_portable(out, first, 256)
    }

    /// The same for 512-bit vectors. Every output entry is its own sum over the edges,
    /// so the vector width changes no bit of the result.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn rows_avx512(&self, out: &mut [MaybeUninit<T>], first: usize) {
        self.rows_portable(out, first, 1024)
    }

    /// `register_bytes`: how much of the vector registers one block of a row's sums may
    /// hold across the row's edges (half of them: the rest carry the products).
    #[inline(always)]
    fn rows_portable(&self, out: &mut [MaybeUninit<T>], first: usize, register_bytes: usize) {
        let heads = self.weights.heads();
        let head_cols = self.cols / heads;
        if self.tiled {
            // Sums built up block by block of sources: they start at +0.
            for o in out.iter_mut() {
                o.write(T::default());
            }
            // SAFETY: every entry was initialised just above.
            let out = unsafe { out.assume_init_mut() };
            let in_rows = self.x.len() / self.cols;
            // Every row's edges are still taken in group order (a row waits at its first
            // edge past the current block), so the sums match the untiled path bit for bit.
            let mut next: Vec<usize> = (first..first + out.len() / self.cols).map(|r| self.groups.ptr[r]).collect();
            let tile = (TILE_ROWS_BYTES / (self.cols * size_of::<T>())).max(1);
            let mut end = 0;
            while end < in_rows {
                end = (end + tile).min(in_rows);
                for (i, acc) in out.chunks_exact_mut(self.cols).enumerate() {
                    let stop = self.groups.ptr[first + i + 1];
                    let mut k = next[i];
                    while k < stop && (self.groups.other[k] as usize) < end {
                        self.add_row(acc, k);
                        k += 1;
                    }
                    next[i] = k;
                }
            }
            return;
        }
        // One weight per edge or none: each row in blocks of columns whose sums stay in
        // registers over all the row's edges (a 512-wide row summed edge by edge through
        // L1 took 1.6–1.9× as long), the widest blocks the registers hold first.
        let widest = register_bytes / size_of::<T>();
        if heads == 1 {
            let (mut blocks, mut tail) = (Vec::new(), 0);
            for n in [256, 128, 64, 32, BLOCK].into_iter().filter(|&n| n <= widest) {
                while tail + n <= self.cols {
                    blocks.push(n);
                    tail += n;
                }
            }
            for (i, acc) in out.chunks_exact_mut(self.cols).enumerate() {
                let edges = self.groups.span(first + i);
                let mut c = 0;
                for &n in &blocks {
                    let out = &mut acc[c..c + n];
                    match n {
                        256 => self.columns::<256>(out, edges.clone(), c),
                        128 => self.columns::<128>(out, edges.clone(), c),
                        64 => self.columns::<64>(out, edges.clone(), c),
                        32 => self.columns::<32>(out, edges.clone(), c),
                        _ => self.columns::<BLOCK>(out, edges.clone(), c),
                    }
                    c += n;
                }
                if tail < self.cols {
                    self.tail(&mut acc[tail..], edges, tail);
                }
            }
            return;
        }
        // Per-head weights (GAT) with heads of 4, 8, 16 or 32 columns: as many heads as
        // the registers hold summed in one walk of the row's edges (eight 16-column heads
        // on AVX-512), each edge's index read once for them all rather than once a head.
        if head_cols * heads == self.cols && matches!(head_cols, 4 | 8 | 16 | 32) {
            // The walks (first head, heads) every row takes, the most heads first.
            let per_walk = (widest / head_cols).clamp(1, heads);
            let (mut walks, mut h) = (Vec::new(), 0);
            while h < heads {
                let g = [8, 4, 2, 1].into_iter().find(|&g| g <= per_walk && h + g <= heads).expect("one head fits");
                walks.push((h, g));
                h += g;
            }
            for (i, acc) in out.chunks_exact_mut(self.cols).enumerate() {
                let edges = self.groups.span(first + i);
                for &(h, g) in &walks {
                    let out = &mut acc[h * head_cols..(h + g) * head_cols];
                    macro_rules! walk {
                        ($(($hc:literal, $g:literal))*) => {
                            match (head_cols, g) {
                                $(($hc, $g) => self.heads::<$hc, $g, { $hc * $g }>(out, edges.clone(), h),)*
                                _ => unreachable!("heads of {head_cols} columns, {g} a walk"),
                            }
                        };
                    }
                    walk!((4, 1)(4, 2)(4, 4)(4, 8)(8, 1)(8, 2)(8, 4)(8, 8)(16, 1)(16, 2)(16, 4)(16, 8)(32, 1)(32, 2)(32, 4)(32, 8));
                }
            }
            return;
        }
        // Other per-head widths: blocks of columns, a head's segment at a time where
        // heads split evenly into blocks.
        let segments = if head_cols.is_multiple_of(BLOCK) { heads } else { 1 };
        let seg_cols = self.cols / segments;
        for (i, acc) in out.chunks_exact_mut(self.cols).enumerate() {
            let edges = self.groups.span(first + i);
            for k in 0..segments {
                let mut c = k * seg_cols;
                let end = c + seg_cols;
                while c + BLOCK <= end {
                    self.block::<BLOCK>(&mut acc[c..c + BLOCK], edges.clone(), c, head_cols);
                    c += BLOCK;
                }
                while c + 4 <= end {
                    self.block::<4>(&mut acc[c..c + 4], edges.clone(), c, head_cols);
                    c += 4;
                }
                while c < end {
                    self.block::<1>(&mut acc[c..c + 1], edges.clone(), c, head_cols);
                    c += 1;
                }
            }
        }
    }

    /// Columns `c..c + N` of one output row summed over its edges (group positions
    /// `edges`) in order, in registers; one weight per edge or none.
    #[inline(always)]
    fn columns<const N: usize>(&self, out: &mut [MaybeUninit<T>], edges: std::ops::Range<usize>, c: usize) {
        let mut acc = [T::default(); N];
        let (x, cols) = (self.x, self.cols);
        let others = &self.groups.other[edges.clone()];
        let x_at = |o: u32| -> &[T; N] {
            let at = o as usize * cols + c;
            x[at..at + N].try_into().expect("N columns")
        };
        match self.weights {
            Weights::Column(w) => {
                for (&o, &w) in others.iter().zip(&w[edges]) {
                    let xs = x_at(o);
                    for j in 0..N {
                        acc[j] += w * xs[j];
                    }
                }
            }
            Weights::Ones => {
                for &o in others {
                    let xs = x_at(o);
                    for j in 0..N {
                        acc[j] += xs[j];
                    }
                }
            }
            Weights::Heads(..) => unreachable!("per-head weights take `block`"),
        }
        out.write_copy_of_slice(&acc);
    }

    /// `acc += w_k · x[other_k]` over the whole row for the edge at group position `k`
    /// (one weight per edge).
    #[inline(always)]
    fn add_row(&self, acc: &mut [T], k: usize) {
        let at = self.groups.other[k] as usize * self.cols;
        let xs = &self.x[at..at + self.cols];
        match self.weights {
            Weights::Column(w) => {
                let w = w[k];
                for (a, &v) in acc.iter_mut().zip(xs) {
                    *a += w * v;
                }
            }
            Weights::Ones | Weights::Heads(..) => {
                for (a, &v) in acc.iter_mut().zip(xs) {
                    *a += v;
                }
            }
        }
    }

    /// Columns `c..c + out.len()` (fewer than [`BLOCK`]) of one output row, summed over
    /// its edges (group positions `edges`) in order; one weight or none per edge (the
    /// caller keeps per-head weights to [`block`](Self::block)). Each width is a block
    /// of its own (the same sums): through a buffer of a count known only here, the
    /// sums went out by a libc `memcpy` call per row and each edge was added value by
    /// value — the classes and labels (7 wide on Cora) of every output layer and label
    /// propagation (docs/performance.md).
    #[inline(always)]
    fn tail(&self, out: &mut [MaybeUninit<T>], edges: std::ops::Range<usize>, c: usize) {
        const _: () = assert!(BLOCK == 16, "a tail is 1 to 15 columns wide");
        macro_rules! widths {
            ($($n:literal)*) => {
                match out.len() {
                    $($n => self.columns::<$n>(out, edges, c),)*
                    n => unreachable!("a tail of {n} columns"),
                }
            };
        }
        widths!(1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    }

    /// Heads `h0..h0 + G` (`HC` columns each) of one output row, summed over its edges
    /// (group positions `edges`) in order, in registers: each entry the same sum, term
    /// for term, as [`block`](Self::block) gives it.
    #[inline(always)]
    fn heads<const HC: usize, const G: usize, const N: usize>(&self, out: &mut [MaybeUninit<T>], edges: std::ops::Range<usize>, h0: usize) {
        let Weights::Heads(w, h) = self.weights else { unreachable!("per-head weights") };
        let mut acc = [T::default(); N];
        let c = h0 * HC;
        for e in edges {
            let at = self.groups.other[e] as usize * self.cols + c;
            let xs: &[T; N] = self.x[at..at + N].try_into().expect("N columns");
            let ws: &[T; G] = w[e * h + h0..e * h + h0 + G].try_into().expect("G heads");
            // Each head's weight across its columns first: summed as one N-wide row
            // (the loop nest over heads, then columns, was vectorised across heads with
            // gathers and scatters).
            let mut lane = [T::default(); N];
            for (l, &wg) in lane.chunks_exact_mut(HC).zip(ws) {
                l.fill(wg);
            }
            for j in 0..N {
                acc[j] += lane[j] * xs[j];
            }
        }
        out.write_copy_of_slice(&acc);
    }

    /// Columns `c..c + N` of one output row, summed over its edges (group positions
    /// `edges`) in order, in registers. Column `j` belongs to head `j / head_cols`.
    #[inline(always)]
    fn block<const N: usize>(&self, out: &mut [MaybeUninit<T>], edges: std::ops::Range<usize>, c: usize, head_cols: usize) {
        let mut acc = [T::default(); N];
        if edges.is_empty() {
            out.write_copy_of_slice(&acc);
            return;
        }
        let x_at = |k: usize| -> &[T; N] {
            let at = self.groups.other[k] as usize * self.cols + c;
            self.x[at..at + N].try_into().expect("N columns")
        };
        match self.weights {
            Weights::Ones | Weights::Column(_) => unreachable!("one weight per edge takes `columns`"),
            Weights::Heads(w, h) if c / head_cols == (c + N - 1) / head_cols => {
                let k = c / head_cols;
                for e in edges {
                    let (w, xs) = (w[e * h + k], x_at(e));
                    for j in 0..N {
                        acc[j] += w * xs[j];
                    }
                }
            }
            Weights::Heads(w, h) => {
                let mut lane_head = [0usize; N];
                for (j, head) in lane_head.iter_mut().enumerate() {
                    *head = (c + j) / head_cols;
                }
                for e in edges {
                    let (row, xs) = (&w[e * h..(e + 1) * h], x_at(e));
                    for j in 0..N {
                        acc[j] += row[lane_head[j]] * xs[j];
                    }
                }
            }
        }
        out.write_copy_of_slice(&acc);
    }
}

#[derive(Clone, Copy)]
enum Weights<'a, T> {
    Ones,
    /// `[E, 1]`.
    Column(&'a [T]),
    /// `[E, H]` row-major, and H > 1.
    Heads(&'a [T], usize),
}

impl<T> Weights<'_, T> {
    fn heads(&self) -> usize {
        match self {
            Weights::Heads(_, h) => *h,
            _ => 1,
        }
    }
}

fn sddmm_kernel<T: Real>(a: &[T], b: &[T], cols: usize, heads: usize, pattern: &Pattern, transpose: bool) -> Vec<T> {
    let (_, read, write) = pattern.view(transpose);
    let edges = pattern.len();
    let mut out = vec![T::default(); edges * heads];
    if heads == 0 || edges == 0 {
        return out;
    }
    let job = SddmmJob { a, b, cols, heads, read, write };
    let per_task = rows_per_task(edges, edges * cols);
    if per_task >= edges {
        job.edges(&mut out, 0);
    } else {
        out.par_chunks_mut(per_task * heads).enumerate().for_each(|(block, chunk)| job.edges(chunk, block * per_task));
    }
    out
}

struct SddmmJob<'a, T> {
    a: &'a [T],
    b: &'a [T],
    cols: usize,
    heads: usize,
    read: &'a [u32],
    write: &'a [u32],
}

impl<T: Real> SddmmJob<'_, T> {
    /// Edges `first..` into `out` (one `heads`-wide row each).
    fn edges(&self, out: &mut [T], first: usize) {
        #[cfg(target_arch = "x86_64")]
        match crate::simd::Isa::current() {
            // SAFETY: the CPU has AVX-512F (part of the set it has).
            crate::simd::Isa::Avx512 => return unsafe { self.edges_avx512(out, first) },
            // SAFETY: the CPU has AVX2 (as above).
            crate::simd::Isa::Avx2 => return unsafe { self.edges_avx2(out, first) },
            crate::simd::Isa::Portable => {}
        }
        self.edges_portable(out, first)
    }

    /// The same compiled for 256-bit vectors ([`Real::dot`]'s eight lanes); no FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn edges_avx2(&self, out: &mut [T], first: usize) {
        self.edges_portable(out, first)
    }

    /// The same compiled for AVX-512F: the same lanes and sums, no FMA.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn edges_avx512(&self, out: &mut [T], first: usize) {
        self.edges_portable(out, first)
    }

    /// Four edges at a time ([`Real::dot4`]: the same sums, four chains of adds in
    /// flight), the last few one by one.
    #[inline(always)]
    fn edges_portable(&self, out: &mut [T], first: usize) {
        let (cols, heads, head_cols) = (self.cols, self.heads, self.cols / self.heads);
        let rows = |e: usize| {
            let (t, s) = (self.write[e] as usize, self.read[e] as usize);
            (&self.a[t * cols..(t + 1) * cols], &self.b[s * cols..(s + 1) * cols])
        };
        if head_cols < 8 {
            // Narrower than [`Real::dot`]'s eight lanes: its sum is the running sum from +0
            // in order, here without the lanes' reduction (which does not inline).
            for (i, o) in out.chunks_exact_mut(heads).enumerate() {
                let (at, bs) = rows(first + i);
                for (k, ok) in o.iter_mut().enumerate() {
                    let r = k * head_cols..(k + 1) * head_cols;
                    *ok = at[r.clone()].iter().zip(&bs[r]).fold(T::default(), |s, (&p, &q)| s + p * q);
                }
            }
            return;
        }
        let done = out.len() / heads / 4 * 4;
        let mut groups = out.chunks_exact_mut(4 * heads);
        for (g, o) in groups.by_ref().enumerate() {
            let e = first + 4 * g;
            let ab: [(&[T], &[T]); 4] = std::array::from_fn(|j| rows(e + j));
            // Edges into one target (how graphs come, grouped) read its row once.
            let shared = (1..4).all(|j| self.write[e + j] == self.write[e]);
            for k in 0..heads {
                let r = k * head_cols..(k + 1) * head_cols;
                let d = if shared {
                    T::dot4_shared(&ab[0].0[r.clone()], std::array::from_fn(|j| &ab[j].1[r.clone()]))
                } else {
                    T::dot4(std::array::from_fn(|j| &ab[j].0[r.clone()]), std::array::from_fn(|j| &ab[j].1[r.clone()]))
                };
                for (j, v) in d.into_iter().enumerate() {
                    o[j * heads + k] = v;
                }
            }
        }
        for (i, o) in groups.into_remainder().chunks_exact_mut(heads).enumerate() {
            let (at, bs) = rows(first + done + i);
            for (k, ok) in o.iter_mut().enumerate() {
                let r = k * head_cols..(k + 1) * head_cols;
                *ok = T::dot(&at[r.clone()], &bs[r]);
            }
        }
    }
}

/// `[E, H]` values computed target by target: `row(t, edges into t, out)` fills one
/// `H`-wide row per edge of `t`, in the order of `edges`. The rows are laid out in group
/// order, so a run of targets fills one contiguous part of one buffer (runs go in
/// parallel; a buffer per target was an allocation per node), then go back to edge order
/// ([`Groups::scatter`]: edges into a target need not be contiguous, e.g. GAT's self
/// loops come last).
fn per_target<T: Real>(pattern: &Pattern, heads: usize, row: impl Fn(usize, &[u32], &mut [T]) + Sync) -> Vec<T> {
    let (targets, groups) = (pattern.targets, &pattern.by_dst);
    let run = rows_per_task(targets, pattern.len() * heads * 8).max(1);
    let mut rows = vec![T::default(); pattern.len() * heads];
    let mut parts = Vec::with_capacity(targets.div_ceil(run));
    let mut rest = rows.as_mut_slice();
    for first in (0..targets).step_by(run) {
        let ts = first..(first + run).min(targets);
        let (part, after) = rest.split_at_mut((groups.ptr[ts.end] - groups.ptr[ts.start]) * heads);
        parts.push((ts, part));
        rest = after;
    }
    parts.into_par_iter().for_each(|(ts, part)| {
        let base = groups.ptr[ts.start];
        for t in ts {
            let span = groups.span(t);
            row(t, &groups.edge[span.clone()], &mut part[(span.start - base) * heads..(span.end - base) * heads]);
        }
    });
    groups.scatter(&rows, heads)
}

/// Per target, in edge order: logits, their maximum, exponentials, their sum, α.
fn edge_softmax_kernel<T: Real>(a_src: &[T], a_dst: &[T], heads: usize, pattern: &Pattern, slope: T) -> Vec<T> {
    let (scores, isa) = (Scores { a_src, a_dst, heads, src: &pattern.src, slope }, crate::simd::Isa::current());
    per_target(pattern, heads, |t, edges, row| scores.dispatch(isa, Pass::Softmax, t, edges, row))
}

fn edge_softmax_grad_kernel<T: Real>(
    a_src: &[T],
    a_dst: &[T],
    alpha: &[T],
    grad: &[T],
    heads: usize,
    pattern: &Pattern,
    slope: T,
) -> Vec<T> {
    let (scores, isa) = (Scores { a_src, a_dst, heads, src: &pattern.src, slope }, crate::simd::Isa::current());
    per_target(pattern, heads, |t, edges, row| scores.dispatch(isa, Pass::Gradient { alpha, grad }, t, edges, row))
}

/// GAT's node scores, `[N, H]` at the sources and the targets, and the LeakyReLU slope
/// between them and an edge's logit.
struct Scores<'a, T> {
    a_src: &'a [T],
    a_dst: &'a [T],
    heads: usize,
    src: &'a [u32],
    slope: T,
}

/// What one target's row holds after [`Scores::dispatch`].
#[derive(Clone, Copy)]
enum Pass<'a, T> {
    /// α per edge and head.
    Softmax,
    /// The pre-activation gradient per edge and head, from α and the gradient of the
    /// loss in α, both `[E, H]` in edge order.
    Gradient { alpha: &'a [T], grad: &'a [T] },
}

/// Heads a target's pass handles side by side (their running maxima and sums fit in
/// registers); more go in blocks of this many.
const HEAD_BLOCK: usize = 16;

impl<T: Real> Scores<'_, T> {
    /// One target's row, compiled for AVX-512F or AVX2 with FMA as `isa` says (at most
    /// what the CPU has; f32's `exp` is glibc's formula, fused multiply-adds: the same
    /// values on every path, faster with FMA in the target features).
    fn dispatch(&self, isa: crate::simd::Isa, pass: Pass<'_, T>, t: usize, edges: &[u32], row: &mut [T]) {
        #[cfg(target_arch = "x86_64")]
        match isa.min(crate::simd::Isa::detected()) {
            // SAFETY: the CPU has AVX-512F and FMA (part of the set it has).
            crate::simd::Isa::Avx512 => return unsafe { self.target_avx512(pass, t, edges, row) },
            // SAFETY: the CPU has AVX2 and FMA (as above).
            crate::simd::Isa::Avx2 => return unsafe { self.target_avx2(pass, t, edges, row) },
            crate::simd::Isa::Portable => {}
        }
        self.target(pass, t, edges, row)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f,fma")]
    unsafe fn target_avx512(&self, pass: Pass<'_, T>, t: usize, edges: &[u32], row: &mut [T]) {
        self.target(pass, t, edges, row)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn target_avx2(&self, pass: Pass<'_, T>, t: usize, edges: &[u32], row: &mut [T]) {
        self.target(pass, t, edges, row)
    }

    /// The heads in blocks, common head counts as literal widths (the loops over a
    /// block's heads unrolled and vectorised).
    #[inline(always)]
    fn target(&self, pass: Pass<'_, T>, t: usize, edges: &[u32], row: &mut [T]) {
        match self.heads {
            1 => self.block(pass, t, edges, row, 0, 1),
            2 => self.block(pass, t, edges, row, 0, 2),
            4 => self.block(pass, t, edges, row, 0, 4),
            8 => self.block(pass, t, edges, row, 0, 8),
            h => (0..h).step_by(HEAD_BLOCK).for_each(|k0| self.block(pass, t, edges, row, k0, HEAD_BLOCK.min(h - k0))),
        }
    }

    /// Heads `k0..k0 + width` of target `t`'s row (`row[i·H + k]`: edge `i` of `edges`,
    /// head `k`). Each head's values are computed as they would be alone — the same
    /// operations, its edges in the same order — the heads side by side.
    #[inline(always)]
    fn block(&self, pass: Pass<'_, T>, t: usize, edges: &[u32], row: &mut [T], k0: usize, width: usize) {
        let h = self.heads;
        let dst = &self.a_dst[t * h + k0..][..width];
        let logit_in = |e: u32| &self.a_src[self.src[e as usize] as usize * h + k0..][..width];
        let mut acc = [T::default(); HEAD_BLOCK];
        let acc = &mut acc[..width];
        match pass {
            Pass::Softmax => {
                // The logits and each head's maximum, then e^(l − max) and each head's
                // sum, then α = e^(l − max) / sum.
                let mut max = [T::NEG_INFINITY; HEAD_BLOCK];
                let max = &mut max[..width];
                for (i, &e) in edges.iter().enumerate() {
                    let out = &mut row[i * h + k0..][..width];
                    for (((o, &a), &b), m) in out.iter_mut().zip(logit_in(e)).zip(dst).zip(max.iter_mut()) {
                        let x = a + b;
                        let l = if x > T::default() { x } else { self.slope * x };
                        *o = l;
                        if l > *m {
                            *m = l;
                        }
                    }
                }
                for i in 0..edges.len() {
                    for ((o, &m), sum) in row[i * h + k0..][..width].iter_mut().zip(&*max).zip(acc.iter_mut()) {
                        let p = (*o - m).exp();
                        *o = p;
                        *sum += p;
                    }
                }
                for i in 0..edges.len() {
                    for (o, &sum) in row[i * h + k0..][..width].iter_mut().zip(&*acc) {
                        *o = *o / sum;
                    }
                }
            }
            Pass::Gradient { alpha, grad } => {
                // Each head's Σ α·g over the target's edges, then α·(g − Σ) through the
                // LeakyReLU's slope.
                for &e in edges {
                    let j = e as usize * h + k0;
                    for ((dot, &a), &g) in acc.iter_mut().zip(&alpha[j..][..width]).zip(&grad[j..][..width]) {
                        *dot += a * g;
                    }
                }
                for (i, &e) in edges.iter().enumerate() {
                    let j = e as usize * h + k0;
                    let (a, g) = (&alpha[j..][..width], &grad[j..][..width]);
                    let pre = logit_in(e).iter().zip(dst).map(|(&s, &d)| s + d);
                    for (((o, pre), (&a, &g)), &dot) in row[i * h + k0..][..width].iter_mut().zip(pre).zip(a.iter().zip(g)).zip(&*acc) {
                        let g = a * (g - dot);
                        *o = if pre > T::default() { g } else { self.slope * g };
                    }
                }
            }
        }
    }
}

/// `[N, H]` node scores of a pattern's source and target sets.
fn check_scores(a_src: &FlexTensor, a_dst: &FlexTensor, pattern: &Pattern) -> usize {
    let [ns, h] = dims2(a_src);
    let [nt, h2] = dims2(a_dst);
    assert_eq!((ns, nt, h2), (pattern.sources, pattern.targets, h), "edge softmax: score shapes");
    h
}

fn check_input(x: &FlexTensor, pattern: &Pattern, transpose: bool) -> [usize; 2] {
    let [rows, cols] = dims2(x);
    assert_eq!(rows, pattern.in_rows(transpose), "sparse product: input has {rows} rows for a pattern of {}", pattern.in_rows(transpose));
    [rows, cols]
}

/// Evaluates `$body` with the type `$t` standing for the float type of `$dtype`.
macro_rules! with_real {
    ($dtype:expr, $t:ident => $body:expr) => {
        match $dtype {
            DType::F32 => {
                type $t = f32;
                $body
            }
            DType::F64 => {
                type $t = f64;
                $body
            }
            other => panic!("sparse products run in f32 or f64, not {other:?}"),
        }
    };
}

/// The elements of a contiguous tensor (see [`contiguous`]) of float type `T`.
fn slice<T: Real>(x: &FlexTensor) -> &[T] {
    x.as_slice::<T>().expect("a contiguous tensor of the kernel's float type")
}

/// Rows of `x` at every edge's source (`at_src`) or target, `[E, F]`, copied on the
/// host by the pattern's indices. `x` takes no gradient (the copy is a new, untracked
/// tensor). burn-flex's `select` copies row by row, slow for the one-column per-node
/// quantities (degree powers) that edges read.
pub fn gather_rows(x: Tensor<2>, pattern: &Pattern, at_src: bool) -> Tensor<2> {
    let [_, cols] = x.dims();
    let (device, dtype) = (x.device(), x.dtype());
    let index = if at_src { &pattern.src } else { &pattern.dst };
    let data = x.into_data();
    let out = with_real!(dtype, T => {
        let x = data.as_slice::<T>().expect("the tensor's own float type");
        let rows: Vec<T> = if cols == 1 {
            index.iter().map(|&i| x[i as usize]).collect()
        } else {
            let mut out = Vec::with_capacity(index.len() * cols);
            index.iter().for_each(|&i| out.extend_from_slice(&x[i as usize * cols..][..cols]));
            out
        };
        TensorData::new(rows, [index.len(), cols])
    });
    Tensor::from_data(out, (&device, dtype))
}

fn flex_spmm(x: FlexTensor, w: Option<FlexTensor>, pattern: &Pattern, transpose: bool) -> FlexTensor {
    let [_, cols] = check_input(&x, pattern, transpose);
    let x = contiguous(&x);
    let w = w.map(|w| contiguous(&w));
    if let Some(w) = &w {
        let [e, h] = dims2(w);
        assert_eq!(e, pattern.len(), "one weight row per edge");
        assert!(h > 0 && cols.is_multiple_of(h), "{cols} columns do not split into {h} heads");
    }
    let rows = pattern.out_rows(transpose);
    with_real!(x.dtype(), T => {
        let weights = match &w {
            Some(w) if w.shape()[1] == 1 => Weights::Column(slice::<T>(w)),
            Some(w) => Weights::Heads(slice::<T>(w), w.shape()[1]),
            None => Weights::Ones,
        };
        from_vec(spmm_kernel(slice::<T>(&x), cols, weights, pattern, transpose), rows, cols)
    })
}

impl GraphOps for Flex {
    fn pointwise(x: FlexTensor, value: FlexTensor, slope: FlexTensor) -> FlexTensor {
        assert!(x.shape() == value.shape() && x.shape() == slope.shape(), "pointwise: value and slope are shaped as x");
        value
    }

    fn edge_softmax(a_src: FlexTensor, a_dst: FlexTensor, pattern: SharedPattern, negative_slope: f64) -> FlexTensor {
        let heads = check_scores(&a_src, &a_dst, &pattern);
        let (a_src, a_dst) = (contiguous(&a_src), contiguous(&a_dst));
        with_real!(a_src.dtype(), T => {
            let alpha = edge_softmax_kernel(slice::<T>(&a_src), slice(&a_dst), heads, &pattern, T::from_f64(negative_slope));
            from_vec(alpha, pattern.len(), heads)
        })
    }

    fn edge_softmax_grad(
        a_src: FlexTensor,
        a_dst: FlexTensor,
        alpha: FlexTensor,
        grad: FlexTensor,
        pattern: SharedPattern,
        negative_slope: f64,
    ) -> FlexTensor {
        let heads = check_scores(&a_src, &a_dst, &pattern);
        let (alpha, grad) = (contiguous(&alpha), contiguous(&grad));
        let (a_src, a_dst) = (contiguous(&a_src), contiguous(&a_dst));
        assert_eq!((dims2(&alpha), dims2(&grad)), ([pattern.len(), heads], [pattern.len(), heads]), "edge softmax gradient shapes");
        with_real!(a_src.dtype(), T => {
            let pre = edge_softmax_grad_kernel(
                slice::<T>(&a_src),
                slice(&a_dst),
                slice(&alpha),
                slice(&grad),
                heads,
                &pattern,
                T::from_f64(negative_slope),
            );
            from_vec(pre, pattern.len(), heads)
        })
    }

    fn spmm(x: FlexTensor, pattern: SharedPattern, transpose: bool) -> FlexTensor {
        flex_spmm(x, None, &pattern, transpose)
    }

    fn spmm_weighted(x: FlexTensor, w: FlexTensor, pattern: SharedPattern, transpose: bool) -> FlexTensor {
        flex_spmm(x, Some(w), &pattern, transpose)
    }

    fn sddmm(a: FlexTensor, b: FlexTensor, pattern: SharedPattern, transpose: bool, heads: usize) -> FlexTensor {
        let [ra, cols] = dims2(&a);
        let [rb, cb] = dims2(&b);
        assert_eq!((ra, rb, cb), (pattern.out_rows(transpose), pattern.in_rows(transpose), cols), "sddmm shapes");
        assert!(heads > 0 && cols.is_multiple_of(heads), "{cols} columns do not split into {heads} heads");
        let (a, b) = (contiguous(&a), contiguous(&b));
        with_real!(a.dtype(), T => {
            from_vec(sddmm_kernel(slice::<T>(&a), slice(&b), cols, heads, &pattern, transpose), pattern.len(), heads)
        })
    }
}

// ---------------------------------------------------------------------------------------
// Backward passes

impl<B: Backend + GraphOps, C: CheckpointStrategy> GraphOps for Autodiff<B, C> {
    fn pointwise(x: FloatTensor<Self>, value: FloatTensor<Self>, slope: FloatTensor<Self>) -> FloatTensor<Self> {
        /// d out / d x = slope, element-wise (the product in burn's own form).
        #[derive(Debug)]
        struct Pointwise;

        impl<B: Backend + GraphOps> Backward<B, 1> for Pointwise {
            type State = FloatTensor<B>;

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
                let slope = ops.state;
                unary::<B, _>(ops.parents, ops.node, grads, |grad| B::float_mul(grad, slope));
            }
        }

        let (x, node) = x.into_parts();
        let (value, slope) = (value.into_primitive(), slope.into_primitive());
        let value = B::pointwise(x, value, slope.clone());
        match Pointwise.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(slope, value),
            OpsKind::UnTracked(prep) => prep.finish(value),
        }
    }

    fn spmm(x: FloatTensor<Self>, pattern: SharedPattern, transpose: bool) -> FloatTensor<Self> {
        /// d out / d x is the product over the transposed pattern.
        #[derive(Debug)]
        struct Spmm;

        impl<B: Backend + GraphOps> Backward<B, 1> for Spmm {
            type State = (SharedPattern, bool);

            fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _: &mut Checkpointer) {
                let (pattern, transpose) = ops.state;
                unary::<B, _>(ops.parents, ops.node, grads, |grad| B::spmm(grad, pattern, !transpose));
            }
        }

        let (x, node) = x.into_parts();
        match Spmm.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((pattern.clone(), transpose), B::spmm(x, pattern, transpose)),
            OpsKind::UnTracked(prep) => prep.finish(B::spmm(x, pattern, transpose)),
        }
    }

    fn spmm_weighted(x: FloatTensor<Self>, w: FloatTensor<Self>, pattern: SharedPattern, transpose: bool) -> FloatTensor<Self> {
        /// d/dx: the weighted product over the transposed pattern; d/dw: `sddmm` of the
        /// output gradient with x.
        #[derive(Debug)]
        struct SpmmWeighted;

        impl<B: Backend + GraphOps> Backward<B, 2> for SpmmWeighted {
            /// (x if w needs a gradient, w if x needs one, pattern, transpose, heads)
            type State = (Option<NodeId>, Option<NodeId>, SharedPattern, bool, usize);

            fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let (x_id, w_id, pattern, transpose, heads) = ops.state;
                let x: Option<FloatTensor<B>> = x_id.map(|id| checkpointer.retrieve_node_output(id));
                let w: Option<FloatTensor<B>> = w_id.map(|id| checkpointer.retrieve_node_output(id));
                let grad = grads.consume::<B>(&ops.node);
                let [x_node, w_node] = ops.parents;
                if let Some(node) = w_node {
                    let x = x.expect("x kept for the weights' gradient");
                    grads.register::<B>(node.id, B::sddmm(grad.clone(), x, pattern.clone(), transpose, heads));
                }
                if let Some(node) = x_node {
                    let w = w.expect("w kept for the input's gradient");
                    grads.register::<B>(node.id, B::spmm_weighted(grad, w, pattern, !transpose));
                }
            }
        }

        let heads = w.primitive().shape()[1];
        let x_tracked = x.is_tracked();
        let w_tracked = w.is_tracked();
        match SpmmWeighted.prepare::<C>([x.node(), w.node()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let x_state = w_tracked.then(|| prep.checkpoint(&x));
                let w_state = x_tracked.then(|| prep.checkpoint(&w));
                let out = B::spmm_weighted(x.into_primitive(), w.into_primitive(), pattern.clone(), transpose);
                prep.finish((x_state, w_state, pattern, transpose, heads), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::spmm_weighted(x.into_primitive(), w.into_primitive(), pattern, transpose)),
        }
    }

    fn sddmm(a: FloatTensor<Self>, b: FloatTensor<Self>, pattern: SharedPattern, transpose: bool, heads: usize) -> FloatTensor<Self> {
        /// out[e] = ⟨a[t_e], b[s_e]⟩ per head: d/da[t] = Σ_{e into t} g_e·b[s_e] (a weighted
        /// product), d/db[s] = Σ_{e from s} g_e·a[t_e] (the same, transposed).
        #[derive(Debug)]
        struct Sddmm;

        impl<B: Backend + GraphOps> Backward<B, 2> for Sddmm {
            /// (b if a needs a gradient, a if b needs one, pattern, transpose)
            type State = (Option<NodeId>, Option<NodeId>, SharedPattern, bool);

            fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let (b_id, a_id, pattern, transpose) = ops.state;
                let b: Option<FloatTensor<B>> = b_id.map(|id| checkpointer.retrieve_node_output(id));
                let a: Option<FloatTensor<B>> = a_id.map(|id| checkpointer.retrieve_node_output(id));
                let grad = grads.consume::<B>(&ops.node);
                let [a_node, b_node] = ops.parents;
                if let Some(node) = a_node {
                    let b = b.expect("b kept for a's gradient");
                    grads.register::<B>(node.id, B::spmm_weighted(b, grad.clone(), pattern.clone(), transpose));
                }
                if let Some(node) = b_node {
                    let a = a.expect("a kept for b's gradient");
                    grads.register::<B>(node.id, B::spmm_weighted(a, grad, pattern, !transpose));
                }
            }
        }

        let a_tracked = a.is_tracked();
        let b_tracked = b.is_tracked();
        match Sddmm.prepare::<C>([a.node(), b.node()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let b_state = a_tracked.then(|| prep.checkpoint(&b));
                let a_state = b_tracked.then(|| prep.checkpoint(&a));
                let out = B::sddmm(a.into_primitive(), b.into_primitive(), pattern.clone(), transpose, heads);
                prep.finish((b_state, a_state, pattern, transpose), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::sddmm(a.into_primitive(), b.into_primitive(), pattern, transpose, heads)),
        }
    }

    fn edge_softmax(a_src: FloatTensor<Self>, a_dst: FloatTensor<Self>, pattern: SharedPattern, negative_slope: f64) -> FloatTensor<Self> {
        /// Through the softmax and the LeakyReLU to the pre-activation gradient per edge,
        /// then summed per source (d/da_src) and per target (d/da_dst).
        #[derive(Debug)]
        struct EdgeSoftmax;

        impl<B: Backend + GraphOps> Backward<B, 2> for EdgeSoftmax {
            /// (a_src, a_dst, α, pattern, slope)
            type State = (NodeId, NodeId, FloatTensor<B>, SharedPattern, f64);

            fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, checkpointer: &mut Checkpointer) {
                let (src_id, dst_id, alpha, pattern, slope) = ops.state;
                let a_src: FloatTensor<B> = checkpointer.retrieve_node_output(src_id);
                let a_dst: FloatTensor<B> = checkpointer.retrieve_node_output(dst_id);
                let grad = grads.consume::<B>(&ops.node);
                let shape = a_src.shape();
                let (device, dtype) = (a_src.device(), a_src.dtype().into());
                let pre = B::edge_softmax_grad(a_src, a_dst, alpha, grad, pattern.clone(), slope);
                let ones = B::float_ones(shape, &device, dtype);
                let [src_node, dst_node] = ops.parents;
                if let Some(node) = dst_node {
                    grads.register::<B>(node.id, B::spmm_weighted(ones.clone(), pre.clone(), pattern.clone(), false));
                }
                if let Some(node) = src_node {
                    grads.register::<B>(node.id, B::spmm_weighted(ones, pre, pattern, true));
                }
            }
        }

        match EdgeSoftmax.prepare::<C>([a_src.node(), a_dst.node()]).compute_bound().stateful() {
            OpsKind::Tracked(mut prep) => {
                let src_state = prep.checkpoint(&a_src);
                let dst_state = prep.checkpoint(&a_dst);
                let alpha = B::edge_softmax(a_src.into_primitive(), a_dst.into_primitive(), pattern.clone(), negative_slope);
                prep.finish((src_state, dst_state, alpha.clone(), pattern, negative_slope), alpha)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::edge_softmax(a_src.into_primitive(), a_dst.into_primitive(), pattern, negative_slope))
            }
        }
    }

    fn edge_softmax_grad(
        a_src: FloatTensor<Self>,
        a_dst: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        pattern: SharedPattern,
        negative_slope: f64,
    ) -> FloatTensor<Self> {
        // Only the backward pass above calls it, on the inner backend's tensors; a second
        // derivative of GAT's attention has no user.
        let _ = (a_src, a_dst, alpha, grad, pattern, negative_slope);
        panic!("edge_softmax_grad is not differentiable: it is called only inside backward passes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every entry of a product is the running sum from +0 over its row's edges in edge
    /// order (`acc + w·x`, or `acc + x` unweighted), bit for bit, whatever blocks of
    /// columns the registers hold: every width up to 18, then widths around each block
    /// size (… 700 columns), rows without edges, the
    /// register budgets of the portable, AVX2 and AVX-512 code (and this CPU's own),
    /// source blocks (tiled), one weight per edge and none, both directions, f32 and f64;
    /// every entry written (the output is not zeroed first).
    #[test]
    fn spmm_sums_each_entry_in_edge_order() {
        fn check<T: Real + std::fmt::Debug>(seed: u64, bits: fn(T) -> u64) {
            let mut r = crate::rng::derive(seed, "test-spmm", &[]);
            use rand::Rng as _;
            // Every width below a block (each its own code) and past one (a tail after
            // blocks), then around each wider block size.
            let narrow = (1..=18).chain([31, 47]).map(|cols| (8, 24, cols));
            let wide = [(12, 40, 16), (20, 90, 33), (15, 60, 64), (30, 200, 100), (25, 300, 512), (11, 70, 700), (5, 0, 40), (5, 0, 7)];
            for (rows, edges, cols) in narrow.chain(wide) {
                let x: Vec<T> = (0..rows * cols).map(|_| T::from_f64(r.random::<f64>() * 2.0 - 1.0)).collect();
                let w: Vec<T> = (0..edges).map(|_| T::from_f64(r.random::<f64>())).collect();
                let src: Vec<u32> = (0..edges).map(|_| r.random_range(0..rows as u32)).collect();
                let dst: Vec<u32> = (0..edges).map(|_| r.random_range(0..rows as u32)).collect();
                let pattern = Pattern::new(&src, &dst, rows, rows);
                for transpose in [false, true] {
                    let (read, write) = if transpose { (&dst, &src) } else { (&src, &dst) };
                    for weighted in [false, true] {
                        let mut want = vec![T::default(); rows * cols];
                        for e in 0..edges {
                            let (t, s) = (write[e] as usize, read[e] as usize);
                            for j in 0..cols {
                                let v = x[s * cols + j];
                                let o = &mut want[t * cols + j];
                                *o = if weighted { *o + w[e] * v } else { *o + v };
                            }
                        }
                        let weights = if weighted { Weights::Column(&w) } else { Weights::Ones };
                        let what = format!("{rows} rows, {edges} edges, {cols} columns, transpose {transpose}, weighted {weighted}");
                        let got = spmm_kernel(&x, cols, weights, &pattern, transpose);
                        assert_eq!(
                            got.into_iter().map(bits).collect::<Vec<_>>(),
                            want.iter().map(|&v| bits(v)).collect::<Vec<_>>(),
                            "{what}"
                        );
                        let (groups, _, _) = pattern.view(transpose);
                        let reordered = groups.gather(&w, 1);
                        let weights = if weighted { Weights::Column(&reordered) } else { Weights::Ones };
                        for (register_bytes, tiled) in [(128, false), (256, false), (1024, false), (1024, true)] {
                            let job = SpmmJob { x: &x, cols, weights, groups, tiled };
                            // NaN where the job failed to write.
                            let mut got = vec![MaybeUninit::new(T::from_f64(f64::NAN)); rows * cols];
                            job.rows_portable(&mut got, 0, register_bytes);
                            assert_eq!(
                                // SAFETY: every entry was initialised (NaN) before the job ran.
                                got.into_iter().map(|v| bits(unsafe { v.assume_init() })).collect::<Vec<_>>(),
                                want.iter().map(|&v| bits(v)).collect::<Vec<_>>(),
                                "{what}, {register_bytes} register bytes, tiled {tiled}"
                            );
                        }
                    }
                }
            }
        }
        check::<f32>(1, |v| u64::from(v.to_bits()));
        check::<f64>(2, f64::to_bits);
    }

    /// With a weight per edge and head (GAT's), every entry is the running sum from +0
    /// over its row's edges in edge order of `w[e, head] · x`, bit for bit: heads of the
    /// widths summed several to a walk (4, 8, 16, 32 columns) and of others (1, 7, 12),
    /// 2 to 12 heads (more than one walk holds), rows without edges, both directions, the
    /// register budgets of the portable, AVX2 and AVX-512 code and this CPU's own, f32
    /// and f64; every entry written.
    #[test]
    fn spmm_sums_each_heads_entry_in_edge_order() {
        fn check<T: Real + std::fmt::Debug>(seed: u64, bits: fn(T) -> u64) {
            let mut r = crate::rng::derive(seed, "test-spmm-heads", &[]);
            use rand::Rng as _;
            for (heads, head_cols) in
                [(2, 4), (8, 4), (3, 8), (8, 8), (2, 16), (8, 16), (12, 16), (4, 32), (9, 32), (4, 1), (8, 7), (3, 12)]
            {
                let (rows, edges, cols) = (14, 50, heads * head_cols);
                let x: Vec<T> = (0..rows * cols).map(|_| T::from_f64(r.random::<f64>() * 2.0 - 1.0)).collect();
                let w: Vec<T> = (0..edges * heads).map(|_| T::from_f64(r.random::<f64>())).collect();
                // The last row receives and sends nothing.
                let src: Vec<u32> = (0..edges).map(|_| r.random_range(0..rows as u32 - 1)).collect();
                let dst: Vec<u32> = (0..edges).map(|_| r.random_range(0..rows as u32 - 1)).collect();
                let pattern = Pattern::new(&src, &dst, rows, rows);
                for transpose in [false, true] {
                    let (read, write) = if transpose { (&dst, &src) } else { (&src, &dst) };
                    let mut want = vec![T::default(); rows * cols];
                    for e in 0..edges {
                        let (t, s) = (write[e] as usize, read[e] as usize);
                        for j in 0..cols {
                            let o = &mut want[t * cols + j];
                            *o += w[e * heads + j / head_cols] * x[s * cols + j];
                        }
                    }
                    let want: Vec<u64> = want.into_iter().map(bits).collect();
                    let what = format!("{heads} heads of {head_cols} columns, transpose {transpose}");
                    let got = spmm_kernel(&x, cols, Weights::Heads(&w, heads), &pattern, transpose);
                    assert_eq!(got.into_iter().map(bits).collect::<Vec<_>>(), want, "{what}");
                    let (groups, _, _) = pattern.view(transpose);
                    let reordered = groups.gather(&w, heads);
                    for register_bytes in [128, 256, 1024] {
                        let job = SpmmJob { x: &x, cols, weights: Weights::Heads(&reordered, heads), groups, tiled: false };
                        // NaN where the job failed to write.
                        let mut got = vec![MaybeUninit::new(T::from_f64(f64::NAN)); rows * cols];
                        job.rows_portable(&mut got, 0, register_bytes);
                        // SAFETY: every entry was initialised (NaN) before the job ran.
                        let got: Vec<u64> = got.into_iter().map(|v| bits(unsafe { v.assume_init() })).collect();
                        assert_eq!(got, want, "{what}, {register_bytes} register bytes");
                    }
                }
            }
        }
        check::<f32>(3, |v| u64::from(v.to_bits()));
        check::<f64>(4, f64::to_bits);
    }

    /// Each edge's row lands where the edge is, whatever the head count (the widths with
    /// their own moves and one without) and however the targets split into runs: a
    /// random pattern of 20 000 edges (several runs), its self loops last as GAT's.
    #[test]
    fn per_target_puts_each_edges_row_where_the_edge_is() {
        let mut r = crate::rng::derive(7, "test-per-target", &[]);
        use rand::Rng as _;
        let n = 400;
        let mut src: Vec<u32> = (0..20_000).map(|_| r.random_range(0..n as u32)).collect();
        let mut dst: Vec<u32> = (0..20_000).map(|_| r.random_range(0..n as u32)).collect();
        src.extend(0..n as u32);
        dst.extend(0..n as u32);
        let pattern = Pattern::new(&src, &dst, n, n);
        for heads in [1, 2, 3, 4, 8] {
            assert!(rows_per_task(n, pattern.len() * heads * 8) < n, "one run only");
            let got = per_target::<f64>(&pattern, heads, |t, edges, row| {
                for (i, &e) in edges.iter().enumerate() {
                    assert_eq!(dst[e as usize] as usize, t);
                    for k in 0..heads {
                        row[i * heads + k] = (e as usize * 10 + k) as f64;
                    }
                }
            });
            let want: Vec<f64> = (0..pattern.len()).flat_map(|e| (0..heads).map(move |k| (e * 10 + k) as f64)).collect();
            assert!(got == want, "{heads} heads");
        }
    }

    /// SDDMM's values are each edge's [`Real::dot`], bit for bit, taken four edges at a
    /// time (into one target or several) or one by one: edge counts around multiples of
    /// 4, widths with and without a tail past the eight lanes, heads narrower than the
    /// lanes (all tail, e.g. 7 classes), one head and several, both directions.
    #[test]
    fn sddmm_sums_each_edge_as_dot() {
        let mut r = crate::rng::derive(5, "test-sddmm", &[]);
        use rand::Rng as _;
        for (rows, edges, cols, heads) in [
            (7, 1, 8, 1),
            (9, 6, 13, 1),
            (40, 103, 64, 1),
            (30, 64, 512, 1),
            (12, 37, 24, 3),
            (25, 50, 90, 2),
            (20, 45, 7, 1),
            (16, 30, 12, 2),
        ] {
            let a: Vec<f32> = (0..rows * cols).map(|_| r.random::<f32>() - 0.5).collect();
            let b: Vec<f32> = (0..rows * cols).map(|_| r.random::<f32>() * 3.0 - 1.0).collect();
            let src: Vec<u32> = (0..edges).map(|_| r.random_range(0..rows as u32)).collect();
            let mut dst: Vec<u32> = (0..edges).map(|_| r.random_range(0..rows as u32)).collect();
            // Every other graph with its edges grouped by target, as graphs come: runs of
            // four edges into one target (read once) and runs that straddle two.
            if rows % 2 == 0 {
                dst.sort_unstable();
            }
            let pattern = Pattern::new(&src, &dst, rows, rows);
            let hc = cols / heads;
            for transpose in [false, true] {
                let (read, write) = if transpose { (&dst, &src) } else { (&src, &dst) };
                let want: Vec<f32> = (0..edges)
                    .flat_map(|e| {
                        let (t, s) = (write[e] as usize, read[e] as usize);
                        let (a, b) = (&a, &b);
                        (0..heads).map(move |k| {
                            f32::dot(&a[t * cols + k * hc..t * cols + (k + 1) * hc], &b[s * cols + k * hc..s * cols + (k + 1) * hc])
                        })
                    })
                    .collect();
                let got = sddmm_kernel(&a, &b, cols, heads, &pattern, transpose);
                assert_eq!(
                    got.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    want.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
                    "{rows} rows, {edges} edges, {cols} × {heads}, transpose {transpose}"
                );
                // Each compiled path this CPU can run, not only the one dispatch picks.
                let (_, read, write) = pattern.view(transpose);
                let job = SddmmJob { a: &a, b: &b, cols, heads, read, write };
                let mut paths: Vec<(&str, Vec<f32>)> = vec![("portable", vec![0.0; edges * heads])];
                job.edges_portable(&mut paths[0].1, 0);
                #[cfg(target_arch = "x86_64")]
                for isa in crate::simd::Isa::on_this_cpu() {
                    let mut out = vec![0.0; edges * heads];
                    match isa {
                        // SAFETY: the CPU has the set (`on_this_cpu`).
                        crate::simd::Isa::Avx512 => unsafe { job.edges_avx512(&mut out, 0) },
                        // SAFETY: as above.
                        crate::simd::Isa::Avx2 => unsafe { job.edges_avx2(&mut out, 0) },
                        crate::simd::Isa::Portable => continue,
                    }
                    paths.push((isa.name(), out));
                }
                for (name, out) in paths {
                    assert!(
                        out.iter().zip(&want).all(|(x, y)| x.to_bits() == y.to_bits()),
                        "{name}: {rows} rows, {edges} edges, {cols} × {heads}"
                    );
                }
            }
        }
    }

    /// GAT's edge softmax and its gradient, each head's values bit for bit what that head
    /// alone gives when computed the plain way — its edges in edge order, the standard
    /// library's `exp` (libm's):
    /// head counts up to a block and past it (20: a full block and a partial one), f32 and
    /// f64, logits large enough that some exponentials underflow, on every compiled path
    /// this CPU can run.
    #[test]
    fn edge_softmax_is_each_heads_softmax_alone() {
        fn check<T: Real + std::fmt::Debug>(heads: usize, seed: u64, std_exp: fn(T) -> T, bits: fn(T) -> u64) {
            let mut r = crate::rng::derive(seed, "test-edge-softmax", &[heads as u64]);
            use rand::Rng as _;
            let (rows, edges) = (30, 140);
            // Scores of every scale: heads 0, 3, 6, … spread far enough that exp(l − max)
            // underflows for some edges (below −104 in f32, −745 in f64).
            let scale = |k: usize| if k.is_multiple_of(3) { 2000.0 } else { 3.0 };
            let a_src: Vec<T> = (0..rows * heads).map(|i| T::from_f64((r.random::<f64>() * 2.0 - 1.0) * scale(i % heads))).collect();
            let a_dst: Vec<T> = (0..rows * heads).map(|i| T::from_f64((r.random::<f64>() * 2.0 - 1.0) * scale(i % heads))).collect();
            let grad: Vec<T> = (0..edges * heads).map(|_| T::from_f64(r.random::<f64>() * 2.0 - 1.0)).collect();
            let src: Vec<u32> = (0..edges).map(|_| r.random_range(0..rows as u32)).collect();
            let dst: Vec<u32> = (0..edges).map(|_| r.random_range(0..rows as u32 - 2)).collect(); // two targets without edges
            let pattern = Pattern::new(&src, &dst, rows, rows);
            let slope = T::from_f64(0.2);
            let leaky = |x: T| if x > T::default() { x } else { slope * x };
            let (mut alpha, mut pre) = (vec![T::default(); edges * heads], vec![T::default(); edges * heads]);
            for t in 0..rows {
                let into: Vec<usize> = (0..edges).filter(|&e| dst[e] as usize == t).collect();
                for k in 0..heads {
                    let logit = |e: usize| leaky(a_src[src[e] as usize * heads + k] + a_dst[t * heads + k]);
                    let max = into.iter().map(|&e| logit(e)).fold(T::NEG_INFINITY, |m, l| if l > m { l } else { m });
                    let p: Vec<T> = into.iter().map(|&e| std_exp(logit(e) - max)).collect();
                    let sum = p.iter().fold(T::default(), |s, &p| s + p);
                    for (&e, &p) in into.iter().zip(&p) {
                        alpha[e * heads + k] = p / sum;
                    }
                    let dot = into.iter().fold(T::default(), |d, &e| d + alpha[e * heads + k] * grad[e * heads + k]);
                    for &e in &into {
                        let j = e * heads + k;
                        let g = alpha[j] * (grad[j] - dot);
                        pre[j] = if a_src[src[e] as usize * heads + k] + a_dst[t * heads + k] > T::default() { g } else { slope * g };
                    }
                }
            }
            assert!(alpha.iter().any(|&a| a == T::default()), "no exponential underflowed: the test misses that range");
            let scores = Scores { a_src: &a_src, a_dst: &a_dst, heads, src: &pattern.src, slope };
            type Path<T> = fn(&Scores<'_, T>, Pass<'_, T>, usize, &[u32], &mut [T]);
            let mut paths: Vec<(&str, Path<T>)> = vec![("portable", |s, p, t, e, r| s.target(p, t, e, r))];
            for isa in crate::simd::Isa::on_this_cpu() {
                paths.push(match isa {
                    crate::simd::Isa::Avx512 => ("avx512", |s, p, t, e, r| s.dispatch(crate::simd::Isa::Avx512, p, t, e, r)),
                    crate::simd::Isa::Avx2 => ("avx2", |s, p, t, e, r| s.dispatch(crate::simd::Isa::Avx2, p, t, e, r)),
                    crate::simd::Isa::Portable => {
                        ("dispatched portable", |s, p, t, e, r| s.dispatch(crate::simd::Isa::Portable, p, t, e, r))
                    }
                });
            }
            let b = |v: &[T]| v.iter().map(|&x| bits(x)).collect::<Vec<_>>();
            for (name, path) in paths {
                let got = per_target(&pattern, heads, |t, e, row| path(&scores, Pass::Softmax, t, e, row));
                assert_eq!(b(&got), b(&alpha), "{name}: α, {heads} heads");
                let got = per_target(&pattern, heads, |t, e, row| path(&scores, Pass::Gradient { alpha: &alpha, grad: &grad }, t, e, row));
                assert_eq!(b(&got), b(&pre), "{name}: gradient, {heads} heads");
            }
        }
        for heads in [1, 2, 3, 8, 20] {
            check::<f32>(heads, 1, f32::exp, |x| u64::from(x.to_bits()));
            check::<f64>(heads, 2, f64::exp, f64::to_bits);
        }
    }
}

//! A [`Graph`] moved onto a device once: directed edge index tensors (with and without
//! self loops) and the per-edge weights of each normalisation, so that every forward
//! pass only gathers and scatters.

use std::sync::{Arc, OnceLock};

use burn::tensor::{Tensor, TensorCreationOptions};

use super::propagate::{Edges, Strategy, column};
use super::spmm;
use crate::data::graph::Graph;
use crate::error::{Error, Result};

/// How the messages into a node are weighted before summing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// Plain sum over neighbours.
    Sum,
    /// Mean over neighbours, 1/deg(v); a node without neighbours receives 0
    /// (PyG's `mean` aggregation, used by SAGEConv).
    Mean,
    /// GCN: self loops added, weight 1/sqrt(d̂_u·d̂_v) with d̂ = deg + 1 (PyG `gcn_norm`).
    Gcn,
    /// Symmetric normalisation without self loops, 1/sqrt(d_u·d_v); an isolated node
    /// receives 0 (PyG `gcn_norm(add_self_loops=False)`, LPGNN's KProp).
    Sym,
}

/// The smallest weighted in-degree [`GraphTensors::with_edge_weights`] divides by.
const MIN_DEGREE: f64 = 1e-6;

/// Device-side edge lists and normalisation weights of one graph.
///
/// Edges are `u → v` for every neighbour `u` of `v`, grouped by target `v` (the CSR row
/// order), so both directions of every undirected edge are present. The self-looped set
/// is the same list followed by `v → v` for every node.
#[derive(Debug, Clone)]
pub struct GraphTensors {
    num_nodes: usize,
    /// Built on first use from `plain`'s lists where the graph is unweighted: a GCN
    /// propagates over the self-looped set only (DP-GNN builds a graph per batch).
    edges: OnceLock<Edges>,
    looped: Edges,
    /// Each normalisation's weights, built on first use, since a model uses one (GCN's,
    /// SAGE's mean, KProp's symmetric): from the degrees for an unweighted graph; for a
    /// learned adjacency ([`with_edge_weights`](Self::with_edge_weights)) with tensor
    /// ops, each costing powers of the degrees every time the adjacency steps.
    mean_w: OnceLock<Tensor<2>>,
    sym_w: OnceLock<Tensor<2>>,
    gcn_w: OnceLock<Tensor<2>>,
    /// The adjacency given to [`with_edge_weights`](Self::with_edge_weights), if any.
    learned: Option<Learned>,
    /// An unweighted graph's edge lists and degrees on the host, shared by clones.
    plain: Option<Arc<Plain>>,
    /// The ops chosen by [`with_strategy`](Self::with_strategy), for edges built later.
    strategy: Option<Strategy>,
}

/// An unweighted graph on the host: the self-looped set's arcs `src[e] → dst[e]` — the
/// first `arcs` the graph's own, grouped by target, then one loop per node —, the
/// in-degrees, and where its tensors go.
#[derive(Debug)]
struct Plain {
    src: Vec<u32>,
    dst: Vec<u32>,
    arcs: usize,
    deg: Vec<f64>,
    options: TensorCreationOptions,
}

impl Plain {
    /// `norm`'s weights per edge (GCN's followed by the self loops'), in f64 as PyG's
    /// formulas give them.
    fn weights(&self, norm: Norm) -> Vec<f64> {
        let deg = &self.deg;
        let arcs = self.src[..self.arcs].iter().zip(&self.dst[..self.arcs]).map(|(&u, &v)| (deg[u as usize], deg[v as usize]));
        match norm {
            Norm::Sum => unreachable!("the plain sum is unweighted"),
            // d_v ≥ 1 at every arc's target (the arc enters v); d_u is 0 only in a directed graph.
            Norm::Mean => arcs.map(|(_, dv)| 1.0 / dv).collect(),
            Norm::Sym => arcs.map(|(du, dv)| if du > 0.0 { 1.0 / (du * dv).sqrt() } else { 0.0 }).collect(),
            Norm::Gcn => arcs.map(|(du, dv)| 1.0 / ((du + 1.0) * (dv + 1.0)).sqrt()).chain(deg.iter().map(|d| 1.0 / (d + 1.0))).collect(),
        }
    }
}

/// A learned adjacency: the weights (a checkpoint keeps it by them), their in-degrees,
/// and those gathered at every edge's source and target — once, for every
/// normalisation, so the autodiff graph and the order in which the degrees' gradients
/// add up are those of building every normalisation at once.
#[derive(Debug, Clone)]
struct Learned {
    weights: Tensor<2>,
    degrees: Tensor<2>,
    gathered: OnceLock<(Tensor<2>, Tensor<2>)>,
}

impl GraphTensors {
    /// Build on the device (and float dtype) given by `options`, e.g. `&device` or
    /// `(&device, DType::F64)`. Use the model's float dtype. Build on the plain
    /// (non-autodiff) device: the same tensors then serve a training model on
    /// `device.autodiff()` (an operation with any autodiff operand runs with autodiff)
    /// and an evaluation model without autodiff overhead.
    pub fn new(graph: &Graph, options: impl Into<TensorCreationOptions>) -> Result<GraphTensors> {
        Self::from_senders(graph.num_nodes(), |v| graph.neighbors(v), options)
    }

    /// A directed graph of `n` nodes given by the sources of the edges into each node
    /// (`senders(v)`, no self loops), e.g. per-node computation graphs in which messages
    /// flow towards a root only. Degrees are in-degrees, as PyG computes them at the
    /// target: GCN weighs `u → v` by 1/sqrt((d_u + 1)(d_v + 1)), the mean divides by
    /// d_v, and `Sym` gives 0 to edges out of a node without incoming edges.
    pub fn from_senders<'a>(
        n: usize,
        senders: impl Fn(usize) -> &'a [u32],
        options: impl Into<TensorCreationOptions>,
    ) -> Result<GraphTensors> {
        let options = options.into();
        if n == 0 {
            return Err(Error::param("graph", "a model needs at least one node"));
        }
        let deg: Vec<f64> = (0..n).map(|v| senders(v).len() as f64).collect();
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for v in 0..n {
            for &u in senders(v) {
                src.push(u);
                dst.push(v as u32);
            }
        }
        let arcs = src.len();
        src.extend(0..n as u32);
        dst.extend(0..n as u32);
        let looped = Edges::new(&src, &dst, n, n, &options);
        Ok(GraphTensors {
            num_nodes: n,
            edges: OnceLock::new(),
            looped,
            mean_w: OnceLock::new(),
            sym_w: OnceLock::new(),
            gcn_w: OnceLock::new(),
            learned: None,
            plain: Some(Arc::new(Plain { src, dst, arcs, deg, options })),
            strategy: None,
        })
    }

    pub fn num_nodes(&self) -> usize {
        self.num_nodes
    }

    /// The same edges weighted by `w` (`[E, 1]`, one weight ≥ 0 per edge of [`edges`](Self::edges),
    /// in its order), e.g. a learned adjacency. Every normalisation is recomputed from the
    /// weighted in-degrees d_v = Σ_{u→v} w_uv with tensor ops, so gradients reach `w`:
    /// `Mean` w_uv/d_v, `Sym` w_uv/sqrt(d_u·d_v) (0 where either is 0), `Gcn`
    /// w_uv/sqrt((d_u + 1)(d_v + 1)) and self loops 1/(d_v + 1). All-ones `w` gives the
    /// unweighted tensors. `Sum` stays unweighted (GAT weighs edges by attention).
    pub fn with_edge_weights(&self, w: Tensor<2>) -> GraphTensors {
        let edges = self.edges();
        if edges.is_empty() {
            return self.clone();
        }
        assert_eq!(w.dims(), [edges.len(), 1], "one weight per edge");
        let deg = edges.scatter_add(w.clone());
        GraphTensors {
            num_nodes: self.num_nodes,
            edges: OnceLock::from(edges.clone()),
            looped: self.looped.clone(),
            mean_w: OnceLock::new(),
            sym_w: OnceLock::new(),
            gcn_w: OnceLock::new(),
            learned: Some(Learned { weights: w, degrees: deg, gathered: OnceLock::new() }),
            plain: None,
            strategy: self.strategy,
        }
    }

    /// `norm`'s weights of the learned adjacency.
    fn weighted(&self, norm: Norm, learned: &Learned) -> Tensor<2> {
        let Learned { weights: w, degrees: deg, gathered } = learned;
        // The floor keeps every gradient finite where a node's in-weights all reach 0 (a
        // learned adjacency removing them): d^{-1.5} at 1e-30 overflows f32, and 0·inf
        // would make the masked gradient NaN. Weights are ≥ 0, so d < 1e-6 only there.
        let edges = self.edges();
        let (d_src, d_dst) = gathered.get_or_init(|| (edges.gather_src(deg.clone()), edges.gather_dst(deg.clone())));
        let (d_src, d_dst) = (d_src.clone(), d_dst.clone());
        // d^-1/2 of the degrees gathered at the edges' sources and targets, each `d` after
        // `pre` (per edge, tracked). On burn-flex computed once per node and gathered,
        // burn's powf backward given per edge (`spmm::pointwise`): the same values and
        // gradients as a power per edge, at a node's cost (a reported graph of edge RR
        // has ~75 arcs per node on a Cora client at ε = 1). Elsewhere a power per edge.
        let inv_sqrt_ends = |pre: &dyn Fn(Tensor<2>) -> Tensor<2>| {
            let (d_src, d_dst) = (d_src.clone(), d_dst.clone());
            if edges.strategy() != Strategy::Fused {
                return [pre(d_src).powf_scalar(-0.5), pre(d_dst).powf_scalar(-0.5)];
            }
            let node = pre(deg.clone().detach());
            let (value, slope) = (node.clone().powf_scalar(-0.5), node.powf_scalar(-1.5).mul_scalar(-0.5));
            let at = |d: Tensor<2>, at_src: bool| {
                let gather = |t: &Tensor<2>| edges.gather_constant(t.clone(), at_src);
                spmm::pointwise(pre(d), gather(&value), gather(&slope))
            };
            [at(d_src, true), at(d_dst, false)]
        };
        let positive = |d: &Tensor<2>| d.clone().greater_elem(0.0).float();
        match norm {
            Norm::Sum => unreachable!("the plain sum is unweighted"),
            Norm::Mean => w.clone() / d_dst.clamp_min(MIN_DEGREE),
            Norm::Sym => {
                let [s, t] = inv_sqrt_ends(&|d| d.clamp_min(MIN_DEGREE));
                w.clone() * (positive(&d_src) * s) * (positive(&d_dst) * t)
            }
            Norm::Gcn => {
                let [s, t] = inv_sqrt_ends(&|d| d.add_scalar(1.0));
                let edges = w.clone() * s * t;
                Tensor::cat(vec![edges, deg.clone().add_scalar(1.0).recip()], 0)
            }
        }
    }

    /// The edge weights these tensors were built with (`None`: unweighted), on the host.
    pub fn edge_weights(&self) -> Option<Vec<f32>> {
        let w = &self.learned.as_ref()?.weights;
        Some(w.clone().into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 after convert"))
    }

    /// Override the gather/scatter ops chosen for the device (see [`Strategy`]).
    pub fn with_strategy(mut self, strategy: Strategy) -> GraphTensors {
        if let Some(edges) = self.edges.take() {
            self.edges = OnceLock::from(edges.with_strategy(strategy));
        }
        self.looped = self.looped.with_strategy(strategy);
        self.strategy = Some(strategy);
        self
    }

    /// Neighbour edges (both directions of every undirected edge, no self loops).
    pub fn edges(&self) -> &Edges {
        self.edges.get_or_init(|| {
            let p = self.plain.as_ref().expect("a weighted graph's edges are built with it");
            let edges = Edges::new(&p.src[..p.arcs], &p.dst[..p.arcs], self.num_nodes, self.num_nodes, &p.options);
            match self.strategy {
                Some(s) => edges.with_strategy(s),
                None => edges,
            }
        })
    }

    /// Neighbour edges followed by one self loop per node (GCN, GAT).
    pub fn edges_with_self_loops(&self) -> &Edges {
        &self.looped
    }

    /// Per-edge weights (`[E, 1]`) of `norm` over the edge set it uses; `None` for `Sum`.
    pub fn weights(&self, norm: Norm) -> Option<&Tensor<2>> {
        let slot = match norm {
            Norm::Sum => return None,
            Norm::Mean => &self.mean_w,
            Norm::Sym => &self.sym_w,
            Norm::Gcn => &self.gcn_w,
        };
        Some(slot.get_or_init(|| match (&self.learned, &self.plain) {
            (Some(learned), _) => self.weighted(norm, learned),
            (None, Some(plain)) => column(&plain.weights(norm), &plain.options),
            (None, None) => unreachable!("a graph is unweighted or learned"),
        }))
    }

    /// `out[v] = Σ_{u→v} w_uv · x[u]` with the weights of `norm` (`x`: `[N, F]`).
    pub fn propagate(&self, x: Tensor<2>, norm: Norm) -> Tensor<2> {
        let [n, _] = x.dims();
        assert_eq!(n, self.num_nodes, "propagate: input has {n} rows for a graph of {} nodes", self.num_nodes);
        let edges = if norm == Norm::Gcn { &self.looped } else { self.edges() };
        edges.propagate(x, self.weights(norm))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn values(t: Tensor<2>) -> Vec<f32> {
        t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
    }

    /// Arcs 0→1, 2→1, 1→2, 3→0 (node 3 receives nothing).
    fn directed() -> Graph {
        Graph::from_senders(vec![vec![3], vec![0, 2], vec![1], vec![]])
    }

    /// The non-looped edges are built on first use: a strategy chosen before that
    /// applies to them as to the self-looped set (and to edges built before it), and the
    /// propagations it gives are those of the fused kernels up to rounding.
    #[test]
    fn a_strategy_chosen_before_the_edges_are_built_holds_for_them() {
        let device = Device::flex();
        let graph = Graph::from_edges(5, [(0, 1), (1, 2), (2, 3), (0, 2), (3, 4)], "t").unwrap().0;
        let x = Tensor::<2>::from_data(TensorData::new((0..15).map(|i| i as f32 * 0.25 - 1.0).collect::<Vec<_>>(), [5, 3]), &device);
        let fused = GraphTensors::new(&graph, &device).unwrap();
        for built_before in [false, true] {
            let g = GraphTensors::new(&graph, &device).unwrap();
            if built_before {
                let _ = g.edges();
            }
            let g = g.with_strategy(Strategy::Rows);
            assert_eq!(g.edges().strategy(), Strategy::Rows, "built before: {built_before}");
            assert_eq!(g.edges_with_self_loops().strategy(), Strategy::Rows);
            for norm in [Norm::Sum, Norm::Mean, Norm::Sym, Norm::Gcn] {
                let (a, b) = (values(g.propagate(x.clone(), norm)), values(fused.propagate(x.clone(), norm)));
                assert!(a.iter().zip(&b).all(|(p, q)| (p - q).abs() < 1e-6), "{norm:?}: {a:?} vs {b:?}");
            }
        }
        assert_eq!(fused.edges().strategy(), Strategy::Fused);
    }

    #[test]
    fn unit_edge_weights_give_the_unweighted_normalisations() {
        let device = Device::flex();
        for graph in [directed(), Graph::from_edges(4, [(0, 1), (1, 2), (2, 3), (0, 2)], "t").unwrap().0] {
            let g = GraphTensors::new(&graph, &device).unwrap();
            let w = g.with_edge_weights(Tensor::ones([g.edges().len(), 1], &device));
            for norm in [Norm::Mean, Norm::Sym, Norm::Gcn] {
                let (a, b) = (values(g.weights(norm).unwrap().clone()), values(w.weights(norm).unwrap().clone()));
                assert!(a.iter().zip(&b).all(|(x, y)| (x - y).abs() < 1e-6), "{norm:?}: {a:?} vs {b:?}");
            }
        }
    }

    /// Weighted mean by hand, and ∂/∂w of Σ propagate(x) against central differences.
    #[test]
    fn edge_weights_are_differentiable() {
        let device = Device::flex().autodiff();
        let plain = Device::flex();
        let g = GraphTensors::new(&directed(), &plain).unwrap();
        let x = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, -2.0, 0.5, 3.0, 2.0, 1.0, -1.0, 0.25], [4, 2]), &device);
        let w0 = [0.7f32, 0.2, 0.9, 0.4];
        // Node 1 receives from 0 (w 0.2) and 2 (w 0.9): weighted mean of x0 and x2.
        let mean =
            g.with_edge_weights(Tensor::from_data(TensorData::new(w0.to_vec(), [4, 1]), &plain)).propagate(x.clone().inner(), Norm::Mean);
        let m = values(mean);
        assert!((m[2] - (0.2 * 1.0 + 0.9 * 2.0) / 1.1).abs() < 1e-6 && (m[3] - (0.2 * -2.0 + 0.9 * 1.0) / 1.1).abs() < 1e-6);
        for norm in [Norm::Mean, Norm::Sym, Norm::Gcn] {
            let f = |w: &[f32]| -> f64 {
                let wt = Tensor::from_data(TensorData::new(w.to_vec(), [4, 1]), &plain);
                let out = g.with_edge_weights(wt).propagate(x.clone().inner(), norm);
                values(out.clone() * out).iter().map(|&v| f64::from(v)).sum()
            };
            let w = Tensor::<2>::from_data(TensorData::new(w0.to_vec(), [4, 1]), &device).require_grad();
            let out = g.with_edge_weights(w.clone()).propagate(x.clone(), norm);
            let grads = (out.clone() * out).sum().backward();
            let grad = values(w.grad(&grads).unwrap());
            for i in 0..4 {
                let (mut up, mut down) = (w0, w0);
                up[i] += 1e-3;
                down[i] -= 1e-3;
                let numeric = (f(&up) - f(&down)) / 2e-3;
                assert!((f64::from(grad[i]) - numeric).abs() < 2e-3 * (1.0 + numeric.abs()), "{norm:?} w[{i}]: {} vs {numeric}", grad[i]);
            }
        }
    }

    /// A learned adjacency's normalisations are built on first use, but their gradient
    /// is bit for bit that of building all three at once (as the weights were built
    /// before, a power per edge): a model's GCN weights and a loss's symmetric ones
    /// (Solitude's label smoothing) on a random graph. On burn-flex the powers are taken
    /// per node (`spmm::pointwise`), so this also checks that they give the per-edge
    /// powers' gradient.
    #[test]
    fn normalisations_built_on_use_give_the_gradients_of_building_all_at_once() {
        use rand::Rng as _;
        let (device, plain) = (Device::flex().autodiff(), Device::flex());
        let mut r = crate::rng::derive(3, "test-graph", &[]);
        let edges: Vec<(usize, usize)> = (0..400).map(|_| (r.random_range(0..60), r.random_range(0..60))).collect();
        let g = GraphTensors::new(&Graph::from_edges(60, edges, "t").unwrap().0, &plain).unwrap();
        let e = g.edges().len();
        let x = Tensor::<2>::from_data(
            TensorData::new((0..60 * 8).map(|_| r.random_range(-1.0f32..1.0)).collect::<Vec<_>>(), [60, 8]),
            &device,
        );
        let w0: Vec<f32> = (0..e).map(|_| r.random_range(0.0f32..1.0)).collect();
        let leaf = || Tensor::<2>::from_data(TensorData::new(w0.clone(), [e, 1]), &device).require_grad();
        let square_sum = |t: Tensor<2>| (t.clone() * t).sum();
        // All three at once, as `with_edge_weights` built them before.
        let w = leaf();
        let deg = g.edges().scatter_add(w.clone());
        let inv_sqrt = |d: Tensor<2>| d.clone().greater_elem(0.0).float() * d.clamp_min(MIN_DEGREE).powf_scalar(-0.5);
        let (d_src, d_dst) = (g.edges().gather_src(deg.clone()), g.edges().gather_dst(deg.clone()));
        let _mean = w.clone() / d_dst.clone().clamp_min(MIN_DEGREE);
        let sym = w.clone() * inv_sqrt(d_src.clone()) * inv_sqrt(d_dst.clone());
        let gcn_edges = w.clone() * d_src.add_scalar(1.0).powf_scalar(-0.5) * d_dst.add_scalar(1.0).powf_scalar(-0.5);
        let gcn = Tensor::cat(vec![gcn_edges, deg.add_scalar(1.0).recip()], 0);
        let loss = square_sum(g.looped.propagate(x.clone(), Some(&gcn))) + square_sum(g.edges().propagate(x.clone(), Some(&sym)));
        let want = w.grad(&loss.backward()).unwrap().into_data();
        // On use.
        let w = leaf();
        let lazy = g.with_edge_weights(w.clone());
        let loss = square_sum(lazy.propagate(x.clone(), Norm::Gcn)) + square_sum(lazy.propagate(x, Norm::Sym));
        let got = w.grad(&loss.backward()).unwrap().into_data();
        assert_eq!(got.as_slice::<f32>().unwrap(), want.as_slice::<f32>().unwrap());
    }

    /// A node whose in-weights all reach 0 or nearly (calibration removing its edges)
    /// receives (nearly) 0 and leaves every gradient finite.
    #[test]
    fn a_node_with_all_in_weights_at_zero_keeps_gradients_finite() {
        let device = Device::flex().autodiff();
        let g = GraphTensors::new(&directed(), &Device::flex()).unwrap();
        let x = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, -2.0, 0.5, 3.0, 2.0, 1.0, -1.0, 0.25], [4, 2]), &device);
        // Edges in CSR order: 3→0, 0→1, 2→1, 1→2; node 1's two in-edges at 0 and 1e-28.
        for norm in [Norm::Mean, Norm::Sym, Norm::Gcn] {
            let w = Tensor::<2>::from_data(TensorData::new(vec![0.7f32, 1e-28, 0.0, 0.4], [4, 1]), &device).require_grad();
            let out = g.with_edge_weights(w.clone()).propagate(x.clone(), norm);
            let grads = (out.clone() * out.clone()).sum().backward();
            let grad = values(w.grad(&grads).unwrap());
            assert!(grad.iter().all(|v| v.is_finite()), "{norm:?}: {grad:?}");
            if norm != Norm::Gcn {
                assert!(values(out.inner())[2..4].iter().all(|v| v.abs() < 1e-20), "{norm:?}: node 1 receives nothing");
            }
        }
    }
}

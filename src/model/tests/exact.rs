//! Forward values against hand-computed or independently computed numbers (f64,
//! absolute tolerance 1e-12).

use super::support::*;
use crate::data::Features;
use crate::data::graph::Graph;
use crate::model::gat::GatConv;
use crate::model::graph_tensors::{GraphTensors, Norm};
use crate::model::input::{InputLayout, NodeInput};
use crate::model::kprop::kprop;
use crate::model::propagate::{Edges, Strategy};

const TOL: f64 = 1e-12;

/// 4 nodes, edges 0-1, 1-2, 1-3, 2-3: degrees 1, 3, 2, 2.
fn four() -> Graph {
    Graph::from_edges(4, [(0, 1), (1, 2), (1, 3), (2, 3)], "test").unwrap().0
}

/// Two feature columns per node.
const X: [[f64; 2]; 4] = [[1.0, 1.0], [2.0, -1.0], [3.0, 2.0], [4.0, 0.5]];

fn x_tensor() -> burn::tensor::Tensor<2> {
    tensor(X.iter().flatten().copied().collect(), [4, 2], &f64_cpu())
}

/// Expected output rows from per-node lists of (source, weight).
fn expected(rows: [&[(usize, f64)]; 4]) -> Vec<f64> {
    rows.iter().flat_map(|terms| (0..2).map(move |c| terms.iter().map(|&(u, w)| w * X[u][c]).sum::<f64>())).collect()
}

#[test]
fn propagation_matches_hand_computed_normalisations() {
    let s3 = 3f64.sqrt();
    let s6 = 6f64.sqrt();
    let s8 = 8f64.sqrt();
    let s12 = 12f64.sqrt();
    let cases = [
        (Norm::Sum, expected([&[(1, 1.0)], &[(0, 1.0), (2, 1.0), (3, 1.0)], &[(1, 1.0), (3, 1.0)], &[(1, 1.0), (2, 1.0)]])),
        (
            Norm::Mean,
            expected([&[(1, 1.0)], &[(0, 1.0 / 3.0), (2, 1.0 / 3.0), (3, 1.0 / 3.0)], &[(1, 0.5), (3, 0.5)], &[(1, 0.5), (2, 0.5)]]),
        ),
        (
            Norm::Sym,
            expected([
                &[(1, 1.0 / s3)],
                &[(0, 1.0 / s3), (2, 1.0 / s6), (3, 1.0 / s6)],
                &[(1, 1.0 / s6), (3, 0.5)],
                &[(1, 1.0 / s6), (2, 0.5)],
            ]),
        ),
        (
            // d̂ = 2, 4, 3, 3.
            Norm::Gcn,
            expected([
                &[(0, 0.5), (1, 1.0 / s8)],
                &[(1, 0.25), (0, 1.0 / s8), (2, 1.0 / s12), (3, 1.0 / s12)],
                &[(2, 1.0 / 3.0), (1, 1.0 / s12), (3, 1.0 / 3.0)],
                &[(3, 1.0 / 3.0), (1, 1.0 / s12), (2, 1.0 / 3.0)],
            ]),
        ),
    ];
    for strategy in [Strategy::Fused, Strategy::Rows, Strategy::Elements] {
        let g = GraphTensors::new(&four(), f64_cpu()).unwrap().with_strategy(strategy);
        for (norm, want) in &cases {
            assert_close(&values(g.propagate(x_tensor(), *norm)), want, TOL, &format!("{norm:?} {strategy:?}"));
        }
    }
}

#[test]
fn isolated_nodes_receive_zero_except_under_gcn_self_loops() {
    let g = GraphTensors::new(&tiny_graph(), f64_cpu()).unwrap();
    let x = tensor(random_values(1, 12), [6, 2], &f64_cpu());
    let x5 = values(x.clone())[10..].to_vec();
    for norm in [Norm::Sum, Norm::Mean, Norm::Sym] {
        assert_eq!(&values(g.propagate(x.clone(), norm))[10..], &[0.0, 0.0], "{norm:?}");
    }
    // d̂ = 1: the isolated node keeps its own row.
    assert_close(&values(g.propagate(x, Norm::Gcn))[10..], &x5, TOL, "gcn isolated");
}

#[test]
fn graph_without_edges_propagates_to_zero() {
    let g = GraphTensors::new(&Graph::empty(3), f64_cpu()).unwrap();
    let x = tensor(vec![1.0, 2.0, 3.0], [3, 1], &f64_cpu());
    assert_eq!(values(g.propagate(x.clone(), Norm::Mean)), vec![0.0; 3]);
    assert_eq!(values(g.propagate(x, Norm::Gcn)), vec![1.0, 2.0, 3.0]);
    assert!(GraphTensors::new(&Graph::empty(0), f64_cpu()).is_err());
}

#[test]
fn kprop_on_a_regular_graph_and_an_isolated_node() {
    // 4-cycle (2-regular, so Ã = A/2) plus isolated node 4. The all-ones vector is an
    // eigenvector with eigenvalue 1 and the alternating one with eigenvalue −1; the
    // isolated node's row is 0 after the first round.
    let (c4, _) = Graph::from_edges(5, [(0, 1), (1, 2), (2, 3), (3, 0)], "test").unwrap();
    let g = GraphTensors::new(&c4, f64_cpu()).unwrap();
    let x = tensor(vec![1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 7.0, 2.0], [5, 2], &f64_cpu());
    assert_eq!(values(kprop(x.clone(), &g, 0)), values(x.clone()));
    let want = [1.0, -1.0, 1.0, 1.0, 1.0, -1.0, 1.0, 1.0, 0.0, 0.0];
    assert_close(&values(kprop(x, &g, 3)), &want, TOL, "kprop 3 steps");
}

#[test]
fn sparse_input_matmul_equals_dense() {
    let f = sparse_features(3, 7, 11, 0.2);
    let w = tensor(random_values(4, 11 * 5), [11, 5], &f64_cpu());
    let dense = NodeInput::with_layout(&f, InputLayout::Dense, f64_cpu());
    for strategy in [Strategy::Fused, Strategy::Rows, Strategy::Elements] {
        let sparse = NodeInput::with_layout(&f, InputLayout::Sparse, f64_cpu()).with_strategy(strategy);
        assert_eq!((sparse.num_nodes(), sparse.dim()), (7, 11));
        assert_close(&values(sparse.matmul(w.clone())), &values(dense.matmul(w.clone())), TOL, "sparse vs dense");
    }
}

/// Xᵀ·M over the input's own non-zeros (read by column) is the dense Xᵀ·M, and the
/// same bits as propagating M over a reversed copy of the non-zeros, on every strategy
/// (the fused kernels' host pattern read by source; index tensors made on first use).
#[test]
fn sparse_input_transposed_matmul_equals_dense_and_reversed_edges() {
    let f = sparse_features(5, 9, 13, 0.3);
    let Features::Sparse(csr) = &f else { unreachable!("sparse_features is sparse") };
    let m = tensor(random_values(6, 9 * 4), [9, 4], &f64_cpu());
    let dense = NodeInput::with_layout(&f, InputLayout::Dense, f64_cpu());
    let want = values(dense.transposed_matmul(m.clone()));
    let (mut rows, mut cols, mut vals) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..csr.rows {
        let (idx, val) = csr.row(r);
        rows.extend(std::iter::repeat_n(r as u32, idx.len()));
        cols.extend_from_slice(idx);
        vals.extend(val.iter().map(|&v| f64::from(v)));
    }
    let weights = crate::model::propagate::column(&vals, &f64_cpu());
    for strategy in [Strategy::Fused, Strategy::Rows, Strategy::Elements] {
        let sparse = NodeInput::with_layout(&f, InputLayout::Sparse, f64_cpu()).with_strategy(strategy);
        let got = values(sparse.transposed_matmul(m.clone()));
        assert_close(&got, &want, TOL, &format!("{strategy:?}: sparse vs dense"));
        let reversed = Edges::new(&rows, &cols, csr.rows, csr.cols, &f64_cpu()).with_strategy(strategy);
        assert_eq!(got, values(reversed.propagate(m.clone(), Some(&weights))), "{strategy:?}: vs reversed edges");
    }
    // A shifted matrix adds shift · 1(1ᵀM) to every row (the dense copy holds each
    // entry + shift rounded to f32, hence the tolerance).
    let shifted = Features::Shifted(crate::data::features::ShiftedMatrix { centered: csr.clone(), shift: 0.25 });
    let got = values(NodeInput::with_layout(&shifted, InputLayout::Sparse, f64_cpu()).transposed_matmul(m.clone()));
    let want = values(NodeInput::with_layout(&shifted, InputLayout::Dense, f64_cpu()).transposed_matmul(m));
    assert_close(&got, &want, 1e-6, "shifted");
}

/// A GAT layer with the given parameters, on the f64 CPU device.
fn gat(d_in: usize, c: usize, heads: usize, concat: bool, seed: u64) -> GatConv {
    let o = f64_cpu();
    let width = heads * c;
    GatConv {
        weight: param(tensor(random_values(seed, d_in * width), [d_in, width], &o)),
        att_src: param(tensor(random_values(seed + 1, width), [heads, c], &o)),
        att_dst: param(tensor(random_values(seed + 2, width), [heads, c], &o)),
        bias: param(tensor(random_values(seed + 3, if concat { width } else { c }), [if concat { width } else { c }], &o)),
        heads,
        channels: c,
        concat,
        negative_slope: 0.2,
        attention_dropout: 0.0,
    }
}

#[test]
fn gat_attention_sums_to_one_per_target() {
    let graph = tiny_graph();
    let g = GraphTensors::new(&graph, f64_cpu()).unwrap();
    let layer = gat(3, 2, 4, true, 10);
    let x = NodeInput::Dense(tensor(random_values(5, 18), [6, 3], &f64_cpu()));
    let alpha = layer.attention(layer.transform(&x), &g, None);
    let sums = values(g.edges_with_self_loops().scatter_add(alpha));
    assert_close(&sums, &[1.0; 24], TOL, "attention sums");
}

/// GAT computed naively on the host, node by node, from the same parameters.
fn gat_reference(layer: &GatConv, graph: &Graph, x: &[f64], d_in: usize) -> Vec<f64> {
    let (h, c) = (layer.heads, layer.channels);
    let w = values(layer.weight.val());
    let (a_s, a_d) = (values(layer.att_src.val()), values(layer.att_dst.val()));
    let bias = values(layer.bias.val());
    let n = graph.num_nodes();
    let mut z = vec![0.0; n * h * c];
    for v in 0..n {
        for j in 0..h * c {
            z[v * h * c + j] = (0..d_in).map(|k| x[v * d_in + k] * w[k * h * c + j]).sum();
        }
    }
    let score = |v: usize, head: usize, a: &[f64]| (0..c).map(|j| z[v * h * c + head * c + j] * a[head * c + j]).sum::<f64>();
    let mut out = Vec::new();
    for v in 0..n {
        let mut sources: Vec<usize> = graph.neighbors(v).iter().map(|&u| u as usize).collect();
        sources.push(v);
        let mut row = vec![0.0; h * c];
        for head in 0..h {
            let logits: Vec<f64> = sources
                .iter()
                .map(|&u| {
                    let e = score(u, head, &a_s) + score(v, head, &a_d);
                    if e > 0.0 { e } else { 0.2 * e }
                })
                .collect();
            let total: f64 = logits.iter().map(|e| e.exp()).sum();
            for (&u, e) in sources.iter().zip(&logits) {
                for j in 0..c {
                    row[head * c + j] += e.exp() / total * z[u * h * c + head * c + j];
                }
            }
        }
        if layer.concat {
            out.extend(row.iter().zip(&bias).map(|(r, b)| r + b));
        } else {
            out.extend((0..c).map(|j| (0..h).map(|head| row[head * c + j]).sum::<f64>() / h as f64 + bias[j]));
        }
    }
    out
}

#[test]
fn gat_matches_a_naive_reference() {
    let graph = tiny_graph();
    let xv = random_values(6, 18);
    let x = NodeInput::Dense(tensor(xv.clone(), [6, 3], &f64_cpu()));
    for strategy in [Strategy::Fused, Strategy::Rows, Strategy::Elements] {
        let g = GraphTensors::new(&graph, f64_cpu()).unwrap().with_strategy(strategy);
        // 3 heads × 2 and 4 heads × 8 (32 columns: the fused kernel's 16-column blocks
        // then span two heads each).
        for (channels, heads) in [(2, 3), (8, 4)] {
            for concat in [true, false] {
                let layer = gat(3, channels, heads, concat, 20);
                let got = values(layer.forward(&x, &g, None));
                let what = format!("gat {heads}×{channels} concat={concat} {strategy:?}");
                assert_close(&got, &gat_reference(&layer, &graph, &xv, 3), TOL, &what);
            }
        }
    }
}

/// Every strategy's per-target maximum is the exact maximum of the target's rows, −∞
/// without edges: one target of degree 2 000 (three levels of blocks on GPUs), targets
/// of degree 1, 31, 32 and 33 around a block's width, targets without edges.
#[test]
fn scatter_max_takes_each_targets_exact_maximum() {
    let degrees = [2000usize, 0, 1, 31, 32, 33, 0, 5];
    let (targets, f) = (degrees.len(), 3);
    let mut dst: Vec<u32> = degrees.iter().enumerate().flat_map(|(t, &d)| std::iter::repeat_n(t as u32, d)).collect();
    // Edges of one target need not be adjacent.
    dst.rotate_left(1000);
    dst.swap(3, 2040);
    let src: Vec<u32> = (0..dst.len() as u32).collect();
    let v = random_values(17, dst.len() * f);
    let mut want = vec![f64::NEG_INFINITY; targets * f];
    for (e, &t) in dst.iter().enumerate() {
        for c in 0..f {
            want[t as usize * f + c] = want[t as usize * f + c].max(v[e * f + c]);
        }
    }
    for strategy in [Strategy::Fused, Strategy::Rows, Strategy::Elements] {
        let edges = Edges::new(&src, &dst, src.len(), targets, &f64_cpu()).with_strategy(strategy);
        for _ in 0..2 {
            let got = values(edges.scatter_max(tensor(v.clone(), [dst.len(), f], &f64_cpu())));
            assert_eq!(got, want, "{strategy:?}");
        }
    }
}

#[test]
fn gat_softmax_is_stable_for_large_logits() {
    // Scaled-up attention vectors push logits to ~±1e3, where a plain exp overflows.
    let graph = tiny_graph();
    let g = GraphTensors::new(&graph, f64_cpu()).unwrap();
    let mut layer = gat(3, 2, 2, true, 30);
    layer.att_src = param(layer.att_src.val().mul_scalar(1e3));
    layer.att_dst = param(layer.att_dst.val().mul_scalar(1e3));
    let x = NodeInput::Dense(tensor(random_values(7, 18), [6, 3], &f64_cpu()));
    let out = values(layer.forward(&x, &g, None));
    assert!(out.iter().all(|v| v.is_finite()), "{out:?}");
}

#[test]
fn auto_layout_follows_density_and_width() {
    assert_eq!(InputLayout::auto(&sparse_features(8, 50, 400, 0.005), 16), InputLayout::Sparse);
    assert_eq!(InputLayout::auto(&sparse_features(8, 50, 400, 0.05), 16), InputLayout::Sparse);
    assert_eq!(InputLayout::auto(&sparse_features(8, 50, 400, 0.3), 16), InputLayout::Dense);
    let dense = crate::data::features::Features::Dense(crate::data::features::DenseMatrix::zeros(3, 2));
    assert_eq!(InputLayout::auto(&dense, 16), InputLayout::Sparse);
    // Cora-like (1.27 % of 3000×1500): the fused kernels keep it sparse at every width;
    // the row ops, whose gathered block falls out of cache, only for narrow ones.
    let cora_like = sparse_features(9, 3000, 1500, 0.0127);
    for width in [16, 128, 512] {
        assert_eq!(InputLayout::auto(&cora_like, width), InputLayout::Sparse, "width {width}");
    }
    assert_eq!(InputLayout::for_strategy(&cora_like, 128, Strategy::Rows), InputLayout::Sparse);
    assert_eq!(InputLayout::for_strategy(&cora_like, 512, Strategy::Rows), InputLayout::Dense);
    // CiteSeer-like (0.86 %): sparse at every width for the row ops too.
    assert_eq!(InputLayout::for_strategy(&sparse_features(9, 3000, 3700, 0.0086), 512, Strategy::Rows), InputLayout::Sparse);
    // GPUs, where the dense product costs about the same at any width up to 512 (an H200):
    // sparse while density × width stays below ≈ 27.
    for width in [16, 512] {
        assert_eq!(InputLayout::for_strategy(&cora_like, width, Strategy::Elements), InputLayout::Sparse, "width {width}");
    }
    let pubmed_like = sparse_features(9, 2000, 500, 0.10);
    assert_eq!(InputLayout::for_strategy(&pubmed_like, 16, Strategy::Elements), InputLayout::Sparse);
    assert_eq!(InputLayout::for_strategy(&pubmed_like, 256, Strategy::Elements), InputLayout::Sparse);
    assert_eq!(InputLayout::for_strategy(&pubmed_like, 512, Strategy::Elements), InputLayout::Dense);
    assert_eq!(InputLayout::for_strategy(&sparse_features(9, 300, 400, 1.0), 64, Strategy::Elements), InputLayout::Dense);
}

#[test]
#[allow(deprecated)] // burn-ndarray stays selectable (`backend: ndarray`) while Burn ships it
fn each_cpu_backend_gets_its_strategy() {
    assert_eq!(Strategy::for_device(&cpu()), Strategy::Fused);
    assert_eq!(Strategy::for_device(&cpu().autodiff()), Strategy::Fused);
    let ndarray = burn::tensor::Device::ndarray();
    assert_eq!(Strategy::for_device(&ndarray), Strategy::Rows);
    assert_eq!(Strategy::for_device(&ndarray.autodiff()), Strategy::Rows);
}

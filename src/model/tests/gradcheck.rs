//! Autodiff gradients against central finite differences (f64, step 1e-6) on the
//! 6-node graph with an isolated node. Tolerance: max |g_ad − g_fd| / max(1, |g_fd|)
//! < 1e-6 over every entry of every parameter and of the input. Every check runs with
//! every propagation strategy (fused kernels, row ops, element ops).

use burn::nn::Linear;
use burn::tensor::Tensor;

use super::support::*;
use crate::model::gat::GatConv;
use crate::model::gcn::GcnConv;
use crate::model::graph_tensors::GraphTensors;
use crate::model::input::{InputLayout, NodeInput};
use crate::model::kprop::KProp;
use crate::model::propagate::Strategy;
use crate::model::sage::SageConv;

const TOL: f64 = 1e-6;
const N: usize = 6;
const F: usize = 3;

fn graph_on(leaf: &Tensor<1>, strategy: Strategy) -> GraphTensors {
    GraphTensors::new(&tiny_graph(), options_of(leaf)).unwrap().with_strategy(strategy)
}

fn input(leaf: &Tensor<1>) -> NodeInput {
    NodeInput::Dense(leaf.clone().reshape([N, F]))
}

fn check(name: &str, leaves: &[Vec<f64>], f: impl Fn(&[Tensor<1>], Strategy) -> Tensor<1>) {
    for strategy in [Strategy::Fused, Strategy::Rows, Strategy::Elements] {
        let err = gradient_error(leaves, |t| f(t, strategy));
        println!("{name} {strategy:?}: max gradient error {err:e}");
        assert!(err < TOL, "{name} {strategy:?}: max gradient error {err:e} ≥ {TOL:e}");
    }
}

#[test]
fn gcn_gradients() {
    let leaves = [random_values(1, N * F), random_values(2, F * 2), random_values(3, 2)];
    check("gcn", &leaves, |t, s| {
        let layer = GcnConv { weight: param(t[1].clone().reshape([F, 2])), bias: param(t[2].clone()) };
        loss(layer.forward(&input(&t[0]), &graph_on(&t[0], s)))
    });
}

#[test]
fn sage_gradients() {
    let leaves = [random_values(4, N * F), random_values(5, F * 2), random_values(6, F * 2), random_values(7, 2)];
    check("sage", &leaves, |t, s| {
        let layer =
            SageConv { w_root: param(t[1].clone().reshape([F, 2])), w_nbr: param(t[2].clone().reshape([F, 2])), bias: param(t[3].clone()) };
        loss(layer.forward(&input(&t[0]), &graph_on(&t[0], s)))
    });
}

fn gat_check(concat: bool) {
    let (heads, c) = (2, 2);
    let bias_len = if concat { heads * c } else { c };
    let leaves = [
        random_values(8, N * F),
        random_values(9, F * heads * c),
        random_values(10, heads * c),
        random_values(11, heads * c),
        random_values(12, bias_len),
    ];
    check(&format!("gat concat={concat}"), &leaves, |t, s| {
        let layer = GatConv {
            weight: param(t[1].clone().reshape([F, heads * c])),
            att_src: param(t[2].clone().reshape([heads, c])),
            att_dst: param(t[3].clone().reshape([heads, c])),
            bias: param(t[4].clone()),
            heads,
            channels: c,
            concat,
            negative_slope: 0.2,
            attention_dropout: 0.0,
        };
        loss(layer.forward(&input(&t[0]), &graph_on(&t[0], s), None))
    });
}

#[test]
fn gat_gradients_concatenated_heads() {
    gat_check(true);
}

#[test]
fn gat_gradients_averaged_heads() {
    gat_check(false);
}

#[test]
fn kprop_then_linear_gradients() {
    let leaves = [random_values(13, N * F), random_values(14, F * 2), random_values(15, 2)];
    check("kprop+linear", &leaves, |t, s| {
        let head = Linear { weight: param(t[1].clone().reshape([F, 2])), bias: Some(param(t[2].clone())) };
        let x = KProp { steps: 3 }.forward(t[0].clone().reshape([N, F]), &graph_on(&t[0], s));
        loss(head.forward(x))
    });
}

#[test]
fn sparse_input_linear_gradients() {
    let features = sparse_features(16, N, 8, 0.3);
    let leaves = [random_values(17, 8 * 3)];
    check("sparse X·W", &leaves, |t, s| {
        let x = NodeInput::with_layout(&features, InputLayout::Sparse, options_of(&t[0])).with_strategy(s);
        loss(x.matmul(t[0].clone().reshape([8, 3])))
    });
}

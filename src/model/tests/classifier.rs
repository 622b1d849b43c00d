//! The node classifier: configuration, shapes, head observability, gradients reaching
//! every layer, and bit-identical repeat runs (including across rayon thread counts).

use burn::module::Module;
use burn::tensor::{Tensor, TensorCreationOptions};

use super::support::*;
use crate::model::config::{Arch, Hidden, ModelConfig};
use crate::model::graph_tensors::GraphTensors;
use crate::model::input::{InputLayout, NodeInput};
use crate::model::propagate::Strategy;
use crate::model::{Conv, NodeClassifier};
use crate::rng;

fn parse(yaml: &str) -> Result<ModelConfig, serde_norway::Error> {
    serde_norway::from_str(yaml)
}

#[test]
fn config_defaults_parse_and_validate() {
    let c = parse("{}").unwrap();
    assert_eq!(c, ModelConfig::default());
    assert_eq!((c.arch, c.layers, c.hidden, c.heads, c.dropout, c.kprop_steps, c.head), (Arch::Gcn, 2, Hidden::All(16), 8, 0.5, 0, false));
    let c = parse("arch: gat\nlayers: 3\nactivation: selu\nhead: true\nkprop_steps: 4").unwrap();
    assert_eq!((c.arch, c.layers, c.head, c.kprop_steps), (Arch::Gat, 3, true, 4));
    c.validate().unwrap();
    assert!(parse("arch: gin").unwrap_err().to_string().contains("gcn"));
    assert!(parse("layer: 2").unwrap_err().to_string().contains("layer"));
}

#[test]
fn config_validation_names_the_field() {
    let bad = ModelConfig { layers: 4, ..ModelConfig::default() };
    let msg = bad.validate().unwrap_err().to_string();
    assert!(msg.contains("model.layers") && msg.contains("1..=3"), "{msg}");
    let bad = ModelConfig { dropout: 1.0, ..ModelConfig::default() };
    assert!(bad.validate().unwrap_err().to_string().contains("model.dropout"));
    assert!(ModelConfig::default().init(0, 3, 1, &cpu()).is_err());
    assert!(ModelConfig { hidden: 0.into(), ..ModelConfig::default() }.init(4, 3, 1, &cpu()).is_err());
}

/// EC-LDA's model: 1433 → 512 → 64 → C is `layers: 2, hidden: [512, 64], head: true`.
#[test]
fn one_width_per_layer() {
    let c = parse("layers: 2\nhidden: [12, 5]\nhead: true").unwrap();
    assert_eq!(c.hidden, Hidden::PerLayer(vec![12, 5]));
    for arch in [Arch::Gcn, Arch::Sage, Arch::Gat] {
        let m = ModelConfig { arch, heads: 2, ..c.clone() }.init(10, 3, 1, &cpu()).unwrap();
        // GAT concatenates its heads in the first layer: 2 × 12 columns.
        let first = if arch == Arch::Gat { 24 } else { 12 };
        assert_eq!((m.convs[0].d_out(), m.convs[1].d_out()), (first, 5), "{arch:?}");
        assert_eq!(m.head.as_ref().unwrap().weight.dims(), [5, 3], "{arch:?}");
    }
    // Without a head the last layer gives the logits: one width fewer.
    parse("layers: 3\nhidden: [8, 4]").unwrap().validate().unwrap();
    let e = parse("layers: 2\nhidden: [8, 4]").unwrap().validate().unwrap_err().to_string();
    assert!(e.contains("model.hidden") && e.contains("2 width(s) given for 1"), "{e}");
    assert!(parse("layers: 2\nhidden: [0, 4]\nhead: true").unwrap().validate().is_err());
    assert!(parse("hidden: wide").unwrap_err().to_string().contains("[512, 64]"));
    // A single width still reads and writes as a number.
    assert_eq!(serde_norway::to_string(&ModelConfig::default()).unwrap().lines().find(|l| l.starts_with("hidden")), Some("hidden: 16"));
}

fn setup(options: TensorCreationOptions) -> (GraphTensors, NodeInput) {
    let g = GraphTensors::new(&tiny_graph(), options.clone()).unwrap();
    let x = NodeInput::with_layout(&sparse_features(1, 6, 10, 0.4), InputLayout::Sparse, options);
    (g, x)
}

#[test]
fn every_architecture_depth_and_head_gives_the_right_shapes() {
    let (g, x) = setup(f64_cpu());
    for arch in [Arch::Gcn, Arch::Sage, Arch::Gat] {
        for layers in 1..=3 {
            for head in [false, true] {
                let c = ModelConfig { arch, layers, head, hidden: 5.into(), heads: 3, kprop_steps: 2, ..ModelConfig::default() };
                let m = c.init(10, 4, 7, f64_cpu()).unwrap();
                assert_eq!(m.convs.len(), layers);
                let out = m.forward(&x, &g);
                assert_eq!(out.logits.dims(), [6, 4], "{arch:?} {layers} head={head}");
                assert_eq!(out.head_input.map(|h| h.dims()), head.then_some([6, 5]));
                if let (Arch::Gat, true) = (arch, layers > 1) {
                    assert_eq!(m.convs[0].d_out(), 15, "hidden GAT layers concatenate heads");
                }
                assert!(values(out.logits).iter().all(|v| v.is_finite()));
            }
        }
    }
}

#[test]
fn head_logits_are_the_linear_map_of_head_input() {
    let (g, x) = setup(f64_cpu());
    let m = ModelConfig { head: true, ..ModelConfig::default() }.init(10, 3, 1, f64_cpu()).unwrap();
    let out = m.forward(&x, &g);
    let head = m.head.as_ref().unwrap();
    let again = head.forward(out.head_input.unwrap());
    assert_close(&values(out.logits), &values(again), 1e-12, "head");
}

#[test]
fn gradients_reach_every_layer() {
    let (g, x) = setup(f64_ad());
    for arch in [Arch::Gcn, Arch::Sage, Arch::Gat] {
        let c = ModelConfig { arch, layers: 3, head: true, heads: 2, dropout: 0.0, ..ModelConfig::default() };
        let m = c.init(10, 3, 5, f64_ad()).unwrap();
        let grads = loss(m.forward(&x, &g).logits).backward();
        let first = match &m.convs[0] {
            Conv::Gcn(c) => c.weight.val(),
            Conv::Sage(c) => c.w_nbr.val(),
            Conv::Gat(c) => c.att_src.val(),
        };
        let g_first = values(first.grad(&grads).expect("first layer gradient"));
        assert!(g_first.iter().any(|v| *v != 0.0), "{arch:?}");
        let head = m.head.as_ref().unwrap();
        assert!(head.weight.val().grad(&grads).is_some(), "{arch:?} head");
    }
}

/// Raw bits of every logit (f32 default dtype), for exact comparison.
fn bits(t: Tensor<2>) -> Vec<u64> {
    values(t).into_iter().map(f64::to_bits).collect()
}

fn logits_of(model: &NodeClassifier, x: &NodeInput, g: &GraphTensors, train_seed: Option<u64>) -> Vec<u64> {
    match train_seed {
        None => bits(model.forward(x, g).logits),
        Some(s) => bits(model.forward_train(x, g, &mut rng::derive(s, "dropout", &[])).logits),
    }
}

#[test]
fn forward_passes_and_gradients_are_bit_identical_across_runs_and_thread_counts() {
    // Default (f32) dtype: the precision the simulator trains in. Large enough that the
    // fused kernels split their rows over threads (checked), and the gradients too.
    let device = cpu();
    let n = 3000;
    let f = sparse_features(2, n, 50, 0.05);
    let (graph, _) =
        crate::data::graph::Graph::from_edges(n, (0..12 * n).map(|i| ((i * 7919) % n, (i * 104_729 + 13) % n)), "test").unwrap();
    let work = (2 * graph.num_edges() + n) * 16;
    assert!(crate::model::spmm::splits_work(n, work), "the test graph must take the parallel path");
    let g = GraphTensors::new(&graph, &device).unwrap();
    for layout in [InputLayout::Dense, InputLayout::Sparse] {
        let x = NodeInput::with_layout(&f, layout, &device);
        for arch in [Arch::Gcn, Arch::Sage, Arch::Gat] {
            let c = ModelConfig { arch, head: true, kprop_steps: 2, heads: 4, attention_dropout: 0.3, ..ModelConfig::default() };
            let run = |threads: usize, train: Option<u64>| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| logits_of(&c.init(50, 5, 42, &device).unwrap(), &x, &g, train))
            };
            for train in [None, Some(3)] {
                let reference = run(1, train);
                assert_eq!(reference, run(1, train), "{arch:?} {layout:?} repeat");
                assert_eq!(reference, run(4, train), "{arch:?} {layout:?} 1 vs 4 threads");
            }
            assert_ne!(run(1, Some(3)), run(1, Some(4)), "dropout seeds differ");
            let other = logits_of(&c.init(50, 5, 43, &device).unwrap(), &x, &g, None);
            assert_ne!(run(1, None), other, "init seeds differ");
            let grads = |threads: usize| {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                pool.install(|| {
                    let m = c.init(50, 5, 42, &device.clone().autodiff()).unwrap();
                    let out = m.forward_train(&x, &g, &mut rng::derive(3, "dropout", &[]));
                    let grads = loss(out.logits).backward();
                    let first = match &m.convs[0] {
                        Conv::Gcn(l) => l.weight.val().grad(&grads),
                        Conv::Sage(l) => l.w_nbr.val().grad(&grads),
                        Conv::Gat(l) => l.att_src.val().grad(&grads),
                    };
                    bits(first.expect("gradient reaches the first layer"))
                })
            };
            assert_eq!(grads(1), grads(4), "{arch:?} {layout:?} gradients, 1 vs 4 threads");
            // The parallel path of the fused kernels against Burn's row ops.
            let rows = Strategy::Rows;
            let model = c.init(50, 5, 42, &device).unwrap();
            let fused = model.forward(&x, &g).logits.into_data().try_to_vec::<f32>().unwrap();
            let composed = model
                .forward(&x.clone().with_strategy(rows), &g.clone().with_strategy(rows))
                .logits
                .into_data()
                .try_to_vec::<f32>()
                .unwrap();
            let err = fused.iter().zip(&composed).map(|(a, b)| (a - b).abs() / b.abs().max(1.0)).fold(0f32, f32::max);
            assert!(err < 1e-5, "{arch:?} {layout:?}: fused and row ops differ by {err:e}");
        }
    }
}

#[test]
fn gradients_are_bit_identical_across_runs() {
    let device = cpu().autodiff();
    let (g, x) = setup(TensorCreationOptions::new(device.clone()));
    let grad_bits = || {
        let m = ModelConfig { arch: Arch::Gat, heads: 2, head: true, ..ModelConfig::default() }.init(10, 3, 9, &device).unwrap();
        let out = m.forward_train(&x, &g, &mut rng::derive(1, "dropout", &[]));
        let grads = loss(out.logits).backward();
        let Conv::Gat(first) = &m.convs[0] else { unreachable!() };
        bits(first.weight.val().grad(&grads).unwrap())
    };
    assert_eq!(grad_bits(), grad_bits());
}

#[test]
fn dense_and_sparse_input_give_the_same_model_output() {
    let g = GraphTensors::new(&tiny_graph(), f64_cpu()).unwrap();
    let f = sparse_features(5, 6, 10, 0.3);
    for arch in [Arch::Gcn, Arch::Sage, Arch::Gat] {
        let m = ModelConfig { arch, kprop_steps: 2, head: true, ..ModelConfig::default() }.init(10, 3, 2, f64_cpu()).unwrap();
        let run = |layout| values(m.forward(&NodeInput::with_layout(&f, layout, f64_cpu()), &g).logits);
        assert_close(&run(InputLayout::Sparse), &run(InputLayout::Dense), 1e-12, &format!("{arch:?}"));
    }
}

/// KProp before the first layer is applied to the layer's transformed rows (it is
/// linear, so KProp(X)·W = KProp(X·W)): the same as running the layer on KProp(X). For
/// SAGE, whose transform stacks two products, each block is propagated.
#[test]
fn kprop_on_transformed_rows_equals_kprop_on_features() {
    let (g, x) = setup(f64_cpu());
    let dense_x = NodeInput::with_layout(&sparse_features(1, 6, 10, 0.4), InputLayout::Dense, f64_cpu());
    let NodeInput::Dense(xt) = dense_x else { unreachable!() };
    let propagated = NodeInput::Dense(crate::model::kprop(xt, &g, 2));
    for arch in [Arch::Gcn, Arch::Sage, Arch::Gat] {
        let m = ModelConfig { arch, kprop_steps: 2, heads: 2, ..ModelConfig::default() }.init(10, 3, 5, f64_cpu()).unwrap();
        let with = values(m.forward(&x, &g).logits);
        let mut plain = m.clone();
        plain.kprop_steps = 0;
        let without = values(plain.forward(&propagated, &g).logits);
        assert_close(&with, &without, 1e-10, &format!("{arch:?}"));
    }
}

#[test]
fn large_matmuls_are_bit_identical_across_thread_counts() {
    // Above burn-flex's threshold (192³ multiply-adds) its gemm runs on the rayon pool;
    // it splits output tiles over threads but never the sum over k. Both products of a
    // dense first layer: X·W, and Xᵀ·dY as the weight gradient takes it (strided view).
    let device = cpu();
    let matrix = |rows: usize, cols: usize, seed: usize| {
        let values = (0..rows * cols).map(|i| (((i * 7919 + seed * 104_729) % 1000) as f32 - 500.0) / 97.0).collect::<Vec<_>>();
        Tensor::<2>::from_data(burn::tensor::TensorData::new(values, [rows, cols]), &device)
    };
    let (x, w, dy) = (matrix(3000, 300, 1), matrix(300, 128, 2), matrix(3000, 128, 3));
    let products = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| (bits(x.clone().matmul(w.clone())), bits(x.clone().transpose().matmul(dy.clone()))))
    };
    let reference = products(1);
    assert_eq!(reference, products(2), "1 vs 2 threads");
    assert_eq!(reference, products(4), "1 vs 4 threads");
}

/// The trainer computes the first layer's X·W once between two steps and shares it
/// (`first_product`, `forward_from`): in training mode (dropout on, KProp rounds, the
/// input smoothed as a defense's KProp_x leaves it) and in evaluation, the shared product
/// gives the same logits and first-layer gradients, bit for bit, as the forward that
/// multiplies itself — which holds only while nothing (input dropout, say) touches X
/// before the first product.
#[test]
fn a_shared_first_product_changes_no_logit_or_gradient() {
    let device = cpu().autodiff();
    let (g, x) = setup(TensorCreationOptions::new(device.clone()));
    let x = x.smoothed(&g, 1);
    for arch in [Arch::Gcn, Arch::Sage, Arch::Gat] {
        let c = ModelConfig { arch, head: true, heads: 2, dropout: 0.5, attention_dropout: 0.3, kprop_steps: 2, ..ModelConfig::default() };
        let run = |shared: bool| {
            let m = c.init(10, 3, 7, &device).unwrap();
            let first = shared.then(|| m.first_product(&x));
            let out = m.forward_from(&x, first, &g, Some(&mut rng::derive(3, "dropout", &[])));
            let logits = bits(out.logits.clone());
            let grads = loss(out.logits).backward();
            let w = match &m.convs[0] {
                Conv::Gcn(l) => l.weight.val(),
                Conv::Sage(l) => l.w_nbr.val(),
                Conv::Gat(l) => l.weight.val(),
            };
            (logits, bits(w.grad(&grads).expect("a gradient into the first layer")))
        };
        assert_eq!(run(true), run(false), "{arch:?}: training forward and gradients");
        let m = c.init(10, 3, 7, &device).unwrap();
        let first = m.first_product(&x).detach().without_autodiff();
        let shared = m.valid().forward_from(&x, Some(first), &g, None).logits;
        assert_eq!(bits(shared), bits(m.valid().forward(&x, &g).logits), "{arch:?}: evaluation");
    }
}

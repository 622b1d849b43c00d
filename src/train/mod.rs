//! Local training on one client's subgraph: full-batch epochs with SGD or Adam, a
//! pluggable loss, evaluation on validation and test nodes.
//!
//! A client's data lives on the host as [`LocalData`] (what client-side defenses
//! transform) and on the device as [`ClientTensors`], built once per client. Data
//! tensors sit on the plain device; the model trains on `device.autodiff()` and is
//! evaluated through `Module::valid()`, so evaluation records no autodiff graph.
//!
//! One concept per file: `data` (a client's data, host and device), `loss` (the
//! objective), `eval` (accuracy and loss on a node set), `gradients` (a head's per-step
//! gradients, global-norm clipping), `local` (the epoch loop, optimizer, model
//! selection), `sgd` and `adam` (plain SGD's and Adam's steps, fused on burn-flex), `trainer` (the middleware
//! seam defenses plug trainers into), `per_node` (DP-GNN's per-node gradients), `config`.

mod adam;
pub mod config;
mod data;
mod eval;
mod gradients;
mod local;
mod loss;
pub mod per_node;
mod sgd;
mod trainer;

pub use config::{OptimizerKind, Selection, TrainConfig};
pub use data::{ClientTensors, LinkTensors, LocalData, NodeSet};
pub use eval::{
    Eval, Scores, accuracy, auc_roc, evaluate_set, forward_eval, forward_eval_from, forward_eval_on, forward_train, positive_scores,
};
pub use gradients::{HeadGradient, HeadSteps, clip_global_norm};
pub use local::{EpochScore, LocalStats, Refine, Selector, optimizer, train_local, train_local_with};
pub use loss::{CrossEntropy, Loss, cross_entropy};
pub use trainer::{FullBatch, LocalTrainer, NextTrainer, TrainCall, TrainerChain};

#[cfg(test)]
mod tests {
    use burn::module::{Module, ModuleVisitor, Param};
    use burn::optim::GradientsParams;
    use burn::tensor::Tensor;

    use super::*;
    use crate::data::Graph;
    use crate::data::{Features, Role};
    use crate::model::GraphTensors;

    fn score(val_loss: f64, val_acc: f64, train_acc: f64) -> EpochScore {
        EpochScore { val_loss: Some(val_loss), val_acc: Some(val_acc), train_acc: Some(train_acc) }
    }

    /// LPGNN's rule on a scripted run with keep probability 0.5 (caps: val 0.5, train
    /// 0.525): which epochs become "best".
    #[test]
    fn lpgnn_selection_rule_on_a_scripted_run() {
        let mut s = Selector::new(Selection::Lpgnn, 0.5);
        let epochs = [
            (score(2.0, 0.10, 0.10), true),   // the first epoch is always kept
            (score(1.9, 0.20, 0.20), true),   // all three improve
            (score(1.8, 0.20, 0.30), false),  // val acc not strictly higher
            (score(1.7, 0.30, 0.20), false),  // train acc lower than the best's (0.20 is not > 0.20)
            (score(1.95, 0.30, 0.30), false), // val loss higher
            (score(1.6, 0.55, 0.30), false),  // val acc above the cap 0.5
            (score(1.6, 0.50, 0.53), false),  // train acc above 1.05 · 0.5
            (score(1.6, 0.50, 0.525), true),  // both exactly at their caps
            (score(1.5, 0.45, 0.50), false),  // val acc dropped
        ];
        for (i, (e, want)) in epochs.iter().enumerate() {
            assert_eq!(s.improves(*e), *want, "epoch {i}");
        }
        let mut v = Selector::new(Selection::ValLoss, 1.0);
        let picks: Vec<bool> = [3.0, 2.0, 2.5, 1.0, 1.0].iter().map(|&l| v.improves(score(l, 0.0, 0.0))).collect();
        assert_eq!(picks, [true, true, false, true, false]);
        assert!(!Selector::new(Selection::Last, 1.0).improves(score(0.0, 1.0, 1.0)));
        let mut a = Selector::new(Selection::ValAcc, 1.0);
        let picks: Vec<bool> = [0.3, 0.5, 0.5, 0.4, 0.6].iter().map(|&acc| a.improves(score(9.0, acc, 0.0))).collect();
        assert_eq!(picks, [true, true, false, false, true]);
    }

    /// PyTorch's `clip_grad_norm_`: one factor max/(‖g‖ + 1e-6) on every gradient when
    /// the global norm exceeds `max`, nothing otherwise.
    #[test]
    fn gradients_are_clipped_by_their_global_norm() {
        use crate::model::config::{Arch, ModelConfig};
        use crate::model::input::{InputLayout, NodeInput};
        use crate::model::tests::support::{f64_ad, sparse_features, tiny_graph, values};
        let opts = f64_ad();
        let g = GraphTensors::new(&tiny_graph(), opts.clone()).unwrap();
        let x = NodeInput::with_layout(&sparse_features(3, 6, 10, 0.5), InputLayout::Sparse, opts.clone());
        let model = ModelConfig { arch: Arch::Sage, head: true, dropout: 0.0, ..ModelConfig::default() }.init(10, 3, 7, opts).unwrap();
        let grads = || GradientsParams::from_grads(model.forward(&x, &g).logits.powf_scalar(2.0).sum().backward(), &model);
        // Every gradient on the host, in visiting order.
        struct Host<'a>(&'a GradientsParams, Vec<Vec<f64>>);
        impl ModuleVisitor for Host<'_> {
            fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
                self.1.push(values(self.0.get::<D>(param.id).expect("a gradient per parameter")));
            }
        }
        let host = |gp: &GradientsParams| {
            let mut h = Host(gp, Vec::new());
            model.visit(&mut h);
            h.1
        };
        let before = host(&grads());
        assert!(before.len() >= 5, "SAGE 2 layers + head: {}", before.len());
        let norm = before.iter().flatten().map(|v| v * v).sum::<f64>().sqrt();
        assert!(norm > 0.0);

        let mut loose = grads();
        assert!((clip_global_norm(&mut loose, &model, 2.0 * norm) - norm).abs() < 1e-9 * norm);
        assert_eq!(host(&loose), before, "below the bound nothing changes");

        let mut tight = grads();
        clip_global_norm(&mut tight, &model, norm / 4.0);
        let after = host(&tight);
        let coef = (norm / 4.0) / (norm + 1e-6);
        for (a, b) in after.iter().flatten().zip(before.iter().flatten()) {
            assert!((a - coef * b).abs() <= 1e-12 * norm, "{a} vs {coef}·{b}");
        }
        let clipped = after.iter().flatten().map(|v| v * v).sum::<f64>().sqrt();
        assert!((clipped - norm / 4.0).abs() < 1e-6 * norm, "{clipped} vs {}", norm / 4.0);
    }

    #[test]
    fn label_transitions_compose_by_matrix_product() {
        let (graph, _) = Graph::from_edges(2, [(0, 1)], "t").unwrap();
        let features = Features::Dense(crate::data::DenseMatrix::zeros(2, 1));
        let mut d = LocalData {
            graph,
            features,
            labels: vec![Some(0), Some(1)],
            roles: vec![Role::Train; 2],
            classes: 2,
            label_transition: None,
            feature_kprop: 0,
            link: None,
        };
        d.compose_label_transition(&[0.75, 0.25, 0.25, 0.75]);
        assert_eq!(d.label_transition.as_deref(), Some(&[0.75, 0.25, 0.25, 0.75][..]));
        d.compose_label_transition(&[0.5, 0.5, 0.0, 1.0]);
        // [[.75, .25], [.25, .75]] · [[.5, .5], [0, 1]] = [[.375, .625], [.125, .875]]
        assert_eq!(d.label_transition.as_deref(), Some(&[0.375, 0.625, 0.125, 0.875][..]));
    }
}

//! KProp (LPGNN's denoiser): K rounds of x ← Ã·x with Ã = D^{-1/2} A D^{-1/2}, no self
//! loops and no parameters. An isolated node's row becomes 0 after the first round
//! (PyG `gcn_norm(add_self_loops=False)` gives it no edges), as in LPGNN.

use burn::module::Module;
use burn::tensor::Tensor;

use super::graph_tensors::{GraphTensors, Norm};

/// `steps` rounds of symmetric-normalised neighbour aggregation; `steps = 0` is the
/// identity. Works on any `[N, F]` tensor: features, logits or one-hot labels.
pub fn kprop(x: Tensor<2>, graph: &GraphTensors, steps: usize) -> Tensor<2> {
    (0..steps).fold(x, |x, _| graph.propagate(x, Norm::Sym))
}

/// [`kprop`] as a (parameter-free) module, for composing with layers.
#[derive(Module, Debug)]
pub struct KProp {
    pub steps: usize,
}

impl KProp {
    pub fn forward(&self, x: Tensor<2>, graph: &GraphTensors) -> Tensor<2> {
        kprop(x, graph, self.steps)
    }
}

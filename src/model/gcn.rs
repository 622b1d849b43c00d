//! GCN layer (Kipf & Welling; PyG `GCNConv` defaults): out = Â·(X·W) + b with
//! Â = D̂^{-1/2}(A + I)D̂^{-1/2}.

use burn::module::{Module, Param};
use burn::tensor::Tensor;

use super::graph_tensors::{GraphTensors, Norm};
use super::init::Init;
use super::input::NodeInput;

#[derive(Module, Debug)]
pub struct GcnConv {
    /// `[in, out]`, Glorot-uniform.
    pub weight: Param<Tensor<2>>,
    /// `[out]`, zeros.
    pub bias: Param<Tensor<1>>,
}

impl GcnConv {
    pub fn new(d_in: usize, d_out: usize, init: &mut Init) -> GcnConv {
        GcnConv { weight: init.glorot([d_in, d_out], d_in, d_out), bias: init.zeros([d_out]) }
    }

    /// The linear part X·W (`[N, out]`). Split from [`aggregate`](Self::aggregate) so that
    /// a parameter-free linear propagation (KProp) can be applied after it: both are
    /// linear, so KProp(X)·W = KProp(X·W), and the narrow side is far cheaper.
    pub fn transform(&self, x: &NodeInput) -> Tensor<2> {
        x.matmul(self.weight.val())
    }

    /// Â·h + b.
    pub fn aggregate(&self, h: Tensor<2>, graph: &GraphTensors) -> Tensor<2> {
        graph.propagate(h, Norm::Gcn) + self.bias.val().unsqueeze_dim(0)
    }

    pub fn forward(&self, x: &NodeInput, graph: &GraphTensors) -> Tensor<2> {
        self.aggregate(self.transform(x), graph)
    }

    pub fn d_out(&self) -> usize {
        self.weight.shape().dims::<2>()[1]
    }
}

//! GraphSAGE layer (PyG `SAGEConv`, mean aggregation, `root_weight=True`,
//! `normalize=False`): out_v = W_root·x_v + W_nbr·mean_{u∈N(v)} x_u + b.
//!
//! Computed as the two products X·W_root and X·W_nbr stacked by rows (`[2N, out]`),
//! followed by a mean over neighbours of the second block: the mean is linear, so
//! mean(X)·W_nbr = mean(X·W_nbr), and aggregating the narrow transformed rows is cheaper
//! than aggregating raw features. Stacked by rows, not side by side as X·[W_root |
//! W_nbr]: column halves are strided views, and burn-flex copies those (and the weight
//! gradients a column concatenation hands the optimizer) element by element, which cost
//! half of a wide SAGE epoch (callgrind, EC-LDA's 1433 → 512 → 64 model).

use burn::module::{Module, Param};
use burn::tensor::Tensor;

use super::graph_tensors::{GraphTensors, Norm};
use super::init::Init;
use super::input::NodeInput;
use super::kprop::kprop;

#[derive(Module, Debug)]
pub struct SageConv {
    /// `[in, out]` applied to the node itself (PyG `lin_r`).
    pub w_root: Param<Tensor<2>>,
    /// `[in, out]` applied to the neighbour mean (PyG `lin_l`).
    pub w_nbr: Param<Tensor<2>>,
    /// `[out]` (PyG `lin_l.bias`).
    pub bias: Param<Tensor<1>>,
}

impl SageConv {
    /// PyG initialises both linear maps like torch's `nn.Linear` (uniform ±1/sqrt(in)),
    /// bias included; so does this.
    pub fn new(d_in: usize, d_out: usize, init: &mut Init) -> SageConv {
        SageConv {
            w_root: init.torch_linear([d_in, d_out], d_in),
            w_nbr: init.torch_linear([d_in, d_out], d_in),
            bias: init.torch_linear([d_out], d_in),
        }
    }

    pub fn d_out(&self) -> usize {
        self.w_root.shape().dims::<2>()[1]
    }

    /// X·W_root stacked over X·W_nbr: `[2N, out]`.
    pub fn transform(&self, x: &NodeInput) -> Tensor<2> {
        Tensor::cat(vec![x.matmul(self.w_root.val()), x.matmul(self.w_nbr.val())], 0)
    }

    /// KProp on a [`transform`](Self::transform) output: each stacked block propagated
    /// on its own (KProp is linear, so KProp(X)·W = KProp(X·W)).
    pub fn kprop(&self, h: Tensor<2>, graph: &GraphTensors, steps: usize) -> Tensor<2> {
        if steps == 0 {
            return h;
        }
        let n = h.dims()[0] / 2;
        Tensor::cat(vec![kprop(h.clone().narrow(0, 0, n), graph, steps), kprop(h.narrow(0, n, n), graph, steps)], 0)
    }

    /// h_root + mean_nbr(h_nbr) + b, for `h` from [`transform`](Self::transform).
    pub fn aggregate(&self, h: Tensor<2>, graph: &GraphTensors) -> Tensor<2> {
        let n = h.dims()[0] / 2;
        let root = h.clone().narrow(0, 0, n);
        let nbr = h.narrow(0, n, n);
        root + graph.propagate(nbr, Norm::Mean) + self.bias.val().unsqueeze_dim(0)
    }

    pub fn forward(&self, x: &NodeInput, graph: &GraphTensors) -> Tensor<2> {
        self.aggregate(self.transform(x), graph)
    }
}

//! Graph attention layer with PyG `GATConv` semantics.
//!
//! Per head h: z = X·W_h; for every edge u→v including self loops,
//! e_uv = LeakyReLU_{0.2}(a_src·z_u + a_dst·z_v); α_uv = softmax of e over the edges
//! into v; out_v = Σ_u α_uv z_u. Heads are concatenated (hidden layers) or averaged
//! (output layer), then the bias is added.
//!
//! The per-target softmax of the logits is [`Edges::edge_softmax`](super::propagate::Edges::edge_softmax)
//! (one fused kernel on the CPU backend).

use burn::module::{Module, Param};
use burn::tensor::Tensor;

use super::dropout::dropout;
use super::graph_tensors::GraphTensors;
use super::init::Init;
use super::input::NodeInput;
use crate::rng::Rng;

#[derive(Module, Debug)]
pub struct GatConv {
    /// `[in, heads·channels]`, Glorot-uniform (all heads side by side).
    pub weight: Param<Tensor<2>>,
    /// `[heads, channels]`, Glorot-uniform (PyG `att_src`).
    pub att_src: Param<Tensor<2>>,
    /// `[heads, channels]`, Glorot-uniform (PyG `att_dst`).
    pub att_dst: Param<Tensor<2>>,
    /// `[heads·channels]` when concatenating, else `[channels]`; zeros.
    pub bias: Param<Tensor<1>>,
    pub heads: usize,
    pub channels: usize,
    /// Concatenate heads (true) or average them (false).
    pub concat: bool,
    /// LeakyReLU slope for the attention logits (PyG default 0.2).
    pub negative_slope: f64,
    /// Dropout on the attention coefficients during training (PyG `dropout`).
    pub attention_dropout: f64,
}

impl GatConv {
    pub fn new(d_in: usize, channels: usize, heads: usize, concat: bool, attention_dropout: f64, init: &mut Init) -> GatConv {
        let width = heads * channels;
        GatConv {
            weight: init.glorot([d_in, width], d_in, width),
            att_src: init.glorot([heads, channels], heads, channels),
            att_dst: init.glorot([heads, channels], heads, channels),
            bias: init.zeros([if concat { width } else { channels }]),
            heads,
            channels,
            concat,
            negative_slope: 0.2,
            attention_dropout,
        }
    }

    /// Output width: heads·channels when concatenating, channels when averaging.
    pub fn d_out(&self) -> usize {
        if self.concat { self.heads * self.channels } else { self.channels }
    }

    /// z = X·W for all heads at once: `[N, heads·channels]`.
    pub fn transform(&self, x: &NodeInput) -> Tensor<2> {
        x.matmul(self.weight.val())
    }

    /// `[heads·channels, heads]` with `att[h]` in rows `h·channels..` of column `h` and
    /// zeros elsewhere, so that z·A gives every head's a·z_v in one product.
    fn block_diagonal(&self, att: &Param<Tensor<2>>) -> Tensor<2> {
        let (h, c) = (self.heads, self.channels);
        let att = att.val();
        let mask: Vec<f32> = (0..h * c).flat_map(|i| (0..h).map(move |k| if i / c == k { 1.0 } else { 0.0 })).collect();
        let mask = Tensor::<2>::from_data(burn::tensor::TensorData::new(mask, [h * c, h]), super::propagate::like(&att));
        att.reshape([h * c, 1]) * mask
    }

    /// Attention coefficients α over the self-looped edges
    /// ([`GraphTensors::edges_with_self_loops`] order): `[E + N, heads]`, summing to 1 over
    /// the edges into each node. With `rng` (training) attention dropout is applied.
    ///
    /// The per-node terms a_src·z_v and a_dst·z_v of all heads come from one product of z
    /// with both block-diagonal attention matrices (`[N, 2·heads]`), rather than a
    /// `[N, heads, channels]` product and sum each (four passes over z's size, forward
    /// and backward).
    pub fn attention(&self, z: Tensor<2>, graph: &GraphTensors, rng: Option<&mut Rng>) -> Tensor<2> {
        let edges = graph.edges_with_self_loops();
        let h = self.heads;
        let scores = z.matmul(Tensor::cat(vec![self.block_diagonal(&self.att_src), self.block_diagonal(&self.att_dst)], 1));
        let a_src = scores.clone().narrow(1, 0, h);
        let a_dst = scores.narrow(1, h, h);
        dropout(edges.edge_softmax(a_src, a_dst, self.negative_slope), self.attention_dropout, rng)
    }

    /// Attention-weighted sum of transformed neighbours, heads combined, plus bias.
    pub fn aggregate(&self, z: Tensor<2>, graph: &GraphTensors, rng: Option<&mut Rng>) -> Tensor<2> {
        let [n, _] = z.dims();
        let (h, c) = (self.heads, self.channels);
        let alpha = self.attention(z.clone(), graph, rng);
        let out = graph.edges_with_self_loops().propagate(z, Some(&alpha));
        let out = if self.concat { out } else { out.reshape([n, h, c]).mean_dim(1).reshape([n, c]) };
        out + self.bias.val().unsqueeze_dim(0)
    }

    pub fn forward(&self, x: &NodeInput, graph: &GraphTensors, rng: Option<&mut Rng>) -> Tensor<2> {
        self.aggregate(self.transform(x), graph, rng)
    }
}

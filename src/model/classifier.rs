//! Node classifier: optional KProp → 1–3 GNN layers → optional fully connected head.
//!
//! Without the head the last GNN layer produces the class logits. With it (EC-LDA's
//! model: conv layers then `fc`) the last GNN layer produces `hidden` features, the
//! activation follows, and `Linear(hidden → classes)` produces the logits; the head's
//! input is returned so that an attack can observe it.

use burn::module::Module;
use burn::nn::Linear;
use burn::tensor::{Device, Int, Tensor, TensorCreationOptions, TensorData};

use crate::data::Task;
use crate::error::{Error, Result};

use super::activation::Activation;
use super::config::{Arch, ModelConfig};
use super::dropout::dropout;
use super::gat::GatConv;
use super::gcn::GcnConv;
use super::graph_tensors::GraphTensors;
use super::init::Init;
use super::input::NodeInput;
use super::kprop::kprop;
use super::propagate::select_rows;
use super::sage::SageConv;
use crate::rng::Rng;

/// Node pairs `(u, v)` as two index tensors.
pub type Pairs = (Tensor<1, Int>, Tensor<1, Int>);

/// `pairs` as [`Pairs`] on `device` (`None` for none: Burn tensors cannot be empty on
/// every backend).
pub fn pairs_on<'a>(pairs: impl Iterator<Item = &'a (u32, u32)>, device: &Device) -> Option<Pairs> {
    let (u, v): (Vec<i64>, Vec<i64>) = pairs.map(|&(u, v)| (i64::from(u), i64::from(v))).unzip();
    let n = u.len();
    (n > 0).then(|| (Tensor::from_data(TensorData::new(u, [n]), device), Tensor::from_data(TensorData::new(v, [n]), device)))
}

/// One GNN layer of any architecture.
#[derive(Module, Debug)]
pub enum Conv {
    Gcn(GcnConv),
    Sage(SageConv),
    Gat(GatConv),
}

impl Conv {
    /// The layer's linear part X·W (see [`GcnConv::transform`] for why it is separate).
    pub fn transform(&self, x: &NodeInput) -> Tensor<2> {
        match self {
            Conv::Gcn(c) => c.transform(x),
            Conv::Sage(c) => c.transform(x),
            Conv::Gat(c) => c.transform(x),
        }
    }

    /// KProp applied to the rows [`transform`](Self::transform) returned (it is linear,
    /// so KProp(X)·W = KProp(X·W)); SAGE's transform stacks two products by rows, each
    /// propagated on its own.
    pub fn kprop(&self, h: Tensor<2>, graph: &GraphTensors, steps: usize) -> Tensor<2> {
        match self {
            Conv::Sage(c) => c.kprop(h, graph, steps),
            _ => kprop(h, graph, steps),
        }
    }

    /// The rest of the layer: propagation over the graph and bias.
    pub fn aggregate(&self, h: Tensor<2>, graph: &GraphTensors, rng: Option<&mut Rng>) -> Tensor<2> {
        match self {
            Conv::Gcn(c) => c.aggregate(h, graph),
            Conv::Sage(c) => c.aggregate(h, graph),
            Conv::Gat(c) => c.aggregate(h, graph, rng),
        }
    }

    pub fn d_out(&self) -> usize {
        match self {
            Conv::Gcn(c) => c.d_out(),
            Conv::Sage(c) => c.d_out(),
            Conv::Gat(c) => c.d_out(),
        }
    }
}

/// What a forward pass returns.
#[derive(Debug, Clone)]
pub struct Output {
    /// `[N, classes]`, before softmax.
    pub logits: Tensor<2>,
    /// `[N, hidden]`: what the fully connected head received (after activation and, in
    /// training, dropout); `None` without a head.
    pub head_input: Option<Tensor<2>>,
}

impl ModelConfig {
    /// A freshly initialised classifier for `in_dim` input features and `classes`
    /// outputs. Initial weights come from `seed` alone (drawn on the host, see
    /// `init.rs`), so every backend and thread count gets the same model; `options` is
    /// the device, e.g. `&device` or `(&device, DType::F64)`.
    pub fn init(&self, in_dim: usize, classes: usize, seed: u64, options: impl Into<TensorCreationOptions>) -> Result<NodeClassifier> {
        self.validate()?;
        if in_dim == 0 {
            return Err(Error::param("model", "the input has no feature columns"));
        }
        if classes == 0 {
            return Err(Error::param("model", "there are no classes to predict"));
        }
        Ok(NodeClassifier::new(self, in_dim, classes, seed, options.into()))
    }

    /// Whether the model can learn `task`: link prediction scores a pair through the head.
    pub fn check_task(&self, task: Task) -> Result<()> {
        if task == Task::Link && !self.head {
            return Err(Error::param("model.head", "`task: link` scores a pair through the fully connected head: set `model.head: true`"));
        }
        Ok(())
    }

    /// [`init`](Self::init) for `task`: link prediction adds the pair layer the EC-LDA
    /// code puts between the endpoints' product and the head (`fc1`: `Linear(hidden →
    /// hidden)` and the activation; its draws come after every other layer's, so a node
    /// model is initialised as before) and needs the head.
    pub fn init_for(
        &self,
        task: Task,
        in_dim: usize,
        classes: usize,
        seed: u64,
        options: impl Into<TensorCreationOptions>,
    ) -> Result<NodeClassifier> {
        self.check_task(task)?;
        let options = options.into();
        let mut model = self.init(in_dim, classes, seed, options.clone())?;
        if task == Task::Link {
            let d = model.convs.last().expect("a classifier has at least one layer").d_out();
            // A stream of its own: the other layers' values do not depend on it.
            let mut init = Init::new(seed ^ 0x5041_4952, options);
            model.pair_fc = Some(Linear { weight: init.torch_linear([d, d], d), bias: Some(init.torch_linear([d], d)) });
        }
        Ok(model)
    }
}

#[derive(Module, Debug)]
pub struct NodeClassifier {
    pub convs: Vec<Conv>,
    /// `Linear(hidden → classes)`, torch-default init (uniform ±1/sqrt(hidden)).
    pub head: Option<Linear>,
    /// Link prediction: `Linear(hidden → hidden)` on h_u ⊙ h_v, then the activation,
    /// before the head (the EC-LDA code's `fc1`).
    pub pair_fc: Option<Linear>,
    #[module(skip)]
    pub activation: Activation,
    pub dropout: f64,
    /// KProp rounds on the input features. Applied after the first layer's linear map
    /// (KProp(X)·W = KProp(X·W), both being linear), which is exact and far cheaper
    /// than propagating raw features every epoch.
    pub kprop_steps: usize,
}

impl NodeClassifier {
    /// Build from a validated config (see [`ModelConfig::init`]).
    pub(crate) fn new(config: &ModelConfig, in_dim: usize, classes: usize, seed: u64, options: TensorCreationOptions) -> NodeClassifier {
        let mut init = Init::new(seed, options);
        let head_on = config.head;
        let mut d_in = in_dim;
        let mut convs = Vec::with_capacity(config.layers);
        for i in 0..config.layers {
            // The last layer is the "output" layer: logits without a head, `hidden`
            // features for the head with one. GAT uses one head there, as PyG/LPGNN do.
            let last = i + 1 == config.layers;
            let d_out = if last && !head_on { classes } else { config.hidden.width(i) };
            let conv = match config.arch {
                Arch::Gcn => Conv::Gcn(GcnConv::new(d_in, d_out, &mut init)),
                Arch::Sage => Conv::Sage(SageConv::new(d_in, d_out, &mut init)),
                Arch::Gat => {
                    let (heads, concat) = if last { (1, false) } else { (config.heads, true) };
                    Conv::Gat(GatConv::new(d_in, d_out, heads, concat, config.attention_dropout, &mut init))
                }
            };
            d_in = conv.d_out();
            convs.push(conv);
        }
        let head =
            head_on.then(|| Linear { weight: init.torch_linear([d_in, classes], d_in), bias: Some(init.torch_linear([classes], d_in)) });
        NodeClassifier {
            convs,
            head,
            pair_fc: None,
            activation: config.activation,
            dropout: config.dropout,
            kprop_steps: config.kprop_steps,
        }
    }

    /// Evaluation forward pass (no dropout).
    pub fn forward(&self, input: &NodeInput, graph: &GraphTensors) -> Output {
        self.forward_with(input, graph, None)
    }

    /// Training forward pass: dropout masks drawn from `rng` (derive it from seed,
    /// client and round so that runs repeat exactly).
    pub fn forward_train(&self, input: &NodeInput, graph: &GraphTensors, rng: &mut Rng) -> Output {
        self.forward_with(input, graph, Some(rng))
    }

    /// Forward pass, in training mode (dropout) when `rng` is given. A defense's feature
    /// smoothing (LPGNN's KProp_x) travels with the input ([`NodeInput::Smoothed`]).
    pub fn forward_with(&self, input: &NodeInput, graph: &GraphTensors, rng: Option<&mut Rng>) -> Output {
        self.forward_from(input, None, graph, rng)
    }

    /// The first layer's linear part X·W under these weights, before any propagation.
    /// Forwards on the same input by the same weights can share it (dropout acts after
    /// activations, never on X, so training and evaluation multiply alike): on dense
    /// features (an LDP mechanism's output) it is most of a forward pass.
    pub fn first_product(&self, input: &NodeInput) -> Tensor<2> {
        self.convs[0].transform(input)
    }

    /// [`forward_with`](Self::forward_with) given `first` = [`first_product`](Self::first_product)
    /// of `x` under these weights (`None`: computed here), over `g`.
    pub fn forward_from(&self, x: &NodeInput, first: Option<Tensor<2>>, g: &GraphTensors, rng: Option<&mut Rng>) -> Output {
        self.readout(self.embed(x, first, g, rng))
    }

    /// Link prediction: one row per pair `(u, v)`: the product h_u ⊙ h_v of the
    /// endpoints' outputs of the GNN layers (after the activation), through the pair
    /// layer and the activation when the model has one, then the head (whose input is
    /// what the attacks read). `first`: as in [`forward_from`](Self::forward_from).
    pub fn forward_pairs(
        &self,
        input: &NodeInput,
        first: Option<Tensor<2>>,
        graph: &GraphTensors,
        rng: Option<&mut Rng>,
        pairs: &Pairs,
    ) -> Output {
        let x = self.embed(input, first, graph, rng);
        let (u, v) = pairs;
        let pair = select_rows(x.clone(), u) * select_rows(x, v);
        match &self.pair_fc {
            Some(fc) => self.readout(self.activation.apply(fc.forward(pair))),
            None => self.readout(pair),
        }
    }

    /// The head on `x` (its input kept for the attacks), or `x` as the logits.
    fn readout(&self, x: Tensor<2>) -> Output {
        match &self.head {
            Some(head) => Output { logits: head.forward(x.clone()), head_input: Some(x) },
            None => Output { logits: x, head_input: None },
        }
    }

    /// The GNN layers' output for every node: what the head reads.
    fn embed(&self, input: &NodeInput, mut first: Option<Tensor<2>>, graph: &GraphTensors, mut rng: Option<&mut Rng>) -> Tensor<2> {
        assert_eq!(input.num_nodes(), graph.num_nodes(), "input has {} rows for a graph of {} nodes", input.num_nodes(), graph.num_nodes());
        let depth = self.convs.len();
        let mut x = None;
        for (i, conv) in self.convs.iter().enumerate() {
            let mut h = match x.take() {
                None => first.take().unwrap_or_else(|| conv.transform(input)),
                Some(prev) => conv.transform(&NodeInput::Dense(prev)),
            };
            if i == 0 {
                h = conv.kprop(h, graph, self.kprop_steps);
            }
            let mut out = conv.aggregate(h, graph, rng.as_deref_mut());
            if i + 1 < depth || self.head.is_some() {
                out = dropout(self.activation.apply(out), self.dropout, rng.as_deref_mut());
            }
            x = Some(out);
        }
        x.expect("a classifier has at least one layer")
    }
}

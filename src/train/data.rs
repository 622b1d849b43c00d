//! A client's data: on the host as [`LocalData`] (what client-side defenses transform),
//! on the device as [`ClientTensors`] (built once per client and reused every round).

use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::data::link_split::{LabelledPairs, negative_pairs};
use crate::data::{Dataset, Features, Graph, LinkSplit, Role, Split};
use crate::error::Result;
use crate::model::{GraphTensors, NodeInput, Pairs, pairs_on};
use crate::partition::Client;

/// One client's private data on the host: its induced subgraph, features, labels and
/// split roles, in local node ids. Client-side defenses transform this before training.
#[derive(Debug, Clone)]
pub struct LocalData {
    pub graph: Graph,
    pub features: Features,
    pub labels: Vec<Option<u32>>,
    pub roles: Vec<Role>,
    pub classes: usize,
    /// How the labels as held relate to the true ones, when a defense randomised them:
    /// P[true][held], `classes × classes` row-major (`None`: clean labels). Defenses
    /// that randomise labels compose their matrix onto it; losses that correct for
    /// label noise read it.
    pub label_transition: Option<Vec<f64>>,
    /// KProp rounds a defense asked for on the features over this client's graph
    /// (LPGNN's KProp_x), applied in the model's first layer on top of its own.
    pub feature_kprop: usize,
    /// Link prediction: the client's edge split (`graph` is then its training edges).
    pub link: Option<LinkSplit>,
}

impl LocalData {
    /// The part of `dataset` held by `client` (features required).
    pub fn of_client(dataset: &Dataset, client: &Client, split: &Split) -> Result<LocalData> {
        let features = dataset.require_features()?.select_rows(&client.nodes);
        Ok(LocalData {
            graph: client.graph.clone(),
            features,
            labels: client.nodes.iter().map(|&v| dataset.labels[v]).collect(),
            roles: split.restrict(&client.nodes).roles,
            classes: dataset.num_classes(),
            label_transition: None,
            feature_kprop: 0,
            link: None,
        })
    }

    /// Turn the client to link prediction on `split` (of its graph): message passing in
    /// training then sees only the training edges, and the classes are {no link, link}.
    pub fn predict_links(&mut self, split: LinkSplit) {
        self.graph = split.train_graph.clone();
        self.classes = 2;
        self.link = Some(split);
    }

    /// Record that the labels were randomised once more with transition matrix `p`
    /// (P[held before][held after]): the recorded matrix becomes P_before · p.
    pub fn compose_label_transition(&mut self, p: &[f64]) {
        let k = self.classes;
        assert_eq!(p.len(), k * k, "label transition matrix of {k} classes");
        self.label_transition = Some(match &self.label_transition {
            None => p.to_vec(),
            Some(before) => (0..k * k).map(|ij| (0..k).map(|l| before[ij / k * k + l] * p[l * k + ij % k]).sum()).collect(),
        });
    }

    pub fn count(&self, role: Role) -> usize {
        self.roles.iter().filter(|&&r| r == role).count()
    }

    /// The train nodes that hold a label, ascending.
    pub fn labelled_train_nodes(&self) -> Vec<usize> {
        (0..self.roles.len()).filter(|&v| self.roles[v] == Role::Train && self.labels[v].is_some()).collect()
    }

    /// Y′: the one-hot labels as held, `[N, classes]` row-major, with the rows of test
    /// (and unlabelled) nodes zeroed (what LPGNN's Drop and RGNN's fY propagate).
    pub fn held_one_hot(&self) -> Vec<f32> {
        let k = self.classes;
        let mut held = vec![0f32; self.labels.len() * k];
        for (v, (label, role)) in self.labels.iter().zip(&self.roles).enumerate() {
            if let (Some(y), Role::Train | Role::Val) = (label, role) {
                held[v * k + *y as usize] = 1.0;
            }
        }
        held
    }

    /// Per-class counts of the labels of the train nodes as held here (after any
    /// defense that randomised them); in link prediction, of an epoch's training pairs
    /// ({no link, link}).
    pub fn train_label_counts(&self) -> Vec<usize> {
        if let Some(split) = &self.link {
            return split.label_counts();
        }
        let mut counts = vec![0usize; self.classes];
        for (label, role) in self.labels.iter().zip(&self.roles) {
            if let (Some(y), Role::Train) = (label, role) {
                counts[*y as usize] += 1;
            }
        }
        counts
    }
}

/// Rows of a forward pass with their labels, on the device: nodes of one role, or in
/// link prediction node pairs (the rows of [`crate::model::NodeClassifier::forward_pairs`]).
#[derive(Debug, Clone)]
pub struct NodeSet {
    /// `None` when the set is empty (Burn tensors cannot be empty on every backend).
    pub index: Option<(Tensor<1, Int>, Tensor<1, Int>)>,
    pub len: usize,
}

impl NodeSet {
    fn new(data: &LocalData, role: Role, device: &Device) -> NodeSet {
        let (mut idx, mut y) = (Vec::new(), Vec::new());
        for (v, (label, r)) in data.labels.iter().zip(&data.roles).enumerate() {
            if let (Some(label), true) = (label, *r == role) {
                idx.push(v as i64);
                y.push(i64::from(*label));
            }
        }
        NodeSet::of(idx, y, device)
    }

    fn of(idx: Vec<i64>, y: Vec<i64>, device: &Device) -> NodeSet {
        let len = idx.len();
        let index = (len > 0)
            .then(|| (Tensor::from_data(TensorData::new(idx, [len]), device), Tensor::from_data(TensorData::new(y, [len]), device)));
        NodeSet { index, len }
    }

    /// Rows 0..n labelled `labels` (a link set's pairs in order).
    fn rows(labels: impl IntoIterator<Item = u8>, device: &Device) -> NodeSet {
        let y: Vec<i64> = labels.into_iter().map(i64::from).collect();
        NodeSet::of((0..y.len() as i64).collect(), y, device)
    }
}

/// A client's link-prediction data: the validation and test pairs on the device, the
/// graph message passing sees when testing, and what drawing each epoch's training
/// negatives needs on the host.
#[derive(Debug, Clone)]
pub struct LinkTensors {
    train_pos: Vec<(u32, u32)>,
    /// The client's whole graph: negatives avoid all of its edges.
    graph: Graph,
    negatives: usize,
    pub val: Option<Pairs>,
    pub test: Option<Pairs>,
    /// The training and validation edges.
    pub test_graph: GraphTensors,
    device: Device,
}

impl LinkTensors {
    /// This epoch's training pairs: the positives, then as many negatives as the split
    /// says, drawn afresh with `rng` (`None` without training edges).
    pub fn train_pairs(&self, rng: &mut crate::rng::Rng) -> Option<Pairs> {
        let negatives = negative_pairs(&self.graph, self.negatives, &Default::default(), rng).expect("counted when the split was made");
        pairs_on(self.train_pos.iter().chain(&negatives), &self.device)
    }
}

/// A client's data on the device, built once and reused every round.
#[derive(Debug, Clone)]
pub struct ClientTensors {
    pub graph: GraphTensors,
    pub input: NodeInput,
    pub train: NodeSet,
    pub val: NodeSet,
    pub test: NodeSet,
    pub classes: usize,
    /// P[y][y] of the labels as held (1 for clean labels; the randomized-response keep
    /// probability): the highest accuracy the held labels allow, which LPGNN's model
    /// selection caps train and validation accuracy by.
    pub label_keep: f64,
    /// Link prediction: `train`, `val` and `test` are then rows of pairs.
    pub link: Option<LinkTensors>,
}

impl ClientTensors {
    /// `first_width`: output columns of the model's first layer (see
    /// `ModelConfig::first_width`), which decides the input's layout.
    pub fn new(data: &LocalData, first_width: usize, device: &Device) -> Result<ClientTensors> {
        let (train, val, test, link) = match &data.link {
            None => (
                NodeSet::new(data, Role::Train, device),
                NodeSet::new(data, Role::Val, device),
                NodeSet::new(data, Role::Test, device),
                None,
            ),
            Some(s) => {
                let rows = |p: &LabelledPairs| NodeSet::rows(p.labels.iter().copied(), device);
                let train = NodeSet::rows(s.train.iter().map(|_| 1).chain((0..s.train_negatives).map(|_| 0)), device);
                let link = LinkTensors {
                    train_pos: s.train.clone(),
                    graph: s.graph.clone(),
                    negatives: s.train_negatives,
                    val: pairs_on(s.val.pairs.iter(), device),
                    test: pairs_on(s.test.pairs.iter(), device),
                    test_graph: GraphTensors::new(&s.test_graph, device)?,
                    device: device.clone(),
                };
                (train, rows(&s.val), rows(&s.test), Some(link))
            }
        };
        let graph = GraphTensors::new(&data.graph, device)?;
        // A defense's feature smoothing runs over this graph, whatever graph the model
        // trains on later (Solitude's learned adjacency): it goes with the input.
        let input = NodeInput::from_features(&data.features, first_width, device).smoothed(&graph, data.feature_kprop);
        Ok(ClientTensors {
            graph,
            input,
            train,
            val,
            test,
            classes: data.classes,
            label_keep: data.label_transition.as_ref().map_or(1.0, |p| p[0]),
            link,
        })
    }
}

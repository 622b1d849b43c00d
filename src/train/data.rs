//! A client's data: on the host as [`LocalData`] (what client-side defenses transform),
//! on the device as [`ClientTensors`] (built once per client and reused every round).

use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::data::{Dataset, Features, Graph, Role, Split};
use crate::error::Result;
use crate::model::{GraphTensors, NodeInput};
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
        })
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
    /// defense that randomised them).
    pub fn train_label_counts(&self) -> Vec<usize> {
        let mut counts = vec![0usize; self.classes];
        for (label, role) in self.labels.iter().zip(&self.roles) {
            if let (Some(y), Role::Train) = (label, role) {
                counts[*y as usize] += 1;
            }
        }
        counts
    }
}

/// Nodes of one role with their labels, on the device.
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
        let len = idx.len();
        let index = (len > 0)
            .then(|| (Tensor::from_data(TensorData::new(idx, [len]), device), Tensor::from_data(TensorData::new(y, [len]), device)));
        NodeSet { index, len }
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
    /// [`LocalData::feature_kprop`].
    pub input_kprop: usize,
    /// P[y][y] of the labels as held (1 for clean labels; the randomized-response keep
    /// probability): the highest accuracy the held labels allow, which LPGNN's model
    /// selection caps train and validation accuracy by.
    pub label_keep: f64,
}

impl ClientTensors {
    /// `first_width`: output columns of the model's first layer (see
    /// `ModelConfig::first_width`), which decides the input's layout.
    pub fn new(data: &LocalData, first_width: usize, device: &Device) -> Result<ClientTensors> {
        Ok(ClientTensors {
            graph: GraphTensors::new(&data.graph, device)?,
            input: NodeInput::from_features(&data.features, first_width, device),
            train: NodeSet::new(data, Role::Train, device),
            val: NodeSet::new(data, Role::Val, device),
            test: NodeSet::new(data, Role::Test, device),
            classes: data.classes,
            input_kprop: data.feature_kprop,
            label_keep: data.label_transition.as_ref().map_or(1.0, |p| p[0]),
        })
    }
}

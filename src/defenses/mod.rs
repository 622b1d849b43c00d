//! Defenses: what clients do to protect their data from the server. Each defense is
//! one file here (its config implementing [`DefenseConfig`]), a preset in `defenses/`,
//! and one line in the `defenses!` registry below, which declares its module, its
//! [`DefenseSpec`] variant (YAML `kind`) and its built-in preset. A defense builds one
//! instance per client, from a [`ClientContext`]; the instance plays one or more of the
//! roles of [`crate::fed::client`] (data transform, loss, round transform, local trainer)
//! and keeps that client's state, so no defense holds a map from clients to state.

use serde::{Deserialize, Serialize};

use crate::data::Task;
use crate::error::Result;
use crate::fed::upload::{UploadContext, UploadProtocol};
use crate::fed::{ClientContext, ClientPipeline, Defense, DefenseBuilder};

/// What a defense's config (its YAML parameters) provides: the roles it plays.
pub trait DefenseConfig {
    /// The instance of the defense named `name` (as the scenario names it) for `client`,
    /// parameters checked: an error names the field at fault.
    fn build(&self, name: &str, client: &ClientContext) -> Result<Defense>;

    /// What the defense adds to a run's time and memory, for the estimates of `--dry-run`
    /// and `--max-memory`; none unless the defense says otherwise.
    fn cost(&self, _run: &RunSize) -> CostHint {
        CostHint::default()
    }

    /// The tasks the defense protects the training of (a scenario with another is refused).
    const TASKS: &'static [Task] = &[Task::Node];

    /// The defense's federation-wide role, if it has one: how the clients' updates reach
    /// the server (client-level DP at aggregation, secure aggregation), built once per
    /// federation; none by default.
    fn upload(&self, _name: &str, _ctx: &UploadContext) -> Result<Option<Box<dyn UploadProtocol>>> {
        Ok(None)
    }
}

/// The size of a run, as a cost hint sees it.
#[derive(Debug, Clone, Copy)]
pub struct RunSize {
    pub nodes: f64,
    pub edges: f64,
    /// 1 when centralized.
    pub clients: f64,
    /// Bytes of one node's stored features (d·4 dense, 8 per stored value sparse).
    pub row_bytes: f64,
    /// The feature dimension d.
    pub feature_dim: f64,
    /// Message-passing layers, and Σ of their output widths (all heads).
    pub layers: usize,
    pub widths: f64,
    /// Clients training at once.
    pub concurrent: f64,
    /// Clients taking part in a round (expected), and the model's parameter count.
    pub clients_per_round: f64,
    pub parameters: f64,
}

/// Seconds of forward and backward over `work` multiply-adds on this project's 2-core
/// machine: ≈ 3× the work at ≈ 15 GFLOP/s (the time model's calibration,
/// [`crate::estimate::seconds`]), for cost hints that add work of their own.
pub fn training_seconds(work: f64) -> f64 {
    3.0 * work / 1.46e10
}

/// A defense's time relative to plain training (the epochs take `factor` times as long,
/// plus `seconds_per_epoch` of work of its own over every client's part of the graph — a
/// federation that samples clients pays the sampled share — and `training_per_epoch` of
/// work like training's) and what it adds to the run's memory. On another machine the
/// first three scale as the defenses' own work, the last as training
/// ([`crate::estimate::Time`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CostHint {
    pub factor: f64,
    pub seconds_per_epoch: f64,
    /// Seconds per epoch of sparse propagation and products like training's (LPGNN's
    /// KProp steps), over every client's part of the graph as `seconds_per_epoch`.
    pub training_per_epoch: f64,
    /// Work of its own per round (an upload protocol's).
    pub seconds_per_round: f64,
    /// The clients' features become dense (a feature mechanism's output).
    pub dense_features: bool,
    /// Graph entries (arcs) it adds, e.g. the fake edges of edge RR.
    pub extra_arcs: f64,
    /// Bytes of its own at the peak.
    pub extra_bytes: f64,
}

impl Default for CostHint {
    fn default() -> Self {
        CostHint {
            factor: 1.0,
            seconds_per_epoch: 0.0,
            training_per_epoch: 0.0,
            seconds_per_round: 0.0,
            dense_features: false,
            extra_arcs: 0.0,
            extra_bytes: 0.0,
        }
    }
}

/// The parameters of a kind that has none (any field is an error).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// Declares every defense once: its module, its [`DefenseSpec`] variant, its YAML
/// `kind` and built-in preset `defenses/<kind>.yaml`.
macro_rules! defenses {
    ($( $(#[$doc:meta])* $variant:ident($module:ident::$config:ident) = $kind:literal, )*) => {
        $( pub mod $module; )*

        /// A defense as a preset file or a scenario entry describes it: in YAML, `kind:`
        /// beside the variant's parameters (see `presets`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub enum DefenseSpec {
            /// No defense.
            #[serde(rename = "none")]
            None(NoParams),
            $( $(#[$doc])* #[serde(rename = $kind)] $variant($module::$config), )*
        }

        impl DefenseSpec {
            /// The YAML `kind`.
            pub fn kind(&self) -> &'static str {
                match self {
                    DefenseSpec::None(_) => "none",
                    $( DefenseSpec::$variant(_) => $kind, )*
                }
            }

            /// See [`DefenseConfig::cost`].
            pub fn cost(&self, run: &RunSize) -> CostHint {
                match self {
                    DefenseSpec::None(_) => CostHint::default(),
                    $( DefenseSpec::$variant(c) => DefenseConfig::cost(c, run), )*
                }
            }

            /// See [`DefenseConfig::TASKS`] (every task for `kind: none`).
            pub fn tasks(&self) -> &'static [Task] {
                match self {
                    DefenseSpec::None(_) => Task::ALL,
                    $( DefenseSpec::$variant(_) => <$module::$config as DefenseConfig>::TASKS, )*
                }
            }

            /// See [`DefenseConfig::upload`] (none for `kind: none`).
            pub fn upload(&self, name: &str, ctx: &UploadContext) -> Result<Option<Box<dyn UploadProtocol>>> {
                match self {
                    DefenseSpec::None(_) => Ok(None),
                    $( DefenseSpec::$variant(c) => DefenseConfig::upload(c, name, ctx), )*
                }
            }

            /// `client`'s instance of the defense (`None` for `kind: none`).
            pub fn build(&self, name: &str, client: &ClientContext) -> Result<Option<Defense>> {
                Ok(match self {
                    DefenseSpec::None(_) => None,
                    $( DefenseSpec::$variant(c) => Some(DefenseConfig::build(c, name, client)?), )*
                })
            }
        }

        /// (kind, YAML text) of every built-in defense preset.
        pub const PRESETS: &[(&str, &str)] = &[
            ("none", include_str!("../../defenses/none.yaml")),
            $( ($kind, include_str!(concat!("../../defenses/", $kind, ".yaml"))), )*
        ];
    };
}

// The registry: adding a defense is its file, its preset and one line here.
defenses! {
    /// k-ary randomized response on the train and validation labels, optionally with
    /// the forward-corrected loss.
    LdpLabels(ldp_labels::LdpLabelsConfig) = "ldp-labels",
    /// LPGNN's feature mechanisms (multi-bit, one-bit, Laplace, analytic Gaussian) on
    /// every node's features, after an optional feature baseline.
    LdpFeatures(ldp_features::LdpFeaturesConfig) = "ldp-features",
    /// The LPGNN pipeline: feature and label LDP, KProp_x, and the Drop loss.
    Lpgnn(lpgnn::LpgnnConfig) = "lpgnn",
    /// Label-DP (Ghazi et al.): RR or RR-with-prior on the train and validation labels,
    /// optionally in stages that take the received global model as prior.
    LabelDp(label_dp::LabelDpConfig) = "label-dp",
    /// DP-GNN (Daigavane et al.): node-level DP-SGD with degree bounding, per-node
    /// clipping and the multi-term RDP accountant, as the client's local trainer.
    DpGnn(dp_gnn::DpGnnConfig) = "dp-gnn",
    /// The RGNN pipeline (Bhaila et al.): GRR-FS on discrete features, label RR,
    /// reconstruction of both over the graph, and the LLP regulariser over METIS bags.
    Rgnn(rgnn::RgnnConfig) = "rgnn",
    /// Solitude's edge LDP alone: every node randomizes its adjacency row (Warner RR).
    EdgeLdp(edge_ldp::EdgeLdpConfig) = "edge-ldp",
    /// The Solitude pipeline (Lin et al.): multi-bit features, edge LDP, feature and
    /// label smoothing, and graph calibration with a learned sparse adjacency.
    Solitude(solitude::SolitudeConfig) = "solitude",
    /// Local DP on the update: clipped to L2 ≤ C and noised N(0, (σC)²), wrapping the trainer.
    LdpUpdate(ldp_update::LdpUpdateConfig) = "ldp-update",
    /// Client-level DP at aggregation (DP-FedAvg, McMahan et al.): updates clipped to S,
    /// their sum noised N(0, (zS)²) by a trusted aggregator or the server, Poisson
    /// sampling of the clients, the subsampled-Gaussian accountant over rounds.
    DpFedAvg(dp_fedavg::DpFedAvgConfig) = "dp-fedavg",
    /// Secure aggregation (Bonawitz et al.; SecAgg+ with `neighbors`): pairwise and self
    /// masks from X25519 and a PRG, Shamir shares for dropout recovery, fixed point in
    /// Z_2^64; the server sees only the sum.
    SecAgg(secagg::SecAggConfig) = "secagg",
}

/// A scenario's defense: its name and spec.
struct Declared {
    name: String,
    spec: DefenseSpec,
}

impl DefenseBuilder for Declared {
    fn name(&self) -> &str {
        &self.name
    }
    fn build(&self, client: &ClientContext) -> Result<Defense> {
        Ok(self.spec.build(&self.name, client)?.expect("`kind: none` is left out of the pipeline"))
    }
    fn upload(&self, ctx: &UploadContext) -> Result<Option<Box<dyn UploadProtocol>>> {
        self.spec.upload(&self.name, ctx)
    }
}

/// The client pipeline of a scenario's defenses (`(name, spec)` in declared order);
/// `kind: none` plays no role and is left out.
pub fn pipeline<'a>(defenses: impl IntoIterator<Item = (&'a str, &'a DefenseSpec)>) -> ClientPipeline {
    ClientPipeline::new(
        defenses
            .into_iter()
            .filter(|(_, spec)| !matches!(spec, DefenseSpec::None(_)))
            .map(|(name, spec)| Box::new(Declared { name: name.to_string(), spec: spec.clone() }) as Box<dyn DefenseBuilder>)
            .collect(),
    )
}

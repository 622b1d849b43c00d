//! The `model:` section of a scenario: which GNN, how deep and wide, and its checks.

use serde::{Deserialize, Serialize};

use super::activation::Activation;
use crate::error::{Error, Result};

/// GNN layer type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    Gcn,
    Sage,
    Gat,
}

/// Node classifier hyper-parameters (YAML `model:`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ModelConfig {
    /// gcn | sage | gat.
    pub arch: Arch,
    /// Number of GNN layers, 1..=3.
    pub layers: usize,
    /// Width of the hidden layers (per head for GAT): one number for all of them, or
    /// one per layer output that is not the logits (`[512, 64]`: EC-LDA's widths).
    pub hidden: Hidden,
    /// GAT heads in hidden layers (the layer producing logits or feeding the head uses 1).
    pub heads: usize,
    pub activation: Activation,
    /// Dropout between layers (including before the head), in [0, 1).
    pub dropout: f64,
    /// GAT attention-coefficient dropout, in [0, 1).
    pub attention_dropout: f64,
    /// KProp rounds applied to the input features (0 = none).
    pub kprop_steps: usize,
    /// Fully connected `Linear(hidden → classes)` after the GNN layers (EC-LDA).
    pub head: bool,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            arch: Arch::Gcn,
            layers: 2,
            hidden: Hidden::All(16),
            heads: 8,
            activation: Activation::Relu,
            dropout: 0.5,
            attention_dropout: 0.0,
            kprop_steps: 0,
            head: false,
        }
    }
}

impl ModelConfig {
    /// How many layer outputs are hidden (not the logits): every GNN layer's with a
    /// head, all but the last one's without.
    pub fn hidden_outputs(&self) -> usize {
        if self.head { self.layers } else { self.layers.saturating_sub(1) }
    }

    /// Output columns of the first layer's X·W for `classes` classes (all heads of a
    /// concatenating GAT layer; root and neighbour halves of a SAGE layer): what the
    /// input layout is chosen for.
    pub fn first_width(&self, classes: usize) -> usize {
        let last = self.layers == 1;
        let out = if last && !self.head { classes } else { self.hidden.width(0) };
        match self.arch {
            Arch::Gat if !last => out * self.heads,
            Arch::Sage => 2 * out,
            _ => out,
        }
    }

    pub fn validate(&self) -> Result<()> {
        if !(1..=3).contains(&self.layers) {
            return Err(Error::param("model.layers", format!("{} is not allowed; allowed 1..=3", self.layers)));
        }
        let outputs = self.hidden_outputs();
        match &self.hidden {
            Hidden::All(0) => return Err(Error::param("model.hidden", "must be at least 1")),
            Hidden::PerLayer(w) if w.len() != outputs => {
                return Err(Error::param(
                    "model.hidden",
                    format!(
                        "{} width(s) given for {outputs} hidden output(s): {} layer(s){} need one width per layer output \
                         other than the logits",
                        w.len(),
                        self.layers,
                        if self.head { " and a head" } else { " without a head" }
                    ),
                ));
            }
            Hidden::PerLayer(w) if w.contains(&0) => return Err(Error::param("model.hidden", "every width must be at least 1")),
            _ => {}
        }
        if self.heads == 0 {
            return Err(Error::param("model.heads", "must be at least 1"));
        }
        // Bounds far above any GNN's, so that a width × heads product cannot overflow
        // (u64::MAX panicked with "capacity overflow").
        let widest = match &self.hidden {
            Hidden::All(w) => *w,
            Hidden::PerLayer(w) => w.iter().copied().max().unwrap_or(1),
        };
        if widest > MAX_WIDTH {
            return Err(Error::param("model.hidden", format!("{widest} is not allowed; allowed 1..={MAX_WIDTH}")));
        }
        if self.heads > MAX_HEADS {
            return Err(Error::param("model.heads", format!("{} is not allowed; allowed 1..={MAX_HEADS}", self.heads)));
        }
        check_kprop_steps("model.kprop_steps", self.kprop_steps)?;
        for (name, p) in [("model.dropout", self.dropout), ("model.attention_dropout", self.attention_dropout)] {
            if !(0.0..1.0).contains(&p) {
                return Err(Error::param(name, format!("{p} is not allowed; allowed [0, 1)")));
            }
        }
        Ok(())
    }
}

/// The widest hidden layer and the most attention heads a model may have.
pub const MAX_WIDTH: usize = 1 << 16;
pub const MAX_HEADS: usize = 256;

/// The most KProp steps (features or labels) anything may ask for: far above the papers'
/// (LPGNN's and RGNN's tables stop at 16), and each step is a pass over every edge, so
/// 10⁹ of them ran for ever instead of failing.
pub const MAX_KPROP_STEPS: usize = 1024;

/// `k` KProp steps asked for by `field`, refused past [`MAX_KPROP_STEPS`].
pub fn check_kprop_steps(field: &str, k: usize) -> Result<()> {
    if k > MAX_KPROP_STEPS {
        return Err(Error::param(
            field,
            format!("{k} KProp steps are not allowed; allowed 0..={MAX_KPROP_STEPS} (each step is a pass over every edge)"),
        ));
    }
    Ok(())
}

/// Hidden widths (YAML `hidden: 16` or `hidden: [512, 64]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hidden {
    /// The same width for every hidden output.
    All(usize),
    /// One width per hidden output, first layer first.
    PerLayer(Vec<usize>),
}

impl Hidden {
    /// The width of hidden output `i` (0-based).
    pub fn width(&self, i: usize) -> usize {
        match self {
            Hidden::All(w) => *w,
            Hidden::PerLayer(w) => w[i],
        }
    }
}

impl From<usize> for Hidden {
    fn from(w: usize) -> Hidden {
        Hidden::All(w)
    }
}

impl std::fmt::Display for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hidden::All(w) => write!(f, "{w}"),
            Hidden::PerLayer(w) => write!(f, "{w:?}"),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum RawHidden {
    All(usize),
    PerLayer(Vec<usize>),
}

impl Serialize for Hidden {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Hidden::All(w) => RawHidden::All(*w),
            Hidden::PerLayer(w) => RawHidden::PerLayer(w.clone()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Hidden {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Hidden, D::Error> {
        Ok(
            match RawHidden::deserialize(d)
                .map_err(|_| serde::de::Error::custom("expected a width (e.g. 16) or one width per hidden layer output (e.g. [512, 64])"))?
            {
                RawHidden::All(w) => Hidden::All(w),
                RawHidden::PerLayer(w) => Hidden::PerLayer(w),
            },
        )
    }
}

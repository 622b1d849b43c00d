//! Defenses: what clients do to protect their data from the server. Each defense is
//! one file here, one variant of [`DefenseSpec`] (its YAML `kind`), and a preset in
//! `defenses/`; [`build`] is the only registration point. A defense plays one or more
//! of the roles of [`crate::fed::client`]: data transform, loss, local trainer.

pub mod ldp_features;
pub mod ldp_labels;
pub mod lpgnn;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::fed::{ClientPipeline, Defense};

/// A defense as a preset file or a scenario entry describes it: in YAML, `kind:` (the
/// variant, kebab-case) beside the variant's parameters (see `presets`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DefenseSpec {
    /// No defense.
    None(NoParams),
    /// k-ary randomized response on the train and validation labels, optionally with
    /// the forward-corrected loss.
    LdpLabels(ldp_labels::LdpLabelsConfig),
    /// LPGNN's feature mechanisms (multi-bit, one-bit, Laplace, analytic Gaussian) on
    /// every node's features, after an optional feature baseline.
    LdpFeatures(ldp_features::LdpFeaturesConfig),
    /// The LPGNN pipeline: feature and label LDP, KProp_x, and the Drop loss.
    Lpgnn(lpgnn::LpgnnConfig),
}

/// The parameters of a kind that has none (any field is an error).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

impl DefenseSpec {
    /// The defense's roles (`None` for `kind: none`). The one place that knows every
    /// defense.
    pub fn build(&self, name: &str) -> Result<Option<Defense>> {
        Ok(match self {
            DefenseSpec::None(_) => None,
            DefenseSpec::LdpLabels(c) => Some(c.build(name)),
            DefenseSpec::LdpFeatures(c) => Some(c.build(name)?),
            DefenseSpec::Lpgnn(c) => Some(c.build(name)?),
        })
    }
}

/// The client pipeline of a scenario's defenses (`(name, spec)` in declared order).
pub fn pipeline<'a>(defenses: impl IntoIterator<Item = (&'a str, &'a DefenseSpec)>) -> Result<ClientPipeline> {
    let mut built = Vec::new();
    for (name, spec) in defenses {
        built.extend(spec.build(name)?);
    }
    ClientPipeline::new(built)
}

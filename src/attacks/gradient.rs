//! What a label-inference attack reads off a client's update: the linear head's loss
//! gradient averaged over the round's local steps (YAML `gradient:`).
//!
//! * `recovered` (default): what a FedAvg server can compute. For plain SGD (no
//!   momentum) θ_returned = θ_sent − η·Σ_t g_t, so the averaged gradient is
//!   (θ_sent − θ_returned)/(η·E). With Adam or momentum the update is not a multiple of
//!   the gradient sum and no server can invert it: that is refused, not approximated.
//! * `exact`: the client's own averaged gradient, as EC-LDA's published code reads it.
//!   A stronger, non-realistic threat model ([`ThreatModel::GradientAccess`]), for
//!   validating an estimator.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fed::{ClientUpdate, ModelParams, ServerContext, ThreatModel};
use crate::train::{HeadGradient, OptimizerKind};

/// The head's weight and bias: the parameters the estimators read.
pub const HEAD_WEIGHT: &str = "head.weight";
pub const HEAD_BIAS: &str = "head.bias";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum GradientSource {
    /// (θ_sent − θ_returned)/(η·E) from the update (plain SGD only).
    #[default]
    Recovered,
    /// The client's own averaged gradient (threat model `gradient-access`).
    Exact,
}

impl GradientSource {
    pub fn threat_model(self) -> ThreatModel {
        match self {
            GradientSource::Recovered => ThreatModel::HonestButCurious,
            GradientSource::Exact => ThreatModel::GradientAccess,
        }
    }

    /// Checks at setup: the model has a head, and a recovered gradient is invertible
    /// under the clients' optimizer. `attack` (the entry's name) is named in errors.
    pub fn check(self, server: &ServerContext, attack: &str) -> Result<()> {
        if !server.param_names.iter().any(|n| n == HEAD_WEIGHT) {
            return Err(Error::param(
                "model.head",
                format!("attack `{attack}` reads the gradient of the fully connected head: set `model.head: true`"),
            ));
        }
        let t = &server.train;
        if self == GradientSource::Recovered && t.optimizer_has_state() {
            let optimizer = if t.optimizer == OptimizerKind::Sgd {
                "SGD with momentum".to_string()
            } else {
                format!("{:?}", t.optimizer).to_lowercase()
            };
            return Err(Error::param(
                format!("{attack}.gradient"),
                format!(
                    "clients train with {optimizer}, whose update (θ_sent − θ_returned) is not a multiple of the gradient, so \
                     `gradient: recovered` cannot invert it; train with plain SGD (momentum 0), or use `gradient: exact` \
                     (the client's own gradient: a stronger, non-realistic threat model)"
                ),
            ));
        }
        Ok(())
    }

    /// The head gradient of `update`, averaged over the local steps.
    pub fn read(self, update: &ClientUpdate<'_>) -> Result<HeadGradient> {
        match self {
            GradientSource::Exact => {
                update.exact_gradient.cloned().ok_or_else(|| Error::Other(format!("client {} reported no head gradient", update.client)))
            }
            GradientSource::Recovered => {
                let scale = 1.0 / (update.lr * update.local_epochs as f64);
                let delta = |name: &str| -> Result<Vec<f64>> {
                    let (s, r) = (param(update.sent, name)?, param(update.returned, name)?);
                    Ok(s.iter().zip(r).map(|(&a, &b)| (f64::from(a) - f64::from(b)) * scale).collect())
                };
                let bias = if update.sent.get(HEAD_BIAS).is_some() { delta(HEAD_BIAS)? } else { Vec::new() };
                Ok(HeadGradient { weight: delta(HEAD_WEIGHT)?, bias, steps: update.local_epochs })
            }
        }
    }
}

fn param<'a>(p: &'a ModelParams, name: &str) -> Result<&'a [f32]> {
    p.get(name).map(|t| t.values.as_slice()).ok_or_else(|| Error::Other(format!("the model has no `{name}`")))
}

/// Row sums of the weight gradient per class: ḡ_c = Σ_j ∂L/∂W_{j,c} (`[d_in, classes]`).
pub fn class_sums(g: &HeadGradient, classes: usize) -> Vec<f64> {
    let mut sums = vec![0f64; classes];
    for row in g.weight.chunks_exact(classes) {
        sums.iter_mut().zip(row).for_each(|(s, v)| *s += v);
    }
    sums
}

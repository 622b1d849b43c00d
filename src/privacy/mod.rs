//! Privacy mechanisms and their accounting, as plain functions of (input, ε, rng) that
//! defenses reuse. What a defense spends is recorded per client as a [`PrivacyCost`].
//!
//! - [`rr`]: k-ary randomized response (labels)
//! - [`rr_prior`]: RR-with-prior (Ghazi et al., label-DP): RR on the prior's top-k classes
//! - [`multibit`]: LPGNN's multi-bit mechanism on feature rows ("mbm", "1bm")
//! - [`laplace`]: LPGNN's Laplace mechanism on feature rows ("lpm")
//! - [`gaussian`]: LPGNN's analytic Gaussian mechanism on feature rows ("agm")
//! - [`grr_fs`]: RGNN's GRR-FS on discrete feature rows (m features through GRR, the rest
//!   uniform) and its frequency estimator
//! - [`edge_rr`]: Solitude's edge LDP, Warner RR on a node's adjacency row, sampled sparsely
//! - [`accountant`]: RDP accountants for DP training — DP-GNN's multi-term accountant and
//!   DP-SGD's subsampled Gaussian — with the RDP → (ε, δ) conversion and σ for a target ε
//! - [`ec_lda_code`]: the EC-LDA code's DP calibration (not (ε, δ)-DP at its ε; shown beside
//!   DP-GNN's so that the paper's defense figure can be reproduced)

pub mod accountant;
pub mod ec_lda_code;
pub mod edge_rr;
pub mod gaussian;
pub mod grr_fs;
pub mod laplace;
pub mod multibit;
pub mod rr;
pub mod rr_prior;

use serde::{Deserialize, Serialize};

pub use gaussian::{AnalyticGaussian, analytic_gaussian_sigma};
pub use laplace::Laplace;
pub use multibit::{MultiBit, optimal_m};
pub use rr::RandomizedResponse;

/// The factor min(1, `bound` / `norm`) that brings an update of L2 norm `norm` within
/// `bound`: the per-client clipping of DP-FedAvg, of an update's LDP and of SecAgg's
/// distributed DP.
pub fn clip_scale(norm: f64, bound: f64) -> f64 {
    if norm > bound { bound / norm } else { 1.0 }
}

/// The L2 norm of `values`, squares summed in order in f64.
pub fn l2_norm(values: impl IntoIterator<Item = f64>) -> f64 {
    values.into_iter().map(|v| v * v).sum::<f64>().sqrt()
}

/// A privacy budget ε > 0; ∞ switches a mechanism off. In YAML: a number, `.inf` or
/// `inf`; written back as a number or the string `inf` (JSON has no infinity).
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Epsilon(pub f64);

impl Epsilon {
    pub const INFINITE: Epsilon = Epsilon(f64::INFINITY);

    pub fn new(eps: f64) -> Result<Epsilon, String> {
        if eps.is_nan() || eps <= 0.0 {
            return Err(format!("ε = {eps} is not allowed: ε must be > 0 (`.inf` or `inf` switches the mechanism off)"));
        }
        Ok(Epsilon(eps))
    }

    pub fn value(self) -> f64 {
        self.0
    }

    pub fn is_infinite(self) -> bool {
        self.0.is_infinite()
    }
}

impl Serialize for Epsilon {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_epsilon(&self.0, s)
    }
}

impl<'de> Deserialize<'de> for Epsilon {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Epsilon, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(f64),
            Text(String),
        }
        let eps = match Raw::deserialize(d)? {
            Raw::Number(x) => x,
            Raw::Text(t) if matches!(t.trim().to_ascii_lowercase().as_str(), "inf" | ".inf" | "infinity") => f64::INFINITY,
            Raw::Text(t) => {
                return Err(serde::de::Error::custom(format!("`{t}` is not a privacy budget: expected a number > 0, `.inf` or `inf`")));
            }
        };
        Epsilon::new(eps).map_err(serde::de::Error::custom)
    }
}

/// JSON has no infinity: ε = ∞ (no protection) is written as the string "inf".
pub fn serialize_epsilon<S: serde::Serializer>(eps: &f64, s: S) -> Result<S::Ok, S::Error> {
    if eps.is_finite() { s.serialize_f64(*eps) } else { s.serialize_str("inf") }
}

/// What one defense spent of one client's privacy (a line of `metrics.json`'s
/// `clients[i].privacy`).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PrivacyCost {
    /// The defense, by its name in the scenario: stamped by the client pipeline, so a
    /// defense leaves it empty (`..Default::default()`).
    pub defense: String,
    /// What the guarantee protects and in which model, e.g. "labels of train and
    /// validation nodes, ε-LDP per node".
    pub protects: String,
    #[serde(serialize_with = "serialize_epsilon")]
    pub epsilon: f64,
    pub delta: f64,
    /// What the defense did to the client's data, as counts (e.g. edge LDP: edges kept
    /// and added; graph calibration: edges removed, of them fake), for the report.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub effects: std::collections::BTreeMap<String, f64>,
    /// The noise multiplier σ of DP training (what the accountant took), where there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noise_multiplier: Option<f64>,
    /// A calibration under which `epsilon` is *not* an (ε, δ)-DP guarantee (e.g.
    /// `ec-lda-code`): every report that shows this cost flags it ([`calibration_warning`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calibration: Option<String>,
}

/// The flag a report prints beside a privacy cost calibrated as `calibration`.
pub fn calibration_warning(calibration: &str) -> String {
    format!("calibration `{calibration}`: NOT (ε, δ)-DP at this ε (a published code's noise calibration, reproduced for comparison)")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Clipping by hand: a (3, 4) update has norm 5; bound 1 scales it by 1/5, bound 5
    /// or more leaves it, and a zero update stays zero.
    #[test]
    fn clipping_scales_only_updates_above_the_bound() {
        let norm = l2_norm([3.0, 4.0]);
        assert_eq!(norm, 5.0);
        assert_eq!(clip_scale(norm, 1.0), 0.2);
        assert_eq!((clip_scale(norm, 5.0), clip_scale(norm, 9.0)), (1.0, 1.0));
        assert_eq!(clip_scale(l2_norm([0.0; 3]), 1.0), 1.0);
    }

    #[test]
    fn epsilon_accepts_numbers_and_infinity_and_rejects_the_rest() {
        let e = |s: &str| serde_norway::from_str::<Epsilon>(s);
        assert_eq!(e("2.5").unwrap(), Epsilon(2.5));
        assert!(e(".inf").unwrap().is_infinite());
        assert!(e("inf").unwrap().is_infinite());
        for bad in ["0", "-1", ".nan", "lots"] {
            let msg = e(bad).unwrap_err().to_string();
            assert!(msg.contains("> 0"), "{bad}: {msg}");
        }
        assert_eq!(serde_json::to_string(&Epsilon::INFINITE).unwrap(), "\"inf\"");
        assert_eq!(serde_norway::from_str::<Epsilon>(&serde_norway::to_string(&Epsilon::INFINITE).unwrap()).unwrap(), Epsilon::INFINITE);
    }
}

//! The EC-LDA code's DP calibration (`cheng-t/EC-LDA`, task `defense`), reproduced so
//! that its numbers can be shown beside DP-GNN's. It is **not** (ε, δ)-DP at the ε it is
//! calibrated for (REFERENCE §1.4): the noise multiplier is DP-SGD's for one plain
//! Gaussian per step (q = 1), scaled by (k^L − 1)/(k − 1) — 6 for k = 5, L = 2, where
//! DP-GNN's analysis needs 2·(k² + k + 1) = 62 — and the code's training keeps summing
//! clipped gradients it never zeroes (see `defenses::dp_gnn`).
//!
//! What the code does (`FLcore/client/clientbase.py` 60–74,
//! `privacy_analysis/RDP/get_MaxSigma_or_MaxSteps.py`, `compute_rdp.py`,
//! `rdp_convert_dp.py`):
//! - RDP of one step, q = 1: α / (2σ²); `local_epochs · global_rounds` steps;
//! - orders 2, …, 63, 128, 256, 512; δ = 10⁻⁵; the improved conversion;
//! - σ by bisection on [0, 1000] until ε is within 0.01 below the target, rounded to two
//!   decimals (which can land ε a little above the target: ε = 32, 200 steps gives
//!   σ = 3.02 and ε = 32.055);
//! - noise N(0, (C · σ · (k^L − 1)/(k − 1))²) on every coordinate of the summed clipped
//!   gradients.

use super::accountant::{self, Conversion, Mechanism};
use crate::error::{Error, Result};

/// The code's δ (`delta = 10 ** (-5)`).
pub const DELTA: f64 = 1e-5;

/// The code's RDP orders: `list(range(2, 64)) + [128, 256, 512]`.
pub fn orders() -> Vec<f64> {
    (2..64).chain([128, 256, 512]).map(f64::from).collect()
}

/// The code's `sigma_mul`: (k^L − 1)/(k − 1) for degree limit k and L layers, the number
/// of nodes of a complete k-ary tree of depth L − 1 (L for k = 1).
pub fn sigma_multiplier(max_degree: usize, layers: usize) -> Result<f64> {
    if max_degree == 0 {
        return Err(Error::param("max_degree", "the degree bound D must be ≥ 1"));
    }
    if layers == 0 {
        return Err(Error::param("layers", "at least one message-passing layer"));
    }
    let k = max_degree as f64;
    Ok(if max_degree == 1 { layers as f64 } else { (k.powi(layers as i32) - 1.0) / (k - 1.0) })
}

/// ε of `steps` unsampled Gaussian steps with multiplier `sigma`, as the code's
/// `apply_dp_sgd_analysis(1, σ, steps, orders, δ)` computes it: (ε, order).
pub fn epsilon(sigma: f64, steps: u64, delta: f64) -> Result<(f64, f64)> {
    let orders = orders();
    let full = Mechanism::DpSgd { sample_rate: 1.0 };
    let rdp: Vec<f64> = orders.iter().map(|&a| accountant::rdp_step(&full, sigma, a).map(|r| r * steps as f64)).collect::<Result<_>>()?;
    accountant::rdp_to_epsilon(&orders, &rdp, delta, Conversion::Improved)
}

/// σ as the code's `get_noise_multiplier(ε, δ, 1, steps, orders)` finds it.
pub fn sigma(target_epsilon: f64, steps: u64, delta: f64) -> Result<f64> {
    if !(target_epsilon > 0.0 && target_epsilon.is_finite()) {
        return Err(Error::param("target_epsilon", format!("ε = {target_epsilon} is not allowed: the target must be a finite number > 0")));
    }
    if steps == 0 {
        return Err(Error::param("steps", "at least one step"));
    }
    let (mut low, mut high) = (0.0f64, 1000.0f64);
    let mut eps_high = epsilon(high, steps, delta)?.0;
    if eps_high > target_epsilon {
        return Err(Error::param(
            "target_epsilon",
            format!(
                "ε = {target_epsilon} is below what σ = 1000 reaches over {steps} steps ({eps_high:.4}); the EC-LDA code searches no further"
            ),
        ));
    }
    while target_epsilon - eps_high > 0.01 {
        let mid = (low + high) / 2.0;
        let eps = epsilon(mid, steps, delta)?.0;
        if eps < target_epsilon {
            high = mid;
            eps_high = eps;
        } else {
            low = mid;
        }
    }
    Ok(round2(high))
}

/// Python's `round(x, 2)`: the exact binary value rounded to two decimals, ties to even
/// (Rust's formatting rounds the exact value the same way).
fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().expect("a formatted number parses")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// REFERENCE §1.4: (k^L − 1)/(k − 1) = 6 for k = 5, L = 2 (DP-GNN's 2K = 62), 1 for
    /// one layer.
    #[test]
    fn the_multiplier_is_the_k_ary_tree_size() {
        assert_eq!(sigma_multiplier(5, 2).unwrap(), 6.0);
        assert_eq!(sigma_multiplier(5, 1).unwrap(), 1.0);
        assert_eq!(sigma_multiplier(3, 3).unwrap(), 13.0);
        assert_eq!(sigma_multiplier(1, 2).unwrap(), 2.0);
        assert!(sigma_multiplier(0, 2).unwrap_err().to_string().contains("max_degree"));
        assert_eq!(accountant::base_sensitivity(5, 2).unwrap() / sigma_multiplier(5, 2).unwrap(), 62.0 / 6.0);
    }

    /// σ and ε as the published code prints them (its `get_noise_multiplier` and
    /// `apply_dp_sgd_analysis`, run under Python 3.11 / numpy / scipy on the code at the
    /// snapshot REFERENCE §1.4 describes).
    #[test]
    fn sigma_matches_the_published_code() {
        let published = [
            (1.0, 100, 40.53, 0.9979354908444343, 18.0),
            (1.0, 200, 57.62, 0.992208785889576, 18.0),
            (2.0, 200, 30.52, 1.9915820567668292, 10.0),
            (4.0, 200, 16.39, 3.9954496298101856, 6.0),
            (5.0, 200, 13.5, 4.996212561785529, 5.0),
            (8.0, 100, 6.39, 7.985968755332629, 4.0),
            (8.0, 200, 9.03, 7.993375303564224, 4.0),
            (16.0, 200, 5.18, 15.98220459105794, 3.0),
            (32.0, 200, 3.02, 32.05549387302713, 2.0),
        ];
        for (target, steps, sigma_code, eps_code, order_code) in published {
            let s = sigma(target, steps, DELTA).unwrap();
            assert_eq!(s, sigma_code, "ε = {target}, {steps} steps");
            let (eps, order) = epsilon(s, steps, DELTA).unwrap();
            assert!((eps - eps_code).abs() < 1e-9, "ε = {target}: {eps} vs {eps_code}");
            assert_eq!(order, order_code);
        }
        assert!(sigma(0.0, 10, DELTA).unwrap_err().to_string().contains("target_epsilon"));
        assert!(sigma(1e-4, 200, DELTA).unwrap_err().to_string().contains("σ = 1000"));
    }

    #[test]
    fn rounding_is_pythons() {
        assert_eq!(round2(15.625), 15.62);
        assert_eq!(round2(15.635), 15.63); // 15.635 is 15.63499… in binary
        assert_eq!(round2(31.25), 31.25);
        assert_eq!(round2(3.0234), 3.02);
    }
}

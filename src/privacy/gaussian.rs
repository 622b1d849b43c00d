//! The analytic Gaussian mechanism of Balle & Wang (ICML'18) on a feature row, as
//! `AnalyticGaussian` ("agm") in sisaman/LPGNN `mechanisms.py`: for x ∈ [α, β]^d, the L2
//! sensitivity is Δ = (β−α)·√d, and adding i.i.d. N(0, σ²) noise with σ from
//! [`analytic_gaussian_sigma`](ε, δ, Δ) is (ε, δ)-LDP for the row. Like the published
//! code, the output is not clipped back to [α, β].

use statrs::function::erf::erf;

use super::Epsilon;
use super::multibit::check_row_params;
use crate::error::{Error, Result};
use crate::rng::Rng;

/// LPGNN's default δ for the analytic Gaussian mechanism.
pub const DEFAULT_DELTA: f64 = 1e-10;

/// Φ(t) = (1 + erf(t/√2))/2, written as in the published code (not via erfc) so that
/// results match it to the last digits.
fn phi(t: f64) -> f64 {
    0.5 * (1.0 + erf(t / 2f64.sqrt()))
}

/// The smallest σ for which N(0, σ²) noise on a query of L2 sensitivity Δ is (ε, δ)-DP
/// (Balle & Wang, ICML'18, Algorithm 1), computed as
/// `AnalyticGaussian.calibrate_gaussian_mechanism` in LPGNN's `mechanisms.py` (tol 1e-12):
/// with B⁺(s) = Φ(√(εs)) − e^ε Φ(−√(ε(s+2))) and B⁻(s) = Φ(−√(εs)) − e^ε Φ(−√(ε(s+2))),
/// δ₀ = B⁺(0); if δ > δ₀ find s* with B⁺(s*) ≈ δ and take a = √(1+s*/2) − √(s*/2), if
/// δ < δ₀ find s* with B⁻(s*) ≈ δ and take a = √(1+s*/2) + √(s*/2) (a = 1 at δ = δ₀);
/// s* is bracketed by doubling from [0, 1] and then bisected until |B(s) − δ| ≤ 1e-12.
/// σ = a·Δ/√(2ε).
///
/// For ε > 0 finite and δ ∈ (0, 1). One guard the published code lacks: the bisection
/// also stops when the bracket can no longer shrink in f64 (where the Python would loop
/// forever), so it always returns.
pub fn analytic_gaussian_sigma(eps: f64, delta: f64, sensitivity: f64) -> f64 {
    const TOL: f64 = 1e-12;
    let exp_eps = eps.exp();
    let case_a = |s: f64| phi((eps * s).sqrt()) - exp_eps * phi(-(eps * (s + 2.0)).sqrt());
    let case_b = |s: f64| phi(-(eps * s).sqrt()) - exp_eps * phi(-(eps * (s + 2.0)).sqrt());
    let delta_thr = case_a(0.0);
    let alpha = if delta == delta_thr {
        1.0
    } else {
        let above = delta > delta_thr;
        let s_to_delta = |s: f64| if above { case_a(s) } else { case_b(s) };
        // Doubling trick: the first [s_inf, s_sup] = [2^{k−1}, 2^k] (or [0, 1]) whose end
        // reaches δ.
        let stop_doubling = |s: f64| if above { s_to_delta(s) >= delta } else { s_to_delta(s) <= delta };
        let (mut s_inf, mut s_sup) = (0.0, 1.0);
        while !stop_doubling(s_sup) {
            s_inf = s_sup;
            s_sup = 2.0 * s_inf;
        }
        // Binary search.
        let go_left = |s: f64| if above { s_to_delta(s) > delta } else { s_to_delta(s) < delta };
        let mut s_mid = s_inf + (s_sup - s_inf) / 2.0;
        while (s_to_delta(s_mid) - delta).abs() > TOL && s_mid != s_inf && s_mid != s_sup {
            if go_left(s_mid) {
                s_sup = s_mid;
            } else {
                s_inf = s_mid;
            }
            s_mid = s_inf + (s_sup - s_inf) / 2.0;
        }
        if above { (1.0 + s_mid / 2.0).sqrt() - (s_mid / 2.0).sqrt() } else { (1.0 + s_mid / 2.0).sqrt() + (s_mid / 2.0).sqrt() }
    };
    alpha * sensitivity / (2.0 * eps).sqrt()
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AnalyticGaussian {
    d: usize,
    epsilon: Epsilon,
    delta: f64,
    sigma: f64,
}

impl AnalyticGaussian {
    /// For rows in [α, β]^d; ε finite, δ ∈ (0, 1) (LPGNN uses [`DEFAULT_DELTA`]).
    /// σ = [`analytic_gaussian_sigma`](ε, δ, (β−α)·√d).
    pub fn new(d: usize, epsilon: Epsilon, delta: f64, alpha: f64, beta: f64) -> Result<AnalyticGaussian> {
        check_row_params(d, epsilon, alpha, beta)?;
        if !(delta > 0.0 && delta < 1.0) {
            return Err(Error::param("delta", format!("δ = {delta} is not allowed: the Gaussian mechanism needs 0 < δ < 1")));
        }
        let sigma = analytic_gaussian_sigma(epsilon.value(), delta, (beta - alpha) * (d as f64).sqrt());
        Ok(AnalyticGaussian { d, epsilon, delta, sigma })
    }

    pub fn d(&self) -> usize {
        self.d
    }

    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    pub fn delta(&self) -> f64 {
        self.delta
    }

    /// The noise's standard deviation σ.
    pub fn sigma(&self) -> f64 {
        self.sigma
    }

    /// Adds N(0, σ²) noise to each coordinate of `row` (`row.len() == d`).
    pub fn perturb(&self, row: &mut [f32], rng: &mut Rng) {
        assert_eq!(row.len(), self.d, "the Gaussian mechanism was built for rows of {} features", self.d);
        for (v, z) in row.iter_mut().zip(crate::rng::standard_normals(rng, self.d)) {
            *v = (f64::from(*v) + self.sigma * z) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reference σ from the published code: `AnalyticGaussian.calibrate_gaussian_mechanism`
    /// of sisaman/LPGNN `mechanisms.py` (HEAD), its math copied torch-free into a script
    /// run with Python 3 + scipy's erf; (ε, δ, Δ, σ), printed with `repr`. The last two
    /// cases have δ above δ₀ = B⁺(0) (the first branch), the rest below it.
    const REFERENCE: [(f64, f64, f64, f64); 8] = [
        (1.0, 1e-10, 1.0, 5.867728601502758),
        (0.1, 1e-10, 1.0, 54.22168843344926),
        (8.0, 1e-10, 37.8549864614954, 31.571055602104888), // Δ = √1433
        (1.0, 1e-05, 2.0, 7.461263269888938),
        (3.0, 1e-06, 10.0, 15.438614275482745),
        (0.01, 1e-10, 37.0, 18548.037264918872),
        (0.5, 0.3, 1.0, 0.8658688169475189),
        (2.0, 0.9, 1.0, 0.24373382445105896),
    ];

    #[test]
    fn sigma_matches_the_published_calibration() {
        for (eps, delta, sens, want) in REFERENCE {
            let got = analytic_gaussian_sigma(eps, delta, sens);
            assert!((got / want - 1.0).abs() < 1e-9, "ε={eps} δ={delta} Δ={sens}: {got} vs {want}");
        }
        // The mechanism's sensitivity is (β−α)·√d.
        let g = AnalyticGaussian::new(1433, Epsilon(8.0), DEFAULT_DELTA, 0.0, 1.0).unwrap();
        assert!((g.sigma() / 31.571055602104888 - 1.0).abs() < 1e-9, "{}", g.sigma());
        let g = AnalyticGaussian::new(4, Epsilon(1.0), 1e-5, -0.5, 0.5).unwrap();
        assert!((g.sigma() / 7.461263269888938 - 1.0).abs() < 1e-9, "{}", g.sigma());
    }

    /// The calibration is tight: at σ the privacy profile
    /// δ(ε) = Φ(Δ/2σ − εσ/Δ) − e^ε Φ(−Δ/2σ − εσ/Δ) (Balle & Wang, Theorem 8) equals the
    /// requested δ to the bisection's tolerance 1e-12, plus 1e-12 for rounding (e^ε times
    /// Φ's rounding reaches 3e-13 at ε = 8).
    #[test]
    fn sigma_attains_the_requested_delta() {
        for (eps, delta, sens, _) in REFERENCE {
            let sigma = analytic_gaussian_sigma(eps, delta, sens);
            let (u, v) = (sens / (2.0 * sigma), eps * sigma / sens);
            let achieved = phi(u - v) - eps.exp() * phi(-u - v);
            assert!((achieved - delta).abs() < 2e-12, "ε={eps} δ={delta}: achieved δ = {achieved}");
        }
    }

    /// n = 200 000 noise draws (10 000 rows of 20). Mean: within 5 standard errors
    /// σ/√n of 0. Variance: the sample variance has standard error σ²·sqrt(2/n) (0.3%
    /// here) and must be within 5 of them of σ² (false alarm < 1e-6 each).
    #[test]
    fn noise_has_mean_zero_and_variance_sigma_squared() {
        let (d, rows) = (20usize, 10_000usize);
        let g = AnalyticGaussian::new(d, Epsilon(2.0), DEFAULT_DELTA, 0.0, 1.0).unwrap();
        let s2 = g.sigma().powi(2);
        let x: Vec<f32> = (0..d).map(|j| j as f32 / 20.0).collect();
        let mut rng = crate::rng::derive(7, "gaussian-test", &[]);
        let mut noise = Vec::with_capacity(d * rows);
        for _ in 0..rows {
            let mut row = x.clone();
            g.perturb(&mut row, &mut rng);
            noise.extend(row.iter().zip(&x).map(|(y, x)| f64::from(y - x)));
        }
        let n = noise.len() as f64;
        let mean = noise.iter().sum::<f64>() / n;
        assert!(mean.abs() < 5.0 * (s2 / n).sqrt(), "mean {mean}");
        let var = noise.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let se = s2 * (2.0 / n).sqrt();
        assert!((var - s2).abs() < 5.0 * se, "variance {var} vs {s2} (se {se})");
    }

    #[test]
    fn invalid_parameters_name_the_field() {
        let field = |r: Result<AnalyticGaussian>| match r.unwrap_err() {
            Error::Param { name, .. } => name,
            e => panic!("{e}"),
        };
        for bad in [0.0, 1.0, -1e-5, 2.0, f64::NAN] {
            assert_eq!(field(AnalyticGaussian::new(3, Epsilon(1.0), bad, 0.0, 1.0)), "delta", "δ = {bad}");
        }
        assert_eq!(field(AnalyticGaussian::new(0, Epsilon(1.0), DEFAULT_DELTA, 0.0, 1.0)), "d");
        assert_eq!(field(AnalyticGaussian::new(3, Epsilon::INFINITE, DEFAULT_DELTA, 0.0, 1.0)), "epsilon");
        assert_eq!(field(AnalyticGaussian::new(3, Epsilon(1.0), DEFAULT_DELTA, 1.0, 1.0)), "range");
    }
}

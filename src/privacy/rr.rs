//! k-ary randomized response (Warner; Kairouz et al.): keep the true value with
//! probability p = e^ε/(e^ε + k − 1), otherwise report one of the other k − 1 values
//! uniformly. ε-LDP for one value.

use rand::Rng as _;

use super::Epsilon;
use crate::error::{Error, Result};
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RandomizedResponse {
    k: usize,
    epsilon: Epsilon,
}

impl RandomizedResponse {
    /// Over the domain {0, …, k−1}; k ≥ 2.
    pub fn new(k: usize, epsilon: Epsilon) -> Result<RandomizedResponse> {
        if k < 2 {
            return Err(Error::param("k", format!("randomized response needs at least 2 values, got {k}")));
        }
        Ok(RandomizedResponse { k, epsilon })
    }

    /// p = e^ε/(e^ε + k − 1), written as 1/(1 + (k−1)e^{−ε}) so that large ε and ∞ give 1.
    pub fn keep_probability(&self) -> f64 {
        1.0 / (1.0 + (self.k as f64 - 1.0) * (-self.epsilon.value()).exp())
    }

    /// Probability of each particular other value: (1 − p)/(k − 1).
    pub fn flip_probability(&self) -> f64 {
        (1.0 - self.keep_probability()) / (self.k as f64 - 1.0)
    }

    /// P[true][reported], row-stochastic, k × k (row-major).
    pub fn transition_matrix(&self) -> Vec<f64> {
        let (p, q) = (self.keep_probability(), self.flip_probability());
        (0..self.k * self.k).map(|i| if i / self.k == i % self.k { p } else { q }).collect()
    }

    /// The reported value for true value `y` (< k).
    pub fn apply(&self, y: u32, rng: &mut Rng) -> u32 {
        debug_assert!((y as usize) < self.k);
        if self.epsilon.is_infinite() || rng.random::<f64>() < self.keep_probability() {
            return y;
        }
        let other = rng.random_range(0..self.k as u32 - 1);
        if other >= y { other + 1 } else { other }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_matrix_is_exact_and_stochastic() {
        let rr = RandomizedResponse::new(4, Epsilon(3f64.ln())).unwrap();
        // e^ε = 3: p = 3/6, q = 1/6.
        assert!((rr.keep_probability() - 0.5).abs() < 1e-15);
        assert!((rr.flip_probability() - 1.0 / 6.0).abs() < 1e-15);
        let m = rr.transition_matrix();
        for row in m.chunks(4) {
            assert!((row.iter().sum::<f64>() - 1.0).abs() < 1e-12);
        }
        assert_eq!(RandomizedResponse::new(5, Epsilon::INFINITE).unwrap().keep_probability(), 1.0);
        assert!(RandomizedResponse::new(1, Epsilon(1.0)).is_err());
    }

    /// ε-LDP, computed exactly: for every reported value, the probability ratio between
    /// any two true values is at most e^ε, and p/q reaches it.
    #[test]
    fn probability_ratio_is_at_most_e_to_the_eps() {
        for (k, eps) in [(2, 0.5), (7, 1.0), (7, 3.0), (40, 0.1)] {
            let rr = RandomizedResponse::new(k, Epsilon(eps)).unwrap();
            let p = rr.transition_matrix();
            let mut worst: f64 = 0.0;
            for out in 0..k {
                for a in 0..k {
                    for b in 0..k {
                        worst = worst.max(p[a * k + out] / p[b * k + out]);
                    }
                }
            }
            assert!(worst <= eps.exp() * (1.0 + 1e-12), "k={k} ε={eps}: {worst}");
            assert!((worst - eps.exp()).abs() < 1e-9 * eps.exp(), "k={k} ε={eps}: the bound is reached");
        }
    }

    /// Empirical transition frequencies from n = 60 000 draws per true value against
    /// P, each within 5 binomial standard deviations (a false alarm has probability
    /// below 1e-5 over the 16 cells).
    #[test]
    fn reported_values_follow_the_transition_matrix() {
        let k = 4;
        let rr = RandomizedResponse::new(k, Epsilon(1.0)).unwrap();
        let p = rr.transition_matrix();
        let n = 60_000;
        let mut rng = crate::rng::derive(1, "rr-test", &[]);
        for y in 0..k {
            let mut counts = vec![0usize; k];
            for _ in 0..n {
                counts[rr.apply(y as u32, &mut rng) as usize] += 1;
            }
            for (j, &c) in counts.iter().enumerate() {
                let pj = p[y * k + j];
                let sd = (n as f64 * pj * (1.0 - pj)).sqrt();
                assert!((c as f64 - n as f64 * pj).abs() < 5.0 * sd, "y={y} j={j}: {c} vs {}", n as f64 * pj);
            }
        }
        let mut rng = crate::rng::derive(1, "rr-test", &[]);
        let off = RandomizedResponse::new(k, Epsilon::INFINITE).unwrap();
        assert!((0..1000).all(|i| off.apply((i % k) as u32, &mut rng) == (i % k) as u32));
    }
}

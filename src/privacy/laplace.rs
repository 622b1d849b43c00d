//! The Laplace mechanism on a feature row, as `Laplace` ("lpm") in sisaman/LPGNN
//! `mechanisms.py`: for x ∈ [α, β]^d, the L1 sensitivity is (β−α)·d, and adding i.i.d.
//! Laplace(0, b) noise with b = (β−α)·d/ε to every coordinate is ε-LDP for the row.
//! Like the published code, the output is not clipped back to [α, β].

use rand::Rng as _;
use rand::distr::Open01;

use super::Epsilon;
use super::multibit::check_row_params;
use crate::error::Result;
use crate::rng::Rng;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Laplace {
    d: usize,
    epsilon: Epsilon,
    scale: f64,
}

impl Laplace {
    /// For rows in [α, β]^d; ε finite.
    pub fn new(d: usize, epsilon: Epsilon, alpha: f64, beta: f64) -> Result<Laplace> {
        check_row_params(d, epsilon, alpha, beta)?;
        Ok(Laplace { d, epsilon, scale: (beta - alpha) * d as f64 / epsilon.value() })
    }

    pub fn d(&self) -> usize {
        self.d
    }

    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// b = (β−α)·d/ε.
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Variance of the noise on each coordinate: 2b².
    pub fn variance(&self) -> f64 {
        2.0 * self.scale * self.scale
    }

    /// Adds Laplace(0, b) noise to each coordinate of `row` (`row.len() == d`), drawn by
    /// inverting the CDF in f64: for u ~ U(0, 1), b·ln(2u) if u < 1/2, else −b·ln(2 − 2u).
    pub fn perturb(&self, row: &mut [f32], rng: &mut Rng) {
        assert_eq!(row.len(), self.d, "the Laplace mechanism was built for rows of {} features", self.d);
        let b = self.scale;
        for v in row {
            let u: f64 = rng.sample(Open01);
            let noise = if u < 0.5 { b * (2.0 * u).ln() } else { -b * (2.0 - 2.0 * u).ln() };
            *v = (f64::from(*v) + noise) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn scale_and_variance_are_exact() {
        // b = (1 − (−1)) · 3 / 2 = 3, variance 2 · 9 = 18.
        let l = Laplace::new(3, Epsilon(2.0), -1.0, 1.0).unwrap();
        assert_eq!(l.scale(), 3.0);
        assert_eq!(l.variance(), 18.0);
    }

    /// n = 200 000 noise draws (10 000 rows of 20) with b = 0.5 · 20 / 4 = 2.5. Mean:
    /// within 5 standard errors sqrt(2b²/n) of 0. Variance: Laplace has fourth moment
    /// 24b⁴, so the sample variance has standard error sqrt(20b⁴/n) (0.5% of 2b² here);
    /// it must be within 5 of them of 2b² (false alarm < 1e-6 each), and the median of
    /// |noise|, b·ln 2, within 2%.
    #[test]
    fn noise_has_mean_zero_and_variance_two_b_squared() {
        let (d, rows) = (20usize, 10_000usize);
        let l = Laplace::new(d, Epsilon(4.0), 0.0, 0.5).unwrap();
        let b = l.scale();
        assert_eq!(b, 2.5);
        let x: Vec<f32> = (0..d).map(|j| j as f32 / 40.0).collect();
        let mut rng = crate::rng::derive(6, "laplace-test", &[]);
        let mut noise = Vec::with_capacity(d * rows);
        for _ in 0..rows {
            let mut row = x.clone();
            l.perturb(&mut row, &mut rng);
            noise.extend(row.iter().zip(&x).map(|(y, x)| f64::from(y - x)));
        }
        let n = noise.len() as f64;
        let mean = noise.iter().sum::<f64>() / n;
        assert!(mean.abs() < 5.0 * (l.variance() / n).sqrt(), "mean {mean}");
        let var = noise.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (n - 1.0);
        let se = (20.0 * b.powi(4) / n).sqrt();
        assert!((var - l.variance()).abs() < 5.0 * se, "variance {var} vs {} (se {se})", l.variance());
        let mut abs: Vec<f64> = noise.iter().map(|e| e.abs()).collect();
        abs.sort_by(f64::total_cmp);
        let median = abs[abs.len() / 2];
        assert!((median / (b * 2f64.ln()) - 1.0).abs() < 0.02, "median |noise| {median} vs {}", b * 2f64.ln());
    }

    #[test]
    fn invalid_parameters_name_the_field() {
        let field = |r: Result<Laplace>| match r.unwrap_err() {
            Error::Param { name, .. } => name,
            e => panic!("{e}"),
        };
        assert_eq!(field(Laplace::new(0, Epsilon(1.0), 0.0, 1.0)), "d");
        assert_eq!(field(Laplace::new(3, Epsilon::INFINITE, 0.0, 1.0)), "epsilon");
        assert_eq!(field(Laplace::new(3, Epsilon(-1.0), 0.0, 1.0)), "epsilon");
        assert_eq!(field(Laplace::new(3, Epsilon(1.0), 1.0, 0.0)), "range");
        assert_eq!(field(Laplace::new(3, Epsilon(1.0), 0.0, f64::INFINITY)), "range");
    }
}

//! The multi-bit mechanism (MBM) of Sajadmanesh & Gatica-Perez (LPGNN, CCS'21), as
//! `MultiBit` in sisaman/LPGNN `mechanisms.py`: for a row x ∈ [α, β]^d, sample m of the
//! d coordinates uniformly without replacement and report each sampled x_j as one bit
//! x*_j ∈ {−1, +1} with P[+1] = 1/(e^{ε/m}+1) + (x_j−α)/(β−α) · (e^{ε/m}−1)/(e^{ε/m}+1);
//! unsampled coordinates are 0. ε-LDP for the whole row. The server's unbiased rectifier
//! is x'_j = d(β−α)/(2m) · (e^{ε/m}+1)/(e^{ε/m}−1) · x*_j + (α+β)/2.

use rand::Rng as _;

use super::Epsilon;
use crate::error::{Error, Result};
use crate::rng::Rng;

/// LPGNN's choice of m ("best"): m* = max(1, min(d, ⌊ε/2.18⌋)).
pub fn optimal_m(eps: f64, d: usize) -> usize {
    let m = (eps / 2.18).floor();
    if m >= d as f64 { d.max(1) } else { (m as usize).max(1) }
}

/// The checks shared by the row mechanisms of this module and its siblings: d ≥ 1, ε a
/// finite number > 0, and [α, β] a finite interval with α < β.
pub(super) fn check_row_params(d: usize, epsilon: Epsilon, alpha: f64, beta: f64) -> Result<()> {
    if d == 0 {
        return Err(Error::param("d", "a row needs at least one feature, got d = 0"));
    }
    let eps = epsilon.value();
    if eps.is_infinite() {
        return Err(Error::param("epsilon", "ε = ∞ switches the mechanism off; do not build it"));
    }
    if eps.is_nan() || eps <= 0.0 {
        return Err(Error::param("epsilon", format!("ε = {eps} is not allowed: ε must be > 0")));
    }
    if !(alpha.is_finite() && beta.is_finite() && alpha < beta) {
        return Err(Error::param("range", format!("[α, β] = [{alpha}, {beta}] is not an input range: need finite α < β")));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MultiBit {
    d: usize,
    m: usize,
    epsilon: Epsilon,
    alpha: f64,
    beta: f64,
    /// e^{ε/m}
    em: f64,
}

impl MultiBit {
    /// For rows in [α, β]^d, reporting m of the d coordinates (1 ≤ m ≤ d); ε finite.
    pub fn new(d: usize, m: usize, epsilon: Epsilon, alpha: f64, beta: f64) -> Result<MultiBit> {
        check_row_params(d, epsilon, alpha, beta)?;
        if u32::try_from(d).is_err() {
            return Err(Error::param("d", format!("d = {d} features do not fit the u32 indices of the encoding")));
        }
        if m == 0 || m > d {
            return Err(Error::param("m", format!("m = {m} is not allowed: the multi-bit mechanism reports 1 ≤ m ≤ d = {d} coordinates")));
        }
        let em = (epsilon.value() / m as f64).exp();
        Ok(MultiBit { d, m, epsilon, alpha, beta, em })
    }

    /// LPGNN's "mbm": m = [`optimal_m`](ε, d).
    pub fn optimal(d: usize, epsilon: Epsilon, alpha: f64, beta: f64) -> Result<MultiBit> {
        MultiBit::new(d, optimal_m(epsilon.value(), d), epsilon, alpha, beta)
    }

    /// LPGNN's "1bm": m = d, every coordinate reported with budget ε/d.
    pub fn one_bit(d: usize, epsilon: Epsilon, alpha: f64, beta: f64) -> Result<MultiBit> {
        MultiBit::new(d, d, epsilon, alpha, beta)
    }

    pub fn d(&self) -> usize {
        self.d
    }

    pub fn m(&self) -> usize {
        self.m
    }

    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// P[x*_j = +1 | j sampled] = (1 + t(e^{ε/m}−1))/(e^{ε/m}+1), t = (x−α)/(β−α) clipped
    /// to [0, 1]: an input outside [α, β] is treated as the nearest end, so the
    /// guarantee holds for any input.
    fn plus_probability(&self, x: f64) -> f64 {
        debug_assert!(!x.is_nan(), "the multi-bit mechanism got a NaN feature");
        let t = ((x - self.alpha) / (self.beta - self.alpha)).clamp(0.0, 1.0);
        (1.0 + t * (self.em - 1.0)) / (self.em + 1.0)
    }

    /// Encodes one row (`x.len() == d`): clears `out`, then pushes (j, ±1) for m indices
    /// j sampled uniformly without replacement, with P[+1] as in
    /// [`coordinate_probability`](Self::coordinate_probability); sorted by index.
    /// Unsampled coordinates are implicitly 0.
    pub fn encode(&self, x: &[f32], rng: &mut Rng, out: &mut Vec<(u32, i8)>) {
        assert_eq!(x.len(), self.d, "the multi-bit mechanism was built for rows of {} features", self.d);
        out.clear();
        // m = d (one-bit) samples every coordinate: no draw needed.
        let picked = if self.m == self.d {
            (0..self.d).collect()
        } else {
            let mut picked = rand::seq::index::sample(rng, self.d, self.m).into_vec();
            picked.sort_unstable();
            picked
        };
        for j in picked {
            let bit = if rng.random::<f64>() < self.plus_probability(f64::from(x[j])) { 1 } else { -1 };
            out.push((j as u32, bit));
        }
    }

    /// The rectifier's slope: d(β−α)/(2m) · (e^{ε/m}+1)/(e^{ε/m}−1).
    pub fn scale(&self) -> f64 {
        self.d as f64 * (self.beta - self.alpha) / (2.0 * self.m as f64) * (self.em + 1.0) / (self.em - 1.0)
    }

    /// The rectifier's intercept (α+β)/2, which is also what an unsampled coordinate becomes.
    pub fn offset(&self) -> f64 {
        (self.alpha + self.beta) / 2.0
    }

    /// The unbiased estimate of one coordinate from its report x*_j ∈ {−1, 0, +1}:
    /// x'_j = scale · x*_j + offset.
    pub fn rectify(&self, bit: i8) -> f64 {
        self.scale() * f64::from(bit) + self.offset()
    }

    /// The rectified row: `offset` everywhere, `scale · x*_j + offset` at the reported j.
    pub fn rectify_row(&self, encoded: &[(u32, i8)], out: &mut [f32]) {
        assert_eq!(out.len(), self.d, "the multi-bit mechanism was built for rows of {} features", self.d);
        out.fill(self.offset() as f32);
        for &(j, bit) in encoded {
            out[j as usize] = self.rectify(bit) as f32;
        }
    }

    /// Var[x'_j] for an input x ∈ [α, β]:
    /// (d/m) · ((β−α)/2 · (e^{ε/m}+1)/(e^{ε/m}−1))² − (x − (α+β)/2)².
    pub fn variance(&self, x: f64) -> f64 {
        let half = (self.beta - self.alpha) / 2.0 * (self.em + 1.0) / (self.em - 1.0);
        self.d as f64 / self.m as f64 * half * half - (x - self.offset()).powi(2)
    }

    /// P[x*_j = output] for one coordinate with input x, output ∈ {−1, 0, +1}:
    /// 1 − m/d for 0, (m/d)·p for +1 and (m/d)·(1−p) for −1, p = 1/(e^{ε/m}+1) +
    /// (x−α)/(β−α) · (e^{ε/m}−1)/(e^{ε/m}+1). Any other output has probability 0.
    pub fn coordinate_probability(&self, x: f64, output: i8) -> f64 {
        let sampled = self.m as f64 / self.d as f64;
        match output {
            0 => 1.0 - sampled,
            1 => sampled * self.plus_probability(x),
            -1 => sampled * (1.0 - self.plus_probability(x)),
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mbm(d: usize, m: usize, eps: f64, alpha: f64, beta: f64) -> MultiBit {
        MultiBit::new(d, m, Epsilon(eps), alpha, beta).unwrap()
    }

    #[test]
    fn optimal_m_follows_lpgnn() {
        assert_eq!(optimal_m(0.01, 10), 1);
        assert_eq!(optimal_m(1.0, 10), 1);
        assert_eq!(optimal_m(2.18, 10), 1);
        assert_eq!(optimal_m(4.35, 10), 1);
        assert_eq!(optimal_m(4.36, 10), 2);
        assert_eq!(optimal_m(6.5, 10), 2);
        assert_eq!(optimal_m(100.0, 10), 10);
        assert_eq!(optimal_m(100.0, 1433), 45);
        assert_eq!(MultiBit::optimal(10, Epsilon(4.36), 0.0, 1.0).unwrap().m(), 2);
        assert_eq!(MultiBit::one_bit(10, Epsilon(4.36), 0.0, 1.0).unwrap().m(), 10);
    }

    #[test]
    fn rectifier_constants_and_variance_are_exact() {
        // d = 10, m = 2, e^{ε/m} = 3, [0, 1]: scale = 10/4 · 4/2 = 5, offset = 1/2.
        let a = mbm(10, 2, 2.0 * 3f64.ln(), 0.0, 1.0);
        assert!((a.scale() - 5.0).abs() < 1e-12, "{}", a.scale());
        assert_eq!(a.offset(), 0.5);
        assert!((a.rectify(1) - 5.5).abs() < 1e-12 && (a.rectify(-1) + 4.5).abs() < 1e-12);
        assert_eq!(a.rectify(0), 0.5);
        // d/m · (1/2 · 2)² − (x − 1/2)² = 5 − 1/4 at x = 0.
        assert!((a.variance(0.0) - 4.75).abs() < 1e-12);
        // d = m = 4, e^{ε/m} = 2, [−1, 3]: scale = 4·4/8 · 3/1 = 6, offset = 1,
        // variance at 0 = 1 · (2 · 3)² − 1 = 35.
        let b = MultiBit::one_bit(4, Epsilon(4.0 * 2f64.ln()), -1.0, 3.0).unwrap();
        assert!((b.scale() - 6.0).abs() < 1e-12, "{}", b.scale());
        assert_eq!(b.offset(), 1.0);
        assert!((b.variance(0.0) - 35.0).abs() < 1e-12);
        let mut row = vec![0f32; 4];
        b.rectify_row(&[(1, 1), (3, -1)], &mut row);
        assert_eq!(row, [1.0, 7.0, 1.0, -5.0]);
    }

    /// The variance formula against the exact second moment of the three-valued x'_j.
    #[test]
    fn variance_is_the_second_moment_of_the_rectified_output() {
        let a = mbm(7, 3, 2.5, -2.0, 1.0);
        for x in [-2.0, -1.3, 0.0, 0.4, 1.0] {
            let (mut mean, mut var) = (0.0, 0.0);
            for o in [-1i8, 0, 1] {
                mean += a.coordinate_probability(x, o) * a.rectify(o);
                var += a.coordinate_probability(x, o) * (a.rectify(o) - x).powi(2);
            }
            assert!((mean - x).abs() < 1e-12, "x = {x}: mean {mean}");
            assert!((var - a.variance(x)).abs() < 1e-12 * var, "x = {x}: {var} vs {}", a.variance(x));
        }
    }

    #[test]
    fn coordinate_probabilities_sum_to_one() {
        for (d, m, eps) in [(1, 1, 0.5), (5, 2, 3.0), (100, 7, 20.0)] {
            let a = mbm(d, m, eps, -1.0, 2.0);
            for x in [-1.0, -0.2, 0.5, 2.0] {
                let total: f64 = [-1i8, 0, 1].iter().map(|&o| a.coordinate_probability(x, o)).sum();
                assert!((total - 1.0).abs() < 1e-12, "d={d} m={m} x={x}: {total}");
            }
            assert_eq!(a.coordinate_probability(0.0, 0), 1.0 - m as f64 / d as f64);
            assert_eq!(a.coordinate_probability(0.0, 2), 0.0);
        }
    }

    /// One coordinate's sampled report: the worst-case ratio, between inputs α and β, is
    /// exactly e^{ε/m}, and no pair of inputs (inside the range or clipped into it)
    /// exceeds it.
    #[test]
    fn one_coordinate_ratio_is_at_most_e_to_the_eps_over_m() {
        let (alpha, beta) = (-1.0, 2.0);
        for (d, m, eps) in [(1, 1, 0.3), (4, 2, 3.0), (10, 3, 9.0)] {
            let a = mbm(d, m, eps, alpha, beta);
            let bound = (eps / m as f64).exp();
            let worst_plus = a.coordinate_probability(beta, 1) / a.coordinate_probability(alpha, 1);
            let worst_minus = a.coordinate_probability(alpha, -1) / a.coordinate_probability(beta, -1);
            assert!((worst_plus / bound - 1.0).abs() < 1e-12, "{worst_plus} vs {bound}");
            assert!((worst_minus / bound - 1.0).abs() < 1e-12, "{worst_minus} vs {bound}");
            let grid = [-3.0, -1.0, -0.5, 0.0, 0.7, 1.9, 2.0, 5.0];
            for x in grid {
                for y in grid {
                    for o in [-1i8, 0, 1] {
                        let (px, py) = (a.coordinate_probability(x, o), a.coordinate_probability(y, o));
                        if py == 0.0 {
                            // 0 when m = d: impossible for every input.
                            assert_eq!(px, 0.0, "x={x} y={y} o={o}");
                            continue;
                        }
                        let r = px / py;
                        assert!(r <= bound * (1.0 + 1e-12), "x={x} y={y} o={o}: {r} > {bound}");
                    }
                }
            }
        }
    }

    /// Every output of a row, enumerated exactly (d = 3, m = 2: 3 subsets × 4 sign
    /// patterns): P[out | x]/P[out | x'] ≤ e^ε (+1e-12) over a grid of rows.
    #[test]
    fn whole_row_is_eps_ldp_by_exact_enumeration() {
        let (d, m, eps, alpha, beta) = (3usize, 2usize, 1.7, 0.0, 1.0);
        let a = mbm(d, m, eps, alpha, beta);
        let sampled = m as f64 / d as f64;
        let subsets = [[0usize, 1], [0, 2], [1, 2]];
        // P[out | x] = 1/C(3,2) · Π_{j∈S} P[x*_j = s_j | j sampled]
        let prob = |x: &[f64; 3], s: &[usize; 2], signs: [i8; 2]| -> f64 {
            s.iter().zip(signs).map(|(&j, b)| a.coordinate_probability(x[j], b) / sampled).product::<f64>() / 3.0
        };
        let values = [0.0, 0.25, 0.5, 1.0];
        let rows: Vec<[f64; 3]> = (0..64).map(|i| [values[i / 16], values[i / 4 % 4], values[i % 4]]).collect();
        let outputs: Vec<([usize; 2], [i8; 2])> =
            subsets.iter().flat_map(|&s| [[-1i8, -1], [-1, 1], [1, -1], [1, 1]].map(|b| (s, b))).collect();
        for x in &rows {
            let total: f64 = outputs.iter().map(|(s, b)| prob(x, s, *b)).sum();
            assert!((total - 1.0).abs() < 1e-12, "{x:?}: outputs sum to {total}");
        }
        let mut worst: f64 = 0.0;
        for x in &rows {
            for y in &rows {
                for (s, b) in &outputs {
                    worst = worst.max(prob(x, s, *b) / prob(y, s, *b));
                }
            }
        }
        assert!(worst <= eps.exp() + 1e-12, "{worst} > e^ε = {}", eps.exp());
        // The bound is attained: rows at opposite corners of the cube.
        assert!((worst - eps.exp()).abs() < 1e-12, "{worst} vs {}", eps.exp());
    }

    /// d = 5, m = 2: n = 100 000 encodings. Each of the 10 subsets must appear with
    /// frequency 1/10 and each index with frequency m/d = 2/5, every count within 5
    /// binomial standard deviations (false alarm < 1e-5 over the 15 checks).
    #[test]
    fn sampling_is_uniform_without_replacement() {
        let (d, m, n) = (5usize, 2usize, 100_000usize);
        let a = mbm(d, m, 2.0, 0.0, 1.0);
        let mut rng = crate::rng::derive(3, "mbm-test", &[]);
        let x = [0.1f32, 0.9, 0.5, 0.0, 1.0];
        let (mut per_index, mut per_subset) = (vec![0usize; d], vec![0usize; d * d]);
        let mut out = Vec::new();
        for _ in 0..n {
            a.encode(&x, &mut rng, &mut out);
            assert_eq!(out.len(), m);
            assert!(out.windows(2).all(|w| w[0].0 < w[1].0), "{out:?}");
            assert!(out.iter().all(|&(_, b)| b == 1 || b == -1));
            out.iter().for_each(|&(j, _)| per_index[j as usize] += 1);
            per_subset[out[0].0 as usize * d + out[1].0 as usize] += 1;
        }
        let within = |count: usize, p: f64| (count as f64 - n as f64 * p).abs() < 5.0 * (n as f64 * p * (1.0 - p)).sqrt();
        for (j, &c) in per_index.iter().enumerate() {
            assert!(within(c, m as f64 / d as f64), "index {j}: {c}");
        }
        for i in 0..d {
            for j in i + 1..d {
                assert!(within(per_subset[i * d + j], 0.1), "subset {{{i}, {j}}}: {}", per_subset[i * d + j]);
            }
        }
    }

    /// The reports of `encode` against `coordinate_probability`: n = 60 000 rows, each
    /// coordinate's counts of −1, 0, +1 within 5 binomial standard deviations (false
    /// alarm < 1e-4 over the 15 cells).
    #[test]
    fn encoded_bits_follow_coordinate_probability() {
        let (alpha, beta) = (-1.0, 2.0);
        let a = mbm(5, 3, 2.0, alpha, beta);
        let x = [-1.0f32, 2.0, 0.5, 1.25, -0.4];
        let n = 60_000;
        let mut rng = crate::rng::derive(4, "mbm-test", &[]);
        let mut counts = [[0usize; 3]; 5];
        let mut out = Vec::new();
        for _ in 0..n {
            a.encode(&x, &mut rng, &mut out);
            let mut row = [0i8; 5];
            out.iter().for_each(|&(j, b)| row[j as usize] = b);
            row.iter().enumerate().for_each(|(j, &b)| counts[j][(b + 1) as usize] += 1);
        }
        for (j, c) in counts.iter().enumerate() {
            for o in [-1i8, 0, 1] {
                let p = a.coordinate_probability(f64::from(x[j]), o);
                let (got, want) = (c[(o + 1) as usize] as f64, n as f64 * p);
                assert!((got - want).abs() < 5.0 * (n as f64 * p * (1.0 - p)).sqrt(), "j={j} o={o}: {got} vs {want}");
            }
        }
    }

    /// Rectified outputs over n = 200 000 encodings of one row. Mean: within 4 standard
    /// errors sqrt(variance(x)/n) of x (false alarm < 7e-5 per coordinate). Variance:
    /// the sample variance within 5 of its standard errors sqrt((μ₄ − σ⁴)/n) of
    /// `variance(x)`, μ₄ the exact fourth central moment of the three-valued x'_j
    /// (false alarm < 1e-6 per coordinate); a wrong formula (off by 2% or more) fails.
    #[test]
    fn rectified_output_is_unbiased_with_the_stated_variance() {
        let (alpha, beta) = (-1.0, 2.0);
        let a = mbm(6, 2, 4.5, alpha, beta);
        let x = [-1.0f32, 2.0, 0.5, 1.25, -0.4, 0.0];
        let n = 200_000;
        let mut rng = crate::rng::derive(5, "mbm-test", &[]);
        let (mut sum, mut sum_sq) = (vec![0f64; 6], vec![0f64; 6]);
        let (mut out, mut row) = (Vec::new(), vec![0f32; 6]);
        for _ in 0..n {
            a.encode(&x, &mut rng, &mut out);
            a.rectify_row(&out, &mut row);
            for j in 0..6 {
                let r = f64::from(row[j]);
                sum[j] += r;
                sum_sq[j] += r * r;
            }
        }
        for j in 0..6 {
            let xj = f64::from(x[j]);
            let (var, nf) = (a.variance(xj), n as f64);
            let mean = sum[j] / nf;
            assert!((mean - xj).abs() < 4.0 * (var / nf).sqrt(), "j={j}: mean {mean} vs {xj} (sd {})", (var / nf).sqrt());
            let sample_var = (sum_sq[j] - nf * mean * mean) / (nf - 1.0);
            let mu4: f64 = [-1i8, 0, 1].iter().map(|&o| a.coordinate_probability(xj, o) * (a.rectify(o) - xj).powi(4)).sum();
            let se = ((mu4 - var * var) / nf).sqrt();
            assert!((sample_var - var).abs() < 5.0 * se, "j={j}: sample variance {sample_var} vs {var} (se {se})");
            assert!(5.0 * se < 0.02 * var, "the test could not tell a 2% error: se {se}");
        }
    }

    #[test]
    fn invalid_parameters_name_the_field() {
        let field = |r: Result<MultiBit>| match r.unwrap_err() {
            Error::Param { name, msg } => (name, msg),
            e => panic!("{e}"),
        };
        let (name, msg) = field(MultiBit::new(5, 0, Epsilon(1.0), 0.0, 1.0));
        assert_eq!(name, "m");
        assert!(msg.contains("1 ≤ m ≤ d = 5"), "{msg}");
        assert_eq!(field(MultiBit::new(5, 6, Epsilon(1.0), 0.0, 1.0)).0, "m");
        assert_eq!(field(MultiBit::new(5, 2, Epsilon(1.0), 1.0, 1.0)).0, "range");
        assert_eq!(field(MultiBit::new(5, 2, Epsilon(1.0), 2.0, 1.0)).0, "range");
        assert_eq!(field(MultiBit::new(5, 2, Epsilon(1.0), f64::NEG_INFINITY, 1.0)).0, "range");
        assert_eq!(field(MultiBit::new(5, 2, Epsilon(1.0), 0.0, f64::NAN)).0, "range");
        let (name, msg) = field(MultiBit::new(5, 2, Epsilon::INFINITE, 0.0, 1.0));
        assert_eq!(name, "epsilon");
        assert!(msg.contains("∞ switches the mechanism off"), "{msg}");
        assert_eq!(field(MultiBit::optimal(5, Epsilon::INFINITE, 0.0, 1.0)).0, "epsilon");
        assert_eq!(field(MultiBit::new(5, 2, Epsilon(0.0), 0.0, 1.0)).0, "epsilon");
        assert_eq!(field(MultiBit::new(0, 1, Epsilon(1.0), 0.0, 1.0)).0, "d");
    }
}

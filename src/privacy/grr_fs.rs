//! RGNN's GRR-FS (Bhaila et al., "LDP in GNNs: a Reconstruction Approach"; `GRRFS` in
//! karuna-bhaila/RGNN `perturb.py`) on discrete features: feature j takes values in
//! {0, …, γ_j − 1}. A node samples m of its d features uniformly without replacement and
//! reports each sampled one through generalised RR over its own domain (keep with
//! p_j = e^ε/(e^ε + γ_j − 1), else one of the other γ_j − 1 values uniformly); every
//! unsampled feature is replaced by a uniform draw from its domain, independent of the
//! data. ε is spent per sampled feature, so a node spends m·ε (sequential composition).
//! The server's frequency estimator inverts "sampled w.p. m/d through GRR, else uniform".

use rand::Rng as _;

use super::Epsilon;
use crate::error::{Error, Result};
use crate::rng::Rng;

/// GRR with feature sampling over d discrete features.
#[derive(Debug, Clone, PartialEq)]
pub struct GrrFs {
    /// γ_j, the size of feature j's domain {0, …, γ_j − 1}.
    domains: Vec<u32>,
    m: usize,
    /// Per sampled feature.
    epsilon: Epsilon,
    /// p_j per feature, computed once: perturb_row reads it for every feature of every row.
    keep: Vec<f64>,
}

impl GrrFs {
    /// `domains[j]` = γ_j ≥ 2 (size of feature j's domain {0..γ_j−1}); 1 ≤ m ≤ d; ε per
    /// feature. ε = ∞ is allowed: the sampled features are then reported truthfully (the
    /// unsampled ones are still uniform draws).
    pub fn new(domains: Vec<u32>, m: usize, epsilon: Epsilon) -> Result<GrrFs> {
        let d = domains.len();
        if d == 0 {
            return Err(Error::param("d", "GRR-FS needs at least one feature, got d = 0"));
        }
        if m == 0 {
            return Err(Error::param("m", format!("m = 0 is not allowed: GRR-FS reports 1 ≤ m ≤ d = {d} features through GRR")));
        }
        if m > d {
            return Err(Error::param("m", format!("m = {m} exceeds d = {d} features: GRR-FS reports 1 ≤ m ≤ d features through GRR")));
        }
        if let Some((j, &g)) = domains.iter().enumerate().find(|&(_, &g)| g < 2) {
            return Err(Error::param(
                "domain",
                format!("feature {j} has a domain of {g} value(s): GRR needs γ_j ≥ 2 (binarise or drop constant features)"),
            ));
        }
        let eps = epsilon.value();
        if eps.is_nan() || eps <= 0.0 {
            return Err(Error::param(
                "epsilon",
                format!("ε = {eps} is not allowed: ε must be > 0 (∞ reports sampled features truthfully)"),
            ));
        }
        let keep = domains.iter().map(|&g| 1.0 / (1.0 + (f64::from(g) - 1.0) * (-eps).exp())).collect();
        Ok(GrrFs { domains, m, epsilon, keep })
    }

    /// The number of features d.
    pub fn d(&self) -> usize {
        self.domains.len()
    }

    /// The number of features m reported through GRR.
    pub fn m(&self) -> usize {
        self.m
    }

    /// γ_j, the size of feature j's domain.
    pub fn domain(&self, j: usize) -> u32 {
        self.domains[j]
    }

    /// The budget per sampled feature.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// p_j = e^ε/(e^ε + γ_j − 1), written as 1/(1 + (γ_j−1)e^{−ε}) so that large ε and ∞ give 1.
    pub fn keep_probability(&self, j: usize) -> f64 {
        self.keep[j]
    }

    /// q_j = 1/(e^ε + γ_j − 1), written as e^{−ε}/(1 + (γ_j−1)e^{−ε}) (0 at ε = ∞).
    pub fn other_probability(&self, j: usize) -> f64 {
        let e = (-self.epsilon.value()).exp();
        e / (1.0 + (f64::from(self.domains[j]) - 1.0) * e)
    }

    /// Perturb one node's row `x` (x[j] < γ_j, checked by the caller): m features sampled
    /// uniformly without replacement go through GRR over their own domain; every other
    /// feature is replaced by a uniform draw from its domain. `out` has length d.
    pub fn perturb_row(&self, x: &[u32], rng: &mut Rng, out: &mut [u32]) {
        let d = self.d();
        assert_eq!(x.len(), d, "GRR-FS was built for rows of {d} features");
        assert_eq!(out.len(), d, "GRR-FS was built for rows of {d} features");
        // m = d samples every feature: no draw needed.
        let picked = if self.m == d {
            Vec::new()
        } else {
            let mut picked = rand::seq::index::sample(rng, d, self.m).into_vec();
            picked.sort_unstable();
            picked
        };
        let mut next = picked.iter().copied().peekable();
        let truthful = self.epsilon.is_infinite();
        for j in 0..d {
            let g = self.domains[j];
            debug_assert!(x[j] < g, "feature {j}: value {} outside its domain of {g}", x[j]);
            let sampled = self.m == d || next.next_if_eq(&j).is_some();
            out[j] = if !sampled {
                rng.random_range(0..g)
            } else if truthful || rng.random::<f64>() < self.keep[j] {
                x[j]
            } else if g == 2 {
                // The one other value: no draw needed.
                1 - x[j]
            } else {
                let other = rng.random_range(0..g - 1);
                if other >= x[j] { other + 1 } else { other }
            };
        }
    }

    /// P(report r for feature j | true value v), exactly:
    /// (m/d)·(p_j if r = v else q_j) + (1 − m/d)/γ_j; 0 for r outside the domain.
    pub fn report_probability(&self, j: usize, v: u32, r: u32) -> f64 {
        let g = self.domains[j];
        if r >= g {
            return 0.0;
        }
        let sampled = self.m as f64 / self.d() as f64;
        let grr = if r == v { self.keep_probability(j) } else { self.other_probability(j) };
        sampled * grr + (1.0 - sampled) / f64::from(g)
    }

    /// ε a node spends: m·ε (sequential composition over the sampled features; unsampled
    /// ones are data-independent). This is tight: two rows that differ in every feature
    /// reach the ratio e^{m·ε} on the output equal to one of them.
    pub fn node_epsilon(&self) -> f64 {
        self.m as f64 * self.epsilon.value()
    }

    /// The RGNN paper's ε_X = ln(1 + (m/d)(e^{m·ε} − 1)), for comparison with the paper.
    /// Not a bound on the whole row's LDP when m < d: see [`node_epsilon`](Self::node_epsilon).
    pub fn paper_epsilon(&self) -> f64 {
        let r = self.m as f64 / self.d() as f64;
        let x = self.node_epsilon();
        // Small x: ln_1p/exp_m1 keep precision; large x: x + ln(r + (1−r)e^{−x}) avoids overflow.
        if x < 1.0 { (r * x.exp_m1()).ln_1p() } else { x + (r + (1.0 - r) * (-x).exp()).ln() }
    }

    /// Unbiased frequency estimate over feature j's domain from the observed shares λ
    /// (length γ_j, summing to 1): π̃_v = λ_v·d/(m(p−q)) + (m − d − m·γ·q)/(m·γ·(p−q)).
    /// Written into `out` (length γ_j); entries may be negative.
    pub fn estimate(&self, j: usize, shares: &[f64], out: &mut [f64]) {
        let g = self.domains[j] as usize;
        assert_eq!(shares.len(), g, "feature {j} has a domain of {g} values");
        assert_eq!(out.len(), g, "feature {j} has a domain of {g} values");
        let (p, q) = (self.keep_probability(j), self.other_probability(j));
        let (m, d, gf) = (self.m as f64, self.d() as f64, g as f64);
        let slope = d / (m * (p - q));
        let offset = (m - d - m * gf * q) / (m * gf * (p - q));
        for (o, &s) in out.iter_mut().zip(shares) {
            *o = s * slope + offset;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grr(domains: Vec<u32>, m: usize, eps: f64) -> GrrFs {
        GrrFs::new(domains, m, Epsilon(eps)).unwrap()
    }

    #[test]
    fn probabilities_are_exact_and_sum_to_one() {
        // e^ε = 3, γ = 4: p = 3/6, q = 1/6; d = 4, m = 1: P(r = v) = 1/4 · 1/2 + 3/4 · 1/4 = 5/16.
        let a = grr(vec![4, 2, 3, 4], 1, 3f64.ln());
        assert!((a.keep_probability(0) - 0.5).abs() < 1e-15);
        assert!((a.other_probability(0) - 1.0 / 6.0).abs() < 1e-15);
        assert!((a.report_probability(0, 2, 2) - 5.0 / 16.0).abs() < 1e-15);
        assert!((a.report_probability(0, 2, 1) - (1.0 / 24.0 + 3.0 / 16.0)).abs() < 1e-15);
        assert_eq!(a.report_probability(1, 0, 2), 0.0);
        for j in 0..a.d() {
            let g = a.domain(j);
            assert!((a.keep_probability(j) + (g - 1) as f64 * a.other_probability(j) - 1.0).abs() < 1e-15);
            for v in 0..g {
                let total: f64 = (0..g).map(|r| a.report_probability(j, v, r)).sum();
                assert!((total - 1.0).abs() < 1e-14, "j={j} v={v}: {total}");
            }
        }
        let off = grr(vec![5], 1, f64::INFINITY);
        assert_eq!((off.keep_probability(0), off.other_probability(0)), (1.0, 0.0));
        assert_eq!(off.node_epsilon(), f64::INFINITY);
        assert_eq!(off.paper_epsilon(), f64::INFINITY);
    }

    #[test]
    fn budgets_follow_the_definitions() {
        let a = grr(vec![2; 10], 3, 0.5);
        assert!((a.node_epsilon() - 1.5).abs() < 1e-15);
        let paper = (1.0 + 0.3 * (1.5f64.exp() - 1.0)).ln();
        assert!((a.paper_epsilon() - paper).abs() < 1e-14, "{} vs {paper}", a.paper_epsilon());
        // The small-x branch, and m = d: ε_X = m·ε.
        let b = grr(vec![2; 10], 2, 0.1);
        assert!((b.paper_epsilon() - (1.0 + 0.2 * (0.2f64.exp() - 1.0)).ln()).abs() < 1e-15);
        let c = grr(vec![3; 4], 4, 2.0);
        assert!((c.paper_epsilon() - 8.0).abs() < 1e-12);
        // Large m·ε does not overflow: ln(m/d) + m·ε up to e^{−m·ε}.
        let e = grr(vec![2; 100], 50, 20.0);
        assert!((e.paper_epsilon() - (1000.0 + 0.5f64.ln())).abs() < 1e-9, "{}", e.paper_epsilon());
    }

    /// E[λ_r] = Σ_v π_v P(r|v) plugged into the estimator gives π back: the estimator is
    /// exactly unbiased (up to rounding) for any π, over several (γ, m, d, ε).
    #[test]
    fn estimator_inverts_the_expected_shares() {
        for (g, m, d, eps) in
            [(2u32, 1usize, 1usize, 1.0), (2, 10, 10, 1.0), (2, 3, 40, 0.5), (5, 2, 7, 2.0), (9, 1, 3, 0.1), (4, 6, 6, f64::INFINITY)]
        {
            let a = grr(vec![g; d], m, eps);
            // An uneven π with a zero entry.
            let raw: Vec<f64> = (0..g).map(|v| if v == 1 { 0.0 } else { 1.0 + v as f64 * 0.7 }).collect();
            let total: f64 = raw.iter().sum();
            let pi: Vec<f64> = raw.iter().map(|x| x / total).collect();
            for j in [0, d - 1] {
                let shares: Vec<f64> = (0..g).map(|r| (0..g).map(|v| pi[v as usize] * a.report_probability(j, v, r)).sum()).collect();
                let mut est = vec![0.0; g as usize];
                a.estimate(j, &shares, &mut est);
                for (v, (e, p)) in est.iter().zip(&pi).enumerate() {
                    assert!((e - p).abs() < 1e-12, "γ={g} m={m} d={d} ε={eps} v={v}: {e} vs {p}");
                }
            }
        }
    }

    /// Per feature, max over r, v, v' of P(r|v)/P(r|v') is at most e^ε; closed form
    /// ((m/d)p + (1−m/d)/γ)/((m/d)q + (1−m/d)/γ), which equals e^ε = p/q at m = d.
    #[test]
    fn per_feature_ratio_is_at_most_e_to_the_eps() {
        for (domains, m, eps) in [(vec![2u32, 3, 7], 1usize, 1.0), (vec![2, 3, 7], 3, 1.0), (vec![10; 5], 2, 3.0), (vec![2; 8], 8, 0.25)] {
            let a = grr(domains, m, eps);
            let r = m as f64 / a.d() as f64;
            for j in 0..a.d() {
                let g = a.domain(j);
                let mut worst: f64 = 0.0;
                for out in 0..g {
                    for v in 0..g {
                        for w in 0..g {
                            worst = worst.max(a.report_probability(j, v, out) / a.report_probability(j, w, out));
                        }
                    }
                }
                let closed =
                    (r * a.keep_probability(j) + (1.0 - r) / f64::from(g)) / (r * a.other_probability(j) + (1.0 - r) / f64::from(g));
                assert!(worst <= eps.exp() * (1.0 + 1e-12), "j={j}: {worst}");
                assert!((worst - closed).abs() < 1e-12 * closed, "j={j}: {worst} vs {closed}");
                if m == a.d() {
                    assert!((worst - eps.exp()).abs() < 1e-12 * worst);
                }
            }
        }
    }

    /// P(row r | row x) by enumerating the C(d, m) subsets; the worst ratio over all row
    /// pairs is exactly e^{m·ε} (node_epsilon is tight), above the paper's e^{ε_X} when m < d.
    #[test]
    fn whole_row_ratio_reaches_e_to_the_m_eps() {
        let a = grr(vec![2, 3, 2], 2, 0.7);
        let d = a.d();
        let subsets: Vec<[usize; 2]> = vec![[0, 1], [0, 2], [1, 2]];
        let rows: Vec<[u32; 3]> = (0..12).map(|i| [i % 2, (i / 2) % 3, i / 6]).collect();
        let prob = |x: &[u32; 3], r: &[u32; 3]| -> f64 {
            subsets
                .iter()
                .map(|s| {
                    (0..d)
                        .map(|j| {
                            let g = a.domain(j);
                            if s.contains(&j) {
                                if x[j] == r[j] { a.keep_probability(j) } else { a.other_probability(j) }
                            } else {
                                1.0 / f64::from(g)
                            }
                        })
                        .product::<f64>()
                })
                .sum::<f64>()
                / subsets.len() as f64
        };
        let mut worst: f64 = 0.0;
        for r in &rows {
            assert!((rows.iter().map(|x| prob(r, x)).sum::<f64>() - 1.0).abs() < 1e-12);
            for x in &rows {
                for y in &rows {
                    worst = worst.max(prob(x, r) / prob(y, r));
                }
            }
        }
        let bound = a.node_epsilon().exp();
        assert!(worst <= bound * (1.0 + 1e-12), "{worst} vs e^(mε) = {bound}");
        assert!((worst - bound).abs() < 1e-12 * bound, "{worst} vs e^(mε) = {bound}");
        assert!(worst > a.paper_epsilon().exp() * 1.1, "{worst} vs e^ε_X = {}", a.paper_epsilon().exp());
    }

    /// Output frequencies of perturb_row over n = 40 000 rows against report_probability:
    /// each count within 4.5 binomial σ = √(n·P·(1−P)) of n·P (a false alarm has
    /// probability about 7e-6 per cell, below 2e-4 over the 26 cells).
    #[test]
    fn reported_values_follow_report_probability() {
        let a = grr(vec![2, 3, 5, 2, 4, 2], 2, 1.0);
        let x = [1u32, 2, 0, 0, 3, 1];
        let n = 40_000;
        let mut rng = crate::rng::derive(1, "grr-fs-test", &[]);
        let mut counts: Vec<Vec<usize>> = (0..a.d()).map(|j| vec![0; a.domain(j) as usize]).collect();
        let mut out = vec![0u32; a.d()];
        for _ in 0..n {
            a.perturb_row(&x, &mut rng, &mut out);
            for (j, &r) in out.iter().enumerate() {
                counts[j][r as usize] += 1;
            }
        }
        for (j, c) in counts.iter().enumerate() {
            for (r, &c) in c.iter().enumerate() {
                let p = a.report_probability(j, x[j], r as u32);
                let sd = (n as f64 * p * (1.0 - p)).sqrt();
                assert!((c as f64 - n as f64 * p).abs() < 4.5 * sd, "j={j} r={r}: {c} vs {} (σ {sd:.1})", n as f64 * p);
            }
        }
    }

    /// Exactly m features are sampled: with ε = ∞, the sampled ones are truthful, so over
    /// many rows of γ = 2 features, the number matching x has mean m + (d − m)/2.
    #[test]
    fn m_equal_d_with_infinite_epsilon_reproduces_the_input() {
        let a = grr(vec![2, 3, 7, 2], 4, f64::INFINITY);
        let mut rng = crate::rng::derive(2, "grr-fs-test", &[]);
        let mut out = vec![0u32; 4];
        for x in [[0u32, 0, 0, 0], [1, 2, 6, 1], [0, 1, 3, 1]] {
            a.perturb_row(&x, &mut rng, &mut out);
            assert_eq!(out, x);
        }
        // m = 3 of d = 10 binary features, ε = ∞: matches = 3 + Binomial(7, 1/2), mean 6.5,
        // σ of the mean over 20 000 rows = √(7/4/20 000) ≈ 0.0094; 5σ bound.
        let b = grr(vec![2; 10], 3, f64::INFINITY);
        let x = [1u32, 0, 1, 1, 0, 0, 1, 0, 1, 1];
        let mut out = vec![0u32; 10];
        let (rows, mut matches, mut min) = (20_000, 0usize, usize::MAX);
        for _ in 0..rows {
            b.perturb_row(&x, &mut rng, &mut out);
            let k = out.iter().zip(&x).filter(|(o, x)| o == x).count();
            matches += k;
            min = min.min(k);
        }
        assert!(min >= 3, "at least the m sampled features are truthful: {min}");
        let mean = matches as f64 / rows as f64;
        assert!((mean - 6.5).abs() < 5.0 * (1.75f64 / rows as f64).sqrt(), "{mean}");
    }

    #[test]
    fn bad_parameters_are_rejected_with_their_field() {
        let err = |r: Result<GrrFs>| r.unwrap_err().to_string();
        let e = err(GrrFs::new(vec![2, 1, 3], 1, Epsilon(1.0)));
        assert!(e.contains("domain") && e.contains("feature 1"), "{e}");
        let e = err(GrrFs::new(vec![2; 10], 12, Epsilon(1.0)));
        assert!(e.contains("m = 12") && e.contains("d = 10"), "{e}");
        let e = err(GrrFs::new(vec![2; 10], 0, Epsilon(1.0)));
        assert!(e.contains("m = 0"), "{e}");
        let e = err(GrrFs::new(vec![], 0, Epsilon(1.0)));
        assert!(e.contains("d = 0"), "{e}");
        assert!(GrrFs::new(vec![2; 3], 1, Epsilon(0.0)).is_err());
        assert!(GrrFs::new(vec![2; 3], 3, Epsilon::INFINITE).is_ok());
    }
}

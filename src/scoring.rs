//! Scoring of attack output against the ground truth: the only module where what an
//! attack inferred meets what the clients hold (breaching's `analysis`, apart from its
//! attacks). Formulas as in EC-LDA's published metrics (REFERENCE §7.5).

use serde::Serialize;

/// How close an inferred label distribution is to the true one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DistributionScores {
    /// Cosine similarity, higher is better (1 = same direction).
    pub cos_sim: f64,
    /// Jensen–Shannon divergence in nats (natural log, range [0, ln 2]), as EC-LDA's
    /// tables report it; lower is better.
    pub js_nats: f64,
    /// The same in bits (range [0, 1]), the scale of EC-LDA's text.
    pub js_bits: f64,
}

/// Normalise non-negative counts to a distribution (all zeros stay zeros).
pub fn normalise(counts: &[f64]) -> Vec<f64> {
    let total: f64 = counts.iter().sum();
    if total > 0.0 { counts.iter().map(|c| c / total).collect() } else { vec![0.0; counts.len()] }
}

/// Cosine similarity; an all-zero `estimate` is replaced by 1e-64 entries as in EC-LDA.
pub fn cosine_similarity(estimate: &[f64], truth: &[f64]) -> f64 {
    assert_eq!(estimate.len(), truth.len(), "distributions over different class counts");
    let r: Vec<f64> = if estimate.iter().all(|&x| x == 0.0) { vec![1e-64; estimate.len()] } else { estimate.to_vec() };
    let dot: f64 = r.iter().zip(truth).map(|(a, b)| a * b).sum();
    let norm = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    dot / (norm(&r) * norm(truth))
}

/// Jensen–Shannon divergence in nats of two distributions: ½KL(r‖m) + ½KL(t‖m) with
/// m = (r + t)/2, zero entries replaced by 1e-10 as in EC-LDA.
pub fn js_divergence(estimate: &[f64], truth: &[f64]) -> f64 {
    assert_eq!(estimate.len(), truth.len(), "distributions over different class counts");
    let fix = |v: &[f64]| -> Vec<f64> { v.iter().map(|&x| if x == 0.0 { 1e-10 } else { x }).collect() };
    let (r, t) = (fix(estimate), fix(truth));
    let m: Vec<f64> = r.iter().zip(&t).map(|(a, b)| (a + b) / 2.0).collect();
    let kl = |p: &[f64]| p.iter().zip(&m).map(|(a, b)| a * (a / b).ln()).sum::<f64>();
    0.5 * kl(&r) + 0.5 * kl(&t)
}

/// Score an inferred distribution (any non-negative vector; normalised here) against
/// true class counts.
pub fn score_distribution(estimate: &[f64], true_counts: &[usize]) -> DistributionScores {
    let truth = normalise(&true_counts.iter().map(|&c| c as f64).collect::<Vec<_>>());
    let r = normalise(estimate);
    let js_nats = js_divergence(&r, &truth);
    DistributionScores { cos_sim: cosine_similarity(&r, &truth), js_nats, js_bits: js_nats / std::f64::consts::LN_2 }
}

/// The same scores for the uniform guess, the baseline every attack must beat.
pub fn uniform_baseline(true_counts: &[usize]) -> DistributionScores {
    score_distribution(&vec![1.0; true_counts.len()], true_counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_values() {
        let s = score_distribution(&[2.0, 2.0, 0.0], &[5, 5, 0]);
        assert!((s.cos_sim - 1.0).abs() < 1e-12 && s.js_nats.abs() < 1e-9, "{s:?}");
        // Disjoint supports: JS = ln 2 nats = 1 bit (up to the 1e-10 replacement).
        let s = score_distribution(&[1.0, 0.0], &[0, 3]);
        assert!((s.js_nats - std::f64::consts::LN_2).abs() < 1e-8 && (s.js_bits - 1.0).abs() < 1e-8, "{s:?}");
        assert!(s.cos_sim.abs() < 1e-9);
        // cos([1,1],[1,0]) = 1/√2.
        assert!((cosine_similarity(&[0.5, 0.5], &[1.0, 0.0]) - 0.5f64.sqrt()).abs() < 1e-12);
        // JS of (1/2,1/2) vs (1,0): ½·[½ln(2/3)+½ln2] + ½·ln(4/3)... computed directly:
        let m = [0.75, 0.25];
        let want = 0.5 * (0.5 * (0.5f64 / m[0]).ln() + 0.5 * (0.5f64 / m[1]).ln()) + 0.5 * (1.0f64 / m[0]).ln();
        assert!((js_divergence(&[0.5, 0.5], &[1.0, 0.0]) - want).abs() < 1e-8);
        // An all-zero estimate does not divide by zero.
        assert!(score_distribution(&[0.0, 0.0], &[1, 1]).cos_sim.is_finite());
        let u = uniform_baseline(&[1, 1, 1, 1]);
        assert!((u.cos_sim - 1.0).abs() < 1e-12);
    }
}

//! `ilrg`: iLRG (Ma et al., ICLR 2023), instance-level label restoration from the last
//! layer's gradients, as in `mankasto/iLRG` (REFERENCE §7.1), on a GNN's linear head.
//!
//! With z = hW + b and mean cross-entropy over N nodes, ∇b_c = (1/N)Σ_k (p_kc − y_kc) and
//! ∇W_{·c} = (1/N)Σ_k (p_kc − y_kc)·h_k. So ĥ_c = ∇W_{·c}/∇b_c is a weighted mean of
//! the head inputs (≈ the mean input of class c's nodes), p̂_c = softmax(ĥ_c W + b) the
//! output it gives, and the counts k solve Σ_j k_j·p̂_j[i] − k_i = N·∇b_i (each class i)
//! with Σ_j k_j = N, by the Moore–Penrose pseudo-inverse. Negative counts are clipped,
//! counts rounded, counts above N zeroed, and the sum fixed to N by moving the entries
//! with the largest rounding error, as the reference code does.
//!
//! N is the update's FedAvg weight: the server knows no other count. Under
//! `weighting: all` it counts every node of the client, not only the train nodes; the
//! system is linear in N, so the distribution is unchanged up to rounding.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{AttackRounds, PassiveAttack};
use super::gradient::{GradientSource, HEAD_BIAS, HEAD_WEIGHT};
use crate::error::{Error, Result};
use crate::fed::{
    AttackOutput, ClientUpdate, FederationConfig, RoundContext, ServerContext,
    ThreatModel,
};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IlrgConfig {
    pub rounds: AttackRounds,
    pub gradient: GradientSource,
}

impl super::AttackConfig for IlrgConfig {
    const SERVER_SECONDS_ON_CORA: f64 = 2.0;

    const ACTIVE: bool = false;
    /// Its estimate reads the head rows of whatever a sample is: a node, or a node pair.
    const TASKS: &'static [crate::data::Task] = crate::data::Task::ALL;

    fn strategy(&self, name: &str) -> Box<dyn crate::fed::ServerStrategy> {
        Box::new(Ilrg::new(name, self.clone()))
    }

    fn validate(&self, federation: &FederationConfig, field: &str) -> Result<()> {
        self.rounds
            .validate(federation.rounds, &format!("{field}.rounds"))
    }
}

pub struct Ilrg {
    name: String,
    config: IlrgConfig,
    output: AttackOutput,
}

impl Ilrg {
    pub fn new(name: &str, config: IlrgConfig) -> Ilrg {
        Ilrg {
            name: name.to_string(),
            config,
            output: AttackOutput::default(),
        }
    }
}

impl PassiveAttack for Ilrg {
    fn name(&self) -> &str {
        &self.name
    }

    fn threat_model(&self) -> ThreatModel {
        self.config.gradient.threat_model()
    }

    fn setup(&mut self, server: &Arc<ServerContext>) -> Result<()> {
        self.config.gradient.check(server, &self.name)?;
        if !server.param_names.iter().any(|n| n == HEAD_BIAS) {
            return Err(Error::param(
                "model.head",
                format!(
                    "attack `{}` needs the head's bias gradient; the head has no bias",
                    self.name
                ),
            ));
        }
        Ok(())
    }

    fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
        if !self.config.rounds.reads(ctx, update) {
            return Ok(());
        }
        let g = self.config.gradient.read(update)?;
        let head = |name: &str| -> Result<Vec<f64>> {
            let t = update
                .sent
                .get(name)
                .ok_or_else(|| Error::Other(format!("the model has no `{name}`")))?;
            Ok(t.values.iter().map(|&v| f64::from(v)).collect())
        };
        let (w, b) = (head(HEAD_WEIGHT)?, head(HEAD_BIAS)?);
        let counts = restore_counts(&g.weight, &g.bias, &w, &b, update.samples);
        let estimate = crate::scoring::normalise(&counts.iter().map(|&c| c as f64).collect::<Vec<_>>());
        self.output
            .label_distribution(&self.name, ctx.round, update.client, estimate);
        Ok(())
    }

    fn rounds(&self) -> &AttackRounds {
        &self.config.rounds
    }

    fn output(&self) -> &AttackOutput {
        &self.output
    }

    fn output_mut(&mut self) -> &mut AttackOutput {
        &mut self.output
    }
}

/// iLRG's counts from the head gradient (`grad_w` `[d, C]` row-major, `grad_b` `[C]`),
/// the head itself (`w` `[d, C]`, `b` `[C]`) and the batch size `n`.
pub fn restore_counts(
    grad_w: &[f64],
    grad_b: &[f64],
    w: &[f64],
    b: &[f64],
    n: usize,
) -> Vec<usize> {
    let c = grad_b.len();
    let d = grad_w.len() / c;
    // Class-wise embeddings and the head's outputs for them.
    let p_hat: Vec<Vec<f64>> = (0..c)
        .map(|j| {
            let h: Vec<f64> = (0..d)
                .map(|k| ratio(grad_w[k * c + j], grad_b[j]))
                .collect();
            let z: Vec<f64> = (0..c)
                .map(|i| b[i] + (0..d).map(|k| h[k] * w[k * c + i]).sum::<f64>())
                .collect();
            softmax(&z)
        })
        .collect();
    // (C + 1) × C system: rows i < C are Σ_j k_j·p̂_j[i] − k_i = N·∇b_i, the last Σ_j k_j = N.
    let nf = n as f64;
    let mut a = vec![vec![0f64; c]; c + 1];
    let mut rhs = vec![0f64; c + 1];
    for i in 0..c {
        for j in 0..c {
            a[i][j] = p_hat[j][i] - if i == j { 1.0 } else { 0.0 };
        }
        rhs[i] = nf * grad_b[i];
    }
    a[c] = vec![1.0; c];
    rhs[c] = nf;
    let k = least_squares(&a, &rhs);
    round_to_total(&k, n)
}

/// x/y as the reference computes it from mantissas and exponents, the exponent
/// difference clamped to ±10 so that a bias gradient near 0 cannot overflow; 0 when
/// either is 0.
fn ratio(x: f64, y: f64) -> f64 {
    if x == 0.0 || y == 0.0 || !x.is_finite() || !y.is_finite() {
        return 0.0;
    }
    let (mx, ex) = frexp(x);
    let (my, ey) = frexp(y);
    (mx / my) * 2f64.powi((ex - ey).clamp(-10, 10))
}

/// x = m·2^e with 0.5 ≤ |m| < 1 (C's frexp), for finite non-zero x.
fn frexp(x: f64) -> (f64, i32) {
    let e = x.abs().log2().floor() as i32 + 1;
    let m = x / 2f64.powi(e);
    // log2 may land one off at exact powers of two.
    if m.abs() >= 1.0 {
        (m / 2.0, e + 1)
    } else if m.abs() < 0.5 {
        (m * 2.0, e - 1)
    } else {
        (m, e)
    }
}

fn softmax(z: &[f64]) -> Vec<f64> {
    let max = z.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = z.iter().map(|v| (v - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|v| v / s).collect()
}

/// The minimum-norm least-squares solution A⁺·y (A is m × n, m ≥ n), through the
/// eigen-decomposition of AᵀA (cyclic Jacobi), eigenvalues below n·ε·λ_max dropped.
pub fn least_squares(a: &[Vec<f64>], y: &[f64]) -> Vec<f64> {
    let n = a[0].len();
    let mut m = vec![vec![0f64; n]; n];
    for i in 0..n {
        for j in 0..n {
            m[i][j] = a.iter().map(|row| row[i] * row[j]).sum();
        }
    }
    let aty: Vec<f64> = (0..n)
        .map(|i| a.iter().zip(y).map(|(row, v)| row[i] * v).sum())
        .collect();
    let (values, vectors) = symmetric_eigen(m);
    let max = values.iter().fold(0f64, |acc, v| acc.max(v.abs()));
    let tol = max * n as f64 * f64::EPSILON;
    let mut x = vec![0f64; n];
    for (k, &lambda) in values.iter().enumerate() {
        if lambda.abs() <= tol {
            continue;
        }
        let coef: f64 = (0..n).map(|i| vectors[i][k] * aty[i]).sum::<f64>() / lambda;
        for i in 0..n {
            x[i] += coef * vectors[i][k];
        }
    }
    x
}

/// Eigenvalues and eigenvectors (columns) of a symmetric matrix by cyclic Jacobi.
#[allow(clippy::needless_range_loop)] // rotations read two rows or columns at once
fn symmetric_eigen(mut m: Vec<Vec<f64>>) -> (Vec<f64>, Vec<Vec<f64>>) {
    let n = m.len();
    let mut v: Vec<Vec<f64>> = (0..n)
        .map(|i| (0..n).map(|j| if i == j { 1.0 } else { 0.0 }).collect())
        .collect();
    for _sweep in 0..100 {
        let off: f64 = (0..n)
            .flat_map(|i| (0..n).filter(move |&j| j != i).map(move |j| (i, j)))
            .map(|(i, j)| m[i][j] * m[i][j])
            .sum();
        if off < 1e-30 {
            break;
        }
        for p in 0..n {
            for q in p + 1..n {
                if m[p][q].abs() < 1e-300 {
                    continue;
                }
                let theta = (m[q][q] - m[p][p]) / (2.0 * m[p][q]);
                let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
                let (cos, sin) = (1.0 / (t * t + 1.0).sqrt(), t / (t * t + 1.0).sqrt());
                for k in 0..n {
                    let (mkp, mkq) = (m[k][p], m[k][q]);
                    m[k][p] = cos * mkp - sin * mkq;
                    m[k][q] = sin * mkp + cos * mkq;
                }
                for k in 0..n {
                    let (mpk, mqk) = (m[p][k], m[q][k]);
                    m[p][k] = cos * mpk - sin * mqk;
                    m[q][k] = sin * mpk + cos * mqk;
                }
                for row in v.iter_mut() {
                    let (vp, vq) = (row[p], row[q]);
                    row[p] = cos * vp - sin * vq;
                    row[q] = sin * vp + cos * vq;
                }
            }
        }
    }
    ((0..n).map(|i| m[i][i]).collect(), v)
}

/// Clip at 0, round, zero counts above `n`, then move the entries with the largest
/// rounding error one by one until the counts sum to `n` (iLRG's post-processing).
pub fn round_to_total(k: &[f64], n: usize) -> Vec<usize> {
    let clipped: Vec<f64> = k
        .iter()
        .map(|&v| if v.is_finite() { v.max(0.0) } else { 0.0 })
        .collect();
    let mut counts: Vec<i64> = clipped
        .iter()
        .map(|v| v.round() as i64)
        .map(|v| if v > n as i64 { 0 } else { v })
        .collect();
    // Rounding error per entry: how much the rounded count exceeds the real value.
    let mut error: Vec<f64> = counts
        .iter()
        .zip(&clipped)
        .map(|(&r, &v)| r as f64 - v)
        .collect();
    let mut total: i64 = counts.iter().sum();
    while total != n as i64 {
        if total > n as i64 {
            // Take one from the positive count rounded up the most.
            let Some(i) = (0..counts.len())
                .filter(|&i| counts[i] > 0)
                .max_by(|&a, &b| error[a].total_cmp(&error[b]).then(b.cmp(&a)))
            else {
                break;
            };
            counts[i] -= 1;
            error[i] -= 1.0;
            total -= 1;
        } else {
            // Add one to the count rounded down the most.
            let i = (0..counts.len())
                .min_by(|&a, &b| error[a].total_cmp(&error[b]).then(a.cmp(&b)))
                .expect("classes");
            counts[i] += 1;
            error[i] += 1.0;
            total += 1;
        }
    }
    counts.into_iter().map(|v| v.max(0) as usize).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_linear_system_restores_counts_from_consistent_gradients() {
        // Hand-made gradients with a known answer: class embeddings h_j through a known
        // head give p̂_j; for counts k, N·∇b_i = Σ_j k_j·p̂_j[i] − k_i is what iLRG's model
        // of the batch predicts, and ∇W_{·j} = ∇b_j·h_j makes ĥ_j = h_j.
        let (c, d) = (3, 4);
        let w: Vec<f64> = (0..d * c)
            .map(|i| ((i * 7 % 11) as f64 - 5.0) / 10.0)
            .collect();
        let b = vec![0.1, -0.2, 0.05];
        let class_h = [
            vec![1.0, 0.2, 0.0, 0.5],
            vec![0.0, 1.5, 0.3, 0.1],
            vec![0.4, 0.0, 1.2, 0.9],
        ];
        let p_hat: Vec<Vec<f64>> = class_h
            .iter()
            .map(|h| {
                softmax(
                    &(0..c)
                        .map(|i| b[i] + (0..d).map(|k| h[k] * w[k * c + i]).sum::<f64>())
                        .collect::<Vec<_>>(),
                )
            })
            .collect();
        let gradients = |k: [f64; 3]| {
            let n: f64 = k.iter().sum();
            let gb: Vec<f64> = (0..c)
                .map(|i| ((0..c).map(|j| k[j] * p_hat[j][i]).sum::<f64>() - k[i]) / n)
                .collect();
            let mut gw = vec![0f64; d * c];
            for j in 0..c {
                for r in 0..d {
                    gw[r * c + j] = gb[j] * class_h[j][r];
                }
            }
            (gw, gb)
        };
        let (gw, gb) = gradients([5.0, 3.0, 2.0]);
        assert_eq!(restore_counts(&gw, &gb, &w, &b, 10), vec![5, 3, 2]);
        let (gw, gb) = gradients([12.0, 1.0, 7.0]);
        assert_eq!(restore_counts(&gw, &gb, &w, &b, 20), vec![12, 1, 7]);
        // The system is linear in N: twice the batch, twice the counts.
        assert_eq!(restore_counts(&gw, &gb, &w, &b, 40), vec![24, 2, 14]);
    }

    /// Why iLRG scores the same for GCN, GAT and SAGE on EC-LDA's compressed round: the
    /// model scaled to norm 0.01 outputs p ≈ 1/C for every node, so ∇b_c = 1/C − n_c/N_t
    /// and every p̂_j ≈ 1/C whatever the head and the embeddings; the system then solves to
    /// k_c = N·n_c/N_t — the data alone — and rounding decides the rest. Here two heads
    /// and two sets of embeddings (near-uniform outputs, as scaled) give identical counts,
    /// exact when N is the train count N_t and the rounded N·n_c/N_t when N counts every
    /// node (`weighting: all`), which is what keeps the compressed cos-sim just below 1.
    #[test]
    fn on_a_compressed_round_the_counts_depend_on_the_labels_only() {
        let (c, d) = (4usize, 5usize);
        let labels: Vec<usize> = [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 3].to_vec();
        let n_train = labels.len();
        let counts_of = |scale: f64, seed: u64, n: usize| {
            // A head and node embeddings scaled down as EC-LDA scales the model.
            let v = |i: usize| scale * (((i as u64 * 2654435761 + seed * 97) % 1000) as f64 / 500.0 - 0.5);
            let w: Vec<f64> = (0..d * c).map(v).collect();
            let b: Vec<f64> = (0..c).map(|i| v(100 + i)).collect();
            let h: Vec<Vec<f64>> = (0..n_train).map(|k| (0..d).map(|j| v(1000 + k * d + j).abs()).collect()).collect();
            let (mut gw, mut gb) = (vec![0f64; d * c], vec![0f64; c]);
            for (k, &y) in labels.iter().enumerate() {
                let z: Vec<f64> = (0..c).map(|i| b[i] + (0..d).map(|j| h[k][j] * w[j * c + i]).sum::<f64>()).collect();
                let p = softmax(&z);
                for i in 0..c {
                    let e = (p[i] - if i == y { 1.0 } else { 0.0 }) / n_train as f64;
                    gb[i] += e;
                    for j in 0..d {
                        gw[j * c + i] += e * h[k][j];
                    }
                }
            }
            restore_counts(&gw, &gb, &w, &b, n)
        };
        let truth = [7usize, 3, 2, 1];
        // N = N_t: exact, for either model.
        assert_eq!(counts_of(1e-3, 1, n_train), truth);
        assert_eq!(counts_of(1e-3, 2, n_train), truth);
        // N = 20 nodes in all: 20·n_c/13 = (10.77, 4.62, 3.08, 1.54) rounded to sum 20,
        // the same for both models.
        let all = counts_of(1e-3, 1, 20);
        assert_eq!(all, counts_of(1e-3, 2, 20));
        assert_eq!(all.iter().sum::<usize>(), 20);
        for (k, n) in all.iter().zip(truth) {
            assert!((*k as f64 - 20.0 * n as f64 / 13.0).abs() <= 1.0, "{all:?}");
        }
        let f = |v: &[usize]| v.iter().map(|&x| x as f64).collect::<Vec<f64>>();
        let cos = crate::scoring::cosine_similarity(&crate::scoring::normalise(&f(&all)), &crate::scoring::normalise(&f(&truth)));
        assert!(cos < 1.0 - 1e-6 && cos > 0.99, "{cos}");
        // Unscaled, the same two models give different counts: the model matters again.
        assert_ne!(counts_of(3.0, 1, 20), counts_of(3.0, 2, 20));
    }

    #[test]
    fn least_squares_and_rounding() {
        // Overdetermined, consistent: x = (1, 2).
        let a = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0]];
        let x = least_squares(&a, &[1.0, 2.0, 3.0]);
        assert!(
            (x[0] - 1.0).abs() < 1e-12 && (x[1] - 2.0).abs() < 1e-12,
            "{x:?}"
        );
        // Rank-deficient: the minimum-norm solution of x0 + x1 = 2 is (1, 1).
        let x = least_squares(&[vec![1.0, 1.0], vec![1.0, 1.0]], &[2.0, 2.0]);
        assert!(
            (x[0] - 1.0).abs() < 1e-12 && (x[1] - 1.0).abs() < 1e-12,
            "{x:?}"
        );
        assert_eq!(round_to_total(&[2.6, 3.7, 3.55], 10), vec![3, 4, 3]);
        assert_eq!(round_to_total(&[-1.0, 4.4, 4.4], 10), vec![0, 5, 5]);
        assert_eq!(round_to_total(&[15.0, 2.0, 1.0], 10), vec![7, 2, 1]);
        assert_eq!(ratio(3.0, 1.5), 2.0);
        assert_eq!(ratio(1.0, 1e-12), 1024.0 * frexp(1.0).0 / frexp(1e-12).0);
    }
}

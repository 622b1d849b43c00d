//! Dirichlet label-skew partition (the "label Dirichlet" split of NIID-Bench / FedLab,
//! without NIID-Bench's capping of full clients and resampling loop).
//!
//! Procedure, with K clients, concentration α and one RNG `rng::derive(seed,
//! "dirichlet", [])` used in exactly this order:
//! 1. For each class c = 0, 1, … in turn: take the class's nodes (ascending ids) and
//!    shuffle them; draw p ~ Dir(α, …, α) over the K clients; with cumulative sums
//!    `P_j = p_0 + … + p_j`, client j receives the shuffled nodes at positions
//!    `⌊P_{j−1}·n_c⌋ .. ⌊P_j·n_c⌋` (`⌊P_{−1}·n_c⌋ = 0`, the last client up to `n_c`;
//!    NIID-Bench's `np.split(idx, (cumsum(p)·n_c).astype(int)[:-1])`).
//! 2. Each unlabelled node (ascending ids) goes to a client drawn uniformly.
//! 3. Repair: while some client is empty (lowest id first), the largest client (lowest
//!    id on ties) gives it its highest-numbered node.
//!
//! Dir(α) is sampled as normalised Gamma(α, 1) draws, each computed in log space as
//! `ln G + ln(U)/α` with G ~ Gamma(α + 1, 1), U ~ Uniform(0, 1] (Marsaglia–Tsang's boost),
//! so that tiny α does not underflow every draw to zero.

use rand::Rng as _;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, Gamma};

use crate::rng::Rng;

/// One draw of Dir(α·1_k).
pub fn sample_dirichlet(alpha: f64, k: usize, rng: &mut Rng) -> Vec<f64> {
    let gamma = Gamma::new(alpha + 1.0, 1.0).expect("alpha > 0 is checked by the caller");
    let logs: Vec<f64> = (0..k)
        .map(|_| {
            let g: f64 = gamma.sample(rng);
            let u = 1.0 - rng.random::<f64>(); // (0, 1]
            g.ln() + u.ln() / alpha
        })
        .collect();
    let max = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = logs.iter().map(|l| (l - max).exp()).collect();
    let sum: f64 = exps.iter().sum();
    exps.into_iter().map(|e| e / sum).collect()
}

/// Client of every node (see the module documentation). Requires 1 ≤ k ≤ nodes.
pub fn dirichlet(labels: &[Option<u32>], num_classes: usize, k: usize, alpha: f64, rng: &mut Rng) -> Vec<u32> {
    let n = labels.len();
    assert!(k >= 1 && k <= n, "1 ≤ clients ≤ nodes is checked by the caller");
    let mut by_class: Vec<Vec<usize>> = vec![Vec::new(); num_classes];
    let mut unlabelled = Vec::new();
    for (v, y) in labels.iter().enumerate() {
        match y {
            Some(y) => by_class[*y as usize].push(v),
            None => unlabelled.push(v),
        }
    }
    let mut client = vec![0u32; n];
    for mut nodes in by_class {
        nodes.shuffle(rng);
        let p = sample_dirichlet(alpha, k, rng);
        let nc = nodes.len();
        let mut cum = 0f64;
        let mut from = 0usize;
        for (j, pj) in p.iter().enumerate() {
            cum += pj;
            let to = if j + 1 == k { nc } else { ((cum * nc as f64) as usize).clamp(from, nc) };
            for &v in &nodes[from..to] {
                client[v] = j as u32;
            }
            from = to;
        }
    }
    for v in unlabelled {
        client[v] = rng.random_range(0..k) as u32;
    }
    // Repair empty clients.
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); k];
    for (v, &c) in client.iter().enumerate() {
        members[c as usize].push(v); // ascending
    }
    while let Some(empty) = (0..k).find(|&c| members[c].is_empty()) {
        let donor = (0..k).max_by_key(|&c| (members[c].len(), std::cmp::Reverse(c))).unwrap();
        let v = members[donor].pop().expect("a client with two or more nodes exists while one is empty");
        client[v] = empty as u32;
        members[empty].push(v);
    }
    client
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;

    #[test]
    fn dirichlet_draws_sum_to_one_and_follow_alpha() {
        let mut r = rng::derive(0, "t", &[]);
        for alpha in [1e-3, 0.1, 0.5, 1.0, 100.0] {
            for _ in 0..50 {
                let p = sample_dirichlet(alpha, 7, &mut r);
                assert!((p.iter().sum::<f64>() - 1.0).abs() < 1e-12);
                assert!(p.iter().all(|x| x.is_finite() && *x >= 0.0));
            }
        }
        // Mean of each coordinate is 1/k; E[max] is large for small α and ≈ 1/k for large α.
        let mean_max = |alpha: f64, r: &mut Rng| {
            (0..2000).map(|_| sample_dirichlet(alpha, 5, r).into_iter().fold(0.0, f64::max)).sum::<f64>() / 2000.0
        };
        assert!(mean_max(0.01, &mut r) > 0.95);
        assert!(mean_max(1000.0, &mut r) < 0.23);
        let mean0 = (0..4000).map(|_| sample_dirichlet(0.5, 4, &mut r)[0]).sum::<f64>() / 4000.0;
        assert!((mean0 - 0.25).abs() < 0.02, "{mean0}");
    }

    #[test]
    fn repair_fills_empty_clients() {
        // One class, α tiny → nearly everything on one client; 6 clients, 8 nodes.
        let labels = vec![Some(0); 8];
        for seed in 0..20 {
            let c = dirichlet(&labels, 1, 6, 1e-3, &mut rng::derive(seed, "dirichlet", &[]));
            let mut s = vec![0; 6];
            for &x in &c {
                s[x as usize] += 1;
            }
            assert!(s.iter().all(|&x| x >= 1), "{s:?}");
        }
    }
}

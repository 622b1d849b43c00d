//! Solitude's edge LDP (Lin et al., IEEE TIFS 2022; `MatrixRandomizedResponse` in
//! WanyuGroup/TIFS2022-Solitude): each node perturbs its own adjacency row with Warner
//! RR, keeping each bit with probability e^ε/(1+e^ε) and flipping it otherwise; ε-edge
//! LDP per bit. The published code flips a dense n×n matrix (diagonal included); here a
//! row is sampled sparsely at O(deg + added) cost: the kept neighbours one by one, the
//! number of added edges from a binomial and their positions without replacement. No
//! self loops are reported (the candidates are the n − 1 other nodes).

use std::collections::HashSet;

use rand::Rng as _;
use rand_distr::{Binomial, Distribution};

use super::Epsilon;
use crate::error::{Error, Result};
use crate::rng::Rng;

/// Warner randomized response on adjacency rows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EdgeRr {
    epsilon: Epsilon,
}

impl EdgeRr {
    /// ε per adjacency bit; ε = ∞ reports rows as they are.
    pub fn new(epsilon: Epsilon) -> Result<EdgeRr> {
        let eps = epsilon.value();
        if eps.is_nan() || eps <= 0.0 {
            return Err(Error::param("epsilon", format!("ε = {eps} is not allowed: ε must be > 0 (∞ reports the rows as they are)")));
        }
        Ok(EdgeRr { epsilon })
    }

    /// The budget per adjacency bit.
    pub fn epsilon(&self) -> Epsilon {
        self.epsilon
    }

    /// e^ε/(1+e^ε), written as 1/(1+e^{−ε}) so that ∞ gives 1.
    pub fn keep_probability(&self) -> f64 {
        1.0 / (1.0 + (-self.epsilon.value()).exp())
    }

    /// 1/(1+e^ε): the probability that a bit is flipped (0 at ε = ∞).
    pub fn flip_probability(&self) -> f64 {
        1.0 / (1.0 + self.epsilon.value().exp())
    }

    /// Node `own`'s reported row over candidates {0..n} \ {own}: each true neighbour
    /// (sorted `neighbours`, no `own`) kept w.p. keep; among the n−1−deg non-neighbours,
    /// the number turned into edges is drawn from Binomial(n−1−deg, flip) and their
    /// positions uniformly without replacement (Floyd's algorithm, O(k)), mapped past
    /// `own` and the neighbours. Output sorted ascending, appended to `out`. Returns
    /// (kept, added). Cost O(deg + added) time and memory, whatever n.
    pub fn perturb_row(&self, n: usize, own: usize, neighbours: &[u32], rng: &mut Rng, out: &mut Vec<u32>) -> (usize, usize) {
        let deg = neighbours.len();
        assert!(own < n && deg < n, "node {own} with {deg} neighbours in a graph of {n} nodes");
        debug_assert!(neighbours.windows(2).all(|w| w[0] < w[1]), "neighbours must be sorted and distinct");
        debug_assert!(neighbours.iter().all(|&u| (u as usize) < n && u as usize != own), "neighbours must be < n and not {own}");
        if self.epsilon.is_infinite() {
            out.extend_from_slice(neighbours);
            return (deg, 0);
        }
        let free = (n - 1 - deg) as u64;
        let k = if free == 0 { 0 } else { Binomial::new(free, self.flip_probability()).expect("0 < flip ≤ 1/2").sample(rng) };
        let mut added = floyd_sample(free, k, rng);
        added.sort_unstable();
        // Position t among the non-neighbours → node id: step past every excluded id
        // (`own` and the neighbours, merged in order) that is ≤ the candidate.
        let at_own = neighbours.partition_point(|&u| (u as usize) < own);
        let excluded = |i: usize| -> u64 {
            match i.cmp(&at_own) {
                std::cmp::Ordering::Less => u64::from(neighbours[i]),
                std::cmp::Ordering::Equal => own as u64,
                std::cmp::Ordering::Greater => u64::from(neighbours[i - 1]),
            }
        };
        let mut i = 0;
        for t in &mut added {
            while i <= deg && excluded(i) <= *t + i as u64 {
                i += 1;
            }
            *t += i as u64;
        }
        // Merge the kept neighbours (drawn in order) with the added ids.
        let keep = self.keep_probability();
        let (mut kept, mut a) = (0, 0);
        out.reserve(deg + added.len());
        for &u in neighbours {
            if rng.random::<f64>() >= keep {
                continue;
            }
            while a < added.len() && added[a] < u64::from(u) {
                out.push(added[a] as u32);
                a += 1;
            }
            out.push(u);
            kept += 1;
        }
        out.extend(added[a..].iter().map(|&v| v as u32));
        (kept, added.len())
    }

    /// Expected number of reported (directed) edges over nodes with these degrees in a
    /// graph of n nodes: Σ_v deg_v·keep + (n−1−deg_v)·flip, and its standard deviation
    /// (independent Bernoullis, each of variance keep·flip: √(|degrees|·(n−1)·keep·flip)).
    pub fn expected_reported(&self, n: usize, degrees: &[usize]) -> (f64, f64) {
        expected(n, degrees, self.keep_probability(), self.flip_probability())
    }

    /// The smallest ε (to 2 decimals, rounded up: a multiple of 0.01, at least 0.01)
    /// whose expected reported count is ≤ `limit`; None if even ε = ∞ (the true edges
    /// alone) exceed it. A limit equal to the true count gives the ε (about 40) at which
    /// the expected flips vanish below f64 rounding. The expectation S + (T − 2S)·flip (S true, T candidate bits) falls with ε when T > 2S;
    /// on a graph denser than that it rises, and only ε = 0.01 can qualify.
    pub fn smallest_epsilon_within(n: usize, degrees: &[usize], limit: f64) -> Option<f64> {
        let at = |k: u64| {
            let rr = EdgeRr { epsilon: Epsilon(k as f64 / 100.0) };
            rr.expected_reported(n, degrees).0
        };
        if at(1) <= limit {
            return Some(0.01);
        }
        let (truth, _) = expected(n, degrees, 1.0, 0.0);
        let bits = degrees.len() as f64 * n.saturating_sub(1) as f64;
        if bits <= 2.0 * truth || truth > limit || limit.is_nan() {
            return None;
        }
        // Decreasing in ε: binary search the first grid point at or under the limit. At
        // ε = 1000, keep = 1 and flip = 0 in f64, so the count there is S ≤ limit.
        let (mut lo, mut hi) = (1u64, 100_000u64);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if at(mid) <= limit { hi = mid } else { lo = mid }
        }
        Some(hi as f64 / 100.0)
    }
}

/// Σ_v deg_v·keep + (n−1−deg_v)·flip and √(Σ (n−1)·keep·flip).
fn expected(n: usize, degrees: &[usize], keep: f64, flip: f64) -> (f64, f64) {
    let others = n.saturating_sub(1) as f64;
    let mean = degrees.iter().map(|&d| d as f64 * keep + (others - d as f64) * flip).sum();
    (mean, (degrees.len() as f64 * others * keep * flip).sqrt())
}

/// k distinct positions in 0..len, uniformly (Floyd's algorithm): O(k) time and memory.
fn floyd_sample(len: u64, k: u64, rng: &mut Rng) -> Vec<u64> {
    debug_assert!(k <= len);
    let mut seen = HashSet::with_capacity(k as usize);
    let mut picked = Vec::with_capacity(k as usize);
    for j in len - k..len {
        let t = rng.random_range(0..=j);
        let v = if seen.insert(t) { t } else { j };
        if v == j {
            seen.insert(j);
        }
        picked.push(v);
    }
    picked
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::Graph;

    fn rr(eps: f64) -> EdgeRr {
        EdgeRr::new(Epsilon(eps)).unwrap()
    }

    /// An Erdős–Rényi-like graph: `n` nodes, about `avg_degree`·n/2 edges.
    fn random_graph(n: usize, avg_degree: f64, seed: u64) -> Graph {
        let mut rng = crate::rng::derive(seed, "edge-rr-test-graph", &[]);
        let m = (avg_degree * n as f64 / 2.0) as usize;
        let edges: Vec<(usize, usize)> = (0..m).map(|_| (rng.random_range(0..n), rng.random_range(0..n))).collect();
        Graph::from_edges(n, edges, "test").unwrap().0
    }

    #[test]
    fn probabilities_are_exact_and_the_bit_ratio_is_e_to_the_eps() {
        let a = rr(3f64.ln());
        assert!((a.keep_probability() - 0.75).abs() < 1e-15 && (a.flip_probability() - 0.25).abs() < 1e-15);
        for eps in [0.1, 1.0, 7.0, 8.0, 30.0] {
            let a = rr(eps);
            assert!((a.keep_probability() + a.flip_probability() - 1.0).abs() < 1e-15);
            // A reported bit b from true bits 1 and 0: P(b|1)/P(b|0) ∈ {keep/flip, flip/keep}.
            let ratio = (a.keep_probability() / a.flip_probability()).max(a.flip_probability() / a.keep_probability());
            assert!((ratio - eps.exp()).abs() < 1e-12 * eps.exp(), "ε={eps}: {ratio}");
        }
        let off = EdgeRr::new(Epsilon::INFINITE).unwrap();
        assert_eq!((off.keep_probability(), off.flip_probability()), (1.0, 0.0));
        assert!(EdgeRr::new(Epsilon(0.0)).is_err() && EdgeRr::new(Epsilon(-1.0)).is_err());
    }

    #[test]
    fn infinite_epsilon_returns_the_row() {
        let g = random_graph(200, 6.0, 1);
        let off = EdgeRr::new(Epsilon::INFINITE).unwrap();
        let mut rng = crate::rng::derive(0, "edge-rr-test", &[]);
        let mut out = vec![7u32];
        for v in 0..g.num_nodes() {
            out.truncate(1);
            assert_eq!(off.perturb_row(200, v, g.neighbors(v), &mut rng, &mut out), (g.degree(v), 0));
            assert_eq!(&out[1..], g.neighbors(v), "node {v}");
            assert_eq!(out[0], 7, "appended, not cleared");
        }
    }

    /// Over a 2 000-node graph (≈ 8 000 edges) at ε ∈ {1, 3, 6}: rows sorted, in range,
    /// without `own` or duplicates; the kept count ~ Binomial(Σ deg, keep) and the added
    /// count ~ Σ Binomial(n−1−deg, flip) within 4σ of their means (σ the binomial ones,
    /// printed in the message); every kept id is a neighbour and every added one is not.
    #[test]
    fn reported_rows_are_valid_and_counts_match_their_expectation() {
        let n = 2000;
        let g = random_graph(n, 8.0, 2);
        let degrees = g.degrees();
        let total_deg: usize = degrees.iter().sum();
        let non_edges = (n * (n - 1) - total_deg) as f64;
        for eps in [1.0, 3.0, 6.0] {
            let a = rr(eps);
            let (keep, flip) = (a.keep_probability(), a.flip_probability());
            let mut rng = crate::rng::derive(3, "edge-rr-test", &[eps.to_bits()]);
            let (mut kept, mut added, mut reported) = (0usize, 0usize, 0usize);
            let mut out = Vec::new();
            for v in 0..n {
                out.clear();
                let nb = g.neighbors(v);
                let (k, a_) = a.perturb_row(n, v, nb, &mut rng, &mut out);
                assert_eq!(out.len(), k + a_);
                assert!(out.windows(2).all(|w| w[0] < w[1]), "node {v}: not sorted or duplicated");
                assert!(out.iter().all(|&u| (u as usize) < n && u as usize != v), "node {v}: out of range or self");
                assert_eq!(out.iter().filter(|u| nb.binary_search(u).is_ok()).count(), k, "node {v}: kept ids are its neighbours");
                kept += k;
                added += a_;
                reported += out.len();
            }
            let sd_kept = (total_deg as f64 * keep * flip).sqrt();
            let sd_added = (non_edges * flip * keep).sqrt();
            assert!(
                (kept as f64 - total_deg as f64 * keep).abs() < 4.0 * sd_kept,
                "ε={eps}: kept {kept} vs {} (σ {sd_kept:.1})",
                total_deg as f64 * keep
            );
            assert!(
                (added as f64 - non_edges * flip).abs() < 4.0 * sd_added,
                "ε={eps}: added {added} vs {} (σ {sd_added:.1})",
                non_edges * flip
            );
            let (mean, sd) = a.expected_reported(n, &degrees);
            assert!((mean - (total_deg as f64 * keep + non_edges * flip)).abs() < 1e-6 * mean);
            assert!((sd - (sd_kept.powi(2) + sd_added.powi(2)).sqrt()).abs() < 1e-9 * sd);
            assert!((reported as f64 - mean).abs() < 4.0 * sd, "ε={eps}: reported {reported} vs {mean} (σ {sd:.1})");
        }
    }

    /// The added ids are uniform over the non-neighbours: on a 12-node star centre with
    /// 3 neighbours at ε = ln 3 (flip 1/4), each of the 8 non-neighbours is reported in
    /// a fraction 1/4 of 40 000 rows, within 4.5σ (σ = √(n·¼·¾) ≈ 86.6); each neighbour in 3/4.
    #[test]
    fn every_candidate_is_reported_with_its_probability() {
        let (n, own, nb) = (12, 5, [0u32, 6, 11]);
        let a = rr(3f64.ln());
        let mut rng = crate::rng::derive(4, "edge-rr-test", &[]);
        let rows = 40_000;
        let mut counts = [0usize; 12];
        let mut out = Vec::new();
        for _ in 0..rows {
            out.clear();
            a.perturb_row(n, own, &nb, &mut rng, &mut out);
            for &u in &out {
                counts[u as usize] += 1;
            }
        }
        assert_eq!(counts[own], 0);
        let sd = (rows as f64 * 0.25 * 0.75).sqrt();
        for (u, &c) in counts.iter().enumerate().filter(|&(u, _)| u != own) {
            let p = if nb.contains(&(u as u32)) { 0.75 } else { 0.25 };
            assert!((c as f64 - rows as f64 * p).abs() < 4.5 * sd, "node {u}: {c} vs {}", rows as f64 * p);
        }
    }

    /// Extremes: a node adjacent to everyone, an isolated node, a 1-node graph.
    #[test]
    fn full_and_empty_rows() {
        let a = rr(0.5);
        let mut rng = crate::rng::derive(5, "edge-rr-test", &[]);
        let mut out = Vec::new();
        let all: Vec<u32> = (0..10).filter(|&u| u != 4).collect();
        let (k, added) = a.perturb_row(10, 4, &all, &mut rng, &mut out);
        assert_eq!((out.len(), added), (k, 0));
        out.clear();
        assert_eq!(a.perturb_row(1, 0, &[], &mut rng, &mut out), (0, 0));
        let (k, added) = a.perturb_row(10, 0, &[], &mut rng, &mut out);
        assert_eq!(k, 0);
        assert_eq!(out.len(), added);
        assert!(out.windows(2).all(|w| w[0] < w[1]) && out.iter().all(|&u| u != 0 && u < 10));
    }

    /// The answer ε meets the limit and ε − 0.01 does not; answers fall as the limit grows.
    #[test]
    fn smallest_epsilon_within_is_the_first_grid_point_under_the_limit() {
        let n = 2000;
        let degrees = random_graph(n, 8.0, 6).degrees();
        let truth: usize = degrees.iter().sum();
        let count = |eps: f64| rr(eps).expected_reported(n, &degrees).0;
        let mut last = f64::INFINITY;
        for factor in [1.0001, 1.01, 1.1, 1.5, 2.0, 10.0, 100.0] {
            let limit = truth as f64 * factor;
            let eps = EdgeRr::smallest_epsilon_within(n, &degrees, limit).unwrap();
            assert!(count(eps) <= limit, "limit {limit}: ε = {eps} gives {}", count(eps));
            let below = ((eps * 100.0).round() - 1.0) / 100.0;
            assert!(below <= 0.0 || count(below) > limit, "limit {limit}: ε = {below} already gives {}", count(below));
            assert!(eps <= last, "not monotone: {eps} after {last}");
            last = eps;
        }
        // E.g. twice the true edges: S + (T − 2S)·flip = 2S ⇔ flip = S/(T − 2S).
        let (s, t) = (truth as f64, (n * (n - 1)) as f64);
        let exact = (1.0 / (s / (t - 2.0 * s)) - 1.0).ln();
        let eps = EdgeRr::smallest_epsilon_within(n, &degrees, 2.0 * s).unwrap();
        assert!(eps >= exact && eps - exact < 0.01 + 1e-9, "{eps} vs {exact}");
        let at_truth = EdgeRr::smallest_epsilon_within(n, &degrees, s).unwrap();
        assert!(at_truth.is_finite() && count(at_truth) <= s && count(at_truth - 0.01) > s, "{at_truth}");
        assert_eq!(EdgeRr::smallest_epsilon_within(n, &degrees, s - 1.0), None);
        assert_eq!(EdgeRr::smallest_epsilon_within(n, &degrees, f64::NAN), None);
        assert_eq!(EdgeRr::smallest_epsilon_within(n, &degrees, t), Some(0.01));
    }
}

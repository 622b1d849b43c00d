//! Contextual stochastic block model: a labelled graph with Gaussian features that needs
//! no files. It is the embedded default dataset (the quickstart uses it).
//!
//! Procedure (all draws from `rng::derive(seed, "synthetic", …)`):
//! 1. labels: a seeded permutation of `0..nodes`, node at position i gets class i mod c
//!    (balanced classes);
//! 2. edges: until `round(nodes·avg_degree/2)` distinct edges exist, pick u uniformly,
//!    then with probability `homophily` a partner v uniformly from u's class, otherwise
//!    uniformly from the other classes; self loops and repeats are rejected;
//! 3. features: class means μ_c,j ~ N(0, feature_signal²), and x_v,j = μ_{y_v},j + N(0, 1).
//!    `feature_signal` is therefore the per-dimension separation in units of the noise.

use std::collections::HashSet;

use rand::Rng as _;
use rand::seq::SliceRandom;
use rand_distr::{Distribution, Normal, StandardNormal};
use serde::{Deserialize, Serialize};

use super::{Dataset, DenseMatrix, Features, Graph};
use crate::error::{Error, Result};
use crate::rng;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SyntheticConfig {
    pub nodes: usize,
    pub classes: usize,
    pub avg_degree: f64,
    /// Probability that an edge joins two nodes of the same class.
    pub homophily: f64,
    pub feature_dim: usize,
    pub feature_signal: f64,
}

impl Default for SyntheticConfig {
    fn default() -> Self {
        SyntheticConfig { nodes: 1000, classes: 4, avg_degree: 8.0, homophily: 0.8, feature_dim: 32, feature_signal: 0.4 }
    }
}

impl SyntheticConfig {
    pub fn validate(&self) -> Result<()> {
        let p = |f: &str, m: String| Err(Error::param(format!("dataset.synthetic.{f}"), m));
        if self.classes < 2 {
            return p("classes", format!("{} classes; at least 2 are required", self.classes));
        }
        // Node ids are u32 everywhere.
        if self.nodes > u32::MAX as usize {
            return p("nodes", format!("{} nodes is not allowed; allowed 2·classes..={}", self.nodes, u32::MAX));
        }
        if self.nodes < self.classes.saturating_mul(2) {
            return p("nodes", format!("{} nodes for {} classes; at least 2 per class are required", self.nodes, self.classes));
        }
        if !(self.avg_degree >= 0.0 && self.avg_degree <= (self.nodes / self.classes) as f64 / 2.0) {
            return p(
                "avg_degree",
                format!("{} is not in [0, nodes/classes/2 = {}]", self.avg_degree, (self.nodes / self.classes) as f64 / 2.0),
            );
        }
        if !(0.0..=1.0).contains(&self.homophily) {
            return p("homophily", format!("{} is not a probability in [0, 1]", self.homophily));
        }
        if self.feature_dim == 0 {
            return p("feature_dim", "must be at least 1".into());
        }
        if !(self.feature_signal >= 0.0 && self.feature_signal.is_finite()) {
            return p("feature_signal", format!("{} must be a finite number ≥ 0", self.feature_signal));
        }
        Ok(())
    }
}

/// Generate the dataset described by `cfg` with the given seed.
pub fn generate(cfg: &SyntheticConfig, seed: u64) -> Result<Dataset> {
    cfg.validate()?;
    let (n, c) = (cfg.nodes, cfg.classes);

    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng::derive(seed, "synthetic", &[0]));
    let mut labels = vec![0u32; n];
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); c];
    for (i, &v) in order.iter().enumerate() {
        labels[v] = (i % c) as u32;
    }
    for v in 0..n {
        members[labels[v] as usize].push(v);
    }

    let target = (n as f64 * cfg.avg_degree / 2.0).round() as usize;
    let mut r = rng::derive(seed, "synthetic", &[1]);
    let mut seen: HashSet<(usize, usize)> = HashSet::with_capacity(target * 2);
    let mut edges = Vec::with_capacity(target);
    // avg_degree ≤ nodes/classes/2 keeps the graph far from complete, so rejections are
    // rare; the bound only guards against a pathological configuration.
    let mut attempts = 0usize;
    while edges.len() < target {
        attempts += 1;
        if attempts > 100 * target + 1000 {
            return Err(Error::param("dataset.synthetic.avg_degree", "too dense to sample without repeats"));
        }
        let u = r.random_range(0..n);
        let cu = labels[u] as usize;
        let v = if r.random_bool(cfg.homophily) {
            members[cu][r.random_range(0..members[cu].len())]
        } else {
            // A uniform node outside u's class, by rejection (≤ c/(c−1) tries expected).
            loop {
                let w = r.random_range(0..n);
                if labels[w] as usize != cu {
                    break w;
                }
            }
        };
        if u == v {
            continue;
        }
        let key = (u.min(v), u.max(v));
        if seen.insert(key) {
            edges.push(key);
        }
    }
    let (graph, build_report) = Graph::from_edges(n, edges, "synthetic")?;

    let mut fr = rng::derive(seed, "synthetic", &[2]);
    let d = cfg.feature_dim;
    let mean_dist = Normal::new(0.0, cfg.feature_signal).map_err(|e| Error::param("dataset.synthetic.feature_signal", e.to_string()))?;
    let means: Vec<f64> = (0..c * d).map(|_| mean_dist.sample(&mut fr)).collect();
    let mut x = DenseMatrix::zeros(n, d);
    for v in 0..n {
        let mu = &means[labels[v] as usize * d..(labels[v] as usize + 1) * d];
        for (xj, &m) in x.row_mut(v).iter_mut().zip(mu) {
            let noise: f64 = StandardNormal.sample(&mut fr);
            *xj = (m + noise) as f32;
        }
    }

    let ds = Dataset {
        name: "synthetic".into(),
        graph,
        build_report,
        features: Some(Features::Dense(x)),
        labels: labels.into_iter().map(Some).collect(),
        class_names: (0..c).map(|k| format!("class{k}")).collect(),
        standard_split: None,
        notes: vec![format!(
            "contextual SBM: {n} nodes, {c} classes, avg degree {}, homophily {}, {d} Gaussian features, signal {}",
            cfg.avg_degree, cfg.homophily, cfg.feature_signal
        )],
    };
    ds.validate("synthetic")?;
    Ok(ds)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_homophily_and_determinism() {
        let cfg = SyntheticConfig::default();
        let ds = generate(&cfg, 3).unwrap();
        assert_eq!(ds.num_nodes(), 1000);
        assert_eq!(ds.graph.num_edges(), 4000);
        assert_eq!(ds.label_counts(0..1000), vec![250; 4]);
        // Edge homophily: binomial(4000, 0.8) has sd ≈ 25 edges; allow 5 sd (±0.032).
        let same = ds.graph.edges().filter(|&(u, v)| ds.labels[u] == ds.labels[v]).count();
        let h = same as f64 / 4000.0;
        assert!((h - 0.8).abs() < 0.032, "edge homophily {h}");
        let again = generate(&cfg, 3).unwrap();
        assert_eq!(ds.graph, again.graph);
        assert_eq!(ds.features, again.features);
        assert_ne!(ds.graph, generate(&cfg, 4).unwrap().graph);
    }

    #[test]
    fn class_means_carry_the_signal() {
        let cfg = SyntheticConfig { feature_signal: 1.0, feature_dim: 8, ..Default::default() };
        let ds = generate(&cfg, 0).unwrap();
        let x = ds.features.as_ref().unwrap().to_dense();
        // Within-class variance of each feature is the unit noise: estimate it on class 0
        // (250 nodes; the sample variance has sd ≈ sqrt(2/249) ≈ 0.09, allow 4 sd).
        let class0: Vec<usize> = (0..1000).filter(|&v| ds.labels[v] == Some(0)).collect();
        for j in 0..8 {
            let vals: Vec<f64> = class0.iter().map(|&v| x.row(v)[j] as f64).collect();
            let mean = vals.iter().sum::<f64>() / vals.len() as f64;
            let var = vals.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / (vals.len() - 1) as f64;
            assert!((var - 1.0).abs() < 0.36, "feature {j} within-class variance {var}");
        }
    }

    #[test]
    fn invalid_parameters_name_the_field() {
        let e = generate(&SyntheticConfig { homophily: 1.5, ..Default::default() }, 0).unwrap_err().to_string();
        assert!(e.contains("dataset.synthetic.homophily"), "{e}");
        let e = generate(&SyntheticConfig { classes: 1, ..Default::default() }, 0).unwrap_err().to_string();
        assert!(e.contains("dataset.synthetic.classes"), "{e}");
    }
}

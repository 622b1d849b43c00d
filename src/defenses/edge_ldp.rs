//! `edge-ldp`: Solitude's edge local differential privacy, once before round 1: every node
//! of the client's graph randomizes its own adjacency row with Warner RR (each bit kept
//! with probability e^ε/(1+e^ε); [`crate::privacy::edge_rr`]), sampled sparsely — never an
//! n×n matrix. The client then trains on the reported graph. Cross-client edges stay
//! dropped (each client perturbs its own subgraph, n = its node count).
//!
//! `symmetrize` says how the rows become a graph (post-processing; no extra privacy
//! cost): `none` (default, as the released Solitude code reads the noisy matrix) keeps
//! one arc u → v per report "v is my neighbour" by u, so v aggregates the nodes that
//! claim it; `or` keeps {u, v} if either reported it; `and` if both did.
//!
//! In link prediction (`task: link`) the mechanism randomizes the client's training
//! edges — its training graph, whose edges are also the positive labels — and the client
//! then trains on the reported graph alone: its edges become the positives, message
//! passing sees it, and training negatives are drawn among its non-edges
//! ([`LinkSplit::with_training_graph`](crate::data::LinkSplit::with_training_graph)), so
//! the update is a post-processing of the reports. The pairs are unordered, so the
//! reports must be symmetrized (`or` or `and`). Validation and test pairs stay true: they
//! measure what the noise costs.
//!
//! Before perturbing, the expected number of reported edges is estimated from ε and the
//! degrees; above `max_edges` the run stops with the count, the memory it would need and
//! the smallest ε that fits.

use serde::{Deserialize, Serialize};

use crate::data::{Graph, Task};
use crate::error::{Error, Result};
use crate::fed::{ClientContext, DataTransform, Defense};
use crate::privacy::edge_rr::EdgeRr;
use crate::privacy::{Epsilon, PrivacyCost};
use crate::rng::Rng;
use crate::train::LocalData;

/// How reported rows become a graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Symmetrize {
    /// Directed: u → v for every report of v by u (the released code).
    #[default]
    None,
    /// Undirected: {u, v} if u or v reported it.
    Or,
    /// Undirected: {u, v} if both reported it.
    And,
}

/// Memory per reported edge, as an estimate for the guard: host CSR and rows (≈ 12 B),
/// device edge indices with and without self loops (2 × 16 B), three normalisation
/// weights (12 B), the fused kernels' host pattern (≈ 12 B) and a learned weight with
/// its momentum (8 B), rounded up.
pub const BYTES_PER_EDGE: f64 = 80.0;

fn max_edges() -> usize {
    20_000_000
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeLdpConfig {
    /// ε per adjacency bit (edge LDP); `.inf`: the graph as it is.
    pub epsilon: Epsilon,
    #[serde(default)]
    pub symmetrize: Symmetrize,
    /// Refuse to perturb a client whose expected reported edge count exceeds this.
    #[serde(default = "max_edges")]
    pub max_edges: usize,
}

impl super::DefenseConfig for EdgeLdpConfig {
    const TASKS: &'static [Task] = Task::ALL;

    fn cost(&self, run: &super::RunSize) -> super::CostHint {
        // The denser reported graph (measured on Cora): each client's n_c² bits are kept
        // at random with probability 1/(1 + e^ε), once per direction unless symmetrized.
        let per_direction = run.clients * (run.nodes / run.clients).powi(2) / (1.0 + self.epsilon.value().exp());
        let directions = if self.symmetrize == Symmetrize::None { 1.0 } else { 2.0 };
        super::CostHint { factor: 1.3, extra_arcs: directions * per_direction, ..Default::default() }
    }

    fn build(&self, name: &str, client: &ClientContext) -> Result<Defense> {
        if client.task == Task::Link && self.symmetrize == Symmetrize::None {
            return Err(Error::param(
                format!("defense `{name}`: symmetrize"),
                "`none` leaves directed reports, and link prediction trains on unordered pairs: allowed with `task: link` are `or` and `and`",
            ));
        }
        Ok(Defense::new(name).with_data(PerturbEdges::new(name, self, client.client)?))
    }
}

/// The edge mechanism with its checks, for one client; shared with `solitude`.
pub struct PerturbEdges {
    name: String,
    cfg: EdgeLdpConfig,
    /// The client, for messages.
    client: usize,
}

/// A perturbed graph and what perturbing did.
#[derive(Debug, Clone, PartialEq)]
pub struct Perturbed {
    /// Edges of the reported graph (arcs when directed).
    pub noisy_edges: usize,
    pub directed: bool,
    /// Per entry of the new graph's CSR (row v, sender u): whether {u, v} was not an edge
    /// of the client's true graph. The client knows its own graph; only the defense's
    /// report of what calibration removed reads this.
    pub fake: Vec<bool>,
    pub true_edges: usize,
    pub kept: usize,
    pub added: usize,
}

impl PerturbEdges {
    pub fn new(name: &str, cfg: &EdgeLdpConfig, client: usize) -> Result<PerturbEdges> {
        if cfg.max_edges == 0 {
            return Err(Error::param(format!("defense `{name}`: max_edges"), "must be at least 1"));
        }
        Ok(PerturbEdges { name: name.to_string(), cfg: cfg.clone(), client })
    }

    pub fn epsilon(&self) -> Epsilon {
        self.cfg.epsilon
    }

    /// Replace `data.graph` by the reported graph; what perturbing did (`None` with ε = ∞).
    pub fn perturb(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<Perturbed>> {
        if self.cfg.epsilon.is_infinite() {
            return Ok(None);
        }
        let rr = EdgeRr::new(self.cfg.epsilon)?;
        let truth = &data.graph;
        if truth.is_directed() {
            return Err(Error::param(format!("defense `{}`", self.name), "the client's graph is already directed (perturbed by an earlier edge-ldp)"));
        }
        let n = truth.num_nodes();
        let degrees = truth.degrees();
        let (expected, _) = rr.expected_reported(n, &degrees);
        if expected > self.cfg.max_edges as f64 {
            let fits = EdgeRr::smallest_epsilon_within(n, &degrees, self.cfg.max_edges as f64)
                .map_or("no ε fits (the true edges alone exceed it)".to_string(), |e| format!("the smallest ε that fits is {e:.2}"));
            return Err(Error::param(
                format!("defense `{}`: epsilon", self.name),
                format!(
                    "ε = {} on client {}'s {n} nodes would report ≈ {:.0} edges (≈ {:.2} GiB at ~{BYTES_PER_EDGE} B per edge), \
                     more than max_edges = {}; {fits}, or raise max_edges",
                    self.cfg.epsilon.value(),
                    self.client,
                    expected,
                    expected * BYTES_PER_EDGE / f64::from(1u32 << 30),
                    self.cfg.max_edges
                ),
            ));
        }
        let (mut kept, mut added) = (0, 0);
        let mut rows: Vec<Vec<u32>> = Vec::with_capacity(n);
        for v in 0..n {
            let mut row = Vec::new();
            let (k, a) = rr.perturb_row(n, v, truth.neighbors(v), rng, &mut row);
            kept += k;
            added += a;
            rows.push(row);
        }
        let graph = match self.cfg.symmetrize {
            Symmetrize::None => {
                // Row u lists the nodes u reported; v aggregates the nodes that reported it.
                let mut senders: Vec<Vec<u32>> = vec![Vec::new(); n];
                for (u, row) in rows.iter().enumerate() {
                    for &v in row {
                        senders[v as usize].push(u as u32);
                    }
                }
                Graph::from_senders(senders)
            }
            Symmetrize::Or => Graph::from_edges(n, rows.iter().enumerate().flat_map(|(u, r)| r.iter().map(move |&v| (u, v as usize))), "edge-ldp")?.0,
            Symmetrize::And => {
                let both = rows.iter().enumerate().flat_map(|(u, r)| r.iter().map(move |&v| (u, v as usize))).filter(|&(u, v)| u < v && rows[v].binary_search(&(u as u32)).is_ok());
                Graph::from_edges(n, both, "edge-ldp")?.0
            }
        };
        let fake = (0..n).flat_map(|v| graph.neighbors(v).iter().map(move |&u| (u, v))).map(|(u, v)| truth.neighbors(v).binary_search(&u).is_err()).collect();
        let p = Perturbed { noisy_edges: graph.num_edges(), directed: graph.is_directed(), fake, true_edges: truth.num_edges(), kept, added };
        if let Some(split) = &data.link {
            let reported = split.with_training_graph(graph.clone()).map_err(|e| match e {
                Error::Param { name, msg } => Error::param(format!("defense `{}` (client {}'s reported graph): {name}", self.name, self.client), msg),
                e => e,
            })?;
            data.link = Some(reported);
        }
        data.graph = graph;
        Ok(Some(p))
    }

    /// What perturbing cost and did.
    pub fn cost(&self, p: Option<&Perturbed>) -> PrivacyCost {
        let mut effects = std::collections::BTreeMap::new();
        if let Some(p) = p {
            let fake = p.fake.iter().filter(|&&f| f).count();
            effects.insert("true_edges".to_string(), p.true_edges as f64);
            effects.insert("reported_bits_kept".to_string(), p.kept as f64);
            effects.insert("reported_bits_added".to_string(), p.added as f64);
            effects.insert("noisy_edges".to_string(), p.noisy_edges as f64);
            effects.insert("noisy_edges_fake".to_string(), if p.directed { fake } else { fake / 2 } as f64);
        }
        PrivacyCost {
            protects: format!(
                "each node's adjacency row within the client: ε-edge-LDP per adjacency bit (Warner RR; graph read as {})",
                match self.cfg.symmetrize {
                    Symmetrize::None => "directed reports",
                    Symmetrize::Or => "undirected, an edge if either end reported it",
                    Symmetrize::And => "undirected, an edge if both ends reported it",
                }
            ),
            epsilon: self.cfg.epsilon.value(),
            delta: 0.0,
            effects,
            ..Default::default()
        }
    }
}

impl DataTransform for PerturbEdges {
    fn apply(&self, data: &mut LocalData, rng: &mut Rng) -> Result<Option<PrivacyCost>> {
        let p = self.perturb(data, rng)?;
        Ok(Some(self.cost(p.as_ref())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{DenseMatrix, Features, Role};

    fn local(n: usize, edges: &[(usize, usize)]) -> LocalData {
        let (graph, _) = Graph::from_edges(n, edges.iter().copied(), "t").unwrap();
        LocalData { graph, features: Features::Dense(DenseMatrix::zeros(n, 1)), labels: vec![Some(0); n], roles: vec![Role::Train; n], classes: 2, label_transition: None, feature_kprop: 0, link: None }
    }

    fn config(eps: f64, symmetrize: Symmetrize, max_edges: usize) -> EdgeLdpConfig {
        EdgeLdpConfig { epsilon: Epsilon(eps), symmetrize, max_edges }
    }

    /// A ring of 400 nodes at ε = 2: the reported arcs are the kept ring arcs plus the
    /// added ones, and the fake flags mark exactly the arcs that are not ring edges.
    #[test]
    fn reported_graph_and_fake_flags() {
        let ring: Vec<(usize, usize)> = (0..400).map(|v| (v, (v + 1) % 400)).collect();
        for sym in [Symmetrize::None, Symmetrize::Or, Symmetrize::And] {
            let mut data = local(400, &ring);
            let p = PerturbEdges::new("e", &config(2.0, sym, 1_000_000), 0).unwrap().perturb(&mut data, &mut crate::rng::derive(1, "t", &[])).unwrap().unwrap();
            let g = &data.graph;
            assert_eq!((g.is_directed(), p.directed, g.num_edges()), (sym == Symmetrize::None, sym == Symmetrize::None, p.noisy_edges));
            let is_ring = |u: usize, v: usize| (u + 1) % 400 == v || (v + 1) % 400 == u;
            let flags: Vec<bool> = (0..400).flat_map(|v| g.neighbors(v).iter().map(move |&u| !is_ring(u as usize, v))).collect();
            assert_eq!(flags, p.fake);
            if sym == Symmetrize::None {
                assert_eq!(g.num_edges(), p.kept + p.added);
            }
        }
    }

    #[test]
    fn too_many_expected_edges_is_refused_with_the_epsilon_that_fits() {
        let mut data = local(2000, &[(0, 1)]);
        let e = PerturbEdges::new("edges", &config(1.0, Symmetrize::None, 10_000), 3).unwrap().perturb(&mut data, &mut crate::rng::derive(1, "t", &[])).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("defense `edges`: epsilon") && msg.contains("client 3's 2000 nodes") && msg.contains("the smallest ε that fits is"), "{msg}");
        // The graph is left as it was.
        assert_eq!(data.graph.num_edges(), 1);
    }
}

//! Splitting one graph into federated clients.
//!
//! Three methods:
//! - **louvain** (FedSage+ / FederatedScope / OpenFGL): multi-level Louvain communities
//!   ([`louvain`]), then δ-balanced assignment of communities to clients ([`assign`]);
//! - **fluid** (EC-LDA): Fluid communities with k = clients on the largest connected
//!   component ([`fluid`]); nodes outside it belong to no client;
//! - **dirichlet**: label skew, each class spread over the clients by Dir(α)
//!   proportions ([`dirichlet`]).
//!
//! ([`kway`]: balanced k-way partitioning by METIS, RGNN's LLP bags; not a client method.)
//!
//! Every client is the subgraph induced by its nodes: edges between clients are dropped
//! (and counted in [`DroppedEdges`]). All randomness comes from
//! `rng::derive(seed, "louvain" | "fluid" | "dirichlet", [])`.

pub mod assign;
pub mod dirichlet;
pub mod fluid;
pub mod kway;
pub mod louvain;

use serde::{Deserialize, Serialize};

use crate::data::{Dataset, Graph, Role, Split};
use crate::error::{Error, Result};
use crate::rng;

pub use louvain::modularity;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Louvain,
    Fluid,
    Dirichlet,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PartitionConfig {
    pub method: Method,
    pub clients: usize,
    /// Louvain balancing slack δ (FedSage+ / FederatedScope default 20).
    pub delta: usize,
    /// Louvain modularity resolution γ.
    pub resolution: f64,
    /// Dirichlet concentration α (smaller = more label skew).
    pub alpha: f64,
    /// Fluid communities iteration limit (EC-LDA uses 5000).
    pub max_iter: usize,
}

impl Default for PartitionConfig {
    fn default() -> Self {
        PartitionConfig { method: Method::Louvain, clients: 10, delta: 20, resolution: 1.0, alpha: 0.5, max_iter: 5000 }
    }
}

impl PartitionConfig {
    /// The checks that need no dataset, on every field whatever the method: `clients`
    /// ≥ 1, `resolution` and `alpha` finite and > 0, `max_iter` ≥ 1.
    pub fn validate_static(&self) -> Result<()> {
        let p = |f: &str, m: String| Err(Error::param(format!("partition.{f}"), m));
        if !(self.resolution > 0.0 && self.resolution.is_finite()) {
            return p("resolution", format!("{} must be a finite number > 0", self.resolution));
        }
        if !(self.alpha > 0.0 && self.alpha.is_finite()) {
            return p("alpha", format!("{} must be a finite number > 0", self.alpha));
        }
        if self.max_iter == 0 {
            return p("max_iter", "must be at least 1".into());
        }
        if self.clients == 0 {
            return p("clients", "0 clients; at least 1 is required".into());
        }
        Ok(())
    }

    /// [`validate_static`](Self::validate_static), then `clients` at most the number of
    /// nodes the method can use: all nodes (louvain, dirichlet) or the largest connected
    /// component (fluid).
    pub fn validate(&self, dataset: &Dataset) -> Result<()> {
        self.validate_static()?;
        let p = |f: &str, m: String| Err(Error::param(format!("partition.{f}"), m));
        let n = dataset.num_nodes();
        match self.method {
            Method::Louvain | Method::Dirichlet if self.clients > n => {
                p("clients", format!("{} clients for {n} nodes in `{}`; at most {n} are allowed", self.clients, dataset.name))
            }
            Method::Fluid => {
                let lcc = dataset.graph.largest_connected_component().len();
                if self.clients > lcc {
                    p(
                        "clients",
                        format!(
                            "{} clients but the largest connected component of `{}` has {lcc} nodes; \
                             fluid communities allow at most {lcc}",
                            self.clients, dataset.name
                        ),
                    )
                } else {
                    Ok(())
                }
            }
            _ => Ok(()),
        }
    }
}

/// Which client each node belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Partition {
    pub num_clients: usize,
    /// Client of each node; `None` = in no client (fluid: nodes outside the LCC).
    pub assignment: Vec<Option<u32>>,
    /// Louvain: number of communities found (before balancing).
    pub communities: Option<usize>,
    /// Louvain: modularity of those communities on the full graph, at the configured
    /// resolution (the standard Newman modularity for resolution 1). `None` for other
    /// methods and for a graph without edges.
    pub modularity: Option<f64>,
}

/// Edges lost by cutting the graph into clients.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct DroppedEdges {
    /// Edges whose two ends are in different clients.
    pub cross_client: usize,
    /// Edges with at least one end in no client.
    pub unassigned: usize,
}

/// One client: its nodes and their induced subgraph (local id i = `nodes[i]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Client {
    pub id: usize,
    /// Global node ids, ascending.
    pub nodes: Vec<usize>,
    pub graph: Graph,
}

/// Split `dataset` into `cfg.clients` clients. Validates `cfg` first.
pub fn partition(dataset: &Dataset, cfg: &PartitionConfig, seed: u64) -> Result<Partition> {
    partition_logged(dataset, cfg, seed, &mut |_| {})
}

/// [`partition`], telling `log` how a long Louvain run goes: a line at most every
/// second (so graphs that take under a second say nothing).
pub fn partition_logged(dataset: &Dataset, cfg: &PartitionConfig, seed: u64, log: &mut dyn FnMut(&str)) -> Result<Partition> {
    cfg.validate(dataset)?;
    let g = &dataset.graph;
    let k = cfg.clients;
    let part = match cfg.method {
        Method::Louvain => {
            let start = std::time::Instant::now();
            let mut last = start;
            let c = louvain::louvain_reporting(g, cfg.resolution, &mut rng::derive(seed, "louvain", &[]), &mut |level, p| {
                if last.elapsed().as_secs_f64() >= 1.0 {
                    last = std::time::Instant::now();
                    log(&format!(
                        "louvain: level {level} ({} nodes), pass {}: {} moves, {} nodes evaluated, modularity {:+.2e} ({:.0} s)",
                        p.nodes,
                        p.pass + 1,
                        p.moves,
                        p.evaluated,
                        p.gained,
                        start.elapsed().as_secs_f64()
                    ));
                }
            });
            let client = assign::balance(&c.community, c.count, k, cfg.delta);
            Partition {
                num_clients: k,
                assignment: client.into_iter().map(Some).collect(),
                communities: Some(c.count),
                modularity: c.modularity,
            }
        }
        Method::Fluid => {
            let lcc = g.largest_connected_component();
            let (sub, _) = g.induced_subgraph(&lcc);
            let comm = fluid::fluid(&sub, k, cfg.max_iter, &mut rng::derive(seed, "fluid", &[]));
            let mut assignment = vec![None; g.num_nodes()];
            for (i, &v) in lcc.iter().enumerate() {
                assignment[v] = Some(comm[i]);
            }
            Partition { num_clients: k, assignment, communities: None, modularity: None }
        }
        Method::Dirichlet => {
            let client =
                dirichlet::dirichlet(&dataset.labels, dataset.num_classes(), k, cfg.alpha, &mut rng::derive(seed, "dirichlet", &[]));
            Partition { num_clients: k, assignment: client.into_iter().map(Some).collect(), communities: None, modularity: None }
        }
    };
    Ok(part)
}

impl Partition {
    /// One client holding all `n` nodes (centralized training).
    pub fn single(n: usize) -> Partition {
        Partition { num_clients: 1, assignment: vec![Some(0); n], communities: None, modularity: None }
    }

    /// Number of nodes of each client.
    pub fn sizes(&self) -> Vec<usize> {
        let mut s = vec![0usize; self.num_clients];
        for c in self.assignment.iter().flatten() {
            s[*c as usize] += 1;
        }
        s
    }

    /// Nodes of each client (global ids, ascending).
    pub fn members(&self) -> Vec<Vec<usize>> {
        let mut m = vec![Vec::new(); self.num_clients];
        for (v, c) in self.assignment.iter().enumerate() {
            if let Some(c) = c {
                m[*c as usize].push(v);
            }
        }
        m
    }

    /// The clients' induced subgraphs (one per client id, in id order) and the edges the
    /// cut drops.
    pub fn clients(&self, graph: &Graph) -> (Vec<Client>, DroppedEdges) {
        assert_eq!(self.assignment.len(), graph.num_nodes(), "partition made for another graph");
        let mut dropped = DroppedEdges::default();
        for (u, v) in graph.edges() {
            match (self.assignment[u], self.assignment[v]) {
                (Some(a), Some(b)) if a != b => dropped.cross_client += 1,
                (Some(_), Some(_)) => {}
                _ => dropped.unassigned += 1,
            }
        }
        let clients = self
            .members()
            .into_iter()
            .enumerate()
            .map(|(id, nodes)| {
                let (g, _) = graph.induced_subgraph(&nodes);
                Client { id, nodes, graph: g }
            })
            .collect();
        (clients, dropped)
    }
}

/// Per-client figures for the run report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClientReport {
    pub id: usize,
    pub nodes: usize,
    pub edges: usize,
    pub train: usize,
    pub val: usize,
    pub test: usize,
    /// Counts per class over all the client's labelled nodes.
    pub label_distribution: Vec<usize>,
}

/// Sizes, split counts and label histograms of `clients` (`split` covers the full graph).
pub fn report(dataset: &Dataset, clients: &[Client], split: &Split) -> Vec<ClientReport> {
    clients
        .iter()
        .map(|c| {
            let count = |r: Role| c.nodes.iter().filter(|&&v| split.roles[v] == r).count();
            ClientReport {
                id: c.id,
                nodes: c.nodes.len(),
                edges: c.graph.num_edges(),
                train: count(Role::Train),
                val: count(Role::Val),
                test: count(Role::Test),
                label_distribution: dataset.label_counts(c.nodes.iter().copied()),
            }
        })
        .collect()
}

/// Edges of `k` cliques of `s` nodes in a ring, clique i joined to clique i+1 (mod k)
/// by one edge: a graph with known communities for the partitioners' tests.
#[cfg(test)]
pub(crate) fn ring_of_cliques_edges(k: usize, s: usize) -> Vec<(usize, usize)> {
    let mut e = Vec::new();
    for c in 0..k {
        for a in 0..s {
            for b in a + 1..s {
                e.push((c * s + a, c * s + b));
            }
        }
        e.push((c * s + s - 1, ((c + 1) % k) * s));
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::SplitRatios;
    use rand::Rng as _;

    fn dataset(graph: Graph, labels: Vec<Option<u32>>, classes: usize) -> Dataset {
        Dataset {
            name: "test".into(),
            graph,
            build_report: Default::default(),
            features: None,
            labels,
            class_names: (0..classes).map(|c| format!("c{c}")).collect(),
            standard_split: None,
            notes: vec![],
        }
    }

    /// `k` cliques of `s` nodes in a ring (one edge between neighbouring cliques),
    /// labelled by clique mod `classes`.
    fn ring_of_cliques(k: usize, s: usize, classes: usize) -> Dataset {
        let g = Graph::from_edges(k * s, ring_of_cliques_edges(k, s), "test").unwrap().0;
        let labels = (0..k * s).map(|v| Some(((v / s) % classes) as u32)).collect();
        dataset(g, labels, classes)
    }

    /// Random graph with planted groups, a few isolated nodes and a few unlabelled nodes.
    fn random_dataset(n: usize, m: usize, classes: usize, seed: u64) -> Dataset {
        let mut r = rng::derive(seed, "test-graph", &[]);
        let groups = 8;
        let mut e = Vec::new();
        while e.len() < m {
            let u = r.random_range(0..n - 5); // the last 5 nodes stay isolated
            let v = if r.random_bool(0.8) {
                let g = u % groups;
                let w = g + groups * r.random_range(0..(n - 5) / groups);
                w.min(n - 6)
            } else {
                r.random_range(0..n - 5)
            };
            e.push((u, v));
        }
        let g = Graph::from_edges(n, e, "test").unwrap().0;
        let labels = (0..n).map(|v| if v % 17 == 3 { None } else { Some(((v * 7) % classes) as u32) }).collect();
        dataset(g, labels, classes)
    }

    fn cfg(method: Method, clients: usize) -> PartitionConfig {
        PartitionConfig { method, clients, ..Default::default() }
    }

    /// Invariants every partition must satisfy; `covered` = nodes that must be assigned.
    fn check(ds: &Dataset, p: &Partition, k: usize, covered: &[usize]) {
        assert_eq!(p.num_clients, k);
        assert_eq!(p.assignment.len(), ds.num_nodes());
        let sizes = p.sizes();
        assert!(sizes.iter().all(|&s| s >= 1), "empty client: {sizes:?}");
        assert_eq!(sizes.iter().sum::<usize>(), covered.len());
        for &v in covered {
            assert!(p.assignment[v].is_some_and(|c| (c as usize) < k), "node {v}");
        }
        let (clients, dropped) = p.clients(&ds.graph);
        assert_eq!(clients.len(), k);
        // Every covered node in exactly one client; client node lists ascending.
        let mut seen = vec![0usize; ds.num_nodes()];
        for (i, c) in clients.iter().enumerate() {
            assert_eq!(c.id, i);
            assert!(c.nodes.windows(2).all(|w| w[0] < w[1]));
            assert_eq!(c.graph.num_nodes(), c.nodes.len());
            for &v in &c.nodes {
                seen[v] += 1;
                assert_eq!(p.assignment[v], Some(i as u32));
            }
        }
        for (v, (&s, a)) in seen.iter().zip(&p.assignment).enumerate() {
            assert_eq!(s, usize::from(a.is_some()), "node {v}");
        }
        // Dropped edges by brute force over all node pairs.
        let n = ds.num_nodes();
        let (mut cross, mut unassigned, mut kept) = (0, 0, 0);
        for u in 0..n {
            for v in u + 1..n {
                if ds.graph.neighbors(u).binary_search(&(v as u32)).is_err() {
                    continue;
                }
                match (p.assignment[u], p.assignment[v]) {
                    (Some(a), Some(b)) if a != b => cross += 1,
                    (Some(_), Some(_)) => kept += 1,
                    _ => unassigned += 1,
                }
            }
        }
        assert_eq!(dropped, DroppedEdges { cross_client: cross, unassigned });
        assert_eq!(clients.iter().map(|c| c.graph.num_edges()).sum::<usize>(), kept);
        assert_eq!(kept + cross + unassigned, ds.graph.num_edges());
    }

    #[test]
    fn config_defaults_and_yaml() {
        let d = PartitionConfig::default();
        assert_eq!((d.method, d.clients, d.delta, d.resolution, d.alpha, d.max_iter), (Method::Louvain, 10, 20, 1.0, 0.5, 5000));
        let c: PartitionConfig = serde_norway::from_str("method: fluid\nclients: 3\n").unwrap();
        assert_eq!(c, PartitionConfig { method: Method::Fluid, clients: 3, ..Default::default() });
        assert!(serde_norway::from_str::<PartitionConfig>("method: metis\n").is_err());
        assert!(serde_norway::from_str::<PartitionConfig>("clinets: 3\n").is_err());
    }

    #[test]
    fn invalid_parameters_name_the_field() {
        let ds = ring_of_cliques(4, 5, 2); // 20 nodes
        let err = |c: PartitionConfig| partition(&ds, &c, 0).unwrap_err().to_string();
        let e = err(cfg(Method::Louvain, 0));
        assert!(e.contains("partition.clients") && e.contains("at least 1"), "{e}");
        let e = err(cfg(Method::Louvain, 21));
        assert!(e.contains("partition.clients") && e.contains("at most 20"), "{e}");
        let e = err(cfg(Method::Dirichlet, 21));
        assert!(e.contains("partition.clients"), "{e}");
        let e = err(PartitionConfig { alpha: 0.0, ..cfg(Method::Dirichlet, 2) });
        assert!(e.contains("partition.alpha") && e.contains("> 0"), "{e}");
        let e = err(PartitionConfig { alpha: -1.0, ..cfg(Method::Dirichlet, 2) });
        assert!(e.contains("partition.alpha"), "{e}");
        let e = err(PartitionConfig { alpha: f64::NAN, ..cfg(Method::Dirichlet, 2) });
        assert!(e.contains("partition.alpha"), "{e}");
        let e = err(PartitionConfig { resolution: 0.0, ..cfg(Method::Louvain, 2) });
        assert!(e.contains("partition.resolution"), "{e}");
        let e = err(PartitionConfig { max_iter: 0, ..cfg(Method::Fluid, 2) });
        assert!(e.contains("partition.max_iter"), "{e}");
        assert!(partition(&ds, &cfg(Method::Louvain, 20), 0).is_ok());
        // Dataset-free checks.
        assert!(PartitionConfig::default().validate_static().is_ok());
        let e = PartitionConfig { clients: 0, ..Default::default() }.validate_static().unwrap_err().to_string();
        assert!(e.contains("partition.clients"), "{e}");
        let e = PartitionConfig { alpha: -0.5, ..Default::default() }.validate_static().unwrap_err().to_string();
        assert!(e.contains("partition.alpha"), "{e}");
        // Fluid: the limit is the largest connected component (a triangle here).
        let g = Graph::from_edges(6, [(0, 1), (1, 2), (0, 2), (3, 4)], "t").unwrap().0;
        let small = dataset(g, vec![Some(0); 6], 1);
        let e = partition(&small, &cfg(Method::Fluid, 4), 0).unwrap_err().to_string();
        assert!(e.contains("partition.clients") && e.contains("largest connected component") && e.contains("at most 3"), "{e}");
        assert!(partition(&small, &cfg(Method::Fluid, 3), 0).is_ok());
    }

    #[test]
    fn louvain_partition_invariants_and_determinism() {
        let ds = random_dataset(600, 2400, 4, 1);
        let all: Vec<usize> = (0..600).collect();
        for k in [1, 3, 7, 10] {
            let p = partition(&ds, &cfg(Method::Louvain, k), 5).unwrap();
            check(&ds, &p, k, &all);
            assert!(p.communities.unwrap() > 5); // the 5 isolated nodes are communities of their own
            let q = p.modularity.unwrap();
            assert!(q > 0.3 && q < 1.0, "{q}");
            assert_eq!(p, partition(&ds, &cfg(Method::Louvain, k), 5).unwrap());
        }
        let a = partition(&ds, &cfg(Method::Louvain, 5), 1).unwrap();
        let b = partition(&ds, &cfg(Method::Louvain, 5), 2).unwrap();
        assert_ne!(a.assignment, b.assignment);
    }

    #[test]
    fn louvain_keeps_planted_communities_together_within_the_cap() {
        // 40 cliques of 6 (N = 240), 6 clients, δ = 10: cap = 40 + 10 = 50, chunk size
        // 30 ≥ 6, so every clique stays whole and client sizes stay ≤ 50.
        let ds = ring_of_cliques(40, 6, 3);
        let c = PartitionConfig { delta: 10, ..cfg(Method::Louvain, 6) };
        for seed in 0..4 {
            let p = partition(&ds, &c, seed).unwrap();
            check(&ds, &p, 6, &(0..240).collect::<Vec<_>>());
            let sizes = p.sizes();
            assert!(sizes.iter().all(|&s| s <= 50), "{sizes:?}");
            for q in 0..40 {
                assert!((q * 6..q * 6 + 6).all(|v| p.assignment[v] == p.assignment[q * 6]), "clique {q} split");
            }
            // Louvain may merge neighbouring cliques on a ring (resolution limit), but
            // never splits one: communities ≤ 40 and modularity at least the cliques'.
            assert!(p.communities.unwrap() <= 40);
            let cliques: Vec<u32> = (0..240).map(|v| (v / 6) as u32).collect();
            assert!(p.modularity.unwrap() >= modularity(&ds.graph, &cliques, 1.0).unwrap() - 1e-9);
        }
    }

    #[test]
    fn louvain_two_communities_five_clients_no_empty_client() {
        // Two 10-cliques joined by one edge → 2 communities; 5 clients with the default
        // δ = 20 (N/K − δ < 1 → chunks of N/K = 4).
        let mut e = Vec::new();
        for base in [0, 10] {
            for a in 0..10 {
                for b in a + 1..10 {
                    e.push((base + a, base + b));
                }
            }
        }
        e.push((9, 10));
        let g = Graph::from_edges(20, e, "t").unwrap().0;
        let ds = dataset(g, vec![Some(0); 20], 1);
        let p = partition(&ds, &cfg(Method::Louvain, 5), 0).unwrap();
        assert_eq!(p.communities, Some(2));
        check(&ds, &p, 5, &(0..20).collect::<Vec<_>>());
        // Chunks 4,4,2 per community, sorted 4,4,4,4,2,2: clients 0..3 get the 4s,
        // client 4 the first 2, the pointer wraps and client 0 the second 2.
        assert_eq!(p.sizes(), vec![6, 4, 4, 4, 2]);
        // With as many clients as nodes every client gets one node.
        let p = partition(&ds, &cfg(Method::Louvain, 20), 0).unwrap();
        assert_eq!(p.sizes(), vec![1; 20]);
    }

    #[test]
    fn fluid_partition_covers_the_lcc_only() {
        // Random graph plus a separate triangle and isolated nodes outside the LCC.
        let base = random_dataset(300, 1500, 3, 2);
        let mut edges: Vec<(usize, usize)> = base.graph.edges().collect();
        edges.extend([(300, 301), (301, 302), (300, 302)]);
        let g = Graph::from_edges(303, edges, "t").unwrap().0;
        let mut labels = base.labels.clone();
        labels.extend([Some(0), Some(1), Some(2)]);
        let ds = dataset(g, labels, 3);
        let lcc = ds.graph.largest_connected_component();
        assert!(lcc.len() < 300);
        for k in [1, 4, 10] {
            let p = partition(&ds, &cfg(Method::Fluid, k), 3).unwrap();
            check(&ds, &p, k, &lcc);
            for v in 0..303 {
                assert_eq!(p.assignment[v].is_some(), lcc.binary_search(&v).is_ok());
            }
            let (_, dropped) = p.clients(&ds.graph);
            assert_eq!(dropped.unassigned, 3); // the triangle; isolated nodes have no edges
            assert_eq!(p, partition(&ds, &cfg(Method::Fluid, k), 3).unwrap());
            assert_eq!((p.communities, p.modularity), (None, None));
        }
        let a = partition(&ds, &cfg(Method::Fluid, 4), 1).unwrap();
        let b = partition(&ds, &cfg(Method::Fluid, 4), 2).unwrap();
        assert_ne!(a.assignment, b.assignment);
    }

    #[test]
    fn dirichlet_partition_invariants_and_skew() {
        let ds = random_dataset(1000, 3000, 5, 3);
        let all: Vec<usize> = (0..1000).collect();
        for (k, alpha) in [(1, 0.5), (4, 0.1), (10, 0.5), (10, 100.0), (200, 0.05)] {
            let c = PartitionConfig { alpha, ..cfg(Method::Dirichlet, k) };
            let p = partition(&ds, &c, 4).unwrap();
            check(&ds, &p, k, &all);
            assert_eq!(p, partition(&ds, &c, 4).unwrap());
            assert_ne!(k > 1, p == partition(&ds, &c, 5).unwrap());
        }
        // Label skew: the average (over clients) share of the client's top class is far
        // higher for α = 0.05 than for α = 1000 (≈ 1/5 there).
        let top_share = |alpha: f64| {
            let p = partition(&ds, &PartitionConfig { alpha, ..cfg(Method::Dirichlet, 5) }, 9).unwrap();
            let (clients, _) = p.clients(&ds.graph);
            let shares: Vec<f64> = clients
                .iter()
                .map(|c| {
                    let h = ds.label_counts(c.nodes.iter().copied());
                    *h.iter().max().unwrap() as f64 / h.iter().sum::<usize>().max(1) as f64
                })
                .collect();
            shares.iter().sum::<f64>() / shares.len() as f64
        };
        let (skewed, flat) = (top_share(0.05), top_share(1000.0));
        assert!(skewed > 0.7, "{skewed}");
        assert!(flat < 0.3, "{flat}");
    }

    #[test]
    fn single_partition_is_the_whole_graph() {
        let ds = ring_of_cliques(3, 4, 2);
        let p = Partition::single(12);
        check(&ds, &p, 1, &(0..12).collect::<Vec<_>>());
        let (clients, dropped) = p.clients(&ds.graph);
        assert_eq!(clients[0].graph, ds.graph);
        assert_eq!(dropped, DroppedEdges::default());
    }

    #[test]
    fn report_counts_roles_and_labels() {
        let ds = ring_of_cliques(6, 5, 3);
        let p = partition(&ds, &cfg(Method::Louvain, 3), 0).unwrap();
        let (clients, _) = p.clients(&ds.graph);
        let split = Split::random(&ds.labels, SplitRatios::default(), &mut rng::derive(0, "split", &[]));
        let rep = report(&ds, &clients, &split);
        assert_eq!(rep.len(), 3);
        for (r, c) in rep.iter().zip(&clients) {
            assert_eq!(r.id, c.id);
            assert_eq!(r.nodes, c.nodes.len());
            assert_eq!(r.edges, c.graph.num_edges());
            assert_eq!(r.train + r.val + r.test, r.nodes); // all nodes labelled
            assert_eq!(r.label_distribution.iter().sum::<usize>(), r.nodes);
            let train = c.nodes.iter().filter(|&&v| split.roles[v] == Role::Train).count();
            assert_eq!(r.train, train);
        }
        assert_eq!(rep.iter().map(|r| r.train).sum::<usize>(), split.count(Role::Train));
        assert_eq!(rep.iter().map(|r| r.test).sum::<usize>(), split.count(Role::Test));
        let mut total = vec![0usize; 3];
        for r in &rep {
            for (t, x) in total.iter_mut().zip(&r.label_distribution) {
                *t += x;
            }
        }
        assert_eq!(total, vec![10, 10, 10]);
        assert!(serde_json::to_string(&rep[0]).unwrap().contains("\"label_distribution\""));
    }
}

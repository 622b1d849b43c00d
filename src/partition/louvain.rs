//! Multi-level Louvain modularity maximisation (Blondel et al. 2008) with a resolution
//! parameter γ, following python-louvain's `best_partition` (the library FedSage+ and
//! FederatedScope call):
//!
//! 1. **Local moving.** Every node starts in its own community. In each pass the nodes
//!    are visited in a fresh seeded random order; a node is taken out of its community
//!    and put into the neighbouring community (or back into its own) with the largest
//!    gain `k_i,c − γ·Σtot_c·k_i / 2m`; it changes community only for a strictly larger
//!    gain than staying. Passes repeat until a pass moves no node or raises the
//!    modularity by less than [`MIN_GAIN`].
//! 2. **Aggregation.** Communities become the nodes of a weighted graph: the weight
//!    between two communities is the total weight of the edges between them, and the
//!    edges inside a community become a self-loop weight.
//! 3. Levels repeat on the aggregated graph until a level merges nothing or raises the
//!    modularity by less than [`MIN_GAIN`] (that last level is then discarded, as in
//!    python-louvain).
//!
//! Each pass is O(m) with a scratch array indexed by community (no hash maps, no dense
//! matrices); aggregation is O(m log d). Communities are numbered 0.. in order of their
//! smallest node id, so the result depends only on the graph, γ and the RNG stream.

use rand::seq::SliceRandom;

use crate::data::Graph;
use crate::rng::Rng;

/// Minimal modularity increase for a pass or a level to count (python-louvain's `__MIN`).
pub const MIN_GAIN: f64 = 1e-7;

/// Result of [`louvain`].
#[derive(Debug, Clone, PartialEq)]
pub struct Communities {
    /// Community of each node, numbered 0.. in order of the smallest node id.
    pub community: Vec<u32>,
    pub count: usize,
    /// Modularity of `community` on the input graph at the resolution used; `None` for
    /// a graph without edges (modularity is undefined there).
    pub modularity: Option<f64>,
    /// Number of levels kept.
    pub levels: usize,
}

/// Modularity of the partition `community` of `graph` at resolution γ:
/// `Q = Σ_c [ L_c / m − γ (d_c / 2m)² ]`, with `L_c` the number of edges inside
/// community c, `d_c` the sum of its degrees and m the number of edges (networkx's
/// formula). `None` when the graph has no edges.
pub fn modularity(graph: &Graph, community: &[u32], resolution: f64) -> Option<f64> {
    assert_eq!(community.len(), graph.num_nodes(), "one community per node");
    let m = graph.num_edges() as f64;
    if m == 0.0 {
        return None;
    }
    let k = community.iter().map(|&c| c as usize + 1).max().unwrap_or(0);
    let mut internal = vec![0f64; k];
    let mut degree = vec![0f64; k];
    for v in 0..graph.num_nodes() {
        let c = community[v] as usize;
        degree[c] += graph.degree(v) as f64;
        for &w in graph.neighbors(v) {
            if community[w as usize] as usize == c {
                internal[c] += 0.5; // each internal edge is seen from both ends
            }
        }
    }
    Some((0..k).map(|c| internal[c] / m - resolution * (degree[c] / (2.0 * m)).powi(2)).sum())
}

/// Weighted undirected graph of one Louvain level: CSR without self loops (stored apart).
struct Level {
    indptr: Vec<usize>,
    nbr: Vec<u32>,
    weight: Vec<f64>,
    /// Self-loop weight of each node (the edges collapsed inside it, each counted once).
    loops: Vec<f64>,
    /// Weighted degree `Σ_j w_ij + 2·loop_i`.
    strength: Vec<f64>,
}

impl Level {
    fn from_graph(g: &Graph) -> Level {
        let (indptr, indices) = g.csr();
        let n = g.num_nodes();
        Level {
            indptr: indptr.to_vec(),
            nbr: indices.to_vec(),
            weight: vec![1.0; indices.len()],
            loops: vec![0.0; n],
            strength: (0..n).map(|v| g.degree(v) as f64).collect(),
        }
    }

    fn len(&self) -> usize {
        self.loops.len()
    }

    /// Local moving phase. Returns the community of each node (renumbered 0.. by first
    /// node), the number of communities, and the modularity gain of the level.
    fn local_moving(&self, m2: f64, gamma: f64, rng: &mut Rng) -> (Vec<u32>, usize, f64) {
        let n = self.len();
        let mut comm: Vec<u32> = (0..n as u32).collect();
        let mut tot: Vec<f64> = self.strength.clone();
        let mut inn: Vec<f64> = self.loops.iter().map(|l| 2.0 * l).collect();
        let q = |inn: &[f64], tot: &[f64]| -> f64 { inn.iter().zip(tot).map(|(i, t)| i / m2 - gamma * (t / m2) * (t / m2)).sum() };
        let start_q = q(&inn, &tot);
        let mut cur_q = start_q;
        let mut neigh_w = vec![0f64; n];
        let mut seen = vec![false; n];
        let mut touched: Vec<u32> = Vec::new();
        let mut order: Vec<u32> = (0..n as u32).collect();
        loop {
            order.shuffle(rng);
            let mut moves = 0usize;
            for &i in &order {
                let i = i as usize;
                let ci = comm[i] as usize;
                let ki = self.strength[i];
                for e in self.indptr[i]..self.indptr[i + 1] {
                    let c = comm[self.nbr[e] as usize] as usize;
                    if !seen[c] {
                        seen[c] = true;
                        touched.push(c as u32);
                    }
                    neigh_w[c] += self.weight[e];
                }
                let k_own = neigh_w[ci];
                tot[ci] -= ki;
                inn[ci] -= 2.0 * (k_own + self.loops[i]);
                let scale = gamma * ki / m2;
                let mut best = ci;
                let mut best_gain = k_own - scale * tot[ci];
                for &c in &touched {
                    let c = c as usize;
                    let gain = neigh_w[c] - scale * tot[c];
                    if gain > best_gain {
                        best = c;
                        best_gain = gain;
                    }
                }
                tot[best] += ki;
                inn[best] += 2.0 * (neigh_w[best] + self.loops[i]);
                if best != ci {
                    comm[i] = best as u32;
                    moves += 1;
                }
                for &c in &touched {
                    neigh_w[c as usize] = 0.0;
                    seen[c as usize] = false;
                }
                touched.clear();
            }
            let new_q = q(&inn, &tot);
            let gained = new_q - cur_q;
            cur_q = new_q;
            if moves == 0 || gained < MIN_GAIN {
                break;
            }
        }
        let count = renumber(&mut comm);
        (comm, count, cur_q - start_q)
    }

    /// The community graph of `comm` (with `count` communities).
    fn aggregate(&self, comm: &[u32], count: usize) -> Level {
        let n = self.len();
        // Members of each community (counting sort; members ascending).
        let mut start = vec![0usize; count + 1];
        for &c in comm {
            start[c as usize + 1] += 1;
        }
        for c in 0..count {
            start[c + 1] += start[c];
        }
        let mut fill = start[..count].to_vec();
        let mut members = vec![0u32; n];
        for (v, &c) in comm.iter().enumerate() {
            members[fill[c as usize]] = v as u32;
            fill[c as usize] += 1;
        }
        let mut indptr = Vec::with_capacity(count + 1);
        indptr.push(0);
        let mut nbr = Vec::new();
        let mut weight = Vec::new();
        let mut loops = vec![0f64; count];
        let mut strength = vec![0f64; count];
        let mut acc = vec![0f64; count];
        let mut seen = vec![false; count];
        let mut touched: Vec<u32> = Vec::new();
        for c in 0..count {
            let mut intra = 0f64;
            for &v in &members[start[c]..start[c + 1]] {
                let v = v as usize;
                loops[c] += self.loops[v];
                strength[c] += self.strength[v];
                for e in self.indptr[v]..self.indptr[v + 1] {
                    let d = comm[self.nbr[e] as usize] as usize;
                    if d == c {
                        intra += self.weight[e];
                    } else {
                        if !seen[d] {
                            seen[d] = true;
                            touched.push(d as u32);
                        }
                        acc[d] += self.weight[e];
                    }
                }
            }
            loops[c] += intra / 2.0;
            touched.sort_unstable();
            for &d in &touched {
                nbr.push(d);
                weight.push(acc[d as usize]);
                acc[d as usize] = 0.0;
                seen[d as usize] = false;
            }
            touched.clear();
            indptr.push(nbr.len());
        }
        Level { indptr, nbr, weight, loops, strength }
    }
}

/// Renumber community ids 0.. in order of first occurrence; returns the count.
fn renumber(comm: &mut [u32]) -> usize {
    let mut map = vec![u32::MAX; comm.len()];
    let mut next = 0u32;
    for c in comm.iter_mut() {
        let m = &mut map[*c as usize];
        if *m == u32::MAX {
            *m = next;
            next += 1;
        }
        *c = *m;
    }
    next as usize
}

/// Run multi-level Louvain on `graph` at resolution `gamma` (> 0), drawing the node
/// visiting orders from `rng`.
pub fn louvain(graph: &Graph, gamma: f64, rng: &mut Rng) -> Communities {
    let n = graph.num_nodes();
    let mut node_comm: Vec<u32> = (0..n as u32).collect();
    let m2 = 2.0 * graph.num_edges() as f64;
    let mut levels = 0usize;
    if m2 > 0.0 {
        let mut level = Level::from_graph(graph);
        loop {
            let (comm, count, gain) = level.local_moving(m2, gamma, rng);
            if count == level.len() || gain < MIN_GAIN {
                break;
            }
            for c in node_comm.iter_mut() {
                *c = comm[*c as usize];
            }
            levels += 1;
            level = level.aggregate(&comm, count);
        }
    }
    let count = renumber(&mut node_comm);
    let modularity = modularity(graph, &node_comm, gamma);
    Communities { community: node_comm, count, modularity, levels }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;
    use rand::Rng as _;

    fn graph(n: usize, edges: &[(usize, usize)]) -> Graph {
        Graph::from_edges(n, edges.iter().copied(), "test").unwrap().0
    }

    /// `k` cliques of size `s`, clique i joined to clique i+1 (mod k) by one edge.
    fn ring_of_cliques(k: usize, s: usize) -> Graph {
        graph(k * s, &crate::partition::ring_of_cliques_edges(k, s))
    }

    fn random_graph(n: usize, m: usize, seed: u64) -> Graph {
        let mut r = rng::derive(seed, "test-graph", &[]);
        let e: Vec<(usize, usize)> = (0..m).map(|_| (r.random_range(0..n), r.random_range(0..n))).collect();
        graph(n, &e)
    }

    #[test]
    fn modularity_two_triangles_by_hand() {
        // Triangles {0,1,2} and {3,4,5} joined by 2-3: m = 7, each side has 3 internal
        // edges and degree sum 7: Q = 2·(3/7 − (7/14)²) = 6/7 − 1/2 = 5/14.
        let g = graph(6, &[(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)]);
        let q = modularity(&g, &[0, 0, 0, 1, 1, 1], 1.0).unwrap();
        assert!((q - 5.0 / 14.0).abs() < 1e-12, "{q}");
        // All in one community: 1 − 1 = 0; singletons: −Σ(d/14)² = −(4·4+2·9)/196.
        assert!(modularity(&g, &[0; 6], 1.0).unwrap().abs() < 1e-12);
        let q1 = modularity(&g, &[0, 1, 2, 3, 4, 5], 1.0).unwrap();
        assert!((q1 + 34.0 / 196.0).abs() < 1e-12, "{q1}");
        // Resolution 2 doubles the null-model term: 6/7 − 2·(1/2) = −1/7.
        let q2 = modularity(&g, &[0, 0, 0, 1, 1, 1], 2.0).unwrap();
        assert!((q2 + 1.0 / 7.0).abs() < 1e-12, "{q2}");
        assert_eq!(modularity(&Graph::empty(3), &[0, 1, 2], 1.0), None);
    }

    #[test]
    fn louvain_two_triangles() {
        let g = graph(6, &[(0, 1), (1, 2), (0, 2), (3, 4), (4, 5), (3, 5), (2, 3)]);
        let c = louvain(&g, 1.0, &mut rng::derive(0, "louvain", &[]));
        assert_eq!(c.community, vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(c.count, 2);
        assert!((c.modularity.unwrap() - 5.0 / 14.0).abs() < 1e-12);
    }

    #[test]
    fn louvain_recovers_ring_of_cliques() {
        let (k, s) = (12, 6);
        let g = ring_of_cliques(k, s);
        for seed in 0..5 {
            let c = louvain(&g, 1.0, &mut rng::derive(seed, "louvain", &[]));
            assert_eq!(c.count, k, "seed {seed}");
            let expected: Vec<u32> = (0..k * s).map(|v| (v / s) as u32).collect();
            assert_eq!(c.community, expected, "seed {seed}");
            assert!((c.modularity.unwrap() - modularity(&g, &expected, 1.0).unwrap()).abs() < 1e-12);
        }
    }

    #[test]
    fn multi_level_merges_beyond_the_first_level() {
        // 8 groups of 4 four-cliques arranged so the first level finds cliques and a later
        // level joins cliques inside a group (dense links within group, one across groups).
        let (groups, per, s) = (8usize, 4usize, 4usize);
        let id = |g: usize, c: usize, a: usize| (g * per + c) * s + a;
        let mut e = Vec::new();
        for g in 0..groups {
            for c in 0..per {
                for a in 0..s {
                    for b in a + 1..s {
                        e.push((id(g, c, a), id(g, c, b)));
                    }
                }
                for c2 in c + 1..per {
                    e.push((id(g, c, 0), id(g, c2, 1)));
                    e.push((id(g, c, 2), id(g, c2, 3)));
                }
            }
            e.push((id(g, 0, 0), id((g + 1) % groups, 1, 2)));
        }
        let g = graph(groups * per * s, &e);
        let c = louvain(&g, 1.0, &mut rng::derive(3, "louvain", &[]));
        let by_group: Vec<u32> = (0..groups * per * s).map(|v| (v / (per * s)) as u32).collect();
        assert_eq!(c.community, by_group);
        // Higher resolution favours the smaller communities (the cliques).
        let fine = louvain(&g, 4.0, &mut rng::derive(3, "louvain", &[]));
        assert!(fine.count > groups, "{}", fine.count);
    }

    #[test]
    fn louvain_result_is_a_local_optimum_and_deterministic() {
        let g = random_graph(400, 1600, 1);
        let a = louvain(&g, 1.0, &mut rng::derive(1, "louvain", &[]));
        let b = louvain(&g, 1.0, &mut rng::derive(1, "louvain", &[]));
        assert_eq!(a, b);
        let c = louvain(&g, 1.0, &mut rng::derive(2, "louvain", &[]));
        assert_ne!(a.community, c.community);
        let q = a.modularity.unwrap();
        assert!(q > 0.3, "{q}"); // sparse random graphs have modularity ≈ 0.4 under Louvain
        // No single node move raises the modularity by a meaningful amount.
        let mut comm = a.community.clone();
        for v in 0..g.num_nodes() {
            let own = comm[v];
            let mut cands: Vec<u32> = g.neighbors(v).iter().map(|&w| comm[w as usize]).collect();
            cands.sort_unstable();
            cands.dedup();
            for c in cands {
                comm[v] = c;
                let q2 = modularity(&g, &comm, 1.0).unwrap();
                assert!(q2 <= q + 1e-3, "moving {v} to {c}: {q2} > {q}");
            }
            comm[v] = own;
        }
    }

    #[test]
    fn isolated_nodes_and_empty_graph() {
        let g = graph(5, &[(0, 1)]);
        let c = louvain(&g, 1.0, &mut rng::derive(0, "louvain", &[]));
        assert_eq!(c.community, vec![0, 0, 1, 2, 3]);
        let e = louvain(&Graph::empty(3), 1.0, &mut rng::derive(0, "louvain", &[]));
        assert_eq!((e.count, e.modularity), (3, None));
    }
}

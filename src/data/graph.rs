//! Simple graph in CSR form: undirected (every dataset), or directed (a graph whose
//! edges were reported by their endpoints separately, e.g. under edge LDP).
//!
//! Every loader funnels its raw edges through [`Graph::from_edges`], which makes the
//! graph undirected, merges duplicates and drops self loops, and reports what it removed
//! so that the numbers a user sees can be checked against the dataset's own figures.

use serde::Serialize;

use crate::error::{Error, Result};

/// What [`Graph::from_edges`] changed in the raw edge list.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct BuildReport {
    /// Raw entries read (edge-list lines or adjacency non-zeros).
    pub raw_entries: usize,
    /// Distinct self loops `(v, v)` removed.
    pub self_loops_removed: usize,
    /// Raw entries that repeated an already-seen unordered pair (both directions of
    /// one edge count as one pair, so a symmetric adjacency has `raw/2` repeats).
    pub duplicate_entries_merged: usize,
}

/// Graph without self loops or parallel edges, stored as CSR with each row sorted
/// ascending. Undirected: every edge present in both directions. Directed: row v lists
/// the *senders* into v (the nodes whose messages v aggregates), so every message-passing
/// consumer reads rows the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    indptr: Vec<usize>,
    indices: Vec<u32>,
    directed: bool,
}

impl Graph {
    /// Build from raw (possibly directed, duplicated, self-looped) edges over `n` nodes.
    /// `source` names the file the edges came from, for the error message.
    pub fn from_edges(n: usize, edges: impl IntoIterator<Item = (usize, usize)>, source: &str) -> Result<(Graph, BuildReport)> {
        if n > u32::MAX as usize {
            return Err(Error::data_file(source, format!("{n} nodes exceed the supported 2^32")));
        }
        let mut report = BuildReport::default();
        let mut self_loops: Vec<u32> = Vec::new();
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for (u, v) in edges {
            report.raw_entries += 1;
            if u >= n || v >= n {
                return Err(Error::data_file(
                    source,
                    format!("edge ({u}, {v}) points past the node count {n} (ids must be 0..{})", n.saturating_sub(1)),
                ));
            }
            if u == v {
                self_loops.push(u as u32);
                continue;
            }
            let (a, b) = if u < v { (u, v) } else { (v, u) };
            pairs.push((a as u32, b as u32));
        }
        self_loops.sort_unstable();
        self_loops.dedup();
        report.self_loops_removed = self_loops.len();
        let before = pairs.len();
        pairs.sort_unstable();
        pairs.dedup();
        // Self-loop entries are not duplicates; every other surplus entry is.
        report.duplicate_entries_merged = before - pairs.len() + (report.raw_entries - before).saturating_sub(report.self_loops_removed);
        Ok((Self::from_unique_pairs(n, &pairs), report))
    }

    /// Build from distinct pairs `(a, b)` with `a < b` (both checked by the caller).
    fn from_unique_pairs(n: usize, pairs: &[(u32, u32)]) -> Graph {
        let mut deg = vec![0usize; n];
        for &(a, b) in pairs {
            deg[a as usize] += 1;
            deg[b as usize] += 1;
        }
        let mut indptr = Vec::with_capacity(n + 1);
        indptr.push(0);
        for d in &deg {
            indptr.push(indptr.last().unwrap() + d);
        }
        let mut fill = indptr[..n].to_vec();
        let mut indices = vec![0u32; indptr[n]];
        // Pairs are sorted by (a, b): pushing b into a's row and a into b's row in this
        // order yields sorted rows (for row r, all entries < r come from pairs (x, r)
        // sorted by x, then entries > r from pairs (r, y) sorted by y).
        for &(a, b) in pairs {
            indices[fill[b as usize]] = a;
            fill[b as usize] += 1;
        }
        for &(a, b) in pairs {
            indices[fill[a as usize]] = b;
            fill[a as usize] += 1;
        }
        Graph { indptr, indices, directed: false }
    }

    /// A directed graph from the senders into each node (`senders[v]`: the nodes u with an
    /// arc u → v). Rows are sorted and deduplicated; self loops are dropped.
    pub fn from_senders(mut senders: Vec<Vec<u32>>) -> Graph {
        let mut indptr = Vec::with_capacity(senders.len() + 1);
        indptr.push(0);
        let mut indices = Vec::with_capacity(senders.iter().map(Vec::len).sum());
        for (v, row) in senders.iter_mut().enumerate() {
            row.sort_unstable();
            row.dedup();
            indices.extend(row.iter().copied().filter(|&u| u as usize != v));
            indptr.push(indices.len());
        }
        Graph { indptr, indices, directed: true }
    }

    /// A graph with `n` nodes and no edges.
    pub fn empty(n: usize) -> Graph {
        Graph { indptr: vec![0; n + 1], indices: Vec::new(), directed: false }
    }

    /// Whether rows list senders of one-way arcs (see [`Graph::from_senders`]).
    pub fn is_directed(&self) -> bool {
        self.directed
    }

    pub fn num_nodes(&self) -> usize {
        self.indptr.len() - 1
    }

    /// Number of undirected edges (arcs of a directed graph).
    pub fn num_edges(&self) -> usize {
        if self.directed { self.indices.len() } else { self.indices.len() / 2 }
    }

    /// Number of neighbours of `v` (senders into `v` in a directed graph).
    pub fn degree(&self, v: usize) -> usize {
        self.indptr[v + 1] - self.indptr[v]
    }

    pub fn degrees(&self) -> Vec<usize> {
        self.indptr.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// Sorted neighbours of `v` (senders into `v` in a directed graph).
    pub fn neighbors(&self, v: usize) -> &[u32] {
        &self.indices[self.indptr[v]..self.indptr[v + 1]]
    }

    /// CSR row pointers (length n+1) and column indices (both directions of each edge).
    pub fn csr(&self) -> (&[usize], &[u32]) {
        (&self.indptr, &self.indices)
    }

    /// Each undirected edge once, as `(u, v)` with `u < v`, in sorted order; in a
    /// directed graph every arc as `(sender, receiver)`, by receiver.
    pub fn edges(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let directed = self.directed;
        (0..self.num_nodes())
            .flat_map(move |v| self.neighbors(v).iter().map(move |&u| if directed { (u as usize, v) } else { (v, u as usize) }))
            .filter(move |&(u, v)| directed || u < v)
    }

    pub fn num_isolated(&self) -> usize {
        self.indptr.windows(2).filter(|w| w[0] == w[1]).count()
    }

    /// The subgraph induced by `nodes` (global ids, in the order given: local id i is
    /// `nodes[i]`). Returns the subgraph and the number of edges with exactly one end in
    /// `nodes` (the edges this subset loses; for a directed graph, the arcs into `nodes`
    /// from outside).
    pub fn induced_subgraph(&self, nodes: &[usize]) -> (Graph, usize) {
        const ABSENT: u32 = u32::MAX;
        let mut local = vec![ABSENT; self.num_nodes()];
        for (i, &g) in nodes.iter().enumerate() {
            local[g] = i as u32;
        }
        if self.directed {
            let mut cut = 0usize;
            let senders = nodes
                .iter()
                .map(|&g| {
                    let row: Vec<u32> = self.neighbors(g).iter().map(|&w| local[w as usize]).collect();
                    cut += row.iter().filter(|&&l| l == ABSENT).count();
                    row.into_iter().filter(|&l| l != ABSENT).collect()
                })
                .collect();
            return (Self::from_senders(senders), cut);
        }
        let mut pairs = Vec::new();
        let mut cut = 0usize;
        for (i, &g) in nodes.iter().enumerate() {
            for &w in self.neighbors(g) {
                let lw = local[w as usize];
                if lw == ABSENT {
                    cut += 1;
                } else if (i as u32) < lw {
                    pairs.push((i as u32, lw));
                }
            }
        }
        pairs.sort_unstable();
        (Self::from_unique_pairs(nodes.len(), &pairs), cut)
    }

    /// Nodes within `hops` edges of any of `seeds` (the seeds included), in ascending id
    /// order.
    pub fn within_hops(&self, seeds: impl IntoIterator<Item = usize>, hops: usize) -> Vec<usize> {
        let mut seen = vec![false; self.num_nodes()];
        let mut frontier: Vec<usize> = Vec::new();
        for v in seeds {
            if !seen[v] {
                seen[v] = true;
                frontier.push(v);
            }
        }
        for _ in 0..hops {
            let mut next = Vec::new();
            for &v in &frontier {
                for &w in self.neighbors(v) {
                    if !std::mem::replace(&mut seen[w as usize], true) {
                        next.push(w as usize);
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        (0..self.num_nodes()).filter(|&v| seen[v]).collect()
    }

    /// Connected-component id of every node (ids 0.. in order of first node) and the
    /// number of components.
    pub fn connected_components(&self) -> (Vec<u32>, usize) {
        let n = self.num_nodes();
        let mut comp = vec![u32::MAX; n];
        let mut count = 0u32;
        let mut stack = Vec::new();
        for s in 0..n {
            if comp[s] != u32::MAX {
                continue;
            }
            comp[s] = count;
            stack.push(s);
            while let Some(u) = stack.pop() {
                for &w in self.neighbors(u) {
                    if comp[w as usize] == u32::MAX {
                        comp[w as usize] = count;
                        stack.push(w as usize);
                    }
                }
            }
            count += 1;
        }
        (comp, count as usize)
    }

    /// Nodes (ascending) of the largest connected component; ties go to the component
    /// containing the smallest node id.
    pub fn largest_connected_component(&self) -> Vec<usize> {
        let (comp, k) = self.connected_components();
        let mut size = vec![0usize; k];
        for &c in &comp {
            size[c as usize] += 1;
        }
        let best = (0..k).max_by_key(|&c| (size[c], std::cmp::Reverse(c))).unwrap_or(0) as u32;
        (0..self.num_nodes()).filter(|&v| comp[v] == best).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_edges_symmetrises_dedups_and_reports() {
        // 0-1 twice (both directions), 1-1 self loop twice, 2-3 once, 3-0.
        let raw = [(0, 1), (1, 0), (1, 1), (1, 1), (2, 3), (3, 0)];
        let (g, r) = Graph::from_edges(5, raw, "test").unwrap();
        assert_eq!(g.num_nodes(), 5);
        assert_eq!(g.num_edges(), 3);
        assert_eq!(r.raw_entries, 6);
        assert_eq!(r.self_loops_removed, 1);
        assert_eq!(r.duplicate_entries_merged, 2);
        assert_eq!(g.neighbors(0), &[1, 3]);
        assert_eq!(g.neighbors(3), &[0, 2]);
        assert_eq!(g.degrees(), vec![2, 1, 1, 2, 0]);
        assert_eq!(g.num_isolated(), 1);
        assert_eq!(g.edges().collect::<Vec<_>>(), vec![(0, 1), (0, 3), (2, 3)]);
    }

    #[test]
    fn edge_past_node_count_is_an_error() {
        let err = Graph::from_edges(3, [(0, 3)], "edges.csv").unwrap_err().to_string();
        assert!(err.contains("edges.csv") && err.contains("(0, 3)"), "{err}");
    }

    #[test]
    fn induced_subgraph_and_components() {
        // Path 0-1-2, triangle 3-4-5, isolated 6.
        let (g, _) = Graph::from_edges(7, [(0, 1), (1, 2), (3, 4), (4, 5), (5, 3)], "t").unwrap();
        let (comp, k) = g.connected_components();
        assert_eq!(k, 3);
        assert_eq!(comp, vec![0, 0, 0, 1, 1, 1, 2]);
        assert_eq!(g.largest_connected_component(), vec![0, 1, 2]); // tie: smallest id wins
        let (sub, cut) = g.induced_subgraph(&[5, 1, 4, 2]);
        assert_eq!(sub.num_nodes(), 4);
        assert_eq!(sub.edges().collect::<Vec<_>>(), vec![(0, 2), (1, 3)]);
        assert_eq!(cut, 3); // 5-3, 1-0, 4-3
    }

    #[test]
    fn nodes_within_hops_of_seeds() {
        // Path 0–1–2–3–4 and the separate edge 5–6.
        let (g, _) = Graph::from_edges(7, [(0, 1), (1, 2), (2, 3), (3, 4), (5, 6)], "t").unwrap();
        assert_eq!(g.within_hops([2], 0), vec![2]);
        assert_eq!(g.within_hops([2], 1), vec![1, 2, 3]);
        assert_eq!(g.within_hops([0], 3), vec![0, 1, 2, 3]);
        assert_eq!(g.within_hops([0, 5], 1), vec![0, 1, 5, 6]);
        assert_eq!(g.within_hops([4], 10), vec![0, 1, 2, 3, 4]);
    }

    /// Arcs 0→1, 2→1, 1→2 and 3→0 (plus a self loop and a duplicate that are dropped).
    #[test]
    fn directed_graphs_keep_senders_per_receiver() {
        let g = Graph::from_senders(vec![vec![3], vec![2, 0, 1, 2], vec![1], vec![]]);
        assert!(g.is_directed());
        assert_eq!((g.neighbors(1), g.num_edges(), g.degree(3)), (&[0u32, 2][..], 4, 0));
        assert_eq!(g.edges().collect::<Vec<_>>(), vec![(3, 0), (0, 1), (2, 1), (1, 2)]);
        // Keep {1, 2, 3} → local 0, 1, 2: arcs 2→1 become 1→0 and 1→2 becomes 0→1; the
        // arc 0→1 comes from outside.
        let (sub, cut) = g.induced_subgraph(&[1, 2, 3]);
        assert_eq!((sub.edges().collect::<Vec<_>>(), cut), (vec![(1, 0), (0, 1)], 1));
        assert!(sub.is_directed());
    }
}

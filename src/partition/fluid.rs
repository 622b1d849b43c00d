//! Fluid communities (Parés et al. 2017), step for step as networkx `asyn_fluidc`, the
//! partitioner EC-LDA uses (on the largest connected component, k = clients).
//!
//! 1. Shuffle the vertices; the first k get communities 0..k−1, each with density 1.
//! 2. Each iteration visits all vertices in a fresh shuffled order. For vertex v, every
//!    community c scores the sum of the densities `1/|c|` over v and its neighbours
//!    that are in c. The candidates are the communities within 10⁻⁴ of the best score
//!    (networkx's tolerance). If v's community is a candidate v stays; otherwise v joins
//!    a candidate drawn uniformly (candidates listed as v's own community first, then in
//!    neighbour order) and both densities are updated.
//! 3. Stop after an iteration in which no vertex changed, or after `max_iter` iterations
//!    (networkx runs at most `max_iter + 1`).
//!
//! A community never empties (a lone member always scores 1, which no other community
//! can beat), so all k communities are non-empty. If `max_iter` stops the run before
//! every vertex has a community (only for very small `max_iter`), extra sweeps assign
//! just the still-unassigned vertices by the same rule; networkx would leave them out.

use rand::Rng as _;
use rand::seq::SliceRandom;

use crate::data::Graph;
use crate::rng::Rng;

/// Tie tolerance of networkx.
const TIE: f64 = 1e-4;

/// Community (0..k) of every vertex of the connected graph `g`. Requires 1 ≤ k ≤ n.
/// Communities are renumbered 0.. in order of their smallest vertex.
pub fn fluid(g: &Graph, k: usize, max_iter: usize, rng: &mut Rng) -> Vec<u32> {
    let n = g.num_nodes();
    assert!(k >= 1 && k <= n, "1 ≤ k ≤ vertices is checked by the caller");
    const NONE: u32 = u32::MAX;
    let mut comm = vec![NONE; n];
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.shuffle(rng);
    let mut size = vec![1usize; k];
    let mut density = vec![1f64; k];
    for (c, &v) in order[..k].iter().enumerate() {
        comm[v as usize] = c as u32;
    }
    let mut score = vec![0f64; k];
    let mut seen = vec![false; k];
    let mut touched: Vec<u32> = Vec::new();
    let mut best: Vec<u32> = Vec::new();

    // One visit of vertex v; returns true when v changed community.
    let mut visit = |v: usize, comm: &mut Vec<u32>, size: &mut Vec<usize>, density: &mut Vec<f64>, rng: &mut Rng| {
        let own = comm[v];
        let mut add = |c: u32| {
            if c != NONE {
                if !seen[c as usize] {
                    seen[c as usize] = true;
                    touched.push(c);
                }
                score[c as usize] += density[c as usize];
            }
        };
        add(own);
        for &w in g.neighbors(v) {
            add(comm[w as usize]);
        }
        let mut changed = false;
        if !touched.is_empty() {
            let max = touched.iter().map(|&c| score[c as usize]).fold(f64::NEG_INFINITY, f64::max);
            best.clear();
            best.extend(touched.iter().copied().filter(|&c| max - score[c as usize] < TIE));
            if own == NONE || !best.contains(&own) {
                let new = best[rng.random_range(0..best.len())];
                if own != NONE {
                    size[own as usize] -= 1;
                    density[own as usize] = 1.0 / size[own as usize] as f64;
                }
                comm[v] = new;
                size[new as usize] += 1;
                density[new as usize] = 1.0 / size[new as usize] as f64;
                changed = true;
            }
        }
        for &c in &touched {
            score[c as usize] = 0.0;
            seen[c as usize] = false;
        }
        touched.clear();
        changed
    };

    for _ in 0..max_iter {
        let mut cont = false;
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.shuffle(rng);
        for &v in &order {
            cont |= visit(v as usize, &mut comm, &mut size, &mut density, rng);
        }
        if !cont {
            break;
        }
    }
    // Safety net for a tiny max_iter: assign the vertices not reached yet.
    while comm.contains(&NONE) {
        let mut order: Vec<u32> = (0..n as u32).filter(|&v| comm[v as usize] == NONE).collect();
        order.shuffle(rng);
        let mut progress = false;
        for &v in &order {
            progress |= visit(v as usize, &mut comm, &mut size, &mut density, rng);
        }
        assert!(progress, "fluid communities need a connected graph");
    }
    // Renumber by smallest vertex.
    let mut map = vec![NONE; k];
    let mut next = 0u32;
    for c in comm.iter_mut() {
        if map[*c as usize] == NONE {
            map[*c as usize] = next;
            next += 1;
        }
        *c = map[*c as usize];
    }
    debug_assert_eq!(next as usize, k);
    comm
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng;

    fn sizes(c: &[u32], k: usize) -> Vec<usize> {
        let mut s = vec![0; k];
        for &x in c {
            s[x as usize] += 1;
        }
        s
    }

    #[test]
    fn fluid_finds_k_nonempty_connected_communities_on_a_ring_of_cliques() {
        let (k, s) = (6usize, 8usize);
        let g = Graph::from_edges(k * s, crate::partition::ring_of_cliques_edges(k, s), "t").unwrap().0;
        for seed in 0..5 {
            let c = fluid(&g, k, 100, &mut rng::derive(seed, "fluid", &[]));
            let sz = sizes(&c, k);
            assert!(sz.iter().all(|&x| x >= 1), "{sz:?}");
            // Each community induces a connected subgraph.
            for cc in 0..k as u32 {
                let nodes: Vec<usize> = (0..k * s).filter(|&v| c[v] == cc).collect();
                let (sub, _) = g.induced_subgraph(&nodes);
                assert_eq!(sub.connected_components().1, 1, "seed {seed} community {cc}");
            }
        }
    }

    #[test]
    fn tiny_max_iter_still_assigns_every_vertex() {
        // A long path: one sweep cannot reach every vertex from 2 seeds.
        let g = Graph::from_edges(200, (0..199).map(|i| (i, i + 1)), "t").unwrap().0;
        let c = fluid(&g, 2, 1, &mut rng::derive(0, "fluid", &[]));
        let sz = sizes(&c, 2);
        assert_eq!(sz.iter().sum::<usize>(), 200);
        assert!(sz.iter().all(|&x| x >= 1));
        // k = n: every vertex is its own community.
        let c = fluid(&g, 200, 10, &mut rng::derive(0, "fluid", &[]));
        assert_eq!(c, (0..200).collect::<Vec<u32>>());
    }
}

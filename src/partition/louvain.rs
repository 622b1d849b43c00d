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
//! A pass evaluates only the nodes whose choice could have changed since they last chose
//! to stay (see [`Level::local_moving`]): the same passes and moves as full sweeps, bit
//! for bit, at a fraction of the work once few nodes move. An evaluation is O(degree)
//! with a scratch array indexed by community (no hash maps, no dense matrices);
//! aggregation is O(m log d). Communities are numbered 0.. in order of their
//! smallest node id, so the result depends only on the graph, γ and the RNG stream.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

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
    /// Edge weights: edge counts (integers, so every sum below is exact).
    weight: Vec<u32>,
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
            weight: vec![1; indices.len()],
            loops: vec![0.0; n],
            strength: (0..n).map(|v| g.degree(v) as f64).collect(),
        }
    }

    fn len(&self) -> usize {
        self.loops.len()
    }

    /// Local moving phase. Returns the community of each node (renumbered 0.. by first
    /// node), the number of communities, and the modularity gain of the level.
    ///
    /// Late passes move few nodes, so a node is evaluated again only when its choice
    /// could differ from the stay it last chose. It depends on its neighbours'
    /// communities (a neighbour's move marks it) and on the total strengths Σtot of its
    /// candidate communities (its own and its neighbours'). When a small community's
    /// Σtot changes, the nodes it can sway are marked: for a community that grew, its
    /// members (staying got worse for them); for one that shrank, its members'
    /// neighbours (it became more attractive to them). Changes of large communities,
    /// which would mark too much, are summed instead (the drift): a gain is
    /// `k_i,c − s_i·Σtot_c` with `s_i = γ·k_i/2m`, so they close the margin by which
    /// staying last won by at most `s_i` times the drift since then, and a node waits in
    /// a queue, keyed by the drift it can bear, to be marked once that could matter.
    /// Weights and strengths are integers in f64 here (edge counts), so taking a node out
    /// and putting it back is exact, and the margin allows for the rounding of the
    /// computed gains: a skipped node is exactly a node that would have stayed, and the
    /// passes, their moves and the result are those of full sweeps, bit for bit.
    fn local_moving(&self, m2: f64, gamma: f64, rng: &mut Rng, on_pass: &mut dyn FnMut(Pass)) -> (Vec<u32>, usize, f64) {
        self.local_moving_with(m2, gamma, rng, LARGE_COMMUNITY.max(self.nbr.len() / 1024), on_pass)
    }

    /// [`local_moving`](Self::local_moving) with communities of marking work above
    /// `large` handled by the drift.
    ///
    /// A pass's random order is drawn while the pass before runs (on a second rayon
    /// thread when there is one): a shuffle depends only on the last order and the RNG,
    /// and the one drawn after the last pass is thrown away with its RNG state, so the
    /// orders and the draws consumed are those of shuffling between passes.
    fn local_moving_with(&self, m2: f64, gamma: f64, rng: &mut Rng, large: usize, on_pass: &mut dyn FnMut(Pass)) -> (Vec<u32>, usize, f64) {
        let n = self.len();
        let mut state = Moving::new(self, m2, gamma, large);
        let start_q: f64 = state.terms.iter().sum();
        let mut cur_q = start_q;
        let mut order: Vec<u32> = (0..n as u32).collect();
        crate::rng::shuffle(&mut order, rng);
        let mut next_order = vec![0u32; n];
        let mut pass = 0usize;
        loop {
            let ((moves, evaluated, scanned), next_rng) = rayon::join(
                || state.pass(self, &order),
                || {
                    next_order.copy_from_slice(&order);
                    let mut r = rng.clone();
                    crate::rng::shuffle(&mut next_order, &mut r);
                    r
                },
            );
            let new_q: f64 = state.terms.iter().sum();
            let gained = new_q - cur_q;
            cur_q = new_q;
            on_pass(Pass { nodes: n, pass, moves, evaluated, scanned, gained });
            pass += 1;
            if moves == 0 || gained < MIN_GAIN {
                break;
            }
            std::mem::swap(&mut order, &mut next_order);
            *rng = next_rng;
        }
        let mut comm = state.comm;
        let count = renumber(&mut comm);
        (comm, count, cur_q - start_q)
    }

    fn mark_neighbors(&self, v: usize, dirty: &mut Dirty) {
        for &w in &self.nbr[self.indptr[v]..self.indptr[v + 1]] {
            dirty.set(w as usize);
        }
    }

    /// Node `v`'s adjacency range.
    #[inline(always)]
    fn range(&self, v: usize) -> (usize, usize) {
        (self.indptr[v], self.indptr[v + 1])
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
        let mut acc = vec![0u32; count];
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
                        intra += self.weight[e] as f64;
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
                acc[d as usize] = 0;
                seen[d as usize] = false;
            }
            touched.clear();
            indptr.push(nbr.len());
        }
        Level { indptr, nbr, weight, loops, strength }
    }
}

/// The state of one level's local moving between passes.
struct Moving {
    m2: f64,
    gamma: f64,
    /// Marking work above which a community's changes go to the drift.
    large: usize,
    comm: Vec<u32>,
    /// Per community: the weight from the node being placed (0 = not yet seen: every
    /// edge weighs ≥ 1) and Σtot, side by side so a candidate costs one cache miss.
    /// Σtot is an integer below 2m < 2^32, exact in f64 as before.
    tally: Vec<Tally>,
    inn: Vec<f64>,
    /// Each community's modularity term, kept up to date as nodes move; a pass's
    /// modularity is their sum in community order (the same additions as computing it
    /// afresh).
    terms: Vec<f64>,
    /// The node's neighbours' communities, and the distinct ones in order of appearance.
    near: Vec<u32>,
    touched: Vec<u32>,
    members: Members,
    /// Work of marking a community: its members plus their adjacency entries.
    size: Vec<usize>,
    dirty: Dirty,
    drift: DriftQueue,
}

impl Moving {
    fn new(level: &Level, m2: f64, gamma: f64, large: usize) -> Moving {
        let n = level.len();
        let tally: Vec<Tally> = level.strength.iter().map(|&s| Tally { w: 0, tot: s as u32 }).collect();
        let inn: Vec<f64> = level.loops.iter().map(|l| 2.0 * l).collect();
        let terms = inn.iter().zip(&tally).map(|(&i, t)| Self::term(m2, gamma, i, f64::from(t.tot))).collect();
        let max_degree = (0..n).map(|v| level.indptr[v + 1] - level.indptr[v]).max().unwrap_or(0);
        Moving {
            m2,
            gamma,
            large,
            comm: (0..n as u32).collect(),
            tally,
            inn,
            terms,
            near: Vec::with_capacity(max_degree),
            touched: vec![0u32; max_degree.max(1)],
            members: Members::singletons(n),
            size: (0..n).map(|v| 1 + level.indptr[v + 1] - level.indptr[v]).collect(),
            dirty: Dirty::all(n),
            drift: DriftQueue::new(n),
        }
    }

    fn term(m2: f64, gamma: f64, inn: f64, tot: f64) -> f64 {
        inn / m2 - gamma * (tot / m2) * (tot / m2)
    }

    /// One pass in `order`: returns (moves, nodes evaluated, adjacency entries read).
    fn pass(&mut self, level: &Level, order: &[u32]) -> (usize, usize, usize) {
        let (m2, gamma) = (self.m2, self.gamma);
        let mut moves = 0usize;
        let mut evaluated = 0usize;
        let mut scanned = 0usize;
        let mut ahead = Lookahead::default();
        for (k, &i) in order.iter().enumerate() {
            let i = i as usize;
            if !self.dirty.get(i) {
                continue; // nothing that could change its choice changed
            }
            self.dirty.clear(i);
            ahead.advance(k, order, self, level);
            evaluated += 1;
            let (lo, hi) = level.range(i);
            scanned += hi - lo;
            let ki = level.strength[i];
            let scale = gamma * ki / m2;
            let ci = self.comm[i] as usize;
            let tally = &mut self.tally;
            // The communities first: independent loads, which overlap. Then a community
            // is listed when first seen without branching on its loaded weight (the
            // mispredicted branch serialised the cache misses).
            self.near.clear();
            self.near.extend(level.nbr[lo..hi].iter().map(|&v| self.comm[v as usize]));
            let mut distinct = 0;
            for (&c, &w) in self.near.iter().zip(&level.weight[lo..hi]) {
                self.touched[distinct] = c;
                let t = &mut tally[c as usize];
                distinct += usize::from(t.w == 0);
                t.w += w;
            }
            let touched = &self.touched[..distinct];
            let k_own = f64::from(tally[ci].w);
            tally[ci].tot -= ki as u32;
            self.inn[ci] -= 2.0 * (k_own + level.loops[i]);
            let stay_gain = k_own - scale * f64::from(tally[ci].tot);
            let mut best = ci;
            let mut best_gain = stay_gain;
            let mut other_gain = f64::NEG_INFINITY;
            for &c in touched {
                let c = c as usize;
                let gain = f64::from(tally[c].w) - scale * f64::from(tally[c].tot);
                if c != ci {
                    other_gain = other_gain.max(gain);
                }
                if gain > best_gain {
                    best = c;
                    best_gain = gain;
                }
            }
            tally[best].tot += ki as u32;
            self.inn[best] += 2.0 * (f64::from(tally[best].w) + level.loops[i]);
            for &c in touched {
                tally[c as usize].w = 0;
            }
            if best == ci {
                // Rounding of the computed gains: each within a few ulps of k_i·(1+γ).
                let slack = 1e-12 * (1.0 + gamma) * (ki + 1.0);
                self.drift.watch(i, (stay_gain - other_gain - slack) / (scale * (1.0 + 1e-12)));
                continue;
            }
            self.comm[i] = best as u32;
            moves += 1;
            self.members.remove(i, ci);
            self.members.insert(i, best);
            self.terms[ci] = Self::term(m2, gamma, self.inn[ci], f64::from(self.tally[ci].tot));
            self.terms[best] = Self::term(m2, gamma, self.inn[best], f64::from(self.tally[best].tot));
            let cost = 1 + hi - lo;
            self.size[ci] -= cost;
            self.size[best] += cost;
            // The node and its neighbours; then whom the two Σtot changes can sway.
            self.drift.forget(i);
            self.dirty.set(i);
            level.mark_neighbors(i, &mut self.dirty);
            let mut drifted = 0u64;
            if self.size[ci] > self.large {
                drifted += ki as u64;
            } else {
                for v in self.members.of(ci) {
                    level.mark_neighbors(v, &mut self.dirty);
                }
            }
            if self.size[best] > self.large {
                drifted += ki as u64;
            } else {
                for v in self.members.of(best) {
                    self.dirty.set(v);
                }
            }
            self.drift.advance(drifted, &mut self.dirty);
        }
        (moves, evaluated, scanned)
    }
}

/// The nodes to evaluate, a bit each: every pass tests one per node, and as bits they
/// stay in cache (1 M nodes: 125 kB).
struct Dirty(Vec<u64>);

impl Dirty {
    fn all(n: usize) -> Dirty {
        Dirty(vec![u64::MAX; n.div_ceil(64)])
    }

    #[inline(always)]
    fn get(&self, v: usize) -> bool {
        (self.0[v >> 6] >> (v & 63)) & 1 != 0
    }

    #[inline(always)]
    fn set(&mut self, v: usize) {
        self.0[v >> 6] |= 1 << (v & 63);
    }

    #[inline(always)]
    fn clear(&mut self, v: usize) {
        self.0[v >> 6] &= !(1 << (v & 63));
    }
}

/// Cache hints for the next evaluations of a pass (hints only: which nodes are
/// evaluated, and how, is unchanged). A cursor ahead of the pass finds the next
/// [`AHEAD`] nodes to evaluate; as each nears, the data its evaluation reads one after
/// the other is requested a step at a time: its adjacency range, its adjacency entries,
/// its neighbours' communities, their tallies. An evaluation's cache misses were most of
/// its time, each waiting on the one before.
#[derive(Default)]
struct Lookahead {
    /// Next position of the order to look at.
    cursor: usize,
    /// (position, node) of the next nodes to evaluate, nearest first.
    queue: std::collections::VecDeque<(usize, usize)>,
}

const AHEAD: usize = 4;
/// Adjacency entries hinted per node at most (a hub's own loads overlap anyway).
const HINTED_ENTRIES: usize = 32;

impl Lookahead {
    /// The pass is at position `k`.
    #[inline]
    fn advance(&mut self, k: usize, order: &[u32], state: &Moving, level: &Level) {
        while self.queue.front().is_some_and(|&(p, _)| p <= k) {
            self.queue.pop_front();
        }
        self.cursor = self.cursor.max(k + 1);
        while self.queue.len() < AHEAD && self.cursor < order.len() {
            let v = order[self.cursor] as usize;
            if state.dirty.get(v) {
                self.queue.push_back((self.cursor, v));
            }
            self.cursor += 1;
        }
        use crate::rng::prefetch;
        for (d, &(_, v)) in self.queue.iter().enumerate() {
            match d {
                0 => {
                    let (lo, hi) = level.range(v);
                    for &w in &level.nbr[lo..hi.min(lo + HINTED_ENTRIES)] {
                        prefetch(&state.tally[state.comm[w as usize] as usize]);
                    }
                    let c = state.comm[v] as usize;
                    prefetch(&state.tally[c]);
                    prefetch(&state.inn[c]);
                }
                1 => {
                    let (lo, hi) = level.range(v);
                    for &w in &level.nbr[lo..hi.min(lo + HINTED_ENTRIES)] {
                        prefetch(&state.comm[w as usize]);
                    }
                }
                2 => {
                    let (lo, hi) = level.range(v);
                    // One hint per cache line of the entries (16 per 64 bytes).
                    for e in (lo..hi.min(lo + HINTED_ENTRIES)).step_by(16).chain((hi > lo).then(|| hi - 1)) {
                        prefetch(&level.nbr[e]);
                        prefetch(&level.weight[e]);
                    }
                }
                _ => {
                    prefetch(&level.indptr[v]);
                    prefetch(&level.strength[v]);
                    prefetch(&level.loops[v]);
                    prefetch(&state.comm[v]);
                    prefetch(&state.drift.watch[v]);
                }
            }
        }
    }
}

/// A community during local moving, as the node being placed sees it.
#[derive(Clone, Copy)]
struct Tally {
    /// Weight from the node to the community.
    w: u32,
    /// Σtot: the community's total strength.
    tot: u32,
}

/// The members of each community during local moving: doubly linked lists in arrays,
/// so a move is O(1) and a community's members are listed without scanning all nodes.
struct Members {
    head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
}

const NONE: u32 = u32::MAX;

/// Marking work (members + their adjacency entries) above which a community's changes
/// are handled by the margin test rather than by marking the nodes they can sway (or
/// 1/1024 of the level's entries, if more).
const LARGE_COMMUNITY: usize = 4096;

impl Members {
    fn singletons(n: usize) -> Members {
        Members { head: (0..n as u32).collect(), next: vec![NONE; n], prev: vec![NONE; n] }
    }

    fn remove(&mut self, v: usize, c: usize) {
        let (p, nx) = (self.prev[v], self.next[v]);
        if p == NONE {
            self.head[c] = nx;
        } else {
            self.next[p as usize] = nx;
        }
        if nx != NONE {
            self.prev[nx as usize] = p;
        }
    }

    fn insert(&mut self, v: usize, c: usize) {
        let h = self.head[c];
        self.next[v] = h;
        self.prev[v] = NONE;
        if h != NONE {
            self.prev[h as usize] = v as u32;
        }
        self.head[c] = v as u32;
    }

    fn of(&self, c: usize) -> impl Iterator<Item = usize> + '_ {
        let mut v = self.head[c];
        std::iter::from_fn(move || {
            (v != NONE).then(|| {
                let cur = v as usize;
                v = self.next[cur];
                cur
            })
        })
    }
}

/// The drift (the summed |ΔΣtot| of large communities, an integer) and the nodes that
/// stayed, each keyed by the drift at which its margin could be gone.
struct DriftQueue {
    drift: u64,
    /// (drift at which to mark the node, node, its watch number); entries whose watch
    /// number is no longer the node's are stale.
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    watch: Vec<u32>,
}

impl DriftQueue {
    fn new(n: usize) -> DriftQueue {
        DriftQueue { drift: 0, heap: BinaryHeap::new(), watch: vec![0; n] }
    }

    /// Node `v` stayed and can bear a drift of `room` (in exact arithmetic; NaN or
    /// infinite when it has no other candidate).
    fn watch(&mut self, v: usize, room: f64) {
        self.forget(v);
        if room.is_infinite() || room.is_nan() {
            return; // no other community to go to until a neighbour moves
        }
        // The drift grows in integer steps; marking a step early is always safe.
        let bearable = (room * (1.0 - 1e-9)).floor().max(1.0);
        if bearable >= (u64::MAX / 2) as f64 {
            return; // beyond any drift a level can reach
        }
        self.heap.push(Reverse((self.drift + bearable as u64, v as u32, self.watch[v])));
        if self.heap.len() > 4 * self.watch.len() + 1024 {
            let watch = &self.watch;
            self.heap.retain(|Reverse((_, u, w))| watch[*u as usize] == *w);
        }
    }

    /// Node `v` is marked anyway: its queue entry is stale.
    fn forget(&mut self, v: usize) {
        self.watch[v] = self.watch[v].wrapping_add(1);
    }

    /// The drift grew by `by`: mark the nodes whose margin it may have closed.
    fn advance(&mut self, by: u64, dirty: &mut Dirty) {
        if by == 0 {
            return;
        }
        self.drift += by;
        while let Some(&Reverse((at, v, w))) = self.heap.peek() {
            if at > self.drift {
                break;
            }
            self.heap.pop();
            if self.watch[v as usize] == w {
                dirty.set(v as usize);
            }
        }
    }
}

/// What one local-moving pass did (for progress reports).
#[derive(Debug, Clone, Copy)]
pub struct Pass {
    /// Nodes of the level's graph (the input graph at level 0, communities above).
    pub nodes: usize,
    /// Pass number within the level, from 0.
    pub pass: usize,
    pub moves: usize,
    /// Nodes whose placement was computed (the others could not have moved).
    pub evaluated: usize,
    /// Adjacency entries those evaluations read.
    pub scanned: usize,
    /// Modularity gained by the pass.
    pub gained: f64,
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
    louvain_reporting(graph, gamma, rng, &mut |_, _| {})
}

/// [`louvain`], telling `on_pass` the level and what each local-moving pass did.
pub fn louvain_reporting(graph: &Graph, gamma: f64, rng: &mut Rng, on_pass: &mut dyn FnMut(usize, Pass)) -> Communities {
    let n = graph.num_nodes();
    let mut node_comm: Vec<u32> = (0..n as u32).collect();
    // Weights, and sums of them up to 2m, are u32 (exact integers).
    assert!(graph.num_edges() < 1 << 31, "Louvain handles graphs of fewer than 2^31 edges");
    let m2 = 2.0 * graph.num_edges() as f64;
    let mut levels = 0usize;
    if m2 > 0.0 {
        let mut level = Level::from_graph(graph);
        loop {
            let (comm, count, gain) = level.local_moving(m2, gamma, rng, &mut |p| on_pass(levels, p));
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
    use rand::seq::SliceRandom;

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

    /// Local moving as it was first written: every node evaluated in every pass.
    fn local_moving_full_sweeps(level: &Level, m2: f64, gamma: f64, rng: &mut Rng) -> (Vec<u32>, usize, f64) {
        let n = level.len();
        let mut comm: Vec<u32> = (0..n as u32).collect();
        let mut tot: Vec<f64> = level.strength.clone();
        let mut inn: Vec<f64> = level.loops.iter().map(|l| 2.0 * l).collect();
        let q = |inn: &[f64], tot: &[f64]| -> f64 { inn.iter().zip(tot).map(|(i, t)| i / m2 - gamma * (t / m2) * (t / m2)).sum() };
        let start_q = q(&inn, &tot);
        let mut cur_q = start_q;
        let mut neigh_w = vec![0u32; n];
        let mut seen = vec![false; n];
        let mut touched: Vec<u32> = Vec::new();
        let mut order: Vec<u32> = (0..n as u32).collect();
        loop {
            order.shuffle(rng);
            let mut moves = 0usize;
            for &i in &order {
                let i = i as usize;
                let ci = comm[i] as usize;
                let ki = level.strength[i];
                for e in level.indptr[i]..level.indptr[i + 1] {
                    let c = comm[level.nbr[e] as usize] as usize;
                    if !seen[c] {
                        seen[c] = true;
                        touched.push(c as u32);
                    }
                    neigh_w[c] += level.weight[e];
                }
                let k_own = neigh_w[ci] as f64;
                tot[ci] -= ki;
                inn[ci] -= 2.0 * (k_own + level.loops[i]);
                let scale = gamma * ki / m2;
                let mut best = ci;
                let mut best_gain = k_own - scale * tot[ci];
                for &c in &touched {
                    let c = c as usize;
                    let gain = neigh_w[c] as f64 - scale * tot[c];
                    if gain > best_gain {
                        best = c;
                        best_gain = gain;
                    }
                }
                tot[best] += ki;
                inn[best] += 2.0 * (neigh_w[best] as f64 + level.loops[i]);
                if best != ci {
                    comm[i] = best as u32;
                    moves += 1;
                }
                for &c in &touched {
                    neigh_w[c as usize] = 0;
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

    /// Every level's local moving, by the incremental passes and by full sweeps from the
    /// same RNG state: the same communities and the same gain, bit for bit.
    /// `large`: the marking work above which a community's changes go to the margin test
    /// (0: always, `usize::MAX`: never).
    fn assert_same_as_full_sweeps(g: &Graph, gamma: f64, seed: u64, large: usize) -> (usize, usize, usize) {
        let m2 = 2.0 * g.num_edges() as f64;
        let mut level = Level::from_graph(g);
        let mut rng = rng::derive(seed, "louvain", &[]);
        let (mut evaluated, mut sweeps, mut scanned) = (0usize, 0usize, 0usize);
        loop {
            let mut full_rng = rng.clone();
            let (comm, count, gain) = level.local_moving_with(m2, gamma, &mut rng, large, &mut |p| {
                evaluated += p.evaluated;
                sweeps += p.nodes;
                scanned += p.scanned;
            });
            let (c2, n2, g2) = local_moving_full_sweeps(&level, m2, gamma, &mut full_rng);
            assert_eq!((&comm, count, gain.to_bits()), (&c2, n2, g2.to_bits()), "level of {} nodes, seed {seed}", level.len());
            assert_eq!(rng.random::<u64>(), full_rng.random::<u64>(), "both consumed the same draws");
            if count == level.len() || gain < MIN_GAIN {
                return (evaluated, sweeps, scanned);
            }
            level = level.aggregate(&comm, count);
        }
    }

    #[test]
    fn incremental_passes_equal_full_sweeps() {
        // Sparse random graphs, a planted-partition graph (many passes with few moves, as
        // on the synthetic generator's graphs), self loops, and a high resolution.
        // Each community's changes marked, each left to the margin test, and a mix.
        let thresholds = [usize::MAX, 0, 40];
        let mut skipped = [0.0; 3];
        for seed in 0..6 {
            for (t, &large) in thresholds.iter().enumerate() {
                let (e, s, _) = assert_same_as_full_sweeps(&random_graph(3000, 9000, seed), 1.0, seed, large);
                skipped[t] += 1.0 - e as f64 / s as f64;
            }
        }
        let mut r = rng::derive(9, "test-graph", &[]);
        let n = 4000;
        let e: Vec<(usize, usize)> = (0..16000)
            .map(|_| {
                let u = r.random_range(0..n);
                let v = if r.random_bool(0.8) { (u % 4) + 4 * r.random_range(0..n / 4) } else { r.random_range(0..n) };
                (u, v)
            })
            .collect();
        let planted = graph(n, &e);
        for seed in 0..4 {
            for (t, &large) in thresholds.iter().enumerate() {
                let (e, s, _) = assert_same_as_full_sweeps(&planted, 1.0, seed, large);
                skipped[t] += 1.0 - e as f64 / s as f64;
            }
        }
        let with_loops = graph(50, &(0..200).map(|i| ((i * 7) % 50, (i * 13) % 50)).collect::<Vec<_>>());
        for &large in &thresholds {
            assert_same_as_full_sweeps(&planted, 3.0, 0, large);
            assert_same_as_full_sweeps(&with_loops, 1.0, 0, large);
        }
        // And the skipping is real: many evaluations of the later passes are saved.
        for (t, s) in skipped.iter().enumerate() {
            assert!(s / 10.0 > 0.15, "threshold {}: mean share of evaluations skipped {}", thresholds[t], s / 10.0);
        }
    }

    #[test]
    fn same_communities_on_one_thread_and_on_two() {
        // Two threads draw the next pass's order while a pass runs; one thread draws it
        // after: the same orders, moves and draws left for the caller.
        let g = random_graph(5000, 20000, 4);
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(|| {
                let mut r = rng::derive(4, "louvain", &[]);
                (louvain(&g, 1.0, &mut r), r.random::<u64>())
            })
        };
        let (one, two) = (run(1), run(2));
        assert_eq!(one, two);
        assert!(one.0.levels >= 2, "{} levels", one.0.levels);
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

//! Link prediction's edge split, as PyG's `RandomLinkSplit` (is_undirected): a graph's
//! edges shuffled and cut into training, validation and test positives; message passing
//! sees only the training edges while training and validating, and the training and
//! validation edges when testing, so no held-out edge ever reaches the encoder that
//! scores it. Negatives (node pairs that are not edges of the whole graph) are drawn for
//! validation and test once, at a configurable ratio, and for training afresh each time
//! [`negative_pairs`] is called.

use std::collections::HashSet;

use rand::Rng as _;
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::data::graph::Graph;
use crate::error::{Error, Result};
use crate::rng;

/// What the clients learn.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Task {
    /// Each node's class (the default).
    #[default]
    Node,
    /// Whether a pair of nodes is linked: {no link, link} over the client's training
    /// edges and as many sampled non-edges (`link:` says how many).
    Link,
}

impl Task {
    /// Every task: what an attack or defense that reads only updates supports.
    pub const ALL: &'static [Task] = &[Task::Node, Task::Link];

    pub fn is_node(&self) -> bool {
        *self == Task::Node
    }

    pub fn name(self) -> &'static str {
        match self {
            Task::Node => "node",
            Task::Link => "link",
        }
    }
}

/// Fractions of a graph's edges held out, and negatives per positive.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkRatios {
    /// Validation edges: ⌊val · E⌋.
    #[serde(default = "default_val")]
    pub val: f64,
    /// Test edges: ⌊test · E⌋.
    #[serde(default = "default_test")]
    pub test: f64,
    /// Negative pairs per positive edge, in every set (1: balanced, as the EC-LDA code),
    /// or `natural`: each client's own non-edges per edge, so that the share of links
    /// among its pairs is its graph's density.
    #[serde(default = "default_negatives")]
    pub negatives: Negatives,
}

/// How many negatives a client pairs with each positive.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Negatives {
    Ratio(f64),
    /// Non-edges per edge of the client's graph: (n(n−1)/2 − E)/E.
    Natural,
}

impl Serialize for Negatives {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            Negatives::Ratio(r) => s.serialize_f64(*r),
            Negatives::Natural => s.serialize_str("natural"),
        }
    }
}

impl<'de> Deserialize<'de> for Negatives {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Negatives;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a number of negatives per positive, or `natural`")
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> std::result::Result<Negatives, E> {
                Ok(Negatives::Ratio(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> std::result::Result<Negatives, E> {
                Ok(Negatives::Ratio(v as f64))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> std::result::Result<Negatives, E> {
                Ok(Negatives::Ratio(v as f64))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> std::result::Result<Negatives, E> {
                match v {
                    "natural" => Ok(Negatives::Natural),
                    other => Err(E::custom(format!("`{other}`: expected a number of negatives per positive, or `natural`"))),
                }
            }
        }
        d.deserialize_any(V)
    }
}

/// Training pairs one epoch may draw: `natural` on a large client asks for more.
pub const MAX_TRAIN_NEGATIVES: usize = 5_000_000;

fn default_val() -> f64 {
    0.05
}

fn default_test() -> f64 {
    0.3
}

fn default_negatives() -> Negatives {
    Negatives::Ratio(1.0)
}

impl Default for LinkRatios {
    /// The EC-LDA code's `RandomLinkSplit(num_val=0.05, num_test=0.3)`, balanced.
    fn default() -> Self {
        LinkRatios { val: default_val(), test: default_test(), negatives: default_negatives() }
    }
}

/// More negatives per positive than this is a typo, not a protocol.
pub const MAX_NEGATIVES: f64 = 100.0;

impl LinkRatios {
    /// val and test in [0, 1) leaving training edges; negatives in (0, 100].
    pub fn validate(&self, field: &str) -> Result<()> {
        for (name, r) in [("val", self.val), ("test", self.test)] {
            if !(0.0..1.0).contains(&r) {
                return Err(Error::param(format!("{field}.{name}"), format!("{r} is not a fraction in [0, 1)")));
            }
        }
        if self.val + self.test >= 1.0 {
            return Err(Error::param(field, format!("val + test = {}: no edge would be left to train on", self.val + self.test)));
        }
        if let Negatives::Ratio(r) = self.negatives
            && !(r > 0.0 && r <= MAX_NEGATIVES)
        {
            return Err(Error::param(format!("{field}.negatives"), format!("{r}: allowed (0, {MAX_NEGATIVES}] or `natural`")));
        }
        Ok(())
    }
}

/// Node pairs with their labels (1: an edge, 0: a negative), positives first.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelledPairs {
    pub pairs: Vec<(u32, u32)>,
    pub labels: Vec<u8>,
}

impl LabelledPairs {
    fn of(positives: Vec<(u32, u32)>, negatives: Vec<(u32, u32)>) -> LabelledPairs {
        let labels = positives.iter().map(|_| 1).chain(negatives.iter().map(|_| 0)).collect();
        LabelledPairs { pairs: positives.into_iter().chain(negatives).collect(), labels }
    }

    /// The share of pairs labelled 1.
    pub fn positive_share(&self) -> f64 {
        if self.labels.is_empty() { 0.0 } else { self.labels.iter().map(|&l| f64::from(l)).sum::<f64>() / self.labels.len() as f64 }
    }
}

/// One graph's split.
#[derive(Debug, Clone)]
pub struct LinkSplit {
    /// The graph whose edges every training negative avoids: the client's whole graph,
    /// or the training graph a defense reported instead (see
    /// [`with_training_graph`](Self::with_training_graph)).
    pub graph: Graph,
    /// How negatives were counted (their ratio to the positives).
    pub negatives: Negatives,
    /// Negatives drawn with the training positives each epoch.
    pub train_negatives: usize,
    /// What message passing sees while training and validating: the training edges.
    pub train_graph: Graph,
    /// What it sees when testing: the training and validation edges.
    pub test_graph: Graph,
    /// The training positives, `u < v` (their negatives are drawn per use).
    pub train: Vec<(u32, u32)>,
    pub val: LabelledPairs,
    pub test: LabelledPairs,
}

impl LinkSplit {
    /// Training pairs per epoch: the positives and their negatives.
    pub fn train_pairs(&self) -> usize {
        self.train.len() + self.train_negatives
    }

    /// Counts of an epoch's training pairs per class, {no link, link}: what the
    /// label-distribution attacks infer.
    pub fn label_counts(&self) -> Vec<usize> {
        vec![self.train_negatives, self.train.len()]
    }

    /// Split `graph`'s edges by `ratios` with `rng`: shuffle, cut ⌊val·E⌋ validation and
    /// ⌊test·E⌋ test edges off the end (as `RandomLinkSplit`), and draw their negatives
    /// against every edge of `graph`.
    pub fn random(graph: &Graph, ratios: LinkRatios, rng: &mut rng::Rng) -> Result<LinkSplit> {
        ratios.validate("link")?;
        if graph.is_directed() {
            return Err(Error::param("task", "link prediction needs an undirected graph"));
        }
        let mut edges: Vec<(u32, u32)> = graph.edges().map(|(u, v)| (u as u32, v as u32)).collect();
        edges.shuffle(rng);
        let e = edges.len();
        let (n_val, n_test) = ((ratios.val * e as f64) as usize, (ratios.test * e as f64) as usize);
        let test: Vec<(u32, u32)> = edges.split_off(e - n_test);
        let val: Vec<(u32, u32)> = edges.split_off(e - n_test - n_val);
        let train = edges;
        let n = graph.num_nodes();
        let build = |pairs: &[(u32, u32)]| {
            Graph::from_edges(n, pairs.iter().map(|&(u, v)| (u as usize, v as usize)), "the link split").map(|g| g.0)
        };
        let train_graph = build(&train)?;
        let test_graph = build(&[train.as_slice(), val.as_slice()].concat())?;
        let ratio = ratios.negatives.per_positive(graph);
        let count = |positives: usize| (ratio * positives as f64).round() as usize;
        let train_negatives = training_negatives(graph, count(train.len()))?;
        // Validation and test negatives apart from each other.
        let val_neg = negative_pairs(graph, count(val.len()), &HashSet::new(), rng)?;
        let taken: HashSet<(u32, u32)> = val_neg.iter().copied().collect();
        let test_neg = negative_pairs(graph, count(test.len()), &taken, rng)?;
        Ok(LinkSplit {
            graph: graph.clone(),
            negatives: ratios.negatives,
            train_negatives,
            train_graph,
            test_graph,
            train,
            val: LabelledPairs::of(val, val_neg),
            test: LabelledPairs::of(test, test_neg),
        })
    }

    /// The split with its training edges replaced by `reported` (the same nodes; a
    /// defense's randomized version of [`train_graph`](Self::train_graph)): the training
    /// positives become `reported`'s edges, message passing sees `reported` while
    /// training and `reported` with the validation edges when testing, and training
    /// negatives are drawn among `reported`'s non-edges, at the split's ratio
    /// (`natural`: `reported`'s own density) — so that training reads nothing of the
    /// true training edges. Validation and test pairs stay as they are: they score the
    /// model on the true graph.
    pub fn with_training_graph(&self, reported: Graph) -> Result<LinkSplit> {
        let n = self.train_graph.num_nodes();
        if reported.num_nodes() != n || reported.is_directed() {
            return Err(Error::param("task", "a link split's training graph must be undirected on the client's nodes"));
        }
        let train: Vec<(u32, u32)> = reported.edges().map(|(u, v)| (u as u32, v as u32)).collect();
        let ratio = self.negatives.per_positive(&reported);
        let train_negatives = training_negatives(&reported, (ratio * train.len() as f64).round() as usize)?;
        let val: Vec<(usize, usize)> =
            self.val.pairs.iter().zip(&self.val.labels).filter(|&(_, &l)| l == 1).map(|(&(u, v), _)| (u as usize, v as usize)).collect();
        let test_graph = Graph::from_edges(n, reported.edges().chain(val), "the link split")?.0;
        Ok(LinkSplit {
            graph: reported.clone(),
            negatives: self.negatives,
            train_negatives,
            train_graph: reported,
            test_graph,
            train,
            val: self.val.clone(),
            test: self.test.clone(),
        })
    }
}

impl Negatives {
    /// Negatives per positive on `graph`.
    fn per_positive(&self, graph: &Graph) -> f64 {
        let (n, e) = (graph.num_nodes() as f64, graph.num_edges() as f64);
        match *self {
            Negatives::Ratio(r) => r,
            Negatives::Natural if e == 0.0 => 0.0,
            Negatives::Natural => (n * (n - 1.0) / 2.0 - e) / e,
        }
    }
}

/// `count` training negatives per epoch on `graph`, checked: at most
/// [`MAX_TRAIN_NEGATIVES`], and as many non-edges (each epoch draws them afresh).
fn training_negatives(graph: &Graph, count: usize) -> Result<usize> {
    if count > MAX_TRAIN_NEGATIVES {
        return Err(Error::param(
            "link.negatives",
            format!(
                "{count} training negatives per epoch on a graph of {} nodes and {} edges (at most {MAX_TRAIN_NEGATIVES}): give a ratio",
                graph.num_nodes(),
                graph.num_edges()
            ),
        ));
    }
    free_pairs(graph, count, 0)?;
    Ok(count)
}

/// The node pairs of `graph` that are neither edges nor among `taken` of them; an error
/// when `count` are asked and fewer are free.
fn free_pairs(graph: &Graph, count: usize, taken: usize) -> Result<u64> {
    let n = graph.num_nodes() as u64;
    let free = (n * n.saturating_sub(1) / 2).saturating_sub(graph.num_edges() as u64 + taken as u64);
    if (count as u64) > free {
        return Err(Error::param(
            "link.negatives",
            format!("{count} negative pairs asked of a graph with {n} nodes and {} edges, which has only {free} free", graph.num_edges()),
        ));
    }
    Ok(free)
}

/// `count` distinct node pairs `u < v` drawn uniformly among those that are not edges of
/// `graph` and not in `taken`; an error when there are fewer.
pub fn negative_pairs(graph: &Graph, count: usize, taken: &HashSet<(u32, u32)>, rng: &mut rng::Rng) -> Result<Vec<(u32, u32)>> {
    let n = graph.num_nodes() as u64;
    let free = free_pairs(graph, count, taken.len())?;
    let is_free = |u: u32, v: u32| u != v && !taken.contains(&(u, v)) && graph.neighbors(u as usize).binary_search(&v).is_err();
    // Rejection sampling while most pairs are free; otherwise every free pair, shuffled.
    if (count as u64) * 2 > free {
        let mut all: Vec<(u32, u32)> =
            (0..n as u32).flat_map(|u| (u + 1..n as u32).map(move |v| (u, v))).filter(|&(u, v)| is_free(u, v)).collect();
        all.shuffle(rng);
        all.truncate(count);
        return Ok(all);
    }
    let mut drawn = HashSet::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let (a, b) = (rng.random_range(0..n as u32), rng.random_range(0..n as u32));
        let pair = (a.min(b), a.max(b));
        if is_free(pair.0, pair.1) && drawn.insert(pair) {
            out.push(pair);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(n: usize, edges: &[(usize, usize)]) -> Graph {
        Graph::from_edges(n, edges.iter().copied(), "test").unwrap().0
    }

    /// A ring of 40 nodes with chords: 80 edges.
    fn ring() -> Graph {
        let edges: Vec<(usize, usize)> = (0..40).flat_map(|i| [(i, (i + 1) % 40), (i, (i + 7) % 40)]).collect();
        graph(40, &edges)
    }

    fn set(g: &Graph) -> HashSet<(u32, u32)> {
        g.edges().map(|(u, v)| (u as u32, v as u32)).collect()
    }

    #[test]
    fn held_out_edges_never_reach_message_passing() {
        let g = ring();
        assert_eq!(g.num_edges(), 80);
        let s =
            LinkSplit::random(&g, LinkRatios { val: 0.1, test: 0.3, negatives: Negatives::Ratio(1.0) }, &mut rng::derive(1, "link", &[]))
                .unwrap();
        // ⌊0.1 · 80⌋ = 8 validation, ⌊0.3 · 80⌋ = 24 test, the other 48 train.
        assert_eq!(
            (s.train.len(), s.val.labels.iter().filter(|&&l| l == 1).count(), s.test.labels.iter().filter(|&&l| l == 1).count()),
            (48, 8, 24)
        );
        let positives =
            |p: &LabelledPairs| -> Vec<(u32, u32)> { p.pairs.iter().zip(&p.labels).filter(|(_, l)| **l == 1).map(|(e, _)| *e).collect() };
        let (train_mp, test_mp) = (set(&s.train_graph), set(&s.test_graph));
        assert_eq!(train_mp, s.train.iter().copied().collect());
        for e in positives(&s.val).iter().chain(&positives(&s.test)) {
            assert!(!train_mp.contains(e), "{e:?} is held out but in the training graph");
        }
        for e in positives(&s.test) {
            assert!(!test_mp.contains(&e), "test edge {e:?} in the graph the test is scored on");
        }
        assert_eq!(test_mp, s.train.iter().copied().chain(positives(&s.val)).collect());
        // The three sets partition the edges.
        let all: HashSet<(u32, u32)> = s.train.iter().copied().chain(positives(&s.val)).chain(positives(&s.test)).collect();
        assert_eq!(all, set(&g));
    }

    #[test]
    fn negatives_are_non_edges_drawn_once_and_reproducibly() {
        let g = ring();
        let ratios = LinkRatios { val: 0.1, test: 0.3, negatives: Negatives::Ratio(2.0) };
        let s = LinkSplit::random(&g, ratios, &mut rng::derive(1, "link", &[])).unwrap();
        let edges = set(&g);
        let negatives: Vec<(u32, u32)> =
            [&s.val, &s.test].iter().flat_map(|p| p.pairs.iter().zip(&p.labels).filter(|(_, l)| **l == 0).map(|(e, _)| *e)).collect();
        assert_eq!(negatives.len(), 2 * (8 + 24));
        assert!(negatives.iter().all(|&(u, v)| u < v && !edges.contains(&(u, v))), "{negatives:?}");
        assert_eq!(negatives.iter().collect::<HashSet<_>>().len(), negatives.len(), "a pair drawn twice");
        assert!((s.test.positive_share() - 1.0 / 3.0).abs() < 1e-12);
        // The same seed draws the same split; another seed another.
        let again = LinkSplit::random(&g, ratios, &mut rng::derive(1, "link", &[])).unwrap();
        assert_eq!((&again.train, &again.val, &again.test), (&s.train, &s.val, &s.test));
        let other = LinkSplit::random(&g, ratios, &mut rng::derive(2, "link", &[])).unwrap();
        assert_ne!(other.test, s.test);
        // Training negatives drawn afresh avoid every edge, validation's and test's too.
        let fresh = negative_pairs(&g, 48, &HashSet::new(), &mut rng::derive(1, "neg", &[0])).unwrap();
        assert!(fresh.iter().all(|e| !edges.contains(e)));
    }

    /// `natural`: each client's own non-edges per edge, so the share of links among its
    /// pairs is its density. The ring: 80 edges of 780 pairs, 700 free, 8.75 per edge.
    #[test]
    fn natural_negatives_make_the_share_of_links_the_density() {
        let g = ring();
        let ratios: LinkRatios = serde_norway::from_str("{val: 0.1, test: 0.3, negatives: natural}").unwrap();
        assert_eq!(ratios.negatives, Negatives::Natural);
        let s = LinkSplit::random(&g, ratios, &mut rng::derive(1, "link", &[])).unwrap();
        assert_eq!((s.train.len(), s.train_negatives), (48, 420));
        let density = 80.0 / 780.0;
        assert!((s.train.len() as f64 / s.train_pairs() as f64 - density).abs() < 1e-12);
        assert!((s.test.positive_share() - 24.0 / (24.0 + 210.0)).abs() < 1e-12);
        let e = serde_norway::from_str::<LinkRatios>("{negatives: many}").unwrap_err().to_string();
        assert!(e.contains("`many`: expected a number of negatives per positive, or `natural`"), "{e}");
    }

    /// A defense's reported training graph replaces the training edges: its edges are the
    /// positives and the training message passing, the test graph is it plus the
    /// validation edges, training negatives avoid its edges only (a true held-out edge may
    /// be drawn: the training reads nothing of the true graph), and `natural` follows its
    /// density. Validation and test pairs are untouched.
    #[test]
    fn a_reported_training_graph_replaces_the_training_edges() {
        let g = ring();
        for negatives in [Negatives::Ratio(1.0), Negatives::Natural] {
            let s = LinkSplit::random(&g, LinkRatios { val: 0.1, test: 0.3, negatives }, &mut rng::derive(1, "link", &[])).unwrap();
            // Reported: half of the training edges kept, and every test edge added (as
            // noise could), plus a fresh pair.
            let held_out: Vec<(u32, u32)> = s.test.pairs.iter().zip(&s.test.labels).filter(|(_, l)| **l == 1).map(|(e, _)| *e).collect();
            let reported_edges: Vec<(u32, u32)> = s.train.iter().step_by(2).copied().chain(held_out.iter().copied()).collect();
            let reported = graph(40, &reported_edges.iter().map(|&(u, v)| (u as usize, v as usize)).collect::<Vec<_>>());
            let r = s.with_training_graph(reported.clone()).unwrap();
            assert_eq!(r.train.iter().copied().collect::<HashSet<_>>(), set(&reported));
            assert_eq!(r.train.len(), 24 + 24);
            assert_eq!(set(&r.train_graph), set(&reported));
            let val_pos: Vec<(u32, u32)> = s.val.pairs.iter().zip(&s.val.labels).filter(|(_, l)| **l == 1).map(|(e, _)| *e).collect();
            assert_eq!(set(&r.test_graph), set(&reported).into_iter().chain(val_pos).collect());
            assert_eq!((&r.val, &r.test), (&s.val, &s.test));
            let expected = match negatives {
                Negatives::Ratio(_) => 48,
                // 48 reported edges of 780 pairs: (780 − 48)/48 = 15.25 per edge.
                Negatives::Natural => 732,
            };
            assert_eq!(r.train_negatives, expected);
            // Training negatives avoid the reported graph's edges, and only them: over
            // enough epochs a true training edge that was not reported gets drawn.
            let mut rng = rng::derive(1, "neg", &[0]);
            let reported_set = set(&reported);
            let mut drew_a_dropped_edge = false;
            for _ in 0..50 {
                let neg = negative_pairs(&r.graph, r.train_negatives.min(200), &HashSet::new(), &mut rng).unwrap();
                assert!(neg.iter().all(|e| !reported_set.contains(e)));
                drew_a_dropped_edge |= neg.iter().any(|e| s.train.contains(e));
            }
            assert!(drew_a_dropped_edge);
        }
        // A directed graph, or one on other nodes, is refused.
        let s = LinkSplit::random(&g, LinkRatios::default(), &mut rng::derive(1, "link", &[])).unwrap();
        assert!(s.with_training_graph(graph(39, &[(0, 1)])).is_err());
        let mut senders = vec![Vec::new(); 40];
        senders[0].push(1);
        assert!(s.with_training_graph(Graph::from_senders(senders)).is_err());
    }

    #[test]
    fn uniform_over_the_free_pairs() {
        // A path 0-1-2-3: free pairs (0,2), (0,3), (1,3). 3000 single draws: each ≈ 1000;
        // the 99.9 % band of a binomial(3000, 1/3) is ±82.
        let g = graph(4, &[(0, 1), (1, 2), (2, 3)]);
        let mut counts = std::collections::BTreeMap::new();
        let mut r = rng::derive(3, "neg", &[]);
        for _ in 0..3000 {
            *counts.entry(negative_pairs(&g, 1, &HashSet::new(), &mut r).unwrap()[0]).or_insert(0) += 1;
        }
        assert_eq!(counts.keys().copied().collect::<Vec<_>>(), [(0, 2), (0, 3), (1, 3)]);
        assert!(counts.values().all(|&c: &i32| (c - 1000).abs() <= 82), "{counts:?}");
    }

    #[test]
    fn bad_ratios_and_too_dense_graphs_are_refused() {
        let g = graph(4, &[(0, 1), (0, 2), (0, 3), (1, 2), (1, 3)]);
        let e = |r: LinkRatios| LinkSplit::random(&g, r, &mut rng::derive(0, "link", &[])).unwrap_err().to_string();
        assert!(e(LinkRatios { val: 0.5, test: 0.5, negatives: Negatives::Ratio(1.0) }).contains("no edge would be left"));
        assert!(e(LinkRatios { val: -0.1, ..LinkRatios::default() }).contains("link.val"));
        assert!(e(LinkRatios { negatives: Negatives::Ratio(0.0), ..LinkRatios::default() }).contains("link.negatives"));
        // K4 minus one edge has 1 free pair; 2 test edges need 2 negatives.
        let m = e(LinkRatios { val: 0.0, test: 0.4, negatives: Negatives::Ratio(1.0) });
        assert!(m.contains("link.negatives") && m.contains("only 1 free"), "{m}");
    }
}

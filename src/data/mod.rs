//! Graph data: the graph itself, node features and labels, the loaders that read them
//! from the usual file formats, the synthetic generator, preprocessing and splits.

pub mod derive;
pub mod features;
pub mod fetch;
pub mod graph;
pub mod link_split;
pub mod loaders;
pub mod npy;
pub mod pickle;
pub mod preprocess;
pub mod registry;
pub mod sevenz;
pub mod split;
pub mod synthetic;

use serde::Serialize;

pub use features::{CsrMatrix, DenseMatrix, FeatureKind, Features, ShiftedMatrix};
pub use graph::{BuildReport, Graph};
pub use link_split::{LabelledPairs, LinkRatios, LinkSplit, Task};
pub use split::{Role, Split, SplitRatios};

use crate::error::{Error, Result};

/// Write `dest` through its part file (`.<name>.part`, which `write` fills; a download
/// resumes from it), renamed into place when `write` succeeds and removed when it fails,
/// so a reader never sees a half-written file. Shared by downloads and derived files.
pub(crate) fn into_place<T>(dest: &std::path::Path, write: impl FnOnce(&std::path::Path) -> Result<T>) -> Result<T> {
    crate::atomic::into_place(dest, crate::atomic::Staging::Resumable, |p, m| Error::data_file(p, m), write)
}

/// A node-classification dataset: an undirected graph, optional node features, labels
/// (`None` = unlabelled) and class names.
#[derive(Debug, Clone)]
pub struct Dataset {
    /// The registry name (`cora`, `facebook`, `synthetic`, …).
    pub name: String,
    pub graph: Graph,
    /// What loading changed in the raw edges (self loops, duplicates).
    pub build_report: BuildReport,
    /// `None` when the source has no usable features (LastFM, PubMed here).
    pub features: Option<Features>,
    pub labels: Vec<Option<u32>>,
    pub class_names: Vec<String>,
    /// The split the source ships with (Planetoid), if any.
    pub standard_split: Option<Split>,
    /// Facts a user should know about this copy of the data ("no features", …).
    pub notes: Vec<String>,
}

/// The figures `fgl-sim datasets` prints; they are checked against the data README.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DatasetStats {
    pub nodes: usize,
    pub edges: usize,
    pub self_loops: usize,
    pub isolated: usize,
    pub lcc_nodes: usize,
    pub lcc_edges: usize,
    pub feature_dim: Option<usize>,
    pub feature_kind: Option<FeatureKind>,
    pub feature_nnz: Option<usize>,
    pub classes: usize,
    pub labelled: usize,
}

impl Dataset {
    pub fn num_nodes(&self) -> usize {
        self.graph.num_nodes()
    }

    pub fn num_classes(&self) -> usize {
        self.class_names.len()
    }

    /// Check that every part agrees on the node count and the label range. Loaders call
    /// this last so that a malformed file never yields a half-valid dataset.
    pub fn validate(&self, source: &str) -> Result<()> {
        let n = self.graph.num_nodes();
        if self.labels.len() != n {
            return Err(Error::data_file(source, format!("{} labels for {n} nodes (one label per node is required)", self.labels.len())));
        }
        if let Some(f) = &self.features
            && f.rows() != n
        {
            return Err(Error::data_file(source, format!("{} feature rows for {n} nodes", f.rows())));
        }
        // One NaN would spread through every aggregation and train to a NaN loss.
        if let Some((r, c, x)) = self.features.as_ref().and_then(Features::first_non_finite) {
            return Err(Error::data_file(source, format!("node {r}, feature column {c} holds {x}; feature values must be finite numbers")));
        }
        let c = self.num_classes();
        if let Some((v, y)) = self.labels.iter().enumerate().find_map(|(v, y)| y.filter(|&y| y as usize >= c).map(|y| (v, y))) {
            return Err(Error::data_file(source, format!("node {v} has label {y} but there are only {c} classes")));
        }
        if let Some(s) = &self.standard_split
            && s.roles.len() != n
        {
            return Err(Error::data_file(source, format!("split covers {} nodes, graph has {n}", s.roles.len())));
        }
        Ok(())
    }

    /// The features, or a clear error for runs that need them.
    pub fn require_features(&self) -> Result<&Features> {
        self.features.as_ref().ok_or_else(|| {
            Error::dataset(
                &self.name,
                format!("has no node features in this copy of the data ({}); choose a dataset with features", self.notes.join("; ")),
            )
        })
    }

    /// Label histogram over `nodes` (unlabelled nodes are skipped).
    pub fn label_counts(&self, nodes: impl IntoIterator<Item = usize>) -> Vec<usize> {
        let mut counts = vec![0usize; self.num_classes()];
        for v in nodes {
            if let Some(y) = self.labels[v] {
                counts[y as usize] += 1;
            }
        }
        counts
    }

    /// The dataset restricted to its largest connected component (nodes renumbered in
    /// ascending order; a shipped split keeps its roles). A note says what was dropped.
    pub fn largest_component(mut self) -> Dataset {
        let keep = self.graph.largest_connected_component();
        let n = self.graph.num_nodes();
        if keep.len() == n {
            return self;
        }
        let (graph, _) = self.graph.induced_subgraph(&keep);
        self.notes.push(format!("largest connected component: {} of {n} nodes kept", keep.len()));
        Dataset {
            graph,
            features: self.features.as_ref().map(|f| f.select_rows(&keep)),
            labels: keep.iter().map(|&v| self.labels[v]).collect(),
            standard_split: self.standard_split.as_ref().map(|s| Split { roles: keep.iter().map(|&v| s.roles[v]).collect() }),
            ..self
        }
    }

    pub fn stats(&self) -> DatasetStats {
        let lcc = self.graph.largest_connected_component();
        let (lcc_graph, _) = self.graph.induced_subgraph(&lcc);
        DatasetStats {
            nodes: self.graph.num_nodes(),
            edges: self.graph.num_edges(),
            self_loops: self.build_report.self_loops_removed,
            isolated: self.graph.num_isolated(),
            lcc_nodes: lcc.len(),
            lcc_edges: lcc_graph.num_edges(),
            feature_dim: self.features.as_ref().map(Features::cols),
            feature_kind: self.features.as_ref().map(Features::kind),
            feature_nnz: self.features.as_ref().map(Features::nnz),
            classes: self.num_classes(),
            labelled: self.labels.iter().filter(|y| y.is_some()).count(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Components {0, 1, 2} and {3, 4}: the first is kept, renumbered, with its rows of
    /// features, labels and shipped roles.
    #[test]
    fn largest_component_keeps_its_rows() {
        let (graph, build_report) = Graph::from_edges(5, [(0, 1), (1, 2), (3, 4)], "t").unwrap();
        let d = Dataset {
            name: "t".into(),
            graph,
            build_report,
            features: Some(Features::Dense(DenseMatrix { rows: 5, cols: 1, data: vec![0.0, 1.0, 2.0, 3.0, 4.0] })),
            labels: vec![Some(0), Some(1), None, Some(1), Some(0)],
            class_names: vec!["a".into(), "b".into()],
            standard_split: Some(Split { roles: vec![Role::Train, Role::Val, Role::Test, Role::Train, Role::Train] }),
            notes: vec![],
        }
        .largest_component();
        assert_eq!((d.graph.num_nodes(), d.graph.num_edges()), (3, 2));
        assert_eq!(d.features.unwrap().to_dense().data, vec![0.0, 1.0, 2.0]);
        assert_eq!(d.labels, vec![Some(0), Some(1), None]);
        assert_eq!(d.standard_split.unwrap().roles, vec![Role::Train, Role::Val, Role::Test]);
        assert_eq!(d.notes, vec!["largest connected component: 3 of 5 nodes kept".to_string()]);
    }
}

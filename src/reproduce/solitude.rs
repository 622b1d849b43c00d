//! `solitude`: the Solitude table of REPRODUCTION.md for one dataset, in the protocol
//! of the released code's README for Cora (REFERENCE §1.3). The table is data —
//! `scenarios/papers/solitude/table.yaml` (the cells over `scenarios/solitude-cora.yaml`)
//! and `published.csv` (REPRODUCTION.md's Cora values) — run by [`super::table`]; this
//! file adds only what the command's own flags change: the backbone and the largest
//! connected component.

use super::table::Variant;

/// The GNN the table trains (the paper's table: GraphSAGE; GAT ignores the learned
/// edge weights, so calibration refuses it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backbone {
    Sage,
    Gcn,
}

impl Backbone {
    pub fn name(self) -> &'static str {
        match self {
            Backbone::Sage => "sage",
            Backbone::Gcn => "gcn",
        }
    }
}

/// What the command's flags change in the table: the backbone, and the largest connected
/// component (the paper's values are for the whole graph: `lcc` runs without them).
pub fn variant(model: Backbone, lcc: bool) -> Variant {
    Variant {
        overrides: vec![format!("model.arch={}", model.name()), format!("dataset.preprocess={{minmax: true, lcc: {lcc}}}")],
        stem_suffix: format!("{}{}", if lcc { "-lcc" } else { "" }, if model == Backbone::Sage { "" } else { "-gcn" }),
        title: if lcc { " (largest connected component)".into() } else { String::new() },
        compare: !lcc,
    }
}

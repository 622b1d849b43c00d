//! Loaders for the file formats of the datasets in `shared/datasets` (see its README).
//!
//! Each loader reads raw edges, funnels them through [`Graph::from_edges`] (which
//! symmetrises, merges duplicates and reports self loops), attaches features and labels,
//! and returns a dataset that has passed [`Dataset::validate`]. Anything wrong with a
//! file is an [`Error::DataFile`](crate::error::Error::DataFile) naming the file and,
//! where there is one, the line and column, so the user can find the offending cell.
//!
//! Encodings chosen here (they matter for reproducibility):
//! * MUSAE string labels (`page_type`) are numbered in **alphabetical** order
//!   (Facebook: company 0, government 1, politician 2, tvshow 3); integer labels
//!   (`target`) are used as they are.
//! * German (NIFTY): `GoodCustomer` 1 → class 1 "good", -1 → class 0 "bad";
//!   `Gender` Male → 1, Female → 0 (as in RGNN's derived German, where 1 = Male);
//!   `PurposeOfLoan` is one-hot encoded into one column per distinct value, sorted
//!   alphabetically, appended after the other columns. The 29 non-label columns thus
//!   become 1 (Gender) + 27 numeric + 10 one-hot = 38 features, in the same order as
//!   RGNN's 38 German attribute columns.

mod german;
mod graphdata;
mod igraph;
mod musae;
mod node_csv;
mod npz;
mod planetoid;
pub mod rgnn_tabular;
mod text;

use std::path::Path;

use super::{Dataset, Features, Graph, Split};
use crate::error::Result;

pub use german::load_german_nifty;
pub use graphdata::load_graphdata;
pub use igraph::load_igraph_pickle;
pub use musae::load_musae;
pub use node_csv::load_node_csv;
pub use npz::load_npz;
pub use planetoid::{PlanetoidParts, load_planetoid, read_planetoid};

// ---------------------------------------------------------------------------------------
// Shared helpers (the text and CSV readers are in `text.rs`)
// ---------------------------------------------------------------------------------------

#[allow(clippy::too_many_arguments)]
fn finish(
    name: &str,
    graph: Graph,
    build_report: super::BuildReport,
    features: Option<Features>,
    labels: Vec<Option<u32>>,
    class_names: Vec<String>,
    standard_split: Option<Split>,
    notes: Vec<String>,
    source: &str,
) -> Result<Dataset> {
    let dataset = Dataset { name: name.to_string(), graph, build_report, features, labels, class_names, standard_split, notes };
    dataset.validate(source)?;
    Ok(dataset)
}

/// Labels from an integer array `array` of `path`: -1 is unlabelled, 0, 1, … a class.
fn labels_from_ints(raw: &[i64], path: &Path, array: &str) -> Result<Vec<Option<u32>>> {
    raw.iter()
        .enumerate()
        .map(|(v, &y)| match y {
            -1 => Ok(None),
            0..=0x7fff_ffff => Ok(Some(y as u32)),
            _ => Err(crate::error::Error::data_file(
                path,
                format!("array `{array}`: node {v} has label {y} (allowed: -1 = unlabelled, or 0, 1, …)"),
            )),
        })
        .collect()
}

/// The classes the labels use (the largest + 1).
fn class_count(labels: &[Option<u32>]) -> usize {
    labels.iter().flatten().max().map_or(0, |&m| m as usize + 1)
}

/// Class names "0", "1", … for `classes` classes, where the source names none.
fn numbered_classes(classes: usize) -> Vec<String> {
    (0..classes).map(|c| c.to_string()).collect()
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned())
}

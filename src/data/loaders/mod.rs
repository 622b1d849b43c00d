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

/// The most classes a dataset may have: class ids are 0, 1, …, and one far beyond would
/// name millions of empty classes (a fuzzed label of 2²⁷ spent 28 s and gigabytes on them).
pub const MAX_CLASSES: usize = 1 << 16;

/// The classes the labels use (the largest + 1), at most [`MAX_CLASSES`].
fn class_count(labels: &[Option<u32>], path: &Path) -> crate::error::Result<usize> {
    let n = labels.iter().flatten().max().map_or(0, |&m| m as usize + 1);
    if n > MAX_CLASSES {
        let v = labels.iter().position(|l| l.is_some_and(|l| l as usize + 1 == n)).unwrap_or(0);
        return Err(crate::error::Error::data_file(
            path,
            format!("node {v} has label {}: class ids must be below {MAX_CLASSES} (0, 1, … for the classes, −1 = unlabelled)", n - 1),
        ));
    }
    Ok(n)
}

/// Class names "0", "1", … for `classes` classes, where the source names none.
fn numbered_classes(classes: usize) -> Vec<String> {
    (0..classes).map(|c| c.to_string()).collect()
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 27 (found by fuzzing GraphData's `node_label.npy`): a label of 2²⁷ made
    /// 134 million class names (28 s, gigabytes); class ids past 65 535 are refused,
    /// naming the file and the node.
    #[test]
    fn class_ids_far_beyond_any_dataset_are_refused() {
        let path = Path::new("cora_ml.npz");
        assert_eq!(class_count(&[Some(0), None, Some(65_535)], path).unwrap(), 65_536);
        let e = class_count(&[Some(0), Some(134_217_730)], path).unwrap_err().to_string();
        assert!(e.contains("cora_ml.npz") && e.contains("node 1 has label 134217730") && e.contains("65536"), "{e}");
        assert_eq!(class_count(&[None], path).unwrap(), 0);
    }
}

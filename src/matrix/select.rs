//! `fgl-sim matrix FILE --only COLUMN=VALUE[,VALUE…]`: run a slice of a matrix. A cell
//! is selected when, for every column named, its value is one of those given; the runs of
//! the other cells are left as they are (finished, failed or missing) and the report still
//! covers the whole matrix, so a later run without `--only` goes on where the slices left
//! off.

use super::Matrix;
use crate::error::{Error, Result};

/// The cells `--only` asks for; empty: every cell.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection(Vec<(String, Vec<String>)>);

impl Selection {
    /// From `--only` arguments, each `COLUMN=VALUE[,VALUE…]`; a column named twice
    /// accepts either's values.
    pub fn parse(args: &[String]) -> Result<Self> {
        let mut wanted: Vec<(String, Vec<String>)> = Vec::new();
        for arg in args {
            let Some((column, values)) = arg.split_once('=') else {
                return Err(Error::param("--only", format!("`{arg}` is not COLUMN=VALUE[,VALUE…] (e.g. defense=secagg,dp-fedavg)")));
            };
            let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
            if column.trim().is_empty() || values.iter().any(String::is_empty) {
                return Err(Error::param("--only", format!("`{arg}` names an empty column or value")));
            }
            match wanted.iter_mut().find(|(c, _)| c == column.trim()) {
                Some((_, known)) => known.extend(values),
                None => wanted.push((column.trim().to_string(), values)),
            }
        }
        Ok(Self(wanted))
    }

    pub fn is_all(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether cell `c` of `m` is selected.
    pub fn selects(&self, m: &Matrix, c: usize) -> bool {
        self.0.iter().all(|(column, values)| m.param(c, column).is_some_and(|v| values.iter().any(|w| w == v)))
    }

    /// Refuse a column the matrix does not have, and a selection of no cell, naming what
    /// there is to choose from.
    pub fn check(&self, m: &Matrix) -> Result<()> {
        for (column, _) in &self.0 {
            if !m.columns.contains(column) {
                return Err(Error::param("--only", format!("the matrix has no column `{column}`; its columns: {}", m.columns.join(", "))));
            }
        }
        if !self.is_all() && !(0..m.cells.len()).any(|c| self.selects(m, c)) {
            let choices: Vec<String> = self
                .0
                .iter()
                .map(|(column, _)| {
                    let mut values: Vec<&str> = (0..m.cells.len()).filter_map(|c| m.param(c, column)).collect();
                    values.sort_unstable();
                    values.dedup();
                    format!("{column}: {}", values.join(", "))
                })
                .collect();
            return Err(Error::param(
                "--only",
                format!("selects no cell of matrix `{}`; the values there are {}", m.name, choices.join("; ")),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn matrix() -> Matrix {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.yaml");
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml");
        std::fs::write(
            &file,
            format!(
                "name: m\nbase: {}\nattacks: [ec-lda, uniform]\n\
                 defenses:\n  - none\n  - preset: ldp-labels\n    sweep: {{epsilon: [1, 8]}}\n  - secagg\nseeds: 1\n",
                base.display()
            ),
        )
        .unwrap();
        Matrix::load(&file).unwrap()
    }

    fn ids(m: &Matrix, s: &Selection) -> Vec<String> {
        (0..m.cells.len()).filter(|&c| s.selects(m, c)).map(|c| m.cells[c].id.clone()).collect()
    }

    #[test]
    fn only_selects_the_cells_whose_columns_take_the_given_values() {
        let m = matrix();
        assert_eq!(m.cells.len(), 8);
        let all = Selection::parse(&[]).unwrap();
        assert!(all.is_all() && ids(&m, &all).len() == 8);
        let s = Selection::parse(&["defense=secagg,none".into()]).unwrap();
        assert_eq!(
            ids(&m, &s),
            ["attack=ec-lda,defense=none", "attack=ec-lda,defense=secagg", "attack=uniform,defense=none", "attack=uniform,defense=secagg"]
        );
        // Every column at once; a column named twice takes either's values.
        let s = Selection::parse(&["attack=uniform".into(), "defense.epsilon=8".into(), "defense.epsilon=1".into()]).unwrap();
        assert_eq!(
            ids(&m, &s),
            ["attack=uniform,defense=ldp-labels,defense.epsilon=1", "attack=uniform,defense=ldp-labels,defense.epsilon=8"]
        );
        s.check(&m).unwrap();
    }

    #[test]
    fn only_refuses_what_the_matrix_does_not_have() {
        let m = matrix();
        let err = |args: &[&str]| {
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            Selection::parse(&args).and_then(|s| s.check(&m)).unwrap_err().to_string()
        };
        assert!(err(&["defense"]).contains("COLUMN=VALUE"), "{}", err(&["defense"]));
        assert!(err(&["defense="]).contains("empty"));
        let e = err(&["defence=secagg"]);
        assert!(e.contains("--only") && e.contains("no column `defence`") && e.contains("attack, defense, defense.epsilon"), "{e}");
        let e = err(&["defense=dp-fedavg"]);
        assert!(e.contains("selects no cell") && e.contains("defense: ldp-labels, none, secagg"), "{e}");
    }
}

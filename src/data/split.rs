//! Train / validation / test splits of the labelled nodes.

use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::rng;

/// What a node is used for. Unlabelled nodes are `Unused` (they still take part in
/// message passing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Train,
    Val,
    Test,
    Unused,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// One role per node.
    pub roles: Vec<Role>,
}

/// Fractions of the labelled nodes for train, validation and test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SplitRatios {
    pub train: f64,
    pub val: f64,
    pub test: f64,
}

impl Default for SplitRatios {
    /// 50/25/25, the LPGNN / RGNN / Solitude convention.
    fn default() -> Self {
        SplitRatios { train: 0.5, val: 0.25, test: 0.25 }
    }
}

impl SplitRatios {
    /// Each ratio in [0, 1], and the three summing to 1 (within 1e-6).
    pub fn validate(&self, field: &str) -> Result<()> {
        for (name, r) in [("train", self.train), ("val", self.val), ("test", self.test)] {
            if !(0.0..=1.0).contains(&r) || !r.is_finite() {
                return Err(Error::param(format!("{field}.{name}"), format!("{r} is not a ratio in [0, 1]")));
            }
        }
        let sum = self.train + self.val + self.test;
        if (sum - 1.0).abs() > 1e-6 {
            return Err(Error::param(field, format!("train + val + test = {sum}, but the ratios must sum to 1")));
        }
        Ok(())
    }
}

impl Split {
    /// Shuffle the labelled nodes with `rng` and cut them by `ratios`: ⌊val·n⌉ validation
    /// nodes, ⌊test·n⌉ test nodes, the rest train. Unlabelled nodes are `Unused`.
    pub fn random(labels: &[Option<u32>], ratios: SplitRatios, rng: &mut rng::Rng) -> Split {
        let mut labelled: Vec<usize> = (0..labels.len()).filter(|&v| labels[v].is_some()).collect();
        labelled.shuffle(rng);
        let n = labelled.len();
        let n_val = ((ratios.val * n as f64).round() as usize).min(n);
        let n_test = ((ratios.test * n as f64).round() as usize).min(n - n_val);
        let mut roles = vec![Role::Unused; labels.len()];
        for (i, &v) in labelled.iter().enumerate() {
            roles[v] = if i < n_val {
                Role::Val
            } else if i < n_val + n_test {
                Role::Test
            } else {
                Role::Train
            };
        }
        Split { roles }
    }

    /// EC-LDA's split: each labelled node, in id order, is a train node when a standard
    /// normal draw is below `threshold`, else a test node (no validation). At 0.8 that
    /// is Φ(0.8) = 78.8 % train on average, varying per draw.
    pub fn normal_threshold(labels: &[Option<u32>], threshold: f64, rng: &mut rng::Rng) -> Split {
        use rand_distr::{Distribution, StandardNormal};
        let roles = labels
            .iter()
            .map(|l| match l {
                Some(_) => {
                    let z: f64 = StandardNormal.sample(rng);
                    if z < threshold { Role::Train } else { Role::Test }
                }
                None => Role::Unused,
            })
            .collect();
        Split { roles }
    }

    /// Nodes with role `role`, ascending.
    pub fn nodes(&self, role: Role) -> Vec<usize> {
        (0..self.roles.len()).filter(|&v| self.roles[v] == role).collect()
    }

    pub fn count(&self, role: Role) -> usize {
        self.roles.iter().filter(|&&r| r == role).count()
    }

    /// The roles of `nodes` (global ids), as the split of that subset.
    pub fn restrict(&self, nodes: &[usize]) -> Split {
        Split { roles: nodes.iter().map(|&v| self.roles[v]).collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_split_counts_and_determinism() {
        let mut labels: Vec<Option<u32>> = (0..1000).map(|v| Some(v % 3)).collect();
        labels[7] = None;
        let s = Split::random(&labels, SplitRatios::default(), &mut rng::derive(1, "split", &[]));
        assert_eq!(s.count(Role::Val), 250); // round(0.25 * 999) = 250
        assert_eq!(s.count(Role::Test), 250);
        assert_eq!(s.count(Role::Train), 499);
        assert_eq!(s.roles[7], Role::Unused);
        let again = Split::random(&labels, SplitRatios::default(), &mut rng::derive(1, "split", &[]));
        assert_eq!(s, again);
        let other = Split::random(&labels, SplitRatios::default(), &mut rng::derive(2, "split", &[]));
        // EC-LDA's draw: Φ(0.8) = 0.7881 train; 20 000 nodes give σ ≈ 0.003, tested at 5σ.
        let many = vec![Some(0u32); 20_000];
        let t = Split::normal_threshold(&many, 0.8, &mut rng::derive(1, "split", &[]));
        let share = t.count(Role::Train) as f64 / 20_000.0;
        assert!((share - 0.7881).abs() < 5.0 * 0.0029, "{share}");
        assert_eq!(t.count(Role::Val), 0);
        assert_eq!(t.count(Role::Train) + t.count(Role::Test), 20_000);
        assert_ne!(s, other);
    }

    #[test]
    fn ratio_validation() {
        assert!(SplitRatios::default().validate("split").is_ok());
        let e = SplitRatios { train: 0.6, val: 0.3, test: 0.3 }.validate("split").unwrap_err().to_string();
        assert!(e.contains("sum to 1"), "{e}");
        let e = SplitRatios { train: 1.2, val: -0.1, test: -0.1 }.validate("split").unwrap_err().to_string();
        assert!(e.contains("split.train"), "{e}");
    }
}

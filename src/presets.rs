//! Attack and defense presets: the YAML files in `attacks/` and `defenses/`, embedded in
//! the binary so that scenarios can name them from any working directory. They are the
//! two axes of the attack × defense matrix.
//!
//! Adding a preset = one YAML file in the folder + one line in the table below.

use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Attack,
    Defense,
}

impl Kind {
    fn field(self) -> &'static str {
        match self {
            Kind::Attack => "attacks",
            Kind::Defense => "defenses",
        }
    }
}

/// (name, YAML text) of every preset of `kind`.
pub fn all(kind: Kind) -> &'static [(&'static str, &'static str)] {
    match kind {
        Kind::Attack => &[("none", include_str!("../attacks/none.yaml"))],
        Kind::Defense => &[("none", include_str!("../defenses/none.yaml"))],
    }
}

/// The YAML text of preset `name`, or an error listing the known presets.
pub fn get(kind: Kind, name: &str) -> Result<&'static str> {
    all(kind).iter().find(|(n, _)| *n == name).map(|(_, text)| *text).ok_or_else(|| {
        let known: Vec<&str> = all(kind).iter().map(|(n, _)| *n).collect();
        Error::param(kind.field(), format!("unknown preset `{name}`; known: {}", known.join(", ")))
    })
}

pub fn check_all(kind: Kind, names: &[String]) -> Result<()> {
    names.iter().try_for_each(|n| get(kind, n).map(|_| ()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_preset_is_valid_yaml_with_a_kind() {
        for kind in [Kind::Attack, Kind::Defense] {
            for (name, text) in all(kind) {
                let v: serde_yaml::Value = serde_yaml::from_str(text).unwrap();
                assert!(v.get("kind").is_some(), "{name} has no kind");
            }
        }
        assert!(get(Kind::Attack, "ec-lda-unknown").unwrap_err().to_string().contains("known: none"));
    }
}

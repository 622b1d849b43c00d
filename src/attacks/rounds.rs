//! Which rounds an attack acts in (YAML `rounds:`): `mid` (⌊R/2⌋, EC-LDA's default),
//! `last`, `all`, `{every: k}` (rounds k, 2k, …) or an explicit list `[10, 20]`.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AttackRounds {
    #[default]
    Mid,
    Last,
    All,
    Every(usize),
    List(Vec<usize>),
}

impl AttackRounds {
    /// Whether round `round` (1-based) of `rounds` is an attack round.
    pub fn contains(&self, round: usize, rounds: usize) -> bool {
        match self {
            AttackRounds::Mid => round == (rounds / 2).max(1),
            AttackRounds::Last => round == rounds,
            AttackRounds::All => true,
            AttackRounds::Every(k) => round.is_multiple_of(*k),
            AttackRounds::List(l) => l.contains(&round),
        }
    }

    /// How many leading rounds of `rounds` come before the first of these: an attack
    /// acting only in these rounds is plain FedAvg through them
    /// ([`crate::fed::ServerStrategy::plain_rounds`]).
    pub fn before_first(&self, rounds: usize) -> usize {
        (1..=rounds).find(|&r| self.contains(r, rounds)).map_or(rounds, |r| r - 1)
    }

    /// How many trailing rounds of `rounds` come after the last of these: an attack
    /// acting only in these rounds is plain FedAvg through them
    /// ([`crate::fed::ServerStrategy::plain_tail`]).
    pub fn after_last(&self, rounds: usize) -> usize {
        (1..=rounds).rev().find(|&r| self.contains(r, rounds)).map_or(rounds, |r| rounds - r)
    }

    /// Whether an attack acting in these rounds reads `update` (a client that trained
    /// with weight > 0, in an attack round).
    pub fn reads(&self, ctx: &crate::fed::RoundContext, update: &crate::fed::ClientUpdate<'_>) -> bool {
        update.samples > 0 && self.contains(ctx.round, ctx.rounds)
    }

    pub fn validate(&self, rounds: usize, field: &str) -> Result<()> {
        match self {
            AttackRounds::Every(0) => Err(Error::param(field, "`every` must be at least 1")),
            AttackRounds::Every(k) if *k > rounds => {
                Err(Error::param(field, format!("every {k} rounds never happens in {rounds} round(s)")))
            }
            AttackRounds::List(l) if l.is_empty() => Err(Error::param(field, "the list of rounds is empty")),
            AttackRounds::List(l) => match l.iter().find(|&&r| r == 0 || r > rounds) {
                Some(r) => Err(Error::param(field, format!("round {r} is not in 1..={rounds} (federation.rounds)"))),
                None => Ok(()),
            },
            _ => Ok(()),
        }
    }
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Raw {
    Word(String),
    List(Vec<usize>),
    Every { every: usize },
}

impl Serialize for AttackRounds {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            AttackRounds::Mid => Raw::Word("mid".into()),
            AttackRounds::Last => Raw::Word("last".into()),
            AttackRounds::All => Raw::Word("all".into()),
            AttackRounds::Every(k) => Raw::Every { every: *k },
            AttackRounds::List(l) => Raw::List(l.clone()),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for AttackRounds {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<AttackRounds, D::Error> {
        let allowed = "allowed: `mid`, `last`, `all`, `{every: k}` or a list of rounds like `[10, 20]`";
        let raw = Raw::deserialize(d).map_err(|_| serde::de::Error::custom(format!("not a set of rounds; {allowed}")))?;
        Ok(match raw {
            Raw::Word(w) if w == "mid" => AttackRounds::Mid,
            Raw::Word(w) if w == "all" => AttackRounds::All,
            Raw::Word(w) if w == "last" => AttackRounds::Last,
            Raw::Word(w) => return Err(serde::de::Error::custom(format!("`{w}` is not a set of rounds; {allowed}"))),
            Raw::List(l) => AttackRounds::List(l),
            Raw::Every { every } => AttackRounds::Every(every),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_parse_and_select() {
        let r = |s: &str| serde_norway::from_str::<AttackRounds>(s);
        assert_eq!(r("mid").unwrap(), AttackRounds::Mid);
        assert_eq!(r("[3, 5]").unwrap(), AttackRounds::List(vec![3, 5]));
        assert_eq!(r("{every: 4}").unwrap(), AttackRounds::Every(4));
        assert!(r("middle").unwrap_err().to_string().contains("allowed"));
        assert!(AttackRounds::Mid.contains(100, 200) && !AttackRounds::Mid.contains(101, 200));
        assert!(AttackRounds::Mid.contains(1, 1));
        assert!(AttackRounds::Every(4).contains(8, 10) && !AttackRounds::Every(4).contains(6, 10));
        assert!(AttackRounds::List(vec![0]).validate(5, "x").is_err());
        assert!(AttackRounds::List(vec![6]).validate(5, "x").unwrap_err().to_string().contains("1..=5"));
        assert!(AttackRounds::Last.contains(7, 7) && !AttackRounds::Last.contains(6, 7));
        assert_eq!(AttackRounds::Mid.before_first(200), 99);
        assert_eq!(AttackRounds::Mid.before_first(1), 0);
        assert_eq!(AttackRounds::Last.before_first(7), 6);
        assert_eq!(AttackRounds::All.before_first(7), 0);
        assert_eq!(AttackRounds::Every(3).before_first(7), 2);
        assert_eq!(AttackRounds::List(vec![5, 2]).before_first(7), 1);
        assert_eq!(AttackRounds::List(vec![9]).before_first(7), 7);
        assert_eq!(AttackRounds::Mid.after_last(200), 100);
        assert_eq!(AttackRounds::Mid.after_last(1), 0);
        assert_eq!(AttackRounds::Last.after_last(7), 0);
        assert_eq!(AttackRounds::All.after_last(7), 0);
        assert_eq!(AttackRounds::Every(3).after_last(7), 1);
        assert_eq!(AttackRounds::List(vec![5, 2]).after_last(7), 2);
        assert_eq!(AttackRounds::List(vec![9]).after_last(7), 7);
        for v in [AttackRounds::Mid, AttackRounds::Last, AttackRounds::All, AttackRounds::Every(3), AttackRounds::List(vec![2, 4])] {
            assert_eq!(r(&serde_norway::to_string(&v).unwrap()).unwrap(), v);
        }
    }
}

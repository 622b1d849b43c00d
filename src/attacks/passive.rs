//! Passive attacks: they read what a server sees (the updates, an oracle's answers)
//! and never change the federation's course. An attack implements [`PassiveAttack`]
//! (its reading hooks and where its state lives) and gets the rest of
//! [`ServerStrategy`] from here: FedAvg's broadcast and aggregation, which it cannot
//! override, so runs that differ only in passive attacks share their rounds (see
//! [`ServerStrategy::plain_rounds`]); its inferences handed over at the end and
//! checkpointed between rounds.

use std::sync::Arc;

use super::AttackRounds;
use crate::error::Result;
use crate::fed::checkpoint;
use crate::fed::{AttackOutput, ClientOracle, ClientUpdate, RoundContext, ServerContext, ServerStrategy, ThreatModel};

/// An attack that only observes. The hooks mean what [`ServerStrategy`]'s of the same
/// names do.
pub trait PassiveAttack: Send {
    fn name(&self) -> &str;

    /// The rounds it reads: outside them its run is plain FedAvg.
    fn rounds(&self) -> &AttackRounds;

    /// Its inferences so far (all the state it keeps between rounds).
    fn output(&self) -> &AttackOutput;

    fn output_mut(&mut self) -> &mut AttackOutput;

    fn threat_model(&self) -> ThreatModel {
        ThreatModel::HonestButCurious
    }

    fn setup(&mut self, _server: &Arc<ServerContext>) -> Result<()> {
        Ok(())
    }

    fn after_update(&mut self, _ctx: &RoundContext, _update: &ClientUpdate<'_>) -> Result<()> {
        Ok(())
    }

    fn query(&mut self, _ctx: &RoundContext, _oracle: &dyn ClientOracle) -> Result<()> {
        Ok(())
    }
}

impl<T: PassiveAttack> ServerStrategy for T {
    fn name(&self) -> &str {
        PassiveAttack::name(self)
    }

    fn threat_model(&self) -> ThreatModel {
        PassiveAttack::threat_model(self)
    }

    fn setup(&mut self, server: &Arc<ServerContext>) -> Result<()> {
        PassiveAttack::setup(self, server)
    }

    fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
        PassiveAttack::after_update(self, ctx, update)
    }

    fn query(&mut self, ctx: &RoundContext, oracle: &dyn ClientOracle) -> Result<()> {
        PassiveAttack::query(self, ctx, oracle)
    }

    fn finish(&mut self) -> AttackOutput {
        std::mem::take(self.output_mut())
    }

    fn plain_rounds(&self, rounds: usize) -> usize {
        self.rounds().before_first(rounds)
    }

    fn plain_tail(&self, rounds: usize) -> usize {
        self.rounds().after_last(rounds)
    }

    /// It sends the global model and keeps FedAvg's aggregate in every round.
    fn keeps_course(&self, _ctx: &RoundContext) -> bool {
        true
    }

    fn save_state(&self) -> Result<Vec<u8>> {
        checkpoint::encode(self.output())
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<()> {
        *self.output_mut() = checkpoint::decode(state, &format!("attack `{}`'s state", PassiveAttack::name(self)))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attacks::uniform::{Uniform, UniformConfig};

    /// A passive attack acting in rounds 3 and 5 of 10 is plain FedAvg in rounds 1–2 and
    /// 6–10 (so sibling runs share them), keeps the course in every round, and its
    /// inferences survive a checkpoint and are handed over once.
    #[test]
    fn a_passive_attack_shares_its_plain_rounds_and_checkpoints_its_output() {
        let mut a = Uniform::new("u", UniformConfig { rounds: AttackRounds::List(vec![3, 5]) });
        let s: &mut dyn ServerStrategy = &mut a;
        assert_eq!((s.plain_rounds(10), s.plain_tail(10)), (2, 5));
        assert!((1..=10).all(|round| s.keeps_course(&RoundContext { round, rounds: 10 })));
        a.output_mut().label_distribution("u", 3, 1, vec![0.25, 0.75]);
        let saved = ServerStrategy::save_state(&a).unwrap();
        let mut b = Uniform::new("u", UniformConfig { rounds: AttackRounds::List(vec![3, 5]) });
        ServerStrategy::restore_state(&mut b, &saved).unwrap();
        let out = ServerStrategy::finish(&mut b);
        assert_eq!(out.reports.len(), 1);
        assert_eq!(out, ServerStrategy::finish(&mut a));
        assert!(ServerStrategy::finish(&mut a).reports.is_empty(), "handed over once");
    }
}

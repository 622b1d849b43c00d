//! Attacks: server strategies that try to learn about the clients' private data from
//! what a server sees. Each attack is one file here, one variant of [`AttackSpec`] (its
//! YAML `kind`), and a preset in `attacks/`; [`build`] is the only registration point.

pub mod ec_lda;
pub mod gradient;
pub mod ilrg;
pub mod infiltrator;
pub mod lda;
pub mod llg_star;
mod rounds;
pub mod uniform;

use serde::{Deserialize, Serialize};

pub use rounds::AttackRounds;

use crate::error::{Error, Result};
use crate::fed::{
    AttackNote, AttackOutput, ClientOracle, ClientUpdate, FedAvg, FederationConfig, ModelParams, RoundContext, ServerContext, ServerStrategy,
    ThreatModel,
};

/// An attack as a preset file or a scenario entry describes it: in YAML, `kind:` (the
/// variant, kebab-case) beside the variant's parameters (see `presets`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttackSpec {
    /// No attack: plain FedAvg.
    None(NoParams),
    /// Passive label-distribution inference from the head's update (EC-LDA's estimator
    /// without embedding compression).
    Lda(lda::LdaConfig),
    /// EC-LDA: the same estimate after scaling the broadcast model to a small norm,
    /// the round discarded afterwards (active).
    EcLda(ec_lda::EcLdaConfig),
    /// The uniform guess over the classes: the reference every attack must beat.
    Uniform(uniform::UniformConfig),
    /// iLRG (Ma et al.): counts from a linear system on the head's gradients.
    Ilrg(ilrg::IlrgConfig),
    /// LLG* (Wainakh et al.): counts from the head's weight gradient with dummy data.
    LlgStar(llg_star::LlgStarConfig),
    /// Infiltrator (Meng et al.): label inference by node injection (query access).
    Infiltrator(infiltrator::InfiltratorConfig),
}

/// The parameters of a kind that has none (any field is an error).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// A built attack: its strategy, and whether it changes what the server broadcasts
/// or aggregates (at most one such attack per scenario; any number of passive ones
/// observe side by side).
pub struct Built {
    pub strategy: Box<dyn ServerStrategy>,
    pub active: bool,
}

impl AttackSpec {
    /// The attack's strategy (`None` for `kind: none`), its parameters checked against
    /// the federation's settings; `field` names the entry in errors. The one place
    /// that knows every attack.
    pub fn build(&self, name: &str, federation: &FederationConfig, field: &str) -> Result<Option<Built>> {
        Ok(match self {
            AttackSpec::None(_) => None,
            AttackSpec::Lda(c) => {
                c.validate(federation, field)?;
                Some(Built { strategy: Box::new(lda::Lda::new(name, c.clone())), active: false })
            }
            AttackSpec::EcLda(c) => {
                c.validate(federation, field)?;
                Some(Built { strategy: Box::new(ec_lda::EcLda::new(name, c.clone())), active: true })
            }
            AttackSpec::Ilrg(c) => {
                c.validate(federation, field)?;
                Some(Built { strategy: Box::new(ilrg::Ilrg::new(name, c.clone())), active: false })
            }
            AttackSpec::LlgStar(c) => {
                c.validate(federation, field)?;
                Some(Built { strategy: Box::new(llg_star::LlgStar::new(name, c.clone())), active: false })
            }
            AttackSpec::Infiltrator(c) => {
                c.validate(federation, field)?;
                Some(Built { strategy: Box::new(infiltrator::Infiltrator::new(name, c.clone())), active: false })
            }
            AttackSpec::Uniform(c) => {
                c.rounds.validate(federation.rounds, &format!("{field}.rounds"))?;
                Some(Built { strategy: Box::new(uniform::Uniform::new(name, c.clone())), active: false })
            }
        })
    }
}

/// The server for a scenario's attacks (`(name, spec)` in declared order): plain FedAvg
/// without any, else every attack observing the same updates, at most one of them active.
pub fn server<'a>(attacks: impl IntoIterator<Item = (&'a str, &'a AttackSpec)>, federation: &FederationConfig) -> Result<Box<dyn ServerStrategy>> {
    let mut active: Vec<(&str, usize)> = Vec::new();
    let mut built = Vec::new();
    for (i, (name, spec)) in attacks.into_iter().enumerate() {
        if let Some(b) = spec.build(name, federation, &format!("attacks[{i}]"))? {
            if b.active {
                active.push((name, built.len()));
            }
            built.push(b.strategy);
        }
    }
    if active.len() > 1 {
        let names: Vec<&str> = active.iter().map(|a| a.0).collect();
        return Err(Error::param(
            "attacks",
            format!("{} all tamper with the broadcast model; a scenario may hold at most one active attack", names.join(" and ")),
        ));
    }
    Ok(match built.len() {
        0 => Box::new(FedAvg),
        1 => built.pop().expect("one"),
        _ => Box::new(Composite {
            name: built.iter().map(|s| s.name().to_string()).collect::<Vec<_>>().join("+"),
            active: active.first().map(|a| a.1),
            attacks: built,
        }),
    })
}

/// Several attacks on one federation. The hooks that change the model are those of the
/// active attack, if any; the observing hooks reach every attack, in declared order.
struct Composite {
    name: String,
    attacks: Vec<Box<dyn ServerStrategy>>,
    active: Option<usize>,
}

impl ServerStrategy for Composite {
    fn name(&self) -> &str {
        &self.name
    }
    fn threat_model(&self) -> ThreatModel {
        self.attacks.iter().map(|a| a.threat_model()).max().unwrap_or(ThreatModel::HonestButCurious)
    }
    fn setup(&mut self, server: &std::sync::Arc<ServerContext>) -> Result<()> {
        self.attacks.iter_mut().try_for_each(|a| a.setup(server))
    }
    fn before_broadcast(&mut self, ctx: &RoundContext, client: usize, global: &ModelParams) -> Option<ModelParams> {
        self.active.and_then(|i| self.attacks[i].before_broadcast(ctx, client, global))
    }
    fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
        // Each attack sees only what its own threat model grants.
        self.attacks.iter_mut().try_for_each(|a| {
            let granted = a.threat_model() >= ThreatModel::GradientAccess;
            a.after_update(ctx, &ClientUpdate { exact_gradient: update.exact_gradient.filter(|_| granted), ..*update })
        })
    }
    fn aggregate(&mut self, ctx: &RoundContext, updates: &[ClientUpdate<'_>]) -> ModelParams {
        match self.active {
            Some(i) => self.attacks[i].aggregate(ctx, updates),
            None => crate::fed::strategy::fedavg(updates),
        }
    }
    fn after_aggregation(&mut self, ctx: &RoundContext, previous: &ModelParams, aggregated: ModelParams) -> ModelParams {
        match self.active {
            Some(i) => self.attacks[i].after_aggregation(ctx, previous, aggregated),
            None => aggregated,
        }
    }
    fn query(&mut self, ctx: &RoundContext, oracle: &dyn ClientOracle) -> Result<()> {
        for a in &mut self.attacks {
            if a.threat_model() == ThreatModel::QueryAccess {
                a.query(ctx, oracle)?;
            }
        }
        Ok(())
    }
    fn finish(&mut self) -> AttackOutput {
        let mut out = AttackOutput::default();
        let active = self.active.map(|i| self.attacks[i].name().to_string());
        for (i, a) in self.attacks.iter_mut().enumerate() {
            let o = a.finish();
            if let Some(active) = active.as_ref().filter(|_| Some(i) != self.active && !o.reports.is_empty()) {
                out.notes.push(AttackNote {
                    attack: a.name().to_string(),
                    text: format!("in the rounds where `{active}` acts, this attack observes the updates of the model `{active}` broadcast"),
                });
            }
            out.reports.extend(o.reports);
            out.notes.extend(o.notes);
        }
        out
    }
}

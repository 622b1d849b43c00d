//! Attacks: server strategies that try to learn about the clients' private data from
//! what a server sees. Each attack is one file here (its config implementing
//! [`AttackConfig`]), a preset in `attacks/`, and one line in the `attacks!` registry
//! below, which declares its module, its [`AttackSpec`] variant (YAML `kind`) and its
//! built-in preset.

pub mod gradient;
mod passive;
mod rounds;

use serde::{Deserialize, Serialize};

pub use passive::PassiveAttack;
pub use rounds::AttackRounds;

use crate::data::Task;
use crate::error::{Error, Result};
use crate::fed::{
    AttackNote, AttackOutput, ClientOracle, ClientUpdate, FedAvg, FederationConfig, ModelParams, RoundContext, ServerContext,
    ServerStrategy, ThreatModel,
};

/// What an attack's config (its YAML parameters) provides.
pub trait AttackConfig {
    /// Whether the attack changes what the server broadcasts or aggregates (at most one
    /// such attack per scenario; any number of passive ones observe side by side).
    const ACTIVE: bool;

    /// Check the parameters against the federation's settings; `field` names the
    /// scenario entry in errors.
    fn validate(&self, federation: &FederationConfig, field: &str) -> Result<()>;

    /// The attack's server strategy (parameters already checked).
    fn strategy(&self, name: &str) -> Box<dyn ServerStrategy>;

    /// Seconds of server work per run on Cora (2 485 nodes in its largest component),
    /// scaled by the node count, for `matrix --dry-run`'s estimate (from the shipped Cora
    /// matrix's runs).
    const SERVER_SECONDS_ON_CORA: f64 = 0.5;

    /// The tasks the attack reads updates of (a scenario with another is refused).
    const TASKS: &'static [Task] = &[Task::Node];

    /// Whether the attack can read an aggregate of the clients' updates (what a server
    /// behind secure aggregation or a trusted aggregator receives,
    /// [`ClientUpdate::AGGREGATE`]); one that needs each client's own update is refused
    /// under an upload protocol that hides them.
    const READS_AGGREGATE: bool = false;
}

/// The parameters of a kind that has none (any field is an error).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// A built attack: its strategy, and whether it is active (see
/// [`AttackConfig::ACTIVE`]).
pub struct Built {
    pub strategy: Box<dyn ServerStrategy>,
    pub active: bool,
}

/// Declares every attack once: its module, its [`AttackSpec`] variant, its YAML `kind`
/// and built-in preset `attacks/<kind>.yaml`.
macro_rules! attacks {
    ($( $(#[$doc:meta])* $variant:ident($module:ident::$config:ident) = $kind:literal, )*) => {
        $( pub mod $module; )*

        /// An attack as a preset file or a scenario entry describes it: in YAML, `kind:`
        /// beside the variant's parameters (see `presets`).
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        pub enum AttackSpec {
            /// No attack: plain FedAvg.
            #[serde(rename = "none")]
            None(NoParams),
            $( $(#[$doc])* #[serde(rename = $kind)] $variant($module::$config), )*
        }

        impl AttackSpec {
            /// The YAML `kind`.
            pub fn kind(&self) -> &'static str {
                match self {
                    AttackSpec::None(_) => "none",
                    $( AttackSpec::$variant(_) => $kind, )*
                }
            }

            /// See [`AttackConfig::SERVER_SECONDS_ON_CORA`] (none for `kind: none`).
            pub fn server_seconds_on_cora(&self) -> f64 {
                match self {
                    AttackSpec::None(_) => 0.0,
                    $( AttackSpec::$variant(_) => <$module::$config as AttackConfig>::SERVER_SECONDS_ON_CORA, )*
                }
            }

            /// See [`AttackConfig::TASKS`] (every task for `kind: none`).
            pub fn tasks(&self) -> &'static [Task] {
                match self {
                    AttackSpec::None(_) => Task::ALL,
                    $( AttackSpec::$variant(_) => <$module::$config as AttackConfig>::TASKS, )*
                }
            }

            /// See [`AttackConfig::READS_AGGREGATE`] (true for `kind: none`).
            pub fn reads_aggregate(&self) -> bool {
                match self {
                    AttackSpec::None(_) => true,
                    $( AttackSpec::$variant(_) => <$module::$config as AttackConfig>::READS_AGGREGATE, )*
                }
            }

            /// The attack's strategy (`None` for `kind: none`); `field` names the entry in
            /// errors.
            pub fn build(&self, name: &str, federation: &FederationConfig, field: &str) -> Result<Option<Built>> {
                Ok(match self {
                    AttackSpec::None(_) => None,
                    $( AttackSpec::$variant(c) => {
                        AttackConfig::validate(c, federation, field)?;
                        Some(Built { strategy: AttackConfig::strategy(c, name), active: <$module::$config as AttackConfig>::ACTIVE })
                    } )*
                })
            }
        }

        /// [`AttackConfig::READS_AGGREGATE`] of the attack of YAML `kind` (false for an
        /// unknown kind).
        pub fn kind_reads_aggregate(kind: &str) -> bool {
            match kind {
                $( $kind => <$module::$config as AttackConfig>::READS_AGGREGATE, )*
                _ => false,
            }
        }

        /// (kind, YAML text) of every built-in attack preset.
        pub const PRESETS: &[(&str, &str)] = &[
            ("none", include_str!("../../attacks/none.yaml")),
            $( ($kind, include_str!(concat!("../../attacks/", $kind, ".yaml"))), )*
        ];
    };
}

// The registry: adding an attack is its file, its preset and one line here.
attacks! {
    /// Passive label-distribution inference from the head's update (EC-LDA's estimator
    /// without embedding compression).
    Lda(lda::LdaConfig) = "lda",
    /// EC-LDA: the same estimate after scaling the broadcast model to a small norm,
    /// the round discarded afterwards (active).
    EcLda(ec_lda::EcLdaConfig) = "ec-lda",
    /// The uniform guess over the classes: the reference every attack must beat.
    Uniform(uniform::UniformConfig) = "uniform",
    /// iLRG (Ma et al.): counts from a linear system on the head's gradients.
    Ilrg(ilrg::IlrgConfig) = "ilrg",
    /// LLG* (Wainakh et al.): counts from the head's weight gradient with dummy data.
    LlgStar(llg_star::LlgStarConfig) = "llg-star",
    /// Infiltrator (Meng et al.): label inference by node injection (query access).
    Infiltrator(infiltrator::InfiltratorConfig) = "infiltrator",
}

/// The server for a scenario's attacks (`(name, spec)` in declared order): plain FedAvg
/// without any, else every attack observing the same updates, at most one of them active.
pub fn server<'a>(
    attacks: impl IntoIterator<Item = (&'a str, &'a AttackSpec)>,
    federation: &FederationConfig,
) -> Result<Box<dyn ServerStrategy>> {
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
                    text: format!(
                        "in the rounds where `{active}` acts, this attack observes the updates of the model `{active}` broadcast"
                    ),
                });
            }
            out.reports.extend(o.reports);
            out.notes.extend(o.notes);
        }
        out
    }
    fn plain_rounds(&self, rounds: usize) -> usize {
        self.attacks.iter().map(|a| a.plain_rounds(rounds)).min().unwrap_or(rounds)
    }
    fn plain_tail(&self, rounds: usize) -> usize {
        self.attacks.iter().map(|a| a.plain_tail(rounds)).min().unwrap_or(rounds)
    }
    /// Only the active attack can change the federation's course.
    fn keeps_course(&self, ctx: &RoundContext) -> bool {
        self.active.is_none_or(|i| self.attacks[i].keeps_course(ctx))
    }
    fn save_state(&self) -> Result<Vec<u8>> {
        let states = self.attacks.iter().map(|a| a.save_state()).collect::<Result<Vec<_>>>()?;
        crate::fed::checkpoint::encode(&states)
    }
    fn restore_state(&mut self, state: &[u8]) -> Result<()> {
        let states: Vec<Vec<u8>> = crate::fed::checkpoint::decode(state, "the attacks' states")?;
        if states.len() != self.attacks.len() {
            return Err(Error::Other(format!("checkpoint: {} attacks' states for {} attacks", states.len(), self.attacks.len())));
        }
        self.attacks.iter_mut().zip(&states).try_for_each(|(a, s)| a.restore_state(s))
    }
}

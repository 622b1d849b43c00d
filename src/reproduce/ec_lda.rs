//! `ec-lda`: the EC-LDA paper's Table 2 block for one dataset (EC-LDA, Infiltrator,
//! iLRG, LLG* and the uniform guess × GCN/GAT/SAGE), the local-epochs sweep E ∈ {1, 3, 5},
//! the sweep over the clipping norm C, and on request the defense experiment and DP-GNN's
//! utility, in the published code's setting (REFERENCE §1.4). The table is data —
//! `scenarios/papers/ec-lda/table.yaml` (the cells by part over
//! `scenarios/ec-lda-cora-gcn.yaml`, each run with the three models; the rows each run
//! gives, per attack; the checks every table keeps) and `published.csv` (Table 2's Cora
//! values) — run by [`super::table`]; this file maps the command's flags onto it.

use std::path::{Path, PathBuf};

use super::TableOptions;
use super::table::{PaperTable, Variant};
use crate::error::{Error, Result};
use crate::run::RunOptions;

/// Which parts of the EC-LDA reproduction to run (the table file's `parts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EcLdaPart {
    /// Table 2: EC-LDA on its compressed round; Infiltrator (after training), iLRG, LLG*,
    /// the passive LDA and the uniform guess on an ordinary round of a federation without
    /// the active attack (the published `compare` task) × GCN, GAT, SAGE.
    Table,
    /// Not Table 2: iLRG, LLG* and the uniform guess reading EC-LDA's compressed round,
    /// beside EC-LDA (compression helps every label-distribution estimator).
    Compressed,
    /// EC-LDA with E ∈ {1, 3, 5} local epochs.
    Epochs,
    /// EC-LDA with C ∈ {0.001, 0.01, 0.1, 1, 10} and without scaling.
    Clip,
    /// EC-LDA against label-DP (k-ary RR, as the published `label_DP`), DP-GNN and the
    /// published code's DP calibration at ε ∈ {1, 2, 4, 8}, beside no defense (GCN and
    /// SAGE; DP-GNN has no GAT).
    Defense,
    /// DP-GNN's test accuracy (GCN) against ε ∈ {1, 2, 4, 8, 16, 32, ∞}, centralized and
    /// over the 10 clients, with the noise multiplier σ the clients got.
    DpUtility,
    /// Table 4: EC-LDA on federated link prediction ({no link, link} of each client's
    /// training pairs) × GCN, GAT, SAGE, in the published link setting.
    Link,
    /// Figure 9: EC-LDA with 5, 10, 20 and 50 Fluid clients.
    Clients,
}

impl EcLdaPart {
    /// Its name in the table file.
    pub fn name(self) -> &'static str {
        match self {
            EcLdaPart::Table => "table",
            EcLdaPart::Compressed => "compressed",
            EcLdaPart::Epochs => "epochs",
            EcLdaPart::Clip => "clip",
            EcLdaPart::Defense => "defense",
            EcLdaPart::DpUtility => "dp-utility",
            EcLdaPart::Link => "link",
            EcLdaPart::Clients => "clients",
        }
    }
}

#[derive(Debug, Clone)]
pub struct EcLdaOptions {
    pub dataset: String,
    pub seeds: usize,
    /// None: the table's default parts.
    pub parts: Vec<EcLdaPart>,
    /// Rounds instead of the dataset's (for a quick look; the attack stays mid-way).
    pub rounds: Option<usize>,
    pub run: RunOptions,
}

/// Run the EC-LDA reproduction and write `reproduce.md` / `reproduce.csv`; returns the
/// results directory.
pub fn ec_lda(opts: &EcLdaOptions, out: Option<&Path>, force: bool) -> Result<PathBuf> {
    let (table, topts, variant) = as_table(opts)?;
    super::table::run(&table, &topts, &variant, out, force)
}

/// `reproduce ec-lda … --dry-run`: see [`super::table::plan`].
pub fn plan(opts: &EcLdaOptions, out: Option<&Path>) -> Result<String> {
    let (table, topts, variant) = as_table(opts)?;
    super::table::plan(&table, &topts, &variant, out)
}

/// The built-in table file with the command's options, checked.
fn as_table(opts: &EcLdaOptions) -> Result<(PaperTable, TableOptions, Variant)> {
    if opts.seeds == 0 {
        return Err(Error::param("--seeds", "at least 1 seed is needed"));
    }
    if let Some(r) = opts.rounds.filter(|&r| r < 2) {
        return Err(Error::param("--rounds", format!("{r}: at least 2 rounds are needed (the attack runs mid-way)")));
    }
    let table = PaperTable::builtin("ec-lda");
    let topts = TableOptions {
        dataset: opts.dataset.clone(),
        runs: opts.seeds,
        settings: vec![],
        parts: opts.parts.iter().map(|p| p.name().to_string()).collect(),
        epochs: None,
        cells: vec![],
        run: opts.run.clone(),
    };
    let variant = Variant { overrides: opts.rounds.map(|r| format!("federation.rounds={r}")).into_iter().collect(), ..Variant::compare() };
    Ok((table, topts, variant))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fed::{AttackOutput, ClientOracle, ClientUpdate, ModelParams, RoundContext, ServerContext, ServerStrategy, ThreatModel};
    use crate::scenario::Scenario;

    /// Wraps a scenario's server and records, in the attack round, the norm of the model
    /// the federation meant to broadcast and of the one every attack was handed.
    struct Spy {
        inner: Box<dyn ServerStrategy>,
        global: Option<f64>,
        handed: Vec<f64>,
    }

    impl ServerStrategy for Spy {
        fn name(&self) -> &str {
            self.inner.name()
        }
        fn threat_model(&self) -> ThreatModel {
            self.inner.threat_model()
        }
        fn setup(&mut self, server: &std::sync::Arc<ServerContext>) -> Result<()> {
            self.inner.setup(server)
        }
        fn before_broadcast(&mut self, ctx: &RoundContext, client: usize, global: &ModelParams) -> Option<ModelParams> {
            if ctx.round == ctx.rounds / 2 {
                self.global = Some(global.l2_norm());
            }
            self.inner.before_broadcast(ctx, client, global)
        }
        fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> Result<()> {
            if ctx.round == ctx.rounds / 2 {
                self.handed.push(update.sent.l2_norm());
            }
            self.inner.after_update(ctx, update)
        }
        fn aggregate(&mut self, ctx: &RoundContext, updates: &[ClientUpdate<'_>]) -> ModelParams {
            self.inner.aggregate(ctx, updates)
        }
        fn after_aggregation(&mut self, ctx: &RoundContext, previous: &ModelParams, aggregated: ModelParams) -> ModelParams {
            self.inner.after_aggregation(ctx, previous, aggregated)
        }
        fn query(&mut self, ctx: &RoundContext, oracle: &dyn ClientOracle) -> Result<()> {
            self.inner.query(ctx, oracle)
        }
        fn finish(&mut self) -> AttackOutput {
            self.inner.finish()
        }
    }

    /// The norms (intended broadcast, handed to the attacks) in the attack round of the
    /// table's cell `id` for GCN, on a small synthetic graph over 4 rounds.
    fn attack_round_norms(id: &str) -> (f64, Vec<f64>, Vec<String>) {
        let t = PaperTable::builtin("ec-lda");
        let c = t.ids().iter().position(|&i| i == id).expect("the cell");
        let mut o = t.overrides(c, "synthetic", Some("gcn"), &Variant::compare());
        o.extend(["model.hidden=[16, 8]".into(), "federation.rounds=4".into(), "partition={method: fluid, clients: 3}".into()]);
        let s = Scenario::parse(&t.base.0, "test", &o).unwrap();
        let attacks = s.attacks.iter().map(|a| a.name.clone()).collect();
        let p = crate::run::prepare(&s, None).unwrap();
        let mut spy = Spy { inner: s.server().unwrap(), global: None, handed: vec![] };
        let r = crate::run::federation(&s, &p, Default::default()).unwrap().run(&mut spy).unwrap();
        assert!(!r.attack.reports.is_empty());
        (spy.global.expect("an attack round"), spy.handed, attacks)
    }

    #[test]
    fn table_2s_baselines_read_an_ordinary_round_and_ec_lda_its_compressed_one() {
        // Table 2's baselines: the model they are handed is the global model, unscaled.
        let (global, handed, attacks) = attack_round_norms("baselines");
        assert_eq!(attacks, ["lda", "infiltrator", "ilrg", "llg-star", "uniform"]);
        assert!(global > 0.1, "{global}");
        assert!(!handed.is_empty() && handed.iter().all(|&n| n == global), "{handed:?} vs {global}");
        // EC-LDA's own federation, and the `compressed` part: every attack reads the model
        // scaled to C = 0.01.
        for id in ["ec-lda", "compressed"] {
            let (global, handed, attacks) = attack_round_norms(id);
            assert!(attacks.contains(&"ec-lda".to_string()), "{attacks:?}");
            assert!(global > 0.1);
            assert!(!handed.is_empty() && handed.iter().all(|&n| (n - 0.01).abs() < 1e-6), "{id}: {handed:?}");
        }
    }

    /// The defense part as the table file has it: GCN and SAGE only; DP-GNN at each ε as
    /// published and as the EC-LDA code calibrates it, the latter named in the setting
    /// and only there; the command's parts are the file's.
    #[test]
    fn the_ec_lda_code_calibration_is_named_in_the_setting_and_only_there() {
        let t = PaperTable::builtin("ec-lda");
        let names: Vec<&str> = t.spec.parts.iter().map(|p| p.name.as_str()).collect();
        let all = [
            EcLdaPart::Table,
            EcLdaPart::Compressed,
            EcLdaPart::Epochs,
            EcLdaPart::Clip,
            EcLdaPart::Defense,
            EcLdaPart::DpUtility,
            EcLdaPart::Link,
            EcLdaPart::Clients,
        ];
        assert_eq!(names, all.map(EcLdaPart::name));
        assert_eq!(t.parts(&[]).unwrap(), ["table", "compressed", "epochs", "clip"]);
        let dp: Vec<usize> = (0..t.ids().len())
            .filter(|&c| t.spec.cells[c].part.as_deref() == Some("defense") && t.cell(c, Some("cora")).1.contains("defense=dp-gnn"))
            .collect();
        assert_eq!(dp.len(), 4 * 2, "4 ε × the two calibrations");
        let code = |c: usize| t.cell(c, Some("cora")).0.iter().any(|x| x.contains("calibration: ec-lda-code"));
        for &c in &dp {
            assert_eq!(t.models_of(c), [Some("gcn"), Some("sage")]);
            assert_eq!(code(c), t.cell(c, Some("cora")).1.ends_with(";calibration=ec-lda-code"), "{}", t.ids()[c]);
        }
        assert_eq!(dp.iter().filter(|&&c| code(c)).count(), 4);
        let c8 = t.ids().iter().position(|&i| i == "dp-gnn-code-8").unwrap();
        assert_eq!(t.cell(c8, Some("cora")).1, "eps=8;defense=dp-gnn;local_epochs=1;clip=0.01;calibration=ec-lda-code");
        // Table 2's values, by the setting the rows get.
        let p = t.published("2", "planetoid-cora", "gat", "attack=ilrg;local_epochs=5;clip=none", "cos_sim");
        assert_eq!(p, Some(crate::reproduce::PaperValue { mean: 0.499, ci95: None }));
        assert_eq!(t.published("2", "citeseer", "gat", "attack=ilrg;local_epochs=5;clip=none", "cos_sim"), None);
    }
}

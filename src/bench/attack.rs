//! `fgl-sim bench attack`.

use std::path::Path;
use std::time::Instant;

use super::median;
use crate::backend::peak_rss_mib;
use crate::error::Result;
use crate::run;
use crate::scenario::Scenario;

/// One attack round's server-side work per client on EC-LDA's Cora workload (each of
/// GCN, GAT, SAGE at 1433 → 512 → 64 + head): reading the gradient off the update and
/// estimating, including the dummy graph and its forward pass, which the first client of
/// a round pays and the others of the same broadcast reuse.
pub fn attack(dir: Option<&Path>, reps: usize) -> Result<()> {
    use crate::attacks::{AttackRounds, ec_lda, ilrg, lda, llg_star};
    use crate::fed::{ClientUpdate, ModelParams, RoundContext, ServerStrategy};
    println!("bench attack: EC-LDA's Cora setting (10 Fluid clients), median over {reps} attack rounds, ms per client");
    let table = crate::reproduce::table::PaperTable::builtin("ec-lda");
    for model in &table.spec.models {
        let scenario = Scenario::parse(&table.base.0, "bench", &[format!("model.arch={model}"), "federation.rounds=2".to_string()])?;
        let prepared = match run::prepare(&scenario, dir) {
            Ok(p) => p,
            Err(e) => {
                println!("{model} skipped: {e}");
                continue;
            }
        };
        let federation = run::federation(&scenario, &prepared, Default::default())?;
        let server = federation.server_context().clone();
        let global = ModelParams::of(&scenario.model.init(server.in_dim, server.classes, 0, server.device())?);
        let sent = ec_lda::clip_to_norm(&global, 0.01);
        let returned = sent.scaled(0.999);
        let samples = prepared.clients[0].nodes.len();
        let update = ClientUpdate { client: 0, sent: &sent, returned: &returned, samples, lr: 0.1, local_epochs: 5, exact_gradient: None };
        let all = AttackRounds::All;
        let mut strategies: Vec<(&str, Box<dyn ServerStrategy>)> = vec![
            ("ec-lda", Box::new(lda::Lda::new("ec-lda", lda::LdaConfig { rounds: all.clone(), ..Default::default() }))),
            ("ilrg", Box::new(ilrg::Ilrg::new("ilrg", ilrg::IlrgConfig { rounds: all.clone(), ..Default::default() }))),
            (
                "llg-star",
                Box::new(llg_star::LlgStar::new("llg-star", llg_star::LlgStarConfig { rounds: all.clone(), ..Default::default() })),
            ),
        ];
        let mut line = format!("{model:<5}");
        for (name, strategy) in &mut strategies {
            strategy.setup(&server)?;
            let (mut first, mut further) = (Vec::new(), Vec::new());
            for round in 1..=reps.max(1) {
                let ctx = RoundContext { round, rounds: reps.max(1) };
                let t = Instant::now();
                strategy.after_update(&ctx, &update)?;
                first.push(t.elapsed().as_secs_f64() * 1e3);
                let t = Instant::now();
                strategy.after_update(&ctx, &ClientUpdate { client: 1, ..update })?;
                further.push(t.elapsed().as_secs_f64() * 1e3);
            }
            line.push_str(&format!(" | {name} first {:.2} further {:.3}", median(first), median(further)));
        }
        println!("{line}");
    }
    if let Some(mib) = peak_rss_mib() {
        println!("peak resident memory: {mib:.1} MiB");
    }
    Ok(())
}

//! EC-LDA and the label-leakage attacks: the gradient a server recovers from an SGD
//! update, the attack round's restore, bad settings, and the attack end to end on Cora.

mod common;

use std::path::Path;

use fgl_sim::attacks::gradient::GradientSource;
use fgl_sim::fed::{ClientUpdate, RoundContext, ServerStrategy, ThreatModel};
use fgl_sim::run;
use fgl_sim::scenario::Scenario;

fn quickstart(overrides: &[&str]) -> Scenario {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Scenario::load(Path::new("scenarios/quickstart.yaml"), &o).unwrap()
}

/// The scenario run with its own attacks as the server.
fn run_attacks(s: &Scenario, data: Option<&Path>) -> (run::Prepared, fgl_sim::fed::FedResult) {
    let p = run::prepare(s, data).unwrap();
    let r = run::federation(s, &p, Default::default()).unwrap().run(s.server().unwrap().as_mut()).unwrap();
    (p, r)
}

/// Compares, for every update, the gradient recovered from the models with the one the
/// client computed (it declares gradient access to be handed the latter).
#[derive(Default)]
struct GradientCheck {
    compared: usize,
    worst: f64,
}

impl ServerStrategy for GradientCheck {
    fn name(&self) -> &str {
        "gradient-check"
    }
    fn threat_model(&self) -> ThreatModel {
        ThreatModel::GradientAccess
    }
    fn after_update(&mut self, _ctx: &RoundContext, update: &ClientUpdate<'_>) -> fgl_sim::Result<()> {
        let exact = update.exact_gradient.expect("granted under gradient access");
        let recovered = GradientSource::Recovered.read(update)?;
        assert_eq!(exact.steps, update.local_epochs);
        assert_eq!((exact.weight.len(), exact.bias.len()), (recovered.weight.len(), recovered.bias.len()));
        let scale = exact.weight.iter().chain(&exact.bias).fold(0f64, |m, v| m.max(v.abs()));
        assert!(scale > 0.0, "a zero gradient proves nothing");
        for (a, b) in exact.weight.iter().chain(&exact.bias).zip(recovered.weight.iter().chain(&recovered.bias)) {
            self.worst = self.worst.max((a - b).abs() / scale);
        }
        self.compared += 1;
        Ok(())
    }
}

#[test]
fn the_gradient_recovered_from_an_sgd_update_is_the_clients_averaged_gradient() {
    // Node classification, and link prediction (its head reads pair rows, with negatives
    // drawn afresh every epoch): the identity every update-reading attack relies on.
    for (arch, task) in [("gcn", "node"), ("gat", "node"), ("sage", "node"), ("gcn", "link"), ("sage", "link")] {
        // Link prediction's head gradient is small beside the scenario's weight decay,
        // which the update carries and the gradient does not: plain SGD, as the attacks assume.
        let wd = if task == "link" { "train.weight_decay=0" } else { "train.weight_decay=0.0005" };
        let s = quickstart(&[
            &format!("model.arch={arch}"),
            "model.head=true",
            "federation.rounds=2",
            "train.epochs=3",
            &format!("task={task}"),
            wd,
        ]);
        let p = run::prepare(&s, None).unwrap();
        let mut check = GradientCheck::default();
        run::federation(&s, &p, Default::default()).unwrap().run(&mut check).unwrap();
        assert_eq!(check.compared, 10, "{arch} {task}");
        // f32 parameters: (θ_sent − θ_returned)/(η·E) loses ~1e-7 of |θ| to rounding.
        assert!(check.worst < 1e-3, "{arch} {task}: largest difference {:.2e} of the largest gradient entry", check.worst);
    }
}

#[test]
fn exact_gradients_reach_only_a_strategy_that_declares_access() {
    struct Honest(usize);
    impl ServerStrategy for Honest {
        fn name(&self) -> &str {
            "honest"
        }
        fn after_update(&mut self, _ctx: &RoundContext, update: &ClientUpdate<'_>) -> fgl_sim::Result<()> {
            assert!(update.exact_gradient.is_none());
            self.0 += 1;
            Ok(())
        }
    }
    let s = quickstart(&["model.head=true", "federation.rounds=1"]);
    let p = run::prepare(&s, None).unwrap();
    let mut honest = Honest(0);
    run::federation(&s, &p, Default::default()).unwrap().run(&mut honest).unwrap();
    assert_eq!(honest.0, 5);
}

#[test]
fn the_attack_round_is_undone_and_without_the_attack_nothing_changes() {
    let base = ["model.head=true", "federation.rounds=4", "model.dropout=0"];
    let run_with = |attacks: &str| {
        let mut o: Vec<&str> = base.to_vec();
        o.push(attacks);
        run_attacks(&quickstart(&o), None).1
    };
    let attacked = run_with("attacks=[{kind: ec-lda, rounds: [2]}]");
    let plain = run_with("attacks=[]");
    // Round 2's aggregate is discarded: its global model is round 1's.
    assert_eq!(attacked.rounds[1].test_loss, attacked.rounds[0].test_loss);
    assert_eq!(attacked.rounds[1].client_test_accuracy, attacked.rounds[0].client_test_accuracy);
    assert_eq!(attacked.rounds[0], plain.rounds[0]);
    assert_ne!(plain.rounds[1].test_loss, plain.rounds[0].test_loss, "training moves the model");
    // The attack inferred every client in its round.
    assert_eq!(attacked.attack.reports.len(), 5);
    assert!(attacked.attack.reports.iter().all(|r| r.round == 2));
    // The passive estimate observes without changing training at all.
    let passive = run_with("attacks=[{kind: lda, rounds: [2]}, uniform]");
    assert_eq!(passive.rounds, plain.rounds);
}

#[test]
fn bad_attack_settings_fail_with_clear_messages() {
    let fails = |overrides: &[&str], needles: &[&str]| {
        let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
        let err = (|| -> fgl_sim::Result<_> {
            let s = Scenario::load(Path::new("scenarios/quickstart.yaml"), &o)?;
            let p = run::prepare(&s, None)?;
            run::federation(&s, &p, Default::default())?.run(s.server()?.as_mut())
        })()
        .err()
        .unwrap_or_else(|| panic!("{overrides:?} should fail"))
        .to_string();
        for n in needles {
            assert!(err.contains(n), "{overrides:?}: `{err}` lacks `{n}`");
        }
    };
    let head = "model.head=true";
    fails(&[head, "attacks=[{kind: ec-lda, clip_norm: 0}]"], &["clip_norm", "> 0"]);
    fails(&[head, "attacks=[{kind: ec-lda, clip_norm: -1}]"], &["clip_norm"]);
    fails(&[head, "federation.rounds=5", "attacks=[{kind: ec-lda, rounds: [6]}]"], &["rounds", "1..=5"]);
    fails(&["model.head=false", "attacks=[ec-lda]"], &["model.head"]);
    fails(&[head, "train.optimizer=adam", "attacks=[ec-lda]"], &["gradient", "adam", "exact"]);
    fails(&[head, "train.momentum=0.9", "attacks=[lda]"], &["gradient", "momentum"]);
    fails(&[head, "attacks=[{kind: ec-lda, gradient: approximate}]"], &["recovered", "exact"]);
    // With the client's own gradient, Adam is fine (and declared as the stronger model).
    let s = quickstart(&[head, "train.optimizer=adam", "federation.rounds=2", "attacks=[{kind: ec-lda, gradient: exact}]"]);
    let r = run_attacks(&s, None).1;
    assert_eq!(r.threat_model, ThreatModel::GradientAccess);
    assert_eq!(r.attack.reports.len(), 5);
}

#[test]
fn ec_lda_recovers_cora_label_distributions_with_gcn() {
    let Some(data) = common::data_dir() else {
        return;
    };
    let o: Vec<String> = ["federation.rounds=20", "attacks=[ec-lda, lda, uniform]"].iter().map(|s| s.to_string()).collect();
    let s = Scenario::load(Path::new("scenarios/ec-lda-cora-gcn.yaml"), &o).unwrap();
    let (p, r) = run_attacks(&s, Some(&data));
    let scored = run::score_attacks(&p, &r);
    let mean = |name: &str| scored.iter().find(|a| a.attack == name).and_then(|a| a.mean).unwrap();
    let (ec, lda, uniform) = (mean("ec-lda"), mean("lda"), mean("uniform"));
    assert_eq!(scored[0].reports.len(), 10, "every client attacked in round 10");
    assert!(ec.cos_sim >= 0.99, "EC-LDA cos-sim {} (lda {}, uniform {})", ec.cos_sim, lda.cos_sim, uniform.cos_sim);
    assert!(ec.js_nats < uniform.js_nats && ec.cos_sim > uniform.cos_sim);
    // The attack round (10) is undone.
    assert_eq!(r.rounds[9].test_loss, r.rounds[8].test_loss);
}

#[test]
fn under_label_ldp_the_attack_recovers_the_labels_clients_trained_on() {
    let o: Vec<String> = ["federation.rounds=6", "attacks=[ec-lda]"].iter().map(|s| s.to_string()).collect();
    let s = Scenario::load(Path::new("scenarios/quickstart-attack.yaml"), &o).unwrap();
    let (p, r) = run_attacks(&s, None);
    let truth = run::train_label_truth(&p);
    assert_ne!(truth, r.trained_label_counts, "ε = 2 randomises some labels");
    let scored = run::score_attacks(&p, &r);
    let (vs_truth, vs_trained) = (scored[0].mean.unwrap(), scored[0].mean_vs_trained_labels.unwrap());
    // Dropout 0.5 in the quickstart blurs the estimate a little; it still tracks the
    // labels trained on much more closely than the true ones.
    assert!(vs_trained.cos_sim >= 0.95, "{vs_trained:?}");
    assert!(vs_trained.js_nats < vs_truth.js_nats, "{vs_trained:?} vs {vs_truth:?}");
}

#[test]
fn infiltrator_queries_every_train_node_and_beats_the_uniform_guess() {
    let s = quickstart(&["model.head=true", "federation.rounds=10", "attacks=[infiltrator, {kind: uniform, rounds: last}]"]);
    let (p, r) = run_attacks(&s, None);
    assert_eq!(r.threat_model, ThreatModel::QueryAccess);
    let truth = run::train_label_truth(&p);
    let scored = run::score_attacks(&p, &r);
    let infiltrator = scored.iter().find(|a| a.attack == "infiltrator").unwrap();
    assert_eq!(infiltrator.reports.len(), 5);
    assert!(infiltrator.reports.iter().all(|r| r.round == 10));
    // Every train node got one prediction: the estimate is a histogram over them.
    for (rep, t) in infiltrator.reports.iter().zip(&truth) {
        let n: usize = t.iter().sum();
        for e in &rep.estimate {
            assert!((e * n as f64 - (e * n as f64).round()).abs() < 1e-9, "{:?} is not a histogram over {n} nodes", rep.estimate);
        }
    }
    let (inf, uni) = (infiltrator.mean.unwrap(), scored.iter().find(|a| a.attack == "uniform").unwrap().mean.unwrap());
    assert!(inf.cos_sim > uni.cos_sim && inf.js_nats < uni.js_nats, "{inf:?} vs uniform {uni:?}");
}

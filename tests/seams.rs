//! The two seams everything plugs into: attacks and defenses from YAML files outside
//! the crate (no rebuild), defenses composing in declared order, the server running
//! the model on graphs of its own, query access granted only when declared.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use fgl_sim::attacks::AttackRounds;
use fgl_sim::attacks::lda::{Lda, LdaConfig};
use fgl_sim::data::{DenseMatrix, Features, Graph, Role};
use fgl_sim::defenses::DefenseSpec;
use fgl_sim::fed::{
    AttackOutput, ClientContext, ClientDefenses, ClientOracle, ClientPipeline, ClientUpdate, DataTransform, Defense, DefenseBuilder,
    FedAvg, Inference, Injection, ModelParams, RoundContext, ServerContext, ServerStrategy, ThreatModel,
};
use fgl_sim::presets::Named;
use fgl_sim::run;
use fgl_sim::scenario::Scenario;
use fgl_sim::train::{FullBatch, LocalData};

fn quickstart(overrides: &[&str]) -> Scenario {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Scenario::load(Path::new("scenarios/quickstart.yaml"), &o).unwrap()
}

#[test]
fn attack_and_defenses_from_user_files_run_without_a_rebuild() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("my-lda.yaml"), "kind: lda\nrounds: [2, 3]\ndummy: {nodes: 400}\n").unwrap();
    std::fs::write(d.join("labels-a.yaml"), "kind: ldp-labels\nepsilon: 4\n").unwrap();
    std::fs::write(d.join("labels-b.yaml"), "kind: ldp-labels\nepsilon: 6\nforward_correction: true\n").unwrap();
    let quick = std::fs::read_to_string("scenarios/quickstart.yaml").unwrap();
    let scenario =
        format!("{quick}\ndefenses: [labels-a.yaml, labels-b.yaml]\nattacks: [my-lda.yaml, {{name: lda-every, kind: lda, rounds: all}}]\n");
    std::fs::write(d.join("s.yaml"), scenario).unwrap();
    let out = d.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_fgl-sim"))
        .args(["run", d.join("s.yaml").to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"])
        .args(["--set", "model.head=true", "--set", "federation.rounds=3"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("metrics.json")).unwrap()).unwrap();

    // The defenses ran, in the declared order, and each client's budget is reported.
    assert_eq!(m["defenses"], serde_json::json!(["labels-a", "labels-b"]));
    for c in m["clients"].as_array().unwrap() {
        let p = c["privacy"].as_array().unwrap();
        assert_eq!((p[0]["defense"].as_str(), p[0]["epsilon"].as_f64()), (Some("labels-a"), Some(4.0)));
        assert_eq!((p[1]["defense"].as_str(), p[1]["epsilon"].as_f64()), (Some("labels-b"), Some(6.0)));
        assert_eq!(c["epsilon_total"].as_f64(), Some(10.0));
    }
    // The attacks saw the updates of their rounds and ran the model on their dummy graph.
    assert_eq!(m["threat_model"], "honest-but-curious");
    let attacks = m["attacks"].as_array().unwrap();
    assert_eq!(attacks.len(), 2);
    assert_eq!(attacks[0]["attack"], "my-lda");
    let reports = attacks[0]["reports"].as_array().unwrap();
    let rounds: Vec<u64> = reports.iter().map(|r| r["round"].as_u64().unwrap()).collect();
    assert_eq!(rounds, [2, 2, 2, 2, 2, 3, 3, 3, 3, 3]);
    for r in reports {
        let est: Vec<f64> = r["estimate"].as_array().unwrap().iter().map(|x| x.as_f64().unwrap()).collect();
        assert_eq!(est.len(), 4);
        assert!((est.iter().sum::<f64>() - 1.0).abs() < 1e-9 && est.iter().all(|&x| x >= 0.0), "{est:?}");
    }
    assert_eq!(attacks[1]["reports"].as_array().unwrap().len(), 15);
    // The passive estimate beats guessing uniformly, on average.
    let (cos, uni) = (attacks[0]["mean"]["cos_sim"].as_f64().unwrap(), attacks[0]["uniform_baseline"]["cos_sim"].as_f64().unwrap());
    assert!(cos > uni, "lda cos-sim {cos} vs uniform {uni}");
    // The resolved scenario records the contents, not only the file names.
    let resolved = std::fs::read_to_string(out.join("scenario.resolved.yaml")).unwrap();
    for needle in ["name: labels-b", "forward_correction: true", "name: my-lda", "nodes: 400", "edge_probability: 0.005"] {
        assert!(resolved.contains(needle), "`{needle}` not in:\n{resolved}");
    }
    // … and runs again as it is, to the same numbers.
    let again = d.join("again");
    let o = Command::new(env!("CARGO_BIN_EXE_fgl-sim"))
        .args(["run", out.join("scenario.resolved.yaml").to_str().unwrap(), "--out", again.to_str().unwrap(), "--quiet"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let m2: serde_json::Value = serde_json::from_slice(&std::fs::read(again.join("metrics.json")).unwrap()).unwrap();
    assert_eq!(m["rounds"], m2["rounds"]);
    assert_eq!(m["attacks"], m2["attacks"]);
}

/// Client 0's instance of the defense `yaml` describes, under a default model and training.
fn defense(yaml: &str, name: &str) -> Defense {
    let mut n: Named<DefenseSpec> = serde_norway::from_str(yaml).unwrap();
    n.name = name.into();
    let (model, train) = (Default::default(), Default::default());
    n.spec
        .build(&n.name, &ClientContext { client: 0, model: &model, train: &train, rounds: 1, task: fgl_sim::data::Task::Node })
        .unwrap()
        .unwrap()
}

#[test]
fn data_transforms_compose_in_declared_order() {
    let s = quickstart(&[]);
    let p = run::prepare(&s, None).unwrap();
    let local = LocalData::of_client(&p.dataset, &p.clients[0], &p.split).unwrap();
    let (a, b) = ("{kind: ldp-labels, epsilon: 0.5}", "{kind: ldp-labels, epsilon: 2}");
    let stream = |k: usize| fgl_sim::rng::derive(7, "client-transform", &[0, k as u64]);

    let pipeline = ClientDefenses::new(vec![defense(a, "a"), defense(b, "b")]).unwrap();
    let mut composed = local.clone();
    let spent = pipeline.transform_data(&mut composed, stream).unwrap();
    assert_eq!(spent.iter().map(|c| (c.defense.as_str(), c.epsilon)).collect::<Vec<_>>(), [("a", 0.5), ("b", 2.0)]);

    // The same as applying a, then b, each from its own stream.
    let mut by_hand = local.clone();
    defense(a, "a").data.unwrap().apply(&mut by_hand, &mut stream(0)).unwrap();
    defense(b, "b").data.unwrap().apply(&mut by_hand, &mut stream(1)).unwrap();
    assert_eq!(composed.labels, by_hand.labels);
    // Labels changed, only on train and validation nodes.
    let changed: Vec<usize> = (0..local.labels.len()).filter(|&v| composed.labels[v] != local.labels[v]).collect();
    assert!(!changed.is_empty());
    assert!(changed.iter().all(|&v| matches!(local.roles[v], Role::Train | Role::Val)));

    // The other order gives other labels.
    let reversed = ClientDefenses::new(vec![defense(b, "b"), defense(a, "a")]).unwrap();
    let mut other = local.clone();
    reversed.transform_data(&mut other, stream).unwrap();
    assert_ne!(other.labels, composed.labels);
}

#[test]
fn at_most_one_defense_replaces_the_local_trainer() {
    let e = ClientDefenses::new(vec![
        Defense::new("dp-one").with_trainer(FullBatch),
        Defense::new("none-really"),
        Defense::new("dp-two").with_trainer(FullBatch),
    ])
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("defenses") && e.contains("dp-one and dp-two") && e.contains("at most one"), "{e}");
}

/// A transform that refuses to see a second client's data.
struct OneClient(std::sync::Mutex<Option<usize>>);

impl DataTransform for OneClient {
    fn apply(&self, data: &mut LocalData, _rng: &mut fgl_sim::rng::Rng) -> fgl_sim::Result<Option<fgl_sim::privacy::PrivacyCost>> {
        let mut seen = self.0.lock().unwrap();
        assert!(seen.is_none(), "one instance saw two clients' data");
        *seen = Some(data.graph.num_nodes());
        Ok(None)
    }
}

/// Each client gets its own instance of every defense, built from that client's context
/// (id, model, training, rounds), in client order; the instances share no state.
#[test]
fn every_client_gets_its_own_instance_of_a_defense() {
    let s = quickstart(&["federation.rounds=2"]);
    let p = run::prepare(&s, None).unwrap();
    let built = Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = built.clone();
    let builder = (String::from("one-client"), move |ctx: &ClientContext| {
        log.lock().unwrap().push((ctx.client, ctx.rounds, ctx.model.arch));
        Ok(Defense::new("one-client").with_data(OneClient(Default::default())))
    });
    assert_eq!(builder.name(), "one-client");
    let pipeline = ClientPipeline::new(vec![Box::new(builder) as Box<dyn DefenseBuilder>]);
    let mut federation = run::federation_with(&s, &p, Default::default(), pipeline).unwrap();
    let want: Vec<_> = (0..p.clients.len()).map(|c| (c, 2, s.model.arch)).collect();
    assert_eq!(*built.lock().unwrap(), want);
    federation.run(&mut FedAvg).unwrap();
    assert_eq!(built.lock().unwrap().len(), p.clients.len(), "instances are built once per client, not per round");
}

/// Trainers compose like middleware: `ldp-update` wraps DP-GNN's loop (clipping and
/// noising the update DP-GNN trained), wherever it is declared, and each reports its own
/// budget under its own name; the run differs from DP-GNN alone and is deterministic.
#[test]
fn a_wrapping_trainer_composes_with_one_that_replaces_the_loop() {
    use fgl_sim::privacy::accountant::{self, Conversion, Mechanism};
    let base = "dataset: {name: synthetic}\npartition: {clients: 3}\nfederation: {rounds: 3}\ntrain: {epochs: 2, optimizer: sgd, lr: 0.1}\n\
                model: {arch: sage, layers: 2, hidden: 8, dropout: 0.0}\n";
    let (upd, dp) = (
        "{name: upd, kind: ldp-update, clip: 0.5, noise_multiplier: 2.0}",
        "{name: dp, kind: dp-gnn, sigma: 1.5, max_degree: 3, batch_size: 16}",
    );
    let run_with = |defenses: &str| {
        let scenario = Scenario::parse(&format!("{base}defenses: {defenses}\n"), "c.yaml", &[]).unwrap();
        let prepared = run::prepare(&scenario, None).unwrap();
        run::federation(&scenario, &prepared, Default::default()).unwrap().run(&mut FedAvg).unwrap()
    };
    let both = run_with(&format!("[{upd}, {dp}]"));
    let want =
        accountant::epsilon(&Mechanism::DpSgd { sample_rate: 1.0 }, 1.0, 3, 1e-5, Conversion::Improved, &accountant::default_orders())
            .unwrap();
    for spent in &both.privacy {
        assert_eq!(spent.iter().map(|p| p.defense.as_str()).collect::<Vec<_>>(), ["upd", "dp"]);
        assert_eq!(spent[0].epsilon, want.epsilon);
        assert!(spent[1].protects.contains("DP-GNN"), "{}", spent[1].protects);
    }
    // Declared the other way round, the wrapping trainer still runs outermost.
    let reversed = run_with(&format!("[{dp}, {upd}]"));
    assert_eq!(reversed.rounds, both.rounds);
    let alone = run_with(&format!("[{dp}]"));
    assert_ne!(alone.rounds, both.rounds, "the update was not noised");
    assert_eq!(run_with(&format!("[{upd}, {dp}]")).rounds, both.rounds);
    // Two defenses that replace the loop still cannot share it: refused with the scenario.
    let e = Scenario::parse(&format!("{base}defenses: [{dp}, {{name: dp2, kind: dp-gnn, sigma: 2}}]\n"), "c.yaml", &[])
        .expect_err("two loops")
        .to_string();
    assert!(e.contains("defenses") && e.contains("dp and dp2") && e.contains("at most one"), "{e}");
}

/// Wraps the passive `lda` attack and, in round 1, broadcasts a model whose GNN layers
/// have zero weights and bias 0.1: every node's head input is then the same vector, the
/// case in which EC-LDA's estimator is exact.
struct ConstantEmbeddings<S>(S);

impl<S: ServerStrategy> ServerStrategy for ConstantEmbeddings<S> {
    fn name(&self) -> &str {
        self.0.name()
    }
    fn setup(&mut self, server: &Arc<ServerContext>) -> fgl_sim::Result<()> {
        self.0.setup(server)
    }
    fn before_broadcast(&mut self, _ctx: &RoundContext, _client: usize, global: &ModelParams) -> Option<ModelParams> {
        let mut p = global.clone();
        for t in p.tensors.iter_mut().filter(|t| t.name.starts_with("convs.")) {
            let v = if t.name.ends_with(".bias") { 0.1 } else { 0.0 };
            t.values.iter_mut().for_each(|x| *x = v);
        }
        Some(p)
    }
    fn after_update(&mut self, ctx: &RoundContext, update: &ClientUpdate<'_>) -> fgl_sim::Result<()> {
        self.0.after_update(ctx, update)
    }
    fn finish(&mut self) -> AttackOutput {
        self.0.finish()
    }
}

/// The largest error of any class share in `r`'s estimates against each client's train labels.
fn worst_error(r: &fgl_sim::fed::FedResult, p: &run::Prepared) -> f64 {
    assert_eq!(r.attack.reports.len(), p.clients.len());
    let mut worst = 0.0f64;
    for rep in &r.attack.reports {
        let c = &p.clients[rep.client];
        let truth = p.dataset.label_counts(c.nodes.iter().copied().filter(|&v| p.split.roles[v] == Role::Train));
        let n: usize = truth.iter().sum();
        let Inference::LabelDistribution { estimate } = &rep.inference;
        for (e, &t) in estimate.iter().zip(&truth) {
            worst = worst.max((e - t as f64 / n as f64).abs());
        }
    }
    worst
}

#[test]
fn lda_is_exact_when_every_head_input_is_the_same() {
    let s = quickstart(&["model.head=true", "model.dropout=0", "train.epochs=1", "train.weight_decay=0", "federation.rounds=1"]);
    let p = run::prepare(&s, None).unwrap();
    let config = LdaConfig { rounds: AttackRounds::All, ..Default::default() };
    let mut attack = ConstantEmbeddings(Lda::new("lda", config));
    let r = run::federation(&s, &p, Default::default()).unwrap().run(&mut attack).unwrap();
    let worst = worst_error(&r, &p);
    assert!(worst < 1e-3, "{worst}");
}

/// Issue 27: iLRG and LLG* had no correctness test. With every head input the same
/// vector h and one local step, the head's weight gradient is (p − π)hᵀ (p the shared
/// softmax, π the train-label shares): iLRG's linear system reads π back exactly. LLG*
/// does not, by design: its impact carries LLG's (1 + 1/C) factor (REFERENCE), so its
/// impact here is −(1 − 1/C²)·Σh instead of −Σh; it must still be far closer than the
/// uniform guess.
#[test]
fn ilrg_and_llg_star_are_exact_when_every_head_input_is_the_same() {
    use fgl_sim::attacks::ilrg::{Ilrg, IlrgConfig};
    use fgl_sim::attacks::llg_star::{LlgStar, LlgStarConfig};
    let s = quickstart(&["model.head=true", "model.dropout=0", "train.epochs=1", "train.weight_decay=0", "federation.rounds=1"]);
    let p = run::prepare(&s, None).unwrap();
    let mut ilrg = ConstantEmbeddings(Ilrg::new("ilrg", IlrgConfig { rounds: AttackRounds::All, ..Default::default() }));
    let r = run::federation(&s, &p, Default::default()).unwrap().run(&mut ilrg).unwrap();
    let worst_ilrg = worst_error(&r, &p);
    let mut llg = ConstantEmbeddings(LlgStar::new("llg-star", LlgStarConfig { rounds: AttackRounds::All, ..Default::default() }));
    let r = run::federation(&s, &p, Default::default()).unwrap().run(&mut llg).unwrap();
    let worst_llg = worst_error(&r, &p);
    let mut uniform = ConstantEmbeddings(fgl_sim::attacks::uniform::Uniform::new("uniform", Default::default()));
    let r = run::federation(&s, &p, Default::default()).unwrap().run(&mut uniform).unwrap();
    let worst_uniform = worst_error(&r, &p);
    eprintln!(
        "worst class-share error under constant embeddings: ilrg {worst_ilrg:.2e}, llg-star {worst_llg:.2e}, uniform {worst_uniform:.2e}"
    );
    assert!(worst_ilrg < 1e-3, "ilrg {worst_ilrg}");
    assert!(worst_llg < worst_uniform / 3.0, "llg-star {worst_llg} vs uniform {worst_uniform}");
}

/// Records what the server can do at setup and what the oracle answers.
#[derive(Default)]
struct Prober {
    declare_query: bool,
    queries: usize,
    own_graph_logits: Option<Vec<f32>>,
    oracle_answer: Option<Vec<f32>>,
    server: Option<Arc<ServerContext>>,
    first_global: Option<ModelParams>,
    /// Client 2's data, known to the test (not to the server): to check the oracle's
    /// answer against a forward pass on the client's whole graph.
    client2: Option<LocalData>,
}

impl ServerStrategy for Prober {
    fn name(&self) -> &str {
        "prober"
    }
    fn threat_model(&self) -> ThreatModel {
        if self.declare_query { ThreatModel::QueryAccess } else { ThreatModel::HonestButCurious }
    }
    fn setup(&mut self, server: &Arc<ServerContext>) -> fgl_sim::Result<()> {
        assert!(server.param_names.iter().any(|n| n == "head.weight"), "{:?}", server.param_names);
        self.server = Some(server.clone());
        Ok(())
    }
    fn after_aggregation(&mut self, _ctx: &RoundContext, _previous: &ModelParams, aggregated: ModelParams) -> ModelParams {
        // The server runs the model on a one-node graph of its own.
        let server = self.server.as_ref().unwrap();
        let x = Features::Dense(DenseMatrix { rows: 1, cols: server.in_dim, data: vec![0.5; server.in_dim] });
        let out = server.forward(&aggregated, &Graph::empty(1), &x, 0).unwrap();
        let probs = burn::tensor::activation::softmax(out.logits, 1);
        self.own_graph_logits.get_or_insert(probs.into_data().convert::<f32>().try_into_vec::<f32>().unwrap());
        self.first_global.get_or_insert(aggregated.clone());
        aggregated
    }
    fn query(&mut self, ctx: &RoundContext, oracle: &dyn ClientOracle) -> fgl_sim::Result<()> {
        assert!(self.declare_query, "the oracle reached a strategy that did not declare query access");
        self.queries += 1;
        if ctx.round == 1 {
            assert_eq!(oracle.num_clients(), 5);
            let n = oracle.num_nodes(2);
            // An injected node without links: its output depends on its features only.
            let injection = Injection { features: vec![vec![0.5; self.server.as_ref().unwrap().in_dim]], links: vec![] };
            self.oracle_answer = Some(oracle.query(2, &injection).unwrap().remove(0));
            // Linked to a node of the client, it sees the client's graph.
            let linked = Injection { links: vec![(0, 0)], ..injection.clone() };
            let answer = oracle.query(2, &linked).unwrap().remove(0);
            assert_ne!(answer, self.oracle_answer.clone().unwrap());
            // The oracle answers from the injected node's neighbourhood only; the answer
            // is the one the client's whole graph gives.
            if let Some(local) = &self.client2 {
                let edges = local.graph.edges().chain([(n, 0)]);
                let (g, _) = Graph::from_edges(n + 1, edges, "test").unwrap();
                let x = local.features.with_rows_appended(&injection.features);
                let server = self.server.as_ref().unwrap();
                let out = server.forward(self.first_global.as_ref().unwrap(), &g, &x, 0).unwrap();
                let probs = burn::tensor::activation::softmax(out.logits, 1).into_data().convert::<f32>().try_into_vec::<f32>().unwrap();
                let c = answer.len();
                assert_eq!(answer, probs[n * c..(n + 1) * c].to_vec(), "oracle vs whole graph");
                // A client's KProp_x (LPGNN) smooths the features the server queries with
                // over the queried graph, as the client's defense smooths its own.
                let logits = |x: &Features, kprop| {
                    let out = server.forward(self.first_global.as_ref().unwrap(), &g, x, kprop).unwrap();
                    out.logits.into_data().convert::<f32>().try_into_vec::<f32>().unwrap()
                };
                let host = Features::Dense(fgl_sim::defenses::solitude::smooth_features(&g, &x.to_dense(), 2));
                let (smoothed, reference, raw) = (logits(&x, 2), logits(&host, 0), logits(&x, 0));
                let gap = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(p, q)| (p - q).abs()).fold(0f32, f32::max);
                assert!(gap(&smoothed, &reference) < 1e-4, "smoothed in the model vs on the host: {}", gap(&smoothed, &reference));
                assert!(gap(&raw, &reference) > 1e-3, "the smoothing changes the logits");
            }
            assert!(oracle.query(2, &Injection { links: vec![(0, n)], ..injection }).is_err());
        }
        Ok(())
    }
}

#[test]
fn the_server_runs_the_model_and_queries_only_when_it_declares_so() {
    let s = quickstart(&["model.head=true", "federation.rounds=2"]);
    let p = run::prepare(&s, None).unwrap();
    let mut honest = Prober::default();
    let r = run::federation(&s, &p, Default::default()).unwrap().run(&mut honest).unwrap();
    assert_eq!((honest.queries, r.threat_model), (0, ThreatModel::HonestButCurious));
    assert!(honest.own_graph_logits.is_some());

    let client2 = LocalData::of_client(&p.dataset, &p.clients[2], &p.split).unwrap();
    let mut querying = Prober { declare_query: true, client2: Some(client2), ..Default::default() };
    let r2 = run::federation(&s, &p, Default::default()).unwrap().run(&mut querying).unwrap();
    assert_eq!((querying.queries, r2.threat_model), (2, ThreatModel::QueryAccess));
    // Querying does not change training.
    assert_eq!(r.rounds, r2.rounds);
    // The oracle's answer for an isolated injected node equals the server's own forward
    // pass on a one-node graph with the same features, with the same (round-1) model.
    let (a, b) = (querying.oracle_answer.unwrap(), querying.own_graph_logits.unwrap());
    assert_eq!(a.len(), 4);
    for (x, y) in a.iter().zip(&b) {
        assert!((x - y).abs() < 1e-6, "{a:?} vs {b:?}");
    }
    // Plain FedAvg with every hook at its default trains the same as the observers.
    let r3 = run::federation(&s, &p, Default::default()).unwrap().run(&mut FedAvg).unwrap();
    assert_eq!(r3.rounds, r.rounds);
}

/// Label-DP in two stages composes after LDP on the features: stage 1 (plain RR) before
/// round 1, stage 2 in round 3 with the received global model as prior. Until round 3
/// half the labelled nodes are held back (the train loss is over fewer nodes), every one
/// is trained on afterwards, each label once: ε per label reported per client.
#[test]
fn staged_label_dp_composes_with_feature_ldp() {
    let yaml = "dataset: {name: synthetic, preprocess: {minmax: true}}\npartition: {clients: 3}\nfederation: {rounds: 4}\n\
                defenses:\n  - {name: feats, kind: ldp-features, epsilon: 2, mechanism: mbm}\n  \
                - {name: labels, kind: label-dp, epsilon: 1, mechanism: rr-with-prior, stages: [0.5, 0.5], stage_rounds: [1, 3], temperature: 0.5}\n";
    let scenario = Scenario::parse(yaml, "staged.yaml", &[]).unwrap();
    let prepared = run::prepare(&scenario, None).unwrap();
    let train_nodes: Vec<usize> =
        prepared.clients.iter().map(|c| c.nodes.iter().filter(|&&v| prepared.split.roles[v] == Role::Train).count()).collect();
    let mut fed = run::federation(&scenario, &prepared, Default::default()).unwrap();
    let result = fed.run(&mut FedAvg).unwrap();
    for (c, spent) in result.privacy.iter().enumerate() {
        let got: Vec<(&str, f64)> = spent.iter().map(|p| (p.defense.as_str(), p.epsilon)).collect();
        assert_eq!(got, [("feats", 2.0), ("labels", 1.0)], "client {c}");
        assert!(spent[1].protects.contains("2 stages"), "{}", spent[1].protects);
        assert_eq!(
            result.trained_label_counts[c].iter().sum::<usize>(),
            train_nodes[c],
            "client {c} trains on all its train nodes at the end"
        );
    }
    assert!(result.rounds.iter().all(|r| r.test_accuracy.is_finite()));
    // The same scenario and seed give the same numbers.
    let again = run::federation(&scenario, &prepared, Default::default()).unwrap().run(&mut FedAvg).unwrap();
    assert_eq!(again.rounds, result.rounds);
    assert_eq!(again.trained_label_counts, result.trained_label_counts);
}

/// DP-GNN replaces the local trainer after label-DP randomised the labels: both budgets
/// are reported per client, DP-GNN's ε is the accountant's for the client's own N,
/// steps and δ = 1/(10N), results repeat exactly, and a plan that would spend more than
/// `max_epsilon` is refused before training, naming the field.
#[test]
fn dp_gnn_trains_on_label_dp_labels_and_reports_its_budget() {
    use fgl_sim::privacy::accountant::{self, Conversion, Mechanism};
    let yaml = "dataset: {name: synthetic}\npartition: {clients: 3}\nfederation: {rounds: 3}\ntrain: {epochs: 2, optimizer: adam, lr: 0.01}\n\
                model: {arch: sage, layers: 2, hidden: 8, dropout: 0.0}\n\
                defenses:\n  - {name: labels, kind: label-dp, epsilon: 4}\n  - {name: dp, kind: dp-gnn, sigma: 1.5, max_degree: 3, batch_size: 16}\n";
    let scenario = Scenario::parse(yaml, "dp.yaml", &[]).unwrap();
    let prepared = run::prepare(&scenario, None).unwrap();
    let result = run::federation(&scenario, &prepared, Default::default()).unwrap().run(&mut FedAvg).unwrap();
    for (c, spent) in result.privacy.iter().enumerate() {
        assert_eq!(spent.iter().map(|p| p.defense.as_str()).collect::<Vec<_>>(), ["labels", "dp"]);
        let n = prepared.clients[c].nodes.iter().filter(|&&v| prepared.split.roles[v] == Role::Train).count();
        let steps = 3 * 2 * n.div_ceil(16) as u64;
        let mech = Mechanism::DpGnn { nodes: n, max_degree: 3, layers: 2, batch: 16 };
        let want =
            accountant::epsilon(&mech, 1.5, steps, 1.0 / (10.0 * n as f64), Conversion::Improved, &accountant::default_orders()).unwrap();
        assert_eq!((spent[1].epsilon, spent[1].delta), (want.epsilon, want.delta), "client {c}");
        assert!(spent[1].protects.contains(&format!("{steps} steps")), "{}", spent[1].protects);
    }
    let acc = result.rounds.last().unwrap().test_accuracy;
    assert!(acc.is_finite() && acc > 0.0, "{acc}");
    let again = run::federation(&scenario, &prepared, Default::default()).unwrap().run(&mut FedAvg).unwrap();
    assert_eq!(again.rounds, result.rounds);

    let capped = Scenario::parse(&yaml.replace("batch_size: 16", "batch_size: 16, max_epsilon: 0.5"), "dp.yaml", &[]).unwrap();
    let e = run::federation(&capped, &prepared, Default::default()).err().expect("over budget").to_string();
    assert!(e.contains("max_epsilon") && e.contains("client 0 would spend"), "{e}");
    // What needs no data is refused when the scenario loads, naming the field.
    let e = Scenario::parse(yaml, "dp.yaml", &["model.arch=gat".into()]).expect_err("gat").to_string();
    assert!(e.contains("model.arch") && e.contains("gcn and sage"), "{e}");
    let big = Scenario::parse(&yaml.replace("batch_size: 16", "batch_size: 100000"), "dp.yaml", &[]).unwrap();
    let e = run::federation(&big, &prepared, Default::default()).err().expect("batch").to_string();
    assert!(e.contains("batch_size") && e.contains("training nodes") && e.contains("small_clients: full-batch"), "{e}");
    // With `small_clients: full-batch` every client trains on all its nodes at each step
    // (B = N, one step per epoch), accounted so; K = 13 may exceed a client's N.
    let full = Scenario::parse(&yaml.replace("batch_size: 16", "batch_size: 100000, small_clients: full-batch"), "dp.yaml", &[]).unwrap();
    let result = run::federation(&full, &prepared, Default::default()).unwrap().run(&mut FedAvg).unwrap();
    for (c, spent) in result.privacy.iter().enumerate() {
        let n = prepared.clients[c].nodes.iter().filter(|&&v| prepared.split.roles[v] == Role::Train).count();
        let mech = Mechanism::DpGnn { nodes: n, max_degree: 3, layers: 2, batch: n };
        let want =
            accountant::epsilon(&mech, 1.5, 3 * 2, 1.0 / (10.0 * n as f64), Conversion::Improved, &accountant::default_orders()).unwrap();
        assert_eq!(spent[1].epsilon, want.epsilon, "client {c}");
        assert!(spent[1].protects.contains(&format!("B = {n},")) && spent[1].protects.contains("6 steps"), "{}", spent[1].protects);
    }
    assert!(result.rounds.last().unwrap().test_accuracy.is_finite());
}

/// `calibration: ec-lda-code` calibrates σ as the EC-LDA code does (its accountant, q = 1,
/// δ = 1e-5, one step per round) and says in every client's privacy record that this ε
/// is no guarantee; DP-GNN's own calibration reports its σ without the flag. The code's
/// batches hold every training node, so a smaller batch is refused, naming the field.
#[test]
fn dp_gnn_ec_lda_code_calibration_is_the_published_one_and_flagged() {
    use fgl_sim::privacy::ec_lda_code;
    let yaml = "dataset: {name: synthetic}\npartition: {clients: 3}\nfederation: {rounds: 4}\ntrain: {epochs: 1, optimizer: sgd, lr: 0.5}\n\
                model: {arch: gcn, layers: 2, hidden: 16, dropout: 0.0}\n\
                defenses:\n  - {name: dp, kind: dp-gnn, target_epsilon: 8, max_degree: 5, clip: 0.1, batch_size: 100000, small_clients: full-batch, calibration: ec-lda-code}\n";
    let scenario = Scenario::parse(yaml, "dp.yaml", &[]).unwrap();
    let prepared = run::prepare(&scenario, None).unwrap();
    let result = run::federation(&scenario, &prepared, Default::default()).unwrap().run(&mut FedAvg).unwrap();
    let sigma = ec_lda_code::sigma(8.0, 4, 1e-5).unwrap();
    for spent in &result.privacy {
        let p = &spent[0];
        assert_eq!(p.calibration.as_deref(), Some("ec-lda-code"));
        assert_eq!(p.noise_multiplier, Some(sigma));
        assert_eq!((p.epsilon, p.delta), (ec_lda_code::epsilon(sigma, 4, 1e-5).unwrap().0, 1e-5));
        assert!(p.protects.contains("no guarantee") && p.protects.contains("·6 on the sum"), "{}", p.protects);
    }
    assert!(result.rounds.iter().all(|r| r.test_accuracy.is_finite()));
    let again = run::federation(&scenario, &prepared, Default::default()).unwrap().run(&mut FedAvg).unwrap();
    assert_eq!(again.rounds, result.rounds);

    let faithful = Scenario::parse(&yaml.replace(", calibration: ec-lda-code", ""), "dp.yaml", &[]).unwrap();
    let result = run::federation(&faithful, &prepared, Default::default()).unwrap().run(&mut FedAvg).unwrap();
    for spent in &result.privacy {
        assert_eq!(spent[0].calibration, None);
        assert!(spent[0].noise_multiplier.is_some_and(|s| s > 0.0));
    }
    let small = Scenario::parse(&yaml.replace("batch_size: 100000", "batch_size: 8"), "dp.yaml", &[]).unwrap();
    let e = run::federation(&small, &prepared, Default::default()).err().expect("batch").to_string();
    assert!(e.contains("batch_size") && e.contains("ec-lda-code"), "{e}");
}

/// A paper table of the user's own, as data (a table file, a base scenario, a CSV of
/// published values): `reproduce table` runs it without a rebuild and writes
/// reproduce.csv under the common contract — the published value matched to its cell
/// by setting, `within` judged by the file's tolerance, the file's note on a miss.
#[test]
fn a_paper_table_of_ones_own_runs_from_data() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::copy("scenarios/quickstart.yaml", d.join("base.yaml")).unwrap();
    let table = "paper: my-paper\nbase: base.yaml\nepochs: 2\npaper_runs: 1\ntolerance_points: 1\npublished: published.csv\n\
                 intro: \"# My table on {dataset}, {runs} run(s)\\n\"\n\
                 notes: [{when: 'eps=1;', note: 'labels noised, as the paper did not'}]\n\
                 cells:\n\
                 - {id: clean, setting: {defense: none}, set: ['defenses=[none]']}\n\
                 - {id: labels, setting: {defense: ldp-labels, eps: 1}, set: ['defenses=[{kind: ldp-labels, epsilon: 1}]']}\n";
    std::fs::write(d.join("table.yaml"), table).unwrap();
    let published = "table,dataset,model,setting,metric,mean,ci95\ncentralized,synthetic,gcn,eps=1;defense=ldp-labels,test_accuracy,101,\n";
    std::fs::write(d.join("published.csv"), published).unwrap();
    let out = d.join("out");
    let args = ["--runs", "1", "--setting", "centralized"];
    let o = Command::new(env!("CARGO_BIN_EXE_fgl-sim"))
        .args(["reproduce", "table", d.join("table.yaml").to_str().unwrap(), "--out", out.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let csv = std::fs::read_to_string(out.join("reproduce.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], fgl_sim::reproduce::CSV_HEADER);
    assert_eq!(lines.len(), 3, "{csv}");
    assert!(lines[1].starts_with("my-paper,centralized,synthetic,gcn,defense=none,test_accuracy,1,"), "{}", lines[1]);
    assert!(lines[1].ends_with(",,,,"), "no published value: {}", lines[1]);
    // The setting's keys come in the contract's order. Accuracy ≤ 100 % is more than 1
    // point from 101: a miss, with the file's note (commas become `;`: the CSV is unquoted).
    let f: Vec<&str> = lines[2].split(',').collect();
    assert_eq!((f[0], f[4], f[9], f[10], f[11]), ("my-paper", "eps=1;defense=ldp-labels", "101", "", "false"), "{}", lines[2]);
    assert_eq!(f[12], "labels noised; as the paper did not");
    let md = std::fs::read_to_string(out.join("reproduce.md")).unwrap();
    assert!(md.starts_with("# My table on synthetic, 1 run(s)"), "{md}");

    // A bad table is refused naming the file and the field; nothing is written.
    std::fs::write(d.join("bad.yaml"), table.replace("eps: 1", "colour: 1")).unwrap();
    let out2 = d.join("out2");
    let o = Command::new(env!("CARGO_BIN_EXE_fgl-sim"))
        .args(["reproduce", "table", d.join("bad.yaml").to_str().unwrap(), "--out", out2.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("bad.yaml") && err.contains("cells[1].setting") && err.contains("unknown key `colour`"), "{err}");
    assert!(!out2.exists());
}

/// Records every update a client returns.
struct Capture(Vec<(ModelParams, ModelParams)>);

impl ServerStrategy for Capture {
    fn name(&self) -> &str {
        "capture"
    }
    fn after_update(&mut self, _ctx: &RoundContext, update: &ClientUpdate<'_>) -> fgl_sim::Result<()> {
        self.0.push((update.sent.clone(), update.returned.clone()));
        Ok(())
    }
}

/// Issue 27: the noise DP-GNN adds in a step was never checked, so a wrong scale would
/// silently invalidate every DP-GNN ε. One full-batch SGD step (lr 1) with a tiny fixed
/// clip C and a large σ: the update is −(Σ clipped gradients + N(0, s²))/B per
/// coordinate with s = σ·2K·√(Σ_l C²) = σ·2K·C·√T (T parameter tensors, K = D² + D + 1
/// for 2 layers), and the clipped sum moves each tensor by at most C/B in norm
/// (< 0.1 % of the noise here). Over the ~2 300 coordinates the sample standard deviation
/// has a relative standard error of ≈ 1.5 %: it must lie within 6 % (4 standard
/// errors) of lr·s/B, and the mean within 4 standard errors of 0.
#[test]
fn a_dp_gnn_step_adds_noise_of_the_accounted_scale() {
    let (sigma, clip, max_degree) = (100.0, 0.01, 2usize);
    let yaml = format!(
        "dataset: {{name: synthetic}}\nfederation: {{rounds: 1, centralized: true}}\n\
         train: {{epochs: 1, optimizer: sgd, lr: 1.0, weight_decay: 0.0, selection: last}}\n\
         model: {{arch: sage, layers: 2, hidden: 32, dropout: 0.0}}\n\
         defenses: [{{kind: dp-gnn, sigma: {sigma}, clip: {clip}, max_degree: {max_degree}, batch_size: 100000, small_clients: full-batch}}]\n"
    );
    let scenario = Scenario::parse(&yaml, "noise.yaml", &[]).unwrap();
    let prepared = run::prepare(&scenario, None).unwrap();
    let mut capture = Capture(Vec::new());
    let result = run::federation(&scenario, &prepared, Default::default()).unwrap().run(&mut capture).unwrap();
    assert_eq!(capture.0.len(), 1, "one client, one round");
    let (sent, returned) = &capture.0[0];
    let batch = prepared.clients[0].nodes.iter().filter(|&&v| prepared.split.roles[v] == Role::Train).count() as f64;
    let t = sent.tensors.len() as f64;
    let k = (max_degree * max_degree + max_degree + 1) as f64;
    let want = sigma * 2.0 * k * clip * t.sqrt() / batch;
    let delta: Vec<f64> = sent
        .tensors
        .iter()
        .zip(&returned.tensors)
        .flat_map(|(a, b)| a.values.iter().zip(&b.values).map(|(x, y)| f64::from(*y) - f64::from(*x)))
        .collect();
    let n = delta.len() as f64;
    let mean = delta.iter().sum::<f64>() / n;
    let std = (delta.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    assert!(n > 2000.0, "{n} coordinates");
    assert!((std / want - 1.0).abs() < 4.0 / (2.0 * n).sqrt(), "update std {std:.5} vs σ·2K·C·√T/B = {want:.5} ({n} coordinates)");
    assert!(mean.abs() < 4.0 * want / n.sqrt(), "update mean {mean:.5}");
    assert_eq!(result.privacy[0][0].noise_multiplier, Some(sigma));
}

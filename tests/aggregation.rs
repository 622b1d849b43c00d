//! Aggregation-side defenses and client sampling: DP-FedAvg by a trusted aggregator (the
//! server sees only the noised aggregate) or by the server itself, attacks on aggregates
//! scored against each client and the clients' union, Poisson sampling, the refusals.

mod common;

use common::fgl;
use serde_json::Value;

/// `fgl-sim run` of the quickstart (5 Louvain clients, 20 rounds, a head, no weight
/// decay as the attacks assume) into `out`, with `flags` and the `--set` overrides `sets`.
fn quickstart(out: &std::path::Path, flags: &[&str], sets: &[&str]) -> std::process::Output {
    let mut args = vec!["run", "scenarios/quickstart.yaml", "--quiet", "--out", out.to_str().unwrap()];
    args.extend(flags);
    for s in ["model.head=true", "train.weight_decay=0"].iter().chain(sets) {
        args.extend(["--set", s]);
    }
    fgl(&args, None)
}

/// [`quickstart`] with `sets`, which must succeed; its metrics.json.
fn run(out: &std::path::Path, sets: &[&str]) -> Value {
    let o = quickstart(out, &[], sets);
    assert!(o.status.success(), "{sets:?}: {}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap()
}

/// [`quickstart`] with `sets` is refused, its error holds every one of `words`, and
/// nothing is written.
fn refused(out: &std::path::Path, sets: &[&str], words: &[&str]) {
    let o = quickstart(out, &[], sets);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{sets:?} ran");
    for w in words {
        assert!(err.contains(w), "{sets:?}: `{w}` not in: {err}");
    }
    assert!(!out.exists());
}

fn attack<'a>(m: &'a Value, name: &str) -> &'a Value {
    m["attacks"].as_array().unwrap().iter().find(|a| a["attack"] == name).unwrap_or_else(|| panic!("no attack {name}"))
}

/// No noise to speak of (z·S = 1e-6) and no clipping: behind a trusted aggregator the
/// server sees one aggregate per round, every client in it (q = 1), and the passive LDA
/// on it infers the clients' joint distribution (cos-sim > 0.99 against their union),
/// so its per-client score is what that union explains (within 0.02 of the union's own
/// score against each client, and far below the 0.98 it gets from each client's own
/// update). Each inference is scored once per contributing client.
#[test]
fn behind_a_trusted_aggregator_the_attack_infers_the_joint_distribution() {
    let tmp = tempfile::tempdir().unwrap();
    let quiet = "defenses=[{kind: dp-fedavg, clip: 1000000, noise_multiplier: 0.000000000001}]";
    let m = run(&tmp.path().join("trusted"), &[quiet, "attacks=[lda, uniform]"]);
    for r in m["rounds"].as_array().unwrap() {
        assert_eq!(r["aggregated"], serde_json::json!([0, 1, 2, 3, 4]), "round {}", r["round"]);
    }
    let lda = attack(&m, "lda");
    let agg = &lda["aggregate"];
    assert_eq!(agg["inferences"], 1);
    assert_eq!(lda["reports"].as_array().unwrap().len(), 5);
    let (vs_union, explained, per_client) = (
        agg["vs_union"]["cos_sim"].as_f64().unwrap(),
        agg["union_vs_clients"]["cos_sim"].as_f64().unwrap(),
        lda["mean"]["cos_sim"].as_f64().unwrap(),
    );
    assert!(vs_union > 0.99, "{vs_union}");
    assert!((per_client - explained).abs() < 0.02, "{per_client} vs {explained}");

    let plain = run(&tmp.path().join("plain"), &["attacks=[lda]"]);
    assert!(attack(&plain, "lda").get("aggregate").is_none());
    assert!(plain["rounds"][0].get("aggregated").is_none());
    let own = attack(&plain, "lda")["mean"]["cos_sim"].as_f64().unwrap();
    assert!(own > 0.95 && own > per_client + 0.2, "{own} vs {per_client}");
}

/// `aggregator: server`: the server reads every update before it noises the sum, so in
/// round 1 (same initial model) the attack's inferences are exactly those of a run
/// without the defense; the guarantee says it does not hold against the server.
#[test]
fn a_server_that_aggregates_itself_reads_every_update() {
    let tmp = tempfile::tempdir().unwrap();
    let first = "attacks=[{kind: lda, rounds: [1]}]";
    let dp = run(&tmp.path().join("dp"), &["defenses=[{kind: dp-fedavg, clip: 1.0, noise_multiplier: 1.0, aggregator: server}]", first]);
    let plain = run(&tmp.path().join("plain"), &[first]);
    let est = |m: &Value| attack(m, "lda")["reports"].as_array().unwrap().iter().map(|r| r["estimate"].clone()).collect::<Vec<_>>();
    assert_eq!(est(&dp), est(&plain));
    assert!(attack(&dp, "lda").get("aggregate").is_none());
    let privacy = &dp["clients"][0]["privacy"][0];
    assert_eq!(privacy["defense"], "dp-fedavg");
    assert!(privacy["protects"].as_str().unwrap().contains("NOT against the server"));
}

/// Poisson sampling at q = 0.4 with a target ε = 4 over 20 rounds: the rounds' samples
/// differ, every client reports the ε spent (≤ 4, within 1 %), and the run repeats
/// bit for bit at 1 and 4 threads.
#[test]
fn poisson_sampling_with_a_target_epsilon_is_accounted_and_deterministic() {
    let tmp = tempfile::tempdir().unwrap();
    let sets = [
        "defenses=[{kind: dp-fedavg, clip: 1.0, epsilon: 4}]",
        "federation.client_fraction=0.4",
        "federation.sampling=poisson",
        "attacks=[lda]",
    ];
    let mut runs = Vec::new();
    for threads in ["1", "4"] {
        let out = tmp.path().join(threads);
        let o = quickstart(&out, &["--threads", threads], &sets);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let m: Value = serde_json::from_str(&std::fs::read_to_string(out.join("metrics.json")).unwrap()).unwrap();
        runs.push((m["rounds"].clone(), m["attacks"].clone(), m["clients"].clone()));
    }
    assert_eq!(runs[0], runs[1], "same numbers at 1 and 4 threads");
    let rounds = runs[0].0.as_array().unwrap();
    let samples: std::collections::BTreeSet<String> = rounds.iter().map(|r| r["selected"].to_string()).collect();
    assert!(samples.len() > 3, "the samples vary: {samples:?}");
    for c in runs[0].2.as_array().unwrap() {
        let eps = c["privacy"][0]["epsilon"].as_f64().unwrap();
        assert!(eps <= 4.0 + 1e-9 && eps > 3.96, "{eps}");
    }
}

/// What cannot work is refused before any work, naming the field and what is allowed.
#[test]
fn impossible_combinations_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("x");
    let check = |sets: &[&str], words: &[&str]| refused(&out, sets, words);
    let dp = "defenses=[dp-fedavg]";
    check(
        &[dp, "attacks=[lda, ilrg]"],
        &["attacks[1]", "`ilrg` needs each client's own update", "dp-fedavg", "read an aggregate: lda, ec-lda, uniform"],
    );
    check(&[dp, "attacks=[{kind: lda, gradient: exact}]"], &["own gradient", "dp-fedavg"]);
    check(&[dp, "federation.client_fraction=0.5"], &["federation.sampling", "poisson"]);
    check(
        &["defenses=[dp-fedavg, {name: dp2, kind: dp-fedavg, clip: 1, noise_multiplier: 1, aggregator: server}]"],
        &["each decide how the updates are aggregated"],
    );
    check(&["defenses=[{kind: dp-fedavg, clip: 1}]"], &["exactly one of `noise_multiplier` and `epsilon`"]);
    check(&["federation.clients_per_round=9"], &["federation.clients_per_round", "more than the federation's 5 clients"]);
    check(&["federation.clients_per_round=2", "federation.client_fraction=0.5"], &["either clients_per_round or client_fraction"]);
    check(&["federation.sampling=poisson", "federation.clients_per_round=2"], &["federation.clients_per_round", "sampling: fixed"]);
}

/// Secure aggregation gives the server FedAvg's aggregate and nothing else: without
/// dropouts the run's numbers are plain FedAvg's to fixed-point rounding (same test
/// accuracy, loss within 1e-6); behind it the passive LDA infers the union, per-client
/// iLRG is refused; with 30 % dropouts the protocol recovers (or aborts a round with its
/// reason), the aggregates hold only the survivors, and every message is counted.
#[test]
fn secure_aggregation_is_fedavg_for_the_server_and_survives_dropouts() {
    let tmp = tempfile::tempdir().unwrap();
    let plain = run(&tmp.path().join("plain"), &["attacks=[lda]"]);
    let secagg = run(&tmp.path().join("secagg"), &["defenses=[secagg]", "attacks=[lda]"]);
    assert_eq!(secagg["final"]["test_accuracy"], plain["final"]["test_accuracy"]);
    let (a, b) = (secagg["final"]["test_loss"].as_f64().unwrap(), plain["final"]["test_loss"].as_f64().unwrap());
    assert!((a - b).abs() < 1e-6, "{a} vs {b}");
    let lda = attack(&secagg, "lda");
    assert!(lda["aggregate"]["vs_union"]["cos_sim"].as_f64().unwrap() > 0.99);
    let rounds = secagg["upload_protocol"]["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 20);
    assert!(rounds.iter().all(|r| r["clients"] == 5 && r["dropped"] == 0 && r["bytes_per_client"].as_f64().unwrap() > 0.0));
    assert_eq!(secagg["timings"]["upload_ms"].as_array().unwrap().len(), 20);

    let dropping = run(&tmp.path().join("drop"), &["defenses=[{kind: secagg, dropout: 0.3}]", "attacks=[uniform]"]);
    let costs = dropping["upload_protocol"]["rounds"].as_array().unwrap();
    let dropped: u64 = costs.iter().map(|r| r["dropped"].as_u64().unwrap()).sum();
    assert!(dropped > 10, "{dropped} dropouts in 100 client-rounds at 30 %");
    for (r, c) in dropping["rounds"].as_array().unwrap().iter().zip(costs) {
        let held = r["aggregated"].as_array().unwrap().len() as u64;
        match c.get("aborted") {
            Some(why) => assert!(held == 0 && why.as_str().unwrap().contains("nothing aggregated")),
            None => assert_eq!(held, 5 - c["dropped"].as_u64().unwrap()),
        }
    }
    let summary = std::fs::read_to_string(tmp.path().join("drop/summary.md")).unwrap();
    assert!(summary.contains("**Upload protocol** `secagg`"), "{summary}");

    refused(&tmp.path().join("x"), &["defenses=[secagg]", "attacks=[ilrg]"], &["`secagg` gives the server only their aggregate"]);
}

/// The combination: distributed DP under secure aggregation. The clients add the noise
/// in shares before masking, so the server sees only noised sums; every client reports
/// the same ε as DP-FedAvg with the same q, z and rounds, and says it holds against the
/// server too.
#[test]
fn distributed_dp_under_secure_aggregation_spends_what_dp_fedavg_does() {
    let tmp = tempfile::tempdir().unwrap();
    let both = run(
        &tmp.path().join("both"),
        &["defenses=[{kind: secagg, dp: {clip: 1, noise_multiplier: 1.2, min_clients: 5}}]", "attacks=[lda]"],
    );
    let central = run(&tmp.path().join("central"), &["defenses=[{kind: dp-fedavg, clip: 1, noise_multiplier: 1.2}]", "attacks=[lda]"]);
    let p = &both["clients"][0]["privacy"][0];
    assert_eq!(p["defense"], "secagg");
    assert_eq!(p["epsilon"], central["clients"][0]["privacy"][0]["epsilon"]);
    assert!(p["protects"].as_str().unwrap().contains("against the server too"));
    assert!(attack(&both, "lda")["aggregate"]["inferences"] == 1);
    assert!(both["final"]["test_accuracy"].as_f64().unwrap().is_finite());
    refused(&tmp.path().join("x"), &["defenses=[{kind: secagg, dp: {clip: 1, noise_multiplier: 1, min_clients: 9}}]"], &["dp.min_clients"]);
    // A target ε instead of z: calibrated over the rounds as DP-FedAvg's (the same z,
    // the same ε, at most the target and within 1 % of it).
    let by_eps = run(&tmp.path().join("eps"), &["defenses=[{kind: secagg, dp: {clip: 1, epsilon: 4, min_clients: 5}}]"]);
    let central = run(&tmp.path().join("central-eps"), &["defenses=[{kind: dp-fedavg, clip: 1, epsilon: 4}]"]);
    let (p, c) = (&by_eps["clients"][0]["privacy"][0], &central["clients"][0]["privacy"][0]);
    let eps = p["epsilon"].as_f64().unwrap();
    assert!(eps <= 4.0 && eps > 3.96, "ε {eps}");
    assert_eq!((&p["epsilon"], &p["noise_multiplier"]), (&c["epsilon"], &c["noise_multiplier"]));
    assert!(p["noise_multiplier"].as_f64().unwrap() > 0.0);
    refused(
        &tmp.path().join("y"),
        &["defenses=[{kind: secagg, dp: {clip: 1, noise_multiplier: 1, epsilon: 4, min_clients: 5}}]"],
        &["dp.noise_multiplier", "exactly one of `noise_multiplier` and `epsilon`"],
    );
    refused(&tmp.path().join("z"), &["defenses=[{kind: secagg, dp: {clip: 1, epsilon: -1, min_clients: 5}}]"], &["dp.epsilon"]);
}

/// The active EC-LDA behind secure aggregation: it compresses the broadcast as usual, but
/// reads only the aggregate, so it recovers the clients' joint distribution (cos-sim
/// above 0.99 against their union) and per client no more than that union explains
/// (within 0.02), where on each client's own update it is exact (above 0.99).
#[test]
fn ec_lda_behind_secure_aggregation_infers_only_the_joint_distribution() {
    let tmp = tempfile::tempdir().unwrap();
    let open = run(&tmp.path().join("open"), &["attacks=[ec-lda]"]);
    assert!(attack(&open, "ec-lda")["mean"]["cos_sim"].as_f64().unwrap() > 0.99);
    let hidden = run(&tmp.path().join("hidden"), &["defenses=[secagg]", "attacks=[ec-lda]"]);
    let a = attack(&hidden, "ec-lda");
    let (per_client, vs_union, explained) = (
        a["mean"]["cos_sim"].as_f64().unwrap(),
        a["aggregate"]["vs_union"]["cos_sim"].as_f64().unwrap(),
        a["aggregate"]["union_vs_clients"]["cos_sim"].as_f64().unwrap(),
    );
    assert!(vs_union > 0.99, "{vs_union}");
    assert!((per_client - explained).abs() < 0.02, "{per_client} vs {explained}");
}

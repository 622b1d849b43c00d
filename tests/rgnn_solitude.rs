//! RGNN and Solitude end to end: graph calibration on a generated graph with planted
//! fake edges, the parameter errors, and (with the real Cora files; they fail under
//! `CI=true` when the data is missing) cells of both reproduction tables.

mod common;

use fgl_sim::run::{self, RunOptions};
use fgl_sim::scenario::Scenario;

use common::{fgl, rows};

/// The quickstart's generated graph (1 000 nodes, 4 000 edges, homophily 0.8),
/// centralized, SAGE.
fn synthetic(defense: &str, extra: &[&str]) -> Scenario {
    let mut o = vec![
        "federation.centralized=true".to_string(),
        "federation.rounds=1".into(),
        "model.arch=sage".into(),
        "train.optimizer=adam".into(),
        "train.lr=0.01".into(),
        "train.weight_decay=0".into(),
        "train.epochs=100".into(),
        format!("defenses=[{defense}]"),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    Scenario::parse(include_str!("../scenarios/quickstart.yaml"), "quickstart", &o).unwrap()
}

/// Edge RR at ε_a = 5 plants ≈ 1 000·999/(1 + e⁵) ≈ 6 700 fake arcs among ≈ 8 000 true
/// ones (clean features, so the task gradient can tell them apart). With a large weight
/// on the GNN loss (γ = 10⁴: the mean loss's gradient per arc is ~1e-5) Eq. 14's A^c
/// must weigh fake arcs clearly less than true ones (measured: 0.80 against 0.91);
/// without the task term (γ = 0) the L1 pull and the Frobenius pull balance at A' and
/// nothing moves.
#[test]
fn calibration_weighs_planted_fake_edges_down() {
    let effects = |gamma: &str| {
        let s = synthetic(&format!("{{kind: solitude, epsilon_x: .inf, epsilon_a: 5, kx: 0, ky: 0, gamma: {gamma}}}"), &[]);
        let p = run::prepare(&s, None).unwrap();
        let fed = run::train(&s, &p, &RunOptions { quiet: true, ..RunOptions::default() }).unwrap();
        let privacy = &fed.privacy[0];
        assert_eq!(privacy.len(), 2, "the edge mechanism's line and calibration's");
        assert_eq!((privacy[0].epsilon, privacy[1].epsilon), (f64::INFINITY, 0.0), "ε_x = ∞ + ε_a; calibration is post-processing");
        (privacy[0].effects.clone(), privacy[1].effects.clone())
    };
    let (edges, calib) = effects("10000");
    let chance = edges["noisy_edges_fake"] / edges["noisy_edges"];
    assert!((0.3..0.6).contains(&chance), "fake share of the reported graph {chance}");
    let (fake, real) = (calib["calibration_mean_weight_fake"], calib["calibration_mean_weight_true"]);
    assert!(fake < real - 0.05 && real < 0.99, "mean weight of fake arcs {fake}, of true arcs {real}");
    let (_, calib) = effects("0");
    assert_eq!(calib["calibration_removed"], 0.0);
    assert!(calib["calibration_mean_weight"] > 0.999, "{calib:?}");
}

/// Bad parameters: one message naming the field and what is allowed, non-zero exit,
/// nothing written.
#[test]
fn bad_rgnn_and_edge_parameters_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let grouped = "dataset.preprocess={group_columns: 4}";
    let cases: [(&str, &str, &str); 8] = [
        // The generated features are Gaussian: GRR-FS needs discrete codes.
        ("{kind: rgnn, epsilon_x: 1, m: 2, epsilon_y: 1}", "seed=0", "GRR-FS needs discrete features"),
        ("{kind: rgnn, epsilon_x: 1, m: 100, epsilon_y: 1}", grouped, "m = 100 exceeds d = 8"),
        ("{kind: rgnn, epsilon_x: 1, m: 2, epsilon_y: 1, domain_size: 1}", grouped, "defense `rgnn`: domain_size"),
        ("{kind: rgnn, epsilon_x: 0, epsilon_y: 1}", "seed=0", "ε must be > 0"),
        ("{kind: edge-ldp, epsilon: 1, max_edges: 5000}", "seed=0", "the smallest ε that fits is"),
        ("{kind: solitude, epsilon_x: 1, epsilon_a: 8, kx: 4, ky: 2, lambda2: -1}", "seed=0", "defense `solitude`: lambda2"),
        ("{kind: solitude, epsilon_x: .inf, epsilon_a: 8, kx: 4, ky: 2}", "model.arch=gat", "GAT ignores them"),
        ("{kind: edge-ldp, epsilon: 8}, {kind: dp-gnn, target_epsilon: 8}", "seed=0", "dp-gnn needs the client's undirected graph"),
    ];
    for (i, (defense, extra, expected)) in cases.iter().enumerate() {
        let out = tmp.path().join(format!("r{i}"));
        let o = fgl(
            &[
                "run",
                "scenarios/quickstart.yaml",
                "--set",
                &format!("defenses=[{defense}]"),
                "--set",
                extra,
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{defense}: succeeded");
        assert!(err.contains(expected), "{defense}: {err}");
        assert!(!out.join("metrics.json").exists(), "{defense}: wrote results");
    }
}

/// RGNN on Cora, 3 runs per cell, centralized: the reconstruction is what makes the
/// perturbed data learnable (RGNN well above GraphSAGE on the perturbed data at the
/// same ε), and accuracy falls with ε_y. Each cell's value and the paper's are in the
/// CSV; REPRODUCTION.md's tolerance is not asserted (see the issue note).
#[test]
fn rgnn_cells_on_cora() {
    let Some(data) = common::data_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("rgnn");
    let mut args = vec!["reproduce", "rgnn", "--runs", "3", "--setting", "centralized", "--out", out.to_str().unwrap()];
    for c in ["rgnn-y3", "rgnn-y0.5", "perturbed-y3"] {
        args.extend(["--cell", c]);
    }
    let o = fgl(&args, Some(&data));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows(&out);
    assert_eq!(rows.len(), 3);
    let acc: Vec<f64> = rows.iter().map(|r| r[7].parse().unwrap()).collect();
    assert_eq!(rows[0][4], "method=rgnn;eps_x=1;eps_y=3;kx=16;ky=16");
    assert_eq!((&rows[0][0][..], &rows[0][9][..]), ("rgnn", "77.8"));
    assert!(acc[0] > acc[2] + 25.0 && acc[0] > acc[1] + 15.0, "{acc:?}");
}

/// Solitude on Cora: the federated setting (10 clients, each perturbing and calibrating
/// its own subgraph) runs and reports what calibration removed.
#[test]
fn solitude_federated_on_cora_reports_calibration() {
    let Some(data) = common::data_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sol");
    let args = [
        "reproduce",
        "solitude",
        "--runs",
        "1",
        "--epochs",
        "50",
        "--setting",
        "federated",
        "--cell",
        "solitude-a8",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = fgl(&args, Some(&data));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows(&out);
    assert_eq!((rows.len(), &rows[0][1][..], &rows[0][4][..]), (1, "federated", "method=solitude;eps_x=1;eps_a=8;kx=4;ky=2"));
    // Issue 27: `> 30` sat at Cora's majority class (30.2 %) and could not fail. Seed 0
    // scores 75.8 (2026-11-25); 60 leaves room for other kernels, not for a broken pipeline.
    let acc: f64 = rows[0][7].parse().unwrap();
    assert!(acc > 60.0, "{acc}");
    assert!(std::fs::read_to_string(out.join("reproduce.md")).unwrap().contains("removed by calibration"));
}

/// Solitude's other settings from the same command: CiteSeer's largest connected
/// component (2 120 of 3 327 nodes, as PyG's `LargestConnectedComponents`) with GCN; the
/// CSV's model column says which backbone, and there is no paper value to compare with.
#[test]
fn solitude_on_citeseer_lcc_with_gcn() {
    let Some(data) = common::data_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("sol");
    let args = [
        "reproduce",
        "solitude",
        "--dataset",
        "planetoid-citeseer",
        "--lcc",
        "--model",
        "gcn",
        "--runs",
        "1",
        "--epochs",
        "30",
        "--setting",
        "centralized",
        "--cell",
        "lpgnn-a8",
        "--out",
        out.to_str().unwrap(),
    ];
    let o = fgl(&args, Some(&data));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows = rows(&out);
    assert_eq!((rows.len(), &rows[0][3][..], &rows[0][9][..]), (1, "gcn", ""));
    let metrics = std::fs::read_to_string(out.join("centralized/cells/cell=lpgnn-a8/seed=0/metrics.json")).unwrap();
    assert!(metrics.contains("\"nodes\": 2120"), "{metrics}");
    assert!(
        std::fs::read_to_string(out.join("reproduce.md"))
            .unwrap()
            .starts_with("# Solitude reproduction: planetoid-citeseer (largest connected component), GCN")
    );
}

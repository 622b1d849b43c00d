//! Issue 27: resumable federations. A run stopped at a round boundary and resumed from
//! its checkpoint gives the `metrics.json` of the same run uninterrupted, bit for bit
//! (timings aside), for every built-in defense and attack; a real SIGINT stops a run with
//! a checkpoint and `run --resume` finishes it; a stopped matrix goes on from its runs'
//! checkpoints.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use fgl_sim::fed::Progress;
use fgl_sim::run::{self, RunOptions};
use fgl_sim::scenario::Scenario;

/// `metrics.json` without its timings (the only part that may differ between runs).
fn numbers(metrics: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(metrics).unwrap();
    v.as_object_mut().unwrap().remove("timings");
    v
}

fn scenario(overrides: &[String]) -> Scenario {
    Scenario::load(Path::new("scenarios/quickstart.yaml"), overrides).unwrap()
}

/// A stop flag and the progress hook that raises it after round `n` (as a signal would).
fn stopping_after(n: usize) -> (Arc<AtomicBool>, Progress) {
    let stop = Arc::new(AtomicBool::new(false));
    let raise = stop.clone();
    let hook: Arc<dyn Fn(usize, usize) + Send + Sync> = Arc::new(move |round, _| raise.store(round == n, Ordering::SeqCst));
    (stop, Progress::Hook(hook))
}

/// Run `s` stopped after round `stop_after` (the progress hook raises the stop flag, as
/// a signal would), then resumed from the checkpoint; returns (uninterrupted, resumed)
/// metrics without timings.
fn interrupted_and_resumed(s: &Scenario, stop_after: usize, every: Option<usize>) -> (serde_json::Value, serde_json::Value) {
    let quiet = RunOptions { quiet: true, ..Default::default() };
    let full = run::execute(s, "resume", &quiet).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let checkpoint = tmp.path().join("ck.cbor");
    let (stop, progress) = stopping_after(stop_after);
    let opts = RunOptions {
        checkpoint: Some(checkpoint.clone()),
        checkpoint_every: every,
        stop: Some(stop),
        progress: Some(progress),
        ..quiet.clone()
    };
    let e = run::execute(s, "resume", &opts).err().expect("the run stops");
    assert!(matches!(e, fgl_sim::error::Error::Interrupted(_)), "{e}");
    assert!(e.to_string().contains(&format!("after round {stop_after} of")), "{e}");
    let saved = run::read_checkpoint(&checkpoint).unwrap();
    assert_eq!(saved.fed.round, stop_after);
    let resumed = run::execute(s, "resume", &RunOptions { checkpoint: Some(checkpoint), ..quiet }).unwrap();
    (numbers(&full.metrics), numbers(&resumed.metrics))
}

/// Every built-in defense and attack, stopped after round 2 of 4 and resumed: the same
/// numbers as uninterrupted (the quickstart adapted as in the thread-identity test).
/// Extra cases put state across the checkpoint on purpose: label-DP's second stage and
/// EC-LDA's attack round come after it, DP-GNN's estimated thresholds and the EC-LDA
/// code's running sums are made before it, Adam's moments are kept between rounds.
#[test]
fn every_defense_and_attack_resumes_to_the_uninterrupted_numbers() {
    let base = ["federation.rounds=4", "train.epochs=2", "model.head=true", "train.weight_decay=0"];
    let mut cases = common::every_preset();
    let extra: [(&str, &[&str]); 5] = [
        (
            "label-dp in two stages",
            &["defenses=[{kind: label-dp, mechanism: rr-with-prior, prior: global-model, stages: [0.5, 0.5], epsilon: 1}]"],
        ),
        ("ec-lda attacking in round 4", &["attacks=[{kind: ec-lda, rounds: [4]}]"]),
        (
            "dp-gnn, the EC-LDA code's calibration",
            &["defenses=[{kind: dp-gnn, calibration: ec-lda-code, sigma: 1, batch_size: 1000, small_clients: full-batch}]"],
        ),
        ("adam kept between rounds", &["train.optimizer=adam", "train.lr=0.01", "train.keep_optimizer_state=true"]),
        ("ec-lda against dp-gnn", &["defenses=[dp-gnn]", "attacks=[ec-lda, uniform]"]),
    ];
    for (what, o) in extra {
        cases.push((what.to_string(), o.iter().map(|s| s.to_string()).collect()));
    }
    let mut differ = Vec::new();
    for (what, extra) in cases {
        let o: Vec<String> = base.iter().map(|s| s.to_string()).chain(extra).collect();
        let s = scenario(&o);
        let (full, resumed) = interrupted_and_resumed(&s, 2, None);
        if full != resumed {
            differ.push(what.clone());
        }
        assert!(full["final"]["test_accuracy"].as_f64().is_some_and(f64::is_finite), "{what}: {}", full["final"]);
    }
    assert!(differ.is_empty(), "resumed after round 2, the numbers differ for: {differ:?}");
}

/// Runs that differ only in their attacks share their first rounds (`fgl-sim matrix`
/// runs them once): for every defense, the passive attacks' run leaves its state after
/// round 2 and EC-LDA's run goes on from it (both act in round 3 of 4); each ends with
/// the numbers it gives alone from round 1. A strategy that acts within the shared
/// rounds, or another scenario, is refused.
///
/// EC-LDA discards its round 3, so where nothing in the round depends on its number
/// its round 4 is the passive run's round 3, and it takes it from there: exactly where
/// no trainer draws from the round's stream (no dropout, no DP noise), no round
/// transform, upload protocol or per-round state (a learned graph, kept optimizer
/// moments) is involved — and the numbers are still its own.
#[test]
fn runs_sharing_their_first_rounds_end_with_their_own_numbers() {
    use fgl_sim::fed::checkpoint::SharedRounds;
    let base = ["federation.rounds=4", "train.epochs=2", "model.head=true", "train.weight_decay=0", "model.dropout=0"];
    let rounds = |kinds: &[&str]| {
        format!("attacks=[{}]", kinds.iter().map(|k| format!("{{kind: {k}, rounds: [3]}}")).collect::<Vec<_>>().join(", "))
    };
    let active = rounds(&["ec-lda"]);
    let mut cases: Vec<(String, Vec<String>)> =
        common::every_preset().into_iter().filter(|(what, _)| what.starts_with("defense")).collect();
    cases.push((
        "label-dp in two stages".into(),
        vec!["defenses=[{kind: label-dp, mechanism: rr-with-prior, prior: global-model, stages: [0.5, 0.5], epsilon: 1}]".into()],
    ));
    cases.push((
        "adam kept between rounds".into(),
        vec!["train.optimizer=adam".into(), "train.lr=0.01".into(), "train.keep_optimizer_state=true".into()],
    ));
    cases.push(("dropout".into(), vec!["model.dropout=0.5".into()]));
    let quiet = RunOptions { quiet: true, ..Default::default() };
    let (mut differ, mut took) = (Vec::new(), Vec::new());
    for (what, extra) in cases {
        // Behind an aggregate only the attacks that read one apply.
        let passive = match what.contains("secagg") || what.contains("dp-fedavg") {
            true => rounds(&["lda", "uniform"]),
            false => rounds(&["lda", "ilrg", "llg-star", "infiltrator", "uniform"]),
        };
        let (passive, active) = match what.as_str() {
            // Adam's update is not a multiple of the gradient: the attacks read the exact one.
            "adam kept between rounds" => (
                "attacks=[{kind: lda, rounds: [3], gradient: exact}, {kind: infiltrator, rounds: [3]}]".to_string(),
                "attacks=[{kind: ec-lda, rounds: [3], gradient: exact}]".to_string(),
            ),
            _ => (passive, active.clone()),
        };
        let with = |attacks: &str| {
            scenario(&base.iter().map(|s| s.to_string()).chain(extra.clone()).chain([attacks.to_string()]).collect::<Vec<_>>())
        };
        let (first, second) = (with(&passive), with(&active));
        let shared = Arc::new(SharedRounds::new(2, run::shared_key(&first)));
        let opts = RunOptions { shared: Some(shared.clone()), ..quiet.clone() };
        let first_shared = run::execute(&first, "shared", &opts).unwrap();
        assert!(shared.is_filled(), "{what}");
        let second_shared = run::execute(&second, "shared", &opts).unwrap();
        let went_on: serde_json::Value = serde_json::from_str(&second_shared.metrics).unwrap();
        assert_eq!(went_on["timings"]["shared_rounds"], 2, "{what}");
        let left: serde_json::Value = serde_json::from_str(&first_shared.metrics).unwrap();
        assert!(left["timings"].get("tail_rounds").is_none(), "{what}");
        if let Some(n) = went_on["timings"].get("tail_rounds") {
            assert_eq!(n, 1, "{what}");
            took.push(what.clone());
        }
        let alone = |s: &Scenario| numbers(&run::execute(s, "shared", &quiet).unwrap().metrics);
        if numbers(&first_shared.metrics) != alone(&first) || numbers(&second_shared.metrics) != alone(&second) {
            differ.push(what);
        }
    }
    assert!(differ.is_empty(), "going on from shared rounds, the numbers differ for: {differ:?}");
    let expected = ["none", "ldp-labels", "ldp-features", "lpgnn", "label-dp", "rgnn", "edge-ldp"].map(|d| format!("defense {d}"));
    assert_eq!(took, expected, "the runs that took their last round from the sibling's");

    // EC-LDA acting in round 2 cannot share rounds 1–2; nor can another scenario.
    let s = scenario(&base.iter().map(|s| s.to_string()).chain(["attacks=[{kind: ec-lda, rounds: [2]}]".to_string()]).collect::<Vec<_>>());
    let opts = RunOptions { shared: Some(Arc::new(SharedRounds::new(2, run::shared_key(&s)))), ..quiet.clone() };
    let e = run::execute(&s, "shared", &opts).err().unwrap().to_string();
    assert!(e.contains("not plain FedAvg through round 2"), "{e}");
    let other = scenario(&["seed=1".to_string()]);
    let e = run::execute(&other, "shared", &opts).err().unwrap().to_string();
    assert!(e.contains("another scenario"), "{e}");
}

/// Checkpoints saved every round along the way change nothing, and a run can be stopped
/// and resumed more than once.
#[test]
fn checkpoints_every_round_and_a_second_stop_change_nothing() {
    let s = scenario(&["federation.rounds=5".into(), "attacks=[ec-lda]".into(), "model.head=true".into()]);
    let (full, resumed) = interrupted_and_resumed(&s, 1, Some(1));
    assert_eq!(full, resumed);
    // Stopped after round 1, again after round 3, then finished.
    let tmp = tempfile::tempdir().unwrap();
    let checkpoint = tmp.path().join("ck.cbor");
    for stop_after in [1, 3] {
        let (stop, progress) = stopping_after(stop_after);
        let opts = RunOptions {
            quiet: true,
            checkpoint: Some(checkpoint.clone()),
            stop: Some(stop),
            progress: Some(progress),
            ..Default::default()
        };
        assert!(run::execute(&s, "resume", &opts).is_err());
        assert_eq!(run::read_checkpoint(&checkpoint).unwrap().fed.round, stop_after);
    }
    let done = run::execute(&s, "resume", &RunOptions { quiet: true, checkpoint: Some(checkpoint), ..Default::default() }).unwrap();
    assert_eq!(numbers(&done.metrics), full);
}

/// A checkpoint is refused by a run of another scenario, and a damaged one names the file.
#[test]
fn a_checkpoint_of_another_scenario_or_a_damaged_one_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let checkpoint = tmp.path().join("ck.cbor");
    let s = scenario(&["federation.rounds=3".into()]);
    // Raised before round 1: nothing to save.
    let opts =
        RunOptions { quiet: true, checkpoint: Some(checkpoint.clone()), stop: Some(Arc::new(AtomicBool::new(true))), ..Default::default() };
    let e = run::execute(&s, "resume", &opts).err().unwrap().to_string();
    assert!(e.contains("before round 1") && !checkpoint.exists(), "{e}");
    let (stop, progress) = stopping_after(1);
    let opts = RunOptions { stop: Some(stop), progress: Some(progress), ..opts };
    assert!(run::execute(&s, "resume", &opts).is_err());
    assert_eq!(run::read_checkpoint(&checkpoint).unwrap().fed.round, 1);
    let other = scenario(&["federation.rounds=3".into(), "seed=1".into()]);
    let e = run::execute(&other, "resume", &RunOptions { quiet: true, checkpoint: Some(checkpoint.clone()), ..Default::default() })
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("ck.cbor") && e.contains("another scenario"), "{e}");
    let bytes = std::fs::read(&checkpoint).unwrap();
    std::fs::write(&checkpoint, &bytes[..bytes.len() / 3]).unwrap();
    let e = run::execute(&s, "resume", &RunOptions { quiet: true, checkpoint: Some(checkpoint), ..Default::default() })
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("ck.cbor") && e.contains("cannot be read back"), "{e}");
}

/// `fgl-sim ARGS --checkpoint-every 1`, sent one SIGINT as soon as `saved()` says a
/// checkpoint is on disk; its output once it has exited.
fn sigint_once_saved(args: &[String], saved: impl Fn() -> bool) -> std::process::Output {
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fgl-sim"))
        .args(args)
        .args(["--checkpoint-every", "1"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    while !saved() {
        assert!(start.elapsed().as_secs() < 120, "no checkpoint after 2 minutes");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    child.wait_with_output().unwrap()
}

/// `fgl-sim run` under a real SIGINT: exit 130 at a round boundary with a checkpoint and
/// the command that goes on; the plain command then refuses the directory; `--resume`
/// finishes the run to the uninterrupted numbers and removes the checkpoint.
#[test]
fn sigint_stops_a_run_with_a_checkpoint_and_resume_finishes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (stopped, whole) = (tmp.path().join("stopped run"), tmp.path().join("whole"));
    let args = |out: &Path| -> Vec<String> {
        ["run", "scenarios/quickstart.yaml", "--set", "federation.rounds=1000", "--quiet", "--out"]
            .iter()
            .map(|s| s.to_string())
            .chain([out.display().to_string()])
            .collect()
    };
    let checkpoint = stopped.join("checkpoint.cbor");
    let out = sigint_once_saved(&args(&stopped), || checkpoint.exists());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("fgl-sim run --resume") && stderr.contains("stopped after round"), "{stderr}");
    let round = run::read_checkpoint(&checkpoint).unwrap().fed.round;
    assert!((1..1000).contains(&round), "{round}");
    assert!(!stopped.join("metrics.json").exists());

    let again = common::fgl(&args(&stopped).iter().map(String::as_str).collect::<Vec<_>>(), None);
    let e = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success() && e.contains("checkpoint of an interrupted run") && e.contains("--resume"), "{e}");

    let resumed = common::fgl(&["run", "--resume", &stopped.display().to_string(), "--quiet"], None);
    assert!(resumed.status.success(), "{}", String::from_utf8_lossy(&resumed.stderr));
    assert!(!checkpoint.exists(), "a finished run keeps no checkpoint");
    let direct = common::fgl(&args(&whole).iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert!(direct.status.success());
    let read = |d: &Path| numbers(&std::fs::read_to_string(d.join("metrics.json")).unwrap());
    assert_eq!(read(&stopped), read(&whole));
    // Nothing left to resume.
    let e = common::fgl(&["run", "--resume", &stopped.display().to_string()], None);
    assert!(String::from_utf8_lossy(&e.stderr).contains("finished run"), "{}", String::from_utf8_lossy(&e.stderr));
}

/// `fgl-sim matrix` under a real SIGINT: exit 130 with the runs in progress saved under
/// `<out>/checkpoints/`; the same command then goes on from them (it does not start those
/// runs again from round 1), and `cells.csv` matches a matrix run uninterrupted (timings
/// aside).
#[test]
fn sigint_stops_a_matrix_and_the_rerun_goes_on_from_the_checkpoints() {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize("scenarios/quickstart.yaml").unwrap();
    let file = tmp.path().join("long.yaml");
    std::fs::write(
        &file,
        format!(
            "base: {}\nset: {{federation.rounds: 600, model.head: true, train.weight_decay: 0.0}}\nattacks: [ec-lda]\ndefenses: [none]\nseeds: 2\n",
            base.display()
        ),
    )
    .unwrap();
    let (stopped, whole) = (tmp.path().join("stopped"), tmp.path().join("whole"));
    let matrix = |out: &Path| -> Vec<String> {
        ["matrix", &file.display().to_string(), "--jobs", "1", "--quiet", "--out", &out.display().to_string()]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let checkpoints = stopped.join("checkpoints");
    let saved = || -> Vec<std::path::PathBuf> {
        let Ok(cells) = std::fs::read_dir(&checkpoints) else { return Vec::new() };
        cells.flatten().flat_map(|c| std::fs::read_dir(c.path()).into_iter().flatten().flatten().map(|e| e.path())).collect()
    };
    let out = sigint_once_saved(&matrix(&stopped), || saved().iter().any(|p| p.extension().is_some_and(|e| e == "cbor")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("checkpoints") && stderr.contains("run the same command again"), "{stderr}");
    let kept: Vec<_> = saved().into_iter().filter(|p| p.extension().is_some_and(|e| e == "cbor")).collect();
    assert_eq!(kept.len(), 1, "one run was in progress: {kept:?}");
    let state = run::read_checkpoint(&kept[0]).unwrap().fed;
    assert!((1..600).contains(&state.round), "{}", state.round);
    // Its run directory, once finished: cells/<cell>/seed=<s>/ for checkpoints/<cell>/seed=<s>.cbor.
    let cell = kept[0].parent().unwrap().file_name().unwrap();
    let run_dir = stopped.join("cells").join(cell).join(kept[0].file_stem().unwrap());

    let again = common::fgl(&matrix(&stopped).iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    assert!(saved().iter().all(|p| p.extension().is_none_or(|e| e != "cbor")), "finished runs keep no checkpoint");
    // Gone on from the checkpoint: the rounds before it keep the wall-clock times measured
    // before the signal (a run started again would have measured them anew).
    let metrics: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(run_dir.join("metrics.json")).unwrap()).unwrap();
    let seconds: Vec<f64> = metrics["timings"]["round_seconds"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
    assert_eq!(seconds[..state.round], state.round_seconds[..]);
    let direct = common::fgl(&matrix(&whole).iter().map(String::as_str).collect::<Vec<_>>(), None);
    assert!(direct.status.success());
    // Everything but the last two columns (train_seconds, total_seconds).
    let cells = |d: &Path| -> Vec<String> {
        let csv = std::fs::read_to_string(d.join("cells.csv")).unwrap();
        csv.lines().map(|l| l.rsplitn(3, ',').nth(2).unwrap().to_string()).collect()
    };
    assert_eq!(cells(&stopped), cells(&whole));
    assert!(cells(&whole).iter().skip(1).all(|l| l.contains(",finished,")), "{:?}", cells(&whole));
}

//! Issue 27's probe set, as one table: every input the issue found crashing, hanging,
//! losing results or silently wrong, and the valid edge inputs beside them, run through
//! the binary as a user would. Each probe is classified by what the process did (clean
//! error, success, panic, allocation abort, hang) and must end as expected; the counts are
//! printed (`cargo test --release --test probes -- --nocapture`) for the issue's note.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Longer than any probe needs by two orders of magnitude: past it, a probe hangs.
const HANG: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq)]
enum Outcome {
    /// Non-zero exit (1 or clap's 2), stderr starting `error: `, no panic or backtrace.
    CleanError,
    Success,
    Panic,
    /// Rust's "memory allocation of N bytes failed" abort, or killed by a signal.
    Abort,
    Hang,
    /// Non-zero exit without a clean message.
    Unclear,
}

struct Probe {
    name: String,
    args: Vec<String>,
    data: Option<PathBuf>,
    /// Expected outcome and, for a clean error, what its message must name.
    expect: Outcome,
    needles: Vec<String>,
}

fn probe(name: &str, args: &[&str], expect: Outcome, needles: &[&str]) -> Probe {
    Probe {
        name: name.into(),
        args: args.iter().map(|s| s.to_string()).collect(),
        data: None,
        expect,
        needles: needles.iter().map(|s| s.to_string()).collect(),
    }
}

/// `run scenarios/quickstart.yaml` with `sets`, into `out`, short.
fn quickstart(name: &str, sets: &[&str], out: &Path, expect: Outcome, needles: &[&str]) -> Probe {
    let mut args = vec!["run".to_string(), "scenarios/quickstart.yaml".into(), "--quiet".into(), "--force".into()];
    args.extend(["--out".into(), out.display().to_string(), "--set".into(), "federation.rounds=2".into()]);
    for s in sets {
        args.extend(["--set".to_string(), s.to_string()]);
    }
    Probe { name: name.into(), args, data: None, expect, needles: needles.iter().map(|s| s.to_string()).collect() }
}

/// `scenario check` of the quickstart on dataset `name` (loaded from `data`) instead of
/// its synthetic graph.
fn load(name: &str, dataset: &str, data: &Path, needles: &[&str]) -> Probe {
    let set = format!("dataset={{name: {dataset}}}");
    Probe {
        data: Some(data.to_path_buf()),
        ..probe(name, &["scenario", "check", "scenarios/quickstart.yaml", "--set", &set], Outcome::CleanError, needles)
    }
}

/// `run` of the quickstart on dataset `name` (loaded from `data`), one round.
fn train_on(name: &str, dataset: &str, data: &Path, out: &Path, needles: &[&str]) -> Probe {
    let set = format!("dataset={{name: {dataset}}}");
    Probe { data: Some(data.to_path_buf()), ..quickstart(name, &[&set, "federation.rounds=1"], out, Outcome::CleanError, needles) }
}

fn run(p: &Probe) -> (Outcome, String, Duration) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_fgl-sim"));
    cmd.args(&p.args).env_remove("FGL_DATA_DIR").stdout(Stdio::null()).stderr(Stdio::piped());
    if let Some(d) = &p.data {
        cmd.arg("--data-dir").arg(d);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("run fgl-sim");
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || std::io::read_to_string(stderr).unwrap_or_default());
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if start.elapsed() > HANG {
            child.kill().ok();
            child.wait().ok();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = start.elapsed();
    let err = reader.join().unwrap();
    let outcome = match status.map(|s| s.code()) {
        None => Outcome::Hang,
        Some(Some(0)) => Outcome::Success,
        _ if err.contains("panicked") => Outcome::Panic,
        Some(Some(101)) => Outcome::Panic,
        Some(None) | Some(Some(134)) => Outcome::Abort,
        _ if err.contains("memory allocation of") => Outcome::Abort,
        Some(Some(1 | 2)) if err.starts_with("error: ") && !err.contains("stack backtrace") => Outcome::CleanError,
        Some(Some(_)) => Outcome::Unclear,
    };
    (outcome, err, took)
}

/// The npy member `member` of `npz` with its payload bytes from `at` replaced by `bytes`,
/// written as `dest`.
fn patch_npz(npz: &Path, member: &str, at: usize, bytes: &[u8], dest: &Path) {
    let members = common::npz_members(npz);
    let k = members.iter().position(|(n, _)| n == member).unwrap();
    let mut m = members[k].1.clone();
    let header = 10 + u16::from_le_bytes([m[8], m[9]]) as usize;
    m[header + at..header + at + bytes.len()].copy_from_slice(bytes);
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    common::write_npz(dest, &members, k, &m);
}

/// `from/rel` copied to `to/rel`, with `edit` applied to its text.
fn copy_edited(from: &Path, to: &Path, rel: &str, edit: impl Fn(String) -> String) {
    let text = std::fs::read_to_string(from.join(rel)).unwrap();
    std::fs::create_dir_all(to.join(rel).parent().unwrap()).unwrap();
    std::fs::write(to.join(rel), edit(text)).unwrap();
}

#[test]
fn issue_27_probe_set() {
    let Some(data) = common::data_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let t = tmp.path();
    let out = t.join("run");
    let max = u64::MAX.to_string();
    use Outcome::{CleanError, Success};
    let mut probes = Vec::new();

    // A privacy figure silently wrong: D = u64::MAX wrapped K to 0 and reported ε = 0.
    probes.push(quickstart(
        "dp-gnn max_degree u64::MAX",
        &["model.layers=1", &format!("defenses=[{{kind: dp-gnn, sigma: 1, max_degree: {max}}}]")],
        &out,
        CleanError,
        &["max_degree", "overflows"],
    ));
    probes.push(probe(
        "privacy epsilon --max-degree u64::MAX",
        &[
            "privacy",
            "epsilon",
            "--accountant",
            "dp-gnn",
            "--nodes",
            "126",
            "--max-degree",
            &max,
            "--layers",
            "1",
            "--batch",
            "64",
            "--sigma",
            "1",
            "--steps",
            "20",
        ],
        CleanError,
        &["overflows"],
    ));

    // Results lost or mixed: a directory another live writer holds; a killed writer's
    // leftovers; a matrix pointed at another matrix's directory.
    let held = t.join("held");
    std::fs::create_dir_all(&held).unwrap();
    std::fs::write(held.join(".fgl-sim.lock"), std::process::id().to_string()).unwrap();
    probes.push(quickstart("--out held by a live writer", &[], &held, CleanError, &["another fgl-sim", "is writing here"]));
    let killed = t.join("killed");
    std::fs::create_dir_all(&killed).unwrap();
    std::fs::write(killed.join("scenario.resolved.yaml"), "seed: 1\n").unwrap();
    std::fs::write(killed.join(".summary.md.tmp-4000000000-1"), "half").unwrap();
    let mut rerun = quickstart("rerun after SIGKILL during the final writes", &[], &killed, Success, &[]);
    rerun.args.retain(|a| a != "--force");
    probes.push(rerun);
    let other = t.join("other-matrix");
    std::fs::create_dir_all(other.join("cells/some-other-cell")).unwrap();
    probes.push(probe(
        "matrix into another matrix's --out",
        &["matrix", "scenarios/matrix/quick.yaml", "--quiet", "--out", other.to_str().unwrap()],
        CleanError,
        &["another matrix's directory", "some-other-cell"],
    ));

    // Crashes on large values: capacity-overflow panics and allocation aborts. (A data file
    // with 10⁹ feature columns is sparse, so it loads; the model it asks for is refused.)
    for field in ["federation.rounds", "model.hidden", "model.heads", "dataset.synthetic.nodes"] {
        probes.push(quickstart(&format!("{field} = u64::MAX"), &[&format!("{field}={max}")], &out, CleanError, &[field]));
    }
    for (field, value) in [
        ("federation.rounds", "1000000000000"),
        ("model.hidden", "100000000"),
        ("model.heads", "100000"),
        ("dataset.synthetic.feature_dim", "100000000"),
        ("dataset.synthetic.avg_degree", "12000"),
        ("model.kprop_steps", "1000000000"),
    ] {
        // The memory estimate names the synthetic fields without their prefix.
        let named = field.trim_start_matches("dataset.synthetic.");
        probes.push(quickstart(&format!("{field} = {value}"), &[&format!("{field}={value}")], &out, CleanError, &[named]));
    }
    probes.push(quickstart(
        "train.epochs = 1000000000000",
        &["train.epochs=1000000000000"],
        &out,
        CleanError,
        &["train.epochs", "allowed 1..=1000000"],
    ));
    probes.push(quickstart(
        "solitude adjacency_steps = 1000000000",
        &["dataset.preprocess={minmax: true}", "defenses=[{kind: solitude, epsilon_x: 1, epsilon_a: 8, adjacency_steps: 1000000000}]"],
        &out,
        CleanError,
        &["adjacency_steps", "allowed 1..=1000"],
    ));
    probes.push(quickstart(
        "lpgnn kx = 1000000000",
        &["defenses=[{kind: lpgnn, epsilon_x: .inf, epsilon_y: 1, kx: 1000000000}]"],
        &out,
        CleanError,
        &["defense `lpgnn`: kx", "allowed 0..=1024"],
    ));
    let mut huge = quickstart(
        "50 M synthetic nodes",
        &["dataset.synthetic.nodes=50000000"],
        &out,
        CleanError,
        &["dataset.synthetic.nodes", "GiB", "limit of 16 GiB"],
    );
    huge.args.extend(["--max-memory".into(), "16G".into()]);
    probes.push(huge);
    let seeds = t.join("seeds.yaml");
    let quick = std::fs::read_to_string("scenarios/matrix/quick.yaml").unwrap();
    let abs_base = std::fs::canonicalize("scenarios/quickstart.yaml").unwrap();
    let at_base = |text: &str| text.replace("../quickstart.yaml", abs_base.to_str().unwrap());
    std::fs::write(&seeds, at_base(&quick.replace("seeds: 3", "seeds: 100000000000"))).unwrap();
    probes.push(probe("matrix seeds: 100000000000", &["matrix", seeds.to_str().unwrap(), "--dry-run"], CleanError, &["seeds"]));
    let npz_cols = t.join("npz-cols");
    patch_npz(
        &data.join("gnn_benchmark_npz/cora.npz"),
        "attr_shape.npy",
        8,
        &1_000_000_000i64.to_le_bytes(),
        &npz_cols.join("gnn_benchmark_npz/cora.npz"),
    );
    probes.push(train_on("npz attr_shape of 1e9 columns", "cora", &npz_cols, &out, &["--max-memory", "2708 × 1000000000 sparse"]));
    let musae = t.join("musae-id");
    copy_edited(&data, &musae, "facebook_page_page/facebook.json", |s| s.replacen("[2835,", "[999999999,", 1));
    std::fs::copy(data.join("facebook_page_page/facebook_edges.csv"), musae.join("facebook_page_page/facebook_edges.csv")).unwrap();
    std::fs::copy(data.join("facebook_page_page/facebook_target.csv"), musae.join("facebook_page_page/facebook_target.csv")).unwrap();
    probes.push(train_on(
        "MUSAE feature id 999999999",
        "facebook",
        &musae,
        &out,
        &["--max-memory", "the feature dimension", "dataset `facebook`"],
    ));

    // Bad data accepted silently: NaN in Cora's features, a bad LastFM class.
    let nan = t.join("nan");
    patch_npz(
        &data.join("gnn_benchmark_npz/cora.npz"),
        "attr_data.npy",
        0,
        &f32::NAN.to_le_bytes(),
        &nan.join("gnn_benchmark_npz/cora.npz"),
    );
    probes.push(load("NaN in Cora's features", "cora", &nan, &["cora.npz", "holds NaN", "must be finite"]));
    for class in ["rock", "-7", "4000000000"] {
        let dir = t.join(format!("lastfm-{class}"));
        copy_edited(&data, &dir, "lastfm_asia/lastfm_asia_target.csv", |s| s.replacen("0,8\n", &format!("0,{class}\n"), 1));
        std::fs::copy(data.join("lastfm_asia/lastfm_asia_edges.csv"), dir.join("lastfm_asia/lastfm_asia_edges.csv")).unwrap();
        probes.push(load(&format!("LastFM class `{class}`"), "lastfm", &dir, &["lastfm_asia_target.csv", "line 2"]));
    }
    // Training to a non-finite loss exited 0.
    probes.push(quickstart("lr = 1e30", &["train.lr=1e30"], &out, CleanError, &["non-finite"]));
    probes.push(quickstart(
        "ldp-features Laplace at ε = 1e-300",
        &["dataset.preprocess={minmax: true}", "defenses=[{kind: ldp-features, mechanism: lpm, epsilon: 1e-300}]"],
        &out,
        CleanError,
        &["non-finite"],
    ));

    // Hangs: a 200 000-level YAML list, --threads 100000.
    let deep = t.join("deep.yaml");
    std::fs::write(&deep, format!("description: {}{}\n", "[".repeat(200_000), "]".repeat(200_000))).unwrap();
    probes.push(probe(
        "200 000-level nested YAML",
        &["scenario", "check", deep.to_str().unwrap()],
        CleanError,
        &["deep.yaml", "deeper than 128"],
    ));
    let mut threads = quickstart("--threads 100000", &[], &out, CleanError, &["--threads", "1024 at most"]);
    threads.args.extend(["--threads".into(), "100000".into()]);
    probes.push(threads);

    // Unclear messages.
    let negative = t.join("negative.yaml");
    std::fs::write(&negative, at_base(&quick.replace("seeds: 3", "seeds: -1"))).unwrap();
    probes.push(probe("matrix seeds: -1", &["matrix", negative.to_str().unwrap(), "--dry-run"], CleanError, &["seeds", "allowed"]));
    probes.push(quickstart("--set defenses[0].epsilon=3", &["defenses[0].epsilon=3"], &out, CleanError, &["cannot be set by index"]));

    // Valid edge inputs beside them: handled, not refused.
    // Under the nesting limit the parser runs on (to the field's own type error).
    let limit = t.join("limit.yaml");
    std::fs::write(&limit, format!("description: {}{}\n", "[".repeat(100), "]".repeat(100))).unwrap();
    probes.push(probe("100-level nested YAML", &["scenario", "check", limit.to_str().unwrap()], CleanError, &["invalid type: sequence"]));
    probes.push(quickstart("one round, one hidden unit", &["federation.rounds=1", "model.hidden=1"], &out, Success, &[]));
    probes.push(quickstart("GAT with one head", &["model.arch=gat", "model.heads=1"], &out, Success, &[]));
    probes.push(quickstart("ldp-labels at ε = 1e300", &["defenses=[{kind: ldp-labels, epsilon: 1e300}]"], &out, Success, &[]));
    let one_seed = t.join("one-seed.yaml");
    std::fs::write(&one_seed, at_base(&quick.replace("seeds: 3", "seeds: 1"))).unwrap();
    probes.push(probe("matrix seeds: 1", &["matrix", one_seed.to_str().unwrap(), "--dry-run"], Success, &[]));
    probes.push(load("real LastFM", "lastfm", &data, &[]));
    probes.last_mut().unwrap().expect = Success;

    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    let mut wrong = Vec::new();
    for p in &probes {
        let (outcome, err, took) = run(p);
        *counts.entry(format!("{outcome:?}")).or_default() += 1;
        let first = err.lines().next().unwrap_or("");
        println!(
            "{:<48} {:<10} {:>7.0} ms  {}",
            p.name,
            format!("{outcome:?}"),
            took.as_secs_f64() * 1e3,
            first.chars().take(140).collect::<String>()
        );
        let missing: Vec<&String> = p.needles.iter().filter(|n| !err.contains(n.as_str())).collect();
        if outcome != p.expect || !missing.is_empty() {
            wrong.push(format!("{}: {outcome:?} (expected {:?}), missing {missing:?}: {err}", p.name, p.expect));
        }
    }
    println!("{} probes: {counts:?}", probes.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

//! `fgl-sim matrix`: expansion of the axes, bad files, failing cells, `--jobs`
//! independence, kill + resume, slices by `--only`, emitted jobs + `--collect`, and the HTML report in a real
//! headless browser.

use std::path::{Path, PathBuf};
use std::process::Command;

use fgl_sim::matrix::Matrix;

const BIN: &str = env!("CARGO_BIN_EXE_fgl-sim");

/// A small synthetic scenario (runs take a fraction of a second).
const BASE: &str = "scenario:
  dataset: {name: synthetic, synthetic: {nodes: 300, classes: 3, avg_degree: 6, feature_dim: 16}}
  partition: {method: louvain, clients: 3}
  model: {arch: gcn, layers: 2, hidden: 8, head: true}
  train: {optimizer: sgd, lr: 0.2, weight_decay: 0.0, epochs: 2}
  federation: {rounds: 4}
";

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// LDA and the uniform guess against no defense and label RR at ε 1 and 4, `seeds` seeds.
fn lda_matrix(dir: &Path, seeds: usize) -> PathBuf {
    let text =
        format!("{BASE}attacks: [lda, uniform]\ndefenses: [none, {{preset: ldp-labels, sweep: {{epsilon: [1, 4]}}}}]\nseeds: {seeds}\n");
    write(dir, "m.yaml", &text)
}

fn load(text: &str) -> Result<Matrix, String> {
    let tmp = tempfile::tempdir().unwrap();
    Matrix::load(&write(tmp.path(), "m.yaml", text)).map_err(|e| e.to_string())
}

#[test]
fn axes_expand_in_a_fixed_order_with_names_from_their_values() {
    let text = format!(
        "{BASE}models: [gcn, sage]\nattacks: [lda, uniform]\ndefenses:\n  - none\n  - preset: ldp-labels\n    sweep: {{epsilon: [1, .inf]}}\nsweep: {{train.lr: [0.1, 0.2]}}\nseeds: 2\n"
    );
    let m = load(&text).unwrap();
    assert_eq!(m.name, "m");
    // 2 models × 2 attacks × 3 defenses (none, ε = 1, ∞) × 2 learning rates.
    assert_eq!(m.cells.len(), 24);
    assert_eq!(m.runs().len(), 48);
    assert_eq!(m.seeds, [0, 1]);
    assert_eq!(m.columns, ["dataset", "model", "attack", "defense", "defense.epsilon", "train.lr"]);
    let ids: Vec<&str> = m.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids[0], "model=gcn,attack=lda,defense=none,train.lr=0.1");
    assert_eq!(ids[1], "model=gcn,attack=lda,defense=none,train.lr=0.2");
    assert_eq!(ids[2], "model=gcn,attack=lda,defense=ldp-labels,defense.epsilon=1,train.lr=0.1");
    assert_eq!(ids[5], "model=gcn,attack=lda,defense=ldp-labels,defense.epsilon=inf,train.lr=0.2");
    assert_eq!(ids[6], "model=gcn,attack=uniform,defense=none,train.lr=0.1");
    assert_eq!(ids[23], "model=sage,attack=uniform,defense=ldp-labels,defense.epsilon=inf,train.lr=0.2");
    let c = &m.cells[5];
    assert_eq!(
        c.params,
        [Some("synthetic"), Some("gcn"), Some("lda"), Some("ldp-labels"), Some("inf"), Some("0.2")].map(|s| s.map(String::from))
    );
    assert_eq!(m.cells[0].params[4], None, "no ε where the defense has none");
    // The cell's scenario carries its values.
    assert_eq!(c.scenario.train.lr, 0.2);
    assert_eq!(c.scenario.defenses.len(), 1);
    assert!(c.scenario.to_yaml().contains("epsilon: inf"), "{}", c.scenario.to_yaml());
    assert_eq!(m.cells[23].scenario.model.arch, fgl_sim::model::Arch::Sage);
    assert_eq!(c.scenario_for(1).seed, 1);
    // Deterministic: the same file expands to the same cells.
    let again = load(&text).unwrap();
    assert_eq!(again.cells.iter().map(|c| c.id.clone()).collect::<Vec<_>>(), ids);
    // A list entry: attacks observing one federation; `a+b` sweeps two fields together;
    // `with` sets scenario paths in that defense's cells only.
    let m = load(&format!(
        "{BASE}attacks: [ec-lda, [lda, uniform]]\ndefenses:\n  - none\n  - preset: lpgnn\n    sweep: {{epsilon_x+epsilon_y: [1, 4]}}\n    with: {{train.epochs: 1}}\n"
    ))
    .unwrap();
    let ids: Vec<&str> = m.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "attack=ec-lda,defense=none",
            "attack=ec-lda,defense=lpgnn,defense.epsilon_x+epsilon_y=1",
            "attack=ec-lda,defense=lpgnn,defense.epsilon_x+epsilon_y=4",
            "attack=lda+uniform,defense=none",
            "attack=lda+uniform,defense=lpgnn,defense.epsilon_x+epsilon_y=1",
            "attack=lda+uniform,defense=lpgnn,defense.epsilon_x+epsilon_y=4",
        ]
    );
    assert_eq!(m.cells[3].scenario.attacks.iter().map(|a| a.name.as_str()).collect::<Vec<_>>(), ["lda", "uniform"]);
    let yaml = m.cells[5].scenario.to_yaml();
    assert!(yaml.contains("epsilon_x: 4.0") && yaml.contains("epsilon_y: 4.0"), "{yaml}");
    assert_eq!((m.cells[5].scenario.train.epochs, m.cells[3].scenario.train.epochs), (1, 2), "`with` only in its own cells");
    // A real dataset beside a synthetic base drops the generator's parameters.
    let m = load(&format!("{BASE}datasets: [synthetic, cora]\n")).unwrap();
    assert_eq!(m.cells.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["dataset=synthetic", "dataset=cora"]);
    assert_eq!(m.cells[0].scenario.synthetic().nodes, 300);
    assert_eq!((m.cells[1].scenario.dataset.name.as_str(), m.cells[1].scenario.dataset.synthetic.is_none()), ("cora", true));
    // No axes: one cell, the base.
    let m = load(BASE).unwrap();
    assert_eq!((m.cells.len(), m.cells[0].id.as_str(), m.seeds.as_slice()), (1, "base", &[0u64][..]));
}

/// A preset's nested parameter is swept by its dotted path (secagg's distributed DP at
/// several ε): one cell per value, named by the path, each scenario with its value and
/// the `set` fields beside it; an unknown nested field is named by the typed check.
#[test]
fn nested_preset_fields_are_swept_by_their_path() {
    let text = format!(
        "{BASE}attacks: [lda]\ndefenses:\n  - preset: secagg\n    name: sdp\n    set: {{dp: {{clip: 1.0, min_clients: 3}}}}\n    sweep: {{dp.epsilon: [1, 4]}}\n"
    );
    let m = load(&text).unwrap();
    let ids: Vec<&str> = m.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["attack=lda,defense=sdp,defense.dp.epsilon=1", "attack=lda,defense=sdp,defense.dp.epsilon=4"]);
    for (cell, eps) in m.cells.iter().zip([1.0, 4.0]) {
        let yaml = cell.scenario.to_yaml();
        assert!(yaml.contains(&format!("epsilon: {eps:?}")) && yaml.contains("min_clients: 3") && yaml.contains("clip: 1.0"), "{yaml}");
    }
    let e =
        load(&format!("{BASE}defenses: [{{preset: secagg, set: {{dp: {{clip: 1.0, min_clients: 3}}}}, sweep: {{dp.epsilonn: [1]}}}}]\n"))
            .unwrap_err();
    assert!(e.contains("epsilonn"), "{e}");
}

#[test]
fn bad_matrix_files_fail_with_the_field_named() {
    let cases: &[(&str, &[&str])] = &[
        ("sweep: {train.lrr: [0.1]}", &["train.lrr", "unknown field `lrr`"]),
        ("attacks: []", &["attacks", "empty"]),
        ("sweep: {train.lr: []}", &["sweep.train.lr", "empty"]),
        ("defenses: [nope]", &["defenses[0]", "unknown preset `nope`"]),
        ("attacks: [lda, lda]", &["attack=lda", "appears twice"]),
        ("defenses: [{preset: ldp-labels, sweep: {epsilonn: [1]}}]", &["unknown field `epsilonn`"]),
        ("defenses: [{preset: ldp-labels, sweep: {epsilon: [0]}}]", &["epsilon", "> 0"]),
        ("defenses: [{preset: ldp-labels, swep: {epsilon: [1]}}]", &["defenses[0]", "swep", "allowed: preset, name, set, sweep"]),
        ("seeds: [1, 1]", &["seeds", "twice"]),
        ("seeds: 0", &["seeds", "at least 1"]),
        // Issue 27: `seeds: -1` said "untagged enum Seeds"; 1e11 seeds aborted allocating.
        ("seeds: -1", &["seeds", "-1 is not allowed", "a count 1..=10000"]),
        ("seeds: 100000000000", &["seeds", "100000000000 is not allowed"]),
        ("seeds: [0, x]", &["seeds", "x in the list is not a seed"]),
        ("seeds: {a: 1}", &["seeds", "is not allowed"]),
        ("axes: {x: [1]}", &["unknown field `axes`"]),
        ("models: [gcnn]", &["model.arch", "gcnn"]),
        ("sweep: {seed: [1, 2]}", &["sweep.seed", "seeds:"]),
    ];
    for (extra, needles) in cases {
        let e = load(&format!("{BASE}{extra}\n")).unwrap_err();
        assert!(e.starts_with("matrix "), "{e}");
        for n in *needles {
            assert!(e.contains(n), "`{extra}`: `{n}` not in: {e}");
        }
    }
    let e = load("seeds: 2\n").unwrap_err();
    assert!(e.contains("base") && e.contains("missing"), "{e}");
    let e = load("base: nowhere.yaml\n").unwrap_err();
    assert!(e.contains("nowhere.yaml") && e.contains("cannot read"), "{e}");
    // The command refuses before running anything: no results directory appears.
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "bad.yaml", &format!("{BASE}attacks: [lda, nope]\n"));
    let out = tmp.path().join("out");
    let o = Command::new(BIN).args(["matrix", f.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("attacks[1]") && err.contains("nope"), "{err}");
    assert!(!out.exists(), "nothing is written for a bad matrix");
}

/// The rows of `cells.csv` without the timing columns (the last two).
fn csv_without_timings(dir: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(dir.join("cells.csv")).unwrap();
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header = r.headers().unwrap().clone();
    assert_eq!(&header.iter().rev().take(2).collect::<Vec<_>>(), &["total_seconds", "train_seconds"]);
    let n = header.len() - 2;
    std::iter::once(header.iter().take(n).collect::<Vec<_>>().join(","))
        .chain(r.records().map(|rec| rec.unwrap().iter().take(n).collect::<Vec<_>>().join(",")))
        .collect()
}

fn matrix_cmd(file: &Path, out: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(BIN).args(["matrix", file.to_str().unwrap(), "--out", out.to_str().unwrap(), "--quiet"]).args(extra).output().unwrap()
}

/// Every run directory under `out/cells`: (cell, seed dir, files), and no hidden leftovers.
fn run_dirs(out: &Path) -> Vec<(String, String, Vec<String>)> {
    let mut all = Vec::new();
    for cell in std::fs::read_dir(out.join("cells")).unwrap() {
        let cell = cell.unwrap();
        for run in std::fs::read_dir(cell.path()).unwrap() {
            let run = run.unwrap();
            // A run in flight writes into a hidden sibling (`.seed=S.tmp-…`) renamed into
            // place when whole; one killed mid-write leaves that sibling, never a run.
            if run.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            let mut files: Vec<String> =
                std::fs::read_dir(run.path()).unwrap().map(|f| f.unwrap().file_name().to_string_lossy().to_string()).collect();
            files.sort();
            all.push((cell.file_name().to_string_lossy().to_string(), run.file_name().to_string_lossy().to_string(), files));
        }
    }
    all.sort();
    all
}

#[test]
fn a_failing_cell_is_reported_while_the_others_finish_and_jobs_do_not_change_results() {
    let tmp = tempfile::tempdir().unwrap();
    // 5000 clients on 300 nodes fails once the data is loaded, not at expansion.
    let f = write(tmp.path(), "m.yaml", &format!("{BASE}attacks: [lda, uniform]\nsweep: {{partition.clients: [3, 5000]}}\nseeds: 2\n"));
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let o = matrix_cmd(&f, &a, &["--jobs", "1"]);
    assert!(!o.status.success(), "a failed run makes the exit status non-zero");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("4 of 8 run(s) failed") && err.contains("rerun"), "{err}");
    let dirs = run_dirs(&a);
    assert_eq!(dirs.len(), 8);
    for (cell, _, files) in &dirs {
        let want: &[&str] = if cell.contains("clients=5000") {
            &["error.txt", "scenario.resolved.yaml"]
        } else {
            &["metrics.json", "scenario.resolved.yaml", "summary.md"]
        };
        assert_eq!(files, want, "{cell}");
    }
    let csv = csv_without_timings(&a);
    assert_eq!(csv.len(), 9);
    assert_eq!(csv.iter().filter(|r| r.contains(",failed,")).count(), 4);
    assert!(csv.iter().filter(|r| r.contains(",failed,")).all(|r| r.contains("partition.clients") && r.contains("5000")), "{csv:?}");
    let md = std::fs::read_to_string(a.join("report.md")).unwrap();
    assert!(md.contains("## Failed runs") && md.contains("4 failed"), "{md}");
    let html = std::fs::read_to_string(a.join("report.html")).unwrap();
    assert!(html.contains("Failed runs") && html.contains("seed 1 failed"), "failed runs listed in the HTML");

    let o = matrix_cmd(&f, &b, &["--jobs", "2"]);
    assert!(!o.status.success());
    assert_eq!(csv_without_timings(&a), csv_without_timings(&b), "--jobs 1 and --jobs 2 give the same cells.csv");
    // The finished runs' metrics are identical, not just the CSV's columns.
    for (cell, seed, files) in run_dirs(&a) {
        if files.contains(&"metrics.json".to_string()) {
            let strip = |d: &Path| {
                let mut j: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(d.join("cells").join(&cell).join(&seed).join("metrics.json")).unwrap())
                        .unwrap();
                j.as_object_mut().unwrap().remove("timings");
                j
            };
            assert_eq!(strip(&a), strip(&b), "{cell} {seed}");
        }
    }
}

#[test]
fn a_killed_matrix_resumes_and_ends_as_an_uninterrupted_one() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "m.yaml",
        &format!(
            "{BASE}attacks: [lda, uniform, ec-lda]\ndefenses: [none, {{preset: ldp-labels, sweep: {{epsilon: [1, 4]}}}}]\nseeds: 2\nset: {{federation.rounds: 12}}\n"
        ),
    );
    let (killed, whole) = (tmp.path().join("killed"), tmp.path().join("whole"));
    let mut child = Command::new(BIN)
        .args(["matrix", f.to_str().unwrap(), "--out", killed.to_str().unwrap(), "--quiet", "--jobs", "2"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let finished = |out: &Path| run_dirs(out).into_iter().filter(|(_, _, f)| f.contains(&"metrics.json".to_string())).count();
    let t = std::time::Instant::now();
    while !killed.join("cells").exists() || finished(&killed) < 3 {
        assert!(t.elapsed().as_secs() < 120, "no run finished in 2 minutes");
        assert!(child.try_wait().unwrap().is_none(), "the matrix ended before it could be killed");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let before = run_dirs(&killed);
    let n_before = before.len();
    assert!(n_before < 18, "killed before the end ({n_before} of 18 runs)");
    // Every run directory present is whole: killed runs left none.
    for (cell, seed, files) in &before {
        assert_eq!(files, &["metrics.json", "scenario.resolved.yaml", "summary.md"], "{cell}/{seed}");
    }
    let stamp = |out: &Path| -> Vec<std::time::SystemTime> {
        before
            .iter()
            .map(|(c, s, _)| std::fs::metadata(out.join("cells").join(c).join(s).join("metrics.json")).unwrap().modified().unwrap())
            .collect()
    };
    let times = stamp(&killed);
    let o = matrix_cmd(&f, &killed, &["--jobs", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains(&format!("{} run(s) in", 18 - n_before)) && said.contains(&format!("({n_before} already finished)")), "{said}");
    assert_eq!(stamp(&killed), times, "finished runs are not run again");
    let after = run_dirs(&killed);
    assert_eq!(after.len(), 18, "every run exactly once");
    // No hidden temporary directories are left behind.
    for cell in std::fs::read_dir(killed.join("cells")).unwrap() {
        for e in std::fs::read_dir(cell.unwrap().path()).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().to_string();
            assert!(name.starts_with("seed="), "left over: {name}");
        }
    }
    let o = matrix_cmd(&f, &whole, &["--jobs", "2"]);
    assert!(o.status.success());
    assert_eq!(csv_without_timings(&killed), csv_without_timings(&whole));
    // A third run has nothing to do.
    let o = matrix_cmd(&f, &whole, &[]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("0 run(s) in"), "{}", String::from_utf8_lossy(&o.stdout));
    // The file changed (fewer rounds): its finished runs are another experiment's, so the
    // matrix refuses to mix them in, and keeps them.
    std::fs::write(&f, std::fs::read_to_string(&f).unwrap().replace("federation.rounds: 12", "federation.rounds: 11")).unwrap();
    let before = csv_without_timings(&whole);
    for extra in [&[][..], &["--collect"][..]] {
        let o = matrix_cmd(&f, &whole, extra);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("18 finished run(s) were produced by a different scenario") && err.contains("another --out"), "{err}");
    }
    assert_eq!(csv_without_timings(&whole), before, "nothing written");
}

/// Every matrix shipped under scenarios/matrix/ expands into valid cells (checked
/// without the data: a Cora matrix loads on a machine without Cora).
#[test]
fn every_shipped_matrix_expands() {
    let mut n = 0;
    for entry in std::fs::read_dir("scenarios/matrix").unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let m = Matrix::load(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert!(!m.cells.is_empty() && !m.seeds.is_empty(), "{}", path.display());
            n += 1;
        }
    }
    assert!(n >= 3, "{n} matrix files");
}

/// `--only` runs a slice: the selected cells' runs alone, the report over every cell (the
/// rest missing); slices then the whole give the uninterrupted matrix's numbers, and a
/// selection of nothing is refused before anything is written.
#[test]
fn slices_chosen_by_only_add_up_to_the_whole_matrix() {
    let tmp = tempfile::tempdir().unwrap();
    let f = lda_matrix(tmp.path(), 1);
    let (sliced, whole) = (tmp.path().join("sliced"), tmp.path().join("whole"));
    let plan = matrix_cmd(&f, &sliced, &["--dry-run", "--only", "defense=none", "--only", "attack=uniform"]);
    let said = String::from_utf8_lossy(&plan.stdout);
    assert!(said.contains("1 cell(s) selected by --only") && said.contains("attack=uniform,defense=none\n"), "{said}");
    assert_eq!(said.matches("defense=").count(), 1, "the plan lists the selected cells alone: {said}");
    for bad in ["defence=none", "defense=dp-fedavg", "defense"] {
        let o = matrix_cmd(&f, &sliced, &["--only", bad]);
        assert!(!o.status.success());
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("--only"), "{err}");
        assert!(!sliced.exists(), "nothing written for `--only {bad}`");
    }
    let o = matrix_cmd(&f, &sliced, &["--only", "defense=none"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 run(s) in"), "{}", String::from_utf8_lossy(&o.stdout));
    let cells: Vec<String> = run_dirs(&sliced).into_iter().map(|(c, _, _)| c).collect();
    assert_eq!(cells, ["attack=lda,defense=none", "attack=uniform,defense=none"]);
    let csv = csv_without_timings(&sliced);
    assert_eq!(csv.len(), 7, "the report covers every cell");
    assert_eq!(csv.iter().filter(|r| r.contains(",missing,")).count(), 4, "{csv:?}");
    let o = matrix_cmd(&f, &sliced, &["--only", "defense.epsilon=4"]);
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 run(s) in"), "{}", String::from_utf8_lossy(&o.stdout));
    let o = matrix_cmd(&f, &sliced, &[]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("2 run(s) in") && String::from_utf8_lossy(&o.stdout).contains("(4 already finished)")
    );
    let o = matrix_cmd(&f, &whole, &[]);
    assert!(o.status.success());
    assert_eq!(csv_without_timings(&sliced), csv_without_timings(&whole));
}

#[test]
fn a_diverged_training_is_flagged() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "m.yaml", &format!("{BASE}sweep: {{train.lr: [0.2, 1.0e30]}}\n"));
    let out = tmp.path().join("out");
    let o = matrix_cmd(&f, &out, &[]);
    assert!(o.status.success(), "a diverged run is a finished run: {}", String::from_utf8_lossy(&o.stderr));
    let csv = csv_without_timings(&out);
    assert!(csv[0].contains(",status,diverged,"), "{}", csv[0]);
    assert!(csv[1].contains("train.lr=0.2") && csv[1].contains(",finished,false,"), "{}", csv[1]);
    assert!(csv[2].contains("train.lr=1e30") && csv[2].contains(",finished,true,"), "{}", csv[2]);
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("## Diverged runs") && md.contains("- train.lr=1e30 seed 0") && !md.contains("- train.lr=0.2 seed"), "{md}");
}

/// report.md without its provenance line (which says how the report was produced).
fn report_md_body(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("report.md")).unwrap().lines().filter(|l| !l.starts_with("From `")).collect::<Vec<_>>().join("\n")
}

/// The axes of the emitted-jobs matrices: 2 × 2 cells × 2 seeds = 8 runs.
const EMITTED_AXES: &str = "attacks: [ec-lda, [lda, uniform]]\ndefenses: [none, {preset: ldp-labels, sweep: {epsilon: [2]}}]\nseeds: 2\n";

#[test]
fn emitted_jobs_run_elsewhere_and_collect_to_the_direct_report() {
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "m.yaml", &format!("{BASE}{EMITTED_AXES}"));
    let (direct, emitted) = (tmp.path().join("direct"), tmp.path().join("emitted"));
    assert!(matrix_cmd(&f, &direct, &[]).status.success());
    // Tidy: one row per run and attack of the run, each with its own scores.
    let csv = csv_without_timings(&direct);
    assert_eq!(csv.len(), 1 + 2 * 2 * (1 + 2), "{csv:?}");
    assert!(csv[0].contains(",seed,scored_attack,status,"), "{}", csv[0]);
    for attack in ["ec-lda", "lda", "uniform"] {
        let rows: Vec<&String> = csv.iter().filter(|r| r.contains(&format!(",{attack},finished,"))).collect();
        assert_eq!(rows.len(), 4, "{attack}: {csv:?}");
    }
    let md = std::fs::read_to_string(direct.join("report.md")).unwrap();
    assert!(md.contains("| defense \\ attack | ec-lda | lda | uniform |"), "{md}");
    let o = matrix_cmd(&f, &emitted, &["--emit-jobs"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!emitted.join("cells").exists(), "--emit-jobs runs nothing");
    let jobs = emitted.join("jobs");
    let commands = std::fs::read_to_string(jobs.join("commands.txt")).unwrap();
    assert_eq!(commands.lines().count(), 8);
    assert!(commands.lines().all(|l| l.contains(" run ") && l.contains("--out")), "{commands}");
    let slurm = std::fs::read_to_string(jobs.join("slurm.sh")).unwrap();
    assert!(slurm.contains("#SBATCH --array=0-7") && slurm.contains("SLURM_ARRAY_TASK_ID"), "{slurm}");
    let k8s: serde_norway::Value = serde_norway::from_str(&std::fs::read_to_string(jobs.join("k8s-job.yaml")).unwrap()).unwrap();
    assert_eq!(k8s["kind"], "Job");
    assert_eq!(k8s["spec"]["completionMode"], "Indexed");
    assert_eq!(k8s["spec"]["completions"].as_u64(), Some(8));
    // Run the commands as a scheduler would: two at a time, each line a shell command.
    let o = Command::new("xargs")
        .args(["-d", "\n", "-P", "2", "-n", "1", "bash", "-c"])
        .env("FGL_SIM", BIN)
        .stdin(std::fs::File::open(jobs.join("commands.txt")).unwrap())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The slurm script's own line selection runs a finished run's command: a no-op.
    let o =
        Command::new("bash").arg(jobs.join("slurm.sh")).env("SLURM_ARRAY_TASK_ID", "3").env("FGL_SIM", "/nonexistent").output().unwrap();
    assert!(o.status.success(), "task 3 is finished, so its command skips: {}", String::from_utf8_lossy(&o.stderr));
    let o = matrix_cmd(&f, &emitted, &["--collect"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("8 finished, 0 failed, 0 missing"));
    assert_eq!(csv_without_timings(&direct), csv_without_timings(&emitted));
    assert_eq!(report_md_body(&direct), report_md_body(&emitted));
    for fig in std::fs::read_dir(direct.join("figures")).unwrap() {
        let name = fig.unwrap().file_name();
        let a = std::fs::read_to_string(direct.join("figures").join(&name)).unwrap();
        let b = std::fs::read_to_string(emitted.join("figures").join(&name)).unwrap();
        assert_eq!(a, b, "{name:?}");
    }
}

/// Chromium from the distribution's packages; `None` (a skip) outside CI.
fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(o) = Command::new("sh").args(["-c", &format!("command -v {name}")]).output()
            && o.status.success()
        {
            return Some(PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        }
    }
    assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but no chromium: .ci/run installs the `chromium` package");
    eprintln!("skipping the browser check: no chromium on PATH (Debian: apt install chromium)");
    None
}

#[test]
fn the_html_report_renders_in_a_headless_browser() {
    let tmp = tempfile::tempdir().unwrap();
    let f = lda_matrix(tmp.path(), 2);
    let out = tmp.path().join("out");
    assert!(matrix_cmd(&f, &out, &[]).status.success());
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    for remote in ["<script", "src=\"http", "href=\"http", "url(http", "@import"] {
        assert!(!html.contains(remote), "self-contained: no scripts, nothing fetched ({remote})");
    }
    let figures = std::fs::read_dir(out.join("figures")).unwrap().count();
    assert_eq!(figures, 2 + 6, "heat map, privacy–utility curves, a training curve per cell");
    let Some(browser) = chromium() else { return };
    // The page as shipped, plus a probe appended by the test that measures what rendered.
    let probe = "<script>
const vis = el => { const r = el.getBoundingClientRect(); const s = getComputedStyle(el); return r.width > 20 && r.height > 20 && s.visibility === 'visible' && s.display !== 'none'; };
const tables = [...document.querySelectorAll('table.result')];
const figs = [...document.querySelectorAll('figure.figure svg')];
document.body.setAttribute('data-verdict', JSON.stringify({
  tables: tables.length, tables_visible: tables.filter(vis).length,
  figures: figs.length, figures_visible: figs.filter(vis).length,
  figures_with_text: figs.filter(f => f.querySelectorAll('text').length > 3).length,
  resources: performance.getEntriesByType('resource').map(e => e.name),
}));
</script></body>";
    let checked = out.join("checked.html");
    std::fs::write(&checked, html.replace("</body>", probe)).unwrap();
    let o = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0", "--dump-dom"])
        .arg(format!("file://{}", checked.display()))
        .output()
        .unwrap();
    assert!(o.status.success(), "chromium failed: {}", String::from_utf8_lossy(&o.stderr));
    let dom = String::from_utf8_lossy(&o.stdout);
    let verdict =
        dom.split("data-verdict=\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or_else(|| panic!("no verdict in the DOM: {dom}"));
    let verdict: serde_json::Value = serde_json::from_str(&verdict.replace("&quot;", "\"").replace("&amp;", "&")).unwrap();
    // One group (synthetic, gcn): cos-sim, JS and accuracy tables.
    assert_eq!(verdict["tables"], 3, "{verdict}");
    assert_eq!(verdict["tables_visible"], 3, "{verdict}");
    assert_eq!(verdict["figures"], figures, "every figure is in the page: {verdict}");
    assert_eq!(verdict["figures_visible"], figures, "{verdict}");
    assert_eq!(verdict["figures_with_text"], figures, "axis labels and legends drawn: {verdict}");
    assert_eq!(verdict["resources"], serde_json::json!([]), "nothing fetched: {verdict}");
    // The only console output allowed is none.
    let stderr = String::from_utf8_lossy(&o.stderr);
    let console: Vec<&str> = stderr.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
}

/// Issue 27: a matrix pointed at another matrix's --out overwrote its cells.csv and
/// report (the stale check compared only the cells both share). Now it is refused,
/// naming a cell it does not have, and nothing changes.
#[test]
fn another_matrix_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let first = write(tmp.path(), "a.yaml", &format!("{BASE}attacks: [lda]\n"));
    let second = write(tmp.path(), "b.yaml", &format!("{BASE}attacks: [uniform]\n"));
    let out = tmp.path().join("out");
    assert!(matrix_cmd(&first, &out, &[]).status.success());
    let before = std::fs::read_to_string(out.join("cells.csv")).unwrap();
    let o = matrix_cmd(&second, &out, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("this matrix does not have") && err.contains("attack=lda") && err.contains("another --out"), "{err}");
    assert_eq!(std::fs::read_to_string(out.join("cells.csv")).unwrap(), before, "nothing written");
}

/// A one-node Slurm cluster on this machine (`.ci/slurm-up` starts one); `false` (a skip)
/// outside CI when there is none.
fn slurm() -> bool {
    let up = Command::new("sinfo").args(["-h", "-o", "%T"]).output().is_ok_and(|o| {
        o.status.success() && String::from_utf8_lossy(&o.stdout).lines().any(|l| ["idle", "mixed", "allocated"].contains(&l.trim()))
    });
    if !up {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true but no Slurm node is up: .ci/run starts one with .ci/slurm-up");
        eprintln!("skipping the Slurm check: no Slurm node up (as root: apt install slurm-wlm munge; .ci/slurm-up)");
    }
    up
}

/// Issue 27: the emitted SLURM array on a real Slurm (slurmctld + slurmd + munge on this
/// machine): `sbatch --wait`, then `--collect` gives the direct run's `cells.csv`. The
/// output directory's path holds a space and a single quote; the 8 array indices run the
/// 8 lines, each writing the run its line names.
#[test]
fn the_emitted_slurm_array_runs_on_slurm_and_collects_to_the_direct_report() {
    if !slurm() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let f = write(tmp.path(), "m.yaml", &format!("{BASE}{EMITTED_AXES}"));
    let (direct, emitted) = (tmp.path().join("direct"), tmp.path().join("on slurm 'q'"));
    assert!(matrix_cmd(&f, &direct, &[]).status.success());
    let o = matrix_cmd(&f, &emitted, &["--emit-jobs"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let jobs = emitted.join("jobs");
    // One CPU a task (the script asks for 2) so that CI's 2-core node runs two at once.
    let o = Command::new("sbatch")
        .args(["--wait", "--cpus-per-task=1"])
        .arg(jobs.join("slurm.sh"))
        .env("FGL_SIM", BIN)
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "sbatch: {}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let logs: Vec<_> = std::fs::read_dir(jobs.join("logs")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(logs.len(), 8, "one log per array task: {logs:?}");
    let o = matrix_cmd(&f, &emitted, &["--collect"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(String::from_utf8_lossy(&o.stdout).contains("8 finished, 0 failed, 0 missing"), "{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(csv_without_timings(&direct), csv_without_timings(&emitted));
    // Index i ran line i + 1: the run it wrote is the one that line names.
    let commands: Vec<String> = std::fs::read_to_string(jobs.join("commands.txt")).unwrap().lines().map(str::to_string).collect();
    for (i, line) in commands.iter().enumerate() {
        let metrics = std::fs::read_to_string(
            emitted.join("cells").join(line.split("/cells/").nth(1).unwrap().split("/metrics.json").next().unwrap()).join("metrics.json"),
        )
        .unwrap();
        let name = line.split("/jobs/scenarios/").nth(1).unwrap().split(".yaml").next().unwrap();
        assert!(metrics.contains(&format!("\"scenario\": \"{name}\"")), "task {i}: {name}");
    }
}

/// `tasks:` is an axis like `models:`: each cell's scenario has its task, the id and the
/// columns name it; an attack that does not support a task is refused naming both.
#[test]
fn tasks_are_an_axis() {
    let m = load(&format!("{BASE}tasks: [node, link]\nattacks: [ec-lda, uniform]\n")).unwrap();
    assert_eq!(m.cells.len(), 4);
    let ids: Vec<&str> = m.cells.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids, ["task=node,attack=ec-lda", "task=node,attack=uniform", "task=link,attack=ec-lda", "task=link,attack=uniform"]);
    let tasks: Vec<fgl_sim::data::Task> = m.cells.iter().map(|c| c.scenario.task).collect();
    assert_eq!(tasks[..2], [fgl_sim::data::Task::Node; 2]);
    assert_eq!(tasks[2..], [fgl_sim::data::Task::Link; 2]);
    assert_eq!(m.param(2, "task"), Some("link"));
    let e = load(&format!("{BASE}tasks: [link]\nattacks: [infiltrator]\n")).unwrap_err();
    assert!(e.contains("task=link") && e.contains("`infiltrator` does not support `task: link`"), "{e}");
    let e = load(&format!("{BASE}tasks: [graph]\n")).unwrap_err();
    assert!(e.contains("task"), "{e}");
}

/// Behind a defense that shows the server only aggregates, the attacks of a group that
/// need each client's update are left out of that cell, named with why in the cell and
/// in the report (`–` in their table); those that read an aggregate still run. An
/// attack alone that cannot run there is left out too, and the cell still trains.
#[test]
fn attacks_that_need_each_update_are_left_out_behind_secure_aggregation() {
    let m = load(&format!("{BASE}attacks: [[lda, ilrg, uniform], llg-star]\ndefenses: [none, secagg]\n")).unwrap();
    assert_eq!(m.cells.len(), 4);
    let names = |c: usize| m.cells[c].scenario.attacks.iter().map(|a| a.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(0), ["lda", "ilrg", "uniform"]);
    assert_eq!(names(1), ["lda", "uniform"]);
    assert_eq!(m.cells[1].omitted.len(), 1);
    assert_eq!(m.cells[1].omitted[0].0, "ilrg");
    assert!(m.cells[1].omitted[0].1.contains("`secagg` shows the server only their aggregate"));
    assert!(names(3).is_empty() && m.cells[3].omitted[0].0 == "llg-star");
    assert!(m.cells[0].omitted.is_empty() && m.cells[2].omitted.is_empty());

    let tmp = tempfile::tempdir().unwrap();
    let f = write(
        tmp.path(),
        "m.yaml",
        &format!("{BASE}set: {{federation.rounds: 2}}\nattacks: [[lda, ilrg, uniform]]\ndefenses: [none, secagg]\n"),
    );
    let out = tmp.path().join("out");
    let o = matrix_cmd(&f, &out, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    // One line per reason, naming the attacks and the cells.
    assert!(
        md.contains("Attacks not run in some cells (`–` in their tables):\n\n- `ilrg`: needs each client's update; `secagg` shows the server only their aggregate — in `attack=lda+ilrg+uniform,defense=secagg`\n\n"),
        "{md}"
    );
    // Without such a defense, an impossible combination is still an error.
    let e = load(&format!("{BASE}attacks: [ilrg]\ndefenses: [{{kind: dp-fedavg, clip: 1, noise_multiplier: 1}}]\nsweep: {{federation.client_fraction: [0.5]}}\n")).unwrap_err();
    assert!(e.contains("federation.sampling"), "{e}");
}

/// `--dry-run` knows which runs take their rounds after EC-LDA's discarded round from
/// the passive run (`Scenario::rounds_can_be_round_free`): for every defense kind (and
/// label-DP's two stages), with dropout and with plain SGD's (empty) optimizer state
/// kept, the prediction is what the run did
/// (`tail_rounds` in its metrics), and the plan charges such a run only the round it
/// runs itself, the others the rounds from the attack's on.
#[test]
fn the_plan_knows_which_runs_take_their_last_rounds_from_the_passive_run() {
    let tmp = tempfile::tempdir().unwrap();
    let defenses = [
        "none",
        "{preset: ldp-features, set: {epsilon: 4}}",
        "{preset: ldp-labels, set: {epsilon: 4}}",
        "{preset: label-dp}",
        "{preset: label-dp, name: label-dp-prior, set: {mechanism: rr-with-prior, stages: [0.5, 0.5], stage_rounds: [1, 3]}}",
        "{preset: dp-gnn, set: {small_clients: full-batch}}",
        "{preset: lpgnn}",
        "{preset: rgnn, set: {clusters: 4}}",
        "{preset: solitude}",
        "{preset: edge-ldp}",
        "{preset: secagg}",
        "{preset: dp-fedavg}",
        "{preset: ldp-update}",
        "{preset: ldp-labels, name: with-dropout, with: {model.dropout: 0.5}}",
        "{preset: ldp-labels, name: kept-state, with: {train.keep_optimizer_state: true}}",
    ];
    let text = format!(
        "{}attacks: [ec-lda, [lda, uniform]]\ndefenses: [{}]\n",
        BASE.replace("rounds: 4", "rounds: 6")
            .replace("head: true}", "head: true, dropout: 0.0}")
            // Binary features, as the feature mechanisms and GRR-FS take.
            .replace("feature_dim: 16}}", "feature_dim: 16}, preprocess: {group_columns: 1}}"),
        defenses.join(", ")
    );
    let f = write(tmp.path(), "m.yaml", &text);
    let m = Matrix::load(&f).unwrap();
    let plan = Command::new(BIN).args(["matrix", f.to_str().unwrap(), "--dry-run"]).env("FGL_TIME_FACTOR", "1000").output().unwrap();
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let plan = String::from_utf8_lossy(&plan.stdout).to_string();
    let seconds = |cell: &str| -> f64 {
        let line = plan.lines().find(|l| l.trim_end().ends_with(&format!("  {cell}"))).unwrap_or_else(|| panic!("{cell} in\n{plan}"));
        let mut words = line.split_whitespace();
        let (value, unit) = (words.next().unwrap().parse::<f64>().unwrap(), words.next().unwrap());
        value * if unit == "min" { 60.0 } else { 1.0 }
    };
    let out = tmp.path().join("out");
    let o = matrix_cmd(&f, &out, &["--jobs", "2"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut predicted = Vec::new();
    for (c, cell) in m.cells.iter().enumerate().filter(|(_, c)| c.id.starts_with("attack=ec-lda")) {
        let metrics: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("cells").join(&cell.id).join("seed=0").join("metrics.json")).unwrap())
                .unwrap();
        let took = metrics["timings"].get("tail_rounds").is_some();
        let predicts = m.cells[c].scenario_for(0).rounds_can_be_round_free();
        assert_eq!(predicts, took, "{}: predicted {predicts}, took the tail {took}", cell.id);
        // Its passive sibling: the same cell but for the attack.
        let passive = seconds(&cell.id.replace("attack=ec-lda", "attack=lda+uniform"));
        let share = seconds(&cell.id) / passive;
        // Rounds 3–6 of 6 (2 shared) or round 3 alone (rounds 4–6 from the sibling).
        let want = if took { 1.0 / 6.0 } else { 4.0 / 6.0 };
        assert!((share - want).abs() < 0.1, "{}: charged {share:.2} of the passive run, want ≈ {want:.2}\n{plan}", cell.id);
        if took {
            predicted.push(cell.id.clone());
        }
    }
    assert_eq!(
        predicted,
        [
            "attack=ec-lda,defense=none",
            "attack=ec-lda,defense=ldp-features",
            "attack=ec-lda,defense=ldp-labels",
            "attack=ec-lda,defense=label-dp",
            "attack=ec-lda,defense=lpgnn",
            "attack=ec-lda,defense=rgnn",
            "attack=ec-lda,defense=edge-ldp",
            // Plain SGD keeps no state to keep.
            "attack=ec-lda,defense=kept-state"
        ]
    );
}

/// Runs that differ only in their attacks share the rounds before any attack acts
/// (EC-LDA and LDA act in round 3 of 6 here: rounds 1–2 run once per defense and seed):
/// the same `cells.csv` and `metrics.json` as with every run from round 1
/// (`--no-shared-rounds`), and the runs that went on from a sibling's rounds say so.
/// EC-LDA's runs without DP-GNN's noise also take rounds 4–6 from the passive run's 3–5.
#[test]
fn runs_sharing_their_first_rounds_give_the_numbers_of_runs_from_round_1() {
    let tmp = tempfile::tempdir().unwrap();
    let text = format!(
        "{}attacks: [ec-lda, [lda, uniform]]\ndefenses: [none, {{preset: ldp-labels, sweep: {{epsilon: [1]}}}}, {{preset: dp-gnn, set: {{small_clients: full-batch}}}}]\nseeds: 2\n",
        BASE.replace("rounds: 4", "rounds: 6").replace("head: true}", "head: true, dropout: 0.0}")
    );
    let f = write(tmp.path(), "m.yaml", &text);
    let (shared, alone) = (tmp.path().join("shared"), tmp.path().join("alone"));
    assert!(matrix_cmd(&f, &shared, &["--jobs", "2"]).status.success());
    assert!(matrix_cmd(&f, &alone, &["--jobs", "2", "--no-shared-rounds"]).status.success());
    assert_eq!(csv_without_timings(&shared), csv_without_timings(&alone));
    let metrics = |d: &Path, cell: &str, seed: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(d.join("cells").join(cell).join(seed).join("metrics.json")).unwrap()).unwrap()
    };
    let (mut went_on, mut took) = (0, Vec::new());
    let dirs = run_dirs(&shared);
    assert_eq!(dirs.len(), 12);
    for (cell, seed, _) in dirs {
        let (mut a, mut b) = (metrics(&shared, &cell, &seed), metrics(&alone, &cell, &seed));
        if let Some(n) = a["timings"].get("shared_rounds") {
            assert_eq!(n, 2, "{cell} {seed}");
            went_on += 1;
        }
        if let Some(n) = a["timings"].get("tail_rounds") {
            assert_eq!(n, 3, "{cell} {seed}");
            took.push(cell.clone());
        }
        assert!(b["timings"].get("shared_rounds").is_none() && b["timings"].get("tail_rounds").is_none());
        a.as_object_mut().unwrap().remove("timings");
        b.as_object_mut().unwrap().remove("timings");
        assert_eq!(a, b, "{cell} {seed}");
    }
    // One run of each (defense, seed) pair went on from the other's rounds 1–2.
    assert_eq!(went_on, 6);
    took.sort();
    assert_eq!(
        took,
        [
            "attack=ec-lda,defense=ldp-labels,defense.epsilon=1",
            "attack=ec-lda,defense=ldp-labels,defense.epsilon=1",
            "attack=ec-lda,defense=none",
            "attack=ec-lda,defense=none"
        ]
    );
}

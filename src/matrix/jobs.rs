//! `fgl-sim matrix FILE --emit-jobs`: the runs as plain `fgl-sim run` commands, so that
//! an existing scheduler runs them on many machines; `--collect` then builds the report
//! from the run directories. Written under `<out>/jobs/`:
//!
//! - `scenarios/<cell>,seed=<s>.yaml`: each run's resolved scenario (self-contained:
//!   presets inlined), named so that its metrics carry the same name as a direct run's;
//! - `commands.txt`: one command per run, skipping a run whose directory already holds
//!   `metrics.json` (`FGL_SIM` names the binary, default `fgl-sim` on the PATH);
//! - `slurm.sh`: a SLURM array, task i running line i + 1;
//! - `k8s-job.yaml`: a Kubernetes indexed Job, completion index i running line i + 1.
//!
//! Paths are absolute: the machines that run the commands must see the output directory
//! (and the data directory) at the same paths, as on a shared file system.

use std::path::{Path, PathBuf};

use super::spec::Matrix;
use super::store;
use crate::atomic::write_file;
use crate::error::{Error, Result};

/// Files written, and the number of commands.
pub struct Emitted {
    pub dir: PathBuf,
    pub commands: usize,
}

/// Quote for POSIX shells.
fn sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::output(p, format!("cannot make the path absolute: {e}")))
}

pub fn emit(m: &Matrix, out: &Path, data_dir: Option<&Path>) -> Result<Emitted> {
    let out = absolute(out)?;
    let dir = out.join("jobs");
    let scenarios = dir.join("scenarios");
    std::fs::create_dir_all(&scenarios).map_err(|e| Error::output(&scenarios, format!("cannot create: {e}")))?;
    let data = match data_dir {
        Some(d) => format!(" --data-dir {}", sh(&absolute(d)?.display().to_string())),
        None => String::new(),
    };
    let mut commands = String::new();
    let runs = m.runs();
    for &(c, seed) in &runs {
        let cell = &m.cells[c];
        let file = scenarios.join(format!("{},seed={seed}.yaml", cell.id));
        write_file(&file, cell.scenario_for(seed).to_yaml().as_bytes())?;
        let run_dir = store::run_dir(&out, &cell.id, seed);
        commands.push_str(&format!(
            "[ -f {} ] || \"${{FGL_SIM:-fgl-sim}}\" run {} --out {} --force --quiet{data}\n",
            sh(&run_dir.join("metrics.json").display().to_string()),
            sh(&file.display().to_string()),
            sh(&run_dir.display().to_string()),
        ));
    }
    let list = dir.join("commands.txt");
    write_file(&list, commands.as_bytes())?;
    let n = runs.len();
    let line = format!("sed -n \"$(({{INDEX}} + 1))p\" {}", sh(&list.display().to_string()));
    let slurm = format!(
        "#!/bin/bash\n\
         # SLURM array for matrix `{name}` ({n} runs): task i runs line i + 1 of commands.txt.\n\
         # Submit with `sbatch {path}`; then `fgl-sim matrix <file> --collect --out {out}`.\n\
         #SBATCH --job-name=fgl-sim-{name}\n\
         #SBATCH --array=0-{last}\n\
         #SBATCH --cpus-per-task=2\n\
         #SBATCH --output={logs}/%A_%a.log\n\
         set -euo pipefail\n\
         mkdir -p {logs_q}\n\
         cmd=$({sed})\n\
         exec bash -c \"$cmd\"\n",
        name = m.name,
        path = dir.join("slurm.sh").display(),
        out = out.display(),
        last = n - 1,
        logs = dir.join("logs").display(),
        logs_q = sh(&dir.join("logs").display().to_string()),
        sed = line.replace("{INDEX}", "SLURM_ARRAY_TASK_ID"),
    );
    write_file(&dir.join("slurm.sh"), slurm.as_bytes())?;
    let k8s_name: String =
        format!("fgl-sim-{}", m.name).to_lowercase().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).take(52).collect();
    let manifest = serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": k8s_name.trim_end_matches('-')},
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n.min(16),
            "backoffLimitPerIndex": 1,
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "run",
                    "image": "fgl-sim:latest",
                    "resources": {"requests": {"cpu": "2"}},
                    "command": ["bash", "-c", format!("cmd=$({}); exec bash -c \"$cmd\"", line.replace("{INDEX}", "JOB_COMPLETION_INDEX"))],
                    "volumeMounts": [{"name": "results", "mountPath": out.display().to_string()}],
                }],
                "volumes": [{"name": "results", "persistentVolumeClaim": {"claimName": "fgl-sim-results"}}],
            }},
        },
    });
    let k8s = format!(
        "# Kubernetes indexed Job for matrix `{}` ({n} runs): completion index i runs line i + 1\n\
         # of commands.txt. Set `image` to one with fgl-sim on the PATH, and the claim to a\n\
         # volume holding {} (and the data directory, if the commands name one).\n{}",
        m.name,
        out.display(),
        serde_norway::to_string(&manifest).expect("yaml")
    );
    write_file(&dir.join("k8s-job.yaml"), k8s.as_bytes())?;
    Ok(Emitted { dir, commands: n })
}

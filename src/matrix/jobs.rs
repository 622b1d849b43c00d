//! `fgl-sim matrix FILE --emit-jobs`: the runs as plain `fgl-sim run` commands, so that
//! an existing scheduler runs them on many machines; `--collect` then builds the report
//! from the run directories. Written under `<out>/jobs/`:
//!
//! - `scenarios/<cell>,seed=<s>.yaml`: each run's resolved scenario (self-contained:
//!   presets inlined), named so that its metrics carry the same name as a direct run's;
//! - `commands.txt`: one command per run, skipping a run whose directory already holds
//!   `metrics.json` and going on from its `checkpoint.cbor` when a signal stopped it (a
//!   scheduler's SIGTERM at a time limit or preemption saves one); `FGL_SIM` names the
//!   binary, default `fgl-sim` on the PATH;
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
        let q = |p: &Path| sh(&p.display().to_string());
        commands.push_str(&format!(
            "if [ -f {metrics} ]; then :; elif [ -f {checkpoint} ]; then \"${{FGL_SIM:-fgl-sim}}\" run --resume {dir} --quiet{data}; \
             else \"${{FGL_SIM:-fgl-sim}}\" run {file} --out {dir} --force --quiet{data}; fi\n",
            metrics = q(&run_dir.join("metrics.json")),
            checkpoint = q(&run_dir.join(crate::results::CHECKPOINT_FILE)),
            dir = q(&run_dir),
            file = q(&file),
        ));
    }
    let list = dir.join("commands.txt");
    write_file(&list, commands.as_bytes())?;
    let n = runs.len();
    // Slurm opens a task's output file before the script runs: the directory must exist.
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).map_err(|e| Error::output(&logs, format!("cannot create: {e}")))?;
    // An #SBATCH value is read up to white space unless double-quoted (single quotes
    // inside are fine); a path with a double quote gets Slurm's default output file.
    let logs_text = logs.display().to_string();
    let output = match logs_text.contains(['"', '\n']) {
        false => format!("#SBATCH --output=\"{logs_text}/%A_%a.log\"\n"),
        true => "# (the output directory's path holds a double quote: Slurm's default output file)\n".to_string(),
    };
    let line = format!("sed -n \"$(({{INDEX}} + 1))p\" {}", sh(&list.display().to_string()));
    let slurm = format!(
        "#!/bin/bash\n\
         # SLURM array for matrix `{name}` ({n} runs): task i runs line i + 1 of commands.txt.\n\
         # Submit with `sbatch {path}`; then `fgl-sim matrix <file> --collect --out {out}`.\n\
         #SBATCH --job-name=fgl-sim-{name}\n\
         #SBATCH --array=0-{last}\n\
         #SBATCH --cpus-per-task=2\n\
         {output}\
         set -euo pipefail\n\
         cmd=$({sed})\n\
         exec bash -c \"$cmd\"\n",
        name = m.name,
        path = dir.join("slurm.sh").display(),
        out = out.display(),
        last = n - 1,
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

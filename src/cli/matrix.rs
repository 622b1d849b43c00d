//! `fgl-sim matrix FILE`: run, estimate (`--dry-run`), emit jobs or collect a matrix,
//! and say where its report is.

use crate::error::{Error, Result};

pub(super) fn matrix_cmd(
    m: &crate::matrix::Matrix,
    opts: &crate::matrix::MatrixOptions,
    dry_run: bool,
    emit_jobs: bool,
    collect: bool,
) -> Result<()> {
    use crate::matrix::{self, stats};
    let out = opts.out_dir(m);
    if dry_run {
        let plan = matrix::plan(m, opts)?;
        println!(
            "matrix `{}`: {} cells × {} seed(s) = {} runs{}; results in {}",
            m.name,
            m.cells.len(),
            m.seeds.len(),
            m.runs().len(),
            if opts.only.is_all() { String::new() } else { format!(", {} cell(s) selected by --only", plan.lines.len()) },
            out.display()
        );
        print!("{}", plan.table());
        println!(
            "estimated wall time with {} run(s) at once: {} (rough: {} finished run(s) measured, the rest from a cost model; `?`: dataset not loadable here)\n{}",
            plan.jobs,
            matrix::Plan::human(plan.total_seconds),
            plan.measured,
            plan.speed.map_or_else(|| "(no cost model needed)".to_string(), |s| s.describe())
        );
        return Ok(());
    }
    if emit_jobs {
        let e = matrix::jobs::emit(m, &out, opts.data_dir.as_deref())?;
        println!(
            "{} commands written to {}/commands.txt (with slurm.sh and k8s-job.yaml); run them anywhere that sees {}, then `fgl-sim matrix {} --collect{}`",
            e.commands,
            e.dir.display(),
            out.display(),
            m.file.display(),
            opts.out.as_ref().map_or(String::new(), |o| format!(" --out {}", o.display()))
        );
        return Ok(());
    }
    if collect {
        let (out, rows) = matrix::collect(m, opts)?;
        let (fin, failed, missing) = stats::counts(&rows);
        println!(
            "report of {} runs ({fin} finished, {failed} failed, {missing} missing) written to {}/report.html",
            rows.len(),
            out.display()
        );
        return Ok(());
    }
    let o = super::run_matrix(m, opts)?;
    let peak = crate::backend::peak_rss_mib().map_or(String::new(), |mb| format!(", peak memory {mb:.0} MiB"));
    println!(
        "{} run(s) in {:.1} s ({} already finished){peak}; report written to {}/report.html",
        o.ran,
        o.wall_seconds,
        o.skipped,
        o.out.display()
    );
    if o.failed > 0 {
        return Err(Error::Other(super::failed_runs_message(&o)));
    }
    Ok(())
}

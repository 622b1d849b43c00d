//! The matrix report, built from the run directories alone (so `--collect` over
//! directories produced elsewhere gives the same report as a direct run): `cells.csv`
//! (tidy, one row per cell × seed), `report.json`, `report.md` (per dataset and model,
//! attack × defense tables of mean ± 95 % CI over seeds), SVG figures and `report.html`.
//! The statistics it renders are `stats`'.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value as Json;

use super::spec::Matrix;
use super::stats::*;
use super::{figures, html};
use crate::atomic::write_file;
use crate::error::{Error, Result};
use crate::record::RunState;

/// A number as the CSV writes it: shortest round-trip form, `inf`, empty for none/NaN.
fn csv_num(x: Option<f64>) -> String {
    match x {
        Some(x) if x.is_nan() => String::new(),
        Some(x) if x.is_infinite() => {
            if x > 0.0 {
                "inf".into()
            } else {
                "-inf".into()
            }
        }
        Some(x) => format!("{x}"),
        None => String::new(),
    }
}

/// `cells.csv`: `matrix,cell`, the parameter columns, `seed`, [`METRIC_COLUMNS`]; one
/// row per run and attack of the run (`scored_attack`; one row with it empty for a run
/// without attacks).
pub fn cells_csv(m: &Matrix, rows: &[Row]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header: Vec<&str> =
        ["matrix", "cell"].into_iter().chain(m.columns.iter().map(String::as_str)).chain(["seed"]).chain(METRIC_COLUMNS).collect();
    w.write_record(&header).expect("in memory");
    for r in rows {
        let c = &m.cells[r.cell];
        let attacks = cell_attacks(m, r.cell);
        let scored: Vec<Option<&str>> = if attacks.is_empty() { vec![None] } else { attacks.iter().map(|a| Some(a.as_str())).collect() };
        for attack in scored {
            let mut rec: Vec<String> = vec![m.name.clone(), c.id.clone()];
            rec.extend(c.params.iter().map(|p| p.clone().unwrap_or_default()));
            rec.push(r.seed.to_string());
            rec.push(attack.unwrap_or_default().to_string());
            rec.push(status(&r.state).into());
            let x = r.metrics.as_ref();
            rec.push(x.map_or(String::new(), |x| x.diverged().to_string()));
            let a = x.zip(attack).and_then(|(x, a)| x.attack(a));
            rec.push(csv_num(x.map(|x| x.test_accuracy)));
            rec.push(csv_num(x.map(|x| x.test_loss)));
            rec.push(csv_num(x.map(|x| x.train_loss)));
            rec.push(x.map_or(String::new(), |x| x.rounds.to_string()));
            rec.push(csv_num(a.and_then(|a| a.cos_sim)));
            rec.push(csv_num(a.and_then(|a| a.js_div)));
            rec.push(csv_num(a.and_then(|a| a.uniform_cos_sim)));
            rec.push(csv_num(a.and_then(|a| a.uniform_js_div)));
            rec.push(csv_num(x.and_then(|x| x.epsilon_spent)));
            rec.push(match &r.state {
                RunState::Failed(e) => e.clone(),
                _ => String::new(),
            });
            rec.push(csv_num(x.map(|x| x.train_seconds)));
            rec.push(csv_num(x.map(|x| x.total_seconds)));
            w.write_record(&rec).expect("in memory");
        }
    }
    String::from_utf8(w.into_inner().expect("in memory")).expect("utf-8")
}

fn md_table(t: &Table) -> String {
    let mut s = format!(
        "| {} |\n|{}|\n",
        t.header.join(" | "),
        std::iter::once("---").chain(t.header.iter().skip(1).map(|_| "---:")).collect::<Vec<_>>().join("|")
    );
    for r in &t.rows {
        writeln!(s, "| {} |", r.join(" | ")).expect("string");
    }
    s
}

/// Write `cells.csv`, `report.json`, `report.md`, `figures/*.svg` and `report.html`
/// into `out`. Every file is written atomically.
pub fn write(m: &Matrix, out: &Path, rows: &[Row], prov: &Provenance) -> Result<()> {
    let stats = cell_stats(m, rows);
    let groups = groups(m);
    let figs = figures::all(m, rows, &groups, &stats);
    let figdir = out.join("figures");
    std::fs::create_dir_all(&figdir).map_err(|e| Error::output(&figdir, format!("cannot create: {e}")))?;
    for f in &figs {
        write_file(&figdir.join(&f.file), f.svg.as_bytes())?;
    }
    write_file(&out.join("cells.csv"), cells_csv(m, rows).as_bytes())?;
    let json = report_json(m, rows, &stats, &groups, prov);
    write_file(&out.join("report.json"), serde_json::to_string_pretty(&json).expect("json").as_bytes())?;
    write_file(&out.join("report.md"), markdown(m, rows, &stats, &groups, &figs, prov).as_bytes())?;
    write_file(&out.join("report.html"), html::page(m, rows, &stats, &groups, &figs, prov).as_bytes())?;
    Ok(())
}

fn report_json(m: &Matrix, rows: &[Row], stats: &[CellStats], groups: &[Group], prov: &Provenance) -> Json {
    let runs: Vec<Json> = rows
        .iter()
        .map(|r| {
            let c = &m.cells[r.cell];
            let params: serde_json::Map<String, Json> =
                m.columns.iter().zip(&c.params).map(|(k, v)| (k.clone(), v.clone().map_or(Json::Null, Json::String))).collect();
            serde_json::json!({
                "cell": c.id, "seed": r.seed, "params": params, "status": status(&r.state),
                "error": match &r.state { RunState::Failed(e) => Json::String(e.clone()), _ => Json::Null },
                "metrics": r.metrics,
            })
        })
        .collect();
    serde_json::json!({
        "schema": "fgl-sim/matrix-report/v1",
        "matrix": m.name,
        "description": m.description,
        "file": m.file.display().to_string(),
        "columns": m.columns,
        "seeds": m.seeds,
        "cells": stats,
        "groups": groups,
        "runs": runs,
        "provenance": prov,
    })
}

fn markdown(m: &Matrix, rows: &[Row], stats: &[CellStats], groups: &[Group], figs: &[figures::Figure], prov: &Provenance) -> String {
    let mut s = format!("# Matrix `{}`\n\n", m.name);
    if !m.description.is_empty() {
        writeln!(s, "{}\n", m.description.trim()).expect("string");
    }
    writeln!(s, "From `{}`. {}\n", m.file.display(), provenance_line(m, rows, prov)).expect("string");
    writeln!(s, "Each run's directory is `cells/<cell>/seed=<s>/` (its resolved scenario, `metrics.json`, `summary.md`); `cells.csv` has one row per run.\n").expect("string");
    let not_dp: Vec<&CellStats> = stats.iter().filter(|c| !c.calibrations.is_empty()).collect();
    if !not_dp.is_empty() {
        s.push_str("> ⚠ **Not differentially private at the ε shown**: these cells' defenses ran under a published code's noise calibration, reproduced for comparison:\n>\n");
        for c in not_dp {
            let why: Vec<String> = c.calibrations.iter().map(|k| crate::privacy::calibration_warning(k)).collect();
            writeln!(s, "> - `{}`: {}", c.id, why.join("; ")).expect("string");
        }
        s.push('\n');
    }
    // One line per reason (a defense hiding the updates leaves out the same attacks in
    // each of its cells): the attacks, why, and the cells.
    let mut reasons: Vec<(&str, Vec<&str>, Vec<&str>)> = Vec::new();
    for c in &m.cells {
        for (attack, why) in &c.omitted {
            let i = reasons.iter().position(|r| r.0 == why.as_str()).unwrap_or_else(|| {
                reasons.push((why.as_str(), Vec::new(), Vec::new()));
                reasons.len() - 1
            });
            let (_, attacks, cells) = &mut reasons[i];
            if !attacks.contains(&attack.as_str()) {
                attacks.push(attack);
            }
            if cells.last() != Some(&c.id.as_str()) {
                cells.push(&c.id);
            }
        }
    }
    if !reasons.is_empty() {
        s.push_str("Attacks not run in some cells (`–` in their tables):\n\n");
        for (why, attacks, cells) in reasons {
            let attacks: Vec<String> = attacks.iter().map(|a| format!("`{a}`")).collect();
            let cells: Vec<String> = cells.iter().map(|c| format!("`{c}`")).collect();
            let each = if attacks.len() > 1 { "each " } else { "" };
            writeln!(s, "- {}: {each}{why} — in {}", attacks.join(", "), cells.join(", ")).expect("string");
        }
        s.push('\n');
    }
    for g in groups {
        writeln!(s, "## {}\n", g.title).expect("string");
        for t in group_tables(g, stats) {
            writeln!(s, "**{}** ({}):\n\n{}", t.title, t.note, md_table(&t)).expect("string");
        }
        for f in figs.iter().filter(|f| f.group.as_deref() == Some(&g.slug)) {
            writeln!(s, "![{}](figures/{})\n", f.title, f.file).expect("string");
        }
    }
    let curves: Vec<&figures::Figure> = figs.iter().filter(|f| f.group.is_none()).collect();
    if !curves.is_empty() {
        s.push_str("## Training curves\n\n");
        for f in curves {
            writeln!(s, "- [{}](figures/{})", f.title, f.file).expect("string");
        }
        s.push('\n');
    }
    let failed: Vec<&Row> = rows.iter().filter(|r| matches!(r.state, RunState::Failed(_))).collect();
    if !failed.is_empty() {
        s.push_str(&format!("## Failed runs\n\n{FAILED_NOTE}\n\n| cell | seed | error |\n|---|---:|---|\n"));
        for r in failed {
            let RunState::Failed(e) = &r.state else { unreachable!() };
            writeln!(s, "| {} | {} | {} |", m.cells[r.cell].id, r.seed, e.replace('|', "\\|").replace('\n', " ")).expect("string");
        }
        s.push('\n');
    }
    let diverged = diverged_runs(m, rows);
    if !diverged.is_empty() {
        s.push_str(&format!("## Diverged runs\n\n{DIVERGED_NOTE}\n\n"));
        for d in &diverged {
            writeln!(s, "- {d}").expect("string");
        }
        s.push('\n');
    }
    let missing: Vec<&Row> = rows.iter().filter(|r| r.state == RunState::Missing).collect();
    if !missing.is_empty() {
        s.push_str("## Missing runs\n\nNot run yet, or run elsewhere and failed there (see the scheduler's log).\n\n");
        for r in missing {
            writeln!(s, "- {} seed {}", m.cells[r.cell].id, r.seed).expect("string");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_numbers_round_trip() {
        assert_eq!(csv_num(Some(0.1 + 0.2)), "0.30000000000000004");
        assert_eq!(csv_num(Some(f64::INFINITY)), "inf");
        assert_eq!(csv_num(Some(f64::NAN)), "");
        assert_eq!(csv_num(None), "");
    }
}

//! `report.html`: the report as one self-contained page (styles and SVG figures inline,
//! no scripts, nothing fetched), with each cell's resolved scenario and links to the run
//! directories beside it.

use std::fmt::Write as _;

use super::figures::Figure;
use super::spec::Matrix;
use super::stats::{CellStats, DIVERGED_NOTE, FAILED_NOTE, Group, Provenance, Row, Table, diverged_runs, group_tables, provenance_line};
use crate::record::RunState;

pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A relative link to a path inside the report's directory.
fn href(path: &str) -> String {
    path.split('/')
        .map(|seg| {
            seg.bytes()
                .map(|b| if b.is_ascii_alphanumeric() || b"-_.=".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:.3em .6em}td{text-align:right}td:first-child,th:first-child{text-align:left}\
th{background:#f3f3f3}caption{text-align:left;font-weight:600;padding:.3em 0}.note{color:#555;font-weight:normal}\
figure{margin:1em 0}figure svg{max-width:100%;height:auto;display:block}figcaption{color:#555;font-size:.9em}\
.curves{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:1em}\
pre{background:#f7f7f7;padding:.6em;overflow:auto;font-size:.85em}.failed{color:#b00}";

pub fn page(m: &Matrix, rows: &[Row], stats: &[CellStats], groups: &[Group], figs: &[Figure], prov: &Provenance) -> String {
    let mut s = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    writeln!(s, "<title>fgl-sim matrix {}</title>\n<style>{STYLE}</style>\n</head>\n<body>", escape(&m.name)).expect("string");
    writeln!(s, "<h1>Matrix <code>{}</code></h1>", escape(&m.name)).expect("string");
    if !m.description.is_empty() {
        writeln!(s, "<p>{}</p>", escape(m.description.trim())).expect("string");
    }
    writeln!(s, "<p>From <code>{}</code>. {}</p>", escape(&m.file.display().to_string()), escape(&provenance_line(m, rows, prov)))
        .expect("string");
    writeln!(s, "<p>Data: <a href=\"cells.csv\">cells.csv</a> (one row per run), <a href=\"report.json\">report.json</a>, <a href=\"report.md\">report.md</a>.</p>").expect("string");
    for g in groups {
        writeln!(s, "<section class=\"group\">\n<h2>{}</h2>", escape(&g.title)).expect("string");
        for t in group_tables(g, stats) {
            s.push_str(&table(&t));
        }
        for f in figs.iter().filter(|f| f.group.as_deref() == Some(&g.slug)) {
            s.push_str(&figure(f));
        }
        s.push_str("</section>\n");
    }
    let curves: Vec<&Figure> = figs.iter().filter(|f| f.group.is_none()).collect();
    if !curves.is_empty() {
        s.push_str("<h2>Training curves</h2>\n<div class=\"curves\">\n");
        for f in curves {
            s.push_str(&figure(f));
        }
        s.push_str("</div>\n");
    }
    s.push_str("<h2>Cells</h2>\n<table class=\"cells\">\n<tr><th>cell</th><th>runs</th><th>resolved scenario</th></tr>\n");
    for (c, cell) in m.cells.iter().enumerate() {
        let runs: Vec<String> = rows
            .iter()
            .filter(|r| r.cell == c)
            .map(|r| {
                let dir = format!("cells/{}/seed={}", cell.id, r.seed);
                match &r.state {
                    RunState::Finished => format!("<a href=\"{}/summary.md\">seed {}</a>", href(&dir), r.seed),
                    RunState::Failed(e) => {
                        format!("<a class=\"failed\" href=\"{}/error.txt\" title=\"{}\">seed {} failed</a>", href(&dir), escape(e), r.seed)
                    }
                    RunState::Missing => format!("seed {} missing", r.seed),
                }
            })
            .collect();
        writeln!(
            s,
            "<tr><td><code>{}</code></td><td>{}</td><td><details><summary>scenario</summary><pre>{}</pre></details></td></tr>",
            escape(&cell.id),
            runs.join(" · "),
            escape(&cell.scenario.to_yaml())
        )
        .expect("string");
    }
    s.push_str("</table>\n");
    let failed: Vec<&Row> = rows.iter().filter(|r| matches!(r.state, RunState::Failed(_))).collect();
    if !failed.is_empty() {
        writeln!(
            s,
            "<h2>Failed runs</h2>\n<p>{FAILED_NOTE}</p>\n<table class=\"failed-runs\">\n<tr><th>cell</th><th>seed</th><th>error</th></tr>"
        )
        .expect("string");
        for r in failed {
            let RunState::Failed(e) = &r.state else { unreachable!("filtered") };
            writeln!(
                s,
                "<tr><td><code>{}</code></td><td>{}</td><td style=\"text-align:left\">{}</td></tr>",
                escape(&m.cells[r.cell].id),
                r.seed,
                escape(e)
            )
            .expect("string");
        }
        s.push_str("</table>\n");
    }
    let diverged = diverged_runs(m, rows);
    if !diverged.is_empty() {
        writeln!(s, "<h2>Diverged runs</h2>\n<p>{}</p>\n<ul>", escape(DIVERGED_NOTE)).expect("string");
        for d in diverged {
            writeln!(s, "<li><code>{}</code></li>", escape(&d)).expect("string");
        }
        s.push_str("</ul>\n");
    }
    s.push_str("</body>\n</html>\n");
    s
}

fn table(t: &Table) -> String {
    let mut s =
        format!("<table class=\"result\">\n<caption>{} <span class=\"note\">({})</span></caption>\n<tr>", escape(t.title), escape(t.note));
    for h in &t.header {
        write!(s, "<th>{}</th>", escape(h)).expect("string");
    }
    s.push_str("</tr>\n");
    for r in &t.rows {
        s.push_str("<tr>");
        for (i, v) in r.iter().enumerate() {
            if i == 0 {
                write!(s, "<th>{}</th>", escape(v)).expect("string");
            } else {
                write!(s, "<td>{}</td>", escape(v)).expect("string");
            }
        }
        s.push_str("</tr>\n");
    }
    s.push_str("</table>\n");
    s
}

fn figure(f: &Figure) -> String {
    let svg = f.svg.trim_start_matches(|c: char| c != '<');
    let svg = if svg.starts_with("<?xml") { svg.split_once("?>").map_or(svg, |(_, rest)| rest.trim_start()) } else { svg };
    format!(
        "<figure class=\"figure\">\n{svg}\n<figcaption>{} (<a href=\"figures/{}\">SVG</a>)</figcaption>\n</figure>\n",
        escape(&f.title),
        href(&f.file)
    )
}

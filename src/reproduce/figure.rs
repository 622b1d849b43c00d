//! A paper's figure drawn from a reproduction's rows (a table file's `plots`): each of
//! its metrics against one numeric setting key, one curve per model and per value of
//! the other keys that differ (the attack), mean over runs.

use serde::Deserialize;

use super::{Cell, Cells};
use crate::matrix::figures::{Curve, Panel, line_chart};
use crate::matrix::stats::Stat;

/// A figure of a table file: `metrics` of the rows of `table` against the setting key
/// `x`, written as `file` (SVG) beside `reproduce.md`, which shows it under `title`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    pub file: String,
    pub title: String,
    pub table: String,
    pub x: String,
    pub metrics: Vec<String>,
}

impl PlotSpec {
    /// Why the spec cannot be drawn from rows with `metrics` and setting keys `keys` of
    /// its table (`None`: it can).
    pub fn problem(&self, keys: &[String], metrics: &[String]) -> Option<String> {
        let plain = !self.file.contains(['/', '\\']) && self.file.ends_with(".svg") && self.file.len() > 4;
        if !plain {
            return Some(format!("file `{}`: a file name ending in .svg (written beside reproduce.md)", self.file));
        }
        if !keys.contains(&self.x) {
            return Some(format!("x `{}`: not a setting key of table `{}` (its keys: {})", self.x, self.table, keys.join(", ")));
        }
        if self.metrics.is_empty() {
            return Some("metrics: at least one".into());
        }
        self.metrics
            .iter()
            .find(|m| !metrics.contains(m))
            .map(|m| format!("metric `{m}`: table `{}` has no such rows (its metrics: {})", self.table, metrics.join(", ")))
    }
}

/// `key=value` pairs of a setting string.
fn pairs(setting: &str) -> Vec<(&str, &str)> {
    setting.split(';').filter_map(|kv| kv.split_once('=')).collect()
}

/// The figure's SVG, or `None` when no row of its table has a numeric `x`.
pub fn draw(spec: &PlotSpec, cells: &Cells) -> Option<String> {
    let x_of = |c: &Cell| pairs(&c.setting).into_iter().find(|(k, _)| *k == spec.x).and_then(|(_, v)| v.parse::<f64>().ok());
    let rows: Vec<(&Cell, f64)> = cells.0.iter().filter(|c| c.table == spec.table).filter_map(|c| Some((c, x_of(c)?))).collect();
    if rows.is_empty() {
        return None;
    }
    let mut xs: Vec<f64> = rows.iter().map(|r| r.1).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    // The keys besides x whose values differ among the rows name the curves.
    let varying: Vec<&str> = {
        let mut keys: Vec<&str> = rows.iter().flat_map(|(c, _)| pairs(&c.setting)).map(|(k, _)| k).filter(|k| *k != spec.x).collect();
        keys.sort_unstable();
        keys.dedup();
        keys.retain(|k| {
            let mut values: Vec<Option<&str>> =
                rows.iter().map(|(c, _)| pairs(&c.setting).into_iter().find(|(kk, _)| kk == k).map(|(_, v)| v)).collect();
            values.sort_unstable();
            values.dedup();
            values.len() > 1
        });
        keys
    };
    let label = |c: &Cell| {
        let mut parts = vec![c.model.to_uppercase()];
        parts.extend(pairs(&c.setting).into_iter().filter(|(k, _)| varying.contains(k)).map(|(_, v)| v.to_string()));
        parts.join(" ")
    };
    let panels: Vec<Panel> = spec
        .metrics
        .iter()
        .map(|metric| {
            let percent = metric == "test_accuracy";
            let mut curves: Vec<Curve> = Vec::new();
            for (c, x) in rows.iter().filter(|(c, _)| c.metric == metric) {
                let values: Vec<f64> = c.values.iter().map(|v| if percent { v / 100.0 } else { *v }).collect();
                let Some(stat) = Stat::of(&values) else { continue };
                let pos = xs.iter().position(|v| v == x).expect("collected");
                let l = label(c);
                match curves.iter_mut().find(|k| k.label == l) {
                    Some(curve) => curve.points.push((pos, stat)),
                    None => curves.push(Curve { label: l, points: vec![(pos, stat)], reference: None }),
                }
            }
            for curve in &mut curves {
                curve.points.sort_by_key(|p| p.0);
            }
            let ylabel = match metric.as_str() {
                "test_accuracy" => "test accuracy (%)".to_string(),
                "cos_sim" => "cos-sim".to_string(),
                "js_div" => "JS divergence".to_string(),
                m => m.to_string(),
            };
            Panel { caption: format!("{metric} (mean over runs)"), ylabel, percent, curves }
        })
        .collect();
    let ticks: Vec<String> = xs.iter().map(|x| format!("{x}")).collect();
    Some(line_chart(&spec.title, &spec.x, &ticks, &panels))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> PlotSpec {
        PlotSpec { file: "f.svg".into(), title: "T".into(), table: "clients".into(), x: "clients".into(), metrics: vec!["cos_sim".into()] }
    }

    #[test]
    fn curves_per_model_and_attack_over_the_numeric_key() {
        let mut cells = Cells::default();
        for (clients, ec, uni) in [(5, 0.99, 0.61), (50, 0.97, 0.52), (10, 0.98, 0.58)] {
            for model in ["gcn", "sage"] {
                let s = format!("attack=ec-lda;clip=0.01;clients={clients}");
                cells.push("clients", model, &s, "cos_sim", ec, None);
                cells.push("clients", model, &format!("attack=uniform;clip=0.01;clients={clients}"), "cos_sim", uni, None);
                cells.push("clients", model, &s, "test_accuracy", 80.0, None);
            }
        }
        cells.push("other", "gcn", "attack=ec-lda;clients=7", "cos_sim", 0.1, None);
        let svg = draw(&spec(), &cells).expect("drawn");
        // plotters writes a text element's content on a line of its own.
        let text = |t: &str| format!(">\n{t}\n<");
        // One curve per model × attack (the varying key); clip, shared by all, is not named.
        for label in ["GCN ec-lda", "GCN uniform", "SAGE ec-lda", "SAGE uniform"] {
            assert!(svg.contains(&text(label)), "{label} missing");
        }
        assert!(!svg.contains("0.01\n<"), "a shared key in a label");
        // The x ticks in numeric order, only this table's (7 is another table's).
        let at = |t: &str| svg.find(&text(t)).unwrap_or_else(|| panic!("tick {t}"));
        assert!(at("5") < at("10") && at("10") < at("50"));
        assert!(!svg.contains(&text("7")));
        assert!(draw(&PlotSpec { table: "none".into(), ..spec() }, &cells).is_none());
    }

    #[test]
    fn a_spec_names_what_it_cannot_draw() {
        let keys = vec!["attack".to_string(), "clients".to_string()];
        let metrics = vec!["cos_sim".to_string()];
        assert_eq!(spec().problem(&keys, &metrics), None);
        assert!(PlotSpec { file: "../f.svg".into(), ..spec() }.problem(&keys, &metrics).unwrap().contains("file"));
        assert!(PlotSpec { x: "eps".into(), ..spec() }.problem(&keys, &metrics).unwrap().contains("x `eps`"));
        assert!(PlotSpec { metrics: vec!["auc".into()], ..spec() }.problem(&keys, &metrics).unwrap().contains("metric `auc`"));
    }
}

//! The report's SVG figures, drawn with plotters: per (dataset, model) group a heat map
//! of the attack score over attack × defense and privacy–utility curves (test accuracy
//! and attack score against each defense's swept ε); per cell a training curve. Colours
//! are colour-blind safe: viridis for the heat map, the Okabe–Ito palette for lines.

use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;

use super::spec::Matrix;
use super::stats::{CellStats, Group, Row, Slot, Stat, role_label};

/// One SVG file of the report.
#[derive(Debug, Clone)]
pub struct Figure {
    pub file: String,
    pub title: String,
    /// The group (slug) it belongs to; `None` for a cell's training curve.
    pub group: Option<String>,
    pub svg: String,
}

/// Okabe & Ito's colour-blind-safe palette (yellow last: weak on white).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
];
const FONT: &str = "sans-serif";

pub fn all(m: &Matrix, rows: &[Row], groups: &[Group], stats: &[CellStats]) -> Vec<Figure> {
    let mut out = Vec::new();
    for g in groups {
        if let Some(f) = heat_map(g, stats) {
            out.push(f);
        }
        if let Some(f) = privacy_utility(m, g, stats) {
            out.push(f);
        }
    }
    for (c, cell) in m.cells.iter().enumerate() {
        let curves: Vec<(u64, &[f64])> =
            rows.iter().filter(|r| r.cell == c).filter_map(|r| Some((r.seed, r.metrics.as_ref()?.curve.as_slice()))).collect();
        if !curves.is_empty() {
            out.push(training_curve(&cell.id, &curves));
        }
    }
    out
}

/// Attack score (cos-sim) over defense rows × attack columns; `None` when no cell of
/// the group has an attack score.
fn heat_map(g: &Group, stats: &[CellStats]) -> Option<Figure> {
    let value = |d: usize, a: usize| g.cells[d][a].as_ref().and_then(|s| stats[s.cell].slot(s)?.cos_sim);
    if !(0..g.defenses.len()).any(|d| (0..g.attacks.len()).any(|a| value(d, a).is_some())) {
        return None;
    }
    let (nd, na) = (g.defenses.len() as i32, g.attacks.len() as i32);
    let longest = g.defenses.iter().map(|s| s.chars().count()).max().unwrap_or(8) as u32;
    let label_w = (longest * 7 + 20).clamp(90, 320);
    let (w, h) = (label_w + 150 * na as u32 + 150, 120 + 44 * nd as u32);
    let title = format!("Attack score (cos-sim) — {}", g.title);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let (plot, bar) = root.split_horizontally(w - 110);
        let mut chart = ChartBuilder::on(&plot)
            .caption(&title, (FONT, 16))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(label_w)
            .build_cartesian_2d((0..na - 1).into_segmented(), (0..nd - 1).into_segmented())
            .expect("svg");
        let attacks = g.attacks.clone();
        let defenses = g.defenses.clone();
        let xl = move |v: &SegmentValue<i32>| seg_label(v, &attacks);
        // Defenses read top to bottom in table order.
        let yl = move |v: &SegmentValue<i32>| seg_label(&flip(v, nd), &defenses);
        chart
            .configure_mesh()
            .disable_mesh()
            .x_desc("attack")
            .y_desc("defense")
            .x_labels(na as usize)
            .y_labels(nd as usize)
            .x_label_formatter(&xl)
            .y_label_formatter(&yl)
            .label_style((FONT, 12))
            .draw()
            .expect("svg");
        for d in 0..nd {
            for a in 0..na {
                let y = nd - 1 - d;
                let cell = [(SegmentValue::Exact(a), SegmentValue::Exact(y)), (SegmentValue::Exact(a + 1), SegmentValue::Exact(y + 1))];
                match value(d as usize, a as usize) {
                    Some(s) => {
                        let v = s.mean.clamp(0.0, 1.0);
                        chart.draw_series([Rectangle::new(cell, ViridisRGB::get_color(v).filled())]).expect("svg");
                        let ink = if v < 0.6 { WHITE } else { BLACK };
                        let text = Text::new(
                            s.show(1.0, 3),
                            (SegmentValue::CenterOf(a), SegmentValue::CenterOf(y)),
                            TextStyle::from((FONT, 12).into_font()).color(&ink).pos(centre()),
                        );
                        chart.draw_series([text]).expect("svg");
                    }
                    None => {
                        chart.draw_series([Rectangle::new(cell, RGBColor(235, 235, 235).filled())]).expect("svg");
                        let text = Text::new(
                            "–",
                            (SegmentValue::CenterOf(a), SegmentValue::CenterOf(y)),
                            TextStyle::from((FONT, 12).into_font()).pos(centre()),
                        );
                        chart.draw_series([text]).expect("svg");
                    }
                }
            }
        }
        colour_bar(&bar, "cos-sim");
        root.present().expect("svg");
    }
    Some(Figure { file: format!("heatmap-{}.svg", g.slug), title, group: Some(g.slug.clone()), svg })
}

fn centre() -> plotters::style::text_anchor::Pos {
    use plotters::style::text_anchor::{HPos, Pos, VPos};
    Pos::new(HPos::Center, VPos::Center)
}

fn flip(v: &SegmentValue<i32>, n: i32) -> SegmentValue<i32> {
    match v {
        SegmentValue::CenterOf(i) => SegmentValue::CenterOf(n - 1 - i),
        SegmentValue::Exact(i) => SegmentValue::Exact(n - 1 - i),
        SegmentValue::Last => SegmentValue::Last,
    }
}

fn seg_label(v: &SegmentValue<i32>, labels: &[String]) -> String {
    match v {
        SegmentValue::CenterOf(i) => labels.get(*i as usize).cloned().unwrap_or_default(),
        _ => String::new(),
    }
}

/// A vertical viridis scale from 0 to 1 with its label.
fn colour_bar(area: &DrawingArea<SVGBackend, plotters::coord::Shift>, label: &str) {
    let mut chart = ChartBuilder::on(area)
        .margin_top(40)
        .margin_bottom(50)
        .margin_right(50)
        .y_label_area_size(0)
        .right_y_label_area_size(40)
        .build_cartesian_2d(0.0..1.0, 0.0..1.0)
        .expect("svg");
    chart.configure_mesh().disable_mesh().disable_x_axis().y_labels(6).y_desc(label).label_style((FONT, 11)).draw().expect("svg");
    let steps = 50;
    chart
        .draw_series((0..steps).map(|i| {
            let (lo, hi) = (i as f64 / steps as f64, (i + 1) as f64 / steps as f64);
            Rectangle::new([(0.0, lo), (1.0, hi)], ViridisRGB::get_color((lo + hi) / 2.0).filled())
        }))
        .expect("svg");
}

/// A series' label and its (ε position, or none for a reference level; value) points.
type Series = (String, Vec<(Option<usize>, f64)>);

/// A labelled curve over the x axis's tick positions: (position, stat) points and
/// optionally a reference level (a dashed line across, labelled "(no ε)": a defense
/// without the swept parameter).
pub struct Curve {
    pub label: String,
    pub points: Vec<(usize, Stat)>,
    pub reference: Option<f64>,
}

/// Test accuracy and attack score against each defense's first swept parameter; the
/// defenses without one (`none`) as dashed reference lines. `None` without a swept
/// numeric defense parameter.
fn privacy_utility(m: &Matrix, g: &Group, stats: &[CellStats]) -> Option<Figure> {
    let swept: Vec<usize> = (0..m.columns.len()).filter(|&k| m.columns[k].starts_with("defense.")).collect();
    if swept.is_empty() {
        return None;
    }
    // (attack column label, slot) of every filled table entry, and the cells among them.
    let slots: Vec<(&str, &Slot)> =
        g.cells.iter().flat_map(|row| row.iter().zip(&g.attacks).filter_map(|(s, a)| Some((a.as_str(), s.as_ref()?)))).collect();
    let mut cells: Vec<usize> = slots.iter().map(|(_, s)| s.cell).collect();
    cells.sort_unstable();
    cells.dedup();
    // The x value of a cell: its first swept defense parameter with a numeric value.
    let x_of = |c: usize| swept.iter().find_map(|&k| Some((k, parse_num(m.cells[c].params[k].as_deref()?)?)));
    let mut xs: Vec<f64> = cells.iter().filter_map(|&c| x_of(c).map(|(_, x)| x)).collect();
    if xs.is_empty() {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    let pos = |x: f64| xs.iter().position(|&v| v == x).expect("collected");
    let fields: Vec<String> = {
        let mut f: Vec<String> =
            cells.iter().filter_map(|&c| x_of(c)).map(|(k, _)| m.columns[k].trim_start_matches("defense.").to_string()).collect();
        f.dedup();
        f.sort();
        f.dedup();
        f
    };
    // A series per defense label without its x parameter (and per attack for scores).
    let series_key = |c: usize| {
        let label = role_label(m, c, "defense");
        match x_of(c) {
            Some((k, _)) => {
                let base = m.param(c, "defense").unwrap_or("-").to_string();
                let others: Vec<String> = swept
                    .iter()
                    .filter(|&&j| j != k)
                    .filter_map(|&j| Some(format!("{}={}", m.columns[j].trim_start_matches("defense."), m.cells[c].params[j].as_deref()?)))
                    .collect();
                if others.is_empty() { base } else { format!("{base} ({})", others.join(", ")) }
            }
            None => label,
        }
    };
    let mut acc: Vec<Series> = Vec::new();
    // Per attack, its score series by defense.
    let mut score: Vec<(String, Vec<Series>)> = Vec::new();
    let push = |list: &mut Vec<Series>, key: String, x: Option<usize>, v: f64| match list.iter_mut().find(|(k, _)| *k == key) {
        Some((_, pts)) => pts.push((x, v)),
        None => list.push((key, vec![(x, v)])),
    };
    for &c in &cells {
        if let Some(s) = stats[c].test_accuracy {
            push(&mut acc, series_key(c), x_of(c).map(|(_, x)| pos(x)), s.mean);
        }
    }
    for (attack, slot) in &slots {
        if let Some(s) = stats[slot.cell].slot(slot).and_then(|a| a.cos_sim) {
            let i = score.iter().position(|(a, _)| a == attack).unwrap_or_else(|| {
                score.push((attack.to_string(), Vec::new()));
                score.len() - 1
            });
            push(&mut score[i].1, series_key(slot.cell), x_of(slot.cell).map(|(_, x)| pos(x)), s.mean);
        }
    }
    let ticks: Vec<String> = xs.iter().map(|&x| if x.is_infinite() { "∞".into() } else { format!("{x}") }).collect();
    let xdesc = format!("ε ({})", fields.join(" / "));
    let title = format!("Privacy–utility — {}", g.title);
    // Small multiples: test accuracy (with the legend), then the score of each attack; one
    // colour (and marker) per defense, the same in every panel.
    let mut panels = vec![Panel {
        caption: "test accuracy (all attacks' runs)".into(),
        ylabel: "test accuracy (%)".into(),
        percent: true,
        curves: to_curves(&acc),
    }];
    panels.extend(score.iter().map(|(attack, series)| Panel {
        caption: format!("attack score: {attack}"),
        ylabel: "cos-sim".into(),
        percent: false,
        curves: to_curves(series),
    }));
    let svg = line_chart(&title, &xdesc, &ticks, &panels);
    Some(Figure { file: format!("privacy-utility-{}.svg", g.slug), title, group: Some(g.slug.clone()), svg })
}

/// The means of a series pooled per x position (several attacks' cells share a
/// defense's accuracy curve); points without x are a reference level.
fn to_curves(series: &[Series]) -> Vec<Curve> {
    series
        .iter()
        .map(|(label, pts)| {
            let mut xs: Vec<usize> = pts.iter().filter_map(|p| p.0).collect();
            xs.sort_unstable();
            xs.dedup();
            let points = xs
                .iter()
                .filter_map(|&x| Stat::of(&pts.iter().filter(|p| p.0 == Some(x)).map(|p| p.1).collect::<Vec<_>>()).map(|s| (x, s)))
                .collect();
            let reference = Stat::of(&pts.iter().filter(|p| p.0.is_none()).map(|p| p.1).collect::<Vec<_>>()).map(|s| s.mean);
            Curve { label: label.clone(), points, reference }
        })
        .collect()
}

/// One panel of curves over the ε positions `ticks`; curve `i`'s colour is the
/// palette's `i`-th, with triangles instead of dots past the palette's end.
#[allow(clippy::too_many_arguments)]
fn curves_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    caption: &str,
    ylabel: &str,
    scale: f64,
    ticks: &[String],
    xdesc: &str,
    curves: &[(&Curve, usize)],
    legend: bool,
) {
    let n = ticks.len() as i32;
    let ymax = if scale > 1.0 { 100.0 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 13))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d((0..n - 1).into_segmented(), 0.0..ymax)
        .expect("svg");
    let t = ticks.to_vec();
    let xl = move |v: &SegmentValue<i32>| seg_label(v, &t);
    chart
        .configure_mesh()
        .x_desc(xdesc)
        .y_desc(ylabel)
        .x_labels(n as usize)
        .x_label_formatter(&xl)
        .y_label_formatter(&|y| if scale > 1.0 { format!("{y:.0}") } else { format!("{y:.1}") })
        .label_style((FONT, 11))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .expect("svg");
    for &(curve, i) in curves {
        let colour = PALETTE[i % PALETTE.len()];
        let style = ShapeStyle::from(&colour).stroke_width(2);
        let triangles = i >= PALETTE.len();
        if !curve.points.is_empty() {
            let pts: Vec<(SegmentValue<i32>, f64)> =
                curve.points.iter().map(|(x, s)| (SegmentValue::CenterOf(*x as i32), s.mean * scale)).collect();
            let line = chart.draw_series(LineSeries::new(pts.clone(), style)).expect("svg");
            line.label(curve.label.clone()).legend(move |(x, y)| {
                let mark: DynElement<SVGBackend, (i32, i32)> = if triangles {
                    TriangleMarker::new((x + 9, y), 4, style.filled()).into_dyn()
                } else {
                    Circle::new((x + 9, y), 3, style.filled()).into_dyn()
                };
                EmptyElement::at((0, 0)) + PathElement::new(vec![(x, y), (x + 18, y)], style) + mark
            });
            if triangles {
                chart.draw_series(pts.iter().map(|p| TriangleMarker::new(p.clone(), 5, style.filled()))).expect("svg");
            } else {
                chart.draw_series(pts.iter().map(|p| Circle::new(p.clone(), 3, style.filled()))).expect("svg");
            }
        }
        if let Some(r) = curve.reference {
            let y = r * scale;
            let line = [(SegmentValue::Exact(0), y), (SegmentValue::Last, y)];
            let drawn = chart.draw_series(DashedLineSeries::new(line, 6, 4, style)).expect("svg");
            drawn.label(format!("{} (no ε)", curve.label)).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 6, y)], style));
        }
    }
    if legend {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font((FONT, 10))
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .expect("svg");
    }
}

/// One panel of [`line_chart`].
pub struct Panel {
    pub caption: String,
    pub ylabel: String,
    /// Values are fractions drawn as percentages (0–100); otherwise drawn on 0–1.
    pub percent: bool,
    pub curves: Vec<Curve>,
}

/// Panels of curves side by side over one categorical x axis (`ticks`, described by
/// `xdesc`), a label's colour the same in every panel (in the order labels first
/// appear), the legend in the first. Returns the SVG.
pub fn line_chart(title: &str, xdesc: &str, ticks: &[String], panels: &[Panel]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for c in panels.iter().flat_map(|p| &p.curves) {
        if !labels.contains(&c.label.as_str()) {
            labels.push(&c.label);
        }
    }
    let cols = panels.len().clamp(1, 3);
    let rows = panels.len().div_ceil(cols).max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (440 * cols as u32, 40 + 360 * rows as u32)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let root = root.titled(title, (FONT, 16)).expect("svg");
        let areas = root.split_evenly((rows, cols));
        for (i, (panel, area)) in panels.iter().zip(&areas).enumerate() {
            let curves: Vec<(&Curve, usize)> =
                panel.curves.iter().map(|c| (c, labels.iter().position(|l| *l == c.label).expect("collected"))).collect();
            let scale = if panel.percent { 100.0 } else { 1.0 };
            curves_panel(area, &panel.caption, &panel.ylabel, scale, ticks, xdesc, &curves, i == 0);
        }
        root.present().expect("svg");
    }
    svg
}

/// Test accuracy per round, one line per seed.
fn training_curve(id: &str, curves: &[(u64, &[f64])]) -> Figure {
    let rounds = curves.iter().map(|(_, c)| c.len()).max().unwrap_or(1).max(1);
    let title = format!("Training curve — {id}");
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (640, 360)).into_drawing_area();
        root.fill(&WHITE).expect("svg");
        let mut chart = ChartBuilder::on(&root)
            .caption(&title, (FONT, 13))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(1.0..(rounds as f64).max(2.0), 0.0..100.0)
            .expect("svg");
        chart
            .configure_mesh()
            .x_desc("round")
            .y_desc("test accuracy (%)")
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .label_style((FONT, 12))
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .expect("svg");
        for (i, (seed, c)) in curves.iter().enumerate() {
            let style = ShapeStyle::from(&PALETTE[i % PALETTE.len()]).stroke_width(2);
            chart
                .draw_series(LineSeries::new(
                    c.iter().enumerate().filter(|(_, y)| !y.is_nan()).map(|(r, y)| ((r + 1) as f64, y * 100.0)),
                    style,
                ))
                .expect("svg")
                .label(format!("seed {seed}"))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font((FONT, 11))
            .position(SeriesLabelPosition::LowerRight)
            .draw()
            .expect("svg");
        root.present().expect("svg");
    }
    Figure { file: format!("curve-{}.svg", super::stats::slug(id)), title, group: None, svg }
}

fn parse_num(s: &str) -> Option<f64> {
    match s {
        "inf" | ".inf" => Some(f64::INFINITY),
        _ => s.parse::<f64>().ok().filter(|x| x.is_finite()),
    }
}

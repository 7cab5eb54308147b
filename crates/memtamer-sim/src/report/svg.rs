//! SVG plots of a scenario: line plots per `[[plot]]` and a ratio chart for
//! the paper's relative numbers. The layout grows with its content: the
//! legend sits under the plot, one line per series, and the image is as tall
//! as it needs, so no label is ever cut off (the headless-browser check in
//! scripts/check-report measures every text box against the image).

use super::{num, series_label, v_str};
use crate::experiment::{Comparison, ScenarioResult};
use std::collections::BTreeMap;
use std::fmt::Write;

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

/// Image width, pixels.
const W: f64 = 720.0;
/// Width of one character of 11 px sans-serif, generous (for truncation).
const CHAR_W: f64 = 6.6;
/// Height of one legend line.
const LEGEND_LINE: f64 = 16.0;

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `s` cut to `max` characters with an ellipsis (the full text goes into a
/// `<title>` tooltip by the caller).
fn fit(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// A round tick step (1, 2 or 5 times a power of ten) near `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    let m = raw / p;
    let n = if m <= 1.0 {
        1.0
    } else if m <= 2.0 {
        2.0
    } else if m <= 5.0 {
        5.0
    } else {
        10.0
    };
    n * p
}

/// A tick label of a round `step`: as many decimals as the step needs
/// (0.5 -> "1.5", not "1.500").
fn tick_label(v: f64, step: f64) -> String {
    let decimals = if step >= 1.0 || !step.is_finite() || step <= 0.0 {
        0
    } else {
        (-step.log10().floor()) as usize
    };
    format!("{v:.decimals$}")
}

/// The x axis of a plot: its label (with unit) and, for a swept key whose
/// values are words (`policy`, `placement`), those words at x = 0, 1, ...
#[derive(Clone, Debug, Default, PartialEq)]
pub struct XAxis {
    /// Label with unit.
    pub label: String,
    /// Category names; empty for a numeric axis.
    pub categories: Vec<String>,
}

/// The x axis label of a swept key, with the unit its name implies:
/// `job.fio.threads` -> "fio threads (count)", `...request_bytes` ->
/// "fio request size (bytes)".
pub fn x_axis_label(key: &str) -> String {
    let parts: Vec<&str> = key.split('.').collect();
    let last = parts.last().copied().unwrap_or(key);
    let job = match parts.as_slice() {
        ["job", job, ..] => format!("{job} "),
        _ => String::new(),
    };
    let (what, unit) = match last {
        "threads" => ("threads", "count"),
        "request_bytes" => ("request size", "bytes"),
        "n" => ("tasks of each type N", "count"),
        l if l.ends_with("_bytes") => (l.trim_end_matches("_bytes"), "bytes"),
        l if l.ends_with("_ns") => (l.trim_end_matches("_ns"), "ns"),
        l if l.ends_with("_us") => (l.trim_end_matches("_us"), "µs"),
        l if l.ends_with("_ms") => (l.trim_end_matches("_ms"), "ms"),
        l if l.ends_with("_gbps") => (l.trim_end_matches("_gbps"), "GB/s"),
        l if l.ends_with("_entries") => (l, "count"),
        l => return format!("{job}{l}"),
    };
    format!("{job}{what} ({unit})")
}

/// Tick positions of a numeric x axis over `[x0, x1]`: every data x when
/// there are few (sweeps are usually short lists), else round steps; the
/// last x is always a tick, and ticks closer than `min_gap` (in x units) to
/// a later one are dropped so labels never overlap.
pub fn x_ticks(x0: f64, x1: f64, data: &[f64], min_gap: f64) -> Vec<f64> {
    let mut xs: Vec<f64> = data.iter().copied().filter(|x| x.is_finite()).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
    let mut ticks = if !xs.is_empty() && xs.len() <= 12 {
        xs
    } else {
        let step = nice_step((x1 - x0) / 6.0);
        let mut t = Vec::new();
        let mut v = (x0 / step).ceil() * step;
        while v <= x1 + step * 1e-6 {
            t.push(v);
            v += step;
        }
        if t.last().is_none_or(|l| (x1 - l).abs() > step * 1e-6) {
            t.push(x1);
        }
        t
    };
    // keep the last tick; drop earlier ones that crowd the next kept one
    let mut kept: Vec<f64> = Vec::new();
    while let Some(t) = ticks.pop() {
        if kept.last().is_none_or(|k| k - t >= min_gap) {
            kept.push(t);
        }
    }
    kept.reverse();
    kept
}

/// One SVG line plot: `series` are (name, points), `paper` (tooltip, x, y)
/// squares. The legend lists the series under the plot.
pub fn svg_plot(
    title: &str,
    x_axis: &XAxis,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    paper: &[(String, f64, f64)],
) -> String {
    let (ml, mr, mt, plot_h) = (64.0, 20.0, 30.0, 280.0);
    let axis_y = mt + plot_h;
    let legend_top = axis_y + 52.0;
    let legend_lines = series.len() + usize::from(!paper.is_empty());
    let h = legend_top + LEGEND_LINE * legend_lines as f64 + 6.0;
    let pts = series
        .iter()
        .flat_map(|s| s.1.iter().copied())
        .chain(paper.iter().map(|p| (p.1, p.2)));
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, f64::MIN);
    for (x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if !x_axis.categories.is_empty() {
        x0 = 0.0;
        x1 = (x_axis.categories.len() as f64 - 1.0).max(x1);
    }
    if x0 > x1 {
        x0 = 0.0;
        x1 = 1.0;
    }
    let span = if (x1 - x0).abs() < 1e-12 {
        1.0
    } else {
        x1 - x0
    };
    if y1.is_nan() || y1 <= 0.0 {
        y1 = 1.0;
    }
    y1 *= 1.08;
    // a category axis gets half a slot of room on each side
    let pad = if x_axis.categories.is_empty() {
        0.0
    } else {
        0.5
    };
    let px = |x: f64| ml + (x - x0 + pad) / (span + 2.0 * pad) * (W - ml - mr);
    let py = |y: f64| axis_y - y / y1 * plot_h;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(s, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let title_chars = ((W - ml - 4.0) / (CHAR_W * 1.2)) as usize;
    let _ = write!(
        s,
        r#"<text x="{ml}" y="18" font-size="13" font-weight="bold">{}<title>{}</title></text>"#,
        esc(&fit(title, title_chars)),
        esc(title)
    );
    let _ = write!(
        s,
        r#"<line x1="{ml}" y1="{axis_y}" x2="{}" y2="{axis_y}" stroke="black"/><line x1="{ml}" y1="{mt}" x2="{ml}" y2="{axis_y}" stroke="black"/>"#,
        W - mr,
    );
    let ystep = nice_step(y1 / 1.08 / 5.0);
    let mut yv = 0.0;
    while yv <= y1 * 1.0001 {
        let y = py(yv);
        let _ = write!(
            s,
            r##"<line x1="{ml}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - mr,
            ml - 4.0,
            y + 4.0,
            tick_label(yv, ystep)
        );
        yv += ystep;
    }
    if x_axis.categories.is_empty() {
        let data: Vec<f64> = series
            .iter()
            .flat_map(|s| s.1.iter().map(|p| p.0))
            .collect();
        // at least 36 px between tick labels
        let min_gap = 36.0 / (W - ml - mr) * span;
        for xv in x_ticks(x0, x1, &data, min_gap) {
            let _ = write!(
                s,
                r#"<line x1="{x:.1}" y1="{axis_y}" x2="{x:.1}" y2="{}" stroke="black"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"#,
                axis_y + 4.0,
                axis_y + 16.0,
                num(xv),
                x = px(xv),
            );
        }
    } else {
        let slot = (W - ml - mr) / (span + 1.0);
        let chars = ((slot - 4.0) / CHAR_W).max(3.0) as usize;
        for (i, c) in x_axis.categories.iter().enumerate() {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{}" text-anchor="middle">{}<title>{}</title></text>"#,
                px(i as f64),
                axis_y + 16.0,
                esc(&fit(c, chars)),
                esc(c)
            );
        }
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
        (ml + W - mr) / 2.0,
        axis_y + 36.0,
        esc(&x_axis.label)
    );
    let _ = write!(
        s,
        r#"<text transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        mt + plot_h / 2.0,
        esc(&fit(y_label, (plot_h / CHAR_W) as usize))
    );
    let legend_chars = ((W - ml - 30.0) / CHAR_W) as usize;
    for (i, (name, data)) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        // past eight series the colours repeat: dash the repeats apart
        let dash = match i / COLORS.len() {
            0 => "",
            1 => r#" stroke-dasharray="6,3""#,
            _ => r#" stroke-dasharray="2,2""#,
        };
        let path: Vec<String> = data
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2"{dash} points="{}"/>"#,
            path.join(" ")
        );
        for (x, y) in data {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{c}"/>"#,
                px(*x),
                py(*y)
            );
        }
        let ly = legend_top + LEGEND_LINE * i as f64;
        let _ = write!(
            s,
            r#"<g class="legend"><line x1="{ml}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="2"{dash}/><text x="{}" y="{}">{}<title>{}</title></text></g>"#,
            ml + 18.0,
            ml + 24.0,
            ly + 4.0,
            esc(&fit(name, legend_chars)),
            esc(name)
        );
    }
    for (label, x, y) in paper {
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="none" stroke="black" stroke-width="1.5"><title>{}</title></rect>"#,
            px(*x) - 4.0,
            py(*y) - 4.0,
            esc(label)
        );
    }
    if !paper.is_empty() {
        let ly = legend_top + LEGEND_LINE * series.len() as f64;
        let _ = write!(
            s,
            r#"<g class="legend"><rect x="{}" y="{}" width="8" height="8" fill="none" stroke="black"/><text x="{}" y="{}">paper (hover a square for its source)</text></g>"#,
            ml + 5.0,
            ly - 4.0,
            ml + 24.0,
            ly + 4.0
        );
    }
    s.push_str("</svg>");
    s
}

/// One row of the ratio chart: a paper ratio and the simulated one.
#[derive(Clone, Debug, PartialEq)]
pub struct RatioRow {
    /// What the ratio is (figure, metric, x, numerator and denominator).
    pub label: String,
    /// Published ratio.
    pub paper: f64,
    /// Simulated ratio.
    pub sim: Option<f64>,
}

/// The paper's ratios ("PATS over Baseline", "blended over separated") on a
/// ratio axis with 1 marked: one row each, the paper's value a square and the
/// simulated one a dot.
pub fn ratio_plot(title: &str, rows: &[RatioRow]) -> String {
    let (label_w, mr, mt, row_h) = (400.0, 24.0, 52.0, 28.0);
    let h = mt + row_h * rows.len() as f64 + 34.0;
    let x_max = rows
        .iter()
        .flat_map(|r| [Some(r.paper), r.sim])
        .flatten()
        .filter(|v| v.is_finite())
        .fold(1.0f64, f64::max)
        * 1.1;
    let x0 = label_w + 8.0;
    let px = |v: f64| x0 + v.max(0.0) / x_max * (W - x0 - mr);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h}" viewBox="0 0 {W} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(s, r#"<rect width="{W}" height="{h}" fill="white"/>"#);
    let _ = write!(
        s,
        r#"<text x="8" y="18" font-size="13" font-weight="bold">{}<title>{}</title></text>"#,
        esc(&fit(title, ((W - 16.0) / (CHAR_W * 1.2)) as usize)),
        esc(title)
    );
    let _ = write!(
        s,
        r#"<g class="legend"><rect x="8" y="30" width="8" height="8" fill="none" stroke="black" stroke-width="1.5"/><text x="22" y="38">paper</text><circle cx="76" cy="34" r="4" fill="{}"/><text x="86" y="38">simulated (ratio, 1 = equal)</text></g>"#,
        COLORS[0]
    );
    let axis_y = mt + row_h * rows.len() as f64;
    let step = nice_step(x_max / 6.0);
    let mut v = 0.0;
    while v <= x_max * 1.0001 {
        let x = px(v);
        let _ = write!(
            s,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{axis_y}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            mt - 6.0,
            axis_y + 14.0,
            tick_label(v, step)
        );
        v += step;
    }
    let one = px(1.0);
    let _ = write!(
        s,
        r#"<line x1="{one:.1}" y1="{}" x2="{one:.1}" y2="{axis_y}" stroke="black" stroke-dasharray="4,3"/><text x="{:.1}" y="{}" text-anchor="middle">ratio (1 = equal)</text>"#,
        mt - 6.0,
        (x0 + W - mr) / 2.0,
        axis_y + 28.0
    );
    let chars = (label_w / CHAR_W) as usize;
    for (i, r) in rows.iter().enumerate() {
        let y = mt + row_h * i as f64 + row_h / 2.0;
        // what is divided on the first line, by what on the second
        let (num_part, den_part) = r.label.split_once(" / ").unwrap_or((&r.label, ""));
        let _ = write!(
            s,
            r#"<text x="8" y="{:.1}">{}<title>{}</title></text>"#,
            y - 2.0,
            esc(&fit(num_part, chars)),
            esc(&r.label)
        );
        if !den_part.is_empty() {
            let _ = write!(
                s,
                r##"<text x="16" y="{:.1}" font-size="10" fill="#555">/ {}</text>"##,
                y + 10.0,
                esc(&fit(den_part, chars.saturating_sub(4)))
            );
        }
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="none" stroke="black" stroke-width="1.5"><title>paper {}</title></rect>"#,
            px(r.paper) - 4.0,
            y - 4.0,
            num(r.paper)
        );
        if let Some(sim) = r.sim {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{y:.1}" r="4" fill="{}"><title>simulated {}</title></circle>"#,
                px(sim),
                COLORS[0],
                num(sim)
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// Whether a comparison is a ratio (over another x or another series).
pub(super) fn is_ratio(c: &Comparison) -> bool {
    c.relative_to.is_some() || !c.relative_with.is_empty()
}

/// What a comparison's number is, in words: "pm.request_write_gbps at 14
/// [policy=pats] / same at 0 with policy=baseline".
pub(super) fn describe(r: &ScenarioResult, c: &Comparison) -> String {
    let mut d = format!("{} at {}", c.metric, num(c.x));
    if !c.with.is_empty() {
        d += &format!(" [{}]", series_label(r, &c.with));
    }
    if is_ratio(c) {
        d += " / same";
        if let Some(x) = c.relative_to {
            d += &format!(" at {}", num(x));
        }
        if !c.relative_with.is_empty() {
            d += &format!(" with {}", series_label(r, &c.relative_with));
        }
    }
    d
}

/// The x axis of a scenario's plots, and each point's x on it.
fn x_axis_of(r: &ScenarioResult, x_label: Option<&str>) -> (XAxis, Vec<f64>) {
    let label = x_label.map(str::to_string).unwrap_or_else(|| {
        r.x_key
            .as_deref()
            .map_or("point (index)".into(), x_axis_label)
    });
    let numeric = r.points.iter().all(|p| p.x.is_some());
    if numeric {
        let xs = r.points.iter().filter_map(|p| p.x).collect();
        return (
            XAxis {
                label,
                categories: Vec::new(),
            },
            xs,
        );
    }
    let mut categories: Vec<String> = Vec::new();
    let mut xs = Vec::new();
    for (i, p) in r.points.iter().enumerate() {
        let name = r
            .x_key
            .as_ref()
            .and_then(|k| p.params.get(k))
            .map_or_else(|| i.to_string(), v_str);
        let at = categories
            .iter()
            .position(|c| *c == name)
            .unwrap_or_else(|| {
                categories.push(name);
                categories.len() - 1
            });
        xs.push(at as f64);
    }
    (XAxis { label, categories }, xs)
}

/// SVG plots of one scenario result: one per `[[plot]]`, then the ratio
/// chart when the scenario has paper ratios.
pub fn scenario_svgs(r: &ScenarioResult) -> Vec<String> {
    let mut out = Vec::new();
    for plot in &r.plots {
        let (x_axis, xs) = x_axis_of(r, plot.x_label.as_deref());
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for metric in &plot.y {
            let mut groups: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
            for (i, p) in r.points.iter().enumerate() {
                let Some(v) = p.metrics.get(metric) else {
                    continue;
                };
                groups
                    .entry(series_label(r, &p.params))
                    .or_default()
                    .push((xs[i], *v));
            }
            for (label, mut data) in groups {
                if let Some(at) = plot.normalize_at {
                    let base = data
                        .iter()
                        .find(|(x, _)| (*x - at).abs() < 1e-9)
                        .map(|d| d.1);
                    if let Some(b) = base.filter(|b| *b != 0.0) {
                        for d in &mut data {
                            d.1 /= b;
                        }
                    }
                }
                let name = if label.is_empty() {
                    metric.clone()
                } else if plot.y.len() == 1 {
                    label
                } else {
                    format!("{metric} {label}")
                };
                series.push((name, data));
            }
        }
        // paper values on this plot's own axis only: absolute values on an
        // absolute plot, "relative to x" values on a plot normalized at that
        // x; ratios across series go to the ratio chart
        let paper: Vec<(String, f64, f64)> = if x_axis.categories.is_empty() {
            r.paper
                .iter()
                .filter(|c| {
                    plot.y.contains(&c.metric)
                        && c.relative_with.is_empty()
                        && c.relative_to == plot.normalize_at
                })
                .map(|c| {
                    (
                        format!("{}: {} ({})", c.figure, num(c.paper), c.source),
                        c.x,
                        c.paper,
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        out.push(svg_plot(
            &plot.title,
            &x_axis,
            &plot.y_label,
            &series,
            &paper,
        ));
    }
    let ratios: Vec<RatioRow> = r
        .paper
        .iter()
        .filter(|c| is_ratio(c))
        .map(|c| RatioRow {
            label: format!("{} · {}", c.figure, describe(r, c)),
            paper: c.paper,
            sim: c.sim,
        })
        .collect();
    if !ratios.is_empty() {
        out.push(ratio_plot(
            &format!(
                "{}: the paper's ratios beside the simulated ones",
                r.scenario
            ),
            &ratios,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_labels_have_the_decimals_of_their_step() {
        assert_eq!(tick_label(1.5, 0.5), "1.5");
        assert_eq!(tick_label(0.2, 0.2), "0.2");
        assert_eq!(tick_label(10.0, 5.0), "10");
        assert_eq!(tick_label(0.05, 0.05), "0.05");
    }

    #[test]
    fn x_labels_carry_units() {
        assert_eq!(x_axis_label("job.fio.threads"), "fio threads (count)");
        assert_eq!(
            x_axis_label("job.fio.workload.request_bytes"),
            "fio request size (bytes)"
        );
        assert_eq!(x_axis_label("job.be.workload.gap_ns"), "be gap (ns)");
        assert_eq!(x_axis_label("policy"), "policy");
    }

    #[test]
    fn the_last_x_is_always_a_tick() {
        // 0..14 in steps that do not hit 14
        let data: Vec<f64> = (0..=14).map(f64::from).collect();
        let t = x_ticks(0.0, 14.0, &data, 1.5);
        assert_eq!(t.last(), Some(&14.0));
        assert!(t.windows(2).all(|w| w[1] - w[0] >= 1.5), "{t:?}");
        // a few data points: each is a tick
        let t = x_ticks(0.0, 14.0, &[0.0, 1.0, 2.0, 4.0, 14.0], 0.5);
        assert_eq!(t, vec![0.0, 1.0, 2.0, 4.0, 14.0]);
        // crowded ones give way, the last stays
        let t = x_ticks(0.0, 14.0, &[0.0, 13.5, 14.0], 1.0);
        assert_eq!(t, vec![0.0, 14.0]);
        // many points: round steps plus the end
        let data: Vec<f64> = (0..=37).map(f64::from).collect();
        let t = x_ticks(0.0, 37.0, &data, 3.0);
        assert_eq!(t.first(), Some(&0.0));
        assert_eq!(t.last(), Some(&37.0));
    }

    #[test]
    fn the_legend_grows_the_image_instead_of_overflowing() {
        let series: Vec<(String, Vec<(f64, f64)>)> = (0..30)
            .map(|i| (format!("series {i} {}", "x".repeat(200)), vec![(0.0, 1.0)]))
            .collect();
        let svg = svg_plot("t", &XAxis::default(), "GB/s", &series, &[]);
        let h: f64 = svg
            .split("height=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .unwrap()
            .parse()
            .unwrap();
        assert!(h >= 30.0 * LEGEND_LINE, "height {h}");
        // long names are cut to the width, the full name is the tooltip
        assert!(svg.contains('…'));
        assert!(svg.contains(&"x".repeat(200)));
    }
}

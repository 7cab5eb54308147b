//! Text tables, CSV and an HTML report with SVG line plots (no JavaScript,
//! no external assets): one plot per figure, the simulated curves and the
//! paper's points where the text gives them.

use crate::experiment::ScenarioResult;
use std::collections::BTreeMap;
use std::fmt::Write;

/// Series label of a point: its swept values other than the x axis.
fn series_label(r: &ScenarioResult, params: &BTreeMap<String, toml::Value>) -> String {
    let parts: Vec<String> = params
        .iter()
        .filter(|(k, _)| Some(*k) != r.x_key.as_ref())
        .map(|(k, v)| format!("{}={}", k.rsplit('.').next().unwrap_or(k), v_str(v)))
        .collect();
    parts.join(",")
}

fn v_str(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Formats a number for tables.
pub fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.fract().abs() < 1e-9 && v.abs() < 1e6 {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.3}")
    } else {
        let t = format!("{v:.4}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// Metrics shown in the text table: those named by plots, else a default set.
fn table_metrics(r: &ScenarioResult) -> Vec<String> {
    let mut m: Vec<String> = r.plots.iter().flat_map(|p| p.y.clone()).collect();
    if m.is_empty() {
        if let Some(p) = r.points.first() {
            m = p
                .metrics
                .keys()
                .filter(|k| k.ends_with(".gbps") || k.ends_with("_us") || k.ends_with("latency_ns"))
                .cloned()
                .collect();
        }
    }
    m.dedup();
    m
}

/// A plain-text table of all points, then paper comparisons and checks.
pub fn table(r: &ScenarioResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# {} — {}", r.scenario, r.title);
    let _ = writeln!(
        out,
        "# platform {} · policy {} · seed {}",
        r.platform, r.policy, r.seed
    );
    let metrics = table_metrics(r);
    let mut header: Vec<String> = Vec::new();
    if let Some(p) = r.points.first() {
        header.extend(
            p.params
                .keys()
                .map(|k| k.rsplit('.').next().unwrap_or(k).to_string()),
        );
    }
    header.extend(metrics.iter().cloned());
    let mut rows: Vec<Vec<String>> = Vec::new();
    for p in &r.points {
        let mut row: Vec<String> = p.params.values().map(v_str).collect();
        row.extend(
            metrics
                .iter()
                .map(|m| p.metrics.get(m).map_or("-".into(), |v| num(*v))),
        );
        rows.push(row);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .map(|r| r.get(i).map_or(0, |s| s.len()))
                .chain(std::iter::once(header[i].len()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        cells
            .iter()
            .zip(widths.iter())
            .map(|(c, w)| format!("{c:>w$}"))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let _ = writeln!(out, "{}", line(&header));
    for row in &rows {
        let _ = writeln!(out, "{}", line(row));
    }
    if !r.paper.is_empty() {
        let _ = writeln!(out, "\npaper vs simulated:");
        for c in &r.paper {
            let mut rel = c
                .relative_to
                .map_or(String::new(), |x| format!(" / value at {x}"));
            if !c.relative_with.is_empty() {
                rel += &format!(" / same with {}", series_label(r, &c.relative_with));
            }
            let with = if c.with.is_empty() {
                String::new()
            } else {
                format!(" [{}]", series_label(r, &c.with))
            };
            let _ = writeln!(
                out,
                "  {:<24} {}{} at x={}{}: paper {} · sim {}",
                c.figure,
                c.metric,
                rel,
                c.x,
                with,
                num(c.paper),
                c.sim.map_or("-".into(), num)
            );
        }
    }
    if !r.checks.is_empty() {
        let _ = writeln!(out, "\nchecks:");
        for c in &r.checks {
            let bounds = match (c.min, c.max) {
                (Some(a), Some(b)) => format!("in [{a}, {b}]"),
                (Some(a), None) => format!(">= {a}"),
                (None, Some(b)) => format!("<= {b}"),
                (None, None) => String::new(),
            };
            let _ = writeln!(
                out,
                "  [{}] {}: {} ({bounds})",
                if c.pass { "PASS" } else { "FAIL" },
                c.name,
                c.value.map_or("-".into(), num)
            );
        }
    }
    out
}

/// CSV: one row per point, params then every metric.
pub fn csv(r: &ScenarioResult) -> String {
    let mut keys: Vec<String> = Vec::new();
    for p in &r.points {
        for k in p.metrics.keys() {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
    }
    keys.sort();
    let mut out = String::new();
    let params: Vec<String> = r
        .points
        .first()
        .map(|p| p.params.keys().cloned().collect())
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}",
        params
            .iter()
            .chain(keys.iter())
            .cloned()
            .collect::<Vec<_>>()
            .join(",")
    );
    for p in &r.points {
        let mut cells: Vec<String> = p.params.values().map(v_str).collect();
        cells.extend(
            keys.iter()
                .map(|k| p.metrics.get(k).map_or(String::new(), |v| v.to_string())),
        );
        let _ = writeln!(out, "{}", cells.join(","));
    }
    out
}

const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
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

/// One SVG line plot.
pub fn svg_plot(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
    paper: &[(String, f64, f64)],
) -> String {
    let (w, h, ml, mr, mt, mb) = (640.0, 360.0, 60.0, 180.0, 30.0, 45.0);
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
    if x0 > x1 {
        x0 = 0.0;
        x1 = 1.0;
    }
    if (x1 - x0).abs() < 1e-12 {
        x1 = x0 + 1.0;
    }
    if y1.is_nan() || y1 <= 0.0 {
        y1 = 1.0;
    }
    y1 *= 1.08;
    let px = |x: f64| ml + (x - x0) / (x1 - x0) * (w - ml - mr);
    let py = |y: f64| h - mb - y / y1 * (h - mt - mb);
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="11">"#
    );
    let _ = write!(s, r#"<rect width="{w}" height="{h}" fill="white"/>"#);
    let _ = write!(
        s,
        r#"<text x="{}" y="18" font-size="13" font-weight="bold">{}</text>"#,
        ml,
        esc(title)
    );
    // axes and ticks
    let _ = write!(
        s,
        r#"<line x1="{ml}" y1="{}" x2="{}" y2="{}" stroke="black"/><line x1="{ml}" y1="{mt}" x2="{ml}" y2="{}" stroke="black"/>"#,
        h - mb,
        w - mr,
        h - mb,
        h - mb
    );
    let ystep = nice_step(y1 / 1.08 / 5.0);
    let mut yv = 0.0;
    while yv <= y1 * 1.0001 {
        let y = py(yv);
        let _ = write!(
            s,
            r##"<line x1="{ml}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            w - mr,
            ml - 4.0,
            y + 4.0,
            num(yv)
        );
        yv += ystep;
    }
    let xstep = nice_step((x1 - x0) / 6.0);
    let mut xv = (x0 / xstep).ceil() * xstep;
    while xv <= x1 + xstep * 1e-6 {
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(xv),
            h - mb + 15.0,
            num(xv)
        );
        xv += xstep;
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
        (ml + w - mr) / 2.0,
        h - 8.0,
        esc(x_label)
    );
    let _ = write!(
        s,
        r#"<text transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (mt + h - mb) / 2.0,
        esc(y_label)
    );
    for (i, (name, data)) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let path: Vec<String> = data
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
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
        let ly = mt + 14.0 * i as f64 + 10.0;
        let _ = write!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{c}" stroke-width="2"/><text x="{}" y="{}">{}</text>"#,
            w - mr + 8.0,
            w - mr + 24.0,
            w - mr + 28.0,
            ly + 4.0,
            esc(name)
        );
    }
    for (i, (label, x, y)) in paper.iter().enumerate() {
        let _ = write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="8" height="8" fill="none" stroke="black" stroke-width="1.5"><title>{}</title></rect>"#,
            px(*x) - 4.0,
            py(*y) - 4.0,
            esc(label)
        );
        if i == 0 {
            let ly = mt + 14.0 * series.len() as f64 + 10.0;
            let _ = write!(
                s,
                r#"<rect x="{}" y="{}" width="8" height="8" fill="none" stroke="black"/><text x="{}" y="{}">paper</text>"#,
                w - mr + 12.0,
                ly - 4.0,
                w - mr + 28.0,
                ly + 4.0
            );
        }
    }
    s.push_str("</svg>");
    s
}

/// SVG plots of one scenario result (one per [[plot]]).
pub fn scenario_svgs(r: &ScenarioResult) -> Vec<String> {
    let x_label = r.x_key.clone().unwrap_or_else(|| "point".into());
    let mut out = Vec::new();
    for plot in &r.plots {
        let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for metric in &plot.y {
            let mut groups: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
            for (i, p) in r.points.iter().enumerate() {
                let Some(v) = p.metrics.get(metric) else {
                    continue;
                };
                let x = p.x.unwrap_or(i as f64);
                groups
                    .entry(series_label(r, &p.params))
                    .or_default()
                    .push((x, *v));
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
        let paper: Vec<(String, f64, f64)> = r
            .paper
            .iter()
            .filter(|c| {
                plot.y.contains(&c.metric)
                    && (c.relative_to.is_some() == plot.normalize_at.is_some())
            })
            .map(|c| {
                (
                    format!("{}: {} ({})", c.figure, c.paper, c.source),
                    c.x,
                    c.paper,
                )
            })
            .collect();
        out.push(svg_plot(
            &plot.title,
            &x_label,
            &plot.y_label,
            &series,
            &paper,
        ));
    }
    out
}

/// A self-contained HTML page for several scenario results.
pub fn html(title: &str, results: &[ScenarioResult]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title><style>body{{font-family:sans-serif;max-width:1100px;margin:2em auto}}pre{{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}}.fail{{color:#b00}}.pass{{color:#070}}</style></head><body><h1>{}</h1>",
        esc(title),
        esc(title)
    );
    for r in results {
        let _ = write!(
            s,
            "<h2>{}</h2><p>{}<br>platform <code>{}</code>, policy <code>{}</code>, seed {}</p>",
            esc(&r.scenario),
            esc(&r.title),
            esc(&r.platform),
            esc(&r.policy),
            r.seed
        );
        for svg in scenario_svgs(r) {
            s.push_str(&svg);
            s.push('\n');
        }
        if !r.checks.is_empty() {
            s.push_str("<ul>");
            for c in &r.checks {
                let _ = write!(
                    s,
                    "<li class=\"{}\">{} {}: {}</li>",
                    if c.pass { "pass" } else { "fail" },
                    if c.pass { "PASS" } else { "FAIL" },
                    esc(&c.name),
                    c.value.map_or("-".into(), num)
                );
            }
            s.push_str("</ul>");
        }
        let _ = write!(
            s,
            "<details><summary>table</summary><pre>{}</pre></details>",
            esc(&table(r))
        );
    }
    s.push_str("</body></html>\n");
    s
}

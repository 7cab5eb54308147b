//! Text tables, CSV and an HTML report with SVG line plots (no JavaScript,
//! no external assets): one plot per figure, the simulated curves and the
//! paper's points where the text gives them, the paper's ratios on a ratio
//! axis of their own, and a paper-vs-simulated deviation table.

use crate::experiment::ScenarioResult;

mod html;
mod svg;

pub use html::{deviation, html, within, DEFAULT_PAPER_TOLERANCE};
use memtamer_core::text::pad_left;
use std::collections::BTreeMap;
use std::fmt::Write;
pub use svg::{ratio_plot, scenario_svgs, svg_plot, x_axis_label, x_ticks, RatioRow, XAxis};

/// Series label of a point: its swept values other than the x axis.
pub(crate) fn series_label(r: &ScenarioResult, params: &BTreeMap<String, toml::Value>) -> String {
    let parts: Vec<String> = params
        .iter()
        .filter(|(k, _)| Some(*k) != r.x_key.as_ref())
        .map(|(k, v)| format!("{}={}", k.rsplit('.').next().unwrap_or(k), v_str(v)))
        .collect();
    parts.join(",")
}

pub(crate) fn v_str(v: &toml::Value) -> String {
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
            .map(|(c, w)| pad_left(c, *w))
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

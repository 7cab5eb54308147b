//! The HTML report: a summary with a table of contents (checks passed and
//! failed, paper points within tolerance per scenario), then per scenario its
//! plots, its checks and a paper-vs-simulated table with the deviation and
//! the tolerance it is held to. Self-contained: no JavaScript, no assets.

use super::svg::{describe, esc, scenario_svgs};
use super::{num, table};
use crate::experiment::{Comparison, ScenarioResult};
use std::fmt::Write;

/// Relative deviation |sim / paper - 1| within which a paper point counts as
/// reproduced in the report, unless its `[[paper]]` sets `tolerance`. The
/// simulator reproduces trends and knees, not every published digit; 25% is
/// the band docs/simulator.md calls "close".
pub const DEFAULT_PAPER_TOLERANCE: f64 = 0.25;

/// `sim / paper - 1`, when both exist and the paper value is not 0.
pub fn deviation(c: &Comparison) -> Option<f64> {
    let sim = c.sim?;
    (c.paper != 0.0 && c.paper.is_finite() && sim.is_finite()).then(|| sim / c.paper - 1.0)
}

/// Whether a comparison is within its tolerance (None: not simulated).
pub fn within(c: &Comparison) -> Option<bool> {
    deviation(c).map(|d| d.abs() <= c.tolerance.unwrap_or(DEFAULT_PAPER_TOLERANCE))
}

/// A fragment id for a scenario section.
fn anchor(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// Counts of one scenario: (checks passed, checks total, paper within, paper total).
fn counts(r: &ScenarioResult) -> (usize, usize, usize, usize) {
    let passed = r.checks.iter().filter(|c| c.pass).count();
    let within_n = r.paper.iter().filter(|c| within(c) == Some(true)).count();
    (passed, r.checks.len(), within_n, r.paper.len())
}

const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em}\
pre{background:#f6f6f6;padding:8px;overflow-x:auto;font-size:12px}\
.fail{color:#b00}.pass{color:#070}.out{color:#b00;font-weight:bold}\
table{border-collapse:collapse;margin:0.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;font-size:13px}\
td.n{text-align:right;font-variant-numeric:tabular-nums}svg{display:block;margin:0.5em 0;max-width:100%;height:auto}";

/// A self-contained HTML page for several scenario results.
pub fn html(title: &str, results: &[ScenarioResult]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>",
        esc(title),
        esc(title)
    );
    summary(&mut s, results);
    for r in results {
        section(&mut s, r);
    }
    s.push_str("</body></html>\n");
    s
}

/// The summary table, which is also the table of contents.
fn summary(s: &mut String, results: &[ScenarioResult]) {
    let (mut cp, mut ct, mut pw, mut pt) = (0, 0, 0, 0);
    for r in results {
        let (a, b, c, d) = counts(r);
        cp += a;
        ct += b;
        pw += c;
        pt += d;
    }
    let _ = write!(
        s,
        "<section id=\"summary\"><h2>Summary</h2><p>{} scenario(s); checks: <span class=\"{}\">{cp} of {ct} pass</span>; \
paper points within tolerance: {pw} of {pt} (default tolerance ±{:.0}%, deviation = simulated / paper − 1). \
Bandwidths are decimal GB/s (10<sup>9</sup> bytes/s).</p>",
        results.len(),
        if cp == ct { "pass" } else { "fail" },
        DEFAULT_PAPER_TOLERANCE * 100.0
    );
    s.push_str("<table id=\"toc\"><tr><th>scenario</th><th>checks passed</th><th>paper within tolerance</th><th>title</th></tr>");
    for r in results {
        let (a, b, c, d) = counts(r);
        let _ = write!(
            s,
            "<tr><td><a href=\"#{}\">{}</a></td><td class=\"n {}\">{a} / {b}</td><td class=\"n\">{c} / {d}</td><td>{}</td></tr>",
            anchor(&r.scenario),
            esc(&r.scenario),
            if a == b { "pass" } else { "fail" },
            esc(&r.title)
        );
    }
    s.push_str("</table></section>");
}

/// One scenario: plots, checks, paper table, full text table.
fn section(s: &mut String, r: &ScenarioResult) {
    let _ = write!(
        s,
        "<section id=\"{}\"><h2>{}</h2><p>{}<br>platform <code>{}</code>, policy <code>{}</code>, seed {} · <a href=\"#summary\">summary</a></p>",
        anchor(&r.scenario),
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
        s.push_str("<h3>Checks</h3><ul>");
        for c in &r.checks {
            let bounds = match (c.min, c.max) {
                (Some(a), Some(b)) => format!("in [{}, {}]", num(a), num(b)),
                (Some(a), None) => format!("≥ {}", num(a)),
                (None, Some(b)) => format!("≤ {}", num(b)),
                (None, None) => String::new(),
            };
            let _ = write!(
                s,
                "<li class=\"{}\">{} {}: {} ({})</li>",
                if c.pass { "pass" } else { "fail" },
                if c.pass { "PASS" } else { "FAIL" },
                esc(&c.name),
                c.value.map_or("-".into(), num),
                esc(&bounds)
            );
        }
        s.push_str("</ul>");
    }
    if !r.paper.is_empty() {
        paper_table(s, r);
    }
    let _ = write!(
        s,
        "<details><summary>all points (text table)</summary><pre>{}</pre></details></section>",
        esc(&table(r))
    );
}

/// Paper vs simulated with the deviation and tolerance of each point.
fn paper_table(s: &mut String, r: &ScenarioResult) {
    s.push_str("<h3>Paper vs simulated</h3><table class=\"paper\"><tr><th>figure</th><th>quantity</th><th>paper</th><th>simulated</th><th>deviation</th><th>tolerance</th><th></th></tr>");
    for c in &r.paper {
        let dev = deviation(c);
        let tol = c.tolerance.unwrap_or(DEFAULT_PAPER_TOLERANCE);
        let verdict = match within(c) {
            Some(true) => "<td class=\"pass\">within</td>",
            Some(false) => "<td class=\"out\">outside</td>",
            None => "<td>not simulated</td>",
        };
        let _ = write!(
            s,
            "<tr><td title=\"{}\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">±{:.0}%</td>{verdict}</tr>",
            esc(&c.source),
            esc(&c.figure),
            esc(&describe(r, c)),
            num(c.paper),
            c.sim.map_or("-".into(), num),
            dev.map_or("-".into(), |d| format!("{:+.1}%", d * 100.0)),
            tol * 100.0
        );
    }
    s.push_str("</table>");
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn comparison(paper: f64, sim: Option<f64>, tolerance: Option<f64>) -> Comparison {
        Comparison {
            figure: "Fig. 1".into(),
            metric: "m.gbps".into(),
            x: 4.0,
            relative_to: None,
            paper,
            sim,
            source: "§1".into(),
            with: BTreeMap::new(),
            relative_with: BTreeMap::new(),
            tolerance,
        }
    }

    #[test]
    fn deviation_and_tolerance() {
        let c = comparison(2.0, Some(2.4), None);
        assert!((deviation(&c).unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(within(&c), Some(true));
        assert_eq!(within(&comparison(2.0, Some(2.4), Some(0.1))), Some(false));
        assert_eq!(within(&comparison(2.0, None, None)), None);
        assert_eq!(deviation(&comparison(0.0, Some(1.0), None)), None);
    }
}

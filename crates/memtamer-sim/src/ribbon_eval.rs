//! `memtamer sim ribbon`: issue 19's simulator Done-when numbers from the
//! built-in scenarios `ribbon-eval` (eager flushing, the PATS gate, Ribbon's
//! four-point search, proactive flushing) and `ribbon-oracle` (every fixed
//! flusher count M = 1..P4): per pattern and thread count, the four-point
//! search against the oracle's best, Ribbon's gain over eager flushing, and
//! proactive flushing's gain and cost (docs/ribbon.md "Ribbon in the
//! simulator"); and `ribbon-contention` (a PM writer arrives, the
//! controller searches again: proactive flushing's cost once it is off).
//! Nothing here feeds back into a run: it only reads results.

use crate::error::SimError;
use crate::experiment::{load_scenario, run_scenario, RunOptions, ScenarioResult};
use memtamer_ribbon::controller::{decide, Points};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One pattern at one application-thread count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Case {
    /// Pattern variant (`pmemkv-256`, `fastfair`, ...).
    pub app: String,
    /// Application threads.
    pub threads: u32,
    /// kops per flushing mode (`eager`, `pats-gate`, `eager-proactive`,
    /// `ribbon`, `ribbon-proactive`).
    pub kops: BTreeMap<String, f64>,
    /// Time-averaged flusher count Ribbon ran with.
    pub ribbon_m: f64,
    /// Flusher count Ribbon ran with at the end of the measured window
    /// (the last search's choice; the time average also covers probes).
    pub ribbon_m_end: f64,
    /// Searches Ribbon started in the measured window.
    pub ribbon_searches: f64,
    /// kops with M fixed, by M.
    pub oracle: BTreeMap<u32, f64>,
}

impl Case {
    /// The oracle's best (M, kops).
    pub fn oracle_best(&self) -> Option<(u32, f64)> {
        self.oracle
            .iter()
            .map(|(m, k)| (*m, *k))
            .fold(None, |best: Option<(u32, f64)>, (m, k)| match best {
                Some((_, bk)) if bk >= k => best,
                _ => Some((m, k)),
            })
    }

    /// `mode`'s kops over `base`'s, minus one.
    pub fn gain(&self, mode: &str, base: &str) -> Option<f64> {
        let a = self.kops.get(mode)?;
        let b = self.kops.get(base)?;
        (*b > 0.0).then(|| a / b - 1.0)
    }

    /// Ribbon (no proactive) over the oracle's best.
    pub fn vs_oracle(&self) -> Option<f64> {
        let (_, best) = self.oracle_best()?;
        let r = self.kops.get("ribbon")?;
        (best > 0.0).then(|| r / best)
    }
}

fn param_str(p: &BTreeMap<String, toml::Value>, k: &str) -> Option<String> {
    p.get(k).and_then(|v| v.as_str()).map(str::to_string)
}

fn param_u32(p: &BTreeMap<String, toml::Value>, k: &str) -> Option<u32> {
    p.get(k)
        .and_then(|v| v.as_integer())
        .and_then(|v| u32::try_from(v).ok())
}

/// Groups the two scenarios' points into cases (pure: tested on made-up results).
pub fn cases(eval: &ScenarioResult, oracle: &ScenarioResult) -> Vec<Case> {
    let mut by: BTreeMap<(String, u32), Case> = BTreeMap::new();
    for p in &eval.points {
        let (Some(app), Some(n), Some(mode)) = (
            param_str(&p.params, "app"),
            param_u32(&p.params, "job.app.threads"),
            param_str(&p.params, "flush"),
        ) else {
            continue;
        };
        let c = by.entry((app.clone(), n)).or_insert_with(|| Case {
            app,
            threads: n,
            ..Default::default()
        });
        let kops = p.metrics.get("app.kops").copied().unwrap_or(0.0);
        if mode == "ribbon" {
            c.ribbon_m = p.metrics.get("app.flushers").copied().unwrap_or(0.0);
            c.ribbon_m_end = p.metrics.get("app.flushers_end").copied().unwrap_or(0.0);
            c.ribbon_searches = p.metrics.get("app.searches").copied().unwrap_or(0.0);
        }
        c.kops.insert(mode, kops);
    }
    for p in &oracle.points {
        let (Some(app), Some(n), Some(m)) = (
            param_str(&p.params, "app"),
            param_u32(&p.params, "job.app.threads"),
            param_u32(&p.params, "job.app.workload.flushers"),
        ) else {
            continue;
        };
        if let Some(c) = by.get_mut(&(app, n)) {
            c.oracle
                .insert(m, p.metrics.get("app.kops").copied().unwrap_or(0.0));
        }
    }
    by.into_values().collect()
}

/// Runs `ribbon-eval` and `ribbon-oracle` (`jobs` worker threads).
pub fn evaluate(jobs: usize, progress: bool) -> Result<Vec<Case>, SimError> {
    let opts = RunOptions {
        jobs,
        progress,
        ..Default::default()
    };
    let eval = run_scenario(&load_scenario("ribbon-eval")?, &opts)?;
    let oracle = run_scenario(&load_scenario("ribbon-oracle")?, &opts)?;
    Ok(cases(&eval, &oracle))
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{:+.1}%", v * 100.0))
}

/// The Done-when summary: averages over the cases at `threads` (None: all).
pub struct Summary {
    /// Cases whose four-point search lands within 5% of the oracle's best.
    pub within_5pct: usize,
    /// Cases with both.
    pub compared: usize,
    /// Worst Ribbon / oracle-best ratio.
    pub worst_vs_oracle: Option<f64>,
    /// Mean gain of Ribbon (with proactive) over eager at 24 threads.
    pub gain_24: Option<f64>,
    /// Mean gain of Ribbon (with proactive) over eager at 4 threads.
    pub gain_4: Option<f64>,
    /// Mean gain of proactive flushing alone (eager + proactive over eager) at 4 threads.
    pub proactive_4: Option<f64>,
    /// Worst change from allowing proactive flushing to Ribbon at 24 threads.
    pub proactive_cost_24: Option<f64>,
}

/// Computes the Done-when summary of `cases`.
pub fn summary(cases: &[Case]) -> Summary {
    let ratios: Vec<f64> = cases.iter().filter_map(Case::vs_oracle).collect();
    let at = |n: u32, f: &dyn Fn(&Case) -> Option<f64>| -> Vec<f64> {
        cases
            .iter()
            .filter(|c| c.threads == n)
            .filter_map(f)
            .collect()
    };
    Summary {
        within_5pct: ratios.iter().filter(|r| **r >= 0.95).count(),
        compared: ratios.len(),
        worst_vs_oracle: ratios.iter().copied().reduce(f64::min),
        gain_24: mean(&at(24, &|c| c.gain("ribbon-proactive", "eager"))),
        gain_4: mean(&at(4, &|c| c.gain("ribbon-proactive", "eager"))),
        proactive_4: mean(&at(4, &|c| c.gain("eager-proactive", "eager"))),
        proactive_cost_24: at(24, &|c| c.gain("ribbon-proactive", "ribbon"))
            .into_iter()
            .reduce(f64::min),
    }
}

/// The Markdown tables of docs/ribbon.md "Ribbon in the simulator".
pub fn markdown(cases: &[Case]) -> String {
    let mut s = String::new();
    let modes = [
        "eager",
        "pats-gate",
        "eager-proactive",
        "ribbon",
        "ribbon-proactive",
    ];
    let _ = writeln!(
        s,
        "| pattern | N | eager kops | PATS gate | eager + proactive | Ribbon (M) | Ribbon + proactive | oracle best (M) | Ribbon / oracle | Ribbon+p over eager |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for c in cases {
        let k = |m: &str| c.kops.get(m).map_or("-".into(), |v| format!("{v:.0}"));
        let (om, ok) = c.oracle_best().unwrap_or((0, 0.0));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} ({}) | {} ({}) | {} ({:.1}) | {} ({}) | {ok:.0} ({om}) | {} | {} |",
            c.app,
            c.threads,
            k(modes[0]),
            k(modes[1]),
            pct(c.gain(modes[1], "eager")),
            k(modes[2]),
            pct(c.gain(modes[2], "eager")),
            k(modes[3]),
            c.ribbon_m,
            k(modes[4]),
            pct(c.gain(modes[4], "ribbon")),
            c.vs_oracle().map_or("-".into(), |v| format!("{v:.3}")),
            pct(c.gain(modes[4], "eager")),
        );
    }
    let sm = summary(cases);
    let _ = writeln!(s);
    let _ = writeln!(s, "| Done-when line | target | simulated |");
    let _ = writeln!(s, "|---|---|---|");
    let _ = writeln!(
        s,
        "| four-point search within 5% of the oracle's best | every scenario | {} of {} (worst {}) |",
        sm.within_5pct,
        sm.compared,
        sm.worst_vs_oracle
            .map_or("-".into(), |v| format!("{v:.3} of best"))
    );
    let _ = writeln!(
        s,
        "| average gain over eager at 24 threads (Ribbon + proactive) | >= 15% (thesis 20.2%) | {} |",
        pct(sm.gain_24)
    );
    let _ = writeln!(
        s,
        "| average gain over eager at 4 threads (Ribbon + proactive) | (thesis 9.3%) | {} |",
        pct(sm.gain_4)
    );
    let _ = writeln!(
        s,
        "| proactive flushing alone at 4 threads (eager + proactive over eager) | >= 4% (thesis 7.5%) | {} |",
        pct(sm.proactive_4)
    );
    let _ = writeln!(
        s,
        "| proactive allowed, 24 threads (worst Ribbon + proactive over Ribbon; the controller switches it off only after a search lowered M) | >= -1% when off | {} |",
        pct(sm.proactive_cost_24)
    );
    let _ = writeln!(s);
    s.push_str(&search_markdown(cases));
    s
}

/// What the thesis's decision table would choose on the oracle's curve:
/// the four-point search's choice without its probe noise (issue 19's
/// analysis: does the search miss because the table cannot find the
/// curve's peak, or because its short probes misread the curve?).
#[derive(Clone, Debug, PartialEq)]
pub struct TableOnOracle {
    /// The sample points (P1 = 4, the thesis's Optane value; P4 = 48).
    pub points: Points,
    /// The oracle's kops at P1..P4 (kops is proportional to flushed bytes
    /// at a fixed pattern, so the table reads the same curve).
    pub bw: [f64; 4],
    /// The table's row.
    pub case: memtamer_ribbon::controller::Case,
    /// The table's M.
    pub m: usize,
    /// The oracle's kops at that M over the oracle's best.
    pub vs_best: Option<f64>,
}

impl Case {
    /// The decision table (`memtamer_ribbon::controller::decide`, the
    /// runtime's own code, thesis §6.3.1) applied to the oracle's kops at
    /// P1..P4 on `cores` hardware threads; None if a point is missing.
    pub fn table_on_oracle(&self, p1: usize, cores: usize, tol: f64) -> Option<TableOnOracle> {
        let points = Points::new(p1, cores);
        let at = |m: usize| self.oracle.get(&u32::try_from(m).ok()?).copied();
        let [a, b, c, d] = points.all();
        let bw = [at(a)?, at(b)?, at(c)?, at(d)?];
        let (m, case) = decide(points, bw, tol);
        let vs_best = match (at(m), self.oracle_best()) {
            (Some(k), Some((_, best))) if best > 0.0 => Some(k / best),
            _ => None,
        };
        Some(TableOnOracle {
            points,
            bw,
            case,
            m,
            vs_best,
        })
    }
}

/// The search analysis table: per case, the oracle's curve at P1..P4, what
/// the decision table makes of it, and what the live search chose.
pub fn search_markdown(cases: &[Case]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| pattern | N | oracle kops at P1 / P2 / P3 / P4 | table on the oracle curve, 2% guard: row, M (its kops / best) | same, strict > (no tolerance) | search: time-avg M, final M (Ribbon / best) | oracle best M |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for c in cases {
        let Some(t) = c.table_on_oracle(4, 48, 0.02) else {
            continue;
        };
        let (om, _) = c.oracle_best().unwrap_or((0, 0.0));
        let f3 = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3}"));
        let strict = c.table_on_oracle(4, 48, 0.0).map_or("-".into(), |t| {
            format!("{:?}, {} ({})", t.case, t.m, f3(t.vs_best))
        });
        let _ = writeln!(
            s,
            "| {} | {} | {:.0} / {:.0} / {:.0} / {:.0} | {:?}, {} ({}) | {strict} | {:.1}, {:.0} ({}) | {om} |",
            c.app,
            c.threads,
            t.bw[0],
            t.bw[1],
            t.bw[2],
            t.bw[3],
            t.case,
            t.m,
            f3(t.vs_best),
            c.ribbon_m,
            c.ribbon_m_end,
            f3(c.vs_oracle()),
        );
    }
    s
}

/// One pattern of `ribbon-contention`: a PM writer starts streaming while
/// the application runs, the controller searches again under contention,
/// and the window after that decision is measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ContentionRow {
    /// Pattern variant.
    pub app: String,
    /// kops per flushing mode (`eager`, `ribbon`, `ribbon-proactive`).
    pub kops: BTreeMap<String, f64>,
    /// Time-averaged flusher count per Ribbon mode in the window.
    pub flushers: BTreeMap<String, f64>,
    /// Proactive write-back bandwidth of `ribbon-proactive` in the window,
    /// GB/s: 0 means the controller had switched it off.
    pub proactive_gbps: f64,
    /// The contending writer's bandwidth per mode, GB/s (what throttling
    /// the flushers hands to the other process).
    pub other_gbps: BTreeMap<String, f64>,
}

impl ContentionRow {
    /// Whether proactive flushing was off for the whole measured window.
    pub fn proactive_off(&self) -> bool {
        self.proactive_gbps == 0.0
    }

    /// Ribbon + proactive over Ribbon alone, minus one.
    pub fn proactive_cost(&self) -> Option<f64> {
        let a = self.kops.get("ribbon-proactive")?;
        let b = self.kops.get("ribbon")?;
        (*b > 0.0).then(|| a / b - 1.0)
    }
}

/// Groups `ribbon-contention`'s points by pattern (pure: tested on
/// made-up results).
pub fn contention_rows(r: &ScenarioResult) -> Vec<ContentionRow> {
    let mut by: BTreeMap<String, ContentionRow> = BTreeMap::new();
    for p in &r.points {
        let (Some(app), Some(mode)) = (param_str(&p.params, "app"), param_str(&p.params, "flush"))
        else {
            continue;
        };
        let m = |k: &str| p.metrics.get(k).copied().unwrap_or(0.0);
        let row = by.entry(app.clone()).or_insert_with(|| ContentionRow {
            app,
            ..Default::default()
        });
        row.kops.insert(mode.clone(), m("app.kops"));
        row.other_gbps.insert(mode.clone(), m("be.gbps"));
        if mode != "eager" {
            row.flushers.insert(mode.clone(), m("app.flushers"));
        }
        if mode == "ribbon-proactive" {
            row.proactive_gbps = m("app.proactive_gbps");
        }
    }
    by.into_values().collect()
}

/// Runs `ribbon-contention` (`jobs` worker threads).
pub fn evaluate_contention(jobs: usize, progress: bool) -> Result<Vec<ContentionRow>, SimError> {
    let opts = RunOptions {
        jobs,
        progress,
        ..Default::default()
    };
    Ok(contention_rows(&run_scenario(
        &load_scenario("ribbon-contention")?,
        &opts,
    )?))
}

/// The Markdown table of `ribbon-contention` and its Done-when line: the
/// cost of proactive flushing over the patterns where the controller had
/// switched it off (thesis §6.3.2 step 4), and how many those were.
pub fn contention_markdown(rows: &[ContentionRow]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| pattern | eager kops | Ribbon kops (M) | Ribbon + proactive kops (M) | proactive GB/s | Ribbon + proactive over Ribbon | other writer GB/s (Ribbon / + proactive) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    let num = |m: &BTreeMap<String, f64>, k: &str, d: usize| {
        m.get(k).map_or("-".into(), |v| format!("{v:.d$}"))
    };
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} ({}) | {} ({}) | {:.2}{} | {} | {} / {} |",
            r.app,
            num(&r.kops, "eager", 0),
            num(&r.kops, "ribbon", 0),
            num(&r.flushers, "ribbon", 1),
            num(&r.kops, "ribbon-proactive", 0),
            num(&r.flushers, "ribbon-proactive", 1),
            r.proactive_gbps,
            if r.proactive_off() { " (off)" } else { "" },
            pct(r.proactive_cost()),
            num(&r.other_gbps, "ribbon", 2),
            num(&r.other_gbps, "ribbon-proactive", 2),
        );
    }
    let off: Vec<f64> = rows
        .iter()
        .filter(|r| r.proactive_off())
        .filter_map(ContentionRow::proactive_cost)
        .collect();
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| proactive's cost when disabled under contention (worst Ribbon + proactive over Ribbon where it was off) | >= -1% | {} ({} of {} patterns had it off) |",
        pct(off.iter().copied().reduce(f64::min)),
        off.len(),
        rows.len()
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::PointResult;

    fn point(params: &[(&str, toml::Value)], kops: f64, m: f64) -> PointResult {
        PointResult {
            params: params
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            x: None,
            metrics: [
                ("app.kops".to_string(), kops),
                ("app.flushers".to_string(), m),
            ]
            .into_iter()
            .collect(),
            requests: 0,
            events: 0,
            searches: Vec::new(),
        }
    }

    fn result(points: Vec<PointResult>) -> ScenarioResult {
        ScenarioResult {
            scenario: "t".into(),
            title: String::new(),
            platform: String::new(),
            policy: String::new(),
            seed: 1,
            x_key: None,
            points,
            paper: vec![],
            checks: vec![],
            plots: vec![],
        }
    }

    fn s(v: &str) -> toml::Value {
        toml::Value::String(v.into())
    }

    #[test]
    fn cases_pair_modes_with_the_oracle_sweep_and_summarise() {
        let n = |v: i64| toml::Value::Integer(v);
        let mut ev = Vec::new();
        for (mode, kops) in [
            ("eager", 100.0),
            ("pats-gate", 90.0),
            ("eager-proactive", 105.0),
            ("ribbon", 114.0),
            ("ribbon-proactive", 120.0),
        ] {
            ev.push(point(
                &[
                    ("job.app.threads", n(24)),
                    ("app", s("kv")),
                    ("flush", s(mode)),
                ],
                kops,
                6.0,
            ));
        }
        let mut or = Vec::new();
        for (m, kops) in [(1, 50.0), (6, 119.0), (48, 100.0)] {
            or.push(point(
                &[
                    ("job.app.workload.flushers", n(m)),
                    ("job.app.threads", n(24)),
                    ("app", s("kv")),
                ],
                kops,
                m as f64,
            ));
        }
        // an oracle point of a case that was not evaluated is ignored
        or.push(point(
            &[
                ("job.app.workload.flushers", n(1)),
                ("job.app.threads", n(4)),
                ("app", s("kv")),
            ],
            1.0,
            1.0,
        ));
        let c = cases(&result(ev), &result(or));
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].oracle_best(), Some((6, 119.0)));
        assert_eq!(c[0].ribbon_m, 6.0);
        let r = c[0].vs_oracle().unwrap();
        assert!((r - 114.0 / 119.0).abs() < 1e-12);
        let sm = summary(&c);
        assert_eq!((sm.within_5pct, sm.compared), (1, 1));
        assert!((sm.gain_24.unwrap() - 0.2).abs() < 1e-12);
        assert_eq!(sm.gain_4, None);
        assert!((sm.proactive_cost_24.unwrap() - (120.0 / 114.0 - 1.0)).abs() < 1e-12);
        let md = markdown(&c);
        assert!(md.contains("| kv | 24 | 100 | 90 (-10.0%)"), "{md}");
        assert!(md.contains("1 of 1"), "{md}");
    }

    #[test]
    fn contention_rows_count_only_patterns_whose_proactive_flushing_was_off() {
        let mut pts = Vec::new();
        for (app, mode, kops, pro) in [
            ("a", "eager", 100.0, 0.0),
            ("a", "ribbon", 100.0, 0.0),
            ("a", "ribbon-proactive", 99.5, 0.0),
            ("b", "ribbon", 100.0, 0.0),
            ("b", "ribbon-proactive", 80.0, 0.2),
        ] {
            let mut p = point(&[("app", s(app)), ("flush", s(mode))], kops, 4.0);
            p.metrics.insert("app.proactive_gbps".into(), pro);
            p.metrics.insert("be.gbps".into(), 3.0);
            pts.push(p);
        }
        let rows = contention_rows(&result(pts));
        assert_eq!(rows.len(), 2);
        assert!(rows[0].proactive_off());
        assert!(!rows[1].proactive_off());
        assert!((rows[0].proactive_cost().unwrap() + 0.005).abs() < 1e-12);
        assert_eq!(rows[0].flushers.get("eager"), None);
        let md = contention_markdown(&rows);
        // b lost 20% but had proactive on: only a's -0.5% counts
        assert!(
            md.contains("| -0.5% (1 of 2 patterns had it off) |"),
            "{md}"
        );
        assert!(
            md.contains("| a | 100 | 100 (4.0) | 100 (4.0) | 0.00 (off) | -0.5% |"),
            "{md}"
        );
    }

    #[test]
    fn the_table_on_the_oracle_curve_reads_p1_to_p4_and_finds_the_peak_between() {
        // rising to a peak at 20 and falling to 48: BW2 > BW1, BW4 < BW3
        let curve = |m: u32| 100.0 + 10.0 * (m.min(20) as f64) - 2.0 * m.saturating_sub(20) as f64;
        let c = Case {
            app: "x".into(),
            threads: 24,
            oracle: (1..=48).map(|m| (m, curve(m))).collect(),
            ..Default::default()
        };
        let t = c.table_on_oracle(4, 48, 0.02).unwrap();
        assert_eq!(t.points.all(), [4, 5, 47, 48]);
        assert_eq!(t.bw, [140.0, 150.0, 246.0, 244.0]);
        assert_eq!(t.case, memtamer_ribbon::controller::Case::PeakBetween);
        // line 140 + 10 (x - 4) meets 246 - 2 (x - 47) at x = 20, the peak
        assert_eq!(t.m, 20);
        assert_eq!(t.vs_best, Some(1.0));
        let md = search_markdown(std::slice::from_ref(&c));
        assert!(
            md.contains("| x | 24 | 140 / 150 / 246 / 244 | PeakBetween, 20 (1.000) |"),
            "{md}"
        );
        // a missing point gives no row
        let mut gap = c;
        gap.oracle.remove(&47);
        assert!(gap.table_on_oracle(4, 48, 0.02).is_none());
    }

    #[test]
    fn a_search_more_than_5_percent_below_the_oracle_is_counted_as_a_miss() {
        let mut c = Case {
            app: "x".into(),
            threads: 4,
            ..Default::default()
        };
        c.kops.insert("ribbon".into(), 90.0);
        c.oracle.insert(3, 100.0);
        c.oracle.insert(4, 99.0);
        let sm = summary(&[c]);
        assert_eq!((sm.within_5pct, sm.compared), (0, 1));
        assert_eq!(sm.worst_vs_oracle, Some(0.9));
    }
}

//! `memtamer sim ribbon --seed N` / `--seeds A,B,...`: issue 19's Done-when
//! lines over several seeds. The four-point search's outcome depends on the
//! seed (the programs' random choices and the first time slices move its
//! probes by a few %, and the decision table turns that into another M;
//! docs/notebook/ribbon.md "Placing the control and proactive threads, and the
//! search's seed spread"), so one seed's count is a sample. This module runs
//! `ribbon-eval`, `ribbon-oracle` and `ribbon-contention` once per seed, every
//! point of every seed through one worker pool, and summarises the per-seed
//! Done-when numbers with their mean, min and max ([`over_seeds`], pure).
//! Nothing here feeds back into a run: it only reads results.

use crate::error::SimError;
use crate::experiment::{
    finish_scenario, load_scenario, parallel_map_ordered, prepare_scenario, run_point_metrics,
    RunOptions,
};
use crate::ribbon_eval::{cases, contention_rows, summary, Case, ContentionRow};
use std::collections::BTreeMap;
use std::fmt::Write;

/// The scenarios one seed runs, in the order `memtamer sim ribbon` prints them.
const SCENARIOS: [&str; 3] = ["ribbon-eval", "ribbon-oracle", "ribbon-contention"];

/// One seed's results: what `memtamer sim ribbon` prints for one seed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeedRun {
    /// The seed every point of the three scenarios ran with.
    pub seed: u64,
    /// `ribbon-eval` + `ribbon-oracle`, grouped by pattern and thread count.
    pub cases: Vec<Case>,
    /// `ribbon-contention`, grouped by pattern.
    pub contention: Vec<ContentionRow>,
}

/// Runs the three scenarios once per seed (`jobs` worker threads, 0 = all
/// cores). Every point of every seed goes through one pool, the longest
/// first (simulated time x application threads), so no seed's or
/// scenario's last point leaves a worker idle while others wait; each point
/// is seeded on its own and deterministic, so the pool's order changes only
/// the wall time, never a result.
pub fn evaluate_seeds(
    seeds: &[u64],
    jobs: usize,
    progress: bool,
) -> Result<Vec<SeedRun>, SimError> {
    let mut preps = Vec::with_capacity(seeds.len() * SCENARIOS.len());
    for &seed in seeds {
        for name in SCENARIOS {
            let opts = RunOptions {
                seed: Some(seed),
                ..Default::default()
            };
            preps.push(prepare_scenario(&load_scenario(name)?, &opts)?);
        }
    }
    let specs: Vec<&crate::config::Scenario> = preps.iter().flat_map(|p| &p.specs).collect();
    let cost: Vec<f64> = specs
        .iter()
        .map(|s| {
            let threads: u32 = s.jobs.iter().map(|j| j.threads).sum();
            (s.warmup_ms + s.duration_ms) * f64::from(threads.max(1))
        })
        .collect();
    let mut order: Vec<usize> = (0..specs.len()).collect();
    order.sort_by(|&a, &b| cost[b].total_cmp(&cost[a]));
    let runs = parallel_map_ordered(
        &specs,
        &order,
        jobs,
        progress.then_some(("sim ribbon (all seeds)", "points")),
        |_, s| run_point_metrics(s, None),
    )?;
    let mut runs = runs.into_iter();
    let mut results = Vec::with_capacity(preps.len());
    for p in preps {
        let n = p.specs.len();
        results.push(finish_scenario(p, runs.by_ref().take(n).collect()));
    }
    let mut results = results.into_iter();
    let mut out = Vec::with_capacity(seeds.len());
    for &seed in seeds {
        let (Some(eval), Some(oracle), Some(contention)) =
            (results.next(), results.next(), results.next())
        else {
            break;
        };
        out.push(SeedRun {
            seed,
            cases: cases(&eval, &oracle),
            contention: contention_rows(&contention),
        });
    }
    Ok(out)
}

/// Why a `--seeds` list was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SeedListError {
    /// Nothing given.
    #[error("expected a comma-separated list of seeds, e.g. 1,2,3; got an empty list")]
    Empty,
    /// An element is not a seed.
    #[error("seed {0:?} is not an integer in 0..=9223372036854775807 (2^63-1, the scenarios' seed range)")]
    NotASeed(String),
    /// A seed given twice (its runs would be the same; the mean would weigh it twice).
    #[error("seed {0} is given twice")]
    Repeated(u64),
}

/// Parses `--seeds A,B,...`: seeds in 0..=2^63-1 (a scenario's `seed`
/// range), no empty element, none twice; the order is kept (it is the
/// order of the columns).
pub fn parse_seeds(s: &str) -> Result<Vec<u64>, SeedListError> {
    if s.trim().is_empty() {
        return Err(SeedListError::Empty);
    }
    let mut out = Vec::new();
    for part in s.split(',') {
        let seed = part
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|v| i64::try_from(*v).is_ok())
            .ok_or_else(|| SeedListError::NotASeed(part.to_string()))?;
        if out.contains(&seed) {
            return Err(SeedListError::Repeated(seed));
        }
        out.push(seed);
    }
    Ok(out)
}

/// One Done-when line over the seeds: its value per seed and their mean,
/// min and max over the seeds that gave a finite value.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The Done-when line, as docs/ribbon.md names it.
    pub name: &'static str,
    /// Issue 19's target (and the thesis's number).
    pub target: &'static str,
    /// Value per seed, in the seeds' order (None: not measured on that seed).
    pub per_seed: Vec<Option<f64>>,
    /// A note per seed (e.g. "of 8", "2 of 4 off"), empty if none.
    pub notes: Vec<String>,
    /// Mean of the finite per-seed values.
    pub mean: Option<f64>,
    /// Smallest finite per-seed value.
    pub min: Option<f64>,
    /// Largest finite per-seed value.
    pub max: Option<f64>,
    /// How values print: a count, a ratio or a percentage.
    pub unit: Unit,
}

/// How a [`Line`]'s values print.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// A number of scenarios (mean with one decimal).
    Count,
    /// A ratio to the oracle's best (three decimals).
    Ratio,
    /// A change, printed as a signed percentage.
    Percent,
}

/// One scenario (pattern, thread count) over the seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioSeeds {
    /// Pattern variant.
    pub app: String,
    /// Application threads.
    pub threads: u32,
    /// Ribbon / oracle best per seed.
    pub vs_oracle: Vec<Option<f64>>,
    /// The search's final M per seed (the last search's choice).
    pub final_m: Vec<Option<f64>>,
}

impl ScenarioSeeds {
    /// Whether the search landed within 5% of the oracle's best on each seed
    /// (None: not compared on that seed).
    pub fn within_5pct(&self) -> Vec<Option<bool>> {
        self.vs_oracle
            .iter()
            .map(|v| v.filter(|v| v.is_finite()).map(|v| v >= 0.95))
            .collect()
    }

    /// Whether the final M differs between the seeds that measured it.
    pub fn final_m_differs(&self) -> bool {
        let ms: Vec<f64> = self.final_m.iter().flatten().copied().collect();
        ms.windows(2).any(|w| w[0] != w[1])
    }
}

/// The Done-when summary over seeds ([`over_seeds`]).
#[derive(Clone, Debug, PartialEq)]
pub struct OverSeeds {
    /// The seeds, in the order given.
    pub seeds: Vec<u64>,
    /// The Done-when lines.
    pub lines: Vec<Line>,
    /// Per scenario: the search against the oracle and its final M per seed.
    pub scenarios: Vec<ScenarioSeeds>,
}

fn finite(v: Option<f64>) -> Option<f64> {
    v.filter(|v| v.is_finite())
}

fn line(name: &'static str, target: &'static str, unit: Unit, per_seed: Vec<Option<f64>>) -> Line {
    let per_seed: Vec<Option<f64>> = per_seed.into_iter().map(finite).collect();
    let vals: Vec<f64> = per_seed.iter().flatten().copied().collect();
    Line {
        name,
        target,
        notes: vec![String::new(); per_seed.len()],
        mean: (!vals.is_empty()).then(|| vals.iter().sum::<f64>() / vals.len() as f64),
        min: vals.iter().copied().reduce(f64::min),
        max: vals.iter().copied().reduce(f64::max),
        per_seed,
        unit,
    }
}

/// The Done-when lines of each seed and their mean / min / max, and per
/// scenario whether the search was within 5% and which final M it chose on
/// each seed (pure: tested on made-up runs). Non-finite values (a run with
/// no throughput) count as not measured; no seeds give empty lines.
pub fn over_seeds(runs: &[SeedRun]) -> OverSeeds {
    let sums: Vec<_> = runs.iter().map(|r| summary(&r.cases)).collect();
    let mut within = line(
        "four-point search within 5% of the oracle's best (scenarios)",
        "every scenario",
        Unit::Count,
        sums.iter()
            .map(|s| (s.compared > 0).then_some(s.within_5pct as f64))
            .collect(),
    );
    within.notes = sums.iter().map(|s| format!("of {}", s.compared)).collect();
    // worst proactive cost where the controller had switched it off
    let off: Vec<(Option<f64>, usize, usize)> = runs
        .iter()
        .map(|r| {
            let costs: Vec<f64> = r
                .contention
                .iter()
                .filter(|c| c.proactive_off())
                .filter_map(ContentionRow::proactive_cost)
                .filter(|v| v.is_finite())
                .collect();
            (
                costs.iter().copied().reduce(f64::min),
                costs.len(),
                r.contention.len(),
            )
        })
        .collect();
    let worst_contention: Vec<Option<f64>> = runs
        .iter()
        .map(|r| {
            r.contention
                .iter()
                .filter_map(ContentionRow::proactive_cost)
                .filter(|v| v.is_finite())
                .reduce(f64::min)
        })
        .collect();
    let mut off_line = line(
        "proactive's cost when disabled under contention (worst Ribbon + proactive over Ribbon where it was off)",
        ">= -1%",
        Unit::Percent,
        off.iter().map(|o| o.0).collect(),
    );
    off_line.notes = off
        .iter()
        .map(|(_, n, of)| format!("{n} of {of} off"))
        .collect();
    let lines = vec![
        within,
        line(
            "worst Ribbon / oracle best",
            ">= 0.95",
            Unit::Ratio,
            sums.iter().map(|s| s.worst_vs_oracle).collect(),
        ),
        line(
            "average gain over eager at 24 threads (Ribbon + proactive)",
            ">= 15% (thesis 20.2%)",
            Unit::Percent,
            sums.iter().map(|s| s.gain_24).collect(),
        ),
        line(
            "average gain over eager at 4 threads (Ribbon + proactive)",
            "(thesis 9.3%)",
            Unit::Percent,
            sums.iter().map(|s| s.gain_4).collect(),
        ),
        line(
            "proactive flushing alone at 4 threads (eager + proactive over eager)",
            ">= 4% (thesis 7.5%)",
            Unit::Percent,
            sums.iter().map(|s| s.proactive_4).collect(),
        ),
        line(
            "proactive allowed, 24 threads (worst Ribbon + proactive over Ribbon)",
            ">= -1% when off",
            Unit::Percent,
            sums.iter().map(|s| s.proactive_cost_24).collect(),
        ),
        off_line,
        line(
            "proactive allowed under contention (worst Ribbon + proactive over Ribbon, every pattern)",
            "(>= -1% where off)",
            Unit::Percent,
            worst_contention,
        ),
    ];
    let mut by: BTreeMap<(String, u32), ScenarioSeeds> = BTreeMap::new();
    for (i, r) in runs.iter().enumerate() {
        for c in &r.cases {
            let e = by
                .entry((c.app.clone(), c.threads))
                .or_insert_with(|| ScenarioSeeds {
                    app: c.app.clone(),
                    threads: c.threads,
                    vs_oracle: vec![None; runs.len()],
                    final_m: vec![None; runs.len()],
                });
            e.vs_oracle[i] = finite(c.vs_oracle());
            e.final_m[i] = finite(c.kops.contains_key("ribbon").then_some(c.ribbon_m_end));
        }
    }
    OverSeeds {
        seeds: runs.iter().map(|r| r.seed).collect(),
        lines,
        scenarios: by.into_values().collect(),
    }
}

fn fmt(v: Option<f64>, unit: Unit, mean: bool) -> String {
    match (v, unit) {
        (None, _) => "-".into(),
        (Some(v), Unit::Count) if mean => format!("{v:.2}"),
        (Some(v), Unit::Count) => format!("{v:.0}"),
        (Some(v), Unit::Ratio) => format!("{v:.3}"),
        (Some(v), Unit::Percent) => format!("{:+.1}%", v * 100.0),
    }
}

/// The Markdown of [`OverSeeds`]: the Done-when lines with one column per
/// seed and mean / min / max, then per scenario Ribbon / best and the final
/// M on each seed.
pub fn over_seeds_markdown(o: &OverSeeds) -> String {
    let mut s = String::new();
    let seeds: String = o.seeds.iter().map(|x| format!(" seed {x} |")).collect();
    let bar = "---|".repeat(o.seeds.len());
    let _ = writeln!(s, "| Done-when line | target |{seeds} mean | min | max |");
    let _ = writeln!(s, "|---|---|{bar}---|---|---|");
    for l in &o.lines {
        let cols: String = l
            .per_seed
            .iter()
            .zip(&l.notes)
            .map(|(v, n)| {
                let v = fmt(*v, l.unit, false);
                if n.is_empty() {
                    format!(" {v} |")
                } else {
                    format!(" {v} ({n}) |")
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} |{cols} {} | {} | {} |",
            l.name,
            l.target,
            fmt(l.mean, l.unit, true),
            fmt(l.min, l.unit, false),
            fmt(l.max, l.unit, false),
        );
    }
    let _ = writeln!(s);
    let join = |v: Vec<String>| v.join(" / ");
    let _ = writeln!(
        s,
        "| pattern | N | Ribbon / best, seeds {} | within 5% on seeds | final M, seeds {} | final M differs |",
        join(o.seeds.iter().map(u64::to_string).collect()),
        join(o.seeds.iter().map(u64::to_string).collect()),
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for c in &o.scenarios {
        let within: Vec<String> = c
            .within_5pct()
            .iter()
            .zip(&o.seeds)
            .filter(|(w, _)| **w == Some(true))
            .map(|(_, seed)| seed.to_string())
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            c.app,
            c.threads,
            join(
                c.vs_oracle
                    .iter()
                    .map(|v| fmt(*v, Unit::Ratio, false))
                    .collect()
            ),
            if within.is_empty() {
                "none".to_string()
            } else {
                within.join(", ")
            },
            join(
                c.final_m
                    .iter()
                    .map(|v| v.map_or("-".into(), |v| format!("{v:.0}")))
                    .collect()
            ),
            if c.final_m_differs() { "yes" } else { "no" },
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case with Ribbon at `ribbon` kops against an oracle best of 100.
    fn case(app: &str, threads: u32, ribbon: f64, m_end: f64) -> Case {
        let mut c = Case {
            app: app.into(),
            threads,
            ribbon_m_end: m_end,
            ..Default::default()
        };
        for (mode, k) in [
            ("eager", 100.0),
            ("eager-proactive", 102.0),
            ("ribbon", ribbon),
            ("ribbon-proactive", ribbon * 1.1),
        ] {
            c.kops.insert(mode.into(), k);
        }
        c.oracle.insert(4, 90.0);
        c.oracle.insert(8, 100.0);
        c
    }

    fn contention(app: &str, ribbon: f64, pro: f64, pro_gbps: f64) -> ContentionRow {
        let mut r = ContentionRow {
            app: app.into(),
            proactive_gbps: pro_gbps,
            ..Default::default()
        };
        r.kops.insert("ribbon".into(), ribbon);
        r.kops.insert("ribbon-proactive".into(), pro);
        r
    }

    fn run(seed: u64, cases: Vec<Case>, contention: Vec<ContentionRow>) -> SeedRun {
        SeedRun {
            seed,
            cases,
            contention,
        }
    }

    fn approx(a: Option<f64>, b: f64) -> bool {
        a.is_some_and(|a| (a - b).abs() < 1e-12)
    }

    #[test]
    fn seed_lists_parse_in_order_and_bad_ones_say_why() {
        assert_eq!(parse_seeds("3,1, 2"), Ok(vec![3, 1, 2]));
        assert_eq!(parse_seeds("0"), Ok(vec![0]));
        assert_eq!(parse_seeds(""), Err(SeedListError::Empty));
        assert_eq!(parse_seeds(" "), Err(SeedListError::Empty));
        assert_eq!(parse_seeds("1,x"), Err(SeedListError::NotASeed("x".into())));
        assert_eq!(parse_seeds("1,,2"), Err(SeedListError::NotASeed("".into())));
        assert_eq!(parse_seeds("-1"), Err(SeedListError::NotASeed("-1".into())));
        assert_eq!(
            parse_seeds("9223372036854775808"),
            Err(SeedListError::NotASeed("9223372036854775808".into()))
        );
        assert_eq!(parse_seeds("2,2"), Err(SeedListError::Repeated(2)));
    }

    #[test]
    fn a_scenario_within_5_percent_on_one_seed_only_counts_on_that_seed() {
        let runs = vec![
            run(
                1,
                vec![case("kv", 4, 97.0, 8.0), case("ff", 24, 80.0, 4.0)],
                vec![contention("kv", 100.0, 99.0, 0.0)],
            ),
            run(
                2,
                vec![case("kv", 4, 90.0, 4.0), case("ff", 24, 80.0, 4.0)],
                vec![contention("kv", 100.0, 90.0, 0.1)],
            ),
        ];
        let o = over_seeds(&runs);
        assert_eq!(o.seeds, vec![1, 2]);
        let within = &o.lines[0];
        assert_eq!(within.per_seed, vec![Some(1.0), Some(0.0)]);
        assert!(approx(within.mean, 0.5));
        assert_eq!((within.min, within.max), (Some(0.0), Some(1.0)));
        assert_eq!(within.notes, vec!["of 2", "of 2"]);
        // scenarios sorted by (app, threads): ff before kv
        let kv = &o.scenarios[1];
        assert_eq!((kv.app.as_str(), kv.threads), ("kv", 4));
        assert_eq!(kv.within_5pct(), vec![Some(true), Some(false)]);
        assert!(kv.final_m_differs());
        assert!(!o.scenarios[0].final_m_differs());
        // gains: Ribbon + proactive over eager at 24 threads: 88 / 100
        assert!(approx(o.lines[2].mean, -0.12));
        // proactive alone at 4 threads: +2% on both seeds
        assert!(approx(o.lines[4].min, 0.02) && approx(o.lines[4].max, 0.02));
        // contention: only seed 1 had proactive flushing off
        let off = &o.lines[6];
        assert!(approx(off.per_seed[0], -0.01));
        assert_eq!(off.per_seed[1], None);
        assert_eq!(off.notes, vec!["1 of 1 off", "0 of 1 off"]);
        assert!(approx(o.lines[7].min, -0.1));
        let md = over_seeds_markdown(&o);
        assert!(
            md.contains("| every scenario | 1 (of 2) | 0 (of 2) | 0.50 | 0 | 1 |"),
            "{md}"
        );
        assert!(
            md.contains("| kv | 4 | 0.970 / 0.900 | 1 | 8 / 4 | yes |"),
            "{md}"
        );
        assert!(
            md.contains("| ff | 24 | 0.800 / 0.800 | none | 4 / 4 | no |"),
            "{md}"
        );
    }

    #[test]
    fn no_seeds_and_non_finite_values_give_empty_lines_without_panicking() {
        let o = over_seeds(&[]);
        assert!(o.seeds.is_empty() && o.scenarios.is_empty());
        assert!(o
            .lines
            .iter()
            .all(|l| l.mean.is_none() && l.per_seed.is_empty()));
        let md = over_seeds_markdown(&o);
        assert!(
            md.contains("| Done-when line | target | mean | min | max |"),
            "{md}"
        );

        // one seed with no cases, one whose Ribbon run gave NaN kops
        let mut nan = case("kv", 24, f64::NAN, f64::NAN);
        nan.kops.insert("eager".into(), f64::NAN);
        let runs = vec![run(7, vec![], vec![]), run(8, vec![nan], vec![])];
        let o = over_seeds(&runs);
        assert_eq!(o.lines[0].per_seed, vec![None, Some(0.0)]);
        assert_eq!(o.lines[1].per_seed, vec![None, None]);
        assert_eq!(o.lines[2].mean, None);
        assert_eq!(o.scenarios[0].vs_oracle, vec![None, None]);
        assert_eq!(o.scenarios[0].final_m, vec![None, None]);
        assert_eq!(o.scenarios[0].within_5pct(), vec![None, None]);
        assert!(!o.scenarios[0].final_m_differs());
        let md = over_seeds_markdown(&o);
        assert!(
            md.contains("| kv | 24 | - / - | none | - / - | no |"),
            "{md}"
        );
    }
}

//! `memtamer sim validate` as one pool of runs. Running the suite scenario
//! by scenario left cores idle at the end of every sweep (a scenario's last,
//! longest point alone) and ran the platform probes one after another. Here
//! every scenario point and every platform probe of the suite is one item of
//! a single work pool, longest first (LPT list scheduling: Graham, "Bounds on
//! multiprocessing timing anomalies", SIAM J. Appl. Math. 1969), and points
//! with the same simulated inputs (the same scenario text apart from names,
//! sweeps, paper points, checks and plots, which the engine never reads) run
//! once. Each run is seeded on its own and deterministic, so results are
//! byte-identical to running the scenarios one by one, with any `--jobs`.
//!
//! `MEMTAMER_SIM_TIMINGS=1` prints each run's wall seconds, estimated cost
//! and what it is on stderr, and a summary at the end.

use crate::config::Scenario;
use crate::error::SimError;
use crate::experiment::{
    self, finish_scenario, load_platform, parallel_map_ordered, prepare_scenario,
    run_point_metrics, RunOptions, PLATFORMS,
};
use crate::probes::{platform_probes, probe_value, PlatformCheck, Validation};
use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

/// The inputs of a point that decide its simulated result, as a key: the
/// scenario without the fields the engine does not read.
fn run_key(spec: &Scenario) -> String {
    let mut s = spec.clone();
    s.name.clear();
    s.title.clear();
    s.sweep.clear();
    s.paper.clear();
    s.check.clear();
    s.plot.clear();
    format!("{s:?}")
}

/// Estimated cost of a run, for the longest-first order only (a wrong
/// estimate costs wall time, never a different result): simulated time
/// times the threads that issue requests.
pub fn estimated_cost(spec: &Scenario) -> f64 {
    let threads: u32 = spec.jobs.iter().map(|j| j.threads).sum();
    (spec.warmup_ms + spec.duration_ms) * f64::from(threads.max(1))
}

/// A platform expectation waiting for its probe runs.
struct PendingCheck {
    platform: String,
    metric: String,
    expected: f64,
    source: String,
    key: &'static str,
    runs: Vec<usize>,
}

/// Runs the scenarios `names` (built-in names or files) with their checks
/// and, with `platforms`, every built-in platform's expectations, all points
/// in one pool of `jobs` threads (0: all cores).
pub fn run_suite(
    names: &[String],
    platforms: bool,
    progress: bool,
    jobs: usize,
) -> Result<Validation, SimError> {
    // everything is loaded and checked before anything runs
    let opts = RunOptions::default();
    let mut preps = Vec::with_capacity(names.len());
    for name in names {
        preps.push(prepare_scenario(&experiment::load_scenario(name)?, &opts)?);
    }
    let mut probes = Vec::new();
    if platforms {
        for (name, _) in PLATFORMS {
            let p = load_platform(name, &BTreeMap::new())?;
            for e in &p.expect {
                if let Some((specs, key)) = platform_probes(name, &e.metric)? {
                    probes.push((name.to_string(), e.clone(), specs, key));
                }
            }
        }
    }
    // one run per distinct simulated input
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut unique: Vec<(Scenario, String)> = Vec::new();
    let mut slot = |spec: &Scenario, label: String| -> usize {
        let n = unique.len();
        let i = *index.entry(run_key(spec)).or_insert(n);
        if i == n {
            unique.push((spec.clone(), label));
        }
        i
    };
    let mut point_runs: Vec<Vec<usize>> = Vec::with_capacity(preps.len());
    for p in &preps {
        let runs = p
            .specs
            .iter()
            .zip(&p.points)
            .map(|(s, pt)| {
                let params: Vec<String> = pt.iter().map(|(k, v)| format!("{k}={v}")).collect();
                slot(s, format!("{} {}", p.scenario.name, params.join(" ")))
            })
            .collect();
        point_runs.push(runs);
    }
    let mut pending = Vec::with_capacity(probes.len());
    for (platform, e, specs, key) in &probes {
        let runs = specs
            .iter()
            .enumerate()
            .map(|(j, s)| slot(s, format!("probe {platform} {} #{j}", e.metric)))
            .collect();
        pending.push(PendingCheck {
            platform: platform.clone(),
            metric: e.metric.clone(),
            expected: e.value,
            source: e.source.clone(),
            key,
            runs,
        });
    }
    let costs: Vec<f64> = unique.iter().map(|(s, _)| estimated_cost(s)).collect();
    let mut order: Vec<usize> = (0..unique.len()).collect();
    // stable: equal estimates keep suite order
    order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]));
    let timings = std::env::var_os("MEMTAMER_SIM_TIMINGS").is_some_and(|v| v != "0");
    let t0 = Instant::now();
    let results = parallel_map_ordered(
        &unique,
        &order,
        jobs,
        progress.then_some(("validate", "runs")),
        |i, (spec, label)| {
            let t = Instant::now();
            let r = run_point_metrics(spec, None);
            if timings {
                eprintln!(
                    "timing {:8.3} s  end {:8.3} s  cost {:8.1}  {label}",
                    t.elapsed().as_secs_f64(),
                    t0.elapsed().as_secs_f64(),
                    costs[i]
                );
            }
            r
        },
    )?;
    if timings {
        let total: usize = point_runs.iter().map(Vec::len).sum::<usize>()
            + pending.iter().map(|c| c.runs.len()).sum::<usize>();
        eprintln!(
            "timing: {} runs for {total} points and probes, {:.3} s wall",
            unique.len(),
            t0.elapsed().as_secs_f64()
        );
    }
    let scenarios = preps
        .into_iter()
        .zip(point_runs)
        .map(|(p, runs)| finish_scenario(p, runs.iter().map(|&i| results[i].clone()).collect()))
        .collect();
    let platforms = pending
        .into_iter()
        .filter_map(|c| {
            let v = probe_value(c.runs.iter().map(|&i| &results[i]), c.key)?;
            Some(PlatformCheck {
                platform: c.platform,
                metric: c.metric,
                expected: c.expected,
                simulated: experiment::round_sig(v),
                source: c.source,
            })
        })
        .collect();
    Ok(Validation {
        scenarios,
        platforms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{JobSpec, WorkloadSpec};

    fn spec(name: &str) -> Scenario {
        Scenario::with_jobs(
            name,
            "pats",
            vec![JobSpec {
                start_cpus: None,
                group: None,
                name: "probe".into(),
                class: Default::default(),
                threads: 1,
                cpus: Some("0".into()),
                workload: WorkloadSpec::LatencyProbe {
                    region: "dram".into(),
                    pattern: crate::config::Pattern::Rand,
                },
            }],
        )
    }

    #[test]
    fn names_and_report_fields_do_not_split_runs_but_inputs_do() {
        let a = spec("one");
        let mut b = spec("two");
        b.title = "another".into();
        assert_eq!(run_key(&a), run_key(&b));
        let mut c = spec("one");
        c.seed += 1;
        assert_ne!(run_key(&a), run_key(&c));
        let mut d = spec("one");
        d.jobs[0].threads = 2;
        assert_ne!(run_key(&a), run_key(&d));
        let mut e = spec("one");
        e.platform_set
            .insert("pm.media_partitions".into(), toml::Value::Integer(1));
        assert_ne!(run_key(&a), run_key(&e));
    }

    #[test]
    fn longer_runs_are_estimated_costlier() {
        let a = spec("a");
        let mut b = spec("b");
        b.duration_ms *= 2.0;
        let mut c = spec("c");
        c.jobs[0].threads = 4;
        assert!(estimated_cost(&b) > estimated_cost(&a));
        assert!(estimated_cost(&c) > estimated_cost(&a));
    }
}

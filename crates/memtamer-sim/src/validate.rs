//! The validation suite: every built-in reproduction, the platform files'
//! idle latencies and peak bandwidths against their cited sources, the
//! sampler's accounting error, and the speed benchmark.

use crate::config::{Pattern, Rw, StoreKind, WorkloadSpec};
use crate::error::SimError;
use crate::experiment::{self, load_platform, run_point, ScenarioResult};
use crate::report::num;
use crate::suite::run_suite;
use std::collections::BTreeMap;
use std::fmt::Write;

use crate::probes::{job, probe_scenario};
pub use crate::probes::{measure_platform_metric, platform_probes, PlatformCheck, Validation};

/// Runs every built-in reproduction and platform expectation.
pub fn run_all(progress: bool) -> Result<Validation, SimError> {
    run_all_jobs(progress, 0)
}

/// The built-in scenarios `sim validate` runs: all but the Ribbon oracle and
/// characterization sweeps (~500 points) and the contention run (no checks),
/// which run under `memtamer sim ribbon` / `sim run`, and the demo.
pub fn suite_names() -> Vec<String> {
    experiment::SCENARIOS
        .iter()
        .map(|(n, _)| n.to_string())
        .filter(|n| {
            !matches!(
                n.as_str(),
                "demo" | "ribbon-oracle" | "ribbon-char" | "ribbon-contention"
            )
        })
        .collect()
}

/// [`run_all`] on `jobs` worker threads (0: all cores); results do not
/// depend on `jobs` (each point is seeded on its own). Every scenario point
/// and platform probe goes into one pool (see [`run_suite`]).
pub fn run_all_jobs(progress: bool, jobs: usize) -> Result<Validation, SimError> {
    run_suite(&suite_names(), true, progress, jobs)
}

/// Runs the named scenarios (built-in names or .toml files) with their
/// checks, for `sim validate NAME|FILE...`; no platform checks.
pub fn run_scenarios(
    names: &[String],
    progress: bool,
    jobs: usize,
) -> Result<Vec<ScenarioResult>, SimError> {
    Ok(run_suite(names, false, progress, jobs)?.scenarios)
}

/// Measures every built-in platform's `[[expect]]` metrics (idle latencies,
/// peak bandwidths) beside the published values they cite.
pub fn platform_checks() -> Result<Vec<PlatformCheck>, SimError> {
    Ok(run_suite(&[], true, false, 0)?.platforms)
}

/// Plain-text validation report.
pub fn text(v: &Validation) -> String {
    let mut s = String::new();
    for r in &v.scenarios {
        s.push_str(&crate::report::table(r));
        s.push('\n');
    }
    let _ = writeln!(s, "platform idle latencies and peak bandwidths:");
    for p in &v.platforms {
        let _ = writeln!(
            s,
            "  {:<10} {:<20} published {:>8} · sim {:>8} · {:+.1}%",
            p.platform,
            p.metric,
            num(p.expected),
            num(p.simulated),
            p.error() * 100.0
        );
    }
    s
}

/// Markdown table of a platform's parameters with their cited sources.
pub fn parameter_table(platform: &str) -> Result<String, SimError> {
    let (_, text) = experiment::PLATFORMS
        .iter()
        .find(|(n, _)| *n == platform)
        .ok_or_else(|| SimError::Unknown {
            what: "platform",
            name: platform.into(),
            known: String::new(),
        })?;
    let p = load_platform(platform, &BTreeMap::new())?;
    let value: toml::Value = toml::from_str(text).map_err(|e| SimError::Parse {
        file: platform.into(),
        line: 0,
        column: 0,
        message: e.to_string(),
    })?;
    let mut s = String::new();
    let _ = writeln!(s, "| parameter | value | source |");
    let _ = writeln!(s, "|---|---|---|");
    for section in ["cpu", "uncore", "memory", "dram", "pm"] {
        if let Some(t) = value.get(section).and_then(|t| t.as_table()) {
            for (k, val) in t {
                let key = format!("{section}.{k}");
                let src = p.sources.get(&key).map_or("topology", |s| s.as_str());
                let _ = writeln!(s, "| `{key}` | {val} | {} |", src.replace('|', "/"));
            }
        }
    }
    Ok(s)
}

/// Markdown validation tables (for docs/simulator.md).
pub fn markdown(v: &Validation) -> String {
    let mut s = String::new();
    if let Ok(t) = parameter_table("pats") {
        let _ = writeln!(s, "### Parameters of the PATS platform and their sources\n\nThe other platforms differ only in topology (sockets, cores, channels, regions).\n\n{t}");
    }
    let _ = writeln!(s, "### Paper vs simulated\n");
    let _ = writeln!(
        s,
        "| scenario | figure | metric | x | filter | paper | simulated |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for r in &v.scenarios {
        for c in &r.paper {
            let mut metric = match c.relative_to {
                Some(x) => format!("{} ÷ value at {x}", c.metric),
                None => c.metric.clone(),
            };
            for (k, v) in &c.relative_with {
                metric += &format!(" ÷ same at {}={v}", k.rsplit('.').next().unwrap_or(k));
            }
            let with: Vec<String> = c
                .with
                .iter()
                .map(|(k, v)| format!("{}={}", k.rsplit('.').next().unwrap_or(k), v))
                .collect();
            let _ = writeln!(
                s,
                "| {} | {} | `{}` | {} | {} | {} | {} |",
                r.scenario,
                c.figure,
                metric,
                c.x,
                with.join(" "),
                num(c.paper),
                c.sim.map_or("-".into(), num)
            );
        }
    }
    let _ = writeln!(s, "\n### Checks (the issue's acceptance lines)\n");
    let _ = writeln!(s, "| scenario | check | value | bound | result |");
    let _ = writeln!(s, "|---|---|---|---|---|");
    for r in &v.scenarios {
        for c in &r.checks {
            let bound = match (c.min, c.max) {
                (Some(a), Some(b)) => format!("[{a}, {b}]"),
                (Some(a), None) => format!(">= {a}"),
                (None, Some(b)) => format!("<= {b}"),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} |",
                r.scenario,
                c.name,
                c.value.map_or("-".into(), num),
                bound,
                if c.pass { "pass" } else { "**FAIL**" }
            );
        }
    }
    let _ = writeln!(s, "\n### Platform files vs their sources\n");
    let _ = writeln!(
        s,
        "| platform | metric | published | simulated | error | source |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for p in &v.platforms {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:+.1}% | {} |",
            p.platform,
            p.metric,
            num(p.expected),
            num(p.simulated),
            p.error() * 100.0,
            p.source
        );
    }
    s
}

/// Accounting error of the simulated PEBS sampler against ground truth, for
/// writers with 64 B..4 KB requests, NT and temporal stores.
pub fn sampler_accuracy(periods: &[u64]) -> Result<String, SimError> {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "period  request  store     store_bytes  truth_MB  estimate_MB  error"
    );
    for &period in periods {
        for req in [64u64, 256, 1024, 4096] {
            for store in [StoreKind::Nt, StoreKind::Temporal] {
                let sb = if store == StoreKind::Nt { 32 } else { 8 };
                let w = WorkloadSpec::PmStream {
                    rw: Rw::Write,
                    pattern: Pattern::Seq,
                    request_bytes: req,
                    store,
                    per_request_ns: 100.0,
                    gated: false,
                    fence_reads: true,
                    region: "pm".into(),
                };
                let mut sc = probe_scenario("kit", vec![job("w", 3, "0-2", w)]);
                sc.duration_ms = 20.0;
                let (_, r) = run_point(&sc, Some((period, sb)))?;
                let truth: u64 = r.pm_store_truth.iter().sum();
                let est: u64 = r.sampler.as_ref().map_or(0, |x| x.estimate.iter().sum());
                let err = if truth > 0 {
                    est as f64 / truth as f64 - 1.0
                } else {
                    0.0
                };
                let _ = writeln!(
                    s,
                    "{period:>6}  {req:>7}  {:<8}  {sb:>11}  {:>8.1}  {:>11.1}  {:+.2}%",
                    format!("{store:?}").to_lowercase(),
                    truth as f64 / 1e6,
                    est as f64 / 1e6,
                    err * 100.0
                );
            }
        }
    }
    Ok(s)
}

/// Speed: simulated cache-line requests per wall second, single-threaded.
pub fn speed_bench() -> Result<String, SimError> {
    let mut s = String::new();
    let mut sc = experiment::load_scenario("pats-fig4-mbw")?;
    sc.sweep.clear();
    sc.duration_ms = 20.0;
    for n in [0u32, 4, 14] {
        if let Some(j) = sc.jobs.iter_mut().find(|j| j.name == "fio") {
            j.threads = n;
        }
        let (req, secs) = experiment::speed(&sc)?;
        let _ = writeln!(
            s,
            "pats memcpy + {n:>2} PM writers, 20 ms simulated: {req} requests in {secs:.3} s = {:.2} M requests/s",
            req as f64 / secs / 1e6
        );
    }
    Ok(s)
}

//! Running scenarios: built-in files, overrides, sweeps (in parallel, with
//! deterministic results), metrics, paper comparisons and checks. The
//! calibrated-model source is a parameter ([`ModelSource`]): the calibrator runs
//! scenarios through this module, and `crate::experiment` is the layer above both
//! that plugs the calibrator in.

use crate::config::{Platform, Scenario, SweepSpec, WorkloadSpec};
use crate::engine::{Engine, EngineConfig, RunResult};
use crate::error::SimError;
use serde::Serialize;
use std::collections::BTreeMap;

pub use crate::builtins::{Builtin, PLATFORMS, SCENARIOS};

fn read_named(
    kind: &'static str,
    list: &[Builtin],
    name: &str,
) -> Result<(String, String), SimError> {
    if let Some((n, t)) = list.iter().find(|(n, _)| *n == name) {
        return Ok((format!("<builtin {kind} {n}>"), t.to_string()));
    }
    if name.ends_with(".toml") || name.contains('/') {
        let text = std::fs::read_to_string(name).map_err(|source| SimError::Io {
            path: name.to_string(),
            source,
        })?;
        return Ok((name.to_string(), text));
    }
    Err(SimError::Unknown {
        what: kind,
        name: name.to_string(),
        known: list.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", "),
    })
}

/// Loads a platform by built-in name or path, with overrides.
pub fn load_platform(
    name: &str,
    overrides: &BTreeMap<String, toml::Value>,
) -> Result<Platform, SimError> {
    let (file, text) = read_named("platform", PLATFORMS, name)?;
    Platform::parse_with(&file, &text, overrides)
}

/// Loads a scenario by built-in name or path. A scenario read from a file
/// names its platform files (`platform = "x.toml"`, swept `platform` values)
/// relative to its own folder, so it runs from any working directory;
/// built-in names and absolute paths stay as they are.
pub fn load_scenario(name: &str) -> Result<Scenario, SimError> {
    let (file, text) = read_named("scenario", SCENARIOS, name)?;
    let mut s = Scenario::parse(&file, &text)?;
    if !SCENARIOS.iter().any(|(n, _)| *n == name) {
        // a name neither built in nor a file: the file's error (exit 3,
        // FILE:LINE), not an unknown name typed on the command line (exit 2)
        crate::config::scenario::known_platform(&s.platform).map_err(|message| {
            SimError::Invalid {
                file: file.clone(),
                line: crate::error::line_of_key(&text, "platform"),
                key: "platform".into(),
                message,
            }
        })?;
        let dir = std::path::Path::new(name)
            .parent()
            .unwrap_or(std::path::Path::new(""));
        s.platform = beside(dir, &s.platform);
        for sw in s.sweep.iter_mut().filter(|sw| sw.key == "platform") {
            for v in &mut sw.values {
                if let toml::Value::String(p) = v {
                    *p = beside(dir, p);
                }
            }
        }
        let points = sweep_points(&s.sweep);
        crate::point_check::file_points(&file, &text, &s, points, load_platform)?;
    }
    Ok(s)
}

/// `platform` resolved against `dir` when it is a relative file path (ends in
/// `.toml` or has a `/`, as `read_named` reads it) and not a built-in name.
fn beside(dir: &std::path::Path, platform: &str) -> String {
    let is_file = platform.ends_with(".toml") || platform.contains('/');
    let builtin = PLATFORMS.iter().any(|(n, _)| *n == platform);
    if !is_file || builtin || std::path::Path::new(platform).is_absolute() {
        return platform.to_string();
    }
    dir.join(platform).to_string_lossy().into_owned()
}

use crate::policies::{policy_by_name, ModelSource};

pub use crate::pool::{parallel_map, parallel_map_ordered};

/// How to run a scenario.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// `key=value` overrides, applied before sweeps.
    pub sets: Vec<(String, toml::Value)>,
    /// Replaces the scenario's sweeps.
    pub sweep: Option<Vec<SweepSpec>>,
    /// Replaces the scenario's seed.
    pub seed: Option<u64>,
    /// Worker threads (0 = available parallelism).
    pub jobs: usize,
    /// Print progress on stderr.
    pub progress: bool,
    /// Enable the simulated PEBS sampler: (period, bytes per store instruction).
    pub sampler: Option<(u64, u64)>,
    /// Keep each point's Ribbon searches ([`PointResult::searches`];
    /// `memtamer sim run --trace-search`). Off: results as without it.
    pub trace_search: bool,
}

/// One simulated point of a sweep.
#[derive(Clone, Debug, Serialize)]
pub struct PointResult {
    /// Swept keys and their values at this point.
    pub params: BTreeMap<String, toml::Value>,
    /// Value of the first swept key (the x axis), if numeric.
    pub x: Option<f64>,
    /// Metrics (see docs/simulator.md for the list and units).
    pub metrics: BTreeMap<String, f64>,
    /// Cache-line requests simulated.
    pub requests: u64,
    /// Events processed.
    pub events: u64,
    /// The Ribbon controllers' searches, only with
    /// [`RunOptions::trace_search`] (absent from the JSON otherwise, so
    /// default results stay as they were).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub searches: Vec<crate::search_trace::SearchTrace>,
}

/// A paper point beside the simulated value.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Figure.
    pub figure: String,
    /// Metric.
    pub metric: String,
    /// X.
    pub x: f64,
    /// Relative to the metric at this x, if set.
    pub relative_to: Option<f64>,
    /// Published.
    pub paper: f64,
    /// Simulated (None if the point was not simulated).
    pub sim: Option<f64>,
    /// Source.
    pub source: String,
    /// Point filter.
    pub with: BTreeMap<String, toml::Value>,
    /// Filter overrides of the denominator (see `PaperPoint::relative_with`).
    pub relative_with: BTreeMap<String, toml::Value>,
    /// Relative deviation the report accepts (see `PaperPoint::tolerance`);
    /// left out of JSON when unset, so results of existing scenarios keep
    /// their bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
}

/// A check's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    /// What was checked.
    pub name: String,
    /// Value found.
    pub value: Option<f64>,
    /// Bounds.
    pub min: Option<f64>,
    /// Bounds.
    pub max: Option<f64>,
    /// Whether it passed.
    pub pass: bool,
}

/// All points of a scenario.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioResult {
    /// Scenario name.
    pub scenario: String,
    /// Title.
    pub title: String,
    /// Platform name.
    pub platform: String,
    /// Policy.
    pub policy: String,
    /// Seed.
    pub seed: u64,
    /// X-axis key.
    pub x_key: Option<String>,
    /// Points in sweep order.
    pub points: Vec<PointResult>,
    /// Paper comparisons.
    pub paper: Vec<Comparison>,
    /// Checks.
    pub checks: Vec<CheckResult>,
    /// Plots (from the scenario).
    #[serde(skip)]
    pub plots: Vec<crate::config::PlotSpec>,
}

impl ScenarioResult {
    /// Metric at x among the points whose params match `with`.
    pub fn metric_at(
        &self,
        metric: &str,
        x: f64,
        with: &BTreeMap<String, toml::Value>,
    ) -> Option<f64> {
        self.points
            .iter()
            .find(|p| {
                p.x.is_some_and(|px| (px - x).abs() < 1e-9)
                    && with.iter().all(|(k, v)| p.params.get(k) == Some(v))
            })
            .and_then(|p| p.metrics.get(metric).copied())
    }

    /// `(x, metric)` of every point whose params match `with` (the curve a
    /// shape check looks at).
    pub fn curve(&self, metric: &str, with: &BTreeMap<String, toml::Value>) -> Vec<(f64, f64)> {
        self.points
            .iter()
            .filter(|p| with.iter().all(|(k, v)| p.params.get(k) == Some(v)))
            .filter_map(|p| Some((p.x?, *p.metrics.get(metric)?)))
            .collect()
    }

    fn value(
        &self,
        metric: &str,
        x: f64,
        rel: Option<f64>,
        with: &BTreeMap<String, toml::Value>,
        relative_with: &BTreeMap<String, toml::Value>,
    ) -> Option<f64> {
        let v = self.metric_at(metric, x, with)?;
        if rel.is_none() && relative_with.is_empty() {
            return Some(v);
        }
        let mut base_filter = with.clone();
        base_filter.extend(relative_with.iter().map(|(k, v)| (k.clone(), v.clone())));
        let b = self.metric_at(metric, rel.unwrap_or(x), &base_filter)?;
        (b != 0.0).then(|| v / b)
    }
}

/// The points of `sweeps`: every combination of their values, the first
/// sweep outermost.
pub(crate) fn sweep_points(sweeps: &[SweepSpec]) -> Vec<Vec<(String, toml::Value)>> {
    let mut points: Vec<Vec<(String, toml::Value)>> = vec![Vec::new()];
    for s in sweeps {
        let mut next = Vec::new();
        for p in &points {
            for v in &s.values {
                let mut q = p.clone();
                q.push((s.key.clone(), v.clone()));
                next.push(q);
            }
        }
        points = next;
    }
    points
}

fn as_f64(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

/// Runs one fully specified scenario (no sweep) and returns its raw result;
/// its flush jobs keep their Ribbon searches only if `trace_search`
/// ([`EngineConfig::trace_search`]).
pub fn run_point(
    scenario: &Scenario,
    sampler: Option<(u64, u64)>,
    trace_search: bool,
    models: ModelSource,
) -> Result<(Platform, RunResult), SimError> {
    let platform = load_platform(&scenario.platform, &scenario.platform_set)?;
    let cfg = EngineConfig {
        seed: scenario.seed,
        warmup: (scenario.warmup_ms * 1e9) as u64,
        duration: (scenario.duration_ms * 1e9) as u64,
        window: (scenario.policy_window_us * 1e6) as u64,
        sampler,
        trace_search,
    };
    let mut policy = policy_by_name(&scenario.policy, &platform, models)?;
    let engine = Engine::new(&platform, scenario, &cfg).map_err(|m| SimError::Invalid {
        file: scenario.name.clone(),
        line: 0,
        key: "job".into(),
        message: m,
    })?;
    Ok((platform, engine.run(policy.as_mut())))
}

/// Metrics of one run (names documented in docs/simulator.md).
pub fn metrics(scenario: &Scenario, platform: &Platform, r: &RunResult) -> BTreeMap<String, f64> {
    let mut m = BTreeMap::new();
    let s = r.seconds.max(1e-12);
    for (job, spec) in r.jobs.iter().zip(scenario.jobs.iter()) {
        let n = &job.name;
        m.insert(format!("{n}.gbps"), job.bytes as f64 / s / 1e9);
        m.insert(format!("{n}.kops"), job.units as f64 / s / 1e3);
        m.insert(
            format!("{n}.pm_read_gbps"),
            job.pm.read_bytes as f64 / s / 1e9,
        );
        m.insert(
            format!("{n}.pm_write_gbps"),
            job.pm.write_bytes as f64 / s / 1e9,
        );
        m.insert(
            format!("{n}.dram_gbps"),
            (job.dram.read_bytes + job.dram.write_bytes) as f64 / s / 1e9,
        );
        if job.gate_wait_ns > 0 {
            m.insert(format!("{n}.gate_wait_ms"), job.gate_wait_ns as f64 / 1e6);
        }
        if let WorkloadSpec::Trace { trace, .. } = &spec.workload {
            // what the trace persists (timing-independent), beside the rates
            if let Ok(t) = crate::workload::trace::load(trace) {
                let media = r.dimms.iter().map(|(_, d)| d.media_write_bytes).sum();
                crate::workload::trace::metrics(n, &t.stats, job.units, media, &mut m);
            }
        }
        if matches!(spec.workload, WorkloadSpec::LatencyProbe { .. }) && job.units > 0 {
            m.insert(
                format!("{n}.latency_ns"),
                job.threads as f64 * s * 1e9 / job.units as f64,
            );
        }
        if job.latency.count() > 0 {
            for (q, name) in [
                (0.5, "p50_us"),
                (0.9, "p90_us"),
                (0.99, "p99_us"),
                (0.999, "p999_us"),
            ] {
                if let Some(v) = job.latency.quantile(q) {
                    m.insert(format!("{n}.{name}"), v as f64 / 1e3);
                }
            }
        }
    }
    for f in &r.flush {
        let Some(job) = r.jobs.get(f.job) else {
            continue;
        };
        let n = &job.name;
        let st = f.stats;
        let flushes = st.dirty + st.clean + st.nonresident + st.in_flight;
        m.insert(format!("{n}.flushers"), f.flushers_avg);
        m.insert(format!("{n}.flushers_end"), f.flushers_end as f64);
        m.insert(format!("{n}.searches"), st.searches as f64);
        m.insert(format!("{n}.flush_gbps"), flushes as f64 * 64.0 / s / 1e9);
        let share = |v: u64| v as f64 / flushes.max(1) as f64;
        m.insert(format!("{n}.flush_dirty_share"), share(st.dirty));
        m.insert(format!("{n}.flush_clean_share"), share(st.clean));
        m.insert(
            format!("{n}.flush_nonresident_share"),
            share(st.nonresident),
        );
        m.insert(format!("{n}.flush_in_flight_share"), share(st.in_flight));
        m.insert(
            format!("{n}.proactive_gbps"),
            st.proactive as f64 * 64.0 / s / 1e9,
        );
        m.insert(format!("{n}.rfo_gbps"), st.rfo as f64 * 64.0 / s / 1e9);
        m.insert(format!("{n}.evicted_dirty"), st.evicted_dirty as f64);
    }
    // summed metrics of job groups, in the order groups first appear
    let mut groups: Vec<(&str, [f64; 5])> = Vec::new();
    for (job, spec) in r.jobs.iter().zip(scenario.jobs.iter()) {
        let Some(g) = spec.group.as_deref() else {
            continue;
        };
        let v = [
            job.bytes as f64,
            job.units as f64,
            job.pm.read_bytes as f64,
            job.pm.write_bytes as f64,
            (job.dram.read_bytes + job.dram.write_bytes) as f64,
        ];
        match groups.iter_mut().find(|(n, _)| *n == g) {
            Some((_, t)) => t.iter_mut().zip(v).for_each(|(a, b)| *a += b),
            None => groups.push((g, v)),
        }
    }
    for (g, t) in groups {
        m.insert(format!("{g}.gbps"), t[0] / s / 1e9);
        m.insert(format!("{g}.kops"), t[1] / s / 1e3);
        m.insert(format!("{g}.pm_read_gbps"), t[2] / s / 1e9);
        m.insert(format!("{g}.pm_write_gbps"), t[3] / s / 1e9);
        m.insert(format!("{g}.dram_gbps"), t[4] / s / 1e9);
    }
    let mut tot = [0u64; 4];
    for (name, d) in &r.dimms {
        let counters = [
            ("media_read", d.media_read_bytes),
            ("media_write", d.media_write_bytes),
            ("request_read", d.request_read_bytes),
            ("request_write", d.request_write_bytes),
        ];
        for (what, bytes) in counters {
            m.insert(format!("dimm.{name}.{what}_gbps"), bytes as f64 / s / 1e9);
            m.insert(format!("dimm.{name}.{what}_bytes"), bytes as f64);
        }
        m.insert(format!("dimm.{name}.rmw"), d.rmw as f64);
        tot[0] += d.media_read_bytes;
        tot[1] += d.media_write_bytes;
        tot[2] += d.request_read_bytes;
        tot[3] += d.request_write_bytes;
    }
    if !r.dimms.is_empty() {
        m.insert("pm.media_read_gbps".into(), tot[0] as f64 / s / 1e9);
        m.insert("pm.media_write_gbps".into(), tot[1] as f64 / s / 1e9);
        m.insert("pm.request_read_gbps".into(), tot[2] as f64 / s / 1e9);
        m.insert("pm.request_write_gbps".into(), tot[3] as f64 / s / 1e9);
        if tot[3] > 0 {
            m.insert(
                "pm.write_amplification".into(),
                tot[1] as f64 / tot[3] as f64,
            );
        }
    }
    let mut dram_total = 0u64;
    for (name, c) in &r.channels {
        let cas = c.cas_reads + c.cas_writes;
        dram_total += cas;
        // raw uncore-equivalent counters over the measured window
        m.insert(format!("chan.{name}.cas_reads"), c.cas_reads as f64);
        m.insert(format!("chan.{name}.cas_writes"), c.cas_writes as f64);
        if c.pmm_rpq_inserts + c.pmm_wpq_inserts > 0 {
            m.insert(
                format!("chan.{name}.pmm_rpq_occupancy"),
                c.pmm_rpq_occupancy as f64,
            );
            m.insert(
                format!("chan.{name}.pmm_rpq_inserts"),
                c.pmm_rpq_inserts as f64,
            );
            m.insert(
                format!("chan.{name}.pmm_wpq_occupancy"),
                c.pmm_wpq_occupancy as f64,
            );
            m.insert(
                format!("chan.{name}.pmm_wpq_inserts"),
                c.pmm_wpq_inserts as f64,
            );
        }
        if cas > 0 {
            m.insert(
                format!("chan.{name}.dram_gbps"),
                cas as f64 * 64.0 / s / 1e9,
            );
        }
        if c.pmm_wpq_inserts > 0 {
            m.insert(
                format!("chan.{name}.wpq_delay_cycles"),
                c.pmm_wpq_occupancy as f64 / c.pmm_wpq_inserts as f64,
            );
        }
        if c.pmm_rpq_inserts > 0 {
            m.insert(
                format!("chan.{name}.rpq_delay_cycles"),
                c.pmm_rpq_occupancy as f64 / c.pmm_rpq_inserts as f64,
            );
        }
    }
    m.insert("dram.gbps".into(), dram_total as f64 * 64.0 / s / 1e9);
    let _ = platform;
    m.insert("sim.seconds".into(), r.seconds);
    m.insert("sim.gate_max_admitted".into(), r.gate_max_admitted as f64);
    m.insert("sim.migrations".into(), r.migrations as f64);
    // round for stable, readable output
    // (counts stay exact)
    for v in m.values_mut() {
        if v.fract() != 0.0 {
            *v = round_sig(*v);
        }
    }
    m
}

/// Rounds to 6 significant digits (keeps JSON stable and readable).
pub fn round_sig(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return if v.is_finite() { 0.0 } else { v };
    }
    let d = 6 - v.abs().log10().ceil() as i32;
    let f = 10f64.powi(d.clamp(-300, 300));
    (v * f).round() / f
}

/// A scenario with its overrides applied and its sweep expanded into fully
/// specified points, validated, not yet run: [`run_scenario`] runs its points
/// on a pool of its own, a suite ([`crate::validate`]) pools the points of
/// many scenarios.
#[derive(Clone, Debug)]
pub struct PreparedScenario {
    /// The scenario after `RunOptions::sets` and `seed`.
    pub scenario: Scenario,
    /// The sweeps in effect (the scenario's or `RunOptions::sweep`).
    pub sweeps: Vec<SweepSpec>,
    /// Swept `(key, value)`s of each point, in sweep order.
    pub points: Vec<Vec<(String, toml::Value)>>,
    /// The fully specified scenario of each point.
    pub specs: Vec<Scenario>,
}

/// Applies `opts`' overrides and seed, expands the sweeps and checks every
/// point's platform and policy before any time is spent running.
pub fn prepare_scenario(
    base: &Scenario,
    opts: &RunOptions,
    models: ModelSource,
) -> Result<PreparedScenario, SimError> {
    // errors the command line's `--set`s and `--sweep`s cause name them
    // (usage errors); the file's keep their FILE:LINE (crate::blame)
    let mut scenario = base
        .with_overrides(&opts.sets)
        .map_err(|e| crate::blame::from_sets(e, &opts.sets))?;
    if let Some(seed) = opts.seed {
        scenario.seed = seed;
    }
    let cli_sweep = opts.sweep.is_some();
    let sweeps = opts.sweep.clone().unwrap_or_else(|| scenario.sweep.clone());
    let points = sweep_points(&sweeps);
    let mut specs = Vec::with_capacity(points.len());
    for p in &points {
        let s = scenario.with_overrides(p).map_err(|e| {
            if cli_sweep {
                crate::blame::at_point(e, p, true, &[], "")
            } else {
                at_sweep_point(e, p)
            }
        })?;
        let platform = load_platform(&s.platform, &s.platform_set)
            .map_err(|e| crate::blame::at_point(e, p, cli_sweep, &opts.sets, "platform"))?;
        policy_by_name(&s.policy, &platform, models).map_err(|e| match e {
            SimError::Policy(_) | SimError::Unknown { .. } => {
                crate::blame::at_point(e, p, cli_sweep, &opts.sets, "policy")
            }
            e => e,
        })?;
        crate::point_check::point_inputs(&platform, &s).map_err(|b| {
            let path = b.path();
            let e = SimError::Invalid {
                file: s.name.clone(),
                line: 0,
                key: path.clone(),
                message: b.message,
            };
            crate::blame::at_key(e, p, cli_sweep, &opts.sets, &path)
        })?;
        specs.push(s);
    }
    Ok(PreparedScenario {
        scenario,
        sweeps,
        points,
        specs,
    })
}

/// A point's range error names the point (`<sweep point k=v, ..>:0: key
/// ...`), not `<overrides>`: the point's values come from sweeps, which
/// may be the file's own.
fn at_sweep_point(e: SimError, point: &[(String, toml::Value)]) -> SimError {
    match e {
        SimError::Invalid {
            file,
            line,
            key,
            message,
        } if file == "<overrides>" && !point.is_empty() => SimError::Invalid {
            file: format!(
                "<sweep point {}>",
                point
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            line,
            key,
            message,
        },
        e => e,
    }
}

/// What a point's run gives, before its sweep coordinates are attached:
/// the same for every point with the same simulated inputs.
#[derive(Clone, Debug)]
pub struct PointRun {
    /// Metrics (see [`metrics`]).
    pub metrics: BTreeMap<String, f64>,
    /// Cache-line requests simulated.
    pub requests: u64,
    /// Events processed.
    pub events: u64,
    /// Every Ribbon search of the point's flush jobs, only if the run
    /// asked for them (see [`RunOptions::trace_search`]).
    pub searches: Vec<crate::search_trace::SearchTrace>,
}

/// Runs one fully specified point and computes its metrics (with its
/// Ribbon searches if `trace_search`).
pub fn run_point_metrics(
    spec: &Scenario,
    sampler: Option<(u64, u64)>,
    trace_search: bool,
    models: ModelSource,
) -> Result<PointRun, SimError> {
    run_point(spec, sampler, trace_search, models).map(|(plat, r)| PointRun {
        metrics: metrics(spec, &plat, &r),
        requests: r.requests,
        events: r.events,
        searches: r
            .flush
            .iter()
            .flat_map(|f| {
                let name = r.jobs.get(f.job).map_or("?", |j| j.name.as_str());
                f.searches
                    .iter()
                    .map(move |s| crate::search_trace::SearchTrace::new(name, s))
            })
            .collect(),
    })
}

/// Runs a scenario with its sweeps; points run in parallel, results in order.
pub fn run_scenario(
    base: &Scenario,
    opts: &RunOptions,
    models: ModelSource,
) -> Result<ScenarioResult, SimError> {
    let prep = prepare_scenario(base, opts, models)?;
    let runs = parallel_map(
        &prep.specs,
        opts.jobs,
        opts.progress.then_some((base.name.as_str(), "points")),
        |_, s| run_point_metrics(s, opts.sampler, opts.trace_search, models),
    )?;
    Ok(finish_scenario(prep, runs))
}

/// The scenario's result from its points' runs (`runs[i]` for
/// `prep.specs[i]`): points with their sweep coordinates, paper comparisons
/// and checks.
pub fn finish_scenario(prep: PreparedScenario, runs: Vec<PointRun>) -> ScenarioResult {
    let PreparedScenario {
        scenario,
        sweeps,
        points,
        ..
    } = prep;
    let out: Vec<PointResult> = points
        .iter()
        .zip(runs)
        .map(|(p, r)| PointResult {
            params: p.iter().cloned().collect(),
            x: p.first().and_then(|(_, v)| as_f64(v)),
            metrics: r.metrics,
            requests: r.requests,
            events: r.events,
            searches: r.searches,
        })
        .collect();
    let mut result = ScenarioResult {
        scenario: scenario.name.clone(),
        title: scenario.title.clone(),
        platform: if sweeps.iter().any(|s| s.key == "platform") {
            "(swept)".to_string()
        } else {
            scenario.platform.clone()
        },
        policy: scenario.policy.clone(),
        seed: scenario.seed,
        x_key: sweeps.first().map(|s| s.key.clone()),
        points: out,
        paper: Vec::new(),
        checks: Vec::new(),
        plots: scenario.plot.clone(),
    };
    result.paper = scenario
        .paper
        .iter()
        .map(|p| Comparison {
            figure: p.figure.clone(),
            metric: p.metric.clone(),
            x: p.x,
            relative_to: p.relative_to,
            paper: p.value,
            sim: result
                .value(&p.metric, p.x, p.relative_to, &p.with, &p.relative_with)
                .map(round_sig),
            with: p.with.clone(),
            relative_with: p.relative_with.clone(),
            source: p.source.clone(),
            tolerance: p.tolerance,
        })
        .collect();
    result.checks = scenario
        .check
        .iter()
        .map(|c| {
            let v = match (c.kind, c.at) {
                (crate::config::CheckKind::Point, Some(at)) => {
                    result.value(&c.metric, at, c.relative_to, &c.with, &c.relative_with)
                }
                (crate::config::CheckKind::Point, None) => None,
                (kind, _) => {
                    crate::shape::feature_x(&result.curve(&c.metric, &c.with), kind, c.fraction)
                }
            }
            .map(round_sig);
            let pass =
                v.is_some_and(|v| c.min.is_none_or(|m| v >= m) && c.max.is_none_or(|m| v <= m));
            CheckResult {
                name: c.name.clone(),
                value: v,
                min: c.min,
                max: c.max,
                pass,
            }
        })
        .collect();
    result
}

/// Simulated memory requests per second of wall time for one point (speed benchmark).
pub fn speed(scenario: &Scenario, models: ModelSource) -> Result<(u64, f64), SimError> {
    let t = std::time::Instant::now();
    let (_, r) = run_point(scenario, None, false, models)?;
    Ok((r.requests, t.elapsed().as_secs_f64()))
}

//! Platform probes: the runs behind each platform file's `[[expect]]`
//! metric (idle latencies, peak bandwidths) and the records `sim validate`
//! reports; shared by the validation report and the pooled suite runner.

use crate::config::{JobSpec, Pattern, Rw, Scenario, StoreKind, WorkloadSpec};
use crate::error::SimError;
use crate::experiment::{self, load_platform, PointRun, ScenarioResult};
use std::collections::BTreeMap;

/// One platform expectation and what the simulator gives.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PlatformCheck {
    /// Platform.
    pub platform: String,
    /// Metric.
    pub metric: String,
    /// Published.
    pub expected: f64,
    /// Simulated.
    pub simulated: f64,
    /// Source.
    pub source: String,
}

impl PlatformCheck {
    /// Relative error.
    pub fn error(&self) -> f64 {
        (self.simulated - self.expected) / self.expected
    }
}

/// Everything `memtamer sim validate` prints (`--format json` serializes it).
#[derive(serde::Serialize)]
pub struct Validation {
    /// Scenario results.
    pub scenarios: Vec<ScenarioResult>,
    /// Platform checks.
    pub platforms: Vec<PlatformCheck>,
}

pub(crate) fn job(name: &str, threads: u32, cpus: &str, workload: WorkloadSpec) -> JobSpec {
    JobSpec {
        start_cpus: None,
        group: None,
        name: name.into(),
        class: Default::default(),
        threads,
        cpus: Some(cpus.into()),
        workload,
    }
}

pub(crate) fn probe_scenario(platform: &str, jobs: Vec<JobSpec>) -> Scenario {
    Scenario::with_jobs(&format!("probe-{platform}"), platform, jobs)
}

/// The probe runs behind one platform metric and the metric each reports:
/// the metric's value is the largest the runs give (one run for latencies;
/// a thread-count sweep for peak bandwidths). `None` for metrics without a
/// probe.
pub fn platform_probes(
    platform: &str,
    metric: &str,
) -> Result<Option<(Vec<Scenario>, &'static str)>, SimError> {
    let probe = |region: &str, pattern: Pattern| WorkloadSpec::LatencyProbe {
        region: region.into(),
        pattern,
    };
    let stream = |rw: Rw| WorkloadSpec::PmStream {
        rw,
        pattern: Pattern::Seq,
        request_bytes: 4096,
        store: StoreKind::Nt,
        per_request_ns: 0.0,
        gated: false,
        fence_reads: true,
        region: "pm".into(),
    };
    let p = load_platform(platform, &BTreeMap::new())?;
    let ncpu = p.cpu.cores_per_socket;
    let lat = |w: WorkloadSpec| {
        let s = probe_scenario(platform, vec![job("probe", 1, "0", w)]);
        Some((vec![s], "probe.latency_ns"))
    };
    let bw = |w: WorkloadSpec, metric: &'static str, counts: &[u32]| {
        let runs = counts
            .iter()
            .map(|&n| {
                probe_scenario(
                    platform,
                    vec![job(
                        "bw",
                        n.min(ncpu),
                        &format!("0-{}", ncpu - 1),
                        w.clone(),
                    )],
                )
            })
            .collect();
        Some((runs, metric))
    };
    Ok(match metric {
        "dram_idle_ns" => lat(probe("dram", Pattern::Rand)),
        "pm_idle_random_ns" => lat(probe("pm", Pattern::Rand)),
        "pm_idle_seq_ns" | "pm_idle_dicio_ns" => lat(probe("pm", Pattern::Seq)),
        "pm_peak_read_gbps" => bw(stream(Rw::Read), "pm.request_read_gbps", &[4, 8, 16, 24]),
        // every writer count up to 16: the published peaks are maxima over
        // thread counts (Yang et al.: four threads saturate six DIMMs), and
        // where the maximum falls (3 to 5 writers here) differs by platform
        "pm_peak_write_gbps" => bw(
            stream(Rw::Write),
            "pm.media_write_gbps",
            &(1..=16).collect::<Vec<u32>>(),
        ),
        _ => None,
    })
}

/// The largest `metric` among probe runs, in run order.
pub(crate) fn probe_value<'a>(
    runs: impl Iterator<Item = &'a PointRun>,
    metric: &str,
) -> Option<f64> {
    runs.filter_map(|r| r.metrics.get(metric).copied())
        .fold(None, |best, v| Some(best.map_or(v, |b: f64| b.max(v))))
}

/// Measures one platform metric with its probe runs ([`platform_probes`]).
pub fn measure_platform_metric(platform: &str, metric: &str) -> Result<Option<f64>, SimError> {
    let Some((specs, key)) = platform_probes(platform, metric)? else {
        return Ok(None);
    };
    let runs = specs
        .iter()
        .map(|s| experiment::run_point_metrics(s, None))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(probe_value(runs.iter(), key))
}

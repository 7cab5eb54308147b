//! `memtamer calibrate`: measure the contention knee of a platform instead
//! of trusting PATS Eq. 1. For PM reads and writes of several request sizes,
//! many PM threads run beside a single-thread DRAM memcpy probe behind a gate
//! fixed at N = 1, 2, ... concurrent requests (exactly how T_S is used);
//! T_S is the largest N at which (and below which) memcpy keeps at least
//! (1 - max_dram_loss) of its throughput alone, with the gate applied after
//! a window of ungated traffic (the worse of the two starts near the knee).

use crate::config::{JobSpec, MbwMode, Pattern, Rw, Scenario, StoreKind, SweepSpec, WorkloadSpec};
use crate::error::SimError;
use crate::runner::{load_platform, run_scenario, RunOptions};
use memtamer_core::pats::{CalibratedModel, CalibrationPoint};
use std::collections::BTreeMap;

/// What to calibrate.
#[derive(Clone, Debug)]
pub struct CalibrationSpec {
    /// Platform name or file.
    pub platform: String,
    /// Tolerated loss of DRAM throughput (0.05 = 5%).
    pub max_dram_loss: f64,
    /// Request sizes to measure.
    pub request_sizes: Vec<u64>,
    /// Simulated milliseconds per point.
    pub duration_ms: f64,
    /// Print progress.
    pub progress: bool,
    /// Worker threads (0: all cores).
    pub jobs: usize,
}

impl Default for CalibrationSpec {
    fn default() -> Self {
        CalibrationSpec {
            platform: "pats".into(),
            max_dram_loss: 0.05,
            request_sizes: vec![256, 512, 1024, 4096],
            duration_ms: 2.0,
            progress: false,
            jobs: 0,
        }
    }
}

/// The experiment every calibration and comparison runs: a single-thread
/// DRAM memcpy (job `probe`, CPU 0) beside `pm_threads` sequential PM
/// streams (job `pm`, CPUs 1..=`cpus`) of `request_bytes` requests that pass
/// the gate: MBW beside fio as in PATS §III.
pub fn probe_beside_pm(
    name: &str,
    platform: &str,
    pm_threads: u32,
    cpus: u32,
    rw: Rw,
    request_bytes: u64,
) -> Scenario {
    Scenario::with_jobs(
        name,
        platform,
        vec![
            JobSpec {
                start_cpus: None,
                group: None,
                name: "probe".into(),
                class: Default::default(),
                threads: 1,
                cpus: Some("0".into()),
                workload: WorkloadSpec::Mbw {
                    mode: MbwMode::Memcpy,
                    block_bytes: 262_144,
                    call_ns: 20.0,
                    region: "dram".into(),
                },
            },
            JobSpec {
                start_cpus: None,
                group: None,
                name: "pm".into(),
                class: Default::default(),
                threads: pm_threads,
                cpus: Some(format!("1-{}", cpus.max(1))),
                workload: WorkloadSpec::PmStream {
                    rw,
                    pattern: Pattern::Seq,
                    request_bytes,
                    store: StoreKind::Nt,
                    per_request_ns: 150.0,
                    gated: true,
                    fence_reads: true,
                    region: "pm".into(),
                },
            },
        ],
    )
}

/// The largest n >= 1 such that every ratio up to n stays at or above `floor`
/// (at least 1: PM work must always make progress). `ratios[i]` is for i+1 threads.
pub fn knee(ratios: &[f64], floor: f64) -> u32 {
    let ok = ratios.iter().take_while(|r| **r >= floor).count() as u32;
    ok.max(1)
}

/// Runs the calibration sweeps and returns the model.
pub fn calibrate(spec: &CalibrationSpec) -> Result<CalibratedModel, SimError> {
    if !(spec.max_dram_loss.is_finite() && spec.max_dram_loss > 0.0 && spec.max_dram_loss < 1.0) {
        return Err(SimError::Override {
            arg: format!("--max-loss {}", spec.max_dram_loss),
            message: "must be in (0, 1)".into(),
        });
    }
    let platform = load_platform(&spec.platform, &BTreeMap::new())?;
    let cores = platform.cpu.cores_per_socket.max(2);
    let max_threads = (cores - 1).min(24);
    let mut points = Vec::new();
    for rw in [Rw::Write, Rw::Read] {
        for &size in &spec.request_sizes {
            let mut scenario = probe_beside_pm(
                &format!("calibrate-{rw:?}-{size}").to_lowercase(),
                &spec.platform,
                max_threads,
                max_threads,
                rw,
                size,
            );
            scenario.duration_ms = spec.duration_ms;
            scenario.warmup_ms = spec.duration_ms / 4.0;
            // the gate engages after one 100 us window of ungated traffic, as
            // at run time: near the knee the memory system is metastable (a
            // limit that holds DRAM when applied from an empty start may not
            // pull it out of congestion), so the knee is measured from the
            // congested start
            scenario.policy_window_us = 100.0;
            // each limit with two PM thread counts; the worse one counts
            // (which of them lands in a congested state near the knee varies)
            let thread_counts = [max_threads, max_threads.saturating_sub(1).max(1)];
            scenario.sweep = vec![
                SweepSpec {
                    key: "policy".into(),
                    values: (1..=max_threads)
                        .map(|n| toml::Value::String(format!("gate:{n}")))
                        .collect(),
                },
                SweepSpec {
                    key: "job.pm.threads".into(),
                    values: thread_counts
                        .iter()
                        .map(|&n| toml::Value::Integer(i64::from(n)))
                        .collect(),
                },
            ];
            let opts = RunOptions {
                progress: spec.progress,
                jobs: spec.jobs,
                ..Default::default()
            };
            let probe = |r: &crate::runner::ScenarioResult| -> Vec<f64> {
                r.points
                    .iter()
                    .map(|p| p.metrics.get("probe.gbps").copied().unwrap_or(0.0))
                    .collect()
            };
            let mut alone_scenario = scenario.clone();
            alone_scenario.sweep.clear();
            alone_scenario.jobs[1].threads = 0;
            let alone = probe(&run_scenario(&alone_scenario, &opts, model_for)?)
                .first()
                .copied()
                .unwrap_or(0.0);
            let ratios: Vec<f64> = probe(&run_scenario(&scenario, &opts, model_for)?)
                .chunks(thread_counts.len())
                .map(|pair| pair.iter().copied().fold(f64::INFINITY, f64::min))
                .map(|v| if alone > 0.0 { v / alone } else { 0.0 })
                .collect();
            points.push(CalibrationPoint {
                write_ratio: if rw == Rw::Write { 1.0 } else { 0.0 },
                request_bytes: size,
                t_s: knee(&ratios, 1.0 - spec.max_dram_loss),
            });
        }
    }
    Ok(CalibratedModel {
        platform: spec.platform.clone(),
        max_dram_loss: spec.max_dram_loss,
        points,
    })
}

/// Models shipped for built-in platforms: exactly what
/// `memtamer calibrate --platform NAME --out FILE` writes (a test keeps them
/// current), so that demos need not spend the seconds calibration takes.
const BUILTIN_MODELS: [(&str, &str); 1] = [("pats", include_str!("../builtin/models/pats.toml"))];

/// The calibrated model of a platform by name: the shipped one for built-in
/// platforms that have one, otherwise calibrated now with the default
/// specification and kept for the rest of the process.
pub fn model_for(platform: &str) -> Result<CalibratedModel, SimError> {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<BTreeMap<String, CalibratedModel>>> = OnceLock::new();
    if let Some((_, text)) = BUILTIN_MODELS.iter().find(|(n, _)| *n == platform) {
        return parse_model(&format!("<builtin model {platform}>"), text);
    }
    let cache = CACHE.get_or_init(|| Mutex::new(BTreeMap::new()));
    // hold the lock while calibrating: concurrent sweep points wait for one run
    let mut models = cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(m) = models.get(platform) {
        return Ok(m.clone());
    }
    let model = calibrate(&CalibrationSpec {
        platform: platform.to_string(),
        ..Default::default()
    })?;
    models.insert(platform.to_string(), model.clone());
    Ok(model)
}

/// Parses model text, naming `file` in errors.
fn parse_model(file: &str, text: &str) -> Result<CalibratedModel, SimError> {
    CalibratedModel::parse(text).map_err(|e| match e.key {
        Some(key) => SimError::Invalid {
            file: file.to_string(),
            line: e.line,
            key: key.into(),
            message: e.message,
        },
        None => SimError::Parse {
            file: file.to_string(),
            line: e.line,
            column: e.column,
            message: e.message,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knee_is_the_last_count_before_the_first_drop() {
        assert_eq!(knee(&[1.0, 0.99, 0.97, 0.80, 0.99], 0.95), 3);
        assert_eq!(knee(&[0.5, 0.4], 0.95), 1);
        assert_eq!(knee(&[], 0.95), 1);
        assert_eq!(knee(&[1.0, 1.0], 0.95), 2);
    }
}

//! The string keys of a scenario point that name something only its
//! platform or the file system knows: the regions a job's workload touches
//! and a `trace` workload's trace. The engine refused them when a point
//! ran, as `NAME:0: key `job`` (exit 3) whether a `--set` or the file gave
//! the value; now they are checked before any point runs, where the other
//! names are checked (docs/bad-input.md, 2026-11-28): a command-line value
//! is a usage error naming its `--set` / `--sweep` (`crate::blame`), a
//! file's value an error at its FILE:LINE ([`file_points`]).

use crate::config::scenario::{known_platform, line_of_job_key, line_of_sweep};
use crate::config::{Platform, Scenario, WorkloadSpec, LOCAL_DRAM};
use crate::error::SimError;
use std::collections::BTreeMap;

/// What is wrong with one job's key: the job, the workload key
/// (`region`, `trace`, ...) and why.
pub struct BadKey {
    /// The job's name.
    pub job: String,
    /// The key under the job's `workload`.
    pub key: &'static str,
    /// Why the value is refused.
    pub message: String,
}

impl BadKey {
    /// The key as `--set` writes it: `job.NAME.workload.KEY`.
    pub fn path(&self) -> String {
        format!("job.{}.workload.{}", self.job, self.key)
    }
}

/// `Err` for the first job of `s` whose workload names a region `platform`
/// lacks or a trace that does not load (a built-in name or a readable,
/// valid trace file; `workload::trace::load` caches it for the run).
pub fn point_inputs(platform: &Platform, s: &Scenario) -> Result<(), BadKey> {
    for j in &s.jobs {
        for (key, name) in j.workload.regions() {
            if name != LOCAL_DRAM && !platform.regions.iter().any(|r| r.name == name) {
                let has: Vec<&str> = platform.regions.iter().map(|r| r.name.as_str()).collect();
                return Err(BadKey {
                    job: j.name.clone(),
                    key,
                    message: format!(
                        "job {}: platform {} has no region `{name}` (has: {})",
                        j.name,
                        platform.name,
                        has.join(", ")
                    ),
                });
            }
        }
        if let WorkloadSpec::Trace { trace, .. } = &j.workload {
            crate::workload::trace::load(trace).map_err(|m| BadKey {
                job: j.name.clone(),
                key: "trace",
                message: format!("job {}: {m}", j.name),
            })?;
        }
    }
    Ok(())
}

/// Whether setting `key` sets `path` (the key itself or a table above it:
/// `job.fio.workload` sets `job.fio.workload.region`).
pub fn covers(key: &str, path: &str) -> bool {
    path == key || path.starts_with(&format!("{key}."))
}

/// For a scenario read from a file (`file`, `text`): every point of its
/// own sweeps names a known platform and, on that platform, only regions
/// and traces that exist. An error is the file's (exit 3): at the line of
/// the sweep that set the value (its `key`, then the platform, then a
/// variant swept), else at the job's key. Points whose ranges or platform
/// file fail are left to the run, which names them as before. Before
/// (docs/bad-input.md, 2026-11-28): a `[[sweep]]` over an unknown platform
/// exited 2 naming no file, an unknown region exited 3 as `NAME:0: key
/// `job``.
/// `points` are the points of `s.sweep` and `load` loads a platform with
/// its overrides (`runner::sweep_points`, `runner::load_platform`).
pub fn file_points(
    file: &str,
    text: &str,
    s: &Scenario,
    points: Vec<Vec<(String, toml::Value)>>,
    load: impl Fn(&str, &BTreeMap<String, toml::Value>) -> Result<Platform, SimError>,
) -> Result<(), SimError> {
    let swept = |path: &str| {
        s.sweep
            .iter()
            .position(|sw| covers(&sw.key, path))
            .or_else(|| s.sweep.iter().position(|sw| sw.key == "platform"))
            .or_else(|| {
                s.sweep
                    .iter()
                    .position(|sw| s.variant.contains_key(&sw.key))
            })
    };
    for point in points {
        let Ok(sp) = s.with_overrides(&point) else {
            continue;
        };
        let bad = match known_platform(&sp.platform) {
            Err(message) => Some(("platform".to_string(), None, message)),
            Ok(()) => match load(&sp.platform, &sp.platform_set) {
                Ok(platform) => point_inputs(&platform, &sp)
                    .err()
                    .map(|b| (b.path(), Some((b.job, b.key)), b.message)),
                Err(_) => None,
            },
        };
        let Some((path, job_key, message)) = bad else {
            continue;
        };
        return Err(match swept(&path) {
            Some(i) => {
                let (k, v) = &point[i];
                SimError::Invalid {
                    file: file.to_string(),
                    line: line_of_sweep(text, i),
                    key: format!("sweep[{i}]"),
                    message: format!("sweep `{k}`, value {v}: {message}"),
                }
            }
            None => {
                let line = job_key.as_ref().map_or_else(
                    || crate::error::line_of_key(text, &path),
                    |(j, k)| line_of_job_key(text, j, k),
                );
                SimError::Invalid {
                    file: file.to_string(),
                    line,
                    key: path,
                    message,
                }
            }
        });
    }
    Ok(())
}

//! The scenario file: jobs on a platform, a policy, a duration, sweeps, the
//! paper's reference points, pass/fail checks and plots; its parsing,
//! overrides and validation (`docs/scenarios.md`).

use super::{apply_override, invalid, parse_toml, WorkloadSpec};
use crate::error::{line_of_key, SimError};
use memtamer_core::registry;
use memtamer_core::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A job: threads running one workload.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Unique name, used in metric paths (`NAME.gbps`) and overrides (`job.NAME.threads`).
    pub name: String,
    /// Service class.
    #[serde(default)]
    pub class: memtamer_core::JobClass,
    /// Number of threads (0 disables the job).
    pub threads: u32,
    /// Allowed CPUs in Linux list format; threads are placed round-robin over them.
    pub cpus: Option<String>,
    /// Where the threads start (round-robin), when that differs from where
    /// they may run: a placement policy then has room to move them (Ahn
    /// Table 2 "ours" starts from the separated layout). Must lie in `cpus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_cpus: Option<String>,
    /// Jobs with the same group also report summed metrics under the group's
    /// name (`GROUP.kops`, `GROUP.gbps`, `GROUP.pm_write_gbps`, ...), e.g. one
    /// group for the per-socket jobs of one task type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The workload.
    pub workload: WorkloadSpec,
}

/// A paper reference point shown beside the simulated value.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PaperPoint {
    /// Figure, e.g. "PATS Fig. 4b".
    pub figure: String,
    /// Metric path, e.g. `memcpy.gbps`.
    pub metric: String,
    /// X value of the point (the swept key's value).
    pub x: f64,
    /// Published value (in the metric's unit, or a ratio when `relative_to` is set).
    pub value: f64,
    /// If set, the value is relative to the metric at this x.
    pub relative_to: Option<f64>,
    /// Where the number comes from (quote or section).
    pub source: String,
    /// Only points whose other swept keys have these values.
    #[serde(default)]
    pub with: BTreeMap<String, toml::Value>,
    /// If set, the value is divided by the metric at `relative_to` (or the
    /// same x) on the points whose swept keys match `with` overridden by
    /// these, e.g. `{ policy = "baseline" }` for "PATS over Baseline".
    #[serde(default)]
    pub relative_with: BTreeMap<String, toml::Value>,
    /// Relative deviation |sim / paper - 1| the HTML report marks as within
    /// tolerance (default `report::DEFAULT_PAPER_TOLERANCE`); informative, the
    /// `[[check]]`s decide pass/fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance: Option<f64>,
}

/// What a check compares: a point's value, or where along the x axis the
/// curve has a feature (a peak's position, a saturation knee), because a
/// paper's claim is often "peaks at 4 threads", not a value (issue 24 item 5).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CheckKind {
    /// The metric at `at` (optionally relative); the default.
    #[default]
    Point,
    /// The x of the largest value (the first on ties).
    Argmax,
    /// The x of the smallest value (the first on ties).
    Argmin,
    /// The smallest x whose value reaches `fraction` of the largest value
    /// (where a rising curve saturates).
    Knee,
}

impl CheckKind {
    fn is_point(&self) -> bool {
        *self == CheckKind::Point
    }
}

/// A pass/fail condition on the results (the "done when" lines).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// What is checked, in words.
    pub name: String,
    /// Metric path.
    pub metric: String,
    /// What is compared (default: the point at `at`); for `argmax`, `argmin`
    /// and `knee` the bounds apply to an x value, over the points that match
    /// `with` (which must leave one point per x).
    #[serde(default, skip_serializing_if = "CheckKind::is_point")]
    pub kind: CheckKind,
    /// X value (point) to check; required for (and only for) `kind = "point"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<f64>,
    /// `knee` only: the fraction of the largest value that marks the knee
    /// (default `shape::DEFAULT_KNEE_FRACTION`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
    /// If set, the checked value is metric(at) / metric(relative_to).
    pub relative_to: Option<f64>,
    /// Inclusive lower bound.
    pub min: Option<f64>,
    /// Inclusive upper bound.
    pub max: Option<f64>,
    /// Only points whose other swept keys have these values.
    #[serde(default)]
    pub with: BTreeMap<String, toml::Value>,
    /// If set, the value is divided by the metric at `relative_to` (or the
    /// same x) on the points whose swept keys match `with` overridden by
    /// these, e.g. `{ policy = "baseline" }` for "PATS over Baseline".
    #[serde(default)]
    pub relative_with: BTreeMap<String, toml::Value>,
}

/// A plot in the report.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// Title.
    pub title: String,
    /// Metric paths on the y axis.
    pub y: Vec<String>,
    /// Y axis label.
    pub y_label: String,
    /// Normalize each series to its value at this x.
    pub normalize_at: Option<f64>,
    /// X axis label with its unit; default: from the swept key
    /// (`report::x_axis_label`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub x_label: Option<String>,
}

/// A scenario: the unit `memtamer sim run` executes.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name.
    pub name: String,
    /// Title for reports.
    pub title: String,
    /// Platform name (built-in) or path to a platform file.
    pub platform: String,
    /// Measured duration, ms of simulated time.
    pub duration_ms: f64,
    /// Warm-up before measuring, ms.
    #[serde(default = "default_warmup")]
    pub warmup_ms: f64,
    /// Seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Policy name.
    #[serde(default = "default_policy")]
    pub policy: String,
    /// Policy window, microseconds.
    #[serde(default = "default_window")]
    pub policy_window_us: f64,
    /// Jobs.
    #[serde(rename = "job")]
    pub jobs: Vec<JobSpec>,
    /// Swept keys and their values; the first is the x axis.
    #[serde(default)]
    pub sweep: Vec<SweepSpec>,
    /// Platform overrides, dotted keys (e.g. `memory.wpq_entries`).
    #[serde(default)]
    pub platform_set: BTreeMap<String, toml::Value>,
    /// Named groups of overrides, `[variant.KEY.VALUE]` tables of `--set`
    /// keys: a sweep over `KEY` (or `--set KEY=VALUE`) applies group `VALUE`,
    /// e.g. a placement that moves two jobs at once.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variant: BTreeMap<String, BTreeMap<String, BTreeMap<String, toml::Value>>>,
    /// Paper reference points.
    #[serde(default)]
    pub paper: Vec<PaperPoint>,
    /// Pass/fail checks.
    #[serde(default)]
    pub check: Vec<Check>,
    /// Plots.
    #[serde(default)]
    pub plot: Vec<PlotSpec>,
}

/// One swept key.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Dotted key, as for `--set`.
    pub key: String,
    /// Values.
    pub values: Vec<toml::Value>,
}

fn default_warmup() -> f64 {
    1.0
}
fn default_seed() -> u64 {
    1
}
fn default_policy() -> String {
    "baseline".into()
}
fn default_window() -> f64 {
    1000.0
}

impl Scenario {
    /// A scenario built in code: `jobs` on `platform` for 1 ms after 0.2 ms of
    /// warm-up, seed 1, baseline policy, no sweep; callers adjust the fields.
    pub fn with_jobs(name: &str, platform: &str, jobs: Vec<JobSpec>) -> Scenario {
        Scenario {
            name: name.into(),
            title: String::new(),
            platform: platform.into(),
            duration_ms: 1.0,
            warmup_ms: 0.2,
            seed: default_seed(),
            policy: default_policy(),
            policy_window_us: default_window(),
            jobs,
            sweep: vec![],
            platform_set: BTreeMap::new(),
            variant: BTreeMap::new(),
            paper: vec![],
            check: vec![],
            plot: vec![],
        }
    }

    /// Parses and validates a scenario file.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, SimError> {
        let s: Scenario = parse_toml(file, text)?;
        s.validate(file, text)?;
        s.check_sweeps(file, text)?;
        s.check_variants(file, text)?;
        Ok(s)
    }

    /// Checks that each `[variant.KEY.VALUE]` group applies on its own (its
    /// keys exist, its values fit them and name known things), at the
    /// group's header. Before (docs/bad-input.md, 2026-11-28): a group's
    /// `policy = "nope"` was found when a point was built, naming no file.
    fn check_variants(&self, file: &str, text: &str) -> Result<(), SimError> {
        for (key, groups) in &self.variant {
            for name in groups.keys() {
                self.takes(key, &toml::Value::String(name.clone()))
                    .map_err(|message| {
                        let header = format!("[variant.{key}.{name}]");
                        let line = text
                            .lines()
                            .position(|l| l.trim() == header)
                            .map_or_else(|| line_of_key(text, "variant"), |l| l + 1);
                        SimError::Invalid {
                            file: file.to_string(),
                            line,
                            key: format!("variant.{key}.{name}"),
                            message,
                        }
                    })?;
            }
        }
        Ok(())
    }

    /// The string-valued keys that take one of a known set of values and
    /// can be checked without a platform: `policy` (the registry's names,
    /// [`check_policy_name`]) and a job's `start_cpus`
    /// (a non-empty subset of its `cpus`). Serde checks the enum keys
    /// (`class`, `kind`, `mode`, `rw`, `pattern`, ...), `validate` a cpu
    /// job's `profile`, `load_scenario` a file's `platform`, and
    /// `runner::prepare_scenario` the keys that depend on the platform or
    /// the file system (regions, traces): docs/bad-input.md, 2026-11-28.
    /// `Err((job, key, message))`, `job` None for a top-level key.
    fn check_names(&self) -> Result<(), (Option<&str>, &'static str, String)> {
        check_policy_name(&self.policy).map_err(|e| (None, "policy", e.to_string()))?;
        for j in &self.jobs {
            let Some(c) = &j.start_cpus else { continue };
            let bad = |m: String| {
                (
                    Some(j.name.as_str()),
                    "start_cpus",
                    format!("job {}: start_cpus {c}: {m}", j.name),
                )
            };
            let start = CpuSet::parse_list(c).map_err(|e| bad(e.to_string()))?;
            let within = match j.cpus.as_deref().map(CpuSet::parse_list) {
                Some(Ok(cpus)) => start.intersect(&cpus) == start,
                // no `cpus` (the platform's CPUs: the engine checks), or a
                // bad list `validate` names
                _ => true,
            };
            if start.is_empty() || !within {
                return Err(bad("must be a non-empty subset of its cpus".into()));
            }
        }
        Ok(())
    }

    /// Checks the file's own `[[sweep]]` tables where they are written: a
    /// key, at least one value, no key swept twice, and each value one its
    /// key takes on its own (the job exists, the field exists, the type
    /// fits). Ranges are checked per point when the sweeps are expanded,
    /// as they may depend on two swept keys together. Before (hostile-input
    /// sweep, docs/bad-input.md, 2026-11-27): an empty `values` ran no
    /// point and exited 0, a key swept twice ran the later sweep's values
    /// only, and a bad key or value was reported as a command-line
    /// `override` (exit 2) naming neither the file nor the line.
    fn check_sweeps(&self, file: &str, text: &str) -> Result<(), SimError> {
        let mut seen = std::collections::BTreeSet::new();
        for (i, sw) in self.sweep.iter().enumerate() {
            let bad = |message: String| SimError::Invalid {
                file: file.to_string(),
                line: line_of_sweep(text, i),
                key: format!("sweep[{i}]"),
                message,
            };
            if sw.key.trim().is_empty() {
                return Err(bad(
                    "a sweep needs a `key` (a --set key, e.g. job.NAME.threads)".into(),
                ));
            }
            if sw.values.is_empty() {
                return Err(bad(format!(
                    "sweep `{}` has no values: the scenario would run no point",
                    sw.key
                )));
            }
            if !seen.insert(sw.key.as_str()) {
                return Err(bad(format!(
                    "`{}` is swept twice: each point would take the later sweep's value",
                    sw.key
                )));
            }
            for v in &sw.values {
                self.takes(&sw.key, v)
                    .map_err(|m| bad(format!("sweep `{}`, value {v}: {m}", sw.key)))?;
            }
        }
        Ok(())
    }

    /// Whether `key = v` applies to this scenario on its own: the key
    /// names something, the value deserializes and names a known thing
    /// ([`Scenario::check_names`]; no range checks).
    fn takes(&self, key: &str, v: &toml::Value) -> Result<(), String> {
        let mut value = toml::Value::try_from(self).map_err(|e| e.to_string())?;
        apply_override(&mut value, key, v.clone())?;
        value
            .try_into::<Scenario>()
            .map_err(|e: toml::de::Error| e.message().trim().to_string())?
            .check_names()
            .map_err(|(_, _, m)| m)
    }

    /// Applies `key=value` overrides (see docs/scenarios.md for key syntax).
    pub fn with_overrides(&self, sets: &[(String, toml::Value)]) -> Result<Scenario, SimError> {
        if sets.is_empty() {
            return Ok(self.clone());
        }
        let mut value = toml::Value::try_from(self).map_err(|e| SimError::Override {
            arg: String::new(),
            message: e.to_string(),
        })?;
        for (k, v) in sets {
            apply_override(&mut value, k, v.clone()).map_err(|m| SimError::Override {
                arg: format!("{k}={v}"),
                message: m,
            })?;
        }
        let s: Scenario = value.try_into().map_err(|e: toml::de::Error| {
            // serde names neither the key nor the range: find the override
            // that fails on its own and say what its key takes
            let culprit = sets.iter().find(|(k, v)| {
                toml::Value::try_from(self).is_ok_and(|mut one| {
                    apply_override(&mut one, k, v.clone()).is_ok()
                        && one.try_into::<Scenario>().is_err()
                })
            });
            match culprit {
                Some((k, v)) => SimError::Override {
                    arg: format!("{k}={v}"),
                    message: override_type_message(k, v, e.message().trim()),
                },
                None => SimError::Override {
                    arg: sets
                        .iter()
                        .map(|(k, v)| format!("{k}={v}"))
                        .collect::<Vec<_>>()
                        .join(" "),
                    message: e.message().trim().to_string(),
                },
            }
        })?;
        s.validate("<overrides>", "")?;
        Ok(s)
    }

    fn validate(&self, file: &str, text: &str) -> Result<(), SimError> {
        if !(self.duration_ms.is_finite() && self.duration_ms > 0.0 && self.duration_ms <= 60_000.0)
        {
            return Err(invalid(file, text, "duration_ms", "must be in (0, 60000]"));
        }
        if !(self.warmup_ms.is_finite() && self.warmup_ms >= 0.0 && self.warmup_ms <= 60_000.0) {
            return Err(invalid(file, text, "warmup_ms", "must be in [0, 60000]"));
        }
        if self.warmup_ms + self.duration_ms > 15_000.0 {
            return Err(invalid(
                file,
                text,
                "duration_ms",
                "warmup_ms + duration_ms must be <= 15000 (15 s of simulated time)",
            ));
        }
        if self.seed > i64::MAX as u64 {
            return Err(invalid(
                file,
                text,
                "seed",
                "must be <= 9223372036854775807",
            ));
        }
        if !(self.policy_window_us.is_finite() && self.policy_window_us >= 1.0) {
            return Err(invalid(file, text, "policy_window_us", "must be >= 1"));
        }
        for (key, groups) in &self.variant {
            const FIELDS: &[&str] = &[
                "name",
                "title",
                "platform",
                "duration_ms",
                "warmup_ms",
                "seed",
                "policy",
                "policy_window_us",
                "job",
                "sweep",
                "platform_set",
                "variant",
                "paper",
                "check",
                "plot",
            ];
            if key.is_empty() || key.contains('.') || FIELDS.contains(&key.as_str()) {
                return Err(invalid(
                    file,
                    text,
                    "variant",
                    format!("variant `{key}`: a variant key is a plain name that is not a scenario field"),
                ));
            }
            if groups.is_empty() {
                return Err(invalid(
                    file,
                    text,
                    "variant",
                    format!("variant `{key}` has no values"),
                ));
            }
            for (value, sets) in groups {
                if let Some(k) = sets.keys().find(|k| self.variant.contains_key(k.as_str())) {
                    return Err(invalid(
                        file,
                        text,
                        "variant",
                        format!("variant `{key}.{value}` sets variant `{k}`: variants do not nest"),
                    ));
                }
            }
        }
        for (i, c) in self.check.iter().enumerate() {
            let bad = |m: &str| SimError::Invalid {
                file: file.to_string(),
                line: line_of_check(text, i),
                key: format!("check[{i}]"),
                message: format!("check `{}`: {m}", c.name),
            };
            match c.kind {
                CheckKind::Point => {
                    if !c.at.is_some_and(f64::is_finite) {
                        return Err(bad("a point check needs a finite `at`"));
                    }
                    if c.fraction.is_some() {
                        return Err(bad("`fraction` is for kind = \"knee\" only"));
                    }
                }
                kind => {
                    if c.at.is_some() || c.relative_to.is_some() || !c.relative_with.is_empty() {
                        return Err(bad(&format!(
                            "kind = \"{}\" compares an x over all points: no `at`, `relative_to` or `relative_with`",
                            format!("{kind:?}").to_lowercase()
                        )));
                    }
                    if kind != CheckKind::Knee && c.fraction.is_some() {
                        return Err(bad("`fraction` is for kind = \"knee\" only"));
                    }
                    if c.fraction.is_some_and(|f| !(f > 0.0 && f <= 1.0)) {
                        return Err(bad("`fraction` must be in (0, 1]"));
                    }
                }
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for j in &self.jobs {
            if !names.insert(j.name.as_str()) {
                return Err(invalid(
                    file,
                    text,
                    "name",
                    format!("job name `{}` is used twice", j.name),
                ));
            }
            if let Some(g) = &j.group {
                if g.is_empty() || self.jobs.iter().any(|o| &o.name == g) {
                    return Err(invalid(
                        file,
                        text,
                        "group",
                        format!("job {}: group `{g}` is empty or a job's name", j.name),
                    ));
                }
            }
            if j.threads > 256 {
                return Err(invalid(
                    file,
                    text,
                    "threads",
                    format!("job {}: at most 256 threads", j.name),
                ));
            }
            if let Some(c) = &j.cpus {
                let set = CpuSet::parse_list(c)
                    .map_err(|e| invalid(file, text, "cpus", format!("job {}: {e}", j.name)))?;
                if set.is_empty() {
                    return Err(invalid(
                        file,
                        text,
                        "cpus",
                        format!("job {}: empty CPU list", j.name),
                    ));
                }
            }
            j.workload.validate().map_err(|(key, m)| {
                let path = format!("job.{}.workload.{key}", j.name);
                SimError::Invalid {
                    file: file.to_string(),
                    line: line_of_job_key(text, &j.name, key),
                    key: path,
                    message: format!("job {}: {m}", j.name),
                }
            })?;
        }
        self.check_names().map_err(|(job, key, message)| match job {
            None => invalid(file, text, key, message),
            Some(j) => SimError::Invalid {
                file: file.to_string(),
                line: line_of_job_key(text, j, key),
                key: format!("job.{j}.{key}"),
                message,
            },
        })
    }
}

/// Why an override's value does not fit its key: a number outside TOML's
/// integers (which `parse_value` keeps as a string) says so, and `seed`
/// gives its range; otherwise serde's message.
fn override_type_message(key: &str, v: &toml::Value, serde: &str) -> String {
    let digits = |s: &str| {
        let d = s.strip_prefix(['-', '+']).unwrap_or(s);
        !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    };
    let range = if key == "seed" {
        format!("; `{key}` takes 0..={}", i64::MAX)
    } else {
        String::new()
    };
    match v {
        toml::Value::String(s) if digits(s) => format!(
            "`{key}`: {s} is not a 64-bit integer ({}..={}){range}",
            i64::MIN,
            i64::MAX
        ),
        _ => format!("`{key}`: {serde}{range}"),
    }
}

/// The registry names the simulator runs (all but the daemon's and the
/// gate's "nobody here" names `off` and `external`).
pub const SIM_POLICIES: [&str; 10] = [
    "baseline",
    "gate",
    "pats",
    "pats-calibrated",
    "pats-adaptive",
    "dicio",
    "caladan-pm",
    "pm-counter-only",
    "core-spec",
    "placement",
];

/// `Err` unless `name` is a policy name the simulator runs, by its syntax
/// alone (the registry's parse and [`SIM_POLICIES`]): what a scenario file
/// or `--set policy=` can be refused for before any platform is loaded.
/// Before (docs/bad-input.md, 2026-11-28): a name was checked only when a
/// point was built, so `sim run demo --set policy=nope` exited 0 (each of
/// the demo's points sets its own policy) and a file's `policy = "nope"`
/// named no line.
pub fn check_policy_name(name: &str) -> Result<(), registry::RegistryError> {
    let parsed = registry::parse(name)?;
    registry::check_allowed(&parsed.parts, &SIM_POLICIES, "in the simulator")
}

/// `Err` unless `name` is a built-in platform or a file path (ends in
/// `.toml` or has a `/`, as the runner reads it; a missing file is reported
/// when it is read).
pub(crate) fn known_platform(name: &str) -> Result<(), String> {
    let builtins = crate::builtins::PLATFORMS;
    if name.ends_with(".toml") || name.contains('/') || builtins.iter().any(|(n, _)| *n == name) {
        return Ok(());
    }
    Err(format!(
        "unknown platform `{name}`; known: {}",
        builtins
            .iter()
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// The 1-based line of the `i`-th `[[check]]` header (0 when not found).
fn line_of_check(text: &str, i: usize) -> usize {
    text.lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == "[[check]]")
        .nth(i)
        .map_or(0, |(l, _)| l + 1)
}

/// The 1-based line of the `key` of the `i`-th `[[sweep]]` table (its
/// header when the key is missing), else where `sweep` is assigned, else 0.
pub(crate) fn line_of_sweep(text: &str, i: usize) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let headers: Vec<usize> = (0..lines.len())
        .filter(|&l| lines[l].trim() == "[[sweep]]")
        .collect();
    let Some(&start) = headers.get(i) else {
        return line_of_key(text, "sweep");
    };
    let key = lines[start + 1..]
        .iter()
        .take_while(|l| !l.trim_start().starts_with('['))
        .position(|l| {
            l.trim_start()
                .strip_prefix("key")
                .is_some_and(|r| r.trim_start().starts_with('='))
        });
    key.map_or(start + 1, |k| start + 2 + k)
}

/// The 1-based line where `key` is assigned inside job `job` (inline
/// `workload = { .. }` tables included), else where the job's `workload` is,
/// else 0.
pub(crate) fn line_of_job_key(text: &str, job: &str, key: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let assigns = |line: &str, k: &str| {
        line.match_indices(k).any(|(i, _)| {
            let before = line[..i].chars().next_back();
            let after = line[i + k.len()..].trim_start();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('=')
        })
    };
    // the job's block starts at its `name = "JOB"` line (or the [[job]] header before it)
    let name_line = lines.iter().position(|l| {
        let t = l.trim();
        t.strip_prefix("name")
            .map(|r| r.trim_start())
            .and_then(|r| r.strip_prefix('='))
            .is_some_and(|r| r.trim().trim_matches('"') == job)
    });
    let Some(start) = name_line else {
        return line_of_key(text, key);
    };
    let start = lines[..start]
        .iter()
        .rposition(|l| l.trim() == "[[job]]")
        .unwrap_or(start);
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.trim() == "[[job]]" || l.trim_start().starts_with("[[sweep"))
        .map_or(lines.len(), |e| start + 1 + e);
    for k in [key, "workload"] {
        if let Some(i) = (start..end).find(|&i| assigns(lines[i], k)) {
            return i + 1;
        }
    }
    0
}

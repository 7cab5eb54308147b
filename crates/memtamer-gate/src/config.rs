//! Gate configuration: which policy owns the limit, from the environment or
//! from code. Every bad value is an error naming the variable.

use std::path::{Path, PathBuf};
use std::time::Duration;

use memtamer_core::pats::{threshold, CalibratedModel, ModelInput, Pats, PatsCalibrated};
use memtamer_core::registry::{self, PolicyName};
use memtamer_core::{FixedGate, Policy};

use crate::gate::GateOptions;
use crate::shm::UNLIMITED;
use crate::GateError;

/// Who sets the limit.
#[derive(Clone, Debug, PartialEq)]
pub enum PolicySpec {
    /// PATS Eq. 1 with tolerance T_mc, from the live request mix.
    Pats {
        /// T_mc in [0, 1].
        t_mc: f64,
    },
    /// A fixed limit.
    Fixed(u32),
    /// PATS with a model measured by `memtamer calibrate`.
    Calibrated {
        /// The model file.
        path: PathBuf,
        /// Its contents.
        model: CalibratedModel,
    },
    /// Nobody in this process: the daemon or `memtamer gate set-limit` does.
    External,
}

/// The registry names the gate's collector runs (docs/policy.md "Policy
/// names"); `fixed:N` and `calibrated:FILE` are deprecated aliases.
pub const GATE_POLICIES: [&str; 4] = ["pats", "gate", "pats-calibrated", "external"];

impl PolicySpec {
    /// Parses a registry name the gate runs (`pats[:T_MC]`, `gate:N`,
    /// `pats-calibrated:FILE`, `external`); `key` names the setting in
    /// errors. Deprecated spellings parse; [`PolicySpec::parse_warn`] also
    /// returns the warning.
    pub fn parse(key: &str, value: &str) -> Result<PolicySpec, GateError> {
        Self::parse_warn(key, value).map(|(spec, _)| spec)
    }

    /// [`PolicySpec::parse`], with the deprecation warnings of the aliases used.
    pub fn parse_warn(key: &str, value: &str) -> Result<(PolicySpec, Vec<String>), GateError> {
        let bad = |expected: String| GateError::BadSetting {
            key: key.into(),
            value: value.into(),
            expected,
        };
        let parsed = registry::parse(value).map_err(|e| bad(e.to_string()))?;
        registry::check_allowed(&parsed.parts, &GATE_POLICIES, "in the gate")
            .map_err(|e| bad(e.to_string()))?;
        let warnings = parsed
            .deprecated
            .iter()
            .map(|d| format!("{key}: {d}"))
            .collect();
        let spec = match parsed.parts.as_slice() {
            [PolicyName::Pats { t_mc }] => PolicySpec::Pats { t_mc: *t_mc },
            [PolicyName::Gate(n)] => PolicySpec::Fixed(*n),
            [PolicyName::PatsCalibrated { model: Some(path) }] => {
                let model = registry::load_model(path).map_err(|source| GateError::Model {
                    key: key.into(),
                    source,
                })?;
                PolicySpec::Calibrated {
                    path: path.clone(),
                    model,
                }
            }
            [PolicyName::PatsCalibrated { model: None }] => {
                return Err(bad(
                    "pats-calibrated needs its model file here: pats-calibrated:MODEL.toml".into(),
                ))
            }
            [PolicyName::External] => PolicySpec::External,
            _ => {
                return Err(bad(format!(
                    "one policy, not a composition; valid: {}",
                    registry::describe(&GATE_POLICIES)
                )))
            }
        };
        Ok((spec, warnings))
    }

    /// The policy object the collector runs (None for `External`).
    pub fn build(&self, n_pm: u32) -> Option<Box<dyn Policy + Send>> {
        match self {
            PolicySpec::Pats { t_mc } => Some(Box::new(Pats::new(*t_mc, n_pm))),
            PolicySpec::Fixed(n) => Some(Box::new(FixedGate::new(*n))),
            PolicySpec::Calibrated { model, .. } => {
                Some(Box::new(PatsCalibrated::new(model.clone())))
            }
            PolicySpec::External => None,
        }
    }

    /// The limit to start with before the first window has any traffic:
    /// the policy's answer for the worst common mix, 4 KiB writes.
    pub fn initial_limit(&self, n_pm: u32) -> u32 {
        match self {
            PolicySpec::Pats { t_mc } => threshold(&ModelInput {
                t_mc: *t_mc,
                n_pm,
                avg_request_bytes: 4096.0,
                write_ratio: 1.0,
            }),
            PolicySpec::Fixed(n) => *n,
            PolicySpec::Calibrated { model, .. } => model.threshold(4096.0, 1.0).unwrap_or(1),
            PolicySpec::External => UNLIMITED,
        }
    }
}

/// Everything a process needs to join a gate and, if it wins the lease, run
/// its collector.
#[derive(Clone, Debug)]
pub struct GateConfig {
    /// Which gate and its creation parameters.
    pub options: GateOptions,
    /// Who sets the limit.
    pub policy: PolicySpec,
    /// PMs in the interleave set (N of PATS Eq. 3).
    pub n_pm: u32,
    /// Collector window.
    pub window: Duration,
    /// Deprecated spellings met while reading the settings, one line each:
    /// [`GateConfig::from_env`] prints them on stderr.
    pub warnings: Vec<String>,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            options: GateOptions::default(),
            policy: PolicySpec::Pats { t_mc: 0.2 },
            n_pm: 1,
            window: Duration::from_millis(10),
            warnings: Vec::new(),
        }
    }
}

/// Environment variables read by [`GateConfig::from_env`].
pub const ENV_VARS: [(&str, &str); 8] = [
    (
        "MEMTAMER_GATE",
        "gate name; processes with the same name share one limit (default: default)",
    ),
    (
        "MEMTAMER_GATE_DIR",
        "directory of the shared file (default: /dev/shm)",
    ),
    (
        "MEMTAMER_GATE_POLICY",
        "pats | pats:T_MC | gate:N | pats-calibrated:MODEL.toml | external (default: pats; fixed:N and calibrated:FILE are deprecated aliases)",
    ),
    (
        "MEMTAMER_PM_INTERLEAVE",
        "PMs in the interleave set, N of PATS Eq. 3 (default: 1)",
    ),
    (
        "MEMTAMER_GATE_BYPASS",
        "requests below this many bytes are never gated (default: 256)",
    ),
    (
        "MEMTAMER_GATE_WINDOW_MS",
        "collector window in ms, 1..=10000 (default: 10)",
    ),
    (
        "MEMTAMER_GATE_MAX_WAIT_MS",
        "longest wait for admission in ms, 1..=60000; past it a request proceeds and is counted overdue (default: 100)",
    ),
    (
        "MEMTAMER_GATE_GROUP",
        "numeric gid allowed to share the gate: a gate this process creates is mode 0660 with this group (default: none, mode 0600)",
    ),
];

impl GateConfig {
    /// Reads the `MEMTAMER_*` variables of [`ENV_VARS`].
    pub fn from_env() -> Result<GateConfig, GateError> {
        let c = Self::from_lookup(|k| std::env::var(k).ok())?;
        for w in &c.warnings {
            eprintln!("memtamer: warning: {w}");
        }
        Ok(c)
    }

    /// Like `from_env` with any variable source (for tests).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<GateConfig, GateError> {
        let mut c = GateConfig::default();
        let bad = |key: &str, value: &str, expected: &str| GateError::BadSetting {
            key: key.into(),
            value: value.into(),
            expected: expected.into(),
        };
        if let Some(name) = get("MEMTAMER_GATE") {
            if !valid_gate_name(&name) {
                return Err(bad(
                    "MEMTAMER_GATE",
                    &name,
                    "1-64 characters from A-Z a-z 0-9 _ . -, not starting with .",
                ));
            }
            c.options.name = name;
        }
        if let Some(dir) = get("MEMTAMER_GATE_DIR") {
            if !Path::new(&dir).is_dir() {
                return Err(bad("MEMTAMER_GATE_DIR", &dir, "an existing directory"));
            }
            c.options.dir = dir.into();
        }
        if let Some(v) = get("MEMTAMER_PM_INTERLEAVE") {
            c.n_pm = v
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| (1..=64).contains(n))
                .ok_or_else(|| bad("MEMTAMER_PM_INTERLEAVE", &v, "a whole number in 1..=64"))?;
        }
        if let Some(v) = get("MEMTAMER_GATE_BYPASS") {
            c.options.bypass_bytes = v
                .trim()
                .parse::<u32>()
                .ok()
                .filter(|n| *n <= 1 << 30)
                .ok_or_else(|| bad("MEMTAMER_GATE_BYPASS", &v, "bytes, a whole number <= 2^30"))?;
        }
        if let Some(v) = get("MEMTAMER_GATE_WINDOW_MS") {
            let ms = v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=10_000).contains(n))
                .ok_or_else(|| bad("MEMTAMER_GATE_WINDOW_MS", &v, "a whole number in 1..=10000"))?;
            c.window = Duration::from_millis(ms);
        }
        if let Some(v) = get("MEMTAMER_GATE_MAX_WAIT_MS") {
            let ms = v
                .trim()
                .parse::<u64>()
                .ok()
                .filter(|n| (1..=60_000).contains(n))
                .ok_or_else(|| {
                    bad(
                        "MEMTAMER_GATE_MAX_WAIT_MS",
                        &v,
                        "a whole number in 1..=60000",
                    )
                })?;
            c.options.max_wait = Duration::from_millis(ms);
        }
        if let Some(v) = get("MEMTAMER_GATE_GROUP") {
            c.options.group = Some(
                v.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|g| *g != u32::MAX)
                    .ok_or_else(|| bad("MEMTAMER_GATE_GROUP", &v, "a numeric group id"))?,
            );
        }
        if let Some(v) = get("MEMTAMER_GATE_POLICY") {
            let (policy, warnings) = PolicySpec::parse_warn("MEMTAMER_GATE_POLICY", &v)?;
            c.policy = policy;
            c.warnings = warnings;
        }
        c.options.initial_limit = c.policy.initial_limit(c.n_pm);
        Ok(c)
    }
}

/// Whether `name` can name a gate: 1-64 characters from `A-Z a-z 0-9 _ . -`,
/// not starting with `.`. The gate file is `DIR/memtamer-gate-NAME`, so a
/// `/` or a leading `.` would put it (or `gate remove`'s unlink) outside
/// DIR; the library's `MEMTAMER_GATE` and the CLI's `--name` share it.
pub fn valid_gate_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "_.-".contains(ch))
        && !name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Result<GateConfig, GateError> {
        let map: std::collections::HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        GateConfig::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn defaults_are_pats_on_one_pm() {
        let c = env(&[]).expect("defaults");
        assert_eq!(c.policy, PolicySpec::Pats { t_mc: 0.2 });
        assert_eq!(c.n_pm, 1);
        assert_eq!(c.options.bypass_bytes, 256);
        assert_eq!(c.options.initial_limit, 2); // Eq. 1 for 4 KiB writes on 1 PM
        assert!(c.options.path().ends_with("memtamer-gate-default"));
    }

    #[test]
    fn every_setting_parses() {
        let c = env(&[
            ("MEMTAMER_GATE", "db-1"),
            ("MEMTAMER_GATE_POLICY", "fixed:3"),
            ("MEMTAMER_PM_INTERLEAVE", "6"),
            ("MEMTAMER_GATE_BYPASS", "512"),
            ("MEMTAMER_GATE_WINDOW_MS", "50"),
        ])
        .expect("valid");
        assert_eq!(c.options.name, "db-1");
        assert_eq!(c.policy, PolicySpec::Fixed(3));
        assert_eq!(c.options.initial_limit, 3);
        assert_eq!(
            c.warnings,
            vec!["MEMTAMER_GATE_POLICY: policy name `fixed` is deprecated, write `gate`"]
        );
        assert_eq!(c.n_pm, 6);
        assert_eq!(c.window, Duration::from_millis(50));
        let c = env(&[("MEMTAMER_GATE_POLICY", "gate:3")]).expect("valid");
        assert_eq!(c.policy, PolicySpec::Fixed(3));
        assert!(c.warnings.is_empty());
        let c = env(&[("MEMTAMER_GATE_POLICY", "pats:0.5")]).expect("valid");
        assert_eq!(c.options.initial_limit, 4); // PATS §III-C example
        let c = env(&[("MEMTAMER_GATE_POLICY", "external")]).expect("valid");
        assert_eq!(c.options.initial_limit, UNLIMITED);
        assert!(c.policy.build(1).is_none());
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (k, v) in [
            ("MEMTAMER_GATE", "../etc"),
            ("MEMTAMER_GATE", ""),
            ("MEMTAMER_GATE_POLICY", "fixed:0"),
            ("MEMTAMER_GATE_POLICY", "pats:2"),
            ("MEMTAMER_GATE_POLICY", "magic"),
            ("MEMTAMER_GATE_POLICY", "calibrated:/nonexistent/model.toml"),
            ("MEMTAMER_GATE_POLICY", "pats-calibrated"),
            ("MEMTAMER_GATE_POLICY", "dicio"),
            ("MEMTAMER_GATE_POLICY", "pats+core-spec"),
            ("MEMTAMER_GATE_POLICY", "gate:4294967295"),
            ("MEMTAMER_PM_INTERLEAVE", "0"),
            ("MEMTAMER_GATE_BYPASS", "-1"),
            // 2^32-1 would silently disable gating (issue 22 item 7)
            ("MEMTAMER_GATE_BYPASS", "4294967295"),
            ("MEMTAMER_GATE_WINDOW_MS", "0"),
            ("MEMTAMER_GATE_DIR", "/nonexistent"),
        ] {
            let err = env(&[(k, v)]).expect_err(v).to_string();
            assert!(err.contains(k), "{err}");
        }
    }

    #[test]
    fn calibrated_models_load_and_bad_ones_say_where() {
        let dir = std::env::temp_dir().join(format!("mt-gate-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let good = dir.join("good.toml");
        std::fs::write(
            &good,
            "platform = \"x\"\nmax_dram_loss = 0.05\n[[points]]\nwrite_ratio = 1.0\nrequest_bytes = 4096\nt_s = 3\n",
        )
        .expect("write");
        let spec = PolicySpec::parse("K", &format!("calibrated:{}", good.display())).expect("ok");
        assert_eq!(spec.initial_limit(1), 3);
        let canonical = format!("pats-calibrated:{}", good.display());
        assert_eq!(PolicySpec::parse("K", &canonical).expect("ok"), spec);
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "platform = \"x\"\nmax_dram_loss = \"high\"\n").expect("write");
        let err = PolicySpec::parse("K", &format!("calibrated:{}", bad.display()))
            .expect_err("bad")
            .to_string();
        assert!(
            err.contains("bad.toml:2") && err.starts_with("K: "),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

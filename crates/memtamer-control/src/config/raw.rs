//! The config as deserialized by serde, before validation: every section
//! denies unknown keys; defaults come from the validated types.

use super::types::*;
use memtamer_core::isolation::IsolationParams;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer};
use std::fmt;
use std::path::PathBuf;

// ---------------------------------------------------------------------------
// Raw (deserialized) structs

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub(super) daemon: RawDaemon,
    #[serde(default)]
    pub(super) isolation: RawIsolation,
    #[serde(default)]
    pub(super) core_spec: RawCoreSpec,
    #[serde(default)]
    pub(super) placement: RawPlacement,
    #[serde(default)]
    pub(super) gate: Option<RawGate>,
    #[serde(default)]
    pub(super) job: Vec<RawJob>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGate {
    pub(super) name: String,
    pub(super) dir: Option<String>,
    pub(super) policy: Option<String>,
    pub(super) pm_interleave: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawDaemon {
    pub(super) period_us: u64,
    pub(super) media_period_ms: u64,
    pub(super) rescan_ms: u64,
    pub(super) watchdog_ms: u64,
    pub(super) socket: PathBuf,
    pub(super) journal: PathBuf,
    pub(super) dry_run: bool,
}

impl Default for RawDaemon {
    fn default() -> Self {
        RawDaemon {
            period_us: DEFAULT_PERIOD_US,
            media_period_ms: DEFAULT_MEDIA_PERIOD_MS,
            rescan_ms: DEFAULT_RESCAN_MS,
            watchdog_ms: DEFAULT_WATCHDOG_MS,
            socket: PathBuf::from(DEFAULT_SOCKET),
            journal: PathBuf::from(DEFAULT_JOURNAL),
            dry_run: false,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawIsolation {
    pub(super) policy: String,
    pub(super) media_write_gbps: f64,
    pub(super) media_read_gbps: f64,
    pub(super) dram_gbps: Vec<f64>,
    pub(super) wpq_delay_cycles: f64,
    pub(super) predict_factor: f64,
    pub(super) request_write_gbps: Option<f64>,
    pub(super) duty_period_us: u64,
    pub(super) be_cpus: String,
    pub(super) actuator: String,
}

impl Default for RawIsolation {
    fn default() -> Self {
        let p = IsolationParams::default();
        RawIsolation {
            policy: "dicio".into(),
            media_write_gbps: p.media_write_gbps,
            media_read_gbps: p.media_read_gbps,
            dram_gbps: p.dram_gbps.to_vec(),
            wpq_delay_cycles: p.wpq_delay_cycles,
            predict_factor: p.predict_factor,
            request_write_gbps: None,
            duty_period_us: DEFAULT_DUTY_PERIOD_US,
            be_cpus: "all".into(),
            actuator: "affinity".into(),
        }
    }
}

/// `pm_cpus` as written: an integer count or a CPU list string.
pub(super) enum RawPmCpus {
    Count(i64),
    List(String),
}

impl<'de> Deserialize<'de> for RawPmCpus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = RawPmCpus;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a CPU count (integer) or a CPU list string such as \"0-1\"")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawPmCpus, E> {
                Ok(RawPmCpus::Count(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawPmCpus, E> {
                Ok(RawPmCpus::Count(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RawPmCpus, E> {
                Ok(RawPmCpus::List(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawCoreSpec {
    pub(super) enabled: bool,
    pub(super) pm_cpus: RawPmCpus,
    pub(super) pm_expiry_ms: u64,
    pub(super) general_expiry_ms: u64,
}

impl Default for RawCoreSpec {
    fn default() -> Self {
        RawCoreSpec {
            enabled: false,
            pm_cpus: RawPmCpus::Count(DEFAULT_PM_CPUS as i64),
            pm_expiry_ms: DEFAULT_PM_EXPIRY_MS,
            general_expiry_ms: DEFAULT_GENERAL_EXPIRY_MS,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawPlacement {
    pub(super) enabled: bool,
    pub(super) period_ms: u64,
    pub(super) min_residency_ms: u64,
    pub(super) max_moves: u64,
    pub(super) numa_imbalance_pct: f64,
    pub(super) llc_imbalance_pct: f64,
    pub(super) smt_imbalance_pct: f64,
    pub(super) min_delta_cut_pct: f64,
    pub(super) pm_task_min_load: f64,
    pub(super) clock_ghz: f64,
}

impl Default for RawPlacement {
    fn default() -> Self {
        let d = PlacementConfig::default();
        RawPlacement {
            enabled: d.enabled,
            period_ms: d.period_ms,
            min_residency_ms: d.min_residency_ms,
            max_moves: d.max_moves,
            numa_imbalance_pct: d.numa_imbalance_pct,
            llc_imbalance_pct: d.llc_imbalance_pct,
            smt_imbalance_pct: d.smt_imbalance_pct,
            min_delta_cut_pct: d.min_delta_cut_pct,
            pm_task_min_load: d.pm_task_min_load,
            clock_ghz: d.clock_ghz,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawJob {
    pub(super) name: String,
    pub(super) class: String,
    #[serde(default)]
    pub(super) cpus: Option<String>,
    #[serde(rename = "match")]
    pub(super) matcher: RawMatch,
    #[serde(default)]
    pub(super) require: Option<RawRequire>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRequire {
    pub(super) uid: Option<Vec<i64>>,
    pub(super) cgroup: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMatch {
    pub(super) cgroup: Option<String>,
    pub(super) unit: Option<String>,
    pub(super) comm: Option<String>,
    pub(super) exe: Option<String>,
    pub(super) pid: Option<Vec<i64>>,
    pub(super) pod: Option<String>,
    pub(super) namespace: Option<String>,
    pub(super) labels: Option<std::collections::BTreeMap<String, String>>,
}

//! The daemon's TOML configuration (`memtamer run --config FILE`).
//!
//! Parsing happens in three steps, each of which reports errors as
//! `FILE:LINE:COLUMN: KEY.PATH: why`:
//!
//! 1. the text is read into a span-carrying tree ([`KeyPath`] → byte range),
//!    which only fails on TOML syntax errors;
//! 2. it is deserialized with serde into raw structs that deny unknown keys
//!    at every level (type errors and unknown keys are located through the
//!    tree);
//! 3. values are validated and converted into [`DaemonConfig`]; each check
//!    names the [`KeyPath`] it concerns and the tree gives its location.
//!
//! Every default is listed in the doc comments of the fields below and in
//! the `DEFAULT_*` constants.

use crate::select::{Selector, SelectorError};
use memtamer_core::isolation::IsolationParams;
use memtamer_core::registry::{self, PolicyName, RegistryError};
use memtamer_core::{CpuSet, JobClass};
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Default `daemon.period_us`: the fast loop (WPQ and request-level checks)
/// runs every millisecond, as in Dicio.
pub const DEFAULT_PERIOD_US: u64 = 1000;
/// Smallest accepted `daemon.period_us`; below this the loop's own overhead
/// and timer slack dominate.
pub const MIN_PERIOD_US: u64 = 10;
/// Default `daemon.media_period_ms`: PM media counters take ~4.5 ms to read
/// through ACPI (Dicio polls them about that often from a dedicated thread);
/// through the `ipmctl` program each reading also spawns a process, so the
/// default is 50 ms.
pub const DEFAULT_MEDIA_PERIOD_MS: u64 = 50;
/// Default `daemon.rescan_ms`: how often /proc is rescanned for processes
/// that appeared, exited, exec'd or created threads.
pub const DEFAULT_RESCAN_MS: u64 = 250;
/// Default `daemon.socket`: the control socket of `memtamer ctl`.
pub const DEFAULT_SOCKET: &str = "/run/memtamer/control.sock";
/// Default `daemon.journal`: where the restore journal lives (under /run so
/// it does not survive a reboot, which also resets what it restores).
pub const DEFAULT_JOURNAL: &str = "/run/memtamer/journal";
/// Default `isolation.duty_period_us` for duty-cycling a single-thread BE job.
pub const DEFAULT_DUTY_PERIOD_US: u64 = 1000;
/// Default `core_spec.pm_cpus`: a PM core group of two CPUs.
pub const DEFAULT_PM_CPUS: usize = 2;
/// Default `core_spec.pm_expiry_ms`: how long a thread stays PM-classified.
pub const DEFAULT_PM_EXPIRY_MS: u64 = 200;
/// Default `core_spec.general_expiry_ms`: how long a thread stays
/// general-classified.
pub const DEFAULT_GENERAL_EXPIRY_MS: u64 = 60_000;

// ---------------------------------------------------------------------------
// Errors

/// Which stage rejected the config; lets callers and tests tell a typo in the
/// TOML from a wrong value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// Not valid TOML.
    Syntax,
    /// Valid TOML but wrong shape: unknown key, missing key, wrong type.
    Schema,
    /// Right shape, unacceptable value.
    Value,
}

/// Why a config could not be loaded. Every error about the content names the
/// file, line, column and dotted key path so the operator can jump to it.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: cannot read config: {source}")]
    Read {
        /// The path as given.
        file: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The content is wrong.
    #[error("{file}:{line}:{column}: {key}: {message}")]
    Invalid {
        /// File name as given to [`DaemonConfig::parse`].
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, in characters.
        column: usize,
        /// Dotted key path, e.g. `job[1].class`.
        key: String,
        /// What is wrong.
        message: String,
        /// Which stage found it.
        kind: ErrorKind,
    },
}

impl ConfigError {
    /// The dotted key path of a content error (`None` for read errors).
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } => Some(key),
            ConfigError::Read { .. } => None,
        }
    }
    /// `(line, column)` of a content error.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            ConfigError::Invalid { line, column, .. } => Some((*line, *column)),
            ConfigError::Read { .. } => None,
        }
    }
    /// The stage that rejected a content error.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            ConfigError::Invalid { kind, .. } => Some(*kind),
            ConfigError::Read { .. } => None,
        }
    }
}

/// One step of a [`KeyPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Segment {
    /// A table key.
    Key(String),
    /// An array index.
    Index(usize),
}

/// A dotted key path such as `job[1].match.comm`, used both to name the key
/// in an error and to find its position in the text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPath(pub Vec<Segment>);

impl KeyPath {
    /// This path extended by a key.
    pub fn key(&self, k: &str) -> KeyPath {
        let mut p = self.clone();
        p.0.push(Segment::Key(k.to_string()));
        p
    }
    /// This path extended by an array index.
    pub fn index(&self, i: usize) -> KeyPath {
        let mut p = self.clone();
        p.0.push(Segment::Index(i));
        p
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("(top level)");
        }
        for (i, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if i == 0 => f.write_str(k)?,
                Segment::Key(k) => write!(f, ".{k}")?,
                Segment::Index(n) => write!(f, "[{n}]")?,
            }
        }
        Ok(())
    }
}

fn root() -> KeyPath {
    KeyPath::default()
}

// ---------------------------------------------------------------------------
// Public, validated configuration

/// The isolation policy the daemon runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IsolationPolicy {
    /// Dicio: media-, WPQ- and DRAM-aware LC/BE isolation.
    Dicio,
    /// Caladan extended to PM: throttle on request-level PM write bandwidth.
    CaladanPm,
    /// Throttle on PM media counters only (ablation baseline).
    PmCounterOnly,
    /// Observe only; never throttle.
    Off,
}

impl IsolationPolicy {
    /// Every policy with its config spelling, in documentation order.
    pub const ALL: [(&'static str, IsolationPolicy); 4] = [
        ("dicio", IsolationPolicy::Dicio),
        ("caladan-pm", IsolationPolicy::CaladanPm),
        ("pm-counter-only", IsolationPolicy::PmCounterOnly),
        ("off", IsolationPolicy::Off),
    ];
    /// The config spelling.
    pub fn name(self) -> &'static str {
        IsolationPolicy::ALL
            .iter()
            .find(|(_, p)| *p == self)
            .map_or("off", |(n, _)| *n)
    }
}

/// A CPU set that may be "every CPU", resolved against the online CPUs at run
/// time because the config must stay valid across machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CpuChoice {
    /// All online CPUs.
    All,
    /// Exactly these CPUs (intersected with the online ones).
    List(CpuSet),
}

/// Size or exact membership of the PM core group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmCpus {
    /// This many CPUs, chosen by the daemon.
    Count(usize),
    /// Exactly these CPUs.
    List(CpuSet),
}

/// `[daemon]`: loop timing and the daemon's files.
#[derive(Debug, Clone, PartialEq)]
pub struct DaemonSection {
    /// `period_us`, default 1000: period of the main loop (WPQ and
    /// request-level checks), microseconds, at least 10.
    pub period_us: u64,
    /// `media_period_ms`, default 50: period of the slow path reading PM media
    /// counters (ipmctl/ACPI take ~4.5 ms), milliseconds, at least 1.
    pub media_period_ms: u64,
    /// `rescan_ms`, default 250: period of the /proc rescan that finds new,
    /// exited and exec'd processes and new threads, milliseconds, at least 10.
    pub rescan_ms: u64,
    /// `socket`, default `/run/memtamer/control.sock`: control socket path.
    pub socket: PathBuf,
    /// `journal`, default `/run/memtamer/journal`: restore journal path.
    pub journal: PathBuf,
    /// `dry_run`, default false: decide and log but do not act.
    pub dry_run: bool,
}

/// The registry names `[isolation] policy` accepts.
pub const ISOLATION_POLICIES: [&str; 4] = ["dicio", "caladan-pm", "pm-counter-only", "off"];

/// `[isolation]`: Dicio's LC/BE isolation thresholds.
#[derive(Debug, Clone, PartialEq)]
pub struct IsolationConfig {
    /// `policy`, default `"dicio"`: a registry name (docs/policy.md
    /// "Policy names") among [`ISOLATION_POLICIES`].
    pub policy: IsolationPolicy,
    /// The thresholds, one TOML key per field of
    /// `memtamer_core::isolation::IsolationParams` (defaults and range
    /// checks are declared there, once): `media_write_gbps` (T_mediawrite,
    /// GB/s), `media_read_gbps` (T_mediaread), `dram_gbps` (three values,
    /// non-increasing: DRAM thresholds when PM media use is below 0.4, below
    /// 0.8 and at least 0.8 of T_media), `wpq_delay_cycles` (T_WPQ),
    /// `predict_factor`, `request_write_gbps` (the caladan-pm threshold;
    /// also `policy = "caladan-pm:PM_GBPS[:DRAM_GBPS]"`).
    pub params: IsolationParams,
    /// `duty_period_us`, default 1000: duty-cycle period for throttling a
    /// single-thread BE job, microseconds, at least 10.
    pub duty_period_us: u64,
    /// `be_cpus`, default `"all"`: CPUs BE jobs may ever get, `"all"` or a
    /// CPU list; LC jobs' `cpus` are always excluded.
    pub be_cpus: CpuChoice,
    /// `actuator`, default `"affinity"`: how BE budgets are applied.
    pub actuator: Actuator,
}

/// How the daemon applies a BE job's budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Actuator {
    /// Per-thread affinity and SIGSTOP/SIGCONT duty cycles: works without
    /// cgroups and without moving processes.
    Affinity,
    /// A cgroup per BE job (v2, or the v1 cpuset/cpu/freezer hierarchies):
    /// cpuset for the cores, CFS quota (`cpu.max`) for the duty cycle, the
    /// freezer for a stopped job; also covers children forked between rescans.
    Cgroup,
}

/// `[core_spec]`: core specialization (PM core group).
#[derive(Debug, Clone, PartialEq)]
pub struct CoreSpecConfig {
    /// `enabled`, default false.
    pub enabled: bool,
    /// `pm_cpus`, default 2: size of the PM core group as a count (>= 1) or
    /// an explicit CPU list string such as `"0-1"`.
    pub pm_cpus: PmCpus,
    /// `pm_expiry_ms`, default 200: how long a thread stays PM-classified, > 0.
    pub pm_expiry_ms: u64,
    /// `general_expiry_ms`, default 60000: how long a thread stays
    /// general-classified, > 0.
    pub general_expiry_ms: u64,
}

/// `[placement]`: PM I/O-aware thread placement (Ahn et al. §3.3,
/// docs/placement.md). Defaults are the paper's where it gives one.
#[derive(Debug, Clone, PartialEq)]
pub struct PlacementConfig {
    /// `enabled`, default false.
    pub enabled: bool,
    /// `period_ms`, default 100: how often threads are re-placed (loads are
    /// smoothed every loop period), >= 1.
    pub period_ms: u64,
    /// `min_residency_ms`, default 1000: a moved thread stays put at least
    /// this long (no ping-pong), >= 0.
    pub min_residency_ms: u64,
    /// `max_moves`, default 16: thread moves per run, >= 2 (a swap is two).
    pub max_moves: u64,
    /// `numa_imbalance_pct`, default 17 (Linux imbalance_pct 117).
    pub numa_imbalance_pct: f64,
    /// `llc_imbalance_pct`, default 17.
    pub llc_imbalance_pct: f64,
    /// `smt_imbalance_pct`, default 10 (Linux imbalance_pct 110).
    pub smt_imbalance_pct: f64,
    /// `min_delta_cut_pct`, default 10: a move must cut the PM-load gap by
    /// more than this.
    pub min_delta_cut_pct: f64,
    /// `pm_task_min_load`, default 1.0 (Eq. 1 units): below it a thread is
    /// CPU-bound for SMT pairing.
    pub pm_task_min_load: f64,
    /// `clock_ghz`, default 2.3: turns a window into cycles for Eq. 1.
    pub clock_ghz: f64,
}

impl Default for PlacementConfig {
    fn default() -> Self {
        PlacementConfig {
            enabled: false,
            period_ms: 100,
            min_residency_ms: 1000,
            max_moves: 16,
            numa_imbalance_pct: 17.0,
            llc_imbalance_pct: 17.0,
            smt_imbalance_pct: 10.0,
            min_delta_cut_pct: 10.0,
            pm_task_min_load: 1.0,
            clock_ghz: 2.3,
        }
    }
}

impl PlacementConfig {
    /// The pure policy's parameters.
    pub fn params(&self) -> memtamer_core::placement::PlacementParams {
        memtamer_core::placement::PlacementParams {
            numa_imbalance: self.numa_imbalance_pct / 100.0,
            llc_imbalance: self.llc_imbalance_pct / 100.0,
            smt_imbalance: self.smt_imbalance_pct / 100.0,
            min_delta_cut: self.min_delta_cut_pct / 100.0,
            pm_task_min_load: self.pm_task_min_load,
            period_ns: self.period_ms.saturating_mul(1_000_000),
            min_residency_ns: self.min_residency_ms.saturating_mul(1_000_000),
            max_moves_per_run: self.max_moves as usize,
            cycles_per_ns: self.clock_ghz,
            ..Default::default()
        }
    }
}

/// `[job.match]`: which processes form a job. A process matches if ANY given
/// selector matches; at least one is required.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobMatch {
    /// `cgroup`: glob on the process's cgroup path (v2 path, else v1
    /// `name=systemd`, else v1 `cpuset`).
    pub cgroup: Option<String>,
    /// `unit`: glob on the systemd unit, i.e. the cgroup path's last
    /// `*.service`/`*.scope` component, suffix included.
    pub unit: Option<String>,
    /// `comm`: glob on `/proc/PID/comm`.
    pub comm: Option<String>,
    /// `exe`: glob on the `/proc/PID/exe` link target.
    pub exe: Option<String>,
    /// `pid`: exact pids (each > 0); an empty list selects nothing.
    pub pid: Vec<i32>,
}

/// `[[job]]`: a group of processes managed as one.
#[derive(Debug, Clone, PartialEq)]
pub struct JobConfig {
    /// `name` (required): unique, non-empty, of `[A-Za-z0-9_.-]`.
    pub name: String,
    /// `class` (required): `lc`, `be` or `unmanaged`.
    pub class: JobClass,
    /// `cpus` (optional): for LC jobs the reserved cores (disjoint across LC
    /// jobs), for BE jobs the allowed cores (disjoint from LC cores); not
    /// allowed on unmanaged jobs.
    pub cpus: Option<CpuSet>,
    /// `match` (required): the selectors as written.
    pub matcher: JobMatch,
    /// The compiled selectors.
    pub selector: Selector,
}

/// `[gate]`: the shared PATS gate whose limit the daemon owns (optional;
/// without it a decision's `gate_limit` has no owner in the daemon and is
/// counted as ignored). Validated by the gate library's own rules
/// (`memtamer_gate::GateConfig`), so a name the gate refuses is refused here.
#[derive(Debug, Clone, PartialEq)]
pub struct GateSection {
    /// `name`, required: the gate's name, as `MEMTAMER_GATE` of the
    /// processes that share it.
    pub name: String,
    /// `dir`, default `/dev/shm`: directory of the shared file.
    pub dir: PathBuf,
    /// `policy`, default `"pats"`: who sets T_S, a registry name among
    /// `memtamer_gate::GATE_POLICIES` (`pats[:T_MC]`, `gate:N`,
    /// `pats-calibrated:FILE`, `external`: the daemon writes no limit).
    pub policy: memtamer_gate::PolicySpec,
    /// `pm_interleave`, default 1: PMs in the interleave set (N of PATS Eq. 3).
    pub pm_interleave: u32,
}

impl GateSection {
    /// How to open (or create) the gate.
    pub fn options(&self) -> memtamer_gate::GateOptions {
        memtamer_gate::GateOptions {
            name: self.name.clone(),
            dir: self.dir.clone(),
            initial_limit: self.policy.initial_limit(self.pm_interleave),
            ..memtamer_gate::GateOptions::default()
        }
    }
}

/// The whole daemon configuration, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct DaemonConfig {
    /// `[daemon]`.
    pub daemon: DaemonSection,
    /// `[isolation]`.
    pub isolation: IsolationConfig,
    /// `[core_spec]`.
    pub core_spec: CoreSpecConfig,
    /// `[placement]`.
    pub placement: PlacementConfig,
    /// `[gate]`, if present.
    pub gate: Option<GateSection>,
    /// `[[job]]`, in config order (first match wins).
    pub jobs: Vec<JobConfig>,
    /// Deprecated spellings met (e.g. `gate.policy = "fixed:2"`), one line
    /// each: the daemon prints them at start.
    pub warnings: Vec<String>,
}

impl DaemonConfig {
    /// Reads and parses the file at `path`; errors name it as given.
    pub fn load(path: impl AsRef<Path>) -> Result<DaemonConfig, ConfigError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            file: file.clone(),
            source,
        })?;
        DaemonConfig::parse(&text, &file)
    }

    /// Parses and validates config text; `file_name` is only used in errors.
    pub fn parse(text: &str, file_name: &str) -> Result<DaemonConfig, ConfigError> {
        let ctx = Ctx { text, file_name };
        let tree = match toml::from_str::<Node>(text) {
            Ok(t) => t.filled(),
            Err(e) => {
                let pos = e.span().map_or(0, |s| s.start);
                let key = textual_path(text, pos);
                return Err(ctx.error_at(pos, key, clean_message(e.message()), ErrorKind::Syntax));
            }
        };
        let locs = tree.flatten();
        let raw = toml::from_str::<RawConfig>(text).map_err(|e| {
            let message = clean_message(e.message());
            let (pos, mut path) = match e.span() {
                Some(span) => (span.start, locate(&locs, &span)),
                None => (0, root()),
            };
            if let Some(missing) = quoted_after(&message, "missing field") {
                path = path.key(&missing);
            }
            ctx.error_at(pos, path.to_string(), message, ErrorKind::Schema)
        })?;
        validate(raw).map_err(|(path, message)| {
            let pos = position_of(&locs, &path);
            ctx.error_at(pos, path.to_string(), message, ErrorKind::Value)
        })
    }

    /// The CPUs BE jobs may use on a machine with `online` CPUs: `be_cpus`
    /// (or all online CPUs) minus every LC job's reserved CPUs.
    pub fn be_cpu_pool(&self, online: &CpuSet) -> CpuSet {
        let mut pool = match self.isolation.be_cpus {
            CpuChoice::All => *online,
            CpuChoice::List(l) => l.intersect(online),
        };
        for j in self.jobs.iter().filter(|j| j.class == JobClass::Lc) {
            for c in j.cpus.iter().flat_map(|s| s.iter()) {
                pool.remove(c);
            }
        }
        pool
    }

    /// The compiled selectors in job order, as [`crate::select::classify`] takes them.
    pub fn selectors(&self) -> Vec<Selector> {
        self.jobs.iter().map(|j| j.selector.clone()).collect()
    }
}

struct Ctx<'a> {
    text: &'a str,
    file_name: &'a str,
}

impl Ctx<'_> {
    fn error_at(&self, pos: usize, key: String, message: String, kind: ErrorKind) -> ConfigError {
        let (line, column) = line_col(self.text, pos);
        ConfigError::Invalid {
            file: self.file_name.to_string(),
            line,
            column,
            key,
            message,
            kind,
        }
    }
}

/// 1-based line and character column of byte offset `pos` (clamped).
fn line_col(text: &str, pos: usize) -> (usize, usize) {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    let before = &text[..pos];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

fn clean_message(m: &str) -> String {
    let m = m.trim();
    if m.is_empty() {
        // toml gives no message for some inputs, e.g. `key = ` at the end.
        "invalid or incomplete TOML".to_string()
    } else {
        m.replace('\n', "; ")
    }
}

/// The first backquoted word after `prefix` in a serde message, e.g.
/// ``missing field `name` `` → `name`.
fn quoted_after(message: &str, prefix: &str) -> Option<String> {
    let rest = message.strip_prefix(prefix)?.trim_start();
    let rest = rest.strip_prefix('`')?;
    rest.find('`').map(|end| rest[..end].to_string())
}

// ---------------------------------------------------------------------------
// Raw (deserialized) structs

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    daemon: RawDaemon,
    #[serde(default)]
    isolation: RawIsolation,
    #[serde(default)]
    core_spec: RawCoreSpec,
    #[serde(default)]
    placement: RawPlacement,
    #[serde(default)]
    gate: Option<RawGate>,
    #[serde(default)]
    job: Vec<RawJob>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGate {
    name: String,
    dir: Option<String>,
    policy: Option<String>,
    pm_interleave: Option<i64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawDaemon {
    period_us: u64,
    media_period_ms: u64,
    rescan_ms: u64,
    socket: PathBuf,
    journal: PathBuf,
    dry_run: bool,
}

impl Default for RawDaemon {
    fn default() -> Self {
        RawDaemon {
            period_us: DEFAULT_PERIOD_US,
            media_period_ms: DEFAULT_MEDIA_PERIOD_MS,
            rescan_ms: DEFAULT_RESCAN_MS,
            socket: PathBuf::from(DEFAULT_SOCKET),
            journal: PathBuf::from(DEFAULT_JOURNAL),
            dry_run: false,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, default)]
struct RawIsolation {
    policy: String,
    media_write_gbps: f64,
    media_read_gbps: f64,
    dram_gbps: Vec<f64>,
    wpq_delay_cycles: f64,
    predict_factor: f64,
    request_write_gbps: Option<f64>,
    duty_period_us: u64,
    be_cpus: String,
    actuator: String,
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
enum RawPmCpus {
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
struct RawCoreSpec {
    enabled: bool,
    pm_cpus: RawPmCpus,
    pm_expiry_ms: u64,
    general_expiry_ms: u64,
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
struct RawPlacement {
    enabled: bool,
    period_ms: u64,
    min_residency_ms: u64,
    max_moves: u64,
    numa_imbalance_pct: f64,
    llc_imbalance_pct: f64,
    smt_imbalance_pct: f64,
    min_delta_cut_pct: f64,
    pm_task_min_load: f64,
    clock_ghz: f64,
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
struct RawJob {
    name: String,
    class: String,
    #[serde(default)]
    cpus: Option<String>,
    #[serde(rename = "match")]
    matcher: RawMatch,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    cgroup: Option<String>,
    unit: Option<String>,
    comm: Option<String>,
    exe: Option<String>,
    pid: Option<Vec<i64>>,
}

// ---------------------------------------------------------------------------
// Validation

type Invalid = (KeyPath, String);

fn positive(path: KeyPath, v: f64) -> Result<f64, Invalid> {
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err((path, format!("must be a finite number > 0, got {v}")))
    }
}

fn at_least(path: KeyPath, v: u64, min: u64) -> Result<u64, Invalid> {
    if v >= min {
        Ok(v)
    } else {
        Err((path, format!("must be at least {min}, got {v}")))
    }
}

fn cpu_list(path: KeyPath, s: &str) -> Result<CpuSet, Invalid> {
    match CpuSet::parse_list(s) {
        Ok(set) if set.is_empty() => Err((path, format!("empty CPU list {s:?}"))),
        Ok(set) => Ok(set),
        Err(e) => Err((path, format!("bad CPU list {s:?}: {e}"))),
    }
}

fn non_empty_path(path: KeyPath, p: PathBuf) -> Result<PathBuf, Invalid> {
    if p.as_os_str().is_empty() {
        Err((path, "must not be empty".into()))
    } else {
        Ok(p)
    }
}

/// caladan-pm's registry arguments: PM and DRAM thresholds, GB/s.
type CaladanArgs = (Option<f64>, Option<f64>);

/// `[isolation] policy` through the registry: the policy, and the
/// caladan-pm arguments (PM and DRAM thresholds, GB/s) if written.
fn isolation_policy(i: &KeyPath, text: &str) -> Result<(IsolationPolicy, CaladanArgs), Invalid> {
    let at = || i.key("policy");
    let parsed = registry::parse(text).map_err(|e| match e {
        RegistryError::Unknown { name, .. } => (
            at(),
            format!(
                "unknown policy {name:?}, expected one of {}",
                registry::describe(&ISOLATION_POLICIES)
            ),
        ),
        e => (at(), e.to_string()),
    })?;
    registry::check_allowed(&parsed.parts, &ISOLATION_POLICIES, "in [isolation]")
        .map_err(|e| (at(), e.to_string()))?;
    match parsed.parts.as_slice() {
        [PolicyName::Dicio] => Ok((IsolationPolicy::Dicio, (None, None))),
        [PolicyName::CaladanPm { pm_gbps, dram_gbps }] => {
            Ok((IsolationPolicy::CaladanPm, (*pm_gbps, *dram_gbps)))
        }
        [PolicyName::PmCounterOnly] => Ok((IsolationPolicy::PmCounterOnly, (None, None))),
        [PolicyName::Off] => Ok((IsolationPolicy::Off, (None, None))),
        _ => Err((
            at(),
            format!(
                "one isolation policy, not a composition; expected one of {} (core_spec and placement have their own sections)",
                registry::describe(&ISOLATION_POLICIES)
            ),
        )),
    }
}

fn validate(raw: RawConfig) -> Result<DaemonConfig, Invalid> {
    let d = root().key("daemon");
    let daemon = DaemonSection {
        period_us: at_least(d.key("period_us"), raw.daemon.period_us, MIN_PERIOD_US)?,
        media_period_ms: at_least(d.key("media_period_ms"), raw.daemon.media_period_ms, 1)?,
        rescan_ms: at_least(d.key("rescan_ms"), raw.daemon.rescan_ms, 10)?,
        socket: non_empty_path(d.key("socket"), raw.daemon.socket)?,
        journal: non_empty_path(d.key("journal"), raw.daemon.journal)?,
        dry_run: raw.daemon.dry_run,
    };

    let i = root().key("isolation");
    let ri = raw.isolation;
    let (policy, policy_params) = isolation_policy(&i, &ri.policy)?;
    let dram_path = i.key("dram_gbps");
    let dram_gbps: [f64; 3] = ri.dram_gbps.as_slice().try_into().map_err(|_| {
        (
            dram_path.clone(),
            format!(
                "expected 3 values (for PM media use < 0.4, < 0.8, >= 0.8 of T_media), got {}",
                ri.dram_gbps.len()
            ),
        )
    })?;
    let request_write_gbps = match (ri.request_write_gbps, policy_params.0) {
        (Some(key), Some(arg)) if key != arg => {
            return Err((
                i.key("request_write_gbps"),
                format!(
                    "{key} contradicts policy = {:?}; set it in one place",
                    ri.policy
                ),
            ))
        }
        (Some(v), _) | (None, Some(v)) => v,
        (None, None) => IsolationParams::default().request_write_gbps,
    };
    let params = IsolationParams {
        media_write_gbps: ri.media_write_gbps,
        media_read_gbps: ri.media_read_gbps,
        dram_gbps,
        wpq_delay_cycles: ri.wpq_delay_cycles,
        predict_factor: ri.predict_factor,
        request_write_gbps,
        caladan_dram_gbps: policy_params.1,
        ..IsolationParams::default()
    };
    params.validate().map_err(|e| {
        let path = i.key(e.key);
        (e.index.map_or(path.clone(), |n| path.index(n)), e.message)
    })?;
    let be_cpus = if ri.be_cpus == "all" {
        CpuChoice::All
    } else {
        CpuChoice::List(cpu_list(i.key("be_cpus"), &ri.be_cpus).map_err(|(p, m)| {
            (
                p,
                format!("{m} (use \"all\" or a CPU list such as \"4-15\")"),
            )
        })?)
    };
    let isolation = IsolationConfig {
        policy,
        params,
        duty_period_us: at_least(i.key("duty_period_us"), ri.duty_period_us, MIN_PERIOD_US)?,
        be_cpus,
        actuator: match ri.actuator.as_str() {
            "affinity" => Actuator::Affinity,
            "cgroup" => Actuator::Cgroup,
            other => {
                return Err((
                    i.key("actuator"),
                    format!("unknown actuator {other:?}, expected one of affinity, cgroup"),
                ))
            }
        },
    };

    let c = root().key("core_spec");
    let rc = raw.core_spec;
    let pm_cpus = match rc.pm_cpus {
        RawPmCpus::Count(n) if (1..=memtamer_core::cpuset::MAX_CPUS as i64).contains(&n) => {
            PmCpus::Count(n as usize)
        }
        RawPmCpus::Count(n) => {
            return Err((
                c.key("pm_cpus"),
                format!(
                    "CPU count must be between 1 and {}, got {n}",
                    memtamer_core::cpuset::MAX_CPUS
                ),
            ))
        }
        RawPmCpus::List(s) => PmCpus::List(cpu_list(c.key("pm_cpus"), &s)?),
    };
    let core_spec = CoreSpecConfig {
        enabled: rc.enabled,
        pm_cpus,
        pm_expiry_ms: at_least(c.key("pm_expiry_ms"), rc.pm_expiry_ms, 1)?,
        general_expiry_ms: at_least(c.key("general_expiry_ms"), rc.general_expiry_ms, 1)?,
    };

    let pl = root().key("placement");
    let rp = raw.placement;
    let pct = |k: &str, v: f64| -> Result<f64, Invalid> {
        if v.is_finite() && (0.0..100.0).contains(&v) {
            Ok(v)
        } else {
            Err((
                pl.key(k),
                format!("must be a percentage in [0, 100), got {v}"),
            ))
        }
    };
    let placement = PlacementConfig {
        enabled: rp.enabled,
        period_ms: at_least(pl.key("period_ms"), rp.period_ms, 1)?,
        min_residency_ms: rp.min_residency_ms,
        max_moves: at_least(pl.key("max_moves"), rp.max_moves, 2)?,
        numa_imbalance_pct: pct("numa_imbalance_pct", rp.numa_imbalance_pct)?,
        llc_imbalance_pct: pct("llc_imbalance_pct", rp.llc_imbalance_pct)?,
        smt_imbalance_pct: pct("smt_imbalance_pct", rp.smt_imbalance_pct)?,
        min_delta_cut_pct: pct("min_delta_cut_pct", rp.min_delta_cut_pct)?,
        pm_task_min_load: positive(pl.key("pm_task_min_load"), rp.pm_task_min_load)?,
        clock_ghz: positive(pl.key("clock_ghz"), rp.clock_ghz)?,
    };

    let jobs = validate_jobs(raw.job)?;
    if let CpuChoice::List(be) = isolation.be_cpus {
        let mut pool = be;
        for j in jobs.iter().filter(|j| j.class == JobClass::Lc) {
            for cpu in j.cpus.iter().flat_map(|s| s.iter()) {
                pool.remove(cpu);
            }
        }
        if pool.is_empty() && jobs.iter().any(|j| j.class == JobClass::Be) {
            return Err((
                i.key("be_cpus"),
                format!("every CPU in {be} is reserved by an LC job; BE jobs could never run"),
            ));
        }
    }

    let (gate, warnings) = match raw.gate {
        Some(g) => {
            let (g, w) = validate_gate(g)?;
            (Some(g), w)
        }
        None => (None, Vec::new()),
    };

    Ok(DaemonConfig {
        daemon,
        isolation,
        core_spec,
        placement,
        gate,
        jobs,
        warnings,
    })
}

/// `[gate]` through the gate library's own validation
/// (`memtamer_gate::GateConfig::from_lookup`), its variables renamed to the
/// section's keys in errors and warnings.
fn validate_gate(g: RawGate) -> Result<(GateSection, Vec<String>), Invalid> {
    const KEYS: [(&str, &str); 4] = [
        ("MEMTAMER_GATE", "name"),
        ("MEMTAMER_GATE_DIR", "dir"),
        ("MEMTAMER_GATE_POLICY", "policy"),
        ("MEMTAMER_PM_INTERLEAVE", "pm_interleave"),
    ];
    let at = |var: &str| {
        let key = KEYS
            .iter()
            .find(|(v, _)| *v == var)
            .map_or("name", |(_, k)| *k);
        root().key("gate").key(key)
    };
    let value = |var: &str| -> Option<String> {
        match var {
            "MEMTAMER_GATE" => Some(g.name.clone()),
            "MEMTAMER_GATE_DIR" => g.dir.clone(),
            "MEMTAMER_GATE_POLICY" => g.policy.clone(),
            "MEMTAMER_PM_INTERLEAVE" => g.pm_interleave.map(|n| n.to_string()),
            _ => None,
        }
    };
    let c = memtamer_gate::GateConfig::from_lookup(value).map_err(|e| match e {
        memtamer_gate::GateError::BadSetting {
            key,
            value,
            expected,
        } => (at(&key), format!("{value:?}: {expected}")),
        memtamer_gate::GateError::Model { key, source } => (at(&key), source.to_string()),
        other => (at("MEMTAMER_GATE"), other.to_string()),
    })?;
    let warnings = c
        .warnings
        .iter()
        .map(|w| w.replacen("MEMTAMER_GATE_POLICY", "gate.policy", 1))
        .collect();
    Ok((
        GateSection {
            name: c.options.name,
            dir: c.options.dir,
            policy: c.policy,
            pm_interleave: c.n_pm,
        },
        warnings,
    ))
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

fn validate_jobs(raw: Vec<RawJob>) -> Result<Vec<JobConfig>, Invalid> {
    if raw.is_empty() {
        return Err((
            root().key("job"),
            "no [[job]] given; at least one job is required".into(),
        ));
    }
    let mut names = HashSet::new();
    let mut jobs: Vec<JobConfig> = Vec::with_capacity(raw.len());
    for (n, rj) in raw.into_iter().enumerate() {
        let p = root().key("job").index(n);
        if !valid_name(&rj.name) {
            return Err((
                p.key("name"),
                format!(
                    "invalid job name {:?}: must be non-empty and use only A-Z a-z 0-9 _ . -",
                    rj.name
                ),
            ));
        }
        if !names.insert(rj.name.clone()) {
            return Err((p.key("name"), format!("duplicate job name {:?}", rj.name)));
        }
        let class = match rj.class.as_str() {
            "lc" => JobClass::Lc,
            "be" => JobClass::Be,
            "unmanaged" => JobClass::Unmanaged,
            other => {
                return Err((
                    p.key("class"),
                    format!("unknown class {other:?}, expected one of lc, be, unmanaged"),
                ))
            }
        };
        let cpus = rj
            .cpus
            .as_deref()
            .map(|s| cpu_list(p.key("cpus"), s))
            .transpose()?;
        if cpus.is_some() && class == JobClass::Unmanaged {
            return Err((
                p.key("cpus"),
                "an unmanaged job is never acted upon, so cpus has no effect; remove it".into(),
            ));
        }
        let mp = p.key("match");
        let rm = rj.matcher;
        let mut pid = Vec::new();
        for (k, v) in rm.pid.unwrap_or_default().into_iter().enumerate() {
            match i32::try_from(v) {
                Ok(v) if v > 0 => pid.push(v),
                _ => return Err((mp.key("pid").index(k), format!("not a valid pid: {v}"))),
            }
        }
        let matcher = JobMatch {
            cgroup: rm.cgroup,
            unit: rm.unit,
            comm: rm.comm,
            exe: rm.exe,
            pid,
        };
        let selector = Selector::compile(&matcher).map_err(|e| match e {
            SelectorError::NoSelector => (mp.clone(), e.to_string()),
            SelectorError::Glob { field, source } => (mp.key(field), source.to_string()),
        })?;
        if let Some(mine) = cpus {
            for (m, other) in jobs.iter().enumerate() {
                let Some(theirs) = other.cpus else { continue };
                let overlap = mine.intersect(&theirs);
                if overlap.is_empty() {
                    continue;
                }
                let why = match (class, other.class) {
                    (JobClass::Lc, JobClass::Lc) => "LC jobs' reserved CPUs must not overlap",
                    (JobClass::Lc, JobClass::Be) | (JobClass::Be, JobClass::Lc) => {
                        "BE jobs may not be allowed on an LC job's reserved CPUs"
                    }
                    _ => continue,
                };
                return Err((
                    p.key("cpus"),
                    format!(
                        "CPUs {overlap} are also in job[{m}] ({:?}): {why}",
                        other.name
                    ),
                ));
            }
        }
        jobs.push(JobConfig {
            name: rj.name,
            class,
            cpus,
            matcher,
            selector,
        });
    }
    Ok(jobs)
}

// ---------------------------------------------------------------------------
// Span tree: where every key and value of the document is.

/// A value of the document with its byte span (when toml reports one).
#[derive(Debug)]
struct Node {
    span: Option<Range<usize>>,
    kind: NodeKind,
}

#[derive(Debug)]
enum NodeKind {
    Table(Vec<Entry>),
    Array(Vec<Node>),
    Leaf,
}

#[derive(Debug)]
struct Entry {
    key: String,
    key_span: Option<Range<usize>>,
    value: Node,
}

/// The private struct name and field names that `toml::Spanned` uses to ask
/// the deserializer for spans, captured from `Spanned`'s own `Deserialize`
/// impl so they are never hard-coded. With them the tree can request spans
/// where toml has them and still accept values (implicit tables, dotted keys)
/// where it has none, which `Spanned` itself rejects.
struct SpanProtocol {
    name: &'static str,
    fields: &'static [&'static str],
}

fn span_protocol() -> Option<&'static SpanProtocol> {
    static PROTOCOL: OnceLock<Option<SpanProtocol>> = OnceLock::new();
    PROTOCOL
        .get_or_init(|| {
            struct Capture<'a>(&'a Cell<Option<SpanProtocol>>);
            impl<'de> Deserializer<'de> for Capture<'_> {
                type Error = de::value::Error;
                fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
                    Err(de::Error::custom("capture"))
                }
                fn deserialize_struct<V: Visitor<'de>>(
                    self,
                    name: &'static str,
                    fields: &'static [&'static str],
                    _: V,
                ) -> Result<V::Value, Self::Error> {
                    self.0.set(Some(SpanProtocol { name, fields }));
                    Err(de::Error::custom("capture"))
                }
                serde::forward_to_deserialize_any! {
                    bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
                    bytes byte_buf option unit unit_struct newtype_struct seq tuple
                    tuple_struct map enum identifier ignored_any
                }
            }
            let cell = Cell::new(None);
            let _ = toml::Spanned::<de::IgnoredAny>::deserialize(Capture(&cell));
            cell.take().filter(|p| p.fields.len() == 3)
        })
        .as_ref()
}

/// A key or one of the span protocol's marker keys, possibly with its span.
struct MaybeSpannedKey {
    span: Option<Range<usize>>,
    key: String,
}

impl<'de> Deserialize<'de> for MaybeSpannedKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaybeSpannedKey;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<MaybeSpannedKey, E> {
                Ok(MaybeSpannedKey {
                    span: None,
                    key: v.to_string(),
                })
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<MaybeSpannedKey, M::Error> {
                let (span, key) = read_spanned::<M, String>(&mut m, None)?;
                Ok(MaybeSpannedKey { span, key })
            }
        }
        match span_protocol() {
            Some(p) => d.deserialize_struct(p.name, p.fields, V),
            None => d.deserialize_any(V),
        }
    }
}

/// Reads the rest of a span protocol map (start, end, value); `first` is the
/// already-read first key, if any.
fn read_spanned<'de, M: MapAccess<'de>, T: Deserialize<'de>>(
    m: &mut M,
    first: Option<String>,
) -> Result<(Option<Range<usize>>, T), M::Error> {
    let Some(p) = span_protocol() else {
        return Err(de::Error::custom("span protocol unavailable"));
    };
    let (mut start, mut end, mut value) = (None, None, None);
    let mut key = match first {
        Some(k) => Some(k),
        None => m.next_key::<String>()?,
    };
    while let Some(k) = key {
        if k == p.fields[0] {
            start = Some(m.next_value::<usize>()?);
        } else if k == p.fields[1] {
            end = Some(m.next_value::<usize>()?);
        } else if k == p.fields[2] {
            value = Some(m.next_value::<T>()?);
        } else {
            return Err(de::Error::custom("unexpected key in span protocol"));
        }
        key = m.next_key::<String>()?;
    }
    let value = value.ok_or_else(|| de::Error::custom("span protocol without value"))?;
    let span = match (start, end) {
        (Some(s), Some(e)) if s <= e => Some(s..e),
        _ => None,
    };
    Ok((span, value))
}

/// The value half of the span protocol: deserialized with `deserialize_any`.
struct Bare(NodeKind);

impl<'de> Deserialize<'de> for Bare {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(NodeVisitor { spanned: false })
            .map(|n| Bare(n.kind))
    }
}

struct NodeVisitor {
    /// Whether the deserializer was asked for spans (so a map may be the
    /// span protocol rather than a table).
    spanned: bool,
}

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any TOML value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(leaf())
    }
    fn visit_seq<S: SeqAccess<'de>>(self, mut s: S) -> Result<Node, S::Error> {
        let mut items = Vec::new();
        while let Some(n) = s.next_element::<Node>()? {
            items.push(n);
        }
        Ok(Node {
            span: None,
            kind: NodeKind::Array(items),
        })
    }
    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Node, M::Error> {
        let first = m.next_key::<MaybeSpannedKey>()?;
        if let (true, Some(first), Some(p)) = (self.spanned, &first, span_protocol()) {
            if first.span.is_none() && first.key == p.fields[0] {
                let (span, Bare(kind)) = read_spanned::<M, Bare>(&mut m, Some(first.key.clone()))?;
                return Ok(Node { span, kind });
            }
        }
        let mut entries = Vec::new();
        let mut next = first;
        while let Some(k) = next {
            let value = m.next_value::<Node>()?;
            entries.push(Entry {
                key: k.key,
                key_span: k.span,
                value,
            });
            next = m.next_key::<MaybeSpannedKey>()?;
        }
        Ok(Node {
            span: None,
            kind: NodeKind::Table(entries),
        })
    }
}

fn leaf() -> Node {
    Node {
        span: None,
        kind: NodeKind::Leaf,
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match span_protocol() {
            Some(p) => d.deserialize_struct(p.name, p.fields, NodeVisitor { spanned: true }),
            None => d.deserialize_any(NodeVisitor { spanned: false }),
        }
    }
}

fn union(a: Option<Range<usize>>, b: Option<Range<usize>>) -> Option<Range<usize>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.start.min(b.start)..a.end.max(b.end)),
        (a, b) => a.or(b),
    }
}

impl Node {
    /// Gives span-less nodes (implicit tables, dotted keys) the union of
    /// their children's spans.
    fn filled(mut self) -> Node {
        let mut acc = None;
        self.kind = match self.kind {
            NodeKind::Table(entries) => NodeKind::Table(
                entries
                    .into_iter()
                    .map(|e| {
                        let value = e.value.filled();
                        acc = union(acc.clone(), union(e.key_span.clone(), value.span.clone()));
                        Entry { value, ..e }
                    })
                    .collect(),
            ),
            NodeKind::Array(items) => NodeKind::Array(
                items
                    .into_iter()
                    .map(|n| {
                        let n = n.filled();
                        acc = union(acc.clone(), n.span.clone());
                        n
                    })
                    .collect(),
            ),
            NodeKind::Leaf => NodeKind::Leaf,
        };
        if self.span.is_none() {
            self.span = acc;
        }
        self
    }

    /// Every node as (path, key span, value span), parents before children.
    fn flatten(&self) -> Vec<Loc> {
        let mut out = Vec::new();
        self.flatten_into(root(), None, &mut out);
        out
    }

    fn flatten_into(&self, path: KeyPath, key_span: Option<Range<usize>>, out: &mut Vec<Loc>) {
        out.push(Loc {
            path: path.clone(),
            key_span,
            span: self.span.clone(),
        });
        match &self.kind {
            NodeKind::Table(entries) => {
                for e in entries {
                    e.value
                        .flatten_into(path.key(&e.key), e.key_span.clone(), out);
                }
            }
            NodeKind::Array(items) => {
                for (i, n) in items.iter().enumerate() {
                    n.flatten_into(path.index(i), None, out);
                }
            }
            NodeKind::Leaf => {}
        }
    }
}

struct Loc {
    path: KeyPath,
    key_span: Option<Range<usize>>,
    span: Option<Range<usize>>,
}

fn contains(outer: &Option<Range<usize>>, inner: &Range<usize>) -> bool {
    outer
        .as_ref()
        .is_some_and(|o| o.start <= inner.start && inner.end <= o.end)
}

/// The key path of the innermost key or value covering `span` (ties go to
/// the deeper path, e.g. an array-of-tables element over the array).
fn locate(locs: &[Loc], span: &Range<usize>) -> KeyPath {
    locs.iter()
        .filter_map(|l| {
            let len = |r: &Option<Range<usize>>| r.as_ref().map_or(usize::MAX, |r| r.len());
            let best = [&l.key_span, &l.span]
                .into_iter()
                .filter(|r| contains(r, span))
                .map(len)
                .min()?;
            Some((best, std::cmp::Reverse(l.path.0.len()), &l.path))
        })
        .min_by_key(|(len, depth, _)| (*len, *depth))
        .map_or_else(root, |(_, _, p)| p.clone())
}

/// Where to point for an error about `path`: its key if it has one, else its
/// value; for an absent key, its nearest present ancestor; else the start.
fn position_of(locs: &[Loc], path: &KeyPath) -> usize {
    let mut p = path.clone();
    loop {
        if let Some(l) = locs.iter().find(|l| l.path == p) {
            if let Some(s) = l.key_span.as_ref().or(l.span.as_ref()) {
                return s.start;
            }
        }
        if p.0.pop().is_none() {
            return 0;
        }
    }
}

/// Best-effort key path of byte `pos` for syntax errors, where no tree
/// exists: the last `[table]`/`[[array]]` header before the line plus the
/// key at the start of the line.
fn textual_path(text: &str, pos: usize) -> String {
    let mut pos = pos.min(text.len());
    while !text.is_char_boundary(pos) {
        pos -= 1;
    }
    let line_start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let mut table = String::new();
    let mut aot_counts: Vec<(String, usize)> = Vec::new();
    // Resolves `a.b` against arrays of tables seen so far: `job.match` →
    // `job[2].match` when `[[job]]` was seen three times.
    let resolve = |name: &str, counts: &[(String, usize)]| -> String {
        for (aot, n) in counts.iter().rev() {
            if let Some(rest) = name.strip_prefix(aot.as_str()) {
                if rest.is_empty() || rest.starts_with('.') {
                    return format!("{aot}[{}]{rest}", n.saturating_sub(1));
                }
            }
        }
        name.to_string()
    };
    let header = |line: &str| -> Option<(bool, String)> {
        let t = line.trim_start();
        // A malformed header (no closing bracket) still names its table.
        let name = |r: &str, close: &str| {
            let end = r.find(close).or_else(|| r.find('#')).unwrap_or(r.len());
            r[..end].replace([' ', '\t'], "")
        };
        if let Some(r) = t.strip_prefix("[[") {
            return Some((true, name(r, "]]")));
        }
        t.strip_prefix('[').map(|r| (false, name(r, "]")))
    };
    for line in text[..line_start].lines() {
        match header(line) {
            Some((true, name)) => {
                match aot_counts.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, c)) => *c += 1,
                    None => aot_counts.push((name.clone(), 1)),
                }
                table = resolve(&name, &aot_counts);
            }
            Some((false, name)) => table = resolve(&name, &aot_counts),
            None => {}
        }
    }
    let line = text[line_start..].lines().next().unwrap_or("");
    let key = match header(line) {
        Some((_, name)) if name.is_empty() => return root().to_string(),
        Some((is_aot, name)) => {
            return if is_aot {
                let n = aot_counts
                    .iter()
                    .find(|(a, _)| *a == name)
                    .map_or(0, |(_, c)| *c);
                format!("{name}[{n}]")
            } else {
                resolve(&name, &aot_counts)
            }
        }
        None => line
            .split_once('=')
            .map(|(k, _)| k.trim().replace(' ', ""))
            .unwrap_or_default(),
    };
    match (table.is_empty(), key.is_empty()) {
        (true, true) => root().to_string(),
        (true, false) => key,
        (false, true) => table,
        (false, false) => format!("{table}.{key}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = "[[job]]\nname = \"a\"\nclass = \"lc\"\n[job.match]\ncomm = \"a\"\n";

    #[test]
    fn defaults() {
        let c = DaemonConfig::parse(MINIMAL, "m.toml").unwrap();
        assert_eq!(c.daemon.period_us, DEFAULT_PERIOD_US);
        assert_eq!(c.daemon.media_period_ms, DEFAULT_MEDIA_PERIOD_MS);
        assert_eq!(c.daemon.socket, PathBuf::from(DEFAULT_SOCKET));
        assert_eq!(c.daemon.journal, PathBuf::from(DEFAULT_JOURNAL));
        assert!(!c.daemon.dry_run);
        assert_eq!(c.isolation.policy, IsolationPolicy::Dicio);
        assert_eq!(c.isolation.params, IsolationParams::default());
        assert_eq!(c.isolation.duty_period_us, DEFAULT_DUTY_PERIOD_US);
        assert_eq!(c.isolation.be_cpus, CpuChoice::All);
        assert!(!c.core_spec.enabled);
        assert_eq!(c.core_spec.pm_cpus, PmCpus::Count(DEFAULT_PM_CPUS));
        assert_eq!(c.core_spec.pm_expiry_ms, DEFAULT_PM_EXPIRY_MS);
        assert_eq!(c.core_spec.general_expiry_ms, DEFAULT_GENERAL_EXPIRY_MS);
        assert!(!c.placement.enabled);
        assert_eq!(c.jobs.len(), 1);
        assert_eq!(c.jobs[0].class, JobClass::Lc);
        assert_eq!(c.jobs[0].cpus, None);
    }

    #[test]
    fn policy_names_round_trip() {
        for (n, p) in IsolationPolicy::ALL {
            assert_eq!(p.name(), n);
            assert!(ISOLATION_POLICIES.contains(&n), "{n} is a registry name");
        }
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("", 0), (1, 1));
        assert_eq!(line_col("ab\ncd", 3), (2, 1));
        assert_eq!(line_col("ab\ncd", 4), (2, 2));
        assert_eq!(line_col("é = 1", 3), (1, 3));
        assert_eq!(line_col("é", 1), (1, 1), "inside a character");
        assert_eq!(line_col("ab", 99), (1, 3), "clamped");
    }

    #[test]
    fn key_path_display() {
        assert_eq!(root().to_string(), "(top level)");
        assert_eq!(
            root()
                .key("job")
                .index(1)
                .key("match")
                .key("pid")
                .index(0)
                .to_string(),
            "job[1].match.pid[0]"
        );
    }

    #[test]
    fn value_missing_at_end_of_file() {
        let e = DaemonConfig::parse("[daemon]\nperiod_us = ", "m.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "m.toml:2:13: daemon.period_us: invalid or incomplete TOML"
        );
    }

    #[test]
    fn quoted_after_extracts_names() {
        assert_eq!(
            quoted_after("missing field `name`", "missing field"),
            Some("name".into())
        );
        assert_eq!(quoted_after("missing field name", "missing field"), None);
        assert_eq!(quoted_after("other", "missing field"), None);
        assert_eq!(quoted_after("missing field `", "missing field"), None);
    }

    #[test]
    fn textual_paths() {
        let t = "a = 1\n[daemon]\nperiod_us = x\n[[job]]\n[[job]]\nname = ?\n[job.match]\ncomm = ?\n[[job]]\n";
        let at = |needle: &str| textual_path(t, t.find(needle).unwrap());
        assert_eq!(at("a ="), "a");
        assert_eq!(at("x\n"), "daemon.period_us");
        assert_eq!(at("?"), "job[1].name");
        assert_eq!(at("comm"), "job[1].match.comm");
        assert_eq!(at("[job.match]"), "job[1].match");
        assert_eq!(textual_path(t, t.len()), "job[2]");
        assert_eq!(textual_path(t, t.len() - 3), "job[2]");
        assert_eq!(textual_path("", 5), "(top level)");
        assert_eq!(textual_path("[[x", 1), "x[0]");
        assert_eq!(textual_path("[a]\n[b # c\n", 6), "b");
        assert_eq!(textual_path("[a]\n[ ]\n", 5), "(top level)");
        assert_eq!(textual_path("[a]\n[[]]\n", 5), "(top level)");
    }

    #[test]
    fn span_protocol_is_captured() {
        let p = span_protocol().unwrap();
        assert_eq!(p.fields.len(), 3);
    }

    #[test]
    fn tree_handles_implicit_tables_and_dotted_keys() {
        let text = "a.b.c = 1\n[x.y]\nz = [1, {q = 2}]\n[[arr]]\nk.l = 'v'\n";
        let tree = toml::from_str::<Node>(text).unwrap().filled();
        let locs = tree.flatten();
        let find = |p: &str| {
            locs.iter()
                .find(|l| l.path.to_string() == p)
                .map(|l| l.span.clone())
        };
        for p in [
            "a",
            "a.b",
            "a.b.c",
            "x",
            "x.y",
            "x.y.z",
            "x.y.z[1].q",
            "arr[0]",
            "arr[0].k.l",
        ] {
            assert!(find(p).flatten().is_some(), "{p}");
        }
        let q = text.find("2}").unwrap();
        assert_eq!(locate(&locs, &(q..q + 1)).to_string(), "x.y.z[1].q");
    }
}

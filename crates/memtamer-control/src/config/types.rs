//! The validated daemon configuration: its sections, their defaults (those
//! of isolation are `memtamer_core::isolation::IsolationParams`), and
//! what the daemon derives from them.

use crate::select::{JobMatch, JobRequire, Selector};
use memtamer_core::isolation::IsolationParams;
use memtamer_core::{CpuSet, JobClass};
use std::path::PathBuf;

/// Default `daemon.period_us`: the fast loop (WPQ and request-level checks)
/// runs every millisecond, as in Dicio.
pub const DEFAULT_PERIOD_US: u64 = 1000;
/// Smallest accepted `daemon.period_us`; below this the loop's own overhead
/// and timer slack dominate.
pub const MIN_PERIOD_US: u64 = 10;
/// Largest accepted `daemon.period_us` and `isolation.duty_period_us`: one
/// second. A longer loop cannot react to anything Dicio reacts to, and an
/// unbounded one (`9223372036854775807`) made the daemon sleep for ever.
pub const MAX_PERIOD_US: u64 = 1_000_000;
/// Largest accepted slow period (`media_period_ms`, `rescan_ms`,
/// `placement.period_ms`): one minute.
pub const MAX_SLOW_PERIOD_MS: u64 = 60_000;
/// Largest accepted expiry or residency (`core_spec.*_expiry_ms`,
/// `placement.min_residency_ms`): one day.
pub const MAX_EXPIRY_MS: u64 = 86_400_000;
/// Default `daemon.watchdog_ms`: the guard kills a daemon whose loop made no
/// progress for this long and undoes its changes (issue 22 item 3). Long
/// against a loop iteration (~1 ms) and a rescan (a few ms), short against
/// how long a frozen BE job may wait.
pub const DEFAULT_WATCHDOG_MS: u64 = 2_000;
/// Smallest accepted `daemon.watchdog_ms`.
pub const MIN_WATCHDOG_MS: u64 = 100;
/// Largest accepted `daemon.watchdog_ms`: ten minutes.
pub const MAX_WATCHDOG_MS: u64 = 600_000;
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
    /// request-level checks), microseconds, 10..=1000000.
    pub period_us: u64,
    /// `media_period_ms`, default 50: period of the slow path reading PM media
    /// counters (ipmctl/ACPI take ~4.5 ms), milliseconds, at least 1.
    pub media_period_ms: u64,
    /// `rescan_ms`, default 250: period of the /proc rescan that finds new,
    /// exited and exec'd processes and new threads, milliseconds, at least 10.
    pub rescan_ms: u64,
    /// `watchdog_ms`, default 2000, 100..=600000: a daemon whose loop makes
    /// no progress for this long (stopped, hung) is killed by its guard,
    /// which then undoes every change (docs/control.md, "Safety").
    pub watchdog_ms: u64,
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
    /// `require` (optional): uid and cgroup every process of the job must
    /// have besides matching (docs/control.md "Trust model").
    pub require: JobRequire,
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

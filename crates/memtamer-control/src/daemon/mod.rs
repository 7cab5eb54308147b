//! The daemon: sense -> decide -> act, every `period_us`.
//!
//! * **Sense**: [`memtamer_sense::Sensors`] (library reports from the PATS
//!   gate, PEBS samples, iMC counters, DIMM media counters polled on their
//!   own thread), mapped onto the jobs the config selects.
//! * **Decide**: one [`Composite`] of the pure policies in `memtamer-core`
//!   (isolation, core specialization), exactly the code the simulator runs.
//! * **Act**: the daemon is an [`memtamer_core::Actuators`] (`act.rs`): the
//!   gate limit to the shared gate of `[gate]`, per-thread affinity,
//!   migrations, duty cycles or cgroups, each change journaled before it is
//!   made ([`memtamer_actuate::journal`]), so that exit, a panic, or the
//!   guard process after a SIGKILL can put everything back; what it does
//!   not apply is counted (`loop.ignored` in status) and logged once.
//!
//! The daemon never touches a process that no job selects.

mod act;
mod build;
mod observe;
mod pods;

pub use act::{
    DRY_RUN, FAILED, NOT_BE, NOT_MANAGED, NO_DUTY, NO_GATE, OUTSIDE_AFFINITY, UNMANAGED_JOB,
};
pub use build::{build_policy, build_policy_on, online_cpus};

use crate::config::{Actuator, DaemonConfig, IsolationPolicy};
use crate::procfs::ProcFs;
use crate::select::{self, ProcessKey, Selector};
use memtamer_actuate::affinity;
use memtamer_actuate::cgroup::{CgroupLayout, ManagedCgroup};
use memtamer_actuate::duty::DutyCycler;
use memtamer_actuate::journal::{Change, Journal};
use memtamer_core::compose::{Composite, Hints};
use memtamer_core::{Actuators, CpuSet, Decision, JobClass, Observation};
use memtamer_sense::sources::{Sensors, SourceConfig};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Errors that stop the daemon from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// The restore journal could not be opened or replayed.
    #[error("journal: {0}")]
    Journal(#[from] memtamer_actuate::Error),
    /// The control socket could not be created.
    #[error(transparent)]
    Socket(#[from] crate::socket::SocketError),
    /// /proc could not be scanned at all.
    #[error("scanning processes: {0}")]
    Proc(#[from] crate::procfs::ProcError),
    /// The config names something this host does not have.
    #[error("config: {0}")]
    Config(String),
}

/// Set by SIGINT/SIGTERM: the loop stops and restores.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_stop_signal(_sig: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Installs SIGINT/SIGTERM/SIGHUP handlers that ask the loop to stop.
pub fn install_stop_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic (async-signal-safe).
        unsafe {
            libc::signal(
                sig,
                on_stop_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
            );
        }
    }
}

/// Asks a running loop in this process to stop (tests, embedding). Only
/// stores to an atomic, so a signal handler may call it.
pub fn request_stop() {
    STOP.store(true, Ordering::SeqCst);
}

/// Clears a stop request, so that a new `Daemon` can run in this process
/// (`memtamer run` restarting with a reloaded config on SIGHUP).
pub fn clear_stop() {
    STOP.store(false, Ordering::SeqCst);
}

/// A managed thread as the daemon tracks it.
#[derive(Clone, Debug, PartialEq)]
struct Tracked {
    key: ProcessKey,
    job: usize,
    /// The affinity the thread has now (read once, then what we set).
    allowed: CpuSet,
    /// The affinity to restore: what it had before memtamer, which for a
    /// thread or process created by one memtamer had pinned is the creator's
    /// original, not the pin it inherited.
    original: CpuSet,
}

/// Where a thread ran at the last sample, and its CPU use since the one before.
#[derive(Clone, Copy, Debug)]
struct SchedSample {
    cpu: u32,
    ticks: u64,
    run_ns: Option<u64>,
    at: Instant,
    util: Option<f64>,
}

/// A decision worth showing in `memtamer status`.
#[derive(Clone, Debug, Serialize)]
struct Shown {
    at_ms: u64,
    reasons: Vec<String>,
}

/// Loop statistics, for status and the overhead benchmark.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LoopStats {
    /// Iterations run.
    pub iterations: u64,
    /// Iterations that took longer than the period.
    pub overruns: u64,
    /// Mean time in sense+decide+act, microseconds.
    pub mean_us: f64,
    /// Longest iteration, microseconds.
    pub max_us: f64,
    /// Actions applied (affinity writes, duty changes).
    pub actions: u64,
    /// Actions that failed (thread gone, permission).
    pub failed_actions: u64,
    /// /proc rescans done.
    pub rescans: u64,
    /// Mean time of one rescan, microseconds.
    pub rescan_mean_us: f64,
    /// Mean time to build the observation, microseconds.
    pub observe_mean_us: f64,
    /// Mean time of the policies' decide, microseconds.
    pub decide_mean_us: f64,
    /// Decision parts not applied, per `"knob: reason"` (see `act.rs`).
    pub ignored: BTreeMap<String, u64>,
}

/// The running daemon.
pub struct Daemon {
    cfg: DaemonConfig,
    procfs: ProcFs,
    scan_cache: crate::procfs::ScanCache,
    selectors: Vec<Selector>,
    sensors: Sensors,
    policy: Composite,
    journal: Arc<Journal>,
    duty: Option<DutyCycler>,
    /// Managed processes and their job.
    managed: Vec<(ProcessKey, usize)>,
    threads: BTreeMap<i32, Tracked>,
    online: CpuSet,
    last_scan: Option<Instant>,
    started: Instant,
    shown: VecDeque<Shown>,
    stats: LoopStats,
    /// Duty cycle currently applied per job index.
    duties: BTreeMap<usize, f64>,
    /// Cgroup actuator (`isolation.actuator = "cgroup"`): the hierarchy
    /// layout, each BE job's managed cgroup, and the processes moved in.
    cgroup_layout: Option<CgroupLayout>,
    cgroups: BTreeMap<usize, ManagedCgroup>,
    cgroup_members: std::collections::BTreeSet<ProcessKey>,
    /// BE jobs that select pods: each pod's own cgroup, changed in place,
    /// and the processes whose pod is known.
    pod_cgroups: BTreeMap<usize, BTreeMap<String, memtamer_actuate::inplace::InPlaceCgroup>>,
    pod_members: std::collections::BTreeSet<ProcessKey>,
    /// Whether `obs` must be rebuilt from `skeleton` (after a rescan that
    /// found other threads, or an affinity change).
    obs_stale: bool,
    /// The observation buffer, reused every window.
    obs: Observation,
    /// Bumped at every rebuild of `obs`: the policies' hint that its threads
    /// and jobs are those of the previous window ([`Hints::shape`]).
    obs_shape: u64,
    /// Indices into `obs.threads` that carry traffic from the last window:
    /// the only ones to clear before the next (a 1 ms loop should not walk
    /// every managed thread when few of them report anything).
    obs_reported: Vec<usize>,
    /// Per-thread CPU and CPU time, sampled once per placement period (only
    /// with placement on: it costs a /proc read per thread).
    sched: BTreeMap<i32, SchedSample>,
    last_sched: Option<Instant>,
    published: Arc<crate::socket::StatusBoard>,
    /// The shared gate of `[gate]`, whose limit the daemon owns.
    gate: Option<Arc<memtamer_gate::Gate>>,
    /// The guard's watchdog pipe: one beat per loop iteration
    /// ([`memtamer_actuate::watchdog`]).
    heartbeat: Option<memtamer_actuate::watchdog::Heartbeat>,
    /// The node's pods (API server and /var/log/pods), when a job selects pods.
    node_pods: Option<crate::kubewatch::NodePods>,
}

impl Daemon {
    /// Opens the journal (undoing whatever a previous daemon left behind),
    /// the sensors and the duty cycler.
    pub fn start(
        cfg: DaemonConfig,
        proc_root: &Path,
        sources: &SourceConfig,
    ) -> Result<Daemon, DaemonError> {
        let journal = Arc::new(Journal::open(&cfg.daemon.journal)?);
        if !journal.pending().is_empty() {
            let report = journal.restore_all()?;
            eprintln!(
                "memtamer: undid {} changes left by a previous run ({} skipped, {} failed)",
                report.restored(),
                report.skipped(),
                report.failed()
            );
        }
        for w in &cfg.warnings {
            eprintln!("memtamer: warning: {w}");
        }
        let online = online_cpus();
        let policy = build_policy(&cfg, &online)?;
        // `[gate]`: open (or create) the gate; the sensors read the same one
        let mut sources = sources.clone();
        let gate = match &cfg.gate {
            Some(g) => {
                sources.gate = g.options();
                Some(
                    memtamer_gate::Gate::open(&sources.gate)
                        .map_err(|e| DaemonError::Config(format!("gate.name: {e}")))?,
                )
            }
            None => None,
        };
        let cgroup_layout = if cfg.isolation.actuator == Actuator::Cgroup {
            let layout =
                CgroupLayout::discover(Path::new("/proc/self/mountinfo")).map_err(|e| {
                    DaemonError::Config(format!("isolation.actuator = \"cgroup\": {e}"))
                })?;
            if layout.mode().is_none() {
                return Err(DaemonError::Config(
                    "isolation.actuator = \"cgroup\": no cgroup v1 or v2 hierarchy is mounted"
                        .into(),
                ));
            }
            Some(layout)
        } else {
            None
        };
        let duty = if cfg.daemon.dry_run
            || cfg.isolation.policy == IsolationPolicy::Off
            || cgroup_layout.is_some()
        {
            None
        } else {
            Some(DutyCycler::start(
                Duration::from_micros(cfg.isolation.duty_period_us),
                journal.clone(),
            )?)
        };
        let selectors = cfg.selectors();
        let node_pods = selectors.iter().any(|s| s.selects_pods()).then(|| {
            let (pods, warnings) = crate::kubewatch::NodePods::start(&selectors);
            warnings
                .iter()
                .for_each(|w| eprintln!("memtamer: warning: {w}"));
            pods
        });
        Ok(Daemon {
            node_pods,
            procfs: ProcFs::new(proc_root),
            scan_cache: crate::procfs::ScanCache::new(select::parts_read_by(&selectors)),
            selectors,
            sensors: Sensors::open(&sources),
            gate,
            policy,
            journal,
            duty,
            managed: Vec::new(),
            threads: BTreeMap::new(),
            online,
            last_scan: None,
            started: Instant::now(),
            shown: VecDeque::new(),
            stats: LoopStats::default(),
            duties: BTreeMap::new(),
            obs_stale: true,
            obs: Observation::default(),
            obs_shape: 0,
            obs_reported: Vec::new(),
            sched: BTreeMap::new(),
            last_sched: None,
            cgroup_layout,
            cgroups: BTreeMap::new(),
            cgroup_members: Default::default(),
            pod_cgroups: BTreeMap::new(),
            pod_members: Default::default(),
            published: Arc::new(crate::socket::StatusBoard::new("{}")),
            heartbeat: None,
            cfg,
        })
    }

    /// Replaces the composed policy (embedding, and tests that need a policy
    /// the config cannot name).
    pub fn set_policy(&mut self, policy: Composite) {
        self.policy = policy;
    }

    /// Beats on `heartbeat` after every iteration, so that the guard's
    /// watchdog can tell a stopped or hung daemon from a working one.
    pub fn set_heartbeat(&mut self, heartbeat: memtamer_actuate::watchdog::Heartbeat) {
        self.heartbeat = Some(heartbeat);
    }

    /// The status document shared with the control socket.
    pub fn published(&self) -> Arc<crate::socket::StatusBoard> {
        self.published.clone()
    }

    /// Loop statistics so far.
    pub fn stats(&self) -> &LoopStats {
        &self.stats
    }

    /// Rescans /proc: new processes join their job, exited ones are
    /// forgotten, and a process that exec'd into something no job selects
    /// gets back everything the daemon changed on it.
    fn rescan(&mut self) -> Result<(), DaemonError> {
        let managed: std::collections::HashSet<i32> =
            self.managed.iter().map(|(k, _)| k.pid).collect();
        // pod, namespace and label selectors: the node's pods as of this rescan
        if let Some(np) = &self.node_pods {
            let pods = np.index();
            for s in &mut self.selectors {
                s.set_pods(&pods);
            }
        }
        // thread lists only of managed processes and of those a job selects
        let selectors = &self.selectors;
        let mut scan = self.procfs.scan_cached(&mut self.scan_cache, |p| {
            managed.contains(&p.pid) || select::job_of(p, selectors).is_some()
        })?;
        // read before the undos below: a child or thread first seen in this
        // scan inherits the original of a creator that just exec'd or exited
        let pending = self.journal.pending();
        // a process memtamer moved into memtamer/JOB is selected by the
        // cgroup it came from, or a cgroup selector would release it at once
        for p in &mut scan.processes {
            for e in p
                .cgroups
                .iter_mut()
                .filter(|e| e.path.starts_with("/memtamer/"))
            {
                if let Some(o) = original_cgroup(&pending, p.pid, p.start_time, &e.path) {
                    e.path = o;
                }
            }
        }
        let current = select::classify_keyed(&scan.processes, &self.selectors);
        let diff = select::diff(&self.managed, &current);
        let me = std::process::id() as i32;
        for (key, _) in diff.released.iter() {
            self.undo_process(key);
        }
        for r in &diff.reclassified {
            self.undo_process(&r.key);
            // its threads are back on their originals: read them afresh
            self.threads.retain(|_, t| t.key != r.key);
        }
        for (key, _) in &diff.exited {
            self.forget_process(key);
        }
        self.managed = current
            .iter()
            .filter(|(k, _)| k.pid != me)
            .filter_map(|(k, j)| j.map(|j| (*k, j)))
            .collect();
        // thread lists: new threads are read once; gone threads dropped
        let original_of = |pid: i32| -> Option<CpuSet> {
            let mut any = None;
            for c in &pending {
                if let Change::ThreadAffinity {
                    pid: p,
                    tid,
                    original,
                    ..
                } = c
                {
                    if *p == pid {
                        if *tid == pid {
                            return Some(*original);
                        }
                        any = any.or(Some(*original));
                    }
                }
            }
            any
        };
        let mut threads = BTreeMap::new();
        let mut failed = 0;
        for p in &scan.processes {
            let key = p.key();
            let Some(&(_, job)) = self.managed.iter().find(|(k, _)| *k == key) else {
                continue;
            };
            let unmanaged = self.cfg.jobs.get(job).map(|j| j.class) == Some(JobClass::Unmanaged);
            for &tid in &p.threads {
                let (allowed, original) = match self.threads.get(&tid) {
                    Some(t) if t.key == key => (t.allowed, t.original),
                    _ => match affinity::thread_affinity(tid) {
                        Ok(s) => {
                            let inherited = original_of(p.pid).or_else(|| original_of(p.ppid));
                            let original = inherited.unwrap_or(s);
                            // born with a pin memtamer set on its creator: journal
                            // it now, or no restore would undo it if the policy
                            // never has to change it
                            if original != s
                                && !unmanaged
                                && self
                                    .journal
                                    .record(Change::ThreadAffinity {
                                        pid: p.pid,
                                        tid,
                                        start_time: key.start_time,
                                        original,
                                    })
                                    .is_err()
                            {
                                failed += 1;
                            }
                            (s, original)
                        }
                        Err(_) => continue,
                    },
                };
                threads.insert(
                    tid,
                    Tracked {
                        key,
                        job,
                        allowed,
                        original,
                    },
                );
            }
        }
        // most rescans find the same threads: the observation stays
        if threads != self.threads {
            self.threads = threads;
            self.obs_stale = true;
        }
        self.stats.failed_actions += failed;
        Ok(())
    }

    /// The managed processes of job `job`.
    fn job_processes(&self, job: usize) -> Vec<ProcessKey> {
        self.managed
            .iter()
            .filter(|(_, j)| *j == job)
            .map(|(k, _)| *k)
            .collect()
    }

    /// Restores what was changed on one live process (it left management).
    fn undo_process(&mut self, key: &ProcessKey) {
        // (a duty-cycled job is re-registered after the rescan without this
        // process, which SIGCONTs it)
        let _ = self.journal.restore_where(|c| c.process() == Some(*key));
    }

    /// Drops journal records of a process that exited (nothing to restore).
    fn forget_process(&mut self, key: &ProcessKey) {
        for c in self.journal.pending() {
            if c.process() == Some(*key) {
                let _ = self.journal.forget(&c.key());
            }
        }
    }

    /// LC jobs with configured `cpus` run there (Dicio pins the LC job on its
    /// cores); the BE pool excludes them. Owned by the daemon's config, not a
    /// policy: it never changes while the daemon runs.
    fn reserve_lc_cpus(&self, d: &mut Decision) {
        for (&tid, t) in &self.threads {
            let Some(job) = self.cfg.jobs.get(t.job) else {
                continue;
            };
            if job.class != JobClass::Lc {
                continue;
            }
            if let Some(cpus) = job.cpus.map(|c| c.intersect(&self.online)) {
                if !cpus.is_empty() && cpus != t.allowed {
                    d.thread_cpus.push((tid as u32, cpus));
                    d.reasons.push(format!(
                        "LC job {}: thread {tid} on its reserved CPUs {cpus}",
                        job.name
                    ));
                }
            }
        }
    }

    /// One iteration: rescan if due, sense, decide, act, publish.
    pub fn step(&mut self) -> Result<(), DaemonError> {
        let t0 = Instant::now();
        let mut rescanned = false;
        if self
            .last_scan
            .is_none_or(|t| t.elapsed() >= Duration::from_millis(self.cfg.daemon.rescan_ms))
        {
            let r0 = Instant::now();
            self.rescan()?;
            rescanned = true;
            self.last_scan = Some(Instant::now());
            let us = r0.elapsed().as_secs_f64() * 1e6;
            self.stats.rescans += 1;
            self.stats.rescan_mean_us +=
                (us - self.stats.rescan_mean_us) / self.stats.rescans as f64;
            // processes that joined a cgroup-managed job move in
            let cg_jobs: Vec<usize> = self.cgroups.keys().copied().collect();
            for job in cg_jobs {
                let _ = self.ensure_cgroup(job);
            }
            self.cgroup_members
                .retain(|k| self.managed.iter().any(|(m, _)| m == k));
            // processes that joined a duty-cycled job follow its duty
            let duties: Vec<(usize, f64)> = self.duties.iter().map(|(&j, &d)| (j, d)).collect();
            for (job, d) in duties {
                if d < 1.0 {
                    if let (Some(duty), Some(jc)) = (&self.duty, self.cfg.jobs.get(job)) {
                        let _ = duty.set(&jc.name, self.job_processes(job), d);
                    }
                }
            }
        }
        let t1 = Instant::now();
        if self.cfg.placement.enabled
            && self
                .last_sched
                .is_none_or(|t| t.elapsed() >= Duration::from_millis(self.cfg.placement.period_ms))
        {
            self.sample_sched();
            self.obs_stale = true;
        }
        self.observe();
        let t2 = Instant::now();
        let hints = Hints {
            shape: Some(self.obs_shape),
            reporting: Some(&self.obs_reported),
        };
        let mut d = self.policy.decide_hinted(&self.obs, hints);
        if rescanned {
            // LC threads only appear at a rescan, and only memtamer moves them
            self.reserve_lc_cpus(&mut d);
        }
        let t3 = Instant::now();
        let report = self.apply(&d);
        self.account(&report);
        if !d.reasons.is_empty() {
            self.shown.push_back(Shown {
                at_ms: self.started.elapsed().as_millis() as u64,
                reasons: d.reasons.clone(),
            });
            while self.shown.len() > 20 {
                self.shown.pop_front();
            }
        }
        let us = t0.elapsed().as_secs_f64() * 1e6;
        let s = &mut self.stats;
        s.iterations += 1;
        let n = s.iterations as f64;
        s.observe_mean_us += ((t2 - t1).as_secs_f64() * 1e6 - s.observe_mean_us) / n;
        s.decide_mean_us += ((t3 - t2).as_secs_f64() * 1e6 - s.decide_mean_us) / n;
        s.mean_us += (us - s.mean_us) / s.iterations as f64;
        s.max_us = s.max_us.max(us);
        if us > self.cfg.daemon.period_us as f64 {
            s.overruns += 1;
        }
        // the status document is built only when a `status` request waits
        // for it (see StatusBoard)
        if self.published.wanted() {
            self.publish();
        }
        Ok(())
    }

    /// Runs until SIGINT/SIGTERM (or `max_iterations`), then undoes every
    /// change. A panic inside the loop is caught and also restores.
    pub fn run(mut self, max_iterations: Option<u64>) -> Result<RunSummary, DaemonError> {
        let period = Duration::from_micros(self.cfg.daemon.period_us);
        let server =
            crate::socket::ControlServer::start(&self.cfg.daemon.socket, self.published.clone())?;
        let mut next = Instant::now();
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(
            || -> Result<(), DaemonError> {
                while !STOP.load(Ordering::SeqCst)
                    && max_iterations.is_none_or(|m| self.stats.iterations < m)
                {
                    self.step()?;
                    if let Some(h) = &mut self.heartbeat {
                        h.beat();
                    }
                    next += period;
                    let now = Instant::now();
                    if next > now {
                        sleep_unless_stopped(next - now);
                    } else {
                        next = now;
                    }
                }
                Ok(())
            },
        ));
        drop(server);
        let stats = self.stats.clone();
        if let Some(d) = self.duty.take() {
            d.stop();
        }
        let report = self.journal.restore_all()?;
        let summary = RunSummary {
            stats,
            restored: report.restored(),
            restore_skipped: report.skipped(),
            restore_failed: report.failed(),
        };
        match outcome {
            Ok(r) => r.map(|()| summary),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into());
                Err(DaemonError::Config(format!(
                    "the control loop panicked ({msg}); every change was restored"
                )))
            }
        }
    }
}

/// Longest sleep between two looks at the stop flag: a signal is honoured
/// within this even when the period is long (std's sleep resumes after a
/// signal handler, so one long sleep would ignore SIGTERM until it ends).
pub const STOP_CHECK: Duration = Duration::from_millis(20);

/// Sleeps `d`, in slices of [`STOP_CHECK`], returning early once a stop
/// was requested.
fn sleep_unless_stopped(d: Duration) {
    let end = Instant::now() + d;
    loop {
        if STOP.load(Ordering::SeqCst) {
            return;
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(STOP_CHECK));
    }
}

/// What a run did, printed when the daemon exits.
#[derive(Clone, Debug, Serialize)]
pub struct RunSummary {
    /// Loop statistics.
    pub stats: LoopStats,
    /// Changes undone on exit.
    pub restored: usize,
    /// Changes whose process or thread was already gone.
    pub restore_skipped: usize,
    /// Changes that could not be undone.
    pub restore_failed: usize,
}

/// The cgroup path (relative to its hierarchy) a process was in before
/// memtamer moved it to `now` (e.g. `/memtamer/be`), from the journal.
fn original_cgroup(pending: &[Change], pid: i32, start_time: u64, now: &str) -> Option<String> {
    pending.iter().find_map(|c| match c {
        Change::CgroupMove {
            pid: p,
            start_time: s,
            hierarchy,
            original,
            to,
        } if *p == pid && *s == start_time => {
            let rel = |dir: &Path| -> Option<String> {
                let r = dir.strip_prefix(hierarchy).ok()?;
                Some(format!("/{}", r.display()))
            };
            (rel(to).as_deref() == Some(now))
                .then(|| rel(original))
                .flatten()
        }
        _ => None,
    })
}

/// Where the guard process for a daemon is started from. With a
/// `watchdog`, the guard reads the daemon's heartbeat on its standard input
/// (the caller pipes it and hands the write end to
/// [`Daemon::set_heartbeat`]) and kills and undoes a daemon silent that long.
pub fn guard_command(
    exe: &Path,
    daemon_pid: u32,
    journal: &Path,
    watchdog: Option<Duration>,
) -> std::process::Command {
    let mut c = std::process::Command::new(exe);
    c.arg("guard")
        .arg("--pid")
        .arg(daemon_pid.to_string())
        .arg("--journal")
        .arg(journal);
    if let Some(w) = watchdog {
        c.arg("--watchdog-ms").arg(w.as_millis().to_string());
    }
    c
}

/// Default location of the config.
pub fn default_config_path() -> PathBuf {
    PathBuf::from("/etc/memtamer/memtamer.toml")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_process_is_selected_by_the_cgroup_it_came_from() {
        let pending = vec![
            Change::CgroupMove {
                pid: 7,
                start_time: 70,
                hierarchy: "/sys/fs/cgroup".into(),
                original: "/sys/fs/cgroup/system.slice/fio.service".into(),
                to: "/sys/fs/cgroup/memtamer/be".into(),
            },
            Change::CgroupMove {
                pid: 7,
                start_time: 70,
                hierarchy: "/sys/fs/cgroup/cpuset".into(),
                original: "/sys/fs/cgroup/cpuset".into(),
                to: "/sys/fs/cgroup/cpuset/memtamer/be".into(),
            },
        ];
        assert_eq!(
            original_cgroup(&pending, 7, 70, "/memtamer/be").as_deref(),
            Some("/system.slice/fio.service")
        );
        // another process, or pid reuse: unknown
        assert_eq!(original_cgroup(&pending, 7, 71, "/memtamer/be"), None);
        assert_eq!(original_cgroup(&pending, 8, 70, "/memtamer/be"), None);
    }
}

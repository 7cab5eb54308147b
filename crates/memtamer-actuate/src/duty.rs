//! Sub-millisecond duty cycling of best-effort jobs with SIGSTOP/SIGCONT.
//!
//! cgroup CPU quotas work at 1 ms..1 s granularity with 100 ms defaults,
//! which is far too coarse to keep a memory-bandwidth hog from hurting a
//! latency-critical job. The [`DutyCycler`] runs one background thread that,
//! every `period` (default 1 ms), lets each registered job run for
//! `duty * period` and keeps it stopped for the rest. Deadlines are absolute
//! (`clock_nanosleep(TIMER_ABSTIME)` on CLOCK_MONOTONIC) so the period does
//! not drift; if the thread falls more than a period behind it skips ahead
//! instead of bursting.
//!
//! Signals go through pidfds ([`ProcHandle`]), so a recycled pid is never
//! stopped. Each registered process is journaled as [`Change::Stopped`] when
//! registered (not on every stop — that would be an fsync per millisecond),
//! so a guard SIGCONTs it if the daemon dies. Only the registered pids are
//! stopped, not children they fork later; use a cgroup freezer for those.

use crate::change::{Change, ChangeKey};
use crate::journal::Journal;
use crate::process::{ProcHandle, ProcessKey};
use crate::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

/// Default cycle period: short enough that a stopped job's stall is under a
/// millisecond, long enough for two signals per job per period.
pub const DEFAULT_PERIOD: Duration = Duration::from_millis(1);
/// Shortest accepted period; below this the signal overhead dominates.
pub const MIN_PERIOD: Duration = Duration::from_micros(100);
/// Longest accepted period.
pub const MAX_PERIOD: Duration = Duration::from_secs(1);
/// SCHED_FIFO priority of the cycling thread. Needed because a fair-class
/// thread waking on a CPU busy with the very job it must stop can wait a
/// whole scheduler slice (several ms on EEVDF kernels), which defeats a
/// 1 ms period. The thread sleeps >99% of the time, and the kernel's RT
/// throttling bounds it anyway. Low, to stay below kernel RT threads.
pub const RT_PRIORITY: i32 = 10;
/// Smallest duty: a job is never stopped completely (it could hold locks
/// other processes need); requests below this are raised to it.
pub const MIN_DUTY: f64 = 0.01;

/// Pure: the duty actually applied for a request. NaN is an error; values
/// at or below 0 become [`MIN_DUTY`]; values >= 1 (including +inf) become 1,
/// meaning "never stopped".
pub fn clamp_duty(duty: f64) -> Result<f64> {
    if duty.is_nan() {
        return Err(Error::Invalid("duty cycle is NaN".into()));
    }
    Ok(duty.clamp(MIN_DUTY, 1.0))
}

/// Pure: the run time within each period for `duty`.
pub fn run_time(period: Duration, duty: f64) -> Duration {
    period.mul_f64(duty.clamp(0.0, 1.0))
}

struct Job {
    /// Everything registered (journaled), including processes since exited.
    keys: Vec<ProcessKey>,
    /// Live handles; exited processes are dropped as they are found.
    procs: Vec<ProcHandle>,
    duty: f64,
    stopped: bool,
}

impl Job {
    /// Signals every process, dropping the ones that have exited.
    fn signal(&mut self, sig: i32) {
        self.procs
            .retain(|p| !matches!(p.signal(sig), Err(Error::ProcessGone { .. })));
    }
}

struct Shared {
    jobs: Mutex<HashMap<String, Job>>,
    wake: Condvar,
    stop: AtomicBool,
    realtime: AtomicBool,
    period_ns: u64,
}

impl Shared {
    // Poisoning must not stop the SIGCONTs on shutdown.
    fn jobs(&self) -> MutexGuard<'_, HashMap<String, Job>> {
        self.jobs.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Duty-cycles registered jobs on a background thread. Every process it may
/// have stopped is SIGCONTed on [`DutyCycler::clear`], [`DutyCycler::stop`]
/// and Drop, and journaled so a guard can do it after a SIGKILL.
pub struct DutyCycler {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    journal: Arc<Journal>,
}

impl std::fmt::Debug for DutyCycler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DutyCycler")
            .field("period_ns", &self.shared.period_ns)
            .field("jobs", &self.jobs())
            .finish()
    }
}

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Sleeps until the absolute CLOCK_MONOTONIC time `deadline_ns`.
fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    loop {
        // SAFETY: valid timespec; remaining-time pointer may be null with TIMER_ABSTIME.
        let rc = unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        if rc != libc::EINTR {
            return;
        }
    }
}

impl DutyCycler {
    /// Starts the cycling thread with `period` (between [`MIN_PERIOD`] and
    /// [`MAX_PERIOD`]); registered processes are journaled in `journal`.
    pub fn start(period: Duration, journal: Arc<Journal>) -> Result<DutyCycler> {
        if !(MIN_PERIOD..=MAX_PERIOD).contains(&period) {
            return Err(Error::Invalid(format!(
                "duty period {period:?} outside {MIN_PERIOD:?}..={MAX_PERIOD:?}"
            )));
        }
        let shared = Arc::new(Shared {
            jobs: Mutex::new(HashMap::new()),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
            realtime: AtomicBool::new(false),
            period_ns: period.as_nanos() as u64,
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("memtamer-duty".into())
            .spawn(move || run(&s))
            .map_err(|source| Error::Sys {
                op: "spawn duty thread",
                id: std::process::id() as i32,
                source,
            })?;
        Ok(DutyCycler {
            shared,
            thread: Some(thread),
            journal,
        })
    }

    /// Whether the cycling thread got real-time priority ([`RT_PRIORITY`]).
    /// Without it (not root, or no RT budget in the daemon's cgroup) the
    /// thread competes with the jobs it stops and periods may stretch when
    /// all CPUs are busy.
    pub fn is_realtime(&self) -> bool {
        self.shared.realtime.load(Ordering::SeqCst)
    }

    /// The cycle period.
    pub fn period(&self) -> Duration {
        Duration::from_nanos(self.shared.period_ns)
    }

    /// Registers (or updates) `job` with its processes and duty (see
    /// [`clamp_duty`]). Processes that are already gone are left out;
    /// returns how many were registered. Processes dropped from an existing
    /// job are SIGCONTed.
    pub fn set(&self, job: &str, pids: Vec<ProcessKey>, duty: f64) -> Result<usize> {
        let duty = clamp_duty(duty)?;
        let mut handles = Vec::new();
        for key in pids {
            if handles.iter().any(|h: &ProcHandle| h.key() == key) {
                continue;
            }
            match ProcHandle::open(key) {
                Ok(h) => handles.push(h),
                Err(Error::ProcessGone { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        // Journal BEFORE the thread can stop anything (and outside the
        // lock, so the fsync never delays the cycle).
        for h in &handles {
            let k = h.key();
            self.journal.record(Change::Stopped {
                pid: k.pid,
                start_time: k.start_time,
            })?;
        }
        let count = handles.len();
        let new_keys: Vec<ProcessKey> = handles.iter().map(ProcHandle::key).collect();
        let released: Vec<ProcessKey> = {
            let mut jobs = self.shared.jobs();
            let mut released = Vec::new();
            if let Some(old) = jobs.get_mut(job) {
                for p in &old.procs {
                    if !new_keys.contains(&p.key()) {
                        let _ = p.signal(libc::SIGCONT);
                    }
                }
                released = old
                    .keys
                    .iter()
                    .filter(|k| !new_keys.contains(k))
                    .copied()
                    .collect();
                old.keys = new_keys;
                old.procs = handles;
                old.duty = duty;
                if old.stopped && duty >= 1.0 {
                    old.signal(libc::SIGCONT);
                    old.stopped = false;
                }
            } else {
                jobs.insert(
                    job.to_string(),
                    Job {
                        keys: new_keys,
                        procs: handles,
                        duty,
                        stopped: false,
                    },
                );
            }
            self.shared.wake.notify_all();
            released
        };
        self.forget(&released);
        Ok(count)
    }

    /// Unregisters `job`, SIGCONTing its processes. Unknown jobs are a no-op.
    /// The journal keeps their `Stopped` records (a restore only SIGCONTs
    /// them again, which is harmless): a controller that throttles and
    /// relaxes a job every few milliseconds must not pay an fsync for each
    /// relax. Records go when the process exits (the daemon forgets them)
    /// or when the journal is restored.
    pub fn clear(&self, job: &str) -> Result<()> {
        let removed = self.shared.jobs().remove(job);
        if let Some(mut j) = removed {
            j.signal(libc::SIGCONT);
        }
        Ok(())
    }

    /// The registered jobs and their (clamped) duty.
    pub fn jobs(&self) -> Vec<(String, f64)> {
        let mut v: Vec<(String, f64)> = self
            .shared
            .jobs()
            .iter()
            .map(|(k, j)| (k.clone(), j.duty))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    fn forget_checked(&self, keys: &[ProcessKey]) -> Result<()> {
        for k in keys {
            self.journal.forget(&ChangeKey::Stopped {
                pid: k.pid,
                start_time: k.start_time,
            })?;
        }
        Ok(())
    }

    fn forget(&self, keys: &[ProcessKey]) {
        // Best effort: a failure leaves a harmless extra SIGCONT for the guard.
        let _ = self.forget_checked(keys);
    }

    /// Stops the thread and SIGCONTs every registered process.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        self.shared.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // Even if the thread panicked: continue everything we registered.
        let drained: Vec<Job> = self.shared.jobs().drain().map(|(_, j)| j).collect();
        let mut keys = Vec::new();
        for mut j in drained {
            j.signal(libc::SIGCONT);
            keys.extend(j.keys);
        }
        self.forget(&keys);
    }
}

impl Drop for DutyCycler {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The cycling thread.
fn run(shared: &Shared) {
    // Default timer slack (50 µs) would blur a 100 µs-scale schedule.
    // SAFETY: prctl with integer args affects only this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    let param = libc::sched_param {
        sched_priority: RT_PRIORITY,
    };
    // SAFETY: valid sched_param; pid 0 = this thread. Failure (EPERM) just
    // leaves the thread in the fair class.
    let rt = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0;
    shared.realtime.store(rt, Ordering::SeqCst);
    let period = shared.period_ns;
    let mut start = now_ns();
    while !shared.stop.load(Ordering::SeqCst) {
        // Start of a period: everything runs.
        let mut events: Vec<(u64, String)> = Vec::new();
        {
            let mut jobs = shared.jobs();
            for (name, job) in jobs.iter_mut() {
                if job.stopped {
                    job.signal(libc::SIGCONT);
                    job.stopped = false;
                }
                if job.duty < 1.0 && !job.procs.is_empty() {
                    events.push((
                        run_time(Duration::from_nanos(period), job.duty).as_nanos() as u64,
                        name.clone(),
                    ));
                }
            }
            if events.is_empty() {
                // Nothing to cycle: sleep until set() or stop() wakes us.
                let _ = shared
                    .wake
                    .wait_timeout(jobs, Duration::from_millis(100))
                    .map(|(g, _)| drop(g));
                start = now_ns();
                continue;
            }
        }
        events.sort();
        for (offset, name) in &events {
            sleep_until(start + offset);
            if shared.stop.load(Ordering::SeqCst) {
                return;
            }
            let mut jobs = shared.jobs();
            if let Some(job) = jobs.get_mut(name) {
                if job.duty < 1.0 && !job.stopped {
                    job.signal(libc::SIGSTOP);
                    job.stopped = true;
                }
            }
        }
        start += period;
        sleep_until(start);
        let now = now_ns();
        if now > start + period {
            start = now; // fell behind (e.g. preempted): skip, don't burst
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duty_clamping() {
        assert_eq!(clamp_duty(0.25).unwrap(), 0.25);
        assert_eq!(clamp_duty(0.0).unwrap(), MIN_DUTY);
        assert_eq!(clamp_duty(-3.0).unwrap(), MIN_DUTY);
        assert_eq!(clamp_duty(1.5).unwrap(), 1.0);
        assert_eq!(clamp_duty(f64::INFINITY).unwrap(), 1.0);
        assert!(clamp_duty(f64::NAN).is_err());
    }

    #[test]
    fn run_times() {
        assert_eq!(
            run_time(Duration::from_millis(1), 0.25),
            Duration::from_micros(250)
        );
        assert_eq!(
            run_time(Duration::from_millis(1), 2.0),
            Duration::from_millis(1)
        );
    }

    #[test]
    fn absolute_sleep_does_not_return_early() {
        let t0 = now_ns();
        sleep_until(t0 + 2_000_000);
        assert!(now_ns() >= t0 + 2_000_000);
        // A deadline in the past returns at once.
        sleep_until(t0);
    }

    #[test]
    fn period_limits() {
        let dir = crate::test_util::TempDir::new("duty-limits");
        let j = Arc::new(Journal::open(&dir.path().join("j")).unwrap());
        assert!(DutyCycler::start(Duration::from_micros(50), j.clone()).is_err());
        assert!(DutyCycler::start(Duration::from_secs(2), j.clone()).is_err());
        let c = DutyCycler::start(DEFAULT_PERIOD, j.clone()).unwrap();
        assert!(c.set("x", vec![], f64::NAN).is_err());
        // A gone process is left out, not an error.
        let gone = ProcessKey {
            pid: i32::MAX,
            start_time: 1,
        };
        assert_eq!(c.set("x", vec![gone], 0.5).unwrap(), 0);
        assert_eq!(c.jobs(), vec![("x".to_string(), 0.5)]);
        c.clear("x").unwrap();
        c.clear("unknown").unwrap();
        c.stop();
        assert!(j.pending().is_empty());
    }
}

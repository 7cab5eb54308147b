//! The fault sampler's thread, paced by the application's progress.
//!
//! The protection-fault profiler ([`crate::profiler`]) closes an interval
//! and arms `k` fresh pages per object at every *tick*. Ticking on the wall
//! clock makes the cost of a profiled iteration grow with the time the rank
//! waits for a core: with 4 ranks on 2 CPUs each rank runs about half the
//! time, so its sampler arms twice the pages per unit of the rank's work
//! (and faults on them), and spends its own `mprotect` CPU while its rank
//! is not even running, in the place of another rank. Measured on this
//! host (docs/notebook/unimem.md, "The profiled iteration at 4 ranks") the
//! sampled MG iteration cost about 10x a plain one at 4 ranks.
//!
//! NUMA balancing has the same problem and paces its hinting-fault scans by
//! the task's own CPU time, not the wall clock (`task_numa_work`, scheduled
//! from `task_tick_numa` once `se.sum_exec_runtime` has advanced by the scan
//! period; Linux `kernel/sched/fair.c`). [`Pacer`] does the same: the
//! sampler wakes every `tick` of wall time, but closes the interval and
//! arms afresh only once the profiled (application) thread has run `tick`
//! of CPU since the last arming. An interval then spans the same amount of
//! the application's work whatever the host's load, which is what the
//! estimator assumes (the interval short compared with the time between two
//! visits of one page, counted in the application's progress), and the
//! sampler costs a clock read while its rank waits for a core.
//!
//! Closing a profiled phase disarms every page (the driver takes the
//! phase's samples), so a phase shorter than a tick of the application's
//! CPU would start unarmed and stay so: the pacer also arms once at the
//! first wakeup after each phase close. Armings per profiled iteration are
//! then bounded by (phases + the iteration's CPU / tick) x objects x k,
//! whatever the time the rank spends waiting, where the wall clock gave
//! (the iteration's *wall* time / tick) x objects x k.

use crate::TierRuntime;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// What the sampler's clock is (`MEMTAMER_TIER_PACE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Pace {
    /// Arm at every `tick` of the application thread's CPU time (the
    /// default; wall time where that clock cannot be read).
    #[default]
    Cpu,
    /// Arm at every `tick` of wall time (the behaviour before pacing; for
    /// comparisons).
    Wall,
}

impl Pace {
    /// Parses `MEMTAMER_TIER_PACE`'s value (`cpu` or `wall`).
    pub fn parse(s: &str) -> Option<Pace> {
        match s.trim() {
            "cpu" | "" => Some(Pace::Cpu),
            "wall" => Some(Pace::Wall),
            _ => None,
        }
    }
}

/// When the sampler closes an interval (pure: fed the clock's readings
/// and the phase count).
#[derive(Clone, Debug, PartialEq)]
pub struct Pacer {
    tick_s: f64,
    /// The paced clock and the phase at the last arming.
    last: Option<(f64, u64)>,
}

impl Pacer {
    /// A pacer arming every `tick` of the clock it is fed.
    pub fn new(tick: Duration) -> Self {
        Pacer {
            tick_s: tick.as_secs_f64(),
            last: None,
        }
    }

    /// Whether the sampler should close the interval and arm afresh now,
    /// given the paced clock's reading `now` (seconds) and the count of
    /// phases closed so far (`phase`): the first call arms; later calls arm
    /// once `now` has advanced by a tick since the last arming, or when a
    /// phase was closed since (closing a phase disarms every page, so the
    /// next phase would otherwise run unsampled until a whole tick of the
    /// application's CPU has passed: MG's phases are shorter than that).
    /// A clock that goes backwards (another thread's clock re-read after an
    /// error) arms and restarts from `now`.
    pub fn due(&mut self, now: f64, phase: u64) -> bool {
        let due = match self.last {
            None => true,
            Some((last, p)) => p != phase || now - last >= self.tick_s || now < last,
        };
        if due {
            self.last = Some((now, phase));
        }
        due
    }
}

/// What a sampler thread did, for the report line (`mt_tier_finish`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SamplerReport {
    /// Times it woke.
    pub wakeups: u64,
    /// Times it closed an interval and armed fresh pages.
    pub ticks: u64,
    /// CPU seconds the sampler thread took (its `mprotect` calls).
    pub cpu_s: f64,
}

/// A CPU-time clock of the calling thread that another thread can read
/// (`pthread_getcpuclockid`); `None` where it cannot be had.
pub fn current_thread_cpu_clock() -> Option<libc::clockid_t> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: `pthread_self` is the calling thread; `id` is written by the call.
    let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
    (rc == 0 && read_clock(id).is_some()).then_some(id)
}

/// Seconds on clock `id`, or `None` if it cannot be read (its thread has
/// ended).
pub fn read_clock(id: libc::clockid_t) -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec the call writes.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return None;
    }
    Some(ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9)
}

/// The sampler thread's loop: every `tick` of wall time, `arm()` if the
/// paced clock (`clock`: the application thread's CPU clock; `None`: the
/// wall clock) has advanced a tick since the last arming or a phase was
/// closed since (`phases`, bumped by the driver; `None`: never); until
/// `stop`.
pub fn run(
    tick: Duration,
    clock: Option<libc::clockid_t>,
    phases: Option<&AtomicU64>,
    stop: &AtomicBool,
    mut arm: impl FnMut(),
) -> SamplerReport {
    let mut pacer = Pacer::new(tick);
    let mut rep = SamplerReport::default();
    let t0 = std::time::Instant::now();
    while !stop.load(Ordering::SeqCst) {
        rep.wakeups += 1;
        let now = clock
            .and_then(read_clock)
            .unwrap_or_else(|| t0.elapsed().as_secs_f64());
        let phase = phases.map_or(0, |p| p.load(Ordering::SeqCst));
        if pacer.due(now, phase) {
            arm();
            rep.ticks += 1;
        }
        std::thread::sleep(tick);
    }
    rep.cpu_s = crate::decision::thread_cpu_s();
    rep
}

/// A running sampler thread (the driver's, while it profiles).
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<SamplerReport>,
}

impl Sampler {
    /// Starts a thread that ticks `rt`'s profiler every `tick`, arming `k`
    /// pages per object, on clock `pace` ([`run`]); with [`Pace::Cpu`],
    /// paced by the *calling*
    /// thread's CPU clock (the application's: the driver starts profiling
    /// from it) and re-armed when `phases` moves. `None` if no thread
    /// could be started.
    pub fn start(
        rt: &Arc<TierRuntime>,
        tick: Duration,
        k: usize,
        pace: Pace,
        phases: &Arc<AtomicU64>,
    ) -> Option<Sampler> {
        let stop = Arc::new(AtomicBool::new(false));
        let (rt, s2) = (rt.clone(), stop.clone());
        let (clock, phases) = match pace {
            Pace::Cpu => (current_thread_cpu_clock(), Some(phases.clone())),
            Pace::Wall => (None, None),
        };
        let handle = std::thread::Builder::new()
            .name("mt-tier-sample".into())
            .spawn(move || {
                let rep = run(tick, clock, phases.as_deref(), &s2, || rt.profile_tick(k));
                rt.profile_tick(0);
                rep
            })
            .ok()?;
        Some(Sampler { stop, handle })
    }

    /// Stops the thread (it disarms every page) and returns what it did
    /// (`None` if it panicked).
    pub fn stop(self) -> Option<SamplerReport> {
        self.stop.store(true, Ordering::SeqCst);
        self.handle.join().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_reading_arms_then_every_tick_of_the_clock() {
        let mut p = Pacer::new(Duration::from_millis(1));
        assert!(p.due(5.0, 0));
        assert!(!p.due(5.0005, 0));
        assert!(p.due(5.001, 0));
        assert!(!p.due(5.0015, 0));
        assert!(p.due(5.0031, 0));
        // measured from the last arming, not from a fixed grid
        assert!(!p.due(5.0040, 0));
        assert!(p.due(5.0041, 0));
    }

    #[test]
    fn a_clock_that_stands_still_never_arms_again() {
        // the application thread waits for a core: no progress, no arming
        let mut p = Pacer::new(Duration::from_millis(1));
        assert!(p.due(1.0, 3));
        assert!((0..1000).all(|_| !p.due(1.0, 3)));
    }

    #[test]
    fn a_closed_phase_rearms_once_without_progress() {
        // the phase's close disarmed everything: the next phase is armed
        // at the next wakeup, once, even while the clock stands still
        let mut p = Pacer::new(Duration::from_millis(1));
        assert!(p.due(1.0, 0));
        assert!(!p.due(1.0002, 0));
        assert!(p.due(1.0003, 1));
        assert!(!p.due(1.0003, 1));
        assert!(!p.due(1.0012, 1));
        assert!(p.due(1.0013, 1));
        assert!(p.due(1.0013, 4));
    }

    #[test]
    fn half_the_progress_arms_half_as_often() {
        // Wall-clock wakeups every tick (1 s here: exact in binary); a rank
        // that gets half a core advances its CPU clock half a tick per
        // wakeup: half the armings of a rank with a core of its own, over
        // the same wall time.
        let count = |rate: f64| {
            let mut p = Pacer::new(Duration::from_secs(1));
            (0..1000).filter(|&i| p.due(i as f64 * rate, 0)).count()
        };
        assert_eq!(count(1.0), 1000);
        assert_eq!(count(0.5), 500);
    }

    #[test]
    fn a_clock_going_backwards_rearms() {
        let mut p = Pacer::new(Duration::from_millis(1));
        assert!(p.due(2.0, 0));
        assert!(p.due(1.0, 0));
        assert!(!p.due(1.0005, 0));
    }

    #[test]
    fn pace_parses_its_two_values_only() {
        assert_eq!(Pace::parse("cpu"), Some(Pace::Cpu));
        assert_eq!(Pace::parse(" wall "), Some(Pace::Wall));
        assert_eq!(Pace::parse(""), Some(Pace::Cpu));
        assert_eq!(Pace::parse("fast"), None);
    }

    #[test]
    fn the_calling_threads_cpu_clock_reads_and_advances() {
        let Some(id) = current_thread_cpu_clock() else {
            return; // no per-thread CPU clock: the sampler paces on the wall clock
        };
        let a = read_clock(id).unwrap_or(0.0);
        // work, not wall time: the thread's clock advances by what it ran
        let mut x = 0u64;
        for i in 0..50_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        let b = read_clock(id).unwrap_or(0.0);
        assert!(b > a, "{a} -> {b} after spinning ({x})");
    }
}

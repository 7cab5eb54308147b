//! Per-task counters (thesis §4.3.4: the complete-placement model's inputs
//! are a task's IPC and LLC miss rate). Each worker thread opens one perf
//! group of four events on itself (`memtamer_linux::perf_event`) the first
//! time it switches tasks, and reads it with one `read()` at every
//! `task_schedule` callback: the counts since the thread's previous
//! reading belong to the task that was running (the callback's prior
//! task), and the tracker sums them per task
//! ([`crate::tracker::Tracker::charge`]).
//!
//! Which switches read: with `MEMTAMER_TAHOE_RECORD` every one (the
//! recording keeps every instance's counts); otherwise only the intervals
//! of representatives, the only tasks whose counters the model uses
//! ([`track`] takes a baseline when one starts or resumes on a thread,
//! [`sample_tracked`] reads when it stops). A group read costs about 5 us
//! more than an empty system call on this VM (docs/tahoe.md), so reading
//! at every switch of every task costs the fine-grained programs several
//! percent while nothing but the recording reads the result.
//!
//! `MEMTAMER_TAHOE_COUNTERS=hw` (the default) counts instructions, cycles,
//! LLC references and misses; `sw` counts software stand-ins in the same
//! slots (task-clock, cpu-clock, page-faults, minor-faults), so the
//! pipeline runs on a host without a PMU; `off` reads nothing. Where the
//! events cannot be opened, [`probe`] says which and why once at start,
//! and the tool runs the PMU-free path.

use memtamer_linux::perf_event::{CountSpec, CounterGroup};
use memtamer_tahoe::counters::TaskCounts;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};

use crate::config::CounterSource;

/// The hardware group, in [`TaskCounts`] slot order.
pub const HW: [CountSpec; 4] = [
    CountSpec::INSTRUCTIONS,
    CountSpec::CYCLES,
    CountSpec::LLC_REFERENCES,
    CountSpec::LLC_MISSES,
];

/// The software stand-ins, in the same slots.
pub const SW: [CountSpec; 4] = [
    CountSpec::TASK_CLOCK,
    CountSpec::CPU_CLOCK,
    CountSpec::PAGE_FAULTS,
    CountSpec::MINOR_FAULTS,
];

/// 0: not counting; 1: hardware; 2: software (set once by [`probe`]).
static ACTIVE: AtomicU8 = AtomicU8::new(0);
/// Read at every switch (recording), not only around representatives.
static EVERY: AtomicBool = AtomicBool::new(false);
/// Worker threads whose group would not open although the probe's did.
static THREAD_FAILS: AtomicU64 = AtomicU64::new(0);

struct ThreadState {
    tried: bool,
    group: Option<CounterGroup>,
    last: [u64; 4],
    /// The task whose interval this thread is counting (0: none), when
    /// not every switch is read.
    tracked: u64,
}

thread_local! {
    static STATE: RefCell<ThreadState> = const {
        RefCell::new(ThreadState {
            tried: false,
            group: None,
            last: [0; 4],
            tracked: 0,
        })
    };
}

fn specs(active: u8) -> Option<&'static [CountSpec; 4]> {
    match active {
        1 => Some(&HW),
        2 => Some(&SW),
        _ => None,
    }
}

/// Opens `source`'s group on the calling thread (the OpenMP initial
/// thread, which is also a worker) and, if it opens, turns counting on for
/// every thread; `every`: read at every task switch (the recording), else
/// only around representatives. Err: the events that could not be opened,
/// with the OS's reasons, for the one message the tool prints.
pub fn probe(source: CounterSource, every: bool) -> Result<(), String> {
    let code = match source {
        CounterSource::Off => return Ok(()),
        CounterSource::Hw => 1,
        CounterSource::Sw => 2,
    };
    let Some(list) = specs(code) else {
        return Ok(());
    };
    let g = CounterGroup::open_thread(list).map_err(|e| e.to_string())?;
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.tried = true;
        s.group = Some(g);
        s.last = [0; 4];
    });
    EVERY.store(every, Ordering::Release);
    ACTIVE.store(code, Ordering::Release);
    Ok(())
}

/// Counting, and at every task switch: the shell calls [`sample`] at each
/// `task_schedule`; otherwise [`sample_tracked`] and [`track`].
pub fn every() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0 && EVERY.load(Ordering::Relaxed)
}

/// Counting only representatives: at a switch away from `prior`, the
/// counts of its interval if this thread was counting it (see [`track`]).
pub fn sample_tracked(prior: u64) -> Option<TaskCounts> {
    if prior == 0 || ACTIVE.load(Ordering::Relaxed) == 0 {
        return None;
    }
    let mine = STATE
        .try_with(|s| {
            let mut s = s.borrow_mut();
            let mine = s.tracked == prior;
            if mine {
                s.tracked = 0;
            }
            mine
        })
        .unwrap_or(false);
    if mine {
        sample()
    } else {
        None
    }
}

/// Representative `id` starts (or resumes) on this thread now: a baseline
/// reading, so that [`sample_tracked`] at its next switch gives its
/// interval's counts.
pub fn track(id: u64) {
    if ACTIVE.load(Ordering::Relaxed) == 0 || sample().is_none() {
        return;
    }
    let _ = STATE.try_with(|s| s.borrow_mut().tracked = id);
}

/// What is being counted: `hw`, `sw` or `off`.
pub fn active() -> &'static str {
    match ACTIVE.load(Ordering::Relaxed) {
        1 => "hw",
        2 => "sw",
        _ => "off",
    }
}

/// Worker threads that run without counters (their group would not open).
pub fn thread_fails() -> u64 {
    THREAD_FAILS.load(Ordering::Relaxed)
}

/// The counts on this thread since its previous call (one group `read()`),
/// None when not counting or the thread has no group. The first call on a
/// thread opens its group, whose counters start at zero.
pub fn sample() -> Option<TaskCounts> {
    let active = ACTIVE.load(Ordering::Relaxed);
    let list = specs(active)?;
    STATE
        .try_with(|s| {
            let mut s = s.borrow_mut();
            if !s.tried {
                s.tried = true;
                match CounterGroup::open_thread(list) {
                    Ok(g) => s.group = Some(g),
                    Err(_) => {
                        THREAD_FAILS.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            let mut now = [0u64; 4];
            s.group.as_ref()?.read(&mut now)?;
            let d = TaskCounts::between(&s.last, &now);
            s.last = now;
            Some(d)
        })
        .ok()
        .flatten()
}

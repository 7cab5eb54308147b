//! Per-page hotness of representatives (thesis §4.3.3: "profile one
//! representative task per type"): while a type's first instance runs, a
//! bounded, evenly spread sample of the pages of its dependence ranges is
//! armed with `memtamer_tier::pagesample` (protection faults, no PMU), a
//! ticker thread re-arms the touched pages every interval, and when the
//! task completes the counts (intervals in which each page was touched,
//! each unsampled page taking its nearest sampled neighbour's count) go to
//! `TypeProfile::from_samples`, whose hot ranges the planner re-bases onto
//! the siblings. Thin OS shell; the pure parts are
//! [`crate::tracker::sample_ranges`] and `pagesample::{stratified,
//! fill_nearest, Memory::armable}`.

use crate::tracker::sample_ranges;
use memtamer_tahoe::task::Task;
use memtamer_tier::pagesample::{self, PageSampler};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Page size the tool plans with (the planner's `PlanConfig::page`).
pub const PAGE: u64 = 4096;

/// How soon a pending representative is tried again.
const RETRY: Duration = Duration::from_micros(100);

/// Half-width of the window around the initial thread's control block that
/// is never armed (static TLS below it, `struct pthread` above it).
const TCB_WINDOW: usize = 64 << 10;

/// A started representative.
enum State {
    /// Its sample is armed.
    Armed(Armed),
    /// Nothing armable yet; `tid` runs it.
    Pending { tid: i32 },
}

struct Armed {
    sampler: PageSampler,
    /// Pages that get a count (every page of the objects).
    fill: Vec<Range<u64>>,
}

/// Totals for the closing line.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HotStats {
    /// Representatives whose counts became their profile.
    pub sampled: u64,
    /// Representatives that fell back to the uniform profile (nothing
    /// armable, or no touch seen).
    pub uniform: u64,
    /// Page armings (first arming plus re-armings).
    pub armings: u64,
    /// Sampled touches by the representatives' own threads.
    pub hits: u64,
    /// Faults by other threads on armed pages (given back, not counted).
    pub foreign: u64,
}

/// The sampler state of the tool.
pub struct Hot {
    cap: usize,
    /// Never armed: the initial thread's control block and the static TLS
    /// below it (see `Hot::new`).
    refuse: Range<usize>,
    interval: Duration,
    /// Representatives started and not finished.
    armed: Mutex<HashMap<u64, State>>,
    /// Entries in `armed`: completions of ordinary tasks check this
    /// instead of taking the lock the ticker holds while it re-arms.
    live: AtomicUsize,
    cv: Condvar,
    stop: AtomicBool,
    sampled: AtomicU64,
    uniform: AtomicU64,
    armings: AtomicU64,
    hits: AtomicU64,
    foreign: AtomicU64,
}

impl Hot {
    /// At most `cap` pages armed per representative, re-armed every
    /// `interval_us` microseconds. Call on the initial thread (the tool's
    /// start): its control block (`pthread_self`, with the static TLS
    /// below it and the rseq area and robust-futex list in it, which the
    /// kernel writes) may lie in an anonymous mapping next to program data,
    /// so the 64 KiB around it are never armed. Worker threads' control
    /// blocks are on their stacks, which are never armed.
    pub fn new(cap: usize, interval_us: u64) -> Self {
        // SAFETY: pthread_self has no preconditions.
        let tcb = unsafe { libc::pthread_self() } as usize;
        Hot {
            cap,
            refuse: tcb.saturating_sub(TCB_WINDOW)..tcb.saturating_add(TCB_WINDOW),
            interval: Duration::from_micros(interval_us),
            armed: Mutex::new(HashMap::new()),
            live: AtomicUsize::new(0),
            cv: Condvar::new(),
            stop: AtomicBool::new(false),
            sampled: AtomicU64::new(0),
            uniform: AtomicU64::new(0),
            armings: AtomicU64::new(0),
            hits: AtomicU64::new(0),
            foreign: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, State>> {
        self.armed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Arms a sample of `rep`'s pages for the calling thread (the one
    /// about to run it). When nothing can be armed yet, because the
    /// representative started before its siblings' dependence addresses
    /// were seen, so its objects' extents are still unknown (one address,
    /// no gap to infer a length from), it stays pending and the ticker
    /// tries again each interval with the extents then known
    /// ([`Hot::tick_loop`]'s `resolve`).
    pub fn start(&self, rep: &Task) {
        if self.lock().contains_key(&rep.id) {
            return; // resumed after a task switch: armed at its start
        }
        let tid = pagesample::current_tid();
        let st = match self.arm_for(rep, tid) {
            Some(a) => State::Armed(a),
            None => State::Pending { tid },
        };
        let mut g = self.lock();
        g.insert(rep.id, st);
        self.live.store(g.len(), Ordering::Release);
        drop(g);
        self.cv.notify_all();
    }

    /// Arms `rep`'s sample for thread `tid` (None: nothing armable).
    fn arm_for(&self, rep: &Task, tid: i32) -> Option<Armed> {
        let mut mem = pagesample::Memory::read().ok()?;
        mem.refuse(self.refuse.clone());
        // An object's extent is inferred (gap to the next dependence
        // address): it cannot reach past the mapping its first byte is in.
        let mut clipped = rep.clone();
        for o in &mut clipped.objects {
            o.len = match mem.mapping(o.addr as usize) {
                Some(m) => o.len.min(m.range.end as u64 - o.addr),
                None => 0,
            };
        }
        let (arm, _) = sample_ranges(&clipped, PAGE);
        let (_, fill) = sample_ranges(rep, PAGE);
        let pages = pagesample::stratified(&arm, self.cap, rep.id);
        if pages.is_empty() {
            return None;
        }
        match PageSampler::arm(&pages, tid, &mem, PAGE as usize) {
            Ok(s) if !s.is_empty() => Some(Armed { sampler: s, fill }),
            Ok(_) => None,
            Err(e) => {
                eprintln!("memtamer-tahoe: page sampling unavailable ({e})");
                None
            }
        }
    }

    /// Gives the representative `id`'s pages back and returns its per-page
    /// counts (`None`: not sampled, or no touch seen: uniform profile).
    pub fn finish(&self, id: u64) -> Option<Vec<(u64, f64)>> {
        if self.live.load(Ordering::Acquire) == 0 {
            return None;
        }
        let a = {
            let mut g = self.lock();
            let a = g.remove(&id);
            self.live.store(g.len(), Ordering::Release);
            match a? {
                State::Armed(a) => a,
                State::Pending { .. } => {
                    self.uniform.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            }
        };
        let c = a.sampler.finish();
        self.armings.fetch_add(c.armings, Ordering::Relaxed);
        self.foreign.fetch_add(c.foreign, Ordering::Relaxed);
        let hits: f64 = c.pages.values().sum();
        self.hits.fetch_add(hits as u64, Ordering::Relaxed);
        if hits <= 0.0 {
            self.uniform.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        self.sampled.fetch_add(1, Ordering::Relaxed);
        Some(pagesample::fill_nearest(&a.fill, &c.pages))
    }

    /// The ticker: while some representative is started, every interval
    /// re-arms touched pages and tries the pending ones again with the
    /// task as `resolve` returns it now (the tracker's current extents);
    /// sleeps on the condition variable otherwise. Returns after
    /// [`Hot::shutdown`].
    pub fn tick_loop(&self, resolve: impl Fn(u64) -> Option<Task>) {
        let mut g = self.lock();
        let mut last = Instant::now();
        while !self.stop.load(Ordering::Acquire) {
            if g.is_empty() {
                g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // Pending representatives are retried soon (a task of a
            // millisecond is over after one interval); re-arming keeps to
            // the interval.
            let any_pending = g.values().any(|st| matches!(st, State::Pending { .. }));
            let wait = if any_pending {
                self.interval.min(RETRY)
            } else {
                self.interval.saturating_sub(last.elapsed())
            };
            let (g2, _) = self
                .cv
                .wait_timeout(g, wait)
                .unwrap_or_else(|e| e.into_inner());
            g = g2;
            let rearm = last.elapsed() >= self.interval;
            if rearm {
                last = Instant::now();
            }
            let mut pending = Vec::new();
            for (&id, st) in g.iter_mut() {
                match st {
                    State::Armed(a) if rearm => {
                        a.sampler.rearm();
                    }
                    State::Armed(_) => {}
                    State::Pending { tid } => pending.push((id, *tid)),
                }
            }
            if pending.is_empty() {
                continue;
            }
            // Resolve and arm without the lock (resolve takes the
            // tracker's); a representative that finished meanwhile is
            // gone from the map, and what was armed for it is given back.
            drop(g);
            let armed: Vec<(u64, Armed)> = pending
                .into_iter()
                .filter_map(|(id, tid)| Some((id, self.arm_for(&resolve(id)?, tid)?)))
                .collect();
            g = self.lock();
            for (id, a) in armed {
                match g.get_mut(&id) {
                    Some(st @ State::Pending { .. }) => *st = State::Armed(a),
                    _ => drop(a.sampler.finish()),
                }
            }
        }
    }

    /// Stops the ticker and gives every page still armed back (tool
    /// shutdown before a representative completed).
    pub fn shutdown(&self) {
        self.stop.store(true, Ordering::Release);
        let left: Vec<Armed> = {
            let mut g = self.lock();
            self.live.store(0, Ordering::Release);
            g.drain()
                .filter_map(|(_, st)| match st {
                    State::Armed(a) => Some(a),
                    State::Pending { .. } => None,
                })
                .collect()
        };
        self.cv.notify_all();
        for a in left {
            let c = a.sampler.finish();
            self.armings.fetch_add(c.armings, Ordering::Relaxed);
        }
    }

    /// Totals so far.
    pub fn stats(&self) -> HotStats {
        HotStats {
            sampled: self.sampled.load(Ordering::Relaxed),
            uniform: self.uniform.load(Ordering::Relaxed),
            armings: self.armings.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            foreign: self.foreign.load(Ordering::Relaxed),
        }
    }
}

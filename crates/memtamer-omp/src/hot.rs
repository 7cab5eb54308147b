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
//! fill_nearest, parse_maps}`.

use crate::tracker::sample_ranges;
use memtamer_tahoe::task::Task;
use memtamer_tier::pagesample::{self, PageSampler};
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Page size the tool plans with (the planner's `PlanConfig::page`).
pub const PAGE: u64 = 4096;

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
    interval: Duration,
    armed: Mutex<HashMap<u64, Armed>>,
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
    /// `interval_us` microseconds.
    pub fn new(cap: usize, interval_us: u64) -> Self {
        Hot {
            cap,
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

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, Armed>> {
        self.armed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Arms a sample of `rep`'s pages for the calling thread (the one
    /// about to run it). Nothing armable: no entry, the profile will be
    /// uniform.
    pub fn start(&self, rep: &Task) {
        if self.lock().contains_key(&rep.id) {
            return; // resumed after a task switch: armed at its start
        }
        let (arm, fill) = sample_ranges(rep, PAGE);
        let pages = pagesample::stratified(&arm, self.cap, rep.id);
        let maps = match std::fs::read_to_string("/proc/self/maps") {
            Ok(t) if !pages.is_empty() => pagesample::parse_maps(&t),
            _ => Vec::new(),
        };
        let tid = pagesample::current_tid();
        match PageSampler::arm(&pages, tid, &maps, PAGE as usize) {
            Ok(s) if !s.is_empty() => {
                let mut g = self.lock();
                g.insert(rep.id, Armed { sampler: s, fill });
                self.live.store(g.len(), Ordering::Release);
                drop(g);
                self.cv.notify_all();
                return;
            }
            Ok(_) => {}
            Err(e) => eprintln!("memtamer-tahoe: page sampling unavailable ({e})"),
        }
        self.uniform.fetch_add(1, Ordering::Relaxed);
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
            a?
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

    /// The ticker: while some representative is armed, re-arms touched
    /// pages every interval; sleeps on the condition variable otherwise.
    /// Returns after [`Hot::shutdown`].
    pub fn tick_loop(&self) {
        let mut g = self.lock();
        while !self.stop.load(Ordering::Acquire) {
            if g.is_empty() {
                g = self.cv.wait(g).unwrap_or_else(|e| e.into_inner());
                continue;
            }
            let (g2, _) = self
                .cv
                .wait_timeout(g, self.interval)
                .unwrap_or_else(|e| e.into_inner());
            g = g2;
            for a in g.values_mut() {
                a.sampler.rearm();
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
            g.drain().map(|(_, a)| a).collect()
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

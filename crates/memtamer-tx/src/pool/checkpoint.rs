//! Taking incremental checkpoints of the lookup table (thesis §5.4.6) and
//! logging segment fetches (CHKP-diff, §5.4.1). Format in `chkp`.
//!
//! A checkpoint holds every TxState slot, so no transaction runs ("pause
//! transactions"), then:
//! 1. runs the GC step on every slot (freed copies go to the recycle list;
//!    their headers stay valid but superseded, see `Pool::gc`);
//! 2. returns the slots' portions to the global free list, so every later
//!    allocation fetches from it and is logged;
//! 3. rewrites the CHKP lines of the table pages written since the last
//!    checkpoint (write-protection tracking, `dirty`), each compared first
//!    and written only if it changed; flush, fence;
//! 4. persists the record of epoch e+1; fetches are logged in log (e+1) % 2.
//!
//! A crash at any point leaves a usable checkpoint: until step 4 the record
//! of epoch e and its log are intact, and CHKP lines already rewritten hold
//! locations that are either inside an extent logged since epoch e (recovery
//! scans those and ignores CHKP there) or unchanged; a location CHKP forgets
//! belonged to a superseded copy, whose successor is in a logged extent
//! (`tests/crash_states.rs` checks this at crash points inside checkpoints).
//! A deleted id's entry holds its deletion record (the table's `old` until
//! the id is reused), so the record hides the id's older copies on the
//! checkpoint path too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::chkp::{self, Record, OVERFLOW};
use crate::dirty::{DirtyTracker, TrackMode};
use crate::error::TxError;
use crate::layout::{CHKP_PER_LINE, LINE};
use crate::pool::{lock, Pool};
use crate::region::PersistStats;
use crate::table::Table;

/// Underutilised regions one pass of `run_checkpointer` moves at most (a
/// bound on the work done between two checkpoints).
pub const DEFRAG_REGIONS_PER_PASS: usize = 16;
/// Least time between two defragmentation passes of `run_checkpointer`
/// (a pass reads every live object's header to find sparse regions).
pub const DEFRAG_MIN_GAP: Duration = Duration::from_secs(1);

/// Volatile checkpoint state of an open pool.
pub(crate) struct ChkpState {
    /// Set while a checkpoint collects the slots: `begin` waits, so the
    /// checkpoint is not starved by transactions re-taking their slots.
    pub pausing: AtomicBool,
    pub log: Mutex<LogState>,
    pub tracker: DirtyTracker,
    pub totals: Mutex<CheckpointStats>,
}

/// Where the current epoch's log stands.
#[derive(Clone, Debug, Default)]
pub(crate) struct LogState {
    /// Epoch of the record in force.
    pub epoch: u64,
    /// Next log index.
    pub next: u32,
    /// The log filled up: fetches are no longer logged, recovery will scan
    /// everything until the next checkpoint.
    pub overflow: bool,
    /// ids CHKP covers.
    pub nids: u32,
    /// The next checkpoint compares every line (after open, or when the
    /// tracker lost track).
    pub full: bool,
    /// The next checkpoint starts over: zero the new epoch's log first.
    pub reset: bool,
}

/// What one checkpoint did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointReport {
    /// Epoch of the record written.
    pub epoch: u64,
    /// Whether every CHKP line was compared (no dirty-page information).
    pub full: bool,
    /// Table pages the write protection reported written.
    pub dirty_pages: u64,
    /// CHKP lines compared.
    pub lines_compared: u64,
    /// CHKP lines rewritten (changed).
    pub lines_written: u64,
    /// Wall time with transactions paused, nanoseconds.
    pub pause_ns: u64,
}

/// Cumulative checkpoint counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// Checkpoints taken.
    pub count: u64,
    /// CHKP lines rewritten in all.
    pub lines_written: u64,
    /// Pause time in all, nanoseconds.
    pub pause_ns: u64,
    /// Segment fetches logged.
    pub fetches_logged: u64,
    /// The last checkpoint.
    pub last: Option<CheckpointReport>,
}

impl ChkpState {
    pub(crate) fn new(tracker: DirtyTracker, log: LogState) -> ChkpState {
        ChkpState {
            pausing: AtomicBool::new(false),
            log: Mutex::new(log),
            tracker,
            totals: Mutex::new(CheckpointStats::default()),
        }
    }
}

impl Pool {
    /// Logs that `start..start+len` was taken from the global free list
    /// (CHKP-diff), persisted before any block in it is written.
    pub(crate) fn log_fetch(&self, start: u32, len: u32, st: &mut PersistStats) {
        self.log_fetches(&[(start, len)], st);
    }

    /// Logs several fetched extents at once: consecutive entries, one flush
    /// of their range and one fence (a refill that takes several extents
    /// pays one fence, not one each). A crash before the fence can persist a
    /// later entry without an earlier one; recovery then sees a damaged log
    /// and takes the full scan (safe), since none of the extents was used.
    pub(crate) fn log_fetches(&self, ext: &[(u32, u32)], st: &mut PersistStats) {
        let mut g = lock(&self.chkp.log);
        if g.overflow || ext.is_empty() {
            return;
        }
        let h = &self.hdr;
        let (mut lo, mut hi, mut logged) = (usize::MAX, 0usize, 0u64);
        for &(start, len) in ext {
            if g.overflow {
                break;
            }
            let (s, n) = if g.next + 1 >= h.log_cap {
                g.overflow = true;
                (OVERFLOW, 0)
            } else {
                (start, len)
            };
            let off = h.log_off(g.epoch, g.next);
            self.region
                .write(off, &chkp::encode_entry(h.salt, g.epoch, g.next, s, n));
            lo = lo.min(off);
            hi = hi.max(off + 16);
            g.next += 1;
            logged += 1;
        }
        if !self.faults.skip_log_persist.load(Ordering::Relaxed) {
            self.region.persist(lo, hi - lo, st);
        }
        drop(g);
        lock(&self.chkp.totals).fetches_logged += logged;
    }

    /// How the checkpoint finds changed table pages.
    pub fn checkpoint_tracking(&self) -> &TrackMode {
        self.chkp.tracker.mode()
    }

    /// Checkpoint counters so far.
    pub fn checkpoint_stats(&self) -> CheckpointStats {
        lock(&self.chkp.totals).clone()
    }

    /// Takes an incremental checkpoint of the lookup table (see the module
    /// doc). Pauses transactions while it runs; `TxError::Nested` if called
    /// inside a transaction of this thread.
    pub fn checkpoint(&self) -> Result<CheckpointReport, TxError> {
        if crate::pool::in_tx() {
            return Err(TxError::Nested);
        }
        let t0 = Instant::now();
        // pause transactions (thesis §5.4.6 step 1): new ones wait in begin
        self.chkp.pausing.store(true, Ordering::SeqCst);
        let mut guards: Vec<_> = self.slots.iter().map(lock).collect();
        self.chkp.pausing.store(false, Ordering::SeqCst);
        let mut log = lock(&self.chkp.log);
        let mut st = PersistStats::default();
        // 1. freed copies to the recycle list
        for g in guards.iter_mut() {
            self.gc(g);
        }
        // 2. every later allocation fetches from the global list
        {
            let mut global = lock(&self.global);
            for g in guards.iter_mut() {
                g.portion.drain_into(&mut global);
            }
        }
        // 3. changed CHKP lines
        let h = &self.hdr;
        let nids = self
            .next_id
            .load(Ordering::SeqCst)
            .min(self.table.cap())
            .min(h.chkp_lines.saturating_mul(CHKP_PER_LINE));
        let nlines_chkp = nids.div_ceil(CHKP_PER_LINE);
        let dirty = self.chkp.tracker.take();
        let mut rep = CheckpointReport {
            epoch: if log.reset {
                log.epoch + 2
            } else {
                log.epoch + 1
            },
            full: log.full || dirty.is_none(),
            ..CheckpointReport::default()
        };
        let mut todo: Vec<u32> = Vec::new();
        if rep.full {
            todo.extend(0..nlines_chkp);
        } else {
            let esz = Table::RAW_BYTES_PER_ID;
            for (a, b) in dirty.iter().flatten() {
                rep.dirty_pages += ((b - a) / 4096) as u64;
                let (id0, id1) = ((a / esz) as u32, (b / esz) as u32);
                let (l0, l1) = (id0 / CHKP_PER_LINE, id1.div_ceil(CHKP_PER_LINE));
                todo.extend(l0..l1.min(nlines_chkp));
            }
            // ids new since the last checkpoint (their pages are dirty too)
            todo.extend(log.nids.min(nids) / CHKP_PER_LINE..nlines_chkp);
            todo.sort_unstable();
            todo.dedup();
        }
        for l in todo {
            let mut locs = [0u32; CHKP_PER_LINE as usize];
            for (i, v) in locs.iter_mut().enumerate() {
                let id = l * CHKP_PER_LINE + i as u32;
                if id < nids {
                    *v = self.table.get(id).map(|e| e.snap().old).unwrap_or(0);
                }
            }
            let b = chkp::encode_line(h.salt, l, &locs);
            let off = h.chkp_line_off(l);
            rep.lines_compared += 1;
            if self.region.bytes(off, LINE) != b {
                self.region.write(off, &b);
                self.region.flush(off, LINE, &mut st);
                rep.lines_written += 1;
            }
        }
        if log.reset {
            let z = [0u8; 16];
            for i in 0..h.log_cap {
                let off = h.log_off(rep.epoch, i);
                if self.region.bytes(off, 16) != z {
                    self.region.write(off, &z);
                    self.region.flush(off, 16, &mut st);
                }
            }
        }
        if !self.faults.skip_chkp_fence.load(Ordering::Relaxed) {
            self.region.fence(&mut st);
        }
        // 4. the record commits the checkpoint
        let rec = Record {
            epoch: rep.epoch,
            clock: self.clock.load(Ordering::SeqCst),
            nids,
        };
        let off = h.record_off(rec.epoch);
        self.region.write(off, &chkp::encode_record(h.salt, &rec));
        self.region.persist(off, LINE, &mut st);
        *log = LogState {
            epoch: rec.epoch,
            next: 0,
            overflow: false,
            nids,
            full: false,
            reset: false,
        };
        drop(log);
        drop(guards);
        self.add_totals(&mut st, false, false, false);
        rep.pause_ns = t0.elapsed().as_nanos() as u64;
        let mut t = lock(&self.chkp.totals);
        t.count += 1;
        t.lines_written += rep.lines_written;
        t.pause_ns += rep.pause_ns;
        t.last = Some(rep.clone());
        Ok(rep)
    }

    /// Switches the online defragmentation of `run_checkpointer` on or off
    /// (`PoolOptions::defrag` sets it at open).
    pub fn set_defrag(&self, on: bool) {
        self.defrag_on.store(on, Ordering::Relaxed);
    }

    /// Checkpoints every `every` until `stop` is set (the thesis's
    /// checkpoint thread, 30 s in its evaluation); with
    /// `PoolOptions::defrag` on, a defragmentation pass follows each one.
    /// Run it on a thread of your own, e.g. in `std::thread::scope`.
    pub fn run_checkpointer(&self, every: Duration, stop: &AtomicBool) {
        let step = Duration::from_millis(10).min(every);
        let mut next = Instant::now() + every;
        let mut last_defrag: Option<Instant> = None;
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(step);
            if Instant::now() < next {
                continue;
            }
            let _ = self.checkpoint();
            if self.defrag_on.load(Ordering::Relaxed)
                && last_defrag.is_none_or(|t| t.elapsed() >= DEFRAG_MIN_GAP)
            {
                let _ = self.defrag(DEFRAG_REGIONS_PER_PASS);
                last_defrag = Some(Instant::now());
            }
            next = Instant::now() + every;
        }
    }
}

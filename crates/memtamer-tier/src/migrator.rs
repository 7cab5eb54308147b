//! The helper thread that moves objects while the application computes.
//!
//! As in the thesis prototype (§3.5), the main thread only enqueues requests
//! into a FIFO; the helper copies and marks a request done when its copy is
//! complete; at a phase start the main thread waits only for the moves that
//! phase needs ([`Migrator::wait`]). Unlike the prototype, the copy really
//! overlaps with computation: the time the application is *exposed* to a
//! move is only (a) its waits here and (b) writes that hit the object while
//! it is write-protected (counted by the fault handler). Everything else of
//! the copy time was overlapped.

use crate::guard::SLOTS;
use crate::registry::migrate;
use crate::unimem::model::Platform;
use crate::{Shared, Tier, TierError};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

/// The completed moves towards one tier: the unimem model prices a
/// promotion at `Platform::copy_bw` and an eviction at `Platform::evict_bw`
/// (Eq. 3.3 per direction, docs/notebook/unimem.md "A copy bandwidth per
/// direction"), so the runtime measures each on its own moves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DirectionStats {
    /// Completed moves in this direction.
    pub moves: u64,
    /// Bytes they copied.
    pub bytes: u64,
    /// Nanoseconds they spent copying (write-protect to remap), summed.
    pub copy_ns: u64,
}

impl DirectionStats {
    /// The measured copy bandwidth, bytes/s: Eq. 3.3's `mem_copy_bw` as
    /// `data_size / copy time`. `None` without a sample (no bytes, or no
    /// time measured), where the caller keeps the bandwidth it had.
    pub fn bandwidth(&self) -> Option<f64> {
        (self.bytes > 0 && self.copy_ns > 0)
            .then(|| self.bytes as f64 / (self.copy_ns as f64 * 1e-9))
    }
}

/// Totals over every move the helper (or a synchronous call) made.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MigrationStats {
    /// Completed moves.
    pub moves: u64,
    /// Moves that failed and were rolled back (data kept in the old tier).
    pub failed: u64,
    /// Bytes copied by completed moves.
    pub bytes_moved: u64,
    /// Nanoseconds spent copying (write-protect to remap), summed.
    pub copy_ns: u64,
    /// The completed moves to DRAM (promotions), part of the totals above.
    pub to_dram: DirectionStats,
    /// The completed moves to the slow tier (evictions), part of the
    /// totals above.
    pub to_slow: DirectionStats,
    /// Nanoseconds application threads waited in [`Migrator::wait`].
    pub wait_ns: u64,
    /// Nanoseconds writers were blocked by write protection during copies.
    pub fault_blocked_ns: u64,
}

impl MigrationStats {
    /// Counts one completed move of `bytes` towards `to` that copied for
    /// `copy_ns`: in the totals and in its direction.
    pub fn record(&mut self, bytes: u64, copy_ns: u64, to: Tier) {
        self.moves += 1;
        self.bytes_moved += bytes;
        self.copy_ns += copy_ns;
        let d = match to {
            Tier::Dram => &mut self.to_dram,
            Tier::Slow => &mut self.to_slow,
        };
        d.moves += 1;
        d.bytes += bytes;
        d.copy_ns += copy_ns;
    }

    /// `p` with the copy bandwidths measured on these moves: promotions
    /// set `copy_bw`, evictions `evict_bw` (Eq. 3.3 per direction). A
    /// direction without a sample ([`DirectionStats::bandwidth`]) takes
    /// the other's measurement (the thesis's single `mem_copy_bw`, as the
    /// runtime did before it split its stats); with neither, `p` is kept.
    /// The helper may share its core with the ranks, so what it measured
    /// replaces what was configured.
    pub fn measured_platform(&self, p: &Platform) -> Platform {
        match (self.to_dram.bandwidth(), self.to_slow.bandwidth()) {
            (Some(up), Some(down)) => Platform {
                copy_bw: up,
                evict_bw: down,
                ..p.clone()
            },
            (Some(bw), None) | (None, Some(bw)) => p.with_copy_bw(bw),
            (None, None) => p.clone(),
        }
    }

    /// Whether a direction measured copies slower than `factor` times the
    /// bandwidth `used` assumed for it (promotions against `copy_bw`,
    /// evictions against `evict_bw`): the driver then decides again with
    /// the measured bandwidths. A direction without a sample never is.
    pub fn slower_than(&self, used: &Platform, factor: f64) -> bool {
        let slow = |d: &DirectionStats, bw: f64| d.bandwidth().is_some_and(|m| m < factor * bw);
        slow(&self.to_dram, used.copy_bw) || slow(&self.to_slow, used.evict_bw)
    }

    /// The per-direction part of `mt_tier_finish`'s report line:
    /// `promoted N promoted_bytes B promote_ms T promote_gbs G evicted N
    /// evicted_bytes B evict_ms T evict_gbs G` (`G` = bytes / copy time in
    /// GB/s, `-` without a sample). Key-value tokens whose names no older
    /// token has, so scripts that pick `moves` / `bytes_moved` out of the
    /// line (mpi/run.sh, mpi/hpcc.sh) read it as before.
    pub fn direction_report(&self) -> String {
        let gbs = |d: &DirectionStats| {
            d.bandwidth()
                .map_or("-".into(), |b| format!("{:.3}", b / 1e9))
        };
        format!(
            "promoted {} promoted_bytes {} promote_ms {:.3} promote_gbs {} evicted {} evicted_bytes {} evict_ms {:.3} evict_gbs {}",
            self.to_dram.moves,
            self.to_dram.bytes,
            self.to_dram.copy_ns as f64 / 1e6,
            gbs(&self.to_dram),
            self.to_slow.moves,
            self.to_slow.bytes,
            self.to_slow.copy_ns as f64 / 1e6,
            gbs(&self.to_slow),
        )
    }

    /// Copy time the application waited for: waits plus blocked writes.
    pub fn exposed_ns(&self) -> u64 {
        self.wait_ns + self.fault_blocked_ns
    }

    /// Copy time hidden behind computation.
    pub fn overlapped_ns(&self) -> u64 {
        self.copy_ns.saturating_sub(self.exposed_ns())
    }

    /// Fraction of copy time overlapped (1.0 when nothing was copied).
    pub fn overlapped_fraction(&self) -> f64 {
        if self.copy_ns == 0 {
            1.0
        } else {
            self.overlapped_ns() as f64 / self.copy_ns as f64
        }
    }
}

#[derive(Default)]
struct State {
    /// Requests not yet done, per object address.
    pending: BTreeMap<usize, u32>,
    stats: MigrationStats,
    /// Last error per object (so a failed prefetch is visible, not silent).
    errors: BTreeMap<usize, String>,
    /// Set by [`Migrator::shutdown`]: requests still queued are dropped.
    closing: bool,
    /// Requests dropped unstarted because of `closing`.
    cancelled: u64,
}

impl State {
    /// One request of `addr` is done (moved, failed or cancelled).
    fn done(&mut self, addr: usize) {
        if let Some(n) = self.pending.get_mut(&addr) {
            *n -= 1;
            if *n == 0 {
                self.pending.remove(&addr);
            }
        }
    }
}

pub(crate) struct Inner {
    state: Mutex<State>,
    done: Condvar,
    /// Test hook: the helper takes this lock after it has dequeued a
    /// request and decided to run it, so a test can hold a move "in
    /// flight" for as long as it needs (no timing involved).
    #[cfg(test)]
    pub(crate) gate: Mutex<()>,
    /// Test hook: requests the helper has decided to run.
    #[cfg(test)]
    pub(crate) started: std::sync::atomic::AtomicU64,
}

/// The helper thread and its queue.
pub struct Migrator {
    tx: Option<Sender<(usize, Tier)>>,
    pub(crate) inner: Arc<Inner>,
    handle: Option<JoinHandle<()>>,
}

impl Migrator {
    /// Starts the helper thread for `shared`'s registry.
    pub(crate) fn start(shared: Arc<Shared>) -> Result<Self, TierError> {
        let inner = Arc::new(Inner {
            state: Mutex::new(State::default()),
            done: Condvar::new(),
            #[cfg(test)]
            gate: Mutex::new(()),
            #[cfg(test)]
            started: std::sync::atomic::AtomicU64::new(0),
        });
        let (tx, rx) = channel::<(usize, Tier)>();
        let inner2 = inner.clone();
        let handle = std::thread::Builder::new()
            .name("mt-tier-migrate".into())
            .spawn(move || {
                for (addr, to) in rx {
                    {
                        let mut st = inner2.state.lock().unwrap_or_else(|e| e.into_inner());
                        if st.closing {
                            st.cancelled += 1;
                            st.done(addr);
                            inner2.done.notify_all();
                            continue;
                        }
                    }
                    #[cfg(test)]
                    let _gate = {
                        inner2.started.fetch_add(1, SeqCst);
                        inner2.gate.lock().unwrap_or_else(|e| e.into_inner())
                    };
                    let r = migrate(&shared, addr, to);
                    let blocked = {
                        let mut reg = shared.lock();
                        let b = reg
                            .objects
                            .get(&addr)
                            .map(|o| SLOTS[o.slot].blocked_ns.swap(0, SeqCst))
                            .unwrap_or(0);
                        reg.add_exposed(addr, b);
                        b
                    };
                    let mut st = inner2.state.lock().unwrap_or_else(|e| e.into_inner());
                    st.stats.fault_blocked_ns += blocked;
                    match r {
                        Ok(rep) => {
                            st.stats.record(rep.bytes as u64, rep.copy_ns, rep.to);
                            st.errors.remove(&addr);
                        }
                        // Already there is not a failure: the plan raced a sync move.
                        Err(TierError::AlreadyThere { .. }) => {}
                        Err(e) => {
                            st.stats.failed += 1;
                            st.errors.insert(addr, e.to_string());
                        }
                    }
                    st.done(addr);
                    inner2.done.notify_all();
                }
            })
            .map_err(|e| TierError::Os {
                what: "spawn migration helper thread".into(),
                source: e,
            })?;
        Ok(Migrator {
            tx: Some(tx),
            inner,
            handle: Some(handle),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.inner.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a move of the object at `addr` to `to`; returns at once.
    pub fn request(&self, addr: usize, to: Tier) -> Result<(), TierError> {
        let tx = self.tx.as_ref().ok_or(TierError::HelperGone)?;
        *self.state().pending.entry(addr).or_insert(0) += 1;
        tx.send((addr, to)).map_err(|_| TierError::HelperGone)
    }

    /// Blocks until every queued move of `addr` is done; the wait counts as
    /// exposed time. Returns the last error of that object's moves, if any.
    pub fn wait(&self, addr: usize) -> Result<(), String> {
        self.wait_timed(addr).1
    }

    /// [`Migrator::wait`], also returning the nanoseconds waited (0 when
    /// nothing of `addr` was queued), so the caller can charge the object.
    pub(crate) fn wait_timed(&self, addr: usize) -> (u64, Result<(), String>) {
        let t0 = Instant::now();
        let mut st = self.state();
        let waited = st.pending.contains_key(&addr);
        while st.pending.contains_key(&addr) {
            st = self.inner.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        let ns = if waited {
            t0.elapsed().as_nanos() as u64
        } else {
            0
        };
        st.stats.wait_ns += ns;
        (ns, st.errors.get(&addr).map_or(Ok(()), |e| Err(e.clone())))
    }

    /// Blocks until the queue is empty (counted as exposed time).
    pub fn wait_all(&self) {
        let t0 = Instant::now();
        let mut st = self.state();
        let waited = !st.pending.is_empty();
        while !st.pending.is_empty() {
            st = self.inner.done.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if waited {
            st.stats.wait_ns += t0.elapsed().as_nanos() as u64;
        }
    }

    /// Whether a move of `addr` is queued or running.
    pub fn is_pending(&self, addr: usize) -> bool {
        self.state().pending.contains_key(&addr)
    }

    /// The most recent failure message of any object, if one is recorded.
    pub fn last_error(&self) -> Option<String> {
        self.state().errors.values().next_back().cloned()
    }

    /// Totals so far.
    pub fn stats(&self) -> MigrationStats {
        self.state().stats.clone()
    }

    /// Adds a synchronous move's report (made on the caller's thread: all
    /// of its copy time is exposed).
    pub(crate) fn record_sync(&self, bytes: usize, copy_ns: u64, to: Tier) {
        let mut st = self.state();
        st.stats.record(bytes as u64, copy_ns, to);
        st.stats.wait_ns += copy_ns;
    }
}

impl Migrator {
    /// Ends the helper thread: requests still queued are dropped (counted
    /// in the result), the move it is making now is finished, then the
    /// thread is joined. Afterwards no move of any object is in flight, so
    /// the registry may unmap its objects (`TierRuntime::shutdown`).
    /// Idempotent; an error says the helper thread had panicked.
    pub(crate) fn shutdown(&mut self) -> Result<u64, TierError> {
        self.state().closing = true;
        self.tx.take();
        let joined = match self.handle.take() {
            Some(h) => h.join().map_err(|_| TierError::HelperGone),
            None => Ok(()),
        };
        let mut st = self.state();
        // a helper that panicked left its requests pending: nobody will
        // run them, and a waiter must not wait for them forever
        st.pending.clear();
        self.inner.done.notify_all();
        joined.map(|()| st.cancelled)
    }
}

#[cfg(test)]
impl Inner {
    /// Whether [`Migrator::shutdown`] has begun (test hook).
    pub(crate) fn closing(&self) -> bool {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).closing
    }
}

impl Drop for Migrator {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platform() -> Platform {
        Platform::emulated(10e9, 80e-9, 2.0, 1.0)
    }

    /// One promotion of 1 GB in 1 s and one eviction of 1 GB in `evict_s`.
    fn stats(evict_s: f64) -> MigrationStats {
        let mut s = MigrationStats::default();
        s.record(1_000_000_000, 1_000_000_000, Tier::Dram);
        s.record(1_000_000_000, (evict_s * 1e9) as u64, Tier::Slow);
        s
    }

    #[test]
    fn moves_are_counted_per_direction_and_in_the_totals() {
        let mut s = MigrationStats::default();
        s.record(4096, 100, Tier::Dram);
        s.record(8192, 300, Tier::Slow);
        s.record(4096, 50, Tier::Dram);
        assert_eq!((s.moves, s.bytes_moved, s.copy_ns), (3, 16384, 450));
        let dir = |moves, bytes, copy_ns| DirectionStats {
            moves,
            bytes,
            copy_ns,
        };
        assert_eq!(s.to_dram, dir(2, 8192, 150));
        assert_eq!(s.to_slow, dir(1, 8192, 300));
    }

    /// The report line's per-direction tokens carry each direction's own
    /// counts, and `-` for a bandwidth without a sample.
    #[test]
    fn the_report_names_each_direction() {
        let mut s = MigrationStats::default();
        s.record(2_000_000, 1_000_000, Tier::Dram);
        s.record(4096, 0, Tier::Slow);
        assert_eq!(
            s.direction_report(),
            "promoted 1 promoted_bytes 2000000 promote_ms 1.000 promote_gbs 2.000 \
             evicted 1 evicted_bytes 4096 evict_ms 0.000 evict_gbs -"
        );
    }

    /// Fast evictions, slow promotions: each direction gets its own
    /// measured bandwidth (the old driver set both to the 1.33 GB/s of
    /// the totals).
    #[test]
    fn each_direction_sets_its_own_bandwidth() {
        let p = stats(0.25).measured_platform(&platform());
        assert_eq!((p.copy_bw, p.evict_bw), (1e9, 4e9));
        assert!(p.evict_bw > p.copy_bw);
        // everything else is the configured platform's
        assert_eq!(p.slow_bw, platform().slow_bw);
    }

    #[test]
    fn a_direction_without_a_sample_takes_the_others() {
        let mut up = MigrationStats::default();
        up.record(1_000_000_000, 500_000_000, Tier::Dram);
        let p = up.measured_platform(&platform());
        assert_eq!((p.copy_bw, p.evict_bw), (2e9, 2e9));
        let mut down = MigrationStats::default();
        down.record(3_000_000_000, 1_000_000_000, Tier::Slow);
        // a move timed at 0 ns is no sample either
        down.record(4096, 0, Tier::Dram);
        let p = down.measured_platform(&platform());
        assert_eq!((p.copy_bw, p.evict_bw), (3e9, 3e9));
        // no moves: the configured platform
        assert_eq!(
            MigrationStats::default().measured_platform(&platform()),
            platform()
        );
    }

    #[test]
    fn a_slow_direction_is_caught_against_its_own_bandwidth() {
        let used = stats(0.25).measured_platform(&platform());
        assert!(!stats(0.25).slower_than(&used, 0.5));
        // evictions 3x slower than assumed, promotions as assumed: the
        // totals (2 GB in 1.75 s) are not below half of copy_bw
        let s = stats(0.75);
        assert!(s.bytes_moved as f64 / (s.copy_ns as f64 * 1e-9) > 0.5 * used.copy_bw);
        assert!(s.slower_than(&used, 0.5));
        // nothing moved: never
        assert!(!MigrationStats::default().slower_than(&used, 0.5));
    }
}

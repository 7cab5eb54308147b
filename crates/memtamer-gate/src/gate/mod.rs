//! The gate: admission of PM requests under a system-wide limit T_S.
//!
//! PATS §IV maps onto this file as follows. Each registered thread owns a
//! [`Slot`] holding its Req-Info and its Running-Lock (`state`, a futex
//! word). `serving` is the Serving-Thread count. The Selector is
//! [`Gate::select`]: whenever capacity frees up it releases the waiting
//! threads in FIFO ticket order, so every thread is served in turn and none
//! starves. Requests smaller than the bypass size never wait.
//!
//! A thread whose request ends while nobody waits keeps its unit of
//! capacity (`HOLDING`), so its next request is admitted by plain loads and
//! stores on its own slot instead of a trip through the shared lock; the
//! first waiter, or a lower limit, takes held units back under the lock.
//! Held units count in `serving`, so T_S still bounds the requests in
//! flight.
//!
//! That fast path has no atomic read-modify-write and no fence on purpose:
//! libpmem copies with non-temporal stores, and on x86 any locked
//! instruction or `mfence` after them waits until they reach memory, which
//! costs a 4 KiB persistent copy about 45% (measured; docs/pats.md). The
//! owner and a thread taking its unit back still need a store-load
//! handshake (Dekker): the owner stores `RUNNING` and then checks
//! `queue_len` and `taken`; the taker stores `queue_len`, then runs
//! membarrier(2) (`os::remote_barrier`), which puts a full barrier on every
//! running thread of every registered process, and only then reads the
//! slots. After the barrier the taker either sees the owner's `RUNNING`
//! (and leaves the unit alone) or the owner's later checks see the queue
//! (and it settles under the lock). Processes that cannot register for
//! membarrier never hold units.
//!
//! Beyond the paper, the state is in shared memory (one gate for all
//! processes) and survives deaths: the lock word names its owner, so a lock
//! left by a dead thread is taken over and the state rebuilt from the slots;
//! the reaper frees slots of dead threads and returns their capacity.

use std::cell::Cell;
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::shm::{
    Access, Header, Mapping, Slot, HOLDING, IDLE, RUNNING, SLOTS, UNLIMITED, WAITING,
};
use crate::{os, GateError};

/// How long a waiter sleeps between checks for dead threads.
const WAIT_SLICE: Duration = Duration::from_millis(2);
/// A waiter that has waited this long asks the reaper to look for dead
/// threads holding capacity (rate-limited system-wide to once per interval).
pub(crate) const REAP_INTERVAL_NS: u64 = 5_000_000;
/// A lock held this long makes waiters check whether its owner is alive.
const LOCK_SUSPECT_NS: u64 = 2_000_000;
/// A lock held this long by a live owner that is not running (stopped, or
/// asleep: no critical section sleeps) is taken over too, or after the
/// admission bound if that is shorter: the owner is stopped, or the word
/// was corrupted to name a live thread that will never release it. Fixed
/// so that a corrupted lock word costs a waiter this, not a whole
/// admission bound (issue 22).
const LOCK_STALE_NS: u64 = 50_000_000;
/// The same for an owner that is running or runnable (a holder preempted
/// inside its critical section on a loaded machine): a second.
const LOCK_BUSY_STALE_NS: u64 = 1_000_000_000;
/// Spins before a waiter sleeps.
const SPINS: u32 = 200;

/// Options for opening a gate.
#[derive(Clone, Debug)]
pub struct GateOptions {
    /// Gate name: processes that use the same name share one limit.
    pub name: String,
    /// Directory of the shared file (normally `/dev/shm`).
    pub dir: PathBuf,
    /// Requests smaller than this never wait (PATS: 256 B). Only the
    /// creator's value counts.
    pub bypass_bytes: u32,
    /// Limit set when this process creates the gate.
    pub initial_limit: u32,
    /// Longest a request of this process waits for admission: past it the
    /// request proceeds unadmitted and is counted (`overdue`), so that a
    /// holder that neither ends nor dies (frozen, traced, hung) cannot stall
    /// every PM program (issue 22). Per process, not shared.
    pub max_wait: Duration,
    /// Group allowed to share the gate (`MEMTAMER_GATE_GROUP`): the file is
    /// created 0660 with this group; None: 0600.
    pub group: Option<u32>,
}

/// Default admission bound (`MEMTAMER_GATE_MAX_WAIT_MS`): long against a
/// PM request (microseconds), short against a stall a user would notice.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_millis(100);

impl Default for GateOptions {
    fn default() -> Self {
        GateOptions {
            name: "default".into(),
            dir: PathBuf::from("/dev/shm"),
            bypass_bytes: 256,
            initial_limit: UNLIMITED,
            max_wait: DEFAULT_MAX_WAIT,
            group: None,
        }
    }
}

impl GateOptions {
    /// Path of the shared file for these options.
    pub fn path(&self) -> PathBuf {
        self.dir.join(format!("memtamer-gate-{}", self.name))
    }
}

/// An open gate. Cheap to share between threads (`Arc<Gate>`); each thread
/// that issues PM requests registers once with [`Gate::register`].
pub struct Gate {
    map: Mapping,
    /// This process's admission bound (`GateOptions::max_wait`), ns.
    max_wait_ns: u64,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("path", &self.map.path)
            .finish()
    }
}

/// What `begin` did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Smaller than the bypass size: not gated.
    Bypassed,
    /// Admitted at once.
    Immediate,
    /// Admitted after waiting this many nanoseconds.
    Waited(u64),
    /// Not admitted: proceeded after waiting this many nanoseconds, past
    /// the admission bound (`GateOptions::max_wait`).
    Overdue(u64),
}

impl Gate {
    /// Opens the gate named in `options`, creating its shared file if needed.
    pub fn open(options: &GateOptions) -> Result<Arc<Gate>, GateError> {
        os::watch_forks();
        let map = Mapping::open(
            &options.path(),
            options.bypass_bytes,
            options.initial_limit,
            Access {
                group: options.group,
            },
        )?;
        Ok(Arc::new(Gate::from_mapping(map, options)))
    }

    /// A gate over an already validated (or repaired) mapping.
    pub(crate) fn from_mapping(map: Mapping, options: &GateOptions) -> Gate {
        Gate {
            map,
            max_wait_ns: u64::try_from(options.max_wait.as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Online repair (issue 22): `heal_state`, then a reap of every slot
    /// (dead, zombie, exec'd or stopped holders). Run by a waiter that
    /// reached its admission bound (a corrupted word must not keep every
    /// later request waiting a full bound too) and by `memtamer gate
    /// repair`. Returns what was wrong.
    pub(crate) fn heal(&self) -> Vec<String> {
        let found = self.heal_state();
        self.reap_with(true, true);
        found
    }

    /// Under the lock, resets what the slots prove inconsistent
    /// (`integrity::heal_locked`) and lets the Selector pass on what that
    /// freed. Cheap (one scan of the slots): every collector runs it each
    /// window, and waiters at most once per heal interval system-wide
    /// (`heal_if_due`), so a count corrupted too low (which admits too
    /// much, and makes nobody wait) is rebuilt within a window, and one
    /// corrupted too high within an interval of a waiter's first reap.
    pub(crate) fn heal_state(&self) -> Vec<String> {
        let guard = self.lock();
        let found = crate::gate::integrity::heal_locked(self, os::now_ns());
        let granted = self.select();
        drop(guard);
        self.wake(&granted);
        found
    }

    /// `heal_state` if no waiter healed in the last heal interval
    /// (`integrity::heal_due`). Run by every waiter at each re-check past
    /// a reap interval: whatever word was corrupted, and whatever the
    /// admission bound, a waiter waits at most about one interval longer
    /// than the slots justify (issue 22). Returns what was wrong.
    pub(crate) fn heal_if_due(&self) -> Vec<String> {
        if crate::gate::integrity::heal_due(self.header(), os::now_ns()) {
            self.heal_state()
        } else {
            Vec::new()
        }
    }

    /// The shared file.
    pub fn path(&self) -> &Path {
        &self.map.path
    }

    pub(crate) fn header(&self) -> &Header {
        self.map.header()
    }

    pub(crate) fn slot(&self, index: usize) -> &Slot {
        self.map.slot(index)
    }

    /// How many slots (from index 0) can be in use: scans stop there.
    pub(crate) fn slots_in_use(&self) -> usize {
        (self.header().slot_hwm.load(Ordering::Acquire) as usize).min(SLOTS)
    }

    /// Registers the calling thread: claims a free slot for it. The slot is
    /// freed when the returned handle drops, or by the reaper if the thread
    /// dies first.
    pub fn register(self: &Arc<Gate>) -> Result<GateThread, GateError> {
        let (pid, tid) = (os::pid(), os::tid());
        let index = self.claim_slot(pid, tid)?;
        Ok(GateThread {
            gate: Arc::clone(self),
            slot: Cell::new(NonNull::from(self.slot(index))),
            header: NonNull::from(self.header()),
            bypass: u64::from(self.header().bypass_bytes.load(Ordering::Relaxed)),
            index: Cell::new(index),
            me: (u64::from(pid) << 32) | u64::from(tid),
            may_hold: os::fence_free(),
            _not_send: PhantomData,
        })
    }

    /// Claims a free slot for thread `tid` of process `pid` (reaping dead
    /// threads' slots once if all are taken) and returns its index.
    pub(crate) fn claim_slot(&self, pid: u32, tid: u32) -> Result<usize, GateError> {
        for attempt in 0..2 {
            for index in 0..SLOTS {
                let slot = self.slot(index);
                if slot
                    .owner_pid
                    .compare_exchange(0, pid, Ordering::AcqRel, Ordering::Relaxed)
                    .is_ok()
                {
                    slot.owner_tid.store(tid, Ordering::Release);
                    slot.taken.store(0, Ordering::Relaxed);
                    slot.map_base.store(self.map.base(), Ordering::Release);
                    // before the slot can hold capacity: scans must reach it
                    self.header()
                        .slot_hwm
                        .fetch_max(index as u32 + 1, Ordering::AcqRel);
                    slot.state.store(IDLE, Ordering::Release);
                    slot.sleeping.store(0, Ordering::Relaxed);
                    return Ok(index);
                }
            }
            if attempt == 0 {
                // full: free the slots of dead threads and try once more
                self.reap_with(true, true);
            }
        }
        Err(GateError::SlotsFull {
            path: self.map.path.clone(),
            slots: SLOTS,
        })
    }

    /// Where this process maps the gate file (recorded in its slots).
    pub(crate) fn map_base(&self) -> u64 {
        self.map.base()
    }

    /// The current limit (None: unlimited).
    pub fn limit(&self) -> Option<u32> {
        match self.header().limit.load(Ordering::Acquire) {
            UNLIMITED => None,
            n => Some(n),
        }
    }

    /// Sets the limit (None: unlimited; Some(0) counts as 1 so that PM work
    /// always progresses) and releases waiters that now fit.
    pub fn set_limit(&self, limit: Option<u32>) {
        let value = limit.map_or(UNLIMITED, |n| n.max(1));
        let guard = self.lock();
        let h = self.header();
        if h.limit.swap(value, Ordering::AcqRel) != value {
            h.limit_changes.fetch_add(1, Ordering::Relaxed);
        }
        if h.serving.load(Ordering::Relaxed) > value {
            // `limit` is stored: holders that escape the scan see it
            self.reclaim_held();
        }
        let granted = self.select();
        drop(guard);
        self.wake(&granted);
    }

    /// Forgets the peak and the counters (not the per-thread statistics).
    pub fn reset_peak(&self) {
        let guard = self.lock();
        let h = self.header();
        h.peak_serving
            .store(h.serving.load(Ordering::Relaxed), Ordering::Relaxed);
        h.limit_at_peak
            .store(h.limit.load(Ordering::Relaxed), Ordering::Relaxed);
        drop(guard);
    }

    /// Takes the gate lock, taking it over if its owner died.
    fn lock(&self) -> LockGuard<'_> {
        self.lock_as(os::lock_word())
    }

    /// `lock` naming `me` (pid << 32 | tid) as the owner.
    fn lock_as(&self, me: u64) -> LockGuard<'_> {
        let h = self.header();
        let mut spins = 0u32;
        let mut suspect_since: Option<(u64, u64)> = None;
        loop {
            match h
                .lock
                .compare_exchange_weak(0, me, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => {
                    self.check_locked();
                    return LockGuard { gate: self, me };
                }
                Err(owner) => {
                    spins += 1;
                    if spins < 64 {
                        std::hint::spin_loop();
                        continue;
                    }
                    os::yield_now();
                    if owner == 0 {
                        continue;
                    }
                    let now = os::now_ns();
                    match suspect_since {
                        Some((who, since)) if who == owner => {
                            let held = now.saturating_sub(since);
                            let (pid, tid) = ((owner >> 32) as u32, owner as u32);
                            // a dead owner, a word naming no thread, or
                            // one (or a corrupted word naming a live
                            // thread) holding a µs critical section for
                            // LOCK_STALE_NS (LOCK_BUSY_STALE_NS if it runs)
                            let bound = self.max_wait_ns;
                            if held > LOCK_SUSPECT_NS
                                && (pid == 0
                                    || tid == 0
                                    || !os::alive(pid, tid)
                                    || (held > bound.min(LOCK_STALE_NS)
                                        && (held > bound.min(LOCK_BUSY_STALE_NS)
                                            || !os::runnable(pid, tid))))
                                && h.lock
                                    .compare_exchange(
                                        owner,
                                        me,
                                        Ordering::Acquire,
                                        Ordering::Relaxed,
                                    )
                                    .is_ok()
                            {
                                // the owner died inside: its half-done update
                                // is undone by rebuilding from the slots
                                self.repair();
                                self.check_locked();
                                h.lock_repairs.fetch_add(1, Ordering::Relaxed);
                                return LockGuard { gate: self, me };
                            }
                        }
                        _ => suspect_since = Some((owner, now)),
                    }
                }
            }
        }
    }

    /// Validates the lock-protected words (every one is read by others and
    /// could have been corrupted by any process that can write the file):
    /// out-of-bounds counts, queue positions or a zero limit make the state
    /// be rebuilt from the slots rather than obeyed (issue 22). Called with
    /// the lock held, each time it is taken.
    fn check_locked(&self) {
        let h = self.header();
        if !crate::gate::integrity::bound_faults(h).is_empty() {
            if h.limit.load(Ordering::Relaxed) == 0 {
                h.limit.store(1, Ordering::Relaxed);
            }
            self.repair();
            h.lock_repairs.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Rebuilds the lock-protected state from the slots, which are the
    /// source of truth: serving = slots RUNNING, queue = slots WAITING in
    /// ticket order. Called with the lock held.
    pub(crate) fn repair(&self) {
        let h = self.header();
        let (serving, waiting) = self.tally();
        h.serving.store(serving, Ordering::Relaxed);
        h.queue_start.store(0, Ordering::Relaxed);
        h.queue_len.store(waiting.len() as u32, Ordering::Relaxed);
        for (i, (_, index)) in waiting.iter().enumerate() {
            h.queue[i].store(*index, Ordering::Relaxed);
        }
    }

    /// What the slots say the lock-protected state is: the units they hold
    /// (RUNNING or HOLDING, not taken) and the WAITING slots as (ticket,
    /// index) in ticket order. Exact when called with the lock held.
    pub(crate) fn tally(&self) -> (u32, Vec<(u64, u32)>) {
        let mut serving = 0u32;
        let mut waiting: Vec<(u64, u32)> = Vec::new();
        for index in 0..self.slots_in_use() {
            let slot = self.slot(index);
            if slot.owner_pid.load(Ordering::Acquire) == 0 {
                continue;
            }
            match slot.state.load(Ordering::Acquire) {
                // a unit marked taken was already given to someone else
                RUNNING | HOLDING if slot.taken.load(Ordering::Acquire) == 0 => serving += 1,
                WAITING => waiting.push((slot.ticket.load(Ordering::Relaxed), index as u32)),
                _ => {}
            }
        }
        waiting.sort_unstable();
        (serving, waiting)
    }

    /// Takes back every unit held by an idle thread. Called with the lock
    /// held, after what makes holders give their units up themselves has
    /// been stored (a waiter in `queue_len`, a lower `limit`).
    ///
    /// Holders switch HOLDING -> RUNNING with a plain store and then read
    /// `queue_len`, `serving`, `limit` and `taken`; the barrier below
    /// orders that against this scan: a holder whose RUNNING we do not see
    /// is certain to see our stores and settle under the lock, where it
    /// finds `taken`. Returns false if the barrier is unavailable to this
    /// process (nothing is taken then: a holder gives its unit up at its
    /// next request, or a collector of a process that can barrier takes it).
    fn reclaim_held(&self) -> bool {
        if !os::remote_barrier() {
            return false;
        }
        for index in 0..self.slots_in_use() {
            let slot = self.slot(index);
            if slot.owner_pid.load(Ordering::Acquire) != 0
                && slot.state.load(Ordering::Acquire) == HOLDING
                && slot.taken.load(Ordering::Relaxed) == 0
            {
                slot.taken.store(1, Ordering::Release);
                slot.state.store(IDLE, Ordering::Release);
                self.unadmit_locked();
            }
        }
        true
    }

    /// Backstop run by every collector each window: if threads wait while
    /// the gate is full, takes back held units (with a barrier) and lets the
    /// Selector pass them on. Covers waiters in processes that cannot issue
    /// membarrier themselves.
    pub(crate) fn serve_waiters(&self) {
        let h = self.header();
        if h.queue_len.load(Ordering::Acquire) == 0 {
            return;
        }
        let guard = self.lock();
        if h.queue_len.load(Ordering::Relaxed) != 0
            && h.serving.load(Ordering::Relaxed) >= h.limit.load(Ordering::Relaxed)
        {
            self.reclaim_held();
        }
        let granted = self.select();
        drop(guard);
        self.wake(&granted);
    }

    /// Counts one unit of capacity returned. Called with the lock held.
    fn unadmit_locked(&self) {
        let h = self.header();
        let serving = h.serving.load(Ordering::Relaxed);
        h.serving
            .store(serving.saturating_sub(1), Ordering::Relaxed);
    }

    /// The Selector: while there is capacity, hands it to the waiter at the
    /// queue's head. Returns the slots it granted (to wake after unlocking).
    /// Called with the lock held.
    fn select(&self) -> Vec<usize> {
        let h = self.header();
        let mut granted = Vec::new();
        loop {
            let len = h.queue_len.load(Ordering::Relaxed);
            if len == 0 || h.serving.load(Ordering::Relaxed) >= h.limit.load(Ordering::Relaxed) {
                return granted;
            }
            let start = h.queue_start.load(Ordering::Relaxed);
            let index = h.queue[start as usize % SLOTS].load(Ordering::Relaxed) as usize;
            h.queue_start
                .store((start + 1) % SLOTS as u32, Ordering::Relaxed);
            // Release: a holder that reads the shorter queue also sees a
            // `taken` stored before it
            h.queue_len.store(len - 1, Ordering::Release);
            let slot = self.slot(index);
            if slot.owner_pid.load(Ordering::Acquire) == 0
                || slot.state.load(Ordering::Acquire) != WAITING
            {
                continue; // stale entry of a reaped thread
            }
            self.admit_locked();
            h.contended_admissions.store(
                h.contended_admissions.load(Ordering::Relaxed) + 1,
                Ordering::Relaxed,
            );
            slot.state.store(RUNNING, Ordering::SeqCst);
            granted.push(index);
        }
    }

    /// Counts one admission. Called with the lock held.
    fn admit_locked(&self) {
        let h = self.header();
        let serving = h.serving.load(Ordering::Relaxed) + 1;
        h.serving.store(serving, Ordering::Relaxed);
        h.admissions
            .store(h.admissions.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
        if serving > h.peak_serving.load(Ordering::Relaxed) {
            h.peak_serving.store(serving, Ordering::Relaxed);
            h.limit_at_peak
                .store(h.limit.load(Ordering::Relaxed), Ordering::Relaxed);
        }
    }

    /// Wakes granted waiters that are asleep.
    fn wake(&self, granted: &[usize]) {
        for &index in granted.iter() {
            let slot = self.slot(index);
            if slot.sleeping.load(Ordering::SeqCst) != 0 {
                os::futex_wake(&slot.state);
            }
        }
    }

    /// Frees the slots of dead threads, returns the capacity they held and
    /// releases waiters into it. Rate-limited system-wide unless `force`.
    /// Returns how many slots it freed.
    pub fn reap(&self, force: bool) -> usize {
        self.reap_with(force, false)
    }

    /// `reap`; `thorough` also checks idle slots of main threads for an
    /// exec (reading /proc/PID/maps), which is otherwise done only for
    /// slots that hold a unit.
    pub(crate) fn reap_with(&self, force: bool, thorough: bool) -> usize {
        let h = self.header();
        let now = os::now_ns();
        if !force && now.saturating_sub(h.last_reap_ns.load(Ordering::Relaxed)) < REAP_INTERVAL_NS {
            return 0;
        }
        if h.reaper_busy
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return 0;
        }
        h.last_reap_ns.store(now, Ordering::Relaxed);
        let verdicts: Vec<(usize, Verdict)> = (0..self.slots_in_use())
            .filter_map(|i| Some((i, self.judge(i, thorough)?)))
            .collect();
        let mut freed = 0;
        if !verdicts.is_empty() {
            let guard = self.lock();
            for &(i, _) in &verdicts {
                // judged again under the lock: the slot may have changed
                match self.judge(i, thorough) {
                    Some(Verdict::Gone) => {
                        self.free_slot_locked(i);
                        freed += 1;
                    }
                    Some(Verdict::Stopped) => self.take_unit_locked(i),
                    None => {}
                }
            }
            // a dead WAITING slot may sit in the queue: `select` skips it
            let granted = self.select();
            drop(guard);
            self.wake(&granted);
        }
        h.reaper_busy.store(0, Ordering::Release);
        freed
    }

    /// What the reaper must do with slot `index`, if anything: free it (its
    /// owner died, is a zombie, or exec'd) or take its unit (its owner is
    /// stopped while holding one).
    fn judge(&self, index: usize, thorough: bool) -> Option<Verdict> {
        let slot = self.slot(index);
        let pid = slot.owner_pid.load(Ordering::Acquire);
        let tid = slot.owner_tid.load(Ordering::Acquire);
        if pid == 0 {
            return None;
        }
        // a zero tid is a corrupted word (the owner restores it): judged
        // by its process
        let holds = matches!(slot.state.load(Ordering::Acquire), RUNNING | HOLDING)
            && slot.taken.load(Ordering::Acquire) == 0;
        match os::liveness(pid, tid) {
            os::Liveness::Dead => return Some(Verdict::Gone),
            os::Liveness::Stopped if holds => return Some(Verdict::Stopped),
            _ => {}
        }
        // exec keeps the pid, and the main thread's tid, but not the mapping
        let base = slot.map_base.load(Ordering::Acquire);
        if tid == pid
            && (holds || thorough)
            && base != 0
            && !os::maps_gate(pid, base, &self.map.path)
        {
            return Some(Verdict::Gone);
        }
        None
    }

    /// Frees slot `index` of a dead thread and returns its unit. Called
    /// with the lock held.
    fn free_slot_locked(&self, index: usize) {
        let h = self.header();
        let slot = self.slot(index);
        if matches!(slot.state.swap(IDLE, Ordering::AcqRel), RUNNING | HOLDING)
            && slot.taken.load(Ordering::Relaxed) == 0
        {
            self.unadmit_locked();
            h.reclaimed.fetch_add(1, Ordering::Relaxed);
        }
        slot.taken.store(0, Ordering::Relaxed);
        h.retired.absorb(&slot.stats);
        slot.stats.clear();
        slot.map_base.store(0, Ordering::Relaxed);
        slot.owner_tid.store(0, Ordering::Relaxed);
        slot.owner_pid.store(0, Ordering::Release);
        h.reaped_slots.fetch_add(1, Ordering::Relaxed);
    }

    /// Takes the unit of a stopped thread back, as `reclaim_held` does for
    /// an idle one: `taken` tells the owner when it resumes (it is not
    /// running, so no barrier is needed). Called with the lock held.
    fn take_unit_locked(&self, index: usize) {
        let slot = self.slot(index);
        if matches!(slot.state.load(Ordering::Acquire), RUNNING | HOLDING)
            && slot.taken.load(Ordering::Relaxed) == 0
        {
            slot.taken.store(1, Ordering::Release);
            slot.state.store(IDLE, Ordering::Release);
            self.unadmit_locked();
            self.header().reclaimed.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Gives up waiting: if slot `index` is still WAITING, takes it out of
    /// the queue and lets it run unadmitted (it holds no unit, so `end`
    /// returns none). Returns whether it was still waiting. Called with the
    /// lock held.
    fn abandon_wait_locked(&self, index: usize) -> bool {
        let h = self.header();
        let slot = self.slot(index);
        if slot.state.load(Ordering::Acquire) != WAITING {
            return false;
        }
        // rebuild the ring without this slot, in order
        let start = h.queue_start.load(Ordering::Relaxed) as usize;
        let len = (h.queue_len.load(Ordering::Relaxed) as usize).min(SLOTS);
        let kept: Vec<u32> = (0..len)
            .map(|i| h.queue[(start + i) % SLOTS].load(Ordering::Relaxed))
            .filter(|&q| q as usize != index)
            .collect();
        h.queue_start.store(0, Ordering::Relaxed);
        for (i, q) in kept.iter().enumerate() {
            h.queue[i].store(*q, Ordering::Relaxed);
        }
        h.queue_len.store(kept.len() as u32, Ordering::Release);
        slot.state.store(IDLE, Ordering::Release);
        h.overdue.fetch_add(1, Ordering::Relaxed);
        true
    }
}

/// The reaper's verdict on a slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// The owner died, is a zombie, or exec'd: free the slot.
    Gone,
    /// The owner is stopped while holding a unit: take the unit.
    Stopped,
}

/// Holds the gate lock; releases it on drop.
struct LockGuard<'a> {
    gate: &'a Gate,
    /// The lock word we stored.
    me: u64,
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        // only our own lock: an owner whose lock was taken over after the
        // bound (stopped inside, say) must not release its successor's
        let _ = self.gate.header().lock.compare_exchange(
            self.me,
            0,
            Ordering::Release,
            Ordering::Relaxed,
        );
    }
}

pub mod integrity;
mod thread;
pub use thread::{GateThread, Permit};

#[cfg(test)]
mod heal_tests;
#[cfg(test)]
mod tests;

//! A thread registered with the gate: its slot, and the begin/end of each PM
//! request (PATS Fig. 7, the Selector side).

use super::*;

/// A registered PA-thread. Not `Send`: the slot names this thread's tid.
pub struct GateThread {
    pub(super) gate: Arc<Gate>,
    /// This thread's slot and the gate's header, kept so that the fast path
    /// does not chase `gate` to the mapping. Valid while `gate` lives (the
    /// mapping is unmapped only when the `Gate` drops). The slot changes
    /// only if another thread claimed it after a corrupted owner word got
    /// it freed (`move_slot`).
    pub(super) slot: Cell<NonNull<Slot>>,
    pub(super) header: NonNull<Header>,
    /// The gate's bypass size (fixed by its creator).
    pub(super) bypass: u64,
    pub(super) index: Cell<usize>,
    /// This thread's lock word (pid << 32 | tid).
    pub(super) me: u64,
    /// Whether this thread keeps its unit between requests (only when its
    /// process is registered for membarrier, see `os::fence_free`).
    pub(super) may_hold: bool,
    pub(super) _not_send: PhantomData<*const ()>,
}

impl std::fmt::Debug for GateThread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GateThread")
            .field("slot", &self.index.get())
            .finish()
    }
}

impl GateThread {
    /// The gate this thread is registered with.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }

    #[inline]
    pub(super) fn slot(&self) -> &Slot {
        // SAFETY: points into the mapping `self.gate` keeps alive; Slot is
        // atomics only.
        unsafe { self.slot.get().as_ref() }
    }

    #[inline]
    fn header(&self) -> &Header {
        // SAFETY: as for `slot`.
        unsafe { self.header.as_ref() }
    }

    /// Whether this thread is inside an admitted request (between a `begin`
    /// that admitted it and `end`).
    #[inline]
    pub fn in_request(&self) -> bool {
        self.slot().state.load(Ordering::Relaxed) == RUNNING
    }

    /// Whether a request of `bytes` bytes is below the gate's bypass size
    /// (never waits).
    #[inline]
    pub fn bypasses(&self, bytes: u64) -> bool {
        bytes < self.bypass
    }

    /// Brackets the start of a PM request of `bytes` bytes: records it in the
    /// thread's statistics and Req-Info, then waits until the Selector admits
    /// it (requests below the bypass size pass at once). Call
    /// [`GateThread::end`] when the request is done, or use [`GateThread::enter`].
    #[inline]
    pub fn begin(&self, bytes: u64, is_write: bool) -> Admission {
        let slot = self.slot();
        record(&slot.stats, bytes, is_write);
        if bytes < self.bypass {
            bump(&slot.stats.bypassed, 1);
            return Admission::Bypassed;
        }
        // Req-Info, stored only when it changes (a store saved per call)
        if slot.req_bytes.load(Ordering::Relaxed) != bytes {
            slot.req_bytes.store(bytes, Ordering::Relaxed);
        }
        if slot.req_write.load(Ordering::Relaxed) != u32::from(is_write) {
            slot.req_write.store(u32::from(is_write), Ordering::Relaxed);
        }
        match slot.state.load(Ordering::Relaxed) {
            // begin without end: the thread already holds its admission
            RUNNING => Admission::Immediate,
            HOLDING => self.reuse_held(),
            _ => self.begin_locked(false),
        }
    }

    /// Admits a request with the unit this thread holds, unless someone
    /// took it back meanwhile: the owner's half of the handshake with
    /// `Gate::reclaim_held` (module docs). Called after reading HOLDING.
    #[inline]
    pub(super) fn reuse_held(&self) -> Admission {
        let slot = self.slot();
        let h = self.header();
        // A plain store, then the checks. The compiler must not move the
        // loads above the store; the CPU may, which the taker's membarrier
        // covers.
        slot.state.store(RUNNING, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        if h.queue_len.load(Ordering::Acquire) == 0
            && slot.taken.load(Ordering::Acquire) == 0
            && h.serving.load(Ordering::Relaxed) <= h.limit.load(Ordering::Relaxed)
        {
            bump(&slot.stats.reused, 1);
            return Admission::Immediate;
        }
        self.begin_locked(true)
    }

    /// `begin` through the lock: settles a unit this thread may still hold
    /// (`from_hold`), then admits at once or queues and waits.
    #[cold]
    #[inline(never)]
    fn begin_locked(&self, from_hold: bool) -> Admission {
        let mut guard = self.gate.lock_as(self.me);
        if self.own_slot_locked() == Owner::Stolen {
            drop(guard);
            if !self.move_slot() {
                // no slot left: this request runs ungated, and is counted
                self.header().overdue.fetch_add(1, Ordering::Relaxed);
                return Admission::Overdue(0);
            }
            guard = self.gate.lock_as(self.me);
        }
        let slot = self.slot();
        let h = self.header();
        if self.holds_unit_locked() {
            if from_hold
                && h.queue_len.load(Ordering::Relaxed) == 0
                && h.serving.load(Ordering::Relaxed) <= h.limit.load(Ordering::Relaxed)
            {
                // nobody took it and nobody waits: the request keeps it
                slot.state.store(RUNNING, Ordering::Relaxed);
                drop(guard);
                bump(&slot.stats.reused, 1);
                return Admission::Immediate;
            }
            // someone queued first, or the limit fell: the unit goes back
            slot.state.store(IDLE, Ordering::Relaxed);
            self.gate.unadmit_locked();
        }
        if h.queue_len.load(Ordering::Relaxed) == 0
            && h.serving.load(Ordering::Relaxed) < h.limit.load(Ordering::Relaxed)
        {
            self.gate.admit_locked();
            slot.state.store(RUNNING, Ordering::Release);
            drop(guard);
            return Admission::Immediate;
        }
        self.enqueue_locked();
        let granted = self.gate.select();
        drop(guard);
        self.gate.wake(&granted);
        let outcome = self.wait_for_admission();
        let waited = match outcome {
            Ok(ns) | Err(ns) => ns,
        };
        bump(&slot.stats.waited, 1);
        bump(&slot.stats.wait_ns_total, waited);
        if waited > slot.stats.wait_ns_max.load(Ordering::Relaxed) {
            slot.stats.wait_ns_max.store(waited, Ordering::Relaxed);
        }
        match outcome {
            Ok(ns) => Admission::Waited(ns),
            Err(ns) => Admission::Overdue(ns),
        }
    }

    /// Queues this thread: a fresh ticket, WAITING, the queue's tail.
    /// Called with the lock held.
    fn enqueue_locked(&self) {
        let slot = self.slot();
        let h = self.header();
        let ticket = h.next_ticket.load(Ordering::Relaxed);
        h.next_ticket
            .store(ticket.wrapping_add(1), Ordering::Relaxed);
        slot.ticket.store(ticket, Ordering::Relaxed);
        slot.state.store(WAITING, Ordering::SeqCst);
        let len = h.queue_len.load(Ordering::Relaxed);
        let tail = (h.queue_start.load(Ordering::Relaxed) as usize + len as usize) % SLOTS;
        h.queue[tail].store(self.index.get() as u32, Ordering::Relaxed);
        h.queue_len.store(len.saturating_add(1), Ordering::SeqCst);
        if len == 0 {
            // The first waiter takes idle threads' held units for the queue,
            // in order. While the queue is not empty no unit stays held: a
            // holder that escaped this scan sees the queue and settles.
            self.gate.reclaim_held();
        }
    }

    /// Whether this thread's slot names it (owner words and mapping): one
    /// load each, for the waiter's re-checks.
    pub(super) fn slot_names_me(&self) -> bool {
        let slot = self.slot();
        slot.owner_pid.load(Ordering::Acquire) == (self.me >> 32) as u32
            && slot.owner_tid.load(Ordering::Acquire) == self.me as u32
            && slot.map_base.load(Ordering::Acquire) == self.gate.map_base()
    }

    /// With the lock held, makes sure this thread's slot is its own (issue
    /// 22). Any process that can write the gate file can corrupt the owner
    /// words; one that names a dead thread gets the slot freed by the
    /// reaper, one that names nobody hides the slot from the Selector. The
    /// words are put back when they still prove the slot this thread's (its
    /// tid, which no other thread has; its pid with a tid of no live
    /// thread; or nobody, after the reaper freed it), counted in
    /// `lock_repairs`. Otherwise another thread may have claimed the slot
    /// once it was freed: `Stolen`, and the caller moves (`move_slot`).
    fn own_slot_locked(&self) -> Owner {
        if self.slot_names_me() {
            return Owner::Mine;
        }
        let slot = self.slot();
        let (pid, tid) = ((self.me >> 32) as u32, self.me as u32);
        let p = slot.owner_pid.load(Ordering::Acquire);
        let t = slot.owner_tid.load(Ordering::Acquire);
        let ours = t == tid || (p == pid && (t == 0 || !os::alive(pid, t))) || (p == 0 && t == 0);
        if !ours
            || slot
                .owner_pid
                .compare_exchange(p, pid, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
        {
            return Owner::Stolen;
        }
        slot.owner_tid.store(tid, Ordering::Release);
        slot.map_base.store(self.gate.map_base(), Ordering::Release);
        let h = self.header();
        h.slot_hwm
            .fetch_max(self.index.get() as u32 + 1, Ordering::AcqRel);
        h.lock_repairs.fetch_add(1, Ordering::Relaxed);
        Owner::Mine
    }

    /// Moves this thread to a fresh slot, its own having been claimed by
    /// another thread (`own_slot_locked`). False if no slot is free. Called
    /// without the lock (claiming may reap, which takes it).
    #[cold]
    fn move_slot(&self) -> bool {
        match self.gate.claim_slot((self.me >> 32) as u32, self.me as u32) {
            Ok(index) => {
                self.index.set(index);
                self.slot.set(NonNull::from(self.gate.slot(index)));
                true
            }
            Err(_) => false,
        }
    }

    /// A corrupted word undid this thread's wait (its state is no longer
    /// WAITING, or its owner words no longer name it, so the Selector
    /// skips it): under the lock, takes the slot back (or moves), queues
    /// again unless admitted meanwhile, and heals what else the slots
    /// contradict (a queue that lost it). What the waiter's next re-check
    /// sees is sound again: one re-check, not an admission bound.
    #[cold]
    #[inline(never)]
    fn rewait(&self) -> Rewait {
        let mut guard = self.gate.lock_as(self.me);
        if self.own_slot_locked() == Owner::Stolen {
            drop(guard);
            if !self.move_slot() {
                return Rewait::NoSlot;
            }
            guard = self.gate.lock_as(self.me);
        }
        let slot = self.slot();
        match slot.state.load(Ordering::Acquire) {
            RUNNING => return Rewait::Admitted,
            WAITING => {}
            _ => {
                slot.taken.store(0, Ordering::Relaxed);
                self.enqueue_locked();
                self.header().lock_repairs.fetch_add(1, Ordering::Relaxed);
            }
        }
        crate::gate::integrity::heal_locked(&self.gate, os::now_ns());
        let granted = self.gate.select();
        drop(guard);
        self.gate.wake(&granted);
        if self.slot().state.load(Ordering::Acquire) == RUNNING {
            Rewait::Admitted
        } else {
            Rewait::Waiting
        }
    }

    /// Whether this thread still owns a unit of capacity (RUNNING or
    /// HOLDING, not taken by someone else). Clears a `taken` mark: the unit
    /// was already counted back. Called by the owner with the lock held.
    fn holds_unit_locked(&self) -> bool {
        let slot = self.slot();
        if slot.taken.load(Ordering::Relaxed) != 0 {
            slot.taken.store(0, Ordering::Relaxed);
            slot.state.store(IDLE, Ordering::Relaxed);
            return false;
        }
        matches!(slot.state.load(Ordering::Relaxed), RUNNING | HOLDING)
    }

    /// Waits until the Selector admits this thread: Ok(ns waited), or
    /// Err(ns waited) when it gave up at the admission bound.
    fn wait_for_admission(&self) -> Result<u64, u64> {
        let start = os::now_ns();
        for _ in 0..SPINS {
            if self.slot().state.load(Ordering::Acquire) == RUNNING {
                return Ok(os::now_ns() - start);
            }
            std::hint::spin_loop();
        }
        loop {
            let slot = self.slot();
            slot.sleeping.store(1, Ordering::SeqCst);
            if slot.state.load(Ordering::SeqCst) == RUNNING {
                slot.sleeping.store(0, Ordering::Relaxed);
                return Ok(os::now_ns() - start);
            }
            os::futex_wait(&slot.state, WAITING, WAIT_SLICE);
            slot.sleeping.store(0, Ordering::Relaxed);
            let state = slot.state.load(Ordering::Acquire);
            if state == RUNNING {
                return Ok(os::now_ns() - start);
            }
            // this thread's own words first: a corrupted one can hide it
            // from the Selector for good (issue 22)
            if state != WAITING || !self.slot_names_me() {
                match self.rewait() {
                    Rewait::Admitted => return Ok(os::now_ns() - start),
                    Rewait::NoSlot => {
                        self.header().overdue.fetch_add(1, Ordering::Relaxed);
                        return Err(os::now_ns() - start);
                    }
                    Rewait::Waiting => {}
                }
            }
            let waited = os::now_ns() - start;
            if waited > REAP_INTERVAL_NS {
                self.gate.reap(false);
                // then any other word: at most one heal interval late,
                // whatever the admission bound
                self.gate.heal_if_due();
            }
            if waited > self.gate.max_wait_ns {
                // a corrupted word may be what keeps us out: repair what
                // the slots contradict, which may admit us at once, and
                // spares every later request this wait (issue 22)
                self.gate.heal();
                if self.slot().state.load(Ordering::Acquire) == RUNNING {
                    return Ok(os::now_ns() - start);
                }
                let guard = self.gate.lock_as(self.me);
                let abandoned = self.gate.abandon_wait_locked(self.index.get());
                drop(guard);
                if abandoned {
                    return Err(os::now_ns() - start);
                }
                // admitted meanwhile
                return Ok(os::now_ns() - start);
            }
        }
    }

    /// Ends the request admitted by the last [`GateThread::begin`] and lets
    /// the Selector release the next waiter. Harmless after a bypassed
    /// request or without a begin.
    #[inline]
    pub fn end(&self) {
        let slot = self.slot();
        if slot.state.load(Ordering::Relaxed) != RUNNING {
            return;
        }
        let h = self.header();
        if self.may_hold
            && h.queue_len.load(Ordering::Relaxed) == 0
            && h.serving.load(Ordering::Relaxed) <= h.limit.load(Ordering::Relaxed)
        {
            self.hold_unit();
        } else {
            self.end_locked();
        }
    }

    /// Nobody waits: keeps the unit for this thread's next request, unless
    /// a waiter queued meanwhile. A plain store and a check, the owner's
    /// half of the handshake with `Gate::reclaim_held` (module docs).
    #[inline]
    pub(super) fn hold_unit(&self) {
        self.slot().state.store(HOLDING, Ordering::Release);
        compiler_fence(Ordering::SeqCst);
        if self.header().queue_len.load(Ordering::Acquire) != 0 {
            // someone queued meanwhile: return the unit properly
            self.end_locked();
        }
    }

    /// Returns this thread's unit (if nobody took it yet) under the lock
    /// and lets the Selector pass it on.
    #[cold]
    #[inline(never)]
    fn end_locked(&self) {
        let guard = self.gate.lock_as(self.me);
        // a slot another thread claimed holds none of this thread's units
        if self.own_slot_locked() == Owner::Mine && self.holds_unit_locked() {
            self.slot().state.store(IDLE, Ordering::Release);
            self.gate.unadmit_locked();
        }
        let granted = self.gate.select();
        drop(guard);
        self.gate.wake(&granted);
    }

    /// `begin` returning a guard that calls `end` when dropped.
    #[inline]
    pub fn enter(&self, bytes: u64, is_write: bool) -> Permit<'_> {
        let admission = self.begin(bytes, is_write);
        Permit {
            thread: self,
            admission,
        }
    }
}

impl Drop for GateThread {
    fn drop(&mut self) {
        let h = self.header();
        let slot = self.slot();
        let guard = self.gate.lock_as(self.me);
        // a slot another thread claimed is that thread's to free
        if self.own_slot_locked() == Owner::Mine {
            if self.holds_unit_locked() {
                slot.state.store(IDLE, Ordering::Release);
                self.gate.unadmit_locked();
            }
            h.retired.absorb(&slot.stats);
            slot.stats.clear();
            slot.map_base.store(0, Ordering::Relaxed);
            slot.owner_tid.store(0, Ordering::Relaxed);
            slot.owner_pid.store(0, Ordering::Release);
        }
        let granted = self.gate.select();
        drop(guard);
        self.gate.wake(&granted);
    }
}

/// Whose a thread's slot is (`GateThread::own_slot_locked`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Owner {
    /// This thread's (its owner words are, or have been put back, right).
    Mine,
    /// Named by words that do not prove it this thread's: claimed by
    /// another thread after it was freed.
    Stolen,
}

/// What `GateThread::rewait` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rewait {
    /// Admitted (meanwhile, or by the heal).
    Admitted,
    /// Queued again (or still): wait on.
    Waiting,
    /// The slot was claimed by another thread and none is free: the
    /// request proceeds ungated, counted as overdue.
    NoSlot,
}

/// An admitted request; ends it when dropped.
#[derive(Debug)]
pub struct Permit<'a> {
    thread: &'a GateThread,
    /// How the request was admitted.
    pub admission: Admission,
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if self.admission != Admission::Bypassed {
            self.thread.end();
        }
    }
}

/// Adds `n` to a counter only its owner writes (no read-modify-write).
fn bump(counter: &AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

fn record(stats: &crate::shm::SharedStats, bytes: u64, is_write: bool) {
    let class = memtamer_core::SizeClass::of(bytes).index();
    if is_write {
        bump(&stats.write_bytes, bytes);
        bump(&stats.writes_by_size[class], 1);
    } else {
        bump(&stats.read_bytes, bytes);
        bump(&stats.reads_by_size[class], 1);
    }
}

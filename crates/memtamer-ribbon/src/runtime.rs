//! The Ribbon runtime (thesis §6.3.1, "decoupled concurrency control"):
//! per-application-thread flush queues, M flusher threads, fences as
//! deadlines, and the fallback to application-thread flushing.
//!
//! Mapping: with N registered queues and M flushers, flusher `i` serves
//! the queues at ranks `i, i+M, i+2M, ...` of the active list, so each
//! serves at most ⌊N/M⌋ + 1 queues. When M > N flusher 0 becomes the
//! dispatcher: it takes each queue's batch and splits its cache lines over
//! the other flushers' job rings, so no queue has two consumers.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use std::thread::JoinHandle;

use crate::comember::Member;
use crate::coshm::Corun;
use crate::error::{RibbonError, MAX_FLUSH_LEN};
use crate::queue::{Queue, Request};
use crate::route::Route;
pub use crate::shared::{hardware_threads, Config, CorunRole, Executor, Flushers, Stats};
use crate::shared::{Counters, Ev, Shared};

/// Lowest address a flush may touch: the first page is never mapped, so a
/// range starting there is a NULL (or NULL + offset) pointer.
pub const FIRST_MAPPED: usize = 4096;

/// Checks a flush range (no wrap-around, not absurdly long, not in the
/// NULL page). `ribbon_flush(NULL, 64)` was queued, and the flusher's
/// CLWB on address 0 killed the process with SIGSEGV at the next fence;
/// an empty range touches nothing and stays a no-op.
pub fn check_range(addr: usize, len: usize) -> Result<(), RibbonError> {
    if len > MAX_FLUSH_LEN || addr.checked_add(len).is_none() {
        return Err(RibbonError::Range { addr, len });
    }
    if len > 0 && addr < FIRST_MAPPED {
        return Err(RibbonError::NullRange { addr, len });
    }
    Ok(())
}

/// A running Ribbon instance. Stopping (or dropping) it drains every
/// queue, then joins its threads.
pub struct Ribbon {
    shared: Arc<Shared>,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Ribbon {
    /// Validates `cfg`, creates the queues and starts the flusher, control
    /// and proactive threads (thesis Table 6.2, `ribbon_start`).
    pub fn start(cfg: Config) -> Result<Ribbon, RibbonError> {
        cfg.validate()?;
        let cap = cfg.queue_entries.next_power_of_two().max(2);
        let max_flushers = match cfg.flushers {
            Flushers::Fixed(m) => m,
            Flushers::Adaptive => cfg.cores.max(1),
        };
        let initial = match cfg.flushers {
            Flushers::Fixed(m) => m,
            Flushers::Adaptive => crate::controller::Points::new(cfg.control.p1, cfg.cores).p1,
        };
        let pin = cfg.pin.as_deref().map(crate::pin::Pinner::read).transpose();
        let pin_failed = pin.is_err();
        let pin = pin.ok().flatten();
        let start_cpu = pin.as_ref().and_then(|_| crate::pin::current_cpu());
        let shared = Arc::new(Shared {
            exec: cfg.executor,
            inline_when_dedicated: cfg.inline_when_dedicated,
            queues: (0..cfg.app_threads).map(|_| Queue::new(cap)).collect(),
            slot_used: (0..cfg.app_threads)
                .map(|_| AtomicBool::new(false))
                .collect(),
            active: (0..cfg.app_threads).map(|_| AtomicUsize::new(0)).collect(),
            active_len: AtomicUsize::new(0),
            registry: Mutex::new(()),
            m: AtomicUsize::new(initial),
            max_flushers,
            stopping: AtomicBool::new(false),
            sleeping: (0..max_flushers).map(|_| AtomicBool::new(false)).collect(),
            sleepers: AtomicUsize::new(0),
            threads: OnceLock::new(),
            jobs: (0..max_flushers).map(|_| Queue::new(256)).collect(),
            proactive_on: AtomicBool::new(false),
            proactive_regions: RwLock::new(Vec::new()),
            counters: Counters::default(),
            own: (0..cfg.app_threads).map(|_| Default::default()).collect(),
            source_name: Mutex::new(crate::bandwidth::FLUSHED_BYTES),
            last_search: Mutex::new(None),
            pin,
            pin_epoch: AtomicU64::new(0),
            start_cpu,
            busy_cpu: (0..cfg.app_threads)
                .map(|_| AtomicU32::new(crate::shared::NO_CPU))
                .collect(),
            flusher_tids: (0..max_flushers).map(|_| AtomicI32::new(0)).collect(),
            helper_tids: [AtomicI32::new(0), AtomicI32::new(0)],
            corun_error: Mutex::new(None),
            #[cfg(test)]
            broken: cfg.broken_publish_early,
            #[cfg(test)]
            broken_dedicated_fence: cfg.broken_dedicated_fence,
            #[cfg(test)]
            broken_round_fence: cfg.broken_round_fence,
        });
        if pin_failed {
            // no topology: the flushers and helpers stay on the process's mask
            shared.counters.pin_failures.fetch_add(1, Ordering::Relaxed);
        }
        let ribbon = Ribbon {
            shared: shared.clone(),
            handles: Mutex::new(Vec::new()),
        };
        let mut handles = Vec::new();
        let mut threads = Vec::new();
        for id in 0..max_flushers {
            let s = shared.clone();
            let h = spawn("ribbon-flusher", move || crate::flusher::run(&s, id))?;
            threads.push(h.thread().clone());
            handles.push(h);
        }
        let _ = shared.threads.set(threads);
        if cfg.flushers == Flushers::Adaptive {
            let s = shared.clone();
            let (control, source) = (cfg.control.clone(), cfg.bandwidth);
            let proactive = cfg.sampler.is_some();
            let detect_idle = cfg.detect_idle;
            let member = join_corun(&shared, cfg.corun, &control, detect_idle);
            handles.push(spawn("ribbon-control", move || {
                crate::flusher::control(&s, control, source, proactive, detect_idle, member)
            })?);
        } else {
            shared
                .proactive_on
                .store(cfg.sampler.is_some(), Ordering::Relaxed);
        }
        if let Some(sampler) = cfg.sampler {
            let s = shared.clone();
            handles.push(spawn("ribbon-proactive", move || {
                crate::flusher::proactive(&s, sampler)
            })?);
        }
        if let Ok(mut h) = ribbon.handles.lock() {
            *h = handles;
        }
        Ok(ribbon)
    }

    /// A queue for the calling thread (thesis: one FIFO per application
    /// thread). If all `app_threads` queues are taken the producer flushes
    /// on its own thread (correct, just not offloaded).
    pub fn producer(&self) -> Producer {
        let slot = self.shared.register();
        Producer {
            shared: self.shared.clone(),
            slot,
        }
    }

    /// Activity counters now.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// The adaptive controller's last search: each probe window with the
    /// bandwidth it read, P1..P4's estimates, the table row and M chosen,
    /// and why the search started (thesis §6.3.1; docs/ribbon.md, "The
    /// search's record"). None with a fixed flusher count, before the
    /// control thread's first step, or while a co-running coordinator
    /// (`MEMTAMER_RIBBON_SHARED`) sets the count instead.
    pub fn last_search(&self) -> Option<crate::search_record::SearchRecord> {
        self.shared.last_search.lock().ok().and_then(|r| r.clone())
    }

    /// Sets the flusher count by hand (benchmarks, `Flushers::Fixed`);
    /// clamped to the threads started. An adaptive controller overrides it.
    pub fn set_flushers(&self, m: usize) {
        self.shared
            .m
            .store(m.min(self.shared.max_flushers), Ordering::Release);
        for i in 0..self.shared.max_flushers {
            self.shared.wake(i);
        }
        self.shared.placement_changed();
    }

    /// Allows proactive flushes inside `addr..addr+len` (memory that stays
    /// mapped until [`Ribbon::forbid_proactive`]); a sampled address outside
    /// every allowed range is never touched.
    pub fn allow_proactive(&self, addr: usize, len: usize) {
        if let Ok(mut r) = self.shared.proactive_regions.write() {
            r.push((addr, len));
        }
    }

    /// Removes a range; when this returns no proactive flush touches it
    /// (call it before unmapping).
    pub fn forbid_proactive(&self, addr: usize, len: usize) {
        if let Ok(mut r) = self.shared.proactive_regions.write() {
            r.retain(|x| *x != (addr, len));
        }
    }

    /// Removes every allowed range overlapping `addr..addr+len`; when this
    /// returns no proactive flush touches them (the shim calls it from its
    /// `munmap` wrapper, which sees only the range being unmapped).
    pub fn forbid_proactive_overlapping(&self, addr: usize, len: usize) {
        if let Ok(mut r) = self.shared.proactive_regions.write() {
            crate::proactive::retain_outside(&mut r, addr, len);
        }
    }

    /// Blocks until every flush enqueued on any queue before the call was
    /// executed and fenced: what must happen before memory is unmapped
    /// (a queued flush of unmapped memory would fault in a flusher). A
    /// no-op on a Ribbon thread (it would wait for itself).
    pub fn drain_all(&self) {
        if IS_RIBBON_THREAD.with(|t| t.get()) {
            return;
        }
        let s = &*self.shared;
        let targets: Vec<usize> = s.queues.iter().map(Queue::tail).collect();
        std::sync::atomic::fence(Ordering::SeqCst);
        s.wake_active();
        for (q, &target) in s.queues.iter().zip(&targets) {
            let mut spins = 0u32;
            while (target.wrapping_sub(q.head()) as isize) > 0 {
                if s.m.load(Ordering::Relaxed) == 0 || s.stopping.load(Ordering::Relaxed) {
                    if let Some(b) = q.take() {
                        s.execute(b);
                    }
                    continue;
                }
                spins += 1;
                if spins < SPINS {
                    std::hint::spin_loop();
                } else {
                    if spins & 63 == 0 {
                        s.wake_active();
                    }
                    std::thread::yield_now();
                }
            }
        }
    }

    /// Makes every producer flush on its own thread from now on (used in
    /// a fork child, where the flusher threads do not exist).
    pub fn mark_stopping(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
    }

    /// Drains every queue and joins all threads (thesis `ribbon_stop`).
    pub fn stop(self) {
        self.shutdown();
    }

    fn shutdown(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for i in 0..self.shared.max_flushers {
            self.shared.wake(i);
            if let Some(t) = self.shared.threads.get().and_then(|t| t.get(i)) {
                t.unpark();
            }
        }
        let handles = self
            .handles
            .lock()
            .map(|mut h| std::mem::take(&mut *h))
            .unwrap_or_default();
        for h in handles {
            let _ = h.join();
        }
        // Whatever a producer enqueued while the flushers exited.
        for q in self.shared.queues.iter() {
            while let Some(b) = q.take() {
                self.shared.execute(b);
            }
        }
    }
}

impl Drop for Ribbon {
    fn drop(&mut self) {
        self.shutdown();
    }
}

thread_local! {
    /// Set on Ribbon's own threads (flushers, control, proactive).
    static IS_RIBBON_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn spawn(
    what: &'static str,
    f: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>, RibbonError> {
    std::thread::Builder::new()
        .name(what.into())
        .spawn(move || {
            IS_RIBBON_THREAD.with(|t| t.set(true));
            f()
        })
        .map_err(|source| RibbonError::Spawn { what, source })
}

/// Registers an adaptive instance in the co-running registry when asked
/// (thesis §6.5.4). Any refusal leaves it with its own search: the reason
/// is kept for `Stats::corun_error` and printed once.
fn join_corun(
    s: &Shared,
    corun: Corun,
    control: &crate::controller::ControlConfig,
    detect_idle: bool,
) -> Option<Member> {
    let refused = match corun {
        Corun::Off => return None,
        Corun::Refused(e) => e,
        Corun::Shared(path) => {
            let now = crate::coshm::now_ns();
            match Member::join(&path, s.max_flushers, control.clone(), detect_idle, now) {
                Ok(m) => {
                    s.counters
                        .corun_role
                        .store(CorunRole::Waiting as usize, Ordering::Relaxed);
                    return Some(m);
                }
                Err(e) => e,
            }
        }
    };
    eprintln!("memtamer ribbon: {refused}");
    if let Ok(mut e) = s.corun_error.lock() {
        *e = Some(refused.to_string());
    }
    None
}

/// Spins this many rounds before yielding while waiting for a fence.
const SPINS: u32 = 256;
/// Spin rounds (~1-3 us) after which a fence runs its own untaken batch
/// when M >= N; an active flusher takes a batch well within that.
const HELP_AFTER: u32 = 32;

/// One application thread's handle: its FIFO and the fence on it. Not
/// `Sync`: only the owning thread enqueues (single producer).
pub struct Producer {
    shared: Arc<Shared>,
    slot: Option<usize>,
}

impl Producer {
    /// Enqueues a flush of `addr..addr+len` (thesis `ribbon_flush`). Runs
    /// it here instead when there is no flusher (M = 0, stopping, no free
    /// queue); when the queue is full, waits for the flusher and then
    /// drains the queue itself: never drops a request.
    ///
    /// # Safety
    /// The range must stay mapped until the next [`Producer::fence`].
    pub unsafe fn flush(&mut self, addr: *const u8, len: usize) -> Result<(), RibbonError> {
        check_range(addr as usize, len)?;
        if len == 0 {
            return Ok(());
        }
        let s = &*self.shared;
        s.bump(self.slot, Ev::Requests, 1);
        let route = crate::route::route(
            s.inline_when_dedicated,
            s.m.load(Ordering::Relaxed),
            s.active_len.load(Ordering::Relaxed),
            self.slot.is_some(),
            s.stopping.load(Ordering::Relaxed),
        );
        let queue = match (route, self.slot) {
            (Route::Queue, Some(slot)) => &s.queues[slot],
            (Route::Dedicated, _) => {
                // M = N: this queue's flusher would be dedicated to it,
                // so the hand-off buys no concurrency; run it here.
                // SAFETY: forwarded from the caller.
                unsafe { flush_here(s, self.slot, addr, len) };
                s.bump(self.slot, Ev::Dedicated, 1);
                return Ok(());
            }
            _ => {
                // SAFETY: forwarded from the caller.
                unsafe { flush_here(s, self.slot, addr, len) };
                s.bump(self.slot, Ev::Inline, 1);
                return Ok(());
            }
        };
        let req = Request {
            addr: addr as usize,
            len,
        };
        let mut tries = 0u32;
        // SAFETY: this Producer owns the slot: it is the queue's only producer.
        while !unsafe { queue.push(req) } {
            std::sync::atomic::fence(Ordering::SeqCst);
            s.wake_active();
            tries += 1;
            if tries > SPINS {
                if let Some(b) = queue.take() {
                    s.counters.self_drains.fetch_add(1, Ordering::Relaxed);
                    s.execute(b);
                    continue;
                }
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        if s.sleepers.load(Ordering::Relaxed) > 0 {
            s.wake_active();
        }
        Ok(())
    }

    /// Blocks until every flush this thread enqueued before the call was
    /// executed and fenced (thesis `ribbon_fence`: a fence is a deadline).
    pub fn fence(&mut self) {
        let s = &*self.shared;
        s.bump(self.slot, Ev::Fences, 1);
        #[cfg(test)]
        let skip = s.broken_dedicated_fence && s.dedicated();
        #[cfg(not(test))]
        let skip = false;
        if let Some(slot) = self.slot.filter(|_| !skip) {
            let q = &s.queues[slot];
            let target = q.tail();
            if q.head() == target {
                // Drained already (always so when flushes run on this
                // thread): nothing to wait for, nobody to wake.
                (s.exec.fence)();
                return;
            }
            std::sync::atomic::fence(Ordering::SeqCst);
            if s.sleepers.load(Ordering::Relaxed) > 0 {
                s.wake_active();
            }
            let mut spins = 0u32;
            while (target.wrapping_sub(q.head()) as isize) > 0 {
                if s.m.load(Ordering::Relaxed) == 0 || s.stopping.load(Ordering::Relaxed) {
                    drain_own(s, self.slot);
                    continue;
                }
                spins += 1;
                if spins < HELP_AFTER {
                    std::hint::spin_loop();
                    continue;
                }
                // No flusher has taken the batch for a while (asleep, or
                // descheduled on a busy machine). With exactly one flusher
                // per queue (M = N) this thread may run its own batch: a
                // queue has one consumer at a time, so at most N threads
                // flush, as with M = N. Not with M < N (that would bypass
                // the throttle) nor M > N (the dispatcher spreads the batch
                // over several flushers, which one thread cannot match).
                let m = s.m.load(Ordering::Relaxed);
                if crate::route::fence_may_help(m, s.active_len.load(Ordering::Relaxed)) {
                    if let Some(b) = q.take() {
                        s.counters.self_drains.fetch_add(1, Ordering::Relaxed);
                        s.execute(b);
                        continue;
                    }
                }
                if spins < SPINS {
                    std::hint::spin_loop();
                    continue;
                }
                if spins & 63 == 0 {
                    s.wake_active();
                }
                std::thread::yield_now();
            }
        }
        // Always fence here too: it orders flushes this thread ran itself,
        // and also this thread's own non-temporal stores (a libpmem copy
        // may use them), which only an sfence on this thread drains.
        (s.exec.fence)();
    }

    /// Whether this thread got a queue (false: it flushes inline).
    pub fn has_queue(&self) -> bool {
        self.slot.is_some()
    }

    /// The runtime this producer belongs to is stopping or stopped.
    pub fn is_stale(&self) -> bool {
        self.shared.stopping.load(Ordering::Relaxed)
    }
}

impl Drop for Producer {
    fn drop(&mut self) {
        self.fence();
        if let Some(slot) = self.slot.take() {
            self.shared.unregister(slot);
        }
    }
}

/// Executes a flush on the calling thread, after whatever its queue still
/// holds (so requests keep program order when the route changes from the
/// queue to the caller). The caller's next fence orders it.
///
/// # Safety
/// `addr..addr+len` must be mapped.
unsafe fn flush_here(s: &Shared, slot: Option<usize>, addr: *const u8, len: usize) {
    drain_own(s, slot);
    // SAFETY: forwarded from the caller.
    unsafe { (s.exec.flush)(addr, len) };
    let bytes = memtamer_pmem::lines_covered(addr as usize, len) * memtamer_pmem::CACHE_LINE;
    s.bump(slot, Ev::FlushedBytes, bytes as u64);
}

/// Executes whatever queue `slot` still holds on the calling thread (its
/// producer, when no flusher will).
fn drain_own(s: &Shared, slot: Option<usize>) {
    let Some(slot) = slot else { return };
    let q = &s.queues[slot];
    while q.has_work() {
        if let Some(b) = q.take() {
            s.counters.self_drains.fetch_add(1, Ordering::Relaxed);
            s.execute(b);
        } else {
            std::thread::yield_now();
        }
    }
}

#[cfg(test)]
#[path = "runtime_tests.rs"]
mod tests;

//! The process-wide SIGSEGV handler shared by migration and profiling.
//!
//! Two things make pages of a registered object fault on purpose:
//! * **migration** write-protects the whole object while the helper thread
//!   copies it; a writer that faults waits in the handler until the object is
//!   remapped read-write at the same address, then its store is retried, so no
//!   write can land in the old copy after it was read (see `registry`);
//! * **profiling** maps a few sampled pages `PROT_NONE` per window; the first
//!   touch of such a page is counted and the page is given back read-write,
//!   the way Linux's NUMA hinting faults sample accesses without a PMU;
//! * **page sampling** ([`pagesample`]) does the same per page for
//!   memory the registry does not own (Tahoe's task dependence ranges).
//!
//! The handler must be async-signal-safe, so it never locks: it scans a fixed
//! table of atomics ([`SLOTS`]) that the registry fills under its mutex. A
//! fault outside every registered object and sampled page goes to the handler installed before
//! ours (Rust's stack-overflow handler, or the default action), so real bugs
//! still crash.

use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::SeqCst};
use std::sync::OnceLock;

pub mod pagesample;

/// Capacity of the lock-free object table.
pub const MAX_SLOTS: usize = 4096;

/// Slot not in use.
pub(crate) const FREE: u8 = 0;
/// Object live, faults are profiling samples.
pub(crate) const IDLE: u8 = 1;
/// Object being migrated: faulting writers wait.
pub(crate) const MIGRATING: u8 = 2;

/// One registered object as the signal handler sees it.
pub(crate) struct Slot {
    pub base: AtomicUsize,
    pub len: AtomicUsize,
    pub state: AtomicU8,
    /// Handlers currently between "state is IDLE" and "page restored"; the
    /// migration waits for 0 before write-protecting (Dekker-style, SeqCst).
    pub inflight: AtomicU32,
    /// Profiling faults taken (monotonic; the profiler reads deltas).
    pub faults: AtomicU64,
    /// Nanoseconds writers spent blocked during migrations (exposed cost).
    pub blocked_ns: AtomicU64,
    /// Number of writer faults that had to wait for a migration.
    pub blocked_faults: AtomicU64,
    /// Threads waiting in the handler right now.
    pub waiters: AtomicU32,
}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    base: AtomicUsize::new(0),
    len: AtomicUsize::new(0),
    state: AtomicU8::new(FREE),
    inflight: AtomicU32::new(0),
    faults: AtomicU64::new(0),
    blocked_ns: AtomicU64::new(0),
    blocked_faults: AtomicU64::new(0),
    waiters: AtomicU32::new(0),
};

/// The table the handler scans; indices are handed out by [`claim`].
pub(crate) static SLOTS: [Slot; MAX_SLOTS] = [EMPTY; MAX_SLOTS];
/// One past the highest slot ever claimed (bounds the handler's scan).
static HIGH: AtomicUsize = AtomicUsize::new(0);
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static PREV: OnceLock<libc::sigaction> = OnceLock::new();

/// The system page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as usize
    } else {
        4096
    }
}

/// Installs the handler once per process; later calls are no-ops.
pub(crate) fn install() -> Result<(), crate::TierError> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    let r = DONE.get_or_init(|| {
        PAGE.store(page_size(), SeqCst);
        // SAFETY: sigaction with a zeroed struct plus the fields we set is the
        // documented way to install an SA_SIGINFO handler.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_segv as *const () as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK | libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(libc::SIGSEGV, &sa, &mut old) != 0 {
                return Err(std::io::Error::last_os_error().to_string());
            }
            let _ = PREV.set(old);
        }
        Ok(())
    });
    r.clone().map_err(|e| crate::TierError::Os {
        what: format!("sigaction(SIGSEGV): {e}"),
        source: std::io::Error::other("handler not installed"),
    })
}

/// Claims a free slot for `[base, base+len)`; `None` when the table is full.
/// Called with the registry mutex held, so claims never race each other.
pub(crate) fn claim(base: usize, len: usize) -> Option<usize> {
    let i = (0..MAX_SLOTS).find(|&i| SLOTS[i].state.load(SeqCst) == FREE)?;
    let s = &SLOTS[i];
    s.base.store(base, SeqCst);
    s.len.store(len, SeqCst);
    s.faults.store(0, SeqCst);
    s.blocked_ns.store(0, SeqCst);
    s.blocked_faults.store(0, SeqCst);
    s.state.store(IDLE, SeqCst);
    HIGH.fetch_max(i + 1, SeqCst);
    Some(i)
}

/// Releases a slot; waits for handlers still working on it.
pub(crate) fn release(i: usize) {
    let s = &SLOTS[i];
    s.state.store(FREE, SeqCst);
    wait_no_inflight(i);
    s.len.store(0, SeqCst);
}

/// Spins (yielding) until no handler is between its state check and its
/// `mprotect` for slot `i`.
pub(crate) fn wait_no_inflight(i: usize) {
    while SLOTS[i].inflight.load(SeqCst) != 0 {
        std::thread::yield_now();
    }
}

fn now_ns() -> u64 {
    // SAFETY: clock_gettime is async-signal-safe and writes only `ts`.
    unsafe {
        let mut ts: libc::timespec = std::mem::zeroed();
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}

fn find(addr: usize) -> Option<&'static Slot> {
    let high = HIGH.load(SeqCst);
    SLOTS[..high].iter().find(|s| {
        let base = s.base.load(SeqCst);
        s.state.load(SeqCst) != FREE && addr >= base && addr < base + s.len.load(SeqCst)
    })
}

extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some(slot) = find(addr) {
        slot.inflight.fetch_add(1, SeqCst);
        if slot.state.load(SeqCst) == MIGRATING {
            slot.inflight.fetch_sub(1, SeqCst);
            slot.waiters.fetch_add(1, SeqCst);
            let t0 = now_ns();
            while slot.state.load(SeqCst) == MIGRATING {
                // SAFETY: sched_yield is async-signal-safe.
                unsafe { libc::sched_yield() };
            }
            slot.blocked_ns.fetch_add(now_ns() - t0, SeqCst);
            slot.blocked_faults.fetch_add(1, SeqCst);
            slot.waiters.fetch_sub(1, SeqCst);
            return; // the faulting store is retried on the new mapping
        }
        if slot.state.load(SeqCst) == IDLE {
            let page = PAGE.load(SeqCst);
            let p = addr & !(page - 1);
            // SAFETY: `p` lies inside a mapping the registry owns.
            unsafe {
                libc::mprotect(
                    p as *mut libc::c_void,
                    page,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
            slot.faults.fetch_add(1, SeqCst);
        }
        slot.inflight.fetch_sub(1, SeqCst);
        return;
    }
    if pagesample::on_fault(addr, PAGE.load(SeqCst)) {
        return; // a sampled page of program memory, given back
    }
    chain(sig, info, ctx);
}

fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: we call the previously installed handler with the arguments the
    // kernel gave us, or restore the default action so the retried access
    // kills the process as it would have without us.
    unsafe {
        match PREV.get() {
            Some(prev)
                if prev.sa_sigaction != libc::SIG_DFL && prev.sa_sigaction != libc::SIG_IGN =>
            {
                if prev.sa_flags & libc::SA_SIGINFO != 0 {
                    let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                        std::mem::transmute(prev.sa_sigaction);
                    f(sig, info, ctx);
                } else {
                    let f: extern "C" fn(libc::c_int) = std::mem::transmute(prev.sa_sigaction);
                    f(sig);
                }
            }
            _ => {
                libc::signal(libc::SIGSEGV, libc::SIG_DFL);
            }
        }
    }
}

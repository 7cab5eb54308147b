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
//! table of atomics ([`SLOTS`]) that every registry of the process fills
//! (slots are taken by compare-and-swap, not under a registry's mutex:
//! several registries, each with its own mutex, share the table). A
//! fault outside every registered object and sampled page goes to the handler installed before
//! ours (Rust's stack-overflow handler, or the default action), so real bugs
//! still crash.

use std::sync::atomic::{
    AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::SeqCst,
};
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
/// Slot being filled by [`claim`] or emptied by [`release`]: owned by one
/// registry, not a live object for the handler.
pub(crate) const BUSY: u8 = 3;

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
/// `MEMTAMER_GUARD_TRACE` was set at install (see [`trace`]).
static TRACE: AtomicBool = AtomicBool::new(false);

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
        TRACE.store(std::env::var_os("MEMTAMER_GUARD_TRACE").is_some(), SeqCst);
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
///
/// Safe to call from several registries at once (two runtimes, or Unimem
/// and the Tahoe tool in one process; each registry has its own mutex, so
/// nothing serialises their claims): a slot is taken by one
/// compare-and-swap `FREE -> BUSY`, filled, and only then made visible to
/// the handler (`IDLE`). A plain "find FREE, then store" let two registries
/// take the same slot, and the loser's object had no slot at all: its next
/// sampled fault went to the previous handler and killed the process
/// (issue 20, docs/notebook/unimem.md "Several drivers in one process").
pub(crate) fn claim(base: usize, len: usize) -> Option<usize> {
    let i = (0..MAX_SLOTS).find(|&i| {
        SLOTS[i]
            .state
            .compare_exchange(FREE, BUSY, SeqCst, SeqCst)
            .is_ok()
    })?;
    let s = &SLOTS[i];
    s.base.store(base, SeqCst);
    s.len.store(len, SeqCst);
    s.faults.store(0, SeqCst);
    s.blocked_ns.store(0, SeqCst);
    s.blocked_faults.store(0, SeqCst);
    HIGH.fetch_max(i + 1, SeqCst);
    s.state.store(IDLE, SeqCst);
    Some(i)
}

/// Releases a slot; waits for handlers still working on it. The slot stays
/// `BUSY` (unclaimable, invisible to the handler) until it is cleared, so a
/// claim by another registry can never be clobbered by this release.
pub(crate) fn release(i: usize) {
    let s = &SLOTS[i];
    s.state.store(BUSY, SeqCst);
    wait_no_inflight(i);
    while s.waiters.load(SeqCst) != 0 {
        std::thread::yield_now();
    }
    s.len.store(0, SeqCst);
    s.base.store(0, SeqCst);
    s.state.store(FREE, SeqCst);
}

/// Whether `[addr, addr+len)` overlaps an object some registry of this
/// process holds (any slot not `FREE`). The page sampler refuses such
/// pages: the registry protects and remaps its objects itself.
pub(crate) fn in_object(addr: usize, len: usize) -> bool {
    SLOTS[..HIGH.load(SeqCst)].iter().any(|s| {
        let base = s.base.load(SeqCst);
        s.state.load(SeqCst) != FREE
            && addr < base.saturating_add(s.len.load(SeqCst))
            && base < addr.saturating_add(len)
    })
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

/// Whether slot `s` holds a live object (`IDLE` or `MIGRATING`) that
/// contains `addr`.
fn covers(s: &Slot, addr: usize) -> bool {
    let st = s.state.load(SeqCst);
    let base = s.base.load(SeqCst);
    (st == IDLE || st == MIGRATING) && addr >= base && addr - base < s.len.load(SeqCst)
}

/// The slot of the live object containing `addr`, with its `inflight`
/// count raised (the caller lowers it). The count is raised *before* the
/// slot is checked again: a [`release`] marks the slot `BUSY` and then
/// waits for `inflight` to reach 0 (Dekker-style, all SeqCst), so once the
/// second check passes the slot cannot be cleared and re-claimed for
/// another object under the handler's feet; if it fails the scan goes on.
fn enter(addr: usize) -> Option<&'static Slot> {
    let high = HIGH.load(SeqCst);
    SLOTS[..high].iter().find(|s| {
        if !covers(s, addr) {
            return false;
        }
        s.inflight.fetch_add(1, SeqCst);
        if covers(s, addr) {
            return true;
        }
        s.inflight.fetch_sub(1, SeqCst);
        false
    })
}

extern "C" fn on_segv(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo for SA_SIGINFO handlers.
    let addr = unsafe { (*info).si_addr() } as usize;
    if let Some(slot) = enter(addr) {
        if slot.state.load(SeqCst) == MIGRATING {
            // Counted as a waiter before leaving `inflight`: a release
            // waits for both, so the counters below stay this object's.
            slot.waiters.fetch_add(1, SeqCst);
            slot.inflight.fetch_sub(1, SeqCst);
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
    trace(addr);
    chain(sig, info, ctx);
}

/// Writes ` 0x<16 hex digits>` to stderr (async-signal-safe: no
/// allocation, no lock, one `write`).
fn write_hex(x: usize) {
    let mut b = *b" 0x0000000000000000";
    for (i, d) in b[3..].iter_mut().enumerate() {
        let v = ((x >> ((15 - i) * 4)) & 15) as u8;
        *d = if v < 10 { b'0' + v } else { b'a' + v - 10 };
    }
    write_err(&b);
}

fn write_err(b: &[u8]) {
    // SAFETY: write(2) is async-signal-safe; `b` is a valid buffer.
    unsafe { libc::write(2, b.as_ptr() as *const libc::c_void, b.len()) };
}

/// With `MEMTAMER_GUARD_TRACE` set (read once, at install), a fault the
/// handler does not recognise prints its address and the slot table
/// (`slot index base len state inflight waiters`) before it is passed on:
/// how the race of issue 20 was found (an object with no slot).
fn trace(addr: usize) {
    if !TRACE.load(SeqCst) {
        return;
    }
    write_err(b"memtamer guard: unrecognised fault at");
    write_hex(addr);
    for (i, s) in SLOTS[..HIGH.load(SeqCst)].iter().enumerate() {
        write_err(b"\nslot");
        write_hex(i);
        write_hex(s.base.load(SeqCst));
        write_hex(s.len.load(SeqCst));
        write_hex(s.state.load(SeqCst) as usize);
        write_hex(s.inflight.load(SeqCst) as usize);
        write_hex(s.waiters.load(SeqCst) as usize);
    }
    write_err(b"\n");
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Several registries claim and release slots at once, each under its
    /// own mutex (two runtimes, or Unimem and the Tahoe tool in one
    /// process): a slot is never handed to two objects, and a release never
    /// clears a slot another registry has just claimed. The ranges are
    /// fake (around 1 TiB, where neither the program, its libraries nor
    /// `mmap` place anything on Linux x86-64), so the handler never
    /// matches a real fault against them. No timing: the count of wrong
    /// claims must be exactly 0 (before the fix: 20 of 20 runs had some).
    #[test]
    fn concurrent_claims_never_share_or_clobber_a_slot() {
        const THREADS: usize = 4;
        const CLAIMS: usize = 100_000;
        let handles: Vec<_> = (0..THREADS)
            .map(|t| {
                std::thread::spawn(move || {
                    let mut wrong = 0usize;
                    for k in 0..CLAIMS {
                        let base = (0x100 + t) << 32 | k << 12;
                        let len = (t + 1) << 12;
                        let Some(i) = claim(base, len) else {
                            return Err("slot table full".to_string());
                        };
                        for _ in 0..2 {
                            for _ in 0..64 {
                                std::hint::spin_loop();
                            }
                            let s = &SLOTS[i];
                            if s.base.load(SeqCst) != base
                                || s.len.load(SeqCst) != len
                                || s.state.load(SeqCst) != IDLE
                            {
                                wrong += 1;
                                break;
                            }
                        }
                        release(i);
                    }
                    Ok(wrong)
                })
            })
            .collect();
        let wrong: usize = handles
            .into_iter()
            .map(|h| h.join().expect("claimer panicked").expect("claims"))
            .sum();
        assert_eq!(
            wrong, 0,
            "claims whose slot another registry took or cleared"
        );
    }
}

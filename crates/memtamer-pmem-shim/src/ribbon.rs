//! Ribbon mode (`MEMTAMER_RIBBON=1`): libpmem's flushes and fences of an
//! unmodified program go through Ribbon's queues (docs/ribbon.md).
//!
//! * `pmem_flush` enqueues on the calling thread's Ribbon queue;
//! * `pmem_drain` is a Ribbon fence (blocks until the thread's queue drained);
//! * `pmem_persist` is both;
//! * copies (`pmem_memcpy*`, `pmem_memmove*`, `pmem_memset*`) that would
//!   flush run with `PMEM_F_MEM_NOFLUSH` (plain stores, no write-back) and
//!   their range is enqueued instead; the `_persist` forms (and flag forms
//!   without `PMEM_F_MEM_NODRAIN`) then fence.
//!
//! Flusher threads execute requests with the real libpmem `pmem_flush`,
//! each admitted by the PATS gate as a PM write (the gate owns how many
//! threads touch PM; Ribbon owns how many flushers drain its queues).
//! Ribbon starts on the first call in each process (again in a fork
//! child) and is drained and stopped at exit.

use std::ffi::{c_int, c_uint, c_void};
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;

use memtamer_gate::process;
use memtamer_ribbon::bandwidth::BandwidthSource;
use memtamer_ribbon::{global, Executor, Flushers};

/// Env var switching Ribbon mode on (`1`, `on`, `true`).
pub const ENV_RIBBON: &str = "MEMTAMER_RIBBON";
/// Env var: queues (application threads with their own queue; default 256).
pub const ENV_QUEUES: &str = "MEMTAMER_RIBBON_QUEUES";
/// Env var: entries per queue (default 1024).
pub const ENV_ENTRIES: &str = "MEMTAMER_RIBBON_QUEUE_ENTRIES";
/// Env var: a file to which each process appends its Ribbon statistics at exit.
pub const ENV_STATS: &str = "MEMTAMER_RIBBON_STATS";
/// Env var: the controller's bandwidth signal: `auto` (default: the iMC
/// write counters through `memtamer-sense` where they open, else Ribbon's
/// own flushed-bytes rate) or `flushed` (always the latter).
pub const ENV_BANDWIDTH: &str = "MEMTAMER_RIBBON_BANDWIDTH";
/// Env var: `pebs` starts proactive flushing fed by PEBS store samples
/// (`memtamer_sense::ribbon::PebsStores`) over the files the program maps
/// with `pmem_map_file`; unset or `off`: no proactive flushing.
pub const ENV_PROACTIVE: &str = "MEMTAMER_RIBBON_PROACTIVE";
/// PEBS sample period (one sample per this many stores; the KIT thesis's 9973).
const PEBS_PERIOD: u64 = 9973;
/// Where the perf PMUs are described.
const PMU_ROOT: &str = "/sys/bus/event_source/devices";

/// libpmem's flag bits (libpmem.h).
pub const PMEM_F_MEM_NODRAIN: c_uint = 1 << 0;
/// Flush nothing (implies no drain).
pub const PMEM_F_MEM_NOFLUSH: c_uint = 1 << 5;

/// 0 unknown, 1 off, 2 on.
static MODE: AtomicU8 = AtomicU8::new(0);
/// Ribbon runs in this process (reset in a fork child).
static STARTED: AtomicBool = AtomicBool::new(false);
/// Start failed in this process: stay with plain libpmem.
static FAILED: AtomicBool = AtomicBool::new(false);
static START: Mutex<()> = Mutex::new(());
static HOOKS: std::sync::Once = std::sync::Once::new();

/// Whether `MEMTAMER_RIBBON` asks for Ribbon mode (read once).
#[inline]
pub fn enabled() -> bool {
    match MODE.load(Ordering::Relaxed) {
        2 => true,
        1 => false,
        _ => read_mode(),
    }
}

#[cold]
fn read_mode() -> bool {
    let on = match std::env::var(ENV_RIBBON) {
        Ok(v) => match v.trim() {
            "1" | "on" | "true" | "yes" => true,
            "" | "0" | "off" | "false" | "no" => false,
            other => {
                eprintln!("memtamer shim: {ENV_RIBBON}={other:?} is not 0/1; Ribbon stays off");
                false
            }
        },
        Err(_) => false,
    };
    MODE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
    on
}

fn env_usize(var: &str, default: usize) -> usize {
    match std::env::var(var) {
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            eprintln!("memtamer shim: {var}={v:?} is not a number; using {default}");
            default
        }),
        Err(_) => default,
    }
}

static REAL_FLUSH: AtomicUsize = AtomicUsize::new(0);
static REAL_DRAIN: AtomicUsize = AtomicUsize::new(0);

/// Flusher-side write-back: the real libpmem `pmem_flush`, admitted by
/// the PATS gate as a PM write of `len` bytes.
unsafe fn gated_real_flush(addr: *const u8, len: usize) {
    let f = crate::real(&REAL_FLUSH, c"pmem_flush");
    // SAFETY: libpmem's pmem_flush(const void *, size_t).
    let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn(*const c_void, usize)>(f) };
    // SAFETY: Ribbon passes ranges the application flushed.
    process::gated(len as u64, true, || unsafe { f(addr.cast(), len) });
}

/// The real libpmem `pmem_drain` (a store fence).
fn real_drain() {
    let f = crate::real(&REAL_DRAIN, c"pmem_drain");
    // SAFETY: libpmem's pmem_drain(void).
    let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn()>(f) };
    // SAFETY: no arguments, no preconditions.
    unsafe { f() };
}

/// Whether `MEMTAMER_RIBBON_PROACTIVE` asks for PEBS-fed proactive flushing.
pub fn proactive_wanted() -> bool {
    let v = std::env::var(ENV_PROACTIVE).unwrap_or_default();
    match v.trim() {
        "pebs" => true,
        "" | "off" | "0" => false,
        other => {
            eprintln!("memtamer shim: {ENV_PROACTIVE}={other:?} is not pebs/off; off");
            false
        }
    }
}

/// A file the program mapped with `pmem_map_file`: with proactive flushing
/// on, Ribbon may flush sampled lines inside it until it is unmapped.
pub fn mapped(addr: usize, len: usize) {
    if len > 0 && proactive_wanted() && ensure_started() {
        global::allow_proactive(addr, len);
    }
}

/// The bandwidth signal `MEMTAMER_RIBBON_BANDWIDTH` asks for; None means
/// Ribbon's own flushed-bytes rate (which `source=` in the statistics then
/// names).
fn bandwidth_source() -> Option<Box<dyn BandwidthSource>> {
    let want = std::env::var(ENV_BANDWIDTH).unwrap_or_default();
    match want.trim() {
        "flushed" => return None,
        "" | "auto" => {}
        other => {
            eprintln!("memtamer shim: {ENV_BANDWIDTH}={other:?} is not auto/flushed; using auto")
        }
    }
    let (src, _why) = memtamer_sense::ribbon::choose_bandwidth(std::path::Path::new(PMU_ROOT));
    src.map(|s| Box::new(s) as Box<dyn BandwidthSource>)
}

/// Starts Ribbon in this process if not yet; false if it cannot run.
#[inline]
fn ensure_started() -> bool {
    STARTED.load(Ordering::Acquire) || (!FAILED.load(Ordering::Relaxed) && start())
}

#[cold]
#[inline(never)]
fn start() -> bool {
    let _g = START.lock().unwrap_or_else(|e| e.into_inner());
    if STARTED.load(Ordering::Acquire) {
        return true;
    }
    HOOKS.call_once(|| {
        // SAFETY: registering plain extern "C" functions.
        unsafe {
            libc::pthread_atfork(None, None, Some(after_fork_child));
            libc::atexit(at_exit);
        }
    });
    let cfg = global::config_from_env(env_usize(ENV_QUEUES, 256), env_usize(ENV_ENTRIES, 1024))
        .map(|mut c| {
            c.executor = Executor {
                flush: gated_real_flush,
                fence: real_drain,
            };
            if c.flushers == Flushers::Adaptive {
                c.bandwidth = bandwidth_source();
            }
            if proactive_wanted() {
                match memtamer_sense::ribbon::PebsStores::open(PEBS_PERIOD) {
                    Ok(s) => c.sampler = Some(Box::new(s)),
                    Err(why) => eprintln!(
                        "memtamer shim: {ENV_PROACTIVE}=pebs but no PEBS store sampling ({why}); Ribbon runs without proactive flushing"
                    ),
                }
            }
            c
        });
    match cfg.and_then(global::start) {
        Ok(()) => {
            STARTED.store(true, Ordering::Release);
            true
        }
        Err(memtamer_ribbon::RibbonError::AlreadyStarted) => {
            STARTED.store(true, Ordering::Release);
            true
        }
        Err(e) => {
            eprintln!("memtamer shim: Ribbon not started, libpmem flushes as usual: {e}");
            FAILED.store(true, Ordering::Relaxed);
            false
        }
    }
}

/// In a fork child the flusher threads do not exist: forget the parent's
/// instance and start afresh on the next call.
extern "C" fn after_fork_child() {
    global::forget_after_fork();
    STARTED.store(false, Ordering::Release);
}

/// Drains every queue at exit and appends statistics if asked.
extern "C" fn at_exit() {
    if !STARTED.swap(false, Ordering::AcqRel) {
        return;
    }
    if let Ok(stats) = global::stop() {
        write_stats("exit", &stats);
    }
}

/// Appends one line of statistics to `MEMTAMER_RIBBON_STATS`, if set. Also
/// written at each unmap: processes that end with `_exit` (fio's forked
/// jobs) run no exit handler.
fn write_stats(event: &str, stats: &memtamer_ribbon::Stats) {
    if let Ok(path) = std::env::var(ENV_STATS) {
        let line = format!(
            "pid={} event={event} requests={} fences={} flushed_bytes={} inline={} dedicated={} self_drains={} flusher_batches={} dispatched={} flushers={} searches={} source={} pins={} helper_pins={} pin_failures={} corun={} corun_total={}\n",
            std::process::id(),
            stats.requests,
            stats.fences,
            stats.flushed_bytes,
            stats.inline_requests,
            stats.dedicated_requests,
            stats.self_drains,
            stats.flusher_batches,
            stats.dispatched_jobs,
            stats.flushers,
            stats.searches,
            stats.bandwidth_source,
            stats.pins,
            stats.helper_pins,
            stats.pin_failures,
            stats.corun.name(),
            stats.corun_total
        );
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// `pmem_flush` in Ribbon mode: enqueue (or flush here if Ribbon cannot run).
///
/// # Safety
/// As libpmem's pmem_flush.
pub unsafe fn flush(addr: *const c_void, len: usize) {
    if ensure_started() {
        // SAFETY: forwarded; an error means it already ran on this thread.
        let _ = unsafe { global::flush(addr.cast(), len) };
    } else {
        // SAFETY: forwarded.
        unsafe { gated_real_flush(addr.cast(), len) };
    }
}

/// Before memory is unmapped: every queued flush must have run (a flush
/// queued by `pmem_flush` and never drained would otherwise fault in a
/// flusher after the unmap; libpmem itself flushes at the call).
pub fn before_unmap(addr: usize, len: usize) {
    if STARTED.load(Ordering::Acquire) {
        global::forbid_proactive_overlapping(addr, len);
        global::drain_all();
        if let Some(stats) = global::stats() {
            write_stats("unmap", &stats);
        }
    }
}

/// `pmem_drain` in Ribbon mode: a Ribbon fence.
pub fn drain() {
    if ensure_started() {
        let _ = global::fence();
    } else {
        real_drain();
    }
}

/// Runs a copy that must not flush, then enqueues its destination and,
/// unless `nodrain`, fences.
///
/// # Safety
/// `copy` must write only `dst..dst+len`, which must be mapped.
pub unsafe fn copy_then_flush<R>(
    dst: *const c_void,
    len: usize,
    nodrain: bool,
    copy: impl FnOnce(c_uint) -> R,
) -> R {
    let r = process::gated(len as u64, true, || copy(PMEM_F_MEM_NOFLUSH));
    // SAFETY: the range was just written by the copy.
    unsafe { flush(dst, len) };
    if !nodrain {
        drain();
    }
    r
}

/// Whether a flag-taking copy with `flags` should be rerouted (it flushes).
pub fn reroutes(flags: c_uint) -> bool {
    flags & PMEM_F_MEM_NOFLUSH == 0
}

/// Helper for the flag forms: extra flags to add, and whether to fence.
pub fn plan(flags: c_uint) -> (c_uint, bool) {
    (flags | PMEM_F_MEM_NOFLUSH, flags & PMEM_F_MEM_NODRAIN != 0)
}

/// The signature of flag-taking copies.
pub type CopyFlags = unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_uint) -> *mut c_void;
/// The signature of pmem_memset with flags.
pub type SetFlags = unsafe extern "C" fn(*mut c_void, c_int, usize, c_uint) -> *mut c_void;

//! Trace mode (`MEMTAMER_TRACE=FILE`, off by default): records the
//! persistence calls of an unmodified libpmem / libpmemobj program as a
//! `memtamer-trace v1` flush/fence trace (format: docs/simulator.md
//! "Flush/fence traces"), which `memtamer sim`'s `trace` workload replays
//! on simulated Optane (issue 18 item 5, docs/notebook/tx.md "Optane estimate").
//!
//! * `pmem_flush` → `flush`; `pmem_drain` → `fence`; `pmem_persist` → both;
//! * the copies (`pmem_memcpy*`, `pmem_memmove*`, `pmem_memset*`) that
//!   flush → `flush` of the destination (+ `fence` unless no-drain);
//!   `PMEM_F_MEM_NOFLUSH` copies record nothing (a later flush covers them);
//! * `pmemobj_tx_end` closing the outermost transaction → `tx`;
//! * [`memtamer_trace_modified`], called by the traced program → `mod`.
//!
//! Stores are invisible to a preload library, so before each `flush` the
//! flushed lines are compared with their bytes at their previous flush
//! (first flush: always changed) and the changed ones are written as a
//! `store` record. Only the outermost call of a nest is recorded (libpmem
//! calling its own exported functions). Threads are numbered in order of
//! their first record; addresses are virtual addresses. A fork child
//! writes to `FILE.PID`.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::io::Write;
use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};
use std::sync::Mutex;

/// Env var naming the trace file.
pub const ENV_TRACE: &str = "MEMTAMER_TRACE";

const LINE: usize = 64;

/// 0 unknown, 1 off, 2 on.
static MODE: AtomicU8 = AtomicU8::new(0);
static NEXT_THREAD: AtomicU32 = AtomicU32::new(0);

thread_local! {
    static TID: Cell<u32> = const { Cell::new(u32::MAX) };
    static DEPTH: Cell<u32> = const { Cell::new(0) };
}

struct State {
    pid: u32,
    child: bool,
    out: Option<std::io::BufWriter<std::fs::File>>,
    shadow: HashMap<usize, [u8; LINE]>,
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

/// Whether `MEMTAMER_TRACE` names a file (read once).
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
    let on = std::env::var_os(ENV_TRACE).is_some_and(|v| !v.is_empty());
    MODE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
    if on {
        // SAFETY: registering a plain extern "C" function once per process.
        unsafe { libc::atexit(at_exit) };
    }
    on
}

extern "C" fn at_exit() {
    let mut g = STATE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = g.as_mut() {
        if let Some(o) = s.out.as_mut() {
            let _ = o.flush();
        }
    }
}

/// What to record once the outermost call returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum After {
    /// Nothing.
    Nothing,
    /// A flush of `addr..addr+len`, then a fence if `fence`.
    Flush(usize, usize, bool),
    /// A fence.
    Fence,
    /// A transaction ended (recorded if `pmemobj_tx_stage` then says none
    /// is open, i.e. it was the outermost).
    TxEnd,
    /// The program reports the bytes its last transaction modified.
    Modified(u64),
}

/// Records `THREAD mod BYTES` in trace mode: the program (memtamer-tx's
/// `trace` example, found by `dlsym`) reports how many bytes its last
/// transaction modified through the API, the denominator of the thesis's
/// write amplification (§5.2.1). A no-op otherwise.
#[no_mangle]
pub extern "C" fn memtamer_trace_modified(bytes: u64) {
    if enabled() {
        record(After::Modified(bytes));
    }
}

/// Runs `call`; in trace mode records `after` when this is the outermost
/// traced call of the thread, in counting mode counts it
/// ([`crate::count`]).
#[inline]
pub fn around<R>(after: impl FnOnce() -> After, call: impl FnOnce() -> R) -> R {
    if !enabled() && !crate::count::enabled() {
        return call();
    }
    let depth = DEPTH.with(|d| {
        let v = d.get();
        d.set(v + 1);
        v
    });
    let r = call();
    DEPTH.with(|d| d.set(depth));
    if depth == 0 {
        let a = after();
        if a == After::TxEnd && !outermost_tx_ended() {
            return r;
        }
        if crate::count::enabled() {
            match a {
                After::Flush(addr, len, fence) => {
                    crate::count::flush(addr, len);
                    if fence {
                        crate::count::fence();
                    }
                }
                After::Fence => crate::count::fence(),
                After::TxEnd => crate::count::tx_end(),
                After::Nothing | After::Modified(_) => {}
            }
        }
        if enabled() {
            record(a);
        }
    }
    r
}

fn tid() -> u32 {
    TID.with(|t| {
        if t.get() == u32::MAX {
            t.set(NEXT_THREAD.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}

/// The bytes of the line at `a` (volatile loads: other threads may store).
fn line_now(a: usize) -> [u8; LINE] {
    let mut b = [0u8; LINE];
    for (i, x) in b.iter_mut().enumerate() {
        // SAFETY: the program just flushed this line, so it is mapped.
        *x = unsafe { std::ptr::read_volatile((a + i) as *const u8) };
    }
    b
}

fn open(s: &mut State) {
    let Some(path) = std::env::var_os(ENV_TRACE) else {
        return;
    };
    let mut p = std::path::PathBuf::from(path);
    if s.child {
        let mut name = p.into_os_string();
        name.push(format!(".{}", s.pid));
        p = name.into();
    }
    match std::fs::File::create(&p) {
        Ok(f) => {
            let mut w = std::io::BufWriter::new(f);
            let _ = writeln!(
                w,
                "# memtamer-trace v1\n# source=memtamer-pmem-shim pid={}",
                s.pid
            );
            s.out = Some(w);
        }
        Err(e) => {
            let msg = format!("memtamer pmem shim: MEMTAMER_TRACE {}: {e}\n", p.display());
            // SAFETY: writing a buffer we own to stderr.
            unsafe { libc::write(2, msg.as_ptr().cast(), msg.len()) };
            MODE.store(1, Ordering::Relaxed);
        }
    }
}

fn record(after: After) {
    if after == After::Nothing {
        return;
    }
    let t = tid();
    let mut g = STATE.lock().unwrap_or_else(|p| p.into_inner());
    let me = std::process::id();
    let s = g.get_or_insert_with(|| State {
        pid: me,
        child: false,
        out: None,
        shadow: HashMap::new(),
    });
    if s.pid != me {
        // a fork child: its own file, its own view of the lines
        s.pid = me;
        s.child = true;
        s.out = None;
        s.shadow.clear();
    }
    if s.out.is_none() {
        open(s);
    }
    let State { out, shadow, .. } = s;
    let Some(out) = out.as_mut() else { return };
    let _ = match after {
        After::Flush(a, len, fence) if len > 0 => {
            let first = a / LINE * LINE;
            let mut run: Option<(usize, usize)> = None;
            let mut l = first;
            while l < a + len {
                let now = line_now(l);
                let changed = shadow.insert(l, now) != Some(now);
                run = match (run, changed) {
                    (Some((s0, _)), true) => Some((s0, l + LINE)),
                    (None, true) => Some((l, l + LINE)),
                    (Some((s0, e)), false) => {
                        let _ = writeln!(out, "{t} store {s0:x} {}", e - s0);
                        None
                    }
                    (None, false) => None,
                };
                l += LINE;
            }
            if let Some((s0, e)) = run {
                let _ = writeln!(out, "{t} store {s0:x} {}", e - s0);
            }
            let r = writeln!(out, "{t} flush {a:x} {len}");
            if fence {
                writeln!(out, "{t} fence")
            } else {
                r
            }
        }
        After::Flush(..) | After::Nothing => Ok(()),
        After::Fence => writeln!(out, "{t} fence"),
        After::TxEnd => writeln!(out, "{t} tx"),
        After::Modified(n) => writeln!(out, "{t} mod {n}"),
    };
}

/// Whether no libpmemobj transaction is open on this thread any more
/// (`pmemobj_tx_stage() == TX_STAGE_NONE`).
fn outermost_tx_ended() -> bool {
    static STAGE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let f = crate::real(&STAGE, c"pmemobj_tx_stage");
    // SAFETY: libpmemobj's `enum pobj_tx_stage pmemobj_tx_stage(void)`.
    let stage = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn() -> u32>(f)() };
    stage == 0
}

/// The `After` of a flag-taking copy (`PMEM_F_MEM_NOFLUSH`: nothing).
pub fn after_flags(dst: *const c_void, len: usize, flags: std::ffi::c_uint) -> After {
    if flags & crate::ribbon::PMEM_F_MEM_NOFLUSH != 0 {
        After::Nothing
    } else {
        After::Flush(
            dst as usize,
            len,
            flags & crate::ribbon::PMEM_F_MEM_NODRAIN == 0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_decide_what_a_copy_records() {
        let d = 0x1000 as *const c_void;
        assert_eq!(after_flags(d, 64, 0), After::Flush(0x1000, 64, true));
        assert_eq!(
            after_flags(d, 64, crate::ribbon::PMEM_F_MEM_NODRAIN),
            After::Flush(0x1000, 64, false)
        );
        assert_eq!(
            after_flags(d, 64, crate::ribbon::PMEM_F_MEM_NOFLUSH),
            After::Nothing
        );
    }
}

//! The per-process gate used by the C ABI and the libpmem shim: opened once
//! from the environment, one collector per process, one registration per
//! thread (freed when the thread exits), and correct across `fork`.
//!
//! It fails open: if the gate cannot be opened (bad variable, no /dev/shm),
//! the reason is printed once and requests pass ungated, because an
//! unmodified application must keep working.

use std::cell::Cell;
use std::sync::{Arc, Mutex};

use crate::{os, Admission, Collector, Gate, GateConfig, GateError, GateThread};

struct ProcessGate {
    epoch: u64,
    gate: Arc<Gate>,
    collector: Option<Collector>,
}

enum State {
    Uninit,
    Ready(ProcessGate),
    Failed(String),
}

static STATE: Mutex<State> = Mutex::new(State::Uninit);

/// Whether the "gate disabled" line was printed (once per process).
static DISABLED_PRINTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The calling thread's registration, kept in one thread-local so that a
/// gated call costs one TLS lookup (in a shared library each lookup is a
/// call into the dynamic loader).
struct ThreadCtx {
    /// Fork epoch the registration belongs to (0: none yet).
    epoch: Cell<u64>,
    /// Nonzero inside a bypassed `gated` call, so that a call nested in it
    /// is not counted twice. (Inside an admitted call the slot's RUNNING
    /// state says so: the fast path stores nothing here.)
    depth: Cell<u32>,
    /// True while `refresh` replaces the registration: a call that
    /// interrupts it (a signal handler) runs ungated.
    refreshing: Cell<bool>,
    /// This thread's registration (null: none), from `Box::into_raw`.
    /// Freed only when the thread exits; one inherited through fork is
    /// leaked instead (it names the parent's thread), so a reference handed
    /// out by `thread` stays valid for the rest of the call. Not a RefCell:
    /// its borrow counting was a load and two stores on every call.
    registration: Cell<*mut GateThread>,
}

impl Drop for ThreadCtx {
    fn drop(&mut self) {
        let p = self.registration.replace(std::ptr::null_mut());
        if !p.is_null() && self.epoch.get() == os::fork_epoch() {
            // SAFETY: from Box::into_raw in `refresh`, freed only here; the
            // thread is exiting, so no gated call is using it.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

thread_local! {
    static THREAD: ThreadCtx = const {
        ThreadCtx {
            epoch: Cell::new(0),
            depth: Cell::new(0),
            refreshing: Cell::new(false),
            registration: Cell::new(std::ptr::null_mut()),
        }
    };
}

/// Opens the process gate with `config` unless already open in this process
/// (after a fork the child gets its own collector). Errors are returned and
/// remembered: later requests pass ungated.
pub fn init_with(config: &GateConfig) -> Result<Arc<Gate>, GateError> {
    let epoch = os::fork_epoch();
    let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
    if let State::Ready(pg) = &mut *state {
        if pg.epoch == epoch {
            return Ok(Arc::clone(&pg.gate));
        }
        // forked child: the parent's collector thread does not exist here
        std::mem::forget(pg.collector.take());
        let gate = Arc::clone(&pg.gate);
        let collector = Collector::spawn(
            Arc::clone(&gate),
            config.policy.build(config.n_pm),
            config.window,
        )
        .ok();
        *state = State::Ready(ProcessGate {
            epoch,
            gate: Arc::clone(&gate),
            collector,
        });
        return Ok(gate);
    }
    match crate::start(config) {
        Ok((gate, collector)) => {
            *state = State::Ready(ProcessGate {
                epoch,
                gate: Arc::clone(&gate),
                collector: Some(collector),
            });
            Ok(gate)
        }
        Err(e) => {
            *state = State::Failed(e.to_string());
            Err(e)
        }
    }
}

/// The process gate, opened from the environment on first use; None (after
/// one message on stderr) if that failed.
pub fn gate() -> Option<Arc<Gate>> {
    {
        let state = STATE.lock().unwrap_or_else(|p| p.into_inner());
        match &*state {
            State::Ready(pg) if pg.epoch == os::fork_epoch() => return Some(Arc::clone(&pg.gate)),
            State::Failed(_) => return None,
            _ => {}
        }
    }
    // A bad variable disables the gate for the whole process, once: the
    // reason is kept (memtamer_last_error) and printed once, not re-read and
    // re-printed by every call and thread (issue 22).
    let result = GateConfig::from_env().and_then(|c| init_with(&c));
    match result {
        Ok(g) => Some(g),
        Err(e) => {
            let mut state = STATE.lock().unwrap_or_else(|p| p.into_inner());
            if let State::Ready(pg) = &*state {
                // another thread opened it meanwhile
                return Some(Arc::clone(&pg.gate));
            }
            if !matches!(&*state, State::Failed(_)) {
                *state = State::Failed(e.to_string());
            }
            drop(state);
            if !DISABLED_PRINTED.swap(true, std::sync::atomic::Ordering::Relaxed) {
                eprintln!("memtamer: PM gate disabled, requests pass ungated: {e}");
            }
            None
        }
    }
}

impl ThreadCtx {
    /// This thread's registration for the current fork epoch (registering
    /// on first use), or None when the gate is disabled or a refresh is
    /// under way.
    #[inline]
    fn thread(&self) -> Option<&GateThread> {
        if self.epoch.get() != os::fork_epoch() || self.refreshing.get() {
            return self.refresh();
        }
        // SAFETY: null or from Box::into_raw, and freed only when the
        // thread exits (see `registration`), after every use of `&self`.
        unsafe { self.registration.get().as_ref() }
    }

    /// Registers this thread for the current fork epoch.
    #[cold]
    #[inline(never)]
    fn refresh(&self) -> Option<&GateThread> {
        if self.refreshing.get() {
            return None;
        }
        self.refreshing.set(true);
        let epoch = os::fork_epoch();
        if self.epoch.get() != epoch {
            // A registration copied by fork names the parent's thread:
            // dropping it would free the parent's slot. It is leaked, which
            // also keeps references to it valid.
            let fresh = gate().and_then(|g| match g.register() {
                Ok(t) => Some(Box::into_raw(Box::new(t))),
                Err(e) => {
                    eprintln!("memtamer: thread runs ungated: {e}");
                    None
                }
            });
            self.registration.set(fresh.unwrap_or(std::ptr::null_mut()));
            self.epoch.set(epoch);
        }
        self.refreshing.set(false);
        // SAFETY: as in `thread`.
        unsafe { self.registration.get().as_ref() }
    }
}

/// Runs `call` as one PM request of `bytes` bytes admitted by the process
/// gate. Nested calls (a gated function calling another, as libpmem's
/// pmem_persist calls pmem_flush) are gated and counted once; without a gate
/// the call just runs.
///
/// The admitted path stores only to the thread's slot (statistics, state):
/// no nesting counter, because on the benchmark machine each extra store
/// around libpmem's non-temporal copy could cost as much as a fence
/// (docs/pats.md).
#[inline]
pub fn gated<R>(bytes: u64, is_write: bool, call: impl FnOnce() -> R) -> R {
    let mut call = Some(call);
    let result = THREAD.try_with(|ctx| {
        let c = call.take()?;
        if ctx.depth.get() != 0 {
            return Some(c()); // nested in a bypassed call
        }
        let Some(t) = ctx.thread() else {
            return Some(c());
        };
        if t.in_request() {
            return Some(c()); // nested in an admitted call
        }
        if t.bypasses(bytes) {
            ctx.depth.set(1);
            t.begin(bytes, is_write);
            let r = c();
            ctx.depth.set(0);
            return Some(r);
        }
        let admission = t.begin(bytes, is_write);
        let r = c();
        if admission != Admission::Bypassed {
            t.end();
        }
        Some(r)
    });
    match (result, call) {
        (Ok(Some(r)), _) => r,
        // thread-local storage already torn down (thread exiting)
        (_, Some(c)) => c(),
        (_, None) => unreachable_call(),
    }
}

#[cold]
fn unreachable_call() -> ! {
    // `call` is taken exactly once above; reaching here is impossible.
    std::process::abort()
}

/// Begins a PM request on the process gate (see [`GateThread::begin`]);
/// None when the gate is disabled. Pair with [`end`].
pub fn begin(bytes: u64, is_write: bool) -> Option<Admission> {
    THREAD
        .try_with(|ctx| ctx.thread().map(|t| t.begin(bytes, is_write)))
        .ok()
        .flatten()
}

/// Ends the calling thread's admitted request.
pub fn end() {
    let _ = THREAD.try_with(|ctx| {
        if let Some(t) = ctx.thread() {
            t.end();
        }
    });
}

/// Why the process gate is disabled, if it is.
pub fn disabled_reason() -> Option<String> {
    match &*STATE.lock().unwrap_or_else(|p| p.into_inner()) {
        State::Failed(why) => Some(why.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{GateOptions, PolicySpec};

    #[test]
    fn nested_calls_are_gated_and_counted_once() {
        let options = GateOptions {
            name: format!("unit-process-{}", std::process::id()),
            ..GateOptions::default()
        };
        let path = options.path();
        let config = GateConfig {
            options,
            policy: PolicySpec::Fixed(1),
            ..GateConfig::default()
        };
        let gate = init_with(&config).expect("open the process gate");
        // an admitted call that calls another gated function (libpmem's
        // pmem_persist calls pmem_flush)
        let inner = gated(4096, true, || gated(4096, true, || gate.snapshot().serving));
        assert_eq!(inner, 1, "the nested call holds no second unit");
        // a bypassed call with a nested one
        gated(64, true, || gated(64, true, || ()));
        let total = gate.snapshot().total();
        assert_eq!(total.writes_by_size[3], 1, "4 KiB request counted once");
        assert_eq!(total.writes_by_size[0], 1, "64 B request counted once");
        assert_eq!(total.write_bytes, 4096 + 64);
        assert_eq!(total.bypassed, 1);
        // the thread's next request reuses its held unit
        gated(4096, true, || ());
        let snap = gate.snapshot();
        assert_eq!(snap.admissions, 2);
        assert_eq!(snap.total().reused, 1);
        let _ = std::fs::remove_file(path);
    }
}

//! The per-process gate used by the C ABI and the libpmem shim: opened once
//! from the environment, one collector per process, one registration per
//! thread (freed when the thread exits), and correct across `fork`.
//!
//! It fails open: if the gate cannot be opened (bad variable, no /dev/shm),
//! the reason is printed once and requests pass ungated, because an
//! unmodified application must keep working.

use std::cell::{Cell, RefCell};
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

/// The calling thread's registration, kept in one thread-local so that a
/// gated call costs one TLS lookup (in a shared library each lookup is a
/// call into the dynamic loader).
struct ThreadCtx {
    /// Fork epoch the registration belongs to (0: none yet).
    epoch: Cell<u64>,
    /// Nesting depth of `gated` calls: only the outermost is gated.
    depth: Cell<u32>,
    registration: RefCell<Option<GateThread>>,
}

thread_local! {
    static THREAD: ThreadCtx = const {
        ThreadCtx {
            epoch: Cell::new(0),
            depth: Cell::new(0),
            registration: RefCell::new(None),
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
    let result = GateConfig::from_env().and_then(|c| init_with(&c));
    match result {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("memtamer: PM gate disabled, requests pass ungated: {e}");
            None
        }
    }
}

impl ThreadCtx {
    /// Makes sure this thread is registered for the current fork epoch.
    fn ensure_registered(&self) {
        let epoch = os::fork_epoch();
        if self.epoch.get() == epoch {
            return;
        }
        let Ok(mut slot) = self.registration.try_borrow_mut() else {
            return;
        };
        if let Some(inherited) = slot.take() {
            // a registration copied by fork names the parent's thread:
            // dropping it would free the parent's slot
            std::mem::forget(inherited);
        }
        *slot = gate().and_then(|g| match g.register() {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("memtamer: thread runs ungated: {e}");
                None
            }
        });
        self.epoch.set(epoch);
    }
}

/// Runs `call` as one PM request of `bytes` bytes admitted by the process
/// gate. Nested calls (a gated function calling another) are gated once;
/// without a gate the call just runs.
#[inline]
pub fn gated<R>(bytes: u64, is_write: bool, call: impl FnOnce() -> R) -> R {
    let mut call = Some(call);
    let result = THREAD.try_with(|ctx| {
        let depth = ctx.depth.get();
        ctx.depth.set(depth + 1);
        let run = call.take().map(|c| {
            if depth > 0 {
                return c();
            }
            ctx.ensure_registered();
            let reg = ctx.registration.try_borrow().ok();
            match reg.as_ref().and_then(|r| r.as_ref()) {
                Some(t) => {
                    let admission = t.begin(bytes, is_write);
                    let r = c();
                    if admission != Admission::Bypassed {
                        t.end();
                    }
                    r
                }
                None => c(),
            }
        });
        ctx.depth.set(depth);
        run
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
        .try_with(|ctx| {
            ctx.ensure_registered();
            let reg = ctx.registration.try_borrow().ok()?;
            reg.as_ref().map(|t| t.begin(bytes, is_write))
        })
        .ok()
        .flatten()
}

/// Ends the calling thread's admitted request.
pub fn end() {
    let _ = THREAD.try_with(|ctx| {
        if let Ok(reg) = ctx.registration.try_borrow() {
            if let Some(t) = reg.as_ref() {
                t.end();
            }
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

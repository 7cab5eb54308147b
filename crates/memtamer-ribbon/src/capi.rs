//! The C ABI of thesis Table 6.2 (`include/memtamer_ribbon.h`, built as
//! `libmemtamer_ribbon.so` / `.a` from this crate). Every function returns
//! an error code instead of panicking across the boundary, and no refusal
//! loses data: a refused flush runs on the caller's thread first.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

use crate::alloc::{Allocator, Kind, DEFAULT_KEY_RESERVE};
use crate::error::RibbonError;
use crate::global;

/// Success.
pub const RIBBON_OK: c_int = 0;
/// An argument is out of range (sizes, types, pointers).
pub const RIBBON_EINVAL: c_int = -1;
/// Ribbon is not started; the request ran on the calling thread.
pub const RIBBON_ENOTSTARTED: c_int = -2;
/// `ribbon_start` while started.
pub const RIBBON_EALREADY: c_int = -3;
/// Out of memory.
pub const RIBBON_ENOMEM: c_int = -4;
/// The OS refused (thread creation).
pub const RIBBON_ESYS: c_int = -5;

/// Env var: bytes a value reserves for its key (default 24, thesis
/// Listing 6.1's KEYLEN).
pub const ENV_KEY_BYTES: &str = "MEMTAMER_RIBBON_KEY_BYTES";

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn code(e: &RibbonError) -> c_int {
    match e {
        RibbonError::NotStarted => RIBBON_ENOTSTARTED,
        RibbonError::AlreadyStarted => RIBBON_EALREADY,
        RibbonError::OutOfMemory(_) => RIBBON_ENOMEM,
        RibbonError::Spawn { .. } => RIBBON_ESYS,
        _ => RIBBON_EINVAL,
    }
}

/// Records `e` as this thread's last error and returns its code.
fn fail(e: RibbonError) -> c_int {
    let text = CString::new(e.to_string().replace('\0', " ")).unwrap_or_default();
    let _ = LAST_ERROR.try_with(|c| *c.borrow_mut() = Some(text));
    code(&e)
}

fn result(r: Result<(), RibbonError>) -> c_int {
    match r {
        Ok(()) => RIBBON_OK,
        Err(e) => fail(e),
    }
}

/// Starts Ribbon for `num_app_t` application threads with `ele_f_queue`
/// entries per queue (thesis `ribbon_start`).
#[no_mangle]
pub extern "C" fn ribbon_start(num_app_t: c_int, ele_f_queue: c_int) -> c_int {
    let apps = usize::try_from(num_app_t).map_err(|_| RibbonError::AppThreads(num_app_t.into()));
    let entries =
        usize::try_from(ele_f_queue).map_err(|_| RibbonError::QueueEntries(ele_f_queue.into()));
    let r = apps
        .and_then(|a| entries.map(|e| (a, e)))
        .and_then(|(a, e)| global::config_from_env(a, e))
        .and_then(global::start);
    result(r)
}

/// Queues a flush of `addr..addr+len` (thesis `ribbon_flush`).
///
/// # Safety
/// The range must be mapped until the calling thread's next `ribbon_fence`.
#[no_mangle]
pub unsafe extern "C" fn ribbon_flush(addr: *const c_void, len: usize) -> c_int {
    // SAFETY: forwarded from the caller.
    result(unsafe { global::flush(addr.cast(), len) })
}

/// Blocks until the calling thread's queued flushes are durable (thesis
/// `ribbon_fence`).
#[no_mangle]
pub extern "C" fn ribbon_fence() -> c_int {
    result(global::fence())
}

/// The process's allocator, made on first use with the key reserve
/// `MEMTAMER_RIBBON_KEY_BYTES` asks for (unset: the default). A value that
/// is not a byte count is refused by name on every `ribbon_alloc` and
/// `ribbon_free`: it was taken as the default without a word, so a typo
/// silently changed the layout the user asked for.
fn allocator() -> Result<&'static Allocator, RibbonError> {
    static A: OnceLock<Result<Allocator, String>> = OnceLock::new();
    A.get_or_init(|| match std::env::var(ENV_KEY_BYTES) {
        Err(_) => Ok(Allocator::new(DEFAULT_KEY_RESERVE)),
        Ok(v) => v.trim().parse().map(Allocator::new).map_err(|_| v),
    })
    .as_ref()
    .map_err(|v| RibbonError::Env {
        var: ENV_KEY_BYTES,
        value: v.clone(),
        why: "expected a byte count (default 24)",
    })
}

/// Allocates `len` bytes, cache-line aligned; `type` is `RIBBON_KEY` (0)
/// or `RIBBON_VALUE` (1) (thesis `ribbon_alloc`). NULL on error (see
/// `ribbon_last_error`).
#[no_mangle]
pub extern "C" fn ribbon_alloc(len: usize, kind: c_int) -> *mut c_void {
    let kind = match kind {
        0 => Kind::Key,
        1 => Kind::Value,
        other => {
            fail(RibbonError::AllocType(other));
            return std::ptr::null_mut();
        }
    };
    match allocator().and_then(|a| a.alloc(len, kind)) {
        Ok(p) => p.cast(),
        Err(e) => {
            fail(e);
            std::ptr::null_mut()
        }
    }
}

/// Frees a `ribbon_alloc` block (thesis `ribbon_free`); NULL is a no-op.
#[no_mangle]
pub extern "C" fn ribbon_free(addr: *mut c_void) -> c_int {
    if addr.is_null() {
        return RIBBON_OK;
    }
    result(allocator().and_then(|a| a.free(addr.cast())))
}

/// Drains every queue and stops Ribbon (thesis `ribbon_stop`).
#[no_mangle]
pub extern "C" fn ribbon_stop() -> c_int {
    result(global::stop().map(|_| ()))
}

/// Flusher threads running now (0: application threads flush), or
/// `RIBBON_ENOTSTARTED`.
#[no_mangle]
pub extern "C" fn ribbon_flushers() -> c_int {
    match global::stats() {
        Some(s) => c_int::try_from(s.flushers).unwrap_or(c_int::MAX),
        None => RIBBON_ENOTSTARTED,
    }
}

/// The calling thread's last error as text, or NULL. Valid until the
/// thread's next failing call.
#[no_mangle]
pub extern "C" fn ribbon_last_error() -> *const c_char {
    LAST_ERROR
        .try_with(|c| c.borrow().as_ref().map_or(std::ptr::null(), |s| s.as_ptr()))
        .unwrap_or(std::ptr::null())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last() -> String {
        let p = ribbon_last_error();
        assert!(!p.is_null());
        // SAFETY: a NUL-terminated string owned by this thread.
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn bad_start_arguments_give_einval_with_text() {
        let _l = global::TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        assert_eq!(ribbon_start(0, 64), RIBBON_EINVAL);
        assert!(last().contains("numAppT = 0"));
        assert_eq!(ribbon_start(-5, 64), RIBBON_EINVAL);
        assert!(last().contains("numAppT = -5"), "{}", last());
        assert_eq!(ribbon_start(4, 0), RIBBON_EINVAL);
        assert!(last().contains("eleFQueue = 0"));
        assert_eq!(ribbon_start(4, -1), RIBBON_EINVAL);
        assert!(last().contains("eleFQueue = -1"), "{}", last());
        assert_eq!(ribbon_start(4, c_int::MAX), RIBBON_EINVAL);
        assert!(last().contains(&format!("eleFQueue = {}", c_int::MAX)));
        assert_eq!(ribbon_start(c_int::MAX, 64), RIBBON_EINVAL);
        assert!(last().contains(&format!("numAppT = {}", c_int::MAX)));
        assert_eq!(ribbon_flushers(), RIBBON_ENOTSTARTED, "nothing started");
    }

    #[test]
    fn a_fence_from_a_thread_that_never_flushed_is_ok_and_takes_no_queue() {
        let _l = global::TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        std::env::set_var(global::ENV_FLUSHERS, "1");
        assert_eq!(ribbon_start(1, 4), RIBBON_OK);
        std::env::remove_var(global::ENV_FLUSHERS);
        let rc = std::thread::spawn(|| ribbon_fence()).join().unwrap();
        assert_eq!(rc, RIBBON_OK);
        assert_eq!(global::stats().map(|s| s.queues), Some(0), "no queue taken");
        // the one queue is still free for a thread that does flush
        let buf = [0u8; 256];
        let st = std::thread::spawn(move || {
            // SAFETY: buf is mapped (copied into this thread).
            let rc = unsafe { ribbon_flush(buf.as_ptr().cast(), 256) };
            (rc, ribbon_fence(), global::stats())
        })
        .join()
        .unwrap();
        assert_eq!((st.0, st.1), (RIBBON_OK, RIBBON_OK));
        let s = st.2.unwrap();
        assert_eq!((s.requests, s.inline_requests), (1, 0), "{s:?}");
        assert_eq!(ribbon_stop(), RIBBON_OK);
    }

    #[test]
    fn a_full_queue_blocks_and_loses_no_flush() {
        let _l = global::TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        // one flusher, the hand-off forced, 1-entry queues (rounded to 2)
        std::env::set_var(global::ENV_FLUSHERS, "1");
        std::env::set_var(global::ENV_HANDOFF, "always");
        assert_eq!(ribbon_start(2, 1), RIBBON_OK);
        std::env::remove_var(global::ENV_FLUSHERS);
        std::env::remove_var(global::ENV_HANDOFF);
        let lines = 20_000usize;
        // three threads for two queues: two queue (and overflow), one flushes
        // inline; each registers (first flush) before any goes on
        let ready = std::sync::Arc::new(std::sync::Barrier::new(3));
        let per: Vec<_> = (0..3)
            .map(|_| {
                let ready = ready.clone();
                std::thread::spawn(move || {
                    #[repr(C, align(64))]
                    struct Line([u8; 64]);
                    let buf: Vec<Line> = (0..lines).map(|_| Line([0; 64])).collect();
                    for (i, line) in buf.iter().enumerate() {
                        // SAFETY: buf stays mapped until after the fence below.
                        let rc = unsafe { ribbon_flush(line.0.as_ptr().cast(), 64) };
                        assert_eq!(rc, RIBBON_OK);
                        if i == 0 {
                            ready.wait();
                        }
                    }
                    assert_eq!(ribbon_fence(), RIBBON_OK);
                })
            })
            .collect();
        for t in per {
            t.join().unwrap();
        }
        let s = global::stats().unwrap();
        assert_eq!(ribbon_stop(), RIBBON_OK);
        assert_eq!(s.requests, 3 * lines as u64, "{s:?}");
        assert_eq!(
            s.flushed_bytes,
            3 * 64 * lines as u64,
            "every queued line was executed: {s:?}"
        );
        assert!(s.inline_requests >= lines as u64, "the third thread: {s:?}");
        assert!(s.flusher_batches + s.self_drains > 0, "{s:?}");
    }

    #[test]
    fn calls_before_start_are_refused_but_still_flush() {
        let _l = global::TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        let buf = [0u8; 128];
        // SAFETY: buf is mapped.
        assert_eq!(
            unsafe { ribbon_flush(buf.as_ptr().cast(), 128) },
            RIBBON_ENOTSTARTED
        );
        assert_eq!(ribbon_fence(), RIBBON_ENOTSTARTED);
        assert_eq!(ribbon_stop(), RIBBON_ENOTSTARTED);
        assert_eq!(ribbon_flushers(), RIBBON_ENOTSTARTED);
    }

    #[test]
    fn start_twice_is_ealready_and_absurd_flush_is_einval() {
        let _l = global::TEST_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        std::env::set_var(global::ENV_FLUSHERS, "1");
        assert_eq!(ribbon_start(2, 16), RIBBON_OK);
        std::env::remove_var(global::ENV_FLUSHERS);
        assert_eq!(ribbon_start(2, 16), RIBBON_EALREADY);
        assert_eq!(ribbon_flushers(), 1);
        // SAFETY: refused before touching memory.
        assert_eq!(
            unsafe { ribbon_flush(usize::MAX as *const c_void, 16) },
            RIBBON_EINVAL
        );
        assert!(last().contains("wraps"));
        let buf = [0u8; 4096];
        // SAFETY: buf is mapped.
        assert_eq!(
            unsafe { ribbon_flush(buf.as_ptr().cast(), 4096) },
            RIBBON_OK
        );
        assert_eq!(ribbon_fence(), RIBBON_OK);
        assert_eq!(ribbon_stop(), RIBBON_OK);
    }

    #[test]
    fn alloc_and_free_through_the_abi() {
        assert!(ribbon_alloc(0, 1).is_null());
        assert!(last().contains("len = 0"));
        assert!(ribbon_alloc(16, 7).is_null());
        assert!(last().contains("type = 7"));
        assert!(ribbon_alloc(usize::MAX, 1).is_null());
        let v = ribbon_alloc(100, 1);
        let k = ribbon_alloc(24, 0);
        assert_eq!(k as usize, v as usize + 100);
        assert_eq!(ribbon_free(k), RIBBON_OK);
        assert_eq!(ribbon_free(v), RIBBON_OK);
        assert_eq!(ribbon_free(v), RIBBON_EINVAL, "double free");
        assert_eq!(ribbon_free(std::ptr::null_mut()), RIBBON_OK);
    }
}

//! libmemtamer: the C ABI of the PATS gate. The header is
//! `crates/memtamer-capi/include/memtamer.h`; every function here matches a
//! declaration there. No function panics across the boundary.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};

use memtamer_gate::{process, Admission};

pub use memtamer_gate::persist;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
    /// Why this thread's last `memtamer_gate_stats` failed (it clears it
    /// when it starts): a NULL or too small struct is not the gate's fault,
    /// so the disabled reason alone left the error empty.
    static CALL_ERROR: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Records why a call failed (for [`memtamer_last_error`]); returns -1.
fn fail(why: String) -> c_int {
    CALL_ERROR.with(|c| *c.borrow_mut() = Some(why));
    -1
}

/// The library's version, `MAJOR.MINOR.PATCH` (the crate version), as a
/// static NUL-terminated string: lets a program check at run time which
/// libmemtamer the dynamic linker gave it.
#[no_mangle]
pub extern "C" fn memtamer_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// Opens the gate from the environment and starts the collector.
#[no_mangle]
pub extern "C" fn memtamer_init() -> c_int {
    if process::gate().is_some() {
        0
    } else {
        -1
    }
}

/// Why this thread's last failing `memtamer_gate_stats` failed, else why
/// the gate is disabled, else NULL.
#[no_mangle]
pub extern "C" fn memtamer_last_error() -> *const c_char {
    let call = CALL_ERROR.with(|c| c.borrow().clone());
    let Some(why) = call.or_else(process::disabled_reason) else {
        return std::ptr::null();
    };
    let text = CString::new(why.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|cell| {
        let mut slot = cell.borrow_mut();
        *slot = Some(text);
        slot.as_ref().map_or(std::ptr::null(), |s| s.as_ptr())
    })
}

/// Starts a PM request (0 admitted, 1 waited, 2 bypassed, -1 disabled).
#[no_mangle]
pub extern "C" fn memtamer_begin(bytes: usize, is_write: c_int) -> c_int {
    match process::begin(bytes as u64, is_write != 0) {
        Some(Admission::Immediate) => 0,
        Some(Admission::Waited(_)) => 1,
        Some(Admission::Bypassed) => 2,
        Some(Admission::Overdue(_)) => 3,
        None => -1,
    }
}

/// Ends the calling thread's request.
#[no_mangle]
pub extern "C" fn memtamer_end() {
    process::end();
}

/// Gated copy to PM, flushed and fenced.
///
/// # Safety
/// `pmemdest` and `src` must be valid for `len` bytes and must not overlap.
#[no_mangle]
pub unsafe extern "C" fn memtamer_memcpy_persist(
    pmemdest: *mut c_void,
    src: *const c_void,
    len: usize,
) -> *mut c_void {
    if len == 0 || pmemdest.is_null() || src.is_null() {
        return pmemdest;
    }
    // SAFETY: the caller guarantees both ranges.
    process::gated(len as u64, true, || unsafe {
        std::ptr::copy_nonoverlapping(src.cast::<u8>(), pmemdest.cast::<u8>(), len);
        persist::persist(pmemdest.cast::<u8>(), len);
    });
    pmemdest
}

/// Gated fill of PM, flushed and fenced.
///
/// # Safety
/// `pmemdest` must be valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn memtamer_memset_persist(
    pmemdest: *mut c_void,
    c: c_int,
    len: usize,
) -> *mut c_void {
    if len == 0 || pmemdest.is_null() {
        return pmemdest;
    }
    // SAFETY: the caller guarantees the range.
    process::gated(len as u64, true, || unsafe {
        std::ptr::write_bytes(pmemdest.cast::<u8>(), c as u8, len);
        persist::persist(pmemdest.cast::<u8>(), len);
    });
    pmemdest
}

/// Sets the limit (0: unlimited).
#[no_mangle]
pub extern "C" fn memtamer_set_limit(limit: u32) -> c_int {
    match process::gate() {
        Some(g) => {
            g.set_limit((limit != 0).then_some(limit));
            0
        }
        None => -1,
    }
}

/// Mirror of `struct memtamer_gate_stats` in memtamer.h.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MemtamerGateStats {
    /// In: the caller's `sizeof`; out: bytes filled (fields are only ever
    /// appended, so old and new callers keep working).
    pub size: u32,
    /// T_S; 0 = unlimited.
    pub limit: u32,
    /// Admitted requests in flight.
    pub serving: u32,
    /// Threads waiting.
    pub waiting: u32,
    /// Most requests ever in flight at once.
    pub peak_serving: u32,
    /// Registered threads.
    pub threads: u32,
    /// Gated requests admitted.
    pub admissions: u64,
    /// Admitted after waiting.
    pub contended: u64,
    /// Capacity taken back from dead threads.
    pub reclaimed: u64,
    /// Bytes read, all threads.
    pub read_bytes: u64,
    /// Bytes written, all threads.
    pub write_bytes: u64,
    /// Requests below the bypass size.
    pub bypassed: u64,
    /// Time spent waiting, ns.
    pub wait_ns_total: u64,
}

/// The first (smallest) layout of `struct memtamer_gate_stats` a caller may
/// pass: every field up to `wait_ns_total`.
pub const GATE_STATS_MIN_SIZE: u32 = 80;

/// How many bytes of a caller's `size`-byte struct the library fills: all it
/// knows, never more than the caller has; None below the first layout.
pub fn stats_bytes(caller_size: u32) -> Option<usize> {
    (caller_size >= GATE_STATS_MIN_SIZE)
        .then(|| (caller_size as usize).min(std::mem::size_of::<MemtamerGateStats>()))
}

/// Fills `*out` with a snapshot (as many bytes as `out->size` and this
/// library both know; `out->size` then holds the bytes filled).
///
/// # Safety
/// `out` must be NULL or point to a writable struct of `out->size` bytes.
#[no_mangle]
pub unsafe extern "C" fn memtamer_gate_stats(out: *mut MemtamerGateStats) -> c_int {
    CALL_ERROR.with(|c| c.borrow_mut().take());
    if out.is_null() {
        return fail("memtamer_gate_stats: out is NULL".into());
    }
    // SAFETY: non-null; the first field of every layout is the u32 size
    let caller_size = unsafe { std::ptr::addr_of!((*out).size).read_unaligned() };
    let Some(n) = stats_bytes(caller_size) else {
        return fail(format!(
            "memtamer_gate_stats: out->size = {caller_size}; need >= {GATE_STATS_MIN_SIZE} (set it to sizeof(struct memtamer_gate_stats))"
        ));
    };
    let Some(g) = process::gate() else {
        return -1;
    };
    let s = g.snapshot();
    let total = s.total();
    let stats = MemtamerGateStats {
        size: n as u32,
        limit: s.limit.unwrap_or(0),
        serving: s.serving,
        waiting: s.waiting,
        peak_serving: s.peak_serving,
        threads: s.threads.len() as u32,
        admissions: s.admissions,
        contended: s.contended_admissions,
        reclaimed: s.reclaimed,
        read_bytes: total.read_bytes,
        write_bytes: total.write_bytes,
        bypassed: total.bypassed,
        wait_ns_total: total.wait_ns_total,
    };
    // SAFETY: checked non-null; the caller guarantees `caller_size >= n`
    // writable bytes, and `stats` has at least `n` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(
            (&stats as *const MemtamerGateStats).cast::<u8>(),
            out.cast::<u8>(),
            n,
        )
    };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_size_negotiation() {
        assert_eq!(std::mem::size_of::<MemtamerGateStats>(), 80);
        assert_eq!(stats_bytes(0), None);
        assert_eq!(stats_bytes(79), None);
        assert_eq!(stats_bytes(80), Some(80));
        // a newer caller with appended fields gets what this library knows
        assert_eq!(stats_bytes(120), Some(80));
        let mut s = MemtamerGateStats {
            size: 8,
            ..Default::default()
        };
        // SAFETY: a valid struct; refused before any write
        assert_eq!(unsafe { memtamer_gate_stats(&mut s) }, -1);
        assert_eq!(s.size, 8);
        assert!(last_error().contains("out->size = 8; need >= 80"));
    }

    fn last_error() -> String {
        let p = memtamer_last_error();
        assert!(!p.is_null(), "no last error");
        // SAFETY: non-null, NUL-terminated, valid until this thread's next call
        unsafe { std::ffi::CStr::from_ptr(p) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_null_stats_struct_is_named_in_the_last_error() {
        // was -1 with memtamer_last_error() NULL (the gate itself was fine)
        // SAFETY: NULL is refused before any access
        assert_eq!(unsafe { memtamer_gate_stats(std::ptr::null_mut()) }, -1);
        assert_eq!(last_error(), "memtamer_gate_stats: out is NULL");
    }

    #[test]
    fn version_is_the_crate_version() {
        // SAFETY: memtamer_version returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(memtamer_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}

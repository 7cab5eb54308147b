//! libmemtamer: the C ABI of the PATS gate. The header is
//! `crates/memtamer-capi/include/memtamer.h`; every function here matches a
//! declaration there. No function panics across the boundary.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CString};

use memtamer_gate::{process, Admission};

pub use memtamer_gate::persist;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
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

/// Why the gate is disabled, or NULL.
#[no_mangle]
pub extern "C" fn memtamer_last_error() -> *const c_char {
    let Some(why) = process::disabled_reason() else {
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
    /// Zero.
    pub reserved: u32,
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

/// Fills `*out` with a snapshot.
///
/// # Safety
/// `out` must be NULL or point to a writable `struct memtamer_gate_stats`.
#[no_mangle]
pub unsafe extern "C" fn memtamer_gate_stats(out: *mut MemtamerGateStats) -> c_int {
    if out.is_null() {
        return -1;
    }
    let Some(g) = process::gate() else {
        return -1;
    };
    let s = g.snapshot();
    let total = s.total();
    let stats = MemtamerGateStats {
        limit: s.limit.unwrap_or(0),
        serving: s.serving,
        waiting: s.waiting,
        peak_serving: s.peak_serving,
        threads: s.threads.len() as u32,
        reserved: 0,
        admissions: s.admissions,
        contended: s.contended_admissions,
        reclaimed: s.reclaimed,
        read_bytes: total.read_bytes,
        write_bytes: total.write_bytes,
        bypassed: total.bypassed,
        wait_ns_total: total.wait_ns_total,
    };
    // SAFETY: checked non-null; the caller guarantees it is writable.
    unsafe { out.write(stats) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_is_the_crate_version() {
        // SAFETY: memtamer_version returns a static NUL-terminated string.
        let v = unsafe { std::ffi::CStr::from_ptr(memtamer_version()) };
        assert_eq!(v.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    }
}

//! `LD_PRELOAD=libmemtamer_pmem_shim.so program`: every libpmem call that
//! moves data to PM (pmem_memcpy*, pmem_memmove*, pmem_memset*, and
//! pmem_persist/pmem_flush, whose cache-line flushes are the PM writes of
//! stores made earlier) is admitted by the PATS gate before it runs, then
//! forwarded to the real libpmem found with `dlsym(RTLD_NEXT)`.
//!
//! Reads from PM are plain loads in libpmem programs, so the shim cannot
//! see them; pmem_drain (a fence) moves no data and is left alone. Nested
//! calls (libpmem calling its own exported functions) are gated once.

use std::ffi::{c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicUsize, Ordering};

use memtamer_gate::process;

/// Resolves the next definition of `name` (the real libpmem's), once.
fn real(cache: &AtomicUsize, name: &CStr) -> usize {
    let cached = cache.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: dlsym with a NUL-terminated name.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) } as usize;
    if p == 0 {
        let msg = format!(
            "memtamer pmem shim: {} not found in any library after the shim; is the program linked with libpmem?\n",
            name.to_string_lossy()
        );
        // SAFETY: writing a buffer we own to stderr, then aborting: there
        // is no correct way to continue without the real function.
        unsafe {
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::abort();
        }
    }
    cache.store(p, Ordering::Relaxed);
    p
}

/// Runs `call` admitted by the gate as a PM write of `len` bytes.
#[inline]
fn gated<R>(len: usize, call: impl FnOnce() -> R) -> R {
    process::gated(len as u64, true, call)
}

macro_rules! copy_fn {
    ($name:ident, $sym:literal) => {
        /// Gated libpmem copy.
        ///
        /// # Safety
        /// As for libpmem's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: *mut c_void,
            src: *const c_void,
            len: usize,
        ) -> *mut c_void {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            let f = real(&REAL, $sym);
            // SAFETY: `f` is libpmem's function with this exact signature.
            let f: unsafe extern "C" fn(*mut c_void, *const c_void, usize) -> *mut c_void =
                unsafe { std::mem::transmute(f) };
            gated(len, || unsafe { f(dst, src, len) })
        }
    };
}

macro_rules! copy_flags_fn {
    ($name:ident, $sym:literal) => {
        /// Gated libpmem copy with flags.
        ///
        /// # Safety
        /// As for libpmem's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            dst: *mut c_void,
            src: *const c_void,
            len: usize,
            flags: c_uint,
        ) -> *mut c_void {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            let f = real(&REAL, $sym);
            // SAFETY: `f` is libpmem's function with this exact signature.
            let f: unsafe extern "C" fn(*mut c_void, *const c_void, usize, c_uint) -> *mut c_void =
                unsafe { std::mem::transmute(f) };
            gated(len, || unsafe { f(dst, src, len, flags) })
        }
    };
}

macro_rules! set_fn {
    ($name:ident, $sym:literal) => {
        /// Gated libpmem fill.
        ///
        /// # Safety
        /// As for libpmem's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(dst: *mut c_void, c: c_int, len: usize) -> *mut c_void {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            let f = real(&REAL, $sym);
            // SAFETY: `f` is libpmem's function with this exact signature.
            let f: unsafe extern "C" fn(*mut c_void, c_int, usize) -> *mut c_void =
                unsafe { std::mem::transmute(f) };
            gated(len, || unsafe { f(dst, c, len) })
        }
    };
}

macro_rules! flush_fn {
    ($name:ident, $sym:literal) => {
        /// Gated libpmem flush of stores made earlier.
        ///
        /// # Safety
        /// As for libpmem's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(addr: *const c_void, len: usize) {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            let f = real(&REAL, $sym);
            // SAFETY: `f` is libpmem's function with this exact signature.
            let f: unsafe extern "C" fn(*const c_void, usize) = unsafe { std::mem::transmute(f) };
            gated(len, || unsafe { f(addr, len) })
        }
    };
}

copy_fn!(pmem_memcpy_persist, c"pmem_memcpy_persist");
copy_fn!(pmem_memcpy_nodrain, c"pmem_memcpy_nodrain");
copy_fn!(pmem_memmove_persist, c"pmem_memmove_persist");
copy_fn!(pmem_memmove_nodrain, c"pmem_memmove_nodrain");
copy_flags_fn!(pmem_memcpy, c"pmem_memcpy");
copy_flags_fn!(pmem_memmove, c"pmem_memmove");
set_fn!(pmem_memset_persist, c"pmem_memset_persist");
set_fn!(pmem_memset_nodrain, c"pmem_memset_nodrain");
flush_fn!(pmem_persist, c"pmem_persist");
flush_fn!(pmem_flush, c"pmem_flush");

/// Gated libpmem fill with flags.
///
/// # Safety
/// As for libpmem's `pmem_memset`.
#[no_mangle]
pub unsafe extern "C" fn pmem_memset(
    dst: *mut c_void,
    c: c_int,
    len: usize,
    flags: c_uint,
) -> *mut c_void {
    static REAL: AtomicUsize = AtomicUsize::new(0);
    let f = real(&REAL, c"pmem_memset");
    // SAFETY: `f` is libpmem's function with this exact signature.
    let f: unsafe extern "C" fn(*mut c_void, c_int, usize, c_uint) -> *mut c_void =
        unsafe { std::mem::transmute(f) };
    gated(len, || unsafe { f(dst, c, len, flags) })
}

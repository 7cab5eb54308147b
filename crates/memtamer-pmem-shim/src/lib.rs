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

/// The next definition of `name` (the real libpmem's), resolved on the
/// first call and cached: afterwards one load.
#[inline(always)]
fn real(cache: &AtomicUsize, name: &CStr) -> usize {
    let cached = cache.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    resolve(cache, name)
}

/// Looks `name` up with `dlsym(RTLD_NEXT)` and caches it; aborts with a
/// message if there is none (no correct way to continue).
#[cold]
#[inline(never)]
fn resolve(cache: &AtomicUsize, name: &CStr) -> usize {
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

/// Defines `$name` with libpmem's signature: admitted by the gate as a PM
/// write of `$len` bytes, then forwarded to the real libpmem function.
macro_rules! gated_fn {
    ($(#[$doc:meta])* $name:ident, $sym:literal, ($($arg:ident: $ty:ty),*) -> $ret:ty, $len:ident) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As for libpmem's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($($arg: $ty),*) -> $ret {
            static REAL: AtomicUsize = AtomicUsize::new(0);
            let f = real(&REAL, $sym);
            // SAFETY: `f` is libpmem's function with this exact signature.
            let f = unsafe { std::mem::transmute::<usize, unsafe extern "C" fn($($ty),*) -> $ret>(f) };
            // SAFETY: the caller's arguments are forwarded unchanged.
            gated($len, || unsafe { f($($arg),*) })
        }
    };
}

type Dst = *mut c_void;
type Src = *const c_void;

gated_fn!(/** Gated copy to PM, persisted. */ pmem_memcpy_persist, c"pmem_memcpy_persist", (dst: Dst, src: Src, len: usize) -> Dst, len);
gated_fn!(/** Gated copy to PM, not drained. */ pmem_memcpy_nodrain, c"pmem_memcpy_nodrain", (dst: Dst, src: Src, len: usize) -> Dst, len);
gated_fn!(/** Gated move to PM, persisted. */ pmem_memmove_persist, c"pmem_memmove_persist", (dst: Dst, src: Src, len: usize) -> Dst, len);
gated_fn!(/** Gated move to PM, not drained. */ pmem_memmove_nodrain, c"pmem_memmove_nodrain", (dst: Dst, src: Src, len: usize) -> Dst, len);
gated_fn!(/** Gated copy to PM with flags. */ pmem_memcpy, c"pmem_memcpy", (dst: Dst, src: Src, len: usize, flags: c_uint) -> Dst, len);
gated_fn!(/** Gated move to PM with flags. */ pmem_memmove, c"pmem_memmove", (dst: Dst, src: Src, len: usize, flags: c_uint) -> Dst, len);
gated_fn!(/** Gated fill of PM, persisted. */ pmem_memset_persist, c"pmem_memset_persist", (dst: Dst, c: c_int, len: usize) -> Dst, len);
gated_fn!(/** Gated fill of PM, not drained. */ pmem_memset_nodrain, c"pmem_memset_nodrain", (dst: Dst, c: c_int, len: usize) -> Dst, len);
gated_fn!(/** Gated fill of PM with flags. */ pmem_memset, c"pmem_memset", (dst: Dst, c: c_int, len: usize, flags: c_uint) -> Dst, len);
gated_fn!(/** Gated flush and fence of stores made earlier. */ pmem_persist, c"pmem_persist", (addr: Src, len: usize) -> (), len);
gated_fn!(/** Gated flush of stores made earlier. */ pmem_flush, c"pmem_flush", (addr: Src, len: usize) -> (), len);

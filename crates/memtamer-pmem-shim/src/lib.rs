//! `LD_PRELOAD=libmemtamer_pmem_shim.so program`: every libpmem call that
//! moves data to PM (pmem_memcpy*, pmem_memmove*, pmem_memset*, and
//! pmem_persist/pmem_flush, whose cache-line flushes are the PM writes of
//! stores made earlier) is admitted by the PATS gate before it runs, then
//! forwarded to the real libpmem found with `dlsym(RTLD_NEXT)`.
//!
//! Reads from PM are plain loads in libpmem programs, so the shim cannot
//! see them; pmem_drain (a fence) moves no data and is left alone. Nested
//! calls (libpmem calling its own exported functions) are gated once.
//!
//! With `MEMTAMER_RIBBON=1` the flushes and fences go through Ribbon's
//! queues and flusher threads instead (see [`ribbon`] and docs/ribbon.md).
//! With `MEMTAMER_TRACE=FILE` every flush, fence and libpmemobj transaction
//! end is also recorded as a flush/fence trace (see [`trace`]); a program
//! that calls `memtamer_pmem_shim_count_start` gets the same calls counted
//! (see [`count`]).

pub mod count;
pub mod ribbon;
pub mod trace;

use std::ffi::{c_int, c_uint, c_void, CStr};

use ribbon::{CopyFlags, SetFlags};
use std::sync::atomic::{AtomicUsize, Ordering};

use memtamer_gate::process;

/// The next definition of `name` (the real libpmem's), resolved on the
/// first call and cached: afterwards one load.
#[inline(always)]
pub(crate) fn real(cache: &AtomicUsize, name: &CStr) -> usize {
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

type Dst = *mut c_void;
type Src = *const c_void;

/// The real libpmem function `$sym` as a value of type `$ty`.
macro_rules! real_fn {
    ($sym:literal, $ty:ty) => {{
        static REAL: AtomicUsize = AtomicUsize::new(0);
        let f = real(&REAL, $sym);
        // SAFETY: `f` is libpmem's function of this exact signature.
        unsafe { std::mem::transmute::<usize, $ty>(f) }
    }};
}

/// Defines a copy with libpmem's signature: in Ribbon mode run as a
/// no-flush copy whose range is enqueued on Ribbon (`$nodrain`: no fence
/// after); otherwise gated and forwarded unchanged.
macro_rules! copy_fn {
    ($(#[$doc:meta])* $name:ident, $sym:literal, $flags_sym:literal, $flags_ty:ty, ($dst:ident: Dst, $a:ident: $at:ty, $len:ident: usize), $nodrain:expr) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As for libpmem's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($dst: Dst, $a: $at, $len: usize) -> Dst {
            trace::around(|| trace::After::Flush($dst as usize, $len, !$nodrain), || {
                if ribbon::enabled() {
                    let f = real_fn!($flags_sym, $flags_ty);
                    // SAFETY: the copy writes dst..dst+len only, as the caller allowed.
                    return unsafe { ribbon::copy_then_flush($dst, $len, $nodrain, |fl| f($dst, $a, $len, fl)) };
                }
                let f = real_fn!($sym, unsafe extern "C" fn(Dst, $at, usize) -> Dst);
                // SAFETY: the caller's arguments are forwarded unchanged.
                gated($len, || unsafe { f($dst, $a, $len) })
            })
        }
    };
}

/// Defines a flag-taking copy: in Ribbon mode, unless the caller asked for
/// no flush, a no-flush copy plus a Ribbon flush (and fence unless
/// PMEM_F_MEM_NODRAIN); otherwise gated and forwarded unchanged.
macro_rules! copy_flags_fn {
    ($(#[$doc:meta])* $name:ident, $sym:literal, $ty:ty, ($dst:ident: Dst, $a:ident: $at:ty, $len:ident: usize, $flags:ident: c_uint)) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As for libpmem's function of the same name.
        #[no_mangle]
        pub unsafe extern "C" fn $name($dst: Dst, $a: $at, $len: usize, $flags: c_uint) -> Dst {
            trace::around(|| trace::after_flags($dst, $len, $flags), || {
                let f = real_fn!($sym, $ty);
                if ribbon::enabled() && ribbon::reroutes($flags) {
                    let (with, nodrain) = ribbon::plan($flags);
                    // SAFETY: the copy writes dst..dst+len only, as the caller allowed.
                    return unsafe { ribbon::copy_then_flush($dst, $len, nodrain, |fl| f($dst, $a, $len, with | fl)) };
                }
                // SAFETY: the caller's arguments are forwarded unchanged.
                gated($len, || unsafe { f($dst, $a, $len, $flags) })
            })
        }
    };
}

copy_fn!(/** Copy to PM, persisted. */ pmem_memcpy_persist, c"pmem_memcpy_persist", c"pmem_memcpy", CopyFlags, (dst: Dst, src: Src, len: usize), false);
copy_fn!(/** Copy to PM, not drained. */ pmem_memcpy_nodrain, c"pmem_memcpy_nodrain", c"pmem_memcpy", CopyFlags, (dst: Dst, src: Src, len: usize), true);
copy_fn!(/** Move to PM, persisted. */ pmem_memmove_persist, c"pmem_memmove_persist", c"pmem_memmove", CopyFlags, (dst: Dst, src: Src, len: usize), false);
copy_fn!(/** Move to PM, not drained. */ pmem_memmove_nodrain, c"pmem_memmove_nodrain", c"pmem_memmove", CopyFlags, (dst: Dst, src: Src, len: usize), true);
copy_flags_fn!(/** Copy to PM with flags. */ pmem_memcpy, c"pmem_memcpy", CopyFlags, (dst: Dst, src: Src, len: usize, flags: c_uint));
copy_flags_fn!(/** Move to PM with flags. */ pmem_memmove, c"pmem_memmove", CopyFlags, (dst: Dst, src: Src, len: usize, flags: c_uint));
copy_fn!(/** Fill of PM, persisted. */ pmem_memset_persist, c"pmem_memset_persist", c"pmem_memset", SetFlags, (dst: Dst, c: c_int, len: usize), false);
copy_fn!(/** Fill of PM, not drained. */ pmem_memset_nodrain, c"pmem_memset_nodrain", c"pmem_memset", SetFlags, (dst: Dst, c: c_int, len: usize), true);
copy_flags_fn!(/** Fill of PM with flags. */ pmem_memset, c"pmem_memset", SetFlags, (dst: Dst, c: c_int, len: usize, flags: c_uint));

/// Flush and fence of stores made earlier: Ribbon flush + fence in Ribbon
/// mode, else gated and forwarded.
///
/// # Safety
/// As for libpmem's pmem_persist.
#[no_mangle]
pub unsafe extern "C" fn pmem_persist(addr: Src, len: usize) {
    trace::around(
        || trace::After::Flush(addr as usize, len, true),
        || {
            if ribbon::enabled() {
                // SAFETY: forwarded.
                unsafe { ribbon::flush(addr, len) };
                ribbon::drain();
                return;
            }
            let f = real_fn!(c"pmem_persist", unsafe extern "C" fn(Src, usize));
            // SAFETY: the caller's arguments are forwarded unchanged.
            gated(len, || unsafe { f(addr, len) })
        },
    )
}

/// Flush of stores made earlier: queued on Ribbon in Ribbon mode, else
/// gated and forwarded.
///
/// # Safety
/// As for libpmem's pmem_flush.
#[no_mangle]
pub unsafe extern "C" fn pmem_flush(addr: Src, len: usize) {
    trace::around(
        || trace::After::Flush(addr as usize, len, false),
        || {
            if ribbon::enabled() {
                // SAFETY: forwarded.
                unsafe { ribbon::flush(addr, len) };
                return;
            }
            let f = real_fn!(c"pmem_flush", unsafe extern "C" fn(Src, usize));
            // SAFETY: the caller's arguments are forwarded unchanged.
            gated(len, || unsafe { f(addr, len) })
        },
    )
}

/// Fence: a Ribbon fence in Ribbon mode (blocks until the thread's queue
/// drained), else forwarded (it moves no data, so it is not gated).
///
/// # Safety
/// As for libpmem's pmem_drain.
#[no_mangle]
pub unsafe extern "C" fn pmem_drain() {
    trace::around(
        || trace::After::Fence,
        || {
            if ribbon::enabled() {
                ribbon::drain();
                return;
            }
            let f = real_fn!(c"pmem_drain", unsafe extern "C" fn());
            // SAFETY: no arguments.
            unsafe { f() }
        },
    )
}

/// libpmemobj's transaction end, forwarded; in trace mode the end of an
/// outermost transaction is recorded as a `tx` record, in counting mode
/// counted.
///
/// # Safety
/// As for libpmemobj's pmemobj_tx_end.
#[no_mangle]
pub unsafe extern "C" fn pmemobj_tx_end() -> c_int {
    let f = real_fn!(c"pmemobj_tx_end", unsafe extern "C" fn() -> c_int);
    // SAFETY: no arguments; forwarded.
    trace::around(|| trace::After::TxEnd, || unsafe { f() })
}

/// `munmap` of the program (and of libpmem's `pmem_unmap`): in Ribbon mode
/// every queued flush runs first, so no flusher touches unmapped memory;
/// then the real munmap.
///
/// # Safety
/// As for munmap(2).
#[no_mangle]
pub unsafe extern "C" fn munmap(addr: *mut c_void, len: usize) -> c_int {
    if ribbon::enabled() {
        ribbon::before_unmap(addr as usize, len);
    }
    let f = real_fn!(c"munmap", unsafe extern "C" fn(*mut c_void, usize) -> c_int);
    // SAFETY: the caller's arguments are forwarded unchanged.
    unsafe { f(addr, len) }
}

/// libpmem's `pmem_map_file`, forwarded; in Ribbon mode with
/// `MEMTAMER_RIBBON_PROACTIVE=pebs` the mapping becomes a range proactive
/// flushing may touch (until its `munmap`).
///
/// # Safety
/// As for libpmem's `pmem_map_file`.
#[no_mangle]
pub unsafe extern "C" fn pmem_map_file(
    path: *const std::ffi::c_char,
    len: usize,
    flags: c_int,
    mode: libc::mode_t,
    mapped_lenp: *mut usize,
    is_pmemp: *mut c_int,
) -> *mut c_void {
    let f = real_fn!(
        c"pmem_map_file",
        unsafe extern "C" fn(
            *const std::ffi::c_char,
            usize,
            c_int,
            libc::mode_t,
            *mut usize,
            *mut c_int,
        ) -> *mut c_void
    );
    // Learn the mapped length even when the caller does not ask for it.
    let mut own_len = 0usize;
    let lenp = if mapped_lenp.is_null() {
        &mut own_len as *mut usize
    } else {
        mapped_lenp
    };
    // SAFETY: the caller's arguments are forwarded, lenp points to a usize.
    let addr = unsafe { f(path, len, flags, mode, lenp, is_pmemp) };
    if !addr.is_null() && ribbon::enabled() {
        // SAFETY: libpmem filled *lenp on success.
        ribbon::mapped(addr as usize, unsafe { *lenp });
    }
    addr
}

//! The program's own lengths of `depend` objects, from libomp's entry
//! point for tasks with dependences.
//!
//! Why: OMPT's dependence callback reports only each item's address; the
//! length of `depend(in: a[i:n])` stays in the `kmp_depend_info` array the
//! compiler passes to `__kmpc_omp_task_with_deps`. Without it the tool
//! infers extents from the gaps between addresses
//! (`memtamer_tahoe::extents`), which over- or under-estimates isolated
//! objects (docs/tahoe.md, "Object sizes are inferred"). When the tool is
//! preloaded (`LD_PRELOAD=libmemtamer_omp.so`), the program's calls bind to
//! this definition first: it notes the items' (address, length) on the
//! calling thread and calls libomp's. libomp reports the same task's
//! dependences (`ompt_callback_dependences`) from inside that call, on the
//! same thread, where [`drain`] hands the lengths to the tracker. Loaded by
//! `OMP_TOOL_LIBRARIES` alone (a `dlopen` after the program is bound), the
//! definition is never called and the extents stay inferred.

use std::cell::RefCell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

/// One `depend` item as clang emits it (LLVM `kmp.h`, `kmp_depend_info`):
/// base address, length in bytes, then the flags (one byte in LLVM 14+,
/// a bit-field struct before; 24 bytes in all on LP64 either way).
#[repr(C)]
pub struct KmpDependInfo {
    /// Start of the item.
    pub base_addr: isize,
    /// Length in bytes (0 for `omp_all_memory`).
    pub len: usize,
    /// `in`/`out`/`mtx`/`set`/`all` bits; not read here (OMPT reports them).
    pub flags: u32,
}

type TaskWithDeps = unsafe extern "C" fn(
    *mut c_void,
    i32,
    *mut c_void,
    i32,
    *const KmpDependInfo,
    i32,
    *const KmpDependInfo,
) -> i32;

/// Set by the tool when it tracks tasks: until then (and with the tool
/// off) the wrapper only forwards.
static RECORDING: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The current call's items on this thread, (address, length).
    static PENDING: RefCell<Vec<(u64, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Starts noting lengths (the tool is on and tracking).
pub fn start() {
    RECORDING.store(true, Ordering::Release);
}

/// Stops noting lengths (the tool finalized).
pub fn stop() {
    RECORDING.store(false, Ordering::Release);
}

/// Runs `f` on the lengths the current `__kmpc_omp_task_with_deps` call on
/// this thread noted (the dependence callback runs inside that call), then
/// empties them, keeping the buffer: no allocation per task. Empty when the
/// tool was not preloaded.
pub fn drain<R>(f: impl FnOnce(&[(u64, u64)]) -> R) -> R {
    PENDING.with(|p| {
        let mut p = p.borrow_mut();
        let r = f(&p);
        p.clear();
        r
    })
}

/// Notes `n` items of `list` (null or `n <= 0`: none).
///
/// # Safety
/// `list` must point to `n` valid items when non-null.
unsafe fn note(out: &mut Vec<(u64, u64)>, list: *const KmpDependInfo, n: i32) {
    let Ok(n) = usize::try_from(n) else { return };
    if list.is_null() || n == 0 {
        return;
    }
    // SAFETY: the caller's array has n items.
    for d in unsafe { std::slice::from_raw_parts(list, n) } {
        out.push((d.base_addr as u64, d.len as u64));
    }
}

fn real() -> Option<TaskWithDeps> {
    static REAL: OnceLock<usize> = OnceLock::new();
    let addr = *REAL.get_or_init(|| {
        // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT finds the
        // definition after this library (libomp's).
        unsafe { libc::dlsym(libc::RTLD_NEXT, c"__kmpc_omp_task_with_deps".as_ptr()) as usize }
    });
    if addr == 0 {
        return None;
    }
    // SAFETY: libomp's symbol has this signature (kmp.h).
    Some(unsafe { std::mem::transmute::<usize, TaskWithDeps>(addr) })
}

/// libomp's `__kmpc_omp_task_with_deps`, seen first when the tool is
/// preloaded: notes the items' lengths for the dependence callback, then
/// calls libomp's. If no later definition exists (impossible for a program
/// that links the call), it says so and aborts rather than drop a task.
///
/// # Safety
/// Called by compiler-generated code with libomp's arguments.
#[no_mangle]
pub unsafe extern "C" fn __kmpc_omp_task_with_deps(
    loc: *mut c_void,
    gtid: i32,
    new_task: *mut c_void,
    ndeps: i32,
    dep_list: *const KmpDependInfo,
    ndeps_noalias: i32,
    noalias_dep_list: *const KmpDependInfo,
) -> i32 {
    if RECORDING.load(Ordering::Acquire) {
        PENDING.with(|p| {
            let mut p = p.borrow_mut();
            p.clear();
            // SAFETY: libomp's arrays of ndeps / ndeps_noalias items.
            unsafe {
                note(&mut p, dep_list, ndeps);
                note(&mut p, noalias_dep_list, ndeps_noalias);
            }
        });
    }
    let Some(f) = real() else {
        eprintln!("memtamer-tahoe: __kmpc_omp_task_with_deps called but no OpenMP runtime defines it after the tool; aborting rather than losing a task");
        std::process::abort();
    };
    // SAFETY: forwarding the caller's arguments unchanged.
    unsafe {
        f(
            loc,
            gtid,
            new_task,
            ndeps,
            dep_list,
            ndeps_noalias,
            noalias_dep_list,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_kmp_depend_info() {
        assert_eq!(std::mem::size_of::<KmpDependInfo>(), 24);
        assert_eq!(std::mem::offset_of!(KmpDependInfo, len), 8);
    }

    #[test]
    fn notes_both_lists_and_drain_empties_keeping_the_buffer() {
        let a = [
            KmpDependInfo {
                base_addr: 4096,
                len: 512,
                flags: 1,
            },
            KmpDependInfo {
                base_addr: 8192,
                len: 0,
                flags: 0x80,
            },
        ];
        let b = [KmpDependInfo {
            base_addr: 100,
            len: 8,
            flags: 3,
        }];
        let mut out = Vec::new();
        // SAFETY: arrays of the given lengths; null and negative are ignored.
        unsafe {
            note(&mut out, a.as_ptr(), 2);
            note(&mut out, b.as_ptr(), 1);
            note(&mut out, std::ptr::null(), 3);
            note(&mut out, b.as_ptr(), -1);
        }
        assert_eq!(out, vec![(4096, 512), (8192, 0), (100, 8)]);
        PENDING.with(|p| *p.borrow_mut() = out);
        assert_eq!(drain(|d| d.len()), 3);
        assert_eq!(drain(|d| d.len()), 0);
        assert!(PENDING.with(|p| p.borrow().capacity()) >= 3, "buffer kept");
    }
}

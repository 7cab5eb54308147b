//! `MEMTAMER_RIBBON_KEY_BYTES` with a value that is not a byte count: the
//! C ABI's allocator took the default (24) without a word. It now refuses
//! `ribbon_alloc` (NULL) and `ribbon_free` (`RIBBON_EINVAL`) and
//! `ribbon_last_error` names the variable and the value. Its own test
//! binary: the allocator is made once per process.

use memtamer_ribbon::capi::{ribbon_alloc, ribbon_free, ribbon_last_error, RIBBON_EINVAL};
use std::ffi::CStr;

fn last_error() -> String {
    let p = ribbon_last_error();
    if p.is_null() {
        return String::new();
    }
    // SAFETY: a non-NULL ribbon_last_error is a NUL-terminated string
    // valid until this thread's next failing call
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[test]
fn a_garbage_key_reserve_is_refused_by_name() {
    std::env::set_var("MEMTAMER_RIBBON_KEY_BYTES", "two dozen");
    let p = ribbon_alloc(64, 1);
    assert!(p.is_null(), "allocated with a garbage key reserve");
    let e = last_error();
    assert!(e.contains("MEMTAMER_RIBBON_KEY_BYTES=\"two dozen\""), "{e}");
    // and it stays refused (the allocator is made once), also for free
    std::env::remove_var("MEMTAMER_RIBBON_KEY_BYTES");
    assert!(ribbon_alloc(64, 0).is_null());
    let mut x = 0u64;
    assert_eq!(ribbon_free((&mut x as *mut u64).cast()), RIBBON_EINVAL);
    assert!(last_error().contains("MEMTAMER_RIBBON_KEY_BYTES"));
}

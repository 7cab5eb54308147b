//! `MEMTAMER_UNIMEM=no` (or `false`, or a typo) started Unimem: only `0`
//! meant the baseline, and every other value silently meant the opposite
//! of `no`. `mt_tier_init` now refuses it, naming the variable and the
//! value. Its own test binary: the runtime starts once per process.

use memtamer_tier::capi::{mt_tier_init, mt_tier_last_error};
use std::ffi::CStr;

#[test]
fn an_unknown_unimem_switch_is_refused_by_name() {
    std::env::set_var("MEMTAMER_UNIMEM", "no");
    assert_eq!(mt_tier_init(1 << 20), -1, "started with MEMTAMER_UNIMEM=no");
    // SAFETY: mt_tier_last_error is a NUL-terminated string valid until
    // this thread's next failing call
    let e = unsafe { CStr::from_ptr(mt_tier_last_error()) }
        .to_string_lossy()
        .into_owned();
    assert!(e.contains("MEMTAMER_UNIMEM=\"no\""), "{e}");
    // the runtime did not start: a good value starts it now
    std::env::set_var("MEMTAMER_UNIMEM", "off");
    assert_eq!(mt_tier_init(1 << 20), 0);
}

//! `MEMTAMER_UNIMEM=no` (or `false`, or a typo) started Unimem: only `0`
//! meant the baseline, and every other value silently meant the opposite
//! of `no`. `mt_tier_init` now refuses it, naming the variable and the
//! value. Its own test binary: the runtime starts once per process.
//! `mt_tier_finish` before any runtime returned -1 with an empty last
//! error; it now says which call found no runtime.

use memtamer_tier::capi::{mt_tier_finish, mt_tier_init, mt_tier_last_error};
use std::ffi::CStr;

fn last_error() -> String {
    // SAFETY: mt_tier_last_error is a NUL-terminated string valid until
    // this thread's next failing call
    unsafe { CStr::from_ptr(mt_tier_last_error()) }
        .to_string_lossy()
        .into_owned()
}

#[test]
fn an_unknown_unimem_switch_is_refused_by_name() {
    // no runtime yet: nothing to finish, and the last error says so
    // SAFETY: NULL with length 0 is allowed
    assert_eq!(unsafe { mt_tier_finish(std::ptr::null_mut(), 0) }, -1);
    let e = last_error();
    assert!(e.contains("mt_tier_finish: no runtime is running"), "{e:?}");
    std::env::set_var("MEMTAMER_UNIMEM", "no");
    assert_eq!(mt_tier_init(1 << 20), -1, "started with MEMTAMER_UNIMEM=no");
    let e = last_error();
    assert!(e.contains("MEMTAMER_UNIMEM=\"no\""), "{e}");
    // a bad decision budget is refused by name too
    std::env::set_var("MEMTAMER_UNIMEM", "on");
    std::env::set_var("MEMTAMER_DECISION_SHARE", "x");
    assert_eq!(
        mt_tier_init(1 << 20),
        -1,
        "started with MEMTAMER_DECISION_SHARE=x"
    );
    let e = last_error();
    assert!(e.contains("MEMTAMER_DECISION_SHARE"), "{e}");
    std::env::remove_var("MEMTAMER_DECISION_SHARE");
    // and so is a bad switch for the decision thread
    std::env::set_var("MEMTAMER_DECIDE_THREAD", "x");
    assert_eq!(
        mt_tier_init(1 << 20),
        -1,
        "started with MEMTAMER_DECIDE_THREAD=x"
    );
    let e = last_error();
    assert!(e.contains("MEMTAMER_DECIDE_THREAD"), "{e}");
    std::env::remove_var("MEMTAMER_DECIDE_THREAD");
    // and a sampler clock that is neither cpu nor wall
    std::env::set_var("MEMTAMER_TIER_PACE", "fast");
    assert_eq!(
        mt_tier_init(1 << 20),
        -1,
        "started with MEMTAMER_TIER_PACE=fast"
    );
    let e = last_error();
    assert!(e.contains("MEMTAMER_TIER_PACE"), "{e}");
    std::env::remove_var("MEMTAMER_TIER_PACE");
    // and an exposure switch that is neither on nor off
    std::env::set_var("MEMTAMER_UNIMEM_EXPOSURE", "maybe");
    assert_eq!(
        mt_tier_init(1 << 20),
        -1,
        "started with MEMTAMER_UNIMEM_EXPOSURE=maybe"
    );
    let e = last_error();
    assert!(e.contains("MEMTAMER_UNIMEM_EXPOSURE=\"maybe\""), "{e}");
    std::env::remove_var("MEMTAMER_UNIMEM_EXPOSURE");
    // the runtime did not start: a good value starts it now
    std::env::set_var("MEMTAMER_UNIMEM", "off");
    assert_eq!(mt_tier_init(1 << 20), 0);
}

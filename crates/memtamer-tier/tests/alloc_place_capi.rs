//! Allocation-time placement through the C ABI, as a C program (or the
//! interposer) drives it: an identity whose freed object was sampled
//! accessed is born in DRAM next time; an untouched one, an unknown one,
//! one without identity and one larger than the room are born in the slow
//! tier; the data of every object is intact; `MEMTAMER_ALLOC_PLACE=0`
//! turns it off and a bad value is refused by name. Deterministic: with
//! `MEMTAMER_TIER_TICK_US=0` the profiled iteration arms every page once
//! (no sampler thread), and each touch of an armed page is one fault.
//! Its own test binary: the C ABI's runtime is one per process.

use memtamer_tier::capi::{
    mt_tier_finish, mt_tier_free, mt_tier_init, mt_tier_iteration, mt_tier_last_error,
    mt_tier_malloc_site, mt_tier_shutdown,
};
use std::ffi::{c_char, CStr};

const MB: usize = 1 << 20;

fn alloc(size: usize, name: &CStr, site: u64) -> *mut u8 {
    // SAFETY: name is NUL-terminated
    let p = unsafe { mt_tier_malloc_site(size, name.as_ptr(), site) } as *mut u8;
    assert!(!p.is_null(), "{name:?}: {}", last_error());
    p
}

fn last_error() -> String {
    // SAFETY: valid until this thread's next failing call
    unsafe { CStr::from_ptr(mt_tier_last_error()) }
        .to_string_lossy()
        .into_owned()
}

fn fill(p: *mut u8, n: usize, v: u8) {
    // SAFETY: p is a live object of at least n bytes
    unsafe { std::ptr::write_bytes(p, v, n) }
}

fn intact(p: *mut u8, n: usize, v: u8) -> bool {
    // SAFETY: p is a live object of at least n bytes
    unsafe { std::slice::from_raw_parts(p, n) }
        .iter()
        .all(|&b| b == v)
}

fn finish_line() -> String {
    let mut buf = vec![0 as c_char; 2048];
    // SAFETY: buf has buf.len() writable bytes
    let n = unsafe { mt_tier_finish(buf.as_mut_ptr(), buf.len()) };
    assert!(n > 0, "{}", last_error());
    // SAFETY: mt_tier_finish NUL-terminates within buf
    unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// One runtime: allocate `hot` (site 42) and `cold` (site 43), profile an
/// iteration in which only `hot` is touched, free both, then allocate
/// again. Returns the finish line.
fn learn_and_reallocate() -> String {
    assert_eq!(mt_tier_init(4 * MB), 0, "{}", last_error());
    let hot = alloc(MB, c"hot", 42);
    let cold = alloc(MB, c"cold", 43);
    mt_tier_iteration(); // begins profiling: every page armed
    fill(hot, MB, 1); // one fault per page
    assert_eq!(mt_tier_free(hot as _), 0);
    assert_eq!(mt_tier_free(cold as _), 0);
    let b = alloc(MB, c"hot again", 42);
    let c = alloc(MB, c"cold again", 43);
    let d = alloc(8 * MB, c"hot but too big", 42);
    let e = alloc(MB, c"no identity", 0);
    let f = alloc(MB, c"never seen", 7);
    for (i, &(p, n)) in [(b, MB), (c, MB), (d, 8 * MB), (e, MB), (f, MB)]
        .iter()
        .enumerate()
    {
        fill(p, n, 0x10 + i as u8);
    }
    for (i, &(p, n)) in [(b, MB), (c, MB), (d, 8 * MB), (e, MB), (f, MB)]
        .iter()
        .enumerate()
    {
        assert!(intact(p, n, 0x10 + i as u8), "object {i} lost data");
    }
    let line = finish_line();
    for p in [b, c, d, e, f] {
        assert_eq!(mt_tier_free(p as _), 0);
    }
    let mut live = 99;
    // SAFETY: live is a writable usize
    assert_eq!(unsafe { mt_tier_shutdown(&mut live) }, 0);
    assert_eq!(live, 0);
    line
}

#[test]
fn allocation_time_placement_through_the_c_abi() {
    std::env::set_var("MEMTAMER_TIER_TICK_US", "0");
    std::env::set_var("MEMTAMER_TIER_PAGES", "1024");
    std::env::remove_var("MEMTAMER_UNIMEM");

    // on (the default)
    std::env::remove_var("MEMTAMER_ALLOC_PLACE");
    let line = learn_and_reallocate();
    assert!(
        line.contains(
            "alloc_placed 1 alloc_placed_bytes 1048576 alloc_unknown 3 alloc_cold 1 \
             alloc_no_room 1 alloc_no_identity 1 alloc_fallback 0 alloc_learned 2"
        ),
        "{line}"
    );
    // only "hot again" is in DRAM, within the 4 MiB budget
    assert!(line.contains("dram_used 1048576 of 4194304"), "{line}");

    // off: everything is born in the slow tier, no tokens
    std::env::set_var("MEMTAMER_ALLOC_PLACE", "0");
    let line = learn_and_reallocate();
    assert!(!line.contains("alloc_placed"), "{line}");
    assert!(line.contains("dram_used 0 of 4194304"), "{line}");

    // a bad switch is refused by name
    std::env::set_var("MEMTAMER_ALLOC_PLACE", "maybe");
    assert_eq!(mt_tier_init(4 * MB), -1);
    assert!(
        last_error().contains("MEMTAMER_ALLOC_PLACE"),
        "{}",
        last_error()
    );
    std::env::set_var("MEMTAMER_ALLOC_PLACE", "1");
    std::env::set_var("MEMTAMER_ALLOC_MIN_DENSITY", "2");
    assert_eq!(mt_tier_init(4 * MB), -1);
    assert!(
        last_error().contains("MEMTAMER_ALLOC_MIN_DENSITY"),
        "{}",
        last_error()
    );
}

//! A [`TierRuntime`] ended (dropped, or [`TierRuntime::shutdown`]) with
//! objects still allocated ends them: their fault-table slots come back,
//! their mappings and slow-tier files go. Before, all of it leaked, and
//! the process-wide table of 4096 slots filled for good.

use memtamer_tier::capi::{mt_tier_free, mt_tier_init, mt_tier_iteration, mt_tier_malloc};
use memtamer_tier::capi::{mt_tier_last_error, mt_tier_shutdown};
use memtamer_tier::guard::{page_size, MAX_SLOTS};
use memtamer_tier::{SlowTier, Tier, TierConfig, TierRuntime};
use std::ffi::CStr;
use std::path::PathBuf;

/// A slow-tier directory of this test alone (its files appear under its
/// path in /proc/self/maps while mapped).
fn private_dir(tag: &str) -> PathBuf {
    let d = PathBuf::from(format!(
        "/dev/shm/memtamer-shutdown-{}-{tag}",
        std::process::id()
    ));
    std::fs::create_dir_all(&d).expect("test directory in /dev/shm");
    d
}

fn runtime(dir: &std::path::Path) -> TierRuntime {
    let cfg = TierConfig::new(64 << 20, SlowTier::File(dir.into())).expect("config");
    TierRuntime::new(cfg).expect("runtime")
}

/// Mappings of this process backed by files in `dir`.
fn mappings_in(dir: &std::path::Path) -> usize {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    let key = format!("{}/", dir.display());
    maps.lines().filter(|l| l.contains(&key)).count()
}

#[test]
fn dropped_runtimes_give_their_fault_slots_back() {
    // more live objects over the runtimes' lives than the table holds:
    // with slots leaked, a runtime past the 64th could allocate nothing
    let dir = private_dir("slots");
    let per = 64;
    let runs = MAX_SLOTS / per + 16;
    for r in 0..runs {
        let rt = runtime(&dir);
        for i in 0..per {
            let tier = if i % 2 == 0 { Tier::Dram } else { Tier::Slow };
            if let Err(e) = rt.alloc(page_size(), &format!("o{i}"), tier) {
                panic!("runtime {r} of {runs}, object {i}: {e}");
            }
        }
        assert_eq!(rt.live_objects(), per);
        if r % 2 == 0 {
            drop(rt);
        } else {
            let rep = rt.shutdown().expect("shutdown");
            assert_eq!(rep.live_objects, per);
            assert_eq!(rep.live_bytes, per * page_size());
        }
    }
    assert_eq!(mappings_in(&dir), 0);
    std::fs::remove_dir(&dir).expect("directory empty");
}

#[test]
fn no_slow_tier_file_outlives_the_runtime() {
    let dir = private_dir("files");
    let rt = runtime(&dir);
    let len = 4 * page_size();
    let ptrs: Vec<*mut u8> = (0..8)
        .map(|i| rt.alloc(len, &format!("s{i}"), Tier::Slow).expect("alloc"))
        .collect();
    for &p in &ptrs {
        // SAFETY: a live object of `len` bytes.
        unsafe { std::ptr::write_bytes(p, 1, len) };
    }
    // one object to DRAM and back: its file is a new one
    rt.migrate_now(ptrs[0], Tier::Dram).expect("to DRAM");
    rt.migrate_now(ptrs[0], Tier::Slow).expect("back");
    assert_eq!(mappings_in(&dir), 8);
    drop(rt);
    assert_eq!(mappings_in(&dir), 0, "a slow-tier file is still mapped");
    assert_eq!(std::fs::read_dir(&dir).expect("dir").count(), 0);
    std::fs::remove_dir(&dir).expect("directory empty");
}

#[test]
fn shutdown_reports_the_objects_still_live() {
    let dir = private_dir("report");
    let rt = runtime(&dir);
    let p = page_size();
    let a = rt.alloc(p, "a", Tier::Dram).expect("a");
    let _b = rt.alloc(3 * p, "b", Tier::Slow).expect("b");
    let _c = rt.alloc(5, "c", Tier::Slow).expect("c");
    rt.free(a).expect("free a");
    assert_eq!(rt.live_objects(), 2);
    let rep = rt.shutdown().expect("shutdown");
    assert_eq!((rep.live_objects, rep.live_bytes), (2, 3 * p + 5));
    assert_eq!(rep.cancelled_moves, 0);
    // a program that freed everything: 0
    let rt = runtime(&dir);
    let a = rt.alloc(p, "a", Tier::Slow).expect("a");
    rt.free(a).expect("free");
    assert_eq!(rt.shutdown().expect("shutdown").live_objects, 0);
    assert_eq!(mappings_in(&dir), 0);
    std::fs::remove_dir(&dir).expect("directory empty");
}

#[test]
fn the_c_abi_shutdown_ends_the_runtime_and_counts_live_objects() {
    let name = c"x";
    let mut live = usize::MAX;
    // no runtime yet: a no-op
    // SAFETY: `live` is a writable size_t; NULL is allowed.
    assert_eq!(unsafe { mt_tier_shutdown(&mut live) }, 0);
    assert_eq!(live, 0);
    assert_eq!(unsafe { mt_tier_shutdown(std::ptr::null_mut()) }, 0);
    assert_eq!(mt_tier_init(64 << 20), 0);
    // SAFETY: `name` is NUL-terminated.
    let ptrs: Vec<_> = (0..3)
        .map(|_| unsafe { mt_tier_malloc(3 * page_size(), name.as_ptr()) })
        .collect();
    assert!(ptrs.iter().all(|p| !p.is_null()));
    assert_eq!(mt_tier_free(ptrs[1]), 0);
    // the driver profiles (a sampler thread that holds the runtime): the
    // shutdown must stop it, not wait for it forever
    mt_tier_iteration();
    mt_tier_iteration();
    assert_eq!(unsafe { mt_tier_shutdown(&mut live) }, 0);
    assert_eq!(live, 2);
    // the runtime is gone: its pointers are unknown now (an error, not a crash)
    assert_eq!(mt_tier_free(ptrs[0]), -1);
    // SAFETY: a NUL-terminated string of this thread.
    let err = unsafe { CStr::from_ptr(mt_tier_last_error()) };
    assert!(err.to_string_lossy().contains("unknown object"), "{err:?}");
    // a later allocation starts a fresh runtime
    let p = unsafe { mt_tier_malloc(page_size(), name.as_ptr()) };
    assert!(!p.is_null());
    assert_eq!(unsafe { mt_tier_shutdown(&mut live) }, 0);
    assert_eq!(live, 1);
}

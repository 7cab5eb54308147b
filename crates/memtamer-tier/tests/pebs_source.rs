//! The address-sampling access source end to end on a host without a PMU:
//! the software page-fault event (its samples carry the faulting address)
//! stands in for PEBS and runs the same path — samplers on the process's
//! threads, the drain thread, attribution to registry objects at the phase
//! boundary, the driver's profile and access shares.

use memtamer_linux::perf::EventSpec;
use memtamer_tier::access::AccessKind;
use memtamer_tier::driver::{Driver, DriverConfig};
use memtamer_tier::pebs::{select, AccessProfiler, AddressSource, Choice};
use memtamer_tier::{SlowTier, Tier, TierConfig, TierRuntime};
use std::sync::Arc;
use std::time::Duration;

const PAGE: usize = 4096;

fn config() -> DriverConfig {
    DriverConfig {
        tick: Duration::from_millis(1),
        drift: 0.0,
        recalibrate: false,
        decision_share: 0.0,
        ..DriverConfig::default()
    }
}

/// Writes one byte of each of the first `pages` pages of `p` (fresh pages:
/// one page fault each).
fn touch(p: *mut u8, pages: usize) {
    for i in 0..pages {
        unsafe { std::ptr::write_volatile(p.add(i * PAGE), 1) };
    }
}

#[test]
fn page_fault_samples_give_each_object_its_share_of_fresh_pages() {
    let rt = Arc::new(
        TierRuntime::new(TierConfig::new(64 << 20, SlowTier::File("/dev/shm".into())).unwrap())
            .unwrap(),
    );
    // A gets 3/4 of the touched pages, B 1/4, C none; D is freed before
    // the phase closes, so its samples are "other"
    let n = 200;
    let a = rt.alloc(3 * n * PAGE, "A", Tier::Slow).unwrap();
    let b = rt.alloc(2 * n * PAGE, "B", Tier::Slow).unwrap();
    let c = rt.alloc(n * PAGE, "C", Tier::Slow).unwrap();
    let d = rt.alloc(n * PAGE, "D", Tier::Slow).unwrap();
    let mut drv = Driver::new(rt.clone(), config());
    let faults = AddressSource::with_events(vec![(AccessKind::Load, EventSpec::page_faults(1))]);
    drv.access = AccessProfiler::new(
        Some(faults),
        select(Choice::Pebs, || Ok("page faults".into())),
    );
    drv.iteration(); // profiling begins: the samplers open
    touch(a, 3 * n);
    touch(b, n); // half of B
    touch(d, n);
    rt.free(d).unwrap();
    drv.boundary();
    drv.iteration(); // the profiled iteration ends: decide
    drv.finish();
    let shares = drv.access_shares();
    let share = |p: *mut u8| shares.get(&(p as usize)).copied().unwrap_or(0.0);
    let (sa, sb, sc) = (share(a), share(b), share(c));
    assert!((sa - 0.75).abs() < 0.02, "A {sa} B {sb} C {sc}");
    assert!((sb - 0.25).abs() < 0.02, "A {sa} B {sb} C {sc}");
    assert_eq!(sc, 0.0);
    assert_eq!(share(d), 0.0, "a freed object's samples are other");
    assert!(drv.access.selection().unwrap().pebs);
}

/// `pebs` on this host: PEBS opens on a PMU host; here (a VM without a
/// PMU) it fails with an errno and a message naming the event.
#[test]
fn pebs_opens_or_says_why_with_an_errno() {
    let mut src = AddressSource::pebs(9973, false);
    match src.start(Duration::from_millis(1)) {
        Ok(threads) => {
            assert!(threads >= 1);
            src.stop();
        }
        Err((errno, why)) => {
            assert!(errno.is_some(), "{why}");
            assert!(
                why.contains("perf_event_open") && why.contains("ALL_LOADS"),
                "{why}"
            );
            assert!(!src.running());
        }
    }
}

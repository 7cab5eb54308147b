//! The timing iteration ([`DriverConfig::quiet_times`]): each profiled
//! iteration is followed by one with no sampler and nothing moving, and the
//! decisions read its phase times, not the profiled iteration's (whose
//! sampling faults, and partners' waits at several ranks, inflate them).
//! The test thread plays the program and ticks the profiler itself, so
//! nothing here depends on timing.

use memtamer_tier::driver::{quiet_profile, Driver, DriverConfig};
use memtamer_tier::unimem::model::PhaseProfile;
use memtamer_tier::{SlowTier, Tier, TierConfig, TierRuntime};
use std::sync::Arc;
use std::time::Duration;

const MB: usize = 1 << 20;

fn config(quiet_times: bool) -> DriverConfig {
    DriverConfig {
        tick: Duration::ZERO,
        drift: 0.0,
        recalibrate: false,
        decision_share: 0.0,
        decide_off_thread: false,
        quiet_times,
        ..DriverConfig::default()
    }
}

fn sweep(p: *mut u8, n: usize, drv: &mut Driver) {
    for pg in 0..n / 4096 {
        unsafe { std::ptr::write_volatile(p.add(pg * 4096), 1) };
        if pg % 16 == 15 {
            drv.tick();
        }
    }
}

/// Runs `iterations` of two phases over two 2 MiB objects (3 MiB of DRAM)
/// and returns the driver after the last iteration top (not finished).
fn run(quiet_times: bool, iterations: usize) -> (Arc<TierRuntime>, Driver) {
    let rt = Arc::new(
        TierRuntime::new(TierConfig::new(3 * MB, SlowTier::File("/dev/shm".into())).unwrap())
            .unwrap(),
    );
    let a = rt.alloc(2 * MB, "A", Tier::Slow).unwrap();
    let b = rt.alloc(2 * MB, "B", Tier::Slow).unwrap();
    let mut drv = Driver::new(rt.clone(), config(quiet_times));
    for _ in 0..iterations {
        drv.iteration();
        sweep(a, 2 * MB, &mut drv);
        drv.boundary();
        sweep(b, 2 * MB, &mut drv);
        drv.boundary();
    }
    drv.iteration();
    (rt, drv)
}

#[test]
fn the_iteration_after_the_profiled_one_is_timed_and_the_decision_reads_its_times() {
    // iteration 1 profiled (as with quiet times off: allocation-time
    // placement learns from it), 2 timed, decided at the top of 3
    let (_rt, drv) = run(true, 1);
    let s = drv.stats();
    assert_eq!(s.decisions, 0, "{s:?}");
    assert!(s.sample_faults > 0, "the first iteration is sampled: {s:?}");
    assert_eq!(
        drv.profiled_times().len(),
        3,
        "two boundaries: three phases"
    );
    assert!(drv.quiet_times().is_empty());

    let (_rt, drv) = run(true, 2);
    let s = drv.stats();
    assert_eq!((s.decisions, s.quiet_decisions), (1, 1), "{s:?}");
    assert_eq!(drv.quiet_times().len(), 3);
    assert_eq!(drv.decision_times(), drv.quiet_times().to_vec());
    assert_ne!(drv.decision_times(), drv.profiled_times());
}

#[test]
fn with_quiet_times_off_the_profiled_iteration_is_the_first_and_its_times_are_read() {
    let (_rt, drv) = run(false, 1);
    let s = drv.stats();
    assert_eq!((s.decisions, s.quiet_decisions), (1, 0), "{s:?}");
    assert!(drv.quiet_times().is_empty());
    assert_eq!(drv.decision_times(), drv.profiled_times());
}

fn phase(time: f64) -> PhaseProfile {
    PhaseProfile {
        time,
        samples: 1.0,
        objs: Default::default(),
    }
}

#[test]
fn quiet_profile_replaces_the_times_only_when_the_phase_counts_agree() {
    let profile = vec![phase(0.05), phase(0.10)];
    let q = quiet_profile(&profile, &[0.001, 0.002]);
    assert_eq!(
        q.iter().map(|p| p.time).collect::<Vec<_>>(),
        vec![0.001, 0.002]
    );
    assert_eq!(q[0].samples, 1.0, "only the time changes");
    // the timing iteration saw another phase structure: no substitution
    assert_eq!(quiet_profile(&profile, &[0.001]), profile);
    assert_eq!(quiet_profile(&profile, &[]), profile);
}

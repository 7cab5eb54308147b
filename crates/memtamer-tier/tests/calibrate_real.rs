//! The runtime's calibration step on this host's real backings.

use memtamer_tier::calibrate::{calibrate, copy_bandwidths, CalibrateConfig, COPY_ROUNDS};
use memtamer_tier::unimem::calibrate::CalKind;
use memtamer_tier::unimem::model::Platform;
use memtamer_tier::{SlowTier, TierConfig, TierError, TierRuntime};

fn rt(budget: usize) -> TierRuntime {
    TierRuntime::new(TierConfig::new(budget, SlowTier::File("/dev/shm".into())).unwrap()).unwrap()
}

#[test]
fn calibration_times_both_tiers_and_fits_finite_factors() {
    let rt = rt(16 << 20);
    let cfg = CalibrateConfig::fitting(16 << 20);
    let p = Platform::emulated(10e9, 100e-9, 2.0, 4.0);
    let (f, runs) = calibrate(&rt, &p, &cfg).unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].kind, CalKind::Bandwidth);
    assert_eq!(runs[0].accesses, (3 * cfg.stream_bytes / 64) as f64);
    assert_eq!(runs[1].accesses, cfg.chase_steps as f64);
    for r in &runs {
        assert!(r.dram_s > 0.0 && r.slow_s > 0.0, "{r:?}");
    }
    for x in [f.bw, f.lat] {
        assert!(x.value.is_finite() && x.value >= 0.0, "{f:?}");
    }
    // every calibration object was freed: nothing left in the registry
    assert_eq!(rt.object_count(), 0);
    assert_eq!(rt.dram_used(), 0);
}

#[test]
fn calibration_larger_than_the_budget_is_a_clear_error() {
    let rt = rt(1 << 20);
    let cfg = CalibrateConfig::fitting(64 << 20);
    let p = Platform::emulated(10e9, 100e-9, 2.0, 4.0);
    match calibrate(&rt, &p, &cfg) {
        Err(e @ TierError::DramFull { .. }) => assert!(e.to_string().contains("cal.")),
        other => panic!("expected DramFull, got {other:?}"),
    }
    assert_eq!(rt.object_count(), 0, "a failed calibration leaks no object");
}

#[test]
fn copy_bandwidths_time_both_directions_through_the_registry() {
    let rt = rt(4 << 20);
    let n = 1 << 20;
    let st = copy_bandwidths(&rt, n).unwrap();
    let rounds = u64::from(COPY_ROUNDS);
    assert_eq!(
        (st.to_dram.moves, st.to_dram.bytes),
        (rounds, rounds * n as u64)
    );
    assert_eq!(
        (st.to_slow.moves, st.to_slow.bytes),
        (rounds, rounds * n as u64)
    );
    for bw in [st.to_dram.bandwidth(), st.to_slow.bandwidth()] {
        assert!(bw.is_some_and(|b| b.is_finite() && b > 0.0), "{st:?}");
    }
    assert_eq!(rt.object_count(), 0);
    assert_eq!(rt.dram_used(), 0);
    // no room in DRAM for the test object: a clear error, nothing leaked
    let small = self::rt(1 << 20);
    match copy_bandwidths(&small, 2 << 20) {
        Err(TierError::DramFull { .. }) => {}
        other => panic!("expected DramFull, got {other:?}"),
    }
    assert_eq!(small.object_count(), 0);
}

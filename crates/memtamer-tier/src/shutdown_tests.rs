//! [`TierRuntime::shutdown`] and the move in flight: held at the helper's
//! test gate, so the order of events is fixed and no timing is involved.

use super::*;
use std::sync::atomic::Ordering::SeqCst;

/// Spins until `cond` holds; the bound only turns a hang into a failure.
fn wait_until(what: &str, cond: impl Fn() -> bool) {
    let t0 = std::time::Instant::now();
    while !cond() {
        assert!(t0.elapsed().as_secs() < 120, "hang waiting for {what}");
        std::thread::yield_now();
    }
}

#[test]
fn shutdown_waits_for_the_move_in_flight_and_drops_the_queued_ones() {
    let cfg = TierConfig::new(64 << 20, SlowTier::File("/dev/shm".into())).expect("config");
    let rt = TierRuntime::new(cfg).expect("runtime");
    let len = 64 * guard::page_size();
    let a = rt.alloc(len, "a", Tier::Slow).expect("a");
    let b = rt.alloc(len, "b", Tier::Slow).expect("b");
    // SAFETY: `a` is a live object of `len` bytes.
    unsafe { std::ptr::write_bytes(a, 7, len) };
    let inner = rt.migrator.inner.clone();
    let gate = inner.gate.lock().expect("gate");
    rt.request(a, Tier::Dram).expect("queue a");
    rt.request(b, Tier::Dram).expect("queue b");
    // the helper has taken a's move and waits at the gate: a is in flight
    wait_until("the helper to take a's move", || {
        inner.started.load(SeqCst) == 1
    });
    let closer = std::thread::spawn(move || rt.shutdown());
    wait_until("shutdown to begin", || inner.closing());
    drop(gate);
    let report = closer.join().expect("no panic").expect("shutdown");
    // a's move ran to its end on a's mapping (had the objects been ended
    // first, it would have found no object and failed)
    assert_eq!(report.stats.moves, 1, "{report:?}");
    assert_eq!(report.stats.failed, 0, "{report:?}");
    assert_eq!(report.stats.bytes_moved, len as u64);
    // b's move never started
    assert_eq!(report.cancelled_moves, 1, "{report:?}");
    assert_eq!(inner.started.load(SeqCst), 1);
    assert_eq!(report.live_objects, 2);
    assert_eq!(report.live_bytes, 2 * len);
}

#[test]
fn a_waiter_on_a_cancelled_move_is_not_left_waiting() {
    // the migrator alone: requests dropped by its shutdown are done
    let cfg = TierConfig::new(64 << 20, SlowTier::File("/dev/shm".into())).expect("config");
    let rt = TierRuntime::new(cfg).expect("runtime");
    let a = rt.alloc(guard::page_size(), "a", Tier::Slow).expect("a");
    let mut rt = rt;
    rt.request(a, Tier::Dram).expect("queue");
    rt.request(a, Tier::Slow).expect("queue");
    rt.migrator.shutdown().expect("helper");
    assert!(!rt.migrator.is_pending(a as usize));
    // a request after shutdown is refused, not queued forever
    assert!(matches!(
        rt.request(a, Tier::Dram),
        Err(TierError::HelperGone)
    ));
    assert_eq!(rt.live_objects(), 1);
}

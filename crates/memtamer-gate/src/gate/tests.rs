//! Unit tests of the gate: races between holders and waiters, locks left by dead threads.

use super::*;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// Removes the gate file when the test ends, passed or not.
struct Cleanup(PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn test_gate(tag: &str, limit: u32) -> (Arc<Gate>, Cleanup) {
    let options = GateOptions {
        name: format!("unit-{tag}-{}", std::process::id()),
        initial_limit: limit,
        ..GateOptions::default()
    };
    let _ = std::fs::remove_file(options.path());
    (Gate::open(&options).expect("open"), Cleanup(options.path()))
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < Duration::from_secs(20), "timed out: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_holder_that_loses_the_race_for_its_unit_queues_behind_the_taker() {
    let (gate, _cleanup) = test_gate("race-begin", 1);
    let holder = gate.register().expect("register");
    drop(holder.enter(4096, true));
    assert_eq!(holder.slot().state.load(Ordering::SeqCst), HOLDING);
    // a waiter takes the held unit back and runs...
    let done = Arc::new(AtomicBool::new(false));
    let (g, d) = (Arc::clone(&gate), Arc::clone(&done));
    let waiter = std::thread::spawn(move || {
        let me = g.register().expect("register");
        let permit = me.enter(4096, true);
        // ...until the holder has queued behind it
        wait_until("the holder to queue", || {
            g.header().queue_len.load(Ordering::SeqCst) == 1
        });
        d.store(true, Ordering::SeqCst);
        drop(permit);
    });
    wait_until("the waiter to run", || {
        gate.snapshot()
            .threads
            .iter()
            .any(|t| t.state == crate::ThreadState::Running)
    });
    // ...while the holder, which read HOLDING just before the take,
    // starts its next request: it must not run beside the waiter
    let admission = holder.reuse_held();
    assert!(matches!(admission, Admission::Waited(_)), "{admission:?}");
    assert!(done.load(Ordering::SeqCst), "ran while the taker still ran");
    assert_eq!(gate.header().serving.load(Ordering::SeqCst), 1);
    holder.end();
    waiter.join().expect("waiter");
    drop(holder);
    assert_eq!(gate.header().serving.load(Ordering::SeqCst), 0);
}

#[test]
fn a_holder_that_sees_a_waiter_after_parking_its_unit_hands_it_over() {
    let (gate, _cleanup) = test_gate("race-end", 1);
    let holder = gate.register().expect("register");
    assert_eq!(holder.begin(4096, true), Admission::Immediate);
    // a waiter queues while the holder runs: nothing to take back
    let g = Arc::clone(&gate);
    let (tx, rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let me = g.register().expect("register");
        let admission = me.enter(4096, true).admission;
        let _ = tx.send(admission);
    });
    wait_until("the waiter to queue", || {
        gate.header().queue_len.load(Ordering::SeqCst) == 1
    });
    // the holder passed `end`'s first check just before the waiter
    // queued, and parks its unit: the check after must hand it over
    holder.hold_unit();
    let admission = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the waiter starved behind a parked unit");
    assert!(matches!(admission, Admission::Waited(_)), "{admission:?}");
    waiter.join().expect("waiter"); // its slot retires when it exits
    drop(holder);
    assert_eq!(gate.header().serving.load(Ordering::SeqCst), 0);
}

#[test]
fn a_lock_left_by_a_dead_thread_is_taken_over_and_the_state_rebuilt() {
    let options = GateOptions {
        name: format!("unit-repair-{}", std::process::id()),
        initial_limit: 1,
        ..GateOptions::default()
    };
    let gate = Gate::open(&options).expect("open");
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead = child.id();
    child.wait().expect("wait");
    let h = gate.header();
    // a thread died inside the lock, halfway through an update
    h.lock
        .store(u64::from(dead) << 32 | u64::from(dead), Ordering::SeqCst);
    h.serving.store(7, Ordering::SeqCst);
    h.queue_len.store(3, Ordering::SeqCst);
    let me = gate.register().expect("register");
    let permit = me.enter(4096, true);
    assert_eq!(permit.admission, Admission::Immediate);
    assert_eq!(h.lock_repairs.load(Ordering::SeqCst), 1);
    assert_eq!(h.serving.load(Ordering::SeqCst), 1);
    assert_eq!(h.queue_len.load(Ordering::SeqCst), 0);
    drop(permit);
    drop(me);
    let _ = std::fs::remove_file(options.path());
}

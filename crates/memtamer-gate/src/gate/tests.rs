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

/// A gate with limit `limit` and a short admission bound (200 ms).
fn bounded_gate(tag: &str, limit: u32) -> (Arc<Gate>, Cleanup) {
    let options = GateOptions {
        name: format!("unit-{tag}-{}", std::process::id()),
        initial_limit: limit,
        max_wait: Duration::from_millis(200),
        ..GateOptions::default()
    };
    let _ = std::fs::remove_file(options.path());
    (Gate::open(&options).expect("open"), Cleanup(options.path()))
}

/// Two rounds of one 4 KiB request from each of `threads` threads at once
/// (each thread registered before the first round): the admissions per round.
fn two_rounds(gate: &Arc<Gate>, threads: usize) -> [Vec<Admission>; 2] {
    let barrier = Arc::new(std::sync::Barrier::new(threads));
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let (g, b) = (Arc::clone(gate), Arc::clone(&barrier));
            std::thread::spawn(move || {
                let me = g.register().expect("register");
                let mut out = Vec::new();
                for _ in 0..2 {
                    b.wait();
                    let permit = me.enter(4096, true);
                    std::thread::sleep(Duration::from_millis(1));
                    out.push(permit.admission);
                    drop(permit);
                    b.wait();
                }
                out
            })
        })
        .collect();
    let mut rounds = [Vec::new(), Vec::new()];
    for w in workers {
        let got = w.join().expect("worker");
        rounds[0].push(got[0]);
        rounds[1].push(got[1]);
    }
    rounds
}

#[test]
fn a_serving_count_corrupted_within_bounds_is_healed_at_the_first_bound() {
    let (gate, _cleanup) = bounded_gate("heal-serving", 2);
    let h = gate.header();
    // a flipped bit: 128 is within the slot count, so no bound check sees
    // it; only the slots (none admitted) contradict it
    h.serving.store(128, Ordering::SeqCst);
    let [first, second] = two_rounds(&gate, 3);
    eprintln!("first round {first:?}, second round {second:?}");
    // the first round waits for the bound, where a waiter heals the gate
    assert!(h.lock_repairs.load(Ordering::SeqCst) >= 1);
    // ...so the second round is admitted, not sent on past the bound
    assert!(
        second.iter().all(|a| !matches!(a, Admission::Overdue(_))),
        "the gate stayed degraded: {second:?}"
    );
    assert_eq!(h.serving.load(Ordering::SeqCst), gate.tally().0);
}

#[test]
fn a_dead_holder_hidden_by_corrupted_reaper_words_is_freed_at_the_first_bound() {
    let (gate, _cleanup) = bounded_gate("heal-reaper", 1);
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let dead = child.id();
    child.wait().expect("wait");
    let h = gate.header();
    // a holder died admitted in slot 40 (serving counts its unit)...
    let slot = gate.slot(40);
    slot.owner_pid.store(dead, Ordering::SeqCst);
    slot.owner_tid.store(dead, Ordering::SeqCst);
    slot.state.store(HOLDING, Ordering::SeqCst);
    h.serving.store(1, Ordering::SeqCst);
    // ...and three words say nobody need look: the scans' end below it, a
    // reaper forever busy, a last reap in the future
    h.slot_hwm.store(0, Ordering::SeqCst);
    h.reaper_busy.store(1, Ordering::SeqCst);
    h.last_reap_ns.store(u64::MAX, Ordering::SeqCst);
    let [first, second] = two_rounds(&gate, 2);
    eprintln!("first round {first:?}, second round {second:?}");
    assert!(h.lock_repairs.load(Ordering::SeqCst) >= 1);
    // the heal may have taken the dead holder's unit for a waiter before
    // any reaper ran; the words it put right let the next reap free it
    gate.reap(true);
    assert_eq!(h.reaped_slots.load(Ordering::SeqCst), 1);
    assert_eq!(slot.owner_pid.load(Ordering::SeqCst), 0);
    assert!(
        second.iter().all(|a| !matches!(a, Admission::Overdue(_))),
        "the gate stayed degraded: {second:?}"
    );
    assert_eq!(h.serving.load(Ordering::SeqCst), gate.tally().0);
}

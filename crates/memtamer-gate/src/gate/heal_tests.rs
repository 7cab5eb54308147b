//! Issue 22: a corrupted owner, tid, taken, state, lock or bookkeeping word
//! is healed online, within a few re-checks of a waiter, whatever the
//! admission bound. Every gate here has a bound of ten minutes, so a waiter
//! that is let in only at the bound (what the code did before) never
//! answers within the test's patience; each case also asserts that a
//! healing event was counted (`lock_repairs`, `reaped_slots`, `reclaimed`)
//! and that the admission was a real one, not an overdue pass.

use super::*;
use std::sync::mpsc;

/// Far beyond the patience: a waiter admitted only at the bound hangs here.
const FAR_BOUND: Duration = Duration::from_secs(600);
/// How long a test waits for an answer before calling it a hang.
const PATIENCE: Duration = Duration::from_secs(20);

struct Cleanup(PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A fresh gate with limit 1 and a ten-minute admission bound.
fn far_bound_gate(tag: &str) -> (Arc<Gate>, Cleanup) {
    let options = GateOptions {
        name: format!("unit-heal-{tag}-{}", std::process::id()),
        initial_limit: 1,
        max_wait: FAR_BOUND,
        ..GateOptions::default()
    };
    let _ = std::fs::remove_file(options.path());
    (Gate::open(&options).expect("open"), Cleanup(options.path()))
}

/// Healing events the gate counted so far.
fn healed(gate: &Gate) -> u64 {
    let h = gate.header();
    h.lock_repairs.load(Ordering::SeqCst)
        + h.reaped_slots.load(Ordering::SeqCst)
        + h.reclaimed.load(Ordering::SeqCst)
}

/// A pid that no process has any more.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().expect("spawn");
    let pid = child.id();
    child.wait().expect("wait");
    pid
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = std::time::Instant::now();
    while !cond() {
        assert!(t0.elapsed() < PATIENCE, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// The index of the one WAITING slot.
fn waiting_slot(gate: &Gate) -> Option<usize> {
    (0..gate.slots_in_use()).find(|&i| gate.slot(i).state.load(Ordering::SeqCst) == WAITING)
}

/// Starts a thread that registers and makes one 4 KiB request; its
/// admission arrives on the receiver.
fn requester(gate: &Arc<Gate>) -> mpsc::Receiver<Admission> {
    let (tx, rx) = mpsc::channel();
    let g = Arc::clone(gate);
    std::thread::spawn(move || {
        let me = g.register().expect("register");
        let admission = me.enter(4096, true).admission;
        drop(me);
        let _ = tx.send(admission);
    });
    rx
}

/// The requester's admission: a real one (not overdue), within patience.
fn admitted(tag: &str, rx: &mpsc::Receiver<Admission>) {
    let a = rx
        .recv_timeout(PATIENCE)
        .unwrap_or_else(|_| panic!("{tag}: the waiter was not admitted before the bound"));
    assert!(
        matches!(a, Admission::Immediate | Admission::Waited(_)),
        "{tag}: {a:?}"
    );
}

/// A waiter queues behind a running holder; `corrupt` breaks a word (of
/// the waiter's slot, the holder's slot or the header); the holder ends.
/// The waiter must be admitted and the event counted.
fn waiter_survives(tag: &str, corrupt: impl FnOnce(&Gate, usize, usize)) {
    let (gate, _c) = far_bound_gate(tag);
    let holder = gate.register().expect("register");
    let permit = holder.enter(4096, true);
    assert_eq!(permit.admission, Admission::Immediate);
    let rx = requester(&gate);
    wait_until("the waiter to queue", || waiting_slot(&gate).is_some());
    let waiter = waiting_slot(&gate).expect("a waiter");
    let before = healed(&gate);
    corrupt(&gate, waiter, holder.index.get());
    drop(permit);
    admitted(tag, &rx);
    assert!(healed(&gate) > before, "{tag}: no healing counted");
    // the holder is served again, its own words intact
    drop(holder.enter(4096, true));
    assert!(holder.slot_names_me(), "{tag}: the holder's words");
    drop(holder);
    let (serving, waiting) = gate.tally();
    assert_eq!(
        gate.header().serving.load(Ordering::SeqCst),
        serving,
        "{tag}"
    );
    assert!(waiting.is_empty(), "{tag}");
}

/// A holder parks its unit (HOLDING) and stays idle; `corrupt` breaks a
/// word of its slot; another thread's request must be admitted, counted,
/// and the holder's next request too.
fn idle_holder_survives(tag: &str, corrupt: impl FnOnce(&Gate, usize)) {
    let (gate, _c) = far_bound_gate(tag);
    let holder = gate.register().expect("register");
    drop(holder.enter(4096, true));
    let before = healed(&gate);
    corrupt(&gate, holder.index.get());
    admitted(tag, &requester(&gate));
    let again = requester(&gate);
    drop(holder.enter(4096, true));
    admitted(tag, &again);
    drop(holder.enter(4096, true));
    assert!(holder.slot_names_me(), "{tag}: the holder's words");
    // the unit came back (reaped, recounted or taken) and the holder's
    // words were put back: at least one of them counted
    assert!(healed(&gate) > before, "{tag}: no healing counted");
}

/// `corrupt` breaks a header word of an idle gate; a request must be
/// admitted and the event counted.
fn request_survives(tag: &str, corrupt: impl FnOnce(&Gate)) {
    let (gate, _c) = far_bound_gate(tag);
    let before = healed(&gate);
    corrupt(&gate);
    admitted(tag, &requester(&gate));
    assert!(healed(&gate) > before, "{tag}: no healing counted");
}

#[test]
fn a_waiters_corrupted_owner_pid_is_healed_at_once() {
    let dead = dead_pid();
    for (tag, value) in [
        ("pid0", 0),
        ("piddead", dead),
        ("pidmax", u32::MAX),
        ("pid1", 1),
    ] {
        waiter_survives(tag, |g, w, _| {
            g.slot(w).owner_pid.store(value, Ordering::SeqCst)
        });
    }
}

#[test]
fn a_waiters_corrupted_owner_tid_is_healed_at_once() {
    let dead = dead_pid();
    for (tag, value) in [("tid0", 0), ("tiddead", dead), ("tidmax", u32::MAX)] {
        waiter_survives(tag, |g, w, _| {
            g.slot(w).owner_tid.store(value, Ordering::SeqCst)
        });
    }
}

#[test]
fn a_waiters_corrupted_state_or_mapping_is_healed_at_once() {
    for (tag, value) in [("stidle", IDLE), ("sthold", HOLDING), ("st7", 7)] {
        waiter_survives(tag, |g, w, _| {
            g.slot(w).state.store(value, Ordering::SeqCst)
        });
    }
    waiter_survives("mapbase", |g, w, _| {
        g.slot(w).map_base.store(0, Ordering::SeqCst)
    });
}

#[test]
fn a_queue_that_lost_its_waiter_is_rebuilt_at_once() {
    waiter_survives("qlen0", |g, _, _| {
        g.header().queue_len.store(0, Ordering::SeqCst)
    });
    waiter_survives("qentry", |g, _, holder| {
        let h = g.header();
        let start = h.queue_start.load(Ordering::SeqCst) as usize;
        h.queue[start % SLOTS].store(holder as u32, Ordering::SeqCst);
    });
}

#[test]
fn a_running_holders_corrupted_words_do_not_keep_the_waiter_out() {
    let dead = dead_pid();
    waiter_survives("hpid0", |g, _, h| {
        g.slot(h).owner_pid.store(0, Ordering::SeqCst)
    });
    waiter_survives("hpiddead", |g, _, h| {
        g.slot(h).owner_pid.store(dead, Ordering::SeqCst)
    });
    waiter_survives("htaken", |g, _, h| {
        g.slot(h).taken.store(1, Ordering::SeqCst)
    });
}

#[test]
fn an_idle_holders_corrupted_owner_or_taken_word_is_healed_at_once() {
    let dead = dead_pid();
    idle_holder_survives("ipid0", |g, h| {
        g.slot(h).owner_pid.store(0, Ordering::SeqCst)
    });
    idle_holder_survives("ipiddead", |g, h| {
        g.slot(h).owner_pid.store(dead, Ordering::SeqCst)
    });
    idle_holder_survives("itiddead", |g, h| {
        g.slot(h).owner_tid.store(dead, Ordering::SeqCst)
    });
    idle_holder_survives("itaken", |g, h| g.slot(h).taken.store(1, Ordering::SeqCst));
}

#[test]
fn a_lock_word_naming_no_thread_or_a_live_one_is_taken_over_within_a_fixed_time() {
    // the high half only: process 1, thread 0 (no lock owner has tid 0)
    request_survives("lockpid1", |g| {
        g.header().lock.store(1 << 32, Ordering::SeqCst)
    });
    // a live thread of this process that will never release it
    let (tx, rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let sleeper = std::thread::spawn(move || {
        let _ = tx.send(os::tid());
        let _ = stop_rx.recv();
    });
    let tid = rx.recv().expect("tid");
    request_survives("locklive", |g| {
        g.header().lock.store(
            (u64::from(os::pid()) << 32) | u64::from(tid),
            Ordering::SeqCst,
        )
    });
    drop(stop_tx);
    sleeper.join().expect("sleeper");
    // a live thread that runs (as an owner preempted inside would)
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let flag = Arc::clone(&stop);
    let spinner = std::thread::spawn(move || {
        let _ = tx.send(os::tid());
        while !flag.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    let tid = rx.recv().expect("tid");
    request_survives("lockbusy", |g| {
        g.header().lock.store(
            (u64::from(os::pid()) << 32) | u64::from(tid),
            Ordering::SeqCst,
        )
    });
    stop.store(true, Ordering::Relaxed);
    spinner.join().expect("spinner");
}

#[test]
fn a_serving_count_within_bounds_is_healed_at_once_even_with_a_future_heal_stamp() {
    request_survives("serving1", |g| {
        g.header().serving.store(1, Ordering::SeqCst)
    });
    request_survives("healstamp", |g| {
        g.header().serving.store(1, Ordering::SeqCst);
        g.header().last_heal_ns.store(u64::MAX, Ordering::SeqCst);
    });
}

#[test]
fn a_dead_holder_hidden_by_corrupted_reaper_words_is_freed_at_once() {
    let dead = dead_pid();
    request_survives("reaper", |g| {
        let slot = g.slot(40);
        slot.owner_pid.store(dead, Ordering::SeqCst);
        slot.owner_tid.store(dead, Ordering::SeqCst);
        slot.state.store(HOLDING, Ordering::SeqCst);
        let h = g.header();
        h.serving.store(1, Ordering::SeqCst);
        h.slot_hwm.store(0, Ordering::SeqCst);
        h.reaper_busy.store(1, Ordering::SeqCst);
        h.last_reap_ns.store(u64::MAX, Ordering::SeqCst);
    });
}

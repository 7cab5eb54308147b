//! The duty cycler against real CPU-burning children.
//!
//! Bounds are loose (a noisy shared 2-core VM), but each test fails if the
//! cycler does nothing (a burner alone gets ~100% of a CPU).
mod common;

use common::{cpu_share, state, wait_until, ChildGuard, TempDir};
use memtamer_actuate::duty::{DutyCycler, DEFAULT_PERIOD};
use memtamer_actuate::{Change, Journal, ProcessKey};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// CPU shares of two processes measured over the same window.
fn shares(a: i32, b: i32, window: Duration) -> (f64, f64) {
    std::thread::scope(|s| {
        let ha = s.spawn(|| cpu_share(a, window));
        let hb = s.spawn(|| cpu_share(b, window));
        (ha.join().unwrap(), hb.join().unwrap())
    })
}

/// The tests compete for the same 2 CPUs: run them one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn quarter_duty_limits_a_burner_and_clear_resumes_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = TempDir::new("duty");
    let journal = Arc::new(Journal::open(&dir.path().join("journal")).unwrap());
    let burner = ChildGuard::burner();
    // An uncycled burner measured alongside: the VM is shared, so absolute
    // shares alone cannot tell "cycled" from "lost CPU to someone else".
    let control = ChildGuard::burner();
    let key = ProcessKey::of(burner.pid()).unwrap();
    let cycler = DutyCycler::start(DEFAULT_PERIOD, journal.clone()).unwrap();
    assert_eq!(cycler.set("be", vec![key], 0.25).unwrap(), 1);
    assert_eq!(
        journal.pending(),
        vec![Change::Stopped {
            pid: key.pid,
            start_time: key.start_time
        }]
    );
    std::thread::sleep(Duration::from_millis(200));
    let (share, reference) = shares(burner.pid(), control.pid(), Duration::from_secs(1));
    eprintln!(
        "burner at duty 0.25 got {:.1}% of a CPU (uncycled control: {:.1}%)",
        share * 100.0,
        reference * 100.0
    );
    assert!(share > 0.05 && share < 0.60, "share {share}");
    assert!(
        share < 0.6 * reference,
        "share {share} vs control {reference}"
    );

    cycler.clear("be").unwrap();
    // the record stays (no fsync per relax); a restore would only SIGCONT it
    assert_eq!(journal.pending().len(), 1);
    assert!(wait_until(Duration::from_millis(100), || matches!(
        state(burner.pid()),
        'R' | 'S'
    )));
    let (after, reference) = shares(burner.pid(), control.pid(), Duration::from_millis(500));
    eprintln!(
        "burner after clear got {:.1}% of a CPU (control {:.1}%)",
        after * 100.0,
        reference * 100.0
    );
    assert!(
        after > 0.6 * reference,
        "after clear {after} vs control {reference}"
    );
    assert!(after > 1.5 * share, "after clear {after} vs cycled {share}");

    // Drop in the middle of cycling must leave it running too.
    cycler.set("be", vec![key], 0.05).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    drop(cycler);
    assert!(journal.pending().is_empty());
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(20));
        let s = state(burner.pid());
        assert!(matches!(s, 'R' | 'S'), "state {s} after drop");
    }
}

#[test]
fn two_jobs_get_their_own_duties() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = TempDir::new("duty2");
    let journal = Arc::new(Journal::open(&dir.path().join("journal")).unwrap());
    let a = ChildGuard::burner();
    let b = ChildGuard::burner();
    let cycler = DutyCycler::start(Duration::from_micros(500), journal.clone()).unwrap();
    cycler
        .set("a", vec![ProcessKey::of(a.pid()).unwrap()], 0.15)
        .unwrap();
    cycler
        .set("b", vec![ProcessKey::of(b.pid()).unwrap()], 0.7)
        .unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let (pa, pb) = shares(a.pid(), b.pid(), Duration::from_secs(1));
    eprintln!(
        "duty 0.15 -> {:.1}%, duty 0.7 -> {:.1}%",
        pa * 100.0,
        pb * 100.0
    );
    assert!(pa < 0.45, "job a {pa}");
    assert!(pb > 1.8 * pa, "job b {pb} vs a {pa}");
    // Changing a job's duty to 1 stops cycling it.
    cycler
        .set("a", vec![ProcessKey::of(a.pid()).unwrap()], 1.0)
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let pa1 = cpu_share(a.pid(), Duration::from_millis(500));
    eprintln!("duty 1 -> {:.1}%", pa1 * 100.0);
    assert!(pa1 > 1.8 * pa, "job a at duty 1: {pa1} vs {pa} at 0.15");
    cycler.stop();
    assert!(journal.pending().is_empty());
    assert!(matches!(state(b.pid()), 'R' | 'S'));
}

#[test]
fn exited_process_is_dropped_without_error() {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let dir = TempDir::new("duty3");
    let journal = Arc::new(Journal::open(&dir.path().join("journal")).unwrap());
    let child = ChildGuard::sleeper();
    let key = ProcessKey::of(child.pid()).unwrap();
    let cycler = DutyCycler::start(DEFAULT_PERIOD, journal.clone()).unwrap();
    cycler.set("s", vec![key, key], 0.5).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    drop(child); // killed and reaped: the pidfd now reports it gone
    std::thread::sleep(Duration::from_millis(20));
    cycler.clear("s").unwrap();
    cycler.stop();
    // the dead process's record is skipped, not failed, by a restore
    let report = journal.restore_all().unwrap();
    assert_eq!((report.restored(), report.failed()), (0, 0), "{report}");
    assert!(journal.pending().is_empty());
}

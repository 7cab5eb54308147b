//! The guard restores a SIGKILLed daemon's changes within 1 s.
mod common;

use common::{state, wait_until, ChildGuard, TempDir};
use memtamer_actuate::affinity::{set_thread_affinity, thread_affinity};
use memtamer_actuate::guard::run_guard;
use memtamer_actuate::journal::Outcome;
use memtamer_actuate::{Change, Journal, ProcessKey};
use memtamer_core::CpuSet;
use std::time::{Duration, Instant};

#[test]
fn guard_restores_after_sigkill_of_daemon() {
    let dir = TempDir::new("guard");
    let path = dir.path().join("run/journal");
    let daemon = ChildGuard::sleeper();
    let pinned = ChildGuard::sleeper();
    let stopped = ChildGuard::sleeper();
    let stranger = ChildGuard::sleeper();

    let original = thread_affinity(pinned.pid()).unwrap();
    if original.len() < 2 {
        eprintln!("SKIP: need a child allowed on >= 2 CPUs, have {original}");
        return;
    }
    let mut one = CpuSet::empty();
    one.insert(original.iter().next().unwrap_or(0));

    let journal = Journal::open(&path).unwrap();
    let pk = ProcessKey::of(pinned.pid()).unwrap();
    journal
        .record(Change::ThreadAffinity {
            pid: pk.pid,
            tid: pk.pid,
            start_time: pk.start_time,
            original,
        })
        .unwrap();
    set_thread_affinity(pinned.pid(), &one).unwrap();
    let sk = ProcessKey::of(stopped.pid()).unwrap();
    journal
        .record(Change::Stopped {
            pid: sk.pid,
            start_time: sk.start_time,
        })
        .unwrap();
    unsafe { libc::kill(stopped.pid(), libc::SIGSTOP) };
    assert!(wait_until(Duration::from_millis(500), || state(
        stopped.pid()
    ) == 'T'));
    // A record whose start time does not match (as after pid reuse) must
    // not touch the process now holding that pid.
    let xk = ProcessKey::of(stranger.pid()).unwrap();
    journal
        .record(Change::ThreadAffinity {
            pid: xk.pid,
            tid: xk.pid,
            start_time: xk.start_time + 1,
            original,
        })
        .unwrap();
    set_thread_affinity(stranger.pid(), &one).unwrap();
    drop(journal); // the real daemon's lock dies with it

    let daemon_pid = daemon.pid();
    let guard_path = path.clone();
    let handle = std::thread::spawn(move || run_guard(daemon_pid, &guard_path));
    std::thread::sleep(Duration::from_millis(150));
    assert!(!handle.is_finished(), "guard must wait for the daemon");
    assert_eq!(state(stopped.pid()), 'T');

    let t0 = Instant::now();
    unsafe { libc::kill(daemon_pid, libc::SIGKILL) };
    assert!(
        wait_until(Duration::from_secs(1), || handle.is_finished()),
        "guard did not finish within 1 s"
    );
    let report = handle.join().unwrap().unwrap();
    let elapsed = t0.elapsed();
    eprintln!("guard restored in {elapsed:?}:\n{report}");
    assert!(elapsed < Duration::from_secs(1));
    assert_eq!(thread_affinity(pinned.pid()).unwrap(), original);
    assert!(
        matches!(state(stopped.pid()), 'S' | 'R'),
        "{}",
        state(stopped.pid())
    );
    assert_eq!(
        thread_affinity(stranger.pid()).unwrap(),
        one,
        "stranger touched"
    );
    assert_eq!(report.restored(), 2, "{report}");
    assert_eq!(report.skipped(), 1, "{report}");
    assert!(report.entries.iter().any(
        |(c, o)| matches!(c, Change::ThreadAffinity { pid, .. } if *pid == xk.pid)
            && matches!(o, Outcome::Skipped(_))
    ));
    assert!(
        !path.exists(),
        "journal must be removed after a clean restore"
    );
}

#[test]
fn guard_returns_at_once_for_a_dead_daemon() {
    let dir = TempDir::new("guard-dead");
    let path = dir.path().join("journal");
    let mut daemon = ChildGuard::sleeper();
    daemon.0.kill().unwrap();
    daemon.0.wait().unwrap();
    let t0 = Instant::now();
    let report = run_guard(daemon.pid(), &path).unwrap();
    assert!(t0.elapsed() < Duration::from_millis(500));
    assert!(report.entries.is_empty());
}

//! Co-running Ribbon instances (thesis §6.5.4) with the real control
//! threads: two instances in this process, and one in a child process that
//! is killed inside the registry. Waits are bounded polls on conditions,
//! never on elapsed time.

use super::*;
use crate::coshm::{Corun, Registry, SLOTS};
use crate::test_dir::TestDir;
use std::path::Path;
use std::sync::atomic::AtomicBool;

/// Env var naming the registry the child registrant joins (set only by
/// the parent test; without it the child test returns at once).
const CHILD_ENV: &str = "MEMTAMER_TEST_CORUN_CHILD";

fn corun_config(path: &Path) -> Config {
    let mut c = config(4, 256, 0, false);
    c.flushers = Flushers::Adaptive;
    c.cores = 8;
    c.detect_idle = false;
    c.pin = None;
    c.control = ControlConfig {
        p1: 2,
        probe: Duration::from_millis(20),
        interval: Duration::from_millis(100),
        ..ControlConfig::thesis(8)
    };
    c.corun = Corun::Shared(path.to_path_buf());
    c
}

/// Producers that flush fresh fake lines and fence until `stop`, counting
/// lines not executed and fenced when their fence returned.
fn producers<'s>(
    sc: &'s std::thread::Scope<'s, '_>,
    r: &'s Ribbon,
    threads: usize,
    stop: &'s AtomicBool,
    bad: &'s AtomicUsize,
) {
    for _ in 0..threads {
        sc.spawn(move || {
            let mut p = r.producer();
            while !stop.load(Ordering::Relaxed) {
                let first = lines(4);
                for i in 0..4 {
                    // SAFETY: the recording executor never dereferences.
                    unsafe { p.flush(addr(first + i), 1).unwrap() };
                }
                p.fence();
                let missing = (0..4).filter(|i| !persisted(first + i)).count();
                bad.fetch_add(missing, Ordering::Relaxed);
                std::thread::sleep(Duration::from_micros(200));
            }
        });
    }
}

/// Polls `what` every 5 ms for at most a minute (a loaded machine may hold
/// a control thread off its CPU for a while); returns whether it held.
fn eventually(what: impl Fn() -> bool) -> bool {
    for _ in 0..12_000 {
        if what() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

fn split_holds(a: &Stats, b: &Stats) -> bool {
    let mut roles = [a.corun, b.corun];
    roles.sort_by_key(|r| *r as usize);
    roles == [CorunRole::Member, CorunRole::Coordinator]
        && a.corun_total == b.corun_total
        && a.flushers + b.flushers == a.corun_total
        && a.flushers >= 1
        && b.flushers >= 1
}

#[test]
fn two_instances_register_one_coordinates_and_their_flushers_sum_to_the_total() {
    let dir = TestDir::new("corun-rt-pair");
    let a = Ribbon::start(corun_config(&dir.reg())).unwrap();
    let b = Ribbon::start(corun_config(&dir.reg())).unwrap();
    let stop = AtomicBool::new(false);
    let bad = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        producers(sc, &a, 2, &stop, &bad);
        producers(sc, &b, 1, &stop, &bad);
        let ok = eventually(|| split_holds(&a.stats(), &b.stats()));
        let (sa, sb) = (a.stats(), b.stats());
        stop.store(true, Ordering::Relaxed);
        assert!(ok, "a {sa:?}\nb {sb:?}");
        assert!(sa.corun_error.is_none() && sb.corun_error.is_none());
    });
    assert_eq!(bad.load(Ordering::Relaxed), 0, "a fence returned early");
    // the coordinator stops cleanly: the other takes over and gets it all
    let (first, second) = if a.stats().corun == CorunRole::Coordinator {
        (a, b)
    } else {
        (b, a)
    };
    first.stop();
    let ok = eventually(|| {
        let s = second.stats();
        s.corun == CorunRole::Coordinator && s.flushers == s.corun_total && s.flushers >= 1
    });
    assert!(ok, "{:?}", second.stats());
    second.stop();
    let r = Registry::open(&dir.reg()).unwrap();
    assert!(
        (0..SLOTS).all(|i| r.slot(i).owner_pid.load(Ordering::Relaxed) == 0),
        "both slots released"
    );
}

#[test]
fn a_bad_registry_leaves_the_instance_on_its_own_search_and_says_why() {
    let dir = TestDir::new("corun-rt-bad");
    std::fs::write(dir.reg(), b"short").unwrap();
    let r = Ribbon::start(corun_config(&dir.reg())).unwrap();
    let st = r.stats();
    assert_eq!(st.corun, CorunRole::Off);
    let e = st.corun_error.expect("the reason");
    assert!(
        e.contains("registry") && e.contains(&*dir.reg().to_string_lossy()),
        "{e}"
    );
    // it still flushes and fences
    let stop = AtomicBool::new(false);
    let bad = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        producers(sc, &r, 2, &stop, &bad);
        assert!(eventually(
            || r.stats().searches >= 1 && r.stats().fences > 50
        ));
        stop.store(true, Ordering::Relaxed);
    });
    assert_eq!(bad.load(Ordering::Relaxed), 0);
    r.stop();
}

/// The pid in a live slot other than this process's, if any.
fn other_registrant(path: &Path) -> Option<(usize, u32)> {
    let r = Registry::open(path).ok()?;
    let me = std::process::id();
    (0..SLOTS).find_map(|i| {
        let s = r.slot(i);
        let pid = s.owner_pid.load(Ordering::Acquire);
        (pid != 0 && pid != me && s.live.load(Ordering::Acquire) == 1).then_some((i, pid))
    })
}

/// Run by `a_killed_coordinator_process_is_taken_over_and_its_slot_reclaimed`
/// in a child process: registers and flushes until killed (at most two
/// minutes). Without the parent's variable it does nothing.
#[test]
#[ignore = "child process of a_killed_coordinator_process_is_taken_over_and_its_slot_reclaimed"]
fn child_registrant() {
    let Ok(path) = std::env::var(CHILD_ENV) else {
        return;
    };
    let r = Ribbon::start(corun_config(Path::new(&path))).unwrap();
    let mut p = r.producer();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(120) {
        let first = lines(4);
        for i in 0..4 {
            // SAFETY: the recording executor never dereferences.
            unsafe { p.flush(addr(first + i), 1).unwrap() };
        }
        p.fence();
        std::thread::sleep(Duration::from_micros(500));
    }
}

#[test]
fn a_killed_coordinator_process_is_taken_over_and_its_slot_reclaimed() {
    let dir = TestDir::new("corun-rt-kill");
    let exe = std::env::current_exe().unwrap();
    let mut child = std::process::Command::new(exe)
        .args([
            "--exact",
            "runtime::tests::corun_tests::child_registrant",
            "--ignored",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir.reg())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    // the child registers first and takes the lease
    let seen = eventually(|| {
        let Ok(r) = Registry::open(&dir.reg()) else {
            return false;
        };
        other_registrant(&dir.reg()).is_some_and(|(_, p)| p == pid)
            && r.header().lease.load(Ordering::Acquire) != 0
    });
    if !seen {
        let _ = child.kill();
        let _ = child.wait();
        panic!("the child never registered and coordinated");
    }
    let (child_slot, _) = other_registrant(&dir.reg()).unwrap();
    let me = Ribbon::start(corun_config(&dir.reg())).unwrap();
    let stop = AtomicBool::new(false);
    let bad = AtomicUsize::new(0);
    std::thread::scope(|sc| {
        producers(sc, &me, 2, &stop, &bad);
        let member = eventually(|| me.stats().corun == CorunRole::Member);
        // SIGKILL: the child dies inside the registry, releasing nothing
        // SAFETY: a signal to the child this test started.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        let killed = Instant::now();
        let _ = child.wait();
        let took = eventually(|| {
            let s = me.stats();
            s.corun == CorunRole::Coordinator && s.flushers == s.corun_total && s.flushers >= 1
        });
        // reported, not asserted (docs/notebook/ribbon.md, "Co-running applications")
        eprintln!(
            "corun: SIGKILL to takeover {:.3} s (lease {} s)",
            killed.elapsed().as_secs_f64(),
            crate::comember::STALE_NS as f64 / 1e9
        );
        let r = Registry::open(&dir.reg()).unwrap();
        let reclaimed = eventually(|| {
            r.slot(child_slot).owner_pid.load(Ordering::Acquire) != pid
                && r.header().reclaimed.load(Ordering::Relaxed) >= 1
        });
        stop.store(true, Ordering::Relaxed);
        assert!(
            member,
            "never a member while the child coordinated: {:?}",
            me.stats()
        );
        assert!(took, "no takeover: {:?}", me.stats());
        assert!(reclaimed, "the dead child's slot was not reclaimed");
        assert!(r.header().takeovers.load(Ordering::Relaxed) >= 1);
    });
    assert_eq!(bad.load(Ordering::Relaxed), 0);
    me.stop();
}

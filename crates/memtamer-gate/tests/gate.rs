//! Behaviour of the gate that must never regress: the limit holds (also
//! across processes), nobody starves, small requests never block, and a
//! killed process gives its capacity back.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use memtamer_gate::{Admission, CollectorCore, Gate, GateOptions, PolicySpec, ThreadState};

/// Generous bound for "eventually": only reached when something is broken.
const PATIENCE: Duration = Duration::from_secs(20);

fn options(tag: &str) -> GateOptions {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    GateOptions {
        name: format!("test-{}-{tag}-{n}", std::process::id()),
        ..GateOptions::default()
    }
}

struct Cleanup(std::path::PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn open(tag: &str, limit: u32) -> (Arc<Gate>, Cleanup) {
    let o = GateOptions {
        initial_limit: limit,
        ..options(tag)
    };
    let gate = Gate::open(&o).expect("open gate");
    (gate, Cleanup(o.path()))
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let t0 = Instant::now();
    while !cond() {
        assert!(t0.elapsed() < PATIENCE, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Work inside a permit long enough for others to pile up.
fn busy(us: u64) {
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_micros(us) {
        std::hint::spin_loop();
    }
}

#[test]
fn the_limit_is_never_exceeded_by_threads() {
    for limit in [1u32, 2, 3] {
        let (gate, _c) = open("limit", limit);
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        // the gate starts full, so the workers are certain to queue
        let holders: Vec<_> = (0..limit)
            .map(|_| gate.register().expect("register"))
            .collect();
        let held: Vec<_> = holders.iter().map(|h| h.enter(4096, true)).collect();
        let start = Arc::new(std::sync::Barrier::new(6));
        let threads: Vec<_> = (0..6)
            .map(|_| {
                let (gate, inside, most, start) =
                    (gate.clone(), inside.clone(), most.clone(), start.clone());
                std::thread::spawn(move || {
                    let me = gate.register().expect("register");
                    start.wait();
                    for _ in 0..300 {
                        let _p = me.enter(4096, true);
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        busy(5);
                        inside.fetch_sub(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        wait_until("a worker to queue", || gate.snapshot().waiting >= 1);
        drop(held);
        drop(holders);
        for t in threads {
            t.join().expect("worker");
        }
        let snap = gate.snapshot();
        assert!(
            most.load(Ordering::SeqCst) <= limit,
            "limit {limit} exceeded"
        );
        assert!(snap.peak_serving <= limit);
        assert_eq!(snap.serving, 0);
        assert_eq!(snap.admissions, 1800 + u64::from(limit));
        assert!(snap.contended_admissions > 0, "the test never contended");
        assert_eq!(snap.total().writes_by_size[3], 1800 + u64::from(limit));
        assert!(snap.threads.is_empty(), "slots freed at thread exit");
    }
}

#[test]
fn waiters_are_served_in_arrival_order_so_nobody_starves() {
    let (gate, _c) = open("fifo", 1);
    let order = Arc::new(Mutex::new(Vec::new()));
    let holder = gate.register().expect("register");
    let first = holder.enter(4096, true);
    assert_eq!(first.admission, Admission::Immediate);
    let mut joins = Vec::new();
    for id in 0..4 {
        let (g, order) = (gate.clone(), order.clone());
        joins.push(std::thread::spawn(move || {
            let me = g.register().expect("register");
            let _p = me.enter(4096, true);
            order.lock().expect("order").push(id);
        }));
        // enqueue one at a time so the arrival order is known
        wait_until("waiter to queue", || gate.snapshot().waiting == id + 1);
    }
    drop(first);
    // the holder comes straight back: it must queue behind everyone
    {
        let _again = holder.enter(4096, true);
        order.lock().expect("order").push(99);
    }
    for j in joins {
        j.join().expect("waiter");
    }
    assert_eq!(*order.lock().expect("order"), vec![0, 1, 2, 3, 99]);
}

#[test]
fn an_idle_thread_keeps_its_unit_only_until_someone_needs_it() {
    let (gate, _c) = open("held", 1);
    let idle = gate.register().expect("register");
    drop(idle.enter(4096, true)); // ends with nobody waiting: keeps the unit
    let snap = gate.snapshot();
    assert_eq!(snap.serving, 1);
    assert_eq!(snap.threads[0].state, ThreadState::Holding);
    // its next request reuses the unit without the lock
    assert_eq!(idle.enter(4096, true).admission, Admission::Immediate);
    assert_eq!(gate.snapshot().total().reused, 1);
    // another thread gets the unit although the idle thread never calls again
    let g = gate.clone();
    let other = std::thread::spawn(move || {
        let me = g.register().expect("register");
        let admission = me.enter(4096, true).admission;
        admission
    });
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(other.join());
    });
    let admission = rx
        .recv_timeout(PATIENCE)
        .expect("an idle holder starved a waiter")
        .expect("other thread");
    assert_ne!(admission, Admission::Bypassed);
    let snap = gate.snapshot();
    assert_eq!(
        snap.serving, 0,
        "the other thread exited and returned the unit"
    );
    assert_eq!(snap.admissions, 3);
    // a lower limit takes held units back at once
    gate.set_limit(Some(2));
    let a = gate.register().expect("register");
    drop(a.enter(4096, true));
    drop(idle.enter(4096, true));
    assert_eq!(gate.snapshot().serving, 2);
    gate.set_limit(Some(1));
    assert_eq!(gate.snapshot().serving, 0);
    assert!(gate.snapshot().peak_serving <= 2);
}

#[test]
fn held_units_never_let_requests_exceed_the_limit() {
    // Threads pause between requests, so units are often held (no waiter
    // when a request ends) and then taken back by a waiter while their
    // holder may be starting its next request: the race the held unit's
    // handshake must win every time.
    for limit in [1u32, 2] {
        let (gate, _c) = open("held-race", limit);
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..5u64)
            .map(|i| {
                let (gate, inside, most) = (gate.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    let me = gate.register().expect("register");
                    for n in 0..3000u64 {
                        {
                            let _p = me.enter(4096, true);
                            let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                            most.fetch_max(now, Ordering::SeqCst);
                            busy(1);
                            inside.fetch_sub(1, Ordering::SeqCst);
                        }
                        // uneven pauses: sometimes nobody waits at `end`
                        busy((n * 7 + i * 3) % 11);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("worker");
        }
        let snap = gate.snapshot();
        assert!(
            most.load(Ordering::SeqCst) <= limit,
            "limit {limit} exceeded with held units"
        );
        assert!(snap.peak_serving <= limit);
        assert_eq!(snap.serving, 0, "every held unit came back");
        assert_eq!(snap.admissions, 15_000);
        assert!(snap.total().reused > 0, "no unit was ever held and reused");
        assert!(snap.contended_admissions > 0, "the test never contended");
    }
}

#[test]
fn requests_below_the_bypass_size_never_block() {
    let (gate, _c) = open("bypass", 1);
    let holder = gate.register().expect("register");
    let _busy = holder.enter(4096, true);
    let (tx, rx) = mpsc::channel();
    let g = gate.clone();
    std::thread::spawn(move || {
        let me = g.register().expect("register");
        let small = me.begin(255, true);
        me.end();
        let big = me.enter(256, true).admission;
        let _ = tx.send((small, big));
    });
    // the 255 B request passes while the gate is full...
    let (small, _) = loop {
        if let Ok(v) = rx.try_recv() {
            break v;
        }
        let snap = gate.snapshot();
        if snap.total().bypassed == 1 && snap.waiting == 1 {
            // ...and the 256 B one waits for the holder
            drop(_busy);
            break rx.recv_timeout(PATIENCE).expect("admitted after release");
        }
        std::thread::sleep(Duration::from_millis(1));
    };
    assert_eq!(small, Admission::Bypassed);
}

#[test]
fn raising_the_limit_releases_waiters_and_lowering_it_holds_new_ones() {
    let (gate, _c) = open("setlimit", 1);
    let holder = gate.register().expect("register");
    let _p = holder.enter(4096, false);
    let g = gate.clone();
    let waiter = std::thread::spawn(move || {
        let me = g.register().expect("register");
        let admission = me.enter(4096, false).admission;
        admission
    });
    wait_until("waiter to queue", || gate.snapshot().waiting == 1);
    gate.set_limit(Some(2));
    assert!(matches!(
        waiter.join().expect("waiter"),
        Admission::Waited(_)
    ));
    assert_eq!(gate.limit(), Some(2));
    gate.set_limit(None);
    assert_eq!(gate.limit(), None);
    gate.set_limit(Some(0)); // clamps to 1: PM work always progresses
    assert_eq!(gate.limit(), Some(1));
}

#[test]
fn the_collector_sets_pats_threshold_from_the_mix() {
    let (gate, _c) = open("collector", 100);
    let mut core = CollectorCore::new(PolicySpec::Pats { t_mc: 0.2 }.build(1).expect("policy"));
    let me = gate.register().expect("register");
    for _ in 0..10 {
        let _p = me.enter(4096, true);
    }
    let (obs, limit) = core.tick(&gate);
    assert_eq!(obs.pm_total().write_bytes, 40960);
    assert_eq!(limit, Some(memtamer_core::GateLimit::Limit(2))); // PATS Eq. 1
    assert_eq!(gate.limit(), Some(2));
    for _ in 0..10 {
        let _p = me.enter(4096, false);
    }
    core.tick(&gate);
    assert_eq!(gate.limit(), Some(4)); // reads: P_rw = 3
    let snap = gate.snapshot();
    assert_eq!(snap.last_write_ratio, Some(0.0));
    assert_eq!(snap.last_avg_request_bytes, Some(4096.0));
}

// ---- cross-process tests: the test binary re-runs itself as a child ----

const CHILD_ENV: &str = "MT_GATE_TEST_CHILD";

/// The name other processes open `gate` by.
fn gate_name(gate: &Gate) -> String {
    gate.path()
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("memtamer-gate-"))
        .expect("gate file name")
        .to_string()
}

fn spawn_child(role: &str, gate: &str, extra: &str) -> Child {
    Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{role}|{gate}|{extra}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child")
}

fn read_marker(child: &mut Child, marker: &str) {
    let out = child.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(out).lines();
    let (tx, rx) = mpsc::channel();
    let marker = marker.to_string();
    std::thread::spawn(move || {
        for line in lines.by_ref().map_while(Result::ok) {
            if line.contains(&marker) {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(PATIENCE).expect("child marker");
}

/// A counter pair in its own shared file: threads in any process count
/// themselves in and out of the admitted section, and the peak.
struct SharedCounter {
    ptr: *mut AtomicU32,
}
unsafe impl Send for SharedCounter {}
unsafe impl Sync for SharedCounter {}
impl SharedCounter {
    fn open(path: &str) -> SharedCounter {
        use std::os::unix::io::AsRawFd;
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .expect("counter file");
        f.set_len(8).expect("size");
        // SAFETY: mapping an 8-byte shared file; the mapping outlives the process use.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        SharedCounter { ptr: p.cast() }
    }
    fn inside(&self) -> &AtomicU32 {
        // SAFETY: first u32 of the mapping.
        unsafe { &*self.ptr }
    }
    fn most(&self) -> &AtomicU32 {
        // SAFETY: second u32 of the mapping.
        unsafe { &*self.ptr.add(1) }
    }
}

#[test]
fn child_entry() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return; // only meaningful as a child
    };
    let mut parts = spec.splitn(3, '|');
    let (role, name, extra) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let gate = Gate::open(&GateOptions {
        name: name.into(),
        ..GateOptions::default()
    })
    .expect("child opens gate");
    match role {
        "hold" => {
            let me = gate.register().expect("register");
            let _p = me.enter(4096, true);
            println!("ADMITTED");
            std::thread::sleep(Duration::from_secs(600));
        }
        "work" => {
            let counter = Arc::new(SharedCounter::open(extra));
            let threads: Vec<_> = (0..4)
                .map(|_| {
                    let (gate, counter) = (gate.clone(), counter.clone());
                    std::thread::spawn(move || {
                        let me = gate.register().expect("register");
                        for _ in 0..400 {
                            let _p = me.enter(4096, true);
                            let now = counter.inside().fetch_add(1, Ordering::SeqCst) + 1;
                            counter.most().fetch_max(now, Ordering::SeqCst);
                            busy(20);
                            counter.inside().fetch_sub(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().expect("child worker");
            }
            println!("DONE");
        }
        other => panic!("unknown child role {other}"),
    }
}

#[test]
fn a_killed_process_gives_its_capacity_back() {
    let (gate, _c) = open("kill", 1);
    let name = gate_name(&gate);
    let mut child = spawn_child("hold", &name, "");
    read_marker(&mut child, "ADMITTED");
    let snap = gate.snapshot();
    assert_eq!(snap.serving, 1);
    assert!(snap
        .threads
        .iter()
        .any(|t| t.pid == child.id() && t.state == ThreadState::Running));
    child.kill().expect("kill -9 the child");
    child.wait().expect("reap the child");
    // the only capacity is held by a dead process: we must still get in
    let (tx, rx) = mpsc::channel();
    let g = gate.clone();
    let helper = std::thread::spawn(move || {
        let me = g.register().expect("register");
        let a = me.enter(4096, true).admission;
        let _ = tx.send(a);
    });
    let admission = rx
        .recv_timeout(PATIENCE)
        .expect("capacity leaked: a dead process still holds the gate");
    helper.join().expect("helper"); // its slot retires when it exits
    assert!(matches!(admission, Admission::Waited(_)));
    let snap = gate.snapshot();
    assert_eq!(snap.reclaimed, 1);
    assert!(snap.threads.iter().all(|t| t.pid != child.id()));
    assert_eq!(
        snap.retired.writes_by_size[3], 2,
        "the dead thread's stats are kept"
    );
}

#[test]
fn two_processes_together_respect_the_limit() {
    let (gate, _c) = open("procs", 2);
    let name = gate_name(&gate);
    let counter_path = format!("/dev/shm/mt-test-counter-{}", std::process::id());
    let _cc = Cleanup(counter_path.clone().into());
    let counter = SharedCounter::open(&counter_path);
    counter.inside().store(0, Ordering::SeqCst);
    counter.most().store(0, Ordering::SeqCst);
    let mut children: Vec<Child> = (0..2)
        .map(|_| spawn_child("work", &name, &counter_path))
        .collect();
    for c in &mut children {
        read_marker(c, "DONE");
        c.wait().expect("child exit");
    }
    let snap = gate.snapshot();
    let most = counter.most().load(Ordering::SeqCst);
    assert!(most <= 2, "{most} requests ran at once across processes");
    assert_eq!(most, 2, "the test never filled the gate");
    assert_eq!(snap.admissions, 3200);
    assert!(snap.peak_serving <= 2);
    assert_eq!(snap.serving, 0);
}

#[test]
fn the_gate_actuator_applies_the_limit_and_reports_the_rest_ignored() {
    use memtamer_core::{Actuators, CpuSet, Decision, GateLimit, Knob, Migration};
    use memtamer_gate::{GateActuator, NOT_A_GATE_KNOB};
    let (gate, _c) = open("actuator", 100);
    let d = Decision {
        gate_limit: Some(GateLimit::Limit(3)),
        thread_cpus: vec![(1, CpuSet::first_n(1))],
        migrations: vec![Migration { tid: 1, to_cpu: 0 }],
        ..Default::default()
    };
    let report = GateActuator(&gate).apply(&d);
    assert_eq!(gate.limit(), Some(3));
    assert_eq!(report.applied_count(Knob::GateLimit), 1);
    assert_eq!(report.ignored_count(Knob::ThreadCpus), 1);
    assert_eq!(report.ignored_count(Knob::Migrations), 1);
    assert!(report.ignored.iter().all(|i| i.reason == NOT_A_GATE_KNOB));
    let report = GateActuator(&gate).apply(&Decision {
        gate_limit: Some(GateLimit::Unlimited),
        ..Default::default()
    });
    assert_eq!(gate.limit(), None);
    assert!(report.is_complete());
    // no gate_limit: the limit stays
    gate.set_limit(Some(5));
    let report = GateActuator(&gate).apply(&Decision::default());
    assert_eq!(gate.limit(), Some(5));
    assert_eq!(report, Default::default());
}

//! Issue 22 item 1: gate holders that are not dead must not hold everyone
//! hostage. A zombie counts as dead, a stopped holder loses its unit, a
//! process that execs gives its slot back, and no waiter waits past the
//! admission bound.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use memtamer_gate::{Admission, Gate, GateOptions};

/// Generous bound for "eventually": only reached when something is broken.
const PATIENCE: Duration = Duration::from_secs(20);
const CHILD_ENV: &str = "MT_GATE_HOSTILE_CHILD";

fn options(tag: &str, limit: u32) -> GateOptions {
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    GateOptions {
        name: format!("hostile-{}-{tag}-{n}", std::process::id()),
        initial_limit: limit,
        ..GateOptions::default()
    }
}

struct Cleanup(std::path::PathBuf);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn open(o: &GateOptions) -> (Arc<Gate>, Cleanup) {
    (Gate::open(o).expect("open gate"), Cleanup(o.path()))
}

/// Kills (SIGKILL) and reaps a child on drop, whatever the test did to it.
struct Reap(Child);
impl Drop for Reap {
    fn drop(&mut self) {
        // SAFETY: signalling our own child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGCONT) };
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// SIGKILLs a process that is not our child on drop.
struct Killer(u32);
impl Drop for Killer {
    fn drop(&mut self) {
        // SAFETY: signalling the grandchild this test started.
        unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
    }
}

/// Starts a child in `role` on gate `name`; returns it and the pid of the
/// process that holds the admission (the child, or its fork for "exec").
fn spawn_child(role: &str, name: &str) -> (Reap, u32) {
    let mut child = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "child_entry", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{role}|{name}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn child");
    let out = child.stdout.take().expect("child stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            // libtest prints "test child_entry ... " before the marker
            if let Some((_, pid)) = line.split_once("ADMITTED ") {
                let _ = tx.send(pid.trim().parse::<u32>().unwrap_or(0));
            }
        }
    });
    let holder = rx.recv_timeout(PATIENCE).expect("child admitted");
    (Reap(child), holder)
}

#[test]
fn child_entry() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return; // only meaningful as a child
    };
    let (role, name) = spec.split_once('|').unwrap_or(("", ""));
    let gate = Gate::open(&GateOptions {
        name: name.into(),
        ..GateOptions::default()
    })
    .expect("child opens gate");
    if role == "exec" {
        // A forked process has one thread, its main thread (tid == pid),
        // the one that survives exec with its ids unchanged.
        // SAFETY: the child only registers, prints and execs.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let me = gate.register().expect("register");
            let _permit = me.enter(4096, true);
            println!("ADMITTED {}", std::process::id());
            use std::os::unix::process::CommandExt;
            // exec without ever ending the request
            let err = Command::new("sleep").arg("600").exec();
            panic!("exec: {err}");
        }
        std::thread::sleep(Duration::from_secs(600));
        return;
    }
    let me = gate.register().expect("register");
    let permit = me.enter(4096, true);
    println!("ADMITTED {}", std::process::id());
    match role {
        "hold" => std::thread::sleep(Duration::from_secs(600)),
        other => panic!("unknown child role {other}"),
    }
    drop(permit);
}

/// Admits one 4 KiB request from a fresh thread; the admission, or None
/// when it did not come within PATIENCE (the gate hangs).
fn admit_from_thread(gate: &Arc<Gate>) -> Option<Admission> {
    let (tx, rx) = mpsc::channel();
    let g = Arc::clone(gate);
    std::thread::spawn(move || {
        let me = g.register().expect("register");
        let a = me.enter(4096, true).admission;
        let _ = tx.send(a);
    });
    rx.recv_timeout(PATIENCE).ok()
}

#[test]
fn a_zombie_holder_gives_its_unit_back_at_once() {
    let o = options("zombie", 1);
    let (gate, _c) = open(&o);
    let (child, pid) = spawn_child("hold", &o.name);
    let pid = pid as i32;
    // SIGKILL but do not reap: it stays a zombie while this test runs
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let t0 = std::time::Instant::now();
    while memtamer_linux::ProcRoot::default()
        .task_state(pid, pid)
        .map(|s| s != 'Z')
        .unwrap_or(false)
    {
        assert!(t0.elapsed() < PATIENCE, "child never became a zombie");
        std::thread::sleep(Duration::from_millis(1));
    }
    // the quick liveness check of the reaper must see it dead
    assert!(!memtamer_gate::os::alive(pid as u32, pid as u32));
    let a = admit_from_thread(&gate).expect("a zombie holds the gate");
    assert!(matches!(a, Admission::Waited(_)), "{a:?}");
    assert_eq!(gate.snapshot().reclaimed, 1);
    drop(child);
}

#[test]
fn a_stopped_holder_loses_its_unit() {
    let o = options("stopped", 1);
    let (gate, _c) = open(&o);
    let (child, _) = spawn_child("hold", &o.name);
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGSTOP) };
    let a = admit_from_thread(&gate).expect("a stopped process holds the gate");
    assert!(matches!(a, Admission::Waited(_)), "{a:?}");
    let snap = gate.snapshot();
    assert_eq!(snap.reclaimed, 1, "the stopped holder's unit was taken");
    // resumed, the child finds its unit gone and the count stays right
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.0.id() as i32, libc::SIGCONT) };
    drop(child);
    let t0 = std::time::Instant::now();
    while gate.snapshot().serving != 0 {
        assert!(t0.elapsed() < PATIENCE, "serving never went back to 0");
        gate.reap(true);
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn a_process_that_execs_while_admitted_gives_its_unit_back() {
    let o = options("exec", 1);
    let (gate, _c) = open(&o);
    let (child, holder) = spawn_child("exec", &o.name);
    let _grandchild = Killer(holder);
    // wait until it runs `sleep`: its image no longer knows the gate
    let t0 = std::time::Instant::now();
    while std::fs::read_to_string(format!("/proc/{holder}/comm"))
        .map_or(true, |c| c.trim() != "sleep")
    {
        assert!(t0.elapsed() < PATIENCE, "the holder never exec'd");
        std::thread::sleep(Duration::from_millis(1));
    }
    let a = admit_from_thread(&gate).expect("an exec'd process holds the gate");
    assert!(matches!(a, Admission::Waited(_)), "{a:?}");
    let snap = gate.snapshot();
    assert_eq!(snap.reclaimed, 1);
    assert!(snap.threads.iter().all(|t| t.pid != holder));
    drop(child);
}

#[test]
fn a_waiter_proceeds_after_the_admission_bound() {
    // a live holder in this process that never ends its request
    let o = options("bound", 1);
    let (gate, _c) = open(&o);
    let (held_tx, held_rx) = mpsc::channel();
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let g = Arc::clone(&gate);
    let holder = std::thread::spawn(move || {
        let me = g.register().expect("register");
        let _p = me.enter(4096, true);
        let _ = held_tx.send(());
        let _ = stop_rx.recv();
    });
    held_rx.recv_timeout(PATIENCE).expect("holder admitted");
    let a = admit_from_thread(&gate).expect("the waiter waited past the bound");
    assert!(matches!(a, Admission::Overdue(_)), "{a:?}");
    assert_eq!(gate.snapshot().overdue, 1);
    let _ = stop_tx.send(());
    holder.join().expect("holder");
    assert_eq!(gate.snapshot().serving, 0);
}

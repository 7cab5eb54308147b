//! Issue 22 item 3: the loop beats on the guard's watchdog pipe while it
//! runs, the beat stops when the loop stops (the guard then sees the pipe
//! close), and a stop request is honoured within a sleep slice even with
//! the longest period. Its own test binary: the stop flag is process-wide.

use memtamer_actuate::watchdog::Heartbeat;
use memtamer_control::config::DaemonConfig;
use memtamer_control::daemon::{self, Daemon};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0i32; 2];
    // SAFETY: a live array of two ints.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both fds were just created and are owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// Reads what is in the pipe within `wait`: Some(bytes), or None at end of file.
fn read_within(fd: &OwnedFd, wait: Duration) -> Option<usize> {
    let mut p = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let rc = unsafe { libc::poll(&mut p, 1, wait.as_millis() as i32) };
    if rc <= 0 {
        return Some(0);
    }
    let mut buf = [0u8; 4096];
    // SAFETY: reads into a live buffer of its length.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    (n != 0).then_some(n.max(0) as usize)
}

#[test]
fn the_loop_beats_while_it_runs_and_stops_beating_when_it_stops() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: needs root (the daemon's journal and actuators)");
        return;
    }
    let dir = std::env::temp_dir().join(format!("memtamer-heartbeat-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    // the longest period: one iteration, then a 1 s sleep the stop cuts short
    let text = format!(
        "[daemon]\nperiod_us = 1000000\nwatchdog_ms = 5000\nsocket = \"{d}/control.sock\"\njournal = \"{d}/journal\"\n\
         [isolation]\npolicy = \"off\"\n\
         [[job]]\nname = \"nobody-here\"\nclass = \"be\"\nmatch = {{ pid = [999999999] }}\n",
        d = dir.display()
    );
    let cfg = DaemonConfig::parse(&text, "test.toml").expect("config");
    let sources = memtamer_sense::sources::SourceConfig {
        ipmctl: "/nonexistent/ipmctl".into(),
        pmu_root: "/nonexistent".into(),
        ..Default::default()
    };
    let mut d = Daemon::start(cfg, std::path::Path::new("/proc"), &sources).expect("start");
    let (rx, tx) = pipe();
    d.set_heartbeat(Heartbeat::new(tx, Duration::ZERO).expect("heartbeat"));
    // the watcher plays the guard: waits for a beat, asks the loop to stop
    // (during its 1 s sleep), then waits for the pipe to close
    let watcher = std::thread::spawn(move || {
        let mut got = 0;
        let t = Instant::now();
        while got == 0 && t.elapsed() < Duration::from_secs(20) {
            match read_within(&rx, Duration::from_millis(100)) {
                Some(n) => got = n,
                None => return (0, false),
            }
        }
        daemon::request_stop();
        let eof = (0..100).any(|_| read_within(&rx, Duration::from_millis(100)).is_none());
        (got, eof)
    });
    let summary = d.run(None).expect("run");
    let (got, eof) = watcher.join().expect("watcher");
    assert!(got > 0, "no heartbeat from a running loop");
    assert!(summary.stats.iterations >= 1);
    assert!(eof, "the heartbeat pipe stayed open after the loop stopped");
    let _ = std::fs::remove_dir_all(&dir);
}

//! Issue 22 item 3: a daemon that is stopped or hung (not dead) left the BE
//! jobs it had SIGSTOPped stopped for ever: the guard acted only on exit.
//! Now `memtamer guard --watchdog-ms N` reads the daemon's heartbeat on its
//! stdin, spares a daemon that beats, and kills and undoes one silent for N
//! ms. Here the "daemon" is a `sleep` whose heartbeat the test writes; the
//! "BE job" is a stopped `sleep` journaled as `Stopped`.

use memtamer_actuate::journal::{Change, Journal};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        // SAFETY: a signal to our own child, not yet reaped.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGCONT) };
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn state_of(pid: u32) -> char {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    stat.rfind(')')
        .and_then(|i| stat[i + 1..].trim_start().chars().next())
        .unwrap_or('?')
}

fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 1..];
    after
        .split_whitespace()
        .nth(19)
        .expect("field 22")
        .parse()
        .expect("start time")
}

#[test]
fn a_silent_daemon_is_killed_and_its_stopped_jobs_resumed() {
    let dir = std::env::temp_dir().join(format!("memtamer-watchdog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("dir");
    let journal = dir.join("journal");
    // the BE job, stopped by "the daemon" and journaled first
    let job = Kill(Command::new("sleep").arg("60").spawn().expect("sleep"));
    {
        let j = Journal::open(&journal).expect("journal");
        j.record(Change::Stopped {
            pid: job.0.id() as i32,
            start_time: start_time(job.0.id()),
        })
        .expect("record");
    }
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(job.0.id() as i32, libc::SIGSTOP) };
    let mut daemon = Kill(Command::new("sleep").arg("60").spawn().expect("sleep"));
    let mut guard = Kill(
        Command::new(env!("CARGO_BIN_EXE_memtamer"))
            .args(["guard", "--pid", &daemon.0.id().to_string(), "--journal"])
            .arg(&journal)
            .args(["--watchdog-ms", "500"])
            .stdin(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("guard"),
    );
    let mut beats = guard.0.stdin.take().expect("stdin");
    // beating for three watchdog periods: nothing happens
    let t = Instant::now();
    while t.elapsed() < Duration::from_millis(1500) {
        let _ = beats.write_all(b".");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(state_of(job.0.id()), 'T', "resumed under a live daemon");
    assert!(
        guard.0.try_wait().expect("guard").is_none(),
        "the guard gave up"
    );
    // silence, the pipe still open (a stopped daemon): killed and undone
    let t = Instant::now();
    let status = loop {
        if let Some(s) = guard.0.try_wait().expect("guard") {
            break Some(s);
        }
        if t.elapsed() > Duration::from_secs(20) {
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = status.expect("the guard never acted on a silent daemon");
    assert!(status.success(), "{status:?}");
    assert_ne!(state_of(job.0.id()), 'T', "the BE job is still stopped");
    let daemon_status = daemon.0.wait().expect("daemon");
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(daemon_status.signal(), Some(libc::SIGKILL));
    let mut err = String::new();
    use std::io::Read;
    if let Some(mut e) = guard.0.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(err.contains("made no progress"), "{err}");
    drop(beats);
    let _ = std::fs::remove_dir_all(&dir);
}

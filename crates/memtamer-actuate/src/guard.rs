//! The guard: a separate process that undoes the daemon's changes when the
//! daemon dies, including by SIGKILL or a crash that skips every destructor.
//!
//! The daemon spawns `memtamer guard --pid P --journal F`, whose main calls
//! [`detach_from_terminal`] and then [`run_guard`]. The guard waits with a
//! pidfd (`pidfd_open` + `poll`, so it wakes the moment the daemon exits;
//! fallback on old kernels: a 20 ms liveness poll), then replays the journal
//! with [`crate::journal::restore_all`]. If the daemon exits cleanly it has
//! already emptied the journal and the guard finds nothing to do.

use crate::change::RestoreReport;
use crate::journal::restore_all;
use crate::process::{pidfd_open, ProcessKey};
use crate::{last_os_error, Error, Result};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

/// Liveness poll interval when pidfds are unavailable: keeps the restore
/// well inside the 1 s budget without measurable CPU use.
pub const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Makes the guard survive what usually kills a daemon's helpers: starts a
/// new session (so the terminal's SIGHUP and process-group signals don't
/// reach it) and ignores SIGINT and SIGHUP (a Ctrl-C at the terminal hits the
/// whole foreground group, the guard included, before setsid can matter).
/// SIGTERM keeps its default action so that an operator (or systemd's stop)
/// can still end the guard deliberately; the daemon restores on SIGTERM itself.
pub fn detach_from_terminal() -> Result<()> {
    for sig in [libc::SIGINT, libc::SIGHUP] {
        // SAFETY: installing SIG_IGN is async-signal-safe and has no handler.
        if unsafe { libc::signal(sig, libc::SIG_IGN) } == libc::SIG_ERR {
            return Err(Error::Sys {
                op: "signal(SIG_IGN)",
                id: std::process::id() as i32,
                source: last_os_error(),
            });
        }
    }
    // SAFETY: setsid has no memory-safety preconditions. EPERM means we
    // already lead a process group (e.g. spawned with setsid): fine.
    if unsafe { libc::setsid() } < 0 {
        let err = last_os_error();
        if err.raw_os_error() != Some(libc::EPERM) {
            return Err(Error::Sys {
                op: "setsid",
                id: std::process::id() as i32,
                source: err,
            });
        }
    }
    Ok(())
}

/// Waits until process `pid` has exited (a zombie counts as exited), or
/// `timeout` passes. Returns `true` if it exited. Uses a pidfd when the
/// kernel has them, else [`wait_for_exit_polling`].
pub fn wait_for_exit(pid: i32, timeout: Option<Duration>) -> Result<bool> {
    if pid <= 0 {
        // kill(0)/kill(-1) semantics would make no sense; and treating a bad
        // pid as "gone" would restore under a live daemon.
        return Err(Error::Invalid(format!("daemon pid must be > 0, got {pid}")));
    }
    let key = match ProcessKey::of(pid) {
        Ok(k) => k,
        Err(e) if e.is_gone() => return Ok(true), // already gone
        Err(e) => return Err(e.into()),
    };
    let fd = match pidfd_open(pid) {
        Ok(Some(fd)) => fd,
        Ok(None) => return Ok(wait_for_exit_polling(key, timeout)),
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(true),
        Err(source) => {
            return Err(Error::Sys {
                op: "pidfd_open",
                id: pid,
                source,
            })
        }
    };
    // The pid may have been recycled between reading the key and opening.
    if !key.is_alive() {
        return Ok(true);
    }
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        let wait_ms: i32 = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ok(false);
                }
                i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX)
            }
        };
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut pfd, 1, wait_ms) };
        if rc > 0 {
            return Ok(true);
        }
        if rc < 0 {
            let err = last_os_error();
            if err.raw_os_error() != Some(libc::EINTR) {
                return Err(Error::Sys {
                    op: "poll(pidfd)",
                    id: pid,
                    source: err,
                });
            }
        }
    }
}

/// Fallback wait for kernels without pidfds: checks every
/// [`POLL_INTERVAL`] whether `key` still exists (same start time, not a
/// zombie), which also handles pid reuse. Returns `true` if it exited.
pub fn wait_for_exit_polling(key: ProcessKey, timeout: Option<Duration>) -> bool {
    let deadline = timeout.map(|t| Instant::now() + t);
    loop {
        if !key.is_alive() {
            return true;
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return false;
        }
        std::thread::sleep(POLL_INTERVAL);
    }
}

/// The guard's whole job: wait for the daemon `daemon_pid` to die, then
/// undo everything in the journal at `journal_path`.
pub fn run_guard(daemon_pid: i32, journal_path: &Path) -> Result<RestoreReport> {
    wait_for_exit(daemon_pid, None)?;
    restore_all(journal_path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::ChildGuard;

    #[test]
    fn bad_pids_are_errors() {
        assert!(matches!(wait_for_exit(0, None), Err(Error::Invalid(_))));
        assert!(matches!(wait_for_exit(-1, None), Err(Error::Invalid(_))));
        assert!(run_guard(0, Path::new("/nonexistent/journal")).is_err());
    }

    #[test]
    fn detach_ignores_sigint_sighup_and_starts_a_session() {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        // SAFETY: detach_from_terminal only calls signal() and setsid(),
        // both async-signal-safe, between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                detach_from_terminal().map_err(|e| std::io::Error::other(e.to_string()))
            });
        }
        let child = ChildGuard(cmd.spawn().unwrap());
        let pid = child.pid();
        // SIG_IGN survives exec, so the sleeping child shows it.
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let ign = status
            .lines()
            .find_map(|l| l.strip_prefix("SigIgn:"))
            .map(|v| u64::from_str_radix(v.trim(), 16).unwrap())
            .unwrap();
        let bit = |sig: i32| 1u64 << (sig - 1);
        assert_eq!(ign & bit(libc::SIGINT), bit(libc::SIGINT), "{ign:x}");
        assert_eq!(ign & bit(libc::SIGHUP), bit(libc::SIGHUP), "{ign:x}");
        assert_eq!(ign & bit(libc::SIGTERM), 0, "{ign:x}");
        // Session id (field 6 of stat) is its own pid.
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 1..];
        let sid: i32 = after.split_whitespace().nth(3).unwrap().parse().unwrap();
        assert_eq!(sid, pid);
    }

    #[test]
    fn waits_for_a_child_with_pidfd_and_polling() {
        let mut child = ChildGuard::spawn("sleep", &["30"]);
        let key = ProcessKey::of(child.pid()).unwrap();
        assert!(!wait_for_exit(child.pid(), Some(Duration::from_millis(50))).unwrap());
        assert!(!wait_for_exit_polling(key, Some(Duration::from_millis(50))));
        child.0.kill().unwrap();
        // Not reaped yet: a zombie must count as exited.
        let t = Instant::now();
        assert!(wait_for_exit(child.pid(), Some(Duration::from_secs(2))).unwrap());
        assert!(wait_for_exit_polling(key, Some(Duration::from_secs(2))));
        assert!(t.elapsed() < Duration::from_secs(1));
        child.0.wait().unwrap();
        assert!(wait_for_exit(child.pid(), Some(Duration::from_millis(10))).unwrap());
    }
}

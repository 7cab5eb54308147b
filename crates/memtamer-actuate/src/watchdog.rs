//! The daemon's heartbeat and the guard's watchdog (issue 22 item 3).
//!
//! The guard of [`crate::guard`] restores when the daemon *exits*. A daemon
//! that is stopped (SIGSTOP, a frozen cgroup, a debugger) or hung (a system
//! call that never returns) does not exit, and the BE jobs it had stopped
//! or frozen would stay so. So the daemon also writes one byte to a pipe
//! whose other end is the guard's standard input ([`Heartbeat::beat`],
//! after every loop iteration, at most every [`Heartbeat::gap`]); the guard
//! ([`watch`]) waits on the daemon's pidfd and on the pipe at once, and
//! when no byte came for the watchdog period it kills the daemon (SIGKILL
//! reaches a stopped process too) and undoes the journal, exactly as after
//! a crash (a supervisor such as systemd then starts a fresh daemon).
//! Killing first means the journal is never replayed under a daemon that
//! could wake up and keep changing things.
//!
//! The pipe is non-blocking on the daemon's side: a stopped guard can never
//! stall the daemon (a full pipe drops the beat). End of file on the pipe
//! (the daemon closed it: it is exiting) turns the watchdog off; the pidfd
//! still reports the exit.

use crate::change::RestoreReport;
use crate::journal::restore_all;
use crate::process::{pidfd_open, ProcHandle, ProcessKey};
use crate::{last_os_error, Error, Result};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

/// The daemon's end of the heartbeat pipe.
#[derive(Debug)]
pub struct Heartbeat {
    fd: OwnedFd,
    gap: Duration,
    last: Option<Instant>,
}

impl Heartbeat {
    /// Beats on `fd` (the write end of the guard's stdin pipe), at most once
    /// per `gap`: a 1 ms loop need not write 1000 bytes a second for a
    /// watchdog of seconds. Makes `fd` non-blocking.
    pub fn new(fd: OwnedFd, gap: Duration) -> Result<Heartbeat> {
        set_nonblocking(&fd)?;
        Ok(Heartbeat {
            fd,
            gap,
            last: None,
        })
    }

    /// The gap for a watchdog of `watchdog`: a tenth of it (so a few lost
    /// beats never trip it), between 1 ms and 100 ms.
    pub fn gap_for(watchdog: Duration) -> Duration {
        (watchdog / 10).clamp(Duration::from_millis(1), Duration::from_millis(100))
    }

    /// The least time between two beats.
    pub fn gap(&self) -> Duration {
        self.gap
    }

    /// Called after every loop iteration: writes one byte if `gap` has
    /// passed since the last. A full pipe (the guard is not reading) or a
    /// closed one (the guard died) is ignored: the daemon must never stall
    /// on its own watchdog.
    pub fn beat(&mut self) {
        let now = Instant::now();
        if self.last.is_some_and(|t| now.duration_since(t) < self.gap) {
            return;
        }
        self.last = Some(now);
        // SAFETY: one byte from a live stack buffer to an fd we own.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), b".".as_ptr().cast(), 1) };
    }
}

fn set_nonblocking(fd: &OwnedFd) -> Result<()> {
    let raw = fd.as_raw_fd();
    // SAFETY: fcntl on an fd we own, integer arguments.
    let flags = unsafe { libc::fcntl(raw, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(raw, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(Error::Sys {
            op: "fcntl(O_NONBLOCK)",
            id: std::process::id() as i32,
            source: last_os_error(),
        });
    }
    Ok(())
}

/// How the watched daemon ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited (or became a zombie).
    Exited,
    /// It made no progress for the watchdog period and was killed.
    Stalled {
        /// How long it had been silent when it was killed.
        silent: Duration,
    },
}

/// What [`watch`] saw and undid.
#[derive(Debug)]
pub struct Watched {
    /// How the daemon ended.
    pub ended: Ended,
    /// The journal replay.
    pub report: RestoreReport,
}

/// The pure part of the watchdog: given when the last beat came (or when
/// watching began) and whether beats still flow, how long to wait before
/// the next check, or `None` when the daemon is overdue.
pub fn wait_left(
    last_beat: Instant,
    now: Instant,
    watchdog: Duration,
    beats_open: bool,
) -> Option<Duration> {
    if !beats_open {
        return Some(Duration::MAX);
    }
    let due = last_beat + watchdog;
    (now < due).then(|| due - now)
}

/// The guard with a watchdog: waits until the daemon `daemon_pid` exits or
/// sends no byte on `beats` for `watchdog`; in the second case kills it
/// (SIGKILL, then waits up to a second for it to go). Then replays the
/// journal at `journal_path`.
pub fn watch(
    daemon_pid: i32,
    journal_path: &Path,
    beats: &OwnedFd,
    watchdog: Duration,
) -> Result<Watched> {
    let ended = wait_exit_or_stall(daemon_pid, beats, watchdog)?;
    let report = restore_all(journal_path)?;
    Ok(Watched { ended, report })
}

/// The waiting half of [`watch`], killing a stalled daemon.
pub fn wait_exit_or_stall(daemon_pid: i32, beats: &OwnedFd, watchdog: Duration) -> Result<Ended> {
    if daemon_pid <= 0 {
        return Err(Error::Invalid(format!(
            "daemon pid must be > 0, got {daemon_pid}"
        )));
    }
    let key = match ProcessKey::of(daemon_pid) {
        Ok(k) => k,
        Err(e) if e.is_gone() => return Ok(Ended::Exited),
        Err(e) => return Err(e.into()),
    };
    let pidfd = match pidfd_open(daemon_pid) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => return Ok(Ended::Exited),
        Err(source) => {
            return Err(Error::Sys {
                op: "pidfd_open",
                id: daemon_pid,
                source,
            })
        }
    };
    let mut last_beat = Instant::now();
    let mut beats_open = true;
    loop {
        if !key.is_alive() {
            return Ok(Ended::Exited);
        }
        let now = Instant::now();
        let Some(left) = wait_left(last_beat, now, watchdog, beats_open) else {
            kill_and_wait(key)?;
            return Ok(Ended::Stalled {
                silent: now.duration_since(last_beat),
            });
        };
        // without a pidfd, look at the process every poll interval
        let left = match &pidfd {
            Some(_) => left,
            None => left.min(crate::guard::POLL_INTERVAL),
        };
        let mut fds = Vec::with_capacity(2);
        if let Some(fd) = &pidfd {
            fds.push(libc::pollfd {
                fd: fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        if beats_open {
            fds.push(libc::pollfd {
                fd: beats.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
        }
        let ms = i32::try_from(left.as_millis().max(1)).unwrap_or(i32::MAX);
        let ms = if left == Duration::MAX { -1 } else { ms };
        // SAFETY: `fds` is a live array of fds.len() pollfds.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
        if rc < 0 {
            let err = last_os_error();
            if err.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(Error::Sys {
                op: "poll(guard)",
                id: daemon_pid,
                source: err,
            });
        }
        if pidfd.is_some() && fds[0].revents != 0 {
            return Ok(Ended::Exited);
        }
        if beats_open && fds.last().is_some_and(|p| p.revents != 0) {
            let mut buf = [0u8; 256];
            // SAFETY: reads into a live buffer of its length.
            let n = unsafe { libc::read(beats.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n > 0 {
                last_beat = Instant::now();
            } else if n == 0 {
                // the daemon closed its end: it is exiting; the pidfd (or
                // the liveness check) reports when
                beats_open = false;
            }
        }
    }
}

/// SIGKILLs the stalled daemon and waits up to a second for it to be gone
/// (a zombie counts: the journal is then safe to replay).
fn kill_and_wait(key: ProcessKey) -> Result<()> {
    match ProcHandle::open(key) {
        Ok(h) => match h.signal(libc::SIGKILL) {
            Ok(()) => {}
            Err(Error::ProcessGone { .. }) => return Ok(()),
            Err(e) => return Err(e),
        },
        Err(Error::ProcessGone { .. }) => return Ok(()),
        Err(e) => return Err(e),
    }
    crate::guard::wait_for_exit_polling(key, Some(Duration::from_secs(1)));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_util::ChildGuard;

    #[test]
    fn the_deadline_is_the_last_beat_plus_the_watchdog() {
        let t0 = Instant::now();
        let w = Duration::from_millis(500);
        assert_eq!(wait_left(t0, t0, w, true), Some(w));
        assert_eq!(
            wait_left(t0, t0 + Duration::from_millis(200), w, true),
            Some(Duration::from_millis(300))
        );
        assert_eq!(wait_left(t0, t0 + w, w, true), None);
        assert_eq!(wait_left(t0, t0 + 2 * w, w, true), None);
        // the daemon closed its end: only its exit is awaited
        assert_eq!(wait_left(t0, t0 + 2 * w, w, false), Some(Duration::MAX));
        assert_eq!(
            Heartbeat::gap_for(Duration::from_secs(2)),
            Duration::from_millis(100)
        );
        assert_eq!(
            Heartbeat::gap_for(Duration::from_millis(100)),
            Duration::from_millis(10)
        );
    }

    fn pipe() -> (OwnedFd, OwnedFd) {
        use std::os::fd::FromRawFd;
        let mut fds = [0i32; 2];
        // SAFETY: a live array of two ints.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: both fds were just created and are owned by nobody else.
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
    }

    #[test]
    fn beats_keep_a_daemon_alive_and_silence_gets_it_killed() {
        let mut daemon = ChildGuard::spawn("sleep", &["30"]);
        let (rx, tx) = pipe();
        let mut hb = Heartbeat::new(tx, Duration::from_millis(5)).unwrap();
        let pid = daemon.pid();
        let watcher =
            std::thread::spawn(move || wait_exit_or_stall(pid, &rx, Duration::from_millis(500)));
        // beating for over 2 watchdog periods: not killed
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(1200) {
            hb.beat();
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(!watcher.is_finished(), "killed although it beat");
        // silent (the pipe stays open, as in a stopped daemon): killed
        let ended = watcher.join().unwrap().unwrap();
        assert!(matches!(ended, Ended::Stalled { .. }), "{ended:?}");
        let status = daemon.0.wait().unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL));
        drop(hb);
    }

    #[test]
    fn an_exit_is_seen_and_a_closed_pipe_turns_the_watchdog_off() {
        let mut daemon = ChildGuard::spawn("sleep", &["30"]);
        let (rx, tx) = pipe();
        drop(tx);
        let pid = daemon.pid();
        let watcher =
            std::thread::spawn(move || wait_exit_or_stall(pid, &rx, Duration::from_millis(100)));
        std::thread::sleep(Duration::from_millis(400));
        assert!(
            !watcher.is_finished(),
            "end of file must not count as a stall"
        );
        daemon.0.kill().unwrap();
        assert_eq!(watcher.join().unwrap().unwrap(), Ended::Exited);
    }

    #[test]
    fn a_full_pipe_never_blocks_the_daemon() {
        let (_rx, tx) = pipe();
        let mut hb = Heartbeat::new(tx, Duration::ZERO).unwrap();
        // far more than a pipe holds (64 KiB): would block without O_NONBLOCK
        for _ in 0..200_000 {
            hb.beat();
        }
    }
}

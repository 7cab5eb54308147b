//! Process identity and liveness, thread lists, and signalling one specific
//! process.
//!
//! Because pids are recycled, a process is identified by a [`ProcessKey`]
//! (pid + start time, field 22 of `/proc/PID/stat`, read by
//! `memtamer-linux`), and signals go through a [`ProcHandle`] (a pidfd where
//! the kernel has them) so that they can never reach a different process
//! that inherited the pid. Changes nothing that is journaled, so both the
//! actuators and the undo code use it.

use crate::{last_os_error, Error, Result};
pub use memtamer_linux::ProcessKey;
use memtamer_linux::{ProcRoot, Stat};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Returns `Ok(())` if the process `key` still exists (same pid and start
/// time, not a zombie), else [`Error::ProcessGone`]: checked before every
/// change so that a recycled pid is never changed.
pub fn check_alive(key: ProcessKey) -> Result<()> {
    if key.is_alive() {
        Ok(())
    } else {
        Err(Error::ProcessGone {
            pid: key.pid,
            start_time: key.start_time,
        })
    }
}

/// Reads and parses `/proc/PID/stat` (`memtamer_linux::stat`).
pub fn read_proc_stat(pid: i32) -> Result<Stat> {
    Ok(ProcRoot::default().stat(pid)?)
}

/// The start time of `pid` (field 22 of `/proc/PID/stat`), the second half of
/// a [`ProcessKey`].
pub fn process_start_time(pid: i32) -> Result<u64> {
    Ok(read_proc_stat(pid)?.start_time)
}

/// The thread ids of `pid`, ascending, from `/proc/PID/task`. Needed because
/// affinity is per thread and a process may create threads at any time.
pub fn list_threads(pid: i32) -> Result<Vec<i32>> {
    Ok(ProcRoot::default().tasks(pid)?)
}

/// Whether `tid` is (still) a thread of `pid`: guards against restoring the
/// affinity of a tid that has since been reused by another process.
pub fn thread_belongs_to(pid: i32, tid: i32) -> bool {
    ProcRoot::default().task_exists(pid, tid)
}

/// A handle for signalling one specific process. Backed by a pidfd where the
/// kernel supports it (5.3+), so a signal can never hit a process that reused
/// the pid; otherwise it re-checks the start time before each `kill`.
#[derive(Debug)]
pub struct ProcHandle {
    key: ProcessKey,
    pidfd: Option<OwnedFd>,
}

/// Opens a pidfd for `pid`, or `Ok(None)` if the kernel has no pidfd_open.
pub(crate) fn pidfd_open(pid: i32) -> io::Result<Option<OwnedFd>> {
    // SAFETY: plain syscall with integer arguments.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let err = last_os_error();
        return match err.raw_os_error() {
            Some(libc::ENOSYS) => Ok(None),
            _ => Err(err),
        };
    }
    // SAFETY: the kernel just returned this fd to us and nobody else owns it.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as i32) }))
}

impl ProcHandle {
    /// Opens a handle on the process `key`, failing with
    /// [`Error::ProcessGone`] if that process no longer exists.
    pub fn open(key: ProcessKey) -> Result<ProcHandle> {
        let pidfd = match pidfd_open(key.pid) {
            Ok(fd) => fd,
            Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {
                return Err(Error::ProcessGone {
                    pid: key.pid,
                    start_time: key.start_time,
                })
            }
            Err(source) => {
                return Err(Error::Sys {
                    op: "pidfd_open",
                    id: key.pid,
                    source,
                })
            }
        };
        // Checking after opening pins the identity: if the start time still
        // matches, the pidfd refers to exactly this process.
        check_alive(key)?;
        Ok(ProcHandle { key, pidfd })
    }

    /// The process this handle refers to.
    pub fn key(&self) -> ProcessKey {
        self.key
    }

    /// Sends `sig` to the process. Fails with [`Error::ProcessGone`] once it
    /// has exited (or, without pidfds, once its pid was reused).
    pub fn signal(&self, sig: i32) -> Result<()> {
        let rc = match &self.pidfd {
            Some(fd) => {
                // SAFETY: valid pidfd, null siginfo is allowed, flags 0.
                unsafe {
                    libc::syscall(
                        libc::SYS_pidfd_send_signal,
                        fd.as_raw_fd(),
                        sig,
                        std::ptr::null::<libc::siginfo_t>(),
                        0,
                    )
                }
            }
            None => {
                check_alive(self.key)?;
                // SAFETY: plain kill(2).
                unsafe { libc::kill(self.key.pid, sig) as libc::c_long }
            }
        };
        if rc != 0 {
            let source = last_os_error();
            if source.raw_os_error() == Some(libc::ESRCH) {
                return Err(Error::ProcessGone {
                    pid: self.key.pid,
                    start_time: self.key.start_time,
                });
            }
            return Err(Error::Sys {
                op: "pidfd_send_signal",
                id: self.key.pid,
                source,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_identity() {
        let pid = std::process::id() as i32;
        let key = ProcessKey::of(pid).unwrap();
        assert!(key.is_alive());
        let other = ProcessKey {
            pid,
            start_time: key.start_time + 1,
        };
        assert!(!other.is_alive());
        assert!(matches!(check_alive(other), Err(Error::ProcessGone { .. })));
        assert!(matches!(
            ProcHandle::open(other),
            Err(Error::ProcessGone { .. })
        ));
        let tids = list_threads(pid).unwrap();
        assert!(tids.contains(&pid));
        assert!(thread_belongs_to(pid, pid));
    }

    #[test]
    fn missing_process_errors_carry_the_path() {
        let err = read_proc_stat(i32::MAX).unwrap_err();
        assert!(err
            .to_string()
            .contains(&format!("/proc/{}/stat", i32::MAX)));
    }
}

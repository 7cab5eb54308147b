//! Per-thread CPU affinity and process identity from `/proc`.
//!
//! The daemon pins individual threads, so affinity is always read and set per
//! tid. Because pids are recycled, a process is identified by a
//! [`ProcessKey`] (pid + start time, field 22 of `/proc/PID/stat`, from
//! `memtamer-linux`, which also reads the thread lists), and
//! signals go through a [`ProcHandle`] (a pidfd where the kernel has them) so
//! that they can never reach a different process that inherited the pid.

use crate::journal::{Change, ChangeKey, Journal};
use crate::{last_os_error, Error, Result};
use memtamer_core::cpuset::MAX_CPUS;
use memtamer_core::CpuSet;
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

fn to_cpu_set_t(cpus: &CpuSet) -> libc::cpu_set_t {
    // SAFETY: cpu_set_t is a plain bitmask; all-zero is the valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for cpu in cpus.iter() {
        // SAFETY: cpu < MAX_CPUS (256) < CPU_SETSIZE (1024).
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    set
}

fn from_cpu_set_t(set: &libc::cpu_set_t) -> CpuSet {
    let mut cpus = CpuSet::empty();
    for cpu in 0..MAX_CPUS {
        // SAFETY: cpu < MAX_CPUS (256) < CPU_SETSIZE (1024).
        if unsafe { libc::CPU_ISSET(cpu, set) } {
            cpus.insert(cpu);
        }
    }
    cpus
}

/// The CPUs thread `tid` may run on (`sched_getaffinity`), read before
/// changing it so it can be journaled and restored.
pub fn thread_affinity(tid: i32) -> Result<CpuSet> {
    // SAFETY: zeroed cpu_set_t is valid; the kernel writes at most its size.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if rc != 0 {
        return Err(Error::Sys {
            op: "sched_getaffinity",
            id: tid,
            source: last_os_error(),
        });
    }
    Ok(from_cpu_set_t(&set))
}

/// Restricts thread `tid` to `cpus` (`sched_setaffinity`). An empty set is
/// rejected here rather than by the kernel, with a clearer message.
pub fn set_thread_affinity(tid: i32, cpus: &CpuSet) -> Result<()> {
    if cpus.is_empty() {
        return Err(Error::Invalid(format!("empty CPU set for thread {tid}")));
    }
    let set = to_cpu_set_t(cpus);
    // SAFETY: `set` is a valid, initialised cpu_set_t of the given size.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if rc != 0 {
        return Err(Error::Sys {
            op: "sched_setaffinity",
            id: tid,
            source: last_os_error(),
        });
    }
    Ok(())
}

/// The journaled way for the daemon to pin a thread: records the thread's
/// current affinity (only the first time; later pins keep that original)
/// BEFORE changing it, so the guard can restore it if the daemon dies.
/// Checks that `tid` belongs to the process `key` first.
pub fn pin_thread(journal: &Journal, key: ProcessKey, tid: i32, cpus: &CpuSet) -> Result<()> {
    if cpus.is_empty() {
        return Err(Error::Invalid(format!("empty CPU set for thread {tid}")));
    }
    check_alive(key)?;
    if !thread_belongs_to(key.pid, tid) {
        return Err(Error::Invalid(format!(
            "thread {tid} is not a thread of process {}",
            key.pid
        )));
    }
    let original = thread_affinity(tid)?;
    journal.record(Change::ThreadAffinity {
        pid: key.pid,
        tid,
        start_time: key.start_time,
        original,
    })?;
    set_thread_affinity(tid, cpus)
}

/// Undoes [`pin_thread`] now (the daemon no longer wants the pin): restores
/// the journaled original and forgets the record. Returns `false` if there
/// was nothing journaled or the thread/process is gone (record dropped).
pub fn unpin_thread(journal: &Journal, key: ProcessKey, tid: i32) -> Result<bool> {
    let wanted = ChangeKey::ThreadAffinity {
        pid: key.pid,
        tid,
        start_time: key.start_time,
    };
    let original = journal.pending().into_iter().find_map(|c| match c {
        Change::ThreadAffinity { original, .. } if c.key() == wanted => Some(original),
        _ => None,
    });
    let Some(original) = original else {
        return Ok(false);
    };
    let restored = if key.is_alive() && thread_belongs_to(key.pid, tid) {
        match set_thread_affinity(tid, &original) {
            Ok(()) => true,
            Err(Error::Sys { source, .. }) if source.raw_os_error() == Some(libc::ESRCH) => false,
            Err(e) => return Err(e),
        }
    } else {
        false
    };
    journal.forget(&wanted)?;
    Ok(restored)
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
    fn empty_affinity_is_rejected() {
        let tid = std::process::id() as i32;
        assert!(matches!(
            set_thread_affinity(tid, &CpuSet::empty()),
            Err(Error::Invalid(_))
        ));
    }

    #[test]
    fn cpu_set_conversion_round_trips() {
        let s = CpuSet::parse_list("0,3-5,255").unwrap();
        assert_eq!(from_cpu_set_t(&to_cpu_set_t(&s)), s);
    }

    #[test]
    fn missing_process_errors_carry_the_path() {
        let err = read_proc_stat(i32::MAX).unwrap_err();
        assert!(err
            .to_string()
            .contains(&format!("/proc/{}/stat", i32::MAX)));
    }
}

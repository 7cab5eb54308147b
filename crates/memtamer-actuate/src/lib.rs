//! Linux actuators for the memtamer daemon, and the machinery that undoes them.
//!
//! Every change goes through the [`journal`] first, so that the daemon on
//! exit, or the [`guard`] process after the daemon is killed, can put every
//! thread affinity, cgroup membership and value, frozen cgroup and stopped
//! process back as it was.
//!
//! Processes are identified by [`ProcessKey`] (pid plus the start time from
//! `/proc/PID/stat`, read by `memtamer-linux`), never by a bare pid, so that
//! a recycled pid is never mistaken for the process that was changed.
//!
//! Modules, each importing only those listed before it (no import circles):
//! * [`change`]: what is journaled ([`Change`], [`ChangeKey`]) and restore
//!   outcomes ([`RestoreReport`]), plain data;
//! * [`process`], [`sched`], [`cgroupfs`]: unjournaled primitives (process
//!   identity and signals, affinity system calls, cgroup file I/O);
//! * [`undo`]: puts one journaled change back, using only the primitives;
//! * [`journal`]: the write-ahead file, replay and restore (calls [`undo`]);
//! * [`affinity`], [`cgroup`], [`duty`], [`guard`]: the actuators and the
//!   guard, which journal before they change anything;
//! * [`inplace`]: knobs of a Kubernetes pod's own cgroup changed in place
//!   (the processes stay in the kubelet's cgroups).

#![warn(missing_docs)]

pub mod affinity;
pub mod cgroup;
pub mod cgroupfs;
pub mod change;
pub mod duty;
pub mod guard;
pub mod inplace;
pub mod journal;
pub mod process;
pub mod sched;
pub mod undo;
pub mod watchdog;

#[cfg(test)]
mod test_util;

pub use cgroup::{CgroupLayout, ManagedCgroup};
pub use change::{Change, ChangeKey, RestoreReport};
pub use duty::DutyCycler;
pub use journal::Journal;
pub use process::{ProcHandle, ProcessKey};

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong when changing or restoring the system; each
/// variant says which pid/tid/path was involved and carries the OS error, so
/// the daemon's logs can say exactly what failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file under /proc or /sys (or the journal) could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A value could not be written to a (cgroup) file.
    #[error("cannot write {value:?} to {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What was being written.
        value: String,
        /// The OS error.
        source: io::Error,
    },
    /// A filesystem operation other than read/write failed (mkdir, rmdir, open, fsync...).
    #[error("{op} {path}: {source}")]
    Fs {
        /// The operation, e.g. "mkdir".
        op: &'static str,
        /// The path it was applied to.
        path: PathBuf,
        /// The OS error.
        source: io::Error,
    },
    /// A system call on a process or thread failed.
    #[error("{op} on pid/tid {id}: {source}")]
    Sys {
        /// The system call, e.g. "sched_setaffinity".
        op: &'static str,
        /// The pid or tid.
        id: i32,
        /// The OS error.
        source: io::Error,
    },
    /// Kernel-provided text did not have the expected shape.
    #[error("cannot parse {what}: {reason}")]
    Parse {
        /// What was being parsed (usually a path).
        what: String,
        /// Why it was rejected.
        reason: String,
    },
    /// The process exited, or its pid now belongs to another process.
    #[error("process {pid} (start time {start_time}) is gone or its pid was reused")]
    ProcessGone {
        /// The pid.
        pid: i32,
        /// The start time it had when we identified it.
        start_time: u64,
    },
    /// A journal that another user could have written: replaying it as
    /// root would write wherever they chose (issue 22).
    #[error("journal {path} is not trusted: {why}")]
    Untrusted {
        /// The journal or its directory.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// A caller passed a value that makes no sense (empty CPU set, bad job name...).
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The cgroup controller needed for an operation is not mounted/enabled.
    #[error("cgroup controller `{controller}` is not available: {detail}")]
    ControllerMissing {
        /// The controller, e.g. "cpuset".
        controller: String,
        /// Where we looked.
        detail: String,
    },
    /// A cgroup file the kubelet manages (the static CPU manager's
    /// cpusets): memtamer leaves it alone rather than fight the kubelet.
    #[error("{path}: {why}")]
    KubeletOwned {
        /// The cgroup that shows the kubelet's ownership.
        path: PathBuf,
        /// What the kubelet set.
        why: String,
    },
    /// Another process holds the journal lock (a second daemon on the same journal).
    #[error("journal {path} is locked by another process")]
    JournalLocked {
        /// The journal file.
        path: PathBuf,
    },
}

/// A proc file could not be read: reported as before the parsers moved to
/// `memtamer-linux` — a vanished or unreadable file as [`Error::Read`], bad
/// content as [`Error::Parse`] naming the file.
impl From<memtamer_linux::Error> for Error {
    fn from(e: memtamer_linux::Error) -> Error {
        match e {
            memtamer_linux::Error::Gone { path, source, .. }
            | memtamer_linux::Error::Io { path, source } => Error::Read { path, source },
            memtamer_linux::Error::Parse { path, source } => Error::Parse {
                what: path.display().to_string(),
                reason: source.to_string(),
            },
        }
    }
}

/// Result alias used throughout the crate.
pub type Result<T> = std::result::Result<T, Error>;

/// The current thread's errno as an `io::Error`, for wrapping libc failures.
pub(crate) fn last_os_error() -> io::Error {
    io::Error::last_os_error()
}

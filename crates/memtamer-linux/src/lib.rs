//! The one place memtamer reads Linux process facts.
//!
//! Why it exists: the sensors (which mapping a PM sample hit, which mounts
//! are DAX), the actuators (process identity before a change, the cgroup a
//! process came from, cgroup mount discovery) and the daemon's process scan
//! all read the same procfs files. They used to parse them separately —
//! `/proc/PID/stat` twice, `/proc/PID/cgroup` twice — with different error
//! types and different edge cases. This crate parses each file once, with
//! exhaustive tests of the kernel's awkward cases, and depends on nothing
//! else of memtamer's but `memtamer-core`'s pure types, so that every
//! Linux-facing crate can use it.
//!
//! What it parses (all pure functions over text, see proc(5)):
//! * [`stat`]: `/proc/PID/stat` and `/proc/PID/task/TID/stat` (a comm with
//!   spaces and `)` in it, zombies, kernel threads via `PF_KTHREAD`), and
//!   `schedstat`;
//! * [`status`]: `Key:\tvalue` lines of `/proc/PID/status`;
//! * [`cgroup`]: `/proc/PID/cgroup`, v1 (`ID:ctrl,ctrl:/path`) and v2
//!   (`0::/path`) lines;
//! * [`maps`]: `/proc/PID/maps` (anonymous, `[heap]`, deleted files, paths
//!   with spaces);
//! * [`mountinfo`]: `/proc/PID/mountinfo` (optional fields, `\040` escapes);
//! * [`identity`]: [`ProcessKey`], a process identity (pid + start time)
//!   that survives pid reuse;
//! * [`perf`]: perf_event sampling (event specs, the ring-buffer
//!   [`perf::Sampler`], record decoding), here so that `memtamer-sense`
//!   (PM accounting, Ribbon's PEBS stores) and `memtamer-tier` (Unimem's
//!   PEBS access source) share one `perf_event_open` wrapper without the
//!   runtime library pulling in `memtamer-sense`'s disassembler;
//! * [`perf_event`]: the `perf_event_open` system call and counting
//!   groups read with one system call (shared by the sensors and the
//!   OMPT tool's per-task counters);
//! * [`shmfile`]: the OS side of a file shared through `mmap` in
//!   `/dev/shm` (no-follow open, owner check, `flock` guard, the mapping),
//!   used by the PATS gate's segment and Ribbon's co-running registry;
//! * [`topology`]: the CPU/cache/NUMA tree from `/sys/devices/system`
//!   (here rather than in `memtamer-sense` so that `memtamer-ribbon`, which
//!   `memtamer-sense` depends on, can read it too).
//!
//! The readers ([`ProcRoot`]) are thin: each takes the proc root as a path
//! (tests build fake trees in a temporary directory), reads one file, and
//! returns a typed [`Error`] naming the file — and for line-oriented files
//! the line — that was wrong. A process that exits while being read is
//! [`Error::Gone`], which scans skip.

#![warn(missing_docs)]

pub mod cgroup;
pub mod identity;
pub mod maps;
pub mod mountinfo;
pub mod perf;
pub mod perf_event;
pub mod reader;
pub mod shmfile;
pub mod stat;
pub mod status;
pub mod topology;

pub use cgroup::CgroupEntry;
pub use identity::ProcessKey;
pub use maps::{MapsError, Region};
pub use mountinfo::MountLine;
pub use reader::{read_text, ProcRoot, DEFAULT_PROC_ROOT};
pub use stat::{Stat, TaskSched, PF_KTHREAD};

use std::io;
use std::path::PathBuf;

/// Why the text of a proc file could not be understood. Kept apart from I/O
/// errors so that the pure parsers can be tested without a filesystem.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// `stat` lacks the `(comm)` part.
    #[error("no '(comm)' in stat line")]
    StatNoComm,
    /// `stat` has fewer fields than needed.
    #[error("stat has {found} fields after comm, need at least {needed}")]
    StatTooShort {
        /// Fields found after the comm.
        found: usize,
        /// Fields required after the comm.
        needed: usize,
    },
    /// A numeric or character field did not parse.
    #[error("field {field}: cannot parse {value:?}")]
    BadField {
        /// Name of the field.
        field: &'static str,
        /// Its text.
        value: String,
    },
    /// A `cgroup` line is not `ID:CONTROLLERS:PATH`.
    #[error("cgroup line {line_no}: expected ID:CONTROLLERS:PATH, got {line:?}")]
    CgroupLine {
        /// 1-based line number.
        line_no: usize,
        /// The line.
        line: String,
    },
    /// A required `status` field is absent.
    #[error("status has no {0} line")]
    MissingStatusField(&'static str),
    /// A `maps` line did not parse.
    #[error(transparent)]
    Maps(#[from] MapsError),
}

/// Why reading a proc file failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The process exited (or its pid was reused) while being read. Expected
    /// and harmless; scans skip it.
    #[error("process {pid} is gone ({}: {source})", path.display())]
    Gone {
        /// The pid that was being read.
        pid: i32,
        /// The file that had vanished.
        path: PathBuf,
        /// The OS error (`ENOENT` or `ESRCH`).
        #[source]
        source: io::Error,
    },
    /// Reading a proc file or directory failed for another reason.
    #[error("{}: {source}", path.display())]
    Io {
        /// File or directory being read.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
    /// A proc file had unexpected content.
    #[error("{}: {source}", path.display())]
    Parse {
        /// File being parsed.
        path: PathBuf,
        /// What was wrong (with the line, for line-oriented files).
        #[source]
        source: ParseError,
    },
}

impl Error {
    /// Whether this error only means the process is gone.
    pub fn is_gone(&self) -> bool {
        matches!(self, Error::Gone { .. })
    }
}

/// Parses one field of a proc file, naming it on failure.
pub(crate) fn field<T: std::str::FromStr>(name: &'static str, s: &str) -> Result<T, ParseError> {
    s.parse().map_err(|_| ParseError::BadField {
        field: name,
        value: s.to_string(),
    })
}

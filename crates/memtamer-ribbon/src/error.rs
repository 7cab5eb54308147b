//! Typed errors of the Ribbon runtime and allocator; each names the bad
//! value and the limit it broke so a C caller's error code maps to a
//! sentence (see `ribbon_strerror`).

use thiserror::Error;

/// Largest `numAppT` accepted by `ribbon_start` (queues are preallocated).
pub const MAX_APP_THREADS: usize = 4096;
/// Largest `eleFQueue` accepted (entries per queue, 16 B each).
pub const MAX_QUEUE_ENTRIES: usize = 1 << 20;
/// Largest flusher count accepted.
pub const MAX_FLUSHERS: usize = 1024;
/// Largest single flush request: anything bigger is a caller bug.
pub const MAX_FLUSH_LEN: usize = 1 << 40;
/// Largest `ribbon_alloc` request accepted (1 GiB).
pub const MAX_ALLOC: usize = 1 << 30;

/// Why a Ribbon call was refused. Refusals never lose a flush: a refused
/// `flush` is executed on the caller's thread before the error returns.
#[derive(Debug, Error)]
pub enum RibbonError {
    /// `numAppT` out of range (as given: a C caller may pass a negative).
    #[error("ribbon_start: numAppT = {0}; need 1..={MAX_APP_THREADS} application threads")]
    AppThreads(i128),
    /// `eleFQueue` out of range (as given).
    #[error("ribbon_start: eleFQueue = {0}; need 1..={MAX_QUEUE_ENTRIES} entries per queue")]
    QueueEntries(i128),
    /// Flusher count out of range.
    #[error("flushers = {0}; need 0..={MAX_FLUSHERS} (0 = application threads flush)")]
    Flushers(usize),
    /// The address range wraps around or is absurdly long.
    #[error(
        "flush range {addr:#x}+{len}: wraps the address space or exceeds {MAX_FLUSH_LEN} bytes"
    )]
    Range {
        /// Start of the range.
        addr: usize,
        /// Its length.
        len: usize,
    },
    /// The range starts in the first page: a NULL pointer (plus an offset).
    #[error("flush range {addr:#x}+{len}: starts in the NULL page; nothing was flushed")]
    NullRange {
        /// Start of the range.
        addr: usize,
        /// Its length.
        len: usize,
    },
    /// Ribbon is not running (never started, or stopped).
    #[error(
        "ribbon is not started (call ribbon_start first); the request ran on the calling thread"
    )]
    NotStarted,
    /// `ribbon_start` twice.
    #[error("ribbon is already started (call ribbon_stop first)")]
    AlreadyStarted,
    /// A thread could not be created.
    #[error("cannot start the {what} thread: {source}")]
    Spawn {
        /// Which thread.
        what: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// An environment variable has a value Ribbon cannot use.
    #[error("{var}={value:?}: {why}")]
    Env {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What was expected.
        why: &'static str,
    },
    /// `ribbon_alloc` with a zero or absurd size.
    #[error("ribbon_alloc: len = {0}; need 1..={max}", max = MAX_ALLOC)]
    AllocSize(usize),
    /// `ribbon_alloc` with an unknown type.
    #[error("ribbon_alloc: type = {0}; need RIBBON_KEY (0) or RIBBON_VALUE (1)")]
    AllocType(i32),
    /// The system allocator refused.
    #[error("ribbon_alloc: out of memory for {0} bytes")]
    OutOfMemory(usize),
    /// `ribbon_free` of a pointer that `ribbon_alloc` did not return or
    /// that was already freed.
    #[error(
        "ribbon_free: {0:#x} is not a live ribbon_alloc block (double free or foreign pointer)"
    )]
    BadFree(usize),
}

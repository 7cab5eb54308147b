//! Typed errors: opening a pool names the file and what is wrong with it;
//! a transaction error says which object and why.

use std::path::PathBuf;

/// Why a pool could not be created, opened or recovered.
#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    /// The OS refused an operation on the pool file.
    #[error("{path}: {op}: {source}")]
    Io {
        /// Pool file.
        path: PathBuf,
        /// What was attempted (open, ftruncate, mmap).
        op: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// Another open pool (this or another process) holds the file's lock.
    #[error("{path}: pool is already open (flock held by another user)")]
    InUse {
        /// Pool file.
        path: PathBuf,
    },
    /// The file is shorter than its header says (or than a header).
    #[error("{path}: truncated pool: file has {found} bytes, needs {needed}")]
    Truncated {
        /// Pool file.
        path: PathBuf,
        /// Bytes present.
        found: u64,
        /// Bytes required.
        needed: u64,
    },
    /// The first bytes are not an ArchTM pool header.
    #[error("{path}: not a memtamer-tx pool (bad magic {found:02x?})")]
    BadMagic {
        /// Pool file.
        path: PathBuf,
        /// The bytes found where the magic belongs.
        found: [u8; 8],
    },
    /// A pool written by another format version.
    #[error("{path}: pool format version {found}, this library reads version {supported}")]
    Version {
        /// Pool file.
        path: PathBuf,
        /// Version in the header.
        found: u32,
        /// Version this build understands.
        supported: u32,
    },
    /// The header checksum does not match its contents.
    #[error("{path}: pool header corrupted (checksum {stored:#018x}, computed {computed:#018x})")]
    HeaderChecksum {
        /// Pool file.
        path: PathBuf,
        /// Checksum stored in the header.
        stored: u64,
        /// Checksum of the header bytes.
        computed: u64,
    },
    /// A header field is out of range (checksum fine: written by a bad tool).
    #[error("{path}: pool header field {field} invalid: {why}")]
    BadHeader {
        /// Pool file.
        path: PathBuf,
        /// Field name.
        field: &'static str,
        /// What is wrong.
        why: String,
    },
    /// The object scan found a damaged object area.
    #[error("{path}: object area corrupted at data offset {offset}: {why}")]
    Corrupted {
        /// Pool file.
        path: PathBuf,
        /// Byte offset inside the data area.
        offset: u64,
        /// What is wrong.
        why: String,
    },
    /// Creation parameters that cannot make a usable pool.
    #[error("invalid pool options: {0}")]
    Options(String),
}

/// Why a transaction operation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxError {
    /// Another transaction holds the object's write lock: abort and retry
    /// (thesis Alg. 1 `ABORT_AND_RETRY`). `Pool::transaction` retries it.
    #[error("write conflict on object {id}")]
    Conflict {
        /// Object id.
        id: u32,
    },
    /// The id names no live object in this transaction's snapshot.
    #[error("object {id} does not exist")]
    NoSuchObject {
        /// Object id.
        id: u32,
    },
    /// An access past an object's end.
    #[error("object {id}: access {offset}+{len} past its size {size}")]
    OutOfBounds {
        /// Object id.
        id: u32,
        /// Byte offset.
        offset: usize,
        /// Access length.
        len: usize,
        /// Object payload size.
        size: usize,
    },
    /// No free space (or no free object id) left in the pool.
    #[error("pool full: cannot allocate {bytes} bytes")]
    PoolFull {
        /// Requested payload size.
        bytes: usize,
    },
    /// An object of 0 bytes, or larger than the format allows.
    #[error("object of {bytes} bytes: sizes must be in 1..={max}")]
    TooLarge {
        /// Requested size.
        bytes: usize,
        /// Largest payload the format encodes.
        max: usize,
    },
    /// `free` of the pool's root object, which lives as long as the pool
    /// (recovery and `mtx_root` find everything from it). Nothing was
    /// freed and the transaction is unchanged: it stays open, as after
    /// any other refused operation (the C ABI's -1 with the handle still
    /// the caller's to commit or abort). It was `Aborted` ("aborted by the
    /// application"), which told a C caller the transaction had ended.
    #[error("object {id} is the pool's root, which cannot be freed; nothing was freed")]
    RootNotFreeable {
        /// The root's id.
        id: u32,
    },
    /// A transaction was started inside another on the same thread.
    #[error(
        "nested transactions are not supported (the outer one would deadlock the post-commit wait)"
    )]
    Nested,
    /// The application asked to abort (the closure's own reason).
    #[error("aborted by the application: {0}")]
    Aborted(String),
    /// The transaction's own logic rolled it back as one of its normal
    /// outcomes (TPC-C new-order on an unused item number, clause 2.4.2.3):
    /// aborted like `Aborted`, but an expected result that benchmarks count
    /// rather than a failure that stops them.
    #[error("rolled back by the transaction: {0}")]
    RolledBack(String),
}

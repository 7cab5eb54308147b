//! The OS primitives of a file shared between processes through `mmap`.
//!
//! Why it exists: the PATS gate's segment (`memtamer-gate/src/shm.rs`) and
//! Ribbon's co-running registry (`memtamer-ribbon/src/coshm.rs`) are both a
//! small file in sticky, world-writable `/dev/shm` that every cooperating
//! process maps `MAP_SHARED` and touches only through atomics. Both need the
//! same defences, and they used to write them out twice:
//! * [`open_nofollow`]: a planted symlink is not followed (`O_NOFOLLOW`),
//!   and the descriptor does not leak into an exec'd child (`O_CLOEXEC`);
//! * [`trusted`]: only a regular file owned by this user or root is used,
//!   since another user could create the name first (issue 22);
//! * [`FlockGuard`]: creation and initialisation run under an exclusive
//!   `flock`, released on every return path;
//! * [`SharedMap`]: the mapping, unmapped when dropped;
//! * [`maps_file_at`]: whether a registrant still maps the file (an exec'd
//!   process keeps its pid but not its mappings);
//! * [`monotonic_ns`]: the one clock whose heartbeats compare across
//!   processes.
//!
//! The layouts, magics and checksums stay with their crates: only the OS
//! side is shared. Errors are plain `io::Error` or [`TrustError`]; the
//! callers wrap them in their own typed errors naming the file.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::{AsFd, AsRawFd, BorrowedFd};
use std::path::Path;

/// Opens `path` read-write without following a symlink (`O_NOFOLLOW`) and
/// close-on-exec. `create`: `Some(mode)` creates the file if missing, with
/// `mode` masked by the umask (callers that need the exact mode `fchmod`
/// it, see [`set_mode`]); `None` opens an existing file only. Never
/// truncates: another process may have it mapped.
pub fn open_nofollow(path: &Path, create: Option<u32>) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
    if let Some(mode) = create {
        options.create(true).truncate(false).mode(mode);
    }
    options.open(path)
}

/// Sets the mode of an open file exactly (`fchmod`), and its group first
/// when `group` is given (`fchown`): a created file's mode is otherwise
/// whatever the umask left.
pub fn set_mode(file: &File, mode: u32, group: Option<u32>) -> io::Result<()> {
    let fd = file.as_raw_fd();
    if let Some(gid) = group {
        // SAFETY: a plain syscall on a descriptor the caller owns; uid -1
        // leaves the owner unchanged.
        if unsafe { libc::fchown(fd, u32::MAX, gid) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    // SAFETY: as above.
    if unsafe { libc::fchmod(fd, mode as libc::mode_t) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Why a shared file is not used.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// Its metadata could not be read.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// Not a regular file, or owned by another user than this one or root:
    /// in sticky, world-writable `/dev/shm` another user could have created
    /// it first (or planted a FIFO or device there).
    #[error(
        "owned by uid {uid}, not by this user ({euid}) or root{}",
        if *regular { "" } else { ", or not a regular file" }
    )]
    Foreign {
        /// The file's owner.
        uid: u32,
        /// This process's effective uid.
        euid: u32,
        /// Whether it is a regular file.
        regular: bool,
    },
}

/// The metadata of an open shared file, or [`TrustError::Foreign`] unless it
/// is a regular file owned by this user or root (issue 22).
pub fn trusted(file: &File) -> Result<Metadata, TrustError> {
    let meta = file.metadata()?;
    // SAFETY: geteuid cannot fail.
    let euid = unsafe { libc::geteuid() };
    check_owner(meta.uid(), euid, meta.file_type().is_file())?;
    Ok(meta)
}

/// The rule of [`trusted`] on plain values (tested without a second user).
pub fn check_owner(uid: u32, euid: u32, regular: bool) -> Result<(), TrustError> {
    if regular && (uid == euid || uid == 0) {
        Ok(())
    } else {
        Err(TrustError::Foreign { uid, euid, regular })
    }
}

/// An exclusive `flock` on a file, released when dropped: creation and
/// initialisation of a shared file happen under it, so that two processes
/// that open the same name at once see one initialisation. (Closing the
/// file would release it too; the guard releases it even while the file
/// stays open.)
#[must_use = "the lock is released when the guard is dropped"]
pub struct FlockGuard<'f> {
    file: &'f File,
}

impl<'f> FlockGuard<'f> {
    /// Blocks until this open file description holds the exclusive lock.
    pub fn exclusive(file: &'f File) -> io::Result<FlockGuard<'f>> {
        // SAFETY: a plain syscall on a descriptor the caller owns.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(FlockGuard { file })
    }

    /// Takes the exclusive lock if nobody holds it (`LOCK_NB`); `Ok(None)`
    /// when another open file description holds it.
    pub fn try_exclusive(file: &'f File) -> io::Result<Option<FlockGuard<'f>>> {
        // SAFETY: as in `exclusive`.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            let e = io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::EWOULDBLOCK) => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(FlockGuard { file }))
    }
}

impl Drop for FlockGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: as in `exclusive`; an unlock failure leaves the lock to
        // the file's close, which always releases it.
        unsafe { libc::flock(self.file.as_raw_fd(), libc::LOCK_UN) };
    }
}

/// The first `len` bytes of a file mapped read-write and `MAP_SHARED`,
/// unmapped when dropped.
///
/// The mapping is memory that other processes write at any moment, so this
/// type hands out only a raw pointer: the owner (the gate's `Mapping`,
/// Ribbon's `Registry`) overlays its `#[repr(C)]` layout of atomics on it
/// and must access it through atomics alone (or, for a private scratch file
/// such as the gate's host calibration, each thread in its own disjoint
/// bytes). Under that rule the mapping may be moved to and shared between
/// threads, hence `Send` and `Sync`.
pub struct SharedMap {
    base: *mut u8,
    len: usize,
}

// SAFETY: the pointer is to a shared mapping that lives until drop; every
// access goes through the owner's atomics (see the type's documentation).
unsafe impl Send for SharedMap {}
// SAFETY: as above.
unsafe impl Sync for SharedMap {}

impl SharedMap {
    /// Maps the first `len` bytes of `file`, which must be open read-write
    /// and at least `len` bytes long (touching a page past its end would
    /// raise SIGBUS). The mapping outlives the descriptor.
    pub fn new(file: &File, len: usize) -> io::Result<SharedMap> {
        SharedMap::of_fd(file.as_fd(), len)
    }

    /// Maps the first `len` bytes of any mappable descriptor read-write and
    /// shared: a file as in [`SharedMap::new`], or a perf event's ring
    /// buffer (`perf::Sampler`), which is mapped the same way.
    pub fn of_fd(fd: BorrowedFd<'_>, len: usize) -> io::Result<SharedMap> {
        // SAFETY: a fresh shared mapping of an open descriptor; the result
        // is checked before use.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(SharedMap {
            base: base.cast(),
            len,
        })
    }

    /// Start of the mapping (page-aligned).
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped (never, for a successful [`SharedMap::new`]
    /// with `len > 0`; `mmap` refuses a length of 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for SharedMap {
    fn drop(&mut self) {
        // The raw system call, not libc's `munmap`: inside Ribbon's libpmem
        // shim that symbol is the shim's own wrapper, which drains Ribbon's
        // queues first, and a Ribbon fence that opens the gate for its
        // first flush (and fails on an incompatible file) would wait for
        // itself.
        // SAFETY: unmapping what `new` mapped; the owner hands out no
        // references that outlive it.
        unsafe { libc::syscall(libc::SYS_munmap, self.base.cast::<libc::c_void>(), self.len) };
    }
}

/// Whether process `pid` maps the file `path` at `base`: false once it has
/// exec'd (a new image keeps the pid, and the main thread its tid, but not
/// the mappings) or unmapped it. True when `/proc/PID/maps` cannot be read
/// (another user's process): not known to be gone.
pub fn maps_file_at(pid: u32, base: u64, path: &Path) -> bool {
    let Ok(maps) = std::fs::read_to_string(format!("/proc/{pid}/maps")) else {
        return true;
    };
    let prefix = format!("{base:x}-");
    let name = path.to_string_lossy();
    maps.lines()
        .any(|line| line.starts_with(&prefix) && line.trim_end().ends_with(name.as_ref()))
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process on the
/// machine, so heartbeats written into a shared file compare across
/// processes.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the struct we pass.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
#[path = "shmfile_tests.rs"]
mod tests;

//! The two backings of an object, as thin wrappers over the system calls.
//!
//! * DRAM: an anonymous private mapping (`mmap(MAP_ANONYMOUS)`, [`AnonMap`],
//!   which other crates use for scratch pages too).
//! * Slow tier, file mode: a `MAP_SHARED` mapping of an unlinked file in a
//!   DAX mount or `/dev/shm`, as memkind's PMEM kind backs its heap with a
//!   temporary file on a DAX file system.
//! * Slow tier, NUMA mode: an anonymous mapping bound to the CPU-less node
//!   with `mbind`; moving it is `move_pages` of its pages.
//!
//! [`move_into_place`] is the step that keeps user pointers valid: the new
//! copy, mapped at a temporary address, is moved with
//! `mremap(MREMAP_FIXED)` onto the object's virtual address, which replaces
//! the old mapping atomically under the kernel's mmap lock.

use crate::TierError;
use std::ffi::CString;
use std::path::Path;

/// A private anonymous read-write mapping (`mmap(MAP_PRIVATE |
/// MAP_ANONYMOUS)`), unmapped when dropped.
///
/// Why a type: every user of scratch pages outside the registry (the
/// Tahoe tool's copy-cost calibration, tests of the page-move API) needs
/// the same mmap, the same error with the call and what it was for, and
/// an `munmap` on every exit path, early returns and panics included.
/// One RAII owner gives all of them that instead of each crate writing
/// its own `mmap`/`munmap` pair. The registry keeps its objects as raw
/// addresses (they move between mappings with `mremap`, see
/// [`move_into_place`]), so it takes ownership out with
/// [`AnonMap::into_raw`] once a mapping is ready.
///
/// Not used by `memtamer-tx` (`Region::from_bytes` maps anonymous memory
/// too): that crate is built as a cdylib and staticlib, and a cdylib
/// exports the `#[no_mangle]` functions of every crate it links, so
/// depending on this crate would put a second copy of the `mt_tier_*` C
/// ABI, with its own registry, into `libmemtamer_tx.so`.
#[derive(Debug)]
pub struct AnonMap {
    ptr: *mut u8,
    len: usize,
}

impl AnonMap {
    /// Maps `len` bytes of anonymous memory at a kernel-chosen address;
    /// `name` says what it is for in the error (e.g. an object's name).
    /// `len` 0 is refused by the kernel (EINVAL), as by `mmap(2)`.
    pub fn new(len: usize, name: &str) -> Result<Self, TierError> {
        // SAFETY: a fresh anonymous mapping at a kernel-chosen address; no
        // existing memory is touched.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(TierError::last_os(format!(
                "mmap DRAM {len} B for '{name}'"
            )));
        }
        Ok(AnonMap {
            ptr: p as *mut u8,
            len,
        })
    }

    /// The first byte: valid for reads and writes of [`AnonMap::len`]
    /// bytes while `self` lives.
    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// The first byte as an address (for page-address APIs such as
    /// [`move_page_batch`]).
    pub fn addr(&self) -> usize {
        self.ptr as usize
    }

    /// Bytes mapped.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Never true for a mapping that exists (the kernel refuses length
    /// 0); here because a `len` without it is a lint.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Gives up ownership: the mapping stays and its address is returned;
    /// the caller must unmap it (the registry does, with [`unmap`] or by
    /// `mremap` onto an object's address).
    pub fn into_raw(self) -> usize {
        let p = self.addr();
        std::mem::forget(self);
        p
    }
}

impl Drop for AnonMap {
    fn drop(&mut self) {
        // SAFETY: the mapping this value owns, unmapped once (into_raw
        // skips this).
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.len) };
    }
}

/// Maps `len` bytes of anonymous DRAM, read-write; the registry owns the
/// address from here.
pub(crate) fn map_dram(len: usize, name: &str) -> Result<usize, TierError> {
    AnonMap::new(len, name).map(AnonMap::into_raw)
}

/// Maps `len` bytes backed by a fresh unlinked file in `dir`, `MAP_SHARED`.
/// The file lives as long as the mapping; nothing is left behind on exit.
pub(crate) fn map_file(dir: &Path, len: usize, name: &str) -> Result<usize, TierError> {
    let what = |call: &str| format!("{call} slow-tier file in {} for '{name}'", dir.display());
    let cdir = CString::new(dir.as_os_str().as_encoded_bytes()).map_err(|_| TierError::Os {
        what: what("path"),
        source: std::io::Error::other("NUL in path"),
    })?;
    // SAFETY: open with O_TMPFILE creates an unnamed file; fd checked below.
    let fd = unsafe {
        libc::open(
            cdir.as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600,
        )
    };
    if fd < 0 {
        return Err(TierError::last_os(what("open(O_TMPFILE)")));
    }
    // SAFETY: fd is ours; closed on every path.
    unsafe {
        if libc::ftruncate(fd, len as libc::off_t) != 0 {
            let e = TierError::last_os(what("ftruncate"));
            libc::close(fd);
            return Err(e);
        }
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd,
            0,
        );
        let e = (p == libc::MAP_FAILED).then(|| TierError::last_os(what("mmap")));
        libc::close(fd);
        match e {
            Some(e) => Err(e),
            None => Ok(p as usize),
        }
    }
}

/// Maps anonymous memory and binds it to NUMA `node` before first touch.
pub(crate) fn map_numa(len: usize, node: u32, name: &str) -> Result<usize, TierError> {
    let m = AnonMap::new(len, name)?;
    // a failed bind drops (unmaps) the mapping
    bind(m.addr(), len, node, name)?;
    Ok(m.into_raw())
}

const MPOL_BIND: libc::c_long = 2;
const MPOL_MF_MOVE: libc::c_long = 1 << 1;

/// Sets the range's policy to `node` (future faults) without moving pages.
fn bind(addr: usize, len: usize, node: u32, name: &str) -> Result<(), TierError> {
    let mut mask = [0u64; 16];
    let (w, b) = (node as usize / 64, node as usize % 64);
    if w >= mask.len() {
        return Err(TierError::Os {
            what: format!("mbind '{name}' to node {node}"),
            source: std::io::Error::other("node number above 1023"),
        });
    }
    mask[w] |= 1 << b;
    // SAFETY: mbind reads `mask` (1024 bits) and changes policy of our range.
    let r = unsafe {
        libc::syscall(
            libc::SYS_mbind,
            addr,
            len,
            MPOL_BIND,
            mask.as_ptr(),
            1024usize,
            0 as libc::c_long,
        )
    };
    if r != 0 {
        return Err(TierError::last_os(format!("mbind '{name}' to node {node}")));
    }
    Ok(())
}

/// Moves a NUMA-bound object to `node`: the policy first (so later faults
/// land there), then `move_pages` for the pages already resident. Returns the
/// number of pages the kernel reports on `node` afterwards.
pub(crate) fn move_to_node(
    addr: usize,
    len: usize,
    node: u32,
    page: usize,
    name: &str,
) -> Result<usize, TierError> {
    bind(addr, len, node, name)?;
    let n = len / page;
    let pages: Vec<*mut libc::c_void> = (0..n)
        .map(|i| (addr + i * page) as *mut libc::c_void)
        .collect();
    let status = move_pages(&pages, node).map_err(|source| TierError::Os {
        what: format!("move_pages '{name}' ({n} pages) to node {node}"),
        source,
    })?;
    Ok(status.iter().filter(|&&s| s == node as libc::c_int).count())
}

/// One `move_pages(2)` call for this process moving every page of `pages`
/// to `node`; returns the kernel's per-page status (the node a page is on,
/// or a negative errno), or the call's own error.
fn move_pages(pages: &[*mut libc::c_void], node: u32) -> std::io::Result<Vec<libc::c_int>> {
    let n = pages.len();
    let nodes = vec![node as libc::c_int; n];
    let mut status = vec![0 as libc::c_int; n];
    // SAFETY: the three arrays have n entries; pid 0 is this process;
    // move_pages only changes physical placement, never contents.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_long,
            n as libc::c_ulong,
            pages.as_ptr(),
            nodes.as_ptr(),
            status.as_mut_ptr(),
            MPOL_MF_MOVE,
        )
    };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(status)
    }
}

/// Outcome of one batched page move.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageBatch {
    /// Pages asked for.
    pub requested: usize,
    /// Pages the kernel reports on the target node afterwards.
    pub on_node: usize,
    /// Pages that could not move (not yet touched, busy, not ours).
    pub failed: usize,
}

/// Moves arbitrary page-aligned pages (any mapping of this process, not
/// only registry objects) to NUMA `node` in ONE `move_pages` call, so the
/// kernel flushes the TLB once per batch (Tahoe's batched migration,
/// thesis §4.3.6). Unaligned addresses are rounded down to their page.
/// A per-page failure (e.g. -ENOENT for an untouched page) is counted,
/// not an error; the call itself failing is.
pub fn move_page_batch(pages: &[usize], node: u32) -> Result<PageBatch, TierError> {
    if pages.is_empty() {
        return Ok(PageBatch::default());
    }
    let page = crate::guard::page_size();
    let ptrs: Vec<*mut libc::c_void> = pages
        .iter()
        .map(|&a| (a & !(page - 1)) as *mut libc::c_void)
        .collect();
    let n = ptrs.len();
    let status = move_pages(&ptrs, node).map_err(|source| TierError::Os {
        what: format!("move_pages batch of {n} pages to node {node}"),
        source,
    })?;
    let on_node = status.iter().filter(|&&s| s == node as libc::c_int).count();
    Ok(PageBatch {
        requested: n,
        on_node,
        failed: status.iter().filter(|&&s| s < 0).count(),
    })
}

/// The NUMA node of each page of `[addr, addr+len)` (`move_pages` with no
/// target nodes only queries; a negative entry is an errno, e.g. -ENOENT
/// for a page not yet touched). For checks and the `tier` status.
pub fn nodes_of_pages(addr: usize, len: usize) -> Result<Vec<i32>, TierError> {
    let page = crate::guard::page_size();
    let n = len.div_ceil(page);
    let pages: Vec<*mut libc::c_void> = (0..n)
        .map(|i| (addr + i * page) as *mut libc::c_void)
        .collect();
    let mut status = vec![0 as libc::c_int; n];
    // SAFETY: arrays of n entries; a NULL node list makes this a query.
    let r = unsafe {
        libc::syscall(
            libc::SYS_move_pages,
            0 as libc::c_long,
            n as libc::c_ulong,
            pages.as_ptr(),
            std::ptr::null::<libc::c_int>(),
            status.as_mut_ptr(),
            0 as libc::c_long,
        )
    };
    if r < 0 {
        return Err(TierError::last_os(format!("move_pages query of {n} pages")));
    }
    Ok(status)
}

/// Changes protection of `[addr, addr+len)`.
pub(crate) fn protect(
    addr: usize,
    len: usize,
    prot: libc::c_int,
    name: &str,
) -> Result<(), TierError> {
    // SAFETY: the range is a mapping the registry owns.
    if unsafe { libc::mprotect(addr as *mut libc::c_void, len, prot) } != 0 {
        return Err(TierError::last_os(format!("mprotect {len} B of '{name}'")));
    }
    Ok(())
}

/// Moves the mapping at `from` onto `to` (same length), replacing whatever
/// was mapped at `to`; pointers into `to` stay valid and see the new pages.
pub(crate) fn move_into_place(
    from: usize,
    to: usize,
    len: usize,
    name: &str,
) -> Result<(), TierError> {
    // The raw system call, not libc's variadic wrapper: MPI libraries (UCX's
    // memory hooks under MPICH) interpose `mremap` and may drop the fifth
    // argument, which silently turns MREMAP_FIXED into "move anywhere".
    // SAFETY: both ranges are mappings the registry owns; MREMAP_FIXED
    // atomically unmaps the old object mapping at `to`.
    let p = unsafe {
        libc::syscall(
            libc::SYS_mremap,
            from as *mut libc::c_void,
            len,
            len,
            (libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED) as libc::c_long,
            to as *mut libc::c_void,
        )
    };
    if p == -1 {
        return Err(TierError::last_os(format!(
            "mremap '{name}' onto its address {to:#x}"
        )));
    }
    if p as usize != to {
        unmap(p as usize, len);
        return Err(TierError::Os {
            what: format!("mremap '{name}' onto its address {to:#x}"),
            source: std::io::Error::other(format!("kernel placed it at {p:#x}")),
        });
    }
    Ok(())
}

/// Unmaps a range (errors ignored: only called on ranges we mapped).
pub(crate) fn unmap(addr: usize, len: usize) {
    let _ = unmap_checked(addr, len, "");
}

/// Unmaps a range and says if the kernel refused (a runtime's shutdown
/// reports it instead of hiding it). Unmapping the last mapping of a
/// slow-tier file frees the file: it was unlinked at creation.
pub(crate) fn unmap_checked(addr: usize, len: usize, name: &str) -> Result<(), TierError> {
    // SAFETY: the range is a mapping the registry owns and no longer hands out.
    if unsafe { libc::munmap(addr as *mut libc::c_void, len) } != 0 {
        return Err(TierError::last_os(format!("munmap {len} B of '{name}'")));
    }
    Ok(())
}

/// Total physical memory, to refuse budgets larger than the machine.
pub fn machine_bytes() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let (pages, size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && size > 0 {
        pages as usize * size as usize
    } else {
        usize::MAX
    }
}

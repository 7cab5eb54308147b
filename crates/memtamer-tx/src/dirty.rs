//! Dirty-page tracking of the DRAM lookup table by write protection
//! (thesis §5.4.6: "write-protect the table's pages; the first write to a
//! page faults, record it and unprotect it").
//!
//! Mechanism: userfaultfd write protection in asynchronous mode
//! (`UFFD_FEATURE_WP_ASYNC`, Linux 6.7) plus the `PAGEMAP_SCAN` ioctl on
//! `/proc/self/pagemap`. The table's range is registered and write-protected;
//! the first write to a page faults into the kernel, which records it and
//! lifts the protection itself (no signal, no handler thread, no message on
//! the descriptor). At a checkpoint, `PAGEMAP_SCAN` with
//! `PM_SCAN_WP_MATCHING` returns the written pages and protects them again
//! in the same walk.
//!
//! Why not the alternatives: `mprotect` + a SIGSEGV handler takes over a
//! process-wide signal that the host program (or its runtime: the JVM, Go,
//! sanitizers, Rust's stack-overflow guard) may own or install later, and
//! our faults would then reach a handler that does not know them; the
//! kernel's soft-dirty bits are cleared for the *whole process* by
//! `/proc/self/clear_refs`, write-protecting every page of the host and
//! disturbing any other soft-dirty user (CRIU). Userfaultfd WP-async is
//! per range and signal-free, so it cannot break the host's signal handling.
//!
//! Where it is unavailable (older kernel, seccomp, `vm.unprivileged_userfaultfd`
//! with a kernel that lacks `UFFD_USER_MODE_ONLY`), the tracker says so and
//! every checkpoint compares the whole table instead (correct, not
//! incremental); [`DirtyTracker::mode`] reports which.

use std::fs::File;
use std::os::unix::io::{AsRawFd, FromRawFd, OwnedFd};

const PAGE: usize = 4096;
const UFFD_API: u64 = 0xAA;
const UFFD_USER_MODE_ONLY: libc::c_int = 1;
const UFFD_FEATURE_WP_ASYNC: u64 = 1 << 15;
const UFFDIO_API: libc::c_ulong = 0xC018_AA3F;
const UFFDIO_REGISTER: libc::c_ulong = 0xC020_AA00;
const UFFDIO_REGISTER_MODE_WP: u64 = 1 << 1;
const UFFDIO_WRITEPROTECT: libc::c_ulong = 0xC018_AA06;
const UFFDIO_WRITEPROTECT_MODE_WP: u64 = 1;
const PAGEMAP_SCAN: libc::c_ulong = 0xC060_6610;
const PM_SCAN_WP_MATCHING: u64 = 1;
const PM_SCAN_CHECK_WPASYNC: u64 = 2;
const PAGE_IS_WRITTEN: u64 = 2;

#[repr(C)]
struct UffdioApi {
    api: u64,
    features: u64,
    ioctls: u64,
}
#[repr(C)]
struct UffdioRegister {
    start: u64,
    len: u64,
    mode: u64,
    ioctls: u64,
}
#[repr(C)]
struct UffdioWriteprotect {
    start: u64,
    len: u64,
    mode: u64,
}
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct PageRegion {
    start: u64,
    end: u64,
    categories: u64,
}
#[repr(C)]
#[derive(Default)]
struct PmScanArg {
    size: u64,
    flags: u64,
    start: u64,
    end: u64,
    walk_end: u64,
    vec: u64,
    vec_len: u64,
    max_pages: u64,
    category_inverted: u64,
    category_mask: u64,
    category_anyof_mask: u64,
    return_mask: u64,
}

/// How dirty pages are found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TrackMode {
    /// Userfaultfd async write protection + `PAGEMAP_SCAN`.
    WriteProtect,
    /// Not available (the reason): every checkpoint compares the whole table.
    FullCompare(String),
}

/// Write-protection tracker of one page-aligned anonymous range.
pub struct DirtyTracker {
    base: usize,
    len: usize,
    wp: Option<(OwnedFd, File)>,
    mode: TrackMode,
}

fn os(what: &str) -> String {
    format!("{what}: {}", std::io::Error::last_os_error())
}

impl DirtyTracker {
    /// Registers `base..base+len` (page aligned, anonymous private) and
    /// write-protects it; falls back to full comparison if the kernel says no.
    pub fn new(base: *const u8, len: usize) -> DirtyTracker {
        let base = base as usize;
        let len = len.div_ceil(PAGE) * PAGE;
        match Self::setup(base, len) {
            Ok(wp) => DirtyTracker {
                base,
                len,
                wp: Some(wp),
                mode: TrackMode::WriteProtect,
            },
            Err(why) => DirtyTracker {
                base,
                len,
                wp: None,
                mode: TrackMode::FullCompare(why),
            },
        }
    }

    /// A tracker that always reports "unknown" (tests, comparisons).
    pub fn disabled(why: &str) -> DirtyTracker {
        DirtyTracker {
            base: 0,
            len: 0,
            wp: None,
            mode: TrackMode::FullCompare(why.into()),
        }
    }

    fn setup(base: usize, len: usize) -> Result<(OwnedFd, File), String> {
        if !base.is_multiple_of(PAGE) || len == 0 {
            return Err("range not page aligned".into());
        }
        if std::env::var("MEMTAMER_TX_NO_WP")
            .map(|v| v == "1")
            .unwrap_or(false)
        {
            return Err("MEMTAMER_TX_NO_WP=1".into());
        }
        let flags = libc::O_CLOEXEC | libc::O_NONBLOCK;
        // User-mode-only first: allowed without privilege even when
        // vm.unprivileged_userfaultfd is 0; nothing in the kernel writes to
        // the table.
        // SAFETY: plain system calls; results checked.
        let mut fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags | UFFD_USER_MODE_ONLY) };
        if fd < 0 {
            // SAFETY: as above.
            fd = unsafe { libc::syscall(libc::SYS_userfaultfd, flags) };
        }
        if fd < 0 {
            return Err(os("userfaultfd"));
        }
        // SAFETY: a fresh descriptor we own from here on.
        let ufd = unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) };
        let mut api = UffdioApi {
            api: UFFD_API,
            features: UFFD_FEATURE_WP_ASYNC,
            ioctls: 0,
        };
        // SAFETY: ioctl with a properly sized, live argument.
        if unsafe { libc::ioctl(ufd.as_raw_fd(), UFFDIO_API, &mut api) } != 0 {
            return Err(os("UFFDIO_API (WP_ASYNC needs Linux 6.7)"));
        }
        // No madvise here: if the table is backed by transparent huge pages
        // (faster lookups), a written huge page is reported whole, 2 MB =
        // 131,072 ids; the checkpoint compares those lines and still writes
        // only the changed ones.
        let mut reg = UffdioRegister {
            start: base as u64,
            len: len as u64,
            mode: UFFDIO_REGISTER_MODE_WP,
            ioctls: 0,
        };
        // SAFETY: as above.
        if unsafe { libc::ioctl(ufd.as_raw_fd(), UFFDIO_REGISTER, &mut reg) } != 0 {
            return Err(os("UFFDIO_REGISTER"));
        }
        let mut wp = UffdioWriteprotect {
            start: base as u64,
            len: len as u64,
            mode: UFFDIO_WRITEPROTECT_MODE_WP,
        };
        // SAFETY: as above.
        if unsafe { libc::ioctl(ufd.as_raw_fd(), UFFDIO_WRITEPROTECT, &mut wp) } != 0 {
            return Err(os("UFFDIO_WRITEPROTECT"));
        }
        let pm =
            File::open("/proc/self/pagemap").map_err(|e| format!("/proc/self/pagemap: {e}"))?;
        Ok((ufd, pm))
    }

    /// How this tracker finds dirty pages.
    pub fn mode(&self) -> &TrackMode {
        &self.mode
    }

    /// Byte ranges (relative to the base, page aligned) written since the
    /// last call, protected again; None when unknown (treat all as dirty).
    /// The caller keeps writers out while it runs (the checkpoint holds
    /// every TxState slot).
    pub fn take(&self) -> Option<Vec<(usize, usize)>> {
        let (_, pm) = self.wp.as_ref()?;
        let mut out = Vec::new();
        let mut vec = vec![PageRegion::default(); 512];
        let end = (self.base + self.len) as u64;
        let mut start = self.base as u64;
        while start < end {
            let mut a = PmScanArg {
                size: std::mem::size_of::<PmScanArg>() as u64,
                flags: PM_SCAN_WP_MATCHING | PM_SCAN_CHECK_WPASYNC,
                start,
                end,
                vec: vec.as_mut_ptr() as u64,
                vec_len: vec.len() as u64,
                category_mask: PAGE_IS_WRITTEN,
                return_mask: PAGE_IS_WRITTEN,
                ..PmScanArg::default()
            };
            // SAFETY: the argument and the output vector are live and sized.
            let n = unsafe { libc::ioctl(pm.as_raw_fd(), PAGEMAP_SCAN, &mut a) };
            if n < 0 {
                return None;
            }
            for r in &vec[..n as usize] {
                out.push((
                    (r.start - self.base as u64) as usize,
                    (r.end - self.base as u64) as usize,
                ));
            }
            if a.walk_end <= start {
                break;
            }
            start = a.walk_end;
        }
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn written_pages_are_reported_once() {
        let len = 64 * PAGE;
        // SAFETY: a test mapping, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        } as *mut u8;
        let t = DirtyTracker::new(p, len);
        if let TrackMode::FullCompare(why) = t.mode() {
            eprintln!("write protection unavailable here ({why}): nothing to check");
            assert_eq!(t.take(), None);
            return;
        }
        assert_eq!(t.take(), Some(vec![]));
        // SAFETY: in bounds of the mapping.
        unsafe {
            *p.add(5 * PAGE + 3) = 1;
            *p.add(40 * PAGE) = 2;
            *p.add(41 * PAGE + 100) = 3;
            let _ = std::ptr::read_volatile(p.add(9 * PAGE));
        }
        assert_eq!(
            t.take(),
            Some(vec![(5 * PAGE, 6 * PAGE), (40 * PAGE, 42 * PAGE)])
        );
        assert_eq!(t.take(), Some(vec![]), "protected again by the scan");
        // SAFETY: as above.
        unsafe { *p.add(41 * PAGE) = 4 };
        assert_eq!(t.take(), Some(vec![(41 * PAGE, 42 * PAGE)]));
        drop(t);
        // SAFETY: our mapping.
        unsafe { libc::munmap(p as *mut _, len) };
    }
}

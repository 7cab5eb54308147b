//! The mapped pool and how stores become durable: cache-line flush + fence
//! through `memtamer-pmem` on PM (or when forced, as `PMEM_IS_PMEM_FORCE`
//! does for libpmem), `msync` for an ordinary file, and an optional
//! recording hook that the crash-state enumerator uses.

use std::fs::File;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::PoolError;
use crate::layout::LINE;

/// How the pool's stores are made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PersistMode {
    /// CPU cache-line flushes and a store fence (DAX-mapped PM, or forced).
    Flush,
    /// `msync` of the touched pages (a file in the page cache).
    Msync,
}

/// Observer of every flush and fence (test persistence domain).
///
/// The crash-state enumerator implements it: at each call it diffs the
/// mapping against its shadow copy to learn the stores since the last call,
/// then records the flush or fence (see `crash`).
pub trait PersistHook: Send + Sync {
    /// The pool was mapped at `base` for `len` bytes.
    fn attach(&self, base: *const u8, len: usize);
    /// `off..off+len` of the pool is being flushed.
    fn flush(&self, off: usize, len: usize);
    /// A store fence.
    fn fence(&self);
}

/// Per-transaction persistence counters, summed into the pool's totals.
#[derive(Clone, Debug, Default)]
pub struct PersistStats {
    /// Cache lines flushed.
    pub lines: u64,
    /// Fences issued.
    pub fences: u64,
    /// Bytes flushed (whole lines).
    pub bytes: u64,
    /// Bytes flushed in contiguous runs of >= 256 B within one fence epoch
    /// (what Optane's write-combining turns into full 256 B media writes).
    pub bytes_in_big_runs: u64,
    /// Flush calls (one per persisted range handed to the hardware).
    pub calls: u64,
    /// Bytes named by the flush calls (their `len` arguments).
    pub call_bytes: u64,
    /// Of those, bytes of calls with `len >= 256`: the thesis's writes of
    /// at least 256 B (§5.2.1, Fig. 5.1b sizes each persist API call by
    /// its start address and size).
    pub call_big_bytes: u64,
    pending: Vec<(usize, usize)>,
}

impl PersistStats {
    fn note_flush(&mut self, off: usize, len: usize) {
        self.calls += 1;
        self.call_bytes += len as u64;
        if len >= 256 {
            self.call_big_bytes += len as u64;
        }
        let first = off / LINE;
        let last = (off + len).div_ceil(LINE);
        self.lines += (last - first) as u64;
        self.bytes += ((last - first) * LINE) as u64;
        self.pending.push((first, last));
    }

    fn note_fence(&mut self) {
        self.fences += 1;
        if self.pending.is_empty() {
            return;
        }
        self.bytes_in_big_runs += memtamer_pmem::bytes_in_big_runs(&mut self.pending);
        self.pending.clear();
    }
}

/// Merges sorted `(offset, len)` ranges whose lines touch (the next one
/// starts in, or in the line right after, the previous one's last line)
/// into one range each. The merged ranges name exactly the lines the
/// inputs named: flushing them moves the same lines in fewer calls.
pub fn coalesce_lines(ranges: &mut Vec<(usize, usize)>) {
    let mut w = 0;
    for i in 0..ranges.len() {
        let (off, len) = ranges[i];
        if w > 0 {
            let (s, l) = ranges[w - 1];
            let end_line = (s + l).div_ceil(LINE);
            if off / LINE <= end_line {
                ranges[w - 1].1 = (s + l).max(off + len) - s;
                continue;
            }
        }
        ranges[w] = (off, len);
        w += 1;
    }
    ranges.truncate(w);
}

enum Backing {
    /// Keeps the file open as long as the mapping.
    File(#[allow(dead_code)] File),
    Anon,
}

/// A mapped pool image.
pub struct Region {
    base: *mut u8,
    len: usize,
    mode: PersistMode,
    backing: Backing,
    hook: Option<Arc<dyn PersistHook>>,
    path: PathBuf,
}

// SAFETY: the mapping lives as long as the Region; concurrent access to
// its bytes is coordinated by the transaction protocol above.
unsafe impl Send for Region {}
// SAFETY: as above.
unsafe impl Sync for Region {}

fn io<'a>(path: &'a Path, op: &'static str) -> impl FnOnce(std::io::Error) -> PoolError + 'a {
    move |source| PoolError::Io {
        path: path.to_path_buf(),
        op,
        source,
    }
}

/// Whether the environment forces cache-flush persistence, as libpmem's
/// `PMEM_IS_PMEM_FORCE=1` does (our own `MEMTAMER_PMEM_FORCE` too).
pub fn env_force_pmem() -> bool {
    ["MEMTAMER_PMEM_FORCE", "PMEM_IS_PMEM_FORCE"]
        .iter()
        .any(|k| std::env::var(k).map(|v| v.trim() == "1").unwrap_or(false))
}

impl Region {
    /// Maps `len` bytes of `file` shared. With `force_pmem` false, tries a
    /// `MAP_SYNC` mapping first (DAX: flushes suffice), else falls back to
    /// msync persistence.
    pub fn map_file(
        file: File,
        path: &Path,
        len: usize,
        force_pmem: bool,
    ) -> Result<Region, PoolError> {
        let fd = file.as_raw_fd();
        let prot = libc::PROT_READ | libc::PROT_WRITE;
        let mut mode = PersistMode::Msync;
        let mut base = libc::MAP_FAILED;
        if !force_pmem {
            // SAFETY: plain mmap of an fd we own; failure is checked.
            base = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    prot,
                    libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC,
                    fd,
                    0,
                )
            };
            if base != libc::MAP_FAILED {
                mode = PersistMode::Flush;
            }
        } else {
            mode = PersistMode::Flush;
        }
        if base == libc::MAP_FAILED {
            // SAFETY: as above.
            base = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_SHARED, fd, 0) };
        }
        if base == libc::MAP_FAILED {
            return Err(io(path, "mmap")(std::io::Error::last_os_error()));
        }
        Ok(Region {
            base: base as *mut u8,
            len,
            mode,
            backing: Backing::File(file),
            hook: None,
            path: path.into(),
        })
    }

    /// An anonymous image holding `bytes` (crash-state recovery, fuzzing).
    pub fn from_bytes(bytes: &[u8]) -> Result<Region, PoolError> {
        let len = bytes.len().max(1);
        // SAFETY: anonymous private mapping; failure is checked.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io(Path::new("<memory>"), "mmap")(
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: fresh mapping of at least bytes.len() bytes.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), base as *mut u8, bytes.len()) };
        Ok(Region {
            base: base as *mut u8,
            len: bytes.len(),
            mode: PersistMode::Flush,
            backing: Backing::Anon,
            hook: None,
            path: PathBuf::from("<memory>"),
        })
    }

    /// Installs the recording hook.
    pub fn set_hook(&mut self, hook: Arc<dyn PersistHook>) {
        hook.attach(self.base, self.len);
        self.hook = Some(hook);
    }

    /// Mapping length.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Never true for a valid pool (clippy asks for it beside `len`).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The persistence mode chosen at mapping.
    pub fn mode(&self) -> PersistMode {
        self.mode
    }
    /// Path (or `<memory>`) for error messages.
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Base pointer.
    pub fn base(&self) -> *mut u8 {
        self.base
    }

    /// Bytes `off..off+len` (caller guarantees bounds via the layout).
    pub fn bytes(&self, off: usize, len: usize) -> &[u8] {
        assert!(
            off + len <= self.len,
            "region read {off}+{len} past {}",
            self.len
        );
        // SAFETY: bounds checked above; the mapping lives as long as self.
        unsafe { std::slice::from_raw_parts(self.base.add(off), len) }
    }

    /// Raw pointer to `off` (bounds checked).
    pub fn ptr(&self, off: usize, len: usize) -> *mut u8 {
        assert!(
            off + len <= self.len,
            "region access {off}+{len} past {}",
            self.len
        );
        // SAFETY: in bounds.
        unsafe { self.base.add(off) }
    }

    /// Copies `data` to `off` (no flush).
    pub fn write(&self, off: usize, data: &[u8]) {
        let p = self.ptr(off, data.len());
        // SAFETY: in bounds; the protocol gives this thread exclusive use.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
    }

    /// Flushes `off..off+len` without a fence.
    pub fn flush(&self, off: usize, len: usize, st: &mut PersistStats) {
        if len == 0 {
            return;
        }
        st.note_flush(off, len);
        if let Some(h) = &self.hook {
            h.flush(off, len);
        }
        let p = self.ptr(off, len);
        match (&self.backing, self.mode) {
            (Backing::Anon, _) => {}
            (_, PersistMode::Flush) => {
                // SAFETY: in bounds of the live mapping.
                unsafe { memtamer_pmem::flush(p, len) }
            }
            (_, PersistMode::Msync) => {
                let page = 4096usize;
                let start = off / page * page;
                let end = (off + len).div_ceil(page) * page;
                // SAFETY: page-aligned sub-range of our mapping. An msync
                // failure cannot be reported from here; it is the libpmem
                // behaviour too (pmem_msync returns but callers ignore).
                unsafe {
                    libc::msync(
                        self.base.add(start) as *mut _,
                        end.min(self.len) - start,
                        libc::MS_SYNC,
                    )
                };
            }
        }
    }

    /// Store fence.
    pub fn fence(&self, st: &mut PersistStats) {
        st.note_fence();
        if let Some(h) = &self.hook {
            h.fence();
        }
        memtamer_pmem::fence();
    }

    /// Allocates every page of the mapping now (`MADV_POPULATE_WRITE`,
    /// else one store per page of the byte already there), so that first
    /// touches do not fault inside transactions. libpmemobj's
    /// `prefault.at_create` does the same; the bench turns both on so a
    /// fresh pool's page faults (copy-on-write walks through fresh lines)
    /// stay out of the measurement. Only on a pool no transaction uses yet.
    pub fn prefault(&self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: advice on our own live mapping; contents unchanged.
        let r = unsafe { libc::madvise(self.base as *mut _, self.len, libc::MADV_POPULATE_WRITE) };
        if r == 0 {
            return;
        }
        let mut off = 0;
        while off < self.len {
            // SAFETY: in bounds; rewrites the byte already there (no other
            // user of the pool yet), volatile so it is not elided.
            unsafe {
                let p = self.base.add(off);
                std::ptr::write_volatile(p, std::ptr::read_volatile(p));
            }
            off += 4096;
        }
    }

    /// Flush and fence.
    pub fn persist(&self, off: usize, len: usize, st: &mut PersistStats) {
        self.flush(off, len, st);
        self.fence(st);
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        // SAFETY: unmapping our own mapping once.
        unsafe { libc::munmap(self.base as *mut _, self.len.max(1)) };
        let _ = &self.backing;
    }
}

/// Opens (or creates) and sizes a pool file.
pub fn open_file(path: &Path, create_len: Option<u64>) -> Result<(File, u64), PoolError> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true).write(true);
    if create_len.is_some() {
        o.create_new(true);
    }
    let f = o.open(path).map_err(io(path, "open"))?;
    if let Some(len) = create_len {
        f.set_len(len).map_err(io(path, "ftruncate"))?;
    }
    // One opener at a time, as libpmemobj does: two processes recovering
    // or allocating in one pool would corrupt it.
    // SAFETY: flock on an fd we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return Err(PoolError::InUse {
            path: path.to_path_buf(),
        });
    }
    let len = f.metadata().map_err(io(path, "stat"))?.len();
    Ok((f, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalescing_keeps_the_same_lines_in_fewer_ranges() {
        let lines = |r: &[(usize, usize)]| {
            let mut v: Vec<usize> = r
                .iter()
                .flat_map(|&(o, l)| o / LINE..(o + l).div_ceil(LINE))
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        // two adjacent blocks (56 B and 24 B payloads), a gap, one block
        // spanning two lines, then one overlapping it
        let mut r = vec![(0, 56), (64, 24), (256, 100), (320, 8), (448, 64)];
        let before = lines(&r);
        coalesce_lines(&mut r);
        assert_eq!(r, vec![(0, 88), (256, 100), (448, 64)]);
        assert_eq!(lines(&r), before);
        let mut e: Vec<(usize, usize)> = vec![];
        coalesce_lines(&mut e);
        assert!(e.is_empty());
    }

    #[test]
    fn flush_calls_are_sized_by_their_length() {
        let mut s = PersistStats::default();
        s.note_flush(0, 300);
        s.note_flush(1024, 64);
        s.note_fence();
        assert_eq!((s.calls, s.call_bytes, s.call_big_bytes), (2, 364, 300));
    }

    #[test]
    fn big_runs_merge_adjacent_lines_within_a_fence_epoch() {
        let mut s = PersistStats::default();
        s.note_flush(0, 64);
        s.note_flush(64, 64);
        s.note_flush(128, 128);
        s.note_flush(4096, 64);
        s.note_fence();
        assert_eq!(s.lines, 5);
        assert_eq!(s.bytes, 320);
        assert_eq!(s.bytes_in_big_runs, 256);
        s.note_flush(0, 64);
        s.note_fence();
        assert_eq!(s.bytes_in_big_runs, 256);
        assert_eq!(s.fences, 2);
    }

    #[test]
    fn anon_region_keeps_bytes() {
        let r = Region::from_bytes(&[1, 2, 3]).unwrap();
        assert_eq!(r.bytes(0, 3), &[1, 2, 3]);
        r.write(1, &[9]);
        let mut st = PersistStats::default();
        r.persist(0, 3, &mut st);
        assert_eq!(r.bytes(0, 3), &[1, 9, 3]);
    }
}

//! Making stores durable: flush each cache line of a range, then fence.
//!
//! Picks the best flush the CPU has, as libpmem does: CLWB writes a dirty line
//! back and keeps it cached, CLFLUSHOPT is weakly ordered (a later `fence`
//! orders it), CLFLUSH is the strongly ordered baseline every x86-64 CPU has.
//! [`flush`] and [`fence`] are separate so that libraries can batch many
//! flushes behind one fence (ArchTM's commit, Ribbon's flusher threads);
//! [`persist`] is both.

/// Cache-line size assumed for flushing.
pub const CACHE_LINE: usize = 64;

/// Which flush instruction this CPU uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlushKind {
    /// CLWB: write back, keep the line cached (Skylake-SP and later).
    Clwb,
    /// CLFLUSHOPT: write back and invalidate, weakly ordered.
    Clflushopt,
    /// CLFLUSH: write back and invalidate, ordered with other stores.
    Clflush,
    /// No cache flush on this architecture: only a full memory fence.
    FenceOnly,
}

impl FlushKind {
    /// The instruction's mnemonic, for `memtamer stat` and logs.
    pub fn name(self) -> &'static str {
        match self {
            FlushKind::Clwb => "clwb",
            FlushKind::Clflushopt => "clflushopt",
            FlushKind::Clflush => "clflush",
            FlushKind::FenceOnly => "fence-only",
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod imp {
    use super::FlushKind;
    use std::sync::OnceLock;

    pub fn best_flush() -> FlushKind {
        static BEST: OnceLock<FlushKind> = OnceLock::new();
        *BEST.get_or_init(|| {
            // SAFETY: CPUID leaf 7 exists on every x86-64 CPU that runs Linux 4+.
            #[allow(unused_unsafe)]
            let leaf7 = unsafe { core::arch::x86_64::__cpuid_count(7, 0) };
            if leaf7.ebx & (1 << 24) != 0 {
                FlushKind::Clwb
            } else if leaf7.ebx & (1 << 23) != 0 {
                FlushKind::Clflushopt
            } else {
                FlushKind::Clflush
            }
        })
    }

    /// # Safety
    /// `addr..addr+len` must be mapped.
    pub unsafe fn flush(addr: *const u8, len: usize) {
        let start = addr as usize & !(super::CACHE_LINE - 1);
        let end = addr as usize + len;
        let kind = best_flush();
        let mut line = start;
        while line < end {
            let p = line as *const u8;
            // SAFETY: the caller guarantees the range is mapped.
            unsafe {
                match kind {
                    FlushKind::Clwb => {
                        std::arch::asm!("clwb [{0}]", in(reg) p, options(nostack, preserves_flags))
                    }
                    FlushKind::Clflushopt => {
                        std::arch::asm!("clflushopt [{0}]", in(reg) p, options(nostack, preserves_flags))
                    }
                    FlushKind::Clflush | FlushKind::FenceOnly => core::arch::x86_64::_mm_clflush(p),
                }
            }
            line += super::CACHE_LINE;
        }
    }

    pub fn fence() {
        // SAFETY: SFENCE has no preconditions.
        unsafe { core::arch::x86_64::_mm_sfence() };
    }
}

#[cfg(not(target_arch = "x86_64"))]
mod imp {
    use super::FlushKind;

    pub fn best_flush() -> FlushKind {
        FlushKind::FenceOnly
    }

    /// # Safety
    /// Always safe; there is no portable cache flush.
    pub unsafe fn flush(_addr: *const u8, _len: usize) {}

    pub fn fence() {
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

/// The flush instruction [`flush`] uses on this CPU (CPUID, read once).
pub fn best_flush() -> FlushKind {
    imp::best_flush()
}

/// Flushes every cache line of `addr..addr+len` toward the persistence
/// domain, without a fence: the flushes are ordered only by a later
/// [`fence`] (CLWB and CLFLUSHOPT are weakly ordered).
///
/// # Safety
/// The range must be mapped.
pub unsafe fn flush(addr: *const u8, len: usize) {
    // SAFETY: forwarded.
    unsafe { imp::flush(addr, len) }
}

/// Store fence: every earlier flush reaches the persistence domain before
/// any later store becomes visible.
pub fn fence() {
    imp::fence()
}

/// Flushes `addr..addr+len` to the persistence domain and fences.
///
/// # Safety
/// The range must be mapped.
pub unsafe fn persist(addr: *const u8, len: usize) {
    // SAFETY: forwarded.
    unsafe { imp::flush(addr, len) };
    imp::fence();
}

/// Number of cache lines `addr..addr+len` covers: what one [`flush`] of
/// that range issues (accounting, flush statistics).
pub fn lines_covered(addr: usize, len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let first = addr / CACHE_LINE;
    let last = (addr + len - 1) / CACHE_LINE;
    last - first + 1
}

/// Bytes flushed in contiguous runs of at least 256 B (one Optane XPLine):
/// `ranges` are the half-open line ranges `[first, last)` flushed within
/// one fence epoch, in any order; ranges that overlap or touch merge into
/// one run. The "persisted bytes in writes >= 256 B" statistic of issue 18,
/// counted the same way by ArchTM's recorder and the libpmem shim. Sorts
/// `ranges` in place.
pub fn bytes_in_big_runs(ranges: &mut [(usize, usize)]) -> u64 {
    ranges.sort_unstable();
    let mut big = 0u64;
    let mut run: Option<(usize, usize)> = None;
    let mut close = |r: (usize, usize)| {
        if (r.1 - r.0) * CACHE_LINE >= 256 {
            big += ((r.1 - r.0) * CACHE_LINE) as u64;
        }
    };
    for &(a, b) in ranges.iter() {
        run = match run {
            Some((s, e)) if a <= e => Some((s, e.max(b))),
            Some(r) => {
                close(r);
                Some((a, b))
            }
            None => Some((a, b)),
        };
    }
    if let Some(r) = run {
        close(r);
    }
    big
}

/// Persistence counts of an unmodified libpmemobj as the libpmem shim's
/// counting mode keeps them (`memtamer-pmem-shim`, `count.rs`) and as
/// `memtamer bench tx` reads them through `dlsym` (memtamer-tx
/// `shim_counts.rs`): one `#[repr(C)]` layout for writer and reader, so
/// the two cannot drift; `size` lets the reader check it at run time.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ShimCounts {
    /// `size_of::<ShimCounts>()`, written by the shim.
    pub size: u64,
    /// Outermost libpmemobj transactions ended.
    pub txs: u64,
    /// Flush calls (pmem_flush, pmem_persist, flushing copies).
    pub flush_calls: u64,
    /// 64 B lines the flush calls covered.
    pub flushed_lines: u64,
    /// Fences (pmem_drain, pmem_persist, draining copies).
    pub fences: u64,
    /// Sum of the flush calls' lengths.
    pub call_bytes: u64,
    /// Sum of the lengths of flush calls of >= 256 B.
    pub call_big_bytes: u64,
    /// Flushed bytes in contiguous runs >= 256 B within a fence epoch
    /// ([`bytes_in_big_runs`]).
    pub bytes_in_big_runs: u64,
}

#[cfg(test)]
mod tests {
    #[test]
    fn big_runs_merge_touching_line_ranges_only() {
        let mut r = vec![(4, 6), (0, 2), (2, 3), (10, 11)];
        // 0..3 (192 B), 4..6 (128 B), 10..11: nothing >= 256 B
        assert_eq!(super::bytes_in_big_runs(&mut r), 0);
        let mut r = vec![(0, 2), (2, 4), (1, 3)];
        assert_eq!(super::bytes_in_big_runs(&mut r), 256);
        let mut r = vec![(8, 13), (0, 4), (4, 5)];
        assert_eq!(super::bytes_in_big_runs(&mut r), 5 * 64 + 5 * 64);
    }

    use super::*;

    #[test]
    fn persisting_a_buffer_keeps_its_contents() {
        let buf: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        // SAFETY: the whole vector is mapped.
        unsafe { persist(buf.as_ptr().wrapping_add(3), 9_000) };
        assert!(buf.iter().enumerate().all(|(i, b)| *b == i as u8));
    }

    #[test]
    fn flush_then_fence_keeps_contents() {
        let buf = vec![7u8; 300];
        // SAFETY: the whole vector is mapped.
        unsafe { flush(buf.as_ptr(), buf.len()) };
        fence();
        assert!(buf.iter().all(|b| *b == 7));
    }

    #[test]
    fn lines_covered_counts_partial_lines() {
        assert_eq!(lines_covered(0, 0), 0);
        assert_eq!(lines_covered(0, 1), 1);
        assert_eq!(lines_covered(0, 64), 1);
        assert_eq!(lines_covered(0, 65), 2);
        assert_eq!(lines_covered(63, 2), 2);
        assert_eq!(lines_covered(100, 100), 3);
    }

    #[test]
    fn the_flush_kind_has_a_name() {
        assert!(!best_flush().name().is_empty());
    }
}

//! Counting mode (off until a program asks for it): per-thread counts of
//! the persistence calls an unmodified libpmemobj makes, so that
//! `memtamer bench tx` can print libpmemobj's flushes, fences and big-write
//! share per transaction beside ArchTM's, measured in the same run
//! (issue 18 item 4; docs/notebook/tx.md "Bench").
//!
//! The program (the bench, running under `LD_PRELOAD` of this shim) finds
//! [`memtamer_pmem_shim_count_start`] and [`memtamer_pmem_shim_counts`] with
//! `dlsym(RTLD_DEFAULT)`: their presence says the shim is loaded. The same
//! calls the trace mode records are counted (outermost calls only):
//! `pmem_flush` → a flush call; `pmem_drain` → a fence; `pmem_persist` and
//! the flushing copies → a flush call (+ a fence unless no-drain); the end of
//! an outermost `pmemobj_tx_end` → a transaction.
//!
//! Definitions, the same as memtamer-tx's `PersistStats` for ArchTM:
//! flushed lines are the 64 B lines a call's range covers; "bytes in big
//! runs" are those flushed in contiguous runs of >= 256 B within one fence
//! epoch of one thread; "call big bytes" are the lengths of calls with
//! `len >= 256` (the thesis's persist-call sizes, §5.2.1 Fig. 5.1b).
//!
//! Each thread adds to its own cache-line-sized slot (no shared line is
//! written on the hot path); a reader sums the slots.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

const LINE: usize = 64;
/// Threads that get a slot of their own; later ones share (still exact:
/// the adds are atomic).
const SLOTS: usize = 128;

/// The counts a program reads (one layout with the reader, in memtamer-pmem).
pub use memtamer_pmem::ShimCounts;

#[repr(align(64))]
#[derive(Default)]
struct Slot([AtomicU64; 7]);

static ON: AtomicBool = AtomicBool::new(false);
static NEXT: AtomicUsize = AtomicUsize::new(0);
static COUNTS: [Slot; SLOTS] = [const { Slot([const { AtomicU64::new(0) }; 7]) }; SLOTS];

thread_local! {
    static SLOT: usize = NEXT.fetch_add(1, Ordering::Relaxed) % SLOTS;
    /// Line ranges flushed in the current fence epoch.
    static EPOCH: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

/// Whether counting is on.
#[inline]
pub fn enabled() -> bool {
    ON.load(Ordering::Relaxed)
}

fn add(i: usize, v: u64) {
    let _ = SLOT.try_with(|s| COUNTS[*s].0[i].fetch_add(v, Ordering::Relaxed));
}

/// Bytes of the merged runs of `ranges` (line ranges, any order) that are
/// at least 256 B long ([`memtamer_pmem::bytes_in_big_runs`]); empties
/// `ranges` for the next epoch.
pub fn close_epoch(ranges: &mut Vec<(usize, usize)>) -> u64 {
    let big = memtamer_pmem::bytes_in_big_runs(ranges);
    ranges.clear();
    big
}

/// Counts a flush call of `addr..addr+len`.
pub fn flush(addr: usize, len: usize) {
    if len == 0 {
        return;
    }
    let (first, last) = (addr / LINE, (addr + len).div_ceil(LINE));
    add(1, 1);
    add(2, (last - first) as u64);
    add(4, len as u64);
    if len >= 256 {
        add(5, len as u64);
    }
    let _ = EPOCH.try_with(|e| e.borrow_mut().push((first, last)));
}

/// Counts a fence (closes the thread's fence epoch).
pub fn fence() {
    add(3, 1);
    let big = EPOCH
        .try_with(|e| close_epoch(&mut e.borrow_mut()))
        .unwrap_or(0);
    if big > 0 {
        add(6, big);
    }
}

/// Counts the end of an outermost transaction.
pub fn tx_end() {
    add(0, 1);
}

/// Turns counting on (idempotent). Called by a program that found the
/// shim loaded; the counts start at zero and only grow.
#[no_mangle]
pub extern "C" fn memtamer_pmem_shim_count_start() {
    ON.store(true, Ordering::Relaxed);
}

/// Writes the counts summed over all threads to `*out`; 0, or -1 if `out`
/// is null or counting is off.
///
/// # Safety
/// `out` must be null or point to a writable `ShimCounts`.
#[no_mangle]
pub unsafe extern "C" fn memtamer_pmem_shim_counts(out: *mut ShimCounts) -> std::ffi::c_int {
    if out.is_null() || !enabled() {
        return -1;
    }
    let mut v = [0u64; 7];
    for s in COUNTS.iter() {
        for (x, c) in v.iter_mut().zip(s.0.iter()) {
            *x += c.load(Ordering::Relaxed);
        }
    }
    let c = ShimCounts {
        size: std::mem::size_of::<ShimCounts>() as u64,
        txs: v[0],
        flush_calls: v[1],
        flushed_lines: v[2],
        fences: v[3],
        call_bytes: v[4],
        call_big_bytes: v[5],
        bytes_in_big_runs: v[6],
    };
    // SAFETY: the caller passes a writable ShimCounts.
    unsafe { out.write(c) };
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_calls_lines_fences_and_big_runs() {
        memtamer_pmem_shim_count_start();
        let mut before = ShimCounts::default();
        // SAFETY: a local ShimCounts.
        assert_eq!(unsafe { memtamer_pmem_shim_counts(&mut before) }, 0);
        // two adjacent 2-line flushes: one 256 B run; one 64 B flush apart
        flush(0x1000, 128);
        flush(0x1080, 128);
        flush(0x2000, 8);
        fence();
        // a 300 B call alone: 5 lines, a run of 320 B
        flush(0x3000, 300);
        fence();
        tx_end();
        let mut after = ShimCounts::default();
        // SAFETY: as above.
        assert_eq!(unsafe { memtamer_pmem_shim_counts(&mut after) }, 0);
        assert_eq!(after.size as usize, std::mem::size_of::<ShimCounts>());
        // other tests of this binary may count too: compare at least
        assert!(after.txs > before.txs);
        assert!(after.flush_calls >= before.flush_calls + 4);
        assert!(after.flushed_lines >= before.flushed_lines + 2 + 2 + 1 + 5);
        assert!(after.fences >= before.fences + 2);
        assert!(after.call_big_bytes >= before.call_big_bytes + 300);
        assert!(after.bytes_in_big_runs >= before.bytes_in_big_runs + 256 + 320);
        // SAFETY: null is allowed.
        assert_eq!(
            unsafe { memtamer_pmem_shim_counts(std::ptr::null_mut()) },
            -1
        );
    }

    #[test]
    fn epochs_merge_touching_line_ranges_only() {
        let mut r = vec![(4, 6), (0, 2), (2, 3), (10, 11)];
        // 0..3 (192 B), 4..6 (128 B), 10..11: nothing >= 256 B
        assert_eq!(close_epoch(&mut r), 0);
        assert!(r.is_empty());
        let mut r = vec![(0, 2), (2, 4), (1, 3)];
        assert_eq!(close_epoch(&mut r), 256);
    }
}

//! Why recovery examines every line: the GC no longer zeroes the headers
//! of freed copies (`Pool::gc`), so a stale block can overlap newer ones.
//! With the scan that skips the lines of each block it finds (the fault
//! `recover::SCAN_SKIPS_BLOCKS`, a process-wide switch, hence this test's
//! own binary) a stale header hides a live block and the enumeration goes
//! red; the same run with the every-line scan is green
//! (`crash_states.rs`).

mod common;

use common::*;
use std::sync::atomic::Ordering;

#[test]
fn a_scan_that_skips_block_lines_is_caught() {
    memtamer_tx::recover::SCAN_SKIPS_BLOCKS.store(true, Ordering::Relaxed);
    let r = run(Kind::Rows, 700, |_| {}, &eo());
    memtamer_tx::recover::SCAN_SKIPS_BLOCKS.store(false, Ordering::Relaxed);
    eprintln!("scan skipping block lines: {r:?}");
    assert!(
        r.violations > 0,
        "a skipping scan over stale headers must produce violations"
    );
}

//! Crash consistency, enumerated: record every store/flush/fence of a run,
//! build >= 10,000 distinct post-crash images per data structure, recover
//! each and check that the structure holds exactly a committed prefix of
//! the operations, with no leaked object. Then break a flush and a fence on
//! purpose and show the same enumeration goes red.

mod common;

use common::*;
use memtamer_tx::crash::{CrashReport, EnumOptions};
use std::sync::atomic::Ordering;

fn eo_chkp() -> EnumOptions {
    EnumOptions {
        compare_full_scan: true,
        ..eo()
    }
}

const MAINT: Maint = Maint {
    checkpoint_every: 25,
    defrag_every: 60,
};

/// At least 10,000 distinct crash states, none of them violating an invariant.
fn assert_survives_10k(what: &str, r: &CrashReport) {
    eprintln!("{what}: {r:?}");
    assert!(
        r.distinct >= 10_000,
        "only {} distinct crash states",
        r.distinct
    );
    assert_eq!(r.violations, 0, "{:?}", r.examples);
}

fn assert_checkpoint_run(what: &str, r: &CrashReport) {
    eprintln!("{what}: {r:?}");
    assert!(
        r.checkpoint_recoveries >= 10_000,
        "only {} crash states recovered through the checkpoint",
        r.checkpoint_recoveries
    );
    assert_eq!(r.violations, 0, "{:?}", r.examples);
}

#[test]
fn hash_table_checkpoint_recovery_matches_the_full_scan() {
    let r = run_with(Kind::Hash, 780, |_| {}, &eo_chkp(), MAINT);
    assert_checkpoint_run("hash table, checkpoints + defrag", &r);
}

#[test]
fn rb_tree_checkpoint_recovery_matches_the_full_scan() {
    let r = run_with(Kind::Rb, 450, |_| {}, &eo_chkp(), MAINT);
    assert_checkpoint_run("rb tree, checkpoints + defrag", &r);
}

#[test]
fn removing_the_log_persist_is_caught() {
    let r = run_with(
        Kind::Hash,
        150,
        |p| p.faults.skip_log_persist.store(true, Ordering::Relaxed),
        &eo_chkp(),
        MAINT,
    );
    eprintln!("no CHKP-diff persist: {r:?}");
    assert!(
        r.violations > 0,
        "an unpersisted fetch record must produce violations"
    );
}

#[test]
fn removing_the_checkpoint_fence_is_caught() {
    let r = run_with(
        Kind::Rb,
        150,
        |p| p.faults.skip_chkp_fence.store(true, Ordering::Relaxed),
        &eo_chkp(),
        MAINT,
    );
    eprintln!("no CHKP fence: {r:?}");
    assert!(
        r.violations > 0,
        "a missing checkpoint fence must produce violations"
    );
}

#[test]
fn hash_table_survives_10k_crash_states() {
    assert_survives_10k("hash table", &run(Kind::Hash, 1500, |_| {}, &eo()));
}

#[test]
fn rb_tree_survives_10k_crash_states() {
    assert_survives_10k("rb tree", &run(Kind::Rb, 900, |_| {}, &eo()));
}

#[test]
fn rows_of_mixed_widths_survive_10k_crash_states() {
    assert_survives_10k("rows of 1-7 lines", &run(Kind::Rows, 900, |_| {}, &eo()));
}

#[test]
fn rows_checkpoint_recovery_matches_the_full_scan() {
    let r = run_with(Kind::Rows, 600, |_| {}, &eo_chkp(), MAINT);
    assert_checkpoint_run("rows, checkpoints + defrag", &r);
}

#[test]
fn removing_the_copy_flush_is_caught() {
    let r = run(
        Kind::Hash,
        60,
        |p| p.faults.skip_copy_flush.store(true, Ordering::Relaxed),
        &eo(),
    );
    eprintln!("no copy flush: {r:?}");
    assert!(r.violations > 0, "a missing flush must produce violations");
}

#[test]
fn removing_the_commit_fence_is_caught() {
    let r = run(
        Kind::Rb,
        60,
        |p| p.faults.skip_commit_fence.store(true, Ordering::Relaxed),
        &eo(),
    );
    eprintln!("no commit fence: {r:?}");
    assert!(r.violations > 0, "a missing fence must produce violations");
}

/// The deletion-record rule (docs/tx.md, "Memory management", rule 2):
/// freed copies keep valid headers, so a deleted id's record must stay on
/// PM until the id is reused. With the fault the record's line is reused by
/// the slot's next block at once, while the id (and its older copies)
/// waits: the enumeration goes red (the deleted object comes back as a
/// live but unreachable id). The same run with the real code is green.
#[test]
fn recycling_deletion_records_early_is_caught() {
    let good = run(Kind::Hash, 200, |_| {}, &eo());
    eprintln!("deletion records kept: {good:?}");
    assert_eq!(good.violations, 0, "{:?}", good.examples);
    let r = run(
        Kind::Hash,
        200,
        |p| {
            p.faults
                .recycle_deletion_records
                .store(true, Ordering::Relaxed)
        },
        &eo(),
    );
    eprintln!("deletion records recycled at once: {r:?}");
    assert!(
        r.violations > 0,
        "a deletion record freed before its id is reused must produce violations"
    );
    assert!(
        r.examples.iter().any(|e| e.contains("live-only")),
        "the violations must include a resurrected id: {:?}",
        r.examples
    );
}

use super::*;
use crate::model::LinearAccess;
use crate::task::{Access, DataObject};

const P: u64 = 4096;

fn task(id: u64, code: u64, objs: &[(u64, u64)]) -> Task {
    Task {
        id,
        code,
        objects: objs
            .iter()
            .map(|&(a, l)| DataObject {
                addr: a * P,
                len: l * P,
                access: Access::InOut,
            })
            .collect(),
    }
}

fn planner(dram: usize, corun: usize) -> Planner {
    Planner::new(
        PlanConfig {
            page: P,
            corun,
            max_units: 64,
        },
        HybridModel {
            counters: None,
            fallback: LinearAccess { beta_ns: 10.0 },
        },
        dram,
    )
}

#[test]
fn first_instance_is_profiled_siblings_wait_then_place() {
    let mut pl = planner(100, 1);
    let a = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    assert_eq!(pl.decide(&a, &[], &[]), Decision::Profile);
    assert_eq!(pl.decide(&b, &[], std::slice::from_ref(&a)), Decision::Wait);
    // Representative: page 1 is hot.
    pl.completed(&a, 1000.0, Some(&[(0, 1.0), (1, 50.0), (2, 1.0), (3, 1.0)]));
    match pl.decide(&b, &[], &[]) {
        Decision::Place {
            batches,
            predicted_ns,
        } => {
            assert_eq!(batches.len(), 1);
            assert!(batches[0].to_dram);
            // Hottest first: page 11 (re-based page 1).
            assert_eq!(batches[0].pages[0], 11);
            assert_eq!(batches[0].pages.len(), 4);
            // All in DRAM: T_dram = 1000 - 10 * 53.
            assert!((predicted_ns - 470.0).abs() < 1e-9);
        }
        d => panic!("{d:?}"),
    }
    assert_eq!(pl.stats().promoted, 4);
    assert_eq!(pl.stats().profiled, 1);
}

#[test]
fn small_dram_gets_the_hottest_pages_only() {
    let mut pl = planner(2, 1);
    let a = task(1, 7, &[(0, 4)]);
    pl.decide(&a, &[], &[]);
    pl.completed(
        &a,
        1000.0,
        Some(&[(0, 5.0), (1, 50.0), (2, 1.0), (3, 30.0)]),
    );
    let b = task(2, 7, &[(20, 4)]);
    match pl.decide(&b, &[], &[]) {
        Decision::Place { batches, .. } => assert_eq!(batches[0].pages, vec![21, 23]),
        d => panic!("{d:?}"),
    }
}

#[test]
fn lookahead_splits_dram_among_ready_tasks_and_evicts_fifo() {
    let mut pl = planner(8, 2);
    let r = task(1, 7, &[(0, 4)]);
    pl.decide(&r, &[], &[]);
    pl.completed(&r, 1000.0, None);
    let b = task(2, 7, &[(10, 4)]);
    let c = task(3, 7, &[(20, 4)]);
    // Same type: even split, both batches planned now (look-ahead).
    match pl.decide(&b, std::slice::from_ref(&c), &[]) {
        Decision::Place { batches, .. } => {
            assert_eq!(batches.len(), 2);
            assert_eq!(batches[0].task, 2);
            assert_eq!(batches[1].task, 3);
            assert_eq!(batches[0].pages, vec![10, 11, 12, 13]);
        }
        d => panic!("{d:?}"),
    }
    pl.completed(&b, 500.0, None);
    pl.completed(&c, 500.0, None);
    assert_eq!(pl.dram().free(), 0);
    // A new task: the oldest footprint (b's pages) is evicted first.
    let d = task(4, 7, &[(30, 4)]);
    match pl.decide(&d, &[], &[]) {
        Decision::Place { batches, .. } => {
            assert!(!batches[0].to_dram);
            assert_eq!(batches[0].pages, vec![10, 11, 12, 13]);
            assert_eq!(batches[1].pages, vec![30, 31, 32, 33]);
        }
        d => panic!("{d:?}"),
    }
    assert_eq!(pl.stats().evicted, 4);
}

#[test]
fn dp_favours_the_task_with_the_larger_gain() {
    let mut pl = planner(4, 2);
    let x = task(1, 1, &[(0, 4)]);
    let y = task(2, 2, &[(100, 4)]);
    pl.decide(&x, &[], &[]);
    pl.decide(&y, &[], &[]);
    // x: long, memory heavy; y: short.
    pl.completed(
        &x,
        10_000.0,
        Some(&[(0, 100.0), (1, 100.0), (2, 100.0), (3, 100.0)]),
    );
    pl.completed(
        &y,
        100.0,
        Some(&[(100, 1.0), (101, 1.0), (102, 1.0), (103, 1.0)]),
    );
    let x2 = task(3, 1, &[(10, 4)]);
    let y2 = task(4, 2, &[(110, 4)]);
    match pl.decide(&y2, std::slice::from_ref(&x2), &[]) {
        Decision::Place { batches, .. } => {
            let for_x: usize = batches
                .iter()
                .filter(|b| b.task == 3)
                .map(|b| b.pages.len())
                .sum();
            assert_eq!(for_x, 4, "{batches:?}");
        }
        d => panic!("{d:?}"),
    }
}

#[test]
fn resident_pages_are_not_moved_again_and_guard_holds() {
    let mut pl = planner(4, 1);
    let r = task(1, 7, &[(0, 4)]);
    pl.decide(&r, &[], &[]);
    pl.completed(&r, 100.0, None);
    let b = task(2, 7, &[(10, 4)]);
    pl.decide(&b, &[], &[]);
    pl.completed(&b, 50.0, None);
    // Same data again: nothing to move.
    match pl.decide(&b, &[], &[]) {
        Decision::Place { batches, .. } => assert!(batches.is_empty()),
        d => panic!("{d:?}"),
    }
    // b still active: its pages are guarded, so c gets nothing.
    let c = task(3, 7, &[(20, 4)]);
    match pl.decide(&c, &[], std::slice::from_ref(&b)) {
        Decision::Place { batches, .. } => assert!(batches.is_empty()),
        d => panic!("{d:?}"),
    }
    pl.failed(&[10, 11]);
    assert_eq!(pl.dram().free(), 2);
}

#[test]
fn observe_only_profiles_and_never_moves() {
    let mut pl = planner(100, 1);
    let a = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    assert_eq!(pl.observe(&a), Decision::Profile);
    assert_eq!(pl.observe(&b), Decision::Wait);
    pl.completed(&a, 10.0, None);
    assert_eq!(
        pl.observe(&b),
        Decision::Place {
            batches: vec![],
            predicted_ns: 0.0
        }
    );
    assert_eq!(pl.dram().used(), 0);
    assert_eq!(pl.stats().decisions, 0);
}

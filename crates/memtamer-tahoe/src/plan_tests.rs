use super::*;
use crate::model::PartialForm;
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
            copy_ns_per_page: None,
            access_bytes: crate::benefit::LINE,
            out_fault_ns: None,
            copy_fixed_ns: 0.0,
            rep_skip: 0,
            refine: false,
            rw_slopes: None,
        },
        HybridModel::fallback_only(10.0),
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
    assert!(pl.is_representative(&a) && !pl.is_representative(&b));
    // Representative: page 1 is hot.
    pl.completed(&a, 1000.0, Some(&[(0, 1.0), (1, 50.0), (2, 1.0), (3, 1.0)]));
    assert!(!pl.is_representative(&a), "profile stored");
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

/// A planner with the cost-benefit check: `copy` ns per page.
fn costed(dram: usize, copy: f64) -> Planner {
    Planner::new(
        PlanConfig {
            page: P,
            corun: 2,
            max_units: 64,
            copy_ns_per_page: Some(copy),
            access_bytes: crate::benefit::LINE,
            out_fault_ns: None,
            copy_fixed_ns: 0.0,
            rep_skip: 0,
            refine: false,
            rw_slopes: None,
        },
        HybridModel::fallback_only(10.0),
        dram,
    )
}

#[test]
fn ready_entry_plans_known_types_only_and_guards_the_queue() {
    let mut pl = planner(8, 2);
    let r = task(1, 7, &[(0, 4)]);
    assert_eq!(pl.decide(&r, &[], &[]), Decision::Profile);
    pl.completed(&r, 1000.0, None);
    let b = task(2, 7, &[(10, 4)]);
    let u = task(3, 9, &[(20, 4)]); // unknown type: decided when it starts
    let (batches, planned) = pl.plan_ready(&[b.clone(), u.clone()], &[], &[]);
    assert_eq!(planned, vec![2]);
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].pages, vec![10, 11, 12, 13]);
    assert_eq!(pl.predict(&b), Some(1000.0 - 10.0 * 4.0));
    assert_eq!(pl.predict(&u), None);
    // b's pages sit in the FIFO (another task used them); b is queued
    // again: c may not take its pages, and takes them once b is gone
    let mut pl4 = planner(4, 2);
    pl4.decide(&r, &[], &[]);
    pl4.completed(&r, 1000.0, None);
    pl4.plan_ready(std::slice::from_ref(&b), &[], &[]);
    pl4.completed(&task(6, 7, &[(10, 4)]), 1.0, None);
    let c = task(4, 7, &[(30, 4)]);
    let (batches, _) = pl4.plan_ready(std::slice::from_ref(&c), std::slice::from_ref(&b), &[]);
    assert!(batches.is_empty(), "{batches:?}");
    let (batches, _) = pl4.plan_ready(std::slice::from_ref(&c), &[], &[]);
    assert_eq!(batches.len(), 2, "{batches:?}");
    assert!(!batches[0].to_dram);
    assert_eq!(batches[1].pages, vec![30, 31, 32, 33]);
}

#[test]
fn cost_benefit_skips_single_use_pages_and_takes_reused_ones() {
    // representative: two passes (128 accesses) over each of 4 pages,
    // 10 ns saved per access: 1280 ns per page and task; moving a page
    // reads its 64 lines from the slow tier: 640 ns of traffic
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 128.0)).collect();
    let r = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    let later = task(3, 7, &[(10, 4)]);
    for (copy, future, expect) in [
        (1000.0, vec![], 0),              // 1280 < 1000 + 640
        (1000.0, vec![later.clone()], 4), // reused once more: 2560 > 1640
        (500.0, vec![], 4),               // a cheap copy pays: 1280 > 1140
    ] {
        let mut pl = costed(8, copy);
        pl.decide(&r, &[], &[]);
        pl.completed(&r, 10_000.0, Some(&samples));
        let (batches, _) = pl.plan_ready(std::slice::from_ref(&b), &[], &future);
        let moved: usize = batches.iter().map(|x| x.pages.len()).sum();
        assert_eq!(moved, expect, "copy {copy}, {} later", future.len());
    }
}

#[test]
fn a_page_read_once_never_pays_its_slow_tier_read_even_when_hidden() {
    // one pass (64 accesses x 10 ns) per page, 4 us of slack per page
    // (the copy's time is hidden): the move's read of 64 lines from the
    // slow tier costs what the pass saves, so nothing moves (the check
    // without the copy's traffic moved all four)
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 64.0)).collect();
    let r = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    let mut pl = costed(8, 1.0);
    pl.decide(&r, &[], &[]);
    pl.completed(&r, 10_000.0, Some(&samples));
    let (batches, _) = pl.plan_ready_slack(std::slice::from_ref(&b), &[1e6], &[], &[]);
    assert!(batches.is_empty(), "{batches:?}");
}

#[test]
fn a_task_at_the_parallel_forms_knee_gains_nothing_from_more_pages() {
    // 4 pages x 256 accesses, T_slow 10 us, beta 1 ns: T_dram 8976 ns,
    // 1 ns saved per access, 64 ns of traffic per page moved. Half of b's
    // pages are in DRAM already: the parallel form predicts max(5000,
    // 8976) = T_dram, nothing left to gain, so nothing moves; Eq. 4.4
    // still has 512 ns to gain and moves the other two (256 > 64 + 1).
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 256.0)).collect();
    let r = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    for (form, expect) in [(PartialForm::ParallelTiers, 0), (PartialForm::Additive, 2)] {
        let mut pl = Planner::new(
            PlanConfig {
                page: P,
                corun: 2,
                max_units: 64,
                copy_ns_per_page: Some(1.0),
                access_bytes: crate::benefit::LINE,
                out_fault_ns: None,
                copy_fixed_ns: 0.0,
                rep_skip: 0,
                refine: false,
                rw_slopes: None,
            },
            HybridModel::fallback_only(1.0).with_form(form),
            8,
        );
        pl.decide(&r, &[], &[]);
        pl.completed(&r, 10_000.0, Some(&samples));
        pl.adopt(&[10, 11]);
        let (batches, _) = pl.plan_ready_slack(std::slice::from_ref(&b), &[1e6], &[], &[]);
        let moved: usize = batches.iter().map(|x| x.pages.len()).sum();
        assert_eq!(moved, expect, "{form:?}");
    }
}

#[test]
fn a_representative_partly_in_dram_is_profiled_at_its_all_slow_time() {
    let mut pl = planner(8, 1);
    pl.adopt(&[0, 1]);
    let r = task(1, 7, &[(0, 4)]);
    assert_eq!(pl.decide(&r, &[], &[]), Decision::Profile);
    // 10 accesses per page; pages 0 and 1 were in DRAM: 20 x beta (10 ns)
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 10.0)).collect();
    pl.completed(&r, 1000.0, Some(&samples));
    let p = pl.db().get(&r).unwrap();
    assert!((p.t_slow_ns - 1200.0).abs() < 1e-9);
}

#[test]
fn an_instance_partly_in_dram_is_passed_over_as_representative() {
    // Pages 0 and 1 (task 1's) are in DRAM from first touch.
    let in_dram = task(1, 7, &[(0, 4)]);
    let slow = task(2, 7, &[(10, 4)]);
    let also_dram = task(3, 7, &[(1, 4)]);
    // Without skipping (the default): the first instance profiles.
    let mut pl = planner(8, 1);
    pl.adopt(&[0, 1]);
    assert_eq!(pl.decide(&in_dram, &[], &[]), Decision::Profile);
    // With skipping: it waits, unpredicted; the next instance, all in the
    // slow tier, is the representative, and its time is T_c_NVM as
    // measured (no fallback inversion).
    let mut pl = planner(8, 1);
    pl.cfg.rep_skip = 4;
    pl.adopt(&[0, 1]);
    assert_eq!(pl.decide(&in_dram, &[], &[]), Decision::Wait);
    assert!(!pl.is_representative(&in_dram));
    assert_eq!(pl.decide(&slow, &[], &[]), Decision::Profile);
    let samples: Vec<(u64, f64)> = (10..14).map(|p| (p, 10.0)).collect();
    pl.completed(&slow, 1000.0, Some(&samples));
    assert_eq!(pl.db().get(&slow).unwrap().t_slow_ns, 1000.0);
    assert_eq!(pl.stats().rep_skipped, 1);
    assert_eq!(pl.stats().profiled, 1);
    // The bound: after `rep_skip` instances the next one profiles wherever
    // its pages are, so no type stays unknown.
    let mut pl = planner(8, 1);
    pl.cfg.rep_skip = 1;
    pl.adopt(&[0, 1]);
    assert_eq!(pl.decide(&in_dram, &[], &[]), Decision::Wait);
    assert_eq!(pl.decide(&also_dram, &[], &[]), Decision::Profile);
    // An empty DRAM never passes an instance over.
    let mut pl = planner(8, 1);
    pl.cfg.rep_skip = 4;
    assert_eq!(pl.decide(&in_dram, &[], &[]), Decision::Profile);
}

#[test]
fn completed_instances_refine_the_all_slow_time() {
    let r = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    let c = task(3, 7, &[(20, 4)]);
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 10.0)).collect();
    for refine in [false, true] {
        let mut pl = planner(100, 1);
        pl.cfg.refine = refine;
        assert_eq!(pl.decide(&r, &[], &[]), Decision::Profile);
        pl.completed(&r, 1000.0, Some(&samples));
        // A sibling, all pages slow (the planner moved nothing: DRAM is
        // empty and decide() is not called for it), took twice as long
        // under its co-runners' load.
        pl.completed(&b, 2000.0, None);
        let t = pl.predict(&c).unwrap();
        if refine {
            // T_c_NVM is the mean of 1000 and 2000.
            assert!((t - 1500.0).abs() < 1e-6, "{t}");
        } else {
            assert_eq!(t, 1000.0);
        }
    }
    // An instance with half its accesses in DRAM: its time is inverted
    // through the form (Eq. 4.4: 2000 ns + beta 10 x 20 DRAM accesses).
    let mut pl = planner(100, 1);
    pl.cfg.refine = true;
    pl.decide(&r, &[], &[]);
    pl.completed(&r, 2200.0, Some(&samples));
    pl.adopt(&[10, 11]);
    pl.completed(&b, 2000.0, None);
    assert!((pl.db().get(&c).unwrap().t_slow_ns - 2200.0).abs() < 1e-6);
}

#[test]
fn a_full_dram_charges_the_eviction_and_slack_hides_the_copy() {
    // 160 accesses x 10 ns = 1600 ns saved per page and task; copy 500 ns
    // on the helper; 640 ns of slow-tier traffic per page moved each way
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 160.0)).collect();
    let r = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    let moved = |pl: &mut Planner, slack: &[f64]| -> usize {
        pl.decide(&r, &[], &[]);
        pl.completed(&r, 10_000.0, Some(&samples));
        let (batches, _) = pl.plan_ready_slack(std::slice::from_ref(&b), slack, &[], &[]);
        batches
            .iter()
            .filter(|x| x.to_dram)
            .map(|x| x.pages.len())
            .sum()
    };
    // free DRAM, no slack: 1600 > 500 + 640, all four move
    assert_eq!(moved(&mut costed(8, 500.0), &[]), 4);
    // DRAM full (first-touch pages adopted): each promotion waits for the
    // eviction too and pays its write back (Eq. 3.4's extra_COST):
    // 1000 + 640 + 640 > 1600, nothing moves
    let mut full = costed(4, 500.0);
    full.adopt(&[100, 101, 102, 103]);
    assert_eq!(moved(&mut full, &[]), 0);
    // the same with 2.2 us of slack: the helper needs 1 us per page
    // (eviction + promotion); two promotions are hidden (cost: the
    // traffic, 1280 < 1600), the third ends 800 ns late (2080 > 1600)
    let mut full = costed(4, 500.0);
    full.adopt(&[100, 101, 102, 103]);
    assert_eq!(moved(&mut full, &[2200.0]), 2);
}

#[test]
fn a_measured_copy_cost_replaces_the_prior_only_when_checking() {
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 128.0)).collect();
    let r = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    let mut pl = costed(8, 500.0);
    pl.set_copy_ns(f64::NAN); // ignored
    pl.set_copy_ns(0.0); // ignored
    assert_eq!(pl.copy_ns(), Some(500.0));
    // this run's copies take 1 us a page: two passes (1280 ns) no longer
    // pay for the copy and its traffic (1000 + 640)
    pl.set_copy_ns(1000.0);
    pl.decide(&r, &[], &[]);
    pl.completed(&r, 10_000.0, Some(&samples));
    let (batches, _) = pl.plan_ready(std::slice::from_ref(&b), &[], &[]);
    assert!(batches.is_empty(), "{batches:?}");
    let mut off = planner(8, 1);
    off.set_copy_ns(1000.0);
    assert_eq!(off.copy_ns(), None);
}

/// A task reading `in_pages` pages at page 0 (+`base`) and writing the
/// next 4 pages with dependence kind `out` (length `out_len` bytes).
fn reader_writer(id: u64, base: u64, out: Access, out_len: u64) -> Task {
    Task {
        id,
        code: 9,
        objects: vec![
            DataObject {
                addr: base * P,
                len: 4 * P,
                access: Access::In,
            },
            DataObject {
                addr: (base + 4) * P,
                len: out_len,
                access: out,
            },
        ],
    }
}

/// Promotions of task `b` (a sibling of a representative of the same
/// shape) planned at ready-queue entry with no slack, as (copied,
/// placed without a copy) page lists. 100 accesses per page, 10 ns saved
/// per access: 1000 ns per page; a copy costs 500 ns of helper time plus
/// 640 ns of slow-tier traffic (1140 > 1000: no copy pays); a page
/// placed without a copy costs fresh_ns(250, 500) = 500 ns, no traffic.
fn promoted(out: Access, out_len: u64, fault: Option<f64>) -> (Vec<u64>, Vec<u64>) {
    let mut pl = Planner::new(
        PlanConfig {
            page: P,
            corun: 2,
            max_units: 64,
            copy_ns_per_page: Some(500.0),
            access_bytes: crate::benefit::LINE,
            out_fault_ns: fault,
            copy_fixed_ns: 0.0,
            rep_skip: 0,
            refine: false,
            rw_slopes: None,
        },
        HybridModel::fallback_only(10.0),
        64,
    );
    let r = reader_writer(1, 0, out, out_len);
    let samples: Vec<(u64, f64)> = (0..8).map(|p| (p, 100.0)).collect();
    assert_eq!(pl.decide(&r, &[], &[]), Decision::Profile);
    pl.completed(&r, 10_000.0, Some(&samples));
    let b = reader_writer(2, 20, out, out_len);
    let (batches, _) = pl.plan_ready_slack(std::slice::from_ref(&b), &[0.0], &[], &[]);
    let mut copied = Vec::new();
    let mut fresh = Vec::new();
    for x in batches.iter().filter(|x| x.to_dram) {
        if x.fresh {
            fresh.extend(&x.pages);
        } else {
            copied.extend(&x.pages);
        }
    }
    assert!(batches.iter().all(|x| x.to_dram || !x.fresh));
    (copied, fresh)
}

#[test]
fn an_out_only_block_written_whole_is_placed_without_a_copy() {
    // the four written pages pass the check without their read; the
    // four read pages still fail it
    assert_eq!(
        promoted(Access::OutWhole, 4 * P, Some(250.0)),
        (vec![], vec![24, 25, 26, 27])
    );
    // the same planner without the mechanism (the thesis's Tahoe): a
    // copy of any page costs more than it saves, nothing moves
    assert_eq!(promoted(Access::OutWhole, 4 * P, None), (vec![], vec![]));
}

#[test]
fn inout_plain_out_and_partly_written_blocks_still_copy() {
    // inout reads the old contents; a plain `out` gives no promise that
    // the task writes every byte: both keep the copy, which does not pay
    assert_eq!(
        promoted(Access::InOut, 4 * P, Some(250.0)),
        (vec![], vec![])
    );
    assert_eq!(promoted(Access::Out, 4 * P, Some(250.0)), (vec![], vec![]));
    // written whole but ending 100 bytes into its last page: that page
    // keeps live bytes beyond the object, so only three go without a copy
    assert_eq!(
        promoted(Access::OutWhole, 3 * P + 100, Some(250.0)),
        (vec![], vec![24, 25, 26])
    );
}

#[test]
fn a_page_a_co_runner_also_names_is_copied() {
    // b writes pages 24..28 whole, c (ready with it) reads page 24: not
    // discarded, whatever the dependences say
    let mut pl = Planner::new(
        PlanConfig {
            page: P,
            corun: 2,
            max_units: 64,
            copy_ns_per_page: None,
            access_bytes: crate::benefit::LINE,
            out_fault_ns: Some(250.0),
            copy_fixed_ns: 0.0,
            rep_skip: 0,
            refine: false,
            rw_slopes: None,
        },
        HybridModel::fallback_only(10.0),
        64,
    );
    let r = reader_writer(1, 0, Access::OutWhole, 4 * P);
    let samples: Vec<(u64, f64)> = (0..8).map(|p| (p, 100.0)).collect();
    pl.decide(&r, &[], &[]);
    pl.completed(&r, 10_000.0, Some(&samples));
    let b = reader_writer(2, 20, Access::OutWhole, 4 * P);
    let c = Task {
        id: 3,
        code: 11,
        objects: vec![DataObject {
            addr: 24 * P,
            len: 8,
            access: Access::In,
        }],
    };
    let (batches, _) = pl.plan_ready(std::slice::from_ref(&b), &[c], &[]);
    let fresh: Vec<u64> = batches
        .iter()
        .filter(|x| x.fresh)
        .flat_map(|x| x.pages.clone())
        .collect();
    assert_eq!(fresh, vec![25, 26, 27]);
    assert_eq!(pl.stats().promoted_fresh, 3);
}

#[test]
fn look_ahead_slack_at_task_start_hides_a_co_runners_copy_not_the_heads() {
    // 100 accesses x 10 ns = 1000 ns saved per page; a copy costs 500 ns
    // of helper time plus 640 ns of slow-tier traffic: 1140 > 1000
    // without slack, 640 < 1000 when the helper finishes in time
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 100.0)).collect();
    let r = task(1, 7, &[(0, 4)]);
    let head = task(2, 7, &[(10, 4)]);
    let next = task(3, 7, &[(20, 4)]);
    let run = |slack: &[f64]| -> (Vec<Batch>, PlanStats) {
        let mut pl = costed(64, 500.0);
        pl.decide(&r, &[], &[]);
        pl.completed(&r, 10_000.0, Some(&samples));
        let d = pl.decide_ahead_slack(&head, std::slice::from_ref(&next), slack, &[], &[]);
        let Decision::Place { batches, .. } = d else {
            panic!("{d:?}")
        };
        (batches, pl.stats())
    };
    // no slack: both co-runners' batches are refused
    let (b, st) = run(&[]);
    assert!(b.is_empty(), "{b:?}");
    assert_eq!((st.refused_pages, st.refused_batches), (8, 2));
    // 10 us before the look-ahead task starts: its four copies (after the
    // head's four refused ones, which took no helper time) are hidden;
    // the head, whose moves run on its own worker now, still gets none
    // (co-runners of one type split the DRAM wanted evenly, split_even:
    // the look-ahead task gets half of the four pages that passed)
    let (b, st) = run(&[10_000.0]);
    assert_eq!(b.len(), 1, "{b:?}");
    assert_eq!((b[0].task, b[0].pages.len()), (3, 2));
    assert_eq!((st.refused_pages, st.refused_batches), (4, 1));
}

#[test]
fn page_pass_profiles_price_a_copys_traffic_as_one_pass() {
    // uniform profiles (the OMPT tool's unit: one access per page pass);
    // a later task reads the same block again, so a page saves two passes
    // (20 ns) against a 1 ns copy plus its traffic
    let r = task(1, 7, &[(0, 4)]);
    let b = task(2, 7, &[(10, 4)]);
    let later = task(3, 7, &[(10, 4)]);
    let promoted = |access_bytes: u64| -> u64 {
        let mut pl = Planner::new(
            PlanConfig {
                page: P,
                corun: 1,
                copy_ns_per_page: Some(1.0),
                access_bytes,
                ..PlanConfig::default()
            },
            HybridModel::fallback_only(10.0),
            64,
        );
        pl.decide(&r, &[], &[]);
        pl.completed(&r, 1000.0, None);
        pl.decide_ahead(&b, &[], &[], std::slice::from_ref(&later));
        pl.stats().promoted
    };
    // one pass of traffic (10 ns) + 1 ns < 20 ns: all four move
    assert_eq!(promoted(P), 4);
    // priced as 64 line accesses of 10 ns each, nothing would ever pay
    assert_eq!(promoted(crate::benefit::LINE), 0);
}

/// Pages moved for `n` pages of one task read 1000 times each (10 us
/// saved per page, 640 ns of traffic per copy), DRAM for all, with the
/// check at `cost` (fixed part included) and `slack` ns of look-ahead.
fn moved_at(n: u64, cost: crate::copycost::CopyCost, slack: f64) -> usize {
    let samples: Vec<(u64, f64)> = (0..n).map(|p| (p, 1000.0)).collect();
    let r = task(1, 7, &[(0, n)]);
    let b = task(2, 7, &[(10 * n, n)]);
    let mut pl = costed(4 * n as usize, cost.per_page_ns);
    pl.set_copy_cost(cost);
    assert_eq!(pl.copy_cost(), Some(cost));
    pl.decide(&r, &[], &[]);
    pl.completed(&r, 1e8, Some(&samples));
    let (batches, _) = pl.plan_ready_slack(std::slice::from_ref(&b), &[slack], &[], &[]);
    batches.iter().map(|x| x.pages.len()).sum()
}

#[test]
fn a_large_batch_pays_a_fixed_call_cost_the_mean_puts_on_every_page() {
    use crate::copycost::CopySamples;
    // timed batches of 8 .. 256 pages on a host where a call costs 1 ms
    // whatever its size and a page 2 us (docs/notebook/tahoe.md "The check in the
    // tool"): the mean is 13.1 us per page
    let mut s = CopySamples::default();
    for (p, ns) in [(8, 1_016_000.0), (32, 1_064_000.0), (64, 1_128_000.0)] {
        s.add(p, ns);
    }
    s.add(256, 1_512_000.0);
    let (fit, mean) = (s.fit().unwrap(), s.mean().unwrap());
    assert!((fit.fixed_ns - 1e6).abs() < 1e-3 && (fit.per_page_ns - 2000.0).abs() < 1e-6);
    // 256 pages saving 10 us each: the mean refuses every page (10 us <
    // 13.1 us + 640 ns); one call of 256 pages costs 1 ms + 256 x 2.64 us
    // and saves 2.56 ms, so the affine check moves them all
    assert_eq!(moved_at(256, mean, 0.0), 0);
    assert_eq!(moved_at(256, fit, 0.0), 256);
}

#[test]
fn a_small_batch_does_not_pay_the_call_the_mean_spreads_thin() {
    use crate::copycost::CopySamples;
    // the same host timed on large batches: the mean is 4.1 us per page
    let mut s = CopySamples::default();
    for (p, ns) in [(128, 1_256_000.0), (256, 1_512_000.0), (512, 2_024_000.0)] {
        s.add(p, ns);
    }
    s.add(1024, 3_048_000.0);
    let (fit, mean) = (s.fit().unwrap(), s.mean().unwrap());
    assert!((fit.fixed_ns - 1e6).abs() < 1e-3, "{fit:?}");
    // 4 pages saving 40 us in all: the mean moves them (10 us > 4.7 us a
    // page), the affine check sees a 1 ms call and refuses the batch
    assert_eq!(moved_at(4, mean, 0.0), 4);
    assert_eq!(moved_at(4, fit, 0.0), 0);
    // with 2 ms of look-ahead the helper hides the call: the pages move
    assert_eq!(moved_at(4, fit, 2e6), 4);
    // no fixed part: the check prices pages as before
    let flat = crate::copycost::CopyCost::per_page(fit.per_page_ns);
    assert_eq!(moved_at(4, flat, 0.0), 4);
}

#[test]
fn freed_pages_leave_dram_and_are_never_evicted() {
    let mut pl = planner(4, 1);
    pl.adopt(&[1, 2, 3]);
    assert_eq!(pl.dram().used(), 3);
    pl.freed(&[2, 3, 9]);
    assert_eq!((pl.dram().used(), pl.dram().free()), (1, 3));
    assert!(!pl.dram().contains(2) && pl.dram().contains(1));
    // the eviction order holds only the live page
    let mut r = pl.dram().clone();
    assert_eq!(r.evict_for(4, &Default::default()), vec![1]);
}

#[test]
fn stores_priced_per_store_pay_where_one_slope_refuses_them() {
    // A RandomAccess-like type: 256 stores to each of 4 `inout` pages,
    // 10 ns per access under one slope, and a load-only sibling. The copy
    // (2 us) is exposed, DRAM has room. One slope: a page saves 2560 ns
    // against 2000 + 640 ns of copy and read traffic, refused. Per load /
    // store (5 / 20 ns, a store moving two slow-tier lines): a store page
    // saves 5120 ns against 2000 + 64 x 5 ns, moved; a load page 1280 ns,
    // refused. (docs/notebook/tahoe.md, "The check and later tasks' reuse")
    let obj = |page: u64, access| DataObject {
        addr: page * P,
        len: 4 * P,
        access,
    };
    let t = |id, page, access| Task {
        id,
        code: 7,
        objects: vec![obj(page, access)],
    };
    let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 256.0)).collect();
    let rw = crate::benefit::RwSlopes {
        read_ns: 5.0,
        write_ns: 20.0,
    };
    for (slopes, access, expect) in [
        (None, Access::InOut, 0),
        (Some(rw), Access::InOut, 4),
        (Some(rw), Access::In, 0),
    ] {
        let mut pl = costed(8, 2000.0);
        pl.set_rw_slopes(slopes);
        let r = t(1, 0, Access::InOut);
        pl.decide(&r, &[], &[]);
        pl.completed(&r, 100_000.0, Some(&samples));
        let b = t(2, 10, access);
        let (batches, _) = pl.plan_ready(std::slice::from_ref(&b), &[], &[]);
        let moved: usize = batches.iter().map(|x| x.pages.len()).sum();
        assert_eq!(moved, expect, "{slopes:?} {access:?}");
    }
}

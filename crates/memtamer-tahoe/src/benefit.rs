//! Migration cost-benefit check (issue 21 follow-up). The thesis's planner
//! promotes a task's hottest pages whenever DRAM can hold them (§4.3.3);
//! in programs where a page is read once per task, such a promotion costs a
//! slow-tier read plus a DRAM write to save one slow-tier pass, which does
//! not pay. Here a page is promoted only when the time the model predicts
//! it saves while resident exceeds the time its copy takes.
//!
//! * The saving per access of a task type is the hybrid model's gap
//!   between its all-slow and all-DRAM times over its accesses, the slope
//!   of Eq. 4.4: `(T_c_NVM - T_c_DRAM) / tot_mem_acc`.
//! * A page's saving sums, over the task being planned and the created,
//!   not yet started tasks after it (the task graph's reuse), each task's
//!   predicted accesses to the page (its type's re-based profile) times its
//!   type's saving per access. The later tasks count only while their
//!   footprints, added up in creation order, fit the DRAM: beyond that
//!   reuse distance the page is likely evicted before its reuse (the FIFO
//!   of §4.3.5 evicts by task execution order).
//! * The copy cost per page is a measured machine property (the caller
//!   passes it, [`crate::plan::PlanConfig::copy_ns_per_page`]).

use crate::fasthash::{PageMap, PageSet};
use crate::model::HybridModel;
use crate::profile::{ProfileDb, TypeProfile};
use crate::task::Task;

/// Predicted ns saved per access moved from the slow tier to DRAM for a
/// task of profile `p` (the slope of Eq. 4.4; 0 if the model predicts no
/// gain or the profile has no accesses).
pub fn saving_per_access(model: &HybridModel, p: &TypeProfile) -> f64 {
    if p.total_accesses <= 0.0 {
        return 0.0;
    }
    ((p.t_slow_ns - model.t_dram(p)) / p.total_accesses).max(0.0)
}

/// Predicted saving (ns) of each page if it sits in DRAM while the tasks of
/// `future` (creation order) run. Tasks of unknown type save nothing but
/// their footprints still count toward the reuse distance, which stops the
/// scan once more than `capacity` distinct pages were named.
pub fn future_savings(
    db: &ProfileDb,
    model: &HybridModel,
    future: &[Task],
    page: u64,
    capacity: usize,
) -> PageMap<f64> {
    let mut out: PageMap<f64> = PageMap::default();
    let mut seen = PageSet::default();
    for t in future {
        seen.extend(t.footprint(page));
        if seen.len() > capacity {
            break;
        }
        let Some(p) = db.get(t) else {
            continue;
        };
        let s = saving_per_access(model, p);
        if s <= 0.0 {
            continue;
        }
        for (pg, acc) in p.rebase(t, page).unwrap_or_default() {
            *out.entry(pg).or_insert(0.0) += acc * s;
        }
    }
    out
}

/// Whether a page with `own` predicted accesses by a task saving `per_acc`
/// ns each, and `later` ns of predicted saving by later tasks, is worth a
/// copy of `copy_ns` (None: no check, the thesis's behaviour).
pub fn worth_moving(own: f64, per_acc: f64, later: f64, copy_ns: Option<f64>) -> bool {
    match copy_ns {
        None => true,
        Some(c) => own * per_acc + later > c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LinearAccess;
    use crate::task::{Access, DataObject, TaskType};

    const P: u64 = 4096;

    fn task(id: u64, addr_page: u64, pages: u64) -> Task {
        Task {
            id,
            code: 7,
            objects: vec![DataObject {
                addr: addr_page * P,
                len: pages * P,
                access: Access::In,
            }],
        }
    }

    fn model() -> HybridModel {
        HybridModel {
            counters: None,
            fallback: LinearAccess { beta_ns: 10.0 },
        }
    }

    fn db() -> ProfileDb {
        let mut db = ProfileDb::new();
        let rep = task(1, 0, 4);
        // 64 accesses per page, 4 pages, 10 ns saved per access
        let samples: Vec<(u64, f64)> = (0..4).map(|p| (p, 64.0)).collect();
        let p = TypeProfile::from_samples(&rep, &samples, P, 10_000.0, None).unwrap();
        db.insert(
            TaskType {
                code: 7,
                arg_sizes: vec![4 * P],
            },
            p,
        );
        db
    }

    #[test]
    fn saving_per_access_is_the_slope_of_eq_4_4() {
        let db = db();
        let p = db.get(&task(2, 100, 4)).unwrap();
        // T_dram = 10000 - 10 * 256 = 7440; slope (10000 - 7440) / 256
        assert!((saving_per_access(&model(), p) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn later_uses_count_only_within_the_dram_reuse_distance() {
        let db = db();
        // three later readers of pages 100..104, then one of 200..204
        let fut = vec![task(3, 100, 4), task(4, 100, 4), task(5, 200, 4)];
        let big = future_savings(&db, &model(), &fut, P, 100);
        assert!((big[&100] - 2.0 * 640.0).abs() < 1e-9);
        assert!((big[&200] - 640.0).abs() < 1e-9);
        // 6 pages of DRAM: the third task's pages (8 distinct) are too far
        let small = future_savings(&db, &model(), &fut, P, 6);
        assert!((small[&100] - 2.0 * 640.0).abs() < 1e-9);
        assert!(!small.contains_key(&200));
    }

    #[test]
    fn single_use_pages_whose_copy_costs_more_stay() {
        // one pass (64 accesses x 10 ns) against a 1000 ns copy
        assert!(!worth_moving(64.0, 10.0, 0.0, Some(1000.0)));
        // reused by a later task: 1280 ns saved
        assert!(worth_moving(64.0, 10.0, 640.0, Some(1000.0)));
        // no check: the thesis's planner
        assert!(worth_moving(0.0, 0.0, 0.0, None));
    }
}

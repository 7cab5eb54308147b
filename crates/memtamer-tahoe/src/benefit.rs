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
//! * The cost a page is weighed against is the thesis's data-movement cost
//!   (§3.4.1, which Tahoe's "avoid less beneficial data movement", §4.1,
//!   rests on): Eq. 3.3, `COST = max(size / copy_bw - mem_comp_overlap,
//!   0)`, the part of the copy the helper cannot overlap with the tasks
//!   that run before the page's user starts (its look-ahead slack, net of
//!   the copies queued ahead of it on the one helper), plus Eq. 3.4's
//!   `extra_COST`, the copy to the slow tier of the page that must leave
//!   when DRAM is full. Eq. 3.4's weight `w = BFT - COST - extra_COST`
//!   must be positive for the page to move ([`HelperClock`]).

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
/// movement costing `cost_ns` (Eq. 3.4's weight `BFT - COST - extra_COST`
/// is positive). Without a copy cost the planner skips the check (the
/// thesis's §4.3.3 planner, [`crate::plan::PlanConfig::copy_ns_per_page`]).
pub fn worth_moving(own: f64, per_acc: f64, later: f64, cost_ns: f64) -> bool {
    own * per_acc + later > cost_ns
}

/// The one migration helper's timeline while one plan is made (Eq. 3.3's
/// overlap): copies run one after another, in the order planned, after
/// the copies already queued. A page for a task whose start lies `slack`
/// ns ahead is overlapped as far as the helper finishes it by then.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HelperClock {
    /// Helper time (ns) taken by the copies planned so far, from now.
    pub busy_ns: f64,
    /// DRAM pages still free (a promotion beyond them evicts a page).
    pub free_pages: usize,
}

impl HelperClock {
    /// Eq. 3.3 + Eq. 3.4 for one page: with `copy_ns` per page copy, a page
    /// for a task starting `slack_ns` from now costs its unoverlapped copy
    /// time plus, when DRAM is full, the eviction's copy. Returns the cost
    /// and whether the promotion evicts.
    pub fn cost(&self, copy_ns: f64, slack_ns: f64) -> (f64, bool) {
        let evicts = self.free_pages == 0;
        let extra = if evicts { copy_ns } else { 0.0 };
        // the helper does the eviction and the promotion, in that order
        let done = self.busy_ns + copy_ns + extra;
        let exposed = (done - slack_ns.max(0.0)).clamp(0.0, copy_ns);
        (exposed + extra, evicts)
    }

    /// The page was planned: the helper's queue and DRAM take it.
    pub fn take(&mut self, copy_ns: f64, evicts: bool) {
        self.busy_ns += copy_ns * if evicts { 2.0 } else { 1.0 };
        self.free_pages = self.free_pages.saturating_sub(1);
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
            form: Default::default(),
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
    fn overlapped_copies_cost_nothing_and_evictions_cost_a_copy() {
        let c = HelperClock {
            busy_ns: 0.0,
            free_pages: 1,
        };
        // the task starts 5 us ahead: the copy is hidden (Eq. 3.3)
        assert_eq!(c.cost(1000.0, 5000.0), (0.0, false));
        // no slack (the task starts now): the whole copy is exposed
        assert_eq!(c.cost(1000.0, 0.0), (1000.0, false));
        // 400 ns of slack hides 400 ns of the copy
        assert_eq!(c.cost(1000.0, 400.0), (600.0, false));
        // the helper is 4.5 us behind: only 500 ns of the slack is left
        let busy = HelperClock {
            busy_ns: 4500.0,
            free_pages: 1,
        };
        assert_eq!(busy.cost(1000.0, 5000.0), (500.0, false));
        // DRAM full: the eviction's copy is extra_COST (Eq. 3.4), and the
        // helper needs 2 us for the pair
        let mut full = HelperClock {
            busy_ns: 0.0,
            free_pages: 0,
        };
        assert_eq!(full.cost(1000.0, 1500.0), (1500.0, true));
        assert_eq!(full.cost(1000.0, 5000.0), (1000.0, true));
        full.take(1000.0, true);
        assert_eq!(full.busy_ns, 2000.0);
        let mut one = c;
        one.take(1000.0, false);
        assert_eq!((one.busy_ns, one.free_pages), (1000.0, 0));
    }

    #[test]
    fn single_use_pages_whose_copy_costs_more_stay() {
        // one pass (64 accesses x 10 ns) against a 1000 ns copy
        assert!(!worth_moving(64.0, 10.0, 0.0, 1000.0));
        // reused by a later task: 1280 ns saved
        assert!(worth_moving(64.0, 10.0, 640.0, 1000.0));
    }
}

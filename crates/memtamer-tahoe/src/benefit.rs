//! Migration cost-benefit check (issue 21 follow-up). The thesis's planner
//! promotes a task's hottest pages whenever DRAM can hold them (§4.3.3);
//! in programs where a page is read once per task, such a promotion costs a
//! slow-tier read plus a DRAM write to save one slow-tier pass, which does
//! not pay. Here a page is promoted only when the time the model predicts
//! it saves while resident exceeds the time its movement costs.
//!
//! * The saving per access of a task type is the mean slope of the gap
//!   the model closes, `(T_c_NVM - T_c_DRAM) / tot_mem_acc`
//!   ([`saving_per_access`]); the planner caps a task's own saving at its
//!   predicted gap to `T_c_DRAM` under the model's form (the parallel
//!   form's knee, [`task_gap_ns`]).
//! * A page's saving sums, over the task being planned and the created,
//!   not yet started tasks after it (the task graph's reuse), each task's
//!   predicted accesses to the page (its type's re-based profile) times its
//!   type's saving per access. The later tasks count only while their
//!   footprints, added up in creation order, fit the DRAM: beyond that
//!   reuse distance the page is likely evicted before its reuse (the FIFO
//!   of §4.3.5 evicts by task execution order).
//! * The copy time per page is a measured machine property (the caller
//!   passes it, [`crate::plan::PlanConfig::copy_ns_per_page`]).
//! * The cost a page is weighed against is the thesis's data-movement cost
//!   (§3.4.1, which Tahoe's "avoid less beneficial data movement", §4.1,
//!   rests on): "The data movement cost can be simply calculated based on
//!   data size and memory copy bandwidth between NVM and DRAM, which is
//!   (data_size / mem_copy_bw)" (§3.4.1), less what the helper overlaps
//!   with execution: Eq. 3.3, `COST = max(size / copy_bw -
//!   mem_comp_overlap, 0)`, plus Eq. 3.4's `extra_COST` for the page that
//!   must leave when DRAM is full; `w = BFT - COST - extra_COST` must be
//!   positive for the page to move ([`HelperClock`]).
//! * The copy's bandwidth is the tasks' bandwidth: the helper reads the
//!   page from the slow tier and writes it to DRAM over the same channels
//!   the running tasks use, and the eviction writes a page back to the
//!   slow tier. Overlap hides the copy's *time* from the task that waits
//!   for the page, not the *traffic* it puts on a tier the other tasks
//!   wait for. So each move is also charged its traffic
//!   ([`traffic_ns`]): every line it moves over the slow tier costs what
//!   one slow-tier access costs a task in the model (the same slope as the
//!   saving), and a line over DRAM what one DRAM access costs, which both
//!   forms make zero (`T_c_DRAM` is a constant in Eq. 4.4 and in the
//!   parallel form). Reads and writes cost the same, as the thesis models
//!   them (§4.3.7: "we do not distinguish memory read and write").

use crate::fasthash::PageMap;
use crate::model::HybridModel;
use crate::profile::{ProfileDb, TypeProfile};
use crate::task::Task;

/// Bytes per memory line: the unit of the profiles' access counts and of
/// a copy's traffic (a page moves as `page / LINE` line transfers).
pub const LINE: u64 = 64;

/// Predicted ns saved per access moved from the slow tier to DRAM for a
/// task of profile `p`: the mean slope of the gap the model closes,
/// `(T_c_NVM - T_c_DRAM) / tot_mem_acc` (Eq. 4.4's slope), under either
/// partial-placement form. The parallel-tiers form's own slope at the
/// all-slow end, `T_c_NVM / tot_mem_acc` down to its knee, was tried with
/// the traffic charge and lost on RandomAccess, where the knee rests on
/// the fallback's biased all-DRAM time (docs/notebook/tahoe.md, "Fifth pass"); the
/// planner still caps a task's own saving at its gap under the form
/// ([`task_gap_ns`]). 0 if the model predicts no gain or the profile has
/// no accesses.
pub fn saving_per_access(model: &HybridModel, p: &TypeProfile) -> f64 {
    if p.total_accesses <= 0.0 {
        return 0.0;
    }
    ((p.t_slow_ns - model.t_dram(p)) / p.total_accesses).max(0.0)
}

/// What a task of profile `p` can still gain with `slow_acc` of its
/// accesses in the slow tier: its predicted time now less its all-DRAM
/// time (ns). A page's saving for its own task never exceeds what is left
/// of this gap (the parallel form's knee; under Eq. 4.4 the slope times
/// the slow accesses equals it, so the cap never binds).
pub fn task_gap_ns(model: &HybridModel, p: &TypeProfile, slow_acc: f64) -> f64 {
    (model.t_partial(p, slow_acc) - model.t_dram(p)).max(0.0)
}

/// Predicted task time (ns) that one page's traffic over the slow tier
/// costs the tasks sharing that tier: `lines` line transfers, each costing
/// what one slow-tier access costs a task of profile `p` in the model (the
/// slope of [`saving_per_access`]; a DRAM line costs nothing in either
/// form). A promotion reads a page from the slow tier (`lines` slow lines,
/// `lines` DRAM lines); an eviction writes one back (the reverse).
pub fn traffic_ns(model: &HybridModel, p: &TypeProfile, lines: f64) -> f64 {
    lines * saving_per_access(model, p)
}

/// Separate slopes for a task's loads and stores in the PMU-free fallback,
/// `T_slow - T_dram = read_ns * reads + write_ns * writes`, for the check's
/// saving and traffic (docs/notebook/tahoe.md, "The check and later tasks'
/// reuse"). One β prices every access alike, but a store to a slow-tier
/// line (an `out`/`inout` dependence) moves two lines over the slow tier,
/// the read for ownership and the dirty write-back, and a load one: where
/// the slow tier's bandwidth bounds the time a store saves about twice a
/// load, where its latency does the posted write-back stalls no one and a
/// store saves less. The thesis's model does not distinguish reads and
/// writes (§4.3.7); these slopes are fitted on measured all-slow and
/// all-DRAM times as its models are (§4.3.4), and a page's kind comes from
/// the dependence mode the runtime reports.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RwSlopes {
    /// ns saved per load moved to DRAM.
    pub read_ns: f64,
    /// ns saved per store moved to DRAM.
    pub write_ns: f64,
}

impl RwSlopes {
    /// Non-negative least squares through the origin on `(reads, writes,
    /// gap_ns)` samples (per task type: mean loads and stores of an
    /// instance, all-slow less all-DRAM time): the unconstrained solution
    /// if both slopes are >= 0, else the better one-slope fit. None without
    /// a sample with accesses.
    pub fn fit(samples: &[(f64, f64, f64)]) -> Option<RwSlopes> {
        let sum = |f: &dyn Fn(&(f64, f64, f64)) -> f64| samples.iter().map(f).sum::<f64>();
        let (a, b, d) = (
            sum(&|s| s.0 * s.0),
            sum(&|s| s.0 * s.1),
            sum(&|s| s.1 * s.1),
        );
        let (e, f) = (sum(&|s| s.0 * s.2), sum(&|s| s.1 * s.2));
        let sse = |r: &RwSlopes| sum(&|s| (s.0 * r.read_ns + s.1 * r.write_ns - s.2).powi(2));
        let mut cand = Vec::new();
        if a > 0.0 {
            cand.push(RwSlopes {
                read_ns: (e / a).max(0.0),
                write_ns: 0.0,
            });
        }
        if d > 0.0 {
            cand.push(RwSlopes {
                read_ns: 0.0,
                write_ns: (f / d).max(0.0),
            });
        }
        let det = a * d - b * b;
        if det.abs() > f64::EPSILON * (a * d).max(1.0) {
            let r = RwSlopes {
                read_ns: (d * e - b * f) / det,
                write_ns: (a * f - b * e) / det,
            };
            if r.read_ns >= 0.0 && r.write_ns >= 0.0 {
                cand.push(r);
            }
        }
        cand.into_iter().min_by(|x, y| sse(x).total_cmp(&sse(y)))
    }

    /// ns saved per access to a page that a task stores to (`write`) or
    /// only loads from.
    pub fn per_access(&self, write: bool) -> f64 {
        if write {
            self.write_ns
        } else {
            self.read_ns
        }
    }

    /// Task time one page copy's `lines` slow-tier transfers cost: a
    /// promotion reads them (`lines` loads' worth), an eviction writes them
    /// back, which costs what a store saves beyond a load (its write-back
    /// half; nothing where stores save less than loads). Returns (read,
    /// write-back).
    pub fn traffic_ns(&self, lines: f64) -> (f64, f64) {
        (
            lines * self.read_ns,
            lines * (self.write_ns - self.read_ns).max(0.0),
        )
    }
}

/// The pages of `t` that it stores to (objects named `out` or `inout`).
pub fn write_pages(t: &Task, page: u64) -> crate::fasthash::PageSet {
    t.objects
        .iter()
        .filter(|o| o.access != crate::task::Access::In)
        .flat_map(|o| o.pages(page))
        .collect()
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
    future_savings_of(db, model, future, page, capacity, None, None)
}

/// [`future_savings`] of the pages in `wanted` (sorted; None: every
/// page), each later access priced by `rw` where given ([`RwSlopes`]; None:
/// the type's one slope), the same sums for those pages: the planner asks only about its
/// co-runners' pages, so a future task none of whose objects touches one
/// is not re-based, and the others only for those pages, unsorted (the
/// re-basing's sort was most of the OMPT tool's planning time with the
/// check on, docs/notebook/tahoe.md "The check in the tool"). The reuse
/// distance counts each object's pages once (an object named again adds
/// no page, so the distinct-page count is that of the footprints).
pub fn future_savings_of(
    db: &ProfileDb,
    model: &HybridModel,
    future: &[Task],
    page: u64,
    capacity: usize,
    wanted: Option<&[u64]>,
    rw: Option<RwSlopes>,
) -> PageMap<f64> {
    let mut out: PageMap<f64> = PageMap::default();
    let mut seen = PageSpans::default();
    let touches = |t: &Task| match wanted {
        None => true,
        Some(w) => t.objects.iter().any(|o| {
            let r = o.pages(page);
            let i = w.partition_point(|&p| p < *r.start());
            w.get(i).is_some_and(|&p| p <= *r.end())
        }),
    };
    for t in future {
        for o in &t.objects {
            let r = o.pages(page);
            seen.insert(*r.start(), *r.end());
        }
        if seen.pages > capacity as u64 {
            break;
        }
        let Some(p) = db.get(t) else {
            continue;
        };
        let s = saving_per_access(model, p);
        if s <= 0.0 || !touches(t) {
            continue;
        }
        let writes = rw.map(|_| write_pages(t, page));
        for (pg, acc) in p.rebase_within(t, page, wanted).unwrap_or_default() {
            let s = match (rw, &writes) {
                (Some(r), Some(w)) => r.per_access(w.contains(&pg)),
                _ => s,
            };
            *out.entry(pg).or_insert(0.0) += acc * s;
        }
    }
    out
}

/// A set of pages kept as sorted, disjoint, non-adjacent spans of page
/// numbers, and how many pages it holds: the reuse scan's distinct pages
/// at a cost per object, not per page (objects are contiguous page
/// ranges; the count equals that of a set of the pages).
#[derive(Debug, Default)]
struct PageSpans {
    /// Inclusive (first, last) page spans, sorted.
    spans: Vec<(u64, u64)>,
    /// Pages in the set.
    pages: u64,
}

impl PageSpans {
    /// Adds pages `lo..=hi` (`lo <= hi`).
    fn insert(&mut self, lo: u64, hi: u64) {
        let i = self
            .spans
            .partition_point(|&(_, e)| e.saturating_add(1) < lo);
        let (mut a, mut b) = (lo, hi);
        let mut j = i;
        while let Some(&(s, e)) = self.spans.get(j) {
            if s > b.saturating_add(1) {
                break;
            }
            a = a.min(s);
            b = b.max(e);
            self.pages -= e - s + 1;
            j += 1;
        }
        self.spans.splice(i..j, [(a, b)]);
        self.pages += b - a + 1;
    }
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
    /// Eq. 3.3 + Eq. 3.4 for one page, with `copy_ns` per page copy on the
    /// helper and `traffic_ns` the task time one page's slow-tier traffic
    /// costs ([`traffic_ns`]). A page for a task starting `slack_ns` from
    /// now costs the part of its copy the helper does not finish by then
    /// (`COST`, Eq. 3.3: the helper first evicts when DRAM is full, then
    /// promotes), plus its read from the slow tier; when DRAM is full, the
    /// eviction's write to the slow tier is `extra_COST` (Eq. 3.4; its
    /// helper time is already in the promotion's `COST`). Returns the cost
    /// and whether the promotion evicts.
    pub fn cost(&self, copy_ns: f64, slack_ns: f64, traffic_ns: f64) -> (f64, bool) {
        self.cost_fresh(copy_ns, copy_ns, slack_ns, traffic_ns, traffic_ns)
    }

    /// [`HelperClock::cost`] for a promotion that takes `move_ns` of helper
    /// time and puts `move_traffic_ns` of slow-tier traffic on the tasks,
    /// while an eviction it forces still costs a copy (`copy_ns`, and
    /// `evict_traffic_ns` for its write-back). A copy has `move_ns =
    /// copy_ns` and equal traffic both ways; a page placed without a copy
    /// ([`fresh_ns`]: its contents discarded, a zeroed DRAM page faulted
    /// in) has no slow-tier traffic of its own (`move_traffic_ns = 0`: it
    /// writes only DRAM, which costs nothing in the model). Returns the
    /// cost and whether the promotion evicts.
    pub fn cost_fresh(
        &self,
        move_ns: f64,
        copy_ns: f64,
        slack_ns: f64,
        move_traffic_ns: f64,
        evict_traffic_ns: f64,
    ) -> (f64, bool) {
        let evicts = self.free_pages == 0;
        let helper = move_ns + if evicts { copy_ns } else { 0.0 };
        let done = self.busy_ns + helper;
        let exposed = (done - slack_ns.max(0.0)).clamp(0.0, helper);
        let extra = if evicts { evict_traffic_ns } else { 0.0 };
        (exposed + move_traffic_ns + extra, evicts)
    }

    /// The page was planned: the helper's queue and DRAM take it.
    pub fn take(&mut self, copy_ns: f64, evicts: bool) {
        self.take_fresh(copy_ns, copy_ns, evicts);
    }

    /// [`HelperClock::take`] for a promotion of `move_ns` helper time whose
    /// eviction (if any) is a copy of `copy_ns`.
    pub fn take_fresh(&mut self, move_ns: f64, copy_ns: f64, evicts: bool) {
        self.busy_ns += move_ns + if evicts { copy_ns } else { 0.0 };
        self.free_pages = self.free_pages.saturating_sub(1);
    }
}

/// Helper time (ns) to place one page in DRAM without copying it (a page
/// the task about to run overwrites whole, [`crate::task::Access::OutWhole`]):
/// on Linux, `madvise(MADV_DONTNEED)` discards the old page and a fault
/// (`MADV_POPULATE_WRITE`, or a touch) allocates a zeroed page on the DRAM
/// node under the range's `mbind` policy. It costs `fault_ns` of page-fault
/// handling plus the kernel's zeroing of the page, a DRAM write of its
/// bytes. The zeroing is taken as half of a copy (`copy_ns / 2`): a copy
/// reads the page from the slow tier and writes it to DRAM, the zeroing is
/// only the write (an upper bound: the slow-tier read is the slower half).
pub fn fresh_ns(fault_ns: f64, copy_ns: f64) -> f64 {
    fault_ns.max(0.0) + copy_ns.max(0.0) / 2.0
}

/// Predicted start (ns from now) of each task of a FIFO ready queue
/// (thesis Eq. 3.3's `mem_comp_overlap`: the time the helper has before a
/// planned task needs its pages). `running` are the predicted run times
/// of the running tasks in dispatch order (oldest first), `queued` those
/// of the queued tasks in queue order, `workers` the worker threads.
///
/// Workers not running a task are free now. A running task's remaining
/// time is not known (the planner sees no clock), so the running tasks'
/// phases are taken as uniformly spread: of `n` running tasks the one
/// dispatched `j`-th (from 0) frees its worker after `(j + 1) / (n + 1)`
/// of its predicted time, the expected `j + 1`-th smallest of `n`
/// uniform remaining times (order statistics), oldest first. Each queued
/// task then starts when the earliest worker frees and holds it for its
/// predicted time (list scheduling in FIFO order, as libomp's workers
/// take the queue's head).
///
/// Until 2026-11-26 the simulator's Tahoe estimated a task's start as the
/// work ahead of it (half of each running task, all of each task queued
/// before it) spread evenly over the workers: that ignores idle workers
/// (the head starts now when one is idle) and gives the queue's head the
/// mean remaining time of the running tasks, while it starts at the first
/// completion; on heat at 4x latency it predicted 29-37 us for tasks that
/// started 1-5 us later (docs/notebook/tahoe.md, "Heat at 4x latency").
pub fn queue_starts(running: &[f64], queued: &[f64], workers: usize) -> Vec<f64> {
    list_starts(&uniform_remaining(running), queued, workers)
}

/// Expected remaining time of each running task when only its predicted
/// run time is known (no clock): of `n` running tasks the one dispatched
/// `j`-th (from 0) frees its worker after `(j + 1) / (n + 1)` of its
/// predicted time (the order statistics of [`queue_starts`]).
pub fn uniform_remaining(running: &[f64]) -> Vec<f64> {
    let n = running.len();
    running
        .iter()
        .enumerate()
        .map(|(j, &t)| t.max(0.0) * (j + 1) as f64 / (n + 1) as f64)
        .collect()
}

/// Predicted start (ns from now) of each task of a FIFO ready queue whose
/// running tasks free their workers after `remaining` ns (one entry per
/// busy worker): list scheduling in FIFO order over `workers` workers, the
/// ones not in `remaining` free now; each queued task (predicted run time
/// in `queued`) takes the earliest free worker. [`queue_starts`] feeds it
/// the order-statistic estimate (the simulator's planner sees no clock);
/// the OMPT tool feeds it each running task's predicted time less its
/// elapsed time (it has the clock). Infinite starts when there are no
/// workers.
pub fn list_starts(remaining: &[f64], queued: &[f64], workers: usize) -> Vec<f64> {
    let n = remaining.len();
    let mut free: Vec<f64> = remaining.iter().map(|&t| t.max(0.0)).collect();
    free.extend(std::iter::repeat_n(0.0, workers.saturating_sub(n)));
    if free.is_empty() {
        return vec![f64::INFINITY; queued.len()];
    }
    queued
        .iter()
        .map(|&t| {
            let (k, at) = free
                .iter()
                .copied()
                .enumerate()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((0, 0.0));
            free[k] = at + t.max(0.0);
            at
        })
        .collect()
}

/// Look-ahead slack (thesis Eq. 3.3's `mem_comp_overlap`) of a task
/// predicted to start `start_ns` from now when the migration helper still
/// has `backlog_ns` of copies queued ahead of its own: the helper time
/// left for its pages. Negative when the backlog outlasts the wait (the
/// check then charges the whole copy, [`HelperClock::cost`]).
pub fn slack_ns(start_ns: f64, backlog_ns: f64) -> f64 {
    start_ns - backlog_ns
}

/// Pages a run must have moved before the check uses the run's own
/// measured copy time per page instead of the prior (one heat block: 32
/// pages): fewer say more about the first call's setup than about a
/// page's copy.
pub const COPY_SAMPLE_PAGES: u64 = 32;

/// The run's own copy cost per page (Eq. 3.3's `data_size /
/// mem_copy_bw`, as this program's load leaves the copy its bandwidth):
/// `total_ns` spent moving `pages` pages, once at least
/// [`COPY_SAMPLE_PAGES`] were moved; `None` before (keep the prior). The
/// caller feeds it to [`crate::plan::Planner::set_copy_ns`], which
/// ignores a value that is not a positive number.
pub fn measured_copy_ns(total_ns: f64, pages: u64) -> Option<f64> {
    (pages >= COPY_SAMPLE_PAGES).then(|| total_ns / pages as f64)
}

/// Created, not yet started tasks a planner's caller scans for reuse
/// ([`future_savings`] stops earlier, at the DRAM reuse distance; the cap
/// bounds the work of building the tasks).
pub const FUTURE_SCAN: usize = 256;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fasthash::PageSet;
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
        HybridModel::fallback_only(10.0)
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
    fn overlapped_copies_cost_their_traffic_and_evictions_their_copy_back() {
        let c = HelperClock {
            busy_ns: 0.0,
            free_pages: 1,
        };
        // the task starts 5 us ahead: the copy's time is hidden (Eq. 3.3),
        // its 300 ns of slow-tier traffic is not
        assert_eq!(c.cost(1000.0, 5000.0, 300.0), (300.0, false));
        // no slack (the task starts now): the whole copy is exposed
        assert_eq!(c.cost(1000.0, 0.0, 300.0), (1300.0, false));
        // 400 ns of slack hides 400 ns of the copy
        assert_eq!(c.cost(1000.0, 400.0, 0.0), (600.0, false));
        // the helper is 4.5 us behind: only 500 ns of the slack is left
        let busy = HelperClock {
            busy_ns: 4500.0,
            free_pages: 1,
        };
        assert_eq!(busy.cost(1000.0, 5000.0, 0.0), (500.0, false));
        // DRAM full: the helper evicts first (2 us for the pair), and the
        // eviction's write to the slow tier is extra_COST (Eq. 3.4)
        let mut full = HelperClock {
            busy_ns: 0.0,
            free_pages: 0,
        };
        assert_eq!(full.cost(1000.0, 1500.0, 300.0), (500.0 + 600.0, true));
        assert_eq!(full.cost(1000.0, 5000.0, 300.0), (600.0, true));
        assert_eq!(full.cost(1000.0, 0.0, 0.0), (2000.0, true));
        full.take(1000.0, true);
        assert_eq!(full.busy_ns, 2000.0);
        let mut one = c;
        one.take(1000.0, false);
        assert_eq!((one.busy_ns, one.free_pages), (1000.0, 0));
    }

    #[test]
    fn a_hidden_copy_of_a_page_read_once_does_not_pay() {
        // One pass over a page (64 lines) saves 64 x 10 ns; moving it reads
        // the same 64 lines from the slow tier, which costs the tasks as
        // much. Copy time fully hidden, DRAM free: the cost without the
        // traffic (Eq. 3.3 alone) was 0 and the page moved.
        let c = HelperClock {
            busy_ns: 0.0,
            free_pages: 8,
        };
        let db = db();
        let p = db.get(&task(2, 100, 4)).unwrap();
        let m = model();
        let traffic = traffic_ns(&m, p, (P / LINE) as f64);
        assert!((traffic - 640.0).abs() < 1e-9);
        let (cost, _) = c.cost(1000.0, 1e9, traffic);
        assert!(!worth_moving(64.0, saving_per_access(&m, p), 0.0, cost));
        // two passes while resident pay
        assert!(worth_moving(128.0, saving_per_access(&m, p), 0.0, cost));
    }

    #[test]
    fn the_saving_is_the_mean_slope_and_the_gap_stops_at_the_knee() {
        let db = db();
        let p = db.get(&task(2, 100, 4)).unwrap();
        let par = HybridModel {
            form: crate::model::PartialForm::ParallelTiers,
            ..model()
        };
        // (T_c_NVM - T_c_DRAM) / tot_mem_acc under both forms
        assert!((saving_per_access(&par, p) - 10.0).abs() < 1e-9);
        // the parallel gap: all slow 10000 - 7440; at the knee p = 0.744
        // none is left
        assert!((task_gap_ns(&par, p, 256.0) - 2560.0).abs() < 1e-9);
        assert_eq!(task_gap_ns(&par, p, 0.744 * 256.0), 0.0);
        // Eq. 4.4: the gap shrinks linearly, slope x slow accesses
        let m = model();
        assert!((task_gap_ns(&m, p, 128.0) - 128.0 * 10.0).abs() < 1e-9);
        // no gain predicted: no saving, no traffic charge
        let flat = HybridModel {
            fallback: LinearAccess { beta_ns: 0.0 },
            ..par
        };
        assert_eq!(saving_per_access(&flat, p), 0.0);
        assert_eq!(traffic_ns(&flat, p, 64.0), 0.0);
    }

    #[test]
    fn single_use_pages_whose_copy_costs_more_stay() {
        // one pass (64 accesses x 10 ns) against a 1000 ns cost
        assert!(!worth_moving(64.0, 10.0, 0.0, 1000.0));
        // reused by a later task: 1280 ns saved
        assert!(worth_moving(64.0, 10.0, 640.0, 1000.0));
    }
    #[test]
    fn an_idle_worker_takes_the_head_now() {
        // 7 of 8 workers busy: the head starts at once, the next at the
        // first completion of the 7 (1/8 of 80 us)
        let s = queue_starts(&[80.0; 7], &[40.0, 40.0, 40.0], 8);
        assert_eq!(s[0], 0.0);
        assert!((s[1] - 10.0).abs() < 1e-9, "{s:?}");
        assert!((s[2] - 20.0).abs() < 1e-9, "{s:?}");
    }

    #[test]
    fn queued_tasks_start_at_the_order_statistics_of_the_running_ones() {
        // 8 busy workers, equal 90 us tasks: completions at 10, 20, ... us
        let s = queue_starts(&[90.0; 8], &[90.0; 9], 8);
        for (k, at) in s.iter().take(8).enumerate() {
            assert!((at - 10.0 * (k + 1) as f64).abs() < 1e-9, "{s:?}");
        }
        // the 9th waits for the first queued task's worker: 10 + 90
        assert!((s[8] - 100.0).abs() < 1e-9, "{s:?}");
        // the even spread of the work ahead (the old estimate) gives the
        // head 45 us, 4.5 x its expected start
        let old = 8.0 * 90.0 / 2.0 / 8.0;
        assert!(old > 4.0 * s[0]);
    }

    #[test]
    fn one_worker_serves_the_queue_in_order() {
        let s = queue_starts(&[10.0], &[3.0, 4.0, 5.0], 1);
        assert_eq!(s, vec![5.0, 8.0, 12.0]);
        assert!(queue_starts(&[], &[1.0], 0)[0].is_infinite());
        assert!(queue_starts(&[], &[], 8).is_empty());
    }

    #[test]
    fn page_spans_count_distinct_pages_like_a_set() {
        // pseudo-random overlapping, adjacent and repeated spans
        let mut spans = PageSpans::default();
        let mut set = PageSet::default();
        let mut x = 12345u64;
        for _ in 0..500 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let lo = (x >> 33) % 400;
            let hi = lo + (x >> 20) % 9;
            spans.insert(lo, hi);
            set.extend(lo..=hi);
            assert_eq!(spans.pages, set.len() as u64);
        }
        assert!(spans.spans.windows(2).all(|w| w[0].1 + 1 < w[1].0));
    }

    #[test]
    fn savings_of_wanted_pages_match_the_full_scan() {
        let db = db();
        // overlapping readers, an unknown type, and a far task
        let mut odd = task(6, 300, 4);
        odd.code = 99;
        let fut = vec![
            task(3, 100, 4),
            task(4, 102, 4),
            odd,
            task(5, 100, 4),
            task(7, 200, 4),
        ];
        for cap in [6, 9, 100] {
            let full = future_savings(&db, &model(), &fut, P, cap);
            let wanted = [101, 105, 200, 203];
            let some = future_savings_of(&db, &model(), &fut, P, cap, Some(&wanted), None);
            for pg in wanted {
                assert_eq!(full.get(&pg), some.get(&pg), "cap {cap} page {pg}");
            }
            assert!(some.keys().all(|k| wanted.contains(k)));
        }
    }

    #[test]
    fn known_remaining_times_replace_the_order_statistics() {
        // two workers: one task with 30 us left, one idle worker; with the
        // clock the queue's head starts now, the second at 30 us
        assert_eq!(list_starts(&[30.0], &[50.0, 50.0], 2), vec![0.0, 30.0]);
        // a task past its predicted time frees its worker now
        assert_eq!(list_starts(&[-5.0], &[7.0, 7.0], 1), vec![0.0, 7.0]);
        // without the clock the same running task is half done
        assert_eq!(queue_starts(&[30.0], &[50.0, 50.0], 1), vec![15.0, 65.0]);
        assert_eq!(uniform_remaining(&[30.0, 30.0]), vec![10.0, 20.0]);
        // the helper's backlog eats into the slack
        assert_eq!(slack_ns(30.0, 12.0), 18.0);
        assert_eq!(slack_ns(5.0, 12.0), -7.0);
    }

    #[test]
    fn the_runs_own_copy_cost_needs_enough_pages() {
        assert_eq!(measured_copy_ns(3100.0, COPY_SAMPLE_PAGES - 1), None);
        assert_eq!(measured_copy_ns(6400.0, 32), Some(200.0));
    }

    #[test]
    fn read_and_write_slopes_are_fitted_non_negative() {
        // gap = 5 ns per load + 20 ns per store, exactly
        let s: Vec<(f64, f64, f64)> = [(100.0, 0.0), (50.0, 50.0), (0.0, 80.0)]
            .iter()
            .map(|&(r, w)| (r, w, 5.0 * r + 20.0 * w))
            .collect();
        let f = RwSlopes::fit(&s).unwrap();
        assert!((f.read_ns - 5.0).abs() < 1e-9 && (f.write_ns - 20.0).abs() < 1e-9);
        assert_eq!(f.per_access(true), f.write_ns);
        // a write-back costs what a store saves beyond a load
        assert_eq!(f.traffic_ns(64.0), (320.0, 960.0));
        // stores saving less than loads: no write-back charge
        let lat = RwSlopes {
            read_ns: 12.0,
            write_ns: 3.0,
        };
        assert_eq!(lat.traffic_ns(64.0), (768.0, 0.0));
        // the unconstrained fit would give loads a negative slope: clamped
        let neg = [(100.0, 10.0, 100.0), (10.0, 100.0, 3000.0)];
        let f = RwSlopes::fit(&neg).unwrap();
        assert!(f.read_ns >= 0.0 && f.write_ns >= 0.0, "{f:?}");
        assert_eq!(RwSlopes::fit(&[]), None);
    }

    #[test]
    fn a_page_placed_without_a_copy_costs_no_slow_tier_read() {
        let c = HelperClock {
            busy_ns: 0.0,
            free_pages: 4,
        };
        // slack hides the helper's time: the cost is the traffic alone,
        // and the no-copy move saves exactly the page's read
        let (copy, _) = c.cost(500.0, 1e6, 640.0);
        let (fresh, _) = c.cost_fresh(fresh_ns(250.0, 500.0), 500.0, 1e6, 0.0, 640.0);
        assert_eq!(copy - fresh, 640.0);
        // no slack: the helper time counts too (500 + 640 vs 250 + 250)
        let (copy, _) = c.cost(500.0, 0.0, 640.0);
        let (fresh, _) = c.cost_fresh(fresh_ns(250.0, 500.0), 500.0, 0.0, 0.0, 640.0);
        assert_eq!((copy, fresh), (1140.0, 500.0));
        // a full DRAM: the eviction is still a copy and a write-back
        let full = HelperClock {
            busy_ns: 0.0,
            free_pages: 0,
        };
        let (fresh, evicts) = full.cost_fresh(500.0, 500.0, 0.0, 0.0, 640.0);
        assert!(evicts);
        assert_eq!(fresh, 500.0 + 500.0 + 640.0);
        let mut k = full;
        k.take_fresh(500.0, 300.0, true);
        assert_eq!(k.busy_ns, 800.0);
    }
}

//! Proactive migration planning (thesis §4.3.5-4.3.6). Just before the
//! head of the ready queue runs, Tahoe (1) looks up which of its pages are
//! in DRAM and how much is free, (2) splits the DRAM it may use among the
//! head and the next co-running ready tasks (the ready queue is the
//! look-ahead, so a helper thread can migrate for them before they start),
//! (3) evicts the oldest FIFO footprints if needed, (4) promotes each
//! task's hottest re-based pages in one batch per task (one `move_pages`
//! call, one TLB flush: §4.3.6 optimisation 2).

use crate::benefit::{
    fresh_ns, future_savings_of, saving_per_access, task_gap_ns, traffic_ns, worth_moving,
    write_pages, HelperClock, RwSlopes,
};
use crate::fasthash::{PageMap, PageSet, TypeMap};
use crate::model::{invert_t_slow, HybridModel};
use crate::profile::{Counters, ProfileDb, TypeProfile};
use crate::residency::Residency;
use crate::split::{split_dp, split_even};
use crate::task::Task;

/// Planner knobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanConfig {
    /// Page size in bytes (power of two).
    pub page: u64,
    /// Co-running tasks considered (head + look-ahead), the K of Eq. 4.1.
    pub corun: usize,
    /// Largest number of DP units (pages are grouped into units so the
    /// O(K C^2) DP stays cheap).
    pub max_units: usize,
    /// Cost of copying one page between the tiers, ns (a measured machine
    /// property). `Some`: promote only pages whose predicted saving
    /// exceeds their movement cost, Eq. 3.3 (the copy time the look-ahead
    /// slack does not hide) plus the copy's slow-tier traffic and, when
    /// DRAM is full, Eq. 3.4's eviction write-back ([`crate::benefit`]);
    /// `None`: promote whatever fits (the thesis's §4.3.3 planner). The
    /// check counts a page's traffic as `page / access_bytes` accesses
    /// ([`PlanConfig::access_bytes`]).
    pub copy_ns_per_page: Option<f64>,
    /// Bytes one profiled access stands for, so that the check prices a
    /// page copy's slow-tier traffic (`page / access_bytes` accesses) in
    /// the profiles' own unit: [`crate::benefit::LINE`] (the default) for
    /// the simulator's per-page line counts; the page size for the OMPT
    /// tool, whose sampled counts (intervals a page was touched) and
    /// [`TypeProfile::uniform`] profiles (one access per page) count page
    /// passes, the unit its fallback β prices (docs/notebook/tahoe.md "The check
    /// in the tool").
    pub access_bytes: u64,
    /// Page-fault handling time per page, ns (a measured machine
    /// property). `Some`: pages a task overwrites whole
    /// ([`Task::overwritten_pages`], objects passed as
    /// [`crate::task::Access::OutWhole`]) are placed in DRAM without a
    /// copy (discard + fault a zeroed page, [`Batch::fresh`]), and the
    /// check charges them [`fresh_ns`] of helper time and no slow-tier
    /// traffic; `None` (the default): every promotion copies, as the
    /// thesis's Tahoe, which does not distinguish reads from writes
    /// (§4.3.7). An ablation beyond the thesis (docs/notebook/tahoe.md, "Out
    /// blocks placed without a copy").
    pub out_fault_ns: Option<f64>,
    /// Fixed cost of one copy batch (one `move_pages` call whatever its
    /// size), ns, charged once per co-runner's copy batch on top of
    /// [`PlanConfig::copy_ns_per_page`] per page: a batch of `k` pages
    /// costs `c0 + c1 * k` ([`crate::copycost`]; the thesis batches a
    /// task's pages into one call to pay this part once, §4.3.6). The
    /// batch moves only when its pages' summed net saving exceeds the
    /// part of `c0` the look-ahead slack does not hide. 0 (the default,
    /// and the simulator's, whose copy model has no per-call cost): each
    /// page pays only its own copy, the check as before.
    pub copy_fixed_ns: f64,
    /// Instances of a type not yet profiled that may be passed over as its
    /// representative because part of their footprint is already in DRAM
    /// (first-touch pages adopted with [`Planner::adopt`], or earlier
    /// promotions). The thesis profiles the representative "with all data
    /// in NVM" (§4.3.3), so that T_c_NVM of Eq. 4.4 is *measured*; a
    /// representative that ran partly from DRAM gives it only through the
    /// fallback model inverted (`T_measured + beta * DRAM accesses`), and
    /// one beta for every program is off by up to 2x per program
    /// (docs/notebook/tahoe.md "The representative's placement"). A passed-over
    /// instance runs unplaced and unpredicted ([`Decision::Wait`]); after
    /// this many, the next instance is profiled wherever its pages are, so
    /// no type stays unknown. 0 (the default, the OMPT tool's): the first
    /// instance is the representative.
    pub rep_skip: usize,
    /// Refine each type's all-slow time T_c_NVM from every instance that
    /// completes: its measured time, inverted through the model at the
    /// slow share its re-based profile had under the residency
    /// ([`crate::model::invert_t_slow`]), averaged with the
    /// representative's and the earlier instances'. A task's time depends
    /// on its co-runners' load on the tiers, which the one representative
    /// measures only for its own moment (the first wave, when first-touch
    /// DRAM still serves other tasks); the instances measure the rest of
    /// the run. Only tasks already completed enter a prediction. Beyond
    /// the thesis, which profiles once (§4.3.3; docs/notebook/tahoe.md "The
    /// representative's placement"). False (the default, the OMPT
    /// tool's): the representative's time stays.
    pub refine: bool,
    /// The check's saving and traffic priced per load and per store
    /// ([`RwSlopes`], `Planner::set_rw_slopes`); None (the default, the
    /// OMPT tool's): every access at the type's one slope.
    pub rw_slopes: Option<RwSlopes>,
}

impl Default for PlanConfig {
    fn default() -> Self {
        PlanConfig {
            page: 4096,
            corun: 4,
            max_units: 32,
            copy_ns_per_page: None,
            access_bytes: crate::benefit::LINE,
            out_fault_ns: None,
            copy_fixed_ns: 0.0,
            rep_skip: 0,
            refine: false,
            rw_slopes: None,
        }
    }
}

/// One batch of page moves, carried out by one call (per task).
#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    /// Task the batch is for (0 for evictions).
    pub task: u64,
    /// Page numbers to move.
    pub pages: Vec<u64>,
    /// True: to DRAM; false: to the slow tier.
    pub to_dram: bool,
    /// A promotion without a copy: the pages' old contents are discarded
    /// and zeroed DRAM pages faulted in (only pages the batch's task
    /// overwrites whole, [`PlanConfig::out_fault_ns`]). False for every
    /// copy and every eviction (an evicted page's contents are live).
    pub fresh: bool,
}

/// What to do for the head task.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// First instance of its type: run it as the representative, all data
    /// in the slow tier, and profile it.
    Profile,
    /// Another instance of a type whose representative is still running:
    /// nothing to go on yet.
    Wait,
    /// Known type: the batches (evictions first) and the predicted time of
    /// the head under the resulting placement (Eq. 4.4).
    Place {
        /// Moves, evictions first.
        batches: Vec<Batch>,
        /// Predicted head time, ns.
        predicted_ns: f64,
    },
}

/// Counters for the report.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PlanStats {
    /// Tasks decided.
    pub decisions: u64,
    /// Representatives profiled.
    pub profiled: u64,
    /// Pages planned into DRAM.
    pub promoted: u64,
    /// Of those, pages placed without a copy ([`Batch::fresh`]).
    pub promoted_fresh: u64,
    /// Pages planned out of DRAM.
    pub evicted: u64,
    /// Batches emitted.
    pub batches: u64,
    /// Hot, non-resident pages of co-runners that the cost-benefit check
    /// kept out of DRAM (their predicted saving did not exceed their
    /// movement cost). 0 without the check.
    pub refused_pages: u64,
    /// Co-runners that had hot, non-resident pages of which the check let
    /// none through: the promotion batches it refused outright. 0
    /// without the check.
    pub refused_batches: u64,
    /// Instances passed over as representative because part of their
    /// footprint was in DRAM ([`PlanConfig::rep_skip`]).
    pub rep_skipped: u64,
}

/// The Tahoe planner: profiling database, model and DRAM state.
#[derive(Debug)]
pub struct Planner {
    cfg: PlanConfig,
    db: ProfileDb,
    model: HybridModel,
    dram: Residency,
    profiling: TypeMap<u64>,
    /// Per type not yet profiled: instances passed over as representative.
    skipped: TypeMap<usize>,
    /// Per type: (sum, count) of its all-slow time estimates
    /// ([`PlanConfig::refine`]).
    refined: TypeMap<(f64, u64)>,
    stats: PlanStats,
}

impl Planner {
    /// A planner for `dram_pages` of DRAM.
    pub fn new(cfg: PlanConfig, model: HybridModel, dram_pages: usize) -> Self {
        Planner {
            cfg,
            db: ProfileDb::new(),
            model,
            dram: Residency::new(dram_pages, crate::residency::FIFO_ENTRIES),
            profiling: TypeMap::default(),
            skipped: TypeMap::default(),
            refined: TypeMap::default(),
            stats: PlanStats::default(),
        }
    }

    /// Turns the no-copy placement of pages a task overwrites whole on
    /// (`Some`: page-fault time per page, ns) or off, before planning
    /// starts ([`PlanConfig::out_fault_ns`]).
    pub fn set_out_fault_ns(&mut self, ns: Option<f64>) {
        self.cfg.out_fault_ns = ns.filter(|x| x.is_finite() && *x >= 0.0);
    }

    /// Sets [`PlanConfig::rep_skip`] and [`PlanConfig::refine`], before
    /// planning starts (an evaluation's model ablation).
    pub fn set_learning(&mut self, rep_skip: usize, refine: bool) {
        self.cfg.rep_skip = rep_skip;
        self.cfg.refine = refine;
    }

    /// Counters so far.
    pub fn stats(&self) -> PlanStats {
        self.stats
    }

    /// The performance model (a summary says which types its counter
    /// path predicts: [`HybridModel::counter_t_dram`]).
    pub fn model(&self) -> &HybridModel {
        &self.model
    }

    /// The profiling database.
    pub fn db(&self) -> &ProfileDb {
        &self.db
    }

    /// DRAM state.
    pub fn dram(&self) -> &Residency {
        &self.dram
    }

    /// `t` is its type's representative, now running (picked by
    /// [`Planner::observe`], profile not stored yet): the task whose page
    /// accesses a shell samples (§4.3.3).
    pub fn is_representative(&self, t: &Task) -> bool {
        self.profiling.get(&t.task_type()) == Some(&t.id)
    }

    /// Whether any page of `t`'s footprint is in DRAM now.
    fn touches_dram(&self, t: &Task) -> bool {
        self.dram.used() > 0
            && t.footprint(self.cfg.page)
                .iter()
                .any(|&p| self.dram.contains(p))
    }

    /// Profiling only (placement off): picks representatives, returns
    /// `Profile`, `Wait`, or `Place` with no batches for a known type.
    pub fn observe(&mut self, head: &Task) -> Decision {
        let ty = head.task_type();
        if self.db.get(head).is_none() {
            if self.profiling.contains_key(&ty) {
                return Decision::Wait;
            }
            let skipped = self.skipped.get(&ty).copied().unwrap_or(0);
            if skipped < self.cfg.rep_skip && self.touches_dram(head) {
                self.skipped.insert(ty, skipped + 1);
                self.stats.rep_skipped += 1;
                return Decision::Wait;
            }
            self.profiling.insert(ty, head.id);
            self.stats.profiled += 1;
            return Decision::Profile;
        }
        Decision::Place {
            batches: Vec::new(),
            predicted_ns: 0.0,
        }
    }

    /// Decides for `head` with `ready` the queue behind it (FIFO order)
    /// and `active` the tasks now running (their pages are guarded).
    pub fn decide(&mut self, head: &Task, ready: &[Task], active: &[Task]) -> Decision {
        self.decide_ahead(head, ready, active, &[])
    }

    /// [`Planner::decide`] with `future`, the created, not yet started
    /// tasks after `head` in creation order, whose reuse of the head's
    /// pages counts in the cost-benefit check ([`crate::benefit`]).
    pub fn decide_ahead(
        &mut self,
        head: &Task,
        ready: &[Task],
        active: &[Task],
        future: &[Task],
    ) -> Decision {
        self.decide_ahead_slack(head, ready, &[], active, future)
    }

    /// [`Planner::decide_ahead`] with the look-ahead slack of the ready
    /// tasks: `slack[i]` is the helper time (ns) before `ready[i]` starts,
    /// net of the copies already queued on the helper (missing: 0,
    /// nothing hidden), as in [`Planner::plan_ready_slack`]. The head's
    /// own moves run on its worker right before it, so it has none. The
    /// OMPT tool decides here at every task start, its look-ahead batches
    /// going to its helper thread (docs/notebook/tahoe.md "The check in the tool").
    pub fn decide_ahead_slack(
        &mut self,
        head: &Task,
        ready: &[Task],
        slack: &[f64],
        active: &[Task],
        future: &[Task],
    ) -> Decision {
        self.stats.decisions += 1;
        match self.observe(head) {
            Decision::Place { .. } => {}
            d => return d,
        }
        // Co-runners: the head plus the next known-type ready tasks, each
        // with its slack (the head's moves run on its worker right before
        // it: none).
        let slack_of =
            std::iter::once(0.0).chain(slack.iter().copied().chain(std::iter::repeat(0.0)));
        let (group, sl): (Vec<&Task>, Vec<f64>) = std::iter::once(head)
            .chain(ready.iter())
            .zip(slack_of)
            .filter(|(t, _)| self.db.get(t).is_some())
            .take(self.cfg.corun.max(1))
            .unzip();
        let batches = self.place(&group, active.iter(), future, &sl, &mut 0.0);
        Decision::Place {
            batches,
            predicted_ns: self.predict(head).unwrap_or(0.0),
        }
    }

    /// Decides at ready-queue entry (§4.3.3: the decision belongs to the
    /// Initialized/Ready states, so the copy overlaps the running tasks).
    /// `newly` are the tasks that just became ready (planned together,
    /// `corun` at a time, in order); `queued` the rest of the ready queue
    /// and the running tasks, whose pages are guarded; `future` as in
    /// [`Planner::decide_ahead`]. Tasks of unknown type are skipped (they
    /// are decided when they start: representative or not). Returns the
    /// batches (evictions first) and the ids of the tasks planned.
    pub fn plan_ready(
        &mut self,
        newly: &[Task],
        queued: &[Task],
        future: &[Task],
    ) -> (Vec<Batch>, Vec<u64>) {
        self.plan_ready_slack(newly, &[], queued, future)
    }

    /// [`Planner::plan_ready`] with each new task's look-ahead slack:
    /// `slack[i]` is the helper time (ns) before `newly[i]` starts, net of
    /// the copies already queued on the helper (missing: 0, nothing
    /// hidden). The cost-benefit check charges a page only the part of its
    /// copy the slack does not hide (Eq. 3.3); the copies planned here run
    /// one after another on the helper ([`HelperClock`]).
    pub fn plan_ready_slack(
        &mut self,
        newly: &[Task],
        slack: &[f64],
        queued: &[Task],
        future: &[Task],
    ) -> (Vec<Batch>, Vec<u64>) {
        let known: Vec<(&Task, f64)> = newly
            .iter()
            .zip(slack.iter().copied().chain(std::iter::repeat(0.0)))
            .filter(|(t, _)| self.db.get(t).is_some())
            .collect();
        let mut out = Vec::new();
        let mut busy = 0.0;
        for chunk in known.chunks(self.cfg.corun.max(1)) {
            self.stats.decisions += chunk.len() as u64;
            let group: Vec<&Task> = chunk.iter().map(|x| x.0).collect();
            let sl: Vec<f64> = chunk.iter().map(|x| x.1).collect();
            out.extend(self.place(&group, queued.iter().chain(newly), future, &sl, &mut busy));
        }
        (out, known.iter().map(|t| t.0.id).collect())
    }

    /// Eq. 4.4 time of `t` under the current residency (None: type unknown).
    pub fn predict(&self, t: &Task) -> Option<f64> {
        let p = self.db.get(t)?;
        Some(self.model.t_partial(p, self.slow_accesses(p, t)))
    }

    /// `t`'s accesses the slow tier serves now: its type's profile `p`
    /// re-based onto `t`, summed over the pages not resident in DRAM.
    fn slow_accesses(&self, p: &TypeProfile, t: &Task) -> f64 {
        p.rebase(t, self.cfg.page)
            .unwrap_or_default()
            .iter()
            .filter(|(pg, _)| !self.dram.contains(*pg))
            .map(|x| x.1)
            .sum()
    }

    /// Splits DRAM among `group` (known types; the first is the head),
    /// guards the pages of `guarded` and of the group, evicts from the FIFO
    /// and admits each task's hottest pages that pass the cost-benefit
    /// check: evictions first, then one batch per task. `slack[k]`: helper
    /// time before `group[k]` starts (missing: 0); `busy`: helper time
    /// taken by earlier plans of the same call.
    fn place<'a>(
        &mut self,
        group: &[&Task],
        guarded: impl Iterator<Item = &'a Task>,
        future: &[Task],
        slack: &[f64],
        busy: &mut f64,
    ) -> Vec<Batch> {
        let Some(first) = group.first() else {
            return Vec::new();
        };
        let ty = first.task_type();
        let page = self.cfg.page;
        let mut guard = PageSet::default();
        // pages of guarded tasks outside the group (the callers' guarded
        // lists may hold the group itself)
        let mut others = PageSet::default();
        for t in guarded {
            let fp = t.footprint(page);
            if self.cfg.out_fault_ns.is_some() && group.iter().all(|g| g.id != t.id) {
                others.extend(fp.iter().copied());
            }
            guard.extend(fp);
        }
        // each co-runner's pages (sorted, deduplicated), computed once
        let group_fp: Vec<Vec<u64>> = group.iter().map(|t| t.footprint(page)).collect();
        // pages each co-runner may place without a copy: overwritten whole
        // by it and named by no other guarded or co-running task
        let fresh: Vec<PageSet> = group
            .iter()
            .enumerate()
            .map(|(k, t)| match self.cfg.out_fault_ns {
                None => PageSet::default(),
                Some(_) => {
                    let mut v = t.overwritten_pages(page);
                    v.retain(|p| !others.contains(p));
                    for (j, fp) in group_fp.iter().enumerate() {
                        if j != k && !v.is_empty() {
                            v.retain(|p| fp.binary_search(p).is_err());
                        }
                    }
                    v.into_iter().collect()
                }
            })
            .collect();
        for fp in &group_fp {
            guard.extend(fp.iter().copied());
        }
        let later: PageMap<f64> = match self.cfg.copy_ns_per_page {
            Some(_) => {
                // only the co-runners' pages are looked up below
                let mut wanted: Vec<u64> = group_fp.iter().flatten().copied().collect();
                wanted.sort_unstable();
                wanted.dedup();
                let cap = self.dram.capacity();
                let rw = self.cfg.rw_slopes;
                future_savings_of(&self.db, &self.model, future, page, cap, Some(&wanted), rw)
            }
            None => PageMap::default(),
        };
        // Hot pages per co-runner, not yet resident, worth their copy.
        let mut hot: Vec<Vec<(u64, f64)>> = Vec::new();
        let mut base_slow: Vec<f64> = Vec::new();
        let mut profs: Vec<&TypeProfile> = Vec::new();
        let mut clock = HelperClock {
            busy_ns: *busy,
            free_pages: self.dram.free(),
        };
        let mut costed = PageSet::default();
        let lines_per_page = (page / self.cfg.access_bytes.max(1)) as f64;
        // the per-batch fixed cost, with the check on (0: none, as before)
        let fixed = match self.cfg.copy_ns_per_page {
            Some(_) if self.cfg.copy_fixed_ns.is_finite() => self.cfg.copy_fixed_ns.max(0.0),
            _ => 0.0,
        };
        let (mut refused_pages, mut refused_batches) = (0u64, 0u64);
        for (k, t) in group.iter().enumerate() {
            let Some(p) = self.db.get(t) else {
                return Vec::new();
            };
            let per = saving_per_access(&self.model, p);
            let rw = self.cfg.rw_slopes.map(|r| (r, write_pages(t, page)));
            let v: Vec<(u64, f64)> = p
                .rebase(t, page)
                .unwrap_or_default()
                .into_iter()
                .filter(|(pg, _)| !self.dram.contains(*pg))
                .collect();
            let slow0: f64 = v.iter().map(|x| x.1).sum();
            base_slow.push(slow0);
            let sl = slack.get(k).copied().unwrap_or(0.0);
            // one page's traffic over the slow tier, in this task's terms
            let traffic = traffic_ns(&self.model, p, lines_per_page);
            // what the task can still gain (the parallel form's knee)
            let mut gap = task_gap_ns(&self.model, p, slow0);
            // hottest first: the helper copies them in this order
            let hot_here = v.len();
            // the batch's fixed part (one call, §4.3.6) runs on the helper
            // ahead of its pages; the copy pages it lets through, with the
            // helper time each took and their summed net saving
            let clock0 = clock;
            if fixed > 0.0 {
                clock.busy_ns += fixed;
            }
            let mut taken: Vec<(u64, f64, bool)> = Vec::new();
            let mut margin = 0.0;
            let mut keep: Vec<(u64, f64)> = v
                .into_iter()
                .filter(|&(pg, a)| {
                    let Some(copy) = self.cfg.copy_ns_per_page else {
                        return true;
                    };
                    if costed.contains(&pg) {
                        return true; // a co-runner's copy already pays
                    }
                    let l = later.get(&pg).copied().unwrap_or(0.0);
                    // per load / store: no knee (the gap is the savings' sum)
                    let (own, rd, wb) = match &rw {
                        Some((r, w)) => {
                            let (rd, wb) = r.traffic_ns(lines_per_page);
                            (a * r.per_access(w.contains(&pg)), rd, wb)
                        }
                        None => ((a * per).min(gap), traffic, traffic),
                    };
                    // a page overwritten whole: no copy, no slow-tier read
                    let (mv, mv_traffic) = match self.cfg.out_fault_ns {
                        Some(f) if fresh[k].contains(&pg) => (fresh_ns(f, copy), 0.0),
                        _ => (copy, rd),
                    };
                    let (cost, evicts) = clock.cost_fresh(mv, copy, sl, mv_traffic, wb);
                    let ok = worth_moving(own, 1.0, l, cost);
                    if ok {
                        clock.take_fresh(mv, copy, evicts);
                        costed.insert(pg);
                        gap -= own;
                        let is_copy = !(self.cfg.out_fault_ns.is_some() && fresh[k].contains(&pg));
                        taken.push((pg, mv, is_copy));
                        if is_copy {
                            margin += own + l - cost;
                        }
                    } else {
                        refused_pages += 1;
                    }
                    ok
                })
                .collect();
            if fixed > 0.0 {
                // the part of the call's fixed cost the slack leaves exposed
                let exposed = (clock0.busy_ns + fixed - sl.max(0.0)).clamp(0.0, fixed);
                let copies = taken.iter().filter(|x| x.2).count();
                if copies == 0 || margin <= exposed {
                    // no call, or one whose pages do not pay for it: the
                    // copy pages stay, the helper takes only the rest
                    refused_pages += copies as u64;
                    let dropped: PageSet = taken.iter().filter(|x| x.2).map(|x| x.0).collect();
                    keep.retain(|x| !dropped.contains(&x.0));
                    clock = clock0;
                    for &(pg, mv, is_copy) in &taken {
                        if is_copy {
                            costed.remove(&pg);
                        } else {
                            let evicts = clock.free_pages == 0;
                            clock.take_fresh(mv, self.cfg.copy_ns_per_page.unwrap_or(0.0), evicts);
                        }
                    }
                }
            }
            if hot_here > 0 && keep.is_empty() && self.cfg.copy_ns_per_page.is_some() {
                refused_batches += 1;
            }
            hot.push(keep);
            profs.push(p);
        }
        *busy = clock.busy_ns;
        self.stats.refused_pages += refused_pages;
        self.stats.refused_batches += refused_batches;
        let avail = self.dram.free() + self.dram.evictable(&guard);
        let want: usize = hot.iter().map(Vec::len).sum();
        let avail = avail.min(want);
        let unit = avail.div_ceil(self.cfg.max_units.max(1)).max(1);
        let cap_units = avail / unit;
        let same_type = group.iter().all(|t| t.task_type() == ty);
        let units = if same_type {
            split_even(group.len(), cap_units)
        } else {
            let curves: Vec<Vec<f64>> = profs
                .iter()
                .zip(&hot)
                .zip(&base_slow)
                .map(|((p, h), &slow0)| {
                    let n = h.len().div_ceil(unit);
                    let mut slow = slow0;
                    let mut c = vec![self.model.t_partial(p, slow)];
                    for u in 0..n {
                        for x in h.iter().skip(u * unit).take(unit) {
                            slow -= x.1;
                        }
                        c.push(self.model.t_partial(p, slow));
                    }
                    c
                })
                .collect();
            split_dp(&curves, cap_units).units
        };
        // Evict, then promote, head first.
        let mut batches = Vec::new();
        let mut promote: Vec<(u64, Vec<u64>)> = Vec::new();
        let mut dedup = PageSet::default();
        for ((t, h), &u) in group.iter().zip(&hot).zip(&units) {
            let pages: Vec<u64> = h
                .iter()
                .map(|x| x.0)
                .filter(|p| dedup.insert(*p))
                .take(u * unit)
                .collect();
            promote.push((t.id, pages));
        }
        let need: usize = promote.iter().map(|p| p.1.len()).sum();
        let ev = self.dram.evict_for(need, &guard);
        if !ev.is_empty() {
            self.stats.evicted += ev.len() as u64;
            self.stats.batches += 1;
            batches.push(Batch {
                task: 0,
                pages: ev,
                to_dram: false,
                fresh: false,
            });
        }
        for ((id, mut pages), fr) in promote.into_iter().zip(&fresh) {
            let room = self.dram.free();
            pages.truncate(room);
            self.dram.admit(&pages);
            // one copy batch and one no-copy batch per task
            let (no_copy, copy): (Vec<u64>, Vec<u64>) =
                pages.into_iter().partition(|p| fr.contains(p));
            for (pages, fresh) in [(copy, false), (no_copy, true)] {
                if !pages.is_empty() {
                    self.stats.promoted += pages.len() as u64;
                    self.stats.batches += 1;
                    if fresh {
                        self.stats.promoted_fresh += pages.len() as u64;
                    }
                    batches.push(Batch {
                        task: id,
                        pages,
                        to_dram: true,
                        fresh,
                    });
                }
            }
        }
        batches
    }

    /// Pages already in DRAM when the program starts (first touch): see
    /// [`Residency::adopt`].
    pub fn adopt(&mut self, pages: &[u64]) {
        self.dram.adopt(pages);
    }

    /// A promotion failed in the shell: forget those pages.
    pub fn failed(&mut self, pages: &[u64]) {
        self.dram.release(pages);
    }

    /// The program freed these pages (a `free` after their last use, as
    /// KASTORS's Strassen frees a node's temporaries after its taskwait):
    /// their DRAM is free again and nothing evicts them (no write-back of
    /// dead data). Not in the thesis, which keeps no lifetimes (§4.3.5).
    pub fn freed(&mut self, pages: &[u64]) {
        self.dram.release(pages);
    }

    /// `task` finished after `ns`. A representative's profile is stored
    /// (`samples`: per-page counts if a sampler ran, else uniform; its time
    /// is raised to all-slow by the fallback model for the sampled accesses
    /// to pages that were in DRAM); every task's DRAM pages join the FIFO.
    pub fn completed(&mut self, task: &Task, ns: f64, samples: Option<&[(u64, f64)]>) {
        self.completed_counted(task, ns, samples, None);
    }

    /// [`Planner::completed`] with the task's hardware counters where they
    /// were read (`memtamer_tahoe::counters`): a representative's go into
    /// its type's profile, where the model's counter path
    /// ([`HybridModel::counter_t_dram`]) predicts T_c_DRAM from them when
    /// it has a counter model; other instances' counters are not used.
    pub fn completed_counted(
        &mut self,
        task: &Task,
        ns: f64,
        samples: Option<&[(u64, f64)]>,
        counters: Option<Counters>,
    ) {
        let ty = task.task_type();
        if self.profiling.get(&ty) == Some(&task.id) {
            self.profiling.remove(&ty);
            let page = self.cfg.page;
            let prof = match samples {
                Some(s) => TypeProfile::from_samples(task, s, page, ns, counters)
                    .unwrap_or_else(|_| TypeProfile::uniform(task, page, ns, counters)),
                None => TypeProfile::uniform(task, page, ns, counters),
            };
            // A representative that found some of its pages in DRAM (adopted
            // first-touch pages): its time raised to all-slow by the fallback
            // inverted, T_slow = T_measured + beta * (accesses served by
            // DRAM), Eq. 4.4's inversion. Not the parallel form's: its
            // inversion divides by the slow share, which amplifies the
            // representative's co-runner load by 1/p (measured: heat's
            // in-run error 0.4% -> 29.6% at 1/4 bandwidth; docs/notebook/tahoe.md
            // "The representative's placement and the instances' times").
            let dram_acc: f64 = samples
                .unwrap_or_default()
                .iter()
                .filter(|(p, _)| self.dram.contains(*p))
                .map(|x| x.1)
                .sum();
            let t_slow = ns + self.model.fallback.beta_ns * dram_acc;
            let prof = TypeProfile {
                t_slow_ns: t_slow,
                ..prof
            };
            self.db.insert(ty.clone(), prof);
            if self.cfg.refine {
                self.refined.insert(ty, (t_slow, 1));
            }
        } else if self.cfg.refine {
            self.refine(task, ns);
        }
        if self.dram.used() > 0 {
            self.dram.executed(&task.footprint(self.cfg.page));
        }
    }

    /// [`PlanConfig::refine`]: folds instance `task`'s measured `ns` into
    /// its type's all-slow time.
    fn refine(&mut self, task: &Task, ns: f64) {
        let Some(p) = self.db.get(task) else {
            return;
        };
        let slow = self.slow_accesses(p, task);
        let Some(est) = invert_t_slow(&self.model, p, slow, ns) else {
            return;
        };
        let ty = task.task_type();
        let e = self.refined.entry(ty).or_insert((p.t_slow_ns, 1));
        e.0 += est;
        e.1 += 1;
        let mean = e.0 / e.1 as f64;
        self.db.set_t_slow(task, mean);
    }
}

#[path = "plan_check.rs"]
mod check;

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

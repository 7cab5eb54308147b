//! Tahoe and the full-knowledge reference as [`TaskPolicy`]s.
//!
//! * [`TahoePolicy`] runs the *same* pure code as the OMPT tool
//!   (`memtamer_tahoe::plan::Planner`: representative profiling and
//!   re-basing, the hybrid model's fallback with Eq. 4.4, the DP split
//!   among co-running tasks, the 10-entry FIFO eviction, one batch per
//!   task). All pages start in the slow tier (thesis §4.3.1). A
//!   representative's profile is its per-page line counts (a sampler with
//!   period 1). It decides when a task enters the ready queue (§4.3.3), so
//!   the helper copies while other tasks run; a task whose type became
//!   known only after it was queued is decided when it starts, its own
//!   batch then on its worker. With a copy cost it promotes only pages
//!   whose predicted saving (this task and later tasks in creation order
//!   within the DRAM reuse distance) exceeds the copy
//!   (`memtamer_tahoe::benefit`). With sibling scheduling (§4.3.6, on
//!   unless [`TahoePolicy::without_siblings`]) it serves the ready queue
//!   with the tasks of one parent consecutive
//!   (`memtamer_tahoe::sched::sibling_order`).
//! * [`Oracle`]: knows the whole task graph. When a worker takes a task,
//!   it makes room for the blocks of that task and of the next
//!   `lookahead` ready tasks by Belady's MIN rule at block granularity:
//!   the resident block whose next use (in task creation order, among tasks
//!   not yet started) lies farthest is evicted, and only for a block used
//!   sooner. Its initial placement is the blocks in order of first use.
//!   MIN minimises the number of block fetches, not time: a block used
//!   once costs a copy that no later use repays. [`Oracle::checked`] adds
//!   a cost test ([`FETCH_PASSES`]), and the evaluation reports as "the
//!   oracle" the best of the two MIN runs, unmanaged and static (a
//!   full-knowledge system can always choose to do nothing), naming which.
//!   It is a reference, not a proven optimum.

use super::baselines::FirstTouch;
pub use super::oracle::{Oracle, FETCH_PASSES, WIDE_FETCH_PASSES};
use crate::workload::taskgraph::{Arg, Dispatch, Layout, Mode, Pattern, TaskGraph, TaskPolicy};
use crate::workload::tiered::{MoveReq, TierSpace, PAGE};
use crate::workload::NS;
use memtamer_core::unimem::Tier;
// FUTURE_SCAN: created, not yet started tasks scanned for reuse (the
// planner stops earlier, at the DRAM reuse distance), the OMPT tool's cap too
use memtamer_tahoe::benefit::{measured_copy_ns, queue_starts, slack_ns, FUTURE_SCAN};
use memtamer_tahoe::model::{HybridModel, PartialForm};
use memtamer_tahoe::plan::{Batch, Decision, PlanConfig, PlanStats, Planner};
use memtamer_tahoe::task::{Access, DataObject, Task};

/// Code address standing for task type `ty` (the type key's first part).
fn code(ty: usize) -> u64 {
    0x40_0000 + 0x100 * ty as u64
}

/// The runtime's view of task `t` as the OMPT tool builds it (ids from 1).
pub fn tahoe_task(g: &TaskGraph, layout: &Layout, t: usize) -> Task {
    Task {
        id: t as u64 + 1,
        code: code(g.tasks[t].ty),
        objects: g.tasks[t]
            .args
            .iter()
            .map(|a| DataObject {
                addr: layout.base(a.block),
                len: g.blocks[a.block].bytes,
                access: match a.mode {
                    Mode::In => Access::In,
                    Mode::Out if overwrites(&g.tasks[t].args, a) => Access::OutWhole,
                    Mode::Out => Access::Out,
                    Mode::InOut => Access::InOut,
                },
            })
            .collect(),
    }
}

/// Whether argument `a` of a task with arguments `args` overwrites its
/// block whole: an `out` dependence whose access description writes every
/// line of the block (a sequential pattern of at least one pass: the
/// worker writes lines 0, 1, ... of the block, [`Pattern::Seq`]) and that
/// is the task's only argument on the block. A random pattern or a
/// partial pass is "not known", and the block is copied. The planner
/// treats such an object as `out` unless its no-copy ablation is on
/// (`PlanConfig::out_fault_ns`).
pub fn overwrites(args: &[Arg], a: &Arg) -> bool {
    a.mode == Mode::Out
        && a.pattern == Pattern::Seq
        && a.passes >= 1.0
        && args.iter().filter(|x| x.block == a.block).count() == 1
}

/// Ready tasks the planner sees behind the head (it uses the first known
/// `corun - 1` of them; the cap only bounds the conversion work).
const LOOKAHEAD_SCAN: usize = 64;
/// The ready-queue look-ahead planned at entry: as many queued tasks as
/// there are workers (the next wave to start). Tasks further back are
/// planned when they reach it.
const WINDOW: usize = super::WORKERS as usize;

/// Instances of a type the planner may pass over as its representative
/// because part of their footprint is in DRAM
/// (`memtamer_tahoe::plan::PlanConfig::rep_skip`): two waves of the
/// workers, so that a type is profiled, with its data in the slow tier as
/// the thesis's representative (§4.3.3), by its third wave at the latest.
pub const REP_SKIP: usize = 2 * super::WORKERS as usize;

pub use memtamer_tahoe::learning::ModelLearning;

/// Tahoe (see the module doc).
#[derive(Debug)]
pub struct TahoePolicy {
    planner: Planner,
    layout: Option<Layout>,
    /// Per task: taken by a worker.
    started: Vec<bool>,
    /// Per task: planned at ready-queue entry.
    planned: Vec<bool>,
    /// Cost-benefit check on.
    check: bool,
    /// Start from the OS's first-touch placement (as unmanaged does)
    /// instead of all pages in the slow tier.
    first_touch: bool,
    /// The OS's first touch of the arrays the program first touches in its
    /// tasks, when the run-time first touch goes to free DRAM
    /// ([`TahoePolicy::with_os_touch`]); None: those start in the slow
    /// tier (§4.3.5).
    os_touch: Option<FirstTouch>,
    /// Blocks with demotions queued on the helper by ready-queue planning.
    evicting: Vec<usize>,
    /// Sibling scheduling of the ready queue (thesis §4.3.6).
    siblings: bool,
    /// Out blocks written whole placed without a copy: the page-fault
    /// handling time per page, ns ([`TahoePolicy::with_out_no_copy`]).
    out_fault_ns: Option<f64>,
}

impl TahoePolicy {
    /// Tahoe with `dram_pages` of DRAM and the fallback model's `beta_ns`
    /// (ns saved per line access moved to DRAM), `corun` co-runners, and
    /// the cost-benefit check's copy cost per page (None: no check).
    ///
    /// `first_touch`: the program's data starts where the OS put it at
    /// first touch (the unmanaged placement, [`FirstTouch`]), and Tahoe
    /// adopts those pages as resident, first in its eviction order;
    /// otherwise every page starts in the slow tier (thesis §4.3.1).
    /// Arrays the program first touches inside its tasks
    /// ([`TaskGraph::task_touched`]) start in the slow tier either way
    /// ("All memory pages are initially allocated on NVM", §4.3.5): the
    /// DRAM the initialisation leaves free is Tahoe's to fill.
    /// `form`: the partial-placement model (Eq. 4.4 or the parallel-tiers
    /// form, docs/notebook/tahoe.md "The partial-placement form").
    pub fn new(
        dram_pages: usize,
        beta_ns: f64,
        corun: usize,
        copy_ns_per_page: Option<f64>,
        first_touch: bool,
        form: PartialForm,
    ) -> Self {
        let (rep_skip, refine) = ModelLearning::default().planner_knobs(REP_SKIP);
        let cfg = PlanConfig {
            page: PAGE,
            corun,
            copy_ns_per_page,
            rep_skip,
            refine,
            ..PlanConfig::default()
        };
        let model = HybridModel::fallback_only(beta_ns).with_form(form);
        TahoePolicy {
            planner: Planner::new(cfg, model, dram_pages),
            layout: None,
            started: Vec::new(),
            planned: Vec::new(),
            check: copy_ns_per_page.is_some(),
            first_touch,
            os_touch: None,
            evicting: Vec::new(),
            siblings: true,
            out_fault_ns: None,
        }
    }

    /// The same Tahoe placing the pages of `out` blocks its tasks write
    /// whole in DRAM without a copy (discard + a fault of `fault_ns` + the
    /// zeroing's DRAM writes; [`overwrites`],
    /// `memtamer_tahoe::plan::PlanConfig::out_fault_ns`): an ablation
    /// beyond the thesis (docs/notebook/tahoe.md, "Out blocks placed without a
    /// copy"). Its name gains `-outnocopy`.
    pub fn with_out_no_copy(mut self, fault_ns: f64) -> Self {
        self.planner.set_out_fault_ns(Some(fault_ns));
        self.out_fault_ns = Some(fault_ns);
        self
    }

    /// The same Tahoe under an OS that also places the program's run-time
    /// first touches ([`TaskGraph::task_touched`] arrays: Strassen's C and
    /// temporaries) in free DRAM by unmanaged's rule ([`FirstTouch`]): when
    /// a worker takes the first task naming such a block, its pages not
    /// already placed by Tahoe go to DRAM while DRAM (the tier's and
    /// Tahoe's budget) has room, and Tahoe adopts them as it adopts the
    /// initial placement (evictable, first in its eviction order until a
    /// task uses them). A promotion Tahoe plans for a page not yet touched
    /// is a zero-filled page on the DRAM node (a fault, no copy from the
    /// slow tier): the page has no contents yet. An ablation: the thesis
    /// starts every page in the slow tier ("All memory pages are initially
    /// allocated on NVM", §4.3.5; "Initially, all data objects (or memory
    /// pages) in all tasks are on NVM", §4.3); docs/notebook/tahoe.md "Run-time
    /// first touch under Tahoe". Only with the first-touch start.
    pub fn with_os_touch(mut self) -> Self {
        if self.first_touch {
            self.os_touch = Some(FirstTouch::default());
        }
        self
    }

    /// The OS's first touch of `head`'s blocks not yet touched (see
    /// [`TahoePolicy::with_os_touch`]); Tahoe adopts the pages placed.
    fn os_first_touch(&mut self, g: &TaskGraph, tier: &mut TierSpace, head: usize) {
        let (Some(ft), Some(layout)) = (self.os_touch.as_mut(), self.layout.as_ref()) else {
            return;
        };
        let dram = self.planner.dram();
        let mut room = dram.free();
        let skip = |b: usize, p: u64| dram.contains(layout.page(b, p * PAGE));
        let mut placed = Vec::new();
        for a in &g.tasks[head].args {
            placed.extend(ft.touch_where(g, tier, a.block, &mut room, &skip));
        }
        let pages: Vec<u64> = placed
            .iter()
            .map(|&(b, p)| layout.page(b, p * PAGE))
            .collect();
        self.planner.adopt(&pages);
    }

    /// The same Tahoe with the check's saving and traffic priced per load
    /// and per store (`memtamer_tahoe::benefit::RwSlopes`, fitted
    /// leave-one-out like beta); None: one slope per type, the check before
    /// branch `tahoera` (docs/notebook/tahoe.md, "The check and later tasks'
    /// reuse").
    pub fn with_rw_slopes(mut self, rw: Option<memtamer_tahoe::benefit::RwSlopes>) -> Self {
        self.planner.set_rw_slopes(rw);
        self
    }

    /// The same Tahoe with its all-slow times from `learn` (the default is
    /// [`ModelLearning::Refined`]).
    pub fn with_learning(mut self, learn: ModelLearning) -> Self {
        let (skip, refine) = learn.planner_knobs(REP_SKIP);
        self.planner.set_learning(skip, refine);
        self
    }

    /// Queues the moves of `b` on the helper, or returns them for the
    /// worker (`own`); a no-copy batch marks its pages first, as does a
    /// promotion of pages the OS has not first touched yet (`os`, the
    /// `with_os_touch` ablation: a zero-filled page, nothing to copy).
    fn moves_of(
        layout: &Layout,
        tier: &mut TierSpace,
        b: &Batch,
        os: Option<&FirstTouch>,
    ) -> Vec<MoveReq> {
        let to = if b.to_dram { Tier::Dram } else { Tier::Slow };
        let untouched = |blk: usize| os.is_some_and(|ft| !ft.touched(blk));
        if b.fresh || (b.to_dram && os.is_some()) {
            for (blk, p) in b.pages.iter().filter_map(|&p| layout.locate(p)) {
                if b.fresh || untouched(blk) {
                    tier.discard_on_promote(blk, p);
                }
            }
        }
        layout.moves(&b.pages, to)
    }

    /// The same Tahoe without sibling scheduling: the ready queue stays
    /// FIFO (thesis Figure 4.6's Tahoe before "optimized scheduling"; its
    /// name gains `-nosib`).
    pub fn without_siblings(self) -> Self {
        TahoePolicy {
            siblings: false,
            ..self
        }
    }

    /// Created, not yet started tasks after task `after` (creation order).
    fn future(&self, g: &TaskGraph, layout: &Layout, after: usize) -> Vec<Task> {
        (after + 1..g.tasks.len())
            .filter(|&t| !self.started[t])
            .take(FUTURE_SCAN)
            .map(|t| tahoe_task(g, layout, t))
            .collect()
    }

    /// The start-time decision for `head` (see the module doc).
    fn decide_head(
        &mut self,
        g: &TaskGraph,
        tier: &mut TierSpace,
        head: usize,
        ready: &[usize],
        active: &[usize],
    ) -> Dispatch {
        let Some(layout) = &self.layout else {
            return Dispatch::default();
        };
        let h = tahoe_task(g, layout, head);
        if let Some(s) = self.started.get_mut(head) {
            *s = true;
        }
        if self.planned.get(head) == Some(&true) {
            // decided when it entered the ready queue: its copies are on
            // the helper (or done); the worker waits for what is left. Its
            // own moves the helper has not started, it does itself, after
            // the queued demotions that make room for them (so DRAM never
            // holds a promotion before the eviction planned for it).
            let blocks: Vec<usize> = g.tasks[head].args.iter().map(|a| a.block).collect();
            let mine = tier.steal_queued(&blocks);
            let mut own = Vec::new();
            if !mine.is_empty() {
                own = tier.steal_queued(&std::mem::take(&mut self.evicting));
                own.extend(mine);
            }
            return Dispatch {
                own,
                predicted_ns: self.planner.predict(&h),
                profile: false,
            };
        }
        let future = self.future(g, layout, head);
        let r: Vec<Task> = ready
            .iter()
            .take(LOOKAHEAD_SCAN)
            .map(|&t| tahoe_task(g, layout, t))
            .collect();
        let a: Vec<Task> = active.iter().map(|&t| tahoe_task(g, layout, t)).collect();
        match self.planner.decide_ahead(&h, &r, &a, &future) {
            Decision::Profile => Dispatch {
                own: Vec::new(),
                predicted_ns: None,
                profile: true,
            },
            Decision::Wait => Dispatch::default(),
            Decision::Place {
                batches,
                predicted_ns,
            } => {
                // evictions (task 0) and the head's batch: on the worker,
                // before the task runs; look-ahead batches: the helper
                let mut own = Vec::new();
                for b in &batches {
                    let moves = Self::moves_of(layout, tier, b, self.os_touch.as_ref());
                    super::route_moves(b.task == 0 || b.task == h.id, moves, &mut own, tier);
                }
                Dispatch {
                    own,
                    predicted_ns: Some(predicted_ns),
                    profile: false,
                }
            }
        }
    }

    /// Plans, at ready-queue entry (§4.3.3), the tasks of the look-ahead
    /// (the first [`WINDOW`] of `order`, the ready queue in service order)
    /// not yet planned; their copies go to the helper. Guarded are the
    /// `running` tasks, the look-ahead and the queued tasks behind it
    /// whose footprints fit half the DRAM, not the whole queue: the thesis
    /// guards "the next task in readyQueue" (§4.3.5), and a long queue
    /// (RandomAccess has a whole round ready at once) would otherwise
    /// guard every page.
    fn plan_window(
        &mut self,
        g: &TaskGraph,
        tier: &mut TierSpace,
        order: &[usize],
        running: &[usize],
    ) {
        let Some(layout) = self.layout.take() else {
            return;
        };
        let window = &order[..order.len().min(WINDOW)];
        let todo: Vec<usize> = window
            .iter()
            .copied()
            .filter(|&t| !self.planned[t])
            .collect();
        if let Some(&first) = todo.iter().min() {
            let n: Vec<Task> = todo.iter().map(|&t| tahoe_task(g, &layout, t)).collect();
            // guarded: the running tasks, the look-ahead, and the queued
            // tasks behind it while their footprints fit half the DRAM
            // (they run before the DRAM turns over; the other half is
            // what the new plans may take)
            let mut q: Vec<Task> = running.iter().map(|&t| tahoe_task(g, &layout, t)).collect();
            let half = self.planner.dram().capacity() / 2;
            let mut pages = 0usize;
            for (i, &t) in order.iter().enumerate() {
                if todo.contains(&t) {
                    continue;
                }
                let task = tahoe_task(g, &layout, t);
                pages += task.footprint(PAGE).len();
                if i >= window.len() && pages > half {
                    break;
                }
                q.push(task);
            }
            let slack = self.slack(g, &layout, tier, order, running, &todo);
            let future = self.future(g, &layout, first);
            let (batches, planned) = self.planner.plan_ready_slack(&n, &slack, &q, &future);
            for b in &batches {
                for m in Self::moves_of(&layout, tier, b, self.os_touch.as_ref()) {
                    if !b.to_dram && !self.evicting.contains(&m.obj) {
                        self.evicting.push(m.obj);
                    }
                    tier.request(m);
                }
            }
            for id in planned {
                if let Some(p) = self.planned.get_mut(id as usize - 1) {
                    *p = true;
                }
            }
        }
        self.layout = Some(layout);
    }

    /// Look-ahead slack of each task of `todo` (thesis Eq. 3.3's
    /// `mem_comp_overlap`): the predicted time until a worker takes it
    /// ([`memtamer_tahoe::benefit::queue_starts`]: idle workers take the
    /// queue's head now, running tasks free their workers at the order
    /// statistics of their predicted times, the queue is served in its
    /// order; Eq. 4.4 under the current residency, 0 for unknown types),
    /// less the helper's backlog (the queued copies run first).
    fn slack(
        &self,
        g: &TaskGraph,
        layout: &Layout,
        tier: &TierSpace,
        order: &[usize],
        running: &[usize],
        todo: &[usize],
    ) -> Vec<f64> {
        let Some(copy) = self.planner.copy_ns() else {
            return Vec::new();
        };
        let pred = |t: usize| {
            self.planner
                .predict(&tahoe_task(g, layout, t))
                .unwrap_or(0.0)
        };
        let run: Vec<f64> = running.iter().map(|&t| pred(t)).collect();
        let queued: Vec<f64> = order.iter().map(|&t| pred(t)).collect();
        let starts = queue_starts(&run, &queued, super::WORKERS as usize);
        let backlog = tier.queued_pages() as f64 * copy;
        todo.iter()
            .map(|t| {
                order
                    .iter()
                    .position(|x| x == t)
                    .map_or(0.0, |i| slack_ns(starts[i], backlog))
            })
            .collect()
    }

    /// Feeds the check this run's measured copy time per page once enough
    /// pages were copied (thesis Eq. 3.3's copy bandwidth, as this
    /// program's load leaves it to the copies).
    fn measure_copy(&mut self, tier: &TierSpace) {
        let st = tier.stats();
        // the OMPT tool's rule too (memtamer_tahoe::benefit)
        if let Some(c) = measured_copy_ns(st.copy_ps as f64 / NS as f64, st.pages_moved) {
            self.planner.set_copy_ns(c);
        }
    }

    /// The planner's counters.
    pub fn stats(&self) -> PlanStats {
        self.planner.stats()
    }

    /// Pages Tahoe counts as in DRAM (its residency, moves planned
    /// included): what tests check its adoption of first touches against.
    pub fn dram_used(&self) -> usize {
        self.planner.dram().used()
    }
}

impl TaskPolicy for TahoePolicy {
    fn name(&self) -> String {
        let base = if self.check { "tahoe" } else { "tahoe-nocheck" };
        let out = if self.out_fault_ns.is_some() {
            "-outnocopy"
        } else {
            ""
        };
        if self.siblings {
            format!("{base}{out}")
        } else {
            format!("{base}{out}-nosib")
        }
    }

    fn order(&self, g: &TaskGraph, queue: &[usize]) -> Option<Vec<usize>> {
        self.siblings
            .then(|| memtamer_tahoe::sched::reorder(queue, |t| g.tasks[t].parent))
    }

    fn start(&mut self, g: &TaskGraph, tier: &mut TierSpace) {
        let layout = Layout::new(g);
        if let Some(f) = self.out_fault_ns {
            tier.set_fault_ps((f * NS as f64).round() as u64);
        }
        if self.first_touch {
            let mut ft = FirstTouch::default();
            ft.start(g, tier);
            if self.os_touch.is_some() {
                self.os_touch = Some(ft);
            }
            let pages: Vec<u64> = (0..g.blocks.len())
                .flat_map(|b| {
                    let o = &tier.objects()[b];
                    (0..o.page_count())
                        .filter(move |&p| o.tier_at(p * PAGE) == Tier::Dram)
                        .map(move |p| (b, p))
                })
                .map(|(b, p)| layout.page(b, p * PAGE))
                .collect();
            self.planner.adopt(&pages);
        }
        self.layout = Some(layout);
        self.started = vec![false; g.tasks.len()];
        self.planned = vec![false; g.tasks.len()];
    }

    fn ready(
        &mut self,
        g: &TaskGraph,
        tier: &mut TierSpace,
        _newly: &[usize],
        queue: &[usize],
        active: &[usize],
    ) {
        self.measure_copy(tier);
        self.plan_window(g, tier, queue, active);
    }

    fn dispatch(
        &mut self,
        g: &TaskGraph,
        tier: &mut TierSpace,
        head: usize,
        ready: &[usize],
        active: &[usize],
    ) -> Dispatch {
        self.measure_copy(tier);
        self.os_first_touch(g, tier, head);
        let d = self.decide_head(g, tier, head, ready, active);
        // the queue moved up: plan the tasks that entered the look-ahead
        let running: Vec<usize> = active.iter().copied().chain([head]).collect();
        self.plan_window(g, tier, ready, &running);
        d
    }

    /// Tahoe forgets the freed arrays' pages (their DRAM is free again).
    fn freed(&mut self, g: &TaskGraph, _tier: &mut TierSpace, arrays: &[usize]) {
        let Some(layout) = &self.layout else {
            return;
        };
        let pages: Vec<u64> = arrays
            .iter()
            .flat_map(|&a| g.array_blocks(a))
            .flat_map(|b| {
                (0..g.blocks[b].bytes.div_ceil(PAGE)).map(move |p| layout.page(b, p * PAGE))
            })
            .collect();
        self.planner.freed(&pages);
    }

    fn report(&self) -> Vec<(&'static str, f64)> {
        let s = self.planner.stats();
        vec![
            ("decisions", s.decisions as f64),
            ("profiled", s.profiled as f64),
            ("promoted_pages", s.promoted as f64),
            ("promoted_fresh_pages", s.promoted_fresh as f64),
            ("evicted_pages", s.evicted as f64),
            ("batches", s.batches as f64),
            ("rep_skipped", s.rep_skipped as f64),
        ]
    }

    fn completed(
        &mut self,
        g: &TaskGraph,
        _tier: &mut TierSpace,
        task: usize,
        ns: f64,
        profile: Option<&[(u64, f64)]>,
    ) {
        if let Some(layout) = &self.layout {
            let t = tahoe_task(g, layout, task);
            self.planner.completed(&t, ns, profile);
        }
    }
}

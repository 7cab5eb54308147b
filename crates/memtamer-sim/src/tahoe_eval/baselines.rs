//! The systems Tahoe is compared with (thesis §4.4 "Systems compared"),
//! as [`TaskPolicy`]s of the task runtime:
//!
//! * [`Fixed`]: references with unlimited DRAM: all data in the slow tier,
//!   all in DRAM, or pages alternating between the tiers (the round-robin
//!   run of the thesis's Table 4.3 model validation). Nothing moves.
//! * [`FirstTouch`]: the unmanaged HMS. Linux places each page where it is
//!   first touched, in DRAM while DRAM has room. The programs initialise
//!   their arrays serially in allocation order, so DRAM holds the first
//!   pages of the first arrays; arrays a program does not initialise
//!   ([`TaskGraph::task_touched`]: Strassen's C and temporaries) are first
//!   touched by the task that first names them and take the DRAM left
//!   then. Nothing moves afterwards.
//! * [`StaticHot`]: one static placement for the whole run (X-mem's kind
//!   of decision), with full knowledge: the pages with the most accesses
//!   per page over the whole program, placed before it starts.
//! * [`UnimemTasks`]: Unimem with task regions as phases (the thesis's
//!   comparison, since most benchmarks have no MPI phases), driven by the
//!   same planner as the MPI runtime (`memtamer_core::unimem`).

use crate::workload::taskgraph::{Dispatch, Layout, TaskGraph, TaskPolicy};
use crate::workload::tiered::{MoveReq, TierSpace, PAGE};
use memtamer_core::unimem::model::{ObjPhase, PhaseProfile, Platform as UPlatform};
use memtamer_core::unimem::plan::{decide, initial_placement_max_refs, Plan, Problem};
use memtamer_core::unimem::{ObjId, Tier};
use std::collections::{BTreeMap, BTreeSet};

/// Where a [`Fixed`] reference keeps the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixedKind {
    /// Every page in the slow tier.
    AllSlow,
    /// Every page in DRAM (capacity ignored).
    AllDram,
    /// Even pages (of each block) in DRAM, odd pages in the slow tier.
    RoundRobin,
}

/// A reference placement; nothing moves.
#[derive(Clone, Copy, Debug)]
pub struct Fixed(pub FixedKind);

impl TaskPolicy for Fixed {
    fn name(&self) -> String {
        match self.0 {
            FixedKind::AllSlow => "slow-only",
            FixedKind::AllDram => "dram-only",
            FixedKind::RoundRobin => "round-robin",
        }
        .into()
    }

    fn start(&mut self, g: &TaskGraph, tier: &mut TierSpace) {
        for (b, blk) in g.blocks.iter().enumerate() {
            for p in 0..blk.bytes.div_ceil(PAGE) {
                let t = match self.0 {
                    FixedKind::AllSlow => Tier::Slow,
                    FixedKind::AllDram => Tier::Dram,
                    FixedKind::RoundRobin if p % 2 == 0 => Tier::Dram,
                    FixedKind::RoundRobin => Tier::Slow,
                };
                tier.place_page(b, p, t);
            }
        }
    }
}

/// Unmanaged first touch (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct FirstTouch {
    /// Per block: its pages have been touched (placed where first touch
    /// put them); the blocks of [`TaskGraph::task_touched`] arrays are
    /// touched by the first task that names them.
    touched: Vec<bool>,
}

impl FirstTouch {
    /// Places the pages of block `b` in DRAM while DRAM has room, as an
    /// OS that allocates at first touch on the DRAM node until it is full
    /// (thesis §4.4: "Linux allocates memory with no knowledge of the
    /// underlying memory types but is restricted by a limited DRAM size").
    fn touch(&mut self, g: &TaskGraph, tier: &mut TierSpace, b: usize) {
        let mut room = usize::MAX;
        self.touch_where(g, tier, b, &mut room, &|_, _| false);
    }

    /// `touch` for a runtime on top of the OS (the simulated
    /// Tahoe's `--tahoe-touch os` ablation): block `b`'s first touch puts
    /// its pages in DRAM while DRAM has room and `room` (the runtime's own
    /// free DRAM pages, decremented) lasts, skipping the pages `skip(b, p)`
    /// names (those the runtime already placed: a queued or finished
    /// promotion). Returns the pages it placed, for the runtime to adopt.
    /// A block already touched (or out of range) places nothing.
    pub fn touch_where(
        &mut self,
        g: &TaskGraph,
        tier: &mut TierSpace,
        b: usize,
        room: &mut usize,
        skip: &dyn Fn(usize, u64) -> bool,
    ) -> Vec<(usize, u64)> {
        let mut placed = Vec::new();
        // a block out of range (no `start` yet) is left where it is
        match self.touched.get_mut(b) {
            Some(t) if !*t => *t = true,
            _ => return placed,
        }
        for p in 0..g.blocks[b].bytes.div_ceil(PAGE) {
            if skip(b, p) || tier.objects()[b].tier_at(p * PAGE) == Tier::Dram {
                continue;
            }
            if tier.dram_bytes() + PAGE > tier.capacity() || *room == 0 {
                break;
            }
            tier.place_page(b, p, Tier::Dram);
            *room -= 1;
            placed.push((b, p));
        }
        placed
    }

    /// Whether block `b` has been first touched (at the start, or by a
    /// task); false for a block out of range.
    pub fn touched(&self, b: usize) -> bool {
        self.touched.get(b).copied().unwrap_or(false)
    }
}

impl TaskPolicy for FirstTouch {
    fn name(&self) -> String {
        "unmanaged".into()
    }

    /// The initialisation: the arrays the program writes before its tasks,
    /// in allocation order.
    fn start(&mut self, g: &TaskGraph, tier: &mut TierSpace) {
        self.touched = vec![false; g.blocks.len()];
        for (b, blk) in g.blocks.iter().enumerate() {
            if g.initialised(blk.array) {
                self.touch(g, tier, b);
            }
        }
    }

    /// A task's first use of a block the program did not initialise:
    /// its pages go to DRAM if room is left, before the task accesses them.
    fn dispatch(
        &mut self,
        g: &TaskGraph,
        tier: &mut TierSpace,
        head: usize,
        _ready: &[usize],
        _active: &[usize],
    ) -> Dispatch {
        for a in &g.tasks[head].args {
            self.touch(g, tier, a.block);
        }
        Dispatch::default()
    }
}

/// Expected line accesses per global page over a set of tasks (uniform
/// over each argument's pages, as the patterns generate them).
pub fn page_accesses(
    g: &TaskGraph,
    layout: &Layout,
    tasks: impl Iterator<Item = usize>,
) -> BTreeMap<u64, f64> {
    let mut m = BTreeMap::new();
    for t in tasks {
        for a in &g.tasks[t].args {
            let pages = g.blocks[a.block].bytes.div_ceil(PAGE);
            let per = g.arg_lines(a) as f64 / pages as f64;
            for p in 0..pages {
                *m.entry(layout.page(a.block, p * PAGE)).or_insert(0.0) += per;
            }
        }
    }
    m
}

/// Static placement of the hottest pages of the whole run (see the module doc).
#[derive(Clone, Copy, Debug)]
pub struct StaticHot;

impl TaskPolicy for StaticHot {
    fn name(&self) -> String {
        "static".into()
    }

    fn start(&mut self, g: &TaskGraph, tier: &mut TierSpace) {
        let layout = Layout::new(g);
        let mut v: Vec<(u64, f64)> = page_accesses(g, &layout, 0..g.tasks.len())
            .into_iter()
            .collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for &(p, _) in v.iter().take((tier.capacity() / PAGE) as usize) {
            if let Some((b, i)) = layout.locate(p) {
                tier.place_page(b, i, Tier::Dram);
            }
        }
    }
}

/// What Unimem's profiling of the first iteration gives it, per task type
/// (= phase): the phase's time per iteration, measured on the all-slow
/// reference run, in seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseTimes(pub Vec<f64>);

/// Unimem with task types as phases. Objects are the program's arrays.
/// Profile: per phase, the line accesses to each array per iteration (a
/// sampler with period 1) and the phase time. The planner (phase-local vs
/// cross-phase global search, Eq. 3.1-3.4) decides a DRAM set per phase
/// once, before the run, from Unimem's initial placement (§3.4.2 opt. 2:
/// the most-referenced arrays that fit, placed at first touch). When a
/// worker takes a task, the arrays its phase wants in DRAM that the task
/// uses are promoted (whole arrays, Unimem's granularity), evicting DRAM
/// arrays the phase does not want and no running task uses.
#[derive(Debug)]
pub struct UnimemTasks {
    model: UPlatform,
    times: PhaseTimes,
    plan: Option<Plan>,
    problem: Option<Problem>,
    in_dram: BTreeSet<ObjId>,
    /// Whole-array moves requested.
    pub moves: u64,
}

impl UnimemTasks {
    /// Unimem for a machine described by `model`, with per-type phase times.
    pub fn new(model: UPlatform, times: PhaseTimes) -> Self {
        UnimemTasks {
            model,
            times,
            plan: None,
            problem: None,
            in_dram: BTreeSet::new(),
            moves: 0,
        }
    }

    /// The plan's search (for the report).
    pub fn search(&self) -> Option<memtamer_core::unimem::plan::Search> {
        self.plan.as_ref().map(|p| p.search)
    }

    fn array_bytes(g: &TaskGraph, a: usize) -> u64 {
        g.array_blocks(a)
            .map(|b| g.blocks[b].bytes.div_ceil(PAGE) * PAGE)
            .sum()
    }

    fn move_array(g: &TaskGraph, tier: &mut TierSpace, a: usize, to: Tier) {
        for b in g.array_blocks(a) {
            tier.request(MoveReq::whole(b, to));
        }
    }
}

impl TaskPolicy for UnimemTasks {
    fn name(&self) -> String {
        "unimem".into()
    }

    fn start(&mut self, g: &TaskGraph, tier: &mut TierSpace) {
        let iters = g.iterations.max(1) as f64;
        let sizes: Vec<u64> = (0..g.arrays.len())
            .map(|a| Self::array_bytes(g, a))
            .collect();
        let mut phases: Vec<PhaseProfile> = (0..g.types.len())
            .map(|t| PhaseProfile {
                time: self.times.0.get(t).copied().unwrap_or(0.0),
                ..Default::default()
            })
            .collect();
        let mut refs = vec![0.0; g.arrays.len()];
        for task in &g.tasks {
            for a in &task.args {
                let arr = g.blocks[a.block].array;
                let lines = g.arg_lines(a) as f64 / iters;
                let ph = &mut phases[task.ty];
                ph.samples += lines;
                let o = ph.objs.entry(arr).or_insert(ObjPhase {
                    accesses: 0.0,
                    samples: 0.0,
                });
                o.accesses += lines;
                o.samples += lines;
                refs[arr] += lines;
            }
        }
        let start = initial_placement_max_refs(&sizes, &refs, tier.capacity());
        for &a in &start {
            for b in g.array_blocks(a) {
                for p in 0..g.blocks[b].bytes.div_ceil(PAGE) {
                    tier.place_page(b, p, Tier::Dram);
                }
            }
        }
        let problem = Problem {
            sizes,
            phases,
            platform: self.model.clone(),
            capacity: tier.capacity(),
            iterations: iters,
            exposure: Vec::new(),
        };
        self.plan = Some(decide(&problem, &start));
        self.problem = Some(problem);
        self.in_dram = start;
    }

    /// Freed arrays leave Unimem's DRAM set (their DRAM is free again).
    fn freed(&mut self, _g: &TaskGraph, _tier: &mut TierSpace, arrays: &[usize]) {
        for a in arrays {
            self.in_dram.remove(a);
        }
    }

    fn report(&self) -> Vec<(&'static str, f64)> {
        let global = self.search() == Some(memtamer_core::unimem::plan::Search::Global);
        vec![
            ("array_moves", self.moves as f64),
            ("global_search", if global { 1.0 } else { 0.0 }),
        ]
    }

    fn dispatch(
        &mut self,
        g: &TaskGraph,
        tier: &mut TierSpace,
        head: usize,
        _ready: &[usize],
        active: &[usize],
    ) -> Dispatch {
        let (Some(plan), Some(problem)) = (&self.plan, &self.problem) else {
            return Dispatch::default();
        };
        let phase = g.tasks[head].ty;
        let Some(want) = plan.dram.get(phase) else {
            return Dispatch::default();
        };
        let busy: BTreeSet<usize> = active
            .iter()
            .chain(std::iter::once(&head))
            .flat_map(|&t| g.tasks[t].args.iter().map(|a| g.blocks[a.block].array))
            .collect();
        let mine: BTreeSet<usize> = g.tasks[head]
            .args
            .iter()
            .map(|a| g.blocks[a.block].array)
            .collect();
        for &arr in &mine {
            if !want.contains(&arr) || self.in_dram.contains(&arr) {
                continue;
            }
            let used: u64 = self.in_dram.iter().map(|&a| problem.sizes[a]).sum();
            let need = (used + problem.sizes[arr]).saturating_sub(problem.capacity);
            let mut pool: Vec<usize> = self
                .in_dram
                .iter()
                .copied()
                .filter(|a| !want.contains(a) && !busy.contains(a))
                .collect();
            // largest first, until the need is covered (§3.4 Step 3 victims)
            pool.sort_by_key(|&a| std::cmp::Reverse(problem.sizes[a]));
            let mut freed = 0;
            let mut victims = Vec::new();
            for a in pool {
                if freed >= need {
                    break;
                }
                freed += problem.sizes[a];
                victims.push(a);
            }
            if freed < need {
                continue;
            }
            for a in victims {
                Self::move_array(g, tier, a, Tier::Slow);
                self.in_dram.remove(&a);
                self.moves += 1;
            }
            Self::move_array(g, tier, arr, Tier::Dram);
            self.in_dram.insert(arr);
            self.moves += 1;
        }
        Dispatch::default()
    }
}

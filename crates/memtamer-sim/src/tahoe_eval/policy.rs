//! Tahoe and the full-knowledge reference as [`TaskPolicy`]s.
//!
//! * [`TahoePolicy`] runs the *same* pure code as the OMPT tool
//!   (`memtamer_tahoe::plan::Planner`: representative profiling and
//!   re-basing, the hybrid model's fallback with Eq. 4.4, the DP split
//!   among co-running tasks, the 10-entry FIFO eviction, one batch per task
//!   planned over the ready queue as look-ahead). All pages start in the
//!   slow tier (thesis §4.3.1). A representative's profile is its per-page
//!   line counts (a sampler with period 1).
//! * [`Oracle`]: knows the whole task graph. When a worker takes a task,
//!   it makes room for the blocks of that task and of the next
//!   `lookahead` ready tasks by Belady's MIN rule at block granularity:
//!   the resident block whose next use (in task creation order, among tasks
//!   not yet started) lies farthest is evicted, and only for a block used
//!   sooner. Its initial placement is the blocks in order of first use.
//!   It is a strong reference, not a proven optimum: MIN minimises the
//!   number of block fetches, not time.

use crate::workload::taskgraph::{Dispatch, Layout, Mode, TaskGraph, TaskPolicy};
use crate::workload::tiered::{MoveReq, TierSpace, PAGE};
use memtamer_core::unimem::Tier;
use memtamer_tahoe::model::{HybridModel, LinearAccess};
use memtamer_tahoe::plan::{Decision, PlanConfig, PlanStats, Planner};
use memtamer_tahoe::task::{Access, DataObject, Task};
use std::collections::BTreeSet;

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
                    Mode::Out => Access::Out,
                    Mode::InOut => Access::InOut,
                },
            })
            .collect(),
    }
}

/// Ready tasks the planner sees behind the head (it uses the first known
/// `corun - 1` of them; the cap only bounds the conversion work).
const LOOKAHEAD_SCAN: usize = 64;

/// Tahoe (see the module doc).
#[derive(Debug)]
pub struct TahoePolicy {
    planner: Planner,
    layout: Option<Layout>,
}

impl TahoePolicy {
    /// Tahoe with `dram_pages` of DRAM and the fallback model's `beta_ns`
    /// (ns saved per line access moved to DRAM), `corun` co-runners.
    pub fn new(dram_pages: usize, beta_ns: f64, corun: usize) -> Self {
        let cfg = PlanConfig {
            page: PAGE,
            corun,
            ..PlanConfig::default()
        };
        let model = HybridModel {
            counters: None,
            fallback: LinearAccess { beta_ns },
        };
        TahoePolicy {
            planner: Planner::new(cfg, model, dram_pages),
            layout: None,
        }
    }

    /// The planner's counters.
    pub fn stats(&self) -> PlanStats {
        self.planner.stats()
    }
}

impl TaskPolicy for TahoePolicy {
    fn name(&self) -> String {
        "tahoe".into()
    }

    fn start(&mut self, g: &TaskGraph, _tier: &mut TierSpace) {
        self.layout = Some(Layout::new(g));
    }

    fn dispatch(
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
        let r: Vec<Task> = ready
            .iter()
            .take(LOOKAHEAD_SCAN)
            .map(|&t| tahoe_task(g, layout, t))
            .collect();
        let a: Vec<Task> = active.iter().map(|&t| tahoe_task(g, layout, t)).collect();
        match self.planner.decide(&h, &r, &a) {
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
                    let to = if b.to_dram { Tier::Dram } else { Tier::Slow };
                    let moves = layout.moves(&b.pages, to);
                    if b.task == 0 || b.task == h.id {
                        own.extend(moves);
                    } else {
                        for m in moves {
                            tier.request(m);
                        }
                    }
                }
                Dispatch {
                    own,
                    predicted_ns: Some(predicted_ns),
                    profile: false,
                }
            }
        }
    }

    fn report(&self) -> Vec<(&'static str, f64)> {
        let s = self.planner.stats();
        vec![
            ("decisions", s.decisions as f64),
            ("profiled", s.profiled as f64),
            ("promoted_pages", s.promoted as f64),
            ("evicted_pages", s.evicted as f64),
            ("batches", s.batches as f64),
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

/// The full-knowledge reference (see the module doc).
#[derive(Debug)]
pub struct Oracle {
    lookahead: usize,
    /// Tasks using each block, ascending creation order.
    users: Vec<Vec<usize>>,
    /// Per block: index into `users` of the first user not yet started.
    cursor: Vec<usize>,
    started: Vec<bool>,
    resident: BTreeSet<usize>,
    used: u64,
    capacity: u64,
}

impl Oracle {
    /// An oracle planning for the head and `lookahead` ready tasks.
    pub fn new(lookahead: usize) -> Self {
        Oracle {
            lookahead,
            users: Vec::new(),
            cursor: Vec::new(),
            started: Vec::new(),
            resident: BTreeSet::new(),
            used: 0,
            capacity: 0,
        }
    }

    fn size(g: &TaskGraph, b: usize) -> u64 {
        g.blocks[b].bytes.div_ceil(PAGE) * PAGE
    }

    /// Creation index of the next not-yet-started user of `b`.
    fn next_use(&mut self, b: usize) -> usize {
        let u = &self.users[b];
        let c = &mut self.cursor[b];
        while *c < u.len() && self.started[u[*c]] {
            *c += 1;
        }
        u.get(*c).copied().unwrap_or(usize::MAX)
    }
}

impl TaskPolicy for Oracle {
    fn name(&self) -> String {
        "oracle".into()
    }

    fn start(&mut self, g: &TaskGraph, tier: &mut TierSpace) {
        self.users = vec![Vec::new(); g.blocks.len()];
        for (t, task) in g.tasks.iter().enumerate() {
            for a in &task.args {
                if self.users[a.block].last() != Some(&t) {
                    self.users[a.block].push(t);
                }
            }
        }
        self.cursor = vec![0; g.blocks.len()];
        self.started = vec![false; g.tasks.len()];
        self.capacity = tier.capacity();
        let mut order: Vec<usize> = (0..g.blocks.len())
            .filter(|&b| !self.users[b].is_empty())
            .collect();
        order.sort_by_key(|&b| self.users[b][0]);
        for b in order {
            let s = Self::size(g, b);
            if self.used + s > self.capacity {
                break;
            }
            for p in 0..s / PAGE {
                tier.place_page(b, p, Tier::Dram);
            }
            self.resident.insert(b);
            self.used += s;
        }
    }

    fn dispatch(
        &mut self,
        g: &TaskGraph,
        tier: &mut TierSpace,
        head: usize,
        ready: &[usize],
        active: &[usize],
    ) -> Dispatch {
        self.started[head] = true;
        let plan: Vec<usize> = std::iter::once(head)
            .chain(ready.iter().copied().take(self.lookahead))
            .collect();
        let guard: BTreeSet<usize> = plan
            .iter()
            .chain(active)
            .flat_map(|&t| g.tasks[t].args.iter().map(|a| a.block))
            .collect();
        let mut own = Vec::new();
        for &t in &plan {
            for a in &g.tasks[t].args {
                let b = a.block;
                if self.resident.contains(&b) {
                    continue;
                }
                let s = Self::size(g, b);
                if s > self.capacity {
                    continue;
                }
                let mine = if t == head { 0 } else { self.next_use(b) };
                let mut evict = Vec::new();
                let mut free = self.capacity - self.used;
                let mut cands: Vec<(usize, usize)> = self
                    .resident
                    .iter()
                    .copied()
                    .filter(|v| !guard.contains(v))
                    .collect::<Vec<_>>()
                    .into_iter()
                    .map(|v| (self.next_use(v), v))
                    .collect();
                cands.sort_unstable_by(|x, y| y.cmp(x));
                for (nu, v) in cands {
                    if free >= s || nu <= mine {
                        break;
                    }
                    free += Self::size(g, v);
                    evict.push(v);
                }
                if free < s {
                    continue;
                }
                // the head's moves on its worker, look-ahead on the helper
                let mut moves: Vec<MoveReq> = evict
                    .iter()
                    .map(|&v| MoveReq::whole(v, Tier::Slow))
                    .collect();
                moves.push(MoveReq::whole(b, Tier::Dram));
                for v in evict {
                    self.resident.remove(&v);
                    self.used -= Self::size(g, v);
                }
                self.resident.insert(b);
                self.used += s;
                if t == head {
                    own.extend(moves);
                } else {
                    for m in moves {
                        tier.request(m);
                    }
                }
            }
        }
        Dispatch {
            own,
            ..Dispatch::default()
        }
    }
}

//! Task-graph programs (issue 21 item 4; thesis ch. 4, digest
//! `thesis-unimem-tahoe.md` §3): the OpenMP/OmpSs tasking shape on the
//! tiered-object primitive ([`super::tiered`]).
//!
//! # Model
//!
//! * A [`TaskGraph`] lists data blocks (the dependence objects: one
//!   [`super::tiered::TierObject`] each, grouped into named arrays, which are
//!   what a program allocates and what Unimem moves), task types, and tasks
//!   in creation order. A task names blocks with a dependence kind
//!   (`in`/`out`/`inout`), a pattern (sequential or random lines) and the
//!   number of main-memory passes over the block; its compute is given per
//!   line accessed.
//! * Dependences are derived as libomp and Nanos++ derive them from
//!   `depend` clauses on the same address: `in` after the last writer,
//!   `out`/`inout` after the last writer and every reader since
//!   ([`TaskGraph::predecessors`]).
//! * `N` [`Worker`] generators run the tasks from one FIFO ready queue
//!   (Nanos++'s `readyQueue`: a task is ready when its last predecessor
//!   completes). A policy may reorder the queue when tasks enter it
//!   ([`TaskPolicy::order`]: Tahoe's sibling scheduling); the others leave
//!   it FIFO. A worker that takes a task first asks the placement policy
//!   ([`TaskPolicy::dispatch`]); the policy queues migrations on the shared
//!   [`TierSpace`], which the process's one [`super::tiered::MigrationHelper`]
//!   carries out as real copy traffic. The task starts only once the moves
//!   naming its blocks are done ("migrate in Ready, finish before Active",
//!   §4.3.3); that wait is the exposed migration time. Each access goes to
//!   the tier its page is in when the access is generated.
//! * Nothing here computes a time: a task's duration is what the engine
//!   gives its loads and stores plus its compute.

use super::tiered::{lock, MoveReq, TierHandle, TierSpace, PAGE};
use super::{Op, OpBatch, Ps, LINE, NS};
use crate::rng::Rng;
use memtamer_core::unimem::Tier;
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

#[path = "taskgraph_free.rs"]
mod free;
pub use free::Free;
#[path = "taskgraph_layout.rs"]
mod layout;
pub use layout::Layout;

/// How a task uses a block (OpenMP `depend` kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `depend(in:)`: loads.
    In,
    /// `depend(out:)`: stores (read for ownership, write-back).
    Out,
    /// `depend(inout:)`: read-modify-write (a temporal store per line).
    InOut,
}

/// Which lines of the block a pass touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// Consecutive lines from the start (the L2 streamer prefetches loads).
    Seq,
    /// Uniformly random lines (gathers, table updates).
    Rand,
}

/// One dependence of a task.
#[derive(Clone, Debug, PartialEq)]
pub struct Arg {
    /// Block index.
    pub block: usize,
    /// Dependence kind.
    pub mode: Mode,
    /// Access pattern.
    pub pattern: Pattern,
    /// Main-memory passes over the block (lines accessed = passes x lines
    /// of the block, rounded up; may be below 1 for a partial touch).
    pub passes: f64,
}

/// One task.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskDef {
    /// Task type index.
    pub ty: usize,
    /// Dependences in clause order.
    pub args: Vec<Arg>,
    /// Compute per line accessed, ns.
    pub compute_ns_per_line: f64,
    /// The task that created this one (its parent, OpenMP's generating
    /// task): [`IMPLICIT`] for the program's main (implicit) task, else the
    /// id of a spawning node of a recursive program. It is an id, not an
    /// index into [`TaskGraph::tasks`]: such a node (a Strassen recursion
    /// step) does no memory work of its own here and is not a task of the
    /// graph. Tahoe's sibling scheduling (thesis §4.3.6) groups ready
    /// tasks by it; nothing else reads it.
    pub parent: u32,
}

/// [`TaskDef::parent`] of tasks the program's implicit task creates.
pub const IMPLICIT: u32 = 0;

/// A data block (dependence object).
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Array it belongs to (index into [`TaskGraph::arrays`]).
    pub array: usize,
    /// Bytes.
    pub bytes: u64,
}

/// A task program.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskGraph {
    /// Benchmark name.
    pub name: String,
    /// Array names (what the program allocates: Unimem's objects).
    pub arrays: Vec<String>,
    /// Blocks, laid out back to back in this order (blocks of one array
    /// consecutive).
    pub blocks: Vec<Block>,
    /// Task type names (the outlined task functions).
    pub types: Vec<String>,
    /// Tasks in creation order.
    pub tasks: Vec<TaskDef>,
    /// Outer iterations of the program (sweeps, CG iterations; 1 if none):
    /// Unimem's phases repeat once per iteration.
    pub iterations: u32,
    /// Arrays the program does not write before its tasks run (allocated
    /// and left untouched, or allocated inside tasks), by index into
    /// [`TaskGraph::arrays`]. Their pages are first touched by the first
    /// task that names them, so an OS that places pages at first touch
    /// puts them where room is left at that moment, not in allocation
    /// order. Empty: the program initialises every array serially in
    /// allocation order before its tasks (see [`TaskGraph::initialised`]).
    pub task_touched: Vec<usize>,
    /// Arrays the program frees while it runs ([`Free`]), each once every
    /// task of its `after` set has completed. Empty: nothing is freed
    /// before the program ends (every array lives the whole run).
    pub frees: Vec<Free>,
}

impl TaskGraph {
    /// Whether the program writes `array` before its tasks run (its pages
    /// are first touched at initialisation), i.e. it is not in
    /// [`TaskGraph::task_touched`].
    pub fn initialised(&self, array: usize) -> bool {
        !self.task_touched.contains(&array)
    }

    /// Lines task `t` accesses through argument `a`.
    pub fn arg_lines(&self, a: &Arg) -> u64 {
        let lines = self.blocks[a.block].bytes.div_ceil(LINE) as f64;
        (lines * a.passes).ceil().max(1.0) as u64
    }

    /// Lines task `t` accesses in all.
    pub fn task_lines(&self, t: usize) -> u64 {
        self.tasks[t].args.iter().map(|a| self.arg_lines(a)).sum()
    }

    /// Predecessors of every task, from the dependence clauses (libomp's
    /// rule, see the module doc), each list sorted and deduplicated.
    pub fn predecessors(&self) -> Vec<Vec<usize>> {
        let mut last_writer: Vec<Option<usize>> = vec![None; self.blocks.len()];
        let mut readers: Vec<Vec<usize>> = vec![Vec::new(); self.blocks.len()];
        let mut preds = Vec::with_capacity(self.tasks.len());
        for (t, task) in self.tasks.iter().enumerate() {
            let mut p = Vec::new();
            // a block named twice in one task: the strongest kind decides
            let mut seen: Vec<(usize, bool)> = Vec::new();
            for a in &task.args {
                let w = a.mode != Mode::In;
                match seen.iter_mut().find(|s| s.0 == a.block) {
                    Some(s) => s.1 |= w,
                    None => seen.push((a.block, w)),
                }
            }
            for &(b, write) in &seen {
                p.extend(last_writer[b]);
                if write {
                    p.append(&mut readers[b]);
                    last_writer[b] = Some(t);
                } else {
                    readers[b].push(t);
                }
            }
            p.retain(|&x| x != t);
            p.sort_unstable();
            p.dedup();
            preds.push(p);
        }
        preds
    }

    /// Checks indices and values; the error names the task or block.
    pub fn validate(&self) -> Result<(), String> {
        if self.tasks.is_empty() {
            return Err(format!("{}: no task", self.name));
        }
        for (i, b) in self.blocks.iter().enumerate() {
            if b.array >= self.arrays.len() || b.bytes == 0 {
                return Err(format!("{}: block {i}: bad array or size", self.name));
            }
        }
        for (i, t) in self.tasks.iter().enumerate() {
            if t.ty >= self.types.len() {
                return Err(format!("{}: task {i}: unknown type {}", self.name, t.ty));
            }
            if !(t.compute_ns_per_line.is_finite() && t.compute_ns_per_line >= 0.0) {
                return Err(format!("{}: task {i}: bad compute", self.name));
            }
            for a in &t.args {
                if a.block >= self.blocks.len() || !(a.passes.is_finite() && a.passes > 0.0) {
                    return Err(format!("{}: task {i}: bad argument {a:?}", self.name));
                }
            }
        }
        self.validate_frees()
    }

    /// Total bytes of all blocks (page-rounded, as laid out): every array
    /// the program allocates, those it frees while it runs
    /// ([`TaskGraph::frees`]) included. The thesis's Table 4.4 ratio is
    /// "the ratio of DRAM size to the total size of all data objects"
    /// (§4.4 p. 63: "Such DRAM size is smaller than the total size of all
    /// data objects of the benchmarks"), a sum over objects, not a peak of
    /// the live ones, so the DRAM derived from it does not shrink when
    /// temporaries die.
    pub fn footprint(&self) -> u64 {
        self.blocks
            .iter()
            .map(|b| b.bytes.div_ceil(PAGE) * PAGE)
            .sum()
    }

    /// Blocks of array `a`.
    pub fn array_blocks(&self, a: usize) -> impl Iterator<Item = usize> + '_ {
        self.blocks
            .iter()
            .enumerate()
            .filter(move |(_, b)| b.array == a)
            .map(|(i, _)| i)
    }
}

/// What a policy says when a worker takes a task.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dispatch {
    /// Moves the worker carries out itself before running the task, in
    /// order (evictions first): Tahoe's worker migrates the pages of the
    /// task it is about to run (§4.3.3), while moves queued on the
    /// [`TierSpace`] go to the helper thread.
    pub own: Vec<MoveReq>,
    /// Predicted run time of the task (ns), if the policy has a model.
    pub predicted_ns: Option<f64>,
    /// Record the task's per-page access counts (a representative to profile).
    pub profile: bool,
}

/// A placement policy driven by the task runtime (Tahoe, its baselines).
/// Policies see the graph and the tier state and queue moves on it; they
/// never see simulated time except through task times.
pub trait TaskPolicy: Send + std::fmt::Debug {
    /// Short name for reports.
    fn name(&self) -> String;
    /// Before any task: the initial placement (first touch, static layout).
    fn start(&mut self, _g: &TaskGraph, _tier: &mut TierSpace) {}
    /// Tasks just entered the ready `queue` (FIFO order, newest at the
    /// tail): the order to serve it in from now on, a permutation of
    /// `queue`, or None to keep it (the default: Nanos++'s FIFO, which
    /// every baseline keeps). Tahoe's sibling scheduling (thesis §4.3.6)
    /// groups the tasks of one parent. Every task in the queue is ready,
    /// so no order of them breaks a dependence.
    fn order(&self, _g: &TaskGraph, _queue: &[usize]) -> Option<Vec<usize>> {
        None
    }
    /// A worker took `head` from the ready queue; `ready` is the queue
    /// behind it (FIFO order), `active` the tasks now running. The default
    /// moves nothing: the placement-only baselines (first touch, static,
    /// all-DRAM...) decide everything in [`TaskPolicy::start`].
    fn dispatch(
        &mut self,
        _g: &TaskGraph,
        _tier: &mut TierSpace,
        _head: usize,
        _ready: &[usize],
        _active: &[usize],
    ) -> Dispatch {
        Dispatch::default()
    }
    /// After every completion (and once for the roots): tasks `newly` (may
    /// be none) just entered the ready queue; `queue` is the whole queue
    /// now, in the order it will be served (FIFO unless
    /// [`TaskPolicy::order`] reordered it), `active` the running tasks. A
    /// policy that decides at ready-queue entry (Tahoe, §4.3.3) queues
    /// their moves for the helper here, so the copies overlap the running
    /// tasks.
    fn ready(
        &mut self,
        _g: &TaskGraph,
        _tier: &mut TierSpace,
        _newly: &[usize],
        _queue: &[usize],
        _active: &[usize],
    ) {
    }
    /// The program freed `arrays` ([`TaskGraph::frees`]): the runtime has
    /// already given their pages back in `tier` ([`TierSpace::free_object`]);
    /// a policy that tracks what is in DRAM forgets them here. The default
    /// does nothing (first touch, static and the references keep no
    /// residency of their own).
    fn freed(&mut self, _g: &TaskGraph, _tier: &mut TierSpace, _arrays: &[usize]) {}
    /// Counters for the report (name, value).
    fn report(&self) -> Vec<(&'static str, f64)> {
        Vec::new()
    }
    /// `task` completed after `ns` of running (migration wait excluded);
    /// `profile` holds its per-page access counts if dispatch asked for them.
    fn completed(
        &mut self,
        _g: &TaskGraph,
        _tier: &mut TierSpace,
        _task: usize,
        _ns: f64,
        _profile: Option<&[(u64, f64)]>,
    ) {
    }
}

/// Per-task record of one run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskRecord {
    /// Taken from the ready queue (ps).
    pub dispatched: Ps,
    /// Started running after its migrations (ps).
    pub started: Ps,
    /// Completed (ps).
    pub ended: Ps,
    /// Policy's prediction of its run time (ns), if any.
    pub predicted_ns: Option<f64>,
    /// Ran as a profiled representative.
    pub profiled: bool,
    /// Lines whose page was in DRAM when the access was generated.
    pub dram_lines: u64,
    /// Lines accessed.
    pub lines: u64,
}

impl TaskRecord {
    /// Run time (migration wait excluded), ns.
    pub fn run_ns(&self) -> f64 {
        self.ended.saturating_sub(self.started) as f64 / NS as f64
    }
}

/// The runtime state the workers of one program share.
#[derive(Debug)]
pub struct Runtime {
    graph: Arc<TaskGraph>,
    layout: Layout,
    succs: Vec<Vec<usize>>,
    preds_left: Vec<u32>,
    ready: VecDeque<usize>,
    active: Vec<usize>,
    done: usize,
    records: Vec<TaskRecord>,
    policy: Box<dyn TaskPolicy>,
    tier: TierHandle,
    makespan: Option<Ps>,
    /// Per task: the frees it counts down ([`TaskGraph::frees_of`]).
    frees_of: Vec<Vec<usize>>,
    /// Per free: tasks of its `after` set not yet completed.
    free_left: Vec<usize>,
}

/// `queue` in the order `policy` serves it ([`TaskPolicy::order`]); an
/// answer that is not a permutation of the queue (a policy bug) is ignored,
/// so no task is lost or run twice.
fn reordered(policy: &dyn TaskPolicy, g: &TaskGraph, queue: &[usize]) -> Vec<usize> {
    match policy.order(g, queue) {
        Some(o) if o.len() == queue.len() => {
            let (mut a, mut b) = (o.clone(), queue.to_vec());
            a.sort_unstable();
            b.sort_unstable();
            if a == b {
                o
            } else {
                queue.to_vec()
            }
        }
        _ => queue.to_vec(),
    }
}

/// Handle shared by the workers and the driver.
pub type RuntimeHandle = Arc<Mutex<Runtime>>;

/// Locks a runtime handle (a poisoned lock is still usable).
pub fn lock_rt(h: &RuntimeHandle) -> MutexGuard<'_, Runtime> {
    h.lock().unwrap_or_else(|e| e.into_inner())
}

impl Runtime {
    /// A runtime for `graph` on `tier` (whose objects are the graph's
    /// blocks in order) under `policy`; runs the policy's `start`.
    pub fn new(graph: Arc<TaskGraph>, tier: TierHandle, mut policy: Box<dyn TaskPolicy>) -> Self {
        let preds = graph.predecessors();
        let mut succs = vec![Vec::new(); graph.tasks.len()];
        for (t, p) in preds.iter().enumerate() {
            for &q in p {
                succs[q].push(t);
            }
        }
        let preds_left: Vec<u32> = preds.iter().map(|p| p.len() as u32).collect();
        let roots: Vec<usize> = (0..graph.tasks.len())
            .filter(|&t| preds_left[t] == 0)
            .collect();
        let ready: VecDeque<usize>;
        {
            let mut tier = lock(&tier);
            policy.start(&graph, &mut tier);
            let queue = reordered(policy.as_ref(), &graph, &roots);
            policy.ready(&graph, &mut tier, &roots, &queue, &[]);
            ready = queue.into();
        }
        let frees_of = graph.frees_of();
        let free_left = graph
            .frees
            .iter()
            .map(|f| {
                let mut a = f.after.clone();
                a.sort_unstable();
                a.dedup();
                a.len()
            })
            .collect();
        Runtime {
            layout: Layout::new(&graph),
            records: vec![TaskRecord::default(); graph.tasks.len()],
            graph,
            succs,
            preds_left,
            ready,
            active: Vec::new(),
            done: 0,
            policy,
            tier,
            makespan: None,
            frees_of,
            free_left,
        }
    }

    /// Wraps the runtime into a shared handle.
    pub fn into_handle(self) -> RuntimeHandle {
        Arc::new(Mutex::new(self))
    }

    /// Completion time of the last task, once all completed.
    pub fn makespan(&self) -> Option<Ps> {
        self.makespan
    }

    /// Tasks completed.
    pub fn done(&self) -> usize {
        self.done
    }

    /// Per-task records.
    pub fn records(&self) -> &[TaskRecord] {
        &self.records
    }

    /// The policy (for its own report).
    pub fn policy(&self) -> &dyn TaskPolicy {
        self.policy.as_ref()
    }

    /// Takes the head of the ready queue and lets the policy decide.
    fn take(&mut self, now: Ps) -> Option<(usize, Dispatch)> {
        let head = self.ready.pop_front()?;
        let ready: Vec<usize> = self.ready.iter().copied().collect();
        let d = {
            let mut tier = lock(&self.tier);
            let mut d = self
                .policy
                .dispatch(&self.graph, &mut tier, head, &ready, &self.active);
            // moves of its blocks still queued for the helper: the worker
            // does them first itself rather than wait behind the queue
            let blocks: Vec<usize> = self.graph.tasks[head]
                .args
                .iter()
                .map(|a| a.block)
                .collect();
            let mut own = tier.steal_queued(&blocks);
            own.append(&mut d.own);
            d.own = own;
            d
        };
        self.active.push(head);
        let r = &mut self.records[head];
        r.dispatched = now;
        r.predicted_ns = d.predicted_ns;
        r.profiled = d.profile;
        Some((head, d))
    }

    /// `t` completed at `now`: release its successors, tell the policy.
    fn complete(&mut self, t: usize, now: Ps, lines: (u64, u64), prof: Option<Vec<(u64, f64)>>) {
        let r = &mut self.records[t];
        r.ended = now;
        r.dram_lines = lines.0;
        r.lines = lines.1;
        let ns = r.run_ns();
        self.active.retain(|&x| x != t);
        let mut newly = Vec::new();
        for i in 0..self.succs[t].len() {
            let s = self.succs[t][i];
            self.preds_left[s] -= 1;
            if self.preds_left[s] == 0 {
                newly.push(s);
            }
        }

        self.done += 1;
        if self.done == self.graph.tasks.len() {
            self.makespan = Some(now);
        }
        let mut tier = lock(&self.tier);
        self.policy
            .completed(&self.graph, &mut tier, t, ns, prof.as_deref());
        // frees whose taskwait this completion ends (after the policy saw
        // the task's pages, as the program frees after its tasks)
        for &f in &self.frees_of[t] {
            self.free_left[f] = self.free_left[f].saturating_sub(1);
            if self.free_left[f] == 0 {
                let arrays = &self.graph.frees[f].arrays;
                for &a in arrays {
                    for b in self.graph.array_blocks(a) {
                        tier.free_object(b);
                    }
                }
                self.policy.freed(&self.graph, &mut tier, arrays);
            }
        }
        // successors enter the ready queue after the policy saw the
        // completion (a representative's profile is known to them)
        self.ready.extend(newly.iter().copied());
        let mut queue: Vec<usize> = self.ready.iter().copied().collect();
        if !newly.is_empty() {
            queue = reordered(self.policy.as_ref(), &self.graph, &queue);
            self.ready = queue.iter().copied().collect();
        }
        self.policy
            .ready(&self.graph, &mut tier, &newly, &queue, &self.active);
    }
}

/// Lines per step of a running task (then the next argument's turn).
const CHUNK: u64 = 16;

#[derive(Clone, Debug)]
enum Stage {
    /// Carrying out its own moves.
    Migrate,
    /// Waiting for the moves naming its blocks.
    Wait,
    /// Issuing accesses.
    Run,
    /// Its last accesses are draining.
    Drain,
}

#[derive(Clone, Debug)]
struct Current {
    task: usize,
    stage: Stage,
    /// Lines issued per argument.
    issued: Vec<u64>,
    /// Next argument to serve.
    turn: usize,
    /// Per-page counts when profiling.
    profile: Option<HashMap<u64, f64>>,
    /// Own moves not started yet.
    own: VecDeque<MoveReq>,
    /// The own move being copied: request, pages, next page, drained, start.
    mv: Option<(MoveReq, Vec<u64>, usize, bool, Ps)>,
    dram_lines: u64,
    lines: u64,
}

/// One worker thread of the task runtime (an OpenMP thread in the
/// team): takes ready tasks, waits for their migrations, runs them.
#[derive(Clone, Debug)]
pub struct Worker {
    rt: RuntimeHandle,
    tier: TierHandle,
    graph: Arc<TaskGraph>,
    layout: Layout,
    cur: Option<Current>,
    /// Sleep between two looks at an empty ready queue or unsettled moves.
    poll: Ps,
}

/// Sleep of a worker once every task completed (the run is over).
const DONE_SLEEP: Ps = 1_000_000 * NS;

impl Worker {
    /// A worker of `rt` polling every `poll` when it has nothing to do.
    pub fn new(rt: RuntimeHandle, poll: Ps) -> Worker {
        let (tier, graph, layout) = {
            let r = lock_rt(&rt);
            (r.tier.clone(), r.graph.clone(), r.layout.clone())
        };
        Worker {
            rt,
            tier,
            graph,
            layout,
            cur: None,
            poll: poll.max(1),
        }
    }

    /// The next step's ops.
    pub(super) fn refill(&mut self, q: &mut OpBatch, rng: &mut Rng, now: Ps) {
        loop {
            let Some(c) = &mut self.cur else {
                let mut rt = lock_rt(&self.rt);
                match rt.take(now) {
                    Some((task, d)) => {
                        self.cur = Some(Current {
                            task,
                            stage: Stage::Migrate,
                            issued: vec![0; self.graph.tasks[task].args.len()],
                            turn: 0,
                            profile: d.profile.then(HashMap::new),
                            own: d.own.into(),
                            mv: None,
                            dram_lines: 0,
                            lines: 0,
                        });
                        continue;
                    }
                    None => {
                        let sleep = if rt.makespan.is_some() {
                            DONE_SLEEP
                        } else {
                            self.poll
                        };
                        q.push_back(Op::Compute(sleep));
                        return;
                    }
                }
            };
            let def = &self.graph.tasks[c.task];
            match c.stage {
                Stage::Migrate => {
                    let mut tier = lock(&self.tier);
                    match &mut c.mv {
                        None => match c.own.pop_front() {
                            Some(m) => {
                                let pages = tier.begin_move(m);
                                c.mv = Some((m, pages, 0, false, now));
                            }
                            None => c.stage = Stage::Wait,
                        },
                        Some((m, pages, next, drained, start)) => {
                            if *next < pages.len() {
                                let page = pages[*next];
                                *next += 1;
                                tier.page_ops(m.obj, page, m.to, q);
                                return;
                            }
                            if !*drained && !pages.is_empty() {
                                *drained = true;
                                q.push_back(Op::Drain);
                                return;
                            }
                            tier.end_move(m, pages, now - *start);
                            c.mv = None;
                        }
                    }
                    continue;
                }
                Stage::Wait => {
                    let mut tier = lock(&self.tier);
                    if def.args.iter().all(|a| tier.settled(a.block)) {
                        let mut rt = lock_rt(&self.rt);
                        let r = &mut rt.records[c.task];
                        tier.add_exposed(now - r.dispatched);
                        r.started = now;
                        c.stage = Stage::Run;
                        continue;
                    }
                    q.push_back(Op::Compute(self.poll));
                    return;
                }
                Stage::Run => {
                    let n = def.args.len();
                    let pick = (0..n)
                        .map(|k| (c.turn + k) % n)
                        .find(|&i| c.issued[i] < self.graph.arg_lines(&def.args[i]));
                    let Some(i) = pick else {
                        c.stage = Stage::Drain;
                        q.push_back(Op::Drain);
                        return;
                    };
                    c.turn = i + 1;
                    let a = &def.args[i];
                    let total = self.graph.arg_lines(a);
                    let k = CHUNK.min(total - c.issued[i]);
                    let ps = (def.compute_ns_per_line * k as f64 * NS as f64).round() as Ps;
                    if ps > 0 {
                        q.push_back(Op::Compute(ps));
                    }
                    let bytes = self.graph.blocks[a.block].bytes;
                    let block_lines = bytes.div_ceil(LINE);
                    let tier = lock(&self.tier);
                    for j in 0..k {
                        let line = match a.pattern {
                            Pattern::Seq => (c.issued[i] + j) % block_lines,
                            Pattern::Rand => rng.below(block_lines),
                        };
                        let off = line * LINE;
                        let addr = tier.line_addr(a.block, off);
                        if tier.objects()[a.block].tier_at(off) == Tier::Dram {
                            c.dram_lines += 1;
                        }
                        if let Some(p) = &mut c.profile {
                            *p.entry(self.layout.page(a.block, off)).or_insert(0.0) += 1.0;
                        }
                        q.push_back(match a.mode {
                            Mode::In => Op::Load {
                                addr,
                                dep: false,
                                stream: a.pattern == Pattern::Seq,
                            },
                            Mode::Out | Mode::InOut => Op::StoreTemporal { addr, flush: false },
                        });
                    }
                    c.issued[i] += k;
                    c.lines += k;
                    return;
                }
                Stage::Drain => {
                    let prof = c.profile.take().map(|m| {
                        let mut v: Vec<(u64, f64)> = m.into_iter().collect();
                        v.sort_by_key(|x| x.0);
                        v
                    });
                    let (task, lines) = (c.task, (c.dram_lines, c.lines));
                    self.cur = None;
                    lock_rt(&self.rt).complete(task, now, lines, prof);
                    q.push_back(Op::Done {
                        units: 1,
                        bytes: lines.1 * LINE,
                    });
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
#[path = "taskgraph_tests.rs"]
mod tests;

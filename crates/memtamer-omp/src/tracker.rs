//! The tool's task tracker: rebuilds what Nanos++ keeps and OMPT only
//! streams (task records with their dependence objects, the dependence
//! graph and the ready queue in FIFO order), and asks the Tahoe planner for
//! a decision when a task starts. Pure apart from the clock the caller
//! passes in, so it is unit-tested without libomp.

use memtamer_tahoe::benefit::{list_starts, slack_ns, FUTURE_SCAN};
use memtamer_tahoe::counters::TaskCounts;
use memtamer_tahoe::extents::Extents;
use memtamer_tahoe::plan::{Batch, Decision, Planner};
use memtamer_tahoe::record::{Row, RowCounters};
use memtamer_tahoe::task::{Access, DataObject, Task, TaskType};
use std::collections::{HashMap, VecDeque};
use std::ops::Range;

/// Maps and sets keyed by the tool's own task ids (sequential `u64`s from
/// one counter). They share the planner's multiplicative hasher
/// ([`memtamer_tahoe::fasthash`]): one multiply instead of SipHash, which
/// the callbacks paid three to four times per dependence edge (callgrind
/// of heat, docs/notebook/tahoe.md "overhead"). Ids are not attacker-chosen.
type IdMap<V> = memtamer_tahoe::fasthash::PageMap<V>;
type IdSet = memtamer_tahoe::fasthash::PageSet;

/// Largest extent inferred for one dependence object.
pub const MAX_EXTENT: u64 = 64 << 20;

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum State {
    Created,
    Ready,
    Active,
}

#[derive(Debug)]
struct Rec {
    code: u64,
    deps: Vec<(u64, Access)>,
    preds: u32,
    succs: Vec<u64>,
    state: State,
    start_ns: u64,
    predicted_ns: f64,
    /// The task as built at begin, with the extents' generation then
    /// ([`Extents::generation`]): complete reuses it when no address or
    /// exact length came since, because the extents (so the task) are
    /// then the same.
    begun: Option<(u64, Task)>,
    /// Counter deltas charged to the task so far ([`Tracker::charge`]).
    counts: TaskCounts,
}

/// Per-type totals kept for `MEMTAMER_TAHOE_RECORD`.
#[derive(Clone, Copy, Debug, Default)]
struct RecAcc {
    instances: u64,
    ns: f64,
    pages: u64,
    /// Counts summed over the instances that were counted.
    counts: TaskCounts,
    counted: u64,
}

/// Per-type accuracy of the model (|predicted - measured| / measured).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ErrAcc {
    /// Tasks compared.
    pub n: u64,
    /// Sum of relative errors.
    pub sum: f64,
}

/// Totals for the closing line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TrackStats {
    /// Explicit tasks created.
    pub created: u64,
    /// Tasks completed.
    pub completed: u64,
    /// Dependence edges seen.
    pub edges: u64,
    /// Longest ready queue seen.
    pub ready_max: usize,
    /// Tasks completed with counters ([`Tracker::charge`]).
    pub counted: u64,
}

/// Task table, dependence graph, ready queue and the planner.
#[derive(Debug)]
pub struct Tracker {
    recs: IdMap<Rec>,
    ready: VecDeque<u64>,
    active: IdSet,
    extents: Extents,
    planner: Planner,
    stats: TrackStats,
    err: HashMap<u64, ErrAcc>,
    record: Option<HashMap<TaskType, RecAcc>>,
    /// Worker threads, for the look-ahead slack.
    workers: usize,
    /// Largest task id created: ids come from one counter in creation
    /// order, so the created tasks after a head are the ids above it.
    last_id: u64,
}

impl Tracker {
    /// A tracker feeding `planner`.
    pub fn new(planner: Planner) -> Self {
        Tracker {
            recs: IdMap::default(),
            ready: VecDeque::new(),
            active: IdSet::default(),
            extents: Extents::new(MAX_EXTENT),
            planner,
            stats: TrackStats::default(),
            err: HashMap::new(),
            record: None,
            workers: 1,
            last_id: 0,
        }
    }

    /// The OpenMP runtime runs `n` worker threads (default 1): the
    /// cost-benefit check's look-ahead slack schedules the ready queue on
    /// them ([`memtamer_tahoe::benefit::list_starts`]).
    pub fn with_workers(mut self, n: usize) -> Self {
        self.workers = n.max(1);
        self
    }

    /// The run's fitted batch copy cost, fixed part and per page
    /// ([`Planner::set_copy_cost`]: ignored when the check is off or a
    /// term is not a number >= 0).
    pub fn set_copy_cost(&mut self, c: memtamer_tahoe::copycost::CopyCost) {
        self.planner.set_copy_cost(c);
    }

    /// Also keep per-type (instances, total ns, pages) for
    /// `MEMTAMER_TAHOE_RECORD`.
    pub fn with_record(mut self) -> Self {
        self.record = Some(HashMap::new());
        self
    }

    /// The per-type recording, sorted by type (empty if not recording).
    /// `name` turns a code address into a run-independent name (the
    /// executable is position-independent, so raw addresses differ
    /// between runs).
    pub fn recorded(&self, name: impl Fn(u64) -> String) -> Vec<Row> {
        let mut v: Vec<Row> = self
            .record
            .iter()
            .flatten()
            .map(|(ty, a)| Row {
                ty: format!(
                    "{}({})",
                    name(ty.code),
                    ty.arg_sizes
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                instances: a.instances,
                mean_ns: a.ns / a.instances.max(1) as f64,
                pages: a.pages as f64,
                counters: (a.counted > 0)
                    .then(|| a.counts.counters())
                    .flatten()
                    .map(|c| RowCounters {
                        ipc: c.ipc,
                        llc_miss_rate: c.llc_miss_rate,
                    }),
            })
            .collect();
        v.sort_by(|a, b| a.ty.cmp(&b.ty));
        v
    }

    /// Totals.
    pub fn stats(&self) -> &TrackStats {
        &self.stats
    }

    /// The planner (stats, database).
    pub fn planner(&self) -> &Planner {
        &self.planner
    }

    /// Model error per task code address.
    pub fn errors(&self) -> &HashMap<u64, ErrAcc> {
        &self.err
    }

    /// Ready queue, oldest first.
    pub fn ready(&self) -> Vec<u64> {
        self.ready.iter().copied().collect()
    }

    fn push_ready(&mut self, id: u64) {
        if let Some(r) = self.recs.get_mut(&id) {
            r.state = State::Ready;
            self.ready.push_back(id);
            self.stats.ready_max = self.stats.ready_max.max(self.ready.len());
        }
    }

    /// Removes `id` from the ready queue. An id is in the queue exactly
    /// while its record is `Ready` (push_ready sets it; edge and begin
    /// clear it), so the queue is not scanned for other states, and the
    /// scan starts at the head, where a starting task usually is.
    fn unready(&mut self, id: u64, was: State) {
        if was != State::Ready {
            return;
        }
        if let Some(pos) = self.ready.iter().position(|&x| x == id) {
            self.ready.remove(pos);
        }
    }

    /// Counter deltas `d` of an interval task `id` ran (the shell reads a
    /// thread's counters at each task switch, [`crate::counters`]); an
    /// unknown id (an implicit task, a finished one) is ignored.
    pub fn charge(&mut self, id: u64, d: &TaskCounts) {
        if let Some(r) = self.recs.get_mut(&id) {
            r.counts.add(d);
        }
    }

    /// `ompt_callback_task_create` for an explicit task. A task without
    /// dependences is ready at once; one with dependences becomes ready
    /// when its last predecessor completes.
    pub fn create(&mut self, id: u64, code: u64) {
        self.stats.created += 1;
        self.last_id = self.last_id.max(id);
        self.recs.insert(
            id,
            Rec {
                code,
                deps: Vec::new(),
                preds: 0,
                succs: Vec::new(),
                state: State::Created,
                start_ns: 0,
                predicted_ns: 0.0,
                begun: None,
                counts: TaskCounts::default(),
            },
        );
        self.push_ready(id);
    }

    /// `ompt_callback_dependences`: the task's dependence objects.
    pub fn dependences(&mut self, id: u64, deps: &[(u64, Access)]) {
        self.dependences_iter(id, deps.iter().copied());
    }

    /// The program's own lengths of dependence objects (`depend` array
    /// sections, from the interposed `__kmpc_omp_task_with_deps`): they
    /// replace the inferred extents of those addresses. The addresses
    /// themselves come with the task's dependence callback, which follows
    /// in the same call ([`Tracker::dependences_iter`]) and records each
    /// once; here only the lengths are noted.
    pub fn exact_lengths(&mut self, deps: &[(u64, u64)]) {
        for &(addr, len) in deps {
            self.extents.note_length(addr, len);
        }
    }

    /// Distinct dependence addresses seen so far.
    pub fn dependence_addresses(&self) -> usize {
        self.extents.len()
    }

    /// Dependence addresses whose length the program stated
    /// ([`Tracker::exact_lengths`]).
    pub fn exact_extents(&self) -> usize {
        self.extents.exact_len()
    }

    /// [`Tracker::dependences`] straight from the callback's array,
    /// without an intermediate vector.
    pub fn dependences_iter(&mut self, id: u64, deps: impl Iterator<Item = (u64, Access)>) {
        let mut rec = self.recs.get_mut(&id);
        for (a, acc) in deps {
            self.extents.observe(a);
            if let Some(r) = rec.as_mut() {
                r.deps.push((a, acc));
            }
        }
    }

    /// `ompt_callback_task_dependence`: `sink` waits for `src`. An edge
    /// from a task already finished (or unknown) does not delay the sink.
    pub fn edge(&mut self, src: u64, sink: u64) {
        self.stats.edges += 1;
        if !self.recs.contains_key(&sink) {
            return;
        }
        match self.recs.get_mut(&src) {
            Some(s) => s.succs.push(sink),
            None => return,
        }
        if let Some(k) = self.recs.get_mut(&sink) {
            k.preds += 1;
            let was = k.state;
            k.state = State::Created;
            self.unready(sink, was);
        }
    }

    fn task(&self, id: u64) -> Option<Task> {
        let r = self.recs.get(&id)?;
        Some(self.task_of(id, r))
    }

    fn task_of(&self, id: u64, r: &Rec) -> Task {
        Task {
            id,
            code: r.code,
            objects: r
                .deps
                .iter()
                .map(|&(addr, access)| DataObject {
                    addr,
                    len: self.extents.extent(addr),
                    access,
                })
                .collect(),
        }
    }

    /// The task starts on a thread at `now_ns`: with `place`, Tahoe decides
    /// for it with the ready queue as look-ahead and the batches are
    /// returned (evictions first; the head's own batch before the
    /// look-ahead ones); without, only representatives are picked.
    pub fn begin(&mut self, id: u64, now_ns: u64, corun: usize, place: bool) -> Vec<Batch> {
        self.begin_ahead(id, now_ns, corun, place, 0)
    }

    /// [`Tracker::begin`] with `backlog_pages` pages still queued on the
    /// migration helper. With the cost-benefit check on, the planner sees
    /// each look-ahead task's slack (its predicted start by list
    /// scheduling on the workers, the running tasks freeing theirs after
    /// their predicted time less their elapsed time, the head after its
    /// whole predicted time; less the helper's backlog at the current copy
    /// cost) and the created, not yet started tasks after the head, whose
    /// reuse counts (the simulator's Tahoe's inputs, docs/notebook/tahoe.md "The
    /// check in the tool").
    pub fn begin_ahead(
        &mut self,
        id: u64,
        now_ns: u64,
        corun: usize,
        place: bool,
        backlog_pages: u64,
    ) -> Vec<Batch> {
        let Some(r) = self.recs.get_mut(&id) else {
            return Vec::new();
        };
        if r.state == State::Active {
            // Resumed after a task switch: already decided.
            return Vec::new();
        }
        let was = r.state;
        r.state = State::Active;
        r.start_ns = now_ns;
        self.unready(id, was);
        self.active.insert(id);
        let Some(head) = self.task(id) else {
            return Vec::new();
        };
        if !place {
            self.planner.observe(&head);
            self.keep_begun(id, head);
            return Vec::new();
        }
        let look: Vec<Task> = self
            .ready
            .iter()
            .take(corun.saturating_sub(1))
            .filter_map(|&t| self.task(t))
            .collect();
        let active: Vec<Task> = self
            .active
            .iter()
            .filter(|&&a| a != id)
            .filter_map(|&a| self.task(a))
            .collect();
        let (slack, future) = match self.planner.copy_ns() {
            Some(copy) => (
                self.slack(&head, &look, now_ns, backlog_pages as f64 * copy),
                self.future(id),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let d = self
            .planner
            .decide_ahead_slack(&head, &look, &slack, &active, &future);
        self.keep_begun(id, head);
        match d {
            Decision::Place {
                batches,
                predicted_ns,
            } => {
                if let Some(r) = self.recs.get_mut(&id) {
                    r.predicted_ns = predicted_ns;
                }
                batches
            }
            Decision::Profile | Decision::Wait => Vec::new(),
        }
    }

    /// Look-ahead slack of each task of `look` (see
    /// [`Tracker::begin_ahead`]); `backlog_ns`: the helper's queued copies.
    fn slack(&self, head: &Task, look: &[Task], now_ns: u64, backlog_ns: f64) -> Vec<f64> {
        let pred = |t: &Task| self.planner.predict(t).unwrap_or(0.0);
        let mut remaining = vec![pred(head)];
        for &a in self.active.iter().filter(|&&a| a != head.id) {
            if let Some(r) = self.recs.get(&a) {
                let elapsed = now_ns.saturating_sub(r.start_ns) as f64;
                remaining.push(pred(&self.task_of(a, r)) - elapsed);
            }
        }
        let queued: Vec<f64> = look.iter().map(pred).collect();
        list_starts(&remaining, &queued, self.workers)
            .into_iter()
            .map(|s| slack_ns(s, backlog_ns))
            .collect()
    }

    /// Created, not yet started tasks after `id` in creation order (at
    /// most [`FUTURE_SCAN`], among the next `4 * FUTURE_SCAN` ids).
    fn future(&self, id: u64) -> Vec<Task> {
        let end = self.last_id.min(id.saturating_add(4 * FUTURE_SCAN as u64));
        (id + 1..=end)
            .filter_map(|f| {
                let r = self.recs.get(&f)?;
                (r.state != State::Active).then(|| self.task_of(f, r))
            })
            .take(FUTURE_SCAN)
            .collect()
    }

    fn keep_begun(&mut self, id: u64, head: Task) {
        let gen = self.extents.generation();
        if let Some(r) = self.recs.get_mut(&id) {
            r.begun = Some((gen, head));
        }
    }

    /// The task `id` as begun, if it is its type's representative (now
    /// running, profile not stored yet): the shell samples its pages.
    pub fn representative(&self, id: u64) -> Option<Task> {
        let (_, t) = self.recs.get(&id)?.begun.as_ref()?;
        self.planner.is_representative(t).then(|| t.clone())
    }

    /// The task completed at `now_ns`: profile/FIFO update, successors
    /// whose last predecessor this was become ready.
    pub fn complete(&mut self, id: u64, now_ns: u64) {
        self.complete_with(id, now_ns, None);
    }

    /// [`Tracker::complete`] with the representative's sampled per-page
    /// counts (`None`: the uniform profile).
    pub fn complete_with(&mut self, id: u64, now_ns: u64, samples: Option<&[(u64, f64)]>) {
        let Some(mut r) = self.recs.remove(&id) else {
            return;
        };
        let task = match r.begun.take() {
            Some((gen, t)) if gen == self.extents.generation() => t,
            _ => self.task_of(id, &r),
        };
        let task = Some(task);
        self.stats.completed += 1;
        self.active.remove(&id);
        self.unready(id, r.state);
        let ns = now_ns.saturating_sub(r.start_ns) as f64;
        let counters = r.counts.counters();
        if counters.is_some() {
            self.stats.counted += 1;
        }
        if let Some(t) = task {
            if let Some(rec) = self.record.as_mut() {
                let e = rec.entry(t.task_type()).or_insert_with(|| RecAcc {
                    pages: t.footprint(4096).len() as u64,
                    ..RecAcc::default()
                });
                e.instances += 1;
                e.ns += ns;
                if counters.is_some() {
                    e.counts.add(&r.counts);
                    e.counted += 1;
                }
            }
            self.planner.completed_counted(&t, ns, samples, counters);
        }
        if r.predicted_ns > 0.0 && ns > 0.0 {
            let e = self.err.entry(r.code).or_default();
            e.n += 1;
            e.sum += (r.predicted_ns - ns).abs() / ns;
        }
        for s in r.succs {
            let now_ready = match self.recs.get_mut(&s) {
                Some(k) => {
                    k.preds = k.preds.saturating_sub(1);
                    k.preds == 0 && k.state == State::Created
                }
                None => false,
            };
            if now_ready {
                self.push_ready(s);
            }
        }
    }
}

/// Page ranges of `task`'s objects for sampling, merged where objects
/// overlap: `arm` holds only pages lying wholly inside an object (an edge
/// page may hold someone else's data, e.g. an allocator header), `fill`
/// every page an object touches (the pages that get a count).
pub fn sample_ranges(task: &Task, page: u64) -> (Vec<Range<u64>>, Vec<Range<u64>>) {
    let merge = |mut v: Vec<Range<u64>>| {
        v.retain(|r| r.start < r.end);
        v.sort_by_key(|r| r.start);
        let mut out: Vec<Range<u64>> = Vec::with_capacity(v.len());
        for r in v {
            match out.last_mut() {
                Some(l) if r.start <= l.end => l.end = l.end.max(r.end),
                _ => out.push(r),
            }
        }
        out
    };
    let arm = task
        .objects
        .iter()
        .map(|o| o.addr.div_ceil(page)..(o.addr + o.len) / page)
        .collect();
    let fill = task
        .objects
        .iter()
        .map(|o| o.addr / page..(o.addr + o.len.max(1)).div_ceil(page))
        .collect();
    (merge(arm), merge(fill))
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtamer_tahoe::model::HybridModel;
    use memtamer_tahoe::plan::PlanConfig;

    fn tracker(dram_pages: usize) -> Tracker {
        Tracker::new(Planner::new(
            PlanConfig::default(),
            HybridModel::fallback_only(1.0),
            dram_pages,
        ))
    }

    const B: u64 = 1 << 16; // block bytes

    #[test]
    fn exact_lengths_leave_the_addresses_to_the_dependence_callback() {
        let mut t = tracker(1000);
        t.create(1, 0xa);
        // the creation call's items: a section of two blocks and a
        // first-element name (8 B), then the callback's addresses
        let (a, n) = (0x100000, 0x100000 + 2 * B);
        t.exact_lengths(&[(a, 2 * B), (n, 8)]);
        assert_eq!((t.dependence_addresses(), t.exact_extents()), (0, 1));
        t.dependences(1, &[(a, Access::In), (n, Access::Out)]);
        assert_eq!((t.dependence_addresses(), t.exact_extents()), (2, 1));
        let task = t.task(1).expect("task 1");
        let lens: Vec<u64> = task.objects.iter().map(|o| o.len).collect();
        // the section's own length; the name's extent inferred (the median gap)
        assert_eq!(lens, vec![2 * B, 2 * B]);
    }

    #[test]
    fn ready_queue_follows_dependences() {
        let mut t = tracker(1000);
        // 1 writes block 0; 2 reads block 0 (edge 1->2); 3 independent.
        t.create(1, 0xa);
        t.dependences(1, &[(0x100000, Access::Out)]);
        t.create(2, 0xb);
        t.dependences(2, &[(0x100000, Access::In)]);
        t.edge(1, 2);
        t.create(3, 0xa);
        t.dependences(3, &[(0x100000 + B, Access::Out)]);
        assert_eq!(t.ready(), vec![1, 3]);
        t.begin(1, 0, 4, true);
        assert_eq!(t.ready(), vec![3]);
        t.complete(1, 100);
        assert_eq!(t.ready(), vec![3, 2]);
        // Edge from a finished task does not hold the sink back.
        t.create(4, 0xb);
        t.edge(1, 4);
        assert_eq!(t.ready(), vec![3, 2, 4]);
        assert_eq!(t.stats().ready_max, 3);
        assert!(t.recorded(|c| format!("{c:#x}")).is_empty());
        assert_eq!(t.stats().edges, 2);
    }

    #[test]
    fn recording_keeps_mean_time_and_pages_per_type() {
        let mut t = tracker(10).with_record();
        for i in 1..=2u64 {
            t.create(i, 0xa);
            t.dependences(i, &[(0x1000_0000 + i * B, Access::In)]);
        }
        for (i, start) in [(1u64, 0u64), (2, 1000)] {
            t.begin(i, start, 1, false);
            t.complete(i, start + 100 * i);
        }
        let r = t.recorded(|c| format!("{c:#x}"));
        assert_eq!(r[0].ty, "0xa(65536)");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].instances, 2);
        assert_eq!(r[0].mean_ns, 150.0);
        assert_eq!(r[0].pages, 16.0);
    }

    #[test]
    fn representative_then_siblings_get_batches_and_errors() {
        let mut t = tracker(1000);
        for i in 0..4u64 {
            t.create(i + 1, 0xa);
            t.dependences(i + 1, &[(0x1000_0000 + i * B, Access::InOut)]);
        }
        // Representative: profiled, no moves.
        assert!(t.begin(1, 0, 4, true).is_empty());
        t.complete(1, 1_000_000);
        assert_eq!(t.planner().db().len(), 1);
        // Sibling: its block (16 pages) plus look-ahead batches for 3, 4.
        let b = t.begin(2, 2_000_000, 4, true);
        assert_eq!(b.len(), 3);
        assert_eq!(b[0].task, 2);
        assert_eq!(b[0].pages.len(), 16);
        assert_eq!(b[0].pages[0], (0x1000_0000 + B) / 4096);
        t.complete(2, 2_500_000);
        let e = &t.errors()[&0xa];
        assert_eq!(e.n, 1);
        assert!(e.sum > 0.0);
        // Resume of an active task is not re-decided.
        t.begin(3, 3_000_000, 4, true);
        assert!(t.begin(3, 3_100_000, 4, true).is_empty());
        t.complete(99, 0); // unknown: ignored
                           // Placement off: representative bookkeeping only, no batches.
        t.create(50, 0xc);
        t.dependences(50, &[(0x2000_0000, Access::In)]);
        assert!(t.begin(50, 4_000_000, 4, false).is_empty());
        t.complete(50, 4_100_000);
        assert_eq!(t.planner().db().len(), 2);
        assert_eq!(t.stats().completed, 3);
    }

    /// A tracker planning as the tool does with the check on: page-pass
    /// profiles (`access_bytes` = page), beta 1200 ns per page pass, a
    /// copy-cost prior of `copy` ns per page, `workers` workers. Tasks 1-4
    /// (one type) read 16-page blocks 0, 1, 0, 1; task 1, the
    /// representative, has run (uniform profile, 1 ms).
    fn checked(copy: f64, workers: usize) -> Tracker {
        let mut t = Tracker::new(Planner::new(
            PlanConfig {
                corun: 2,
                copy_ns_per_page: Some(copy),
                access_bytes: 4096,
                ..PlanConfig::default()
            },
            HybridModel::fallback_only(1200.0),
            1000,
        ))
        .with_workers(workers);
        for i in 1..=4u64 {
            t.create(i, 0xa);
            t.dependences(i, &[(0x1000_0000 + ((i + 1) % 2) * B, Access::In)]);
        }
        assert!(t.begin(1, 0, 2, true).is_empty());
        t.complete(1, 1_000_000);
        t
    }

    fn promoted_for(b: &[Batch], task: u64) -> usize {
        b.iter()
            .filter(|x| x.to_dram && x.task == task)
            .map(|x| x.pages.len())
            .sum()
    }

    #[test]
    fn the_check_moves_pages_when_copies_are_cheap_and_none_when_dear() {
        // a page of block 1 saves one pass for task 2 and one for task 4,
        // which reuses it (2400 ns); the head's copy is exposed and its
        // traffic is one pass (1200 ns)
        let b = checked(1.0, 2).begin(2, 2_000_000, 2, true);
        assert_eq!(promoted_for(&b, 2), 16, "{b:?}");
        let mut dear = checked(1e9, 2);
        let b = dear.begin(2, 2_000_000, 2, true);
        assert!(b.is_empty(), "{b:?}");
        let st = dear.planner().stats();
        assert_eq!((st.refused_pages, st.refused_batches), (32, 2));
        // a cheap prior, then a measured cost that makes moves dear
        let mut t = checked(1.0, 2);
        t.set_copy_cost(memtamer_tahoe::copycost::CopyCost::per_page(1e9));
        assert!(t.begin(2, 2_000_000, 2, true).is_empty());
        assert_eq!(t.planner().copy_ns(), Some(1e9));
    }

    #[test]
    fn look_ahead_slack_comes_from_the_workers_and_the_running_tasks() {
        // copies of 2 us a page: exposed, 2000 + 1200 > 2400 (no page
        // pays); hidden behind the head's predicted 1 ms, 1200 < 2400
        let b = checked(2000.0, 1).begin(2, 2_000_000, 2, true);
        assert_eq!(promoted_for(&b, 2), 0, "{b:?}");
        assert!(
            promoted_for(&b, 3) > 0,
            "one worker: task 3 waits for 2 {b:?}"
        );
        // a second, idle worker takes task 3 now: no slack, no move
        let b = checked(2000.0, 2).begin(2, 2_000_000, 2, true);
        assert!(b.is_empty(), "{b:?}");
        // a helper backlog longer than the head's run eats the slack
        let b = checked(2000.0, 1).begin_ahead(2, 2_000_000, 2, true, 1000);
        assert!(b.is_empty(), "{b:?}");
    }

    #[test]
    fn sample_ranges_arm_inner_pages_and_fill_all() {
        let p = 4096;
        let t = Task {
            id: 1,
            code: 0xa,
            objects: vec![
                DataObject {
                    addr: 10 * p + 16,
                    len: 4 * p,
                    access: Access::In,
                },
                // Overlaps the first: merged, not counted twice.
                DataObject {
                    addr: 12 * p,
                    len: 4 * p,
                    access: Access::Out,
                },
                DataObject {
                    addr: 40 * p,
                    len: 100,
                    access: Access::InOut,
                },
            ],
        };
        let (arm, fill) = sample_ranges(&t, p);
        assert_eq!(arm, vec![11..16]);
        assert_eq!(fill, vec![10..16, 40..41]);
    }

    #[test]
    fn representative_is_reported_and_samples_reach_the_profile() {
        let mut t = tracker(1000);
        for i in 1..=2u64 {
            t.create(i, 0xa);
            t.dependences(i, &[(0x1000_0000 + i * B, Access::InOut)]);
        }
        t.begin(1, 0, 4, true);
        t.begin(2, 0, 4, true);
        let rep = t.representative(1).expect("first instance");
        assert_eq!(rep.id, 1);
        assert!(t.representative(2).is_none(), "a sibling waits");
        assert!(t.representative(99).is_none());
        // Page 3 of the block 10x hotter than the rest.
        let first = (0x1000_0000 + B) / 4096;
        let s: Vec<(u64, f64)> = (0..16)
            .map(|k| (first + k, if k == 3 { 10.0 } else { 1.0 }))
            .collect();
        t.complete_with(1, 1000, Some(&s));
        assert!(t.representative(1).is_none());
        let sib = t.task(2).unwrap();
        let (_, prof) = t.planner().db().iter().next().unwrap();
        let hot = prof.rebase(&sib, 4096).unwrap();
        assert_eq!(hot[0], ((0x1000_0000 + 2 * B) / 4096 + 3, 10.0));
        assert_eq!(prof.total_accesses, 25.0);
    }
}

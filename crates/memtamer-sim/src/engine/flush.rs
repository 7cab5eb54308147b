//! Cache-line flushing and Ribbon (issue 19 item 5; thesis ch. 6, digest
//! `shared/design/thesis-archtm-ribbon.md` §3).
//!
//! **Line states.** A table of the lines a flush workload touched, bounded
//! by the socket's LLC (`cpu.llc_bytes`, FIFO replacement), says whether a
//! line is dirty (stored since its last write-back), being written back,
//! clean, or not cached. A `clwb` costs what that state makes it do; no
//! cost is a number of its own:
//! * dirty: a 64 B write-back through the core's fill buffer, the mesh,
//!   the channel's WPQ and DDR-T into the DIMM's XPBuffer, done where the
//!   platform's PM writes complete (`pm.write_completion`);
//! * clean and cached: a lookup in the core's private caches
//!   (`cpu.clwb_clean_ns`), nothing leaves the core;
//! * not cached: the home agent must look the line up in the directory,
//!   which Xeon Scalable keeps in memory beside the line, so the request
//!   goes to the line's memory controller as a read (a PM read for PM).
//!
//! **Ribbon** (thesis §6.3.1). Each application thread has a FIFO of flush
//! requests; flusher `f` of M serves queues `q ≡ f (mod M)` (at most
//! ⌊N/M⌋+1 of them), or when M > N the flushers `f ≡ q (mod N)` share queue
//! `q`, each taking its share of what is queued (the thesis's dispatcher,
//! without its cost). A flusher runs rounds: it takes the batch of every
//! queue it serves that has one, executes each batch in program order
//! (clwb each line), then ONE sfence (waits for all its write-backs),
//! then marks every batch of the round done (as the runtime does). A fence of the application blocks until its queue's
//! earlier requests are done; so requests after a fence are never queued
//! before the ones it waits for. Waiting threads and idle flushers give up
//! their CPU. M comes from the real four-point-search controller
//! (`memtamer_ribbon::controller`), fed with the bytes the program's
//! flushes covered, or is fixed (oracle sweep). M = 0 (no idle hardware
//! thread) means application threads flush themselves; what is still
//! queued then is drained by flusher 0.
//!
//! **Inline when dedicated (M = N)**, as the runtime (`memtamer-ribbon`
//! `Producer::flush`, `Config::inline_when_dedicated`, default true): where
//! a flush request goes is `memtamer_ribbon::route::route`, the runtime's
//! own rule. At M = N every queue would have a flusher of its own, so a
//! flush runs on the application thread that issued it (a `clwb` there, as
//! eager), after whatever its queue still holds from before M became N:
//! the thread takes the untaken requests as one batch (its clwbs, an sfence,
//! the batch done: the runtime's `drain_own`), or, while a flusher holds a
//! batch of its queue, waits for that batch first. Its fence then finds
//! the queue drained and waits only for its own write-backs. The active
//! flushers find nothing queued and stay idle. Below and above N nothing
//! changes. `inline_when_dedicated = false` in the workload forces the
//! hand-off (the ablation).
//!
//! **Proactive flushing** (thesis §6.3.2): one extra thread flushes stored
//! lines sampled every `sample_period`-th store (PEBS), while the
//! controller allows it (off whenever it lowered concurrency). Like the
//! runtime's proactive thread (`memtamer-ribbon` `flusher.rs`
//! `proactive()`), it takes the samples queued when it polls, flushes
//! them, and sleeps [`PROACTIVE_POLL`]; a store never wakes it.

use super::cpu::Block;
use super::fill::{Chain, ReqKind};
use super::{Engine, EvKind};
use crate::config::FlushMode;
use crate::workload::{Op, Ps, NS};
use memtamer_core::CpuSet;
use memtamer_ribbon::controller::{ControlConfig, Controller};
use memtamer_ribbon::search_record::SearchRecord;
use std::collections::{HashMap, VecDeque};
use std::time::Duration;

/// Most sampled store addresses the proactive thread keeps (older ones are
/// dropped: they were probably flushed by the program already).
const SAMPLE_RING: usize = 4096;
/// Sampled lines the proactive thread takes per batch.
const PROACTIVE_BATCH: usize = 16;
/// The proactive thread's sleep between two drains of its samples: the
/// runtime's `memtamer_ribbon::proactive::POLL` (200 us, `proactive.rs`),
/// which its loop sleeps after each round (`flusher.rs` `proactive()`). Real
/// time, not compressed with the controller's probe and T: it is the delay
/// between a sampled store and its flush that the program's own stores and
/// flushes see.
pub(super) const PROACTIVE_POLL: Ps = 200_000 * NS;
/// The controller is stepped this many times per probe window.
const TICKS_PER_PROBE: u64 = 10;

/// What a thread is to the flush unit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FlushRole {
    /// Not part of a flush workload.
    None,
    /// Application thread owning queue `queue` of flush job `job`.
    App { job: u32, queue: u32 },
    /// Flusher `index` of flush job `job`.
    Flusher { job: u32, index: u32 },
    /// The proactive-flushing thread of flush job `job`.
    Proactive { job: u32 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineState {
    Dirty,
    InFlight,
    Clean,
}

/// The cached lines of flush workloads, FIFO-replaced at the LLC's size.
struct LineTable {
    state: HashMap<u64, LineState>,
    fifo: VecDeque<u64>,
    cap: usize,
}

impl LineTable {
    fn get(&self, line: u64) -> Option<LineState> {
        self.state.get(&line).copied()
    }

    /// Sets a line's state, caching it if it was not; true if that evicted
    /// a dirty line.
    fn set(&mut self, line: u64, s: LineState) -> bool {
        if let Some(v) = self.state.get_mut(&line) {
            *v = s;
            return false;
        }
        self.state.insert(line, s);
        self.fifo.push_back(line);
        if self.fifo.len() > self.cap {
            if let Some(old) = self.fifo.pop_front() {
                return self.state.remove(&old) == Some(LineState::Dirty);
            }
        }
        false
    }
}

/// Counters of one flush job (cumulative; the result is their difference
/// over the measured window).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct FlushStats {
    /// Program flushes that found the line dirty (a write-back).
    pub dirty: u64,
    /// Program flushes that found the line clean and cached.
    pub clean: u64,
    /// Program flushes of lines in no cache (a directory lookup).
    pub nonresident: u64,
    /// Program flushes that found the line's write-back still in flight.
    pub in_flight: u64,
    /// Write-backs the proactive thread issued.
    pub proactive: u64,
    /// Stores that needed a read-for-ownership.
    pub rfo: u64,
    /// Dirty lines the LLC replacement evicted before their flush.
    pub evicted_dirty: u64,
    /// Searches the controller started.
    pub searches: u64,
    /// Flusher-count × ps integral (for the time average of M).
    pub m_area: f64,
    /// Program flushes run on their application thread because M = N
    /// (the runtime's `Stats::dedicated_requests`).
    pub dedicated: u64,
    /// Queue batches flusher threads completed (the runtime's
    /// `Stats::flusher_batches`): 0 while every flush runs on its caller.
    pub flusher_batches: u64,
    /// Queue batches an application thread ran itself before a dedicated
    /// flush (the runtime's `Stats::self_drains` on that path).
    pub self_drains: u64,
}

/// One flush job's measured result.
#[derive(Clone, Debug, Default)]
pub struct FlushJobResult {
    /// Job index in the scenario.
    pub job: usize,
    /// Counters over the measured window.
    pub stats: FlushStats,
    /// Time-averaged flusher count over the measured window.
    pub flushers_avg: f64,
    /// Flusher count at the end.
    pub flushers_end: u64,
    /// Flusher threads available (P4 for Ribbon).
    pub flushers_max: u64,
    /// Every search the job's own controller ran, warm-up included, as the
    /// controller recorded it (`Controller::last_search`); empty without
    /// a controller of its own (eager, fixed M, co-running) and unless the
    /// run asked for them (`EngineConfig::trace_search`).
    pub searches: Vec<SearchRecord>,
}

/// Ribbon's state for one job.
pub(super) struct FlushJob {
    pub(super) scenario_job: usize,
    mode: FlushMode,
    /// `Config::inline_when_dedicated`: at M = N flushes run on their
    /// caller (true) or still go to the queue (false, the ablation).
    inline_when_dedicated: bool,
    pub(super) app: Vec<u32>,
    pub(super) flushers: Vec<u32>,
    pub(super) proactive_tid: Option<u32>,
    /// The helper threads pinned to one CPU (thread, CPU): re-applied when
    /// the controller changes M, as the runtime's threads re-pin when
    /// `pin_epoch` moves (`memtamer-ribbon` `shared.rs`
    /// `placement_changed`).
    pub(super) pins: Vec<(u32, u32)>,
    queues: Vec<VecDeque<u64>>,
    enqueued: Vec<u64>,
    completed: Vec<u64>,
    waiting: Vec<Option<u64>>,
    cursor: Vec<usize>,
    idle: Vec<bool>,
    proactive_idle: bool,
    /// Samples left of the proactive thread's current round (those queued
    /// when it last polled).
    proactive_round: usize,
    active: usize,
    proactive_allowed: bool,
    proactive_on: bool,
    sample_period: u64,
    stores: u64,
    samples: VecDeque<u64>,
    pub(super) controller: Option<Controller>,
    /// The controller's searches so far (the last one as it stands).
    pub(super) searches: Vec<SearchRecord>,
    pub(super) tick: Ps,
    pub(super) available: f64,
    pub(super) flushed_bytes: u64,
    pub(super) stats: FlushStats,
    base: FlushStats,
    m_since: Ps,
}

/// What a flush job is built from.
pub(super) struct FlushJobSpec {
    pub(super) scenario_job: usize,
    pub(super) mode: FlushMode,
    pub(super) fixed: u32,
    pub(super) proactive: bool,
    pub(super) sample_period: u64,
    pub(super) cores: usize,
    pub(super) probe: Ps,
    pub(super) interval: Ps,
    pub(super) available: usize,
    /// The workload's `inline_when_dedicated` (the runtime's Config field).
    pub(super) inline_when_dedicated: bool,
    /// The workload's `interior_probes` (`ControlConfig::interior_probes`).
    pub(super) interior_probes: u32,
    /// Whether the controller records its searches
    /// ([`super::EngineConfig::trace_search`]).
    pub(super) trace_search: bool,
}

impl FlushJob {
    /// A job with `app` application threads; flusher and proactive thread
    /// ids are filled in by the engine.
    pub(super) fn new(s: &FlushJobSpec, app: Vec<u32>) -> FlushJob {
        let n = app.len();
        let controller = (s.mode == FlushMode::Ribbon).then(|| {
            let mut cfg = ControlConfig::thesis(s.cores);
            cfg.probe = Duration::from_nanos(s.probe / NS);
            cfg.interval = Duration::from_nanos(s.interval / NS);
            cfg.interior_probes = s.interior_probes;
            Controller::new(cfg, Duration::ZERO, 0, s.proactive).recording(s.trace_search)
        });
        let active = match (&controller, s.mode) {
            (Some(c), _) => c.current().flushers,
            (None, FlushMode::Fixed) => s.fixed as usize,
            _ => 0,
        };
        FlushJob {
            scenario_job: s.scenario_job,
            mode: s.mode,
            inline_when_dedicated: s.inline_when_dedicated,
            app,
            flushers: Vec::new(),
            proactive_tid: None,
            pins: Vec::new(),
            queues: vec![VecDeque::new(); n],
            enqueued: vec![0; n],
            completed: vec![0; n],
            waiting: vec![None; n],
            cursor: Vec::new(),
            idle: Vec::new(),
            proactive_idle: false,
            proactive_round: 0,
            active,
            proactive_allowed: s.proactive,
            // eager and fixed: on for the whole run; ribbon: as decided
            proactive_on: s.proactive && controller.is_none(),
            sample_period: s.sample_period.max(1),
            stores: 0,
            samples: VecDeque::new(),
            tick: (s.probe / TICKS_PER_PROBE).max(NS),
            controller,
            searches: Vec::new(),
            available: s.available as f64,
            flushed_bytes: 0,
            stats: FlushStats::default(),
            base: FlushStats::default(),
            m_since: 0,
        }
    }

    /// Flusher threads this job needs: P4 for Ribbon, M when fixed.
    pub(super) fn flusher_threads(s: &FlushJobSpec) -> usize {
        match s.mode {
            FlushMode::Eager => 0,
            FlushMode::Fixed => s.fixed as usize,
            FlushMode::Ribbon => s.cores.max(1),
        }
    }

    /// Whether the four-point search sets M.
    pub(super) fn has_controller(&self) -> bool {
        self.controller.is_some()
    }

    pub(super) fn add_flusher(&mut self, tid: u32) {
        self.flushers.push(tid);
        self.cursor.push(0);
        self.idle.push(false);
    }

    /// Flushers that serve queue `q` with `m` flushers active.
    fn servers(&self, q: usize, m: usize) -> Vec<usize> {
        let n = self.app.len().max(1);
        if m <= n {
            vec![q % m.max(1)]
        } else {
            (q..m).step_by(n).collect()
        }
    }

    /// Flusher `f`'s next round, as ops: with M ≤ N it takes the whole
    /// batch of every queue it serves that has one (starting after the
    /// queue it started with last time), issues all their clwbs (each
    /// batch in program order), then ONE sfence, then marks every batch
    /// done; an sfence orders all of the thread's earlier clwbs, so each
    /// batch is as fenced as with a fence of its own (the runtime's
    /// `Shared::execute_round`; docs/ribbon.md, "One fence per round").
    /// With M > N it serves one queue and takes its share of the batch.
    /// None if there is nothing to do or `f` is not active.
    fn take_round(&mut self, f: usize) -> Option<Vec<Op>> {
        let m = self.active.clamp(1, self.flushers.len().max(1));
        if f >= m {
            return None;
        }
        let (queues, share) = self.served(f, m);
        let k = queues.len();
        let start = self.cursor[f] % k.max(1);
        let order: Vec<usize> = (0..k)
            .map(|i| (start + i) % k)
            .filter(|&i| !self.queues[queues[i]].is_empty())
            .collect();
        let first = *order.first()?;
        self.cursor[f] = first + 1;
        let mut ops = Vec::new();
        let mut done = Vec::with_capacity(order.len());
        for &i in &order {
            let q = queues[i];
            let n = self.queues[q].len().div_ceil(share).max(1);
            ops.extend(self.queues[q].drain(..n).map(|addr| Op::Clwb { addr }));
            done.push(Op::BatchDone {
                queue: q as u32,
                lines: n as u32,
            });
        }
        ops.push(Op::Drain);
        ops.extend(done);
        Some(ops)
    }

    /// Queues flusher `f` serves with `m` active, and how many flushers
    /// share each.
    fn served(&self, f: usize, m: usize) -> (Vec<usize>, usize) {
        let n = self.app.len().max(1);
        if m <= n {
            ((f..n).step_by(m.max(1)).collect(), 1)
        } else {
            let q = f % n;
            (vec![q], (m - 1 - q) / n + 1)
        }
    }
}

/// The flush unit: line states and the flush jobs.
pub(super) struct FlushUnit {
    lines: LineTable,
    pub(super) jobs: Vec<FlushJob>,
    clwb_clean: Ps,
    /// Co-running flush jobs sharing one search (`flush_corun.rs`).
    pub(super) corun: Option<super::flush_corun::CorunSim>,
}

impl FlushUnit {
    /// A unit keeping `llc_bytes` of lines, whose clean-line clwb takes `clwb_clean`.
    pub(super) fn new(llc_bytes: u64, clwb_clean: Ps) -> FlushUnit {
        FlushUnit {
            lines: LineTable {
                state: HashMap::new(),
                fifo: VecDeque::new(),
                cap: (llc_bytes / 64).max(1) as usize,
            },
            jobs: Vec::new(),
            clwb_clean,
            corun: None,
        }
    }
}

/// What a flush op did to the stepping thread.
enum Step {
    /// Go on with the next op.
    Go,
    /// The thread stalled or blocked; stop stepping it.
    Stop,
}

fn line_of(addr: u64) -> u64 {
    addr & !63
}

impl Engine {
    fn flush_job_of(&self, tid: u32) -> Option<usize> {
        match self.threads[tid as usize].flush_role {
            FlushRole::App { job, .. }
            | FlushRole::Flusher { job, .. }
            | FlushRole::Proactive { job } => Some(job as usize),
            FlushRole::None => None,
        }
    }

    /// Runs a flush-workload op of thread `tid`; false if the thread
    /// stalled or blocked (the caller stops stepping it).
    pub(super) fn flush_op(&mut self, tid: u32, op: Op) -> bool {
        let r = match op {
            Op::Store { addr } => self.flush_store(tid, addr),
            Op::Flush { addr } => self.flush_request(tid, addr),
            Op::Clwb { addr } => self.clwb(tid, addr),
            Op::Fence => self.fence(tid),
            Op::FlushPull => self.flush_pull(tid),
            Op::BatchDone { queue, lines } => self.batch_done(tid, queue, lines),
            Op::FlushHere { addr } => self.flush_here(tid, addr),
            _ => Step::Go,
        };
        matches!(r, Step::Go)
    }

    /// Busies the thread's CPU for `d` (stretched while the SMT sibling computes).
    fn busy(&mut self, tid: u32, d: Ps) -> Step {
        if d == 0 {
            return Step::Go;
        }
        let mut d = d;
        let cpu = self.threads[tid as usize].cpu;
        if let Some(sib) = self.cpus[cpu as usize].sibling {
            if let Some(other) = self.cpus[sib as usize].current {
                if self.threads[other as usize].block == Block::Compute {
                    d = (d as f64 * self.cpu_params.smt_slowdown) as Ps;
                }
            }
        }
        let now = self.now;
        let th = &mut self.threads[tid as usize];
        th.block = Block::Compute;
        th.wake_gen += 1;
        th.compute_left = now + d;
        let g = th.wake_gen;
        self.push(now + d, EvKind::ThreadRun(tid, g));
        Step::Stop
    }

    fn flush_store(&mut self, tid: u32, addr: u64) -> Step {
        let line = line_of(addr);
        let Some(u) = self.flush.as_mut() else {
            return Step::Go;
        };
        let cached = u.lines.get(line).is_some();
        if !cached
            && !self.issue(
                tid,
                line,
                ReqKind::Read,
                Chain::Load {
                    dep: false,
                    stream: false,
                },
            )
        {
            self.stall_lfb(tid, Op::Store { addr });
            return Step::Stop;
        }
        let Some(j) = self.flush_job_of(tid) else {
            return Step::Go;
        };
        let Some(u) = self.flush.as_mut() else {
            return Step::Go;
        };
        let evicted = u.lines.set(line, LineState::Dirty);
        let job = &mut u.jobs[j];
        if !cached {
            job.stats.rfo += 1;
        }
        if evicted {
            job.stats.evicted_dirty += 1;
        }
        job.stores += 1;
        if job.proactive_on && job.stores.is_multiple_of(job.sample_period) {
            if job.samples.len() >= SAMPLE_RING {
                job.samples.pop_front();
                job.proactive_round = job.proactive_round.saturating_sub(1);
            }
            // waits for the proactive thread's next poll
            job.samples.push_back(line);
        }
        self.count_store(tid, line);
        Step::Go
    }

    /// A `clwb` executed by `tid` now.
    fn clwb(&mut self, tid: u32, addr: u64) -> Step {
        let line = line_of(addr);
        let role = self.threads[tid as usize].flush_role;
        let Some(j) = self.flush_job_of(tid) else {
            return Step::Go;
        };
        let Some(u) = self.flush.as_ref() else {
            return Step::Go;
        };
        let state = u.lines.get(line);
        let clean_cost = u.clwb_clean;
        let proactive = matches!(role, FlushRole::Proactive { .. });
        match state {
            Some(LineState::Dirty) | Some(LineState::InFlight) => {
                if !self.issue(tid, line, ReqKind::Writeback, Chain::Clwb) {
                    self.stall_lfb(tid, Op::Clwb { addr });
                    return Step::Stop;
                }
                let Some(u) = self.flush.as_mut() else {
                    return Step::Go;
                };
                u.lines.set(line, LineState::InFlight);
                let s = &mut u.jobs[j].stats;
                match (proactive, state) {
                    (true, _) => s.proactive += 1,
                    (false, Some(LineState::Dirty)) => s.dirty += 1,
                    _ => s.in_flight += 1,
                }
                if !proactive {
                    u.jobs[j].flushed_bytes += 64;
                }
                Step::Go
            }
            Some(LineState::Clean) => {
                if !proactive {
                    if let Some(u) = self.flush.as_mut() {
                        u.jobs[j].stats.clean += 1;
                        u.jobs[j].flushed_bytes += 64;
                    }
                }
                self.busy(tid, clean_cost)
            }
            None => {
                if !self.issue(
                    tid,
                    line,
                    ReqKind::Read,
                    Chain::Load {
                        dep: false,
                        stream: false,
                    },
                ) {
                    self.stall_lfb(tid, Op::Clwb { addr });
                    return Step::Stop;
                }
                if !proactive {
                    if let Some(u) = self.flush.as_mut() {
                        u.jobs[j].stats.nonresident += 1;
                        u.jobs[j].flushed_bytes += 64;
                    }
                }
                Step::Go
            }
        }
    }

    /// A `clwb` write-back of `addr` completed: the line is clean, unless
    /// it was stored to again meanwhile.
    pub(super) fn written_back(&mut self, addr: u64) {
        if let Some(u) = self.flush.as_mut() {
            let line = line_of(addr);
            if u.lines.get(line) == Some(LineState::InFlight) {
                u.lines.set(line, LineState::Clean);
            }
        }
    }

    fn wake_servers(&mut self, j: usize, q: usize) {
        let Some(u) = self.flush.as_mut() else { return };
        let job = &mut u.jobs[j];
        let m = job.active.clamp(1, job.flushers.len().max(1));
        let mut wake = Vec::new();
        for f in job.servers(q, m) {
            if f < job.flushers.len() && job.idle[f] {
                job.idle[f] = false;
                wake.push(job.flushers[f]);
            }
        }
        for t in wake {
            self.wake_yielded(t);
        }
    }

    /// The program's fence.
    fn fence(&mut self, tid: u32) -> Step {
        if let FlushRole::App { job, queue } = self.threads[tid as usize].flush_role {
            if let Some(u) = self.flush.as_mut() {
                let j = &mut u.jobs[job as usize];
                let q = queue as usize;
                if j.completed[q] < j.enqueued[q] {
                    j.waiting[q] = Some(j.enqueued[q]);
                    self.threads[tid as usize].pending = Some(Op::Fence);
                    self.yield_cpu(tid, Block::Fence);
                    return Step::Stop;
                }
            }
        }
        let th = &mut self.threads[tid as usize];
        if th.outstanding > 0 {
            th.block = Block::Drain;
            return Step::Stop;
        }
        Step::Go
    }

    /// A flusher or the proactive thread asks for work.
    fn flush_pull(&mut self, tid: u32) -> Step {
        let role = self.threads[tid as usize].flush_role;
        let Some(u) = self.flush.as_mut() else {
            return Step::Go;
        };
        let batch: Option<Vec<Op>> = match role {
            FlushRole::Flusher { job, index } => u.jobs[job as usize].take_round(index as usize),
            FlushRole::Proactive { job } => {
                let j = &mut u.jobs[job as usize];
                let n = j.samples.len().min(j.proactive_round).min(PROACTIVE_BATCH);
                if j.proactive_on && n > 0 {
                    j.proactive_round -= n;
                    Some(j.samples.drain(..n).map(|addr| Op::Clwb { addr }).collect())
                } else {
                    j.proactive_round = 0;
                    None
                }
            }
            _ => return Step::Go,
        };
        match batch {
            Some(ops) => {
                self.threads[tid as usize].gen.inject(ops);
                Step::Go
            }
            None => {
                if let Some(u) = self.flush.as_mut() {
                    match role {
                        FlushRole::Flusher { job, index } => {
                            u.jobs[job as usize].idle[index as usize] = true
                        }
                        FlushRole::Proactive { job } => u.jobs[job as usize].proactive_idle = true,
                        _ => {}
                    }
                }
                if let FlushRole::Proactive { job } = role {
                    // sleeps until its next poll, as the runtime's loop does
                    let t = self.now + PROACTIVE_POLL;
                    self.push(t, EvKind::ProactivePoll(job));
                }
                self.threads[tid as usize].pending = Some(Op::FlushPull);
                self.yield_cpu(tid, Block::FlushIdle);
                Step::Stop
            }
        }
    }

    /// A batch of queue `q` passed its sfence (a flusher's, or the
    /// application thread's own before a dedicated flush).
    fn batch_done(&mut self, tid: u32, q: u32, lines: u32) -> Step {
        let Some(j) = self.flush_job_of(tid) else {
            return Step::Go;
        };
        let Some(u) = self.flush.as_mut() else {
            return Step::Go;
        };
        let job = &mut u.jobs[j];
        let q = q as usize;
        job.completed[q] += lines as u64;
        if matches!(
            self.threads[tid as usize].flush_role,
            FlushRole::Flusher { .. }
        ) {
            job.stats.flusher_batches += 1;
        }
        if let Some(target) = job.waiting[q] {
            if job.completed[q] >= target {
                job.waiting[q] = None;
                let app = job.app[q];
                self.wake_yielded(app);
            }
        }
        Step::Go
    }

    /// The proactive thread of flush job `j` wakes from its sleep and takes
    /// the samples queued now as its round.
    pub(super) fn proactive_poll(&mut self, j: u32) {
        let Some(u) = self.flush.as_mut() else { return };
        let job = &mut u.jobs[j as usize];
        if !job.proactive_idle {
            return;
        }
        job.proactive_idle = false;
        job.proactive_round = job.samples.len();
        if let Some(p) = job.proactive_tid {
            self.wake_yielded(p);
        }
    }

    /// Steps flush job `j`'s controller and applies its decision.
    pub(super) fn flush_tick(&mut self, j: u32) {
        let now = self.now;
        let measure_start = self.measure_start;
        let Some((flushers, proactive)) = self.flush_decide(j) else {
            return;
        };
        let Some(u) = self.flush.as_mut() else { return };
        let job = &mut u.jobs[j as usize];
        let m = flushers.min(job.flushers.len());
        let mut repin: Vec<(u32, u32)> = Vec::new();
        if m != job.active {
            let from = job.m_since.max(measure_start);
            if now > from {
                job.stats.m_area += job.active as f64 * (now - from) as f64;
            }
            job.m_since = now;
            job.active = m;
            // the runtime's `set_flushers` moves `pin_epoch`: each pinned
            // thread re-pins to its CPU of the plan, whose inputs (the
            // hardware threads, the application's CPUs at registration)
            // an M change leaves as they were
            repin.clone_from(&job.pins);
        }
        job.proactive_on = job.proactive_allowed && proactive;
        if !job.proactive_on {
            job.samples.clear();
        }
        let tick = job.tick;
        let queued: Vec<usize> = (0..job.queues.len())
            .filter(|&q| !job.queues[q].is_empty())
            .collect();
        for (tid, cpu) in repin {
            // the CPU is the machine's (the plan takes it from the job's
            // CPU list): the pin cannot be refused
            let _ = self.set_affinity(tid, CpuSet::single(cpu as usize));
        }
        for q in queued {
            self.wake_servers(j as usize, q);
        }
        self.push(now + tick, EvKind::FlushTick(j));
    }
}

#[path = "flush_results.rs"]
mod results;
#[path = "flush_route.rs"]
mod route;

#[cfg(test)]
#[path = "flush_tests.rs"]
mod tests;

//! CPUs, cores and threads: the run queues and time slices of the
//! scheduler, a thread stepping through its generator's ops, the per-core
//! fill buffers it stalls on, duty cycles (Dicio §4.2) and affinity changes
//! a policy makes.

use super::fill::{Chain, ReqKind};
use super::gate::GATE_BYPASS_BYTES;
use super::{Engine, EvKind};
use crate::histogram::Histogram;
use crate::rng::Rng;
use crate::workload::{Generator, Op, Ps, NS};
use memtamer_core::{AccessStats, CpuSet};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Block {
    None,
    Compute,
    Lfb,
    Dep,
    Drain,
    Gate,
    Arrival,
    /// A flush-workload fence waiting for its Ribbon queue to drain.
    Fence,
    /// A Ribbon flusher or proactive thread with nothing to do.
    FlushIdle,
}

pub(super) struct Thread {
    pub(super) job: u32,
    pub(super) gen: Generator,
    pub(super) rng: Rng,
    pub(super) cpu: u32,
    pub(super) allowed: CpuSet,
    pub(super) on_cpu: bool,
    pub(super) block: Block,
    pub(super) wake_gen: u32,
    pub(super) compute_left: Ps,
    pub(super) pending: Option<Op>,
    pub(super) outstanding: u32,
    pub(super) gated: bool,
    pub(super) gate_held: bool,
    pub(super) gate_wait_start: Ps,
    pub(super) pm_req: Option<(u64, bool)>,
    pub(super) arrivals: VecDeque<Ps>,
    pub(super) cur_arrival: Ps,
    pub(super) arrival_mean_ps: f64,
    // stats (cumulative; windows diff them)
    pub(super) units: u64,
    pub(super) bytes: u64,
    pub(super) pm: AccessStats,
    pub(super) dram: AccessStats,
    pub(super) gate_wait: Ps,
    pub(super) run_time: Ps,
    pub(super) run_since: Ps,
    pub(super) latency: Histogram,
    pub(super) pm_store_bytes: u64,
    /// The job's duty cycle is in its off-phase: the thread may not run.
    pub(super) duty_off: bool,
    /// Runnable, but held off every CPU by the duty cycle (in no run queue).
    pub(super) parked: bool,
    /// Its part in a flush workload (application thread, flusher, proactive).
    pub(super) flush_role: super::flush::FlushRole,
    /// Its current Quartz epoch (counted always, used only with `[quartz]`).
    pub(super) qz: super::quartz::QuartzEpoch,
}

/// Where a new thread starts: the parts a job's set-up chooses; every other
/// field of [`Thread`] starts at rest (off CPU, nothing pending, zero stats).
pub(super) struct ThreadStart {
    pub(super) job: u32,
    pub(super) gen: Generator,
    pub(super) rng: Rng,
    pub(super) cpu: u32,
    pub(super) allowed: CpuSet,
    pub(super) gated: bool,
    pub(super) arrival_mean_ps: f64,
    pub(super) flush_role: super::flush::FlushRole,
}

impl Thread {
    /// A thread at rest, as every job's set-up creates them (one place, so
    /// a new field cannot be forgotten in one of the set-ups).
    pub(super) fn new(start: ThreadStart) -> Thread {
        Thread {
            job: start.job,
            gen: start.gen,
            rng: start.rng,
            cpu: start.cpu,
            allowed: start.allowed,
            on_cpu: false,
            block: Block::None,
            wake_gen: 0,
            compute_left: 0,
            pending: None,
            outstanding: 0,
            gated: start.gated,
            gate_held: false,
            gate_wait_start: 0,
            pm_req: None,
            arrivals: VecDeque::new(),
            cur_arrival: 0,
            arrival_mean_ps: start.arrival_mean_ps,
            units: 0,
            bytes: 0,
            pm: AccessStats::default(),
            dram: AccessStats::default(),
            gate_wait: 0,
            run_time: 0,
            run_since: 0,
            latency: Histogram::default(),
            pm_store_bytes: 0,
            duty_off: false,
            parked: false,
            flush_role: start.flush_role,
            qz: Default::default(),
        }
    }
}

/// A job's duty cycle (`CoreBudget::duty_cycle` < 1): its threads run during
/// the first `on` of every period of the engine's grid and are descheduled
/// for the rest. Events of an older setting carry an older `gen` and are ignored.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct JobDuty {
    /// On-time per period, ps; `None` = not duty-cycled; `Some(0)` = stopped.
    pub(super) on: Option<Ps>,
    pub(super) gen: u32,
}

pub(super) struct Core {
    pub(super) lfb_used: u32,
    pub(super) sq_used: u32,
    pub(super) lfb_waiters: VecDeque<u32>,
    pub(super) wb_used: u32,
    pub(super) wb_waiters: VecDeque<u32>,
    pub(super) socket: u32,
}

pub(super) struct Cpu {
    pub(super) core: u32,
    pub(super) sibling: Option<u32>,
    pub(super) current: Option<u32>,
    pub(super) runq: VecDeque<u32>,
    pub(super) slice_gen: u32,
    pub(super) busy: Ps,
    pub(super) busy_since: Ps,
    /// Length of this CPU's first contended time slice: a random point in
    /// (0, slice]. CFS slices on different CPUs are not phase-aligned; without
    /// this, threads sharing CPUs would run in lock-step across all CPUs.
    pub(super) first_slice: Option<Ps>,
}

/// Core-side parameters (from `[cpu]`), times in ps.
pub(super) struct CoreParams {
    /// Period of a job's duty cycle.
    pub(super) duty_period: Ps,
    /// L1D fill buffers per core.
    pub(super) fill_buffers: u32,
    /// L2 miss-queue entries for the streamer per core.
    pub(super) prefetch_slots: u32,
    /// Write-back buffers per core.
    pub(super) wb_buffers: u32,
    /// Compute stretch while the SMT sibling computes.
    pub(super) smt_slowdown: f64,
    /// Scheduler time slice.
    pub(super) slice: Ps,
}

impl Core {
    /// An idle core of `socket`.
    pub(super) fn new(socket: u32) -> Core {
        Core {
            lfb_used: 0,
            sq_used: 0,
            lfb_waiters: VecDeque::new(),
            wb_used: 0,
            wb_waiters: VecDeque::new(),
            socket,
        }
    }
}

impl Cpu {
    /// An idle hardware thread of `core` (SMT `sibling`, if any) whose first
    /// contended time slice lasts `first_slice`.
    pub(super) fn new(core: u32, sibling: Option<u32>, first_slice: Ps) -> Cpu {
        Cpu {
            core,
            sibling,
            current: None,
            runq: VecDeque::new(),
            slice_gen: 0,
            busy: 0,
            busy_since: 0,
            first_slice: Some(first_slice),
        }
    }
}

impl Engine {
    pub(super) fn enqueue_on_cpu(&mut self, tid: u32, cpu: u32) {
        self.threads[tid as usize].cpu = cpu;
        self.cpus[cpu as usize].runq.push_back(tid);
    }

    /// If `cpu` is idle, runs the next ready thread on it.
    pub(super) fn schedule_next(&mut self, cpu: u32) {
        if self.cpus[cpu as usize].current.is_some() {
            return;
        }
        let Some(tid) = self.cpus[cpu as usize].runq.pop_front() else {
            return;
        };
        let now = self.now;
        let c = &mut self.cpus[cpu as usize];
        c.current = Some(tid);
        c.busy_since = now;
        c.slice_gen += 1;
        let g = c.slice_gen;
        let has_waiters = !c.runq.is_empty();
        if has_waiters {
            let len = c.first_slice.take().unwrap_or(self.cpu_params.slice);
            self.push(now + len, EvKind::SliceEnd(cpu, g));
        }
        let th = &mut self.threads[tid as usize];
        th.on_cpu = true;
        th.cpu = cpu;
        th.run_since = now;
        self.resume(tid);
    }

    /// Continues a thread that just got a CPU.
    pub(super) fn resume(&mut self, tid: u32) {
        let now = self.now;
        let th = &mut self.threads[tid as usize];
        match th.block {
            Block::None => self.step(tid),
            Block::Compute => {
                // off a CPU compute_left is what remains; on one, its end time
                th.wake_gen += 1;
                let g = th.wake_gen;
                let left = th.compute_left;
                th.compute_left = now + left;
                self.push(now + left, EvKind::ThreadRun(tid, g));
            }
            // memory stalls continue when the memory answers
            _ => {}
        }
    }

    pub(super) fn deschedule(&mut self, tid: u32) {
        let now = self.now;
        let th = &mut self.threads[tid as usize];
        if !th.on_cpu {
            return;
        }
        th.on_cpu = false;
        th.run_time += now - th.run_since;
        if th.block == Block::Compute {
            // remaining compute is kept; the pending ThreadRun becomes stale
            th.wake_gen += 1;
        }
        let cpu = th.cpu;
        let c = &mut self.cpus[cpu as usize];
        c.current = None;
        c.busy += now - c.busy_since;
    }

    pub(super) fn slice_end(&mut self, cpu: u32, g: u32) {
        let c = &self.cpus[cpu as usize];
        if c.slice_gen != g {
            return;
        }
        let Some(tid) = c.current else { return };
        if c.runq.is_empty() {
            return;
        }
        self.preempt(tid);
        self.cpus[cpu as usize].runq.push_back(tid);
        self.schedule_next(cpu);
    }

    pub(super) fn preempt(&mut self, tid: u32) {
        let now = self.now;
        let th = &mut self.threads[tid as usize];
        if th.block == Block::Compute {
            // compute_left was set to the end time at start; convert to remaining
            th.compute_left = th.compute_left.saturating_sub(now);
        }
        self.deschedule(tid);
    }

    /// A thread that had yielded its CPU (gate, arrival, throttle) is runnable.
    pub(super) fn wake_yielded(&mut self, tid: u32) {
        let th = &mut self.threads[tid as usize];
        th.block = Block::None;
        if th.duty_off {
            // its job's duty cycle is off: it runs at the next on-phase
            th.parked = true;
            return;
        }
        self.place(tid);
    }

    /// Puts a runnable thread (not on a CPU, in no run queue) on a CPU's queue.
    pub(super) fn place(&mut self, tid: u32) {
        let allowed = self.threads[tid as usize].allowed;
        let prev = self.threads[tid as usize].cpu;
        // prefer the previous CPU if idle, else any idle allowed CPU, else the previous queue
        let target = if allowed.contains(prev as usize)
            && self.cpus[prev as usize].current.is_none()
        {
            prev
        } else if let Some(c) = allowed.iter().find(|&c| {
            c < self.cpus.len() && self.cpus[c].current.is_none() && self.cpus[c].runq.is_empty()
        }) {
            c as u32
        } else if allowed.contains(prev as usize) {
            prev
        } else {
            allowed
                .iter()
                .filter(|&c| c < self.cpus.len())
                .min_by_key(|&c| self.cpus[c].runq.len())
                .unwrap_or(0) as u32
        };
        self.enqueue_on_cpu(tid, target);
        if self.cpus[target as usize].current.is_none() {
            self.schedule_next(target);
        } else if self.cpus[target as usize].runq.len() == 1 {
            // the running thread now has competition: start its slice timer
            let g = self.cpus[target as usize].slice_gen;
            let t = self.now + self.cpu_params.slice;
            self.push(t, EvKind::SliceEnd(target, g));
        }
    }

    /// The thread gives up its CPU (blocks in the kernel).
    pub(super) fn yield_cpu(&mut self, tid: u32, why: Block) {
        self.threads[tid as usize].block = why;
        let cpu = self.threads[tid as usize].cpu;
        self.deschedule(tid);
        self.schedule_next(cpu);
    }

    pub(super) fn step(&mut self, tid: u32) {
        // bounded so that a generator producing only zero-time ops cannot hang
        for _ in 0..10_000 {
            let th = &mut self.threads[tid as usize];
            if !th.on_cpu || th.block != Block::None {
                return;
            }
            if self.quartz.is_some() && self.quartz_epoch(tid) {
                return;
            }
            let th = &mut self.threads[tid as usize];
            let op = match th.pending.take() {
                Some(op) => op,
                None => th.gen.next(&mut th.rng, self.now),
            };
            match op {
                Op::Compute(d) => {
                    let mut d = d;
                    if let Some(sib) = self.cpus[th.cpu as usize].sibling {
                        if let Some(other) = self.cpus[sib as usize].current {
                            if self.threads[other as usize].block == Block::Compute {
                                d = (d as f64 * self.cpu_params.smt_slowdown) as Ps;
                            }
                        }
                    }
                    let th = &mut self.threads[tid as usize];
                    th.block = Block::Compute;
                    th.wake_gen += 1;
                    th.compute_left = self.now + d; // absolute end while running
                    let g = th.wake_gen;
                    self.push(self.now + d, EvKind::ThreadRun(tid, g));
                    return;
                }
                Op::Load { addr, dep, stream } => {
                    if !self.issue(tid, addr, ReqKind::Read, Chain::Load { dep, stream }) {
                        self.stall_lfb(tid, op);
                        return;
                    }
                    if dep {
                        let th = &mut self.threads[tid as usize];
                        th.block = Block::Dep;
                        th.qz.set_stalled(self.now, true);
                        return;
                    }
                }
                Op::StoreNt { addr } => {
                    if !self.issue(tid, addr, ReqKind::NtWrite, Chain::Nt) {
                        self.stall_lfb(tid, op);
                        return;
                    }
                    self.count_store(tid, addr);
                }
                Op::StoreTemporal { addr, flush } => {
                    if !self.issue(tid, addr, ReqKind::Read, Chain::Rfo { flush }) {
                        self.stall_lfb(tid, op);
                        return;
                    }
                    self.count_store(tid, addr);
                }
                Op::CopyLine { src, dst, nt } => {
                    let chain = if nt {
                        Chain::CopyNt { dst }
                    } else {
                        Chain::CopyTemporal { dst }
                    };
                    if !self.issue(tid, src, ReqKind::Read, chain) {
                        self.stall_lfb(tid, op);
                        return;
                    }
                    self.count_store(tid, dst);
                }
                Op::Drain => {
                    // a synchronisation point ends a Quartz epoch
                    th.qz.due = true;
                    if th.outstanding > 0 {
                        th.block = Block::Drain;
                        th.qz.set_stalled(self.now, true);
                        return;
                    }
                }
                Op::PmBegin { bytes, write } => {
                    th.pm_req = Some((bytes, write));
                    if th.gated && bytes >= GATE_BYPASS_BYTES {
                        if !self.gate.arrive(tid) {
                            th.gate_wait_start = self.now;
                            self.yield_cpu(tid, Block::Gate);
                            return;
                        }
                        th.gate_held = true;
                    }
                }
                Op::PmEnd => {
                    if let Some((bytes, write)) = th.pm_req.take() {
                        th.pm.record(bytes, write);
                    }
                    if th.gate_held {
                        th.gate_held = false;
                        self.gate.leave();
                        self.gate_release();
                    }
                }
                Op::Done { units, bytes } => {
                    th.units += units;
                    th.bytes += bytes;
                }
                Op::NextArrival => match th.arrivals.pop_front() {
                    Some(t) => th.cur_arrival = t,
                    None => {
                        th.pending = Some(op);
                        self.yield_cpu(tid, Block::Arrival);
                        return;
                    }
                },
                Op::Store { .. }
                | Op::Flush { .. }
                | Op::Fence
                | Op::Clwb { .. }
                | Op::FlushPull
                | Op::BatchDone { .. }
                | Op::FlushHere { .. } => {
                    if !self.flush_op(tid, op) {
                        return;
                    }
                }
                Op::ArrivalDone => {
                    let lat = (self.now - th.cur_arrival) / NS;
                    if self.measuring {
                        th.latency.record(lat);
                    }
                    let job = th.job as usize;
                    self.job_window_latency[job].record(lat);
                }
            }
        }
        // yield briefly to let time advance
        let th = &mut self.threads[tid as usize];
        th.block = Block::Compute;
        th.wake_gen += 1;
        th.compute_left = self.now + NS;
        let g = th.wake_gen;
        self.push(self.now + NS, EvKind::ThreadRun(tid, g));
    }

    #[inline(always)]
    pub(super) fn stall_lfb(&mut self, tid: u32, op: Op) {
        let th = &mut self.threads[tid as usize];
        th.pending = Some(op);
        th.block = Block::Lfb;
        th.qz.set_stalled(self.now, true);
        let core = self.cpus[th.cpu as usize].core;
        self.cores[core as usize].lfb_waiters.push_back(tid);
    }

    /// Wakes a thread stalled on the memory system (it kept its CPU).
    #[inline]
    pub(super) fn wake_stalled(&mut self, tid: u32) {
        let th = &mut self.threads[tid as usize];
        if matches!(th.block, Block::Lfb | Block::Dep | Block::Drain) {
            th.qz.set_stalled(self.now, false);
        }
        th.block = Block::None;
        if th.on_cpu {
            self.step(tid);
        }
    }

    #[inline]
    pub(super) fn op_done(&mut self, tid: u32, dep: bool) {
        let th = &mut self.threads[tid as usize];
        th.outstanding -= 1;
        let wake =
            (dep && th.block == Block::Dep) || (th.block == Block::Drain && th.outstanding == 0);
        if wake {
            self.wake_stalled(tid);
        }
    }

    /// Sets job `j`'s duty cycle. Periods are a grid of absolute simulated time
    /// (multiples of `cpu.duty_period_us`), so a policy that repeats the same
    /// budget every window changes nothing, and a new fraction only moves the
    /// end of the current on-phase. `duty >= 1` (or NaN) removes the duty
    /// cycle; `duty <= 0` stops the job until a later budget.
    pub(super) fn set_duty(&mut self, j: u32, duty: f64) {
        let period = self.cpu_params.duty_period;
        let on = if duty.is_nan() || duty >= 1.0 {
            None
        } else {
            let on = (duty.max(0.0) * period as f64).round() as Ps;
            (on < period).then_some(on)
        };
        let d = &mut self.job_duty[j as usize];
        if d.on == on {
            return;
        }
        d.on = on;
        d.gen = d.gen.wrapping_add(1);
        let g = d.gen;
        let now = self.now;
        let start = now - now % period;
        match on {
            None => self.duty_run(j, true),
            Some(0) => self.duty_run(j, false),
            Some(on) if now < start + on => {
                self.duty_run(j, true);
                self.push(start + on, EvKind::DutyOff(j, g));
            }
            Some(_) => {
                self.duty_run(j, false);
                self.push(start + period, EvKind::DutyOn(j, g));
            }
        }
    }

    pub(super) fn duty_on(&mut self, j: u32, g: u32) {
        let d = self.job_duty[j as usize];
        let Some(on) = d.on else { return };
        if d.gen != g || on == 0 {
            return;
        }
        self.duty_run(j, true);
        let t = self.now + on;
        self.push(t, EvKind::DutyOff(j, g));
    }

    pub(super) fn duty_off(&mut self, j: u32, g: u32) {
        let d = self.job_duty[j as usize];
        if d.gen != g || d.on.is_none() {
            return;
        }
        self.duty_run(j, false);
        let p = self.cpu_params.duty_period;
        let t = (self.now / p + 1) * p;
        self.push(t, EvKind::DutyOn(j, g));
    }

    /// Lets job `j`'s threads run (`run`) or deschedules them, as if their
    /// cores were taken away: requests in flight complete, nothing new issues.
    pub(super) fn duty_run(&mut self, j: u32, run: bool) {
        let Some(ts) = self.job_threads.get(j as usize).cloned() else {
            return;
        };
        for tid in ts {
            let th = &mut self.threads[tid as usize];
            if run {
                th.duty_off = false;
                if th.parked {
                    th.parked = false;
                    self.place(tid);
                }
                continue;
            }
            th.duty_off = true;
            if th.parked {
                continue;
            }
            let cpu = th.cpu;
            if th.on_cpu {
                self.preempt(tid);
                self.threads[tid as usize].parked = true;
                self.schedule_next(cpu);
            } else if let Some(pos) = self.cpus[cpu as usize].runq.iter().position(|&t| t == tid) {
                self.cpus[cpu as usize].runq.remove(pos);
                self.threads[tid as usize].parked = true;
            }
            // else: blocked in the kernel (gate, arrival); parked when it wakes
        }
    }

    /// Restricts thread `tid` to the CPUs of `set` that exist, moving it off
    /// a CPU outside them; an error (nothing changed) names why not.
    pub(super) fn set_affinity(&mut self, tid: u32, set: CpuSet) -> Result<(), &'static str> {
        let ncpus = self.cpus.len();
        let set = set.intersect(&CpuSet::first_n(ncpus));
        let Some(th) = self.threads.get_mut(tid as usize) else {
            return Err("no such thread");
        };
        if set.is_empty() {
            return Err("none of the CPUs exists");
        }
        th.allowed = set;
        if !set.contains(th.cpu as usize) {
            let to = set
                .iter()
                .min_by_key(|&c| self.cpus[c].runq.len())
                .unwrap_or(0) as u32;
            // `to` is in the thread's new set: the move cannot be refused
            let _ = self.migrate(tid, to);
        }
        Ok(())
    }

    /// Moves thread `tid` to CPU `to` now (a thread blocked in the kernel
    /// goes there when it wakes); an error (nothing changed) names why not.
    pub(super) fn migrate(&mut self, tid: u32, to: u32) -> Result<(), &'static str> {
        if tid as usize >= self.threads.len() {
            return Err("no such thread");
        }
        if to as usize >= self.cpus.len() {
            return Err("no such CPU");
        }
        if !self.threads[tid as usize].allowed.contains(to as usize) {
            return Err("the CPU is outside the thread's allowed set");
        }
        let from = self.threads[tid as usize].cpu;
        if from == to {
            return Ok(());
        }
        self.migrations += 1;
        if self.threads[tid as usize].on_cpu {
            self.preempt(tid);
            self.enqueue_on_cpu(tid, to);
            self.schedule_next(from);
            if self.cpus[to as usize].current.is_none() {
                self.schedule_next(to);
            } else if self.cpus[to as usize].runq.len() == 1 {
                let g = self.cpus[to as usize].slice_gen;
                let t = self.now + self.cpu_params.slice;
                self.push(t, EvKind::SliceEnd(to, g));
            }
        } else if let Some(pos) = self.cpus[from as usize].runq.iter().position(|&t| t == tid) {
            self.cpus[from as usize].runq.remove(pos);
            self.enqueue_on_cpu(tid, to);
            self.schedule_next(to);
        } else {
            // blocked (gate/arrival): it will be placed when it wakes
            self.threads[tid as usize].cpu = to;
        }
        Ok(())
    }
}

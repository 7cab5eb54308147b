//! The discrete-event engine: threads on CPUs issue cache-line requests that
//! travel through fill buffers, the socket request table, the NUMA link, the
//! channel read/write pending queues and bus, to DRAM or to a [`PmDimm`].
//!
//! Every delay a request sees comes from a finite structure being full or a
//! server being busy. Events are ordered by (time, sequence number), so a run
//! is a pure function of the scenario and the seed.

mod bus;
mod channel;
mod completion;
mod cpu;
mod directory;
mod dram;
mod fill;
mod flush;
mod flush_corun;
mod flush_setup;
mod gate;
pub mod pmdimm;
mod port;
mod quartz;
mod sampler;
mod tor;
mod uncore;

pub use channel::ChannelCounters;
pub use flush::{FlushJobResult, FlushStats};
pub use gate::GATE_BYPASS_BYTES;
pub use sampler::{Sampler, StoreSample};

use crate::config::{
    MemKind, MemoryDirectory, Platform, RemoteTracker, RemoteTracking, RequestTableScope, Scenario,
    WorkloadSpec, LOCAL_DRAM, LOCAL_DRAM_INDEX,
};
use crate::event_queue::{Ev, EventQueue};
use crate::histogram::Histogram;
use crate::rng::Rng;
use crate::workload::{Generator, Ps, NS};
use bus::BusScheduler;
use channel::{Channel, ChannelParams};
use completion::WriteCompletion;
use cpu::{Block, Core, CoreParams, Cpu, JobDuty, Thread, ThreadStart};
use fill::Req;
use gate::Gate;
use memtamer_core::{AccessStats, Actuators, CpuSet, Policy};
use pmdimm::{DimmCounters, PmDimm};
use port::PortState;
use std::collections::VecDeque;
use uncore::{workload_regions, DivBy, Region, Uncore};

/// Threads start at a uniformly random time in [0, this): thread creation
/// and first scheduling take tens of microseconds on Linux.
pub const THREAD_START_SKEW: Ps = 20_000 * NS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EvKind {
    ThreadRun(u32, u32),
    AtImc(u32),
    ChannelKick(u32),
    MediaDone(u32),
    PmReadReady(u32),
    Complete(u32),
    SliceEnd(u32, u32),
    Arrival(u32),
    PolicyTick,
    MeasureStart,
    MediaSnapshot,
    /// Start of a duty-cycle period of a job (job, duty generation).
    DutyOn(u32, u32),
    /// End of the on-phase of a job's duty cycle (job, duty generation).
    DutyOff(u32, u32),
    /// Step flush job `j`'s Ribbon controller.
    FlushTick(u32),
    /// The proactive thread of flush job `j` polls its samples.
    ProactivePoll(u32),
}

/// An event's key packs the time (ps, top 44 bits: up to 17.5 s) and a
/// sequence number (low 20 bits) so that events at the same picosecond run
/// in insertion order and the queue compares one integer. Bits of an event
/// key that hold the sequence number:
const SEQ_BITS: u32 = 20;
/// Longest simulated time an event key can hold.
pub const MAX_SIM_PS: Ps = (1 << (64 - SEQ_BITS)) - 1;

/// Tunables of one engine run (from the scenario).
pub struct EngineConfig {
    /// Seed.
    pub seed: u64,
    /// Warm-up, ps.
    pub warmup: Ps,
    /// Measured duration, ps.
    pub duration: Ps,
    /// Policy window, ps.
    pub window: Ps,
    /// Optional PEBS sampler (period, bytes per store).
    pub sampler: Option<(u64, u64)>,
    /// Keep every Ribbon search of the flush jobs' controllers
    /// (`FlushJobResult::searches`, for `memtamer sim run --trace-search`).
    /// Off, the controllers record nothing (`Controller::recording`): the
    /// results are the same, without the work and the copies.
    pub trace_search: bool,
}

#[cfg(test)]
mod test_support;

/// Per-job measured results.
#[derive(Clone, Debug, Default)]
pub struct JobResult {
    /// Job name.
    pub name: String,
    /// Work units completed in the measured window.
    pub units: u64,
    /// Bytes moved in the measured window.
    pub bytes: u64,
    /// Request-level PM traffic.
    pub pm: AccessStats,
    /// Request-level DRAM traffic.
    pub dram: AccessStats,
    /// Request latencies (LC jobs), ns.
    pub latency: Histogram,
    /// Time waited at the gate, ns.
    pub gate_wait_ns: u64,
    /// Threads.
    pub threads: u32,
}

/// Results of one run.
pub struct RunResult {
    /// Measured seconds.
    pub seconds: f64,
    /// Per job.
    pub jobs: Vec<JobResult>,
    /// Per channel counters over the measured window.
    pub channels: Vec<(String, ChannelCounters)>,
    /// Per DIMM counters over the measured window.
    pub dimms: Vec<(String, DimmCounters)>,
    /// Memory requests (cache lines) simulated.
    pub requests: u64,
    /// Events processed.
    pub events: u64,
    /// Highest number of concurrently admitted gate requests, counted at
    /// admissions made while a limit was in force.
    pub gate_max_admitted: u32,
    /// Sampler, if enabled.
    pub sampler: Option<Sampler>,
    /// Per-thread true PM store bytes (ground truth for the sampler).
    pub pm_store_truth: Vec<u64>,
    /// Migrations performed.
    pub migrations: u64,
    /// Flush jobs (flush workloads), over the measured window.
    pub flush: Vec<FlushJobResult>,
    /// Reports of the phased ranks (empty for other workloads).
    pub ranks: Vec<crate::workload::phased::RankReport>,
}

/// The simulator state.
pub struct Engine {
    now: Ps,
    seq: u64,
    heap: EventQueue<EvKind>,
    threads: Vec<Thread>,
    cores: Vec<Core>,
    cpus: Vec<Cpu>,
    channels: Vec<Channel>,
    channel_names: Vec<String>,
    dimms: Vec<PmDimm>,
    /// Channel of each DIMM.
    dimm_channel: Vec<u32>,
    reqs: Vec<Req>,
    free_reqs: Vec<u32>,
    gate: Gate,
    /// Core-side parameters.
    cpu_params: CoreParams,
    /// The uncore: regions, request tables, link.
    uncore: Uncore,
    /// Channel timing and queue sizes.
    chan_params: ChannelParams,
    /// What the policy port remembers between windows.
    port: PortState,
    job_names: Vec<String>,
    job_class: Vec<memtamer_core::JobClass>,
    job_threads: Vec<Vec<u32>>,
    job_duty: Vec<JobDuty>,
    /// LC latencies recorded since the last policy window, per job (ns).
    job_window_latency: Vec<Histogram>,
    /// Where a PM write completes for the core (a swappable part).
    pm_completion: WriteCompletion,
    /// The channels' bus scheduler (a swappable part).
    bus: BusScheduler,
    // measurement
    measure_start: Ps,
    end: Ps,
    window: Ps,
    /// [`EngineConfig::trace_search`].
    trace_search: bool,
    measuring: bool,
    requests: u64,
    events: u64,
    ch_base: Vec<ChannelCounters>,
    dimm_base: Vec<DimmCounters>,
    migrations: u64,
    sampler: Option<Sampler>,
    /// Line states and Ribbon queues of flush workloads (none without one).
    flush: Option<flush::FlushUnit>,
    /// Quartz-style latency emulation (`[quartz]`; none: off).
    quartz: Option<quartz::Quartz>,
}

fn ps(ns_val: f64) -> Ps {
    (ns_val * NS as f64).round().max(0.0) as Ps
}

impl Engine {
    /// Builds an engine for a scenario on a platform.
    pub fn new(
        platform: &Platform,
        scenario: &Scenario,
        cfg: &EngineConfig,
    ) -> Result<Engine, String> {
        Engine::with_generators(platform, scenario, cfg, Vec::new())
    }

    /// As [`Engine::new`], but job `j` runs `injected[j]` when that is `Some`
    /// (one generator per thread) instead of the generators its workload
    /// spec builds: a driver that keeps a handle on the program state its
    /// threads share (the task-graph runtime of `crate::tahoe`) builds them
    /// itself. The spec still names the job's regions (checked as usual).
    pub fn with_generators(
        platform: &Platform,
        scenario: &Scenario,
        cfg: &EngineConfig,
        mut injected: Vec<Option<Vec<Generator>>>,
    ) -> Result<Engine, String> {
        let p = platform;
        let tpc = p.cpu.threads_per_core;
        let ncores = p.cpu.sockets * p.cpu.cores_per_socket;
        let cores = (0..ncores)
            .map(|c| Core::new(c / p.cpu.cores_per_socket))
            .collect();
        // Linux numbering: CPUs 0..ncores are the first hardware thread of each
        // core, ncores..2*ncores the SMT siblings.
        let ncpus = ncores * tpc;
        let cpus = (0..ncpus)
            .map(|cpu| {
                let core = cpu % ncores;
                let sibling = if tpc == 2 {
                    Some(if cpu < ncores {
                        cpu + ncores
                    } else {
                        cpu - ncores
                    })
                } else {
                    None
                };
                let first_slice = 1 + Rng::new(cfg.seed, (1 << 32) + cpu as u64)
                    .below(ps(p.cpu.time_slice_us * 1e3).max(1));
                Cpu::new(core, sibling, first_slice)
            })
            .collect();
        let mut channels = Vec::new();
        let mut channel_names = Vec::new();
        let mut dimms = Vec::new();
        let mut dimm_channel = Vec::new();
        let burst = ps(64.0 / p.dram.bus_gbps);
        let dram_timing = p
            .dram
            .banks
            .as_ref()
            .and_then(|b| dram::DramTiming::new(b, burst));
        for c in &p.channels {
            let dimm = if c.pm {
                // each DIMM's AIT placement is drawn from the run seed
                let ait_seed = Rng::new(cfg.seed, (2 << 32) + dimms.len() as u64).next_u64();
                dimms.push(PmDimm::new(&p.pm, ait_seed));
                dimm_channel.push(channels.len() as u32);
                Some(dimms.len() as u32 - 1)
            } else {
                None
            };
            channel_names.push(c.name.clone());
            channels.push(Channel::new(c.socket, dimm, dram_timing.as_ref()));
        }
        // one request table per memory controller (or per socket)
        let per_imc = p.uncore.request_table_scope == RequestTableScope::Imc;
        let tables_per_socket = if per_imc {
            p.channels.iter().map(|c| c.imc + 1).max().unwrap_or(1)
        } else {
            1
        };
        // with `uncore.remote_tracker = "cha"`, one more table per socket
        // (after the controllers' tables): the home CHAs' tracker
        let cha_tracker = p.uncore.remote_tracker == RemoteTracker::Cha;
        let tables =
            p.cpu.sockets * tables_per_socket + if cha_tracker { p.cpu.sockets } else { 0 };
        let table_of_channel: Vec<u32> = p
            .channels
            .iter()
            .map(|c| if per_imc { c.imc } else { 0 })
            .collect();
        let regions: Vec<Region> = p
            .regions
            .iter()
            .map(|r| {
                let idx: Vec<u32> = r
                    .channels
                    .iter()
                    .filter_map(|n| p.channels.iter().position(|c| &c.name == n))
                    .map(|i| i as u32)
                    .collect();
                Region {
                    kind: r.kind,
                    per_target: DivBy::new(idx.len() as u64),
                    targets: idx,
                    gran: r.interleave_bytes,
                    gran_shift: r.interleave_bytes.trailing_zeros(),
                }
            })
            .collect();
        let local_dram: Vec<Option<usize>> = (0..p.cpu.sockets)
            .map(|s| {
                regions.iter().position(|r| {
                    r.kind == MemKind::Dram
                        && !r.targets.is_empty()
                        && r.targets.iter().all(|&c| channels[c as usize].socket == s)
                })
            })
            .collect();
        let region_of = |name: &str| -> Option<u8> {
            if name == LOCAL_DRAM {
                return Some(LOCAL_DRAM_INDEX);
            }
            p.regions
                .iter()
                .position(|r| r.name == name)
                .map(|i| i as u8)
        };
        let mut eng = Engine {
            now: 0,
            seq: 0,
            heap: EventQueue::default(),
            threads: Vec::new(),
            cores,
            cpus,
            channels,
            channel_names,
            dimms,
            dimm_channel,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            gate: Gate::default(),
            cpu_params: CoreParams {
                duty_period: ps(p.cpu.duty_period_us * 1000.0).max(1),
                fill_buffers: p.cpu.fill_buffers,
                prefetch_slots: p.cpu.l2_prefetch_slots,
                wb_buffers: p.cpu.writeback_buffers,
                smt_slowdown: p.cpu.smt_slowdown,
                slice: ps(p.cpu.time_slice_us * 1000.0),
            },
            uncore: Uncore {
                overflow_used: vec![0; tables as usize],
                stalled: vec![VecDeque::new(); tables as usize],
                cha_base: cha_tracker.then_some(p.cpu.sockets * tables_per_socket),
                overflow_cap: p.uncore.request_table,
                tables_per_socket,
                table_of_channel,
                core_to_uncore: ps(p.cpu.core_to_uncore_ns),
                uncore_to_core: ps(p.cpu.uncore_to_core_ns),
                cha_to_imc: ps(p.uncore.cha_to_imc_ns),
                link: ps(p.uncore.numa_link_ns),
                remote_home: p.uncore.remote_tracking == RemoteTracking::Home,
                directory: p.uncore.directory == MemoryDirectory::Memory,
                remote_owned: Default::default(),
                tor: tor::Tor::new(
                    p.uncore.tor_entries_per_cha,
                    p.cpu.cores_per_socket,
                    p.cpu.sockets,
                ),
                regions,
                local_dram,
            },
            chan_params: ChannelParams {
                rpq_cap: p.memory.rpq_entries,
                wpq_cap: p.memory.wpq_entries,
                imc_cycle_ps: 1e6 / p.memory.imc_clock_mhz,
                burst,
                dram_access: ps(p.dram.access_ns),
                turnaround: ps(p.dram.turnaround_ns),
                dram: dram_timing,
            },
            port: PortState {
                media_delay: ps(p.pm.media_counter_delay_ms * 1e6),
                ..Default::default()
            },
            job_names: Vec::new(),
            job_class: Vec::new(),
            job_threads: Vec::new(),
            job_duty: Vec::new(),
            job_window_latency: Vec::new(),
            pm_completion: WriteCompletion::new(p.pm.write_completion),
            bus: BusScheduler::new(&p.memory),
            measure_start: cfg.warmup,
            end: cfg.warmup + cfg.duration,
            window: cfg.window.max(NS),
            trace_search: cfg.trace_search,
            measuring: false,
            requests: 0,
            events: 0,
            ch_base: Vec::new(),
            dimm_base: Vec::new(),
            migrations: 0,
            sampler: None,
            flush: None,
            quartz: p.quartz.as_ref().map(quartz::Quartz::new),
        };
        let all = CpuSet::first_n(ncpus as usize);
        let mut next_cpu = 0u32;
        for (j, job) in scenario.jobs.iter().enumerate() {
            eng.job_names.push(job.name.clone());
            eng.job_class.push(job.class);
            eng.job_threads.push(Vec::new());
            eng.job_duty.push(JobDuty::default());
            eng.job_window_latency.push(Histogram::default());
            let allowed = match &job.cpus {
                Some(c) => CpuSet::parse_list(c)
                    .map_err(|e| format!("job {}: {e}", job.name))?
                    .intersect(&all),
                None => all,
            };
            if allowed.is_empty() && job.threads > 0 {
                return Err(format!(
                    "job {}: none of its CPUs exist on platform {}",
                    job.name, p.name
                ));
            }
            Generator::check(&job.workload).map_err(|m| format!("job {}: {m}", job.name))?;
            // every region the workload names must exist
            let names = workload_regions(&job.workload);
            if names.iter().any(|n| n == LOCAL_DRAM) {
                if let Some(s) = eng.uncore.local_dram.iter().position(|r| r.is_none()) {
                    return Err(format!(
                        "job {}: region `{LOCAL_DRAM}` needs a DRAM region on every socket, and platform {} has none whose channels all lie on socket {s}",
                        job.name, p.name
                    ));
                }
            }
            for n in &names {
                if region_of(n).is_none() {
                    return Err(format!(
                        "job {}: platform {} has no region `{n}` (has: {})",
                        job.name,
                        p.name,
                        p.regions
                            .iter()
                            .map(|r| r.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
            let start = match &job.start_cpus {
                Some(c) => {
                    let s = CpuSet::parse_list(c)
                        .map_err(|e| format!("job {}: start_cpus: {e}", job.name))?;
                    if s.is_empty() || s.intersect(&allowed) != s {
                        return Err(format!(
                            "job {}: start_cpus {c} must be a non-empty subset of its cpus",
                            job.name
                        ));
                    }
                    Some(s)
                }
                None => job.cpus.as_ref().map(|_| allowed),
            };
            let allowed_list: Vec<u32> =
                start.unwrap_or(allowed).iter().map(|c| c as u32).collect();
            let (gated, mean) = match &job.workload {
                WorkloadSpec::PmStream { gated, .. } => (*gated, 0.0),
                WorkloadSpec::LcServer { rate_kops, .. } => (true, 1e9 / rate_kops),
                _ => (true, 0.0),
            };
            let mut gens = match injected.get_mut(j).and_then(Option::take) {
                Some(g) => g,
                None => {
                    Generator::for_job(&job.workload, eng.threads.len() as u32, job.threads, &|n| {
                        region_of(n).unwrap_or(0)
                    })
                }
            }
            .into_iter();
            for i in 0..job.threads {
                let tid = eng.threads.len() as u32;
                let Some(gen) = gens.next() else {
                    return Err(format!("job {}: no generator for thread {i}", job.name));
                };
                let cpu = if start.is_some() {
                    allowed_list[i as usize % allowed_list.len()]
                } else {
                    let c = next_cpu % ncpus;
                    next_cpu += 1;
                    c
                };
                eng.threads.push(Thread::new(ThreadStart {
                    job: j as u32,
                    gen,
                    rng: Rng::new(cfg.seed, tid as u64 + 1),
                    cpu,
                    allowed,
                    gated,
                    arrival_mean_ps: mean,
                    flush_role: flush::FlushRole::None,
                }));
                eng.job_threads[j].push(tid);
            }
            if let WorkloadSpec::Flush { .. } = &job.workload {
                let place = flush_setup::Placement {
                    allowed,
                    list: &allowed_list,
                    fixed: start.is_some(),
                    ncpus,
                    seed: cfg.seed,
                };
                eng.add_flush_job(p, j, job, &place, &mut next_cpu)?;
            }
        }
        if let Some((period, store_bytes)) = cfg.sampler {
            eng.sampler = Some(Sampler::new(
                period,
                store_bytes,
                ncpus as usize,
                eng.threads.len(),
            ));
        }
        Ok(eng)
    }

    /// Schedules `kind` at `t` (inlined: at each call site the lane is a constant).
    #[inline(always)]
    fn push(&mut self, t: Ps, kind: EvKind) {
        self.seq += 1;
        let key = (t.min(MAX_SIM_PS) << SEQ_BITS) | (self.seq & ((1 << SEQ_BITS) - 1));
        let seq_hi = (self.seq >> SEQ_BITS) as u32;
        // Mesh crossings to a memory controller and completions back are
        // scheduled a constant delay ahead, so they arrive mostly in order.
        let lane = match kind {
            EvKind::AtImc(_) => Some(0),
            EvKind::Complete(_) => Some(1),
            _ => None,
        };
        self.heap.push(Ev { key, seq_hi, kind }, lane);
    }

    /// Runs the scenario with `policy` until the end of the measured window.
    pub fn run(mut self, policy: &mut dyn Policy) -> RunResult {
        // place threads, start them
        for tid in 0..self.threads.len() as u32 {
            // threads do not start in the same picosecond: creating and first
            // scheduling a thread takes tens of microseconds, so each starts after
            // a random skew (this keeps streams from running in artificial lock-step)
            let th = &mut self.threads[tid as usize];
            th.block = Block::Compute;
            th.compute_left = th.rng.below(THREAD_START_SKEW);
            let cpu = th.cpu;
            self.enqueue_on_cpu(tid, cpu);
            if self.threads[tid as usize].arrival_mean_ps > 0.0 {
                let gap = self.next_gap(tid);
                self.push(gap, EvKind::Arrival(tid));
            }
        }
        for cpu in 0..self.cpus.len() as u32 {
            self.schedule_next(cpu);
        }
        self.push(self.measure_start, EvKind::MeasureStart);
        self.push(self.window, EvKind::PolicyTick);
        self.start_flush_ticks();
        if !self.dimms.is_empty() && self.port.media_delay > 0 {
            self.push(self.port.media_delay, EvKind::MediaSnapshot);
        }
        self.port.last_obs_threads = vec![Default::default(); self.threads.len()];
        self.port.last_obs_channels = vec![Default::default(); self.channels.len()];
        self.port.last_obs_cpu_busy = vec![0; self.cpus.len()];
        self.port.last_obs_units = vec![0; self.job_names.len()];
        self.port.media_snap = vec![Default::default(); self.dimms.len()];
        self.port.media_snap_prev = self.port.media_snap.clone();
        let mut job_base: Vec<(u64, u64, AccessStats, AccessStats, u64)> = Vec::new();
        while let Some(ev) = self.heap.pop() {
            let t = ev.key >> SEQ_BITS;
            if t > self.end {
                self.now = self.end;
                break;
            }
            self.now = t;
            self.events += 1;
            match ev.kind {
                EvKind::ThreadRun(tid, g) => {
                    let th = &mut self.threads[tid as usize];
                    if th.wake_gen == g && th.block == Block::Compute && th.on_cpu {
                        th.block = Block::None;
                        th.compute_left = 0;
                        self.step(tid);
                    }
                }
                EvKind::AtImc(r) => self.at_imc(r),
                EvKind::ChannelKick(c) => {
                    // A kick moved earlier by `schedule_kick` leaves its old
                    // event queued; that stale event must neither clear a
                    // later pending kick nor run the bus a second time (it
                    // re-queued itself at every transfer of a busy channel).
                    let ch = &mut self.channels[c as usize];
                    if ch.kick_at == Some(self.now) {
                        ch.kick_at = None;
                        self.kick(c);
                    }
                }
                EvKind::MediaDone(d) => {
                    let freed = self.dimms[d as usize].media_done(self.now);
                    self.dimm_accepted(d);
                    self.start_media(d);
                    if freed > 0 {
                        let ch = self.dimm_channel[d as usize];
                        self.kick(ch);
                    }
                }
                EvKind::PmReadReady(r) => {
                    let ch = self.reqs[r as usize].channel;
                    self.channels[ch as usize].pm_data.push_back(r);
                    self.kick(ch);
                }
                EvKind::Complete(r) => self.complete(r),
                EvKind::SliceEnd(cpu, g) => self.slice_end(cpu, g),
                EvKind::Arrival(tid) => {
                    let now = self.now;
                    self.threads[tid as usize].arrivals.push_back(now);
                    let gap = self.next_gap(tid);
                    self.push(now + gap, EvKind::Arrival(tid));
                    if self.threads[tid as usize].block == Block::Arrival {
                        self.wake_yielded(tid);
                    }
                }
                EvKind::PolicyTick => {
                    let obs = self.observe();
                    let d = policy.decide(&obs);
                    // what a decision names that does not exist is ignored
                    // (the report says so; the run goes on)
                    let _report = Actuators::apply(&mut self, &d);
                    let t = self.now + self.window;
                    self.push(t, EvKind::PolicyTick);
                }
                EvKind::MeasureStart => {
                    self.measuring = true;
                    self.ch_base = self.channel_counters_now();
                    self.dimm_base = self.dimms.iter().map(|d| d.counters).collect();
                    job_base = (0..self.job_names.len())
                        .map(|j| self.job_totals(j))
                        .collect();
                    self.flush_measure_start();
                }
                EvKind::MediaSnapshot => {
                    self.port.media_snap_prev = std::mem::take(&mut self.port.media_snap);
                    self.port.media_snap_prev_time = self.port.media_snap_time;
                    self.port.media_snap = self.dimms.iter().map(|d| d.counters).collect();
                    self.port.media_snap_time = self.now;
                    let t = self.now + self.port.media_delay;
                    self.push(t, EvKind::MediaSnapshot);
                }
                EvKind::DutyOn(j, g) => self.duty_on(j, g),
                EvKind::DutyOff(j, g) => self.duty_off(j, g),
                EvKind::FlushTick(j) => self.flush_tick(j),
                EvKind::ProactivePoll(j) => self.proactive_poll(j),
            }
        }
        self.now = self.end;
        self.finish(job_base)
    }

    #[inline(never)] // cold: keeps the event loop's frame small
    fn job_totals(&self, j: usize) -> (u64, u64, AccessStats, AccessStats, u64) {
        let mut u = 0;
        let mut b = 0;
        let mut pm = AccessStats::default();
        let mut dram = AccessStats::default();
        let mut gw = 0;
        for &t in &self.job_threads[j] {
            let th = &self.threads[t as usize];
            u += th.units;
            b += th.bytes;
            pm.add(&th.pm);
            dram.add(&th.dram);
            gw += th.gate_wait;
        }
        (u, b, pm, dram, gw)
    }

    #[inline(never)] // cold: keeps the event loop's frame small
    fn finish(mut self, job_base: Vec<(u64, u64, AccessStats, AccessStats, u64)>) -> RunResult {
        for c in 0..self.channels.len() {
            self.account_occupancy(c);
        }
        let seconds = (self.end - self.measure_start) as f64 / 1e12;
        let mut jobs = Vec::new();
        for j in 0..self.job_names.len() {
            let (u, b, pm, dram, gw) = self.job_totals(j);
            let base = job_base.get(j).cloned().unwrap_or_default();
            let mut lat = Histogram::default();
            for &t in &self.job_threads[j] {
                lat.merge(&self.threads[t as usize].latency);
            }
            jobs.push(JobResult {
                name: self.job_names[j].clone(),
                units: u - base.0,
                bytes: b - base.1,
                pm: diff_stats(&pm, &base.2),
                dram: diff_stats(&dram, &base.3),
                latency: lat,
                gate_wait_ns: (gw - base.4) / NS,
                threads: self.job_threads[j].len() as u32,
            });
        }
        let now_ch = self.channel_counters_now();
        let channels = self
            .channel_names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let a = now_ch[i];
                let b = self.ch_base.get(i).copied().unwrap_or_default();
                (
                    n.clone(),
                    ChannelCounters {
                        cas_reads: a.cas_reads - b.cas_reads,
                        cas_writes: a.cas_writes - b.cas_writes,
                        pmm_rpq_occupancy: a.pmm_rpq_occupancy - b.pmm_rpq_occupancy,
                        pmm_rpq_inserts: a.pmm_rpq_inserts - b.pmm_rpq_inserts,
                        pmm_wpq_occupancy: a.pmm_wpq_occupancy - b.pmm_wpq_occupancy,
                        pmm_wpq_inserts: a.pmm_wpq_inserts - b.pmm_wpq_inserts,
                    },
                )
            })
            .collect();
        let dimms = self
            .dimms
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let a = d.counters;
                let b = self.dimm_base.get(i).copied().unwrap_or_default();
                let ch = self.dimm_channel[i] as usize;
                (
                    self.channel_names[ch].clone(),
                    DimmCounters {
                        media_read_bytes: a.media_read_bytes - b.media_read_bytes,
                        media_write_bytes: a.media_write_bytes - b.media_write_bytes,
                        request_read_bytes: a.request_read_bytes - b.request_read_bytes,
                        request_write_bytes: a.request_write_bytes - b.request_write_bytes,
                        rmw: a.rmw - b.rmw,
                    },
                )
            })
            .collect();
        RunResult {
            seconds,
            jobs,
            channels,
            dimms,
            requests: self.requests,
            events: self.events,
            gate_max_admitted: self.gate.max_admitted_seen(),
            pm_store_truth: self.threads.iter().map(|t| t.pm_store_bytes).collect(),
            flush: self.flush_results(),
            sampler: self.sampler.take(),
            migrations: self.migrations,
            ranks: self
                .threads
                .iter()
                .filter_map(|t| t.gen.rank_report())
                .collect(),
        }
    }

    fn next_gap(&mut self, tid: u32) -> Ps {
        let th = &mut self.threads[tid as usize];
        let mean = th.arrival_mean_ps;
        (th.rng.exp(mean) as Ps).max(1)
    }
}

fn diff_stats(a: &AccessStats, b: &AccessStats) -> AccessStats {
    let mut d = AccessStats {
        read_bytes: a.read_bytes - b.read_bytes,
        write_bytes: a.write_bytes - b.write_bytes,
        ..Default::default()
    };
    for i in 0..4 {
        d.reads_by_size[i] = a.reads_by_size[i] - b.reads_by_size[i];
        d.writes_by_size[i] = a.writes_by_size[i] - b.writes_by_size[i];
    }
    d
}

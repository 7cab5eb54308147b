//! The discrete-event engine: threads on CPUs issue cache-line requests that
//! travel through fill buffers, the socket request table, the NUMA link, the
//! channel read/write pending queues and bus, to DRAM or to a [`PmDimm`].
//!
//! Every delay a request sees comes from a finite structure being full or a
//! server being busy. Events are ordered by (time, sequence number), so a run
//! is a pure function of the scenario and the seed.

use crate::config::{
    MemKind, Platform, PmWriteCompletion, RemoteTracking, Scenario, WorkloadSpec, LOCAL_DRAM,
    LOCAL_DRAM_INDEX,
};
use crate::event_queue::{Ev, EventQueue};
use crate::histogram::Histogram;
use crate::pmdimm::{DimmCounters, PmDimm, NO_REQ};
use crate::rng::Rng;
use crate::workload::{Generator, Op, Ps, NS, REGION_SHIFT};
use memtamer_core::{
    AccessStats, ChannelObs, CpuObs, CpuSet, Decision, DimmObs, GateLimit, GateObs, JobObs,
    Observation, Policy, ThreadObs,
};
use std::collections::VecDeque;

/// Threads start at a uniformly random time in [0, this): thread creation
/// and first scheduling take tens of microseconds on Linux.
pub const THREAD_START_SKEW: Ps = 20_000 * NS;

/// Requests below this size never wait at the PATS gate (PATS §IV).
pub const GATE_BYPASS_BYTES: u64 = 256;

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
}

/// An event's key packs the time (ps, top 44 bits: up to 17.5 s) and a
/// sequence number (low 20 bits) so that events at the same picosecond run
/// in insertion order and the queue compares one integer. Bits of an event
/// key that hold the sequence number:
const SEQ_BITS: u32 = 20;
/// Longest simulated time an event key can hold.
pub const MAX_SIM_PS: Ps = (1 << (64 - SEQ_BITS)) - 1;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReqKind {
    Read,
    NtWrite,
    Writeback,
}

/// What happens when a request's current stage completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chain {
    /// A load: done (`stream`: it held an L2 prefetch slot, not a fill buffer).
    Load { dep: bool, stream: bool },
    /// A non-temporal store: done at acceptance.
    Nt,
    /// memcpy line: after the load, store `dst` non-temporally.
    CopyNt { dst: u64 },
    /// memcpy line with temporal stores: after the load, RFO `dst`, then write it back.
    CopyTemporal { dst: u64 },
    /// RFO done: write the line back (flush = a clwb the next drain waits for).
    Rfo { flush: bool },
    /// A dirty write-back; `flush` = counted as the thread's outstanding op.
    Wb { flush: bool },
}

#[derive(Clone, Copy, Debug)]
struct Req {
    tid: u32,
    core: u32,
    kind: ReqKind,
    chain: Chain,
    addr: u64,
    channel: u32,
    dimm: u32,
    dev: u64,
    pm: bool,
    remote: bool,
    src_socket: u32,
    /// The socket whose request table (overflow buffer and ingress) tracks
    /// it: the issuing socket, or for a remote request with
    /// `uncore.remote_tracking = "home"` the socket of its channel.
    ts: u32,
    /// A remote request holds an entry of its tracking socket's request
    /// buffer from reaching the caching agents until its completion comes back.
    holds: bool,
    /// Issued outside a PM request (no `PmBegin`/`PmEnd` around it): a PM
    /// line is counted in the thread's PM traffic on its own, at completion.
    line_level: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    None,
    Compute,
    Lfb,
    Dep,
    Drain,
    Gate,
    Arrival,
}

struct Thread {
    job: u32,
    gen: Generator,
    rng: Rng,
    cpu: u32,
    allowed: CpuSet,
    on_cpu: bool,
    block: Block,
    wake_gen: u32,
    compute_left: Ps,
    pending: Option<Op>,
    outstanding: u32,
    gated: bool,
    gate_held: bool,
    gate_wait_start: Ps,
    pm_req: Option<(u64, bool)>,
    arrivals: VecDeque<Ps>,
    cur_arrival: Ps,
    arrival_mean_ps: f64,
    // stats (cumulative; windows diff them)
    units: u64,
    bytes: u64,
    pm: AccessStats,
    dram: AccessStats,
    gate_wait: Ps,
    run_time: Ps,
    run_since: Ps,
    latency: Histogram,
    pm_store_bytes: u64,
    /// The job's duty cycle is in its off-phase: the thread may not run.
    duty_off: bool,
    /// Runnable, but held off every CPU by the duty cycle (in no run queue).
    parked: bool,
}

/// A job's duty cycle (`CoreBudget::duty_cycle` < 1): its threads run during
/// the first `on` of every period of the engine's grid and are descheduled
/// for the rest. Events of an older setting carry an older `gen` and are ignored.
#[derive(Clone, Copy, Debug, Default)]
struct JobDuty {
    /// On-time per period, ps; `None` = not duty-cycled; `Some(0)` = stopped.
    on: Option<Ps>,
    gen: u32,
}

struct Core {
    lfb_used: u32,
    sq_used: u32,
    lfb_waiters: VecDeque<u32>,
    wb_used: u32,
    wb_waiters: VecDeque<u32>,
    socket: u32,
}

struct Cpu {
    core: u32,
    sibling: Option<u32>,
    current: Option<u32>,
    runq: VecDeque<u32>,
    slice_gen: u32,
    busy: Ps,
    busy_since: Ps,
    /// Length of this CPU's first contended time slice: a random point in
    /// (0, slice]. CFS slices on different CPUs are not phase-aligned; without
    /// this, threads sharing CPUs would run in lock-step across all CPUs.
    first_slice: Option<Ps>,
}

#[derive(Clone, Copy)]
struct WriteItem {
    seq: u64,
    req: u32,
    pm: bool,
    dimm: u32,
    dev: u64,
}

#[derive(Default, Clone, Copy, Debug)]
/// Cumulative counters of one channel (uncore iMC equivalents).
pub struct ChannelCounters {
    /// DRAM CAS reads.
    pub cas_reads: u64,
    /// DRAM CAS writes.
    pub cas_writes: u64,
    /// PM RPQ occupancy summed over iMC cycles.
    pub pmm_rpq_occupancy: u64,
    /// PM RPQ inserts.
    pub pmm_rpq_inserts: u64,
    /// PM WPQ occupancy summed over iMC cycles.
    pub pmm_wpq_occupancy: u64,
    /// PM WPQ inserts.
    pub pmm_wpq_inserts: u64,
}

struct Channel {
    socket: u32,
    rpq_used: u32,
    wpq_used: u32,
    rpq_wait: VecDeque<u32>,
    wpq_wait: VecDeque<u32>,
    dram_rq: VecDeque<(Ps, u32)>,
    pm_data: VecDeque<u32>,
    dram_wq: VecDeque<WriteItem>,
    pm_wq: VecDeque<WriteItem>,
    write_seq: u64,
    pm_in_rpq: u32,
    pm_in_wpq: u32,
    occ_since: Ps,
    occ_rpq_ps: u128,
    occ_wpq_ps: u128,
    bus_free: Ps,
    last_write: bool,
    write_mode: bool,
    kick_at: Option<Ps>,
    dimm: Option<u32>,
    counters: ChannelCounters,
}

/// An address range interleaved over channels. A request is local or remote
/// by the socket of the channel it is routed to (a region may span sockets).
struct Region {
    kind: MemKind,
    targets: Vec<u32>,
    gran: u64,
    /// log2 of `gran` (a power of two, validated).
    gran_shift: u32,
    /// Divides a chunk number by the number of targets.
    per_target: DivBy,
}

/// Division by a fixed `n` as a multiply and shifts (Granlund and
/// Montgomery, PLDI'94, Thm. 4.2), exact for every dividend below
/// 2^[`REGION_SHIFT`] (region offsets). Every request is routed, and a 64-bit
/// `div` costs tens of cycles.
#[derive(Clone, Copy, Debug)]
struct DivBy {
    n: u64,
    /// floor(2^(REGION_SHIFT + log) / n) + 1 < 2^(REGION_SHIFT + 1)
    magic: u64,
    /// ceil(log2 n)
    log: u32,
}

impl DivBy {
    fn new(n: u64) -> DivBy {
        let n = n.max(1);
        let log = 64 - (n - 1).leading_zeros();
        let magic = ((1u128 << (REGION_SHIFT + log)) / n as u128 + 1) as u64;
        DivBy { n, magic, log }
    }

    /// `(x / n, x % n)` for `x < 2^REGION_SHIFT`.
    #[inline]
    fn div_rem(self, x: u64) -> (u64, u64) {
        debug_assert!(x < 1 << REGION_SHIFT);
        // (x * magic) >> (REGION_SHIFT + log), as the high half of a
        // 64 x 64-bit product (x shifted up to 64 bits) shifted by `log`
        let wide = ((x << (64 - REGION_SHIFT)) as u128) * self.magic as u128;
        let q = ((wide >> 64) as u64) >> self.log;
        (q, x - q * self.n)
    }
}

/// The PATS gate as the simulator's actuator: a counting semaphore with a
/// FIFO (round-robin) wait queue, bypassed by requests below 256 B.
#[derive(Default)]
struct Gate {
    limit: Option<u32>,
    admitted: u32,
    waiters: VecDeque<u32>,
    max_admitted_seen: u32,
}

/// A simulated PEBS store sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreSample {
    /// Thread.
    pub tid: u32,
    /// Data address.
    pub addr: u64,
    /// Store size, bytes.
    pub size: u32,
}

/// Simulated PEBS: a per-CPU counter of retired store instructions that
/// takes one sample every `period` stores, with ground truth kept beside it.
pub struct Sampler {
    /// Sampling period (stores).
    pub period: u64,
    /// Bytes per store instruction (64 = one zmm NT store per line).
    pub store_bytes: u64,
    counters: Vec<u64>,
    /// Samples taken (bounded).
    pub samples: Vec<StoreSample>,
    /// Per-thread sampled PM store bytes estimate (samples x period x size).
    pub estimate: Vec<u64>,
}

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
}

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
}

/// The simulator state.
pub struct Engine {
    now: Ps,
    seq: u64,
    heap: EventQueue<EvKind>,
    threads: Vec<Thread>,
    cores: Vec<Core>,
    cpus: Vec<Cpu>,
    overflow_used: Vec<u32>,
    stalled: Vec<VecDeque<u32>>,
    channels: Vec<Channel>,
    channel_names: Vec<String>,
    dimms: Vec<PmDimm>,
    /// Channel of each DIMM.
    dimm_channel: Vec<u32>,
    regions: Vec<Region>,
    /// Per socket, the region `local-dram` resolves to (the first DRAM region
    /// whose channels all lie on that socket).
    local_dram: Vec<Option<usize>>,
    reqs: Vec<Req>,
    free_reqs: Vec<u32>,
    gate: Gate,
    job_names: Vec<String>,
    job_class: Vec<memtamer_core::JobClass>,
    job_threads: Vec<Vec<u32>>,
    job_duty: Vec<JobDuty>,
    /// LC latencies recorded since the last policy window, per job (ns).
    job_window_latency: Vec<Histogram>,
    // parameters in ps
    duty_period: Ps,
    fill_buffers: u32,
    prefetch_slots: u32,
    pm_completion: PmWriteCompletion,
    wb_buffers: u32,
    smt_slowdown: f64,
    core_to_uncore: Ps,
    uncore_to_core: Ps,
    slice: Ps,
    overflow_cap: u32,
    cha_to_imc: Ps,
    link: Ps,
    /// Remote requests are tracked by the request table of their channel's
    /// socket (`uncore.remote_tracking = "home"`), not the issuing one's.
    remote_home: bool,
    rpq_cap: u32,
    wpq_cap: u32,
    drain_hi: u32,
    drain_lo: u32,
    imc_cycle_ps: f64,
    burst: Ps,
    dram_access: Ps,
    turnaround: Ps,
    media_delay: Ps,
    // measurement
    measure_start: Ps,
    end: Ps,
    window: Ps,
    measuring: bool,
    requests: u64,
    events: u64,
    ch_base: Vec<ChannelCounters>,
    dimm_base: Vec<DimmCounters>,
    migrations: u64,
    sampler: Option<Sampler>,
    // policy windows
    /// Per thread at the previous policy window: PM, DRAM, gate wait, run time.
    last_obs_threads: Vec<(AccessStats, AccessStats, Ps, Ps)>,
    last_obs_channels: Vec<ChannelCounters>,
    last_obs_cpu_busy: Vec<Ps>,
    last_obs_units: Vec<u64>,
    media_snap: Vec<DimmCounters>,
    media_snap_prev: Vec<DimmCounters>,
    media_snap_time: Ps,
    media_snap_prev_time: Ps,
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
        let p = platform;
        let tpc = p.cpu.threads_per_core;
        let ncores = p.cpu.sockets * p.cpu.cores_per_socket;
        let cores = (0..ncores)
            .map(|c| Core {
                lfb_used: 0,
                sq_used: 0,
                lfb_waiters: VecDeque::new(),
                wb_used: 0,
                wb_waiters: VecDeque::new(),
                socket: c / p.cpu.cores_per_socket,
            })
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
                Cpu {
                    core,
                    sibling,
                    current: None,
                    runq: VecDeque::new(),
                    slice_gen: 0,
                    busy: 0,
                    busy_since: 0,
                    first_slice: Some(
                        1 + Rng::new(cfg.seed, (1 << 32) + cpu as u64)
                            .below(ps(p.cpu.time_slice_us * 1e3).max(1)),
                    ),
                }
            })
            .collect();
        let mut channels = Vec::new();
        let mut channel_names = Vec::new();
        let mut dimms = Vec::new();
        let mut dimm_channel = Vec::new();
        for c in &p.channels {
            let dimm = if c.pm {
                dimms.push(PmDimm::new(&p.pm));
                dimm_channel.push(channels.len() as u32);
                Some(dimms.len() as u32 - 1)
            } else {
                None
            };
            channel_names.push(c.name.clone());
            channels.push(Channel {
                socket: c.socket,
                rpq_used: 0,
                wpq_used: 0,
                rpq_wait: VecDeque::new(),
                wpq_wait: VecDeque::new(),
                dram_rq: VecDeque::new(),
                pm_data: VecDeque::new(),
                dram_wq: VecDeque::new(),
                pm_wq: VecDeque::new(),
                write_seq: 0,
                pm_in_rpq: 0,
                pm_in_wpq: 0,
                occ_since: 0,
                occ_rpq_ps: 0,
                occ_wpq_ps: 0,
                bus_free: 0,
                last_write: false,
                write_mode: false,
                kick_at: None,
                dimm,
                counters: ChannelCounters::default(),
            });
        }
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
            overflow_used: vec![0; p.cpu.sockets as usize],
            stalled: vec![VecDeque::new(); p.cpu.sockets as usize],
            channels,
            channel_names,
            dimms,
            dimm_channel,
            regions,
            local_dram,
            reqs: Vec::new(),
            free_reqs: Vec::new(),
            gate: Gate::default(),
            job_names: Vec::new(),
            job_class: Vec::new(),
            job_threads: Vec::new(),
            job_duty: Vec::new(),
            job_window_latency: Vec::new(),
            duty_period: ps(p.cpu.duty_period_us * 1000.0).max(1),
            fill_buffers: p.cpu.fill_buffers,
            prefetch_slots: p.cpu.l2_prefetch_slots,
            pm_completion: p.pm.write_completion,
            wb_buffers: p.cpu.writeback_buffers,
            smt_slowdown: p.cpu.smt_slowdown,
            core_to_uncore: ps(p.cpu.core_to_uncore_ns),
            uncore_to_core: ps(p.cpu.uncore_to_core_ns),
            slice: ps(p.cpu.time_slice_us * 1000.0),
            overflow_cap: p.uncore.request_table,
            cha_to_imc: ps(p.uncore.cha_to_imc_ns),
            link: ps(p.uncore.numa_link_ns),
            remote_home: p.uncore.remote_tracking == RemoteTracking::Home,
            rpq_cap: p.memory.rpq_entries,
            wpq_cap: p.memory.wpq_entries,
            drain_hi: p.memory.write_drain_high,
            drain_lo: p.memory.write_drain_low,
            imc_cycle_ps: 1e6 / p.memory.imc_clock_mhz,
            burst: ps(64.0 / p.dram.bus_gbps),
            dram_access: ps(p.dram.access_ns),
            turnaround: ps(p.dram.turnaround_ns),
            media_delay: ps(p.pm.media_counter_delay_ms * 1e6),
            measure_start: cfg.warmup,
            end: cfg.warmup + cfg.duration,
            window: cfg.window.max(NS),
            measuring: false,
            requests: 0,
            events: 0,
            ch_base: Vec::new(),
            dimm_base: Vec::new(),
            migrations: 0,
            sampler: None,
            last_obs_threads: Vec::new(),
            last_obs_channels: Vec::new(),
            last_obs_cpu_busy: Vec::new(),
            last_obs_units: Vec::new(),
            media_snap: Vec::new(),
            media_snap_prev: Vec::new(),
            media_snap_time: 0,
            media_snap_prev_time: 0,
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
            // every region the workload names must exist
            let names = workload_regions(&job.workload);
            if names.iter().any(|n| n == LOCAL_DRAM) {
                if let Some(s) = eng.local_dram.iter().position(|r| r.is_none()) {
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
            for i in 0..job.threads {
                let tid = eng.threads.len() as u32;
                let slot = tid;
                let gen = Generator::new(&job.workload, slot, &|n| region_of(n).unwrap_or(0));
                let cpu = if start.is_some() {
                    allowed_list[i as usize % allowed_list.len()]
                } else {
                    let c = next_cpu % ncpus;
                    next_cpu += 1;
                    c
                };
                eng.threads.push(Thread {
                    job: j as u32,
                    gen,
                    rng: Rng::new(cfg.seed, tid as u64 + 1),
                    cpu,
                    allowed,
                    on_cpu: false,
                    block: Block::None,
                    wake_gen: 0,
                    compute_left: 0,
                    pending: None,
                    outstanding: 0,
                    gated,
                    gate_held: false,
                    gate_wait_start: 0,
                    pm_req: None,
                    arrivals: VecDeque::new(),
                    cur_arrival: 0,
                    arrival_mean_ps: mean,
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
                });
                eng.job_threads[j].push(tid);
            }
        }
        if let Some((period, store_bytes)) = cfg.sampler {
            eng.sampler = Some(Sampler {
                period: period.max(1),
                store_bytes: store_bytes.clamp(1, 64),
                counters: vec![0; ncpus as usize],
                samples: Vec::new(),
                estimate: vec![0; eng.threads.len()],
            });
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
        if !self.dimms.is_empty() && self.media_delay > 0 {
            self.push(self.media_delay, EvKind::MediaSnapshot);
        }
        self.last_obs_threads = vec![Default::default(); self.threads.len()];
        self.last_obs_channels = vec![Default::default(); self.channels.len()];
        self.last_obs_cpu_busy = vec![0; self.cpus.len()];
        self.last_obs_units = vec![0; self.job_names.len()];
        self.media_snap = vec![Default::default(); self.dimms.len()];
        self.media_snap_prev = self.media_snap.clone();
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
                    self.channels[c as usize].kick_at = None;
                    self.kick(c);
                }
                EvKind::MediaDone(d) => {
                    let freed = self.dimms[d as usize].media_done();
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
                    self.apply(&d);
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
                }
                EvKind::MediaSnapshot => {
                    self.media_snap_prev = std::mem::take(&mut self.media_snap);
                    self.media_snap_prev_time = self.media_snap_time;
                    self.media_snap = self.dimms.iter().map(|d| d.counters).collect();
                    self.media_snap_time = self.now;
                    let t = self.now + self.media_delay;
                    self.push(t, EvKind::MediaSnapshot);
                }
                EvKind::DutyOn(j, g) => self.duty_on(j, g),
                EvKind::DutyOff(j, g) => self.duty_off(j, g),
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
            gate_max_admitted: self.gate.max_admitted_seen,
            pm_store_truth: self.threads.iter().map(|t| t.pm_store_bytes).collect(),
            sampler: self.sampler.take(),
            migrations: self.migrations,
        }
    }

    fn next_gap(&mut self, tid: u32) -> Ps {
        let th = &mut self.threads[tid as usize];
        let mean = th.arrival_mean_ps;
        (th.rng.exp(mean) as Ps).max(1)
    }

    // ---------------------------------------------------------------- CPUs

    fn enqueue_on_cpu(&mut self, tid: u32, cpu: u32) {
        self.threads[tid as usize].cpu = cpu;
        self.cpus[cpu as usize].runq.push_back(tid);
    }

    /// If `cpu` is idle, runs the next ready thread on it.
    fn schedule_next(&mut self, cpu: u32) {
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
            let len = c.first_slice.take().unwrap_or(self.slice);
            self.push(now + len, EvKind::SliceEnd(cpu, g));
        }
        let th = &mut self.threads[tid as usize];
        th.on_cpu = true;
        th.cpu = cpu;
        th.run_since = now;
        self.resume(tid);
    }

    /// Continues a thread that just got a CPU.
    fn resume(&mut self, tid: u32) {
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

    fn deschedule(&mut self, tid: u32) {
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

    fn slice_end(&mut self, cpu: u32, g: u32) {
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

    fn preempt(&mut self, tid: u32) {
        let now = self.now;
        let th = &mut self.threads[tid as usize];
        if th.block == Block::Compute {
            // compute_left was set to the end time at start; convert to remaining
            th.compute_left = th.compute_left.saturating_sub(now);
        }
        self.deschedule(tid);
    }

    /// A thread that had yielded its CPU (gate, arrival, throttle) is runnable.
    fn wake_yielded(&mut self, tid: u32) {
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
    fn place(&mut self, tid: u32) {
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
            let t = self.now + self.slice;
            self.push(t, EvKind::SliceEnd(target, g));
        }
    }

    /// The thread gives up its CPU (blocks in the kernel).
    fn yield_cpu(&mut self, tid: u32, why: Block) {
        self.threads[tid as usize].block = why;
        let cpu = self.threads[tid as usize].cpu;
        self.deschedule(tid);
        self.schedule_next(cpu);
    }

    // ------------------------------------------------------------- threads

    fn step(&mut self, tid: u32) {
        // bounded so that a generator producing only zero-time ops cannot hang
        for _ in 0..10_000 {
            let th = &mut self.threads[tid as usize];
            if !th.on_cpu || th.block != Block::None {
                return;
            }
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
                                d = (d as f64 * self.smt_slowdown) as Ps;
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
                        self.threads[tid as usize].block = Block::Dep;
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
                    if th.outstanding > 0 {
                        th.block = Block::Drain;
                        return;
                    }
                }
                Op::PmBegin { bytes, write } => {
                    th.pm_req = Some((bytes, write));
                    if th.gated && bytes >= GATE_BYPASS_BYTES {
                        if let Some(limit) = self.gate.limit {
                            if self.gate.admitted >= limit || !self.gate.waiters.is_empty() {
                                th.gate_wait_start = self.now;
                                self.gate.waiters.push_back(tid);
                                self.yield_cpu(tid, Block::Gate);
                                return;
                            }
                        }
                        self.gate_admit(tid);
                    }
                }
                Op::PmEnd => {
                    if let Some((bytes, write)) = th.pm_req.take() {
                        th.pm.record(bytes, write);
                    }
                    if th.gate_held {
                        th.gate_held = false;
                        self.gate.admitted -= 1;
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

    fn gate_admit(&mut self, tid: u32) {
        self.gate.admitted += 1;
        // highest concurrency the gate itself allowed while a limit was in force
        if self.gate.limit.is_some() {
            self.gate.max_admitted_seen = self.gate.max_admitted_seen.max(self.gate.admitted);
        }
        self.threads[tid as usize].gate_held = true;
    }

    /// Admits waiting threads round-robin (FIFO) while under the limit.
    fn gate_release(&mut self) {
        loop {
            let limit = self.gate.limit.unwrap_or(u32::MAX);
            if self.gate.admitted >= limit {
                return;
            }
            let Some(w) = self.gate.waiters.pop_front() else {
                return;
            };
            self.gate_admit(w);
            let waited = self.now - self.threads[w as usize].gate_wait_start;
            self.threads[w as usize].gate_wait += waited;
            self.wake_yielded(w);
        }
    }

    #[inline(always)]
    fn count_store(&mut self, tid: u32, addr: u64) {
        let region = (addr >> REGION_SHIFT) as usize;
        let is_pm = self
            .regions
            .get(region)
            .is_some_and(|r| r.kind == MemKind::Pm);
        if !is_pm {
            return;
        }
        self.threads[tid as usize].pm_store_bytes += 64;
        if self.sampler.is_some() {
            self.sample_store(tid, addr);
        }
    }

    /// The PEBS sampler's part of [`Engine::count_store`] (out of line: the
    /// sampler is rarely on).
    #[cold]
    fn sample_store(&mut self, tid: u32, addr: u64) {
        let cpu = self.threads[tid as usize].cpu as usize;
        if let Some(s) = &mut self.sampler {
            let stores = 64 / s.store_bytes;
            for k in 0..stores {
                s.counters[cpu] += 1;
                if s.counters[cpu] >= s.period {
                    s.counters[cpu] = 0;
                    s.estimate[tid as usize] += s.period * s.store_bytes;
                    if s.samples.len() < 1 << 16 {
                        s.samples.push(StoreSample {
                            tid,
                            addr: addr + k * s.store_bytes,
                            size: s.store_bytes as u32,
                        });
                    }
                }
            }
        }
    }

    #[inline(always)]
    fn stall_lfb(&mut self, tid: u32, op: Op) {
        let th = &mut self.threads[tid as usize];
        th.pending = Some(op);
        th.block = Block::Lfb;
        let core = self.cpus[th.cpu as usize].core;
        self.cores[core as usize].lfb_waiters.push_back(tid);
    }

    /// Wakes a thread stalled on the memory system (it kept its CPU).
    #[inline]
    fn wake_stalled(&mut self, tid: u32) {
        let th = &mut self.threads[tid as usize];
        th.block = Block::None;
        if th.on_cpu {
            self.step(tid);
        }
    }

    // ------------------------------------------------------------- requests
    //
    // The request path's small functions are `#[inline(always)]` into their
    // few callers: the register saves and restores of their calls were a
    // tenth of the engine's instructions per request.

    /// Channel, DIMM, device address, PM?, and the channel's socket of a line
    /// issued from socket `src` (which `local-dram` resolves by).
    #[inline(always)]
    fn route(&self, addr: u64, src: u32) -> (u32, u32, u64, bool, u32) {
        let mut idx = (addr >> REGION_SHIFT) as usize;
        if idx == LOCAL_DRAM_INDEX as usize {
            // validated at construction: every socket has one
            idx = self
                .local_dram
                .get(src as usize)
                .copied()
                .flatten()
                .unwrap_or(0);
        }
        let r = &self.regions[if idx < self.regions.len() { idx } else { 0 }];
        let off = addr & ((1 << REGION_SHIFT) - 1);
        // interleave granularities are powers of two (validated)
        let shift = r.gran_shift;
        let (round, target) = r.per_target.div_rem(off >> shift);
        let (ch, dev) = (
            r.targets[target as usize],
            (round << shift) | (off & (r.gran - 1)),
        );
        let c = &self.channels[ch as usize];
        (
            ch,
            c.dimm.unwrap_or(u32::MAX),
            dev,
            r.kind == MemKind::Pm,
            c.socket,
        )
    }

    #[inline]
    fn alloc_req(&mut self, r: Req) -> u32 {
        if let Some(i) = self.free_reqs.pop() {
            self.reqs[i as usize] = r;
            i
        } else {
            self.reqs.push(r);
            self.reqs.len() as u32 - 1
        }
    }

    /// Issues a line request. Demand misses need a fill buffer; loads of a
    /// sequential stream (and memcpy sources) are fetched by the L2 streamer
    /// and need a slot in the core's L2 miss queue instead. False if none is free.
    #[inline(always)]
    fn issue(&mut self, tid: u32, addr: u64, kind: ReqKind, chain: Chain) -> bool {
        let cpu = self.threads[tid as usize].cpu;
        let core = self.cpus[cpu as usize].core;
        let c = &mut self.cores[core as usize];
        if uses_prefetch_slot(chain) {
            if c.sq_used >= self.prefetch_slots {
                return false;
            }
            c.sq_used += 1;
        } else {
            if c.lfb_used >= self.fill_buffers {
                return false;
            }
            c.lfb_used += 1;
        }
        self.threads[tid as usize].outstanding += 1;
        let src_socket = self.cores[core as usize].socket;
        let r = self.make_req(tid, core, src_socket, addr, kind, chain);
        self.send(r);
        true
    }

    /// Whether a request from socket `src` to a channel on `socket` is
    /// remote, and which socket's request table tracks it (the issuing one,
    /// or with `uncore.remote_tracking = "home"` the channel's).
    #[inline]
    fn tracking(&self, src: u32, socket: u32) -> (bool, u32) {
        let remote = socket != src;
        (
            remote,
            if remote && self.remote_home {
                socket
            } else {
                src
            },
        )
    }

    #[inline(always)]
    fn make_req(
        &mut self,
        tid: u32,
        core: u32,
        src_socket: u32,
        addr: u64,
        kind: ReqKind,
        chain: Chain,
    ) -> u32 {
        let (channel, dimm, dev, pm, socket) = self.route(addr, src_socket);
        let line_level = self.threads[tid as usize].pm_req.is_none();
        let (remote, ts) = self.tracking(src_socket, socket);
        self.alloc_req(Req {
            tid,
            core,
            kind,
            chain,
            addr,
            channel,
            dimm,
            dev,
            pm,
            remote,
            src_socket,
            ts,
            holds: false,
            line_level,
        })
    }

    /// Re-targets a request at a new address and kind and sends it again.
    #[inline(always)]
    fn restage(&mut self, r: u32, addr: u64, kind: ReqKind, chain: Chain) {
        let src = self.reqs[r as usize].src_socket;
        let (channel, dimm, dev, pm, socket) = self.route(addr, src);
        let (remote, ts) = self.tracking(src, socket);
        let q = &mut self.reqs[r as usize];
        q.kind = kind;
        q.chain = chain;
        q.addr = addr;
        q.channel = channel;
        q.dimm = dimm;
        q.dev = dev;
        q.pm = pm;
        q.remote = remote;
        q.ts = ts;
        self.send(r);
    }

    /// Sends a request from the core: it reaches its memory controller after
    /// the mesh (and socket link) latency; see [`Engine::at_imc`].
    #[inline(always)]
    fn send(&mut self, r: u32) {
        self.requests += 1;
        let q = &self.reqs[r as usize];
        let t =
            self.now + self.core_to_uncore + self.cha_to_imc + if q.remote { self.link } else { 0 };
        self.push(t, EvKind::AtImc(r));
    }

    #[inline]
    fn at_imc(&mut self, r: u32) {
        let s = self.reqs[r as usize].ts as usize;
        if self.stalled[s].is_empty() {
            self.try_enter(r);
        } else {
            // head-of-line: the caching agents' ingress is stuck behind a request
            // whose memory queue and the shared overflow buffer are both full
            self.stalled[s].push_back(r);
        }
    }

    /// Enters the channel queue, or waits for it in the socket's overflow
    /// buffer, or (when that is full too) stalls the socket's ingress.
    #[inline(always)]
    fn try_enter(&mut self, r: u32) {
        let q = self.reqs[r as usize];
        let c = q.channel as usize;
        let s = q.ts as usize;
        if q.remote && !q.holds {
            // a remote request is tracked at home until it completes
            if self.overflow_used[s] < self.overflow_cap {
                self.overflow_used[s] += 1;
                self.reqs[r as usize].holds = true;
            } else {
                self.stalled[s].push_back(r);
                return;
            }
        }
        let holds = self.reqs[r as usize].holds;
        let ch = &self.channels[c];
        let (used, cap, waiting) = if q.kind == ReqKind::Read {
            (ch.rpq_used, self.rpq_cap, !ch.rpq_wait.is_empty())
        } else {
            (ch.wpq_used, self.wpq_cap, !ch.wpq_wait.is_empty())
        };
        if used < cap && !waiting {
            if q.kind == ReqKind::Read {
                self.admit_read(r);
            } else {
                self.admit_write(r);
            }
        } else if holds || self.overflow_used[s] < self.overflow_cap {
            if !holds {
                self.overflow_used[s] += 1;
            }
            let ch = &mut self.channels[c];
            if q.kind == ReqKind::Read {
                ch.rpq_wait.push_back(r);
            } else {
                ch.wpq_wait.push_back(r);
            }
        } else {
            self.stalled[s].push_back(r);
        }
    }

    /// A waiter left the overflow buffer: let stalled requests in.
    #[inline]
    fn release_overflow(&mut self, socket: u32) {
        let s = socket as usize;
        self.overflow_used[s] -= 1;
        while self.overflow_used[s] < self.overflow_cap {
            let Some(r) = self.stalled[s].pop_front() else {
                break;
            };
            self.try_enter(r);
        }
    }

    #[inline]
    fn account_occupancy(&mut self, c: usize) {
        let now = self.now;
        let ch = &mut self.channels[c];
        let dt = (now - ch.occ_since) as u128;
        ch.occ_rpq_ps += dt * ch.pm_in_rpq as u128;
        ch.occ_wpq_ps += dt * ch.pm_in_wpq as u128;
        ch.occ_since = now;
    }

    #[inline(always)]
    fn admit_write(&mut self, r: u32) {
        let q = &self.reqs[r as usize];
        let (channel, pm, dimm, dev) = (q.channel, q.pm, q.dimm, q.dev);
        let c = channel as usize;
        if pm {
            self.account_occupancy(c);
        }
        let ch = &mut self.channels[c];
        ch.wpq_used += 1;
        ch.write_seq += 1;
        let item = WriteItem {
            seq: ch.write_seq,
            req: r,
            pm,
            dimm,
            dev,
        };
        if pm {
            ch.pm_wq.push_back(item);
            ch.pm_in_wpq += 1;
            ch.counters.pmm_wpq_inserts += 1;
        } else {
            ch.dram_wq.push_back(item);
        }
        // DRAM: the write completes at WPQ acceptance. PM: the DDR-T write
        // completes when the DIMM takes it into its XPBuffer (see dimm_accepted).
        if !pm || self.pm_completion == PmWriteCompletion::Wpq {
            let t = self.now + self.ack_latency(&self.reqs[r as usize]);
            self.push(t, EvKind::Complete(r));
        }
        // mostly admitted by the bus scheduler itself, whose transfer just
        // started: then only its end is (re)scheduled, as `kick` would
        let busy_until = self.channels[c].bus_free;
        if busy_until > self.now {
            self.schedule_kick(channel, busy_until);
        } else {
            self.kick(channel);
        }
    }

    #[inline(always)]
    fn admit_read(&mut self, r: u32) {
        let q = &self.reqs[r as usize];
        let (channel, pm, dimm, dev) = (q.channel, q.pm, q.dimm, q.dev);
        let c = channel as usize;
        if pm {
            self.account_occupancy(c);
        }
        let ch = &mut self.channels[c];
        ch.rpq_used += 1;
        if pm {
            ch.pm_in_rpq += 1;
            ch.counters.pmm_rpq_inserts += 1;
            match self.dimms[dimm as usize].read_arrive(self.now, r, dev) {
                Some(t) => self.push(t, EvKind::PmReadReady(r)),
                None => self.start_media(dimm),
            }
        } else {
            ch.dram_rq.push_back((self.now + self.dram_access, r));
            self.kick(channel);
        }
    }

    #[inline]
    fn ack_latency(&self, q: &Req) -> Ps {
        self.cha_to_imc + self.uncore_to_core + if q.remote { self.link } else { 0 }
    }

    /// Sends completions for the writes DIMM `d` accepted.
    #[inline(always)]
    fn dimm_accepted(&mut self, d: u32) {
        let d = d as usize;
        if self.dimms[d].accepted.is_empty() {
            return;
        }
        for i in 0..self.dimms[d].accepted.len() {
            let r = self.dimms[d].accepted[i];
            let t = self.now + self.ack_latency(&self.reqs[r as usize]);
            self.push(t, EvKind::Complete(r));
        }
        self.dimms[d].accepted.clear();
    }

    #[inline(always)]
    fn start_media(&mut self, d: u32) {
        if self.dimms[d as usize].media_busy() {
            return;
        }
        if let Some(s) = self.dimms[d as usize].try_start_media(self.now) {
            self.push(s.busy_until, EvKind::MediaDone(d));
            if let Some((r, t)) = s.read_ready {
                self.push(t, EvKind::PmReadReady(r));
            }
        }
    }

    #[inline(always)]
    fn schedule_kick(&mut self, c: u32, t: Ps) {
        let ch = &mut self.channels[c as usize];
        if ch.kick_at.is_some_and(|k| k <= t) {
            return;
        }
        ch.kick_at = Some(t);
        self.push(t, EvKind::ChannelKick(c));
    }

    /// Channel bus scheduler: one 64 B transfer at a time. Reads first unless
    /// the WPQ passed its high watermark (then drain to the low watermark).
    fn kick(&mut self, c: u32) {
        let now = self.now;
        let ci = c as usize;
        if self.channels[ci].bus_free > now {
            let t = self.channels[ci].bus_free;
            self.schedule_kick(c, t);
            return;
        }
        let ch = &mut self.channels[ci];
        if ch.wpq_used >= self.drain_hi {
            ch.write_mode = true;
        } else if ch.wpq_used <= self.drain_lo {
            ch.write_mode = false;
        }
        let dram_ready = ch.dram_rq.front().map(|&(t, _)| t);
        let pm_ready = !ch.pm_data.is_empty();
        let read_now = pm_ready || dram_ready.is_some_and(|t| t <= now);
        // the oldest write that can go: DRAM always, PM only with a DDR-T
        // credit (only looked for when a write may go)
        let pick_pm = if ch.write_mode || !read_now {
            let dram_w = ch.dram_wq.front().map(|w| w.seq);
            let pm_w = ch
                .pm_wq
                .front()
                .filter(|w| self.dimms[w.dimm as usize].credits > 0)
                .map(|w| w.seq);
            match (dram_w, pm_w) {
                (Some(d), Some(p)) => Some(p < d),
                (None, Some(_)) => Some(true),
                (Some(_), None) => Some(false),
                (None, None) => None,
            }
        } else {
            None
        };
        if pick_pm.is_some() {
            let w = if pick_pm == Some(true) {
                ch.pm_wq.pop_front()
            } else {
                ch.dram_wq.pop_front()
            };
            let Some(w) = w else { return };
            let turn = if ch.last_write { 0 } else { self.turnaround };
            ch.last_write = true;
            let end = now + turn + self.burst;
            ch.bus_free = end;
            if w.pm {
                self.account_occupancy(ci);
                let ch = &mut self.channels[ci];
                ch.pm_in_wpq -= 1;
                ch.wpq_used -= 1;
                let on_transfer = self.pm_completion == PmWriteCompletion::Ddrt;
                let nobody_waits = self.pm_completion != PmWriteCompletion::Xpbuffer;
                let dimm = &mut self.dimms[w.dimm as usize];
                dimm.credits -= 1;
                dimm.write_arrive(w.dev, if nobody_waits { NO_REQ } else { w.req });
                if on_transfer {
                    let t = end + self.ack_latency(&self.reqs[w.req as usize]);
                    self.push(t, EvKind::Complete(w.req));
                }
                self.dimm_accepted(w.dimm);
                self.start_media(w.dimm);
            } else {
                let ch = &mut self.channels[ci];
                ch.wpq_used -= 1;
                ch.counters.cas_writes += 1;
            }
            self.admit_waiters(ci, false);
            if self.channel_has_work(ci) {
                self.schedule_kick(c, end);
            }
            return;
        }
        if read_now {
            let turn = if ch.last_write { self.turnaround } else { 0 };
            ch.last_write = false;
            let end = now + turn + self.burst;
            ch.bus_free = end;
            let r = if pm_ready {
                let r = ch.pm_data.pop_front().unwrap_or(0);
                self.account_occupancy(ci);
                self.channels[ci].pm_in_rpq -= 1;
                r
            } else {
                let (_, r) = ch.dram_rq.pop_front().unwrap_or((0, 0));
                ch.counters.cas_reads += 1;
                r
            };
            self.channels[ci].rpq_used -= 1;
            let back = self.ack_latency(&self.reqs[r as usize]);
            self.push(end + back, EvKind::Complete(r));
            self.admit_waiters(ci, true);
            if self.channel_has_work(ci) {
                self.schedule_kick(c, end);
            }
            return;
        }
        // nothing to do now: wake up when the next DRAM read is ready
        if let Some(t) = dram_ready {
            self.schedule_kick(c, t.max(now + 1));
        }
    }

    /// Whether the channel has anything its bus could move (if not, the next
    /// admission or DIMM credit kicks it).
    #[inline]
    fn channel_has_work(&self, ci: usize) -> bool {
        let ch = &self.channels[ci];
        !ch.dram_rq.is_empty()
            || !ch.pm_data.is_empty()
            || !ch.dram_wq.is_empty()
            || ch
                .pm_wq
                .front()
                .is_some_and(|w| self.dimms[w.dimm as usize].credits > 0)
    }

    /// Admits requests waiting for the channel's WPQ (or RPQ) while it has room.
    #[inline]
    fn admit_waiters(&mut self, ci: usize, reads: bool) {
        let ch = &self.channels[ci];
        let waiting = if reads { &ch.rpq_wait } else { &ch.wpq_wait };
        if !waiting.is_empty() {
            self.admit_waiting(ci, reads);
        }
    }

    /// [`Engine::admit_waiters`] once some wait (out of line: mostly none do).
    fn admit_waiting(&mut self, ci: usize, reads: bool) {
        loop {
            let ch = &mut self.channels[ci];
            let (used, cap, wait) = if reads {
                (ch.rpq_used, self.rpq_cap, &mut ch.rpq_wait)
            } else {
                (ch.wpq_used, self.wpq_cap, &mut ch.wpq_wait)
            };
            if used >= cap {
                break;
            }
            let Some(r) = wait.pop_front() else {
                break;
            };
            if reads {
                self.admit_read(r);
            } else {
                self.admit_write(r);
            }
            let q = &self.reqs[r as usize];
            if !q.holds {
                self.release_overflow(q.ts);
            }
        }
    }

    /// A response reached the core.
    fn complete(&mut self, r: u32) {
        if self.reqs[r as usize].holds {
            self.reqs[r as usize].holds = false;
            self.release_overflow(self.reqs[r as usize].ts);
        }
        let q = self.reqs[r as usize];
        let tid = q.tid;
        match q.chain {
            Chain::CopyNt { .. } | Chain::CopyTemporal { .. } => {
                // the copied line's load is done
                self.account(&q, false);
                // the same fill buffer now holds the store (write-combining)
                self.store_stage(r);
            }
            Chain::Rfo { flush } => {
                self.account(&q, false);
                // the line is dirty in cache; its write-back needs a buffer
                let core = q.core as usize;
                if self.cores[core].wb_used < self.wb_buffers {
                    self.cores[core].wb_used += 1;
                    self.spawn_writeback(r, flush);
                } else {
                    self.cores[core].wb_waiters.push_back(r);
                }
            }
            Chain::Wb { flush } => {
                self.account(&q, true);
                self.free_reqs.push(r);
                let core = q.core as usize;
                self.cores[core].wb_used -= 1;
                if let Some(w) = self.cores[core].wb_waiters.pop_front() {
                    self.cores[core].wb_used += 1;
                    let flush = matches!(self.reqs[w as usize].chain, Chain::Rfo { flush: true });
                    self.spawn_writeback(w, flush);
                }
                if flush {
                    self.op_done(tid, false);
                }
            }
            Chain::Load { dep, stream } => {
                self.account(&q, false);
                self.free_reqs.push(r);
                if stream {
                    self.free_sq(q.core);
                } else {
                    self.free_lfb(q.core);
                }
                self.op_done(tid, dep);
            }
            Chain::Nt => {
                self.account(&q, true);
                self.free_reqs.push(r);
                self.free_lfb(q.core);
                self.op_done(tid, false);
            }
        }
    }

    /// Counts a completed line in its thread's traffic: every DRAM line, and
    /// the PM lines issued outside a PM request (those are counted per
    /// request at `PmEnd`), e.g. the antagonists' 64 B accesses.
    #[inline]
    fn account(&mut self, q: &Req, write: bool) {
        let th = &mut self.threads[q.tid as usize];
        if !q.pm {
            th.dram.record(64, write);
        } else if q.line_level {
            th.pm.record(64, write);
        }
    }

    /// The RFO `r` finished: its fill buffer is released and the write-back goes out.
    fn spawn_writeback(&mut self, r: u32, flush: bool) {
        let q = self.reqs[r as usize];
        self.free_lfb(q.core);
        if !flush {
            self.op_done(q.tid, false);
        }
        self.restage(r, q.addr, ReqKind::Writeback, Chain::Wb { flush });
    }

    /// Second stage of a memcpy line: the store, in the fill buffer it just got.
    #[inline]
    fn store_stage(&mut self, r: u32) {
        match self.reqs[r as usize].chain {
            Chain::CopyNt { dst } => self.restage(r, dst, ReqKind::NtWrite, Chain::Nt),
            Chain::CopyTemporal { dst } => {
                self.restage(r, dst, ReqKind::Read, Chain::Rfo { flush: false })
            }
            _ => {}
        }
    }

    #[inline]
    fn free_lfb(&mut self, core: u32) {
        let c = &mut self.cores[core as usize];
        c.lfb_used -= 1;
        if let Some(t) = c.lfb_waiters.pop_front() {
            self.wake_stalled(t);
        }
    }

    #[inline]
    fn free_sq(&mut self, core: u32) {
        let c = &mut self.cores[core as usize];
        c.sq_used -= 1;
        if let Some(t) = c.lfb_waiters.pop_front() {
            self.wake_stalled(t);
        }
    }

    #[inline]
    fn op_done(&mut self, tid: u32, dep: bool) {
        let th = &mut self.threads[tid as usize];
        th.outstanding -= 1;
        let wake =
            (dep && th.block == Block::Dep) || (th.block == Block::Drain && th.outstanding == 0);
        if wake {
            self.wake_stalled(tid);
        }
    }

    // ------------------------------------------------------------- policy

    #[inline(never)] // cold: keeps the event loop's frame small
    fn channel_counters_now(&mut self) -> Vec<ChannelCounters> {
        for c in 0..self.channels.len() {
            self.account_occupancy(c);
        }
        let cyc = self.imc_cycle_ps;
        self.channels
            .iter()
            .map(|c| {
                let mut k = c.counters;
                k.pmm_rpq_occupancy = (c.occ_rpq_ps as f64 / cyc) as u64;
                k.pmm_wpq_occupancy = (c.occ_wpq_ps as f64 / cyc) as u64;
                k
            })
            .collect()
    }

    #[inline(never)] // cold: keeps the event loop's frame small
    fn observe(&mut self) -> Observation {
        let now = self.now;
        let mut threads = Vec::with_capacity(self.threads.len());
        for (i, th) in self.threads.iter().enumerate() {
            let (pm0, dram0, gw0, rt0) = self.last_obs_threads[i];
            let rt = th.run_time + if th.on_cpu { now - th.run_since } else { 0 };
            threads.push(ThreadObs {
                tid: i as u32,
                job: th.job,
                cpu: Some(th.cpu),
                allowed: th.allowed,
                pm: Some(diff_stats(&th.pm, &pm0)),
                dram: Some(diff_stats(&th.dram, &dram0)),
                cpu_util: Some((rt - rt0) as f64 / self.window as f64),
                gate_wait_ns: Some((th.gate_wait - gw0) / NS),
            });
            self.last_obs_threads[i] = (th.pm, th.dram, th.gate_wait, rt);
        }
        let mut jobs = Vec::new();
        for j in 0..self.job_names.len() {
            let units: u64 = self.job_threads[j]
                .iter()
                .map(|&t| self.threads[t as usize].units)
                .sum();
            jobs.push(JobObs {
                id: j as u32,
                name: self.job_names[j].clone(),
                class: self.job_class[j],
                threads: self.job_threads[j].clone(),
                work_units: Some((units - self.last_obs_units[j]) as f64),
                latency_ns: {
                    let h = std::mem::take(&mut self.job_window_latency[j]);
                    match (h.quantile(0.5), h.quantile(0.99), h.quantile(0.999)) {
                        (Some(a), Some(b), Some(c)) => Some([a as f64, b as f64, c as f64]),
                        _ => None,
                    }
                },
            });
            self.last_obs_units[j] = units;
        }
        let now_ch = self.channel_counters_now();
        let channels = now_ch
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let b = self.last_obs_channels[i];
                ChannelObs {
                    socket: self.channels[i].socket,
                    channel: i as u32,
                    cas_reads: Some(k.cas_reads - b.cas_reads),
                    cas_writes: Some(k.cas_writes - b.cas_writes),
                    pmm_rpq_occupancy: Some(k.pmm_rpq_occupancy - b.pmm_rpq_occupancy),
                    pmm_rpq_inserts: Some(k.pmm_rpq_inserts - b.pmm_rpq_inserts),
                    pmm_wpq_occupancy: Some(k.pmm_wpq_occupancy - b.pmm_wpq_occupancy),
                    pmm_wpq_inserts: Some(k.pmm_wpq_inserts - b.pmm_wpq_inserts),
                }
            })
            .collect();
        self.last_obs_channels = now_ch;
        // media counters: only the last completed (delayed) snapshot is visible
        let dimms = (0..self.dimms.len())
            .map(|d| {
                let have = self.media_snap_time > 0;
                let a = self.media_snap.get(d).copied().unwrap_or_default();
                let b = self.media_snap_prev.get(d).copied().unwrap_or_default();
                DimmObs {
                    dimm: d as u32,
                    media_read_bytes: have.then(|| a.media_read_bytes - b.media_read_bytes),
                    media_write_bytes: have.then(|| a.media_write_bytes - b.media_write_bytes),
                    interval_ns: have
                        .then(|| (self.media_snap_time - self.media_snap_prev_time) / NS),
                    age_ns: have.then(|| (now - self.media_snap_time) / NS),
                }
            })
            .collect();
        let cpus = (0..self.cpus.len())
            .map(|c| {
                let cpu = &self.cpus[c];
                let busy = cpu.busy
                    + if cpu.current.is_some() {
                        now - cpu.busy_since
                    } else {
                        0
                    };
                let u = (busy - self.last_obs_cpu_busy[c]) as f64 / self.window as f64;
                self.last_obs_cpu_busy[c] = busy;
                CpuObs {
                    cpu: c as u32,
                    utilization: Some(u.min(1.0)),
                }
            })
            .collect();
        Observation {
            start_ns: (now.saturating_sub(self.window)) / NS,
            duration_ns: self.window / NS,
            threads,
            jobs,
            channels,
            dimms,
            cpus,
            gate: Some(GateObs {
                limit: self.gate.limit,
                admitted: self.gate.admitted,
                waiting: self.gate.waiters.len() as u32,
            }),
        }
    }

    #[inline(never)] // cold: keeps the event loop's frame small
    fn apply(&mut self, d: &Decision) {
        if let Some(limit) = d.gate_limit {
            self.gate.limit = match limit {
                GateLimit::Unlimited => None,
                GateLimit::Limit(n) => Some(n.max(1)),
            };
            self.gate_release();
        }
        // a job's budget first; per-thread affinities (placement, core
        // specialization) then narrow it, as the composed policy computed
        for (job, budget) in &d.job_budgets {
            if let Some(ts) = self.job_threads.get(*job as usize).cloned() {
                for t in ts {
                    self.set_affinity(t, budget.cpus);
                }
                self.set_duty(*job, budget.duty_cycle);
            }
        }
        for (tid, set) in &d.thread_cpus {
            self.set_affinity(*tid, *set);
        }
        for m in &d.migrations {
            self.migrate(m.tid, m.to_cpu);
        }
    }

    // ---------------------------------------------------------- duty cycle

    /// Sets job `j`'s duty cycle. Periods are a grid of absolute simulated time
    /// (multiples of `cpu.duty_period_us`), so a policy that repeats the same
    /// budget every window changes nothing, and a new fraction only moves the
    /// end of the current on-phase. `duty >= 1` (or NaN) removes the duty
    /// cycle; `duty <= 0` stops the job until a later budget.
    fn set_duty(&mut self, j: u32, duty: f64) {
        let period = self.duty_period;
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

    fn duty_on(&mut self, j: u32, g: u32) {
        let d = self.job_duty[j as usize];
        let Some(on) = d.on else { return };
        if d.gen != g || on == 0 {
            return;
        }
        self.duty_run(j, true);
        let t = self.now + on;
        self.push(t, EvKind::DutyOff(j, g));
    }

    fn duty_off(&mut self, j: u32, g: u32) {
        let d = self.job_duty[j as usize];
        if d.gen != g || d.on.is_none() {
            return;
        }
        self.duty_run(j, false);
        let p = self.duty_period;
        let t = (self.now / p + 1) * p;
        self.push(t, EvKind::DutyOn(j, g));
    }

    /// Lets job `j`'s threads run (`run`) or deschedules them, as if their
    /// cores were taken away: requests in flight complete, nothing new issues.
    fn duty_run(&mut self, j: u32, run: bool) {
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

    fn set_affinity(&mut self, tid: u32, set: CpuSet) {
        let ncpus = self.cpus.len();
        let set = set.intersect(&CpuSet::first_n(ncpus));
        let Some(th) = self.threads.get_mut(tid as usize) else {
            return;
        };
        if set.is_empty() {
            return;
        }
        th.allowed = set;
        if !set.contains(th.cpu as usize) {
            let to = set
                .iter()
                .min_by_key(|&c| self.cpus[c].runq.len())
                .unwrap_or(0) as u32;
            self.migrate(tid, to);
        }
    }

    fn migrate(&mut self, tid: u32, to: u32) {
        if tid as usize >= self.threads.len() || to as usize >= self.cpus.len() {
            return;
        }
        if !self.threads[tid as usize].allowed.contains(to as usize) {
            return;
        }
        let from = self.threads[tid as usize].cpu;
        if from == to {
            return;
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
                let t = self.now + self.slice;
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
    }
}

/// Whether a request is a prefetched stream load. memcpy lines are not: a
/// copied line holds one fill buffer for its load and then its store, which
/// is what bounds single-thread memcpy (10 x 64 B per ~140 ns, MBW's ~5 GB/s).
fn uses_prefetch_slot(chain: Chain) -> bool {
    matches!(chain, Chain::Load { stream: true, .. })
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

fn workload_regions(w: &WorkloadSpec) -> Vec<String> {
    match w {
        WorkloadSpec::Antagonist {
            region,
            dram_region,
            dram_fraction,
            dram_fraction_schedule,
            ..
        } => {
            let mut v = vec![region.clone()];
            if dram_fraction.is_some() || dram_fraction_schedule.is_some() {
                v.push(dram_region.clone().unwrap_or_else(|| "dram".into()));
            }
            v
        }
        WorkloadSpec::Mbw { region, .. }
        | WorkloadSpec::Memcached { region, .. }
        | WorkloadSpec::PmStream { region, .. }
        | WorkloadSpec::LatencyProbe { region, .. }
        | WorkloadSpec::Cpu { region, .. } => vec![region.clone()],
        WorkloadSpec::LcServer {
            dram_region,
            pm_region,
            pm_read_lines,
            pm_write_lines,
            ..
        } => {
            let mut v = vec![dram_region.clone()];
            if pm_read_lines + pm_write_lines > 0 {
                v.push(pm_region.clone());
            }
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::load_platform;
    use crate::workload::addr;

    fn ahn_engine() -> Engine {
        let p = load_platform("ahn", &Default::default()).unwrap();
        let s = Scenario::with_jobs("t", "ahn", vec![]);
        let cfg = EngineConfig {
            seed: 1,
            warmup: 0,
            duration: NS,
            window: 1000 * NS,
            sampler: None,
        };
        Engine::new(&p, &s, &cfg).unwrap()
    }

    fn region(p: &Platform, name: &str) -> u8 {
        p.regions.iter().position(|r| r.name == name).unwrap() as u8
    }

    #[test]
    fn div_by_matches_integer_division() {
        let mut rng = Rng::new(3, 0);
        for n in (1..=64u64).chain([96, 1000, 4095, 1 << 20, (1 << 32) + 7]) {
            let d = DivBy::new(n);
            let top = (1u64 << REGION_SHIFT) - 1;
            let edges = [0, 1, n - 1, n, n + 1, top, top - 1, top - n, top / n * n];
            for x in edges
                .into_iter()
                .chain((0..2000).map(|_| rng.below(top + 1)))
            {
                assert_eq!(d.div_rem(x), (x / n, x % n), "{x} / {n}");
            }
        }
    }

    #[test]
    fn a_region_over_both_sockets_is_remote_by_the_channel_reached() {
        let e = ahn_engine();
        let p = load_platform("ahn", &Default::default()).unwrap();
        let all = region(&p, "pm-all");
        // 4 KB chunks go round-robin over A0..F0, A1..F1
        for chunk in 0..24u64 {
            let a = addr(all, 0, chunk * 4096 + 64);
            let (ch, _, _, pm, socket) = e.route(a, 0);
            assert!(pm);
            assert_eq!(ch as u64, chunk % 12);
            assert_eq!(socket, if chunk % 12 < 6 { 0 } else { 1 }, "chunk {chunk}");
        }
        // single-socket regions keep their socket
        let pm1 = region(&p, "pm1");
        assert_eq!(e.route(addr(pm1, 0, 0), 0).4, 1);
        let pm = region(&p, "pm");
        assert_eq!(e.route(addr(pm, 0, 0), 1).4, 0);
    }

    #[test]
    fn local_dram_resolves_to_the_issuing_sockets_dram() {
        let e = ahn_engine();
        for src in 0..2u32 {
            for off in [0u64, 256, 4096, 1 << 20] {
                let (ch, dimm, _, pm, socket) = e.route(addr(LOCAL_DRAM_INDEX, 3, off), src);
                assert!(!pm);
                assert_eq!(socket, src);
                assert_eq!(e.channels[ch as usize].socket, src);
                // same channel choice as the socket's own DRAM region
                let own = if src == 0 { 0 } else { 2 };
                assert_eq!((ch, dimm), {
                    let r = e.route(addr(own, 3, off), src);
                    (r.0, r.1)
                });
            }
        }
    }
}

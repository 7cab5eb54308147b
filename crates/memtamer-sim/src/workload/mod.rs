//! Workloads as request generators. Each simulated thread owns one generator
//! that yields [`Op`]s; the engine turns memory ops into cache-line requests.
//!
//! Generators only describe what a program does (compute, which lines it
//! touches, where it fences); how long that takes is entirely the engine's.

//!
//! Layout: this module holds the [`Op`] vocabulary, the address scheme and
//! [`Generator`], which dispatches to one small generator per workload kind
//! (`mbw`, `kv`, `pm_stream`, `antagonist`, `probe`, `cpu`, `lc`, `trace`), each
//! owning its position state.

mod antagonist;
mod cpu;
mod flush;
mod flush_cmap;
mod kv;
mod lc;
mod mbw;
pub mod phased;
mod pm_stream;
mod probe;
pub mod taskgraph;
pub mod tiered;
pub mod trace;

use crate::config::{CpuWork, Pattern, WorkloadSpec};
use crate::rng::Rng;
use antagonist::{Antagonist, Rates, Schedule};
use cpu::Cpu;
use flush::{FlushAgent, FlushApp};
use kv::Kv;
use lc::{Lc, LcMix};
use mbw::Mbw;
use pm_stream::PmStream;
use probe::Probe;
use trace::TraceReplay;

/// Picoseconds.
pub type Ps = u64;
/// One nanosecond in [`Ps`].
pub const NS: Ps = 1000;

/// Cache-line size.
pub const LINE: u64 = 64;
/// Bits of an address that hold the offset inside a region.
pub const REGION_SHIFT: u32 = 56;
/// Address span reserved for each thread inside a region (64 GiB), so that
/// threads never share lines by accident and stay 4 KiB-aligned.
pub const THREAD_SPAN: u64 = 1 << 36;

/// What a thread does next.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// Busy the core for this long (scaled by SMT sharing).
    Compute(Ps),
    /// A load miss; `dep` = the thread waits for the data before going on;
    /// `stream` = part of a sequential stream the L2 streamer prefetches.
    Load { addr: u64, dep: bool, stream: bool },
    /// A non-temporal 64 B store (write-combining buffer until the iMC accepts it).
    StoreNt { addr: u64 },
    /// A temporal store miss: read-for-ownership, then a dirty write-back.
    /// With `flush` the write-back is a clwb the next [`Op::Drain`] waits for.
    StoreTemporal { addr: u64, flush: bool },
    /// memcpy of one line: load `src`, then store `dst` (non-temporal or temporal).
    CopyLine { src: u64, dst: u64, nt: bool },
    /// Wait until every outstanding memory op of this thread completed (sfence / data use).
    Drain,
    /// Start of one PM request of `bytes` (PATS gate + request-level accounting).
    PmBegin { bytes: u64, write: bool },
    /// End of the current PM request.
    PmEnd,
    /// Work completed: `units` (ops or bytes, workload-defined) and bytes moved.
    Done { units: u64, bytes: u64 },
    /// LC server: take the next arrived request, or sleep until one arrives.
    NextArrival,
    /// LC server: the current request is complete (latency recorded).
    ArrivalDone,
    /// A regular store to a PM line (flush workload): read-for-ownership
    /// if the line is not cached; the line is dirty afterwards.
    Store { addr: u64 },
    /// The program flushes a line (`clwb`): executed by the thread itself
    /// or queued for a Ribbon flusher, as the engine decides.
    Flush { addr: u64 },
    /// The program's fence: waits for its own outstanding ops and, under
    /// Ribbon, until its flush queue drained.
    Fence,
    /// A `clwb` executed now by this thread (its cost by the line's state).
    Clwb { addr: u64 },
    /// A flusher or the proactive thread asks the engine for work.
    FlushPull,
    /// A flusher finished (sfence passed) `lines` lines of queue `queue`.
    BatchDone { queue: u32, lines: u32 },
    /// A flush the engine decided to run on the application thread at
    /// M = N (Ribbon's dedicated mode, `memtamer_ribbon::route`): what the
    /// thread's queue still holds runs first, then this line's `clwb`
    /// (the runtime's `flush_here`). Re-run after waiting for a batch a
    /// flusher still holds.
    FlushHere { addr: u64 },
}

/// Builds an address in `region` at `offset` within thread `slot`'s span.
pub fn addr(region: u8, slot: u32, offset: u64) -> u64 {
    ((region as u64) << REGION_SHIFT) | (slot as u64 * THREAD_SPAN) | (offset % THREAD_SPAN)
}

/// A generator instance for one thread.
#[derive(Clone, Debug)]
pub struct Generator {
    kind: GenKind,
    /// Queue of ops the current step produced, served front to back.
    pending: OpBatch,
}

/// The ops of a generator's current step, served front to back. A step is
/// produced only once the previous one is used up, so a vector and a
/// cursor do (cheaper than a `VecDeque`'s ring arithmetic).
#[derive(Clone, Debug, Default)]
struct OpBatch {
    ops: Vec<Op>,
    next: usize,
}

impl OpBatch {
    fn push_back(&mut self, op: Op) {
        self.ops.push(op);
    }

    #[inline]
    fn pop_front(&mut self) -> Option<Op> {
        let op = self.ops.get(self.next).copied();
        if op.is_some() {
            self.next += 1;
        } else {
            self.ops.clear();
            self.next = 0;
        }
        op
    }
}

/// The per-kind generator a thread runs (enum dispatch: one small struct
/// per workload kind, each owning its position state and writing the ops
/// of its next step into an [`OpBatch`]).
#[derive(Clone, Debug)]
enum GenKind {
    Mbw(Mbw),
    Kv(Kv),
    PmStream(PmStream),
    Antagonist(Antagonist),
    Probe(Probe),
    Cpu(Cpu),
    Lc(Lc),
    Trace(TraceReplay),
    /// One rank of a phased program ([`phased`]).
    Phased(Box<phased::PhasedRank>),
    /// The migration helper of a tiered-object process ([`tiered`]).
    TierHelper(tiered::MigrationHelper),
    /// A worker of a task-graph program ([`taskgraph`]).
    TaskWorker(taskgraph::Worker),
    FlushApp(FlushApp),
    FlushAgent(FlushAgent),
}

pub use crate::config::profiles::{cpu_profile, CpuProfile, CPU_PROFILES, PROFILE_CLOCK_GHZ};

/// Footprint for random accesses (4 GiB): far beyond any LLC.
const RANDOM_FOOTPRINT: u64 = 4 << 30;
/// MBW's array (PATS: 10 GB dataset); source and destination halves.
const MBW_ARRAY: u64 = 10 << 30;
/// Per-thread file size of fio-like PM jobs.
const FILE_BYTES: u64 = 8 << 30;

fn ns(v: f64) -> Ps {
    (v * NS as f64).round().max(0.0) as Ps
}

/// How often an idle migration helper looks at its FIFO (a thread blocked
/// on a condition variable wakes within microseconds; 1 µs keeps the
/// simulated delay below one copy of a page).
const HELPER_POLL: Ps = 1000 * NS;

/// Offset of the stride-style (fresh XPLine) stream in a thread's span.
const STRIDE_BASE: u64 = 1 << 35;

impl Generator {
    /// Creates the generator for one thread. `region_of` resolves region names
    /// to indices (validated before).
    pub fn new(spec: &WorkloadSpec, slot: u32, region_of: &dyn Fn(&str) -> u8) -> Generator {
        let kind = match spec {
            WorkloadSpec::Mbw {
                mode,
                block_bytes,
                call_ns,
                region,
            } => GenKind::Mbw(Mbw::new(
                *mode,
                (block_bytes / LINE).max(1),
                ns(*call_ns),
                region_of(region),
                slot,
            )),
            WorkloadSpec::Memcached {
                op,
                value_bytes,
                lookups,
                compute_ns,
                region,
            } => GenKind::Kv(Kv::new(
                *op,
                value_bytes.div_ceil(LINE),
                *lookups,
                ns(*compute_ns),
                region_of(region),
                slot,
            )),
            WorkloadSpec::PmStream {
                rw,
                pattern,
                request_bytes,
                store,
                per_request_ns,
                fence_reads,
                region,
                ..
            } => GenKind::PmStream(PmStream::new(
                *rw,
                *pattern,
                *request_bytes,
                (*store, *fence_reads),
                ns(*per_request_ns),
                region_of(region),
                slot,
            )),
            WorkloadSpec::Antagonist {
                rw,
                pattern,
                gap_ns,
                gap_ns_schedule,
                gap_period_ms,
                write_amplification,
                wa_schedule,
                wa_period_ms,
                dram_fraction,
                dram_fraction_schedule,
                dram_period_ms,
                dram_region,
                region,
            } => {
                let rates = Rates {
                    gap_ns: Schedule::from_spec(
                        Some(*gap_ns),
                        gap_ns_schedule,
                        *gap_period_ms,
                        0.0,
                        |g| g,
                    ),
                    stride_p: Schedule::from_spec(
                        *write_amplification,
                        wa_schedule,
                        *wa_period_ms,
                        1.0,
                        |wa| ((wa - 1.0) / 3.0).clamp(0.0, 1.0),
                    ),
                    dram_p: Schedule::from_spec(
                        *dram_fraction,
                        dram_fraction_schedule,
                        *dram_period_ms,
                        0.0,
                        |f| f.clamp(0.0, 1.0),
                    ),
                };
                GenKind::Antagonist(Antagonist::new(
                    *rw,
                    *pattern,
                    rates,
                    region_of(region),
                    region_of(dram_region.as_deref().unwrap_or("dram")),
                    slot,
                ))
            }
            // a rank and its helper share state: `for_job` builds them; a
            // lone thread of this kind (never built by the engine) idles
            WorkloadSpec::Phased { .. } => GenKind::Cpu(Cpu::new(NS, 0, false, 0, slot)),
            WorkloadSpec::LatencyProbe { region, pattern } => {
                GenKind::Probe(Probe::new(region_of(region), slot, *pattern))
            }
            WorkloadSpec::Cpu { region, .. } => {
                // validated before; an invalid spec degrades to pure compute
                let c = spec.cpu_params().unwrap_or(CpuWork {
                    compute_ns: 1000.0,
                    mem_lines: 0,
                    pattern: Pattern::Rand,
                });
                GenKind::Cpu(Cpu::new(
                    ns(c.compute_ns),
                    c.mem_lines,
                    c.pattern == Pattern::Seq,
                    region_of(region),
                    slot,
                ))
            }
            WorkloadSpec::Trace {
                trace,
                tx_compute_ns,
                region,
            } => match trace::load(trace) {
                Ok(t) => GenKind::Trace(TraceReplay::new(
                    t,
                    slot,
                    region_of(region),
                    ns(*tx_compute_ns),
                )),
                // checked by `Generator::check` before; idle if it vanished
                Err(_) => GenKind::Cpu(Cpu::new(NS, 0, false, region_of(region), slot)),
            },
            WorkloadSpec::Flush {
                pattern,
                value_bytes,
                compute_ns,
                mode,
                line_state,
                region,
                ..
            } => GenKind::FlushApp(FlushApp::new(
                *pattern,
                *value_bytes,
                ns(*compute_ns),
                *mode == crate::config::FlushMode::Eager,
                *line_state,
                region_of(region),
                slot,
            )),
            WorkloadSpec::LcServer {
                compute_ns,
                dram_lines,
                pm_read_lines,
                pm_write_lines,
                write_fraction,
                dram_region,
                pm_region,
                ..
            } => GenKind::Lc(Lc::new(
                ns(*compute_ns),
                LcMix {
                    dram_lines: *dram_lines,
                    pm_read_lines: *pm_read_lines,
                    pm_write_lines: *pm_write_lines,
                    write_fraction: *write_fraction,
                },
                region_of(dram_region),
                region_of(pm_region),
                slot,
            )),
        };
        Generator {
            kind,
            pending: Default::default(),
        }
    }

    /// The generators of a job's `threads` threads, whose address slots
    /// start at `first_slot` (one per thread). Kinds whose threads share
    /// program state (a tiered process and its migration helper) build them
    /// together here; every other kind is one [`Generator::new`] per thread.
    pub fn for_job(
        spec: &WorkloadSpec,
        first_slot: u32,
        threads: u32,
        region_of: &dyn Fn(&str) -> u8,
    ) -> Vec<Generator> {
        if let WorkloadSpec::Phased {
            program,
            placement,
            dram_bytes,
            fast_region,
            slow_region,
        } = spec
        {
            let objs: Vec<(String, u64, tiered::Tier)> = program
                .objects
                .iter()
                .map(|o| (o.name.clone(), o.bytes, tiered::Tier::Slow))
                .collect();
            let mut out = Vec::with_capacity(threads as usize);
            for i in (0..threads).step_by(2) {
                let space = tiered::TierSpace::new(
                    region_of(fast_region),
                    region_of(slow_region),
                    first_slot + i,
                    &objs,
                    *dram_bytes,
                )
                .into_handle();
                let policy = crate::tiering::build(placement, program, *dram_bytes);
                let rank =
                    phased::PhasedRank::new(program, space.clone(), policy, placement.label());
                out.push(Generator {
                    kind: GenKind::Phased(Box::new(rank)),
                    pending: Default::default(),
                });
                if i + 1 < threads {
                    out.push(Generator::tier_helper(tiered::MigrationHelper::new(
                        space,
                        HELPER_POLL,
                    )));
                }
            }
            return out;
        }
        (0..threads)
            .map(|i| Generator::new(spec, first_slot + i, region_of))
            .collect()
    }

    /// The report of a phased rank (None for every other kind).
    pub fn rank_report(&self) -> Option<phased::RankReport> {
        match &self.kind {
            GenKind::Phased(r) => Some(r.report()),
            _ => None,
        }
    }

    /// A generator running `helper` (a tiered process's migration thread).
    pub fn tier_helper(helper: tiered::MigrationHelper) -> Generator {
        Generator {
            kind: GenKind::TierHelper(helper),
            pending: Default::default(),
        }
    }

    /// The generator of a Ribbon flusher or proactive-flushing thread: its
    /// work comes from the engine (`Op::FlushPull`, then [`Generator::inject`]).
    pub fn flush_agent() -> Generator {
        Generator {
            kind: GenKind::FlushAgent(FlushAgent),
            pending: Default::default(),
        }
    }

    /// A generator running `worker` (a task-graph program's thread).
    pub fn task_worker(worker: taskgraph::Worker) -> Generator {
        Generator {
            kind: GenKind::TaskWorker(worker),
            pending: Default::default(),
        }
    }

    /// Appends `ops` to the ops this thread runs before its generator's
    /// next step (the engine handing a flusher its batch).
    pub fn inject(&mut self, ops: impl IntoIterator<Item = Op>) {
        for op in ops {
            self.pending.push_back(op);
        }
    }

    /// Puts `ops` before every op this thread has left (the engine making
    /// an application thread run what its Ribbon queue still holds before
    /// its next flush, as the runtime's `drain_own`).
    pub fn inject_front(&mut self, ops: impl IntoIterator<Item = Op>) {
        let at = self.pending.next;
        self.pending.ops.splice(at..at, ops);
    }

    /// Checks what a workload needs beyond its spec's values (a trace
    /// workload's file parses); the engine calls it before building threads.
    pub fn check(spec: &WorkloadSpec) -> Result<(), String> {
        match spec {
            WorkloadSpec::Trace { trace, .. } => trace::load(trace).map(drop),
            _ => Ok(()),
        }
    }

    /// The next op of this thread; `now` (simulated time) selects the
    /// current value of a workload's schedules.
    #[inline]
    pub fn next(&mut self, rng: &mut Rng, now: Ps) -> Op {
        if let Some(op) = self.pending.pop_front() {
            return op;
        }
        self.refill(rng, now);
        self.pending.pop_front().unwrap_or(Op::Compute(NS))
    }

    /// Produces the next step's ops: the per-kind generator's.
    fn refill(&mut self, rng: &mut Rng, now: Ps) {
        let q = &mut self.pending;
        match &mut self.kind {
            GenKind::Mbw(g) => g.refill(q),
            GenKind::Kv(g) => g.refill(q, rng),
            GenKind::PmStream(g) => g.refill(q, rng),
            GenKind::Antagonist(g) => g.refill(q, rng, now),
            GenKind::Probe(g) => g.refill(q, rng),
            GenKind::Cpu(g) => g.refill(q, rng),
            GenKind::Lc(g) => g.refill(q, rng),
            GenKind::Trace(g) => g.refill(q),
            GenKind::TierHelper(g) => g.refill(q, now),
            GenKind::TaskWorker(g) => g.refill(q, rng, now),
            GenKind::FlushApp(g) => g.refill(q, rng),
            GenKind::FlushAgent(g) => g.refill(q),
            GenKind::Phased(g) => g.refill(q, rng, now),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Rw, StoreKind};

    fn ops(spec: &WorkloadSpec, n: usize) -> Vec<Op> {
        ops_at(spec, n, 0)
    }

    fn ops_at(spec: &WorkloadSpec, n: usize, now: Ps) -> Vec<Op> {
        // region 1 = "pm", region 2 = anything else (the DRAM stream)
        let mut g = Generator::new(spec, 0, &|r| if r == "pm" { 1 } else { 2 });
        let mut rng = Rng::new(1, 1);
        (0..n).map(|_| g.next(&mut rng, now)).collect()
    }

    fn antagonist(pattern: Pattern) -> WorkloadSpec {
        WorkloadSpec::Antagonist {
            rw: Rw::Write,
            pattern,
            gap_ns: 0.0,
            gap_ns_schedule: None,
            gap_period_ms: None,
            write_amplification: None,
            wa_schedule: None,
            wa_period_ms: None,
            dram_fraction: None,
            dram_fraction_schedule: None,
            dram_period_ms: None,
            dram_region: None,
            region: "pm".into(),
        }
    }

    fn store_addrs(o: &[Op]) -> Vec<u64> {
        o.iter()
            .filter_map(|o| match o {
                Op::StoreNt { addr } => Some(*addr),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn antagonist_schedules_follow_simulated_time() {
        let mut spec = antagonist(Pattern::Seq);
        if let WorkloadSpec::Antagonist {
            gap_ns_schedule,
            gap_period_ms,
            wa_schedule,
            wa_period_ms,
            dram_fraction_schedule,
            dram_period_ms,
            ..
        } = &mut spec
        {
            *gap_ns_schedule = Some(vec![10.0, 50.0]);
            *gap_period_ms = Some(1.0);
            *wa_schedule = Some(vec![1.0, 4.0]);
            *wa_period_ms = Some(2.0);
            *dram_fraction_schedule = Some(vec![0.0, 1.0, 0.0]);
            *dram_period_ms = Some(1.0);
        }
        let ms = 1_000_000 * NS;
        let gaps = |o: &[Op]| -> Vec<Ps> {
            o.iter()
                .filter_map(|o| match o {
                    Op::Compute(g) => Some(*g),
                    _ => None,
                })
                .collect()
        };
        // t = 0: gap 10 ns, WA 1 (sequential), all PM
        let o = ops_at(&spec, 170, 0);
        assert!(gaps(&o).iter().all(|&g| g == 10 * NS));
        let a = store_addrs(&o);
        assert!(a.windows(2).all(|w| w[1] - w[0] == LINE), "{a:x?}");
        // t = 1 ms: gap 50 ns, all DRAM
        let o = ops_at(&spec, 170, ms);
        assert!(gaps(&o).iter().all(|&g| g == 50 * NS));
        assert!(store_addrs(&o).iter().all(|a| a >> REGION_SHIFT == 2));
        // t = 2 ms: gap 10 ns, PM, WA 4: every line in a fresh XPLine
        let a = store_addrs(&ops_at(&spec, 170, 2 * ms));
        assert!(a.iter().all(|a| a >> REGION_SHIFT == 1));
        assert!(a.windows(2).all(|w| w[1] - w[0] == 256), "{a:x?}");
        // t = 3 ms: the DRAM schedule (period 1 ms, 3 values) is back at 0
        assert!(store_addrs(&ops_at(&spec, 170, 3 * ms))
            .iter()
            .all(|a| a >> REGION_SHIFT == 1));
    }

    #[test]
    fn write_amplification_mixes_fresh_xplines_in_the_stream() {
        let mut spec = antagonist(Pattern::Seq);
        if let WorkloadSpec::Antagonist {
            write_amplification,
            ..
        } = &mut spec
        {
            *write_amplification = Some(3.0);
        }
        let a = store_addrs(&ops(&spec, 17 * 1000));
        let fresh = a
            .iter()
            .filter(|&&a| (a & (THREAD_SPAN - 1)) >= STRIDE_BASE)
            .count() as f64
            / a.len() as f64;
        // (3 - 1) / 3 of the lines go to fresh XPLines
        assert!((fresh - 2.0 / 3.0).abs() < 0.03, "{fresh}");
    }

    #[test]
    fn lc_write_fraction_splits_gets_and_sets() {
        let spec = WorkloadSpec::LcServer {
            rate_kops: 10.0,
            compute_ns: 100.0,
            dram_lines: 1,
            pm_read_lines: 4,
            pm_write_lines: 2,
            write_fraction: Some(0.5),
            dram_region: "dram".into(),
            pm_region: "pm".into(),
        };
        let o = ops(&spec, 20_000);
        let begins: Vec<bool> = o
            .iter()
            .filter_map(|o| match o {
                Op::PmBegin { write, .. } => Some(*write),
                _ => None,
            })
            .collect();
        let requests = o.iter().filter(|o| matches!(o, Op::ArrivalDone)).count();
        // exactly one PM request (GET or SET) per LC request
        assert!(begins.len().abs_diff(requests) <= 1);
        let sets = begins.iter().filter(|w| **w).count() as f64 / begins.len() as f64;
        assert!((sets - 0.5).abs() < 0.05, "{sets}");
    }

    #[test]
    fn fio_writer_fences_each_request() {
        let spec = WorkloadSpec::PmStream {
            rw: Rw::Write,
            pattern: Pattern::Seq,
            request_bytes: 4096,
            store: StoreKind::Nt,
            per_request_ns: 100.0,
            gated: true,
            fence_reads: true,
            region: "pm".into(),
        };
        let o = ops(&spec, 2 * 69);
        assert_eq!(
            o[0],
            Op::PmBegin {
                bytes: 4096,
                write: true
            }
        );
        assert_eq!(
            o.iter().filter(|x| matches!(x, Op::StoreNt { .. })).count(),
            128
        );
        assert_eq!(o.iter().filter(|x| matches!(x, Op::Drain)).count(), 2);
        // sequential: second request starts 4 KiB after the first
        if let (Op::StoreNt { addr: a }, Op::StoreNt { addr: b }) = (o[1], o[70]) {
            assert_eq!(b - a, 4096);
        } else {
            panic!("unexpected ops {:?} {:?}", o[1], o[70]);
        }
    }

    #[test]
    fn cpu_seq_pattern_streams_consecutive_lines() {
        let spec = WorkloadSpec::Cpu {
            compute_ns: None,
            mem_lines: None,
            pattern: None,
            profile: Some("fotonik3d".into()),
            region: "dram".into(),
        };
        let o = ops(&spec, 2 * 19);
        assert!(matches!(o[0], Op::Compute(_)));
        let loads: Vec<(u64, bool)> = o
            .iter()
            .filter_map(|o| match o {
                Op::Load { addr, stream, .. } => Some((*addr, *stream)),
                _ => None,
            })
            .collect();
        assert_eq!(loads.len(), 32);
        assert!(loads.iter().all(|l| l.1));
        assert!(loads.windows(2).all(|w| w[1].0 - w[0].0 == LINE));
        assert_eq!(o.iter().filter(|x| matches!(x, Op::Drain)).count(), 2);
    }

    #[test]
    fn stride_touches_one_line_per_xpline() {
        let spec = antagonist(Pattern::Stride);
        let addrs: Vec<u64> = ops(&spec, 16)
            .into_iter()
            .filter_map(|o| match o {
                Op::StoreNt { addr } => Some(addr),
                _ => None,
            })
            .collect();
        assert!(addrs.windows(2).all(|w| w[1] - w[0] == 256));
    }
}

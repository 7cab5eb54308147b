//! The `workload` table of a job: which request generator its threads run
//! (MBW, memcached, fio-like PM streams, Dicio's antagonist, latency probe,
//! CPU-bound profiles, latency-critical servers) and its value checks.

use super::flush_spec::validate_flush;
pub use super::flush_spec::{FlushMode, FlushPattern, LineState};
use super::phased::{PhasedProgram, PlacementSpec};
use super::profiles::{cpu_profile, CPU_PROFILES};
use serde::{Deserialize, Serialize};

/// Store instruction flavour used by a writer.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// Non-temporal stores (movnt*), as libpmem uses for large copies.
    Nt,
    /// Regular stores: read-for-ownership, then a dirty write-back.
    Temporal,
}

/// Read or write.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Rw {
    /// Reads.
    Read,
    /// Writes.
    Write,
}

/// Access pattern.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    /// Sequential.
    Seq,
    /// Uniformly random, request-aligned.
    Rand,
    /// Dicio's stride: one 64 B line in each 256 B XPLine.
    Stride,
}

/// MBW operations (PATS §III-A).
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MbwMode {
    /// memcpy() of the whole array: loads + non-temporal stores.
    Memcpy,
    /// b[i] = a[i] element loop: loads + temporal stores.
    Dumb,
    /// memcpy() in 256 KiB blocks.
    Mcblock,
}

/// Memcached-like operation.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum KvOp {
    /// GET.
    Get,
    /// SET.
    Set,
}

/// A workload: a request generator for each thread of a job.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WorkloadSpec {
    /// MBW (single-threaded memory benchmark).
    Mbw {
        /// Operation.
        mode: MbwMode,
        /// Copy block for mcblock, bytes.
        #[serde(default = "default_mcblock")]
        block_bytes: u64,
        /// Per-call overhead of memcpy() (mcblock pays it per block), ns.
        #[serde(default = "default_call_ns")]
        call_ns: f64,
        /// Region.
        #[serde(default = "default_dram")]
        region: String,
    },
    /// Single-threaded memcached-like server loop: hash, dependent lookups, value copy.
    Memcached {
        /// GET or SET.
        op: KvOp,
        /// Value size, bytes.
        #[serde(default = "default_value")]
        value_bytes: u64,
        /// Dependent lookups per operation (bucket, item header).
        #[serde(default = "default_lookups")]
        lookups: u32,
        /// Compute per operation (hashing, parsing), ns.
        #[serde(default = "default_kv_compute")]
        compute_ns: f64,
        /// Region.
        #[serde(default = "default_dram")]
        region: String,
    },
    /// fio-like PM reader/writer with libpmem semantics (NT stores, fence per
    /// request; reads fence too unless `fence_reads = false`).
    PmStream {
        /// Read or write.
        rw: Rw,
        /// Pattern.
        #[serde(default = "default_seq")]
        pattern: Pattern,
        /// Request size, bytes (64..=8192 typical).
        request_bytes: u64,
        /// Store flavour for writes.
        #[serde(default = "default_nt")]
        store: StoreKind,
        /// Per-request software overhead (fio + libpmem call), ns.
        #[serde(default = "default_req_ns")]
        per_request_ns: f64,
        /// Whether requests pass through the PATS gate when one is active.
        #[serde(default = "default_true")]
        gated: bool,
        /// Reads: whether the thread waits for a request's loads before its
        /// next request (default, today's model). `false`: plain loads with
        /// no fence (a libpmem reader's memcpy), so a thread's read
        /// parallelism is what its core's fill buffers (random) and L2
        /// prefetch slots (sequential) allow (issue 24 item 4). Writes always
        /// fence (`pmem_drain`).
        #[serde(default = "default_true", skip_serializing_if = "is_true")]
        fence_reads: bool,
        /// Region.
        #[serde(default = "default_pm")]
        region: String,
    },
    /// Dicio's antagonist: 64 B accesses in stream, stride or random pattern
    /// (`rand`: fence-free small stores to random lines), rate-limited with nops.
    ///
    /// Optional schedules (Dicio §5.1 PMantagonist, §5.2 MEMantagonist) change
    /// the behaviour over *simulated* time (from t = 0, warm-up included): value
    /// `i` of a schedule holds during `[i*period, (i+1)*period)`, cycling.
    Antagonist {
        /// Read or write.
        rw: Rw,
        /// `seq` (stream), `stride` or `rand` (a random 64 B line of the file).
        pattern: Pattern,
        /// Nop time between accesses, ns.
        #[serde(default)]
        gap_ns: f64,
        /// Nop times between accesses cycled every `gap_period_ms` (replaces `gap_ns`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gap_ns_schedule: Option<Vec<f64>>,
        /// Period of `gap_ns_schedule`, ms of simulated time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        gap_period_ms: Option<f64>,
        /// Target write amplification in [1, 4] (needs `pattern = "seq"`): each
        /// 64 B access goes to a fresh XPLine (stride-style) with probability
        /// (WA-1)/3, else continues the sequential stream; the DIMMs' XPBuffer
        /// combining then produces the amplification.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        write_amplification: Option<f64>,
        /// Write amplifications cycled every `wa_period_ms` (replaces `write_amplification`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wa_schedule: Option<Vec<f64>>,
        /// Period of `wa_schedule`, ms of simulated time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wa_period_ms: Option<f64>,
        /// Fraction in [0, 1] of accesses that go to a sequential stream in
        /// `dram_region` instead of `region`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dram_fraction: Option<f64>,
        /// DRAM fractions cycled every `dram_period_ms` (replaces `dram_fraction`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dram_fraction_schedule: Option<Vec<f64>>,
        /// Period of `dram_fraction_schedule`, ms of simulated time.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dram_period_ms: Option<f64>,
        /// Region of the DRAM stream (default `dram`; used only with a DRAM fraction).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dram_region: Option<String>,
        /// Region.
        region: String,
    },
    /// lmbench-like dependent-load latency probe (random pointer chase).
    LatencyProbe {
        /// Region.
        #[serde(default = "default_dram")]
        region: String,
        /// Sequential chase (`seq`) or random (`rand`).
        #[serde(default = "default_rand")]
        pattern: Pattern,
    },
    /// CPU-bound task with a compute/memory mix (sysbench prime, SPEC-like
    /// profiles): each iteration computes, then loads `mem_lines` lines and
    /// waits for them (one work unit per iteration).
    Cpu {
        /// Compute per iteration, ns (required unless `profile` gives it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compute_ns: Option<f64>,
        /// DRAM line loads per iteration (default: the profile's, else 0).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mem_lines: Option<u32>,
        /// `rand` (default): independent demand misses to random lines, each
        /// holding a fill buffer; `seq`: the next lines of a sequential stream,
        /// fetched by the L2 streamer (a streaming kernel such as a stencil).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pattern: Option<Pattern>,
        /// A named SPEC CPU2017-like profile (`crate::config::CPU_PROFILES`:
        /// xalancbmk, perlbench, x264, mcf, omnetpp, fotonik3d) that gives
        /// `compute_ns`, `mem_lines` and `pattern`; keys set here override it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        profile: Option<String>,
        /// Region (`local-dram`: the DRAM of the issuing core's socket).
        #[serde(default = "default_dram")]
        region: String,
    },
    /// Open-loop latency-critical server: Poisson arrivals, FIFO service.
    LcServer {
        /// Offered load per thread, thousands of requests per second.
        rate_kops: f64,
        /// Compute per request, ns.
        compute_ns: f64,
        /// Dependent DRAM loads per request.
        #[serde(default)]
        dram_lines: u32,
        /// PM lines read per request.
        #[serde(default)]
        pm_read_lines: u32,
        /// PM lines written (NT + fence) per request.
        #[serde(default)]
        pm_write_lines: u32,
        /// If set, a request is a SET (its `pm_write_lines` writes, no PM reads)
        /// with this probability and otherwise a GET (its `pm_read_lines` reads)
        /// — memcached-pmem under YCSB-A is 0.5. If unset, every request does
        /// both its PM reads and its PM writes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        write_fraction: Option<f64>,
        /// DRAM region.
        #[serde(default = "default_dram")]
        dram_region: String,
        /// PM region.
        #[serde(default = "default_pm")]
        pm_region: String,
    },
    /// Replay of a recorded flush/fence trace (`memtamer-trace v1`,
    /// docs/simulator.md "Flush/fence traces"): each flush of a dirty line
    /// is a 64 B PM write, each fence waits for the thread's writes, each
    /// `tx` record is one work unit (`kops` = thousands of transactions/s).
    Trace {
        /// Built-in trace name (`archtm-hash`, `pmdk-hash`) or a file path.
        trace: String,
        /// Software time per transaction, ns (0: the PM-bound ceiling).
        #[serde(default)]
        tx_compute_ns: f64,
        /// Region.
        #[serde(default = "default_pm")]
        region: String,
    },
    /// Application threads that store to PM lines, flush them and fence
    /// (issue 19 item 5, thesis ch. 6), executed eagerly or through Ribbon's
    /// flush queues and flusher threads (docs/ribbon.md "Ribbon in the
    /// simulator"). One unit = one operation (`lines`: one line).
    Flush {
        /// Whose flush pattern.
        pattern: FlushPattern,
        /// Value (pmemkv), node (fastfair) or block (streamcluster, lines) bytes.
        #[serde(default = "default_flush_bytes")]
        value_bytes: u64,
        /// Application work per operation between its stores and its
        /// flushes (fastfair: before its stores), ns.
        #[serde(default)]
        compute_ns: f64,
        /// Who flushes: `eager`, `ribbon` or `fixed`.
        #[serde(default)]
        mode: FlushMode,
        /// Flusher threads of `fixed`.
        #[serde(default)]
        flushers: u32,
        /// Proactive flushing (thesis §6.3.2) of sampled stored lines by
        /// one extra thread; in `ribbon` the controller switches it.
        #[serde(default)]
        proactive: bool,
        /// PEBS sampling period for proactive flushing: one of this many stores.
        #[serde(default = "default_sample_period")]
        sample_period: u64,
        /// `lines` pattern only: the state of the flushed lines.
        #[serde(default)]
        line_state: LineState,
        /// P4 of the four-point search (hardware threads); 0 = the job's CPUs.
        #[serde(default)]
        cores: u32,
        /// The search's probe window per point, µs of simulated time.
        #[serde(default = "default_probe_us")]
        probe_us: f64,
        /// The steady-state sampling interval T, µs of simulated time.
        #[serde(default = "default_interval_us")]
        interval_us: f64,
        /// Region.
        #[serde(default = "default_pm")]
        region: String,
        /// `ribbon` only: co-running (thesis §6.5.4). Every coordinated
        /// flush job of the scenario shares one four-point search over their
        /// summed flushed bytes, and the system-wide count is split between
        /// them by throughput (`memtamer_ribbon::corun`), instead of one
        /// search per job. Not serialized when false, so the output of every
        /// scenario without it is unchanged.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        coordinated: bool,
        /// `ribbon` and `fixed`: at M = N a flush runs on the application
        /// thread that issued it instead of going to its dedicated flusher,
        /// as the runtime does (`memtamer_ribbon::Config::inline_when_dedicated`,
        /// default true; the rule is `memtamer_ribbon::route`). False forces
        /// the hand-off (the ablation; the simulator's behaviour before it
        /// modelled the short-cut). Not serialized when true, so the output
        /// of every scenario that does not turn it off names no new key.
        #[serde(default = "default_true", skip_serializing_if = "is_true")]
        inline_when_dedicated: bool,
        /// `ribbon` only: the most flusher counts probed inside (P2, P3)
        /// after the four-point table answered an end from ties or a dip
        /// (`memtamer_ribbon::interior`, beyond the thesis; the runtime's
        /// `MEMTAMER_RIBBON_INTERIOR_PROBES`). 0 is the thesis's four-point
        /// search exactly. Not serialized at the default.
        #[serde(
            default = "default_interior_probes",
            skip_serializing_if = "is_default_interior_probes"
        )]
        interior_probes: u32,
    },
    /// An iterative MPI-like program over tiered data objects (issue 20
    /// item 5; `config::phased`, `workload::phased`). Threads come in pairs:
    /// thread 2r runs rank r's program, thread 2r+1 its migration helper.
    Phased {
        /// Objects, phases, iterations.
        program: Box<PhasedProgram>,
        /// Placement policy.
        placement: Box<PlacementSpec>,
        /// DRAM capacity of one rank, bytes.
        dram_bytes: u64,
        /// Region of the fast tier.
        #[serde(default = "default_dram")]
        fast_region: String,
        /// Region of the slow tier.
        #[serde(default = "default_pm")]
        slow_region: String,
    },
}

fn default_flush_bytes() -> u64 {
    256
}
fn default_sample_period() -> u64 {
    1
}
fn default_probe_us() -> f64 {
    100.0
}
fn default_interval_us() -> f64 {
    1000.0
}

fn default_mcblock() -> u64 {
    262_144
}
fn default_call_ns() -> f64 {
    20.0
}
fn default_dram() -> String {
    "dram".into()
}
fn default_pm() -> String {
    "pm".into()
}
fn default_value() -> u64 {
    1024
}
fn default_lookups() -> u32 {
    3
}
fn default_kv_compute() -> f64 {
    400.0
}
fn default_seq() -> Pattern {
    Pattern::Seq
}
fn default_rand() -> Pattern {
    Pattern::Rand
}
fn default_nt() -> StoreKind {
    StoreKind::Nt
}
fn default_req_ns() -> f64 {
    150.0
}
fn is_true(b: &bool) -> bool {
    *b
}
fn default_interior_probes() -> u32 {
    memtamer_ribbon::interior::DEFAULT_INTERIOR_PROBES
}
fn is_default_interior_probes(n: &u32) -> bool {
    *n == default_interior_probes()
}
fn default_true() -> bool {
    true
}

/// The resolved parameters of a `cpu` workload (its profile, if any, with
/// the keys set beside it applied on top).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CpuWork {
    /// Compute per iteration, ns.
    pub compute_ns: f64,
    /// DRAM line loads per iteration.
    pub mem_lines: u32,
    /// `rand` or `seq`.
    pub pattern: Pattern,
}

impl WorkloadSpec {
    /// For a `cpu` workload: its profile (if named) overridden by the keys
    /// set beside it. An error names an unknown profile or a missing
    /// `compute_ns`; other workloads give an error too.
    pub fn cpu_params(&self) -> Result<CpuWork, String> {
        let WorkloadSpec::Cpu {
            compute_ns,
            mem_lines,
            pattern,
            profile,
            ..
        } = self
        else {
            return Err("not a cpu workload".into());
        };
        let base = match profile {
            Some(name) => {
                let p = cpu_profile(name).ok_or_else(|| {
                    format!(
                        "unknown profile `{name}` (known: {})",
                        CPU_PROFILES
                            .iter()
                            .map(|p| p.name)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
                Some(CpuWork {
                    compute_ns: p.compute_ns,
                    mem_lines: p.mem_lines,
                    pattern: p.pattern,
                })
            }
            None => None,
        };
        let compute_ns = compute_ns
            .or(base.map(|b| b.compute_ns))
            .ok_or("compute_ns is required (or a profile)")?;
        Ok(CpuWork {
            compute_ns,
            mem_lines: mem_lines.or(base.map(|b| b.mem_lines)).unwrap_or(0),
            pattern: pattern.or(base.map(|b| b.pattern)).unwrap_or(Pattern::Rand),
        })
    }

    /// The regions this workload's threads touch, each with the key that
    /// names it (`region`, `dram_region`, ...): every one must be a region
    /// of the platform (the engine refuses the job otherwise, and
    /// `runner::prepare_scenario` names the key before a point runs).
    pub fn regions(&self) -> Vec<(&'static str, String)> {
        match self {
            WorkloadSpec::Antagonist {
                region,
                dram_region,
                dram_fraction,
                dram_fraction_schedule,
                ..
            } => {
                let mut v = vec![("region", region.clone())];
                if dram_fraction.is_some() || dram_fraction_schedule.is_some() {
                    let d = dram_region.clone().unwrap_or_else(default_dram);
                    v.push(("dram_region", d));
                }
                v
            }
            WorkloadSpec::Mbw { region, .. }
            | WorkloadSpec::Memcached { region, .. }
            | WorkloadSpec::PmStream { region, .. }
            | WorkloadSpec::LatencyProbe { region, .. }
            | WorkloadSpec::Cpu { region, .. }
            | WorkloadSpec::Trace { region, .. }
            | WorkloadSpec::Flush { region, .. } => vec![("region", region.clone())],
            WorkloadSpec::Phased {
                fast_region,
                slow_region,
                ..
            } => vec![
                ("fast_region", fast_region.clone()),
                ("slow_region", slow_region.clone()),
            ],
            WorkloadSpec::LcServer {
                dram_region,
                pm_region,
                pm_read_lines,
                pm_write_lines,
                ..
            } => {
                let mut v = vec![("dram_region", dram_region.clone())];
                if pm_read_lines + pm_write_lines > 0 {
                    v.push(("pm_region", pm_region.clone()));
                }
                v
            }
        }
    }

    /// Checks value ranges; on error, the offending field and why.
    pub(super) fn validate(&self) -> Result<(), (&'static str, String)> {
        let check = |name: &'static str, v: f64, min: f64| {
            if v.is_finite() && v >= min {
                Ok(())
            } else {
                Err((name, format!("{name} must be >= {min}, got {v}")))
            }
        };
        // a time: also at most MAX_NS (1e30 ns saturated to 2^64-1 ps and
        // wrapped the clock: the work took no time at all)
        let check_ns = |name: &'static str, v: f64, min: f64| {
            check(name, v, min)?;
            check_max_ns(name, v)
        };
        match self {
            WorkloadSpec::Mbw {
                block_bytes,
                call_ns,
                ..
            } => {
                check("block_bytes", *block_bytes as f64, 64.0)?;
                check_ns("call_ns", *call_ns, 0.0)
            }
            WorkloadSpec::Memcached {
                value_bytes,
                compute_ns,
                ..
            } => {
                check("value_bytes", *value_bytes as f64, 1.0)?;
                check_ns("compute_ns", *compute_ns, 0.0)
            }
            WorkloadSpec::PmStream {
                request_bytes,
                per_request_ns,
                ..
            } => {
                check("request_bytes", *request_bytes as f64, 1.0)?;
                if *request_bytes > 1 << 24 {
                    return Err(("request_bytes", "request_bytes must be <= 16 MiB".into()));
                }
                check_ns("per_request_ns", *per_request_ns, 0.0)
            }
            WorkloadSpec::Antagonist {
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
                ..
            } => {
                check_ns("gap_ns", *gap_ns, 0.0)?;
                if *gap_ns != 0.0 && gap_ns_schedule.is_some() {
                    return Err((
                        "gap_ns_schedule",
                        "give gap_ns or gap_ns_schedule, not both".into(),
                    ));
                }
                check_schedule(
                    ("gap_ns", None),
                    ("gap_ns_schedule", gap_ns_schedule),
                    ("gap_period_ms", *gap_period_ms),
                    (0.0, 1e9),
                )?;
                check_schedule(
                    ("write_amplification", *write_amplification),
                    ("wa_schedule", wa_schedule),
                    ("wa_period_ms", *wa_period_ms),
                    (1.0, 4.0),
                )?;
                if (write_amplification.is_some() || wa_schedule.is_some())
                    && *pattern != Pattern::Seq
                {
                    return Err((
                        "pattern",
                        "write_amplification / wa_schedule need pattern = \"seq\" (the stream the stride-style accesses are mixed into)".into(),
                    ));
                }
                check_schedule(
                    ("dram_fraction", *dram_fraction),
                    ("dram_fraction_schedule", dram_fraction_schedule),
                    ("dram_period_ms", *dram_period_ms),
                    (0.0, 1.0),
                )
            }
            WorkloadSpec::LatencyProbe { .. } => Ok(()),
            WorkloadSpec::Flush {
                mode,
                coordinated: true,
                ..
            } if *mode != FlushMode::Ribbon => Err((
                "coordinated",
                "coordinated = true is for mode = \"ribbon\" (one search split between jobs)"
                    .into(),
            )),
            WorkloadSpec::Flush {
                mode: FlushMode::Eager,
                inline_when_dedicated: false,
                ..
            } => Err((
                "inline_when_dedicated",
                "inline_when_dedicated = false is for mode = \"ribbon\" or \"fixed\" (eager has no flusher to hand a flush to)"
                    .into(),
            )),
            WorkloadSpec::Flush {
                interior_probes,
                ..
            } if *interior_probes > memtamer_ribbon::interior::MAX_INTERIOR_PROBES => Err((
                "interior_probes",
                format!(
                    "interior_probes must be in [0, {}] (0: the thesis's four-point search), got {interior_probes}",
                    memtamer_ribbon::interior::MAX_INTERIOR_PROBES
                ),
            )),
            WorkloadSpec::Flush {
                pattern,
                value_bytes,
                compute_ns,
                mode,
                flushers,
                sample_period,
                probe_us,
                interval_us,
                ..
            } => validate_flush(
                *pattern,
                *value_bytes,
                *compute_ns,
                *mode,
                *flushers,
                *sample_period,
                *probe_us,
                *interval_us,
            ),
            WorkloadSpec::Phased {
                program,
                placement,
                dram_bytes,
                ..
            } => {
                program.validate()?;
                placement.validate_for(program)?;
                check("dram_bytes", *dram_bytes as f64, 4096.0)
            }
            WorkloadSpec::Trace {
                trace,
                tx_compute_ns,
                ..
            } => {
                if trace.trim().is_empty() {
                    return Err(("trace", "trace must name a built-in trace or a file".into()));
                }
                check_ns("tx_compute_ns", *tx_compute_ns, 0.0)
            }
            WorkloadSpec::Cpu { .. } => {
                let c = self.cpu_params().map_err(|m| {
                    let key = if m.starts_with("compute_ns") {
                        "compute_ns"
                    } else {
                        "profile"
                    };
                    (key, m)
                })?;
                check_ns("compute_ns", c.compute_ns, 1.0)?;
                if c.pattern == Pattern::Stride {
                    return Err((
                        "pattern",
                        "a cpu workload's pattern is rand or seq".to_string(),
                    ));
                }
                Ok(())
            }
            WorkloadSpec::LcServer {
                rate_kops,
                compute_ns,
                write_fraction,
                ..
            } => {
                check("rate_kops", *rate_kops, 0.001)?;
                check_ns("compute_ns", *compute_ns, 0.0)?;
                match write_fraction {
                    Some(f) if !(f.is_finite() && (0.0..=1.0).contains(f)) => Err((
                        "write_fraction",
                        format!("write_fraction must be in [0, 1], got {f}"),
                    )),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// Longest time a workload key may give, ns (about 11.6 days): the
/// simulator's clock counts picoseconds in a `u64` (2^64 ps = 213 days),
/// and larger values saturated and wrapped it, so that 1e30 ns of compute
/// took no time at all. Scenarios run at most a minute of simulated time.
pub const MAX_NS: f64 = 1e15;

/// `Err` naming `name` unless `v` (already checked finite and >= its
/// minimum) is at most [`MAX_NS`].
pub(super) fn check_max_ns(name: &'static str, v: f64) -> Result<(), (&'static str, String)> {
    if v <= MAX_NS {
        Ok(())
    } else {
        Err((
            name,
            format!("{name} must be at most {MAX_NS:e} ns (the simulated clock counts picoseconds in 64 bits), got {v}"),
        ))
    }
}

/// Checks an optional `(value, schedule, period)` triple of an antagonist:
/// value and schedule are exclusive, a schedule is non-empty and needs a
/// period > 0, and every value lies in `range`.
fn check_schedule(
    value: (&'static str, Option<f64>),
    schedule: (&'static str, &Option<Vec<f64>>),
    period: (&'static str, Option<f64>),
    range: (f64, f64),
) -> Result<(), (&'static str, String)> {
    let in_range = |v: f64| v.is_finite() && v >= range.0 && v <= range.1;
    if let Some(v) = value.1 {
        if !in_range(v) {
            return Err((
                value.0,
                format!("{} must be in [{}, {}], got {v}", value.0, range.0, range.1),
            ));
        }
        if schedule.1.is_some() {
            return Err((
                schedule.0,
                format!("give {} or {}, not both", value.0, schedule.0),
            ));
        }
    }
    match (schedule.1, period.1) {
        (Some(s), p) => {
            if s.is_empty() {
                return Err((schedule.0, format!("{} must not be empty", schedule.0)));
            }
            if let Some(v) = s.iter().find(|v| !in_range(**v)) {
                return Err((
                    schedule.0,
                    format!(
                        "{} values must be in [{}, {}], got {v}",
                        schedule.0, range.0, range.1
                    ),
                ));
            }
            match p {
                Some(p) if p.is_finite() && p > 0.0 => Ok(()),
                Some(p) => Err((period.0, format!("{} must be > 0, got {p}", period.0))),
                None => Err((
                    period.0,
                    format!("{} needs {} (ms of simulated time)", schedule.0, period.0),
                )),
            }
        }
        (None, Some(_)) => Err((
            period.0,
            format!("{} is set but {} is not", period.0, schedule.0),
        )),
        (None, None) => Ok(()),
    }
}

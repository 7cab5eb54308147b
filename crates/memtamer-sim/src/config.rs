//! Platform and scenario files (TOML), their schema, validation and overrides.
//!
//! A *platform* describes a machine with physical parameters, each with a
//! cited source in its `[sources]` table. A *scenario* names a platform, jobs
//! (workloads, threads, CPUs), a policy, a duration, sweeps, the paper's
//! reference points and pass/fail checks. Both formats are documented in
//! `docs/scenarios.md`.

use crate::error::{line_col, line_of_key, SimError};
use memtamer_core::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Reserved region name: per request, the first DRAM region whose channels
/// all lie on the socket of the core issuing it (first-touch allocation with
/// NUMA balancing keeping a task's pages on its node; see docs/simulator.md).
pub const LOCAL_DRAM: &str = "local-dram";

/// Region index that addresses carry for [`LOCAL_DRAM`] (the engine resolves
/// it per request); real regions use the indices below it.
pub const LOCAL_DRAM_INDEX: u8 = u8::MAX;

/// CPU and core-side parameters.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CpuParams {
    /// Sockets.
    pub sockets: u32,
    /// Physical cores per socket.
    pub cores_per_socket: u32,
    /// Hardware threads per core (1 or 2).
    pub threads_per_core: u32,
    /// L1D fill buffers per core: the limit on outstanding misses, shared by SMT siblings.
    pub fill_buffers: u32,
    /// Per-core buffers for dirty-line write-backs awaiting the memory controller.
    pub writeback_buffers: u32,
    /// Per-core L2 miss-queue entries the L2 streamer may use for prefetched
    /// stream loads (shared by SMT siblings).
    pub l2_prefetch_slots: u32,
    /// Factor by which compute stretches while the SMT sibling also computes.
    pub smt_slowdown: f64,
    /// Latency from an L2 miss to the caching agent (LLC lookup included), ns.
    pub core_to_uncore_ns: f64,
    /// Latency of a response from the caching agent back to the core, ns.
    pub uncore_to_core_ns: f64,
    /// Scheduler time slice, microseconds.
    pub time_slice_us: f64,
    /// Period of a job's duty cycle (`CoreBudget::duty_cycle` < 1), microseconds:
    /// the job's threads run during the first `duty x period` of every period
    /// and are descheduled for the rest (Dicio §4.2, Caladan-style core grants).
    #[serde(default = "default_duty_period_us")]
    pub duty_period_us: f64,
}

fn default_duty_period_us() -> f64 {
    100.0
}

/// Shared uncore structures.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UncoreParams {
    /// Socket-wide request table entries: every memory request holds one from
    /// the caching agent until its memory controller accepts it (write) or
    /// returns data (read).
    pub request_table: u32,
    /// Caching agent to memory controller latency, ns.
    pub cha_to_imc_ns: f64,
    /// One-way socket-link (UPI) latency, ns.
    pub numa_link_ns: f64,
    /// Which socket's request table tracks a remote request from its arrival
    /// at the caching agents until its completion: that of the memory it goes
    /// to (`home`, the default: the home agent holds the request and its
    /// memory-controller credit until the completion has crossed the link
    /// back, Ahn §2) or the issuing socket's (`requester`, an ablation).
    #[serde(default, skip_serializing_if = "RemoteTracking::is_home")]
    pub remote_tracking: RemoteTracking,
}

/// Where a remote request holds its request-table entry (see
/// [`UncoreParams::remote_tracking`]).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RemoteTracking {
    /// The issuing socket's table, across the link and back (ablation: with
    /// it, remote writers leave the home socket's DRAM traffic alone).
    Requester,
    /// The table of the socket whose memory it accesses (its home agent).
    #[default]
    Home,
}

impl RemoteTracking {
    fn is_home(&self) -> bool {
        *self == RemoteTracking::Home
    }
}

/// Memory-controller parameters, per channel.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemoryParams {
    /// Memory-controller clock used for occupancy counters, MHz.
    pub imc_clock_mhz: f64,
    /// Read pending queue entries per channel, shared by DRAM and PM.
    pub rpq_entries: u32,
    /// Write pending queue entries per channel, shared by DRAM and PM.
    pub wpq_entries: u32,
    /// WPQ occupancy at which the channel switches to draining writes.
    pub write_drain_high: u32,
    /// WPQ occupancy at which the channel returns to serving reads.
    pub write_drain_low: u32,
}

/// DRAM timing.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DramParams {
    /// Channel data-bus bandwidth, GB/s (10^9 B/s).
    pub bus_gbps: f64,
    /// Activate + CAS latency of an access, ns.
    pub access_ns: f64,
    /// Read/write bus turnaround, ns.
    pub turnaround_ns: f64,
}

/// Optane DIMM parameters.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PmParams {
    /// Writes the iMC may have in flight to one DIMM before it accepts them (DDR-T credits).
    pub ddrt_write_credits: u32,
    /// DIMM controller latency per request (DDR-T protocol + address indirection), ns.
    pub controller_ns: f64,
    /// Media read latency of one 256 B XPLine, ns.
    pub media_read_ns: f64,
    /// Media read bandwidth of one DIMM, GB/s.
    pub media_read_gbps: f64,
    /// Media write bandwidth of one DIMM, GB/s.
    pub media_write_gbps: f64,
    /// XPBuffer (write-combining) capacity, bytes.
    pub xpbuffer_bytes: u32,
    /// XPBuffer associativity (ways per set).
    pub xpbuffer_ways: u32,
    /// Read buffer (prefetched XPLines) capacity in XPLines.
    pub read_buffer_lines: u32,
    /// XPLine write-backs the DIMM can queue for the media.
    pub media_write_queue: u32,
    /// Independent media partitions of one DIMM: an XPLine operation occupies
    /// its partition (XPLine address modulo this) for this many media service
    /// times, so the DIMM reaches its bandwidth only while the operations it
    /// starts in order spread over the partitions. 1 = a single server.
    pub media_partitions: u32,
    /// Delay before media counters can be read (ACPI), ms.
    pub media_counter_delay_ms: f64,
    /// When the core sees a PM write complete: at WPQ acceptance (`wpq`), when
    /// it leaves the WPQ over DDR-T into the DIMM (`ddrt`), or only once the
    /// XPBuffer takes it (`xpbuffer`).
    pub write_completion: PmWriteCompletion,
}

/// The point at which a PM write completes for the core.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum PmWriteCompletion {
    /// When the iMC's WPQ accepts the write (the ADR persistence point), as for DRAM.
    Wpq,
    /// When the write crosses DDR-T into the DIMM's write queue (consumes a credit).
    Ddrt,
    /// When the DIMM's XPBuffer accepts it.
    Xpbuffer,
}

/// One memory channel and what sits on it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ChannelSpec {
    /// Channel name, e.g. "A".
    pub name: String,
    /// Socket.
    pub socket: u32,
    /// Memory controller within the socket.
    pub imc: u32,
    /// Whether a DRAM DIMM is on the channel.
    #[serde(default)]
    pub dram: bool,
    /// Whether an Optane DIMM is on the channel.
    #[serde(default)]
    pub pm: bool,
}

/// What a region is backed by.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum MemKind {
    /// DRAM.
    Dram,
    /// Persistent memory.
    Pm,
}

/// An address range interleaved over channels (DRAM) or PM DIMMs.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RegionSpec {
    /// Region name used by jobs.
    pub name: String,
    /// DRAM or PM.
    pub kind: MemKind,
    /// Names of the channels (for PM: of the channels holding the DIMMs) it interleaves over.
    pub channels: Vec<String>,
    /// Interleave granularity, bytes.
    pub interleave_bytes: u64,
}

/// A machine.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    /// Short name.
    pub name: String,
    /// What machine this is and where it is described.
    pub description: String,
    /// CPU.
    pub cpu: CpuParams,
    /// Uncore.
    pub uncore: UncoreParams,
    /// Memory controllers.
    pub memory: MemoryParams,
    /// DRAM.
    pub dram: DramParams,
    /// PM DIMMs.
    pub pm: PmParams,
    /// Channels.
    #[serde(rename = "channel")]
    pub channels: Vec<ChannelSpec>,
    /// Regions.
    #[serde(rename = "region")]
    pub regions: Vec<RegionSpec>,
    /// Citation for each parameter, keyed by dotted path.
    #[serde(default)]
    pub sources: BTreeMap<String, String>,
    /// Published values this platform should reproduce, for validation.
    #[serde(default)]
    pub expect: Vec<Expectation>,
}

/// A published idle latency or peak bandwidth the platform must reproduce.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expectation {
    /// Which probe: `dram_idle_ns`, `pm_idle_random_ns`, `pm_idle_seq_ns`,
    /// `dram_peak_read_gbps`, `pm_peak_read_gbps`, `pm_peak_write_gbps`.
    pub metric: String,
    /// Published value.
    pub value: f64,
    /// Where it is published.
    pub source: String,
}

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
    /// fio-like PM reader/writer with libpmem semantics (NT stores, fence per request).
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
        /// Region.
        #[serde(default = "default_pm")]
        region: String,
    },
    /// Dicio's antagonist: 64 B accesses in stream or stride pattern, rate-limited with nops.
    ///
    /// Optional schedules (Dicio §5.1 PMantagonist, §5.2 MEMantagonist) change
    /// the behaviour over *simulated* time (from t = 0, warm-up included): value
    /// `i` of a schedule holds during `[i*period, (i+1)*period)`, cycling.
    Antagonist {
        /// Read or write.
        rw: Rw,
        /// `seq` (stream) or `stride`.
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
        /// A named SPEC CPU2017-like profile (`crate::workload::CPU_PROFILES`:
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
fn default_true() -> bool {
    true
}

/// A job: threads running one workload.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JobSpec {
    /// Unique name, used in metric paths (`NAME.gbps`) and overrides (`job.NAME.threads`).
    pub name: String,
    /// Service class.
    #[serde(default)]
    pub class: memtamer_core::JobClass,
    /// Number of threads (0 disables the job).
    pub threads: u32,
    /// Allowed CPUs in Linux list format; threads are placed round-robin over them.
    pub cpus: Option<String>,
    /// Where the threads start (round-robin), when that differs from where
    /// they may run: a placement policy then has room to move them (Ahn
    /// Table 2 "ours" starts from the separated layout). Must lie in `cpus`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_cpus: Option<String>,
    /// Jobs with the same group also report summed metrics under the group's
    /// name (`GROUP.kops`, `GROUP.gbps`, `GROUP.pm_write_gbps`, ...), e.g. one
    /// group for the per-socket jobs of one task type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// The workload.
    pub workload: WorkloadSpec,
}

/// A paper reference point shown beside the simulated value.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PaperPoint {
    /// Figure, e.g. "PATS Fig. 4b".
    pub figure: String,
    /// Metric path, e.g. `memcpy.gbps`.
    pub metric: String,
    /// X value of the point (the swept key's value).
    pub x: f64,
    /// Published value (in the metric's unit, or a ratio when `relative_to` is set).
    pub value: f64,
    /// If set, the value is relative to the metric at this x.
    pub relative_to: Option<f64>,
    /// Where the number comes from (quote or section).
    pub source: String,
    /// Only points whose other swept keys have these values.
    #[serde(default)]
    pub with: BTreeMap<String, toml::Value>,
    /// If set, the value is divided by the metric at `relative_to` (or the
    /// same x) on the points whose swept keys match `with` overridden by
    /// these, e.g. `{ policy = "baseline" }` for "PATS over Baseline".
    #[serde(default)]
    pub relative_with: BTreeMap<String, toml::Value>,
}

/// A pass/fail condition on the results (the "done when" lines).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// What is checked, in words.
    pub name: String,
    /// Metric path.
    pub metric: String,
    /// X value (point) to check.
    pub at: f64,
    /// If set, the checked value is metric(at) / metric(relative_to).
    pub relative_to: Option<f64>,
    /// Inclusive lower bound.
    pub min: Option<f64>,
    /// Inclusive upper bound.
    pub max: Option<f64>,
    /// Only points whose other swept keys have these values.
    #[serde(default)]
    pub with: BTreeMap<String, toml::Value>,
    /// If set, the value is divided by the metric at `relative_to` (or the
    /// same x) on the points whose swept keys match `with` overridden by
    /// these, e.g. `{ policy = "baseline" }` for "PATS over Baseline".
    #[serde(default)]
    pub relative_with: BTreeMap<String, toml::Value>,
}

/// A plot in the report.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlotSpec {
    /// Title.
    pub title: String,
    /// Metric paths on the y axis.
    pub y: Vec<String>,
    /// Y axis label.
    pub y_label: String,
    /// Normalize each series to its value at this x.
    pub normalize_at: Option<f64>,
}

/// A scenario: the unit `memtamer sim run` executes.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Short name.
    pub name: String,
    /// Title for reports.
    pub title: String,
    /// Platform name (built-in) or path to a platform file.
    pub platform: String,
    /// Measured duration, ms of simulated time.
    pub duration_ms: f64,
    /// Warm-up before measuring, ms.
    #[serde(default = "default_warmup")]
    pub warmup_ms: f64,
    /// Seed.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Policy name.
    #[serde(default = "default_policy")]
    pub policy: String,
    /// Policy window, microseconds.
    #[serde(default = "default_window")]
    pub policy_window_us: f64,
    /// Jobs.
    #[serde(rename = "job")]
    pub jobs: Vec<JobSpec>,
    /// Swept keys and their values; the first is the x axis.
    #[serde(default)]
    pub sweep: Vec<SweepSpec>,
    /// Platform overrides, dotted keys (e.g. `memory.wpq_entries`).
    #[serde(default)]
    pub platform_set: BTreeMap<String, toml::Value>,
    /// Named groups of overrides, `[variant.KEY.VALUE]` tables of `--set`
    /// keys: a sweep over `KEY` (or `--set KEY=VALUE`) applies group `VALUE`,
    /// e.g. a placement that moves two jobs at once.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variant: BTreeMap<String, BTreeMap<String, BTreeMap<String, toml::Value>>>,
    /// Paper reference points.
    #[serde(default)]
    pub paper: Vec<PaperPoint>,
    /// Pass/fail checks.
    #[serde(default)]
    pub check: Vec<Check>,
    /// Plots.
    #[serde(default)]
    pub plot: Vec<PlotSpec>,
}

/// One swept key.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SweepSpec {
    /// Dotted key, as for `--set`.
    pub key: String,
    /// Values.
    pub values: Vec<toml::Value>,
}

fn default_warmup() -> f64 {
    1.0
}
fn default_seed() -> u64 {
    1
}
fn default_policy() -> String {
    "baseline".into()
}
fn default_window() -> f64 {
    1000.0
}

fn parse_toml<T: serde::de::DeserializeOwned>(file: &str, text: &str) -> Result<T, SimError> {
    toml::from_str::<T>(text).map_err(|e| {
        let (line, column) = e.span().map_or((0, 0), |s| line_col(text, s.start));
        SimError::Parse {
            file: file.to_string(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })
}

fn invalid(file: &str, text: &str, key: &str, message: impl Into<String>) -> SimError {
    SimError::Invalid {
        file: file.to_string(),
        line: line_of_key(text, key),
        key: key.to_string(),
        message: message.into(),
    }
}

impl Platform {
    /// Parses and validates a platform file.
    pub fn parse(file: &str, text: &str) -> Result<Platform, SimError> {
        let p: Platform = parse_toml(file, text)?;
        p.validate(file, text)?;
        Ok(p)
    }

    /// Parses with dotted-key overrides applied before validation.
    pub fn parse_with(
        file: &str,
        text: &str,
        overrides: &BTreeMap<String, toml::Value>,
    ) -> Result<Platform, SimError> {
        if overrides.is_empty() {
            return Self::parse(file, text);
        }
        let mut value: toml::Value = parse_toml(file, text)?;
        for (k, v) in overrides {
            set_dotted(&mut value, k, v.clone()).map_err(|m| SimError::Override {
                arg: format!("platform.{k}"),
                message: m,
            })?;
        }
        let p: Platform = value
            .try_into()
            .map_err(|e: toml::de::Error| SimError::Parse {
                file: file.to_string(),
                line: 0,
                column: 0,
                message: format!("after overrides: {}", e.message().trim()),
            })?;
        p.validate(file, text)?;
        Ok(p)
    }

    fn validate(&self, file: &str, text: &str) -> Result<(), SimError> {
        let positive = [
            ("cpu.sockets", self.cpu.sockets as f64),
            ("cpu.cores_per_socket", self.cpu.cores_per_socket as f64),
            ("cpu.fill_buffers", self.cpu.fill_buffers as f64),
            ("cpu.writeback_buffers", self.cpu.writeback_buffers as f64),
            ("cpu.l2_prefetch_slots", self.cpu.l2_prefetch_slots as f64),
            ("cpu.smt_slowdown", self.cpu.smt_slowdown),
            ("cpu.time_slice_us", self.cpu.time_slice_us),
            ("cpu.duty_period_us", self.cpu.duty_period_us),
            ("uncore.request_table", self.uncore.request_table as f64),
            ("memory.imc_clock_mhz", self.memory.imc_clock_mhz),
            ("memory.rpq_entries", self.memory.rpq_entries as f64),
            ("memory.wpq_entries", self.memory.wpq_entries as f64),
            ("dram.bus_gbps", self.dram.bus_gbps),
            ("pm.ddrt_write_credits", self.pm.ddrt_write_credits as f64),
            ("pm.media_read_gbps", self.pm.media_read_gbps),
            ("pm.media_write_gbps", self.pm.media_write_gbps),
            ("pm.xpbuffer_ways", self.pm.xpbuffer_ways as f64),
            ("pm.media_write_queue", self.pm.media_write_queue as f64),
            ("pm.media_partitions", self.pm.media_partitions as f64),
            ("pm.read_buffer_lines", self.pm.read_buffer_lines as f64),
        ];
        for (k, v) in positive {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(file, text, k, format!("must be > 0, got {v}")));
            }
        }
        let non_negative = [
            ("cpu.core_to_uncore_ns", self.cpu.core_to_uncore_ns),
            ("cpu.uncore_to_core_ns", self.cpu.uncore_to_core_ns),
            ("uncore.cha_to_imc_ns", self.uncore.cha_to_imc_ns),
            ("uncore.numa_link_ns", self.uncore.numa_link_ns),
            ("dram.access_ns", self.dram.access_ns),
            ("dram.turnaround_ns", self.dram.turnaround_ns),
            ("pm.controller_ns", self.pm.controller_ns),
            ("pm.media_read_ns", self.pm.media_read_ns),
            ("pm.media_counter_delay_ms", self.pm.media_counter_delay_ms),
        ];
        for (k, v) in non_negative {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(file, text, k, format!("must be >= 0, got {v}")));
            }
        }
        if !(1..=2).contains(&self.cpu.threads_per_core) {
            return Err(invalid(
                file,
                text,
                "cpu.threads_per_core",
                "must be 1 or 2",
            ));
        }
        let cpus = self.cpu.sockets * self.cpu.cores_per_socket * self.cpu.threads_per_core;
        if cpus as usize > memtamer_core::cpuset::MAX_CPUS {
            return Err(invalid(
                file,
                text,
                "cpu.cores_per_socket",
                "too many logical CPUs",
            ));
        }
        let lines = self.pm.xpbuffer_bytes / 256;
        if lines == 0 || !lines.is_multiple_of(self.pm.xpbuffer_ways) {
            return Err(invalid(
                file,
                text,
                "pm.xpbuffer_ways",
                "xpbuffer_bytes/256 must be a positive multiple of xpbuffer_ways",
            ));
        }
        if self.memory.write_drain_low >= self.memory.write_drain_high
            || self.memory.write_drain_high > self.memory.wpq_entries
        {
            return Err(invalid(
                file,
                text,
                "memory.write_drain_high",
                "need write_drain_low < write_drain_high <= wpq_entries",
            ));
        }
        for c in &self.channels {
            if c.socket >= self.cpu.sockets {
                return Err(invalid(
                    file,
                    text,
                    "socket",
                    format!("channel {} is on a socket that does not exist", c.name),
                ));
            }
        }
        if self.regions.is_empty() {
            return Err(invalid(
                file,
                text,
                "region",
                "at least one region is needed",
            ));
        }
        for r in &self.regions {
            if r.channels.is_empty() {
                return Err(invalid(
                    file,
                    text,
                    "channels",
                    format!("region {} lists no channel", r.name),
                ));
            }
            if r.interleave_bytes < 64 || !r.interleave_bytes.is_power_of_two() {
                return Err(invalid(
                    file,
                    text,
                    "interleave_bytes",
                    format!("region {}: must be a power of two >= 64", r.name),
                ));
            }
            if r.name == LOCAL_DRAM {
                return Err(invalid(
                    file,
                    text,
                    "name",
                    format!("region name `{LOCAL_DRAM}` is reserved (the DRAM of the issuing core's socket)"),
                ));
            }
            // a region may span sockets (PM interleaved over every node): a
            // request is remote or local by the socket of the channel it reaches
            for cname in &r.channels {
                let Some(c) = self.channels.iter().find(|c| &c.name == cname) else {
                    return Err(invalid(
                        file,
                        text,
                        "channels",
                        format!("region {}: no channel named {cname}", r.name),
                    ));
                };
                let has = match r.kind {
                    MemKind::Dram => c.dram,
                    MemKind::Pm => c.pm,
                };
                if !has {
                    return Err(invalid(
                        file,
                        text,
                        "channels",
                        format!(
                            "region {}: channel {cname} has no {:?} DIMM",
                            r.name, r.kind
                        ),
                    ));
                }
            }
        }
        if self.regions.len() >= LOCAL_DRAM_INDEX as usize {
            return Err(invalid(
                file,
                text,
                "region",
                format!("at most {} regions", LOCAL_DRAM_INDEX),
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        if let Some(r) = self.regions.iter().find(|r| !names.insert(r.name.as_str())) {
            return Err(invalid(
                file,
                text,
                "name",
                format!("region name `{}` is used twice", r.name),
            ));
        }
        Ok(())
    }
}

impl Scenario {
    /// A scenario built in code: `jobs` on `platform` for 1 ms after 0.2 ms of
    /// warm-up, seed 1, baseline policy, no sweep; callers adjust the fields.
    pub fn with_jobs(name: &str, platform: &str, jobs: Vec<JobSpec>) -> Scenario {
        Scenario {
            name: name.into(),
            title: String::new(),
            platform: platform.into(),
            duration_ms: 1.0,
            warmup_ms: 0.2,
            seed: default_seed(),
            policy: default_policy(),
            policy_window_us: default_window(),
            jobs,
            sweep: vec![],
            platform_set: BTreeMap::new(),
            variant: BTreeMap::new(),
            paper: vec![],
            check: vec![],
            plot: vec![],
        }
    }

    /// Parses and validates a scenario file.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, SimError> {
        let s: Scenario = parse_toml(file, text)?;
        s.validate(file, text)?;
        Ok(s)
    }

    /// Applies `key=value` overrides (see docs/scenarios.md for key syntax).
    pub fn with_overrides(&self, sets: &[(String, toml::Value)]) -> Result<Scenario, SimError> {
        if sets.is_empty() {
            return Ok(self.clone());
        }
        let mut value = toml::Value::try_from(self).map_err(|e| SimError::Override {
            arg: String::new(),
            message: e.to_string(),
        })?;
        for (k, v) in sets {
            apply_override(&mut value, k, v.clone()).map_err(|m| SimError::Override {
                arg: format!("{k}={v}"),
                message: m,
            })?;
        }
        let s: Scenario = value
            .try_into()
            .map_err(|e: toml::de::Error| SimError::Override {
                arg: sets
                    .iter()
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                message: e.message().trim().to_string(),
            })?;
        s.validate("<overrides>", "")?;
        Ok(s)
    }

    fn validate(&self, file: &str, text: &str) -> Result<(), SimError> {
        if !(self.duration_ms.is_finite() && self.duration_ms > 0.0 && self.duration_ms <= 60_000.0)
        {
            return Err(invalid(file, text, "duration_ms", "must be in (0, 60000]"));
        }
        if !(self.warmup_ms.is_finite() && self.warmup_ms >= 0.0 && self.warmup_ms <= 60_000.0) {
            return Err(invalid(file, text, "warmup_ms", "must be in [0, 60000]"));
        }
        if self.warmup_ms + self.duration_ms > 15_000.0 {
            return Err(invalid(
                file,
                text,
                "duration_ms",
                "warmup_ms + duration_ms must be <= 15000 (15 s of simulated time)",
            ));
        }
        if self.seed > i64::MAX as u64 {
            return Err(invalid(
                file,
                text,
                "seed",
                "must be <= 9223372036854775807",
            ));
        }
        if !(self.policy_window_us.is_finite() && self.policy_window_us >= 1.0) {
            return Err(invalid(file, text, "policy_window_us", "must be >= 1"));
        }
        for (key, groups) in &self.variant {
            const FIELDS: &[&str] = &[
                "name",
                "title",
                "platform",
                "duration_ms",
                "warmup_ms",
                "seed",
                "policy",
                "policy_window_us",
                "job",
                "sweep",
                "platform_set",
                "variant",
                "paper",
                "check",
                "plot",
            ];
            if key.is_empty() || key.contains('.') || FIELDS.contains(&key.as_str()) {
                return Err(invalid(
                    file,
                    text,
                    "variant",
                    format!("variant `{key}`: a variant key is a plain name that is not a scenario field"),
                ));
            }
            if groups.is_empty() {
                return Err(invalid(
                    file,
                    text,
                    "variant",
                    format!("variant `{key}` has no values"),
                ));
            }
            for (value, sets) in groups {
                if let Some(k) = sets.keys().find(|k| self.variant.contains_key(k.as_str())) {
                    return Err(invalid(
                        file,
                        text,
                        "variant",
                        format!("variant `{key}.{value}` sets variant `{k}`: variants do not nest"),
                    ));
                }
            }
        }
        let mut names = std::collections::BTreeSet::new();
        for j in &self.jobs {
            if !names.insert(j.name.as_str()) {
                return Err(invalid(
                    file,
                    text,
                    "name",
                    format!("job name `{}` is used twice", j.name),
                ));
            }
            if let Some(g) = &j.group {
                if g.is_empty() || self.jobs.iter().any(|o| &o.name == g) {
                    return Err(invalid(
                        file,
                        text,
                        "group",
                        format!("job {}: group `{g}` is empty or a job's name", j.name),
                    ));
                }
            }
            if j.threads > 256 {
                return Err(invalid(
                    file,
                    text,
                    "threads",
                    format!("job {}: at most 256 threads", j.name),
                ));
            }
            if let Some(c) = &j.cpus {
                let set = CpuSet::parse_list(c)
                    .map_err(|e| invalid(file, text, "cpus", format!("job {}: {e}", j.name)))?;
                if set.is_empty() {
                    return Err(invalid(
                        file,
                        text,
                        "cpus",
                        format!("job {}: empty CPU list", j.name),
                    ));
                }
            }
            j.workload.validate().map_err(|(key, m)| {
                let path = format!("job.{}.workload.{key}", j.name);
                SimError::Invalid {
                    file: file.to_string(),
                    line: line_of_job_key(text, &j.name, key),
                    key: path,
                    message: format!("job {}: {m}", j.name),
                }
            })?;
        }
        Ok(())
    }
}

/// The 1-based line where `key` is assigned inside job `job` (inline
/// `workload = { .. }` tables included), else where the job's `workload` is,
/// else 0.
fn line_of_job_key(text: &str, job: &str, key: &str) -> usize {
    let lines: Vec<&str> = text.lines().collect();
    let assigns = |line: &str, k: &str| {
        line.match_indices(k).any(|(i, _)| {
            let before = line[..i].chars().next_back();
            let after = line[i + k.len()..].trim_start();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_') && after.starts_with('=')
        })
    };
    // the job's block starts at its `name = "JOB"` line (or the [[job]] header before it)
    let name_line = lines.iter().position(|l| {
        let t = l.trim();
        t.strip_prefix("name")
            .map(|r| r.trim_start())
            .and_then(|r| r.strip_prefix('='))
            .is_some_and(|r| r.trim().trim_matches('"') == job)
    });
    let Some(start) = name_line else {
        return line_of_key(text, key);
    };
    let start = lines[..start]
        .iter()
        .rposition(|l| l.trim() == "[[job]]")
        .unwrap_or(start);
    let end = lines[start + 1..]
        .iter()
        .position(|l| l.trim() == "[[job]]" || l.trim_start().starts_with("[[sweep"))
        .map_or(lines.len(), |e| start + 1 + e);
    for k in [key, "workload"] {
        if let Some(i) = (start..end).find(|&i| assigns(lines[i], k)) {
            return i + 1;
        }
    }
    0
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
                let p = crate::workload::cpu_profile(name).ok_or_else(|| {
                    format!(
                        "unknown profile `{name}` (known: {})",
                        crate::workload::CPU_PROFILES
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

    /// Checks value ranges; on error, the offending field and why.
    fn validate(&self) -> Result<(), (&'static str, String)> {
        let check = |name: &'static str, v: f64, min: f64| {
            if v.is_finite() && v >= min {
                Ok(())
            } else {
                Err((name, format!("{name} must be >= {min}, got {v}")))
            }
        };
        match self {
            WorkloadSpec::Mbw {
                block_bytes,
                call_ns,
                ..
            } => {
                check("block_bytes", *block_bytes as f64, 64.0)?;
                check("call_ns", *call_ns, 0.0)
            }
            WorkloadSpec::Memcached {
                value_bytes,
                compute_ns,
                ..
            } => {
                check("value_bytes", *value_bytes as f64, 1.0)?;
                check("compute_ns", *compute_ns, 0.0)
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
                check("per_request_ns", *per_request_ns, 0.0)
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
                check("gap_ns", *gap_ns, 0.0)?;
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
            WorkloadSpec::Cpu { .. } => {
                let c = self.cpu_params().map_err(|m| {
                    let key = if m.starts_with("compute_ns") {
                        "compute_ns"
                    } else {
                        "profile"
                    };
                    (key, m)
                })?;
                check("compute_ns", c.compute_ns, 1.0)?;
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
                check("compute_ns", *compute_ns, 0.0)?;
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

/// Sets `a.b.c = v` in a TOML tree, creating tables as needed.
pub fn set_dotted(root: &mut toml::Value, key: &str, v: toml::Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) {
        return Err("empty key segment".into());
    }
    let mut cur = root;
    for (i, p) in parts.iter().enumerate() {
        let table = cur
            .as_table_mut()
            .ok_or_else(|| format!("`{}` is not a table", parts[..i].join(".")))?;
        if i + 1 == parts.len() {
            table.insert((*p).to_string(), v);
            return Ok(());
        }
        cur = table
            .entry((*p).to_string())
            .or_insert_with(|| toml::Value::Table(Default::default()));
    }
    Ok(())
}

/// Applies one scenario override. Keys: top-level fields (`duration_ms`),
/// `job.NAME.FIELD` and `job.NAME.workload.FIELD`, `platform.SECTION.FIELD`,
/// and a variant key (`[variant.KEY.VALUE]`), whose value names the group of
/// overrides to apply (a string, or an integer for numeric names).
pub fn apply_override(root: &mut toml::Value, key: &str, v: toml::Value) -> Result<(), String> {
    // a variant key applies its named group of overrides
    let group = root
        .get("variant")
        .and_then(|t| t.get(key))
        .and_then(|g| g.as_table())
        .cloned();
    if let Some(groups) = group {
        let name = match &v {
            toml::Value::String(s) => s.clone(),
            toml::Value::Integer(i) => i.to_string(),
            _ => {
                return Err(format!(
                    "variant `{key}` takes the name of one of its values"
                ))
            }
        };
        let name = name.as_str();
        let sets = groups
            .get(name)
            .and_then(|t| t.as_table())
            .ok_or_else(|| {
                format!(
                    "variant `{key}` has no value `{name}` (has: {})",
                    groups.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            })?
            .clone();
        for (k, val) in sets {
            if root.get("variant").and_then(|t| t.get(&k)).is_some() {
                return Err(format!(
                    "variant `{key}.{name}` sets variant `{k}`: variants do not nest"
                ));
            }
            apply_override(root, &k, val)?;
        }
        return Ok(());
    }
    if let Some(rest) = key.strip_prefix("platform.") {
        let table = root.as_table_mut().ok_or("scenario is not a table")?;
        let ps = table
            .entry("platform_set")
            .or_insert_with(|| toml::Value::Table(Default::default()));
        ps.as_table_mut()
            .ok_or("platform_set is not a table")?
            .insert(rest.to_string(), v);
        return Ok(());
    }
    if let Some(rest) = key.strip_prefix("job.") {
        let (name, field) = rest.split_once('.').ok_or("expected job.NAME.FIELD")?;
        let jobs = root
            .get_mut("job")
            .and_then(|j| j.as_array_mut())
            .ok_or("scenario has no jobs")?;
        let job = jobs
            .iter_mut()
            .find(|j| j.get("name").and_then(|n| n.as_str()) == Some(name))
            .ok_or_else(|| format!("no job named `{name}`"))?;
        return set_dotted(job, field, v);
    }
    set_dotted(root, key, v)
}

/// Parses the value half of `key=value`: a TOML scalar, else a bare string.
pub fn parse_value(text: &str) -> toml::Value {
    let doc = format!("v = {text}");
    match toml::from_str::<toml::Table>(&doc) {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| toml::Value::String(text.to_string())),
        Err(_) => toml::Value::String(text.to_string()),
    }
}

//! The platform file: a machine's CPU, uncore, memory-controller, DRAM and
//! Optane parameters, its channels and regions, each with a cited source
//! (`docs/scenarios.md`), and its validation.

pub use super::uncore_parts::{MemoryDirectory, RemoteTracker, RemoteTracking, RequestTableScope};
use super::{fits_clock, invalid, parse_toml, set_dotted, MIN_GBPS};
use crate::error::SimError;
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
    /// Shared last-level cache of a socket, bytes: how many lines the
    /// `flush` workload's line-state table keeps resident (FIFO). Only
    /// platforms that run flush workloads need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc_bytes: Option<u64>,
    /// Time a `clwb` of a clean line resident in the core's private caches
    /// takes (a private-cache lookup, no write-back), ns. Only platforms
    /// that run flush workloads need it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clwb_clean_ns: Option<f64>,
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
    /// What one request table serves: each memory controller (`imc`, the
    /// default: one home agent / mesh-to-memory block per iMC with its own
    /// tracker and RPQ/WPQ credits, so a full controller stalls only the
    /// requests to it) or the whole socket (`socket`, the ablation: one
    /// shared table whose overflow stalls every request of the socket).
    #[serde(default, skip_serializing_if = "RequestTableScope::is_imc")]
    pub request_table_scope: RequestTableScope,
    /// Where a multi-socket line's coherence directory lives: nowhere
    /// (`none`, the default: the model before issue 24 item 2) or in the
    /// memory line itself (`memory`: Intel's in-memory directory, whose state
    /// the home writes back to memory when a read from another socket is
    /// granted the line; see [`MemoryDirectory`]).
    #[serde(default, skip_serializing_if = "MemoryDirectory::is_none")]
    pub directory: MemoryDirectory,
    /// Which home-side tracker a remote request (with `remote_tracking =
    /// "home"`) holds from its arrival until its completion: its memory
    /// controller's request table (`imc`, the default: the model so far) or
    /// one tracker per socket in the home's caching/home agents (`cha`:
    /// Skylake-SP's CHAs, each the home of an address slice of the whole
    /// socket, track requests arriving over UPI in their TOR), whose
    /// fullness stalls every new request of that socket; see [`RemoteTracker`].
    #[serde(default, skip_serializing_if = "RemoteTracker::is_imc")]
    pub remote_tracker: RemoteTracker,
    /// Entries of each caching agent's table of requests (TOR), one CHA per
    /// core: every request holds one of its socket's pool from the caching
    /// agents until its completion, whichever memory controller it goes to
    /// (engine/tor.rs). 0, the default, does not model it: Skylake-SP's
    /// count is unpublished (Sandy/Ivy Bridge-EP: 20 per Cbo).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub tor_entries_per_cha: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
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
    /// Which bus scheduler drives each channel's data bus: `watermark` (the
    /// default: write-drain mode between `write_drain_high` and
    /// `write_drain_low`), `read-first` (an ablation: writes only when no
    /// read is ready) or `drain-blocks-reads` (an ablation: no read moves
    /// while the channel drains writes). See `engine/bus.rs`.
    #[serde(default, skip_serializing_if = "BusSchedulerKind::is_default")]
    pub bus_scheduler: BusSchedulerKind,
}

/// The channel bus scheduler a platform names (see
/// [`MemoryParams::bus_scheduler`]).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum BusSchedulerKind {
    /// Reads first until the WPQ reaches its high watermark, then writes
    /// until it is down to the low one.
    #[default]
    Watermark,
    /// Reads always first; a write goes only when no read is ready.
    ReadFirst,
    /// The watermarks of `Watermark`, read strictly: while the channel
    /// drains writes it issues no read command and moves no read data, even
    /// when no write may go (a PM write waiting for a DDR-T credit), until
    /// the WPQ is down to `write_drain_low` (the write-drain mode of
    /// Stuecheli et al., ISCA'10, and Chatterjee et al., HPCA'12: reads
    /// wait out the drain). An ablation (docs/notebook/simulator.md, "Write drain
    /// that blocks reads").
    DrainBlocksReads,
}

impl BusSchedulerKind {
    fn is_default(&self) -> bool {
        *self == BusSchedulerKind::default()
    }
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
    /// Banks and row buffers (`[dram.banks]`, issue 24 item 3). Absent: every
    /// access costs `access_ns` (the model before issue 24, kept for files
    /// that do not describe their DIMMs' organisation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub banks: Option<DramBankParams>,
}

/// The bank and row-buffer organisation of the DRAM on one channel and its
/// DDR4 timings (JEDEC JESD79-4 speed bin; the platform file cites its
/// source), used by `engine::dram`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DramBankParams {
    /// Ranks on the channel (each has its own banks and four-activate window).
    pub ranks: u32,
    /// Banks per rank (DDR4: 4 bank groups x 4 banks).
    pub banks_per_rank: u32,
    /// Row (page) size of a rank, bytes: what one activate opens.
    pub row_bytes: u32,
    /// Activate to column command, ns.
    pub trcd_ns: f64,
    /// Precharge to activate, ns.
    pub trp_ns: f64,
    /// Read column command to data (CAS latency), ns.
    pub tcl_ns: f64,
    /// Write column command to data (CAS write latency), ns.
    pub tcwl_ns: f64,
    /// Activate to precharge (minimum row open time), ns.
    pub tras_ns: f64,
    /// Four-activate window of a rank, ns.
    pub tfaw_ns: f64,
    /// Read to precharge, ns.
    pub trtp_ns: f64,
    /// Write recovery (end of write data to precharge), ns.
    pub twr_ns: f64,
    /// Close-adaptive policy: a row idle this long after its last column
    /// command is precharged, ns.
    #[serde(default)]
    pub page_close_ns: f64,
    /// When a row is closed.
    #[serde(default)]
    pub page_policy: PagePolicy,
}

impl DramBankParams {
    /// Timings finite and >= 0; bank count a power of two (the bank index is
    /// XOR-hashed with the row); a row at least one 64 B line, a power of two.
    fn validate(&self, file: &str, text: &str) -> Result<(), SimError> {
        let times = [
            ("dram.banks.trcd_ns", self.trcd_ns),
            ("dram.banks.trp_ns", self.trp_ns),
            ("dram.banks.tcl_ns", self.tcl_ns),
            ("dram.banks.tcwl_ns", self.tcwl_ns),
            ("dram.banks.tras_ns", self.tras_ns),
            ("dram.banks.tfaw_ns", self.tfaw_ns),
            ("dram.banks.trtp_ns", self.trtp_ns),
            ("dram.banks.twr_ns", self.twr_ns),
            ("dram.banks.page_close_ns", self.page_close_ns),
        ];
        for (k, v) in times {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(file, text, k, format!("must be >= 0, got {v}")));
            }
            fits_clock(file, text, k, v, 1.0)?;
        }
        let banks = self.ranks.saturating_mul(self.banks_per_rank);
        if self.ranks == 0 || self.banks_per_rank == 0 || !banks.is_power_of_two() {
            return Err(invalid(
                file,
                text,
                "dram.banks.banks_per_rank",
                format!("ranks x banks_per_rank must be a power of two >= 1, got {banks}"),
            ));
        }
        if self.row_bytes < 64 || !self.row_bytes.is_power_of_two() {
            return Err(invalid(
                file,
                text,
                "dram.banks.row_bytes",
                format!("must be a power of two >= 64, got {}", self.row_bytes),
            ));
        }
        Ok(())
    }
}

/// When the memory controller closes (precharges) an open row.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum PagePolicy {
    /// Close a row once it has been idle for `page_close_ns` after its last
    /// column command (an adaptive page policy with an idle timer): streams
    /// hit open rows, an isolated random access finds its bank precharged.
    #[default]
    CloseAdaptive,
    /// Leave every row open until a request for another row needs the bank.
    Open,
    /// Ablation: no bank state; every access costs `dram.access_ns`.
    Flat,
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
    /// XPLine write-backs the DIMM can queue for the media. The built-in
    /// platforms' 4 is an estimate; VANS (Wang et al., MICRO'20,
    /// `config/vans.cfg`) gives the DIMM's controller 64-entry queues, which
    /// removes the dependence of one DIMM's write throughput on its writers'
    /// phases but also most of PATS Fig. 1's multi-writer decline
    /// (docs/notebook/simulator.md, "Why PM write throughput on one DIMM depends on the
    /// writers' phases").
    pub media_write_queue: u32,
    /// Independent media partitions of one DIMM: an XPLine operation occupies
    /// its partition (XPLine address modulo this) for this many media service
    /// times, so the DIMM reaches its bandwidth only while the operations it
    /// starts in order spread over the partitions. 1 = a single server.
    pub media_partitions: u32,
    /// Granularity, bytes, of the DIMM's address indirection table (AIT):
    /// the DIMM maps each block of this size to an internal media block of
    /// its own choosing (Yang et al., FAST'20 §3.1: the AIT translates
    /// physical to media addresses for wear levelling; Wang et al., MICRO'20
    /// (LENS) measure its translation at 4 KB, so 4096 is the sourced value
    /// to set). Within a block consecutive XPLines rotate over the
    /// partitions; which partition a block starts on is a hash of the block
    /// and the run seed (the real mapping is unpublished). 0 (default, every
    /// built-in platform) = no indirection: XPLine address modulo
    /// `media_partitions`. Not yet the default: with 4096 PATS Fig. 1's
    /// multi-writer checks fail (docs/notebook/simulator.md, "The AIT as
    /// the partition map").
    #[serde(default)]
    pub ait_block_bytes: u32,
    /// What the write-back of a partially written XPLine costs the media
    /// (`media`, the default: a 256 B media read, then the write, both on
    /// the media port and the XPLine's partition; `in_write`: the same as a
    /// full XPLine's write, because the media reads every XPLine it writes
    /// anyway, so the published write bandwidth already contains the read:
    /// Dicio §4.1, "write is actually a read-modify-write operation in PM",
    /// whose media-level read bandwidth includes the write bandwidth).
    #[serde(default)]
    pub rmw_read: RmwRead,
    /// Whether the XPBuffer holds written XPLines until eviction
    /// (`write_back`, the default) or writes each one through to the media
    /// once the writes queued for it have been combined (`write_through`,
    /// the model of VANS, Wang et al., MICRO'20; see [`XpBufferPolicy`]).
    #[serde(default)]
    pub xpbuffer_policy: XpBufferPolicy,
    /// Delay before media counters can be read (ACPI), ms.
    pub media_counter_delay_ms: f64,
    /// When the core sees a PM write complete: at WPQ acceptance (`wpq`), when
    /// it leaves the WPQ over DDR-T into the DIMM (`ddrt`), or only once the
    /// XPBuffer takes it (`xpbuffer`).
    pub write_completion: PmWriteCompletion,
}

/// What a partial XPLine write-back costs the media (`pm.rmw_read`).
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum RmwRead {
    /// A separate 256 B media read before the write: port and partition
    /// busy for a read service plus a write service (the model before
    /// issue 24).
    #[default]
    Media,
    /// The read is part of every media write (Dicio §4.1): a partial
    /// write-back costs one write service, like a full one. It still counts
    /// as a read-modify-write and as 256 B of media reads.
    InWrite,
}

/// When a write taken into the XPBuffer reaches the media (`pm.xpbuffer_policy`).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum XpBufferPolicy {
    /// A write-back cache: writes to a resident XPLine merge into its entry
    /// and reach the media once, when the entry is evicted (the model before
    /// this option; Yang et al., FAST'20 §3.2 describe the XPBuffer as
    /// combining adjacent writes, without saying when it writes back).
    #[default]
    WriteBack,
    /// VANS's RMW buffer (github.com/TheNetAdmin/VANS, `src/general/rmw.cpp`,
    /// `rmw_controller::tick_lsq_write`; `config/vans.cfg`): writes to one
    /// XPLine combine only while they wait together before its media write
    /// issues (and while a partial XPLine's read is still under way); a
    /// write to a resident idle entry is a `write_patch`, written through to
    /// the media again; an entry is clean once its write issued, so
    /// eviction costs nothing and only entries with no write waiting can be
    /// evicted. LENS's overwrite probe on real Optane (same repository,
    /// `tests/precision/overwrite/LPMEM-Overwrite-256.csv`) shows each
    /// overwrite of one 256 B block costing a media-speed write.
    WriteThrough,
}

impl<'de> Deserialize<'de> for XpBufferPolicy {
    /// By hand, so that a bad value's error names the key (serde's derived
    /// message names only the variants, and after `--set` no line either).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = XpBufferPolicy;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("pm.xpbuffer_policy = \"write_back\" or \"write_through\"")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<XpBufferPolicy, E> {
                match v {
                    "write_back" => Ok(XpBufferPolicy::WriteBack),
                    "write_through" => Ok(XpBufferPolicy::WriteThrough),
                    _ => Err(E::custom(format!(
                        "pm.xpbuffer_policy = \"{v}\": expected \"write_back\" or \"write_through\""
                    ))),
                }
            }
        }
        d.deserialize_str(V)
    }
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
    /// Quartz-style latency emulation (none: memory is as the channels make
    /// it). See [`super::quartz`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quartz: Option<super::quartz::QuartzParams>,
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
            let per_unit = if k.ends_with("_ms") { 1e6 } else { 1.0 };
            fits_clock(file, text, k, v, per_unit)?;
        }
        fits_clock(file, text, "cpu.time_slice_us", self.cpu.time_slice_us, 1e3)?;
        fits_clock(
            file,
            text,
            "cpu.duty_period_us",
            self.cpu.duty_period_us,
            1e3,
        )?;
        for (k, v) in [
            ("dram.bus_gbps", self.dram.bus_gbps),
            ("pm.media_read_gbps", self.pm.media_read_gbps),
            ("pm.media_write_gbps", self.pm.media_write_gbps),
        ] {
            if v < MIN_GBPS {
                let m = format!("must be at least {MIN_GBPS:e} GB/s (1 GiB, the largest access, in at most 1e15 ns: the simulated clock counts picoseconds in 64 bits), got {v:e}");
                return Err(invalid(file, text, k, m));
            }
        }
        let ait = self.pm.ait_block_bytes;
        if ait != 0 && !(ait >= 256 && ait.is_power_of_two()) {
            return Err(invalid(
                file,
                text,
                "pm.ait_block_bytes",
                format!("must be 0 or a power of two >= 256 (one XPLine), got {ait}"),
            ));
        }
        if let Some(v) = self.cpu.clwb_clean_ns {
            if !(v.is_finite() && v >= 0.0) {
                return Err(invalid(
                    file,
                    text,
                    "cpu.clwb_clean_ns",
                    format!("must be >= 0, got {v}"),
                ));
            }
            fits_clock(file, text, "cpu.clwb_clean_ns", v, 1.0)?;
        }
        if let Some(b) = &self.dram.banks {
            b.validate(file, text)?;
        }
        if let Some(q) = &self.quartz {
            q.validate(file, text)?;
        }
        if self.cpu.llc_bytes.is_some_and(|b| b < 64) {
            return Err(invalid(
                file,
                text,
                "cpu.llc_bytes",
                "must hold at least one 64 B line",
            ));
        }
        if !(1..=2).contains(&self.cpu.threads_per_core) {
            return Err(invalid(
                file,
                text,
                "cpu.threads_per_core",
                "must be 1 or 2",
            ));
        }
        // in u64: 2 x 2^31 x 2 wrapped a u32 product to 0, which passed
        let cpus = u64::from(self.cpu.sockets)
            * u64::from(self.cpu.cores_per_socket)
            * u64::from(self.cpu.threads_per_core);
        if cpus > memtamer_core::cpuset::MAX_CPUS as u64 {
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

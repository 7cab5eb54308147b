//! What the sensors saw during one control window.
//!
//! Every figure a sensor may lack is a [`Measured`]: `None` means "unknown"
//! (no PMU, no uncore counters, no permission), never zero. Policies must
//! treat unknown as unknown.

use crate::{CpuSet, JobId, ThreadId};
use serde::{Deserialize, Serialize};

/// A figure that a sensor may not be able to provide. `None` = unknown.
pub type Measured<T> = Option<T>;

/// Request-size classes for PM/DRAM request accounting. PATS Eq. 4 switches
/// at 256 B and the Optane media works in 256 B XPLines, so the classes are
/// split around that size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SizeClass {
    /// Below 256 B: pays read-modify-write on Optane media.
    Small,
    /// 256 B up to (but not including) 1 KiB.
    Medium,
    /// 1 KiB up to (but not including) 4 KiB.
    Large,
    /// 4 KiB and above.
    Huge,
}

impl SizeClass {
    /// All classes, smallest first.
    pub const ALL: [SizeClass; 4] = [
        SizeClass::Small,
        SizeClass::Medium,
        SizeClass::Large,
        SizeClass::Huge,
    ];
    /// The class of a request of `bytes` bytes.
    pub fn of(bytes: u64) -> SizeClass {
        match bytes {
            0..=255 => SizeClass::Small,
            256..=1023 => SizeClass::Medium,
            1024..=4095 => SizeClass::Large,
            _ => SizeClass::Huge,
        }
    }
    /// Index into per-class arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Request-level traffic of one thread or job to one memory kind (DRAM or PM):
/// what the CPU asked for, before any media amplification.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AccessStats {
    /// Bytes read.
    pub read_bytes: u64,
    /// Bytes written.
    pub write_bytes: u64,
    /// Completed read requests per [`SizeClass`].
    pub reads_by_size: [u64; 4],
    /// Completed write requests per [`SizeClass`].
    pub writes_by_size: [u64; 4],
}

impl AccessStats {
    /// Records one request of `bytes` bytes.
    pub fn record(&mut self, bytes: u64, is_write: bool) {
        let idx = SizeClass::of(bytes).index();
        if is_write {
            self.write_bytes += bytes;
            self.writes_by_size[idx] += 1;
        } else {
            self.read_bytes += bytes;
            self.reads_by_size[idx] += 1;
        }
    }
    /// Adds another window's or thread's figures.
    pub fn add(&mut self, other: &AccessStats) {
        self.read_bytes += other.read_bytes;
        self.write_bytes += other.write_bytes;
        for i in 0..4 {
            self.reads_by_size[i] += other.reads_by_size[i];
            self.writes_by_size[i] += other.writes_by_size[i];
        }
    }
    /// Total requests.
    pub fn requests(&self) -> u64 {
        self.reads_by_size.iter().sum::<u64>() + self.writes_by_size.iter().sum::<u64>()
    }
    /// Average request size in bytes (PATS's `S`), if any request was seen.
    pub fn average_request_bytes(&self) -> Option<f64> {
        let n = self.requests();
        (n > 0).then(|| (self.read_bytes + self.write_bytes) as f64 / n as f64)
    }
    /// Fraction of requests that are writes (PATS's `Wr`), if any request was seen.
    pub fn write_ratio(&self) -> Option<f64> {
        let n = self.requests();
        (n > 0).then(|| self.writes_by_size.iter().sum::<u64>() as f64 / n as f64)
    }
}

/// Service class of a job (Dicio's terms).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobClass {
    /// Latency-critical: protected.
    Lc,
    /// Best-effort: throttled when it hurts LC jobs.
    Be,
    /// Observed but never acted upon.
    #[default]
    Unmanaged,
}

/// One thread's window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadObs {
    /// Thread id.
    pub tid: ThreadId,
    /// Job the thread belongs to.
    pub job: JobId,
    /// CPU the thread last ran on, if known.
    pub cpu: Measured<u32>,
    /// Current affinity.
    pub allowed: CpuSet,
    /// Request-level PM traffic, if any source measures it for this thread.
    pub pm: Measured<AccessStats>,
    /// Request-level DRAM traffic (LLC misses), if measured.
    pub dram: Measured<AccessStats>,
    /// Fraction of the window the thread was running on a CPU.
    pub cpu_util: Measured<f64>,
    /// Nanoseconds the thread spent waiting at the PM gate in the window.
    pub gate_wait_ns: Measured<u64>,
}

/// One job's window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct JobObs {
    /// Job id.
    pub id: JobId,
    /// Human name (scenario job name, process comm, cgroup).
    pub name: String,
    /// Service class.
    pub class: JobClass,
    /// Threads of the job.
    pub threads: Vec<ThreadId>,
    /// Work units completed in the window (ops, bytes; workload-defined).
    pub work_units: Measured<f64>,
    /// Tail latencies of an LC job in the window, nanoseconds: p50, p99, p99.9.
    pub latency_ns: Measured<[f64; 3]>,
}

/// One memory channel's controller counters over the window (uncore iMC
/// equivalents: UNC_M_CAS_COUNT, UNC_M_PMM_RPQ/WPQ_OCCUPANCY and _INSERTS).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChannelObs {
    /// Socket of the channel.
    pub socket: u32,
    /// Channel index within the socket.
    pub channel: u32,
    /// DRAM CAS reads (64 B each).
    pub cas_reads: Measured<u64>,
    /// DRAM CAS writes (64 B each).
    pub cas_writes: Measured<u64>,
    /// Sum over memory-controller cycles of PM read-pending-queue occupancy.
    pub pmm_rpq_occupancy: Measured<u64>,
    /// PM read-pending-queue inserts.
    pub pmm_rpq_inserts: Measured<u64>,
    /// Sum over memory-controller cycles of PM write-pending-queue occupancy.
    pub pmm_wpq_occupancy: Measured<u64>,
    /// PM write-pending-queue inserts.
    pub pmm_wpq_inserts: Measured<u64>,
}

impl ChannelObs {
    /// Dicio §4.1: average WPQ queuing delay in memory-controller cycles,
    /// occupancy / inserts. Unknown when either counter is unknown or no insert happened.
    pub fn wpq_delay_cycles(&self) -> Measured<f64> {
        match (self.pmm_wpq_occupancy, self.pmm_wpq_inserts) {
            (Some(occ), Some(ins)) if ins > 0 => Some(occ as f64 / ins as f64),
            _ => None,
        }
    }
}

/// One PM DIMM's media counters. These are slow to read on real hardware
/// (~4.5 ms through ACPI, Dicio §4.1), so they carry their age.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DimmObs {
    /// DIMM index on the platform.
    pub dimm: u32,
    /// Media bytes read since the previous reading.
    pub media_read_bytes: Measured<u64>,
    /// Media bytes written since the previous reading.
    pub media_write_bytes: Measured<u64>,
    /// Nanoseconds between the previous and this reading.
    pub interval_ns: Measured<u64>,
    /// How old the reading is at the end of the window, nanoseconds.
    pub age_ns: Measured<u64>,
}

/// Utilization of one logical CPU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuObs {
    /// Logical CPU id.
    pub cpu: u32,
    /// Busy fraction of the window.
    pub utilization: Measured<f64>,
}

/// State of the PATS gate at the end of the window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GateObs {
    /// Current admission limit (None = unlimited).
    pub limit: Option<u32>,
    /// Requests admitted now.
    pub admitted: u32,
    /// Threads waiting now.
    pub waiting: u32,
}

/// Everything the sensors saw in one window.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// Window start, nanoseconds since the sensing epoch.
    pub start_ns: u64,
    /// Window length, nanoseconds.
    pub duration_ns: u64,
    /// Per-thread figures.
    pub threads: Vec<ThreadObs>,
    /// Per-job figures.
    pub jobs: Vec<JobObs>,
    /// Per-channel iMC counters.
    pub channels: Vec<ChannelObs>,
    /// Per-DIMM media counters.
    pub dimms: Vec<DimmObs>,
    /// Per-CPU utilization.
    pub cpus: Vec<CpuObs>,
    /// Gate state, if a gate is in use.
    pub gate: Option<GateObs>,
}

impl Observation {
    /// DRAM CAS operations (reads + writes, 64 B each) over all channels in
    /// the window; unknown unless every channel reports both counts.
    pub fn dram_cas(&self) -> Measured<u64> {
        if self.channels.is_empty() {
            return None;
        }
        self.channels
            .iter()
            .map(|c| Some(c.cas_reads? + c.cas_writes?))
            .sum()
    }

    /// Total request-level PM traffic of all threads whose PM traffic is known.
    pub fn pm_total(&self) -> AccessStats {
        let mut total = AccessStats::default();
        for t in &self.threads {
            if let Some(pm) = &t.pm {
                total.add(pm);
            }
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dram_cas_is_unknown_unless_every_channel_counts() {
        let ch = |r, w| ChannelObs {
            cas_reads: r,
            cas_writes: w,
            ..Default::default()
        };
        let mut obs = Observation::default();
        assert_eq!(obs.dram_cas(), None);
        obs.channels = vec![ch(Some(3), Some(4)), ch(Some(1), Some(0))];
        assert_eq!(obs.dram_cas(), Some(8));
        obs.channels.push(ch(Some(1), None));
        assert_eq!(obs.dram_cas(), None);
    }

    #[test]
    fn size_classes_split_at_optane_granularity() {
        assert_eq!(SizeClass::of(64), SizeClass::Small);
        assert_eq!(SizeClass::of(255), SizeClass::Small);
        assert_eq!(SizeClass::of(256), SizeClass::Medium);
        assert_eq!(SizeClass::of(1024), SizeClass::Large);
        assert_eq!(SizeClass::of(4096), SizeClass::Huge);
    }

    #[test]
    fn access_stats_mix() {
        let mut s = AccessStats::default();
        assert_eq!(s.average_request_bytes(), None);
        assert_eq!(s.write_ratio(), None);
        s.record(4096, true);
        s.record(4096, true);
        s.record(1024, false);
        assert_eq!(s.requests(), 3);
        assert!((s.write_ratio().unwrap() - 2.0 / 3.0).abs() < 1e-12);
        assert!((s.average_request_bytes().unwrap() - 3072.0).abs() < 1e-9);
    }

    #[test]
    fn wpq_delay_unknown_is_not_zero() {
        let mut c = ChannelObs::default();
        assert_eq!(c.wpq_delay_cycles(), None);
        c.pmm_wpq_occupancy = Some(7000);
        c.pmm_wpq_inserts = Some(0);
        assert_eq!(c.wpq_delay_cycles(), None);
        c.pmm_wpq_inserts = Some(10);
        assert_eq!(c.wpq_delay_cycles(), Some(700.0));
    }
}

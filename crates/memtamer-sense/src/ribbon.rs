//! What Ribbon (thesis ch. 6, `memtamer-ribbon`) takes from sensing:
//!
//! * its controller's **bandwidth signal** (thesis §6.3.1 reads Optane write
//!   bandwidth from the iMC): the iMC's PM write-pending-queue inserts
//!   (`UNC_M_PMM_WPQ_INSERTS`, one per 64 B written to PM) where the CPU
//!   counts them, else the DRAM CAS writes (`UNC_M_CAS_COUNT.WR`, 64 B
//!   each), else nothing, and Ribbon falls back to its own flushed-bytes
//!   rate. [`choose_bandwidth`] makes the choice and says why, for the
//!   runtime and for `memtamer stat` alike;
//! * **proactive flushing**'s store addresses (thesis §6.3.2 samples stores
//!   with PEBS): [`PebsStores`] drains the PEBS store samplers of every CPU
//!   and keeps this process's data addresses.
//!
//! The arithmetic (which event, how many bytes, which samples) is pure and
//! tested with recorded readings and samples; opening counters is the thin
//! shell around it.

use std::path::Path;

use memtamer_ribbon::bandwidth::{BandwidthSource, FLUSHED_BYTES};
use memtamer_ribbon::proactive::StoreSampler;

use crate::perf::{EventSpec, Record, Sampler, Target};
use crate::uncore::{ImcCounters, ImcEvent, Reading};

/// Signal name: PM write-pending-queue inserts × 64 B.
pub const IMC_PM_WRITES: &str = "imc-pmm-wpq-inserts";
/// Signal name: DRAM CAS writes × 64 B (no PM write counter on this CPU).
pub const IMC_CAS_WRITES: &str = "imc-cas-writes";

/// Bytes one count of either write event stands for.
const BYTES_PER_WRITE: u64 = 64;

/// Index of `e` in `Reading::counts` (`ImcEvent::ALL` order).
fn index(e: ImcEvent) -> usize {
    ImcEvent::ALL.iter().position(|x| *x == e).unwrap_or(0)
}

/// The write event to use, given one set of readings: PM WPQ inserts if
/// any channel counts them, else CAS writes if any channel counts them.
pub fn pick_event(readings: &[Reading]) -> Option<(ImcEvent, &'static str)> {
    let counted = |e: ImcEvent| readings.iter().any(|r| r.counts[index(e)].is_some());
    if counted(ImcEvent::PmmWpqInserts) {
        Some((ImcEvent::PmmWpqInserts, IMC_PM_WRITES))
    } else if counted(ImcEvent::CasWrite) {
        Some((ImcEvent::CasWrite, IMC_CAS_WRITES))
    } else {
        None
    }
}

/// Cumulative bytes written according to `event` over every channel that
/// counts it; None if none does (the sample then falls back).
pub fn written_bytes(readings: &[Reading], event: ImcEvent) -> Option<u64> {
    let i = index(event);
    let mut any = false;
    let mut sum = 0u64;
    for c in readings.iter().filter_map(|r| r.counts[i]) {
        any = true;
        sum = sum.wrapping_add(c.wrapping_mul(BYTES_PER_WRITE));
    }
    any.then_some(sum)
}

/// A [`BandwidthSource`] over iMC readings (live counters, or recorded
/// readings in tests).
pub struct ImcWrites {
    read: Box<dyn FnMut() -> Vec<Reading> + Send>,
    event: ImcEvent,
    name: &'static str,
}

impl ImcWrites {
    /// A source over `read`, using the event [`pick_event`] finds in its
    /// first readings; None if they count no write event.
    pub fn new(mut read: Box<dyn FnMut() -> Vec<Reading> + Send>) -> Option<ImcWrites> {
        let (event, name) = pick_event(&read())?;
        Some(ImcWrites { read, event, name })
    }

    /// The event this source sums.
    pub fn event(&self) -> ImcEvent {
        self.event
    }
}

impl BandwidthSource for ImcWrites {
    fn name(&self) -> &'static str {
        self.name
    }

    fn bytes(&mut self) -> Option<u64> {
        written_bytes(&(self.read)(), self.event)
    }
}

/// Which signal Ribbon's controller uses on this host, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BandwidthChoice {
    /// The signal's name as `Stats::bandwidth_source` shows it.
    pub name: &'static str,
    /// Why this one (for `memtamer stat`).
    pub detail: String,
}

/// Opens the iMC write counters under `pmu_root` (normally
/// `/sys/bus/event_source/devices`) and returns the source to plug into
/// `memtamer_ribbon::Config::bandwidth`, or None with the reason Ribbon
/// uses its own flushed-bytes rate instead.
pub fn choose_bandwidth(pmu_root: &Path) -> (Option<ImcWrites>, BandwidthChoice) {
    let fallback = |why: String| {
        (
            None,
            BandwidthChoice {
                name: FLUSHED_BYTES,
                detail: format!("Ribbon's own flushed-bytes rate: {why}"),
            },
        )
    };
    let pmus = match crate::uncore::discover(pmu_root) {
        Ok(p) if !p.is_empty() => p,
        Ok(_) => {
            return fallback(format!(
                "no uncore_imc_* PMU in {} (VM, other vendor, or old kernel)",
                pmu_root.display()
            ))
        }
        Err(e) => return fallback(e.to_string()),
    };
    let counters = ImcCounters::open(&pmus);
    let first_missing = counters.missing.first().cloned();
    let channels = pmus.len();
    match ImcWrites::new(Box::new(move || counters.read())) {
        Some(src) => {
            let detail = format!(
                "iMC {} over {channels} channel PMU(s) × 64 B",
                match src.event() {
                    ImcEvent::PmmWpqInserts => "PM write-pending-queue inserts",
                    _ => "DRAM CAS writes (this CPU counts no PM writes)",
                }
            );
            let name = src.name;
            (Some(src), BandwidthChoice { name, detail })
        }
        None => fallback(format!(
            "{channels} iMC PMU(s) but no write counter opens ({})",
            first_missing.unwrap_or_else(|| "no reason given".into())
        )),
    }
}

/// One record source: appends the records that arrived since its last call.
pub type RecordDrain = Box<dyn FnMut(&mut Vec<Record>) + Send>;

/// Proactive flushing's [`StoreSampler`]: PEBS store samples (thesis
/// §6.3.2), this process's data addresses only.
pub struct PebsStores {
    drains: Vec<RecordDrain>,
    pid: u32,
    buf: Vec<Record>,
}

/// The data addresses of `pid`'s store samples among `records`.
pub fn store_addresses(records: &[Record], pid: u32, out: &mut Vec<u64>) {
    out.extend(records.iter().filter_map(|r| match r {
        Record::Sample(s) if s.pid == pid && s.addr != 0 => Some(s.addr),
        _ => None,
    }));
}

impl PebsStores {
    /// A sampler over record sources (`drains`, each appending what arrived
    /// since its last call), keeping `pid`'s samples: recorded in tests.
    pub fn from_drains(drains: Vec<RecordDrain>, pid: u32) -> Self {
        PebsStores {
            drains,
            pid,
            buf: Vec::new(),
        }
    }

    /// Opens PEBS store sampling (`EventSpec::pebs_stores(period)`) on every
    /// online CPU for this process. Err names the CPU and the reason (no
    /// PEBS in a VM, perf_event_paranoid, missing CAP_PERFMON).
    pub fn open(period: u64) -> Result<PebsStores, String> {
        let mut drains: Vec<RecordDrain> = Vec::new();
        for cpu in crate::sources::online_cpus() {
            let mut s = Sampler::open(EventSpec::pebs_stores(period), Target::Cpu(cpu), 4)
                .map_err(|e| format!("CPU {cpu}: {e}"))?;
            drains.push(Box::new(move |out: &mut Vec<Record>| {
                s.drain(|r| out.push(*r));
            }));
        }
        Ok(PebsStores::from_drains(drains, std::process::id()))
    }
}

impl StoreSampler for PebsStores {
    fn drain(&mut self, out: &mut Vec<u64>) {
        for d in self.drains.iter_mut() {
            self.buf.clear();
            d(&mut self.buf);
            store_addresses(&self.buf, self.pid, out);
        }
    }
}

#[cfg(test)]
#[path = "ribbon_tests.rs"]
mod tests;

//! `[quartz]`: software latency emulation as Quartz does it (Volos et al.,
//! "Quartz: A Lightweight Performance Emulator for Persistent Memory
//! Software", Middleware'15; code HewlettPackard/quartz). The thesis's
//! Unimem evaluation (seed 002 §3.6) emulates NVM at 4x DRAM's latency with
//! Quartz on a two-socket machine whose remote node plays the NVM.
//!
//! Quartz does not make memory slower. The NVM is ordinary (remote) DRAM,
//! with that DRAM's latency, bandwidth and memory-level parallelism; at the
//! end of each epoch a thread spins for
//! `delay = stalls x (target - hw_remote) / hw_remote`
//! (`src/lib/model_lat.c`, `create_latency_epoch`), where `stalls` are the
//! epoch's cycles stalled on L2 misses (`CYCLE_ACTIVITY:STALLS_L2_PENDING`)
//! weighted by the share of LLC misses and, for a remote NVM node, by the
//! remote loads' share of `loads x latency` (`src/lib/cpu/haswell.h`,
//! `remote_dram`). A streaming thread whose misses overlap compute stalls
//! little and so is delayed little; a thread stalled on every miss is
//! delayed in proportion.

use super::invalid;
use crate::error::SimError;
use serde::{Deserialize, Serialize};

/// Quartz's latency model parameters (its `latency` section and the
/// latencies it measures at start-up, `src/lib/measure_lat.c`).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct QuartzParams {
    /// Latency to emulate for the remote (NVM) node, ns (`latency.read`).
    pub target_ns: f64,
    /// Idle latency of local DRAM that Quartz measured, ns.
    pub hw_local_ns: f64,
    /// Idle latency of the remote node (the emulated NVM) that Quartz
    /// measured, ns; must be below `target_ns` (Quartz refuses otherwise,
    /// `check_target_latency_against_hw_latency`).
    pub hw_remote_ns: f64,
    /// Longest epoch, us (`latency.max_epoch_duration_us`): a thread that
    /// has not ended an epoch for this long ends one at its next operation.
    /// Epochs also end at the program's synchronisation points (Quartz:
    /// lock / unlock; here every [`crate::workload::Op::Drain`], e.g. a
    /// phased rank's MPI call).
    pub max_epoch_us: f64,
}

impl QuartzParams {
    /// Latencies positive and finite, the target above the remote node's
    /// (Quartz's own start-up check), the epoch positive.
    pub(crate) fn validate(&self, file: &str, text: &str) -> Result<(), SimError> {
        for (k, v) in [
            ("quartz.hw_local_ns", self.hw_local_ns),
            ("quartz.hw_remote_ns", self.hw_remote_ns),
            ("quartz.max_epoch_us", self.max_epoch_us),
        ] {
            if !(v.is_finite() && v > 0.0) {
                return Err(invalid(file, text, k, format!("must be > 0, got {v}")));
            }
        }
        if !(self.target_ns.is_finite()
            && self.target_ns > self.hw_remote_ns
            && self.target_ns > self.hw_local_ns)
        {
            return Err(invalid(
                file,
                text,
                "quartz.target_ns",
                format!(
                    "must exceed the hardware latencies ({} / {} ns), got {}",
                    self.hw_local_ns, self.hw_remote_ns, self.target_ns
                ),
            ));
        }
        Ok(())
    }
}

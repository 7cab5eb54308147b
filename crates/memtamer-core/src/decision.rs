//! What a policy asks the actuators to do.

use crate::{CpuSet, JobId, ThreadId};
use serde::{Deserialize, Serialize};

/// The PATS gate's admission limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum GateLimit {
    /// Admit every PM request (the gate is open).
    Unlimited,
    /// Admit at most this many concurrent PM requests (T_S in PATS).
    Limit(u32),
}

/// CPU budget of a job: which CPUs it may use and what fraction of time
/// (Dicio throttles BE jobs by cores and by sub-core duty cycles).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CoreBudget {
    /// CPUs the job's threads may run on.
    pub cpus: CpuSet,
    /// Fraction of time in (0, 1] the job may run; 1 = not duty-cycled.
    pub duty_cycle: f64,
}

/// Move a thread to a CPU now (placement decisions).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Migration {
    /// The thread to move.
    pub tid: ThreadId,
    /// Destination CPU.
    pub to_cpu: u32,
}

/// A policy's output for one window. Empty fields mean "leave as is", so
/// that composed policies each own only their knob.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// New gate limit, or `None` to keep the current one.
    pub gate_limit: Option<GateLimit>,
    /// New per-thread affinities.
    pub thread_cpus: Vec<(ThreadId, CpuSet)>,
    /// New per-job CPU budgets.
    pub job_budgets: Vec<(JobId, CoreBudget)>,
    /// Immediate migrations.
    pub migrations: Vec<Migration>,
    /// Why: one human-readable line per action, shown by `memtamer status`.
    pub reasons: Vec<String>,
}

impl Decision {
    /// Whether the decision changes nothing.
    pub fn is_noop(&self) -> bool {
        self.gate_limit.is_none()
            && self.thread_cpus.is_empty()
            && self.job_budgets.is_empty()
            && self.migrations.is_empty()
    }
}

//! memtamer-core: the pure heart of memtamer.
//!
//! Everything here is free of I/O so that the same policy code runs inside the
//! simulator (`memtamer-sim`) and inside the Linux daemon. Sensors fill an
//! [`Observation`] for one window; a [`Policy`] maps it to a [`Decision`];
//! actuators (simulated or real) apply the decision.

pub mod actuators;
pub mod compose;
pub mod core_spec;
pub mod cpuset;
pub mod decision;
pub mod isolation;
pub mod observation;
pub mod pats;
pub mod pats_adaptive;
pub mod placement;
pub mod pm_load;
pub mod policy;
pub mod registry;
pub mod text;
pub mod topology;
pub mod unimem;

pub use actuators::{Actuators, ApplyReport, Ignored, Knob};
pub use cpuset::CpuSet;
pub use decision::{CoreBudget, Decision, GateLimit, Migration};
pub use observation::{
    AccessStats, ChannelObs, CpuObs, DimmObs, GateObs, JobClass, JobObs, Measured, Observation,
    SizeClass, ThreadObs,
};
pub use policy::{Baseline, FixedGate, Policy};

/// Identifies a thread (a simulated thread id, or a Linux TID).
pub type ThreadId = u32;
/// Identifies a job: a group of threads managed as one (a process, a cgroup, a simulated job).
pub type JobId = u32;

//! memtamer-tahoe: the pure Tahoe core (thesis ch. 4; digest
//! `thesis-unimem-tahoe.md` §3). No OS calls here: the OMPT tool
//! (`crates/memtamer-omp`) feeds it task events and carries out the
//! migration batches it returns through `memtamer-tier`.
//!
//! * [`task`]: task types (code address + dependence sizes) and instances.
//! * [`profile`]: representative profiles, memory groups, re-basing onto
//!   sibling tasks, the profiling database.
//! * [`model`]: the hybrid performance model (Eq. 4.3 linear, the ANN,
//!   a PMU-free linear fallback, and the partial-placement Eq. 4.4).
//! * [`split`]: DRAM split among co-running tasks by dynamic programming
//!   (Eq. 4.1/4.2).
//! * [`residency`]: DRAM residency with the 10-entry FIFO eviction list.
//! * [`plan`]: proactive, batched migration planning over the ready queue.
//! * [`benefit`]: the migration cost-benefit check (saving over reuse vs copy).
//! * [`counters`]: per-task counter deltas to IPC and LLC miss rate, the
//!   counter-model file, fitting Eq. 4.3 and the ANN on recordings.
//! * [`copycost`]: a batch's copy cost, fixed part plus per page, fitted.
//! * [`sched`]: sibling scheduling of the ready queue (§4.3.6).

pub mod benefit;
pub mod copycost;
pub mod counters;
pub mod error;
pub mod extents;
pub mod fasthash;
pub mod learning;
pub mod model;
pub mod plan;
pub mod profile;
pub mod record;
pub mod residency;
pub mod sched;
pub mod split;
pub mod task;

pub use error::TahoeError;

//! memtamer-sense: who touches persistent memory, and how much, on a real
//! Linux host. perf samples (PEBS stores where the CPU has them, software
//! events otherwise) are attributed to processes, threads and PM mappings
//! through `/proc/PID/maps` and the DAX mounts of `/proc/self/mountinfo`.
//!
//! [`sources::Sensors`] combines what the host has into one
//! `memtamer_core::Observation`: the gate library's exact reports, iMC
//! uncore counters (CAS, PM RPQ/WPQ), DIMM media counters (ipmctl), and
//! says which sources are missing and why. Instruction decoding of store
//! sizes and live PEBS attribution in the observation are not built yet
//! (docs/sensing.md).

pub mod attribute;
pub mod bench;
pub mod command;
pub mod decode;
/// `/proc/PID/maps` parsing lives in `memtamer-linux`; re-exported so that
/// `memtamer_sense::maps` keeps naming it.
pub use memtamer_linux::maps;
pub mod media;
pub mod metrics;
pub mod mounts;
/// perf_event sampling lives in `memtamer-linux` (shared with
/// `memtamer-tier`'s PEBS access source); re-exported so that
/// `memtamer_sense::perf` keeps naming it.
pub use memtamer_linux::perf;
pub mod ribbon;
pub mod sources;
/// The sysfs topology reader, moved to `memtamer-linux` (so that
/// `memtamer-ribbon` can pin its flushers without a crate cycle).
pub use memtamer_linux::topology;
pub mod uncore;

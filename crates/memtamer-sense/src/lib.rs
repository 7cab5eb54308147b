//! memtamer-sense: who touches persistent memory, and how much, on a real
//! Linux host. perf samples (PEBS stores where the CPU has them, software
//! events otherwise) are attributed to processes, threads and PM mappings
//! through `/proc/PID/maps` and the DAX mounts of `/proc/self/mountinfo`.
//!
//! This is the first slice of the sensing issue: the ring-buffer reader,
//! the parsers and the attribution pipeline, tested end to end with a
//! software event. Instruction decoding (store sizes), the iMC uncore
//! counters and the DIMM media counters come next (docs/sensing.md).

pub mod attribute;
pub mod bench;
pub mod maps;
pub mod mounts;
pub mod perf;

//! memtamer-sim: a deterministic discrete-event simulator of a DRAM + PM
//! memory system.
//!
//! Contention is never computed from a formula: it emerges from finite
//! structures — per-core fill buffers, a per-socket request table, per-channel
//! read/write pending queues shared by DRAM and PM, the DDR-T write credits,
//! the Optane XPBuffer and the media's service time. See `docs/simulator.md`.

pub mod blame;
pub mod builtins;
pub mod calibrate;
pub mod compare;
pub mod config;
pub mod engine;
pub mod error;
mod event_queue;
pub mod experiment;
pub mod histogram;
pub mod placement_eval;
mod point_check;
pub use engine::pmdimm;
pub mod policies;
pub mod pool;
pub mod probes;
pub mod report;
pub mod ribbon_eval;
pub mod ribbon_seeds;
pub mod rng;
pub mod runner;
pub mod search_trace;
pub mod shape;
pub mod suite;
pub mod tahoe_eval;
pub mod tier_calib;
pub mod tier_eval;
pub mod tier_objects;
pub mod tier_oracle;
pub mod tier_profile;
pub mod tier_run;
pub mod tiering;
pub mod topology;
pub mod validate;
pub mod workload;

pub use config::{Platform, Scenario};
pub use error::SimError;
pub use experiment::{run_scenario, PointResult, RunOptions, ScenarioResult};
pub use topology::platform_cpu_facts;

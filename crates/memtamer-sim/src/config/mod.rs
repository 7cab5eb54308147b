//! Platform and scenario files (TOML), their schema, validation and overrides.
//!
//! A *platform* describes a machine with physical parameters, each with a
//! cited source in its `[sources]` table. A *scenario* names a platform, jobs
//! (workloads, threads, CPUs), a policy, a duration, sweeps, the paper's
//! reference points and pass/fail checks. Both formats are documented in
//! `docs/scenarios.md`.
//!
//! Layout: [`platform`] (the machine), [`scenario`] (jobs, sweeps, checks),
//! [`workload_spec`] (what a job's threads run), [`profiles`] (the SPEC-like
//! CPU profiles a `cpu` workload may name) and [`overrides`] (`--set`). The
//! items are re-exported here, so `crate::config::X` names every one of them.
//! This module imports nothing from the simulator itself (no `workload`, no
//! `engine`): the schema is a leaf the rest of the crate builds on.

pub mod flush_spec;
pub mod overrides;
pub mod phased;
pub mod platform;
pub mod profiles;
pub mod quartz;
pub mod scenario;
pub mod uncore_parts;
pub mod workload_spec;

pub use overrides::{apply_override, parse_value, set_dotted};
pub use platform::{
    BusSchedulerKind, ChannelSpec, CpuParams, DramBankParams, DramParams, Expectation, MemKind,
    MemoryDirectory, MemoryParams, PagePolicy, Platform, PmParams, PmWriteCompletion, RegionSpec,
    RemoteTracker, RemoteTracking, RequestTableScope, RmwRead, UncoreParams, XpBufferPolicy,
    LOCAL_DRAM, LOCAL_DRAM_INDEX,
};
pub use profiles::{cpu_profile, CpuProfile, CPU_PROFILES, PROFILE_CLOCK_GHZ};
pub use scenario::{Check, CheckKind, JobSpec, PaperPoint, PlotSpec, Scenario, SweepSpec};
pub use workload_spec::{
    CpuWork, FlushMode, FlushPattern, KvOp, LineState, MbwMode, Pattern, Rw, StoreKind,
    WorkloadSpec,
};

use crate::error::{line_col, line_of_key, SimError};
use workload_spec::MAX_NS;

pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
) -> Result<T, SimError> {
    toml::from_str::<T>(text).map_err(|e| {
        let (line, column) = e.span().map_or((0, 0), |s| line_col(text, s.start));
        SimError::Parse {
            file: file.to_string(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })
}

pub(crate) fn invalid(file: &str, text: &str, key: &str, message: impl Into<String>) -> SimError {
    SimError::Invalid {
        file: file.to_string(),
        line: line_of_key(text, key),
        key: key.to_string(),
        message: message.into(),
    }
}

/// Lowest bandwidth a platform may give, GB/s: its largest single access
/// (a 1 GiB trace record) must take at most [`MAX_NS`].
pub const MIN_GBPS: f64 = (1u64 << 30) as f64 / MAX_NS;

/// `Err` naming `key` unless `v`, in units of `ns_per_unit` ns, is at most
/// [`MAX_NS`]. The simulated clock counts picoseconds in a `u64`: 1e300 ns
/// of a platform's `cpu.core_to_uncore_ns` wrapped it and made memcpy
/// faster, as a `pm.media_write_gbps` of 1e-300 made PM writes 3x faster
/// (hostile-input sweep, docs/bad-input.md, 2026-11-27).
pub(crate) fn fits_clock(
    file: &str,
    text: &str,
    key: &str,
    v: f64,
    ns_per_unit: f64,
) -> Result<(), SimError> {
    if v * ns_per_unit <= MAX_NS {
        return Ok(());
    }
    let unit = key.rsplit('_').next().unwrap_or("ns");
    let max = match MAX_NS / ns_per_unit {
        m if ns_per_unit == 1.0 => format!("{m:e} ns"),
        m => format!("{m:e} {unit} = {MAX_NS:e} ns"),
    };
    let m = format!(
        "must be at most {max} (the simulated clock counts picoseconds in 64 bits), got {v:e}"
    );
    Err(invalid(file, text, key, m))
}

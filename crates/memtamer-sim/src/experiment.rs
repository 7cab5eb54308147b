//! Running scenarios, with calibration on demand: the public face of
//! [`crate::runner`]. A scenario naming `pats-calibrated` without a model file
//! gets the platform's built-in model, or one measured by [`crate::calibrate`]
//! the first time it is needed. This module is the layer above both the runner
//! and the calibrator (which runs scenarios through the runner), so neither
//! imports the other in a circle.

use crate::calibrate::model_for;
use crate::config::{Platform, Scenario};
use crate::engine::RunResult;
use crate::error::SimError;
use memtamer_core::Policy;

pub use crate::policies::{
    placement_policy, pm_interleave, ModelSource, SIM_PLACEMENT_PERIOD_MS,
    SIM_PLACEMENT_RESIDENCY_MS,
};
pub use crate::runner::{
    finish_scenario, load_platform, load_scenario, metrics, parallel_map, parallel_map_ordered,
    round_sig, Builtin, CheckResult, Comparison, PointResult, PointRun, PreparedScenario,
    RunOptions, ScenarioResult, PLATFORMS, SCENARIOS,
};

/// Runs a scenario (overrides, sweeps in parallel, metrics, comparisons, checks).
pub fn run_scenario(base: &Scenario, opts: &RunOptions) -> Result<ScenarioResult, SimError> {
    crate::runner::run_scenario(base, opts, model_for)
}

/// Runs one point of a scenario (no sweeps); `sampler` enables the simulated
/// PEBS sampler.
pub fn run_point(
    scenario: &Scenario,
    sampler: Option<(u64, u64)>,
) -> Result<(Platform, RunResult), SimError> {
    crate::runner::run_point(scenario, sampler, false, model_for)
}

/// The policy a scenario names, built for `platform` (docs/policy.md "Policy names").
pub fn policy_by_name(name: &str, platform: &Platform) -> Result<Box<dyn Policy>, SimError> {
    crate::policies::policy_by_name(name, platform, model_for)
}

/// Simulated memory requests and wall seconds for one point (speed benchmark).
pub fn speed(scenario: &Scenario) -> Result<(u64, f64), SimError> {
    crate::runner::speed(scenario, model_for)
}

/// Applies a run's overrides and expands its sweeps into checked points
/// (see [`crate::runner::prepare_scenario`]).
pub fn prepare_scenario(base: &Scenario, opts: &RunOptions) -> Result<PreparedScenario, SimError> {
    crate::runner::prepare_scenario(base, opts, model_for)
}

/// Runs one fully specified point and computes its metrics (without its
/// Ribbon searches: [`RunOptions::trace_search`] through [`run_scenario`]).
pub fn run_point_metrics(
    spec: &Scenario,
    sampler: Option<(u64, u64)>,
) -> Result<PointRun, SimError> {
    crate::runner::run_point_metrics(spec, sampler, false, model_for)
}

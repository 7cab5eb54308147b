//! The loop's knobs and its report counters: plain data, in a file of
//! their own so that `driver.rs` keeps to the layout limit.

use crate::budget::DEFAULT_DECISION_SHARE;
use crate::unimem::model::Platform;
use std::time::Duration;

/// Knobs of the loop.
#[derive(Clone, Debug, PartialEq)]
pub struct DriverConfig {
    /// Sampler period; zero: no sampler thread, the caller ticks
    /// ([`Driver::tick`]), which makes a profile reproducible.
    pub tick: Duration,
    /// Pages armed per object per tick.
    pub pages_per_tick: usize,
    /// Machine model for the decisions.
    pub platform: Platform,
    /// Iterations expected after the decision (amortises one-time moves).
    pub iterations: f64,
    /// Relative phase-time change that triggers re-profiling (thesis 10%;
    /// 0 disables), read against the host's noise by
    /// [`crate::drift::DriftMonitor`].
    pub drift: f64,
    /// Re-decide when copies run at under half the modelled bandwidth.
    pub recalibrate: bool,
    /// Share of the expected run (`iterations` x the profiled iteration's
    /// time) one decision's search may take on the application thread
    /// ([`decision_budget_s`]); 0: no bound, the simulator's search.
    pub decision_share: f64,
    /// Decide on a thread of its own ([`crate::decision::Pending`]): the
    /// application keeps its placement meanwhile and the plan is adopted
    /// at the first iteration top after it is ready. False: decide on the
    /// application thread at the profiled iteration's end (the plan is in
    /// force from the next iteration on, whatever the host's speed).
    pub decide_off_thread: bool,
    /// The sampler thread's clock ([`crate::sampling::Pace`]): the
    /// application thread's CPU time (default) or the wall clock.
    pub pace: crate::sampling::Pace,
    /// Whether the copy helper has a CPU of its own on this node, and why
    /// ([`crate::cpus::HelperCpu`]); `platform.copy_overlap` is its answer
    /// (set both with [`DriverConfig::with_helper`]).
    pub helper: crate::cpus::HelperCpu,
    /// Learn each phase's exposure from measured phase times once the
    /// first plan of a profile has been judged, and decide again with it
    /// ([`crate::unimem::exposure`]); off: the thesis's full exposure
    /// (`MEMTAMER_UNIMEM_EXPOSURE=off`, the behaviour before).
    pub measured_exposure: bool,
    /// Time each profile's phases in an iteration of their own after the
    /// profiled one (no sampler, nothing moving) and decide on those times
    /// (`MEMTAMER_TIER_QUIET_TIMES=off`: the profiled iteration's times,
    /// the behaviour before; [`crate::driver::quiet_profile`]).
    pub quiet_times: bool,
}

impl DriverConfig {
    /// This configuration with `helper`, and the platform's
    /// [`crate::unimem::model::CopyOverlap`] (the decisions' input) set
    /// from it.
    pub fn with_helper(mut self, helper: crate::cpus::HelperCpu) -> Self {
        self.platform.copy_overlap = helper.overlap();
        self.helper = helper;
        self
    }
}

impl Default for DriverConfig {
    /// What the C ABI runs with when no variable is set (one place for it
    /// and for `memtamer bench tier`).
    fn default() -> Self {
        DriverConfig {
            tick: Duration::from_millis(1),
            pages_per_tick: 16,
            platform: crate::platform::default_platform(),
            iterations: 100.0,
            drift: 0.1,
            recalibrate: true,
            decision_share: DEFAULT_DECISION_SHARE,
            decide_off_thread: true,
            pace: crate::sampling::Pace::Cpu,
            helper: Default::default(),
            measured_exposure: true,
            quiet_times: true,
        }
    }
}

/// What the loop did, for the report at `MPI_Finalize`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DriverStats {
    /// Iterations seen.
    pub iterations: u64,
    /// Phase boundaries (MPI calls) seen, in every mode.
    pub boundaries: u64,
    /// Phases per iteration in the last profile.
    pub phases: usize,
    /// Decisions made and adopted (1 + re-profilings).
    pub decisions: u64,
    /// Decisions started but never adopted: the run ended, or a
    /// re-profile began, before the decision thread was done.
    pub decisions_dropped: u64,
    /// The last plan's search ("local"/"global") and predicted seconds.
    pub last_plan: Option<(String, f64)>,
    /// Re-profilings triggered by drift, a changed phase count or new
    /// objects.
    pub reprofiles: u64,
    /// Of those, re-profilings triggered by objects the last profile did
    /// not see (issue 20: [`new_objects_reprofile`]).
    pub new_object_reprofiles: u64,
    /// Re-decisions because copies ran slower than the model assumed.
    pub recalibrations: u64,
    /// Moves requested from the helper.
    pub moves_requested: u64,
    /// Seconds spent in profiling, decisions and enforcement calls on the
    /// application thread, not counting waits for copies (runtime overhead).
    pub overhead_s: f64,
    /// Seconds the application thread waited for copies (exposed moves).
    pub wait_s: f64,
    /// Of `overhead_s`: seconds in decisions (profile closed to plan in
    /// force: the search, the schedule, the one-time moves), and in
    /// closing profiled phases (the profiler's take and reset).
    pub decide_s: f64,
    /// See `decide_s`.
    pub profile_s: f64,
    /// CPU seconds the decision thread took (not in `overhead_s`: the
    /// application did not wait for it, but on a host with no idle core
    /// it ran in the application's place).
    pub decide_thread_s: f64,
    /// Wall seconds of the profiled iterations (their sampling faults run
    /// inside the application's own code, so `overhead_s` misses them).
    pub profiled_s: f64,
    /// Of `profiled_s`: seconds inside the MPI calls that began the
    /// profiled phases (a partner rank's wait for a slow one shows here).
    pub profiled_call_s: f64,
    /// Sampler intervals armed and the sampler threads' CPU seconds
    /// ([`crate::sampling::SamplerReport`]); sampling faults and armings.
    pub sample_ticks: u64,
    /// See `sample_ticks`.
    pub sampler_cpu_s: f64,
    /// See `sample_ticks`.
    pub sample_faults: u64,
    /// See `sample_ticks`.
    pub sample_armed: u64,
    /// Decisions started (adopted or dropped) on a timing iteration's phase times
    /// ([`DriverConfig::quiet_times`]).
    pub quiet_decisions: u64,
}

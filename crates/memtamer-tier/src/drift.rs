//! When an enforced iteration's phase times mean the workload changed
//! (thesis §3.4.2 opt. 1: "if there is obvious performance variation
//! (larger than 10%), then the runtime will activate phase profiling
//! again"), on a host whose phase times are noisy by themselves.
//!
//! Pure: the driver ([`crate::driver::Driver`]) feeds each quiet enforced
//! iteration's phase times to a [`DriftMonitor`] and re-profiles when it
//! says so.
//!
//! Why not the plain 10% test ([`crate::unimem::plan::drifted`]) on every
//! phase: MG has 120 phases per iteration, and on a shared 2-CPU host with
//! 2 ranks some phase is off by 10% in nearly every iteration (a rank
//! preempted for one time slice stalls its partner's next MPI call). Three
//! such iterations in a row re-profiled MG 4 times in 30 iterations, each
//! re-profile paying a sampled iteration, a decision and new moves
//! (docs/notebook/unimem.md, "Decisions off the application thread, drift
//! against the host's noise"). "Obvious" variation
//! is read here the way a control chart reads it (Shewhart, *Economic
//! Control of Quality of Manufactured Product*, 1931; Western Electric,
//! *Statistical Quality Control Handbook*, 1956, "tests for unnatural
//! patterns"):
//!
//! * **Limits from an in-control baseline.** The first `baseline` quiet
//!   iterations after a decision give each phase a centre (its median)
//!   and a range. Host noise hits all phases alike, so the noise is
//!   pooled over the phases as the chart pools its subgroups' ranges: a
//!   relative sigma = (typical range / centre) / d2(n) (the range
//!   estimator; d2 from Montgomery, *Introduction to Statistical Quality
//!   Control*, Appendix Table VI). "Typical" is the median over the
//!   phases rather than the chart's mean, so that the few phases a
//!   preempted rank stalled during the baseline do not widen every band;
//!   one phase's own range from 3 samples would be too rough (with 120
//!   phases, some get a range near 0 by chance and then fire on plain
//!   noise). A phase is out only if it is off its centre by more than
//!   both the thesis's 10% and 3 sigma (the chart's control limits).
//! * **A run on one side.** A change of the workload moves the same phase
//!   the same way iteration after iteration; noise does not. Re-profiling
//!   needs one phase out on the same side in `run` quiet iterations in a
//!   row (the Handbook's run rules; `run` = 3, as the driver asked before).
//! * **A bounded count.** After each drift re-profile the quiet iterations
//!   needed before the next one double (binary exponential backoff, as
//!   [`new_objects_reprofile`] does for new objects), so a
//!   run of `N` iterations re-profiles for drift at most about
//!   `log2(N / run + 1)` times whatever the host does.

use crate::unimem::noise;

/// Phases shorter than this (s) in the baseline are all jitter: they never
/// count (the driver's rule before this module).
pub const MIN_PHASE_S: f64 = 1e-3;

/// Default quiet iterations that make the baseline.
pub const DEFAULT_BASELINE: usize = 3;

/// Default length of the one-sided run that re-profiles.
pub const DEFAULT_RUN: u32 = 3;

/// One phase's control limits.
#[derive(Clone, Debug, PartialEq)]
struct Band {
    centre: f64,
    /// Half-width: centre x max(tol, 3 relative sigma).
    half: f64,
}

/// Per-run state of the drift test (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct DriftMonitor {
    tol: f64,
    baseline: usize,
    run: u32,
    samples: Vec<Vec<f64>>,
    bands: Option<Vec<Option<Band>>>,
    /// Per phase: the side of its current run (-1, +1) and its length.
    runs: Vec<(i8, u32)>,
    /// Quiet iterations observed since the baseline closed, and how many
    /// must pass before a re-profile (doubles after each).
    since: u64,
    gap: u64,
    reprofiles: u64,
}

impl DriftMonitor {
    /// A monitor with relative tolerance `tol` (thesis: 0.1; 0 or less
    /// never re-profiles), a baseline of `baseline` quiet iterations
    /// (at least 1) and runs of `run` (at least 1).
    pub fn new(tol: f64, baseline: usize, run: u32) -> Self {
        let run = run.max(1);
        DriftMonitor {
            tol,
            baseline: baseline.max(1),
            run,
            samples: Vec::new(),
            bands: None,
            runs: Vec::new(),
            since: 0,
            gap: u64::from(run),
            reprofiles: 0,
        }
    }

    /// A new decision is in force: its phase times need a new baseline.
    /// The backoff is kept (it bounds the whole run).
    pub fn restart(&mut self) {
        self.samples.clear();
        self.bands = None;
        self.runs.clear();
        self.since = 0;
    }

    /// Drift re-profiles so far.
    pub fn reprofiles(&self) -> u64 {
        self.reprofiles
    }

    /// One quiet enforced iteration's phase times (s). True: the workload
    /// changed, re-profile now (the monitor counts it, doubles its gap and
    /// restarts). A different phase count than the baseline's is a change
    /// at once (the program's phase structure moved; the driver re-profiles
    /// on that anyway).
    pub fn observe(&mut self, times: &[f64]) -> bool {
        if self.tol.is_nan() || self.tol <= 0.0 {
            return false;
        }
        let Some(bands) = &self.bands else {
            if self.samples.first().is_some_and(|s| s.len() != times.len()) {
                self.samples.clear();
            }
            self.samples.push(times.to_vec());
            if self.samples.len() >= self.baseline {
                self.bands = Some(bands_of(&self.samples, self.tol));
                self.runs = vec![(0, 0); times.len()];
                self.samples.clear();
            }
            return false;
        };
        if bands.len() != times.len() {
            return self.fire();
        }
        self.since += 1;
        let mut out = false;
        for ((band, &t), run) in bands.iter().zip(times).zip(self.runs.iter_mut()) {
            let side = band.as_ref().map_or(0, |b| side_of(b, t));
            *run = match side {
                0 => (0, 0),
                s if s == run.0 => (s, run.1 + 1),
                s => (s, 1),
            };
            out |= run.1 >= self.run;
        }
        if out && self.since >= self.gap {
            return self.fire();
        }
        false
    }

    fn fire(&mut self) -> bool {
        self.reprofiles += 1;
        self.gap = self.gap.saturating_mul(2);
        self.restart();
        true
    }
}

/// Which side of its band `t` lies (0: inside).
fn side_of(b: &Band, t: f64) -> i8 {
    if t > b.centre + b.half {
        1
    } else if t < b.centre - b.half {
        -1
    } else {
        0
    }
}

/// Each phase's band from the baseline samples (all the same length);
/// `None` for a phase whose centre is under [`MIN_PHASE_S`]. The noise is
/// the control-chart reading the regression guard uses too
/// ([`crate::unimem::noise`]).
fn bands_of(samples: &[Vec<f64>], tol: f64) -> Vec<Option<Band>> {
    let stats = noise::phase_stats(samples, MIN_PHASE_S);
    let sigma = noise::relative_sigma(&stats, samples.len());
    let half = tol.max(3.0 * sigma);
    stats
        .into_iter()
        .map(|s| {
            s.map(|(centre, _)| Band {
                centre,
                half: centre * half,
            })
        })
        .collect()
}

/// Issue 20: whether `unseen` live objects that the last profile did not
/// see (allocated after profiling began: hpcc's later benchmarks, a solver
/// that allocates lazily) re-profile the iteration that begins now, after
/// `enforced` iterations enforced since profiling last began. The thesis
/// profiles the first iterations and re-profiles on change (§3.3,
/// §3.4.2 opt. 1); a new object is such a change. `gap` bounds the cost:
/// the driver doubles it after each such re-profile (1, 2, 4, ...), so in
/// `N` iterations at most `log2(N + 1)` are re-profiled for new objects,
/// however often the program allocates; an object allocated and freed
/// within one iteration is never seen at an iteration top.
pub fn new_objects_reprofile(unseen: usize, enforced: u64, gap: u64) -> bool {
    unseen > 0 && enforced >= gap
}

#[cfg(test)]
#[path = "drift_tests.rs"]
mod tests;

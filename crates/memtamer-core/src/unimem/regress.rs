//! The measured regression guard (issue 20: "the thesis prototype's gaps
//! are ours to close"): after a plan is adopted, the quiet iterations it
//! runs are compared with the quiet iterations measured under the
//! placement it replaced; a plan slower beyond the host's noise is
//! reverted and remembered, so the planner's model is overruled by what
//! the program measured.
//!
//! Why: Unimem's planner trusts the thesis's Eq. 3.2 (§3.4.1), which
//! prices every slow-tier byte as exposed. Where compute hides the misses
//! it overstates the slow tier's cost 2-8x (docs/notebook/unimem.md, "Why the 0.5x
//! `nek-eddy` plan was accepted"), and a plan that moves data every
//! iteration can then end slower than the placement it started from. The
//! thesis has no check of an adopted plan beyond its 10% drift test
//! (§3.4.2 opt. 1), which only re-profiles, and re-profiling decides with
//! the same model again.
//!
//! The reading (pure, [`RegressionGuard`]):
//! * **What is compared.** The mean iteration time of `judge` quiet
//!   iterations under the new plan against the median of the last `judge`
//!   quiet iterations under the placement before it. Quiet: the caller's
//!   word, iterations whose time is the placement's steady state (no
//!   profiling; the one-time moves of the switch done). The iteration
//!   total decides, not a phase: a plan trades phases against each other
//!   ([`Comparison::slower_phases`] says which phases lost).
//! * **Beyond the noise.** The X-bar chart's upper limit: slower when the
//!   mean of the new plan's `n` quiet iterations exceeds the old median
//!   by more than 3 relative sigma / sqrt(n), sigma
//!   estimated from the ranges of the two groups as the drift monitor
//!   estimates it ([`super::noise`]; pooled over the phases, or from the
//!   iteration totals' own range if that is wider). No fixed percentage:
//!   on a noise-free clock (the simulator) any slowdown is real.
//! * **Worth going back.** Going back costs the copies of a switch. The
//!   switch to the plan was measured (the iterations between the adoption
//!   and its first quiet iteration, over the plan's steady time); the
//!   guard reverts only if the loss per iteration over the iterations
//!   left exceeds that measured cost.
//! * **What is remembered.** A reverted plan (its per-phase DRAM sets) is
//!   tabu: the caller does not adopt it again ([`RegressionGuard::is_rejected`]).

use super::noise::{d2, median, phase_stats, relative_sigma};
use super::ObjId;
use std::collections::BTreeSet;

/// Quiet iterations of a new plan measured before it is judged: the drift
/// monitor's baseline (`memtamer_tier::drift::DEFAULT_BASELINE`), the
/// fewest that give a range.
pub const DEFAULT_JUDGE: usize = 3;

/// An adopted plan measured against the placement it replaced.
#[derive(Clone, Debug, PartialEq)]
pub struct Comparison {
    /// Median iteration time under the placement replaced, s.
    pub before_s: f64,
    /// Mean iteration time under the adopted plan, s (the X-bar chart's
    /// subgroup mean).
    pub after_s: f64,
    /// Relative sigma of an iteration time (the noise); infinite when the
    /// iterations are shorter than the clock's jitter floor.
    pub sigma: f64,
    /// Upper control limit of `after_s`: `before_s` x (1 + 3 sigma /
    /// sqrt(n)) for a mean of `n` quiet iterations (the X-bar chart's
    /// limit, Montgomery §6.2), s.
    pub limit_s: f64,
    /// Phases whose mean rose above their old median by more than the
    /// same relative limit (what lost; the decision is on the total).
    pub slower_phases: Vec<usize>,
    /// Measured cost of the switch to the plan: what the iterations
    /// between its adoption and its first quiet iteration took beyond its
    /// steady iteration time, s.
    pub switch_s: f64,
}

impl Comparison {
    /// Seconds per iteration the plan loses (negative: gains).
    pub fn loss_s(&self) -> f64 {
        self.after_s - self.before_s
    }

    /// Above the control chart's upper limit.
    pub fn slower(&self) -> bool {
        self.after_s > self.limit_s
    }
}

/// What the guard says after a quiet iteration.
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Not judging, or not enough quiet iterations of the plan yet.
    Wait,
    /// The plan is not slower beyond the noise: keep it.
    Keep(Comparison),
    /// Slower beyond the noise, but the iterations left would not pay for
    /// switching back: keep it.
    KeepNoPayback(Comparison),
    /// Slower beyond the noise: go back to the placement it replaced (the
    /// caller reverts and calls [`RegressionGuard::reject`]).
    Revert(Comparison),
}

/// Per-run state of the guard (see the module doc).
#[derive(Clone, Debug, PartialEq)]
pub struct RegressionGuard {
    judge: usize,
    min_s: f64,
    /// The last `judge` quiet iterations under the placement in force
    /// before the plan being judged (per phase times, s).
    before: Vec<Vec<f64>>,
    /// Quiet iterations under the plan being judged.
    after: Vec<Vec<f64>>,
    /// Totals of the iterations between the adoption and the first quiet one.
    switching: Vec<f64>,
    judging: bool,
    tabu: Vec<Vec<BTreeSet<ObjId>>>,
}

impl RegressionGuard {
    /// A guard judging a plan on `judge` quiet iterations (at least 1;
    /// [`DEFAULT_JUDGE`]), on a clock whose times under `min_s` are all
    /// jitter (the runtime: `memtamer_tier::drift::MIN_PHASE_S`; the
    /// simulator's clock has none: 0).
    pub fn new(judge: usize, min_s: f64) -> Self {
        RegressionGuard {
            judge: judge.max(1),
            min_s,
            before: Vec::new(),
            after: Vec::new(),
            switching: Vec::new(),
            judging: false,
            tabu: Vec::new(),
        }
    }

    /// A new plan is in force. It is judged against the quiet iterations
    /// measured so far; with none (nothing measured under the old
    /// placement) it is not judged, and its own quiet iterations become
    /// the reference for the next plan.
    pub fn adopted(&mut self) {
        self.judging = !self.before.is_empty();
        self.after.clear();
        self.switching.clear();
    }

    /// Drops every measurement (a new profile: the program, or what it
    /// allocates, changed), keeping the rejected plans.
    pub fn forget_measurements(&mut self) {
        self.before.clear();
        self.after.clear();
        self.switching.clear();
        self.judging = false;
    }

    /// Whether a plan is being judged.
    pub fn judging(&self) -> bool {
        self.judging
    }

    /// An iteration of the plan being judged that is not quiet (its
    /// one-time moves still running): its total time (s) counts as the
    /// cost of the switch. Ignored when not judging.
    pub fn switching(&mut self, total_s: f64) {
        if self.judging {
            self.switching.push(total_s);
        }
    }

    /// One quiet iteration's phase times (s) under the placement in force;
    /// `remaining`: iterations still to run after this one, if known
    /// (`None`: revert whenever slower).
    pub fn quiet(&mut self, times: &[f64], remaining: Option<f64>) -> Verdict {
        let same_shape = self.before.first().is_none_or(|b| b.len() == times.len());
        if !self.judging || !same_shape {
            // a changed phase structure is not comparable: start over
            if !same_shape {
                self.before.clear();
                self.judging = false;
            }
            self.before.push(times.to_vec());
            if self.before.len() > self.judge {
                self.before.remove(0);
            }
            return Verdict::Wait;
        }
        self.after.push(times.to_vec());
        if self.after.len() < self.judge {
            return Verdict::Wait;
        }
        let c = compare(&self.before, &self.after, &self.switching, self.min_s);
        self.judging = false;
        if !c.slower() {
            // the plan is the reference now
            self.before = std::mem::take(&mut self.after);
            return Verdict::Keep(c);
        }
        if remaining.is_some_and(|r| c.loss_s() * r <= c.switch_s) {
            self.before = std::mem::take(&mut self.after);
            return Verdict::KeepNoPayback(c);
        }
        // the old placement's measurements stay the reference
        self.after.clear();
        Verdict::Revert(c)
    }

    /// Remembers a reverted plan (its per-phase DRAM sets).
    pub fn reject(&mut self, plan: &[BTreeSet<ObjId>]) {
        if !self.is_rejected(plan) {
            self.tabu.push(plan.to_vec());
        }
    }

    /// Whether `plan` was reverted before: the caller does not adopt it again.
    pub fn is_rejected(&self, plan: &[BTreeSet<ObjId>]) -> bool {
        self.tabu.iter().any(|t| t == plan)
    }

    /// Plans reverted so far.
    pub fn rejected(&self) -> usize {
        self.tabu.len()
    }
}

/// `after` against `before` (quiet iterations' phase times, each group
/// non-empty and of one shape), with the switch's iteration totals.
pub fn compare(
    before: &[Vec<f64>],
    after: &[Vec<f64>],
    switching: &[f64],
    min_s: f64,
) -> Comparison {
    let total = |g: &[Vec<f64>]| {
        let mut t: Vec<f64> = g.iter().map(|s| s.iter().sum()).collect();
        t.sort_by(f64::total_cmp);
        t
    };
    let (tb, ta) = (total(before), total(after));
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (before_s, after_s) = (median(&tb), mean(&ta));
    let sigma = if before_s < min_s || !before_s.is_finite() {
        f64::INFINITY
    } else {
        [(before, &tb), (after, &ta)]
            .iter()
            .filter(|(g, _)| g.len() >= 2)
            .map(|&(g, t)| {
                let n = g.len();
                let phases = relative_sigma(&phase_stats(g, min_s), n);
                let range = t.last().copied().unwrap_or(0.0) - t.first().copied().unwrap_or(0.0);
                let centre = median(t);
                let totals = if centre > 0.0 {
                    range / centre / d2(n)
                } else {
                    0.0
                };
                phases.max(totals)
            })
            .fold(0.0, f64::max)
    };
    let rel = 1.0 + 3.0 * sigma / (after.len().max(1) as f64).sqrt();
    let sb = phase_stats(before, min_s);
    let slower_phases = sb
        .iter()
        .enumerate()
        .filter_map(|(k, b)| {
            let ca = mean(
                &after
                    .iter()
                    .map(|s| s.get(k).copied().unwrap_or(0.0))
                    .collect::<Vec<_>>(),
            );
            match b {
                Some((cb, _)) if ca >= min_s && ca > cb * rel => Some(k),
                _ => None,
            }
        })
        .collect();
    let switch_s = switching.iter().map(|t| (t - after_s).max(0.0)).sum();
    Comparison {
        before_s,
        after_s,
        sigma,
        limit_s: before_s * rel,
        slower_phases,
        switch_s,
    }
}

#[cfg(test)]
#[path = "regress_tests.rs"]
mod tests;

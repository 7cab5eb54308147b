//! The driver's side of the measured regression guard
//! ([`crate::unimem::regress`]): what it feeds the pure guard, and the
//! revert. Kept apart from `driver.rs` so the loop there stays short; a
//! child module, so it reaches the driver's fields.
//!
//! * **Reference.** A decision on a fresh profile is judged against the
//!   profiled iteration (the placement it replaces ran it; its sampling
//!   faults make it slower than a quiet iteration, so the guard errs
//!   toward keeping the plan); a re-decision on the same profile (copies
//!   slower than modelled) against the current plan's quiet iterations.
//! * **Quiet.** An enforced iteration that began after every one-time
//!   move of the last switch was issued and waited for: its time is the
//!   plan's steady state, per-iteration copies included (they are the
//!   plan's cost). Earlier ones are the switch's cost.
//! * **Revert.** Back to the plan replaced (on a fresh profile: every
//!   object where the decision found it, no moves), with one-time moves
//!   from where the objects are now; the rejected plan is remembered by
//!   the registry ids of its objects, so a re-profile that finds it again
//!   adopts the placement in force instead.
//! * **Measured exposure** ([`crate::unimem::exposure`], unless
//!   [`super::DriverConfig::measured_exposure`] is off). When the guard has
//!   judged the first plan of a profile, each phase's exposure is learned
//!   from the reference's phase times (the profiled iteration, or the
//!   replaced plan's quiet iterations) against the plan's quiet
//!   iterations, waits for copies taken out, and the driver decides again
//!   on the same profile with the calibrated models (after the revert, if
//!   the guard reverted); that decision is judged like any other.

use super::Driver;
use crate::decision::Decided;
use crate::drift::MIN_PHASE_S;
use crate::unimem::plan::Plan;
use crate::unimem::regress::{RegressionGuard, Verdict, DEFAULT_JUDGE};
use crate::unimem::schedule::Move;
use crate::unimem::transition::transition;
use crate::Tier;
use std::collections::BTreeSet;

/// The guard's state in a [`Driver`].
pub(crate) struct State {
    guard: RegressionGuard,
    /// The placement the last decision started from.
    start: BTreeSet<usize>,
    /// The plan replaced by the one in force and its schedule (the
    /// revert's target).
    prev: Option<(Plan, Vec<Move>)>,
    /// One-time-move steps (phases since the adoption) after which an
    /// iteration is quiet.
    settle: usize,
    /// Plans reverted, and decisions not adopted because they were.
    pub reverts: u64,
    pub refused: u64,
    /// Per-phase exposure learned for the current profile (empty: full,
    /// the thesis's models), whether it was learned yet, the reference's
    /// phase times (waits out) and the judged plan's quiet iterations'.
    pub exposure: Vec<f64>,
    learned: bool,
    ref_times: Vec<f64>,
    quiet: Vec<Vec<f64>>,
    /// Re-decisions made with a learned exposure.
    pub exposure_decisions: u64,
}

impl Default for State {
    fn default() -> Self {
        State {
            guard: RegressionGuard::new(DEFAULT_JUDGE, MIN_PHASE_S),
            start: BTreeSet::new(),
            prev: None,
            settle: 0,
            reverts: 0,
            refused: 0,
            exposure: Vec::new(),
            learned: false,
            ref_times: Vec::new(),
            quiet: Vec::new(),
            exposure_decisions: 0,
        }
    }
}

impl Driver {
    /// Plans reverted by the regression guard, and decisions refused
    /// because the guard had reverted the same plan before.
    pub fn guard_reverts(&self) -> (u64, u64) {
        (self.guarded.reverts, self.guarded.refused)
    }

    /// The per-phase exposure learned for the current profile (empty: the
    /// thesis's full exposure) and the re-decisions made with one.
    pub fn exposure(&self) -> (&[f64], u64) {
        (&self.guarded.exposure, self.guarded.exposure_decisions)
    }

    /// The object ids of `plan`'s DRAM sets (the tabu key: indices change
    /// from one profile to the next, registry ids do not).
    fn plan_key(&self, dram: &[BTreeSet<usize>]) -> Vec<BTreeSet<usize>> {
        dram.iter()
            .map(|s| {
                s.iter()
                    .filter_map(|&o| self.ids.get(o).map(|&id| id as usize))
                    .collect()
            })
            .collect()
    }

    /// A decision starts from `start` (called by `start_decision` before
    /// it clears the plan in force).
    ///
    /// `times`: the decision's phase times ([`Driver::decision_times`]),
    /// the reference when the profile is fresh.
    pub(super) fn guard_decision(&mut self, start: &BTreeSet<usize>, times: Vec<f64>) {
        let n = self.profile.len();
        self.guarded.start = start.clone();
        let in_place = || {
            let dram = vec![start.clone(); n];
            Plan {
                search: crate::unimem::plan::Search::Global,
                dram,
                predicted: 0.0,
            }
        };
        if self.profile_fresh {
            // a new profile: the reference is the decision's phase times,
            // measured with the placement `start` holds (the timing
            // iteration's, or the profiled one's with quiet times off)
            self.guarded.guard.forget_measurements();
            self.guarded.guard.quiet(&times, None);
            self.guarded.prev = Some((in_place(), Vec::new()));
            // exposure is learned anew for each profile
            self.guarded.exposure.clear();
            self.guarded.learned = false;
            self.guarded.ref_times = times;
        } else {
            if !self.guarded.quiet.is_empty() {
                self.guarded.ref_times = mean_times(&self.guarded.quiet);
            }
            let prev = self.plan.clone().unwrap_or_else(in_place);
            self.guarded.prev = Some((prev, self.moves.clone()));
        }
    }

    /// The decision `d` is about to be adopted: a plan reverted before is
    /// swapped for the placement in force (the one it started from), and
    /// the guard starts judging.
    pub(super) fn guard_adopt(&mut self, mut d: Decided) -> Decided {
        let key = self.plan_key(&d.plan.dram);
        if self.guarded.guard.is_rejected(&key) {
            self.guarded.refused += 1;
            let n = d.plan.dram.len();
            d.plan.dram = vec![self.guarded.start.clone(); n];
            d.moves.clear();
            d.once.clear();
        }
        self.guarded.settle = settle_of(&d.once, &d.moves, d.plan.dram.len());
        self.guarded.guard.adopted();
        self.guarded.quiet.clear();
        d
    }

    /// Learns each phase's exposure ([`crate::unimem::exposure::calibrate`])
    /// from the reference's phase times under the replaced plan against
    /// the judged plan's quiet iterations, with the guard's noise `sigma`;
    /// true if something was learned.
    fn learn_exposure(&mut self, sigma: f64) -> bool {
        use crate::unimem::exposure::{calibrate, Measured};
        self.guarded.learned = true;
        let (Some((prev, _)), Some(plan)) = (&self.guarded.prev, &self.plan) else {
            return false;
        };
        if self.guarded.quiet.is_empty() {
            return false;
        }
        let after = mean_times(&self.guarded.quiet);
        let problem = crate::unimem::plan::Problem {
            sizes: vec![0; self.addrs.len()],
            phases: self.decision_phases(),
            platform: self.used.clone(),
            capacity: 0,
            iterations: 0.0,
            exposure: Vec::new(),
        };
        let e = calibrate(
            &problem,
            &Measured {
                dram: &prev.dram,
                times: &self.guarded.ref_times,
            },
            &Measured {
                dram: &plan.dram,
                times: &after,
            },
            sigma,
        );
        match e {
            Some(e) => {
                self.guarded.exposure = e;
                true
            }
            None => false,
        }
    }

    /// An enforced iteration ended with phase times `now`; true if the
    /// guard reverted the plan (the placement changes: the drift baseline
    /// restarts).
    pub(super) fn guard_iteration(&mut self, now: &[f64], waits: &[f64]) -> bool {
        let n = self.times.len();
        // the iteration that ended covered steps once_step - n .. once_step
        if self.once_step < self.guarded.settle + n {
            self.guarded.guard.switching(now.iter().sum());
            return false;
        }
        let left = (self.cfg.iterations - self.enforced as f64).max(0.0);
        let judging = self.guarded.guard.judging();
        let verdict = self.guarded.guard.quiet(now, Some(left));
        if judging {
            let quiet = now
                .iter()
                .enumerate()
                .map(|(i, t)| t - waits.get(i).copied().unwrap_or(0.0))
                .collect();
            self.guarded.quiet.push(quiet);
        }
        let learn = match &verdict {
            Verdict::Keep(c) | Verdict::KeepNoPayback(c) | Verdict::Revert(c) => {
                self.cfg.measured_exposure && !self.guarded.learned && self.learn_exposure(c.sigma)
            }
            Verdict::Wait => false,
        };
        if !matches!(verdict, Verdict::Revert(_)) {
            if learn {
                // the same profile, the calibrated models
                self.guarded.exposure_decisions += 1;
                self.decide_now();
            }
            return learn;
        }
        let Some((plan, moves)) = self.guarded.prev.take() else {
            return false;
        };
        if let Some(p) = &self.plan {
            let key = self.plan_key(&p.dram);
            self.guarded.guard.reject(&key);
        }
        // one-time moves from where the objects are now
        let t0 = std::time::Instant::now();
        self.rt.wait_all();
        self.stats.wait_s += t0.elapsed().as_secs_f64();
        let objs = self.rt.objects();
        let now_set: BTreeSet<usize> = (0..self.addrs.len())
            .filter(|&o| {
                self.live_addr(&objs, o)
                    .and_then(|a| objs.iter().find(|x| x.addr == a))
                    .is_some_and(|x| x.tier == Tier::Dram)
            })
            .collect();
        let uses: Vec<Vec<bool>> = (0..self.addrs.len())
            .map(|o| {
                self.profile
                    .iter()
                    .map(|p| p.objs.contains_key(&o))
                    .collect()
            })
            .collect();
        self.once = transition(&now_set, &plan.dram, &moves, &uses, &uses);
        self.once_step = 0;
        // not judged (the guard is not judging): its quiet iterations
        // become the reference
        self.guarded.settle = settle_of(&self.once, &self.moves, n);
        self.plan = Some(plan);
        self.moves = moves;
        self.guarded.reverts += 1;
        if learn {
            // the placement reverted to stays the reference (the guard
            // kept its measurements): the reverted plan's are dropped
            self.guarded.quiet.clear();
            self.guarded.exposure_decisions += 1;
            self.decide_now();
        }
        true
    }
}

/// Per-phase means of quiet iterations' phase times.
fn mean_times(quiet: &[Vec<f64>]) -> Vec<f64> {
    let n = quiet.iter().map(Vec::len).min().unwrap_or(0);
    let k = quiet.len().max(1) as f64;
    (0..n)
        .map(|i| quiet.iter().map(|t| t[i]).sum::<f64>() / k)
        .collect()
}

/// The first step (phase since the adoption) of the plan's steady state:
/// after every move of `once` was issued and waited for, and, for a
/// schedule with `moves`, after its first cycle of `n` phases (the first
/// iteration has none of the copies the previous one issues for it).
fn settle_of(once: &[crate::unimem::transition::OnceMove], moves: &[Move], n: usize) -> usize {
    let cycle = if moves.is_empty() { 0 } else { n };
    once.iter()
        .map(|m| m.issue.max(m.wait.unwrap_or(0)) + 1)
        .max()
        .unwrap_or(0)
        .max(cycle)
}

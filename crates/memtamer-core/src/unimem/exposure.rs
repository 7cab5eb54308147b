//! Measured exposure: how much of the modelled slow-tier cost each phase
//! really pays, learned from the phase times the runtime measures under
//! two placements (issue 20; docs/notebook/unimem.md section 5, "Measured exposure").
//!
//! Why: the thesis's benefit models (§3.4.1, Eq. 3.2 and the unnumbered
//! latency benefit) price every slow-tier access as exposed. Their constant
//! factors `CF_bw` / `CF_lat` are meant to absorb "the overlap between
//! memory accesses and computation" (digest §2.5), but the thesis fits them
//! once per platform on STREAM and a pointer chaser, programs with no
//! computation to hide a miss behind. In a phase that computes between its
//! misses the slow tier costs far less than Eq. 3.2 says (2-8x less in the
//! simulator's `nek-eddy`: docs/notebook/unimem.md, "Why the 0.5x `nek-eddy` plan
//! was accepted"), so plans that move data every iteration buy less than
//! predicted. Unimem already measures what corrects this: every phase's
//! time under a known placement (the profiled iteration, §3.3 Step 1) and,
//! once a plan is enforced, under the plan's placement (the regression
//! guard's quiet iterations, [`super::regress`]). The change in a phase's
//! time between the two, against the change the model predicts from the
//! objects that changed tier, is the phase's *exposure*: the share of the
//! modelled cost it pays. It is the thesis's constant-factor idea measured
//! on the program, per phase, instead of on STREAM, as Tahoe's refined
//! model (docs/notebook/tahoe.md, "The representative's placement and the
//! instances' times") refines a task's slow-tier time from the instances
//! it ran.
//!
//! The reading ([`calibrate`]):
//! * Per phase `i`: predicted saving `p_i` = the full-exposure benefits
//!   ([`super::plan::Problem::full_bft`]) of the objects the phase uses that
//!   are in DRAM under `b` but not under `a`, minus those in DRAM under `a`
//!   but not under `b`; measured saving `m_i` = time under `a` − time
//!   under `b`, each with the phase's waits for the helper's copies taken
//!   out (those are the copy model's, Eq. 3.3, not the placement's).
//! * A phase is informative when `|p_i|` is beyond the measurement's
//!   noise: 3 relative sigma of the slower of its two times (the control
//!   chart's limit the guard uses; 0 on a noise-free clock).
//! * Exposure of an informative phase: `m_i / p_i`, limited to [0, 1]:
//!   the models price full exposure, computation can only hide part of it
//!   (0: the move bought nothing measurable). Every other phase gets the
//!   pooled estimate, the least-squares slope through the origin of `m` on
//!   `p` over the informative phases, limited the same way.
//! * Nothing informative: no calibration (`None`); the models stay the
//!   thesis's.

use super::plan::Problem;
use super::ObjId;
use std::collections::BTreeSet;

/// Phase times measured under one placement.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured<'a> {
    /// The objects in DRAM during each phase.
    pub dram: &'a [BTreeSet<ObjId>],
    /// Each phase's time, s (a mean over quiet iterations, or the profiled
    /// iteration's), with its waits for copies taken out.
    pub times: &'a [f64],
}

/// One phase's predicted and measured saving of placement `b` over `a`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhaseChange {
    /// Full-exposure benefit gained minus benefit lost, s.
    pub predicted: f64,
    /// Measured time under `a` minus under `b`, s.
    pub measured: f64,
    /// The larger of the two measured phase times, s (the noise's scale).
    pub scale: f64,
}

/// Per phase, what the models predict the change from `a` to `b` saves and
/// what it measured to save (see the module doc). Phases beyond the
/// shortest of the problem's, `a`'s and `b`'s are left out.
pub fn changes(p: &Problem, a: &Measured, b: &Measured) -> Vec<PhaseChange> {
    let n = p
        .phases
        .len()
        .min(a.dram.len())
        .min(b.dram.len())
        .min(a.times.len())
        .min(b.times.len());
    (0..n)
        .map(|i| {
            let predicted: f64 = p.phases[i]
                .objs
                .keys()
                .filter(|&&o| o < p.sizes.len())
                .map(|&o| {
                    let (ina, inb) = (a.dram[i].contains(&o), b.dram[i].contains(&o));
                    match (ina, inb) {
                        (false, true) => p.full_bft(i, o),
                        (true, false) => -p.full_bft(i, o),
                        _ => 0.0,
                    }
                })
                .sum();
            PhaseChange {
                predicted,
                measured: a.times[i] - b.times[i],
                scale: a.times[i].max(b.times[i]),
            }
        })
        .collect()
}

/// Per-phase exposure (each in [0, 1]) learned from the phase times under
/// placements `a` and `b` (see the module doc), with `sigma` the relative
/// noise of a phase time (the regression guard's
/// [`super::regress::Comparison::sigma`]; 0 on a noise-free clock; not
/// finite: nothing is informative). `None` when no phase's predicted
/// change is beyond the noise: nothing was learned.
pub fn calibrate(p: &Problem, a: &Measured, b: &Measured, sigma: f64) -> Option<Vec<f64>> {
    if !sigma.is_finite() {
        return None;
    }
    let ch = changes(p, a, b);
    let informative =
        |c: &PhaseChange| c.predicted != 0.0 && c.predicted.abs() > 3.0 * sigma.max(0.0) * c.scale;
    let (num, den) = ch
        .iter()
        .filter(|c| informative(c))
        .fold((0.0, 0.0), |(n, d), c| {
            (n + c.measured * c.predicted, d + c.predicted * c.predicted)
        });
    if den <= 0.0 {
        return None;
    }
    let pooled = (num / den).clamp(0.0, 1.0);
    let mut out: Vec<f64> = ch
        .iter()
        .map(|c| {
            if informative(c) {
                (c.measured / c.predicted).clamp(0.0, 1.0)
            } else {
                pooled
            }
        })
        .collect();
    // phases the measurements did not cover: the pooled estimate
    out.resize(p.phases.len(), pooled);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unimem::model::Platform;
    use crate::unimem::plan::{decide, per_iteration};
    use crate::unimem::plan_tests_support::phase;

    /// Two phases, each streaming its own 1 MiB object (0 in phase 0, 1 in
    /// phase 1), DRAM for one object.
    fn two() -> Problem {
        Problem {
            sizes: vec![1 << 20, 1 << 20],
            phases: vec![phase(1e-3, &[(0, 16384.0)]), phase(1e-3, &[(1, 16384.0)])],
            platform: Platform::emulated(10e9, 100e-9, 2.0, 4.0).with_copy_bw(1e9),
            capacity: 1 << 20,
            iterations: 10.0,
            exposure: Vec::new(),
        }
    }

    fn sets(v: &[&[ObjId]]) -> Vec<BTreeSet<ObjId>> {
        v.iter().map(|s| s.iter().copied().collect()).collect()
    }

    #[test]
    fn a_phase_pays_the_share_of_the_modelled_saving_it_measured() {
        let p = two();
        let b0 = p.full_bft(0, 0);
        let b1 = p.full_bft(1, 1);
        assert!(b0 > 0.0 && b1 > 0.0);
        // a: nothing in DRAM; b: object 0 in phase 0, object 1 in phase 1
        let a_sets = sets(&[&[], &[]]);
        let b_sets = sets(&[&[0], &[1]]);
        let ta = [1e-3, 1e-3];
        // phase 0 saved a quarter of the model's saving, phase 1 all of it
        let tb = [1e-3 - 0.25 * b0, 1e-3 - b1];
        let a = Measured {
            dram: &a_sets,
            times: &ta,
        };
        let b = Measured {
            dram: &b_sets,
            times: &tb,
        };
        let e = calibrate(&p, &a, &b, 0.0).expect("informative");
        assert!((e[0] - 0.25).abs() < 1e-9, "{e:?}");
        assert!((e[1] - 1.0).abs() < 1e-9, "{e:?}");
        // the same read from b to a (an eviction saves a negative amount)
        let e = calibrate(&p, &b, &a, 0.0).expect("informative");
        assert!((e[0] - 0.25).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn exposure_is_limited_to_what_the_model_prices() {
        let p = two();
        let b0 = p.full_bft(0, 0);
        let (a_sets, b_sets) = (sets(&[&[], &[]]), sets(&[&[0], &[]]));
        let ta = [1e-3, 1e-3];
        let a = Measured {
            dram: &a_sets,
            times: &ta,
        };
        // faster than the model says can be: 1; slower after the move: 0
        for (tb0, want) in [(1e-3 - 3.0 * b0, 1.0), (1e-3 + b0, 0.0)] {
            let tb = [tb0, 1e-3];
            let b = Measured {
                dram: &b_sets,
                times: &tb,
            };
            let e = calibrate(&p, &a, &b, 0.0).expect("informative");
            // phase 1 changed nothing: it takes the pooled estimate
            assert_eq!(e, vec![want, want]);
        }
    }

    #[test]
    fn nothing_beyond_the_noise_teaches_nothing() {
        let p = two();
        let b0 = p.full_bft(0, 0);
        let (a_sets, b_sets) = (sets(&[&[], &[]]), sets(&[&[0], &[]]));
        let ta = [1e-3, 1e-3];
        let tb = [1e-3 - 0.5 * b0, 1e-3];
        let a = Measured {
            dram: &a_sets,
            times: &ta,
        };
        let b = Measured {
            dram: &b_sets,
            times: &tb,
        };
        // the predicted change is b0 / 1 ms of the phase: a noise of half
        // that hides it, a tenth of it does not
        let rel = b0 / 1e-3;
        assert_eq!(calibrate(&p, &a, &b, rel / 2.0), None);
        assert!(calibrate(&p, &a, &b, rel / 10.0).is_some());
        assert_eq!(calibrate(&p, &a, &b, f64::INFINITY), None);
        // the same placement twice: no change predicted, nothing learned
        assert_eq!(calibrate(&p, &a, &a, 0.0), None);
    }

    #[test]
    fn the_calibrated_models_price_the_measured_time() {
        // a problem whose exposure is set prices a phase's slow tier at
        // that share, and an empty exposure is the thesis's full price
        let mut p = two();
        let all_slow = sets(&[&[], &[]]);
        let (full, _) = per_iteration(&p, &all_slow);
        p.exposure = vec![0.5, 0.0];
        let (half, _) = per_iteration(&p, &all_slow);
        assert!((half - 0.5 * p.full_bft(0, 0)).abs() < 1e-12);
        assert!(full > half);
        assert_eq!(p.bft(0, 0), 0.5 * p.full_bft(0, 0));
    }

    #[test]
    fn a_plan_that_moves_every_iteration_is_dropped_once_its_saving_is_measured_small() {
        // With full exposure the per-phase plan (promote each phase's
        // object ahead of it) wins; measured at a tenth of the saving it
        // predicted, the copies outweigh it and the decision keeps one
        // placement for the whole iteration.
        // each phase streams its object 20 times in 2 ms: bandwidth-bound
        // (10 GB/s against the slow tier's 5), 2.1 ms of Eq. 3.2 benefit
        // against a 0.13 ms copy
        let mut p = two();
        p.platform = p.platform.with_copy_bw(8e9);
        p.phases = vec![
            phase(2e-3, &[(0, 20.0 * 16384.0)]),
            phase(2e-3, &[(1, 20.0 * 16384.0)]),
        ];
        let start = BTreeSet::new();
        let full = decide(&p, &start);
        assert_eq!(full.dram, sets(&[&[0], &[1]]), "{full:?}");
        let (b0, b1) = (p.full_bft(0, 0), p.full_bft(1, 1));
        let ta = [1e-3, 1e-3];
        let tb = [1e-3 - 0.1 * b0, 1e-3 - 0.1 * b1];
        let a_sets = sets(&[&[], &[]]);
        let e = calibrate(
            &p,
            &Measured {
                dram: &a_sets,
                times: &ta,
            },
            &Measured {
                dram: &full.dram,
                times: &tb,
            },
            0.0,
        )
        .expect("informative");
        p.exposure = e;
        let cal = decide(&p, &start);
        assert!(
            cal.dram.windows(2).all(|w| w[0] == w[1]),
            "calibrated plan still moves every iteration: {cal:?}"
        );
    }
}

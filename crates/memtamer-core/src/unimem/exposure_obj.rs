//! Per-object measured exposure: which (phase, object) exposures the
//! phase times of the placements a run measured identify, and their
//! least-squares values (issue 20; docs/notebook/unimem.md section 5, "Per-object
//! exposure: what the run's measurements identify").
//!
//! Why: [`super::exposure`] learns one exposure per phase, so it scales
//! every object of a phase alike and cannot tell a random read that pays
//! nearly all of Eq. 3.2's (thesis §3.4.1) price from a stream whose
//! misses the phase's compute hides (`memtamer sim unimem --per-object`:
//! Eq. 3.2 overstates streams 1.3-2x, random reads 1.0-1.3x). Whether an
//! object's own exposure can be learned depends only on which placements
//! the run measured: the profiled iteration (thesis §3.3 Step 1), the
//! enforced plans' quiet iterations (the regression guard's,
//! [`super::regress`]), each with its waits for copies taken out.
//!
//! The reading, per phase `i` (the models of [`super::exposure`], one
//! unknown per object instead of one per phase):
//! * Observation `j` ran with DRAM set `S_j` and measured time `t_j`.
//!   Against the first observation `r`, `t_r - t_j = sum over o in
//!   S_j \ S_r of e_o * F_o - sum over o in S_r \ S_j of e_o * F_o`, with
//!   `F_o` the full-exposure benefit ([`Problem::full_bft`]) and `e_o` the
//!   object's exposure in the phase: one linear equation per further
//!   observation, one unknown per object of the phase that changed tier in
//!   any of them.
//! * An unknown whose `F_o` is within the noise (3 relative sigma of the
//!   phase's slowest measured time, the guard's limit) is not learned: it
//!   is held at the caller's fallback (the per-phase factor) and its share
//!   moved to the measured side.
//! * The rest is least squares; an unknown is *identified* when every
//!   least-squares solution gives it the same value (its unit vector is in
//!   the row space of the equations). Two objects that always changed tier
//!   together are not: only their sum is measured. An identified exposure
//!   is limited to [0, 1] like the per-phase one.
//!
//! No constant is fitted; the only numbers are the guard's 3-sigma limit,
//! the [0, 1] bound and a rank tolerance on equations whose entries are
//! -1, 0 or 1.

use super::exposure::Measured;
use super::plan::Problem;
use super::ObjId;
use std::collections::{BTreeMap, BTreeSet};

/// What the measurements say about one phase's objects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PhaseObjects {
    /// Objects whose exposure the observations identify, with it (in
    /// [0, 1]).
    pub identified: BTreeMap<ObjId, f64>,
    /// Objects that changed tier in some observation, beyond the noise,
    /// whose exposure the observations do not identify (only sums of them
    /// were measured).
    pub unidentified: BTreeSet<ObjId>,
    /// Objects that changed tier but whose modelled benefit is within the
    /// noise: held at the fallback.
    pub within_noise: BTreeSet<ObjId>,
}

/// Rank tolerance of the elimination: the scaled equations' entries are
/// -1, 0 or 1, so their normal equations hold small integers.
const TOL: f64 = 1e-9;

/// Per phase of `p`, the per-object exposures that the observations `obs`
/// (each a placement's DRAM sets and phase times, copy waits removed)
/// identify, with `sigma` the relative noise of a phase time (0 on a
/// noise-free clock; not finite: nothing is learned) and `fallback` the
/// per-phase exposure held for objects within the noise (missing: 1, the
/// thesis's models). Observations whose time for a phase is not finite are
/// left out of that phase; fewer than two usable observations identify
/// nothing. Never panics.
pub fn identify(p: &Problem, obs: &[Measured], sigma: f64, fallback: &[f64]) -> Vec<PhaseObjects> {
    (0..p.phases.len())
        .map(|i| phase_objects(p, i, obs, sigma, fallback.get(i).copied().unwrap_or(1.0)))
        .collect()
}

fn phase_objects(p: &Problem, i: usize, obs: &[Measured], sigma: f64, fb: f64) -> PhaseObjects {
    let mut out = PhaseObjects::default();
    if !sigma.is_finite() {
        return out;
    }
    let usable: Vec<(&BTreeSet<ObjId>, f64)> = obs
        .iter()
        .filter_map(|m| Some((m.dram.get(i)?, *m.times.get(i)?)))
        .filter(|(_, t)| t.is_finite())
        .collect();
    let Some(&(sr, tr)) = usable.first() else {
        return out;
    };
    let scale = usable.iter().map(|(_, t)| t.abs()).fold(0.0, f64::max);
    let limit = 3.0 * sigma.max(0.0) * scale;
    // the phase's objects with a finite, positive modelled benefit
    let full: BTreeMap<ObjId, f64> = p.phases[i]
        .objs
        .keys()
        .map(|&o| (o, p.full_bft(i, o)))
        .filter(|(_, f)| f.is_finite() && *f > 0.0)
        .collect();
    // one equation per further observation: signs per object, measured
    let rows: Vec<(BTreeMap<ObjId, f64>, f64)> = usable[1..]
        .iter()
        .map(|&(s, t)| {
            let signs = full
                .keys()
                .filter_map(|&o| match (sr.contains(&o), s.contains(&o)) {
                    (false, true) => Some((o, 1.0)),
                    (true, false) => Some((o, -1.0)),
                    _ => None,
                })
                .collect();
            (signs, tr - t)
        })
        .collect();
    let changed: BTreeSet<ObjId> = rows.iter().flat_map(|(s, _)| s.keys().copied()).collect();
    let fb = if fb.is_finite() {
        fb.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let mut unknowns = Vec::new();
    for &o in &changed {
        if full[&o] > limit {
            unknowns.push(o);
        } else {
            out.within_noise.insert(o);
        }
    }
    // scaled unknowns y_o = e_o * F_o: entries -1, 0, 1
    let a: Vec<Vec<f64>> = rows
        .iter()
        .map(|(s, _)| {
            unknowns
                .iter()
                .map(|o| s.get(o).copied().unwrap_or(0.0))
                .collect()
        })
        .collect();
    let b: Vec<f64> = rows
        .iter()
        .map(|(s, m)| {
            let held: f64 = out
                .within_noise
                .iter()
                .filter_map(|o| s.get(o).map(|sg| sg * fb * full[o]))
                .sum();
            m - held
        })
        .collect();
    let solved = least_squares(&a, &b);
    for (k, &o) in unknowns.iter().enumerate() {
        match solved.get(k).copied().flatten() {
            Some(y) if (y / full[&o]).is_finite() => {
                out.identified.insert(o, (y / full[&o]).clamp(0.0, 1.0));
            }
            _ => {
                out.unidentified.insert(o);
            }
        }
    }
    out
}

/// Least squares of `a x = b`: per unknown, its value where every
/// least-squares solution agrees on it (identified), `None` otherwise.
/// Rows of the wrong length or with non-finite numbers are left out.
fn least_squares(a: &[Vec<f64>], b: &[f64]) -> Vec<Option<f64>> {
    let n = a.first().map_or(0, Vec::len);
    let rows: Vec<(&Vec<f64>, f64)> = a
        .iter()
        .zip(b)
        .filter(|(r, y)| r.len() == n && y.is_finite() && r.iter().all(|x| x.is_finite()))
        .map(|(r, &y)| (r, y))
        .collect();
    // normal equations [A^T A | A^T b]: same null space as A
    let mut m: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            let mut row: Vec<f64> = (0..n)
                .map(|k| rows.iter().map(|(r, _)| r[j] * r[k]).sum())
                .collect();
            row.push(rows.iter().map(|(r, y)| r[j] * y).sum());
            row
        })
        .collect();
    // reduced row echelon form with partial pivoting
    let mut pivots: Vec<(usize, usize)> = Vec::new(); // (row, column)
    let mut r = 0;
    for c in 0..n {
        let Some(best) = (r..n).max_by(|&x, &y| m[x][c].abs().total_cmp(&m[y][c].abs())) else {
            break;
        };
        if m[best][c].abs() <= TOL {
            continue;
        }
        m.swap(r, best);
        let piv = m[r][c];
        for x in m[r].iter_mut() {
            *x /= piv;
        }
        for q in 0..n {
            if q != r && m[q][c] != 0.0 {
                let f = m[q][c];
                let pivot_row = m[r].clone();
                for (x, pr) in m[q].iter_mut().zip(&pivot_row) {
                    *x -= f * pr;
                }
            }
        }
        pivots.push((r, c));
        r += 1;
    }
    let pivot_cols: BTreeSet<usize> = pivots.iter().map(|&(_, c)| c).collect();
    let free: Vec<usize> = (0..n).filter(|c| !pivot_cols.contains(c)).collect();
    let mut out = vec![None; n];
    for &(row, c) in &pivots {
        // identified: no free unknown enters its pivot row
        if free.iter().all(|&f| m[row][f].abs() <= TOL) {
            out[c] = Some(m[row][n]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unimem::model::Platform;
    use crate::unimem::plan_tests_support::phase;

    /// One phase streaming three 1 MiB objects (0, 1, 2).
    fn three() -> Problem {
        Problem {
            sizes: vec![1 << 20; 3],
            phases: vec![phase(1e-3, &[(0, 16384.0), (1, 16384.0), (2, 16384.0)])],
            platform: Platform::emulated(10e9, 100e-9, 2.0, 4.0).with_copy_bw(1e9),
            capacity: 2 << 20,
            iterations: 10.0,
            exposure: Vec::new(),
        }
    }

    /// One observation: `times` measured with `dram` in DRAM.
    fn measured<'a>(dram: &'a [BTreeSet<ObjId>], times: &'a [f64]) -> Measured<'a> {
        Measured { dram, times }
    }

    fn set(v: &[ObjId]) -> Vec<BTreeSet<ObjId>> {
        vec![v.iter().copied().collect()]
    }

    /// The phase time with `dram` in DRAM when object `o` pays `e[o]` of
    /// its modelled benefit.
    fn time(p: &Problem, dram: &[ObjId], e: &[f64]) -> Vec<f64> {
        vec![2e-3 - dram.iter().map(|&o| e[o] * p.full_bft(0, o)).sum::<f64>()]
    }

    #[test]
    fn three_placements_identify_two_objects_that_moved_together_once() {
        let p = three();
        let e = [0.3, 0.9, 1.0];
        let (s0, s1, s2) = (set(&[]), set(&[0, 1]), set(&[0]));
        let (t0, t1, t2) = (time(&p, &[], &e), time(&p, &[0, 1], &e), time(&p, &[0], &e));
        let obs = [measured(&s0, &t0), measured(&s1, &t1), measured(&s2, &t2)];
        let r = identify(&p, &obs, 0.0, &[0.5]);
        assert_eq!(r.len(), 1);
        assert!((r[0].identified[&0] - 0.3).abs() < 1e-9, "{r:?}");
        assert!((r[0].identified[&1] - 0.9).abs() < 1e-9, "{r:?}");
        assert!(r[0].unidentified.is_empty() && r[0].within_noise.is_empty());
    }

    #[test]
    fn objects_that_always_moved_together_are_not_identified() {
        let p = three();
        let e = [0.3, 0.9, 0.6];
        // 0 and 1 only ever change together; 2 once more on its own
        let (s0, s1, s2) = (set(&[]), set(&[0, 1]), set(&[0, 1, 2]));
        let (t0, t1, t2) = (
            time(&p, &[], &e),
            time(&p, &[0, 1], &e),
            time(&p, &[0, 1, 2], &e),
        );
        let two = [measured(&s0, &t0), measured(&s1, &t1)];
        let r = identify(&p, &two, 0.0, &[0.5]);
        assert!(r[0].identified.is_empty(), "{r:?}");
        assert_eq!(r[0].unidentified, [0, 1].into_iter().collect());
        let obs = [two[0], two[1], measured(&s2, &t2)];
        let r = identify(&p, &obs, 0.0, &[0.5]);
        assert_eq!(r[0].identified.len(), 1, "{r:?}");
        assert!((r[0].identified[&2] - 0.6).abs() < 1e-9, "{r:?}");
        assert_eq!(r[0].unidentified, [0, 1].into_iter().collect());
        // the same placement measured twice adds no equation
        let again = [two[0], two[1], two[1]];
        assert!(identify(&p, &again, 0.0, &[0.5])[0].identified.is_empty());
    }

    #[test]
    fn noise_holds_small_objects_at_the_fallback_and_hides_the_rest() {
        let p = three();
        let f = p.full_bft(0, 0);
        let e = [0.4, 0.8, 1.0];
        let (s0, s1) = (set(&[]), set(&[0]));
        let (t0, t1) = (time(&p, &[], &e), time(&p, &[0], &e));
        let obs = [measured(&s0, &t0), measured(&s1, &t1)];
        let rel = f / 2e-3;
        // beyond a tenth of the noise: identified; within it: held
        assert!((identify(&p, &obs, rel / 10.0, &[])[0].identified[&0] - 0.4).abs() < 1e-9);
        let r = identify(&p, &obs, rel / 2.0, &[0.5]);
        assert!(r[0].identified.is_empty());
        assert_eq!(r[0].within_noise, [0].into_iter().collect());
        assert_eq!(
            identify(&p, &obs, f64::INFINITY, &[]),
            vec![PhaseObjects::default()]
        );
        assert_eq!(
            identify(&p, &obs, f64::NAN, &[]),
            vec![PhaseObjects::default()]
        );
    }

    #[test]
    fn a_held_object_is_charged_at_the_fallback() {
        // object 0 within the noise moves with object 1: 1's exposure is
        // what is left once 0 is charged at the per-phase factor
        let mut p = three();
        p.phases[0] = phase(1e-3, &[(0, 16.0), (1, 16384.0)]);
        let (f0, f1) = (p.full_bft(0, 0), p.full_bft(0, 1));
        assert!(f0 > 0.0 && f1 > 100.0 * f0);
        let (s0, s1) = (set(&[]), set(&[0, 1]));
        let t0 = vec![2e-3];
        let t1 = vec![2e-3 - 0.5 * f0 - 0.7 * f1];
        let obs = [measured(&s0, &t0), measured(&s1, &t1)];
        let sigma = 2.0 * f0 / (3.0 * 2e-3);
        let r = identify(&p, &obs, sigma, &[0.5]);
        assert!((r[0].identified[&1] - 0.7).abs() < 1e-9, "{r:?}");
        assert_eq!(r[0].within_noise, [0].into_iter().collect());
    }

    #[test]
    fn bad_input_teaches_nothing_and_does_not_panic() {
        let p = three();
        assert_eq!(identify(&p, &[], 0.0, &[]), vec![PhaseObjects::default()]);
        let (s0, s1) = (set(&[]), set(&[0]));
        let t0 = vec![f64::NAN];
        let t1 = vec![1e-3];
        let obs = [measured(&s0, &t0), measured(&s1, &t1)];
        // the NaN observation is left out: one usable, nothing learned
        assert_eq!(identify(&p, &obs, 0.0, &[]), vec![PhaseObjects::default()]);
        // sets or times shorter than the problem's phases
        let empty: Vec<BTreeSet<ObjId>> = Vec::new();
        let short = [measured(&empty, &[]), measured(&s1, &t1)];
        assert_eq!(
            identify(&p, &short, 0.0, &[]),
            vec![PhaseObjects::default()]
        );
        // an exposure outside [0, 1] is limited; a NaN fallback reads as 1
        let (ta, tb) = (vec![1e-3], vec![1e-3 - 5.0 * p.full_bft(0, 0)]);
        let obs = [measured(&s0, &ta), measured(&s1, &tb)];
        assert_eq!(identify(&p, &obs, 0.0, &[f64::NAN])[0].identified[&0], 1.0);
        assert_eq!(least_squares(&[], &[]), Vec::<Option<f64>>::new());
        assert_eq!(least_squares(&[vec![f64::NAN]], &[1.0]), vec![None]);
    }
}

//! Probing inside [P2, P3] after the four-point table answered an end
//! (this project's addition, beyond the thesis's §6.3.1; pure).
//!
//! The thesis's search measures only P1, P2 = P1 + 1, P3 = cores − 1 and
//! P4 = cores. When the table answers P1 or P4 because the pairs tie or
//! dip ([`Case::TieComparedEnds`], [`Case::DipThenRise`]), nothing between
//! P2 and P3 was measured or modelled, and a curve with a hump there (the
//! simulator's streamcluster at 24 threads: +4-9% at M = 7-16 over ends
//! within 3% of each other, docs/notebook/ribbon.md "Why streamcluster
//! N = 24 misses") cannot be seen. The controller then probes up to
//! `ControlConfig::interior_probes` counts inside (P2, P3), placed by
//! golden-section search (Kiefer 1953: each new point splits the larger
//! segment next to the best point so far at 0.382 of its length), each
//! for one probe window like the four points, and keeps the best only if
//! it beats the best of P1..P4 by more than the search's own noise band
//! ([`crate::probe::compare`]: `noise_z` standard errors of the
//! difference, or `tolerance`). Otherwise the table's answer stands.
//!
//! The rows that already answer from what they measured keep the thesis's
//! answer and add no probe: [`Case::NoContention`] (rising at both pairs:
//! P4), [`Case::ContentionPastP1`] (falling at both: P1) and
//! [`Case::PeakBetween`] (the thesis's intersection, already inside).

use crate::probe::{compare, Estimate, Verdict};
use crate::search_record::Case;

/// Interior probes of the default search (at most this many extra probe
/// windows per search, only after a [`refines`] row). Three golden-section
/// points narrow [P2, P3] to about a quarter of its width (0.618³ = 0.24).
pub const DEFAULT_INTERIOR_PROBES: u32 = 3;

/// The most interior probes a configuration may ask for: the refinement is
/// meant to stay a small, bounded addition to the four-point search.
pub const MAX_INTERIOR_PROBES: u32 = 8;

/// The golden section's smaller share, 1 − 1/φ = (3 − √5) / 2.
const GOLDEN: f64 = 0.381_966_011_250_105_1;

/// Whether the table's row leaves the interior of [P2, P3] unexplored, so
/// that interior probes may follow: the rows that answer an end from
/// ties or a dip (the lead's and the digest's rows, not the thesis's).
pub fn refines(case: Case) -> bool {
    matches!(case, Case::TieComparedEnds | Case::DipThenRise)
}

/// The next interior count to probe in the open interval (`lo`, `hi`)
/// (`lo` = P2, `hi` = P3), given the interior counts probed so far with
/// their bandwidths; None when no new integer count is left to try.
///
/// Golden-section search on integers: the first point lies at 0.382 of
/// (lo, hi); each later one at 0.382 of the larger segment between the
/// best point so far and its nearest probed (or bounding) neighbours, on
/// that segment's side away from the best. On (5, 47): 21, then 31, then
/// 15 if 21 measured at least as high as 31, else 37.
pub fn next_point(lo: usize, hi: usize, probed: &[(usize, f64)]) -> Option<usize> {
    if hi <= lo + 1 {
        return None;
    }
    let best = probed
        .iter()
        .copied()
        .reduce(|a, b| if b.1 > a.1 { b } else { a })
        .map(|(m, _)| m);
    let (x, left, right) = match best {
        None => (lo, lo, hi),
        Some(x) => {
            let left = probed
                .iter()
                .map(|p| p.0)
                .filter(|&m| m < x)
                .max()
                .unwrap_or(lo);
            let right = probed
                .iter()
                .map(|p| p.0)
                .filter(|&m| m > x)
                .min()
                .unwrap_or(hi);
            (x, left, right)
        }
    };
    let fresh = |m: usize| m > lo && m < hi && probed.iter().all(|p| p.0 != m);
    let step = |len: usize| (GOLDEN * len as f64).round().max(1.0) as usize;
    let right_first = right - x >= x - left;
    let on_right = (right - x >= 2).then(|| x + step(right - x));
    let on_left = (x - left >= 2).then(|| x - step(x - left));
    let order = if right_first {
        [on_right, on_left]
    } else {
        [on_left, on_right]
    };
    order.into_iter().flatten().find(|&m| fresh(m))
}

/// The refinement's answer: the interior count with the highest measured
/// bandwidth if it is higher than the best of the four points by more than
/// the noise band (`tol` of the larger, or `z` standard errors of the
/// difference), else None (the table's answer stands).
pub fn accept(
    four: &[Estimate; 4],
    interior: &[(usize, Estimate)],
    tol: f64,
    z: f64,
) -> Option<usize> {
    let best_four = four
        .iter()
        .reduce(|a, b| if b.mean() > a.mean() { b } else { a })?;
    let (m, est) = interior
        .iter()
        .reduce(|a, b| if b.1.mean() > a.1.mean() { b } else { a })?;
    (compare(est, best_four, tol, z) == Verdict::Higher).then_some(*m)
}

#[cfg(test)]
#[path = "interior_tests.rs"]
mod tests;

//! Filling the DRAM a plan of whole units leaves free with the leading
//! part of one more unit (thesis §3.4.2 "Handling large data objects").
//!
//! The searches' 0/1 knapsack (§3.4 Step 3) places units whole, so when
//! the chosen units do not fill the DRAM and the next-best unit does not
//! fit, the rest of the DRAM stays empty: on the simulator's `nek` at 4x
//! latency Unimem's `{vx, pr}` holds 1 MiB of a rank's 1.25 MiB in every
//! phase, while the attainable static placement also uses the last
//! 256 KiB with part of an object (docs/notebook/unimem.md, "What is
//! attainable: hindsight placements", "Partial units").
//!
//! The thesis partitions a data object into chunks "smaller than the DRAM
//! size", profiles each chunk and moves it on its own, and only for
//! "one-dimensional arrays with regular memory references". A partial
//! placement of such an array is that partition with one cut: the leading
//! `prefix` bytes (whole granules of the placement, e.g. pages) and the
//! rest. [`split`] makes the cut in a [`Problem`]: the prefix keeps the
//! unit's index, the rest is a new unit at the end, and the unit's profile
//! is divided by bytes, because a regular 1-D array's references spread
//! evenly over its bytes (the same assumption the initial placement's
//! reference counts make of its chunks). Eq. 3.1's demand of either part is
//! the unit's (accesses and samples scale alike), so each part keeps the
//! unit's class and its Eq. 3.2 or latency benefit scales with its bytes.
//!
//! [`fill_remainder`] picks, among the divisible units the plan has in
//! DRAM in no phase, the one whose leading part in the room left in every
//! phase the models predict saves the most ([`predict`]: benefit over the
//! remaining iterations, the one-time copy, the copies the schedule can no
//! longer run ahead), and returns the plan with it if that prediction is
//! lower than the plan's.

use super::plan::{predict, Problem};
use super::ObjId;
use std::collections::BTreeSet;

/// A fill of the DRAM a plan left free.
#[derive(Clone, Debug, PartialEq)]
pub struct Fill {
    /// The unit whose leading part (or all of it) fills the room; its index
    /// keeps the leading part.
    pub unit: ObjId,
    /// Bytes of `unit` placed (whole granules).
    pub prefix: u64,
    /// The index of the rest of the unit in [`Fill::problem`] (the new last
    /// unit), or `None` when the whole unit fit and nothing was cut.
    pub rest: Option<ObjId>,
    /// The problem over the units after the cut.
    pub problem: Problem,
    /// The plan with `unit` in DRAM in every phase.
    pub dram: Vec<BTreeSet<ObjId>>,
    /// The units in DRAM at the decision, over the units after the cut (the
    /// rest is where the whole unit was).
    pub start: BTreeSet<ObjId>,
    /// Predicted seconds of the plan without and with the fill.
    pub before: f64,
    /// See [`Fill::before`].
    pub after: f64,
}

/// `p` with unit `unit` cut after its leading `prefix` bytes: the prefix
/// keeps index `unit`, the rest becomes unit `p.sizes.len()`, and every
/// phase's profile of the unit is divided between them by bytes (a regular
/// 1-D array's references spread evenly over it). `p` itself if `prefix`
/// is 0 or not below the unit's size, or `unit` is not a unit of `p`.
pub fn split(p: &Problem, unit: ObjId, prefix: u64) -> Problem {
    let mut q = p.clone();
    let Some(&size) = p.sizes.get(unit) else {
        return q;
    };
    if prefix == 0 || prefix >= size {
        return q;
    }
    let rest = p.sizes.len();
    let f = prefix as f64 / size as f64;
    q.sizes[unit] = prefix;
    q.sizes.push(size - prefix);
    for ph in &mut q.phases {
        if let Some(o) = ph.objs.get(&unit).cloned() {
            let part = |share: f64| super::model::ObjPhase {
                accesses: o.accesses * share,
                samples: o.samples * share,
            };
            ph.objs.insert(unit, part(f));
            ph.objs.insert(rest, part(1.0 - f));
        }
    }
    q
}

/// The fill of the DRAM that the plan `dram` of `p` leaves free in every
/// phase (started from the units in `start`), in whole `granule`s: among
/// the units with `divisible[u]` that `dram` has in DRAM in no phase, the
/// one whose leading part (as many granules as the room holds, at most the
/// unit) in DRAM in every phase [`predict`]s the lowest time, if that is
/// lower than the plan's own prediction (ties: the lower index). `None`
/// when the room is under one granule, no unit qualifies, or no fill is
/// predicted faster.
pub fn fill_remainder(
    p: &Problem,
    dram: &[BTreeSet<ObjId>],
    start: &BTreeSet<ObjId>,
    divisible: &[bool],
    granule: u64,
) -> Option<Fill> {
    let g = granule.max(1);
    let used = dram
        .iter()
        .map(|s| s.iter().filter_map(|&o| p.sizes.get(o)).sum::<u64>())
        .max()?;
    let room = p.capacity.saturating_sub(used) / g * g;
    if room == 0 {
        return None;
    }
    let mut best: Option<Fill> = None;
    for (u, &size) in p.sizes.iter().enumerate() {
        if !divisible.get(u).copied().unwrap_or(false)
            || size == 0
            || dram.iter().any(|s| s.contains(&u))
        {
            continue;
        }
        let prefix = room.min(size);
        let problem = split(p, u, prefix);
        let rest = (problem.sizes.len() > p.sizes.len()).then_some(p.sizes.len());
        let mut st = start.clone();
        if let Some(r) = rest.filter(|_| start.contains(&u)) {
            st.insert(r);
        }
        let before = predict(&problem, dram, &st);
        let with: Vec<BTreeSet<ObjId>> = dram
            .iter()
            .map(|s| {
                let mut s = s.clone();
                s.insert(u);
                s
            })
            .collect();
        let after = predict(&problem, &with, &st);
        let gain = before - after;
        if gain <= 1e-12 * before.abs().max(1e-12) {
            continue;
        }
        if best.as_ref().is_some_and(|b| b.before - b.after >= gain) {
            continue;
        }
        best = Some(Fill {
            unit: u,
            prefix,
            rest,
            problem,
            dram: with,
            start: st,
            before,
            after,
        });
    }
    best
}

#[cfg(test)]
#[path = "fill_tests.rs"]
mod tests;

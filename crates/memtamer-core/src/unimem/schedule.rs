//! The proactive migration schedule (thesis §3.4 "Enforcement" and §3.5:
//! at the start of each phase the main thread asks the helper to perform
//! moves for *upcoming* phases). Each move is issued as early as possible:
//! a move into DRAM for phase `i` right after the object's last use before
//! `i` (Fig. 3.5), but not before the evictions that make room for it can
//! start (right after each victim's last use). The helper's FIFO then
//! finishes evictions before the copy that needs their space.

use super::ObjId;
use super::Tier;
use std::collections::BTreeSet;

/// One scheduled move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Move {
    /// Phase at whose start it is enqueued.
    pub issue: usize,
    /// Destination tier.
    pub to: Tier,
    /// The object.
    pub obj: ObjId,
    /// Phase at whose start it must be done.
    pub needed_by: usize,
}

/// Phases immediately before `i` (cyclically) that do not use the object.
fn free_before(uses: &[bool], i: usize) -> usize {
    super::model::free_phases_before(uses, i)
}

/// Moves that turn the cyclic placement `dram` (one set per phase) into
/// reality, each issued as early as its object's and victims' uses allow.
/// `uses[o][i]`: phase `i` references object `o`.
pub fn schedule(dram: &[BTreeSet<ObjId>], uses: &[Vec<bool>]) -> Vec<Move> {
    schedule_with(dram, uses, true)
}

/// [`schedule`], checked by [`replay`] against `capacity`; if issuing early
/// could ever overfill DRAM or miss a phase, every move is issued at the
/// start of the phase that needs it instead (always feasible: evictions
/// run first, and each phase's set fits). The flag says which was kept.
///
/// Either way each promotion is then [`hoist`]ed further ahead into free
/// DRAM where the replay allows it (before, the at-need fallback was not
/// hoisted, and a plan predicted with its copies hidden in a roomy phase
/// ran them all exposed).
pub fn schedule_checked(
    dram: &[BTreeSet<ObjId>],
    uses: &[Vec<bool>],
    sizes: &[u64],
    capacity: u64,
) -> (Vec<Move>, bool) {
    let early = schedule_with(dram, uses, true);
    let (hoisted, kept) = match replay(dram, uses, &early, sizes, 3) {
        Ok(peak) if peak <= capacity => (hoist(dram, uses, sizes, capacity, early), true),
        // at need is feasible; hoisting keeps it so (replay-checked) and
        // gives the copies the lead the room allows, as the plan's
        // prediction assumes (`Problem::exposed_promotions`)
        _ => (
            hoist(
                dram,
                uses,
                sizes,
                capacity,
                schedule_with(dram, uses, false),
            ),
            false,
        ),
    };
    let order = need_order(dram, sizes, capacity, &hoisted);
    (
        order.into_iter().map(|k| hoisted[k].clone()).collect(),
        kept,
    )
}

/// The pairs of `moves` (eviction, promotion) that cancel out: an
/// eviction of an object and a promotion of the same object requested at
/// the same phase. Within a phase's requests an object's eviction always
/// goes before its own promotion ([`need_order`]; [`replay`] applies
/// evictions first), so the pair copies the object out and straight back
/// and it ends where it started, in DRAM. Such a pair arises when
/// [`hoist`] moves a promotion to the start of its Fig. 3.5 window, the
/// phase after the object's last use before its need, where [`schedule`]
/// issues its eviction: an object left out of the sets of phases that do
/// not use it, with nothing else needing its room (`nek` at 4x latency,
/// docs/notebook/unimem.md: 2 wasted copies per iteration).
pub fn round_trip_pairs(moves: &[Move]) -> Vec<(usize, usize)> {
    let mut taken = vec![false; moves.len()];
    let mut out = Vec::new();
    for e in 0..moves.len() {
        if moves[e].to != Tier::Slow || taken[e] {
            continue;
        }
        if let Some(p) = (0..moves.len()).find(|&p| {
            !taken[p]
                && moves[p].to == Tier::Dram
                && moves[p].obj == moves[e].obj
                && moves[p].issue == moves[e].issue
        }) {
            taken[e] = true;
            taken[p] = true;
            out.push((e, p));
        }
    }
    out
}

/// [`round_trip_pairs`] as a flag per move (`true`: cancelled).
pub fn round_trips(moves: &[Move]) -> Vec<bool> {
    let mut out = vec![false; moves.len()];
    for (e, p) in round_trip_pairs(moves) {
        out[e] = true;
        out[p] = true;
    }
    out
}

/// Cancels the [`round_trip_pairs`] of `moves` (the schedule of the sets
/// `dram`) in the sets: the object stays, so it joins the sets of the
/// phases from the eviction's transition up to the promotion's need
/// (phases that do not use it: the promotion was hoisted across them),
/// where each of those sets still fits `capacity` with it. Returns whether
/// a set changed.
pub fn keep_round_trips(
    dram: &mut [BTreeSet<ObjId>],
    moves: &[Move],
    sizes: &[u64],
    capacity: u64,
) -> bool {
    let n = dram.len();
    let size = |o: &ObjId| sizes.get(*o).copied().unwrap_or(0);
    let mut changed = false;
    for (e, p) in round_trip_pairs(moves) {
        let (from, to, obj) = (moves[e].needed_by, moves[p].needed_by, moves[e].obj);
        let span: Vec<usize> = (0..(to + n - from) % n).map(|k| (from + k) % n).collect();
        let fits = span.iter().all(|&k| {
            dram[k].contains(&obj) || dram[k].iter().map(size).sum::<u64>() + size(&obj) <= capacity
        });
        if fits {
            for k in span {
                changed |= dram[k].insert(obj);
            }
        }
    }
    changed
}

/// The per-phase sets `dram` with the [`round_trip_pairs`] of their
/// checked schedule cancelled ([`keep_round_trips`]): the schedule of the
/// result makes neither copy, and the sets say where the objects are, as
/// [`replay`] and the one-time moves (`transition`) read them. Repeated
/// until no pair is cancelled, and a step is kept only while the schedule
/// stays issued early if it was.
pub fn stay_put(
    dram: &[BTreeSet<ObjId>],
    uses: &[Vec<bool>],
    sizes: &[u64],
    capacity: u64,
) -> Vec<BTreeSet<ObjId>> {
    let n = dram.len();
    let mut cur = dram.to_vec();
    let (mut moves, mut early) = schedule_checked(&cur, uses, sizes, capacity);
    for _ in 0..sizes.len().max(1) * n {
        let mut next = cur.clone();
        if !keep_round_trips(&mut next, &moves, sizes, capacity) {
            break;
        }
        let (m, e) = schedule_checked(&next, uses, sizes, capacity);
        if early && !e {
            break;
        }
        (cur, moves, early) = (next, m, e);
    }
    cur
}

/// Phases from the request at phase `issue` to the start of phase `need`,
/// cyclically (0: the phase of the request waits for it).
fn need_distance(issue: usize, need: usize, n: usize) -> usize {
    (need % n + n - issue % n) % n
}

/// The order in which to request `moves` (indices into it): by issue
/// phase, and within one phase by how soon each copy is needed. The
/// helper copies one object at a time in request order (thesis §3.5), so
/// a copy for a later phase requested ahead of one the next phase waits
/// for delays that phase by its whole copy time; ordering by the phase's
/// index instead (as [`schedule`] sorts) put a promotion hoisted for the
/// next iteration's phase 0 ahead of one the current phase needs.
///
/// Within an issue phase, promotions go by cyclic distance to their need
/// (ties by object); an eviction goes just before the first promotion
/// that does not fit in `capacity` without it (the room made for that
/// promotion's own transition first, then the soonest needed), and before
/// a promotion of its own object; evictions no promotion there waits for
/// go last, by need. The resident set at each issue phase does not depend
/// on the order within the phases, so it is replayed (as [`replay`]
/// does, steady state) with evictions first; the order then never
/// overfills DRAM where that evictions-first order does not.
pub fn need_order(
    dram: &[BTreeSet<ObjId>],
    sizes: &[u64],
    capacity: u64,
    moves: &[Move],
) -> Vec<usize> {
    let n = dram.len();
    if n == 0 {
        return (0..moves.len()).collect();
    }
    let size = |o: &ObjId| sizes.get(*o).copied().unwrap_or(0);
    let held = |r: &BTreeSet<ObjId>| r.iter().map(size).sum::<u64>();
    let at = by_issue(n, moves);
    // resident set at the start of each issue phase, second cycle
    let mut resident = dram.last().cloned().unwrap_or_default();
    let mut before = vec![BTreeSet::new(); n];
    for cycle in 0..2 {
        for (k, b) in before.iter_mut().enumerate() {
            if cycle == 1 {
                *b = resident.clone();
            }
            for m in at[k]
                .iter()
                .map(|&j| &moves[j])
                .filter(|m| m.to == Tier::Slow)
            {
                resident.remove(&m.obj);
            }
            for m in at[k]
                .iter()
                .map(|&j| &moves[j])
                .filter(|m| m.to == Tier::Dram)
            {
                resident.insert(m.obj);
            }
        }
    }
    let mut out = Vec::with_capacity(moves.len());
    for (k, mut resident) in before.into_iter().enumerate() {
        let by_need = |to: Tier| {
            let mut v: Vec<usize> = at[k]
                .iter()
                .copied()
                .filter(|&j| moves[j].to == to)
                .collect();
            v.sort_by_key(|&j| (need_distance(k, moves[j].needed_by, n), moves[j].obj));
            v
        };
        let mut evictions = by_need(Tier::Slow);
        for p in by_need(Tier::Dram) {
            let (obj, need) = (moves[p].obj, moves[p].needed_by);
            loop {
                let own = evictions.iter().position(|&e| moves[e].obj == obj);
                let grown = held(&resident)
                    + if resident.contains(&obj) {
                        0
                    } else {
                        size(&obj)
                    };
                let pick = own.or_else(|| {
                    (grown > capacity && !evictions.is_empty()).then(|| {
                        evictions
                            .iter()
                            .position(|&e| moves[e].needed_by == need)
                            .unwrap_or(0)
                    })
                });
                let Some(i) = pick else { break };
                let e = evictions.remove(i);
                resident.remove(&moves[e].obj);
                out.push(e);
            }
            resident.insert(obj);
            out.push(p);
        }
        out.extend(evictions);
    }
    // none from `schedule`; kept rather than dropped
    out.extend((0..moves.len()).filter(|&j| moves[j].issue >= n));
    out
}

/// Issues promotions earlier where DRAM has room for them: [`schedule`]
/// starts a promotion no earlier than the evictions of its transition,
/// which is needless when the DRAM left free by the current phase already
/// holds the newcomer. Then the copy for phase `i + 1` runs during phase
/// `i`, hidden behind its computation (thesis §3.4 "Enforcement": the
/// helper moves data for upcoming phases; Fig. 3.5's window). In rounds,
/// each promotion in schedule order is issued one phase earlier if that
/// stays inside its Fig. 3.5 window (the phases before its need that do
/// not use it) and [`replay`] still finds every phase's set resident and
/// DRAM within `capacity`; rounds repeat until nothing moves, so every
/// promotion gets one phase of lead before any gets two. `moves` must pass
/// that check already; the result does too.
pub fn hoist(
    dram: &[BTreeSet<ObjId>],
    uses: &[Vec<bool>],
    sizes: &[u64],
    capacity: u64,
    mut moves: Vec<Move>,
) -> Vec<Move> {
    let n = dram.len();
    if n < 2 {
        return moves;
    }
    let fits = |m: &[Move]| matches!(replay(dram, uses, m, sizes, 3), Ok(p) if p <= capacity);
    // (object, need): one promotion per object and transition
    let promotions: Vec<(ObjId, usize)> = moves
        .iter()
        .filter(|m| m.to == Tier::Dram)
        .map(|m| (m.obj, m.needed_by))
        .collect();
    let mut changed = true;
    while changed {
        changed = false;
        for &(obj, need) in &promotions {
            let Some(k) = moves
                .iter()
                .position(|m| m.to == Tier::Dram && m.obj == obj && m.needed_by == need)
            else {
                continue;
            };
            let window = uses.get(obj).map_or(0, |u| free_before(u, need)).min(n - 1);
            // phases of lead the move has now
            let lead = (need + n - moves[k].issue) % n;
            if lead >= window {
                continue;
            }
            let mut trial = moves.clone();
            trial[k].issue = (need + n - lead - 1) % n;
            sort_moves(&mut trial);
            if fits(&trial) {
                moves = trial;
                changed = true;
            }
        }
    }
    moves
}

/// The indices of `moves` issued at each of the `n` phases, in the order
/// of `moves` (a move issued at `n` or later is in none): [`replay`] and
/// [`need_order`] walk each phase's moves, and filtering every move per
/// phase made them quadratic in the moves, which the planner's searches
/// pay once per candidate plan (docs/notebook/unimem.md, "A decision's
/// CPU").
fn by_issue(n: usize, moves: &[Move]) -> Vec<Vec<usize>> {
    let mut at = vec![Vec::new(); n];
    for (j, m) in moves.iter().enumerate() {
        if let Some(v) = at.get_mut(m.issue) {
            v.push(j);
        }
    }
    at
}

/// Each set of `dram` as a bit mask (bit `o` for object `o`), when every
/// object id is below 64: the planner takes the difference of consecutive
/// phases' sets once per phase per candidate plan, and a B-tree
/// difference of two small sets was a fifth of a decision's CPU on MG
/// (docs/notebook/unimem.md, "A decision's CPU").
pub(crate) fn set_masks(dram: &[BTreeSet<ObjId>]) -> Option<Vec<u64>> {
    dram.iter()
        .map(|s| {
            s.iter()
                .try_fold(0u64, |m, &o| (o < 64).then(|| m | (1u64 << o)))
        })
        .collect()
}

/// `dram[a] \ dram[b]` in ascending order (the order of
/// `BTreeSet::difference`), from `masks` ([`set_masks`]) when given.
pub(crate) fn difference(
    dram: &[BTreeSet<ObjId>],
    masks: Option<&[u64]>,
    a: usize,
    b: usize,
) -> Vec<ObjId> {
    match masks {
        Some(m) => {
            let mut bits = m[a] & !m[b];
            let mut out = Vec::with_capacity(bits.count_ones() as usize);
            while bits != 0 {
                out.push(bits.trailing_zeros() as ObjId);
                bits &= bits - 1;
            }
            out
        }
        None => dram[a].difference(&dram[b]).copied().collect(),
    }
}

/// Issue order; evictions before promotions of the same phase.
fn sort_moves(m: &mut [Move]) {
    m.sort_by_key(|m| (m.issue, m.to == Tier::Dram, m.needed_by, m.obj));
}

fn schedule_with(dram: &[BTreeSet<ObjId>], uses: &[Vec<bool>], early: bool) -> Vec<Move> {
    let n = dram.len();
    let mut out = Vec::new();
    let none = vec![false; n];
    let unused = |o: ObjId| uses.get(o).map_or(&none[..], |u| &u[..]);
    let masks = set_masks(dram);
    for i in 0..n {
        let p = (i + n - 1) % n;
        let outs = difference(dram, masks.as_deref(), p, i);
        let ins = difference(dram, masks.as_deref(), i, p);
        // An eviction can start right after the victim's last use; a
        // promotion no earlier than every eviction of its transition.
        let mut earliest_room = n - 1;
        for &o in &outs {
            let d = if early { free_before(unused(o), i) } else { 0 };
            earliest_room = earliest_room.min(d);
            out.push(Move {
                issue: (i + n - d) % n,
                to: Tier::Slow,
                obj: o,
                needed_by: i,
            });
        }
        for &o in &ins {
            let mut d = if early { free_before(unused(o), i) } else { 0 };
            if !outs.is_empty() {
                d = d.min(earliest_room);
            }
            out.push(Move {
                issue: (i + n - d) % n,
                to: Tier::Dram,
                obj: o,
                needed_by: i,
            });
        }
    }
    sort_moves(&mut out);
    out
}

/// Replays a schedule over `cycles` iterations from the placement left by
/// the last phase, applying each phase's moves at its start (evictions
/// first) as if copies were instant, and returns the highest DRAM use seen
/// from the second cycle on, or the first phase whose objects were not all
/// in DRAM when it started. `moves` must be in [`schedule`]'s order.
///
/// Only the objects a phase uses (`uses[o][i]`) must be resident in it: a
/// plan's set may also hold objects the phase does not touch (the local
/// search keeps them where they are), and [`schedule`] evicts those right
/// after their last use, before the set that lists them ends. Checking
/// them too failed every such schedule and sent all its moves to the
/// phase that needs them, with nothing left to overlap.
pub fn replay(
    dram: &[BTreeSet<ObjId>],
    uses: &[Vec<bool>],
    moves: &[Move],
    sizes: &[u64],
    cycles: usize,
) -> Result<u64, (usize, usize)> {
    let used = |o: &ObjId, i: usize| {
        uses.get(*o)
            .is_none_or(|u| u.get(i).copied().unwrap_or(true))
    };
    let n = dram.len();
    let at = by_issue(n, moves);
    let size = |o: ObjId| sizes.get(o).copied().unwrap_or(0);
    let mut resident = dram.last().cloned().unwrap_or_default();
    // the resident bytes, kept as the set changes (summing the set after
    // every move was most of a replay's time)
    let mut held: u64 = resident.iter().map(|&o| size(o)).sum();
    let mut peak = 0;
    for c in 0..cycles {
        for (i, want) in dram.iter().enumerate() {
            for m in at[i].iter().map(|&j| &moves[j]) {
                match m.to {
                    Tier::Slow => {
                        if resident.remove(&m.obj) {
                            held -= size(m.obj);
                        }
                    }
                    Tier::Dram => {
                        if resident.insert(m.obj) {
                            held += size(m.obj);
                        }
                    }
                };
                if c > 0 {
                    peak = peak.max(held);
                }
            }
            if c > 0 && want.iter().any(|o| used(o, i) && !resident.contains(o)) {
                return Err((c, i));
            }
        }
    }
    let _ = n;
    Ok(peak)
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;

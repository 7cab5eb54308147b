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
/// docs/unimem.md: 2 wasted copies per iteration).
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
/// pay once per candidate plan (docs/unimem.md section 4, "A decision's
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

/// Issue order; evictions before promotions of the same phase.
fn sort_moves(m: &mut [Move]) {
    m.sort_by_key(|m| (m.issue, m.to == Tier::Dram, m.needed_by, m.obj));
}

fn schedule_with(dram: &[BTreeSet<ObjId>], uses: &[Vec<bool>], early: bool) -> Vec<Move> {
    let n = dram.len();
    let mut out = Vec::new();
    let none = vec![false; n];
    let unused = |o: ObjId| uses.get(o).map_or(&none[..], |u| &u[..]);
    for i in 0..n {
        let prev = &dram[(i + n - 1) % n];
        let outs: Vec<ObjId> = prev.difference(&dram[i]).copied().collect();
        let ins: Vec<ObjId> = dram[i].difference(prev).copied().collect();
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
mod tests {
    use super::*;

    fn set(v: &[ObjId]) -> BTreeSet<ObjId> {
        v.iter().copied().collect()
    }

    #[test]
    fn promotion_issued_after_last_use() {
        // Object 1 used only in phase 3 of 4; object 0 everywhere but 3.
        let uses = vec![
            vec![true, true, true, false],
            vec![false, false, false, true],
        ];
        let dram = vec![set(&[0]), set(&[0]), set(&[0]), set(&[1])];
        let m = schedule(&dram, &uses);
        // 1 in for phase 3: room only after 0's last use (phase 2) -> issue 3.
        assert!(m.contains(&Move {
            issue: 3,
            to: Tier::Dram,
            obj: 1,
            needed_by: 3
        }));
        assert!(m.contains(&Move {
            issue: 3,
            to: Tier::Slow,
            obj: 0,
            needed_by: 3
        }));
        // 0 back for phase 0: 1 unused in 0..=2, so its eviction can start at
        // phase 0 only after phase 3 used it: issue 0.
        assert!(m.contains(&Move {
            issue: 0,
            to: Tier::Dram,
            obj: 0,
            needed_by: 0
        }));
        assert_eq!(replay(&dram, &uses, &m, &[10, 10], 3), Ok(10));
    }

    #[test]
    fn early_issue_when_room_is_free() {
        // Capacity holds both; object 1 used only in phase 2 and evicted
        // after it: its promotion starts right after phase 2 (issue 0).
        let uses = vec![vec![true, true, true], vec![false, false, true]];
        let dram = vec![set(&[0]), set(&[0]), set(&[0, 1])];
        let m = schedule(&dram, &uses);
        assert!(m.contains(&Move {
            issue: 0,
            to: Tier::Dram,
            obj: 1,
            needed_by: 2
        }));
        assert!(m.contains(&Move {
            issue: 0,
            to: Tier::Slow,
            obj: 1,
            needed_by: 0
        }));
    }

    /// Plans from random problems: the checked schedule never overfills
    /// DRAM and every phase finds its objects resident.
    #[test]
    fn random_plans_schedule_feasibly() {
        use crate::unimem::plan::{decide, Problem};
        use crate::unimem::plan_tests_support::{phase, platform};
        let mut x = 0x5eedu64;
        let mut r = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        let mut early = 0;
        for _ in 0..500 {
            let n_obj = 1 + r(6) as usize;
            let n_ph = 1 + r(6) as usize;
            let sizes: Vec<u64> = (0..n_obj).map(|_| 1 + r(100)).collect();
            let mut phases = Vec::new();
            for _ in 0..n_ph {
                let mut objs = Vec::new();
                for o in 0..n_obj {
                    if r(2) == 0 {
                        objs.push((o, 1e3 * (1 + r(1000)) as f64));
                    }
                }
                phases.push(phase(0.001 * (1 + r(100)) as f64, &objs));
            }
            let p = Problem {
                sizes,
                phases,
                platform: platform(1e6 * (1 + r(1000)) as f64),
                capacity: r(300),
                iterations: 50.0,
                exposure: Vec::new(),
            };
            let plan = decide(&p, &BTreeSet::new());
            let uses: Vec<Vec<bool>> = (0..n_obj).map(|o| p.uses(o)).collect();
            let (m, was_early) = schedule_checked(&plan.dram, &uses, &p.sizes, p.capacity);
            early += was_early as usize;
            let peak = replay(&plan.dram, &uses, &m, &p.sizes, 3).unwrap();
            assert!(
                peak <= p.capacity,
                "peak {peak} > {} for {plan:?}",
                p.capacity
            );
            for mv in &m {
                assert!(plan.dram[mv.needed_by].contains(&mv.obj) == (mv.to == Tier::Dram));
            }
            // by issue phase, and promotions by how soon they are needed
            let n = plan.dram.len();
            for w in m.windows(2) {
                assert!(w[0].issue <= w[1].issue, "{m:?}");
            }
            let promos: Vec<&Move> = m.iter().filter(|m| m.to == Tier::Dram).collect();
            for w in promos.windows(2).filter(|w| w[0].issue == w[1].issue) {
                let d = |m: &Move| need_distance(m.issue, m.needed_by, n);
                assert!(d(w[0]) <= d(w[1]), "{m:?}");
            }
        }
        assert!(early > 400, "early issue kept in only {early} of 500");
    }

    #[test]
    fn promotions_hoisted_into_free_dram() {
        // 4 phases, each with its own 2 objects (size 10); DRAM holds 40:
        // the current phase's set plus the next one's.
        let uses: Vec<Vec<bool>> = (0..8)
            .map(|o| (0..4).map(|i| o / 2 == i).collect())
            .collect();
        let dram: Vec<BTreeSet<ObjId>> = (0..4).map(|i| set(&[2 * i, 2 * i + 1])).collect();
        let sizes = vec![10; 8];
        let plain = schedule(&dram, &uses);
        // without hoisting every promotion waits for its transition's evictions
        assert!(plain
            .iter()
            .filter(|m| m.to == Tier::Dram)
            .all(|m| m.issue == m.needed_by));
        let (m, early) = schedule_checked(&dram, &uses, &sizes, 40);
        assert!(early);
        // each phase's objects are brought in during the phase before
        for mv in m.iter().filter(|m| m.to == Tier::Dram) {
            assert_eq!(mv.issue, (mv.needed_by + 3) % 4, "{mv:?}");
        }
        assert_eq!(replay(&dram, &uses, &m, &sizes, 3), Ok(40));
        // with room for one phase's set only, nothing moves earlier
        // (the same moves; requested each eviction just before its
        // promotion, [`need_order`])
        let (mut m, _) = schedule_checked(&dram, &uses, &sizes, 20);
        sort_moves(&mut m);
        assert_eq!(m, plain);
        // room for one extra object: one promotion per phase goes early
        let (m, _) = schedule_checked(&dram, &uses, &sizes, 30);
        assert_eq!(
            m.iter()
                .filter(|m| m.to == Tier::Dram && m.issue != m.needed_by)
                .count(),
            4
        );
        assert!(replay(&dram, &uses, &m, &sizes, 3).unwrap() <= 30);
    }

    #[test]
    fn unused_resident_objects_do_not_force_issue_at_need() {
        // The local search's shape on nek-eddy: objects 4, 5 stay in the
        // set of phase 3, which does not use them, and are evicted for
        // phase 0 right after their last use (phase 2).
        let uses: Vec<Vec<bool>> = (0..8)
            .map(|o| (0..4).map(|i| o / 2 == i).collect())
            .collect();
        let dram = vec![
            set(&[0, 1, 6, 7]),
            set(&[2, 3, 6, 7]),
            set(&[4, 5, 6, 7]),
            set(&[4, 5, 6, 7]),
        ];
        let (m, early) = schedule_checked(&dram, &uses, &[10; 8], 40);
        assert!(early);
        // phase 0's objects come in during phase 3, where 4, 5 go out
        for o in [0, 1] {
            assert!(
                m.contains(&Move {
                    issue: 3,
                    to: Tier::Dram,
                    obj: o,
                    needed_by: 0
                }),
                "{m:?}"
            );
        }
    }

    /// The local plan nek-eddy got at 1x (DRAM for 4 of 8 objects): the
    /// early schedule evicts 4, 5 at phase 3 for phase 0 and promotes them
    /// there for phase 2, so its replay fails and every move is issued at
    /// need; phase 1 holds only 6, 7, so the promotions of 4, 5 still go
    /// one phase early.
    #[test]
    fn at_need_fallback_is_hoisted_into_room() {
        let uses: Vec<Vec<bool>> = (0..8)
            .map(|o| (0..4).map(|i| o / 2 == i).collect())
            .collect();
        let dram = vec![
            set(&[0, 1, 6, 7]),
            set(&[6, 7]),
            set(&[4, 5, 6, 7]),
            set(&[4, 5, 6, 7]),
        ];
        let sizes = [10; 8];
        let (m, early) = schedule_checked(&dram, &uses, &sizes, 40);
        assert!(!early);
        for o in [4, 5] {
            assert!(
                m.contains(&Move {
                    issue: 1,
                    to: Tier::Dram,
                    obj: o,
                    needed_by: 2
                }),
                "{m:?}"
            );
        }
        assert!(replay(&dram, &uses, &m, &sizes, 3).unwrap() <= 40);
    }

    /// Issue 20's note (branch `unimemevict`): at phase 2's start the
    /// schedule requests the promotion of 1 hoisted for the next
    /// iteration's phase 0 and the promotion of 0 phase 2 itself waits for
    /// (0 is used in phase 1 from the slow tier, so it has no lead). Sorted
    /// by the needing phase's index, 1 went first and phase 2 waited for
    /// both copies; by how soon it is needed, 0 goes first, right after
    /// the eviction of 2 that makes its room.
    #[test]
    fn the_copy_the_next_phase_waits_for_goes_first() {
        let uses = vec![
            vec![false, true, true, false],
            vec![true, false, false, false],
            vec![false, true, false, false],
        ];
        let dram = vec![set(&[1]), set(&[2]), set(&[0]), set(&[])];
        let sizes = [10, 10, 20];
        let (m, _) = schedule_checked(&dram, &uses, &sizes, 20);
        let at2: Vec<(Tier, ObjId, usize)> = m
            .iter()
            .filter(|m| m.issue == 2)
            .map(|m| (m.to, m.obj, m.needed_by))
            .collect();
        assert_eq!(
            at2,
            vec![(Tier::Slow, 2, 2), (Tier::Dram, 0, 2), (Tier::Dram, 1, 0)],
            "{m:?}"
        );
        assert!(replay(&dram, &uses, &m, &sizes, 3).unwrap() <= 20);
    }

    fn mv(issue: usize, to: Tier, obj: ObjId, needed_by: usize) -> Move {
        Move {
            issue,
            to,
            obj,
            needed_by,
        }
    }

    #[test]
    fn promotions_by_cyclic_distance_to_their_need() {
        // 4 phases, all requested at phase 2 with room for all: phase 3's
        // (1 away) before the next iteration's 0 (2) and 1 (3)
        let dram = vec![set(&[0, 1, 2]), set(&[0, 1, 2]), set(&[]), set(&[0])];
        let moves = vec![
            mv(2, Tier::Dram, 0, 3),
            mv(2, Tier::Dram, 1, 0),
            mv(2, Tier::Dram, 2, 1),
            mv(0, Tier::Slow, 1, 2),
            mv(0, Tier::Slow, 2, 2),
            mv(1, Tier::Slow, 0, 2),
        ];
        let order: Vec<ObjId> = need_order(&dram, &[10; 3], 30, &moves)
            .into_iter()
            .filter(|&k| moves[k].issue == 2)
            .map(|k| moves[k].obj)
            .collect();
        assert_eq!(order, vec![0, 1, 2]);
        // requested at phase 3 instead: 0 wraps to 1 away, 1 is 2 away
        let moves = vec![mv(3, Tier::Dram, 2, 1), mv(3, Tier::Dram, 1, 0)];
        let order: Vec<usize> = need_order(&dram, &[10; 3], 30, &moves);
        assert_eq!(order, vec![1, 0]);
    }

    #[test]
    fn an_eviction_goes_just_before_the_promotion_that_needs_its_room() {
        // 2 phases, DRAM for 3 objects; at phase 0, {0, 1} resident: 2 (for
        // phase 0) fits beside them, 3 (for phase 1) needs 0 out first
        let dram = vec![set(&[0, 1, 2]), set(&[1, 3])];
        let moves = vec![
            mv(0, Tier::Slow, 0, 1),
            mv(0, Tier::Dram, 2, 0),
            mv(0, Tier::Dram, 3, 1),
            mv(1, Tier::Slow, 2, 0),
            mv(1, Tier::Slow, 3, 0),
            mv(1, Tier::Dram, 0, 0),
        ];
        // 0 and 3 stay listed in sets whose phases do not use them
        let uses = vec![
            vec![false, false],
            vec![true, true],
            vec![true, false],
            vec![false, false],
        ];
        let sizes = [10; 4];
        let order = need_order(&dram, &sizes, 30, &moves);
        // phase 0: 2, then 0 out, then 3; phase 1: 2 out (phase 0's room),
        // 0 in, then 3 out, which nothing waits behind
        assert_eq!(order, vec![1, 0, 2, 3, 5, 4]);
        let ordered: Vec<Move> = order.iter().map(|&k| moves[k].clone()).collect();
        assert_eq!(replay(&dram, &uses, &ordered, &sizes, 3), Ok(30));
        // an object evicted and promoted at one phase: out before in
        let moves = vec![mv(0, Tier::Dram, 0, 0), mv(0, Tier::Slow, 0, 1)];
        assert_eq!(need_order(&dram, &sizes, 100, &moves), vec![1, 0]);
    }

    /// `nek` at 4x latency (issue 20): an object used in phase 1 only,
    /// in DRAM for phase 1 and out of the other phases' sets, with room
    /// to spare. Its eviction goes right after phase 1 (at phase 2's
    /// start), and `hoist` moves its promotion for the next phase 1 to the
    /// start of its window, phase 2 too: the helper copied it out and
    /// straight back every iteration. `stay_put` keeps it in DRAM: no
    /// moves, and every phase finds its objects.
    #[test]
    fn an_object_evicted_and_promoted_at_one_phase_stays() {
        let uses = vec![vec![false, true, false], vec![true, false, true]];
        let dram = vec![set(&[1]), set(&[0, 1]), set(&[1])];
        let sizes = [10, 10];
        let (m, early) = schedule_checked(&dram, &uses, &sizes, 30);
        assert!(early);
        assert_eq!(round_trip_pairs(&m).len(), 1, "{m:?}");
        let kept = stay_put(&dram, &uses, &sizes, 30);
        assert_eq!(kept, vec![set(&[0, 1]); 3]);
        let (m, early) = schedule_checked(&kept, &uses, &sizes, 30);
        assert!(early);
        assert!(m.is_empty(), "{m:?}");
        assert!(replay(&kept, &uses, &m, &sizes, 3).is_ok());
        // no room to keep it in phase 2: the pair stays
        let tight = stay_put(&dram, &uses, &[10, 25], 30);
        assert_eq!(tight, dram);
        // only a pair at one phase cancels; a lone eviction or an
        // eviction and promotion at different phases stay
        let pair = [mv(2, Tier::Slow, 0, 2), mv(2, Tier::Dram, 0, 1)];
        assert_eq!(round_trips(&pair), vec![true, true]);
        let apart = [mv(2, Tier::Slow, 0, 2), mv(0, Tier::Dram, 0, 1)];
        assert_eq!(round_trips(&apart), vec![false, false]);
        let other = [mv(2, Tier::Slow, 0, 2), mv(2, Tier::Dram, 1, 1)];
        assert_eq!(round_trips(&other), vec![false, false]);
        // two evictions, one promotion of the object: one pair
        let three = [
            mv(1, Tier::Slow, 0, 2),
            mv(1, Tier::Slow, 0, 2),
            mv(1, Tier::Dram, 0, 1),
        ];
        assert_eq!(round_trips(&three), vec![true, false, true]);
    }

    #[test]
    fn static_placement_needs_no_moves() {
        let dram = vec![set(&[0, 2]); 4];
        assert!(schedule(&dram, &[vec![true; 4], vec![true; 4], vec![false; 4]]).is_empty());
    }
}

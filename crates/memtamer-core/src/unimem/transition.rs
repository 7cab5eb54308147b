//! The one-time moves from where the objects are at a decision to the
//! cyclic plan's placement, timed like the proactive schedule (thesis §3.4
//! "Enforcement", §3.5: the helper moves data *ahead of* the phase that
//! needs it, and a phase waits only for the moves made for it).
//!
//! The decision is made at the end of the profiled iteration, i.e. at the
//! start of phase 0 of the first enforced iteration `E`. Before this
//! module every one-time promotion was waited for at the phase of `E` that
//! first needs it; one needed in phase 0 (or early, behind a copy longer
//! than the phases before its need) was exposed whole, since no phase after
//! the decision precedes it. Here `E` is the iteration *before* the first
//! placed one: the helper makes the one-time moves during `E`, whose phases
//! run with each object where it is until its copy lands (readers use the
//! old copy), and each promotion is waited for at its first use in `E + 1`.
//! A copy is not started in a phase that writes the object where a later
//! phase before its need does not (a writer blocks on an object being
//! copied: `memtamer-tier`'s write-protect protocol). When the schedule
//! evicts an object needed in phase 0 before its next use in `E`, its copy
//! would be undone unused, so it is not made: the schedule's own promotion
//! brings the object in ahead of phase 0 of `E + 1`.

use super::schedule::Move;
use super::{ObjId, Tier};
use std::collections::BTreeSet;

/// One move of the transition to the plan's placement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnceMove {
    /// Phase of the first enforced iteration at whose start it is queued.
    pub issue: usize,
    /// Destination tier.
    pub to: Tier,
    /// The object.
    pub obj: ObjId,
    /// Phase that waits for it, counted from phase 0 of the first enforced
    /// iteration `E` (`n + i`: phase `i` of `E + 1`, the first placed
    /// iteration); `None` for evictions, and for promotions no phase uses
    /// while the plan has them in DRAM.
    pub wait: Option<usize>,
}

/// Objects in DRAM during phase 0 of an iteration under the cyclic
/// schedule `moves` for the per-phase sets `dram`, the moves issued at
/// phase 0 done: replayed for two cycles from the last phase's set (as
/// `schedule::replay`) and then phase 0's moves, so moves issued early
/// for later phases count.
pub fn resident_in_phase0(dram: &[BTreeSet<ObjId>], moves: &[Move]) -> BTreeSet<ObjId> {
    let mut resident = dram.last().cloned().unwrap_or_default();
    let n = dram.len();
    for step in 0..2 * n + 1 {
        for m in moves.iter().filter(|m| m.issue == step % n.max(1)) {
            match m.to {
                Tier::Slow => resident.remove(&m.obj),
                Tier::Dram => resident.insert(m.obj),
            };
        }
    }
    resident
}

/// The one-time moves from `start` (in DRAM at the decision) to
/// [`resident_in_phase0`] of the cyclic `moves` for `dram` (see the module
/// doc): evictions first, all queued at phase 0, then promotions in the
/// order they are waited for. `uses[o][i]` / `writes[o][i]`: phase `i`
/// references / writes object `o` (a caller that cannot tell writes from
/// reads passes `uses` for both).
pub fn transition(
    start: &BTreeSet<ObjId>,
    dram: &[BTreeSet<ObjId>],
    moves: &[Move],
    uses: &[Vec<bool>],
    writes: &[Vec<bool>],
) -> Vec<OnceMove> {
    let n = dram.len();
    let first = resident_in_phase0(dram, moves);
    let flag = |t: &[Vec<bool>], o: ObjId, i: usize| {
        t.get(o).and_then(|u| u.get(i)).copied().unwrap_or(false)
    };
    let mut out: Vec<OnceMove> = start
        .difference(&first)
        .map(|&o| OnceMove {
            issue: 0,
            to: Tier::Slow,
            obj: o,
            wait: None,
        })
        .collect();
    let mut ins = Vec::new();
    for &u in first.difference(start) {
        // the first phase at or after `from` that uses `u` with the plan
        // holding it in DRAM
        let need_from = |from: usize| (from..n).find(|&i| dram[i].contains(&u) && flag(uses, u, i));
        let Some(f) = need_from(0) else {
            ins.push(OnceMove {
                issue: 0,
                to: Tier::Dram,
                obj: u,
                wait: None,
            });
            continue;
        };
        // phases of E before the copy is next needed there (all of E for
        // an object first needed in phase 0)
        let before = if f == 0 { need_from(1).unwrap_or(n) } else { f };
        if f == 0
            && moves
                .iter()
                .any(|m| m.obj == u && m.to == Tier::Slow && (1..before).contains(&m.issue))
        {
            continue;
        }
        let issue = (0..before).find(|&p| !flag(writes, u, p)).unwrap_or(0);
        ins.push(OnceMove {
            issue,
            to: Tier::Dram,
            obj: u,
            wait: Some(n + f),
        });
    }
    ins.sort_by_key(|m| (m.issue, m.wait.unwrap_or(usize::MAX), m.obj));
    out.extend(ins);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unimem::schedule::schedule;

    fn set(v: &[ObjId]) -> BTreeSet<ObjId> {
        v.iter().copied().collect()
    }

    fn mv(issue: usize, to: Tier, obj: ObjId, wait: Option<usize>) -> OnceMove {
        OnceMove {
            issue,
            to,
            obj,
            wait,
        }
    }

    #[test]
    fn promotions_overlap_the_iteration_before_the_first_placed_one() {
        // global plan {0, 1} over 3 phases; 0 used in phases 0 and 2, 1 in
        // phase 1; nothing in DRAM at the decision, 2 there to be evicted
        let dram = vec![set(&[0, 1]); 3];
        let uses = vec![
            vec![true, false, true],
            vec![false, true, false],
            vec![true, true, true],
        ];
        let none = vec![vec![false; 3]; 3];
        let m = schedule(&dram, &uses);
        assert!(m.is_empty());
        let t = transition(&set(&[2]), &dram, &m, &uses, &none);
        assert_eq!(
            t,
            vec![
                mv(0, Tier::Slow, 2, None),
                // queued at the decision, waited for where the next
                // iteration first uses them (phase 0 and phase 1 of E + 1)
                mv(0, Tier::Dram, 0, Some(3)),
                mv(0, Tier::Dram, 1, Some(4)),
            ]
        );
        // used only in phase 0: waited at phase 0 of the next iteration
        let uses1 = vec![
            vec![true, false, false],
            vec![false, true, false],
            vec![false; 3],
        ];
        let t = transition(&set(&[]), &dram, &[], &uses1, &none);
        assert_eq!(
            t,
            vec![mv(0, Tier::Dram, 0, Some(3)), mv(0, Tier::Dram, 1, Some(4))]
        );
    }

    #[test]
    fn a_copy_the_schedule_would_undo_before_its_next_use_is_not_made() {
        // local plan: 0 in phase 0, 1 in phase 1 (room for one)
        let dram = vec![set(&[0]), set(&[1])];
        let uses = vec![vec![true, false], vec![false, true]];
        let none = vec![vec![false; 2]; 2];
        let m = schedule(&dram, &uses);
        // the schedule evicts 0 at phase 1 and promotes it for phase 0
        assert!(m
            .iter()
            .any(|m| m.obj == 0 && m.to == Tier::Slow && m.issue == 1));
        let first = resident_in_phase0(&dram, &m);
        assert_eq!(first, set(&[0]));
        // 1 in DRAM at the decision: evicted; 0 not copied in for phase 0
        // only to be evicted at phase 1
        let t = transition(&set(&[1]), &dram, &m, &uses, &none);
        assert_eq!(t, vec![mv(0, Tier::Slow, 1, None)]);
    }

    #[test]
    fn a_copy_starts_after_the_phases_that_write_the_object() {
        // global {0} over 3 phases: used in phases 0 and 2, written in 0
        let dram = vec![set(&[0]); 3];
        let uses = vec![vec![true, false, true]];
        let writes = vec![vec![true, false, false]];
        let t = transition(&set(&[]), &dram, &[], &uses, &writes);
        assert_eq!(t, vec![mv(1, Tier::Dram, 0, Some(3))]);
        // written in every phase before the next use: started at once
        let writes = vec![vec![true, true, true]];
        let t = transition(&set(&[]), &dram, &[], &uses, &writes);
        assert_eq!(t, vec![mv(0, Tier::Dram, 0, Some(3))]);
    }

    #[test]
    fn objects_already_in_place_do_not_move() {
        let dram = vec![set(&[0, 1]); 2];
        let uses = vec![vec![true; 2]; 2];
        assert!(transition(&set(&[0, 1]), &dram, &[], &uses, &uses).is_empty());
    }
}

//! Deciding placements (thesis §3.4 Step 3 and §3.4.2).
//!
//! * *Phase-local search*: one knapsack per phase, decided in phase order
//!   so each decision knows what the previous one left in DRAM; values are
//!   Eq. 3.4 weights (benefit − exposed copy − eviction cost). We run the
//!   pass twice and keep the second: the program iterates, so phase 0's
//!   decision must start from what the last phase left (steady state).
//! * *Cross-phase global search*: one knapsack, one placement for all
//!   phases, nothing moves inside the loop.
//! * [`decide`] keeps the one with the smaller predicted time over the
//!   remaining iterations ([`predict`]).

use super::fifo::{waits, Copy as FifoCopy};
use super::knapsack::{granule_for, solve, Item};
use super::model::{
    benefit, free_phases_before, move_cost, overlap_time, CopyOverlap, PhaseProfile, Platform,
};
use super::schedule::{difference, need_order, replay, schedule, set_masks, stay_put, Move};
use super::{ObjId, Tier};
use std::collections::BTreeSet;

/// Everything a decision depends on.
#[derive(Clone, Debug, PartialEq)]
pub struct Problem {
    /// Object sizes in bytes (index = [`ObjId`]).
    pub sizes: Vec<u64>,
    /// Profile of each phase of one iteration, in order.
    pub phases: Vec<PhaseProfile>,
    /// The machine.
    pub platform: Platform,
    /// DRAM bytes this process may use.
    pub capacity: u64,
    /// Iterations still to run (one-time moves are amortised over them).
    pub iterations: f64,
    /// Per phase, the share of the modelled slow-tier cost (Eq. 3.2 and the
    /// latency benefit) the phase was measured to pay
    /// ([`super::exposure::calibrate`]); empty, or a phase beyond its end:
    /// 1, every slow-tier access exposed as the thesis's models assume.
    pub exposure: Vec<f64>,
}

/// Which search produced a plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Search {
    /// One knapsack per phase.
    Local,
    /// One knapsack for the whole iteration.
    Global,
}

/// A placement per phase, with its predicted cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// The search that produced it.
    pub search: Search,
    /// Objects in DRAM during each phase (steady state).
    pub dram: Vec<BTreeSet<ObjId>>,
    /// Predicted seconds lost to the slow tier and to exposed copies over
    /// the remaining iterations, including the one-time moves from the
    /// current placement.
    pub predicted: f64,
}

/// What a prediction reads from the problem and that no candidate plan
/// changes, computed once per search instead of once per prediction: each
/// object's uses per phase, the phase times, and per phase the Eq. 3.2
/// benefits of its objects in key order (the order
/// [`per_iteration`] sums them in, so the sums are the same to the bit).
/// [`leave_room_within`] predicts `phases · objects` candidates per round,
/// and rebuilding these per prediction was most of a decision's CPU on MG
/// (docs/notebook/unimem.md, "A decision's CPU").
struct Cache {
    uses: Vec<Vec<bool>>,
    times: Vec<f64>,
    bfts: Vec<Vec<(ObjId, f64)>>,
}

impl Cache {
    fn new(p: &Problem) -> Cache {
        Cache {
            uses: (0..p.sizes.len()).map(|o| p.uses(o)).collect(),
            times: p.times(),
            bfts: p
                .phases
                .iter()
                .enumerate()
                .map(|(i, ph)| {
                    ph.objs
                        .keys()
                        .filter(|&&o| o < p.sizes.len())
                        .map(|&o| (o, p.bft(i, o)))
                        .collect()
                })
                .collect(),
        }
    }
}

impl Problem {
    /// Whether phase `i` references `obj`.
    pub fn uses(&self, obj: ObjId) -> Vec<bool> {
        self.phases
            .iter()
            .map(|p| p.objs.contains_key(&obj))
            .collect()
    }

    /// `BFT` of `obj` in phase `i` (0 if the phase does not touch it),
    /// scaled by the phase's measured exposure ([`Self::exposure`]).
    pub fn bft(&self, i: usize, obj: ObjId) -> f64 {
        self.full_bft(i, obj) * self.exposure.get(i).copied().unwrap_or(1.0)
    }

    /// The thesis's `BFT` of `obj` in phase `i` (Eq. 3.2 or the latency
    /// benefit by the §3.4.1 classification), every access exposed: what
    /// [`super::exposure::calibrate`] compares the measured phase times with.
    pub fn full_bft(&self, i: usize, obj: ObjId) -> f64 {
        let ph = &self.phases[i];
        ph.objs
            .get(&obj)
            .map_or(0.0, |o| benefit(o, ph, &self.platform).1)
    }

    fn times(&self) -> Vec<f64> {
        self.phases.iter().map(|p| p.time).collect()
    }

    fn size_of(&self, set: &BTreeSet<ObjId>) -> u64 {
        set.iter().map(|&o| self.sizes[o]).sum()
    }

    /// Exposed cost (Eq. 3.3) of a copy of `obj` that must be complete at
    /// the start of phase `i`, overlapped with the phases before `i` that do
    /// not use it (Fig. 3.5).
    pub fn exposed_copy(&self, obj: ObjId, i: usize) -> f64 {
        let d = free_phases_before(&self.uses(obj), i);
        self.copy_cost(obj, overlap_time(&self.times(), i, d))
    }

    /// Eq. 3.3: the exposed part of a copy of `obj` that may run beside
    /// `window` seconds of computation, `size / copy_bw` less the Fig. 3.5
    /// overlap credit of that window (none when the helper has no CPU of
    /// its own, [`super::model::CopyOverlap`]). The one place the plan's
    /// copy costs are computed, whatever window each caller measured.
    pub fn copy_cost(&self, obj: ObjId, window: f64) -> f64 {
        move_cost(
            self.sizes[obj] as f64,
            self.platform.copy_bw,
            self.platform.copy_overlap.credit(window),
        )
    }

    /// [`Self::exposed_copy`] for a promotion of `obj` needed at phase `i`
    /// of the cyclic plan `dram`, with the Fig. 3.5 window cut to the phases
    /// in which the plan leaves DRAM room for `obj` next to that phase's own
    /// set. Eq. 3.3 credits the whole window, but a copy can only run in a
    /// phase whose DRAM has room for it (the thesis notes its estimate
    /// omits evictions); in a plan that fills DRAM in every phase the copy
    /// waits for the transition and is exposed in full.
    pub fn exposed_copy_in(&self, obj: ObjId, i: usize, dram: &[BTreeSet<ObjId>]) -> f64 {
        let n = dram.len();
        let uses = self.uses(obj);
        let d = free_phases_before(&uses, i);
        let times = self.times();
        let room = |k: usize| {
            let other: u64 = dram[k]
                .iter()
                .filter(|&&o| o != obj)
                .map(|&o| self.sizes[o])
                .sum();
            other + self.sizes[obj] <= self.capacity
        };
        // the contiguous phases right before `i` with room
        let window: f64 = (1..=d)
            .map(|k| (i + n - k) % n)
            .take_while(|&k| room(k))
            .map(|k| times[k])
            .sum();
        self.copy_cost(obj, window)
    }

    /// Exposed cost (Eq. 3.3) of every promotion of the cyclic plan `dram`,
    /// per iteration, with the DRAM room in each phase of a window shared
    /// by the copies that use it. [`Self::exposed_copy_in`] asks for each
    /// promotion alone whether a phase has room for it; two promotions for
    /// the same phase then both count the one free slot of the phase before,
    /// although the copy that lands first holds that slot until its phase
    /// and the other waits for the transition's evictions (the schedule's
    /// [`super::schedule::hoist`] replays exactly that and hoists only one).
    /// Here each promotion's window stops at the first phase without room
    /// for it next to the phase's own set and the copies already credited
    /// there, and it then holds its room in every phase of its window;
    /// the room is handed out in rounds ([`Self::promotion_windows`]).
    pub fn exposed_promotions(&self, dram: &[BTreeSet<ObjId>]) -> f64 {
        self.promotion_windows(&Cache::new(self), dram)
            .iter()
            .map(|&(_, o, _, window)| self.copy_cost(o, window))
            .sum()
    }

    /// Every promotion of the cyclic plan `dram` as (phase that needs it,
    /// object, phases of room before it, their execution time), the room
    /// shared as [`Self::exposed_promotions`] describes and handed out as
    /// [`super::schedule::hoist`] does: in rounds, each promotion in turn
    /// one phase more, so every promotion gets one phase of lead before
    /// any gets two.
    fn promotion_windows(
        &self,
        c: &Cache,
        dram: &[BTreeSet<ObjId>],
    ) -> Vec<(usize, ObjId, usize, f64)> {
        let n = dram.len();
        let times = &c.times;
        // bytes resident in each phase: its set, plus copies credited to it
        let mut held: Vec<u64> = dram.iter().map(|s| self.size_of(s)).collect();
        // (need, object, Fig. 3.5 window in phases, lead, lead's time)
        let mut out: Vec<(usize, ObjId, usize, usize, f64)> = Vec::new();
        let masks = set_masks(dram);
        for i in 0..n {
            for o in difference(dram, masks.as_deref(), i, (i + n - 1) % n) {
                out.push((i, o, free_phases_before(&c.uses[o], i), 0, 0.0));
            }
        }
        let mut changed = true;
        while changed {
            changed = false;
            for (i, o, d, lead, window) in out.iter_mut() {
                if *lead >= *d {
                    continue;
                }
                let k = (*i + n - *lead - 1) % n;
                let size = self.sizes[*o];
                let own = if dram[k].contains(o) { size } else { 0 };
                if held[k] - own + size > self.capacity {
                    // the window ends at the first phase without room
                    *d = *lead;
                    continue;
                }
                held[k] += size - own;
                *lead += 1;
                *window += times[k];
                changed = true;
            }
        }
        out.into_iter()
            .map(|(i, o, _, lead, window)| (i, o, lead, window))
            .collect()
    }

    /// The copies the helper makes each iteration for the cyclic plan
    /// `dram`, timed as the enforced schedule times them
    /// ([`super::schedule::schedule_checked`]): an eviction right after
    /// the victim's last use (at the phase that needs the room if that
    /// early schedule could overfill DRAM, as the checked schedule falls
    /// back), waited for by the next phase that uses the object (the
    /// runtime waits only if that phase writes it; a profile cannot tell,
    /// so a read is charged as a write); a promotion no later than the
    /// early schedule issues it and as early as the room shared by
    /// [`Self::exposed_promotions`] allows (what
    /// [`super::schedule::hoist`] does), waited for by the phase that
    /// needs it. Request order as the schedule's
    /// ([`super::schedule::need_order`]): by phase, then by how soon each
    /// copy is needed, an eviction just before the promotion that needs
    /// its room. An eviction and a promotion of one object requested at
    /// the same phase are both charged: the searches compare the sets as
    /// given, and [`decide`] then keeps such an object in DRAM
    /// ([`stay_put`]) and predicts the plan it enforces. (Cancelling them
    /// here too made `leave_room`'s one-object-at-a-time removals neutral
    /// where they had paid, and its greedy search stopped at a worse plan
    /// on `nek-eddy` at 1/2 bandwidth: docs/notebook/unimem.md, "A copy bandwidth
    /// per direction".) Each copy takes Eq. 3.3's time in its own
    /// direction ([`Platform::copy_secs`]).
    fn fifo_copies(&self, c: &Cache, dram: &[BTreeSet<ObjId>]) -> Vec<FifoCopy> {
        let (moves, copies) = self.fifo_moves(c, dram);
        need_order(dram, &self.sizes, self.capacity, &moves)
            .into_iter()
            .map(|k| copies[k].clone())
            .collect()
    }

    /// [`Self::fifo_copies`] before the order is set: each copy with its
    /// move.
    fn fifo_moves(&self, c: &Cache, dram: &[BTreeSet<ObjId>]) -> (Vec<Move>, Vec<FifoCopy>) {
        let n = dram.len();
        let uses = &c.uses;
        let early = schedule(dram, uses);
        let fits = matches!(replay(dram, uses, &early, &self.sizes, 3),
            Ok(peak) if peak <= self.capacity);
        // Eq. 3.3's `size / mem_copy_bw`, each direction at its own
        // measured bandwidth (an eviction at `evict_bw`)
        let secs = |o: ObjId, to: Tier| self.platform.copy_secs(self.sizes[o] as f64, to);
        // (issue, eviction?, need, object, copy)
        let mut out: Vec<(usize, bool, usize, ObjId, FifoCopy)> = Vec::new();
        for m in early.iter().filter(|m| m.to == Tier::Slow) {
            let issue = if fits { m.issue } else { m.needed_by };
            let waited_after = (0..n).find(|&k| uses[m.obj][(issue + k) % n]);
            out.push((
                issue,
                true,
                m.needed_by,
                m.obj,
                FifoCopy {
                    issue,
                    secs: secs(m.obj, Tier::Slow),
                    waited_after,
                    eviction: true,
                },
            ));
        }
        // the first early promotion of each (object, need), as a search of
        // `early` per promotion found it, without the quadratic search
        let mut first: std::collections::BTreeMap<(ObjId, usize), &Move> = Default::default();
        for m in early.iter().filter(|m| m.to == Tier::Dram) {
            first.entry((m.obj, m.needed_by)).or_insert(m);
        }
        for (need, o, room, _) in self.promotion_windows(c, dram) {
            let scheduled = first
                .get(&(o, need))
                .copied()
                .filter(|_| fits)
                .map_or(0, |m| (need + n - m.issue) % n);
            let lead = room.max(scheduled);
            let issue = (need + n - lead) % n;
            out.push((
                issue,
                false,
                need,
                o,
                FifoCopy {
                    issue,
                    secs: secs(o, Tier::Dram),
                    waited_after: Some(lead),
                    eviction: false,
                },
            ));
        }
        let moves: Vec<Move> = out
            .iter()
            .map(|c| Move {
                issue: c.0,
                to: if c.1 { Tier::Slow } else { Tier::Dram },
                obj: c.3,
                needed_by: c.2,
            })
            .collect();
        (moves, out.into_iter().map(|c| c.4).collect())
    }

    /// Eq. 3.3's copy time of `obj` towards `to`, nothing overlapped:
    /// a one-time move, or an Eq. 3.4 victim's eviction.
    fn one_time(&self, obj: ObjId, to: Tier) -> f64 {
        self.platform.copy_secs(self.sizes[obj] as f64, to)
    }
}

/// Victims for `need` bytes among `pool` (thesis §3.4 Step 3: "a set of
/// resident objects whose combined size just exceeds what the newcomer
/// needs"): the smallest single object that suffices, else the largest ones
/// until the need is covered (all of `pool` if it cannot be).
pub fn pick_victims(sizes: &[u64], pool: &BTreeSet<ObjId>, need: u64) -> Vec<ObjId> {
    if need == 0 {
        return Vec::new();
    }
    if let Some(&one) = pool
        .iter()
        .filter(|&&o| sizes[o] >= need)
        .min_by_key(|&&o| (sizes[o], o))
    {
        return vec![one];
    }
    let mut by_size: Vec<ObjId> = pool.iter().copied().collect();
    by_size.sort_by_key(|&o| (std::cmp::Reverse(sizes[o]), o));
    let mut got = 0;
    let mut out = Vec::new();
    for o in by_size {
        if got >= need {
            break;
        }
        got += sizes[o];
        out.push(o);
    }
    out
}

fn local_pass(p: &Problem, start: &BTreeSet<ObjId>) -> Vec<BTreeSet<ObjId>> {
    let g = granule_for(p.capacity, 4096);
    let mut d = start.clone();
    let mut out = Vec::with_capacity(p.phases.len());
    for i in 0..p.phases.len() {
        let cands: Vec<ObjId> = p.phases[i]
            .objs
            .keys()
            .copied()
            .filter(|&o| o < p.sizes.len())
            .collect();
        let keep: BTreeSet<ObjId> = d.iter().copied().filter(|o| !cands.contains(o)).collect();
        let free = p.capacity.saturating_sub(p.size_of(&d));
        let items: Vec<Item> = cands
            .iter()
            .map(|&a| {
                let bft = p.bft(i, a);
                let value = if d.contains(&a) {
                    bft
                } else {
                    let need = p.sizes[a].saturating_sub(free);
                    // Eq. 3.4's extra_COST: the victims' copies out of
                    // DRAM, at the eviction bandwidth
                    let extra: f64 = pick_victims(&p.sizes, &keep, need)
                        .iter()
                        .map(|&v| p.one_time(v, Tier::Slow))
                        .sum();
                    super::model::weight(bft, p.exposed_copy(a, i), extra)
                };
                Item {
                    value,
                    size: p.sizes[a],
                }
            })
            .collect();
        let mut next: BTreeSet<ObjId> = solve(&items, p.capacity, g)
            .into_iter()
            .map(|k| cands[k])
            .collect();
        let chosen = p.size_of(&next);
        let mut keep = keep;
        let over = (chosen + p.size_of(&keep)).saturating_sub(p.capacity);
        for v in pick_victims(&p.sizes, &keep, over) {
            keep.remove(&v);
        }
        next.extend(keep);
        out.push(next.clone());
        d = next;
    }
    out
}

/// Phase-local search in steady state (second pass over the iteration).
pub fn local_search(p: &Problem, start: &BTreeSet<ObjId>) -> Vec<BTreeSet<ObjId>> {
    if p.phases.is_empty() {
        return Vec::new();
    }
    let first = local_pass(p, start);
    let entry = first.last().cloned().unwrap_or_default();
    local_pass(p, &entry)
}

/// Cross-phase global search: value of an object is its benefit summed over
/// the phases and the remaining iterations, minus its one-time copy.
pub fn global_search(p: &Problem, start: &BTreeSet<ObjId>) -> BTreeSet<ObjId> {
    let items: Vec<Item> = (0..p.sizes.len())
        .map(|o| {
            let bft: f64 = (0..p.phases.len()).map(|i| p.bft(i, o)).sum();
            let cost = if start.contains(&o) {
                0.0
            } else {
                p.one_time(o, Tier::Dram)
            };
            Item {
                value: bft * p.iterations - cost,
                size: p.sizes[o],
            }
        })
        .collect();
    solve(&items, p.capacity, granule_for(p.capacity, 4096))
        .into_iter()
        .collect()
}

/// Seconds per iteration lost to the slow tier (benefits forgone) and to
/// exposed copies between consecutive phases (cyclic): the time the phases
/// wait for the helper's FIFO ([`exposed_split`]).
pub fn per_iteration(p: &Problem, dram: &[BTreeSet<ObjId>]) -> (f64, f64) {
    per_iteration_in(p, &Cache::new(p), dram)
}

/// [`per_iteration`] reading what no plan changes from `c`.
fn per_iteration_in(p: &Problem, c: &Cache, dram: &[BTreeSet<ObjId>]) -> (f64, f64) {
    let mut lost = 0.0;
    for (bfts, set) in c.bfts.iter().zip(dram) {
        for &(o, bft) in bfts {
            if !set.contains(&o) {
                lost += bft;
            }
        }
    }
    let (promotions, evictions) = exposed_split_in(p, c, dram);
    (lost, promotions + evictions)
}

/// The exposed copy time per iteration of the cyclic plan `dram`: the
/// helper's FIFO played over an iteration ([`super::fifo::waits`]) with
/// the copies timed as the enforced schedule times them, each copy taking
/// its Eq. 3.3 time, and the waits split into the time spent behind
/// promotions and behind evictions. Until branch `unimemevict` each
/// eviction was charged Eq. 3.3 as if the phase that needs the room
/// waited for it; the policy waits only for promotions (and objects a
/// phase writes), so an eviction costs only the time a waited-for copy
/// queues behind it (docs/notebook/unimem.md, "Evictions charged only where a copy
/// waits behind them"). When the helper has no CPU of its own
/// ([`super::model::CopyOverlap::Exposed`]), nothing runs beside the
/// computation: every copy costs its whole Eq. 3.3 time, in its direction.
pub fn exposed_split(p: &Problem, dram: &[BTreeSet<ObjId>]) -> (f64, f64) {
    exposed_split_in(p, &Cache::new(p), dram)
}

/// [`exposed_split`] reading what no plan changes from `c`.
fn exposed_split_in(p: &Problem, c: &Cache, dram: &[BTreeSet<ObjId>]) -> (f64, f64) {
    if dram.len() != p.phases.len() {
        return (0.0, 0.0);
    }
    let copies = p.fifo_copies(c, dram);
    if p.platform.copy_overlap == CopyOverlap::Exposed {
        let sum = |ev: bool| -> f64 {
            copies
                .iter()
                .filter(|c| c.eviction == ev)
                .map(|c| c.secs)
                .sum()
        };
        return (sum(false), sum(true));
    }
    let w = waits(&c.times, &copies);
    (w.promotions, w.evictions)
}

/// Predicted seconds over the remaining iterations for a placement, plus
/// the one-time moves from `start` to its first phase.
pub fn predict(p: &Problem, dram: &[BTreeSet<ObjId>], start: &BTreeSet<ObjId>) -> f64 {
    predict_in(p, &Cache::new(p), dram, start)
}

/// [`predict`] reading what no plan changes from `c`.
fn predict_in(p: &Problem, c: &Cache, dram: &[BTreeSet<ObjId>], start: &BTreeSet<ObjId>) -> f64 {
    if dram.is_empty() {
        return 0.0;
    }
    let (lost, moves) = per_iteration_in(p, c, dram);
    let first: f64 = dram[0]
        .difference(start)
        .map(|&o| p.one_time(o, Tier::Dram))
        .chain(
            start
                .difference(&dram[0])
                .map(|&o| p.one_time(o, Tier::Slow)),
        )
        .sum();
    p.iterations * (lost + moves) + first
}

/// Most removals [`leave_room`] makes (bounds the decision's cost on large
/// problems; each round evaluates every (phase, object) once).
pub const LEAVE_ROOM_ROUNDS: usize = 256;

/// Leaves DRAM room for the next phases (not in the thesis, whose local
/// search fills DRAM phase by phase, so nothing can be copied ahead): from
/// the per-phase sets `dram`, greedily takes an object out of one phase's
/// set while that lowers [`predict`], which charges what it costs (the
/// phase's benefit of the object forgone, the extra eviction and
/// re-promotion) and credits what it buys (copies for later phases that
/// now have room to run during this one, [`Problem::exposed_copy_in`]).
/// Each round tries every (phase, object) and applies the best; at most
/// `2 · objects · phases` rounds, and [`LEAVE_ROOM_ROUNDS`].
pub fn leave_room(
    p: &Problem,
    dram: &[BTreeSet<ObjId>],
    start: &BTreeSet<ObjId>,
) -> Vec<BTreeSet<ObjId>> {
    leave_room_within(p, dram, start, &mut || true)
}

/// [`leave_room`] that asks `more` before evaluating each candidate and
/// stops when it says no, keeping the removals made so far (and the best
/// candidate of the round it stops in). Each removal lowers [`predict`],
/// so a search cut short returns a plan no worse than `dram`. Why: one
/// round costs `phases · objects` predictions, each a replay of the
/// iteration, so on a program with 120 phases per iteration (MG) a full
/// search takes tens of milliseconds per decision on the application
/// thread; the runtime bounds it by a share of the run
/// ([`crate::unimem::plan::decide_within`]).
pub fn leave_room_within(
    p: &Problem,
    dram: &[BTreeSet<ObjId>],
    start: &BTreeSet<ObjId>,
    more: &mut dyn FnMut() -> bool,
) -> Vec<BTreeSet<ObjId>> {
    let c = Cache::new(p);
    let mut cur = dram.to_vec();
    let mut best = predict_in(p, &c, &cur, start);
    let rounds = (2 * p.sizes.len() * cur.len()).min(LEAVE_ROOM_ROUNDS);
    let mut out_of_budget = false;
    for _ in 0..rounds {
        let mut pick: Option<(usize, ObjId, f64)> = None;
        'round: for i in 0..cur.len() {
            // the candidate is `cur` less `o` in phase `i`, made in place
            // and undone (a clone of every phase's set per candidate was a
            // fifth of the search's time)
            let objs: Vec<ObjId> = cur[i].iter().copied().collect();
            for o in objs {
                if !more() {
                    out_of_budget = true;
                    break 'round;
                }
                cur[i].remove(&o);
                let v = predict_in(p, &c, &cur, start);
                cur[i].insert(o);
                if v < pick.map_or(best, |x| x.2) - 1e-12 * best.abs().max(1e-12) {
                    pick = Some((i, o, v));
                }
            }
        }
        let Some((i, o, v)) = pick else { break };
        cur[i].remove(&o);
        best = v;
        if out_of_budget {
            break;
        }
    }
    cur
}

/// Both searches; the plan with the smaller prediction wins (global on a tie:
/// it moves less). The local plan also runs through [`leave_room`], and
/// the roomier version replaces it when predicted faster; then an object
/// its schedule would evict and promote back at one phase stays in DRAM
/// ([`stay_put`]).
pub fn decide(p: &Problem, start: &BTreeSet<ObjId>) -> Plan {
    decide_within(p, start, &mut || true)
}

/// [`decide`] whose [`leave_room`] search stops when `more` says no
/// ([`leave_room_within`]); the knapsacks, [`settle`] and the final
/// comparison always run. The runtime passes a deadline, a share of the
/// run's expected time, so a decision's cost on the application thread
/// stays bounded however many phases an iteration has; the simulator
/// calls [`decide`] (no bound, deterministic).
pub fn decide_within(p: &Problem, start: &BTreeSet<ObjId>, more: &mut dyn FnMut() -> bool) -> Plan {
    let g = global_search(p, start);
    let global = vec![g; p.phases.len()];
    let local = local_search(p, start);
    let local = settle(p, &leave_room_within(p, &local, start, more));
    let (pg, pl) = (predict(p, &global, start), predict(p, &local, start));
    if pl < pg {
        Plan {
            search: Search::Local,
            dram: local,
            predicted: pl,
        }
    } else {
        Plan {
            search: Search::Global,
            dram: global,
            predicted: pg,
        }
    }
}

/// [`stay_put`] for the plan `dram` of `p`: an object evicted and
/// promoted back at one phase of its schedule stays in DRAM.
pub fn settle(p: &Problem, dram: &[BTreeSet<ObjId>]) -> Vec<BTreeSet<ObjId>> {
    let uses: Vec<Vec<bool>> = (0..p.sizes.len()).map(|o| p.uses(o)).collect();
    stay_put(dram, &uses, &p.sizes, p.capacity)
}

/// Initial placement (§3.4.2 opt. 2): the objects with the most memory
/// references, in that order, as long as they fit.
pub fn initial_placement(sizes: &[u64], refs: &[f64], capacity: u64) -> BTreeSet<ObjId> {
    let mut order: Vec<ObjId> = (0..sizes.len().min(refs.len()))
        .filter(|&o| refs[o] > 0.0)
        .collect();
    order.sort_by(|&a, &b| refs[b].total_cmp(&refs[a]).then(a.cmp(&b)));
    let mut used = 0;
    let mut out = BTreeSet::new();
    for o in order {
        if used + sizes[o] <= capacity {
            used += sizes[o];
            out.insert(o);
        }
    }
    out
}

/// Initial placement (§3.4.2 opt. 2) by the thesis's criterion: "those
/// target data objects with the largest amount of memory references
/// (subject to the DRAM space limitation)", i.e. the set with the most
/// references that fits, a 0/1 knapsack (value = references, the searches'
/// solver). [`initial_placement`]'s first fit in reference order can fill
/// DRAM with one large object and leave out smaller ones with more
/// references in total (`mg` in the simulator: `v`, 1 reference per byte,
/// instead of `r`'s chunks, 3 per byte), a start that the thesis says
/// should agree with the cross-phase search's plan and that then costs the
/// decision's one-time moves (docs/notebook/unimem.md, "What is attainable"). The
/// first-fit set is kept unless a set with more references fits, so ties
/// keep its order.
pub fn initial_placement_max_refs(sizes: &[u64], refs: &[f64], capacity: u64) -> BTreeSet<ObjId> {
    let first = initial_placement(sizes, refs, capacity);
    let n = sizes.len().min(refs.len());
    let items: Vec<Item> = (0..n)
        .map(|o| Item {
            value: refs[o],
            size: sizes[o],
        })
        .collect();
    let best: BTreeSet<ObjId> = solve(&items, capacity, granule_for(capacity, 4096))
        .into_iter()
        .collect();
    let total = |s: &BTreeSet<ObjId>| s.iter().map(|&o| refs[o]).sum::<f64>();
    let (a, b) = (total(&best), total(&first));
    if a > b + 1e-9 * b.abs() {
        best
    } else {
        first
    }
}

/// Iteration drift (§3.4.2 opt. 1): some phase's time moved by more than
/// `tol` (thesis: 10%) from the profiled one, so re-profile and re-decide.
pub fn drifted(profiled: &[f64], now: &[f64], tol: f64) -> bool {
    profiled.len() != now.len()
        || profiled
            .iter()
            .zip(now)
            .any(|(&a, &b)| (b - a).abs() > tol * a.abs())
}

#[cfg(test)]
#[path = "plan_tests.rs"]
pub(crate) mod tests;

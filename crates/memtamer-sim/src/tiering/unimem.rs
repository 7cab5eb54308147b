//! Unimem as a simulator policy (thesis ch. 3, §3.3 workflow): profile the
//! first iteration(s), decide at their end with `memtamer_core::unimem` (the
//! planner `memtamer-tier`'s MPI driver runs: Eq. 3.1-3.4, phase-local and
//! cross-phase knapsacks, the better prediction wins), then enforce from
//! the next iteration on with the proactive schedule: at each phase start
//! queue the moves issued there and wait only for the promotions that phase
//! needs. This mirrors `memtamer_tier::driver::Driver` (`decide_now`,
//! `enforce`) step for step; drift re-profiling is left out because a
//! simulated phase does not drift.
//!
//! Proactive, overlapped moves (thesis §3.4 "Enforcement", §3.5): the
//! helper copies during the phases before the one that needs an object,
//! and a phase waits only for the promotions it needs. This holds for the
//! one-time moves after the decision too (`unimem::transition`, shared with
//! `memtamer-tier`'s driver): queued at the decision (evictions first, then
//! promotions in the order they are waited for), they overlap the first
//! enforced iteration, which runs with each object where it is until its
//! copy lands, and each is waited for where the next iteration first
//! uses it. An object being
//! copied stays readable (readers use the old copy, as `memtamer-tier`'s
//! write-protect protocol allows), so a phase waits for a pending move of
//! an object only if it writes it.
//!
//! Large objects (§3.4.2 opt. 3): an object larger than the rank's DRAM
//! whose every access is sequential (the thesis partitions only 1-D arrays
//! with regular references) is split into chunks of a quarter of the DRAM,
//! each profiled (per-page line counts of the profiled iteration) and
//! placed as its own unit.

use super::{page_sizes, MoveReq, PhaseObs, PhasePolicy, PhaseStart, SpaceView, Tier};
use crate::config::phased::{ModelSpec, PhasedProgram, SearchSpec};
use memtamer_core::unimem::exposure::{calibrate, Measured};
use memtamer_core::unimem::model::{ObjPhase, PhaseProfile, Platform};
use memtamer_core::unimem::plan::{
    decide, exposed_split, global_search, initial_placement_max_refs, local_search, per_iteration,
    predict, settle, Problem, Search,
};
use memtamer_core::unimem::regress::{RegressionGuard, Verdict, DEFAULT_JUDGE};
use memtamer_core::unimem::schedule::{schedule_checked, Move};
use memtamer_core::unimem::transition::{transition, OnceMove};
use memtamer_core::unimem::ObjId;
use std::collections::{BTreeMap, BTreeSet};

/// Unimem's model platform from measured constants (one copy bandwidth
/// per direction, or `copy_bw` for both where `evict_bw` is absent) and the constant
/// factors fitted on the same platform (`tier_calib::calibrate`, thesis
/// §3.4.1: STREAM for `CF_bw`, a single-threaded pointer chaser for
/// `CF_lat`); t1 = 80%, t2 = 10% of the slow tier's streaming peak (§3.4.1:
/// "t1% of the peak NVM bandwidth BW_peak"; measured per rank with all
/// ranks running, as the demand it is compared with is per rank).
pub fn platform(m: &ModelSpec) -> Platform {
    Platform {
        dram_bw: m.dram_bw,
        slow_bw: m.slow_bw,
        dram_lat: m.dram_lat,
        slow_lat: m.slow_lat,
        cacheline: 64.0,
        copy_bw: m.copy_bw,
        evict_bw: m.evict_bw.unwrap_or(m.copy_bw),
        bw_peak: m.slow_bw,
        cf_bw: m.cf_bw,
        cf_lat: m.cf_lat,
        t1: 0.8,
        t2: 0.1,
        // the simulated helper copies on a core of its own (the engine
        // runs its copies beside the phases): the thesis's overlap holds
        copy_overlap: memtamer_core::unimem::model::CopyOverlap::Overlapped,
    }
}

/// A placement unit: a whole object, or one chunk of a large one
/// (§3.4.2 opt. 3), as pages `first .. first + pages` of `obj`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unit {
    /// Object index.
    pub obj: usize,
    /// First page.
    pub first: u64,
    /// Pages.
    pub pages: u64,
    /// Chunk number within its object (`None`: the whole object).
    pub chunk: Option<usize>,
    /// Whether this is one side of a cut made to fill the DRAM a decision
    /// left free (`unimem::fill`): the leading pages of a unit, or the rest.
    pub part: bool,
}

impl Unit {
    fn req(&self, to: Tier) -> MoveReq {
        match self.chunk {
            None if !self.part => MoveReq::whole(self.obj, to),
            _ => MoveReq {
                obj: self.obj,
                first_page: self.first,
                pages: self.pages,
                to,
            },
        }
    }

    fn label(&self) -> String {
        let name = match self.chunk {
            Some(k) => format!("{}.{k}", self.obj),
            None => self.obj.to_string(),
        };
        if self.part {
            format!("{name}[{}..{})", self.first, self.first + self.pages)
        } else {
            name
        }
    }
}

/// Whether every access to object `o` of `prog` is sequential: the
/// thesis partitions only "one-dimensional arrays with regular memory
/// references" (§3.4.2), so only these are chunked or cut.
fn regular(prog: &PhasedProgram, o: usize) -> bool {
    prog.phases
        .iter()
        .flat_map(|p| p.access.iter())
        .filter(|a| prog.object_index(&a.object) == Some(o))
        .all(|a| a.pattern == crate::config::Pattern::Seq)
}

/// Units of `prog` for a DRAM of `capacity` bytes (§3.4.2 opt. 3): objects
/// larger than the DRAM with only sequential accesses ("1-D arrays with
/// regular references") split into chunks of `capacity / 4` (whole
/// pages), every other object whole. The thesis gives no chunk size beyond
/// "smaller than the DRAM"; a quarter lets chunks of several objects
/// share DRAM.
pub fn units(prog: &PhasedProgram, capacity: u64) -> Vec<Unit> {
    let sizes = page_sizes(prog);
    let chunk_pages = (capacity / super::PAGE / 4).max(1);
    let mut out = Vec::new();
    for (o, &size) in sizes.iter().enumerate() {
        let regular = regular(prog, o);
        let pages = size / super::PAGE;
        if size > capacity && regular && pages > chunk_pages {
            let mut first = 0;
            let mut k = 0;
            while first < pages {
                let n = chunk_pages.min(pages - first);
                out.push(Unit {
                    obj: o,
                    first,
                    pages: n,
                    chunk: Some(k),
                    part: false,
                });
                first += n;
                k += 1;
            }
        } else {
            out.push(Unit {
                obj: o,
                first: 0,
                pages,
                chunk: None,
                part: false,
            });
        }
    }
    out
}

/// One rank's Unimem.
#[derive(Clone, Debug)]
pub struct UnimemPolicy {
    /// Placement units (objects, or chunks of large ones).
    units: Vec<Unit>,
    /// Unit of each (object, page): `first_unit[obj] + page / chunk_pages`
    /// for a chunked object.
    first_unit: Vec<usize>,
    chunk_pages: u64,
    /// Lines per unit of the chunked objects in the current profiled phase.
    chunk_lines: Vec<u64>,
    /// Byte size of each unit (the planner's object sizes).
    sizes: Vec<u64>,
    /// §3.4.2 opt. 2 reference counts (bytes per iteration, "compiler analysis").
    refs: Vec<f64>,
    capacity: u64,
    platform: Platform,
    search: SearchSpec,
    initial_placement: bool,
    profile_iterations: u32,
    iterations: u32,
    /// Profile of the last profiled iteration, one per phase.
    profile: Vec<PhaseProfile>,
    /// The decided schedule (enforcing once set).
    moves: Option<Vec<Move>>,
    /// One-time moves of the decision (`unimem::transition`), over units.
    once: Vec<OnceMove>,
    /// Writes per object per phase (for the write-blocking wait rule).
    writes: Vec<Vec<bool>>,
    phases: usize,
    decided: String,
    /// The measured regression guard (`unimem::regress`): the decided
    /// plan's quiet iterations against the profiled ones, which ran under
    /// the placement it replaced.
    guard: RegressionGuard,
    /// First iteration of the placement in force (the one-time moves'
    /// clock starts at its phase 0).
    adopted_at: u32,
    /// The plan in force (per-phase DRAM sets) and the one it replaced,
    /// with its schedule (the revert's target).
    dram: Vec<BTreeSet<ObjId>>,
    prev: Option<(Vec<BTreeSet<ObjId>>, Vec<Move>)>,
    /// Per unit, the phases that use / write it (the decision's profile).
    uses: Vec<Vec<bool>>,
    unit_writes: Vec<Vec<bool>>,
    /// The current iteration's phase times (enforcing).
    iter_times: Vec<f64>,
    /// Measured exposure (`unimem::exposure`): on, whether it was learned
    /// for this profile yet, the current iteration's waits for moves,
    /// the profiled iteration's phase times without waits (the placement
    /// the first decision replaced) and the adopted plan's quiet
    /// iterations' likewise.
    measured_exposure: bool,
    calibrated: bool,
    iter_waits: Vec<f64>,
    profiled_times: Vec<f64>,
    plan_quiet: Vec<Vec<f64>>,
    /// Per-object exposure (`unimem::exposure_obj`, reported): the
    /// placements measured (DRAM sets, mean phase times without waits),
    /// the per-phase exposure (the fallback), and whether the re-decided
    /// plan's quiet iterations are still to be added.
    observed: Vec<(Vec<BTreeSet<ObjId>>, Vec<f64>)>,
    learned: Vec<f64>,
    observe_next: bool,
    /// The remainder fill (`unimem::fill`, docs/notebook/unimem.md
    /// "Partial units"): whether the decision fills the DRAM its plan
    /// leaves free with the leading pages of a regular object's unit, and
    /// per object whether it is regular (only sequential accesses).
    fill: bool,
    regular: Vec<bool>,
}

impl UnimemPolicy {
    /// A policy for one rank of `prog`.
    pub fn new(
        prog: &PhasedProgram,
        capacity: u64,
        platform: Platform,
        search: SearchSpec,
        initial_placement: bool,
        profile_iterations: u32,
    ) -> UnimemPolicy {
        let obj_sizes = page_sizes(prog);
        let mut obj_refs = vec![0.0; obj_sizes.len()];
        let mut writes = vec![vec![false; prog.phases.len()]; obj_sizes.len()];
        for (i, ph) in prog.phases.iter().enumerate() {
            for a in &ph.access {
                if let Some(o) = prog.object_index(&a.object) {
                    obj_refs[o] += a.bytes as f64;
                    writes[o][i] |= a.write_fraction > 0.0;
                }
            }
        }
        let units = units(prog, capacity);
        let mut first_unit = vec![0; obj_sizes.len()];
        for (u, un) in units.iter().enumerate().rev() {
            first_unit[un.obj] = u;
        }
        let sizes: Vec<u64> = units.iter().map(|u| u.pages * super::PAGE).collect();
        // "compiler analysis" of a regular 1-D array: its references spread
        // over its pages
        let refs: Vec<f64> = units
            .iter()
            .map(|u| obj_refs[u.obj] * u.pages as f64 / (obj_sizes[u.obj] / super::PAGE) as f64)
            .collect();
        UnimemPolicy {
            chunk_pages: (capacity / super::PAGE / 4).max(1),
            chunk_lines: vec![0; units.len()],
            first_unit,
            units,
            sizes,
            refs,
            capacity,
            platform,
            search,
            initial_placement,
            profile_iterations,
            iterations: prog.iterations,
            profile: Vec::new(),
            moves: None,
            once: Vec::new(),
            writes,
            phases: prog.phases.len(),
            decided: "not decided".into(),
            // the simulator's clock has no jitter floor
            guard: RegressionGuard::new(DEFAULT_JUDGE, 0.0),
            adopted_at: profile_iterations,
            dram: Vec::new(),
            prev: None,
            uses: Vec::new(),
            unit_writes: Vec::new(),
            iter_times: vec![0.0; prog.phases.len()],
            measured_exposure: false,
            calibrated: false,
            iter_waits: vec![0.0; prog.phases.len()],
            profiled_times: Vec::new(),
            plan_quiet: Vec::new(),
            observed: Vec::new(),
            learned: Vec::new(),
            observe_next: false,
            fill: false,
            regular: (0..obj_sizes.len()).map(|o| regular(prog, o)).collect(),
        }
    }

    /// This policy with the remainder fill on or off (off: the planner
    /// before `unimem::fill`, units whole or in the §3.4.2 chunks only).
    /// On: when the decided plan leaves DRAM free in every phase, the
    /// leading pages of the regular unit the models predict best there are
    /// cut off as a unit of their own and kept in DRAM (`fill_plan`).
    pub fn with_fill(mut self, on: bool) -> Self {
        self.fill = on;
        self
    }

    /// This policy with the measured exposure on or off (off: the thesis's
    /// full exposure, the behaviour before `unimem::exposure`). On: once
    /// the regression guard has judged the first plan, each phase's
    /// exposure is learned from the profiled iteration's and the plan's
    /// quiet iterations' phase times, and the plan is decided again from
    /// where the units are with the calibrated models.
    pub fn with_measured_exposure(mut self, on: bool) -> Self {
        self.measured_exposure = on;
        self
    }

    /// The problem the decisions solve, from the profile, with
    /// `iterations` left and per-phase `exposure` (empty: full).
    fn problem(&self, iterations: f64, exposure: Vec<f64>) -> Problem {
        Problem {
            sizes: self.sizes.clone(),
            phases: self.profile.clone(),
            platform: self.platform.clone(),
            capacity: self.capacity,
            iterations,
            exposure,
        }
    }

    /// The plan the configured search finds for `problem` from `start`.
    fn search_plan(
        &self,
        problem: &Problem,
        start: &BTreeSet<ObjId>,
    ) -> (Search, Vec<BTreeSet<ObjId>>) {
        let n = problem.phases.len();
        match self.search {
            SearchSpec::Both => {
                let p = decide(problem, start);
                (p.search, p.dram)
            }
            SearchSpec::Local => (
                Search::Local,
                settle(problem, &local_search(problem, start)),
            ),
            SearchSpec::Global => (Search::Global, vec![global_search(problem, start); n]),
        }
    }

    /// The units wholly in DRAM now.
    fn resident(&self, v: &dyn SpaceView) -> BTreeSet<ObjId> {
        (0..self.units.len())
            .filter(|&u| {
                let un = self.units[u];
                (un.first..un.first + un.pages).all(|p| v.page_tier(un.obj, p) == Tier::Dram)
            })
            .collect()
    }

    /// The decision at the end of the profiled iterations (driver
    /// `decide_now`): plan from where the objects are, the cyclic schedule,
    /// and one-time moves to the set the schedule has resident when an
    /// iteration starts (evictions first, then promotions by the phase
    /// that first needs them; see the module doc).
    /// Each phase's DRAM set as unit labels, for the decision text.
    fn set_labels(&self, dram: &[BTreeSet<usize>]) -> Vec<String> {
        dram.iter()
            .map(|s| {
                s.iter()
                    .map(|&u| self.units[u].label())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect()
    }

    fn decide_now(&mut self, v: &dyn SpaceView) {
        let start: BTreeSet<ObjId> = (0..self.units.len())
            .filter(|&u| {
                let un = self.units[u];
                (un.first..un.first + un.pages).all(|p| v.page_tier(un.obj, p) == Tier::Dram)
            })
            .collect();
        let problem = Problem {
            sizes: self.sizes.clone(),
            phases: self.profile.clone(),
            platform: self.platform.clone(),
            capacity: self.capacity,
            iterations: self.iterations.saturating_sub(self.profile_iterations) as f64,
            exposure: Vec::new(),
        };
        let n = problem.phases.len();
        let (search, dram) = match self.search {
            SearchSpec::Both => {
                let p = decide(&problem, &start);
                (p.search, p.dram)
            }
            SearchSpec::Local => (
                Search::Local,
                settle(&problem, &local_search(&problem, &start)),
            ),
            SearchSpec::Global => (Search::Global, vec![global_search(&problem, &start); n]),
        };
        let (problem, dram, start, filled) = self.fill_plan(problem, dram, start);
        let predicted = predict(&problem, &dram, &start);
        // the model's view of the alternatives the user compares against
        // (docs/notebook/unimem.md, "Why the 0.5x nek-eddy plan was accepted"): the plan's
        // per-iteration split, and leaving everything in place / slow
        let (lost, exposed) = per_iteration(&problem, &dram);
        let (ex_in, ex_out) = exposed_split(&problem, &dram);
        let in_place = predict(&problem, &vec![start.clone(); n], &start);
        let slow_only = predict(&problem, &vec![BTreeSet::new(); n], &start);
        let uses: Vec<Vec<bool>> = (0..self.sizes.len()).map(|o| problem.uses(o)).collect();
        let (moves, early) = schedule_checked(&dram, &uses, &self.sizes, self.capacity);
        // writes per unit: a chunk is written where its object is
        let unit_writes: Vec<Vec<bool>> = self
            .units
            .iter()
            .map(|un| self.writes[un.obj].clone())
            .collect();
        self.once = transition(&start, &dram, &moves, &uses, &unit_writes);
        // the placement replaced: everything where it was, no moves
        self.prev = Some((vec![start.clone(); n], Vec::new()));
        self.guard.adopted();
        self.plan_quiet.clear();
        let sets = self.set_labels(&dram);
        let chunked: BTreeSet<usize> = self
            .units
            .iter()
            .filter(|u| u.chunk.is_some())
            .map(|u| u.obj)
            .collect();
        let chunks = if chunked.is_empty() {
            String::new()
        } else {
            format!(
                "objects {} in chunks of {} KiB (o.k = chunk k of object o), ",
                chunked
                    .iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
                self.chunk_pages * super::PAGE / 1024
            )
        };
        self.decided = format!(
            "{chunks}{} search, predicted {:.3} ms (per iteration {:.3} lost + {:.3} exposed \
             = {:.3} promotions + {:.3} evictions; in place {:.3}, all slow {:.3}), \
             {} moves per iteration{}, DRAM sets [{}]{filled}",
            if search == Search::Local {
                "local"
            } else {
                "global"
            },
            predicted * 1e3,
            lost * 1e3,
            exposed * 1e3,
            ex_in * 1e3,
            ex_out * 1e3,
            in_place * 1e3,
            slow_only * 1e3,
            moves.len(),
            if early { "" } else { " (issued at need)" },
            sets.join(" | ")
        );
        self.moves = Some(moves);
        self.dram = dram;
        self.uses = uses;
        self.unit_writes = unit_writes;
    }

    /// The end of an enforced iteration `iter`: its phase times go to the
    /// regression guard (a quiet iteration once the one-time moves of the
    /// last switch are all issued and waited for; before that, the
    /// switch's cost), and a plan measured slower than the placement it
    /// replaced is reverted: the old plan's schedule again, one-time moves
    /// from where the units are now, and the rejected plan remembered.
    fn judge(&mut self, iter: u32, v: &dyn SpaceView) {
        let times = std::mem::replace(&mut self.iter_times, vec![0.0; self.phases]);
        let first_step = (iter.saturating_sub(self.adopted_at) as usize) * self.phases;
        // steady once the one-time moves are issued and waited for, and,
        // for a schedule with moves, after its first cycle (the first
        // iteration has none of the copies the previous one issues for it)
        let cycled = self.moves.as_ref().is_none_or(Vec::is_empty) || first_step > 0;
        let settled = cycled
            && self
                .once
                .iter()
                .all(|m| m.issue.max(m.wait.unwrap_or(0)) < first_step);
        let waits = std::mem::replace(&mut self.iter_waits, vec![0.0; self.phases]);
        if !settled {
            self.guard.switching(times.iter().sum());
            return;
        }
        let remaining = f64::from(self.iterations.saturating_sub(iter + 1));
        let judging = self.guard.judging();
        let verdict = self.guard.quiet(&times, Some(remaining));
        if judging {
            self.plan_quiet
                .push(times.iter().zip(&waits).map(|(t, w)| t - w).collect());
        }
        if self.observe_next {
            if let Verdict::Keep(c) | Verdict::KeepNoPayback(c) | Verdict::Revert(c) = &verdict {
                self.observe_next = false;
                self.observe_plan(iter, c.sigma);
            }
        }
        if self.measured_exposure && !self.calibrated {
            if let Verdict::Keep(c) | Verdict::KeepNoPayback(c) | Verdict::Revert(c) = &verdict {
                self.calibrated = true;
                let reverted = matches!(verdict, Verdict::Revert(_));
                if self.recalibrate(iter, c.sigma, reverted, v) {
                    return;
                }
            }
        }
        let (Verdict::Revert(c) | Verdict::KeepNoPayback(c)) = &verdict else {
            return;
        };
        let ms = |s: f64| s * 1e3;
        let what = if matches!(verdict, Verdict::Revert(_)) {
            "reverted"
        } else {
            "kept (no payback)"
        };
        self.decided += &format!(
            "; guard at iteration {iter}: {:.3} ms/iteration measured vs {:.3} before (sigma {:.3}, phases slower {:?}, switch {:.3} ms), {what}",
            ms(c.after_s),
            ms(c.before_s),
            c.sigma,
            c.slower_phases,
            ms(c.switch_s)
        );
        let Some((dram, moves)) = self.prev.take().filter(|_| what == "reverted") else {
            return;
        };
        let now: BTreeSet<ObjId> = (0..self.units.len())
            .filter(|&u| {
                let un = self.units[u];
                (un.first..un.first + un.pages).all(|p| v.page_tier(un.obj, p) == Tier::Dram)
            })
            .collect();
        self.guard.reject(&self.dram);
        self.once = transition(&now, &dram, &moves, &self.uses, &self.unit_writes);
        self.adopted_at = iter + 1;
        self.dram = dram;
        self.moves = Some(moves);
    }
}

impl PhasePolicy for UnimemPolicy {
    fn initial(&mut self) -> Vec<u64> {
        let mut out = vec![0; self.first_unit.len()];
        if self.initial_placement {
            let chosen = initial_placement_max_refs(&self.sizes, &self.refs, self.capacity);
            // an object's chosen chunks as its leading pages: its chunks
            // have equal references per page, so which of them is the same
            // to the criterion, and placement is by leading pages
            for (u, un) in self.units.iter().enumerate() {
                if chosen.contains(&u) {
                    out[un.obj] += un.pages;
                }
            }
        }
        out
    }

    fn phase_start(&mut self, iter: u32, phase: usize, v: &dyn SpaceView) -> PhaseStart {
        let Some(moves) = &self.moves else {
            return PhaseStart::default();
        };
        // phases since the decision: the one-time moves' clock
        // (`OnceMove::issue` / `wait`, from phase 0 of the first enforced
        // iteration; `n` is phase 0 of the next)
        let step =
            (iter.saturating_sub(self.adopted_at) as usize).saturating_mul(self.phases) + phase;
        let mut out = PhaseStart::default();
        for m in self.once.iter().filter(|m| m.issue == step) {
            out.moves.push(self.units[m.obj].req(m.to));
        }
        for m in moves.iter().filter(|m| m.issue == phase) {
            out.moves.push(self.units[m.obj].req(m.to));
        }
        // The driver waits for the promotions this phase needs: the
        // schedule's, and the one-time promotions waited for here. An
        // object this phase writes while a move of it is pending also
        // waits: the real runtime write-protects it during the copy
        // (readers go on with the old copy).
        let mut wait: BTreeSet<usize> = moves
            .iter()
            .filter(|m| m.needed_by == phase && m.to == Tier::Dram)
            .map(|m| self.units[m.obj].obj)
            .chain(
                self.once
                    .iter()
                    .filter(|m| m.to == Tier::Dram && m.wait == Some(step))
                    .map(|m| self.units[m.obj].obj),
            )
            .collect();
        let writes = |o: usize| self.writes[o].get(phase).copied().unwrap_or(false);
        for o in 0..self.writes.len() {
            if writes(o) && !v.settled(o) {
                wait.insert(o);
            }
        }
        for m in &out.moves {
            if writes(m.obj) {
                wait.insert(m.obj);
            }
        }
        out.wait = wait.into_iter().collect();
        out
    }

    fn phase_end(&mut self, iter: u32, phase: usize, obs: &PhaseObs, v: &dyn SpaceView) {
        if self.moves.is_some() {
            if let Some(t) = self.iter_times.get_mut(phase) {
                *t = obs.time;
            }
            if let Some(w) = self.iter_waits.get_mut(phase) {
                *w = obs.wait;
            }
            if phase + 1 == self.phases {
                self.judge(iter, v);
            }
            return;
        }
        if iter >= self.profile_iterations {
            return;
        }
        // a profiled iteration is quiet (sampling is free here) and runs
        // under the placement the decision will replace
        if let Some(t) = self.iter_times.get_mut(phase) {
            *t = obs.time;
        }
        if phase + 1 == self.phases {
            let times = std::mem::replace(&mut self.iter_times, vec![0.0; self.phases]);
            self.guard.quiet(&times, None);
        }
        if phase == 0 {
            self.profiled_times.clear();
        }
        self.profiled_times.push(obs.time - obs.wait);
        if phase == 0 {
            self.profile.clear();
        }
        // Every LLC miss is a sample: #samples_with_data_accesses of an
        // object is its miss count, #samples the phase's (Eq. 3.1).
        let lines: Vec<u64> = self
            .units
            .iter()
            .enumerate()
            .map(|(u, un)| match un.chunk {
                Some(_) => self.chunk_lines[u],
                None => obs.lines.get(un.obj).copied().unwrap_or(0),
            })
            .collect();
        self.chunk_lines.iter_mut().for_each(|l| *l = 0);
        let objs: BTreeMap<ObjId, ObjPhase> = lines
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(u, &n)| {
                (
                    u,
                    ObjPhase {
                        accesses: n as f64,
                        samples: n as f64,
                    },
                )
            })
            .collect();
        self.profile.push(PhaseProfile {
            time: obs.time,
            samples: obs.lines.iter().sum::<u64>() as f64,
            objs,
        });
        if iter + 1 == self.profile_iterations && phase + 1 == self.phases {
            self.decide_now(v);
        }
    }

    fn summary(&self) -> String {
        self.decided.clone()
    }

    /// Per-chunk profiling of the profiled iteration: the lines of each
    /// chunked object's pages, summed per chunk.
    fn tick(&mut self, _now: f64, heat: &mut [Vec<u32>], _v: &dyn SpaceView) -> Vec<MoveReq> {
        if self.moves.is_some() {
            return Vec::new();
        }
        for (u, un) in self.units.iter().enumerate() {
            if un.chunk.is_none() || self.first_unit[un.obj] != u {
                continue;
            }
            let Some(h) = heat.get_mut(un.obj) else {
                continue;
            };
            for (p, c) in h.iter_mut().enumerate() {
                let k = u + p / self.chunk_pages as usize;
                if let Some(l) = self.chunk_lines.get_mut(k) {
                    *l += u64::from(*c);
                }
                *c = 0;
            }
        }
        Vec::new()
    }

    fn wants_heat(&self) -> bool {
        self.units.iter().any(|u| u.chunk.is_some())
    }
}

#[path = "unimem_exposure.rs"]
mod exposure;

#[path = "unimem_fill.rs"]
mod fill;

#[cfg(test)]
#[path = "unimem_tests.rs"]
mod tests;

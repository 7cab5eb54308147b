//! The Unimem runtime loop (imperative shell around [`crate::unimem`]):
//! iteration 1 is profiled, iteration 2 timed, its end decides, later ones enforce
//! (thesis §3.3 workflow). Phase boundaries come from the MPI interposer
//! (`mpi/memtamer_mpi.c`) through [`Driver::boundary`]; the main-loop
//! top from [`Driver::iteration`] (the thesis's `unimem_start`).
//!
//! Each profiled iteration is followed by one *timing* iteration with no
//! sampler and nothing moving ([`Driver::quiet_times`]), whose end decides:
//! its phase times, not the profiled iteration's, are the `time` of
//! Eq. 3.1 and the overlap windows of Eq. 3.3, and the guard's reference.
//!
//! Profiling runs a sampler thread that ticks the protection-fault
//! profiler every `tick`; each phase's samples become a
//! [`PhaseProfile`]: page visits × (page / cache line) stand for
//! `#data_access` (a streaming assumption), faults for samples.

use crate::budget::decision_budget_s;
use crate::decision::{thread_cpu_s, Decided, Pending};
mod guarded;
mod plan_view;
mod quiet;
pub use crate::drift::new_objects_reprofile;
use crate::drift::{DriftMonitor, DEFAULT_BASELINE, DEFAULT_RUN};
use crate::sampling::Sampler;
use crate::unimem::model::{ObjPhase, PhaseProfile, Platform};
use crate::unimem::plan::{Plan, Problem};
use crate::unimem::profile_file::PhaseClock;
use crate::unimem::schedule::Move;
use crate::unimem::transition::OnceMove;
use crate::{Tier, TierRuntime};
pub use quiet::quiet_profile;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

mod types;
pub use types::{DriverConfig, DriverStats};

pub use crate::platform::{
    DEFAULT_DRAM_BW, DEFAULT_DRAM_LATENCY_S, DEFAULT_SLOW_BW_DIV, DEFAULT_SLOW_LAT_MUL,
};

enum Mode {
    Idle,
    /// The iteration after a profiled one: phase times without the
    /// sampler's faults (see [`Driver::quiet_times`]).
    Timing,
    Profiling,
    /// A decision is being made off the application thread; nothing is
    /// moved meanwhile.
    Deciding,
    Enforcing,
}

/// The per-process Unimem loop.
pub struct Driver {
    rt: Arc<TierRuntime>,
    cfg: DriverConfig,
    mode: Mode,
    phase: usize,
    phase_start: Instant,
    profile: Vec<PhaseProfile>,
    times: Vec<f64>,
    times_now: Vec<f64>,
    /// The current enforced iteration's waits for moves, per phase.
    waits_now: Vec<f64>,
    /// Whether enforced iterations' phase times mean the workload changed.
    drift: DriftMonitor,
    /// The platform of the last decision (its measured copy bandwidths).
    used: Platform,
    last_copy_ns: u64,
    last_wait_s: f64,
    /// Phase times of the timing iteration being run, and of the last one
    /// completed (parallel to `profile` when the phase counts agree).
    timing: Vec<f64>,
    quiet: Vec<f64>,
    /// The profiled objects (the plan's object indices): address and
    /// registry id ([`crate::ObjectView::id`]), so an object allocated at a
    /// freed one's address is not taken for it.
    addrs: Vec<usize>,
    ids: Vec<u64>,
    /// Iterations enforced since profiling last began, and how many of
    /// them must pass before objects the profile did not see trigger a
    /// re-profile ([`new_objects_reprofile`]).
    enforced: u64,
    new_gap: u64,
    plan: Option<Plan>,
    /// The decision being made, if any ([`Pending`]).
    pending: Option<Pending>,
    moves: Vec<Move>,
    /// One-time moves of the last decision
    /// ([`crate::unimem::transition::transition`]) and the phases enforced
    /// since it (their clock).
    once: Vec<OnceMove>,
    once_step: usize,
    sampler: Option<Sampler>,
    /// Profiled phases closed (the paced sampler re-arms after each).
    phases_closed: Arc<std::sync::atomic::AtomicU64>,
    stats: DriverStats,
    shares: BTreeMap<usize, f64>,
    /// Per profiled phase, its call and CPU times (parallel to `profile`);
    /// the current phase's call times and the thread's CPU clock at its
    /// start.
    clocks: Vec<PhaseClock>,
    call_s: f64,
    call_cpu_s: f64,
    phase_cpu: f64,
    /// The iteration being profiled (1-based) and whether its profile has
    /// not been written yet.
    profiled_iteration: u64,
    profile_fresh: bool,
    profile_out: Option<ProfileOut>,
    /// Name and page-rounded size of each profiled object (`addrs`), taken
    /// when profiling begins or when the object first shows up during the
    /// profiled iteration: an object freed before the decision keeps them
    /// in the recording.
    profiled_objs: Vec<(String, u64)>,
    /// The measured regression guard's state ([`guarded`]).
    guarded: guarded::State,
    /// Address sampling (PEBS) instead of the fault sampler, if chosen
    /// ([`crate::pebs`]; the default: none, the fault sampler).
    pub access: crate::pebs::AccessProfiler,
}

/// Where [`Driver`] writes each fresh profile (`memtamer-phase-profile`,
/// [`crate::unimem::profile_file`]) for the simulator to replay (issue 20
/// item 5): `<prefix>.rank<R>.iter<K>`, or `<prefix>.pid<PID>.iter<K>`
/// outside MPI, one file per rank and profiled iteration, so ranks and
/// re-profiles never overwrite one another.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileOut {
    /// Path prefix (`MEMTAMER_TIER_PROFILE_OUT`).
    pub prefix: String,
    /// `(rank, size)` in `MPI_COMM_WORLD`, when known.
    pub rank: Option<(u32, u32)>,
}

impl ProfileOut {
    /// The file of the profile of iteration `iteration`.
    pub fn path(&self, iteration: u64) -> String {
        match self.rank {
            Some((r, _)) => format!("{}.rank{r}.iter{iteration}", self.prefix),
            None => format!("{}.pid{}.iter{iteration}", self.prefix, std::process::id()),
        }
    }
}

impl Driver {
    /// A loop over `rt`'s objects.
    pub fn new(rt: Arc<TierRuntime>, cfg: DriverConfig) -> Self {
        // no decision yet: no copy is slower than what it assumed
        let used = cfg.platform.with_copy_bw(f64::INFINITY);
        Driver {
            rt,
            mode: Mode::Idle,
            phase: 0,
            phase_start: Instant::now(),
            profile: Vec::new(),
            times: Vec::new(),
            times_now: Vec::new(),
            waits_now: Vec::new(),
            drift: DriftMonitor::new(cfg.drift, DEFAULT_BASELINE, DEFAULT_RUN),
            used,
            last_copy_ns: 0,
            last_wait_s: 0.0,
            timing: Vec::new(),
            quiet: Vec::new(),
            addrs: Vec::new(),
            ids: Vec::new(),
            enforced: 0,
            new_gap: 1,
            plan: None,
            pending: None,
            moves: Vec::new(),
            once: Vec::new(),
            once_step: 0,
            sampler: None,
            phases_closed: Default::default(),
            stats: DriverStats::default(),
            shares: BTreeMap::new(),
            clocks: Vec::new(),
            call_s: 0.0,
            call_cpu_s: 0.0,
            phase_cpu: 0.0,
            profiled_iteration: 0,
            profile_fresh: false,
            profile_out: None,
            profiled_objs: Vec::new(),
            guarded: Default::default(),
            access: Default::default(),
            cfg,
        }
    }

    /// Writes every fresh profile (not the re-decisions on the same one)
    /// to `out` (see [`ProfileOut`]).
    pub fn record_profiles(&mut self, out: ProfileOut) {
        self.profile_out = Some(out);
    }

    /// The MPI call that began the current phase has returned (the
    /// interposer calls it after the `PMPI_` entry point): while
    /// profiling, the phase's time so far is that call's, recorded apart
    /// from the computation so that a replay can tell them apart.
    pub fn call_done(&mut self) {
        if matches!(self.mode, Mode::Profiling) {
            self.call_s = self.phase_start.elapsed().as_secs_f64();
            self.call_cpu_s = thread_cpu_s() - self.phase_cpu;
        }
    }

    /// Totals so far.
    pub fn stats(&self) -> DriverStats {
        self.stats.clone()
    }

    /// The knobs it runs with (the report shows `helper`).
    pub fn config(&self) -> &DriverConfig {
        &self.cfg
    }

    /// Each profiled object's share of the sampled accesses of the last
    /// profiled iteration (all phases), by address; empty before the first
    /// decision. What `memtamer tier status` shows as "access".
    pub fn access_shares(&self) -> &BTreeMap<usize, f64> {
        &self.shares
    }

    /// The plan in force, if any.
    pub fn plan(&self) -> Option<&Plan> {
        self.plan.as_ref()
    }

    /// One profiling tick from the caller's thread (only while profiling).
    pub fn tick(&mut self) {
        if matches!(self.mode, Mode::Profiling) {
            self.rt.profile_tick(self.cfg.pages_per_tick);
        }
    }

    fn start_sampler(&mut self) {
        if self.access.start(self.cfg.tick) {
            return;
        }
        if self.cfg.tick.is_zero() {
            self.rt.profile_tick(0);
            self.rt.profile_reset();
            self.rt.profile_tick(self.cfg.pages_per_tick);
            return;
        }
        self.rt.profile_tick(0);
        self.rt.profile_reset();
        // No sampler thread: profiling yields no samples and the plan keeps
        // everything where it is (honest degradation, not an abort).
        let c = &self.cfg;
        self.sampler = Sampler::start(
            &self.rt,
            c.tick,
            c.pages_per_tick,
            c.pace,
            &self.phases_closed,
        );
    }

    fn stop_sampler(&mut self) {
        self.access.stop();
        if let Some(r) = self.sampler.take().and_then(Sampler::stop) {
            self.stats.sample_ticks += r.ticks;
            self.stats.sampler_cpu_s += r.cpu_s;
        }
    }

    fn close_profiled_phase(&mut self) {
        // Both clocks before the profiler's own work below.
        let t_close = Instant::now();
        let time = self.phase_start.elapsed().as_secs_f64();
        self.stats.profiled_s += time;
        let cpu_s = thread_cpu_s() - self.phase_cpu;
        let est = self.rt.profile_take();
        self.rt.profile_reset();
        self.phases_closed.fetch_add(1, Ordering::SeqCst);
        // Objects allocated since profiling began were armed by the sampler
        // like the others: they join the profiled set here, so their
        // samples are kept (issue 20: they used to be dropped).
        self.adopt_new_objects();
        let lines_per_page = crate::guard::page_size() as f64 / self.cfg.platform.cacheline;
        let total: f64 = est.iter().map(|e| e.faults as f64).sum();
        self.stats.sample_faults += est.iter().map(|e| e.faults).sum::<u64>();
        self.stats.sample_armed += est.iter().map(|e| e.armed).sum::<u64>();
        self.stats.profiled_call_s += self.call_s;
        let mut ph = PhaseProfile {
            time,
            samples: total,
            objs: Default::default(),
        };
        for e in est.iter().filter(|e| e.faults > 0) {
            // the newest object at that address (an older one was freed)
            if let Some(id) = self.addrs.iter().rposition(|&a| a == e.addr) {
                ph.objs.insert(
                    id,
                    ObjPhase {
                        accesses: e.visits * lines_per_page,
                        samples: e.faults as f64,
                    },
                );
            }
        }
        self.access.fill_phase(&self.rt, &self.ids, &mut ph);
        self.profile.push(ph);
        self.clocks.push(PhaseClock {
            call_s: std::mem::take(&mut self.call_s),
            cpu_s,
            call_cpu_s: std::mem::take(&mut self.call_cpu_s),
        });
        self.stats.profile_s += t_close.elapsed().as_secs_f64();
    }

    /// Appends every live object not yet in the profiled set (in the
    /// registry's order) to it.
    fn adopt_new_objects(&mut self) {
        let page = crate::guard::page_size() as u64;
        for o in self.rt.objects() {
            if !self.ids.contains(&o.id) {
                self.addrs.push(o.addr);
                self.ids.push(o.id);
                let size = (o.size as u64).div_ceil(page) * page;
                self.profiled_objs.push((o.name.clone(), size));
            }
        }
    }

    /// Live objects that are not in the profiled set.
    fn unseen_objects(&self) -> usize {
        self.rt
            .objects()
            .iter()
            .filter(|o| !self.ids.contains(&o.id))
            .count()
    }

    /// The address of profiled object `obj` if that very object is still
    /// live (not freed, not replaced by a new object at its address).
    fn live_addr(&self, objs: &[crate::ObjectView], obj: usize) -> Option<usize> {
        let (&a, &id) = (self.addrs.get(obj)?, self.ids.get(obj)?);
        objs.iter().any(|o| o.addr == a && o.id == id).then_some(a)
    }

    fn begin_profiling(&mut self) {
        let objs = self.rt.objects();
        self.addrs = objs.iter().map(|o| o.addr).collect();
        self.ids = objs.iter().map(|o| o.id).collect();
        self.enforced = 0;
        let page = crate::guard::page_size() as u64;
        self.profiled_objs = objs
            .iter()
            .map(|o| (o.name.clone(), (o.size as u64).div_ceil(page) * page))
            .collect();
        self.profile.clear();
        self.clocks.clear();
        self.call_s = 0.0;
        self.call_cpu_s = 0.0;
        self.profiled_iteration = self.stats.iterations;
        self.profile_fresh = true;
        self.plan = None;
        // a decision still being made is for the old profile: dropped (its
        // thread ends on its own and touches nothing of the runtime)
        self.drop_pending();
        self.moves.clear();
        self.mode = Mode::Profiling;
        self.start_sampler();
    }

    /// Starts a decision on the closed profile and adopts it at once if it
    /// was made inline.
    fn decide_now(&mut self) {
        let t_decide = Instant::now();
        let w_decide = self.stats.wait_s;
        self.start_decision();
        self.stats.decide_s += t_decide.elapsed().as_secs_f64() - (self.stats.wait_s - w_decide);
        self.try_adopt();
    }

    fn drop_pending(&mut self) {
        if self.pending.take().is_some() {
            self.stats.decisions_dropped += 1;
        }
    }

    /// Adopts the pending decision if it is made (never waits for it).
    fn try_adopt(&mut self) {
        let Some(p) = self.pending.take() else {
            return;
        };
        let t = Instant::now();
        match p.try_take() {
            Ok((d, cpu)) => {
                self.stats.decide_thread_s += cpu;
                self.adopt(d);
            }
            Err(Some(p)) => self.pending = Some(p),
            // the decision thread panicked: no plan, the placement stays
            Err(None) => {
                self.drift.restart();
                self.mode = Mode::Enforcing;
            }
        }
        self.stats.decide_s += t.elapsed().as_secs_f64();
    }

    fn adopt(&mut self, d: Decided) {
        let d = self.guard_adopt(d);
        // One-time moves from the placement the decision started from (it
        // still holds: nothing moves while deciding) to the plan's, issued
        // and waited for phase by phase from the next enforced phase 0
        // (shared with the simulator).
        self.once = d.once;
        self.once_step = 0;
        self.stats.decisions += 1;
        self.stats.last_plan = Some((
            if d.plan.search == crate::unimem::plan::Search::Local {
                "local"
            } else {
                "global"
            }
            .into(),
            d.plan.predicted,
        ));
        // Phase times of a profiled iteration include the sampling faults;
        // the drift baseline is the first quiet enforced iterations instead.
        self.drift.restart();
        self.plan = Some(d.plan);
        self.moves = d.moves;
        self.mode = Mode::Enforcing;
    }

    fn start_decision(&mut self) {
        self.stop_sampler();
        // Decide from where objects really are: drain moves of an older plan.
        let t0 = Instant::now();
        self.rt.wait_all();
        self.stats.wait_s += t0.elapsed().as_secs_f64();
        let objs = self.rt.objects();
        // Page-rounded: the registry reserves whole pages of DRAM.
        let page = crate::guard::page_size() as u64;
        // A freed object has size 0 and is in no tier: the plan may name
        // it, but `request` and the waits skip it.
        let live: Vec<Option<&crate::ObjectView>> = self
            .addrs
            .iter()
            .zip(&self.ids)
            .map(|(a, id)| objs.iter().find(|o| o.addr == *a && o.id == *id))
            .collect();
        let sizes: Vec<u64> = live
            .iter()
            .map(|o| o.map_or(0, |o| (o.size as u64).div_ceil(page) * page))
            .collect();
        let start: BTreeSet<usize> = live
            .iter()
            .enumerate()
            .filter(|(_, o)| o.is_some_and(|o| o.tier == Tier::Dram))
            .map(|(i, _)| i)
            .collect();
        // Once copies have been made, the bandwidths measured per
        // direction replace the configured ones (the helper may share its
        // core with ranks).
        let platform = self.rt.stats().measured_platform(&self.cfg.platform);
        self.used = platform.clone();
        if self.quiet_in_use() {
            self.stats.quiet_decisions += 1;
        }
        let phases = self.decision_phases();
        let times: Vec<f64> = phases.iter().map(|p| p.time).collect();
        let problem = Problem {
            sizes,
            phases,
            platform,
            capacity: self.rt.config().dram_budget as u64,
            iterations: self.cfg.iterations,
            exposure: self.guarded.exposure.clone(),
        };
        // Issue 20 item 5: the simulator can replay this profile
        // (`memtamer sim unimem`, scenario key `profile`).
        self.guard_decision(&start, times);
        if self.profile_fresh {
            self.profile_fresh = false;
            self.write_profile();
        }
        let per_obj: Vec<f64> = (0..self.addrs.len())
            .map(|o| {
                self.profile
                    .iter()
                    .filter_map(|p| p.objs.get(&o))
                    .map(|x| x.accesses)
                    .sum()
            })
            .collect();
        let total: f64 = per_obj.iter().sum();
        self.shares = if total > 0.0 {
            self.addrs
                .iter()
                .zip(&per_obj)
                // an object with no samples: 0, not the -0.0 an empty f64 sum gives
                .map(|(&a, &x)| (a, if x > 0.0 { x / total } else { 0.0 }))
                .collect()
        } else {
            BTreeMap::new()
        };
        // the profiled iteration's time, as before quiet times (a share of
        // the run as the profile saw it)
        let iteration_s: f64 = self.profile.iter().map(|p| p.time).sum();
        // no budget: the whole search, the simulator's `decide`
        let budget = decision_budget_s(self.cfg.decision_share, self.cfg.iterations, iteration_s);
        self.times = self.profile.iter().map(|p| p.time).collect();
        // the profile's phases, whether or not its decision is adopted
        // before the run ends
        self.stats.phases = self.profile.len();
        self.moves.clear();
        self.once.clear();
        self.plan = None;
        self.mode = Mode::Deciding;
        self.pending = Some(Pending::start(
            problem,
            start,
            budget,
            self.cfg.decide_off_thread,
        ));
    }

    /// Writes the profile just decided on (best effort: a profile that
    /// cannot be written changes nothing but is reported on stderr).
    /// Objects are named and sized as when profiling began.
    fn write_profile(&self) {
        let Some(out) = &self.profile_out else {
            return;
        };
        let (names, sizes): (Vec<String>, Vec<u64>) = self.profiled_objs.iter().cloned().unzip();
        let meta = crate::unimem::profile_file::ProfileMeta {
            rank: out.rank,
            iteration: self.profiled_iteration,
            tick_ns: self.cfg.tick.as_nanos() as u64,
            pages_per_tick: self.cfg.pages_per_tick,
            page_bytes: crate::guard::page_size() as u64,
            line_bytes: self.cfg.platform.cacheline as u64,
        };
        let text = crate::unimem::profile_file::format_profile(
            &meta,
            &names,
            &sizes,
            &self.profile,
            &self.clocks,
        );
        let path = out.path(self.profiled_iteration);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!("memtamer: cannot write the phase profile {path}: {e}");
        }
    }

    /// Queues a move even if the object already looks like it is there: a
    /// move queued earlier may still change that, and the helper's FIFO
    /// turns a move to where the object already is into a no-op. Skipping
    /// on the current tier would drop an eviction whose object's promotion
    /// is still queued, and the next promotion would find DRAM full.
    /// A move of an object freed since the profile is dropped: a freed
    /// object is never touched, and an object allocated at its address
    /// later is not moved on its behalf (`objs`: a registry snapshot taken
    /// on this thread, which is the one that frees).
    fn request(&mut self, objs: &[crate::ObjectView], m: &Move) {
        if let Some(a) = self.live_addr(objs, m.obj) {
            if self.rt.request(a as *mut u8, m.to).is_ok() {
                self.stats.moves_requested += 1;
            }
        }
    }

    fn enforce(&mut self, i: usize) {
        let step = self.once_step;
        self.once_step = self.once_step.saturating_add(1);
        let issue: Vec<Move> = self
            .once
            .iter()
            .filter(|m| m.issue == step)
            .map(|m| Move {
                issue: i,
                to: m.to,
                obj: m.obj,
                needed_by: i,
            })
            .chain(self.moves.iter().filter(|m| m.issue == i).cloned())
            .collect();
        // the promotions this phase waits for (plan objects)
        let needed: Vec<usize> = self
            .moves
            .iter()
            .filter(|m| m.needed_by == i && m.to == Tier::Dram)
            .map(|m| m.obj)
            .chain(
                self.once
                    .iter()
                    .filter(|m| m.to == Tier::Dram && m.wait == Some(step))
                    .map(|m| m.obj),
            )
            .collect();
        if issue.is_empty() && needed.is_empty() {
            return;
        }
        let objs = self.rt.objects();
        for m in &issue {
            self.request(&objs, m);
        }
        let need: Vec<usize> = needed
            .into_iter()
            .filter_map(|o| self.live_addr(&objs, o))
            .collect();
        let t0 = Instant::now();
        for a in need {
            let _ = self.rt.wait(a as *mut u8);
        }
        let waited = t0.elapsed().as_secs_f64();
        self.stats.wait_s += waited;
        if let Some(w) = self.waits_now.get_mut(i) {
            *w += waited;
        }
    }

    /// Top of a main-loop iteration.
    pub fn iteration(&mut self) {
        let (t0, w0) = (Instant::now(), self.stats.wait_s);
        self.stats.iterations += 1;
        match self.mode {
            Mode::Idle => self.begin_profiling(),
            Mode::Profiling => {
                self.close_profiled_phase();
                if self.cfg.quiet_times {
                    // time the next iteration, as the profiled one ran but
                    // unsampled, and decide at its end
                    self.stop_sampler();
                    self.timing.clear();
                    self.mode = Mode::Timing;
                } else {
                    self.decide_now();
                }
            }
            Mode::Timing => {
                self.timing.push(self.phase_start.elapsed().as_secs_f64());
                self.quiet = std::mem::take(&mut self.timing);
                self.decide_now();
            }
            Mode::Deciding => self.try_adopt(),
            Mode::Enforcing => {
                let t = self.phase_start.elapsed().as_secs_f64();
                if let Some(x) = self.times_now.get_mut(self.phase) {
                    *x = t;
                }
                let now = std::mem::take(&mut self.times_now);
                let waits = std::mem::take(&mut self.waits_now);
                // Phases under 1 ms are all jitter: they do not count.
                // An iteration during which copies ran is not a timing
                // sample: the copies themselves slow it down, and re-deciding
                // on that would feed back into more copies.
                let copy_ns = self.rt.stats().copy_ns;
                let busy = copy_ns != self.last_copy_ns || self.stats.wait_s != self.last_wait_s;
                self.last_copy_ns = copy_ns;
                self.last_wait_s = self.stats.wait_s;
                // Drift (thesis §3.4.2 opt. 1) read against the host's own
                // noise: one phase out of its control limits on the same
                // side three quiet iterations in a row, with a backoff
                // ([`DriftMonitor`]).
                let reverted = self.guard_iteration(&now, &waits);
                let moved = !busy && !reverted && self.drift.observe(&now);
                // Copies slower than the model assumed (the helper shares a
                // core with the ranks, say): decide again on the same
                // profile with the measured copy bandwidths (per direction).
                let st = self.rt.stats();
                if self.cfg.recalibrate && busy && !moved && st.slower_than(&self.used, 0.5) {
                    self.stats.recalibrations += 1;
                    self.decide_now();
                }
                self.enforced += 1;
                let again = self.phase + 1 != self.times.len() || moved;
                // Objects allocated since profiling began (issue 20).
                let new = !again
                    && new_objects_reprofile(self.unseen_objects(), self.enforced, self.new_gap);
                if again || new {
                    // Re-profile this iteration (thesis §3.4.2 opt. 1).
                    let t1 = Instant::now();
                    self.rt.wait_all();
                    self.stats.wait_s += t1.elapsed().as_secs_f64();
                    self.stats.reprofiles += 1;
                    if new {
                        self.stats.new_object_reprofiles += 1;
                        self.new_gap = self.new_gap.saturating_mul(2);
                    }
                    self.begin_profiling();
                }
            }
        }
        self.phase = 0;
        self.times_now = vec![0.0; self.times.len()];
        self.waits_now = vec![0.0; self.times.len()];
        if matches!(self.mode, Mode::Enforcing) {
            self.enforce(0);
        }
        self.stats.overhead_s += t0.elapsed().as_secs_f64() - (self.stats.wait_s - w0);
        self.phase_start = Instant::now();
        if matches!(self.mode, Mode::Profiling) {
            self.phase_cpu = thread_cpu_s();
        }
    }

    /// A phase boundary (an MPI call).
    pub fn boundary(&mut self) {
        let (t0, w0) = (Instant::now(), self.stats.wait_s);
        self.stats.boundaries += 1;
        match self.mode {
            Mode::Idle | Mode::Deciding => {}
            Mode::Timing => self.timing.push(self.phase_start.elapsed().as_secs_f64()),
            Mode::Profiling => self.close_profiled_phase(),
            Mode::Enforcing => {
                let t = self.phase_start.elapsed().as_secs_f64();
                if let Some(x) = self.times_now.get_mut(self.phase) {
                    *x = t;
                }
            }
        }
        self.phase += 1;
        if matches!(self.mode, Mode::Enforcing) {
            self.enforce(self.phase);
        }
        self.stats.overhead_s += t0.elapsed().as_secs_f64() - (self.stats.wait_s - w0);
        self.phase_start = Instant::now();
        if matches!(self.mode, Mode::Profiling) {
            self.phase_cpu = thread_cpu_s();
        }
    }

    /// Stops sampling and waits for queued moves.
    pub fn finish(&mut self) {
        self.stop_sampler();
        // a decision not adopted by now is never enforced
        self.drop_pending();
        self.rt.wait_all();
    }
}

/// A driver dropped while profiling stops its sampler thread: the thread
/// holds the runtime, which would otherwise never end (`mt_tier_shutdown`
/// drops the driver, then ends the runtime).
impl Drop for Driver {
    fn drop(&mut self) {
        self.stop_sampler();
    }
}

//! The control thread's policy as a pure state machine (thesis §6.3.1,
//! "four-point search"; digest §3.2): no threads, no clocks, no counters.
//! The runtime feeds it the time and a cumulative byte counter and applies
//! the flusher count and the proactive switch it answers.
//!
//! Sample points: P1 = flushers that saturate write bandwidth (4 on
//! Optane), P2 = P1 + 1, P3 = cores − 1, P4 = cores, probed in the
//! thesis's order P1, P4, P2, P3. After measuring the
//! bandwidth at each point for one probe window, [`decide_measured`]
//! applies the digest's table, including the case the thesis leaves out,
//! with the thesis's plain "higher than" on differences larger than the
//! measurement noise; a pair whose difference lies within the noise is
//! probed again (this project's addition, [`crate::probe`]), and a pair
//! still tied afterwards is decided by the measured ends (the lead's
//! decision, [`Case::TieComparedEnds`]). When that leaves the interior of
//! [P2, P3] unmeasured, up to `interior_probes` counts inside it are
//! probed and the best kept only if it beats P1..P4 beyond the noise
//! ([`crate::interior`]; beyond the thesis, 0 turns it off). In the
//! steady state the bandwidth is sampled every T (1 s) and a change of
//! more than 20% (a phase change) starts a new search.

use crate::interior::{accept, next_point, refines, MAX_INTERIOR_PROBES};
use crate::probe::{compare, within_band, Estimate, Verdict};
pub use crate::search_record::Case;
use crate::search_record::{PointReading, ProbeReading, SearchCause, SearchOutcome, SearchRecord};
use std::time::Duration;

/// A fixed 2% noise guard for [`ControlConfig::tolerance`] (this project's
/// earlier default; the thesis's rule is 0.0, the default now that the
/// search measures its own noise: [`ControlConfig::noise_z`]). With it the
/// simulated search read +1% rises from P1 to P2 as "no gain" and stayed
/// at P1 in 6 of 8 cases (docs/notebook/ribbon.md, "The thesis's strict >,
/// measured").
pub const NOISE_GUARD_TOLERANCE: f64 = 0.02;

/// The controller's knobs (thesis defaults, except the tolerance).
#[derive(Clone, Debug, PartialEq)]
pub struct ControlConfig {
    /// Flushers that saturate write bandwidth: P1 (thesis: 4 on Optane).
    pub p1: usize,
    /// Hardware threads: P4 (thesis: 24).
    pub cores: usize,
    /// Relative bandwidth change that starts a new search (thesis: 20%).
    pub change_threshold: f64,
    /// Steady-state sampling interval T (thesis: 1 s, Table 6.5).
    pub interval: Duration,
    /// How long each of the four points is measured per probe (the
    /// thesis does not say; 100 ms here).
    pub probe: Duration,
    /// Relative difference below which two bandwidths count as equal
    /// (equal means "one more flusher did not help", so the smaller count
    /// wins). The thesis compares with a plain "higher than" (§6.3.1: "If
    /// BW_2 is higher than BW_1, and BW_4 is also higher than BW_3 ...
    /// selects NUM_thr to be P4"), i.e. 0.0, the default. A fixed guard
    /// such as [`NOISE_GUARD_TOLERANCE`] widens the noise band below.
    pub tolerance: f64,
    /// Slices each probe window is read in; the spread of their rates is
    /// the probe's noise (this project's addition; 1 = one reading per
    /// probe, no spread, the thesis's plain comparison).
    pub slices: u32,
    /// Noise band in standard errors of a difference: two points whose
    /// bandwidths differ by less are "unsure" and probed again (this
    /// project's addition; 0 turns it off).
    pub noise_z: f64,
    /// Most extra probe rounds of an unsure pair (P1, P2) or (P3, P4);
    /// a pair still unsure after them counts as "not higher" (the thesis's
    /// rule on a difference the probes cannot tell from noise).
    pub reprobes: u32,
    /// Most extra probes inside (P2, P3) after the table answered an end
    /// from ties or a dip ([`crate::interior`]; this project's addition,
    /// beyond the thesis). 0 is the thesis's four-point search exactly;
    /// the default is [`crate::interior::DEFAULT_INTERIOR_PROBES`].
    pub interior_probes: u32,
}

impl ControlConfig {
    /// The thesis's settings for a machine with `cores` hardware threads.
    pub fn thesis(cores: usize) -> ControlConfig {
        ControlConfig {
            p1: 4,
            cores,
            change_threshold: 0.20,
            interval: Duration::from_secs(1),
            probe: Duration::from_millis(100),
            tolerance: 0.0,
            slices: 5,
            noise_z: 2.0,
            reprobes: 2,
            interior_probes: crate::interior::DEFAULT_INTERIOR_PROBES,
        }
    }

    /// The same settings with the thesis's four-point search exactly: no
    /// probe inside (P2, P3) after the table ([`crate::interior`]).
    pub fn four_point_only(self) -> ControlConfig {
        ControlConfig {
            interior_probes: 0,
            ..self
        }
    }

    /// One slice of a probe window.
    fn slice(&self) -> Duration {
        self.probe / self.slices.max(1)
    }
}

/// P1..P4, clamped so that 1 <= P1 <= P2 <= P4, P1 <= P3 <= P4.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Points {
    /// Flushers that saturate bandwidth.
    pub p1: usize,
    /// P1 + 1.
    pub p2: usize,
    /// Cores − 1.
    pub p3: usize,
    /// Cores.
    pub p4: usize,
}

impl Points {
    /// The four sample points (thesis §6.3.1) on `cores` hardware threads.
    pub fn new(p1: usize, cores: usize) -> Points {
        let p4 = cores.max(1);
        let p1 = p1.clamp(1, p4);
        Points {
            p1,
            p2: (p1 + 1).min(p4),
            p3: p4.saturating_sub(1).max(p1),
            p4,
        }
    }

    /// The points in probe order.
    pub fn all(&self) -> [usize; 4] {
        [self.p1, self.p2, self.p3, self.p4]
    }
}

/// `a` against `b` with a relative band of `tol` of the larger.
fn verdict(a: f64, b: f64, tol: f64) -> Verdict {
    within_band(a, b, tol * a.abs().max(b.abs()))
}

/// The decision table (digest §3.2) on the bandwidths measured at P1..P4,
/// each a single number ("higher" = by more than `tol` of the larger).
pub fn decide(pts: Points, bw: [f64; 4], tol: f64) -> (usize, Case) {
    let [b1, b2, b3, b4] = bw;
    rows(
        pts,
        bw,
        verdict(b2, b1, tol),
        verdict(b4, b3, tol),
        verdict(b4, b1, tol),
    )
}

/// The decision table on measured points: "higher" and "lower" mean by
/// more than the noise band of [`compare`] (`tol` of the larger, or `z`
/// standard errors of the difference, whichever is wider); anything
/// within it is a tie.
pub fn decide_measured(pts: Points, est: &[Estimate; 4], tol: f64, z: f64) -> (usize, Case) {
    let cmp = |a: usize, b: usize| compare(&est[a], &est[b], tol, z);
    let bw = [est[0].mean(), est[1].mean(), est[2].mean(), est[3].mean()];
    rows(pts, bw, cmp(1, 0), cmp(3, 2), cmp(3, 0))
}

/// The table's rows (thesis §6.3.1, digest §3.2), given BW2 vs BW1
/// (`early`), BW4 vs BW3 (`late`) and BW4 vs BW1 (`ends`). The thesis's
/// strict rows stay as written; every pair it does not name (the dip then
/// rise, and a tie in either comparison except rise then tie) compares the
/// measured ends with the same band, P1 unless BW4 is higher.
fn rows(pts: Points, bw: [f64; 4], early: Verdict, late: Verdict, ends: Verdict) -> (usize, Case) {
    use Verdict::{Higher, Lower, Unsure};
    let by_ends = |case| {
        if ends == Higher {
            (pts.p4, case)
        } else {
            (pts.p1, case)
        }
    };
    match (early, late) {
        (Higher, Higher) => (pts.p4, Case::NoContention),
        (Higher, Lower | Unsure) => (intersection(pts, bw, false), Case::PeakBetween),
        (Lower, Lower) => (pts.p1, Case::ContentionPastP1),
        (Lower, Higher) => by_ends(Case::DipThenRise),
        (Unsure, _) | (Lower, Unsure) => by_ends(Case::TieComparedEnds),
    }
}

/// Where the rising line through (P1,BW1),(P2,BW2) meets the falling line
/// through (P3,BW3),(P4,BW4) (thesis §6.3.1), rounded and clamped to
/// [P2, P3]; degenerate point sets fall back to the better measured point.
///
/// The row presumes a line P3–P4 that falls (contention). The table also
/// lands here when BW4 rises above BW3 by no more than the noise band
/// (`late_rise` false: read as equal); a rising second line contradicts
/// the row, so it is taken flat
/// at the two points' mean, and the answer is where the rising line
/// reaches that plateau. Without this, the rise between the adjacent
/// points P3, P4 was extrapolated back over P3 − P2 flushers (42 on the
/// thesis platform): +2% from P3 to P4 made the lines meet left of P1,
/// and the clamp returned P2 for a curve still rising at P4. A fall
/// within the tolerance keeps the thesis's falling line.
fn intersection(pts: Points, bw: [f64; 4], late_rise: bool) -> usize {
    let [b1, b2, mut b3, mut b4] = bw;
    if b4 > b3 && !late_rise {
        let flat = (b3 + b4) / 2.0;
        (b3, b4) = (flat, flat);
    }
    let (x1, x2, x3, x4) = (pts.p1 as f64, pts.p2 as f64, pts.p3 as f64, pts.p4 as f64);
    let best_measured = || {
        let mut best = 0;
        for i in 1..4 {
            if bw[i] > bw[best] {
                best = i;
            }
        }
        pts.all()[best]
    };
    if x2 <= x1 || x4 <= x3 {
        return best_measured();
    }
    let a1 = (b2 - b1) / (x2 - x1);
    let a2 = (b4 - b3) / (x4 - x3);
    if a1 - a2 <= 0.0 || !(a1 - a2).is_finite() {
        return best_measured();
    }
    // b1 + a1 (x - x1) = b3 + a2 (x - x3)
    let x = (b3 - b1 + a1 * x1 - a2 * x3) / (a1 - a2);
    let lo = pts.p2.min(pts.p3);
    let hi = pts.p3.max(pts.p2);
    if !x.is_finite() {
        return best_measured();
    }
    (x.round().max(lo as f64).min(hi as f64)) as usize
}

/// What the runtime should do now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// Flusher threads to run; 0 means application threads flush
    /// themselves (no idle hardware thread, thesis §6.3.1).
    pub flushers: usize,
    /// Whether proactive flushing may run (off whenever concurrency was
    /// lowered, thesis §6.3.2 step 4).
    pub proactive: bool,
    /// What happened at this step, for statistics and logs.
    pub event: Event,
}

/// Why the decision is what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// Nothing changed.
    Hold,
    /// Measuring point `index` of a search.
    Probing {
        /// Which point (0 = P1 .. 3 = P4; [`INTERIOR`] for a count inside
        /// (P2, P3), [`crate::interior`]).
        index: usize,
    },
    /// A search ended.
    Decided {
        /// The table row that applied.
        case: Case,
    },
    /// The bandwidth moved more than the threshold: a new search starts.
    PhaseChange,
    /// No idle hardware thread: concurrency control is off.
    NoIdleCores,
}

/// The probe index ([`Event::Probing`], `ProbeReading::index`) of a count
/// inside (P2, P3) probed after the table ([`crate::interior`]).
pub const INTERIOR: usize = 4;

/// A search in progress: the points still to probe in this round
/// (`plan[pos..]`, indices 0..4 of P1..P4), what each point measured so
/// far, how many re-probe rounds ran, and, once the table has answered an
/// end, the interior probes ([`Interior`]).
#[derive(Clone, Debug, PartialEq)]
struct Search {
    plan: Vec<usize>,
    pos: usize,
    est: [Estimate; 4],
    rounds: u32,
    interior: Option<Box<Interior>>,
}

/// The probes inside (P2, P3) after the table answered `table`: each count
/// with what it measured, the last one in progress.
#[derive(Clone, Debug, PartialEq)]
struct Interior {
    table: (usize, Case),
    probed: Vec<(usize, Estimate)>,
}

impl Interior {
    fn means(&self) -> Vec<(usize, f64)> {
        self.probed.iter().map(|(m, e)| (*m, e.mean())).collect()
    }
}

/// The order of a search's first round, as indices of P1..P4: P1, P4, P2,
/// P3 (thesis §6.3.1). Each probe window follows the previous point's, so
/// the order decides which backlog a window drains: after P2 (P1 + 1
/// flushers), P3 (cores - 1) first drains what P2 left queued.
const FIRST_ROUND: [usize; 4] = [0, 3, 1, 2];

impl Search {
    fn new() -> Search {
        Search {
            // thesis §6.3.1: "first samples the bandwidth at ... P1 ...
            // Then, it chooses a sample point at the number of cores (P4)
            // ... Next, samples are taken at P2 = P1 + 1 and P3 = P4 - 1"
            plan: FIRST_ROUND.to_vec(),
            pos: 0,
            est: Default::default(),
            rounds: 0,
            interior: None,
        }
    }

    /// The point being probed (0..4).
    fn index(&self) -> usize {
        self.plan.get(self.pos).copied().unwrap_or(0)
    }
}

#[derive(Clone, Debug, PartialEq)]
enum State {
    Probing(Search),
    /// `expected`: the bandwidth the search measured at the chosen count,
    /// when that count was a probe point (checked against the first
    /// steady window, so a phase change during it is not taken as the
    /// reference).
    Steady {
        reference: Option<f64>,
        expected: Option<f64>,
    },
    Inline,
}

/// The four-point-search controller (thesis §6.3.1). Feed it with
/// [`Controller::observe`] at least every `probe` period.
#[derive(Clone, Debug)]
pub struct Controller {
    cfg: ControlConfig,
    pts: Points,
    state: State,
    flushers: usize,
    /// Proactive flushing configured at all (a sampler exists).
    proactive_allowed: bool,
    /// Proactive flushing switched on by the last decision.
    proactive: bool,
    /// Flushers chosen by the previous search (P1 before the first).
    prev_steady: usize,
    window_start: Duration,
    window_bytes: u64,
    /// When the probe window in progress began.
    probe_start: Duration,
    /// Bytes counted so far in the probe window in progress.
    probe_bytes: u64,
    searches: u64,
    /// The last search's readings and outcome ([`Controller::last_search`]);
    /// None when recording is off ([`Controller::recording`]).
    record: Option<SearchRecord>,
}

impl Controller {
    /// A controller that starts by probing P1, with proactive flushing
    /// allowed if `proactive` (it is switched off during a search so the
    /// probe measures the flushers alone).
    pub fn new(cfg: ControlConfig, now: Duration, bytes: u64, proactive: bool) -> Controller {
        let pts = Points::new(cfg.p1, cfg.cores);
        Controller {
            pts,
            state: State::Probing(Search::new()),
            flushers: pts.p1,
            proactive_allowed: proactive,
            proactive: true,
            prev_steady: pts.p1,
            window_start: now,
            window_bytes: bytes,
            probe_start: now,
            probe_bytes: 0,
            searches: 1,
            record: Some(SearchRecord::new(
                1,
                SearchCause::Start,
                now,
                pts.p1,
                pts.all(),
            )),
            cfg,
        }
    }

    /// The same controller, recording its searches ([`Controller::last_search`])
    /// only if `on`. A new controller records (the runtime keeps the last
    /// search for `Ribbon::last_search`); the simulator turns it off unless
    /// `--trace-search` asks for the searches, so that a run that reports
    /// none neither builds nor copies them. The decisions do not depend on
    /// it. Off is for good: a search already under way has no record to
    /// resume, so a later `recording(true)` leaves it off.
    pub fn recording(mut self, on: bool) -> Controller {
        if !on {
            self.record = None;
        }
        self
    }

    /// The last search started: every probe window it ran with the
    /// bandwidth read, P1..P4's estimates, why it started, and (once it
    /// ended) the table row and M it chose and the first steady window
    /// after it. What the runtime and the simulator report so that a
    /// search's choice can be checked against its readings
    /// (docs/ribbon.md, "The search's record"). None when recording is
    /// off ([`Controller::recording`]).
    pub fn last_search(&self) -> Option<&SearchRecord> {
        self.record.as_ref()
    }

    /// The sample points in use.
    pub fn points(&self) -> Points {
        self.pts
    }

    /// Searches started so far (the first one included).
    pub fn searches(&self) -> u64 {
        self.searches
    }

    /// The current decision without advancing time.
    pub fn current(&self) -> Decision {
        Decision {
            flushers: self.flushers,
            proactive: self.proactive_now(),
            event: Event::Hold,
        }
    }

    fn proactive_now(&self) -> bool {
        self.proactive_allowed && self.proactive && matches!(self.state, State::Steady { .. })
    }

    fn restart_window(&mut self, now: Duration, bytes: u64) {
        self.window_start = now;
        self.window_bytes = bytes;
    }

    fn start_search(&mut self, now: Duration, bytes: u64, cause: SearchCause) {
        self.searches += 1;
        if let Some(r) = self.record.as_mut() {
            *r = SearchRecord::new(self.searches, cause, now, self.flushers, self.pts.all());
        }
        self.probe_bytes = 0;
        self.state = State::Probing(Search::new());
        self.flushers = self.pts.p1;
        self.restart_window(now, bytes);
        self.probe_start = now;
    }

    /// The pairs (P1, P2) and (P3, P4) whose comparison is within the
    /// noise band, as the points to probe again (none for a pair of
    /// equal counts: probing the same count again tells nothing new).
    fn unsure_points(&self, est: &[Estimate; 4]) -> Vec<usize> {
        let p = self.pts.all();
        let mut plan = Vec::new();
        for (lo, hi) in [(0, 1), (2, 3)] {
            if p[lo] != p[hi]
                && compare(&est[hi], &est[lo], self.cfg.tolerance, self.cfg.noise_z)
                    == Verdict::Unsure
            {
                plan.extend([lo, hi]);
            }
        }
        plan
    }

    /// Ends `search` at `m` flushers (row `case`): switches proactive
    /// flushing by the change of M (thesis §6.3.2 step 4), enters the
    /// steady state, and records the outcome.
    fn finish(&mut self, now: Duration, search: &Search, m: usize, case: Case) -> Decision {
        let before = self.prev_steady;
        if m < before {
            self.proactive = false;
        } else if m > before {
            self.proactive = true;
        }
        self.prev_steady = m;
        self.flushers = m;
        // the last probe measured at m (P4's window wins over P3's when both
        // are m on a tiny machine; an interior count kept is its own probe)
        let interior = search.interior.as_ref();
        let expected = interior
            .and_then(|inn| inn.probed.iter().find(|(c, _)| *c == m))
            .map(|(_, e)| e.mean())
            .or_else(|| {
                (0..4)
                    .rev()
                    .find(|&i| self.pts.all()[i] == m)
                    .map(|i| search.est[i].mean())
            });
        self.state = State::Steady {
            reference: None,
            expected,
        };
        let proactive = self.proactive_now();
        if let Some(r) = self.record.as_mut() {
            let (tol, z) = (self.cfg.tolerance, self.cfg.noise_z);
            let cmp = |a: usize, b: usize| compare(&search.est[a], &search.est[b], tol, z);
            let (table_flushers, table_case) = interior.map_or((m, case), |inn| inn.table);
            r.outcome = Some(SearchOutcome {
                at: now,
                case,
                comparisons: [cmp(1, 0), cmp(3, 2), cmp(3, 0)],
                flushers: m,
                proactive,
                table_case,
                table_flushers,
            });
        }
        Decision {
            flushers: self.flushers,
            proactive,
            event: Event::Decided { case },
        }
    }

    /// Advances to `now`, given the cumulative bytes written back so far,
    /// the number of application threads currently flushing, and the
    /// hardware threads this process may use (cores minus what other
    /// processes keep busy; [`crate::idle`] measures it).
    pub fn observe(
        &mut self,
        now: Duration,
        bytes: u64,
        app_threads: usize,
        available: f64,
    ) -> Decision {
        let decision = |c: &Controller, event| Decision {
            flushers: c.flushers,
            proactive: c.proactive_now(),
            event,
        };
        // Thesis §6.3.1: without idle hardware threads control turns off.
        // A flusher needs one whole hardware thread beyond the application
        // threads; leaving inline mode needs half a thread more
        // (hysteresis against flapping on a noisy load signal).
        let needed = app_threads as f64
            + if self.state == State::Inline {
                1.5
            } else {
                1.0
            };
        if app_threads >= self.cfg.cores || available < needed {
            if self.state != State::Inline {
                self.state = State::Inline;
                self.flushers = 0;
            }
            self.restart_window(now, bytes);
            return decision(self, Event::NoIdleCores);
        }
        if self.state == State::Inline {
            self.start_search(now, bytes, SearchCause::IdleCoresBack);
            return decision(self, Event::Probing { index: 0 });
        }
        let elapsed = now.saturating_sub(self.window_start);
        let (window, probe_done) = match self.state {
            State::Probing(_) => (
                self.cfg.slice(),
                now.saturating_sub(self.probe_start) >= self.cfg.probe,
            ),
            _ => (self.cfg.interval, false),
        };
        if (elapsed < window && !probe_done) || elapsed.is_zero() {
            return decision(self, Event::Hold);
        }
        let counted = bytes.saturating_sub(self.window_bytes);
        let delta = counted as f64;
        let bw = delta / elapsed.as_secs_f64();
        self.restart_window(now, bytes);
        match self.state.clone() {
            State::Probing(mut search) => {
                let secs = elapsed.as_secs_f64();
                let (index, flushers) = match search.interior.as_mut() {
                    Some(inn) => match inn.probed.last_mut() {
                        Some((m, e)) => {
                            e.add(delta, secs);
                            (INTERIOR, *m)
                        }
                        None => (INTERIOR, self.flushers),
                    },
                    None => {
                        let index = search.index();
                        search.est[index].add(delta, secs);
                        (index, self.pts.all()[index])
                    }
                };
                self.probe_bytes = self.probe_bytes.saturating_add(counted);
                if !probe_done {
                    self.state = State::Probing(search);
                    return decision(self, Event::Hold);
                }
                if let Some(r) = self.record.as_mut() {
                    r.probes.push(ProbeReading {
                        index,
                        flushers,
                        start: self.probe_start,
                        end: now,
                        bytes: self.probe_bytes,
                    });
                    match (&search.interior, r.points.get_mut(index)) {
                        (None, Some(p)) => *p = PointReading::of(flushers, &search.est[index]),
                        (Some(inn), _) => {
                            if let Some((m, e)) = inn.probed.last() {
                                r.interior.push(PointReading::of(*m, e));
                            }
                        }
                        (None, None) => {}
                    }
                }
                self.probe_bytes = 0;
                self.probe_start = now;
                if search.interior.is_none() {
                    search.pos += 1;
                    if search.pos >= search.plan.len() && search.rounds < self.cfg.reprobes {
                        let again = self.unsure_points(&search.est);
                        if !again.is_empty() {
                            search.plan = again;
                            search.pos = 0;
                            search.rounds += 1;
                        }
                    }
                    if search.pos < search.plan.len() {
                        let next = search.index();
                        self.flushers = self.pts.all()[next];
                        self.state = State::Probing(search);
                        return decision(self, Event::Probing { index: next });
                    }
                    let (m, case) = decide_measured(
                        self.pts,
                        &search.est,
                        self.cfg.tolerance,
                        self.cfg.noise_z,
                    );
                    search.interior = Some(Box::new(Interior {
                        table: (m, case),
                        probed: Vec::new(),
                    }));
                    if self.cfg.interior_probes == 0 || !refines(case) {
                        return self.finish(now, &search, m, case);
                    }
                }
                // probing inside (P2, P3) after the table (crate::interior)
                let Some(inn) = search.interior.as_mut() else {
                    return decision(self, Event::Hold);
                };
                let budget = self.cfg.interior_probes.min(MAX_INTERIOR_PROBES) as usize;
                let next = (inn.probed.len() < budget)
                    .then(|| next_point(self.pts.p2, self.pts.p3, &inn.means()))
                    .flatten();
                if let Some(m) = next {
                    inn.probed.push((m, Estimate::default()));
                    self.flushers = m;
                    self.state = State::Probing(search);
                    return decision(self, Event::Probing { index: INTERIOR });
                }
                let (table_m, table_case) = inn.table;
                let (tol, z) = (self.cfg.tolerance, self.cfg.noise_z);
                let (m, case) = match accept(&search.est, &inn.probed, tol, z) {
                    Some(m) => (m, Case::InteriorPeak),
                    None => (table_m, table_case),
                };
                self.finish(now, &search, m, case)
            }
            State::Steady {
                reference: None,
                expected,
            } => {
                if let Some(e) = expected {
                    if (bw - e).abs() / e.max(1.0) > self.cfg.change_threshold {
                        // the phase changed while the reference was taken
                        let cause = SearchCause::ReferenceMismatch {
                            expected: e,
                            measured: bw,
                        };
                        self.start_search(now, bytes, cause);
                        return decision(self, Event::PhaseChange);
                    }
                }
                self.state = State::Steady {
                    reference: Some(bw),
                    expected,
                };
                if let Some(r) = self.record.as_mut() {
                    r.reference = Some(bw);
                }
                decision(self, Event::Hold)
            }
            State::Steady {
                reference: Some(r), ..
            } => {
                let change = (bw - r).abs() / r.max(1.0);
                if change > self.cfg.change_threshold {
                    let cause = SearchCause::PhaseChange {
                        reference: r,
                        measured: bw,
                    };
                    self.start_search(now, bytes, cause);
                    decision(self, Event::PhaseChange)
                } else {
                    decision(self, Event::Hold)
                }
            }
            State::Inline => decision(self, Event::NoIdleCores),
        }
    }
}

#[cfg(test)]
#[path = "controller_tests.rs"]
mod tests;

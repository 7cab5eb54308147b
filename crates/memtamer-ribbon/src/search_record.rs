//! What the controller's last four-point search measured and decided
//! (thesis §6.3.1), kept so that a run can show *why* it chose its M: the
//! probes in the order they ran, each point's estimate with its noise, the
//! table row and M it chose, and the reading that started the search.
//!
//! Without it the search's readings were visible only through an
//! uncommitted trace (docs/notebook/ribbon.md, "Why streamcluster N = 24 misses").
//! Pure data: the [`crate::controller::Controller`] fills it as it steps,
//! [`crate::controller::Controller::last_search`] hands it out, and the
//! runtime ([`crate::Ribbon::last_search`]) and the simulator report it.

use crate::probe::{Estimate, Verdict};
use std::time::Duration;

/// Which row of the decision table applied (thesis §6.3.1, digest §3.2;
/// defined here so the record needs nothing from the controller, and
/// re-exported as `controller::Case`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Case {
    /// BW2 > BW1 and BW4 > BW3: no contention even at P4, use P4.
    NoContention,
    /// BW2 > BW1 and BW4 <= BW3: the peak lies between P2 and P3, use the
    /// intersection of line P1-P2 with line P3-P4.
    PeakBetween,
    /// BW2 <= BW1 and BW4 <= BW3: contention already past P1, use P1.
    ContentionPastP1,
    /// BW2 < BW1 and BW4 > BW3: the case the thesis leaves out (digest
    /// §3.2 [Text issue]): bandwidth falls after P1 but rises again toward
    /// P4, so the curve has two local maxima at the ends. Both were
    /// measured; the higher of BW1 and BW4 wins, P1 on a tie (fewer
    /// threads cost less and add no contention).
    DipThenRise,
    /// BW2 ≈ BW1 or BW4 ≈ BW3 (within the noise band), except "rise then
    /// tie", which [`Case::PeakBetween`] takes with a flat line P3–P4. The
    /// thesis compares with strict inequalities (§6.3.1) and names no row
    /// for a tie; reading a tie as "lower" sent a curve flat from P1 to P2
    /// and flat from P3 to P4 to P1 although nothing measured fell (the
    /// simulator's fastfair at 24 threads: P3, P4 6-7% above P1). The
    /// lead's decision (docs/notebook/ribbon.md, "The tie rule: compare the ends"),
    /// beyond the thesis's text and consistent with [`Case::DipThenRise`]:
    /// compare the measured ends, P4 only if BW4 beats BW1 by more than the
    /// noise band (a flusher must earn its core), P1 otherwise.
    TieComparedEnds,
    /// The table answered an end ([`Case::TieComparedEnds`] or
    /// [`Case::DipThenRise`]), and a count probed inside (P2, P3) afterwards
    /// measured higher than every one of P1..P4 by more than the noise band:
    /// a hump the four points cannot see (this project's addition beyond
    /// the thesis, `crate::interior`; docs/notebook/ribbon.md "Probes
    /// inside (P2, P3) after the table (branch ribbonhump)"). Off with
    /// `ControlConfig::interior_probes` = 0.
    InteriorPeak,
}

/// Why a search started (thesis §6.3.1: a search at start, and again when
/// the bandwidth sampled every T changes by more than the threshold; the
/// controller never re-searches only because time passed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum SearchCause {
    /// The controller's first search, when it was created.
    Start,
    /// Idle hardware threads came back after inline mode (no idle thread,
    /// M = 0): the search starts over at P1.
    IdleCoresBack,
    /// A steady window of length T read `measured` bytes/s, more than the
    /// change threshold away from the `reference` window's (a phase change).
    PhaseChange {
        /// The first steady window's bandwidth after the last decision.
        reference: f64,
        /// The window that moved.
        measured: f64,
    },
    /// The first steady window after a decision read `measured`, more than
    /// the change threshold away from what the search `expected` at the
    /// chosen M (a phase change while the reference was being taken).
    ReferenceMismatch {
        /// The search's own estimate at the chosen point.
        expected: f64,
        /// The first steady window's bandwidth.
        measured: f64,
    },
}

/// One probe window as it ran: the point, the flusher count, when, and the
/// bandwidth the signal read over it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProbeReading {
    /// Which point: 0 = P1, 1 = P2, 2 = P3, 3 = P4; 4
    /// (`controller::INTERIOR`) a count inside (P2, P3) probed after the
    /// table (`crate::interior`).
    pub index: usize,
    /// Flushers active during the window.
    pub flushers: usize,
    /// Window start (the controller's clock).
    pub start: Duration,
    /// Window end.
    pub end: Duration,
    /// Bytes the signal counted over the window.
    pub bytes: u64,
}

impl ProbeReading {
    /// The window's bandwidth in bytes/s (0 for an empty window).
    pub fn bandwidth(&self) -> f64 {
        let secs = self.end.saturating_sub(self.start).as_secs_f64();
        if secs > 0.0 {
            self.bytes as f64 / secs
        } else {
            0.0
        }
    }
}

/// A sample point's estimate over all its probe windows (`probe.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PointReading {
    /// The point's flusher count.
    pub flushers: usize,
    /// All bytes over all time (bytes/s); 0 while unmeasured.
    pub bandwidth: f64,
    /// Standard error of `bandwidth` from the slice rates.
    pub std_err: f64,
    /// Slices measured.
    pub slices: usize,
}

impl PointReading {
    pub(crate) fn of(flushers: usize, e: &Estimate) -> PointReading {
        PointReading {
            flushers,
            bandwidth: e.mean(),
            std_err: e.std_err(),
            slices: e.slices(),
        }
    }
}

/// How a search ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchOutcome {
    /// When it decided.
    pub at: Duration,
    /// The decision table's row.
    pub case: Case,
    /// The comparisons the row was read from: BW2 vs BW1, BW4 vs BW3,
    /// BW4 vs BW1 (each beyond the noise band or a tie).
    pub comparisons: [Verdict; 3],
    /// The flusher count chosen.
    pub flushers: usize,
    /// Whether proactive flushing is on after it (thesis §6.3.2 step 4).
    pub proactive: bool,
    /// The four-point table's row, before any interior probe (`case`
    /// unless an interior count was kept: then `case` is
    /// [`Case::InteriorPeak`]).
    pub table_case: Case,
    /// The four-point table's M, before any interior probe.
    pub table_flushers: usize,
}

/// The record of one search.
#[derive(Clone, Debug, PartialEq)]
pub struct SearchRecord {
    /// 1 for the controller's first search, then counting.
    pub number: u64,
    /// Why it started.
    pub cause: SearchCause,
    /// When it started.
    pub started: Duration,
    /// Flushers before it started (0 in inline mode).
    pub from_flushers: usize,
    /// Every probe window in the order it ran, re-probes included.
    pub probes: Vec<ProbeReading>,
    /// P1..P4's estimates so far (over all their windows).
    pub points: [PointReading; 4],
    /// The counts probed inside (P2, P3) after the table, in probe order,
    /// each with its estimate (`crate::interior`; empty when the row did
    /// not call for them or `interior_probes` is 0).
    pub interior: Vec<PointReading>,
    /// None while the search runs.
    pub outcome: Option<SearchOutcome>,
    /// The first steady window's bandwidth after the decision (the
    /// reference later windows are compared with); None until taken.
    pub reference: Option<f64>,
}

impl SearchRecord {
    pub(crate) fn new(
        number: u64,
        cause: SearchCause,
        started: Duration,
        from_flushers: usize,
        pts: [usize; 4],
    ) -> SearchRecord {
        let mut points = [PointReading::default(); 4];
        for (p, f) in points.iter_mut().zip(pts) {
            p.flushers = f;
        }
        SearchRecord {
            number,
            cause,
            started,
            from_flushers,
            probes: Vec::new(),
            points,
            interior: Vec::new(),
            outcome: None,
            reference: None,
        }
    }
}

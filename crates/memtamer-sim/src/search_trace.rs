//! The simulated Ribbon's four-point searches as the controller recorded
//! them (`memtamer_ribbon::controller::Controller::last_search`), for
//! `memtamer sim run --trace-search`: each probe window with the bandwidth
//! the controller's signal read, P1..P4's estimates with their noise, the
//! table row and M chosen, and why a search started. Without it the
//! search's readings were visible only through an uncommitted trace
//! (docs/notebook/ribbon.md, "Why streamcluster N = 24 misses"). Times are the
//! simulated clock (the scenario's compressed time), bandwidths GB/s.

use memtamer_ribbon::search_record::{SearchCause, SearchRecord};
use serde::Serialize;
use std::fmt::Write as _;
use std::time::Duration;

const POINT: [&str; 4] = ["P1", "P2", "P3", "P4"];

/// One probe window.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ProbeTrace {
    /// "P1".."P4".
    pub point: String,
    /// Flushers active during the window.
    pub flushers: usize,
    /// Window start and end (simulated us).
    pub start_us: f64,
    /// Window end (simulated us).
    pub end_us: f64,
    /// Bandwidth the controller's signal read over the window.
    pub gbps: f64,
}

/// One sample point's estimate over all its windows.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PointTrace {
    /// "P1".."P4".
    pub point: String,
    /// The point's flusher count.
    pub flushers: usize,
    /// All bytes over all time.
    pub gbps: f64,
    /// Standard error from the slice rates.
    pub se_gbps: f64,
    /// Slices measured.
    pub slices: usize,
}

/// One search of one flush job.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SearchTrace {
    /// The scenario job's name.
    pub job: String,
    /// 1 for the first search, then counting.
    pub number: u64,
    /// Why it started: `start`, `idle-cores-back`, `phase-change` (the
    /// steady window moved > threshold from the reference) or
    /// `reference-mismatch` (the first steady window disagreed with the
    /// search's own reading at the chosen M).
    pub cause: String,
    /// For a phase change: the reference (or expected) and the window
    /// that moved, GB/s.
    pub cause_gbps: Option<[f64; 2]>,
    /// When it started (simulated us).
    pub started_us: f64,
    /// Flushers before it.
    pub from_flushers: usize,
    /// Every probe window in the order it ran.
    pub probes: Vec<ProbeTrace>,
    /// P1..P4's estimates.
    pub points: Vec<PointTrace>,
    /// The table row (None while searching at the end of the run).
    pub case: Option<String>,
    /// BW2 vs BW1, BW4 vs BW3, BW4 vs BW1: Higher, Lower or Unsure.
    pub comparisons: Option<[String; 3]>,
    /// When it decided (simulated us).
    pub decided_us: Option<f64>,
    /// The flusher count chosen.
    pub flushers: Option<usize>,
    /// Proactive flushing after it.
    pub proactive: Option<bool>,
    /// The first steady window after the decision, GB/s.
    pub reference_gbps: Option<f64>,
}

fn us(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1e3
}

fn gb(bytes_per_s: f64) -> f64 {
    bytes_per_s / 1e9
}

impl SearchTrace {
    /// Flush job `job`'s search record `r`.
    pub fn new(job: &str, r: &SearchRecord) -> SearchTrace {
        let (cause, cause_gbps) = match r.cause {
            SearchCause::Start => ("start", None),
            SearchCause::IdleCoresBack => ("idle-cores-back", None),
            SearchCause::PhaseChange {
                reference,
                measured,
            } => ("phase-change", Some([gb(reference), gb(measured)])),
            SearchCause::ReferenceMismatch { expected, measured } => {
                ("reference-mismatch", Some([gb(expected), gb(measured)]))
            }
        };
        let o = r.outcome;
        SearchTrace {
            job: job.to_string(),
            number: r.number,
            cause: cause.to_string(),
            cause_gbps,
            started_us: us(r.started),
            from_flushers: r.from_flushers,
            probes: r
                .probes
                .iter()
                .map(|p| ProbeTrace {
                    point: POINT.get(p.index).copied().unwrap_or("in").to_string(),
                    flushers: p.flushers,
                    start_us: us(p.start),
                    end_us: us(p.end),
                    gbps: gb(p.bandwidth()),
                })
                .collect(),
            points: r
                .points
                .iter()
                .zip(POINT)
                .map(|(p, name)| PointTrace {
                    point: name.to_string(),
                    flushers: p.flushers,
                    gbps: gb(p.bandwidth),
                    se_gbps: gb(p.std_err),
                    slices: p.slices,
                })
                .collect(),
            case: o.map(|o| format!("{:?}", o.case)),
            comparisons: o.map(|o| o.comparisons.map(|v| format!("{v:?}"))),
            decided_us: o.map(|o| us(o.at)),
            flushers: o.map(|o| o.flushers),
            proactive: o.map(|o| o.proactive),
            reference_gbps: r.reference.map(gb),
        }
    }

    /// The search as text lines (no trailing newline on the last).
    pub fn text(&self) -> String {
        let mut s = format!(
            "{} search {} at {:.1} us ({}",
            self.job, self.number, self.started_us, self.cause
        );
        if let Some([a, b]) = self.cause_gbps {
            let _ = write!(s, " {a:.3} -> {b:.3} GB/s");
        }
        let _ = write!(s, "), from M = {}", self.from_flushers);
        for p in &self.probes {
            let _ = write!(
                s,
                "\n  probe {} M = {:>3}  {:>9.1}-{:>9.1} us  {:.3} GB/s",
                p.point, p.flushers, p.start_us, p.end_us, p.gbps
            );
        }
        for p in &self.points {
            let _ = write!(
                s,
                "\n  point {} M = {:>3}  {:.3} GB/s +- {:.3} ({} slices)",
                p.point, p.flushers, p.gbps, p.se_gbps, p.slices
            );
        }
        match (
            &self.case,
            &self.comparisons,
            self.decided_us,
            self.flushers,
        ) {
            (Some(case), Some([e, l, n]), Some(at), Some(m)) => {
                let _ = write!(
                    s,
                    "\n  decided at {at:.1} us: {case} (P2 vs P1 {e}, P4 vs P3 {l}, P4 vs P1 {n}) -> M = {m}, proactive {}",
                    self.proactive.unwrap_or(false)
                );
            }
            _ => s.push_str("\n  (still searching at the end of the run)"),
        }
        if let Some(r) = self.reference_gbps {
            let _ = write!(s, "\n  reference (first steady window) {r:.3} GB/s");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memtamer_ribbon::controller::{ControlConfig, Controller};

    #[test]
    fn a_search_record_becomes_a_trace_with_its_readings() {
        let mut c = Controller::new(ControlConfig::thesis(24), Duration::ZERO, 0, false);
        let mut bytes = 0u64;
        let mut t = Duration::ZERO;
        for _ in 0..60 {
            // 1 GB/s per flusher up to 14: a peak between P2 and P3
            let m = c.current().flushers as u64;
            bytes += m.min(14) * 10_000_000 - m.saturating_sub(14) * 10_000_000;
            t += Duration::from_millis(10);
            c.observe(t, bytes, 2, 24.0);
        }
        let tr = SearchTrace::new("app", c.last_search().expect("recording"));
        assert_eq!((tr.number, tr.cause.as_str()), (1, "start"));
        let probed: Vec<(&str, usize)> = tr
            .probes
            .iter()
            .map(|p| (p.point.as_str(), p.flushers))
            .collect();
        assert_eq!(probed, vec![("P1", 4), ("P4", 24), ("P2", 5), ("P3", 23)]);
        assert!((tr.probes[0].gbps - 4.0).abs() < 0.05, "{:?}", tr.probes[0]);
        assert!((tr.probes[0].end_us - 100_000.0).abs() < 1e-6);
        assert_eq!(tr.case.as_deref(), Some("PeakBetween"));
        assert_eq!(tr.flushers, Some(14));
        let text = tr.text();
        assert!(text.starts_with("app search 1 at 0.0 us (start), from M = 4"));
        assert!(text.contains("probe P4 M =  24"), "{text}");
        assert!(text.contains("PeakBetween (P2 vs P1 Higher, P4 vs P3 Lower"));
        assert!(text.contains("-> M = 14"), "{text}");
    }

    #[test]
    fn a_run_keeps_its_searches_only_when_asked_and_its_metrics_either_way() {
        use crate::config::Scenario;
        use crate::experiment::{run_scenario, RunOptions};
        let text = "name = \"t\"\ntitle = \"t\"\nplatform = \"thesis\"\nduration_ms = 0.5\nwarmup_ms = 0.3\n\
            [[job]]\nname = \"app\"\nthreads = 4\ncpus = \"0-47\"\n\
            workload = { kind = \"flush\", pattern = \"pmemkv\", mode = \"ribbon\", probe_us = 50.0, interval_us = 500.0 }\n";
        let s = Scenario::parse("t", text).unwrap();
        let plain = run_scenario(
            &s,
            &RunOptions {
                jobs: 1,
                ..Default::default()
            },
        )
        .unwrap();
        let traced = run_scenario(
            &s,
            &RunOptions {
                jobs: 1,
                trace_search: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(plain.points[0].searches.is_empty());
        // without the flag the controllers record nothing at all, not only
        // in the output (`EngineConfig::trace_search`)
        let (_, raw) = crate::experiment::run_point(&s, None).unwrap();
        assert!(!raw.flush.is_empty());
        assert!(raw.flush.iter().all(|f| f.searches.is_empty()));
        // no `searches` key in the JSON without the flag (default output unchanged)
        let json = |r: &crate::experiment::ScenarioResult| {
            serde_json::to_value(r).unwrap()["points"][0]
                .get("searches")
                .is_some()
        };
        assert!(!json(&plain));
        assert_eq!(plain.points[0].metrics, traced.points[0].metrics);
        let t = &traced.points[0].searches;
        assert!(!t.is_empty());
        assert_eq!((t[0].job.as_str(), t[0].cause.as_str()), ("app", "start"));
        // P1 = 4, then P4 = the job's 48 hardware threads
        let first: Vec<usize> = t[0].probes.iter().take(2).map(|p| p.flushers).collect();
        assert_eq!(first, vec![4, 48]);
        assert!(t[0].probes[0].gbps > 0.0);
        assert!(json(&traced));
    }
}

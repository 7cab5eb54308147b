//! Adaptive PATS: T_S tuned online from the DRAM side instead of a fixed
//! formula. PATS Eq. 1 gives the starting point; from then on the limit
//! moves by one per judgement, driven by the measured loss of DRAM
//! throughput (iMC CAS counters) against a reference measured with the gate
//! at 1 (a periodic probe, like BBR's ProbeRTT, so that a change in DRAM
//! demand does not read as contention). A raise is kept only if it bought
//! PM throughput: concurrency that buys nothing only queues in the iMC.

use crate::pats::{threshold, ModelInput};
use crate::{Decision, GateLimit, Observation, Policy};

/// Windows ignored after a change (queues drain or fill).
const SKIP_WINDOWS: u32 = 1;
/// Windows averaged into one judgement.
const MEASURE_WINDOWS: u32 = 2;
/// Judgements between probes of the uncontended DRAM rate.
const PROBE_EVERY: u32 = 60;
/// Below this DRAM rate there is no DRAM work worth protecting (bytes/s).
const IDLE_DRAM_BYTES_PER_S: f64 = 1e8;
/// A raise must buy at least this much PM throughput to be kept.
const MIN_PM_GAIN: f64 = 0.03;
/// Judgements before a limit that failed is retried: first and longest.
const FIRST_BACKOFF: u32 = 4;
const MAX_BACKOFF: u32 = 128;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Phase {
    /// Gate at 1 to measure the reference; then back to `resume`.
    Probing { resume: u32 },
    /// Normal operation.
    Tracking,
}

/// Sums over the windows of one judgement.
#[derive(Clone, Copy, Debug, Default)]
struct Measurement {
    dram_bytes: f64,
    pm_bytes: f64,
    ns: f64,
    windows: u32,
    saturated: bool,
}

/// T_S from measured DRAM loss: raise the limit while DRAM loses less than
/// half the tolerance, PM threads are waiting and the last raise paid off
/// in PM throughput; lower it as soon as DRAM loses more than the
/// tolerance; back off exponentially from a limit that failed. Without DRAM
/// counters it behaves like static PATS (Eq. 1).
#[derive(Clone, Debug)]
pub struct PatsAdaptive {
    /// Tolerated loss of DRAM throughput (0.05 = 5%).
    pub max_loss: f64,
    /// Highest limit it will set.
    pub max_limit: u32,
    t_mc: f64,
    n_pm: u32,
    limit: Option<u32>,
    phase: Phase,
    skip: u32,
    acc: Measurement,
    /// DRAM bytes/s with the gate at 1.
    reference: Option<f64>,
    judgements: u32,
    /// The limit a raise came from and the PM rate there.
    trial: Option<(u32, f64)>,
    /// A limit that failed, and judgements until it may be retried.
    ceiling: Option<(u32, u32)>,
    backoff: u32,
}

impl PatsAdaptive {
    /// Adaptive PATS tolerating `max_loss` of DRAM throughput, starting from
    /// PATS Eq. 1 with `t_mc` and `n_pm`.
    pub fn new(max_loss: f64, t_mc: f64, n_pm: u32) -> PatsAdaptive {
        PatsAdaptive {
            max_loss: if max_loss.is_finite() {
                max_loss.clamp(0.001, 1.0)
            } else {
                0.05
            },
            max_limit: 64,
            t_mc,
            n_pm,
            limit: None,
            phase: Phase::Tracking,
            skip: 0,
            acc: Measurement::default(),
            reference: None,
            judgements: 0,
            trial: None,
            ceiling: None,
            backoff: FIRST_BACKOFF,
        }
    }

    /// The limit it last set.
    pub fn limit(&self) -> Option<u32> {
        self.limit
    }

    fn set(&mut self, limit: u32, why: String) -> Decision {
        let limit = limit.clamp(1, self.max_limit);
        self.skip = SKIP_WINDOWS;
        self.acc = Measurement::default();
        if self.limit == Some(limit) {
            return Decision::default();
        }
        self.limit = Some(limit);
        Decision {
            gate_limit: Some(GateLimit::Limit(limit)),
            reasons: vec![why],
            ..Default::default()
        }
    }

    fn fail(&mut self, limit: u32) {
        self.ceiling = Some((limit, self.backoff));
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        self.trial = None;
    }

    fn eq1(&self, s: f64, wr: f64) -> u32 {
        threshold(&ModelInput {
            t_mc: self.t_mc,
            n_pm: self.n_pm,
            avg_request_bytes: s,
            write_ratio: wr,
        })
    }
}

impl Policy for PatsAdaptive {
    fn name(&self) -> &str {
        "pats-adaptive"
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let mix = obs.pm_total();
        let (Some(s), Some(wr)) = (mix.average_request_bytes(), mix.write_ratio()) else {
            return Decision::default(); // no PM traffic: nothing to judge
        };
        let Some(limit) = self.limit else {
            let start = self.eq1(s, wr);
            self.phase = Phase::Probing { resume: start };
            return self.set(
                1,
                format!("adaptive PATS: probing DRAM at limit 1 (Eq. 1 start {start})"),
            );
        };
        let Some(dram) = obs.dram_cas().map(|cas| cas as f64 * 64.0) else {
            let t_s = self.eq1(s, wr);
            self.phase = Phase::Tracking;
            return self.set(
                t_s,
                format!("adaptive PATS: no DRAM counters, Eq. 1 -> {t_s}"),
            );
        };
        if self.skip > 0 {
            self.skip -= 1;
            return Decision::default();
        }
        let saturated = match &obs.gate {
            Some(g) => g.waiting > 0 || g.admitted >= limit,
            None => obs.threads.iter().filter(|t| t.pm.is_some()).count() as u32 > limit,
        };
        self.acc.dram_bytes += dram;
        self.acc.pm_bytes += (mix.read_bytes + mix.write_bytes) as f64;
        self.acc.ns += obs.duration_ns as f64;
        self.acc.windows += 1;
        self.acc.saturated = saturated;
        if self.acc.windows < MEASURE_WINDOWS || self.acc.ns <= 0.0 {
            return Decision::default();
        }
        let m = std::mem::take(&mut self.acc);
        let (dram, pm) = (m.dram_bytes / m.ns * 1e9, m.pm_bytes / m.ns * 1e9);
        self.judgements += 1;
        if let Phase::Probing { resume } = self.phase {
            // a changed reference means a changed workload: forget old lessons
            let changed = self
                .reference
                .is_none_or(|r| (dram - r).abs() > 0.1 * r.max(IDLE_DRAM_BYTES_PER_S));
            if changed {
                self.backoff = FIRST_BACKOFF;
                self.ceiling = None;
            }
            self.reference = Some(dram);
            self.phase = Phase::Tracking;
            self.trial = None;
            return self.set(
                resume,
                format!(
                    "adaptive PATS: DRAM alone {:.2} GB/s, resuming at {resume}",
                    dram / 1e9
                ),
            );
        }
        if self.judgements.is_multiple_of(PROBE_EVERY) {
            self.phase = Phase::Probing { resume: limit };
            return self.set(1, "adaptive PATS: periodic probe of DRAM at limit 1".into());
        }
        let reference = self.reference.unwrap_or(dram).max(dram);
        self.reference = Some(reference);
        if let Some((ceiling, left)) = self.ceiling {
            self.ceiling = (left > 1).then_some((ceiling, left - 1));
        }
        let loss = if reference < IDLE_DRAM_BYTES_PER_S {
            0.0
        } else {
            1.0 - dram / reference
        };
        if loss > self.max_loss && limit > 1 {
            self.fail(limit);
            return self.set(
                limit - 1,
                format!(
                    "adaptive PATS: DRAM loss {:.1}% > {:.1}% at {limit}, lowering",
                    loss * 100.0,
                    self.max_loss * 100.0
                ),
            );
        }
        if let Some((from, before)) = self.trial.take() {
            if pm < before * (1.0 + MIN_PM_GAIN) {
                self.fail(limit);
                return self.set(
                    from,
                    format!("adaptive PATS: {limit} bought no PM throughput, back to {from}"),
                );
            }
        }
        let blocked = matches!(self.ceiling, Some((c, _)) if c <= limit + 1);
        if loss < self.max_loss / 2.0 && m.saturated && !blocked && limit < self.max_limit {
            self.trial = Some((limit, pm));
            return self.set(
                limit + 1,
                format!(
                    "adaptive PATS: DRAM loss {:.1}%, PM threads waiting, trying {}",
                    loss * 100.0,
                    limit + 1
                ),
            );
        }
        Decision::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AccessStats, ChannelObs, GateObs, ThreadObs};

    /// A plant: DRAM runs at `alone` bytes/s until `knee` PM requests run at
    /// once, then loses `drop` per extra request.
    fn window(dram: f64, pm_threads: u32, limit: u32, counters: bool) -> Observation {
        window_pm(dram, pm_threads, limit, counters, limit)
    }

    /// `pm_rate` 4 KiB requests per window in all.
    fn window_pm(
        dram: f64,
        pm_threads: u32,
        limit: u32,
        counters: bool,
        pm_rate: u32,
    ) -> Observation {
        let mut pm = AccessStats::default();
        for _ in 0..pm_rate.max(1) {
            pm.record(4096, true);
        }
        let duration_ns = 100_000;
        let cas = (dram * duration_ns as f64 * 1e-9 / 64.0) as u64;
        Observation {
            duration_ns,
            threads: (0..pm_threads)
                .map(|i| ThreadObs {
                    pm: Some(if i == 0 {
                        pm
                    } else {
                        AccessStats {
                            writes_by_size: [0, 0, 0, 0],
                            ..Default::default()
                        }
                    }),
                    ..Default::default()
                })
                .collect(),
            channels: if counters {
                vec![ChannelObs {
                    cas_reads: Some(cas),
                    cas_writes: Some(0),
                    ..Default::default()
                }]
            } else {
                vec![]
            },
            gate: Some(GateObs {
                limit: Some(limit),
                admitted: limit.min(pm_threads),
                waiting: pm_threads.saturating_sub(limit),
            }),
            ..Default::default()
        }
    }

    fn plant(limit: u32, knee: u32, alone: f64) -> f64 {
        if limit <= knee {
            alone * (1.0 - 0.005 * limit as f64)
        } else {
            alone * (1.0 - 0.25 * (limit - knee) as f64).max(0.05)
        }
    }

    /// Runs `windows` windows; returns the limits applied. PM throughput
    /// grows with the limit up to 8 concurrent requests.
    fn run(
        p: &mut PatsAdaptive,
        windows: usize,
        knee: u32,
        alone: impl Fn(usize) -> f64,
    ) -> Vec<u32> {
        run_sat(p, windows, knee, 8, alone)
    }

    fn run_sat(
        p: &mut PatsAdaptive,
        windows: usize,
        knee: u32,
        pm_sat: u32,
        alone: impl Fn(usize) -> f64,
    ) -> Vec<u32> {
        let mut limit = u32::MAX;
        let mut seen = Vec::new();
        for w in 0..windows {
            let l = limit.min(14);
            let obs = window_pm(plant(l, knee, alone(w)), 14, l, true, 10 * l.min(pm_sat));
            let d = p.decide(&obs);
            if let Some(GateLimit::Limit(n)) = d.gate_limit {
                limit = n;
            }
            seen.push(limit.min(14));
        }
        seen
    }

    #[test]
    fn climbs_from_the_model_to_the_measured_knee_and_stays_near_it() {
        let mut p = PatsAdaptive::new(0.05, 0.2, 1);
        let limits = run(&mut p, 400, 4, |_| 5e9);
        assert_eq!(limits[0], 1, "starts with a probe at 1");
        let tail = &limits[100..];
        let at_knee = tail.iter().filter(|l| **l == 4).count();
        assert!(at_knee * 10 >= tail.len() * 8, "limits {tail:?}");
        // only the periodic probes leave the knee's neighbourhood
        let probes = tail.iter().filter(|l| **l == 1).count();
        assert!(probes * 100 <= tail.len() * 3, "limits {tail:?}");
        assert!(
            tail.iter().all(|l| *l == 1 || (3..=5).contains(l)),
            "limits {tail:?}"
        );
    }

    #[test]
    fn a_drop_in_dram_demand_is_not_mistaken_for_contention() {
        let mut p = PatsAdaptive::new(0.05, 0.2, 1);
        // demand halves at window 150; the next probe re-measures
        let limits = run(&mut p, 600, 6, |w| if w < 150 { 6e9 } else { 3e9 });
        let tail = &limits[450..];
        let at_knee = tail.iter().filter(|l| **l == 6).count();
        assert!(at_knee * 10 >= tail.len() * 7, "limits {tail:?}");
    }

    #[test]
    fn concurrency_that_buys_no_pm_throughput_is_given_back() {
        let mut p = PatsAdaptive::new(0.05, 0.2, 1);
        // DRAM would tolerate 6, but PM saturates at 3
        let limits = run_sat(&mut p, 400, 6, 3, |_| 5e9);
        let tail = &limits[100..];
        let at_sat = tail.iter().filter(|l| **l == 3).count();
        assert!(at_sat * 10 >= tail.len() * 8, "limits {tail:?}");
        assert!(tail.iter().all(|l| *l <= 4), "limits {tail:?}");
    }

    #[test]
    fn without_dram_counters_it_is_static_pats() {
        let mut p = PatsAdaptive::new(0.05, 0.2, 1);
        let mut last = None;
        for _ in 0..10 {
            if let Some(l) = p.decide(&window(5e9, 14, 2, false)).gate_limit {
                last = Some(l);
            }
        }
        assert_eq!(last, Some(GateLimit::Limit(2))); // Eq. 1, 4 KiB writes
    }

    #[test]
    fn no_dram_demand_lets_pm_run_free_and_no_pm_changes_nothing() {
        let mut p = PatsAdaptive::new(0.05, 0.2, 1);
        let limits = run_sat(&mut p, 200, 4, 14, |_| 0.0);
        assert_eq!(*limits.last().expect("limits"), 14);
        assert!(p.decide(&Observation::default()).is_noop());
    }

    #[test]
    fn bad_tolerances_are_clamped() {
        assert_eq!(PatsAdaptive::new(f64::NAN, 0.2, 1).max_loss, 0.05);
        assert_eq!(PatsAdaptive::new(-1.0, 0.2, 1).max_loss, 0.001);
    }
}

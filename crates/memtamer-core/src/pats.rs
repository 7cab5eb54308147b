//! PATS (DATE'22): the contention model (Eq. 1-4) and the policy that sets
//! the PM gate's admission limit from the request mix seen each window.

use crate::{AccessStats, Decision, GateLimit, Observation, Policy};

/// Inputs of the PATS contention model (PATS Table II).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelInput {
    /// Tolerable DRAM contention impact, in [0, 1] (T_mc; PATS default 0.2).
    pub t_mc: f64,
    /// Number of PMs in the interleave set (N).
    pub n_pm: u32,
    /// Average request size in bytes (S).
    pub avg_request_bytes: f64,
    /// Fraction of requests that are writes (Wr), in [0, 1].
    pub write_ratio: f64,
}

/// PATS Eq. 1-4: the maximum contention-free number of concurrently running
/// PA-threads, T_S = floor((1 + 2 T_mc) P_rw + (1 + T_mc) P_N + P_size), with
/// P_rw = 3 - Wr (Eq. 2), P_N = N - 1 (Eq. 3), and P_size = 0 for S >= 256 B,
/// else 2*256/S - 1 (Eq. 4). Inputs are clamped to their valid ranges; the
/// result is at least 1 so that PM work always makes progress.
pub fn threshold(input: &ModelInput) -> u32 {
    let t_mc = if input.t_mc.is_finite() {
        input.t_mc.clamp(0.0, 1.0)
    } else {
        0.2
    };
    let wr = if input.write_ratio.is_finite() {
        input.write_ratio.clamp(0.0, 1.0)
    } else {
        1.0
    };
    let s = if input.avg_request_bytes.is_finite() && input.avg_request_bytes > 0.0 {
        input.avg_request_bytes
    } else {
        256.0
    };
    let p_rw = 3.0 - wr; // PATS Eq. 2
    let p_n = input.n_pm.max(1) as f64 - 1.0; // PATS Eq. 3
    let p_size = if s >= 256.0 {
        0.0
    } else {
        2.0 * 256.0 / s - 1.0
    }; // PATS Eq. 4
    let t_s = (1.0 + 2.0 * t_mc) * p_rw + (1.0 + t_mc) * p_n + p_size; // PATS Eq. 1
                                                                       // floor, with a tiny tolerance so exact products like 1.2 * 2 = 2.4 are not lost to rounding
    ((t_s + 1e-9).floor() as u32).max(1)
}

/// The PATS Collector shared by the PATS policies: it averages the window's
/// PM request mix (S, Wr) and returns a decision only when T_S changes.
#[derive(Clone, Debug, Default)]
struct Collector {
    last: Option<u32>,
}

impl Collector {
    /// `t_s_of(S, Wr)` gives the limit (None: no opinion); `reason(S, Wr, T_S)`
    /// explains it. No PM request in the window keeps the current limit.
    fn decide(
        &mut self,
        obs: &Observation,
        t_s_of: impl FnOnce(f64, f64) -> Option<u32>,
        reason: impl FnOnce(f64, f64, u32) -> String,
    ) -> Decision {
        let mix: AccessStats = obs.pm_total();
        let (Some(s), Some(wr)) = (mix.average_request_bytes(), mix.write_ratio()) else {
            return Decision::default();
        };
        let Some(t_s) = t_s_of(s, wr) else {
            return Decision::default();
        };
        if self.last == Some(t_s) {
            return Decision::default();
        }
        self.last = Some(t_s);
        Decision {
            gate_limit: Some(GateLimit::Limit(t_s)),
            reasons: vec![reason(s, wr, t_s)],
            ..Default::default()
        }
    }
}

/// The PATS Collector as a policy: every window it averages the request mix
/// of gated PM requests (S, Wr) and sets the gate limit to T_S.
#[derive(Clone, Debug)]
pub struct Pats {
    /// T_mc.
    pub t_mc: f64,
    /// Interleaved PMs.
    pub n_pm: u32,
    collector: Collector,
}

impl Pats {
    /// A PATS policy for `n_pm` interleaved PMs with tolerance `t_mc`.
    pub fn new(t_mc: f64, n_pm: u32) -> Pats {
        Pats {
            t_mc,
            n_pm,
            collector: Collector::default(),
        }
    }
}

impl Policy for Pats {
    fn name(&self) -> &str {
        "pats"
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let (t_mc, n_pm) = (self.t_mc, self.n_pm);
        self.collector.decide(
            obs,
            |s, wr| {
                Some(threshold(&ModelInput {
                    t_mc,
                    n_pm,
                    avg_request_bytes: s,
                    write_ratio: wr,
                }))
            },
            |s, wr, t_s| {
                format!(
                    "PATS: S = {s:.0} B, Wr = {wr:.2}, N = {n_pm}, T_mc = {t_mc} -> T_S = {t_s}"
                )
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ThreadObs;

    fn t_s(t_mc: f64, n_pm: u32, s: f64, wr: f64) -> u32 {
        threshold(&ModelInput {
            t_mc,
            n_pm,
            avg_request_bytes: s,
            write_ratio: wr,
        })
    }

    #[test]
    fn paper_examples() {
        // PATS §III-C: Wr = 1, S = 4 KB, N = 1 -> T_S = 2 at T_mc = 0.1, 4 at T_mc = 0.5
        assert_eq!(t_s(0.1, 1, 4096.0, 1.0), 2);
        assert_eq!(t_s(0.5, 1, 4096.0, 1.0), 4);
        // default T_mc = 0.2
        assert_eq!(t_s(0.2, 1, 4096.0, 1.0), 2);
    }

    #[test]
    fn each_term_moves_the_threshold_the_right_way() {
        assert_eq!(t_s(0.2, 1, 4096.0, 0.0), 4); // reads tolerate more threads
        assert_eq!(t_s(0.2, 2, 4096.0, 1.0), 4); // more interleaved PMs too
        assert_eq!(t_s(0.2, 3, 4096.0, 1.0), 5);
        assert_eq!(t_s(0.2, 1, 128.0, 1.0), 5); // small requests: P_size = 3
        assert_eq!(t_s(0.2, 1, 256.0, 1.0), 2); // P_size switches off at 256 B
        assert!(t_s(0.2, 1, 255.0, 1.0) >= 2);
    }

    #[test]
    fn bad_inputs_are_clamped_not_panics() {
        assert!(t_s(f64::NAN, 0, f64::NAN, f64::INFINITY) >= 1);
        assert!(t_s(-5.0, 1, 0.0, -1.0) >= 1);
        assert_eq!(t_s(7.0, 1, 4096.0, 1.0), t_s(1.0, 1, 4096.0, 1.0));
    }

    #[test]
    fn policy_sets_the_gate_from_the_window_mix() {
        let mut p = Pats::new(0.2, 1);
        let mut stats = AccessStats::default();
        for _ in 0..10 {
            stats.record(4096, true);
        }
        let obs = Observation {
            threads: vec![ThreadObs {
                pm: Some(stats),
                ..Default::default()
            }],
            ..Default::default()
        };
        let d = p.decide(&obs);
        assert_eq!(d.gate_limit, Some(GateLimit::Limit(2)));
        assert!(!d.reasons.is_empty());
        // same mix again: nothing to change
        assert!(p.decide(&obs).is_noop());
        // no PM traffic: keep the limit
        assert!(p.decide(&Observation::default()).is_noop());
    }
}

/// One measured point of a calibrated model: on this platform, with this
/// request mix, at most `t_s` PA-threads run before DRAM loses more than T_mc.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CalibrationPoint {
    /// Write ratio of the calibration workload (0 = reads, 1 = writes).
    pub write_ratio: f64,
    /// Request size of the calibration workload, bytes.
    pub request_bytes: u64,
    /// Largest contention-free PA-thread count measured.
    pub t_s: u32,
}

/// A contention model measured on the actual platform (`memtamer calibrate`)
/// instead of PATS's fixed Eq. 1: the knee comes from measurement.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CalibratedModel {
    /// Platform it was measured on.
    pub platform: String,
    /// Tolerated loss of DRAM throughput used to find each knee (0.05 = 5%).
    pub max_dram_loss: f64,
    /// Measured points.
    pub points: Vec<CalibrationPoint>,
}

impl CalibratedModel {
    /// T_S for a request mix: for each calibrated write ratio, the smaller T_S
    /// of the two calibrated sizes around `avg_request_bytes` (the nearest one
    /// outside the calibrated range): an unmeasured size gets the more
    /// conservative neighbour, because too high a limit costs DRAM far more
    /// than too low a limit costs PM. Then linear interpolation in the write
    /// ratio. At least 1; None when the model has no point.
    pub fn threshold(&self, avg_request_bytes: f64, write_ratio: f64) -> Option<u32> {
        let wr = if write_ratio.is_finite() {
            write_ratio.clamp(0.0, 1.0)
        } else {
            1.0
        };
        let at = |ratio: f64| -> Option<f64> {
            let mut same: Vec<&CalibrationPoint> = self
                .points
                .iter()
                .filter(|p| (p.write_ratio - ratio).abs() < 1e-9)
                .collect();
            same.sort_by_key(|p| p.request_bytes);
            let below = same
                .iter()
                .rev()
                .find(|p| p.request_bytes as f64 <= avg_request_bytes);
            let above = same
                .iter()
                .find(|p| p.request_bytes as f64 >= avg_request_bytes);
            match (below, above) {
                (Some(b), Some(a)) => Some(b.t_s.min(a.t_s) as f64),
                // outside the range, or a NaN size: the nearest or the smallest
                (b, a) => b.or(a).or(same.first()).map(|p| p.t_s as f64),
            }
        };
        let mut ratios: Vec<f64> = self.points.iter().map(|p| p.write_ratio).collect();
        ratios.sort_by(|a, b| a.total_cmp(b));
        ratios.dedup();
        let lo = ratios.iter().rev().find(|r| **r <= wr).or(ratios.first())?;
        let hi = ratios.iter().find(|r| **r >= wr).or(ratios.last())?;
        let (a, b) = (at(*lo)?, at(*hi)?);
        let v = if (hi - lo).abs() < 1e-12 {
            a
        } else {
            a + (b - a) * (wr - lo) / (hi - lo)
        };
        Some((v.floor() as u32).max(1))
    }
}

/// Why a model text is not a calibrated model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    /// 1-based line (0 when unknown).
    pub line: usize,
    /// 1-based column (0 when unknown).
    pub column: usize,
    /// The key at fault, for errors about a value rather than the syntax.
    pub key: Option<&'static str>,
    /// What is wrong.
    pub message: String,
}

impl CalibratedModel {
    /// Parses the TOML that `memtamer calibrate` writes; a model without
    /// points is refused. Both the simulator and the gate library load
    /// model files through this.
    pub fn parse(text: &str) -> Result<CalibratedModel, ModelError> {
        let model: CalibratedModel = toml::from_str(text).map_err(|e| {
            let (line, column) = e.span().map_or((0, 0), |s| {
                let before = text.get(..s.start.min(text.len())).unwrap_or(text);
                let line = before.matches('\n').count() + 1;
                let column = before
                    .rfind('\n')
                    .map_or(before.len(), |p| before.len() - p - 1)
                    + 1;
                (line, column)
            });
            ModelError {
                line,
                column,
                key: None,
                message: e.message().trim().to_string(),
            }
        })?;
        if model.points.is_empty() {
            let line = text
                .lines()
                .position(|l| l.trim_start().starts_with("points"))
                .map_or(0, |i| i + 1);
            return Err(ModelError {
                line,
                column: 0,
                key: Some("points"),
                message: "the model has no calibration point".into(),
            });
        }
        Ok(model)
    }
}

/// PATS with a calibrated model in place of Eq. 1.
#[derive(Clone, Debug)]
pub struct PatsCalibrated {
    model: CalibratedModel,
    collector: Collector,
}

impl PatsCalibrated {
    /// A policy using `model`.
    pub fn new(model: CalibratedModel) -> PatsCalibrated {
        PatsCalibrated {
            model,
            collector: Collector::default(),
        }
    }
}

impl Policy for PatsCalibrated {
    fn name(&self) -> &str {
        "pats-calibrated"
    }

    fn decide(&mut self, obs: &Observation) -> Decision {
        let model = &self.model;
        self.collector.decide(
            obs,
            |s, wr| model.threshold(s, wr),
            |s, wr, t_s| {
                format!(
                    "PATS (calibrated on {}): S = {s:.0} B, Wr = {wr:.2} -> T_S = {t_s}",
                    model.platform
                )
            },
        )
    }
}

#[cfg(test)]
mod calibrated_tests {
    use super::*;

    fn model() -> CalibratedModel {
        let p = |write_ratio, request_bytes, t_s| CalibrationPoint {
            write_ratio,
            request_bytes,
            t_s,
        };
        CalibratedModel {
            platform: "test".into(),
            max_dram_loss: 0.05,
            points: vec![
                p(1.0, 256, 5),
                p(1.0, 1024, 4),
                p(1.0, 4096, 3),
                p(0.0, 256, 9),
                p(0.0, 4096, 6),
            ],
        }
    }

    #[test]
    fn looks_up_size_classes_and_interpolates_the_write_ratio() {
        let m = model();
        assert_eq!(m.threshold(4096.0, 1.0), Some(3));
        assert_eq!(m.threshold(8192.0, 1.0), Some(3));
        assert_eq!(m.threshold(2048.0, 1.0), Some(3)); // between 1 KiB (4) and 4 KiB (3)
        assert_eq!(m.threshold(1024.0, 1.0), Some(4)); // a calibrated size: its own value
        assert_eq!(m.threshold(64.0, 1.0), Some(5)); // below every size: the smallest
        assert_eq!(m.threshold(4096.0, 0.0), Some(6));
        assert_eq!(m.threshold(4096.0, 0.5), Some(4)); // 3 + (6 - 3) / 2 = 4.5
        assert_eq!(m.threshold(f64::NAN, f64::NAN), Some(5));
        assert_eq!(CalibratedModel::default().threshold(4096.0, 1.0), None);
    }

    #[test]
    fn model_text_parses_and_errors_point_at_their_line() {
        let text = toml::to_string(&model()).expect("serialize");
        assert_eq!(CalibratedModel::parse(&text), Ok(model()));
        let err =
            CalibratedModel::parse("platform = \"x\"\nmax_dram_loss = \"high\"\n").unwrap_err();
        assert_eq!((err.line, err.key), (2, None));
        // an error at the very start of a line is on that line, not the one before
        let err = CalibratedModel::parse("platform = \"x\"\n= 1\n").unwrap_err();
        assert_eq!(err.line, 2);
        let err = CalibratedModel::parse("platform = \"x\"\nmax_dram_loss = 0.05\npoints = []\n")
            .unwrap_err();
        assert_eq!((err.line, err.key), (3, Some("points")));
    }

    #[test]
    fn calibrated_policy_acts_once_per_change() {
        let mut p = PatsCalibrated::new(model());
        let mut stats = AccessStats::default();
        stats.record(4096, true);
        let obs = Observation {
            threads: vec![crate::ThreadObs {
                pm: Some(stats),
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(p.decide(&obs).gate_limit, Some(GateLimit::Limit(3)));
        assert!(p.decide(&obs).is_noop());
    }
}

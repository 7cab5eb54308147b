//! Calibration of the models' constant factors `CF_bw` and `CF_lat`
//! (thesis §3.4.1, after Eq. 3.2 and the unnumbered latency benefit): "the
//! basic idea of the two factors is to measure performance ratios between
//! measured performance and predicted performance for representative
//! workloads", STREAM for `CF_bw` and a single-threaded pointer chaser for
//! `CF_lat`, "calculated only once" per platform.
//!
//! A factor multiplies a benefit, i.e. the *difference* between the slow
//! tier's and DRAM's predicted time. So each calibration run is the same
//! micro-benchmark timed twice, data in DRAM and data in the slow tier, and
//! the factor is how much of the predicted slow-tier cost shows up:
//! `measured (t_slow − t_dram) / predicted (Eq. 3.2 or 3.4.1 with factor 1)`,
//! fitted over all runs of its kind by least squares through the origin
//! (with one run, exactly that ratio). The thesis also states the ratio on
//! one memory's time (`#data_access × cacheline_size / DRAM_bw` against the
//! measured time); [`CalRun::dram_ratio`] reports that reading too.
//!
//! Pure: the simulator (`memtamer-sim` `tier_eval::calibrate`) and the MPI
//! runtime (`memtamer-tier` `calibrate`) time the runs and call [`fit`].

use super::model::{benefit_bw, benefit_lat, Platform};

/// Which factor a calibration run measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CalKind {
    /// STREAM-like, bandwidth-bound (`CF_bw`, Eq. 3.2).
    Bandwidth,
    /// Pointer chasing, latency-bound (`CF_lat`, the latency benefit).
    Latency,
}

/// One calibration micro-benchmark, timed with its data in each tier.
#[derive(Clone, Debug, PartialEq)]
pub struct CalRun {
    /// What it calibrates.
    pub kind: CalKind,
    /// `#data_access` the profiler counted (main-memory lines).
    pub accesses: f64,
    /// Measured seconds with the data in DRAM.
    pub dram_s: f64,
    /// Measured seconds with the data in the slow tier.
    pub slow_s: f64,
}

impl CalRun {
    /// The slow tier's predicted cost, factor 1 (Eq. 3.2 or the latency
    /// benefit: what moving the data to DRAM is predicted to save).
    pub fn predicted_cost(&self, p: &Platform) -> f64 {
        let p1 = Platform {
            cf_bw: 1.0,
            cf_lat: 1.0,
            ..p.clone()
        };
        match self.kind {
            CalKind::Bandwidth => benefit_bw(self.accesses, &p1),
            CalKind::Latency => benefit_lat(self.accesses, &p1),
        }
    }

    /// The slow tier's measured cost.
    pub fn measured_cost(&self) -> f64 {
        self.slow_s - self.dram_s
    }

    /// The thesis's literal ratio on DRAM alone: measured time over
    /// `#data_access × cacheline_size / DRAM_bw` (STREAM) or
    /// `#data_access × DRAM_lat` (pointer chaser). Informational: the
    /// planner uses [`fit`].
    pub fn dram_ratio(&self, p: &Platform) -> f64 {
        let predicted = match self.kind {
            CalKind::Bandwidth => self.accesses * p.cacheline / p.dram_bw,
            CalKind::Latency => self.accesses * p.dram_lat,
        };
        self.dram_s / predicted
    }
}

/// A fitted factor and the totals behind it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Factor {
    /// The factor (1 when not identifiable).
    pub value: f64,
    /// False when the platform's tiers differ too little in this respect
    /// for the runs to measure it (see [`MIN_RESOLVABLE`]).
    pub identifiable: bool,
    /// Sum of the runs' predicted slow-tier costs (s).
    pub predicted: f64,
    /// Sum of the runs' measured slow-tier costs (s).
    pub measured: f64,
}

/// Both factors.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Factors {
    /// `CF_bw`.
    pub bw: Factor,
    /// `CF_lat`.
    pub lat: Factor,
}

/// Smallest predicted slow-tier cost, as a share of the runs' DRAM time,
/// that a factor is fitted from. Below it the model says the tiers do not
/// differ in that respect (e.g. latency when only bandwidth is halved), the
/// factor multiplies a near-zero benefit, and a ratio of two near-zero
/// times would be noise: the factor stays 1.
pub const MIN_RESOLVABLE: f64 = 0.02;

/// Why a calibration cannot be fitted.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CalError {
    /// No run of this kind was given.
    #[error("calibration: no {0:?} run (need a STREAM-like and a pointer-chasing run)")]
    Missing(CalKind),
    /// A run carries a value that is not a finite, positive number.
    #[error("calibration run {index} ({kind:?}): {what} = {value} is not finite and > 0")]
    BadRun {
        /// Position in the input.
        index: usize,
        /// Its kind.
        kind: CalKind,
        /// Which field.
        what: &'static str,
        /// The value.
        value: f64,
    },
}

/// Fits `CF_bw` and `CF_lat` for `p` from the runs (see the module doc):
/// least squares of measured on predicted slow-tier cost through the
/// origin, floored at 0 (a slow tier that measures faster than DRAM gains
/// nothing from DRAM).
pub fn fit(runs: &[CalRun], p: &Platform) -> Result<Factors, CalError> {
    for (index, r) in runs.iter().enumerate() {
        for (what, value) in [
            ("accesses", r.accesses),
            ("dram_s", r.dram_s),
            ("slow_s", r.slow_s),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(CalError::BadRun {
                    index,
                    kind: r.kind,
                    what,
                    value,
                });
            }
        }
    }
    let one = |kind: CalKind| -> Result<Factor, CalError> {
        let rs: Vec<&CalRun> = runs.iter().filter(|r| r.kind == kind).collect();
        if rs.is_empty() {
            return Err(CalError::Missing(kind));
        }
        let pred: Vec<f64> = rs.iter().map(|r| r.predicted_cost(p)).collect();
        let meas: Vec<f64> = rs.iter().map(|r| r.measured_cost()).collect();
        let dram: f64 = rs.iter().map(|r| r.dram_s).sum();
        let predicted: f64 = pred.iter().sum();
        let measured: f64 = meas.iter().sum();
        let pp: f64 = pred.iter().map(|x| x * x).sum();
        let identifiable = predicted > MIN_RESOLVABLE * dram && pp > 0.0;
        let value = if identifiable {
            let pm: f64 = pred.iter().zip(&meas).map(|(a, b)| a * b).sum();
            (pm / pp).max(0.0)
        } else {
            1.0
        };
        Ok(Factor {
            value,
            identifiable,
            predicted,
            measured,
        })
    };
    Ok(Factors {
        bw: one(CalKind::Bandwidth)?,
        lat: one(CalKind::Latency)?,
    })
}

impl Platform {
    /// This platform with the fitted constant factors.
    pub fn with_factors(&self, f: &Factors) -> Platform {
        Platform {
            cf_bw: f.bw.value,
            cf_lat: f.lat.value,
            ..self.clone()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // 10 GB/s DRAM, 5 GB/s slow; 100 ns DRAM, 400 ns slow.
    fn plat() -> Platform {
        Platform::emulated(10e9, 100e-9, 2.0, 4.0)
    }

    fn run(kind: CalKind, accesses: f64, dram_s: f64, slow_s: f64) -> CalRun {
        CalRun {
            kind,
            accesses,
            dram_s,
            slow_s,
        }
    }

    #[test]
    fn one_run_is_the_ratio_of_measured_to_predicted_cost() {
        let p = plat();
        // 1e6 lines: Eq. 3.2 predicts 12.8 - 6.4 = 6.4 ms, measured 3.2 ms.
        // 1e5 chases: 0.3 ns * 1e5 = 30 ms predicted, 45 ms measured.
        let f = fit(
            &[
                run(CalKind::Bandwidth, 1e6, 6.4e-3, 9.6e-3),
                run(CalKind::Latency, 1e5, 10e-3, 55e-3),
            ],
            &p,
        )
        .unwrap();
        assert!((f.bw.value - 0.5).abs() < 1e-9, "{f:?}");
        assert!((f.lat.value - 1.5).abs() < 1e-9, "{f:?}");
        assert!(f.bw.identifiable && f.lat.identifiable);
        assert!((f.bw.predicted - 6.4e-3).abs() < 1e-12);
        assert!((f.bw.measured - 3.2e-3).abs() < 1e-12);
        // the calibrated model predicts what was measured
        let c = p.with_factors(&f);
        assert!((benefit_bw(1e6, &c) - 3.2e-3).abs() < 1e-12);
        assert!((benefit_lat(1e5, &c) - 45e-3).abs() < 1e-12);
    }

    #[test]
    fn several_runs_are_least_squares_through_the_origin() {
        let p = plat();
        // predicted 6.4 and 12.8 ms; measured 3.2 and 12.8 ms:
        // (6.4*3.2 + 12.8*12.8) / (6.4^2 + 12.8^2) = 0.9
        let f = fit(
            &[
                run(CalKind::Bandwidth, 1e6, 6.4e-3, 9.6e-3),
                run(CalKind::Bandwidth, 2e6, 12.8e-3, 25.6e-3),
                run(CalKind::Latency, 1e5, 10e-3, 40e-3),
            ],
            &p,
        )
        .unwrap();
        assert!((f.bw.value - 0.9).abs() < 1e-9, "{f:?}");
        assert!((f.lat.value - 1.0).abs() < 1e-9, "{f:?}");
    }

    #[test]
    fn a_slow_tier_faster_than_dram_gives_zero_not_negative() {
        let f = fit(
            &[
                run(CalKind::Bandwidth, 1e6, 6.4e-3, 6.0e-3),
                run(CalKind::Latency, 1e5, 10e-3, 40e-3),
            ],
            &plat(),
        )
        .unwrap();
        assert_eq!(f.bw.value, 0.0);
    }

    #[test]
    fn a_difference_the_model_does_not_predict_leaves_the_factor_at_1() {
        // 1/2 bandwidth, same latency: the latency benefit is 0, so a
        // chase that measures 1% slower in the slow tier cannot be fitted.
        let p = Platform::emulated(10e9, 100e-9, 2.0, 1.0);
        let f = fit(
            &[
                run(CalKind::Bandwidth, 1e6, 6.4e-3, 12.8e-3),
                run(CalKind::Latency, 1e5, 10e-3, 10.1e-3),
            ],
            &p,
        )
        .unwrap();
        assert_eq!(f.lat.value, 1.0);
        assert!(!f.lat.identifiable);
        assert!(f.bw.identifiable);
        assert!((f.bw.value - 1.0).abs() < 1e-9);
    }

    #[test]
    fn missing_kind_and_bad_values_are_errors() {
        let p = plat();
        assert_eq!(
            fit(&[run(CalKind::Bandwidth, 1e6, 1e-3, 2e-3)], &p),
            Err(CalError::Missing(CalKind::Latency))
        );
        let e = fit(
            &[
                run(CalKind::Bandwidth, 1e6, 1e-3, 2e-3),
                run(CalKind::Latency, 1e5, f64::NAN, 2e-3),
            ],
            &p,
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                CalError::BadRun {
                    index: 1,
                    what: "dram_s",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("dram_s"));
        assert!(fit(&[run(CalKind::Latency, 0.0, 1e-3, 2e-3)], &p).is_err());
    }

    #[test]
    fn dram_ratio_is_the_thesis_literal_reading() {
        let p = plat();
        // 1e6 lines of 64 B at 10 GB/s = 6.4 ms; measured 8 ms -> 1.25
        let r = run(CalKind::Bandwidth, 1e6, 8e-3, 16e-3);
        assert!((r.dram_ratio(&p) - 1.25).abs() < 1e-9);
        // 1e5 chases at 100 ns = 10 ms; measured 20 ms -> 2
        let r = run(CalKind::Latency, 1e5, 20e-3, 50e-3);
        assert!((r.dram_ratio(&p) - 2.0).abs() < 1e-9);
    }
}

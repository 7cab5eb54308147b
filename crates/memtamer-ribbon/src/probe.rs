//! What the four-point search knows about one sample point: the bandwidth
//! measured over its probe windows, and how noisy that measurement is.
//!
//! The thesis (§6.3.1) measures "BW_1^NVM .. BW_4^NVM" once each and
//! compares them with a plain "higher than"; it does not say how long a
//! probe lasts (only that the counters are read every T = 1 s). Comparing
//! single short probes that way follows probe noise: in the simulator two
//! searches on the same workload ended at 4 and 19 or 39 flushers
//! (docs/notebook/ribbon.md, "The thesis's strict >, measured"). This module is this
//! project's addition: each probe window is read as `slices` equal
//! slices, whose rates give a standard error, and a difference counts as
//! "higher" or "lower" only when it exceeds `z` standard errors; otherwise
//! the controller re-probes the pair (see [`crate::controller`]).

/// The bandwidth measured at one sample point, over all its slices.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Estimate {
    bytes: f64,
    secs: f64,
    /// Rate of each slice (bytes/s).
    rates: Vec<f64>,
}

impl Estimate {
    /// Adds a slice of `secs` seconds in which `bytes` were written back.
    /// Empty slices (no time) are ignored.
    pub fn add(&mut self, bytes: f64, secs: f64) {
        if secs > 0.0 && bytes.is_finite() && secs.is_finite() {
            self.bytes += bytes;
            self.secs += secs;
            self.rates.push(bytes / secs);
        }
    }

    /// Slices measured.
    pub fn slices(&self) -> usize {
        self.rates.len()
    }

    /// The point's bandwidth: all bytes over all time (bytes/s; 0 when
    /// nothing was measured).
    pub fn mean(&self) -> f64 {
        if self.secs > 0.0 {
            self.bytes / self.secs
        } else {
            0.0
        }
    }

    /// Standard error of [`Estimate::mean`] from the spread of the slice
    /// rates (sample standard deviation / sqrt(n)); 0 with fewer than two
    /// slices (nothing to estimate the noise from: the comparison is then
    /// the thesis's plain one).
    pub fn std_err(&self) -> f64 {
        let n = self.rates.len();
        if n < 2 {
            return 0.0;
        }
        let m = self.rates.iter().sum::<f64>() / n as f64;
        let var = self.rates.iter().map(|r| (r - m) * (r - m)).sum::<f64>() / (n - 1) as f64;
        (var / n as f64).sqrt()
    }
}

/// How two points' bandwidths compare.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// `a` is higher than `b` by more than the noise band.
    Higher,
    /// `a` is lower than `b` by more than the noise band.
    Lower,
    /// The difference lies within the noise band.
    Unsure,
}

/// Compares `a` with `b`. The band is the larger of `tol` of the larger
/// mean (a fixed guard; 0.0 is the thesis's rule) and `z` standard errors
/// of the difference. With `tol` = 0 and no measured spread this is the
/// thesis's plain comparison, with equality `Unsure`.
pub fn compare(a: &Estimate, b: &Estimate, tol: f64, z: f64) -> Verdict {
    let (ma, mb) = (a.mean(), b.mean());
    let se = (a.std_err().powi(2) + b.std_err().powi(2)).sqrt();
    let band = (tol * ma.abs().max(mb.abs())).max(z * se);
    within_band(ma, mb, band)
}

/// `a` against `b`: higher or lower only by more than `band` (absolute),
/// else a tie. The one comparison both [`compare`] and the controller's
/// table on plain bandwidths use.
pub(crate) fn within_band(a: f64, b: f64, band: f64) -> Verdict {
    if a > b + band {
        Verdict::Higher
    } else if b > a + band {
        Verdict::Lower
    } else {
        Verdict::Unsure
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn est(rates: &[f64]) -> Estimate {
        let mut e = Estimate::default();
        for r in rates {
            e.add(*r * 0.01, 0.01);
        }
        e
    }

    #[test]
    fn mean_is_bytes_over_time_and_error_shrinks_with_slices() {
        let e = est(&[9.0, 11.0]);
        assert!((e.mean() - 10.0).abs() < 1e-9);
        // sd = sqrt(2), se = sd / sqrt(2) = 1
        assert!((e.std_err() - 1.0).abs() < 1e-9);
        let e = est(&[9.0, 11.0, 9.0, 11.0, 9.0, 11.0, 9.0, 11.0]);
        assert!(e.std_err() < 0.4);
        assert_eq!(est(&[5.0]).std_err(), 0.0);
        assert_eq!(Estimate::default().mean(), 0.0);
        let mut e = Estimate::default();
        e.add(1.0, 0.0);
        assert_eq!(e.slices(), 0);
    }

    #[test]
    fn a_difference_counts_only_beyond_the_noise_band() {
        let quiet_lo = est(&[10.0, 10.0, 10.0, 10.0]);
        let quiet_hi = est(&[10.1, 10.1, 10.1, 10.1]);
        // no spread: +1% is higher (the thesis's rule)
        assert_eq!(compare(&quiet_hi, &quiet_lo, 0.0, 2.0), Verdict::Higher);
        assert_eq!(compare(&quiet_lo, &quiet_hi, 0.0, 2.0), Verdict::Lower);
        // a fixed 2% guard hides it
        assert_eq!(compare(&quiet_hi, &quiet_lo, 0.02, 2.0), Verdict::Unsure);
        // the same means, measured with +-10% slice noise: unsure
        let noisy_lo = est(&[9.0, 11.0, 9.0, 11.0]);
        let noisy_hi = est(&[9.1, 11.1, 9.1, 11.1]);
        assert_eq!(compare(&noisy_hi, &noisy_lo, 0.0, 2.0), Verdict::Unsure);
        // equal is never higher
        assert_eq!(compare(&quiet_lo, &quiet_lo, 0.0, 0.0), Verdict::Unsure);
    }
}

//! A task's PM I/O load as Ahn et al. smooth it (Ahn Eq. 1): an exponential
//! moving average of PM operations per cycle, kept separately for reads and
//! writes because PM's read and write costs differ. Smoothing stops a burst
//! of PM I/O from moving a task between scheduling groups every period.

/// Ahn's constants: weight k = 0.5, scale alpha = 100,000 for a profiling
/// period of one million cycles (Ahn §3.2).
pub const AHN_K: f64 = 0.5;
/// See [`AHN_K`].
pub const AHN_ALPHA: f64 = 100_000.0;

/// The smoothed PM read and write load of one task.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PmLoad {
    /// Read load M (Ahn Eq. 1).
    pub read: f64,
    /// Write load M.
    pub write: f64,
}

impl PmLoad {
    /// One profiling period: `reads`/`writes` PM operations over `cycles`
    /// cycles. Ahn Eq. 1: M_{i+1} = k * alpha * (P_i / cycle) + (1 - k) * M_i.
    /// A period of zero cycles (the task did not run) keeps the load.
    pub fn update(&mut self, reads: u64, writes: u64, cycles: u64, k: f64, alpha: f64) {
        if cycles == 0 || !k.is_finite() || !alpha.is_finite() {
            return;
        }
        let k = k.clamp(0.0, 1.0);
        let step = |m: f64, p: u64| k * alpha * (p as f64 / cycles as f64) + (1.0 - k) * m; // Ahn Eq. 1
        self.read = step(self.read, reads);
        self.write = step(self.write, writes);
    }

    /// `update` with Ahn's constants.
    pub fn update_ahn(&mut self, reads: u64, writes: u64, cycles: u64) {
        self.update(reads, writes, cycles, AHN_K, AHN_ALPHA);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_eq_1_with_ahns_constants() {
        let mut m = PmLoad::default();
        // 1,000 PM writes in a million cycles: P/cycle = 0.001 -> k*alpha*0.001 = 50
        m.update_ahn(0, 1_000, 1_000_000);
        assert!((m.write - 50.0).abs() < 1e-9);
        assert_eq!(m.read, 0.0);
        // the same again: 50 + 0.5 * 50 = 75; then idle: 37.5
        m.update_ahn(0, 1_000, 1_000_000);
        assert!((m.write - 75.0).abs() < 1e-9);
        m.update_ahn(0, 0, 1_000_000);
        assert!((m.write - 37.5).abs() < 1e-9);
    }

    #[test]
    fn a_burst_is_damped_and_bad_inputs_change_nothing() {
        let mut m = PmLoad::default();
        m.update_ahn(0, 100_000, 1_000_000); // one burst period
        let after_burst = m.write;
        for _ in 0..5 {
            m.update_ahn(0, 0, 1_000_000);
        }
        assert!(m.write < after_burst / 30.0);
        let before = m;
        m.update(5, 5, 0, 0.5, 1e5);
        m.update(5, 5, 10, f64::NAN, 1e5);
        assert_eq!(m, before);
        m.update(0, 10, 10, 7.0, 1.0); // k clamps to 1: M = alpha * P / cycle
        assert_eq!(m.write, 1.0);
    }
}

//! Quiet phase times: the timing iteration after each profiled one
//! ([`super::DriverConfig::quiet_times`]) and what reads it.

use super::Driver;
use crate::unimem::model::PhaseProfile;

impl Driver {
    /// The last timing iteration's phase times (s); empty before the first
    /// or with quiet times off ([`super::DriverConfig::quiet_times`]).
    pub fn quiet_times(&self) -> &[f64] {
        &self.quiet
    }

    /// The last profiled iteration's phase times (s), its sampling faults
    /// and its partners' waits included.
    pub fn profiled_times(&self) -> Vec<f64> {
        self.profile.iter().map(|p| p.time).collect()
    }

    /// The phase times the decisions and the guard read (s).
    pub fn decision_times(&self) -> Vec<f64> {
        self.decision_phases().iter().map(|p| p.time).collect()
    }

    /// The phase times the decision and the guard read: the profile's,
    /// with each phase's `time` from the timing iteration when it saw as
    /// many phases ([`quiet_profile`]).
    pub(super) fn decision_phases(&self) -> Vec<PhaseProfile> {
        if self.quiet_in_use() {
            quiet_profile(&self.profile, &self.quiet)
        } else {
            self.profile.clone()
        }
    }

    /// Whether the decisions read the timing iteration's times: quiet
    /// times on, and the timing iteration saw the profile's phases.
    pub(super) fn quiet_in_use(&self) -> bool {
        self.cfg.quiet_times && self.quiet.len() == self.profile.len()
    }
}

/// `profile` with each phase's `time` replaced by `quiet`'s (the timing
/// iteration's), when both saw the same number of phases; else `profile`
/// unchanged. Why: the profiled iteration's phase times include the
/// fault sampler's faults and, across ranks, partners' waits for them
/// (MG at 4 ranks: 135-198 ms against 15 ms quiet), and Eq. 3.1's demand
/// and Eq. 3.3's overlap windows read them: inflated windows credit
/// per-iteration copies as hidden that run exposed (docs/notebook/unimem.md,
/// "Quiet phase times").
pub fn quiet_profile(profile: &[PhaseProfile], quiet: &[f64]) -> Vec<PhaseProfile> {
    let mut out = profile.to_vec();
    if quiet.len() == profile.len() {
        for (p, &t) in out.iter_mut().zip(quiet) {
            p.time = t;
        }
    }
    out
}

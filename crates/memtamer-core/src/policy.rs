//! The policy interface: Observation in, Decision out, no I/O.

use crate::{Decision, Observation};

/// A control policy. Implementations must be pure functions of their own
/// state and the observation: no clocks, files, syscalls or randomness from
/// outside, so that the simulator and the Linux daemon run the same code and
/// a simulated result means something for the real system.
pub trait Policy: Send {
    /// Short stable name (used in scenario files and reports).
    fn name(&self) -> &str;
    /// Decides what to change after one observation window.
    fn decide(&mut self, obs: &Observation) -> Decision;
}

/// The no-op policy: what the papers call "Baseline" (no control at all).
#[derive(Clone, Debug, Default)]
pub struct Baseline;

impl Policy for Baseline {
    fn name(&self) -> &str {
        "baseline"
    }
    fn decide(&mut self, _obs: &Observation) -> Decision {
        Decision::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn baseline_never_acts() {
        let mut p = Baseline;
        let obs = Observation {
            duration_ns: 1_000_000,
            ..Default::default()
        };
        assert!(p.decide(&obs).is_noop());
        assert_eq!(p.name(), "baseline");
    }
}

//! The policy interface: Observation in, Decision out, no I/O.

use crate::{Decision, Observation, ThreadObs};

/// A control policy. Implementations must be pure functions of their own
/// state and the observation: no clocks, files, syscalls or randomness from
/// outside, so that the simulator and the Linux daemon run the same code and
/// a simulated result means something for the real system.
pub trait Policy: Send {
    /// Short stable name (used in scenario files and reports).
    fn name(&self) -> &str;
    /// Decides what to change after one observation window.
    fn decide(&mut self, obs: &Observation) -> Decision;
    /// Placement's per-thread view (loads, pins, residency) for `memtamer
    /// status`; empty for every policy that places nothing.
    fn placed_threads(&self) -> Vec<crate::placement::PlacedThread> {
        Vec::new()
    }
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

/// A fixed gate limit: used to measure how a platform behaves with exactly
/// N concurrently admitted PM requests (calibration, experiments).
#[derive(Clone, Debug)]
pub struct FixedGate {
    /// The limit.
    pub limit: u32,
    applied: bool,
}

impl FixedGate {
    /// A policy that sets the gate limit to `limit` (at least 1) once.
    pub fn new(limit: u32) -> FixedGate {
        FixedGate {
            limit: limit.max(1),
            applied: false,
        }
    }
}

impl Policy for FixedGate {
    fn name(&self) -> &str {
        "gate"
    }
    fn decide(&mut self, _obs: &Observation) -> Decision {
        if self.applied {
            return Decision::default();
        }
        self.applied = true;
        Decision {
            gate_limit: Some(crate::GateLimit::Limit(self.limit)),
            reasons: vec![format!("fixed gate limit {}", self.limit)],
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_gate_sets_its_limit_once() {
        let mut p = FixedGate::new(0);
        let obs = Observation::default();
        assert_eq!(p.decide(&obs).gate_limit, Some(crate::GateLimit::Limit(1)));
        assert!(p.decide(&obs).is_noop());
    }

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

/// What the caller of `Composite::decide_hinted` (and of the policies it composes) knows about an
/// observation beyond its content. With it, a window in which nothing
/// changed costs work in proportion to the threads that carry traffic rather
/// than to every managed thread (a 1 ms loop over 100 threads would
/// otherwise walk them all every window). `Hints::default()`, nothing known,
/// is always correct.
#[derive(Clone, Copy, Debug, Default)]
pub struct Hints<'a> {
    /// An id of the observation's thread list (ids, jobs, affinities, order)
    /// and job list: the caller passes the same id again only while both are
    /// unchanged.
    pub shape: Option<u64>,
    /// Indices into `threads` of every thread whose `pm`, `dram` or
    /// `gate_wait_ns` may be set; the others carry none of them.
    pub reporting: Option<&'a [usize]>,
}

impl<'a> Hints<'a> {
    /// The threads of `obs` that may carry traffic: those `reporting`
    /// names, or every thread when it is unknown.
    pub fn reporting_threads<'o>(
        &self,
        obs: &'o Observation,
    ) -> impl Iterator<Item = &'o ThreadObs> + 'o
    where
        'a: 'o,
    {
        let (all, some): (&[ThreadObs], &[usize]) = match self.reporting {
            None => (&obs.threads, &[]),
            Some(r) => (&[], r),
        };
        all.iter()
            .chain(some.iter().filter_map(|&i| obs.threads.get(i)))
    }
}

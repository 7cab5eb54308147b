//! How long one Unimem decision may search on the application thread
//! (the driver's [`crate::driver::DriverConfig::decision_share`]).

/// Default [`crate::driver::DriverConfig::decision_share`]: a decision may search for
/// 0.5% of the run it plans (issue 20 bounds profiling plus decisions at
/// 3%, and a run re-decides a few times).
pub const DEFAULT_DECISION_SHARE: f64 = 0.005;

/// Least search time a bounded decision gets, so that a short profiled
/// iteration still leaves the knapsacks' plan a few `leave_room` rounds.
pub const MIN_DECISION_S: f64 = 1e-3;

/// Seconds one decision's search may take: `share` of the expected run,
/// `iterations` iterations of `iteration_s` seconds, at least
/// [`MIN_DECISION_S`]; `None` (no bound) when `share` is 0 or an input is
/// not a finite non-negative number. Why: `leave_room`'s cost grows with
/// phases x objects per round, so without a bound a program with many
/// MPI calls per iteration pays more for the decision than the plan can
/// win (MG, 120 phases per iteration: tens of ms per decision).
pub fn decision_budget_s(share: f64, iterations: f64, iteration_s: f64) -> Option<f64> {
    let ok = |x: f64| x.is_finite() && x >= 0.0;
    if !(ok(share) && ok(iterations) && ok(iteration_s)) || share == 0.0 {
        return None;
    }
    Some((share * iterations * iteration_s).max(MIN_DECISION_S))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decision_budget_is_a_share_of_the_run_with_a_floor() {
        // MG: 8 ms iterations, 100 expected, 0.5%: 4 ms
        let b = decision_budget_s(0.005, 100.0, 0.008).unwrap();
        assert!((b - 0.004).abs() < 1e-12);
        // a tiny iteration still gets the floor
        assert_eq!(decision_budget_s(0.005, 10.0, 1e-6), Some(MIN_DECISION_S));
        // share 0: the unbounded search
        assert_eq!(decision_budget_s(0.0, 100.0, 1.0), None);
        // inputs a profile or the environment could get wrong: no bound,
        // never a zero or negative deadline
        for (s, i, t) in [
            (f64::NAN, 1.0, 1.0),
            (0.1, f64::INFINITY, 1.0),
            (0.1, 1.0, -1.0),
            (-0.1, 1.0, 1.0),
        ] {
            assert_eq!(decision_budget_s(s, i, t), None, "{s} {i} {t}");
        }
    }
}

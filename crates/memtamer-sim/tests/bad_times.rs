//! Hostile-input sweep (docs/bad-input.md, 2026-11-27): a time key of
//! 1e30 ns passed "finite and >= 0", saturated to 2^64-1 ps and wrapped
//! the simulated clock, so the work took no time (a Ribbon flush workload
//! with `compute_ns = 1e30` ran as fast as with 0). Such values are now
//! refused, naming the key.

use memtamer_sim::config::parse_value;
use memtamer_sim::experiment::load_scenario;
use memtamer_sim::tier_eval::parse_profile;

fn override_error(scenario: &str, key: &str, value: &str) -> String {
    let s = load_scenario(scenario).unwrap();
    let sets = vec![(key.to_string(), parse_value(value))];
    match s.with_overrides(&sets) {
        Ok(_) => format!("accepted {key}={value}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn times_past_the_simulated_clock_are_refused_by_key() {
    for v in ["1e30", "1e16", "1.8446744073709552e19"] {
        let e = override_error("ribbon-linestate", "job.app.workload.compute_ns", v);
        assert!(
            e.contains("compute_ns") && e.contains("must be at most 1e15 ns"),
            "{v}: {e}"
        );
    }
    // the largest accepted value is accepted
    let e = override_error("ribbon-linestate", "job.app.workload.compute_ns", "1e15");
    assert!(e.starts_with("accepted"), "{e}");
}

#[test]
fn recorded_phases_longer_than_the_clock_are_refused() {
    let text = "# memtamer-phase-profile v2\nobject a 4096\n\
                phase p 18446744073709551615 0 18446744073709551615 0\naccess a 10 1\n";
    let e = parse_profile("rec", text, 2).unwrap_err().to_string();
    assert!(e.contains("compute_ns must be at most"), "{e}");
    let ok = "# memtamer-phase-profile v2\nobject a 4096\nphase p 1000 0 1000 0\naccess a 10 1\n";
    assert!(parse_profile("rec", ok, 2).is_ok());
}

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

/// The same for a platform's times and bandwidths (2026-11-27, helper
/// harden2): `cpu.core_to_uncore_ns = 1e300` made a memcpy job 1.5x
/// faster (12.9 against 8.6 GB/s) and `pm.media_write_gbps = 1e-300` made
/// PM writes 3x faster (7.2 against 2.3 GB/s), both by wrapping the clock;
/// and 2 sockets x 2^31 cores x 2 threads wrapped the CPU count to 0,
/// which passed the "too many logical CPUs" check.
#[test]
fn platform_times_and_bandwidths_past_the_simulated_clock_are_refused_by_key() {
    use memtamer_sim::experiment::load_platform;
    let load = |sets: &[(&str, &str)]| {
        let set = sets
            .iter()
            .map(|(k, v)| (k.to_string(), parse_value(v)))
            .collect();
        match load_platform("pats", &set) {
            Ok(_) => "accepted".to_string(),
            Err(e) => e.to_string(),
        }
    };
    for (key, value, needle) in [
        ("cpu.core_to_uncore_ns", "1e300", "must be at most 1e15"),
        ("dram.access_ns", "1e16", "must be at most 1e15"),
        ("dram.banks.trcd_ns", "1e16", "must be at most 1e15"),
        ("cpu.clwb_clean_ns", "1e16", "must be at most 1e15"),
        ("cpu.time_slice_us", "1e13", "must be at most 1e12"),
        ("pm.media_counter_delay_ms", "1e10", "must be at most 1e9"),
        (
            "pm.media_write_gbps",
            "1e-300",
            "must be at least 1.073741824e-6 GB/s",
        ),
        ("pm.media_read_gbps", "1e-7", "must be at least"),
        ("dram.bus_gbps", "1e-7", "must be at least"),
    ] {
        let e = load(&[(key, value)]);
        assert!(e.contains(key) && e.contains(needle), "{key}={value}: {e}");
    }
    for (key, value) in [
        ("cpu.core_to_uncore_ns", "1e15"),
        ("cpu.time_slice_us", "1e12"),
        ("dram.bus_gbps", "1.1e-6"),
    ] {
        assert_eq!(load(&[(key, value)]), "accepted", "{key}={value}");
    }
    let e = load(&[("cpu.sockets", "2"), ("cpu.cores_per_socket", "2147483648")]);
    assert!(e.contains("too many logical CPUs"), "{e}");
}

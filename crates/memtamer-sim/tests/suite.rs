//! `sim validate`'s pooled suite (`memtamer_sim::suite`) gives exactly what
//! running each scenario on its own gives, with any number of worker threads
//! and with points shared between scenarios run once.

use memtamer_sim::experiment::{load_scenario, run_scenario, RunOptions};
use memtamer_sim::suite::run_suite;

/// Small built-in scenarios; the first appears twice, so every one of its
/// points is shared with an identical point of another scenario.
fn names() -> Vec<String> {
    [
        "pats-fig1-write",
        "ribbon-linestate",
        "archtm-replay",
        "pats-fig1-write",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn pooled_suite_matches_scenario_by_scenario_runs_with_any_jobs() {
    let alone: Vec<String> = names()
        .iter()
        .map(|n| {
            let s = load_scenario(n).unwrap();
            let opts = RunOptions {
                jobs: 1,
                ..Default::default()
            };
            serde_json::to_string(&run_scenario(&s, &opts).unwrap()).unwrap()
        })
        .collect();
    for jobs in [1, 2] {
        let v = run_suite(&names(), false, false, jobs).unwrap();
        assert!(v.platforms.is_empty());
        let pooled: Vec<String> = v
            .scenarios
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect();
        assert_eq!(pooled.len(), alone.len());
        for (i, (a, b)) in alone.iter().zip(&pooled).enumerate() {
            assert!(a == b, "scenario {} differs with --jobs {jobs}", names()[i]);
        }
    }
}

#[test]
fn a_bad_scenario_fails_before_anything_runs() {
    let mut n = names();
    n.push("no-such-scenario".into());
    let e = run_suite(&n, false, false, 2)
        .err()
        .expect("unknown name fails");
    assert!(e.to_string().contains("no-such-scenario"), "{e}");
}

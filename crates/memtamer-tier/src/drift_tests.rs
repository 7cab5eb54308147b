use super::*;
use crate::unimem::plan::drifted;

/// A seeded generator (64-bit LCG, Knuth's MMIX constants): uniform in
/// [0, 1), reproducible, no dependency.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// A noisy host: 120 phases of 2 ms, each iteration every phase off by
/// up to +-15% (uniform), and with probability `stall` a phase stalled by
/// a 4 ms time slice (a preempted partner rank).
fn noisy_iteration(rng: &mut Lcg, stall: f64) -> Vec<f64> {
    (0..120)
        .map(|_| {
            let mut t = 2e-3 * (1.0 + 0.3 * (rng.next() - 0.5));
            if rng.next() < stall {
                t += 4e-3;
            }
            t
        })
        .collect()
}

#[test]
fn stalls_reprofile_a_bounded_number_of_times_where_the_plain_rule_does_every_few_iterations() {
    let mut rng = Lcg(7);
    let mut m = DriftMonitor::new(0.1, DEFAULT_BASELINE, DEFAULT_RUN);
    // the rule before: the first quiet iteration is the reference, any
    // phase off by 10% drifts, three drifting iterations in a row
    let (mut reference, mut old_run, mut old) = (None::<Vec<f64>>, 0, 0);
    let mut fired = 0;
    for _ in 0..1000 {
        // one phase in 20 stalled: 6 stalls of 4 ms per 240 ms iteration
        let t = noisy_iteration(&mut rng, 0.05);
        fired += u32::from(m.observe(&t));
        match &reference {
            None => reference = Some(t),
            Some(r) => {
                old_run = if drifted(r, &t, 0.1) { old_run + 1 } else { 0 };
                if old_run >= 3 {
                    old += 1;
                    old_run = 0;
                    reference = None;
                }
            }
        }
    }
    assert!(old > 100, "the plain rule re-profiled only {old} times");
    // A 4 ms stall is out of any band, and 3 stalls in a row on one of
    // 120 phases happen about once in 70 iterations here (0.05^3 x 120):
    // the backoff keeps the count to about log2(1000 / 3 + 1) (next
    // tests: plain noise never fires).
    assert!(fired <= 9, "{fired}");
    assert_eq!(u64::from(fired), m.reprofiles());
}

#[test]
fn a_real_change_reprofiles_after_the_run() {
    let mut rng = Lcg(11);
    let mut m = DriftMonitor::new(0.1, DEFAULT_BASELINE, DEFAULT_RUN);
    // plain noise (+-15%, no stall), the 30 iterations of an MG run: no
    // re-profile (a phase whose 3-sample centre is off by 13% can still
    // see a run of 3 now and then over hundreds of iterations; the
    // backoff bounds those)
    for i in 0..30 {
        assert!(!m.observe(&noisy_iteration(&mut rng, 0.0)), "iteration {i}");
    }
    // phase 17 doubles (the workload changed): out of 3 sigma (26%) on
    // the high side in every iteration from now on
    let mut when = None;
    for i in 0..10 {
        let mut t = noisy_iteration(&mut rng, 0.0);
        t[17] = 4e-3;
        if m.observe(&t) {
            when = Some(i);
            break;
        }
    }
    assert_eq!(when, Some(2), "the third changed iteration re-profiles");
    assert_eq!(m.reprofiles(), 1);
}

#[test]
fn a_run_must_stay_on_one_side() {
    let mut m = DriftMonitor::new(0.1, 1, 3);
    assert!(!m.observe(&[0.01, 0.01]), "baseline");
    // phase 0 out high, low, high: never three on one side
    for x in [0.02, 0.005, 0.02, 0.005, 0.02] {
        assert!(!m.observe(&[x, 0.01]));
    }
    // then three high in a row
    assert!(!m.observe(&[0.02, 0.01]));
    assert!(m.observe(&[0.02, 0.01]));
}

#[test]
fn the_band_is_the_tolerance_or_three_pooled_sigma_of_the_baseline() {
    // baselines 10, 12, 14 ms (range 1/3 of the centre) on two phases,
    // 20, 20, 20 on a third: the median relative range is 1/3, sigma
    // (1/3) / 1.693, 3 sigma = 59.1% of each centre, wider than 10%
    let mut m = DriftMonitor::new(0.1, 3, 1);
    for x in [0.010, 0.014, 0.012] {
        assert!(!m.observe(&[x, x, 0.020]));
    }
    assert!(!m.observe(&[0.019, 0.012, 0.031]), "+58%: inside");
    assert!(
        m.observe(&[0.012, 0.012, 0.0320]),
        "the quiet phase +60%: out"
    );
    // a quiet baseline: the 10% tolerance is the band
    let mut m = DriftMonitor::new(0.1, 3, 1);
    for _ in 0..3 {
        assert!(!m.observe(&[0.010]));
    }
    assert!(!m.observe(&[0.0109]));
    assert!(m.observe(&[0.0111]));
}

#[test]
fn short_phases_and_a_zero_tolerance_never_count() {
    let mut m = DriftMonitor::new(0.1, 1, 1);
    assert!(!m.observe(&[0.5e-3]));
    for _ in 0..10 {
        assert!(!m.observe(&[0.9e-3 * 10.0]), "a sub-ms phase is jitter");
    }
    let mut m = DriftMonitor::new(0.0, 1, 1);
    assert!(!m.observe(&[0.01]));
    assert!(!m.observe(&[1.0]));
}

#[test]
fn backoff_bounds_the_reprofiles_of_a_run() {
    // a program whose phase time grows 50% every iteration drifts
    // forever: 1000 iterations re-profile 8 times, not 1000 / 4
    let mut m = DriftMonitor::new(0.1, 1, 3);
    let mut t = 0.01;
    let mut fired = 0;
    for _ in 0..1000 {
        fired += u32::from(m.observe(&[t]));
        t *= 1.5;
        if t > 1.0 {
            t = 0.01; // stay finite; the next baseline sees it
        }
    }
    assert_eq!(fired as u64, m.reprofiles());
    assert!((5..=9).contains(&fired), "{fired}");
}

#[test]
fn a_changed_phase_count_restarts_the_baseline_or_reprofiles() {
    let mut m = DriftMonitor::new(0.1, 2, 3);
    assert!(!m.observe(&[0.01, 0.01]));
    // the baseline had 2 phases; a 3-phase sample starts it again
    assert!(!m.observe(&[0.01, 0.01, 0.01]));
    assert!(!m.observe(&[0.01, 0.01, 0.01]));
    assert!(m.observe(&[0.01, 0.01]), "after the baseline: a change");
}

#[test]
fn new_objects_reprofile_only_after_the_gap() {
    assert!(!new_objects_reprofile(0, 100, 1), "nothing new");
    assert!(
        !new_objects_reprofile(3, 0, 1),
        "still the decided iteration"
    );
    assert!(new_objects_reprofile(1, 1, 1));
    assert!(!new_objects_reprofile(1, 3, 4));
    assert!(new_objects_reprofile(1, 4, 4));
}

/// A program that allocates a new long-lived object every iteration:
/// with the doubling gap, 1000 iterations re-profile at most
/// log2(1001) < 10 times.
#[test]
fn doubling_gap_bounds_reprofiles() {
    let (mut gap, mut since, mut count) = (1u64, 0u64, 0u32);
    for _ in 0..1000 {
        since += 1;
        if new_objects_reprofile(1, since, gap) {
            count += 1;
            gap *= 2;
            since = 0;
        }
    }
    assert_eq!(count, 9);
}

use super::*;

fn set(v: &[usize]) -> BTreeSet<ObjId> {
    v.iter().copied().collect()
}

/// A guard with `before` quiet iterations fed and a plan adopted.
fn judging(before: &[&[f64]]) -> RegressionGuard {
    let mut g = RegressionGuard::new(3, 0.0);
    for b in before {
        assert_eq!(g.quiet(b, None), Verdict::Wait);
    }
    g.adopted();
    assert!(g.judging());
    g
}

#[test]
fn nothing_measured_before_means_nothing_judged() {
    let mut g = RegressionGuard::new(3, 0.0);
    g.adopted();
    assert!(!g.judging());
    // its quiet iterations become the reference for the next plan
    for _ in 0..3 {
        assert_eq!(g.quiet(&[1.0, 1.0], None), Verdict::Wait);
    }
    g.adopted();
    assert!(g.judging());
}

#[test]
fn a_noise_free_slowdown_reverts_after_judge_iterations() {
    let mut g = judging(&[&[1.0, 1.0]]);
    assert_eq!(g.quiet(&[1.5, 1.0], None), Verdict::Wait);
    assert_eq!(g.quiet(&[1.5, 1.0], None), Verdict::Wait);
    let Verdict::Revert(c) = g.quiet(&[1.5, 1.0], None) else {
        panic!("no revert")
    };
    assert_eq!((c.before_s, c.after_s, c.sigma), (2.0, 2.5, 0.0));
    assert_eq!(c.slower_phases, vec![0]);
    assert!((c.loss_s() - 0.5).abs() < 1e-12);
    assert!(!g.judging());
    // after the revert the old reference stays: a later plan as slow
    // reverts again
    g.adopted();
    for _ in 0..2 {
        assert_eq!(g.quiet(&[1.5, 1.0], None), Verdict::Wait);
    }
    assert!(matches!(g.quiet(&[1.5, 1.0], None), Verdict::Revert(_)));
}

#[test]
fn equal_or_faster_is_kept_and_becomes_the_reference() {
    let mut g = judging(&[&[1.0, 1.0]]);
    g.quiet(&[1.0, 1.0], None);
    g.quiet(&[1.0, 1.0], None);
    let Verdict::Keep(c) = g.quiet(&[1.0, 1.0], None) else {
        panic!("equal times must be kept")
    };
    assert!(!c.slower());
    // faster: kept, and the next plan is judged against it
    g.adopted();
    g.quiet(&[0.5, 1.0], None);
    g.quiet(&[0.5, 1.0], None);
    assert!(matches!(g.quiet(&[0.5, 1.0], None), Verdict::Keep(_)));
    g.adopted();
    g.quiet(&[0.8, 1.0], None);
    g.quiet(&[0.8, 1.0], None);
    // 1.8 > 1.5: slower than the best kept, though faster than the first
    let Verdict::Revert(c) = g.quiet(&[0.8, 1.0], None) else {
        panic!("no revert")
    };
    assert_eq!(c.before_s, 1.5);
}

#[test]
fn a_slowdown_within_the_noise_is_kept() {
    // before: totals 1.9 .. 2.1 (relative range 0.1), after 5% slower
    let mut g = judging(&[&[1.0, 0.9], &[1.0, 1.0], &[1.0, 1.1]]);
    g.quiet(&[1.05, 1.05], None);
    g.quiet(&[1.05, 1.05], None);
    let Verdict::Keep(c) = g.quiet(&[1.05, 1.05], None) else {
        panic!("noise taken for a slowdown")
    };
    // sigma from the totals' range (0.2 / 2.0 / d2(3)): the wider reading
    assert!((c.sigma - 0.1 / 1.693).abs() < 1e-12, "{c:?}");
    assert!(c.slower_phases.is_empty());
    // the same slowdown well beyond that noise reverts
    let mut g = judging(&[&[1.0, 0.9], &[1.0, 1.0], &[1.0, 1.1]]);
    for _ in 0..2 {
        g.quiet(&[1.5, 1.0], None);
    }
    assert!(matches!(g.quiet(&[1.5, 1.0], None), Verdict::Revert(_)));
}

#[test]
fn noise_of_the_new_plan_widens_the_band_too() {
    let mut g = judging(&[&[1.0, 1.0]]);
    g.quiet(&[1.0, 1.0], None);
    g.quiet(&[1.2, 1.2], None);
    // totals 2.0, 2.4, 2.6: median 2.4 (+20%), range 0.6 / 2.4 / 1.693
    let Verdict::Keep(c) = g.quiet(&[1.3, 1.3], None) else {
        panic!("a noisy plan judged without its own noise")
    };
    assert!(c.sigma > 0.14, "{c:?}");
}

#[test]
fn a_switch_that_would_not_pay_back_is_kept() {
    let mut g = judging(&[&[1.0, 1.0]]);
    g.switching(4.0); // 1.5 s beyond the plan's steady 2.5
    g.quiet(&[1.5, 1.0], Some(4.0));
    g.quiet(&[1.5, 1.0], Some(3.0));
    // 0.5 s lost per iteration x 2 left = 1.0 <= 1.5: not worth it
    let Verdict::KeepNoPayback(c) = g.quiet(&[1.5, 1.0], Some(2.0)) else {
        panic!("reverted at a loss")
    };
    assert_eq!(c.switch_s, 1.5);
    // with more iterations left it reverts
    let mut g = judging(&[&[1.0, 1.0]]);
    g.switching(4.0);
    g.quiet(&[1.5, 1.0], None);
    g.quiet(&[1.5, 1.0], None);
    assert!(matches!(
        g.quiet(&[1.5, 1.0], Some(10.0)),
        Verdict::Revert(_)
    ));
    // switching iterations do not count when nothing is judged
    let mut g = RegressionGuard::new(3, 0.0);
    g.switching(9.0);
    assert_eq!(g.quiet(&[1.0], None), Verdict::Wait);
}

#[test]
fn iterations_under_the_jitter_floor_are_never_judged_slower() {
    let mut g = RegressionGuard::new(1, 1e-3);
    g.quiet(&[0.0002, 0.0002], None);
    g.adopted();
    let Verdict::Keep(c) = g.quiet(&[0.0004, 0.0004], None) else {
        panic!("jitter judged")
    };
    assert!(c.sigma.is_infinite());
}

#[test]
fn the_reference_is_the_last_judge_quiet_iterations() {
    let mut g = RegressionGuard::new(2, 0.0);
    g.quiet(&[9.0], None);
    g.quiet(&[1.0], None);
    g.quiet(&[1.0], None);
    g.adopted();
    g.quiet(&[1.2], None);
    // against 1.0 (the 9.0 fell out of the window)
    let Verdict::Revert(c) = g.quiet(&[1.2], None) else {
        panic!("old sample kept")
    };
    assert_eq!(c.before_s, 1.0);
}

#[test]
fn a_changed_phase_structure_stops_the_judging() {
    let mut g = judging(&[&[1.0, 1.0]]);
    assert_eq!(g.quiet(&[5.0, 5.0, 5.0], None), Verdict::Wait);
    assert!(!g.judging());
    // the new shape is the reference now
    g.adopted();
    for _ in 0..2 {
        g.quiet(&[5.0, 5.0, 5.0], None);
    }
    assert!(matches!(g.quiet(&[5.0, 5.0, 5.0], None), Verdict::Keep(_)));
}

#[test]
fn rejected_plans_are_remembered_once() {
    let mut g = RegressionGuard::new(3, 0.0);
    let p = vec![set(&[0, 1]), set(&[2])];
    assert!(!g.is_rejected(&p));
    g.reject(&p);
    g.reject(&p);
    assert!(g.is_rejected(&p));
    assert_eq!(g.rejected(), 1);
    assert!(!g.is_rejected(&[set(&[0, 1]), set(&[1])]));
}

#[test]
fn compare_reports_slower_phases_against_the_noise() {
    let before = vec![vec![1.0, 2.0, 3.0]];
    let after = vec![vec![0.5, 2.0, 4.0], vec![0.5, 2.0, 4.0]];
    let c = compare(&before, &after, &[], 0.0);
    assert_eq!(c.slower_phases, vec![2]);
    assert_eq!((c.before_s, c.after_s, c.sigma), (6.0, 6.5, 0.0));
    assert!(c.slower());
    assert_eq!(c.switch_s, 0.0);
}

#[test]
fn forgetting_measurements_keeps_the_rejected_plans() {
    let mut g = judging(&[&[1.0]]);
    g.reject(&[set(&[0])]);
    g.forget_measurements();
    assert!(!g.judging());
    assert!(g.is_rejected(&[set(&[0])]));
    // nothing to judge against now
    g.adopted();
    assert!(!g.judging());
}

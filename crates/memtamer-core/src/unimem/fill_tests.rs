use super::*;
use crate::unimem::plan::{global_search, per_iteration};
use crate::unimem::plan_tests_support::{phase, platform};

/// Four units of 100 bytes, DRAM for 250: the global knapsack takes the
/// two best whole (0 and 1) and leaves 50 bytes free in every phase; unit
/// 3 is worth more than unit 2 but is not divisible.
fn problem() -> Problem {
    Problem {
        sizes: vec![100, 100, 100, 100],
        phases: vec![
            phase(1.0, &[(0, 3e6), (1, 2e6), (2, 1e6)]),
            phase(1.0, &[(0, 3e6), (3, 1.5e6)]),
        ],
        platform: platform(1e3),
        capacity: 250,
        iterations: 100.0,
        exposure: Vec::new(),
    }
}

fn set(v: &[ObjId]) -> BTreeSet<ObjId> {
    v.iter().copied().collect()
}

#[test]
fn the_room_a_whole_unit_plan_leaves_gets_the_leading_part_of_the_best_divisible_unit() {
    let p = problem();
    let g = global_search(&p, &BTreeSet::new());
    assert_eq!(g, set(&[0, 1]), "the knapsack leaves 50 bytes free");
    let dram = vec![g; 2];
    let divisible = [true, true, true, false];
    let f = fill_remainder(&p, &dram, &BTreeSet::new(), &divisible, 10).expect("a fill");
    assert_eq!((f.unit, f.prefix, f.rest), (2, 50, Some(4)));
    assert_eq!(f.dram, vec![set(&[0, 1, 2]); 2]);
    assert_eq!(f.problem.sizes, vec![100, 100, 50, 100, 50]);
    assert!(f.after < f.before, "{} vs {}", f.after, f.before);
    // the plan's prediction is unchanged by the cut itself
    let before = predict(&p, &dram, &BTreeSet::new());
    assert!(
        (f.before - before).abs() <= 1e-9 * before,
        "{} vs {before}",
        f.before
    );
    // half of unit 2's benefit is no longer lost
    let lost = |q: &Problem, d: &[BTreeSet<ObjId>]| per_iteration(q, d).0;
    let saved = lost(&p, &dram) - lost(&f.problem, &f.dram);
    let half = p.bft(0, 2) / 2.0;
    assert!((saved - half).abs() <= 1e-9 * half, "{saved} vs {half}");
    // with unit 3 divisible too, its part is worth more
    let f3 = fill_remainder(&p, &dram, &BTreeSet::new(), &[true; 4], 10).expect("a fill");
    assert_eq!(f3.unit, 3);
}

#[test]
fn the_cut_divides_the_profile_by_bytes_and_keeps_the_class() {
    let p = problem();
    let q = split(&p, 0, 30);
    assert_eq!(q.sizes, vec![30, 100, 100, 100, 70]);
    for (i, ph) in q.phases.iter().enumerate() {
        let whole = &p.phases[i].objs[&0];
        assert!((ph.objs[&0].accesses - 0.3 * whole.accesses).abs() < 1e-6);
        assert!((ph.objs[&4].samples - 0.7 * whole.samples).abs() < 1e-6);
        // each part keeps the unit's benefit per byte
        let per_byte = p.bft(i, 0) / 100.0;
        assert!((q.bft(i, 0) / 30.0 - per_byte).abs() <= 1e-9 * per_byte);
        assert!((q.bft(i, 4) / 70.0 - per_byte).abs() <= 1e-9 * per_byte);
    }
    // no cut: a prefix of 0, the whole unit or beyond, an unknown unit
    assert_eq!(split(&p, 0, 0), p);
    assert_eq!(split(&p, 0, 100), p);
    assert_eq!(split(&p, 9, 10), p);
}

#[test]
fn nothing_is_filled_without_room_a_divisible_unit_or_a_gain() {
    let p = problem();
    let dram = vec![set(&[0, 1]); 2];
    let none = BTreeSet::new();
    // room under one granule
    assert_eq!(fill_remainder(&p, &dram, &none, &[true; 4], 64), None);
    // no divisible unit outside the plan
    assert_eq!(
        fill_remainder(&p, &dram, &none, &[true, true, false, false], 10),
        None
    );
    // a full plan
    let full = vec![set(&[0, 1]); 2];
    let small = Problem {
        capacity: 200,
        ..p.clone()
    };
    assert_eq!(fill_remainder(&small, &full, &none, &[true; 4], 10), None);
    // a unit no phase benefits from costs its copy and gains nothing
    let mut idle = p.clone();
    idle.phases[0].objs.remove(&2);
    assert_eq!(
        fill_remainder(&idle, &dram, &none, &[true, true, true, false], 10),
        None
    );
    // an empty plan or problem
    assert_eq!(fill_remainder(&p, &[], &none, &[true; 4], 10), None);
}

#[test]
fn a_unit_that_fits_whole_is_added_uncut_and_a_started_unit_keeps_its_rest_in_place() {
    let p = Problem {
        capacity: 300,
        ..problem()
    };
    let dram = vec![set(&[0, 1]); 2];
    let f = fill_remainder(&p, &dram, &BTreeSet::new(), &[true, true, true, false], 10)
        .expect("a fill");
    assert_eq!((f.unit, f.prefix, f.rest), (2, 100, None));
    assert_eq!(f.problem, p);
    // unit 2 in DRAM at the start: after the cut both parts are
    let f = fill_remainder(
        &problem(),
        &dram,
        &set(&[2]),
        &[true, true, true, false],
        10,
    )
    .expect("a fill");
    assert_eq!(f.start, set(&[2, 4]));
    assert_eq!(f.dram[0], set(&[0, 1, 2]));
}

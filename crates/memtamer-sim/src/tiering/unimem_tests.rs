use super::super::test_support::model;
use super::super::test_support::{program, View};
use super::super::PAGE;
use super::*;

/// The policy every test here builds: the test model's platform, one
/// profiled iteration.
fn policy(prog: &PhasedProgram, capacity: u64, search: SearchSpec, initial: bool) -> UnimemPolicy {
    UnimemPolicy::new(prog, capacity, platform(&model()), search, initial, 1)
}

#[test]
fn classification_is_against_the_slow_tiers_peak() {
    // §3.4.1: bandwidth-sensitive when the demand "reaches t1% of the
    // peak NVM bandwidth": 4.5 GB/s saturates this 5 GB/s slow tier
    // although it is under 80% of DRAM's 10 GB/s
    use memtamer_core::unimem::model::{classify, Sensitivity};
    let p = platform(&model());
    assert_eq!(classify(4.5e9, &p), Sensitivity::Bandwidth);
    assert_eq!(classify(3.9e9, &p), Sensitivity::Both);
    assert_eq!(classify(0.4e9, &p), Sensitivity::Latency);
}

/// Runs the profiling iteration of `pol` with phase times `t` over a view.
fn profile(pol: &mut UnimemPolicy, prog: &PhasedProgram, v: &View, t: f64) {
    let lines = super::super::static_lines(prog);
    for (i, l) in lines.iter().enumerate() {
        assert_eq!(pol.phase_start(0, i, v), PhaseStart::default());
        let obs = PhaseObs {
            time: t,
            wait: 0.0,
            lines: l.iter().map(|x| x.0).collect(),
        };
        pol.phase_end(0, i, &obs, v);
    }
}

/// 4 phases, each streaming its own object of 16 pages hard, with DRAM for
/// 2 objects; every page starts in the slow tier.
fn four_streams() -> (PhasedProgram, View) {
    let prog = program(
        &[16, 16, 16, 16],
        &[
            &[(0, 100_000, true)],
            &[(1, 100_000, true)],
            &[(2, 100_000, true)],
            &[(3, 100_000, true)],
        ],
    );
    let v = View {
        pages: vec![vec![Tier::Slow; 16]; 4],
        capacity: 32 * PAGE,
        busy: false,
    };
    (prog, v)
}

#[test]
fn phase_varying_program_gets_per_phase_moves_with_room_to_overlap() {
    // 4 phases, each streaming its own object of 16 pages hard; DRAM for
    // 2 objects. Long phases: copies hide in the phases between uses.
    let (prog, v) = four_streams();
    let mut pol = policy(&prog, 32 * PAGE, SearchSpec::Both, false);
    assert_eq!(pol.initial(), vec![0, 0, 0, 0]);
    profile(&mut pol, &prog, &v, 0.01);
    assert!(pol.summary().starts_with("local"), "{}", pol.summary());
    // phase 0 of the first enforced iteration: object 0 is not copied
    // (the schedule evicts it after phase 0: the copy would be undone
    // unused); phase 0 of the next iteration waits for the schedule's
    // promotion of it, made ahead of it
    let s = pol.phase_start(1, 0, &v);
    assert!(!s.moves.contains(&MoveReq::whole(0, Tier::Dram)), "{s:?}");
    assert!(pol.phase_start(2, 0, &v).wait.contains(&0));
    // every phase issues moves, and across the iteration each object comes in
    let mut promoted = BTreeSet::new();
    for i in 0..4 {
        for m in pol.phase_start(1, i, &v).moves {
            if m.to == Tier::Dram {
                promoted.insert(m.obj);
            }
        }
    }
    // (one object may stay resident: the plan is per phase, not a rotation)
    assert!(promoted.len() >= 3, "{promoted:?}: {}", pol.summary());
}

/// Runs enforced iteration `iter` of `pol` with every phase taking `t`.
fn enforced(pol: &mut UnimemPolicy, prog: &PhasedProgram, v: &View, iter: u32, t: f64) {
    for i in 0..prog.phases.len() {
        pol.phase_start(iter, i, v);
        let obs = PhaseObs {
            time: t,
            wait: 0.0,
            lines: vec![0; prog.objects.len()],
        };
        pol.phase_end(iter, i, &obs, v);
    }
}

#[test]
fn a_plan_measured_slower_than_the_profiled_placement_is_reverted() {
    let (prog, v) = four_streams();
    let build = || policy(&prog, 32 * PAGE, SearchSpec::Both, false);
    // measured faster than the profiled iteration: kept, nothing said
    let mut pol = build();
    profile(&mut pol, &prog, &v, 0.01);
    let decided = pol.summary();
    for it in 1..8 {
        enforced(&mut pol, &prog, &v, it, 0.005);
    }
    assert_eq!(pol.summary(), decided);
    assert!(pol.phase_start(8, 0, &v).moves.len() + pol.phase_start(8, 1, &v).moves.len() > 0);
    // measured slower: after the switching iterations (one-time moves
    // issued and waited for) and three quiet ones, the plan is reverted
    // to the profiled placement
    let mut pol = build();
    profile(&mut pol, &prog, &v, 0.01);
    let at = (1..=8)
        .find(|&it| {
            enforced(&mut pol, &prog, &v, it, 0.02);
            pol.summary().contains("reverted")
        })
        .expect("never reverted");
    assert!((3..=5).contains(&at), "{at}: {}", pol.summary());
    let next = at + 1;
    // all slow now and before: no one-time moves, no moves per iteration
    for it in next..next + 3 {
        for i in 0..4 {
            let s = pol.phase_start(it, i, &v);
            assert!(s.moves.is_empty() && s.wait.is_empty(), "{it}.{i}: {s:?}");
        }
    }
    assert_eq!(pol.guard.rejected(), 1);
}

#[test]
fn global_only_ablation_never_moves_inside_the_loop() {
    let prog = program(
        &[16, 16, 16],
        &[
            &[(0, 100_000, true)],
            &[(1, 50_000, true)],
            &[(2, 10, true)],
        ],
    );
    let mut pol = policy(&prog, 32 * PAGE, SearchSpec::Global, false);
    let v = View {
        pages: vec![vec![Tier::Slow; 16]; 3],
        capacity: 32 * PAGE,
        busy: false,
    };
    profile(&mut pol, &prog, &v, 0.01);
    let s = pol.phase_start(1, 0, &v);
    let mut once: Vec<MoveReq> = s.moves.clone();
    once.sort_by_key(|m| m.obj);
    assert_eq!(
        once,
        vec![MoveReq::whole(0, Tier::Dram), MoveReq::whole(1, Tier::Dram)]
    );
    for it in 1..3 {
        for i in 0..3 {
            if (it, i) != (1, 0) {
                assert!(pol.phase_start(it, i, &v).moves.is_empty());
            }
        }
    }
}

#[test]
fn one_time_promotions_overlap_the_first_enforced_iteration() {
    // o0 hot in phase 0, o1 hot in phase 1, o2 read lightly in phases 0
    // and 2 and in DRAM at the decision; DRAM for two: global keeps
    // {0, 1} and evicts o2.
    let mut prog = program(
        &[16, 16, 16],
        &[
            &[(0, 100_000, true), (2, 10, false)],
            &[(1, 100_000, true)],
            &[(2, 10, true)],
        ],
    );
    let build = |prog: &PhasedProgram| policy(prog, 32 * PAGE, SearchSpec::Global, false);
    let v = View {
        pages: vec![
            vec![Tier::Slow; 16],
            vec![Tier::Slow; 16],
            vec![Tier::Dram; 16],
        ],
        capacity: 32 * PAGE,
        busy: true,
    };
    let mut pol = build(&prog);
    profile(&mut pol, &prog, &v, 0.01);
    let s = pol.phase_start(1, 0, &v);
    // all queued at once: the eviction, then promotions in the order
    // they are waited for (o0 at phase 0, o1 at phase 1 of iteration 2)
    assert_eq!(
        s.moves,
        vec![
            MoveReq::whole(2, Tier::Slow),
            MoveReq::whole(0, Tier::Dram),
            MoveReq::whole(1, Tier::Dram)
        ]
    );
    // the first enforced iteration waits for none of them: the copies
    // overlap it (its phases use the old copies; phase 0 reads o2 from
    // the old copy while it is evicted)
    assert!(s.wait.is_empty(), "{s:?}");
    assert!(pol.phase_start(1, 1, &v).wait.is_empty());
    assert!(pol.phase_start(1, 2, &v).wait.is_empty());
    // the next iteration, the first placed one, waits for each where
    // it first uses it
    assert_eq!(pol.phase_start(2, 0, &v).wait, vec![0]);
    assert_eq!(pol.phase_start(2, 1, &v).wait, vec![1]);
    // a later iteration waits for nothing (no moves, nothing written)
    assert!(pol.phase_start(3, 0, &v).wait.is_empty());
    assert!(pol.phase_start(3, 1, &v).wait.is_empty());
    // a phase that writes an object being moved waits for it
    prog.phases[0].access[1].write_fraction = 0.5;
    let mut pol = build(&prog);
    profile(&mut pol, &prog, &v, 0.01);
    assert_eq!(pol.phase_start(1, 0, &v).wait, vec![2]);
}

#[test]
fn large_regular_objects_are_split_into_chunks() {
    // 64 pages streamed, 64 pages random, 8 pages; DRAM 32 pages:
    // chunks of 8 pages for the streamed one only
    let prog = program(
        &[64, 64, 8],
        &[&[(0, 1000, false), (1, 1000, true), (2, 10, false)]],
    );
    let u = units(&prog, 32 * PAGE);
    assert_eq!(u.len(), 8 + 1 + 1);
    for (k, c) in u.iter().take(8).enumerate() {
        assert_eq!(
            *c,
            Unit {
                obj: 0,
                first: 8 * k as u64,
                pages: 8,
                chunk: Some(k),
                part: false
            }
        );
    }
    assert_eq!(u[8].chunk, None);
    assert_eq!((u[8].obj, u[8].pages), (1, 64));
    assert_eq!((u[9].obj, u[9].pages), (2, 8));
    // a DRAM larger than every object: nothing split
    assert!(units(&prog, 128 * PAGE).iter().all(|c| c.chunk.is_none()));
}

#[test]
fn chunks_are_profiled_and_placed_by_their_own_heat() {
    // object 0: 64 pages, only its first 16 pages hot; DRAM 32 pages
    let prog = program(&[64], &[&[(0, 16 * 64 * 100, false)]]);
    let mut pol = policy(&prog, 32 * PAGE, SearchSpec::Both, false);
    assert!(pol.wants_heat());
    let v = View {
        pages: vec![vec![Tier::Slow; 64]],
        capacity: 32 * PAGE,
        busy: false,
    };
    assert_eq!(pol.phase_start(0, 0, &v), PhaseStart::default());
    let mut heat = vec![(0..64)
        .map(|p| if p < 16 { 6400 } else { 0 })
        .collect::<Vec<u32>>()];
    assert!(pol.tick(0.0, &mut heat, &v).is_empty());
    assert!(
        heat[0].iter().all(|&h| h == 0),
        "the policy clears what it read"
    );
    let obs = PhaseObs {
        time: 0.01,
        wait: 0.0,
        lines: vec![16 * 6400],
    };
    pol.phase_end(0, 0, &obs, &v);
    let s = pol.phase_start(1, 0, &v);
    let mut got: Vec<(u64, u64)> = s
        .moves
        .iter()
        .filter(|m| m.to == Tier::Dram)
        .map(|m| (m.first_page, m.pages))
        .collect();
    got.sort_unstable();
    // the two hot chunks (pages 0-7, 8-15), not the cold ones
    assert_eq!(got, vec![(0, 8), (8, 8)], "{}", pol.summary());
    assert!(pol.summary().contains("0.0,0.1"), "{}", pol.summary());
}

#[test]
fn initial_placement_takes_the_most_referenced_objects() {
    let prog = program(
        &[8, 8, 8],
        &[&[(0, 10, false), (1, 1000, false)], &[(2, 500, true)]],
    );
    let mut pol = policy(&prog, 16 * PAGE, SearchSpec::Both, true);
    assert_eq!(pol.initial(), vec![0, 8, 8]);
}

#[test]
fn initial_placement_takes_the_most_references_that_fit() {
    // object 0 (8 pages, 1000 lines) has the most references alone,
    // objects 1 and 2 (4 pages, 800 lines each) more together
    let prog = program(
        &[8, 4, 4],
        &[&[(0, 1000, false), (1, 800, false)], &[(2, 800, false)]],
    );
    let mut pol = policy(&prog, 8 * PAGE, SearchSpec::Both, true);
    assert_eq!(pol.initial(), vec![0, 4, 4]);
}

#[test]
fn a_plan_whose_saving_measures_small_is_replaced_with_measured_exposure() {
    // The per-phase plan of `four_streams` saves, by the latency benefit,
    // 30 ms per phase (100 000 random lines at 400 vs 100 ns); measured,
    // it saves 1 ns of a 10 µs phase, the 13 µs copies of its 64 KiB
    // objects cannot hide in such phases, and the guard sees no slowdown.
    // With the thesis's models the plan is kept; with measured exposure
    // its exposed copies cost more than it saves and the re-decision keeps
    // one placement for the whole iteration.
    let (prog, v) = four_streams();
    let run = |measured: bool| {
        let mut pol =
            policy(&prog, 32 * PAGE, SearchSpec::Both, false).with_measured_exposure(measured);
        profile(&mut pol, &prog, &v, 1e-5);
        assert!(pol.summary().starts_with("local"), "{}", pol.summary());
        assert!(!pol.moves.as_ref().is_none_or(Vec::is_empty));
        for it in 1..8 {
            enforced(&mut pol, &prog, &v, it, 1e-5 - 1e-9);
        }
        pol
    };
    let full = run(false);
    assert!(!full.summary().contains("exposure"), "{}", full.summary());
    assert!(!full.moves.as_ref().is_none_or(Vec::is_empty));
    let pol = run(true);
    assert!(
        pol.summary().contains("exposure at iteration") && pol.summary().contains("adopted"),
        "{}",
        pol.summary()
    );
    // the per-object reading of the two placements is reported: one
    // stream per phase changed tier, so each phase's is identified
    assert!(
        pol.summary()
            .contains(", per object from 2 placements: 4 of 4 identified (0 within the noise)"),
        "{}",
        pol.summary()
    );
    assert!(
        pol.moves.as_ref().is_some_and(Vec::is_empty),
        "still moves every iteration: {}",
        pol.summary()
    );
    assert!(pol.dram.windows(2).all(|w| w[0] == w[1]), "{:?}", pol.dram);
}

/// Objects of 16 pages, DRAM for 40: 0 (streamed) and 1 (random) are worth
/// the most and fit whole, 8 pages stay free; object 2 is streamed (a
/// regular 1-D array), and object 3 is worth more but read at random.
fn room_left() -> (PhasedProgram, View) {
    let prog = program(
        &[16, 16, 16, 16],
        &[
            &[(0, 100_000, false), (1, 100_000, true), (2, 20_000, false)],
            &[(0, 100_000, false), (3, 40_000, true)],
        ],
    );
    let v = View {
        pages: vec![vec![Tier::Slow; 16]; 4],
        capacity: 40 * PAGE,
        busy: false,
    };
    (prog, v)
}

#[test]
fn the_dram_a_whole_object_plan_leaves_free_gets_the_leading_pages_of_a_regular_object() {
    let (prog, v) = room_left();
    let promoted = |pol: &mut UnimemPolicy| -> Vec<MoveReq> {
        let mut m: Vec<MoveReq> = (0..2)
            .flat_map(|i| pol.phase_start(1, i, &v).moves)
            .filter(|m| m.to == Tier::Dram)
            .collect();
        m.sort_by_key(|m| (m.obj, m.first_page));
        m
    };
    // the planner before the fill: 0 and 1 whole, 8 pages free
    let mut old = policy(&prog, 40 * PAGE, SearchSpec::Global, false).with_fill(false);
    profile(&mut old, &prog, &v, 0.01);
    assert_eq!(
        promoted(&mut old),
        vec![MoveReq::whole(0, Tier::Dram), MoveReq::whole(1, Tier::Dram)],
        "{}",
        old.summary()
    );
    // with the fill: the leading 8 pages of object 2 too (not object 3,
    // which is read at random), and the rest of it stays in the slow tier
    let mut new = policy(&prog, 40 * PAGE, SearchSpec::Global, false).with_fill(true);
    profile(&mut new, &prog, &v, 0.01);
    let part = MoveReq {
        obj: 2,
        first_page: 0,
        pages: 8,
        to: Tier::Dram,
    };
    assert_eq!(
        promoted(&mut new),
        vec![
            MoveReq::whole(0, Tier::Dram),
            MoveReq::whole(1, Tier::Dram),
            part
        ],
        "{}",
        new.summary()
    );
    assert!(
        new.summary()
            .contains("filled the DRAM left free with 2[0..8)"),
        "{}",
        new.summary()
    );
    // the later iterations move nothing (a global plan)
    for i in 0..2 {
        assert!(new.phase_start(2, i, &v).moves.is_empty());
    }
}

#[test]
fn with_the_fill_off_the_decision_is_the_old_planners() {
    // a plan that fills DRAM (DRAM for 2 objects exactly) is the same with
    // the fill on or off, decision text included
    let (prog, v) = four_streams();
    let mut on = policy(&prog, 32 * PAGE, SearchSpec::Both, false).with_fill(true);
    let mut off = policy(&prog, 32 * PAGE, SearchSpec::Both, false).with_fill(false);
    profile(&mut on, &prog, &v, 0.01);
    profile(&mut off, &prog, &v, 0.01);
    assert_eq!(on.summary(), off.summary());
    for it in 1..3 {
        for i in 0..4 {
            assert_eq!(on.phase_start(it, i, &v), off.phase_start(it, i, &v));
        }
    }
}

//! The Unimem loop in one process without MPI: the test thread plays an
//! iterative program with two phases, calls the boundaries itself and ticks
//! the profiler itself, so the profile does not depend on timing.

use memtamer_tier::driver::{Driver, DriverConfig};
use memtamer_tier::unimem::model::Platform;
use memtamer_tier::unimem::plan::Search;
use memtamer_tier::{SlowTier, Tier, TierConfig, TierRuntime};
use std::sync::Arc;
use std::time::Duration;

const MB: usize = 1 << 20;

// The tests run in parallel: two `Driver`s profiling and migrating at once
// in one process. Until issue 20's fix of the shared fault handler's slot
// table (`guard::claim`) this crashed with SIGSEGV now and then, and the
// tests took one driver at a time; tests/many_runtimes.rs is its stress test.

fn platform(copy_bw: f64) -> Platform {
    let mut p = Platform::emulated(10e9, 100e-9, 2.0, 4.0).with_copy_bw(copy_bw);
    // Nothing is bandwidth-bound: the benefit is the latency one, so the
    // decision does not depend on measured phase times.
    p.t1 = f64::INFINITY;
    p
}

/// The driver every test runs: ticks on demand (the test calls them), 16
/// pages armed per tick, no drift re-profiling, no recalibration.
fn config(copy_bw: f64) -> DriverConfig {
    DriverConfig {
        tick: Duration::ZERO,
        pages_per_tick: 16,
        platform: platform(copy_bw),
        iterations: 100.0,
        drift: 0.0,
        recalibrate: false,
        // the unbounded search: decisions independent of the host's speed
        decision_share: 0.0,
        // the plan in force from iteration 2 on, as the tests expect
        decide_off_thread: false,
        pace: memtamer_tier::sampling::Pace::Cpu,
        helper: Default::default(),
        // the thesis's models: the plans these tests expect
        measured_exposure: false,
        // iteration 1 profiled, as these tests expect (`quiet_times.rs`
        // tests the timing iteration)
        quiet_times: false,
    }
}

fn sweep(p: *mut u8, n: usize, times: usize, drv: &mut Driver) {
    for _ in 0..times {
        for pg in 0..n / 4096 {
            unsafe {
                std::ptr::write_volatile(
                    p.add(pg * 4096),
                    std::ptr::read_volatile(p.add(pg * 4096)).wrapping_add(1),
                )
            };
            if pg % 16 == 15 {
                drv.tick();
            }
        }
    }
}

fn tier_of(rt: &TierRuntime, p: *mut u8) -> Tier {
    rt.objects()
        .iter()
        .find(|o| o.addr == p as usize)
        .unwrap()
        .tier
}

/// Phase 0 sweeps A 10 times, phase 1 sweeps B once; DRAM holds one of them.
/// A runtime with 3 MiB of DRAM and two 2 MiB objects `A` and `B` in the
/// slow tier (a /dev/shm file), so only one fits in DRAM.
fn two_objects() -> (Arc<TierRuntime>, *mut u8, *mut u8) {
    let rt = Arc::new(
        TierRuntime::new(TierConfig::new(3 * MB, SlowTier::File("/dev/shm".into())).unwrap())
            .unwrap(),
    );
    let (a, b) = (
        rt.alloc(2 * MB, "A", Tier::Slow).unwrap(),
        rt.alloc(2 * MB, "B", Tier::Slow).unwrap(),
    );
    (rt, a, b)
}

fn run(
    copy_bw: f64,
    iterations: usize,
    mut check: impl FnMut(usize, usize, &TierRuntime, *mut u8, *mut u8),
) -> (Arc<TierRuntime>, Driver, *mut u8, *mut u8) {
    let (rt, a, b) = two_objects();
    let cfg = config(copy_bw);
    let mut drv = Driver::new(rt.clone(), cfg);
    for it in 0..iterations {
        drv.iteration();
        check(it, 0, &rt, a, b);
        sweep(a, 2 * MB, 10, &mut drv);
        drv.boundary();
        check(it, 1, &rt, a, b);
        sweep(b, 2 * MB, 1, &mut drv);
        drv.boundary();
    }
    drv.finish();
    (rt, drv, a, b)
}

fn all_equal(p: *mut u8, n: usize, v: u8) -> bool {
    (0..n / 4096).all(|pg| unsafe { *p.add(pg * 4096) } == v)
}

#[test]
fn expensive_copies_keep_the_hot_object_in_dram() {
    let (rt, drv, a, b) = run(1e6, 5, |_, _, _, _, _| {});
    let plan = drv.plan().expect("a plan after the profiled iteration");
    assert_eq!(plan.search, Search::Global);
    assert_eq!(tier_of(&rt, a), Tier::Dram);
    assert_eq!(tier_of(&rt, b), Tier::Slow);
    assert_eq!(rt.stats().moves, 1);
    // Every write of every iteration is there: 5 iterations x 10 sweeps.
    assert!(all_equal(a, 2 * MB, 50));
    assert!(all_equal(b, 2 * MB, 5));
    assert_eq!(drv.stats().decisions, 1);
}

#[test]
fn cheap_copies_follow_the_phases() {
    let mut seen = Vec::new();
    let (rt, drv, a, b) = run(1e15, 6, |it, ph, rt, a, b| {
        // From the third iteration on (iteration 1 profiles, the end of it
        // decides), each phase starts with its object in DRAM.
        if it >= 2 {
            seen.push((ph, tier_of(rt, a), tier_of(rt, b)));
        }
    });
    assert_eq!(drv.plan().unwrap().search, Search::Local);
    assert!(!seen.is_empty());
    for (ph, ta, tb) in seen {
        if ph == 0 {
            assert_eq!(ta, Tier::Dram, "phase 0 needs A");
        } else {
            assert_eq!(tb, Tier::Dram, "phase 1 needs B");
        }
    }
    assert!(rt.stats().moves >= 6, "{:?}", rt.stats());
    assert!(rt.dram_used() <= 3 * MB);
    assert!(all_equal(a, 2 * MB, 60));
    assert!(all_equal(b, 2 * MB, 6));
}

/// `record_profiles`: the profiled iteration goes to one file per rank and
/// iteration (`memtamer-phase-profile v2`) with the rank, the objects, each
/// phase's time and the time of the MPI call that began it, and each
/// object's accesses in the phase that touched it.
#[test]
fn the_profiled_iteration_is_recorded_per_rank_with_call_times() {
    use memtamer_tier::driver::ProfileOut;
    let dir = std::env::temp_dir().join(format!("memtamer-profile-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (rt, a, b) = two_objects();
    // freed before the decision: still in the recording, as it was
    let c = rt.alloc(5000, "C", Tier::Slow).unwrap();
    let cfg = config(1e6);
    let mut drv = Driver::new(rt.clone(), cfg);
    let out = ProfileOut {
        prefix: dir.join("p").to_string_lossy().into_owned(),
        rank: Some((1, 2)),
    };
    drv.record_profiles(out.clone());
    for it in 0..2 {
        drv.iteration();
        if it == 0 {
            rt.free(c).unwrap();
        }
        sweep(a, 2 * MB, 2, &mut drv);
        drv.boundary();
        // the MPI call that begins phase 1 takes at least 2 ms
        std::thread::sleep(Duration::from_millis(2));
        drv.call_done();
        sweep(b, 2 * MB, 1, &mut drv);
        drv.boundary();
        drv.call_done();
    }
    drv.finish();
    let path = out.path(1);
    assert!(path.ends_with("p.rank1.iter1"), "{path}");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        &lines[..3],
        &["# memtamer-phase-profile v2", "rank 1 2", "iteration 1"]
    );
    assert!(lines[3].starts_with("sampler 0 16 4096 64"), "{text}");
    // objects in the registry's order, page-rounded
    let mut objs = lines[4..7].to_vec();
    objs.sort();
    assert_eq!(
        objs,
        ["object A 2097152", "object B 2097152", "object C 8192"]
    );
    let phases: Vec<Vec<u64>> = lines
        .iter()
        .filter(|l| l.starts_with("phase "))
        .map(|l| l.split(' ').skip(2).map(|x| x.parse().unwrap()).collect())
        .collect();
    // three phases: A's, B's (begun by the 2 ms call), and the empty one
    // between the last call and the next iteration
    assert_eq!(phases.len(), 3, "{text}");
    assert_eq!(phases[0][1], 0, "{text}");
    assert!(
        phases[1][1] >= 2_000_000 && phases[1][1] <= phases[1][0],
        "{text}"
    );
    // the thread's CPU clock: phase 0 swept 4 MiB on it, and a call's CPU
    // time is within its phase's
    assert!(phases[0][2] > 0, "{text}");
    assert!(phases.iter().all(|p| p[3] <= p[2]), "{text}");
    let after = |p: &str| -> Vec<&str> {
        lines
            .iter()
            .skip_while(|l| !l.starts_with(p))
            .skip(1)
            .take_while(|l| l.starts_with("access "))
            .copied()
            .collect()
    };
    let ph0 = after("phase phase0 ");
    let ph1 = after("phase phase1 ");
    assert!(ph0.len() == 1 && ph0[0].starts_with("access A "), "{text}");
    assert!(ph1.len() == 1 && ph1[0].starts_with("access B "), "{text}");
    // one decision, one file: no profile of a later iteration
    assert!(!std::path::Path::new(&out.path(2)).exists());
    let _ = std::fs::remove_dir_all(&dir);
}

fn one_object_runtime(copy_bw: f64) -> (Arc<TierRuntime>, Driver, *mut u8) {
    let rt = Arc::new(
        TierRuntime::new(TierConfig::new(3 * MB, SlowTier::File("/dev/shm".into())).unwrap())
            .unwrap(),
    );
    let a = rt.alloc(2 * MB, "A", Tier::Slow).unwrap();
    let cfg = config(copy_bw);
    let drv = Driver::new(rt.clone(), cfg);
    (rt, drv, a)
}

/// Issue 20 (hpcc): only `A` exists when profiling begins; `L` is
/// allocated in phase 1 of iteration `born` (0: the profiled one) and from
/// then on swept 10 times per iteration, `A` once. DRAM holds one of them:
/// `L` must be profiled (a share of the accesses) and placed in DRAM.
fn late_object(born: usize) -> (Arc<TierRuntime>, Driver, *mut u8, *mut u8) {
    let (rt, mut drv, a) = one_object_runtime(1e6);
    let mut late = None;
    for it in 0..born + 6 {
        drv.iteration();
        sweep(a, 2 * MB, 1, &mut drv);
        drv.boundary();
        if it == born {
            late = Some(rt.alloc(2 * MB, "L", Tier::Slow).unwrap());
        }
        if let Some(l) = late {
            sweep(l, 2 * MB, 10, &mut drv);
        }
        drv.boundary();
    }
    drv.finish();
    let l = late.unwrap();
    let share = drv.access_shares().get(&(l as usize)).copied();
    assert!(
        share.is_some_and(|s| s > 0.5),
        "L's share {share:?}, shares {:?}, {:?}",
        drv.access_shares(),
        drv.stats()
    );
    assert_eq!(tier_of(&rt, l), Tier::Dram, "{:?}", drv.stats());
    assert_eq!(tier_of(&rt, a), Tier::Slow);
    assert!(all_equal(a, 2 * MB, (born + 6) as u8));
    assert!(all_equal(l, 2 * MB, 60));
    (rt, drv, a, l)
}

#[test]
fn an_object_allocated_during_the_profiled_iteration_is_profiled() {
    let (_rt, drv, _, _) = late_object(0);
    // it was in the first profile: no re-profile was needed for it
    assert_eq!(drv.stats().decisions, 1, "{:?}", drv.stats());
    assert_eq!(drv.stats().reprofiles, 0);
}

#[test]
fn an_object_allocated_after_the_decision_is_profiled_and_placed() {
    let (_rt, drv, _, _) = late_object(3);
    // one re-profile, for the new object, and no more once it is known
    assert_eq!(drv.stats().reprofiles, 1, "{:?}", drv.stats());
    assert_eq!(drv.stats().decisions, 2, "{:?}", drv.stats());
}

/// A plan that moves `B` into DRAM for phase 1: `B` is freed in phase 0
/// and `D` allocated (usually at `B`'s address, as `mmap` reuses the
/// hole). Nothing meant for `B` may reach `D`, no move may fail, and `D`
/// is profiled as a new object afterwards.
#[test]
fn a_freed_object_is_never_moved_after_its_free() {
    let (rt, a, b) = two_objects();
    let cfg = config(1e15);
    let mut drv = Driver::new(rt.clone(), cfg);
    for _ in 0..3 {
        drv.iteration();
        sweep(a, 2 * MB, 10, &mut drv);
        drv.boundary();
        sweep(b, 2 * MB, 1, &mut drv);
        drv.boundary();
    }
    assert_eq!(drv.plan().unwrap().search, Search::Local);
    drv.iteration();
    sweep(a, 2 * MB, 10, &mut drv);
    rt.free(b).unwrap();
    let d = rt.alloc(2 * MB, "D", Tier::Slow).unwrap();
    eprintln!("D at B's address: {}", d == b);
    drv.boundary();
    rt.wait_all();
    assert_eq!(tier_of(&rt, d), Tier::Slow, "B's promotion moved D");
    let moves_d = |rt: &TierRuntime| {
        rt.objects()
            .iter()
            .find(|o| o.addr == d as usize)
            .unwrap()
            .moves
    };
    assert_eq!(moves_d(&rt), 0);
    sweep(d, 2 * MB, 1, &mut drv);
    drv.boundary();
    for _ in 0..4 {
        drv.iteration();
        sweep(a, 2 * MB, 10, &mut drv);
        drv.boundary();
        sweep(d, 2 * MB, 1, &mut drv);
        drv.boundary();
    }
    drv.finish();
    assert_eq!(rt.last_move_error(), None);
    // D was profiled as a new object (where it then goes is the model's
    // business: with the measured copy bandwidth the plan is global)
    assert_eq!(drv.stats().new_object_reprofiles, 1, "{:?}", drv.stats());
    assert!(drv
        .access_shares()
        .get(&(d as usize))
        .is_some_and(|&s| s > 0.0));
    assert!(all_equal(a, 2 * MB, 80));
    assert!(all_equal(d, 2 * MB, 5));
    assert!(rt.dram_used() <= 3 * MB);
}

/// A decision made off the application thread (the C ABI's default): the
/// iterations after the profiled one keep the placement they had (nothing
/// moves) until the plan is adopted at an iteration top; then the hot
/// object goes to DRAM, as with the decision made inline, and every write
/// of every iteration is there.
#[test]
fn a_decision_made_off_the_thread_is_adopted_at_an_iteration_top() {
    let (rt, a, b) = two_objects();
    let mut cfg = config(1e6);
    cfg.decide_off_thread = true;
    let mut drv = Driver::new(rt.clone(), cfg);
    let mut its = 0;
    // the thread's time is the host's: iterate until the plan is in
    // force and one more iteration has run with it (loose cap)
    let mut with_plan = 0;
    while with_plan < 2 && its < 20_000 {
        drv.iteration();
        its += 1;
        if drv.plan().is_none() {
            assert_eq!(
                rt.stats().moves,
                0,
                "iteration {its}: moved before the plan"
            );
            if its >= 2 {
                std::thread::sleep(Duration::from_millis(1));
            }
        } else {
            with_plan += 1;
        }
        sweep(a, 2 * MB, 10, &mut drv);
        drv.boundary();
        sweep(b, 2 * MB, 1, &mut drv);
        drv.boundary();
    }
    drv.finish();
    assert_eq!(with_plan, 2, "no plan after {its} iterations");
    assert_eq!(drv.plan().unwrap().search, Search::Global);
    assert_eq!(tier_of(&rt, a), Tier::Dram);
    assert_eq!(tier_of(&rt, b), Tier::Slow);
    assert_eq!(rt.stats().moves, 1);
    assert!(all_equal(a, 2 * MB, (10 * its) as u8));
    assert!(all_equal(b, 2 * MB, its as u8));
    assert_eq!(drv.stats().decisions, 1);
}

/// The regression guard (`unimem::regress`, `driver/guarded.rs`): a plan
/// whose quiet iterations are measured far slower than the profiled
/// iteration is reverted to the placement the decision started from. The
/// slowdown is the test's own (each phase sleeps 2 ms while profiled, then
/// twice the profiled iteration's measured wall time: sleeps only ever last
/// longer, so the plan's iterations are over 4x the profiled one whatever
/// the host's load), not the placement's.
#[test]
fn a_plan_measured_slower_than_the_profiled_iteration_is_reverted() {
    let (rt, a, b) = two_objects();
    let mut drv = Driver::new(rt.clone(), config(1e6));
    let mut promoted = false;
    let mut nap = Duration::from_millis(2);
    for it in 0..9 {
        drv.iteration();
        promoted |= tier_of(&rt, a) == Tier::Dram;
        if it == 1 {
            // each phase now sleeps twice the whole profiled iteration
            nap = Duration::from_secs_f64(2.0 * drv.stats().profiled_s + 0.01);
        }
        sweep(a, 2 * MB, 10, &mut drv);
        std::thread::sleep(nap);
        drv.boundary();
        sweep(b, 2 * MB, 1, &mut drv);
        std::thread::sleep(nap);
        drv.boundary();
    }
    drv.finish();
    // the plan put A in DRAM (expensive copies: one global move), the
    // guard judged it on three quiet iterations and moved A back
    assert!(promoted, "the plan never promoted A");
    assert_eq!(drv.guard_reverts(), (1, 0));
    assert_eq!(tier_of(&rt, a), Tier::Slow);
    assert_eq!(tier_of(&rt, b), Tier::Slow);
    assert!(all_equal(a, 2 * MB, 90));
    assert!(all_equal(b, 2 * MB, 9));
}

#[test]
fn with_measured_exposure_a_plan_measured_slower_teaches_the_models_and_is_not_tried_again() {
    // as above, with the measured exposure on: the guard reverts A's
    // promotion, the phases' exposure is learned from the slower plan
    // (a move that bought nothing measurable: 0) and the driver decides
    // again on the same profile, which now leaves A in the slow tier
    let (rt, a, b) = two_objects();
    let cfg = DriverConfig {
        measured_exposure: true,
        ..config(1e6)
    };
    let mut drv = Driver::new(rt.clone(), cfg);
    let mut nap = Duration::from_millis(2);
    for it in 0..12 {
        drv.iteration();
        if it == 1 {
            nap = Duration::from_secs_f64(2.0 * drv.stats().profiled_s + 0.01);
        }
        sweep(a, 2 * MB, 10, &mut drv);
        std::thread::sleep(nap);
        drv.boundary();
        sweep(b, 2 * MB, 1, &mut drv);
        std::thread::sleep(nap);
        drv.boundary();
    }
    drv.finish();
    // (every phase after iteration 1 sleeps longer than the profiled
    // iteration, so the guard also finds the re-decided plan slower than
    // that reference; it moves nothing either way)
    assert!(drv.guard_reverts().0 >= 1);
    let (exposure, decisions) = drv.exposure();
    assert_eq!(decisions, 1);
    assert!(
        !exposure.is_empty() && exposure.iter().all(|&e| e == 0.0),
        "{exposure:?}"
    );
    assert_eq!(tier_of(&rt, a), Tier::Slow);
    assert!(drv
        .plan()
        .is_some_and(|p| p.dram.iter().all(|s| s.is_empty())));
    assert!(all_equal(a, 2 * MB, 120));
    assert!(all_equal(b, 2 * MB, 12));
}

//! Hysteresis of [`Placement`]: a hold and a release start a thread's
//! residency time as a move does (a thread held in one period was moved by
//! the next one's plan under CPU pressure: flaky `scripts/check-placement`).

use super::tests::{machine, obs_of, params_1ms, set, thread};
use super::*;
use crate::{Observation, Policy};

/// 50 MB written per 1 ms window: a PM writer.
const WRITES: u64 = 50_000_000;

#[test]
fn a_held_writer_is_not_moved_within_min_residency_but_is_after_it() {
    // two nodes of two CPUs; node 1 idle
    let topo = machine(2, 2, false);
    let any = set("0-3");
    let params = params_1ms();
    let mut p = Placement::new(topo, params.clone());
    // a lone writer on CPU 0: nothing to balance, it is held where it is
    let d = p.decide(&obs_of(0, vec![thread(1, 0, WRITES, any)]));
    assert!(p.last_moves().is_empty());
    assert_eq!(d.thread_cpus, vec![(1, set("0"))], "{:?}", d.reasons);
    assert!(d.reasons[0].starts_with("hold thread 1"));
    let held_at = 1_000_000; // end of the window that held it
                             // a second writer, which its user may run on CPU 1 only, joins node 0:
                             // node 0 now carries all the write load and the planner wants thread 1
                             // (the only task it may move) on node 1
    let mut moved_at = None;
    for i in 1..12u64 {
        let start = i * 1_000_000;
        let end = start + 1_000_000;
        p.decide(&obs_of(
            start,
            vec![
                thread(1, 0, WRITES, set("0")),
                thread(2, 1, WRITES, set("1")),
            ],
        ));
        if p.last_moves().iter().any(|m| m.id == 1) {
            assert!(
                end - held_at >= params.min_residency_ns,
                "moved {} ns after its hold",
                end - held_at
            );
            moved_at = Some(end);
            break;
        }
    }
    // once it has rested, the plan moves it
    assert_eq!(moved_at, Some(held_at + params.min_residency_ns));
}

#[test]
fn a_released_thread_is_not_pinned_again_within_min_residency() {
    let topo = machine(1, 2, false);
    let any = set("0-1");
    let params = params_1ms();
    let mut p = Placement::new(topo, params.clone());
    let d = p.decide(&obs_of(0, vec![thread(1, 0, WRITES, any)]));
    assert_eq!(d.thread_cpus, vec![(1, set("0"))]);
    // it stops writing: its load decays below the threshold, then it gets
    // its own mask back
    let mut released_at = None;
    let mut t = 1_000_000;
    while t < 100_000_000 {
        let d = p.decide(&obs_of(t, vec![thread(1, 0, 0, set("0"))]));
        t += 1_000_000;
        if d.thread_cpus == vec![(1, any)] {
            released_at = Some(t);
            break;
        }
    }
    let released_at = released_at.expect("released");
    // it writes again at once: it is not pinned until it has rested
    let mut held_at = None;
    while t < released_at + 4 * params.min_residency_ns {
        let d = p.decide(&obs_of(t, vec![thread(1, 0, WRITES, any)]));
        t += 1_000_000;
        if d.thread_cpus.iter().any(|(id, _)| *id == 1) {
            assert!(d.reasons[0].starts_with("hold thread 1"), "{:?}", d.reasons);
            held_at = Some(t);
            break;
        }
    }
    assert_eq!(held_at, Some(released_at + params.min_residency_ns));
}

#[test]
fn the_first_plan_waits_for_a_full_period_of_counters() {
    let topo = machine(1, 2, false);
    let any = set("0-1");
    let params = params_1ms();
    let mut p = Placement::new(topo, params);
    // a daemon's first window is short: in 0.1 ms only thread 1 happened to
    // publish its writes, thread 2 (an equal writer) did not
    let short = |threads| Observation {
        start_ns: 0,
        duration_ns: 100_000,
        threads,
        ..Default::default()
    };
    let d = p.decide(&short(vec![
        thread(1, 0, WRITES / 10, any),
        thread(2, 0, 0, any),
    ]));
    assert!(
        d.thread_cpus.is_empty(),
        "planned on 0.1 ms: {:?}",
        d.reasons
    );
    assert!(p.last_moves().is_empty());
    // the rest of the period: both write; the plan sees both and splits them
    let rest = Observation {
        start_ns: 100_000,
        duration_ns: 900_000,
        threads: vec![
            thread(1, 0, WRITES * 9 / 10, any),
            thread(2, 0, WRITES * 9 / 10, any),
        ],
        ..Default::default()
    };
    let d = p.decide(&rest);
    let mut cpus: Vec<CpuSet> = d.thread_cpus.iter().map(|(_, c)| *c).collect();
    cpus.sort_by_key(|c| c.to_string());
    assert_eq!(cpus, vec![set("0"), set("1")], "{:?}", d.reasons);
}

#[test]
fn the_status_view_shows_pins_loads_and_the_residency_left() {
    let topo = machine(1, 2, false);
    let any = set("0-1");
    let params = params_1ms();
    let mut p = Placement::new(topo, params.clone());
    // a writer (held on CPU 0) and a thread that does no PM I/O
    p.decide(&obs_of(
        0,
        vec![thread(1, 0, WRITES, any), thread(2, 1, 0, any)],
    ));
    // two more windows: its residency runs down by 2 ms
    for i in 1..3u64 {
        p.decide(&obs_of(
            i * 1_000_000,
            vec![thread(1, 0, WRITES, set("0")), thread(2, 1, 0, any)],
        ));
    }
    let v = p.threads();
    assert_eq!(v.len(), 2);
    assert_eq!((v[0].tid, v[0].pinned, v[0].pm_io), (1, Some(0), true));
    assert!(v[0].write > 0.0 && v[0].write == p.load_of(1).expect("tracked").write);
    assert_eq!(v[0].rests_ms, params.min_residency_ns / 1_000_000 - 2);
    assert_eq!(
        (v[1].tid, v[1].pinned, v[1].pm_io, v[1].rests_ms),
        (2, None, false, 0)
    );
    // the generic policy interface gives the same view
    assert_eq!(Policy::placed_threads(&p), v);
}

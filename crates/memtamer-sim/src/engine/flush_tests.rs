//! Tests of `engine/flush.rs`.

use super::*;

fn spec(mode: FlushMode, fixed: u32) -> FlushJobSpec {
    FlushJobSpec {
        scenario_job: 0,
        mode,
        fixed,
        proactive: false,
        sample_period: 1,
        cores: 8,
        probe: 100_000 * NS,
        interval: 1_000_000 * NS,
        available: 8,
        inline_when_dedicated: true,
        interior_probes: memtamer_ribbon::interior::DEFAULT_INTERIOR_PROBES,
        trace_search: true,
    }
}

fn job(n: u32, mode: FlushMode, m: u32) -> FlushJob {
    let s = spec(mode, m);
    let mut j = FlushJob::new(&s, (0..n).collect());
    for f in 0..FlushJob::flusher_threads(&s) {
        j.add_flusher(100 + f as u32);
    }
    j
}

#[test]
fn each_flusher_serves_at_most_floor_n_over_m_plus_one_queues_and_every_queue_is_served() {
    for n in 1..=24u32 {
        for m in 1..=30u32 {
            let j = job(n, FlushMode::Fixed, m);
            let mut served = vec![0usize; n as usize];
            for f in 0..m as usize {
                let (qs, share) = j.served(f, m as usize);
                assert!(qs.len() <= (n / m) as usize + 1, "n {n} m {m} f {f}");
                for q in qs {
                    served[q] += 1;
                    // the flusher is among the queue's servers, and the
                    // share is how many serve it
                    let s = j.servers(q, m as usize);
                    assert!(s.contains(&f));
                    assert_eq!(s.len(), share);
                }
            }
            assert!(served.iter().all(|&c| c >= 1), "n {n} m {m}: {served:?}");
            if m <= n {
                assert!(served.iter().all(|&c| c == 1));
            }
        }
    }
}

#[test]
fn ribbon_starts_at_p1_fixed_at_m_eager_at_zero() {
    assert_eq!(job(4, FlushMode::Ribbon, 0).active, 4);
    assert_eq!(job(4, FlushMode::Ribbon, 0).flushers.len(), 8);
    assert_eq!(job(4, FlushMode::Fixed, 3).active, 3);
    assert_eq!(job(4, FlushMode::Eager, 0).active, 0);
    assert!(job(4, FlushMode::Eager, 0).flushers.is_empty());
}

#[test]
fn the_line_table_evicts_in_fifo_order_and_reports_dirty_victims() {
    let mut t = LineTable {
        state: HashMap::new(),
        fifo: VecDeque::new(),
        cap: 2,
    };
    assert!(!t.set(0, LineState::Dirty));
    assert!(!t.set(64, LineState::Clean));
    // re-setting a cached line does not move it
    assert!(!t.set(0, LineState::Dirty));
    assert!(t.set(128, LineState::Clean), "line 0 was dirty");
    assert_eq!(t.get(0), None);
    assert!(!t.set(192, LineState::Clean), "line 64 was clean");
    assert_eq!(t.get(128), Some(LineState::Clean));
}

#[test]
fn a_round_takes_every_served_batch_and_ends_in_one_fence() {
    // M = 1 < N = 4: flusher 0 serves all four queues; three have work
    let mut j = job(4, FlushMode::Fixed, 1);
    for (q, lines) in [
        (0usize, vec![0u64, 64]),
        (2, vec![128]),
        (3, vec![192, 256]),
    ] {
        j.queues[q].extend(lines);
    }
    let ops = j.take_round(0).unwrap();
    let clwbs: Vec<u64> = ops
        .iter()
        .filter_map(|o| match o {
            Op::Clwb { addr } => Some(*addr),
            _ => None,
        })
        .collect();
    assert_eq!(clwbs, vec![0, 64, 128, 192, 256], "program order per queue");
    let fence_at = ops.iter().position(|o| matches!(o, Op::Drain)).unwrap();
    assert_eq!(
        ops.iter().filter(|o| matches!(o, Op::Drain)).count(),
        1,
        "one fence per round"
    );
    let done: Vec<(u32, u32)> = ops
        .iter()
        .enumerate()
        .filter_map(|(i, o)| match o {
            Op::BatchDone { queue, lines } => {
                assert!(i > fence_at, "a batch is done only after the fence");
                Some((*queue, *lines))
            }
            _ => None,
        })
        .collect();
    assert_eq!(done, vec![(0, 2), (2, 1), (3, 2)]);
    assert!(j.queues.iter().all(|q| q.is_empty()));
    assert!(j.take_round(0).is_none(), "nothing left");
}

#[test]
fn with_more_flushers_than_queues_a_round_is_one_queues_share() {
    // M = 4 > N = 2: flushers 0 and 2 share queue 0, each takes half
    let mut j = job(2, FlushMode::Fixed, 4);
    j.queues[0].extend([0u64, 64, 128, 192]);
    let ops = j.take_round(0).unwrap();
    assert_eq!(
        ops.iter().filter(|o| matches!(o, Op::Clwb { .. })).count(),
        2
    );
    assert!(matches!(ops[2], Op::Drain));
    assert!(matches!(ops[3], Op::BatchDone { queue: 0, lines: 2 }));
    assert!(j.take_round(1).is_none(), "queue 1 is empty");
    assert!(j.take_round(5).is_none(), "flusher 5 is not active");
}

/// A pinned Ribbon job of 4 application threads on the thesis socket
/// (24 cores x 2): `flush_setup`'s fixture.
fn pinned_engine() -> Engine {
    crate::engine::flush_setup::tests::engine(4)
}

#[test]
fn a_change_of_m_re_pins_every_pinned_helper_to_its_cpu() {
    let mut e = pinned_engine();
    let pins = e.flush.as_ref().unwrap().jobs[0].pins.clone();
    // 48 flushers (P4 = the job's CPUs) and the proactive thread
    assert_eq!(pins.len(), 49);
    let whole = memtamer_core::CpuSet::parse_list("0-47").unwrap();
    for &(tid, _) in &pins {
        e.set_affinity(tid, whole).unwrap();
    }
    // a tick whose M equals the current one leaves the threads alone
    let m = {
        let j = &mut e.flush.as_mut().unwrap().jobs[0];
        j.controller.as_ref().unwrap().current().flushers
    };
    e.flush_tick(0);
    assert_eq!(e.flush.as_ref().unwrap().jobs[0].active, m);
    assert!(pins
        .iter()
        .all(|&(t, _)| e.threads[t as usize].allowed == whole));
    // an M change (the job thought M was something else) re-pins them
    e.flush.as_mut().unwrap().jobs[0].active = m + 1;
    e.flush_tick(0);
    for &(tid, cpu) in &pins {
        let th = &e.threads[tid as usize];
        assert_eq!(
            th.allowed,
            memtamer_core::CpuSet::single(cpu as usize),
            "thread {tid}"
        );
        assert_eq!(th.cpu, cpu, "thread {tid}");
    }
}

/// The pinned N = 4 fixture with M set to `m` and queue 0 holding `queued`
/// untaken lines plus `held` lines a flusher took and has not finished.
fn with_leftovers(m: usize, queued: &[u64], held: u64) -> (Engine, u32) {
    let mut e = pinned_engine();
    let app = {
        let j = &mut e.flush.as_mut().unwrap().jobs[0];
        j.active = m;
        j.queues[0].extend(queued.iter().copied());
        j.enqueued[0] = queued.len() as u64 + held;
        j.app[0]
    };
    (e, app)
}

fn next_ops(e: &mut Engine, tid: u32, n: usize) -> Vec<Op> {
    let th = &mut e.threads[tid as usize];
    (0..n).map(|_| th.gen.next(&mut th.rng, 0)).collect()
}

#[test]
fn a_dedicated_flush_first_runs_what_its_queue_still_holds_then_its_own_line() {
    // M became N = 4 with two lines of queue 0 still untaken: the thread
    // takes them as one batch (clwbs, sfence, batch done) before its own
    // line's clwb, as the runtime's `flush_here` -> `drain_own`
    let (mut e, app) = with_leftovers(4, &[0, 64], 0);
    assert!(matches!(e.flush_here(app, 4096), Step::Go));
    let j = &e.flush.as_ref().unwrap().jobs[0];
    assert!(j.queues[0].is_empty(), "no flusher can take them now");
    assert_eq!(j.stats.self_drains, 1);
    let ops = next_ops(&mut e, app, 5);
    assert_eq!(
        ops,
        vec![
            Op::Clwb { addr: 0 },
            Op::Clwb { addr: 64 },
            Op::Drain,
            Op::BatchDone { queue: 0, lines: 2 },
            Op::Clwb { addr: 4096 },
        ]
    );
}

#[test]
fn a_dedicated_flush_waits_for_a_batch_a_flusher_still_holds() {
    // a flusher holds 3 lines of queue 0 (taken before M became N): the
    // thread waits for that batch (its fence-like wait), then looks again
    let (mut e, app) = with_leftovers(4, &[], 3);
    assert!(matches!(e.flush_here(app, 4096), Step::Stop));
    {
        let j = &e.flush.as_ref().unwrap().jobs[0];
        assert_eq!(j.waiting[0], Some(3));
        assert_eq!(j.stats.self_drains, 0);
    }
    assert_eq!(
        e.threads[app as usize].pending,
        Some(Op::FlushHere { addr: 4096 })
    );
    assert_eq!(e.threads[app as usize].block, Block::Fence);
    // the flusher's batch passes its sfence: the thread is woken
    let flusher = e.flush.as_ref().unwrap().jobs[0].flushers[0];
    e.batch_done(flusher, 0, 3);
    let j = &e.flush.as_ref().unwrap().jobs[0];
    assert_eq!(j.waiting[0], None);
    assert_eq!(j.stats.flusher_batches, 1);
    assert_ne!(e.threads[app as usize].block, Block::Fence);
}

#[test]
fn below_and_above_n_and_with_the_hand_off_forced_a_flush_is_queued() {
    for (m, inline) in [(2usize, true), (6, true), (4, false)] {
        let mut e = pinned_engine();
        let app = {
            let j = &mut e.flush.as_mut().unwrap().jobs[0];
            j.active = m;
            j.inline_when_dedicated = inline;
            j.app[0]
        };
        assert!(matches!(e.flush_request(app, 4096), Step::Go));
        let j = &e.flush.as_ref().unwrap().jobs[0];
        assert_eq!(j.queues[0].len(), 1, "M {m} inline {inline}");
        assert_eq!(j.enqueued[0], 1);
        assert_eq!(j.stats.dedicated, 0);
    }
}

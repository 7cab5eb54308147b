//! Tests of the event buffers: the merge's order, a drained tracker
//! against one fed directly (seeded interleavings of simulated threads),
//! an exited thread's events, the placement-on drain before a begin, and
//! real threads.

use super::*;
use memtamer_tahoe::model::HybridModel;
use memtamer_tahoe::plan::{Batch, PlanConfig, Planner};
use std::collections::HashMap;

#[path = "../tests/support/digest.rs"]
mod digest_part;

fn tracker(place: bool) -> Tracker {
    Tracker::new(Planner::new(
        PlanConfig {
            page: 4096,
            corun: 2,
            ..PlanConfig::default()
        },
        HybridModel::fallback_only(if place { 1200.0 } else { 1.0 }),
        64,
    ))
    .with_record()
    .with_workers(2)
}

/// What the tool prints and records from a tracker (the replay test's
/// digest, plus the ready queue).
fn digest(t: &Tracker) -> String {
    let s = t.stats();
    let p = t.planner().stats();
    let (errs, rows) = digest_part::errs_and_rows(t);
    format!(
        "{s:?} types={} decisions={} profiled={} promoted={} evicted={} batches={} exact={} errs={errs:?} rows={rows:?} ready={:?}",
        t.planner().db().len(),
        p.decisions,
        p.profiled,
        p.promoted,
        p.evicted,
        p.batches,
        t.exact_extents(),
        t.ready()
    )
}

/// splitmix64: a seeded stream for the interleavings.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49eb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// One callback as the generator emits it.
enum Op {
    Create(u64, u64),
    Deps(u64, Vec<(u64, u64)>, Vec<(u64, Access)>),
    Edge(u64, u64),
    Sched(Sched),
}

fn apply_direct(t: &mut Tracker, op: &Op) {
    match op {
        Op::Create(id, code) => t.create(*id, *code),
        Op::Deps(id, exact, deps) => {
            t.exact_lengths(exact);
            t.dependences_iter(*id, deps.iter().copied());
        }
        Op::Edge(a, b) => t.edge(*a, *b),
        Op::Sched(s) => apply_sched(t, s),
    }
}

fn push(b: &mut EventBuf, seq: u64, op: &Op) {
    match op {
        Op::Create(id, code) => b.create(seq, *id, *code),
        Op::Deps(id, exact, deps) => b.dependences(seq, *id, exact, deps.iter().copied()),
        Op::Edge(a, s) => b.edge(seq, *a, *s),
        Op::Sched(s) => b.sched(seq, s.clone()),
    }
}

/// The placement-on begin, as the shell does it after a drain.
fn begin_place(t: &mut Tracker, s: &Sched) -> Vec<Batch> {
    apply_sched_with(t, s, |t, n, now| t.begin_ahead(n, now, 2, true, 0)).unwrap_or_default()
}

/// Feeds a seeded random task program (tasks with 1-3 dependences on 12
/// blocks, libomp's edges, `threads` threads creating and running them)
/// both directly to one tracker and through `Shared` (one handle per
/// simulated thread, buffers of `cap` events, drains at random points) to
/// another; with `place`, every begin drains and decides. Returns both
/// digests and both runs' batches.
/// One seeded multi-thread event stream fed to a tracker directly and to
/// one behind [`Shared`]: through the buffers, or (`locked`) through
/// [`Shared::apply_now`], the `MEMTAMER_TAHOE_EVENTS=locked` path.
fn run_seed(seed: u64, place: bool, locked: bool) -> (String, String, Vec<Batch>, Vec<Batch>) {
    let mut rng = Rng(seed);
    let threads = 1 + rng.below(6) as usize;
    let cap = 1 + rng.below(12) as usize;
    let tasks = 60 + rng.below(120);
    let mut direct = tracker(place);
    let shared = Shared::new(tracker(place), cap);
    let handles: Vec<Handle> = (0..threads).map(|_| shared.handle()).collect();
    let (mut b_direct, mut b_shared) = (Vec::new(), Vec::new());
    let mut writer: HashMap<u64, u64> = HashMap::new();
    let mut readers: HashMap<u64, Vec<u64>> = HashMap::new();
    let mut running: Vec<u64> = vec![0; threads];
    let (mut created, mut now) = (0u64, 0u64);
    let block = 1u64 << 16;
    let emit = |th: usize, op: Op, direct: &mut Tracker| {
        apply_direct(direct, &op);
        if locked {
            shared.apply_now(|b, seq| push(b, seq, &op));
        } else {
            shared.record(Some(&handles[th]), |b, seq| push(b, seq, &op));
        }
    };
    loop {
        let all_idle = running.iter().all(|&r| r == 0);
        if created == tasks && all_idle && direct.ready().is_empty() {
            break;
        }
        now += 1 + rng.below(5000);
        let th = rng.below(threads as u64) as usize;
        if created < tasks && rng.below(3) > 0 {
            created += 1;
            let id = created;
            emit(th, Op::Create(id, 0xa00 + rng.below(3)), &mut direct);
            let mut deps: Vec<(u64, Access)> = Vec::new();
            for _ in 0..1 + rng.below(3) {
                let a = 0x1000_0000 + rng.below(12) * block;
                if deps.iter().all(|d| d.0 != a) {
                    let acc = [Access::In, Access::Out, Access::InOut][rng.below(3) as usize];
                    deps.push((a, acc));
                }
            }
            let exact: Vec<(u64, u64)> = match rng.below(4) {
                0 => deps.iter().map(|d| (d.0, block)).collect(),
                _ => Vec::new(),
            };
            emit(th, Op::Deps(id, exact, deps.clone()), &mut direct);
            let mut edges = Vec::new();
            for &(a, acc) in &deps {
                if let Some(&w) = writer.get(&a) {
                    edges.push(w);
                }
                if acc == Access::In {
                    readers.entry(a).or_default().push(id);
                } else {
                    edges.extend(readers.remove(&a).unwrap_or_default());
                    writer.insert(a, id);
                }
            }
            edges.sort_unstable();
            edges.dedup();
            for src in edges {
                emit(th, Op::Edge(src, id), &mut direct);
            }
        } else {
            // thread `th` finishes its task (if any) and starts the
            // ready queue's head (if any), in one switch
            let prior = running[th];
            let next = direct.ready().first().copied().unwrap_or(0);
            if prior == 0 && next == 0 {
                continue;
            }
            running[th] = next;
            let s = Sched {
                prior,
                done: prior != 0,
                next,
                now,
                counted: (rng.below(3) == 0).then_some(TaskCounts {
                    instructions: rng.below(1000),
                    cycles: 1 + rng.below(1000),
                    llc_refs: 1 + rng.below(100),
                    llc_misses: rng.below(10),
                }),
                samples: None,
            };
            if place && next != 0 {
                b_direct.extend(begin_place(&mut direct, &s));
                b_shared.extend(begin_place(&mut shared.drained(), &s));
            } else {
                emit(th, Op::Sched(s), &mut direct);
            }
        }
        if rng.below(40) == 0 {
            drop(shared.drained());
        }
    }
    let got = digest(&shared.drained());
    (digest(&direct), got, b_direct, b_shared)
}

#[test]
fn merge_applies_events_in_global_order() {
    let mut bufs = vec![
        EventBuf::default(),
        EventBuf::default(),
        EventBuf::default(),
    ];
    // thread 0: 0, 3, 4; thread 1: 1, 5; thread 2: 2, 6, 7
    for (b, seqs) in [(0, vec![0, 3, 4]), (1, vec![1, 5]), (2, vec![2, 6, 7])] {
        for s in seqs {
            bufs[b].edge(s, s, s);
        }
    }
    let order: Vec<u64> = merge_order(&bufs)
        .into_iter()
        .map(|(b, i)| bufs[b].seqs()[i])
        .collect();
    assert_eq!(order, (0..8).collect::<Vec<u64>>());
    // applied in that order: task 2 is created by thread 1 after thread 0
    // named it in an edge (ignored then, as the direct tracker would)
    let mut a = [EventBuf::default(), EventBuf::default()];
    a[0].edge(0, 1, 2);
    a[1].create(1, 1, 0xa);
    a[1].create(2, 2, 0xa);
    a[0].edge(3, 1, 2);
    let mut t = tracker(false);
    apply_merged(&mut t, &a);
    assert_eq!(t.stats().edges, 2);
    assert_eq!(t.ready(), vec![1], "only the second edge holds task 2 back");
}

#[test]
fn a_drained_tracker_equals_one_fed_directly() {
    for seed in 0..40 {
        for place in [false, true] {
            for locked in [false, true] {
                let (want, got, bw, bg) = run_seed(seed, place, locked);
                assert!(!want.contains("completed: 0,"), "{want}");
                assert_eq!(want, got, "seed {seed} place {place} locked {locked}");
                assert_eq!(bw, bg, "seed {seed} place {place} locked {locked}");
            }
        }
    }
    // the generator reaches placements and completions (else the
    // comparison above would prove little)
    let (want, _, b, _) = (0..40)
        .map(|s| run_seed(s, true, false))
        .max_by_key(|r| r.2.len())
        .expect("seeds");
    assert!(!b.is_empty(), "{want}");
}

#[test]
fn an_exited_threads_events_are_kept() {
    let shared = Arc::new(Shared::new(tracker(false), DEFAULT_CAP));
    let s2 = shared.clone();
    std::thread::spawn(move || {
        let h = s2.handle();
        for id in 1..=3u64 {
            s2.record(Some(&h), |b, seq| b.create(seq, id, 0xa));
        }
        s2.record(Some(&h), |b, seq| b.edge(seq, 1, 2));
    })
    .join()
    .expect("thread");
    assert_eq!(shared.lock().stats().created, 0, "still buffered");
    assert_eq!(shared.buffers(), 1);
    let t = shared.drained();
    assert_eq!((t.stats().created, t.stats().edges), (3, 1));
    assert_eq!(t.ready(), vec![1, 3]);
    drop(t);
    assert_eq!(
        shared.buffers(),
        0,
        "the exited thread's empty buffer is dropped"
    );
}

#[test]
fn a_thread_without_its_buffer_applies_at_once_in_order() {
    let shared = Shared::new(tracker(false), DEFAULT_CAP);
    let h = shared.handle();
    shared.record(Some(&h), |b, seq| b.create(seq, 1, 0xa));
    // e.g. a callback after the thread's thread-locals were destroyed
    shared.record(None, |b, seq| b.create(seq, 2, 0xa));
    shared.record(None, |b, seq| b.edge(seq, 1, 2));
    let t = shared.lock();
    assert_eq!(t.stats().created, 2, "the buffered create came first");
    assert_eq!(t.ready(), vec![1]);
}

#[test]
fn a_placement_begin_sees_every_earlier_event() {
    // tasks 1-4, one type, reading blocks 0, 1, 0, 1, created on two
    // threads; task 1 (the representative) ran on a third
    let b = 1u64 << 16;
    let shared = Shared::new(tracker(true), DEFAULT_CAP);
    let mut direct = tracker(true);
    let hs = [shared.handle(), shared.handle(), shared.handle()];
    let ops = |i: u64| {
        [
            Op::Create(i, 0xa),
            Op::Deps(
                i,
                vec![],
                vec![(0x1000_0000 + ((i + 1) % 2) * b, Access::In)],
            ),
        ]
    };
    for i in 1..=4u64 {
        for op in ops(i) {
            apply_direct(&mut direct, &op);
            shared.record(Some(&hs[(i % 2) as usize]), |buf, seq| push(buf, seq, &op));
        }
    }
    let run1 = [
        Sched {
            next: 1,
            ..Sched::default()
        },
        Sched {
            prior: 1,
            done: true,
            now: 1_000_000,
            ..Sched::default()
        },
    ];
    for s in run1 {
        apply_sched(&mut direct, &s);
        shared.record(Some(&hs[2]), |buf, seq| buf.sched(seq, s.clone()));
    }
    assert!(shared.lock().ready().is_empty(), "nothing drained yet");
    let start2 = Sched {
        next: 2,
        now: 2_000_000,
        ..Sched::default()
    };
    let want = begin_place(&mut direct, &start2);
    let got = begin_place(&mut shared.drained(), &start2);
    assert!(want.iter().any(|x| x.task == 2 && x.to_dram), "{want:?}");
    assert!(want.iter().any(|x| x.task == 3), "look-ahead: {want:?}");
    assert_eq!(got, want);
    // without the drain the tracker knows neither the type's profile nor
    // the tasks: no batch
    let mut stale = tracker(true);
    assert!(begin_place(&mut stale, &start2).is_empty());
}

#[test]
fn real_threads_lose_nothing_and_keep_each_threads_order() {
    // each thread creates a chain of tasks (task k+1 waits for task k),
    // runs each right after creating it; an event applied out of order
    // (a begin or complete before its create) would be ignored by the
    // tracker and show as fewer completions
    let threads = 6u64;
    let per = 300u64;
    let shared = Arc::new(Shared::new(tracker(false), 8));
    let joins: Vec<_> = (0..threads)
        .map(|th| {
            let s = shared.clone();
            std::thread::spawn(move || {
                let h = s.handle();
                let mut prev = 0u64;
                for k in 0..per {
                    let id = 1 + th * per + k;
                    let addr = 0x1000_0000 + th * (1 << 20);
                    s.record(Some(&h), |b, seq| b.create(seq, id, 0xa));
                    s.record(Some(&h), |b, seq| {
                        b.dependences(seq, id, &[], [(addr, Access::InOut)].into_iter())
                    });
                    if prev != 0 {
                        s.record(Some(&h), |b, seq| b.edge(seq, prev, id));
                    }
                    let sw = Sched {
                        prior: prev,
                        done: prev != 0,
                        next: id,
                        now: k,
                        ..Sched::default()
                    };
                    s.record(Some(&h), |b, seq| b.sched(seq, sw));
                    prev = id;
                }
                let last = Sched {
                    prior: prev,
                    done: true,
                    now: per,
                    ..Sched::default()
                };
                s.record(Some(&h), |b, seq| b.sched(seq, last));
            })
        })
        .collect();
    for j in joins {
        j.join().expect("thread");
    }
    let t = shared.drained();
    let st = t.stats();
    assert_eq!(st.created, threads * per);
    assert_eq!(st.completed, threads * per);
    assert_eq!(st.edges, threads * (per - 1));
    assert!(t.ready().is_empty());
    assert!(
        shared.drains() > 1,
        "buffers of 8 events drained on the way"
    );
}

#[test]
fn an_event_stays_small() {
    // the buffers' memory traffic per callback
    assert!(
        std::mem::size_of::<Event>() <= 40,
        "{}",
        std::mem::size_of::<Event>()
    );
}

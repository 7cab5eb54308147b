use super::*;
use crate::workload::REGION_SHIFT;

fn space() -> TierHandle {
    TierSpace::new(
        1,
        2,
        3,
        &[
            ("a".into(), 3 * PAGE, Tier::Slow),
            ("b".into(), 100, Tier::Dram),
        ],
        8 * PAGE,
    )
    .into_handle()
}

fn steps(h: &mut MigrationHelper, n: usize, now: Ps) -> Vec<Op> {
    let mut out = Vec::new();
    for _ in 0..n {
        let mut q = OpBatch::default();
        h.refill(&mut q, now);
        while let Some(op) = q.pop_front() {
            out.push(op);
        }
    }
    out
}

#[test]
fn layout_and_addresses_follow_placement() {
    let h = space();
    let s = lock(&h);
    assert_eq!(s.objects()[1].base, 3 * PAGE);
    assert_eq!(s.dram_bytes(), PAGE);
    let a = s.line_addr(0, PAGE + 70);
    assert_eq!(a >> REGION_SHIFT, 2);
    assert_eq!(a, addr(2, 3, PAGE + 64));
    assert_eq!(s.line_addr(1, 100 + 5) >> REGION_SHIFT, 1); // wraps to offset 5
    assert_eq!(s.line_addr(1, 5), addr(1, 3, 3 * PAGE));
}

#[test]
fn helper_copies_then_switches_placement() {
    let h = space();
    lock(&h).request(MoveReq {
        obj: 0,
        first_page: 1,
        pages: 5, // clipped to the 2 pages left
        to: Tier::Dram,
    });
    assert!(!lock(&h).settled(0));
    assert_eq!(lock(&h).dram_bytes(), PAGE);
    let mut m = MigrationHelper::new(h.clone(), 100);
    let ops = steps(&mut m, 3, 1000);
    // two pages of copies, slow -> fast, then a drain
    let copies: Vec<(u64, u64)> = ops
        .iter()
        .filter_map(|o| match o {
            Op::CopyLine { src, dst, nt: true } => Some((*src, *dst)),
            _ => None,
        })
        .collect();
    assert_eq!(copies.len() as u64, 2 * LINES_PER_PAGE);
    assert!(copies
        .iter()
        .all(|(s, d)| s >> REGION_SHIFT == 2 && d >> REGION_SHIFT == 1));
    assert_eq!(copies[0].0, addr(2, 3, PAGE));
    assert_eq!(ops.last(), Some(&Op::Drain));
    // during the copy the promotion holds DRAM, accesses still go to slow
    assert_eq!(lock(&h).dram_bytes(), 3 * PAGE);
    assert_eq!(lock(&h).line_addr(0, PAGE) >> REGION_SHIFT, 2);
    // after the drain: switched, accounted, helper idles
    let ops = steps(&mut m, 1, 5000);
    assert_eq!(ops, vec![Op::Compute(100)]);
    let s = lock(&h);
    assert!(s.settled(0) && s.idle());
    assert_eq!(s.line_addr(0, PAGE) >> REGION_SHIFT, 1);
    assert_eq!(s.line_addr(0, 0) >> REGION_SHIFT, 2);
    assert_eq!(s.objects()[0].bytes_in(Tier::Dram), 2 * PAGE);
    assert_eq!(s.stats().moves, 1);
    assert_eq!(s.stats().bytes_moved, 2 * PAGE);
    assert_eq!(s.stats().copy_ps, 4000);
    assert_eq!(s.stats().peak_dram_bytes, 3 * PAGE);
}

#[test]
fn a_page_promoted_without_a_copy_reads_nothing_from_the_slow_tier() {
    let h = space();
    {
        let mut s = lock(&h);
        s.set_fault_ps(7000);
        s.discard_on_promote(0, 1); // page 2 is copied
        s.discard_on_promote(0, 0);
        // a demotion of page 0 (a no-op: it is slow) clears its mark
        s.request(MoveReq {
            obj: 0,
            first_page: 0,
            pages: 1,
            to: Tier::Slow,
        });
        s.request(MoveReq {
            obj: 0,
            first_page: 1,
            pages: 2,
            to: Tier::Dram,
        });
    }
    let mut m = MigrationHelper::new(h.clone(), 100);
    let ops = steps(&mut m, 3, 0);
    // page 1: the fault, then one DRAM store per line, no load at all
    assert_eq!(ops[0], Op::Compute(7000));
    let fresh = &ops[1..1 + LINES_PER_PAGE as usize];
    assert!(fresh
        .iter()
        .all(|o| matches!(o, Op::StoreNt { addr } if addr >> REGION_SHIFT == 1)));
    assert_eq!(
        fresh[0],
        Op::StoreNt {
            addr: addr(1, 3, PAGE)
        }
    );
    // page 2: a copy from the slow tier
    let copies = ops
        .iter()
        .filter(|o| matches!(o, Op::CopyLine { src, .. } if src >> REGION_SHIFT == 2))
        .count();
    assert_eq!(copies as u64, LINES_PER_PAGE);
    steps(&mut m, 2, 100);
    let s = lock(&h);
    assert_eq!(s.objects()[0].bytes_in(Tier::Dram), 2 * PAGE);
    assert_eq!(s.stats().pages_fresh, 1);
    assert!(s.fresh.is_empty());
}

#[test]
fn demotion_frees_dram_at_the_end_and_noop_moves_cost_nothing() {
    let h = space();
    lock(&h).request(MoveReq::whole(1, Tier::Dram)); // already there
    lock(&h).request(MoveReq::whole(1, Tier::Slow));
    let mut m = MigrationHelper::new(h.clone(), 100);
    let ops = steps(&mut m, 2, 0);
    // the no-op is finished without traffic; the demotion copies fast -> slow
    assert!(ops.iter().all(|o| match o {
        Op::CopyLine { src, dst, .. } => src >> REGION_SHIFT == 1 && dst >> REGION_SHIFT == 2,
        _ => true,
    }));
    assert_eq!(lock(&h).dram_bytes(), PAGE);
    steps(&mut m, 1, 10);
    let s = lock(&h);
    assert_eq!(s.dram_bytes(), 0);
    assert_eq!(s.stats().moves, 1);
    assert!(s.idle());
}

/// A wait is split by the kind of copy the helper ran during it: an
/// eviction that finished before the wait began is not charged.
#[test]
fn waits_are_split_by_the_copy_running_meanwhile() {
    let h = space();
    let mut s = lock(&h);
    s.copy_started(0, Tier::Slow);
    s.copy_ended(10);
    s.copy_started(10, Tier::Slow);
    s.copy_ended(30);
    s.copy_started(30, Tier::Dram);
    s.copy_ended(50);
    // waited 25..50: 5 behind the second eviction, 20 behind the promotion
    s.add_wait(25, 50);
    // a wait while a promotion is still running counts up to its end
    s.copy_started(60, Tier::Dram);
    s.add_wait(55, 70);
    let st = s.stats();
    assert_eq!(st.exposed_ps, 40);
    assert_eq!(st.evict_exposed_ps, 5);
    assert_eq!(st.promote_exposed_ps, 30);
    assert_eq!(st.evict_copy_ps, 30);
}

#[test]
fn overlap_share() {
    let mut st = TierStats {
        copy_ps: 100,
        exposed_ps: 25,
        ..Default::default()
    };
    assert_eq!(st.overlapped_ps(), 75);
    assert!((st.overlap_share() - 0.75).abs() < 1e-12);
    st.exposed_ps = 200;
    assert_eq!(st.overlap_share(), 0.0);
    assert_eq!(TierStats::default().overlap_share(), 1.0);
}

#[test]
fn initial_placement_by_leading_pages() {
    let h = space();
    let mut s = lock(&h);
    s.set_initial(&[2, 0]);
    assert_eq!(s.dram_bytes(), 2 * PAGE);
    assert_eq!(s.page_tier(0, 1), Tier::Dram);
    assert_eq!(s.page_tier(0, 2), Tier::Slow);
    assert_eq!(s.page_tier(1, 0), Tier::Slow);
    assert_eq!(s.page_tier(9, 0), Tier::Slow);
}

#[test]
fn place_prefix_sets_pages_without_copies_and_never_counts_both_sets() {
    let h = space();
    let mut s = lock(&h);
    // a: 3 slow pages, b: its one page in DRAM -> a's first two in DRAM, b out
    s.place_prefix(&[2, 0]);
    assert_eq!(s.objects()[0].bytes_in(Tier::Dram), 2 * PAGE);
    assert_eq!(s.objects()[1].bytes_in(Tier::Dram), 0);
    assert_eq!(s.dram_bytes(), 2 * PAGE);
    // evictions went first: the peak is the larger set, not both
    assert_eq!(s.stats().peak_dram_bytes, 2 * PAGE);
    assert_eq!(s.stats().moves, 0);
    assert!(s.idle());
    // a short vector leaves the missing objects in the slow tier
    s.place_prefix(&[]);
    assert_eq!(s.dram_bytes(), 0);
}

#[test]
fn a_free_gives_dram_back_without_a_write_back_and_drops_queued_moves() {
    let h = space();
    let mut s = lock(&h);
    // object 0: page 0 in DRAM, a queued promotion of pages 1-2
    s.place_page(0, 0, Tier::Dram);
    s.request(MoveReq {
        obj: 0,
        first_page: 1,
        pages: 2,
        to: Tier::Dram,
    });
    assert_eq!(s.dram_bytes(), 2 * PAGE); // b's page + page 0
    s.free_object(0);
    assert!(s.is_freed(0) && !s.is_freed(1));
    // DRAM given back at once, no copy queued or made, the move dropped
    assert_eq!(s.dram_bytes(), PAGE);
    assert_eq!(s.stats().pages_freed, 1);
    assert_eq!(s.stats().pages_moved, 0);
    assert!(s.settled(0) && s.idle());
    assert_eq!(s.queued_pages(), 0);
    // freeing twice or an unknown object does nothing
    s.free_object(0);
    s.free_object(9);
    assert_eq!((s.dram_bytes(), s.stats().pages_freed), (PAGE, 1));
}

#[test]
fn a_copy_in_flight_of_a_freed_object_switches_nothing() {
    let h = space();
    let mut s = lock(&h);
    // a promotion started (counts against DRAM), then the object is freed
    let m = MoveReq {
        obj: 0,
        first_page: 0,
        pages: 2,
        to: Tier::Dram,
    };
    let pages = s.begin_move(m);
    assert_eq!(s.dram_bytes(), 3 * PAGE);
    s.free_object(0);
    s.end_move(&m, &pages, 10);
    assert_eq!(s.dram_bytes(), PAGE);
    assert_eq!(s.objects()[0].bytes_in(Tier::Dram), 0);
    assert!(s.settled(0));
    // a demotion in flight of a freed object: DRAM freed once, by the free
    let d = MoveReq::whole(1, Tier::Slow);
    let pages = s.begin_move(d);
    s.free_object(1);
    assert_eq!(s.dram_bytes(), 0);
    s.end_move(&d, &pages, 10);
    assert_eq!(s.dram_bytes(), 0);
}

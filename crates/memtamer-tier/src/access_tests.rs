use super::*;
use crate::{ObjectView, Tier};

fn r(addr: usize, len: usize, id: u64) -> ObjectRange {
    ObjectRange { addr, len, id }
}

fn load(addr: u64, period: u64) -> AccessSample {
    AccessSample {
        addr,
        kind: AccessKind::Load,
        period,
    }
}

fn store(addr: u64, period: u64) -> AccessSample {
    AccessSample {
        addr,
        kind: AccessKind::Store,
        period,
    }
}

fn view(addr: usize, size: usize, id: u64, tier: Tier) -> ObjectView {
    ObjectView {
        addr,
        id,
        name: format!("o{id}"),
        size,
        tier,
        migrating: false,
        moves: 0,
        bytes_moved: 0,
        exposed_ns: 0,
    }
}

#[test]
fn an_object_holds_its_first_and_last_byte_and_nothing_around_it() {
    let idx = RangeIndex::new([r(0x1000, 0x100, 1), r(0x2000, 0x10, 2)]);
    assert_eq!(idx.find(0x1000).map(|o| o.id), Some(1));
    assert_eq!(idx.find(0x10ff).map(|o| o.id), Some(1));
    assert_eq!(idx.find(0x1100), None, "one past the end");
    assert_eq!(idx.find(0xfff), None, "one before the start");
    assert_eq!(idx.find(0x200f).map(|o| o.id), Some(2));
    assert_eq!(idx.find(0x2010), None);
    assert_eq!(idx.find(0), None);
    assert_eq!(idx.find(u64::MAX), None);
}

#[test]
fn adjacent_objects_split_at_the_boundary_and_empty_ones_never_match() {
    let idx = RangeIndex::new([r(0x1000, 0x1000, 1), r(0x2000, 0x1000, 2), r(0x3000, 0, 3)]);
    assert_eq!(idx.find(0x1fff).map(|o| o.id), Some(1));
    assert_eq!(idx.find(0x2000).map(|o| o.id), Some(2));
    assert_eq!(idx.find(0x3000), None, "a zero-length object holds nothing");
}

/// Every address of a small space against a linear scan, for many random
/// sets of disjoint ranges (seeded): the index is the definition.
#[test]
fn lookup_agrees_with_a_linear_scan_everywhere() {
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |m: u64| {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng % m
    };
    for _ in 0..200 {
        let mut ranges = Vec::new();
        let mut at = next(8) as usize;
        for id in 0..next(6) {
            let len = next(5) as usize; // zero-length ones included
            ranges.push(r(at, len, id));
            at += len + next(3) as usize; // adjacent or with a gap
        }
        let idx = RangeIndex::new(ranges.clone());
        for a in 0..(at as u64 + 4) {
            let scan = ranges
                .iter()
                .find(|o| (o.addr as u64) <= a && a < (o.addr + o.len) as u64)
                .map(|o| o.id);
            assert_eq!(idx.find(a).map(|o| o.id), scan, "addr {a} in {ranges:?}");
        }
    }
}

#[test]
fn samples_scale_by_their_period_loads_and_stores_apart() {
    let idx = RangeIndex::new([r(0x1000, 0x1000, 7)]);
    let got = attribute(
        &idx,
        &[
            load(0x1000, 9973),
            load(0x1800, 9973),
            store(0x1ff8, 100),
            load(0x1004, 0), // a period of 0 stands for one event
            store(0x9000, 5),
        ],
    );
    let c = got.objects[&7];
    assert_eq!((c.load_samples, c.store_samples), (3, 1));
    assert_eq!((c.loads, c.stores), (9973.0 * 2.0 + 1.0, 100.0));
    assert_eq!(c.accesses(), 20047.0);
    assert_eq!(got.other.store_samples, 1);
    assert_eq!(got.other.stores, 5.0);
    assert_eq!(got.samples(), 5, "#samples counts the other samples too");
}

#[test]
fn a_freed_object_gets_nothing_and_its_successor_at_the_address_is_new() {
    // object 1 at 0x1000 was freed and object 5 allocated at its address
    // before the phase closed: the snapshot holds 5 only
    let before = RangeIndex::of_views(&[view(0x1000, 4096, 1, Tier::Slow)]);
    let after = RangeIndex::of_views(&[view(0x1000, 4096, 5, Tier::Slow)]);
    let samples = [load(0x1010, 10), store(0x1020, 10)];
    assert_eq!(
        attribute(&before, &samples)
            .objects
            .keys()
            .collect::<Vec<_>>(),
        vec![&1]
    );
    let got = attribute(&after, &samples);
    assert_eq!(got.objects.keys().collect::<Vec<_>>(), vec![&5]);
    // the driver profiles ids [1, 5]: index 0 (the freed one) gets nothing
    let ph = got.obj_phases(&[1, 5]);
    assert!(!ph.contains_key(&0));
    assert_eq!(ph[&1].samples, 2.0);
    // freed and not replaced: every sample is other
    let gone = attribute(&RangeIndex::of_views(&[]), &samples);
    assert!(gone.objects.is_empty());
    assert_eq!(gone.other.samples(), 2);
}

#[test]
fn a_moved_object_keeps_its_samples() {
    // a move remaps at the same address: before and after the move the
    // object is the same range, whatever its tier
    let slow = RangeIndex::of_views(&[view(0x40_0000, 3 * 4096, 3, Tier::Slow)]);
    let dram = RangeIndex::of_views(&[view(0x40_0000, 3 * 4096, 3, Tier::Dram)]);
    let samples: Vec<AccessSample> = (0..30).map(|i| load(0x40_0000 + i * 409, 1000)).collect();
    assert_eq!(attribute(&slow, &samples), attribute(&dram, &samples));
    assert_eq!(attribute(&dram, &samples).objects[&3].load_samples, 30);
}

#[test]
fn obj_phases_follow_the_drivers_index_and_skip_unprofiled_objects() {
    let idx = RangeIndex::new([
        r(0x1000, 0x100, 10),
        r(0x2000, 0x100, 20),
        r(0x3000, 0x100, 30),
    ]);
    let got = attribute(
        &idx,
        &[
            load(0x1000, 4),
            store(0x2000, 6),
            load(0x2001, 2),
            load(0x3000, 1),
        ],
    );
    // the driver profiles 20 then 10; 30 is not in its set
    let ph = got.obj_phases(&[20, 10, 99]);
    assert_eq!(ph.len(), 2);
    assert_eq!((ph[&0].accesses, ph[&0].samples), (8.0, 2.0));
    assert_eq!((ph[&1].accesses, ph[&1].samples), (4.0, 1.0));
    assert!(!ph.contains_key(&2), "a profiled object without samples");
}

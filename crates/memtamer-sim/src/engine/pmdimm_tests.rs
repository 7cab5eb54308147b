//! Unit tests of `engine::pmdimm` (one Optane DIMM).

use super::*;

fn params() -> PmParams {
    PmParams {
        ddrt_write_credits: 8,
        controller_ns: 70.0,
        media_read_ns: 180.0,
        media_read_gbps: 6.6,
        media_write_gbps: 2.3,
        xpbuffer_bytes: 16384,
        xpbuffer_ways: 4,
        read_buffer_lines: 16,
        media_write_queue: 4,
        media_partitions: 1,
        ait_block_bytes: 0,
        rmw_read: RmwRead::Media,
        xpbuffer_policy: XpBufferPolicy::WriteBack,
        media_counter_delay_ms: 4.5,
        write_completion: crate::config::PmWriteCompletion::Ddrt,
    }
}

/// Runs the media to completion, returning the time it took.
fn drain(d: &mut PmDimm) -> Ps {
    let mut t = 0;
    while let Some(s) = d.try_start_media(t) {
        t = s.busy_until;
        d.media_done(0);
    }
    t
}

fn write_all(d: &mut PmDimm, addrs: impl Iterator<Item = u64>) {
    let mut t = 0;
    for a in addrs {
        d.write_arrive(0, a, 0);
        while d.queued_writes() > 0 {
            let s = d
                .try_start_media(t)
                .expect("blocked writes imply media work");
            t = s.busy_until;
            d.media_done(0);
        }
    }
    // flush the buffer by writing far-away full lines
    let _ = drain(d);
}

#[test]
fn sequential_full_lines_never_rmw() {
    let mut d = PmDimm::new(&params(), 0);
    write_all(&mut d, (0..64 * 1024u64).map(|i| i * 64));
    assert_eq!(d.counters.rmw, 0);
    assert!(d.counters.media_write_bytes <= d.counters.request_write_bytes);
}

#[test]
fn stride_writes_amplify_four_times() {
    let mut d = PmDimm::new(&params(), 0);
    write_all(&mut d, (0..4096u64).map(|i| i * 256));
    let c = d.counters;
    // every evicted XPLine was partial: media writes 4x and RMW reads
    assert!(c.rmw > 3900, "{c:?}");
    let wa = c.media_write_bytes as f64 / c.request_write_bytes as f64;
    assert!(wa > 3.8 && wa <= 4.0, "wa={wa}");
}

#[test]
fn back_pressure_holds_credits() {
    let mut d = PmDimm::new(&params(), 0);
    // send partial lines while credits last, without running the media:
    // the buffer and the media write queue fill, then the credits run out
    let mut sent = 0u32;
    let mut freed = 0;
    while d.has_credit() && sent < 1000 {
        freed += d.write_arrive(0, sent as u64 * 256, sent);
        sent += 1;
    }
    assert!(!d.has_credit());
    assert!(d.queued_writes() > 0);
    // every credit is either back (write accepted) or held by a queued write
    assert_eq!(freed as usize + d.queued_writes(), sent as usize);
    assert_eq!(d.credits() as usize + d.queued_writes(), 8);
    // running the media frees them
    drain(&mut d);
    assert_eq!(d.queued_writes(), 0);
    assert_eq!(d.credits(), 8);
}

/// Media time to write back, in eviction order, the full XPLines `xpls`
/// with `partitions` media partitions (all queued before the media runs).
fn media_time(partitions: u32, xpls: &[u64]) -> Ps {
    let mut d = PmDimm::new(
        &PmParams {
            media_partitions: partitions,
            media_write_queue: xpls.len() as u32,
            ..params()
        },
        0,
    );
    for &x in xpls {
        d.media_writes_pending += 1;
        let part = d.partition_of(x);
        d.media_q.push_back(MediaOp {
            kind: MediaKind::Write { partial: false },
            part,
        });
    }
    drain(&mut d)
}

#[test]
fn partitions_reach_full_bandwidth_only_when_ops_spread_over_them() {
    let service = media_time(1, &[0]);
    // consecutive XPLines rotate over the partitions: the port never waits
    let seq: Vec<u64> = (0..40).collect();
    assert_eq!(media_time(5, &seq), 40 * service);
    assert_eq!(media_time(1, &seq), 40 * service);
    // every op on one partition: each waits out its predecessor's hold
    let same: Vec<u64> = (0..8).map(|i| i * 5).collect();
    assert_eq!(media_time(5, &same), (7 * 5 + 1) * service);
}

#[test]
fn the_media_starts_a_ready_op_before_an_older_blocked_one() {
    // 0 and 5 share partition 0; 1 is on partition 1 and is started second
    let t = media_time(5, &[0, 5, 1]);
    // 0 at 0, 1 at 1 service, 5 when partition 0 frees at 5 services
    let service = media_time(1, &[0]);
    assert_eq!(t, 6 * service);
}

/// Media time of `n` partial XPLine write-backs on one partition-free
/// media server, with the given RMW cost.
fn rmw_time(rmw_read: RmwRead, n: u64) -> (Ps, DimmCounters) {
    let mut d = PmDimm::new(
        &PmParams {
            rmw_read,
            media_write_queue: n as u32,
            ..params()
        },
        0,
    );
    for x in 0..n {
        d.media_writes_pending += 1;
        let part = d.partition_of(x);
        d.media_q.push_back(MediaOp {
            kind: MediaKind::Write { partial: true },
            part,
        });
    }
    (drain(&mut d), d.counters)
}

#[test]
fn a_partial_write_back_costs_a_read_and_a_write_unless_the_read_is_in_the_write() {
    let write = media_time(1, &[0]);
    let read = PmDimm::new(&params(), 0).read_service;
    let (media, c_media) = rmw_time(RmwRead::Media, 8);
    assert_eq!(media, 8 * (read + write));
    // Dicio §4.1: every media write is a read-modify-write, so a partial
    // XPLine costs what a full one does
    let (in_write, c_in_write) = rmw_time(RmwRead::InWrite, 8);
    assert_eq!(in_write, 8 * write);
    // the counters do not depend on the cost
    assert_eq!(c_media, c_in_write);
    assert_eq!(c_media.rmw, 8);
    assert_eq!(c_media.media_read_bytes, 8 * XPLINE);
}

#[test]
fn read_buffer_combines_sequential_reads() {
    let mut d = PmDimm::new(&params(), 0);
    assert_eq!(d.read_arrive(0, 1, 0), None);
    assert!(d.read_arrive(0, 2, 64).is_some());
    assert!(d.read_arrive(0, 3, 192).is_some());
    assert_eq!(d.read_arrive(0, 4, 256), None);
    let s = d.try_start_media(0).unwrap();
    assert_eq!(s.read_ready.map(|r| r.0), Some(1));
}

fn dimm(policy: XpBufferPolicy) -> PmDimm {
    PmDimm::new(
        &PmParams {
            xpbuffer_policy: policy,
            ..params()
        },
        0,
    )
}

/// Writes XPLine `xpl` whole (four 64 B writes, queued together), then
/// runs the media until it is idle.
fn write_line(d: &mut PmDimm, xpl: u64) {
    for k in 0..4 {
        d.write_arrive(0, xpl * XPLINE + k * 64, NO_REQ);
    }
    drain(d);
}

#[test]
fn write_through_sends_every_overwrite_to_the_media_write_back_merges_them() {
    const N: u64 = 10;
    let run = |policy| {
        let mut d = dimm(policy);
        for _ in 0..N {
            write_line(&mut d, 3);
        }
        let after_overwrites = d.counters;
        // four more XPLines of the same set (16 sets of 4 ways) evict it
        for k in 1..=4 {
            write_line(&mut d, 3 + 16 * k);
        }
        (after_overwrites, d.counters)
    };
    let (wb, wb_end) = run(XpBufferPolicy::WriteBack);
    assert_eq!(wb.media_write_bytes, 0, "{wb:?}");
    assert_eq!(wb_end.media_write_bytes, XPLINE, "evicted once: {wb_end:?}");
    let (wt, wt_end) = run(XpBufferPolicy::WriteThrough);
    // LENS's overwrite probe: each overwrite is a media write
    assert_eq!(wt.media_write_bytes, N * XPLINE, "{wt:?}");
    assert_eq!(wt_end.media_write_bytes, (N + 4) * XPLINE, "{wt_end:?}");
    // whole XPLines: no read-modify-write under either policy
    assert_eq!(wt_end.rmw + wb_end.rmw, 0);
    assert_eq!(wt.request_write_bytes, wb.request_write_bytes);
}

#[test]
fn write_through_combines_only_writes_queued_or_arriving_during_the_read() {
    let mut d = dimm(XpBufferPolicy::WriteThrough);
    let read = d.media_read_latency.min(d.rmw_service);
    // two 64 B writes to XPLine 0 wait together: one partial media write
    d.write_arrive(0, 0, NO_REQ);
    d.write_arrive(0, 64, NO_REQ);
    let s = d.try_start_media(0).expect("a write was queued");
    assert_eq!(d.counters.rmw, 1);
    // while its read runs, a write to it still combines (VANS patch_rmw)
    d.write_arrive(read / 2, 128, NO_REQ);
    assert_eq!(d.media_writes_pending, 0);
    // once the write is under way, the next write to XPLine 0 is another
    // media write, a whole one (the entry holds the XPLine it read:
    // VANS's write_patch), even though it arrives while the first runs
    d.write_arrive(read + 1, 192, NO_REQ);
    assert_eq!(d.media_writes_pending, 1);
    d.media_done(s.busy_until);
    let s2 = d.try_start_media(s.busy_until).expect("the rewrite");
    d.media_done(s2.busy_until);
    assert!(d.try_start_media(s2.busy_until).is_none());
    assert_eq!(d.counters.media_write_bytes, 2 * XPLINE);
    assert_eq!(d.counters.rmw, 1);
    assert_eq!(d.counters.media_read_bytes, XPLINE);
    // the same under write-back: all four merge, nothing reaches the media
    let mut wb = dimm(XpBufferPolicy::WriteBack);
    for (t, a) in [(0, 0), (0, 64), (read / 2, 128), (read + 1, 192)] {
        wb.write_arrive(t, a, NO_REQ);
    }
    assert!(wb.try_start_media(0).is_none());
}

#[test]
fn write_through_reads_hit_written_lines_and_evicts_only_idle_entries() {
    let mut d = dimm(XpBufferPolicy::WriteThrough);
    // a partial XPLine: no read hit while its write waits (the buffer
    // does not hold the rest of it), a hit once its write started
    d.write_arrive(0, 5 * XPLINE, NO_REQ);
    assert_eq!(d.read_arrive(0, 1, 5 * XPLINE + 128), None);
    drain(&mut d);
    assert!(d.read_arrive(0, 2, 5 * XPLINE + 128).is_some());
    let mut wb = dimm(XpBufferPolicy::WriteBack);
    wb.write_arrive(0, 5 * XPLINE, NO_REQ);
    drain(&mut wb);
    assert_eq!(wb.read_arrive(0, 1, 5 * XPLINE + 128), None);
    // every way of set 0 has a write waiting: a fifth XPLine waits too
    let mut d = PmDimm::new(
        &PmParams {
            xpbuffer_policy: XpBufferPolicy::WriteThrough,
            media_write_queue: 16,
            ..params()
        },
        0,
    );
    for k in 0..5 {
        d.write_arrive(0, k * 16 * XPLINE, k as u32);
    }
    assert_eq!(d.accepted, vec![0, 1, 2, 3]);
    assert_eq!(d.queued_writes(), 1);
    // one (partial) write starting and reading its XPLine frees its way:
    // the fifth is taken, nothing lost
    let s = d.try_start_media(0).expect("queued");
    d.media_done(0);
    assert_eq!(d.accepted, vec![0, 1, 2, 3]);
    d.media_done(s.busy_until);
    assert_eq!(d.accepted, vec![0, 1, 2, 3, 4]);
    drain(&mut d);
    assert_eq!(d.counters.media_write_bytes, 5 * XPLINE);
}

#[test]
fn ait_rotates_within_a_block_and_hashes_blocks_by_seed() {
    let ait = |seed| {
        PmDimm::new(
            &PmParams {
                media_partitions: 5,
                ait_block_bytes: 4096,
                ..params()
            },
            seed,
        )
    };
    let (a, b) = (ait(1), ait(2));
    // 16 XPLines per 4 KB block: consecutive lines rotate inside it
    for blk in 0..64u64 {
        let first = a.partition_of(blk * 16);
        for i in 0..16 {
            assert_eq!(
                a.partition_of(blk * 16 + i),
                ((first as u64 + i) % 5) as u32
            );
        }
    }
    // deterministic per seed, and the seed moves the block phases
    assert_eq!(a.partition_of(12345), ait(1).partition_of(12345));
    let differ = (0..64u64)
        .filter(|&k| a.partition_of(k * 16) != b.partition_of(k * 16))
        .count();
    assert!(differ > 32, "{differ}");
    // two streams 2^36 B apart (2^28 XPLines) no longer keep one phase:
    // their blocks' partition offsets vary from block to block
    let offsets: std::collections::HashSet<u32> = (0..64u64)
        .map(|k| (a.partition_of((1 << 28) + k * 16) + 5 - a.partition_of(k * 16)) % 5)
        .collect();
    assert_eq!(offsets.len(), 5);
    // every partition gets its share of block starts
    let mut count = [0u32; 5];
    for k in 0..5000u64 {
        count[a.partition_of(k * 16) as usize] += 1;
    }
    assert!(count.iter().all(|&c| (850..1150).contains(&c)), "{count:?}");
    // 0 = no indirection: address modulo partitions
    let flat = PmDimm::new(
        &PmParams {
            media_partitions: 5,
            ..params()
        },
        7,
    );
    assert_eq!(flat.partition_of(17), 2);
}

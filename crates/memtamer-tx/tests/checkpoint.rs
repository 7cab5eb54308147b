//! Checkpoints, the checkpoint recovery path, defragmentation and bad
//! checkpoint input: every damaged checkpoint gives the full scan's state
//! (fallback) or an error, never a panic and never a different table.

use memtamer_tx::checkpoint::CheckpointReport;
use memtamer_tx::chkp;
use memtamer_tx::dirty::TrackMode;
use memtamer_tx::{Pool, PoolOptions, RecoveryMode};

fn opts(size: u64) -> PoolOptions {
    PoolOptions {
        size,
        slots: 4,
        segment_lines: 64,
        force_pmem: Some(true),
        ..PoolOptions::default()
    }
}

fn full() -> PoolOptions {
    PoolOptions {
        recovery: RecoveryMode::FullScan,
        ..PoolOptions::default()
    }
}

/// `n` objects of 40 B holding their index; ids returned.
fn fill(pool: &Pool, n: u64) -> Vec<u32> {
    (0..n)
        .map(|i| {
            pool.transaction(|tx| {
                let id = tx.alloc(40)?;
                tx.write_at(id, 0, &i.to_le_bytes())?;
                Ok(id)
            })
            .unwrap()
        })
        .collect()
}

fn value(pool: &Pool, id: u32) -> u64 {
    let mut b = [0u8; 8];
    pool.transaction(|tx| tx.read_at(id, 0, &mut b)).unwrap();
    u64::from_le_bytes(b)
}

#[test]
fn checkpoint_recovery_scans_only_fetched_segments() {
    let pool = Pool::create_in_memory(&opts(4 << 20)).unwrap();
    let ids = fill(&pool, 3000);
    pool.checkpoint().unwrap();
    // a few updates after the checkpoint
    for id in ids.iter().step_by(100) {
        pool.transaction(|tx| tx.write_at(*id, 8, &[7u8; 8]))
            .unwrap();
    }
    let img = pool.image();
    let a = Pool::open_image(&img, &PoolOptions::default()).unwrap();
    let b = Pool::open_image(&img, &full()).unwrap();
    assert!(a.recovery().checkpoint_epoch > 0, "{:?}", a.recovery());
    assert_eq!(a.recovery().fallback, None);
    assert_eq!(a.recovered_state(), b.recovered_state());
    assert_eq!(a.recovery().objects, b.recovery().objects);
    let nlines = b.recovery().scanned_lines;
    assert!(
        a.recovery().scanned_lines * 10 < nlines,
        "checkpoint path scanned {} of {nlines} lines",
        a.recovery().scanned_lines
    );
    for (i, id) in ids.iter().enumerate() {
        assert_eq!(value(&a, *id), i as u64);
    }
}

#[test]
fn checkpoints_are_incremental_under_write_protection() {
    let pool = Pool::create_in_memory(&opts(8 << 20)).unwrap();
    let ids = fill(&pool, 20_000);
    let first = pool.checkpoint().unwrap();
    assert!(first.lines_written > 1000, "{first:?}");
    for id in ids.iter().take(10) {
        pool.transaction(|tx| tx.write_at(*id, 8, &[1u8; 8]))
            .unwrap();
    }
    let second: CheckpointReport = pool.checkpoint().unwrap();
    match pool.checkpoint_tracking() {
        TrackMode::WriteProtect => {
            // 4 KB pages, or whole 2 MB pages if the table got huge pages
            assert!(!second.full);
            assert!(second.dirty_pages >= 1, "{second:?}");
            assert!(
                second.lines_compared
                    <= second.dirty_pages * 4096
                        / memtamer_tx::table::Table::RAW_BYTES_PER_ID as u64
                        / 15
                        + 2,
                "only the dirty pages' lines are compared: {second:?}"
            );
        }
        TrackMode::FullCompare(why) => {
            eprintln!("no write protection here ({why}): full comparison");
            assert!(second.full);
        }
    }
    // only the lines of the ten moved objects changed
    assert!((1..=2).contains(&second.lines_written), "{second:?}");
    let third = pool.checkpoint().unwrap();
    assert_eq!(third.lines_written, 0, "nothing changed: {third:?}");
    assert_eq!(third.epoch, second.epoch + 1);
}

#[test]
fn an_overflowing_log_falls_back_and_is_rewritten() {
    let o = PoolOptions {
        segment_lines: 1,
        ..opts(1 << 20)
    };
    let pool = Pool::create_in_memory(&o).unwrap();
    fill(&pool, 600); // one fetch per allocation: more than the log holds
    let img = pool.image();
    let a = Pool::open_image(&img, &o).unwrap();
    let why = a.recovery().fallback.clone().unwrap_or_default();
    assert!(why.contains("overflowed"), "{why}");
    assert_eq!(
        a.recovered_state(),
        Pool::open_image(&img, &full()).unwrap().recovered_state()
    );
    // recovery wrote a fresh checkpoint: the next open uses it
    let again = Pool::open_image(&a.image(), &o).unwrap();
    assert!(
        again.recovery().checkpoint_epoch > 0,
        "{:?}",
        again.recovery()
    );
    assert_eq!(again.recovered_state(), a.recovered_state());
}

struct Setup {
    img: Vec<u8>,
    truth: memtamer_tx::recover::RecoveredState,
    /// Byte range of the checkpoint area.
    area: (usize, usize),
    /// Byte range of the last valid CHKP-diff entry (a damaged last entry
    /// looks like an append cut off by a crash: documented limitation).
    last_entry: (usize, usize),
    /// The newest record and every valid entry of its log: damaged all
    /// together, the older record looks like the newest one (documented).
    newest: (usize, usize),
    entries: Vec<usize>,
}

fn setup() -> Setup {
    let pool = Pool::create_in_memory(&opts(512 << 10)).unwrap();
    let ids = fill(&pool, 400);
    pool.checkpoint().unwrap();
    for id in ids.iter().step_by(3) {
        pool.transaction(|tx| tx.free(*id)).unwrap();
    }
    fill(&pool, 300);
    let img = pool.image();
    let truth = Pool::open_image(&img, &full()).unwrap().recovered_state();
    let h = memtamer_tx::layout::decode_header(&img, img.len() as u64).unwrap();
    let region = memtamer_tx::region::Region::from_bytes(&img).unwrap();
    let rec = chkp::pick_record(&h, &region).unwrap();
    let (_, n) = chkp::read_log(&h, &region, &rec).unwrap();
    assert!(n >= 2, "the setup must log fetches after the checkpoint");
    let last = h.log_off(rec.epoch, n - 1);
    let newest = h.record_off(rec.epoch);
    Setup {
        newest: (newest, newest + 64),
        entries: (0..n).map(|i| h.log_off(rec.epoch, i)).collect(),
        area: (h.chkp_off as usize, h.data_off as usize),
        last_entry: (last, last + 16),
        img,
        truth,
    }
}

/// A way to damage a pool image.
type Damage<'a> = Box<dyn Fn(&mut Vec<u8>) + 'a>;

#[test]
fn damaged_checkpoints_fall_back_to_the_full_scan() {
    let s = setup();
    let ok = Pool::open_image(&s.img, &PoolOptions::default()).unwrap();
    assert!(ok.recovery().checkpoint_epoch > 0);
    assert_eq!(ok.recovered_state(), s.truth);
    let h = memtamer_tx::layout::decode_header(&s.img, s.img.len() as u64).unwrap();
    let cases: Vec<(&str, Damage)> = vec![
        (
            "both records zeroed",
            Box::new(|m: &mut Vec<u8>| m[h.record_off(0)..h.record_off(0) + 128].fill(0)),
        ),
        (
            "CHKP line 0 flipped",
            Box::new(|m: &mut Vec<u8>| m[h.chkp_line_off(0) + 5] ^= 1),
        ),
        (
            "newest record flipped",
            Box::new(|m: &mut Vec<u8>| {
                m[h.record_off(0) + 9] ^= 1;
                m[h.record_off(1) + 9] ^= 1;
            }),
        ),
        (
            "log entry 0 flipped",
            Box::new(|m: &mut Vec<u8>| {
                for p in 0..2 {
                    m[h.log_off(p, 0) + 1] ^= 0x40;
                }
            }),
        ),
    ];
    for (what, f) in cases {
        let mut m = s.img.clone();
        f(&mut m);
        let p = Pool::open_image(&m, &PoolOptions::default()).unwrap();
        assert!(
            p.recovery().fallback.is_some(),
            "{what}: {:?}",
            p.recovery()
        );
        assert_eq!(p.recovered_state(), s.truth, "{what}");
    }
}

#[test]
fn fuzzed_checkpoint_areas_never_panic_nor_mislead() {
    let s = setup();
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let (mut via_chkp, mut fallbacks, mut errors, mut last_hits) = (0, 0, 0, 0);
    let (a0, a1) = s.area;
    // the live part of the area: records, log entries in use, CHKP lines
    for round in 0..3000 {
        let mut m = s.img.clone();
        let hits = 1 + rnd() % 6;
        let mut touched_last = false;
        let mut touched = Vec::new();
        for _ in 0..hits {
            let pos = match rnd() % 4 {
                0 => a0 + (rnd() % 128) as usize,
                1 => a0 + 4096 + (rnd() % 512) as usize,
                _ => a0 + (rnd() % (a1 - a0) as u64) as usize,
            };
            m[pos] = rnd() as u8;
            touched_last |= (s.last_entry.0..s.last_entry.1).contains(&pos);
            touched.push(pos);
        }
        let hit = |a: usize, b: usize| touched.iter().any(|p| (a..b).contains(p));
        touched_last |= hit(s.newest.0, s.newest.1) && s.entries.iter().all(|e| hit(*e, *e + 16));
        match Pool::open_image(&m, &PoolOptions::default()) {
            Err(_) => errors += 1,
            Ok(p) => {
                if p.recovery().fallback.is_some() {
                    fallbacks += 1;
                } else {
                    via_chkp += 1;
                }
                if touched_last {
                    last_hits += 1;
                } else {
                    assert_eq!(
                        p.recovered_state(),
                        s.truth,
                        "round {round}: {:?}",
                        p.recovery()
                    );
                }
            }
        }
    }
    eprintln!(
        "checkpoint fuzz: {via_chkp} via checkpoint, {fallbacks} fell back, {errors} errors, {last_hits} hit the last log entry"
    );
    assert!(fallbacks > 100 && via_chkp > 100);
}

#[test]
fn defragmentation_packs_sparse_regions_and_keeps_contents() {
    let o = PoolOptions {
        segment_lines: 4096,
        ..opts(4 << 20)
    };
    let pool = Pool::create_in_memory(&o).unwrap();
    let ids = fill(&pool, 4000);
    // free three of every four objects: every region they were in becomes
    // sparse (their deletion records, one line each, are allocated side by
    // side and stay until the ids are reused: ~47 full regions)
    for (i, id) in ids.iter().enumerate() {
        if i % 4 != 0 {
            pool.transaction(|tx| tx.free(*id)).unwrap();
        }
    }
    pool.collect();
    let before = pool.fragmentation();
    assert!(before.sparse > 40 && before.rate > 0.4, "{before:?}");
    let r = pool.defrag(usize::MAX).unwrap();
    assert!(r.objects_moved >= 900 && r.conflicts == 0, "{r:?}");
    let after = pool.fragmentation();
    assert!(
        after.sparse * 4 < before.sparse && after.rate < 0.1,
        "before {before:?}, after {after:?}"
    );
    for (i, id) in ids.iter().enumerate().filter(|(i, _)| i % 4 == 0) {
        assert_eq!(value(&pool, *id), i as u64);
    }
    // and it is all durable: recovery rebuilds the same placement
    pool.checkpoint().unwrap();
    let img = pool.image();
    let a = Pool::open_image(&img, &PoolOptions::default()).unwrap();
    assert_eq!(
        a.recovered_state(),
        Pool::open_image(&img, &full()).unwrap().recovered_state()
    );
    assert_eq!(a.fragmentation(), after);
}

#[test]
fn checkpoint_inside_a_transaction_is_refused() {
    let pool = Pool::create_in_memory(&opts(1 << 20)).unwrap();
    let tx = pool.begin().unwrap();
    assert!(matches!(
        pool.checkpoint(),
        Err(memtamer_tx::TxError::Nested)
    ));
    assert!(matches!(pool.defrag(1), Err(memtamer_tx::TxError::Nested)));
    tx.commit();
    assert!(pool.checkpoint().is_ok());
}

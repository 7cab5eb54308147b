//! A real runtime's status document: per-object moves, bytes and exposed
//! time as the runtime counted them, published atomically and read back by
//! the same reader `memtamer tier status` uses.

use memtamer_tier::publish::Publisher;
use memtamer_tier::status::{self, RunState, TierName};
use memtamer_tier::{SlowTier, Tier, TierConfig, TierRuntime};

#[test]
fn published_status_matches_the_runtime() {
    let dir = std::env::temp_dir().join(format!("mt-publish-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let rt = TierRuntime::new(TierConfig::new(8 << 20, SlowTier::File("/dev/shm".into())).unwrap())
        .unwrap();
    let a = rt.alloc(3 << 20, "big", Tier::Slow).unwrap();
    let b = rt.alloc(5000, "small", Tier::Slow).unwrap();
    let mut p = Publisher::new(dir.clone());
    let path = p
        .maybe_publish(&rt, None, Some((3, 4)))
        .unwrap()
        .expect("first call publishes");
    assert_eq!(path, dir.join("rank3.json"));
    // nothing changed: no rewrite
    assert!(p.maybe_publish(&rt, None, Some((3, 4))).unwrap().is_none());
    rt.migrate_now(a, Tier::Dram).unwrap(); // synchronous: all exposed
    rt.request(a, Tier::Slow).unwrap();
    rt.wait(a).unwrap();
    rt.migrate_now(a, Tier::Dram).unwrap();
    assert!(p.maybe_publish(&rt, None, Some((3, 4))).unwrap().is_some());
    let status::DirStatus {
        ranks: good,
        problems: bad,
    } = status::read_dir(&dir, &status::hostname(), status::pid_alive).unwrap();
    assert!(bad.is_empty(), "{bad:?}");
    let s = &good[0].1;
    assert_eq!(
        (s.rank, s.ranks, s.state),
        (Some(3), Some(4), RunState::Running)
    );
    assert_eq!(s.pid, std::process::id());
    assert_eq!((s.moves, s.bytes_moved), (3, 3 * (3 << 20)));
    // per direction: two promotions, one eviction, as the runtime counted
    let (up, down) = (s.to_dram.as_ref().unwrap(), s.to_slow.as_ref().unwrap());
    assert_eq!((up.moves, up.bytes), (2, 2 * (3 << 20)));
    assert_eq!((down.moves, down.bytes), (1, 3 << 20));
    let st = rt.stats();
    // (through JSON text: equal to the last bits is not promised)
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs().max(1.0);
    assert!(close(up.copy_ms, st.to_dram.copy_ns as f64 / 1e6), "{up:?}");
    assert!(
        close(down.copy_bw.unwrap(), st.to_slow.bandwidth().unwrap()),
        "{down:?}"
    );
    assert!((up.copy_ms + down.copy_ms - s.copy_ms).abs() < 1e-9);
    assert_eq!((s.dram_budget, s.dram_used), (8 << 20, 3 << 20));
    assert!(!s.unimem);
    let big = s.objects.iter().find(|o| o.name == "big").unwrap();
    assert_eq!(
        (big.tier, big.moves, big.bytes_moved),
        (TierName::Dram, 3, 3 * (3 << 20))
    );
    assert!(big.exposed_ms > 0.0 && big.exposed_ms <= s.exposed_ms + 1e-9);
    let small = s.objects.iter().find(|o| o.name == "small").unwrap();
    assert_eq!(
        (small.tier, small.moves, small.size),
        (TierName::Slow, 0, 5000)
    );
    assert_eq!(small.exposed_ms, 0.0);
    // the final document, and a freed object gone from it
    rt.free(b).unwrap();
    p.publish(&rt, None, Some((3, 4)), RunState::Finished)
        .unwrap();
    let good = status::read_dir(&dir, &status::hostname(), |_| false)
        .unwrap()
        .ranks;
    assert_eq!(good[0].1.state, RunState::Finished);
    assert_eq!(good[0].1.objects.len(), 1);
    // only the document: the temporary was renamed over it
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["rank3.json"]);
    rt.free(a).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

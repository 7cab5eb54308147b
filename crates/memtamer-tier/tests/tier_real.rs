//! The tiering layer on the real kernel: allocation, moves at a fixed
//! address, the write-protect protocol under concurrent writers, errors.

use memtamer_tier::{SlowTier, Tier, TierConfig, TierError, TierRuntime};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn rt(budget: usize) -> TierRuntime {
    TierRuntime::new(TierConfig::new(budget, SlowTier::File("/dev/shm".into())).unwrap()).unwrap()
}

fn fill(p: *mut u8, n: usize, seed: u64) {
    let s = unsafe { std::slice::from_raw_parts_mut(p as *mut u64, n / 8) };
    for (i, v) in s.iter_mut().enumerate() {
        *v = seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

fn check(p: *mut u8, n: usize, seed: u64) -> bool {
    let s = unsafe { std::slice::from_raw_parts(p as *const u64, n / 8) };
    s.iter()
        .enumerate()
        .all(|(i, &v)| v == seed ^ (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

#[test]
fn moves_keep_address_and_data() {
    let rt = rt(8 << 20);
    let n = 3 << 20;
    let p = rt.alloc(n, "a", Tier::Slow).unwrap();
    fill(p, n, 7);
    assert_eq!(rt.dram_used(), 0);
    let r = rt.migrate_now(p, Tier::Dram).unwrap();
    assert_eq!((r.bytes, r.to), (n, Tier::Dram));
    assert!(check(p, n, 7));
    assert_eq!(rt.dram_used(), n);
    fill(p, n, 8); // writable after the move
    rt.request(p, Tier::Slow).unwrap();
    rt.wait(p).unwrap();
    assert!(check(p, n, 8));
    assert_eq!(rt.dram_used(), 0);
    let objs = rt.objects();
    assert_eq!(objs.len(), 1);
    assert_eq!((objs[0].addr, objs[0].tier), (p as usize, Tier::Slow));
    let s = rt.stats();
    assert_eq!((s.moves, s.bytes_moved), (2, 2 * n as u64));
    // per direction: the synchronous promotion, the helper's eviction
    assert_eq!((s.to_dram.moves, s.to_dram.bytes), (1, n as u64));
    assert_eq!((s.to_slow.moves, s.to_slow.bytes), (1, n as u64));
    assert_eq!(s.to_dram.copy_ns + s.to_slow.copy_ns, s.copy_ns);
    rt.free(p).unwrap();
}

#[test]
fn unknown_and_double_free_are_errors() {
    let rt = rt(1 << 20);
    let mut x = 5u64;
    assert!(matches!(
        rt.free(&mut x as *mut u64 as *mut u8),
        Err(TierError::UnknownObject { .. })
    ));
    let p = rt.alloc(100, "b", Tier::Dram).unwrap();
    rt.free(p).unwrap();
    assert!(matches!(rt.free(p), Err(TierError::UnknownObject { .. })));
    assert!(matches!(
        rt.alloc(0, "z", Tier::Slow),
        Err(TierError::ZeroSize { .. })
    ));
}

#[test]
fn budget_is_checked() {
    assert!(matches!(
        TierConfig::new(0, SlowTier::File("/dev/shm".into())),
        Err(TierError::BadBudget { .. })
    ));
    assert!(matches!(
        TierConfig::new(usize::MAX / 2, SlowTier::File("/dev/shm".into())),
        Err(TierError::BadBudget { .. })
    ));
    let rt = rt(1 << 20);
    let a = rt.alloc(1 << 20, "fits", Tier::Dram).unwrap();
    let e = rt.alloc(4096, "over", Tier::Dram).unwrap_err();
    assert!(e.to_string().contains("'over'"), "{e}");
    let b = rt.alloc(4096, "slow", Tier::Slow).unwrap();
    assert!(matches!(
        rt.migrate_now(b, Tier::Dram),
        Err(TierError::DramFull { .. })
    ));
    // The refused move left the object usable where it was.
    unsafe { *b = 3 };
    assert_eq!(
        rt.objects()
            .iter()
            .find(|o| o.addr == b as usize)
            .unwrap()
            .tier,
        Tier::Slow
    );
    rt.free(a).unwrap();
    rt.free(b).unwrap();
}

/// A writer increments every word while the helper moves the object back
/// and forth (at least 8 moves during the writes): a store that landed in
/// the old copy after it was read would make a counter come up short.
#[test]
fn no_write_is_lost_during_moves() {
    let rt = Arc::new(rt(16 << 20));
    let n = 1 << 20;
    let words = n / 8;
    let p = rt.alloc(n, "hot", Tier::Slow).unwrap() as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut rounds = 0u64;
            while !stop.load(Ordering::SeqCst) {
                let s = unsafe { std::slice::from_raw_parts_mut(p as *mut u64, words) };
                for v in s.iter_mut() {
                    unsafe { std::ptr::write_volatile(v, std::ptr::read_volatile(v) + 1) };
                }
                rounds += 1;
            }
            rounds
        })
    };
    let mut to = Tier::Dram;
    for _ in 0..8 {
        rt.request(p as *mut u8, to).unwrap();
        rt.wait(p as *mut u8).unwrap();
        to = if to == Tier::Dram {
            Tier::Slow
        } else {
            Tier::Dram
        };
    }
    stop.store(true, Ordering::SeqCst);
    let rounds = writer.join().unwrap();
    let s = unsafe { std::slice::from_raw_parts(p as *const u64, words) };
    assert!(
        s.iter().all(|&v| v == rounds),
        "lost writes ({rounds} rounds)"
    );
    let st = rt.stats();
    assert_eq!(st.bytes_moved, 8 * n as u64);
    eprintln!(
        "rounds {rounds} copy {} us exposed {} us (blocked writers {} us)",
        st.copy_ns / 1000,
        st.exposed_ns() / 1000,
        st.fault_blocked_ns / 1000
    );
    rt.free(p as *mut u8).unwrap();
}

#[test]
fn failed_move_keeps_data() {
    let dir = std::env::temp_dir().join(format!("mt-tier-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rt =
        TierRuntime::new(TierConfig::new(4 << 20, SlowTier::File(dir.clone())).unwrap()).unwrap();
    let n = 64 << 10;
    let p = rt.alloc(n, "kept", Tier::Dram).unwrap();
    fill(p, n, 11);
    std::fs::remove_dir(&dir).unwrap();
    let e = rt.migrate_now(p, Tier::Slow).unwrap_err();
    assert!(e.to_string().contains("kept"), "{e}");
    assert!(check(p, n, 11));
    fill(p, n, 12); // still writable
    assert!(check(p, n, 12));
    assert_eq!(rt.dram_used(), n);
    // The helper path reports the failure to the waiter.
    rt.request(p, Tier::Slow).unwrap();
    assert!(rt.wait(p).unwrap_err().contains("kept"));
    assert!(check(p, n, 12));
    assert!(rt
        .alloc(4096, "nodir", Tier::Slow)
        .unwrap_err()
        .to_string()
        .contains(&dir.display().to_string()));
    rt.free(p).unwrap();
}

#[test]
fn free_waits_for_inflight_move() {
    let rt = rt(64 << 20);
    let n = 32 << 20;
    let p = rt.alloc(n, "big", Tier::Slow).unwrap();
    fill(p, n, 1);
    rt.request(p, Tier::Dram).unwrap();
    rt.free(p).unwrap();
    assert!(rt.objects().is_empty());
    assert_eq!(rt.dram_used(), 0);
}

/// A segfault outside every object still kills the process (our handler
/// chains to the previous one).
#[test]
fn wild_fault_still_crashes() {
    let _rt = rt(1 << 20);
    // SAFETY: the child only faults and exits; the parent waits for it.
    unsafe {
        let pid = libc::fork();
        if pid == 0 {
            std::ptr::write_volatile(16 as *mut u64, 1);
            libc::_exit(0);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGSEGV,
            "status {status:#x}"
        );
    }
}

/// The NUMA backing: runs where the host has two memory nodes (a CPU-less
/// one is preferred as the slow tier); this 1-node development host skips it.
#[test]
fn numa_moves_pages_between_nodes() {
    let nodes = memtamer_tier::numa::read_nodes(std::path::Path::new("/sys/devices/system/node"));
    let mem: Vec<_> = nodes.iter().filter(|n| n.mem_bytes > 0).collect();
    if mem.len() < 2 {
        eprintln!("skipped: {} memory node(s) on this host", mem.len());
        return;
    }
    let slow = memtamer_tier::numa::slow_nodes(&nodes)
        .first()
        .copied()
        .unwrap_or(mem[1].id);
    let dram = mem.iter().find(|n| n.id != slow).unwrap().id;
    let rt = TierRuntime::new(
        TierConfig::new(
            16 << 20,
            SlowTier::Numa {
                dram_node: dram,
                slow_node: slow,
            },
        )
        .unwrap(),
    )
    .unwrap();
    let n = 4 << 20;
    let p = rt.alloc(n, "numa", Tier::Slow).unwrap();
    fill(p, n, 5);
    let on = |node: u32| {
        memtamer_tier::backing::nodes_of_pages(p as usize, n)
            .unwrap()
            .iter()
            .filter(|&&s| s == node as i32)
            .count()
    };
    assert_eq!(on(slow), n / 4096);
    rt.migrate_now(p, Tier::Dram).unwrap();
    assert!(check(p, n, 5));
    assert_eq!(on(dram), n / 4096);
    rt.free(p).unwrap();
}
